"""Selected rows of the flat column chunks of a row group, read in a few kernel calls.

A selective read of a payload column touches few pages per chunk: its dictionary page and the
data pages that hold selected rows. The general route (:mod:`.selected`) parses, decompresses and
decodes them page by page, with Python between the steps: tens of microseconds per chunk beyond
decompression, holding the GIL. This route covers the common flat shapes — required or optional
(definition level at most 1) INT32, INT64, FLOAT and DOUBLE columns (also as decimal128) and
BYTE_ARRAY columns as strings or binary; PLAIN or dictionary encoded; data pages v1 and v2 — for
every column of a row group at once (a :class:`Group`): one kernel plans the pages to fetch, one
parses every page header (:func:`prepare_group`), one decompressor call per page fills one buffer
(:mod:`.page_table`), and one kernel decodes the selected values straight into Arrow's layout
(:mod:`.selected_values`).

Anything else it meets (another encoding, a dictionary decoded earlier, an inconsistent header
or value) makes :func:`read_group` return None for that column: the caller reads the chunk on
the general route, which either reads it or raises the located error, so both routes fail the
same way.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from lazyscan.errors import OptionError
from lazyscan.format import snappy as S
from lazyscan.format.counters import ReadCounters
from lazyscan.format.kernels import index_runs, kernel_jit
from lazyscan.parquet import buffers
from lazyscan.parquet import kernels as K
from lazyscan.parquet import page_header as H
from lazyscan.parquet import page_table as T
from lazyscan.parquet import selected_values as V
from lazyscan.parquet.convert import is_bytes_type, simple_dtype
from lazyscan.parquet.layout import ChunkLayout
from lazyscan.parquet.metadata import PhysicalType
from lazyscan.parquet.page_table import (
    BODY,
    BODY_END,
    DEF_LEN,
    ENC,
    FIRST,
    HI,
    I_DICT_COUNT,
    I_DICT_END,
    I_DICT_LAZY,
    I_DICT_OFF,
    I_JOBS,
    I_LAZY,
    INFO_FIELDS,
    J_DST,
    J_MEMBER,
    JOB_FIELDS,
    KIND,
    LAZY,
    LO,
    NULLS,
    NUM,
    PAGE_FIELDS,
    REP_LEN,
    SNAPPY,
    add_job,
    add_page_jobs,
    v2_values_compressed,
)
from lazyscan.parquet.schema import ColumnDescriptor
from lazyscan.parquet.selected_values import COPY, GENERAL, OK, TO_DECIMAL128

_jit = kernel_jit(nogil=True, read_only=("buf",))
_jit_gil = kernel_jit(read_only=("idx", "page_starts", "page_ends"))

#: this route reads selections of at most this fraction of a row group's rows; denser ones
#: decode faster through the general route's run decoding (reader benchmark, 10 % selections)
MAX_DENSITY = 0.02


def takes(rows: int, num_rows: int) -> bool:
    """Whether a selection of ``rows`` of a row group of ``num_rows`` is read on this route."""
    return rows <= MAX_DENSITY * num_rows


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
        return Shape(0, 0, COPY, atype) if is_bytes_type(atype) else None
    width = {PhysicalType.INT32: 4, PhysicalType.INT64: 8, PhysicalType.FLOAT: 4, PhysicalType.DOUBLE: 8}.get(pt)
    if width is None:
        return None
    if pa.types.is_decimal128(atype) and pt in (PhysicalType.INT32, PhysicalType.INT64):
        return Shape(width, 16, TO_DECIMAL128, atype)
    simple = simple_dtype(atype, pt)
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



@_jit
def _lazy_stream(buf, src, src_len, dst, dst_len, codec, max_page_size, lazy, nl):
    """Row ``nl`` of ``lazy`` set up for the snappy body ``buf[src:src + src_len]`` bound for
    ``[dst, dst + dst_len)``; False when it cannot be read lazily (then a job reads it whole, or
    reports what is wrong with it)."""
    if codec != SNAPPY or dst_len > max_page_size or nl >= lazy.shape[0]:
        return False
    return S.start(buf, src, src + src_len, dst, dst + dst_len, lazy[nl]) == 0


@_jit
def prepare_chunk(buf, at, plan, n, has_dict, max_def, width, codec, pages, jobs, info, lazy, max_page_size, v2_always=False):
    """Parse and check the page headers of a fetched chunk (range ``i`` of ``plan`` starts at
    ``at[i]`` in ``buf``): fill the page table of the decode kernels, the decompression jobs and
    ``info``; return the size of the buffer of bodies, or -1 when this path does not read it.
    ``v2_always``: the writer compressed every v2 page (:func:`v2_values_compressed`).

    Snappy bodies get a row of ``lazy`` (snappy stream states, decompressed as far as the
    kernels read; no rows: none) instead of a job; ``info[I_LAZY]`` counts them."""
    header = np.empty(H.SLOTS, np.int64)
    total = np.int64(0)
    nj = 0
    nl = 0
    info[I_DICT_OFF] = 0
    info[I_DICT_END] = 0
    info[I_DICT_COUNT] = -1
    info[I_DICT_LAZY] = -1
    info[I_LAZY] = 0
    k = 0
    for i in range(n):
        start = at[i]
        length = plan[i, _P_SIZE]
        if start < 0 or length < 0 or start + length > buf.shape[0]:
            return -1
        hs = H.parse_into_slots(buf, start, start + length, header)
        if hs < 0:
            return -1
        kind = header[H.SLOT_TYPE]
        usize = header[H.SLOT_USIZE]
        csize = header[H.SLOT_CSIZE]
        if usize < 0 or csize < 0 or hs + csize > length:
            return -1
        b = start + hs
        if i == 0 and has_dict:
            if kind != 2 or header[H.SLOT_DICT] != 1 or header[H.SLOT_DICT_NUM] < 0:
                return -1
            enc = header[H.SLOT_DICT_ENC]
            if enc != 0 and enc != 2 and enc != H.MISSING:
                return -1
            count = header[H.SLOT_DICT_NUM]
            # fixed-width entries fill the page exactly; byte arrays take 4 bytes each at least
            if (count * width != usize) if width > 0 else (count * 4 > usize):
                return -1
            info[I_DICT_OFF] = total
            info[I_DICT_END] = total + usize
            info[I_DICT_COUNT] = count
            if _lazy_stream(buf, b, csize, total, usize, codec, max_page_size, lazy, nl):
                info[I_DICT_LAZY] = nl
                nl += 1
                total += usize
                continue
        else:
            rows = plan[i, _P_ROWS]
            rep = np.int64(0)
            dfl = np.int64(0)
            if kind == 0:
                if header[H.SLOT_V1] != 1 or header[H.SLOT_V1_NUM] != rows:
                    return -1
                enc = header[H.SLOT_V1_ENC]
                lenc = header[H.SLOT_V1_DEF]
                if max_def > 0 and lenc != 3 and lenc != H.MISSING:
                    return -1
                page_kind = 1
            elif kind == 3:
                if header[H.SLOT_V2] != 1 or header[H.SLOT_V2_NUM] != rows or header[H.SLOT_V2_ROWS] != rows:
                    return -1
                enc = header[H.SLOT_V2_ENC]
                rep = header[H.SLOT_V2_REP_LEN]
                dfl = header[H.SLOT_V2_DEF_LEN]
                if rep != 0 or dfl < 0 or dfl > csize or dfl > usize or (max_def == 0 and dfl != 0):
                    return -1
                page_kind = 2
            else:
                return -1
            if enc != 0 and enc != 2 and enc != 8:
                return -1
            if enc != 0 and info[I_DICT_COUNT] < 0:
                return -1
            pages[k, KIND] = page_kind
            pages[k, BODY] = total
            pages[k, BODY_END] = total + usize
            pages[k, NUM] = rows
            pages[k, ENC] = enc
            pages[k, REP_LEN] = rep
            pages[k, DEF_LEN] = dfl
            pages[k, FIRST] = plan[i, _P_FIRST]
            pages[k, LO] = plan[i, _P_LO]
            pages[k, HI] = plan[i, _P_HI]
            pages[k, LAZY] = -1
            pages[k, NULLS] = header[H.SLOT_V2_NULLS] if page_kind == 2 else -1
            k += 1
            if lazy.shape[0] > nl and plan[i, _P_HI] > plan[i, _P_LO]:
                levels = rep + dfl if page_kind == 2 else 0
                compressed = page_kind == 1 or v2_values_compressed(header, csize - levels, usize - levels, v2_always)
                if (
                    compressed and levels <= csize and levels <= usize
                    and _lazy_stream(buf, b + levels, csize - levels, total + levels, usize - levels, codec, max_page_size, lazy, nl)
                ):
                    if levels > 0:  # v2: the levels are stored as they are
                        nj = add_job(jobs, nj, b, levels, total, levels, 0)
                    pages[k - 1, LAZY] = nl
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
    info[I_JOBS] = nj
    info[I_LAZY] = nl
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
    # every member's status OK; writable (a read-only array is another type to the kernels),
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



#: why planning a member failed: its pages do not add up, or a page lies outside the file
PLAN_INCONSISTENT, PLAN_OUTSIDE_FILE = -1, -2


@_jit_gil
def plan_group(sel_starts, sel_ends, idx, page_starts, page_ends, page_offsets, page_sizes, col_pages, dict_offset, dict_size, status, file_size, out, col_rows):
    """:func:`plan_chunk` for every member whose ``status`` is ``OK``, rows end to end in ``out``; member ``c``'s
    are ``col_rows[c, 0]`` and the ``col_rows[c, 1]`` after it. Returns the number of rows, or
    ``-1 - c`` when member ``c`` fails (``col_rows[c, 1]`` then says why)."""
    n = 0
    for c in range(col_pages.shape[0] - 1):
        col_rows[c, 0] = n
        col_rows[c, 1] = 0
        if status[c] != OK:
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
    status: np.ndarray  # per member: OK (read here) or GENERAL

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
    """The pages of every member whose ``status`` is ``OK`` (None: every member) a read of
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



@_jit
def prepare_group(buf, at, plan, col_rows, dict_size, max_def, width, codec, status, pages, col_pages, jobs, info, lazy, max_page_size, v2_always):
    """:func:`prepare_chunk` for every member whose ``status`` is still ``OK``, page tables,
    jobs, lazily decompressed streams (``lazy``; no rows: none) and bodies end to end (a member whose
    headers this path does not read turns ``GENERAL``). Returns (size of the buffer of bodies,
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
        if status[c] != OK or n <= 0:
            status[c] = GENERAL
            continue
        has_dict = dict_size[c] >= 0
        size = prepare_chunk(
            buf, at[s : s + n], plan[s : s + n], n, has_dict, max_def[c], width[c], codec[c], pages[k:], jobs[nj:], info[c],
            lazy[nl:], max_page_size, v2_always,
        )
        if size < 0:
            status[c] = GENERAL
            continue
        npages = n - (1 if has_dict else 0)
        for p in range(k, k + npages):
            pages[p, BODY] += total
            pages[p, BODY_END] += total
            if pages[p, LAZY] >= 0:
                pages[p, LAZY] += nl
        for j in range(nj, nj + info[c, I_JOBS]):
            jobs[j, J_DST] += total
            jobs[j, J_MEMBER] = c
        for j in range(nl, nl + info[c, I_LAZY]):
            lazy[j, S.OUT] += total
            lazy[j, S.OUT_END] += total
            lazy[j, S.OUT_START] += total
        if info[c, I_DICT_LAZY] >= 0:
            info[c, I_DICT_LAZY] += nl
        info[c, I_DICT_OFF] += total
        info[c, I_DICT_END] += total
        col_pages[c, 1] = k + npages
        k += npages
        nj += info[c, I_JOBS]
        nl += info[c, I_LAZY]
        total += size
    return total, nj, nl


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
    pages = np.empty((n, PAGE_FIELDS), np.int64)
    col_pages = np.empty((m, 2), np.int64)
    jobs = np.empty((2 * n, JOB_FIELDS + 1), np.int64)
    info = np.empty((m, INFO_FIELDS), np.int64)
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
    dec = T.scratch(total)
    clock = time.perf_counter
    t0 = clock()
    decompressed = 0
    if nj:
        job_done = np.empty(nj, np.int64)
        if T.run_jobs(buf, dec, jobs, nj, max_page_size, job_done):
            for j in T.finish_jobs(jobs, job_done, buf, dec, max_page_size):
                status[jobs[j, J_MEMBER]] = GENERAL
        decompressed = int(job_done.sum())
    t1 = clock()
    c.decompress_seconds += t1 - t0
    data = V.decode_group(
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
        if ok != OK:
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


def _validity(valid: np.ndarray) -> Any:
    return pa.py_buffer(np.packbits(valid, bitorder="little"))


#: the outputs a group without members of their kind passes the decode kernel
_NO_U32 = np.empty(0, np.uint32)
_NO_U64 = np.empty(0, np.uint64)
_NO_I64 = np.empty(0, np.int64)
_NO_I32 = np.empty(0, np.int32)


class Shapes:
    """The :class:`Shape` of each leaf column of one file (None: not read on this route), found
    once."""

    def __init__(self) -> None:
        self._shapes: dict[int, Shape | None] = {}

    def of(self, desc: ColumnDescriptor) -> Shape | None:
        try:
            return self._shapes[desc.index]
        except KeyError:
            shape = self._shapes[desc.index] = shape_of(desc)
            return shape
