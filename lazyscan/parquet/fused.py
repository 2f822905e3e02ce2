"""Selected rows of a column chunk decoded with two kernel calls.

A selective read of a payload column touches few pages per chunk: its dictionary page and the
data pages that hold selected rows. The general path (``ParquetFile._decode_selected``) parses,
decompresses and decodes them page by page, with Python between the steps: tens of microseconds
per chunk beyond decompression, holding the GIL. This path covers the common flat shapes —
required or optional (definition level at most 1) INT32, INT64, FLOAT and DOUBLE columns (also as
decimal128) and BYTE_ARRAY columns as strings or binary; PLAIN or dictionary encoded; data pages
v1 and v2 — with one kernel that parses every page header, one decompressor call per page into
one buffer, and one kernel that decodes the selected values straight into Arrow's layout.

Anything else it meets (another encoding, a dictionary decoded earlier, an inconsistent header
or value) makes :func:`read_selected` return None: the caller reads the chunk with the general
path, which either reads it or raises the located error, so both paths fail the same way.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, NamedTuple

import numba
import numpy as np
import pyarrow as pa

from lazyscan.errors import OptionError
from lazyscan.format import snappy as S
from lazyscan.format.counters import ReadCounters
from lazyscan.format.kernels import index_runs
from lazyscan.parquet import buffers, codecs
from lazyscan.parquet import kernels as K
from lazyscan.parquet import page_header as H
from lazyscan.parquet.convert import _is_bytes_type, _simple_dtype
from lazyscan.parquet.metadata import Codec, PhysicalType
from lazyscan.parquet.schema import ColumnDescriptor

if TYPE_CHECKING:
    from lazyscan.parquet.file import ChunkLayout

_jit = numba.njit(nogil=True, cache=True)
_jit_gil = K._jit_gil
_ALL_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)
#: the fused path reads selections of at most this fraction of a row group's rows; denser ones
#: decode faster through the general path's run decoding (reader benchmark, 10 % selections)
MAX_DENSITY = 0.02


def takes(rows: int, num_rows: int) -> bool:
    """Whether a selection of ``rows`` of a row group of ``num_rows`` is read on this path."""
    return rows <= MAX_DENSITY * num_rows

#: a page's selected values are decoded by unpacking every code from the first selected to the
#: last when at least one in this many of them is selected
_DENSE = 3

#: how the decode kernel writes a value: copy its bytes, or widen an integer to decimal128
COPY, TO_DECIMAL128 = 0, 1

_INT32_MAX = 2**31 - 1

# columns of the page table the decode kernels read; _LAZY: the page's row in the table of
# snappy streams decompressed as far as the kernels read (-1: the body is decompressed whole)
_KIND, _BODY, _BODY_END, _NUM, _ENC, _REP_LEN, _DEF_LEN, _FIRST, _LO, _HI, _LAZY, _NULLS = range(12)
_PAGE_FIELDS = 12

#: a selective read decompresses snappy pages (dictionary and data pages) only as far as the
#: kernels read them (snappy.until): its kernels decompress faster per byte than cramjam
#: (0.77-1.04x its time on the dictionary pages of TPC-H's lineitem), so a prefix never costs
#: more than the whole page would. Other codecs decompress whole pages in jobs.
_SNAPPY = int(Codec.SNAPPY)


class Shape(NamedTuple):
    """How a column's values are decoded on this path."""

    width: int  # bytes per PLAIN value; 0 for byte arrays
    out_width: int  # bytes per value in the Arrow array; 0 for byte arrays
    mode: int  # COPY or TO_DECIMAL128
    arrow_type: pa.DataType

    @property
    def word(self) -> np.dtype:
        """The unsigned integer type the decode kernel writes."""
        return np.dtype(np.uint32 if self.out_width == 4 else np.uint64)


def shape_of(desc: ColumnDescriptor) -> Shape | None:
    """The column's :class:`Shape`, or None when this path does not read it."""
    if not desc.flat or desc.max_repetition_level != 0 or desc.max_definition_level > 1:
        return None
    atype = desc.arrow_type
    pt = desc.physical_type
    if pt == PhysicalType.BYTE_ARRAY:
        return Shape(0, 0, COPY, atype) if _is_bytes_type(atype) else None
    width = {PhysicalType.INT32: 4, PhysicalType.INT64: 8, PhysicalType.FLOAT: 4, PhysicalType.DOUBLE: 8}.get(pt)
    if width is None:
        return None
    if pa.types.is_decimal128(atype) and pt in (PhysicalType.INT32, PhysicalType.INT64):
        return Shape(width, 16, TO_DECIMAL128, atype)
    simple = _simple_dtype(atype, pt)
    if simple is None or simple.itemsize != width:
        return None
    floating = pt in (PhysicalType.FLOAT, PhysicalType.DOUBLE)
    if (simple.kind == "f") != floating:
        return None
    return Shape(width, width, COPY, atype)


#: columns of a chunk plan row: the byte range to fetch, and for data pages the rows they hold
#: and the slice of the selection inside them
_P_OFFSET, _P_SIZE, _P_FIRST, _P_ROWS, _P_LO, _P_HI = range(6)
_PLAN_FIELDS = 6


@_jit
def plan_chunk(sel_starts, sel_ends, idx, page_starts, page_ends, page_offsets, page_sizes, dict_offset, dict_size, out):
    """The byte ranges a selective read of a chunk fetches, in ``out`` rows: the dictionary page
    first (when ``dict_size`` >= 0), then every data page holding a selected row; returns the
    number of rows, or an error code."""
    npages = page_starts.shape[0]
    if page_offsets.shape[0] < npages or page_sizes.shape[0] < npages or out.shape[0] < npages + 1:
        return K.ERR_BAD_ARGUMENT
    pages = np.empty(npages, np.int64)
    lo = np.empty(npages, np.int64)
    hi = np.empty(npages, np.int64)
    count = K.plan_pages(sel_starts, sel_ends, idx, page_starts, page_ends, pages, lo, hi)
    if count < 0:
        return count
    n = 0
    if dict_size >= 0:
        out[0, _P_OFFSET] = dict_offset
        out[0, _P_SIZE] = dict_size
        out[0, _P_FIRST] = 0
        out[0, _P_ROWS] = 0
        out[0, _P_LO] = 0
        out[0, _P_HI] = 0
        n = 1
    for j in range(count):
        p = pages[j]
        out[n, _P_OFFSET] = page_offsets[p]
        out[n, _P_SIZE] = page_sizes[p]
        out[n, _P_FIRST] = page_starts[p]
        out[n, _P_ROWS] = page_ends[p] - page_starts[p]
        out[n, _P_LO] = lo[j]
        out[n, _P_HI] = hi[j]
        n += 1
    return n


# columns of a decompression job: source range in the fetched buffer, target range in the
# buffer of bodies, and the codec to decompress with (0: a copy)
_J_SRC, _J_SRC_LEN, _J_DST, _J_DST_LEN, _J_CODEC = range(5)
_JOB_FIELDS = 5
# slots of the summary the preparation returns: where the dictionary's values go, how many, the
# jobs, the dictionary's row of snappy streams (-1: decompressed whole) and the number of rows
_I_DICT_OFF, _I_DICT_END, _I_DICT_COUNT, _I_JOBS, _I_DICT_LAZY, _I_LAZY = range(6)
_INFO_FIELDS = 6


@_jit
def add_page_jobs(jobs, nj, b, csize, usize, total, codec, v2_levels, v2_compressed):
    """The decompression jobs of one page whose body of ``csize`` bytes starts at ``b`` and goes
    to ``total`` in the buffer of bodies, from row ``nj`` of ``jobs``; returns the next row.
    ``v2_levels`` >= 0: a v2 data page, whose levels (that many bytes) are stored uncompressed
    ahead of the values, which are compressed when ``v2_compressed``."""
    if v2_levels >= 0:
        nj = _job(jobs, nj, b, v2_levels, total, v2_levels, 0)
        return _job(jobs, nj, b + v2_levels, csize - v2_levels, total + v2_levels, usize - v2_levels, codec if v2_compressed else 0)
    return _job(jobs, nj, b, csize, total, usize, codec)


@_jit
def v2_values_compressed(header, csize, usize, v2_always):
    """Whether the values of the v2 data page ``header`` (a :func:`.page_header._parse` vector)
    are compressed: as the header says, and also where it says they are not but the writer
    compressed them regardless (``v2_always``, ARROW-17100) or they take another size than
    stored, which only compressed values can."""
    return header[H._V2_COMPRESSED] != 0 or v2_always or csize != usize


@_jit
def _job(jobs, nj, src, src_len, dst, dst_len, codec):
    """Row ``nj`` of ``jobs``: ``src_len`` bytes at ``src`` decompressed (or copied) into
    ``dst_len`` bytes at ``dst``; returns the next row."""
    jobs[nj, _J_SRC] = src
    jobs[nj, _J_SRC_LEN] = src_len
    jobs[nj, _J_DST] = dst
    jobs[nj, _J_DST_LEN] = dst_len
    jobs[nj, _J_CODEC] = codec
    return nj + 1


#: run_jobs' answers for a job: it failed, or its codec is left to the caller (cramjam)
JOB_FAILED, JOB_ELSEWHERE = -1, -2


@_jit
def run_jobs(buf, dec, jobs, nj, max_page_size, done):
    """Run the copies and snappy decompressions among the first ``nj`` ``jobs`` (from ``buf``
    into ``dec``, filling their target exactly): ``done[j]`` gets the bytes decompressed (0 for
    a copy), ``JOB_FAILED``, or ``JOB_ELSEWHERE`` for a job of another codec. Returns the number
    of jobs not done (failed or elsewhere)."""
    left = 0
    for j in range(nj):
        src = jobs[j, _J_SRC]
        src_len = jobs[j, _J_SRC_LEN]
        dst = jobs[j, _J_DST]
        dst_len = jobs[j, _J_DST_LEN]
        codec = jobs[j, _J_CODEC]
        done[j] = JOB_FAILED
        if src < 0 or src_len < 0 or src + src_len > buf.shape[0] or dst < 0 or dst_len < 0 or dst + dst_len > dec.shape[0]:
            left += 1
        elif codec == 0:
            if src_len == dst_len:
                dec[dst : dst + dst_len] = buf[src : src + src_len]
                done[j] = 0
            else:
                left += 1
        elif codec == _SNAPPY:
            if dst_len <= max_page_size and S.decompress(buf, src, src + src_len, dec, dst, dst + dst_len) == dst_len:
                done[j] = dst_len
            else:
                left += 1
        else:
            done[j] = JOB_ELSEWHERE
            left += 1
    return left


@_jit
def _lazy_stream(buf, src, src_len, dst, dst_len, codec, max_page_size, lazy, nl):
    """Row ``nl`` of ``lazy`` set up for the snappy body ``buf[src:src + src_len]`` bound for
    ``[dst, dst + dst_len)``; False when it cannot be read lazily (then a job reads it whole, or
    reports what is wrong with it)."""
    if codec != _SNAPPY or dst_len > max_page_size or nl >= lazy.shape[0]:
        return False
    return S.start(buf, src, src + src_len, dst, dst + dst_len, lazy[nl]) == 0


@_jit
def prepare_chunk(buf, at, plan, n, has_dict, max_def, width, codec, pages, jobs, info, lazy, max_page_size, v2_always=False):
    """Parse and check the page headers of a fetched chunk (range ``i`` of ``plan`` starts at
    ``at[i]`` in ``buf``): fill the page table of the decode kernels, the decompression jobs and
    ``info``; return the size of the buffer of bodies, or -1 when this path does not read it.
    ``v2_always``: the writer compressed every v2 page (:func:`v2_values_compressed`).

    Snappy bodies get a row of ``lazy`` (snappy stream states, decompressed as far as the
    kernels read; no rows: none) instead of a job; ``info[_I_LAZY]`` counts them."""
    header = np.empty(H._SLOTS, np.int64)
    total = np.int64(0)
    nj = 0
    nl = 0
    info[_I_DICT_OFF] = 0
    info[_I_DICT_END] = 0
    info[_I_DICT_COUNT] = -1
    info[_I_DICT_LAZY] = -1
    info[_I_LAZY] = 0
    k = 0
    for i in range(n):
        start = at[i]
        length = plan[i, _P_SIZE]
        if start < 0 or length < 0 or start + length > buf.shape[0]:
            return -1
        hs = H._parse(buf, start, start + length, header)
        if hs < 0:
            return -1
        kind = header[H._TYPE]
        usize = header[H._USIZE]
        csize = header[H._CSIZE]
        if usize < 0 or csize < 0 or hs + csize > length:
            return -1
        b = start + hs
        if i == 0 and has_dict:
            if kind != 2 or header[H._DICT] != 1 or header[H._DICT_NUM] < 0:
                return -1
            enc = header[H._DICT_ENC]
            if enc != 0 and enc != 2 and enc != H._MISSING:
                return -1
            count = header[H._DICT_NUM]
            # fixed-width entries fill the page exactly; byte arrays take 4 bytes each at least
            if (count * width != usize) if width > 0 else (count * 4 > usize):
                return -1
            info[_I_DICT_OFF] = total
            info[_I_DICT_END] = total + usize
            info[_I_DICT_COUNT] = count
            if _lazy_stream(buf, b, csize, total, usize, codec, max_page_size, lazy, nl):
                info[_I_DICT_LAZY] = nl
                nl += 1
                total += usize
                continue
        else:
            rows = plan[i, _P_ROWS]
            rep = np.int64(0)
            dfl = np.int64(0)
            if kind == 0:
                if header[H._V1] != 1 or header[H._V1_NUM] != rows:
                    return -1
                enc = header[H._V1_ENC]
                lenc = header[H._V1_DEF]
                if max_def > 0 and lenc != 3 and lenc != H._MISSING:
                    return -1
                page_kind = 1
            elif kind == 3:
                if header[H._V2] != 1 or header[H._V2_NUM] != rows or header[H._V2_ROWS] != rows:
                    return -1
                enc = header[H._V2_ENC]
                rep = header[H._V2_REP_LEN]
                dfl = header[H._V2_DEF_LEN]
                if rep != 0 or dfl < 0 or dfl > csize or dfl > usize or (max_def == 0 and dfl != 0):
                    return -1
                page_kind = 2
            else:
                return -1
            if enc != 0 and enc != 2 and enc != 8:
                return -1
            if enc != 0 and info[_I_DICT_COUNT] < 0:
                return -1
            pages[k, _KIND] = page_kind
            pages[k, _BODY] = total
            pages[k, _BODY_END] = total + usize
            pages[k, _NUM] = rows
            pages[k, _ENC] = enc
            pages[k, _REP_LEN] = rep
            pages[k, _DEF_LEN] = dfl
            pages[k, _FIRST] = plan[i, _P_FIRST]
            pages[k, _LO] = plan[i, _P_LO]
            pages[k, _HI] = plan[i, _P_HI]
            pages[k, _LAZY] = -1
            pages[k, _NULLS] = header[H._V2_NULLS] if page_kind == 2 else -1
            k += 1
            if lazy.shape[0] > nl and plan[i, _P_HI] > plan[i, _P_LO]:
                levels = rep + dfl if page_kind == 2 else 0
                compressed = page_kind == 1 or v2_values_compressed(header, csize - levels, usize - levels, v2_always)
                if (
                    compressed and levels <= csize and levels <= usize
                    and _lazy_stream(buf, b + levels, csize - levels, total + levels, usize - levels, codec, max_page_size, lazy, nl)
                ):
                    if levels > 0:  # v2: the levels are stored as they are
                        nj = _job(jobs, nj, b, levels, total, levels, 0)
                    pages[k - 1, _LAZY] = nl
                    nl += 1
                    total += usize
                    continue
            if page_kind == 2:
                v2c = v2_values_compressed(header, csize, usize, v2_always)
                nj = add_page_jobs(jobs, nj, b, csize, usize, total, codec, rep + dfl, v2c)
                total += usize
                continue
        nj = add_page_jobs(jobs, nj, b, csize, usize, total, codec, -1, True)
        total += usize
    info[_I_JOBS] = nj
    info[_I_LAZY] = nl
    return total


@_jit
def level_span(dec, b0, b1, kind, rep_len, def_len):
    """Where the definition levels of a page with body ``dec[b0:b1]`` lie: (start, end), the
    values following them; (error code, 0) when they overrun the page. ``kind`` 1: v1 (4-byte
    length prefix), 2: v2 (after ``rep_len`` bytes of repetition levels)."""
    if kind == 1:
        if b1 - b0 < 4:
            return K.ERR_TRUNCATED, 0
        length = np.int64(K.load_u32(dec, b0))
        lpos = b0 + 4
        if length > b1 - lpos:
            return K.ERR_TRUNCATED, 0
        return lpos, lpos + length
    lpos = b0 + rep_len
    lend = lpos + def_len
    if lend > b1:
        return K.ERR_TRUNCATED, 0
    return lpos, lend


#: a lazily decompressed body turned out not to be a valid snappy stream
_ERR_STREAM = -50
#: bytes decompressed ahead of a walk through length-prefixed values
_GRAIN = 1024


@_jit
def _avail(buf, dec, lazy, li, need, limit):
    """How far a page body can be read, at most ``limit``: all of it when it was decompressed
    whole (``li`` < 0), else at least to ``need`` (when the body reaches that far) after
    decompressing its stream (row ``li`` of ``lazy``) that far; or ``_ERR_STREAM``."""
    if li < 0:
        return limit
    got = S.until(buf, dec, lazy[li], need)
    if got < 0:
        return _ERR_STREAM
    return min(got, limit)


@_jit
def _hybrid_guess(pos, values, bit_width):
    """Where a hybrid stream at ``pos`` of bit-packed runs holding ``values`` values ends, with
    room for run headers: how far to decompress before walking it."""
    return pos + (values * bit_width + 7) // 8 + 64


@_jit
def _dictionary_ready(buf, dec, lazy, dl, need):
    """Make a lazily decompressed dictionary (row ``dl`` of ``lazy``) readable up to ``need``:
    0 or an error."""
    if dl < 0:
        return 0
    if lazy[dl, S.OUT] >= need:
        return 0
    got = S.until(buf, dec, lazy[dl], need)
    if got < 0:
        return _ERR_STREAM
    return 0 if got >= need else K.ERR_TRUNCATED


@_jit
def _levels_and_positions(dec, b0, b1, kind, rep_len, def_len, max_def, num, sel, first, valid, k0, positions, levels, buf, lazy, li):
    """Definition levels of a page: marks ``valid[k0 + j]`` for the selected rows ``sel``
    (absolute, minus ``first``) and writes the positions of the non-null ones among the page's
    values to ``positions``. Every level of the page is checked (one above the maximum is an
    error, as in a read of the whole page) and counted, unpacked only up to the last selected
    row. Returns (count, start of the values, the page's non-null values) or an error code as
    count."""
    m = sel.shape[0]
    if max_def == 0:
        for j in range(m):
            positions[j] = sel[j] - first
            valid[k0 + j] = 1
        return m, b0, np.int64(-1)
    if kind == 1:
        have = _avail(buf, dec, lazy, li, b0 + 4, b1)
        if have < 0:
            return have, 0, 0
    lpos, lend = level_span(dec, b0, b1, kind, rep_len, def_len)
    if lpos < 0:
        return lpos, 0, 0
    vpos = lend
    last = sel[m - 1] - first
    end = _avail(buf, dec, lazy, li, lend, lend)
    if end < 0:
        return end, 0, 0
    nonnull = K.rle_bp_count_ones(dec, lpos, end, 1, num, 2)
    if nonnull < 0:
        return nonnull, 0, 0
    if kind == 2 and K.rle_bp_stream_end(dec, lpos, end, 1, num) != lend:
        # levels that do not take their declared length: the general path names the fault
        return K.ERR_BAD_LENGTH, 0, 0
    got = K.rle_bp_decode_codes(dec, lpos, end, 1, last + 1, levels, np.int64(2))
    if got < 0:
        return got, 0, 0
    count = 0
    nonnull_before = 0
    j = 0
    for r in range(last + 1):
        v = levels[r] == 1
        if j < m and sel[j] - first == r:
            if v:
                positions[count] = nonnull_before
                count += 1
                valid[k0 + j] = 1
            else:
                valid[k0 + j] = 0
            j += 1
        if v:
            nonnull_before += 1
    return count, vpos, nonnull


@_jit
def _most_selected(pages):
    """The most selected rows of one page (scratch size), or an error code."""
    most = 0
    for p in range(pages.shape[0]):
        most = max(most, pages[p, _HI] - pages[p, _LO])
        if pages[p, _NUM] < 0 or pages[p, _NUM] > 1 << 31:
            return K.ERR_BAD_ARGUMENT
    return most


@_jit
def _page_positions(dec, pages, p, idx, max_def, valid, positions, buf, lazy, plain_width):
    """Check page ``p`` of the table, mark ``valid`` for its selected rows and write the
    positions of the non-null ones among its values; returns (count, start of the values, end
    of the body, the page's non-null values), or an error code as count. A PLAIN page must
    hold ``plain_width`` bytes (at least) per non-null value, as a read of the whole page
    requires, before any of its values is returned."""
    lo = pages[p, _LO]
    hi = pages[p, _HI]
    if hi <= lo:
        return 0, 0, 0, 0
    first = pages[p, _FIRST]
    b0 = pages[p, _BODY]
    b1 = pages[p, _BODY_END]
    if b0 < 0 or b1 > dec.shape[0] or b0 > b1 or lo < 0 or hi > idx.shape[0]:
        return K.ERR_BAD_ARGUMENT, 0, 0, 0
    sel = idx[lo:hi]
    num = pages[p, _NUM]
    last = sel[hi - lo - 1] - first
    if sel[0] < first or last >= num:
        return K.ERR_BAD_ARGUMENT, 0, 0, 0
    levels = np.empty(last + 1 if max_def > 0 else 0, np.int32)
    count, vpos, nonnull = _levels_and_positions(
        dec, b0, b1, pages[p, _KIND], pages[p, _REP_LEN], pages[p, _DEF_LEN], max_def, num, sel, first, valid, lo, positions, levels,
        buf, lazy, pages[p, _LAZY],
    )
    if count < 0:
        return count, 0, 0, 0
    if nonnull < 0:
        nonnull = num
    elif pages[p, _KIND] == 2 and num - nonnull != pages[p, _NULLS]:
        # a v2 page's levels must hold the nulls its header counts (the general path names it)
        return K.ERR_BAD_LENGTH, 0, 0, 0
    if pages[p, _ENC] == 0 and nonnull * plain_width > b1 - vpos:
        return K.ERR_TRUNCATED, 0, 0, 0
    return count, vpos, b1, nonnull


@_jit
def _dictionary_codes(dec, vpos, b1, positions, count, page_values, dict_count, codes, buf, lazy, li):
    """Replace ``positions[:count]`` (sorted value positions in a dictionary-encoded page whose
    values start at ``vpos``, ``page_values`` of them) by their codes, each checked against
    ``dict_count`` with the codes beside them (:func:`.kernels.rle_bp_decode_codes_selected`); 0
    or an error code. A lazily decompressed page (``li`` >= 0) is decompressed as far as the codes
    reach: first as far as bit-packed runs would, then, if the runs go further, to its end."""
    if dict_count < 0 or vpos >= b1:
        return K.ERR_BAD_ARGUMENT
    have = _avail(buf, dec, lazy, li, vpos + 1, b1)
    if have < 0:
        return have
    bw = np.int64(dec[vpos])
    span = positions[count - 1] + 1
    end = _avail(buf, dec, lazy, li, _hybrid_guess(vpos + 1, span, bw), b1)
    if end < 0:
        return end
    err = _codes_of(dec, vpos, end, bw, span, page_values, positions, count, dict_count, codes)
    if err < 0 and err != K.ERR_BAD_INDEX and end < b1:
        end = _avail(buf, dec, lazy, li, b1, b1)
        if end < 0:
            return end
        err = _codes_of(dec, vpos, end, bw, span, page_values, positions, count, dict_count, codes)
    return err


@_jit
def _codes_of(dec, vpos, b1, bw, span, page_values, positions, count, dict_count, codes):
    """:func:`_dictionary_codes` of a page readable up to ``b1``; ``positions`` change only on
    success or ``ERR_BAD_INDEX``."""
    first = positions[0]
    if count * _DENSE >= span - first:
        # dense between the first and the last: unpacking every code there is faster than
        # seeking each
        every = np.empty(span - first, np.int32)
        got = K.rle_bp_decode_codes_window(dec, vpos + 1, b1, bw, first, span, page_values, every, dict_count)
        if got < 0:
            return got
        for j in range(count):
            positions[j] = every[positions[j] - first]
        return 0
    got = K.rle_bp_decode_codes_selected(dec, vpos + 1, b1, bw, page_values, positions[:count], codes, dict_count)
    if got < 0:
        return got
    for j in range(count):
        if codes[j] < 0 or codes[j] >= dict_count:
            return K.ERR_BAD_INDEX
        positions[j] = codes[j]
    return 0


@_jit
def _largest_code(dec, pages, idx, max_def, valid, positions, codes, dict_count, buf, lazy, page_codes, counts):
    """The largest dictionary code the selected rows of the pages look up (-1: none), or an
    error code: what a lazily decompressed dictionary must hold, known before any of it is.
    The codes of page ``p``'s non-null selected rows go to ``page_codes`` from its first
    selected row on, ``counts[p]`` says how many (a PLAIN page's stays as the caller set it,
    -1)."""
    top = np.int64(-1)
    for p in range(pages.shape[0]):
        if pages[p, _ENC] == 0:
            continue
        count, vpos, b1, nonnull = _page_positions(dec, pages, p, idx, max_def, valid, positions, buf, lazy, 0)
        if count < 0:
            return count
        counts[p] = count
        if count == 0:
            continue
        err = _dictionary_codes(dec, vpos, b1, positions, count, nonnull, dict_count, codes, buf, lazy, pages[p, _LAZY])
        if err < 0:
            return err
        lo = pages[p, _LO]
        for j in range(count):
            page_codes[lo + j] = positions[j]
            top = max(top, positions[j])
    return top


@_jit
def _known_codes_or_positions(dec, pages, p, idx, max_def, valid, positions, buf, lazy, page_codes, counts, plain_width):
    """Page ``p``'s codes into ``positions`` when :func:`_largest_code` found them (count, 0,
    0, 0), else :func:`_page_positions` of it."""
    if counts[p] < 0:
        return _page_positions(dec, pages, p, idx, max_def, valid, positions, buf, lazy, plain_width)
    count = counts[p]
    lo = pages[p, _LO]
    for j in range(count):
        positions[j] = page_codes[lo + j]
    return count, np.int64(0), np.int64(0), np.int64(0)


@_jit
def gather_fixed(dec, pages, idx, max_def, dict_off, dict_count, width, mode, out, valid, buf, lazy, dict_lazy):
    """Decode the selected rows of fixed-width pages (``width`` 4 or 8) into ``out`` (uint32 or
    uint64 per row when copying, two uint64 words per row for decimal128; zeros for nulls) and
    ``valid`` (1 per non-null row). ``pages`` rows hold the page table; the dictionary, if any,
    is ``dict_count`` PLAIN values at ``dec[dict_off:]``, decompressed from ``buf`` as far as
    needed when ``dict_lazy`` >= 0 (as are pages with a ``_LAZY`` row). Returns the number of
    nulls or an error code."""
    n_out = idx.shape[0]
    if out.shape[0] < n_out * (1 if mode == COPY else 2) or valid.shape[0] < n_out:
        return K.ERR_BAD_ARGUMENT
    most = _most_selected(pages)
    if most < 0:
        return most
    positions = np.empty(most, np.int64)
    codes = np.empty(most, np.int32)
    # with a lazy dictionary the pages' codes are found first, once
    page_codes = np.empty(n_out if dict_lazy >= 0 else 0, np.int64)
    counts = np.full(pages.shape[0], -1, np.int64)
    if dict_lazy >= 0:
        top = _largest_code(dec, pages, idx, max_def, valid, positions, codes, dict_count, buf, lazy, page_codes, counts)
        if top < -1:
            return top
        if top >= 0:
            err = _dictionary_ready(buf, dec, lazy, dict_lazy, dict_off + (top + 1) * width)
            if err < 0:
                return err
    nulls = 0
    for p in range(pages.shape[0]):
        count, vpos, b1, nonnull = _known_codes_or_positions(
            dec, pages, p, idx, max_def, valid, positions, buf, lazy, page_codes, counts, width
        )
        if count < 0:
            return count
        # a dictionary page whose codes were found first looks them up in the ready dictionary
        base = dict_off if counts[p] >= 0 else np.int64(0)
        if count > 0 and counts[p] < 0:
            if pages[p, _ENC] == 0:
                need = vpos + (positions[count - 1] + 1) * width
                if need > b1:
                    return K.ERR_TRUNCATED
                have = _avail(buf, dec, lazy, pages[p, _LAZY], need, b1)
                if have < need:
                    return have if have < 0 else K.ERR_TRUNCATED
                base = vpos
            else:
                err = _dictionary_codes(dec, vpos, b1, positions, count, nonnull, dict_count, codes, buf, lazy, pages[p, _LAZY])
                if err < 0:
                    return err
                base = dict_off
        j = 0
        for k in range(pages[p, _LO], pages[p, _HI]):
            if valid[k] == 0:
                if mode == COPY:
                    out[k] = 0
                else:
                    out[2 * k] = 0
                    out[2 * k + 1] = 0
                nulls += 1
                continue
            s = base + positions[j] * width
            j += 1
            if mode == COPY:
                if width == 8:
                    out[k] = K.load_u64(dec, s)
                else:
                    out[k] = K.load_u32(dec, s)
            else:
                if width == 8:
                    v = np.int64(K.load_u64(dec, s))
                else:
                    v = np.int64(np.int32(np.uint32(K.load_u32(dec, s))))
                out[2 * k] = np.uint64(v)
                out[2 * k + 1] = _ALL_ONES if v < 0 else np.uint64(0)
    return nulls


@_jit
def locate_bytes(dec, pages, idx, max_def, dict_off, dict_end, dict_count, starts, lengths, valid, buf, lazy, dict_lazy):
    """Find the selected byte-array values of the pages: ``starts``/``lengths`` (0 for nulls)
    and ``valid`` per selected row; returns their total size or an error code. Lazily decompressed bodies (as in :func:`gather_fixed`) are decompressed as far as
    the values walked reach."""
    most = _most_selected(pages)
    if most < 0:
        return most
    positions = np.empty(most, np.int64)
    codes = np.empty(most, np.int32)
    total = np.int64(0)
    # the selected non-null rows of dictionary-encoded pages: their codes wait in ``starts``
    # until the entries are located after the pages, in one walk of the dictionary
    coded_rows = np.empty(idx.shape[0], np.int64)
    dict_rows = 0
    page_codes = np.empty(idx.shape[0] if dict_lazy >= 0 else 0, np.int64)
    counts = np.full(pages.shape[0], -1, np.int64)
    if dict_lazy >= 0 and dict_count > 0:
        top = _largest_code(dec, pages, idx, max_def, valid, positions, codes, dict_count, buf, lazy, page_codes, counts)
        if top < -1:
            return top
        if top >= 0:
            # entries vary in length: judge by the share of entries
            guess = dict_off + (dict_end - dict_off) * (top + 1) // dict_count
            err = _dictionary_ready(buf, dec, lazy, dict_lazy, guess)
            if err < 0:
                return err
    for p in range(pages.shape[0]):
        lo = pages[p, _LO]
        hi = pages[p, _HI]
        li = pages[p, _LAZY]
        # a PLAIN value is at least its 4-byte length
        count, vpos, b1, nonnull = _known_codes_or_positions(dec, pages, p, idx, max_def, valid, positions, buf, lazy, page_codes, counts, 4)
        if count < 0:
            return count
        j = 0
        if pages[p, _ENC] == 0:
            # walk the length prefixes up to the last needed value
            pos = vpos
            v = 0
            have = vpos if li >= 0 else b1
            for k in range(lo, hi):
                if valid[k] == 0:
                    starts[k] = 0
                    lengths[k] = 0
                    continue
                want = positions[j]
                j += 1
                while True:
                    if b1 - pos < 4:
                        return K.ERR_TRUNCATED
                    if pos + 4 > have:
                        have = _avail(buf, dec, lazy, li, pos + 4 + _GRAIN, b1)
                        if have < 0:
                            return have
                    length = np.int64(K.load_u32(dec, pos))
                    if length > b1 - pos - 4:
                        return K.ERR_TRUNCATED
                    if v == want and pos + 4 + length > have:
                        have = _avail(buf, dec, lazy, li, pos + 4 + length + _GRAIN, b1)
                        if have < 0:
                            return have
                    if v == want:
                        starts[k] = pos + 4
                        lengths[k] = length
                        total += length
                        pos += 4 + length
                        v += 1
                        break
                    pos += 4 + length
                    v += 1
            # the page's other values must lie in it too, as a read of the whole page requires
            # (a page read by another schema, its levels taken for values, fails here); not in a
            # lazily decompressed page, which is decompressed only up to its last selected value
            while v < nonnull and li < 0:
                if b1 - pos < 4:
                    return K.ERR_TRUNCATED
                length = np.int64(K.load_u32(dec, pos))
                if length > b1 - pos - 4:
                    return K.ERR_TRUNCATED
                pos += 4 + length
                v += 1
            continue
        if count > 0 and counts[p] < 0:
            err = _dictionary_codes(dec, vpos, b1, positions, count, nonnull, dict_count, codes, buf, lazy, li)
            if err < 0:
                return err
        for k in range(lo, hi):
            if valid[k] == 0:
                starts[k] = 0
                lengths[k] = 0
                continue
            coded_rows[dict_rows] = k
            dict_rows += 1
            starts[k] = positions[j]  # the code, until its entry is located below
            j += 1
    if dict_rows == 0:
        return total
    # the entries of the codes looked up, in one walk in the order of the codes: no table of
    # every entry's place (a dictionary of 100k strings would need 1.6 MB of it per read)
    rows_d = coded_rows[:dict_rows]
    looked_up = np.empty(dict_rows, np.int64)
    for t in range(dict_rows):
        looked_up[t] = starts[rows_d[t]]
    order = np.argsort(looked_up, kind="mergesort")
    dict_have = dict_end if dict_lazy < 0 else lazy[dict_lazy, S.OUT]
    located = 0
    dpos = dict_off
    entry_start = np.int64(0)
    entry_length = np.int64(0)
    for t in range(dict_rows):
        c = looked_up[order[t]]
        # the same steps as the walk of a PLAIN page above, written out: as a function called
        # per entry they cost 10 µs per chunk more in the reader benchmark's one-row reads
        while located <= c:
            if dict_end - dpos < 4:
                return K.ERR_TRUNCATED
            if dpos + 4 > dict_have:
                dict_have = _avail(buf, dec, lazy, dict_lazy, dpos + 4 + _GRAIN, dict_end)
                if dict_have < 0:
                    return dict_have
            length = np.int64(K.load_u32(dec, dpos))
            if length > dict_end - dpos - 4:
                return K.ERR_TRUNCATED
            if dpos + 4 + length > dict_have:
                dict_have = _avail(buf, dec, lazy, dict_lazy, dpos + 4 + length + _GRAIN, dict_end)
                if dict_have < 0:
                    return dict_have
            entry_start = dpos + 4
            entry_length = length
            dpos += 4 + length
            located += 1
        k = rows_d[order[t]]
        starts[k] = entry_start
        lengths[k] = entry_length
        total += entry_length
    return total


class Group(NamedTuple):
    """The columns of one row group a selective read decodes on this path, with their page
    tables laid end to end so that one kernel call serves them all."""

    members: tuple[int, ...]  # positions in the caller's list of columns
    shapes: tuple[Shape, ...]
    layouts: tuple[ChunkLayout, ...]
    page_starts: np.ndarray
    page_ends: np.ndarray
    page_offsets: np.ndarray
    page_sizes: np.ndarray
    col_pages: np.ndarray  # member c's pages are [col_pages[c], col_pages[c + 1])
    dict_offset: np.ndarray
    dict_size: np.ndarray  # -1: no dictionary page
    max_def: np.ndarray
    width: np.ndarray
    mode: np.ndarray
    codec: np.ndarray
    wide: np.ndarray  # 1: the member's values are uint64 words (decimal128: two per row)
    slot: np.ndarray  # the member's first row-sized slot in its output array
    slots32: int
    slots64: int
    slots_bytes: int
    mds: tuple[Any, ...]  # the members' column metadata, for the general path
    npages: tuple[int, ...]
    # every member's status _OK; writable (a read-only array is another type to the kernels),
    # never written
    all_ok: np.ndarray
    #: the writer compressed every v2 page (:func:`v2_values_compressed`)
    v2_always_compressed: bool = False


def group(
    members: list[int], shapes: list[Shape], layouts: list[ChunkLayout], max_defs: list[int], codec_ids: list[int],
    mds: list[Any], v2_always_compressed: bool = False,
) -> Group:
    """The :class:`Group` of the chunks ``layouts`` (one per member); ``v2_always_compressed``:
    their writer compressed every v2 page (:func:`v2_values_compressed`)."""
    col_pages = np.zeros(len(members) + 1, np.int64)
    np.cumsum([len(lay.page_starts) for lay in layouts], out=col_pages[1:])
    wide, slot = [], []
    counts = [0, 0, 0]
    for shape in shapes:
        kind = 2 if shape.width == 0 else int(shape.out_width != 4)
        wide.append(kind == 1)
        slot.append(counts[kind])
        counts[kind] += 2 if shape.mode == TO_DECIMAL128 else 1

    def cat(name: str) -> np.ndarray:
        parts = [getattr(lay, name) for lay in layouts]
        return np.concatenate(parts) if parts else np.empty(0, np.int64)

    dicts = [lay.dictionary if lay.dictionary is not None else (0, -1) for lay in layouts]
    i64 = np.int64
    return Group(
        tuple(members), tuple(shapes), tuple(layouts),
        cat("page_starts"), cat("page_ends"), cat("page_offsets"), cat("page_sizes"), col_pages,
        np.array([d[0] for d in dicts], i64), np.array([d[1] for d in dicts], i64),
        np.array(max_defs, i64), np.array([s.width for s in shapes], i64), np.array([s.mode for s in shapes], i64),
        np.array(codec_ids, i64), np.array(wide, np.uint8), np.array(slot, i64), counts[0], counts[1], counts[2], tuple(mds),
        tuple(len(lay.page_starts) for lay in layouts), np.zeros(len(members), i64), v2_always_compressed,
    )


#: a member's status in the group kernels: read here, left to the general path
OK, GENERAL = 0, 1
_OK, _GENERAL = OK, GENERAL

#: why planning a member failed: its pages do not add up, or a page lies outside the file
PLAN_INCONSISTENT, PLAN_OUTSIDE_FILE = -1, -2


@_jit_gil
def plan_group(sel_starts, sel_ends, idx, page_starts, page_ends, page_offsets, page_sizes, col_pages, dict_offset, dict_size, status, file_size, out, col_rows):
    """:func:`plan_chunk` for every member whose ``status`` is ``_OK``, rows end to end in ``out``; member ``c``'s
    are ``col_rows[c, 0]`` and the ``col_rows[c, 1]`` after it. Returns the number of rows, or
    ``-1 - c`` when member ``c`` fails (``col_rows[c, 1]`` then says why)."""
    n = 0
    for c in range(col_pages.shape[0] - 1):
        col_rows[c, 0] = n
        col_rows[c, 1] = 0
        if status[c] != _OK:
            continue
        a = col_pages[c]
        b = col_pages[c + 1]
        got = plan_chunk(
            sel_starts, sel_ends, idx, page_starts[a:b], page_ends[a:b], page_offsets[a:b], page_sizes[a:b],
            dict_offset[c], dict_size[c], out[n:],
        )
        if got < 0:
            col_rows[c, 1] = PLAN_INCONSISTENT
            return -1 - c
        for r in range(n, n + got):
            if out[r, _P_OFFSET] < 0 or out[r, _P_SIZE] < 0 or out[r, _P_OFFSET] + out[r, _P_SIZE] > file_size:
                col_rows[c, 1] = PLAN_OUTSIDE_FILE
                return -1 - c
        col_rows[c, 1] = got
        n += got
    return n


class GroupPlan(NamedTuple):
    """What a selective read of a :class:`Group` fetches (rows of :func:`plan_group`)."""

    rows: np.ndarray
    col_rows: np.ndarray
    n_ranges: int
    status: np.ndarray  # per member: _OK (read here) or _GENERAL

    def ranges(self) -> list[list[int]]:
        return self.rows[: self.n_ranges, :2].tolist()  # type: ignore[no-any-return]


class PlanError(ValueError):
    """Planning member ``member`` of a group failed."""

    def __init__(self, member: int, reason: int) -> None:
        super().__init__("inconsistent page plan" if reason == PLAN_INCONSISTENT else "a page lies outside the file")
        self.member = member
        self.reason = reason


def plan(
    g: Group, sel_starts: np.ndarray, sel_ends: np.ndarray, idx: np.ndarray, status: np.ndarray | None, file_size: int
) -> GroupPlan:
    """The pages of every member whose ``status`` is ``_OK`` (None: every member) a read of
    the rows ``idx`` needs (:class:`PlanError` if a member's are inconsistent)."""
    m = len(g.members)
    if status is None:
        status = g.all_ok
    elif status.shape != (m,):
        # the kernels index it by member without bounds checks
        raise ValueError(f"status has shape {status.shape}, the group {m} members")
    rows, col_rows = _plan_tables(g)
    n = plan_group(
        sel_starts, sel_ends, idx, g.page_starts, g.page_ends, g.page_offsets, g.page_sizes, g.col_pages,
        g.dict_offset, g.dict_size, status, file_size, rows, col_rows,
    )
    return _planned(rows, col_rows, n, status)


def _plan_tables(g: Group) -> tuple[np.ndarray, np.ndarray]:
    """The tables the planning kernels fill for ``g``: ranges to fetch, members' rows of them."""
    m = len(g.members)
    return np.empty((len(g.page_starts) + m, _PLAN_FIELDS), np.int64), np.empty((m, 2), np.int64)


def _planned(rows: np.ndarray, col_rows: np.ndarray, n: int, status: np.ndarray) -> GroupPlan:
    """The plan of ``n`` ranges, or :class:`PlanError` for the member the kernel's ``-1 - member``
    names."""
    if n < 0:
        member = -1 - n
        raise PlanError(member, int(col_rows[member, 1]))
    return GroupPlan(rows, col_rows, n, status)


#: why :func:`plan_indices` rejects a selection: its indices are not strictly increasing and
#: non-negative, or one lies past the row group's rows
_SEL_UNSORTED, _SEL_BEYOND = 1, 2


@_jit_gil
def plan_selected(idx, num_rows, page_starts, page_ends, page_offsets, page_sizes, col_pages, dict_offset, dict_size, status, file_size, out, col_rows):
    """:func:`plan_group` of the rows ``idx`` of a row group of ``num_rows`` rows, checked and
    turned into runs here: (rows planned or ``plan_group``'s error, 0 or why the selection is
    wrong)."""
    n = idx.shape[0]
    starts = np.empty(n, np.int64)
    ends = np.empty(n, np.int64)
    runs = index_runs(idx, starts, ends)
    if runs < 0:
        return 0, _SEL_UNSORTED
    if n and idx[n - 1] >= num_rows:
        return 0, _SEL_BEYOND
    got = plan_group(
        starts[:runs], ends[:runs], idx, page_starts, page_ends, page_offsets, page_sizes, col_pages, dict_offset, dict_size,
        status, file_size, out, col_rows,
    )
    return got, 0


def plan_indices(g: Group, idx: np.ndarray, num_rows: int, file_size: int) -> GroupPlan:
    """:func:`plan` of every member for the rows ``idx`` of a row group of ``num_rows`` rows,
    given as indices (a contiguous int64 array, read-only as :meth:`.RowRanges.to_indices`
    makes them) and checked here: :class:`OptionError` when they are not strictly increasing and
    non-negative, ``IndexError`` when one lies past the row group."""
    rows, col_rows = _plan_tables(g)
    n, bad = plan_selected(
        idx, num_rows, g.page_starts, g.page_ends, g.page_offsets, g.page_sizes, g.col_pages, g.dict_offset, g.dict_size,
        g.all_ok, file_size, rows, col_rows,
    )
    if bad == _SEL_UNSORTED:
        raise OptionError("row indices must be sorted, distinct and non-negative")
    if bad == _SEL_BEYOND:
        raise IndexError(f"row selection exceeds the row group's {num_rows} rows")
    return _planned(rows, col_rows, n, g.all_ok)


#: the column of a decompression job naming its member
_J_MEMBER = _JOB_FIELDS


@_jit
def prepare_group(buf, at, plan, col_rows, dict_size, max_def, width, codec, status, pages, col_pages, jobs, info, lazy, max_page_size, v2_always):
    """:func:`prepare_chunk` for every member whose ``status`` is still ``_OK``, page tables,
    jobs, lazily decompressed streams (``lazy``; no rows: none) and bodies end to end (a member whose
    headers this path does not read turns ``_GENERAL``). Returns (size of the buffer of bodies,
    number of jobs, number of lazy streams)."""
    total = np.int64(0)
    k = 0
    nj = 0
    nl = 0
    for c in range(col_rows.shape[0]):
        col_pages[c, 0] = k
        col_pages[c, 1] = k
        s = col_rows[c, 0]
        n = col_rows[c, 1]
        if status[c] != _OK or n <= 0:
            status[c] = _GENERAL
            continue
        has_dict = dict_size[c] >= 0
        size = prepare_chunk(
            buf, at[s : s + n], plan[s : s + n], n, has_dict, max_def[c], width[c], codec[c], pages[k:], jobs[nj:], info[c],
            lazy[nl:], max_page_size, v2_always,
        )
        if size < 0:
            status[c] = _GENERAL
            continue
        npages = n - (1 if has_dict else 0)
        for p in range(k, k + npages):
            pages[p, _BODY] += total
            pages[p, _BODY_END] += total
            if pages[p, _LAZY] >= 0:
                pages[p, _LAZY] += nl
        for j in range(nj, nj + info[c, _I_JOBS]):
            jobs[j, _J_DST] += total
            jobs[j, _J_MEMBER] = c
        for j in range(nl, nl + info[c, _I_LAZY]):
            lazy[j, S.OUT] += total
            lazy[j, S.OUT_END] += total
            lazy[j, S.OUT_START] += total
        if info[c, _I_DICT_LAZY] >= 0:
            info[c, _I_DICT_LAZY] += nl
        info[c, _I_DICT_OFF] += total
        info[c, _I_DICT_END] += total
        col_pages[c, 1] = k + npages
        k += npages
        nj += info[c, _I_JOBS]
        nl += info[c, _I_LAZY]
        total += size
    return total, nj, nl


@_jit
def decode_group(dec, pages, col_pages, idx, max_def, info, width, mode, wide, slot, status, out32, out64, valid, nulls, starts, lengths, offsets, data_at, buf, lazy):
    """Decode the selected rows of every ``_OK`` member: fixed-width values into its slots of
    ``out32``/``out64``, byte arrays into ``offsets`` (its slot, ``rows + 1`` entries) and the
    returned data (from ``data_at[c]``); ``valid`` and ``nulls`` per member. A member whose
    values this path does not read turns ``_GENERAL``. Bodies with a row in ``lazy`` are
    decompressed from ``buf`` as far as they are read."""
    rows = idx.shape[0]
    m = col_pages.shape[0]
    sizes = np.zeros(m, np.int64)
    total = np.int64(0)
    for c in range(m):
        if status[c] != _OK:
            continue
        a = col_pages[c, 0]
        b = col_pages[c, 1]
        v = valid[c * rows : (c + 1) * rows]
        s = slot[c]
        if width[c] > 0:
            words = 2 if mode[c] == TO_DECIMAL128 else 1
            if wide[c]:
                got = gather_fixed(
                    dec, pages[a:b], idx, max_def[c], info[c, _I_DICT_OFF], info[c, _I_DICT_COUNT], width[c], mode[c],
                    out64[s * rows : (s + words) * rows], v, buf, lazy, info[c, _I_DICT_LAZY],
                )
            else:
                got = gather_fixed(
                    dec, pages[a:b], idx, max_def[c], info[c, _I_DICT_OFF], info[c, _I_DICT_COUNT], width[c], mode[c],
                    out32[s * rows : (s + 1) * rows], v, buf, lazy, info[c, _I_DICT_LAZY],
                )
            if got < 0:
                status[c] = _GENERAL
            else:
                nulls[c] = got
            continue
        size = locate_bytes(
            dec, pages[a:b], idx, max_def[c], info[c, _I_DICT_OFF], info[c, _I_DICT_END], info[c, _I_DICT_COUNT],
            starts[s * rows : (s + 1) * rows], lengths[s * rows : (s + 1) * rows], v, buf, lazy, info[c, _I_DICT_LAZY],
        )
        if size < 0 or size > _INT32_MAX:
            status[c] = _GENERAL
            continue
        sizes[c] = size
        total += size
        n_valid = 0
        for r in range(rows):
            n_valid += v[r]
        nulls[c] = rows - n_valid
    data = np.empty(total, np.uint8)
    at = np.int64(0)
    for c in range(m):
        if status[c] != _OK or width[c] > 0:
            continue
        s = slot[c]
        data_at[c] = at
        o = offsets[s * (rows + 1) : (s + 1) * (rows + 1)]
        o[0] = 0
        end = K.gather_bytes_at(dec, starts[s * rows : (s + 1) * rows], lengths[s * rows : (s + 1) * rows], o, data[at : at + sizes[c]], 0, 0)
        if end != sizes[c]:
            status[c] = _GENERAL
        at += sizes[c]
    return data


def read_group(
    g: Group, gplan: GroupPlan, buf: np.ndarray, at: np.ndarray, idx: np.ndarray, c: ReadCounters, max_page_size: int,
    partial: bool = True,
) -> list[pa.Array | None]:
    """The Arrow arrays of the rows ``idx`` (sorted, within the row group) of every member of
    ``g``, whose pages ``gplan`` fetched into ``buf`` (range ``i`` starts at ``at[i]``); None
    for a member the general path must read. ``partial``: snappy pages are decompressed only as
    far as the selected rows need."""
    m = len(g.members)
    n = gplan.n_ranges
    status = gplan.status.copy()
    pages = np.empty((n, _PAGE_FIELDS), np.int64)
    col_pages = np.empty((m, 2), np.int64)
    jobs = np.empty((2 * n, _JOB_FIELDS + 1), np.int64)
    info = np.empty((m, _INFO_FIELDS), np.int64)
    lazy = np.empty((n if partial else 0, S.STATE_FIELDS), np.int64)
    rows = len(idx)
    valid = np.empty(m * rows, np.uint8)
    nulls = np.zeros(m, np.int64)
    # what no member uses stays empty (the kernels write no slot of it)
    out32 = np.empty(g.slots32 * rows, np.uint32) if g.slots32 else _NO_U32
    out64 = buffers.empty(g.slots64 * rows, np.uint64) if g.slots64 else _NO_U64
    if g.slots_bytes:
        starts = np.empty(g.slots_bytes * rows, np.int64)
        lengths = np.empty(g.slots_bytes * rows, np.int64)
        offsets = np.empty(g.slots_bytes * (rows + 1), np.int32)
    else:
        starts = lengths = _NO_I64
        offsets = _NO_I32
    data_at = np.zeros(m, np.int64)
    total, nj, nl = prepare_group(
        buf, at, gplan.rows, gplan.col_rows, g.dict_size, g.max_def, g.width, g.codec, status, pages, col_pages, jobs, info,
        lazy, max_page_size, g.v2_always_compressed,
    )
    dec = _scratch(total)
    clock = time.perf_counter
    t0 = clock()
    decompressed = 0
    if nj:
        job_done = np.empty(nj, np.int64)
        if run_jobs(buf, dec, jobs, nj, max_page_size, job_done):
            for j in finish_jobs(jobs, job_done, buf, dec, max_page_size):
                status[jobs[j, _J_MEMBER]] = _GENERAL
        decompressed = int(job_done.sum())
    t1 = clock()
    c.decompress_seconds += t1 - t0
    data = decode_group(
        dec, pages, col_pages, idx, g.max_def, info, g.width, g.mode, g.wide, g.slot, status,
        out32, out64, valid, nulls, starts, lengths, offsets, data_at, buf, lazy,
    )
    if nl:
        decompressed += int(_lazy_produced(lazy, nl))
    c.bytes_decompressed += int(decompressed)
    out: list[pa.Array | None] = []
    done = read = skipped = 0
    spans = col_pages.tolist()
    for k, (shape, ok, null_count, s) in enumerate(zip(g.shapes, status.tolist(), nulls.tolist(), g.slot.tolist())):
        if ok != _OK:
            out.append(None)
            continue
        validity = None if null_count == 0 else _validity(valid[k * rows : (k + 1) * rows])
        if shape.width:
            word = 8 if g.wide[k] else 4
            whole = out64 if word == 8 else out32
            per_row = shape.out_width // word
            values = pa.py_buffer(whole[s * rows : (s + per_row) * rows])
            out.append(pa.Array.from_buffers(shape.arrow_type, rows, [validity, values], null_count))
        else:
            o = offsets[s * (rows + 1) : (s + 1) * (rows + 1)]
            start = int(data_at[k])
            values = pa.py_buffer(data[start : start + int(o[rows])])
            out.append(pa.Array.from_buffers(shape.arrow_type, rows, [validity, pa.py_buffer(o), values], null_count))
        done += 1
        first, last = spans[k]
        read += last - first
        skipped += g.npages[k] - (last - first)
    c.pages_fetched += read
    c.pages_skipped += skipped
    c.decode_seconds += clock() - t1
    c.values_decoded += rows * done
    return out


@_jit_gil
def _lazy_produced(lazy, n):
    total = np.int64(0)
    for j in range(n):
        total += lazy[j, S.OUT] - lazy[j, S.OUT_START]
    return total


def finish_jobs(jobs: np.ndarray, done: np.ndarray, buf: np.ndarray, dec: np.ndarray, max_page_size: int) -> list[int]:
    """The jobs :func:`run_jobs` left: those of other codecs are decompressed here
    (:func:`.codecs.decompress_into`, which checks what they declare) and ``done`` gets their
    bytes. Returns the jobs that failed, whose ``done`` becomes 0: the caller hands their chunks
    to the general path, which reports what is wrong with them."""
    failed = []
    bufv, decv = buf.data, dec.data
    for j in np.flatnonzero(done < 0).tolist():
        elsewhere = done[j] == JOB_ELSEWHERE
        done[j] = 0
        if not elsewhere:
            failed.append(j)
            continue
        src, src_len, dst, dst_len, codec = jobs[j, :_JOB_FIELDS].tolist()
        try:
            codecs.decompress_into(codec, bufv[src : src + src_len], np.frombuffer(decv[dst : dst + dst_len], np.uint8), max_page_size)
        except Exception:
            failed.append(j)
            continue
        done[j] = dst_len
    return failed


_local = threading.local()


def _scratch(size: int) -> np.ndarray:
    """A per-thread buffer for decompressed pages, reused from chunk to chunk: a fresh one per
    chunk pays for allocation and page faults, and the arrays built from it are copies."""
    buf = getattr(_local, "buf", None)
    if buf is None or len(buf) < size:
        buf = _local.buf = np.empty(max(size, 1 << 20, 0 if buf is None else 2 * len(buf)), np.uint8)
    return buf[:size]  # type: ignore[no-any-return]


def _validity(valid: np.ndarray) -> Any:
    return pa.py_buffer(np.packbits(valid, bitorder="little"))


#: the outputs a group without members of their kind passes the decode kernel
_NO_U32 = np.empty(0, np.uint32)
_NO_U64 = np.empty(0, np.uint64)
_NO_I64 = np.empty(0, np.int64)
_NO_I32 = np.empty(0, np.int32)
