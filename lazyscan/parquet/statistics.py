"""Parquet statistics (row groups and the page index) decoded into
:class:`~lazyscan.format.statistics.ColumnStats`, whose docstring gives the value domain.
"""

from __future__ import annotations

import base64
import functools
import math
import struct

import numpy as np
import pyarrow as pa

from lazyscan.format.statistics import ColumnStats
from lazyscan.format.writers import (
    CHUNK,
    MIN_MAX,
    NULL_COUNT,
    PAGE,
    ColumnFacts,
    StatisticsTrust,
    ordered_bounds,
    parquet_trust,
    plausible_count,
)
from lazyscan.parquet.metadata import (
    ColumnIndex,
    ColumnMetaData,
    FileMetaData,
    PhysicalType,
    Statistics,
)
from lazyscan.parquet.schema import ColumnDescriptor

_DICTIONARY_ENCODINGS = (2, 8)  # PLAIN_DICTIONARY, RLE_DICTIONARY
_NOTHING: frozenset[str] = frozenset()


def _is_bytes_like(desc: ColumnDescriptor) -> bool:
    t = desc.arrow_type
    return pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t)


def stats_usable(desc: ColumnDescriptor, deprecated: bool, type_defined_order: bool | None) -> bool:
    """Whether min/max of this column can be trusted for comparisons (by its type and the
    statistics fields used; the writer's own bugs are :func:`distrusted_statistics`)."""
    t = desc.arrow_type
    if desc.physical_type == PhysicalType.INT96:
        return False  # sort order undefined
    if type_defined_order is False:
        return False  # an unknown column order
    signed_only = deprecated or type_defined_order is None
    if signed_only:
        # legacy min/max were computed with signed comparisons: wrong for unsigned ints, bytes,
        # and decimals stored as bytes
        if pa.types.is_unsigned_integer(t) or _is_bytes_like(desc) or (
            pa.types.is_decimal(t)
            and desc.physical_type in (PhysicalType.BYTE_ARRAY, PhysicalType.FIXED_LEN_BYTE_ARRAY)
        ):
            return False
        if pa.types.is_float16(t):
            return False
    return True


def _kind(desc: ColumnDescriptor) -> str:
    t = desc.arrow_type
    if desc.physical_type == PhysicalType.INT96:
        return "int96"
    for test, kind in (
        (pa.types.is_boolean, "boolean"), (pa.types.is_unsigned_integer, "uint"), (pa.types.is_integer, "int"),
        (pa.types.is_float16, "float16"), (pa.types.is_floating, "float"), (pa.types.is_decimal, "decimal"),
        (pa.types.is_string, "string"), (pa.types.is_large_string, "string"), (pa.types.is_date, "date"),
        (pa.types.is_time, "time"), (pa.types.is_timestamp, "timestamp"), (pa.types.is_binary, "binary"),
        (pa.types.is_large_binary, "binary"), (pa.types.is_fixed_size_binary, "binary"),
    ):
        if test(t):
            return kind
    return "other"


@functools.lru_cache(maxsize=64)
def _arrow_dictionary_fields(arrow_schema: str) -> tuple[bool | None, ...] | None:
    """Per top-level field of a stored Arrow schema (``ARROW:schema``, base64 IPC): True when
    it is a dictionary, None when a dictionary is nested inside it; None when unreadable."""
    try:
        schema = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(arrow_schema)))
    except (ValueError, TypeError, pa.ArrowException):
        return None

    def holds_dictionary(t: pa.DataType) -> bool:
        if pa.types.is_dictionary(t):
            return True
        return any(holds_dictionary(t.field(i).type) for i in range(t.num_fields))

    out: list[bool | None] = []
    for f in schema:
        if pa.types.is_dictionary(f.type):
            out.append(True)
        else:
            out.append(None if holds_dictionary(f.type) else False)
    return tuple(out)


def column_facts(desc: ColumnDescriptor, chunk: ColumnMetaData | None, footer: FileMetaData | None) -> ColumnFacts:
    """The facts the writer rules look at for one column chunk."""
    dictionary = chunk is not None and (
        chunk.dictionary_page_offset is not None or any(e in _DICTIONARY_ENCODINGS for e in chunk.encodings)
    )
    arrow_dictionary: bool | None = None
    stored = footer.key_value_metadata.get("ARROW:schema") if footer is not None else None
    if stored:
        fields = _arrow_dictionary_fields(stored)
        if fields is not None and 0 <= desc.top_level_field < len(fields):
            arrow_dictionary = fields[desc.top_level_field]
    return ColumnFacts(
        kind=_kind(desc),
        physical=desc.physical_type.name,
        precision=desc.precision,
        repeated=desc.max_repetition_level > 0,
        dictionary_encoded=dictionary,
        arrow_dictionary=arrow_dictionary,
    )


def writer_trust(footer: FileMetaData) -> StatisticsTrust:
    """The writer rules of a file (decided once per distinct ``created_by``)."""
    return parquet_trust(footer.created_by)


def distrusted_statistics(
    desc: ColumnDescriptor, chunk: ColumnMetaData | None, footer: FileMetaData | None, level: str = CHUNK
) -> frozenset[str]:
    """The statistics of a column chunk its writer is known to get wrong (:mod:`lazyscan.format.writers`)."""
    if footer is None:
        return _NOTHING
    trust = writer_trust(footer)
    if not trust:
        return _NOTHING
    return trust.distrusted(column_facts(desc, chunk, footer), level)


def decode_value(desc: ColumnDescriptor, raw: bytes) -> object | None:
    """One encoded statistics value in the Arrow storage domain; None if it cannot be used."""
    pt = desc.physical_type
    t = desc.arrow_type
    try:
        if pa.types.is_decimal(t):
            if pt in (PhysicalType.INT32, PhysicalType.INT64):
                return int.from_bytes(raw, "little", signed=True)
            return int.from_bytes(raw, "big", signed=True) if raw else None
        if pt == PhysicalType.BOOLEAN:
            return bool(raw[0]) if raw else None
        if pt == PhysicalType.INT32:
            if len(raw) != 4:
                return None
            return int.from_bytes(raw, "little", signed=not pa.types.is_unsigned_integer(t))
        if pt == PhysicalType.INT64:
            if len(raw) != 8:
                return None
            return int.from_bytes(raw, "little", signed=not pa.types.is_unsigned_integer(t))
        if pt == PhysicalType.FLOAT:
            if len(raw) != 4:
                return None
            v = struct.unpack("<f", raw)[0]
            return None if math.isnan(v) else float(v)
        if pt == PhysicalType.DOUBLE:
            if len(raw) != 8:
                return None
            v = struct.unpack("<d", raw)[0]
            return None if math.isnan(v) else float(v)
        if pa.types.is_float16(t):
            if len(raw) != 2:
                return None
            v = float(np.frombuffer(raw, dtype=np.float16)[0])
            return None if math.isnan(v) else v
        if pt in (PhysicalType.BYTE_ARRAY, PhysicalType.FIXED_LEN_BYTE_ARRAY):
            return bytes(raw)
    except (IndexError, ValueError, struct.error):
        return None
    return None


def decode_statistics(
    desc: ColumnDescriptor,
    stats: Statistics | None,
    num_values: int,
    type_defined_order: bool | None,
    *,
    chunk: ColumnMetaData | None = None,
    footer: FileMetaData | None = None,
) -> ColumnStats:
    """Row-group statistics of a column chunk (of ``num_values`` rows) in the storage domain.

    With the chunk's metadata and the footer, statistics its writer is known to get wrong are
    left out (:func:`distrusted_statistics`); statistics that contradict the row count or each
    other are always left out: a null count above the rows (or, for a flat column, a chunk
    whose value count is not its row count), bounds out of order, bounds beside a null count
    saying every value is NULL.
    """
    if stats is None:
        return ColumnStats(None, None, None, num_values)
    distrusted = distrusted_statistics(desc, chunk, footer, CHUNK)
    lo = hi = None
    if MIN_MAX not in distrusted and stats_usable(desc, stats.deprecated, type_defined_order):
        if stats.min_value is not None:
            lo = decode_value(desc, stats.min_value)
        if stats.max_value is not None:
            hi = decode_value(desc, stats.max_value)
        if not ordered_bounds(lo, hi):
            lo = hi = None
    nulls = None if NULL_COUNT in distrusted or desc.max_repetition_level > 0 else stats.null_count
    if chunk is not None and chunk.num_values != num_values:
        nulls = None  # a flat column holds one value (or NULL) per row
    nulls = plausible_count(nulls, num_values)
    if nulls is not None and nulls == num_values and lo is not None:
        nulls = None  # "every value is NULL" beside bounds of some value: one of them is wrong
    bytes_like = _is_bytes_like(desc)
    min_exact = bool(stats.min_exact) if bytes_like else stats.min_exact is not False
    max_exact = bool(stats.max_exact) if bytes_like else stats.max_exact is not False
    return ColumnStats(lo, hi, nulls, num_values, min_exact, max_exact, None)


def decode_column_index(
    desc: ColumnDescriptor,
    index: ColumnIndex,
    page_rows: list[int],
    type_defined_order: bool | None,
    *,
    chunk: ColumnMetaData | None = None,
    footer: FileMetaData | None = None,
    chunk_null_count: int | None = None,
) -> list[ColumnStats]:
    """Per-page statistics from a ColumnIndex (``page_rows``: rows in each page).

    Left out, besides what the writer rules name at page level: page null counts that do not
    add up to ``chunk_null_count`` (the chunk's trusted null count, when known), a page null
    count above the page's rows, a page marked "all NULL" whose null count says otherwise (it
    is kept only when the count confirms it; some writers mark pages that have no statistics),
    a page not marked "all NULL" whose null count says it is, and bounds out of order.
    """
    distrusted = distrusted_statistics(desc, chunk, footer, PAGE)
    usable = MIN_MAX not in distrusted and stats_usable(desc, False, type_defined_order)
    bytes_like = _is_bytes_like(desc)
    out = []
    counts = index.null_counts
    counts_valid = (
        counts is not None
        and NULL_COUNT not in distrusted
        and desc.max_repetition_level == 0
        and len(counts) == len(page_rows)
        and all(0 <= c <= rows for c, rows in zip(counts, page_rows))
        and (chunk_null_count is None or sum(counts) == chunk_null_count)
    )
    for i, rows in enumerate(page_rows):
        nulls = counts[i] if counts_valid and counts is not None else None
        if index.null_pages[i]:
            if nulls == rows:
                out.append(ColumnStats(None, None, rows, rows))
            else:
                out.append(ColumnStats(None, None, None, rows))
            continue
        if nulls is not None and nulls == rows and rows > 0:
            out.append(ColumnStats(None, None, None, rows))  # "not all NULL" against its own count
            continue
        lo = hi = None
        if usable:
            lo = decode_value(desc, index.min_values[i])
            hi = decode_value(desc, index.max_values[i])
            if not ordered_bounds(lo, hi):
                lo = hi = None
        # page-index binary bounds may be truncated and carry no exactness flag
        out.append(ColumnStats(lo, hi, nulls, rows, not bytes_like, not bytes_like, None))
    return out
