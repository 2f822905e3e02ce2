"""Page headers parsed by a numba kernel.

A column read parses one Thrift ``PageHeader`` per page it touches; the generic parser of
:mod:`lazyscan.parquet.thrift` builds a dict per struct and costs several microseconds per header,
more than decoding a selected value. :func:`parse_page_header` reads the fields lazyscan uses in
one kernel call. The kernel handles the common shapes only: a header with an unexpected field
type, a nested container, an over-long varint or a missing required field is handed to the
generic parser, which either reads it or raises the precise error. Both paths give the same
:class:`~lazyscan.parquet.metadata.PageHeader`.
"""

from __future__ import annotations

import numpy as np

from lazyscan.format.kernels import kernel_jit
from lazyscan.format.varint import uvarint
from lazyscan.parquet.kernels import jit_gil
from lazyscan.parquet.metadata import (
    DataPageHeader,
    DataPageHeaderV2,
    DictionaryPageHeader,
    PageHeader,
    page_header_from_thrift,
    statistics_from_thrift,
)
from lazyscan.parquet.thrift import ThriftError, read_struct

_jit = kernel_jit(nogil=True, read_only=("buf",))

#: the kernel cannot read this header: use the generic parser
_GENERIC = -1
MISSING = np.iinfo(np.int64).min
_INT64_MAX = np.uint64(np.iinfo(np.int64).max)

# slots of the kernel's output vector
SLOT_TYPE, SLOT_USIZE, SLOT_CSIZE, SLOT_CRC = 0, 1, 2, 3
SLOT_V1, SLOT_V1_NUM, SLOT_V1_ENC, SLOT_V1_DEF, SLOT_V1_REP, SLOT_V1_STATS, SLOT_V1_STATS_END = 4, 5, 6, 7, 8, 9, 10
SLOT_DICT, SLOT_DICT_NUM, SLOT_DICT_ENC, SLOT_DICT_SORTED = 11, 12, 13, 14
SLOT_V2, SLOT_V2_NUM, SLOT_V2_NULLS, SLOT_V2_ROWS, SLOT_V2_ENC, SLOT_V2_DEF_LEN, SLOT_V2_REP_LEN, SLOT_V2_COMPRESSED = 15, 16, 17, 18, 19, 20, 21, 22
SLOT_V2_STATS, SLOT_V2_STATS_END = 23, 24
SLOTS = 25

# compact protocol types
_BOOL_TRUE, _BOOL_FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _STRUCT = 1, 2, 3, 4, 5, 6, 7, 8, 12


@_jit
def _varint(buf, pos, end):
    """(value, new position) of a varint below 2**63 (what Thrift's integers hold); position -1
    when unreadable."""
    u, pos = uvarint(buf, pos, end)
    if pos < 0 or u > _INT64_MAX:
        return np.int64(0), -1
    return np.int64(u), pos


@_jit
def _integer(buf, pos, end, ftype):
    """(value, new position) of an integer field of any integer type; position -1 otherwise."""
    if ftype in (_I16, _I32, _I64):
        u, pos = _varint(buf, pos, end)
        if pos < 0:
            return 0, -1
        return (u >> 1) ^ -(u & 1), pos
    if ftype == _BYTE and pos < end:
        b = np.int64(buf[pos])
        return (b - 256 if b > 127 else b), pos + 1
    return 0, -1


@_jit
def _field(buf, pos, end, last_id):
    """(field id, type, new position) of a field header; type 0 at the struct's end."""
    if pos >= end:
        return 0, 0, -1
    b = np.int64(buf[pos])
    pos += 1
    if b == 0:
        return 0, 0, pos
    if b & 0x0F == 0:  # type 0 is only valid as the stop byte
        return 0, 0, -1
    delta = b >> 4
    if delta:
        return last_id + delta, b & 0x0F, pos
    fid, pos = _integer(buf, pos, end, np.int64(_I16))
    return fid, b & 0x0F, pos


@_jit
def _skip_scalar(buf, pos, end, ftype):
    """Position after a scalar value; -1 for containers and unknown types."""
    if ftype in (_BOOL_TRUE, _BOOL_FALSE):
        return pos
    if ftype == _BYTE:
        return pos + 1 if pos < end else -1
    if ftype in (_I16, _I32, _I64):
        _, pos = _varint(buf, pos, end)
        return pos
    if ftype == _DOUBLE:
        return pos + 8 if end - pos >= 8 else -1
    if ftype == _BINARY:
        n, pos = _varint(buf, pos, end)
        if pos < 0 or n > end - pos:
            return -1
        return pos + n
    return -1


@_jit
def _skip_flat_struct(buf, pos, end):
    """Position after a struct whose fields are all scalars (Statistics); -1 otherwise."""
    last = np.int64(0)
    while True:
        fid, ftype, pos = _field(buf, pos, end, last)
        if pos < 0:
            return -1
        if ftype == 0:
            return pos
        last = fid
        pos = _skip_scalar(buf, pos, end, ftype)
        if pos < 0:
            return -1


@_jit
def _bool(ftype):
    if ftype == _BOOL_TRUE:
        return 1
    if ftype == _BOOL_FALSE:
        return 0
    return -1


@_jit
def _sub_struct(buf, pos, end, out, kind):
    """Read a data page (1), dictionary page (2) or v2 data page (3) header into ``out``."""
    last = np.int64(0)
    while True:
        fid, ftype, pos = _field(buf, pos, end, last)
        if pos < 0:
            return -1
        if ftype == 0:
            return pos
        last = fid
        stats = (kind == 1 and fid == 5) or (kind == 3 and fid == 8)
        flag = (kind == 2 and fid == 3) or (kind == 3 and fid == 7)
        if stats:
            if ftype != _STRUCT:
                return -1
            start = pos
            pos = _skip_flat_struct(buf, pos, end)
            if pos < 0:
                return -1
            slot = SLOT_V1_STATS if kind == 1 else SLOT_V2_STATS
            out[slot] = start
            out[slot + 1] = pos
        elif flag:
            v = _bool(ftype)
            if v < 0:
                return -1
            out[SLOT_DICT_SORTED if kind == 2 else SLOT_V2_COMPRESSED] = v
        elif (kind == 1 and 1 <= fid <= 4) or (kind == 2 and 1 <= fid <= 2) or (kind == 3 and 1 <= fid <= 6):
            v, pos = _integer(buf, pos, end, ftype)
            if pos < 0:
                return -1
            base = SLOT_V1 if kind == 1 else (SLOT_DICT if kind == 2 else SLOT_V2)
            out[base + fid] = v
        else:
            pos = _skip_scalar(buf, pos, end, ftype)
            if pos < 0:
                return -1


@jit_gil
def parse_into_slots(buf, pos, end, out):
    """Fill ``out`` from the PageHeader at ``buf[pos:end]``; header size, or -1 (generic parser)."""
    for i in range(SLOTS):
        out[i] = MISSING
    start = pos
    last = np.int64(0)
    while True:
        fid, ftype, pos = _field(buf, pos, end, last)
        if pos < 0:
            return _GENERIC
        if ftype == 0:
            return pos - start
        last = fid
        if 1 <= fid <= 4:
            v, pos = _integer(buf, pos, end, ftype)
            if pos < 0:
                return _GENERIC
            out[fid - 1] = v
        elif fid == 5 or fid == 7 or fid == 8:
            if ftype != _STRUCT:
                return _GENERIC
            kind = 1 if fid == 5 else (2 if fid == 7 else 3)
            base = SLOT_V1 if kind == 1 else (SLOT_DICT if kind == 2 else SLOT_V2)
            width = SLOT_V1_STATS_END - SLOT_V1 if kind == 1 else (SLOT_DICT_SORTED - SLOT_DICT if kind == 2 else SLOT_V2_STATS_END - SLOT_V2)
            for i in range(base + 1, base + width + 1):  # a repeated field replaces the earlier one
                out[i] = MISSING
            out[base] = 1
            pos = _sub_struct(buf, pos, end, out, kind)
            if pos < 0:
                return _GENERIC
        else:
            pos = _skip_scalar(buf, pos, end, ftype)
            if pos < 0:
                return _GENERIC


def _generic(buf: np.ndarray, pos: int, end: int) -> PageHeader:
    fields, after = read_struct(buf.data, pos, end)
    return page_header_from_thrift(fields, after - pos)


def _stats(buf: np.ndarray, start: int, end: int):  # type: ignore[no-untyped-def]
    if start == MISSING:
        return None
    fields, _ = read_struct(buf.data, int(start), int(end))
    return statistics_from_thrift(fields)


def parse_page_header(buf: np.ndarray, pos: int, end: int) -> PageHeader:
    """The PageHeader at ``buf[pos:end]`` (``buf`` a uint8 array); ThriftError if malformed."""
    out = np.empty(SLOTS, np.int64)
    size = parse_into_slots(buf, pos, end, out)
    if size < 0:
        return _generic(buf, pos, end)
    v = out.tolist()
    if v[SLOT_TYPE] == MISSING or v[SLOT_USIZE] < 0 or v[SLOT_CSIZE] < 0:  # missing or negative: precise error
        return _generic(buf, pos, end)
    dph = dict_h = dph2 = None
    if v[SLOT_V1] == 1:
        if v[SLOT_V1_NUM] < 0:
            return _generic(buf, pos, end)
        dph = DataPageHeader(
            num_values=v[SLOT_V1_NUM],
            encoding=v[SLOT_V1_ENC] if v[SLOT_V1_ENC] != MISSING else -1,
            definition_level_encoding=v[SLOT_V1_DEF] if v[SLOT_V1_DEF] != MISSING else 3,
            repetition_level_encoding=v[SLOT_V1_REP] if v[SLOT_V1_REP] != MISSING else 3,
            statistics=_stats(buf, v[SLOT_V1_STATS], v[SLOT_V1_STATS_END]),
        )
    if v[SLOT_DICT] == 1:
        if v[SLOT_DICT_NUM] < 0:
            return _generic(buf, pos, end)
        dict_h = DictionaryPageHeader(
            num_values=v[SLOT_DICT_NUM],
            encoding=v[SLOT_DICT_ENC] if v[SLOT_DICT_ENC] != MISSING else 0,
            is_sorted=v[SLOT_DICT_SORTED] == 1,
        )
    if v[SLOT_V2] == 1:
        if min(v[SLOT_V2_NUM], v[SLOT_V2_NULLS], v[SLOT_V2_ROWS], v[SLOT_V2_DEF_LEN], v[SLOT_V2_REP_LEN]) < 0:
            return _generic(buf, pos, end)
        dph2 = DataPageHeaderV2(
            num_values=v[SLOT_V2_NUM],
            num_nulls=v[SLOT_V2_NULLS],
            num_rows=v[SLOT_V2_ROWS],
            encoding=v[SLOT_V2_ENC] if v[SLOT_V2_ENC] != MISSING else -1,
            definition_levels_byte_length=v[SLOT_V2_DEF_LEN],
            repetition_levels_byte_length=v[SLOT_V2_REP_LEN],
            is_compressed=v[SLOT_V2_COMPRESSED] != 0,
            statistics=_stats(buf, v[SLOT_V2_STATS], v[SLOT_V2_STATS_END]),
        )
    return PageHeader(
        type=v[SLOT_TYPE],
        uncompressed_page_size=v[SLOT_USIZE],
        compressed_page_size=v[SLOT_CSIZE],
        crc=None if v[SLOT_CRC] == MISSING else v[SLOT_CRC],
        data_page_header=dph,
        dictionary_page_header=dict_h,
        data_page_header_v2=dph2,
        header_size=size,
    )


__all__ = ["ThriftError", "parse_page_header"]
