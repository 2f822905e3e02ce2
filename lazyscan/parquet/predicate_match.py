"""Whole predicate-column chunks in two kernel calls: ``=`` / ``IN`` on byte arrays, and the
rows whose dictionary entry passes.

The filter column of a needle query is read for every row of a row group, only to find the few
rows equal to the literal. The general route (:mod:`.whole_chunk` with a matcher) parses,
decompresses and matches page by page with Python between the steps. Here one kernel walks and
checks every page header of the fetched chunk, Python makes one decompressor call per page into
one buffer (the decompressors release the GIL), and one kernel matches the dictionary once and
every data page: PLAIN values are compared where they lie, dictionary codes go through the
dictionary's matches, and pages of a dictionary no entry of which matches are not decoded at all.
:func:`match_dictionary_rows` does the same for any single-column predicate the dictionary
tier evaluated once per entry: it decodes the codes of every data page and returns the rows
that pass with their codes, which the output then uses.

It reads the shapes of :mod:`.selected_rows` (flat, definition level at most 1, PLAIN or
dictionary encoded, data pages v1 and v2) and returns None for anything else, or for any
inconsistency: the caller then reads the chunk on the general route, which reads it or raises
the located error, so both routes fail the same way.
"""

from __future__ import annotations

import time

import numpy as np

from lazyscan.format.counters import ReadCounters
from lazyscan.format.kernels import kernel_jit
from lazyscan.parquet import kernels as K
from lazyscan.parquet import page_header as H
from lazyscan.parquet import page_table as T
from lazyscan.parquet.decode import decode_dictionary_page
from lazyscan.parquet.match import BytesMatcher, equals_any
from lazyscan.parquet.page_header import parse_page_header
from lazyscan.parquet.page_table import (
    BODY,
    BODY_END,
    DEF_LEN,
    ENC,
    FIRST,
    I_DICT_COUNT,
    I_DICT_END,
    I_DICT_OFF,
    I_JOBS,
    JOB_FIELDS,
    KIND,
    NULLS,
    NUM,
    PAGE_FIELDS,
    REP_LEN,
    add_page_jobs,
    level_span,
    v2_values_compressed,
)
from lazyscan.parquet.pages import PageCache
from lazyscan.parquet.schema import ColumnDescriptor

_jit = kernel_jit(nogil=True, read_only=("buf",))

#: the slot of ``info`` where :func:`walk_chunk` writes the number of data pages
_I_PAGES = 4

#: ``walk_chunk``'s answers besides the size of the bodies: not read here, or more pages than
#: the tables hold
NOT_HERE, TOO_MANY_PAGES = -1, -2


@_jit
def walk_chunk(buf, end, num_rows, max_def, codec, pages, page_at, jobs, info, known_dict=-1, v2_always=False):
    """Parse and check the page headers of a fetched column chunk ``buf[:end]`` (dictionary page
    first, if any; ``known_dict`` >= 0: the data pages only, of a dictionary of that many
    entries decoded earlier): fill the page table, where each page starts (``page_at``), the
    decompression jobs and ``info`` (five slots). Returns the size of the buffer of bodies,
    ``NOT_HERE`` or ``TOO_MANY_PAGES``. ``v2_always``: the writer compressed every v2 page
    (:func:`.page_table.v2_values_compressed`)."""
    header = np.empty(H.SLOTS, np.int64)
    info[I_DICT_OFF] = 0
    info[I_DICT_END] = 0
    info[I_DICT_COUNT] = known_dict
    total = np.int64(0)
    nj = 0
    k = 0
    rows = np.int64(0)
    pos = np.int64(0)
    while pos < end and rows < num_rows:
        hs = H.parse_into_slots(buf, pos, end, header)
        if hs < 0:
            return NOT_HERE
        kind = header[H.SLOT_TYPE]
        usize = header[H.SLOT_USIZE]
        csize = header[H.SLOT_CSIZE]
        b = pos + hs
        if usize < 0 or csize < 0 or b + csize > end:
            return NOT_HERE
        if nj + 2 > jobs.shape[0] or k >= pages.shape[0]:
            return TOO_MANY_PAGES
        if kind == 2:
            if k > 0 or info[I_DICT_COUNT] >= 0 or header[H.SLOT_DICT] != 1 or header[H.SLOT_DICT_NUM] < 0:
                return NOT_HERE
            enc = header[H.SLOT_DICT_ENC]
            if enc != 0 and enc != 2 and enc != H.MISSING:
                return NOT_HERE
            info[I_DICT_OFF] = total
            info[I_DICT_END] = total + usize
            info[I_DICT_COUNT] = header[H.SLOT_DICT_NUM]
        elif kind == 0 or kind == 3:
            rep = np.int64(0)
            dfl = np.int64(0)
            if kind == 0:
                if header[H.SLOT_V1] != 1:
                    return NOT_HERE
                num = header[H.SLOT_V1_NUM]
                enc = header[H.SLOT_V1_ENC]
                lenc = header[H.SLOT_V1_DEF]
                if max_def > 0 and lenc != 3 and lenc != H.MISSING:
                    return NOT_HERE
                page_kind = 1
            else:
                if header[H.SLOT_V2] != 1 or header[H.SLOT_V2_ROWS] != header[H.SLOT_V2_NUM]:
                    return NOT_HERE
                num = header[H.SLOT_V2_NUM]
                enc = header[H.SLOT_V2_ENC]
                rep = header[H.SLOT_V2_REP_LEN]
                dfl = header[H.SLOT_V2_DEF_LEN]
                if rep != 0 or dfl < 0 or dfl > csize or dfl > usize or (max_def == 0 and dfl != 0):
                    return NOT_HERE
                page_kind = 2
            if num < 0 or rows + num > num_rows:
                return NOT_HERE
            if enc != 0 and enc != 2 and enc != 8:
                return NOT_HERE
            if enc != 0 and info[I_DICT_COUNT] < 0:
                return NOT_HERE
            pages[k, KIND] = page_kind
            pages[k, BODY] = total
            pages[k, BODY_END] = total + usize
            pages[k, NUM] = num
            pages[k, ENC] = enc
            pages[k, REP_LEN] = rep
            pages[k, DEF_LEN] = dfl
            pages[k, FIRST] = rows
            pages[k, NULLS] = header[H.SLOT_V2_NULLS] if page_kind == 2 else -1
            page_at[k] = pos
            k += 1
            rows += num
            if page_kind == 2:
                v2c = v2_values_compressed(header, csize, usize, v2_always)
                nj = add_page_jobs(jobs, nj, b, csize, usize, total, codec, dfl, v2c)
                total += usize
                pos = b + csize
                continue
        else:
            return NOT_HERE
        nj = add_page_jobs(jobs, nj, b, csize, usize, total, codec, -1, True)
        total += usize
        pos = b + csize
    if rows != num_rows:
        return NOT_HERE
    info[I_JOBS] = nj
    info[_I_PAGES] = k
    return total


@_jit
def _page_levels(dec, pages, p, max_def, levels):
    """Definition levels of page ``p`` into ``levels`` (when ``max_def`` > 0): (values on the
    page, where they start), or (error code, 0)."""
    b0 = pages[p, BODY]
    b1 = pages[p, BODY_END]
    num = pages[p, NUM]
    vpos = b0 + pages[p, REP_LEN] + pages[p, DEF_LEN]
    if max_def == 0:
        return num, vpos
    lpos, lend = level_span(dec, b0, b1, pages[p, KIND], pages[p, REP_LEN], pages[p, DEF_LEN])
    if lpos < 0:
        return lpos, 0
    vpos = lend
    # a level above 1 is an error (the general path then names it), not a null
    got = K.rle_bp_decode_codes(dec, lpos, lend, 1, num, levels, np.int64(2))
    if got < 0:
        return got, 0
    if pages[p, KIND] == 2 and K.rle_bp_stream_end(dec, lpos, lend, 1, num) != lend:
        return K.ERR_BAD_LENGTH, 0
    count = 0
    for r in range(num):
        count += levels[r]
    if pages[p, KIND] == 2 and num - count != pages[p, NULLS]:
        return K.ERR_BAD_LENGTH, 0
    return count, vpos


@_jit
def match_chunk(dec, pages, npages, max_def, info, needles, needle_offsets, out, page_hits):
    """``out[r]`` = 1 where row ``r``'s value equals one of the needles (0 for NULL);
    ``page_hits[p]`` counts page ``p``'s matches. Returns the number of matches or an error code.
    With no dictionary entry matching, dictionary-encoded pages are not decoded."""
    dcount = info[I_DICT_COUNT]
    dict_hit = np.zeros(max(dcount, 0), np.uint8)
    any_dict = False
    if dcount >= 0:
        pos = info[I_DICT_OFF]
        end = info[I_DICT_END]
        for i in range(dcount):
            if end - pos < 4:
                return K.ERR_TRUNCATED
            length = np.int64(K.load_u32(dec, pos))
            pos += 4
            if length > end - pos:
                return K.ERR_BAD_LENGTH
            if equals_any(dec, pos, length, needles, needle_offsets):
                dict_hit[i] = 1
                any_dict = True
            pos += length
        if pos != end:  # more entries than the header counts: the general path refuses the page
            return K.ERR_BAD_LENGTH
    most = 0
    for p in range(npages):
        most = max(most, pages[p, NUM])
    levels = np.empty(most if max_def > 0 else 0, np.int32)
    codes = np.empty(most if any_dict else 0, np.int32)
    hits = 0
    for p in range(npages):
        b1 = pages[p, BODY_END]
        num = pages[p, NUM]
        first = pages[p, FIRST]
        page_hits[p] = 0
        out[first : first + num] = 0
        count, vpos = _page_levels(dec, pages, p, max_def, levels)
        if count < 0:
            return count
        if count == 0:
            continue
        found = 0
        if pages[p, ENC] == 0:
            pos = vpos
            r = 0
            for _ in range(count):
                if max_def > 0:
                    while levels[r] != 1:
                        r += 1
                if b1 - pos < 4:
                    return K.ERR_TRUNCATED
                length = np.int64(K.load_u32(dec, pos))
                pos += 4
                if length > b1 - pos:
                    return K.ERR_BAD_LENGTH
                if equals_any(dec, pos, length, needles, needle_offsets):
                    out[first + r] = 1
                    found += 1
                pos += length
                r += 1
        elif any_dict:
            if vpos >= b1:
                return K.ERR_TRUNCATED
            width = np.int64(dec[vpos])
            if width > 32:
                return K.ERR_BAD_BIT_WIDTH
            got = K.rle_bp_decode_codes(dec, vpos + 1, b1, width, count, codes, dcount)
            if got < 0:
                return got
            r = 0
            for i in range(count):
                if max_def > 0:
                    while levels[r] != 1:
                        r += 1
                if dict_hit[codes[i]]:
                    out[first + r] = 1
                    found += 1
                r += 1
        page_hits[p] = found
        hits += found
    return hits


@_jit
def _keep_run(row, n, code, kept, kept_codes, kept_valid, k):
    """Rows ``row .. row + n`` of code ``code`` into the kept rows from ``k``; the new ``k``."""
    for r in range(n):
        kept[k] = row + r
        kept_valid[k] = 1
        kept_codes[k] = code
        k += 1
    return k


@_jit
def _passing_packed(buf, start, end, bit_width, n, ulimit, entry_passes, row, kept, kept_codes, kept_valid, k):
    """The rows of a bit-packed run of ``n`` codes from byte ``start`` (of rows ``row ..``) whose
    entry passes, into the kept rows from ``k``: the new ``k``, or ``ERR_BAD_INDEX`` for a code
    >= ``ulimit``. Codes are unpacked as :func:`.kernels._unpack_run` does, tested as they come."""
    if bit_width == 0:
        if ulimit == 0:
            return K.ERR_BAD_INDEX
        return _keep_run(row, n, 0, kept, kept_codes, kept_valid, k) if entry_passes[0] else k
    mask = K.low_bits(bit_width)
    offs, shifts, groups = K.packed_groups(start, end, bit_width, n)
    for g in range(groups):
        b = start + g * bit_width
        for t in range(8):
            v = (K.load_u64(buf, b + offs[t]) >> shifts[t]) & mask
            if v >= ulimit:
                return K.ERR_BAD_INDEX
            if entry_passes[v]:
                kept[k] = row + g * 8 + t
                kept_valid[k] = 1
                kept_codes[k] = np.int32(v)
                k += 1
    for j in range(groups * 8, n):
        v = K.bits_at(buf, end, start, j * bit_width, bit_width) & mask
        if v >= ulimit:
            return K.ERR_BAD_INDEX
        if entry_passes[v]:
            kept[k] = row + j
            kept_valid[k] = 1
            kept_codes[k] = np.int32(v)
            k += 1
    return k


@_jit
def _passing_codes(buf, pos, end, bit_width, count, dict_count, entry_passes, row, kept, kept_codes, kept_valid, k):
    """For a page without NULLs: the rows (``row ..``) of its ``count`` RLE / bit-packed codes
    whose entry passes, into the kept rows from ``k``, in one walk (no array of codes): the new
    ``k`` or an error code, the errors of :func:`.kernels.rle_bp_decode_codes`."""
    if bit_width < 0 or bit_width > 32:
        return K.ERR_BAD_BIT_WIDTH
    if count < 0 or not K.valid_range(buf, pos, end):
        return K.ERR_BAD_ARGUMENT
    byte_width = (bit_width + 7) // 8
    ulimit = np.uint64(dict_count)
    i = np.int64(0)
    while i < count:
        if pos >= end:
            if bit_width == 0:  # an empty stream of zero-width codes: all 0
                if ulimit == 0:
                    return K.ERR_BAD_INDEX
                return _keep_run(row + i, count - i, 0, kept, kept_codes, kept_valid, k) if entry_passes[0] else k
            return K.ERR_TRUNCATED
        packed, take, body, pos = K.next_run(buf, pos, end, bit_width, byte_width, count - i)
        if pos < 0:
            return pos
        if packed:
            k = _passing_packed(buf, body, end, bit_width, take, ulimit, entry_passes, row + i, kept, kept_codes, kept_valid, k)
            if k < 0:
                return k
        else:
            v = K.rle_value(buf, body, byte_width)
            if v >= ulimit:
                return K.ERR_BAD_INDEX
            if entry_passes[v]:
                k = _keep_run(row + i, take, np.int32(v), kept, kept_codes, kept_valid, k)
        i += take
    return k


@_jit
def dictionary_rows(dec, pages, npages, max_def, dict_count, entry_passes, null_passes, kept, kept_codes, kept_valid):
    """The rows whose dictionary code has ``entry_passes`` (NULL rows too when
    ``null_passes``), in ``kept``; ``kept_valid`` marks those with a value and ``kept_codes``
    holds their codes, in order. Returns the number of rows kept, ``NOT_HERE`` for a page that
    is not dictionary encoded, or an error code."""
    most = 0
    for p in range(npages):
        most = max(most, pages[p, NUM])
    # without NULLs the codes are tested as they are unpacked: neither array is needed
    levels = np.empty(most if max_def > 0 else 0, np.int32)
    codes = np.empty(most if max_def > 0 else 0, np.int32)
    k = 0
    kc = 0
    for p in range(npages):
        if pages[p, ENC] == 0:
            return NOT_HERE
        b1 = pages[p, BODY_END]
        num = pages[p, NUM]
        first = pages[p, FIRST]
        count, vpos = _page_levels(dec, pages, p, max_def, levels)
        if count < 0:
            return count
        if count > 0:
            if vpos >= b1:
                return K.ERR_TRUNCATED
            width = np.int64(dec[vpos])
            if width > 32:
                return K.ERR_BAD_BIT_WIDTH
            if max_def == 0:  # every row has a code: test the codes as they are unpacked
                k = _passing_codes(dec, vpos + 1, b1, width, count, dict_count, entry_passes, first, kept, kept_codes, kept_valid, k)
                if k < 0:
                    return k
                kc = k
                continue
            got = K.rle_bp_decode_codes(dec, vpos + 1, b1, width, count, codes, dict_count)
            if got < 0:
                return got
        j = 0
        for r in range(num):
            if max_def > 0 and levels[r] != 1:
                if null_passes:
                    kept[k] = first + r
                    kept_valid[k] = 0
                    k += 1
                continue
            code = codes[j]
            j += 1
            if entry_passes[code]:
                kept[k] = first + r
                kept_valid[k] = 1
                kept_codes[kc] = code
                k += 1
                kc += 1
    return k


def run_jobs(jobs: np.ndarray, buf: np.ndarray, dec: np.ndarray, max_page_size: int) -> int | None:
    """Every job of one chunk (:func:`.page_table.run_jobs`, then :func:`.page_table.finish_jobs`); the
    bytes decompressed, or None when a page does not decompress to its declared size."""
    n = len(jobs)
    done = np.empty(n, np.int64)
    if T.run_jobs(buf, dec, jobs, n, max_page_size, done) and T.finish_jobs(jobs, done, buf, dec, max_page_size):
        return None
    return int(done.sum())


#: page tables start this large and grow once to the most pages the chunk could hold
_FIRST_CAPACITY = 64


def match_full(
    buf: np.ndarray, desc: ColumnDescriptor, num_rows: int, codec: int, matcher: BytesMatcher, c: ReadCounters,
    max_page_size: int, cache: PageCache | None = None, chunk_offset: int = 0, v2_always_compressed: bool = False,
) -> np.ndarray | None:
    """The rows of a fetched chunk ``buf`` (at ``chunk_offset`` in the file) equal to one of
    ``matcher``'s needles, as a uint8 mask; None when this path does not read the chunk. With a
    ``cache``, the pages holding a match (and their dictionary) are kept there, as the general
    path keeps them, for the read of the surviving rows."""
    max_def = desc.max_definition_level
    clock = time.perf_counter
    t0 = clock()
    walked = _walk_and_decompress(buf, num_rows, max_def, codec, max_page_size, -1, v2_always_compressed)
    if walked is None:
        return None
    pages, page_at, info, dec, done = walked
    npages = int(info[_I_PAGES])
    t1 = clock()
    out = np.empty(num_rows, np.uint8)
    page_hits = np.empty(npages, np.int64)
    hits = match_chunk(dec, pages, npages, max_def, info, matcher.needles, matcher.needle_offsets, out, page_hits)
    if hits < 0:
        return None
    if hits and cache is not None:
        _keep_matched_pages(buf, dec, desc, pages, page_at, page_hits, info, cache, chunk_offset)
    c.decompress_seconds += t1 - t0
    c.bytes_decompressed += done if codec != 0 else 0
    c.decode_seconds += clock() - t1
    c.values_decoded += num_rows
    c.pages_fetched += npages
    return out


def _keep_matched_pages(
    buf: np.ndarray, dec: np.ndarray, desc: ColumnDescriptor, pages: np.ndarray, page_at: np.ndarray,
    page_hits: np.ndarray, info: np.ndarray, cache: PageCache, chunk_offset: int,
) -> None:
    encoded = False
    for p in np.flatnonzero(page_hits).tolist():
        kind, b0, b1, dfl, enc = (int(pages[p, f]) for f in (KIND, BODY, BODY_END, DEF_LEN, ENC))
        at = int(page_at[p])
        offset = chunk_offset + at
        if kind == 1:
            cache.bodies[offset] = dec[b0:b1].copy()
            cache.headers[offset] = parse_page_header(buf, at, len(buf))
        else:  # v2: the general path reads the levels from the page and the values from here
            cache.bodies[offset] = dec[b0 + dfl : b1].copy()
        encoded |= enc != 0
    if encoded:
        body = dec[int(info[I_DICT_OFF]) : int(info[I_DICT_END])].copy()
        cache.dictionaries[chunk_offset] = decode_dictionary_page(body, desc, int(info[I_DICT_COUNT]))


def _walk_and_decompress(
    buf: np.ndarray, num_rows: int, max_def: int, codec: int, max_page_size: int, known_dict: int,
    v2_always_compressed: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int] | None:
    """:func:`walk_chunk` (growing the tables once when the chunk has many pages), then every
    page body decompressed into the thread's scratch buffer: (pages, page offsets, info, bodies,
    bytes decompressed), or None when this path does not read the chunk."""
    capacity = _FIRST_CAPACITY
    while True:
        pages = np.empty((capacity, PAGE_FIELDS), np.int64)
        page_at = np.empty(capacity, np.int64)
        jobs = np.empty((2 * capacity + 1, JOB_FIELDS), np.int64)
        info = np.empty(5, np.int64)
        total = walk_chunk(buf, len(buf), num_rows, max_def, codec, pages, page_at, jobs, info, known_dict, v2_always_compressed)
        if total != TOO_MANY_PAGES or capacity > len(buf):
            break
        capacity = len(buf) // 8 + 2
    if total < 0:
        return None
    dec = T.scratch(int(total))
    done = run_jobs(jobs[: int(info[I_JOBS])], buf, dec, max_page_size)
    if done is None:
        return None
    return pages, page_at, info, dec, done


def match_dictionary_rows(
    buf: np.ndarray, desc: ColumnDescriptor, num_rows: int, codec: int, dict_count: int, entry_passes: np.ndarray,
    null_passes: bool, c: ReadCounters, max_page_size: int, v2_always_compressed: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The rows of a fully dictionary-encoded chunk whose entry passes (``buf``: its data pages,
    fetched; the dictionary of ``dict_count`` entries was decoded earlier): (rows, their codes
    (rows with a value only), which rows have a value); None when this path does not read it."""
    max_def = desc.max_definition_level
    clock = time.perf_counter
    t0 = clock()
    walked = _walk_and_decompress(buf, num_rows, max_def, codec, max_page_size, dict_count, v2_always_compressed)
    if walked is None:
        return None
    pages, _page_at, info, dec, done = walked
    npages = int(info[_I_PAGES])
    t1 = clock()
    kept = np.empty(num_rows, np.int64)
    kept_codes = np.empty(num_rows, np.int32)
    kept_valid = np.empty(num_rows, np.bool_)
    passes = np.ascontiguousarray(entry_passes, dtype=np.bool_)
    n = dictionary_rows(dec, pages, npages, max_def, dict_count, passes, null_passes, kept, kept_codes, kept_valid)
    if n < 0:
        return None
    valid = kept_valid[:n]
    c.decompress_seconds += t1 - t0
    c.bytes_decompressed += done if codec != 0 else 0
    c.decode_seconds += clock() - t1
    c.values_decoded += num_rows
    c.pages_fetched += npages
    return kept[:n], kept_codes[: int(np.count_nonzero(valid))], valid
