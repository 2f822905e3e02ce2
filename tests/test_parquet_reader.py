"""Differential tests of the physical reader against pyarrow on generated files.

Files cover every flat type lazyscan maps, written by pyarrow with dictionary on/off, data page
v1/v2, every codec, tiny pages, page index on/off, delta and byte-stream-split encodings,
dictionary fallback mid-chunk, and nulls at 0/50/100%. Selections cover empty, one row,
first/last row of every page, random 0.1/10/90%, clustered runs and all rows.
"""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lazyscan.parquet import PageCache, ParquetFile, ReadCounters, ReaderOptions, RowRanges
from lazyscan.parquet.match import BytesMatcher
from lazyscan.parquet.pages import PageDecoder
from tests.support.compare import assert_same_array

N = 3000


def make_column(kind: str, n: int, null_frac: float, rng: np.random.Generator) -> pa.Array:
    mask = rng.random(n) < null_frac if null_frac else None
    if kind == "bool":
        arr = pa.array(rng.random(n) < 0.3, mask=mask)
    elif kind in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        info = np.iinfo(kind)
        vals = rng.integers(info.min, info.max, size=n, dtype=kind, endpoint=True)
        vals[: min(3, n)] = [info.min, info.max, 0][: min(3, n)]
        arr = pa.array(vals, mask=mask)
    elif kind == "int32_small":
        arr = pa.array(rng.integers(-50, 50, size=n).astype(np.int32), mask=mask)
    elif kind == "float16":
        vals = rng.normal(size=n).astype(np.float16)
        vals[rng.random(n) < 0.05] = np.nan
        arr = pa.array(vals, mask=mask)
    elif kind in ("float32", "float64"):
        vals = rng.normal(size=n).astype(kind) * 1e3
        vals[rng.random(n) < 0.05] = np.nan
        vals[rng.random(n) < 0.02] = -0.0
        vals[rng.random(n) < 0.02] = np.inf
        arr = pa.array(vals, mask=mask)
    elif kind == "string":
        words = ["", "a", "pinto", "beans", "é", "日本語", "x" * 40, "carefully regular"]
        vals = [words[i] + str(j) for i, j in zip(rng.integers(0, len(words), n), rng.integers(0, 50, n))]
        arr = pa.array(vals, type=pa.string(), mask=mask)
    elif kind == "string_dict_small":
        vals = [f"s{i}" for i in rng.integers(0, 7, n)]
        arr = pa.array(vals, type=pa.string(), mask=mask)
    elif kind == "binary":
        vals = [bytes(rng.integers(0, 256, int(k), dtype=np.uint8)) for k in rng.integers(0, 20, n)]
        arr = pa.array(vals, type=pa.binary(), mask=mask)
    elif kind == "fixed":
        vals = [bytes(rng.integers(0, 256, 5, dtype=np.uint8)) for _ in range(n)]
        arr = pa.array(vals, type=pa.binary(5), mask=mask)
    elif kind.startswith("decimal"):
        precision = {"decimal9": 9, "decimal18": 18, "decimal38": 38}[kind]
        scale = 2
        digits = rng.integers(0, 10, size=(n, precision - 1))
        vals = []
        for row, sign in zip(digits, rng.random(n) < 0.5):
            text = "".join(map(str, row))
            d = decimal.Decimal(("-" if sign else "") + text[:-scale] + "." + text[-scale:])
            vals.append(d)
        arr = pa.array(vals, type=pa.decimal128(precision, scale), mask=mask)
    elif kind == "date32":
        arr = pa.array(rng.integers(-30000, 30000, n).astype(np.int32), mask=mask).cast(pa.date32())
    elif kind.startswith("ts_"):
        unit, tz = {"ts_ms": ("ms", None), "ts_us_utc": ("us", "UTC"), "ts_ns": ("ns", None), "ts_us_tz": ("us", "Europe/Paris")}[kind]
        arr = pa.array(rng.integers(-(10**12), 10**12, n), mask=mask).cast(pa.timestamp(unit, tz))
    elif kind == "time_ms":
        arr = pa.array(rng.integers(0, 86_400_000, n).astype(np.int32), mask=mask).cast(pa.time32("ms"))
    elif kind == "time_us":
        arr = pa.array(rng.integers(0, 86_400_000_000, n), mask=mask).cast(pa.time64("us"))
    else:
        raise AssertionError(kind)
    return arr


KINDS = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "int32_small",
    "float16", "float32", "float64", "string", "string_dict_small", "binary", "fixed",
    "decimal9", "decimal18", "decimal38", "date32", "ts_ms", "ts_us_utc", "ts_ns", "ts_us_tz",
    "time_ms", "time_us",
]


def make_table(n: int, null_frac: float, seed: int, kinds: list[str] = KINDS) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({k: make_column(k, n, null_frac, rng) for k in kinds})


def page_boundary_selections(pf: ParquetFile, rg: int, col: int, n: int, rng: np.random.Generator) -> list[np.ndarray]:
    layout = pf.page_layout(rg, col)
    firsts = [p.first_row for p in layout.pages]
    lasts = [p.first_row + p.num_rows - 1 for p in layout.pages]
    sels = [
        np.array([], np.int64),
        np.array([int(rng.integers(0, n))]),
        np.array(sorted(set(firsts))),
        np.array(sorted(set(lasts))),
        np.array(sorted(set(firsts) | set(lasts))),
        np.arange(n),
    ]
    for frac in (0.001, 0.1, 0.9):
        k = max(1, int(n * frac))
        sels.append(np.sort(rng.choice(n, size=k, replace=False)))
    # a few clustered runs
    starts = np.sort(rng.choice(n, size=3, replace=False))
    runs = np.unique(np.concatenate([np.arange(s, min(n, s + 25)) for s in starts]))
    sels.append(runs)
    return sels


def check_file(path: Path, seed: int = 0, options: ReaderOptions | None = None) -> None:
    ref = pq.ParquetFile(path)
    pf = ParquetFile(str(path), options=options)
    rng = np.random.default_rng(seed)
    for rg in range(pf.num_row_groups):
        table = ref.read_row_group(rg)
        n = table.num_rows
        for desc in pf.schema.columns:
            expected = table.column(desc.path[0])
            assert_same_array(pf.read_column(rg, desc.index), expected, f"{path.name} rg{rg} {desc.name} full")
            if n == 0:
                continue
            for sel in page_boundary_selections(pf, rg, desc.index, n, rng):
                got = pf.read_column(rg, desc.index, sel)
                assert_same_array(got, expected.take(pa.array(sel, pa.int64())), f"{path.name} rg{rg} {desc.name} |sel|={len(sel)}")
        if n == 0:
            continue
        # all columns in one pass, for selections cut at the first column's page boundaries
        indexes = [d.index for d in pf.schema.columns]
        for sel in page_boundary_selections(pf, rg, 0, n, rng):
            got_all = pf.read_columns(rg, indexes, sel)
            for desc, got in zip(pf.schema.columns, got_all):
                want = table.column(desc.path[0]).take(pa.array(sel, pa.int64()))
                assert_same_array(got, want, f"{path.name} rg{rg} {desc.name} read_columns |sel|={len(sel)}")


WRITER_CASES = {
    "dict_v1_snappy": dict(use_dictionary=True, data_page_version="1.0", compression="snappy"),
    "plain_v2_zstd": dict(use_dictionary=False, data_page_version="2.0", compression="zstd"),
    "dict_v2_gzip_tiny_pages": dict(use_dictionary=True, data_page_version="2.0", compression="gzip", data_page_size=512),
    "plain_v1_none_tiny_pages_noindex": dict(use_dictionary=False, compression="none", data_page_size=300, write_page_index=False),
    "dict_v1_brotli_index": dict(use_dictionary=True, compression="brotli", data_page_size=700, write_page_index=True),
    "plain_v1_lz4": dict(use_dictionary=False, compression="lz4", data_page_size=1000, write_page_index=True),
    "dict_fallback": dict(use_dictionary=True, compression="snappy", dictionary_pagesize_limit=200, data_page_size=400, write_page_index=True),
    "v2_uncompressed_pages": dict(use_dictionary=False, data_page_version="2.0", compression="snappy", data_page_size=400),
}


@pytest.mark.parametrize("case", sorted(WRITER_CASES))
@pytest.mark.parametrize("null_frac", [0.0, 0.5, 1.0])
def test_writer_options(tmp_path: Path, case: str, null_frac: float) -> None:
    table = make_table(N if null_frac != 1.0 else 500, null_frac, seed=hash(case) % 1000)
    path = tmp_path / f"{case}.parquet"
    pq.write_table(table, path, row_group_size=1300, **WRITER_CASES[case])
    check_file(path, seed=1)


ENCODING_CASES = {
    "delta_ints": (["int32", "int64", "int8", "uint32", "uint64", "date32", "ts_us_utc", "int32_small"], "DELTA_BINARY_PACKED"),
    "delta_length": (["string", "binary"], "DELTA_LENGTH_BYTE_ARRAY"),
    "delta_byte_array": (["string", "binary", "fixed", "string_dict_small"], "DELTA_BYTE_ARRAY"),
    "byte_stream_split": (["float32", "float64", "int32", "int64", "fixed", "float16", "decimal9"], "BYTE_STREAM_SPLIT"),
}


@pytest.mark.parametrize("case", sorted(ENCODING_CASES))
@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("null_frac", [0.0, 0.5])
def test_column_encodings(tmp_path: Path, case: str, version: str, null_frac: float) -> None:
    kinds, encoding = ENCODING_CASES[case]
    table = make_table(N, null_frac, seed=7, kinds=kinds)
    path = tmp_path / f"{case}.parquet"
    pq.write_table(
        table, path, use_dictionary=False, column_encoding=dict.fromkeys(kinds, encoding),
        data_page_version=version, data_page_size=2000, row_group_size=2000, compression="snappy",
    )
    meta = pq.ParquetFile(path).metadata.row_group(0).column(0)
    assert encoding in meta.encodings
    check_file(path, seed=2)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kind=st.sampled_from(KINDS),
    n=st.integers(1, 700),
    null_frac=st.sampled_from([0.0, 0.2, 0.9]),
    dictionary=st.booleans(),
    version=st.sampled_from(["1.0", "2.0"]),
    page_size=st.sampled_from([64, 256, 4096]),
    threshold=st.sampled_from([0, 3, 50]),
    seed=st.integers(0, 10_000),
    data=st.data(),
)
def test_random_selections(
    tmp_path: Path, kind: str, n: int, null_frac: float, dictionary: bool, version: str,
    page_size: int, threshold: int, seed: int, data: st.DataObject,
) -> None:
    table = make_table(n, null_frac, seed, kinds=[kind])
    path = tmp_path / f"h_{kind}_{seed}.parquet"
    pq.write_table(table, path, use_dictionary=dictionary, data_page_version=version, data_page_size=page_size, row_group_size=max(1, n // 2))
    pf = ParquetFile(str(path), options=ReaderOptions(materialization_threshold=threshold))
    ref = pq.ParquetFile(path)
    for rg in range(pf.num_row_groups):
        expected = ref.read_row_group(rg).column(0)
        m = len(expected)
        rows = data.draw(st.lists(st.integers(0, m - 1), max_size=m, unique=True).map(sorted))
        got = pf.read_column(rg, 0, np.array(rows, dtype=np.int64))
        assert_same_array(got, expected.take(pa.array(rows, pa.int64())), f"{kind} rows={rows[:10]}")


def test_selective_read_fetches_only_needed_pages(tmp_path: Path) -> None:
    n = 200_000
    table = pa.table({"k": np.arange(n, dtype=np.int64), "s": pa.array([f"value-{i % 977}-{i}" for i in range(n)])})
    path = tmp_path / "pages.parquet"
    pq.write_table(table, path, use_dictionary=False, compression="snappy", data_page_size=16 * 1024, row_group_size=n, write_page_index=True)
    pf = ParquetFile(str(path))
    layout = pf.page_layout(0, "s")
    assert len(layout.pages) > 20
    rows = np.array([5, 100_000, 199_999])
    c = ReadCounters()
    got = pf.read_column(0, "s", rows, counters=c)
    assert got.to_pylist() == [f"value-{i % 977}-{i}" for i in rows]
    holding = {i for i, p in enumerate(layout.pages) for r in rows if p.first_row <= r < p.first_row + p.num_rows}
    assert c.pages_fetched == len(holding)
    assert c.pages_skipped == len(layout.pages) - len(holding)
    assert c.bytes_fetched == sum(layout.pages[i].size for i in holding)
    # decompressed bytes: exactly the selected pages' bodies
    assert 0 < c.bytes_decompressed < sum(p.size for p in layout.pages) / 5


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("dictionary", [False, True])
def test_match_pass_keeps_pages_for_the_output_read(tmp_path: Path, version: str, dictionary: bool) -> None:
    n = 100_000
    values = [None if i % 11 == 0 else f"v{i % 5003}-{i % 7}" for i in range(n)]
    path = tmp_path / "match.parquet"
    pq.write_table(
        pa.table({"s": pa.array(values)}), path, use_dictionary=dictionary, compression="zstd",
        data_page_size=8 * 1024, data_page_version=version, write_page_index=True,
    )
    pf = ParquetFile(str(path))
    needle = "v17-3"
    cache = PageCache()
    first = ReadCounters()
    chunk = pf.read_assembled(0, "s", None, first, matcher=BytesMatcher.of([needle.encode()]), cache=cache)
    # the mask covers the non-null values (general path) or every row (whole-chunk matching)
    mask = np.zeros(n, dtype=bool)
    if chunk.valid is None:
        mask[:] = np.asarray(chunk.values, dtype=bool)
    else:
        mask[chunk.valid] = np.asarray(chunk.values, dtype=bool)
    rows = np.flatnonzero(mask)
    assert list(rows) == [i for i, v in enumerate(values) if v == needle]
    layout = pf.page_layout(0, "s")
    holding = {i for i, p in enumerate(layout.pages) for r in rows if p.first_row <= r < p.first_row + p.num_rows}
    assert 0 < len(cache) == len(holding) < len(layout.pages)
    second = ReadCounters()
    got = pf.read_column(0, "s", rows, counters=second, cache=cache)
    assert got.to_pylist() == [needle] * len(rows)
    assert second.pages_fetched == len(holding)
    assert second.bytes_decompressed == 0
    # other rows of the same pages come from the cache too; pages without a match are decompressed
    other = np.array([0, n - 1])
    third = ReadCounters()
    assert pf.read_column(0, "s", other, counters=third, cache=cache).to_pylist() == [values[0], values[-1]]
    assert third.bytes_decompressed > 0


def test_header_walk_without_offset_index(tmp_path: Path) -> None:
    n = 50_000
    table = pa.table({"k": np.arange(n, dtype=np.int64) * 3})
    path = tmp_path / "noindex.parquet"
    pq.write_table(table, path, data_page_size=4096, write_page_index=False, use_dictionary=False)
    pf = ParquetFile(str(path))
    assert pf.offset_index(0, "k") is None
    layout = pf.page_layout(0, "k")
    assert not layout.from_offset_index and len(layout.pages) > 5
    assert sum(p.num_rows for p in layout.pages) == n
    sel = np.array([0, 12_345, n - 1])
    c = ReadCounters()
    assert pf.read_column(0, "k", sel, counters=c).to_pylist() == (sel * 3).tolist()
    assert c.pages_fetched <= 3
    # the layout is cached: a second file object does not walk again
    before = pf.source.stats.requests
    pf2 = ParquetFile(str(path))
    pf2.page_layout(0, "k")
    assert pf2.source.stats.requests <= 1  # just the footer read
    assert pf.source.stats.requests == before


def test_row_ranges_and_threshold_give_same_rows(tmp_path: Path) -> None:
    table = make_table(5000, 0.3, 3, kinds=["string", "int64", "float64"])
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, data_page_size=1024)
    ranges = RowRanges.from_ranges([(0, 10), (15, 20), (1000, 1003), (4990, 5000)])
    for threshold in (0, 4, 100, 10_000):
        pf = ParquetFile(str(path), options=ReaderOptions(materialization_threshold=threshold))
        for c in ("string", "int64", "float64"):
            got = pf.read_column(0, c, ranges)
            assert_same_array(got, table.column(c).take(pa.array(ranges.to_indices())), f"{c} t={threshold}")


def test_metadata_accessors(tmp_path: Path) -> None:
    table = pa.table({"a": pa.array([1, 2, None, 4], pa.int32()), "b": pa.array(["x", "y", "z", None])})
    path = tmp_path / "m.parquet"
    pq.write_table(table, path, write_statistics=True, sorting_columns=[pq.SortingColumn(0)], store_schema=True)
    pf = ParquetFile(str(path))
    md = pf.metadata
    assert md.num_rows == 4 and len(md.row_groups) == 1
    assert md.row_groups[0].sorting_columns is not None and md.row_groups[0].sorting_columns[0].column_idx == 0
    assert "ARROW:schema" in md.key_value_metadata
    st_a = pf.statistics(0, "a")
    assert (st_a.min, st_a.max, st_a.null_count) == (1, 4, 1)
    st_b = pf.statistics(0, "b")
    assert (st_b.min, st_b.max, st_b.null_count) == (b"x", b"z", 1)
    assert pf.column_index(0, "a") is not None or pf.column_index(0, "a") is None
    assert pf.bloom_filter(0, "a") is None
    assert pf.arrow_schema == pa.schema([pa.field("a", pa.int32()), pa.field("b", pa.string())])


def test_dates_and_decimals_values(tmp_path: Path) -> None:
    table = pa.table({
        "d": pa.array([dt.date(1970, 1, 1), dt.date(2024, 2, 29), None]),
        "x": pa.array([decimal.Decimal("-1.50"), decimal.Decimal("12345678901234567890.12"), None], pa.decimal128(38, 2)),
    })
    path = tmp_path / "dd.parquet"
    pq.write_table(table, path)
    pf = ParquetFile(str(path))
    assert pf.read_column(0, "d").to_pylist() == table.column("d").to_pylist()
    assert pf.read_column(0, "x").to_pylist() == table.column("x").to_pylist()
    assert pf.read_column(0, "x", [1]).to_pylist() == [decimal.Decimal("12345678901234567890.12")]


def test_matching_located_values_equals_matching_materialized() -> None:
    from lazyscan.parquet.decode import LocatedByteArrays

    rng = np.random.default_rng(3)
    words = [bytes(rng.integers(97, 100, int(rng.integers(0, 4))).astype(np.uint8)) for _ in range(500)]
    buf = np.frombuffer(b"".join(len(w).to_bytes(4, "little") + w for w in words), dtype=np.uint8)
    lengths = np.array([len(w) for w in words], dtype=np.int64)
    starts = np.cumsum(lengths + 4) - lengths
    located = LocatedByteArrays(buf, starts, lengths)
    for needles in ([b"ab"], [b"", b"ccc"], [], [b"zz"]):
        m = BytesMatcher.of(needles)
        want = [w in needles for w in words]
        assert m.match_located(buf, starts, lengths).astype(bool).tolist() == want
        assert m.match(located.offsets, located.data).astype(bool).tolist() == want


def test_row_ranges_from_indices_and_page_plan() -> None:
    from lazyscan.parquet import kernels as K

    rng = np.random.default_rng(11)
    for _ in range(50):
        n = int(rng.integers(1, 400))
        mask = rng.random(n) < rng.random()
        idx = np.flatnonzero(mask)
        r = RowRanges.from_indices(idx)
        assert r == RowRanges.from_mask(mask) == RowRanges.from_indices(rng.permutation(np.concatenate([idx, idx])))
        assert np.array_equal(r.to_indices(), idx) and r.to_indices() is r.to_indices()
        # pages of random sizes: the plan names exactly the pages holding a selected row
        cuts = np.unique(np.concatenate([[0, n], rng.integers(0, n + 1, int(rng.integers(0, 8)))]))
        p_starts, p_ends = cuts[:-1].astype(np.int64), cuts[1:].astype(np.int64)
        plan = np.empty((3, len(p_starts)), np.int64)
        count = K.plan_pages(r.starts, r.ends, r.to_indices(), p_starts, p_ends, plan[0], plan[1], plan[2])
        want = [p for p in range(len(p_starts)) if mask[p_starts[p] : p_ends[p]].any()]
        assert plan[0, :count].tolist() == want
        for p, lo, hi in plan[:, :count].T:
            assert np.array_equal(idx[lo:hi], idx[(idx >= p_starts[p]) & (idx < p_ends[p])])


def test_dictionary_gather_keeps_bytes_of_wide_rows(tmp_path: Path) -> None:
    # 16-byte and 4-byte rows move as one scalar each: NaN-like bit patterns must survive
    import struct

    n = 5000
    wide = [None if i % 5 == 0 else struct.pack("<QQ", 0x7FF8000000000001 | ((i % 2) << 63), 0xFFF0000000000001 + i % 11) for i in range(n)]
    narrow = [struct.pack("<I", 0x7FC00001 + i % 9) for i in range(n)]
    dec = [None if i % 7 == 0 else decimal.Decimal(i * 7919 - 10**6).scaleb(-3) for i in range(n)]
    table = pa.table({"w": pa.array(wide, pa.binary(16)), "n": pa.array(narrow, pa.binary(4)), "d": pa.array(dec, pa.decimal128(38, 3))})
    path = tmp_path / "wide.parquet"
    pq.write_table(table, path, use_dictionary=True)
    pf = ParquetFile(str(path))
    rows = np.array([0, 1, 5, 77, n - 1])
    for i, name in enumerate(table.column_names):
        want = table[name].combine_chunks()
        assert pf.read_column(0, i).equals(want), name
        assert pf.read_column(0, i, rows).equals(want.take(pa.array(rows))), name


def test_pool_buffers_are_writable_arrays_of_the_asked_shape() -> None:
    from lazyscan.parquet import buffers

    for shape, dtype in ((10, np.int32), (1 << 20, np.uint8), ((300_000, 2), np.int64), (0, np.float64)):
        a = buffers.empty(shape, dtype)
        want = (shape,) if isinstance(shape, int) else shape
        assert a.shape == want and a.dtype == np.dtype(dtype) and a.flags.writeable
        a[...] = 7
        assert (a == 7).all()
        arr = pa.array(a.reshape(-1))  # Arrow can wrap it
        assert len(arr) == a.size


def test_byte_arrays_concat_mixes_located_and_materialized_parts() -> None:
    from lazyscan.parquet.decode import ByteArrays, LocatedByteArrays

    rng = np.random.default_rng(5)
    words = [bytes(rng.integers(97, 123, int(rng.integers(0, 6))).astype(np.uint8)) for _ in range(60)]
    buf = np.frombuffer(b"".join(words), np.uint8)
    lengths = np.array([len(w) for w in words], np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)

    def located(lo: int, hi: int) -> LocatedByteArrays:
        return LocatedByteArrays(buf, starts[lo:hi], lengths[lo:hi])

    plain = located(20, 35).materialize()
    sliced = ByteArrays(plain.offsets[3:], plain.data)  # offsets not starting at 0
    materialized = located(40, 60)
    materialized.materialize()
    parts: list[ByteArrays] = [located(0, 20), sliced, located(35, 35), materialized]
    out = ByteArrays.concat(parts)
    want = words[0:20] + words[23:35] + words[40:60]
    assert len(out) == len(want)
    got = [out.data[out.offsets[i] : out.offsets[i + 1]].tobytes() for i in range(len(out))]
    assert got == want
    assert out.offsets[0] == 0 and out.offsets[-1] == len(out.data)


def test_page_statistics_are_cached_per_file_version(tmp_path: Path) -> None:
    path = tmp_path / "ps.parquet"
    pq.write_table(pa.table({"x": pa.array(range(5000), pa.int64())}), path, data_page_size=1024, write_page_index=True)
    first = ParquetFile(str(path)).page_statistics(0, "x")
    assert first is not None and len(first[0]) > 1
    again = ParquetFile(str(path)).page_statistics(0, "x")
    assert again is first  # decoded once per process
    # the same path rewritten with other values: its footer differs, so the cache is not used
    pq.write_table(pa.table({"x": pa.array(range(100, 5100), pa.int64())}), path, data_page_size=1024, write_page_index=True)
    changed = ParquetFile(str(path)).page_statistics(0, "x")
    assert changed is not None and changed[0][0].min == 100


@pytest.mark.parametrize("case", ["dict_v1_snappy", "dict_fallback", "dict_v2_gzip_tiny_pages", "dict_v1_brotli_index"])
@pytest.mark.parametrize("required", [True, False])
def test_full_reads_look_codes_up_as_they_unpack(tmp_path: Path, monkeypatch, case: str, required: bool) -> None:
    """Full reads of dictionary-encoded number columns without nulls decode the values straight
    from the codes (required columns, and optional ones whose pages hold no null); the values
    equal pyarrow's for every type, with pages past the dictionary's size limit (PLAIN) in the
    chunk and with v2 pages (read the general way)."""
    taken: list[bool] = []
    original = PageDecoder.page_looked_up

    def counted(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        got = original(self, *args, **kwargs)
        taken.append(got)
        return got

    monkeypatch.setattr(PageDecoder, "page_looked_up", counted)
    table = make_table(N, 0.0, seed=11)
    if required:
        table = table.cast(pa.schema([f.with_nullable(False) for f in table.schema]))
    path = tmp_path / f"{case}-{required}.parquet"
    pq.write_table(table, path, row_group_size=N // 2 + 7, **WRITER_CASES[case])
    check_file(path)
    if "v2" not in case:
        assert any(taken), "no page was looked up as it was unpacked"


@pytest.mark.parametrize("first_null_page", [0, 3])
def test_full_reads_with_nulls_after_looked_up_pages(tmp_path: Path, first_null_page: int) -> None:
    """An optional column whose first pages hold no null and a later page does: the read starts
    looking codes up and is read again the general way, values and nulls equal pyarrow's."""
    n = 4000
    rng = np.random.default_rng(5)
    vals = rng.integers(0, 20, n).astype(np.int64)
    mask = np.zeros(n, bool)
    page_rows = 250
    mask[first_null_page * page_rows + 17] = True
    mask[-3:] = True
    path = tmp_path / "later-nulls.parquet"
    pq.write_table(
        pa.table({"k": pa.array(vals, mask=mask), "f": pa.array(vals * 0.5, mask=mask)}),
        path, data_page_size=page_rows * 1, use_dictionary=True, compression="snappy", write_batch_size=page_rows,
    )
    pf = ParquetFile(str(path))
    assert len(pf.page_layout(0, 0).pages) > first_null_page + 1
    check_file(path)
