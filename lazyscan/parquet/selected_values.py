"""The selected values of fetched pages decoded straight into Arrow's layout, in one kernel call
for every column of a row group read on :mod:`.selected_rows`' path.

The kernels take the page table of :mod:`.page_table`: for each page the selected rows' definition
levels are checked and their positions among the page's values found; dictionary-encoded pages
have their codes unpacked (every code between the first and last selected when dense, else each
sought), fixed-width values are gathered into words, byte arrays located in place. Bodies of
snappy pages are decompressed only as far as the values read reach. Any fault returns an error
code, and the caller hands the column to the general path.
"""

from __future__ import annotations

import numpy as np

from lazyscan.format import snappy as S
from lazyscan.format.kernels import kernel_jit
from lazyscan.parquet import kernels as K
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
    KIND,
    LAZY,
    LO,
    NULLS,
    NUM,
    REP_LEN,
    level_span,
)

_jit = kernel_jit(nogil=True, read_only=("buf",))
_ALL_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)
_INT32_MAX = 2**31 - 1

#: a page's selected values are decoded by unpacking every code from the first selected to the
#: last when at least one in this many of them is selected
_DENSE = 3

#: how the decode kernel writes a value: copy its bytes, or widen an integer to decimal128
COPY, TO_DECIMAL128 = 0, 1

#: a member's status in the group kernels: read here, left to the general path
OK, GENERAL = 0, 1

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
        most = max(most, pages[p, HI] - pages[p, LO])
        if pages[p, NUM] < 0 or pages[p, NUM] > 1 << 31:
            return K.ERR_BAD_ARGUMENT
    return most


@_jit
def _page_positions(dec, pages, p, idx, max_def, valid, positions, buf, lazy, plain_width):
    """Check page ``p`` of the table, mark ``valid`` for its selected rows and write the
    positions of the non-null ones among its values; returns (count, start of the values, end
    of the body, the page's non-null values), or an error code as count. A PLAIN page must
    hold ``plain_width`` bytes (at least) per non-null value, as a read of the whole page
    requires, before any of its values is returned."""
    lo = pages[p, LO]
    hi = pages[p, HI]
    if hi <= lo:
        return 0, 0, 0, 0
    first = pages[p, FIRST]
    b0 = pages[p, BODY]
    b1 = pages[p, BODY_END]
    if b0 < 0 or b1 > dec.shape[0] or b0 > b1 or lo < 0 or hi > idx.shape[0]:
        return K.ERR_BAD_ARGUMENT, 0, 0, 0
    sel = idx[lo:hi]
    num = pages[p, NUM]
    last = sel[hi - lo - 1] - first
    if sel[0] < first or last >= num:
        return K.ERR_BAD_ARGUMENT, 0, 0, 0
    levels = np.empty(last + 1 if max_def > 0 else 0, np.int32)
    count, vpos, nonnull = _levels_and_positions(
        dec, b0, b1, pages[p, KIND], pages[p, REP_LEN], pages[p, DEF_LEN], max_def, num, sel, first, valid, lo, positions, levels,
        buf, lazy, pages[p, LAZY],
    )
    if count < 0:
        return count, 0, 0, 0
    if nonnull < 0:
        nonnull = num
    elif pages[p, KIND] == 2 and num - nonnull != pages[p, NULLS]:
        # a v2 page's levels must hold the nulls its header counts (the general path names it)
        return K.ERR_BAD_LENGTH, 0, 0, 0
    if pages[p, ENC] == 0 and nonnull * plain_width > b1 - vpos:
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
        if pages[p, ENC] == 0:
            continue
        count, vpos, b1, nonnull = _page_positions(dec, pages, p, idx, max_def, valid, positions, buf, lazy, 0)
        if count < 0:
            return count
        counts[p] = count
        if count == 0:
            continue
        err = _dictionary_codes(dec, vpos, b1, positions, count, nonnull, dict_count, codes, buf, lazy, pages[p, LAZY])
        if err < 0:
            return err
        lo = pages[p, LO]
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
    lo = pages[p, LO]
    for j in range(count):
        positions[j] = page_codes[lo + j]
    return count, np.int64(0), np.int64(0), np.int64(0)


@_jit
def gather_fixed(dec, pages, idx, max_def, dict_off, dict_count, width, mode, out, valid, buf, lazy, dict_lazy):
    """Decode the selected rows of fixed-width pages (``width`` 4 or 8) into ``out`` (uint32 or
    uint64 per row when copying, two uint64 words per row for decimal128; zeros for nulls) and
    ``valid`` (1 per non-null row). ``pages`` rows hold the page table; the dictionary, if any,
    is ``dict_count`` PLAIN values at ``dec[dict_off:]``, decompressed from ``buf`` as far as
    needed when ``dict_lazy`` >= 0 (as are pages with a ``LAZY`` row). Returns the number of
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
            if pages[p, ENC] == 0:
                need = vpos + (positions[count - 1] + 1) * width
                if need > b1:
                    return K.ERR_TRUNCATED
                have = _avail(buf, dec, lazy, pages[p, LAZY], need, b1)
                if have < need:
                    return have if have < 0 else K.ERR_TRUNCATED
                base = vpos
            else:
                err = _dictionary_codes(dec, vpos, b1, positions, count, nonnull, dict_count, codes, buf, lazy, pages[p, LAZY])
                if err < 0:
                    return err
                base = dict_off
        j = 0
        for k in range(pages[p, LO], pages[p, HI]):
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
        lo = pages[p, LO]
        hi = pages[p, HI]
        li = pages[p, LAZY]
        # a PLAIN value is at least its 4-byte length
        count, vpos, b1, nonnull = _known_codes_or_positions(dec, pages, p, idx, max_def, valid, positions, buf, lazy, page_codes, counts, 4)
        if count < 0:
            return count
        j = 0
        if pages[p, ENC] == 0:
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



@_jit
def decode_group(dec, pages, col_pages, idx, max_def, info, width, mode, wide, slot, status, out32, out64, valid, nulls, starts, lengths, offsets, data_at, buf, lazy):
    """Decode the selected rows of every ``OK`` member: fixed-width values into its slots of
    ``out32``/``out64``, byte arrays into ``offsets`` (its slot, ``rows + 1`` entries) and the
    returned data (from ``data_at[c]``); ``valid`` and ``nulls`` per member. A member whose
    values this path does not read turns ``GENERAL``. Bodies with a row in ``lazy`` are
    decompressed from ``buf`` as far as they are read."""
    rows = idx.shape[0]
    m = col_pages.shape[0]
    sizes = np.zeros(m, np.int64)
    total = np.int64(0)
    for c in range(m):
        if status[c] != OK:
            continue
        a = col_pages[c, 0]
        b = col_pages[c, 1]
        v = valid[c * rows : (c + 1) * rows]
        s = slot[c]
        if width[c] > 0:
            words = 2 if mode[c] == TO_DECIMAL128 else 1
            if wide[c]:
                got = gather_fixed(
                    dec, pages[a:b], idx, max_def[c], info[c, I_DICT_OFF], info[c, I_DICT_COUNT], width[c], mode[c],
                    out64[s * rows : (s + words) * rows], v, buf, lazy, info[c, I_DICT_LAZY],
                )
            else:
                got = gather_fixed(
                    dec, pages[a:b], idx, max_def[c], info[c, I_DICT_OFF], info[c, I_DICT_COUNT], width[c], mode[c],
                    out32[s * rows : (s + 1) * rows], v, buf, lazy, info[c, I_DICT_LAZY],
                )
            if got < 0:
                status[c] = GENERAL
            else:
                nulls[c] = got
            continue
        size = locate_bytes(
            dec, pages[a:b], idx, max_def[c], info[c, I_DICT_OFF], info[c, I_DICT_END], info[c, I_DICT_COUNT],
            starts[s * rows : (s + 1) * rows], lengths[s * rows : (s + 1) * rows], v, buf, lazy, info[c, I_DICT_LAZY],
        )
        if size < 0 or size > _INT32_MAX:
            status[c] = GENERAL
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
        if status[c] != OK or width[c] > 0:
            continue
        s = slot[c]
        data_at[c] = at
        o = offsets[s * (rows + 1) : (s + 1) * (rows + 1)]
        o[0] = 0
        end = K.gather_bytes_at(dec, starts[s * rows : (s + 1) * rows], lengths[s * rows : (s + 1) * rows], o, data[at : at + sizes[c]], 0, 0)
        if end != sizes[c]:
            status[c] = GENERAL
        at += sizes[c]
    return data

