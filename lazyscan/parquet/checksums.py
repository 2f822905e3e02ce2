"""Page checksums: the CRC-32 a writer may store in a Parquet page header, checked against the
bytes fetched for the page.

The format defines ``PageHeader.crc`` (parquet.thrift; PARQUET-1539 settled the wording) as the
standard CRC-32 (polynomial 0x04C11DB7, zlib's and gzip's) of the page as written, without its
header: the ``compressed_page_size`` bytes after the header, for every page type. For a v1 data
page that is the levels and values as compressed together, for a v2 data page the uncompressed
levels followed by the (possibly compressed) values, for a dictionary page its compressed
entries. A page without the field is not checked. pyarrow checks the same bytes when asked
(``page_checksum_verification=True``).

:func:`page_spans` finds the pages in fetched ranges with one kernel call (headers parsed by
:mod:`.page_header`'s kernel) and :func:`mismatches` compares each stored checksum with the
CRC-32 of the body where it lies (no copy): zlib-ng's (``zlib_ng``, about 30 GB/s here
with its carry-less multiplication kernels) where it is installed, else zlib's (about 3 GB/s);
both release the GIL on large buffers. A page whose header the kernel or the generic parser
cannot read is left to the decoders, which report it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from lazyscan.format.kernels import kernel_jit
from lazyscan.parquet import page_header as H
from lazyscan.parquet.metadata import PageType
from lazyscan.parquet.thrift import ThriftError

_jit_gil = kernel_jit(read_only=("buf",))

try:
    from zlib_ng.zlib_ng import crc32 as _crc32
except ImportError:  # pragma: no cover - zlib's gives the same values, ten times slower
    from zlib import crc32 as _crc32

#: a range holding one page (its ``limit``), not pages walked until a number of rows
ONE_PAGE = -1

# columns of the span table: the range, where the page's header starts, where its body starts,
# the body's length (_UNREAD: the kernel cannot read the header), the stored CRC (H.MISSING
# when absent), the page's number within its range, and the data rows of the pages before it
_RANGE, _AT, _BODY, _LEN, _CRC, _ORDINAL, _ROWS = range(7)
_FIELDS = 7
_UNREAD = -1


@_jit_gil
def _spans(buf, starts, ends, limits, out):
    """Fill ``out`` with the pages of the ranges ``buf[starts[i]:ends[i]]``: the one page at
    the start of a range whose ``limits[i]`` is ``ONE_PAGE``, else the pages from its start
    until they hold ``limits[i]`` rows of data. A header the kernel cannot read ends its
    range's walk with a row of length ``_UNREAD``; a page reaching past its range ends it with
    no row. Returns the number of rows, or -1 when ``out`` is too small."""
    header = np.empty(H.SLOTS, np.int64)
    n = 0
    for r in range(starts.shape[0]):
        pos = starts[r]
        end = ends[r]
        limit = limits[r]
        rows = np.int64(0)
        k = 0
        while pos < end and ((limit < 0 and k == 0) or (limit >= 0 and rows < limit)):
            if n >= out.shape[0]:
                return -1
            out[n, _RANGE] = r
            out[n, _AT] = pos
            out[n, _ORDINAL] = k
            out[n, _ROWS] = rows
            hs = H.parse_into_slots(buf, pos, end, header)
            if hs < 0:
                out[n, _LEN] = _UNREAD
                n += 1
                break
            csize = header[H.SLOT_CSIZE]
            body = pos + hs
            if csize < 0 or csize > end - body:
                break
            out[n, _BODY] = body
            out[n, _LEN] = csize
            out[n, _CRC] = header[H.SLOT_CRC]
            n += 1
            kind = header[H.SLOT_TYPE]
            if kind == 0 and header[H.SLOT_V1] == 1:
                rows += max(header[H.SLOT_V1_NUM], 0)
            elif kind == 3 and header[H.SLOT_V2] == 1:
                rows += max(header[H.SLOT_V2_ROWS], 0)
            pos = body + csize
            k += 1
    return n


class Mismatch(NamedTuple):
    """A page whose stored checksum differs from its bytes' CRC-32."""

    range: int  # which of the ranges holds it
    at: int  # where its header starts in the buffer
    size: int  # header and body
    ordinal: int  # its number among the pages of its range
    stored: int
    computed: int


def crc32(data: np.ndarray) -> int:
    """The standard CRC-32 of the bytes ``data`` (unsigned)."""
    return _crc32(data.data)


def stored_crc(value: int) -> int:
    """A header's ``crc`` (a thrift i32, so possibly negative) as the unsigned CRC-32 it holds."""
    return value & 0xFFFFFFFF


def page_spans(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, limits: np.ndarray) -> np.ndarray:
    """The pages of the ranges of ``buf`` (see :func:`_spans`) as rows of the span table, with
    the headers the kernel cannot read parsed by the generic parser (their range's walk goes on
    after them; a header no parser reads ends it)."""
    out = np.empty((max(8, 2 * len(starts)), _FIELDS), np.int64)
    while True:
        n = _spans(buf, starts, ends, limits, out)
        if n >= 0:
            break
        out = np.empty((2 * len(out), _FIELDS), np.int64)
    table = out[:n]
    unread = np.flatnonzero(table[:, _LEN] == _UNREAD)
    if not len(unread):
        return table
    return _with_generic_headers(buf, table, unread, ends, limits)


def _with_generic_headers(buf: np.ndarray, table: np.ndarray, unread: np.ndarray, ends: np.ndarray, limits: np.ndarray) -> np.ndarray:
    parts = []
    last = 0
    for row in unread.tolist():
        parts.append(table[last:row])
        last = row + 1
        r, at, ordinal, rows = (int(v) for v in table[row, [_RANGE, _AT, _ORDINAL, _ROWS]])
        end = int(ends[r])
        try:
            header = H.parse_page_header(buf, at, end)
        except ThriftError:
            continue
        body = at + header.header_size
        csize = header.compressed_page_size
        if csize > end - body:
            continue
        crc = H.MISSING if header.crc is None else header.crc
        parts.append(np.array([[r, at, body, csize, crc, ordinal, rows]], np.int64))
        limit = int(limits[r])
        if header.type == PageType.DATA_PAGE and header.data_page_header is not None:
            rows += header.data_page_header.num_values
        elif header.type == PageType.DATA_PAGE_V2 and header.data_page_header_v2 is not None:
            rows += header.data_page_header_v2.num_rows
        if limit < 0 or rows >= limit:
            continue
        rest = page_spans(buf, np.array([body + csize]), np.array([end]), np.array([limit - rows]))
        rest[:, _RANGE] = r
        rest[:, _ORDINAL] += ordinal + 1
        rest[:, _ROWS] += rows
        parts.append(rest)
    parts.append(table[last:])
    return np.concatenate(parts)


def mismatches(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, limits: np.ndarray) -> list[Mismatch]:
    """The pages of the ranges of ``buf`` (see :func:`_spans`) whose stored checksum is not
    their body's CRC-32; pages without one are not checked."""
    spans = page_spans(buf, starts, ends, limits)
    checked = spans[spans[:, _CRC] != H.MISSING]
    found = []
    for r, at, body, length, crc, ordinal, _ in checked.tolist():
        computed = crc32(buf[body : body + length])
        if computed != stored_crc(crc):
            found.append(Mismatch(r, at, body + length - at, ordinal, stored_crc(crc), computed))
    return found


def page_matches(data: np.ndarray) -> tuple[bool, int, int]:
    """Whether the one page at the start of ``data`` (header and body, as fetched again) holds
    a body whose CRC-32 is its stored checksum: (matches, stored, computed); a page without a
    readable header or without a checksum does not match (stored and computed then 0)."""
    spans = page_spans(data, np.zeros(1, np.int64), np.array([len(data)], np.int64), np.array([ONE_PAGE], np.int64))
    if len(spans) != 1 or spans[0, _CRC] == H.MISSING:
        return False, 0, 0
    _, _, body, length, crc, _, _ = spans[0].tolist()
    computed = crc32(data[body : body + length])
    return computed == stored_crc(crc), stored_crc(crc), computed


def describe(stored: int, computed: int) -> str:
    return f"page checksum mismatch: stored 0x{stored:08x}, computed 0x{computed:08x}"


__all__ = ["ONE_PAGE", "Mismatch", "crc32", "describe", "mismatches", "page_matches", "page_spans", "stored_crc"]
