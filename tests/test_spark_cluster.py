"""lazyscan on a Spark standalone cluster, shipped the way docs/SPARK.md ("Installing on a cluster") says.

The fixture starts a master and two workers of one core each on 127.0.0.1
(:mod:`tests.support.cluster`), builds a lazyscan wheel, installs it with its ``spark`` extra in
a fresh virtual environment and packs that with venv-pack. ``spark-submit`` runs
``tests/cluster_job.py`` in client mode with ``--archives <env>.tar.gz#env``,
``spark.pyspark.python=./env/bin/python`` (executors run the unpacked Python; the driver's
folder holds ``env`` too, for the data source's planning workers), the environment's Python as
the driver's, ``NUMBA_CACHE_DIR`` set for driver and executors, and the executors in another
time zone than the session. The job reads each case through lazyscan and through Spark's own
reader; this module compares the rows and checks what the executors saw, among it that they
compiled no kernel (the archive carries them, ``lazyscan warmup --ship``).

It takes about two to three minutes on a 2-core machine (most of it building and unpacking the
environment; more when the checkout's kernels were not compiled ahead by ``make kernels``).
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

import lazyscan
from tests.spark_support import assert_same_rows, typed_table
from tests.support.cluster import REPO, packed_environment, spark_env, spark_home, start_cluster
from tests.support.jvm import TEST_JVM_OPTIONS

pytestmark = pytest.mark.spark

JOB_TIMEOUT_S = 900
EXECUTOR_TZ = "America/New_York"


def _write_data(data: Path) -> None:
    t = typed_table(3000, seed=41, unsigned=False, nested=True)
    (data / "typed").mkdir(parents=True)
    pq.write_table(t.slice(0, 1500), data / "typed" / "a.parquet", row_group_size=300)
    pq.write_table(t.slice(1500), data / "typed" / "b.parquet", row_group_size=500, write_page_index=True,
                   data_page_size=2048)
    rng = np.random.default_rng(8)
    for year in (2020, 2021, 2022):
        folder = data / "parts" / f"year={year}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"v": rng.integers(0, 100, 400), "w": rng.random(400)}), folder / "part.parquet")
    orc.write_table(t.drop_columns(["ts", "ntz", "arr", "st", "mp"]), data / "t.orc", stripe_size=64 * 1024)
    dim = pa.table({"k": pa.array([1, 2, 3, 10**12, 99, None], pa.int64()),
                    "keep": pa.array([True, True, False, True, True, True])})
    (data / "dim").mkdir()
    pq.write_table(dim, data / "dim" / "dim.parquet")
    (data / "broken").mkdir()
    good = pa.table({"a": pa.array(np.arange(20_000)), "s": pa.array([f"v{i}" for i in range(20_000)])})
    # the corrupt file is the smallest: one task, planned last (Spark packs the largest first)
    for name, table in (("good-1", good), ("good-2", good), ("bad", good.slice(0, 3000))):
        pq.write_table(table, data / "broken" / f"{name}.parquet", use_dictionary=False, row_group_size=5000)
    raw = bytearray((data / "broken" / "bad.parquet").read_bytes())
    raw[300:6000] = b"\xee" * 5700
    (data / "broken" / "bad.parquet").write_bytes(bytes(raw))


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Any:
    root = tmp_path_factory.mktemp("cluster")
    env, archive = packed_environment(root / "build")
    data, out, driver = root / "data", root / "out", root / "driver"
    _write_data(data)
    out.mkdir()
    driver.mkdir()
    (driver / "env").symlink_to(env)  # spark.pyspark.python=./env/bin/python on the driver host too
    numba_cache = root / "numba-cache"
    cluster = start_cluster(root / "cluster", workers=2, cores=1)
    try:
        command = [
            str(spark_home() / "bin" / "spark-submit"),
            "--master", cluster.url,
            "--deploy-mode", "client",
            "--archives", f"{archive}#env",
            "--conf", "spark.pyspark.python=./env/bin/python",
            "--conf", f"spark.pyspark.driver.python={env / 'bin' / 'python'}",
            "--conf", f"spark.executorEnv.NUMBA_CACHE_DIR={numba_cache}",
            "--conf", f"spark.executorEnv.TZ={EXECUTOR_TZ}",
            "--conf", "spark.sql.session.timeZone=UTC",
            "--conf", "spark.executor.cores=1",
            "--conf", "spark.executor.memory=1g",
            "--conf", "spark.driver.memory=1g",
            "--driver-java-options", TEST_JVM_OPTIONS,
            "--conf", f"spark.executor.extraJavaOptions={TEST_JVM_OPTIONS}",
            "--conf", "spark.cores.max=2",
            "--conf", "spark.ui.enabled=false",
            "--conf", "spark.task.maxFailures=2",
            str(REPO / "tests" / "cluster_job.py"), str(data), str(out),
        ]
        process_env = spark_env(NUMBA_CACHE_DIR=str(numba_cache), TZ="UTC")
        done = subprocess.run(command, cwd=driver, env=process_env, capture_output=True, timeout=JOB_TIMEOUT_S,
                              check=False)
        if done.returncode or not (out / "results.pickle").exists():
            raise AssertionError(
                f"the cluster job failed (exit {done.returncode}):\n{done.stderr.decode(errors='replace')[-6000:]}\n"
                f"cluster logs:\n{cluster.logs()}"
            )
        with open(out / "results.pickle", "rb") as f:
            results = pickle.load(f)
        yield {"results": results, "root": root, "env": env, "out": out, "numba_cache": numba_cache,
               "workers": [root / "cluster" / "worker-0", root / "cluster" / "worker-1"]}
    finally:
        cluster.stop()


def test_every_case_matches_spark(run):
    results = run["results"]
    assert not results["errors"], "\n".join(results["errors"].values())
    cases = results["cases"]
    expected = {f"tasks:{n}" for n in ("compare", "in_null", "like_or", "not_between", "decimal_bool",
                                      "timestamps", "null_safe")}
    expected |= {"source", "source_option", "auto", "relative_path", "partitions", "orc", "semi_join"}
    assert set(cases) == expected
    for name, (got, want) in cases.items():
        assert_same_rows(got, want, name)
    assert sum(len(want) for _, want in cases.values()) > 1000


def test_executors_run_the_shipped_environment(run):
    executors = run["results"]["executors"]
    folders = {e["cwd"] for e in executors}
    assert len(folders) == 2  # both executors ran Python tasks
    for e in executors:
        assert e["python"] == os.path.join(e["cwd"], "env", "bin", "python")
        assert e["package"].startswith(os.path.join(e["cwd"], "env"))  # not this checkout
        assert e["numba_cache_dir"] == str(run["numba_cache"])
        assert e["tz"] == EXECUTOR_TZ
    assert run["results"]["driver_python"] == str(run["env"] / "bin" / "python")
    assert run["results"]["session_time_zone"] == "UTC"


def test_executors_compile_nothing_with_the_shipped_kernels(run):
    """The archive carries the kernels compiled ahead (``lazyscan warmup --ship``): on a CPU of
    the portable level the executors load them and compile nothing, so nothing lands in
    NUMBA_CACHE_DIR either. On an older CPU they compile into NUMBA_CACHE_DIR, one folder for
    every copy of lazyscan. Nothing is ever written into the shipped (or the driver's)
    site-packages, so a read-only environment works."""
    from lazyscan.kernel_cache import host_runs_portable_code

    executors = run["results"]["executors"]
    indexes = list(run["numba_cache"].rglob("*.nbi"))
    if host_runs_portable_code():
        assert all(e["compiled"] == 0 for e in executors), [(e["compiled"], e["loaded"]) for e in executors]
        assert any(e["loaded"] > 0 for e in executors), executors  # the probes saw the workers that read
        assert not indexes, indexes[:3]
    else:
        assert indexes, "no numba cache index in NUMBA_CACHE_DIR"
        assert {p.relative_to(run["numba_cache"]).parts[0] for p in indexes} == {f"lazyscan-{lazyscan.__version__}"}
    for folder in [*run["workers"], run["env"]]:
        written = [p for p in folder.rglob("*.nbi") if "site-packages" in p.parts and "_kernels" not in p.parts]
        assert not written, written[:3]
    shipped = [p for p in run["env"].rglob("*.nbc") if "_kernels" in p.parts]
    assert shipped, "the environment carries no shipped kernels"


def test_profiles_from_both_channels(run):
    results = run["results"]
    per_scan = results["profile_tasks"]
    assert len(per_scan) == 7  # one planned scan per filter
    returned = sum(p["rows_returned"] for _, p in per_scan.values())
    assert returned == sum(len(got) for name, (got, _) in results["cases"].items() if name.startswith("tasks:"))
    assert all(tasks >= 1 for tasks, _ in per_scan.values())
    import lazyscan.spark

    profiles = str(run["out"] / "profiles")
    (scan_id,) = lazyscan.spark.profile_scan_ids(profiles)
    files = os.listdir(os.path.join(profiles, scan_id))
    assert len(files) == results["profile_dir_tasks"] > 2
    workers = {json.loads(Path(profiles, scan_id, f).read_text())["worker"] for f in files}
    assert len(workers) == 2  # tasks of both executors wrote their profiles
    assert lazyscan.spark.read_profile_dir(profiles)["rows_returned"] == results["profile_dir_rows"] > 0


def test_corrupt_file_fails_with_its_name(run):
    message = run["results"]["broken"]
    assert message is not None, "reading the corrupt file did not fail"
    assert "bad.parquet" in message and "lazyscan cannot read" in message
    # only the corrupt file's task failed (twice: spark.task.maxFailures=2); the good files'
    # tasks, planned first, completed (but the one still running when the job was aborted)
    tasks = run["results"]["broken_tasks"]
    assert tasks["failed"] == 2, tasks
    assert tasks["tasks"] - 2 <= tasks["completed"] <= tasks["tasks"] - 1, tasks
    assert tasks["completed"] > 2, tasks
    assert run["results"]["after_broken"] == [(i,) for i in range(7)]
