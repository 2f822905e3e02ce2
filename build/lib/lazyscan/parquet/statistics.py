"""Column statistics in a form the predicate layer can compare against.

Values are in the *Arrow storage domain* of the column's Arrow type, so a bound literal and a
statistic compare with plain Python operators:

- integers, dates (days), times and timestamps (in the Arrow type's unit), decimals (unscaled
  integer at the column's scale): ``int``
- float16 / float32 / float64: ``float`` (never NaN; writers leave NaN out of min/max)
- boolean: ``bool``
- string, binary, fixed-size binary: ``bytes`` (UTF-8 for strings, compared bytewise)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ColumnStats:
    """Statistics of one column over a row group or a page.

    ``min``/``max`` are ``None`` when unknown. They are always bounds (``min`` <= every non-null,
    non-NaN value <= ``max``); ``min_exact``/``max_exact`` tell whether they are also attained
    (binary statistics may be truncated). ``nan_count`` is ``None`` when the file does not say
    whether NaN values are present: then a float column may hold NaN beyond ``max``.
    """

    min: Any | None
    max: Any | None
    null_count: int | None
    num_values: int | None
    min_exact: bool = True
    max_exact: bool = True
    nan_count: int | None = None

    @property
    def all_null(self) -> bool:
        return (
            self.null_count is not None
            and self.num_values is not None
            and self.null_count == self.num_values
        )


# ------------------------------------------------------------------------------------------
# decoding raw Parquet statistics

import math  # noqa: E402
import struct  # noqa: E402

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

from lazyscan.parquet.metadata import ColumnIndex, PhysicalType, Statistics  # noqa: E402
from lazyscan.parquet.schema import ColumnDescriptor  # noqa: E402


def _is_bytes_like(desc: ColumnDescriptor) -> bool:
    t = desc.arrow_type
    return pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t)


def stats_usable(desc: ColumnDescriptor, deprecated: bool, type_defined_order: bool | None) -> bool:
    """Whether min/max of this column can be trusted for comparisons."""
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
) -> ColumnStats:
    """Row-group statistics of a column chunk in the storage domain."""
    if stats is None:
        return ColumnStats(None, None, None, num_values)
    lo = hi = None
    if stats_usable(desc, stats.deprecated, type_defined_order):
        if stats.min_value is not None:
            lo = decode_value(desc, stats.min_value)
        if stats.max_value is not None:
            hi = decode_value(desc, stats.max_value)
        if lo is None or hi is None:
            lo = hi = None
    bytes_like = _is_bytes_like(desc)
    min_exact = bool(stats.min_exact) if bytes_like else stats.min_exact is not False
    max_exact = bool(stats.max_exact) if bytes_like else stats.max_exact is not False
    return ColumnStats(lo, hi, stats.null_count, num_values, min_exact, max_exact, None)


def decode_column_index(
    desc: ColumnDescriptor, index: ColumnIndex, page_rows: list[int], type_defined_order: bool | None
) -> list[ColumnStats]:
    """Per-page statistics from a ColumnIndex (``page_rows``: rows in each page)."""
    usable = stats_usable(desc, False, type_defined_order)
    bytes_like = _is_bytes_like(desc)
    out = []
    counts_valid = index.null_counts is not None and all(c >= 0 for c in index.null_counts)
    for i, rows in enumerate(page_rows):
        nulls = index.null_counts[i] if counts_valid and index.null_counts is not None else None
        if index.null_pages[i]:
            # trusted only when the page's null count confirms it (some writers emit null_pages
            # for pages without statistics)
            if nulls == rows:
                out.append(ColumnStats(None, None, rows, rows))
            else:
                out.append(ColumnStats(None, None, None, rows))
            continue
        lo = hi = None
        if usable:
            lo = decode_value(desc, index.min_values[i])
            hi = decode_value(desc, index.max_values[i])
            if lo is None or hi is None:
                lo = hi = None
        # page-index binary bounds may be truncated and carry no exactness flag
        out.append(ColumnStats(lo, hi, nulls, rows, not bytes_like, not bytes_like, None))
    return out
