"""The selective scan over ORC files: the same rows as DuckDB over a Parquet copy of the same
table for random predicates on ORC files of several layouts, the same rows under every switch,
and the ORC tiers at work (stripe statistics, row-group statistics, Bloom filters, stripe
dictionaries, payload only for row groups with survivors, key filters)."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.orc as porc
import pyarrow.parquet as pq
import pytest

import lazyscan
from lazyscan import col
from lazyscan.errors import OptionError
from tests.test_scan import SWITCHES, _rows, make_data, rand_predicate

ORC_LAYOUTS = {
    "zstd_dictionary": dict(compression="zstd", dictionary_key_size_threshold=1.0, stripe_size=64 * 1024),
    "plain_uncompressed": dict(compression="uncompressed", dictionary_key_size_threshold=0.0, stripe_size=128 * 1024),
    "zlib_bloom": dict(compression="zlib", stripe_size=96 * 1024, bloom_filter_columns=[1, 4, 8], bloom_filter_fpp=0.02),
}
COLUMNS = ["k", "i", "f", "s", "d", "m", "b", "u"]


@pytest.fixture(scope="module")
def orc_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path, pa.Table]]:
    root = tmp_path_factory.mktemp("orc-scan")
    out = {}
    for i, (layout, opts) in enumerate(ORC_LAYOUTS.items()):
        table = make_data(30_000, seed=10 + i, sorted_key=(i % 2 == 0))
        orc = root / f"{layout}.orc"
        porc.write_table(table, orc, **opts)
        parquet = root / f"{layout}.parquet"
        pq.write_table(table, parquet)
        assert porc.ORCFile(str(orc)).nstripes > 1
        out[layout] = (orc, parquet, table)
    return out


def _duckdb(parquet: Path, where: str, columns: list[str]) -> pa.Table:
    con = duckdb.connect()
    return con.sql(f"SELECT {', '.join(columns)} FROM read_parquet('{parquet}') WHERE {where}").to_arrow_table()


@pytest.mark.parametrize("layout", sorted(ORC_LAYOUTS))
def test_random_predicates_match_duckdb(orc_files: dict, layout: str) -> None:
    orc, parquet, _ = orc_files[layout]
    rng = random.Random(layout)
    checked = 0
    for _ in range(40):
        where = rand_predicate(rng)
        if "NaN" in where:
            continue  # DuckDB's NaN handling differs from Spark's in IN lists
        try:
            expected = _duckdb(parquet, where, COLUMNS)
        except duckdb.Error:
            continue
        got = lazyscan.scan(str(orc), columns=COLUMNS, where=where, threads=2).to_table()
        exp = expected.cast(got.schema) if expected.schema != got.schema else expected
        assert _rows(got) == _rows(exp), f"{layout}: {where}"
        checked += 1
    assert checked >= 25


def test_every_switch_combination_gives_same_rows(orc_files: dict) -> None:
    orc, _, _ = orc_files["zlib_bloom"]
    where = "(k BETWEEN 100 AND 300 AND s LIKE 'al%') OR u = 'uniq-77' OR NOT (i < 40)"
    reference = _rows(lazyscan.scan(str(orc), where=where, pushdown=False).to_table())
    for values in itertools.product([False, True], repeat=4):
        opts = dict(zip(("prune_statistics", "prune_bloom", "prune_page_index", "late_materialization"), values))
        got = lazyscan.scan(str(orc), where=where, **opts).to_table()
        assert _rows(got) == reference, opts
    for name in SWITCHES:
        assert _rows(lazyscan.scan(str(orc), where=where, **{name: False}).to_table()) == reference, name


def test_stripe_and_row_group_statistics_prune(tmp_path: Path) -> None:
    n = 200_000
    table = pa.table({"k": pa.array(np.arange(n), pa.int64()), "v": pa.array([f"v{i % 977}" for i in range(n)])})
    path = tmp_path / "sorted.orc"
    porc.write_table(table, path, stripe_size=512 * 1024)
    s = lazyscan.scan(path, where=col("k").between(123_000, 123_050))
    got = s.to_table()
    assert got.column("k").to_pylist() == list(range(123_000, 123_051))
    p = s.profile
    assert p["row_groups_pruned_stats"] == p["row_groups_total"] - 1  # every other stripe
    # inside the stripe, the row index leaves one 10,000-row row group
    assert p["rows_after_pruning"] == 10_000
    assert p["values_decoded"] <= 2 * 10_000


def test_payload_only_for_row_groups_with_survivors(tmp_path: Path) -> None:
    n = 100_000
    rng = np.random.default_rng(3)
    table = pa.table({
        "key": pa.array(rng.integers(0, 10**9, n)),
        **{f"p{j}": pa.array(rng.normal(size=n)) for j in range(6)},
        "text": pa.array([f"row {i} " + "x" * (i % 50) for i in range(n)]),
    })
    path = tmp_path / "needle.orc"
    porc.write_table(table, path, compression="zstd")
    needle = int(table.column("key")[54_321].as_py())
    s = lazyscan.scan(path, where=col("key") == needle)
    got = s.to_table()
    assert got.num_rows >= 1 and 54_321 in [int(x.split()[1]) for x in got.column("text").to_pylist()]
    # the filter column is decoded whole; each payload column only for the row group of the needle
    assert s.profile["values_decoded"] <= n + 7 * 10_000


def test_bloom_filter_prunes_stripes(tmp_path: Path) -> None:
    n = 120_000
    rng = np.random.default_rng(5)
    table = pa.table({"u": pa.array([f"id-{x}" for x in rng.permutation(n)]), "v": pa.array(np.arange(n))})
    path = tmp_path / "bloom.orc"
    porc.write_table(table, path, stripe_size=256 * 1024, bloom_filter_columns=[1], bloom_filter_fpp=0.01)
    s = lazyscan.scan(path, where=col("u") == "id-5000000")  # inside every stripe's [min, max]
    assert s.to_table().num_rows == 0
    assert s.profile["row_groups_pruned_bloom"] >= s.profile["row_groups_total"] - 1


def test_bloom_filters_prune_row_groups(tmp_path: Path) -> None:
    """A value present in one row group of a stripe: the other row groups, whose statistics
    cannot rule it out, are ruled out by their Bloom filters and never read."""
    n = 50_000
    rng = np.random.default_rng(6)
    ids = rng.permutation(n)
    table = pa.table({"u": pa.array([f"id-{x}" for x in ids]), "v": pa.array(np.arange(n))})
    path = tmp_path / "bloom.orc"
    porc.write_table(table, path, bloom_filter_columns=[1], bloom_filter_fpp=0.01)
    target = f"id-{ids[23_456]}"
    for where in (col("u") == target, col("u").isin([target, "id-absent"])):
        s = lazyscan.scan(path, where=where)
        got = s.to_table()
        assert got.column("v").to_pylist() == [23_456]
        assert s.profile["row_groups_total"] == 1
        groups = -(-n // 10_000)
        assert s.profile["pages_pruned_bloom"] >= groups - 2, s.profile.table()
        off = lazyscan.scan(path, where=where, prune_bloom=False)
        assert off.to_table().equals(got) and off.profile["pages_pruned_bloom"] == 0


def test_stripe_dictionary_prunes(tmp_path: Path) -> None:
    # each stripe holds a different set of words; statistics ranges overlap, dictionaries do not
    words = [f"w{j:03d}" for j in range(200)]
    rows = [words[(i // 20_000) * 2 + (i % 2) * 100] for i in range(100_000)]
    table = pa.table({"w": pa.array(rows), "v": pa.array(np.arange(100_000))})
    path = tmp_path / "dict.orc"
    porc.write_table(table, path, stripe_size=64 * 1024, dictionary_key_size_threshold=1.0)
    s = lazyscan.scan(path, where=col("w") == "w001")
    got = s.to_table()
    assert got.num_rows == sum(1 for r in rows if r == "w001")
    assert s.profile["row_groups_pruned_dictionary"] > 0


def test_key_filters_on_orc(orc_files: dict) -> None:
    orc, parquet, _ = orc_files["zstd_dictionary"]
    keys = pa.array([3, 17, 500, 999, 2_000], pa.int64())
    got = lazyscan.scan(str(orc), where=col("k").isin_keys(keys) & (col("i") > 0)).to_table()
    con = duckdb.connect()
    con.register("dim", pa.table({"key": keys}))
    exp = con.sql(f"SELECT * FROM read_parquet('{parquet}') WHERE k IN (SELECT key FROM dim) AND i > 0").to_arrow_table()
    assert _rows(got) == _rows(exp.cast(got.schema))


def test_folders_formats_and_errors(tmp_path: Path) -> None:
    table = make_data(5_000, seed=1)
    for part in ("a", "b"):
        folder = tmp_path / "ds" / f"part={part}"
        folder.mkdir(parents=True)
        porc.write_table(table, folder / "data.orc")
    got = lazyscan.scan(tmp_path / "ds", where="part = 'b' AND k < 100").to_table()
    expected = table.filter(pa.compute.less(table.column("k"), 100))
    assert got.num_rows == expected.num_rows and set(got.column("part").to_pylist()) == {"b"}
    # no extension: recognized by its magic bytes, or named with format=
    bare = tmp_path / "noext"
    porc.write_table(table, bare)
    assert lazyscan.scan(bare, where="k < 100").to_table().num_rows == expected.num_rows
    assert lazyscan.scan(bare, where="k < 100", format="orc").to_table().num_rows == expected.num_rows
    with pytest.raises(OptionError, match="format must be"):
        lazyscan.scan(bare, format="csv")
