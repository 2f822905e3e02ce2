"""Pruning, dictionary and Bloom answers are sound: checked against evaluation on the data.

For random tables cut into random chunks, statistics are computed from each chunk the way a
writer records them (NaN out of min/max, nan_count present or not, truncated binary bounds,
loosened bounds, missing columns); then for every random predicate: CANNOT_MATCH means no row of
the chunk is kept, MUST_MATCH means every row is kept. Boundary tests probe min-1 / min / max /
max+1 with the expected answer and its reason.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from lazyscan.errors import PredicateError
from lazyscan.format.statistics import ColumnStats
from lazyscan.predicate import (
    Answer,
    bind,
    col,
    evaluate,
    evaluate_bloom,
    evaluate_on_dictionary,
    evaluate_statistics,
    null_passes,
    parse_predicate,
    referenced_columns,
    split_conjuncts,
)
from lazyscan.predicate.prune import merge_statistics
from tests.support.random_data import (
    column_statistics,
    random_predicate,
    random_table,
    table_statistics,
)

CANNOT, MIGHT, MUST = Answer.CANNOT_MATCH, Answer.MIGHT_MATCH, Answer.MUST_MATCH


def _chunks(table: pa.Table, rng: np.random.Generator) -> list[pa.Table]:
    out, start = [], 0
    while start < table.num_rows:
        size = int(rng.choice([1, 2, 3, 5, 8, 13, 30]))
        out.append(table.slice(start, size))
        start += size
    return out


def _loosen(stats: ColumnStats, t: pa.DataType, rng: np.random.Generator) -> ColumnStats:
    """Wider (still valid) bounds, as a writer with coarse statistics would record."""
    lo, hi = stats.min, stats.max
    if lo is None or rng.random() < 0.5:
        return stats
    if isinstance(lo, bool):
        return dataclasses.replace(stats, min=False, max=True, min_exact=False, max_exact=False)
    if isinstance(lo, int):
        lo, hi = lo - int(rng.integers(0, 3)), hi + int(rng.integers(0, 3))
        if pa.types.is_unsigned_integer(t):
            lo = max(lo, 0)
    elif isinstance(lo, float):
        lo, hi = lo - float(rng.random()), hi + float(rng.random())
    elif isinstance(lo, bytes):
        lo = lo[: int(rng.integers(0, len(lo) + 1))]
    return dataclasses.replace(stats, min=lo, max=hi, min_exact=False, max_exact=False)


def _statistics(chunk: pa.Table, rng: np.random.Generator, variant: int) -> dict[str, ColumnStats]:
    if variant == 0:
        return table_statistics(chunk)
    if variant == 1:
        return table_statistics(chunk, with_nan_count=False)
    if variant == 2:
        return table_statistics(chunk, truncate=1)
    stats = {}
    for name in chunk.column_names:
        if rng.random() < 0.2:
            continue  # no statistics for this column
        s = column_statistics(chunk.column(name), with_nan_count=bool(rng.random() < 0.5))
        s = _loosen(s, chunk.schema.field(name).type, rng)
        if rng.random() < 0.2:
            s = dataclasses.replace(s, null_count=None)
        stats[name] = s
    return stats


@pytest.mark.parametrize("seed", range(6))
def test_statistics_pruning_is_sound(seed: int) -> None:
    rng = np.random.default_rng(500 + seed)
    table = random_table(rng, 160, null_fraction=[0.05, 0.3, 0.6][seed % 3])
    chunks = _chunks(table, rng)
    answers: Counter[Answer] = Counter()
    for _ in range(60):
        expr = random_predicate(rng, table.schema, 3)
        bound = bind(expr, table.schema)
        for chunk in chunks:
            stats = _statistics(chunk, rng, int(rng.integers(0, 4)))
            answer = evaluate_statistics(bound, stats)
            answers[answer] += 1
            if answer is MIGHT:
                continue
            mask = evaluate(bound, chunk)
            if answer is CANNOT:
                assert not mask.any(), f"{bound} pruned but rows match: {stats}"
            else:
                assert mask.all(), f"{bound} must match but rows are dropped: {stats}"
    # pruning must actually happen, not only MIGHT_MATCH
    assert answers[CANNOT] > 0.1 * sum(answers.values()), answers
    assert answers[MUST] > 0.02 * sum(answers.values()), answers


@pytest.mark.parametrize("seed", range(3))
def test_conjunct_pruning_is_sound(seed: int) -> None:
    """The scan prunes with each conjunct separately: every one must be sound on its own."""
    rng = np.random.default_rng(900 + seed)
    table = random_table(rng, 120)
    chunks = _chunks(table, rng)
    for _ in range(40):
        expr = random_predicate(rng, table.schema, 3)
        for conjunct in split_conjuncts(bind(expr, table.schema)):
            for chunk in chunks:
                answer = evaluate_statistics(conjunct, table_statistics(chunk))
                mask = evaluate(conjunct, chunk)
                assert answer is not CANNOT or not mask.any(), conjunct
                assert answer is not MUST or mask.all(), conjunct


@pytest.mark.parametrize("seed", range(4))
def test_merged_statistics_prune_only_what_every_part_prunes(seed: int) -> None:
    """Statistics merged over neighbouring chunks (how the Spark chooser skips blocks of row
    groups at once) rule out a predicate only when every chunk's own statistics do, and the
    merged answer still prunes row groups of clustered data."""
    rng = np.random.default_rng(1300 + seed)
    table = random_table(rng, 200, null_fraction=[0.0, 0.1, 0.4, 0.9][seed])
    if seed % 2:  # clustered: sorted on the first column, so merged blocks still prune
        table = table.sort_by([(table.column_names[0], "ascending")])
    chunks = _chunks(table, rng)
    pruned = checked = 0
    for _ in range(50):
        bound = bind(random_predicate(rng, table.schema, 3), table.schema)
        for b0 in range(0, len(chunks), 4):
            block = chunks[b0 : b0 + 4]
            parts = [_statistics(chunk, rng, int(rng.integers(0, 4))) for chunk in block]
            names = set.intersection(*(set(p) for p in parts))
            merged = {name: merge_statistics([p[name] for p in parts]) for name in names}
            checked += 1
            if evaluate_statistics(bound, merged) is CANNOT:
                pruned += 1
                for chunk, stats in zip(block, parts):
                    assert evaluate_statistics(bound, stats) is CANNOT, (bound, merged, stats)
                    assert not evaluate(bound, chunk).any()
    assert pruned > 0.03 * checked, (pruned, checked)


def test_merged_statistics_bounds_and_counts() -> None:
    a = ColumnStats(3, 9, 1, 10, nan_count=None)
    b = ColumnStats(-2, 5, 0, 4)
    nulls = ColumnStats(None, None, 6, 6)
    m = merge_statistics([nulls, a, b])
    assert (m.min, m.max, m.null_count, m.num_values) == (-2, 9, 7, 20)
    assert m.nan_count is None and not m.min_exact and not m.max_exact
    unknown = merge_statistics([a, ColumnStats(None, 7, 0, 3)])
    assert unknown.min is None and unknown.max == 9
    f = merge_statistics([ColumnStats(1.0, 2.0, 0, 2, nan_count=0), ColumnStats(math.nan, 4.0, 0, 2, nan_count=1)])
    assert f.min is None and f.max == 4.0 and f.nan_count == 1


# ---------------------------------------------------------------------------------------------
# boundary probes

INT_SCHEMA = pa.schema([("x", pa.int32()), ("f", pa.float64()), ("s", pa.string())])


def _answer(sql: str, **stats: ColumnStats) -> Answer:
    return evaluate_statistics(bind(parse_predicate(sql), INT_SCHEMA), stats)


X = ColumnStats(min=5, max=10, null_count=0, num_values=100)
X_NULLS = ColumnStats(min=5, max=10, null_count=3, num_values=100)
X_ONE = ColumnStats(min=5, max=5, null_count=0, num_values=100)
X_ALL_NULL = ColumnStats(min=None, max=None, null_count=100, num_values=100)
F_NAN_UNKNOWN = ColumnStats(min=5.0, max=10.0, null_count=0, num_values=100, nan_count=None)
F_NO_NAN = ColumnStats(min=5.0, max=10.0, null_count=0, num_values=100, nan_count=0)
F_ONLY_NAN = ColumnStats(min=None, max=None, null_count=0, num_values=100, nan_count=100)
S = ColumnStats(min=b"abc", max=b"abd", null_count=0, num_values=10)
S_TRUNCATED = ColumnStats(
    min=b"ab", max=b"ac", null_count=0, num_values=10, min_exact=False, max_exact=False
)


@pytest.mark.parametrize(
    ("sql", "stats", "expected", "reason"),
    [
        ("x < 5", X, CANNOT, "min is 5: nothing below it"),
        ("x < 6", X, MIGHT, "min-1 < 6 holds for the minimum only"),
        ("x <= 5", X, MIGHT, "the minimum may equal 5"),
        ("x < 5.5", X, MIGHT, "x < 5.5 is x <= 5"),
        ("x > 10", X, CANNOT, "max is 10"),
        ("x >= 10", X, MIGHT, "the maximum may equal 10"),
        ("x >= 5", X, MUST, "every value is >= min, no NULLs"),
        ("x >= 5", X_NULLS, MIGHT, "NULL rows are dropped"),
        ("x >= 4.5", X, MUST, "x >= 4.5 is x >= 5"),
        ("x <= 10", X, MUST, "every value is <= max"),
        ("x = 4", X, CANNOT, "min-1"),
        ("x = 11", X, CANNOT, "max+1"),
        ("x = 7.5", X, CANNOT, "an integer is never 7.5"),
        ("x != 7.5", X, MUST, "an integer is never 7.5, no NULLs"),
        ("x = 5", X_ONE, MUST, "min = max = 5"),
        ("x != 5", X_ONE, CANNOT, "min = max = 5"),
        ("NOT (x = 5)", X_ONE, CANNOT, "NOT of a must-match"),
        ("NOT (x = 5)", X, MIGHT, "values other than 5 exist"),
        ("NOT (x > 7)", X, MIGHT, "both outcomes possible"),
        ("NOT (x > 10)", X, MUST, "x > 10 is false for every row"),
        ("NOT (x > 10)", X_NULLS, MIGHT, "NULL rows stay NULL under NOT"),
        ("x IS NULL", X, CANNOT, "null_count is 0"),
        ("x IS NULL", X_NULLS, MIGHT, "some NULLs"),
        ("x IS NOT NULL", X, MUST, "null_count is 0"),
        ("x IS NULL", X_ALL_NULL, MUST, "every value is NULL"),
        ("x = 5", X_ALL_NULL, CANNOT, "every value is NULL"),
        ("NOT (x = 5)", X_ALL_NULL, CANNOT, "NOT NULL is NULL"),
        ("x <=> NULL", X_ALL_NULL, MUST, "null-safe equality with NULL"),
        ("NOT (x <=> 5)", X_ALL_NULL, MUST, "x <=> 5 is FALSE for NULL"),
        ("x IN (1, 2, 11)", X, CANNOT, "every value is outside [min, max]"),
        ("x IN (1, 7)", X, MIGHT, "7 is inside"),
        ("x IN (5)", X_ONE, MUST, "min = max = 5"),
        ("x NOT IN (5)", X_ONE, CANNOT, "min = max = 5"),
        ("x IN (5, NULL)", X_ONE, MUST, "5 matches"),
        ("x IN (7, NULL)", X, MIGHT, "7 may match"),
        ("x NOT IN (7, NULL)", X, CANNOT, "NOT IN with a NULL is never TRUE"),
        ("x IN (NULL)", X, CANNOT, "IN (NULL) is NULL"),
        ("x = 7 OR x IS NULL", X_ALL_NULL, MUST, "OR keeps NULL rows here"),
        ("x = 7 AND x IS NULL", X_NULLS, CANNOT, "contradiction"),
        ("x > 10 OR x < 5", X, CANNOT, "both branches are ruled out"),
        ("f > 10", F_NAN_UNKNOWN, MIGHT, "NaN may be present and NaN > 10"),
        ("f > 10", F_NO_NAN, CANNOT, "nan_count = 0 and max = 10"),
        ("f < 5", F_NAN_UNKNOWN, CANNOT, "NaN is not below 5"),
        ("f <= 10", F_NO_NAN, MUST, "no NaN, max = 10"),
        ("f <= 10", F_NAN_UNKNOWN, MIGHT, "NaN is above 10"),
        ("f = 'NaN'", F_NO_NAN, CANNOT, "no NaN"),
        ("f = 'NaN'", F_ONLY_NAN, MUST, "every value is NaN"),
        ("f > 1e300", F_ONLY_NAN, MUST, "NaN is above every number"),
        ("f < CAST('Infinity' AS DOUBLE)", F_ONLY_NAN, CANNOT, "NaN is above +inf"),
        ("s LIKE 'ab%'", S, MUST, "every value in [abc, abd] starts with ab"),
        ("s LIKE 'abc%'", S, MIGHT, "abd does not start with abc"),
        ("s LIKE 'b%'", S, CANNOT, "prefix b is above max"),
        ("s LIKE 'aa%'", S, CANNOT, "prefix aa is below min"),
        ("s LIKE '%b'", S, MIGHT, "no prefix: cannot tell"),
        ("s NOT LIKE 'ab%'", S, CANNOT, "every value starts with ab"),
        ("s = 'abe'", S, CANNOT, "above max"),
        (
            "s LIKE 'ab%'",
            S_TRUNCATED,
            MIGHT,
            "truncated max ac admits strings not starting with ab",
        ),
        ("s = 'abz'", S_TRUNCATED, MIGHT, "truncated bounds [ab, ac] contain abz"),
        ("s = 'ac0'", S_TRUNCATED, CANNOT, "above the truncated max ac"),
        ("s < 'ab'", S_TRUNCATED, CANNOT, "the truncated min ab is still a lower bound"),
    ],
)
def test_statistics_boundaries(sql: str, stats: ColumnStats, expected: Answer, reason: str) -> None:
    column = next(iter(referenced_columns(parse_predicate(sql))))
    assert _answer(sql, **{column: stats}) is expected, reason


def test_missing_statistics_are_unknown() -> None:
    assert _answer("x = 1") is MIGHT
    assert _answer("x = 1 AND f = 7", f=F_NO_NAN) is MIGHT
    assert _answer("x = 1 AND f = 20", f=F_NO_NAN) is CANNOT
    assert _answer("FALSE") is CANNOT
    assert _answer("TRUE") is MUST
    assert _answer("x IN ()") is CANNOT


def test_empty_chunk_cannot_match() -> None:
    empty = ColumnStats(min=None, max=None, null_count=0, num_values=0)
    assert _answer("x IS NULL", x=empty) is CANNOT
    assert _answer("x >= 0 OR x IS NULL", x=empty) is CANNOT


# ---------------------------------------------------------------------------------------------
# dictionaries and NULLs


@pytest.mark.parametrize("seed", range(3))
def test_dictionary_masks_and_null_passes_agree_with_evaluation(seed: int) -> None:
    """Per-code answers expanded over the codes, NULL rows from null_passes, give the same rows
    as evaluating the column itself."""
    rng = np.random.default_rng(40 + seed)
    table = random_table(rng, 150, null_fraction=0.25)
    names = [n for n in table.column_names if n != "id"]
    for name in names:
        column = table.column(name).combine_chunks()
        if isinstance(column, pa.DictionaryArray):
            encoded = column
        else:
            encoded = column.dictionary_encode()
        for _ in range(12):
            expr = random_predicate(rng, table.schema, 2, columns=[name])
            bound = bind(expr, table.schema)
            if not referenced_columns(bound):
                continue  # folded to a constant
            per_code = evaluate_on_dictionary(bound, encoded.dictionary)
            assert per_code.dtype == bool and len(per_code) == len(encoded.dictionary)
            codes = encoded.indices.fill_null(0).to_numpy(zero_copy_only=False)
            valid = encoded.indices.is_valid().to_numpy(zero_copy_only=False)
            expected = evaluate(bound, table)
            got = np.where(valid, per_code[codes], null_passes(bound))
            assert got.tolist() == expected.tolist(), f"{bound}"


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("x IS NULL", True),
        ("x IS NOT NULL", False),
        ("NOT (x = 1)", False),
        ("x = 1 OR x IS NULL", True),
        ("x <=> NULL", True),
        ("NOT (x <=> 1)", True),
        ("x <=> 1", False),
        ("x IN (1, NULL)", False),
        ("NOT (x IN (1, NULL))", False),
        ("x != 1", False),
        ("x = 1000000000000", False),
        ("NOT (x = 1000000000000)", False),
        ("x IS NULL AND NOT (x = 1)", False),
        ("x IS NULL OR x = 1 AND NULL", True),
        ("TRUE", True),
    ],
)
def test_null_passes(sql: str, expected: bool) -> None:
    bound = bind(parse_predicate(sql), INT_SCHEMA)
    assert null_passes(bound) is expected
    # agrees with evaluating a NULL value
    table = pa.table({"x": pa.array([None], pa.int32())})
    assert evaluate(bound, table).tolist() == [expected]


def test_single_column_helpers_reject_two_columns() -> None:
    bound = bind(parse_predicate("x = 1 AND f = 2"), INT_SCHEMA)
    with pytest.raises(PredicateError, match="single-column"):
        null_passes(bound)
    with pytest.raises(PredicateError, match="single-column"):
        evaluate_on_dictionary(bound, pa.array([1, 2], pa.int32()))


# ---------------------------------------------------------------------------------------------
# Bloom filters


def _bloom_key(value: Any) -> Any:
    """Values that hash the same in a Parquet Bloom filter (bit patterns: -0.0 != 0.0)."""
    if isinstance(value, float):
        return ("f", math.copysign(1.0, value), abs(value))
    return value


def _perfect_bloom(chunk: pa.Table, false_positive: float, rng: np.random.Generator) -> Any:
    from tests.support.random_data import _storage_values

    contents = {
        name: {_bloom_key(v) for v in _storage_values(chunk.column(name))}
        for name in chunk.column_names
    }
    calls: list[str] = []

    def might_contain(column: str, values: list[Any]) -> list[bool] | None:
        calls.append(column)
        if column not in contents or column == "u16":
            return None  # no Bloom filter for this column
        return [
            _bloom_key(v) in contents[column] or bool(rng.random() < false_positive) for v in values
        ]

    might_contain.calls = calls  # type: ignore[attr-defined]
    return might_contain


@pytest.mark.parametrize("seed", range(3))
def test_bloom_pruning_is_sound(seed: int) -> None:
    rng = np.random.default_rng(70 + seed)
    table = random_table(rng, 120)
    chunks = _chunks(table, rng)
    ruled_out = 0
    for _ in range(60):
        bound = bind(random_predicate(rng, table.schema, 2), table.schema)
        for chunk in chunks:
            answer = evaluate_bloom(bound, _perfect_bloom(chunk, 0.2, rng))
            assert answer in (CANNOT, MIGHT)
            if answer is CANNOT:
                ruled_out += 1
                assert not evaluate(bound, chunk).any(), f"{bound}"
    assert ruled_out > 0


def test_bloom_rules_out_absent_values() -> None:
    schema = pa.schema([("s", pa.string()), ("f", pa.float64()), ("i", pa.int64())])
    chunk = pa.table({"s": ["a", "b"], "f": [-0.0, 1.5], "i": [1, 2]}, schema=schema)
    bloom = _perfect_bloom(chunk, 0.0, np.random.default_rng(0))

    def answer(sql: str) -> Answer:
        return evaluate_bloom(bind(parse_predicate(sql), schema), bloom)

    assert answer("s = 'c'") is CANNOT
    assert answer("s = 'a'") is MIGHT
    assert answer("s IN ('c', 'd')") is CANNOT
    assert answer("s IN ('c', 'a')") is MIGHT
    assert answer("s = 'c' AND i > 0") is CANNOT, "a ruled-out conjunct rules out the AND"
    assert answer("i > 0 AND (s = 'c' OR i = 7)") is CANNOT, "every OR branch ruled out"
    assert answer("s = 'c' OR i > 0") is MIGHT, "an OR branch the filter cannot judge"
    assert answer("NOT (s = 'a')") is MIGHT, "NOT is never judged by a Bloom filter"
    assert answer("s <=> 'c'") is CANNOT
    assert answer("f = 0.0") is MIGHT, "0.0 matches the stored -0.0: both zeros are probed"
    assert answer("f = 2.5") is CANNOT
    assert answer("f = 'NaN'") is MIGHT, "NaN has many bit patterns: not probed"
    assert answer("i = 1.5") is CANNOT, "never true for an integer column, no probe needed"


def test_bloom_without_filter_is_unknown() -> None:
    schema = pa.schema([("u16", pa.uint16())])
    chunk = pa.table({"u16": pa.array([1], pa.uint16())})
    bloom = _perfect_bloom(chunk, 0.0, np.random.default_rng(0))
    assert evaluate_bloom(bind(col("u16") == 5, schema), bloom) is MIGHT
