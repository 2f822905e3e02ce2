"""Differential test: lazyscan.predicate evaluation versus DuckDB on random tables and predicates.

DuckDB shares Spark's semantics where these tests look: three-valued logic, NaN equal to NaN
and above +inf, -0.0 = 0.0, bytewise string order, ``_`` matching one character. Literals are
generated in the column's own kind (the cross-kind coercions are Spark-specific and checked
against Spark in test_predicate_spark.py), and empty IN lists are left out (DuckDB answers NULL
for ``NULL IN ()``, Spark 4 answers FALSE). Results are compared per row as TRUE / FALSE / NULL,
which is stronger than comparing the filtered row ids.
"""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from lazyscan.predicate import bind, evaluate, evaluate_kleene
from lazyscan.predicate.casts import format_time
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
from tests.support.random_data import random_predicate, random_table


def _duck_string(text: str) -> str:
    parts: list[str] = []
    run: list[str] = []
    for c in text:
        if ord(c) < 0x20:
            if run:
                parts.append("'" + "".join(run).replace("'", "''") + "'")
                run = []
            parts.append(f"chr({ord(c)})")
        else:
            run.append(c)
    if run or not parts:
        parts.append("'" + "".join(run).replace("'", "''") + "'")
    return "(" + " || ".join(parts) + ")"


def duck_literal(lit: Literal, column_type: pa.DataType | None = None) -> str:
    k, v = lit.kind, lit.value
    if k == "null":
        return "NULL"
    if k == "boolean":
        return "TRUE" if v else "FALSE"
    if k == "integer":
        return f"CAST({v} AS HUGEINT)"
    if k == "double":
        text = "nan" if math.isnan(v) else repr(v)
        return f"CAST('{text}' AS DOUBLE)"
    if k == "decimal":
        digits = len(v.as_tuple().digits)
        scale = max(0, -v.as_tuple().exponent)
        precision = min(38, max(digits, scale + 1))
        return f"CAST('{v}' AS DECIMAL({precision}, {scale}))"
    if k == "string":
        return _duck_string(v)
    if k == "binary":
        return f"unhex('{v.hex()}')"
    if k == "date":
        return f"(DATE '1970-01-01' + {v})"
    if k == "timestamp_ntz":
        return f"make_timestamp({v})"
    if k == "timestamp":
        return f"CAST(make_timestamp({v}) AS TIMESTAMPTZ)"
    if k == "time":
        if column_type is not None and pa.types.is_time64(column_type) and column_type.unit == "ns":
            return f"CAST(TIME '{format_time(v)}' AS TIME_NS)"
        return f"TIME '{format_time(v)}'"
    raise AssertionError(f"no DuckDB rendering for {lit}")


_DUCK_OPS = {
    "=": "=",
    "!=": "<>",
    "<": "<",
    "<=": "<=",
    ">": ">",
    ">=": ">=",
    "<=>": "IS NOT DISTINCT FROM",
}


def duck_sql(e: Expr, schema: pa.Schema) -> str:
    if isinstance(e, Compare):
        t = schema.field(e.column.name).type
        return f'("{e.column.name}" {_DUCK_OPS[e.op]} {duck_literal(e.value, t)})'
    if isinstance(e, In):
        t = schema.field(e.column.name).type
        items = ", ".join(duck_literal(v, t) for v in e.values)
        return f'("{e.column.name}" {"NOT IN" if e.negated else "IN"} ({items}))'
    if isinstance(e, IsNull):
        return f'("{e.column.name}" IS {"NOT " if e.negated else ""}NULL)'
    if isinstance(e, Like):
        assert e.escape == "\\"
        word = "NOT LIKE" if e.negated else "LIKE"
        return f"(\"{e.column.name}\" {word} {_duck_string(e.pattern)} ESCAPE '\\')"
    if isinstance(e, Ref):
        return f'"{e.name}"'
    if isinstance(e, Constant):
        return "CAST(NULL AS BOOLEAN)" if e.value is None else ("TRUE" if e.value else "FALSE")
    if isinstance(e, And):
        return f"({duck_sql(e.left, schema)} AND {duck_sql(e.right, schema)})"
    if isinstance(e, Or):
        return f"({duck_sql(e.left, schema)} OR {duck_sql(e.right, schema)})"
    if isinstance(e, Not):
        return f"(NOT {duck_sql(e.child, schema)})"
    raise AssertionError(e)


def duck_table(table: pa.Table) -> pa.Table:
    """DuckDB has no float16: widen it (exact)."""
    columns = [c.cast(pa.float32()) if pa.types.is_float16(c.type) else c for c in table.columns]
    return pa.table(columns, names=table.column_names)


def duck_results(
    con: duckdb.DuckDBPyConnection, exprs: list[Expr], schema: pa.Schema
) -> list[list[bool | None]]:
    select = ", ".join(f"{duck_sql(e, schema)} AS p{i}" for i, e in enumerate(exprs))
    rows = con.execute(f"SELECT {select} FROM t ORDER BY id").fetchall()
    return [[row[i] for row in rows] for i in range(len(exprs))]


@pytest.fixture(scope="module")
def duck() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET threads TO 1")
    con.execute("SET TimeZone = 'UTC'")
    return con


@pytest.mark.parametrize("seed", range(8))
def test_random_predicates_match_duckdb(duck: duckdb.DuckDBPyConnection, seed: int) -> None:
    rng = np.random.default_rng(1000 + seed)
    table = random_table(rng, 150)
    duck.register("t", duck_table(table))
    exprs = [
        random_predicate(rng, table.schema, 3, null_literals=True, empty_in=False)
        for _ in range(250)
    ]
    expected = duck_results(duck, exprs, table.schema)
    for expr, want in zip(exprs, expected):
        bound = bind(expr, table.schema)
        got = evaluate_kleene(bound, table).to_pylist()
        assert got == want, f"{expr}\nbound: {bound}\nrows differ: " + str(
            [(i, g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w][:5]
        )
        mask = evaluate(bound, table)
        assert mask.tolist() == [w is True for w in want]


def test_duckdb_nan_semantics_agree_with_spark(duck: duckdb.DuckDBPyConnection) -> None:
    # the oracle must order NaN like Spark: NaN = NaN, NaN > +inf, -0.0 = 0.0
    row = duck.execute(
        "SELECT 'nan'::DOUBLE = 'nan'::DOUBLE, 'nan'::DOUBLE > 'inf'::DOUBLE, "
        "'-0.0'::DOUBLE = 0.0::DOUBLE, 'nan'::DOUBLE IN (1.0::DOUBLE, 'nan'::DOUBLE)"
    ).fetchall()
    assert row == [(True, True, True, True)]


def test_single_leaf_every_column(duck: duckdb.DuckDBPyConnection) -> None:
    """Every column type gets at least a few hundred leaf predicates."""
    rng = np.random.default_rng(7)
    table = random_table(rng, 120)
    duck.register("t", duck_table(table))
    names = [n for n in table.column_names if n != "id"]
    exprs = [
        random_predicate(rng, table.schema, 0, empty_in=False, columns=[name])
        for name in names
        for _ in range(60)
    ]
    expected = duck_results(duck, exprs, table.schema)
    for expr, want in zip(exprs, expected):
        got = evaluate_kleene(bind(expr, table.schema), table).to_pylist()
        assert got == want, (
            f"{expr}: {[(i, g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w][:5]}"
        )
