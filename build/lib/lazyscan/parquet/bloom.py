"""Parquet split-block Bloom filters (BloomFilter.md).

A filter is a bitset of 32-byte blocks; a value is hashed with xxHash64 (seed 0) over its PLAIN
encoding without length prefix, the upper 32 bits pick a block and the lower 32 bits set one bit
in each of the block's eight words. :class:`BloomFilter` probes values of a column given in the
Arrow storage domain of :mod:`lazyscan.parquet.statistics`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

import numpy as np

from lazyscan.parquet import kernels as K
from lazyscan.parquet.metadata import PhysicalType
from lazyscan.parquet.schema import ColumnDescriptor


class BloomFilter:
    """A split-block Bloom filter read from a file (or built for a join filter)."""

    __slots__ = ("words",)

    def __init__(self, words: np.ndarray) -> None:
        if words.dtype != np.uint32 or len(words) % 8 or len(words) == 0:
            raise ValueError("a split-block Bloom filter is a non-empty multiple of 8 uint32 words")
        self.words = words

    @property
    def num_bytes(self) -> int:
        return int(self.words.nbytes)

    def check_hashes(self, hashes: np.ndarray) -> np.ndarray:
        """Boolean per hash: might the value be in the set?"""
        out = np.empty(len(hashes), dtype=np.uint8)
        K.bloom_check(self.words, np.ascontiguousarray(hashes, dtype=np.uint64), out)
        return out.astype(bool)

    def might_contain(self, desc: ColumnDescriptor, values: Sequence[object]) -> np.ndarray:
        """Boolean per value (storage domain of ``desc``); True when it might be present."""
        return self.check_hashes(hash_values(desc, values))


def encode_plain(desc: ColumnDescriptor, value: object) -> bytes | None:
    """PLAIN encoding of one storage-domain value as Bloom filters hash it; None if unhashable."""
    pt = desc.physical_type
    try:
        if pt == PhysicalType.INT32:
            iv = int(value)  # type: ignore[call-overload]
            return (iv & 0xFFFFFFFF).to_bytes(4, "little")
        if pt == PhysicalType.INT64:
            iv = int(value)  # type: ignore[call-overload]
            return (iv & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little")
        if pt == PhysicalType.FLOAT:
            return struct.pack("<f", float(value))  # type: ignore[arg-type]
        if pt == PhysicalType.DOUBLE:
            return struct.pack("<d", float(value))  # type: ignore[arg-type]
        if pt == PhysicalType.BYTE_ARRAY:
            if isinstance(value, int):  # decimal stored as bytes: minimal big-endian form
                n = max(1, (value.bit_length() + 8) // 8)
                return value.to_bytes(n, "big", signed=True)
            return bytes(value)  # type: ignore[call-overload]
        if pt == PhysicalType.FIXED_LEN_BYTE_ARRAY:
            if isinstance(value, int):
                return value.to_bytes(desc.type_length, "big", signed=True)
            if isinstance(value, float):
                return np.float16(value).tobytes()
            b = bytes(value)  # type: ignore[call-overload]
            return b if len(b) == desc.type_length else None
    except (OverflowError, TypeError, ValueError):
        return None
    return None


def hash_bytes(items: Iterable[bytes]) -> np.ndarray:
    blobs = list(items)
    offsets = np.zeros(len(blobs) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in blobs], out=offsets[1:])
    data = np.frombuffer(b"".join(blobs), dtype=np.uint8) if blobs else np.empty(0, np.uint8)
    out = np.empty(len(blobs), dtype=np.uint64)
    K.xxhash64_values(data, offsets, out)
    return out


def hash_values(desc: ColumnDescriptor, values: Sequence[object]) -> np.ndarray:
    encoded = [encode_plain(desc, v) for v in values]
    if any(e is None for e in encoded):
        raise ValueError("value cannot be hashed for this column")
    return hash_bytes(e for e in encoded if e is not None)
