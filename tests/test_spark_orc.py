"""The ``lazyscan`` Spark source over ORC files: the same rows as Spark's own ORC reader."""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as porc
import pytest

import lazyscan
import lazyscan.spark
from tests.spark_support import assert_same_rows, get_spark

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark():
    return get_spark()


@pytest.fixture(scope="module")
def orc_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    rng = np.random.default_rng(4)
    root = tmp_path_factory.mktemp("spark-orc")
    for part, n in (("a", 30_000), ("b", 20_000)):
        folder = root / f"part={part}"
        folder.mkdir()
        table = pa.table({
            "k": pa.array(np.sort(rng.integers(0, 100_000, n))),
            "i": pa.array(rng.integers(-100, 100, n).astype(np.int32), mask=rng.random(n) < 0.1),
            "f": pa.array(rng.normal(size=n)),
            "s": pa.array([f"word{x}" for x in rng.integers(0, 300, n)], mask=rng.random(n) < 0.05),
            "d": pa.array(rng.integers(17_000, 20_000, n).astype(np.int32), pa.date32()),
            "m": pa.array([decimal.Decimal(int(x)).scaleb(-2) for x in rng.integers(-10**6, 10**6, n)], pa.decimal128(10, 2)),
            "b": pa.array(rng.random(n) < 0.5),
            "ts": pa.array(rng.integers(0, 2 * 10**18, n) // 1000 * 1000, pa.timestamp("ns")),
        })
        porc.write_table(table, folder / "part-0.orc", compression="zstd", stripe_size=128 * 1024)
    return str(root)


WHERES = [
    "k BETWEEN 1000 AND 5000",
    "s = 'word7' AND i > 0",
    "m < 0 OR b",
    "d >= DATE '2020-01-01' AND part = 'b'",
    "s IS NULL",
]


@pytest.mark.parametrize("where", WHERES)
def test_where_option_equals_spark_orc_reader(spark, orc_dir: str, where: str) -> None:
    prev = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    try:
        got = spark.read.format("lazyscan").option("where", where).load(orc_dir).collect()
        expected = spark.read.orc(orc_dir).where(where).collect()
        assert len(expected) > 0
        assert_same_rows(got, expected, where)
    finally:
        spark.conf.set("spark.sql.session.timeZone", prev)


def test_schema_equals_spark_orc_reader(spark, orc_dir: str) -> None:
    ours = spark.read.format("lazyscan").load(orc_dir).schema
    theirs = spark.read.orc(orc_dir).schema
    assert [(f.name, f.dataType) for f in ours.fields] == [(f.name, f.dataType) for f in theirs.fields]


def test_profile_counts_stripes(spark, orc_dir: str) -> None:
    lazyscan.spark.last_profile()
    rows = spark.read.format("lazyscan").option("where", "k < 100").load(orc_dir).collect()
    profile = lazyscan.spark.last_profile()
    assert profile.counters["rows_returned"] == len(rows)
    assert profile.counters["row_groups_pruned_stats"] > 0  # sorted k: later stripes pruned


def test_lazyscan_spark_read_takes_orc(spark, orc_dir: str) -> None:
    where = "k BETWEEN 1000 AND 5000 AND s LIKE 'word1%'"
    got = lazyscan.spark.read(spark, orc_dir, ["k", "s", "m"], where=where).collect()
    expected = spark.read.orc(orc_dir).where(where).select("k", "s", "m").collect()
    assert len(expected) > 0
    assert_same_rows(got, expected, where)
    forced = lazyscan.spark.read(spark, orc_dir, ["k", "s", "m"], where=where, force="spark")
    assert "orc" in forced._jdf.queryExecution().simpleString().lower()
    assert_same_rows(forced.collect(), expected, where)


def test_spark_written_orc_reads_as_spark_reads_it(spark, tmp_path) -> None:
    from lazyscan.orc import OrcFile

    rows = [(i, decimal.Decimal(i * 7 % 10_000) / 100, f"c{i % 13}", None if i % 11 == 0 else decimal.Decimal(i) / 1000)
            for i in range(20_000)]
    df = spark.createDataFrame(rows, "k long, price decimal(12,2), s string, tiny decimal(9,3)")
    out = str(tmp_path / "spark.orc")
    df.repartition(1).write.orc(out)
    # ORC Java writes each decimal at its own scale: read back at the column's scale
    got = lazyscan.scan(out, where="k < 5000 OR price < 1").to_table()
    expected = spark.read.orc(out).where("k < 5000 OR price < 1").collect()
    assert_same_rows([tuple(r.values()) for r in got.to_pylist()], [tuple(r) for r in expected])
    f = OrcFile(next(p for p in (tmp_path / "spark.orc").iterdir() if p.suffix == ".orc"))
    assert f.read_column(0, "price").to_pylist()[:3] == [r[1] for r in rows[:3]]


def test_chooser_models_orc_stripes(spark, orc_dir: str) -> None:
    """The estimate reads ORC stripes (statistics prune them, streams give the bytes) and
    compares with Spark's ORC reader."""
    from lazyscan.orc import OrcFile

    stripes = sum(OrcFile(p).num_stripes for p in Path(orc_dir).rglob("*.orc"))
    free = lazyscan.spark.CostModel(lazyscan_read_s=0.0, lazyscan_task_s=0.0)
    needle = lazyscan.spark.estimate(spark, orc_dir, ["k", "s"], where="k BETWEEN 1000 AND 1010", costs=free)
    w = needle.workload
    assert w is not None and w.format == "orc"
    assert w.row_groups == stripes
    assert 0 < w.row_groups_left < stripes  # k is sorted: statistics leave the stripes holding the range
    assert w.values_left == 2 * w.rows_left  # rows x needed columns (k, s)
    assert w.bytes_left > 0 and w.sampled_row_groups > 0
    assert needle.use_lazyscan, str(needle)
    wide = lazyscan.spark.estimate(spark, orc_dir, ["k", "s"], where="k >= 0", costs=free)
    assert not wide.use_lazyscan and "spark.read.orc" in str(wide), str(wide)
    assert wide.workload is not None and wide.workload.selectivity > 0.2


@pytest.mark.parametrize("zone", ["America/Los_Angeles", "Asia/Kolkata"])
def test_timestamps_in_a_non_utc_session(spark, tmp_path, orc_dir: str, zone: str) -> None:
    """Timestamps read as Spark's ORC reader reads them whatever the session time zone: files
    Spark wrote in that zone, and pyarrow-written ones; filters on timestamp literals too."""
    prev = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    lazyscan.spark.register(spark)  # the source takes the session time zone when registered
    try:
        df = spark.sql(
            "select id, timestamp'2021-03-14 01:30:00' + make_interval(0, 0, 0, 0, 0, 0, id * 137.25) as ts, "
            "date_add(date'2021-03-10', cast(id % 9 as int)) as d from range(0, 20000)"
        )
        out = str(tmp_path / "ts.orc")
        df.repartition(1).write.orc(out)
        for path, where in ((out, "ts < timestamp'2021-03-14 03:30:00' OR d = date'2021-03-15'"),
                            (orc_dir, "ts < timestamp'2000-01-01 00:00:00' AND k < 50000")):
            got = spark.read.format("lazyscan").option("where", where).load(path).collect()
            expected = spark.read.orc(path).where(where).collect()
            assert len(expected) > 0, where
            assert_same_rows(got, expected, where)
            auto = lazyscan.spark.read(spark, path, None, where=where, force="lazyscan").collect()
            assert_same_rows(auto, expected, where)
    finally:
        spark.conf.set("spark.sql.session.timeZone", prev)
        lazyscan.spark.register(spark)


def test_nested_timestamps_are_typed_as_spark_orc_reader_types_them(spark, tmp_path) -> None:
    """ORC timestamps inside structs and lists are TIMESTAMP for Spark's ORC reader as flat ones
    are (``OrcUtils.toCatalystType``); the schema of the file's unit-file facts and the rows
    lazyscan reads equal Spark's reader's."""
    from lazyscan.format.units import open_units
    from lazyscan.spark.types import spark_schema_of

    stamps = [dt.datetime(2021, 3, 14, 1, 30) + dt.timedelta(seconds=137 * i) for i in range(50)]
    p = str(tmp_path / "nested-ts.orc")
    porc.write_table(pa.table({
        "id": pa.array(range(50)),
        "ts": pa.array(stamps, pa.timestamp("ns")),
        "s": pa.array([{"t": s} for s in stamps], pa.struct([("t", pa.timestamp("ns"))])),
        "l": pa.array([[s, None] for s in stamps], pa.list_(pa.timestamp("ns"))),
    }), p)
    theirs = spark.read.orc(p)
    with open_units(p) as f:
        assert spark_schema_of(f) == theirs.schema
    prev = spark.conf.get("spark.sql.session.timeZone")
    for zone in ("UTC", "America/Los_Angeles"):
        spark.conf.set("spark.sql.session.timeZone", zone)
        lazyscan.spark.register(spark)
        try:
            ours = spark.read.format("lazyscan").load(p)
            assert ours.schema == theirs.schema
            assert_same_rows(ours.where("id < 20").collect(), spark.read.orc(p).where("id < 20").collect(), zone)
        finally:
            spark.conf.set("spark.sql.session.timeZone", prev)
            lazyscan.spark.register(spark)
