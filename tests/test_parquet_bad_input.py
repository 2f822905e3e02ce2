"""Bad input gives a lazyscan error that names the place; never a crash, hang or wrong rows.

A registered corpus of hand-made corruptions, then a bounded fuzz loop that mutates real files
(bit flips, byte runs, truncation) and reads every column fully and selectively.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lazyscan.errors import CorruptFileError, LazyScanError, SourceError, UnsupportedFeatureError
from lazyscan.parquet import ParquetFile, clear_caches
from lazyscan.parquet.codecs import decompress
from lazyscan.parquet.metadata import Codec


@pytest.fixture
def good_file(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    n = 4000
    table = pa.table({
        "i": pa.array(rng.integers(0, 100, n), pa.int64()),
        "s": pa.array([f"str{v}" for v in rng.integers(0, 5000, n)]),
        "d": pa.array(rng.normal(size=n)),
        "b": pa.array(rng.random(n) < 0.5),
    })
    path = tmp_path / "good.parquet"
    pq.write_table(table, path, row_group_size=2000, data_page_size=2048, compression="snappy")
    return path


def _write(tmp_path: Path, name: str, data: bytes) -> str:
    p = tmp_path / name
    p.write_bytes(data)
    clear_caches()
    return str(p)


def _read_all(path: str) -> None:
    pf = ParquetFile(path)
    for rg in range(pf.num_row_groups):
        n = pf.metadata.row_groups[rg].num_rows
        for c in pf.schema.columns:
            pf.read_column(rg, c.index)
            if n > 2:
                pf.read_column(rg, c.index, np.array([0, n // 2, n - 1]))
        if n > 2:
            pf.read_columns(rg, [c.index for c in pf.schema.columns], np.array([1, n - 2]))


def test_missing_file() -> None:
    with pytest.raises(SourceError, match="not found"):
        ParquetFile("/nonexistent/file.parquet")


def test_too_small(tmp_path: Path) -> None:
    with pytest.raises(CorruptFileError, match="too small"):
        ParquetFile(_write(tmp_path, "small.parquet", b"PAR1"))


def test_bad_magic(tmp_path: Path, good_file: Path) -> None:
    data = bytearray(good_file.read_bytes())
    data[-4:] = b"XXXX"
    with pytest.raises(CorruptFileError, match="bad magic") as e:
        ParquetFile(_write(tmp_path, "magic.parquet", bytes(data)))
    assert "magic.parquet" in str(e.value)


def test_encrypted_footer(tmp_path: Path, good_file: Path) -> None:
    data = bytearray(good_file.read_bytes())
    data[-4:] = b"PARE"
    with pytest.raises(UnsupportedFeatureError, match="encrypted"):
        ParquetFile(_write(tmp_path, "enc.parquet", bytes(data)))


def test_footer_length_lies(tmp_path: Path, good_file: Path) -> None:
    data = bytearray(good_file.read_bytes())
    data[-8:-4] = (len(data) * 2).to_bytes(4, "little")
    with pytest.raises(CorruptFileError, match="footer length"):
        ParquetFile(_write(tmp_path, "footer.parquet", bytes(data)))


def test_truncated_file(tmp_path: Path, good_file: Path) -> None:
    data = good_file.read_bytes()
    for cut in (len(data) // 2, len(data) - 9, 100):
        with pytest.raises(CorruptFileError):
            _read_all(_write(tmp_path, f"trunc{cut}.parquet", data[:cut]))


def test_truncated_column_data_names_location(tmp_path: Path, good_file: Path) -> None:
    # zero out the middle of the file: page headers and data become garbage
    data = bytearray(good_file.read_bytes())
    md = pq.ParquetFile(good_file).metadata
    off = md.row_group(1).column(1).data_page_offset
    data[off : off + 64] = b"\xff" * 64
    path = _write(tmp_path, "garbage.parquet", bytes(data))
    pf = ParquetFile(path)
    with pytest.raises(CorruptFileError) as e:
        pf.read_column(1, "s")
    msg = str(e.value)
    assert "garbage.parquet" in msg and "row group 1" in msg and "'s'" in msg


def test_corrupt_page_in_one_pass_read_names_its_column(tmp_path: Path, good_file: Path) -> None:
    data = bytearray(good_file.read_bytes())
    pf = ParquetFile(str(good_file))
    page = pf.page_layout(1, "d").pages[0]
    data[page.offset : page.offset + 16] = b"\xff" * 16
    path = _write(tmp_path, "bad_d.parquet", bytes(data))
    with pytest.raises(CorruptFileError) as e:
        ParquetFile(path).read_columns(1, ["i", "s", "d", "b"], np.array([0, 5]))
    msg = str(e.value)
    assert "bad_d.parquet" in msg and "row group 1" in msg and "'d'" in msg and "page" in msg


def test_dictionary_index_out_of_range(tmp_path: Path) -> None:
    table = pa.table({"s": pa.array(["a", "b", "c", "a"] * 50)})
    path = tmp_path / "dict.parquet"
    pq.write_table(table, path, use_dictionary=True, compression="none", data_page_version="1.0")
    data = bytearray(path.read_bytes())
    pf = ParquetFile(str(path))
    layout = pf.page_layout(0, "s")
    page = layout.pages[0]
    # the data page body ends with RLE/bit-packed dictionary indices: set them all to 0xff
    end = page.offset + page.size
    data[end - 20 : end] = b"\xff" * 20
    bad = _write(tmp_path, "dict_bad.parquet", bytes(data))
    with pytest.raises(CorruptFileError):
        ParquetFile(bad).read_column(0, "s")


def test_decompression_bomb_rejected() -> None:
    with pytest.raises(CorruptFileError, match=r"impossible ratio|limit"):
        decompress(Codec.SNAPPY, b"\x00" * 10, 1 << 29)
    with pytest.raises(CorruptFileError, match="limit"):
        decompress(Codec.ZSTD, b"\x00" * 10, 1 << 31, max_page_size=1 << 30)


def test_decompress_wrong_size() -> None:
    import cramjam

    payload = b"hello world" * 100
    comp = bytes(cramjam.snappy.compress_raw(payload))
    with pytest.raises(CorruptFileError):
        decompress(Codec.SNAPPY, comp, len(payload) + 10)
    assert decompress(Codec.SNAPPY, comp, len(payload)).tobytes() == payload


def test_unknown_codec_unsupported() -> None:
    with pytest.raises(UnsupportedFeatureError, match="LZO"):
        decompress(Codec.LZO, b"abc", 10)


def test_fuzz_mutated_files(tmp_path: Path, good_file: Path) -> None:
    """Bounded fuzz loop: a mutated file either reads (same shape) or raises a LazyScanError."""
    rng = np.random.default_rng(1234)
    original = good_file.read_bytes()
    iterations = int(os.environ.get("LAZYSCAN_FUZZ_ITERATIONS", "150"))
    outcomes = {"ok": 0, "error": 0}
    for i in range(iterations):
        data = bytearray(original)
        kind = i % 4
        if kind == 0:  # bit flips anywhere
            for pos in rng.integers(0, len(data), size=int(rng.integers(1, 8))):
                data[pos] ^= 1 << int(rng.integers(0, 8))
        elif kind == 1:  # a run of random bytes in the data region
            pos = int(rng.integers(4, len(data) - 200))
            data[pos : pos + 16] = bytes(rng.integers(0, 256, 16, dtype=np.uint8))
        elif kind == 2:  # mutate the footer
            flen = int.from_bytes(data[-8:-4], "little")
            pos = len(data) - 8 - int(rng.integers(1, flen))
            data[pos] = int(rng.integers(0, 256))
        else:  # truncate and keep a valid-looking tail
            cut = int(rng.integers(12, len(data)))
            data = data[:cut] + data[-8:]
        path = _write(tmp_path, f"fuzz{i}.parquet", bytes(data))
        try:
            _read_all(path)
            outcomes["ok"] += 1
        except LazyScanError:
            outcomes["error"] += 1
    assert outcomes["error"] > 0
