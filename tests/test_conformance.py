"""Every Parquet and ORC file in ``tests/data`` read by lazyscan equals a reference reader's
reading, and pruning never removes a matching row.

For each file (``tests.support.data.data_files()``), five checks, each a test of its own:

- ``whole``: ``lazyscan.scan(path).to_table()`` against pyarrow's reading of the file;
- ``units``: every row group (``ParquetFile.read_row_group``) or stripe (``OrcFile.read_stripe``)
  against pyarrow's reading of it;
- ``selections``: random row selections of some row groups or stripes, read column by column
  (``read_column`` with row indices and with ``RowRanges``) and, for Parquet, in one pass
  (``read_columns``, ``read_row_group(rows=...)``), against pyarrow's rows at the same indices;
- ``predicates``: predicates on each filterable top-level column (``IS NULL``, ``IS NOT NULL``
  and a seeded sample of ``=``, ``<``, ``>=``, ``IN``, ``BETWEEN`` with values drawn from the
  column, its minimum and maximum among them, NaN where it holds one), scanned with pushdown
  off, against the reference's rows filtered by ``pyarrow.compute`` under Spark's semantics
  (three-valued logic, NaN equal to NaN and above every other value);
- ``pruning``: the same predicates with every pruning tier on (the default) give the rows of
  pushdown off: no tier removed a matching row (a failure names the tiers that lose rows alone).

A predicate no row satisfies is tried on every file by ``tests/test_empty_results.py``.

Types are checked (after decoding dictionaries and unwrapping extension types; an ORC
timestamp may come in another unit than pyarrow's nanoseconds), NaN equals NaN, nulls count.
A file the reference refuses must give a :class:`lazyscan.errors.LazyScanError` on every path,
never another exception. Where the reference is wrong or refuses a file lazyscan reads
correctly, :data:`REFERENCES` names the reader used instead, with the reason and its source.

:data:`KNOWN_FAILURES` lists the checks that fail today for the classes of issue 33 still being
fixed; they are strict xfails, so a fix that makes one pass fails the suite until its entry is
removed here. The random choices are seeded per file (CRC-32 of its name): runs are repeatable.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import zlib
import zoneinfo
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as porc
import pyarrow.parquet as pq
import pytest

import lazyscan
from lazyscan.errors import LazyScanError, UnsupportedFeatureError
from lazyscan.orc import OrcFile
from lazyscan.parquet import ParquetFile, RowRanges
from tests.support.data import DATA, data_files
from tests.support.predicates import Predicate, comparable, filterable, filtered, sql_literal
from tests.support.tables import assert_same_table, column_difference, table_difference
from tests.test_parquet_testing_files import _selections

CHECKS = ("whole", "units", "selections", "predicates", "pruning")

#: (file, check) -> why it fails today; strict xfails, removed when the fix lands
KNOWN_FAILURES: dict[tuple[str, str], str] = {
}

#: files lazyscan refuses on purpose, with the error class and the word of docs/FORMATS.md for it
LAZYSCAN_REFUSES: dict[str, tuple[type[LazyScanError], str]] = {
    # docs/FORMATS.md, "Limits": "ORC files that are encrypted, LZO-compressed or whose root type is not a struct"
    "orc-testing/TestVectorOrcFile.testLzo.orc": (UnsupportedFeatureError, "LZO compression is not supported"),
}

#: files pyarrow takes seconds to refuse (it decompresses 2 GiB of map values first): not asked
PYARROW_SLOW_TO_REFUSE = {"parquet-testing/large_string_map.brotli.parquet"}

#: at most this many row groups or stripes per file get random row selections
SELECTED_UNITS = 3
#: predicates per file, fewer on files of many rows (whose filtered scans read two columns only)
PREDICATES_SMALL, PREDICATES_LARGE, LARGE_ROWS = 24, 6, 30_000

NAMES = [str(p.relative_to(DATA)) for p in data_files()]


def _cases() -> list[Any]:
    """(file, check) pairs, file by file so that each file's references are built once."""
    out = []
    for name in NAMES:
        for check in CHECKS:
            reason = KNOWN_FAILURES.get((name, check))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(name, check, id=f"{name}:{check}", marks=marks))
    return out


def _rng(name: str, check: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(f"{name}:{check}".encode()))


def _is_orc(name: str) -> bool:
    return name.endswith(".orc")


# ---- the reference ----------------------------------------------------------------------------


@dataclass
class Reference:
    """What the reference reader makes of a file: the whole table and each row group or stripe
    (None where it refuses), and why it refuses."""

    whole: pa.Table | None
    units: list[pa.Table | None]
    refused: str | None = None


def _storage(table: pa.Table) -> pa.Table:
    """Extension columns (JSON, UUID, ...) as their storage, which pyarrow.compute can filter."""
    for i, field in enumerate(table.schema):
        if isinstance(field.type, pa.BaseExtensionType):
            column = pa.chunked_array([c.storage for c in table.column(i).chunks], field.type.storage_type)
            table = table.set_column(i, field.with_type(field.type.storage_type), column)
    return table


def _pyarrow_parquet(path: Path) -> Reference:
    """pyarrow's reading of the whole file, cut into row groups (``ParquetFile.read_row_group``
    leaves out a group column without leaves, ``read_table`` keeps it)."""
    try:
        meta = pq.read_metadata(path)
        counts = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
        # page checksums verified as lazyscan does by default (verify_checksums)
        whole = _storage(pq.read_table(path, coerce_int96_timestamp_unit="us", page_checksum_verification=True))
    except Exception as e:  # every refusal is the reference's answer, whatever pyarrow raises
        return Reference(None, [], f"{type(e).__name__}: {e}")
    starts = np.cumsum([0, *counts])
    return Reference(whole, [whole.slice(int(a), int(b - a)) for a, b in itertools.pairwise(starts)])


def _pyarrow_orc(path: Path) -> Reference:
    try:
        f = porc.ORCFile(str(path))
        schema = f.schema
    except Exception as e:
        return Reference(None, [], f"{type(e).__name__}: {e}")
    units: list[pa.Table | None] = []
    refused = None
    for s in range(f.nstripes):
        try:
            units.append(_storage(pa.Table.from_batches([f.read_stripe(s)])))
        except Exception as e:
            units.append(None)
            refused = refused or f"stripe {s}: {type(e).__name__}: {e}"
    if refused:
        return Reference(None, units, refused)
    whole = pa.concat_tables(units) if units else schema.empty_table()  # type: ignore[arg-type]
    return Reference(whole, units)


def _pyorc_reading(path: Path) -> Reference:
    """pyorc's reading (the ORC C++ reader), timestamps in microseconds: Python's datetime holds
    years 1 to 9999, as Spark's TimestampType does."""
    import pyorc

    ours = OrcFile(path)
    units: list[pa.Table | None] = []
    with path.open("rb") as fh:
        reader = pyorc.Reader(fh, timezone=zoneinfo.ZoneInfo("UTC"))
        for s in range(reader.num_of_stripes):
            rows = list(reader.read_stripe(s))
            columns = {}
            for i, c in enumerate(ours.columns):
                values = [r[i] for r in rows]
                t = c.arrow_type
                if pa.types.is_timestamp(t):
                    values = [v.replace(tzinfo=None) if v is not None else None for v in values]
                    t = pa.timestamp("us", t.tz)
                columns[c.name] = pa.array(values, t)
            units.append(pa.table(columns))
    return Reference(pa.concat_tables(units) if units else None, units)


def _int96_from_spark(path: Path) -> Reference:
    """pyarrow's reading with column ``a`` as Spark reads it: its .md lists the values Spark wrote
    (years 9999 and 290000 among them), which pyarrow wraps even in microseconds."""
    ref = _pyarrow_parquet(path)
    spark_us = [1704141296123456, 1704070800000000, 253402225200000000, 1735599600000000, None, 9089380393200000000]
    column = pa.array(spark_us, pa.int64()).cast(pa.timestamp("us"))
    assert ref.whole is not None and len(ref.units) == 1
    fixed = ref.whole.set_column(0, "a", column)
    return Reference(fixed, [fixed])


#: files whose reference is not pyarrow's reading, with the reason
REFERENCES: dict[str, tuple[Callable[[Path], Reference], str]] = {
    "parquet-testing/int96_from_spark.parquet": (
        _int96_from_spark,
        "pyarrow wraps INT96 values beyond the nanosecond range even when asked for microseconds; "
        "Spark reads them (parquet-testing's int96_from_spark.md)",
    ),
    "foreign-files/TestOrcFile.largeTimestamps.orc": (
        _pyorc_reading,
        "pyarrow refuses ORC timestamps outside the nanosecond range (ArrowInvalid 'out of range for "
        "nanosecond resolution'); the ORC C++ reader through pyorc reads them (issue 33 class 1)",
    ),
}


@functools.lru_cache(maxsize=1)
def reference(name: str) -> Reference:
    path = DATA / name
    if name in REFERENCES:
        return REFERENCES[name][0](path)
    if name in PYARROW_SLOW_TO_REFUSE:
        return Reference(None, [], "pyarrow refuses it after seconds of work")
    return _pyarrow_orc(path) if _is_orc(name) else _pyarrow_parquet(path)


def _unit_free(name: str) -> bool:
    return _is_orc(name)


def _refusal_expected(action: Callable[[], object]) -> None:
    """The file is refused by the reference: the action raises a lazyscan error (or, for a file
    with some readable parts, succeeds), never another exception."""
    with contextlib.suppress(LazyScanError):
        action()


def _lazyscan_refuses(name: str, action: Callable[[], object]) -> None:
    cls, text = LAZYSCAN_REFUSES[name]
    with pytest.raises(cls, match=text):
        action()


def _scan(name: str, where: str | None = None, columns: tuple[str, ...] | None = None, **options: Any) -> pa.Table:
    return lazyscan.scan(str(DATA / name), columns=columns, where=where, threads=1, **options).to_table()


@functools.lru_cache(maxsize=1)
def whole_scan(name: str) -> pa.Table:
    return _scan(name)


# ---- whole files and units --------------------------------------------------------------------


def check_whole(name: str) -> None:
    if name in LAZYSCAN_REFUSES:
        _lazyscan_refuses(name, lambda: whole_scan(name))
        return
    ref = reference(name)
    if ref.whole is None:
        with pytest.raises(LazyScanError):
            whole_scan(name)
        return
    assert_same_table(whole_scan(name), ref.whole, name, _unit_free(name))


def _read_units(name: str) -> list[Callable[[], pa.Table]]:
    path = DATA / name
    if _is_orc(name):
        f = OrcFile(path)
        return [functools.partial(f.read_stripe, s) for s in range(f.num_stripes)]
    pf = ParquetFile(str(path))
    return [functools.partial(pf.read_row_group, rg) for rg in range(pf.num_row_groups)]


def check_units(name: str) -> None:
    if name in LAZYSCAN_REFUSES:
        _lazyscan_refuses(name, lambda: [read() for read in _read_units(name)])
        return
    ref = reference(name)
    if ref.whole is None:
        with pytest.raises(LazyScanError):
            for read in _read_units(name):
                read()
        return
    readers = _read_units(name)
    assert len(readers) == len(ref.units), f"{name}: {len(readers)} units, the reference {len(ref.units)}"
    kind = "stripe" if _is_orc(name) else "row group"
    for i, (read, want) in enumerate(zip(readers, ref.units)):
        assert want is not None
        assert_same_table(read(), want, f"{name} {kind} {i}", _unit_free(name))


# ---- row selections ---------------------------------------------------------------------------


def _chosen_units(n_units: int, rng: np.random.Generator) -> list[int]:
    if n_units <= SELECTED_UNITS:
        return list(range(n_units))
    middle = rng.choice(np.arange(1, n_units - 1), SELECTED_UNITS - 2, replace=False)
    return sorted({0, n_units - 1, *middle.tolist()})


def _unit_selections(n: int, stride: int, rng: np.random.Generator) -> list[np.ndarray]:
    """A few of the parquet-testing test's selections, plus runs across row-group (ORC
    row-index stride) boundaries."""
    all_of_them = _selections(n, rng)
    picks = [all_of_them[i] for i in rng.choice(len(all_of_them), min(4, len(all_of_them)), replace=False)]
    if 0 < stride < n:
        edge = stride * int(rng.integers(1, max(2, n // stride + 1)))
        edge = min(edge, n - 1)
        picks.append(np.arange(max(0, edge - 2), min(n, edge + 2)))
    return picks


def _check_parquet_selections(name: str, ref: Reference, rng: np.random.Generator) -> int:
    pf = ParquetFile(str(DATA / name))
    flat = [d for d in pf.schema.columns if d.flat]
    checked = 0
    for rg in _chosen_units(pf.num_row_groups, rng):
        want_rg = ref.units[rg]
        assert want_rg is not None
        n = want_rg.num_rows
        if n == 0:
            continue
        for sel in _unit_selections(n, 0, rng):
            take = pa.array(sel, pa.int64())
            want = want_rg.take(take)
            where = f"{name} row group {rg}, {len(sel)} rows from {sel[:3].tolist()}"
            for d in flat:
                got = pf.read_column(rg, d.index, sel)
                why = column_difference(got, want.column(d.top_level_field))
                assert why is None, f"{where}, read_column({d.name!r}): {why}"
            ranges = RowRanges.from_indices(sel)
            for d in flat:
                why = column_difference(pf.read_column(rg, d.index, ranges), want.column(d.top_level_field))
                assert why is None, f"{where}, read_column({d.name!r}, RowRanges): {why}"
            if flat:
                arrays = pf.read_columns(rg, [d.index for d in flat], ranges)
                for d, got in zip(flat, arrays):
                    why = column_difference(got, want.column(d.top_level_field))
                    assert why is None, f"{where}, read_columns: {d.name!r}: {why}"
            assert_same_table(pf.read_row_group(rg, rows=sel), want, f"{where}, read_row_group")
            checked += 1
    return checked


def _check_orc_selections(name: str, ref: Reference, rng: np.random.Generator) -> int:
    f = OrcFile(DATA / name)
    checked = 0
    for s in _chosen_units(f.num_stripes, rng):
        want_stripe = ref.units[s]
        assert want_stripe is not None
        n = want_stripe.num_rows
        if n == 0:
            continue
        for sel in _unit_selections(n, f.row_index_stride, rng):
            want = want_stripe.take(pa.array(sel, pa.int64()))
            where = f"{name} stripe {s}, {len(sel)} rows from {sel[:3].tolist()}"
            for c in f.columns:
                for rows in (sel, RowRanges.from_indices(sel)):
                    why = column_difference(f.read_column(s, c.name, rows), want.column(c.name), True)
                    assert why is None, f"{where}, read_column({c.name!r}, {type(rows).__name__}): {why}"
            checked += 1
    return checked


def _all_selections(name: str) -> None:
    rng = _rng(name, "selections")
    if _is_orc(name):
        f = OrcFile(DATA / name)
        for s in range(f.num_stripes):
            n = f.stripe(s).number_of_rows
            for sel in _unit_selections(n, f.row_index_stride, rng) if n else []:
                for c in f.columns:
                    f.read_column(s, c.name, sel)
        return
    pf = ParquetFile(str(DATA / name))
    for rg in range(pf.num_row_groups):
        n = pf.metadata.row_groups[rg].num_rows
        for sel in _unit_selections(n, 0, rng) if n else []:
            pf.read_row_group(rg, rows=sel)


def check_selections(name: str) -> None:
    if name in LAZYSCAN_REFUSES:
        _lazyscan_refuses(name, lambda: _all_selections(name))
        return
    ref = reference(name)
    if ref.whole is None:
        _refusal_expected(lambda: _all_selections(name))
        return
    rng = _rng(name, "selections")
    if _is_orc(name):
        _check_orc_selections(name, ref, rng)
    else:
        _check_parquet_selections(name, ref, rng)


# ---- predicates -------------------------------------------------------------------------------


def _column_predicates(name: str, arr: pa.Array, rng: np.random.Generator) -> list[Predicate]:
    """``IS NULL``, comparisons with NaN where the column holds one, then in a seeded random order
    ``IS NOT NULL`` and comparisons with values drawn from the column, its minimum and maximum
    among them."""
    nulls = [Predicate(name, "IS NULL", ()), Predicate(name, "IS NOT NULL", ())]
    arr = comparable(arr)
    values = arr.drop_null()
    if len(values) == 0:
        return nulls
    nan = pa.types.is_floating(values.type) and pc.any(pc.is_nan(values)).as_py()
    numbers = values.filter(pc.invert(pc.is_nan(values))) if nan else values
    pool: list[pa.Scalar] = []
    if len(numbers):
        mm = pc.min_max(numbers)
        pool += [mm["min"], mm["max"]]
    pool += [values[int(i)] for i in rng.integers(0, len(values), 4)]
    pool = [v for v in pool if sql_literal(v) is not None]
    if not pool:
        return nulls
    lo, hi = (pool[0], pool[1]) if len(numbers) and len(pool) > 1 else (pool[0], pool[0])
    pick = [pool[int(i)] for i in rng.integers(0, len(pool), 4)]
    others = [
        Predicate(name, "=", (pick[0],)),
        Predicate(name, "=", (lo,)),
        Predicate(name, "<", (lo,)),
        Predicate(name, "<", (pick[1],)),
        Predicate(name, ">=", (hi,)),
        Predicate(name, ">=", (pick[2],)),
        Predicate(name, "IN", (pick[3], hi, pick[0])),
        Predicate(name, "BETWEEN", (lo, pick[1])),
    ]
    others.append(nulls[1])
    others = [others[int(i)] for i in rng.permutation(len(others))]
    if nan:  # first: NaN is where readers and writers disagree most
        nan_value = values.filter(pc.is_nan(values))[0]
        others = [Predicate(name, "IN", (nan_value, lo)), Predicate(name, "=", (nan_value,)), Predicate(name, ">=", (nan_value,)), *others]
    return [nulls[0], *others]


@functools.lru_cache(maxsize=1)
def predicates(name: str) -> tuple[Predicate, ...]:
    """The predicates tried on a file, at most :data:`PREDICATES_SMALL` (files of many rows:
    :data:`PREDICATES_LARGE`): first each filterable top-level column's ``IS NULL`` (null counts
    are what writers get wrong most), then the columns' other predicates in turns, the columns
    in a seeded random order."""
    ref = reference(name)
    if ref.whole is None:
        return ()
    rng = _rng(name, "predicates")
    columns = [(f.name, c) for f, c in zip(ref.whole.schema, ref.whole.columns) if filterable(f.type)]
    rng.shuffle(columns)  # type: ignore[arg-type]
    per_column = [_column_predicates(n, c.combine_chunks(), rng) for n, c in columns]
    ordered = [ps[0] for ps in per_column]
    for turn in range(1, max((len(ps) for ps in per_column), default=0)):
        ordered += [ps[turn] for ps in per_column if turn < len(ps)]
    budget = PREDICATES_LARGE if ref.whole.num_rows > LARGE_ROWS else PREDICATES_SMALL
    return tuple(ordered[:budget])


@functools.lru_cache(maxsize=64)
def filtered_scan(name: str, where: str, columns: tuple[str, ...] | None, **options: Any) -> pa.Table:
    return _scan(name, where, columns, **options)


def _output_columns(name: str, p: Predicate) -> tuple[str, ...] | None:
    """All columns, or on files of many rows the predicate's column and one other."""
    ref = reference(name)
    assert ref.whole is not None
    if ref.whole.num_rows <= LARGE_ROWS:
        return None
    other = next((c for c in ref.whole.column_names if c != p.column), None)
    return (p.column,) if other is None else (p.column, other)


def _refused_predicates(name: str) -> None:
    f = _scan(name)  # the whole scan, or the first column's predicate, must fail cleanly
    if f.num_columns:
        _scan(name, f"`{f.column_names[0]}` IS NOT NULL")


def check_predicates(name: str) -> None:
    """Every row read, then filtered by lazyscan (pushdown off), against the reference's rows
    filtered by pyarrow.compute: decoding and the predicate's semantics."""
    if name in LAZYSCAN_REFUSES:
        _lazyscan_refuses(name, lambda: _scan(name, "true"))
        return
    ref = reference(name)
    if ref.whole is None:
        _refusal_expected(lambda: _refused_predicates(name))
        return
    failures = []
    for p in predicates(name):
        where = p.sql()
        columns = _output_columns(name, p)
        want = filtered(ref.whole, p.mask(ref.whole.column(p.column)))
        if columns is not None:
            want = want.select(list(columns))
        try:
            got = filtered_scan(name, where, columns, pushdown=False)
        except LazyScanError as e:
            failures.append(f"{where}: {type(e).__name__}: {e}")
            continue
        why = table_difference(got, want, _unit_free(name))
        if why:
            failures.append(f"{where}: {why}")
    assert not failures, f"{name}: {len(failures)} of {len(predicates(name))} predicates differ:\n" + "\n".join(failures)


#: the pruning tiers a failing predicate is tried with one at a time, to name the one at fault
TIERS = ("prune_statistics", "prune_bloom", "prune_dictionary", "prune_page_index")


def _tiers_at_fault(name: str, where: str, columns: tuple[str, ...] | None, plain: pa.Table) -> list[str]:
    at_fault = []
    for tier in TIERS:
        alone = {t: t == tier for t in TIERS}
        try:
            if table_difference(filtered_scan(name, where, columns, **alone), plain):
                at_fault.append(tier)
        except LazyScanError:
            at_fault.append(tier)
    return at_fault


def check_pruning(name: str) -> None:
    """Every pruning tier on (the default) gives the rows of pushdown off: no tier removed a
    matching row. A failure names the tiers that lose rows on their own."""
    if name in LAZYSCAN_REFUSES:
        _lazyscan_refuses(name, lambda: _scan(name, "true", None, pushdown=False))
        return
    if reference(name).whole is None:
        _refusal_expected(lambda: _refused_predicates(name))
        return
    failures = []
    for p in predicates(name):
        where = p.sql()
        columns = _output_columns(name, p)
        try:
            plain = filtered_scan(name, where, columns, pushdown=False)
        except LazyScanError:
            continue  # the predicates check reports it
        try:
            pruned = filtered_scan(name, where, columns)
        except LazyScanError as e:
            failures.append(f"{where}: {type(e).__name__}: {e}")
            continue
        why = table_difference(pruned, plain)
        if why:
            tiers = _tiers_at_fault(name, where, columns, plain)
            failures.append(f"{where}: pruned {why.replace('the reference', 'unpruned')} (alone, {tiers or 'no tier'} lose rows)")
    assert not failures, f"{name}: pruning changed the rows of {len(failures)} predicates:\n" + "\n".join(failures)


CHECK_FUNCTIONS: dict[str, Callable[[str], None]] = {
    "whole": check_whole,
    "units": check_units,
    "selections": check_selections,
    "predicates": check_predicates,
    "pruning": check_pruning,
}


@pytest.mark.parametrize(("name", "check"), _cases())
def test_file(name: str, check: str) -> None:
    CHECK_FUNCTIONS[check](name)
