"""An ORC file as the scan reads it (:class:`~lazyscan.format.units.UnitFile`): units are
stripes, finer units the 10,000-row row groups of the row index."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import numpy as np
import pyarrow as pa

from lazyscan.errors import CorruptFileError
from lazyscan.format.counters import ReadCounters
from lazyscan.format.options import ReaderOptions
from lazyscan.format.selection import RowRanges
from lazyscan.format.statistics import ColumnStats
from lazyscan.format.units import FieldStorage, TimestampKind, UnitFile
from lazyscan.orc import proto as P
from lazyscan.orc.bloom import might_contain
from lazyscan.orc.file import OrcFile

#: streams that index a column rather than hold its values
_INDEX_STREAMS = (P.ROW_INDEX, P.BLOOM_FILTER, P.BLOOM_FILTER_UTF8)
#: the type attribute holding a column's field id (Iceberg's ORC writer, ``ORCSchemaUtil.ICEBERG_ID_ATTRIBUTE``)
ICEBERG_ID = "iceberg.id"
_TIMESTAMP_KINDS = {P.TIMESTAMP: TimestampKind.HIVE, P.TIMESTAMP_INSTANT: TimestampKind.INSTANT}


class OrcUnits(UnitFile):
    """An ORC file: units are stripes, finer units row groups."""

    format_name = "orc"

    def __init__(self, path: Any, filesystem: Any = None, options: ReaderOptions | None = None) -> None:
        opts = options or ReaderOptions()
        self.orc = OrcFile(path, filesystem, read=opts.read, timestamp_unit=opts.timestamp_unit, retry=opts.retry)
        self.path = self.orc.path
        self.source = self.orc.source
        self.arrow_schema = self.orc.arrow_schema
        self._ranges: tuple[np.ndarray, np.ndarray] | None = None

    def use_options(self, options: ReaderOptions) -> None:
        if options.timestamp_unit != self.orc.timestamp_unit:
            raise ValueError("an ORC file opened in one timestamp unit cannot be read in another")
        self.orc.read_options = options.read

    def num_units(self) -> int:
        return self.orc.num_stripes

    def unit_rows(self, unit: int) -> int:
        return self.orc.stripe(unit).number_of_rows

    def unit_ranges(self) -> tuple[np.ndarray, np.ndarray]:
        if self._ranges is None:
            stripes = [self.orc.stripe(i) for i in range(self.orc.num_stripes)]
            starts = np.array([s.offset for s in stripes], np.int64)
            sizes = np.array([s.index_length + s.data_length + s.footer_length for s in stripes], np.int64)
            self._ranges = (starts, sizes)
        return self._ranges

    @property
    def footer_digest(self) -> bytes:
        return self.orc.footer_digest

    def metadata_bytes(self) -> int:
        starts, sizes = self.unit_ranges()
        data_end = max(3, int((starts + sizes).max())) if len(starts) else 3  # 3: the magic "ORC"
        return max(0, self.source.size - data_end)

    def _ids(self, names: Collection[str]) -> np.ndarray:
        """Whether each ORC column id belongs to one of the top-level columns ``names``: each
        owns a contiguous range of ids (the type tree in pre-order)."""
        columns = self.orc.columns
        ends = [c.id for c in columns[1:]] + [len(self.orc.types)]
        wanted = np.zeros(len(self.orc.types), dtype=bool)
        for c, end in zip(columns, ends):
            if c.name in names:
                wanted[c.id:end] = True
        return wanted

    def column_bytes(self, names: Collection[str]) -> np.ndarray:
        # compressed bytes of the columns' streams
        wanted = self._ids(names)
        out = np.zeros(self.num_units(), np.int64)
        for unit in range(self.num_units()):
            out[unit] = sum(
                st.length
                for st in self.orc.stripe_footer(unit).streams
                if st.kind not in _INDEX_STREAMS and 0 <= st.column < len(wanted) and wanted[st.column]
            )
        return out

    def field_storage(self, name: str) -> FieldStorage:
        kinds = {
            _TIMESTAMP_KINDS[t.kind]
            for t, owned in zip(self.orc.types, self._ids((name,)))
            if owned and t.kind in _TIMESTAMP_KINDS
        }
        return FieldStorage(frozenset(kinds))

    def field_ids(self) -> dict[str, int]:
        ids: dict[str, int] = {}
        for c in self.orc.columns:
            raw = c.type.attributes.get(ICEBERG_ID)
            if raw is None:
                continue
            try:
                ids.setdefault(c.name, int(raw))
            except ValueError:
                raise CorruptFileError(
                    f"the field id {ICEBERG_ID}={raw!r} of the column is not an integer", file=self.path, column=c.name
                ) from None
        return ids

    def flat(self, name: str) -> bool:
        return self.has(name) and self.orc.column(name).flat

    def finer_units(self, unit: int, name: str) -> int:
        stride = self.orc.row_index_stride
        return -(-self.unit_rows(unit) // stride) if stride > 0 else 0

    def statistics(self, unit: int, name: str) -> ColumnStats | None:
        return self.orc.statistics(unit, name)

    def _blooms(self, unit: int, name: str, filters: dict[str, Any]) -> list[Any] | None:
        """The column's usable Bloom filters in the unit, one per row group (read once per
        ``filters``)."""
        if self.orc.column(name).type.kind == P.CHAR:
            # the ORC C++ writer (pyorc; ORC 2.3) does not put the space-padded values a CHAR
            # column reads as into its Bloom filters: they would rule out values that are present
            return None
        if name not in filters:
            filters[name] = self.orc.bloom_filters(unit, name)
        return filters[name]  # type: ignore[no-any-return]

    def might_contain(self, unit: int, name: str, values: list[Any], filters: dict[str, Any]) -> list[bool] | None:
        blooms = self._blooms(unit, name, filters)
        if not blooms:
            return None
        t = self.orc.column(name).arrow_type
        return [any(might_contain(b, v, t) for b in blooms) for v in values]

    def dictionary(self, unit: int, name: str, counters: ReadCounters, cache: Any) -> pa.Array | None:
        return self.orc.read_dictionary(unit, name, counters, cache)

    def finer_might_contain(
        self, unit: int, name: str, values: list[Any], filters: dict[str, Any]
    ) -> list[list[bool]] | None:
        blooms = self._blooms(unit, name, filters)
        if not blooms or len(blooms) != self.finer_units(unit, name):
            return None
        t = self.orc.column(name).arrow_type
        return [[might_contain(b, v, t) for v in values] for b in blooms]

    def finer_statistics(self, unit: int, name: str) -> tuple[list[ColumnStats | None], np.ndarray, np.ndarray] | None:
        stats = self.orc.row_group_statistics(unit, name)
        if stats is None:
            return None
        stride = self.orc.row_index_stride
        rows = self.unit_rows(unit)
        firsts = np.arange(len(stats), dtype=np.int64) * stride
        counts = np.minimum(firsts + stride, rows) - firsts
        return stats, firsts, counts

    def new_cache(self) -> dict:
        return {}

    def read(self, unit: int, name: str, rows: RowRanges | None, counters: ReadCounters, cache: Any) -> pa.Array:
        return self.orc.read_column(unit, name, rows, counters, cache)
