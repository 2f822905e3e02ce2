"""Pruning: decide from metadata alone whether a row group or page can hold matching rows.

Parts and their roles:

- :class:`Answer` — the three named answers: ``CANNOT_MATCH`` (no row can satisfy the
  predicate: skip), ``MIGHT_MATCH`` (read and evaluate), ``MUST_MATCH`` (every row satisfies it:
  read without evaluating).
- :func:`evaluate_statistics` — the answer from per-column :class:`ColumnStats` (row-group or
  page statistics).
- :func:`evaluate_bloom` — ``CANNOT_MATCH`` when an equality / IN conjunct asks only for values
  the column's Bloom filter rules out; never ``MUST_MATCH``.

How statistics are used: every node computes the set of outcomes (TRUE, FALSE, NULL) that some
row could produce, and connectives combine these sets with Kleene logic. That makes ``NOT``
exact without special cases: ``NOT p`` can be pruned when ``p`` must be TRUE for every row, but
not merely when ``p`` cannot be TRUE (rows where ``p`` is NULL stay NULL under NOT). For a leaf,
the outcome set is the union over the values the statistics allow:

- NULL values when ``null_count`` is unknown or positive; non-NULL values unless every value
  is NULL (``null_count == num_values``, where min/max are absent);
- for non-NULL, non-NaN values: any value in [min, max] (min/max are bounds; truncated binary
  statistics are still bounds, so exactness flags are not needed for soundness);
- for floating-point columns, NaN unless ``nan_count == 0``: NaN is not covered by min/max and
  in Spark NaN equals NaN and is above every other value, so ``x > 5`` is possible whenever NaN
  is.

A subtree that reads a single column is evaluated part by part (NULL rows, NaN rows, other
values), so correlated leaves are not treated as independent: ``x = 7 AND x IS NULL`` cannot
match, ``x > 5 OR x IS NULL`` must match a chunk of NULLs. Columns missing from the statistics
mapping are unknown (any outcome).
"""

from __future__ import annotations

import bisect
import enum
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

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
    spark_key,
)

if TYPE_CHECKING:  # the physical layer is not needed at run time
    from lazyscan.format.statistics import ColumnStats


class Answer(enum.Enum):
    """Three-valued pruning answer."""

    CANNOT_MATCH = "cannot match"
    MIGHT_MATCH = "might match"
    MUST_MATCH = "must match"


# outcome sets are bit masks
T, F, N = 1, 2, 4
ALL = T | F | N


def _kleene_table(op: Callable[[int, int], int]) -> list[list[int]]:
    table = [[0] * 8 for _ in range(8)]
    for a in range(8):
        for b in range(8):
            out = 0
            for x in (T, F, N):
                for y in (T, F, N):
                    if a & x and b & y:
                        out |= op(x, y)
            table[a][b] = out
    return table


def _and3(x: int, y: int) -> int:
    if x == F or y == F:
        return F
    return T if x == T and y == T else N


def _or3(x: int, y: int) -> int:
    if x == T or y == T:
        return T
    return F if x == F and y == F else N


_AND = _kleene_table(_and3)
_OR = _kleene_table(_or3)


def _not(a: int) -> int:
    return (T if a & F else 0) | (F if a & T else 0) | (a & N)


_key = spark_key


def _cmp_outcomes(op: str, can_lt: bool, can_eq: bool, can_gt: bool) -> int:
    out = 0
    for rel, possible in (("lt", can_lt), ("eq", can_eq), ("gt", can_gt)):
        if not possible:
            continue
        if op in ("=", "<=>"):
            ok = rel == "eq"
        elif op == "!=":
            ok = rel != "eq"
        elif op == "<":
            ok = rel == "lt"
        elif op == "<=":
            ok = rel != "gt"
        elif op == ">":
            ok = rel == "gt"
        else:  # ">="
            ok = rel != "lt"
        out |= T if ok else F
    return out


def _like_successor(prefix: bytes) -> bytes | None:
    """Smallest byte string greater than every string starting with ``prefix``."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])


def _in_outcome(node: BoundIn, matched: bool) -> int:
    out = T if matched else (N if node.has_null else F)
    return _not(out) if node.negated else out


def _point(node: BoundExpr, value: Any) -> int:
    """Outcome for one non-NULL value (used for NaN)."""
    if isinstance(node, BoundCompare):
        kv, kl = _key(value), _key(node.literal.storage)
        return _cmp_outcomes(node.op, kv < kl, kv == kl, kv > kl)
    if isinstance(node, BoundIn):
        return _in_outcome(node, _key(value) in node.sort_keys[1])
    return T | F


def _range(node: BoundExpr, lo: Any, hi: Any) -> int:
    """Outcomes over non-NULL (non-NaN) values somewhere in [lo, hi]."""
    klo, khi = _key(lo), _key(hi)
    if isinstance(node, BoundCompare):
        kv = _key(node.literal.storage)
        return _cmp_outcomes(node.op, klo < kv, klo <= kv <= khi, khi > kv)
    if isinstance(node, BoundIn):
        keys, key_set = node.sort_keys  # NaN keys sort last, above any [lo, hi]
        i = bisect.bisect_left(keys, klo)
        some_match = i < len(keys) and keys[i] <= khi
        all_match = klo == khi and klo in key_set
        out = _in_outcome(node, True) if some_match else 0
        if not all_match:
            out |= _in_outcome(node, False)
        return out
    if isinstance(node, BoundLike):
        return _like_range(node, lo, hi)
    if isinstance(node, BoundKeyIn):
        some, every = node.keys.in_range(lo, hi, node.column.type)
        out = (T if some else 0) | (0 if every else F)
        return _not(out) if node.negated else out
    return T | F


def _like_range(node: BoundLike, lo: bytes, hi: bytes) -> int:
    m = node.matcher
    if m.kind == "equals":
        p = m.needle.encode("utf-8")
        out = _cmp_outcomes("=", lo < p, lo <= p <= hi, hi > p)
    else:
        prefix, succ = m.prefix, _like_successor(m.prefix)
        can_true = hi >= prefix and (succ is None or lo < succ)
        all_prefixed = lo >= prefix and succ is not None and hi < succ
        must_true = m.kind == "prefix" and all_prefixed
        out = (T if can_true else 0) | (0 if must_true else F)
        if not can_true:
            out = F
    return _not(out) if node.negated else out


def _unknown(node: BoundExpr) -> int:
    """Outcomes over non-NULL values about which nothing is known."""
    if isinstance(node, BoundIn):
        return _in_outcome(node, True) | _in_outcome(node, False)
    return T | F


def _null_outcome(node: BoundExpr) -> int:
    if isinstance(node, BoundIsNull):
        return F if node.negated else T
    if isinstance(node, BoundKeyIn) and node.keys.kind == "empty":
        return T if node.negated else F
    if isinstance(node, BoundCompare) and node.op == "<=>":
        return F
    return N


# A row of a column falls in one of three parts: NULL, NaN (floating point only), or a value
# in [min, max]. Outcomes are computed per part; a subtree over a single column is evaluated
# part by part, so ``x = 7 AND x IS NULL`` is known to be never TRUE (no row is in both).
_PARTS = ("null", "nan", "values")


def _leaf_part(node: BoundExpr, ref: BoundRef, s: ColumnStats, part: str) -> int:
    """Outcomes of a leaf over the rows of one part (0 when the part has no rows)."""
    rows, nulls = s.num_values, s.null_count
    if rows == 0:
        return 0
    if part == "null":
        return _null_outcome(node) if nulls is None or nulls > 0 else 0
    non_null = rows - nulls if rows is not None and nulls is not None else None
    if non_null is not None and non_null <= 0:
        return 0
    floating = pa.types.is_floating(ref.value_type)
    if part == "nan":
        if not floating or s.nan_count == 0:
            return 0
        constant = _constant_on_values(node)
        return constant if constant is not None else _point(node, math.nan)
    only_nan = (
        floating and s.nan_count is not None and non_null is not None and s.nan_count >= non_null
    )
    if only_nan:
        return 0
    constant = _constant_on_values(node)
    if constant is not None:
        return constant
    lo: Any = s.min
    hi: Any = s.max
    usable = lo is not None and hi is not None
    if usable and floating:
        usable = not (math.isnan(lo) or math.isnan(hi))
    if usable:
        try:
            usable = _key(lo) <= _key(hi)
        except TypeError:
            usable = False
    return _range(node, lo, hi) if usable else _unknown(node)


def _constant_on_values(node: BoundExpr) -> int | None:
    """The outcome of a leaf on every non-NULL value, when it does not depend on the value."""
    if isinstance(node, BoundIsNull):
        return T if node.negated else F
    if isinstance(node, BoundNonNullConstant):
        return T if node.value else F
    return None


def _columns(node: BoundExpr) -> frozenset[str]:
    if isinstance(node, (BoundAnd, BoundOr)):
        return _columns(node.left) | _columns(node.right)
    if isinstance(node, BoundNot):
        return _columns(node.child)
    ref = getattr(node, "column", None)
    return frozenset([ref.name]) if isinstance(ref, BoundRef) else frozenset()


def _single_column(node: BoundExpr) -> str | None:
    """The one column a subtree reads, or None (no column or several)."""
    columns = _columns(node)
    return next(iter(columns)) if len(columns) == 1 else None


def _outcomes(node: BoundExpr, stats: Mapping[str, ColumnStats], part: str | None = None) -> int:
    if part is None and isinstance(node, (BoundAnd, BoundOr, BoundNot)):
        column = _single_column(node)
        if column is not None and stats.get(column) is not None:
            out = 0
            for p in _PARTS:
                out |= _outcomes(node, stats, p)
            return out
    if isinstance(node, BoundAnd):
        left = _outcomes(node.left, stats, part)
        if not left:
            return 0
        return _AND[left][_outcomes(node.right, stats, part)]
    if isinstance(node, BoundOr):
        return _OR[_outcomes(node.left, stats, part)][_outcomes(node.right, stats, part)]
    if isinstance(node, BoundNot):
        return _not(_outcomes(node.child, stats, part))
    if isinstance(node, BoundConstant):
        return N if node.value is None else (T if node.value else F)
    ref = getattr(node, "column", None)
    if not isinstance(ref, BoundRef):
        raise TypeError(f"not a bound expression: {node!r}")
    s = stats.get(ref.name)
    if s is None:
        return ALL
    if part is not None:
        return _leaf_part(node, ref, s, part)
    out = 0
    for p in _PARTS:
        out |= _leaf_part(node, ref, s, p)
    return out


def _answer(outcomes: int) -> Answer:
    if not outcomes & T:
        return Answer.CANNOT_MATCH
    if outcomes == T:
        return Answer.MUST_MATCH
    return Answer.MIGHT_MATCH


def evaluate_statistics(bound: BoundExpr, stats: Mapping[str, ColumnStats]) -> Answer:
    """Prune with statistics (keyed by bound column name) of a row group or a page."""
    return _answer(_outcomes(bound, stats))


def ruled_out_by_statistics(bound: BoundExpr, name: str, stats: Sequence[ColumnStats | None]) -> list[bool]:
    """Per finer unit (a page, say) of column ``name``: whether its statistics say ``bound``
    cannot match, as :func:`evaluate_statistics` on each would (None: no statistics, kept).
    A key filter on an integer column answers for all units at once, bisecting its sorted
    keys, instead of one evaluation per unit."""
    out: list[bool] | None = None
    if isinstance(bound, BoundKeyIn) and not bound.negated and bound.column.name == name:
        out = _keys_ruled_out(bound, stats)
    if out is None:
        out = [_ruled_out(bound, name, st) for st in stats]
    return out


def _ruled_out(bound: BoundExpr, name: str, st: ColumnStats | None) -> bool:
    return st is not None and evaluate_statistics(bound, {name: st}) is Answer.CANNOT_MATCH


def _keys_ruled_out(bound: BoundKeyIn, stats: Sequence[ColumnStats | None]) -> list[bool] | None:
    """:func:`ruled_out_by_statistics` for ``column IN keys``: a unit is ruled out when no key
    lies in its [min, max] (NULL never joins); units whose statistics are not plain integer
    bounds of some non-NULL values get :func:`evaluate_statistics`."""
    out = [False] * len(stats)
    plain: list[int] = []
    ranges: list[tuple[int, int]] = []
    rest: list[int] = []
    for i, st in enumerate(stats):
        if st is None:
            continue
        lo, hi = st.min, st.max
        if type(lo) is int and type(hi) is int and lo <= hi and st.num_values != 0 and not st.all_null:
            plain.append(i)
            ranges.append((lo, hi))
        else:
            rest.append(i)
    if plain:
        some = bound.keys.any_in_ranges(ranges, bound.column.type)
        if some is None:
            return None
        for i, hit in zip(plain, some):
            out[i] = not hit
    for i in rest:
        out[i] = _ruled_out(bound, bound.column.name, stats[i])
    return out


MightContain = Callable[[str, list[Any]], Sequence[bool] | None]


def _bloom_values(ref: BoundRef, storage: list[Any]) -> list[Any] | None:
    if pa.types.is_boolean(ref.value_type):
        return None
    if ref.is_floating:
        if any(math.isnan(v) for v in storage):
            return None  # NaN has many bit patterns
        if any(v == 0 for v in storage):  # -0.0 and 0.0 hash apart but compare equal
            storage = [v for v in storage if v != 0] + [0.0, -0.0]
    return storage


#: a key filter with at most this many keys is probed against Parquet Bloom filters
BLOOM_PROBE_KEYS = 64


def _bloom_rules_out(node: BoundExpr, might_contain: MightContain) -> bool:
    if isinstance(node, BoundAnd):
        return _bloom_rules_out(node.left, might_contain) or _bloom_rules_out(
            node.right, might_contain
        )
    if isinstance(node, BoundOr):
        return _bloom_rules_out(node.left, might_contain) and _bloom_rules_out(
            node.right, might_contain
        )
    if isinstance(node, BoundConstant):
        return node.value is not True
    if isinstance(node, BoundNonNullConstant):
        return not node.value
    if isinstance(node, BoundCompare) and node.op in ("=", "<=>"):
        values = [node.literal.storage]
    elif isinstance(node, BoundIn) and not node.negated:
        values = [lit.storage for lit in node.literals]
    elif isinstance(node, BoundKeyIn) and not node.negated:
        keys = node.keys.column_values(node.column.type, BLOOM_PROBE_KEYS)
        if keys is None:
            return False
        values = keys
    else:
        return False
    if not values:
        return True
    ref = node.column
    probe = _bloom_values(ref, values)
    if probe is None:
        return False
    answers = might_contain(ref.name, probe)
    if answers is None:
        return False
    return not any(answers)


def evaluate_bloom(bound: BoundExpr, might_contain: MightContain) -> Answer:
    """``CANNOT_MATCH`` when Bloom filters rule out every row, else ``MIGHT_MATCH``.

    An ``=`` / ``<=>`` / ``IN`` leaf is ruled out when ``might_contain(column, values)`` answers
    False for each of its values; a conjunct ruled out at any AND-depth rules out the whole, an
    OR only when every branch is ruled out. ``values`` are storage-domain values (``bytes`` for
    strings and binaries, unscaled ``int`` for decimals, ``int`` for dates and timestamps in the
    column's unit, ``float`` for floats with both zeros probed for 0.0). ``might_contain``
    returns one bool per value, or None when the column has no Bloom filter.
    """
    if _bloom_rules_out(bound, might_contain):
        return Answer.CANNOT_MATCH
    return Answer.MIGHT_MATCH


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def merge_statistics(parts: Sequence[ColumnStats]) -> ColumnStats:
    """Statistics of the union of the rows ``parts`` describe (row groups side by side): bounds
    as wide as every part's, counts summed; unknown where any part's is unknown. An answer of
    CANNOT_MATCH on the merged statistics holds for every part."""
    from dataclasses import replace

    first = parts[0]
    lo, hi = first.min, first.max
    nulls, values, nans = first.null_count, first.num_values, first.nan_count
    for s in parts[1:]:
        nulls = None if nulls is None or s.null_count is None else nulls + s.null_count
        values = None if values is None or s.num_values is None else values + s.num_values
        nans = None if nans is None or s.nan_count is None else nans + s.nan_count
        if s.all_null:
            continue
        if lo is None or s.min is None or _is_nan(lo) or _is_nan(s.min):
            lo = None
        else:
            try:
                lo = s.min if spark_key(s.min) < spark_key(lo) else lo
            except TypeError:
                lo = None
        if hi is None or s.max is None or _is_nan(hi) or _is_nan(s.max):
            hi = None
        else:
            try:
                hi = s.max if spark_key(s.max) > spark_key(hi) else hi
            except TypeError:
                hi = None
    if first.all_null and len(parts) > 1:
        # the first part's (absent) bounds say nothing of the others' values
        others = merge_statistics(parts[1:])
        lo, hi = others.min, others.max
    return replace(first, min=lo, max=hi, null_count=nulls, num_values=values, nan_count=nans,
                   min_exact=False, max_exact=False)
