"""Fetching a file's byte ranges for column reads, through :mod:`lazyscan.io.fetch` (coalesced
as the reader options say, else by the source's policy, and counted), with the ranges checked to
lie in the file and page checksums verified: a page whose checksum does not match is fetched
again from the source once, then reported with its row group, column and page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from lazyscan.errors import CorruptFileError, FileError, LazyScanError
from lazyscan.format.counters import ReadCounters
from lazyscan.format.options import ReaderOptions
from lazyscan.io import ReadOptions, Source
from lazyscan.io import fetch as io_fetch
from lazyscan.io.source import ShortReadError
from lazyscan.parquet import checksums
from lazyscan.parquet.layout import PageLayouts


@dataclass
class OpenFile:
    """What the parts of an open Parquet file share: its source, its path, the reader options (a
    caller may replace them between reads) and the counters of reads not given their own."""

    source: Source
    path: str
    options: ReaderOptions
    counters: ReadCounters

    def counters_or_own(self, counters: ReadCounters | None) -> ReadCounters:
        """``counters``, else the file's own."""
        return counters if counters is not None else self.counters


class FetchCheck(NamedTuple):
    """What the ranges of a fetch hold, for checking their pages' checksums: pages of row group
    ``row_group``; each range one page (``walk_rows`` is ``checksums.ONE_PAGE``), or the
    consecutive pages from its start holding ``walk_rows`` rows of data, the first of them page
    ``first_page`` of its chunk (else a bad page's number comes from the chunk's layout)."""

    row_group: int
    walk_rows: int = checksums.ONE_PAGE
    first_page: int | None = None


def located(e: Exception, path: str, where: dict[str, Any]) -> LazyScanError:
    """``e`` as a lazyscan error that names the file ``path`` and ``where``."""
    if isinstance(e, FileError):
        return e.at(file=path, **where)
    if isinstance(e, LazyScanError):
        return e
    return CorruptFileError(f"cannot decode column chunk: {type(e).__name__}: {e}", file=path, **where)


class Fetcher:
    """The byte ranges of one open file, fetched with counters and checked."""

    def __init__(self, file: OpenFile, layouts: PageLayouts) -> None:
        self.file = file
        self.source = file.source
        self.path = file.path
        self.layouts = layouts

    @property
    def options(self) -> ReaderOptions:
        return self.file.options

    @property
    def read_options(self) -> ReadOptions:
        """How this file's reads coalesce ranges: the reader option, else the source's policy
        (:attr:`Source.default_read <lazyscan.io.Source.default_read>`)."""
        return self.options.read or self.source.default_read

    def fetch(self, ranges: list[tuple[int, int]], c: ReadCounters, check: FetchCheck | None = None) -> list[memoryview]:
        """The bytes of ``ranges``; with ``check`` (what they hold), their pages' checksums
        verified (:meth:`_verified_views`) when the reader options ask for it."""
        try:
            out = io_fetch.fetch(self.source, ranges, c, self.read_options)
        except ShortReadError:
            self.check_ranges(ranges)
            raise CorruptFileError("file ends inside a page") from None
        if check is not None and self.options.verify_checksums:
            out = self._verified_views(ranges, out, check, c)
        return out

    def _verified_views(
        self, ranges: list[tuple[int, int]], views: list[memoryview], check: FetchCheck, c: ReadCounters
    ) -> list[memoryview]:
        """``views`` (the bytes of ``ranges``) with the pages whose checksum does not match
        fetched again; CorruptFileError when a page's bytes do not match twice."""
        limits = np.array([check.walk_rows], np.int64)
        start = np.zeros(1, np.int64)
        out = views
        for r, ((offset, _), view) in enumerate(zip(ranges, views)):
            buf = np.frombuffer(view, np.uint8)
            bad = checksums.mismatches(buf, start, np.array([len(buf)], np.int64), limits)
            if not bad:
                continue
            fixed = bytearray(view)
            for m in bad:
                fixed[m.at : m.at + m.size] = self.page_fetched_again(offset + m.at, m, check, c).data
            out = list(out) if out is views else out
            out[r] = memoryview(fixed)
        return out

    def page_fetched_again(self, offset: int, m: checksums.Mismatch, check: FetchCheck, c: ReadCounters) -> np.ndarray:
        """The page at ``offset`` whose checksum did not match as fetched (``m``), read again
        from the source itself (not from bytes fetched ahead): a transfer may have damaged it.
        CorruptFileError naming the page when its bytes do not match again."""
        data = np.frombuffer(io_fetch.fetch_again(self.source, offset, m.size, c), np.uint8)
        c.pages_refetched += 1
        ok, stored, computed = checksums.page_matches(data)
        if ok and len(data) == m.size:
            return data
        if not stored and not computed:
            stored, computed = m.stored, m.computed
        column, page = self.layouts.page_at(check.row_group, offset)
        if check.first_page is not None:
            page = check.first_page + m.ordinal
        raise CorruptFileError(
            checksums.describe(stored, computed), file=self.path, row_group=check.row_group, column=column, page=page
        )

    def fetch_into(
        self, ranges: list[tuple[int, int]], c: ReadCounters, check: FetchCheck | None = None
    ) -> tuple[np.ndarray, list[int]]:
        """:meth:`fetch` into one array: (the array, where each range starts in it). The
        callers have checked that every range lies inside the file."""
        try:
            buf, at = io_fetch.fetch_into(self.source, ranges, c, self.read_options, ranges_checked=True)
        except ShortReadError:
            raise CorruptFileError("file ends inside a page") from None
        if check is not None and self.options.verify_checksums and ranges:
            starts = np.array(at, np.int64)
            ends = starts + np.array([length for _, length in ranges], np.int64)
            limits = np.full(len(ranges), check.walk_rows, np.int64)
            for m in checksums.mismatches(buf, starts, ends, limits):
                good = self.page_fetched_again(ranges[m.range][0] + m.at - at[m.range], m, check, c)
                if not buf.flags.writeable:
                    buf = buf.copy()
                buf[m.at : m.at + m.size] = good
        return buf, at

    def check_ranges(self, ranges: list[tuple[int, int]]) -> None:
        """CorruptFileError naming the first range that does not lie inside the file."""
        size = self.source.size
        for off, length in ranges:
            if off < 0 or length < 0 or off + length > size:
                raise CorruptFileError(f"byte range {off}+{length} lies outside the file")
