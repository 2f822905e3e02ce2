"""Transparent mode on S3: ``spark.read.parquet("s3a://...")`` and catalog tables located on S3
are read by lazyscan's tasks with Hadoop's S3A settings (endpoint, region, keys, per-bucket
overrides) passed on as the scan's ``fs.*`` options, and give the rows of the same files read
locally. The tests' S3 server is moto's; Spark's driver lists the files through a stand-in
Hadoop file system over the same files (``tests/support/hadoop_fs.py``), as PySpark ships no S3
connector. Other schemes keep Spark's reader, with the reason."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import lazyscan.spark
from lazyscan.spark.extension import ENABLED_CONF
from tests.spark_extension_support import (
    extension_session,
    rule_decisions,
    scan_options,
    scan_routes,
)
from tests.spark_support import assert_same_rows, get_spark
from tests.support.hadoop_fs import bucket_folders
from tests.support.s3 import ACCESS_KEY, REGION, SECRET_KEY, S3Server, upload_partitions

pytestmark = pytest.mark.spark

BUCKET = "lazyscan-rule"
WHERE = "k = 7 OR s = 's12'"


@pytest.fixture(scope="module")
def folder(s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Files under ``<folder>/<BUCKET>/t`` (two partitions), uploaded to the same keys."""
    root = tmp_path_factory.mktemp("rule-s3")
    upload_partitions(s3_server, root / BUCKET / "t", BUCKET, "t", rows=4000, seed=11)
    return root


@pytest.fixture(scope="module")
def spark(folder: Path) -> Iterator[Any]:
    shared = get_spark()
    session = extension_session(shared)
    with bucket_folders(session, folder, schemes=("s3a", "gs")):
        yield session
    lazyscan.spark.register(shared)


@pytest.fixture
def s3a_settings(spark: Any, s3_server: S3Server) -> Iterator[dict[str, str]]:
    """Hadoop's S3A settings for the test server, set in the session for one test."""
    settings = {
        "fs.s3a.endpoint": s3_server.endpoint,
        "fs.s3a.endpoint.region": REGION,
        "fs.s3a.access.key": ACCESS_KEY,
        "fs.s3a.secret.key": SECRET_KEY,
        "fs.s3a.path.style.access": "true",
    }
    yield from _set(spark, settings)


def _set(spark: Any, settings: dict[str, str]) -> Iterator[dict[str, str]]:
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        yield settings
    finally:
        for k in settings:
            spark.conf.unset(k)


def _local(spark: Any, folder: Path, where: str) -> list[Any]:
    spark.conf.set(ENABLED_CONF, "false")
    try:
        return spark.read.parquet(str(folder / BUCKET / "t")).where(where).collect()
    finally:
        spark.conf.set(ENABLED_CONF, "true")


def test_s3a_path_is_read_by_lazyscan_with_hadoops_settings(spark, folder, s3_server, s3a_settings) -> None:
    df = spark.read.parquet(f"s3a://{BUCKET}/t").where(WHERE)
    [options] = scan_options(df)
    assert options["path"] == f"s3a://{BUCKET}/t"
    assert options["fs.endpoint_override"] == s3_server.host_port
    assert options["fs.scheme"] == "http"
    assert options["fs.force_virtual_addressing"] == "false"
    assert options["fs.region"] == REGION
    assert (options["fs.access_key"], options["fs.secret_key"]) == (ACCESS_KEY, SECRET_KEY)
    assert scan_routes(df) == ["tasks"]
    expected = _local(spark, folder, WHERE)
    assert len(expected) > 0
    assert_same_rows(df.collect(), expected)


def test_partition_filter_and_the_data_source_route(spark, folder, s3a_settings) -> None:
    where = "part = 1 AND id BETWEEN 4100 AND 4400 AND x > 0"
    left = spark.read.parquet(f"s3a://{BUCKET}/t").where(where)
    right = spark.read.parquet(f"s3a://{BUCKET}/t").where("k < 3").select("id", "k")
    df = left.join(right, "id")  # two relations: the data source route
    assert scan_routes(df) == ["source", "source"]
    local = str(folder / BUCKET / "t")
    spark.conf.set(ENABLED_CONF, "false")
    try:
        expected = (spark.read.parquet(local).where(where)
                    .join(spark.read.parquet(local).where("k < 3").select("id", "k"), "id").collect())
    finally:
        spark.conf.set(ENABLED_CONF, "true")
    assert len(expected) > 0
    assert_same_rows(df.collect(), expected)


def test_secrets_stay_out_of_plans_and_decisions(spark, s3a_settings) -> None:
    df = spark.read.parquet(f"s3a://{BUCKET}/t").where(WHERE)
    shown = df._jdf.queryExecution().toString() + str(df._jdf.queryExecution().executedPlan().toString())
    assert "lazyscan(where:" in shown
    assert SECRET_KEY not in shown and ACCESS_KEY not in shown
    assert not any(SECRET_KEY in d for d in rule_decisions(spark))


def test_a_buckets_own_endpoint_wins(spark, folder, s3_server) -> None:
    settings = {
        "fs.s3a.endpoint": "http://127.0.0.1:9",  # nothing listens there
        f"fs.s3a.bucket.{BUCKET}.endpoint": s3_server.endpoint,
        f"fs.s3a.bucket.{BUCKET}.path.style.access": "true",
        "fs.s3a.endpoint.region": REGION,
        "fs.s3a.access.key": ACCESS_KEY,
        "fs.s3a.secret.key": SECRET_KEY,
    }
    for _ in _set(spark, settings):
        df = spark.read.parquet(f"s3a://{BUCKET}/t").where(WHERE)
        [options] = scan_options(df)
        assert options["fs.endpoint_override"] == s3_server.host_port
        assert_same_rows(df.collect(), _local(spark, folder, WHERE))


def test_endpoint_without_scheme_and_anonymous_provider(spark) -> None:
    settings = {
        "fs.s3a.endpoint": "minio.example:9000/",
        "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider",
        "fs.s3a.access.key": ACCESS_KEY,
    }
    for _ in _set(spark, settings):
        [options] = scan_options(spark.read.parquet(f"s3a://{BUCKET}/t").where(WHERE))
    assert options["fs.endpoint_override"] == "minio.example:9000"
    assert options["fs.scheme"] == "http"
    assert options["fs.force_virtual_addressing"] == "true"  # S3A's default: virtual hosts
    assert options["fs.anonymous"] == "true"
    assert "fs.access_key" not in options


def test_catalog_table_on_s3(spark, folder, s3a_settings) -> None:
    spark.sql("DROP TABLE IF EXISTS rule_s3_table")
    spark.sql(f"CREATE TABLE rule_s3_table (id BIGINT, k BIGINT, s STRING, x DOUBLE, part INT) "
              f"USING parquet PARTITIONED BY (part) LOCATION 's3a://{BUCKET}/t'")
    try:
        spark.sql("ALTER TABLE rule_s3_table RECOVER PARTITIONS")
        query = f"SELECT id, s FROM rule_s3_table WHERE part = 0 AND ({WHERE})"
        df = spark.sql(query)
        [options] = scan_options(df)
        assert options["table"].endswith("rule_s3_table")
        assert f"s3a://{BUCKET}/t" in options["catalogTable"]
        assert options["fs.endpoint_override"]
        expected = [r for r in _local(spark, folder, f"part = 0 AND ({WHERE})")]
        assert len(expected) > 0
        assert_same_rows(df.collect(), [(r["id"], r["s"]) for r in expected])
    finally:
        spark.sql("DROP TABLE IF EXISTS rule_s3_table")


def test_other_schemes_keep_sparks_reader_with_the_reason(spark, folder) -> None:
    df = spark.read.parquet(f"gs://{BUCKET}/t").where(WHERE)
    assert scan_options(df) == []
    assert any("files on gs://" in d for d in rule_decisions(spark))
    mixed = spark.read.parquet(f"s3a://{BUCKET}/t/part=0", str(folder / BUCKET / "t" / "part=1")).where(WHERE)
    assert scan_options(mixed) == []
    assert any("different settings" in d for d in rule_decisions(spark))


def test_cost_model_reads_the_footer_from_s3(spark, s3a_settings) -> None:
    spark.conf.set("spark.lazyscan.choice", "auto")
    try:
        df = spark.read.parquet(f"s3a://{BUCKET}/t").where("id = 17")
        df._jdf.queryExecution().optimizedPlan()
        decided = [d for d in rule_decisions(spark) if d.startswith(f"s3a://{BUCKET}/t: ")]
    finally:
        spark.conf.set("spark.lazyscan.choice", "lazyscan")
    assert decided and all("row groups" in d for d in decided)  # the model saw the footer
    assert not any("error" in d.lower() or "failed" in d.lower() for d in decided)
