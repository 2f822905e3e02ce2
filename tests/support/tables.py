"""Comparing whole tables from lazyscan with a reference reader: types checked, NaN equal to NaN,
nested values included.

Flat columns go through :func:`tests.support.compare.assert_same_array`; this module adds the
type check and the columns it cannot compare (nested values, timestamps in another unit).
"""

from __future__ import annotations

import contextlib
import math

import pyarrow as pa
import pyarrow.compute as pc

from tests.support.compare import assert_same_array

_UNIT_NANOS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def plain_type(t: pa.DataType) -> pa.DataType:
    """A type as lazyscan returns it: dictionaries decoded, extension types as their storage,
    large and view string/binary/list types as the plain ones (recursively)."""
    if isinstance(t, pa.BaseExtensionType):
        return plain_type(t.storage_type)
    if pa.types.is_dictionary(t):
        return plain_type(t.value_type)
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_large_list(t) or pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        return pa.list_(t.value_field.with_type(plain_type(t.value_type)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(plain_type(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(plain_type(t.key_type)), t.item_field.with_type(plain_type(t.item_type)))
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(plain_type(t.field(i).type)) for i in range(t.num_fields)])
    return t


def type_difference(ours: pa.DataType, ref: pa.DataType, timestamp_unit_free: bool = False) -> str | None:
    """Why ``ours`` is not the type lazyscan should return for the reference's ``ref``, or None.

    Types must be equal after :func:`plain_type`, field names included; with
    ``timestamp_unit_free`` a timestamp may come in another unit than the reference's (same zone).
    """
    a, b = plain_type(ours), plain_type(ref)
    if a == b:
        return None
    if timestamp_unit_free and pa.types.is_timestamp(a) and pa.types.is_timestamp(b) and a.tz == b.tz:
        return None
    if pa.types.is_struct(a) and pa.types.is_struct(b) and a.num_fields == b.num_fields:
        for i in range(a.num_fields):
            if a.field(i).name != b.field(i).name:
                return f"struct field {i} is named {a.field(i).name!r}, the reference's {b.field(i).name!r}"
            why = type_difference(a.field(i).type, b.field(i).type, timestamp_unit_free)
            if why:
                return f"{a.field(i).name}: {why}"
        return None
    if pa.types.is_map(a) and pa.types.is_map(b):
        return type_difference(a.key_type, b.key_type, timestamp_unit_free) or type_difference(
            a.item_type, b.item_type, timestamp_unit_free
        )
    if pa.types.is_list(a) and pa.types.is_list(b):
        return type_difference(a.value_type, b.value_type, timestamp_unit_free)
    return f"type {ours} where the reference has {ref}"


def same_value(a: object, b: object) -> bool:
    """Python values equal, NaN equal to NaN and -0.0 apart from 0.0, inside lists, dicts and
    tuples too."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    return bool(a == b)


def _timestamps_in(arr: pa.Array, unit: str) -> pa.Array:
    """A timestamp array in another unit: finer values rounded toward negative infinity as Spark
    rounds (``floorDiv``) when it takes them to microseconds; coarser ones multiplied, an error
    where they do not fit (never wrapped)."""
    have = _UNIT_NANOS[arr.type.unit]
    want = _UNIT_NANOS[unit]
    ints = arr.cast(pa.int64())
    if want > have:
        values = ints.fill_null(0).to_numpy(zero_copy_only=False) // (want // have)
        return pa.array(values, pa.timestamp(unit, arr.type.tz), mask=ints.is_null().to_numpy(zero_copy_only=False))
    return pc.multiply_checked(ints, have // want).cast(pa.timestamp(unit, arr.type.tz))


def column_difference(ours: pa.Array | pa.ChunkedArray, ref: pa.Array | pa.ChunkedArray, timestamp_unit_free: bool = False) -> str | None:
    """The first difference between a lazyscan column and the reference's, or None."""
    if isinstance(ours, pa.ChunkedArray):
        ours = ours.combine_chunks()
    if isinstance(ref, pa.ChunkedArray):
        ref = ref.combine_chunks()
    why = type_difference(ours.type, ref.type, timestamp_unit_free)
    if why:
        return why
    if len(ours) != len(ref):
        return f"{len(ours)} rows, the reference {len(ref)}"
    ref_type = plain_type(ref.type)
    if pa.types.is_timestamp(ours.type) and pa.types.is_timestamp(ref_type) and ours.type.unit != ref_type.unit:
        try:
            ref = _timestamps_in(ref.cast(ref_type) if ref.type != ref_type else ref, ours.type.unit)
        except pa.ArrowInvalid:
            return f"lazyscan returns {ours.type}, which cannot hold the reference's values"
    if not pa.types.is_nested(ours.type):
        try:
            assert_same_array(ours, ref)
        except AssertionError as e:
            return str(e).lstrip(": ")
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            return f"the reference cannot be compared: {e}"
        except (OverflowError, ValueError) as e:  # values Python's types cannot hold (dates past year 9999)
            return f"values differ ({type(e).__name__} converting them: {e})"
        return None
    with contextlib.suppress(pa.ArrowInvalid, pa.ArrowNotImplementedError):
        ref = ref.cast(ours.type)
    if ours.equals(ref):
        return None
    if ours.null_count != ref.null_count:
        return f"null count {ours.null_count} != {ref.null_count}"
    try:
        pairs = list(zip(ours.to_pylist(), ref.to_pylist()))
    except (OverflowError, ValueError) as e:
        return f"values differ ({type(e).__name__} converting them: {e})"
    for i, (x, y) in enumerate(pairs):
        if not same_value(x, y):
            return f"row {i}: {x!r} != {y!r}"
    return None


def table_difference(ours: pa.Table, ref: pa.Table, timestamp_unit_free: bool = False) -> str | None:
    """The first difference between a lazyscan table and the reference's (column names and
    order, types, rows, nulls, NaNs), or None."""
    if ours.column_names != ref.column_names:
        return f"columns {ours.column_names}, the reference {ref.column_names}"
    if ours.num_rows != ref.num_rows:
        return f"{ours.num_rows} rows, the reference {ref.num_rows}"
    for name, a, b in zip(ours.column_names, ours.columns, ref.columns):
        why = column_difference(a, b, timestamp_unit_free)
        if why:
            return f"column {name!r}: {why}"
    return None


def assert_same_table(ours: pa.Table, ref: pa.Table, context: str, timestamp_unit_free: bool = False) -> None:
    why = table_difference(ours, ref, timestamp_unit_free)
    assert why is None, f"{context}: {why}"
