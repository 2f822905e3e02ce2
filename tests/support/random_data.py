"""Generators for differential and property tests of predicates (seeded, NumPy only).

Used by the predicate, scan and Spark tests; not part of the installed package.

Parts and their roles:

- :func:`random_table` — an Arrow table with one column per supported type, values drawn from
  small pools (so equality predicates hit), boundary integers, NaN / -0.0 / +-inf, empty and
  non-ASCII strings, and NULLs. Column ``id`` numbers the rows.
- :func:`random_predicate` — a random expression over a table: comparisons (all operators),
  IN / NOT IN (with NULL), BETWEEN, IS [NOT] NULL, LIKE, nested AND / OR / NOT. With
  ``cross_kind=True`` literals of other kinds are used too (``int_col < 5.5``, ``date_col =
  '2020-01-01'``), to exercise Spark's coercions.
- :func:`column_statistics` — :class:`ColumnStats` of an array in the storage domain, computed
  from the data (NaN left out of min/max), optionally with truncated binary bounds.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lazyscan.format.statistics import ColumnStats
from lazyscan.predicate import casts
from lazyscan.predicate.expr import (
    And,
    Compare,
    Constant,
    Expr,
    In,
    IsNull,
    Like,
    Literal,
    Not,
    Or,
    Ref,
)

#: column name -> Arrow type of :func:`random_table` (besides ``id``)
TABLE_TYPES: dict[str, pa.DataType] = {
    "b": pa.bool_(),
    "i8": pa.int8(),
    "i16": pa.int16(),
    "i32": pa.int32(),
    "i64": pa.int64(),
    "u8": pa.uint8(),
    "u16": pa.uint16(),
    "u32": pa.uint32(),
    "u64": pa.uint64(),
    "f16": pa.float16(),
    "f32": pa.float32(),
    "f64": pa.float64(),
    "dec_s": pa.decimal128(9, 2),
    "dec_l": pa.decimal128(38, 10),
    "s": pa.string(),
    "ls": pa.large_string(),
    "bin": pa.binary(),
    "fsb": pa.binary(3),
    "d32": pa.date32(),
    "t32s": pa.time32("s"),
    "t32ms": pa.time32("ms"),
    "t64us": pa.time64("us"),
    "t64ns": pa.time64("ns"),
    "ts_s": pa.timestamp("s"),
    "ts_ms": pa.timestamp("ms"),
    "ts_us": pa.timestamp("us"),
    "ts_ns": pa.timestamp("ns"),
    "tstz_us": pa.timestamp("us", tz="UTC"),
    "tstz_ms": pa.timestamp("ms", tz="Europe/Paris"),
    "dict_s": pa.dictionary(pa.int32(), pa.string()),
}

STRING_POOL = [
    "",
    "a",
    "ab",
    "abc",
    "abd",
    "a_c",
    "a%c",
    "aéc",
    "é",
    "b",
    "ba",
    "zz",
    "\n",
    "a\nc",
    "\\",
    "x\\y",
    "日本",
    "日本語",
    "🙂",
    "a🙂c",
    "Abc",
    "abc ",
]
BYTES_POOL = [b"", b"\x00", b"\x00\x01", b"ab", b"abc", b"abd", b"\xff", b"\xff\xff", b"\x7f\x80"]
FSB_POOL = [b"abc", b"abd", b"\x00\x00\x00", b"\xff\xff\xff", b"ab\xff", b"b\x00\x00"]
LIKE_POOL = [
    "a%",
    "%c",
    "%b%",
    "a_c",
    "_",
    "__",
    "%",
    "",
    "a\\%c",
    "a\\_c",
    "é%",
    "_é%",
    "%é",
    "a%c%",
    "%\\\\%",
    "日本%",
    "a\nc",
    "a_%",
    "ab",
    "%a%c%",
    "🙂",
    "_🙂_",
    "\\\\",
    "abc%",
    "%abc",
]


def _int_pool(t: pa.DataType) -> list[int]:
    bits = t.bit_width
    if pa.types.is_signed_integer(t):
        lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    else:
        lo, hi = 0, 2**bits - 1
    pool = [lo, lo + 1, hi - 1, hi, 0, 1, 2, 5, 7, 100, 127]
    if lo < 0:
        pool += [-1, -2, -5, -100]
    if bits == 64:
        pool += [2**53, 2**53 + 1, 2**60, 2**60 + 1, 2**60 - 1]
    return [v for v in pool if lo <= v <= hi]


FLOAT_POOL = [
    math.nan,
    -0.0,
    0.0,
    math.inf,
    -math.inf,
    1.0,
    -1.0,
    0.5,
    1.5,
    2.25,
    0.1,
    1.1,
    100.0,
    1e10,
    -3.75,
    65504.0,
]
DECIMAL_POOL_S = ["0", "0.01", "-0.01", "1.5", "1.50", "2.25", "-3.75", "100", "9999999.99", "0.10"]
DECIMAL_POOL_L = [
    "0",
    "1.5",
    "-1.5",
    "0.1",
    "0.0000000001",
    "1234567890123456789.0123456789",
    "9999999999999999999999999999.9999999999",
    "-9999999999999999999999999999.9999999999",
    "12345678901234567.89",
    "2.25",
]
DATE_POOL = [
    dt.date(2020, 1, 1),
    dt.date(2020, 1, 2),
    dt.date(2019, 12, 31),
    dt.date(1970, 1, 1),
    dt.date(1969, 12, 31),
    dt.date(2000, 2, 29),
    dt.date(1, 1, 1),
    dt.date(9999, 12, 31),
]
TIMESTAMP_POOL = [
    dt.datetime(2020, 1, 1),
    dt.datetime(2020, 1, 1, 10, 0, 0),
    dt.datetime(2020, 1, 1, 10, 0, 0, 500000),
    dt.datetime(2020, 1, 1, 10, 0, 0, 1),
    dt.datetime(2019, 12, 31, 23, 59, 59),
    dt.datetime(1970, 1, 1),
    dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
    dt.datetime(2262, 4, 11),
    dt.datetime(1677, 9, 22),
]
TIME_POOL = [
    dt.time(0, 0),
    dt.time(10, 0),
    dt.time(10, 0, 0, 500000),
    dt.time(10, 0, 1),
    dt.time(23, 59, 59),
    dt.time(12, 30, 15, 123000),
]

_UNIT_PER_SECOND = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}


def _timestamp_units(value: dt.datetime, unit: str) -> int:
    micros = casts.micros_from_datetime(value)
    return micros * _UNIT_PER_SECOND[unit] // 1_000_000


def _time_units(value: dt.time, unit: str) -> int:
    return casts.micros_from_time(value) * _UNIT_PER_SECOND[unit] // 1_000_000


def _pool_values(name: str, t: pa.DataType) -> list[Any]:
    """Candidate storage-ish values for a column (as accepted by ``pa.array(..., type=t)``)."""
    if pa.types.is_dictionary(t):
        return STRING_POOL
    if pa.types.is_boolean(t):
        return [True, False]
    if pa.types.is_integer(t):
        return _int_pool(t)
    if pa.types.is_floating(t):
        pool: list[Any] = FLOAT_POOL
        if pa.types.is_float16(t):
            return [float(np.float16(v)) for v in pool if abs(v) <= 65504 or not math.isfinite(v)]
        return pool
    if pa.types.is_decimal(t):
        pool = DECIMAL_POOL_S if t.precision < 20 else DECIMAL_POOL_L
        return [decimal.Decimal(v) for v in pool]
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return STRING_POOL
    if pa.types.is_fixed_size_binary(t):
        return FSB_POOL
    if pa.types.is_binary(t):
        return BYTES_POOL
    if pa.types.is_date32(t):
        return DATE_POOL
    if pa.types.is_time(t):
        return [_time_units(v, t.unit) for v in TIME_POOL]
    if pa.types.is_timestamp(t):
        pool = TIMESTAMP_POOL
        if t.unit == "ns":
            pool = [v for v in pool if 1678 <= v.year <= 2261]
        values = [_timestamp_units(v, t.unit) for v in pool]
        if t.unit == "ns":
            values += [values[1] + 1, values[1] - 1, values[1] + 999]
        return values
    raise TypeError(t)


def random_table(
    rng: np.random.Generator,
    n_rows: int,
    types: dict[str, pa.DataType] | None = None,
    null_fraction: float = 0.15,
) -> pa.Table:
    """A table with an ``id`` column and one column per entry of ``types``."""
    types = TABLE_TYPES if types is None else types
    arrays: dict[str, pa.Array] = {"id": pa.array(np.arange(n_rows, dtype=np.int64))}
    for name, t in types.items():
        pool = _pool_values(name, t)
        picks = rng.integers(0, len(pool), n_rows)
        nulls = rng.random(n_rows) < null_fraction
        values = [None if nulls[i] else pool[picks[i]] for i in range(n_rows)]
        if pa.types.is_dictionary(t):
            arrays[name] = pa.array(values, type=pa.string()).dictionary_encode()
        elif pa.types.is_time(t) or pa.types.is_timestamp(t):
            arrays[name] = (
                pa.array(values, type=pa.int64())
                .cast(pa.int32() if t.bit_width == 32 else pa.int64())
                .view(t)
            )
        elif pa.types.is_float16(t):
            arrays[name] = pa.array(
                np.array([np.nan if v is None else v for v in values], dtype=np.float16),
                mask=nulls,
            )
        else:
            arrays[name] = pa.array(values, type=t)
    return pa.table(arrays)


# ---------------------------------------------------------------------------------------------
# literals


def _same_kind_literals(t: pa.DataType, pool: Sequence[Any]) -> list[Literal]:
    """Literals of the kind matching the column type, near the pool values."""
    out: list[Literal] = []
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_boolean(t):
        return [Literal(True, "boolean"), Literal(False, "boolean")]
    if pa.types.is_integer(t):
        for v in pool:
            out += [Literal(v, "integer"), Literal(v + 1, "integer"), Literal(v - 1, "integer")]
        return out
    if pa.types.is_floating(t):
        return [Literal(float(v), "double") for v in pool] + [
            Literal(0.3, "double"),
            Literal(1e300, "double"),
            Literal(-1e300, "double"),
        ]
    if pa.types.is_decimal(t):
        step = decimal.Decimal(1).scaleb(-t.scale)
        with decimal.localcontext(decimal.Context(prec=80)):
            for v in pool:
                for w in (v, v + step, v - step):
                    if casts.decimal_precision(w)[0] <= casts.MAX_DECIMAL_PRECISION:
                        out.append(Literal(w, "decimal"))
        return out
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return [Literal(v, "string") for v in pool] + [Literal("a\x00", "string")]
    if pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t):
        return [Literal(v, "binary") for v in pool] + [Literal(b"ab", "binary")]
    if pa.types.is_date32(t):
        return [
            Literal(casts.days_from_civil(v.year, v.month, v.day) + d, "date")
            for v in pool
            for d in (-1, 0, 1)
        ]
    if pa.types.is_time(t):
        per = _UNIT_PER_SECOND[t.unit]
        micros = sorted({v * 1_000_000 // per for v in pool})
        return [Literal(m + d, "time") for m in micros for d in (-1, 0, 1) if m + d >= 0]
    if pa.types.is_timestamp(t):
        per = _UNIT_PER_SECOND[t.unit]
        kind = "timestamp" if t.tz is not None else "timestamp_ntz"
        micros = sorted({v * 1_000_000 // per for v in pool})
        return [Literal(m + d, kind) for m in micros for d in (-1, 0, 1)]  # type: ignore[arg-type]
    raise TypeError(t)


def _cross_kind_literals(t: pa.DataType, pool: Sequence[Any]) -> list[Literal]:
    """Literals of other kinds that Spark coerces (or rejects) for this column type."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    out: list[Literal] = []
    if pa.types.is_integer(t):
        for v in pool[:6]:
            out += [
                Literal(decimal.Decimal(v) + decimal.Decimal("0.5"), "decimal"),
                Literal(decimal.Decimal(v), "decimal"),
                Literal(float(v), "double"),
                Literal(float(v) + 0.5, "double"),
                Literal(str(v), "string"),
                Literal(f" {v} ", "string"),
            ]
        out += [Literal("abc", "string"), Literal("1.5", "string"), Literal(math.nan, "double")]
        return out
    if pa.types.is_floating(t):
        for v in pool[:8]:
            if math.isfinite(v):
                out += [
                    Literal(decimal.Decimal(repr(float(v))), "decimal"),
                    Literal(str(v), "string"),
                ]
                if v == int(v):
                    out.append(Literal(int(v), "integer"))
        out += [Literal("NaN", "string"), Literal("-Infinity", "string"), Literal("abc", "string")]
        return out
    if pa.types.is_decimal(t):
        for v in pool[:6]:
            out += [
                Literal(float(v), "double"),
                Literal(str(v), "string"),
                Literal(int(v), "integer"),
            ]
        out.append(Literal("x", "string"))
        return out
    if pa.types.is_date32(t):
        for v in pool[:5]:
            out += [
                Literal(v.isoformat(), "string"),
                Literal(f"{v.isoformat()} 10:00:00", "string"),
                Literal(
                    casts.days_from_civil(v.year, v.month, v.day) * casts.MICROS_PER_DAY,
                    "timestamp",
                ),
                Literal(
                    casts.days_from_civil(v.year, v.month, v.day) * casts.MICROS_PER_DAY + 1,
                    "timestamp",
                ),
            ]
        out += [Literal("2020-02-30", "string"), Literal(5, "integer")]
        return out
    if pa.types.is_timestamp(t):
        per = _UNIT_PER_SECOND[t.unit]
        for v in pool[:5]:
            micros = v * 1_000_000 // per
            text = casts.format_timestamp(micros)
            out += [
                Literal(text, "string"),
                Literal(text + "Z", "string") if "." not in text else Literal(text, "string"),
                Literal(micros // casts.MICROS_PER_DAY, "date"),
            ]
        out += [Literal("2020-01-01 11:00:00+01:00", "string"), Literal("2020-01-01", "string")]
        return out
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return [Literal(5, "integer"), Literal(True, "boolean")]
    if pa.types.is_boolean(t):
        return [Literal("true", "string"), Literal("no", "string"), Literal(1, "integer")]
    if pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t):
        return [Literal("abc", "string"), Literal("ab", "string")]
    return []


def _literals_for(t: pa.DataType, cross_kind: bool) -> list[Literal]:
    pool = _pool_values("", t)
    literals = _same_kind_literals(t, pool)
    if cross_kind:
        literals += _cross_kind_literals(t, pool)
    return literals


# ---------------------------------------------------------------------------------------------
# predicates

_OPS = ("=", "!=", "<", "<=", ">", ">=", "<=>")


def random_leaf(
    rng: np.random.Generator,
    schema: pa.Schema,
    *,
    cross_kind: bool = False,
    null_literals: bool = True,
    empty_in: bool = True,
    columns: Sequence[str] | None = None,
) -> Expr:
    """One random leaf predicate on a random column of ``schema``."""
    names = list(columns) if columns is not None else [n for n in schema.names if n != "id"]
    name = names[int(rng.integers(len(names)))]
    t = schema.field(name).type
    ref = Ref(name)
    vt = t.value_type if pa.types.is_dictionary(t) else t
    literals = _literals_for(t, cross_kind)

    def pick() -> Literal:
        if null_literals and rng.random() < 0.03:
            return Literal(None, "null")
        return literals[int(rng.integers(len(literals)))]

    r = rng.random()
    if pa.types.is_boolean(vt) and r < 0.1:
        return ref
    if (pa.types.is_string(vt) or pa.types.is_large_string(vt)) and r < 0.3:
        pattern = LIKE_POOL[int(rng.integers(len(LIKE_POOL)))]
        return Like(ref, pattern, "\\", bool(rng.random() < 0.3))
    if r < 0.55:
        op = _OPS[int(rng.integers(len(_OPS)))]
        return Compare(ref, op, pick())  # type: ignore[arg-type]
    if r < 0.75:
        n = int(rng.integers(0 if empty_in else 1, 5))
        return In(ref, tuple(pick() for _ in range(n)), bool(rng.random() < 0.4))
    if r < 0.85:
        return IsNull(ref, bool(rng.random() < 0.5))
    lo, hi = pick(), pick()
    between: Expr = And(Compare(ref, ">=", lo), Compare(ref, "<=", hi))
    return Not(between) if rng.random() < 0.3 else between


def random_predicate(
    rng: np.random.Generator,
    schema: pa.Schema,
    depth: int = 3,
    *,
    cross_kind: bool = False,
    null_literals: bool = True,
    empty_in: bool = True,
    columns: Sequence[str] | None = None,
    constants: bool = True,
) -> Expr:
    """A random predicate tree of at most ``depth`` connective levels (``constants``: TRUE,
    FALSE and NULL may appear as leaves)."""
    kw: dict[str, Any] = {
        "cross_kind": cross_kind,
        "null_literals": null_literals,
        "empty_in": empty_in,
        "columns": columns,
    }
    r = rng.random()
    if depth <= 0 or r < 0.35:
        if constants and rng.random() < 0.02:
            return Constant([True, False, None][int(rng.integers(3))])
        return random_leaf(rng, schema, **kw)
    if r < 0.6:
        return And(
            random_predicate(rng, schema, depth - 1, constants=constants, **kw),
            random_predicate(rng, schema, depth - 1, constants=constants, **kw),
        )
    if r < 0.85:
        return Or(
            random_predicate(rng, schema, depth - 1, constants=constants, **kw),
            random_predicate(rng, schema, depth - 1, constants=constants, **kw),
        )
    return Not(random_predicate(rng, schema, depth - 1, constants=constants, **kw))


# ---------------------------------------------------------------------------------------------
# statistics


def _storage_values(arr: pa.Array) -> list[Any]:
    """Non-null values of an array in the storage domain, as Python values."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if isinstance(arr, pa.DictionaryArray):
        arr = arr.dictionary_decode()
    t = arr.type
    arr = arr.drop_null()
    if pa.types.is_decimal(t):
        ctx = decimal.Context(prec=100)
        return [int(v.scaleb(t.scale, ctx)) for v in arr.to_pylist()]
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return [v.encode("utf-8") for v in arr.to_pylist()]
    if pa.types.is_date32(t) or (pa.types.is_time(t) and t.bit_width == 32):
        return arr.view(pa.int32()).to_pylist()
    if pa.types.is_date64(t) or pa.types.is_timestamp(t) or pa.types.is_time(t):
        return arr.view(pa.int64()).to_pylist()
    if pa.types.is_float16(t):
        return [float(v) for v in arr.cast(pa.float32()).to_pylist()]
    return arr.to_pylist()


def _truncate_min(v: bytes, n: int) -> bytes:
    return v[:n]


def _truncate_max(v: bytes, n: int) -> tuple[bytes, bool]:
    if len(v) <= n:
        return v, True
    head = v[:n].rstrip(b"\xff")
    if not head:
        return v, True  # cannot truncate: keep exact
    return head[:-1] + bytes([head[-1] + 1]), False


def column_statistics(
    arr: pa.Array | pa.ChunkedArray,
    *,
    with_nan_count: bool = True,
    truncate: int | None = None,
) -> ColumnStats:
    """Statistics of ``arr`` as a Parquet writer would record them, in the storage domain."""
    values = _storage_values(arr)
    num_values = len(arr)
    null_count = arr.null_count
    nan_count: int | None = None
    t = arr.type.value_type if pa.types.is_dictionary(arr.type) else arr.type
    if pa.types.is_floating(t):
        nan_count = sum(1 for v in values if math.isnan(v))
        values = [v for v in values if not math.isnan(v)]
        if not with_nan_count:
            nan_count = None
    if not values:
        return ColumnStats(None, None, null_count, num_values, nan_count=nan_count)
    lo, hi = min(values), max(values)
    lo_exact = hi_exact = True
    if truncate is not None and isinstance(lo, bytes):
        if len(lo) > truncate:
            lo, lo_exact = _truncate_min(lo, truncate), False
        hi, hi_exact = _truncate_max(hi, truncate)
    return ColumnStats(lo, hi, null_count, num_values, lo_exact, hi_exact, nan_count)


def table_statistics(table: pa.Table | pa.RecordBatch, **kw: Any) -> dict[str, ColumnStats]:
    """:func:`column_statistics` of every column."""
    return {name: column_statistics(table.column(name), **kw) for name in table.schema.names}
