"""The contract every physical format implements: a file as the scan reads it.

A file holds *units* (Parquet row groups, ORC stripes) of columns, each with statistics, maybe a
Bloom filter and a dictionary, a finer index (Parquet pages, ORC's 10,000-row row groups) and
reads for a row selection. :class:`UnitFile` is the one interface the per-unit algorithm
(:mod:`lazyscan.scan.unit_scan`, with :mod:`lazyscan.scan.files`) and Spark's cost model
(:mod:`lazyscan.spark.choose`) call; each format
package implements it (``lazyscan.parquet.units.ParquetUnits``, ``lazyscan.orc.units.OrcUnits``)
and is named once in :data:`FORMATS`.

Spark's cost model and schema mapping (:mod:`lazyscan.spark`) take their facts from the contract
too: rows, byte ranges and bytes per column of each unit, the metadata's size, and what a
column's Arrow type does not say about how the file stores it (:class:`FieldStorage`).

Accelerations only some formats have (reading a column as dictionary codes, keeping the rows
whose dictionary entry passes, equality on encoded byte strings) form the optional capability
:class:`EncodedReads`: a file offers it through :attr:`UnitFile.encoded`, and the algorithm asks
for it instead of branching on the format. Columns are top-level field names.

:class:`SourceFile` shows a file's source to a reader that parses the format itself (pyarrow's,
for nested columns) as a file object, so that reader's requests are the source's.
"""

from __future__ import annotations

import enum
import importlib
import io
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from lazyscan.errors import LazyScanError, OptionError
from lazyscan.format.counters import ReadCounters
from lazyscan.format.options import ReaderOptions
from lazyscan.format.selection import RowRanges
from lazyscan.format.statistics import ColumnStats
from lazyscan.io.retry import RetryPolicy
from lazyscan.io.source import ReadOptions, Source, open_source


class EncodedChunk(Protocol):
    """Selected rows of a column as a format read them, before conversion to Arrow: dictionary
    codes (``codes``) or values, with ``valid`` marking the non-null rows (None: all)."""

    num_rows: int
    valid: np.ndarray | None
    codes: np.ndarray | None

    def take(self, keep: np.ndarray) -> EncodedChunk:
        """The rows at positions ``keep`` (sorted) of the chunk."""
        ...


class EncodedReads:
    """Optional capability: reads on encoded values, before they become Arrow arrays.

    A format whose columns may be dictionary encoded offers these through
    :attr:`UnitFile.encoded`; the scan then evaluates a filter on the dictionary once and on the
    codes per row, and ``=`` / ``IN`` on byte strings without decoding the values.
    """

    def codes(self, unit: int, name: str, rows: RowRanges, counters: ReadCounters, cache: Any) -> EncodedChunk | None:
        """The selected rows as codes (``EncodedChunk.codes``) or, where pages fell back to
        another encoding, as values; None when the column is not read this way."""
        raise NotImplementedError

    def codes_to_arrow(self, unit: int, name: str, chunk: EncodedChunk, counters: ReadCounters) -> pa.Array:
        """``chunk`` (from :meth:`codes` or :meth:`dictionary_rows`) as an Arrow array."""
        raise NotImplementedError

    def dictionary_rows(
        self, unit: int, name: str, entry_passes: np.ndarray, null_passes: bool, counters: ReadCounters, cache: Any
    ) -> tuple[np.ndarray, EncodedChunk] | None:
        """All of the unit's rows whose dictionary entry passes (``entry_passes``, per entry of
        :meth:`UnitFile.dictionary`), with those rows as codes; None when not read this way."""
        return None

    def rows_passing(
        self, unit: int, name: str, chunk: EncodedChunk, entry_passes: np.ndarray, null_passes: bool, rows: np.ndarray
    ) -> np.ndarray:
        """The rows of ``rows`` (the row numbers ``chunk`` holds, in order) whose dictionary
        entry passes; a null row passes when ``null_passes``. ``chunk.codes`` is not None."""
        raise NotImplementedError

    def byte_matcher(self, values: Sequence[bytes]) -> Any:
        """``values`` prepared once for :meth:`match` (``=`` / ``IN`` on a byte-string column)."""
        raise NotImplementedError

    def match(
        self, unit: int, name: str, rows: RowRanges, counters: ReadCounters, matcher: Any, cache: Any
    ) -> np.ndarray | None:
        """Whether each selected row equals one of the values of ``matcher``
        (:meth:`byte_matcher`), evaluated on the encoded values: a boolean mask of the selected
        rows; None when the column is not matched this way."""
        return None


class TimestampKind(enum.Enum):
    """What a stored timestamp means; its Arrow type (with or without a zone) does not always say."""

    #: an instant, adjusted to UTC (Parquet ``isAdjustedToUTC=true``, ORC ``timestamp with local
    #: time zone``)
    INSTANT = "instant"
    #: a wall-clock time of no zone, declared so (Parquet ``isAdjustedToUTC=false``)
    LOCAL = "local"
    #: Hive's timestamp, whose type declares no zone: Parquet's deprecated INT96 and ORC's
    #: ``timestamp`` (the writer's wall clock). Read without a zone; engines that follow Hive type
    #: it as an instant (Spark's Parquet and ORC readers: ``TIMESTAMP``)
    HIVE = "hive"


@dataclass(frozen=True)
class FieldStorage:
    """What a top-level column's Arrow type leaves out about how the file stores it: the facts an
    engine needs to type the column as its own reader of the format does."""

    #: the kinds of timestamps the column holds, at any depth (empty: none)
    timestamps: frozenset[TimestampKind] = frozenset()
    #: stored types the column holds that its Arrow type hides, as ``(type, field path)``: e.g.
    #: ``("Parquet type INTERVAL", "c")``, a Parquet INTERVAL read as its 12 bytes
    hidden_types: tuple[tuple[str, str], ...] = ()


def arrow_timestamp_kinds(t: pa.DataType) -> frozenset[TimestampKind]:
    """The timestamp kinds of an Arrow type as its zones tell them (zone: instant, none: local)."""
    if pa.types.is_timestamp(t):
        return frozenset({TimestampKind.INSTANT if t.tz is not None else TimestampKind.LOCAL})
    if pa.types.is_dictionary(t):
        return arrow_timestamp_kinds(t.value_type)
    if isinstance(t, pa.ExtensionType):
        return arrow_timestamp_kinds(t.storage_type)
    kinds: frozenset[TimestampKind] = frozenset()
    for i in range(t.num_fields):
        kinds |= arrow_timestamp_kinds(t.field(i).type)
    return kinds


class UnitFile:
    """One open file, read unit by unit."""

    path: str
    source: Source
    arrow_schema: pa.Schema
    #: the reads on encoded values this file offers (:class:`EncodedReads`), or None
    encoded: EncodedReads | None = None
    #: the format's name in :data:`FORMATS`
    format_name: str = ""
    #: whether a byte-string column may hold text its type does not declare (Parquet: writers
    #: such as older Impala and Hive stored strings as BYTE_ARRAY without the STRING annotation,
    #: hence Spark's ``spark.sql.parquet.binaryAsString``); False where the format's types tell
    #: text from bytes (ORC's ``string`` and ``binary``)
    binary_may_be_text: bool = False

    # ---- layout -------------------------------------------------------------------------

    def num_units(self) -> int:
        raise NotImplementedError

    def unit_rows(self, unit: int) -> int:
        raise NotImplementedError

    def unit_ranges(self) -> tuple[np.ndarray, np.ndarray]:
        """Where each unit's bytes start in the file and how many there are (start -1: a unit
        that stores no bytes)."""
        raise NotImplementedError

    def units_of_split(self, start: int, length: int) -> list[int]:
        """The units the byte range ``[start, start + length)`` of the file owns
        (:func:`units_by_midpoint`, Spark's rule)."""
        starts, sizes = self.unit_ranges()
        return units_by_midpoint(starts, sizes, start, start + length)

    @property
    def footer_digest(self) -> bytes:
        """A digest of the file's metadata as this open read it, equal for every open of one
        version of the file (a plan pins it: :class:`~lazyscan.scan.dataset.FileInfo`)."""
        raise NotImplementedError

    def units_bytes(self, units: Sequence[int]) -> int:
        """Stored bytes of ``units`` (the whole file when they are all of them)."""
        if len(units) == self.num_units():
            return self.source.size
        _, sizes = self.unit_ranges()
        return int(sizes[list(units)].sum())

    def metadata_bytes(self) -> int:
        """Bytes of the file's metadata after its last unit (Parquet: the footer without its
        8-byte tail; ORC: metadata, footer and postscript): what a reader parses before it reads
        any unit."""
        raise NotImplementedError

    def column_bytes(self, names: Collection[str]) -> np.ndarray:
        """Per unit, the bytes a reader of the columns ``names`` decodes (int64, one per unit).

        The measure is the format's own and is what Spark's cost model is calibrated on
        (:class:`lazyscan.spark.choose.CostModel`): Parquet, the uncompressed bytes of the column
        chunks (the footer holds them); ORC, the compressed bytes of the columns' streams, row
        indexes and Bloom filters left out (ORC's metadata has no uncompressed sizes).
        """
        raise NotImplementedError

    def value_columns(self, names: Collection[str]) -> int:
        """How many values one row of the columns ``names`` holds for Spark's cost model: leaf
        columns (a struct's fields each) where the format stores leaves apart (Parquet), else
        top-level columns (ORC)."""
        return sum(1 for n in names if self.has(n))

    def field_storage(self, name: str) -> FieldStorage:
        """What the Arrow type of top-level column ``name`` does not say about how the file
        stores it (:class:`FieldStorage`); by default, the timestamp kinds its zones tell."""
        return FieldStorage(arrow_timestamp_kinds(self.arrow_schema.field(name).type))

    def field_ids(self) -> dict[str, int]:
        """Top-level column -> the field id the file gives it (Parquet's ``SchemaElement.field_id``,
        ORC's ``iceberg.id`` type attribute), from the metadata already read; columns without one
        are left out. Tables (Iceberg, Delta column mapping ``id``) match columns by these ids.

        Nested fields' ids are field metadata on the children of the columns' Arrow types and
        of the arrays read (``PARQUET:field_id``, ``iceberg.id``), as pyarrow gives them. Those of
        top-level columns are here rather than on :attr:`arrow_schema`'s fields, whose metadata
        would follow the columns into every result."""
        return {}

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


def units_by_midpoint(starts: np.ndarray, sizes: np.ndarray, start: int, end: int) -> list[int]:
    """The units whose byte midpoint lies in ``[start, end)``: how a byte-range split owns units
    (Spark's rule for Parquet row groups and ORC stripes alike), so every unit belongs to exactly
    one split. A unit that stores no bytes (start -1) belongs to the split starting at 0."""
    mid = starts + sizes // 2
    owned = (starts >= 0) & (mid >= start) & (mid < end)
    if start == 0:
        owned |= starts < 0
    return np.flatnonzero(owned).tolist()


class SourceFile(io.RawIOBase):
    """A :class:`~lazyscan.io.Source` as a read-only file object, for a reader that parses the
    format itself (pyarrow's, for nested columns; ``pa.PythonFile(SourceFile(source))``): it
    asks the store nothing to open the file, and its reads are the source's (retried, counted,
    served from what the source fetched already). The first lazyscan error a read raises is
    kept (:attr:`error`) for the caller to raise once pyarrow has wrapped it in its own."""

    def __init__(self, source: Source) -> None:
        super().__init__()
        self.source = source
        self.position = 0
        self.error: LazyScanError | None = None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.source.size}[whence]
        self.position = base + offset
        return self.position

    def read(self, size: int | None = -1) -> bytes:
        end = self.source.size if size is None or size < 0 else min(self.source.size, self.position + size)
        if end <= self.position:
            return b""
        try:
            data = bytes(self.source.read_at(self.position, end - self.position))
        except LazyScanError as e:
            if self.error is None:
                self.error = e
            raise
        self.position += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        data = self.read(len(view))
        view[: len(data)] = data
        return len(data)


# ---- the formats -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Format:
    """A physical format the scan reads: how a file of it is recognized and opened."""

    name: str
    #: the name in text ("Parquet", "ORC")
    title: str
    #: lower-case file name endings
    extensions: tuple[str, ...]
    #: the file's first bytes, when they identify the format
    magic: bytes | None
    #: ``module:Class`` of its :class:`UnitFile` implementation (imported on first use)
    implementation: str

    def open(self, path: Any, filesystem: Any = None, options: ReaderOptions | None = None) -> UnitFile:
        module, _, cls = self.implementation.partition(":")
        opened: UnitFile = getattr(importlib.import_module(module), cls)(path, filesystem, options)
        return opened


#: every format, the default (a file recognized by nothing else) first
FORMATS: tuple[Format, ...] = (
    Format("parquet", "Parquet", (".parquet", ".parq", ".pq"), b"PAR1", "lazyscan.parquet.units:ParquetUnits"),
    Format("orc", "ORC", (".orc",), b"ORC", "lazyscan.orc.units:OrcUnits"),
)
FORMAT_NAMES = tuple(f.name for f in FORMATS)


def format_named(name: str) -> Format:
    for f in FORMATS:
        if f.name == name:
            return f
    raise OptionError(f"unknown format {name!r}: lazyscan reads {', '.join(FORMAT_NAMES)}")


def detect_format(path: str, filesystem: Any = None, retry: RetryPolicy | None = None) -> str:
    """The format's name: by the file name's ending, else by the first bytes (the first
    format, Parquet, when neither tells)."""
    lower = str(path).lower()
    for f in FORMATS:
        if lower.endswith(f.extensions):
            return f.name
    with open_source(path, filesystem, retry=retry) as src:
        head = src.read_at(0, 4) if src.size >= 4 else b""
    for f in FORMATS:
        if f.magic is not None and head.startswith(f.magic):
            return f.name
    return FORMATS[0].name


def open_units(path: Any, filesystem: Any = None, options: ReaderOptions | None = None, fmt: str | None = None) -> UnitFile:
    """Open a file of any format for the scan (``fmt`` None: recognized by :func:`detect_format`)."""
    kind = fmt or detect_format(path, filesystem, options.retry if options is not None else None)
    return format_named(kind).open(path, filesystem, options)
