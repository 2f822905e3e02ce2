"""Unsigned LEB128 varints and zigzag, as both formats store integers: Thrift's compact protocol
and Parquet's encodings (RLE/bit-packing headers, DELTA_BINARY_PACKED), protobuf (ORC's footers
and row indexes) and ORC's integer run-length encodings.

A varint holds at most 64 bits: ten bytes, the tenth with at most its lowest bit set. One
reader for Python code (:func:`read_uvarint`, footers and other metadata) and one for kernels
(:func:`uvarint`, inlined into the caller); both refuse a varint that is cut short or longer.
ORC's decimals (varints of up to 128 bits) are decoded in :mod:`lazyscan.orc.kernels`.
"""

from __future__ import annotations

import numpy as np

from lazyscan.errors import LazyScanError
from lazyscan.format.kernels import ERR_BAD_HEADER, ERR_TRUNCATED, kernel_jit

_jit_inline = kernel_jit(nogil=True, inline="always", read_only=("buf",))


class VarintError(LazyScanError):
    """A varint cut short, or longer than 64 bits. Readers of a format turn it into their own
    error (``ThriftError``, ``ProtoError``) naming what they were reading."""


def read_uvarint(buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    """The unsigned varint at ``buf[pos:end]``: (value, position after it)."""
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise VarintError("data ends inside a varint")
        b = buf[pos]
        pos += 1
        if shift == 63 and b > 1:
            raise VarintError("varint longer than 64 bits")
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def zigzag(u: int) -> int:
    """The signed integer a zigzag-encoded ``u`` stands for."""
    return (u >> 1) ^ -(u & 1)


@_jit_inline
def uvarint(buf, pos, end):
    """(value as uint64, position after it) of the varint at ``buf[pos:end]``; the position is
    ``ERR_TRUNCATED`` when the varint is cut short, ``ERR_BAD_HEADER`` when it is longer than
    64 bits."""
    result = np.uint64(0)
    shift = 0
    while True:
        if pos >= end:
            return result, ERR_TRUNCATED
        b = np.uint64(buf[pos])
        pos += 1
        if shift == 63 and b > np.uint64(1):
            return result, ERR_BAD_HEADER
        result |= (b & np.uint64(0x7F)) << np.uint64(shift)
        if b < np.uint64(0x80):
            return result, pos
        shift += 7


@_jit_inline
def unzigzag(u):
    """The int64 a zigzag-encoded uint64 ``u`` stands for."""
    return np.int64(u >> np.uint64(1)) ^ -np.int64(u & np.uint64(1))
