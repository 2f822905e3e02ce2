"""Every flat column of the parquet-testing files, read fully and by row selections, equals
pyarrow's reading of the same rows; files pyarrow rejects give a lazyscan error."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lazyscan.errors import LazyScanError, UnsupportedFeatureError
from lazyscan.parquet import ParquetFile, RowRanges
from tests.support.compare import assert_same_array
from tests.support.data import PARQUET_TESTING, parquet_testing_files

DATA = PARQUET_TESTING
FILES = [p.name for p in parquet_testing_files()]


#: files pyarrow takes seconds to refuse (it decompresses 2 GiB of map values first)
PYARROW_SLOW_TO_REFUSE = {"large_string_map.brotli.parquet"}


@functools.cache
def _pyarrow_reads(path: Path) -> pq.ParquetFile | None:
    """pyarrow's reader of the file once it read every row group, None when it cannot."""
    if path.name in PYARROW_SLOW_TO_REFUSE:
        return None
    try:
        # page checksums verified as lazyscan does by default (verify_checksums)
        pf = pq.ParquetFile(path, coerce_int96_timestamp_unit="us", page_checksum_verification=True)
        for rg in range(pf.num_row_groups):
            pf.read_row_group(rg)
        return pf
    except Exception:
        return None


def _selections(n: int, rng: np.random.Generator) -> list[np.ndarray]:
    sels = [np.array([], np.int64), np.array([0]), np.array([n - 1]), np.arange(n)]
    for frac in (0.01, 0.1, 0.5, 0.9):
        k = max(1, int(n * frac))
        sels.append(np.sort(rng.choice(n, size=min(k, n), replace=False)))
    start = int(rng.integers(0, n))
    sels.append(np.arange(start, min(n, start + 37)))
    return sels


# pyarrow overflows on INT96 values outside the nanosecond range even with microseconds asked
# for; lazyscan reads them as Spark does. Expected values from the file's .md.
PYARROW_WRONG = {"int96_from_spark.parquet"}
# files whose nested columns pyarrow 26 rejects (a map with an optional key; a map too large for
# one chunk); lazyscan reads nested columns through pyarrow, so it must refuse them with its error
PYARROW_CANNOT_READ_NESTED = {"incorrect_map_schema.parquet", "large_string_map.brotli.parquet"}


def test_int96_beyond_nanosecond_range() -> None:
    got = ParquetFile(str(DATA / "int96_from_spark.parquet")).read_column(0, 0)
    assert got.type == pa.timestamp("us")
    assert got.cast(pa.int64()).to_pylist() == [
        1704141296123456, 1704070800000000, 253402225200000000, 1735599600000000, None, 9089380393200000000,
    ]


@pytest.mark.parametrize("name", [f for f in FILES if f not in PYARROW_WRONG])
def test_file_matches_pyarrow(name: str) -> None:
    path = DATA / name
    ref = _pyarrow_reads(path)
    if ref is None:
        # pyarrow cannot read it: lazyscan must fail with its own error or read it, never crash
        try:
            pf = ParquetFile(str(path))
            for rg in range(pf.num_row_groups):
                for c in pf.schema.columns:
                    if c.flat:
                        pf.read_column(rg, c.index)
        except LazyScanError:
            pass
        return
    pf = ParquetFile(str(path))
    rng = np.random.default_rng(len(name))
    assert pf.num_row_groups == ref.num_row_groups
    for rg in range(pf.num_row_groups):
        table = ref.read_row_group(rg)
        n = table.num_rows
        for desc in pf.schema.columns:
            if not desc.flat:
                continue
            expected = table.column(desc.path[0])
            ours = pf.read_column(rg, desc.index)
            assert_same_array(ours, expected, f"{name} rg {rg} {desc.name} full")
            if n == 0:
                continue
            for sel in _selections(n, rng):
                got = pf.read_column(rg, desc.index, sel)
                want = expected.take(pa.array(sel, pa.int64()))
                assert_same_array(got, want, f"{name} rg {rg} {desc.name} sel {len(sel)}")
            ranges = RowRanges.from_ranges([(0, min(3, n)), (n // 2, n // 2 + 1)])
            got = pf.read_column(rg, desc.index, ranges)
            want = expected.take(pa.array(ranges.to_indices()))
            assert_same_array(got, want, f"{name} rg {rg} {desc.name} ranges")


@pytest.mark.parametrize("name", [f for f in FILES if "nested" in f or "list" in f or "map" in f])
def test_nested_columns_fall_back_to_pyarrow(name: str) -> None:
    path = DATA / name
    ref = _pyarrow_reads(path)
    if ref is None:
        # nested columns go through pyarrow: where it cannot read them, a lazyscan error says so
        assert name in PYARROW_CANNOT_READ_NESTED, f"pyarrow no longer reads {name}"
        with pytest.raises(LazyScanError, match="nested") as err:
            pf = ParquetFile(str(path))
            for rg in range(pf.num_row_groups):
                for desc in pf.schema.columns:
                    pf.read_column(rg, desc.index)
        assert name in str(err.value)
        if name == "large_string_map.brotli.parquet":
            # refused from the footer's sizes, before decompressing 2 GiB
            assert "bytes of values in this row group" in str(err.value)
            assert isinstance(err.value, UnsupportedFeatureError)
        return
    pf = ParquetFile(str(path))
    for rg in range(pf.num_row_groups):
        table = ref.read_row_group(rg)
        for desc in pf.schema.columns:
            if desc.flat:
                continue
            ours = pf.read_column(rg, desc.index)
            want = table.column(pf.arrow_schema.field(desc.top_level_field).name).combine_chunks()
            assert ours.equals(want), f"{name} {desc.name}"
