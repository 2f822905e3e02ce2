"""Damaged pages give a CorruptFileError naming the page on every route (whole reads, the general
selective route and the selected-rows one), where pyarrow refuses them too: levels above the column's
maximum, a PLAIN page too short for its values, a dictionary page holding more entries than its
header counts, dictionary codes out of range in the runs a selective read walks over."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lazyscan
from lazyscan.errors import CorruptFileError
from lazyscan.parquet import ParquetFile, clear_caches
from lazyscan.parquet import kernels as K
from lazyscan.parquet.page_header import parse_page_header
from tests.support.footer import encode
from tests.support.fuzz import _typed_at

ROWS = 1000


def _write(path: Path, table: pa.Table, **kw: object) -> Path:
    pq.write_table(table, path, compression="none", data_page_version="1.0", row_group_size=ROWS, **kw)  # type: ignore[arg-type]
    clear_caches()
    return path


def _page_body(path: Path, column: str, page: int = 0) -> tuple[int, int]:
    """(file offset of the data page's header, of its body)."""
    pf = ParquetFile(path)
    info = pf.page_layout(0, column).pages[page]
    data = np.frombuffer(path.read_bytes(), np.uint8)
    header = parse_page_header(data, info.offset, len(data))
    return info.offset, info.offset + header.header_size


def _patched(path: Path, at: int, value: int) -> Path:
    data = bytearray(path.read_bytes())
    data[at] = value
    out = path.with_name("damaged.parquet")
    out.write_bytes(bytes(data))
    clear_caches()
    return out


def _every_route_refuses(path: Path, column: str, match: str) -> None:
    pf = ParquetFile(path)
    with pytest.raises(CorruptFileError, match=match) as e:
        pf.read_column(0, column)
    assert e.value.location.column == column and e.value.location.page is not None
    for rows in ([0], [0, 1, 2], np.arange(0, ROWS, 4)):  # selected-rows route (first row only), selected-rows route, general
        with pytest.raises(CorruptFileError, match=match):
            pf.read_column(0, column, np.array(rows))
    with pytest.raises(CorruptFileError):
        lazyscan.scan(str(path)).to_table()


def test_definition_level_above_the_maximum_is_not_a_null(tmp_path: Path) -> None:
    """A flat optional column's levels are one RLE run of 1s; its value byte set to 2 (or 255)
    is a level above the maximum: pyarrow refuses it ("Malformed levels"), lazyscan too, on
    every route, the selected-rows one included although the run lies past its selected rows."""
    path = _write(tmp_path / "levels.parquet", pa.table({"x": pa.array(np.arange(ROWS), pa.int64())}), use_dictionary=False)
    _, body = _page_body(path, "x")
    data = path.read_bytes()
    assert data[body + 4 : body + 7] == bytes([0xD0, 0x0F, 1])  # levels: RLE run of 1000 ones
    for bad in (2, 255):
        damaged = _patched(path, body + 6, bad)
        with pytest.raises(Exception, match="Malformed levels"):
            pq.read_table(damaged)
        _every_route_refuses(damaged, "x", "level above the column's maximum")


def test_plain_page_too_short_for_its_values_is_refused_on_every_route(tmp_path: Path) -> None:
    """A page of DELTA_BINARY_PACKED bytes whose header says PLAIN: the selected first values
    lie in the page, but the page cannot hold its 1000 PLAIN values, which every route checks
    before returning any (the selected-rows route used to read the first bytes as values)."""
    table = pa.table({"x": pa.array(np.arange(ROWS) * 3, pa.int64())})
    path = _write(tmp_path / "delta.parquet", table, use_dictionary=False, column_encoding={"x": "DELTA_BINARY_PACKED"})
    start, body = _page_body(path, "x")
    data = path.read_bytes()
    header = _typed_at(data, start)[0]
    assert header[5].value[2].value == 5  # DELTA_BINARY_PACKED
    header[5].value[2].value = 0  # PLAIN
    raw = encode(header)
    assert len(raw) == body - start
    damaged = tmp_path / "plain.parquet"
    damaged.write_bytes(data[:start] + raw + data[body:])
    clear_caches()
    with pytest.raises(Exception):  # noqa: B017 - pyarrow's refusal, whatever it raises
        pq.read_table(damaged)
    _every_route_refuses(damaged, "x", "PLAIN values need|the encoded data ends")


def test_dictionary_page_with_more_entries_than_counted_is_refused_before_pruning(tmp_path: Path) -> None:
    """A dictionary page whose num_values is half its entries: its codes beyond that count made
    dictionary pruning drop the row group where a read refuses it; the page must hold exactly
    its entries, so pruning and reads refuse it alike."""
    values = [f"v{i:03d}" for i in range(40)]
    table = pa.table({"s": pa.array([values[i % 40] for i in range(ROWS)])})
    path = _write(tmp_path / "dict.parquet", table, use_dictionary=True)
    pf = ParquetFile(path)
    off, _ = pf.page_layout(0, "s").dictionary  # type: ignore[misc]
    data = path.read_bytes()
    header = _typed_at(data, off)[0]
    assert header[7].value[1].value == 40
    header[7].value[1].value = 20
    size = len(encode(_typed_at(data, off)[0]))
    raw = encode(header)
    assert len(raw) == size
    damaged = tmp_path / "short-dict.parquet"
    damaged.write_bytes(data[:off] + raw + data[off + size :])
    clear_caches()
    with pytest.raises(Exception):  # noqa: B017
        pq.read_table(damaged)
    with pytest.raises(CorruptFileError, match="dictionary page of 20 entries holds"):
        ParquetFile(damaged).read_dictionary(0, "s")
    for where in ("s = 'v030'", "s IN ('v031', 'v032')", "s = 'v001'"):
        with pytest.raises(CorruptFileError):
            lazyscan.scan(str(damaged), where=where).to_table()


def test_selected_codes_check_the_rle_runs_walked_over() -> None:
    """A selective decode of dictionary codes checks the value of every RLE run it walks over
    on its way to the selected values (its value is at hand), as a whole decode would."""
    # RLE run of 3 values of code 7, then a bit-packed group of eight codes 0..7 (width 3)
    stream = np.frombuffer(bytes([3 << 1, 7, (1 << 1) | 1, 0x88, 0xC6, 0xFA]), np.uint8)
    out = np.zeros(2, np.int32)
    assert K.rle_bp_decode_codes_selected(stream, 0, len(stream), 3, 11, np.array([3, 4]), out, 8) == 2
    assert out.tolist() == [0, 1]
    assert K.rle_bp_decode_codes_selected(stream, 0, len(stream), 3, 11, np.array([3, 4]), out, 5) == K.ERR_BAD_INDEX
    assert K.rle_bp_decode_codes_selected(stream, 0, len(stream), 3, 11, np.array([3, 4]), out, 1 << 32) == 2
    # the selected codes themselves (the RLE run now of code 2)
    stream = np.frombuffer(bytes([3 << 1, 2, (1 << 1) | 1, 0x88, 0xC6, 0xFA]), np.uint8)
    assert K.rle_bp_decode_codes_selected(stream, 0, len(stream), 3, 11, np.array([9]), out, 7) == 1 and out[0] == 6
    assert K.rle_bp_decode_codes_selected(stream, 0, len(stream), 3, 11, np.array([10]), out, 7) == K.ERR_BAD_INDEX


def _v2_with_levels_length(tmp_path: Path, table: pa.Table, column: str, delta: int, **kw: object) -> Path:
    """``table`` written with v2 pages, uncompressed, the first page of ``column`` declaring
    ``delta`` more bytes of definition levels than it has (its sizes unchanged)."""
    path = tmp_path / "v2.parquet"
    pq.write_table(table, path, compression="none", data_page_version="2.0", row_group_size=ROWS, **kw)  # type: ignore[arg-type]
    clear_caches()
    start, body = _page_body(path, column)
    data = path.read_bytes()
    header = _typed_at(data, start)[0]
    v2 = header[8].value  # data_page_header_v2
    v2[5].value += delta  # definition_levels_byte_length
    raw = encode(header)
    assert len(raw) == body - start
    damaged = tmp_path / "v2-levels.parquet"
    damaged.write_bytes(data[:start] + raw + data[body:])
    clear_caches()
    return damaged


@pytest.mark.parametrize("dictionary", [True, False])
def test_v2_levels_must_take_their_declared_length(tmp_path: Path, dictionary: bool) -> None:
    """A v2 page whose definition levels are declared longer than they are: the bytes left over
    would be taken for the first values (a selective read returned another dictionary entry).
    The levels must end exactly at their declared length, on every route."""
    values = [None if i % 7 == 3 else f"v{i % 50:02d}" for i in range(ROWS)]
    table = pa.table({"s": pa.array(values)})
    damaged = _v2_with_levels_length(tmp_path, table, "s", 3, use_dictionary=dictionary)
    _every_route_refuses(damaged, "s", "definition levels take")


def test_v2_levels_of_a_required_column_are_refused(tmp_path: Path) -> None:
    """A required column has no definition levels: a v2 page declaring bytes of them that are
    not runs of zeros (some writers write such a run header: parquet-testing's
    rle_boolean_encoding.parquet) would start its values late."""
    table = pa.table({"x": pa.array(np.arange(ROWS), pa.int64())})
    schema = pa.schema([pa.field("x", pa.int64(), nullable=False)])
    damaged = _v2_with_levels_length(tmp_path, table.cast(schema), "x", 8, use_dictionary=False)
    _every_route_refuses(damaged, "x", "8 bytes of definition levels of a column without")


def test_hybrid_stream_end() -> None:
    """Where a hybrid stream ends: after its last run, a bit-packed run with at most the padding
    of its last group."""
    # RLE run of 3 ones, then a bit-packed run of 2 groups (width 1)
    stream = np.frombuffer(bytes([3 << 1, 1, (2 << 1) | 1, 0xFF, 0x01]), np.uint8)
    for count in (12, 19):
        assert K.rle_bp_stream_end(stream, 0, len(stream), 1, count) == len(stream)
    assert K.rle_bp_stream_end(stream, 0, len(stream), 1, 3) == 2  # the RLE run alone
    assert K.rle_bp_stream_end(stream, 0, len(stream), 1, 11) == K.ERR_BAD_LENGTH  # a group of padding only
    assert K.rle_bp_stream_end(stream, 0, len(stream) - 1, 1, 19) == K.ERR_TRUNCATED


def test_file_cut_inside_v2_levels_with_its_footer_kept(tmp_path: Path) -> None:
    """A file cut inside the definition levels of a v2 page, its footer written after the cut:
    the levels' tail is footer bytes, which read as 0/1 levels (a selective read of rows past
    the cut returned an extra null where the whole read refused the values). Levels that no
    longer end at their declared length, or hold other than the page header's ``num_nulls``
    nulls, are refused on every route; any read that succeeds gives the original rows."""
    values = [None if i % 9 == 4 else f"v{i % 40:02d}" for i in range(2 * ROWS)]
    table = pa.table({"k": pa.array(np.arange(2 * ROWS)), "s": pa.array(values)})
    path = tmp_path / "cut.parquet"
    pq.write_table(table, path, compression="none", data_page_version="2.0", row_group_size=ROWS,
                   data_page_size=512)
    clear_caches()
    pf = ParquetFile(path)
    data = path.read_bytes()
    info = pf.page_layout(0, "s").pages[-1]
    header = parse_page_header(np.frombuffer(data, np.uint8), info.offset, len(data))
    levels = header.data_page_header_v2.definition_levels_byte_length  # type: ignore[union-attr]
    assert levels > 8
    footer_length = int.from_bytes(data[-8:-4], "little")
    first = info.first_row
    expected = table.column("s").to_pylist()[:ROWS]
    refused = 0
    for cut in range(info.offset + header.header_size + 1, info.offset + header.header_size + levels):
        damaged = tmp_path / f"damaged-{cut}.parquet"
        damaged.write_bytes(data[:cut] + data[-8 - footer_length :])
        clear_caches()
        dpf = ParquetFile(damaged)
        for rows in (None, np.arange(first, ROWS), np.arange(first, ROWS, 3), np.array([ROWS - 1])):
            try:
                got = dpf.read_column(0, "s", rows).to_pylist()
            except CorruptFileError:
                refused += 1
                continue
            want = expected if rows is None else [expected[r] for r in rows]
            assert got == want, (cut, rows)
    assert refused
