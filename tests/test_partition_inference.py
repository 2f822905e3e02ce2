"""Types of hive partition columns: inferred from folder names as Spark infers them
(``PartitioningUtils.inferPartitionColumnValue``, the types of different folders widened by its
``findWiderTypeForPartitionColumn``), and typed from their folder text where the Spark source is
given a schema. The expected types and values are what ``spark.read.parquet`` of PySpark 4.3.0
gives for the same folders; the rows of the files are compared with pyarrow's."""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql.types import DateType, LongType, StringType, StructField, StructType

import lazyscan
from lazyscan.errors import SourceError
from lazyscan.spark.source import (
    LazyScanReader,
    SessionDefaults,
    SourceSettings,
    listing_for_schema,
)

D = decimal.Decimal

#: folder values -> (Spark's type of the column, Spark's values in folder order)
SPARK_TYPES: dict[str, tuple[list[str], pa.DataType, list[Any]]] = {
    "ints": (["007", "10"], pa.int32(), [7, 10]),
    "an int and a long": (["3000000000", "1"], pa.int64(), [3000000000, 1]),
    "beyond long: decimal(20,0)": (["99999999999999999999", "1"], pa.decimal128(20, 0), [D("99999999999999999999"), D(1)]),
    "negative beyond long": (["-99999999999999999999", "5"], pa.decimal128(20, 0), [D("-99999999999999999999"), D(5)]),
    "two decimals: the wider": (
        ["99999999999999999999", "123456789012345678901234"], pa.decimal128(24, 0),
        [D("99999999999999999999"), D("123456789012345678901234")],
    ),
    "a decimal and a long": (["99999999999999999999", "3000000000"], pa.decimal128(20, 0), [D("99999999999999999999"), D(3000000000)]),
    "beyond 38 digits: double": (["1" * 39, "1"], pa.float64(), [float("1" * 39), 1.0]),
    "an int and a double": (["1", "2.5"], pa.float64(), [1.0, 2.5]),
    "a long and a double: string": (["3000000000", "2.5"], pa.string(), ["3000000000", "2.5"]),
    "a decimal and a double: string": (["99999999999999999999", "2.5"], pa.string(), ["99999999999999999999", "2.5"]),
    "digits with an underscore: string": (["1_000", "2"], pa.string(), ["1_000", "2"]),
    "dates": (["2024-01-01", "2024-02-29"], pa.date32(), [dt.date(2024, 1, 1), dt.date(2024, 2, 29)]),
    "a null": (["__HIVE_DEFAULT_PARTITION__", "99999999999999999999"], pa.decimal128(20, 0), [None, D("99999999999999999999")]),
}


def _folders(root: Path, values: list[str]) -> list[Path]:
    files = []
    for n, v in enumerate(values):
        folder = root / f"z={v}"
        folder.mkdir(parents=True)
        pq.write_table(
            pa.table({"id": pa.array([10 * n, 10 * n + 1], pa.int64()), "i": pa.array([41, 3], pa.int32())}),
            folder / "part.parquet",
        )
        files.append(folder / "part.parquet")
    return files


@pytest.mark.parametrize("case", SPARK_TYPES.values(), ids=SPARK_TYPES.keys())
def test_partition_types_as_spark_infers_them(tmp_path: Path, case: tuple[list[str], pa.DataType, list[Any]]) -> None:
    values, spark_type, spark_values = case
    files = _folders(tmp_path / "t", values)
    got = lazyscan.scan(str(tmp_path / "t")).to_table()
    assert got.schema.field("z").type == spark_type
    expected = pa.concat_tables(
        pq.read_table(f).append_column("z", pa.array([v, v], spark_type)) for f, v in zip(files, spark_values)
    )
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == sorted(expected.to_pylist(), key=lambda r: r["id"])


def test_filter_on_a_partition_value_beyond_long(tmp_path: Path) -> None:
    _folders(tmp_path / "t", ["99999999999999999999", "1", "12345678901234567890"])
    s = lazyscan.scan(str(tmp_path / "t"), where="z > 10000000000000000000 AND i > 40")
    got = sorted((r["id"], r["z"]) for r in s.to_table().to_pylist())
    assert got == [(0, D("99999999999999999999")), (20, D("12345678901234567890"))]
    assert s.profile["row_groups_pruned_partition"] == 1


def _source_rows(path: Path, schema: StructType, where: str | None = None) -> list[dict[str, Any]]:
    options = {"path": str(path)} | ({"where": where} if where else {})
    settings = SourceSettings.from_options(options, SessionDefaults())
    reader = LazyScanReader(settings, listing_for_schema(settings, schema), schema)
    return sorted(
        (row for task in reader.partitions() for batch in reader.read(task) for row in batch.to_pylist()),
        key=lambda r: r["id"],
    )


def test_source_types_partition_values_from_folder_text_in_the_given_type(tmp_path: Path) -> None:
    """With type inference switched off Spark types ``z`` as a string and keeps ``'007'``
    (``spark.sql.sources.partitionColumnTypeInference.enabled=false``); the source is given that
    schema and reads the folder text, not the inferred int 7."""
    _folders(tmp_path / "t", ["007", "10"])
    schema = StructType([StructField("id", LongType()), StructField("z", StringType())])
    assert _source_rows(tmp_path / "t", schema) == [
        {"id": 0, "z": "007"}, {"id": 1, "z": "007"}, {"id": 10, "z": "10"}, {"id": 11, "z": "10"},
    ]
    assert _source_rows(tmp_path / "t", schema, "z = '007' AND i > 40") == [{"id": 0, "z": "007"}]


def test_source_partition_value_not_of_its_type(tmp_path: Path) -> None:
    _folders(tmp_path / "t", ["2024-01-01", "007"])
    schema = StructType([StructField("id", LongType()), StructField("z", DateType())])
    with pytest.raises(SourceError, match=r"z=007.*'007' of partition column 'z' is not of its type date"):
        _source_rows(tmp_path / "t", schema)
