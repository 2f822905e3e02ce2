"""The driver's check that Spark's Python workers can import this lazyscan (lazyscan.spark.workers).

Unit tests run fake interpreters (shell scripts in tmp_path) on a fake session: no JVM. One test
runs on the shared ``local[2]`` session with its workers' interpreter pointed at a virtual
environment without lazyscan: the driver says so before any job runs, and with the check off
the job fails in a worker as it would for a new user.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lazyscan
from lazyscan.errors import OptionError
from lazyscan.spark import workers
from lazyscan.spark.workers import (
    CHECK_CONF,
    check_workers,
    is_local_master,
    probe,
    resolve_python,
    worker_python,
)


class FakeConf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


class FakeContext:
    def __init__(self, python: str) -> None:
        self.pythonExec = python


class FakeSession:
    """What the check reads of a classic session: its settings and ``sparkContext.pythonExec``."""

    def __init__(self, python: str, master: str = "local[2]", **conf: str) -> None:
        self.conf = FakeConf({"spark.master": master, **conf})
        self.sparkContext = FakeContext(python)


def fake_python(folder: Path, name: str, body: str) -> Path:
    """An executable shell script standing in for an interpreter; it logs each run to ``<name>.runs``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\necho run >> '{folder / (name + '.runs')}'\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def runs(path: Path) -> int:
    log = path.parent / (path.name + ".runs")
    return len(log.read_text().splitlines()) if log.exists() else 0


WITHOUT_LAZYSCAN = (
    "echo 'Traceback (most recent call last):' >&2\n"
    "echo \"ModuleNotFoundError: No module named 'lazyscan'\" >&2\nexit 1"
)


# ---- which interpreter -------------------------------------------------------------------


def test_worker_python_is_the_contexts_interpreter():
    assert worker_python(FakeSession("/opt/env/bin/python")) == "/opt/env/bin/python"
    assert worker_python(FakeSession("")) is None


def test_worker_python_is_unknown_on_spark_connect():
    connect_session = type("SparkSession", (), {"__module__": "pyspark.sql.connect.session"})()
    assert worker_python(connect_session) is None


@pytest.mark.parametrize(
    ("master", "local"),
    [
        ("local", True),
        ("local[2]", True),
        ("local[*]", True),
        ("local[4, 3]", True),
        ("local-cluster[2, 1, 1024]", True),
        ("spark://host:7077", False),
        ("yarn", False),
        ("k8s://https://host:443", False),
        ("localhost", False),
        (None, False),
    ],
)
def test_local_masters(master, local):
    assert is_local_master(master) is local


def test_resolve_python_through_the_path(tmp_path, monkeypatch):
    python = fake_python(tmp_path / "bin", "python3", "exit 0")
    monkeypatch.setenv("PATH", f"{tmp_path / 'empty'}{os.pathsep}{python.parent}")
    assert resolve_python("python3") == str(python)
    assert resolve_python(str(python)) == str(python)
    assert resolve_python("python3-not-there") is None
    assert resolve_python(str(tmp_path / "bin" / "python9")) is None


def test_resolve_relative_path_against_the_working_folder(tmp_path, monkeypatch):
    python = fake_python(tmp_path / "env" / "bin", "python", "exit 0")
    monkeypatch.chdir(tmp_path)
    assert resolve_python(os.path.join(".", "env", "bin", "python")) == str(python)


# ---- the probe ---------------------------------------------------------------------------


def test_probe_reports_the_import_error_once_per_interpreter(tmp_path):
    python = fake_python(tmp_path, "python", WITHOUT_LAZYSCAN)
    first = probe(str(python))
    assert first.version is None
    assert first.failure == "ModuleNotFoundError: No module named 'lazyscan'"
    assert probe(str(python)) == first
    assert runs(python) == 1


def test_probe_reads_the_version(tmp_path):
    python = fake_python(tmp_path, "python", "printf 0.0.1")
    assert probe(str(python)).version == "0.0.1"


def test_probe_does_not_run_the_drivers_interpreter(monkeypatch):
    def no_run(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the driver's own interpreter was run")

    monkeypatch.setattr(subprocess, "run", no_run)
    assert probe(os.path.abspath(sys.executable)).version == lazyscan.__version__


def test_probe_that_times_out_tells_nothing_and_is_not_kept(tmp_path):
    python = fake_python(tmp_path, "python", "sleep 5")
    result = probe(str(python), timeout=0.2)
    assert (result.version, result.failure) == (None, None)
    probe(str(python), timeout=0.2)
    assert runs(python) == 2


def test_probe_runs_the_real_import(tmp_path):
    """The probe's code, run by this interpreter, prints this lazyscan's version (what a worker
    with lazyscan answers)."""
    done = subprocess.run([sys.executable, "-c", workers.PROBE_CODE], capture_output=True, text=True, check=True)
    assert done.stdout == lazyscan.__version__


# ---- the check ---------------------------------------------------------------------------


def test_check_names_the_interpreter_and_the_fix(tmp_path):
    python = fake_python(tmp_path, "python3", WITHOUT_LAZYSCAN)
    with pytest.raises(OptionError) as e:
        check_workers(FakeSession(str(python)))
    message = str(e.value)
    assert str(python) in message
    assert "No module named 'lazyscan'" in message
    assert "PYSPARK_PYTHON" in message and "spark.pyspark.python" in message
    assert sys.executable in message
    assert CHECK_CONF in message


def test_check_resolves_a_bare_name_through_the_path(tmp_path, monkeypatch):
    python = fake_python(tmp_path / "bin", "python3", WITHOUT_LAZYSCAN)
    monkeypatch.setenv("PATH", str(python.parent))
    with pytest.raises(OptionError, match="'python3' \\(" + str(python).replace("/", "\\/")):
        check_workers(FakeSession("python3"))


def test_check_reports_another_version(tmp_path):
    python = fake_python(tmp_path, "python", "printf 0.0.1")
    with pytest.raises(OptionError) as e:
        check_workers(FakeSession(str(python)))
    assert "lazyscan 0.0.1" in str(e.value)
    assert f"lazyscan {lazyscan.__version__}" in str(e.value)


def test_check_passes_the_same_version(tmp_path):
    python = fake_python(tmp_path, "python", f"printf {lazyscan.__version__}")
    check_workers(FakeSession(str(python)))
    assert runs(python) == 1


def test_check_reports_a_missing_interpreter(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(OptionError, match="'python3', which is not found in the PATH"):
        check_workers(FakeSession("python3"))


def test_check_skips_cluster_masters(tmp_path):
    python = fake_python(tmp_path, "python", WITHOUT_LAZYSCAN)
    check_workers(FakeSession(str(python), master="spark://host:7077"))
    check_workers(FakeSession(str(python), master="yarn"))
    assert runs(python) == 0


def test_check_can_be_turned_off(tmp_path):
    python = fake_python(tmp_path, "python", WITHOUT_LAZYSCAN)
    check_workers(FakeSession(str(python), **{CHECK_CONF: "false"}))
    assert runs(python) == 0
    with pytest.raises(OptionError):
        check_workers(FakeSession(str(python), **{CHECK_CONF: "true"}))


def test_register_and_read_check_before_anything_else(tmp_path):
    """Both entries raise the check's error with a fake session before touching Spark."""
    import lazyscan.spark

    python = fake_python(tmp_path, "python", WITHOUT_LAZYSCAN)
    session = FakeSession(str(python))
    with pytest.raises(OptionError, match="cannot import lazyscan"):
        lazyscan.spark.register(session)
    with pytest.raises(OptionError, match="cannot import lazyscan"):
        lazyscan.spark.read(session, str(tmp_path / "none.parquet"), ["a"], "a = 1")


# ---- local[2] ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def venv_without_lazyscan(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    return folder / "bin" / "python"


@pytest.mark.spark
def test_local_session_says_on_the_driver_that_workers_lack_lazyscan(tmp_path, monkeypatch, venv_without_lazyscan):
    import lazyscan.spark
    from tests.spark_support import get_spark

    spark = get_spark()
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": list(range(100))}), path)
    python = str(venv_without_lazyscan)
    monkeypatch.setattr(spark.sparkContext, "pythonExec", python)
    tracker = spark.sparkContext.statusTracker()
    group = "lazyscan-workers-check"
    spark.sparkContext.setJobGroup(group, "the workers check")
    try:
        with pytest.raises(OptionError) as e:
            lazyscan.spark.read(spark, str(path), ["a"], "a < 10", force="lazyscan").collect()
        message = str(e.value)
        assert python in message and "cannot import lazyscan" in message
        assert "PYSPARK_PYTHON" in message and "spark.pyspark.python" in message
        with pytest.raises(OptionError, match="cannot import lazyscan"):
            lazyscan.spark.register(spark)
        assert list(tracker.getJobIdsForGroup(group)) == []

        # with the check off the read goes ahead, and the job fails in a worker instead
        spark.conf.set(CHECK_CONF, "false")
        try:
            df = lazyscan.spark.read(spark, str(path), ["a"], "a < 10", force="lazyscan", route="tasks")
            with pytest.raises(Exception, match="No module named"):
                df.collect()
        finally:
            spark.conf.unset(CHECK_CONF)
        assert list(tracker.getJobIdsForGroup(group)) != []
    finally:
        spark.sparkContext.setJobGroup("", "")
    monkeypatch.undo()
    assert lazyscan.spark.read(spark, str(path), ["a"], "a < 10", force="lazyscan").count() == 10
