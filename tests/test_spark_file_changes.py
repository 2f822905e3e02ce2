"""Spark jobs over files replaced after the DataFrame was built: the driver's plan carries each
file's version to the tasks, a task whose file is no longer that version fails the job with a
message naming the file and saying it changed, and a DataFrame built afterwards reads the new
file (in the same, reused Python workers, whose footer caches must not serve the old footer)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lazyscan.spark
from tests.spark_support import assert_same_rows, get_spark
from tests.support.s3 import S3Server
from tests.test_file_changes import WHERE, _rewrite, _versions, expected_rows

pytestmark = pytest.mark.spark

BUCKET = "lazyscan-spark-changes"


@pytest.fixture(scope="module")
def spark() -> Any:
    return get_spark()


def _rows(table: pa.Table, columns: list[str]) -> list[tuple[Any, ...]]:
    return list(zip(*(table[c].to_pylist() for c in columns)))


def _assert_changed(collect: Any, name: str) -> None:
    with pytest.raises(Exception) as info:  # Spark wraps the task's error in its own
        collect()
    text = str(info.value)
    assert "FileChangedError: changed since planning" in text, text[-3000:]  # the class is named
    assert name in text, text[-3000:]


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
@pytest.mark.parametrize("same_size", [True, False], ids=["same-size", "other-size"])
def test_file_replaced_before_collect_fails_the_tasks_route(spark: Any, tmp_path: Path, fmt: str, same_size: bool) -> None:
    path, other, table = _versions(tmp_path, fmt, same_size)
    columns = ["a", "b"]

    def frame() -> Any:
        return lazyscan.spark.read(spark, str(path), columns, WHERE, force="lazyscan", route="tasks")

    assert frame().count() == 0  # the first version holds no row of WHERE; workers now hold its footer
    df = frame()
    _rewrite(path, other, in_place=True)
    _assert_changed(df.collect, str(path))
    assert_same_rows(frame().collect(), _rows(expected_rows(table), columns))


def test_file_replaced_before_collect_fails_the_data_source(spark: Any, tmp_path: Path) -> None:
    path, other, table = _versions(tmp_path, "parquet", True)
    lazyscan.spark.register(spark)

    def frame() -> Any:
        return spark.read.format("lazyscan").option("where", WHERE).load(str(path))

    assert frame().count() == 0
    df = frame()
    _rewrite(path, other, in_place=False)
    _assert_changed(df.collect, str(path))
    assert_same_rows(frame().select("a", "b").collect(), _rows(expected_rows(table), ["a", "b"]))


def test_object_replaced_before_collect_fails_the_job(spark: Any, s3_server: S3Server, tmp_path: Path) -> None:
    path, other, table = _versions(tmp_path, "parquet", True)
    key = "changes/t.parquet"
    s3_server.upload(path, BUCKET, key)
    uri = f"s3://{BUCKET}/{key}"

    options: dict[str, Any] = dict(s3_server.fs_options())

    def frame() -> Any:
        return lazyscan.spark.read(spark, uri, ["a", "b"], WHERE, force="lazyscan", route="tasks", **options)

    assert frame().count() == 0
    df = frame()
    s3_server.upload(other, BUCKET, key)
    _assert_changed(df.collect, f"{BUCKET}/{key}")
    assert_same_rows(frame().collect(), _rows(expected_rows(table), ["a", "b"]))
