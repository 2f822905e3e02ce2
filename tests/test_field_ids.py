"""Field ids in the format contract: :meth:`UnitFile.field_ids` gives the ids of a file's
top-level columns from the metadata its reader already parsed (Parquet ``SchemaElement.field_id``,
ORC's ``iceberg.id`` type attribute), and nested fields carry theirs as field metadata, as
pyarrow gives them. Differential: the ids equal those pyarrow reads (``pq.read_schema``,
``pyarrow.orc.ORCFile(...).schema``), on files written here and on the Parquet and ORC files of
``tests/data`` (the Iceberg and Delta reference tables' data files among them).

Tables match data-file columns by these ids, so the table scan asks no second reader for them: on
an object store a table's data file costs the requests of the same file read alone.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
import pyarrow.parquet as pq
import pytest

import lazyscan
from lazyscan.errors import CorruptFileError, LazyScanError, ObjectNotFoundError
from lazyscan.format.counters import ReadCounters
from lazyscan.format.units import open_units
from lazyscan.parquet import thrift as T
from lazyscan.scan.table_source import TableFile
from lazyscan.tables.plan import FileRead, LogicalColumn
from tests.support.data import TABLES, data_files
from tests.support.footer import Node, ParquetPatch

PARQUET_ID = b"PARQUET:field_id"
ORC_ID = b"iceberg.id"


def _f(name: str, t: pa.DataType, fid: int | None, key: str, nullable: bool = True) -> pa.Field:
    return pa.field(name, t, nullable, None if fid is None else {key: str(fid)})


def _schema(key: str, with_ids: bool = True) -> pa.Schema:
    """Flat, struct, list and map columns; ids on every field (``with_ids``), else none."""

    def f(name: str, t: pa.DataType, fid: int, nullable: bool = True) -> pa.Field:
        return _f(name, t, fid if with_ids else None, key, nullable)

    element = "element" if key == "PARQUET:field_id" else "item"
    return pa.schema([
        f("id", pa.int64(), 1),
        f("name", pa.string(), 2),
        f("point", pa.struct([f("x", pa.float64(), 5), f("when", pa.timestamp("us"), 6)]), 3),
        f("tags", pa.list_(f(element, pa.string(), 7)), 4),
        f("attrs", pa.map_(f("key", pa.string(), 9, nullable=False), f("value", pa.int32(), 10)), 8),
        f("plain", pa.int32(), 11),
    ])


def _table(schema: pa.Schema) -> pa.Table:
    n = 6
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "name": pa.array(["a", None, "c", "d", "e", "f"]),
        "point": pa.array([{"x": float(i), "when": None if i % 2 else 1_000_000 * i} for i in range(n)], schema.field("point").type),
        "tags": pa.array([["t"] * (i % 3) for i in range(n)], schema.field("tags").type),
        "attrs": pa.array([[("k", i)] for i in range(n)], schema.field("attrs").type),
        "plain": pa.array(range(n), pa.int32()),
    }, schema=schema)


def _ids_of(schema: pa.Schema, key: bytes) -> dict[str, int]:
    """Top-level column -> field id, as pyarrow gives them."""
    return {f.name: int(f.metadata[key]) for f in schema if f.metadata and key in f.metadata}


def _nested_ids(t: pa.DataType, key: bytes, path: str = "") -> dict[str, int]:
    """Dotted path -> field id of every field nested in ``t``."""
    out: dict[str, int] = {}
    children: list[pa.Field] = []
    if pa.types.is_struct(t) or pa.types.is_union(t):
        children = [t.field(i) for i in range(t.num_fields)]
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        children = [t.value_field]
    elif pa.types.is_map(t):
        children = [t.key_field, t.item_field]
    for c in children:
        where = f"{path}.{c.name}"
        if c.metadata and key in c.metadata:
            out[where] = int(c.metadata[key])
        out.update(_nested_ids(c.type, key, where))
    return out


# ---- Parquet ------------------------------------------------------------------------------------


@pytest.mark.parametrize("store_schema", [True, False], ids=["arrow-schema-stored", "no-arrow-schema"])
def test_parquet_field_ids_equal_pyarrows(tmp_path: Path, store_schema: bool) -> None:
    path = tmp_path / "ids.parquet"
    schema = _schema("PARQUET:field_id")
    pq.write_table(_table(schema), path, store_schema=store_schema)
    expected = _ids_of(pq.read_schema(path), PARQUET_ID)
    assert expected == {"id": 1, "name": 2, "point": 3, "tags": 4, "attrs": 8, "plain": 11}
    with open_units(str(path)) as f:
        assert f.field_ids() == expected
        # nested ids: on the arrays read (what the table scan renames nested fields by) as pyarrow reads them
        for name in ("point", "tags", "attrs"):
            arr = f.read(0, name, None, ReadCounters(), f.new_cache())
            want = _nested_ids(pq.read_table(path, columns=[name]).schema.field(name).type, PARQUET_ID)
            assert want and _nested_ids(arr.type, PARQUET_ID) == want, name


def test_parquet_without_field_ids_has_none(tmp_path: Path) -> None:
    path = tmp_path / "plain.parquet"
    pq.write_table(_table(_schema("PARQUET:field_id", with_ids=False)), path)
    assert _ids_of(pq.read_schema(path), PARQUET_ID) == {}
    with open_units(str(path)) as f:
        assert f.field_ids() == {}


def test_parquet_field_ids_on_some_columns_only(tmp_path: Path) -> None:
    path = tmp_path / "some.parquet"
    schema = pa.schema([_f("a", pa.int32(), 7, "PARQUET:field_id"), pa.field("b", pa.int32()), _f("c", pa.string(), 0, "PARQUET:field_id")])
    pq.write_table(pa.table({"a": [1], "b": [2], "c": ["x"]}, schema=schema), path)
    with open_units(str(path)) as f:
        assert f.field_ids() == {"a": 7, "c": 0} == _ids_of(pq.read_schema(path), PARQUET_ID)
        # the top level of the schema a scan returns stays free of format metadata
        assert all(not (fl.metadata or {}).get(PARQUET_ID) for fl in f.arrow_schema)


def test_parquet_negative_field_id_is_none_as_pyarrow_reads_it(tmp_path: Path) -> None:
    """A writer's -1 (``field_id`` unset in spirit): pyarrow gives the column no id, nor does lazyscan."""
    path = tmp_path / "ids.parquet"
    schema = pa.schema([_f("a", pa.int32(), 1, "PARQUET:field_id"), _f("b", pa.int32(), 2, "PARQUET:field_id")])
    pq.write_table(pa.table({"a": [1], "b": [2]}, schema=schema), path, store_schema=False)
    patch = ParquetPatch(path)
    elements = patch.footer[2].value[1]  # FileMetaData.schema: root, a, b
    elements[2][9] = Node(T.I32, -1)  # SchemaElement.field_id
    patched = patch.write(tmp_path / "negative.parquet")
    assert _ids_of(pq.read_schema(patched), PARQUET_ID) == {"a": 1}
    with open_units(str(patched)) as f:
        assert f.field_ids() == {"a": 1}


def _readable_files(suffix: str) -> list[Path]:
    table_files = sorted(p for p in TABLES.rglob(f"*{suffix}") if p.is_file())
    return [p for p in data_files() if p.suffix == suffix] + table_files


def test_parquet_field_ids_of_every_data_file_equal_pyarrows() -> None:
    """Every Parquet file of tests/data both readers open: Impala's and Spark's Iceberg and Delta
    data files (ids on every column), the foreign writers' and parquet-testing's (mostly none)."""
    compared = with_ids = 0
    for path in _readable_files(".parquet"):
        try:
            expected = _ids_of(pq.read_schema(path), PARQUET_ID)
        except (OSError, pa.ArrowException):
            continue
        try:
            with open_units(str(path)) as f:
                got = f.field_ids()
        except LazyScanError:
            continue
        assert got == expected, path
        compared += 1
        with_ids += bool(expected)
    assert compared >= 270 and with_ids >= 100, (compared, with_ids)


# ---- ORC ----------------------------------------------------------------------------------------


def test_orc_iceberg_ids_equal_pyarrows(tmp_path: Path) -> None:
    """pyarrow's ORC writer stores field metadata as ORC type attributes, its reader gives them
    back as field metadata: lazyscan gives the same ids, top level and nested."""
    path = tmp_path / "ids.orc"
    schema = _schema("iceberg.id")
    po.write_table(_table(schema), path)
    theirs = po.ORCFile(str(path)).schema
    expected = _ids_of(theirs, ORC_ID)
    assert expected == {"id": 1, "name": 2, "point": 3, "tags": 4, "attrs": 8, "plain": 11}
    with open_units(str(path)) as f:
        assert f.field_ids() == expected
        for name in ("point", "tags", "attrs"):
            want = _nested_ids(theirs.field(name).type, ORC_ID)
            assert want and _nested_ids(f.arrow_schema.field(name).type, ORC_ID) == want, name
            # the arrays read too, a struct holding a timestamp (read in microseconds) included
            arr = f.read(0, name, None, ReadCounters(), f.new_cache())
            assert _nested_ids(arr.type, ORC_ID) == want, name
        assert not any(fl.metadata for fl in f.arrow_schema)


def test_orc_without_attributes_has_no_ids_and_the_same_types(tmp_path: Path) -> None:
    path = tmp_path / "plain.orc"
    schema = _schema("iceberg.id", with_ids=False)
    po.write_table(_table(schema), path)
    theirs = po.ORCFile(str(path)).schema
    with open_units(str(path)) as f:
        assert f.field_ids() == {}
        assert not any(_nested_ids(fl.type, ORC_ID) for fl in f.arrow_schema)
        for name in ("tags", "attrs"):  # (pyarrow reads the struct's timestamp in nanoseconds)
            assert f.arrow_schema.field(name).type.equals(theirs.field(name).type, check_metadata=True)


def test_orc_field_ids_of_every_data_file_equal_pyarrows() -> None:
    """The ORC examples and the Iceberg tables' ORC data files (written by Hive through Iceberg,
    ids on every column)."""
    compared = with_ids = 0
    for path in _readable_files(".orc"):
        try:
            expected = _ids_of(po.ORCFile(str(path)).schema, ORC_ID)
        except (OSError, pa.ArrowException):
            continue
        try:
            with open_units(str(path)) as f:
                got = f.field_ids()
        except LazyScanError:
            continue
        assert got == expected, path
        compared += 1
        with_ids += bool(expected)
    assert compared > 40 and with_ids >= 8, (compared, with_ids)


def test_orc_field_id_not_an_integer_names_file_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad-id.orc"
    schema = pa.schema([_f("a", pa.int32(), 1, "iceberg.id"), pa.field("b", pa.int32(), metadata={"iceberg.id": "two"})])
    po.write_table(pa.table({"a": [1], "b": [2]}, schema=schema), path)
    with open_units(str(path)) as f, pytest.raises(CorruptFileError, match="'two'") as e:
        f.field_ids()
    assert e.value.location.column == "b" and e.value.location.file == str(path)


# ---- the table scan -----------------------------------------------------------------------------


def _file_read(path: Path, columns: list[tuple[str, int]], rows: int) -> FileRead:
    return FileRead(
        where="table t version 1", path=str(path), size=path.stat().st_size, file_format="parquet",
        num_records=rows, columns=tuple(LogicalColumn(n, fid, (n,)) for n, fid in columns), by_field_id=True,
    )


def test_table_file_matches_columns_by_the_contracts_ids(tmp_path: Path) -> None:
    """The file names its columns ``a`` and ``b``; the table, by id, ``y`` (id 2) and ``x`` (id 1)."""
    path = tmp_path / "renamed.parquet"
    schema = pa.schema([_f("a", pa.int32(), 1, "PARQUET:field_id"), _f("b", pa.string(), 2, "PARQUET:field_id")])
    pq.write_table(pa.table({"a": [1, 2], "b": ["p", "q"]}, schema=schema), path)
    table_schema = pa.schema([pa.field("y", pa.string()), pa.field("x", pa.int32())])
    with open_units(str(path)) as f:
        table = TableFile(f, _file_read(path, [("y", 2), ("x", 1)], 2), table_schema)
        assert table.file.names == {"y": "b", "x": "a"}


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_renamed_nested_fields_are_read_by_their_ids(tmp_path: Path, fmt: str) -> None:
    """The table renamed the struct ``rec`` to ``record`` and its fields ``a`` / ``when`` to
    ``alpha`` / ``at`` (Iceberg renames keep field ids). The values are read under the new
    names, the timestamp's too (an ORC struct holding a timestamp is rebuilt in microseconds:
    its fields keep their ids)."""
    key = "PARQUET:field_id" if fmt == "parquet" else "iceberg.id"
    rec = pa.struct([_f("a", pa.int32(), 2, key), _f("when", pa.timestamp("us"), 3, key)])
    data = pa.table({"rec": pa.array([{"a": 1, "when": 1_000_000}, None, {"a": None, "when": -5}], rec)},
                    schema=pa.schema([_f("rec", rec, 1, key)]))
    path = tmp_path / f"renamed.{fmt}"
    if fmt == "parquet":
        pq.write_table(data, path)
    else:
        po.write_table(data, path)
    record = pa.struct([_f("alpha", pa.int32(), 2, "PARQUET:field_id"), _f("at", pa.timestamp("us"), 3, "PARQUET:field_id")])
    table_schema = pa.schema([_f("record", record, 1, "PARQUET:field_id")])
    read = dataclasses.replace(_file_read(path, [("record", 1)], 3), file_format=fmt)
    with open_units(str(path)) as f:
        table = TableFile(f, read, table_schema)
        got = table.file.read(0, "record", None, ReadCounters(), table.file.new_cache())
    assert got.type == record
    assert got.to_pylist() == [
        {"alpha": r["a"], "at": r["when"]} if r is not None else None for r in data.column("rec").to_pylist()
    ]


def test_two_columns_of_one_field_id_are_an_error(tmp_path: Path) -> None:
    path = tmp_path / "same-id.parquet"
    schema = pa.schema([_f("a", pa.int32(), 1, "PARQUET:field_id"), _f("b", pa.int32(), 1, "PARQUET:field_id")])
    pq.write_table(pa.table({"a": [1], "b": [2]}, schema=schema), path)
    with open_units(str(path)) as f, pytest.raises(CorruptFileError, match="'a' and 'b' have the same field id 1") as e:
        TableFile(f, _file_read(path, [("x", 1)], 1), pa.schema([pa.field("x", pa.int32())]))
    assert "table t version 1" in str(e.value)


def _requests_by_key(log: Path, bucket: str) -> dict[tuple[str, str], int]:
    """(method, object key) -> GET and HEAD requests to ``bucket``, from the moto server's log."""
    counts: dict[tuple[str, str], int] = {}
    for line in log.read_text(errors="replace").splitlines():
        m = re.search(rf'"(?:\x1b\[[0-9;]*m)*(GET|HEAD) /{re.escape(bucket)}/([^ ?"]+)', line)
        if m:
            counts[(m.group(1), m.group(2))] = counts.get((m.group(1), m.group(2)), 0) + 1
    return counts


def _requests_since(server: Any, bucket: str, before: dict[tuple[str, str], int], key: str) -> dict[str, int]:
    now = _requests_by_key(server.log, bucket)
    return {method: now.get((method, key), 0) - before.get((method, key), 0) for method in ("GET", "HEAD")}


def test_table_data_files_cost_no_second_footer_read_on_an_object_store(
    s3_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Delta table mapping columns by id, written by Spark (no Arrow schema in the files,
    nested columns): each data file's footer is fetched once, by lazyscan's reader. The ids come
    from it, and so do the Arrow types of the nested columns and the metadata pyarrow's reads of
    them start from; those reads go through lazyscan's source. The files being smaller than the
    tail read, each costs one HEAD (the open) and one GET (the tail), nested columns read or not,
    as the same file scanned alone as Parquet does."""

    name = "table-with-columnmapping-mode-id"
    local = TABLES / "delta" / name
    files = sorted(local.glob("*.parquet"))
    bucket = s3_server.bucket("field-ids")
    s3_server.upload_tree(local, bucket, name)
    for p in files:
        s3_server.upload(p, bucket, f"alone/{p.name}")
    options = s3_server.storage_options()
    fs = s3_server.arrow_filesystem()
    logical = ["ByteType", "StringType", "TimestampType"]
    nested = ["nested_struct", "array_of_structs", "map_of_rows"]
    for columns in (logical, logical + nested):
        with monkeypatch.context() as m:
            for attr in ("read_schema", "read_metadata"):
                m.setattr(pq, attr, _refused)
            before = _requests_by_key(s3_server.log, bucket)
            got = lazyscan.scan(f"{bucket}/{name}", filesystem=fs, storage_options=options, columns=columns).to_table()
            in_table = {p.name: _requests_since(s3_server, bucket, before, f"{name}/{p.name}") for p in files}
        expected = lazyscan.scan(str(local), columns=columns).to_table()
        assert got.num_rows == expected.num_rows > 0
        assert got.sort_by("ByteType").equals(expected.sort_by("ByteType"))
        assert all(r == {"GET": 1, "HEAD": 1} for r in in_table.values()), in_table
    for p in files:
        with open_units(str(p)) as f:
            by_id = {fid: n for n, fid in f.field_ids().items()}
        physical = [by_id[1], by_id[9], by_id[12]]  # ByteType, StringType, TimestampType
        before = _requests_by_key(s3_server.log, bucket)
        lazyscan.scan(f"{bucket}/alone/{p.name}", filesystem=fs, columns=physical).to_table()
        alone = _requests_since(s3_server, bucket, before, f"alone/{p.name}")
        assert alone["GET"] == 1, alone


def _refused(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the table scan asked pyarrow for a footer lazyscan had read")


def _nested_file(path: Path, fmt: str = "parquet") -> pa.Table:
    """A struct and a list column larger than the 64 KiB tail read: Parquet in two row groups,
    written without the Arrow schema (as Spark, Iceberg and Delta writers do), or ORC."""
    rng = np.random.default_rng(7)
    n = 40_000
    words = np.array(["alpha", "beta", "gamma", "", "delta-epsilon-zeta"], dtype=object)
    x = rng.integers(-1000, 1000, n)
    table = pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "s": pa.StructArray.from_arrays(
            [pa.array(x, mask=rng.random(n) < 0.1), pa.array(words[rng.integers(0, 5, n)].tolist())],
            names=["x", "txt"], mask=pa.array(rng.random(n) < 0.05),
        ),
        "l": pa.array([list(range(i % 4)) if i % 9 else None for i in range(n)], pa.list_(pa.int32())),
    })
    if fmt == "parquet":
        pq.write_table(table, path, row_group_size=n // 2, store_schema=False, compression="none")
    else:
        po.write_table(table, path, compression="uncompressed")
    return table


@pytest.mark.parametrize("client", ["pyarrow", "fsspec"])
@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_nested_columns_on_an_object_store_are_read_through_lazyscans_source(
    s3_server: Any, tmp_path: Path, fmt: str, client: str
) -> None:
    """pyarrow reads the nested columns through the source lazyscan opened (a path on the
    filesystem given, pyarrow's or s3fs): no open (HEAD) of its own, the same rows as pyarrow's
    read of the local file."""
    local = tmp_path / f"nested.{fmt}"
    expected = _nested_file(local, fmt)
    assert local.stat().st_size > 4 * 64 * 1024
    bucket = s3_server.bucket("nested-reads")
    key = f"nested.{fmt}"
    s3_server.upload(local, bucket, key)
    fs = s3_server.arrow_filesystem() if client == "pyarrow" else s3_server.fsspec_filesystem()
    path, where = f"{bucket}/{key}", "id >= 1000 AND id < 30000"
    before = _requests_by_key(s3_server.log, bucket)
    lazyscan.scan(path, filesystem=fs, columns=["id"], where=where).to_table()
    flat = _requests_since(s3_server, bucket, before, key)
    before = _requests_by_key(s3_server.log, bucket)
    got = lazyscan.scan(path, filesystem=fs, where=where).to_table()
    every = _requests_since(s3_server, bucket, before, key)
    ids = np.asarray(expected.column("id"))
    assert got.to_pylist() == expected.filter(pa.array((ids >= 1000) & (ids < 30000))).to_pylist()
    # the nested columns' reads add GETs of their bytes, no open of the file
    assert every["HEAD"] == flat["HEAD"] and every["GET"] > flat["GET"], (flat, every)


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_a_nested_read_of_an_object_gone_says_so(s3_server: Any, tmp_path: Path, fmt: str) -> None:
    """The store's answer reaches the caller as lazyscan's error for it, not as a corrupt file."""
    local = tmp_path / f"nested.{fmt}"
    _nested_file(local, fmt)
    bucket = s3_server.bucket("nested-gone")
    s3_server.upload(local, bucket, f"gone.{fmt}")
    with open_units(f"{bucket}/gone.{fmt}", s3_server.arrow_filesystem()) as f:
        s3_server.client.delete_object(Bucket=bucket, Key=f"gone.{fmt}")
        with pytest.raises(ObjectNotFoundError):
            f.read(f.num_units() - 1, "s", None, ReadCounters(), f.new_cache())
