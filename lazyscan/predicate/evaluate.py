"""Evaluate bound predicates on Arrow data, vectorized with ``pyarrow.compute``.

Parts and their roles:

- :func:`evaluate_kleene` — the three-valued result (a BooleanArray with NULLs) of a bound
  expression on a RecordBatch or Table. Connectives use Kleene logic (``and_kleene``,
  ``or_kleene``, ``invert``), so ``NOT (NULL)`` stays NULL inside the tree.
- :func:`evaluate` — the row filter: NULL and FALSE drop the row (numpy bool array).
- :func:`evaluate_on_dictionary` — a single-column predicate on the values of a dictionary page
  (one answer per dictionary entry), for dictionary pruning and per-code masks.
- :func:`null_passes` — whether a single-column predicate keeps a row whose value is NULL.

Leaves follow the semantics listed in :mod:`lazyscan.predicate.bound` (Spark's NaN ordering,
-0.0 = 0.0, bytewise string order). Dictionary-encoded columns are evaluated once per
dictionary value and expanded with ``take``. float16 columns are widened to float32 and
fixed-size binary columns compared as binary (both exact).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lazyscan.errors import PredicateError
from lazyscan.predicate.bound import (
    BoundAnd,
    BoundCompare,
    BoundConstant,
    BoundExpr,
    BoundIn,
    BoundIsNull,
    BoundKeyIn,
    BoundLike,
    BoundNonNullConstant,
    BoundNot,
    BoundOr,
    BoundRef,
    evaluation_type,
)
from lazyscan.predicate.expr import render_column

ArrayLike = pa.Array | pa.ChunkedArray
# an array, not pa.scalar(None): making a null scalar imports pandas (0.2 s at import time)
_NULL_BOOL = pa.nulls(1, pa.bool_())[0]
_COMPARE = {
    "=": pc.equal,
    "!=": pc.not_equal,
    "<": pc.less,
    "<=": pc.less_equal,
    ">": pc.greater,
    ">=": pc.greater_equal,
}


def _prepare(arr: pa.Array, ref: BoundRef) -> pa.Array:
    target = evaluation_type(ref.type)
    if arr.type != target:
        return arr.cast(target)
    return arr


def _non_null_constant(arr: pa.Array, value: bool | None) -> pa.Array:
    if value is None:
        return pa.nulls(len(arr), pa.bool_())
    return pc.if_else(pc.is_valid(arr), pa.scalar(value), _NULL_BOOL)


def _compare(node: BoundCompare, arr: pa.Array) -> pa.Array:
    op, scalar = node.op, node.literal.scalar
    if node.column.is_floating:
        if node.literal.is_nan:
            isnan = pc.is_nan(arr)
            if op == "=":
                return isnan
            if op == "<=>":
                return pc.fill_null(isnan, False)
            if op in ("!=", "<"):
                return pc.invert(isnan)
            if op == ">=":
                return isnan
            return _non_null_constant(arr, op == "<=")  # x <= NaN always, x > NaN never
        if op == "<=>":
            return pc.fill_null(pc.equal(arr, scalar), False)
        result = _COMPARE[op](arr, scalar)
        if op in (">", ">="):  # NaN is above every other value
            result = pc.or_kleene(result, pc.is_nan(arr))
        return result
    if op == "<=>":
        return pc.fill_null(pc.equal(arr, scalar), False)
    return _COMPARE[op](arr, scalar)


def _in(node: BoundIn, arr: pa.Array) -> pa.Array:
    matched = pc.is_in(arr, value_set=node.value_set)
    if node.has_nan:
        matched = pc.or_(matched, pc.is_nan(arr))
    result = pc.if_else(pc.is_valid(arr), matched, _NULL_BOOL)
    if node.has_null:
        result = pc.if_else(result, pa.scalar(True), _NULL_BOOL)
    return pc.invert(result) if node.negated else result


def _like(node: BoundLike, arr: pa.Array) -> pa.Array:
    m = node.matcher
    binary = (
        pa.types.is_binary(arr.type)
        or pa.types.is_large_binary(arr.type)
        or (pa.types.is_binary_view(arr.type))
    )
    needle: str | bytes = m.needle.encode("utf-8") if binary else m.needle
    if m.kind == "equals":
        result = pc.equal(arr, pa.scalar(needle, type=arr.type))
    elif m.kind == "prefix":
        result = pc.starts_with(arr, pattern=needle)
    elif m.kind == "suffix":
        result = pc.ends_with(arr, pattern=needle)
    elif m.kind == "contains":
        result = pc.match_substring(arr, pattern=needle)
    elif m.kind == "regex":
        result = pc.match_substring_regex(arr, pattern=m.regex)
    else:  # pragma: no cover - "all" is bound to a constant
        result = _non_null_constant(arr, True)
    return pc.invert(result) if node.negated else result


def _leaf_on_values(node: BoundExpr, arr: pa.Array, ref: BoundRef) -> pa.Array:
    arr = _prepare(arr, ref)
    if isinstance(node, BoundCompare):
        return _compare(node, arr)
    if isinstance(node, BoundIn):
        return _in(node, arr)
    if isinstance(node, BoundLike):
        return _like(node, arr)
    if isinstance(node, BoundNonNullConstant):
        return _non_null_constant(arr, node.value)
    raise TypeError(f"not a leaf: {node!r}")  # pragma: no cover


def _key_in(node: BoundKeyIn, arr: pa.Array) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if isinstance(arr, pa.DictionaryArray):
        return pc.take(_key_in(node, arr.dictionary), arr.indices)
    result = node.keys.contains(arr)
    return pc.invert(result) if node.negated else result


def _leaf(node: BoundExpr, arr: pa.Array, ref: BoundRef) -> pa.Array:
    if isinstance(node, BoundIsNull):
        return pc.is_valid(arr) if node.negated else pc.is_null(arr)
    if isinstance(node, BoundKeyIn):
        return _key_in(node, arr)
    if isinstance(arr, pa.DictionaryArray):
        per_value = _leaf_on_values(node, arr.dictionary, ref)
        result = pc.take(per_value, arr.indices)
        if isinstance(node, BoundCompare) and node.op == "<=>":
            result = pc.fill_null(result, False)
        return result
    return _leaf_on_values(node, arr, ref)


class _Evaluator:
    def __init__(self, column: Callable[[BoundRef], pa.Array], length: int) -> None:
        self.column = column
        self.length = length

    def run(self, node: BoundExpr) -> pa.Array:
        if isinstance(node, BoundAnd):
            return pc.and_kleene(self.run(node.left), self.run(node.right))
        if isinstance(node, BoundOr):
            return pc.or_kleene(self.run(node.left), self.run(node.right))
        if isinstance(node, BoundNot):
            return pc.invert(self.run(node.child))
        if isinstance(node, BoundConstant):
            if node.value is None:
                return pa.nulls(self.length, pa.bool_())
            return pa.array(np.full(self.length, node.value, dtype=bool))
        ref: BoundRef | None = getattr(node, "column", None)
        if ref is None:
            raise TypeError(f"not a bound expression: {node!r}")
        return _leaf(node, self.column(ref), ref)


def _batch_column(batch: pa.RecordBatch) -> Callable[[BoundRef], pa.Array]:
    def get(ref: BoundRef) -> pa.Array:
        index = batch.schema.get_field_index(ref.name)
        if index < 0:
            raise PredicateError(
                f"column {render_column(ref.name)} of the predicate is not in the batch "
                f"(columns: {', '.join(batch.schema.names)})"
            )
        return batch.column(index)

    return get


def _evaluate_batch(bound: BoundExpr, batch: pa.RecordBatch) -> pa.Array:
    return _Evaluator(_batch_column(batch), batch.num_rows).run(bound)


def evaluate_kleene(
    bound: BoundExpr, data: pa.RecordBatch | pa.Table
) -> pa.BooleanArray | pa.ChunkedArray:
    """Three-valued result per row: TRUE, FALSE or NULL (unknown)."""
    if isinstance(data, pa.Table):
        return pa.chunked_array(
            [_evaluate_batch(bound, b) for b in data.to_batches()], type=pa.bool_()
        )
    return _evaluate_batch(bound, data)


def _to_mask(result: pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(result, False).to_numpy(zero_copy_only=False), dtype=bool)


def evaluate(bound: BoundExpr, data: pa.RecordBatch | pa.Table) -> np.ndarray:
    """Row filter of ``bound`` on ``data``: True where the predicate is TRUE (a NULL or FALSE
    result drops the row). Columns are looked up by their bound (schema) name."""
    if isinstance(data, pa.Table):
        parts = [_to_mask(_evaluate_batch(bound, b)) for b in data.to_batches()]
        return np.concatenate(parts) if parts else np.zeros(data.num_rows, dtype=bool)
    return _to_mask(_evaluate_batch(bound, data))


def _single_ref(bound: BoundExpr, what: str) -> BoundRef | None:
    refs: dict[str, BoundRef] = {}
    stack = [bound]
    while stack:
        node = stack.pop()
        ref = getattr(node, "column", None)
        if isinstance(ref, BoundRef):
            refs[ref.name] = ref
        for name in ("left", "right", "child"):
            child = getattr(node, name, None)
            if child is not None:
                stack.append(child)
    if len(refs) > 1:
        names = ", ".join(sorted(render_column(n) for n in refs))
        raise PredicateError(f"{what} needs a single-column predicate; this one reads {names}")
    return next(iter(refs.values()), None)


def evaluate_on_dictionary(bound: BoundExpr, dictionary: pa.Array) -> np.ndarray:
    """Per dictionary entry, whether a row holding that (non-NULL) value is kept."""
    _single_ref(bound, "evaluate_on_dictionary")
    if isinstance(dictionary, pa.ChunkedArray):
        dictionary = dictionary.combine_chunks()
    if isinstance(bound, BoundKeyIn) and dictionary.null_count == 0:
        # a join filter on a dictionary: the probe's hits are the mask, no Arrow round trip
        hits = bound.keys.probe(dictionary).view(bool)
        return ~hits if bound.negated else hits
    result = _Evaluator(lambda r: dictionary, len(dictionary)).run(bound)
    return _to_mask(result)


def null_passes(bound: BoundExpr) -> bool:
    """Whether a row whose (single) column is NULL satisfies the predicate."""
    ref = _single_ref(bound, "null_passes")
    null_type = ref.value_type if ref is not None else pa.null()
    nulls = pa.nulls(1, null_type)
    result = _Evaluator(lambda r: nulls, 1).run(bound)
    value = result[0].as_py()
    return bool(value) if value is not None else False
