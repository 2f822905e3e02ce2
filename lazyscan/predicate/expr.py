"""Unbound filter expressions: frozen nodes, the builder API and SQL-like rendering.

Parts and their roles:

- :class:`Literal` — a typed constant (``kind`` is a Spark type family, ``value`` its Python form).
- :class:`Expr` and its frozen dataclass nodes — :class:`Ref` (a column used as a boolean),
  :class:`Compare` (``= != < <= > >= <=>``), :class:`In`, :class:`IsNull`, :class:`Like`,
  :class:`And`, :class:`Or`, :class:`Not`, :class:`Constant` (``TRUE`` / ``FALSE`` / ``NULL``).
  Nodes compare structurally (``==`` on nodes is dataclass equality), so they can be used in tests,
  sets and dictionaries.
- :class:`Column` and :func:`col` / :func:`lit` — the builder: ``col("x") < 5``,
  ``col("s").startswith("ab") & ~col("y").isin([1, 2])``. ``Column`` is not a node: its ``==``
  builds a predicate.
- :func:`to_sql` (also ``str(expr)``) — SQL-like text in Spark syntax, used in explain output and
  re-parseable by :func:`lazyscan.predicate.parse_predicate`.
- :func:`referenced_columns`, :func:`split_conjuncts`, :func:`conjunction` — small visitors that
  also accept bound expressions (:mod:`lazyscan.predicate.bound`).

Between is not a node: ``between(a, b)`` builds ``x >= a AND x <= b``, as Spark does.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast
from typing import Literal as TypingLiteral

import numpy as np

from lazyscan.errors import PredicateError
from lazyscan.predicate import casts

CompareOp = TypingLiteral["=", "!=", "<", "<=", ">", ">=", "<=>"]
COMPARE_OPS: tuple[str, ...] = ("=", "!=", "<", "<=", ">", ">=", "<=>")
#: ``a op b`` is ``b FLIPPED[op] a``.
FLIPPED: dict[str, str] = {
    "=": "=",
    "!=": "!=",
    "<": ">",
    "<=": ">=",
    ">": "<",
    ">=": "<=",
    "<=>": "<=>",
}
#: ``NOT (a op b)`` is ``a NEGATED[op] b`` for the total orders used here (not for ``<=>``).
NEGATED: dict[str, str] = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}

LiteralKind = TypingLiteral[
    "null",
    "boolean",
    "integer",
    "decimal",
    "float",
    "double",
    "string",
    "binary",
    "date",
    "timestamp",
    "timestamp_ntz",
    "time",
]


@dataclass(frozen=True)
class Literal:
    """A typed constant.

    ``kind`` and the Python form of ``value``:

    ========================  ==================================================================
    ``null``                  ``None``
    ``boolean``               ``bool``
    ``integer``               ``int`` (Spark TINYINT..BIGINT, or DECIMAL(n, 0) beyond 64 bits)
    ``decimal``               ``decimal.Decimal`` (finite; Spark DECIMAL(p, s), p <= 38)
    ``float`` / ``double``    ``float`` (a ``float`` value is exactly representable in float32)
    ``string`` / ``binary``   ``str`` / ``bytes``
    ``date``                  ``int`` days since 1970-01-01
    ``timestamp``             ``int`` microseconds since 1970-01-01 00:00 UTC (an instant)
    ``timestamp_ntz``         ``int`` microseconds since 1970-01-01 00:00 (a wall-clock time)
    ``time``                  ``int`` microseconds since midnight
    ========================  ==================================================================

    Build literals with :func:`lit`, which converts Python, NumPy and Arrow values.
    """

    value: Any
    kind: LiteralKind

    def __post_init__(self) -> None:
        expected = _KIND_PYTYPES.get(self.kind)
        if expected is None:
            raise PredicateError(f"unknown literal kind {self.kind!r}")
        if self.kind == "null":
            if self.value is not None:
                raise PredicateError("a null literal has value None")
            return
        ok = isinstance(self.value, expected) and not (
            expected is int and isinstance(self.value, bool)
        )
        if not ok:
            raise PredicateError(
                f"literal of kind {self.kind!r} needs a {expected.__name__}, got {self.value!r}"
            )
        if self.kind == "decimal" and not self.value.is_finite():
            raise PredicateError(f"decimal literal must be finite, got {self.value}")

    @property
    def is_null(self) -> bool:
        return self.kind == "null"

    def __str__(self) -> str:
        return render_literal(self)

    def __bool__(self) -> bool:
        raise TypeError("a Literal has no truth value; use .value")


_KIND_PYTYPES: dict[str, type] = {
    "null": type(None),
    "boolean": bool,
    "integer": int,
    "decimal": decimal.Decimal,
    "float": float,
    "double": float,
    "string": str,
    "binary": bytes,
    "date": int,
    "timestamp": int,
    "timestamp_ntz": int,
    "time": int,
}


def lit(value: Any) -> Literal:
    """Make a :class:`Literal` from a Python, NumPy or Arrow value (a Literal is returned as is).

    ``None`` -> NULL, ``bool`` -> BOOLEAN, ``int`` -> integer, ``float`` -> DOUBLE,
    ``numpy.float32`` -> FLOAT, ``Decimal`` -> DECIMAL, ``str`` -> STRING, ``bytes`` -> BINARY,
    ``date`` -> DATE, aware ``datetime`` -> TIMESTAMP (converted to UTC), naive ``datetime`` ->
    TIMESTAMP_NTZ, ``time`` -> TIME.
    """
    if isinstance(value, Literal):
        return value
    if value is None:
        return Literal(None, "null")
    if hasattr(value, "as_py") and callable(value.as_py):  # pyarrow scalar
        return lit(value.as_py())
    if isinstance(value, (bool, np.bool_)):
        return Literal(bool(value), "boolean")
    if isinstance(value, (int, np.integer)):
        return Literal(int(value), "integer")
    if isinstance(value, (np.float16, np.float32)):
        return Literal(float(value), "float")
    if isinstance(value, (float, np.floating)):
        return Literal(float(value), "double")
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            if value.is_nan():
                return Literal(math.nan, "double")
            return Literal(math.inf if value > 0 else -math.inf, "double")
        return Literal(value, "decimal")
    if isinstance(value, str):
        return Literal(value, "string")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return Literal(bytes(value), "binary")
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None and value.utcoffset() is not None:
            return Literal(casts.micros_from_datetime(value), "timestamp")
        return Literal(casts.micros_from_datetime(value), "timestamp_ntz")
    if isinstance(value, _dt.date):
        return Literal(casts.days_from_civil(value.year, value.month, value.day), "date")
    if isinstance(value, _dt.time):
        if value.tzinfo is not None:
            raise PredicateError(f"time literal with a time zone is not supported: {value!r}")
        return Literal(casts.micros_from_time(value), "time")
    if isinstance(value, np.datetime64):
        unit, _ = np.datetime_data(value.dtype)
        if np.isnat(value):
            return Literal(None, "null")
        if unit in ("Y", "M", "W", "D"):
            return Literal(int(value.astype("datetime64[D]").astype(np.int64)), "date")
        ns = int(value.astype("datetime64[ns]").astype(np.int64))
        if ns % 1000:
            raise PredicateError(f"timestamp literal {value} has sub-microsecond precision")
        return Literal(ns // 1000, "timestamp_ntz")
    raise PredicateError(f"cannot use {type(value).__name__} value {value!r} as a literal")


class Expr:
    """Base class of unbound predicate nodes; supports ``&``, ``|`` and ``~``."""

    __slots__ = ()

    def __and__(self, other: object) -> Expr:
        return And(self, _as_predicate(other))

    def __rand__(self, other: object) -> Expr:
        return And(_as_predicate(other), self)

    def __or__(self, other: object) -> Expr:
        return Or(self, _as_predicate(other))

    def __ror__(self, other: object) -> Expr:
        return Or(_as_predicate(other), self)

    def __invert__(self) -> Expr:
        return Not(self)

    def __bool__(self) -> bool:
        raise TypeError(
            "a predicate has no truth value; combine predicates with &, | and ~, "
            "not with and/or/not or chained comparisons"
        )

    def __str__(self) -> str:
        return to_sql(self)


@dataclass(frozen=True)
class Ref(Expr):
    """A column reference; as a predicate, a BOOLEAN column (``WHERE flag``)."""

    name: str


@dataclass(frozen=True)
class Compare(Expr):
    """``column op literal``; ``<=>`` is Spark's null-safe equality."""

    column: Ref
    op: CompareOp
    value: Literal

    def __post_init__(self) -> None:
        if self.op not in COMPARE_OPS:
            raise PredicateError(f"unknown comparison operator {self.op!r}")


@dataclass(frozen=True)
class In(Expr):
    """``column IN (values...)``, or ``NOT IN`` when ``negated``. An empty list never matches."""

    column: Ref
    values: tuple[Literal, ...]
    negated: bool = False


@dataclass(frozen=True)
class KeyIn(Expr):
    """``column`` holds a key of ``keys`` (a :class:`~lazyscan.predicate.keys.KeyFilter`).

    An exact filter keeps exactly the rows whose value is a key, a Bloom filter a superset;
    NULL never matches. With ``adaptive`` the scan may stop probing a filter that removes too
    few rows to pay for itself: for use in front of the join that filters again."""

    column: Ref
    keys: Any
    adaptive: bool = False


@dataclass(frozen=True)
class IsNull(Expr):
    """``column IS NULL``, or ``IS NOT NULL`` when ``negated``."""

    column: Ref
    negated: bool = False


@dataclass(frozen=True)
class Like(Expr):
    """``column LIKE pattern [ESCAPE escape]``: ``%`` any run of characters, ``_`` one character."""

    column: Ref
    pattern: str
    escape: str = "\\"
    negated: bool = False

    def __post_init__(self) -> None:
        if len(self.escape) != 1:
            raise PredicateError(f"LIKE escape must be one character, got {self.escape!r}")

    @classmethod
    def startswith(cls, column: str | Ref, text: str) -> Like:
        """``column LIKE 'text%'`` with ``%``, ``_`` and the escape in ``text`` escaped."""
        return cls(_as_ref(column), _escape_like(_text(text)) + "%")

    @classmethod
    def endswith(cls, column: str | Ref, text: str) -> Like:
        return cls(_as_ref(column), "%" + _escape_like(_text(text)))

    @classmethod
    def contains(cls, column: str | Ref, text: str) -> Like:
        return cls(_as_ref(column), "%" + _escape_like(_text(text)) + "%")


@dataclass(frozen=True)
class And(Expr):
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Or(Expr):
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Not(Expr):
    child: Expr


@dataclass(frozen=True)
class Constant(Expr):
    """A constant predicate: TRUE, FALSE or NULL (``None``, keeps no row)."""

    value: bool | None


TRUE = Constant(True)
FALSE = Constant(False)


# ---------------------------------------------------------------------------------------------
# builder


def _escape_like(text: str, escape: str = "\\") -> str:
    return "".join(escape + c if c in ("%", "_", escape) else c for c in text)


def _as_ref(column: str | Ref) -> Ref:
    return column if isinstance(column, Ref) else Ref(column)


class Column:
    """Builder for predicates on one column; made by :func:`col`.

    Comparison operators build :class:`Compare` nodes (``col("x") == 5``), so a ``Column`` is
    not hashable and has no truth value. Use it directly as a predicate for a BOOLEAN column.
    """

    __slots__ = ("ref",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, name: str) -> None:
        if not isinstance(name, str):
            raise PredicateError(f"column name must be a string, got {name!r}")
        self.ref = Ref(name)

    @property
    def name(self) -> str:
        return self.ref.name

    def __repr__(self) -> str:
        return f"col({self.ref.name!r})"

    def __str__(self) -> str:
        return render_column(self.ref.name)

    def __bool__(self) -> bool:
        raise TypeError(
            "a column has no truth value; use & | ~ to combine predicates, "
            "and avoid chained comparisons like 1 < col('x') < 5 (use .between)"
        )

    def _compare(self, op: str, other: object) -> Compare:
        if isinstance(other, Column):
            raise PredicateError(
                f"unsupported: comparison between columns {self.ref.name!r} and "
                f"{other.ref.name!r} (only column-versus-literal predicates are supported)"
            )
        return Compare(self.ref, cast(CompareOp, op), lit(other))

    def __eq__(self, other: object) -> Compare:  # type: ignore[override]
        return self._compare("=", other)

    def __ne__(self, other: object) -> Compare:  # type: ignore[override]
        return self._compare("!=", other)

    def __lt__(self, other: object) -> Compare:
        return self._compare("<", other)

    def __le__(self, other: object) -> Compare:
        return self._compare("<=", other)

    def __gt__(self, other: object) -> Compare:
        return self._compare(">", other)

    def __ge__(self, other: object) -> Compare:
        return self._compare(">=", other)

    def eq_null_safe(self, other: object) -> Compare:
        """``column <=> value``: true when both are NULL, false when only one is."""
        return self._compare("<=>", other)

    def isin(self, *values: Any) -> In:
        """``column IN (values)``; accepts ``isin([1, 2])`` or ``isin(1, 2)``."""
        if (
            len(values) == 1
            and isinstance(values[0], Iterable)
            and not isinstance(values[0], (str, bytes, bytearray))
        ):
            items = list(values[0])
        else:
            items = list(values)
        return In(self.ref, tuple(lit(v) for v in items))

    def isin_keys(self, keys: Any, adaptive: bool = False) -> KeyIn:
        """``column`` holds a key of ``keys``: a :class:`~lazyscan.predicate.keys.KeyFilter`
        (from :func:`lazyscan.key_filter`) or anything it builds one from."""
        from lazyscan.predicate.keys import KeyFilter, key_filter

        return KeyIn(self.ref, keys if isinstance(keys, KeyFilter) else key_filter(keys), adaptive)

    def is_null(self) -> IsNull:
        return IsNull(self.ref)

    def is_not_null(self) -> IsNull:
        return IsNull(self.ref, negated=True)

    def between(self, low: object, high: object) -> And:
        """``low <= column AND column <= high`` (both ends inclusive, as in SQL)."""
        return And(self._compare(">=", low), self._compare("<=", high))

    def like(self, pattern: str, escape: str = "\\") -> Like:
        """SQL ``LIKE``: ``%`` matches any run of characters, ``_`` exactly one."""
        if not isinstance(pattern, str):
            raise PredicateError(f"LIKE pattern must be a string, got {pattern!r}")
        return Like(self.ref, pattern, escape)

    def startswith(self, prefix: str) -> Like:
        """``LIKE 'prefix%'`` (wildcards in ``prefix`` match literally)."""
        return Like.startswith(self.ref, prefix)

    def endswith(self, suffix: str) -> Like:
        return Like.endswith(self.ref, suffix)

    def contains(self, infix: str) -> Like:
        return Like.contains(self.ref, infix)

    # a Column is also a boolean predicate (BOOLEAN column)
    def __and__(self, other: object) -> Expr:
        return And(self.ref, _as_predicate(other))

    def __rand__(self, other: object) -> Expr:
        return And(_as_predicate(other), self.ref)

    def __or__(self, other: object) -> Expr:
        return Or(self.ref, _as_predicate(other))

    def __ror__(self, other: object) -> Expr:
        return Or(_as_predicate(other), self.ref)

    def __invert__(self) -> Expr:
        return Not(self.ref)


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise PredicateError(f"expected a string, got {value!r}")
    return value


def col(name: str) -> Column:
    """Refer to a top-level column by its name, taken whole: ``col("a.b")`` is the column named
    ``a.b`` (never field ``b`` of a struct ``a``: predicates do not read nested fields), and
    spaces, quotes, non-ASCII letters, SQL keywords and the empty string are names like any
    other. Matched exactly, then case-insensitively when one column matches, at bind time."""
    return Column(name)


def _as_predicate(value: object) -> Expr:
    if isinstance(value, Expr):
        return value
    if isinstance(value, Column):
        return value.ref
    if isinstance(value, Literal) and value.kind in ("boolean", "null"):
        return Constant(value.value)
    if isinstance(value, (bool, np.bool_)):
        return Constant(bool(value))
    if value is None:
        return Constant(None)
    raise PredicateError(f"not a predicate: {value!r}")


def as_predicate(value: object) -> Expr:
    """Turn an Expr, a Column (boolean column), a bool or None into a predicate node."""
    return _as_predicate(value)


# ---------------------------------------------------------------------------------------------
# rendering

_SIMPLE_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# words that cannot stand unquoted as a column name in a predicate
_RESERVED = frozenset(
    [
        "ALL",
        "AND",
        "ANY",
        "ARRAY",
        "AS",
        "BETWEEN",
        "BINARY",
        "BOTH",
        "CASE",
        "CAST",
        "DATE",
        "DISTINCT",
        "ELSE",
        "END",
        "ESCAPE",
        "EXISTS",
        "FALSE",
        "FROM",
        "IN",
        "INTERVAL",
        "IS",
        "LIKE",
        "ILIKE",
        "RLIKE",
        "REGEXP",
        "NOT",
        "NULL",
        "OR",
        "SELECT",
        "SOME",
        "THEN",
        "TIME",
        "TIMESTAMP",
        "TIMESTAMP_LTZ",
        "TIMESTAMP_NTZ",
        "TRUE",
        "WHEN",
        "WHERE",
        "DIV",
        "MOD",
        "UNKNOWN",
        "LEFT",
        "RIGHT",
        "ORDER",
        "BY",
        "GROUP",
        "LIMIT",
        "UNION",
        "CURRENT_DATE",
        "CURRENT_TIMESTAMP",
        "CURRENT_TIME",
        "CURRENT_USER",
        "TRY_CAST",
    ]
)


def render_column(name: str) -> str:
    """A column name as a Spark identifier, backquoted when needed."""
    if _SIMPLE_IDENT.match(name) and name.upper() not in _RESERVED:
        return name
    return "`" + name.replace("`", "``") + "`"


_STRING_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\0": "\\0"}


def render_string(text: str) -> str:
    """A Spark string literal (backslash escapes)."""
    out = []
    for c in text:
        esc = _STRING_ESCAPES.get(c)
        if esc is not None:
            out.append(esc)
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return "'" + "".join(out) + "'"


def _render_double(v: float) -> str:
    if math.isnan(v):
        return "CAST('NaN' AS DOUBLE)"
    if math.isinf(v):
        return "CAST('Infinity' AS DOUBLE)" if v > 0 else "CAST('-Infinity' AS DOUBLE)"
    r = repr(v)
    if "e" in r or "E" in r:
        return r
    return r + "D"


def render_literal(value: Literal) -> str:
    """A literal in Spark SQL syntax; re-parses to the same literal."""
    k, v = value.kind, value.value
    if k == "null":
        return "NULL"
    if k == "boolean":
        return "TRUE" if v else "FALSE"
    if k == "integer":
        return str(v)
    if k == "decimal":
        text = format(v, "f")
        return text if "." in text else text + "BD"
    if k == "double":
        return _render_double(v)
    if k == "float":
        if math.isnan(v) or math.isinf(v):
            inner = "'NaN'" if math.isnan(v) else ("'Infinity'" if v > 0 else "'-Infinity'")
        else:
            inner = repr(v)
        return f"CAST({inner} AS FLOAT)"
    if k == "string":
        return render_string(v)
    if k == "binary":
        return "X'" + v.hex().upper() + "'"
    if k == "date":
        return f"DATE '{casts.format_date(v)}'"
    if k == "timestamp":
        # the instant, whatever the time zone of the session that reads the text
        return f"TIMESTAMP '{casts.format_timestamp(v)} UTC'"
    if k == "timestamp_ntz":
        return f"TIMESTAMP_NTZ '{casts.format_timestamp(v)}'"
    if k == "time":
        return f"TIME '{casts.format_time(v)}'"
    raise PredicateError(f"unknown literal kind {k!r}")  # pragma: no cover


def _render(e: Expr, parent: str) -> str:
    if isinstance(e, Compare):
        return f"{render_column(e.column.name)} {e.op} {render_literal(e.value)}"
    if isinstance(e, In):
        values = ", ".join(render_literal(v) for v in e.values)
        word = "NOT IN" if e.negated else "IN"
        return f"{render_column(e.column.name)} {word} ({values})"
    if isinstance(e, IsNull):
        return f"{render_column(e.column.name)} IS {'NOT ' if e.negated else ''}NULL"
    if isinstance(e, KeyIn):
        return f"{render_column(e.column.name)} IN KEYS({e.keys.describe()})"
    if isinstance(e, Like):
        word = "NOT LIKE" if e.negated else "LIKE"
        text = f"{render_column(e.column.name)} {word} {render_string(e.pattern)}"
        if e.escape != "\\":
            text += f" ESCAPE {render_string(e.escape)}"
        return text
    if isinstance(e, Ref):
        return render_column(e.name)
    if isinstance(e, Constant):
        return "NULL" if e.value is None else ("TRUE" if e.value else "FALSE")
    if isinstance(e, Not):
        return f"NOT ({_render(e.child, '')})"
    if isinstance(e, (And, Or)):
        # the left spine is flattened (a AND b AND c parses left-deep), a right operand of the
        # same kind keeps its parentheses, so the text parses back to the same tree
        word = "AND" if isinstance(e, And) else "OR"
        left = _render(e.left, word)
        right = _render(e.right, word + "-right")
        text = f"{left} {word} {right}"
        return f"({text})" if parent not in ("", word) else text
    raise PredicateError(f"not an expression: {e!r}")


def to_sql(expr: Expr) -> str:
    """Render an expression as Spark SQL predicate text."""
    return _render(expr, "")


# ---------------------------------------------------------------------------------------------
# visitors shared with bound expressions


def _flatten(e: Any, kind: Any) -> list[Any]:
    out: list[Any] = []
    stack: list[Any] = [e]
    while stack:
        node: Any = stack.pop()
        if isinstance(node, kind):
            stack.append(node.right)
            stack.append(node.left)
        else:
            out.append(node)
    return out


def split_conjuncts(expr: Any) -> list[Any]:
    """The operands of a top-level AND chain, left to right (bound or unbound)."""
    from lazyscan.predicate.bound import BoundAnd

    return _flatten(expr, BoundAnd if not isinstance(expr, Expr) else And)


def conjunction(parts: Sequence[Any]) -> Any:
    """AND of the given predicates (bound or unbound); TRUE for an empty list."""
    from lazyscan.predicate.bound import BoundAnd, BoundConstant, BoundExpr

    items = list(parts)
    if not items:
        return TRUE
    if all(isinstance(p, BoundExpr) for p in items):
        result_b: BoundExpr = items[0]
        for p in items[1:]:
            result_b = BoundAnd(result_b, p)
        return result_b if items else BoundConstant(True)
    result = as_predicate(items[0])
    for p in items[1:]:
        result = And(result, as_predicate(p))
    return result


def referenced_columns(expr: Any) -> frozenset[str]:
    """Names of the columns an expression reads (as written, or as resolved when bound)."""
    names: set[str] = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        ref = getattr(node, "column", None) if not isinstance(node, Ref) else node
        if ref is not None:
            names.add(ref.name)
        for child_name in ("left", "right", "child"):
            child = getattr(node, child_name, None)
            if child is not None:
                stack.append(child)
    return frozenset(names)
