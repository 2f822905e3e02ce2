"""Semi-join pushdown in Spark: ``lazyscan.spark.read(..., semi_join=...)``, the
``keyFilter.<column>`` option and ``lazyscan.spark.key_filter``, each against the same query
as a Spark left-semi join over ``spark.read.parquet`` (no pushdown).

The fact file has several row groups and pages, key columns of every key type (dictionary and
plain encoded), NULL and duplicate keys; the dimensions hold NULL and duplicate keys too, and
their integer keys are of the other width (Spark widens both sides of the join).
"""

from __future__ import annotations

import datetime as dt
import decimal
import logging

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import (
    DateType,
    DecimalType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

import lazyscan
import lazyscan.spark
from lazyscan.errors import LazyScanError, OptionError, PredicateError
from lazyscan.predicate.keys import KeyFilter, KeyFilterError
from tests.spark_support import assert_same_rows, get_spark

pytestmark = pytest.mark.spark

N = 30_000
ONE_TASK = {"minPartitionNum": "1", "openCostInBytes": "1"}


@pytest.fixture(scope="session")
def spark():
    return get_spark()


def _fact_table(seed: int = 11) -> pa.Table:
    rng = np.random.default_rng(seed)
    key = rng.integers(0, 5_000, N)
    nulls = rng.random(N) < 0.03
    base = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    return pa.table(
        {
            "rid": pa.array(np.arange(N, dtype=np.int64)),
            "k32": pa.array(key.astype(np.int32), mask=nulls),
            "k64": pa.array(key * 1_000_003, mask=nulls),
            "ks": pa.array([f"key-{v:05d}" for v in key], mask=nulls),
            "kd": pa.array((key + 18_000).astype(np.int32), mask=nulls).cast(pa.date32()),
            "kdec": pa.array([decimal.Decimal(int(v)) / 100 for v in key], pa.decimal128(10, 2), mask=nulls),
            "kts": pa.array([base + dt.timedelta(seconds=int(v)) for v in key], pa.timestamp("us", tz="UTC"),
                            mask=nulls),
            "x": pa.array(rng.integers(0, 100, N)),
            "s": pa.array([f"s{v}" for v in rng.integers(0, 50, N)]),
        }
    )


@pytest.fixture(scope="module")
def fact(tmp_path_factory) -> tuple[str, str]:
    """(dictionary-encoded file, plain file) of the same rows."""
    folder = tmp_path_factory.mktemp("semi")
    table = _fact_table()
    dict_path, plain_path = str(folder / "dict.parquet"), str(folder / "plain.parquet")
    pq.write_table(table, dict_path, row_group_size=7_000, data_page_size=8_000)
    pq.write_table(table, plain_path, row_group_size=7_000, data_page_size=8_000, use_dictionary=False)
    return dict_path, plain_path


def _dimension(spark, keys: list, spark_type) -> object:
    schema = StructType([StructField("dk", spark_type, True), StructField("tag", StringType(), True)])
    return spark.createDataFrame([(k, f"t{i % 3}") for i, k in enumerate(keys)], schema)


def _dim_keys(rng: np.random.Generator, count: int) -> list[int]:
    picked = rng.integers(0, 5_000, count).tolist()
    return [*picked, *picked[: count // 4]]  # duplicates


BASE = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
#: fact column -> (Spark type of the dimension key, key as that type)
KEY_KINDS = {
    "k32": (LongType(), lambda v: int(v)),
    "k64": (LongType(), lambda v: int(v) * 1_000_003),
    "ks": (StringType(), lambda v: f"key-{v:05d}"),
    "kd": (DateType(), lambda v: dt.date(1970, 1, 1) + dt.timedelta(days=int(v) + 18_000)),
    "kdec": (DecimalType(12, 3), lambda v: decimal.Decimal(int(v)) / 100),
    "kts": (TimestampType(), lambda v: BASE + dt.timedelta(seconds=int(v))),
}


def _expected(spark, path: str, dim, fact_col: str, columns: list[str], where: str | None = None) -> list:
    df = spark.read.parquet(path)
    if where:
        df = df.where(where)
    return df.join(dim, F.col(fact_col) == dim["dk"], "left_semi").select(*columns).collect()


@pytest.mark.parametrize("encoding", [0, 1], ids=["dictionary", "plain"])
@pytest.mark.parametrize("fact_col", list(KEY_KINDS))
def test_semi_join_equals_spark_join(spark, fact, fact_col, encoding):
    path = fact[encoding]
    rng = np.random.default_rng(hash(fact_col) % 1000)
    spark_type, convert = KEY_KINDS[fact_col]
    dim = _dimension(spark, [convert(v) for v in _dim_keys(rng, 40)] + [None], spark_type)
    columns = ["rid", fact_col, "x"]
    lazyscan.spark.last_profile()  # drops the profiles of earlier scans
    got = lazyscan.spark.read(
        spark, path, columns, semi_join=(dim, "dk", fact_col), force="lazyscan", **ONE_TASK
    ).collect()
    expected = _expected(spark, path, dim, fact_col, columns)
    assert 0 < len(expected) < N // 10
    assert_same_rows(got, expected, fact_col)
    profile = lazyscan.spark.last_profile()
    assert profile.counters["rows_returned"] == len(expected)
    # the join filter's own accounting came back from the tasks: every removed row is counted
    (text, jf), = profile.join_filters.items()
    assert "KEYS(" in text
    removed = jf["rows_removed"] + sum(jf[f"rows_{t}"] for t in ("statistics", "bloom", "dictionary", "page_index"))
    assert removed == profile.counters["rows_total"] - len(expected)


def test_int32_fact_key_against_bigint_keys_beyond_int32(spark, fact):
    path = fact[0]
    dim = _dimension(spark, [7, 12, 2**40, -(2**33), None], LongType())
    got = lazyscan.spark.read(spark, path, ["rid", "k32"], semi_join=(dim, "dk", "k32"), force="lazyscan",
                              **ONE_TASK).collect()
    assert_same_rows(got, _expected(spark, path, dim, "k32", ["rid", "k32"]))
    assert {r.k32 for r in got} <= {7, 12}


def test_semi_join_with_or_and_not_in_where(spark, fact):
    path = fact[0]
    rng = np.random.default_rng(5)
    dim = _dimension(spark, _dim_keys(rng, 300), LongType())
    where = "(x < 20 OR s LIKE 's1%') AND NOT (x = 7)"
    columns = ["rid", "k32", "x", "s"]
    got = lazyscan.spark.read(spark, path, columns, where, semi_join=(dim, "dk", "k32"), force="lazyscan",
                              **ONE_TASK).collect()
    assert_same_rows(got, _expected(spark, path, dim, "k32", columns, where))


def test_bloom_filter_keeps_a_superset_the_join_reduces(spark, fact):
    path = fact[1]
    rng = np.random.default_rng(9)
    dim = _dimension(spark, [v * 1_000_003 for v in _dim_keys(rng, 500)], LongType())
    keys = lazyscan.spark.key_filter(dim, "dk", exact_limit=0, fpp=0.2)
    assert keys.kind == "bloom" and not keys.exact
    assert keys.measured_fpp is not None and keys.measured_fpp <= 0.3
    got = lazyscan.spark.read(spark, path, ["rid", "k64"], semi_join=(keys, "k64"), force="lazyscan", **ONE_TASK)
    expected = _expected(spark, path, dim, "k64", ["rid", "k64"])
    rows = got.collect()
    assert {r.rid for r in expected} <= {r.rid for r in rows}
    assert len(rows) < N  # the filter removed rows
    joined = got.join(dim, got["k64"] == dim["dk"], "left_semi").collect()
    assert_same_rows(joined, expected)


def test_one_filter_serves_two_scans_of_one_query(spark, fact):
    path = fact[0]
    rng = np.random.default_rng(3)
    dim = _dimension(spark, _dim_keys(rng, 60), LongType())
    keys = lazyscan.spark.key_filter(dim, "dk")
    a = lazyscan.spark.read(spark, path, ["rid", "k32", "x"], semi_join=(keys, "k32"), force="lazyscan", **ONE_TASK)
    b = lazyscan.spark.read(spark, path, ["k32", "x"], semi_join=(keys, "k32"), force="lazyscan", **ONE_TASK)
    avg = b.groupBy("k32").agg(F.avg("x").alias("ax"))
    got = a.join(avg, "k32").where(F.col("x") < F.col("ax")).select("rid").collect()
    plain = spark.read.parquet(path).join(dim, F.col("k32") == dim["dk"], "left_semi")
    pavg = plain.groupBy("k32").agg(F.avg("x").alias("ax"))
    expected = plain.join(pavg, "k32").where(F.col("x") < F.col("ax")).select("rid").collect()
    assert len(expected) > 0
    assert_same_rows(got, expected)


def test_empty_dimension_reads_no_payload(spark, fact):
    path = fact[0]
    dim = _dimension(spark, [1, 2, 3], LongType()).where("dk > 100")
    lazyscan.spark.last_profile()
    got = lazyscan.spark.read(spark, path, ["rid", "s"], semi_join=(dim, "dk", "k32"), force="lazyscan",
                              **ONE_TASK).collect()
    assert got == []
    profile = lazyscan.spark.last_profile()
    assert profile.counters["row_groups_total"] == 5
    assert profile.counters["row_groups_pruned_stats"] == 5  # no key lies in any [min, max]
    assert next(iter(profile.join_filters.values()))["row_groups_statistics"] == 5
    assert profile.counters["pages_read"] == 0
    assert profile.counters["values_decoded"] == 0


def test_spark_reader_route_gets_the_keys_as_in(spark, fact):
    path = fact[0]
    rng = np.random.default_rng(21)
    dim = _dimension(spark, [f"key-{v:05d}" for v in _dim_keys(rng, 30)], StringType())
    columns = ["rid", "ks"]
    got = lazyscan.spark.read(spark, path, columns, semi_join=(dim, "dk", "ks"), force="spark")
    plan = got._jdf.queryExecution().optimizedPlan().toString()
    assert "Filter ks#" in plan and " INSET key-" in plan
    assert_same_rows(got.collect(), _expected(spark, path, dim, "ks", columns))


def test_key_filter_option_and_sql_view(spark, fact):
    path = fact[1]
    picked = _dim_keys(np.random.default_rng(17), 50)
    dim = _dimension(spark, picked, LongType())
    keys = lazyscan.spark.key_filter(dim, "dk")
    k64_keys = lazyscan.key_filter([v * 1_000_003 for v in picked])  # the same rows, through k64
    df = (spark.read.format("lazyscan").schema("rid bigint, x bigint")
          .option("keyFilter.k64", k64_keys.to_text()).options(**ONE_TASK).load(path))
    expected = (spark.read.parquet(path).join(dim, F.col("k32") == dim["dk"], "left_semi").select("rid", "x").collect())
    assert_same_rows(df.collect(), expected)
    spark.sql(
        f"CREATE OR REPLACE TEMPORARY VIEW fact_keys USING lazyscan OPTIONS (path '{path}', "
        f"`keyFilter.k32` '{keys.to_text()}', minPartitionNum '1')"
    )
    assert_same_rows(spark.sql("SELECT rid, x FROM fact_keys").collect(), expected)


def test_bad_key_filter_option_names_the_option(spark, fact):
    path = fact[0]
    text = lazyscan.key_filter([1, 2, 3]).to_text()
    damaged = text[:-6] + ("A" if text[-6] != "A" else "B") + text[-5:]
    with pytest.raises(Exception, match=r"keyFilter\.k32"):
        spark.read.format("lazyscan").option("keyFilter.k32", damaged).load(path).collect()
    with pytest.raises(Exception, match="no file column 'nope'"):
        spark.read.format("lazyscan").option("keyFilter.nope", text).load(path).collect()
    strings = lazyscan.key_filter(["a", "b"]).to_text()
    with pytest.raises(Exception, match=r"keyFilter\.k32"):
        spark.read.format("lazyscan").option("keyFilter.k32", strings).load(path).collect()


def test_wrong_key_type_and_unknown_column_are_lazyscan_errors(spark, fact):
    path = fact[0]
    dim = _dimension(spark, ["a", "b"], StringType())
    with pytest.raises(PredicateError):
        lazyscan.spark.read(spark, path, ["rid"], semi_join=(dim, "dk", "k32"), force="lazyscan")
    with pytest.raises(LazyScanError, match="nope"):
        lazyscan.spark.read(spark, path, ["rid"], semi_join=(dim, "dk", "nope"), force="lazyscan")
    with pytest.raises(PredicateError, match="not in the dimension"):
        lazyscan.spark.read(spark, path, ["rid"], semi_join=(dim, "missing", "ks"), force="lazyscan")
    with pytest.raises(LazyScanError, match="semi_join takes"):
        lazyscan.spark.read(spark, path, ["rid"], semi_join=("x",), force="lazyscan")
    with pytest.raises(KeyFilterError, match="damaged key filter text"):
        KeyFilter.from_text("lskf:???")


def test_key_set_over_the_limit_falls_back_to_the_plain_read(spark, fact, caplog):
    path = fact[0]
    dim = _dimension(spark, list(range(100)), LongType())
    with caplog.at_level(logging.WARNING, logger="lazyscan.spark"):
        df = lazyscan.spark.read(spark, path, ["rid"], semi_join=(dim, "dk", "k32"), force="lazyscan", max_keys=50,
                                 **ONE_TASK)
    assert "no key filter on k32" in caplog.text and "more than max_keys=50" in caplog.text
    assert df.count() == N
    with caplog.at_level(logging.WARNING, logger="lazyscan.spark"):
        keys = lazyscan.key_filter(list(range(0, 10**9, 997)))
        df = lazyscan.spark.read(spark, path, ["rid"], semi_join=(keys, "k32"), force="lazyscan", max_key_bytes=1000,
                                 **ONE_TASK)
    assert "more than max_bytes=1,000" in caplog.text
    assert df.count() == N


def test_option_errors_are_option_errors():
    from lazyscan.spark.options import SourceSettings

    with pytest.raises(OptionError, match="names no column"):
        SourceSettings.from_options({"path": "/x", "keyFilter.": "lskf:"})
    s = SourceSettings.from_options({"path": "/x", "keyfilter.Col": "lskf:abc"})
    assert s.key_filters == (("Col", "lskf:abc"),)
