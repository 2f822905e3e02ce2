"""Spark tasks reading from the S3 server (moto's, on 127.0.0.1) through the ``fs.*`` options:
the data source and ``lazyscan.spark.read`` give the rows of the local files."""

from __future__ import annotations

from pathlib import Path

import pytest

import lazyscan.spark
from tests.spark_support import assert_same_rows, get_spark
from tests.support.s3 import S3Server, upload_partitions

pytestmark = pytest.mark.spark

BUCKET = "lazyscan-spark"


@pytest.fixture(scope="module")
def spark():
    return get_spark()


@pytest.fixture(scope="module")
def folder(s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("spark-s3")
    upload_partitions(s3_server, root, BUCKET, "t", rows=5000, seed=5)
    return root


@pytest.mark.parametrize("uri_scheme", ["s3", "s3a"])
def test_data_source_reads_s3_in_tasks(spark, s3_server: S3Server, folder: Path, uri_scheme: str) -> None:
    lazyscan.spark.register(spark)
    where = "k = 7 OR s = 's12'"
    reader = spark.read.format("lazyscan").option("where", where)
    for k, v in s3_server.fs_options().items():
        reader = reader.option(k, v)
    got = reader.load(f"{uri_scheme}://{BUCKET}/t").collect()
    expected = spark.read.parquet(str(folder)).where(where).collect()
    assert len(expected) > 0
    assert_same_rows(got, expected, uri_scheme)


def test_spark_read_chooser_on_s3(spark, s3_server: S3Server, folder: Path) -> None:
    lazyscan.spark.register(spark)
    where = "id BETWEEN 1200 AND 1300 AND part = 0"
    df = lazyscan.spark.read(
        spark, f"s3://{BUCKET}/t", columns=["id", "x"], where=where, force="lazyscan", **s3_server.fs_options()
    )
    expected = spark.read.parquet(str(folder)).where(where).select("id", "x").collect()
    assert_same_rows(df.collect(), expected)
    assert len(expected) == 101


def test_missing_bucket_fails_the_query_with_the_path(spark, s3_server: S3Server) -> None:
    lazyscan.spark.register(spark)
    reader = spark.read.format("lazyscan")
    for k, v in s3_server.fs_options().items():
        reader = reader.option(k, v)
    with pytest.raises(Exception) as info:
        reader.load("s3://no-such-bucket-here/t").collect()
    assert "no-such-bucket-here/t" in str(info.value)
