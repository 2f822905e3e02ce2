"""The filter's conjuncts and their adaptive order.

- :class:`Conjunct`: one AND-operand of the bound filter, with the columns it reads, its static
  estimates and what the tiers can do with it (match on encoded values, probe Bloom filters);
- :func:`conjuncts_of`: the bound filter split into conjuncts, those on one column joined;
- :class:`PredicateOrder`: adaptive ordering of row-level predicate steps by rows removed per
  second, shared by the threads of a scan.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import pyarrow as pa

from lazyscan.predicate import conjunction, null_passes, referenced_columns, split_conjuncts
from lazyscan.predicate.bound import (
    BoundCompare,
    BoundExpr,
    BoundIn,
    BoundIsNull,
    BoundKeyIn,
    BoundLike,
)
from lazyscan.predicate.prune import BLOOM_PROBE_KEYS


@dataclass
class Conjunct:
    """One AND-operand of the bound filter."""

    bound: BoundExpr
    text: str
    columns: tuple[str, ...]
    partition_only: bool
    #: static estimates used before measurements exist
    est_selectivity: float
    est_cost: float
    #: for ``=`` / ``IN`` on a string or binary column: the values, matched on encoded pages
    needles: tuple[bytes, ...] | None = None
    #: a key filter is part of it
    has_keys: bool = False

    @functools.cached_property
    def null_passes(self) -> bool:
        """Whether a NULL in its (single) column satisfies it; the same for every row group."""
        return null_passes(self.bound)


def _needles(bound: BoundExpr) -> tuple[bytes, ...] | None:
    if isinstance(bound, BoundCompare) and bound.op in ("=", "<=>"):
        lits = [bound.literal]
        ref = bound.column
    elif isinstance(bound, BoundIn) and not bound.negated:
        lits = list(bound.literals)
        ref = bound.column
    else:
        return None
    t = ref.type
    if not (
        pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)
        or pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t)
    ):  # the needles match the stored bytes, whatever Arrow type the column is read as
        return None
    if not all(isinstance(lit.storage, bytes) for lit in lits):
        return None
    return tuple(lit.storage for lit in lits)


def _estimate(bound: BoundExpr, schema: pa.Schema) -> tuple[float, float]:
    """Guess (selectivity, cost per row) of a conjunct, for the first row groups."""
    sel = 0.5
    node = bound
    if isinstance(node, BoundCompare):
        sel = 0.05 if node.op in ("=", "<=>") else (0.9 if node.op == "!=" else 0.3)
    elif isinstance(node, BoundIn):
        sel = 0.9 if node.negated else min(0.5, 0.05 * len(node.literals))
    elif isinstance(node, BoundIsNull):
        sel = 0.9 if node.negated else 0.1
    elif isinstance(node, BoundLike):
        sel = 0.8 if node.negated else 0.2
    elif isinstance(node, BoundKeyIn):
        sel = 0.9 if node.negated else 0.1
    cost = 0.0
    for name in referenced_columns(bound):
        idx = schema.get_field_index(name)
        t = schema.field(idx).type if idx >= 0 else pa.int64()
        if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t):
            cost += 4.0
        elif pa.types.is_decimal(t):
            cost += 2.0
        else:
            cost += 1.0
    return sel, max(cost, 0.5)


class PredicateOrder:
    """Orders row-level predicate steps by measured rows removed per second of work.

    Each step reports (rows in, rows out, seconds) after it runs; the order used for the next
    row group puts the step that removes most rows per unit of cost first. Before a step has
    been measured its static estimate is used.
    """

    def __init__(self, conjuncts: Sequence[Conjunct], adaptive: bool) -> None:
        self.conjuncts = list(conjuncts)
        self.adaptive = adaptive
        self._lock = threading.Lock()
        self._stats = [[0.0, 0.0, 0.0] for _ in conjuncts]  # rows_in, rows_out, seconds

    def record(self, index: int, rows_in: int, rows_out: int, seconds: float) -> None:
        with self._lock:
            s = self._stats[index]
            s[0] += rows_in
            s[1] += rows_out
            s[2] += seconds

    def _rank(self, i: int) -> float:
        rows_in, rows_out, seconds = self._stats[i]
        c = self.conjuncts[i]
        if rows_in > 0 and seconds > 0:
            removed = (rows_in - rows_out) / rows_in
            cost = seconds / rows_in
        else:
            removed = 1.0 - c.est_selectivity
            cost = c.est_cost * 1e-8
        return removed / max(cost, 1e-12)

    def stats(self, index: int) -> tuple[float, float, float]:
        """(rows in, rows out, seconds) of step ``index`` so far."""
        with self._lock:
            rows_in, rows_out, seconds = self._stats[index]
        return rows_in, rows_out, seconds

    def order(self) -> list[int]:
        idx = list(range(len(self.conjuncts)))
        if not self.adaptive:
            return idx
        with self._lock:
            return sorted(idx, key=lambda i: -self._rank(i))

    def describe(self) -> list[str]:
        return [self.conjuncts[i].text for i in self.order()]


def conjuncts_of(bound: BoundExpr, schema: pa.Schema, partition_columns: Collection[str]) -> list[Conjunct]:
    """The conjuncts of ``bound`` (bound to ``schema``), those on one column joined (see
    :func:`_group_by_column`)."""
    conjuncts = []
    for part in _group_by_column(split_conjuncts(bound)):
        cols = tuple(sorted(referenced_columns(part)))
        sel, cost = _estimate(part, schema)
        partition_only = bool(cols) and all(c in partition_columns for c in cols)
        found = None if partition_only else _needles(part)
        conjuncts.append(Conjunct(part, str(part), cols, partition_only, sel, cost, found, _contains_keys(part)))
    return conjuncts


def _group_by_column(parts: list[BoundExpr]) -> list[BoundExpr]:
    """Join the conjuncts that read the same single column (``x >= a`` and ``x < b``) into one,
    so the column is decoded, and its dictionary evaluated, once per row group. ``=`` / ``IN``
    on strings stay alone: they run on encoded pages."""
    groups: dict[str, list[BoundExpr]] = {}
    out: list[BoundExpr | str] = []
    for part in parts:
        cols = referenced_columns(part)
        if len(cols) != 1 or _needles(part) is not None or _contains_keys(part):
            out.append(part)
            continue
        (name,) = cols
        if name not in groups:
            groups[name] = []
            out.append(name)
        groups[name].append(part)
    return [conjunction(groups[item]) if isinstance(item, str) else item for item in out]


def _contains_keys(bound: BoundExpr) -> bool:
    """Whether a key filter is part of ``bound``."""
    stack = [bound]
    while stack:
        node = stack.pop()
        if isinstance(node, BoundKeyIn):
            return True
        stack.extend(c for c in (getattr(node, n, None) for n in ("left", "right", "child")) if c is not None)
    return False


def bloom_candidate(bound: BoundExpr) -> bool:
    """Whether Bloom filters can rule a unit out for ``bound``: it holds an ``=`` / ``IN``, or
    an exact key filter of few enough keys to probe."""
    stack = [bound]
    while stack:
        node = stack.pop()
        if isinstance(node, BoundCompare) and node.op in ("=", "<=>"):
            return True
        if isinstance(node, BoundIn) and not node.negated:
            return True
        if isinstance(node, BoundKeyIn) and not node.negated and node.keys.exact and len(node.keys) <= BLOOM_PROBE_KEYS:
            return True
        for name in ("left", "right"):
            child = getattr(node, name, None)
            if child is not None:
                stack.append(child)
    return False
