"""Files that change between planning and reading, and the caches of one process.

A scan plans from the files as they were when it was made (schema, statistics, row groups); a
file replaced before its rows are read fails the scan with a FileChangedError naming it, on a
local disk and on an S3 server (moto's, through pyarrow's client and s3fs), for Parquet and ORC,
with the same size and another size. A new scan reads the new file: its rows are pyarrow's rows
of it, even where the old and new files share their size and the last bytes of their footers
(one writer, one schema), which a cache keyed by a sample of the tail mistook for one file.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as po
import pyarrow.parquet as pq
import pytest

import lazyscan
from lazyscan.errors import FileChangedError
from lazyscan.io import FileIdentity, IOStats, LocalSource, Source
from lazyscan.parquet import ParquetFile
from lazyscan.scan.dataset import FileSplit
from tests.support.compare import assert_same_array
from tests.support.s3 import S3Server

BUCKET = "lazyscan-changes"
ROWS = 10_000
#: rows of the first version (a in [0, 1000)) and the second (a in [1000, 2000)) this keeps: the
#: first version's statistics rule out every row group of the second's matches
WHERE = "a >= 1200 AND a < 1700"


def _values(version: int, rows: int) -> pa.Table:
    rng = np.random.default_rng(version)
    return pa.table({
        "a": np.sort(rng.integers(0, 1000, rows)) + 1000 * version,
        "b": rng.random(rows),
    })


def write_version(path: Path, fmt: str, version: int, rows: int = ROWS) -> pa.Table:
    """Version ``version`` of a file: versions of one row count have one size (fixed-width
    values, no dictionary, no compression) and other values and statistics."""
    table = _values(version, rows)
    if fmt == "parquet":
        pq.write_table(table, path, compression="none", use_dictionary=False, row_group_size=rows // 5)
    else:
        table = table.set_column(0, "a", table["a"].cast(pa.float64()))  # ORC RLE would vary the size
        po.write_table(table, path, compression="uncompressed", stripe_size=16 * 1024)
    return table


def expected_rows(table: pa.Table, where: str = WHERE) -> pa.Table:
    """pyarrow's rows of ``table`` for ``WHERE``."""
    assert where == WHERE
    a = table["a"]
    return table.filter(pc.and_(pc.greater_equal(a, 1200), pc.less(a, 1700)))


def assert_same_rows(got: pa.Table, expected: pa.Table) -> None:
    assert got.num_rows == expected.num_rows
    for name in expected.column_names:
        assert_same_array(got[name].combine_chunks(), expected[name], name)


def _file(tmp_path: Path, fmt: str) -> Path:
    return tmp_path / f"t.{fmt}"


def _versions(tmp_path: Path, fmt: str, same_size: bool) -> tuple[Path, Path, pa.Table]:
    """The path with version 0 in place, a local copy of version 1 (the same size, or more
    rows), and version 1's table."""
    path = _file(tmp_path, fmt)
    write_version(path, fmt, 0)
    other = tmp_path / f"next.{fmt}"
    table = write_version(other, fmt, 1, ROWS if same_size else ROWS + 1000)
    assert (os.path.getsize(other) == os.path.getsize(path)) == same_size
    return path, other, table


def _rewrite(path: Path, other: Path, in_place: bool) -> None:
    """Put ``other``'s bytes at ``path``: rewritten in place (the same inode), or renamed over it."""
    data = other.read_bytes()
    if in_place:
        with open(path, "r+b") as f:
            f.truncate(0)
            f.write(data)
    else:
        staged = path.with_suffix(".staged")
        staged.write_bytes(data)
        os.replace(staged, path)


def _changed(fn: Callable[[], Any], name: str) -> FileChangedError:
    with pytest.raises(FileChangedError, match="changed since planning") as info:
        fn()
    assert name in str(info.value), str(info.value)
    return info.value


# ---- local files ------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
@pytest.mark.parametrize("same_size", [True, False], ids=["same-size", "other-size"])
@pytest.mark.parametrize("in_place", [True, False], ids=["in-place", "renamed-over"])
def test_local_file_replaced_after_planning_fails_the_scan(tmp_path: Path, fmt: str, same_size: bool, in_place: bool) -> None:
    path, other, table = _versions(tmp_path, fmt, same_size)
    planned = lazyscan.scan(str(path), where=WHERE)
    _rewrite(path, other, in_place)
    _changed(planned.to_table, str(path))
    # a scan planned now reads the new file
    assert_same_rows(lazyscan.scan(str(path), where=WHERE).to_table(), expected_rows(table))


def test_a_plan_without_footers_pins_the_listing(tmp_path: Path) -> None:
    # a schema given by the caller: planning reads no footer, the listing's stat pins the file
    path, other, _ = _versions(tmp_path, "parquet", True)
    schema = pq.read_schema(path)
    planned = lazyscan.scan(str(path), where=WHERE, schema=schema)
    _rewrite(path, other, True)
    _changed(planned.to_table, str(path))


def test_a_split_pins_the_size_it_was_planned_with(tmp_path: Path) -> None:
    # byte-range splits of another size would own other row groups: refused, not read
    path, _, _ = _versions(tmp_path, "parquet", True)
    size = os.path.getsize(path)
    split = FileSplit(str(path), 0, size + 100, size + 100)
    _changed(lambda: lazyscan.scan([split], where=WHERE).to_table(), str(path))
    assert lazyscan.scan([FileSplit(str(path), 0, size, size)], where="a < 5").count() > 0


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_file_rewritten_while_it_is_read_fails_the_scan(tmp_path: Path, fmt: str) -> None:
    # the row groups after the first are read from the new bytes under the old footer: the
    # check after the file's last row group (or the failed read itself) says the file changed
    path, other, _ = _versions(tmp_path, fmt, True)
    batches = lazyscan.scan(str(path), threads=1, batch_size=100).to_batches()
    first = next(batches)
    assert first.num_rows == 100
    _rewrite(path, other, True)
    _changed(lambda: list(batches), str(path))


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_file_replaced_between_two_scans_gives_the_new_rows(tmp_path: Path, fmt: str) -> None:
    path, other, table = _versions(tmp_path, fmt, True)
    assert lazyscan.scan(str(path), where=WHERE).count() == 0  # version 0: no row of WHERE
    if fmt == "parquet":
        # what made a footer cache keyed by size and the last 64 bytes return the old footer
        assert path.read_bytes()[-64:] == other.read_bytes()[-64:]
    _rewrite(path, other, True)
    got = lazyscan.scan(str(path), where=WHERE).to_table()
    reference = pq.read_table(path) if fmt == "parquet" else po.read_table(path)
    assert reference.equals(table)
    assert_same_rows(got, expected_rows(reference))
    assert got.num_rows > 0


class _BytesSource(Source):
    """Bytes in memory under a path and identity chosen by the test."""

    def __init__(self, path: str, data: bytes, identity: FileIdentity) -> None:
        self.path = path
        self._data = data
        self.size = len(data)
        self.identity = identity
        self.stats = IOStats()

    def _read(self, offset: int, length: int) -> bytes:
        return self._data[offset : offset + length]

    @property
    def remote(self) -> bool:
        return False


def test_two_files_sharing_path_identity_and_footer_end_never_share_cache_entries(tmp_path: Path) -> None:
    # the worst case for a cache: the same path, an identity that cannot tell the versions apart
    # (two writes within one tick of the clock), the same size and the same last 64 bytes
    first, second = tmp_path / "first.parquet", tmp_path / "second.parquet"
    tables = [write_version(first, "parquet", 0), write_version(second, "parquet", 1)]
    data = [first.read_bytes(), second.read_bytes()]
    assert len(data[0]) == len(data[1]) and data[0][-64:] == data[1][-64:] and data[0] != data[1]
    identity = FileIdentity(size=len(data[0]), mtime_ns=1_700_000_000_000_000_000)
    for _ in range(2):  # each read after the other's entries are cached
        for table, blob in zip(tables, data):
            pf = ParquetFile(_BytesSource("mem://one/path.parquet", blob, identity))
            a = table["a"].to_numpy()
            per = ROWS // 5
            for rg in range(pf.num_row_groups):
                stats = pf.statistics(rg, "a")
                assert (stats.min, stats.max) == (a[rg * per], a[(rg + 1) * per - 1])
                assert pf.page_layout(rg, "a") is not None
                assert_same_array(pf.read_column(rg, "a"), table["a"].slice(rg * per, per), f"rg {rg}")
                rows = lazyscan.RowRanges.from_indices(np.array([3, 7, per - 1], np.int64))
                got = pf.read_column(rg, "b", rows)
                assert_same_array(got, table["b"].slice(rg * per, per).take([3, 7, per - 1]), f"rg {rg} b")


def test_footer_digest_pins_the_footer(tmp_path: Path) -> None:
    path, other, _ = _versions(tmp_path, "parquet", True)
    digest = ParquetFile(str(path)).footer_digest
    assert ParquetFile(str(path)).footer_digest == digest  # the cached footer's
    assert ParquetFile(str(other)).footer_digest != digest
    orc, orc_other, _ = _versions(tmp_path, "orc", True)
    from lazyscan.orc import OrcFile

    assert OrcFile(str(orc)).footer_digest == OrcFile(str(orc)).footer_digest != OrcFile(str(orc_other)).footer_digest


# ---- on an S3 server --------------------------------------------------------------------------


def _filesystem(server: S3Server, client: str) -> Any:
    return server.arrow_filesystem() if client == "pyarrow" else server.fsspec_filesystem()


@pytest.mark.parametrize("client", ["pyarrow", "s3fs"])
@pytest.mark.parametrize("fmt", ["parquet", "orc"])
@pytest.mark.parametrize("same_size", [True, False], ids=["same-size", "other-size"])
def test_object_replaced_after_planning_fails_the_scan(
    s3_server: S3Server, tmp_path: Path, client: str, fmt: str, same_size: bool
) -> None:
    path, other, table = _versions(tmp_path, fmt, same_size)
    key = f"{BUCKET}/planned/{client}-{int(same_size)}.{fmt}"
    s3_server.upload(path, BUCKET, key.split("/", 1)[1])
    fs = _filesystem(s3_server, client)
    planned = lazyscan.scan(key, where=WHERE, filesystem=fs)
    s3_server.upload(other, BUCKET, key.split("/", 1)[1])
    _changed(planned.to_table, key)
    assert_same_rows(lazyscan.scan(key, where=WHERE, filesystem=fs).to_table(), expected_rows(table))


@pytest.mark.parametrize("client", ["pyarrow", "s3fs"])
@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_object_replaced_between_two_scans_gives_the_new_rows(s3_server: S3Server, tmp_path: Path, client: str, fmt: str) -> None:
    path, other, table = _versions(tmp_path, fmt, True)
    key = f"{BUCKET}/twice/{client}.{fmt}"
    fs = _filesystem(s3_server, client)
    s3_server.upload(path, BUCKET, key.split("/", 1)[1])
    assert lazyscan.scan(key, where=WHERE, filesystem=fs).count() == 0
    s3_server.upload(other, BUCKET, key.split("/", 1)[1])
    assert_same_rows(lazyscan.scan(key, where=WHERE, filesystem=fs).to_table(), expected_rows(table))


@pytest.mark.parametrize("client", ["pyarrow", "s3fs"])
def test_object_replaced_while_it_is_read_fails_the_scan(s3_server: S3Server, tmp_path: Path, client: str) -> None:
    # each ranged GET is its own request: the row groups after the first read the new object
    # under the old footer; the HEAD after the last one sees the new ETag
    path, other, _ = _versions(tmp_path, "parquet", True)
    key = f"{BUCKET}/during/{client}.parquet"
    fs = _filesystem(s3_server, client)
    s3_server.upload(path, BUCKET, key.split("/", 1)[1])
    batches = lazyscan.scan(key, filesystem=fs, threads=1, batch_size=100, prefetch=False).to_batches()
    assert next(batches).num_rows == 100
    s3_server.upload(other, BUCKET, key.split("/", 1)[1])
    _changed(lambda: list(batches), key)


def test_footer_longer_than_the_tail_read(tmp_path: Path) -> None:
    # keyed by the whole footer, which a second request fetches where it is longer than the
    # tail read; an ETag names the object's whole content, so there the tail read alone finds
    # the cached footer (one request per open, as before)
    path = tmp_path / "wide.parquet"
    pq.write_table(pa.table({f"column_{i:04d}": np.arange(50) for i in range(600)}), path, row_group_size=10)
    data = path.read_bytes()
    footer_len = int.from_bytes(data[-8:-4], "little")
    assert footer_len > 64 * 1024
    for etag, requests in ((None, 2), ('"e1"', 1)):
        identity = FileIdentity(size=len(data), mtime_ns=1, etag=etag)
        ParquetFile(_BytesSource("mem://wide.parquet", data, identity))
        again = _BytesSource("mem://wide.parquet", data, identity)
        pf = ParquetFile(again)
        assert again.stats.requests == requests, etag
        assert pf.num_row_groups == 5 and len(pf.schema.columns) == 600
    # another version under the same ETag-less identity and the same tail: a column renamed in
    # the footer's schema, which lies before the tail read
    at = data.find(b"column_0000")
    assert len(data) - 8 - footer_len < at < len(data) - 64 * 1024
    renamed = data[:at] + b"renamed_000" + data[at + len(b"column_0000") :]
    identity = FileIdentity(size=len(data), mtime_ns=1)
    first = ParquetFile(_BytesSource("mem://wide.parquet", data, identity))
    second = ParquetFile(_BytesSource("mem://wide.parquet", renamed, identity))
    assert first.schema.columns[0].name == "column_0000"
    assert second.schema.columns[0].name == "renamed_000"
    assert second.footer_digest != first.footer_digest


@pytest.mark.parametrize("client", ["pyarrow", "s3fs"])
def test_a_plan_without_footers_pins_the_listing_on_s3(s3_server: S3Server, tmp_path: Path, client: str) -> None:
    # planning reads no footer (the caller gives the schema): the listing pins the object, by its
    # ETag (s3fs lists them) or by its Last-Modified in whole seconds (pyarrow's listing has no
    # ETag; the HEAD of the scan's open gives whole seconds): a replacement a second later is seen
    path, other, _ = _versions(tmp_path, "parquet", True)
    key = f"{BUCKET}/listed/{client}.parquet"
    s3_server.upload(path, BUCKET, key.split("/", 1)[1])
    fs = _filesystem(s3_server, client)
    planned = lazyscan.scan(key, where=WHERE, filesystem=fs, schema=pq.read_schema(path))
    if client == "pyarrow":
        time.sleep(1.05)
    s3_server.upload(other, BUCKET, key.split("/", 1)[1])
    _changed(planned.to_table, key)


def test_the_check_after_the_reads_runs_once_per_file_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # one stat (a HEAD on an object store) per file after its last row group, none for a file
    # of which nothing was read after its open (every row group ruled out by its statistics)
    for i in range(3):
        write_version(tmp_path / f"f{i}.parquet", "parquet", 0)
    checks: list[str] = []
    original = LocalSource.current_identity

    def counted(self: LocalSource) -> FileIdentity:
        checks.append(self.path)
        return original(self)

    monkeypatch.setattr(LocalSource, "current_identity", counted)
    assert lazyscan.scan(str(tmp_path), where="a < 100").count() > 0
    assert sorted(checks) == sorted(str(tmp_path / f"f{i}.parquet") for i in range(3))
    checks.clear()
    assert lazyscan.scan(str(tmp_path), where=WHERE).count() == 0
    assert checks == []


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_a_store_that_gives_only_sizes_is_checked_by_the_footer(tmp_path: Path, fmt: str) -> None:
    # fsspec's memory filesystem gives no time, ETag nor version: a version of the same size is
    # told apart by its footer, before the scan (the planning open is not trusted) and after it
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    path, other, table = _versions(tmp_path, fmt, True)
    key = f"/lazyscan-changes/{tmp_path.name}/t.{fmt}"
    fs.pipe(key, path.read_bytes())
    planned = lazyscan.scan(key, where=WHERE, filesystem=fs)
    fs.pipe(key, other.read_bytes())
    _changed(planned.to_table, key)
    assert_same_rows(lazyscan.scan(key, where=WHERE, filesystem=fs).to_table(), expected_rows(table))
    # replaced while it is read
    fs.pipe(key, path.read_bytes())
    batches = lazyscan.scan(key, filesystem=fs, threads=1, batch_size=100, prefetch=False).to_batches()
    assert next(batches).num_rows == 100
    fs.pipe(key, other.read_bytes())
    _changed(lambda: list(batches), key)
