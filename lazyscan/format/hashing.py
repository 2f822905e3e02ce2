"""XXH64 with seed 0, the hash of Parquet's split-block Bloom filters (BloomFilter.md in
parquet-format) and of lazyscan's key filters, as numba kernels.

- :func:`xxhash64`: the hash of ``data[p:p + n]``, for kernels that hash values in place;
- :func:`xxhash64_values`: the hash of each value of an offsets/data layout, bounds checked.
"""

from __future__ import annotations

import numpy as np

from lazyscan.format.kernels import ERR_BAD_ARGUMENT, ERR_BAD_LENGTH, kernel_jit, load_u32, load_u64

_jit = kernel_jit(nogil=True, read_only=("data",))

_P1 = np.uint64(11400714785074694791)
_P2 = np.uint64(14029467366897019727)
_P3 = np.uint64(1609587929392839161)
_P4 = np.uint64(9650029242287828579)
_P5 = np.uint64(2870177450012600261)
_V4_SEED0 = np.uint64(2**64 - 11400714785074694791)


@_jit
def _rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@_jit
def _xx_round(acc, lane):
    acc += lane * _P2
    return _rotl(acc, 31) * _P1


@_jit
def _xx_merge(acc, v):
    acc ^= _xx_round(np.uint64(0), v)
    return acc * _P1 + _P4


@_jit
def xxhash64(data, p, n):
    """XXH64 (seed 0) of ``data[p:p + n]`` (caller checked bounds)."""
    end = p + n
    if n >= 32:
        v1 = _P1 + _P2
        v2 = _P2
        v3 = np.uint64(0)
        v4 = _V4_SEED0
        limit = end - 32
        while p <= limit:
            v1 = _xx_round(v1, load_u64(data, p))
            v2 = _xx_round(v2, load_u64(data, p + 8))
            v3 = _xx_round(v3, load_u64(data, p + 16))
            v4 = _xx_round(v4, load_u64(data, p + 24))
            p += 32
        h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        h = _xx_merge(h, v1)
        h = _xx_merge(h, v2)
        h = _xx_merge(h, v3)
        h = _xx_merge(h, v4)
    else:
        h = _P5
    h += np.uint64(n)
    while p + 8 <= end:
        h ^= _xx_round(np.uint64(0), load_u64(data, p))
        h = _rotl(h, 27) * _P1 + _P4
        p += 8
    if p + 4 <= end:
        h ^= load_u32(data, p) * _P1
        h = _rotl(h, 23) * _P2 + _P3
        p += 4
    while p < end:
        h ^= np.uint64(data[p]) * _P5
        h = _rotl(h, 11) * _P1
        p += 1
    h ^= h >> np.uint64(33)
    h *= _P2
    h ^= h >> np.uint64(29)
    h *= _P3
    h ^= h >> np.uint64(32)
    return h


@_jit
def xxhash64_values(data, offsets, out):
    """``out[i]`` (uint64) = XXH64, seed 0, of ``data[offsets[i]:offsets[i + 1]]``.

    ``data`` uint8, ``offsets`` int32/int64 (``n + 1``). For fixed-width values pass their
    little-endian bytes with ``offsets = arange(n + 1) * width``. Returns ``n``.
    """
    n = offsets.shape[0] - 1
    if n < 0 or out.shape[0] < n:
        return ERR_BAD_ARGUMENT
    size = data.shape[0]
    for i in range(n):
        s = np.int64(offsets[i])
        e = np.int64(offsets[i + 1])
        if s < 0 or e < s or e > size:
            return ERR_BAD_LENGTH
    for i in range(n):
        s = np.int64(offsets[i])
        out[i] = xxhash64(data, s, np.int64(offsets[i + 1]) - s)
    return n
