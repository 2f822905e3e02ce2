"""Scans that match no row: a table of 0 rows whose schema is the one a full read of the same
file returns, for every type the readers produce (extension types such as JSON, UUID and fixed
shape tensors, lists, structs and maps of them, dictionaries, large types, decimal256, float16,
groups without leaves ...), on every Parquet and ORC file in ``tests/data`` and on generated ones.

``Schema.empty_table`` refuses extension types nested in lists, structs and maps, and
``pa.array([], type)`` refuses them everywhere; a scan that matched nothing raised pyarrow's
``ArrowNotImplementedError`` from there.
"""

from __future__ import annotations

import contextlib
import decimal
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lazyscan
from lazyscan.errors import LazyScanError
from lazyscan.predicate.expr import render_column
from tests.support.data import DATA, data_files, foreign_file


def _impossible(name: str) -> str:
    c = render_column(name)
    return f"{c} IS NULL AND {c} IS NOT NULL"


def _assert_empty_like(result: pa.Table, full: pa.Table, what: str) -> None:
    assert result.num_rows == 0, what
    assert result.schema == full.schema, f"{what}: {result.schema} != {full.schema}"
    for field in result.schema:  # the columns really are of the schema's types
        assert result.column(field.name).type == field.type, what


@pytest.mark.parametrize("path", data_files(), ids=lambda p: str(p.relative_to(DATA)))
def test_no_row_matches_on_every_file_in_tests_data(path: Path) -> None:
    """An impossible filter on the first column, a FALSE filter and an impossible filter with
    only the last column as output: 0 rows, the schema of the full read. A file whose full
    read lazyscan refuses gives no rows or a lazyscan error (a FALSE filter reads no page)."""
    try:
        full = lazyscan.scan(path).to_table()
    except LazyScanError as e:
        with contextlib.suppress(LazyScanError):
            assert lazyscan.scan(path, where="FALSE").to_table().num_rows == 0
        pytest.skip(f"refused with a lazyscan error: {type(e).__name__}")
    names = full.schema.names
    if not names:
        assert lazyscan.scan(path, where="FALSE").to_table().num_rows == 0
        return
    first, last = names[0], names[-1]
    _assert_empty_like(lazyscan.scan(path, where=_impossible(first)).to_table(), full, "impossible filter")
    _assert_empty_like(lazyscan.scan(path, where="FALSE").to_table(), full, "FALSE")
    only_last = lazyscan.scan(path, columns=[last], where=_impossible(first))
    _assert_empty_like(only_last.to_table(), full.select([last]), "last column only")
    assert list(lazyscan.scan(path, where=_impossible(first)).to_batches()) == []


def test_json_extension_column_of_duckdbs_collection() -> None:
    """``TX_JSON`` is a repeated JSON column (a list of ``arrow.json`` values): the empty result
    has pyarrow's type for it, as the full read has."""
    path = foreign_file("json_convertedtype.parquet")
    full = lazyscan.scan(path).to_table()
    assert full.schema.field("TX_JSON").type == pq.read_schema(path).field("TX_JSON").type
    for where in ["BLOCK_NUMBER < 0", "TX_HASH = 'no such hash'", _impossible("TX_JSON")]:
        _assert_empty_like(lazyscan.scan(path, where=where).to_table(), full, where)


class Point(pa.ExtensionType):
    """A Python extension type (registered), stored as a struct of two doubles."""

    def __init__(self) -> None:
        super().__init__(pa.struct([("x", pa.float64()), ("y", pa.float64())]), "lazyscan.test.point")

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> Point:
        return cls()


@pytest.fixture(scope="module")
def point_type() -> pa.ExtensionType:
    t = Point()
    with contextlib.suppress(pa.ArrowKeyError):  # registered by an earlier run in this process
        pa.register_extension_type(t)
    return t


def _odd_types(point: pa.ExtensionType) -> pa.Table:
    """Four rows of a column of each odd type pyarrow writes to Parquet."""
    json = pa.ExtensionArray.from_storage(pa.json_(), pa.array(['{"a": 1}', None, "[]", "2"]))
    uuids = pa.ExtensionArray.from_storage(pa.uuid(), pa.array([uuid.UUID(int=i).bytes for i in range(4)], pa.binary(16)))
    tensor_type = pa.fixed_shape_tensor(pa.int32(), [2, 2])
    tensors = pa.ExtensionArray.from_storage(tensor_type, pa.array([[1, 2, 3, 4]] * 4, pa.list_(pa.int32(), 4)))
    bool8 = pa.ExtensionArray.from_storage(pa.bool8(), pa.array([1, 0, None, 1], pa.int8()))
    points = pa.ExtensionArray.from_storage(point, pa.array([{"x": 1.0, "y": 2.0}, None, {"x": 0.0, "y": -1.0}, None], point.storage_type))
    decimals = [decimal.Decimal("1.5"), None, decimal.Decimal("-2.25"), decimal.Decimal(0)]
    columns = {
        "id": pa.array([1, 2, 3, 4], pa.int64()),
        "json": json,
        "uuid": uuids,
        "tensor": tensors,
        "bool8": bool8,
        "point": points,
        "list_json": pa.array([['{"a":1}'], None, [], ["1", None]], pa.list_(pa.string())).cast(pa.list_(pa.json_())),
        "struct_ext": pa.StructArray.from_arrays([json, uuids], ["j", "u"]),
        "map_json": pa.array([[("k", "1")], None, [], [("a", None)]], pa.map_(pa.string(), pa.string())).cast(
            pa.map_(pa.string(), pa.json_())
        ),
        "list_tensor": pa.ListArray.from_arrays(pa.array([0, 1, 1, 3, 4]), tensors),
        "dictionary": pa.array(["a", "b", None, "a"]).dictionary_encode(),
        "large_string": pa.array(["a", None, "c", "d"], pa.large_string()),
        "large_binary": pa.array([b"a", None, b"c", b"d"], pa.large_binary()),
        "large_list": pa.array([[1], None, [], [2, 3]], pa.large_list(pa.int64())),
        "decimal256": pa.array(decimals, pa.decimal256(50, 2)),
        "float16": pa.array(np.array([1.5, np.nan, -0.0, 2], np.float16)),
        "timestamp_tz": pa.array([0, None, 10**12, -5], pa.timestamp("ms", tz="Europe/Paris")),
        "timestamp_ns": pa.array([0, None, 10**12, -5], pa.timestamp("ns")),
        "time": pa.array([0, None, 10**6, 5], pa.time64("us")),
        "duration": pa.array([0, None, 1, -1], pa.duration("s")),
        "fixed_list": pa.array([[1, 2], None, [3, 4], [5, None]], pa.list_(pa.int16(), 2)),
        "null": pa.nulls(4),
        "uint64": pa.array([0, None, 2**64 - 1, 5], pa.uint64()),
    }
    return pa.table(columns)


@pytest.mark.parametrize("store_schema", [True, False], ids=["arrow-schema", "no-arrow-schema"])
def test_generated_odd_types(tmp_path: Path, point_type: pa.ExtensionType, store_schema: bool) -> None:
    """Every odd type, with and without pyarrow's stored Arrow schema (which restores the
    extension types), pruned by statistics (``id > 10``), by values (``id = 3 AND id = 4``
    cannot hold; each conjunct alone can) and by a FALSE filter: 0 rows, the full read's
    schema. The non-empty read keeps pyarrow's types for the nested columns."""
    table = _odd_types(point_type)
    path = tmp_path / "odd.parquet"
    pq.write_table(table, path, row_group_size=2, store_schema=store_schema)
    full = lazyscan.scan(path).to_table()
    assert full.num_rows == 4
    reference = pq.read_schema(path)
    for name in ["list_json", "struct_ext", "map_json", "list_tensor", "point" if store_schema else "large_list"]:
        assert full.schema.field(name).type == reference.field(name).type, name
    for where in ["id > 10", "id > 1 AND id < 2", "FALSE", _impossible("json"), _impossible("map_json")]:
        _assert_empty_like(lazyscan.scan(path, where=where).to_table(), full, where)
    for switch in ["pushdown", "late_materialization", "prune_statistics"]:
        off = lazyscan.scan(path, where="id > 10", **{switch: False})  # type: ignore[arg-type]
        _assert_empty_like(off.to_table(), full, f"{switch} off")


def test_partitions_ruled_out_and_columns_missing_from_a_file(tmp_path: Path, point_type: pa.ExtensionType) -> None:
    """Partition values that rule out every file give the empty table of the dataset schema
    (partition column included); a file without an extension column gives NULLs of that type."""
    table = _odd_types(point_type)
    (tmp_path / "p=1").mkdir()
    (tmp_path / "p=2").mkdir()
    pq.write_table(table, tmp_path / "p=1" / "a.parquet")
    pq.write_table(table.select(["id"]), tmp_path / "p=2" / "b.parquet")
    full = lazyscan.scan(tmp_path).to_table()
    assert full.num_rows == 8
    assert full.schema.field("p").type == pa.int32()
    missing = full.filter(pa.compute.equal(full.column("p"), 2))
    for name in ["json", "list_json", "struct_ext", "map_json", "point"]:
        assert missing.column(name).null_count == 4, name
        assert missing.column(name).type == full.schema.field(name).type, name
    _assert_empty_like(lazyscan.scan(tmp_path, where="p = 3").to_table(), full, "p = 3")
    _assert_empty_like(lazyscan.scan(tmp_path, where="p = 2 AND json IS NOT NULL").to_table(), full, "p = 2 AND json")


def test_orc_types(tmp_path: Path) -> None:
    """ORC files of every ORC type pyorc writes, nested ones included: 0 rows, the full read's
    schema."""
    import datetime as dt

    import pyorc

    schema = (
        "struct<i:int,b:boolean,t:tinyint,s:smallint,l:bigint,f:float,d:double,str:string,"
        "bin:binary,dec:decimal(38,10),date:date,ts:timestamp,vc:varchar(5),ch:char(3),"
        "li:array<string>,m:map<string,int>,st:struct<a:int,b:array<double>>,"
        "u:uniontype<int,string>>"
    )
    rows = [
        (1, True, 1, 2, 3, 1.5, 2.5, "a", b"x", decimal.Decimal("1.5"), dt.date(2020, 1, 1),
         dt.datetime(2020, 1, 1, 1, 2, 3), "vc", "abc", ["p"], {"k": 1}, (1, [1.0]), 5),
        (None,) * 18,
    ]
    path = tmp_path / "types.orc"
    with path.open("wb") as f, pyorc.Writer(f, schema) as w:
        for r in rows:
            w.write(r)
    full = lazyscan.scan(path).to_table()
    assert full.num_rows == 2
    assert pa.types.is_union(full.schema.field("u").type)
    for where in ["i > 5", "FALSE", _impossible("m")]:
        _assert_empty_like(lazyscan.scan(path, where=where).to_table(), full, where)
