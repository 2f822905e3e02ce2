"""The general route for a selection of a column chunk's rows: page by page.

The pages holding a selected row are found from the chunk's page layout (:func:`.kernels.plan_pages`)
and fetched with coalesced requests, with the dictionary page unless the page cache holds it
decoded; pages with no selected row are neither fetched nor decompressed. Inside a page only
the selected values are decoded (ranges closer than the materialization threshold are decoded as
one, the rows between them then dropped). Every flat shape and encoding is read here, and every
fault is reported here with its page: the selected-rows route hands what it does not read to
this one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from lazyscan.errors import CorruptFileError, FileError, LazyScanError
from lazyscan.format.counters import ReadCounters
from lazyscan.format.selection import RowRanges
from lazyscan.parquet import kernels as K
from lazyscan.parquet.convert import Assembled, assemble, empty_values
from lazyscan.parquet.decode import PageValues, Values
from lazyscan.parquet.fetch import FetchCheck, Fetcher, OpenFile, located
from lazyscan.parquet.layout import ChunkLayout, IndexMismatch, PageLayouts, page_rows
from lazyscan.parquet.match import BytesMatcher
from lazyscan.parquet.metadata import ColumnMetaData, PageType
from lazyscan.parquet.page_header import parse_page_header
from lazyscan.parquet.pages import PageCache, PageDecoder, match_dictionary
from lazyscan.parquet.schema import ColumnDescriptor
from lazyscan.parquet.thrift import ThriftError

_NO_BYTES = np.empty(0, np.uint8)


class SelectedRows(NamedTuple):
    """A row selection as the decoders take it: the ranges to decode (close ranges merged by the
    materialization threshold), their row indices, and the positions of the selected rows among
    them (None when nothing was merged)."""

    starts: np.ndarray
    ends: np.ndarray
    idx: np.ndarray
    positions: np.ndarray | None


class ChunkPlan(NamedTuple):
    """The pages of one column chunk a selective read decodes, and the byte ranges to fetch."""

    desc: ColumnDescriptor
    md: ColumnMetaData
    layout: ChunkLayout
    needed: list[int]
    los: list[int]
    his: list[int]
    dictionary: Values | None
    fetch_dictionary: bool
    ranges: list[tuple[int, int]]
    pages_skipped: int
    #: the needed pages held whole by the page cache (header and body): not fetched
    cached: frozenset[int]


class SelectedPages:
    """Reads selected rows of the flat column chunks of one open file, page by page."""

    def __init__(self, file: OpenFile, layouts: PageLayouts, fetcher: Fetcher, pages: PageDecoder) -> None:
        self.file = file
        self.layouts = layouts
        self.fetcher = fetcher
        self.pages = pages

    def plan(
        self, row_group: int, desc: ColumnDescriptor, md: ColumnMetaData, rows: SelectedRows, cache: PageCache | None
    ) -> ChunkPlan:
        """Which pages of a chunk hold selected rows, and the byte ranges to fetch for them
        (the dictionary page first, unless ``cache`` has it decoded already)."""
        layout = self.layouts.checked_layout(row_group, desc, md)
        npages = len(layout.pages)
        plan = np.empty((3, npages), np.int64)
        count = K.plan_pages(rows.starts, rows.ends, rows.idx, layout.page_starts, layout.page_ends, plan[0], plan[1], plan[2])
        if count < 0:
            raise ValueError("inconsistent page plan")
        needed, los, his = plan[:, :count].tolist()
        pages = layout.pages
        cached: frozenset[int] = frozenset()
        if cache is not None and cache.headers:
            cached = frozenset(i for i in needed if pages[i].offset in cache.headers)
        ranges = [(pages[i].offset, pages[i].size) for i in needed if i not in cached]
        dictionary = None
        if layout.dictionary is not None and cache is not None:
            dictionary = cache.dictionaries.get(layout.dictionary[0])
        fetch_dictionary = layout.dictionary is not None and dictionary is None
        if fetch_dictionary:
            assert layout.dictionary is not None
            ranges.insert(0, layout.dictionary)
        return ChunkPlan(desc, md, layout, needed, los, his, dictionary, fetch_dictionary, ranges, npages - count, cached)

    def decode(
        self,
        plan: ChunkPlan,
        views: Sequence[memoryview | np.ndarray],
        rows: SelectedRows,
        c: ReadCounters,
        matcher: BytesMatcher | None = None,
        cache: PageCache | None = None,
    ) -> Assembled:
        """Decode the selected rows of a chunk from the pages fetched for ``plan``."""
        desc, md, layout = plan.desc, plan.md, plan.layout
        # what does not match the page index comes from an offset index that located a page
        # wrongly when the layout is the index's: the caller reads the chunk's headers instead
        mismatch = IndexMismatch if layout.from_offset_index else CorruptFileError
        dictionary = plan.dictionary
        if plan.fetch_dictionary:
            assert layout.dictionary is not None
            dview = np.frombuffer(views[0], dtype=np.uint8)
            try:
                dictionary = self.pages.decode_dictionary(
                    dview, 0, len(dview), desc, md, c, cache, layout.dictionary[0], layout.from_offset_index
                )
            except FileError as e:
                raise e.at(page=0) from None
            views = views[1:]
        dict_mask = match_dictionary(matcher, dictionary)
        pages: list[PageValues] = []
        page_base = 1 if layout.dictionary is not None else 0
        idx = rows.idx
        los, his = plan.los, plan.his
        fetched = iter(views)
        for k, i in enumerate(plan.needed):
            info = layout.pages[i]
            sel = None if his[k] - los[k] == info.num_rows else idx[los[k] : his[k]] - info.first_row
            try:
                if i in plan.cached:
                    assert cache is not None
                    buf = _NO_BYTES
                    header = cache.headers[info.offset]
                else:
                    buf = np.frombuffer(next(fetched), dtype=np.uint8)
                    try:
                        header = parse_page_header(buf, 0, len(buf))
                    except ThriftError as e:
                        raise mismatch(f"corrupt page header: {e}") from None
                    if header.type not in (PageType.DATA_PAGE, PageType.DATA_PAGE_V2):
                        raise mismatch("page index points at a page that is not a data page")
                    if header.header_size + header.compressed_page_size > len(buf):
                        raise mismatch("page extends past its recorded size")
                    if page_rows(header) != info.num_rows:
                        raise mismatch(f"page holds {page_rows(header)} rows, the page index says {info.num_rows}")
                page = self.pages.decode_page(
                    header, buf, header.header_size, desc, md, sel, dictionary, c, matcher, dict_mask, cache, info.offset
                )
                if sel is None and page.num_rows != info.num_rows:
                    raise CorruptFileError(f"page holds {page.num_rows} rows, the page index says {info.num_rows}")
            except FileError as e:
                raise e.at(page=int(i) + page_base) from None
            pages.append(page)
        c.pages_fetched += len(pages)
        c.pages_skipped += plan.pages_skipped
        chunk = assemble(desc, pages, dictionary) if pages else Assembled(0, None, values=empty_values(desc))
        if rows.positions is not None:
            chunk = chunk.take(rows.positions)
        return chunk

    def selected_rows(self, selection: RowRanges) -> SelectedRows:
        """``selection`` as the decoders take it, ranges closer than the materialization
        threshold merged."""
        threshold = self.file.options.materialization_threshold
        decode_set = selection.merge_close(threshold) if threshold > 0 else selection
        positions = decode_set.positions_in(selection) if decode_set is not selection else None
        return SelectedRows(decode_set.starts, decode_set.ends, decode_set.to_indices(), positions)

    def read(
        self,
        row_group: int,
        desc: ColumnDescriptor,
        md: ColumnMetaData,
        selection: RowRanges,
        c: ReadCounters,
        matcher: BytesMatcher | None = None,
        cache: PageCache | None = None,
    ) -> Assembled:
        """The rows ``selection`` (some but not all) of a chunk, fetched and decoded."""
        rows = self.selected_rows(selection)
        plan = self.plan(row_group, desc, md, rows, cache)
        views = self.fetcher.fetch(plan.ranges, c, FetchCheck(row_group))
        try:
            return self.decode(plan, views, rows, c, matcher, cache)
        except IndexMismatch:
            self.layouts.distrust_offset_index(row_group, desc, md)
        return self.read(row_group, desc, md, selection, c, matcher, cache)

    def read_planned(
        self, row_group: int, plan: ChunkPlan, buf: np.ndarray, at: list[int], rows: SelectedRows, c: ReadCounters,
        cache: PageCache | None,
    ) -> pa.Array:
        """Decode a chunk whose planned ranges were fetched into ``buf`` (the ``i``-th at ``at[i]``)."""
        views = [buf[a : a + length] for a, (_, length) in zip(at, plan.ranges)]
        where = {"row_group": row_group, "column": plan.desc.name}
        try:
            try:
                chunk = self.decode(plan, views, rows, c, cache=cache)
            except IndexMismatch:
                self.layouts.distrust_offset_index(row_group, plan.desc, plan.md)
                plan = self.plan(row_group, plan.desc, plan.md, rows, cache)
                chunk = self.decode(plan, self.fetcher.fetch(plan.ranges, c, FetchCheck(row_group)), rows, c, cache=cache)
        except (LazyScanError, ValueError, IndexError, TypeError, OverflowError, MemoryError) as e:
            raise located(e, self.file.path, where) from (None if isinstance(e, LazyScanError) else e)
        return self.pages.to_arrow(row_group, plan.desc, chunk, c)
