"""The Spark job that ``tests/test_spark_cluster.py`` submits to a standalone cluster.

Run by ``spark-submit`` with the packed environment's Python as the driver's. Every case reads
the same data through lazyscan and through Spark's own reader in this one session; the rows of
both, the errors and what the executors saw are pickled to ``<out>/results.pickle`` for the
test to compare.

    spark-submit ... tests/cluster_job.py <data folder> <out folder>
"""

from __future__ import annotations

import os
import pickle
import sys
import traceback
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession

FILTERS = {
    "compare": "i32 > 3 AND i64 <= 12",
    "in_null": "i16 IN (-300, 0, 600) OR i8 IS NULL",
    "like_or": "s LIKE 'a%' OR s = 'zzz' OR bin = X'6162'",
    "not_between": "NOT (f64 BETWEEN -1.5 AND 1.0) AND dt >= DATE '1999-12-31'",
    "decimal_bool": "(d18 > 1.5 OR d38 < 0) AND b",
    "timestamps": "ts >= TIMESTAMP '2000-01-01 00:00:00' AND ntz < TIMESTAMP_NTZ '2030-01-01 00:00:00'",
    "null_safe": "f32 <=> CAST('NaN' AS FLOAT) OR d9 <=> NULL",
}


def rows(df: Any) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in df.collect()]


def probe(batches: Any) -> Any:
    """What a Python worker of an executor sees."""
    import lazyscan
    from lazyscan.scan.warmup import kernel_counts

    compiled, loaded = kernel_counts()  # by this Python worker, over the tasks it ran
    for batch in batches:
        n = batch.num_rows
        yield pa.record_batch(
            [
                pa.array([os.getcwd()] * n),
                pa.array([sys.executable] * n),
                pa.array([os.environ.get("NUMBA_CACHE_DIR", "")] * n),
                pa.array([os.environ.get("TZ", "")] * n),
                pa.array([os.path.dirname(lazyscan.__file__)] * n),
                pa.array([compiled] * n, pa.int64()),
                pa.array([loaded] * n, pa.int64()),
            ],
            names=["cwd", "python", "numba_cache_dir", "tz", "package", "compiled", "loaded"],
        )


def main(data: str, out: str) -> None:
    spark = SparkSession.builder.appName("lazyscan-cluster-test").getOrCreate()
    import lazyscan.spark

    lazyscan.spark.register(spark)
    results: dict[str, Any] = {"cases": {}, "errors": {}}
    typed = os.path.join(data, "typed")
    parquet = spark.read.parquet(typed)
    cases = results["cases"]

    def case(name: str, got: Any, want: Any) -> None:
        try:
            cases[name] = (rows(got), rows(want))
        except Exception:
            results["errors"][name] = traceback.format_exc()

    lazyscan.spark.last_profile()
    for name, where in FILTERS.items():
        case(f"tasks:{name}", lazyscan.spark.read(spark, typed, ["rid", "s", "ts"], where, force="lazyscan"),
             parquet.where(where).select("rid", "s", "ts"))
    results["profile_tasks"] = {k: (v[1], v[2].as_dict()) for k, v in lazyscan.spark.last_profile(per_scan=True).items()}

    where = FILTERS["like_or"]
    case("source", lazyscan.spark.read(spark, typed, ["rid", "arr", "st"], where, force="lazyscan", route="source"),
         parquet.where(where).select("rid", "arr", "st"))
    case("source_option",
         spark.read.format("lazyscan").schema("rid bigint, mp map<string,bigint>").option("where", where).load(typed),
         parquet.where(where).select("rid", "mp"))
    case("auto", lazyscan.spark.read(spark, typed, ["rid", "d38"], "d38 > 0"), parquet.where("d38 > 0").select("rid", "d38"))
    # a path relative to the driver's working folder
    relative = os.path.relpath(typed)
    case("relative_path", lazyscan.spark.read(spark, relative, ["rid"], "i8 < 0", force="lazyscan"),
         parquet.where("i8 < 0").select("rid"))

    parts = os.path.join(data, "parts")
    where = "year >= 2021 AND v < 20"
    case("partitions", lazyscan.spark.read(spark, parts, ["year", "v", "w"], where, force="lazyscan"),
         spark.read.parquet(parts).where(where).select("year", "v", "w"))

    orc = os.path.join(data, "t.orc")
    where = "i32 > 0 OR s IS NULL"
    case("orc", lazyscan.spark.read(spark, orc, ["rid", "s", "d9"], where, force="lazyscan"),
         spark.read.orc(orc).where(where).select("rid", "s", "d9"))

    dim = spark.read.parquet(os.path.join(data, "dim")).where("keep")
    case("semi_join",
         lazyscan.spark.read(spark, typed, ["rid", "i64"], None, semi_join=(dim, "k", "i64"), force="lazyscan"),
         parquet.join(dim, parquet.i64 == dim.k, "left_semi").select("rid", "i64"))

    profiles = os.path.join(out, "profiles")
    df = lazyscan.spark.read(spark, typed, ["rid"], "s IS NOT NULL", force="lazyscan", profileDir=profiles,
                             maxPartitionBytes="8k")
    results["profile_dir_rows"] = df.count()
    results["profile_dir_tasks"] = df.rdd.getNumPartitions()

    broken = os.path.join(data, "broken")
    sc = spark.sparkContext
    sc.setJobGroup("broken", "a folder with one corrupt file")
    try:
        lazyscan.spark.read(spark, broken, ["a", "s"], "a >= 0", force="lazyscan", maxPartitionBytes="64k").collect()
        results["broken"] = None
    except Exception as e:
        results["broken"] = str(e)
    tracker = sc.statusTracker()
    stages = [s for j in tracker.getJobIdsForGroup("broken") for s in (tracker.getJobInfo(j).stageIds or [])]
    infos = [tracker.getStageInfo(s) for s in stages]
    results["broken_tasks"] = {
        "tasks": sum(i.numTasks for i in infos if i),
        "completed": sum(i.numCompletedTasks for i in infos if i),
        "failed": sum(i.numFailedTasks for i in infos if i),
    }
    sc.setJobGroup("other", "after the corrupt file")
    results["after_broken"] = rows(
        lazyscan.spark.read(spark, os.path.join(broken, "good-1.parquet"), ["a"], "a < 7", force="lazyscan")
    )

    schema = "cwd string, python string, numba_cache_dir string, tz string, package string, compiled long, loaded long"
    results["executors"] = [r.asDict() for r in spark.range(8, numPartitions=8).mapInArrow(probe, schema).collect()]
    results["driver_python"] = sys.executable
    results["session_time_zone"] = spark.conf.get("spark.sql.session.timeZone")
    with open(os.path.join(out, "results.pickle"), "wb") as f:
        pickle.dump(results, f)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
