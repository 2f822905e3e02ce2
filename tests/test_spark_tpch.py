"""The 22 TPC-H queries at scale factor 0.1 with every table read through ``lazyscan``, against
the same queries on Spark's own Parquet reader.

The data is generated once per test session with ``tpchgen-cli`` by
:func:`benchmarks.tpch_queries.generate_tables` (two files for the larger
tables, so tasks span files and byte ranges). Each query runs twice: with temporary views over
``spark.read.format("lazyscan")`` (small ``maxPartitionBytes``, so row groups are split across
tasks by their midpoints), then with views over ``spark.read.parquet``; results are compared as
multisets. Spark passes Python data sources no column pruning, so the lazyscan views of a query
declare only the columns the query uses, as :func:`lazyscan.spark.read` does; two queries also
run on views with every column. The query texts are those of :mod:`benchmarks.tpch_queries`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks.data import DataError, tpchgen_binary
from benchmarks.tpch_queries import QUERIES, QUERY_SCALE, TABLES, generate_tables
from tests.spark_support import assert_same_rows, get_spark

pytestmark = pytest.mark.spark


@pytest.fixture(scope="session")
def spark():
    """The shared local Spark session (see tests.spark_support)."""
    return get_spark()

SCALE = QUERY_SCALE


@pytest.fixture(scope="session")
def tpch_dir(tmp_path_factory) -> Path:
    try:
        tpchgen_binary()
    except DataError:
        pytest.skip("tpchgen-cli is not installed")
    out = tmp_path_factory.mktemp("tpch")
    generate_tables(SCALE, out, parts=2, row_group_bytes="2MB")
    return out


@pytest.fixture(scope="module")
def plain(spark, tpch_dir):
    return {t: spark.read.parquet(str(tpch_dir / t)) for t in TABLES}


def _lazy_views(spark, tpch_dir, plain, sql, prune):
    views = {}
    for t in TABLES:
        schema = plain[t].schema
        used = [f for f in schema.fields if re.search(rf"\b{f.name}\b", sql)]
        if not used:
            continue
        reader = spark.read.format("lazyscan").option("maxPartitionBytes", "8m")
        if prune:
            reader = reader.schema(type(schema)(used))
        views[t] = reader.load(str(tpch_dir / t))
    return views


def _run(spark, tables, sql):
    for name, df in tables.items():
        df.createOrReplaceTempView(name)
    return spark.sql(sql).collect()


def test_tpch_schemas_match(spark, tpch_dir, plain):
    for t in TABLES:
        assert spark.read.format("lazyscan").load(str(tpch_dir / t)).schema == plain[t].schema, t


@pytest.mark.parametrize(
    ("number", "prune"),
    [(n, True) for n in sorted(QUERIES)] + [(6, False), (13, False)],
    ids=lambda v: f"Q{v}" if isinstance(v, int) and not isinstance(v, bool) else ("pruned" if v else "all-columns"),
)
def test_tpch_query(spark, tpch_dir, plain, number, prune):
    sql = QUERIES[number]
    got = _run(spark, _lazy_views(spark, tpch_dir, plain, sql, prune), sql)
    want = _run(spark, plain, sql)
    assert_same_rows(got, want, f"TPC-H Q{number}")
