"""Fetching the byte ranges of one read, counted into the reader's counters.

Every physical reader fetches through :func:`fetch` (bytes per range) or :func:`fetch_into`
(all ranges back to back in one array); :func:`fetch_again` asks the source once more for bytes
whose checksum did not match. Both coalesce the ranges as the options say, else as
the source's :attr:`~lazyscan.io.source.Source.default_read` does (the one coalescing policy,
described at :class:`~lazyscan.io.source.ReadOptions`), and add the time waited, the bytes
fetched and the requests made to the caller's counters. A range that does not lie inside the
file, or that the source ends inside, is a :class:`~lazyscan.io.source.ShortReadError` whose
``index`` says which range; the reader turns it into a ``CorruptFileError`` naming what the
range holds.
"""

from __future__ import annotations

import time
from typing import Protocol

import numpy as np

from lazyscan.io.source import ReadOptions, ShortReadError, Source


class FetchCounters(Protocol):
    """What a fetch counts: seconds waited, bytes fetched (gaps of coalesced requests
    included) and requests made (``lazyscan.format.counters.ReadCounters`` is one)."""

    io_seconds: float
    bytes_fetched: int
    requests: int


def check_ranges(source: Source, ranges: list[tuple[int, int]]) -> None:
    """:class:`ShortReadError` naming the first ``(offset, length)`` range that does not lie
    inside the file."""
    size = source.size
    for i, (off, length) in enumerate(ranges):
        if off < 0 or length < 0 or off + length > size:
            raise ShortReadError(
                f"the byte range {off}+{length} lies outside {source.path!r} ({size} bytes)", index=i
            )


def fetch(
    source: Source, ranges: list[tuple[int, int]], counters: FetchCounters, options: ReadOptions | None = None
) -> list[memoryview]:
    """The bytes of each ``(offset, length)`` range, in the order of ``ranges``."""
    check_ranges(source, ranges)
    t0 = time.perf_counter()
    try:
        views, nbytes, requests = source.read_ranges_counted(ranges, options)
    finally:
        counters.io_seconds += time.perf_counter() - t0
    counters.bytes_fetched += nbytes
    counters.requests += requests
    for i, ((off, length), view) in enumerate(zip(ranges, views)):
        if len(view) != length:
            raise ShortReadError(f"{source.path!r} ends inside the byte range {off}+{length}", index=i)
    return views


def fetch_into(
    source: Source,
    ranges: list[tuple[int, int]],
    counters: FetchCounters,
    options: ReadOptions | None = None,
    *,
    ranges_checked: bool = False,
) -> tuple[np.ndarray, list[int]]:
    """The bytes of ``ranges`` back to back in one ``uint8`` array: (the array, where each
    range starts in it). Local files are read straight into the array (``preadv``).
    ``ranges_checked``: the caller has checked that every range lies inside the file (a
    source that ends inside one still raises, without ``index`` where requests merged)."""
    if not ranges_checked:
        check_ranges(source, ranges)
    t0 = time.perf_counter()
    try:
        buf, starts, nbytes, requests = source.read_ranges_into(ranges, options)
    finally:
        counters.io_seconds += time.perf_counter() - t0
    counters.bytes_fetched += nbytes
    counters.requests += requests
    return buf, starts


def fetch_again(source: Source, offset: int, length: int, counters: FetchCounters) -> memoryview:
    """The bytes ``[offset, offset + length)`` once more, in a request of their own straight
    from the source (:meth:`~lazyscan.io.source.Source.read_fresh`): for bytes whose checksum
    did not match as first fetched."""
    t0 = time.perf_counter()
    try:
        data, nbytes = source.read_fresh(offset, length)
    finally:
        counters.io_seconds += time.perf_counter() - t0
    counters.bytes_fetched += nbytes
    counters.requests += 1
    return data
