"""SQL predicate parsing, the builder API, and rendering (SQL text round trip)."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lazyscan.errors import PredicateError
from lazyscan.predicate import (
    FALSE,
    TRUE,
    col,
    conjunction,
    lit,
    parse_predicate,
    referenced_columns,
    split_conjuncts,
    to_expr,
)
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
    to_sql,
)

x, y = col("x"), col("y")
D = Decimal


def L(value: object, kind: str) -> Literal:
    return Literal(value, kind)  # type: ignore[arg-type]


PARSED = [
    ("x = 5", x == 5),
    ("x == 5", x == 5),
    ("x <> 5", x != 5),
    ("x != 5", x != 5),
    ("x < 5", x < 5),
    ("x <= 5", x <= 5),
    ("x > 5", x > 5),
    ("x >= 5", x >= 5),
    ("x <=> 5", x.eq_null_safe(5)),
    ("x IS NOT DISTINCT FROM 5", x.eq_null_safe(5)),
    ("x IS DISTINCT FROM 5", Not(x.eq_null_safe(5))),
    ("5 < x", x > 5),
    ("5 <= x", x >= 5),
    ("5 = x", x == 5),
    ("'a' <=> x", x.eq_null_safe("a")),
    ("x = -5", x == -5),
    ("x = - 5", x == -5),
    ("x = -(-5)", x == 5),
    ("x = +5", x == 5),
    ("x = 1.5", x == D("1.5")),
    ("x = 1.50", Compare(Ref("x"), "=", L(D("1.50"), "decimal"))),
    ("x = .5", x == D("0.5")),
    ("x = 1.", x == D("1")),
    ("x = -1.5", x == D("-1.5")),
    ("x = 1.5e0", x == 1.5),
    ("x = 1e3", x == 1000.0),
    ("x = -2.5E-3", x == -0.0025),
    ("x = 1.5D", x == 1.5),
    ("x = 1.5BD", x == D("1.5")),
    ("x = 1.5F", x == np.float32(1.5)),
    ("x = 10L", x == 10),
    ("x = 1Y", x == 1),
    ("x = 1S", x == 1),
    ("x = 9223372036854775808", x == 2**63),
    ("x = 'a'", x == "a"),
    ('x = "a"', x == "a"),
    ("x = 'it''s'", x == "it's"),
    ("x = 'it\\'s'", x == "it's"),
    ("x = 'a' 'b'", x == "ab"),
    ("x = 'a\\nb'", x == "a\nb"),
    ("x = 'caf\\u00e9'", x == "café"),
    ("x = r'a\\nb'", x == "a\\nb"),
    ("x = ''", x == ""),
    ("x = X'0aFF'", x == b"\x0a\xff"),
    ("x = X'ABC'", x == b"\x0a\xbc"),
    ("x = TRUE", x == True),  # noqa: E712
    ("x = NULL", Compare(Ref("x"), "=", L(None, "null"))),
    ("x = DATE '2020-01-01'", x == dt.date(2020, 1, 1)),
    ("x = DATE '2020-1-2'", x == dt.date(2020, 1, 2)),
    (
        "x = TIMESTAMP '2020-01-01 10:00:00'",
        x == dt.datetime(2020, 1, 1, 10, tzinfo=dt.timezone.utc),
    ),
    (
        "x = TIMESTAMP '2020-01-01 12:00:00+02:00'",
        x == dt.datetime(2020, 1, 1, 10, tzinfo=dt.timezone.utc),
    ),
    ("x = TIMESTAMP_NTZ '2020-01-01 10:00:00.5'", x == dt.datetime(2020, 1, 1, 10, 0, 0, 500000)),
    ("x = TIMESTAMP_LTZ '2020-01-01'", x == dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)),
    ("x = TIME '10:00:00.25'", x == dt.time(10, 0, 0, 250000)),
    ("x = CAST('5' AS INT)", x == 5),
    ("x = CAST(' 5 ' AS BIGINT)", x == 5),
    ("x = CAST(2.7 AS INT)", x == 2),
    ("x = CAST(-2.7 AS INT)", x == -2),
    ("x = CAST(1.25 AS DECIMAL(3,1))", x == D("1.3")),
    ("x = CAST(-1.25 AS DECIMAL(3,1))", x == D("-1.3")),
    ("x = CAST(5 AS DECIMAL)", x == D("5")),
    ("x = CAST('1.5' AS DOUBLE)", x == 1.5),
    ("x = CAST('NaN' AS DOUBLE)", Compare(Ref("x"), "=", L(math.nan, "double"))),
    ("x = CAST(1.1 AS FLOAT)", x == np.float32(1.1)),
    ("x = CAST(5 AS STRING)", x == "5"),
    ("x = CAST(1.50 AS STRING)", x == "1.50"),
    ("x = CAST('yes' AS BOOLEAN)", x == True),  # noqa: E712
    ("x = CAST('2020-01-01' AS DATE)", x == dt.date(2020, 1, 1)),
    (
        "x = CAST(DATE '2020-01-01' AS TIMESTAMP)",
        x == dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc),
    ),
    ("x = CAST('ab' AS BINARY)", x == b"ab"),
    ("x = TRY_CAST('x' AS INT)", Compare(Ref("x"), "=", L(None, "null"))),
    ("x = CAST(NULL AS INT)", Compare(Ref("x"), "=", L(None, "null"))),
    ("x IN (1, 2)", x.isin([1, 2])),
    ("x IN (1, 2.5, 'a', NULL)", In(Ref("x"), (lit(1), lit(D("2.5")), lit("a"), lit(None)))),
    ("x NOT IN (1)", In(Ref("x"), (lit(1),), negated=True)),
    ("NOT x IN (1)", In(Ref("x"), (lit(1),), negated=True)),
    ("NOT (x IN (1))", Not(x.isin([1]))),
    ("x IN ()", x.isin([])),
    ("x BETWEEN 1 AND 5", x.between(1, 5)),
    ("x NOT BETWEEN 1 AND 5", Not(x.between(1, 5))),
    ("x IS NULL", x.is_null()),
    ("x IS NOT NULL", x.is_not_null()),
    ("NOT (x IS NULL)", Not(x.is_null())),
    ("x IS TRUE", x.eq_null_safe(True)),
    ("x IS NOT FALSE", Not(x.eq_null_safe(False))),
    ("x LIKE 'a%'", x.startswith("a")),
    ("x LIKE '%a'", x.endswith("a")),
    ("x LIKE '%a%'", x.contains("a")),
    ("x LIKE 'a\\\\_%'", x.startswith("a_")),
    ("x LIKE 'a\\_b'", x.like("a\\_b")),
    ("x NOT LIKE 'a%'", Like(Ref("x"), "a%", negated=True)),
    ("NOT x LIKE 'a%'", Like(Ref("x"), "a%", negated=True)),
    ("x LIKE 'a!%' ESCAPE '!'", x.like("a!%", escape="!")),
    ("x LIKE NULL", Constant(None)),
    ("x NOT LIKE 'a!%' ESCAPE '!'", Like(Ref("x"), "a!%", "!", negated=True)),
    ("x = 1 AND y = 2", (x == 1) & (y == 2)),
    ("x = 1 OR y = 2 AND x = 3", (x == 1) | ((y == 2) & (x == 3))),
    ("(x = 1 OR y = 2) AND x = 3", ((x == 1) | (y == 2)) & (x == 3)),
    ("NOT (x = 1 OR y = 2)", ~((x == 1) | (y == 2))),
    ("NOT x = 1", ~(x == 1)),
    ("((x = 1))", x == 1),
    ("x", Ref("x")),
    ("NOT x", ~x),
    ("x AND NOT y", x & ~y),
    ("TRUE", TRUE),
    ("FALSE", FALSE),
    ("NULL", Constant(None)),
    ("1 = 1", TRUE),
    ("1 = 2", FALSE),
    ("1.0 = 1", TRUE),
    ("'a' < 'b'", TRUE),
    ("NULL = 1", Constant(None)),
    ("NULL <=> NULL", TRUE),
    ("`a b` = 1", col("a b") == 1),
    ("`a``b` = 1", col("a`b") == 1),
    ("`x.y` = 1", col("x.y") == 1),
    ("X = 1", col("X") == 1),
]


@pytest.mark.parametrize(("sql", "expected"), PARSED, ids=[p[0] for p in PARSED])
def test_parse(sql: str, expected: Expr) -> None:
    assert parse_predicate(sql) == expected


UNSUPPORTED = [
    ("f(x) = 1", "function call"),
    ("abs(x) = 1", "function call in comparison (only a column and a literal): ABS(x)"),
    ("x + 1 = 2", "arithmetic in comparison"),
    ("x = y", "comparison between columns"),
    ("x = y + 1", "arithmetic in comparison"),
    ("x IN (SELECT 1)", "subquery"),
    ("EXISTS (SELECT 1)", "subquery"),
    ("x IN (1, y)", "IN list item"),
    ("x BETWEEN y AND 5", "BETWEEN bound"),
    ("x LIKE y", "LIKE pattern"),
    ("x ILIKE 'a'", "ILIKE"),
    ("x RLIKE 'a'", "RLIKE"),
    ("x LIKE ANY ('a', 'b')", "LIKE ANY"),
    ("a.b = 1", "qualified or nested column"),
    ("x = INTERVAL 1 DAY", "interval in comparison"),
    ("x BETWEEN SYMMETRIC 1 AND 2", "BETWEEN SYMMETRIC"),
    ("5", "integer literal used as a predicate"),
    ("'a'", "string literal used as a predicate"),
    ("x = 1 + 1", "arithmetic in comparison"),
    ("x = (SELECT 1)", "subquery in comparison"),
    ("x = CAST('a' AS ARRAY<INT>)", "CAST target type"),
    ("x = -'a'", "negation of a non-numeric literal"),
    ("x = CAST(1.5e0 AS STRING)", "CAST of double literal"),
    ("1 = 'a'", "literals of different types"),
]


@pytest.mark.parametrize(("sql", "message"), UNSUPPORTED, ids=[u[0] for u in UNSUPPORTED])
def test_unsupported(sql: str, message: str) -> None:
    with pytest.raises(PredicateError, match="unsupported") as info:
        parse_predicate(sql)
    assert message in str(info.value)


INVALID = [
    ("x = 1 AND", "cannot parse"),
    ("", "empty predicate"),
    ("   ", "empty predicate"),
    ("x = 1; y = 2", "expected one expression"),
    ("x = 'abc", "cannot parse"),
    ("x = CAST('abc' AS INT)", "'abc' of type STRING cannot be cast to INT"),
    ("x = CAST('1000' AS TINYINT)", "cannot be cast to TINYINT"),
    ("x = CAST(1e10 AS INT)", "overflow"),
    ("x = CAST(123.45 AS DECIMAL(3,1))", "overflow"),
    ("x = DATE '2020-02-30'", "cannot be cast to DATE"),
    ("x = TIMESTAMP '2020-01-01 25:00:00'", "cannot be cast to TIMESTAMP"),
    ("x = TIMESTAMP '10:00:00'", "cannot be cast to TIMESTAMP"),
    ("x = 1e400", "out of the range of DOUBLE"),
    ("x = 1.000000000000000000000000000000000000001", "precision 40"),
    ("x LIKE 'a' ESCAPE 'ab'", "one-character"),
]


@pytest.mark.parametrize(("sql", "message"), INVALID, ids=[i[0] or "empty" for i in INVALID])
def test_invalid(sql: str, message: str) -> None:
    with pytest.raises(PredicateError) as info:
        parse_predicate(sql)
    assert message in str(info.value)


def test_not_a_string() -> None:
    with pytest.raises(PredicateError, match="must be a string"):
        parse_predicate(5)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# builder


def test_builder_nodes() -> None:
    assert (x == 5) == Compare(Ref("x"), "=", Literal(5, "integer"))
    assert (5 == x) == Compare(Ref("x"), "=", Literal(5, "integer"))  # noqa: SIM300 (reflected)
    assert (5 < x) == Compare(Ref("x"), ">", Literal(5, "integer"))  # noqa: SIM300
    assert x.isin(1, 2) == x.isin([1, 2]) == In(Ref("x"), (lit(1), lit(2)))
    assert x.isin("ab") == In(Ref("x"), (lit("ab"),))
    assert x.between(1, 5) == And(x >= 1, x <= 5)
    assert ~(x == 1) == Not(x == 1)
    assert ((x == 1) & (y == 2)) == And(x == 1, y == 2)
    assert ((x == 1) | True) == Or(x == 1, TRUE)
    assert x.startswith("50%_off\\") == Like(Ref("x"), "50\\%\\_off\\\\%")
    assert x.endswith("a") == Like(Ref("x"), "%a")
    assert x.contains("_") == Like(Ref("x"), "%\\_%") == Like.contains("x", "_")
    assert Like.startswith(Ref("x"), "a%") == x.startswith("a%")
    assert Like.endswith("x", "\\") == Like(Ref("x"), "%\\\\")
    assert (x == None) == Compare(Ref("x"), "=", Literal(None, "null"))  # noqa: E711


def test_builder_rejects_misuse() -> None:
    with pytest.raises(PredicateError, match="comparison between columns"):
        _ = x < y
    with pytest.raises(TypeError, match="truth value"):
        _ = 1 < x < 5  # chained comparisons would silently drop one side
    with pytest.raises(TypeError, match="truth value"):
        bool(x == 1)
    with pytest.raises(TypeError):
        hash(x)
    with pytest.raises(PredicateError, match="cannot use"):
        lit(object())
    with pytest.raises(PredicateError, match="must be a string"):
        col(5)  # type: ignore[arg-type]
    assert col("").name == ""  # the empty string is a column name like any other


def test_literals_from_python_numpy_arrow() -> None:
    assert lit(True) == Literal(True, "boolean")
    assert lit(np.int8(5)) == Literal(5, "integer")
    assert lit(np.float32(1.5)) == Literal(1.5, "float")
    assert lit(np.float64(1.5)) == Literal(1.5, "double")
    assert lit(pa.scalar(7)) == Literal(7, "integer")
    assert lit(dt.date(1970, 1, 2)) == Literal(1, "date")
    assert lit(dt.datetime(1970, 1, 1, 0, 0, 1)) == Literal(1_000_000, "timestamp_ntz")
    aware = dt.datetime(1970, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert lit(aware) == Literal(0, "timestamp")
    assert lit(dt.time(0, 0, 1)) == Literal(1_000_000, "time")
    assert lit(np.datetime64("1970-01-02")) == Literal(1, "date")
    assert lit(np.datetime64("1970-01-01T00:00:01.000001")) == Literal(1_000_001, "timestamp_ntz")
    assert lit(bytearray(b"ab")) == Literal(b"ab", "binary")
    assert lit(Decimal("NaN")).kind == "double"
    with pytest.raises(PredicateError, match="needs a int"):
        Literal("5", "integer")
    with pytest.raises(PredicateError, match="needs a int"):
        Literal(True, "integer")


def test_visitors() -> None:
    e = parse_predicate("x = 1 AND (y = 2 OR z IS NULL) AND NOT w LIKE 'a%'")
    assert referenced_columns(e) == {"x", "y", "z", "w"}
    parts = split_conjuncts(e)
    assert [str(p) for p in parts] == ["x = 1", "y = 2 OR z IS NULL", "w NOT LIKE 'a%'"]
    assert conjunction(parts) == e
    assert conjunction([]) == TRUE
    assert split_conjuncts(x == 1) == [x == 1]


def test_to_expr() -> None:
    assert to_expr(None) is None
    assert to_expr("x = 1") == (x == 1)
    assert to_expr(x == 1) == (x == 1)
    assert to_expr(x) == Ref("x")
    with pytest.raises(PredicateError, match="SQL text or an expression"):
        to_expr(5)  # type: ignore[arg-type]


RENDERED = [
    ("x = 1", "x = 1"),
    ("x = 1.50", "x = 1.50"),
    ("x = 5BD", "x = 5BD"),
    ("x = 1.5e0", "x = 1.5D"),
    ("x = 1e300", "x = 1e+300"),
    ("x = CAST('NaN' AS DOUBLE)", "x = CAST('NaN' AS DOUBLE)"),
    ("x = CAST(1.1 AS FLOAT)", "x = CAST(1.100000023841858 AS FLOAT)"),
    ("x = 'it''s \\\\ \\n'", "x = 'it\\'s \\\\ \\n'"),
    ("x = DATE '2020-01-01'", "x = DATE '2020-01-01'"),
    ("x = TIMESTAMP '2020-01-01 10:00:00.5'", "x = TIMESTAMP '2020-01-01 10:00:00.5 UTC'"),
    ("x IN (1, NULL)", "x IN (1, NULL)"),
    ("x NOT LIKE 'a!%' ESCAPE '!'", "x NOT LIKE 'a!%' ESCAPE '!'"),
    ("x = 1 OR y = 2 AND x = 3", "x = 1 OR (y = 2 AND x = 3)"),
    ("NOT (x = 1 OR y = 2)", "NOT (x = 1 OR y = 2)"),
    ("`a b` = X'0A'", "`a b` = X'0A'"),
    ("`select` IS NULL", "`select` IS NULL"),
]


@pytest.mark.parametrize(("sql", "text"), RENDERED, ids=[r[0] for r in RENDERED])
def test_render(sql: str, text: str) -> None:
    e = parse_predicate(sql)
    assert str(e) == text
    assert parse_predicate(text) == e


# random expressions render to text that parses back to the same tree

_names = st.sampled_from(["x", "y", "a b", "select", "Ab_1", "é", "x.y", "a`b"])
_literals = st.one_of(
    st.none().map(lit),
    st.booleans().map(lit),
    st.integers(-(2**70), 2**70).map(lit),
    st.floats(allow_nan=True, allow_infinity=True).map(lambda v: Literal(v, "double")),
    st.floats(width=32).map(lambda v: Literal(float(v), "float")),
    st.decimals(allow_nan=False, allow_infinity=False, places=None)
    .filter(lambda d: len(d.as_tuple().digits) <= 30 and -30 < d.as_tuple().exponent < 10)  # type: ignore[operator]
    .map(lit),
    st.text(max_size=8).map(lit),
    st.binary(max_size=6).map(lit),
    st.dates().map(lit),
    st.datetimes().map(lit),
    st.datetimes(timezones=st.just(dt.timezone.utc)).map(lit),
    st.times().map(lit),
)
_leaves = st.one_of(
    st.builds(
        Compare,
        _names.map(Ref),
        st.sampled_from(["=", "!=", "<", "<=", ">", ">=", "<=>"]),
        _literals,
    ),
    st.builds(In, _names.map(Ref), st.lists(_literals, max_size=4).map(tuple), st.booleans()),
    st.builds(IsNull, _names.map(Ref), st.booleans()),
    st.builds(
        Like, _names.map(Ref), st.text(max_size=6), st.sampled_from(["\\", "!", "%"]), st.booleans()
    ),
    _names.map(Ref),
    st.sampled_from([TRUE, FALSE, Constant(None)]),
)
_exprs = st.recursive(
    _leaves,
    lambda inner: st.one_of(
        st.builds(And, inner, inner), st.builds(Or, inner, inner), st.builds(Not, inner)
    ),
    max_leaves=8,
)


def _same(a: object, b: object) -> bool:
    """Structural equality where NaN equals NaN."""
    if isinstance(a, Literal) and isinstance(b, Literal):
        if a.kind != b.kind:
            return False
        if isinstance(a.value, float) and math.isnan(a.value):
            return isinstance(b.value, float) and math.isnan(b.value)
        return a.value == b.value and type(a.value) is type(b.value)
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(p, q) for p, q in zip(a, b))  # type: ignore[arg-type]
    if hasattr(a, "__dataclass_fields__"):
        return all(_same(getattr(a, f), getattr(b, f)) for f in a.__dataclass_fields__)
    return a == b


@settings(max_examples=300, deadline=None)
@given(_exprs)
def test_render_round_trip(e: Expr) -> None:
    text = to_sql(e)
    assert _same(parse_predicate(text), e), text
