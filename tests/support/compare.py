"""Comparing Arrow arrays from lazyscan with a reference reader, NaN-aware."""

from __future__ import annotations

import math

import pyarrow as pa


def normalize(arr: pa.Array | pa.ChunkedArray, target: pa.DataType) -> pa.Array:
    """The reference array in lazyscan's type (dictionary decoded, large/view types narrowed)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if isinstance(arr.type, pa.ExtensionType):
        arr = arr.storage
    if arr.type != target:
        arr = arr.cast(target)
    return arr


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return a == b


def assert_same_array(ours: pa.Array, ref: pa.Array | pa.ChunkedArray, context: str = "") -> None:
    ref = normalize(ref, ours.type)
    assert len(ours) == len(ref), f"{context}: length {len(ours)} != {len(ref)}"
    assert ours.null_count == ref.null_count, f"{context}: null count {ours.null_count} != {ref.null_count}"
    if ours.equals(ref):
        return
    a = ours.to_pylist()
    b = ref.to_pylist()
    for i, (x, y) in enumerate(zip(a, b)):
        assert _same(x, y), f"{context}: row {i}: {x!r} != {y!r}"
