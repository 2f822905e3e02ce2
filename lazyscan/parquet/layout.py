"""Where the pages of each column chunk are: page layouts, dictionary pages, page statistics.

A chunk's layout (its dictionary page and the offset, size and rows of each data page) comes
from its OffsetIndex when present and consistent, otherwise from walking its page headers
(reading headers only, or on an object store the whole chunk in one request when that costs
less than the header requests it replaces). Layouts are cached per footer. A chunk whose offset
index turns out to locate a page wrongly is walked instead, and its index is not used again.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lazyscan.errors import CorruptFileError, LazyScanError
from lazyscan.format.statistics import ColumnStats
from lazyscan.io import ReadOptions, Source
from lazyscan.parquet import caches, codecs
from lazyscan.parquet.footer import Footer
from lazyscan.parquet.metadata import ColumnMetaData, PageHeader, PageLocation, PageType
from lazyscan.parquet.page_header import parse_page_header
from lazyscan.parquet.schema import ColumnDescriptor
from lazyscan.parquet.statistics import decode_column_index
from lazyscan.parquet.thrift import ThriftError

_HEADER_WINDOW = 256  # first read of a page header while walking; grows 4x until it parses
_MAX_HEADER = 16 * 1024 * 1024
#: What one GET on an object store costs, in bytes of transfer: S3 answers a request in some tens
#: of milliseconds before the first byte and then sends on the order of 100 MB/s per connection,
#: so a request costs about what 1-8 MB of transfer does. The low end is taken: a chunk read whole
#: to walk its page headers never costs more than the header GETs it replaces.
REQUEST_COST_BYTES = 1024 * 1024
#: The largest column chunk read whole to walk its page headers on an object store (the upper end
#: of that range): beyond it the walk reads header by header, so a scan that needs a page or two
#: of a big chunk does not fetch all of it.
WHOLE_WALK_MAX = 8 * 1024 * 1024
#: The page size parquet-mr and Arrow write by default (uncompressed): estimates how many
#: headers a walk reads where the footer does not count a chunk's pages.
_TYPICAL_PAGE = 1024 * 1024
#: one walk of a chunk's page headers at a time: threads wanting the same layout wait for it
#: (striped by key, so walks of other chunks rarely wait)
_WALK_LOCKS = tuple(threading.Lock() for _ in range(64))
_KEEP_LOCK = threading.Lock()
#: prefetches of whole chunks merge only ranges that touch (a gap may hold bytes read already)
_TOUCHING = ReadOptions(coalesce_gap=0)


@dataclass(frozen=True)
class PageInfo:
    """A data page: file offset of its header, total size (header + body), rows it holds."""

    offset: int
    size: int
    first_row: int
    num_rows: int


@dataclass(frozen=True)
class ChunkLayout:
    dictionary: tuple[int, int] | None  # (offset, size) of the dictionary page
    pages: tuple[PageInfo, ...]
    from_offset_index: bool
    #: the offset index entry of each page, when the index lists pages never written
    index_entries: tuple[int, ...] | None = None
    #: first row and end row of each page, as arrays (derived from ``pages``)
    page_starts: np.ndarray = field(init=False, repr=False, compare=False)
    page_ends: np.ndarray = field(init=False, repr=False, compare=False)
    #: file offset and size (header included) of each page, as arrays
    page_offsets: np.ndarray = field(init=False, repr=False, compare=False)
    page_sizes: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        table = np.array([(p.first_row, p.num_rows, p.offset, p.size) for p in self.pages], dtype=np.int64).reshape(-1, 4)
        starts = np.ascontiguousarray(table[:, 0])
        ends = starts + table[:, 1]
        arrays = {"page_starts": starts, "page_ends": ends, "page_offsets": np.ascontiguousarray(table[:, 2]), "page_sizes": np.ascontiguousarray(table[:, 3])}
        for name, array in arrays.items():
            array.flags.writeable = False
            object.__setattr__(self, name, array)


class IndexMismatch(CorruptFileError):
    """A page located by the chunk's offset index is not what the index says (the caller reads
    the chunk again from its page headers)."""


def page_rows(header: PageHeader) -> int:
    """The rows a data page holds (a v1 page's values: a flat column has one per row)."""
    if header.data_page_header_v2 is not None:
        return header.data_page_header_v2.num_rows
    return header.num_values


def index_layout(
    locs: Sequence[PageLocation], start: int, end: int, num_rows: int, file_size: int, data_pages: int | None
) -> ChunkLayout | None:
    """The layout of a chunk at ``[start, end)`` as its offset index ``locs`` gives it, or None
    when the index does not add up (the caller then walks the page headers).

    Entries of pages never written (Impala) are left out. A page extends to where the next one
    starts, the last one to the chunk's end: the sizes recorded are only checked not to reach
    into the next page, since parquet-go recorded them without the page header (a reader of a
    page checks its header against what was fetched). ``data_pages``: how many data pages the
    chunk's encoding statistics count, if they do (an index that lists fewer misses some)."""
    entries = [i for i, loc in enumerate(locs) if not loc.unwritten]
    kept = [locs[i] for i in entries]
    if not kept or kept[0].first_row_index != 0 or kept[0].offset < start:
        return None
    if data_pages is not None and data_pages not in (len(kept), len(locs)):  # Impala counts unwritten pages too
        return None
    last = kept[-1]
    last_end = max(end, last.offset + last.compressed_page_size)
    if last_end > file_size:
        last_end = last.offset + last.compressed_page_size
    if last_end > file_size or last.offset >= end or last.first_row_index > num_rows:
        return None
    pages = []
    for i, loc in enumerate(kept):
        nxt = kept[i + 1] if i + 1 < len(kept) else None
        page_end = last_end if nxt is None else nxt.offset
        next_row = num_rows if nxt is None else nxt.first_row_index
        if loc.compressed_page_size <= 0 or loc.offset + loc.compressed_page_size > page_end or next_row < loc.first_row_index:
            return None
        pages.append(PageInfo(loc.offset, page_end - loc.offset, loc.first_row_index, next_row - loc.first_row_index))
    first = kept[0].offset
    dictionary = (start, first - start) if first > start else None
    return ChunkLayout(dictionary, tuple(pages), True, None if len(kept) == len(locs) else tuple(entries))


class PageLayouts:
    """The page layouts of the column chunks of one open file (cached per footer)."""

    def __init__(self, footer: Footer) -> None:
        self.footer = footer
        self.source: Source = footer.source
        self.path = footer.path

    def page_statistics(self, row_group: int, column: int | str) -> tuple[list[ColumnStats], ChunkLayout] | None:
        """Per-page statistics from the ColumnIndex with the page layout, or None."""
        desc = self.footer.column(column)
        key = (self.footer.token, row_group, desc.index)
        cached = caches.PAGE_STATISTICS.get(key)
        if cached is not None:
            return cached if cached is not caches.NONE_FOUND else None  # type: ignore[no-any-return]
        ci = self.footer.column_index(row_group, column)
        layout = self.page_layout(row_group, column) if ci is not None else None
        if ci is not None and layout is not None and layout.index_entries is not None:
            entries = layout.index_entries
            if len(ci.null_pages) != len(layout.pages) and len(ci.null_pages) > entries[-1]:
                ci = ci.select(entries)  # it lists the pages never written, as the offset index does
        if ci is None or layout is None or len(layout.pages) != len(ci.null_pages) or caches.DISTRUSTED.get(key) is not None:
            # no index, or one whose pages are not the chunk's: no page-level pruning
            caches.PAGE_STATISTICS.put(key, caches.NONE_FOUND)
            return None
        _, _, md = self.footer.column_chunk(row_group, column)
        stats = decode_column_index(
            desc, ci, [p.num_rows for p in layout.pages], self.footer.type_defined_order(desc), chunk=md,
            footer=self.footer.metadata, chunk_null_count=self.footer.statistics(row_group, column).null_count,
        )
        result = (stats, layout)
        caches.PAGE_STATISTICS.put(key, result)
        return result

    def data_page_count(self, row_group: int, column: int | str) -> int:
        """How many data pages a column chunk holds: from its encoding statistics when the
        writer kept them, else from its page layout (counted once per footer)."""
        desc = self.footer.column(column)
        counts = self.footer.data_page_counts()
        if not 0 <= row_group < self.footer.num_row_groups:
            raise IndexError(f"row group {row_group} out of range (file has {self.footer.num_row_groups})")
        n = int(counts[row_group, desc.index])
        if n < 0:
            n = len(self.page_layout(row_group, desc.index).pages)
            counts[row_group, desc.index] = n
        return n

    def page_layout(self, row_group: int, column: int | str) -> ChunkLayout:
        """Where the pages of a column chunk are: OffsetIndex, else a walk over page headers."""
        desc, _chunk, md = self.footer.column_chunk(row_group, column)
        return self.layout(row_group, desc, md)

    def layout(self, row_group: int, desc: ColumnDescriptor, md: ColumnMetaData) -> ChunkLayout:
        """:meth:`page_layout` of a chunk already looked up in the footer."""
        key = (self.footer.token, row_group, desc.index)
        cached = caches.LAYOUTS.get(key)
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        where = {"row_group": row_group, "column": desc.name}
        num_rows = self.footer.metadata.row_groups[row_group].num_rows
        start, total = self.footer.chunk_range_of(md)
        layout = None
        if desc.flat and caches.DISTRUSTED.get(key) is None:
            oi = self.footer.offset_index(row_group, desc.index)
            if oi is not None and oi.page_locations:
                data_pages = int(self.footer.data_page_counts()[row_group, desc.index])
                layout = index_layout(
                    oi.page_locations, start, start + total, num_rows, self.source.size, data_pages if data_pages >= 0 else None
                )
        if layout is None:
            # one walk per chunk: a thread wanting a layout being walked waits for it
            with _WALK_LOCKS[hash(key) % len(_WALK_LOCKS)]:
                cached = caches.LAYOUTS.get(key)
                if cached is not None:
                    return cached  # type: ignore[no-any-return]
                whole = self._whole_walk(row_group, desc, md, total)
                layout = self._walk_pages(start, total, num_rows, where, whole, self._known_dictionary(row_group, desc))
                caches.LAYOUTS.put(key, layout)
            return layout
        caches.LAYOUTS.put(key, layout)
        return layout

    def distrust_offset_index(self, row_group: int, desc: ColumnDescriptor, md: ColumnMetaData) -> ChunkLayout:
        """The chunk's layout from its page headers, after a page its offset index located did
        not match what the index says: that chunk's index is not used again (not for planning,
        nor its column index for pruning, whose entries follow the offset index's pages)."""
        key = (self.footer.token, row_group, desc.index)
        caches.DISTRUSTED.put(key, True)
        caches.LAYOUTS.drop(key)
        caches.PAGE_STATISTICS.put(key, caches.NONE_FOUND)
        caches.next_layout_generation()
        return self.layout(row_group, desc, md)

    def _walks_headers(self, row_group: int, desc: ColumnDescriptor) -> bool:
        """Whether the chunk's layout is not known yet and will come from its page headers (no
        offset index to take it from)."""
        key = (self.footer.token, row_group, desc.index)
        if caches.LAYOUTS.get(key) is not None:
            return False
        chunk = self.footer.metadata.row_groups[row_group].columns[desc.index]
        has_index = chunk.offset_index_offset is not None and bool(chunk.offset_index_length)
        return not (desc.flat and has_index and caches.DISTRUSTED.get(key) is None)

    def _page_headers(self, row_group: int, desc: ColumnDescriptor, md: ColumnMetaData) -> int:
        """How many page headers a walk of the chunk reads: its data pages as the footer's
        encoding statistics count them (else as many as the usual page size makes of its
        uncompressed size), plus the dictionary page."""
        pages = int(self.footer.data_page_counts()[row_group, desc.index])
        if pages < 0:
            pages = max(1, -(-md.total_uncompressed_size // _TYPICAL_PAGE))
        return pages + (1 if md.chunk_start < md.data_page_offset else 0)

    def _whole_walk(self, row_group: int, desc: ColumnDescriptor, md: ColumnMetaData, total: int) -> bool:
        """Whether to walk the chunk's page headers from one read of the whole chunk: on an
        object store, where that read costs less than the header GETs it replaces (its bytes
        then serve the page reads that follow)."""
        if not self.source.remote or total > WHOLE_WALK_MAX:
            return False
        return total <= self._page_headers(row_group, desc, md) * REQUEST_COST_BYTES

    def _known_dictionary(self, row_group: int, desc: ColumnDescriptor) -> tuple[int, int] | None:
        """The chunk's dictionary page where its first header was read already (then a walk
        starts after it, and a whole read of the chunk leaves out the bytes read)."""
        found = caches.DICTIONARY_AT.get((self.footer.token, row_group, desc.index))
        return None if found is None or found is caches.NONE_FOUND else found  # type: ignore[no-any-return]

    def _keep_fetched(self) -> None:
        """Have the source keep what is prefetched (the read-ahead blocks a scan turns on for
        object stores), for walks outside a scan too; once per source, whichever thread asks."""
        with _KEEP_LOCK:
            self.source.enable_prefetch()

    def _chunk_bytes(self, start: int, total: int) -> np.ndarray:
        """The bytes ``[start, start + total)`` from one request, left with the source's
        read-ahead blocks so that the page reads after the walk do not fetch them again."""
        self._keep_fetched()
        self.source.prefetch([(start, total)], _TOUCHING)
        return np.frombuffer(self.source.read_at(start, total), np.uint8)

    def prefetch_walks(self, row_group: int, descs: Sequence[ColumnDescriptor]) -> None:
        """Before reading ``descs`` in a row group on an object store: fetch in one go (chunks
        side by side in one request) every chunk whose page headers will be walked from a
        whole read, so that the walks of several columns do not make a request each."""
        if not self.source.remote:
            return
        ranges = []
        for desc in descs:
            if not self._walks_headers(row_group, desc):
                continue
            _, _chunk, md = self.footer.column_chunk(row_group, desc.index)
            start, total = self.footer.chunk_range_of(md)
            if total > 0 and start + total <= self.source.size and self._whole_walk(row_group, desc, md, total):
                known = self._known_dictionary(row_group, desc)
                skip = known[1] if known is not None and known[0] == start and known[1] < total else 0
                ranges.append((start + skip, total - skip))
        if ranges:
            self._keep_fetched()
            self.source.prefetch(ranges, _TOUCHING)

    def _walk_pages(
        self, start: int, total: int, num_rows: int, where: dict[str, Any], whole: bool = False,
        dictionary: tuple[int, int] | None = None,
    ) -> ChunkLayout:
        """The chunk's layout from its page headers, read one at a time or (``whole``) from one
        read of the chunk; after ``dictionary``, the dictionary page found at its start already."""
        end = start + total
        if end > self.source.size:
            raise self.footer.error(CorruptFileError, "column chunk extends past the end of the file", **where)
        pos = start
        index = 0
        if dictionary is not None and dictionary[0] == start and 0 < dictionary[1] < total:
            pos += dictionary[1]
            index = 1
        else:
            dictionary = None
        chunk = self._chunk_bytes(pos, end - pos) if whole else None
        chunk_start = pos
        pages: list[PageInfo] = []
        row = 0
        while pos < end and row < num_rows:
            header = self.read_page_header(pos, end, where, index, chunk, chunk_start)
            size = header.header_size + header.compressed_page_size
            if pos + size > end:
                raise self.footer.error(CorruptFileError, "page extends past its column chunk", page=index, **where)
            if header.type == PageType.DICTIONARY_PAGE:
                if pages or dictionary is not None:
                    raise self.footer.error(CorruptFileError, "dictionary page after data pages", page=index, **where)
                dictionary = (pos, size)
            elif header.type in (PageType.DATA_PAGE, PageType.DATA_PAGE_V2):
                rows = page_rows(header)
                pages.append(PageInfo(pos, size, row, rows))
                row += rows
            pos += size
            index += 1
        if row != num_rows:
            raise self.footer.error(
                CorruptFileError, f"pages hold {row} rows, the row group has {num_rows}", **where
            )
        return ChunkLayout(dictionary, tuple(pages), False)

    def read_page_header(
        self, pos: int, end: int, where: dict[str, Any], index: int, chunk: np.ndarray | None = None, chunk_start: int = 0
    ) -> PageHeader:
        """The page header at ``pos`` (its page ends by ``end``): parsed from ``chunk`` (the
        bytes from ``chunk_start``) when given, else read with a window growing until it parses."""
        if chunk is not None:
            at = pos - chunk_start
            if at >= len(chunk):
                raise self.footer.error(CorruptFileError, "file ends inside the column chunk", page=index, **where)
            try:
                return parse_page_header(chunk, at, min(len(chunk), end - chunk_start))
            except ThriftError as e:
                raise self.footer.error(CorruptFileError, f"corrupt page header: {e}", page=index, **where) from None
        window = min(_HEADER_WINDOW, end - pos)
        while True:
            data = self.source.read_at(pos, window)
            try:
                return parse_page_header(np.frombuffer(data, np.uint8), 0, len(data))
            except ThriftError as e:
                if window < end - pos and window < _MAX_HEADER:
                    window = min(window * 4, end - pos)
                    continue
                raise self.footer.error(CorruptFileError, f"corrupt page header: {e}", page=index, **where) from None

    def dictionary_location(
        self, row_group: int, desc: ColumnDescriptor, md: ColumnMetaData
    ) -> tuple[tuple[int, int] | None, bool]:
        """``(offset, size)`` of the chunk's dictionary page (None without one), and whether an
        offset index located it. On an object store a chunk without a usable offset index is
        not walked for this: its first page header tells (a read of the dictionary alone may
        rule the row group out, leaving the rest of the chunk unread)."""
        if not self.source.remote or not self._walks_headers(row_group, desc):
            layout = self.layout(row_group, desc, md)
            return layout.dictionary, layout.from_offset_index
        key = (self.footer.token, row_group, desc.index)
        found = caches.DICTIONARY_AT.get(key)
        if found is None:
            found = self._first_page_dictionary(row_group, desc, md)
            caches.DICTIONARY_AT.put(key, caches.NONE_FOUND if found is None else found)
        return (None if found is caches.NONE_FOUND else found), False

    def _first_page_dictionary(self, row_group: int, desc: ColumnDescriptor, md: ColumnMetaData) -> tuple[int, int] | None:
        """The chunk's dictionary page from its first page header, fetched with as much of the
        chunk as the footer says the dictionary takes (one request for header and page)."""
        where = {"row_group": row_group, "column": desc.name}
        start, total = self.footer.chunk_range_of(md)
        end = start + total
        if end > self.source.size:
            raise self.footer.error(CorruptFileError, "column chunk extends past the end of the file", **where)
        if total <= 0:
            return None
        claimed = md.data_page_offset - start
        header = None
        if 0 < claimed <= min(total, WHOLE_WALK_MAX):
            # header and page in one request, and no byte of the data pages after them
            self._keep_fetched()
            self.source.prefetch([(start, claimed)], _TOUCHING)
            with contextlib.suppress(CorruptFileError):
                header = self.read_page_header(start, start + claimed, where, 0)
        if header is None:  # the footer's offsets are off: the header alone says
            header = self.read_page_header(start, end, where, 0)
        if header.type != PageType.DICTIONARY_PAGE:
            return None
        size = header.header_size + header.compressed_page_size
        if size > total:
            raise self.footer.error(CorruptFileError, "page extends past its column chunk", page=0, **where)
        return start, size

    def read_ahead_range(self, row_group: int, column: int | str, dictionary_only: bool) -> tuple[int, int]:
        """The bytes of a chunk worth fetching ahead to read it as a filter column, known
        without a request: its dictionary page where ``dictionary_only`` and every data page
        is dictionary encoded (the dictionary may rule the row group out), else the chunk."""
        desc, _chunk, md = self.footer.column_chunk(row_group, column)
        start, total = self.footer.chunk_range_of(md)
        if not (dictionary_only and self.footer.is_fully_dictionary_encoded(row_group, desc.index)):
            return start, total
        key = (self.footer.token, row_group, desc.index)
        layout = caches.LAYOUTS.get(key)
        if layout is not None:
            return layout.dictionary or (start, total)  # type: ignore[no-any-return]
        found = caches.DICTIONARY_AT.get(key)
        if found is not None:
            return (start, total) if found is caches.NONE_FOUND else found  # type: ignore[no-any-return]
        # where the footer says the data pages start (the read of the first header checks it)
        claimed = md.data_page_offset - start
        return (start, claimed) if 0 < claimed <= total else (start, total)

    def first_data_page(
        self, row_group: int, desc: ColumnDescriptor, md: ColumnMetaData, start: int, total: int
    ) -> int | None:
        """Where the data pages of the chunk at ``[start, start + total)`` begin, when it starts
        with its dictionary page (a read with the dictionary decoded fetches from there)."""
        location, _ = self.dictionary_location(row_group, desc, md)
        if location is None or location[0] != start:
            return None
        first = start + location[1]
        return first if 0 < first - start < total else None

    def checked_layout(self, row_group: int, desc: ColumnDescriptor, md: ColumnMetaData) -> ChunkLayout:
        """The chunk's page layout, once its codec is known to be readable."""
        if md.codec != 0:
            codecs.check_codec(md.codec)
        return self.layout(row_group, desc, md)

    def page_at(self, row_group: int, offset: int) -> tuple[str | None, int | None]:
        """The column whose chunk holds the page at file offset ``offset`` and that page's
        number in the chunk (None where the chunk's layout does not list it)."""
        best: tuple[int, ColumnDescriptor, ColumnMetaData] | None = None
        for desc, chunk in zip(self.footer.schema.columns, self.footer.metadata.row_groups[row_group].columns):
            md = chunk.meta_data
            if md is None:
                continue
            start, total = self.footer.chunk_range_of(md)
            if start <= offset < start + total and (best is None or start > best[0]):
                best = (start, desc, md)
        if best is None:
            return None, None
        _, desc, md = best
        try:
            layout = self.layout(row_group, desc, md)
        except (LazyScanError, ValueError):
            return desc.name, None
        if layout.dictionary is not None and layout.dictionary[0] == offset:
            return desc.name, 0
        i = int(np.searchsorted(layout.page_offsets, offset))
        if i < len(layout.pages) and layout.pages[i].offset == offset:
            return desc.name, i + (layout.dictionary is not None)
        return desc.name, None

