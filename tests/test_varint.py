"""The varint readers of the format floor (``lazyscan.format.varint``): the Python one and the
kernel one agree with each other and with protobuf's encoding of every 64-bit value, refuse a
varint cut short or longer than 64 bits, and Thrift and protobuf readers report those as their
own errors."""

from __future__ import annotations

import numpy as np
import pytest

from lazyscan.format.kernels import ERR_BAD_HEADER, ERR_TRUNCATED
from lazyscan.format.varint import VarintError, read_uvarint, unzigzag, uvarint, zigzag
from lazyscan.orc import proto
from lazyscan.parquet.thrift import CompactReader, CompactWriter, ThriftError

VALUES = [0, 1, 127, 128, 300, 2**31 - 1, 2**32, 2**35 + 7, 2**56 - 1, 2**56, 2**63 - 1, 2**63, 2**64 - 1]


def encode(value: int) -> bytes:
    """A varint as protobuf writes it (the 7 low bits first, the high bit says more follow)."""
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


@pytest.mark.parametrize("value", VALUES)
def test_python_and_kernel_read_every_64_bit_value(value) -> None:
    data = b"\x05" + encode(value) + b"\x09"
    assert read_uvarint(data, 1, len(data)) == (value, len(data) - 1)
    got, pos = uvarint(np.frombuffer(data, np.uint8), 1, len(data))
    assert (int(got), pos) == (value, len(data) - 1)


def test_zigzag_agrees_with_protobufs_signed_encoding() -> None:
    for signed in [0, -1, 1, -2, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63)]:
        u = (signed << 1) ^ (signed >> 63)  # sint64 in protobuf, Thrift's i64
        assert zigzag(u & (2**64 - 1)) == signed
        assert int(unzigzag(np.uint64(u & (2**64 - 1)))) == signed


@pytest.mark.parametrize(
    ("data", "code", "message"),
    [
        (b"", ERR_TRUNCATED, "ends inside a varint"),
        (b"\x80\x80", ERR_TRUNCATED, "ends inside a varint"),
        (b"\xff" * 9 + b"\x02", ERR_BAD_HEADER, "longer than 64 bits"),  # a 65th bit
        (b"\x80" * 10 + b"\x00", ERR_BAD_HEADER, "longer than 64 bits"),  # an 11th byte
    ],
)
def test_cut_short_or_too_long_is_refused(data, code, message) -> None:
    with pytest.raises(VarintError, match=message):
        read_uvarint(data, 0, len(data))
    assert uvarint(np.frombuffer(data, np.uint8), 0, len(data))[1] == code
    with pytest.raises(proto.ProtoError, match=message):
        proto.read_varint(data, 0, len(data))
    with pytest.raises(ThriftError, match="thrift .*" + message):
        CompactReader(data).varint()


def test_a_varint_is_not_read_past_its_end() -> None:
    data = encode(2**40)
    with pytest.raises(VarintError):
        read_uvarint(data, 0, len(data) - 1)
    assert uvarint(np.frombuffer(data, np.uint8), 0, len(data) - 1)[1] == ERR_TRUNCATED


def test_thrift_reads_back_what_it_writes() -> None:
    w = CompactWriter()
    for v in VALUES:
        w.varint(v)
    for v in [0, -1, 5, -(2**63), 2**63 - 1]:
        w.zigzag(v)
    r = CompactReader(bytes(w.out))
    assert [r.varint() for _ in VALUES] == VALUES
    assert [r.zigzag() for _ in range(5)] == [0, -1, 5, -(2**63), 2**63 - 1]
