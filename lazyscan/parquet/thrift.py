"""Thrift compact protocol decoding, bounded.

Parquet's footer, page headers, page index and Bloom filter headers are Thrift structs in the
compact protocol. :func:`read_struct` decodes one struct generically into a ``dict`` keyed by field
id; :mod:`lazyscan.parquet.metadata` turns those dicts into typed objects. Every length read from
the input is checked against the bytes that remain, nesting depth is capped, and any violation
raises :class:`ThriftError` so that a corrupt file never makes the parser allocate or loop without
bound.
"""

from __future__ import annotations

import struct
from typing import Any

from lazyscan.format.varint import VarintError, read_uvarint

STOP = 0
BOOL_TRUE = 1
BOOL_FALSE = 2
BYTE = 3
I16 = 4
I32 = 5
I64 = 6
DOUBLE = 7
BINARY = 8
LIST = 9
SET = 10
MAP = 11
STRUCT = 12

MAX_DEPTH = 64

_unpack_double = struct.Struct("<d").unpack_from


class ThriftError(ValueError):
    """Malformed compact-protocol input."""


class CompactReader:
    """Reads compact-protocol values from ``data[pos:end]``."""

    __slots__ = ("data", "end", "pos")

    def __init__(self, data: bytes | memoryview, pos: int = 0, end: int | None = None) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end
        if not 0 <= pos <= self.end <= len(data):
            raise ThriftError("thrift buffer bounds out of range")

    def _byte(self) -> int:
        pos = self.pos
        if pos >= self.end:
            raise ThriftError("thrift data ends early")
        self.pos = pos + 1
        return self.data[pos]

    def varint(self) -> int:
        pos = self.pos
        if pos < self.end and self.data[pos] < 0x80:  # one byte: most field ids, lengths, counts
            self.pos = pos + 1
            return self.data[pos]
        try:
            result, self.pos = read_uvarint(self.data, pos, self.end)
        except VarintError as e:
            raise ThriftError(f"thrift {e}") from None
        return result

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def binary(self) -> bytes:
        n = self.varint()
        pos = self.pos
        if n > self.end - pos:
            raise ThriftError(f"thrift binary of {n} bytes exceeds the {self.end - pos} remaining")
        self.pos = pos + n
        return bytes(self.data[pos : pos + n])

    def value(self, ftype: int, depth: int) -> Any:
        if ftype in (I32, I64, I16):
            return self.zigzag()
        if ftype == BINARY:
            return self.binary()
        if ftype == STRUCT:
            return self.struct(depth + 1)
        if ftype == BOOL_TRUE:
            return True
        if ftype == BOOL_FALSE:
            return False
        if ftype == BYTE:
            b = self._byte()
            return b - 256 if b > 127 else b
        if ftype in (LIST, SET):
            return self.list(depth + 1)
        if ftype == DOUBLE:
            if self.end - self.pos < 8:
                raise ThriftError("thrift data ends inside a double")
            v = _unpack_double(self.data, self.pos)[0]
            self.pos += 8
            return v
        if ftype == MAP:
            return self.map(depth + 1)
        raise ThriftError(f"unknown thrift type {ftype}")

    def list(self, depth: int) -> list[Any]:
        if depth > MAX_DEPTH:
            raise ThriftError("thrift nesting too deep")
        header = self._byte()
        size = header >> 4
        etype = header & 0x0F
        if size == 15:
            size = self.varint()
        # every element takes at least one byte, except booleans packed in the header (none here)
        if size > self.end - self.pos:
            raise ThriftError(f"thrift list of {size} elements exceeds the remaining bytes")
        if etype in (BOOL_TRUE, BOOL_FALSE):
            return [self._byte() == BOOL_TRUE for _ in range(size)]
        if etype in (I32, I64, I16):
            zz = self.zigzag
            return [zz() for _ in range(size)]
        value = self.value
        return [value(etype, depth) for _ in range(size)]

    def map(self, depth: int) -> dict[Any, Any]:
        if depth > MAX_DEPTH:
            raise ThriftError("thrift nesting too deep")
        size = self.varint()
        if size == 0:
            return {}
        if 2 * size > self.end - self.pos:
            raise ThriftError(f"thrift map of {size} entries exceeds the remaining bytes")
        types = self._byte()
        ktype, vtype = types >> 4, types & 0x0F
        out = {}
        for _ in range(size):
            k = self.value(ktype, depth)
            if isinstance(k, (list, dict)):
                raise ThriftError("thrift map key is not a scalar")
            out[k] = self.value(vtype, depth)
        return out

    def field_header(self, last_id: int) -> tuple[int, int] | None:
        """(field id, type) of a struct's next field, the previous one's id being ``last_id``;
        None at the struct's end."""
        header = self._byte()
        if header == STOP:
            return None
        delta = header >> 4
        return (last_id + delta if delta else self.zigzag()), header & 0x0F

    def struct(self, depth: int = 0) -> dict[int, Any]:
        if depth > MAX_DEPTH:
            raise ThriftError("thrift nesting too deep")
        fields: dict[int, Any] = {}
        last_id = 0
        while True:
            header = self._byte()
            if header == STOP:
                return fields
            ftype = header & 0x0F
            delta = header >> 4
            if delta:
                fid = last_id + delta
            else:
                fid = self.zigzag()
            last_id = fid
            fields[fid] = self.value(ftype, depth)


def read_struct(data: bytes | memoryview, pos: int = 0, end: int | None = None) -> tuple[dict[int, Any], int]:
    """Decode one struct from ``data[pos:end]``; return its fields and the position after it."""
    reader = CompactReader(data, pos, end)
    fields = reader.struct()
    return fields, reader.pos


class CompactWriter:
    """Minimal compact-protocol encoder, used to build test files and Bloom filter headers."""

    def __init__(self) -> None:
        self.out = bytearray()

    def varint(self, n: int) -> None:
        while True:
            b = n & 0x7F
            n >>= 7
            if n:
                self.out.append(b | 0x80)
            else:
                self.out.append(b)
                return

    def zigzag(self, n: int) -> None:
        self.varint((n << 1) ^ (n >> 63))

    def struct(self, fields: list[tuple[int, int, Any]]) -> None:
        """Write a struct given ``(field_id, type, value)`` triples in ascending id order."""
        last = 0
        for fid, ftype, value in fields:
            if ftype in (BOOL_TRUE, BOOL_FALSE):
                ftype = BOOL_TRUE if value else BOOL_FALSE
            delta = fid - last
            if 0 < delta <= 15:
                self.out.append((delta << 4) | ftype)
            else:
                self.out.append(ftype)
                self.zigzag(fid)
            last = fid
            self._value(ftype, value)
        self.out.append(STOP)

    def _value(self, ftype: int, value: Any) -> None:
        if ftype in (I16, I32, I64):
            self.zigzag(value)
        elif ftype == BINARY:
            data = value.encode() if isinstance(value, str) else bytes(value)
            self.varint(len(data))
            self.out += data
        elif ftype == STRUCT:
            self.struct(value)
        elif ftype in (BOOL_TRUE, BOOL_FALSE):
            pass
        elif ftype == BYTE:
            self.out.append(value & 0xFF)
        elif ftype == DOUBLE:
            self.out += struct.pack("<d", value)
        elif ftype == LIST:
            etype, items = value
            if len(items) < 15:
                self.out.append((len(items) << 4) | etype)
            else:
                self.out.append(0xF0 | etype)
                self.varint(len(items))
            for item in items:
                if etype in (BOOL_TRUE, BOOL_FALSE):
                    self.out.append(BOOL_TRUE if item else BOOL_FALSE)
                else:
                    self._value(etype, item)
        else:
            raise ValueError(f"cannot write thrift type {ftype}")
