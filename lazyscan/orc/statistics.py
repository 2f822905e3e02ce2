"""ORC column statistics as :class:`~lazyscan.format.statistics.ColumnStats`, the form the
predicate layer compares bound literals with (the Arrow storage domain of the column's type).

ORC counts the non-null values of a column in a stripe or row group, so with the unit's row
count the number of NULLs is exact. String bounds that a writer shortened (``lowerBound`` /
``upperBound``) are bounds but not attained values. Timestamp bounds are milliseconds in UTC,
widened to the column's unit; they are used only where the read values are UTC instants.
"""

from __future__ import annotations

import decimal
import math
from typing import Any

import numpy as np
import pyarrow as pa

from lazyscan.format.statistics import ColumnStats
from lazyscan.format.writers import (
    BLOOM_FILTER,
    MIN_MAX,
    NULL_COUNT,
    ColumnFacts,
    StatisticsTrust,
    orc_trust,
    ordered_bounds,
)
from lazyscan.orc import proto as P

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


def file_trust(postscript: P.PostScript, footer: P.Footer) -> StatisticsTrust:
    """The writer rules of an ORC file (:mod:`lazyscan.format.writers`), decided once per
    writer id, writer version and software version."""
    return orc_trust(footer.writer, postscript.writer_version, footer.software_version)


def bloom_filters_trusted(postscript: P.PostScript, footer: P.Footer, t: pa.DataType) -> bool:
    """Whether the Bloom filters of a column of Arrow type ``t`` may rule row groups out."""
    trust = file_trust(postscript, footer)
    return not trust or BLOOM_FILTER not in trust.distrusted(_facts(t))


def _facts(t: pa.DataType) -> ColumnFacts:
    if pa.types.is_timestamp(t):
        return ColumnFacts("timestamp", "timestamp")
    if pa.types.is_decimal(t):
        return ColumnFacts("decimal", "decimal", precision=t.precision)
    if pa.types.is_floating(t):
        return ColumnFacts("float", str(t))
    if pa.types.is_integer(t):
        return ColumnFacts("int", str(t))
    if pa.types.is_string(t):
        return ColumnFacts("string", "string")
    if pa.types.is_binary(t):
        return ColumnFacts("binary", "binary")
    if pa.types.is_date32(t):
        return ColumnFacts("date", "date")
    if pa.types.is_boolean(t):
        return ColumnFacts("boolean", "boolean")
    return ColumnFacts("other", str(t))


def _kinds_of(t: pa.DataType) -> tuple[str, ...]:
    """The kinds of statistics a column of Arrow type ``t`` may carry."""
    if pa.types.is_integer(t):
        return ("int",)
    if pa.types.is_floating(t):
        return ("double",)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return ("string",)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return ("binary", "string")
    if pa.types.is_date32(t):
        return ("date",)
    if pa.types.is_timestamp(t):
        return ("timestamp", "timestamp-local")
    if pa.types.is_decimal(t):
        return ("decimal",)
    if pa.types.is_boolean(t):
        return ("boolean",)
    return ()


#: kinds of statistics whose bounds writers merge exactly from the stripes' into the file's
_MERGED_EXACTLY = ("int", "date", "double", "decimal", "timestamp")


def stripes_agree_with_file(file: P.ColumnStatistics | None, stripes: list[P.ColumnStatistics | None]) -> bool:
    """Whether a column's statistics of every stripe agree with its file statistics, which
    writers merge from them: the value counts add up, and the least minimum and greatest maximum
    of the stripes are the file's (for kinds whose bounds merge exactly: integers, dates,
    doubles without NaN, decimals, timestamps). Missing statistics agree with anything."""
    known = [s for s in stripes if s is not None]
    if file is None or not stripes or len(known) != len(stripes):
        return True
    counts = [s.number_of_values for s in known]
    if file.number_of_values is not None and all(n is not None for n in counts) and sum(n or 0 for n in counts) != file.number_of_values:
        return False
    if file.kind not in _MERGED_EXACTLY or any(s.kind not in (None, file.kind) for s in known):
        return True
    bounds: list[tuple[Any, Any]] = [(s.minimum, s.maximum) for s in known if s.number_of_values != 0]
    if not bounds or any(lo is None or hi is None for lo, hi in [*bounds, (file.minimum, file.maximum)]):
        return True
    whole: tuple[Any, Any] = (file.minimum, file.maximum)
    if file.kind == "decimal":
        try:
            bounds = [(decimal.Decimal(lo), decimal.Decimal(hi)) for lo, hi in bounds]
            whole = (decimal.Decimal(whole[0]), decimal.Decimal(whole[1]))
        except decimal.InvalidOperation:
            return True
    if any(isinstance(v, float) and math.isnan(v) for b in [*bounds, whole] for v in b):
        return True
    return bool(min(lo for lo, _ in bounds) == whole[0] and max(hi for _, hi in bounds) == whole[1])


def _counts_contradict(stats: P.ColumnStatistics, rows: int) -> bool:
    """Whether the value count and the NULL flag contradict the unit's row count: more values
    than rows, ``hasNull`` false beside fewer values than rows (Hive 3.1 streaming ingest
    writes ``numberOfValues`` 0 with ``hasNull`` false for stripes holding values), or
    ``hasNull`` true beside a value for every row."""
    values = stats.number_of_values
    if values is None:
        return False
    return values < 0 or values > rows or (stats.has_null is False and values < rows) or (
        stats.has_null is True and values == rows and rows > 0
    )


def column_stats(
    stats: P.ColumnStatistics | None,
    t: pa.DataType,
    rows: int,
    utc_timestamps: bool = True,
    trust: StatisticsTrust | None = None,
) -> ColumnStats | None:
    """The statistics of a column of Arrow type ``t`` over a unit of ``rows`` rows.

    ``trust``: the file writer's rules (:func:`file_trust`); statistics they name are left
    out. Statistics whose counts contradict ``rows`` are not used at all; bounds out of order,
    outside the column type's range, or of doubles whose sum is NaN (a NaN first in a row
    group freezes ORC's min/max, ORC-629) are left out.
    """
    if stats is None:
        return None
    if stats.kind is not None and stats.kind not in _kinds_of(t):
        # statistics of another type than the column's (a footer whose types and statistics
        # disagree): even their counts may be another column's
        return None
    if _counts_contradict(stats, rows):
        return ColumnStats(None, None, None, rows)
    distrusted = trust.distrusted(_facts(t)) if trust else frozenset()
    values = stats.number_of_values
    nulls = rows - values if values is not None else None
    if stats.has_null is False and nulls is None:
        nulls = 0
    if NULL_COUNT in distrusted:
        nulls = None
    lo = hi = None
    lo_exact = hi_exact = True
    if values == 0 or MIN_MAX in distrusted:
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
    elif (
        kind == "boolean" and pa.types.is_boolean(t) and stats.true_count is not None and values is not None
        and 0 <= stats.true_count <= values
    ):
        lo = stats.true_count >= values
        hi = stats.true_count > 0
    if kind == "double" and stats.sum is not None and math.isnan(stats.sum):
        lo = hi = None
    if pa.types.is_integer(t) and lo is not None and hi is not None:
        info = np.iinfo(t.to_pandas_dtype())
        if lo < int(info.min) or hi > int(info.max):
            lo = hi = None  # bounds the column's type cannot hold
    if not ordered_bounds(lo, hi):
        lo = hi = None
    return ColumnStats(lo, hi, nulls, rows, lo_exact, hi_exact)
