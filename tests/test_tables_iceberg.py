"""Iceberg table planning (lazyscan.tables.iceberg): the files and deletes of every snapshot.

Two sides: the reference-writer tables of ``tests/data/tables/iceberg/`` (Spark, Impala, Hive,
Flink, Trino), whose rows per snapshot were counted independently of pyiceberg and, where Impala's
own tests state them, equal Impala's answers; and tables written here with pyiceberg's SQL catalog.
The planned files are read with pyarrow, columns matched by field id as the plan says, position
deletes dropped and equality deletes applied as an anti join (null equals null, Iceberg table spec,
"Equality Delete Files"), and compared with pyiceberg's own read where pyiceberg reads the table.

pyiceberg 0.12 is not a reference for every table: it refuses equality deletes and silently skips
position deletes whose ``file_path`` carries ``hdfs://localhost:20500`` while the manifests say
``/test-warehouse/…`` (Impala's tables), so there its rows are a superset of the right ones.
"""

from __future__ import annotations

import datetime
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as po
import pyarrow.parquet as pq
import pytest

from lazyscan.errors import CorruptFileError, LazyScanError, UnsupportedFeatureError
from lazyscan.tables.iceberg import (
    IcebergPlan,
    IcebergPlanError,
    describe,
    plan_iceberg,
    resolve_columns,
    static_table,
    strip_authority,
    verify_files,
)

TABLES = Path(__file__).resolve().parent / "data" / "tables" / "iceberg"

#: rows per snapshot, oldest first, counted independently (tests/data/tables/iceberg/README.md)
ROWS_PER_SNAPSHOT: dict[str, list[tuple[int, int]]] = {
    "iceberg_column_case_sensitivity_issue": [(7743982156242154468, 1), (1855055649619147667, 2)],
    "iceberg_migrated_alter_test": [(2941076094076108396, 3)],
    "iceberg_mixed_file_format_test": [
        (1847986799759674135, 1),
        (6603964444137547572, 2),
        (5589333083859779254, 3),
        (5574591442446832859, 4),
    ],
    "iceberg_non_partitioned": [(93996984692289973, 20)],
    "iceberg_partitioned": [(8270633197658268308, 20)],
    "iceberg_spark_compaction_with_dangling_delete": [
        (37664836060851883, 5),
        (6274599306850878811, 5),
        (1208327814823543579, 4),
        (5278394901353853232, 4),
    ],
    "iceberg_v2_delete_both_eq_and_pos": [
        (3802179086205335895, 2),
        (8985205515767142888, 3),
        (911559291487642581, 2),
    ],
    "iceberg_v2_delete_equality": [
        (361598097944440235, 1),
        (3207673167795000154, 2),
        (5763349507283783091, 2),
    ],
    "iceberg_v2_delete_positional": [(6816997371555012807, 3), (5725822353600261755, 2)],
    "iceberg_v2_equality_delete_schema_evolution": [
        (7131747670101362192, 5),
        (3986738438831924669, 3),
        (5816823095034839884, 3),
    ],
    "iceberg_v2_partitioned_position_deletes": [
        (2057976186205897384, 20),
        (8885697082976537578, 10),
    ],
    "iceberg_v2_partitioned_position_deletes_orc": [
        (5416468273053855108, 20),
        (5359840930115020310, 10),
    ],
    "iceberg_v2_positional_not_all_data_files_have_delete_files": [
        (4363979609026842966, 3),
        (5762682948883272650, 6),
        (7508485421322116327, 9),
        (7490459762454857930, 10),
        (752781918366351945, 9),
        (1497619269847778439, 6),
    ],
    "iceberg_v3_default_value": [(7752776210164022855, 1), (5466875730470528452, 2)],
    "iceberg_v3_deletion_vectors": [(2700858159721908397, 5), (3685752423136077685, 3)],
}

#: exact rows Impala's tests state (testdata/workloads/functional-query/queries/QueryTest/iceberg-*.test)
IMPALA_ROWS: dict[str, list[tuple[Any, ...]]] = {
    "iceberg_v2_delete_equality": [(1, "test_1_base"), (2, "test_2_updated")],
    "iceberg_migrated_alter_test": [(0, "A", 0.5), (1, "B", 1.5), (2, "C", 2.5)],
}

CASES = [(name, sid, rows) for name, snaps in ROWS_PER_SNAPSHOT.items() for sid, rows in snaps]


def latest_metadata(folder: Path) -> Path:
    return max(
        folder.glob("metadata/*.metadata.json"),
        key=lambda p: int(p.name.split(".")[0].lstrip("v").split("-")[0]),
    )


def reroot_of(folder: Path) -> dict[str, str]:
    location = json.loads(latest_metadata(folder).read_text())["location"]
    return {location: str(folder)}


def local(path: str) -> str:
    return strip_authority(path) if path.startswith("file:") else path


def read_data_file(path: str, file_format: str) -> pa.Table:
    if file_format == "orc":
        return po.ORCFile(local(path)).read()
    return pq.read_table(local(path))


def read_planned(plan: IcebergPlan) -> pa.Table:
    """The plan's rows, read with pyarrow: columns by field id, deletes applied."""
    schema = pa.schema([f.remove_metadata() for f in plan.schema])
    parts = []
    for data_file in plan.files:
        raw = read_data_file(data_file.path, data_file.file_format)
        assert raw.num_rows == data_file.num_records, data_file.path
        columns = []
        for source, target in zip(resolve_columns(plan, data_file, raw.schema), schema):
            if source.file_name is None:
                columns.append(pa.array([source.default] * raw.num_rows, target.type))
            else:
                columns.append(raw.column(source.file_name).cast(target.type))
        table = pa.Table.from_arrays(columns, schema=schema)
        keep = np.ones(table.num_rows, dtype=bool)
        if data_file.deleted_rows is not None:
            keep[data_file.deleted_rows] = False
        for delete in data_file.equality_deletes:
            deleted_keys = set(zip(*(column.to_pylist() for column in delete.keys.columns)))
            row_keys = zip(*(table.column(name).to_pylist() for name in delete.keys.column_names))
            keep &= np.array([key not in deleted_keys for key in row_keys], dtype=bool)
        parts.append(table.filter(pa.array(keep)))
    return pa.concat_tables(parts) if parts else schema.empty_table()


def planned_rows(plan: IcebergPlan) -> int:
    return read_planned(plan).num_rows


def sorted_rows(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)


@pytest.mark.parametrize(
    ("name", "snapshot_id", "rows"), CASES, ids=[f"{n}-{s}" for n, s, _ in CASES]
)
def test_reference_tables_rows_per_snapshot(name: str, snapshot_id: int, rows: int) -> None:
    folder = TABLES / name
    plan = plan_iceberg(
        str(latest_metadata(folder)), snapshot_id=snapshot_id, reroot=reroot_of(folder)
    )
    assert plan.snapshot_id == snapshot_id
    # position deletes and deletion vectors alone, from footer row counts
    with_positions = sum(f.live_rows for f in plan.files)
    if not any(f.equality_deletes for f in plan.files):
        assert with_positions == rows
    assert planned_rows(plan) == rows
    for f in plan.files:
        if f.deleted_rows is not None:
            assert f.deleted_rows.dtype == np.int64 and len(f.deleted_rows) == f.deleted_count > 0
            assert np.all(np.diff(f.deleted_rows) > 0)


@pytest.mark.parametrize("name", sorted(IMPALA_ROWS))
def test_reference_tables_rows_as_impala_states(name: str) -> None:
    folder = TABLES / name
    plan = plan_iceberg(str(folder), reroot=reroot_of(folder))
    assert sorted_rows(read_planned(plan)) == sorted(IMPALA_ROWS[name], key=repr)


def test_schema_evolution_reads_old_files_by_field_id() -> None:
    """Old files call the column ``s``, the table ``str``; ``j`` was added later (null there)."""
    folder = TABLES / "iceberg_v2_equality_delete_schema_evolution"
    plan = plan_iceberg(str(folder), reroot=reroot_of(folder))
    assert "str" in plan.schema.names and "j" in plan.schema.names and "s" not in plan.schema.names
    sources = {}
    for f in plan.files:
        raw_schema = pq.read_schema(local(f.path))
        for source in resolve_columns(plan, f, raw_schema):
            sources.setdefault(source.table_name, set()).add(source.file_name)
    assert "s" in sources["str"]
    assert None in sources["j"]


def test_v3_initial_default_fills_old_files() -> None:
    folder = TABLES / "iceberg_v3_default_value"
    plan = plan_iceberg(str(folder), reroot=reroot_of(folder))
    assert sorted_rows(read_planned(plan)) == [(1, -1), (2, 2)]


def test_impala_delete_paths_in_hdfs_form_still_apply() -> None:
    """The delete file says hdfs://localhost:20500/test-warehouse/…, the manifest /test-warehouse/…"""
    folder = TABLES / "iceberg_v2_delete_positional"
    delete_files = [
        p
        for p in folder.rglob("*.parq*")
        if "position" in pq.read_schema(p).names or "pos" in pq.read_schema(p).names
    ]
    targets = {p for d in delete_files for p in pq.read_table(d).column("file_path").to_pylist()}
    assert targets and all(t.startswith("hdfs://localhost:20500/") for t in targets)
    plan = plan_iceberg(str(folder), reroot=reroot_of(folder))
    assert sum(f.deleted_count for f in plan.files) == 1


PYICEBERG_READS = [
    (name, sid, rows)
    for name, sid, rows in CASES
    if name
    not in (
        "iceberg_v2_delete_equality",
        "iceberg_v2_delete_both_eq_and_pos",
        "iceberg_v2_equality_delete_schema_evolution",
    )
]


@pytest.mark.parametrize(
    ("name", "snapshot_id", "rows"),
    PYICEBERG_READS,
    ids=[f"{n}-{s}" for n, s, _ in PYICEBERG_READS],
)
def test_reference_tables_against_pyiceberg(name: str, snapshot_id: int, rows: int) -> None:
    """Where pyiceberg reads the right number of rows, the same rows; where it reads more (position
    deletes it skipped), ours are a sub-multiset of its rows and the difference is what the delete
    files remove."""
    folder = TABLES / name
    table = static_table(str(latest_metadata(folder)), reroot=reroot_of(folder))
    plan = plan_iceberg(table, snapshot_id=snapshot_id, reroot=reroot_of(folder))
    ours = read_planned(plan)
    theirs = table.scan(snapshot_id=snapshot_id).to_arrow().select(ours.column_names)
    assert ours.num_rows == rows
    if theirs.num_rows == rows:
        assert sorted_rows(ours) == sorted_rows(theirs)
    else:
        remaining = list(sorted_rows(theirs))
        for row in sorted_rows(ours):
            remaining.remove(row)
        assert len(remaining) == theirs.num_rows - rows > 0


def test_pyiceberg_refuses_equality_deletes_the_plan_has_them() -> None:
    folder = TABLES / "iceberg_v2_delete_equality"
    table = static_table(str(latest_metadata(folder)), reroot=reroot_of(folder))
    with pytest.raises(ValueError, match="equality deletes"):
        table.scan().plan_files()
    plan = plan_iceberg(table, reroot=reroot_of(folder))
    assert any(f.equality_deletes for f in plan.files)
    for f in plan.files:
        for delete in f.equality_deletes:
            assert delete.field_ids and delete.keys.num_columns == len(delete.field_ids)


def test_variant_type_is_unsupported() -> None:
    with pytest.raises(UnsupportedFeatureError, match="variant"):
        plan_iceberg(str(TABLES / "trino_variant"))


def test_data_folder_holds_more_rows_than_the_snapshot() -> None:
    """The stale-file trap: every data file on disk gives 10 rows, the snapshot 4."""
    folder = TABLES / "iceberg_spark_compaction_with_dangling_delete"
    plan = plan_iceberg(str(folder), reroot=reroot_of(folder))
    planned = {local(f.path) for f in plan.files}
    on_disk = [
        p
        for p in (folder / "data").rglob("*")
        if p.is_file() and "pos" not in pq.read_schema(p).names
    ]
    assert sum(pq.ParquetFile(p).metadata.num_rows for p in on_disk) == 10
    assert len(planned) < len(on_disk)
    assert planned_rows(plan) == 4


# --- tables written here with pyiceberg's SQL catalog -------------------------------------------


@pytest.fixture
def catalog(tmp_path: Path) -> tuple[Any, dict[str, str]]:
    from pyiceberg.catalog.sql import SqlCatalog

    properties = {
        "type": "sql",
        "uri": f"sqlite:///{tmp_path}/catalog.db",
        "warehouse": f"file://{tmp_path}/warehouse",
    }
    cat = SqlCatalog("test", **{k: v for k, v in properties.items() if k != "type"})
    cat.create_namespace("db")
    return cat, properties


def pyiceberg_rows(table: Any, snapshot_id: int | None = None) -> pa.Table:
    return (
        table.scan(snapshot_id=snapshot_id).to_arrow() if snapshot_id else table.scan().to_arrow()
    )


def assert_same_as_pyiceberg(plan: IcebergPlan, table: Any, snapshot_id: int | None = None) -> None:
    ours = read_planned(plan)
    theirs = pyiceberg_rows(table, snapshot_id).select(ours.column_names)
    assert sorted_rows(ours) == sorted_rows(theirs)


def test_written_append_overwrite_delete_and_time_travel(
    catalog: tuple[Any, dict[str, str]],
) -> None:
    cat, properties = catalog
    table = cat.create_table("db.t", schema=pa.schema([("id", pa.int64()), ("s", pa.string())]))
    table.append(pa.table({"id": list(range(10)), "s": [f"v{i}" for i in range(10)]}))
    table.append(pa.table({"id": list(range(10, 15)), "s": pa.array([None] * 5, pa.string())}))
    table.overwrite(pa.table({"id": [100, 101, 102], "s": ["a", "b", "c"]}))
    table.append(pa.table({"id": list(range(20)), "s": [f"w{i}" for i in range(20)]}))
    table.delete("id < 5")
    table = cat.load_table("db.t")
    expected = [10, 15, 3, 23, 18]
    snapshots = sorted(table.metadata.snapshots, key=lambda s: s.sequence_number)
    # overwrite and delete write two snapshots each in pyiceberg 0.12 (delete, then append)
    counts = {}
    for snap in snapshots:
        plan = plan_iceberg(
            "db.t", snapshot_id=snap.snapshot_id, catalog="test", catalog_properties=properties
        )
        counts[snap.snapshot_id] = planned_rows(plan)
        assert_same_as_pyiceberg(plan, table, snap.snapshot_id)
    assert [c for c in counts.values() if c in expected][-1] == 18
    current = plan_iceberg("db.t", catalog="test", catalog_properties=properties)
    assert current.snapshot_id == table.metadata.current_snapshot_id
    assert planned_rows(current) == 18
    # pyiceberg 0.12 deletes copy-on-write: no delete files, the rewritten file lacks the rows
    assert all(f.deleted_rows is None and not f.equality_deletes for f in current.files)
    # time travel by timestamp: the snapshot current at the second append
    second = snapshots[1]
    by_time = plan_iceberg(table, as_of=second.timestamp_ms)
    assert by_time.snapshot_id == second.snapshot_id and planned_rows(by_time) == 15
    as_datetime = datetime.datetime.fromtimestamp(
        second.timestamp_ms / 1000, tz=datetime.timezone.utc
    )
    assert plan_iceberg(table, as_of=as_datetime).snapshot_id == second.snapshot_id


def test_written_schema_evolution_rename_add_drop_reorder(
    catalog: tuple[Any, dict[str, str]],
) -> None:
    from pyiceberg.types import DoubleType

    cat, _ = catalog
    table = cat.create_table(
        "db.evolve", schema=pa.schema([("a", pa.int64()), ("b", pa.string()), ("c", pa.int32())])
    )
    table.append(pa.table({"a": [1, 2], "b": ["x", "y"], "c": pa.array([10, 20], pa.int32())}))
    with table.update_schema() as update:
        update.rename_column("b", "bee")
        update.add_column("d", DoubleType())
        update.delete_column("c")
        update.move_first("d")
    table.append(pa.table({"d": [0.5], "a": [3], "bee": ["z"]}))
    table = cat.load_table("db.evolve")
    plan = plan_iceberg(table)
    assert plan.schema.names == ["d", "a", "bee"]
    assert sorted_rows(read_planned(plan)) == sorted(
        [(None, 1, "x"), (None, 2, "y"), (0.5, 3, "z")], key=repr
    )
    assert_same_as_pyiceberg(plan, table)
    old = plan_iceberg(
        table,
        snapshot_id=min(table.metadata.snapshots, key=lambda s: s.sequence_number).snapshot_id,
    )
    assert old.schema.names == ["a", "b", "c"]
    assert sorted_rows(read_planned(old)) == [(1, "x", 10), (2, "y", 20)]


def test_written_hidden_partitioning_and_filter_pruning(
    catalog: tuple[Any, dict[str, str]],
) -> None:
    """day and bucket transforms: values in the manifests, not in the files; a filter prunes by
    the day, the rest of it is the residual left to the scan."""
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import BucketTransform, DayTransform
    from pyiceberg.types import LongType, NestedField, TimestampType

    cat, _ = catalog
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "ts", TimestampType(), required=False),
    )
    spec = PartitionSpec(
        PartitionField(source_id=2, field_id=1000, transform=DayTransform(), name="ts_day"),
        PartitionField(source_id=1, field_id=1001, transform=BucketTransform(4), name="id_bucket"),
    )
    table = cat.create_table("db.parts", schema=schema, partition_spec=spec)
    start = datetime.datetime(2024, 1, 1)
    ids = list(range(40))
    times = [start + datetime.timedelta(hours=6 * i) for i in ids]
    table.append(
        pa.table({"id": pa.array(ids, pa.int64()), "ts": pa.array(times, pa.timestamp("us"))})
    )
    table = cat.load_table("db.parts")
    plan = plan_iceberg(table)
    assert len(plan.files) > 10
    assert plan.partition_columns == ()
    assert all(set(f.partition_values) == {"ts_day", "id_bucket"} for f in plan.files)
    assert {f.partition_values["ts_day"] for f in plan.files} == set(
        range(19723, 19733)
    )  # days since 1970
    assert planned_rows(plan) == 40
    assert_same_as_pyiceberg(plan, table)
    pruned = plan_iceberg(table, row_filter="ts < '2024-01-02T12:00:00'")
    assert {f.partition_values["ts_day"] for f in pruned.files} == {19723, 19724}
    # the whole first day matches: no residual there; the second day keeps ts < 12:00
    assert all(
        (f.residual is None) == (f.partition_values["ts_day"] == 19723) for f in pruned.files
    )
    # whole files (the residual ts < 12:00 is the scan's), less those the column statistics prune
    assert 6 < planned_rows(pruned) <= 8
    noon = pa.scalar(datetime.datetime(2024, 1, 2, 12), pa.timestamp("us"))
    exact = read_planned(pruned).filter(pc.less(pc.field("ts"), noon))
    assert sorted_rows(exact) == sorted_rows(
        table.scan(row_filter="ts < '2024-01-02T12:00:00'").to_arrow()
    )


# --- bad input ------------------------------------------------------------------------------------


def copy_table(name: str, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    folder = tmp_path / name
    shutil.copytree(TABLES / name, folder)
    return folder, reroot_of(folder)


def test_missing_delete_file_names_table_snapshot_and_file(tmp_path: Path) -> None:
    folder, reroot = copy_table("iceberg_v2_delete_positional", tmp_path)
    plan = plan_iceberg(str(folder), reroot=reroot)
    data_paths = {local(f.path) for f in plan.files}
    delete_file = next(
        p for p in (folder / "data").rglob("*") if p.is_file() and str(p) not in data_paths
    )
    delete_file.unlink()
    with pytest.raises(IcebergPlanError) as info:
        plan_iceberg(str(folder), reroot=reroot)
    message = str(info.value)
    assert str(plan.snapshot_id) in message and delete_file.name in message and "missing" in message


def test_missing_data_file_found_by_verify_files(tmp_path: Path) -> None:
    folder, reroot = copy_table("iceberg_non_partitioned", tmp_path)
    plan = plan_iceberg(str(folder), reroot=reroot)
    verify_files(plan)
    victim = Path(local(plan.files[3].path))
    victim.unlink()
    with pytest.raises(IcebergPlanError) as info:
        verify_files(plan)
    assert str(plan.snapshot_id) in str(info.value) and victim.name in str(info.value)
    assert "iceberg_non_partitioned" in str(info.value)


def test_data_file_of_another_size_found_by_verify_files(tmp_path: Path) -> None:
    folder, reroot = copy_table("iceberg_non_partitioned", tmp_path)
    plan = plan_iceberg(str(folder), reroot=reroot)
    victim = Path(local(plan.files[0].path))
    victim.write_bytes(victim.read_bytes() + b"\0")
    with pytest.raises(IcebergPlanError, match="bytes"):
        verify_files(plan)


@pytest.mark.parametrize("keep", [0, 0.5])
def test_truncated_manifest_names_table_snapshot_and_manifest(tmp_path: Path, keep: float) -> None:
    folder, reroot = copy_table("iceberg_v2_delete_positional", tmp_path)
    manifests = [p for p in (folder / "metadata").glob("*.avro") if not p.name.startswith("snap-")]
    for manifest in manifests:
        raw = manifest.read_bytes()
        manifest.write_bytes(raw[: int(len(raw) * keep)])
    with pytest.raises(IcebergPlanError) as info:
        plan_iceberg(str(folder), reroot=reroot)
    assert isinstance(info.value, CorruptFileError)
    assert "5725822353600261755" in str(info.value) and "manifest" in str(info.value)
    assert any(m.name in str(info.value) for m in manifests)


def test_position_delete_past_the_data_file_rows(tmp_path: Path) -> None:
    folder, reroot = copy_table("iceberg_v2_delete_positional", tmp_path)
    plan = plan_iceberg(str(folder), reroot=reroot)
    data_paths = {local(f.path) for f in plan.files}
    delete_file = next(
        p for p in (folder / "data").rglob("*") if p.is_file() and str(p) not in data_paths
    )
    deletes = pq.read_table(delete_file)
    positions = pa.array([99] * deletes.num_rows, deletes.schema.field("pos").type)
    pq.write_table(
        deletes.set_column(
            deletes.schema.get_field_index("pos"), deletes.schema.field("pos"), positions
        ),
        delete_file,
    )
    with pytest.raises(IcebergPlanError) as info:
        plan_iceberg(str(folder), reroot=reroot)
    message = str(info.value)
    assert "row 99" in message and delete_file.name in message and str(plan.snapshot_id) in message
    assert "3 rows" in message


def test_unknown_snapshot_lists_the_known_ones() -> None:
    folder = TABLES / "iceberg_v2_delete_positional"
    with pytest.raises(LazyScanError, match="6816997371555012807"):
        plan_iceberg(str(folder), snapshot_id=1, reroot=reroot_of(folder))


def test_missing_metadata_file(tmp_path: Path) -> None:
    with pytest.raises(LazyScanError, match="does not exist"):
        plan_iceberg(str(tmp_path / "v1.metadata.json"))


def test_rerooting_matches_both_path_forms() -> None:
    from lazyscan.tables.iceberg import Rerooter

    reroot = Rerooter({"/test-warehouse/t": "/data/t"})
    assert reroot("/test-warehouse/t/data/f.parquet") == "/data/t/data/f.parquet"
    assert (
        reroot("hdfs://localhost:20500/test-warehouse/t/data/f.parquet") == "/data/t/data/f.parquet"
    )
    assert reroot("/test-warehouse/tt/f.parquet") == "/test-warehouse/tt/f.parquet"
    assert (
        reroot.key("file:///data/t/x")
        == reroot.key("hdfs://nn:1/test-warehouse/t/x")
        == "/data/t/x"
    )


def test_table_without_snapshots_plans_no_files(catalog: tuple[Any, dict[str, str]]) -> None:
    cat, _ = catalog
    table = cat.create_table("db.empty", schema=pa.schema([("a", pa.int64())]))
    plan = plan_iceberg(table)
    assert plan.version is None and plan.files == () and plan.schema.names == ["a"]


def test_describe_counts_files_and_deletes() -> None:
    folder = TABLES / "iceberg_v2_delete_both_eq_and_pos"
    plan = plan_iceberg(str(folder), reroot=reroot_of(folder))
    summary = describe(plan)
    assert summary["kind"] == "iceberg" and summary["snapshot_id"] == 911559291487642581
    assert summary["files"] == len(plan.files)
    assert summary["rows_in_files"] - summary["position_deleted_rows"] == sum(
        f.live_rows for f in plan.files
    )
    assert summary["position_deleted_rows"] == 1 and summary["equality_delete_files"] >= 1


def test_filter_prunes_partitions_and_their_delete_files(tmp_path: Path) -> None:
    """A filter on the identity partition plans one file, with its 3 deleted rows; the delete
    files of the other partitions are not even read (here: one of them is gone)."""
    folder, reroot = copy_table("iceberg_v2_partitioned_position_deletes", tmp_path)
    next((folder / "data" / "action=view").glob("*delete*")).unlink()
    plan = plan_iceberg(str(folder), reroot=reroot, row_filter="action = 'click'")
    assert [f.partition_values for f in plan.files] == [{"action": "click"}]
    assert plan.files[0].deleted_count == 3 and plan.files[0].residual is None
    with pytest.raises(IcebergPlanError, match="missing"):
        plan_iceberg(str(folder), reroot=reroot)
