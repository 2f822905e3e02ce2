"""Page checksums (``PageHeader.crc``): checked on every read route when a page holds one.

The reference is pyarrow reading with ``page_checksum_verification=True``: it refuses a file
whose fetched page does not match its checksum and reads the rest alike. Files: parquet-testing's
checksum files (two with a wrong checksum, four with right ones) and files pyarrow writes with
``write_page_checksum=True`` (data pages v1 and v2, dictionary and PLAIN, snappy / zstd / none,
nulls), then one byte of one page flipped. A source that damages the first transfer of a page
shows the re-fetch: the read gives the right rows.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lazyscan
from lazyscan.errors import CorruptFileError
from lazyscan.format.options import ReaderOptions
from lazyscan.io.source import FileIdentity, IOStats, Source
from lazyscan.parquet import ParquetFile, RowRanges
from lazyscan.parquet.checksums import crc32, page_spans
from lazyscan.parquet.fetch import Fetcher
from lazyscan.parquet.page_header import MISSING, parse_page_header
from lazyscan.scan.options import ScanOptions
from lazyscan.spark.options import SourceSettings
from tests.support.data import parquet_testing_file

GOOD_FILES = (
    "datapage_v1-uncompressed-checksum.parquet",
    "datapage_v1-snappy-compressed-checksum.parquet",
    "plain-dict-uncompressed-checksum.parquet",
    "rle-dict-snappy-checksum.parquet",
)
#: the damaged pages parquet-testing's README lists: (file, column, page number in the chunk)
CORRUPT_PAGES = (
    ("datapage_v1-corrupt-checksum.parquet", "a", 0),
    ("datapage_v1-corrupt-checksum.parquet", "b", 1),
    ("rle-dict-uncompressed-corrupt-checksum.parquet", "long_field", 0),  # the dictionary page
    ("rle-dict-uncompressed-corrupt-checksum.parquet", "binary_field", 0),
)

OFF = ReaderOptions(verify_checksums=False)


@dataclass(frozen=True)
class Page:
    number: int  # within the chunk, the dictionary page first
    offset: int  # of its header in the file
    body: int  # file offset of the bytes after the header
    length: int  # of those bytes
    first_row: int
    num_rows: int  # 0 for the dictionary page


def pages(path: Path, column: str, row_group: int = 0) -> list[Page]:
    """The pages of a chunk as the file holds them, dictionary page first."""
    pf = ParquetFile(path, options=OFF)
    layout = pf.page_layout(row_group, column)
    data = path.read_bytes()
    located = ([(layout.dictionary[0], 0, 0)] if layout.dictionary else []) + [(p.offset, p.first_row, p.num_rows) for p in layout.pages]
    out = []
    for number, (offset, first, rows) in enumerate(located):
        header = parse_page_header(np.frombuffer(data, np.uint8), offset, len(data))
        out.append(Page(number, offset, offset + header.header_size, header.compressed_page_size, first, rows))
    return out


def flipped(path: Path, out: Path, offset: int) -> Path:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x5A
    out.write_bytes(bytes(data))
    return out


def pyarrow_verifying(path: Path) -> pa.Table:
    return pq.read_table(path, page_checksum_verification=True)


def assert_names(err: pytest.ExceptionInfo[CorruptFileError], path: Path, column: str, page: int, row_group: int = 0) -> None:
    loc = err.value.location
    assert "page checksum mismatch: stored 0x" in str(err.value)
    assert ", computed 0x" in str(err.value)
    assert (loc.file, loc.row_group, loc.column, loc.page) == (str(path), row_group, column, page)


# ---- parquet-testing's files ----------------------------------------------------------------------


@pytest.mark.parametrize("name", GOOD_FILES)
def test_right_checksums_read_like_pyarrow(name: str) -> None:
    path = parquet_testing_file(name)
    ref = pyarrow_verifying(path)
    assert lazyscan.scan(str(path), threads=1).to_table().equals(ref)
    pf = ParquetFile(path)
    n = pf.metadata.row_groups[0].num_rows
    for column in ref.column_names:
        assert pf.read_column(0, column).equals(ref[column].combine_chunks())
        for rows in ([0], [n // 2, n - 1], list(range(0, n, 7))):
            assert pf.read_column(0, column, rows).equals(ref[column].take(rows).combine_chunks())
    assert pf.read_columns(0, ref.column_names, [3, n - 2])[1].equals(ref[ref.column_names[1]].take([3, n - 2]).combine_chunks())


def test_every_checksum_of_the_right_files_is_checked() -> None:
    """Each checksum those files hold is its page body's CRC-32, as the span table reads it
    (the v2 data pages parquet-mr 1.13 wrote hold none)."""
    checked = 0
    for name in GOOD_FILES:
        path = parquet_testing_file(name)
        buf = np.frombuffer(path.read_bytes(), np.uint8)
        for column in pq.read_schema(path).names:
            for page in pages(path, column):
                spans = page_spans(buf, np.array([page.offset]), np.array([len(buf)]), np.array([-1]))
                stored = int(spans[0, 4])
                if stored == MISSING:
                    assert parse_page_header(buf, page.offset, len(buf)).crc is None
                    continue
                assert stored & 0xFFFFFFFF == crc32(buf[page.body : page.body + page.length])
                checked += 1
    assert checked >= 10


def test_crc32_is_the_standard_one() -> None:
    data = np.random.default_rng(1).integers(0, 256, 100_003, dtype=np.uint8)
    assert crc32(data) == zlib.crc32(data.tobytes())
    assert crc32(data[7:70_001]) == zlib.crc32(data[7:70_001].tobytes())
    assert crc32(np.frombuffer(b"123456789", np.uint8)) == 0xCBF43926  # the CRC-32 check value


@pytest.mark.parametrize(("name", "column", "page"), CORRUPT_PAGES)
def test_wrong_checksums_raise_naming_the_page(name: str, column: str, page: int) -> None:
    path = parquet_testing_file(name)
    with pytest.raises(OSError, match="CRC checksum verification failed"):
        pq.read_table(path, columns=[column], page_checksum_verification=True)
    pf = ParquetFile(path)
    with pytest.raises(CorruptFileError) as err:
        pf.read_column(0, column)
    assert_names(err, path, column, page)
    with pytest.raises(CorruptFileError) as err:
        lazyscan.scan(str(path), columns=[column], threads=1).to_table()
    assert_names(err, path, column, page)
    # a row of the damaged page, one at a time and in one pass with another column
    bad = pages(path, column)[page]
    row = bad.first_row + bad.num_rows // 2  # the dictionary page serves every row
    with pytest.raises(CorruptFileError) as err:
        pf.read_column(0, column, [row])
    assert_names(err, path, column, page)
    with pytest.raises(CorruptFileError) as err:
        pf.read_columns(0, pq.read_schema(path).names, [row])
    assert err.value.location.page == page


def test_rows_outside_a_damaged_page_read_and_verification_off_reads_like_pyarrow() -> None:
    path = parquet_testing_file("datapage_v1-corrupt-checksum.parquet")
    ref = pq.read_table(path)  # the damage is in the stored checksums: the values are right
    b0, b1 = pages(path, "b")
    pf = ParquetFile(path)
    rows = [0, b0.num_rows - 1]
    assert pf.read_column(0, "b", rows).equals(ref["b"].take(rows).combine_chunks())
    with pytest.raises(CorruptFileError):
        pf.read_column(0, "b", [b1.first_row])
    assert lazyscan.scan(str(path), threads=1, verify_checksums=False).to_table().equals(ref)
    unchecked = ParquetFile(path, options=OFF)
    assert unchecked.read_column(0, "b", [b1.first_row]).equals(ref["b"].take([b1.first_row]).combine_chunks())


# ---- files pyarrow writes with page checksums, one byte flipped --------------------------------


def sample_table(n: int = 3000) -> pa.Table:
    rng = np.random.default_rng(34)
    words = np.array([f"word-{i:03d}" for i in range(60)], dtype=object)
    i = pa.array(rng.integers(-(10**9), 10**9, n), mask=rng.random(n) < 0.2)
    s = pa.array(words[rng.integers(0, 60, n)], mask=rng.random(n) < 0.15)
    d = pa.array(rng.normal(size=n))
    return pa.table({"i": i, "s": s, "d": d})


def write(path: Path, table: pa.Table, version: str, dictionary: bool, compression: str, page_index: bool = False) -> Path:
    pq.write_table(
        table, path, write_page_checksum=True, data_page_version=version, use_dictionary=dictionary,
        compression=compression, data_page_size=1024, write_batch_size=128, row_group_size=len(table),
        write_page_index=page_index,
    )
    return path


MATRIX = [
    *(
        pytest.param(v, dictionary, codec, False, id=f"v{v[0]}-{'dict' if dictionary else 'plain'}-{codec}")
        for v in ("1.0", "2.0")
        for dictionary in (True, False)
        for codec in ("snappy", "zstd", "none")
    ),
    # pages located by the offset index (a read with the dictionary decoded fetches from the first data page)
    *(pytest.param(v, True, "snappy", True, id=f"v{v[0]}-dict-snappy-page-index") for v in ("1.0", "2.0")),
]


@pytest.mark.parametrize(("version", "dictionary", "codec", "page_index"), MATRIX)
def test_flipped_byte_in_a_data_page(tmp_path: Path, version: str, dictionary: bool, codec: str, page_index: bool) -> None:
    table = sample_table()
    good = write(tmp_path / "good.parquet", table, version, dictionary, codec, page_index)
    assert (ParquetFile(good).offset_index(0, "s") is not None) == page_index
    assert lazyscan.scan(str(good), threads=1).to_table().equals(pyarrow_verifying(good))
    chunk = pages(good, "s")
    data_pages = [p for p in chunk if p.num_rows]
    assert len(data_pages) >= 4
    target = data_pages[1]
    bad = flipped(good, tmp_path / "bad.parquet", target.body + target.length - 2)
    with pytest.raises(OSError, match="CRC"):
        pyarrow_verifying(bad)

    pf = ParquetFile(bad)
    inside = target.first_row + target.num_rows // 2
    dense = list(range(target.first_row, target.first_row + target.num_rows))  # past the selected-rows route's density
    routes: dict[str, Any] = {
        "whole chunk": lambda: pf.read_column(0, "s"),
        "row indices": lambda: pf.read_column(0, "s", [inside]),
        "row ranges": lambda: pf.read_column(0, "s", RowRanges.from_indices(np.array([inside]))),
        "dense selection": lambda: pf.read_column(0, "s", dense),
        "one pass": lambda: pf.read_columns(0, ["i", "s", "d"], [inside]),
        "scan": lambda: lazyscan.scan(str(bad), threads=1).to_table(),
        "filter column": lambda: lazyscan.scan(str(bad), ["i"], "s = 'word-007'", threads=1).to_table(),
        "payload column": lambda: lazyscan.scan(str(bad), ["s"], f"i = {table['i'][inside].as_py() or 0}", threads=1).to_table(),
    }
    for route, read in routes.items():
        if route == "payload column" and table["i"][inside].as_py() is None:
            continue
        with pytest.raises(CorruptFileError) as err:
            read()
        assert err.value.location.page == target.number, route
        assert err.value.location.column == "s", route
        assert "page checksum mismatch" in str(err.value), route

    # rows of other pages, and the other columns, read as pyarrow reads them
    ref = table
    elsewhere = [data_pages[0].first_row, data_pages[3].first_row + 1, len(table) - 1]
    assert pf.read_column(0, "s", elsewhere).equals(ref["s"].take(elsewhere).combine_chunks())
    assert pf.read_column(0, "s", RowRanges.from_indices(np.array(elsewhere))).equals(ref["s"].take(elsewhere).combine_chunks())
    got = pf.read_columns(0, ["i", "s", "d"], elsewhere)
    for name, arr in zip(["i", "s", "d"], got):
        assert arr.equals(ref[name].take(elsewhere).combine_chunks())
    for name in ("i", "d"):
        assert pf.read_column(0, name).equals(ref[name].combine_chunks())


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("codec", ["snappy", "none"])
def test_flipped_byte_in_a_dictionary_page(tmp_path: Path, version: str, codec: str) -> None:
    table = sample_table()
    good = write(tmp_path / "good.parquet", table, version, True, codec)
    dictionary = pages(good, "s")[0]
    assert dictionary.num_rows == 0
    bad = flipped(good, tmp_path / "bad.parquet", dictionary.body + dictionary.length // 2)
    with pytest.raises(OSError, match="CRC"):
        pyarrow_verifying(bad)
    pf = ParquetFile(bad)
    routes: dict[str, Any] = {
        "dictionary": lambda: pf.read_dictionary(0, "s"),
        "whole chunk": lambda: pf.read_column(0, "s"),
        "row indices": lambda: pf.read_column(0, "s", [5]),
        "one pass": lambda: pf.read_columns(0, ["i", "s"], [5, 2000]),
        "dictionary filter": lambda: lazyscan.scan(str(bad), ["d"], "s IN ('word-001', 'word-002')", threads=1).to_table(),
        "filter column": lambda: lazyscan.scan(str(bad), ["d"], "s = 'word-001'", threads=1).to_table(),
    }
    for read in routes.values():
        with pytest.raises(CorruptFileError) as err:
            read()
        assert_names(err, bad, "s", 0)
    assert pf.read_column(0, "i").equals(table["i"].combine_chunks())


def test_verification_off_reads_a_damaged_page_as_it_is(tmp_path: Path) -> None:
    """Without verification a flipped byte of a PLAIN double is a wrong value and no error:
    what the checksum is for."""
    table = sample_table()
    good = write(tmp_path / "good.parquet", table, "1.0", False, "none")
    target = [p for p in pages(good, "d") if p.num_rows][2]
    bad = flipped(good, tmp_path / "bad.parquet", target.body + target.length - 1)  # the last value's top byte
    row = target.first_row + target.num_rows - 1
    unchecked = ParquetFile(bad, options=OFF).read_column(0, "d", [row]).to_pylist()
    assert unchecked != table["d"].take([row]).to_pylist()
    assert lazyscan.scan(str(bad), ["d"], threads=1, verify_checksums=False).to_table()["d"].to_pylist()[row] == unchecked[0]
    with pytest.raises(CorruptFileError) as err:
        ParquetFile(bad).read_column(0, "d", [row])
    assert_names(err, bad, "d", target.number)
    with pytest.raises(OSError, match="CRC"):
        pyarrow_verifying(bad)


def test_nested_columns_are_verified_too(tmp_path: Path) -> None:
    """Nested columns are read through pyarrow, asked to verify the checksums as well."""
    table = pa.table({"l": pa.array([[i, i + 1] for i in range(2000)]), "k": pa.array(range(2000))})
    good = tmp_path / "good.parquet"
    pq.write_table(table, good, write_page_checksum=True, use_dictionary=False, compression="none")
    first = pages(good, "k")[0]  # the list's chunk comes first: damage its middle
    bad = flipped(good, tmp_path / "bad.parquet", first.offset // 2)
    with pytest.raises(CorruptFileError, match="CRC") as err:
        lazyscan.scan(str(bad), ["l"], threads=1).to_table()
    assert err.value.location.column == "l"
    assert lazyscan.scan(str(bad), ["k"], threads=1).to_table()["k"].equals(table["k"])


# ---- a transfer that damages the bytes ---------------------------------------------------------


class DamagingSource(Source):
    """A local file whose byte at each of ``damaged`` is flipped in every transfer that includes
    it, but (``refetches_damaged`` False) in the reads :meth:`Fetcher.page_fetched_again`
    makes (see :func:`refetches`). Not remote: nothing is fetched ahead unless a test asks."""

    def __init__(self, path: Path, damaged: list[int], refetches_damaged: bool = False) -> None:
        self.path = str(path)
        self._data = path.read_bytes()
        self.size = len(self._data)
        self.stats = IOStats()
        self.identity = FileIdentity(size=self.size)
        self.damaged = damaged
        self.refetches_damaged = refetches_damaged
        self.refetching = False
        self.damaged_transfers = 0

    @property
    def remote(self) -> bool:
        return False

    def _read(self, offset: int, length: int) -> bytes:
        data = bytearray(self._data[offset : offset + length])
        if self.refetching and not self.refetches_damaged:
            return bytes(data)
        for at in self.damaged:
            if offset <= at < offset + length:
                data[at - offset] ^= 0x5A
                self.damaged_transfers += 1
        return bytes(data)


@pytest.fixture
def refetches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The file offsets of the pages read fetches again; their reads are marked on the source."""
    calls: list[int] = []
    original = Fetcher.page_fetched_again

    def spy(self: ParquetFile, offset: int, *args: Any) -> Any:
        calls.append(offset)
        source = self.source
        assert isinstance(source, DamagingSource)
        source.refetching = True
        try:
            return original(self, offset, *args)
        finally:
            source.refetching = False

    monkeypatch.setattr(Fetcher, "page_fetched_again", spy)
    return calls


TRANSIT_ROWS = 12_000


@pytest.fixture(scope="module")
def crc_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("crc") / "t.parquet", sample_table(TRANSIT_ROWS), "1.0", True, "snappy")


ROUTES = {
    "whole chunk": lambda pf, rows: pf.read_column(0, "s"),
    "row indices": lambda pf, rows: pf.read_column(0, "s", rows),
    "dense selection": lambda pf, rows: pf.read_column(0, "s", list(range(rows[0] - 200, rows[0] + 200))),
    "one pass": lambda pf, rows: pf.read_columns(0, ["i", "s"], rows)[1],
}


def expected(table: pa.Table, route: str, rows: list[int]) -> pa.Array:
    if route == "whole chunk":
        return table["s"].combine_chunks()
    if route == "dense selection":
        rows = list(range(rows[0] - 200, rows[0] + 200))
    return table["s"].take(rows).combine_chunks()


def damaged_page(path: Path, where: str) -> tuple[Page, int, int]:
    """A page of column s, the file offset of a byte of its body, and a row it serves."""
    chunk = pages(path, "s")
    page = chunk[0] if where == "dictionary page" else [p for p in chunk if p.num_rows][2]
    row = chunk[3].first_row + 5 if where == "dictionary page" else page.first_row + 5
    return page, page.body + page.length // 3, row


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("where", ["data page", "dictionary page"])
def test_a_page_damaged_in_transit_is_fetched_again(crc_file: Path, refetches: list[int], route: str, where: str) -> None:
    table = sample_table(TRANSIT_ROWS)
    page, at, row = damaged_page(crc_file, where)
    source = DamagingSource(crc_file, [at])
    got = ROUTES[route](ParquetFile(source), [row])
    assert source.damaged_transfers >= 1
    assert got.equals(expected(table, route, [row]))
    assert refetches == [page.offset]
    # damaged on every transfer: the read fails, naming the page
    always = DamagingSource(crc_file, [at], refetches_damaged=True)
    with pytest.raises(CorruptFileError) as err:
        ROUTES[route](ParquetFile(always), [row])
    assert_names(err, crc_file, "s", page.number)


@pytest.mark.parametrize("where", ["data page", "dictionary page"])
def test_the_second_fetch_passes_by_bytes_fetched_ahead(crc_file: Path, refetches: list[int], where: str) -> None:
    """Bytes fetched ahead (the read-ahead of object stores), damaged in that transfer, are not
    served again to the re-fetch."""
    table = sample_table(TRANSIT_ROWS)
    page, at, row = damaged_page(crc_file, where)
    source = DamagingSource(crc_file, [at])
    source.enable_prefetch()
    try:
        extent = (page.offset, page.body + page.length - page.offset)
        source.prefetch([extent])
        assert source.read_at(*extent) != crc_file.read_bytes()[page.offset : page.body + page.length]  # served ahead, damaged
        assert ParquetFile(source).read_column(0, "s", [row]).equals(table["s"].take([row]).combine_chunks())
        assert refetches == [page.offset]
    finally:
        source.close()


# ---- the option --------------------------------------------------------------------------------


def test_the_option_reaches_the_reader() -> None:
    assert ScanOptions().verify_checksums is True
    assert ReaderOptions().verify_checksums is True
    assert ScanOptions.from_mapping({"verify_checksums": "false"}).verify_checksums is False
    settings = SourceSettings.from_options({"path": "/tmp/x.parquet", "verifyChecksums": "false"})
    assert settings.scan_kwargs["verify_checksums"] is False
    scan = lazyscan.scan(str(parquet_testing_file("datapage_v1-corrupt-checksum.parquet")), verify_checksums=False)
    assert scan.reader_options.verify_checksums is False


def test_the_command_line_takes_the_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from lazyscan.cli.main import main

    path = str(parquet_testing_file("datapage_v1-corrupt-checksum.parquet"))
    out = str(tmp_path / "rows.parquet")
    assert main(["scan", path, "--output", out]) == 2
    assert "page checksum mismatch" in capsys.readouterr().err
    assert main(["scan", path, "--output", out, "-o", "verify_checksums=false"]) == 0
    assert pq.read_table(out).equals(pq.read_table(path))
