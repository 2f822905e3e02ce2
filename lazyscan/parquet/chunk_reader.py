"""Reading column chunks of an open Parquet file: the one place that chooses a read route.

The routes, each a class of its own module:

- every row of a flat chunk: :class:`~lazyscan.parquet.whole_chunk.WholeChunk` (values, values
  looked up from their codes, byte matching, rows by dictionary entry);
- few selected rows (at most :data:`.selected_rows.MAX_DENSITY`) of flat chunks:
  :class:`~lazyscan.parquet.sparse_selection.SparseSelection`, which hands what it does not read to
- any other selection of a flat chunk: :class:`~lazyscan.parquet.selected_pages.SelectedPages`;
- nested columns: :class:`~lazyscan.parquet.nested.NestedColumns` (through pyarrow).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lazyscan.errors import (
    CorruptFileError,
    FileError,
    LazyScanError,
    OptionError,
    UnsupportedFeatureError,
)
from lazyscan.format.counters import ReadCounters
from lazyscan.format.selection import RowRanges
from lazyscan.parquet import codecs
from lazyscan.parquet import selected_rows as R
from lazyscan.parquet.convert import Assembled, empty_values, to_arrow
from lazyscan.parquet.fetch import FetchCheck, Fetcher, OpenFile, located
from lazyscan.parquet.footer import Footer
from lazyscan.parquet.layout import IndexMismatch, PageLayouts
from lazyscan.parquet.match import BytesMatcher
from lazyscan.parquet.nested import NestedColumns
from lazyscan.parquet.pages import PageCache, PageDecoder
from lazyscan.parquet.schema import ColumnDescriptor
from lazyscan.parquet.selected_pages import ChunkPlan, SelectedPages, SelectedRows
from lazyscan.parquet.sparse_selection import SparseSelection
from lazyscan.parquet.whole_chunk import WholeChunk


def index_array(rows: np.ndarray | Sequence[int]) -> np.ndarray:
    """Row indices as the kernels take them: a contiguous int64 array, read only (a view when
    the caller's array already is one, so the caller's flags stay as they were)."""
    idx = np.ascontiguousarray(rows, dtype=np.int64)
    if idx.ndim != 1:
        raise OptionError("row indices must be a 1-D array")
    if idx.flags.writeable:
        idx = idx.view()
        idx.flags.writeable = False
    return idx


def as_ranges(rows: RowRanges | np.ndarray | Sequence[int] | None, num_rows: int) -> RowRanges | None:
    """``rows`` (None, row indices or ranges) as ranges checked against a row group of
    ``num_rows`` rows."""
    if rows is None:
        return None
    if isinstance(rows, RowRanges):
        sel = rows
    else:
        # the selection lives for one read: it may keep (a read-only view of) the caller's indices
        checked = RowRanges.from_sorted_indices(index_array(rows), copy=False)
        if checked is None:
            raise OptionError("row indices must be sorted, distinct and non-negative")
        sel = checked
    if not sel.is_empty and (sel.starts[0] < 0 or sel.ends[-1] > num_rows):
        raise IndexError(f"row selection exceeds the row group's {num_rows} rows")
    return sel


class ChunkReader:
    """Reads the column chunks of one open file, choosing the route for each read."""

    def __init__(self, file: OpenFile, footer: Footer, layouts: PageLayouts) -> None:
        self.file = file
        self.footer = footer
        self.layouts = layouts
        self.fetcher = Fetcher(file, layouts)
        self.pages = PageDecoder(file, footer.v2_always_compressed)
        shapes = R.Shapes()
        self.shapes = shapes
        self.whole = WholeChunk(file, footer, layouts, self.fetcher, self.pages, shapes)
        self.selected = SelectedPages(file, layouts, self.fetcher, self.pages)
        self.sparse = SparseSelection(file, footer, layouts, self.fetcher, shapes)
        self.nested = NestedColumns(file, footer)

    def num_rows(self, row_group: int) -> int:
        """The rows of row group ``row_group``."""
        return self.footer.metadata.row_groups[row_group].num_rows

    def read_dictionary(
        self, row_group: int, column: int | str, counters: ReadCounters | None = None, cache: PageCache | None = None
    ) -> pa.Array | None:
        """The chunk's dictionary as an Arrow array of the column type, or None if it has none.
        With a ``cache``, the decoded dictionary is kept there for later reads of the chunk."""
        desc, _, md = self.footer.column_chunk(row_group, column)
        if not desc.flat:
            return None
        location, from_offset_index = self.layouts.dictionary_location(row_group, desc, md)
        if location is None:
            return None
        c = self.file.counters_or_own(counters)
        where: dict[str, Any] = {"row_group": row_group, "column": desc.name}
        off, size = location
        values = cache.dictionaries.get(off) if cache is not None else None
        if values is None:
            data = self.fetcher.fetch([(off, size)], c, FetchCheck(row_group, first_page=0))[0]
            try:
                values = self.pages.decode_dictionary(
                    np.frombuffer(data, np.uint8), 0, size, desc, md, c, cache, off, from_offset_index
                )
            except IndexMismatch:
                self.layouts.distrust_offset_index(row_group, desc, md)
                return self.read_dictionary(row_group, column, counters, cache)
            except FileError as e:
                raise e.at(file=self.file.path, page=0, **where) from None
        return to_arrow(desc, Assembled(len(values), None, values=values))

    def read_column(
        self,
        row_group: int,
        column: int | str,
        rows: RowRanges | np.ndarray | Sequence[int] | None = None,
        counters: ReadCounters | None = None,
        cache: PageCache | None = None,
    ) -> pa.Array:
        """Read a column of a row group: all rows, or the rows selected by ``rows``.

        ``rows`` is None, a sorted array of distinct row indices within the row group, or a
        :class:`RowRanges`. Values equal pyarrow's for the same rows, nulls included. Pages
        found in ``cache`` are not decompressed again.
        """
        desc = self.footer.column(column)
        if not desc.flat:
            num_rows = self.num_rows(row_group)
            return self.nested.read(row_group, desc, as_ranges(rows, num_rows))
        if rows is not None and self.shapes.of(desc) is not None:
            num_rows = self.num_rows(row_group)
            uncached = cache is None or not (cache.dictionaries or cache.bodies)
            if not isinstance(rows, RowRanges) and uncached:
                # row indices, the library's own form: checked by the planning kernel
                idx = index_array(rows)
                if 0 < len(idx) < num_rows and R.takes(len(idx), num_rows):
                    arr = self.sparse.read_indices(row_group, desc, idx, num_rows, counters)
                    if arr is not None:
                        return arr
            selection = as_ranges(rows, num_rows)
            if selection is not None and 0 < selection.row_count < num_rows and R.takes(selection.row_count, num_rows):
                if uncached:
                    arr = self.sparse.read_one(row_group, desc, selection, counters)
                    if arr is not None:
                        return arr
                return self._read_selection(row_group, [desc], selection, num_rows, counters, cache)[0]
            rows = selection
        chunk = self.read_assembled(row_group, column, rows, counters, cache=cache, values=True)
        return self.pages.to_arrow(row_group, desc, chunk, self.file.counters_or_own(counters))

    def read_assembled(
        self,
        row_group: int,
        column: int | str,
        rows: RowRanges | np.ndarray | Sequence[int] | None = None,
        counters: ReadCounters | None = None,
        matcher: BytesMatcher | None = None,
        cache: PageCache | None = None,
        values: bool = False,
    ) -> Assembled:
        """Decode a flat column's selected rows without building the Arrow array: when every
        page is dictionary encoded the result holds the codes and the dictionary, so predicates
        can be evaluated once per dictionary entry. With a ``matcher`` (byte-array columns) the
        values are a uint8 mask of matches instead, computed on the encoded pages; with a
        ``cache`` too, the pages holding a match are kept there for a later read. ``values``:
        the caller wants the values, not codes (a read of every row of a column without nulls
        then looks its codes up as it unpacks them)."""
        desc, _chunk, md = self.footer.column_chunk(row_group, column)
        if not desc.flat:
            raise UnsupportedFeatureError("nested columns are read with read_column", file=self.file.path, column=desc.name)
        num_rows = self.num_rows(row_group)
        selection = as_ranges(rows, num_rows)
        c = self.file.counters_or_own(counters)
        where: dict[str, Any] = {"row_group": row_group, "column": desc.name}
        try:
            if md.codec != 0:
                codecs.check_codec(md.codec)
            if selection is not None and selection.is_empty:
                return Assembled(0, None, values=empty_values(desc))
            if matcher is not None and desc.physical_type != 6:
                raise UnsupportedFeatureError("byte matching needs a BYTE_ARRAY column")
            if selection is not None and selection.row_count < num_rows:
                return self.selected.read(row_group, desc, md, selection, c, matcher, cache)
            if matcher is not None:
                return self.whole.match(row_group, desc, md, c, matcher, cache)
            if values:
                return self.whole.read_looked_up(row_group, desc, md, c, cache)
            return self.whole.read(row_group, desc, md, c, cache)
        except (LazyScanError, ValueError, IndexError, TypeError, OverflowError, MemoryError) as e:
            raise located(e, self.file.path, where) from (None if isinstance(e, LazyScanError) else e)

    def dictionary_rows(
        self,
        row_group: int,
        column: int | str,
        entry_passes: np.ndarray,
        null_passes: bool,
        counters: ReadCounters | None = None,
        cache: PageCache | None = None,
    ) -> tuple[np.ndarray, Assembled] | None:
        """The rows of a fully dictionary-encoded flat chunk whose dictionary entry passes
        (``entry_passes``, one flag per entry; NULL rows when ``null_passes``), and those rows as
        codes with the dictionary, read in two kernel calls. Needs the dictionary decoded into
        ``cache`` (:meth:`read_dictionary`); None when this route does not read the chunk (the
        general route then reads it, or says what is wrong)."""
        if cache is None:
            return None
        desc, _chunk, md = self.footer.column_chunk(row_group, column)
        return self.whole.dictionary_rows(row_group, desc, md, entry_passes, null_passes, self.file.counters_or_own(counters), cache)

    def read_columns(
        self,
        row_group: int,
        columns: Sequence[int | str],
        rows: RowRanges | np.ndarray | Sequence[int] | None = None,
        counters: ReadCounters | None = None,
        cache: PageCache | None = None,
    ) -> list[pa.Array]:
        """Read several columns of one row group for one row selection, as :meth:`read_column`
        would one by one, in one pass: the selection is converted once, the pages every column
        needs (dictionary pages included) are fetched in one coalesced request list, then each
        column is decoded from them."""
        num_rows = self.num_rows(row_group)
        selection = as_ranges(rows, num_rows)
        descs = [self.footer.column(col) for col in columns]
        if selection is None or selection.row_count == num_rows or selection.is_empty:
            return [self.read_column(row_group, d.index, selection, counters, cache) for d in descs]
        return self._read_selection(row_group, descs, selection, num_rows, counters, cache)

    def _read_selection(
        self, row_group: int, descs: list[ColumnDescriptor], selection: RowRanges, num_rows: int,
        counters: ReadCounters | None, cache: PageCache | None,
    ) -> list[pa.Array]:
        """:meth:`read_columns` of a selection of some but not all rows."""
        c = self.file.counters_or_own(counters)
        self.layouts.prefetch_walks(row_group, descs)
        # the selected-rows route decodes exactly the selected rows: its plans skip the merging
        exact_rows = SelectedRows(selection.starts, selection.ends, selection.to_indices(), None)
        group: R.Group | None = None
        gplan: R.GroupPlan | None = None
        ranges: list[Any] = []
        sparse_at: dict[int, int] = {}  # position in ``columns`` -> member of the group
        if R.takes(selection.row_count, num_rows):
            group = self.sparse.group(row_group, descs)
        if group is not None:
            status = np.zeros(len(group.members), np.int64)  # R.OK
            if cache is not None and (cache.dictionaries or cache.bodies):
                for k, layout in enumerate(group.layouts):
                    if self.sparse.cached_pages(cache, layout):
                        status[k] = R.GENERAL  # a predicate decoded some of it already: reuse that
            try:
                gplan = R.plan(group, exact_rows.starts, exact_rows.ends, exact_rows.idx, status, self.file.source.size)
            except R.PlanError as e:
                desc = descs[group.members[e.member]]
                err: Exception = e if e.reason == R.PLAN_INCONSISTENT else CorruptFileError(str(e))
                raise located(err, self.file.path, {"row_group": row_group, "column": desc.name}) from None
            ranges = gplan.ranges()
            sparse_at = {pos: k for k, (pos, st) in enumerate(zip(group.members, status.tolist())) if st == R.OK}
        sel_rows: SelectedRows | None = None
        plans: list[ChunkPlan | None] = [None] * len(descs)
        for pos, desc in enumerate(descs):
            if not desc.flat or pos in sparse_at:
                continue
            _, _chunk, md = self.footer.column_chunk(row_group, desc.index)
            try:
                if sel_rows is None:
                    sel_rows = self.selected.selected_rows(selection)
                plan = plans[pos] = self.selected.plan(row_group, desc, md, sel_rows, cache)
                self.fetcher.check_ranges(plan.ranges)
            except (LazyScanError, ValueError) as e:
                raise located(e, self.file.path, {"row_group": row_group, "column": desc.name}) from None
            ranges += plan.ranges
        try:
            buf, at_list = self.fetcher.fetch_into(ranges, c, FetchCheck(row_group)) if ranges else (np.empty(0, np.uint8), [])
        except FileError as e:
            raise e.at(file=self.file.path, row_group=row_group) from None
        out: list[pa.Array | None] = [None] * len(descs)
        n_sparse = 0
        if group is not None and gplan is not None and sparse_at:
            n_sparse = gplan.n_ranges
            at = np.array(at_list[:n_sparse], np.int64)
            arrays = R.read_group(
                group, gplan, buf, at, exact_rows.idx, c, self.file.options.max_page_size, self.file.options.partial_decompression
            )
            for pos, k in sparse_at.items():
                arr = arrays[k]
                if arr is None:
                    # the general route reads it, or says precisely what is wrong
                    md = group.mds[k]
                    exact_plan = self.selected.plan(row_group, descs[pos], md, exact_rows, None)
                    first = int(gplan.col_rows[k, 0])
                    arr = self.selected.read_planned(row_group, exact_plan, buf, at_list[first:], exact_rows, c, cache)
                out[pos] = arr
        at_general = at_list[n_sparse:]
        for pos, desc in enumerate(descs):
            if pos in sparse_at:
                continue
            planned = plans[pos]
            if planned is None:
                out[pos] = self.nested.read(row_group, desc, selection)
                continue
            assert sel_rows is not None
            out[pos] = self.selected.read_planned(row_group, planned, buf, at_general, sel_rows, c, cache)
            at_general = at_general[len(planned.ranges) :]
        return out  # type: ignore[return-value]
