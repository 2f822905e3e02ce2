"""Differential test: random filters over every Spark column type, ``lazyscan`` with filter
pushdown against ``spark.read.parquet``, on files written by pyarrow and by Spark itself.

Each filter is a conjunction of one to three random predicates (comparisons, ``<=>``, IN with
and without NULL, IS [NOT] NULL, NOT, string prefix/suffix/infix, LIKE, BETWEEN, and now and then
an OR that Spark keeps for itself), with literals drawn from the data and from its boundaries
(NaN, +-0.0, infinities, empty strings, extreme dates). Every filter runs on a freshly loaded
DataFrame (Spark 4.1-4.3 share one read plan per DataFrame, see ``lazyscan.spark.source``); the
filtered scans of a round are unioned into one Spark job per reader, tagged with the filter's
number, and the (filter, row id) multisets must be equal.

``LAZYSCAN_SPARK_DIFF_ROUNDS`` sets the number of rounds (default 2 per data set).
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import math
import os
import random
from collections import Counter
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from tests.spark_support import get_spark, typed_table

pytestmark = pytest.mark.spark


@pytest.fixture(scope="session")
def spark():
    """The shared local Spark session (see tests.spark_support)."""
    return get_spark()

ROUNDS = int(os.environ.get("LAZYSCAN_SPARK_DIFF_ROUNDS", "2"))
FILTERS_PER_ROUND = 24
#: one task per scan: Spark task overhead, not lazyscan, dominates these small scans
ONE_TASK = {"minPartitionNum": "1", "openCostInBytes": "1"}
SCALARS = (
    BooleanType, StringType, BinaryType, DateType, TimestampType, TimestampNTZType, DecimalType, FloatType, DoubleType,
)


def _is_filterable(t: DataType) -> bool:
    from pyspark.sql.types import ByteType, IntegerType, LongType, ShortType

    return isinstance(t, (*SCALARS, ByteType, ShortType, IntegerType, LongType))


class FilterMaker:
    """Random predicates as Spark Columns, literals typed exactly like the column."""

    def __init__(self, schema: Any, rows: list[Any], seed: int) -> None:
        self.rng = random.Random(seed)
        self.columns = [f for f in schema.fields if _is_filterable(f.dataType) and f.name != "rid"]
        self.values: dict[str, list[Any]] = {}
        for f in self.columns:
            seen = [r[f.name] for r in rows if r[f.name] is not None]
            self.values[f.name] = seen[:: max(1, len(seen) // 60)] or [None]

    def literal(self, f: Any) -> Any:
        t = f.dataType
        v = self.rng.choice(self.values[f.name])
        roll = self.rng.random()
        if isinstance(t, (FloatType, DoubleType)) and roll < 0.25:
            v = self.rng.choice([math.nan, -0.0, 0.0, math.inf, -math.inf, 1e300])
        elif isinstance(t, (DateType,)) and roll < 0.2:
            v = self.rng.choice([dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1970, 1, 1)])
        elif isinstance(t, StringType) and roll < 0.2:
            v = self.rng.choice(["", "\uffff", "a", "zzzz", "é"])
        elif isinstance(t, DecimalType) and roll < 0.15 and v is not None:
            v = v + decimal.Decimal(1).scaleb(-t.scale)
        elif roll < 0.1 and isinstance(v, int) and not isinstance(v, bool):
            v = v + self.rng.choice([-1, 1])
        return v

    def lit(self, f: Any, v: Any) -> Any:
        if isinstance(v, bytes):
            v = bytearray(v)
        if type(v) is dt.date:
            # py4j cannot pass dates before the Gregorian cut-over (0001-01-01 raises)
            return F.to_date(F.lit(v.isoformat()))
        return F.lit(v).cast(f.dataType)

    def predicate(self) -> tuple[Any, str, set[str]]:
        f = self.rng.choice(self.columns)
        expr, text = self._predicate(f)
        return expr, text, {f.name}

    def _predicate(self, f: Any) -> tuple[Any, str]:
        c = F.col(f.name)
        t = f.dataType
        kind = self.rng.random()
        if kind < 0.08:
            return c.isNull(), f"{f.name} is null"
        if kind < 0.14:
            return c.isNotNull(), f"{f.name} is not null"
        if kind < 0.22:
            v = None if self.rng.random() < 0.3 else self.literal(f)
            return c.eqNullSafe(self.lit(f, v)), f"{f.name} <=> {v!r}"
        if kind < 0.34:
            vals = [self.literal(f) for _ in range(self.rng.randint(1, 4))]
            if self.rng.random() < 0.2:
                vals.append(None)
            expr = c.isin([self.lit(f, v) for v in vals])
            if self.rng.random() < 0.3:
                return ~expr, f"{f.name} not in {vals!r}"
            return expr, f"{f.name} in {vals!r}"
        if isinstance(t, StringType) and kind < 0.5:
            v = self.literal(f) or ""
            i = self.rng.randint(0, len(v))
            j = self.rng.randint(i, len(v))
            part = v[i:j] if self.rng.random() < 0.8 else self.rng.choice(["%", "_", "a%", "\\"])
            op = self.rng.choice(["startswith", "endswith", "contains", "like"])
            if op == "like":
                pattern = part + "%" if self.rng.random() < 0.5 else "%" + part + "_%"
                return c.like(pattern), f"{f.name} like {pattern!r}"
            expr = getattr(c, op)(F.lit(part))
            if self.rng.random() < 0.2:
                return ~expr, f"not {f.name}.{op}({part!r})"
            return expr, f"{f.name}.{op}({part!r})"
        if isinstance(t, BooleanType):
            v = self.rng.choice([True, False])
            return (c if v else ~c), f"{'' if v else 'not '}{f.name}"
        if kind < 0.4:
            a, b = sorted(
                [self.literal(f), self.literal(f)],
                key=lambda x: (x is None, isinstance(x, float) and math.isnan(x), x if x is not None else 0),
            )
            return c.between(self.lit(f, a), self.lit(f, b)), f"{f.name} between {a!r} and {b!r}"
        v = self.literal(f)
        op = self.rng.choice(["==", "!=", "<", "<=", ">", ">="])
        lit = self.lit(f, v)
        expr = {
            "==": c == lit, "!=": c != lit, "<": c < lit, "<=": c <= lit, ">": c > lit, ">=": c >= lit
        }[op]
        if self.rng.random() < 0.1:
            return ~expr, f"not ({f.name} {op} {v!r})"
        return expr, f"{f.name} {op} {v!r}"

    def filter(self) -> tuple[Any, str, set[str]]:
        parts = [self.predicate() for _ in range(self.rng.randint(1, 3))]
        if self.rng.random() < 0.1:
            a, b = self.predicate(), self.predicate()
            parts.append((a[0] | b[0], f"({a[1]} or {b[1]})", a[2] | b[2]))
        expr = functools.reduce(lambda x, y: x & y, [p[0] for p in parts])
        return expr, " and ".join(p[1] for p in parts), set().union(*(p[2] for p in parts))


def run_round(spark, path: str, maker: FilterMaker, options: dict[str, str]) -> None:
    """One Spark job per reader over a round of filters; lazyscan reads only ``rid`` and the
    filter's columns (a user schema), Spark's reader runs with its Parquet filter pushdown off:
    with it on, Spark 4.3 drops NaN rows for ``x = NaN`` and ``x >= NaN`` (row-group statistics
    exclude NaN), which is not Spark SQL's semantics."""
    filters = [maker.filter() for _ in range(FILTERS_PER_ROUND)]
    schema = spark.read.parquet(path).schema

    def lazy(cols: set[str]) -> Any:
        fields = [f for f in schema.fields if f.name == "rid" or f.name in cols]
        reader = spark.read.format("lazyscan").schema(StructType(fields)).option("pushFilters", "true")
        for k, v in options.items():
            reader = reader.option(k, v)
        return reader.load(path)

    ls = functools.reduce(
        lambda a, b: a.union(b),
        [lazy(cols).where(e).select(F.lit(i).alias("q"), "rid") for i, (e, _, cols) in enumerate(filters)],
    )
    got = Counter((r.q, r.rid) for r in ls.collect())
    spark.conf.set("spark.sql.parquet.filterPushdown", "false")
    try:
        plain = spark.read.parquet(path)
        sp = functools.reduce(
            lambda a, b: a.union(b),
            [plain.where(e).select(F.lit(i).alias("q"), "rid") for i, (e, _, _) in enumerate(filters)],
        )
        want = Counter((r.q, r.rid) for r in sp.collect())
    finally:
        spark.conf.unset("spark.sql.parquet.filterPushdown")
    if got != want:
        for i, (_, text, _) in enumerate(filters):
            g = sorted(rid for (q, rid) in got.elements() if q == i)
            w = sorted(rid for (q, rid) in want.elements() if q == i)
            assert g == w, (
                f"filter {text!r}: lazyscan {len(g)} rows, spark {len(w)} rows; "
                f"first differences {sorted(set(g) ^ set(w))[:5]}"
            )


@pytest.fixture(scope="module")
def arrow_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("diff_arrow")
    t = typed_table(3000, seed=11, nested=False)
    pq.write_table(t.slice(0, 1000), d / "a.parquet", row_group_size=128, use_dictionary=True, write_statistics=True)
    pq.write_table(
        t.slice(1000), d / "b.parquet", row_group_size=500, use_dictionary=["s", "i32"], data_page_size=2048,
        write_page_index=True,
    )
    return str(d)


@pytest.fixture(scope="module")
def spark_dir(spark, arrow_dir, tmp_path_factory):
    d = tmp_path_factory.mktemp("diff_spark") / "t"
    spark.read.parquet(arrow_dir).repartition(4).write.option("parquet.block.size", 64 * 1024).parquet(str(d))
    return str(d)


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_random_filters_pyarrow_files(spark, arrow_dir, round_):
    rows = spark.read.parquet(arrow_dir).collect()
    maker = FilterMaker(spark.read.parquet(arrow_dir).schema, rows, seed=100 + round_)
    run_round(spark, arrow_dir, maker, {"maxPartitionBytes": "64k"} if round_ % 2 else ONE_TASK)


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_random_filters_spark_files(spark, spark_dir, round_):
    rows = spark.read.parquet(spark_dir).collect()
    maker = FilterMaker(spark.read.parquet(spark_dir).schema, rows, seed=200 + round_)
    run_round(spark, spark_dir, maker, {**ONE_TASK, "late_materialization": "false"} if round_ % 2 else ONE_TASK)
