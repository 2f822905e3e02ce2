"""Parse a SQL predicate (Spark syntax) into an unbound expression, using sqlglot.

:func:`parse_predicate` accepts what can be pushed into a Parquet scan: comparisons
(``= == != <> < <= > >= <=>``, ``IS [NOT] DISTINCT FROM``) between a column and a literal (a
literal on the left is flipped to the right), ``[NOT] IN`` lists, ``[NOT] BETWEEN``,
``IS [NOT] NULL``, ``IS [NOT] TRUE/FALSE``, ``[NOT] LIKE`` with ``ESCAPE``, ``AND`` / ``OR`` /
``NOT``, parentheses, and a BOOLEAN column alone.

Literals, typed as Spark types them: integers (``5``, ``10L``, ``1Y``, ``1S``), decimals
(``1.5``, ``1.5BD``), doubles (``1.5e0``, ``1.5D``), floats (``1.5F``), strings (single or
double quotes, backslash escapes, ``''`` for a quote, adjacent strings concatenated, ``r'raw'``),
``X'hex'``, ``TRUE`` / ``FALSE`` / ``NULL``, ``DATE '...'``, ``TIMESTAMP '...'`` (read in UTC),
``TIMESTAMP_NTZ '...'``, ``TIME '...'``, unary minus, and ``CAST`` / ``TRY_CAST`` of a literal
(ANSI: a failing CAST is an error, a failing TRY_CAST is NULL).

Column names: a plain identifier, or any name in backquotes (`` `a.b` ``, `` `it's` ``,
`` `say "hi"` ``, `` `x``y` `` for a backquote, `` `` `` for the empty name). Double quotes make
a name where a column must stand and a string where a literal must: the subject of ``IS``,
``IN``, ``LIKE``, ``BETWEEN``, a predicate alone, and the one side of a comparison whose other
side is a literal (``"a b" = 1``, ``1 < "a b"``; ``""`` inside is one double quote, as with
Spark's ``spark.sql.ansi.doubleQuotedIdentifiers``); compared with a column, double quotes make a
string as in Spark's default (``name = "x"``). Two double-quoted operands are refused as
ambiguous. A dotted name without quotes (``s.x``) is a nested field (Spark's reading: field
``x`` of struct ``s``), which predicates cannot read; `` `s.x` `` is the top-level column named
``s.x``.

Everything else — functions or arithmetic on columns, column-versus-column comparisons,
subqueries, qualified or nested names, RLIKE, ILIKE, intervals — raises
:class:`PredicateError` naming the construct ("unsupported ...").
"""

from __future__ import annotations

import contextvars
import decimal
import math
from fractions import Fraction
from typing import Any, ClassVar, cast

import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError, TokenError

from lazyscan.errors import PredicateError
from lazyscan.predicate import casts
from lazyscan.predicate.expr import (
    FLIPPED,
    And,
    Compare,
    CompareOp,
    Constant,
    Expr,
    In,
    IsNull,
    Like,
    Literal,
    Not,
    Or,
    Ref,
)


class _SparkPredicates(Spark):
    """Spark dialect whose strings also accept ``''`` as an escaped quote, like Spark 4."""

    class Tokenizer(Spark.Tokenizer):
        STRING_ESCAPES: ClassVar[list[str]] = ["\\", "'"]


_COMPARISONS: dict[type, str] = {
    exp.EQ: "=",
    exp.NEQ: "!=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.NullSafeEQ: "<=>",
}

_CAST_TARGETS: dict[Any, str] = {
    exp.DataType.Type.TINYINT: "tinyint",
    exp.DataType.Type.SMALLINT: "smallint",
    exp.DataType.Type.INT: "int",
    exp.DataType.Type.BIGINT: "bigint",
    exp.DataType.Type.FLOAT: "float",
    exp.DataType.Type.DOUBLE: "double",
    exp.DataType.Type.DECIMAL: "decimal",
    exp.DataType.Type.TEXT: "string",
    exp.DataType.Type.VARCHAR: "string",
    exp.DataType.Type.CHAR: "string",
    exp.DataType.Type.BINARY: "binary",
    exp.DataType.Type.VARBINARY: "binary",
    exp.DataType.Type.BOOLEAN: "boolean",
    exp.DataType.Type.DATE: "date",
    exp.DataType.Type.TIMESTAMP: "timestamp",
    exp.DataType.Type.TIMESTAMPTZ: "timestamp",
    exp.DataType.Type.TIMESTAMPLTZ: "timestamp",
    exp.DataType.Type.TIMESTAMPNTZ: "timestamp_ntz",
    exp.DataType.Type.TIME: "time",
}


def _sql(node: exp.Expression) -> str:
    try:
        return node.sql(dialect="spark")
    except Exception:  # pragma: no cover - rendering is best effort
        return repr(node)


def _unsupported(node: exp.Expression, what: str | None = None) -> PredicateError:
    label = what or type(node).__name__
    return PredicateError(f"unsupported {label}: {_sql(node)}")


def _describe(node: exp.Expression) -> str:
    """What kind of construct an unsupported operand is, for error messages."""
    if isinstance(node, (exp.Func, exp.Anonymous)) and not isinstance(
        node, (exp.Cast, exp.TryCast)
    ):
        return "function call"
    if isinstance(node, (exp.Subquery, exp.Select)):
        return "subquery"
    if isinstance(node, exp.Interval):
        return "interval"
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.IntDiv, exp.Neg)):
        return "arithmetic"
    return "expression"


def _unwrap(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _column(node: exp.Expression) -> Ref | None:
    node = _unwrap(node)
    if isinstance(node, exp.Column):
        if node.args.get("table") is not None or not isinstance(node.this, exp.Identifier):
            raise PredicateError(
                f"unsupported qualified or nested column reference {_sql(node)}: without quotes "
                "a dotted name is a field of a struct column, and predicates cannot read nested "
                "fields; a top-level column whose name holds dots is written in backquotes "
                "(`a.b`)"
            )
        return Ref(node.this.this)
    return None


#: the predicate text being converted, for the spelling of double-quoted names
_TEXT: contextvars.ContextVar[str] = contextvars.ContextVar("lazyscan_predicate_text", default="")
#: whether a double-quoted string was read as a column name in the text being converted
_QUOTED_NAMES: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "lazyscan_predicate_quoted_names", default=None
)


def _double_quoted_end(text: str, start: int) -> tuple[str, int] | None:
    """The name in the double-quoted identifier at ``text[start]`` and how many adjacent
    string tokens it spans (``"a""b"``, the name ``a"b``, is two); None if it is not one."""
    if text[start : start + 1] != '"':
        return None
    out = []
    parts = 1
    i = start + 1
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            out.append(text[i : i + 2])
            i += 2
            continue
        if c == '"':
            if text[i + 1 : i + 2] == '"':
                out.append('"')
                parts += 1
                i += 2
                continue
            return "".join(out), parts
        out.append(c)
        i += 1
    return None


def _double_quoted_name(node: exp.Expression) -> str | None:
    """The column name a double-quoted string denotes, where a column must stand."""
    node = _unwrap(node)
    parts = node.expressions if isinstance(node, exp.Concat) else [node]
    if not parts or not all(isinstance(p, exp.Literal) and p.is_string for p in parts):
        return None
    start = parts[0].meta.get("start") if parts[0].meta else None
    if start is None:
        return None
    found = _double_quoted_end(_TEXT.get(), start)
    if found is None or found[1] != len(parts):
        return None
    names = _QUOTED_NAMES.get()
    if names is not None:
        names.append(found[0])
    return found[0]


def _subject(node: exp.Expression) -> Ref | None:
    """The column where a column must stand: a column, or a double-quoted name."""
    ref = _column(node)
    if ref is not None:
        return ref
    name = _double_quoted_name(node)
    return None if name is None else Ref(name)


def _number(text: str) -> Literal:
    lowered = text.lower()
    if "e" in lowered:
        value = float(text)
        if math.isinf(value):
            raise PredicateError(f"numeric literal {text} is out of the range of DOUBLE")
        return Literal(value, "double")
    if "." in text:
        dec = decimal.Decimal(text)
        precision, _ = casts.decimal_precision(dec)
        if precision > casts.MAX_DECIMAL_PRECISION:
            raise PredicateError(
                f"decimal literal {text} has precision {precision}, above the maximum of 38"
            )
        return Literal(dec, "decimal")
    value_int = int(text)
    if len(str(abs(value_int))) > casts.MAX_DECIMAL_PRECISION:
        raise PredicateError(f"integer literal {text} has more than 38 digits")
    return Literal(value_int, "integer")


def _negate_literal(lit: Literal, node: exp.Expression) -> Literal:
    if lit.kind == "null":
        return lit
    if lit.kind == "decimal":
        return Literal(lit.value.copy_negate(), "decimal")  # exact (unary minus rounds)
    if lit.kind in ("integer", "float", "double"):
        return Literal(-lit.value, lit.kind)
    raise _unsupported(node, "negation of a non-numeric literal")


def _cast_target(to: exp.DataType) -> tuple[str, tuple[int, ...]]:
    target = _CAST_TARGETS.get(to.this)
    if target is None:
        raise _unsupported(to, "CAST target type")
    params: tuple[int, ...] = ()
    if target == "decimal":
        values = [int(_unwrap(p.this).this) for p in to.expressions]
        if len(values) == 1:
            values.append(0)
        params = cast(tuple[int, ...], tuple(values)) if values else (10, 0)
    return target, params


def _literal(node: exp.Expression) -> Literal | None:
    """The literal an expression denotes, or None if it is not a literal at all."""
    node = _unwrap(node)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return Literal(node.this, "string")
        return _number(node.this)
    if isinstance(node, exp.Boolean):
        return Literal(bool(node.this), "boolean")
    if isinstance(node, exp.Null):
        return Literal(None, "null")
    if isinstance(node, exp.RawString):
        return Literal(node.this, "string")
    if isinstance(node, exp.National):
        return Literal(node.this, "string")
    if isinstance(node, exp.HexString):
        digits = node.this
        if len(digits) % 2:
            digits = "0" + digits
        try:
            return Literal(bytes.fromhex(digits), "binary")
        except ValueError as e:
            raise PredicateError(f"bad hexadecimal literal {_sql(node)}") from e
    if isinstance(node, exp.Concat):
        parts = [_literal(p) for p in node.expressions]
        if parts and all(p is not None and p.kind == "string" for p in parts):
            return Literal("".join(cast(Literal, p).value for p in parts), "string")
        return None
    if isinstance(node, exp.Neg):
        inner = _literal(node.this)
        return None if inner is None else _negate_literal(inner, node)
    if isinstance(node, (exp.Cast, exp.TryCast)):
        inner = _literal(node.this)
        if inner is None:
            return None
        target, params = _cast_target(node.args["to"])
        safe = isinstance(node, exp.TryCast) and bool(node.args.get("safe"))
        try:
            return casts.cast_literal(inner, target, params)
        except casts.CastError:
            if safe:
                return Literal(None, "null")
            raise
    return None


def _compare(node: exp.Expression, op: str) -> Expr:
    left, right = node.this, node.expression
    lcol, rcol = _column(left), _column(right)
    if lcol is None and rcol is None:
        lname, rname = _double_quoted_name(left), _double_quoted_name(right)
        if lname is not None and rname is not None:
            raise PredicateError(
                f"ambiguous comparison {_sql(node)}: both sides are in double quotes; write the "
                "column name in backquotes (`name`) and a string in single quotes"
            )
        if lname is not None:
            lcol = Ref(lname)
        elif rname is not None:
            rcol = Ref(rname)
    if lcol is not None and rcol is not None:
        raise PredicateError(
            f"unsupported comparison between columns: {_sql(node)} "
            "(only column-versus-literal comparisons are supported)"
        )
    if lcol is None and rcol is not None:
        left, right, lcol, op = right, left, rcol, FLIPPED[op]
    if lcol is None:
        llit, rlit = _literal(left), _literal(right)
        if llit is not None and rlit is not None:
            return _fold(op, llit, rlit, node)
        bad = _unwrap(right if llit is not None else left)
        raise _unsupported(bad, f"{_describe(bad)} in comparison (only a column and a literal)")
    lit = _literal(right)
    if lit is None:
        bad = _unwrap(right)
        raise _unsupported(bad, f"{_describe(bad)} in comparison (only a column and a literal)")
    return Compare(lcol, cast(CompareOp, op), lit)


_FOLD_FAMILY = {
    "integer": "number",
    "decimal": "number",
    "float": "number",
    "double": "number",
    "string": "string",
    "binary": "binary",
    "boolean": "boolean",
    "date": "date",
    "timestamp": "timestamp",
    "timestamp_ntz": "timestamp",
    "time": "time",
}


def _fold(op: str, a: Literal, b: Literal, node: exp.Expression) -> Expr:
    """Constant comparison such as ``1 = 1`` (same-family literals only)."""
    if a.is_null or b.is_null:
        if op == "<=>":
            return Constant(a.is_null and b.is_null)
        return Constant(None)
    fa, fb = _FOLD_FAMILY[a.kind], _FOLD_FAMILY[b.kind]
    if fa != fb:
        raise _unsupported(node, "comparison between literals of different types")
    x, y = a.value, b.value
    kx: Any
    ky: Any
    if fa == "number":
        if a.kind in ("float", "double") or b.kind in ("float", "double"):
            kx, ky = _float_key(float(x)), _float_key(float(y))
        else:
            kx, ky = Fraction(x), Fraction(y)
    elif fa == "string":
        kx, ky = x.encode("utf-8"), y.encode("utf-8")
    else:
        kx, ky = x, y
    result = {
        "=": kx == ky,
        "<=>": kx == ky,
        "!=": kx != ky,
        "<": kx < ky,
        "<=": kx <= ky,
        ">": kx > ky,
        ">=": kx >= ky,
    }[op]
    return Constant(result)


def _float_key(v: float) -> tuple[int, float]:
    return (1, 0.0) if math.isnan(v) else (0, v)


def _in(node: exp.In, negated: bool) -> Expr:
    if node.args.get("query") is not None:
        raise _unsupported(node, "IN subquery")
    if node.args.get("unnest") is not None or node.args.get("field") is not None:
        raise _unsupported(node, "IN construct")
    ref = _subject(node.this)
    if ref is None:
        raise _unsupported(_unwrap(node.this), "IN on a non-column expression")
    values = []
    for item in node.expressions:
        lit = _literal(item)
        if lit is None:
            raise _unsupported(_unwrap(item), "IN list item (only literals)")
        values.append(lit)
    return In(ref, tuple(values), negated)


def _like(node: exp.Expression, negated: bool) -> Expr:
    escape = "\\"
    if isinstance(node, exp.Escape):
        esc = _literal(node.expression)
        if esc is None or esc.kind != "string" or len(esc.value) != 1:
            raise PredicateError(f"LIKE ESCAPE needs a one-character string literal: {_sql(node)}")
        escape = esc.value
        node = node.this
    if node.args.get("negate"):
        negated = not negated
    ref = _subject(node.this)
    if ref is None:
        raise _unsupported(_unwrap(node.this), "LIKE on a non-column expression")
    target = _unwrap(node.expression)
    if isinstance(target, (exp.Any, exp.All)):
        raise _unsupported(node, "LIKE ANY/ALL")
    pattern = _literal(target)
    if pattern is not None and pattern.is_null:
        return Constant(None)  # x LIKE NULL is NULL
    if pattern is None or pattern.kind != "string":
        raise _unsupported(target, "LIKE pattern (only a string literal)")
    return Like(ref, pattern.value, escape, negated)


def _between(node: exp.Between) -> Expr:
    if node.args.get("symmetric"):
        raise _unsupported(node, "BETWEEN SYMMETRIC")
    ref = _subject(node.this)
    if ref is None:
        raise _unsupported(_unwrap(node.this), "BETWEEN on a non-column expression")
    low, high = _literal(node.args["low"]), _literal(node.args["high"])
    if low is None or high is None:
        bad = node.args["low"] if low is None else node.args["high"]
        raise _unsupported(_unwrap(bad), "BETWEEN bound (only literals)")
    return And(Compare(ref, ">=", low), Compare(ref, "<=", high))


def _is(node: exp.Is, negated: bool) -> Expr:
    ref = _subject(node.this)
    if ref is None:
        raise _unsupported(_unwrap(node.this), "IS on a non-column expression")
    target = _unwrap(node.expression)
    if isinstance(target, exp.Null):
        return IsNull(ref, negated)
    if isinstance(target, exp.Boolean):
        e: Expr = Compare(ref, "<=>", Literal(bool(target.this), "boolean"))
        return Not(e) if negated else e
    raise _unsupported(node, "IS construct")


def _convert(node: exp.Expression) -> Expr:
    node = _unwrap(node)
    if isinstance(node, exp.And):
        return And(_convert(node.this), _convert(node.expression))
    if isinstance(node, exp.Or):
        return Or(_convert(node.this), _convert(node.expression))
    if isinstance(node, exp.Not):
        if isinstance(node.this, exp.Paren):  # NOT (...) stays a NOT node
            return Not(_convert(node.this))
        inner = node.this
        if isinstance(inner, exp.In):
            return _in(inner, True)
        if isinstance(inner, (exp.Like, exp.Escape)):
            return _like(inner, True)
        if isinstance(inner, exp.Is):
            return _is(inner, True)
        return Not(_convert(inner))
    op = _COMPARISONS.get(type(node))
    if op is not None:
        return _compare(node, op)
    if isinstance(node, exp.NullSafeNEQ):
        return Not(_compare(node, "<=>"))
    if isinstance(node, exp.In):
        return _in(node, False)
    if isinstance(node, (exp.Like, exp.Escape)):
        if isinstance(node, exp.Escape) and not isinstance(node.this, exp.Like):
            raise _unsupported(node, "ESCAPE")
        return _like(node, False)
    if isinstance(node, exp.Between):
        return _between(node)
    if isinstance(node, exp.Is):
        return _is(node, False)
    if isinstance(node, exp.Column):
        ref = _column(node)
        assert ref is not None
        return ref
    if isinstance(node, exp.ILike):
        raise _unsupported(node, "ILIKE")
    if isinstance(node, (exp.RegexpLike, exp.RegexpILike)):
        raise _unsupported(node, "RLIKE")
    if isinstance(node, (exp.Subquery, exp.Select, exp.Exists)):
        raise _unsupported(node, "subquery")
    name = _double_quoted_name(node)
    if name is not None:
        return Ref(name)  # a BOOLEAN column alone
    lit = _literal(node)
    if lit is not None:
        if lit.kind in ("boolean", "null"):
            return Constant(lit.value)
        raise _unsupported(node, f"{lit.kind} literal used as a predicate")
    if isinstance(node, (exp.Func, exp.Anonymous)):
        raise _unsupported(node, "function call")
    if isinstance(node, exp.Binary):
        raise _unsupported(node, "operator")
    raise _unsupported(node)


def parse_predicate(text: str) -> Expr:
    """Parse a Spark SQL boolean expression (a WHERE clause without ``WHERE``)."""
    if not isinstance(text, str):
        raise PredicateError(f"predicate text must be a string, got {type(text).__name__}")
    if not text.strip():
        raise PredicateError("empty predicate")
    try:
        tree: Any = sqlglot.parse_one(text, dialect=_SparkPredicates)
    except (ParseError, TokenError) as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise PredicateError(f"cannot parse predicate {text!r}: {first}") from e
    if isinstance(tree, exp.Block) or tree is None:
        raise PredicateError(f"cannot parse predicate {text!r}: expected one expression")
    token = _TEXT.set(text)
    try:
        return _convert(tree)
    finally:
        _TEXT.reset(token)


def double_quoted_names(text: str) -> list[str]:
    """The column names written in double quotes in the predicate ``text`` (see the module
    docs): Spark's own parser reads them as strings, so a filter handed to Spark is rendered
    from the parsed expression, with backquotes, when there are any."""
    token = _QUOTED_NAMES.set([])
    try:
        parse_predicate(text)
        return list(_QUOTED_NAMES.get() or [])
    finally:
        _QUOTED_NAMES.reset(token)
