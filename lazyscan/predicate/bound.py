"""Bound expressions: predicates resolved against one Arrow schema.

:func:`lazyscan.predicate.bind` produces these nodes; evaluation (:mod:`.evaluate`) and pruning
(:mod:`.prune`) consume them. Every literal has already been coerced to its column's type the way
Spark SQL (ANSI mode) would compare them, and comparisons that cannot be represented in the
column's type were rewritten into equivalent ones that can (``int_col < 5.5`` is ``int_col <= 5``,
``int8_col = 1000`` is "false unless NULL").

Parts and their roles:

- :class:`BoundRef` — a resolved column: schema name, position, Arrow type.
- :class:`BoundLiteral` — a value in two forms: ``storage`` (the Arrow storage domain, the
  domain of :class:`lazyscan.parquet.statistics.ColumnStats`) and ``scalar`` (an Arrow scalar of
  :func:`evaluation_type`, ready for ``pyarrow.compute``).
- leaves: :class:`BoundCompare`, :class:`BoundIn`, :class:`BoundIsNull`, :class:`BoundLike`,
  :class:`BoundNonNullConstant` (a fixed answer for every non-NULL value, NULL for NULL);
  constant :class:`BoundConstant`; connectives :class:`BoundAnd`, :class:`BoundOr`,
  :class:`BoundNot`.

Comparison semantics on a bound leaf (what evaluation and pruning implement): SQL three-valued
logic; a NULL column value gives NULL except for ``<=>`` and IS [NOT] NULL. Floating-point
columns use Spark's total order: NaN equals NaN and is larger than every other value including
+inf, and -0.0 equals 0.0. Strings and binaries compare as unsigned bytes.
"""

from __future__ import annotations

import decimal
import functools
import math
import re
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from lazyscan.predicate import casts
from lazyscan.predicate.expr import CompareOp, render_column, render_string


def spark_key(value: Any) -> Any:
    """Sort key of a storage value in Spark's order: NaN above every other float."""
    if isinstance(value, float):
        return (1, 0.0) if math.isnan(value) else (0, value)
    return value


def value_type(arrow_type: pa.DataType) -> pa.DataType:
    """The type of a column's values (the value type of a dictionary type)."""
    if pa.types.is_dictionary(arrow_type):
        return arrow_type.value_type
    return arrow_type


def evaluation_type(arrow_type: pa.DataType) -> pa.DataType:
    """The type values are compared in by ``pyarrow.compute`` (exact conversions where Arrow
    lacks kernels: float16 -> float32, fixed_size_binary and binary_view -> binary,
    string_view -> string)."""
    t = value_type(arrow_type)
    if pa.types.is_float16(t):
        return pa.float32()
    if pa.types.is_fixed_size_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_string_view(t):
        return pa.string()
    return t


@dataclass(frozen=True)
class BoundRef:
    """A column of the bound schema."""

    name: str
    index: int
    type: pa.DataType

    @property
    def value_type(self) -> pa.DataType:
        return value_type(self.type)

    @property
    def is_floating(self) -> bool:
        return pa.types.is_floating(self.value_type)

    def __str__(self) -> str:
        return render_column(self.name)


@dataclass(frozen=True, eq=False)
class BoundLiteral:
    """A literal coerced to its column's type.

    ``storage``: Python value in the Arrow storage domain (``int`` for integers, dates, times,
    timestamps and unscaled decimals; ``float``; ``bool``; ``bytes`` for strings and binaries).
    ``scalar``: the same value as an Arrow scalar of :func:`evaluation_type` of the column.
    """

    storage: Any
    scalar: pa.Scalar = field(compare=False)

    @property
    def is_nan(self) -> bool:
        return isinstance(self.storage, float) and math.isnan(self.storage)

    def _key(self) -> Any:
        return ("nan",) if self.is_nan else (type(self.storage).__name__, self.storage)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BoundLiteral) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __reduce__(self) -> tuple[Any, ...]:
        # the scalar travels as a one-value array: pickling an Arrow scalar converts it to a
        # Python object, which fails for dates and timestamps outside Python's years 1-9999
        return (_literal_of, (self.storage, pa.repeat(self.scalar, 1)))


def _literal_of(storage: Any, values: pa.Array) -> BoundLiteral:
    return BoundLiteral(storage, values[0])


class BoundExpr:
    """Base class of bound predicate nodes."""

    __slots__ = ()

    def __str__(self) -> str:
        return render_bound(self)

    def __bool__(self) -> bool:
        raise TypeError("a bound predicate has no truth value")


@dataclass(frozen=True)
class BoundCompare(BoundExpr):
    """``column op literal`` with ``op`` in ``= != < <= > >= <=>``; the literal is never NULL."""

    column: BoundRef
    op: CompareOp
    literal: BoundLiteral


@dataclass(frozen=True)
class BoundIn(BoundExpr):
    """``column [NOT] IN (literals[, NULL])``: literals are distinct and non-NULL; ``has_null``
    records a NULL in the list (a non-matching value then gives NULL, not FALSE).

    Lists can be long (join keys): :attr:`sort_keys` and :attr:`value_set` are computed once
    per node, so pruning and evaluation never hash the whole list per row group or batch.
    """

    column: BoundRef
    literals: tuple[BoundLiteral, ...]
    has_null: bool = False
    negated: bool = False

    @functools.cached_property
    def sort_keys(self) -> tuple[list[Any], frozenset[Any]]:
        """Storage values as sort keys (NaN above every float), sorted, and as a set."""
        keys = sorted(spark_key(lit.storage) for lit in self.literals)
        return keys, frozenset(keys)

    @functools.cached_property
    def value_set(self) -> pa.Array:
        """The literals as an Arrow array of the evaluation type (both zeros for 0.0, as Arrow
        hashes -0.0 and 0.0 apart and Spark treats them as equal)."""
        et = evaluation_type(self.column.type)
        values = pa.array([lit.scalar for lit in self.literals], type=et)
        if self.column.is_floating and any(lit.storage == 0 for lit in self.literals):
            values = pa.concat_arrays([values, pa.array([0.0, -0.0], type=et)])
        return values

    @property
    def has_nan(self) -> bool:
        """The list holds NaN: every NaN matches it, whatever its bits (Arrow hashes bits)."""
        return any(lit.is_nan for lit in self.literals)

    def __getstate__(self) -> dict[str, Any]:  # caches are not pickled
        return {k: v for k, v in self.__dict__.items() if k not in ("sort_keys", "value_set")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


@dataclass(frozen=True)
class BoundKeyIn(BoundExpr):
    """``column`` holds a key of ``keys`` (a :class:`~lazyscan.predicate.keys.KeyFilter`
    whose keys compare with the column's values); ``NOT`` when ``negated``. NULL gives NULL."""

    column: BoundRef
    keys: Any
    adaptive: bool = False
    negated: bool = False


@dataclass(frozen=True)
class BoundIsNull(BoundExpr):
    column: BoundRef
    negated: bool = False


@dataclass(frozen=True)
class LikeMatcher:
    """A compiled LIKE pattern.

    ``kind``: ``all`` (only ``%``), ``equals``, ``prefix``, ``suffix``, ``contains`` (``needle``
    is the literal text) or ``regex`` (``regex`` is an RE2 pattern, anchored, dot matches
    newline). ``prefix`` is the literal text before the first wildcard, as UTF-8 bytes, for
    pruning on min/max.
    """

    kind: str
    needle: str
    regex: str
    prefix: bytes


@dataclass(frozen=True)
class BoundLike(BoundExpr):
    column: BoundRef
    pattern: str
    escape: str
    negated: bool
    matcher: LikeMatcher


@dataclass(frozen=True)
class BoundNonNullConstant(BoundExpr):
    """``value`` for every non-NULL value of ``column``, NULL where it is NULL (the bound form
    of a comparison whose answer does not depend on the value, like ``int8_col = 1000``)."""

    column: BoundRef
    value: bool


@dataclass(frozen=True)
class BoundConstant(BoundExpr):
    value: bool | None


@dataclass(frozen=True)
class BoundAnd(BoundExpr):
    left: BoundExpr
    right: BoundExpr


@dataclass(frozen=True)
class BoundOr(BoundExpr):
    left: BoundExpr
    right: BoundExpr


@dataclass(frozen=True)
class BoundNot(BoundExpr):
    child: BoundExpr


# ---------------------------------------------------------------------------------------------
# rendering

_UNITS_PER_SECOND = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}


def _format_clock(units: int, per_second: int) -> str:
    secs, frac = divmod(units, per_second)
    h, rest = divmod(secs, 3600)
    text = f"{h:02d}:{rest // 60:02d}:{rest % 60:02d}"
    if frac:
        width = len(str(per_second)) - 1
        text += "." + f"{frac:0{width}d}".rstrip("0")
    return text


def render_bound_literal(ref: BoundRef, lit: BoundLiteral) -> str:
    """A bound literal in Spark SQL syntax, in the column's own type."""
    t, v = ref.value_type, lit.storage
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if pa.types.is_floating(t):
        if math.isnan(v):
            return "CAST('NaN' AS DOUBLE)"
        if math.isinf(v):
            return "CAST('Infinity' AS DOUBLE)" if v > 0 else "CAST('-Infinity' AS DOUBLE)"
        r = repr(float(v))
        return r if "e" in r else r + "D"
    if pa.types.is_decimal(t):
        text = format(decimal.Decimal(v).scaleb(-t.scale, decimal.Context(prec=100)), "f")
        return text if "." in text else text + "BD"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return render_string(v.decode("utf-8", "replace"))
    if isinstance(v, bytes):
        return "X'" + v.hex().upper() + "'"
    if pa.types.is_date32(t):
        return f"DATE '{casts.format_date(v)}'"
    if pa.types.is_date64(t):
        days, ms = divmod(v, 86_400_000)
        text = casts.format_date(days)
        return f"DATE '{text}'" if not ms else f"TIMESTAMP_NTZ '{text} {_format_clock(ms, 1000)}'"
    if pa.types.is_timestamp(t):
        per_second = _UNITS_PER_SECOND[t.unit]
        days, rest = divmod(v, 86_400 * per_second)
        word = "TIMESTAMP" if t.tz is not None else "TIMESTAMP_NTZ"
        return f"{word} '{casts.format_date(days)} {_format_clock(rest, per_second)}'"
    if pa.types.is_time(t):
        return f"TIME '{_format_clock(v, _UNITS_PER_SECOND[t.unit])}'"
    return str(v)


_PRECEDENCE_WORD = {BoundAnd: "AND", BoundOr: "OR"}


def _render(e: BoundExpr, parent: str) -> str:
    if isinstance(e, BoundCompare):
        return f"{e.column} {e.op} {render_bound_literal(e.column, e.literal)}"
    if isinstance(e, BoundIn):
        items = [render_bound_literal(e.column, v) for v in e.literals]
        if e.has_null:
            items.append("NULL")
        return f"{e.column} {'NOT IN' if e.negated else 'IN'} ({', '.join(items)})"
    if isinstance(e, BoundIsNull):
        return f"{e.column} IS {'NOT ' if e.negated else ''}NULL"
    if isinstance(e, BoundKeyIn):
        return f"{e.column} {'NOT IN' if e.negated else 'IN'} KEYS({e.keys.describe()})"
    if isinstance(e, BoundLike):
        text = f"{e.column} {'NOT LIKE' if e.negated else 'LIKE'} {render_string(e.pattern)}"
        if e.escape != "\\":
            text += f" ESCAPE {render_string(e.escape)}"
        return text
    if isinstance(e, BoundNonNullConstant):
        text = f"{e.column} IS NOT NULL OR NULL" if e.value else f"{e.column} IS NULL AND NULL"
        return f"({text})"
    if isinstance(e, BoundConstant):
        return "NULL" if e.value is None else ("TRUE" if e.value else "FALSE")
    if isinstance(e, BoundNot):
        return f"NOT ({_render(e.child, '')})"
    if isinstance(e, (BoundAnd, BoundOr)):
        word = _PRECEDENCE_WORD[type(e)]
        parts: list[str] = []
        stack: list[BoundExpr] = [e]
        while stack:
            node = stack.pop()
            if type(node) is type(e):
                stack.append(node.right)  # type: ignore[attr-defined]
                stack.append(node.left)  # type: ignore[attr-defined]
            else:
                parts.append(_render(node, word))
        text = f" {word} ".join(parts)
        return f"({text})" if parent not in ("", word) else text
    raise TypeError(f"not a bound expression: {e!r}")


def render_bound(expr: BoundExpr) -> str:
    """SQL-like text of a bound expression (for explain output)."""
    return _render(expr, "")


_RE2_PLAIN = re.compile(r"[A-Za-z0-9]")


def re2_escape(text: str) -> str:
    """Escape text for RE2 so every character matches itself."""
    return "".join(
        c if _RE2_PLAIN.match(c) or ord(c) > 0x7F else f"\\x{{{ord(c):x}}}" for c in text
    )
