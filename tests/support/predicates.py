"""Predicates written as Spark SQL for lazyscan and evaluated on a reference table with
``pyarrow.compute`` under Spark's semantics: three-valued logic, NaN equal to NaN and above
every other value, -0.0 equal to 0.0, strings and binaries in byte order."""

from __future__ import annotations

import datetime as dt
import decimal
import math
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tests.support.tables import plain_type


@dataclass(frozen=True)
class Predicate:
    """``column op values``, written as Spark SQL for lazyscan and evaluated on the reference
    with ``pyarrow.compute``."""

    column: str
    op: str  # "=", "<", ">=", "IN", "BETWEEN", "IS NULL", "IS NOT NULL"
    values: tuple[pa.Scalar, ...]

    def sql(self) -> str:
        col = "`" + self.column.replace("`", "``") + "`"
        lits = [sql_literal(v) for v in self.values]
        if self.op in ("IS NULL", "IS NOT NULL"):
            return f"{col} {self.op}"
        if self.op == "IN":
            return f"{col} IN ({', '.join(lits)})"  # type: ignore[arg-type]
        if self.op == "BETWEEN":
            return f"{col} BETWEEN {lits[0]} AND {lits[1]}"
        return f"{col} {self.op} {lits[0]}"

    def mask(self, column: pa.Array | pa.ChunkedArray) -> pa.Array:
        arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        arr = comparable(arr)
        if self.op == "IS NULL":
            return pc.is_null(arr)
        if self.op == "IS NOT NULL":
            return pc.is_valid(arr)
        vals = [_comparable_scalar(v, arr.type) for v in self.values]
        if self.op == "=":
            return _equal(arr, vals[0])
        if self.op == "<":
            return _less(arr, vals[0])
        if self.op == ">=":
            return pc.invert(_less(arr, vals[0]))
        if self.op == "IN":
            out = _equal(arr, vals[0])
            for v in vals[1:]:
                out = pc.or_kleene(out, _equal(arr, v))
            return out
        assert self.op == "BETWEEN"
        return pc.and_kleene(pc.invert(_less(arr, vals[0])), pc.invert(_less(vals[1], arr)))


def filtered(table: pa.Table, mask: pa.Array) -> pa.Table:
    """The rows where ``mask`` is true (``take``, which unlike ``filter`` handles unions)."""
    return table.take(pc.indices_nonzero(pc.fill_null(mask, False)))


def comparable(arr: pa.Array) -> pa.Array:
    if isinstance(arr.type, pa.ExtensionType):
        arr = arr.storage
    t = plain_type(arr.type)
    if arr.type != t:
        arr = arr.cast(t)
    if pa.types.is_float16(t):
        arr = arr.cast(pa.float32())
    return arr


def _comparable_scalar(v: pa.Scalar, t: pa.DataType) -> pa.Scalar:
    return v.cast(t) if v.type != t else v


def _is_nan(v: Any) -> bool:
    return isinstance(v, pa.Scalar) and pa.types.is_floating(v.type) and v.is_valid and math.isnan(float(v.as_py()))


def _equal(arr: pa.Array, v: pa.Scalar) -> pa.Array:
    if _is_nan(v):
        return pc.is_nan(arr)  # Spark: NaN = NaN
    return pc.equal(arr, v)


def _less(a: Any, b: Any) -> pa.Array:
    """``a < b`` where one side is an array, NaN above every other value (Spark's order)."""
    if isinstance(a, pa.Scalar):  # v < arr
        if _is_nan(a):
            return pc.if_else(pc.is_valid(b), False, None)
        result = pc.less(a, b)
        return pc.or_kleene(result, pc.is_nan(b)) if pa.types.is_floating(b.type) else result
    if _is_nan(b):
        return pc.invert(pc.is_nan(a))
    return pc.less(a, b)


def _timestamp_text(micros: int) -> str | None:
    """``YYYY-MM-DD HH:MM:SS.ffffff`` of microseconds since 1970, None outside years 1-9999."""
    try:
        when = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=micros)
    except OverflowError:
        return None
    return when.isoformat(sep=" ", timespec="microseconds")


def sql_literal(v: pa.Scalar) -> str | None:
    """A Spark SQL literal holding exactly ``v``, or None when SQL has no such literal here."""
    t = v.type
    if not v.is_valid:
        return None
    if pa.types.is_boolean(t):
        return "TRUE" if v.as_py() else "FALSE"
    if pa.types.is_integer(t):
        return str(v.as_py())
    if pa.types.is_floating(t):
        x = float(v.as_py())
        if math.isnan(x):
            return "CAST('NaN' AS DOUBLE)"
        if math.isinf(x):
            return "CAST('Infinity' AS DOUBLE)" if x > 0 else "CAST('-Infinity' AS DOUBLE)"
        return repr(x) + "D"
    if pa.types.is_decimal(t):
        d: decimal.Decimal = v.as_py()
        return format(d, "f") + "BD"
    if pa.types.is_string(t):
        s: str = v.as_py()
        return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t):
        return "X'" + v.as_py().hex().upper() + "'"
    if pa.types.is_date32(t):
        days = v.cast(pa.int32()).as_py()
        text = _timestamp_text(days * 86_400_000_000)
        return f"DATE '{text[:10]}'" if text else None
    if pa.types.is_timestamp(t):
        per_us = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": 1}[t.unit]
        raw = v.cast(pa.int64()).as_py()
        if t.unit == "ns":
            if raw % 1000:
                return None  # a literal holds microseconds
            raw //= 1000
        text = _timestamp_text(raw * per_us)
        if text is None:
            return None
        return f"TIMESTAMP '{text}'" if t.tz else f"TIMESTAMP_NTZ '{text}'"
    if pa.types.is_time(t):
        per_us = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": 1}[t.unit]
        raw = v.cast(pa.int64()).as_py()
        if t.unit == "ns":
            if raw % 1000:
                return None
            raw //= 1000
        text = _timestamp_text(raw * per_us)
        return f"TIME '{text[11:]}'" if text else None
    return None


def filterable(t: pa.DataType) -> bool:
    t = plain_type(t)
    return (
        pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
        or pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t)
        or pa.types.is_date32(t) or pa.types.is_timestamp(t) or pa.types.is_time(t)
    )
