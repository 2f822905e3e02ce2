"""lazyscan.predicate: filters with Spark SQL semantics, for evaluation and pruning in a scan.

The scan layer takes a filter (SQL text or a built expression), binds it to a file's Arrow
schema once, splits it into conjuncts and evaluates them cheapest first: on row-group
statistics, Bloom filters, dictionaries, page statistics, then values.

Modules and their roles:

- :mod:`.expr` — unbound expression nodes (frozen dataclasses), the builder (:func:`col`,
  :func:`lit`), rendering, :func:`referenced_columns`, :func:`split_conjuncts`,
  :func:`conjunction`.
- :mod:`.sql` — :func:`parse_predicate`: SQL predicate text (Spark syntax) to an expression.
- :mod:`.casts` — Spark ANSI casts and string parsing of constant values.
- :mod:`.bound` — bound expression nodes (columns resolved, literals in the column's type).
- :mod:`.bind` — :func:`bind`: name resolution and Spark's type coercion, done exactly.
- :mod:`.evaluate` — :func:`evaluate` (row mask), :func:`evaluate_kleene` (three-valued),
  :func:`evaluate_on_dictionary`, :func:`null_passes`.
- :mod:`.prune` — :class:`Answer`, :func:`evaluate_statistics`, :func:`ruled_out_by_statistics`,
  :func:`evaluate_bloom`.
- :mod:`.keys` — :func:`~lazyscan.predicate.keys.key_filter`: the join keys of a filtered
  dimension as a compact set (bitmap, hash set or Bloom filter) the fact table's scan probes.

Semantics are Spark 4's with ANSI mode on and the session time zone UTC; see :mod:`.bind` for
the coercion table and :mod:`.bound` for comparison semantics (NaN, -0.0, bytes order).
"""

from __future__ import annotations

from lazyscan.errors import PredicateError
from lazyscan.predicate.bind import bind
from lazyscan.predicate.bound import BoundExpr
from lazyscan.predicate.evaluate import (
    evaluate,
    evaluate_kleene,
    evaluate_on_dictionary,
    null_passes,
)
from lazyscan.predicate.expr import (
    FALSE,
    TRUE,
    Column,
    Expr,
    as_predicate,
    col,
    conjunction,
    lit,
    referenced_columns,
    split_conjuncts,
)
from lazyscan.predicate.prune import (
    Answer,
    evaluate_bloom,
    evaluate_statistics,
    ruled_out_by_statistics,
)
from lazyscan.predicate.sql import parse_predicate


def to_expr(where: str | Expr | Column | None) -> Expr | None:
    """Normalize a scan's ``where`` argument: SQL text is parsed, an expression is returned as
    is (a :class:`Column` means a BOOLEAN column), None stays None."""
    if where is None:
        return None
    if isinstance(where, str):
        return parse_predicate(where)
    if isinstance(where, (Expr, Column)):
        return as_predicate(where)
    raise PredicateError(
        f"a filter must be SQL text or an expression built with col(), got {type(where).__name__}"
    )


__all__ = [
    "FALSE",
    "TRUE",
    "Answer",
    "BoundExpr",
    "Column",
    "Expr",
    "bind",
    "col",
    "conjunction",
    "evaluate",
    "evaluate_bloom",
    "evaluate_kleene",
    "evaluate_on_dictionary",
    "evaluate_statistics",
    "lit",
    "null_passes",
    "parse_predicate",
    "referenced_columns",
    "ruled_out_by_statistics",
    "split_conjuncts",
    "to_expr",
]
