"""``lazyscan.spark.read`` through ``mapInArrow`` over planned tasks (``route="tasks"``).

This module runs in both test environments: PySpark 4.x (``.venv``) and PySpark 3.5
(``.venv-spark35``, where Spark has no Python data source and the tasks are the only route).
Every result is compared with ``spark.read.parquet`` / ``spark.read.orc`` and the same filter as
a Spark SQL ``where``, in the same session.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from functools import reduce
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

import lazyscan.spark
from lazyscan.errors import LazyScanError, UnsupportedFeatureError
from lazyscan.predicate.expr import to_sql
from lazyscan.spark.compat import HAS_PYTHON_DATA_SOURCE, spark_version
from tests.spark_support import assert_same_rows, get_spark, hits_spark_bigint_quirk, typed_table
from tests.support.random_data import random_predicate

pytestmark = pytest.mark.spark

#: one task per file range: Spark's task overhead, not lazyscan, dominates these small scans
ONE_TASK = {"minPartitionNum": "1", "openCostInBytes": "1"}
SCALAR_COLUMNS = ["b", "i8", "i16", "i32", "i64", "f32", "f64", "d9", "d18", "d38", "s", "bin", "dt", "ts", "ntz"]


@pytest.fixture(scope="session")
def spark():
    return get_spark()


def tasks_read(spark: Any, path: Any, columns: Any = None, where: Any = None, **options: Any) -> Any:
    return lazyscan.spark.read(spark, str(path), columns, where, force="lazyscan", route="tasks", **options)


@pytest.fixture(scope="module")
def typed_dir(tmp_path_factory):
    """Two pyarrow files of every scalar and nested type: small row groups, a page index."""
    d = tmp_path_factory.mktemp("routes_typed")
    t = typed_table(3000, seed=21, unsigned=False, nested=True)
    pq.write_table(t.slice(0, 1200), d / "a.parquet", row_group_size=200, use_dictionary=True)
    pq.write_table(
        t.slice(1200), d / "b.parquet", row_group_size=450, use_dictionary=["s", "i32"],
        data_page_size=1024, write_page_index=True,
    )
    return d


def _filters(schema: pa.Schema, n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    out: list[str] = []
    while len(out) < n:
        e = random_predicate(rng, schema, 2, columns=SCALAR_COLUMNS, empty_in=False, constants=False)
        if not hits_spark_bigint_quirk(e):
            out.append(to_sql(e))
    return out


def _tagged(frames: list[Any]) -> Counter[tuple[int, int]]:
    union = reduce(lambda a, b: a.union(b), [df.select(F.lit(i).alias("q"), "rid") for i, df in enumerate(frames)])
    return Counter((r.q, r.rid) for r in union.collect())


@pytest.mark.parametrize("seed", [1, 2])
def test_random_filters_match_spark(spark, typed_dir, seed):
    """Random filters (AND, OR, NOT, IN, LIKE, IS NULL, BETWEEN, <=> over every scalar type)
    through the tasks route against Spark's reader with the same SQL filter: 30 in one task
    each, 15 split into 3 tasks per file (each Python task costs Spark 60-75 ms)."""
    split = seed % 2 == 0
    filters = _filters(pq.read_schema(typed_dir / "a.parquet"), 15 if split else 30, seed)
    options = {"maxPartitionBytes": "40k"} if split else ONE_TASK
    got = _tagged([tasks_read(spark, typed_dir, ["rid"], f, **options) for f in filters])
    plain = spark.read.parquet(str(typed_dir))
    want = _tagged([plain.where(f) for f in filters])
    for i, f in enumerate(filters):
        g = sorted(r for q, r in got.elements() if q == i)
        w = sorted(r for q, r in want.elements() if q == i)
        assert g == w, f"{f}: lazyscan {len(g)} rows, Spark {len(w)}; first differences {sorted(set(g) ^ set(w))[:5]}"
    assert sum(want.values()) > 0


def test_every_column_with_nested_types(spark, typed_dir):
    where = "i32 BETWEEN -5 AND 5 OR s LIKE 'a%'"
    if spark_version() < (3, 5):  # PySpark 3.4's mapInArrow returns no struct column
        with pytest.raises(UnsupportedFeatureError, match=r"'st' \(struct<x:int,y:string>\).*PySpark 3.5"):
            tasks_read(spark, typed_dir, None, where)
        rest = [c for c in spark.read.parquet(str(typed_dir)).columns if c != "st"]
        got = tasks_read(spark, typed_dir, rest, where)
        want = spark.read.parquet(str(typed_dir)).where(where).select(*rest)
        assert_same_rows(got.collect(), want.collect(), where)
        return
    got = tasks_read(spark, typed_dir, None, where, maxPartitionBytes="16k")
    want = spark.read.parquet(str(typed_dir)).where(where)
    assert got.columns == want.columns
    assert got.schema == want.schema
    assert_same_rows(got.collect(), want.collect(), where)


def test_tasks_follow_the_split_settings(spark, typed_dir):
    one = tasks_read(spark, typed_dir, ["rid"], "i32 > 0", **ONE_TASK)
    many = tasks_read(spark, typed_dir, ["rid"], "i32 > 0", maxPartitionBytes="8k")
    assert one.rdd.getNumPartitions() == 1  # both small files in one task
    assert many.rdd.getNumPartitions() > 4
    assert sorted(one.collect()) == sorted(many.collect())


def test_partitioned_folder_prunes_files(spark, tmp_path):
    rng = np.random.default_rng(3)
    root = tmp_path / "data"
    for year in (2020, 2021, 2022):
        for part in ("x", "y"):
            folder = root / f"year={year}" / f"part={part}"
            folder.mkdir(parents=True)
            n = 500
            t = pa.table({"v": pa.array(rng.integers(0, 100, n)), "w": pa.array(rng.random(n))})
            pq.write_table(t, folder / "data.parquet")
    where = "year >= 2021 AND part = 'y' AND v < 10"
    profiles = tmp_path / "profiles"
    got = tasks_read(spark, root, None, where, profileDir=str(profiles), **ONE_TASK)
    want = spark.read.parquet(str(root)).where(where)
    assert sorted(got.columns) == sorted(want.columns)
    assert_same_rows(got.select(*want.columns).collect(), want.collect(), where)
    # two of the six files are read: partition values rule out the others on the driver
    assert lazyscan.spark.read_profile_dir(str(profiles))["rows_total"] == 2 * 500
    # no file left: no task, an empty DataFrame of the same columns
    none = tasks_read(spark, root, ["v", "year"], "year = 1999 AND v > 1")
    assert none.collect() == [] and none.columns == ["v", "year"]


def test_orc_file(spark, tmp_path):
    # Spark's ORC reader fails on timestamps before 1970 with a fraction ("nanos > 999999999")
    t = typed_table(2000, seed=5, unsigned=False, nested=False).drop_columns(["ntz", "ts"])
    orc.write_table(t, tmp_path / "t.orc", stripe_size=64 * 1024)
    where = "(i16 > 100 AND s IS NOT NULL) OR d9 = 2.25"
    got = tasks_read(spark, tmp_path / "t.orc", ["rid", "s", "d9", "dt"], where)
    want = spark.read.orc(str(tmp_path / "t.orc")).where(where).select("rid", "s", "d9", "dt")
    assert_same_rows(got.collect(), want.collect(), where)


def test_semi_join_key_filter(spark, typed_dir):
    dim = spark.createDataFrame([(k,) for k in (-3, 0, 7, 11, None)], "k int")
    got = tasks_read(spark, typed_dir, ["rid", "i32"], None, semi_join=(dim, "k", "i32"))
    want = spark.read.parquet(str(typed_dir)).where("i32 IN (-3, 0, 7, 11)").select("rid", "i32")
    assert_same_rows(got.collect(), want.collect(), "semi join on i32")


def test_the_driver_binds_the_filter_once(spark, typed_dir, monkeypatch):
    """The plan binds ``where`` and each key filter once; the estimate's samples, the cost model
    and the tasks use the bound filter (the tasks bind nothing: see test_spark_bind_once.py)."""
    import sys

    from lazyscan.predicate import bind
    from lazyscan.predicate.keys import key_filter

    calls = []

    def counting(*args, **kwargs):
        calls.append(args[0])
        return bind(*args, **kwargs)

    for name, module in list(sys.modules.items()):
        if name.startswith("lazyscan") and getattr(module, "bind", None) is bind:
            monkeypatch.setattr(module, "bind", counting)
    keys = key_filter(pa.array([-3, 0, 7, 11], pa.int32()))
    where = "i64 > 0 OR s IS NULL"
    for force in ("lazyscan", None):
        calls.clear()
        got = lazyscan.spark.read(spark, str(typed_dir), ["rid", "i32"], where, force=force, route="tasks", semi_join=(keys, "i32"))
        assert len(calls) == 2, calls  # the where text, the key filter
        want = spark.read.parquet(str(typed_dir)).where(f"({where}) AND i32 IN (-3, 0, 7, 11)").select("rid", "i32")
        assert_same_rows(got.collect(), want.collect(), f"force={force}")


def test_profile_through_the_accumulator(spark, typed_dir):
    lazyscan.spark.last_profile()
    n = tasks_read(spark, typed_dir, ["rid"], "i32 = 5", maxPartitionBytes="8k").count()
    per_scan = lazyscan.spark.last_profile(per_scan=True)
    assert len(per_scan) == 1
    source, tasks, profile = next(iter(per_scan.values()))
    assert source == str(typed_dir) and tasks > 2
    assert profile["rows_returned"] == n > 0
    assert profile["rows_total"] == 3000  # each row group in exactly one task


def test_profile_dir(spark, typed_dir, tmp_path):
    folder = tmp_path / "profiles"
    df = tasks_read(spark, typed_dir, ["rid", "s"], "s = 'abc'", profileDir=str(folder), maxPartitionBytes="8k")
    n = df.count()
    (scan_id,) = lazyscan.spark.profile_scan_ids(str(folder))
    files = sorted(os.listdir(folder / scan_id))
    assert len(files) == df.rdd.getNumPartitions() > 2  # one file per task
    assert json.loads((folder / scan_id / files[0]).read_text())["scan_id"] == scan_id
    profile = lazyscan.spark.read_profile_dir(str(folder))
    assert profile["rows_returned"] == n > 0
    assert profile["rows_total"] == 3000


def test_corrupt_file_fails_its_task_with_the_path(spark, tmp_path):
    t = pa.table({"a": pa.array(np.arange(10_000)), "s": pa.array([f"v{i}" for i in range(10_000)])})
    pq.write_table(t, tmp_path / "fine.parquet")
    pq.write_table(t, tmp_path / "broken.parquet", compression="snappy", use_dictionary=False)
    data = bytearray((tmp_path / "broken.parquet").read_bytes())
    data[200:4000] = b"\xab" * 3800
    (tmp_path / "broken.parquet").write_bytes(bytes(data))
    df = tasks_read(spark, tmp_path, ["a", "s"], "a >= 0", **ONE_TASK)
    with pytest.raises(Exception, match=r"broken\.parquet") as info:
        df.collect()
    assert "lazyscan cannot read" in str(info.value)
    # the Python workers survive: the good file still reads
    assert tasks_read(spark, tmp_path / "fine.parquet", ["a"], "a < 10").count() == 10


def test_planner_never_sees_a_small_scan(spark, typed_dir):
    """Spark must not broadcast a lazyscan scan because of a size it does not know: the tasks
    DataFrame is as large as Spark's default size, like a Python data source's scan."""
    df = tasks_read(spark, typed_dir, ["rid", "i32"], "i32 > 0")
    size = df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()
    assert int(str(size)) >= 2**62
    small = spark.createDataFrame([(1,), (2,)], "i32 int")
    plan = df.join(small, "i32")._jdf.queryExecution().executedPlan().toString()
    assert "MapInArrow" in plan or "PythonMapInArrow" in plan
    broadcast = [line for line in plan.splitlines() if "BroadcastExchange" in line]
    assert all("MapInArrow" not in line for line in broadcast)


@pytest.mark.parametrize("where", ["s = 'abc'", "i32 > -100 OR s IS NULL", "dt IS NOT NULL AND i8 < 40"])
def test_chooser_rows_match_spark(spark, typed_dir, where):
    """Without ``force`` the chooser picks a reader (and the route); the rows are Spark's."""
    got = lazyscan.spark.read(spark, str(typed_dir), ["rid", "s", "dt"], where)
    want = spark.read.parquet(str(typed_dir)).where(where).select("rid", "s", "dt")
    assert_same_rows(got.collect(), want.collect(), where)


def test_unknown_route_and_column(spark, typed_dir):
    with pytest.raises(ValueError, match="route"):
        lazyscan.spark.read(spark, str(typed_dir), ["rid"], "i32 = 1", route="mapinarrow")
    with pytest.raises(LazyScanError, match="nope"):
        tasks_read(spark, typed_dir, ["nope"], "i32 = 1")


@pytest.mark.skipif(HAS_PYTHON_DATA_SOURCE, reason="Spark before 4.1 only")
def test_old_spark_has_only_the_tasks_route(spark, typed_dir):
    assert spark_version() < (4, 1)
    assert lazyscan.spark.register(spark) is None
    with pytest.raises(LazyScanError, match="route='tasks'"):
        lazyscan.spark.read(spark, str(typed_dir), ["rid"], "i32 = 1", force="lazyscan", route="source")
    # auto takes the tasks
    df = lazyscan.spark.read(spark, str(typed_dir), ["rid"], "i32 = 1", force="lazyscan")
    assert "MapInArrow" in df._jdf.queryExecution().executedPlan().toString()


@pytest.mark.skipif(not HAS_PYTHON_DATA_SOURCE, reason="Spark 4.1 or later only")
def test_both_routes_give_the_same_rows(spark, typed_dir):
    where = "s LIKE '%b%' OR (f64 > 0.5 AND dt >= DATE '2000-01-01')"
    source = lazyscan.spark.read(spark, str(typed_dir), ["rid", "s", "f64"], where, force="lazyscan", route="source")
    tasks = tasks_read(spark, typed_dir, ["rid", "s", "f64"], where)
    assert "BatchScan lazyscan" in source._jdf.queryExecution().executedPlan().toString()
    assert_same_rows(tasks.collect(), source.collect(), where)
