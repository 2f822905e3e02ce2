"""Key filters (lazyscan.key_filter) and their use in the scan: the forms chosen, exact
membership against pyarrow's is_in, the Bloom filter's false-positive rate, serialization,
type pairing, and scans with ``isin_keys`` against the same semi-join in DuckDB."""

from __future__ import annotations

import decimal
import itertools
import pickle
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import lazyscan
from lazyscan import KeyFilter, KeyFilterError, PredicateError, col, key_filter
from lazyscan.predicate.keys import bloom_fpp
from lazyscan.scan.profile import Profile

# ---- the filter ------------------------------------------------------------------------------


def test_forms_follow_the_keys() -> None:
    assert key_filter(np.arange(0, 10_000, 3)).kind == "bitmap"
    assert key_filter(np.array([5, 10**12, -(10**15)])).kind == "hash"
    rng = np.random.default_rng(0)
    sparse = rng.integers(-(2**62), 2**62, 5_000)
    assert key_filter(sparse, exact_limit=1_000).kind == "bloom"
    assert key_filter(["a", "b"]).kind == "hash"
    assert key_filter([f"k{i}" for i in range(3_000)], exact_limit=100).kind == "bloom"
    empty = key_filter(pa.array([None, None], pa.int64()))
    assert empty.kind == "empty" and len(empty) == 0 and empty.exact


def test_filter_reports_its_shape() -> None:
    kf = key_filter([3, 3, None, 9, 12_000_000_000])
    assert len(kf) == 3 and kf.exact and kf.fpp == 0.0
    assert (kf.min, kf.max) == (3, 12_000_000_000)
    assert kf.nbytes > 0 and "hash of 3 integer keys" in repr(kf)
    bloom = key_filter(np.arange(200_000) * 1_000_003, exact_limit=10)
    assert not bloom.exact and 0 < bloom.fpp <= 0.01
    # sized from the real key count: ~12 bits per key at 1 %
    assert 8 * 200_000 * 1.0 <= bloom.nbytes * 8 <= 16 * 200_000


INT_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint32(), pa.uint64()]


@pytest.mark.parametrize("kind_keys", ["bitmap", "hash"])
@pytest.mark.parametrize("column_type", INT_TYPES)
def test_exact_integer_membership_equals_is_in(kind_keys: str, column_type: pa.DataType) -> None:
    rng = np.random.default_rng(7)
    if kind_keys == "bitmap":
        keys = np.unique(rng.integers(0, 120, 60))
    else:
        keys = np.unique(rng.choice([0, 1, 7, 100, 127, 200, 255, 60_000, 2**31 - 1, 2**40], 6))
    kf = key_filter(keys)
    assert kf.kind == kind_keys
    info_max = 127 if column_type.bit_width == 8 and pa.types.is_signed_integer(column_type) else 255
    values = rng.integers(0, info_max, 2_000)
    mask = rng.random(2_000) < 0.1
    arr = pa.array(values, mask=mask).cast(column_type)
    expected = pc.is_in(arr, value_set=pa.array(keys[keys <= info_max]).cast(column_type))
    expected = pc.if_else(arr.is_valid(), expected, pa.scalar(None, pa.bool_()))
    assert kf.contains(arr).equals(expected)


@pytest.mark.parametrize("keys", [np.arange(-40, 100, 3), np.array([-2**63, -7, 0, 90, 2**63 - 1])])
@pytest.mark.parametrize("column_type", INT_TYPES)
def test_integer_columns_without_nulls_equal_is_in(keys: np.ndarray, column_type: pa.DataType) -> None:
    """The probe of NULL-free integer values (its own loop) equals ``is_in``, at the type's
    extremes and with values below, inside and above the keys' range."""
    kf = key_filter(keys)
    assert kf.kind == ("bitmap" if len(keys) > 5 else "hash")
    info = np.iinfo(column_type.to_pandas_dtype())
    rng = np.random.default_rng(3)
    inside = rng.integers(max(int(info.min), -60), min(int(info.max), 120), 3_000).tolist()
    arr = pa.array([int(info.min), int(info.max), 0, *inside], column_type)
    value_set = pa.array([k for k in keys.tolist() if info.min <= k <= info.max], column_type)
    assert kf.contains(arr).equals(pc.is_in(arr, value_set=value_set))
    assert kf.contains(arr).true_count > 0


def test_uint64_above_int64_never_matches_negative_keys() -> None:
    kf = key_filter(np.array([-1, 5], np.int64))
    arr = pa.array([2**64 - 1, 5, 2**63], pa.uint64())
    assert kf.contains(arr).to_pylist() == [False, True, False]


def test_keys_coerce_as_spark_widens_them() -> None:
    # int32 keys against an int64 column, and the other way
    assert key_filter(pa.array([1, 2], pa.int32())).contains(pa.array([2, 3, 2**40], pa.int64())).to_pylist() == [True, False, False]
    assert key_filter(pa.array([2**40, 2], pa.int64())).contains(pa.array([2, 3], pa.int32())).to_pylist() == [True, False]
    # decimals at other scales: 1.5 (scale 1) equals 1.50 (scale 2), never 1.55
    dk = key_filter(pa.array([decimal.Decimal("1.5"), decimal.Decimal("3")], pa.decimal128(4, 1)))
    col2 = pa.array([decimal.Decimal(x) for x in ("1.50", "1.55", "3.00", "-3.00")], pa.decimal128(6, 2))
    assert dk.contains(col2).to_pylist() == [True, False, True, False]
    # integer keys against a decimal column
    assert key_filter([7]).contains(pa.array([decimal.Decimal("7.00"), decimal.Decimal("7.01")], pa.decimal128(5, 2))).to_pylist() == [True, False]
    # timestamps of different units: a millisecond key meets the same instant in microseconds
    ts = key_filter(pa.array([1_000, 2_001], pa.timestamp("ms")))
    us = pa.array([1_000_000, 2_001_000, 2_001_001], pa.timestamp("us"))
    assert ts.contains(us).to_pylist() == [True, True, False]
    # dates
    d = key_filter(pa.array([19_000, 19_005], pa.date32()))
    assert d.contains(pa.array([19_005, 19_001], pa.date32())).to_pylist() == [True, False]
    # strings and binary are one family
    s = key_filter(["pinto", "é日本", ""])
    assert s.contains(pa.array([b"pinto", b"x", b""], pa.binary())).to_pylist() == [True, False, True]
    assert s.contains(pa.array(["é日本", None, "pint"], pa.large_string())).to_pylist() == [True, None, False]


def test_unsupported_key_types_are_predicate_errors() -> None:
    with pytest.raises(PredicateError, match="double keys are not supported"):
        key_filter([1.5, 2.5])
    with pytest.raises(PredicateError, match="bool keys are not supported"):
        key_filter([True])
    with pytest.raises(PredicateError, match="fpp"):
        key_filter([1], fpp=1.5)
    with pytest.raises(PredicateError, match="cannot be probed"):
        key_filter(["a"]).contains(pa.array([1, 2]))


@pytest.mark.parametrize("family", ["int", "bytes"])
def test_bloom_has_no_false_negatives_and_its_stated_rate(family: str) -> None:
    rng = np.random.default_rng(3)
    n = 50_000
    if family == "int":
        keys = np.unique(rng.integers(-(2**62), 2**62, n))
        others = rng.integers(-(2**62), 2**62, 200_000)
        others = others[~np.isin(others, keys)]
        key_arr, other_arr = pa.array(keys), pa.array(others)
    else:
        key_arr = pa.array([f"key-{i}-{v}" for i, v in enumerate(rng.integers(0, 10**9, n))])
        other_arr = pa.array([f"other-{i}" for i in range(200_000)])
    kf = key_filter(key_arr, fpp=0.01, exact_limit=1_000)
    assert kf.kind == "bloom"
    assert pc.all(kf.contains(key_arr)).as_py()
    rate = pc.mean(kf.contains(other_arr).cast(pa.int8())).as_py()
    # the model's rate, with room for sampling noise (200,000 probes: sd ~0.02 %)
    assert rate <= kf.fpp * 1.25 + 0.001, (rate, kf.fpp)
    assert kf.fpp <= 0.01


def test_bloom_model_matches_a_classic_figure() -> None:
    # 12 bits per key, 64-bit blocks, k = 6: about 1 % (Putze et al.'s model)
    assert 0.008 < bloom_fpp(120_000, 120_000 * 12 // 64, 6) < 0.012


@pytest.mark.parametrize(
    "values",
    [
        np.arange(0, 5_000, 2),
        np.array([5, 10**12, -(10**15)]),
        np.random.default_rng(1).integers(-(2**62), 2**62, 3_000),
        ["pinto", "beans", ""],
        [f"v{i}" for i in range(3_000)],
        pa.array([None], pa.string()),
    ],
)
def test_serialization_round_trip(values: object) -> None:
    kf = key_filter(values, exact_limit=500)
    back = KeyFilter.from_bytes(kf.to_bytes())
    again = pickle.loads(pickle.dumps(kf))
    probe = pa.array(values) if not isinstance(values, pa.Array) else values
    text = KeyFilter.from_text(kf.to_text())
    for other in (back, again, text):
        assert (other.kind, len(other), other.min, other.max, other.k) == (kf.kind, len(kf), kf.min, kf.max, kf.k)
        assert other.measured_fpp == kf.measured_fpp
        assert other.contains(probe).equals(kf.contains(probe))


@pytest.mark.parametrize("kind", ["int", "bytes"])
def test_hash_set_with_its_bit_prefilter_equals_set_membership(kind: str) -> None:
    rng = np.random.default_rng(4)
    keys = rng.integers(-(2**40), 2**40, 5_000)
    probes = np.concatenate([rng.integers(-(2**40), 2**40, 300_000), keys[::3]])
    if kind == "int":
        kf, arr = key_filter(keys), pa.array(probes)
    else:
        kf, arr = key_filter([str(v) for v in keys]), pa.array([str(v) for v in probes])
    assert kf.kind == "hash"
    assert np.array_equal(kf.probe(arr).astype(bool), np.isin(probes, keys))


def test_measured_fpp_is_near_the_model_and_shown() -> None:
    kf = key_filter(np.random.default_rng(8).integers(0, 2**50, 50_000), fpp=0.02, exact_limit=0)
    assert kf.measured_fpp is not None and abs(kf.measured_fpp - kf.fpp) < 0.006
    assert "measured" in kf.describe()
    assert key_filter([1, 5, 9]).measured_fpp is None  # exact forms have no false positives


def test_damaged_text_forms_are_key_filter_errors() -> None:
    text = key_filter([1, 2, 3]).to_text()
    assert text.startswith("lskf:")
    with pytest.raises(KeyFilterError, match="starts with"):
        KeyFilter.from_text(text[5:])
    with pytest.raises(KeyFilterError, match="damaged key filter text"):
        KeyFilter.from_text(text[:-1] + "!")
    mid = len(text) // 2
    with pytest.raises(KeyFilterError, match="checksum"):
        KeyFilter.from_text(text[:mid] + ("B" if text[mid] == "A" else "A") + text[mid + 1 :])


def test_damaged_filters_are_key_filter_errors() -> None:
    blob = key_filter(np.array([5, 10**12, -(10**15)])).to_bytes()
    with pytest.raises(KeyFilterError, match="not a lazyscan key filter"):
        KeyFilter.from_bytes(b"PAR1" + blob[4:])
    flipped = bytearray(blob)
    flipped[-3] ^= 0xFF
    with pytest.raises(KeyFilterError, match="checksum"):
        KeyFilter.from_bytes(bytes(flipped))
    with pytest.raises(KeyFilterError):
        KeyFilter.from_bytes(blob[:20])
    newer = bytearray(blob)
    newer[4] = 99
    with pytest.raises(KeyFilterError, match="version 99"):
        KeyFilter.from_bytes(bytes(newer))
    assert issubclass(KeyFilterError, lazyscan.LazyScanError)


# ---- in the scan -----------------------------------------------------------------------------


def _fact(tmp_path: Path, dictionary: bool, sort: bool = False, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    n = 40_000
    k = rng.integers(0, 5_000, n)
    if sort:
        k = np.sort(k)
    nulls = rng.random(n) < 0.05
    table = pa.table(
        {
            "k": pa.array(k, pa.int32(), mask=nulls),
            "s": pa.array([f"s{v % 700}" for v in k], mask=rng.random(n) < 0.05),
            "q": pa.array(rng.integers(0, 50, n), pa.int64()),
            "price": pa.array(rng.normal(100, 30, n)),
            "note": pa.array([f"note {i}" for i in range(n)]),
        }
    )
    path = tmp_path / f"fact-{dictionary}-{sort}.parquet"
    pq.write_table(table, path, row_group_size=8_000, data_page_size=4_096, use_dictionary=dictionary, write_page_index=True)
    return path


def _duckdb(path: Path, keys: pa.Array, where: str, key_col: str = "k") -> pa.Table:
    con = duckdb.connect()
    con.register("dim", pa.table({"key": keys}))
    sql = f"SELECT * FROM read_parquet('{path}') WHERE " + where.replace(
        "KEYS", f"({key_col} IN (SELECT key FROM dim WHERE key IS NOT NULL))"
    )
    return con.sql(sql).to_arrow_table()


def _same_rows(ours: pa.Table, ref: pa.Table) -> None:
    assert ours.num_rows == ref.num_rows
    if ours.num_rows:
        order = [("note", "ascending")]
        assert ours.sort_by(order).equals(ref.select(ours.column_names).cast(ours.schema).sort_by(order))


CASES = [
    ("KEYS", lambda f: f),
    ("KEYS AND q < 10", lambda f: f & (col("q") < 10)),
    ("KEYS OR q = 3", lambda f: f | (col("q") == 3)),
    ("NOT KEYS AND q < 5", lambda f: ~f & (col("q") < 5)),
    ("NOT (KEYS OR q > 5)", lambda f: ~(f | (col("q") > 5))),
]


@pytest.mark.parametrize("dictionary", [True, False])
@pytest.mark.parametrize("keys_kind", ["bitmap", "hash", "empty"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_scan_with_keys_equals_duckdb_semi_join(tmp_path: Path, dictionary: bool, keys_kind: str, case: int) -> None:
    path = _fact(tmp_path, dictionary)
    rng = np.random.default_rng(11)
    if keys_kind == "bitmap":
        dim = pa.array([*rng.integers(0, 5_000, 300).tolist(), None, 7, 7], pa.int64())
    elif keys_kind == "hash":
        dim = pa.array([*rng.integers(0, 5_000, 8).tolist(), 10**12, None], pa.int64())
    else:
        dim = pa.array([None], pa.int64())
    kf = key_filter(dim)
    assert kf.kind == keys_kind
    sql, build = CASES[case]
    got = lazyscan.scan(path, where=build(col("k").isin_keys(kf))).to_table()
    _same_rows(got, _duckdb(path, dim, sql))


@pytest.mark.parametrize("dictionary", [True, False])
def test_string_keys_in_the_scan(tmp_path: Path, dictionary: bool) -> None:
    path = _fact(tmp_path, dictionary)
    dim = pa.array(["s3", "s699", "nope", None, "s42"])
    got = lazyscan.scan(path, where=col("s").isin_keys(dim) & (col("q") > 20)).to_table()
    _same_rows(got, _duckdb(path, dim, "KEYS AND q > 20", key_col="s"))


def test_bloom_keys_keep_a_superset_in_the_scan(tmp_path: Path) -> None:
    path = _fact(tmp_path, True)
    dim = pa.array(np.arange(0, 5_000, 9), pa.int64())
    kf = key_filter(dim, exact_limit=10)
    assert kf.kind == "bitmap"  # dense: exact anyway
    sparse = pa.array(np.random.default_rng(2).integers(0, 5_000, 400) * 10**9, pa.int64())
    bloom = key_filter(pa.concat_arrays([sparse, dim]), exact_limit=10)
    assert bloom.kind == "bloom"
    got = lazyscan.scan(path, where=col("k").isin_keys(bloom)).to_table()
    exact = _duckdb(path, dim, "KEYS")
    assert set(exact.column("note").to_pylist()) <= set(got.column("note").to_pylist())
    assert got.num_rows <= exact.num_rows * 1.1 + 50
    with pytest.raises(PredicateError, match="NOT of a Bloom key filter"):
        lazyscan.scan(path, where=~col("k").isin_keys(bloom))


def test_key_filter_prunes_row_groups_and_pages_by_statistics(tmp_path: Path) -> None:
    path = _fact(tmp_path, False, sort=True)
    # keys only in the first and the last thousand values of the sorted column
    dim = pa.array([3, 17, 4_990], pa.int64())
    s = lazyscan.scan(path, columns=["k", "note", "price"], where=col("k").isin_keys(dim))
    got = s.to_table()
    _same_rows(got.select(["note"]), _duckdb(path, dim, "KEYS").select(["note"]))
    p = s.profile
    assert p["row_groups_pruned_stats"] >= 3
    assert p["row_groups_read"] <= 2
    # the key set, not only its [3, 4990] bounds, decides: the middle row groups lie inside it
    assert p["rows_after_pruning"] < p["rows_total"] / 2


def test_empty_key_filter_reads_no_payload(tmp_path: Path) -> None:
    path = _fact(tmp_path, True)
    s = lazyscan.scan(path, where=col("k").isin_keys(pa.array([], pa.int64())))
    assert s.to_table().num_rows == 0
    assert s.profile["pages_read"] == 0 and s.profile["values_decoded"] == 0


def test_dictionary_key_column_is_probed_per_entry(tmp_path: Path) -> None:
    path = _fact(tmp_path, True)
    dim = pa.array([1, 2, 3, 4_000], pa.int64())
    s = lazyscan.scan(path, columns=["note"], where=col("k").isin_keys(dim))
    got = s.to_table()
    _same_rows(got, _duckdb(path, dim, "KEYS").select(["note"]))
    assert s.profile["key_probes_dictionary"] > 0
    assert s.profile["key_probes_values"] == 0
    plain = lazyscan.scan(_fact(tmp_path, False), columns=["note"], where=col("k").isin_keys(dim))
    plain.to_table()
    assert plain.profile["key_probes_values"] > 0 and plain.profile["key_probes_dictionary"] == 0


def test_adaptive_filter_switches_itself_off_when_it_keeps_most_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lazyscan.Scan, "KEY_SWITCH_MIN_ROWS", 2_000)
    path = _fact(tmp_path, False)
    dim = pa.array(np.arange(0, 4_500), pa.int64())  # keeps ~90 % of rows
    s = lazyscan.scan(path, where=col("k").isin_keys(dim, adaptive=True) & (col("q") < 25), threads=1)
    got = s.to_table()
    exact = _duckdb(path, dim, "KEYS AND q < 25")
    # a superset: every joining row is there, the join behind the scan drops the rest
    assert set(exact.column("note").to_pylist()) <= set(got.column("note").to_pylist())
    decisions = " ".join(t for d in s.profile.decisions.values() for t in d)
    assert "switched_off" in decisions
    # the same filter, not adaptive: exact
    exact_scan = lazyscan.scan(path, where=col("k").isin_keys(dim) & (col("q") < 25), threads=1).to_table()
    _same_rows(exact_scan, exact)


def _removed(j: dict[str, float]) -> float:
    return sum(j[f"rows_{t}"] for t in ("partition", "statistics", "bloom", "dictionary", "page_index")) + j["rows_removed"]


def test_profile_accounts_for_every_row_the_join_filter_removes(tmp_path: Path) -> None:
    path = _fact(tmp_path, False, sort=True)
    dim = pa.array([3, 17, 2_500, 4_990], pa.int64())
    s = lazyscan.scan(path, columns=["note"], where=col("k").isin_keys(dim))
    got = s.to_table()
    _same_rows(got, _duckdb(path, dim, "KEYS").select(["note"]))
    p = s.profile
    (text, j), = p.join_filters.items()
    assert "bitmap of 4 integer keys" in text
    assert j["row_groups_statistics"] == p["row_groups_pruned_stats"] >= 2
    assert j["pages_page_index"] > 0 and j["rows_probed"] > 0
    assert _removed(j) == p["rows_total"] - got.num_rows
    assert j["value_probes"] == j["rows_probed"] and j["dictionary_probes"] == 0
    # survives the trip a Spark task's profile takes, and merges
    back = Profile.from_dict(p.as_dict())
    back.merge(p)
    assert back.join_filters[text]["rows_removed"] == 2 * j["rows_removed"]
    explained = s.explain()
    assert "join filters (removed by tier, probes):" in explained
    assert f"statistics {int(j['row_groups_statistics'])} row groups" in explained
    assert "page index" in explained and "values" in explained


def test_profile_shows_dictionary_pruning_and_probes_of_the_join_filter(tmp_path: Path) -> None:
    # even and odd row groups: every dictionary's range overlaps the keys, half hold none of them
    k = np.concatenate([np.arange(i % 2, 2_000, 2) for i in range(6)])
    path = tmp_path / "parity.parquet"
    pq.write_table(pa.table({"k": pa.array(k, pa.int64()), "v": np.arange(len(k))}), path, row_group_size=1_000)
    dim = pa.array(np.arange(0, 2_000, 4), pa.int64())
    s = lazyscan.scan(path, columns=["v"], where=col("k").isin_keys(dim))
    got = s.to_table()
    assert sorted(got.column("v").to_pylist()) == [i for i, x in enumerate(k) if x % 4 == 0]
    (j,) = s.profile.join_filters.values()
    assert j["row_groups_dictionary"] == 3 and j["rows_dictionary"] == 3_000
    assert j["dictionary_probes"] == 6 * 1_000 and j["value_probes"] == 0
    assert _removed(j) == len(k) - got.num_rows
    assert "dictionary 3 row groups (3,000 rows)" in s.profile.table()


def test_profile_says_when_the_join_filter_switched_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lazyscan.Scan, "KEY_SWITCH_MIN_ROWS", 2_000)
    path = _fact(tmp_path, False)
    s = lazyscan.scan(path, where=col("k").isin_keys(pa.array(np.arange(0, 4_500), pa.int64()), adaptive=True), threads=1)
    s.to_table()
    (j,) = s.profile.join_filters.values()
    assert j["switched_off"] == 1
    assert j["rows_probed"] < s.profile["rows_total"]  # probing stopped
    assert "switched off (the join filters)" in s.explain()


def test_key_filter_on_an_incompatible_column_names_column_and_types(tmp_path: Path) -> None:
    path = _fact(tmp_path, True)
    with pytest.raises(PredicateError, match=r"string/binary keys cannot be compared with column `?k`? of type int32"):
        lazyscan.scan(path, where=col("k").isin_keys(["a", "b"]))


@pytest.mark.parametrize(
    "column, keys",
    [
        (pa.array(np.arange(19_000, 19_400), pa.int32()).cast(pa.date32()), pa.array([19_003, 19_250, 25_000], pa.int32()).cast(pa.date32())),
        (pa.array(np.arange(400) * 1_000_000, pa.int64()).cast(pa.timestamp("us")), pa.array([3_000, 250_000, 7], pa.int64()).cast(pa.timestamp("ms"))),
        (pa.array([decimal.Decimal(i).scaleb(-2) for i in range(0, 40_000, 100)], pa.decimal128(12, 2)),
         pa.array([decimal.Decimal("3.0"), decimal.Decimal("250.0"), decimal.Decimal("0.1")], pa.decimal128(10, 1))),
        (pa.array([f"b{i}".encode() for i in range(400)], pa.binary()), pa.array(["b3", "b250", "zz"])),
    ],
    ids=["date", "timestamp", "decimal", "binary"],
)
@pytest.mark.parametrize("dictionary", [True, False])
def test_other_key_types_in_the_scan(tmp_path: Path, column: pa.Array, keys: pa.Array, dictionary: bool) -> None:
    n = 12_000
    rng = np.random.default_rng(5)
    pick = rng.integers(0, len(column), n)
    values = column.take(pa.array(pick))
    values = pc.if_else(pa.array(rng.random(n) < 0.05), pa.scalar(None, values.type), values)
    table = pa.table({"v": values, "i": pa.array(np.arange(n))})
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, row_group_size=3_000, data_page_size=2_048, use_dictionary=dictionary, write_page_index=True)
    got = lazyscan.scan(path, where=col("v").isin_keys(keys)).to_table()
    wanted = pc.is_in(values, value_set=keys.cast(values.type))
    expected = table.filter(pc.fill_null(wanted, False))
    assert got.num_rows == expected.num_rows > 0
    assert got.sort_by("i").column("i").equals(expected.column("i"))


@pytest.mark.parametrize("kind", ["bitmap", "sparse_bitmap", "hash", "bloom", "empty"])
@pytest.mark.parametrize("column_type", [pa.int64(), pa.int32(), pa.decimal128(12, 0), pa.decimal128(12, 2)])
def test_pages_ruled_out_at_once_as_one_by_one(kind, column_type) -> None:
    """The page tier's vectorized answer for a key filter equals evaluate_statistics page by
    page, on page statistics of every shape (unknown bounds, all NULL, no values, reversed or
    huge bounds, booleans)."""
    from lazyscan.format.statistics import ColumnStats
    from lazyscan.predicate import Answer, bind, evaluate_statistics, ruled_out_by_statistics

    rng = np.random.default_rng(len(kind) * 7 + len(str(column_type)))
    keys = {
        "bitmap": np.arange(1000, 1400, 3),
        "sparse_bitmap": rng.choice(10**6, 40, replace=False),  # ranges answered by bisecting its keys
        "hash": rng.choice(10**6, 300, replace=False) * 1000,
        "bloom": rng.choice(10**6, 3000, replace=False) * 1000,
        "empty": np.array([], np.int64),
    }[kind]
    kf = key_filter(pa.array(keys, pa.int64()), exact_limit=2000)
    assert kf.kind == kind.removeprefix("sparse_")
    assert (kind == "sparse_bitmap") == (kf.kind == "bitmap" and len(kf.words) > len(kf))
    schema = pa.schema([("x", column_type)])
    for negated in (False, True) if kind != "bloom" else (False,):  # NOT of a Bloom filter is refused
        expr = col("x").isin_keys(kf)
        bound = bind(~expr if negated else expr, schema)
        pages: list[ColumnStats | None] = [None]
        for _ in range(400):
            lo = int(rng.integers(-10, 10**6))
            hi = lo + int(rng.choice([0, 1, 5, 50, 3000, 10**5]))
            rows = int(rng.integers(0, 100))
            nulls = int(rng.integers(0, rows + 1)) if rows else 0
            shape = rng.integers(0, 10)
            if shape == 0:
                pages.append(ColumnStats(None, None, nulls, rows))
            elif shape == 1:
                pages.append(ColumnStats(hi, lo, nulls, rows))  # reversed
            elif shape == 2:
                pages.append(ColumnStats(lo, hi + (1 << 70), nulls, rows))  # beyond int64
            elif shape == 3:
                pages.append(ColumnStats(lo, hi, rows, rows))  # all NULL
            elif shape == 4:
                pages.append(ColumnStats(True, True, nulls, rows))
            elif shape == 5:
                pages.append(ColumnStats(lo, hi, None, None))
            else:
                pages.append(ColumnStats(lo, hi, nulls, rows))
        want = [st is not None and evaluate_statistics(bound, {"x": st}) is Answer.CANNOT_MATCH for st in pages]
        got = ruled_out_by_statistics(bound, "x", pages)
        assert got == want
        if not negated and kind != "empty" and column_type != pa.decimal128(12, 2):
            assert 0 < sum(got) < len(got)  # the pages tell both answers apart


@pytest.mark.parametrize("keys", [
    np.arange(1000, 1400, 3),  # dense bitmap
    np.random.default_rng(5).choice(10**6, 40, replace=False),  # sparse bitmap
    np.random.default_rng(6).choice(10**6, 40, replace=False) * 10**6,  # hash
])
def test_ranges_holding_a_key_equal_a_brute_force_search(keys: np.ndarray) -> None:
    """``any_in_ranges`` and ``in_range`` against the keys themselves, on ranges that start,
    end or sit exactly at keys and on the gaps between them."""
    kf = key_filter(keys)
    ks = np.sort(keys).tolist()
    rng = np.random.default_rng(9)
    ranges = []
    for a, b in itertools.pairwise(ks):
        ranges += [(a, a), (a + 1, b - 1), (a - 1, a), (b, b + 1), (a + 1, b), (a, b)]
    for _ in range(300):
        lo = int(rng.integers(ks[0] - 10, ks[-1] + 10))
        ranges.append((lo, lo + int(rng.choice([0, 1, 7, 1000, 10**5]))))
    ranges = [(lo, hi) for lo, hi in ranges if lo <= hi]
    want = [any(lo <= k <= hi for k in ks) for lo, hi in ranges]
    assert kf.any_in_ranges(ranges, pa.int64()) == want
    assert [kf.in_range(lo, hi, pa.int64())[0] for lo, hi in ranges] == want
    assert sum(want) and not all(want)
