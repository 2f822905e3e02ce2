"""Ranged reads of a local file: ``LocalSource.read_ranges_into`` against the file's bytes; the
identity of a source's file (local and on S3) and the check that it did not change."""

from __future__ import annotations

import errno
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from lazyscan.errors import FileChangedError, ObjectNotFoundError
from lazyscan.io.source import (
    FileIdentity,
    LocalSource,
    ReadOptions,
    ShortReadError,
    coalesce_ranges,
    open_source,
)
from tests.support.s3 import S3Server


@pytest.fixture(scope="module")
def blob(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    data = np.random.default_rng(5).integers(0, 256, 3 << 20, dtype=np.uint8).tobytes()
    path = tmp_path_factory.mktemp("io") / "blob.bin"
    path.write_bytes(data)
    return path, data


def _ranges(
    rng: np.random.Generator, size: int, count: int, max_gap: int, max_len: int, shuffle: bool = True
) -> list[tuple[int, int]]:
    out, at = [], int(rng.integers(0, 1000))
    for _ in range(count):
        length = int(rng.integers(0, max_len))
        if at + length > size:
            break
        out.append((at, length))
        at += length + int(rng.integers(0, max_gap))
    if not shuffle:
        return out
    order = rng.permutation(len(out))
    return [out[i] for i in order]


@pytest.mark.parametrize(
    ("count", "max_gap", "max_len", "gap_option"),
    [
        (40, 20_000, 30_000, 64 * 1024),  # gaps inside coalesced requests
        (40, 300_000, 30_000, 512 * 1024),  # gaps larger than the first gap buffer
        (1500, 300, 500, 64 * 1024),  # more buffers than one preadv call takes
        (30, 200_000, 10_000, 0),  # every range a request of its own
    ],
)
@pytest.mark.parametrize("in_file_order", [False, True])
def test_read_ranges_into_returns_every_range(blob, count, max_gap, max_len, gap_option, in_file_order) -> None:
    path, data = blob
    rng = np.random.default_rng(count + max_gap)
    ranges = _ranges(rng, len(data), count, max_gap, max_len, shuffle=not in_file_order)
    src = LocalSource(str(path))
    try:
        opts = ReadOptions(coalesce_gap=gap_option)
        for _ in range(2):  # the second call reuses this thread's gap buffer
            buf, starts, nbytes, requests = src.read_ranges_into(ranges, opts)
            for (off, length), at in zip(ranges, starts):
                assert bytes(buf[at : at + length]) == data[off : off + length]
            merged = coalesce_ranges(ranges, gap_option, opts.coalesce_max)
            assert requests == len(merged)
            assert nbytes == sum(e - s for s, e, _ in merged)
    finally:
        src.close()


def test_read_ranges_into_overlapping_and_past_the_end(blob) -> None:
    path, data = blob
    src = LocalSource(str(path))
    try:
        ranges = [(100, 5000), (2000, 100), (50_000, 10)]
        buf, starts, _, _ = src.read_ranges_into(ranges)
        for (off, length), at in zip(ranges, starts):
            assert bytes(buf[at : at + length]) == data[off : off + length]
        with pytest.raises(ShortReadError, match="ends inside"):
            src.read_ranges_into([(10, 10), (len(data) - 5, 10)])
    finally:
        src.close()


def test_read_ranges_into_without_gaps_reads_adjacent_ranges_in_one_request(blob) -> None:
    """Local files read no byte between ranges (coalesce_gap 0): ranges adjacent in the file and
    in the list take one request, everything else its own, overlaps and empty ranges included."""
    path, data = blob
    src = LocalSource(str(path))
    opts = ReadOptions(coalesce_gap=0, coalesce_max=10_000)
    cases = [
        ([(100, 50), (150, 70), (220, 5)], 1),  # adjacent: one request
        ([(220, 5), (100, 50), (150, 70)], 2),  # adjacent in the file, not in the list
        ([(100, 5000), (2000, 100), (5100, 0), (50_000, 10)], 3),  # overlap, empty range: none
        ([(0, 6000), (6000, 6000)], 2),  # adjacent, but one request would pass coalesce_max
    ]
    try:
        for ranges, requests in cases:
            buf, starts, nbytes, got = src.read_ranges_into(ranges, opts)
            for (off, length), at in zip(ranges, starts):
                assert bytes(buf[at : at + length]) == data[off : off + length]
            assert got == requests and nbytes == sum(length for _, length in ranges)
        with pytest.raises(ShortReadError, match="ends inside"):
            src.read_ranges_into([(10, 10), (len(data) - 5, 10)], opts)
    finally:
        src.close()


class _Kernel:
    """``os.preadv`` and ``os.posix_fadvise`` as the page cache would answer them: the byte
    ranges in ``cold`` are not cached, so a read with ``RWF_NOWAIT`` stops before them."""

    def __init__(self, cold: list[tuple[int, int]], nowait_error: int | None = None) -> None:
        self.cold = cold
        self.nowait_error = nowait_error
        self.nowait_calls = 0
        self.advised: list[tuple[int, int]] = []
        self._preadv = os.preadv

    def preadv(self, fd: int, buffers: list, offset: int, flags: int = 0) -> int:
        if flags & getattr(os, "RWF_NOWAIT", 0):
            self.nowait_calls += 1
            if self.nowait_error is not None:
                raise OSError(self.nowait_error, os.strerror(self.nowait_error))
            length = sum(len(b) for b in buffers)
            first_cold = min((s for s, n in self.cold if s < offset + length and offset < s + n), default=None)
            if first_cold is not None:
                if first_cold <= offset:
                    raise BlockingIOError(errno.EAGAIN, "would block")
                return self._preadv(fd, [memoryview(buffers[0])[: first_cold - offset]], offset)
        return self._preadv(fd, buffers, offset)

    def posix_fadvise(self, fd: int, offset: int, length: int, advice: int) -> None:
        assert advice == os.POSIX_FADV_WILLNEED
        self.advised.append((offset, length))


def _read_with(kernel: _Kernel, path: Path, ranges: list[tuple[int, int]], monkeypatch) -> tuple:
    """``read_ranges_into`` without gaps, the kernel's calls answered by ``kernel``."""
    monkeypatch.setattr(os, "preadv", kernel.preadv)
    monkeypatch.setattr(os, "posix_fadvise", kernel.posix_fadvise)
    src = LocalSource(str(path))
    try:
        return src.read_ranges_into(ranges, ReadOptions(coalesce_gap=0))
    finally:
        src.close()


needs_nowait = pytest.mark.skipif(not getattr(os, "RWF_NOWAIT", 0), reason="RWF_NOWAIT is Linux's")


@needs_nowait
def test_reads_missing_the_page_cache_ask_for_the_rest_at_once(blob, monkeypatch) -> None:
    """When a run of ranges is not all in the page cache, the kernel is asked to start reading
    the rest of that run and every later range before the read waits (their disk requests then
    overlap); the later ranges are read plainly, and every byte is still right."""
    path, data = blob
    ranges = [(0, 100), (100, 50), (10_000, 4000), (50_000, 300), (70_000, 20), (90_000, 0)]
    kernel = _Kernel(cold=[(12_000, 100)])
    buf, starts, nbytes, requests = _read_with(kernel, path, ranges, monkeypatch)
    for (off, length), at in zip(ranges, starts):
        assert bytes(buf[at : at + length]) == data[off : off + length]
    assert requests == 4 and nbytes == sum(n for _, n in ranges)
    # runs 1 (cached) and 2 (missed from byte 12,000 on) tried without waiting, the rest not
    assert kernel.nowait_calls == 2
    assert kernel.advised == [(12_000, 2000), (50_000, 300), (70_000, 20)]


@needs_nowait
def test_reads_in_the_page_cache_or_on_file_systems_without_nowait_advise_nothing(blob, monkeypatch) -> None:
    path, data = blob
    ranges = [(5, 100), (20_000, 3000), (40_000, 10)]
    for kernel, tries in ((_Kernel(cold=[]), 2), (_Kernel(cold=[], nowait_error=errno.EOPNOTSUPP), 1)):
        buf, starts, _, _ = _read_with(kernel, path, ranges, monkeypatch)
        for (off, length), at in zip(ranges, starts):
            assert bytes(buf[at : at + length]) == data[off : off + length]
        # the last range is read plainly (nothing after it to ask for); a file system that
        # refuses the flag is not asked again
        assert kernel.nowait_calls == tries and kernel.advised == []


@needs_nowait
def test_a_range_past_the_end_is_reported_after_a_missed_read(blob, monkeypatch) -> None:
    path, data = blob
    kernel = _Kernel(cold=[(len(data) - 100, 100)])
    with pytest.raises(ShortReadError, match="ends inside"):
        _read_with(kernel, path, [(len(data) - 200, 250), (10, 10)], monkeypatch)
    assert kernel.advised[0] == (len(data) - 100, 150)


# --- file identity -------------------------------------------------------------------------


def _rewrite_in_place(path: Path, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.write(data)


def _later(path: Path, seconds: float = 2.0) -> None:
    """Move the file's modification time on (a rewrite within one tick of the kernel's clock
    would keep it: the case the identity cannot see, said in its docstring)."""
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + int(seconds * 1e9)))


def test_local_identity_sees_a_rewrite_in_place_of_the_same_size(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"a" * 1000)
    src = LocalSource(str(path))
    try:
        planned = src.identity
        assert planned.size == 1000 and planned.inode == os.stat(path).st_ino
        src.check_unchanged(planned)  # nothing changed yet
        _rewrite_in_place(path, b"b" * 1000)
        _later(path)
        with pytest.raises(FileChangedError, match=r"changed since planning: modified .* -> ") as e:
            src.check_unchanged(planned)
        assert e.value.location.file == str(path)
        assert "size" not in str(e.value)  # same size: the time tells
    finally:
        src.close()


def test_local_identity_sees_a_rewrite_that_puts_the_old_time_back(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"a" * 1000)
    src = LocalSource(str(path))
    try:
        planned = src.identity
        st = os.stat(path)
        _later(path, 0.05)  # ctime moves with every write, at the kernel's clock tick
        _rewrite_in_place(path, b"b" * 1000)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        now = src.current_identity()
        assert now.mtime_ns == planned.mtime_ns and now.ctime_ns != planned.ctime_ns
        with pytest.raises(FileChangedError, match="changed since planning: changed "):
            src.check_unchanged(planned)
    finally:
        src.close()


def test_local_identity_sees_a_file_renamed_over_by_path_not_descriptor(tmp_path: Path) -> None:
    """The open descriptor still reads the old inode; the check stats the path."""
    path = tmp_path / "f.bin"
    path.write_bytes(b"a" * 1000)
    src = LocalSource(str(path))
    try:
        planned = src.identity
        other = tmp_path / "g.bin"
        other.write_bytes(b"b" * 1000)
        st = os.stat(path)
        os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))  # even with the same time
        os.replace(other, path)
        assert src.read_at(0, 4) == b"aaaa"  # the descriptor's file
        with pytest.raises(FileChangedError, match="inode"):
            src.check_unchanged(planned)
    finally:
        src.close()


def test_local_identity_sees_a_touch_and_a_growth_and_a_removal(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"a" * 1000)
    src = LocalSource(str(path))
    try:
        planned = src.identity
        _later(path)
        diff = planned.describe_difference(src.current_identity())
        assert diff is not None and diff.startswith("modified ")
        with open(path, "ab") as f:
            f.write(b"tail")
        diff = planned.describe_difference(src.current_identity())
        assert diff is not None and "size 1000 -> 1004" in diff
        path.unlink()
        with pytest.raises(ObjectNotFoundError, match=r"f\.bin"):
            src.check_unchanged(planned)
    finally:
        src.close()


def test_identity_differences_and_pickling() -> None:
    a = FileIdentity(size=10, mtime_ns=1_700_000_000_123_456_789, etag='"abc"', version_id="v1")
    assert a.describe_difference(a) is None
    assert pickle.loads(pickle.dumps(a)) == a
    assert a.describe_difference(FileIdentity(size=12, etag='"abc"')) == "size 10 -> 12"
    assert a.describe_difference(FileIdentity(size=10, etag='"def"')) == 'ETag "abc" -> "def"'
    assert a.describe_difference(FileIdentity(size=10, version_id="v2")) == "version 'v1' -> 'v2'"
    later = FileIdentity(size=10, mtime_ns=1_700_000_001_000_000_000)
    assert a.describe_difference(later) == (
        "modified 2023-11-14T22:13:20.123456789Z -> 2023-11-14T22:13:21.000000000Z"
    )
    # a field only one side knows is no difference
    assert FileIdentity(size=10).describe_difference(a) is None


def test_local_source_pickles_and_reopens_with_its_identity(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"a" * 100)
    src = LocalSource(str(path))
    copy = pickle.loads(pickle.dumps(src))
    try:
        assert copy.identity == src.identity
    finally:
        src.close()
        copy.close()


def test_missing_local_file_is_object_not_found(tmp_path: Path) -> None:
    with pytest.raises(ObjectNotFoundError, match=r"nothing\.bin"):
        open_source(tmp_path / "nothing.bin")


@pytest.mark.parametrize("client", ["pyarrow", "s3fs"])
def test_object_identity_sees_an_overwrite_of_the_same_size(s3_server: S3Server, client: str) -> None:
    bucket = s3_server.bucket("lazyscan-identity")
    key = f"same-size-{client}.bin"
    s3_server.put(bucket, key, b"a" * 5000)
    fs = s3_server.arrow_filesystem() if client == "pyarrow" else s3_server.fsspec_filesystem()
    before = s3_server.requests()
    src = open_source(f"{bucket}/{key}", filesystem=fs)
    try:
        assert s3_server.requests() - before == 1  # the open's HEAD tells the identity too
        planned = src.identity
        assert planned.size == 5000 and planned.etag is not None and planned.mtime_ns is not None
        assert pickle.loads(pickle.dumps(planned)) == planned
        src.check_unchanged(planned)
        s3_server.put(bucket, key, b"b" * 5000)
        with pytest.raises(FileChangedError, match=r'changed since planning: ETag "\w+" -> "\w+"') as e:
            src.check_unchanged(planned)
        assert e.value.location.file == f"{bucket}/{key}"
        s3_server.client.delete_object(Bucket=bucket, Key=key)
        with pytest.raises(ObjectNotFoundError, match=key):
            src.check_unchanged(planned)
    finally:
        src.close()


def test_s3fs_identity_has_the_version_id_of_a_versioned_bucket(s3_server: S3Server) -> None:
    bucket = s3_server.bucket("lazyscan-versioned")
    s3_server.client.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    s3_server.put(bucket, "v.bin", b"a" * 100)
    src = open_source(f"{bucket}/v.bin", filesystem=s3_server.fsspec_filesystem())
    try:
        assert src.identity.version_id is not None
        s3_server.put(bucket, "v.bin", b"a" * 100)  # same bytes, same ETag: a new version
        with pytest.raises(FileChangedError, match="version"):
            src.check_unchanged(src.identity)
    finally:
        src.close()


def test_arrow_local_filesystem_identity_has_the_modification_time(tmp_path: Path) -> None:
    import pyarrow.fs as pafs

    path = tmp_path / "f.bin"
    path.write_bytes(b"a" * 100)
    src = open_source(str(path), filesystem=pafs.LocalFileSystem())
    try:
        assert src.identity.mtime_ns == os.stat(path).st_mtime_ns
        _later(path)
        with pytest.raises(FileChangedError, match="modified"):
            src.check_unchanged(src.identity)
    finally:
        src.close()
