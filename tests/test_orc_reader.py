"""The ORC physical layer (lazyscan.orc) against pyarrow's ORC reader.

- every file of Apache ORC's examples (``tests/data/orc-testing/``), stripe by stripe and column by
  column; the ones neither reader supports give a clear lazyscan error;

Timestamps are compared in pyarrow's unit, nanoseconds (``OrcFile(..., timestamp_unit="ns")``);
lazyscan's default, microseconds, is compared with pyarrow's values floored to microseconds
(tests/test_timestamps_range.py covers the years nanoseconds do not hold).
- files written by pyarrow with every codec, with and without dictionaries, every flat type with
  NULLs, several stripes;
- integer RLE v2 on random sequences of every shape (hypothesis), written by pyarrow;
- statistics, row indexes and Bloom filters against the data they describe;
- bad input: the ``corrupt/`` examples, truncated files and flipped bytes give lazyscan errors.
"""

from __future__ import annotations

import contextlib
import decimal
import itertools
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as porc
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from lazyscan.errors import CorruptFileError, LazyScanError, UnsupportedFeatureError
from lazyscan.format.counters import ReadCounters
from lazyscan.orc import OrcFile
from lazyscan.orc import proto as P
from tests.support.compare import assert_same_array
from tests.support.data import ORC_TESTING, orc_testing_files

#: examples no reader here supports, and the error lazyscan gives
UNSUPPORTED = {
    "TestOrcFile.testTimestamp.orc": (UnsupportedFeatureError, "root type is not a struct"),
    "TestOrcFile.testWithoutCompressionBlockSize.orc": (UnsupportedFeatureError, "root type is not a struct"),
    "TestVectorOrcFile.testLzo.orc": (UnsupportedFeatureError, "LZO compression is not supported"),
    "zero.orc": (CorruptFileError, "too small to be ORC"),
}


def _combined(a: pa.Array | pa.ChunkedArray) -> pa.Array:
    return a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a


def floored_to_micros(arr: pa.Array) -> pa.Array:
    """Nanosecond timestamps as lazyscan reads them by default: floored to microseconds."""
    if not pa.types.is_timestamp(arr.type):
        return arr
    return pc.floor_temporal(arr, unit="microsecond").cast(pa.timestamp("us", tz=arr.type.tz))


def nanos(path: Path) -> OrcFile:
    """The file read with pyarrow's unit for timestamps."""
    return OrcFile(path, timestamp_unit="ns")


def assert_same_as_pyarrow(path: Path) -> int:
    """Every column of every stripe equals pyarrow's reading (timestamps in both units); the
    number of columns compared."""
    f = nanos(path)
    micros = OrcFile(path)
    ref = porc.ORCFile(str(path))
    assert f.num_stripes == ref.nstripes
    assert f.num_rows == ref.nrows
    assert f.arrow_schema == ref.schema
    compared = 0
    for s in range(f.num_stripes):
        expected = ref.read_stripe(s)
        for c in f.columns:
            got = f.read_column(s, c.name)
            exp = _combined(expected.column(c.name))
            assert got.type == exp.type, (s, c.name)
            assert_same_array(got, exp, f"stripe {s}, column {c.name}")
            if pa.types.is_timestamp(exp.type):
                assert_same_array(micros.read_column(s, c.name), floored_to_micros(exp), f"stripe {s}, column {c.name} (us)")
            compared += 1
    return compared


@pytest.mark.parametrize("path", orc_testing_files(), ids=lambda p: p.name)
def test_apache_examples_equal_pyarrow(path: Path) -> None:
    if path.name in UNSUPPORTED:
        cls, text = UNSUPPORTED[path.name]
        with pytest.raises(cls, match=text) as e:
            OrcFile(path)
        assert path.name in str(e.value)
        return
    f = OrcFile(path)
    if f.num_stripes and f.columns:
        assert assert_same_as_pyarrow(path) > 0


def _table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)

    def nulls(p: float = 0.1) -> np.ndarray:
        return rng.random(n) < p

    return pa.table(
        {
            "b": pa.array(rng.random(n) < 0.5, mask=nulls()),
            "i8": pa.array(rng.integers(-128, 127, n), pa.int8(), mask=nulls()),
            "i16": pa.array(rng.integers(-3000, 3000, n), pa.int16()),
            "i32": pa.array(np.cumsum(rng.integers(-5, 50, n)), pa.int32(), mask=nulls()),
            "i64": pa.array(rng.integers(-(2**62), 2**62, n), pa.int64(), mask=nulls()),
            "seq": pa.array(np.arange(n) * 7, pa.int64()),
            "rep": pa.array(np.repeat([5, -9, 2**40], n // 3 + 1)[:n], pa.int64()),
            "outliers": pa.array(np.where(rng.random(n) < 0.02, rng.integers(0, 2**50, n), rng.integers(0, 100, n)), pa.int64()),
            "f": pa.array(rng.random(n).astype(np.float32), mask=nulls()),
            "d": pa.array(np.where(rng.random(n) < 0.01, np.nan, rng.normal(size=n)), mask=nulls()),
            "s": pa.array([f"v{x}" for x in rng.integers(0, 500, n)], mask=nulls()),
            "u": pa.array([f"unique-{i}-é" for i in range(n)]),
            "empty": pa.array([""] * n, mask=nulls(0.5)),
            "bin": pa.array([bytes([x % 256]) * (x % 7) for x in range(n)], pa.binary()),
            "date": pa.array(rng.integers(-20000, 30000, n).astype(np.int32), pa.date32(), mask=nulls()),
            "ts": pa.array(rng.integers(-(2 * 10**18), 2 * 10**18, n), pa.timestamp("ns"), mask=nulls()),
            "ts_ms": pa.array(rng.integers(-(10**12), 10**12, n) * 1_000_000, pa.timestamp("ns")),
            "dec": pa.array([decimal.Decimal(int(x)).scaleb(-2) for x in rng.integers(-(10**9), 10**9, n)], pa.decimal128(12, 2)),
            "dec38": pa.array(
                [decimal.Decimal(int(x) * 10**20 + 3).scaleb(-5) for x in rng.integers(-(10**9), 10**9, n)], pa.decimal128(38, 5)
            ),
            "all_null": pa.nulls(n, pa.int64()),
        }
    )


@pytest.mark.parametrize("compression", ["uncompressed", "zlib", "snappy", "lz4", "zstd"])
@pytest.mark.parametrize("dictionary", [False, True])
def test_written_files_equal_pyarrow(tmp_path: Path, compression: str, dictionary: bool) -> None:
    path = tmp_path / "t.orc"
    porc.write_table(
        _table(25_000, 1), path, compression=compression, stripe_size=256 * 1024,
        dictionary_key_size_threshold=1.0 if dictionary else 0.0,
    )
    f = OrcFile(path)
    assert f.num_stripes > 1
    encodings = {P.ENCODING_NAMES[f.encoding(0, name).kind] for name in ("s", "u")}
    assert encodings == ({"DICTIONARY_V2"} if dictionary else {"DIRECT_V2"})
    assert assert_same_as_pyarrow(path) == f.num_stripes * len(f.columns)


_SHAPES = st.sampled_from(["constant", "small", "delta", "monotonic", "wide", "outliers", "negative", "mixed"])


def _sequence(shape: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if shape == "constant":
        return np.full(n, rng.integers(-(2**63), 2**63 - 1), np.int64)
    if shape == "small":
        return rng.integers(0, 16, n)
    if shape == "delta":
        return rng.integers(-(2**40), 2**40) + np.arange(n) * int(rng.integers(-1000, 1000))
    if shape == "monotonic":
        return np.cumsum(rng.integers(0, 2**int(rng.integers(1, 30)), n))
    if shape == "wide":
        return rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)
    if shape == "outliers":
        base = rng.integers(0, 200, n)
        spikes = rng.random(n) < 0.03
        return np.where(spikes, rng.integers(2**20, 2**55, n), base)
    if shape == "negative":
        return -rng.integers(0, 2**int(rng.integers(1, 62)), n)
    return np.concatenate([_sequence(s, n // 4 + 1, rng) for s in ("constant", "delta", "outliers", "wide")])[:n]


@given(shapes=st.lists(_SHAPES, min_size=1, max_size=4), n=st.integers(1, 3_000), seed=st.integers(0, 2**32 - 1),
       nulls=st.booleans())
@example(shapes=["wide", "wide", "monotonic", "constant"], n=918, seed=918, nulls=False)  # patch + data width > 64
@settings(max_examples=60, deadline=None)
def test_integer_rle_v2_round_trip(tmp_path_factory: pytest.TempPathFactory, shapes: list[str], n: int, seed: int, nulls: bool) -> None:
    rng = np.random.default_rng(seed)
    values = np.concatenate([_sequence(s, n, rng) for s in shapes]).astype(np.int64)
    mask = rng.random(len(values)) < 0.2 if nulls else None
    table = pa.table({
        "v": pa.array(values, pa.int64(), mask=mask),
        "v32": pa.array((values % 2**31).astype(np.int32), pa.int32()),
        "u": pa.array(np.abs(values % 2**40), pa.int64()),
    })
    path = tmp_path_factory.mktemp("rle") / "v.orc"
    porc.write_table(table, path)
    f = OrcFile(path)
    got = pa.concat_arrays([f.read_column(s, "v") for s in range(f.num_stripes)])
    assert got.equals(table.column("v").combine_chunks())
    assert pa.concat_arrays([f.read_column(s, "v32") for s in range(f.num_stripes)]).equals(table.column("v32").combine_chunks())
    assert pa.concat_arrays([f.read_column(s, "u") for s in range(f.num_stripes)]).equals(table.column("u").combine_chunks())


def test_selection_equals_take(tmp_path: Path) -> None:
    path = tmp_path / "t.orc"
    table = _table(30_000, 3)
    porc.write_table(table, path, compression="zstd")
    f = nanos(path)
    rng = np.random.default_rng(4)
    rows = np.sort(rng.choice(f.stripe(0).number_of_rows, 500, replace=False))
    full = porc.ORCFile(str(path)).read_stripe(0)
    for name in ("i64", "s", "dec38", "ts", "b"):
        got = f.read_column(0, name, rows)
        assert got.equals(_combined(full.column(name)).take(pa.array(rows)))
    with pytest.raises(IndexError, match="outside the stripe"):
        f.read_column(0, "i64", [f.stripe(0).number_of_rows])


def test_statistics_and_row_index_describe_the_data(tmp_path: Path) -> None:
    path = tmp_path / "t.orc"
    table = _table(40_000, 5)
    porc.write_table(table, path, compression="snappy", stripe_size=512 * 1024)
    f = OrcFile(path)
    stride = f.row_index_stride
    assert stride == 10_000
    start = 0
    for s in range(f.num_stripes):
        n = f.stripe(s).number_of_rows
        data = table.slice(start, n)
        for name in ("i32", "i64", "date"):
            st_ = f.stripe_statistics(s, name)
            assert st_ is not None
            col = data.column(name)
            mm = pc.min_max(col.cast(pa.int32()).cast(pa.int64()) if name == "date" else col)
            assert (st_.minimum, st_.maximum) == (mm["min"].as_py(), mm["max"].as_py())
            assert st_.has_null == (col.null_count > 0)
        index = f.row_index(s, "i64")
        assert index is not None and len(index) == -(-n // stride)
        for g, entry in enumerate(index):
            part = data.column("i64").slice(g * stride, stride)
            mm = pc.min_max(part)
            assert entry.statistics is not None
            assert (entry.statistics.minimum, entry.statistics.maximum) == (mm["min"].as_py(), mm["max"].as_py())
        start += n
    file_stats = f.file_statistics("s")
    assert file_stats is not None and file_stats.kind == "string"
    assert file_stats.minimum == pc.min(table.column("s")).as_py().encode()


def test_bloom_filters_are_read(tmp_path: Path) -> None:
    path = tmp_path / "bloom.orc"
    table = _table(25_000, 7)
    porc.write_table(table, path, bloom_filter_columns=[5, 11], bloom_filter_fpp=0.01)  # ORC ids of i64 and s
    f = OrcFile(path)
    for name in ("i64", "s"):
        blooms = f.bloom_filters(0, name)
        index = f.row_index(0, name)
        assert blooms is not None and index is not None and len(blooms) == len(index)
        assert all(b.utf8 and b.num_hash_functions > 0 and len(b.bitset) > 0 for b in blooms)
    assert f.bloom_filters(0, "i32") is None
    # a pre-release Bloom filter layout (Hive 1.x era) is ignored, not an error
    old = OrcFile(ORC_TESTING / "over1k_bloom.orc")
    assert all(old.bloom_filters(0, c.name) is None for c in old.columns)


@pytest.mark.parametrize("path", sorted((ORC_TESTING / "corrupt").glob("*.orc")), ids=lambda p: p.name)
def test_corrupt_examples_name_file_stripe_and_column(path: Path) -> None:
    with pytest.raises(CorruptFileError) as e:
        f = OrcFile(path)
        for s in range(f.num_stripes):
            for c in f.columns:
                f.read_column(s, c.name)
    message = str(e.value)
    assert path.name in message and "stripe 0" in message


def _small_file(tmp_path: Path, compression: str) -> Path:
    path = tmp_path / f"small-{compression}.orc"
    porc.write_table(_table(3_000, 9), path, compression=compression, dictionary_key_size_threshold=1.0)
    return path


def _read_all(path: Path) -> None:
    f = OrcFile(path)
    for s in range(f.num_stripes):
        for c in f.columns:
            f.read_column(s, c.name)
        f.row_index(s, f.columns[0].name)
    for c in f.columns:
        f.stripe_statistics(0, c.name) if f.num_stripes else None


@pytest.mark.parametrize("compression", ["uncompressed", "zlib", "zstd"])
def test_truncated_files_give_lazyscan_errors(tmp_path: Path, compression: str) -> None:
    data = _small_file(tmp_path, compression).read_bytes()
    cut = tmp_path / "cut.orc"
    for size in sorted({0, 1, 3, 10, len(data) // 2, len(data) - 200, len(data) - 30, len(data) - 2, len(data) - 1}):
        cut.write_bytes(data[:size])
        with pytest.raises(LazyScanError):
            _read_all(cut)


@pytest.mark.parametrize("compression", ["uncompressed", "snappy", "zlib"])
def test_flipped_bytes_never_crash(tmp_path: Path, compression: str) -> None:
    data = bytearray(_small_file(tmp_path, compression).read_bytes())
    rng = random.Random(compression)
    bad = tmp_path / "bad.orc"
    for _ in range(60):
        damaged = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(damaged))
            damaged[i] ^= 1 << rng.randrange(8)
        bad.write_bytes(bytes(damaged))
        # a lazyscan error, or (ORC has no checksums) values that look valid: never another error
        with contextlib.suppress(LazyScanError):
            _read_all(bad)


def _selections(n: int, stride: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Row selections at every granularity: one row, rows of one row group, of scattered row
    groups, the first and the last row group, a run across a row-group boundary."""
    out = [np.array([rng.integers(n)]), np.array([0]), np.array([n - 1])]
    g = int(rng.integers(max(1, n // stride)))
    out.append(np.sort(rng.choice(np.arange(g * stride, min((g + 1) * stride, n)), 50, replace=False)))
    groups = rng.choice(max(1, n // stride), min(3, max(1, n // stride)), replace=False)
    out.append(np.sort(np.concatenate([g_ * stride + rng.choice(min(stride, n - g_ * stride), 5, replace=False) for g_ in groups])))
    edge = min(stride, n - 1)
    out.append(np.arange(max(0, edge - 3), min(n, edge + 3)))
    return out


@pytest.mark.parametrize("compression", ["uncompressed", "zlib", "snappy", "zstd"])
@pytest.mark.parametrize("dictionary", [False, True])
def test_selected_rows_decode_only_their_row_groups(tmp_path: Path, compression: str, dictionary: bool) -> None:
    path = tmp_path / "t.orc"
    table = _table(60_000, 11)
    porc.write_table(table, path, compression=compression, dictionary_key_size_threshold=1.0 if dictionary else 0.0)
    f = nanos(path)
    assert f.num_stripes == 1 and f.row_index_stride == 10_000
    full = porc.ORCFile(str(path)).read_stripe(0)
    rng = np.random.default_rng(12)
    for rows in _selections(f.num_rows, f.row_index_stride, rng):
        for c in f.columns:
            counters = ReadCounters()
            got = f.read_column(0, c.name, rows, counters)
            assert_same_array(got, _combined(full.column(c.name)).take(pa.array(rows)), f"{c.name} rows {rows[:3]}")
            groups = len(np.unique(rows // f.row_index_stride))
            # only the row groups holding selected rows are decoded
            assert counters.values_decoded <= groups * f.row_index_stride, c.name


@pytest.mark.parametrize("compression", ["uncompressed", "zstd"])
def test_spans_decode_up_to_their_last_selected_row(tmp_path: Path, compression: str) -> None:
    """A row group is decoded from its start to its last selected row, not to its end, and
    every span of a stream is decoded in one pass: the first rows of scattered row groups cost
    about one value each."""
    path = tmp_path / "t.orc"
    table = _table(120_000, 5)
    porc.write_table(table, path, compression=compression)
    f = nanos(path)
    assert f.num_stripes == 1
    stride = f.row_index_stride
    full = porc.ORCFile(str(path)).read_stripe(0)
    rows = np.array([0, 2 * stride + 3, 4 * stride + 1, 7 * stride], np.int64)
    for name in ("seq", "i64", "d", "u", "dec38", "ts", "b"):
        counters = ReadCounters()
        got = f.read_column(0, name, rows, counters)
        assert_same_array(got, _combined(full.column(name)).take(pa.array(rows)), name)
        # 1 + 4 + 2 + 1 rows reach the last selected row of each span
        assert counters.values_decoded <= 8, (name, counters.values_decoded)


def test_row_index_positions_kernel_equals_the_protobuf_parser() -> None:
    from lazyscan.orc import kernels as K

    checked = 0
    for path in orc_testing_files():
        try:
            f = OrcFile(path)
        except LazyScanError:
            continue
        for s in range(min(f.num_stripes, 2)):
            for c in f.columns:
                if not c.flat:
                    continue
                index = f.row_index(s, c.name)
                st = f.streams(s, c.id).get(P.ROW_INDEX)
                if index is None or st is None:
                    continue
                buf = f._decompress(f._fetch(s, [st], None)[0]).data
                status, offsets, values = K.row_index_positions(buf)
                assert status == 0
                assert [values[a:b].tolist() for a, b in itertools.pairwise(offsets.tolist())] == [e.positions for e in index]
                checked += 1
                # cut short or damaged, the kernel reports an error or parses what is there
                for cut in (1, len(buf) // 2, len(buf) - 1):
                    status, offsets, values = K.row_index_positions(buf[:cut])
                    assert status < 0 or offsets[-1] == len(values)
    assert checked > 50


@pytest.mark.parametrize("name", ["TestOrcFile.testSeek.orc", "demo-11-zlib.orc", "TestStringDictionary.testRowIndex.orc",
                                  "orc_index_int_string.orc", "TestOrcFile.testSnappy.orc", "nulls-at-end-snappy.orc",
                                  "over1k_bloom.orc", "TestOrcFile.testPredicatePushdown.orc", "decimal.orc"])
def test_selections_in_apache_examples(name: str) -> None:
    path = ORC_TESTING / name
    f = nanos(path)
    ref = porc.ORCFile(str(path))
    rng = np.random.default_rng(len(name))
    stride = f.row_index_stride
    for s in sorted({0, f.num_stripes - 1}):
        n = f.stripe(s).number_of_rows
        expected = ref.read_stripe(s)
        for rows in _selections(n, stride, rng):
            for c in f.columns:
                got = f.read_column(s, c.name, rows)
                assert_same_array(got, _combined(expected.column(c.name)).take(pa.array(rows)), f"stripe {s} {c.name}")


@pytest.mark.parametrize("unit", ["us", "ns"])
def test_statistics_bound_every_value(tmp_path: Path, unit: str) -> None:
    """Stripe and row-group statistics, as the predicate layer reads them, bound the data
    (timestamps in either unit)."""
    path = tmp_path / "t.orc"
    table = _table(30_000, 13)
    porc.write_table(table, path, compression="zstd", stripe_size=256 * 1024)
    f = OrcFile(path, timestamp_unit=unit)
    start = 0
    checked = 0
    for s in range(f.num_stripes):
        n = f.stripe(s).number_of_rows
        for c in f.columns:
            col = table.column(c.name).slice(start, n).combine_chunks()
            col = floored_to_micros(col) if unit == "us" else col
            groups = f.row_group_statistics(s, c.name) or []
            units = [(f.statistics(s, c.name), col)] + [
                (g, col.slice(i * f.row_index_stride, f.row_index_stride)) for i, g in enumerate(groups)
            ]
            for st_, part in units:
                if st_ is None:
                    continue
                assert st_.null_count == part.null_count, c.name
                if st_.min is None or (pa.types.is_floating(part.type) and pc.any(pc.is_nan(part)).as_py()):
                    continue
                values = part.drop_null()
                if pa.types.is_timestamp(part.type) or pa.types.is_date32(part.type):
                    values = values.cast(pa.int64()) if pa.types.is_timestamp(part.type) else values.cast(pa.int32())
                if pa.types.is_decimal(part.type):
                    unscaled = [int(v.scaleb(part.type.scale)) for v in values.to_pylist()]
                    lo, hi = min(unscaled), max(unscaled)
                elif pa.types.is_string(part.type) or pa.types.is_binary(part.type):
                    raw = [v.encode() if isinstance(v, str) else v for v in values.to_pylist()]
                    lo, hi = min(raw), max(raw)
                else:
                    mm = pc.min_max(values)
                    lo, hi = mm["min"].as_py(), mm["max"].as_py()
                assert st_.min <= lo and hi <= st_.max, c.name
                if st_.min_exact:
                    assert st_.min == lo, c.name
                checked += 1
        start += n
    assert checked > 100


def test_bloom_filters_have_no_false_negatives(tmp_path: Path) -> None:
    from lazyscan.orc.bloom import might_contain

    rng = np.random.default_rng(21)
    n = 40_000
    table = pa.table({
        "i": pa.array(rng.integers(-(10**12), 10**12, n)),
        "s": pa.array([f"k{x}-ü" for x in rng.integers(0, 10**9, n)]),
        "d": pa.array(rng.normal(size=n)),
        "i32": pa.array(rng.integers(0, 10**6, n).astype(np.int32)),
        "day": pa.array(rng.integers(0, 30_000, n).astype(np.int32), pa.date32()),
    })
    path = tmp_path / "bloom.orc"
    porc.write_table(table, path, bloom_filter_columns=[1, 2, 3, 4, 5], bloom_filter_fpp=0.01)
    f = OrcFile(path)
    stride = f.row_index_stride
    for c in f.columns:
        blooms = f.bloom_filters(0, c.name)
        assert blooms is not None
        values = table.column(c.name).cast(pa.int32()) if c.name == "day" else table.column(c.name)
        raw = [v.encode() if isinstance(v, str) else v for v in values.to_pylist()]
        hits = tries = 0
        for g, entry in enumerate(blooms):
            mine = raw[g * stride : (g + 1) * stride]
            assert all(might_contain(entry, v, c.arrow_type) for v in mine[:400]), c.name
            others = set(raw) - set(mine)
            for v in list(others)[:400]:
                tries += 1
                hits += might_contain(entry, v, c.arrow_type)
        assert hits / tries < 0.05, (c.name, hits / tries)


def test_inspect_describes_stripes_encodings_indexes_and_blooms(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from lazyscan.cli.main import main

    path = tmp_path / "bloom.orc"
    porc.write_table(_table(25_000, 7), path, compression="zstd", bloom_filter_columns=[11], dictionary_key_size_threshold=1.0)
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    f = OrcFile(path)
    assert f"{f.num_rows:,} rows, {f.num_stripes} stripes, ZSTD compression" in out
    assert "s (string):" in out and "DICTIONARY_V2" in out and "bloom (utf8)" in out
    assert f"row index ({len(f.row_index(0, 's') or [])} row groups)" in out
    bad = ORC_TESTING / "corrupt" / "stripe_footer_bad_column_encodings.orc"
    assert main(["inspect", str(bad)]) == 2
    assert "corrupt stripe footer" in capsys.readouterr().err
