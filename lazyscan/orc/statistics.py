"""ORC column statistics as :class:`~lazyscan.parquet.statistics.ColumnStats`, the form the
predicate layer compares bound literals with (the Arrow storage domain of the column's type).

ORC counts the non-null values of a column in a stripe or row group, so with the unit's row
count the number of NULLs is exact. String bounds that a writer shortened (``lowerBound`` /
``upperBound``) are bounds but not attained values. Timestamp bounds are milliseconds in UTC,
widened to the column's unit; they are used only where the read values are UTC instants.
"""

from __future__ import annotations

import decimal
import math

import pyarrow as pa

from lazyscan.orc import proto as P
from lazyscan.parquet.statistics import ColumnStats

_UNITS_PER_MILLISECOND = {"ms": 1, "us": 1_000, "ns": 1_000_000}


def _unscaled(text: str | None, scale: int) -> tuple[int, bool] | None:
    """A decimal statistic as (the unscaled integer at ``scale``, rounded down; whether it is
    exact), or None when absent or not a number."""
    if text is None:
        return None
    try:
        d = decimal.Decimal(text).scaleb(scale)
    except decimal.InvalidOperation:
        return None
    if not d.is_finite():
        return None
    floor = d.to_integral_value(rounding=decimal.ROUND_FLOOR)
    return int(floor), floor == d


def column_stats(stats: P.ColumnStatistics | None, t: pa.DataType, rows: int, utc_timestamps: bool = True) -> ColumnStats | None:
    """The statistics of a column of Arrow type ``t`` over a unit of ``rows`` rows."""
    if stats is None:
        return None
    values = stats.number_of_values
    nulls = rows - values if values is not None and values <= rows else None
    if stats.has_null is False and nulls is None:
        nulls = 0
    lo = hi = None
    lo_exact = hi_exact = True
    if values == 0:
        return ColumnStats(None, None, nulls, rows)
    kind = stats.kind
    if (kind == "int" and pa.types.is_integer(t)) or (kind == "date" and pa.types.is_date32(t)):
        lo, hi = stats.minimum, stats.maximum
    elif kind == "double" and pa.types.is_floating(t):
        lo, hi = stats.minimum, stats.maximum
        if lo is not None and (math.isnan(lo) or math.isnan(hi)):
            lo = hi = None
        # ORC statistics do not say whether NaN values are present (nan_count stays None)
    elif kind == "string" and (pa.types.is_string(t) or pa.types.is_binary(t)):
        lo, hi = stats.minimum, stats.maximum
        if lo is None and stats.lower_bound is not None:
            lo, lo_exact = stats.lower_bound, False
        if hi is None and stats.upper_bound is not None:
            hi, hi_exact = stats.upper_bound, False
    elif kind == "decimal" and pa.types.is_decimal(t):
        low, high = _unscaled(stats.minimum, t.scale), _unscaled(stats.maximum, t.scale)
        if low is not None and high is not None:
            lo, lo_exact = low
            hi, hi_exact = high[0] + (0 if high[1] else 1), high[1]
    elif kind == "timestamp" and pa.types.is_timestamp(t) and utc_timestamps:
        if stats.minimum is not None and stats.maximum is not None:
            # milliseconds, truncated toward zero by writers: widen by one millisecond each way
            # (in the column's unit, whose values are floored)
            per_ms = _UNITS_PER_MILLISECOND[t.unit]
            lo = (stats.minimum - 1) * per_ms
            hi = (stats.maximum + 1) * per_ms - 1
            if stats.minimum < 0 and stats.maximum > -1000:
                # a value less than a second before 1970 (-0.5 s) is stored with second 0 and
                # reads one second later (0.5 s) than the statistics the writer took from it
                hi = max(hi, 1000 * per_ms - 1)
            lo_exact = hi_exact = False
    elif kind == "boolean" and pa.types.is_boolean(t) and stats.true_count is not None and values is not None:
        lo = stats.true_count >= values
        hi = stats.true_count > 0
    if lo is None or hi is None:
        lo = hi = None
    return ColumnStats(lo, hi, nulls, rows, lo_exact, hi_exact)
