"""Definition levels in the deprecated BIT_PACKED encoding, which v1 data pages may declare:
packed from the most significant bit of each byte (parquet-format Encodings.md), as parquet-mr
reads them (Spark's reader with its vectorized reader off; the vectorized one refuses them). pyarrow reads them from the least significant bit
(apache/arrow#42368), so it is no reference here: the files are built from pyarrow's own by
rewriting each page's RLE levels as BIT_PACKED, and the reference is the table written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lazyscan
from lazyscan.parquet import ParquetFile
from lazyscan.parquet.decode import decode_levels_v1
from lazyscan.parquet.metadata import Encoding
from tests.spark_support import get_spark
from tests.support import page_files
from tests.support.footer import Node

ROWS = 1_003  # pages of 100 rows: the last byte of each page's levels is partly padding


def test_the_format_example_decodes() -> None:
    # Encodings.md: 0..7 at bit width 3 packed from the most significant bit
    packed = bytes([0b00000101, 0b00111001, 0b01110111])
    assert page_files.bit_packed_msb_first(np.arange(8), 3) == packed
    levels, end = decode_levels_v1(np.frombuffer(packed, np.uint8), 0, 3, Encoding.BIT_PACKED, 7, 8)
    assert levels.tolist() == list(range(8)) and end == 3


def test_levels_beyond_the_page_are_refused() -> None:
    from lazyscan.errors import CorruptFileError

    with pytest.raises(CorruptFileError, match="bit-packed levels exceed the page"):
        decode_levels_v1(np.zeros(2, np.uint8), 0, 2, Encoding.BIT_PACKED, 1, 17)


def _table() -> pa.Table:
    rng = np.random.default_rng(7)

    def nulls(p: float) -> np.ndarray:
        return rng.random(ROWS) < p

    return pa.table({
        "i": pa.array(rng.integers(-(10**9), 10**9, ROWS), pa.int64(), mask=nulls(0.3)),
        "f": pa.array(np.where(rng.random(ROWS) < 0.05, np.nan, rng.normal(size=ROWS)), mask=nulls(0.1)),
        "s": pa.array([f"v{x}" for x in rng.integers(0, 30, ROWS)], mask=nulls(0.5)),
        "b": pa.array(rng.random(ROWS) < 0.5, mask=nulls(0.2)),
        "few": pa.array(np.arange(ROWS), pa.int32(), mask=~nulls(0.02)),  # nearly all null
    })


def _bit_packed_file(table: pa.Table, column: int, folder: Path, dictionary: bool) -> Path:
    """Column ``column`` of ``table`` alone, written by pyarrow with its data pages' RLE
    definition levels rewritten as BIT_PACKED."""
    raw = pa.BufferOutputStream()
    pq.write_table(table.select([column]), raw, compression="snappy", use_dictionary=dictionary, write_batch_size=100,
                   data_page_size=1, data_page_version="1.0", write_statistics=False)
    (chunk,) = page_files.chunks(raw.getvalue().to_pybytes())
    valid = table.column(column).is_valid().to_numpy(zero_copy_only=False).astype(np.int64)
    pages = []
    for page, first in zip(chunk.pages, chunk.first_rows):
        if first >= 0:
            header = page.header[5].value
            count = header[1].value
            assert header[3].value == Encoding.RLE
            length = int.from_bytes(page.body[:4], "little")
            header[3] = Node(header[3].type, Encoding.BIT_PACKED)
            page = page_files.Page(page.header, page_files.bit_packed_msb_first(valid[first : first + count], 1) + page.body[4 + length :])
        pages.append(page)
    assert sum(first >= 0 for first in chunk.first_rows) > 5
    path = folder / f"{table.column_names[column]}-{'dict' if dictionary else 'plain'}.parquet"
    path.write_bytes(page_files.single_chunk_file(chunk, pages))
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[pa.Table, Path]]:
    folder = tmp_path_factory.mktemp("bit-packed-levels")
    table = _table()
    return [(table.select([c]), _bit_packed_file(table, c, folder, d)) for c in range(table.num_columns) for d in (False, True)]


def _same(got: pa.Table, want: pa.Table) -> None:
    assert got.num_rows == want.num_rows
    g, w = got.column(0).combine_chunks(), want.column(0).combine_chunks().cast(got.column(0).type)
    assert g.is_null().equals(w.is_null())
    assert g.to_pylist() == w.to_pylist() or (
        pa.types.is_floating(g.type) and np.array_equal(g.to_numpy(zero_copy_only=False), w.to_numpy(zero_copy_only=False), equal_nan=True))


def test_whole_scan_reads_the_levels_in_the_format_order(files: list[tuple[pa.Table, Path]]) -> None:
    for table, path in files:
        _same(lazyscan.scan(str(path)).to_table(), table)


def test_row_selections_and_filters(files: list[tuple[pa.Table, Path]]) -> None:
    rng = np.random.default_rng(3)
    for table, path in files:
        rows = np.sort(rng.choice(ROWS, 37, replace=False))
        _same(ParquetFile(str(path)).read_row_group(0, rows=rows), table.take(pa.array(rows)))
        name = table.column_names[0]
        _same(lazyscan.scan(str(path), where=f"{name} IS NULL").to_table(), table.filter(table.column(0).is_null()))
        _same(lazyscan.scan(str(path), where=f"{name} IS NOT NULL").to_table(), table.filter(table.column(0).is_valid()))


@pytest.mark.spark
def test_spark_reader_reads_the_same_rows(files: list[tuple[pa.Table, Path]]) -> None:
    # Spark's vectorized reader refuses BIT_PACKED levels; parquet-mr's record reader reads them
    spark: Any = get_spark()
    spark.conf.set("spark.sql.parquet.enableVectorizedReader", "false")
    try:
        read = [(table, path, [r[0] for r in spark.read.parquet(str(path)).collect()]) for table, path in files[::3]]
    finally:
        spark.conf.unset("spark.sql.parquet.enableVectorizedReader")
    for table, path, got in read:
        want = table.column(0).to_pylist()
        assert [None if v is None else repr(v) for v in got] == [None if v is None else repr(v) for v in want], path.name
