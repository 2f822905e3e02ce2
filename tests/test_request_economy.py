"""Requests of selective scans on an object store (moto's S3 server on 127.0.0.1) over files as
pyarrow writes them by default (no page index: page headers must be walked): each chunk's page
headers are walked once per scan, a small chunk from one read whose bytes then serve its pages,
no byte range is fetched twice, and the rows equal pyarrow's."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import lazyscan
from lazyscan.io.source import ArrowSource, FsspecSource, LocalSource
from lazyscan.parquet import ParquetFile, clear_caches, layout
from tests.support.s3 import S3Server

BUCKET = "request-economy"
ROWS = 300_000
ROW_GROUP = 100_000
#: a row of the second row group: its payload columns are read for that one row
NEEDLE_ROW = 123_456


def _table() -> pa.Table:
    rng = np.random.default_rng(5)
    words = np.array(["alpha", "bravo", "charlie", "delta", "echo", "golf", "hotel", "india"])
    picks = words[rng.integers(0, len(words), (ROWS, 3))]
    comment = [f"{a} {b} {c} {i}" for i, (a, b, c) in enumerate(picks.tolist())]
    return pa.table({
        "id": np.arange(ROWS, dtype=np.int64),
        "qty": rng.integers(1, 50, ROWS),
        "price": rng.random(ROWS) * 1000,
        "flag": pa.array(rng.choice(["A", "N", "R"], ROWS)),
        "day": pa.array(rng.integers(0, 3000, ROWS).astype("int32")),
        # few values, all in the dictionary: a needle between them passes the statistics
        "mode": pa.array(rng.choice(["AIR", "MAIL", "SHIP", "TRUCK"], ROWS)),
        "comment": pa.array(comment),
    })


@pytest.fixture(scope="module")
def stored(s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The file as pyarrow writes it by default (dictionaries, 1 MiB pages, no page index), locally
    and on the server."""
    path = tmp_path_factory.mktemp("economy") / "default.parquet"
    table = _table()
    pq.write_table(table, path, row_group_size=ROW_GROUP)
    md = pq.ParquetFile(path).metadata
    assert not md.row_group(0).column(0).has_offset_index  # the case: headers must be walked
    key = s3_server.upload(path, BUCKET, "default.parquet")[len("s3://") :]
    return {"path": path, "key": key, "table": table, "md": md}


class Reads:
    """The byte ranges the sources of the test fetched (each a request to the store)."""

    def __init__(self) -> None:
        self.ranges: list[tuple[int, int]] = []
        self._lock = threading.Lock()

    def record(self, offset: int, length: int) -> None:
        with self._lock:
            self.ranges.append((offset, length))


@pytest.fixture
def exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sources that fetch what they are asked, not a minimum per request: the reads the
    reader itself asks for (a source that widens small reads fetches the bytes after a small
    dictionary with it, which is the source's policy, tested with the source)."""
    for cls in (ArrowSource, FsspecSource):
        monkeypatch.setattr(cls, "min_request", 0, raising=False)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Reads:
    """Record every request the object-store sources make (``_read`` is one GET)."""
    seen = Reads()
    for cls in (ArrowSource, FsspecSource):
        original = cls._read

        def recording(self: Any, offset: int, length: int, _original: Any = original) -> bytes:
            seen.record(offset, length)
            return _original(self, offset, length)  # type: ignore[no-any-return]

        monkeypatch.setattr(cls, "_read", recording)
    return seen


def _chunks(md: pq.FileMetaData) -> dict[tuple[int, str], tuple[int, int]]:
    """``(row group, column) -> (start, end)`` of every column chunk."""
    out = {}
    for r in range(md.num_row_groups):
        for c in range(md.num_columns):
            col = md.row_group(r).column(c)
            start = col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset
            out[r, col.path_in_schema] = (start, start + col.total_compressed_size)
    return out


def _open_reads(key: str, fs: Any, reads: Reads) -> list[tuple[int, int]]:
    """The requests opening the file makes (footer, magic number), with the caches empty;
    the caches are left empty and the record too."""
    clear_caches()
    before = len(reads.ranges)
    ParquetFile(key, fs).close()
    opened = reads.ranges[before:]
    clear_caches()
    reads.ranges.clear()
    return opened


def _beyond(ranges: list[tuple[int, int]], opened: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``ranges`` without the reads of the opens (a scan opens its file once or twice: schema
    discovery): the requests for the column chunks."""
    left = Counter(opened)
    out = []
    for r in ranges:
        if left[r] > 0:
            left[r] -= 1
        else:
            out.append(r)
    return out


def _twice(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The byte ranges ``[start, end)`` covered by more than one of ``ranges``."""
    out = []
    covered_to = -1
    for off, length in sorted(ranges):
        if off < covered_to:
            out.append((off, min(covered_to, off + length)))
        covered_to = max(covered_to, off + length)
    return out


def _expected(table: pa.Table, column: str, value: str) -> pa.Table:
    return table.filter(pc.equal(table[column], value))


def _filesystem(s3_server: S3Server, kind: str) -> Any:
    return s3_server.arrow_filesystem() if kind == "arrow" else s3_server.fsspec_filesystem()


@pytest.mark.parametrize("kind", ["arrow", "fsspec"])
def test_needle_scan_makes_a_request_per_chunk_at_most_and_reads_no_byte_twice(
    s3_server: S3Server, stored: dict[str, Any], reads: Reads, kind: str
) -> None:
    fs = _filesystem(s3_server, kind)
    table, md = stored["table"], stored["md"]
    needle = table["comment"][NEEDLE_ROW].as_py()
    opened = _open_reads(stored["key"], fs, reads)
    got = lazyscan.scan(stored["key"], where=lazyscan.col("comment") == needle, filesystem=fs, threads=2).to_table()
    assert got.equals(_expected(table, "comment", needle))
    data = _beyond(reads.ranges, opened)
    # every row group reads its filter column; the one holding the needle its other columns,
    # whose chunks lie side by side: one request each at most. Walking page headers one GET
    # at a time costs a request per page instead.
    hit_groups = 1
    payload_columns = md.num_columns - 1
    assert len(data) <= md.num_row_groups + hit_groups * payload_columns, data
    # and those chunks side by side come in one request
    assert len(data) <= md.num_row_groups + hit_groups, data
    # no byte of the chunks twice (the open's reads are the footer's to answer for: its
    # speculative tail read reaches into the last chunk)
    assert _twice(data) == []


def test_pages_of_walked_chunks_are_served_from_the_walk(
    s3_server: S3Server, stored: dict[str, Any], reads: Reads
) -> None:
    # the payload chunks of the row group holding the needle: each is fetched once, whole, and
    # the pages read after the walk come from those bytes
    fs = s3_server.arrow_filesystem()
    table, md = stored["table"], stored["md"]
    needle = table["comment"][NEEDLE_ROW].as_py()
    opened = _open_reads(stored["key"], fs, reads)
    got = lazyscan.scan(stored["key"], where=lazyscan.col("comment") == needle, filesystem=fs, threads=1).to_table()
    assert got.equals(_expected(table, "comment", needle))
    data = _beyond(reads.ranges, opened)
    hit = NEEDLE_ROW // ROW_GROUP
    for (rg, name), (start, end) in _chunks(md).items():
        if rg != hit or name == "comment":
            continue
        inside = [(o, n) for o, n in data if o < end and o + n > start]
        assert len(inside) == 1, (name, inside)
        o, n = inside[0]
        assert o <= start and o + n >= end, (name, inside, start, end)


@pytest.fixture(scope="module")
def big_chunk(s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One row group whose payload column ``x`` (PLAIN doubles, 1 MiB pages) is a chunk larger
    than :data:`~lazyscan.parquet.layout.WHOLE_WALK_MAX`."""
    rows = layout.WHOLE_WALK_MAX // 8 * 5 // 4
    table = pa.table({"key": np.arange(rows, dtype=np.int32), "x": np.random.default_rng(2).random(rows)})
    path = tmp_path_factory.mktemp("economy") / "big.parquet"
    pq.write_table(table, path, row_group_size=rows, use_dictionary=False, compression="none")
    md = pq.ParquetFile(path).metadata
    assert md.num_row_groups == 1 and md.row_group(0).column(1).total_compressed_size > layout.WHOLE_WALK_MAX
    key = s3_server.upload(path, BUCKET, "big.parquet")[len("s3://") :]
    return {"path": path, "key": key, "table": table, "md": md}


def test_big_chunks_are_walked_header_by_header(s3_server: S3Server, big_chunk: dict[str, Any], reads: Reads) -> None:
    # a chunk too big to read whole for its headers is walked a header at a time, and only
    # the page holding the needle is fetched: the scan adds no bytes of the pages it skips
    # (no coalescing gap, which would add them on its own account)
    fs = s3_server.arrow_filesystem()
    table, md = big_chunk["table"], big_chunk["md"]
    opened = _open_reads(big_chunk["key"], fs, reads)
    row = table.num_rows * 2 // 3
    got = lazyscan.scan(big_chunk["key"], where=lazyscan.col("key") == row, filesystem=fs, coalesce_gap=0).to_table()
    assert got.equals(table.slice(row, 1))
    start, end = _chunks(md)[0, "x"]
    data = _beyond(reads.ranges, opened)
    fetched = sum(min(o + n, end) - max(o, start) for o, n in data if o < end and o + n > start)
    pages = len(ParquetFile(big_chunk["path"]).page_layout(0, "x").pages)
    assert pages > 4
    # a page and what the header reads take: well under half the chunk
    assert fetched < (end - start) / 2, (fetched, end - start)


@pytest.mark.usefixtures("exact")
def test_dictionary_rules_row_groups_out_without_their_data_pages(
    s3_server: S3Server, stored: dict[str, Any], reads: Reads
) -> None:
    # "BOAT" lies between the column's minimum and maximum but in no dictionary: each row
    # group reads its dictionary page, none of its data pages
    fs = s3_server.arrow_filesystem()
    md = stored["md"]
    opened = _open_reads(stored["key"], fs, reads)
    got = lazyscan.scan(stored["key"], where=lazyscan.col("mode") == "BOAT", filesystem=fs, threads=2).to_table()
    assert got.num_rows == 0
    data = _beyond(reads.ranges, opened)
    for (rg, name), (start, end) in _chunks(md).items():
        if name != "mode":
            continue
        # the dictionary page: header and page in one read that stops where the data pages start
        dictionary_end = md.row_group(rg).column(md.schema.names.index("mode")).data_page_offset
        inside = [(o, n) for o, n in data if o < end and o + n > start]
        assert inside, rg
        assert all(o + n <= dictionary_end for o, n in inside if o >= start), (rg, inside, dictionary_end)
    assert _twice(data) == []


@pytest.mark.usefixtures("exact")
def test_needle_in_a_dictionary_reads_each_byte_once(
    s3_server: S3Server, stored: dict[str, Any], reads: Reads
) -> None:
    # a value in the dictionaries: the dictionary first, then the data pages after it (not the
    # dictionary again), then the rows' other columns
    fs = s3_server.arrow_filesystem()
    table = stored["table"]
    value = "SHIP"
    where = (lazyscan.col("mode") == value) & (lazyscan.col("id") < 1000)
    opened = _open_reads(stored["key"], fs, reads)
    got = lazyscan.scan(stored["key"], where=where, filesystem=fs, threads=2).to_table()
    expected = table.filter(pc.and_(pc.equal(table["mode"], value), pc.less(table["id"], 1000)))
    assert got.equals(expected)
    assert _twice(_beyond(reads.ranges, opened)) == []


class _SlowSource(LocalSource):
    """A local file whose reads take a while and are recorded (two walks racing)."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.reads = Reads()

    def _read(self, offset: int, length: int) -> bytes:
        self.reads.record(offset, length)
        time.sleep(0.002)
        return super()._read(offset, length)


def test_threads_wanting_one_layout_share_one_walk(stored: dict[str, Any]) -> None:
    clear_caches()
    source = _SlowSource(str(stored["path"]))
    pf = ParquetFile(source)
    source.reads.ranges.clear()
    layouts: list[Any] = []
    threads = [threading.Thread(target=lambda: layouts.append(pf.page_layout(1, "price"))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(layouts) == 4 and all(x is layouts[0] for x in layouts)
    assert len(layouts[0].pages) > 1
    assert [r for r, n in Counter(source.reads.ranges).items() if n > 1] == []
    pf.close()


def test_local_walks_read_headers_and_keep_no_blocks(stored: dict[str, Any]) -> None:
    # on a local file a request is a system call: the walk reads headers only, as before
    clear_caches()
    source = _SlowSource(str(stored["path"]))
    pf = ParquetFile(source)
    source.reads.ranges.clear()
    layout = pf.page_layout(1, "price")
    assert len(source.reads.ranges) == len(layout.pages) + (layout.dictionary is not None)
    assert all(n <= 256 for _, n in source.reads.ranges)
    assert source._blocks is None
    pf.close()
