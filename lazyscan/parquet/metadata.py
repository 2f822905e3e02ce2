"""Typed Parquet metadata: footer, page headers, page index, Bloom filter headers.

The structures follow ``parquet.thrift`` of the parquet-format repository; only the fields lazyscan
uses are kept. Each ``*_from_thrift`` function takes the field dict produced by
:func:`lazyscan.parquet.thrift.read_struct` and validates what later code relies on (non-negative
sizes and counts, known enum values), raising :class:`ThriftError` on violations; the file layer
turns those into :class:`lazyscan.errors.CorruptFileError` with the location attached.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, NamedTuple, TypeVar

from lazyscan.parquet.thrift import ThriftError


class PhysicalType(IntEnum):
    BOOLEAN = 0
    INT32 = 1
    INT64 = 2
    INT96 = 3
    FLOAT = 4
    DOUBLE = 5
    BYTE_ARRAY = 6
    FIXED_LEN_BYTE_ARRAY = 7


class ConvertedType(IntEnum):
    UTF8 = 0
    MAP = 1
    MAP_KEY_VALUE = 2
    LIST = 3
    ENUM = 4
    DECIMAL = 5
    DATE = 6
    TIME_MILLIS = 7
    TIME_MICROS = 8
    TIMESTAMP_MILLIS = 9
    TIMESTAMP_MICROS = 10
    UINT_8 = 11
    UINT_16 = 12
    UINT_32 = 13
    UINT_64 = 14
    INT_8 = 15
    INT_16 = 16
    INT_32 = 17
    INT_64 = 18
    JSON = 19
    BSON = 20
    INTERVAL = 21


class Repetition(IntEnum):
    REQUIRED = 0
    OPTIONAL = 1
    REPEATED = 2


class Encoding(IntEnum):
    PLAIN = 0
    GROUP_VAR_INT = 1
    PLAIN_DICTIONARY = 2
    RLE = 3
    BIT_PACKED = 4
    DELTA_BINARY_PACKED = 5
    DELTA_LENGTH_BYTE_ARRAY = 6
    DELTA_BYTE_ARRAY = 7
    RLE_DICTIONARY = 8
    BYTE_STREAM_SPLIT = 9


class Codec(IntEnum):
    UNCOMPRESSED = 0
    SNAPPY = 1
    GZIP = 2
    LZO = 3
    BROTLI = 4
    LZ4 = 5
    ZSTD = 6
    LZ4_RAW = 7


class PageType(IntEnum):
    DATA_PAGE = 0
    INDEX_PAGE = 1
    DICTIONARY_PAGE = 2
    DATA_PAGE_V2 = 3


class BoundaryOrder(IntEnum):
    UNORDERED = 0
    ASCENDING = 1
    DESCENDING = 2


_F = TypeVar("_F", bound=Callable[..., Any])


def _guarded(fn: _F) -> _F:
    """Turn type confusion in decoded thrift (a list where an int belongs, ...) into ThriftError."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ThriftError:
            raise
        except (TypeError, AttributeError, KeyError, ValueError, IndexError, OverflowError) as e:
            raise ThriftError(f"malformed {fn.__name__.replace('_from_thrift', '')}: {e}") from None

    return wrapper  # type: ignore[return-value]


def _enum(cls: type[IntEnum], value: Any, what: str) -> Any:
    try:
        return cls(value)
    except ValueError:
        raise ThriftError(f"unknown {what} {value}") from None


def _nonneg(value: Any, what: str) -> int:
    if not isinstance(value, int) or value < 0:
        raise ThriftError(f"{what} is {value!r}, expected a non-negative integer")
    return value


def _int(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ThriftError(f"{what} is {type(value).__name__}, expected an integer")
    return value


def _opt_int(value: Any, what: str) -> int | None:
    return None if value is None else _int(value, what)


def _lenient_int(value: Any) -> int | None:
    """An optional field some writers used for other things: ignored when not an integer."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _int_list(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise ThriftError(f"{what} is not a list")
    return tuple(_int(v, what) for v in value)


def _structs(value: Any, what: str) -> list[dict[int, Any]]:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ThriftError(f"{what} is not a list of structs")
    return value


def _struct(value: Any, what: str) -> dict[int, Any]:
    if not isinstance(value, dict):
        raise ThriftError(f"{what} is not a struct")
    return value


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


# --------------------------------------------------------------------------------------------
# logical types


@dataclass(frozen=True, slots=True)
class LogicalType:
    """A Parquet LogicalType annotation: ``kind`` is the union member's name."""

    kind: str
    scale: int = 0
    precision: int = 0
    unit: str = ""  # MILLIS / MICROS / NANOS for TIME and TIMESTAMP
    utc_adjusted: bool = False
    bit_width: int = 0
    signed: bool = True
    #: required fields of the annotation the footer lacks (parquet.thrift), by name: the
    #: schema refuses such a column, as Arrow and parquet-java do
    missing: tuple[str, ...] = ()


#: the required fields of each parameterized logical type, by Thrift field id
_REQUIRED_FIELDS = {
    "DECIMAL": {1: "scale", 2: "precision"},
    "TIME": {1: "isAdjustedToUTC", 2: "unit"},
    "TIMESTAMP": {1: "isAdjustedToUTC", 2: "unit"},
    "INTEGER": {1: "bitWidth", 2: "isSigned"},
}

_LOGICAL_KINDS = {
    1: "STRING",
    2: "MAP",
    3: "LIST",
    4: "ENUM",
    5: "DECIMAL",
    6: "DATE",
    7: "TIME",
    8: "TIMESTAMP",
    10: "INTEGER",
    11: "UNKNOWN",
    12: "JSON",
    13: "BSON",
    14: "UUID",
    15: "FLOAT16",
    16: "VARIANT",
    17: "GEOMETRY",
    18: "GEOGRAPHY",
}
_TIME_UNITS = {1: "MILLIS", 2: "MICROS", 3: "NANOS"}


def logical_type_from_thrift(f: dict[int, Any]) -> LogicalType | None:
    for fid, value in f.items():
        kind = _LOGICAL_KINDS.get(fid)
        if kind is None:
            return LogicalType("UNRECOGNIZED")
        required = _REQUIRED_FIELDS.get(kind, {})
        if required:
            value = _struct(value, f"{kind} logical type")
        missing = tuple(name for fid, name in required.items() if fid not in value)
        if kind == "DECIMAL":
            return LogicalType(
                kind, scale=_int(value.get(1, 0), "decimal scale"), precision=_int(value.get(2, 0), "decimal precision"),
                missing=missing,
            )
        if kind in ("TIME", "TIMESTAMP"):
            unit_fields = _struct(value.get(2, {}), "time unit")
            unit = next((_TIME_UNITS.get(k, "") for k in unit_fields), "")
            return LogicalType(kind, unit=unit, utc_adjusted=bool(value.get(1, False)), missing=missing)
        if kind == "INTEGER":
            return LogicalType(kind, bit_width=_int(value.get(1, 0), "integer bit width"), signed=bool(value.get(2, True)), missing=missing)
        return LogicalType(kind)
    return None


# --------------------------------------------------------------------------------------------
# footer


@dataclass(frozen=True, slots=True)
class SchemaElement:
    name: str
    type: PhysicalType | None
    type_length: int | None
    repetition: Repetition | None
    num_children: int
    converted_type: ConvertedType | None
    scale: int | None
    precision: int | None
    field_id: int | None
    logical_type: LogicalType | None


def schema_element_from_thrift(f: dict[int, Any]) -> SchemaElement:
    ptype = _opt_int(f.get(1), "schema type")
    conv = _opt_int(f.get(6), "converted type")
    rep = _opt_int(f.get(3), "repetition")
    converted: ConvertedType | None
    try:
        converted = ConvertedType(conv) if conv is not None else None
    except ValueError:
        converted = None
    if 4 not in f:
        raise ThriftError("schema element without a name")  # a required field (pyarrow refuses it too)
    raw_name = f[4]
    if isinstance(raw_name, bytes):
        try:
            raw_name.decode("utf-8")
        except UnicodeDecodeError:
            # Thrift strings are UTF-8; pyarrow refuses such a name too
            raise ThriftError(f"column name {raw_name!r} is not UTF-8") from None
    return SchemaElement(
        name=_text(raw_name),
        type=_enum(PhysicalType, ptype, "physical type") if ptype is not None else None,
        type_length=_opt_int(f.get(2), "type_length"),
        repetition=_enum(Repetition, rep, "repetition") if rep is not None else None,
        num_children=_nonneg(f.get(5, 0), "num_children"),
        converted_type=converted,
        scale=_opt_int(f.get(7), "scale"),
        precision=_opt_int(f.get(8), "precision"),
        field_id=_lenient_int(f.get(9)),
        logical_type=logical_type_from_thrift(_struct(f[10], "logical type")) if 10 in f else None,
    )


@dataclass(frozen=True, slots=True)
class Statistics:
    """Raw (encoded) statistics of a column chunk or page."""

    min_value: bytes | None
    max_value: bytes | None
    null_count: int | None
    distinct_count: int | None
    min_exact: bool | None
    max_exact: bool | None
    #: True when min/max came from the deprecated ``min``/``max`` fields (signed byte order)
    deprecated: bool


def statistics_from_thrift(f: dict[int, Any]) -> Statistics:
    min_value = f.get(6)
    max_value = f.get(5)
    deprecated = False
    if min_value is None and max_value is None and (1 in f or 2 in f):
        min_value, max_value, deprecated = f.get(2), f.get(1), True
    if not isinstance(min_value, (bytes, type(None))) or not isinstance(max_value, (bytes, type(None))):
        raise ThriftError("statistics bounds are not binary")
    _opt_int(f.get(3), "null_count")
    return Statistics(
        min_value=min_value,
        max_value=max_value,
        null_count=f.get(3),
        distinct_count=f.get(4),
        min_exact=f.get(8),
        max_exact=f.get(7),
        deprecated=deprecated,
    )


@dataclass(frozen=True, slots=True)
class PageEncodingStats:
    page_type: int
    encoding: int
    count: int


@dataclass(frozen=True, slots=True)
class ColumnMetaData:
    type: PhysicalType
    encodings: tuple[int, ...]
    path_in_schema: tuple[str, ...]
    codec: int
    num_values: int
    total_uncompressed_size: int
    total_compressed_size: int
    data_page_offset: int
    index_page_offset: int | None
    dictionary_page_offset: int | None
    statistics: Statistics | None
    encoding_stats: tuple[PageEncodingStats, ...] | None
    bloom_filter_offset: int | None
    bloom_filter_length: int | None
    key_value_metadata: dict[str, str | None]
    #: lengths of the size statistics' repetition and definition level histograms (0: none)
    level_histogram_lengths: tuple[int, int] = (0, 0)

    @property
    def chunk_start(self) -> int:
        """File offset of the chunk's first page: the dictionary page when it comes first (an
        offset below 4, inside the magic number, is a writer's placeholder and ignored)."""
        d = self.dictionary_page_offset
        start = self.data_page_offset
        return d if d is not None and 4 <= d < start else start


def column_metadata_from_thrift(f: dict[int, Any]) -> ColumnMetaData:
    if 1 not in f or 9 not in f:
        raise ThriftError("column metadata lacks its type or data page offset")
    enc_stats = None
    if 13 in f:
        enc_stats = tuple(
            PageEncodingStats(_int(s.get(1, -1), "page type"), _int(s.get(2, -1), "encoding"), _int(s.get(3, 0), "count"))
            for s in _structs(f[13], "encoding stats")
        )
    kv = {_text(e.get(1, b"")): (_text(e[2]) if 2 in e else None) for e in _structs(f.get(8, []), "key-value metadata")}
    return ColumnMetaData(
        type=_enum(PhysicalType, f[1], "physical type"),
        encodings=_int_list(f.get(2, []), "encodings"),
        path_in_schema=tuple(_text(p) for p in f.get(3, ())),
        codec=_int(f.get(4, 0), "codec"),
        num_values=_nonneg(f.get(5, 0), "num_values"),
        total_uncompressed_size=_nonneg(f.get(6, 0), "total_uncompressed_size"),
        total_compressed_size=_nonneg(f.get(7, 0), "total_compressed_size"),
        data_page_offset=_nonneg(f[9], "data_page_offset"),
        index_page_offset=_lenient_int(f.get(10)),
        dictionary_page_offset=_opt_int(f.get(11), "dictionary_page_offset"),
        statistics=statistics_from_thrift(_struct(f[12], "statistics")) if 12 in f else None,
        encoding_stats=enc_stats,
        bloom_filter_offset=_lenient_int(f.get(14)),
        bloom_filter_length=_lenient_int(f.get(15)),
        key_value_metadata=kv,
        level_histogram_lengths=_level_histogram_lengths(f[16]) if 16 in f else (0, 0),
    )


def _level_histogram_lengths(value: Any) -> tuple[int, int]:
    sizes = _struct(value, "size statistics")
    return tuple(len(_int_list(sizes.get(i, []), "level histogram")) for i in (2, 3))  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class ColumnChunk:
    file_path: str | None
    meta_data: ColumnMetaData | None
    offset_index_offset: int | None
    offset_index_length: int | None
    column_index_offset: int | None
    column_index_length: int | None
    encrypted: bool


def column_chunk_from_thrift(f: dict[int, Any]) -> ColumnChunk:
    return ColumnChunk(
        file_path=_text(f[1]) if 1 in f else None,
        meta_data=column_metadata_from_thrift(_struct(f[3], "column metadata")) if 3 in f else None,
        offset_index_offset=_opt_int(f.get(4), "offset_index_offset"),
        offset_index_length=_opt_int(f.get(5), "offset_index_length"),
        column_index_offset=_opt_int(f.get(6), "column_index_offset"),
        column_index_length=_opt_int(f.get(7), "column_index_length"),
        encrypted=8 in f or 9 in f,
    )


@dataclass(frozen=True, slots=True)
class SortingColumn:
    column_idx: int
    descending: bool
    nulls_first: bool


@dataclass(frozen=True, slots=True)
class RowGroup:
    columns: tuple[ColumnChunk, ...]
    total_byte_size: int
    num_rows: int
    sorting_columns: tuple[SortingColumn, ...] | None
    file_offset: int | None
    total_compressed_size: int | None
    ordinal: int | None


def row_group_from_thrift(f: dict[int, Any]) -> RowGroup:
    sorting = None
    if 4 in f:
        sorting = tuple(
            SortingColumn(_int(s.get(1, 0), "sorting column"), bool(s.get(2, False)), bool(s.get(3, False)))
            for s in _structs(f[4], "sorting columns")
        )
    return RowGroup(
        columns=tuple(column_chunk_from_thrift(c) for c in _structs(f.get(1, []), "column chunks")),
        total_byte_size=f.get(2, 0),
        num_rows=_nonneg(f.get(3, 0), "row group num_rows"),
        sorting_columns=sorting,
        file_offset=f.get(5),
        total_compressed_size=f.get(6),
        ordinal=f.get(7),
    )


@dataclass(frozen=True, slots=True)
class FileMetaData:
    version: int
    schema: tuple[SchemaElement, ...]
    num_rows: int
    #: decoded on first use where the footer reader indexed them (:mod:`lazyscan.parquet.row_groups`)
    row_groups: Sequence[RowGroup]
    key_value_metadata: dict[str, str | None]
    created_by: str | None
    #: per leaf column: True when TYPE_DEFINED_ORDER (min/max usable), None when absent
    column_orders: tuple[bool, ...] | None
    encrypted: bool


@_guarded
def file_metadata_from_thrift(f: dict[int, Any], row_groups: Sequence[RowGroup] | None = None) -> FileMetaData:
    """``row_groups``: the row groups when the caller indexed them instead of decoding field 4."""
    if 2 not in f or not f[2]:
        raise ThriftError("file metadata has no schema")
    kv = {_text(e.get(1, b"")): (_text(e[2]) if 2 in e else None) for e in _structs(f.get(5, []), "key-value metadata")}
    orders = tuple(1 in o for o in _structs(f[7], "column orders")) if 7 in f else None
    return FileMetaData(
        version=_int(f.get(1, 1), "version"),
        schema=tuple(schema_element_from_thrift(s) for s in _structs(f[2], "schema")),
        num_rows=_nonneg(f.get(3, 0), "num_rows"),
        row_groups=(
            row_groups if row_groups is not None
            else tuple(row_group_from_thrift(r) for r in _structs(f.get(4, []), "row groups"))
        ),
        key_value_metadata=kv,
        created_by=_text(f[6]) if 6 in f else None,
        column_orders=orders,
        encrypted=8 in f,
    )


# --------------------------------------------------------------------------------------------
# pages
#
# Page headers are NamedTuples: immutable like the other metadata, and built in a third of the
# time of a frozen dataclass (a selective read builds two or three per column chunk).


class DataPageHeader(NamedTuple):
    num_values: int
    encoding: int
    definition_level_encoding: int
    repetition_level_encoding: int
    statistics: Statistics | None


class DataPageHeaderV2(NamedTuple):
    num_values: int
    num_nulls: int
    num_rows: int
    encoding: int
    definition_levels_byte_length: int
    repetition_levels_byte_length: int
    is_compressed: bool
    statistics: Statistics | None


class DictionaryPageHeader(NamedTuple):
    num_values: int
    encoding: int
    is_sorted: bool


class PageHeader(NamedTuple):
    type: int
    uncompressed_page_size: int
    compressed_page_size: int
    crc: int | None
    data_page_header: DataPageHeader | None
    dictionary_page_header: DictionaryPageHeader | None
    data_page_header_v2: DataPageHeaderV2 | None
    header_size: int  # bytes taken by the header itself

    @property
    def num_values(self) -> int:
        if self.data_page_header is not None:
            return self.data_page_header.num_values
        if self.data_page_header_v2 is not None:
            return self.data_page_header_v2.num_values
        if self.dictionary_page_header is not None:
            return self.dictionary_page_header.num_values
        return 0


@_guarded
def page_header_from_thrift(f: dict[int, Any], header_size: int) -> PageHeader:
    if 1 not in f or 2 not in f or 3 not in f:
        raise ThriftError("page header lacks its type or sizes")
    dph = dph2 = dict_h = None
    _int(f[1], "page type")
    if 5 in f:
        d = _struct(f[5], "data page header")
        dph = DataPageHeader(
            num_values=_nonneg(d.get(1, -1), "page num_values"),
            encoding=_int(d.get(2, -1), "encoding"),
            definition_level_encoding=_int(d.get(3, 3), "level encoding"),
            repetition_level_encoding=_int(d.get(4, 3), "level encoding"),
            statistics=statistics_from_thrift(_struct(d[5], "statistics")) if 5 in d else None,
        )
    if 7 in f:
        d = _struct(f[7], "dictionary page header")
        dict_h = DictionaryPageHeader(
            num_values=_nonneg(d.get(1, -1), "dictionary num_values"),
            encoding=_int(d.get(2, 0), "encoding"),
            is_sorted=bool(d.get(3, False)),
        )
    if 8 in f:
        d = _struct(f[8], "v2 data page header")
        dph2 = DataPageHeaderV2(
            num_values=_nonneg(d.get(1, -1), "page num_values"),
            num_nulls=_nonneg(d.get(2, -1), "page num_nulls"),
            num_rows=_nonneg(d.get(3, -1), "page num_rows"),
            encoding=_int(d.get(4, -1), "encoding"),
            definition_levels_byte_length=_nonneg(d.get(5, -1), "definition levels length"),
            repetition_levels_byte_length=_nonneg(d.get(6, -1), "repetition levels length"),
            is_compressed=bool(d.get(7, True)),
            statistics=statistics_from_thrift(_struct(d[8], "statistics")) if 8 in d else None,
        )
    return PageHeader(
        type=f[1],
        uncompressed_page_size=_nonneg(f[2], "uncompressed_page_size"),
        compressed_page_size=_nonneg(f[3], "compressed_page_size"),
        crc=_lenient_int(f.get(4)),
        data_page_header=dph,
        dictionary_page_header=dict_h,
        data_page_header_v2=dph2,
        header_size=header_size,
    )


# --------------------------------------------------------------------------------------------
# page index and Bloom filters


@dataclass(frozen=True, slots=True)
class ColumnIndex:
    """Per-page statistics of one column chunk (PageIndex.md)."""

    null_pages: tuple[bool, ...]
    min_values: tuple[bytes, ...]
    max_values: tuple[bytes, ...]
    boundary_order: BoundaryOrder
    null_counts: tuple[int, ...] | None

    def select(self, pages: Sequence[int]) -> ColumnIndex:
        """The entries of the pages ``pages`` only (in that order)."""
        counts = self.null_counts
        return ColumnIndex(
            null_pages=tuple(self.null_pages[i] for i in pages),
            min_values=tuple(self.min_values[i] for i in pages),
            max_values=tuple(self.max_values[i] for i in pages),
            boundary_order=self.boundary_order,
            null_counts=None if counts is None else tuple(counts[i] for i in pages),
        )


@_guarded
def column_index_from_thrift(f: dict[int, Any]) -> ColumnIndex:
    null_pages = tuple(bool(v) for v in f.get(1, ()))
    mins = tuple(f.get(2, ()))
    maxs = tuple(f.get(3, ()))
    if not all(isinstance(v, bytes) for v in (*mins, *maxs)):
        raise ThriftError("column index bounds are not binary")
    n = len(null_pages)
    if len(mins) != n or len(maxs) != n:
        raise ThriftError("column index lists have different lengths")
    counts = _int_list(f[5], "null counts") if 5 in f else None
    if counts is not None and len(counts) != n:
        raise ThriftError("column index null_counts has the wrong length")
    return ColumnIndex(
        null_pages=null_pages,
        min_values=mins,
        max_values=maxs,
        boundary_order=_enum(BoundaryOrder, f.get(4, 0), "boundary order"),
        null_counts=counts,
    )


@dataclass(frozen=True, slots=True)
class PageLocation:
    offset: int
    #: the page's size with its header; parquet-go (parquet-go/parquet-go issue 206) wrote it
    #: without the header, so readers take a page's extent from where the next one starts
    compressed_page_size: int
    first_row_index: int

    @property
    def unwritten(self) -> bool:
        """An entry for a page that holds no row and was never written: Impala 4.0 lists such
        pages with offset -1 (size 0, first row -1), apache/impala
        ``testdata/data/alltypes_empty_pages.parquet``."""
        return self.offset < 0


@dataclass(frozen=True, slots=True)
class OffsetIndex:
    """A chunk's page locations as the writer recorded them; the file layer checks them
    against the chunk (:meth:`~lazyscan.parquet.file.ParquetFile.page_layout`) and reads the
    page headers instead when they do not add up."""

    page_locations: tuple[PageLocation, ...]


@_guarded
def offset_index_from_thrift(f: dict[int, Any]) -> OffsetIndex:
    locs = tuple(
        PageLocation(
            offset=_int(p.get(1, -1), "page offset"),
            compressed_page_size=_int(p.get(2, -1), "page size"),
            first_row_index=_int(p.get(3, -1), "page first row"),
        )
        for p in _structs(f.get(1, []), "page locations")
    )
    return OffsetIndex(locs)


@dataclass(frozen=True, slots=True)
class BloomFilterHeader:
    num_bytes: int
    algorithm_block: bool
    hash_xxhash: bool
    uncompressed: bool


@_guarded
def bloom_filter_header_from_thrift(f: dict[int, Any]) -> BloomFilterHeader:
    return BloomFilterHeader(
        num_bytes=_nonneg(f.get(1, -1), "Bloom filter numBytes"),
        algorithm_block=1 in _struct(f.get(2, {}), "algorithm"),
        hash_xxhash=1 in _struct(f.get(3, {}), "hash"),
        uncompressed=1 in _struct(f.get(4, {}), "compression"),
    )
