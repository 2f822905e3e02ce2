"""The numba kernels of lazyscan.parquet.kernels against reference encoders and real files.

- round trips: pure-Python reference encoders (RLE/bit-packed hybrid, DELTA_BINARY_PACKED,
  DELTA_BYTE_ARRAY, BYTE_STREAM_SPLIT) feed the decoders, full and selected variants, with
  hypothesis choosing data, run layouts and selections;
- differential: every page of pyarrow-written files and of the parquet-testing delta files is
  decoded with the kernels (a throw-away thrift compact reader finds the pages) and compared with
  pyarrow's reading of the column;
- oracles: xxHash64 against the ``xxhash`` package, the split-block Bloom filter against
  parquet-testing's ``bloom_filter.xxhash.bin``;
- robustness: random and truncated inputs give a result or a negative error code, also with
  numba's bounds checking on (``slow``) and as plain Python (``NUMBA_DISABLE_JIT=1``).

``LAZYSCAN_KERNEL_TESTS=small`` shrinks example counts (used by the pure-Python run).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import xxhash
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lazyscan.format import kernels as F
from lazyscan.parquet import kernels as K
from tests.support.data import PARQUET_TESTING

DATA = PARQUET_TESTING
SMALL = os.environ.get("LAZYSCAN_KERNEL_TESTS") == "small"
JIT_DISABLED = os.environ.get("NUMBA_DISABLE_JIT") == "1"
EXAMPLES = 15 if SMALL else 120
MAX_N = 300 if SMALL else 3000

examples = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

U64 = 1 << 64


def u8(data: bytes) -> np.ndarray:
    return np.frombuffer(bytes(data), dtype=np.uint8)


# --------------------------------------------------------------------------- reference encoders


def uleb(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def zigzag(v: int) -> int:
    v = to_signed64(v)
    return ((v << 1) ^ (v >> 63)) & (U64 - 1)


def to_signed64(v: int) -> int:
    v &= U64 - 1
    return v - U64 if v >= 1 << 63 else v


def bitpack(values: list[int], width: int) -> bytes:
    """LSB-first bit packing, as the hybrid and delta encodings use it."""
    acc = 0
    for i, v in enumerate(values):
        acc |= (v & ((1 << width) - 1)) << (i * width)
    return acc.to_bytes((len(values) * width + 7) // 8, "little")


def rle_bp_encode(values: list[int], width: int, rng: random.Random) -> bytes:
    """RLE/bit-packed hybrid with run kinds and lengths chosen by ``rng``."""
    out = bytearray()
    i = 0
    n = len(values)
    byte_width = (width + 7) // 8
    while i < n:
        if rng.random() < 0.5:
            r = 1
            while i + r < n and values[i + r] == values[i]:
                r += 1
            r = rng.randint(1, r)
            out += uleb(r << 1) + values[i].to_bytes(byte_width, "little")
            i += r
        else:
            groups = rng.randint(1, 4)
            chunk = values[i : i + 8 * groups]
            chunk += [0] * (8 * groups - len(chunk))
            out += uleb((groups << 1) | 1) + bitpack(chunk, width)
            i += 8 * groups
    return bytes(out)


def delta_encode(
    values: list[int], block_size: int = 128, n_mini: int = 4, garbage: random.Random | None = None
) -> bytes:
    """DELTA_BINARY_PACKED; with ``garbage`` the unused bit widths and padding bits are random."""
    vals = [to_signed64(v) for v in values]
    out = bytearray(uleb(block_size) + uleb(n_mini) + uleb(len(vals)))
    out += uleb(zigzag(vals[0]) if vals else 0)
    deltas = [to_signed64(vals[i] - vals[i - 1]) for i in range(1, len(vals))]
    vpm = block_size // n_mini
    for b0 in range(0, len(deltas), block_size):
        block = deltas[b0 : b0 + block_size]
        min_d = min(block)
        rel = [d - min_d for d in block]
        out += uleb(zigzag(min_d))
        minis = [rel[m : m + vpm] for m in range(0, len(rel), vpm)]
        widths = [max(m).bit_length() for m in minis]
        unused = n_mini - len(minis)
        pad_widths = [garbage.randint(0, 255) for _ in range(unused)] if garbage else [0] * unused
        out += bytes(widths + pad_widths)
        for m, w in zip(minis, widths):
            pad = [garbage.getrandbits(w) if garbage else 0 for _ in range(vpm - len(m))]
            out += bitpack(m + pad, w)
    return bytes(out)


def delta_byte_array_encode(values: list[bytes]) -> bytes:
    prefixes, suffixes = [], []
    prev = b""
    for v in values:
        p = 0
        while p < min(len(prev), len(v)) and prev[p] == v[p]:
            p += 1
        prefixes.append(p)
        suffixes.append(v[p:])
        prev = v
    return delta_encode(prefixes) + delta_encode([len(s) for s in suffixes]) + b"".join(suffixes)


def byte_stream_split_encode(raw: np.ndarray, width: int) -> bytes:
    return raw.reshape(-1, width).T.tobytes()


def selections(n: int, rng: random.Random) -> list[np.ndarray]:
    """Empty, single, first, last, all and random subsets of range(n)."""
    sels = [[]]
    if n:
        sels += [[0], [n - 1], [rng.randrange(n)], list(range(n))]
        for p in (0.01, 0.2, 0.7):
            sels.append([i for i in range(n) if rng.random() < p])
        a = rng.randrange(n)
        sels.append(list(range(a, min(n, a + rng.randint(1, 100)))))
    return [np.array(s, dtype=np.int64) for s in sels]


# --------------------------------------------------------------------------- RLE / bit-packed


@st.composite
def hybrid_values(draw):
    width = draw(st.integers(0, 32))
    runs = draw(
        st.lists(st.tuples(st.integers(0, (1 << width) - 1), st.integers(1, 60)), max_size=60)
    )
    values = [v for v, r in runs for _ in range(r)][:MAX_N]
    return width, values, draw(st.integers(0, 2**32))


@examples
@given(hybrid_values())
def test_rle_bp_round_trip(case):
    width, values, seed = case
    rng = random.Random(seed)
    enc = rle_bp_encode(values, width, rng) + bytes(rng.randint(0, 3))
    buf = u8(b"\xaa" * 3 + enc)
    n = len(values)
    expected = np.array(values, dtype=np.uint32)
    out = np.full(n + 2, -7, dtype=np.int32)
    assert K.rle_bp_decode(buf, 3, len(buf), width, n, out) == n
    np.testing.assert_array_equal(out[:n].view(np.uint32), expected)
    assert (out[n:] == -7).all(), "wrote past count"
    for sel in selections(n, rng):
        got = np.full(len(sel) + 1, -7, dtype=np.int32)
        assert K.rle_bp_decode_selected(buf, 3, len(buf), width, n, sel, got) == len(sel)
        np.testing.assert_array_equal(got[: len(sel)].view(np.uint32), expected[sel])
        assert got[len(sel)] == -7


@examples
@given(hybrid_values())
def test_rle_bp_decode_codes_checks_bounds_while_unpacking(case):
    width, values, seed = case
    rng = random.Random(seed)
    enc = rle_bp_encode(values, width, rng)
    buf = u8(enc)
    n = len(values)
    top = max(values, default=0)
    for dict_size in {top + 1, top, max(top - 3, 0), 1 << 32}:
        out = np.zeros(n, dtype=np.int32)
        got = K.rle_bp_decode_codes(buf, 0, len(buf), width, n, out, dict_size)
        if n and top >= dict_size:
            assert got == K.ERR_BAD_INDEX
        else:
            assert got == n
            np.testing.assert_array_equal(out.view(np.uint32), np.array(values, dtype=np.uint32))


@examples
@given(hybrid_values())
def test_rle_bp_decode_codes_from_a_first_value(case):
    """Every window ``first..count`` decodes as the matching slice of a whole decode, and only
    the window's codes are checked against the dictionary size."""
    width, values, seed = case
    rng = random.Random(seed)
    buf = u8(b"\xaa" * 3 + rle_bp_encode(values, width, rng))
    n = len(values)
    expected = np.array(values, dtype=np.uint32)
    windows = {(0, n), (n, n)}
    for _ in range(6):
        a = rng.randint(0, n)
        windows.add((a, rng.randint(a, n)))
    for first, count in sorted(windows):
        out = np.full(count - first + 1, -7, dtype=np.int32)
        assert K.rle_bp_decode_codes_from(buf, 3, len(buf), width, first, count, out, 1 << 32) == count - first
        np.testing.assert_array_equal(out[: count - first].view(np.uint32), expected[first:count])
        assert out[count - first] == -7, "wrote past the window"
        top = max(values[first:count], default=-1)
        if top > 0:
            got = K.rle_bp_decode_codes_from(buf, 3, len(buf), width, first, count, out, top)
            assert got == K.ERR_BAD_INDEX, "a code in the window is out of range"
        if top >= 0:
            # codes outside the window are checked only where they share a bit-packed group of
            # eight with a decoded one, or are the value of an RLE run walked over
            got = K.rle_bp_decode_codes_from(buf, 3, len(buf), width, first, count, out, top + 1)
            assert got == count - first or (got == K.ERR_BAD_INDEX and max(values[:count]) > top)
            assert K.rle_bp_decode_codes_from(buf, 3, len(buf), width, first, count, out, max(values) + 1) == count - first


#: dictionary entries the look-up test builds at most
DICT_CODES = 1 << 16


@examples
@given(hybrid_values())
@example((32, [(1 << 32) - 1, 5, 1 << 31], 0))  # codes that would need a 32 GiB dictionary
def test_rle_bp_decode_dict_values_looks_codes_up_as_it_unpacks(case):
    """The values equal a decode of the codes followed by a look-up, for dictionaries of each
    number type; a code outside the dictionary is reported, nothing is written past count."""
    width, values, seed = case
    # codes of any bit width, but a dictionary of at most 2^16 entries (a code of 2^32 - 1 would
    # ask for 32 GiB of dictionary)
    values = [v % DICT_CODES for v in values]
    rng = random.Random(seed)
    buf = u8(b"\xaa" * 3 + rle_bp_encode(values, width, rng))
    n = len(values)
    top = max(values, default=0)
    for dtype in (np.int32, np.int64, np.float32, np.float64):
        dictionary = (np.arange(top + 1, dtype=np.float64) * 3 - 5).astype(dtype)
        out = np.full(n + 1, 77, dtype=dtype)
        assert K.rle_bp_decode_dict_values(buf, 3, len(buf), width, n, dictionary, out) == n
        np.testing.assert_array_equal(out[:n], dictionary[np.array(values, dtype=np.int64)])
        assert out[n] == 77, "wrote past count"
        if n and top > 0:
            got = K.rle_bp_decode_dict_values(buf, 3, len(buf), width, n, dictionary[:top], out)
            assert got == K.ERR_BAD_INDEX


def test_rle_bp_decode_dict_values_errors():
    buf = u8(bytes([0x03, 0x88, 0xC6, 0xFA]))  # 0..7, bit width 3
    d = np.arange(10, 18, dtype=np.int64)
    out = np.zeros(8, dtype=np.int64)
    assert K.rle_bp_decode_dict_values(buf, 0, 4, 3, 8, d, out) == 8 and out.tolist() == list(range(10, 18))
    assert K.rle_bp_decode_dict_values(buf, 0, 3, 3, 8, d, out) == K.ERR_TRUNCATED
    assert K.rle_bp_decode_dict_values(buf, 0, 4, 3, 9, d, np.zeros(9, np.int64)) == K.ERR_TRUNCATED
    assert K.rle_bp_decode_dict_values(buf, 0, 4, 3, 8, d, out[:7]) == K.ERR_BAD_ARGUMENT
    assert K.rle_bp_decode_dict_values(buf, 0, 4, 33, 8, d, out) == K.ERR_BAD_BIT_WIDTH
    assert K.rle_bp_decode_dict_values(buf, 0, 4, 3, 8, d[:7], out) == K.ERR_BAD_INDEX
    # an RLE run of code 2, and bit width 0 (every code 0) with and without a dictionary
    assert K.rle_bp_decode_dict_values(u8(uleb(5 << 1) + b"\x02"), 0, 2, 2, 5, d, out) == 5 and out[:5].tolist() == [12] * 5
    assert K.rle_bp_decode_dict_values(u8(b""), 0, 0, 0, 4, d, out) == 4 and out[:4].tolist() == [10] * 4
    assert K.rle_bp_decode_dict_values(u8(b""), 0, 0, 0, 4, d[:0], out) == K.ERR_BAD_INDEX
    assert K.all_equal(np.array([1, 1, 1], np.int32), 1) and not K.all_equal(np.array([1, 0, 1], np.int32), 1)


def test_rle_bp_decode_codes_from_errors():
    buf = u8(bytes([0x03, 0x88, 0xC6, 0xFA]))  # 0..7, bit width 3
    out = np.zeros(8, dtype=np.int32)
    assert K.rle_bp_decode_codes_from(buf, 0, 4, 3, 5, 8, out, 1 << 32) == 3 and out[:3].tolist() == [5, 6, 7]
    assert K.rle_bp_decode_codes_from(buf, 0, 3, 3, 5, 8, out, 1 << 32) == K.ERR_TRUNCATED
    assert K.rle_bp_decode_codes_from(buf, 0, 4, 3, 5, 9, out, 1 << 32) == K.ERR_TRUNCATED
    assert K.rle_bp_decode_codes_from(buf, 0, 4, 3, 6, 5, out, 1 << 32) == K.ERR_BAD_ARGUMENT, "window reversed"
    assert K.rle_bp_decode_codes_from(buf, 0, 4, 3, -1, 5, out, 1 << 32) == K.ERR_BAD_ARGUMENT, "negative first"
    assert K.rle_bp_decode_codes_from(buf, 0, 4, 3, 0, 8, out[:7], 1 << 32) == K.ERR_BAD_ARGUMENT, "output too small"
    assert K.rle_bp_decode_codes_from(buf, 0, 4, 33, 0, 8, out, 1 << 32) == K.ERR_BAD_BIT_WIDTH
    # a run of 2^31 values skipped by its header, then a bit-packed group
    big = u8(uleb(2**32) + b"\x05" + uleb(3) + bitpack(list(range(8)), 3))
    out = np.zeros(4, dtype=np.int32)
    assert K.rle_bp_decode_codes_from(big, 0, len(big), 3, 2**31 + 2, 2**31 + 6, out, 8) == 4
    assert out.tolist() == [2, 3, 4, 5]


def test_rle_bp_spec_example():
    # Encodings.md: 0..7 with bit width 3, one bit-packed group
    buf = u8(bytes([0x03, 0x88, 0xC6, 0xFA]))
    out = np.empty(8, dtype=np.int32)
    assert K.rle_bp_decode(buf, 0, 4, 3, 8, out) == 8
    assert out.tolist() == list(range(8))


def test_rle_bp_bit_width_zero_needs_no_bytes():
    out = np.full(5, 9, dtype=np.int32)
    assert K.rle_bp_decode(u8(b""), 0, 0, 0, 5, out) == 5
    assert out.tolist() == [0] * 5
    got = np.full(2, 9, dtype=np.int32)
    assert K.rle_bp_decode_selected(u8(b"\x04"), 0, 1, 0, 5, np.array([1, 4]), got) == 2
    assert got.tolist() == [0, 0]


def test_rle_bp_huge_run_is_bounded_by_count():
    buf = u8(uleb(2**32) + b"\x05")  # RLE run of 2^31 values
    out = np.zeros(10, dtype=np.int32)
    assert K.rle_bp_decode(buf, 0, len(buf), 3, 10, out) == 10
    assert out.tolist() == [5] * 10
    buf = u8(uleb(((2**50) << 1) | 1) + bitpack(list(range(16)), 4))  # 2^50 groups, 8 bytes given
    out = np.zeros(16, dtype=np.int32)
    # a bit-packed run must fit whole, even when its first values are all that is wanted
    # (Arrow refuses such a run: a damaged run header, not a short last group)
    assert K.rle_bp_decode(buf, 0, len(buf), 4, 16, out) == K.ERR_TRUNCATED
    buf = u8(uleb((2 << 1) | 1) + bitpack(list(range(16)), 4))  # 2 groups, 8 bytes given
    assert K.rle_bp_decode(buf, 0, len(buf), 4, 13, out) == 13
    assert out[:13].tolist() == list(range(13))
    assert K.rle_bp_decode(buf, 0, len(buf), 4, 17, np.zeros(17, np.int32)) == K.ERR_TRUNCATED


def test_rle_bp_errors():
    out = np.zeros(8, dtype=np.int32)
    buf = u8(bytes([0x03, 0x88, 0xC6]))
    assert K.rle_bp_decode(buf, 0, 3, 3, 8, out) == K.ERR_TRUNCATED
    assert K.rle_bp_decode(buf, 0, 3, 33, 8, out) == K.ERR_BAD_BIT_WIDTH
    assert K.rle_bp_decode(buf, 0, 3, -1, 8, out) == K.ERR_BAD_BIT_WIDTH
    assert K.rle_bp_decode(buf, 0, 3, 3, 9, out) == K.ERR_BAD_ARGUMENT, "output too small"
    assert K.rle_bp_decode(buf, 0, 4, 3, 8, out) == K.ERR_BAD_ARGUMENT, "end past the buffer"
    assert K.rle_bp_decode(u8(b"\x02"), 0, 1, 8, 1, out) == K.ERR_TRUNCATED, "RLE value missing"
    assert K.rle_bp_decode(u8(b"\xff" * 11), 0, 11, 8, 1, out) == K.ERR_BAD_HEADER, "endless varint"
    sel = np.array([3, 2], dtype=np.int64)
    assert K.rle_bp_decode_selected(buf, 0, 3, 3, 8, sel, out) == K.ERR_BAD_ARGUMENT, "unsorted"
    sel = np.array([8], dtype=np.int64)
    assert K.rle_bp_decode_selected(buf, 0, 3, 3, 8, sel, out) == K.ERR_BAD_ARGUMENT, "out of range"
    sel = np.array([7], dtype=np.int64)
    assert K.rle_bp_decode_selected(buf, 0, 3, 3, 8, sel, out) == K.ERR_TRUNCATED
    sel = np.array([4], dtype=np.int64)  # bits 12..14: within the 2 data bytes present
    assert K.rle_bp_decode_selected(buf, 0, 3, 3, 8, sel, out) == 1 and out[0] == 4


def test_check_dict_indices():
    idx = np.arange(3000, dtype=np.int32) % 7
    assert K.check_dict_indices(idx, len(idx), 7) == -1
    assert K.check_dict_indices(idx, len(idx), 6) == 6
    idx[2500] = -1
    assert K.check_dict_indices(idx, len(idx), 7) == 2500
    assert K.check_dict_indices(idx, 2500, 7) == -1
    assert K.check_dict_indices(idx, 0, 0) == -1


# --------------------------------------------------------------------------- byte arrays


@examples
@given(st.lists(st.binary(max_size=40), max_size=200), st.integers(0, 2**32))
def test_plain_byte_array_and_gather(values, seed):
    rng = random.Random(seed)
    enc = b"".join(len(v).to_bytes(4, "little") + v for v in values)
    buf = u8(b"\x00" * 5 + enc + b"\x01\x02")
    n = len(values)
    starts = np.empty(n, dtype=np.int64)
    lengths = np.empty(n, dtype=np.int64)
    assert K.plain_byte_array_locate(buf, 5, len(buf), n, starts, lengths) == 5 + len(enc)
    for sel in selections(n, rng):
        size = K.gather_bytes_size(lengths, sel)
        assert size == sum(len(values[i]) for i in sel)
        for odt in (np.int32, np.int64):
            offsets = np.empty(len(sel) + 1, dtype=odt)
            data = np.empty(size, dtype=np.uint8)
            assert K.gather_bytes(buf, starts, lengths, sel, offsets, data) == size
            got = [data[offsets[k] : offsets[k + 1]].tobytes() for k in range(len(sel))]
            assert got == [values[i] for i in sel]


def test_plain_byte_array_errors():
    starts = np.empty(2, dtype=np.int64)
    lengths = np.empty(2, dtype=np.int32)
    buf = u8(b"\x03\x00\x00\x00abc\x05\x00\x00\x00ab")
    assert K.plain_byte_array_locate(buf, 0, len(buf), 1, starts, lengths) == 7
    assert K.plain_byte_array_locate(buf, 0, len(buf), 2, starts, lengths) == K.ERR_TRUNCATED
    assert K.plain_byte_array_locate(buf, 0, 9, 2, starts, lengths) == K.ERR_TRUNCATED
    neg = u8(b"\xff\xff\xff\xff" + b"x" * 8)
    assert K.plain_byte_array_locate(neg, 0, len(neg), 1, starts, lengths) == K.ERR_BAD_LENGTH
    assert K.plain_byte_array_locate(buf, 0, len(buf), 3, starts, lengths) == K.ERR_BAD_ARGUMENT
    idx = np.array([2], dtype=np.int64)
    assert K.gather_bytes_size(lengths, idx) == K.ERR_BAD_INDEX
    off = np.empty(2, np.int64)
    assert (
        K.gather_bytes(buf, starts[:1], lengths[:1], idx, off, np.empty(9, np.uint8))
        == K.ERR_BAD_INDEX
    )
    idx = np.array([0], dtype=np.int64)
    assert (
        K.gather_bytes(buf, starts[:1], lengths[:1], idx, off, np.empty(2, np.uint8))
        == K.ERR_BAD_ARGUMENT
    )
    bad_starts = np.array([len(buf) - 1], dtype=np.int64)
    assert (
        K.gather_bytes(buf, bad_starts, lengths[:1], idx, off, np.empty(9, np.uint8))
        == K.ERR_BAD_LENGTH
    )


@examples
@given(st.lists(st.binary(max_size=20), min_size=1, max_size=50), st.integers(0, 2**32))
def test_dict_gather(dictionary, seed):
    rng = random.Random(seed)
    for odt in (np.int32, np.int64):
        offsets = np.zeros(len(dictionary) + 1, dtype=odt)
        np.cumsum([len(v) for v in dictionary], out=offsets[1:])
        data = u8(b"".join(dictionary))
        indices = np.array(
            [rng.randrange(len(dictionary)) for _ in range(rng.randint(0, 300))], np.int32
        )
        size = K.dict_gather_size(offsets, indices)
        assert size == sum(len(dictionary[i]) for i in indices)
        out_off = np.empty(len(indices) + 1, dtype=odt)
        out = np.empty(size, dtype=np.uint8)
        assert K.dict_gather_bytes(offsets, data, indices, out_off, out) == size
        got = [out[out_off[k] : out_off[k + 1]].tobytes() for k in range(len(indices))]
        assert got == [dictionary[i] for i in indices]
    bad = np.array([len(dictionary)], dtype=np.int32)
    assert K.dict_gather_size(offsets, bad) == K.ERR_BAD_INDEX
    assert K.dict_gather_bytes(offsets, data, bad, np.empty(2, odt), out) == K.ERR_BAD_INDEX


@st.composite
def byte_array_values(draw):
    """Values sharing prefixes, like sorted strings."""
    n = draw(st.integers(0, 200))
    base = draw(st.binary(min_size=0, max_size=30))
    out = []
    for _ in range(n):
        cut = draw(st.integers(0, len(base)))
        base = base[:cut] + draw(st.binary(max_size=12))
        out.append(base)
    return out


@examples
@given(byte_array_values(), st.integers(0, 5))
def test_delta_byte_array_round_trip(values, trailing):
    enc = delta_byte_array_encode(values)
    buf = u8(enc + b"\x07" * trailing)
    n = len(values)
    prefix = np.empty(n, dtype=np.int64)
    suffix = np.empty(n, dtype=np.int64)
    p = K.delta_binary_packed_decode(buf, 0, len(buf), n, prefix)
    assert p >= 0
    p = K.delta_binary_packed_decode(buf, p, len(buf), n, suffix)
    assert p >= 0
    size = K.delta_byte_array_size(prefix, suffix)
    assert size == sum(len(v) for v in values)
    offsets = np.empty(n + 1, dtype=np.int64)
    data = np.empty(size, dtype=np.uint8)
    assert K.delta_byte_array_build(prefix, suffix, buf, p, len(buf), offsets, data) == len(enc)
    assert [data[offsets[i] : offsets[i + 1]].tobytes() for i in range(n)] == values


def test_delta_byte_array_errors():
    buf = u8(b"abcdef")
    off = np.empty(3, np.int64)
    out = np.empty(10, np.uint8)
    p = np.array([0, 3], np.int64)
    s = np.array([2, 1], np.int64)
    assert K.delta_byte_array_size(p, s) == K.ERR_BAD_LENGTH, "prefix longer than previous value"
    assert K.delta_byte_array_build(p, s, buf, 0, 6, off, out) == K.ERR_BAD_LENGTH
    p = np.array([1, 0], np.int64)
    assert K.delta_byte_array_size(p, s) == K.ERR_BAD_LENGTH, "first prefix must be 0"
    p = np.array([0, 1], np.int64)
    assert K.delta_byte_array_size(p, np.array([2, -1], np.int64)) == K.ERR_BAD_LENGTH
    assert K.delta_byte_array_size(p, np.array([2, 2**40], np.int64)) == K.ERR_BAD_LENGTH
    assert K.delta_byte_array_size(p, s) == 4
    assert (
        K.delta_byte_array_build(p, np.array([2, 5], np.int64), buf, 0, 6, off, out)
        == K.ERR_TRUNCATED
    )
    assert (
        K.delta_byte_array_build(p, s, buf, 0, 6, off, np.empty(3, np.uint8)) == K.ERR_BAD_ARGUMENT
    )
    assert K.delta_byte_array_build(p, s, buf, 0, 6, off, out) == 3
    assert out[:4].tobytes() == b"abac"


# --------------------------------------------------------------------------- DELTA_BINARY_PACKED

_INT64_EDGES = [0, 1, -1, 2**63 - 1, -(2**63), 2**31, -(2**31)]


@st.composite
def delta_case(draw):
    kind = draw(st.sampled_from(["walk", "random", "edges", "constant"]))
    n = draw(st.integers(0, MAX_N))
    rng = random.Random(draw(st.integers(0, 2**32)))
    if kind == "walk":
        step = draw(st.sampled_from([1, 100, 2**20, 2**40]))
        v = rng.randint(-(2**62), 2**62)
        values = []
        for _ in range(n):
            v = to_signed64(v + rng.randint(-step, step))
            values.append(v)
    elif kind == "random":
        bits = draw(st.sampled_from([8, 32, 64]))
        values = [to_signed64(rng.getrandbits(bits)) for _ in range(n)]
    elif kind == "edges":
        values = [rng.choice(_INT64_EDGES) for _ in range(n)]
    else:
        values = [rng.randint(-5, 5)] * n
    block_size, n_mini = draw(st.sampled_from([(128, 4), (128, 1), (256, 8), (64, 8), (8, 1)]))
    return values, block_size, n_mini, rng


@examples
@given(delta_case())
def test_delta_binary_packed_round_trip(case):
    values, block_size, n_mini, rng = case
    enc = delta_encode(values, block_size, n_mini, garbage=rng if rng.random() < 0.5 else None)
    buf = u8(b"\x01\x02" + enc + b"\xff" * rng.randint(0, 9))
    n = len(values)
    expected = np.array(values, dtype=np.int64)
    out = np.full(n + 1, 77, dtype=np.int64)
    assert K.delta_binary_packed_decode(buf, 2, len(buf), n, out) == 2 + len(enc)
    np.testing.assert_array_equal(out[:n], expected)
    assert out[n] == 77
    m = rng.randint(0, n)  # fewer values than the header's total: same end position
    assert K.delta_binary_packed_decode(buf, 2, len(buf), m, out) == 2 + len(enc)
    np.testing.assert_array_equal(out[:m], expected[:m])
    if n:
        assert K.delta_binary_packed_decode(buf, 2, len(buf), n + 1, out) == K.ERR_TRUNCATED
    for sel in selections(n, rng):
        got = np.full(len(sel) + 1, 77, dtype=np.int64)
        assert K.delta_binary_packed_decode_selected(buf, 2, len(buf), n, sel, got) == 2 + len(enc)
        np.testing.assert_array_equal(got[: len(sel)], expected[sel])
        assert got[len(sel)] == 77


def test_delta_spec_examples():
    # Encodings.md examples (block size 8 is accepted although the spec wants 128)
    enc = uleb(8) + uleb(1) + uleb(5) + uleb(zigzag(1)) + uleb(zigzag(1)) + b"\x00"
    out = np.empty(5, np.int64)
    assert K.delta_binary_packed_decode(u8(enc), 0, len(enc), 5, out) == len(enc)
    assert out.tolist() == [1, 2, 3, 4, 5]
    enc = delta_encode([7, 5, 3, 1, 2, 3, 4, 5], 8, 1)
    out = np.empty(8, np.int64)
    assert K.delta_binary_packed_decode(u8(enc), 0, len(enc), 8, out) == len(enc)
    assert out.tolist() == [7, 5, 3, 1, 2, 3, 4, 5]
    single = delta_encode([42])  # one value: header only, no block
    assert K.delta_binary_packed_decode(u8(single), 0, len(single), 1, out) == len(single)
    assert out[0] == 42


def test_delta_header_errors():
    out = np.empty(300, np.int64)

    def dec(block, mini, total=3, first=0, rest=b""):
        b = u8(uleb(block) + uleb(mini) + uleb(total) + uleb(first) + rest)
        return K.delta_binary_packed_decode(b, 0, len(b), min(total, 300), out)

    assert dec(0, 1) == K.ERR_BAD_HEADER, "zero block size"
    assert dec(128, 0) == K.ERR_BAD_HEADER, "zero miniblocks"
    assert dec(128, 3) == K.ERR_BAD_HEADER, "miniblock count does not divide block size"
    assert dec(128, 32) == K.ERR_BAD_HEADER, "4 values per miniblock"
    assert dec(2**40, 1) == K.ERR_BAD_HEADER, "absurd block size"
    assert dec(128, 4, rest=uleb(0) + bytes([65, 0, 0, 0])) == K.ERR_BAD_HEADER, "bit width 65"
    assert dec(128, 4, rest=uleb(0) + bytes([8, 0, 0])) == K.ERR_TRUNCATED, "bit widths cut"
    assert dec(128, 4, rest=uleb(0) + bytes([8, 0, 0, 0]) + b"\x00" * 31) == K.ERR_TRUNCATED
    assert dec(128, 4, rest=uleb(0) + bytes([8, 0, 0, 0]) + b"\x00" * 32) == 5 + 1 + 4 + 32
    assert dec(128, 4, total=2**63) == K.ERR_BAD_LENGTH
    b = u8(uleb(128) + uleb(4))
    assert K.delta_binary_packed_decode(b, 0, len(b), 1, out) == K.ERR_TRUNCATED
    assert K.delta_binary_packed_decode(b, 0, len(b), 301, out) == K.ERR_BAD_ARGUMENT


def test_delta_huge_zero_width_block_is_bounded():
    # one block of 2^31 values in 7 bytes: work must follow the request, not the header
    enc = uleb(2**31) + uleb(1) + uleb(2**31 + 1) + uleb(zigzag(10)) + uleb(zigzag(3)) + b"\x00"
    buf = u8(enc)
    out = np.empty(5, np.int64)
    assert K.delta_binary_packed_decode(buf, 0, len(buf), 5, out) == len(enc)
    assert out.tolist() == [10, 13, 16, 19, 22]
    sel = np.array([1, 4], np.int64)
    assert K.delta_binary_packed_decode_selected(buf, 0, len(buf), 5, sel, out) == len(enc)
    assert out[:2].tolist() == [13, 22]
    longer = u8(uleb(2**31) + uleb(1) + uleb(2**40) + enc[-3:])
    assert K.delta_binary_packed_decode(longer, 0, len(longer), 5, out) == K.ERR_TRUNCATED


# --------------------------------------------------------------------------- fixed width


@examples
@given(st.integers(0, 400), st.sampled_from([1, 2, 4, 8, 12, 16]), st.integers(0, 2**32))
def test_byte_stream_split_and_gather_fixed(n, width, seed):
    rng = random.Random(seed)
    raw = np.frombuffer(rng.randbytes(n * width), dtype=np.uint8)
    enc = byte_stream_split_encode(raw, width)
    buf = u8(b"\x09" * 3 + enc + b"\x08")
    out = np.empty(n * width, dtype=np.uint8)
    assert K.byte_stream_split_decode(buf, 3, len(buf) - 1, n, width, out) == n
    np.testing.assert_array_equal(out, raw)
    plain = u8(b"\x09" + raw.tobytes())
    rows = raw.reshape(n, width)
    for sel in selections(n, rng):
        got = np.empty(len(sel) * width, dtype=np.uint8)
        assert K.byte_stream_split_decode_selected(buf, 3, len(buf) - 1, n, width, sel, got) == len(
            sel
        )
        np.testing.assert_array_equal(got.reshape(-1, width), rows[sel])
        got[:] = 0
        assert K.gather_fixed(plain, 1, len(plain), n, width, sel, got) == len(sel)
        np.testing.assert_array_equal(got.reshape(-1, width), rows[sel])
    if n:
        assert K.byte_stream_split_decode(buf, 3, len(buf) - 2, n, width, out) == K.ERR_TRUNCATED
        sel = np.array([n - 1], np.int64)
        assert K.gather_fixed(plain, 1, len(plain) - 1, n, width, sel, out) == K.ERR_TRUNCATED


@examples
@given(st.lists(st.booleans(), max_size=300), st.integers(0, 2**32))
def test_unpack_bool_plain(bits, seed):
    rng = random.Random(seed)
    n = len(bits)
    enc = bitpack([int(b) for b in bits], 1)
    buf = u8(b"\xff" + enc)
    out = np.empty(n, dtype=np.uint8)
    assert K.unpack_bool_plain(buf, 1, len(buf), n, out) == n
    assert out.tolist() == [int(b) for b in bits]
    for sel in selections(n, rng):
        got = np.empty(len(sel), dtype=np.uint8)
        assert K.unpack_bool_plain_selected(buf, 1, len(buf), n, sel, got) == len(sel)
        assert got.tolist() == [int(bits[i]) for i in sel]
    if n:
        assert K.unpack_bool_plain(buf, 1, len(buf) - 1, n, out) == K.ERR_TRUNCATED


# --------------------------------------------------------------------------- xxHash64, Bloom


def xx_many(values: list[bytes]) -> np.ndarray:
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum([len(v) for v in values], out=offsets[1:])
    out = np.empty(len(values), dtype=np.uint64)
    assert K.xxhash64_values(u8(b"".join(values)), offsets, out) == len(values)
    return out


@examples
@given(st.lists(st.binary(max_size=100), max_size=50))
def test_xxhash64_matches_xxhash(values):
    assert xx_many(values).tolist() == [xxhash.xxh64_intdigest(v) for v in values]


def test_xxhash64_long_and_fixed_width():
    rng = random.Random(1)
    values = [rng.randbytes(n) for n in (0, 31, 32, 33, 63, 64, 1000, 100_003)]
    assert xx_many(values).tolist() == [xxhash.xxh64_intdigest(v) for v in values]
    ints = np.array([0, 1, -1, 2**62], dtype="<i8")
    out = np.empty(4, np.uint64)
    K.xxhash64_values(ints.view(np.uint8), np.arange(5, dtype=np.int64) * 8, out)
    assert out.tolist() == [
        xxhash.xxh64_intdigest(int(v).to_bytes(8, "little", signed=True)) for v in ints
    ]
    bad = np.array([0, 5], np.int64)
    assert K.xxhash64_values(u8(b"abc"), bad, out) == K.ERR_BAD_LENGTH


def thrift_struct(buf: np.ndarray | bytes, pos: int) -> tuple[dict, int]:
    """Minimal thrift compact-protocol struct reader: {field id: value}, end position."""
    b = bytes(buf)

    def varint(p):
        v = s = 0
        while True:
            c = b[p]
            p += 1
            v |= (c & 0x7F) << s
            s += 7
            if c < 0x80:
                return v, p

    def value(t, p):
        if t in (1, 2):
            return t == 1, p
        if t == 3:
            return b[p], p + 1
        if t in (4, 5, 6):
            v, p = varint(p)
            return (v >> 1) ^ -(v & 1), p
        if t == 7:
            return b[p : p + 8], p + 8
        if t == 8:
            n, p = varint(p)
            return b[p : p + n], p + n
        if t in (9, 10):
            h = b[p]
            p += 1
            n, et = h >> 4, h & 0x0F
            if n == 15:
                n, p = varint(p)
            items = []
            for _ in range(n):
                if et in (1, 2):
                    items.append(b[p] == 1)
                    p += 1
                else:
                    v, p = value(et, p)
                    items.append(v)
            return items, p
        if t == 12:
            return struct(p)
        raise ValueError(f"thrift type {t}")

    def struct(p):
        fields, fid = {}, 0
        while True:
            h = b[p]
            p += 1
            if h == 0:
                return fields, p
            d, t = h >> 4, h & 0x0F
            if d:
                fid += d
            else:
                z, p = varint(p)
                fid = (z >> 1) ^ -(z & 1)
            fields[fid], p = value(t, p)

    return struct(pos)


def test_bloom_filter_file():
    raw = (DATA / "bloom_filter.xxhash.bin").read_bytes()
    header, pos = thrift_struct(raw, 0)
    num_bytes = header[1]
    assert num_bytes == len(raw) - pos and num_bytes % 32 == 0
    words = np.frombuffer(raw[pos:], dtype="<u4").copy()
    present = [b"hello", b"parquet", b"bloom", b"filter"]
    absent = [f"absent-{i}".encode() for i in range(1000)]
    out = np.empty(len(present) + len(absent), dtype=np.uint8)
    assert K.bloom_check(words, xx_many(present + absent), out) == len(out)
    assert out[:4].tolist() == [1, 1, 1, 1]
    assert out[4:].mean() < 0.05, "false positive rate of a filter holding 4 values"
    rebuilt = np.zeros_like(words)
    K.bloom_insert(rebuilt, xx_many(present))
    np.testing.assert_array_equal(rebuilt, words)


def test_bloom_insert_then_check():
    rng = np.random.default_rng(3)
    words = np.zeros(8 * 64, dtype=np.uint32)
    hashes = rng.integers(0, 2**64, 500, dtype=np.uint64)
    assert K.bloom_insert(words, hashes) == 500
    out = np.empty(500, dtype=np.uint8)
    K.bloom_check(words, hashes, out)
    assert out.all(), "no false negatives"
    others = rng.integers(0, 2**64, 5000, dtype=np.uint64)
    out = np.empty(5000, dtype=np.uint8)
    K.bloom_check(words, others, out)
    assert out.mean() < 0.2
    assert K.bloom_check(words[:7], hashes, out) == K.ERR_BAD_LENGTH
    assert K.bloom_insert(words[:0], hashes) == K.ERR_BAD_LENGTH


# --------------------------------------------------------------------------- real files


def column_pages(path: Path, column: int):
    """(page header fields, page body) of every page of ``column`` (uncompressed files only)."""
    md = pq.ParquetFile(path).metadata
    raw = np.fromfile(path, dtype=np.uint8)
    for rg in range(md.num_row_groups):
        cc = md.row_group(rg).column(column)
        assert cc.compression == "UNCOMPRESSED"
        pos = cc.data_page_offset
        if cc.has_dictionary_page and cc.dictionary_page_offset:
            pos = min(pos, cc.dictionary_page_offset)
        end = pos + cc.total_compressed_size
        while pos < end:
            header, body = thrift_struct(raw[pos : pos + 1000], 0)
            body += pos
            size = header[3]
            yield header, raw[body : body + size]
            pos = body + size


def decode_values(page, pos, encoding, ptype, count, dictionary):
    """Non-null values of a page body from ``pos`` as a Python list."""
    end = len(page)
    if encoding == 5:  # DELTA_BINARY_PACKED
        out = np.empty(count, np.int64)
        assert K.delta_binary_packed_decode(page, pos, end, count, out) >= 0
        # INT32 writers wrap at 32 bits: the low half of the 64-bit result is the value
        return (out.astype(np.int32) if ptype == "INT32" else out).tolist()
    if encoding in (8, 2):  # RLE_DICTIONARY, PLAIN_DICTIONARY
        codes = np.empty(count, np.int32)
        assert K.rle_bp_decode(page, pos + 1, end, int(page[pos]), count, codes) == count
        assert K.check_dict_indices(codes, count, len(dictionary)) == -1
        return [dictionary[c] for c in codes]
    if encoding == 6:  # DELTA_LENGTH_BYTE_ARRAY
        lengths = np.empty(count, np.int64)
        p = K.delta_binary_packed_decode(page, pos, end, count, lengths)
        assert p >= 0
        starts = p + np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        return gather_all(page, starts, lengths)
    if encoding == 7:  # DELTA_BYTE_ARRAY
        pre = np.empty(count, np.int64)
        suf = np.empty(count, np.int64)
        p = K.delta_binary_packed_decode(page, pos, end, count, pre)
        p = K.delta_binary_packed_decode(page, p, end, count, suf)
        offsets = np.empty(count + 1, np.int64)
        data = np.empty(K.delta_byte_array_size(pre, suf), np.uint8)
        assert K.delta_byte_array_build(pre, suf, page, p, end, offsets, data) == end
        return [data[offsets[i] : offsets[i + 1]].tobytes() for i in range(count)]
    if encoding == 9:  # BYTE_STREAM_SPLIT
        out = np.empty(count * 8, np.uint8)
        assert K.byte_stream_split_decode(page, pos, end, count, 8, out) == count
        return out.view(np.float64).tolist()
    if encoding == 3 and ptype == "BOOLEAN":  # RLE booleans: 4-byte length prefix
        out = np.empty(count, np.int32)
        n = int.from_bytes(page[pos : pos + 4].tobytes(), "little")
        assert K.rle_bp_decode(page, pos + 4, pos + 4 + n, 1, count, out) == count
        return [bool(v) for v in out]
    assert encoding == 0, encoding
    if ptype == "BOOLEAN":
        out = np.empty(count, np.uint8)
        assert K.unpack_bool_plain(page, pos, end, count, out) == count
        return [bool(v) for v in out]
    if ptype == "BYTE_ARRAY":
        starts = np.empty(count, np.int64)
        lengths = np.empty(count, np.int64)
        assert K.plain_byte_array_locate(page, pos, end, count, starts, lengths) == end
        return gather_all(page, starts, lengths)
    dtype = {"INT32": "<i4", "INT64": "<i8", "DOUBLE": "<f8"}[ptype]
    return np.frombuffer(page[pos:end].tobytes(), dtype=dtype).tolist()


def gather_all(page, starts, lengths):
    idx = np.arange(len(starts), dtype=np.int64)
    offsets = np.empty(len(idx) + 1, np.int64)
    data = np.empty(K.gather_bytes_size(lengths, idx), np.uint8)
    assert K.gather_bytes(page, starts, lengths, idx, offsets, data) == len(data)
    return [data[offsets[i] : offsets[i + 1]].tobytes() for i in range(len(idx))]


def read_column_with_kernels(path: Path, column: int) -> list:
    """Non-null values of a flat column, page by page."""
    md = pq.ParquetFile(path).metadata
    ptype = md.schema.column(column).physical_type
    max_def = md.schema.column(column).max_definition_level
    values, dictionary = [], None
    for header, page in column_pages(path, column):
        if header[1] == 2:  # dictionary page
            n = header[7][1]
            dictionary = decode_values(page, 0, 0, ptype, n, None)
            continue
        if header[1] == 0:  # v1: levels with a 4-byte length prefix
            dph = header[5]
            num_values, encoding, pos = dph[1], dph[2], 0
            nonnull = num_values
            if max_def:
                n = int.from_bytes(page[:4].tobytes(), "little")
                levels = np.empty(num_values, np.int32)
                assert (
                    K.rle_bp_decode(page, 4, 4 + n, max_def.bit_length(), num_values, levels)
                    == num_values
                )
                nonnull = int((levels == max_def).sum())
                pos = 4 + n
        else:
            dph = header[8]
            num_values, encoding = dph[1], dph[4]
            def_len, rep_len = dph.get(5, 0), dph.get(6, 0)
            assert rep_len == 0
            nonnull = num_values
            if max_def:
                levels = np.empty(num_values, np.int32)
                assert (
                    K.rle_bp_decode(page, 0, def_len, max_def.bit_length(), num_values, levels)
                    == num_values
                )
                nonnull = int((levels == max_def).sum())
                assert nonnull == num_values - dph[2]
            pos = def_len
        values += decode_values(page, pos, encoding, ptype, nonnull, dictionary)
    return values


def pyarrow_values(path: Path, column: int) -> list:
    col = pq.read_table(path).column(column).drop_null()
    if pa.types.is_string(col.type) or pa.types.is_binary(col.type):
        return [v.encode() if isinstance(v, str) else v for v in col.to_pylist()]
    return col.to_pylist()


@pytest.fixture(scope="module")
def pyarrow_file(tmp_path_factory) -> Path:
    rng = np.random.default_rng(11)
    n = 20_000
    walk = np.cumsum(rng.integers(-1000, 1000, n)).astype(np.int64)
    walk[::997] = rng.integers(-(2**63), 2**63 - 1, len(walk[::997]), dtype=np.int64)
    mask = rng.random(n) < 0.1
    words = np.array([f"k{i:05d}-{'x' * (i % 7)}" for i in rng.integers(0, 3000, n)])
    table = pa.table(
        {
            "d64": walk,
            "d32": pa.array(rng.integers(-(2**31), 2**31 - 1, n, dtype=np.int32)),
            "dnull": pa.array(walk, mask=mask),
            "dlba": pa.array(words, mask=mask),
            "dba": pa.array(np.sort(words)),
            "bss": rng.standard_normal(n),
            "plain_s": pa.array(words, mask=mask),
            "bools": pa.array(rng.random(n) < 0.3, mask=mask),
            "rle_b": pa.array(rng.random(n) < 0.5),
            "dict_s": pa.array(words, mask=mask),
        }
    )
    path = tmp_path_factory.mktemp("kernels") / "encodings.parquet"
    pq.write_table(
        table,
        path,
        use_dictionary=["dict_s"],
        column_encoding={
            "d64": "DELTA_BINARY_PACKED",
            "d32": "DELTA_BINARY_PACKED",
            "dnull": "DELTA_BINARY_PACKED",
            "dlba": "DELTA_LENGTH_BYTE_ARRAY",
            "dba": "DELTA_BYTE_ARRAY",
            "bss": "BYTE_STREAM_SPLIT",
            "plain_s": "PLAIN",
            "bools": "PLAIN",
            "rle_b": "RLE",
        },
        compression="none",
        data_page_version="2.0",
        data_page_size=16_000,
        row_group_size=12_000,
    )
    return path


@pytest.mark.parametrize(
    "column", ["d64", "d32", "dnull", "dlba", "dba", "bss", "plain_s", "bools", "rle_b", "dict_s"]
)
def test_pyarrow_written_pages(pyarrow_file, column):
    index = pq.ParquetFile(pyarrow_file).schema_arrow.get_field_index(column)
    assert read_column_with_kernels(pyarrow_file, index) == pyarrow_values(pyarrow_file, index)


@pytest.mark.parametrize(
    "name",
    [
        "delta_binary_packed.parquet",
        "delta_encoding_required_column.parquet",
        "delta_encoding_optional_column.parquet",
        "delta_byte_array.parquet",
    ],
)
def test_parquet_testing_delta_files(name):
    path = DATA / name
    for column in range(pq.ParquetFile(path).metadata.num_columns):
        assert read_column_with_kernels(path, column) == pyarrow_values(path, column), column


# --------------------------------------------------------------------------- robustness


def _call_all(buf: np.ndarray, rng: random.Random) -> list[int]:
    """Every kernel on ``buf`` with random parameters; returns their results."""
    n = len(buf)
    pos = rng.randint(0, n)
    end = rng.randint(pos, n)
    count = rng.choice([0, 1, 7, 8, 9, 100, 1000, 5000])
    sel = np.array(sorted(rng.sample(range(count), min(count, rng.randint(0, 50)))), np.int64)
    width = rng.randint(0, 33)
    i32 = np.empty(count, np.int32)
    i64 = np.empty(count, np.int64)
    s32 = np.empty(len(sel), np.int32)
    s64 = np.empty(len(sel), np.int64)
    res = [
        K.rle_bp_decode(buf, pos, end, width, count, i32),
        K.rle_bp_decode_selected(buf, pos, end, width, count, sel, s32),
        K.delta_binary_packed_decode(buf, pos, end, count, i64),
        K.delta_binary_packed_decode_selected(buf, pos, end, count, sel, s64),
    ]
    starts = np.empty(count, np.int64)
    r = K.plain_byte_array_locate(buf, pos, end, count, starts, i64)
    res.append(r)
    if r >= 0:
        idx = np.arange(count, dtype=np.int64)
        data = np.empty(K.gather_bytes_size(i64, idx), np.uint8)
        res.append(K.gather_bytes(buf, starts, i64, idx, np.empty(count + 1, np.int64), data))
    fw = rng.choice([1, 4, 8, 12])
    out = np.empty(count * fw, np.uint8)
    res += [
        K.byte_stream_split_decode(buf, pos, end, count, fw, out),
        K.byte_stream_split_decode_selected(buf, pos, end, count, fw, sel, out),
        K.gather_fixed(buf, pos, end, count, fw, sel, out),
        K.unpack_bool_plain(buf, pos, end, count, out),
        K.unpack_bool_plain_selected(buf, pos, end, count, sel, out),
    ]
    # delta byte array on whatever lengths the delta decoder produced from the bytes
    p = K.delta_binary_packed_decode(buf, pos, end, count, i64)
    suf = np.empty(count, np.int64)
    q = K.delta_binary_packed_decode(buf, p, end, count, suf) if p >= 0 else p
    if q >= 0:
        size = K.delta_byte_array_size(i64, suf)
        res.append(size)
        if 0 <= size < 10**7:
            offs = np.empty(count + 1, np.int64)
            res.append(
                K.delta_byte_array_build(i64, suf, buf, q, end, offs, np.empty(size, np.uint8))
            )
    return res


def _valid_streams(rng: random.Random) -> list[bytes]:
    vals = [rng.randrange(1 << 13) for _ in range(rng.randint(1, 300))]
    words = [rng.randbytes(rng.randint(0, 9)) for _ in range(rng.randint(1, 50))]
    return [
        rle_bp_encode(vals, 13, rng),
        delta_encode([rng.getrandbits(64) for _ in range(rng.randint(1, 600))]),
        delta_byte_array_encode(sorted(words)),
        b"".join(len(w).to_bytes(4, "little") + w for w in words),
    ]


def _fuzz(rounds: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    for _ in range(rounds):
        kind = rng.random()
        if kind < 0.4:
            data = rng.randbytes(rng.randint(0, 200))
        else:
            data = rng.choice(_valid_streams(rng))
            if kind < 0.8:
                data = data[: rng.randint(0, len(data))]
            else:
                b = bytearray(data)
                for _ in range(rng.randint(1, 4)):
                    if b:
                        b[rng.randrange(len(b))] = rng.randrange(256)
                data = bytes(b)
        for r in _call_all(u8(data), rng):
            assert isinstance(r, (int, np.integer)) and (r >= 0 or r in K.ERROR_MESSAGES), r


def test_random_and_truncated_inputs():
    _fuzz(60 if SMALL else 1500)


def test_truncated_streams_fail_or_decode_correctly():
    rng = random.Random(5)
    for _ in range(5 if SMALL else 40):
        vals = [rng.randrange(1 << 9) for _ in range(rng.randint(1, 200))]
        enc = rle_bp_encode(vals, 9, rng)
        deltas = [to_signed64(rng.getrandbits(40)) for _ in range(rng.randint(1, 400))]
        denc = delta_encode(deltas)
        for cut in range(0, len(enc), max(1, len(enc) // 25)):
            out = np.empty(len(vals), np.int32)
            r = K.rle_bp_decode(u8(enc[:cut]), 0, cut, 9, len(vals), out)
            assert r == K.ERR_TRUNCATED or (r == len(vals) and out.tolist() == vals)
        for cut in range(0, len(denc), max(1, len(denc) // 25)):
            out = np.empty(len(deltas), np.int64)
            r = K.delta_binary_packed_decode(u8(denc[:cut]), 0, cut, len(deltas), out)
            assert r < 0


def _run_self(env_extra: dict[str, str], *args: str) -> None:
    env = dict(os.environ, **env_extra)
    cmd = [sys.executable, "-m", "pytest", __file__, "-q", "-p", "no:cacheprovider", *args]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


@pytest.mark.skipif(JIT_DISABLED or SMALL, reason="already the pure-Python run")
def test_kernels_as_pure_python():
    _run_self(
        {"NUMBA_DISABLE_JIT": "1", "LAZYSCAN_KERNEL_TESTS": "small"},
        "-W",
        "ignore::RuntimeWarning",
        "-k",
        "not pyarrow_written and not parquet_testing and not as_pure_python and not bounds_checked",
    )


@pytest.mark.slow
@pytest.mark.skipif(JIT_DISABLED or SMALL, reason="needs the JIT")
def test_kernels_bounds_checked():
    """Fuzz with numba's bounds checking on: an out-of-range access raises IndexError.

    The bounds-checked machine code gets its own numba cache, kept between runs.
    """
    cache = Path(tempfile.gettempdir()) / "lazyscan-numba-boundscheck"
    _run_self(
        {
            "NUMBA_BOUNDSCHECK": "1",
            "NUMBA_CACHE_DIR": str(cache),
            "LAZYSCAN_KERNEL_TESTS": "small",
        },
        "-k",
        "random_and_truncated or truncated_streams or round_trip or huge",
    )


def test_selection_kernels_refuse_undersized_outputs():
    starts = np.array([0, 10], np.int64)
    ends = np.array([5, 20], np.int64)
    assert F.expand_runs(starts, ends, np.empty(14, np.int64)) == K.ERR_BAD_ARGUMENT
    assert F.expand_runs(starts, ends[:1], np.empty(15, np.int64)) == K.ERR_BAD_ARGUMENT
    out = np.empty(15, np.int64)
    assert F.expand_runs(starts, ends, out) == 15
    assert out.tolist() == [*range(5), *range(10, 20)]
    idx = np.array([1, 2, 3, 7], np.int64)  # two runs
    assert F.index_runs(idx, np.empty(1, np.int64), np.empty(3, np.int64)) == -1
    assert F.index_runs(idx, np.empty(2, np.int64), np.empty(1, np.int64)) == -1
    s2, e2 = np.empty(2, np.int64), np.empty(2, np.int64)
    assert F.index_runs(idx, s2, e2) == 2 and s2.tolist() == [1, 7] and e2.tolist() == [4, 8]
    assert F.index_runs(idx, np.empty(0, np.int64), np.empty(0, np.int64)) == -1
    pages = np.array([0, 8], np.int64)
    short = np.empty(1, np.int64)
    assert K.plan_pages(starts, ends, out, pages, pages + 8, short, short, short) == K.ERR_BAD_ARGUMENT


@given(
    n=st.integers(0, 300),
    entries=st.integers(1, 50),
    null_share=st.sampled_from([0.0, 0.3]),
    null_passes=st.booleans(),
    seed=st.integers(0, 2**31),
)
@settings(max_examples=EXAMPLES, deadline=None)
def test_dictionary_hits_equals_a_numpy_gather(n, entries, null_share, null_passes, seed):
    rng = np.random.default_rng(seed)
    valid = rng.random(n) >= null_share
    codes = rng.integers(0, entries, int(valid.sum())).astype(np.int32)
    passes = rng.random(entries) < 0.4
    rows = np.sort(rng.choice(10 * n + 1, n, replace=False)).astype(np.int64)
    mask = np.full(n, null_passes)
    mask[valid] = passes[codes]
    out = np.empty(n, np.int64)
    has_valid = null_share > 0
    got = K.dictionary_hits(codes, passes, valid if has_valid else np.ones(0, bool), has_valid, null_passes, rows, out)
    assert got == mask.sum()
    assert np.array_equal(out[:got], rows[mask])


def test_dictionary_hits_rejects_codes_outside_the_dictionary():
    rows = np.arange(3, dtype=np.int64)
    out = np.empty(3, np.int64)
    passes = np.ones(2, bool)
    empty = np.ones(0, bool)
    assert K.dictionary_hits(np.array([0, 2, 1], np.int32), passes, empty, False, False, rows, out) == K.ERR_BAD_INDEX
    assert K.dictionary_hits(np.array([0, -1, 1], np.int32), passes, empty, False, False, rows, out) == K.ERR_BAD_INDEX
    # fewer codes than valid rows, or an undersized output: refused, not read past the end
    assert K.dictionary_hits(np.array([0], np.int32), passes, empty, False, False, rows, out) == K.ERR_BAD_ARGUMENT
    assert K.dictionary_hits(np.array([0, 1, 1], np.int32), passes, empty, False, False, rows, np.empty(2, np.int64)) == K.ERR_BAD_ARGUMENT
