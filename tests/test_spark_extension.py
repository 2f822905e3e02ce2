"""Transparent mode: the Catalyst rule reads filtered Parquet and ORC scans through lazyscan.

Every case runs the same query with the rule on and off (``spark.lazyscan.enabled``, read at each
optimization) and asserts the same rows, nulls and NaNs included, and that the optimized plan
names the lazyscan relation (with its ``where`` and columns) exactly when the rule applies:
reads by path (``spark.read.parquet`` / ``orc``) and catalog tables (``spark.table`` and SQL;
``USING parquet / orc``, Hive tables ``STORED AS PARQUET / ORC``, partitions pruned by the
catalog), and the opt-outs (reader option, table property, session setting), each with the
reason the rule keeps (``LazyScanRule.decisions``). The sessions take every scan the rule can
(``spark.lazyscan.choice=lazyscan``): these tests are about the rule's reach, the cost model's
choice has tests of its own (``tests/test_spark_extension_choice.py``).

The module's session carries the extension on the shared test SparkContext (a context's
``spark.sql.extensions`` cannot change once it runs): the jar that :func:`configure` builds is
loaded into a class loader of its own and its extension applied to a new session.
:func:`test_configure_starts_a_session_with_the_rule` checks the user's route, ``configure``
and ``enable`` on a fresh JVM, in a child process.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

import lazyscan.spark
from lazyscan.errors import OptionError, UnsupportedFeatureError
from lazyscan.spark.extension import (
    ENABLED_CONF,
    _appended,
    build_jar,
    configure,
    jar_path,
)
from lazyscan.spark.rule_tasks import ROUTE_CONF, enable_tasks
from lazyscan.spark.source import LazyScanDataSource
from tests.spark_extension_support import (
    explain_section,
    extension_session,
    on_and_off,
    optimized_plan,
    rule_decisions,
    rule_loader,
    scan_options,
    scan_routes,
)
from tests.spark_support import assert_same_rows, get_spark
from tests.support.jvm import TEST_JVM_OPTIONS

pytestmark = pytest.mark.spark

ROWS = 3000
STRINGS = ["a1", "a2", "b%", "it's", "x_y", "back\\slash", "é", ""]


def _table(n: int = ROWS, offset: int = 0) -> pa.Table:
    ids = list(range(offset, offset + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "i": pa.array([None if j % 9 == 0 else j % 100 - 20 for j in ids], pa.int32()),
            "f": pa.array(
                [None if j % 11 == 0 else float("nan") if j % 13 == 0 else -0.0 if j % 17 == 0 else (j % 50) / 4
                 for j in ids],
                pa.float64(),
            ),
            "fl": pa.array([None if j % 10 == 0 else (j % 8) / 2 for j in ids], pa.float32()),
            "s": pa.array([None if j % 7 == 0 else STRINGS[j % len(STRINGS)] + ("" if j % 3 else str(j % 5))
                           for j in ids]),
            "d": pa.array([None if j % 15 == 0 else dt.date(2024, 1, 1) + dt.timedelta(days=j % 200) for j in ids]),
            "dec": pa.array([None if j % 19 == 0 else decimal.Decimal(j % 3000) / 100 for j in ids],
                            pa.decimal128(10, 2)),
            "b": pa.array([None if j % 6 == 0 else j % 4 == 0 for j in ids]),
            "ts": pa.array([dt.datetime(2024, 1, 1) + dt.timedelta(hours=j) for j in ids], pa.timestamp("us", "UTC")),
            "k": pa.array([j % 5 for j in ids], pa.int32()),
            "tn": pa.array([None if j % 8 == 0 else dt.datetime(2024, 3, 10, 1, 30) + dt.timedelta(minutes=7 * j)
                            for j in ids], pa.timestamp("us")),
        }
    )


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    shared = get_spark()
    session = extension_session(shared)
    yield session
    lazyscan.spark.register(shared)  # the shared session's profile accumulator back in place


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("extension")
    pq.write_table(_table(), root / "t.parquet", row_group_size=500)
    folder = root / "parts"
    for year in (2020, 2021, 2022):
        (folder / f"year={year}").mkdir(parents=True)
        pq.write_table(_table(600, offset=year * 10), folder / f"year={year}" / "part-0.parquet", row_group_size=200)
    return root


# filter, columns, whether lazyscan reads it (some conjunct translates)
CASES = [
    ("i > 10", ["id", "s"], True),
    ("f = double('NaN')", ["id", "f"], True),
    ("f >= 2.5 OR s IS NULL", ["id", "f", "s"], True),
    ("f = 0.0", ["id", "f"], True),  # -0.0 = 0.0
    ("s LIKE 'a%' AND i < 50", ["id"], True),
    ("s LIKE '%\\\\%'", ["id", "s"], True),  # a literal % at the end
    ("s LIKE '_1%' OR s LIKE 'x!_y%' ESCAPE '!'", ["id", "s"], True),
    ("contains(s, '''') OR s = 'back\\\\slash3'", ["id", "s"], True),
    ("i IN (1, 2, 3, NULL)", ["id", "i"], True),
    ("NOT (i IN (1, 2, 3))", ["id", "i"], True),
    ("d >= DATE'2024-03-01' AND dec < 12.50", ["id", "d", "dec"], True),
    ("b OR fl = 1.5", ["id", "fl"], True),
    ("NOT b OR i <=> NULL", ["id", "b", "i"], True),
    ("abs(i) > 5 AND s = 'a1'", ["id", "i", "s"], True),  # only s = 'a1' is pushed
    ("ts > TIMESTAMP'2024-02-01 00:00:00'", ["id"], True),
    ("ts <= TIMESTAMP'2024-01-03 05:00:00.000001' OR ts IN (TIMESTAMP'2024-02-01 10:00:00')", ["id", "ts"], True),
    ("tn >= TIMESTAMP_NTZ'2024-03-11 00:00:00' AND tn < TIMESTAMP_NTZ'2024-03-12 00:00:00'", ["id", "tn"], True),
    ("startswith(s, 'b') OR endswith(s, '3') OR s LIKE '%\\_y%'", ["id", "s"], True),
    ("s IN ('a1', 'it''s', '') AND dec IN (1.50, 2.00, 3.25)", ["id", "s", "dec"], True),
    ("i IN (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13)", ["id", "i"], True),  # InSet
    ("d > '2024-06-01' OR ts > DATE'2024-04-20' OR dec < 0.555", ["id", "d", "dec"], True),  # casts Spark unwraps
    ("i + 1 > 5", ["id"], False),  # nor IS NOT NULL alone, which Spark infers here
]


@pytest.mark.parametrize(("where", "columns", "pushed"), CASES, ids=[c[0] for c in CASES])
def test_same_rows_on_and_off(spark: Any, data: Path, where: str, columns: list[str], pushed: bool) -> None:
    path = str(data / "t.parquet")
    query = lambda s: s.read.parquet(path).where(where).select(*columns)  # noqa: E731
    on, off, on_plan, off_plan = on_and_off(spark, query, parquet_pushdown="NaN" not in where)
    assert_same_rows(on, off, where)
    assert len(off) > 0, where  # every filter keeps some rows
    assert ("lazyscan(where:" in on_plan) == pushed, on_plan
    assert "lazyscan" not in off_plan, off_plan


@pytest.mark.parametrize(("route", "physical_scan"), [("auto", "MapInArrow lazyscan("), ("source", "BatchScan lazyscan(")])
def test_plan_names_where_and_only_needed_columns(spark: Any, data: Path, route: str, physical_scan: str) -> None:
    """A query reading one relation takes the tasks route (``mapInArrow`` planned in the
    driver); ``spark.lazyscan.scanRoute=source`` keeps the data source's relation. Both name
    the scan's filter and columns in the plan, and read the same rows."""
    spark.conf.set(ROUTE_CONF, route)
    try:
        df = spark.read.parquet(str(data / "t.parquet")).where("abs(i) > 5 AND s = 'a1'").select("id")
        plan = optimized_plan(df)
        assert "lazyscan(where: `s` = 'a1', columns: id, i, s)" in plan, plan
        physical = str(df._jdf.queryExecution().executedPlan().toString())
        assert physical_scan + "where: `s` = 'a1'" in physical, physical
        assert scan_routes(df) == ["tasks" if route == "auto" else "source"]
        on, off, _, _ = on_and_off(spark, lambda s: s.read.parquet(str(data / "t.parquet")).where("abs(i) > 5 AND s = 'a1'"))
    finally:
        spark.conf.unset(ROUTE_CONF)
    assert_same_rows(on, off, route)
    assert len(off) > 0


@pytest.mark.parametrize("route", ["auto", "source"])
def test_profile_of_either_route(spark: Any, data: Path, route: str) -> None:
    """``lazyscan.spark.last_profile()`` has the rule's scan on either route, as it has a
    ``lazyscan.spark.read`` scan's."""
    spark.conf.set(ROUTE_CONF, route)
    try:
        lazyscan.spark.last_profile()  # what earlier tests left
        df = spark.read.parquet(str(data / "t.parquet")).where("s = 'a1'").select("id", "s")
        assert scan_routes(df) == ["tasks" if route == "auto" else "source"]
        rows = df.collect()
        profile = lazyscan.spark.last_profile()
    finally:
        spark.conf.unset(ROUTE_CONF)
    assert len(rows) > 0
    assert profile.counters["rows_returned"] == len(rows)
    assert profile.counters["rows_total"] == ROWS


class _FailingSource(LazyScanDataSource):
    def reader(self, schema: StructType) -> Any:
        raise RuntimeError("planning failed on purpose")


def test_a_failing_planner_leaves_the_scan_to_the_data_source(spark: Any, data: Path) -> None:
    """When the driver cannot plan a scan's tasks, the data source route reads it."""
    loader_class = rule_loader(spark).loadClass("lazyscan.spark.jvm.LazyScanTasks")
    enable_tasks(spark, _FailingSource, loader_class)
    try:
        on, off, on_plan, _ = on_and_off(spark, lambda s: s.read.parquet(str(data / "t.parquet")).where("s = 'a2'"))
        assert "BatchScan" in str(
            spark.read.parquet(str(data / "t.parquet")).where("s = 'a2'")._jdf.queryExecution().executedPlan().toString())
    finally:
        enable_tasks(spark, lazyscan.spark.register(spark), loader_class)
    assert "lazyscan(where: `s` = 'a2'" in on_plan, on_plan
    assert_same_rows(on, off, "failing planner")
    assert len(off) > 0


def test_count_without_columns(spark: Any, data: Path) -> None:
    path = str(data / "t.parquet")
    spark.conf.set(ENABLED_CONF, "true")
    df = spark.read.parquet(path).where("i > 70")
    assert "lazyscan(where:" in optimized_plan(df.groupBy().count())
    on = df.count()
    spark.conf.set(ENABLED_CONF, "false")
    try:
        assert on == spark.read.parquet(path).where("i > 70").count() > 0
    finally:
        spark.conf.set(ENABLED_CONF, "true")


def test_self_join_keeps_each_sides_filter(spark: Any, data: Path) -> None:
    path = str(data / "t.parquet")

    def query(s: Any) -> Any:
        t = s.read.parquet(path)
        left = t.where("i > 60").select("k", "id")
        right = t.where("s = 'a1'").select("k", t.id.alias("other"))
        return left.join(right, "k")

    on, off, on_plan, _ = on_and_off(spark, query)
    assert on_plan.count("lazyscan(where:") == 2, on_plan
    assert "`i` > 60" in on_plan and "`s` = 'a1'" in on_plan, on_plan
    assert_same_rows(on, off, "self-join")
    assert len(off) > 0


def test_cached_dataframe(spark: Any, data: Path) -> None:
    path = str(data / "t.parquet")
    spark.conf.set(ENABLED_CONF, "true")
    cached = spark.read.parquet(path).where("f > 5 AND s LIKE 'b%'").select("id", "f").cache()
    try:
        first = cached.collect()
        again = cached.where("id > 100").collect()
        spark.conf.set(ENABLED_CONF, "false")
        expected = spark.read.parquet(path).where("f > 5 AND s LIKE 'b%'").select("id", "f").collect()
    finally:
        spark.conf.set(ENABLED_CONF, "true")
        cached.unpersist()
    assert_same_rows(first, expected, "cached")
    assert_same_rows(again, [r for r in expected if r.id > 100], "cached, filtered again")


def test_sql_over_a_temp_view(spark: Any, data: Path) -> None:
    path = str(data / "t.parquet")

    def query(s: Any) -> Any:
        s.read.parquet(path).createOrReplaceTempView("extension_t")
        return s.sql("SELECT id, dec FROM extension_t WHERE dec BETWEEN 3 AND 9.5 AND k = 2")

    on, off, on_plan, off_plan = on_and_off(spark, query)
    assert "lazyscan(where:" in on_plan and "lazyscan" not in off_plan
    assert_same_rows(on, off, "SQL over a view")
    assert len(off) > 0


@pytest.mark.parametrize("where", ["year = 2021 AND i > 40", "year >= 2021", "year = 2022 OR s = 'a1'"])
def test_partitioned_folder(spark: Any, data: Path, where: str) -> None:
    path = str(data / "parts")
    on, off, on_plan, _ = on_and_off(spark, lambda s: s.read.parquet(path).where(where).select("id", "year", "s"))
    assert "lazyscan(where:" in on_plan, on_plan
    assert_same_rows(on, off, where)
    assert len(off) > 0


def test_without_registered_source_spark_reader_is_kept(spark: Any, data: Path) -> None:
    """A session with the extension but no lazyscan data source keeps Spark's reader."""
    fresh = spark.newSession()  # same extensions, no Python data source registered
    fresh.conf.set(ENABLED_CONF, "true")
    df = fresh.read.parquet(str(data / "t.parquet")).where("i > 10").select("id")
    assert "lazyscan" not in optimized_plan(df)
    assert df.count() > 0


def test_columns_option_limits_the_schema(spark: Any, data: Path) -> None:
    path = str(data / "t.parquet")
    df = spark.read.format("lazyscan").option("columns", "S, id").option("where", "i > 90").load(path)
    assert df.columns == ["s", "id"]
    expected = spark.read.parquet(path).where("i > 90").select("s", "id")
    assert_same_rows(df.collect(), expected.collect(), "columns option")


def test_appended_settings() -> None:
    assert _appended(None, "x.jar") == "x.jar"
    assert _appended("a.jar, b.jar", "x.jar") == "a.jar,b.jar,x.jar"
    assert _appended("a.jar,x.jar", "x.jar") == "a.jar,x.jar"


def test_enable_needs_the_extension() -> None:
    with pytest.raises(OptionError, match="configure"):
        lazyscan.spark.enable(get_spark())


def test_jar_is_cached_per_version_and_sources(tmp_path: Path) -> None:
    jar = build_jar(tmp_path)
    assert jar == jar_path(tmp_path) and jar.exists()
    stamp = jar.stat().st_mtime_ns
    assert build_jar(tmp_path).stat().st_mtime_ns == stamp  # not compiled again


def test_configure_starts_a_session_with_the_rule(tmp_path: Path) -> None:
    """The user's route on a fresh JVM: configure(builder), getOrCreate, enable."""
    pq.write_table(_table(400), tmp_path / "t.parquet")
    script = textwrap.dedent(
        f"""
        import os, sys
        os.environ["PYSPARK_PYTHON"] = sys.executable
        from pyspark.sql import SparkSession
        import lazyscan.spark
        builder = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
                   .config("spark.driver.extraJavaOptions", {TEST_JVM_OPTIONS!r})
                   .config("spark.jars", "/nonexistent/other.jar").config("spark.lazyscan.choice", "lazyscan"))
        spark = lazyscan.spark.configure(builder).getOrCreate()
        lazyscan.spark.enable(spark)
        assert spark.conf.get("spark.jars").startswith("/nonexistent/other.jar,"), spark.conf.get("spark.jars")
        df = spark.read.parquet({str(tmp_path / "t.parquet")!r}).where("i > 50").select("id")
        plan = df._jdf.queryExecution().optimizedPlan().toString()
        assert "lazyscan(where: `i` > 50" in plan, plan
        print("ROWS", df.count())
        df.explain()
        spark.read.parquet({str(tmp_path / "t.parquet")!r}).where("i + 1 > 50").select("id").explain()
        """
    )
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    expected = _table(400).filter(pa.compute.greater(pa.compute.field("i"), 50)).num_rows
    assert f"ROWS {expected}" in done.stdout
    # explain() has a lazyscan section: what lazyscan reads, or why Spark's reader was kept
    sections = done.stdout.split("== Extended Information (lazyscan) ==\n")
    assert len(sections) == 3, done.stdout
    scan = f"file:{tmp_path / 't.parquet'}"
    assert sections[1].splitlines()[0] == f"{scan}: lazyscan(where: `i` > 50, columns: id, i) [mapInArrow tasks]", done.stdout
    assert sections[2].splitlines()[0] == (
        f"{scan}: Spark's reader: no conjunct of the filter translates to lazyscan (only IS NOT NULL, or none)"
    ), done.stdout


@pytest.mark.parametrize(
    "query",
    [
        lambda df: df.where("i > 10").select("id", F.input_file_name().alias("file")),
        lambda df: df.where("i > 10").select("id", "_metadata.file_name"),
    ],
    ids=["input_file_name", "_metadata"],
)
def test_file_columns_keep_spark_reader(spark: Any, data: Path, query: Any) -> None:
    """What only Spark's file scan knows (the file a row came from) keeps Spark's reader."""
    df = query(spark.read.parquet(str(data / "t.parquet")))
    assert "lazyscan" not in optimized_plan(df)
    rows = df.collect()
    assert rows and all(r[1].endswith("t.parquet") for r in rows)


def test_table_folder_read_as_spark_reads_it(spark: Any, data: Path, tmp_path: Path) -> None:
    """``spark.read.parquet`` of a folder holding ``_delta_log`` reads its Parquet files as they
    are (hidden folders skipped); so does the lazyscan scan the rule puts in its place."""
    folder = tmp_path / "delta_like"
    (folder / "_delta_log").mkdir(parents=True)
    (folder / "_delta_log" / "00000000000000000000.json").write_text("{}\n")
    pq.write_table(_table(500), folder / "part-0.parquet")
    on, off, on_plan, _ = on_and_off(spark, lambda s: s.read.parquet(str(folder)).where("i > 30").select("id"))
    assert "lazyscan(where:" in on_plan, on_plan
    assert_same_rows(on, off, "table folder")
    assert len(off) > 0


def test_columns_option_errors(data: Path) -> None:
    path = str(data / "t.parquet")
    with pytest.raises(OptionError, match="no column 'nope'"):
        LazyScanDataSource({"path": path, "columns": "id, nope"}).schema()
    with pytest.raises(OptionError, match="empty column"):
        LazyScanDataSource({"path": path, "columns": "id,,s"})
    with pytest.raises(OptionError, match="JSON array"):
        LazyScanDataSource({"path": path, "columns": '["id", 3]'})
    source = LazyScanDataSource({"path": path, "Columns": '["s", "ID"]'})
    assert source.schema().fieldNames() == ["s", "id"]
    with pytest.raises(OptionError, match="name different columns"):
        source.reader(StructType([source.schema()["s"]]))


def test_corrupt_file_fails_with_lazyscans_error(spark: Any, tmp_path: Path) -> None:
    """A page lazyscan cannot read fails the task with its located error; the next query works."""
    t = pa.table({"a": pa.array(range(10_000), pa.int64()), "s": pa.array([f"v{i}" for i in range(10_000)])})
    path = tmp_path / "broken.parquet"
    pq.write_table(t, path, compression="snappy", use_dictionary=False)
    data = bytearray(path.read_bytes())
    data[200:4000] = b"\xab" * 3800
    path.write_bytes(bytes(data))
    df = spark.read.parquet(str(path)).where("a > 5").select("s")
    assert "lazyscan(where:" in optimized_plan(df)
    with pytest.raises(Exception, match=r"lazyscan cannot read .*broken.parquet"):
        df.collect()
    pq.write_table(t, tmp_path / "fine.parquet")
    assert spark.read.parquet(str(tmp_path / "fine.parquet")).where("a > 5").count() == 10_000 - 6


def test_columns_spelled_in_another_case(spark: Any, tmp_path: Path) -> None:
    """Spark resolves ``id`` to the file's ``ID``; the rule passes the file's spelling on."""
    t = _table(1000).rename_columns(["ID", "I", "f", "fl", "Name", "d", "dec", "b", "ts", "k", "tn"])
    pq.write_table(t, tmp_path / "t.parquet")
    path = str(tmp_path / "t.parquet")
    on, off, on_plan, _ = on_and_off(spark, lambda s: s.read.parquet(path).where("i > 30 AND name LIKE 'a%'").select("id"))
    assert "lazyscan(where: (`I` > 30) AND (`Name` LIKE 'a%'), columns: ID, I, Name)" in on_plan, on_plan
    assert_same_rows(on, off, "another case")
    assert len(off) > 0


def test_cte_and_subqueries(spark: Any, data: Path) -> None:
    path = str(data / "t.parquet")

    def query(s: Any) -> Any:
        s.read.parquet(path).createOrReplaceTempView("extension_q")
        return s.sql(
            """
            WITH hot AS (SELECT id, s, k FROM extension_q WHERE i > 10)
            SELECT k, count(*) AS n, max(id) AS top FROM hot
            WHERE s IN (SELECT s FROM extension_q WHERE d < DATE'2024-02-01')
              AND id > (SELECT min(id) FROM extension_q WHERE dec > 20)
            GROUP BY k
            """
        )

    on, off, on_plan, _ = on_and_off(spark, query)
    assert on_plan.count("lazyscan(where:") == 3, on_plan
    assert_same_rows(on, off, "CTE and subqueries")
    assert len(off) > 0


def test_configure_needs_spark_41(monkeypatch: pytest.MonkeyPatch) -> None:
    import lazyscan.spark.extension as extension

    monkeypatch.setattr(extension, "spark_version", lambda: (3, 5))
    monkeypatch.setattr(extension, "spark_version_text", lambda: "3.5.9")
    with pytest.raises(UnsupportedFeatureError, match=r"Spark 4.1 .* 3.5.9: use lazyscan.spark.read"):
        configure(object())


# ---- catalog tables, ORC, opt-outs --------------------------------------------------------------


@pytest.fixture(scope="module")
def hive(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A session with the extension on the catalog of the Hive test session (Derby metastore),
    holding Parquet and ORC tables: data source tables (``saveAsTable``, ``CREATE TABLE ... USING
    ... PARTITIONED BY``) and Hive tables ``STORED AS PARQUET / ORC`` (Spark converts them to its
    file source), each a copy of :func:`_table`'s rows."""
    from tests.spark_support import get_hive_spark

    shared = get_spark()
    catalog = get_hive_spark(tmp_path_factory.mktemp("hive"))
    s = extension_session(shared, catalog)
    s.conf.set("hive.exec.dynamic.partition.mode", "nonstrict")
    s.sql("CREATE DATABASE IF NOT EXISTS lzx")
    rows = s.createDataFrame(_table(1200).drop("ts"))
    rows.write.mode("overwrite").format("parquet").saveAsTable("lzx.saved")
    rows.write.mode("overwrite").format("orc").saveAsTable("lzx.saved_orc")
    rows.write.mode("overwrite").format("parquet").option("lazyscan", "false").saveAsTable("lzx.saved_opted_out")
    rows.createOrReplaceTempView("lzx_rows")
    columns = "id BIGINT, i INT, f DOUBLE, fl FLOAT, s STRING, d DATE, dec DECIMAL(10,2), b BOOLEAN"
    for name, how in [
        ("parts", "USING parquet PARTITIONED BY (k)"),
        ("parts_orc", "USING orc PARTITIONED BY (k)"),
        ("hive_parts", "PARTITIONED BY (k INT) STORED AS PARQUET"),
        ("hive_parts_orc", "PARTITIONED BY (k INT) STORED AS ORC"),
    ]:
        hive_format = "STORED AS" in how
        s.sql(f"DROP TABLE IF EXISTS lzx.{name}")
        s.sql(f"CREATE TABLE lzx.{name} ({columns}{'' if hive_format else ', k INT'}) {how}")
        s.sql(f"INSERT INTO lzx.{name} SELECT id, i, f, fl, s, d, dec, b, k FROM lzx_rows")
    s.sql("DROP TABLE IF EXISTS lzx.hive_plain")
    s.sql(f"CREATE TABLE lzx.hive_plain ({columns}) STORED AS PARQUET")
    s.sql("INSERT INTO lzx.hive_plain SELECT id, i, f, fl, s, d, dec, b FROM lzx_rows")
    # partitions the catalog does not track: the key=value folders under the table's location
    s.conf.set("spark.sql.hive.manageFilesourcePartitions", "false")
    try:
        rows.write.mode("overwrite").format("parquet").partitionBy("k").saveAsTable("lzx.untracked")
    finally:
        s.conf.unset("spark.sql.hive.manageFilesourcePartitions")
    s.sql("DROP TABLE IF EXISTS lzx.hive_opted_out")
    s.sql(f"CREATE TABLE lzx.hive_opted_out ({columns}) STORED AS PARQUET TBLPROPERTIES ('lazyscan.enabled'='false')")
    s.sql("INSERT INTO lzx.hive_opted_out SELECT id, i, f, fl, s, d, dec, b FROM lzx_rows")
    yield s


TABLE_CASES = [
    ("lzx.saved", "i > 10 AND s LIKE 'a%'", ["id", "s", "k"]),
    ("lzx.saved_orc", "f >= 2.5 OR s IS NULL", ["id", "f", "s"]),
    ("lzx.parts", "k = 2 AND i > 10", ["id", "i", "k"]),
    ("lzx.parts", "k IN (1, 3) OR dec < 5", ["id", "dec", "k"]),
    ("lzx.parts_orc", "k >= 3 AND d >= DATE'2024-03-01'", ["id", "d"]),
    ("lzx.hive_parts", "k = 4 AND s = 'a1'", ["id", "s"]),
    ("lzx.hive_parts", "i BETWEEN 0 AND 30", ["id", "i", "k"]),
    ("lzx.hive_parts_orc", "k < 2 AND NOT b", ["id", "b", "k"]),
    ("lzx.hive_plain", "dec > 20 OR s = 'x_y'", ["id", "dec", "s"]),
    ("lzx.untracked", "K = 3 AND i < 0", ["id", "i", "k"]),
]


@pytest.mark.parametrize(("table", "where", "columns"), TABLE_CASES, ids=[f"{c[0]}: {c[1]}" for c in TABLE_CASES])
def test_catalog_table_same_rows_on_and_off(hive: Any, table: str, where: str, columns: list[str]) -> None:
    on, off, on_plan, off_plan = on_and_off(hive, lambda s: s.table(table).where(where).select(*columns))
    assert "lazyscan(where:" in on_plan, (on_plan, rule_decisions(hive))
    assert "lazyscan" not in off_plan, off_plan
    assert_same_rows(on, off, f"{table} {where}")
    assert len(off) > 0, where


@pytest.mark.parametrize("table", ["lzx.saved", "lzx.hive_parts"])
def test_sql_over_a_catalog_table(hive: Any, table: str) -> None:
    query = f"SELECT k, count(*) AS n, sum(dec) AS total FROM {table} WHERE i > 40 AND s <> 'b%' GROUP BY k"
    on, off, on_plan, _ = on_and_off(hive, lambda s: s.sql(query))
    assert "lazyscan(where:" in on_plan, on_plan
    assert_same_rows(on, off, query)
    assert len(off) > 0


@pytest.mark.parametrize("table", ["lzx.parts", "lzx.parts_orc", "lzx.hive_parts", "lzx.hive_parts_orc"])
@pytest.mark.parametrize(
    ("where", "kept"),
    [("k = 2 AND i > 10", [2]), ("k + 1 = 4 AND i > 10", [3]), ("(k = 1 OR k = 4) AND s = 'a1'", [1, 4]),
     ("k = 7 AND i > 10", [])],
)
def test_partition_filters_prune(hive: Any, table: str, where: str, kept: list[int]) -> None:
    """The scan gets only the partitions the catalog lists for the partition filters, also for
    one lazyscan cannot evaluate (``k + 1 = 4``: the catalog prunes by it as for Spark's
    reader)."""
    df = hive.table(table).where(where).select("id", "k")
    scans = scan_options(df)
    assert len(scans) == 1, (optimized_plan(df), rule_decisions(hive))
    [options] = scans
    described = json.loads(options["catalogTable"])
    assert options["table"] == f"spark_catalog.{table}"
    assert described["partitionColumns"] == ["k"]
    assert sorted(int(values[0]) for values, _ in described["partitions"]) == kept
    assert all(Path(location).is_dir() for _, location in described["partitions"])
    on, off, _, _ = on_and_off(hive, lambda s: s.table(table).where(where).select("id", "k"))
    assert_same_rows(on, off, f"{table} {where}")
    assert {r.k for r in off} == set(kept)


def test_orc_files_by_path(spark: Any, data: Path, tmp_path: Path) -> None:
    import pyarrow.orc as orc

    orc.write_table(_table().drop_columns(["ts"]), tmp_path / "t.orc", stripe_size=64 * 1024)
    path = str(tmp_path / "t.orc")
    for where in ["i > 10 AND s LIKE 'a%'", "d >= DATE'2024-03-01' AND dec < 12.50", "f = double('NaN') OR b"]:
        on, off, on_plan, off_plan = on_and_off(
            spark, lambda s, where=where: s.read.orc(path).where(where).select("id", "i", "f", "s"),
            parquet_pushdown="NaN" not in where,
        )
        assert "lazyscan(where:" in on_plan and "lazyscan" not in off_plan, on_plan
        assert_same_rows(on, off, where)
        assert len(off) > 0, where


def test_reader_option_opts_out(spark: Any, data: Path) -> None:
    path = str(data / "t.parquet")
    kept = spark.read.option("lazyscan", "false").parquet(path).where("i > 10").select("id")
    assert "lazyscan" not in optimized_plan(kept)
    assert f"file:{path}: Spark's reader: the reader option lazyscan=false" in rule_decisions(spark)
    taken = spark.read.option("lazyscan", "true").parquet(path).where("i > 10").select("id")
    assert "lazyscan(where: `i` > 10" in optimized_plan(taken)
    assert_same_rows(kept.collect(), taken.collect(), "reader option")


def test_table_opts_out(hive: Any) -> None:
    """A table property ``lazyscan.enabled=false`` and a table option ``lazyscan=false`` keep
    Spark's reader for that table, and say so."""
    for table, reason in [("lzx.hive_opted_out", "the table property lazyscan.enabled=false"),
                          ("lzx.saved_opted_out", "the reader option lazyscan=false")]:
        df = hive.table(table).where("i > 10").select("id")
        assert "lazyscan" not in optimized_plan(df), table
        assert f"table spark_catalog.{table}: Spark's reader: {reason}" in rule_decisions(hive)
        assert df.count() > 0


def test_session_switch_opts_out(spark: Any, data: Path) -> None:
    spark.conf.set(ENABLED_CONF, "false")
    try:
        df = spark.read.parquet(str(data / "t.parquet")).where("i > 10").select("id")
        assert "lazyscan" not in optimized_plan(df)
    finally:
        spark.conf.set(ENABLED_CONF, "true")


def test_explain_names_the_reader_of_each_scan(spark: Any, data: Path) -> None:
    """The ``lazyscan`` section of ``explain()``: one line per scan of the physical plan, with
    the lazyscan scan or the reason Spark's reader was kept (also inside a join and after the
    switch is turned off)."""
    path = str(data / "t.parquet")
    scan = f"file:{path}"
    taken = spark.read.parquet(path).where("i > 10").select("id")
    assert explain_section(taken) == [f"{scan}: lazyscan(where: `i` > 10, columns: id, i) [mapInArrow tasks]"]
    joined = taken.join(spark.read.parquet(path).select("id", "s"), "id")
    assert explain_section(joined) == [
        f"{scan}: lazyscan(where: `i` > 10, columns: id, i)",
        # the join adds `id IS NOT NULL` to the other side: a filter, but none lazyscan gains by
        f"{scan}: Spark's reader: no conjunct of the filter translates to lazyscan (only IS NOT NULL, or none)",
    ]
    spark.conf.set(ENABLED_CONF, "false")
    try:
        off = spark.read.parquet(path).where("i > 10").select("id")
        assert explain_section(off) == [f"{scan}: Spark's reader: {ENABLED_CONF} is false"]
    finally:
        spark.conf.set(ENABLED_CONF, "true")


def test_explain_names_the_reason_for_a_pruned_catalog_table(hive: Any) -> None:
    """Spark's partition pruning puts a new relation under the filter of a kept catalog table
    scan; the reason is still the one the rule gave to this plan, also after a later query of
    the table was read by lazyscan."""
    df = hive.table("lzx.parts").where("k + 1 = 4 AND i + 1 > 10").select("id", "k")
    df._jdf.queryExecution().executedPlan()
    later = hive.table("lzx.parts").where("k = 2 AND i > 10").select("id")
    assert "lazyscan(where:" in optimized_plan(later)
    assert explain_section(df) == [
        "table spark_catalog.lzx.parts: Spark's reader: no conjunct of the filter translates to lazyscan "
        "(only IS NOT NULL, or none)"
    ]
    assert {r.k for r in df.collect()} == {3}


def test_decisions_name_the_scan_or_the_reason(spark: Any, data: Path) -> None:
    path = str(data / "t.parquet")
    scan = f"file:{path}"
    optimized_plan(spark.read.parquet(path).where("i > 10").select("id"))
    assert f"{scan}: lazyscan(where: `i` > 10, columns: id, i)" in rule_decisions(spark)
    optimized_plan(spark.read.parquet(path).where("i + 1 > 5").select("id"))
    assert f"{scan}: Spark's reader: no conjunct of the filter translates to lazyscan (only IS NOT NULL, or none)" \
        in rule_decisions(spark)
    optimized_plan(spark.read.parquet(path).select("id"))
    assert f"{scan}: Spark's reader: no filter on the scan" in rule_decisions(spark)
    optimized_plan(spark.read.parquet(path).where("i > 10").select("id", F.input_file_name()))
    assert f"{scan}: Spark's reader: the query calls input_file_name() or input_file_block_start/length()" \
        in rule_decisions(spark)


@pytest.mark.parametrize("zone", ["America/Los_Angeles", "Asia/Kolkata"])
def test_timestamp_filters_in_another_session_time_zone(spark: Any, data: Path, zone: str) -> None:
    """A TIMESTAMP literal is an instant in the session time zone; the rule writes it in UTC, and
    a TIMESTAMP_NTZ one as its wall-clock time, so the rows are Spark's in any zone."""
    path = str(data / "t.parquet")
    where = ("ts BETWEEN TIMESTAMP'2024-01-20 08:00:00' AND TIMESTAMP'2024-01-22 00:00:00' "
             "OR tn = TIMESTAMP_NTZ'2024-03-10 01:37:00'")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        on, off, on_plan, _ = on_and_off(spark, lambda s: s.read.parquet(path).where(where).select("id", "ts", "tn"))
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    assert "TIMESTAMP '2024-01-" in on_plan and "+00:00'" in on_plan, on_plan
    assert_same_rows(on, off, f"{zone}: {where}")
    assert len(off) > 1


def test_hive_serde_read_says_so(hive: Any) -> None:
    """A Hive table Spark does not convert to its file source is read by its SerDe; the rule
    leaves it and says why."""
    hive.conf.set("spark.sql.hive.convertMetastoreParquet", "false")
    try:
        df = hive.table("lzx.hive_parts").where("i > 10").select("id")
        assert "lazyscan" not in optimized_plan(df)
        assert any(d.startswith("table spark_catalog.lzx.hive_parts: Spark's reader: a Hive table read through its SerDe")
                   for d in rule_decisions(hive)), rule_decisions(hive)
    finally:
        hive.conf.unset("spark.sql.hive.convertMetastoreParquet")


def test_timestamps_spark_reads_as_instants(spark: Any, data: Path, tmp_path: Path) -> None:
    """Timestamps Spark reads as TIMESTAMP although the file says otherwise: a wall-clock
    column with ``spark.sql.parquet.inferTimestampNTZ.enabled=false``, and INT96 values."""
    path = str(data / "t.parquet")
    where = "tn > TIMESTAMP'2024-03-11 00:00:00' AND tn < TIMESTAMP'2024-03-11 12:00:00'"
    spark.conf.set("spark.sql.parquet.inferTimestampNTZ.enabled", "false")
    try:
        on, off, on_plan, _ = on_and_off(spark, lambda s: s.read.parquet(path).where(where).select("id", "tn"))
    finally:
        spark.conf.unset("spark.sql.parquet.inferTimestampNTZ.enabled")
    assert "lazyscan(where:" in on_plan, on_plan
    assert_same_rows(on, off, where)
    assert len(off) > 0
    spark.conf.set("spark.sql.parquet.outputTimestampType", "INT96")
    try:
        spark.createDataFrame(_table(600).select(["id", "ts"])).write.parquet(str(tmp_path / "int96"))
    finally:
        spark.conf.unset("spark.sql.parquet.outputTimestampType")
    int96 = str(tmp_path / "int96")
    where = "ts >= TIMESTAMP'2024-01-10 00:00:00' AND ts < TIMESTAMP'2024-01-12 03:00:00'"
    on, off, on_plan, _ = on_and_off(spark, lambda s: s.read.parquet(int96).where(where).select("id", "ts"))
    assert "lazyscan(where:" in on_plan, on_plan
    assert_same_rows(on, off, f"INT96: {where}")
    assert len(off) > 0
