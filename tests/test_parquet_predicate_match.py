"""Whole-chunk ``=`` / ``IN`` matching (lazyscan.parquet.predicate_match): the rows it finds equal
pyarrow's on every shape it takes, the page cache it fills serves the output read, and anything
it does not read (other encodings, corrupt pages) goes to the general route with the same
located errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import lazyscan
from lazyscan.errors import CorruptFileError
from lazyscan.parquet import PageCache, ParquetFile, ReadCounters, predicate_match
from lazyscan.parquet.match import BytesMatcher

N = 20_000


def _strings(rng: np.random.Generator, null_frac: float, distinct: int) -> pa.Array:
    vocab = np.array([f"w{i}-{'x' * (i % 7)}" for i in range(distinct)] + ["", "é日本語"])
    picked = vocab[rng.integers(0, len(vocab), N)]
    mask = rng.random(N) < null_frac if null_frac else None
    return pa.array(picked.tolist(), type=pa.string(), mask=mask)


def _mask_of(chunk: Any, n: int) -> np.ndarray:
    mask = np.zeros(n, dtype=bool)
    if chunk.valid is None:
        mask[:] = np.asarray(chunk.values, dtype=bool)
    else:
        mask[chunk.valid] = np.asarray(chunk.values, dtype=bool)
    return mask


CASES = [
    # (null fraction, distinct values, pyarrow write options)
    (0.0, 50, {"use_dictionary": True}),
    (0.2, 50, {"use_dictionary": True, "data_page_version": "2.0"}),
    (0.3, 5000, {"use_dictionary": True, "dictionary_pagesize_limit": 4096}),  # falls back to PLAIN
    (0.0, 5000, {"use_dictionary": False}),
    (0.5, 5000, {"use_dictionary": False, "data_page_version": "2.0", "compression": "zstd"}),
    (0.1, 300, {"use_dictionary": True, "compression": "gzip"}),
    (0.1, 300, {"use_dictionary": False, "compression": "none"}),
    (1.0, 10, {"use_dictionary": True}),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_matches_equal_pyarrow_and_the_general_path(tmp_path: Path, case: int) -> None:
    null_frac, distinct, options = CASES[case]
    rng = np.random.default_rng(40 + case)
    column = _strings(rng, null_frac, distinct)
    path = tmp_path / "m.parquet"
    pq.write_table(pa.table({"s": column}), path, data_page_size=2048, row_group_size=N // 2, **options)
    pf = ParquetFile(str(path))
    values = column.to_pylist()
    present = [v for v in values if v is not None]
    needle_sets = [[b"absent"], [b""], ["é日本語".encode()]]
    if present:
        needle_sets += [[present[0].encode()], [present[3].encode(), present[-1].encode(), b"absent"]]
    for needles in needle_sets:
        matcher = BytesMatcher.of(needles)
        wanted = {n.decode() for n in needles}
        start = 0
        for rg in range(pf.num_row_groups):
            n = pf.metadata.row_groups[rg].num_rows
            expected = np.array([v is not None and v in wanted for v in values[start : start + n]])
            got = _mask_of(pf.read_assembled(rg, "s", None, ReadCounters(), matcher=matcher), n)
            np.testing.assert_array_equal(got, expected)
            start += n
    # the chunk went through whole-chunk matching, not the general route
    calls = []
    real = predicate_match.match_full

    def spy(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        calls.append(out is not None)
        return out

    try:
        predicate_match.match_full = spy  # type: ignore[assignment]
        pf.read_assembled(0, "s", None, ReadCounters(), matcher=BytesMatcher.of([b"x"]))
    finally:
        predicate_match.match_full = real  # type: ignore[assignment]
    assert calls == [True]


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("dictionary", [False, True])
def test_cached_pages_serve_the_output_read(tmp_path: Path, version: str, dictionary: bool) -> None:
    rng = np.random.default_rng(7)
    column = _strings(rng, 0.1, 400)
    path = tmp_path / "c.parquet"
    pq.write_table(pa.table({"s": column}), path, data_page_size=2048, use_dictionary=dictionary, data_page_version=version)
    pf = ParquetFile(str(path))
    needle = next(v for v in column.to_pylist() if v)
    cache = PageCache()
    chunk = pf.read_assembled(0, "s", None, ReadCounters(), matcher=BytesMatcher.of([needle.encode()]), cache=cache)
    rows = np.flatnonzero(_mask_of(chunk, len(column)))
    assert len(rows) > 0 and len(cache) > 0
    second = ReadCounters()
    assert pf.read_column(0, "s", rows, counters=second, cache=cache).to_pylist() == [needle] * len(rows)
    assert second.bytes_decompressed == 0


def test_no_matching_dictionary_entry_skips_decoding_the_codes(tmp_path: Path) -> None:
    """A corrupt page of dictionary codes goes unnoticed when no dictionary entry matches (its
    rows cannot match), and is reported when one does."""
    path = tmp_path / "d.parquet"
    words = pa.array([f"w{i % 40}" for i in range(N)])
    pq.write_table(pa.table({"s": words}), path, data_page_size=2048, use_dictionary=True, compression="none")
    pf = ParquetFile(str(path))
    page = pf.page_layout(0, "s").pages[1]
    data = bytearray(path.read_bytes())
    body = page.offset + page.size - 40
    data[body : page.offset + page.size] = b"\xff" * 40  # codes far outside the dictionary
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(bytes(data))
    bpf = ParquetFile(str(bad))
    chunk = bpf.read_assembled(0, "s", None, ReadCounters(), matcher=BytesMatcher.of([b"absent"]))
    assert not np.asarray(chunk.values).any()
    with pytest.raises(CorruptFileError) as err:
        bpf.read_assembled(0, "s", None, ReadCounters(), matcher=BytesMatcher.of([b"w3"]))
    assert "'s'" in str(err.value) and "row group 0" in str(err.value)


def test_corrupt_plain_page_fails_with_the_general_paths_located_error(tmp_path: Path) -> None:
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"s": pa.array([f"v{i}" for i in range(N)])}), path, data_page_size=2048,
                   use_dictionary=False, compression="none")
    pf = ParquetFile(str(path))
    page = pf.page_layout(0, "s").pages[3]
    data = bytearray(path.read_bytes())
    data[page.offset + 30 : page.offset + 34] = b"\xff\xff\xff\x7f"  # a value length past the page
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(bytes(data))
    with pytest.raises(CorruptFileError) as err:
        ParquetFile(str(bad)).read_assembled(0, "s", None, ReadCounters(), matcher=BytesMatcher.of([b"v1"]))
    message = str(err.value)
    assert "row group 0" in message and "'s'" in message and "page 3" in message


def test_walk_rejects_a_truncated_header_and_grows_its_tables() -> None:
    buf = np.array([0x15, 0x00, 0x15], np.uint8)  # a PageHeader cut after two fields
    pages = np.empty((1, 10), np.int64)
    jobs = np.empty((3, 5), np.int64)
    assert predicate_match.walk_chunk(buf, 3, 10, 0, 0, pages, np.empty(1, np.int64), jobs, np.empty(5, np.int64)) == predicate_match.NOT_HERE


def test_many_small_pages_outgrow_the_first_tables(tmp_path: Path) -> None:
    path = tmp_path / "small.parquet"
    column = pa.array([f"value {i}" for i in range(N)])
    pq.write_table(pa.table({"s": column}), path, data_page_size=64, write_batch_size=50, use_dictionary=False, compression="none")
    pf = ParquetFile(str(path))
    assert len(pf.page_layout(0, "s").pages) > predicate_match._FIRST_CAPACITY
    got = predicate_match.match_full(
        np.frombuffer(path.read_bytes(), np.uint8)[pf.chunk_range(0, 0)[0] :][: pf.chunk_range(0, 0)[1]],
        pf.column("s"), N, 0, BytesMatcher.of([b"value 17", b"value 19999"]), ReadCounters(), 1 << 30,
    )
    assert got is not None and np.flatnonzero(got).tolist() == [17, N - 1]


def test_scan_returns_the_literal_for_matched_rows(tmp_path: Path) -> None:
    """Output rows of ``s = literal`` take the literal without a second read of ``s``; the
    rows equal Arrow's filter, in every string and binary type."""
    rng = np.random.default_rng(3)
    base = _strings(rng, 0.2, 30)
    table = pa.table({
        "s": base, "ls": base.cast(pa.large_string()), "b": base.cast(pa.binary()), "k": np.arange(N),
    })
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, data_page_size=2048)
    needle = next(v for v in base.to_pylist() if v)
    for column in ("s", "ls", "b"):
        literal = f"X'{needle.encode().hex()}'" if column == "b" else f"'{needle}'"
        got = lazyscan.scan(str(path), where=f"{column} = {literal}").to_table()
        expected = table.filter(pc.equal(table["s"], needle))
        assert got.num_rows == expected.num_rows > 0
        assert got.schema == lazyscan.scan(str(path)).schema
        for name in table.column_names:
            assert got[name].to_pylist() == expected[name].to_pylist()


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("null_frac", [0.0, 0.25])
def test_dictionary_rows_equal_the_general_paths(tmp_path: Path, version: str, null_frac: float) -> None:
    """Rows whose dictionary entry passes, read whole-chunk, against the codes read page by page
    then looked up; with and without NULL rows passing."""
    rng = np.random.default_rng(11)
    mask = rng.random(N) < null_frac if null_frac else None
    table = pa.table({
        "i": pa.array(rng.integers(0, 300, N) * 7, mask=mask),
        "s": pa.array([f"k{v}" for v in rng.integers(0, 90, N)], mask=mask),
    })
    path = tmp_path / "d.parquet"
    pq.write_table(table, path, data_page_size=1024, row_group_size=N // 2, data_page_version=version)
    pf = ParquetFile(str(path))
    for rg in range(pf.num_row_groups):
        n = pf.metadata.row_groups[rg].num_rows
        for name in ("i", "s"):
            cache = PageCache()
            entries = pf.read_dictionary(rg, name, ReadCounters(), cache=cache)
            for passes_null in (False, True):
                passes = rng.random(len(entries)) < 0.2
                found = pf.dictionary_rows(rg, name, passes, passes_null, ReadCounters(), cache)
                assert found is not None
                rows, chunk = found
                general = pf.read_assembled(rg, name, None, ReadCounters(), cache=cache)
                assert general.codes is not None
                valid = np.ones(n, bool) if general.valid is None else general.valid
                codes = np.full(n, -1, np.int64)
                codes[valid] = general.codes
                expected = np.flatnonzero(np.where(valid, passes[np.maximum(codes, 0)], passes_null))
                np.testing.assert_array_equal(rows, expected)
                # the rows as codes: their values are the column's values at those rows
                got = pf.to_arrow(rg, pf.column(name), chunk, ReadCounters())
                want = pq.ParquetFile(path).read_row_group(rg, columns=[name])[name].take(pa.array(rows))
                assert got.to_pylist() == want.to_pylist()


@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_dictionary_rows_of_required_columns(tmp_path: Path, version: str) -> None:
    """Columns without definition levels, whose codes are tested as they are unpacked: bit-packed
    runs (random values) and RLE runs (repeated values), several entry widths, against the codes
    read by the general route."""
    rng = np.random.default_rng(12)
    runs = np.repeat(rng.integers(0, 40, N // 20 + 1), 20)[:N]  # runs of 20 equal values: RLE
    table = pa.table(
        {
            "i": rng.integers(0, 300, N) * 7,
            "r": runs,
            "w": rng.integers(0, 70_000, N),  # 17-bit codes
            "one": np.zeros(N, np.int64),  # a single entry: codes of width 0
        },
        schema=pa.schema([pa.field(n, pa.int64(), nullable=False) for n in ("i", "r", "w", "one")]),
    )
    path = tmp_path / "required.parquet"
    pq.write_table(table, path, data_page_size=2048, row_group_size=N // 2, data_page_version=version,
                   dictionary_pagesize_limit=1 << 22)
    pf = ParquetFile(str(path))
    for rg in range(pf.num_row_groups):
        n = pf.metadata.row_groups[rg].num_rows
        for name in table.column_names:
            assert pf.column(name).max_definition_level == 0
            cache = PageCache()
            entries = pf.read_dictionary(rg, name, ReadCounters(), cache=cache)
            general = pf.read_assembled(rg, name, None, ReadCounters(), cache=cache)
            assert general.codes is not None and len(general.codes) == n
            for share in (0.0, 0.1, 0.6, 1.0):
                passes = rng.random(len(entries)) < share
                found = pf.dictionary_rows(rg, name, passes, False, ReadCounters(), cache)
                assert found is not None
                rows, chunk = found
                np.testing.assert_array_equal(rows, np.flatnonzero(passes[general.codes]))
                got = pf.to_arrow(rg, pf.column(name), chunk, ReadCounters())
                want = pq.ParquetFile(path).read_row_group(rg, columns=[name])[name].take(pa.array(rows))
                assert got.to_pylist() == want.to_pylist()


def test_dictionary_rows_hand_fallback_pages_to_the_general_path(tmp_path: Path) -> None:
    path = tmp_path / "fallback.parquet"
    values = pa.array([f"value-{i}" for i in range(N)])  # too many distinct values: PLAIN pages follow
    pq.write_table(pa.table({"s": values}), path, data_page_size=1024, dictionary_pagesize_limit=2048)
    pf = ParquetFile(str(path))
    cache = PageCache()
    entries = pf.read_dictionary(0, "s", ReadCounters(), cache=cache)
    assert entries is not None and len(entries) < N
    assert pf.dictionary_rows(0, "s", np.ones(len(entries), bool), False, ReadCounters(), cache) is None


def test_scan_with_dictionary_rows_equals_pyarrow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    table = pa.table({
        "k": pa.array(rng.integers(0, 500, N), mask=rng.random(N) < 0.1),
        "v": rng.normal(size=N),
        "s": pa.array([f"t{v}" for v in rng.integers(0, 40, N)]),
    })
    path = tmp_path / "scan.parquet"
    pq.write_table(table, path, data_page_size=1024, row_group_size=N // 4)
    key_values = np.unique(rng.integers(0, 500, 30))
    cases = [
        (lazyscan.col("k").isin_keys(lazyscan.key_filter(pa.array(key_values))), pc.is_in(table["k"], pa.array(key_values))),
        (lazyscan.col("k").isin(3, 5, 7) | lazyscan.col("k").is_null(),
         pc.or_kleene(pc.is_in(table["k"], pa.array([3, 5, 7])), pc.is_null(table["k"]))),
    ]
    used = []
    real = ParquetFile.dictionary_rows

    def spy(self: ParquetFile, *args: Any, **kwargs: Any) -> Any:
        out = real(self, *args, **kwargs)
        used.append(out is not None)
        return out

    monkeypatch.setattr(ParquetFile, "dictionary_rows", spy)
    for where, mask in cases:
        expected = table.filter(pc.fill_null(mask, False))
        got = lazyscan.scan(str(path), where=where).to_table()
        assert got.to_pylist() == expected.to_pylist()
    assert used and all(used)
