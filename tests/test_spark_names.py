"""Column names and shapes of every kind through Spark: ``lazyscan.spark.read`` (both routes and Spark's
own reader), the data source's ``where`` option and pushed filters, compared with
``spark.read.parquet``; ``spark.sql.caseSensitive`` followed by both routes; a group column
without leaves, which Spark's own reader cannot read."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lazyscan.spark
from lazyscan.errors import LazyScanError
from tests.spark_support import assert_same_rows, get_spark
from tests.support.data import foreign_file

pytestmark = pytest.mark.spark

#: names Spark's own reader accepts in one file (it refuses two that differ only in case)
NAMES = ["a.b", "a b", "it's", 'say "hi"', "back`tick", "ünïcödé", "日本語", "select", "s.x", ""]


def _bq(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _dq(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@pytest.fixture(scope="module")
def spark() -> Any:
    return get_spark()


@pytest.fixture(scope="module")
def odd(tmp_path_factory: pytest.TempPathFactory) -> Path:
    columns = {name: pa.array([None if (i + k) % 5 == 0 else i * 10 + k for i in range(40)], pa.int64()) for k, name in enumerate(NAMES)}
    columns["s"] = pa.array([{"x": i % 7} for i in range(40)], pa.struct([("x", pa.int64())]))
    path = tmp_path_factory.mktemp("spark_names") / "odd.parquet"
    pq.write_table(pa.table(columns), path, row_group_size=16)
    return path


@pytest.fixture
def no_parquet_pushdown(spark: Any) -> Iterator[Any]:
    """Spark's Parquet reader without filter pushdown, for one test: with it, Spark 4.3 returns
    no row for ```s.x` > 150`` on a file that also has a struct ``s`` with a field ``x`` (the
    pushed filter's dotted path reaches the nested field; pushdown on names with dots came with
    SPARK-31026)."""
    before = spark.conf.get("spark.sql.parquet.filterPushdown")
    spark.conf.set("spark.sql.parquet.filterPushdown", "false")
    try:
        yield spark
    finally:
        spark.conf.set("spark.sql.parquet.filterPushdown", before)


def test_odd_names_in_every_route(no_parquet_pushdown: Any, odd: Path) -> None:
    """The rows of Spark's reader that pass a filter on each name, written in backquotes (Spark's
    syntax) or double quotes (lazyscan's; Spark's reader gets them rendered in backquotes), with
    odd output columns selected by name."""
    spark = no_parquet_pushdown
    p = str(odd)
    baseline = spark.read.parquet(p)
    output = ["a.b", "", "s", "s.x"]
    routes = [("lazyscan", "tasks"), ("lazyscan", "source"), ("spark", "auto"), ("option", "")]
    names = ["a.b", "it's", 'say "hi"', "back`tick", "日本語", "", "s.x"]
    every = [r.asDict() for r in baseline.collect()]  # Spark's reader, read once
    for i, name in enumerate(names):  # each name once, quoting and route taking turns
        want = [tuple(r[c] for c in output) for r in every if r[name] is not None and r[name] > 150]
        assert want, name
        where = f"{_dq(name) if i % 2 else _bq(name)} > 150"
        force, route = routes[i % len(routes)]
        if force == "option":
            got = spark.read.format("lazyscan").option("where", where).load(p).select(*[_bq(c) for c in output]).collect()
        else:
            got = lazyscan.spark.read(spark, p, output, where, force=force, route=route).collect()
        assert_same_rows(got, want, f"{where} ({force}, {route})")


def test_pushed_filters_on_odd_names_and_nested_fields(no_parquet_pushdown: Any, odd: Path) -> None:
    """A filter Spark pushes names a top-level ``s.x`` as one name and the field ``x`` of
    struct ``s`` as two: lazyscan evaluates the first and leaves the second to Spark."""
    spark = no_parquet_pushdown
    p = str(odd)
    where = "`s.x` > 100 AND s.x = 3 AND `a b` IS NOT NULL"
    want = spark.read.parquet(p).where(where).collect()
    assert want
    got = spark.read.format("lazyscan").option("pushFilters", "true").load(p).where(where).collect()
    assert_same_rows(got, want, where)


@pytest.fixture
def case_file(tmp_path: Path) -> Path:
    path = tmp_path / "case.parquet"
    t = pa.table({"ab": pa.array([1, 2, 3], pa.int64()), "AB": pa.array([30, 20, 10], pa.int64()), "Mixed": pa.array([7, 8, 9], pa.int64())})
    pq.write_table(t, path)
    return path


@pytest.fixture
def case_sensitive_session(spark: Any) -> Iterator[Any]:
    """``spark.sql.caseSensitive=true`` for one test (the data source snapshots it when
    registered), restored afterwards."""
    before = spark.conf.get("spark.sql.caseSensitive")
    spark.conf.set("spark.sql.caseSensitive", "true")
    lazyscan.spark.register(spark)
    try:
        yield spark
    finally:
        spark.conf.set("spark.sql.caseSensitive", before)
        lazyscan.spark.register(spark)


def test_case_insensitive_session(spark: Any, case_file: Path) -> None:
    """Spark's default: ``mixed`` is ``Mixed``; ``Ab`` could be ``ab`` or ``AB`` and is refused
    naming both (Spark's own reader refuses the whole file: two columns differ only in case)."""
    p = str(case_file)
    for route in ["tasks", "source"]:
        got = lazyscan.spark.read(spark, p, ["MIXED"], "mixed >= 8", force="lazyscan", route=route).collect()
        assert [tuple(r) for r in got] == [(8,), (9,)]
        assert got[0].__fields__ == ["Mixed"]
    with pytest.raises(LazyScanError, match="ambiguous: ab, AB differ only in case"):
        lazyscan.spark.read(spark, p, ["Mixed"], "Ab = 1", force="lazyscan")


def test_case_sensitive_session(case_sensitive_session: Any, case_file: Path) -> None:
    """``spark.sql.caseSensitive=true``: exact names only, in both routes, as Spark's reader."""
    spark = case_sensitive_session
    p = str(case_file)
    want = spark.read.parquet(p).where("AB = 20").select("ab", "AB").collect()
    assert [tuple(r) for r in want] == [(2, 20)]
    for route in ["tasks", "source"]:
        got = lazyscan.spark.read(spark, p, ["ab", "AB"], "AB = 20", force="lazyscan", route=route).collect()
        assert_same_rows(got, want, route)
    got = spark.read.format("lazyscan").option("where", "AB = 20").load(p).select("ab", "AB").collect()
    assert_same_rows(got, want, "where option")
    with pytest.raises(LazyScanError, match="names are resolved case-sensitively; Mixed differs in case"):
        lazyscan.spark.read(spark, p, ["ab"], "mixed = 8", force="lazyscan")


def test_group_without_leaves(spark: Any) -> None:
    """DuckDB's ``empty_group_test``: Spark infers the schema (``nested`` a struct of an empty
    struct) but its reader fails on the file (parquet-mr's schema conversion); lazyscan reads
    it as pyarrow does, ``nested`` NULL."""
    p = str(foreign_file("empty_group_test.parquet"))
    df = spark.read.format("lazyscan").load(p)
    assert df.schema == spark.read.parquet(p).schema
    assert [r.asDict() for r in df.collect()] == pq.read_table(p).to_pylist()
    got = lazyscan.spark.read(spark, p, ["nested", "optional_data"], "id = 1", force="lazyscan").collect()
    assert [r.asDict() for r in got] == [{"nested": None, "optional_data": 100}]


def test_int96_inside_lists_and_structs(spark: Any, tmp_path: Path) -> None:
    """INT96 inside a list and a struct: Spark types it TIMESTAMP as it does flat INT96, and
    lazyscan's values (microseconds, as flat INT96) equal Spark's reader's."""
    import datetime as dt

    stamps = [dt.datetime(1900, 1, 1, 0, 0, 0, 5), dt.datetime(2024, 2, 29, 12, 30), dt.datetime(3000, 1, 1)]
    table = pa.table({
        "id": pa.array([1, 2, 3], pa.int64()),
        "flat": pa.array(stamps, pa.timestamp("us")),
        "l": pa.array([stamps, [None, stamps[1]], None], pa.list_(pa.timestamp("us"))),
        "s": pa.array([{"t": v} for v in stamps], pa.struct([("t", pa.timestamp("us"))])),
    })
    p = str(tmp_path / "int96.parquet")
    pq.write_table(table, p, use_deprecated_int96_timestamps=True, store_schema=False)
    want = spark.read.parquet(p)
    got = lazyscan.spark.read(spark, p, None, "id >= 2", force="lazyscan")
    assert got.schema == want.schema
    assert_same_rows(got.collect(), want.where("id >= 2").collect())
    assert lazyscan.spark.read(spark, p, ["s"], "id = 1", force="lazyscan").collect()[0].s.t == stamps[0]


def test_interval_is_refused_as_spark_refuses_it(spark: Any, tmp_path: Path) -> None:
    """A Parquet INTERVAL column (FIXED_LEN_BYTE_ARRAY(12)): Spark's schema converter refuses
    it (``ParquetToSparkSchemaConverter``: not implemented); lazyscan's Spark routes refuse it
    naming the column, and read the file's other columns."""
    from tests.test_timestamps_range import interval_file

    p = str(interval_file(tmp_path))
    with pytest.raises(LazyScanError, match=r"INTERVAL.*not supported"):
        lazyscan.spark.read(spark, p, None, None, force="lazyscan").collect()
