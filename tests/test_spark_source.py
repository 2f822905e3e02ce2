"""The ``lazyscan`` data source in a real local Spark session, compared with Spark's own reader:
type mapping, partitions, file layouts, schema evolution, empty inputs, user schemas, options,
errors, profiles, and the read-plan sharing of Spark 4.1-4.3."""

from __future__ import annotations

import datetime as dt
import json
import os
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lazyscan
import lazyscan.spark
from lazyscan.spark.source import scan_scoped_read_plans
from tests.spark_support import assert_same_rows, get_spark, typed_table

pytestmark = pytest.mark.spark


@pytest.fixture(scope="session")
def spark():
    """The shared local Spark session (see tests.spark_support)."""
    return get_spark()


def lazy(spark, path, **options):
    reader = spark.read.format("lazyscan")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(str(path))


def same_as_spark(spark, path, where=None, merge=True, **options):
    ls = lazy(spark, path, **options)
    sp = spark.read.option("mergeSchema", str(merge).lower()).parquet(str(path))
    if where is not None:
        ls, sp = ls.where(where), sp.where(where)
    cols = sp.columns
    assert sorted(ls.columns) == sorted(cols)
    assert_same_rows(ls.select(*cols).collect(), sp.collect(), f"{path} where {where}")


@pytest.fixture(scope="module")
def typed_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("typed")
    t = typed_table(1500, seed=3)
    pq.write_table(t.slice(0, 700), d / "a.parquet", row_group_size=100, use_dictionary=True)
    pq.write_table(t.slice(700), d / "b.parquet", row_group_size=333, use_dictionary=False, data_page_version="2.0")
    return d


# ---- schema and values ---------------------------------------------------------------------------


def test_schema_matches_spark(spark, typed_dir):
    ls = lazy(spark, typed_dir).schema
    sp = spark.read.parquet(str(typed_dir)).schema
    assert [(f.name, f.dataType) for f in ls.fields] == [(f.name, f.dataType) for f in sp.fields]


def test_all_rows_match_spark(spark, typed_dir):
    same_as_spark(spark, typed_dir, maxPartitionBytes="20k")


def test_spark_written_files(spark, typed_dir, tmp_path):
    out = tmp_path / "by_spark"
    spark.read.parquet(str(typed_dir)).repartition(3).write.parquet(str(out))
    assert lazy(spark, out).schema == spark.read.parquet(str(out)).schema
    same_as_spark(spark, out)


@pytest.mark.parametrize(
    ("name", "array"),
    [
        ("f16", pa.array([1.5, None], pa.float16())),
        ("ns", pa.array([1, None], pa.timestamp("ns", "UTC"))),
        ("t", pa.array([1, None], pa.time64("us"))),
    ],
)
def test_types_spark_refuses_are_refused(spark, tmp_path, name, array):
    path = tmp_path / f"{name}.parquet"
    pq.write_table(pa.table({name: array}), path)
    with pytest.raises(Exception):  # noqa: B017
        spark.read.parquet(str(path)).collect()
    with pytest.raises(Exception, match=rf"{name}.parquet") as info:
        lazy(spark, path).collect()
    assert "not supported" in str(info.value)


def test_int96_written_by_pyarrow(spark, tmp_path):
    t = pa.table({"t": pa.array([dt.datetime(1950, 5, 6, 7, 8, 9, 123456), None], pa.timestamp("us"))})
    pq.write_table(t, tmp_path / "i96.parquet", use_deprecated_int96_timestamps=True)
    same_as_spark(spark, tmp_path)
    same_as_spark(spark, tmp_path, where="t > timestamp'1950-01-01 00:00:00'", pushFilters="true")


# ---- partitions, layouts, evolution, empty inputs ------------------------------------------------


@pytest.fixture(scope="module")
def partitioned_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("parts")
    rng = np.random.default_rng(1)
    for i, (year, region) in enumerate(
        [(2020, "eu"), (2020, "us"), (2021, "eu"), (2021, "__HIVE_DEFAULT_PARTITION__"), (2022, "a b")]
    ):
        folder = d / f"year={year}" / f"region={region.replace(' ', '%20')}"
        folder.mkdir(parents=True)
        n = 50 + 10 * i
        t = pa.table({"id": pa.array(np.arange(n) + 1000 * i), "v": pa.array(rng.random(n))})
        pq.write_table(t, folder / "part-0.parquet", row_group_size=17)
    (d / "_SUCCESS").write_text("")
    return d


def test_partitioned_folder(spark, partitioned_dir):
    df = lazy(spark, partitioned_dir)
    assert df.schema == spark.read.parquet(str(partitioned_dir)).schema
    same_as_spark(spark, partitioned_dir)
    same_as_spark(spark, partitioned_dir, where="region = 'eu' and year >= 2021", pushFilters="true")
    same_as_spark(spark, partitioned_dir, where="region is null", pushFilters="true")
    same_as_spark(spark, partitioned_dir, where="region = 'a b' or id < 1010")


def test_partition_pruning_skips_files(spark, partitioned_dir):
    lazyscan.spark.last_profile()
    n = lazy(spark, partitioned_dir, pushFilters="true").where("year = 2020 and region = 'us'").count()
    assert n == 60
    p = lazyscan.spark.last_profile()
    assert p["files"] == 1, p.as_dict()


def test_files_with_different_row_group_layouts(spark, tmp_path):
    rng = np.random.default_rng(5)
    start = 0
    for name, n, rg in [("a", 5000, 1000), ("b", 3001, 37), ("c", 800, 800), ("d", 1, 1)]:
        t = pa.table({"rid": pa.array(np.arange(start, start + n)), "x": pa.array(rng.integers(0, 100, n))})
        pq.write_table(t, tmp_path / f"{name}.parquet", row_group_size=rg)
        start += n
    for size in ("4k", "128m"):
        df = lazy(spark, tmp_path, maxPartitionBytes=size, openCostInBytes="1k")
        rids = sorted(r.rid for r in df.select("rid").collect())
        assert rids == list(range(start)), f"maxPartitionBytes={size}"
    same_as_spark(spark, tmp_path, where="x < 3", pushFilters="true", maxPartitionBytes="4k")


def test_schema_evolution(spark, tmp_path):
    pq.write_table(pa.table({"id": [1, 2], "a": ["x", "y"]}), tmp_path / "p1.parquet")
    pq.write_table(pa.table({"id": [3], "a": ["z"], "added": [1.5]}), tmp_path / "p2.parquet")
    df = lazy(spark, tmp_path)
    assert df.columns == ["id", "a", "added"]
    assert sorted(df.collect()) == sorted(spark.read.option("mergeSchema", "true").parquet(str(tmp_path)).collect())
    assert {r.id: r.added for r in df.collect()} == {1: None, 2: None, 3: 1.5}
    same_as_spark(spark, tmp_path, where="added is null", pushFilters="true")
    assert lazy(spark, tmp_path, mergeSchema="false").columns in (["id", "a"], ["id", "a", "added"])


def test_empty_folder(spark, tmp_path):
    with pytest.raises(Exception, match="no Parquet or ORC files"):
        lazy(spark, tmp_path)
    df = spark.read.format("lazyscan").schema("id long, a string").load(str(tmp_path))
    assert df.collect() == []


def test_zero_row_file(spark, tmp_path):
    pq.write_table(pa.table({"id": pa.array([], pa.int64()), "s": pa.array([], pa.string())}), tmp_path / "empty.parquet")
    assert lazy(spark, tmp_path / "empty.parquet").collect() == []
    pq.write_table(pa.table({"id": [1, 2], "s": ["a", None]}), tmp_path / "full.parquet")
    same_as_spark(spark, tmp_path)


# ---- user schema, options ---------------------------------------------------------------------------


def test_user_schema_selects_columns(spark, typed_dir):
    df = spark.read.format("lazyscan").schema("S string, rid bigint, nothere int, i32 bigint").load(str(typed_dir))
    expected = spark.read.parquet(str(typed_dir)).selectExpr("s", "rid", "cast(null as int)", "cast(i32 as bigint)")
    assert df.columns == ["S", "rid", "nothere", "i32"]
    assert_same_rows(df.collect(), expected.collect(), "user schema")


def test_where_option_and_or_filters(spark, typed_dir):
    where = "i32 = 5 or s = 'abc'"
    df = lazy(spark, typed_dir, where=where)
    expected = spark.read.parquet(str(typed_dir)).where(where)
    assert_same_rows(df.collect(), expected.collect(), "where option")
    lazyscan.spark.last_profile()
    df.count()
    p = lazyscan.spark.last_profile()
    assert 0 < p["rows_returned"] < p["rows_total"]


def test_scan_options_do_not_change_rows(spark, typed_dir):
    where = "i8 between -5 and 5 and s like 'a%'"
    for opts in ({"enabled": "false"}, {"late_materialization": "false", "batch_size": "7"}, {"threads": "2"}):
        same_as_spark(spark, typed_dir, where=where, pushFilters="true", **opts)


def test_unknown_option_lists_accepted(spark, typed_dir):
    with pytest.raises(Exception, match=r"unknown option 'colour'.*batch_size"):
        lazy(spark, typed_dir, colour="blue").collect()


def test_sql_temporary_view(spark, typed_dir):
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW typed_ls USING lazyscan OPTIONS (path '{typed_dir}')")
    got = spark.sql("select count(*) c from typed_ls where i16 > 0").collect()[0].c
    assert got == spark.read.parquet(str(typed_dir)).where("i16 > 0").count()


# ---- read plans shared between scans (Spark 4.1-4.3) -----------------------------------------------


def test_reused_dataframe_and_self_join_stay_correct(spark, typed_dir):
    df = lazy(spark, typed_dir)
    sp = spark.read.parquet(str(typed_dir))
    assert df.where("i32 = 3").count() == sp.where("i32 = 3").count()
    assert df.count() == sp.count()
    a, b = df.where("i8 < -40").select("rid"), df.where("i8 > 40").select("rid")
    pa_, pb = sp.where("i8 < -40").select("rid"), sp.where("i8 > 40").select("rid")
    assert sorted(a.union(b).collect()) == sorted(pa_.union(pb).collect())


def test_forced_pushdown_on_fresh_dataframes(spark, typed_dir):
    spark_df = spark.read.parquet(str(typed_dir))
    for where in ("i32 = 3", "s = 'abc'", "f64 > 1"):
        df = lazy(spark, typed_dir, pushFilters="true").where(where)
        plan = df._jdf.queryExecution().executedPlan().toString()
        assert not re.search(r"(^|\s)Filter ", plan), plan  # all pushed: Spark does not filter again
        assert_same_rows(df.collect(), spark_df.where(where).collect(), where)


def test_pushdown_default_follows_spark():
    assert lazyscan.spark.source.pushdown_enabled("auto") == scan_scoped_read_plans()


def test_session_push_filters_on_safe_patterns(spark, typed_dir):
    """register(spark, push_filters=True): one filtered scan per DataFrame per query."""
    sp = spark.read.parquet(str(typed_dir))
    try:
        lazyscan.spark.register(spark, push_filters=True)
        for where in ("i32 = 3", "s = 'abc'", "f64 > 1 and i8 < 0"):
            df = lazy(spark, typed_dir).where(where)  # a fresh DataFrame for each query
            assert not _filtered_in_spark(df), where  # every filter pushed
            lazyscan.spark.last_profile()
            assert_same_rows(df.collect(), sp.where(where).collect(), where)
            p = lazyscan.spark.last_profile()
            assert p["rows_returned"] < p["rows_total"] == 1500
        # two DataFrames, each filtered once, in one query
        a = lazy(spark, typed_dir).where("i8 < -40").select("rid")
        b = lazy(spark, typed_dir).where("i8 > 40").select("rid")
        expected = sp.where("i8 < -40").select("rid").union(sp.where("i8 > 40").select("rid"))
        assert sorted(a.union(b).collect()) == sorted(expected.collect())
        left = lazy(spark, typed_dir).where("i16 > 0").select("rid", "i32")
        right = lazy(spark, typed_dir).where("s like 'a%'").select("rid", "s")
        sp_join = sp.where("i16 > 0").select("rid", "i32").join(sp.where("s like 'a%'").select("rid", "s"), "rid")
        assert_same_rows(left.join(right, "rid").collect(), sp_join.collect(), "join")
        # the read's own option overrides the session default
        kept = lazy(spark, typed_dir, pushFilters="false").where("i32 = 3")
        assert _filtered_in_spark(kept)
        assert_same_rows(kept.collect(), sp.where("i32 = 3").collect(), "pushFilters=false")
    finally:
        lazyscan.spark.register(spark)
    assert _filtered_in_spark(lazy(spark, typed_dir).where("i32 = 3")) != scan_scoped_read_plans()


def _worker_warnings(spark, marker: str) -> list[str]:
    logs = spark.tvf.python_worker_logs().where("logger = 'lazyscan.spark' and level = 'WARNING'")
    return [r.msg for r in logs.collect() if marker in r.msg]


@pytest.mark.skipif(scan_scoped_read_plans(), reason="this Spark keeps read plans per scan")
def test_unused_filters_warn_once_on_the_driver(spark, tmp_path):
    """The warning is logged where Spark runs pushFilters: a Python worker on the driver, whose
    log records Spark collects (python_worker_logs) or prints on the driver's stderr."""
    path = tmp_path / "warn.parquet"
    pq.write_table(pa.table({"a": pa.array(range(100), pa.int64()), "s": [f"v{i}" for i in range(100)]}), path)
    key = "spark.sql.pyspark.worker.logging.enabled"
    spark.conf.set(key, "true")
    try:
        assert lazy(spark, path).count() == 100  # no filter: nothing to say
        assert len(lazy(spark, path).collect()) == 100
        assert lazy(spark, path, pushFilters="false").where("a = 3").count() == 1  # chosen: quiet
        assert _worker_warnings(spark, str(path)) == []
        df = lazy(spark, path)
        assert df.where("a = 5").collect()[0].s == "v5"
        assert df.where("s = 'v7'").count() == 1  # the same DataFrame again: no second warning
        (message,) = _worker_warnings(spark, str(path))
        assert "a = 5" in message and "where" in message and "lazyscan.spark.read" in message
        lazy(spark, path).where("a > 90").count()  # another DataFrame: its own warning
        assert len(_worker_warnings(spark, str(path))) == 2
    finally:
        spark.conf.unset(key)


def test_where_option_on_columns_outside_the_schema(spark, typed_dir):
    """The seed's Q-B with the data source alone: output one column, filter on others."""
    sp = spark.read.parquet(str(typed_dir))
    for where in ("s = 'abc'", "i32 = 5 or s like '%b%'", "I8 > 100"):
        df = spark.read.format("lazyscan").schema("rid bigint").option("where", where).load(str(typed_dir))
        assert df.columns == ["rid"]
        assert_same_rows(df.collect(), sp.where(where).select("rid").collect(), where)
    # only rid and s are read: the same pages as lazyscan's own scan of those columns
    lazyscan.spark.last_profile()
    df = spark.read.format("lazyscan").schema("rid bigint").option("where", "s = 'abc'").load(str(typed_dir))
    df.collect()
    p = lazyscan.spark.last_profile()
    own = lazyscan.scan(str(typed_dir), columns=["rid"], where="s = 'abc'")
    own.to_table()
    every = lazyscan.scan(str(typed_dir), where="s = 'abc'")
    every.to_table()
    for counter in ("pages_total", "pages_read", "bytes_decompressed"):
        assert p[counter] == own.profile[counter] < every.profile[counter], counter


def test_where_option_on_a_column_only_in_later_files(spark, tmp_path):
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64())}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"id": pa.array([3, 4], pa.int64()), "tag": ["x", "y"]}), tmp_path / "b.parquet")
    df = spark.read.format("lazyscan").schema("id bigint").option("where", "tag = 'y'").load(str(tmp_path))
    expected = spark.read.option("mergeSchema", "true").parquet(str(tmp_path)).where("tag = 'y'").select("id")
    assert_same_rows(df.collect(), expected.collect(), "tag only in b.parquet")


# ---- errors -----------------------------------------------------------------------------------------


def test_unknown_path(spark, tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(Exception, match=r"path not found.*nope"):
        lazy(spark, missing)


def test_corrupt_file_at_schema_inference(spark, tmp_path):
    pq.write_table(pa.table({"a": [1, 2]}), tmp_path / "good.parquet")
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 this is not parquet PAR1")
    with pytest.raises(Exception, match=r"bad.parquet"):
        lazy(spark, tmp_path)


def test_corrupt_file_in_a_task(spark, tmp_path):
    t = pa.table({"a": pa.array(np.arange(10_000)), "s": pa.array([f"v{i}" for i in range(10_000)])})
    path = tmp_path / "broken.parquet"
    pq.write_table(t, path, compression="snappy", use_dictionary=False)
    data = bytearray(path.read_bytes())
    for i in range(200, 4000):
        data[i] = 0xAB
    path.write_bytes(bytes(data))
    df = spark.read.format("lazyscan").schema("a long, s string").load(str(path))
    with pytest.raises(Exception, match=r"broken.parquet") as info:
        df.collect()
    assert "lazyscan cannot read" in str(info.value)
    assert df.limit(0).collect() == []  # the Python workers survived: Spark still runs lazyscan tasks
    pq.write_table(t, tmp_path / "fine.parquet")
    assert lazy(spark, tmp_path / "fine.parquet").count() == 10_000


# ---- profiles -----------------------------------------------------------------------------------------


def test_last_profile_aggregates_tasks(spark, typed_dir):
    lazyscan.spark.last_profile()
    n = lazy(spark, typed_dir, maxPartitionBytes="8k", pushFilters="true").where("i32 = 5").count()
    per_scan = lazyscan.spark.last_profile(per_scan=True)
    assert len(per_scan) == 1
    source, tasks, profile = next(iter(per_scan.values()))
    assert source == str(typed_dir) and tasks > 1
    assert profile["rows_returned"] == n
    assert profile["rows_total"] == 1500
    assert lazyscan.spark.last_profile()["rows_total"] == 0  # consumed


def test_profile_dir(spark, typed_dir, tmp_path):
    folder = tmp_path / "profiles"
    n = lazy(spark, typed_dir, profileDir=str(folder), maxPartitionBytes="8k").count()
    ids = lazyscan.spark.profile_scan_ids(str(folder))
    assert len(ids) == 1
    tasks = os.listdir(folder / ids[0])
    assert len(tasks) > 1
    assert json.loads((folder / ids[0] / sorted(tasks)[0]).read_text())["scan_id"] == ids[0]
    assert lazyscan.spark.read_profile_dir(str(folder))["rows_returned"] == n == 1500


# ---- lazyscan.spark.read: choosing the reader ------------------------------------------------------


@pytest.fixture(scope="module")
def choice_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("choice")
    n = 60_000
    rng = np.random.default_rng(9)
    t = pa.table(
        {
            "id": pa.array(np.arange(n)),
            "cat": pa.array(rng.integers(0, 4, n)),
            "remark": pa.array([f"remark number {i} " + "x" * (i % 50) for i in range(n)]),
            "price": pa.array(rng.random(n)),
        }
    )
    pq.write_table(t, d / "data.parquet", row_group_size=10_000)
    return d


def _reader_of(df) -> str:
    plan = df._jdf.queryExecution().executedPlan().toString()
    return "lazyscan" if "BatchScan lazyscan" in plan or "MapInArrow" in plan else "spark"


#: lazyscan's fixed costs waived: the small test files show the decision on selectivity alone
FREE_FIXED = lazyscan.spark.CostModel(lazyscan_read_s=0.0, lazyscan_task_s=0.0)


def _filtered_in_spark(df) -> bool:
    plan = df._jdf.queryExecution().executedPlan().toString()
    return re.search(r"(^|\s)Filter ", plan) is not None


def test_read_picks_lazyscan_when_selective(spark, choice_dir, caplog):
    caplog.set_level("INFO", logger="lazyscan.spark")
    where = "remark = 'remark number 12345 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'"
    df = lazyscan.spark.read(spark, str(choice_dir), columns=["price", "id"], where=where, costs=FREE_FIXED)
    assert _reader_of(df) == "lazyscan"
    assert not _filtered_in_spark(df)  # the where option filters; Spark does not filter again
    assert df.columns == ["price", "id"]
    assert [r.id for r in df.collect()] == [12345]
    chosen = [r.getMessage() for r in caplog.records if "lazyscan.spark.read" in r.getMessage()]
    assert chosen and "lazyscan ~" in chosen[-1] and "row groups" in chosen[-1]
    # the chooser warns of nothing (the one-time note of a first kernel compile is not its)
    assert not [r for r in caplog.records if r.levelname == "WARNING" and r.name != "lazyscan._compile_notice"]


def test_read_small_input_goes_to_spark(spark, choice_dir):
    where = "remark = 'remark number 12345 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'"
    est = lazyscan.spark.estimate(spark, str(choice_dir), ["id"], where)
    assert not est.use_lazyscan and "fixed cost" in est.reason, est
    assert est.spark_seconds is not None and est.workload is not None and est.workload.row_groups == 6
    assert _reader_of(lazyscan.spark.read(spark, str(choice_dir), ["id"], where)) == "spark"


def test_read_picks_spark_when_not_selective(spark, choice_dir):
    est = lazyscan.spark.estimate(spark, str(choice_dir), ["id"], "cat >= 1", costs=FREE_FIXED)
    assert not est.use_lazyscan and est.selectivity is not None and est.selectivity > 0.5, est
    df = lazyscan.spark.read(spark, str(choice_dir), ["id"], "cat >= 1", costs=FREE_FIXED)
    assert _reader_of(df) == "spark"
    assert df.count() == spark.read.parquet(str(choice_dir)).where("cat >= 1").count()
    assert _reader_of(lazyscan.spark.read(spark, str(choice_dir), ["id"])) == "spark"


def test_read_statistics_prune_for_both_readers(spark, choice_dir):
    est = lazyscan.spark.estimate(spark, str(choice_dir), None, "id between 100 and 200", costs=FREE_FIXED)
    w = est.workload
    assert w is not None and (w.row_groups, w.row_groups_left, w.rows_left) == (6, 1, 10_000)
    assert est.row_groups_sampled == 1 and est.selectivity == pytest.approx(101 / 10_000)


def test_read_with_or_filter_and_forced_reader(spark, choice_dir):
    where = "id = 7 or (cat = 2 and id < 40)"
    expected = spark.read.parquet(str(choice_dir)).where(where).select("id", "cat").collect()
    for force in ("lazyscan", "spark"):
        df = lazyscan.spark.read(spark, str(choice_dir), ["id", "cat"], where, force=force)
        assert _reader_of(df) == force
        assert_same_rows(df.collect(), expected, force)
