"""The resumable snappy kernels against cramjam: whole streams, prefixes, resumption, corrupt input."""

from __future__ import annotations

import cramjam
import numpy as np
import pytest

from lazyscan.parquet import snappy


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
