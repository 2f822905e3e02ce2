"""Delta Lake and Iceberg tables read by path in Spark: ``lazyscan.spark.read`` (both routes)
and the ``lazyscan`` data source plan the snapshot once on the driver; the tasks read the data
files with their deletes and column mapping.

No Spark connector for Delta Lake or Iceberg is installed here, so the other side of each
comparison is the table read in-process (``lazyscan.scan``, itself compared with ``deltalake``'s
``QueryBuilder`` and ``pyiceberg`` in ``tests/test_tables_delta.py`` and
``tests/test_tables_iceberg.py``) and the independent row counts of
``tests/data/tables/delta/counts-delta.jsonl`` (a replay of the JSON log: footer row counts minus
deletion-vector cardinalities). The stale-file trap is a test: Spark's own Parquet reader over
the folder and ``rawFiles=true`` give more rows than the table has.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lazyscan
import lazyscan.spark
from lazyscan.errors import LazyScanError, TableFolderError
from lazyscan.spark.compat import HAS_PYTHON_DATA_SOURCE
from tests.spark_support import assert_same_rows, get_spark

pytestmark = pytest.mark.spark

DELTA = Path(__file__).parent / "data" / "tables" / "delta"
ROUTES = ["tasks", "source"] if HAS_PYTHON_DATA_SOURCE else ["tasks"]
ONE_TASK = {"minPartitionNum": "1", "openCostInBytes": "1"}
#: columns PySpark can collect (it cannot collect a map whose keys are arrays)
MAPPING_ID_COLUMNS = ["ByteType", "IntegerType", "LongType", "DoubleType", "decimal", "StringType", "DateType",
                      "TimestampType", "nested_struct", "array_of_prims", "map_of_prims"]


@pytest.fixture(scope="module")
def spark() -> Any:
    return get_spark()


def replay_rows(name: str) -> list[int]:
    """The table's rows per version, from an independent replay of its log."""
    for line in (DELTA / "counts-delta.jsonl").read_text().splitlines():
        entry = json.loads(line)
        if entry["table"] == name:
            return list(entry["replay_rows_per_version"])
    raise KeyError(name)


def in_process(spark: Any, path: Path, columns: list[str] | None, where: str | None) -> list[Any]:
    """The rows of the in-process read, as Spark collects them (structs as rows, maps as dicts)."""
    t = lazyscan.scan(str(path), columns=columns, where=where).to_table()
    return spark.createDataFrame(t).collect() if t.num_rows else []


CASES = [
    ("simple_table", None, "id >= 5"),
    ("dv-with-columnmapping", None, "col1 > 3 OR part = 7"),  # deletion vectors, mapping by name
    ("dv-partitioned-with-checkpoint", ["col1", "part"], "part IN (1, 4, 8)"),  # partition pruning
    ("table-with-columnmapping-mode-id", MAPPING_ID_COLUMNS, "IntegerType IS NOT NULL OR StringType IS NULL"),
    ("external-table-different-nullability", None, "true"),  # added columns: old files read NULL
]


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(("name", "columns", "where"), CASES)
def test_delta_table_by_path(spark: Any, route: str, name: str, columns: list[str] | None, where: str) -> None:
    path = DELTA / name
    got = lazyscan.spark.read(spark, str(path), columns, where, route=route, **ONE_TASK)
    want = in_process(spark, path, columns, where)
    rows = got.collect()
    assert rows, f"{name} {where}: no rows, the comparison proves little"
    assert_same_rows(rows, want, f"{name} {where} ({route})")


@pytest.mark.parametrize("name", ["basic-with-inserts-deletes-checkpoint", "dv-with-columnmapping", "simple_table"])
def test_delta_versions_count_as_the_log_replay(spark: Any, name: str) -> None:
    """Time travel (``version``): every few versions count what the independent replay counts."""
    counts = replay_rows(name)
    versions = sorted({0, len(counts) // 2, len(counts) - 1})
    for v in versions:
        got = lazyscan.spark.read(spark, str(DELTA / name), None, "true", route="tasks", version=v, **ONE_TASK)
        assert got.count() == counts[v], f"{name} version {v}"


def test_stale_files_are_not_read(spark: Any) -> None:
    """``simple_table`` keeps 37 data files for 3 live rows: Spark's own Parquet reader over the
    folder returns the 32 rows of every file; lazyscan reads the table, unless ``rawFiles``."""
    path = str(DELTA / "simple_table")
    assert lazyscan.spark.read(spark, path, ["id"], "true", **ONE_TASK).count() == 3
    assert spark.read.parquet(path).count() == 32
    raw = lazyscan.spark.read(spark, path, ["id"], "true", force="lazyscan", rawFiles="true", **ONE_TASK)
    assert raw.count() == 32


def test_spark_side_needs_the_connector(spark: Any) -> None:
    """``force="spark"`` reads the table through Spark's connector for its format; without one,
    a TableFolderError says so instead of Spark's reader reading the folder's files."""
    with pytest.raises(TableFolderError, match="is a Delta Lake table and this Spark session has no Delta Lake connector"):
        lazyscan.spark.read(spark, str(DELTA / "simple_table"), ["id"], "id > 0", force="spark")


@pytest.mark.skipif(not HAS_PYTHON_DATA_SOURCE, reason="the Python data source needs Spark 4.1")
def test_data_source_reads_the_table(spark: Any) -> None:
    path = str(DELTA / "dv-with-columnmapping")
    got = spark.read.format("lazyscan").option("where", "col1 > 3").options(**ONE_TASK).load(path)
    assert_same_rows(got.collect(), in_process(spark, DELTA / "dv-with-columnmapping", None, "col1 > 3"), "data source")
    old = spark.read.format("lazyscan").option("version", "3").load(path)
    assert old.count() == replay_rows("dv-with-columnmapping")[3]


def test_time_travel_on_files_is_refused(spark: Any, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"a": [1]}), tmp_path / "f.parquet")
    with pytest.raises(LazyScanError, match="version: options of a Delta Lake or Iceberg table"):
        lazyscan.spark.read(spark, str(tmp_path), ["a"], "a = 1", force="lazyscan", version=1)


def test_iceberg_table_by_path(spark: Any, tmp_path: Path) -> None:
    """An Iceberg table written with pyiceberg (SQL catalog on SQLite): the current snapshot, an
    older one by ``version`` (snapshot id), and a filter."""
    from pyiceberg.catalog.sql import SqlCatalog

    cat = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/warehouse")
    cat.create_namespace("db")
    table = cat.create_table("db.t", schema=pa.schema([("id", pa.int64()), ("s", pa.string())]))
    table.append(pa.table({"id": list(range(10)), "s": [f"v{i}" for i in range(10)]}))
    first = table.current_snapshot().snapshot_id
    first_ms = table.current_snapshot().timestamp_ms
    table.overwrite(pa.table({"id": [100, 101, None], "s": ["a", None, "c"]}))
    table.append(pa.table({"id": list(range(20, 25)), "s": pa.array([None] * 5, pa.string())}))
    folder = tmp_path / "warehouse" / "db" / "t"
    assert folder.is_dir()
    for route in ROUTES:
        got = lazyscan.spark.read(spark, str(folder), None, "id > 20 OR s IS NULL", route=route, **ONE_TASK)
        assert_same_rows(got.collect(), in_process(spark, folder, None, "id > 20 OR s IS NULL"), f"iceberg ({route})")
    old = lazyscan.spark.read(spark, str(folder), ["id"], "true", version=first, route="tasks", **ONE_TASK)
    assert sorted(r.id for r in old.collect()) == list(range(10))
    at = lazyscan.spark.read(spark, str(folder), ["id"], "true", timestamp=str(first_ms), route="tasks", **ONE_TASK)
    assert sorted(r.id for r in at.collect()) == list(range(10))


def test_delta_table_on_an_object_store(spark: Any, s3_server: Any) -> None:
    """A Delta table's folder on S3 (moto's server): the listing finds the log, ``deltalake``
    reads it with the ``storage.*`` options, the tasks read the data files through ``fs.*``."""

    bucket = s3_server.bucket("spark-tables")
    root = DELTA / "dv-with-columnmapping"
    s3_server.upload_tree(root, bucket, "lake")
    storage = {f"storage.{k}": v for k, v in s3_server.storage_options().items()}
    options = {**s3_server.fs_options(), **storage, **ONE_TASK}
    for route in ROUTES:
        got = lazyscan.spark.read(spark, f"s3://{bucket}/lake", None, "col1 > 3 OR part = 7", route=route, **options)
        assert_same_rows(got.collect(), in_process(spark, root, None, "col1 > 3 OR part = 7"), f"s3 ({route})")
    old = lazyscan.spark.read(spark, f"s3://{bucket}/lake", ["col1"], "true", version=2, route="tasks", **options)
    assert old.count() == replay_rows("dv-with-columnmapping")[2]


@pytest.fixture(scope="module")
def written_delta(tmp_path_factory: Any) -> tuple[str, list[str]]:
    """A Delta table written with ``deltalake`` in three appends, partitioned by ``b``, then a
    delete that rewrites its files: the folder holds files the snapshot removed. Returns the
    table's folder and the snapshot's data files (as the log lists them)."""
    from deltalake import DeltaTable, write_deltalake

    from lazyscan.tables.delta import plan_delta
    from tests.spark_support import typed_table

    t = typed_table(3000, seed=23, nested=False)
    t = t.select([n for n in t.schema.names if not n.startswith("u") and n != "ts_ms"])  # Delta has no unsigned types
    root = str(tmp_path_factory.mktemp("delta_written") / "t")
    for part in (t.slice(0, 1000), t.slice(1000, 1000), t.slice(2000)):
        write_deltalake(root, part, mode="append", partition_by=["b"])
    DeltaTable(root).delete("rid % 7 = 3")
    files = [f.path for f in plan_delta(root).files]
    assert len(files) < len(list(Path(root).rglob("*.parquet"))), "the delete left stale files in the folder"
    return root, files


@pytest.mark.skipif(not HAS_PYTHON_DATA_SOURCE, reason="the Python data source needs Spark 4.1")
@pytest.mark.parametrize("round_", range(2))
def test_random_filters_on_a_table_equal_spark_over_its_files(spark: Any, written_delta: tuple[str, list[str]], round_: int) -> None:
    """Random filters on every column, pushed into the ``lazyscan`` data source reading the table
    folder, give the rows Spark's own Parquet reader gives over the snapshot's file list
    (``basePath`` for the partition column; Spark's Parquet filter pushdown off, see
    test_spark_differential)."""
    from tests.test_spark_differential import FilterMaker

    root, files = written_delta
    spark.conf.set("spark.sql.parquet.filterPushdown", "false")
    try:
        plain = spark.read.option("basePath", root).parquet(*files)
        maker = FilterMaker(plain.schema, plain.collect(), seed=300 + round_)
        filters = [maker.filter() for _ in range(12)]
        want = [sorted(r.rid for r in plain.where(e).select("rid").collect()) for e, _, _ in filters]
    finally:
        spark.conf.unset("spark.sql.parquet.filterPushdown")
    options = {**ONE_TASK, "pushFilters": "true"} if round_ % 2 else {"pushFilters": "true", "late_materialization": "false"}
    for (expr, text, _), expected in zip(filters, want):
        table = spark.read.format("lazyscan").options(**options).load(root)  # a new reader per filter
        got = sorted(r.rid for r in table.where(expr).select("rid").collect())
        assert got == expected, f"{text!r}: lazyscan {len(got)} rows, Spark {len(expected)}"
