"""A file as the scan reads it: units (Parquet row groups, ORC stripes) of columns, each with
statistics, maybe a Bloom filter and a dictionary, a finer index (Parquet pages, ORC's
10,000-row row groups) and reads for a row selection.

:class:`UnitFile` is the one interface the per-unit algorithm of :mod:`lazyscan.scan.scan`
calls; :class:`ParquetUnits` and :class:`OrcUnits` implement it. Accelerations only one format
has (Parquet's dictionary codes, equality on encoded pages, one pass over several payload
columns) are methods that return None where a format does not offer them, so the algorithm
asks instead of branching on the format. Columns are top-level field names.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lazyscan.errors import LazyScanError
from lazyscan.format.counters import ReadCounters
from lazyscan.format.options import ReaderOptions
from lazyscan.format.selection import RowRanges
from lazyscan.format.statistics import ColumnStats
from lazyscan.io.retry import RetryPolicy
from lazyscan.io.source import ReadOptions, Source, open_source
from lazyscan.parquet import PageCache, ParquetFile
from lazyscan.parquet.bloom import encode_plain, hash_bytes
from lazyscan.parquet.convert import Assembled
from lazyscan.parquet.match import BytesMatcher
from lazyscan.parquet.metadata import PhysicalType
from lazyscan.scan.dataset import FileSplit

#: formats a scan reads, by name
FORMATS = ("parquet", "orc")


class UnitFile:
    """One open file, read unit by unit."""

    path: str
    source: Source
    arrow_schema: pa.Schema

    # ---- layout -------------------------------------------------------------------------

    def num_units(self) -> int:
        raise NotImplementedError

    def unit_rows(self, unit: int) -> int:
        raise NotImplementedError

    def units_of_split(self, split: FileSplit) -> list[int]:
        """The units a byte-range split of the file owns (Spark's rule: midpoint inside)."""
        raise NotImplementedError

    @property
    def footer_digest(self) -> bytes:
        """A digest of the file's metadata as this open read it, equal for every open of one
        version of the file (a plan pins it: :class:`~lazyscan.scan.dataset.FileInfo`)."""
        raise NotImplementedError

    def units_bytes(self, units: Sequence[int]) -> int:
        """Stored bytes of ``units`` (the whole file when they are all of them)."""
        raise NotImplementedError

    def has(self, name: str) -> bool:
        return self.arrow_schema.get_field_index(name) >= 0

    def flat(self, name: str) -> bool:
        """Whether the column is read by this layer's own decoders (not nested)."""
        raise NotImplementedError

    def byte_array(self, name: str) -> bool:
        """Whether the column's values are variable-length bytes (strings, binary)."""
        if not self.has(name):
            return False
        t = self.arrow_schema.field(name).type
        return pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)

    def finer_units(self, unit: int, name: str) -> int:
        """Pages (Parquet) or row groups (ORC) of the column in the unit; 0 if unknown."""
        return 0

    def finer_units_of(self, unit: int, names: tuple[str, ...]) -> int:
        """:meth:`finer_units` summed over several columns."""
        return sum(self.finer_units(unit, n) for n in names)

    # ---- what may be in a unit ----------------------------------------------------------

    def statistics(self, unit: int, name: str) -> ColumnStats | None:
        raise NotImplementedError

    def might_contain(self, unit: int, name: str, values: list[Any], filters: dict[str, Any]) -> list[bool] | None:
        """Per value (storage domain of the column type), whether the unit's Bloom filter
        may hold it; None without a usable Bloom filter. ``filters`` is the caller's per-unit
        cache of the filters read (one unit is scanned by one thread)."""
        return None

    def dictionary(self, unit: int, name: str, counters: ReadCounters, cache: Any) -> pa.Array | None:
        """The column's dictionary in the unit when every value is dictionary encoded."""
        return None

    def finer_statistics(self, unit: int, name: str) -> tuple[list[ColumnStats | None], np.ndarray, np.ndarray] | None:
        """Statistics of the finer units with their first rows and row counts, or None."""
        return None

    def finer_might_contain(
        self, unit: int, name: str, values: list[Any], filters: dict[str, Any]
    ) -> list[list[bool]] | None:
        """Per finer unit (as :meth:`finer_statistics` lists them), per value, whether its
        Bloom filter may hold the value; None without Bloom filters at that level."""
        return None

    # ---- reads --------------------------------------------------------------------------

    def new_cache(self) -> Any:
        """A per-unit cache for decoded pages shared by the reads of one unit, or None."""
        return None

    def read(self, unit: int, name: str, rows: RowRanges | None, counters: ReadCounters, cache: Any) -> pa.Array:
        """Column ``name`` of the unit, for the selected rows (None: all)."""
        raise NotImplementedError

    def read_many(
        self, unit: int, names: list[str], rows: RowRanges, counters: ReadCounters, cache: Any
    ) -> list[pa.Array]:
        """Several payload columns for one selection (one pass where the format allows)."""
        return [self.read(unit, name, rows, counters, cache) for name in names]

    def codes(self, unit: int, name: str, rows: RowRanges, counters: ReadCounters, cache: Any) -> Assembled | None:
        """The selected rows as dictionary codes (``Assembled.codes``) or values; None when
        this format does not read columns as codes."""
        return None

    def codes_to_arrow(self, unit: int, name: str, chunk: Assembled, counters: ReadCounters) -> pa.Array:
        raise NotImplementedError

    def dictionary_rows(
        self, unit: int, name: str, entry_passes: np.ndarray, null_passes: bool, counters: ReadCounters, cache: Any
    ) -> tuple[np.ndarray, Assembled] | None:
        """All of the unit's rows whose dictionary entry passes (after :meth:`dictionary`), with
        those rows as codes; None when the format does not read them this way."""
        return None

    def match(
        self, unit: int, name: str, rows: RowRanges, counters: ReadCounters, matcher: BytesMatcher, cache: Any
    ) -> np.ndarray | None:
        """``=`` / ``IN`` of byte strings evaluated on the encoded values: a boolean mask of the
        selected rows; None when this format does not offer it."""
        return None

    def read_options(self) -> ReadOptions | None:
        """How this file's reads coalesce ranges (None: the source's defaults)."""
        return None

    def use_options(self, options: ReaderOptions) -> None:
        """Read with ``options`` from now on (a file opened before the scan's options applied)."""

    def read_ahead_ranges(self, unit: int, names: list[str], dictionary_only: bool) -> list[tuple[int, int]]:
        """Byte ranges worth fetching ahead for reading ``names`` of ``unit`` as filter
        columns (``dictionary_only``: where a chunk is all dictionary-encoded, its dictionary
        alone, since the dictionary may rule the unit out); empty when the format does not say."""
        return []

    def close(self) -> None:
        self.source.close()

    def __enter__(self) -> UnitFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ParquetUnits(UnitFile):
    """A Parquet file: units are row groups, finer units pages."""

    def __init__(self, path: Any, filesystem: Any = None, options: ReaderOptions | None = None) -> None:
        self.pf = ParquetFile(path, filesystem, options=options)
        self.path = self.pf.path
        self.source = self.pf.source
        self.arrow_schema = self.pf.arrow_schema
        leaves: dict[str, Any] = {}
        for c in self.pf.schema.columns:
            leaves.setdefault(self.arrow_schema.field(c.top_level_field).name, c)
        self.leaf_of = leaves  # top-level name -> its first leaf descriptor
        self._pages_of: dict[tuple[str, ...], np.ndarray] = {}

    def num_units(self) -> int:
        return self.pf.num_row_groups

    def unit_rows(self, unit: int) -> int:
        return self.pf.metadata.row_groups[unit].num_rows

    def units_of_split(self, split: FileSplit) -> list[int]:
        return self.pf.summary.row_groups_in(split.start, split.start + split.length)

    @property
    def footer_digest(self) -> bytes:
        return self.pf.footer_digest

    def units_bytes(self, units: Sequence[int]) -> int:
        if len(units) == self.pf.num_row_groups:
            return self.source.size
        return int(self.pf.summary.sizes[list(units)].sum())

    def has(self, name: str) -> bool:
        return name in self.leaf_of

    def flat(self, name: str) -> bool:
        d = self.leaf_of.get(name)
        return d is not None and d.flat

    def byte_array(self, name: str) -> bool:
        d = self.leaf_of.get(name)
        return d is not None and d.physical_type == PhysicalType.BYTE_ARRAY

    def finer_units(self, unit: int, name: str) -> int:
        # ParquetFile.data_page_count counts them once per footer
        try:
            return self.pf.data_page_count(unit, name)
        except (LazyScanError, KeyError, IndexError):
            return 0

    def finer_units_of(self, unit: int, names: tuple[str, ...]) -> int:
        # one look-up in a table made once per column list, not one call per column: a scan
        # counts the pages of every column of every row group, skipped ones included
        per_unit = self._pages_of.get(names)
        if per_unit is None:
            leaves = np.array([self.leaf_of[n].index for n in names], np.int64)
            per_unit = self._pages_of[names] = self.pf.data_pages_per_row_group(leaves)
        n = int(per_unit[unit])
        return n if n >= 0 else super().finer_units_of(unit, names)

    def statistics(self, unit: int, name: str) -> ColumnStats | None:
        return self.pf.statistics(unit, self.leaf_of[name].index)

    def might_contain(self, unit: int, name: str, values: list[Any], filters: dict[str, Any]) -> list[bool] | None:
        desc = self.leaf_of[name]
        if name not in filters:
            filters[name] = self.pf.bloom_filter(unit, desc.index)
        bf = filters[name]
        if bf is None:
            return None
        encoded = [encode_plain(desc, v) for v in values]
        if any(e is None for e in encoded):
            return None
        return [bool(x) for x in bf.check_hashes(hash_bytes([e for e in encoded if e is not None]))]

    def dictionary(self, unit: int, name: str, counters: ReadCounters, cache: Any) -> pa.Array | None:
        leaf = self.leaf_of[name].index
        if not self.pf.is_fully_dictionary_encoded(unit, leaf):
            return None
        return self.pf.read_dictionary(unit, leaf, counters, cache=cache)

    def finer_statistics(self, unit: int, name: str) -> tuple[list[ColumnStats | None], np.ndarray, np.ndarray] | None:
        ps = self.pf.page_statistics(unit, self.leaf_of[name].index)
        if ps is None:
            return None
        stats, layout = ps
        firsts = np.array([p.first_row for p in layout.pages], np.int64)
        counts = np.array([p.num_rows for p in layout.pages], np.int64)
        return list(stats), firsts, counts

    def new_cache(self) -> PageCache:
        return PageCache()

    def read(self, unit: int, name: str, rows: RowRanges | None, counters: ReadCounters, cache: Any) -> pa.Array:
        desc = self.leaf_of[name]
        if not desc.flat:
            return self.pf.read_column(unit, desc.index, rows, counters)
        return self.pf.read_column(unit, desc.index, rows, counters, cache=cache)

    def read_many(self, unit: int, names: list[str], rows: RowRanges, counters: ReadCounters, cache: Any) -> list[pa.Array]:
        return self.pf.read_columns(unit, [self.leaf_of[n].index for n in names], rows, counters, cache=cache)

    def codes(self, unit: int, name: str, rows: RowRanges, counters: ReadCounters, cache: Any) -> Assembled | None:
        return self.pf.read_assembled(unit, self.leaf_of[name].index, rows, counters, cache=cache)

    def codes_to_arrow(self, unit: int, name: str, chunk: Assembled, counters: ReadCounters) -> pa.Array:
        return self.pf.to_arrow(unit, self.leaf_of[name], chunk, counters)

    def dictionary_rows(
        self, unit: int, name: str, entry_passes: np.ndarray, null_passes: bool, counters: ReadCounters, cache: Any
    ) -> tuple[np.ndarray, Assembled] | None:
        return self.pf.dictionary_rows(unit, self.leaf_of[name].index, entry_passes, null_passes, counters, cache)

    def match(
        self, unit: int, name: str, rows: RowRanges, counters: ReadCounters, matcher: BytesMatcher, cache: Any
    ) -> np.ndarray | None:
        chunk = self.pf.read_assembled(unit, self.leaf_of[name].index, rows, counters, matcher=matcher, cache=cache)
        assert chunk.values is not None
        hits = np.asarray(chunk.values, dtype=bool)
        if chunk.valid is None:
            return hits
        mask = np.zeros(chunk.num_rows, dtype=bool)
        mask[chunk.valid] = hits
        return mask

    def read_options(self) -> ReadOptions | None:
        return self.pf.read_options

    def use_options(self, options: ReaderOptions) -> None:
        self.pf.options = options

    def read_ahead_ranges(self, unit: int, names: list[str], dictionary_only: bool) -> list[tuple[int, int]]:
        out = []
        for name in names:
            desc = self.leaf_of.get(name)
            if desc is None or not desc.flat:
                continue
            try:
                # from the footer and what is known already: no request (a walk of the page
                # headers here would be a second one besides the row group's own)
                out.append(self.pf.read_ahead_range(unit, desc.index, dictionary_only))
            except LazyScanError:
                continue  # the read itself reports it
        return out

    def close(self) -> None:
        self.pf.close()


def detect_format(path: str, filesystem: Any = None, retry: RetryPolicy | None = None) -> str:
    """``parquet`` or ``orc``: by the file name's extension, else by the first bytes."""
    lower = str(path).lower()
    if lower.endswith((".parquet", ".parq", ".pq")):
        return "parquet"
    if lower.endswith(".orc"):
        return "orc"
    with open_source(path, filesystem, retry=retry) as src:
        head = src.read_at(0, 4) if src.size >= 4 else b""
    if head[:3] == b"ORC":
        return "orc"
    return "parquet"


def open_units(path: Any, filesystem: Any = None, options: ReaderOptions | None = None, fmt: str | None = None) -> UnitFile:
    """Open a Parquet or ORC file for the scan (``fmt`` None: recognized by its magic bytes)."""
    kind = fmt or detect_format(path, filesystem, options.retry if options is not None else None)
    if kind == "orc":
        from lazyscan.orc.units import OrcUnits

        return OrcUnits(path, filesystem, options)
    return ParquetUnits(path, filesystem, options)
