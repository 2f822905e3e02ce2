"""Bind an expression to an Arrow schema: resolve columns, coerce literals the way Spark does.

:func:`bind` is the only entry point. It resolves every column reference once (exact name
first, then case-insensitively when one name matches, as Spark's default
``spark.sql.caseSensitive=false``; exactly only with ``case_sensitive=True``), and
turns every ``column op literal`` into an equivalent comparison *in the column's own type*, so
evaluation and pruning never convert values per row.

How literals are coerced (Spark 4 type coercion, ANSI mode; session time zone UTC):

=====================  =====================================================================
column type            literal kinds accepted and the domain of the comparison
=====================  =====================================================================
integers               integer / decimal: exact; float / double: DOUBLE (the column is
                       rounded to double, as Spark casts it); string: parsed as BIGINT
                       (uint64 is Spark's DECIMAL(20,0): a string is parsed as DOUBLE)
decimal(p, s)          integer / decimal: exact; float / double / string: DOUBLE
float16/32/64          any number or string: DOUBLE (the column widens exactly)
boolean                boolean; string ('t', 'true', 'y', 'yes', '1', 'f', ... as Spark)
string types           string only (Spark would cast the *column* to the literal's type and
                       fail at run time on malformed values; quote the literal instead)
binary types           binary; string (as UTF-8 bytes)
date32 / date64        date; string (parsed as DATE); timestamp (the date is midnight UTC)
timestamp[unit, tz]    timestamp / timestamp_ntz / date; string (a zone in the string is
                       honoured for tz-aware columns and ignored for naive ones; no zone
                       means UTC)
time32 / time64        time; string
=====================  =====================================================================

Decimal comparisons use Spark 4's common decimal type: when it would need more than 38 digits
its scale is cut (integral digits are kept, SPARK-45905) and both sides are rounded half up,
so ``dec38_10_col = 0.00000000001`` is ``dec38_10_col = 0``. An IN list is coerced to the common
type of the column and all its items, folded left to right as Spark does, and its strings are
cast to that type (``bigint_col IN ('1.5', 2.5)`` compares as DECIMAL, ``date_col IN
('2020-01-01 10:00', TIMESTAMP '...')`` as TIMESTAMP).

A malformed string (``int_col = 'abc'``) or an impossible comparison (``int_col = DATE
'2020-01-01'``) raises :class:`PredicateError` naming the column and the literal. Spark raises
some of these only at run time and only when a row is evaluated (an all-NULL column never
fails); binding raises them always.

Known, deliberate differences from Spark 4.3 (all verified against it):

- a string column compared with a number, boolean or date is rejected (Spark casts the column
  and fails at run time on values that do not parse);
- Spark answers FALSE (TRUE under NOT) instead of NULL when a NULL BIGINT is compared with an
  integer or decimal literal outside the BIGINT range (``i64 >= 9223372036854775808``; an
  optimizer rewrite drops the NULL check); binding keeps SQL's NULL, which keeps the same
  rows except under NOT;
- ``CAST(lit AS DECIMAL(p, s))`` types the literal by its value's own digits, not (p, s); the
  result differs only when the common decimal type would exceed 38 digits;
- time-only timestamp strings ('10:00:00', which Spark reads on the current date) are
  rejected.

Comparisons are exact: each is reduced to an interval of the column's storage values (for a
DOUBLE-domain comparison, by binary search with the same correctly rounded conversion Spark
uses), and the interval becomes ``=``, ``<=``, ``>=``, a range, or a constant when the literal
lies outside the column's range (``int8_col = 1000`` is false for every non-NULL value).

NOT is pushed down to the leaves (``NOT (x < 5)`` is ``x >= 5``, valid in three-valued logic
and in Spark's total order of floating-point values), and TRUE/FALSE constants are folded.
"""

from __future__ import annotations

import decimal
import math
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa

from lazyscan.errors import PredicateError
from lazyscan.predicate import casts
from lazyscan.predicate.bound import (
    BoundAnd,
    BoundCompare,
    BoundConstant,
    BoundExpr,
    BoundIn,
    BoundIsNull,
    BoundKeyIn,
    BoundLike,
    BoundLiteral,
    BoundNonNullConstant,
    BoundNot,
    BoundOr,
    BoundRef,
    LikeMatcher,
    evaluation_type,
    re2_escape,
    value_type,
)
from lazyscan.predicate.expr import (
    NEGATED,
    And,
    Compare,
    Constant,
    Expr,
    In,
    IsNull,
    KeyIn,
    Like,
    Literal,
    Not,
    Or,
    Ref,
    render_column,
    render_literal,
)

# ---------------------------------------------------------------------------------------------
# column kinds


@dataclass(frozen=True)
class ColumnKind:
    """What binding needs to know about a column type.

    ``family``: bool, int, float, decimal, string, binary, date, time, timestamp.
    ``lo``/``hi``: the range of storage values (integer-like families).
    ``units``: storage units per unit of the literal's natural scale (per day for dates, per
    microsecond for times and timestamps, 10**scale for decimals).
    """

    family: str
    lo: int = 0
    hi: int = 0
    units: Fraction = Fraction(1)
    spark_decimal: bool = False  # uint64 is DECIMAL(20, 0) in Spark
    float_bits: int = 0
    fixed_width: int | None = None
    decimal_type: tuple[int, int] = (0, 0)  # Spark's DecimalType.forType: (precision, scale)


_UNITS_PER_SECOND = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}


def column_kind(arrow_type: pa.DataType) -> ColumnKind | None:
    """The :class:`ColumnKind` of an Arrow type, or None when predicates cannot compare it."""
    t = value_type(arrow_type)
    if pa.types.is_boolean(t):
        return ColumnKind("bool")
    if pa.types.is_integer(t):
        bits = t.bit_width
        if pa.types.is_signed_integer(t):
            lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
            spark_digits = {8: 3, 16: 5, 32: 10, 64: 20}[bits]  # TINYINT..BIGINT
        else:  # Spark reads uint8/16/32 as SMALLINT/INT/BIGINT, uint64 as DECIMAL(20, 0)
            lo, hi = 0, 2**bits - 1
            spark_digits = {8: 5, 16: 10, 32: 20, 64: 20}[bits]
        return ColumnKind(
            "int", lo, hi, spark_decimal=bits == 64 and lo == 0, decimal_type=(spark_digits, 0)
        )
    if pa.types.is_floating(t):
        return ColumnKind("float", float_bits={16: 11, 32: 24, 64: 53}[t.bit_width])
    if pa.types.is_decimal(t):
        # the storage's range, not the declared precision's: a file may hold values of more
        # digits than its precision, which readers keep whole (pyarrow, Spark's vectorized
        # reader), and Spark compares them with a wider literal by widening both
        # (DecimalPrecision): only what the storage cannot hold is certain
        bits = t.bit_width
        return ColumnKind(
            "decimal", -(2 ** (bits - 1)), 2 ** (bits - 1) - 1, Fraction(10**t.scale),
            decimal_type=(t.precision, t.scale),
        )
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return ColumnKind("string")
    if pa.types.is_fixed_size_binary(t):
        return ColumnKind("binary", fixed_width=t.byte_width)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return ColumnKind("binary")
    if pa.types.is_date32(t):
        return ColumnKind("date", -(2**31), 2**31 - 1, Fraction(1))
    if pa.types.is_date64(t):
        return ColumnKind("date", casts.INT64_MIN, casts.INT64_MAX, Fraction(86_400_000))
    if pa.types.is_timestamp(t):
        return ColumnKind(
            "timestamp",
            casts.INT64_MIN,
            casts.INT64_MAX,
            Fraction(_UNITS_PER_SECOND[t.unit], casts.MICROS_PER_SECOND),
        )
    if pa.types.is_time(t):
        bits = t.bit_width
        return ColumnKind(
            "time",
            -(2 ** (bits - 1)),
            2 ** (bits - 1) - 1,
            Fraction(_UNITS_PER_SECOND[t.unit], casts.MICROS_PER_SECOND),
        )
    return None


# ---------------------------------------------------------------------------------------------
# literal values in the column's domain

_EXACT, _ROUNDED, _DOUBLE, _BYTES, _BOOL = "exact", "rounded", "double", "bytes", "bool"


@dataclass(frozen=True)
class _DomainValue:
    """A literal in the domain its comparison with the column happens in.

    exact: ``Fraction`` in storage units; rounded: ``(R, k)``, Spark compares the column
    rounded half-up to ``k`` fewer decimal digits with the integer ``R`` (a decimal comparison
    whose common type lost scale); double: ``float`` (Spark compares in DOUBLE); bytes:
    ``bytes``; bool: ``bool``.
    """

    domain: str
    value: Any


def _mismatch(ref: BoundRef, lit: Literal, hint: str = "") -> PredicateError:
    message = (
        f"cannot compare column {render_column(ref.name)} of type {ref.value_type} with "
        f"{lit.kind} literal {render_literal(lit)}"
    )
    return PredicateError(message + (f": {hint}" if hint else ""))


def _cast_error(ref: BoundRef, lit: Literal, err: PredicateError) -> PredicateError:
    return PredicateError(
        f"literal {render_literal(lit)} cannot be compared with column "
        f"{render_column(ref.name)} of type {ref.value_type}: {err}"
    )


def _literal_decimal_type(lit: Literal, minimal: bool) -> tuple[int, int]:
    """Spark's DecimalType of an integer or decimal literal.

    In a binary comparison an integer literal gets the precision it needs (Spark's
    ``literalPickMinimumPrecision``); in an IN list it keeps INT / BIGINT precision.
    """
    if lit.kind == "decimal":
        return casts.decimal_precision(lit.value)
    digits = len(str(abs(lit.value)))
    if minimal:
        return (digits, 0)
    if -(2**31) <= lit.value < 2**31:
        return (10, 0)
    if casts.INT64_MIN <= lit.value <= casts.INT64_MAX:
        return (20, 0)
    return (digits, 0)


def _wider_decimal(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    """Spark 4's ``widerDecimalType`` (bounded preferring integral digits, SPARK-45905)."""
    scale = max(a[1], b[1])
    integral = max(a[0] - a[1], b[0] - b[1])
    precision = integral + scale
    if precision <= casts.MAX_DECIMAL_PRECISION:
        return (precision, scale)
    return (casts.MAX_DECIMAL_PRECISION, max(0, scale - (precision - casts.MAX_DECIMAL_PRECISION)))


def _common_scale(kind: ColumnKind, literals: list[Literal], minimal: bool) -> int | None:
    """Scale of the decimal type Spark compares in, or None when no decimal is involved."""
    exact = [v for v in literals if v.kind in ("integer", "decimal")]
    if not exact or (kind.family == "int" and all(v.kind == "integer" for v in exact)):
        return None
    common = kind.decimal_type
    for v in exact:
        common = _wider_decimal(common, _literal_decimal_type(v, minimal))
    return common[1]


def _round_half_up_div(u: int, divisor: int) -> int:
    q, r = divmod(abs(u), divisor)
    if 2 * r >= divisor:
        q += 1
    return q if u >= 0 else -q


def _as_double(lit: Literal) -> float:
    if lit.kind in ("float", "double"):
        return float(lit.value)
    if lit.kind in ("integer", "decimal"):
        return casts.nearest_float(Fraction(lit.value), 53)
    if lit.kind == "string":
        return casts.parse_double_string(lit.value)
    raise TypeError(lit.kind)


def _coerce(
    ref: BoundRef,
    kind: ColumnKind,
    lit: Literal,
    *,
    force_double: bool,
    scale: int | None = None,
) -> _DomainValue:
    """The literal in the domain where Spark compares it with this column.

    ``scale``: the scale of Spark's common decimal type (see :func:`_common_scale`).
    """
    k, v, fam = lit.kind, lit.value, kind.family
    try:
        if fam in ("int", "decimal"):
            if k in ("integer", "decimal") and not force_double:
                column_scale = kind.decimal_type[1]
                if scale is None or (k == "integer" and scale >= column_scale):
                    return _DomainValue(_EXACT, Fraction(v) * kind.units)
                rounded = casts.round_decimal(decimal.Decimal(v), scale)
                if scale >= column_scale:
                    return _DomainValue(_EXACT, Fraction(rounded) * kind.units)
                target = int(rounded.scaleb(scale, context=decimal.Context(prec=100)))
                return _DomainValue(_ROUNDED, (target, column_scale - scale))
            if k in ("integer", "decimal", "float", "double"):
                return _DomainValue(_DOUBLE, _as_double(lit))
            if k == "string":
                if fam == "int" and not kind.spark_decimal and not force_double:
                    return _DomainValue(_EXACT, Fraction(casts.parse_integer_string(v)))
                return _DomainValue(_DOUBLE, casts.parse_double_string(v))
            raise _mismatch(ref, lit)
        if fam == "float":
            if k in ("integer", "decimal", "float", "double", "string"):
                return _DomainValue(_DOUBLE, _as_double(lit))
            raise _mismatch(ref, lit)
        if fam == "bool":
            if k == "boolean":
                return _DomainValue(_BOOL, v)
            if k == "string":
                return _DomainValue(_BOOL, casts.parse_boolean_string(v))
            raise _mismatch(ref, lit)
        if fam == "string":
            if k == "string":
                return _DomainValue(_BYTES, v.encode("utf-8"))
            raise _mismatch(
                ref,
                lit,
                "Spark would cast every value of the string column to "
                f"{k.upper()} and fail at run time on values that do not parse; "
                "compare with a quoted string literal instead",
            )
        if fam == "binary":
            if k == "binary":
                return _DomainValue(_BYTES, v)
            if k == "string":
                return _DomainValue(_BYTES, v.encode("utf-8"))
            raise _mismatch(ref, lit)
        if fam == "date":
            if k == "date":
                return _DomainValue(_EXACT, Fraction(v) * kind.units)
            if k == "string":
                return _DomainValue(_EXACT, Fraction(casts.parse_date_string(v)) * kind.units)
            if k in ("timestamp", "timestamp_ntz"):
                return _DomainValue(_EXACT, Fraction(v, casts.MICROS_PER_DAY) * kind.units)
            raise _mismatch(ref, lit)
        if fam == "timestamp":
            if k in ("timestamp", "timestamp_ntz"):
                return _DomainValue(_EXACT, Fraction(v) * kind.units)
            if k == "date":
                return _DomainValue(_EXACT, Fraction(v * casts.MICROS_PER_DAY) * kind.units)
            if k == "string":
                ntz = value_type(ref.type).tz is None
                micros = casts.parse_timestamp_string(v, ntz=ntz)
                return _DomainValue(_EXACT, Fraction(micros) * kind.units)
            raise _mismatch(ref, lit)
        if fam == "time":
            if k == "time":
                return _DomainValue(_EXACT, Fraction(v) * kind.units)
            if k == "string":
                return _DomainValue(_EXACT, Fraction(casts.parse_time_string(v)) * kind.units)
            raise _mismatch(ref, lit)
    except casts.CastError as e:
        raise _cast_error(ref, lit, e) from e
    raise _mismatch(ref, lit)  # pragma: no cover


# Spark types for IN-list coercion: ("integral", digits) | ("decimal", p, s) | ("float",) |
# ("double",) | ("string",) | ("date",) | ("timestamp",) | ("timestamp_ntz",) | (other,)
SparkType = tuple[Any, ...]


def _column_spark_type(kind: ColumnKind, ref: BoundRef) -> SparkType:
    if kind.family == "int":
        if kind.spark_decimal:
            return ("decimal", *kind.decimal_type)
        return ("integral", kind.decimal_type[0])
    if kind.family == "decimal":
        return ("decimal", *kind.decimal_type)
    if kind.family == "float":
        return ("double",) if kind.float_bits == 53 else ("float",)
    if kind.family == "timestamp":
        return ("timestamp",) if value_type(ref.type).tz is not None else ("timestamp_ntz",)
    return (kind.family,)


def _literal_spark_type(lit: Literal) -> SparkType:
    if lit.kind == "integer":
        p, _ = _literal_decimal_type(lit, minimal=False)
        in_bigint = casts.INT64_MIN <= lit.value <= casts.INT64_MAX
        return ("integral", p) if in_bigint else ("decimal", p, 0)
    if lit.kind == "decimal":
        return ("decimal", *casts.decimal_precision(lit.value))
    return ({"boolean": "bool"}.get(lit.kind, lit.kind),)


_DATETIME_RANK = {"date": 0, "timestamp_ntz": 1, "timestamp": 2}


def _wider_type(a: SparkType, b: SparkType) -> SparkType | None:
    """Spark 4's (ANSI) wider common type of two types, as used to coerce IN lists."""
    if a == b:
        return a
    if b[0] == "string":
        a, b = b, a
    if a[0] == "string":
        if b[0] == "decimal" or b[0] == "float":
            return ("double",)
        return b  # the string is cast to the other type
    numeric = ("integral", "decimal", "float", "double")
    if a[0] in numeric and b[0] in numeric:
        if "double" in (a[0], b[0]) or "float" in (a[0], b[0]):
            both_float = {a[0], b[0]} == {"float"}
            return ("float",) if both_float else ("double",)
        if a[0] == b[0] == "integral":
            return ("integral", max(a[1], b[1]))
        da = a[1:] if a[0] == "decimal" else (a[1], 0)
        db = b[1:] if b[0] == "decimal" else (b[1], 0)
        return ("decimal", *_wider_decimal(da, db))
    if a[0] in _DATETIME_RANK and b[0] in _DATETIME_RANK:
        return a if _DATETIME_RANK[a[0]] >= _DATETIME_RANK[b[0]] else b
    return None


def _in_common_type(kind: ColumnKind, ref: BoundRef, values: list[Literal]) -> SparkType | None:
    """The type Spark casts an IN list and its column to (folded left to right), or None."""
    common: SparkType | None = _column_spark_type(kind, ref)
    for v in values:
        if common is None:
            return None
        common = _wider_type(common, _literal_spark_type(v))
    return common


_STRING_CAST_TARGET = {
    "integral": ("bigint", ()),
    "double": ("double", ()),
    "float": ("double", ()),
    "date": ("date", ()),
    "timestamp": ("timestamp", ()),
    "timestamp_ntz": ("timestamp_ntz", ()),
}


# ---------------------------------------------------------------------------------------------
# storage values and Arrow scalars


def make_literal(ref: BoundRef, storage: Any) -> BoundLiteral:
    """A :class:`BoundLiteral` for a value in the column's storage domain."""
    t = ref.value_type
    et = evaluation_type(ref.type)
    if pa.types.is_decimal(t):
        # from the unscaled integer: it may have more digits than the type's precision
        raw = pa.py_buffer(int(storage).to_bytes(t.bit_width // 8, "little", signed=True))
        scalar = pa.Array.from_buffers(et, 1, [None, raw])[0]
    elif pa.types.is_string(et) or pa.types.is_large_string(et) or pa.types.is_string_view(et):
        scalar = scalar_of(storage.decode("utf-8"), et)
    elif pa.types.is_floating(t):
        storage = float(storage)
        scalar = scalar_of(storage, et)
    else:
        scalar = scalar_of(storage, et)
    return BoundLiteral(storage, scalar)


_PACKED_INTS = {(8, True): "<b", (16, True): "<h", (32, True): "<i", (64, True): "<q",
                (8, False): "<B", (16, False): "<H", (32, False): "<I", (64, False): "<Q"}


def scalar_of(value: Any, t: pa.DataType) -> pa.Scalar:
    """``pa.scalar(value, type=t)``, built from buffers for the common cases: pyarrow converts
    a Python value only after checking it is no pandas object, which imports pandas (0.2 s in
    a fresh process, such as the Spark worker that plans a read)."""
    data: bytes | None = None
    offsets: bytes | None = None
    if isinstance(value, bool):
        if pa.types.is_boolean(t):
            data = b"\x01" if value else b"\x00"
    elif isinstance(value, int):
        signed = pa.types.is_signed_integer(t) or pa.types.is_temporal(t)
        fmt = _PACKED_INTS.get((t.bit_width, signed)) if (pa.types.is_integer(t) or pa.types.is_temporal(t)) else None
        if fmt is not None and not pa.types.is_interval(t):
            try:
                data = struct.pack(fmt, value)
            except struct.error:  # out of the type's range: pyarrow says so
                data = None
    elif isinstance(value, float):
        if pa.types.is_float32(t):
            data = struct.pack("<f", value)
        elif pa.types.is_float64(t):
            data = struct.pack("<d", value)
    elif isinstance(value, (str, bytes)):
        raw = value.encode("utf-8") if isinstance(value, str) else value
        text = isinstance(value, str)
        if (pa.types.is_string(t) and text) or (pa.types.is_binary(t) and not text):
            offsets, data = struct.pack("<ii", 0, len(raw)), raw
        elif (pa.types.is_large_string(t) and text) or (pa.types.is_large_binary(t) and not text):
            offsets, data = struct.pack("<qq", 0, len(raw)), raw
    if data is None:
        return pa.scalar(value, type=t)
    buffers = [None, pa.py_buffer(data)] if offsets is None else [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    return pa.Array.from_buffers(t, 1, buffers)[0]


# ---------------------------------------------------------------------------------------------
# intervals of storage values


def _float_key(x: float) -> tuple[int, float]:
    return (1, 0.0) if math.isnan(x) else (0, x)


@dataclass(frozen=True)
class _Universe:
    """Ordered storage values of a column: ``lo``..``hi`` with a sort key."""

    lo: Any
    hi: Any
    key: Callable[[Any], Any]


_INT_KEY: Callable[[Any], Any] = lambda x: x  # noqa: E731


def _first_true(lo: int, hi: int, pred: Callable[[int], bool]) -> int:
    """Smallest u in [lo, hi] with pred(u) for a monotone pred, or hi + 1."""
    a, b = lo, hi + 1
    while a < b:
        mid = (a + b) // 2
        if pred(mid):
            b = mid
        else:
            a = mid + 1
    return a


@dataclass(frozen=True)
class _Thresholds:
    """For a literal v: smallest storage value >= v (``ge``) and > v (``gt``), largest <= v
    (``le``) and < v (``lt``); None when there is none."""

    ge: Any
    gt: Any
    le: Any
    lt: Any


def _int_thresholds(kind: ColumnKind, dv: _DomainValue) -> _Thresholds:
    lo, hi = kind.lo, kind.hi
    if dv.domain == _EXACT:
        r: Fraction = dv.value
        fl, ce = math.floor(r), math.ceil(r)
        ge, gt, le, lt = ce, fl + 1, fl, ce - 1
    elif dv.domain == _ROUNDED:
        target, shift = dv.value
        divisor_r = 10**shift
        ge = _first_true(lo, hi, lambda u: _round_half_up_div(u, divisor_r) >= target)
        gt = _first_true(lo, hi, lambda u: _round_half_up_div(u, divisor_r) > target)
        le, lt = gt - 1, ge - 1
    else:
        d: float = dv.value
        dkey = _float_key(d)
        divisor = int(kind.units)  # 10**scale for decimals, 1 for integers

        def as_double(u: int) -> float:
            return u / divisor  # int / int is correctly rounded, like Java's BigDecimal.doubleValue

        ge = _first_true(lo, hi, lambda u: _float_key(as_double(u)) >= dkey)
        gt = _first_true(lo, hi, lambda u: _float_key(as_double(u)) > dkey)
        le, lt = gt - 1, ge - 1
    return _Thresholds(
        max(ge, lo) if ge <= hi else None,
        max(gt, lo) if gt <= hi else None,
        min(le, hi) if le >= lo else None,
        min(lt, hi) if lt >= lo else None,
    )


def _float_thresholds(kind: ColumnKind, d: float) -> _Thresholds:
    if math.isnan(d):
        return _Thresholds(math.nan, None, math.nan, math.inf)
    dtype: Any = {11: np.float16, 24: np.float32, 53: np.float64}[kind.float_bits]
    with np.errstate(over="ignore"):
        return _float_neighbours(d, dtype(d), dtype(np.inf), dtype(-np.inf))


def _float_neighbours(d: float, r: Any, up: Any, down: Any) -> _Thresholds:
    floor = r if float(r) <= d else np.nextafter(r, down)
    ceil = r if float(r) >= d else np.nextafter(r, up)
    if float(ceil) > d:
        gt: Any = float(ceil)
    elif ceil == up:
        gt = math.nan  # above +inf there is only NaN
    else:
        gt = float(np.nextafter(ceil, up))
    if float(floor) < d:
        lt: Any = float(floor)
    elif floor == down:
        lt = None  # nothing is below -inf
    else:
        lt = float(np.nextafter(floor, down))
    return _Thresholds(float(ceil), gt, float(floor), lt)


def _interval(op: str, th: _Thresholds, u: _Universe) -> tuple[Any, Any] | None:
    """The storage values satisfying ``x op v`` (``op`` in = < <= > >=) as [a, b], or None."""
    if op == "=":
        a, b = th.ge, th.le
    elif op == "<":
        a, b = u.lo, th.lt
    elif op == "<=":
        a, b = u.lo, th.le
    elif op == ">":
        a, b = th.gt, u.hi
    elif op == ">=":
        a, b = th.ge, u.hi
    else:  # pragma: no cover
        raise ValueError(op)
    if a is None or b is None or u.key(a) > u.key(b):
        return None
    return a, b


def _range_node(
    ref: BoundRef, interval: tuple[Any, Any] | None, u: _Universe, mode: str
) -> BoundExpr:
    """Bound form of "x in interval" (``mode`` "in"), its complement ("out"), or the null-safe
    "x <=> value" ("null_safe")."""
    lit = lambda v: make_literal(ref, v)  # noqa: E731
    if interval is None:
        if mode == "null_safe":
            return BoundConstant(False)
        return BoundNonNullConstant(ref, mode == "out")
    a, b = interval
    key = u.key
    full = key(a) == key(u.lo) and key(b) == key(u.hi)
    if mode == "null_safe":
        if key(a) == key(b):
            return BoundCompare(ref, "<=>", lit(a))
        return BoundAnd(BoundIsNull(ref, negated=True), _range_node(ref, interval, u, "in"))
    if full:
        return BoundNonNullConstant(ref, mode == "in")
    if key(a) == key(b):
        return BoundCompare(ref, "=" if mode == "in" else "!=", lit(a))
    if key(a) == key(u.lo):
        return BoundCompare(ref, "<=" if mode == "in" else ">", lit(b))
    if key(b) == key(u.hi):
        return BoundCompare(ref, ">=" if mode == "in" else "<", lit(a))
    if mode == "in":
        return BoundAnd(BoundCompare(ref, ">=", lit(a)), BoundCompare(ref, "<=", lit(b)))
    return BoundOr(BoundCompare(ref, "<", lit(a)), BoundCompare(ref, ">", lit(b)))


def _universe(kind: ColumnKind) -> _Universe:
    if kind.family == "float":
        return _Universe(-math.inf, math.nan, _float_key)
    return _Universe(kind.lo, kind.hi, _INT_KEY)


def _thresholds(kind: ColumnKind, dv: _DomainValue) -> _Thresholds:
    if kind.family == "float":
        return _float_thresholds(kind, dv.value)
    return _int_thresholds(kind, dv)


# ---------------------------------------------------------------------------------------------
# LIKE

_ANY1, _ANYN = object(), object()


def compile_like(pattern: str, escape: str) -> LikeMatcher:
    """Compile a Spark LIKE pattern; the escape may precede only ``_``, ``%`` or itself."""
    tokens: list[Any] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == escape:
            if i + 1 >= n:
                raise PredicateError(
                    f"invalid LIKE pattern {pattern!r}: the escape character {escape!r} "
                    "cannot end the pattern"
                )
            nxt = pattern[i + 1]
            if nxt not in ("_", "%", escape):
                raise PredicateError(
                    f"invalid LIKE pattern {pattern!r}: the escape character {escape!r} "
                    f"cannot precede {nxt!r}"
                )
            tokens.append(nxt)
            i += 2
            continue
        tokens.append(_ANYN if c == "%" else _ANY1 if c == "_" else c)
        i += 1
    # merge literal runs, collapse runs of %
    parts: list[Any] = []
    for t in tokens:
        if isinstance(t, str) and parts and isinstance(parts[-1], str):
            parts[-1] += t
        elif t is _ANYN and parts and parts[-1] is _ANYN:
            continue
        else:
            parts.append(t)
    prefix_chars = parts[0] if parts and isinstance(parts[0], str) else ""
    prefix = prefix_chars.encode("utf-8")
    kinds = [("lit" if isinstance(p, str) else "any1" if p is _ANY1 else "anyn") for p in parts]
    if not parts:
        return LikeMatcher("equals", "", "", b"")
    if kinds == ["lit"]:
        return LikeMatcher("equals", parts[0], "", prefix)
    if kinds == ["anyn"]:
        return LikeMatcher("all", "", "", b"")
    if kinds == ["lit", "anyn"]:
        return LikeMatcher("prefix", parts[0], "", prefix)
    if kinds == ["anyn", "lit"]:
        return LikeMatcher("suffix", parts[1], "", b"")
    if kinds == ["anyn", "lit", "anyn"]:
        return LikeMatcher("contains", parts[1], "", b"")
    body = "".join(
        re2_escape(p) if isinstance(p, str) else ("." if p is _ANY1 else ".*") for p in parts
    )
    return LikeMatcher("regex", "", "(?s)\\A" + body + "\\z", prefix)


# ---------------------------------------------------------------------------------------------
# the binder


def _and(left: BoundExpr, right: BoundExpr) -> BoundExpr:
    for a, b in ((left, right), (right, left)):
        if isinstance(a, BoundConstant):
            if a.value is False:
                return a
            if a.value is True:
                return b
    return BoundAnd(left, right)


def _or(left: BoundExpr, right: BoundExpr) -> BoundExpr:
    for a, b in ((left, right), (right, left)):
        if isinstance(a, BoundConstant):
            if a.value is True:
                return a
            if a.value is False:
                return b
    return BoundOr(left, right)


def negate(expr: BoundExpr) -> BoundExpr:
    """NOT of a bound expression, pushed to the leaves (three-valued logic preserved)."""
    if isinstance(expr, BoundCompare):
        if expr.op in NEGATED:
            return BoundCompare(expr.column, NEGATED[expr.op], expr.literal)  # type: ignore[arg-type]
        return BoundNot(expr)
    if isinstance(expr, BoundIn):
        return BoundIn(expr.column, expr.literals, expr.has_null, not expr.negated)
    if isinstance(expr, BoundIsNull):
        return BoundIsNull(expr.column, not expr.negated)
    if isinstance(expr, BoundKeyIn):
        if not expr.keys.exact or expr.adaptive:
            what = "a Bloom key filter" if not expr.keys.exact else "an adaptive key filter"
            raise PredicateError(
                f"unsupported: NOT of {what} on column {render_column(expr.column.name)}: its matches are a "
                "superset, so NOT of it would drop rows that belong; use an exact, non-adaptive key filter"
            )
        return BoundKeyIn(expr.column, expr.keys, expr.adaptive, not expr.negated)
    if isinstance(expr, BoundLike):
        return BoundLike(expr.column, expr.pattern, expr.escape, not expr.negated, expr.matcher)
    if isinstance(expr, BoundNonNullConstant):
        return BoundNonNullConstant(expr.column, not expr.value)
    if isinstance(expr, BoundConstant):
        return expr if expr.value is None else BoundConstant(not expr.value)
    if isinstance(expr, BoundAnd):
        return _or(negate(expr.left), negate(expr.right))
    if isinstance(expr, BoundOr):
        return _and(negate(expr.left), negate(expr.right))
    if isinstance(expr, BoundNot):
        return expr.child
    raise TypeError(f"not a bound expression: {expr!r}")  # pragma: no cover


def _nested_hint(name: str, names: Sequence[str], types: Sequence[pa.DataType] | None) -> str:
    """For a dotted name that is no column: say when its first part is a struct column."""
    if "." not in name or types is None:
        return ""
    head, _, rest = name.partition(".")
    for n, t in zip(names, types):
        if n.lower() == head.lower() and pa.types.is_struct(t):
            return (
                f"; {render_column(name)} is not a top-level column, and {render_column(rest)} of "
                f"the struct column {render_column(n)} is a nested field, which predicates "
                "cannot read"
            )
    return ""


class NameResolver:
    """Resolves column names against one schema's names as Spark does (built once, looked up
    per name: a scan resolves every output column and every filter column).

    The exact name wins; otherwise, unless ``case_sensitive`` (Spark's
    ``spark.sql.caseSensitive``), the one name equal to it ignoring case. A name is taken
    whole: dots, spaces, quotes are part of it (``a.b`` is the column named ``a.b``, never a
    field of a struct). :meth:`index` raises :class:`PredicateError` naming the candidates when
    no column or several match.
    """

    def __init__(
        self, names: Sequence[str], case_sensitive: bool = False, types: Sequence[pa.DataType] | None = None
    ) -> None:
        self.names = list(names)
        self.case_sensitive = case_sensitive
        self.types = types
        self._exact: dict[str, list[int]] = {}
        self._folded: dict[str, list[int]] = {}
        for i, n in enumerate(self.names):
            self._exact.setdefault(n, []).append(i)
            self._folded.setdefault(n.lower(), []).append(i)

    def index(self, name: str) -> int:
        """The position of the column ``name`` refers to."""
        names = self.names
        exact = self._exact.get(name, [])
        if len(exact) == 1:
            return exact[0]
        if len(exact) > 1:
            raise PredicateError(
                f"column reference {render_column(name)} is ambiguous: the schema has "
                f"{len(exact)} columns named {render_column(name)}"
            )
        similar = self._folded.get(name.lower(), [])
        if not self.case_sensitive and len(similar) == 1:
            return similar[0]
        if not self.case_sensitive and len(similar) > 1:
            candidates = ", ".join(render_column(names[i]) for i in similar)
            raise PredicateError(
                f"column reference {render_column(name)} is ambiguous: {candidates} differ only in "
                "case; write the name exactly as one of them is spelled and resolve names "
                "case-sensitively (the scan option case_sensitive=True, Spark's "
                "spark.sql.caseSensitive=true)"
            )
        available = ", ".join(render_column(n) for n in names) or "(none)"
        hint = ""
        if similar:
            candidates = ", ".join(render_column(names[i]) for i in similar)
            hint = f" (names are resolved case-sensitively; {candidates} differs in case)"
        hint += _nested_hint(name, names, self.types)
        raise PredicateError(f"unknown column {render_column(name)}{hint}; the schema has: {available}")

    def name(self, name: str) -> str:
        """The schema's spelling of the column ``name`` refers to."""
        return self.names[self.index(name)]


def resolve_index(
    name: str, names: Sequence[str], case_sensitive: bool = False, types: Sequence[pa.DataType] | None = None
) -> int:
    """The position in ``names`` of the column ``name`` refers to (see :class:`NameResolver`)."""
    return NameResolver(names, case_sensitive, types).index(name)


def resolve_name(name: str, names: Sequence[str], case_sensitive: bool = False) -> str:
    """The spelling in ``names`` of the column ``name`` refers to (see :class:`NameResolver`)."""
    return names[resolve_index(name, names, case_sensitive)]


class _Binder:
    def __init__(self, schema: pa.Schema, case_sensitive: bool = False) -> None:
        self.schema = schema
        self.names = NameResolver(schema.names, case_sensitive, schema.types)

    def resolve(self, ref: Ref) -> BoundRef:
        i = self.names.index(ref.name)
        field = self.schema[i]
        return BoundRef(field.name, i, field.type)

    def _kind(self, ref: BoundRef, what: str) -> ColumnKind:
        kind = column_kind(ref.type)
        if kind is None:
            raise PredicateError(
                f"unsupported: {what} on column {render_column(ref.name)} of type {ref.type}"
            )
        return kind

    def bind(self, e: Expr) -> BoundExpr:
        if isinstance(e, Compare):
            return self.compare(e)
        if isinstance(e, In):
            return self.in_list(e)
        if isinstance(e, IsNull):
            return BoundIsNull(self.resolve(e.column), e.negated)
        if isinstance(e, KeyIn):
            return self.key_in(e)
        if isinstance(e, Like):
            return self.like(e)
        if isinstance(e, And):
            return _and(self.bind(e.left), self.bind(e.right))
        if isinstance(e, Or):
            return _or(self.bind(e.left), self.bind(e.right))
        if isinstance(e, Not):
            return negate(self.bind(e.child))
        if isinstance(e, Constant):
            return BoundConstant(e.value)
        if isinstance(e, Ref):
            ref = self.resolve(e)
            if not pa.types.is_boolean(ref.value_type):
                raise PredicateError(
                    f"column {render_column(ref.name)} of type {ref.value_type} is not a "
                    "predicate; only a BOOLEAN column can stand alone"
                )
            return BoundCompare(ref, "=", make_literal(ref, True))
        raise PredicateError(f"not a predicate: {e!r}")

    def key_in(self, e: KeyIn) -> BoundExpr:
        from lazyscan.predicate.keys import KeyFilter

        ref = self.resolve(e.column)
        keys = e.keys
        if not isinstance(keys, KeyFilter):
            raise PredicateError(f"isin_keys on {render_column(ref.name)} needs a key filter, got {type(keys).__name__}")
        if keys.compatible(ref.type) is None:
            raise PredicateError(
                f"a key filter of {keys.type_name} keys cannot be compared with column "
                f"{render_column(ref.name)} of type {ref.type}"
            )
        return BoundKeyIn(ref, keys, e.adaptive)

    def compare(self, e: Compare) -> BoundExpr:
        ref = self.resolve(e.column)
        if e.value.is_null:
            return BoundIsNull(ref) if e.op == "<=>" else BoundConstant(None)
        kind = self._kind(ref, f"comparison {e}")
        scale = _common_scale(kind, [e.value], minimal=True)
        dv = _coerce(ref, kind, e.value, force_double=False, scale=scale)
        if dv.domain in (_BYTES, _BOOL):
            if (
                kind.fixed_width is not None
                and e.op in ("=", "!=", "<=>")
                and len(dv.value) != kind.fixed_width
            ):
                if e.op == "<=>":
                    return BoundConstant(False)
                return BoundNonNullConstant(ref, e.op == "!=")
            return BoundCompare(ref, e.op, make_literal(ref, dv.value))
        u = _universe(kind)
        th = _thresholds(kind, dv)
        if e.op in ("<", ">") and th.ge is not None and u.key(th.ge) == u.key(th.le):
            # the literal is a storage value: keep the strict operator (reads better in explain)
            node = _range_node(ref, _interval(e.op, th, u), u, "in")
            if isinstance(node, BoundCompare):
                return BoundCompare(ref, e.op, make_literal(ref, th.ge))
            return node
        if e.op in ("=", "!="):
            return _range_node(ref, _interval("=", th, u), u, "in" if e.op == "=" else "out")
        if e.op == "<=>":
            return _range_node(ref, _interval("=", th, u), u, "null_safe")
        return _range_node(ref, _interval(e.op, th, u), u, "in")

    def in_list(self, e: In) -> BoundExpr:
        ref = self.resolve(e.column)
        if not e.values:  # Spark 4: x IN () is FALSE even for a NULL x
            return BoundConstant(e.negated)
        has_null = any(v.is_null for v in e.values)
        values = [v for v in e.values if not v.is_null]
        if not values:
            return BoundConstant(None)
        kind = self._kind(ref, f"IN list {e}")
        common = _in_common_type(kind, ref, values)
        force_double = kind.family in ("int", "decimal") and common in (("double",), ("float",))
        scale = common[2] if common is not None and common[0] == "decimal" else None
        string_column = kind.family in ("string", "binary")
        if common is not None and not string_column and any(v.kind == "string" for v in values):
            # Spark casts the strings of the list to the common type, not to the column's
            if common[0] == "decimal":
                target: tuple[str, tuple[int, ...]] | None = ("decimal", common[1:])
            else:
                target = _STRING_CAST_TARGET.get(common[0])
            if target is not None:
                values = [self._cast_string(ref, v, *target) for v in values]
        singles: dict[Any, Any] = {}  # key -> storage value
        ranges: list[BoundExpr] = []
        if kind.family == "int" and all(v.kind == "integer" for v in values):
            # fast path for long lists of integers (join keys): exact, no rounding
            singles = {v.value: v.value for v in values if kind.lo <= v.value <= kind.hi}
            values = []
        elif kind.family == "string" and all(v.kind == "string" for v in values):
            singles = {b: b for b in (v.value.encode("utf-8") for v in values)}
            values = []
        for v in values:
            dv = _coerce(ref, kind, v, force_double=force_double, scale=scale)
            if dv.domain in (_BYTES, _BOOL):
                if kind.fixed_width is not None and len(dv.value) != kind.fixed_width:
                    continue
                singles.setdefault(dv.value, dv.value)
                continue
            u = _universe(kind)
            interval = _interval("=", _thresholds(kind, dv), u)
            if interval is None:
                continue
            a, b = interval
            if u.key(a) == u.key(b):
                singles.setdefault(u.key(a), a)
            else:
                ranges.append(_range_node(ref, interval, u, "in"))
        if kind.family == "float":
            ordered = sorted(singles.values(), key=_float_key)
        else:
            ordered = sorted(singles.values())
        literals = tuple(make_literal(ref, s) for s in ordered)
        node: BoundExpr
        if not ranges:
            if literals:
                node = BoundIn(ref, literals, has_null)
            else:
                node = BoundConstant(None) if has_null else BoundNonNullConstant(ref, False)
        else:
            terms: list[BoundExpr] = [BoundIn(ref, literals, has_null)] if literals else []
            terms.extend(ranges)
            if has_null and not literals:
                terms.append(BoundConstant(None))
            node = terms[0]
            for t in terms[1:]:
                node = BoundOr(node, t)
        return negate(node) if e.negated else node

    @staticmethod
    def _cast_string(ref: BoundRef, lit: Literal, target: str, params: tuple[int, ...]) -> Literal:
        if lit.kind != "string":
            return lit
        try:
            return casts.cast_literal(lit, target, params)
        except casts.CastError as e:
            raise _cast_error(ref, lit, e) from e

    def like(self, e: Like) -> BoundExpr:
        ref = self.resolve(e.column)
        kind = self._kind(ref, f"LIKE {e}")
        if kind.family not in ("string", "binary"):
            raise PredicateError(
                f"unsupported: LIKE on column {render_column(ref.name)} of type "
                f"{ref.value_type}; LIKE needs a string or binary column"
            )
        matcher = compile_like(e.pattern, e.escape)
        if kind.family == "binary" and matcher.kind == "regex":
            raise PredicateError(
                f"unsupported: LIKE pattern {e.pattern!r} on binary column "
                f"{render_column(ref.name)}; only patterns without '_' and with '%' at the "
                "start and/or end are supported on binary columns"
            )
        if matcher.kind == "all":
            return BoundNonNullConstant(ref, not e.negated)
        return BoundLike(ref, e.pattern, e.escape, e.negated, matcher)


def bind(expr: Expr, schema: pa.Schema, *, case_sensitive: bool = False) -> BoundExpr:
    """Resolve ``expr`` against ``schema`` and coerce its literals to the columns' types.

    Column names resolve as :func:`resolve_index` says: exactly, then ignoring case unless
    ``case_sensitive``. Raises :class:`PredicateError` for an unknown or ambiguous column, a
    literal that cannot be cast (message names the column and the literal), or an unsupported
    comparison.
    """
    if not isinstance(expr, Expr):
        raise PredicateError(f"bind needs an expression, got {type(expr).__name__}")
    return _Binder(schema, case_sensitive).bind(expr)


def check_bound(bound: BoundExpr, schema: pa.Schema) -> None:
    """Raise :class:`PredicateError` unless every column ``bound`` reads is a field of
    ``schema`` with the type it was bound to: a filter bound once (on a Spark driver) used by a
    scan of that schema, without binding it again."""
    stack: list[Any] = [bound]
    while stack:
        node = stack.pop()
        ref = getattr(node, "column", None)
        if isinstance(ref, BoundRef):
            i = schema.get_field_index(ref.name)
            if i < 0:
                raise PredicateError(
                    f"the bound filter reads column {render_column(ref.name)}, which the scan's "
                    f"schema lacks; columns: {', '.join(render_column(n) for n in schema.names)}"
                )
            if schema.field(i).type != ref.type:
                raise PredicateError(
                    f"the bound filter reads column {render_column(ref.name)} as {ref.type}, the "
                    f"scan's schema has it as {schema.field(i).type}"
                )
        stack.extend(c for c in (getattr(node, n, None) for n in ("left", "right", "child")) if c is not None)
