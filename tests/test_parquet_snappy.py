"""The resumable snappy kernels against cramjam: whole streams, prefixes, resumption, corrupt input."""

from __future__ import annotations

import cramjam
import numpy as np
import pytest

from lazyscan.format import snappy


def _data(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "random":
        return rng.integers(0, 256, n, dtype=np.uint8)
    if kind == "few symbols":
        return rng.integers(0, 4, n, dtype=np.uint8)
    if kind == "runs":
        return np.repeat(rng.integers(0, 256, n // 7 + 1, dtype=np.uint8), 7)[:n]
    # sorted int64 keys, as a dictionary page of a clustered column holds them
    return np.cumsum(rng.integers(0, 5, n // 8 + 1)).astype("<i8").view(np.uint8)[:n].copy()


def _compress(data: np.ndarray) -> np.ndarray:
    return np.frombuffer(bytes(cramjam.snappy.compress_raw(data.tobytes())), np.uint8)


KINDS = ["random", "few symbols", "runs", "sorted keys"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [0, 1, 15, 16, 17, 64, 65, 1000, 70_000, 300_000])
def test_whole_stream_equals_cramjam(kind: str, n: int) -> None:
    data = _data(kind, n, np.random.default_rng(n))
    comp = _compress(data)
    out = np.full(n + 9, 0xAB, np.uint8)
    assert snappy.decompress(comp, 0, len(comp), out, 3, 3 + n) == n
    assert (out[3 : 3 + n] == data).all()
    # nothing written outside the target range
    assert (out[:3] == 0xAB).all() and (out[3 + n :] == 0xAB).all()


@pytest.mark.parametrize("kind", KINDS)
def test_prefixes_and_resumption(kind: str) -> None:
    rng = np.random.default_rng(7)
    data = _data(kind, 200_000, rng)
    comp = _compress(data)
    n = len(data)
    for _ in range(20):
        state = np.empty(snappy.STATE_FIELDS, np.int64)
        out = np.zeros(n, np.uint8)
        assert snappy.start(comp, 0, len(comp), 0, n, state) == 0
        produced = 0
        for need in np.sort(rng.integers(0, n + 1, 4)).tolist():
            got = snappy.until(comp, out, state, need)
            assert need <= got <= n and got >= produced
            # what was produced is exact; it stops within one element of the request
            assert (out[:got] == data[:got]).all()
            assert got - need <= 65_536
            produced = got
        assert snappy.until(comp, out, state, n) == n
        assert (out == data).all()


def test_a_wrong_declared_length_is_refused() -> None:
    data = np.arange(1000, dtype=np.uint16).view(np.uint8)
    comp = _compress(data)
    out = np.empty(4000, np.uint8)
    state = np.empty(snappy.STATE_FIELDS, np.int64)
    assert snappy.start(comp, 0, len(comp), 0, len(data) - 1, state) == snappy.ERR_CORRUPT
    assert snappy.decompress(comp, 0, len(comp), out, 0, len(data) + 1) == snappy.ERR_CORRUPT


def test_trailing_bytes_and_truncation_are_refused() -> None:
    data = np.random.default_rng(0).integers(0, 8, 5000, dtype=np.uint8)
    comp = _compress(data)
    out = np.empty(len(data), np.uint8)
    longer = np.concatenate([comp, np.array([0, 0], np.uint8)])
    assert snappy.decompress(longer, 0, len(longer), out, 0, len(data)) == snappy.ERR_CORRUPT
    for cut in (1, len(comp) // 2, len(comp) - 1):
        assert snappy.decompress(comp, 0, cut, out, 0, len(data)) == snappy.ERR_CORRUPT


def test_corrupt_streams_never_write_outside_their_range() -> None:
    rng = np.random.default_rng(3)
    for trial in range(400):
        data = _data(KINDS[trial % 4], int(rng.integers(1, 20_000)), rng)
        comp = _compress(data).copy()
        for _ in range(int(rng.integers(1, 6))):
            comp[int(rng.integers(0, len(comp)))] = rng.integers(0, 256)
        n = len(data)
        out = np.full(n + 32, 0xCD, np.uint8)
        got = snappy.decompress(comp, 0, len(comp), out, 16, 16 + n)
        assert got in (n, snappy.ERR_CORRUPT)
        assert (out[:16] == 0xCD).all() and (out[16 + n :] == 0xCD).all()
        # a back-reference before the start of the stream is refused, not read
        if got == n:
            ok = cramjam.snappy.decompress_raw(comp.tobytes())
            assert bytes(ok) == out[16 : 16 + n].tobytes()


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _random_stream(rng: np.random.Generator, elements: int) -> tuple[np.ndarray, bytes]:
    """A valid snappy stream using every element form a compressor may emit (literals with 0, 1 and 3
    length bytes; copies with 1-, 2- and 4-byte offsets, from 1 byte back to 70,000), and the
    bytes it decompresses to."""
    out = bytearray(rng.integers(0, 256, 70_000, dtype=np.uint8).tobytes())
    body = bytearray([62 << 2, (70_000 - 1) & 0xFF, ((70_000 - 1) >> 8) & 0xFF, (70_000 - 1) >> 16])
    body += out
    for _ in range(elements):
        form = int(rng.integers(0, 6))
        if form <= 1:
            n = int(rng.integers(1, 17)) if form == 0 else int(rng.integers(17, 257))
            lit = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
            if n <= 60:
                body.append((n - 1) << 2)
            else:
                body.append(60 << 2)
                body.append(n - 1)
            body += lit
            out += lit
            continue
        offset = int(rng.choice([1, 2, 3, 5, 7, 8, 9, 15, 16, 100, 2047, 2048, 65535, 65536, 70_000]))
        offset = min(offset, len(out))
        if form == 2 and offset < 2048:
            n = int(rng.integers(4, 12))
            body += bytes([1 | ((n - 4) << 2) | ((offset >> 8) << 5), offset & 0xFF])
        elif form <= 3 and offset < 65536:
            n = int(rng.integers(1, 65))
            body += bytes([2 | ((n - 1) << 2)]) + offset.to_bytes(2, "little")
        else:
            n = int(rng.integers(1, 65))
            body += bytes([3 | ((n - 1) << 2)]) + offset.to_bytes(4, "little")
        for _k in range(n):
            out.append(out[len(out) - offset])
    return np.frombuffer(bytes(out), np.uint8), _varint(len(out)) + bytes(body)


def test_every_element_form_equals_cramjam() -> None:
    rng = np.random.default_rng(11)
    for _trial in range(30):
        data, stream = _random_stream(rng, int(rng.integers(1, 3000)))
        assert bytes(cramjam.snappy.decompress_raw(stream)) == data.tobytes()
        comp = np.frombuffer(stream, np.uint8)
        n = len(data)
        out = np.full(n + 16, 0xEE, np.uint8)
        assert snappy.decompress(comp, 0, len(comp), out, 0, n) == n
        assert (out[:n] == data).all() and (out[n:] == 0xEE).all()
        # resumed in steps that end anywhere, the output is the same
        state = np.empty(snappy.STATE_FIELDS, np.int64)
        part = np.zeros(n, np.uint8)
        assert snappy.start(comp, 0, len(comp), 0, n, state) == 0
        for need in [*np.sort(rng.integers(0, n + 1, 5)).tolist(), n]:
            got = snappy.until(comp, part, state, need)
            assert got >= need and (part[:got] == data[:got]).all()


def test_corrupt_element_forms_never_write_outside_their_range() -> None:
    rng = np.random.default_rng(12)
    for _trial in range(300):
        data, stream = _random_stream(rng, int(rng.integers(1, 400)))
        comp = np.frombuffer(stream, np.uint8).copy()
        # corrupt the elements after the first literal, where the fast path runs
        for _ in range(int(rng.integers(1, 4))):
            comp[int(rng.integers(70_005, len(comp)))] = rng.integers(0, 256)
        n = len(data)
        out = np.full(n + 160, 0xCD, np.uint8)
        got = snappy.decompress(comp, 0, len(comp), out, 80, 80 + n)
        assert got in (n, snappy.ERR_CORRUPT)
        assert (out[:80] == 0xCD).all() and (out[80 + n :] == 0xCD).all()
        if got == n:
            assert bytes(cramjam.snappy.decompress_raw(comp.tobytes())) == out[80 : 80 + n].tobytes()


def test_declared_length() -> None:
    data = np.arange(3000, dtype=np.uint16).view(np.uint8)
    comp = _compress(data)
    assert snappy.declared_length(comp, 0, len(comp)) == len(data)
    assert snappy.declared_length(comp, 0, 1) == snappy.ERR_CORRUPT  # the varint is cut short
    endless = np.full(8, 0xFF, np.uint8)
    assert snappy.declared_length(endless, 0, 8) == snappy.ERR_CORRUPT
    assert snappy.declared_length(comp, 5, 4) == snappy.ERR_CORRUPT
