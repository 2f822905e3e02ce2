"""A Parquet file as the scan reads it (:class:`~lazyscan.format.units.UnitFile`): units are row
groups, finer units pages. It offers the reads on encoded values
(:class:`~lazyscan.format.units.EncodedReads`): dictionary codes, the rows whose dictionary entry
passes, and ``=`` / ``IN`` matched on encoded byte arrays."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lazyscan.errors import CorruptFileError, LazyScanError
from lazyscan.format.counters import ReadCounters
from lazyscan.format.options import ReaderOptions
from lazyscan.format.selection import RowRanges
from lazyscan.format.statistics import ColumnStats
from lazyscan.format.units import EncodedChunk, EncodedReads, FieldStorage, TimestampKind, UnitFile
from lazyscan.io.source import ReadOptions
from lazyscan.parquet import kernels as K
from lazyscan.parquet.bloom import encode_plain, hash_bytes
from lazyscan.parquet.convert import Assembled
from lazyscan.parquet.file import PageCache, ParquetFile
from lazyscan.parquet.match import BytesMatcher
from lazyscan.parquet.metadata import ConvertedType, PhysicalType

_NO_VALID = np.ones(0, dtype=bool)


class ParquetUnits(UnitFile, EncodedReads):
    """A Parquet file: units are row groups, finer units pages."""

    format_name = "parquet"
    binary_may_be_text = True

    def __init__(self, path: Any, filesystem: Any = None, options: ReaderOptions | None = None) -> None:
        self.pf = ParquetFile(path, filesystem, options=options)
        self.path = self.pf.path
        self.source = self.pf.source
        self.arrow_schema = self.pf.arrow_schema
        self.encoded = self
        leaves: dict[str, Any] = {}
        for c in self.pf.schema.columns:
            leaves.setdefault(self.arrow_schema.field(c.top_level_field).name, c)
        self.leaf_of = leaves  # top-level name -> its first leaf descriptor
        self._pages_of: dict[tuple[str, ...], np.ndarray] = {}

    # ---- layout -------------------------------------------------------------------------

    def num_units(self) -> int:
        return self.pf.num_row_groups

    def unit_rows(self, unit: int) -> int:
        return self.pf.metadata.row_groups[unit].num_rows

    def unit_ranges(self) -> tuple[np.ndarray, np.ndarray]:
        summary = self.pf.summary
        return summary.starts, summary.sizes

    @property
    def footer_digest(self) -> bytes:
        return self.pf.footer_digest

    def metadata_bytes(self) -> int:
        return max(0, self.source.size - self.pf.summary.data_end - 8)

    def _leaves(self, names: Collection[str]) -> list[int]:
        """The leaf columns under the top-level columns ``names``, in file order."""
        top = [self.arrow_schema.field(d.top_level_field).name for d in self.pf.schema.columns]
        return [j for j, name in enumerate(top) if name in names]

    def column_bytes(self, names: Collection[str]) -> np.ndarray:
        # uncompressed bytes of the column chunks of every leaf under the columns
        return np.asarray(self.pf.summary.uncompressed[:, self._leaves(names)].sum(axis=1), np.int64)

    def value_columns(self, names: Collection[str]) -> int:
        return len(self._leaves(names))

    def field_storage(self, name: str) -> FieldStorage:
        i = self.arrow_schema.get_all_field_indices(name)[0]
        leaves = self.pf.schema.field_leaves[i] if i < len(self.pf.schema.field_leaves) else ()
        descs = [self.pf.schema.columns[leaf] for leaf in leaves]
        kinds = set()
        for d in descs:
            t = d.arrow_type
            if pa.types.is_timestamp(t):
                if d.physical_type == PhysicalType.INT96:
                    kinds.add(TimestampKind.HIVE)
                else:
                    kinds.add(TimestampKind.INSTANT if t.tz is not None else TimestampKind.LOCAL)
        hidden = tuple(
            ("Parquet type INTERVAL", ".".join(d.path)) for d in descs if d.converted_type == ConvertedType.INTERVAL
        )
        return FieldStorage(frozenset(kinds), hidden)

    def field_ids(self) -> dict[str, int]:
        ids: dict[str, int] = {}
        for f, fid in zip(self.arrow_schema, self.pf.schema.top_field_ids):
            if fid is not None and fid >= 0:  # a negative id is none, as Arrow's reader takes it
                ids.setdefault(f.name, fid)
        return ids

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

    # ---- what may be in a unit ----------------------------------------------------------

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

    # ---- reads --------------------------------------------------------------------------

    def new_cache(self) -> PageCache:
        return PageCache()

    def read(self, unit: int, name: str, rows: RowRanges | None, counters: ReadCounters, cache: Any) -> pa.Array:
        desc = self.leaf_of[name]
        if not desc.flat:
            return self.pf.read_column(unit, desc.index, rows, counters)
        return self.pf.read_column(unit, desc.index, rows, counters, cache=cache)

    def read_many(self, unit: int, names: list[str], rows: RowRanges, counters: ReadCounters, cache: Any) -> list[pa.Array]:
        return self.pf.read_columns(unit, [self.leaf_of[n].index for n in names], rows, counters, cache=cache)

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

    # ---- reads on encoded values (EncodedReads) ---------------------------------------------

    def codes(self, unit: int, name: str, rows: RowRanges, counters: ReadCounters, cache: Any) -> Assembled | None:
        return self.pf.read_assembled(unit, self.leaf_of[name].index, rows, counters, cache=cache)

    def codes_to_arrow(self, unit: int, name: str, chunk: EncodedChunk, counters: ReadCounters) -> pa.Array:
        assert isinstance(chunk, Assembled)
        return self.pf.to_arrow(unit, self.leaf_of[name], chunk, counters)

    def dictionary_rows(
        self, unit: int, name: str, entry_passes: np.ndarray, null_passes: bool, counters: ReadCounters, cache: Any
    ) -> tuple[np.ndarray, Assembled] | None:
        return self.pf.dictionary_rows(unit, self.leaf_of[name].index, entry_passes, null_passes, counters, cache)

    def rows_passing(
        self, unit: int, name: str, chunk: EncodedChunk, entry_passes: np.ndarray, null_passes: bool, rows: np.ndarray
    ) -> np.ndarray:
        assert chunk.codes is not None
        kept = np.empty(len(rows), np.int64)
        valid = chunk.valid if chunk.valid is not None else _NO_VALID
        n = K.dictionary_hits(chunk.codes, entry_passes, valid, chunk.valid is not None, null_passes, rows, kept)
        if n < 0:
            raise CorruptFileError(K.ERROR_MESSAGES.get(n, "bad dictionary codes"), file=self.path, row_group=unit, column=name)
        return kept[:n]

    def byte_matcher(self, values: Sequence[bytes]) -> BytesMatcher:
        return BytesMatcher.of(list(values))

    def match(
        self, unit: int, name: str, rows: RowRanges, counters: ReadCounters, matcher: Any, cache: Any
    ) -> np.ndarray | None:
        chunk = self.pf.read_assembled(unit, self.leaf_of[name].index, rows, counters, matcher=matcher, cache=cache)
        assert chunk.values is not None
        hits = np.asarray(chunk.values, dtype=bool)
        if chunk.valid is None:
            return hits
        mask = np.zeros(chunk.num_rows, dtype=bool)
        mask[chunk.valid] = hits
        return mask
