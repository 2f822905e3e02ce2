"""The selected-rows route (lazyscan.parquet.selected_rows): the shapes it takes, results equal to
pyarrow's, and its hand-over to the general route on anything else, corrupt pages included."""

from __future__ import annotations

import decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lazyscan.errors import CorruptFileError
from lazyscan.format import snappy
from lazyscan.parquet import ParquetFile, ReadCounters, page_table, selected_rows, selected_values
from lazyscan.parquet import kernels as K
from lazyscan.parquet.metadata import Codec
from lazyscan.parquet.selected_pages import SelectedPages
from tests.support.compare import assert_same_array

N = 5000


def _table(null_frac: float, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)

    def mask() -> np.ndarray | None:
        return rng.random(N) < null_frac if null_frac else None

    words = np.array(["", "a", "pinto beans", "é日本語", "x" * 60, "carefully regular"])
    return pa.table(
        {
            "i32": pa.array(rng.integers(-(2**31), 2**31 - 1, N, dtype=np.int32), mask=mask()),
            "i64": pa.array(rng.integers(-(2**62), 2**62, N), mask=mask()),
            "few": pa.array(rng.integers(0, 9, N).astype(np.int64), mask=mask()),
            "f32": pa.array(rng.normal(size=N).astype(np.float32), mask=mask()),
            "f64": pa.array(np.where(rng.random(N) < 0.05, np.nan, rng.normal(size=N)), mask=mask()),
            "date": pa.array(rng.integers(0, 20000, N).astype(np.int32), type=pa.int32(), mask=mask()).cast(pa.date32()),
            "ts": pa.array(rng.integers(0, 2**50, N), type=pa.int64(), mask=mask()).cast(pa.timestamp("us")),
            "dec9": pa.array([decimal.Decimal(int(v)).scaleb(-2) for v in rng.integers(-(10**8), 10**8, N)], type=pa.decimal128(9, 2), mask=mask()),
            "dec18": pa.array([decimal.Decimal(int(v)).scaleb(-3) for v in rng.integers(-(10**17), 10**17, N)], type=pa.decimal128(18, 3), mask=mask()),
            "s": pa.array([f"{words[i]}{j}" for i, j in zip(rng.integers(0, len(words), N), rng.integers(0, 40, N))], mask=mask()),
            "b": pa.array([bytes(rng.integers(0, 256, int(k), dtype=np.uint8)) for k in rng.integers(0, 12, N)], mask=mask()),
        }
    )


ROUTE_COLUMNS = ["i32", "i64", "few", "f32", "f64", "date", "ts", "dec9", "dec18", "s", "b"]


def _write(path: Path, table: pa.Table, **kw: Any) -> Path:
    pq.write_table(
        table, path, data_page_size=2048, row_group_size=N // 2, write_page_index=True, store_decimal_as_integer=True, **kw
    )
    return path


def _selections(n: int, rng: np.random.Generator) -> list[np.ndarray]:
    return [
        np.array([0]),
        np.array([n - 1]),
        np.sort(rng.choice(n, 7, replace=False)),
        np.sort(rng.choice(n, n // 10, replace=False)),
        np.arange(n // 3, n // 3 + 200),
        np.arange(0, n - 1),
    ]


@pytest.fixture
def no_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail when the selected-rows route hands a chunk over, or a column skips it."""
    original = selected_rows.read_group

    def read_group(*args: Any, **kwargs: Any) -> list[pa.Array | None]:
        arrays = original(*args, **kwargs)
        assert all(a is not None for a in arrays), "the selected-rows route handed a chunk to the general route"
        return arrays

    def general(*_: Any, **__: Any) -> None:
        raise AssertionError("the general route read a chunk the selected-rows route should read")

    monkeypatch.setattr(selected_rows, "read_group", read_group)
    monkeypatch.setattr(selected_rows, "MAX_DENSITY", 1.0)
    monkeypatch.setattr(SelectedPages, "decode", general)


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("page_version", ["1.0", "2.0"])
@pytest.mark.parametrize("dictionary", [True, False])
@pytest.mark.parametrize("null_frac", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("compression", ["snappy", "zstd", "none"])
def test_selected_rows_read_equals_pyarrow(
    tmp_path: Path, no_general_path: None, version: str, page_version: str, dictionary: bool, null_frac: float, compression: str
) -> None:
    table = _table(null_frac)
    path = _write(
        tmp_path / "f.parquet", table, version="2.6" if version == "2.0" else "1.0",
        data_page_version=page_version, use_dictionary=dictionary, compression=compression,
    )
    pf = ParquetFile(path)
    ref = pq.ParquetFile(path)
    rng = np.random.default_rng(1)
    for rg in range(pf.num_row_groups):
        n = pf.metadata.row_groups[rg].num_rows
        whole = ref.read_row_group(rg, columns=ROUTE_COLUMNS)
        for rows in _selections(n, rng):
            got = pf.read_columns(rg, ROUTE_COLUMNS, rows)
            for name, arr in zip(ROUTE_COLUMNS, got):
                expected = whole.column(name).combine_chunks().take(pa.array(rows))
                if expected.type != arr.type:
                    expected = expected.cast(arr.type)
                assert_same_array(arr, expected)
                # one column from indices: planned from them in the kernel
                assert_same_array(pf.read_column(rg, name, rows), expected)


def test_one_column_read_checks_its_row_indices(tmp_path: Path, no_general_path: None) -> None:
    """A one-column read from row indices checks them in its planning kernel, as the general
    path does, and takes them in any integer array or sequence without touching the caller's."""
    table = _table(0.3)
    path = _write(tmp_path / "i.parquet", table, use_dictionary=["i64", "s"], compression="snappy")
    pf = ParquetFile(path)
    n = pf.metadata.row_groups[0].num_rows
    whole = pq.ParquetFile(path).read_row_group(0)
    for name in ["i64", "s", "f64"]:
        for bad in ([5, 3], [3, 3], [-1, 3]):
            with pytest.raises(ValueError, match="sorted, distinct and non-negative"):
                pf.read_column(0, name, np.array(bad))
        with pytest.raises(IndexError, match=f"exceeds the row group's {n} rows"):
            pf.read_column(0, name, [0, n])
        with pytest.raises(ValueError, match="1-D"):
            pf.read_column(0, name, np.zeros((2, 2), np.int64))
        mine = np.arange(1, 400, 7)
        frozen = mine.copy()
        frozen.flags.writeable = False
        for rows in (mine, [1, 8, 15], mine.astype(np.int32), np.arange(0, 900)[::9], frozen):
            expected = whole.column(name).combine_chunks().take(pa.array(np.asarray(rows)))
            assert_same_array(pf.read_column(0, name, rows), expected)
        assert mine.flags.writeable, "the caller's array was frozen"


def test_dense_selections_take_the_general_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path / "f.parquet", _table(0.0))
    pf = ParquetFile(path)
    n = pf.metadata.row_groups[0].num_rows
    dense = np.arange(0, n, 2)
    calls: list[int] = []
    original = selected_rows.read_group

    def counting(*args: Any, **kwargs: Any) -> list[pa.Array | None]:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(selected_rows, "read_group", counting)
    got = pf.read_column(0, "i64", dense)
    assert not calls
    pf.read_column(0, "i64", np.array([7]))
    assert calls
    assert got.to_pylist() == pq.read_table(path).column("i64").combine_chunks().take(pa.array(dense)).to_pylist()


def test_both_selection_routes_count_the_same_pages(tmp_path: Path) -> None:
    path = _write(tmp_path / "f.parquet", _table(0.2))
    pf = ParquetFile(path)
    rows = np.array([3, 900, 2000])
    for name in ROUTE_COLUMNS:
        ours, general = ReadCounters(), ReadCounters()
        fast = pf.read_column(0, name, rows, counters=ours)
        slow = pf.to_arrow(0, pf.column(name), pf.read_assembled(0, name, rows, counters=general), general)
        assert_same_array(fast, slow)
        assert (ours.pages_fetched, ours.pages_skipped, ours.bytes_fetched) == (
            general.pages_fetched, general.pages_skipped, general.bytes_fetched,
        ), name


@pytest.mark.parametrize(
    "column, array",
    [
        ("bool", pa.array([True, False, None] * 1000)),
        ("int8", pa.array(np.arange(3000) % 100, type=pa.int8())),
        ("fixed", pa.array([bytes([i % 256] * 4) for i in range(3000)], type=pa.binary(4))),
        ("dec38", pa.array([decimal.Decimal(i) for i in range(3000)], type=pa.decimal128(38, 0))),
    ],
)
def test_shapes_outside_the_selected_rows_route_read_through_the_general_route(tmp_path: Path, column: str, array: pa.Array) -> None:
    path = tmp_path / "g.parquet"
    pq.write_table(pa.table({column: array}), path, data_page_size=1024)
    pf = ParquetFile(path)
    assert selected_rows.shape_of(pf.column(column)) is None
    rows = np.array([1, 1500, 2999])
    assert_same_array(pf.read_columns(0, [column], rows)[0], pq.read_table(path).column(column).combine_chunks().take(pa.array(rows)))


@pytest.mark.parametrize("encoding", ["DELTA_BINARY_PACKED", "BYTE_STREAM_SPLIT"])
def test_other_encodings_hand_the_chunk_to_the_general_path(tmp_path: Path, encoding: str) -> None:
    values = np.arange(4000, dtype=np.int64) * 7 - 3
    path = tmp_path / "e.parquet"
    pq.write_table(pa.table({"v": values}), path, use_dictionary=False, column_encoding={"v": encoding}, data_page_size=1024)
    pf = ParquetFile(path)
    assert selected_rows.shape_of(pf.column("v")) is not None
    rows = np.array([0, 1234, 3999])
    assert pf.read_columns(0, ["v"], rows)[0].to_pylist() == values[rows].tolist()


def test_one_read_mixes_selected_rows_columns_and_columns_the_general_route_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = _table(0.2).append_column("delta", pa.array(np.arange(N, dtype=np.int64) * 3 - 7))
    table = table.append_column("flag", pa.array([i % 3 == 0 for i in range(N)]))
    path = _write(tmp_path / "m.parquet", table, column_encoding={"delta": "DELTA_BINARY_PACKED"}, use_dictionary=ROUTE_COLUMNS)
    pf = ParquetFile(path)
    names = ["delta", *ROUTE_COLUMNS[:5], "flag", *ROUTE_COLUMNS[5:]]
    ref = pq.read_table(path)
    rows = np.array([2, 17, 1500, N // 2 - 1])
    groups: list[list[pa.Array | None]] = []
    original = selected_rows.read_group

    def recording(*args: Any, **kwargs: Any) -> list[pa.Array | None]:
        groups.append(original(*args, **kwargs))
        return groups[-1]

    monkeypatch.setattr(selected_rows, "read_group", recording)
    got = pf.read_columns(0, names, rows)
    # "delta" is a shape of this route in an encoding it hands over; "flag" is not a shape of it
    assert len(groups) == 1 and len(groups[0]) == len(names) - 1
    assert sum(a is None for a in groups[0]) == 1
    for name, arr in zip(names, got):
        assert_same_array(arr, ref.column(name).combine_chunks().take(pa.array(rows)))


def test_corrupt_member_of_a_multi_column_read_names_its_column(tmp_path: Path) -> None:
    table = pa.table({"a": np.arange(6000) % 50, "k": np.arange(6000) % 40, "z": np.arange(6000) % 30})
    path = tmp_path / "three.parquet"
    pq.write_table(table, path, data_page_size=1024, write_page_index=True)
    pf = ParquetFile(path)
    page = pf.page_layout(0, "k").pages[2]
    bad = _garbage_page_body(path, page, tmp_path / "bad3.parquet")
    rows = np.array([page.first_row + 1])
    with pytest.raises(CorruptFileError) as err:
        ParquetFile(bad).read_columns(0, ["a", "k", "z"], rows)
    assert "'k'" in str(err.value) and "row group 0" in str(err.value)
    # the other columns of the row group still read
    assert ParquetFile(bad).read_columns(0, ["a", "z"], rows)[1].to_pylist() == [int(rows[0]) % 30]


def test_plan_rejects_a_page_beyond_the_end_of_the_file(tmp_path: Path) -> None:
    _, pf = _dictionary_file(tmp_path)
    g = pf._reader.sparse.group(0, [pf.column("k")])
    assert g is not None
    last = pf.page_layout(0, "k").pages[-1]
    idx = np.array([last.first_row], np.int64)
    ok = np.zeros(1, np.int64)
    whole = selected_rows.plan(g, idx, idx + 1, idx, ok, pf.source.size)
    assert whole.ranges()[-1] == [last.offset, last.size]
    with pytest.raises(selected_rows.PlanError) as err:
        selected_rows.plan(g, idx, idx + 1, idx, ok, last.offset + last.size - 1)
    assert err.value.reason == selected_rows.PLAN_OUTSIDE_FILE and err.value.member == 0
    # the kernels index the status by member without bounds checks: a wrong shape is refused
    with pytest.raises(ValueError, match="1 members"):
        selected_rows.plan(g, idx, idx + 1, idx, np.zeros(3, np.int64), pf.source.size)


def _garbage_page_body(path: Path, page: Any, bad: Path) -> Path:
    """A copy of ``path`` at ``bad`` with garbage over the body of ``page`` (its header, the
    first 20 bytes, stays intact)."""
    data = bytearray(path.read_bytes())
    data[page.offset + 20 : page.offset + page.size] = b"\xff" * (page.size - 20)
    bad.write_bytes(bytes(data))
    return bad


def _dictionary_file(tmp_path: Path) -> tuple[Path, ParquetFile]:
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"k": np.arange(6000) % 50}), path, data_page_size=1024, write_page_index=True)
    return path, ParquetFile(path)


def test_one_column_read_fails_as_the_several_columns_read(tmp_path: Path) -> None:
    """``read_column`` takes a shorter way through the selected-rows route than ``read_columns``; a
    corrupt page fails the same way on both."""
    path, pf = _dictionary_file(tmp_path)
    page = pf.page_layout(0, "k").pages[2]
    bad = _garbage_page_body(path, page, tmp_path / "bad.parquet")
    rows = np.array([page.first_row + 1])
    messages = []
    for read in (lambda f: f.read_column(0, "k", rows), lambda f: f.read_columns(0, ["k"], rows)[0]):
        with pytest.raises(CorruptFileError) as err:
            read(ParquetFile(bad))
        messages.append(str(err.value))
    assert messages[0] == messages[1] and "row group 0" in messages[0] and "'k'" in messages[0]
    # a healthy page of the same file still reads on both ways
    good = np.array([pf.page_layout(0, "k").pages[0].first_row + 3])
    expected = pq.read_table(path).column("k").combine_chunks().take(pa.array(good))
    assert_same_array(ParquetFile(bad).read_column(0, "k", good), expected)


def test_corrupt_page_fails_with_the_general_paths_located_error(tmp_path: Path) -> None:
    path, pf = _dictionary_file(tmp_path)
    layout = pf.page_layout(0, "k")
    page = layout.pages[2]
    bad = _garbage_page_body(path, page, tmp_path / "bad.parquet")
    rows = np.array([page.first_row + 1])
    with pytest.raises(CorruptFileError) as err:
        ParquetFile(bad).read_columns(0, ["k"], rows)
    message = str(err.value)
    assert "row group 0" in message and "'k'" in message and "page" in message


def test_prepare_rejects_a_truncated_header() -> None:
    plan_rows = np.array([[0, 3, 0, 10, 0, 1]], np.int64)
    buf = np.array([0x15, 0x00, 0x15], np.uint8)  # a PageHeader cut after two fields
    pages = np.empty((1, page_table.PAGE_FIELDS), np.int64)
    jobs = np.empty((2, page_table.JOB_FIELDS), np.int64)
    info = np.empty(page_table.INFO_FIELDS, np.int64)
    no_lazy = np.empty((0, snappy.STATE_FIELDS), np.int64)
    assert selected_rows.prepare_chunk(buf, np.array([0]), plan_rows, 1, False, 0, 8, 0, pages, jobs, info, no_lazy, 1 << 20) == -1


#: gather_fixed's arguments for bodies decompressed whole: no compressed buffer, no streams
_NOT_LAZY = (np.empty(0, np.uint8), np.empty((0, snappy.STATE_FIELDS), np.int64), -1)


def test_gather_widens_negative_integers_to_decimal128() -> None:
    values = np.array([-1, 5, -(2**40)], np.int64)
    dec = values.view(np.uint8).copy()
    pages = np.zeros((1, page_table.PAGE_FIELDS), np.int64)
    pages[0, [page_table.KIND, page_table.BODY, page_table.BODY_END, page_table.NUM, page_table.ENC, page_table.FIRST, page_table.LO, page_table.HI, page_table.LAZY]] = [1, 0, 24, 3, 0, 0, 0, 3, -1]
    out = np.empty(6, np.uint64)
    valid = np.empty(3, np.uint8)
    idx = np.arange(3, dtype=np.int64)
    assert selected_values.gather_fixed(dec, pages, idx, 0, 0, -1, 8, selected_values.TO_DECIMAL128, out, valid, *_NOT_LAZY) == 0
    words = out.view(np.int64).reshape(3, 2)
    assert words[:, 0].tolist() == values.tolist()
    assert words[:, 1].tolist() == [-1, 0, -1]


def test_gather_rejects_a_code_outside_the_dictionary() -> None:
    # one bit-packed group of eight 4-bit codes, all 15, against a dictionary of 3 values
    body = np.array([4, 0x03, 0xFF, 0xFF, 0xFF, 0xFF], np.uint8)
    dictionary = np.arange(3, dtype=np.int64).view(np.uint8)
    dec = np.concatenate([dictionary, body])
    pages = np.zeros((1, page_table.PAGE_FIELDS), np.int64)
    pages[0, [page_table.KIND, page_table.BODY, page_table.BODY_END, page_table.NUM, page_table.ENC, page_table.FIRST, page_table.LO, page_table.HI, page_table.LAZY]] = [1, 24, 30, 8, 8, 0, 0, 1, -1]
    out = np.empty(1, np.uint64)
    valid = np.empty(1, np.uint8)
    assert selected_values.gather_fixed(dec, pages, np.array([2], np.int64), 0, 0, 3, 8, selected_values.COPY, out, valid, *_NOT_LAZY) == K.ERR_BAD_INDEX


def _clustered_file(tmp_path: Path, rows: int = 40_000, page_version: str = "1.0", nulls: str = "none") -> Path:
    """Snappy, one data page per chunk, large dictionaries whose entries follow the rows (as a
    clustered key column's do), and a plain column of strings. ``nulls``: none, random (20 %),
    or every third row (levels that snappy compresses into many small elements, so that a
    prefix of them is decompressed as the levels are read)."""
    rng = np.random.default_rng(5)

    def mask() -> np.ndarray | None:
        if nulls == "random":
            return rng.random(rows) < 0.2
        return np.arange(rows) % 3 == 1 if nulls == "every third" else None

    table = pa.table(
        {
            "key": pa.array(np.arange(rows, dtype=np.int64) // 2 * 1_000_003, mask=mask()),
            "val": pa.array(rng.normal(size=rows), mask=mask()),
            "txt": pa.array([f"comment {i} {'x' * int(k)}" for i, k in enumerate(rng.integers(0, 30, rows))], mask=mask()),
            "code": pa.array([f"entry-{i // 3:08d}" for i in range(rows)], mask=mask()),
        }
    )
    path = tmp_path / "c.parquet"
    pq.write_table(
        table, path, compression="snappy", data_page_size=1 << 30, row_group_size=rows, write_page_index=True,
        use_dictionary=["key", "code"], data_page_version=page_version,
    )
    return path


def _read(path: Path, rows: np.ndarray, partial: bool, columns: list[str]) -> tuple[list[pa.Array], ReadCounters]:
    from lazyscan.format.options import ReaderOptions

    pf = ParquetFile(path, options=ReaderOptions(partial_decompression=partial))
    c = ReadCounters()
    return pf.read_columns(0, columns, rows, counters=c), c


PARTIAL_COLUMNS = ["key", "val", "txt", "code"]


@pytest.fixture
def dirty_scratch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fresh buffers of bodies full of garbage: a kernel reading bytes not decompressed yet
    must not find them left there, correct, by an earlier read of the same page."""

    def scratch(size: int) -> np.ndarray:
        return np.full(size, 0xA5, np.uint8)

    monkeypatch.setattr(page_table, "scratch", scratch)


@pytest.mark.parametrize(
    "rows",
    [np.array([3]), np.array([0, 1, 2]), np.arange(1000, 1400), np.array([39_999]), np.array([5, 39_000]), np.array([20_000])],
)
@pytest.mark.parametrize("nulls", ["none", "random", "every third"])
@pytest.mark.parametrize("page_version", ["1.0", "2.0"])
def test_partial_decompression_reads_the_same_rows(
    tmp_path: Path, no_general_path: None, dirty_scratch: None, rows: np.ndarray, page_version: str, nulls: str
) -> None:
    path = _clustered_file(tmp_path, page_version=page_version, nulls=nulls)
    whole = pq.read_table(path)
    got, _ = _read(path, rows, True, PARTIAL_COLUMNS)
    plain, _ = _read(path, rows, False, PARTIAL_COLUMNS)
    for name, a, b in zip(PARTIAL_COLUMNS, got, plain):
        expected = whole.column(name).combine_chunks().take(pa.array(rows))
        assert_same_array(a, expected)
        assert_same_array(b, expected)


@pytest.mark.parametrize("partial", [True, False])
def test_pages_past_a_dictionarys_limit_mix_codes_and_plain_values(
    tmp_path: Path, no_general_path: None, dirty_scratch: None, partial: bool
) -> None:
    """A chunk whose dictionary filled up: its first pages hold codes, the rest PLAIN values.
    Selections within one page, across pages of both kinds and sparse over all read the same
    rows as pyarrow, the lazily decompressed dictionary's codes found once for every page."""
    rng = np.random.default_rng(11)
    rows = 30_000
    mask = rng.random(rows) < 0.1
    table = pa.table(
        {
            "num": pa.array(rng.integers(0, 1 << 40, rows), mask=mask),
            "txt": pa.array([f"value-{v:012d}" for v in rng.integers(0, 1 << 40, rows)], mask=mask),
        }
    )
    path = tmp_path / "fallback.parquet"
    pq.write_table(
        table, path, compression="snappy", data_page_size=8 * 1024, dictionary_pagesize_limit=32 * 1024,
        row_group_size=rows,
    )
    encodings = pq.ParquetFile(path).metadata.row_group(0).column(0).encodings
    assert "PLAIN" in encodings and "RLE_DICTIONARY" in encodings, encodings
    selections = [
        np.array([7]),
        np.arange(100, 1_400),
        np.arange(2_500, 9_000),
        np.sort(rng.choice(rows, 300, replace=False)),
        np.array([0, rows - 1]),
    ]
    for sel in selections:
        got, _ = _read(path, sel, partial, ["num", "txt"])
        for name, arr in zip(["num", "txt"], got):
            assert_same_array(arr, table.column(name).combine_chunks().take(pa.array(sel)))


def test_partial_decompression_stops_after_the_last_selected_value(tmp_path: Path) -> None:
    path = _clustered_file(tmp_path)
    early = np.array([100])
    _, partial = _read(path, early, True, PARTIAL_COLUMNS)
    _, whole = _read(path, early, False, PARTIAL_COLUMNS)
    # every page of the four chunks is needed, but only its first few percent
    assert partial.bytes_decompressed < whole.bytes_decompressed * 0.1
    late = np.array([39_990])
    _, partial_late = _read(path, late, True, PARTIAL_COLUMNS)
    _, whole_late = _read(path, late, False, PARTIAL_COLUMNS)
    # near the end: nearly all of every page, never more than the whole pages
    assert whole_late.bytes_decompressed * 0.9 < partial_late.bytes_decompressed <= whole_late.bytes_decompressed


def _corrupt_dictionary(path: Path, tmp_path: Path, where: str) -> Path:
    pf = ParquetFile(path)
    off, size = pf.page_layout(0, "key").dictionary  # type: ignore[misc]
    header = pf._layouts.read_page_header(off, off + size, {}, 0)
    body = off + header.header_size
    data = bytearray(path.read_bytes())
    span = slice(body + 1, body + 64) if where == "start" else slice(off + size - 64, off + size)
    data[span] = b"\xff" * (span.stop - span.start)
    bad = tmp_path / f"bad-{where}.parquet"
    bad.write_bytes(bytes(data))
    return bad


def test_corruption_in_the_bytes_a_read_needs_is_reported(tmp_path: Path) -> None:
    bad = _corrupt_dictionary(_clustered_file(tmp_path), tmp_path, "start")
    for partial in (True, False):
        with pytest.raises(CorruptFileError) as err:
            _read(bad, np.array([4]), partial, ["key"])
        assert "'key'" in str(err.value) and "row group 0" in str(err.value)


def test_corruption_past_the_bytes_a_read_needs_is_not_read(tmp_path: Path) -> None:
    """As with pages holding no selected row: bytes a selective read never needs are not
    decompressed, so their corruption goes unseen; a read that needs them reports it."""
    path = _clustered_file(tmp_path)
    bad = _corrupt_dictionary(path, tmp_path, "end")
    got, _ = _read(bad, np.array([4]), True, ["key"])
    assert got[0].to_pylist() == pq.read_table(path, columns=["key"]).column(0).to_pylist()[4:5]
    with pytest.raises(CorruptFileError):
        _read(bad, np.array([4]), False, ["key"])
    with pytest.raises(CorruptFileError):
        _read(bad, np.array([39_999]), True, ["key"])


def test_string_dictionary_entries_are_walked_only_as_far_as_the_codes_read(tmp_path: Path) -> None:
    """A string dictionary's entries are found by walking their length prefixes in code order,
    once, up to the largest code looked up: a corrupt entry past it goes unseen, one before it
    is reported; the values equal pyarrow's whatever the order of the codes and repeats."""
    values = [f"entry-{i:05d}" for i in range(2_000)]
    rng = np.random.default_rng(3)
    column = [values[i] for i in rng.integers(0, len(values), 20_000)]
    path = tmp_path / "s.parquet"
    pq.write_table(pa.table({"s": column}), path, compression="none", use_dictionary=True, row_group_size=20_000)
    pf = ParquetFile(path)
    codes = {v: i for i, v in enumerate(dict.fromkeys(column))}  # dictionary order: first appearance
    rows = np.array([5, 6, 700, 701, 5_000, 19_999])
    got = pf.read_column(0, "s", rows)
    assert got.to_pylist() == [column[r] for r in rows]

    # a length prefix past the end of the dictionary at entry `bad`
    off, size = pf.page_layout(0, "s").dictionary  # type: ignore[misc]
    header = pf._layouts.read_page_header(off, off + size, {}, 0)
    data = bytearray(path.read_bytes())
    at = off + header.header_size
    bad = 1_000
    for _ in range(bad):
        at += 4 + int.from_bytes(data[at : at + 4], "little")
    data[at : at + 4] = (1 << 30).to_bytes(4, "little")
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(bytes(data))
    bpf = ParquetFile(broken)
    early = np.array([r for r in range(20_000) if codes[column[r]] < bad][:50])
    assert bpf.read_column(0, "s", early).to_pylist() == [column[r] for r in early]
    late = np.array([next(r for r in range(20_000) if codes[column[r]] > bad)])
    with pytest.raises(CorruptFileError):
        bpf.read_column(0, "s", late)


@pytest.fixture
def decode_passes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that gets one entry per call of the selected-rows route's decode kernel."""
    calls: list[int] = []
    original = selected_values.decode_group

    def counting(*args: Any) -> Any:
        calls.append(1)
        return original(*args)

    monkeypatch.setattr(selected_values, "decode_group", counting)
    return calls


@pytest.fixture
def job_codecs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that gets the codec of every decompression job the selected-rows route runs."""
    calls: list[int] = []
    original = page_table.run_jobs

    def counting(buf: np.ndarray, dec: np.ndarray, jobs: np.ndarray, nj: int, *rest: Any) -> Any:
        calls.extend(jobs[:nj, page_table.J_CODEC].tolist())
        return original(buf, dec, jobs, nj, *rest)

    monkeypatch.setattr(page_table, "run_jobs", counting)
    return calls


@pytest.mark.parametrize("rows", [np.arange(0, 40_000, 997), np.array([10, 39_000]), np.arange(30_000, 30_500), np.array([39_999])])
def test_a_selective_read_decompresses_snappy_pages_in_one_pass_as_far_as_it_reads(
    tmp_path: Path, decode_passes: list[int], job_codecs: list[int], rows: np.ndarray
) -> None:
    """Dictionaries looked up from all over and pages read to their end included: one decode
    pass, no page decompressed whole ahead of it, never more bytes than the whole pages."""
    path = _clustered_file(tmp_path)
    whole = pq.read_table(path, columns=PARTIAL_COLUMNS)
    got, partial = _read(path, rows, True, PARTIAL_COLUMNS)
    assert len(decode_passes) == 1
    assert not [codec for codec in job_codecs if codec != 0]
    for name, arr in zip(PARTIAL_COLUMNS, got):
        assert_same_array(arr, whole.column(name).combine_chunks().take(pa.array(rows)))
    decode_passes.clear()
    _, full = _read(path, rows, False, PARTIAL_COLUMNS)
    assert len(decode_passes) == 1 and job_codecs.count(int(Codec.SNAPPY)) > 0
    assert partial.bytes_decompressed <= full.bytes_decompressed


def test_a_random_column_reads_a_dictionary_prefix_while_its_selection_is_early(tmp_path: Path) -> None:
    """Few distinct values in random order: an early selection looks up few entries, and its
    dictionary is decompressed only that far."""
    rows = 60_000
    rng = np.random.default_rng(11)
    table = pa.table({"few": pa.array(rng.integers(0, 6_000, rows) * 7_919, pa.int64())})  # a 48 KB dictionary
    path = tmp_path / "few.parquet"
    pq.write_table(table, path, compression="snappy", data_page_size=1 << 30, row_group_size=rows, use_dictionary=True)
    pf = ParquetFile(path)
    decompressed = {}
    for name, idx in (("early", np.arange(100, 200)), ("middle", np.arange(30_000, 30_500)), ("one", np.array([45_000]))):
        c = ReadCounters()
        got = pf.read_column(0, "few", idx, counters=c)
        assert_same_array(got, table.column("few").combine_chunks().take(pa.array(idx)))
        decompressed[name] = c.bytes_decompressed
    # entries are numbered as rows first use them: rows 100-200 look up codes below 200, rows
    # from the middle look up codes from all over the 6,000
    assert decompressed["early"] < decompressed["middle"] * 0.5


def test_jobs_kernel_copies_and_decompresses_snappy_and_leaves_other_codecs() -> None:
    import cramjam

    rng = np.random.default_rng(2)
    pages = [rng.integers(0, 4, n, dtype=np.uint8).tobytes() for n in (5_000, 0, 70_000)]
    comp = [bytes(cramjam.snappy.compress_raw(p)) for p in pages]
    zstd = bytes(cramjam.zstd.compress(pages[0]))
    src = b"".join(comp) + pages[2] + zstd + comp[0]
    jobs, at, out_at = [], 0, 0
    for c, p in zip(comp, pages):
        jobs.append([at, len(c), out_at, len(p), int(Codec.SNAPPY)])
        at, out_at = at + len(c), out_at + len(p)
    jobs.append([at, len(pages[2]), out_at, len(pages[2]), 0])  # a copy
    at, out_at = at + len(pages[2]), out_at + len(pages[2])
    jobs.append([at, len(zstd), out_at, len(pages[0]), int(Codec.ZSTD)])
    at, out_at = at + len(zstd), out_at + len(pages[0])
    jobs.append([at, len(comp[0]), out_at, len(pages[0]) + 1, int(Codec.SNAPPY)])  # declares a byte too many
    jobs.append([at, len(comp[0]), out_at + len(pages[0]) + 1, 10, 0])  # a copy of the wrong size
    jobs.append([at, len(comp[0]), 1 << 40, len(pages[0]), int(Codec.SNAPPY)])  # a target outside the buffer
    buf = np.frombuffer(src, np.uint8)
    dec = np.zeros(out_at + len(pages[0]) + 11, np.uint8)
    table = np.array(jobs, np.int64)
    done = np.empty(len(jobs), np.int64)
    assert page_table.run_jobs(buf, dec, table, len(jobs), 1 << 20, done) == 4
    assert done.tolist() == [5_000, 0, 70_000, 0, page_table.JOB_ELSEWHERE, page_table.JOB_FAILED, page_table.JOB_FAILED, page_table.JOB_FAILED]
    expected = pages[0] + pages[1] + pages[2] + pages[2]
    assert dec[: len(expected)].tobytes() == expected
    # the zstd job runs in Python; the failed ones are named, their bytes counted as 0
    assert page_table.finish_jobs(table, done, buf, dec, 1 << 20) == [5, 6, 7]
    assert done.tolist() == [5_000, 0, 70_000, 0, 5_000, 0, 0, 0]
    assert dec[len(expected) : len(expected) + 5_000].tobytes() == pages[0]
    # a page larger than the limit is refused, not decompressed
    assert page_table.run_jobs(buf, dec, table, 1, 4_999, done) == 1 and done[0] == page_table.JOB_FAILED


def test_scan_option_partial_decompression(tmp_path: Path) -> None:
    import lazyscan

    path = _clustered_file(tmp_path)
    where = "key = 1000003"  # rows 2 and 3: early in every page
    results = {}
    for partial in (True, False):
        scan = lazyscan.scan(str(path), where=where, threads=1, partial_decompression=partial)
        results[partial] = (scan.to_table(), scan.profile.as_dict()["bytes_decompressed"])
    expected = pq.read_table(path).filter(pa.compute.equal(pa.compute.field("key"), 1000003))
    for table, _ in results.values():
        assert table.num_rows == 2
        for name in expected.column_names:
            assert_same_array(table.column(name).combine_chunks(), expected.column(name).combine_chunks())
    assert results[True][1] < results[False][1]
