"""Spark types of the columns of a file, and Arrow batches shaped the way Spark expects them.

Parts and their roles:

- :func:`spark_schema_of` maps the top-level fields of one open file of any format
  (:class:`~lazyscan.format.units.UnitFile`) to Spark types exactly as Spark's own reader of
  the format does: from the Arrow schema and what the file says Arrow leaves out
  (:meth:`~lazyscan.format.units.UnitFile.field_storage`). Hive timestamps (Parquet INT96, ORC
  ``timestamp``) and UTC-adjusted ones are ``TIMESTAMP``, other timestamps ``TIMESTAMP_NTZ``
  (Spark's ``ParquetToSparkSchemaConverter``; ORC: ``OrcUtils``), ``UINT_8/16/32`` widen to the
  next signed type, ``UINT_64`` is ``DECIMAL(20,0)``, ORC ``char``/``varchar`` are strings; types
  Spark refuses (nanosecond timestamps, ``TIME``, ``FLOAT16``, decimals wider than 38 digits,
  Parquet ``INTERVAL``) raise an error naming the file and column, as Spark does.
- :func:`merge_spark_schemas` merges file schemas like ``mergeSchema`` (union by name, first-seen
  order, nested structs merged, a name with two types is an error naming both files).
- :func:`partition_spark_type` types hive partition columns as Spark infers them.
- :class:`BatchShaper` turns a batch produced by the scan (lazyscan's Arrow types) into a batch
  of exactly the Arrow schema Spark derives from the output :class:`StructType`, filling columns
  missing in a file with nulls and partition columns with their values.

Every field Spark sees is nullable, as with Spark's file sources.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from lazyscan.errors import LazyScanError, UnsupportedFeatureError
from lazyscan.format.units import TimestampKind, UnitFile, format_named

#: Spark's time zone for TimestampType values handed over in Arrow batches.
ARROW_TIME_ZONE = "UTC"

_SIMPLE: dict[pa.DataType, DataType] = {
    pa.bool_(): BooleanType(),
    pa.int8(): ByteType(),
    pa.int16(): ShortType(),
    pa.int32(): IntegerType(),
    pa.int64(): LongType(),
    pa.uint8(): ShortType(),
    pa.uint16(): IntegerType(),
    pa.uint32(): LongType(),
    pa.uint64(): DecimalType(20, 0),
    pa.float32(): FloatType(),
    pa.float64(): DoubleType(),
    pa.date32(): DateType(),
    pa.date64(): DateType(),
    pa.null(): NullType(),
}


class SchemaMismatchError(LazyScanError):
    """Files of one source hold the same column with types Spark cannot merge."""


def _unsupported(
    what: str, column: str, path: str | None, hint: str = "", reader: str = "Parquet"
) -> UnsupportedFeatureError:
    msg = f"{what} is not supported by Spark's {reader} reader"
    if hint:
        msg += f"; {hint}"
    return UnsupportedFeatureError(msg, file=path, column=column)


def spark_type_of(
    atype: pa.DataType,
    column: str,
    *,
    int96: bool = False,
    binary_as_string: bool = False,
    path: str | None = None,
    reader: str = "Parquet",
) -> DataType:
    """The Spark type of a column that lazyscan reads as ``atype``.

    ``int96`` marks a column whose timestamps without a zone are Hive timestamps (Parquet INT96,
    ORC ``timestamp``; flat or nested: read without a zone, typed ``TIMESTAMP`` as Spark types
    them); ``binary_as_string`` is Spark's ``spark.sql.parquet.binaryAsString``; ``reader``
    names Spark's reader in errors ("Parquet", "ORC").
    """
    if pa.types.is_dictionary(atype):
        return spark_type_of(
            atype.value_type, column, binary_as_string=binary_as_string, path=path, reader=reader
        )
    if isinstance(atype, pa.ExtensionType):
        return spark_type_of(
            atype.storage_type, column, binary_as_string=binary_as_string, path=path, reader=reader
        )
    simple = _SIMPLE.get(atype)
    if simple is not None:
        return simple
    if pa.types.is_timestamp(atype):
        if int96 and atype.tz is None:
            return TimestampType()
        if atype.unit == "ns":
            raise _unsupported(
                f"{reader} type TIMESTAMP(NANOS)",
                column,
                path,
                "Spark reads nanosecond timestamps only as INT96",
                reader,
            )
        return TimestampType() if atype.tz is not None else TimestampNTZType()
    if pa.types.is_decimal(atype):
        if atype.precision > 38:
            raise _unsupported(f"DECIMAL({atype.precision},{atype.scale})", column, path, reader=reader)
        return DecimalType(atype.precision, atype.scale)
    if pa.types.is_string(atype) or pa.types.is_large_string(atype) or pa.types.is_string_view(atype):
        return StringType()
    if pa.types.is_fixed_size_binary(atype):
        return BinaryType()
    if pa.types.is_binary(atype) or pa.types.is_large_binary(atype) or pa.types.is_binary_view(atype):
        return StringType() if binary_as_string else BinaryType()
    if pa.types.is_float16(atype):
        raise _unsupported(f"{reader} type FLOAT16", column, path, reader=reader)
    if pa.types.is_time(atype):
        raise _unsupported(f"{reader} type TIME", column, path, reader=reader)
    if pa.types.is_struct(atype):
        fields = [
            StructField(
                f.name,
                spark_type_of(
                    f.type, f"{column}.{f.name}", int96=int96, binary_as_string=binary_as_string, path=path,
                    reader=reader,
                ),
                True,
            )
            for f in atype
        ]
        return StructType(fields)
    if pa.types.is_map(atype):
        key = spark_type_of(
            atype.key_type, f"{column}.key", int96=int96, binary_as_string=binary_as_string, path=path, reader=reader
        )
        value = spark_type_of(
            atype.item_type, f"{column}.value", int96=int96, binary_as_string=binary_as_string, path=path,
            reader=reader,
        )
        return MapType(key, value, True)
    if (
        pa.types.is_list(atype)
        or pa.types.is_large_list(atype)
        or pa.types.is_fixed_size_list(atype)
        or pa.types.is_list_view(atype)
    ):
        element = spark_type_of(
            atype.value_type, f"{column}.element", int96=int96, binary_as_string=binary_as_string, path=path,
            reader=reader,
        )
        return ArrayType(element, True)
    raise _unsupported(f"Arrow type {atype}", column, path, reader=reader)


def spark_schema_of(unit_file: UnitFile, *, binary_as_string: bool = False) -> StructType:
    """The Spark schema of an open file of any format, as Spark's own reader of the format
    types it. ``binary_as_string`` is ``spark.sql.parquet.binaryAsString``; it applies where
    byte strings may be undeclared text (:attr:`~lazyscan.format.units.UnitFile.binary_may_be_text`)."""
    reader = format_named(unit_file.format_name).title
    as_string = binary_as_string and unit_file.binary_may_be_text
    fields = []
    for field in unit_file.arrow_schema:
        storage = unit_file.field_storage(field.name)
        for stored, column in storage.hidden_types:
            raise _unsupported(stored, column, unit_file.path, reader=reader)
        hive = TimestampKind.HIVE in storage.timestamps
        if hive and TimestampKind.LOCAL in storage.timestamps:
            # both read without a zone: the Arrow type cannot tell them apart
            raise _unsupported(
                "a nested column holding INT96 timestamps and timestamps of no zone", field.name, unit_file.path,
                "lazyscan gives INT96 Spark's TIMESTAMP type by column, not by nested field", reader,
            )
        stype = spark_type_of(
            field.type, field.name, int96=hive, binary_as_string=as_string, path=unit_file.path, reader=reader
        )
        fields.append(StructField(field.name, stype, True))
    return StructType(fields)


def _merge_types(left: DataType, right: DataType, name: str) -> DataType | None:
    if left == right:
        return left
    if isinstance(left, NullType):
        return right
    if isinstance(right, NullType):
        return left
    if isinstance(left, StructType) and isinstance(right, StructType):
        merged = _merge_fields(list(left.fields), list(right.fields), name + ".")
        return None if merged is None else StructType(merged)
    if isinstance(left, ArrayType) and isinstance(right, ArrayType):
        element = _merge_types(left.elementType, right.elementType, name + ".element")
        return None if element is None else ArrayType(element, True)
    if isinstance(left, MapType) and isinstance(right, MapType):
        key = _merge_types(left.keyType, right.keyType, name + ".key")
        value = _merge_types(left.valueType, right.valueType, name + ".value")
        return None if key is None or value is None else MapType(key, value, True)
    return None


def _merge_fields(
    left: list[StructField], right: list[StructField], prefix: str = ""
) -> list[StructField] | None:
    out = list(left)
    index = {f.name: i for i, f in enumerate(out)}
    for f in right:
        i = index.get(f.name)
        if i is None:
            index[f.name] = len(out)
            out.append(f)
            continue
        merged = _merge_types(out[i].dataType, f.dataType, prefix + f.name)
        if merged is None:
            raise _MergeConflict(prefix + f.name, out[i].dataType, f.dataType)
        out[i] = StructField(f.name, merged, True)
    return out


class _MergeConflict(Exception):
    def __init__(self, column: str, left: DataType, right: DataType) -> None:
        super().__init__(column)
        self.column = column
        self.left = left
        self.right = right


def merge_spark_schemas(schemas: Sequence[tuple[str, StructType]]) -> StructType:
    """Merge ``(path, schema)`` pairs like Spark's ``mergeSchema``."""
    fields: list[StructField] = []
    origin: dict[str, str] = {}
    for path, schema in schemas:
        try:
            merged = _merge_fields(fields, list(schema.fields))
        except _MergeConflict as e:
            top = e.column.split(".")[0]
            raise SchemaMismatchError(
                f"column {e.column!r} is {e.left.simpleString()} in {origin.get(top, '?')!r} "
                f"and {e.right.simpleString()} in {path!r}; Spark cannot merge these types"
            ) from None
        assert merged is not None
        fields = merged
        for f in schema.fields:
            origin.setdefault(f.name, path)
    return StructType(fields)


def partition_spark_type(atype: pa.DataType) -> DataType:
    """Spark type of a partition column typed by :func:`lazyscan.scan.discover`."""
    if pa.types.is_timestamp(atype):
        return TimestampType()
    return spark_type_of(atype, "partition")


def arrow_schema_for_spark(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark requires of batches for ``schema`` (TIMESTAMP in UTC)."""
    from lazyscan.spark.compat import to_arrow_schema

    return to_arrow_schema(schema)


def floor_to_micros(arr: pa.Array, tz: str | None) -> pa.Array:
    """Nanosecond timestamps floored to microseconds, as Spark reads INT96."""
    ints = arr.cast(pa.int64())
    values = np.floor_divide(ints.fill_null(0).to_numpy(zero_copy_only=False), 1000)
    mask = ints.is_null().to_numpy(zero_copy_only=False) if ints.null_count else None
    return pa.array(values, type=pa.int64(), mask=mask).cast(pa.timestamp("us", tz=tz))


@dataclass(frozen=True)
class OutputColumn:
    """Where one output column comes from.

    ``source`` is the column name in the scan's batches (``None``: not in any file, all null);
    ``partition`` names a partition column whose value comes from the split;
    ``partition_time_zone`` is set for TIMESTAMP partition values written as wall-clock text.
    """

    name: str
    source: str | None
    partition: str | None = None
    partition_time_zone: str | None = None


class BatchShaper:
    """Casts scan batches to the Arrow schema Spark expects for the output schema."""

    def __init__(self, spark_schema: StructType, columns: Sequence[OutputColumn]) -> None:
        self.spark_schema = spark_schema
        self.target = arrow_schema_for_spark(spark_schema)
        self.columns = tuple(columns)
        if len(self.columns) != len(self.target):
            raise ValueError("one OutputColumn per output field is needed")

    def shape(self, batch: pa.RecordBatch, partition_values: dict[str, Any], path: str) -> pa.RecordBatch:
        """Return ``batch`` with exactly :attr:`target` as schema."""
        names = batch.schema.names
        arrays = []
        for out, field in zip(self.columns, self.target):
            arr: pa.Array | None = None
            if out.source is not None and out.source in names:
                arr = batch.column(names.index(out.source))
            elif out.partition is not None:
                arr = self._partition_array(out, partition_values.get(out.partition), batch.num_rows, path)
            if arr is None:
                arrays.append(pa.nulls(batch.num_rows, field.type))
                continue
            arrays.append(self._convert(arr, field, path))
        return pa.RecordBatch.from_arrays(arrays, schema=self.target)

    @staticmethod
    def _partition_array(out: OutputColumn, value: Any, n: int, path: str) -> pa.Array:
        if value is None:
            return pa.nulls(n)
        try:
            arr = pa.repeat(value, n)
        except (OverflowError, pa.ArrowException) as e:
            raise LazyScanError(
                f"partition column {out.partition!r} of file {path!r}: value {value!r} has no Arrow type: {e}"
            ) from e
        if out.partition_time_zone and pa.types.is_timestamp(arr.type) and arr.type.tz is None:
            arr = pc.assume_timezone(arr, out.partition_time_zone)
        return arr

    @staticmethod
    def _convert(arr: pa.Array, field: pa.Field, path: str) -> pa.Array:
        target = field.type
        if arr.type == target:
            return arr
        if pa.types.is_null(arr.type):
            return pa.nulls(len(arr), target)
        if (
            pa.types.is_timestamp(arr.type)
            and arr.type.unit == "ns"
            and pa.types.is_timestamp(target)
        ):
            return floor_to_micros(arr, target.tz)
        if pa.types.is_timestamp(arr.type) and arr.type.tz is None and pa.types.is_timestamp(target) and target.tz:
            arr = pc.assume_timezone(arr, "UTC")
        try:
            return arr.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise LazyScanError(
                f"column {field.name!r} of type {arr.type} in file {path!r} cannot be read "
                f"as Spark type {target}: {e}"
            ) from e
