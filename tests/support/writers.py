"""The writer matrix: one table of many types written by every writer this machine has, with
the options that change a file's physical layout, and the reference each file is read against.

- :func:`matrix_table` — the table: sorted columns (their statistics prune), integers at their
  extremes, NaN / -0.0 / +-inf, empty, non-ASCII and long strings, decimals stored in INT32,
  INT64 and fixed-length bytes, dates and timestamps of the years 1 to 9999 (nanoseconds: 1678
  to 2261), binaries, lists, structs and maps, nulls everywhere they can be.
- :class:`WriterCase` — one writer with one set of options: which columns it takes (each writer
  holds a different set of types), how it writes them, and how its file is read as reference.
- ``*_cases()`` — the cases of each writer; ``wide=True`` gives the longer matrix used to hunt
  bugs by hand (``LAZYSCAN_WRITER_MATRIX=wide``), the default a representative one for the suite.
- :func:`parquet_reference` / :func:`orc_reference` — the reference reading of a written file,
  with the documented normalizations (INT96 and ORC timestamps in microseconds).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import functools
import math
import zlib
import zoneinfo
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as porc
import pyarrow.parquet as pq

import lazyscan
from lazyscan.orc import OrcFile
from lazyscan.parquet import ParquetFile, RowRanges
from tests.support.predicates import Predicate, comparable, filterable, filtered, sql_literal
from tests.support.random_data import BYTES_POOL, FLOAT_POOL, STRING_POOL
from tests.support.tables import assert_same_table, column_difference, table_difference

EPOCH = dt.datetime(1970, 1, 1)
US_PER_DAY = 86_400_000_000
#: microseconds of 0001-01-01 and 9999-12-31 23:59:59.999999 (Spark's TimestampType range)
US_MIN = (dt.datetime(1, 1, 1) - EPOCH) // dt.timedelta(microseconds=1)
US_MAX = (dt.datetime(9999, 12, 31, 23, 59, 59, 999999) - EPOCH) // dt.timedelta(microseconds=1)
#: a day inside each end of the nanosecond range (1677-09-21 to 2262-04-11)
NS_MIN = (dt.datetime(1677, 9, 22) - EPOCH) // dt.timedelta(microseconds=1) * 1000
NS_MAX = (dt.datetime(2262, 4, 10) - EPOCH) // dt.timedelta(microseconds=1) * 1000

LONG_STRINGS = ["x" * 3000, "é" * 1500 + "z", "日本語" * 700]

#: column name -> Arrow type of :func:`matrix_table`
MATRIX_TYPES: dict[str, pa.DataType] = {
    "id": pa.int64(),  # 0..n-1, sorted, no nulls
    "k_sorted": pa.int32(),  # sorted with repeats and leading nulls
    "s_sorted": pa.string(),  # sorted, no nulls
    "b": pa.bool_(),
    "i8": pa.int8(),
    "i16": pa.int16(),
    "i32": pa.int32(),
    "i64": pa.int64(),
    "u8": pa.uint8(),
    "u16": pa.uint16(),
    "u32": pa.uint32(),
    "u64": pa.uint64(),
    "f16": pa.float16(),
    "f32": pa.float32(),
    "f64": pa.float64(),
    "dec9": pa.decimal128(9, 2),
    "dec18": pa.decimal128(18, 4),
    "dec38": pa.decimal128(38, 10),
    "s": pa.string(),
    "s_low": pa.string(),  # few distinct values: dictionary pages, dictionary pruning
    "bin": pa.binary(),
    "fsb": pa.binary(4),
    "d": pa.date32(),
    "ts_us": pa.timestamp("us"),
    "ts_ms": pa.timestamp("ms"),
    "ts_ns": pa.timestamp("ns"),
    "ts_tz": pa.timestamp("us", tz="UTC"),
    "t_us": pa.time64("us"),
    "l_i": pa.list_(pa.int32()),
    "l_s": pa.list_(pa.string()),
    "st": pa.struct([("a", pa.int64()), ("b", pa.string())]),
    "m": pa.map_(pa.string(), pa.int32()),
}


def _ints(rng: np.random.Generator, t: pa.DataType, n: int) -> np.ndarray:
    info = np.iinfo(t.to_pandas_dtype())
    values = rng.integers(info.min, info.max, n, dtype=t.to_pandas_dtype(), endpoint=True)
    extremes = np.array([info.min, info.max, 0, 1, info.min + 1, info.max - 1], dtype=values.dtype)
    values[rng.choice(n, len(extremes) * 4, replace=False)] = np.tile(extremes, 4)
    small = rng.random(n) < 0.3  # repeated small values: equality predicates hit
    values[small] = rng.integers(0, 5, int(small.sum()))
    return values


def _decimals(rng: np.random.Generator, precision: int, scale: int, n: int) -> list[decimal.Decimal]:
    top = 10**precision - 1
    unscaled = [0] * n
    digits = precision
    while digits > 0:  # 18 digits at a time: int64 holds them
        step = min(digits, 18)
        unscaled = [u * 10**step + int(x) for u, x in zip(unscaled, rng.integers(0, 10**step, n))]
        digits -= step
    signs = rng.random(n) < 0.5
    unscaled = [-u if neg else u for u, neg in zip(unscaled, signs)]
    small = rng.random(n) < 0.3
    unscaled = [int(x) if sm else u for u, sm, x in zip(unscaled, small, rng.integers(-500, 500, n))]
    for i, j in enumerate(rng.choice(n, 8, replace=False)):
        unscaled[j] = [top, -top, 0, 1][i % 4]
    return [decimal.Decimal(f"{u}E-{scale}") for u in unscaled]


def _strings(rng: np.random.Generator, n: int) -> list[str]:
    pool = [*STRING_POOL, *LONG_STRINGS]
    out = [pool[int(i)] for i in rng.integers(0, len(pool), n)]
    letters = np.array(list("abcdefghijklmnopqrstuvwxyzé日🙂"))
    for j in rng.choice(n, n // 2, replace=False):
        out[j] = "".join(rng.choice(letters, int(rng.integers(1, 12))))
    return out


def _timestamps(rng: np.random.Generator, lo: int, hi: int, n: int, edges: Sequence[int], near_1970: int) -> np.ndarray:
    values = rng.integers(lo, hi, n, endpoint=True)
    near = rng.random(n) < 0.3  # around 1970, where rounding of negative values matters
    values[near] = rng.integers(-near_1970, near_1970, int(near.sum()))
    values[rng.choice(n, len(edges), replace=False)] = edges
    return values


def _with_nulls(values: Any, t: pa.DataType, nulls: np.ndarray) -> pa.Array:
    return pa.array(values, t, mask=nulls)


def matrix_table(n: int, seed: int, null_fraction: float = 0.1) -> pa.Table:
    """The matrix table: ``n`` rows, one column per entry of :data:`MATRIX_TYPES`."""
    rng = np.random.default_rng(seed)

    def nulls() -> np.ndarray:
        return rng.random(n) < null_fraction

    cols: dict[str, pa.Array] = {"id": pa.array(np.arange(n, dtype=np.int64))}
    k = np.arange(n, dtype=np.int32) // 7
    k_nulls = np.zeros(n, bool)
    k_nulls[: n // 50] = True
    cols["k_sorted"] = pa.array(k, pa.int32(), mask=k_nulls)
    cols["s_sorted"] = pa.array([f"key{i // 3:06d}" for i in range(n)])
    cols["b"] = _with_nulls(rng.random(n) < 0.5, pa.bool_(), nulls())
    for name in ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"):
        t = MATRIX_TYPES[name]
        cols[name] = _with_nulls(_ints(rng, t, n), t, nulls())
    floats = np.array([FLOAT_POOL[int(i)] for i in rng.integers(0, len(FLOAT_POOL), n)])
    spread = rng.random(n) < 0.4
    floats[spread] = rng.normal(0, 1e3, int(spread.sum()))
    cols["f32"] = _with_nulls(floats.astype(np.float32), pa.float32(), nulls())
    f64 = floats.copy()
    f64[spread] = rng.normal(0, 1e6, int(spread.sum()))
    cols["f64"] = _with_nulls(f64, pa.float64(), nulls())
    f16 = np.clip(floats, -65504, 65504).astype(np.float16)
    f16[np.isinf(floats)] = floats[np.isinf(floats)]
    cols["f16"] = pa.array(f16, pa.float16(), mask=nulls())
    for name in ("dec9", "dec18", "dec38"):
        t = MATRIX_TYPES[name]
        cols[name] = _with_nulls(_decimals(rng, t.precision, t.scale, n), t, nulls())
    cols["s"] = _with_nulls(_strings(rng, n), pa.string(), nulls())
    low = ["", "alpha", "beta", "gamma", "δέλτα", "🙂"]
    cols["s_low"] = _with_nulls([low[int(i)] for i in rng.integers(0, len(low), n)], pa.string(), nulls())
    bins = [BYTES_POOL[int(i)] for i in rng.integers(0, len(BYTES_POOL), n)]
    for j in rng.choice(n, n // 3, replace=False):
        bins[j] = rng.bytes(int(rng.integers(0, 40)))
    cols["bin"] = _with_nulls(bins, pa.binary(), nulls())
    cols["fsb"] = _with_nulls([rng.bytes(4) if i % 3 else b"\x00\x00\x00\x00" for i in range(n)], pa.binary(4), nulls())
    day_lo, day_hi = US_MIN // US_PER_DAY, US_MAX // US_PER_DAY
    days = _timestamps(rng, day_lo, day_hi, n, [day_lo, day_hi, 0, -1], 1000)
    cols["d"] = pa.array(days.astype(np.int32), pa.int32(), mask=nulls()).view(pa.date32())
    us = _timestamps(rng, US_MIN, US_MAX, n, [US_MIN, US_MAX, 0, -1, 1], 10**9)
    cols["ts_us"] = pa.array(us, pa.int64(), mask=nulls()).view(pa.timestamp("us"))
    cols["ts_ms"] = pa.array(us // 1000, pa.int64(), mask=nulls()).view(pa.timestamp("ms"))
    ns = _timestamps(rng, NS_MIN, NS_MAX, n, [NS_MIN, NS_MAX, 0, -1, 1, 999, -999], 10**12)
    cols["ts_ns"] = pa.array(ns, pa.int64(), mask=nulls()).view(pa.timestamp("ns"))
    tz = _timestamps(rng, US_MIN, US_MAX, n, [US_MIN, US_MAX, 0], 10**9)
    cols["ts_tz"] = pa.array(tz, pa.int64(), mask=nulls()).view(pa.timestamp("us", "UTC"))
    cols["t_us"] = pa.array(rng.integers(0, US_PER_DAY, n), pa.int64(), mask=nulls()).view(pa.time64("us"))
    lengths = rng.integers(0, 5, n)
    flat_i = _ints(rng, pa.int32(), int(lengths.sum()))
    item_nulls = rng.random(len(flat_i)) < 0.1
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    list_nulls = nulls()
    cols["l_i"] = pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat_i, mask=item_nulls), mask=pa.array(list_nulls))
    flat_s = _strings(rng, int(lengths.sum()))
    cols["l_s"] = pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat_s, mask=item_nulls[::-1].copy()), mask=pa.array(nulls()))
    st_a = _with_nulls(_ints(rng, pa.int64(), n), pa.int64(), nulls())
    st_b = _with_nulls(_strings(rng, n), pa.string(), nulls())
    cols["st"] = pa.StructArray.from_arrays([st_a, st_b], names=["a", "b"], mask=pa.array(nulls()))
    map_lengths = rng.integers(0, 4, n)
    map_offsets = np.concatenate([[0], np.cumsum(map_lengths)]).astype(np.int32)
    total = int(map_lengths.sum())
    keys = pa.array([f"k{j % 5}" for j in range(total)])
    items = pa.array(_ints(rng, pa.int32(), total), mask=rng.random(total) < 0.1)
    cols["m"] = pa.MapArray.from_arrays(pa.array(map_offsets), keys, items, mask=pa.array(nulls()))
    return pa.table({name: cols[name].cast(MATRIX_TYPES[name]) if cols[name].type != MATRIX_TYPES[name] else cols[name] for name in MATRIX_TYPES})


# ---- writers ------------------------------------------------------------------------------------

ALL_COLUMNS = tuple(MATRIX_TYPES)
#: DuckDB has no half float
DUCKDB_COLUMNS = tuple(c for c in ALL_COLUMNS if c != "f16")
NESTED_COLUMNS = ("l_i", "l_s", "st", "m")
#: fastparquet writes from pandas: no dates (pandas holds them as objects), times, lists or
#: maps; a struct becomes JSON text
FASTPARQUET_COLUMNS = tuple(c for c in ALL_COLUMNS if c not in ("dec9", "dec18", "dec38", "d", "t_us", "l_i", "l_s", "m", "fsb"))
#: ORC has no unsigned integers, half floats or times (pyarrow.orc refuses them)
ORC_COLUMNS = tuple(c for c in ALL_COLUMNS if c not in ("u8", "u16", "u32", "u64", "f16", "t_us", "ts_ns"))
#: pyorc's schema of :data:`ORC_COLUMNS`
PYORC_TYPES = {
    "id": "bigint", "k_sorted": "int", "s_sorted": "string", "b": "boolean", "i8": "tinyint", "i16": "smallint",
    "i32": "int", "i64": "bigint", "f32": "float", "f64": "double", "dec9": "decimal(9,2)", "dec18": "decimal(18,4)",
    "dec38": "decimal(38,10)", "s": "string", "s_low": "string", "bin": "binary", "fsb": "binary", "d": "date",
    "ts_us": "timestamp", "ts_ms": "timestamp", "ts_tz": "timestamp with local time zone", "l_i": "array<int>",
    "l_s": "array<string>", "st": "struct<a:bigint,b:string>", "m": "map<string,int>",
}


@dataclass(frozen=True)
class WriterCase:
    """One writer with one set of options: the columns of :func:`matrix_table` it writes and
    how. ``id`` names it in test ids and in the known-failure table."""

    writer: str
    options: str
    fmt: str  # "parquet" or "orc"
    write: Callable[[pa.Table, Path], None] = field(compare=False)
    columns: tuple[str, ...] = ALL_COLUMNS

    @property
    def id(self) -> str:
        return f"{self.writer}:{self.options}"


def _pyarrow(**options: Any) -> Callable[[pa.Table, Path], None]:
    def write(table: pa.Table, path: Path) -> None:
        pq.write_table(table, path, **options)

    return write


def pyarrow_cases(wide: bool = False) -> list[WriterCase]:
    """pyarrow (parquet-cpp) with every option that changes the layout: page versions,
    dictionaries on and off and falling back to plain, every codec, page index, statistics and
    stored schema off, BYTE_STREAM_SPLIT, the DELTA encodings and RLE booleans, small pages and
    row groups, legacy nested lists, coerced and INT96 timestamps, Bloom filters, format 1.0."""
    ints = ["k_sorted", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "id", "d", "ts_us", "ts_ms", "ts_ns", "ts_tz", "t_us"]
    delta = {
        **dict.fromkeys(ints, "DELTA_BINARY_PACKED"),
        "s": "DELTA_LENGTH_BYTE_ARRAY", "bin": "DELTA_LENGTH_BYTE_ARRAY",
        "dec9": "DELTA_BINARY_PACKED", "dec18": "DELTA_BINARY_PACKED",
        "s_sorted": "DELTA_BYTE_ARRAY", "s_low": "DELTA_BYTE_ARRAY", "fsb": "DELTA_BYTE_ARRAY", "dec38": "DELTA_BYTE_ARRAY",
        "b": "RLE",
    }
    split = dict.fromkeys(["f16", "f32", "f64", "i32", "i64", "fsb", "dec38", "d", "ts_us"], "BYTE_STREAM_SPLIT")
    bloom = {c: {"ndv": 4000, "fpp": 0.05} for c in ["id", "i32", "i64", "s", "s_low", "bin", "f64", "dec18", "d", "ts_us", "fsb"]}
    rg = {"row_group_size": 1000}
    specs: list[tuple[str, dict[str, Any]]] = [
        ("v1-snappy-dict", {**rg}),
        ("v2-zstd-plain-pageindex", {**rg, "data_page_version": "2.0", "use_dictionary": False, "compression": "zstd", "write_page_index": True}),
        ("v2-gzip-dict-smallpages", {"row_group_size": 700, "data_page_version": "2.0", "compression": "gzip", "data_page_size": 256, "write_batch_size": 37, "write_page_index": True}),
        ("v1-brotli-nostats-noschema", {**rg, "compression": "brotli", "write_statistics": False, "store_schema": False}),
        ("v1-lz4-bytestreamsplit", {**rg, "compression": "lz4", "use_dictionary": ["s_low", "s"], "column_encoding": split}),
        ("v2-delta-rle", {**rg, "data_page_version": "2.0", "use_dictionary": False, "column_encoding": delta, "max_rows_per_page": 128, "write_page_index": True, "store_decimal_as_integer": True}),
        ("v1-none-dictfallback", {**rg, "compression": "none", "dictionary_pagesize_limit": 200, "max_rows_per_page": 300, "write_page_index": True}),
        ("legacy-nested-int96", {**rg, "use_compliant_nested_type": False, "use_deprecated_int96_timestamps": True}),
        ("coerce-ms-format1.0", {**rg, "coerce_timestamps": "ms", "allow_truncated_timestamps": True, "version": "1.0"}),
        ("bloom-decimal-as-int", {**rg, "bloom_filter_options": bloom, "store_decimal_as_integer": True, "write_page_index": True}),
    ]
    if wide:
        specs += [
            ("v2-snappy-onerg", {"data_page_version": "2.0"}),
            ("v1-zstd9-tinypages", {**rg, "compression": "zstd", "compression_level": 9, "data_page_size": 64, "write_batch_size": 7}),
            ("v2-lz4-nodict-nostats", {**rg, "data_page_version": "2.0", "compression": "lz4", "use_dictionary": False, "write_statistics": False}),
            ("v2-brotli-bss-all", {"row_group_size": 333, "data_page_version": "2.0", "compression": "brotli", "use_dictionary": False, "use_byte_stream_split": ["f16", "f32", "f64", "i32", "i64", "u32", "u64", "fsb", "dec38", "d", "ts_us", "ts_ms", "ts_ns", "ts_tz", "k_sorted", "id"]}),
            ("v2-delta-dict-on", {**rg, "data_page_version": "2.0", "column_encoding": {k: v for k, v in delta.items() if k not in ("s_low",)}, "use_dictionary": ["s_low"], "store_decimal_as_integer": True}),
            ("v1-delta-gzip", {**rg, "compression": "gzip", "use_dictionary": False, "column_encoding": delta, "store_decimal_as_integer": True}),
            ("int96-v2-nodict", {**rg, "data_page_version": "2.0", "use_deprecated_int96_timestamps": True, "use_dictionary": False}),
            ("coerce-us", {**rg, "coerce_timestamps": "us", "allow_truncated_timestamps": True}),
            ("format2.4", {**rg, "version": "2.4", "coerce_timestamps": "us", "allow_truncated_timestamps": True}),
            ("rows-per-page-1", {"row_group_size": 250, "max_rows_per_page": 1, "write_page_index": True}),
            ("cdc", {**rg, "use_content_defined_chunking": True, "write_page_index": True}),
            ("checksums-sorting", {**rg, "write_page_checksum": True, "sorting_columns": [pq.SortingColumn(0)]}),
            ("bloom-v2-plain", {**rg, "bloom_filter_options": bloom, "data_page_version": "2.0", "use_dictionary": False}),
        ]
    return [WriterCase("pyarrow", name, "parquet", _pyarrow(**opts)) for name, opts in specs]


def _duckdb(options: str) -> Callable[[pa.Table, Path], None]:
    def write(table: pa.Table, path: Path) -> None:
        import duckdb

        con = duckdb.connect()
        try:
            con.execute("SET threads = 1")
            con.register("matrix", table)
            con.execute(f"COPY (SELECT * FROM matrix ORDER BY id) TO '{path}' (FORMAT parquet, {options})")
        finally:
            con.close()

    return write


def duckdb_cases(wide: bool = False) -> list[WriterCase]:
    specs = [
        ("v1-snappy", "COMPRESSION snappy, ROW_GROUP_SIZE 1000"),
        ("v2-zstd", "COMPRESSION zstd, ROW_GROUP_SIZE 1000, PARQUET_VERSION V2"),
        ("v2-gzip-bloom-nodict", "COMPRESSION gzip, ROW_GROUP_SIZE 2048, PARQUET_VERSION V2, DICTIONARY_SIZE_LIMIT 1, WRITE_BLOOM_FILTER true"),
        ("v1-lz4raw-dict", "COMPRESSION lz4_raw, ROW_GROUP_SIZE 1000, DICTIONARY_COMPRESSION_RATIO_THRESHOLD 0"),
    ]
    if wide:
        specs += [
            ("v1-brotli", "COMPRESSION brotli, ROW_GROUP_SIZE 500"),
            ("v1-none", "COMPRESSION uncompressed"),
            ("v2-lz4", "COMPRESSION lz4, PARQUET_VERSION V2, ROW_GROUP_SIZE 700"),
            ("v2-zstd9-stringdictpage", "COMPRESSION zstd, COMPRESSION_LEVEL 9, PARQUET_VERSION V2, STRING_DICTIONARY_PAGE_SIZE_LIMIT 64"),
        ]
    cases = [WriterCase("duckdb", name, "parquet", _duckdb(opts), DUCKDB_COLUMNS) for name, opts in specs]
    # the V2 encodings of flat columns, which lazyscan decodes itself, apart from nested ones
    flat = tuple(c for c in DUCKDB_COLUMNS if c not in NESTED_COLUMNS)
    cases.append(WriterCase("duckdb", "v2-zstd-flat", "parquet", _duckdb("COMPRESSION zstd, ROW_GROUP_SIZE 1000, PARQUET_VERSION V2"), flat))
    return cases


def _polars(**options: Any) -> Callable[[pa.Table, Path], None]:
    def write(table: pa.Table, path: Path) -> None:
        import polars as pl

        pl.from_arrow(table).write_parquet(path, **options)  # type: ignore[union-attr]

    return write


def polars_cases(wide: bool = False) -> list[WriterCase]:
    specs: list[tuple[str, dict[str, Any]]] = [
        ("zstd-stats", {"row_group_size": 1000, "statistics": "full"}),
        ("gzip9-smallpages", {"compression": "gzip", "compression_level": 9, "row_group_size": 1000, "data_page_size": 512}),
        ("lz4-nostats", {"compression": "lz4", "statistics": False, "row_group_size": 1500}),
    ]
    if wide:
        specs += [
            ("brotli11", {"compression": "brotli", "compression_level": 11, "row_group_size": 800}),
            ("snappy", {"compression": "snappy"}),
            ("uncompressed-tinypages", {"compression": "uncompressed", "data_page_size": 64, "row_group_size": 1000}),
            ("use-pyarrow", {"use_pyarrow": True, "row_group_size": 1000, "pyarrow_options": {"data_page_version": "2.0"}}),
        ]
    return [WriterCase("polars", name, "parquet", _polars(**opts)) for name, opts in specs]


def _fastparquet(**options: Any) -> Callable[[pa.Table, Path], None]:
    def write(table: pa.Table, path: Path) -> None:
        import fastparquet
        import pandas as pd

        nullable = {
            pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(), pa.int32(): pd.Int32Dtype(), pa.int64(): pd.Int64Dtype(),
            pa.uint8(): pd.UInt8Dtype(), pa.uint16(): pd.UInt16Dtype(), pa.uint32(): pd.UInt32Dtype(), pa.uint64(): pd.UInt64Dtype(),
            pa.bool_(): pd.BooleanDtype(),
        }
        frame = table.to_pandas(types_mapper=nullable.get)
        fastparquet.write(str(path), frame, write_index=False, **options)

    return write


def fastparquet_cases(wide: bool = False) -> list[WriterCase]:
    specs: list[tuple[str, dict[str, Any]]] = [
        ("snappy-rg1000", {"compression": "SNAPPY", "row_group_offsets": 1000}),
        ("zstd-int96-nostats", {"compression": "ZSTD", "row_group_offsets": 1200, "times": "int96", "stats": False}),
        ("gzip-plain-strings", {"compression": "GZIP", "row_group_offsets": 1000, "object_encoding": {"s": "utf8", "s_low": "utf8", "s_sorted": "utf8", "bin": "bytes", "st": "json"}}),
    ]
    if wide:
        specs += [
            ("none-onerg", {}),
            ("lz4", {"compression": "LZ4", "row_group_offsets": 500}),
            ("brotli", {"compression": "BROTLI", "row_group_offsets": 999}),
            ("lz4raw-int96", {"compression": "LZ4_RAW", "row_group_offsets": 1000, "times": "int96"}),
        ]
    return [WriterCase("fastparquet", name, "parquet", _fastparquet(**opts), FASTPARQUET_COLUMNS) for name, opts in specs]


class _MicrosConverter:
    """pyorc timestamps as integer microseconds since 1970-01-01 UTC (an instant)."""

    @staticmethod
    def from_orc(seconds: int, nanoseconds: int, timezone: Any) -> int:
        return seconds * 1_000_000 + nanoseconds // 1000

    @staticmethod
    def to_orc(obj: int, timezone: Any) -> tuple[int, int]:
        seconds, micros = divmod(obj, 1_000_000)
        return seconds, micros * 1000


def _pyorc_converters() -> dict[Any, Any]:
    import pyorc

    converter = type("MicrosConverter", (pyorc.converters.ORCConverter,), dict(vars(_MicrosConverter)))
    return {pyorc.TypeKind.TIMESTAMP: converter, pyorc.TypeKind.TIMESTAMP_INSTANT: converter}


def _pyorc_rows(table: pa.Table) -> list[dict[str, Any]]:
    columns = []
    for column in table.columns:
        t = column.type
        if pa.types.is_timestamp(t):
            column = column.cast(pa.int64()) if t.unit == "us" else pc.multiply(column.cast(pa.int64()), 1000)
        values = column.to_pylist()
        if pa.types.is_map(t):
            values = [None if v is None else dict(v) for v in values]
        columns.append(values)
    return [dict(zip(table.column_names, row)) for row in zip(*columns)]


def _pyorc(**options: Any) -> Callable[[pa.Table, Path], None]:
    def write(table: pa.Table, path: Path) -> None:
        import pyorc

        schema = "struct<" + ",".join(f"{c}:{PYORC_TYPES[c]}" for c in table.column_names) + ">"
        opts = dict(options)
        opts["timezone"] = zoneinfo.ZoneInfo(opts.pop("timezone", "UTC"))
        if "compression" in opts:
            opts["compression"] = pyorc.CompressionKind[opts["compression"]]
        with path.open("wb") as out, pyorc.Writer(
            out, schema, struct_repr=pyorc.StructRepr.DICT, converters=_pyorc_converters(), **opts
        ) as writer:
            writer.writerows(_pyorc_rows(table))

    return write


def pyorc_cases(wide: bool = False) -> list[WriterCase]:
    """pyorc (the ORC C++ writer): every compression kind it writes, Bloom filter columns, row
    index strides, small stripes and compression blocks, dictionaries, writer time zones."""
    small = {"stripe_size": 64 * 1024, "compression_block_size": 4096, "memory_block_size": 4096, "batch_size": 256}
    bloom = ["id", "i32", "i64", "s", "s_low", "f64", "d", "ts_us", "dec18"]
    specs: list[tuple[str, dict[str, Any]]] = [
        ("zlib-stride1000", {"compression": "ZLIB", "row_index_stride": 1000}),
        ("snappy-bloom-small-newyork", {**small, "compression": "SNAPPY", "row_index_stride": 500, "bloom_filter_columns": bloom, "timezone": "America/New_York"}),
        ("zstd-dict-stride128-kolkata", {"compression": "ZSTD", "row_index_stride": 128, "dict_key_size_threshold": 1.0, "timezone": "Asia/Kolkata"}),
        ("lz4-none-small", {**small, "compression": "LZ4", "row_index_stride": 300}),
        ("none-dict", {"compression": "NONE", "dict_key_size_threshold": 1.0, "row_index_stride": 1000}),
    ]
    if wide:
        specs += [
            ("zlib-compress-strategy", {"compression": "ZLIB", "compression_strategy": __import__("pyorc").CompressionStrategy.COMPRESSION}),
            ("snappy-stride-1k-tiny-blocks", {"compression": "SNAPPY", "compression_block_size": 1024, "row_index_stride": 1000, "stripe_size": 32 * 1024, "memory_block_size": 1024, "batch_size": 100}),
            ("zstd-bloom-apia", {"compression": "ZSTD", "bloom_filter_columns": bloom, "bloom_filter_fpp": 0.01, "timezone": "Pacific/Apia"}),
            ("zlib-lordhowe-dict", {"compression": "ZLIB", "timezone": "Australia/Lord_Howe", "dict_key_size_threshold": 0.5}),
        ]
    return [WriterCase("pyorc", name, "orc", _pyorc(**opts), ORC_COLUMNS) for name, opts in specs]


def _pyarrow_orc(**options: Any) -> Callable[[pa.Table, Path], None]:
    def write(table: pa.Table, path: Path) -> None:
        porc.write_table(table, str(path), **options)

    return write


def pyarrow_orc_cases(wide: bool = False) -> list[WriterCase]:
    small = {"stripe_size": 64 * 1024, "batch_size": 256}  # the block size must stay 64 KiB
    specs: list[tuple[str, dict[str, Any]]] = [
        ("zlib-small-stripes", {**small, "compression": "zlib", "row_index_stride": 500}),
        ("zstd-dict", {"compression": "zstd", "dictionary_key_size_threshold": 1.0, "row_index_stride": 1000}),
        ("snappy-bloom", {"compression": "snappy", "bloom_filter_columns": [0, 2, 6, 7, 14, 18], "row_index_stride": 700}),
    ]
    if wide:
        specs += [
            ("lz4", {"compression": "lz4"}),
            ("uncompressed-0.11", {"file_version": "0.11", "row_index_stride": 256}),
            ("zlib-compression-strategy-dict", {"compression": "zlib", "compression_strategy": "compression", "dictionary_key_size_threshold": 0.8}),
        ]
    return [WriterCase("pyarrow.orc", name, "orc", _pyarrow_orc(**opts), ORC_COLUMNS) for name, opts in specs]


def writer_cases(wide: bool = False) -> list[WriterCase]:
    """The non-Spark writers' cases."""
    return [
        *pyarrow_cases(wide), *duckdb_cases(wide), *polars_cases(wide), *fastparquet_cases(wide),
        *pyorc_cases(wide), *pyarrow_orc_cases(wide),
    ]


# ---- references ---------------------------------------------------------------------------------


def _storage_columns(table: pa.Table) -> pa.Table:
    """Extension columns (canonical ones such as ``arrow.json`` included) as their storage, as
    lazyscan returns them."""
    for i, f in enumerate(table.schema):
        if isinstance(f.type, pa.BaseExtensionType):
            column = pa.chunked_array([c.storage for c in table.column(i).chunks], f.type.storage_type)
            table = table.set_column(i, f.with_type(f.type.storage_type), column)
    return table


def _stored_arrow_schema(path: Path) -> pa.Schema | None:
    import base64

    kv = pq.read_metadata(path).metadata or {}
    raw = kv.get(b"ARROW:schema")
    if not raw:
        return None
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(raw)))


def parquet_reference(path: Path) -> pa.Table:
    """pyarrow's reading, INT96 in microseconds (``coerce_int96_timestamp_unit="us"``: lazyscan
    reads INT96 as Spark does, docs/FORMATS.md "Timestamps of every year"), and a flat INT96 column in
    the zone of pyarrow's stored schema where it names one: INT96 holds UTC instants, and
    lazyscan keeps the zone the writer declared (``lazyscan.parquet.schema``, INT96 with the
    stored schema's hint) where pyarrow drops it."""
    table = _storage_columns(pq.read_table(path, coerce_int96_timestamp_unit="us"))
    stored = _stored_arrow_schema(path)
    if stored is None:
        return table
    physical = pq.ParquetFile(path).schema
    for i in range(len(physical)):
        leaf = physical.column(i)
        if leaf.physical_type != "INT96" or "." in leaf.path:
            continue
        at = table.schema.get_field_index(leaf.path)
        want = stored.field(leaf.path).type if leaf.path in stored.names else None
        if at >= 0 and want is not None and pa.types.is_timestamp(want) and want.tz:
            table = table.set_column(at, table.schema.field(at).with_type(pa.timestamp("us", want.tz)), table.column(at).cast(pa.timestamp("us", want.tz)))
    return table


#: the instants whose wall clock is looked up for a zone's offset: a day inside years 1 and 9999
_OFFSET_LOOKUP = (US_MIN // 1_000_000 + 86_400, US_MAX // 1_000_000 - 86_400)


def _wall_clock_micros(instant: int, zone: zoneinfo.ZoneInfo) -> int:
    """The wall clock in ``zone`` of an instant, as microseconds of a UTC clock (the offset of
    an instant within a day of years 1 and 9999 is the one a day inside them)."""
    seconds = min(max(instant // 1_000_000, _OFFSET_LOOKUP[0]), _OFFSET_LOOKUP[1])
    offset = dt.datetime.fromtimestamp(seconds, dt.timezone.utc).astimezone(zone).utcoffset()
    assert offset is not None
    return instant + int(offset.total_seconds()) * 1_000_000


def orc_reference(path: Path) -> pa.Table:
    """pyarrow's reading of an ORC file, its timestamp columns replaced by pyorc's (the ORC C++
    reader's) in microseconds: lazyscan reads ORC timestamps as microseconds, years 1 to 9999,
    where pyarrow refuses a value outside 1677-2262 (docs/FORMATS.md "Timestamps of every year");
    ``timestamp`` as the wall clock in the writer's zone of the instant pyorc reads (pyorc
    reading in that zone, as ``tests/test_timestamps_range.py`` does: ORC's Java reader, which
    Spark reads through, corrects negative seconds on the instant, pyarrow on the wall clock),
    ``timestamp with local time zone`` as the UTC instant."""
    import pyorc

    f = porc.ORCFile(str(path))
    schema = f.schema
    stamps = [name for name in schema.names if pa.types.is_timestamp(schema.field(name).type)]
    others = [name for name in schema.names if name not in stamps]
    table = f.read(columns=others) if others else pa.table({})
    if not stamps:
        return _storage_columns(table.select(schema.names))
    with path.open("rb") as fh:
        zones = {pyorc.Reader(fh).read_stripe(s).writer_timezone for s in range(f.nstripes)}
    assert len(zones) <= 1, f"{path}: stripes written in several zones {zones}"
    zone = zoneinfo.ZoneInfo(zones.pop() if zones else "UTC")
    values: dict[str, list[int | None]] = {name: [] for name in stamps}
    with path.open("rb") as fh:
        reader = pyorc.Reader(fh, column_names=stamps, timezone=zone, converters=_pyorc_converters())
        for row in reader:
            for name, v in zip(stamps, row):
                local = schema.field(name).type.tz is None
                values[name].append(None if v is None else _wall_clock_micros(v, zone) if local else v)
    columns = {name: table.column(name) for name in others}
    for name in stamps:
        columns[name] = pa.array(values[name], pa.timestamp("us", schema.field(name).type.tz))
    return _storage_columns(pa.table({name: columns[name] for name in schema.names}))


def duckdb_reference(path: Path) -> pa.Table:
    """DuckDB's reading of a file, in the types of pyarrow's schema of it: the reference for
    DuckDB's PARQUET_VERSION V2 files, whose DELTA_BINARY_PACKED INT32 pages pyarrow refuses
    ("Unexpected end of stream: InitBlock EOF")."""
    import duckdb

    con = duckdb.connect()
    try:
        table = con.sql(f"SELECT * FROM read_parquet('{path}')").to_arrow_table()
    finally:
        con.close()
    return _storage_columns(table.cast(pq.read_schema(path)))


def reference(case: WriterCase, path: Path) -> pa.Table:
    """The reference reading of ``case``'s file (see :func:`parquet_reference`,
    :func:`orc_reference`, :func:`duckdb_reference`)."""
    if case.fmt == "orc":
        return orc_reference(path)
    if case.writer == "duckdb" and "V2" in case.options.upper():
        return duckdb_reference(path)
    return parquet_reference(path)


# ---- predicates -----------------------------------------------------------------------------------

#: the columns whose values are sorted: their statistics prune row groups, stripes and pages
SORTED_COLUMNS = ("id", "k_sorted", "s_sorted")
_OPS = ("=", "<", ">=", "IN", "IS NULL", "BETWEEN", "IS NOT NULL")


def sample_predicates(table: pa.Table, rng: np.random.Generator, count: int) -> list[Predicate]:
    """``count`` predicates on the filterable columns of ``table``, the sorted columns first,
    values drawn from the column (its minimum and maximum among them, NaN where it holds
    one), each a Spark SQL literal."""
    names = [f.name for f in table.schema if filterable(f.type)]
    first = [c for c in SORTED_COLUMNS if c in names]
    others = [c for c in names if c not in first]
    chosen = first + [others[int(i)] for i in rng.integers(0, len(others), max(0, count - len(first)))]
    out = []
    for name in chosen[:count]:
        arr = comparable(table.column(name).combine_chunks())
        values = arr.drop_null()
        if len(values) == 0:
            out.append(Predicate(name, "IS NULL", ()))
            continue
        numbers = values.filter(pc.invert(pc.is_nan(values))) if pa.types.is_floating(values.type) else values
        pool = [values[int(i)] for i in rng.integers(0, len(values), 3)]
        if len(numbers):
            mm = pc.min_max(numbers)
            pool += [mm["min"], mm["max"]]
        pool = [v for v in pool if sql_literal(v) is not None]
        op = _OPS[int(rng.integers(0, len(_OPS)))]
        if not pool or op in ("IS NULL", "IS NOT NULL"):
            out.append(Predicate(name, op if op in ("IS NULL", "IS NOT NULL") else "IS NULL", ()))
            continue
        pick = [pool[int(i)] for i in rng.integers(0, len(pool), 3)]
        if op == "IN":
            out.append(Predicate(name, op, tuple(pick)))
        elif op == "BETWEEN":
            lo, hi = sorted(pick[:2], key=lambda v: (isinstance(v.as_py(), float) and math.isnan(v.as_py()), v.as_py()))
            out.append(Predicate(name, op, (lo, hi)))
        else:
            out.append(Predicate(name, op, (pick[0],)))
    return out


# ---- files and checks ---------------------------------------------------------------------------


@dataclass(eq=False)
class Written:
    """One case's file and its reference reading."""

    case: WriterCase
    path: Path
    reference: pa.Table
    seed: int
    predicate_count: int

    @property
    def orc(self) -> bool:
        return self.case.fmt == "orc"

    def rng(self, check: str) -> np.random.Generator:
        return np.random.default_rng(zlib.crc32(f"{self.seed}:{self.case.id}:{check}".encode()))


class Matrix:
    """Each case's file, written on first use into ``folder`` (one per test module)."""

    def __init__(self, folder: Path, rows: int, seed: int, predicate_count: int) -> None:
        self.folder = folder
        self.seed = seed
        self.predicate_count = predicate_count
        self.table = matrix_table(rows, seed)

    @functools.cache  # noqa: B019  (one Matrix per module)
    def written(self, case: WriterCase) -> Written:
        path = self.folder / f"{case.writer}-{case.options}.{case.fmt}"
        case.write(self.table.select(list(case.columns)), path)
        return Written(case, path, reference(case, path), self.seed, self.predicate_count)


def _scan(w: Written, where: str | None = None, **options: Any) -> pa.Table:
    return lazyscan.scan(str(w.path), where=where, threads=1, **options).to_table()


# ---- the checks -----------------------------------------------------------------------------------


def check_whole(w: Written) -> None:
    assert_same_table(_scan(w), w.reference, w.case.id, timestamp_unit_free=w.orc)


def _selections(n: int, rng: np.random.Generator) -> list[np.ndarray]:
    """First and last rows, a sparse and a dense random sample, a run of 37 rows."""
    start = int(rng.integers(0, n))
    picks = [
        np.array([0, n - 1]) if n > 1 else np.array([0]),
        np.sort(rng.choice(n, max(1, n // 100), replace=False)),
        np.sort(rng.choice(n, max(1, n * 6 // 10), replace=False)),
        np.arange(start, min(n, start + 37)),
    ]
    return [np.unique(p) for p in picks]


def _units(w: Written) -> list[int]:
    if w.orc:
        f = OrcFile(w.path)
        return [f.stripe(s).number_of_rows for s in range(f.num_stripes)]
    md = ParquetFile(str(w.path)).metadata
    return [rg.num_rows for rg in md.row_groups]


def check_selections(w: Written) -> None:
    rng = w.rng("selections")
    counts = _units(w)
    assert sum(counts) == w.reference.num_rows
    first = 0
    for unit, n in enumerate(counts):
        want_unit = w.reference.slice(first, n)
        first += n
        for sel in _selections(n, rng) if n else []:
            want = want_unit.take(pa.array(sel, pa.int64()))
            where = f"{w.case.id} {'stripe' if w.orc else 'row group'} {unit}, {len(sel)} rows from {sel[:3].tolist()}"
            if w.orc:
                f = OrcFile(w.path)
                for c in f.columns:
                    for rows in (sel, RowRanges.from_indices(sel)):
                        why = column_difference(f.read_column(unit, c.name, rows), want.column(c.name), True)
                        assert why is None, f"{where}, read_column({c.name!r}, {type(rows).__name__}): {why}"
                continue
            pf = ParquetFile(str(w.path))
            flat = [d for d in pf.schema.columns if d.flat]
            arrays = pf.read_columns(unit, [d.index for d in flat], RowRanges.from_indices(sel))
            for d, got in zip(flat, arrays):
                why = column_difference(got, want.column(d.top_level_field))
                assert why is None, f"{where}, read_columns: {d.name!r}: {why}"
            for d in flat:
                why = column_difference(pf.read_column(unit, d.index, sel), want.column(d.top_level_field))
                assert why is None, f"{where}, read_column({d.name!r}): {why}"
            assert_same_table(pf.read_row_group(unit, rows=sel), want, f"{where}, read_row_group")


@functools.cache
def _predicates(w: Written) -> tuple[Predicate, ...]:
    return tuple(sample_predicates(w.reference, w.rng("predicates"), w.predicate_count))


def check_predicates(w: Written) -> None:
    failures = []
    for p in _predicates(w):
        want = filtered(w.reference, p.mask(w.reference.column(p.column)))
        got = _scan(w, p.sql(), pushdown=False)
        why = table_difference(got, want, w.orc)
        if why:
            failures.append(f"{p.sql()}: {why}")
    assert not failures, f"{w.case.id}: {len(failures)} of {len(_predicates(w))} predicates differ:\n" + "\n".join(failures)


def check_pruning(w: Written) -> None:
    failures = []
    for p in _predicates(w):
        plain = _scan(w, p.sql(), pushdown=False)
        why = table_difference(_scan(w, p.sql()), plain)
        if why:
            failures.append(f"{p.sql()}: pushdown on against off: {why}")
    assert not failures, f"{w.case.id}: pruning changed the rows of {len(failures)} predicates:\n" + "\n".join(failures)


CHECK_FUNCTIONS: dict[str, Callable[[Written], None]] = {
    "whole": check_whole,
    "selections": check_selections,
    "predicates": check_predicates,
    "pruning": check_pruning,
}


# ---- Spark --------------------------------------------------------------------------------------

#: the columns Spark holds (no unsigned integers, half floats, nanoseconds, times or
#: fixed-size binaries); ``ts_us`` becomes TIMESTAMP_NTZ, ``ts_tz`` TIMESTAMP
SPARK_COLUMNS = tuple(c for c in ALL_COLUMNS if c not in ("u8", "u16", "u32", "u64", "f16", "ts_ms", "ts_ns", "fsb", "t_us"))
#: written with the proleptic Gregorian calendar unless a case says otherwise
_SPARK_CALENDAR = {
    "spark.sql.parquet.datetimeRebaseModeInWrite": "CORRECTED",
    "spark.sql.parquet.int96RebaseModeInWrite": "CORRECTED",
}


def _spark(spark: Any, fmt: str, conf: dict[str, str], options: dict[str, str]) -> Callable[[pa.Table, Path], None]:
    """Write with Spark (one task, so one part file, moved to ``path``): ``conf`` set on the
    session for the write, ``options`` given to the DataFrameWriter (Hadoop keys such as
    ``parquet.writer.version`` reach parquet-java and the ORC writer this way)."""

    def write(table: pa.Table, path: Path) -> None:
        df = spark.createDataFrame(table).coalesce(1)
        saved = {k: spark.conf.get(k, None) for k in conf}
        for k, v in {**_SPARK_CALENDAR, **conf}.items():
            spark.conf.set(k, v)
        try:
            folder = path.with_suffix(".spark")
            df.write.mode("overwrite").format(fmt).options(**options).save(str(folder))
        finally:
            for k in conf:
                if saved[k] is None:
                    spark.conf.unset(k)
                else:
                    spark.conf.set(k, saved[k])
            for k in _SPARK_CALENDAR:
                spark.conf.unset(k)
        parts = sorted(folder.glob(f"part-*.{fmt}")) or sorted(folder.glob("part-*"))
        parts = [p for p in parts if not p.name.endswith(".crc")]
        assert len(parts) == 1, f"Spark wrote {parts}"
        parts[0].rename(path)

    return write


def spark_cases(spark: Any, wide: bool = False) -> list[WriterCase]:
    """Spark's writers: Parquet through parquet-java (writer versions v1 and v2, the legacy
    format, INT96 / TIMESTAMP_MICROS / TIMESTAMP_MILLIS, codecs, dictionaries off, small pages
    and row groups), ORC through ORC's Java writer (codecs, Bloom filter columns, row index
    strides, small stripes)."""
    ts = "spark.sql.parquet.outputTimestampType"
    legacy = "spark.sql.parquet.writeLegacyFormat"
    small = {"parquet.block.size": str(128 * 1024), "parquet.page.size": "1024", "parquet.page.row.count.limit": "500"}
    parquet: list[tuple[str, dict[str, str], dict[str, str]]] = [
        ("v1-snappy-int96", {ts: "INT96"}, {"compression": "snappy", "parquet.block.size": str(256 * 1024)}),
        ("v2-zstd-micros", {ts: "TIMESTAMP_MICROS"}, {"compression": "zstd", "parquet.writer.version": "v2", **small}),
        ("legacy-gzip-millis", {ts: "TIMESTAMP_MILLIS", legacy: "true"}, {"compression": "gzip", **small}),
        ("v2-nodict-lz4raw-int96", {ts: "INT96"}, {"compression": "lz4_raw", "parquet.writer.version": "v2", "parquet.enable.dictionary": "false", **small}),
        # dates and timestamps in the hybrid Julian calendar, as Spark 2.x wrote them
        ("v1-legacy-calendar-int96", {ts: "INT96", "spark.sql.parquet.datetimeRebaseModeInWrite": "LEGACY", "spark.sql.parquet.int96RebaseModeInWrite": "LEGACY"}, {"compression": "snappy"}),
    ]
    orc: list[tuple[str, dict[str, str], dict[str, str]]] = [
        ("zlib-bloom", {}, {"compression": "zlib", "orc.bloom.filter.columns": "id,i64,s,s_low,d,dec18", "orc.row.index.stride": "1000"}),
        ("zstd-small-stripes", {}, {"compression": "zstd", "orc.stripe.size": str(64 * 1024), "orc.row.index.stride": "1000"}),
    ]
    if wide:
        parquet += [
            ("v1-none-nodict-micros", {ts: "TIMESTAMP_MICROS"}, {"compression": "none", "parquet.enable.dictionary": "false"}),
            ("legacy-v2-snappy-int96", {ts: "INT96", legacy: "true"}, {"compression": "snappy", "parquet.writer.version": "v2", **small}),
            ("v1-lz4-millis", {ts: "TIMESTAMP_MILLIS"}, {"compression": "lz4", **small}),
        ]
        orc += [
            ("snappy", {}, {"compression": "snappy"}),
            ("lz4-bloom", {}, {"compression": "lz4", "orc.bloom.filter.columns": "*", "orc.bloom.filter.fpp": "0.01"}),
            ("none-stride-2000", {}, {"compression": "none", "orc.row.index.stride": "2000"}),
        ]
    return [
        *(WriterCase("spark", name, "parquet", _spark(spark, "parquet", conf, opts), SPARK_COLUMNS) for name, conf, opts in parquet),
        *(WriterCase("spark-orc", name, "orc", _spark(spark, "orc", conf, opts), SPARK_COLUMNS) for name, conf, opts in orc),
    ]


def spark_reading(spark: Any, path: Path, fmt: str) -> pa.Table:
    """Spark's own reader's rows of a file (session time zone UTC), as Arrow."""
    return spark.read.format(fmt).load(str(path)).toArrow()  # type: ignore[no-any-return]


def check_spark_reader(w: Written, spark: Any) -> None:
    """lazyscan's whole reading equals Spark's own reader's (Spark's types cast to lazyscan's:
    the type checks are the reference's)."""
    ours = lazyscan.scan(str(w.path), threads=1).to_table()
    theirs = spark_reading(spark, w.path, w.case.fmt)
    with contextlib.suppress(pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
        theirs = theirs.cast(ours.schema)  # where it cannot, table_difference names the type
    assert_same_table(ours, theirs, f"{w.case.id}: against Spark's reader", timestamp_unit_free=True)
