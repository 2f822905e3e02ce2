"""Ranged reads of a local file: ``LocalSource.read_ranges_into`` against the file's bytes."""

from __future__ import annotations

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
