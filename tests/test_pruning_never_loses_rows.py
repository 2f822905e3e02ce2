"""Pruning never removes a matching row: pushdown on (every tier) against pushdown off, over
every Parquet and ORC file in tests/data.

For each file, each flat column of a comparable type gets predicates built from its own values
(=, <, <=, >, >=, <>, IN, IS NULL, IS NOT NULL at the minimum, the median and the maximum, and
just below the minimum and above the maximum, where statistics decide the most). The scan with
every pruning tier on (statistics, Bloom filters, dictionaries, page index) must return exactly
the rows the predicate selects from the whole table read without a filter, evaluated by the
same predicate evaluator the scan uses after decoding (what ``pushdown=False`` does). Files that
lazyscan refuses are left to the tests of bad input.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lazyscan
from lazyscan.errors import LazyScanError, PredicateError
from lazyscan.predicate.evaluate import evaluate
from tests.support.data import DATA, data_files

#: columns tried per file; above LARGE rows, one column and a quarter of its predicates
COLUMNS_PER_FILE = 6
LARGE = 100_000


def _comparable(t: pa.DataType) -> bool:
    return (
        pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
        or pa.types.is_decimal(t) or pa.types.is_date32(t) or pa.types.is_boolean(t) or pa.types.is_timestamp(t)
        or (pa.types.is_dictionary(t) and _comparable(t.value_type))
    )


def _quote(text: str) -> str | None:
    if any(ord(ch) < 32 for ch in text) or "\\" in text:
        return None
    return "'" + text.replace("'", "''") + "'"


def _literal(v: object, t: pa.DataType) -> str | None:
    if v is None:
        return None
    if pa.types.is_dictionary(t):
        t = t.value_type
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int) and pa.types.is_integer(t):
        return str(v)
    if isinstance(v, float):
        return None if math.isnan(v) or math.isinf(v) else repr(v)
    if isinstance(v, decimal.Decimal):
        return str(v) if v.is_finite() else None
    if isinstance(v, str):
        return _quote(v)
    if isinstance(v, dt.datetime):
        return f"TIMESTAMP '{v.replace(tzinfo=None).isoformat(sep=' ')}'"
    if isinstance(v, dt.date):
        return f"DATE '{v.isoformat()}'"
    return None


def _below_above(lo: object, hi: object) -> tuple[object, object]:
    """A value just below ``lo`` and one just above ``hi`` (None where there is none)."""
    if isinstance(lo, bool) or isinstance(hi, bool):
        return None, None
    if isinstance(lo, int) and isinstance(hi, int):
        return lo - 1, hi + 1
    if isinstance(lo, float) and isinstance(hi, float):
        return lo - 1.0, hi + 1.0
    if isinstance(lo, decimal.Decimal) and isinstance(hi, decimal.Decimal):
        return lo - 1, hi + 1
    if isinstance(lo, str) and isinstance(hi, str):
        return (lo[:-1] if lo else None), hi + "~"
    if isinstance(lo, dt.datetime) and isinstance(hi, dt.datetime):
        try:
            return lo - dt.timedelta(seconds=1), hi + dt.timedelta(seconds=1)
        except OverflowError:
            return None, None
    if isinstance(lo, dt.date) and isinstance(hi, dt.date):
        try:
            return lo - dt.timedelta(days=1), hi + dt.timedelta(days=1)
        except OverflowError:
            return None, None
    return None, None


def _predicates(name: str, column: pa.ChunkedArray) -> list[str]:
    q = "`" + name.replace("`", "``") + "`"
    out = [f"{q} IS NULL", f"{q} IS NOT NULL"]
    t = column.type
    values = column.drop_null()
    if pa.types.is_dictionary(t):
        values = values.cast(t.value_type)
    if pa.types.is_floating(values.type):
        values = values.filter(pc.invert(pc.is_nan(values)))
    if len(values) == 0:
        return out
    try:
        ordered = pc.sort_indices(values)
        lo = values[ordered[0].as_py()].as_py()
        hi = values[ordered[len(values) - 1].as_py()].as_py()
        mid = values[ordered[len(values) // 2].as_py()].as_py()
    except (pa.ArrowException, OverflowError, ValueError):
        return out
    below, above = _below_above(lo, hi)
    lits = {k: _literal(v, t) for k, v in (("lo", lo), ("hi", hi), ("mid", mid), ("below", below), ("above", above))}
    ops = {
        "below": (">", ">=", "="),
        "lo": ("<", "<=", "=", ">"),
        "mid": ("=", "<", ">=", "<>"),
        "hi": (">", ">=", "=", "<"),
        "above": ("<", "<=", "="),
    }
    for key, key_ops in ops.items():
        lit = lits[key]
        if lit is not None:
            out += [f"{q} {op} {lit}" for op in key_ops]
    if lits["lo"] is not None and lits["hi"] is not None:
        out.append(f"{q} IN ({lits['lo']}, {lits['hi']})")
        out.append(f"NOT ({q} IN ({lits['lo']}, {lits['hi']})) OR {q} IS NULL")
    return out


def _key(v: object) -> str:
    return "NaN" if isinstance(v, float) and math.isnan(v) else repr(v)


def _keys(values: pa.ChunkedArray | pa.Array) -> list[str]:
    """Sortable keys of values (timestamps as integers: years Python cannot hold stay comparable)."""
    t = values.type
    if pa.types.is_dictionary(t):
        values = values.cast(t.value_type)
    if pa.types.is_timestamp(values.type):
        values = values.cast(pa.int64())
    return sorted(map(_key, values.to_pylist()))


def _files() -> list[str]:
    return [str(p.relative_to(DATA)) for p in data_files()]


@pytest.mark.parametrize("name", _files())
def test_pruning_never_loses_rows(name: str) -> None:
    path = str(DATA / name)
    try:
        whole = lazyscan.scan(path).to_table()
    except LazyScanError:
        return  # refused cleanly: the tests of bad input and of other writers' files own it
    names = [f.name for f in whole.schema if _comparable(f.type)]
    large = whole.num_rows > LARGE
    if large:
        names = names[:1]
    checked = 0
    for column in names[:COLUMNS_PER_FILE]:
        predicates = _predicates(column, whole.column(column))
        for where in predicates[::4] if large else predicates:
            try:
                s = lazyscan.scan(path, where=where, columns=[column])
                got = s.to_table()
            except PredicateError:
                continue
            expected = whole.column(column).filter(pa.array(evaluate(s.bound, whole)))
            assert got.num_rows == len(expected), f"{name}: {where}"
            assert _keys(got.column(0)) == _keys(expected), f"{name}: {where}"
            checked += 1
    if names and whole.num_rows:
        assert checked > 0, name


def test_every_file_is_tried() -> None:
    files = _files()
    assert any(f.endswith(".orc") for f in files) and any(f.endswith(".parquet") for f in files)
    assert {"foreign-files/streaming.orc", "foreign-files/h2oai_group_small.parquet"} <= set(files)
    assert all((DATA / f).is_file() for f in files) and Path(DATA).is_dir()
