"""Spark's pushed filters as lazyscan predicates.

Spark hands a Python data source a list of filters (an AND) built from the classes of
:mod:`pyspark.sql.datasource`: ``EqualTo``, ``EqualNullSafe``, ``GreaterThan``,
``GreaterThanOrEqual``, ``LessThan``, ``LessThanOrEqual``, ``In``, ``IsNull``, ``IsNotNull``,
``StringStartsWith``, ``StringEndsWith``, ``StringContains``, each possibly wrapped once in
``Not``. Spark 4.1-4.3 never pushes ``And``/``Or`` trees to Python sources: a disjunction stays
in Spark. Columns arrive as tuples of names, values as Python objects already cast by Spark to
the column's type (TIMESTAMP as an aware ``datetime`` in UTC, TIMESTAMP_NTZ naive, DECIMAL as
``Decimal``, BINARY as ``bytes``, ``In`` values as a list that may hold ``None``).

:func:`convert_filter` gives the lazyscan expression with the same three-valued result, or
``None`` when lazyscan cannot evaluate the filter exactly (nested fields, array/map values,
string filters on binary columns, columns that are in no file); those go back to Spark.
Semantics match because :mod:`lazyscan.predicate` implements Spark's (NaN equal to NaN and above
every number, ``-0.0 = 0.0``, strings compared as UTF-8 bytes). INT96 columns are read with
nanoseconds but Spark truncates them to microseconds first; comparisons on them are rewritten
on the truncated value (``c > t`` becomes ``c >= t + 1 µs``).
"""

from __future__ import annotations

import datetime as dt
import decimal
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.types import BinaryType, DataType, StringType

from lazyscan.errors import PredicateError
from lazyscan.predicate import FALSE, Column, Expr, col, lit
from lazyscan.predicate.expr import Literal
from lazyscan.spark.compat import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)

_COMPARISONS: dict[type, str] = {
    EqualTo: "=",
    GreaterThan: ">",
    GreaterThanOrEqual: ">=",
    LessThan: "<",
    LessThanOrEqual: "<=",
}
_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "=": operator.eq,
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}
_STRING_FILTERS: dict[type, Callable[[Column, str], Expr]] = {
    StringStartsWith: lambda c, v: c.startswith(v),
    StringEndsWith: lambda c, v: c.endswith(v),
    StringContains: lambda c, v: c.contains(v),
}
_SCALARS = (bool, int, float, str, bytes, decimal.Decimal, dt.date, dt.datetime)


@dataclass(frozen=True)
class FilterColumn:
    """A column filters may reference: the name the scan knows it by, its Spark type, and its
    Arrow type in the scan's schema (``None`` when no file holds it)."""

    scan_name: str
    spark_type: DataType
    arrow_type: pa.DataType | None


def _compare(c: Column, op: str, value: Any, truncate_nanos: bool) -> Expr:
    micros = lit(value)
    if not truncate_nanos or micros.kind != "timestamp":
        result: Expr = _OPERATORS[op](c, micros)
        return result
    nxt = Literal(micros.value + 1, "timestamp")
    if op == "=":
        return (c >= micros) & (c < nxt)
    if op == ">":
        return c >= nxt
    if op == ">=":
        return c >= micros
    if op == "<":
        return c < micros
    return c < nxt  # "<="


def _positive(f: Filter, column: FilterColumn, negated: bool) -> Expr | None:
    c = col(column.scan_name)
    ns = bool(
        column.arrow_type is not None
        and pa.types.is_timestamp(column.arrow_type)
        and column.arrow_type.unit == "ns"
    )
    op = _COMPARISONS.get(type(f))
    if op is not None:
        value = f.value  # type: ignore[attr-defined]
        if value is None or not isinstance(value, _SCALARS):
            return None
        e = _compare(c, op, value, ns)
        return ~e if negated else e
    if isinstance(f, EqualNullSafe):
        if f.value is None:
            return c.is_not_null() if negated else c.is_null()
        if not isinstance(f.value, _SCALARS):
            return None
        if ns:
            e = _compare(c, "=", f.value, True)
            return (c.is_null() | ~e) if negated else e
        e = c.eq_null_safe(f.value)
        return ~e if negated else e
    if isinstance(f, In):
        values = list(f.value)
        if not all(v is None or isinstance(v, _SCALARS) for v in values):
            return None
        present = [v for v in values if v is not None]
        if negated and len(present) < len(values):
            return FALSE  # NOT (x IN (..., NULL)) is never true
        if not present:
            return FALSE
        if ns:
            e = _compare(c, "=", present[0], True)
            for v in present[1:]:
                e = e | _compare(c, "=", v, True)
        else:
            e = c.isin(present)
        return ~e if negated else e
    if isinstance(f, IsNull):
        return c.is_not_null() if negated else c.is_null()
    if isinstance(f, IsNotNull):
        return c.is_null() if negated else c.is_not_null()
    build = _STRING_FILTERS.get(type(f))
    if build is not None:
        if not isinstance(column.spark_type, StringType) or not isinstance(f.value, str):  # type: ignore[attr-defined]
            return None
        e = build(c, f.value)  # type: ignore[attr-defined]
        return ~e if negated else e
    return None


def convert_filter(f: Filter, resolve: Callable[[tuple[str, ...]], FilterColumn | None]) -> Expr | None:
    """The lazyscan expression equivalent to ``f``, or ``None`` when Spark must evaluate it.

    ``resolve`` maps a Spark column path to the column it names, or ``None`` when it names no
    column lazyscan can filter on.
    """
    negated = False
    while isinstance(f, Not):
        negated = not negated
        f = f.child
    attribute = getattr(f, "attribute", None)
    if not isinstance(attribute, tuple) or len(attribute) != 1:
        return None
    column = resolve(attribute)
    if column is None or column.arrow_type is None:
        return None
    if isinstance(column.spark_type, BinaryType) and type(f) in _STRING_FILTERS:
        return None
    try:
        return _positive(f, column, negated)
    except (PredicateError, TypeError, ValueError, OverflowError):
        return None


def convert_filters(
    filters: Sequence[Filter], resolve: Callable[[tuple[str, ...]], FilterColumn | None]
) -> tuple[list[Expr], list[Filter]]:
    """Split ``filters`` into converted expressions and the filters Spark keeps (by reference)."""
    pushed: list[Expr] = []
    kept: list[Filter] = []
    for f in filters:
        e = convert_filter(f, resolve)
        if e is None:
            kept.append(f)
        else:
            pushed.append(e)
    return pushed, kept
