"""The selective scan: same rows as DuckDB and pyarrow for randomized predicates on generated
files of every layout; same rows under every combination of switches; profile counters on
constructed files; API behaviour (columns, partitions, errors, batches)."""

from __future__ import annotations

import decimal
import itertools
import math
import random
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import lazyscan
from lazyscan.errors import PredicateError, SourceError

SWITCHES = ("pushdown", "prune_statistics", "prune_bloom", "prune_dictionary", "prune_page_index", "late_materialization", "dictionary_eval", "adaptive_order")


def make_data(n: int, seed: int, sorted_key: bool = False) -> pa.Table:
    rng = np.random.default_rng(seed)
    k = np.sort(rng.integers(0, 1000, n)) if sorted_key else rng.integers(0, 1000, n)
    f = rng.normal(size=n) * 100
    f[rng.random(n) < 0.05] = np.nan
    f[rng.random(n) < 0.02] = -0.0
    s_words = ["", "alpha", "beta", "gamma", "délta", "日本", "x%y", "a_b"]
    s = [s_words[i] + (str(j) if j % 3 else "") for i, j in zip(rng.integers(0, len(s_words), n), rng.integers(0, 40, n))]
    mask_s = rng.random(n) < 0.1
    mask_i = rng.random(n) < 0.1
    return pa.table({
        "k": pa.array(k, pa.int64()),
        "i": pa.array(rng.integers(-50, 50, n).astype(np.int32), mask=mask_i),
        "f": pa.array(f),
        "s": pa.array(s, pa.string(), mask=mask_s),
        "d": pa.array(rng.integers(18000, 19000, n).astype(np.int32)).cast(pa.date32()),
        "m": pa.array([decimal.Decimal(int(x)).scaleb(-2) for x in rng.integers(-10**6, 10**6, n)], pa.decimal128(12, 2)),
        "b": pa.array(rng.random(n) < 0.3),
        "u": pa.array([f"uniq-{x}" for x in rng.permutation(n)]),
    })


LAYOUTS = {
    "dict_pages_index": dict(use_dictionary=True, data_page_size=2048, write_page_index=True, row_group_size=3000),
    "plain_noindex": dict(use_dictionary=False, data_page_size=4096, write_page_index=False, row_group_size=5000),
    "v2_zstd_tiny": dict(use_dictionary=True, data_page_version="2.0", compression="zstd", data_page_size=512, write_page_index=True, row_group_size=2500),
    "bloom": dict(use_dictionary=False, write_page_index=True, data_page_size=2048, row_group_size=4000, bloom_filter_options={"u": {"ndv": 10000, "fpp": 0.01}, "s": {"ndv": 500}}),
}


def write(table: pa.Table, path: Path, layout: str) -> None:
    opts = dict(LAYOUTS[layout])
    try:
        pq.write_table(table, path, **opts)
    except TypeError:
        opts.pop("bloom_filter_options", None)
        pq.write_table(table, path, **opts)


def rand_literal(col: str, rng: random.Random) -> str:
    if col in ("k",):
        return str(rng.choice([-1, 0, 5, 500, 999, 1000, rng.randint(0, 999)]))
    if col == "i":
        return str(rng.choice([-51, -50, 0, 7, 49, 50, rng.randint(-60, 60)]))
    if col == "f":
        return rng.choice(["0.0", "-0.0", "1.5", "'NaN'", "100.25", "-1e300", str(rng.uniform(-200, 200))])
    if col == "s":
        return repr(rng.choice(["", "alpha", "beta1", "gamma", "délta2", "日本", "zzz", "x%y"]))
    if col == "d":
        return rng.choice(["DATE '2019-04-01'", "DATE '2021-01-01'", "'2020-01-15'"])
    if col == "m":
        return rng.choice(["0", "1.50", "-2500.00", "9999.99", str(round(rng.uniform(-10000, 10000), 2))])
    if col == "u":
        return repr(f"uniq-{rng.randint(0, 30000)}")
    raise AssertionError(col)


def rand_leaf(rng: random.Random) -> str:
    col = rng.choice(["k", "i", "f", "s", "d", "m", "b", "u"])
    if col == "b":
        return rng.choice(["b", "NOT b", "b = true", "b IS NULL"])
    kind = rng.random()
    if kind < 0.45:
        op = rng.choice(["=", "!=", "<", "<=", ">", ">="])
        return f"{col} {op} {rand_literal(col, rng)}"
    if kind < 0.6:
        vals = ", ".join(rand_literal(col, rng) for _ in range(rng.randint(1, 4)))
        return f"{col} {'NOT ' if rng.random() < 0.3 else ''}IN ({vals})"
    if kind < 0.7:
        a, b = sorted([rand_literal(col, rng), rand_literal(col, rng)]) if col not in ("s", "u", "d", "f") else (rand_literal(col, rng), rand_literal(col, rng))
        return f"{col} BETWEEN {a} AND {b}"
    if kind < 0.8:
        return f"{col} IS {'NOT ' if rng.random() < 0.5 else ''}NULL"
    if col in ("s", "u"):
        return f"{col} LIKE {rng.choice(['al%', '%a', '%et%', 'g_mma%', '', '%', 'uniq-1%'])!r}"
    return f"{col} = {rand_literal(col, rng)}"


def rand_predicate(rng: random.Random, depth: int = 0) -> str:
    if depth >= 2 or rng.random() < 0.4:
        return rand_leaf(rng)
    op = rng.choice(["AND", "AND", "OR"])
    left, right = rand_predicate(rng, depth + 1), rand_predicate(rng, depth + 1)
    text = f"({left}) {op} ({right})"
    return f"NOT ({text})" if rng.random() < 0.15 else text


def _rows(table: pa.Table) -> list[tuple]:
    def norm(v: object) -> object:
        if isinstance(v, float) and math.isnan(v):
            return "NaN"
        if isinstance(v, float) and v == 0:
            return 0.0
        return v

    return sorted((tuple(norm(v) for v in row.values()) for row in table.to_pylist()), key=repr)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, pa.Table]]:
    root = tmp_path_factory.mktemp("scan")
    out = {}
    for i, layout in enumerate(LAYOUTS):
        table = make_data(12000, seed=i, sorted_key=(i % 2 == 0))
        path = root / f"{layout}.parquet"
        write(table, path, layout)
        out[layout] = (path, table)
    return out


def duckdb_rows(path: Path, where: str, columns: list[str]) -> pa.Table:
    con = duckdb.connect()
    sel = ", ".join(columns)
    where_sql = where.replace("'NaN'", "'NaN'::DOUBLE")
    return con.sql(f"SELECT {sel} FROM read_parquet('{path}') WHERE {where_sql}").to_arrow_table()


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_random_predicates_match_duckdb(files: dict, layout: str) -> None:
    path, _ = files[layout]
    rng = random.Random(hash(layout) % 10_000)
    columns = ["k", "i", "f", "s", "d", "m", "b", "u"]
    checked = 0
    for _ in range(40):
        where = rand_predicate(rng)
        if "NaN" in where:
            continue  # DuckDB's NaN handling differs from Spark's in IN lists and pushed filters

        try:
            expected = duckdb_rows(path, where, columns)
        except duckdb.Error:
            continue  # a literal DuckDB will not coerce the way Spark does: not comparable
        got = lazyscan.scan(str(path), columns=columns, where=where, threads=2).to_table()
        exp = expected.cast(got.schema) if expected.schema != got.schema else expected
        assert _rows(got) == _rows(exp), f"{layout}: {where}"
        checked += 1
    assert checked >= 25


@pytest.mark.parametrize("layout", ["dict_pages_index", "bloom"])
def test_every_switch_combination_gives_same_rows(files: dict, layout: str) -> None:
    path, _ = files[layout]
    rng = random.Random(7)
    predicates = [rand_predicate(rng) for _ in range(6)] + ["u = 'uniq-17'", "k = 3 AND s LIKE 'al%'", "s IS NULL OR i > 40"]
    combos = list(itertools.product([True, False], repeat=len(SWITCHES)))
    rng.shuffle(combos)
    for where in predicates:
        reference = _rows(lazyscan.scan(str(path), where=where, pushdown=False).to_table())
        for n, combo in enumerate(combos[:24]):
            opts: dict[str, object] = dict(zip(SWITCHES, combo))
            # payload read whole then filtered (0.0), always selectively (1.0), or the default;
            # selected ranges merged across gaps of 0 or 50 rows
            opts["dense_threshold"] = (0.0, 1.0, 0.5)[n % 3]
            opts["materialization_threshold"] = (0, 50)[n % 2]
            got = lazyscan.scan(str(path), where=where, threads=1 + int(combo[0]), **opts).to_table()
            assert _rows(got) == reference, f"{where} {opts}"


def test_matches_pyarrow_filter(files: dict) -> None:
    path, table = files["plain_noindex"]
    got = lazyscan.scan(str(path), where="k >= 100 AND k < 200 AND f > 0").to_table()
    expected = table.filter(pc.and_(pc.and_(pc.greater_equal(table["k"], 100), pc.less(table["k"], 200)), pc.greater(table["f"], 0)))
    # NaN > 0 is TRUE in Spark and DuckDB, FALSE in pyarrow: add them
    nan_rows = table.filter(pc.and_(pc.and_(pc.greater_equal(table["k"], 100), pc.less(table["k"], 200)), pc.is_nan(table["f"])))
    assert _rows(got) == _rows(pa.concat_tables([expected, nan_rows]))


def test_nan_semantics_like_spark(files: dict) -> None:
    path, table = files["dict_pages_index"]
    f = table["f"].to_numpy(zero_copy_only=False)
    nan = np.isnan(f)
    for where, expected in [
        ("f = 'NaN'", nan),
        ("f > 1e300", nan),
        ("f IN ('NaN', 1.5)", nan | (f == 1.5)),
        ("f != 'NaN'", ~nan),
        ("f <= 0", ~nan & (f <= 0)),
    ]:
        for opts in ({}, {"pushdown": False}, {"prune_statistics": False, "prune_page_index": False}):
            got = lazyscan.scan(str(path), columns=["k"], where=where, **opts).to_table()
            assert got.num_rows == int(expected.sum()), (where, opts)


def test_in_matches_nan_of_every_bit_pattern(tmp_path: Path) -> None:
    """Spark's In and InSet hold every NaN equal; Arrow's is_in hashes bits, so a NaN written
    with other payload bits (as floating_orders_nan_count.parquet holds) must still match."""
    bits = np.array([1.0, np.nan, 2.0, np.nan, -0.0]).view(np.uint64).copy()
    bits[1] = 0x7FF8000000000001  # a quiet NaN with payload
    bits[3] = 0xFFF8000000000000  # negative NaN
    for dictionary in (True, False):
        path = tmp_path / f"nan_{dictionary}.parquet"
        pq.write_table(pa.table({"x": bits.view(np.float64), "i": range(5)}), path, use_dictionary=dictionary)
        for where, rows in [("x IN ('NaN', 2.0)", [1, 2, 3]), ("x NOT IN ('NaN', 0.0)", [0, 2]), ("x IN (1.0)", [0])]:
            for opts in ({}, {"pushdown": False}, {"dictionary_eval": False}):
                got = lazyscan.scan(str(path), columns=["i"], where=where, **opts).to_table()
                assert got.column("i").to_pylist() == rows, (where, dictionary, opts)


def test_statistics_prune_sorted_file(tmp_path: Path) -> None:
    n = 100 * 1000
    table = pa.table({"k": np.arange(n) // 1000, "v": np.arange(n)})
    path = tmp_path / "sorted.parquet"
    pq.write_table(table, path, row_group_size=1000)
    s = lazyscan.scan(str(path), where="k = 42")
    out = s.to_table()
    assert out.num_rows == 1000 and set(out["k"].to_pylist()) == {42}
    assert s.profile["row_groups_total"] == 100
    assert s.profile["row_groups_pruned_stats"] == 99


def test_dictionary_prunes_row_group(tmp_path: Path) -> None:
    # values a..e and v..z: min/max cover 'm' but the dictionary does not hold it
    vals = ["a", "b", "c", "d", "e", "v", "w", "x", "y", "z"] * 500
    path = tmp_path / "dict.parquet"
    pq.write_table(pa.table({"c": vals, "n": np.arange(len(vals))}), path, use_dictionary=True, row_group_size=1000)
    s = lazyscan.scan(str(path), where="c = 'm'")
    assert s.to_table().num_rows == 0
    assert s.profile["row_groups_pruned_dictionary"] == 5
    assert s.profile["row_groups_pruned_stats"] == 0


def test_bloom_filter_prunes_high_cardinality(tmp_path: Path) -> None:
    n = 20000
    rng = np.random.default_rng(3)
    vals = [f"id-{x:08d}" for x in rng.permutation(10**6)[:n]]
    path = tmp_path / "bloom.parquet"
    try:
        pq.write_table(pa.table({"u": vals}), path, use_dictionary=False, row_group_size=2000, bloom_filter_options={"u": {"ndv": 2000, "fpp": 0.01}})
    except TypeError:
        pytest.skip("this pyarrow cannot write Bloom filters")
    pf = lazyscan.ParquetFile(str(path))
    assert pf.bloom_filter(0, "u") is not None
    target = vals[12345]
    used = set(vals)
    absent = next(f"id-{x:08d}" for x in range(500_000, 600_000) if f"id-{x:08d}" not in used)  # inside [min, max]
    s = lazyscan.scan(str(path), where=f"u = '{absent}'")
    assert s.to_table().num_rows == 0
    assert s.profile["row_groups_pruned_bloom"] >= 8
    s2 = lazyscan.scan(str(path), where=f"u = '{target}'")
    assert s2.to_table()["u"].to_pylist() == [target]


def test_column_index_prunes_pages(tmp_path: Path) -> None:
    n = 200_000
    path = tmp_path / "pages.parquet"
    pq.write_table(pa.table({"k": np.arange(n), "p": np.arange(n) * 2}), path, row_group_size=n, data_page_size=8192, write_page_index=True, use_dictionary=False)
    s = lazyscan.scan(str(path), where="k BETWEEN 1000 AND 1010")
    out = s.to_table()
    assert out["p"].to_pylist() == [2 * i for i in range(1000, 1011)]
    assert s.profile["pages_pruned_index"] > 10
    assert s.profile["bytes_read"] < 0.1 * s.profile["bytes_total"]


def test_late_materialization_skips_payload_pages(tmp_path: Path) -> None:
    n = 100_000
    rng = np.random.default_rng(0)
    key = rng.integers(0, 10**9, n)
    key[777] = -5
    path = tmp_path / "late.parquet"
    payload = {f"p{i}": rng.normal(size=n) for i in range(5)}
    pq.write_table(pa.table({"key": key, **payload}), path, row_group_size=n, data_page_size=4096, use_dictionary=False)
    s = lazyscan.scan(str(path), where="key = -5")
    out = s.to_table()
    assert out.num_rows == 1 and out["p0"][0].as_py() == payload["p0"][777]
    assert s.profile["pages_skipped_lazily"] > 5 * 20


@pytest.mark.parametrize("page_version", ["1.0", "2.0"])
@pytest.mark.parametrize("where", ["c = 'needle'", "c IN ('needle', 'absent')"])
def test_string_predicate_column_is_decompressed_once(tmp_path: Path, page_version: str, where: str) -> None:
    n = 60_000
    words = pa.array([f"comment {i % 4999} {i}" if i % 977 else "needle" for i in range(n)])
    path = tmp_path / "needle.parquet"
    pq.write_table(
        pa.table({"c": words, "k": np.arange(n)}), path, use_dictionary=False, data_page_size=8192,
        data_page_version=page_version,
    )
    whole = lazyscan.scan(str(path), columns=["c"])
    whole.to_table()
    lazyscan.scan(str(path), columns=["c"], where=where).to_table()  # page layouts: walked once
    s = lazyscan.scan(str(path), columns=["c"], where=where)
    out = s.to_table()
    assert out["c"].to_pylist() == ["needle"] * len([i for i in range(n) if i % 977 == 0])
    assert out.schema.field("c").type == pa.string()
    # the output read takes the matching pages from the predicate pass, or (one literal) knows
    # that every surviving row holds the literal
    assert s.profile["bytes_decompressed"] == whole.profile["bytes_decompressed"]
    if page_version == "1.0" or "=" in where:
        # and does not fetch them again either (v2 pages are: their levels sit outside the body)
        assert s.profile["bytes_read"] == whole.profile["bytes_read"]
    else:
        assert s.profile["bytes_read"] > whole.profile["bytes_read"]


def test_dictionary_predicate_column_is_read_once(tmp_path: Path) -> None:
    # a dictionary-encoded predicate column that is also an output column: its dictionary and
    # pages are fetched and decoded once, for the predicate, and reused for the output
    n = 40_000
    rng = np.random.default_rng(4)
    k = rng.integers(0, 3000, n)
    path = tmp_path / "dict.parquet"
    table = pa.table({"k": k, "p": rng.normal(size=n)})
    pq.write_table(table, path, row_group_size=n, data_page_size=8192, use_dictionary=["k"])
    for where, expected in [("k IN (5, 17)", np.isin(k, [5, 17])), ("k < 1500", k < 1500), ("k > 0", k > 0)]:
        lazyscan.scan(str(path), where=where).to_table()  # page layouts: walked once, cached
        s = lazyscan.scan(str(path), where=where)
        out = s.to_table()
        assert out["k"].to_pylist() == k[expected].tolist(), where
        # selecting k too costs nothing more than selecting p alone with the same filter
        p_only = lazyscan.scan(str(path), columns=["p"], where=where)
        p_only.to_table()
        assert s.profile["bytes_decompressed"] == p_only.profile["bytes_decompressed"], where
        assert s.profile["bytes_read"] <= p_only.profile["bytes_read"], where


def test_splits_count_the_bytes_of_their_row_groups(tmp_path: Path) -> None:
    from lazyscan.scan.dataset import FileSplit

    n = 40_000
    path = tmp_path / "split.parquet"
    pq.write_table(pa.table({"k": np.arange(n), "s": [f"x{i}" for i in range(n)]}), path, row_group_size=n // 4)
    size = path.stat().st_size
    chunks = sum(
        pq.ParquetFile(path).metadata.row_group(i).column(j).total_compressed_size for i in range(4) for j in range(2)
    )
    halves = [FileSplit(str(path), 0, size // 2, size), FileSplit(str(path), size // 2, size - size // 2, size)]
    scans = [lazyscan.scan([h], where="s >= 'x2'") for h in halves]
    rows = sum(sc.to_table().num_rows for sc in scans)
    assert rows == sum(1 for i in range(n) if f"x{i}" >= "x2")
    totals = [sc.profile["bytes_total"] for sc in scans]
    assert all(t > 0 for t in totals) and sum(totals) == chunks < size


@pytest.mark.parametrize("dictionary", [False, True])
def test_conjuncts_on_one_column_read_it_once(tmp_path: Path, dictionary: bool) -> None:
    n = 50_000
    rng = np.random.default_rng(5)
    path = tmp_path / "range.parquet"
    pq.write_table(pa.table({"d": rng.integers(0, 100, n)}), path, use_dictionary=dictionary, data_page_size=4096)
    one = lazyscan.scan(str(path), where="d >= 10")
    one.to_table()
    both = lazyscan.scan(str(path), where="d >= 10 AND d < 20 AND d != 15")
    got = both.to_table()["d"].to_numpy()
    data = pq.read_table(path)["d"].to_numpy()
    assert sorted(got) == sorted(data[(data >= 10) & (data < 20) & (data != 15)])
    assert both.profile["bytes_decompressed"] == one.profile["bytes_decompressed"]
    assert both.profile["pages_read"] == one.profile["pages_read"]


def test_partitions_columns_and_pruning(tmp_path: Path) -> None:
    for year in (2020, 2021):
        for region in ("eu", "us"):
            d = tmp_path / f"year={year}" / f"region={region}"
            d.mkdir(parents=True)
            pq.write_table(pa.table({"v": np.arange(10) + year}), d / "part-0.parquet")
    (tmp_path / "_SUCCESS").write_text("")
    s = lazyscan.scan(str(tmp_path), where="year = 2021 AND region = 'eu' AND v > 2025")
    out = s.to_table()
    assert out.column_names == ["v", "year", "region"]
    assert sorted(out["v"].to_pylist()) == list(range(2026, 2031))
    assert set(out["year"].to_pylist()) == {2021} and set(out["region"].to_pylist()) == {"eu"}
    assert s.profile["row_groups_pruned_partition"] == 3


def test_schema_evolution_missing_column_is_null(tmp_path: Path) -> None:
    pq.write_table(pa.table({"a": [1, 2]}), tmp_path / "old.parquet")
    pq.write_table(pa.table({"a": [3, 4], "b": ["x", "y"]}), tmp_path / "new.parquet")
    out = lazyscan.scan(str(tmp_path), where="b IS NULL OR b = 'y'").to_table()
    assert sorted(out.to_pylist(), key=lambda r: r["a"]) == [{"a": 1, "b": None}, {"a": 2, "b": None}, {"a": 4, "b": "y"}]


def test_batches_are_compacted_and_ordered(tmp_path: Path) -> None:
    n = 50_000
    path = tmp_path / "b.parquet"
    pq.write_table(pa.table({"x": np.arange(n)}), path, row_group_size=3000)
    batches = list(lazyscan.scan(str(path), where="x % 1 = 0" if False else "x >= 0", batch_size=7000, threads=2).to_batches())
    assert [b.num_rows for b in batches[:-1]] == [7000] * (len(batches) - 1)
    assert np.array_equal(np.concatenate([b["x"].to_numpy() for b in batches]), np.arange(n))


def test_errors(tmp_path: Path) -> None:
    path = tmp_path / "e.parquet"
    pq.write_table(pa.table({"x": [1, 2, 3]}), path)
    with pytest.raises(PredicateError, match="nope"):
        lazyscan.scan(str(path), where="nope = 1")
    with pytest.raises(PredicateError, match="nope"):
        lazyscan.scan(str(path), columns=["nope"])
    with pytest.raises(SourceError, match="not found"):
        lazyscan.scan(str(tmp_path / "missing"))
    with pytest.raises(lazyscan.OptionError, match="unknown scan option"):
        lazyscan.scan(str(path), prune_everything=True)


def test_explain_lists_tiers_and_decisions(tmp_path: Path) -> None:
    n = 10_000
    path = tmp_path / "x.parquet"
    pq.write_table(pa.table({"k": np.arange(n), "s": [f"v{i % 10}" for i in range(n)]}), path, row_group_size=1000)
    s = lazyscan.scan(str(path), where="k < 1500 AND s = 'v3'")
    text = s.explain()
    assert "statistics" in text and "dictionary" in text and "rows" in text
    k_line = next(line for line in text.splitlines() if line.strip().startswith("k < 1500:") and "statistics" in line)
    assert "statistics: 8" in k_line
    assert s.profile["rows_returned"] == 150


def test_empty_folder_and_zero_rows(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert lazyscan.scan(str(empty)).to_table().num_rows == 0
    z = tmp_path / "zero.parquet"
    pq.write_table(pa.table({"x": pa.array([], pa.int64())}), z)
    out = lazyscan.scan(str(z), where="x = 1").to_table()
    assert out.num_rows == 0 and out.schema.names == ["x"]


@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles", "Asia/Kolkata"])
def test_time_zone_option_reads_timestamp_literals_in_that_zone(tmp_path, zone: str) -> None:
    import datetime as dt
    import zoneinfo

    import pyarrow.parquet as pq

    start = int(dt.datetime(2021, 3, 13, tzinfo=dt.timezone.utc).timestamp()) * 1_000_000
    ts = pa.array(np.arange(start, start + 3 * 86_400_000_000, 600_000_000), pa.timestamp("us", tz="UTC"))
    path = tmp_path / "ts.parquet"
    pq.write_table(pa.table({"ts": ts}), path)
    bound = dt.datetime(2021, 3, 14, 3, 30, tzinfo=zoneinfo.ZoneInfo(zone))
    for where in ("ts < TIMESTAMP '2021-03-14 03:30:00'", "ts < '2021-03-14 03:30:00'"):
        got = lazyscan.scan(str(path), where=where, time_zone=zone).to_table()
        expected = [t for t in ts.to_pylist() if t < bound]
        assert got.column("ts").to_pylist() == expected, where


def _multi_group_file(tmp_path: Path) -> tuple[str, pa.Table]:
    t = pa.table({"k": np.arange(40_000), "v": np.arange(40_000) % 97, "s": [f"s{i % 13}" for i in range(40_000)]})
    path = tmp_path / "groups.parquet"
    pq.write_table(t, path, row_group_size=2_000)
    return str(path), t


def test_concurrent_and_abandoned_scans_share_worker_threads(tmp_path: Path) -> None:
    """Scans share one pool per thread count: concurrent scans from several threads, a scan
    started while another is being consumed, and a scan abandoned halfway all give their rows."""
    import concurrent.futures as cf

    path, t = _multi_group_file(tmp_path)
    want = t.filter(pc.equal(t["v"], 5)).to_pylist()

    def rows() -> list:
        return lazyscan.scan(path, where="v = 5", threads=2, batch_size=50).to_table().to_pylist()

    with cf.ThreadPoolExecutor(4) as users:
        assert all(r == want for r in users.map(lambda _: rows(), range(8)))
    outer = lazyscan.scan(path, where="v = 5", threads=2, batch_size=50).to_batches()
    got = []
    for i, batch in enumerate(outer):
        got += batch.to_pylist()
        if i == 1:
            assert rows() == want  # a nested scan, its units queued behind the outer ones
    assert got == want
    abandoned = lazyscan.scan(path, where="v = 5", threads=2, batch_size=10).to_batches()
    next(abandoned)
    abandoned.close()  # its running units finish, the pending ones are dropped
    assert rows() == want


def test_a_forked_child_scans_with_threads(tmp_path: Path) -> None:
    """The worker threads of scans (and of object-store read-ahead) do not survive fork: a
    child process forked after scans in the parent starts its own instead of waiting forever."""
    import multiprocessing as mp

    from lazyscan.io import prefetch

    prefetch._prefetches.get().submit(int).result()  # the read-ahead pool, started in the parent
    path, t = _multi_group_file(tmp_path)
    want = t.filter(pc.equal(t["v"], 7)).num_rows
    assert lazyscan.scan(path, where="v = 7", threads=2).to_table().num_rows == want
    ctx = mp.get_context("fork")
    with ctx.Pool(1) as child:
        got = child.apply_async(_count_in_child, (path,)).get(timeout=60)
    assert got == want


def _count_in_child(path: str) -> int:
    from lazyscan.io import prefetch

    assert prefetch._prefetches._pool is None
    return lazyscan.scan(path, where="v = 7", threads=2).to_table().num_rows


@pytest.mark.parametrize("stats_in_footer", [True, False])
def test_profile_counts_every_page_of_every_column_read(tmp_path: Path, stats_in_footer: bool) -> None:
    """``pages_total`` counts the data pages of every column read in every row group, and
    ``pages_skipped_lazily`` the payload pages no surviving row needed; from the footer's
    encoding statistics, or from the pages themselves where a writer left those out."""
    from lazyscan.parquet import ParquetFile

    n, groups = 40_000, 4
    rng = np.random.default_rng(3)
    key = rng.integers(-(10**9), 10**9, n) * 2 + 1  # odd: statistics prune no row group
    key[15_123] = -6  # the one match, in row group 1
    payload = {f"p{i}": rng.normal(size=n) for i in range(3)}
    path = tmp_path / f"pages-{stats_in_footer}.parquet"
    pq.write_table(pa.table({"key": key, **payload}), path, row_group_size=n // groups, data_page_size=4096, use_dictionary=False)
    pf = ParquetFile(str(path))
    if not stats_in_footer:  # the footer is shared with the scan's reader (cached per file)
        for rg in pf.metadata.row_groups:
            for chunk in rg.columns:
                object.__setattr__(chunk.meta_data, "encoding_stats", None)
    pages = [[len(pf.page_layout(r, c).pages) for c in range(4)] for r in range(groups)]
    assert all(p > 5 for row in pages for p in row)
    s = lazyscan.scan(str(path), where="key = -6")
    assert s.to_table()["p0"].to_pylist() == [payload["p0"][15_123]]
    assert s.profile["row_groups_without_survivors"] == groups - 1
    assert s.profile["pages_total"] == sum(map(sum, pages))
    # every payload page but the one holding the match in each payload column
    assert s.profile["pages_skipped_lazily"] == sum(sum(row[1:]) for row in pages) - 3
    if stats_in_footer:
        assert [pf.data_page_count(r, c) for r in range(groups) for c in range(4)] == [p for row in pages for p in row]


def test_an_orc_error_names_the_stripe_not_a_row_group(tmp_path: Path) -> None:
    """The scan adds the file and unit to a reader's error; an ORC unit is a stripe, which the
    ORC reader names itself, so the scan does not call it a row group too."""
    import pyarrow.orc as po

    from lazyscan.errors import CorruptFileError
    from lazyscan.orc.file import OrcFile

    path = tmp_path / "t.orc"
    po.write_table(pa.table({"a": np.arange(20_000)}), path, stripe_size=16 * 1024)
    with OrcFile(str(path)) as f:
        assert f.num_stripes > 3
        stripe = f.stripe(2)
    data = bytearray(path.read_bytes())
    footer = stripe.offset + stripe.index_length + stripe.data_length
    data[footer : footer + stripe.footer_length] = b"\xff" * stripe.footer_length
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptFileError, match="stripe 2") as info:
        lazyscan.scan(path, where="a >= 0").to_table()
    assert "row group" not in str(info.value)
