"""``ParquetFile``: metadata access and row-selective column reads of one Parquet file.

The class is a facade over the parts of an open file, each in a module of its own:

- :class:`~lazyscan.parquet.footer.Footer`: the footer (cached per process), column chunks,
  statistics, page indexes and Bloom filters;
- :class:`~lazyscan.parquet.layout.PageLayouts`: where each chunk's pages and dictionary are;
- :class:`~lazyscan.parquet.chunk_reader.ChunkReader`: column reads, which choose a route
  (every row, few selected rows, any selection, nested) and fetch through
  :class:`~lazyscan.parquet.fetch.Fetcher`.

Errors name the file, row group, column and page.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lazyscan.format.counters import ReadCounters
from lazyscan.format.options import ReaderOptions
from lazyscan.format.selection import RowRanges
from lazyscan.format.statistics import ColumnStats
from lazyscan.io import ReadOptions, Source, open_source
from lazyscan.parquet.bloom import BloomFilter
from lazyscan.parquet.caches import clear_caches
from lazyscan.parquet.chunk_reader import ChunkReader, as_ranges
from lazyscan.parquet.convert import Assembled
from lazyscan.parquet.fetch import OpenFile
from lazyscan.parquet.footer import Footer, FooterSummary
from lazyscan.parquet.layout import ChunkLayout, PageLayouts
from lazyscan.parquet.match import BytesMatcher
from lazyscan.parquet.metadata import ColumnChunk, ColumnIndex, ColumnMetaData, OffsetIndex
from lazyscan.parquet.pages import PageCache
from lazyscan.parquet.schema import ColumnDescriptor

#: ``clear_caches`` is named here too, where callers have long found it
__all__ = ["PageCache", "ParquetFile", "clear_caches"]


class ParquetFile:
    """One Parquet file: metadata, page index, Bloom filters and column reads.

    ``source`` is a path (local, ``file://``, or a URI pyarrow understands), a path on
    ``filesystem`` (pyarrow or fsspec), or an open :class:`lazyscan.io.Source`.
    """

    def __init__(
        self, source: Any, filesystem: Any = None, *, options: ReaderOptions | None = None
    ) -> None:
        options = options or ReaderOptions()
        self.source: Source = open_source(source, filesystem, retry=options.retry)
        self.path = self.source.path
        self.counters = ReadCounters()
        self._file = OpenFile(self.source, self.path, options, self.counters)
        self._footer = Footer(self.source)
        self.metadata = self._footer.metadata
        self.schema = self._footer.schema
        self._layouts = PageLayouts(self._footer)
        self._reader = ChunkReader(self._file, self._footer, self._layouts)

    @property
    def options(self) -> ReaderOptions:
        """The reader options; a caller may replace them between reads."""
        return self._file.options

    @options.setter
    def options(self, options: ReaderOptions) -> None:
        self._file.options = options

    # ---- footer and metadata -------------------------------------------------------------

    @property
    def footer_digest(self) -> bytes:
        """A digest (BLAKE2b, 16 bytes) of the footer as read: the same for every open of one
        version of the file, so a plan can pin the footer it was made from and a later open
        compare (with :attr:`Source.identity <lazyscan.io.Source.identity>`). Where the
        identity holds an ETag or version id, which name the object's whole content, and the
        footer is longer than the tail read, it is the digest of the tail read (the last 64
        KiB), not of the whole footer."""
        return self._footer.digest

    @property
    def num_row_groups(self) -> int:
        return self._footer.num_row_groups

    @property
    def num_rows(self) -> int:
        return self._footer.num_rows

    @property
    def arrow_schema(self) -> pa.Schema:
        """Arrow schema of the file's top-level fields."""
        return self._reader.nested.arrow_schema

    @property
    def summary(self) -> FooterSummary:
        """The footer's row groups as arrays (built once per footer and process)."""
        return self._footer.summary

    def column(self, column: int | str) -> ColumnDescriptor:
        """A leaf column by index or dotted name."""
        return self._footer.column(column)

    def column_chunk(self, row_group: int, column: int | str) -> tuple[ColumnDescriptor, ColumnChunk, ColumnMetaData]:
        """A leaf column's chunk of a row group with its metadata, checked to be readable."""
        return self._footer.column_chunk(row_group, column)

    def statistics(self, row_group: int, column: int | str) -> ColumnStats:
        """Row-group statistics of a leaf column, in the Arrow storage domain."""
        return self._footer.statistics(row_group, column)

    def is_fully_dictionary_encoded(self, row_group: int, column: int | str) -> bool:
        """True when every data page of the chunk is dictionary encoded (from encoding stats,
        else from the chunk's encodings list)."""
        return self._footer.is_fully_dictionary_encoded(row_group, column)

    def column_index(self, row_group: int, column: int | str) -> ColumnIndex | None:
        """The chunk's ColumnIndex (page min/max, null pages), or None when absent."""
        return self._footer.column_index(row_group, column)

    def offset_index(self, row_group: int, column: int | str) -> OffsetIndex | None:
        """The chunk's OffsetIndex (page locations), or None when absent."""
        return self._footer.offset_index(row_group, column)

    def bloom_filter(self, row_group: int, column: int | str) -> BloomFilter | None:
        """The chunk's split-block Bloom filter, or None when absent."""
        return self._footer.bloom_filter(row_group, column)

    def chunk_range(self, row_group: int, column: int | str) -> tuple[int, int]:
        """``(offset, length)`` of a column chunk's bytes in the file."""
        return self._footer.chunk_range(row_group, column)

    def data_pages_per_row_group(self, columns: np.ndarray) -> np.ndarray:
        """The data pages of the leaf columns ``columns`` in each row group, summed; -1 for a
        row group where a chunk's count is not in the footer (:meth:`data_page_count` counts it)."""
        return self._footer.data_pages_per_row_group(columns)

    # ---- pages ---------------------------------------------------------------------------

    def data_page_count(self, row_group: int, column: int | str) -> int:
        """How many data pages a column chunk holds: from its encoding statistics when the
        writer kept them, else from its page layout (counted once per footer)."""
        return self._layouts.data_page_count(row_group, column)

    def page_layout(self, row_group: int, column: int | str) -> ChunkLayout:
        """Where the pages of a column chunk are: OffsetIndex, else a walk over page headers."""
        return self._layouts.page_layout(row_group, column)

    def page_statistics(self, row_group: int, column: int | str) -> tuple[list[ColumnStats], ChunkLayout] | None:
        """Per-page statistics from the ColumnIndex with the page layout, or None."""
        return self._layouts.page_statistics(row_group, column)

    def read_ahead_range(self, row_group: int, column: int | str, dictionary_only: bool) -> tuple[int, int]:
        """The bytes of a chunk worth fetching ahead to read it as a filter column, known
        without a request: its dictionary page where ``dictionary_only`` and every data page
        is dictionary encoded (the dictionary may rule the row group out), else the chunk."""
        return self._layouts.read_ahead_range(row_group, column, dictionary_only)

    # ---- reading -------------------------------------------------------------------------

    @property
    def read_options(self) -> ReadOptions:
        """How this file's reads coalesce ranges: the reader option, else the source's default."""
        return self._reader.fetcher.read_options

    def source_default_read_options(self) -> ReadOptions:
        """How reads of this file's source coalesce ranges unless the reader options say."""
        return self.source.default_read

    def read_dictionary(
        self, row_group: int, column: int | str, counters: ReadCounters | None = None, cache: PageCache | None = None
    ) -> pa.Array | None:
        """The chunk's dictionary as an Arrow array of the column type, or None if it has none.
        With a ``cache``, the decoded dictionary is kept there for later reads of the chunk."""
        return self._reader.read_dictionary(row_group, column, counters, cache)

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
        return self._reader.read_column(row_group, column, rows, counters, cache)

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
        return self._reader.read_columns(row_group, columns, rows, counters, cache)

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
        return self._reader.read_assembled(row_group, column, rows, counters, matcher, cache, values)

    def to_arrow(
        self, row_group: int, desc: ColumnDescriptor, chunk: Assembled, counters: ReadCounters | None = None
    ) -> pa.Array:
        """Convert an assembled chunk of a flat column to its Arrow array."""
        return self._reader.pages.to_arrow(row_group, desc, chunk, self._file.counters_or_own(counters))

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
        return self._reader.dictionary_rows(row_group, column, entry_passes, null_passes, counters, cache)

    def read_row_group(
        self, row_group: int, columns: Sequence[str] | None = None, rows: RowRanges | np.ndarray | None = None
    ) -> pa.Table:
        """Read top-level columns of a row group (all rows or a selection) as a table."""
        schema = self.arrow_schema
        names = list(columns) if columns is not None else schema.names
        arrays = []
        fields = []
        for name in names:
            idx = schema.get_field_index(name)
            if idx < 0:
                raise KeyError(f"no column {name!r} in {self.path!r}")
            leaves = self.schema.field_leaves[idx]
            if leaves:
                leaf = self.schema.columns[leaves[0]]
                arrays.append(self.read_column(row_group, leaf.index if leaf.flat else leaf.name, rows))
            else:
                # a group without leaves stores nothing: every value is NULL
                arrays.append(pa.nulls(self._selection_size(row_group, rows), schema.field(idx).type))
            fields.append(schema.field(idx))
        if not arrays:
            n = self._selection_size(row_group, rows)
            return pa.table({}).append_column("_", pa.nulls(n)).drop_columns(["_"]) if n else pa.table({})
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))

    def _selection_size(self, row_group: int, rows: RowRanges | np.ndarray | None) -> int:
        num_rows = self.metadata.row_groups[row_group].num_rows
        sel = as_ranges(rows, num_rows)
        return num_rows if sel is None else sel.row_count

    def __repr__(self) -> str:
        return f"ParquetFile({self.path!r}, rows={self.num_rows}, row_groups={self.num_row_groups})"

    def close(self) -> None:
        self.source.close()

    def __enter__(self) -> ParquetFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
