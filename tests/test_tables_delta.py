"""Delta Lake planning (lazyscan.tables.delta): the planned files and deletion vectors give the
snapshot's rows, for every version of the reference writers' tables in tests/data/tables/delta,
and bad tables are clear errors.

The other side is ``deltalake``'s ``QueryBuilder`` (delta-kernel-rs and DataFusion), which reads
deletion vectors, column mapping and v2 checkpoints; the row counts are those of the README
there (an independent log replay).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import pickle
import shutil
import struct
import sys
import time
import uuid
import zlib
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

deltalake = pytest.importorskip("deltalake")

from lazyscan.errors import (  # noqa: E402
    CorruptFileError,
    ObjectNotFoundError,
    OptionError,
    UnsupportedFeatureError,
)
from lazyscan.tables.delta import (  # noqa: E402
    DV_MAGIC,
    MissingDependencyError,
    TablePlan,
    decode_deletion_vector,
    plan_delta,
    z85_decode,
)

TABLES = Path(__file__).parent / "data" / "tables" / "delta"
COUNTS = {
    r["table"]: r
    for r in (
        json.loads(line)
        for line in (TABLES / "counts-delta.jsonl").read_text().splitlines()
        if line
    )
}
#: tables whose reader features lazyscan refuses (tested below)
REFUSED = {"type-widening"}
CASES = [
    (name, version)
    for name, row in sorted(COUNTS.items())
    if name not in REFUSED
    for version in range(len(row["replay_rows_per_version"]))
]


def footer_rows(path: str) -> int:
    return int(pq.ParquetFile(path).metadata.num_rows)


@pytest.mark.parametrize(("name", "version"), CASES, ids=[f"{n}-v{v}" for n, v in CASES])
def test_planned_rows_equal_the_replay_count(name: str, version: int) -> None:
    plan = plan_delta(str(TABLES / name), version=version)
    assert plan.version == version and plan.kind == "delta"
    rows = 0
    for f in plan.files:
        in_file = footer_rows(f.path)
        if f.num_records is not None:
            assert f.num_records == in_file
        if f.deleted_rows is not None:
            assert f.deleted_rows.dtype == np.int64 and f.deleted_count == f.deleted_rows.size
            assert (np.diff(f.deleted_rows) > 0).all() and f.deleted_rows[-1] < in_file
        rows += in_file - f.deleted_count
    assert rows == COUNTS[name]["replay_rows_per_version"][version]


def normalized(value: Any) -> Any:
    """A value compared by content: nested struct fields by position (data files name them by
    their physical names), time zones as UTC."""
    if isinstance(value, dict):
        return tuple(normalized(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return tuple(normalized(v) for v in value)
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    if isinstance(value, float) and value != value:
        return "NaN"
    return value


def sorted_rows(table: pa.Table, names: list[str]) -> list[tuple[Any, ...]]:
    rows = [tuple(normalized(r[n]) for n in names) for r in table.to_pylist()]
    return sorted(rows, key=repr)


def planned_table(plan: TablePlan) -> pa.Table:
    """The snapshot read from the plan alone: each file with pyarrow under physical names,
    renamed, partition values and missing columns added, deletion-vector rows dropped."""
    names = plan.schema.names
    physical = plan.physical_names()
    pieces = []
    for f in plan.files:
        data = pq.read_table(f.path)
        if f.deleted_rows is not None:
            keep = np.ones(data.num_rows, bool)
            keep[f.deleted_rows] = False
            data = data.filter(pa.array(keep))
        columns = {}
        for name in names:
            if name in plan.partition_columns:
                columns[name] = pa.array(
                    [f.partition_values[name]] * data.num_rows, plan.schema.field(name).type
                )
            elif physical[name] in data.column_names:
                columns[name] = data.column(physical[name])
            else:
                columns[name] = pa.nulls(data.num_rows, plan.schema.field(name).type)
        pieces.append(pa.table(columns))
    return pa.concat_tables(pieces, promote_options="permissive") if pieces else pa.table({})


def querybuilder_table(path: Path, version: int) -> pa.Table:
    table = deltalake.DeltaTable(str(path), version=version)
    return pa.table(
        deltalake.QueryBuilder().register("t", table).execute("select * from t").read_all()
    )


@pytest.mark.parametrize(("name", "version"), CASES, ids=[f"{n}-v{v}" for n, v in CASES])
def test_planned_files_and_deletion_vectors_give_querybuilders_rows(
    name: str, version: int
) -> None:
    plan = plan_delta(str(TABLES / name), version=version)
    expected = querybuilder_table(TABLES / name, version)
    names = plan.schema.names
    assert sorted(expected.column_names) == sorted(names)
    got = planned_table(plan)
    if expected.num_rows == 0:
        assert got.num_rows == 0
        return
    assert sorted_rows(got, names) == sorted_rows(expected, names)


def test_column_mapping_names_and_field_ids() -> None:
    by_name = plan_delta(str(TABLES / "dv-with-columnmapping"))
    assert by_name.column_mapping == "name"
    assert by_name.physical_names()["col1"] == "col-9f0743fd-a52e-44a7-92e0-72a3d34231b1"
    assert all(c.field_id is None for c in by_name.columns)
    # statistics are keyed by the logical names
    assert {"col1", "col2"} <= set(next(f for f in by_name.files if f.stats).stats)
    by_id = plan_delta(str(TABLES / "table-with-columnmapping-mode-id"))
    assert by_id.column_mapping == "id"
    assert {c.name: c.field_id for c in by_id.columns}["map_of_maps"] == 30
    # each column's id is the Parquet field id of its physical column in the data files
    for f in by_id.files:
        arrow = pq.read_schema(f.path)
        for c in by_id.columns:
            assert (
                arrow.field(c.physical_name).metadata[b"PARQUET:field_id"]
                == str(c.field_id).encode()
            )


def test_renamed_partition_column_has_typed_values() -> None:
    plan = plan_delta(str(TABLES / "table_with_partitioning_mapping"))
    assert plan.partition_columns == ("newid",)
    assert sorted(f.partition_values["newid"] for f in plan.files) == [1, 2]


def test_timestamp_ntz_partitions_come_from_the_log() -> None:
    plan = plan_delta(str(TABLES / "data-reader-timestamp_ntz"))
    values = sorted((f.partition_values["tsNtzPartition"] for f in plan.files), key=repr)
    assert dt.datetime(2013, 7, 5, 17, 1, 0, 123456) in values and None in values
    # the folder names are URL-escaped: the planned path is the file on disk
    assert all(Path(f.path).is_file() for f in plan.files)


def test_deletion_vectors_agree_with_deltalake() -> None:
    for name in ("table-with-dv-small", "dv-partitioned-with-checkpoint", "dv-with-columnmapping"):
        plan = plan_delta(str(TABLES / name))
        table = deltalake.DeltaTable(str(TABLES / name))
        masks = {
            unquote(urlparse(r["filepath"]).path): r["selection_vector"]
            for r in pa.table(table.deletion_vectors()).to_pylist()
        }
        assert len(masks) == sum(f.deleted_rows is not None for f in plan.files) > 0
        for f in plan.files:
            if f.deleted_rows is not None:
                mask = np.array(masks[f.path])
                assert f.deleted_rows.tolist() == np.flatnonzero(~mask).tolist()


def test_inline_deletion_vectors_by_time_travel() -> None:
    """cdf-table-with-dv keeps its deletion vectors inline (Z85 in the log) at v3 to v5."""
    rows = {
        v: plan_delta(str(TABLES / "cdf-table-with-dv"), version=v).files[0].deleted_rows
        for v in range(7)
    }
    assert rows[0] is None and rows[6] is None
    assert rows[3] is not None and rows[3].tolist() == [0, 1, 4, 5]
    assert rows[5] is not None and rows[5].tolist() == [3]


def test_plan_pickles_small() -> None:
    plan = plan_delta(str(TABLES / "dv-partitioned-with-checkpoint"))
    data = pickle.dumps(plan)
    assert len(data) < 10_000
    again = pickle.loads(data)
    assert again.version == plan.version and again.schema == plan.schema
    assert [f.deleted_count for f in again.files] == [f.deleted_count for f in plan.files]


def test_stats_of_a_planned_file() -> None:
    plan = plan_delta(str(TABLES / "table-with-dv-small"))
    (f,) = plan.files
    assert f.num_records == 10 and f.live_rows == 8 and plan.num_rows == 8
    assert (f.stats["value"].min, f.stats["value"].max, f.stats["value"].null_count) == (0, 9, 0)


# --- tables written here -----------------------------------------------------------------------


def test_overwrite_plans_only_the_new_rows(tmp_path: Path) -> None:
    deltalake.write_deltalake(tmp_path, pa.table({"x": pa.array(range(10), pa.int64())}))
    deltalake.write_deltalake(
        tmp_path, pa.table({"x": pa.array([7, 8, 9], pa.int64())}), mode="overwrite"
    )
    plan = plan_delta(str(tmp_path))
    assert plan.version == 1 and plan.num_rows == 3
    assert sum(footer_rows(f.path) for f in plan.files) == 3
    # every parquet file of the folder holds 13 rows: the stale-rows trap
    assert sum(footer_rows(str(p)) for p in tmp_path.glob("*.parquet")) == 13
    assert plan_delta(str(tmp_path), version=0).num_rows == 10


def test_partition_values_are_typed(tmp_path: Path) -> None:
    data = pa.table(
        {
            "k": pa.array([1, 2, 2], pa.int32()),
            "d": pa.array([dt.date(2024, 1, 2)] * 3),
            "v": ["a", "b", "c"],
        }
    )
    deltalake.write_deltalake(tmp_path, data, partition_by=["k", "d"])
    deltalake.write_deltalake(tmp_path, data.slice(0, 1), partition_by=["k", "d"], mode="append")
    plan = plan_delta(str(tmp_path))
    assert plan.partition_columns == ("k", "d") and plan.num_rows == 4
    values = sorted((f.partition_values["k"], f.partition_values["d"]) for f in plan.files)
    assert values == [(1, dt.date(2024, 1, 2)), (1, dt.date(2024, 1, 2)), (2, dt.date(2024, 1, 2))]
    assert sorted_rows(planned_table(plan), ["k", "d", "v"]) == sorted_rows(
        querybuilder_table(tmp_path, 1), ["k", "d", "v"]
    )


def test_added_column_is_in_the_schema_and_null_in_old_files(tmp_path: Path) -> None:
    deltalake.write_deltalake(tmp_path, pa.table({"a": pa.array([1, 2], pa.int64())}))
    newer = pa.table({"a": pa.array([3], pa.int64()), "b": pa.array(["x"])})
    deltalake.write_deltalake(tmp_path, newer, mode="append", schema_mode="merge")
    plan = plan_delta(str(tmp_path))
    assert plan.schema.names == ["a", "b"]
    assert plan_delta(str(tmp_path), version=0).schema.names == ["a"]
    assert sorted_rows(planned_table(plan), ["a", "b"]) == [(1, None), (2, None), (3, "x")]


def test_time_travel_by_timestamp(tmp_path: Path) -> None:
    deltalake.write_deltalake(tmp_path, pa.table({"x": [1]}))
    time.sleep(0.05)
    between = dt.datetime.now(dt.timezone.utc)
    time.sleep(0.05)
    deltalake.write_deltalake(tmp_path, pa.table({"x": [2, 3]}), mode="append")
    assert plan_delta(str(tmp_path), timestamp=between).version == 0
    assert plan_delta(str(tmp_path), timestamp=between.isoformat()).num_rows == 1
    with pytest.raises(OptionError, match="not both"):
        plan_delta(str(tmp_path), version=0, timestamp=between)
    with pytest.raises(OptionError, match="has versions 0 to 1, not 7"):
        plan_delta(str(tmp_path), version=7)
    # deltalake loads version 0 for a time before it; Delta's time travel refuses
    with pytest.raises(OptionError, match="no version at"):
        plan_delta(str(tmp_path), timestamp=between - dt.timedelta(days=1))
    # at exactly a commit's time (its commit file's, the protocol's commit timestamp) that
    # version is read, though the commit information is stamped later (here 5 ms, by moving the
    # files' times back: writers stamp it up to a few ms after the file)
    stamped = {h["version"]: h["timestamp"] for h in deltalake.DeltaTable(tmp_path).history()}
    for version in (0, 1):
        commit_ms = stamped[version] - 5
        os.utime(tmp_path / "_delta_log" / f"{version:020d}.json", ns=(commit_ms * 1_000_000,) * 2)
    for version in (0, 1):
        at = dt.datetime.fromtimestamp((stamped[version] - 5) / 1000, dt.timezone.utc)
        assert plan_delta(str(tmp_path), timestamp=at).version == version


def test_corrupt_commit_is_named(tmp_path: Path) -> None:
    deltalake.write_deltalake(tmp_path, pa.table({"x": [1, 2]}))
    deltalake.write_deltalake(tmp_path, pa.table({"x": [3]}), mode="append")
    (tmp_path / "_delta_log" / "00000000000000000001.json").write_text('{"add": {"path": ')
    with pytest.raises(CorruptFileError, match=r"cannot be loaded: .*Json") as info:
        plan_delta(str(tmp_path))
    assert str(tmp_path) in str(info.value) and "pthread" not in str(info.value)


# --- the deletion-vector decoder ---------------------------------------------------------------


def test_z85_decodes_the_rfc_example() -> None:
    assert z85_decode("HelloWorld") == bytes([0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B])
    with pytest.raises(ValueError):
        z85_decode("Hello~orld")
    with pytest.raises(ValueError):
        z85_decode("Hell")
    # a short tail marked by '#' (the Rust z85 crate's padding, read by delta-kernel-rs): the
    # inline deletion vector of cdf-table-with-dv at v5 ends so and deletes row 3
    assert z85_decode("HelloWorld##093") == z85_decode("HelloWorld") + b"\x03\x00"
    with pytest.raises(ValueError, match="exceeds"):
        z85_decode("#####")


def test_decoder_agrees_with_pyroaring() -> None:
    """Array, bitmap and run containers in several 32-bit buckets, serialized by CRoaring."""
    pyroaring = pytest.importorskip("pyroaring")
    rng = np.random.default_rng(7)
    sparse = rng.choice(1 << 20, 3000, replace=False)
    dense = (1 << 32) + rng.choice(1 << 16, 30000, replace=False)
    runs = (5 << 32) + np.concatenate([np.arange(100, 9000), np.arange(70000, 200000)])
    rows = np.unique(np.concatenate([sparse, dense, runs])).astype(np.int64)
    buckets = np.unique(rows >> 32)
    data = struct.pack("<iq", DV_MAGIC, buckets.size)
    for high in buckets.tolist():
        low = pyroaring.BitMap((rows[(rows >> 32) == high] & 0xFFFFFFFF).tolist())
        low.run_optimize()
        data += struct.pack("<I", high) + low.serialize()
    decoded = decode_deletion_vector(data)
    assert decoded.dtype == np.int64 and np.array_equal(decoded, rows)
    with pytest.raises(ValueError, match="magic"):
        decode_deletion_vector(b"\0" * 4 + data[4:])
    with pytest.raises(ValueError):
        decode_deletion_vector(data[:-100])


# --- bad tables --------------------------------------------------------------------------------


def copy_table(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copytree(TABLES / name, target)
    return target


def edit_log(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_cardinality_mismatch_is_named(tmp_path: Path) -> None:
    table = copy_table("table-with-dv-small", tmp_path)
    edit_log(
        table / "_delta_log" / "00000000000000000001.json", '"cardinality":2', '"cardinality":3'
    )
    with pytest.raises(
        CorruptFileError,
        match=r"version 1, data file .*part-00000.*holds 2 positions, the log says 3",
    ):
        plan_delta(str(table))


def test_deletion_vector_past_the_rows_is_named(tmp_path: Path) -> None:
    table = copy_table("table-with-dv-small", tmp_path)
    edit_log(
        table / "_delta_log" / "00000000000000000001.json",
        '\\"numRecords\\":10',
        '\\"numRecords\\":5',
    )
    with pytest.raises(CorruptFileError, match="deletes row 9, past the file's 5 rows"):
        plan_delta(str(table))


def flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def test_corrupt_deletion_vector_file(tmp_path: Path) -> None:
    table = copy_table("table-with-dv-small", tmp_path)
    (dv,) = table.glob("deletion_vector_*.bin")
    flip(dv, 30)  # inside the bitmap
    with pytest.raises(CorruptFileError, match="CRC-32 mismatch") as info:
        plan_delta(str(table))
    assert info.value.location.file is not None and "deletion_vector_" in info.value.location.file
    assert str(table) in str(info.value) and "version 1" in str(info.value)


def test_deletion_vector_with_a_bad_magic_number(tmp_path: Path) -> None:
    table = copy_table("table-with-dv-small", tmp_path)
    (dv,) = table.glob("deletion_vector_*.bin")
    data = bytearray(dv.read_bytes())
    size = struct.unpack_from(">i", data, 1)[0]
    data[5] ^= 0xFF  # the magic number, with the CRC written to match
    data[5 + size : 9 + size] = struct.pack(">I", zlib.crc32(bytes(data[5 : 5 + size])))
    dv.write_bytes(bytes(data))
    with pytest.raises(CorruptFileError, match="bad magic number"):
        plan_delta(str(table))


def test_missing_deletion_vector_file(tmp_path: Path) -> None:
    table = copy_table("table-with-dv-small", tmp_path)
    (dv,) = table.glob("deletion_vector_*.bin")
    dv.unlink()
    with pytest.raises(ObjectNotFoundError, match="missing deletion vector file"):
        plan_delta(str(table))


def test_folder_without_a_log(tmp_path: Path) -> None:
    pq.write_table(pa.table({"x": [1]}), tmp_path / "part-0.parquet")
    with pytest.raises(ObjectNotFoundError, match="no Delta table"):
        plan_delta(str(tmp_path))


def test_unknown_reader_feature_is_refused(tmp_path: Path) -> None:
    deltalake.write_deltalake(tmp_path, pa.table({"x": [1, 2]}))
    first = tmp_path / "_delta_log" / "00000000000000000000.json"
    lines = [json.loads(line) for line in first.read_text().splitlines()]
    for action in lines:
        if "protocol" in action:
            action["protocol"] = {
                "minReaderVersion": 3,
                "minWriterVersion": 7,
                "readerFeatures": ["futureFeature"],
                "writerFeatures": ["futureFeature"],
            }
    first.write_text("\n".join(json.dumps(a) for a in lines) + "\n")
    with pytest.raises(UnsupportedFeatureError, match="futureFeature"):
        plan_delta(str(tmp_path))


def test_variant_feature_without_a_variant_column_reads(tmp_path: Path) -> None:
    """deltalake 1.6.6 lists the reader feature ``variantType`` on every table written with
    deletion vectors enabled: without a variant column the table reads; with one it is refused."""
    deltalake.write_deltalake(tmp_path, pa.table({"x": [1, 2]}), configuration={"delta.enableDeletionVectors": "true"})
    assert "variantType" in (deltalake.DeltaTable(tmp_path).protocol().reader_features or [])
    assert plan_delta(str(tmp_path)).num_rows == 2
    first = tmp_path / "_delta_log" / "00000000000000000000.json"
    lines = [json.loads(line) for line in first.read_text().splitlines()]
    for action in lines:
        if "metaData" in action:
            schema = json.loads(action["metaData"]["schemaString"])
            schema["fields"].append({"name": "v", "type": "variant", "nullable": True, "metadata": {}})
            action["metaData"]["schemaString"] = json.dumps(schema)
    first.write_text("\n".join(json.dumps(a) for a in lines) + "\n")
    with pytest.raises(UnsupportedFeatureError, match="variantType"):
        plan_delta(str(tmp_path))


def test_type_widening_is_refused() -> None:
    with pytest.raises(UnsupportedFeatureError, match="typeWidening-preview"):
        plan_delta(str(TABLES / "type-widening"))


def test_missing_deltalake_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "deltalake", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'lazyscan\[tables\]'"):
        plan_delta(str(TABLES / "simple_table"))


# --- deletion vectors written here ---------------------------------------------------------------


def z85_encode(data: bytes) -> str:
    alphabet = (
        "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
    )
    out = []
    for (value,) in struct.iter_unpack(">I", data):
        out.append("".join(alphabet[(value // 85**i) % 85] for i in range(4, -1, -1)))
    return "".join(out)


def serialized_positions(rows: list[int]) -> bytes:
    """A deletion vector of positions below 2**16: the magic number, one bucket, one array
    container (RoaringBitmap portable serialization without runs)."""
    bitmap = (
        struct.pack("<II", 12346, 1) + struct.pack("<HH", 0, len(rows) - 1) + struct.pack("<I", 16)
    )
    bitmap += struct.pack(f"<{len(rows)}H", *rows)
    return struct.pack("<iqI", DV_MAGIC, 1, 0) + bitmap


def add_deletion_vectors(table: Path, deleted: dict[str, list[int]], storage: str) -> None:
    """Commit the next version of ``table``: the deletion-vectors protocol and, for each data file
    named in ``deleted``, its ``add`` again with a deletion vector; all vectors of storage type
    ``u`` and ``p`` share one file under the folder ``ab`` (a random prefix)."""
    log = table / "_delta_log"
    version = max(int(p.stem) for p in log.glob("*.json"))
    adds = {}
    for commit in sorted(log.glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                adds[action["add"]["path"]] = action["add"]
    dv_uuid = uuid.uuid4()
    (table / "ab").mkdir(exist_ok=True)
    dv_path = table / "ab" / f"deletion_vector_{dv_uuid}.bin"
    blob = b"\x01"
    actions: list[dict[str, Any]] = [
        {
            "protocol": {
                "minReaderVersion": 3,
                "minWriterVersion": 7,
                "readerFeatures": ["deletionVectors"],
                "writerFeatures": ["deletionVectors"],
            }
        }
    ]
    for path, rows in deleted.items():
        data = serialized_positions(rows)
        descriptor: dict[str, Any] = {"sizeInBytes": len(data), "cardinality": len(rows)}
        if storage == "i":
            padded = data + b"\0" * (-len(data) % 4)
            descriptor.update(storageType="i", pathOrInlineDv=z85_encode(padded))
        else:
            descriptor.update(offset=len(blob))
            blob += struct.pack(">i", len(data)) + data + struct.pack(">I", zlib.crc32(data))
            if storage == "u":
                descriptor.update(storageType="u", pathOrInlineDv="ab" + z85_encode(dv_uuid.bytes))
            else:
                descriptor.update(storageType="p", pathOrInlineDv=dv_path.as_uri())
        add = dict(adds[path], deletionVector=descriptor, dataChange=True)
        actions += [
            {"remove": {"path": path, "dataChange": True, "deletionTimestamp": 1}},
            {"add": add},
        ]
    if storage != "i":
        dv_path.write_bytes(blob)
    (log / f"{version + 1:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")


@pytest.mark.parametrize("storage", ["u", "p", "i"])
def test_deletion_vectors_of_each_storage_type(tmp_path: Path, storage: str) -> None:
    """Two data files whose vectors share one file (or are inline): the plan and QueryBuilder
    drop the same rows."""
    deltalake.write_deltalake(tmp_path, pa.table({"x": pa.array(range(10), pa.int64())}))
    deltalake.write_deltalake(
        tmp_path, pa.table({"x": pa.array(range(100, 120), pa.int64())}), mode="append"
    )
    table = deltalake.DeltaTable(str(tmp_path))
    paths = sorted(pa.table(table.get_add_actions()).column("path").to_pylist())
    by_rows = {}
    for p in paths:
        by_rows[footer_rows(str(tmp_path / p))] = p
    add_deletion_vectors(tmp_path, {by_rows[10]: [0, 9], by_rows[20]: [3, 4, 5, 19]}, storage)
    plan = plan_delta(str(tmp_path))
    assert plan.version == 2 and plan.num_rows == 24
    deleted = {
        Path(f.path).name: f.deleted_rows.tolist() for f in plan.files if f.deleted_rows is not None
    }
    assert deleted == {Path(by_rows[10]).name: [0, 9], Path(by_rows[20]).name: [3, 4, 5, 19]}
    expected = querybuilder_table(tmp_path, 2)
    assert sorted_rows(planned_table(plan), ["x"]) == sorted_rows(expected, ["x"])
    assert plan_delta(str(tmp_path), version=1).num_rows == 30
    if storage != "i":
        # through a given filesystem (the vectors are read by bucket and key there)
        again = plan_delta(str(tmp_path), filesystem=pafs.LocalFileSystem())
        assert again.num_rows == 24


def test_table_on_an_object_store(s3_server: Any) -> None:
    """The log through deltalake's object store, the deletion vectors through a pyarrow S3
    filesystem: the same plan as from the local folder, with s3:// paths."""
    from tests.support.s3 import ACCESS_KEY, REGION, SECRET_KEY

    name = "dv-with-columnmapping"
    s3_server.upload_tree(TABLES / name, "delta-tables", name)
    options = s3_server.storage_options()
    filesystem = pafs.S3FileSystem(
        access_key=ACCESS_KEY,
        secret_key=SECRET_KEY,
        region=REGION,
        endpoint_override=s3_server.host_port,
        scheme="http",
    )
    remote = plan_delta(
        f"s3://delta-tables/{name}", version=12, storage_options=options, filesystem=filesystem
    )
    local = plan_delta(str(TABLES / name), version=12)
    assert remote.num_rows == local.num_rows == COUNTS[name]["replay_rows_per_version"][12]
    assert all(f.path.startswith(f"s3://delta-tables/{name}/") for f in remote.files)

    def deletions(plan: TablePlan) -> dict[str, list[int] | None]:
        return {
            f.path.rsplit("/", 1)[1]: None if f.deleted_rows is None else f.deleted_rows.tolist()
            for f in plan.files
        }

    assert deletions(remote) == deletions(local)
