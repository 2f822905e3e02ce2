"""Ranged reads of a local file: ``LocalSource.read_ranges_into`` against the file's bytes."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np
import pytest

from lazyscan.io.source import LocalSource, ReadOptions, ShortReadError, coalesce_ranges


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
