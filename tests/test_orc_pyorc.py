"""ORC files written by pyorc (the ORC C++ writer through its Python binding): zlib, several
stripes and row groups, Bloom filters, every flat type with NULLs, with and without stripe
dictionaries.

- the physical layer (``OrcFile.read_column``, whole stripes and row selections) against
  pyarrow's ORC reader;
- the Bloom filters pyorc writes: present where asked, no false negatives, and stripes pruned by
  them in ``lazyscan.scan``;
- random predicates through ``lazyscan.scan`` against DuckDB over pyarrow's reading of the file;
- a writer time zone other than UTC, against pyorc's own reading (where pyarrow differs).

The physical layer is compared in pyarrow's unit for timestamps, nanoseconds; scans read
lazyscan's default, microseconds (floored), and are compared with the reference floored alike.

Two properties of the files are the ORC format's and its writer's, not the readers': CHAR(n)
values are stored padded with spaces to n characters, and a timestamp less than a second before
1970-01-01 UTC whose fraction of a second exceeds 999,999 ns (-0.5 s: second -1, fraction
0.5 s) reads one second later, by every reader: ORC stores such seconds one higher (toward
zero) and readers take one off negative ones, but the second stored here is 0.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as porc
import pyorc
import pytest

import lazyscan
from lazyscan import col
from lazyscan.format.counters import ReadCounters
from lazyscan.orc import OrcFile
from lazyscan.orc import proto as P
from lazyscan.orc.bloom import might_contain, value_hash
from tests.support.compare import assert_same_array
from tests.support.orc import CONVERTERS, SECOND
from tests.support.random_data import random_predicate, random_table
from tests.test_orc_reader import _selections, floored_to_micros, nanos
from tests.test_predicate_duckdb import duck_sql

#: column -> (pyorc type, Arrow type as pyarrow reads it); ``id`` (bigint, 0..n-1) comes first
TYPES: dict[str, tuple[str, pa.DataType]] = {
    "b": ("boolean", pa.bool_()),
    "i8": ("tinyint", pa.int8()),
    "i16": ("smallint", pa.int16()),
    "i32": ("int", pa.int32()),
    "i64": ("bigint", pa.int64()),
    "f32": ("float", pa.float32()),
    "f64": ("double", pa.float64()),
    "s": ("string", pa.string()),
    "vc": ("varchar(12)", pa.string()),
    "ch": ("char(6)", pa.string()),
    "bin": ("binary", pa.binary()),
    "d": ("date", pa.date32()),
    "ts": ("timestamp", pa.timestamp("ns")),
    "tsi": ("timestamp with local time zone", pa.timestamp("ns", tz="UTC")),
    "dec9": ("decimal(9,2)", pa.decimal128(9, 2)),
    "dec18": ("decimal(18,4)", pa.decimal128(18, 4)),
    "dec38": ("decimal(38,10)", pa.decimal128(38, 10)),
    "key": ("bigint", pa.int64()),  # distinct values: 3 * a permutation + 1
    "u": ("string", pa.string()),  # distinct values: 'u' + 7 digits of 2 * a permutation
}
#: columns whose values are sorted (NULLs stay where they are): statistics can prune them
CLUSTERED = ("i16", "i64", "s", "d", "ts", "dec18")
BLOOM_COLUMNS = ["i32", "i64", "f64", "s", "ch", "bin", "d", "ts", "dec9", "key", "u"]
#: the bloom columns whose values lazyscan probes: not decimals and timestamps (ORC hashes them in
#: forms the predicate layer does not produce), not CHAR (see test_char_bloom_filters_are_not_used)
PROBED = [c for c in BLOOM_COLUMNS if c not in ("ts", "dec9", "ch")]
LAYOUTS = {"direct": 0.0, "dictionary": 1.0}  # pyorc's dict_key_size_threshold
N = 20_000
STRIDE = 1_000


def _clustered(arr: pa.Array) -> pa.Array:
    """``arr`` with its non-null values sorted into the non-null positions."""
    valid = np.flatnonzero(arr.is_valid().to_numpy(zero_copy_only=False))
    order = pc.array_sort_indices(arr, null_placement="at_end").to_numpy()[: len(valid)]
    idx = np.zeros(len(arr), np.int64)
    idx[valid] = order
    mask = np.ones(len(arr), bool)
    mask[valid] = False
    return arr.take(pa.array(idx, mask=mask))


def make_table(n: int, seed: int) -> pa.Table:
    """The values written: random pool values (tests/support/random_data.py) with NULLs in every
    column but ``id``, some columns sorted, and two columns of distinct values for the Bloom
    filters."""
    rng = np.random.default_rng(seed)
    pooled = {name: t for name, (_, t) in TYPES.items() if name not in ("key", "u")}
    table = random_table(rng, n, pooled)
    columns = {}
    for name in table.column_names:
        arr = table.column(name).combine_chunks()
        if name == "tsi":
            # DuckDB holds time-zone-aware timestamps in microseconds: no finer values here
            arr = pc.multiply(pc.divide(arr.cast(pa.int64()), 1000), 1000).cast(arr.type)
        columns[name] = _clustered(arr) if name in CLUSTERED else arr
    nulls = rng.random(n) < 0.05
    columns["key"] = pa.array(rng.permutation(n) * 3 + 1, pa.int64(), mask=nulls)
    columns["u"] = pa.array([f"u{2 * x:07d}" for x in rng.permutation(n)], mask=rng.random(n) < 0.05)
    return pa.table(columns)


def orc_schema(names: list[str]) -> str:
    types = {"id": "bigint", **{name: t for name, (t, _) in TYPES.items()}}
    return "struct<" + ",".join(f"{name}:{types[name]}" for name in names) + ">"


def write_pyorc(path: Path, table: pa.Table, *, timezone: str = "UTC", dict_key_size_threshold: float = 0.0,
                bloom_filter_columns: list[str] | None = None) -> None:
    values = []
    for name in table.column_names:
        arr = table.column(name).combine_chunks()
        values.append(arr.cast(pa.int64()).to_pylist() if pa.types.is_timestamp(arr.type) else arr.to_pylist())
    with path.open("wb") as out, pyorc.Writer(
        out,
        orc_schema(table.column_names),
        batch_size=700,  # not a multiple of the stride: stripes end inside row groups
        stripe_size=32 * 1024,
        row_index_stride=STRIDE,
        compression=pyorc.CompressionKind.ZLIB,
        compression_block_size=4096,
        memory_block_size=1024,
        bloom_filter_columns=bloom_filter_columns,
        bloom_filter_fpp=0.01,
        timezone=zoneinfo.ZoneInfo(timezone),
        converters=CONVERTERS,
        dict_key_size_threshold=dict_key_size_threshold,
    ) as writer:
        writer.writerows(zip(*values))


def reads_as(ns: np.ndarray) -> np.ndarray:
    """UTC timestamps (ns) as an ORC reader gives them back (see the module docstring)."""
    lost = (ns > -SECOND) & (ns < 0) & (ns % SECOND > 999_999)
    return np.where(lost, ns + SECOND, ns)


def as_stored(table: pa.Table) -> pa.Table:
    """What an ORC reader gives for ``table`` written by pyorc in UTC (see the module docstring)."""
    columns = {}
    for name in table.column_names:
        arr = table.column(name).combine_chunks()
        if name == "ch":
            arr = pa.array([None if v is None else v.ljust(6) for v in arr.to_pylist()], pa.string())
        if pa.types.is_timestamp(arr.type):
            v = reads_as(arr.cast(pa.int64()).fill_null(0).to_numpy())
            arr = pa.array(v, pa.int64(), mask=arr.is_null().to_numpy(zero_copy_only=False)).cast(arr.type)
        columns[name] = arr
    return pa.table(columns)


@pytest.fixture(scope="module")
def pyorc_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, pa.Table]]:
    """layout -> (file, pyarrow's reading of it)."""
    root = tmp_path_factory.mktemp("pyorc")
    out = {}
    for i, (layout, threshold) in enumerate(LAYOUTS.items()):
        table = make_table(N, seed=40 + i)
        path = root / f"{layout}.orc"
        write_pyorc(path, table, dict_key_size_threshold=threshold, bloom_filter_columns=BLOOM_COLUMNS)
        reference = porc.read_table(path)
        # the reference is what was written, up to the two properties of the writer
        expected = as_stored(table)
        assert reference.schema == expected.schema
        for name in reference.column_names:
            assert_same_array(reference.column(name).combine_chunks(), expected.column(name), f"pyarrow {layout} {name}")
        out[layout] = (path, reference)
    return out


def in_micros(table: pa.Table) -> pa.Table:
    """``table`` with its timestamps as lazyscan's scans read them: floored to microseconds."""
    return pa.table([floored_to_micros(_array(c)) for c in table.columns], names=table.column_names)


def _array(a: pa.Array | pa.ChunkedArray) -> pa.Array:
    return a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a


def _storage(arr: pa.Array) -> list[Any]:
    """Values as the Bloom filter probes take them (bytes for strings, days for dates)."""
    if pa.types.is_date32(arr.type):
        return arr.cast(pa.int32()).to_pylist()
    if pa.types.is_string(arr.type):
        return [None if v is None else v.encode() for v in arr.to_pylist()]
    return arr.to_pylist()


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_every_column_and_stripe_equals_pyarrow(pyorc_files: dict, layout: str) -> None:
    path, reference = pyorc_files[layout]
    f = nanos(path)
    ref = porc.ORCFile(str(path))
    assert P.COMPRESSION_NAMES[f.compression] == "ZLIB" and f.row_index_stride == STRIDE
    assert f.num_stripes == ref.nstripes >= 4 and f.num_rows == N
    assert f.arrow_schema == ref.schema
    # stripes end inside row groups, so their last row groups are partial
    assert any(f.stripe(s).number_of_rows % STRIDE for s in range(f.num_stripes))
    want = {"DICTIONARY_V2"} if layout == "dictionary" else {"DIRECT_V2"}
    assert {P.ENCODING_NAMES[f.encoding(0, name).kind] for name in ("s", "vc", "ch", "u")} == want
    assert P.ENCODING_NAMES[f.encoding(0, "bin").kind] == "DIRECT_V2"  # the C++ writer never uses dictionaries for binary
    for s in range(f.num_stripes):
        expected = ref.read_stripe(s)
        for c in f.columns:
            got = f.read_column(s, c.name)
            exp = expected.column(c.name)
            assert got.type == exp.type, (s, c.name)
            assert_same_array(got, exp, f"stripe {s}, column {c.name}")
    # every column holds NULLs and NaN made it through
    whole = pa.table({c.name: pa.concat_arrays([f.read_column(s, c.name) for s in range(f.num_stripes)]) for c in f.columns})
    assert all(whole.column(name).null_count > 0 for name in TYPES)
    assert pc.sum(pc.is_nan(whole.column("f64"))).as_py() > 0
    for name in whole.column_names:
        assert_same_array(whole.column(name).combine_chunks(), reference.column(name), name)
    micros = OrcFile(path)
    for name in ("ts", "tsi"):
        got = pa.concat_arrays([micros.read_column(s, name) for s in range(f.num_stripes)])
        assert_same_array(got, floored_to_micros(_array(reference.column(name))), f"{name} (us)")


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_selections_equal_pyarrow_take(pyorc_files: dict, layout: str) -> None:
    path, _ = pyorc_files[layout]
    f = nanos(path)
    ref = porc.ORCFile(str(path))
    rng = np.random.default_rng(len(layout))
    for s in range(f.num_stripes):
        n = f.stripe(s).number_of_rows
        groups = -(-n // STRIDE)
        expected = ref.read_stripe(s)
        g = int(rng.integers(groups))
        whole_group = np.arange(g * STRIDE, min((g + 1) * STRIDE, n))
        last_group = np.arange((groups - 1) * STRIDE, n)  # partial where the stripe ends inside it
        one_percent = np.sort(rng.choice(n, max(1, n // 100), replace=False))
        selections = [*_selections(n, STRIDE, rng), whole_group, last_group, one_percent]
        for rows in selections:
            touched = len(np.unique(rows // STRIDE))
            for c in f.columns:
                counters = ReadCounters()
                got = f.read_column(s, c.name, rows, counters)
                assert_same_array(got, _array(expected.column(c.name)).take(pa.array(rows)),
                                  f"stripe {s} {c.name} rows {rows[:3]}..{len(rows)}")
                if touched * STRIDE <= n // 2:  # a selective read: only the row groups of its rows
                    assert counters.values_decoded <= touched * STRIDE, (s, c.name)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_bloom_filters_present_and_without_false_negatives(pyorc_files: dict, layout: str) -> None:
    path, _ = pyorc_files[layout]
    f = OrcFile(path)
    ref = porc.ORCFile(str(path))
    false_hits = tries = 0
    for s in range(f.num_stripes):
        stripe = ref.read_stripe(s)
        n = f.stripe(s).number_of_rows
        for c in f.columns:
            blooms = f.bloom_filters(s, c.name)
            if c.name not in BLOOM_COLUMNS:
                assert blooms is None, c.name
                continue
            assert blooms is not None and len(blooms) == -(-n // STRIDE), (s, c.name)
            assert all(b.utf8 and b.num_hash_functions > 0 and len(b.bitset) > 0 for b in blooms)
            if c.name not in PROBED:
                continue
            values = _storage(_array(stripe.column(c.name)))
            for g, entry in enumerate(blooms):
                mine = {v for v in values[g * STRIDE : (g + 1) * STRIDE] if v is not None}
                assert mine and all(value_hash(v, c.arrow_type, True) is not None for v in mine)
                missed = [v for v in mine if not might_contain(entry, v, c.arrow_type)]
                assert not missed, (s, g, c.name, missed[:5])
            if c.name in ("key", "u"):  # distinct values: values of other row groups are absent
                for g, entry in enumerate(blooms):
                    others = [v for v in values[:g * STRIDE] + values[(g + 1) * STRIDE :] if v is not None][:300]
                    false_hits += sum(might_contain(entry, v, c.arrow_type) for v in others)
                    tries += len(others)
    assert tries > 0 and false_hits / tries < 0.03


def _bloom_prunable(f: OrcFile, name: str, values: list[Any]) -> int:
    """The stripes whose every row-group Bloom filter rules out all of ``values``."""
    t = f.column(name).arrow_type
    out = 0
    for s in range(f.num_stripes):
        blooms = f.bloom_filters(s, name) or []
        if blooms and not any(might_contain(b, v, t) for b in blooms for v in values):
            out += 1
    return out


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_bloom_filters_prune_stripes_in_scan(pyorc_files: dict, layout: str) -> None:
    path, reference = pyorc_files[layout]
    reference = in_micros(reference)
    f = OrcFile(path)
    u = reference.column("u").combine_chunks()
    present = u[N // 2].as_py()
    key_present = reference.column("key")[123].as_py()
    # absent values (odd numbers in u, multiples of 3 in key) lie inside every stripe's
    # [min, max]: statistics cannot prune them
    cases = [
        ("u", col("u") == "u0012345", ["u0012345"], None),
        ("u", col("u") == present, [present], None),
        ("u", col("u").isin(["u0020001", present]), ["u0020001", present], None),
        ("key", col("key") == 30_000, [30_000], None),
        ("key", col("key") == key_present, [key_present], None),
        ("key", (col("key") == key_present) & (col("i32") != 0), [key_present], pc.field("i32") != 0),
    ]
    stripe_of_row = np.repeat(np.arange(f.num_stripes), [f.stripe(i).number_of_rows for i in range(f.num_stripes)])
    for name, where, probe, also in cases:
        s = lazyscan.scan(path, where=where)
        got = s.to_table()
        mask = pc.is_in(reference.column(name), pa.array(probe, reference.schema.field(name).type))
        expected = reference.filter(pc.fill_null(mask, False))
        if also is not None:
            expected = expected.filter(also)
        assert sorted(got.column("id").to_pylist()) == sorted(expected.column("id").to_pylist()), where
        for c in got.column_names:
            assert_same_array(got.sort_by("id").column(c).combine_chunks(), expected.sort_by("id").column(c), f"{where} {c}")
        p = s.profile
        assert p["row_groups_total"] == f.num_stripes and p["row_groups_pruned_stats"] == 0, where
        # exactly the stripes the filters rule out are pruned: all but those holding a value
        # (and at most one more, a false positive)
        prunable = _bloom_prunable(f, name, probe)
        assert p["row_groups_pruned_bloom"] == prunable, where
        holding = len(set(stripe_of_row[np.flatnonzero(pc.fill_null(mask, False).to_numpy(zero_copy_only=False))].tolist()))
        assert prunable >= f.num_stripes - holding - 1, where
        off = lazyscan.scan(path, where=where, prune_bloom=False)
        assert sorted(off.to_table().column("id").to_pylist()) == sorted(got.column("id").to_pylist())
        assert off.profile["row_groups_pruned_bloom"] == 0


def _duck(reference: pa.Table) -> duckdb.DuckDBPyConnection:
    """DuckDB over ``reference``, time-zone-aware timestamps in microseconds (exact here), which
    the predicate literals of tests/test_predicate_duckdb.py compare with."""
    con = duckdb.connect()
    con.execute("SET threads TO 1")
    con.execute("SET TimeZone = 'UTC'")
    columns = [
        c.cast(pa.timestamp("us", tz=c.type.tz)) if pa.types.is_timestamp(c.type) and c.type.tz else c
        for c in reference.columns
    ]
    con.register("t", pa.table(columns, names=reference.column_names))
    return con


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_random_predicates_match_duckdb(pyorc_files: dict, layout: str) -> None:
    path, reference = pyorc_files[layout]
    reference = in_micros(reference)
    con = _duck(reference)
    rng = np.random.default_rng(7 + len(layout))
    columns = [name for name in reference.column_names if name != "id"]
    pruned = 0
    for _ in range(60):
        expr = random_predicate(rng, reference.schema, 3, empty_in=False, columns=columns)
        sql = duck_sql(expr, reference.schema)
        want = [r[0] for r in con.execute(f"SELECT id FROM t WHERE {sql} ORDER BY id").fetchall()]
        s = lazyscan.scan(path, where=expr, threads=2)
        got = s.to_table().sort_by("id")
        assert got.column("id").to_pylist() == want, f"{layout}: {expr}"
        expected = reference.take(pa.array(want, pa.int64()))
        for name in got.column_names:
            assert_same_array(got.column(name).combine_chunks(), expected.column(name), f"{expr}: {name}")
        p = s.profile
        pruned += p["row_groups_pruned_stats"] + p["row_groups_pruned_bloom"] + p["row_groups_pruned_dictionary"]
        pruned += p["rows_total"] - p["rows_after_pruning"] > 0
    assert pruned > 0  # the sorted columns' statistics do prune


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_leaves_on_sorted_columns_match_duckdb(pyorc_files: dict, layout: str) -> None:
    """Shallow predicates on the sorted columns, where the statistics of stripes and row groups
    decide most of the answer."""
    path, reference = pyorc_files[layout]
    reference = in_micros(reference)
    con = _duck(reference)
    rng = np.random.default_rng(11 + len(layout))
    pruned_stripes = pruned_rows = 0
    for _ in range(80):
        expr = random_predicate(rng, reference.schema, 1, empty_in=False, columns=list(CLUSTERED))
        sql = duck_sql(expr, reference.schema)
        want = [r[0] for r in con.execute(f"SELECT id FROM t WHERE {sql} ORDER BY id").fetchall()]
        s = lazyscan.scan(path, columns=["id"], where=expr)
        assert sorted(s.to_table().column("id").to_pylist()) == want, str(expr)
        pruned_stripes += s.profile["row_groups_pruned_stats"]
        pruned_rows += s.profile["rows_total"] - s.profile["rows_after_pruning"]
    assert pruned_stripes > 50 and pruned_rows > 20 * N


def test_writer_time_zone_other_than_utc(tmp_path: Path) -> None:
    """Timestamps written with pyorc's ``timezone`` set to New York, read as pyorc reads them:
    TIMESTAMP as the wall clock of the instant in the writer's zone, TIMESTAMP WITH LOCAL TIME
    ZONE as the UTC instant.

    pyarrow's ORC reader is not the reference here: before the zone's first transition (1883)
    it uses the standard offset, -5:00, where the zone database (and pyorc) have the local mean
    time, -4:56:02; and it applies the one-second correction of negative seconds to the wall
    clock rather than to the instant, so in the first second after 1970-01-01 UTC (a negative
    wall clock in New York) it reads a value with a fraction above 999,999 ns one second early.
    Elsewhere it agrees.
    """
    tz = "America/New_York"
    rng = np.random.default_rng(3)
    n = 6_000
    lo, hi = (int(dt.datetime(y, 1, 1, tzinfo=dt.timezone.utc).timestamp()) for y in (1850, 2150))
    instants = rng.integers(lo, hi, n) * SECOND + rng.integers(0, SECOND, n)
    edges = [0, 1, 999_999, 1_000_000, SECOND - 1, SECOND, -SECOND, -SECOND - 1, -2 * SECOND + 5, -SECOND + 500, -500,
             # DST changes: the New York wall clock repeats / skips an hour
             int(dt.datetime(2021, 11, 7, 5, 30, tzinfo=dt.timezone.utc).timestamp()) * SECOND,
             int(dt.datetime(2021, 11, 7, 6, 30, tzinfo=dt.timezone.utc).timestamp()) * SECOND,
             int(dt.datetime(2021, 3, 14, 7, 30, tzinfo=dt.timezone.utc).timestamp()) * SECOND + 7]
    instants[rng.choice(n, len(edges) * 20, replace=False)] = np.repeat(edges, 20)
    nulls = rng.random(n) < 0.1
    table = pa.table({
        "id": pa.array(np.arange(n)),
        "ts": pa.array(instants, pa.int64(), mask=nulls).cast(pa.timestamp("ns")),
        "tsi": pa.array(instants, pa.int64(), mask=np.roll(nulls, 1)).cast(pa.timestamp("ns", tz="UTC")),
    })
    path = tmp_path / "new_york.orc"
    write_pyorc(path, table, timezone=tz, bloom_filter_columns=["ts", "tsi"])
    with path.open("rb") as fo:
        back = list(pyorc.Reader(fo, timezone=zoneinfo.ZoneInfo(tz), converters=CONVERTERS))
    zone = zoneinfo.ZoneInfo(tz)

    def wall(instant: int | None) -> int | None:
        if instant is None:
            return None
        offset = dt.datetime.fromtimestamp(instant // SECOND, zone).utcoffset()
        assert offset is not None
        return instant + int(offset.total_seconds()) * SECOND

    expected = {
        "ts": pa.array([wall(r[1]) for r in back], pa.int64()).cast(pa.timestamp("ns")),
        "tsi": pa.array([r[2] for r in back], pa.int64()).cast(pa.timestamp("ns", tz="UTC")),
    }
    # pyorc reads back what it wrote, but for the second before 1970 (see the module docstring)
    for i, name in ((1, "ts"), (2, "tsi")):
        written = table.column(name).cast(pa.int64())
        stored = reads_as(written.fill_null(0).to_numpy())
        assert [r[i] for r in back] == [None if w is None else int(v) for w, v in zip(written.to_pylist(), stored)]
    f = nanos(path)
    micros = OrcFile(path)
    assert f.num_stripes > 1 and f.stripe_footer(0).writer_timezone == tz
    for name in ("ts", "tsi"):
        got = pa.concat_arrays([f.read_column(s, name) for s in range(f.num_stripes)])
        assert_same_array(got, expected[name], name)
        got = pa.concat_arrays([micros.read_column(s, name) for s in range(f.num_stripes)])
        assert_same_array(got, floored_to_micros(expected[name]), f"{name} (us)")
        rows = np.sort(rng.choice(f.stripe(1).number_of_rows, 40, replace=False))
        first = f.stripe(0).number_of_rows
        assert_same_array(f.read_column(1, name, rows), expected[name].take(pa.array(rows + first)), name)
    # pyarrow agrees but before 1883 and in the first second after the epoch
    arrow = porc.read_table(path).column("ts").combine_chunks().cast(pa.int64()).fill_null(0).to_numpy()
    ours = expected["ts"].cast(pa.int64()).fill_null(0).to_numpy()
    inst = np.array([0 if r[1] is None else r[1] for r in back])
    differ = inst[arrow != ours]
    lmt_end = int(dt.datetime(1883, 11, 18, 17, tzinfo=dt.timezone.utc).timestamp()) * SECOND
    assert ((differ < lmt_end) | ((differ >= 0) & (differ < SECOND))).all()
    # scans: the wall clock compares for TIMESTAMP, the instant for the UTC column
    # (DuckDB compares the UTC column's instants as timestamps without time zone, in nanoseconds)
    con = duckdb.connect()
    # (the values floored to microseconds, as the scan reads them)
    micro = {name: floored_to_micros(expected[name]) for name in expected}
    con.register("t", pa.table({"id": table.column("id"), "ts": micro["ts"], "tsi": micro["tsi"].cast(pa.timestamp("us"))}))
    for where in [
        "ts = TIMESTAMP '2021-11-07 01:30:00'",
        "ts >= TIMESTAMP '1969-12-31 19:00:00' AND ts < TIMESTAMP '1969-12-31 19:00:01'",
        "ts < TIMESTAMP '1883-11-18 12:03:58'",
        "tsi = TIMESTAMP '2021-11-07 06:30:00'",
        "tsi BETWEEN TIMESTAMP '1969-12-31 23:59:58' AND TIMESTAMP '1970-01-01 00:00:01'",
        "tsi > TIMESTAMP '2100-01-01 00:00:00' OR ts IS NULL",
    ]:
        want = [r[0] for r in con.execute(f"SELECT id FROM t WHERE {where} ORDER BY id").fetchall()]
        got = lazyscan.scan(path, columns=["id"], where=where).to_table()
        assert sorted(got.column("id").to_pylist()) == want and want, where


@pytest.mark.parametrize("values", [
    [-500_000, -1, None, -SECOND + 2_000_000],  # all in the second before 1970: statistics [-998, -1] ms
    [-1_000_000, 500 * 10**6, None],  # one of them beside a later value: maximum 500 ms
    [-2 * SECOND, -1_500_000_000, -1_000_000],
], ids=["only", "beside_later", "beside_earlier"])
def test_statistics_bound_timestamps_of_the_second_before_1970(tmp_path: Path, values: list[int | None]) -> None:
    """The writer takes the statistics of such a value from the instant it was given (a
    millisecond before 1970) while the value reads a second later (see the module docstring):
    the bounds lazyscan derives must still hold the value read."""
    table = pa.table({
        "id": pa.array(range(len(values)), pa.int64()),
        "ts": pa.array(values, pa.int64()).cast(pa.timestamp("ns")),
        "tsi": pa.array(values, pa.int64()).cast(pa.timestamp("ns", tz="UTC")),
    })
    path = tmp_path / "edge.orc"
    write_pyorc(path, table)
    reference = porc.read_table(path)
    assert reference.equals(as_stored(table))
    # microseconds, floored, as lazyscan reads them by default
    read = [None if v is None else v // 1000 for v in reference.column("ts").cast(pa.int64()).to_pylist()]
    f = OrcFile(path)
    stats = f.statistics(0, "tsi")
    assert stats is not None and stats.min is not None and stats.max is not None
    assert all(stats.min <= v <= stats.max for v in read if v is not None), (stats, read)
    in_nanos = nanos(path).statistics(0, "tsi")
    assert in_nanos is not None and in_nanos.min is not None and in_nanos.max is not None
    assert all(in_nanos.min <= v * 1000 and v * 1000 + 999 <= in_nanos.max for v in read if v is not None), (in_nanos, read)
    for v in read:
        if v is None:
            continue
        text = dt.datetime.fromtimestamp(v / 1e6, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")
        for name in ("ts", "tsi"):
            for op, keep in (("=", lambda w, v=v: w == v), (">=", lambda w, v=v: w >= v)):
                got = lazyscan.scan(path, columns=["id"], where=f"{name} {op} TIMESTAMP '{text}'").to_table()
                want = [i for i, w in enumerate(read) if w is not None and keep(w)]
                assert sorted(got.column("id").to_pylist()) == want, (name, op, text)


def test_char_bloom_filters_are_not_used(pyorc_files: dict) -> None:
    """pyorc's writer (ORC C++ 2.3.1) stores CHAR(n) values padded with spaces, but its Bloom
    filters for them hold neither those values nor the unpadded ones (rather some of them padded
    with NUL bytes): the scan must not prune with them."""
    path, reference = pyorc_files["direct"]
    assert OrcFile(path).bloom_filters(0, "ch") is not None
    values = {v for v in porc.ORCFile(str(path)).read_stripe(0).column("ch").to_pylist() if v is not None}
    for value in sorted(values)[:8]:
        s = lazyscan.scan(path, columns=["id"], where=col("ch") == value)
        want = reference.filter(pc.fill_null(pc.equal(reference.column("ch"), value), False)).column("id").to_pylist()
        assert sorted(s.to_table().column("id").to_pylist()) == want and want, repr(value)
        assert s.profile["row_groups_pruned_bloom"] == 0
