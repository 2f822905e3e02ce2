"""ORC Bloom filters (``BLOOM_FILTER_UTF8``): may a row group hold a value?

ORC hashes integers (and dates) with Thomas Wang's 64-bit integer hash, floating-point values
with the same hash of their IEEE bits, and strings and binaries with a 64-bit Murmur3 variant
(seed 104729) of their UTF-8 bytes. The ``k`` bit positions come from the two 32-bit halves of
the hash, ``h1 + i * h2`` for ``i = 1..k`` in 32-bit arithmetic, made non-negative by flipping
the bits, modulo the bit count (ORC specification, "Bloom Filter Index"; ORC-101 for UTF-8).
Probes run per predicate literal, never per row.
"""

from __future__ import annotations

import struct
from typing import Any

import pyarrow as pa

from lazyscan.orc.proto import BloomFilterEntry

_M64 = (1 << 64) - 1
_SEED = 104729
_C1 = 0x87C37B91114253D5
_C2 = 0x4CF5AD432745937F


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _fmix(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & _M64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & _M64
    return h ^ (h >> 33)


def murmur3_64(data: bytes) -> int:
    """ORC's 64-bit Murmur3 of ``data`` (unsigned)."""
    h = _SEED
    n = len(data)
    blocks = n // 8
    for i in range(blocks):
        k = int.from_bytes(data[8 * i : 8 * i + 8], "little")
        k = (k * _C1) & _M64
        k = _rotl(k, 31)
        k = (k * _C2) & _M64
        h ^= k
        h = (_rotl(h, 27) * 5 + 0x52DCE729) & _M64
    tail = data[8 * blocks :]
    if tail:
        k = int.from_bytes(tail, "little")
        k = (k * _C1) & _M64
        k = _rotl(k, 31)
        k = (k * _C2) & _M64
        h ^= k
    h ^= n
    return _fmix(h)


def long_hash(key: int) -> int:
    """Thomas Wang's 64-bit integer hash as ORC uses it (arithmetic shifts of a signed long)."""

    def sar(x: int, s: int) -> int:  # arithmetic shift right of a 64-bit two's-complement value
        return ((x - (1 << 64) if x >> 63 else x) >> s) & _M64

    k = key & _M64
    k = ((~k & _M64) + (k << 21)) & _M64
    k ^= sar(k, 24)
    k = (k + (k << 3) + (k << 8)) & _M64
    k ^= sar(k, 14)
    k = (k + (k << 2) + (k << 4)) & _M64
    k ^= sar(k, 28)
    return (k + (k << 31)) & _M64


def _test(entry: BloomFilterEntry, h: int) -> bool:
    bits = entry.bitset
    nbits = len(bits) * 64
    if nbits == 0 or entry.num_hash_functions <= 0:
        return True
    h1 = h & 0xFFFFFFFF
    h2 = h >> 32
    for i in range(1, entry.num_hash_functions + 1):
        combined = (h1 + i * h2) & 0xFFFFFFFF
        if combined >> 31:  # negative as a 32-bit int: flip every bit
            combined = ~combined & 0xFFFFFFFF
        pos = combined % nbits
        if not (int(bits[pos >> 6]) >> (pos & 63)) & 1:
            return False
    return True


def value_hash(value: Any, t: pa.DataType, utf8: bool) -> int | None:
    """The 64-bit hash ORC stores for ``value`` (Arrow storage domain of type ``t``); None when
    this kind of Bloom filter cannot answer for the type."""
    if pa.types.is_integer(t) or pa.types.is_date32(t):
        return long_hash(int(value))
    if pa.types.is_floating(t):
        return long_hash(struct.unpack("<q", struct.pack("<d", float(value)))[0])
    if (pa.types.is_string(t) or pa.types.is_binary(t)) and utf8:
        raw = value if isinstance(value, bytes) else str(value).encode()
        return murmur3_64(raw)
    return None  # decimals, timestamps, booleans, and strings of the pre-UTF-8 filter kind


def might_contain(entry: BloomFilterEntry, value: Any, t: pa.DataType) -> bool:
    """False only when the row group surely holds no ``value``."""
    h = value_hash(value, t, entry.utf8)
    return True if h is None else _test(entry, h)
