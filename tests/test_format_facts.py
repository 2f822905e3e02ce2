"""The facts the unit-file contract gives Spark's cost model and schema mapping, checked against
what pyarrow reports of the same files, and a third format served by spark/ with no branch."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.orc as porc
import pyarrow.parquet as pq
import pytest
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from lazyscan.errors import UnsupportedFeatureError
from lazyscan.format import units as U
from lazyscan.format.statistics import ColumnStats
from lazyscan.format.units import FieldStorage, Format, TimestampKind, UnitFile, open_units
from lazyscan.io.source import open_source
from lazyscan.predicate import bind, referenced_columns, to_expr
from lazyscan.scan.dataset import FileInfo
from lazyscan.spark.choose import _file_facts
from lazyscan.spark.types import spark_schema_of

HIVE, INSTANT, LOCAL = TimestampKind.HIVE, TimestampKind.INSTANT, TimestampKind.LOCAL
STAMPS = [dt.datetime(2020, 1, 1, 12), None, dt.datetime(1999, 12, 31, 23, 59)]


def _nested_table(n: int = 3000) -> pa.Table:
    rng = np.random.default_rng(3)
    return pa.table({
        "k": pa.array(np.arange(n)),
        "s": pa.array([{"x": int(i), "y": f"v{i % 13}"} for i in range(n)]),
        "l": pa.array([[float(i)] * (i % 4) for i in range(n)]),
        "b": pa.array([bytes([i % 251]) * (i % 9) for i in range(n)], pa.binary()),
        "f": pa.array(rng.normal(size=n)),
    })


def test_parquet_column_bytes_are_the_footers_uncompressed_chunk_sizes(tmp_path: Path) -> None:
    """Per row group, the uncompressed bytes of every leaf under the columns (a struct's two
    fields, a list's element), as pyarrow's metadata lists them; one value per leaf per row."""
    p = tmp_path / "nested.parquet"
    pq.write_table(_nested_table(), p, row_group_size=700)
    meta = pq.ParquetFile(p).metadata
    leaves = {name: [j for j in range(meta.num_columns) if meta.schema.column(j).path.split(".")[0] == name]
              for name in ("k", "s", "l", "b", "f")}
    with open_units(str(p)) as f:
        assert f.num_units() == meta.num_row_groups == 5
        for names in ({"s"}, {"k", "l"}, {"s", "b", "f"}, {"k", "s", "l", "b", "f"}, {"absent"}):
            want = [
                sum(meta.row_group(rg).column(j).total_uncompressed_size for n in names for j in leaves.get(n, []))
                for rg in range(meta.num_row_groups)
            ]
            assert f.column_bytes(names).tolist() == want
            assert f.value_columns(names) == sum(len(leaves.get(n, [])) for n in names)
        assert f.value_columns({"s"}) == 2


def test_parquet_metadata_bytes_are_the_footer(tmp_path: Path) -> None:
    p = tmp_path / "plain.parquet"
    pq.write_table(_nested_table(), p, row_group_size=1000)
    with open_units(str(p)) as f:
        assert f.metadata_bytes() == pq.ParquetFile(p).metadata.serialized_size


def test_orc_column_bytes_split_each_stripes_data_streams(tmp_path: Path) -> None:
    """ORC's measure is compressed stream bytes: over all columns, exactly each stripe's data
    area (row indexes and Bloom filters sit in the index area and are left out); one column's
    bytes are a part of it, and the columns' parts add up to it."""
    p = tmp_path / "nested.orc"
    porc.write_table(
        _nested_table(30_000), p, stripe_size=64 * 1024, compression="zstd", bloom_filter_columns=[0, 1]
    )
    names = ["k", "s", "l", "b", "f"]
    with open_units(str(p)) as f:
        assert f.num_units() > 2
        data = np.array([f.orc.stripe(u).data_length for u in range(f.num_units())])  # type: ignore[attr-defined]
        assert f.column_bytes(set(names)).tolist() == data.tolist()
        parts = [f.column_bytes({n}) for n in names]
        assert all((part > 0).all() for part in parts)
        assert np.sum(parts, axis=0).tolist() == data.tolist()
        assert f.column_bytes({"absent"}).tolist() == [0] * f.num_units()
        assert f.value_columns({"k", "s", "absent"}) == 2  # ORC counts top-level columns


def test_orc_metadata_bytes_are_its_tail(tmp_path: Path) -> None:
    p = tmp_path / "t.orc"
    porc.write_table(_nested_table(), p)
    theirs = porc.ORCFile(p)
    with open_units(str(p)) as f:
        assert f.metadata_bytes() == (
            1 + theirs.file_postscript_length + theirs.file_footer_length + theirs.stripe_statistics_length
        )


def test_parquet_field_storage_says_what_arrow_hides(tmp_path: Path) -> None:
    """INT96 reads as a timestamp without a zone like a local timestamp; the file says which."""
    stamps = pa.array(STAMPS, pa.timestamp("us"))
    table = pa.table({
        "local": stamps,
        "instant": stamps.cast(pa.timestamp("us", "UTC")),
        "nested": pa.array([{"t": s} for s in STAMPS], pa.struct([("t", pa.timestamp("us"))])),
        "n": pa.array([1, 2, 3]),
    })
    plain, int96 = tmp_path / "plain.parquet", tmp_path / "int96.parquet"
    pq.write_table(table, plain)
    pq.write_table(table, int96, use_deprecated_int96_timestamps=True, store_schema=False)
    with open_units(str(plain)) as f:
        assert [f.field_storage(n).timestamps for n in table.column_names] == [
            {LOCAL}, {INSTANT}, {LOCAL}, frozenset()
        ]
        assert f.binary_may_be_text
    with open_units(str(int96)) as f:
        assert [f.field_storage(n).timestamps for n in table.column_names] == [{HIVE}, {HIVE}, {HIVE}, frozenset()]


def test_parquet_interval_is_a_hidden_type(tmp_path: Path) -> None:
    from tests.test_timestamps_range import interval_file

    with open_units(str(interval_file(tmp_path))) as f:
        assert f.arrow_schema.field("iv").type == pa.binary(12)
        assert f.field_storage("iv") == FieldStorage(frozenset(), (("Parquet type INTERVAL", "iv"),))
        with pytest.raises(UnsupportedFeatureError, match=r"Parquet type INTERVAL is not supported by Spark's Parquet reader"):
            spark_schema_of(f)


def test_orc_timestamps_are_hive_or_instants_at_any_depth(tmp_path: Path) -> None:
    stamps = pa.array(STAMPS, pa.timestamp("ns"))
    p = tmp_path / "ts.orc"
    porc.write_table(pa.table({
        "ts": stamps,
        "utc": stamps.cast(pa.timestamp("ns", "UTC")),
        "s": pa.array([{"t": s, "u": 1} for s in STAMPS], pa.struct([("t", pa.timestamp("ns")), ("u", pa.int64())])),
        "b": pa.array([b"a", b"b", None]),
    }), p)
    with open_units(str(p)) as f:
        assert [f.field_storage(n).timestamps for n in ("ts", "utc", "s", "b")] == [{HIVE}, {INSTANT}, {HIVE}, frozenset()]
        assert not f.binary_may_be_text
        # Spark's ORC reader types ORC timestamps TIMESTAMP at any depth (test_spark_orc.py
        # checks it against Spark), and ORC binary is binary whatever binaryAsString says
        assert spark_schema_of(f, binary_as_string=True) == StructType([
            StructField("ts", TimestampType()),
            StructField("utc", TimestampType()),
            StructField("s", StructType([StructField("t", TimestampType()), StructField("u", LongType())])),
            StructField("b", BinaryType()),
        ])


def test_spark_schema_of_parquet(tmp_path: Path) -> None:
    """Local timestamps are TIMESTAMP_NTZ, INT96 TIMESTAMP at any depth; binaryAsString turns
    Parquet's unannotated byte arrays into strings."""
    stamps = pa.array(STAMPS, pa.timestamp("us"))
    table = pa.table({
        "t": stamps,
        "l": pa.array([[s] for s in STAMPS], pa.list_(pa.timestamp("us"))),
        "b": pa.array([b"x", None, b"z"]),
    })
    plain, int96 = tmp_path / "plain.parquet", tmp_path / "int96.parquet"
    pq.write_table(table, plain)
    pq.write_table(table, int96, use_deprecated_int96_timestamps=True, store_schema=False)
    with open_units(str(plain)) as f:
        assert spark_schema_of(f) == StructType([
            StructField("t", TimestampNTZType()),
            StructField("l", ArrayType(TimestampNTZType())),
            StructField("b", BinaryType()),
        ])
        assert spark_schema_of(f, binary_as_string=True)["b"].dataType == StringType()
    with open_units(str(int96)) as f:
        assert [x.dataType for x in spark_schema_of(f).fields] == [TimestampType(), ArrayType(TimestampType()), BinaryType()]


def test_a_nested_column_of_int96_and_local_timestamps_is_refused(tmp_path: Path) -> None:
    """Both read without a zone, so one Arrow type cannot carry Spark's two types."""

    class Mixed(UnitFile):
        path = "mixed"
        format_name = "parquet"
        arrow_schema = pa.schema([("s", pa.struct([("a", pa.timestamp("us")), ("b", pa.timestamp("us"))]))])

        def field_storage(self, name: str) -> FieldStorage:
            return FieldStorage(frozenset({HIVE, LOCAL}))

    with pytest.raises(UnsupportedFeatureError, match="INT96 timestamps and timestamps of no zone"):
        spark_schema_of(Mixed())


# ---- a third format -------------------------------------------------------------------------


class ArrowIpcUnits(UnitFile):
    """A toy third format: an Arrow IPC file whose record batches are the units, each owning an
    equal share of the file's bytes."""

    format_name = "arrow"

    def __init__(self, path: Any, filesystem: Any = None, options: Any = None) -> None:
        self.path = str(path)
        self.source = open_source(self.path, filesystem)
        self.reader = ipc.open_file(self.path)
        self.arrow_schema = self.reader.schema

    def num_units(self) -> int:
        return int(self.reader.num_record_batches)

    def unit_rows(self, unit: int) -> int:
        return int(self.reader.get_batch(unit).num_rows)

    def unit_ranges(self) -> tuple[np.ndarray, np.ndarray]:
        share = self.source.size // self.num_units()
        return np.arange(self.num_units(), dtype=np.int64) * share, np.full(self.num_units(), share, np.int64)

    def metadata_bytes(self) -> int:
        return 0

    def column_bytes(self, names: Any) -> np.ndarray:
        batches = [self.reader.get_batch(u) for u in range(self.num_units())]
        return np.array([sum(b.column(n).nbytes for n in names if self.has(n)) for b in batches], np.int64)

    def flat(self, name: str) -> bool:
        return self.has(name)

    def statistics(self, unit: int, name: str) -> ColumnStats | None:
        values = self.reader.get_batch(unit).column(name)
        return ColumnStats(min(values.to_pylist()), max(values.to_pylist()), 0, len(values))


def test_a_third_format_needs_no_branch_in_spark(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A format spark/ has never heard of: the chooser's facts and the Spark schema come from
    its unit-file implementation alone."""

    class ArrowFormat(Format):
        def open(self, path: Any, filesystem: Any = None, options: Any = None) -> UnitFile:
            return ArrowIpcUnits(path, filesystem, options)

    monkeypatch.setattr(U, "FORMATS", (*U.FORMATS, ArrowFormat("arrow", "Arrow", (".arrow",), None, "-")))
    p = tmp_path / "t.arrow"
    table = pa.table({"k": pa.array(np.arange(400)), "v": pa.array([f"v{i}" for i in range(400)])})
    with ipc.new_file(p, table.schema) as w:
        for batch in table.to_batches(max_chunksize=100):
            w.write_batch(batch)
    expr = to_expr("k >= 250")
    assert expr is not None
    bound = bind(expr, table.schema)
    columns = set(referenced_columns(bound))
    facts = _file_facts(FileInfo(str(p), p.stat().st_size), None, {"k", "v"}, {"v"}, bound, columns, None, "arrow")
    assert [g.rows for g in facts.groups] == [100] * 4
    assert [g.left for g in facts.groups] == [False, False, True, True]  # statistics rule out the first two
    assert [g.needed_values for g in facts.groups] == [200] * 4
    assert all(g.needed_bytes > g.output_bytes > 0 for g in facts.groups)
    with open_units(str(p), fmt="arrow") as f:
        assert spark_schema_of(f) == StructType([StructField("k", LongType()), StructField("v", StringType())])
