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
from tests.test_table_scan import dv_table  # noqa: F401  (a fixture: a Delta table with deletion vectors)

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


#: what the profile says of a table read, the same in Spark as in-process
TABLE_COUNTERS = (
    "files", "files_pruned_partition", "files_pruned_table_stats", "rows_total", "rows_removed_position_deletes",
    "rows_removed_equality_deletes", "rows_returned",
)


def profile_pair(spark: Any, source: str, where: str, route: str, **options: Any) -> tuple[Any, Any]:
    """The profile of the in-process read and of the Spark read (their rows compared too)."""
    scan = lazyscan.scan(source, where=where, time_zone="UTC", **{k: v for k, v in options.items() if k == "reroot"})
    want = scan.to_table()
    lazyscan.spark.last_profile()  # drop what earlier reads reported
    got = lazyscan.spark.read(spark, source, None, where, route=route, force="lazyscan", **options).collect()
    assert_same_rows(got, spark.createDataFrame(want).collect() if want.num_rows else [], f"{where} ({route})")
    return scan.profile, lazyscan.spark.last_profile()


@pytest.mark.parametrize("route", ROUTES)
def test_profile_counts_files_the_driver_pruned(spark: Any, dv_table: Path, route: str) -> None:  # noqa: F811
    """Files ruled out on the driver by partition values or by the log's statistics never
    become tasks; the first task reports them, so the Spark profile counts files, rows, files
    pruned per tier, decisions and deleted rows as the in-process scan does. A filter that
    leaves no file still reports (one empty task)."""
    pruned = {"files_pruned_partition": 0, "files_pruned_table_stats": 0}
    for where in ["p = 'east'", "id < 12000 AND p = 'east'", "id < 12000", "id < 0", "i > 0"]:
        want, got = profile_pair(spark, str(dv_table), where, route)
        assert {k: got[k] for k in TABLE_COUNTERS} == {k: want[k] for k in TABLE_COUNTERS}, where
        assert got.decisions == want.decisions, where
        for k in pruned:
            pruned[k] += got[k]
    assert all(pruned.values()), pruned


ICEBERG = Path(__file__).parent / "data" / "tables" / "iceberg"
#: Impala's tables (tests/data/tables/iceberg/README.md): the metadata names /test-warehouse/…,
#: the delete files hdfs://localhost:20500/test-warehouse/…; rows of the current snapshot as
#: counted independently there, and a filter
IMPALA_TABLES = [
    ("iceberg_v2_delete_both_eq_and_pos", 2, "i > 2 OR s LIKE '%updated'"),  # equality and position deletes
    ("iceberg_v2_partitioned_position_deletes", 10, "action = 'click' OR id > 15"),
    ("iceberg_v2_partitioned_position_deletes_orc", 10, "user = 'Alan' AND id < 15"),  # ORC data and deletes
    ("iceberg_v2_equality_delete_schema_evolution", 3, "j IS NULL"),  # renamed and added columns
]


def reroot_of(folder: Path) -> dict[str, str]:
    """The table's old location (its metadata's) -> where it is here."""
    from tests.test_tables_iceberg import reroot_of as metadata_reroot

    return metadata_reroot(folder)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(("name", "count", "where"), IMPALA_TABLES)
def test_impala_iceberg_tables_read_rerooted(spark: Any, route: str, name: str, count: int, where: str) -> None:
    """``reroot=`` of ``lazyscan.spark.read``: the snapshot's rows (the README's independent
    count), filtered rows and the profile's deleted-row counters as the in-process read."""
    folder = ICEBERG / name
    options = {"reroot": reroot_of(folder), **ONE_TASK}
    assert lazyscan.spark.read(spark, str(folder), None, "true", route=route, **options).count() == count
    removed = 0
    for text in ("true", where):
        want, got = profile_pair(spark, str(folder), text, route, **options)
        assert {k: got[k] for k in TABLE_COUNTERS} == {k: want[k] for k in TABLE_COUNTERS}, text
        removed += got["rows_removed_position_deletes"] + got["rows_removed_equality_deletes"]
    assert removed, "the table's deletes removed no row"


@pytest.mark.skipif(not HAS_PYTHON_DATA_SOURCE, reason="the Python data source needs Spark 4.1")
def test_reroot_option_spellings(spark: Any) -> None:
    """The data source's ``reroot`` option as the command line spells it (``old=new``) and as a
    JSON object; without it the metadata's old location is read and the error says so."""
    folder = ICEBERG / "iceberg_v2_delete_both_eq_and_pos"
    (old, new), = reroot_of(folder).items()
    want = spark.createDataFrame(lazyscan.scan(str(folder), reroot={old: new}).to_table()).collect()
    for value in (f"{old}={new}", json.dumps({old: new}), json.dumps({old + "/": new + "/"})):
        got = spark.read.format("lazyscan").option("reroot", value).options(**ONE_TASK).load(str(folder))
        assert_same_rows(got.collect(), want, value)
    with pytest.raises(LazyScanError, match="option 'reroot' expects old=new"):
        lazyscan.spark.read(spark, str(folder), None, "true", route="tasks", reroot="no-pair")
    with pytest.raises(LazyScanError, match=r"reroot: options of Iceberg tables"):
        lazyscan.spark.read(spark, str(DELTA / "simple_table"), None, "true", route="tasks", reroot=f"{old}={new}")
    with pytest.raises(LazyScanError, match="test-warehouse"):
        lazyscan.spark.read(spark, str(folder), None, "true", route="tasks")


def test_equality_delete_files_are_rerooted_in_the_tasks_plan(spark: Any) -> None:
    """The plan the driver ships names each equality delete file where it is now, not under the
    metadata's old prefix."""
    from lazyscan.spark.options import SourceSettings
    from lazyscan.spark.source import build_listing

    folder = ICEBERG / "iceberg_v2_equality_delete_schema_evolution"
    settings = SourceSettings.from_options({"path": str(folder), "reroot": json.dumps(reroot_of(folder))})
    listing = build_listing(settings)
    deletes = [d.path for f in listing.files if f.table is not None for d in f.table.equality_deletes]
    assert deletes and all(Path(p).is_file() and Path(p).is_relative_to(folder.resolve()) for p in deletes), deletes


def _add_equality_delete(table: Any, keys: pa.Table, like: Any) -> None:
    """Commit a snapshot adding one equality delete file on ``keys``' columns (Parquet, field ids
    from the table's schema) in the partition of the data file ``like``."""
    import uuid

    import pyarrow.parquet as pq
    from pyiceberg.manifest import (
        DataFile,
        DataFileContent,
        FileFormat,
        ManifestContent,
        ManifestWriterV2,
    )
    from pyiceberg.table.snapshots import Operation
    from pyiceberg.table.update.snapshot import _FastAppendFiles

    ids = [table.schema().find_field(n).field_id for n in keys.column_names]
    fields = [pa.field(f.name, f.type, metadata={b"PARQUET:field_id": str(i).encode()}) for f, i in zip(keys.schema, ids)]
    path = Path(table.metadata.location.removeprefix("file://")) / "data" / f"eq-delete-{uuid.uuid4()}.parquet"
    pq.write_table(pa.table(keys.columns, schema=pa.schema(fields)), path)
    delete = DataFile.from_args(
        content=DataFileContent.EQUALITY_DELETES, file_path=path.as_uri(), file_format=FileFormat.PARQUET,
        partition=like.partition, record_count=keys.num_rows, file_size_in_bytes=path.stat().st_size,
        equality_ids=ids, spec_id=like.spec_id,
    )

    class DeleteManifestWriter(ManifestWriterV2):
        def content(self) -> ManifestContent:
            return ManifestContent.DELETES

        @property
        def _meta(self) -> dict[str, str]:
            return {**super()._meta, "content": "deletes"}

    class AddDeleteFiles(_FastAppendFiles):
        def new_manifest_writer(self, spec: Any) -> Any:
            return DeleteManifestWriter(spec, self.schema(), self.new_manifest_output(), self._snapshot_id, self._compression)

    with table.transaction() as tx, AddDeleteFiles(operation=Operation.OVERWRITE, transaction=tx, io=table.io) as snap:
        snap.append_data_file(delete)


@pytest.fixture(scope="module")
def iceberg_with_deletes(tmp_path_factory: Any) -> dict[str, Any]:
    """An Iceberg table written with pyiceberg, partitioned by ``part``: two appends, then a
    snapshot of position deletes (every 7th row of each data file; pyiceberg reads them), then one
    equality delete on ``id`` in partition ``b`` (pyiceberg refuses those). Returns the table,
    its folder and the rows of each snapshot: pyiceberg's read, and that read less the equality
    delete's keys in partition ``b``."""
    import numpy as np
    import pyarrow.compute as pc
    from pyiceberg.catalog.sql import SqlCatalog

    from benchmarks.tables_bench import add_position_deletes

    tmp = tmp_path_factory.mktemp("iceberg_deletes")
    catalog = SqlCatalog("d", uri=f"sqlite:///{tmp}/catalog.db", warehouse=f"file://{tmp}/warehouse")
    catalog.create_namespace("db")
    schema = pa.schema([("id", pa.int64()), ("part", pa.string()), ("v", pa.float64())])
    table = catalog.create_table("db.t", schema=schema)
    with table.update_spec() as spec:
        spec.add_identity("part")
    table = catalog.load_table("db.t")
    for k in range(2):
        ids = np.arange(1000, dtype=np.int64) + 1000 * k
        v = pa.array(ids * 0.5, mask=ids % 11 == 0)
        table.append(pa.table({"id": ids, "part": np.where(ids % 3 == 0, "a", "b").tolist(), "v": v}, schema=schema))
    planned = [t.file for t in table.scan().plan_files()]
    add_position_deletes(table, {f.file_path: (f, np.arange(0, f.record_count, 7, dtype=np.int64)) for f in planned})
    table = catalog.load_table("db.t")
    positions = table.current_snapshot().snapshot_id
    by_pyiceberg = table.scan().to_arrow()
    keys = pa.table({"id": pa.array([1, 2, 3, 1001, 1999], pa.int64())})  # 3 is in partition a: kept
    _add_equality_delete(table, keys, next(f for f in planned if f.partition[0] == "b"))
    table = catalog.load_table("db.t")
    gone = pc.and_(pc.is_in(by_pyiceberg["id"], keys["id"]), pc.equal(by_pyiceberg["part"], "b"))
    return {
        "table": table,
        "folder": Path(table.metadata.location.removeprefix("file://")),
        "position_snapshot": positions,
        "rows_after_positions": by_pyiceberg,
        "rows": by_pyiceberg.filter(pc.invert(gone)),
    }


def _ids(rows: Any) -> list[int]:
    return sorted(r["id"] if isinstance(r, dict) else r.id for r in rows)


@pytest.mark.parametrize("route", ROUTES)
def test_iceberg_table_on_an_object_store(spark: Any, s3_server: Any, iceberg_with_deletes: dict[str, Any], route: str) -> None:
    """An Iceberg table with position and equality deletes, copied to S3 (moto's server): the
    driver plans it reading metadata, manifests and delete files through the ``fs.*``
    filesystem, the tasks read the data files through it. Its rows are pyiceberg's (position
    deletes; less the equality delete's keys), equal to the in-process read of the local table,
    by the folder and by its metadata file, current and older snapshot, with filters; the
    profiles count the same."""
    import pyarrow.compute as pc

    t = iceberg_with_deletes
    folder = t["folder"]
    uri = s3_server.upload_tree(folder, s3_server.bucket("iceberg-lake"), f"t-{route}")
    options = {**s3_server.fs_options(), "reroot": {t["table"].metadata.location: uri}, **ONE_TASK}
    assert _ids(lazyscan.spark.read(spark, uri, None, "true", route=route, **options).collect()) == _ids(t["rows"].to_pylist())
    for where, keep in [("v IS NULL OR id < 700", pc.or_(pc.is_null(t["rows"]["v"]), pc.less(t["rows"]["id"], 700))),
                        ("part = 'b' AND id > 900", pc.and_(pc.equal(t["rows"]["part"], "b"), pc.greater(t["rows"]["id"], 900)))]:
        got = lazyscan.spark.read(spark, uri, None, where, route=route, **options).collect()
        assert _ids(got) == _ids(t["rows"].filter(keep).to_pylist()), where
        local = lazyscan.scan(str(folder), where=where).to_table()
        assert_same_rows(got, spark.createDataFrame(local).collect(), f"{where} ({route})")
    metadata = latest_metadata_name(folder)
    by_file = lazyscan.spark.read(spark, f"{uri}/metadata/{metadata}", ["id"], "true", route=route, **options)
    assert _ids(by_file.collect()) == _ids(t["rows"].to_pylist())
    old = lazyscan.spark.read(spark, uri, ["id"], "true", route=route, version=t["position_snapshot"], **options)
    assert _ids(old.collect()) == _ids(t["rows_after_positions"].to_pylist())
    local_scan = lazyscan.scan(str(folder), where="id < 1500")
    local_scan.to_table()
    lazyscan.spark.last_profile()
    lazyscan.spark.read(spark, uri, None, "id < 1500", route=route, force="lazyscan", **options).collect()
    got_profile = lazyscan.spark.last_profile()
    assert {k: got_profile[k] for k in TABLE_COUNTERS} == {k: local_scan.profile[k] for k in TABLE_COUNTERS}
    assert got_profile["rows_removed_position_deletes"] and got_profile["rows_removed_equality_deletes"]


def latest_metadata_name(folder: Path) -> str:
    from tests.test_tables_iceberg import latest_metadata

    return latest_metadata(folder).name


def test_iceberg_table_written_on_an_object_store(spark: Any, s3_server: Any, tmp_path: Path) -> None:
    """A table pyiceberg writes on S3 itself (its metadata names ``s3://`` locations, no
    re-rooting), with a delete pyiceberg applies by rewriting files: the rows pyiceberg reads
    from S3."""
    from pyiceberg.catalog.sql import SqlCatalog

    from tests.support.s3 import ACCESS_KEY, REGION, SECRET_KEY

    bucket = s3_server.bucket("iceberg-written")
    io = {"s3.endpoint": s3_server.endpoint, "s3.access-key-id": ACCESS_KEY, "s3.secret-access-key": SECRET_KEY, "s3.region": REGION}
    catalog = SqlCatalog("s3", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"s3://{bucket}/wh", **io)
    catalog.create_namespace("db")
    table = catalog.create_table("db.w", schema=pa.schema([("id", pa.int64()), ("s", pa.string())]))
    table.append(pa.table({"id": list(range(50)), "s": [f"s{i % 4}" for i in range(50)]}))
    table.delete("s = 's1'")
    want = _ids(catalog.load_table("db.w").scan().to_arrow().to_pylist())
    location = catalog.load_table("db.w").metadata.location
    assert location.startswith("s3://") and len(want) == 37
    for route in ROUTES:
        got = lazyscan.spark.read(spark, location, ["id", "s"], "s != 's3'", route=route, **s3_server.fs_options(), **ONE_TASK)
        assert _ids(got.collect()) == [i for i in want if i % 4 != 3], route


def test_tasks_carry_their_files_without_what_the_driver_used(dv_table: Path) -> None:  # noqa: F811
    """The tasks' plan: the table's statistics the driver pruned with are left out of the files
    they read, the reader shipped with ``mapInArrow`` has no listing of files, the deleted rows
    travel packed; the tasks still read the table's rows."""
    import pickle

    from lazyscan.spark.options import SourceSettings
    from lazyscan.spark.source import LazyScanReader, build_listing
    from lazyscan.spark.tasks import TaskRunner

    settings = SourceSettings.from_options({"path": str(dv_table), "where": "id < 12000", **ONE_TASK})
    listing = build_listing(settings)
    reader = LazyScanReader(settings, listing, listing.spark_schema)
    tasks = reader.partitions()
    splits = [s for t in tasks for s in t.splits]
    assert splits and all(s.table is not None and not s.table.stats for s in splits)
    assert all(f.table is not None and f.table.stats for f in listing.files)  # the driver's listing keeps them
    runner = pickle.loads(pickle.dumps(TaskRunner(reader, tasks)))
    assert runner.reader.listing.files == () and len(runner.tasks) == len(tasks)
    got = pa.Table.from_batches([b for t in runner.tasks for b in runner.reader.read_task(t)])
    want = lazyscan.scan(str(dv_table), where="id < 12000", time_zone="UTC").to_table()
    assert sorted(got.column("id").to_pylist()) == sorted(want.column("id").to_pylist()) and want.num_rows
