"""The route for selections of few rows (at most :data:`.selected_rows.MAX_DENSITY` of a row
group): the flat columns of a row group read together in a few kernel calls
(:mod:`.selected_rows`), a column it does not read handed to the general route
(:mod:`.selected_pages`).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lazyscan.errors import FileError, LazyScanError
from lazyscan.format.counters import ReadCounters
from lazyscan.format.selection import RowRanges
from lazyscan.parquet import caches
from lazyscan.parquet import selected_rows as R
from lazyscan.parquet.fetch import FetchCheck, Fetcher, OpenFile, located
from lazyscan.parquet.footer import Footer
from lazyscan.parquet.layout import ChunkLayout, PageLayouts
from lazyscan.parquet.pages import PageCache
from lazyscan.parquet.schema import ColumnDescriptor


class SparseSelection:
    """Reads few selected rows of the flat column chunks of one open file."""

    def __init__(self, file: OpenFile, footer: Footer, layouts: PageLayouts, fetcher: Fetcher, shapes: R.Shapes) -> None:
        self.file = file
        self.footer = footer
        self.layouts = layouts
        self.fetcher = fetcher
        self.shapes = shapes

    def group(self, row_group: int, descs: list[ColumnDescriptor]) -> R.Group | None:
        """The columns of ``descs`` this route reads in this row group (cached per footer)."""
        key = (self.footer.token, row_group, tuple(d.index for d in descs), caches.layout_generation())
        cached = caches.GROUPS.get(key)
        if cached is not None:
            return None if cached is caches.NONE_FOUND else cached  # type: ignore[no-any-return]
        members, shapes, layouts, max_defs, codec_ids, mds = [], [], [], [], [], []
        for pos, desc in enumerate(descs):
            shape = self.shapes.of(desc)
            if shape is None:
                continue
            _, _chunk, md = self.footer.column_chunk(row_group, desc.index)
            try:
                layout = self.layouts.checked_layout(row_group, desc, md)
            except (LazyScanError, ValueError) as e:
                raise located(e, self.file.path, {"row_group": row_group, "column": desc.name}) from None
            members.append(pos)
            shapes.append(shape)
            layouts.append(layout)
            max_defs.append(desc.max_definition_level)
            codec_ids.append(md.codec)
            mds.append(md)
        g = R.group(members, shapes, layouts, max_defs, codec_ids, mds, self.footer.v2_always_compressed) if members else None
        caches.GROUPS.put(key, caches.NONE_FOUND if g is None else g)
        return g

    @staticmethod
    def cached_pages(cache: PageCache, layout: ChunkLayout) -> bool:
        """Whether ``cache`` holds the chunk's dictionary or some of its page bodies."""
        if layout.dictionary is not None and layout.dictionary[0] in cache.dictionaries:
            return True
        return bool(cache.bodies) and any(p.offset in cache.bodies for p in layout.pages)

    def read_one(
        self, row_group: int, desc: ColumnDescriptor, selection: RowRanges, counters: ReadCounters | None
    ) -> pa.Array | None:
        """The rows ``selection`` of one column on this route, with none of the bookkeeping of a
        read of several columns on two routes; None when the general route must read it (which
        then also reports whatever is wrong)."""
        group = self.group(row_group, [desc])
        if group is None:
            return None
        idx = selection.to_indices()
        try:
            gplan = R.plan(group, selection.starts, selection.ends, idx, None, self.file.source.size)
        except R.PlanError:
            return None
        return self.read_planned(row_group, group, gplan, idx, counters)

    def read_indices(
        self, row_group: int, desc: ColumnDescriptor, idx: np.ndarray, num_rows: int, counters: ReadCounters | None
    ) -> pa.Array | None:
        """:meth:`read_one` of the rows ``idx`` (read-only contiguous int64, as
        :func:`.chunk_reader.index_array` makes them), planned from the indices in one kernel call."""
        group = self.group(row_group, [desc])
        if group is None:
            return None
        try:
            gplan = R.plan_indices(group, idx, num_rows, self.file.source.size)
        except R.PlanError:
            return None
        return self.read_planned(row_group, group, gplan, idx, counters)

    def read_planned(
        self, row_group: int, group: R.Group, gplan: R.GroupPlan, idx: np.ndarray, counters: ReadCounters | None
    ) -> pa.Array | None:
        """Fetch the pages ``gplan`` needs and decode the one member of ``group`` from them."""
        c = self.file.counters_or_own(counters)
        try:
            buf, at = self.fetcher.fetch_into(gplan.ranges(), c, FetchCheck(row_group))  # type: ignore[arg-type]
        except FileError as e:
            raise e.at(file=self.file.path, row_group=row_group) from None
        return R.read_group(
            group, gplan, buf, np.array(at, np.int64), idx, c, self.file.options.max_page_size, self.file.options.partial_decompression
        )[0]
