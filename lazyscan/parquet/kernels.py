"""numba kernels: every per-value loop of the Parquet physical reader.

All kernels are ``@numba.njit(nogil=True, cache=True)`` functions (:func:`rle_bp_decode` is a
Python alias of one) over plain numpy arrays that write into output buffers passed in by the
caller. Input bytes are untrusted: every offset and length read from ``buf`` is checked against
``end`` before use, every loop is bounded by the requested count or by the input size, and no
kernel allocates memory sized from the input.
Kernels never raise; they return an ``int64`` that is >= 0 on success and one of the negative
``ERR_*`` codes on failure (:data:`ERROR_MESSAGES` names them). Caller mistakes (an output buffer
too small, a selection out of range or unsorted) give :data:`ERR_BAD_ARGUMENT`.

Conventions: ``buf`` is a 1-D ``uint8`` array (a decompressed page), ``pos``/``end`` are absolute
byte offsets into it (a kernel reads only ``buf[pos:end]``), ``sel`` is a sorted, duplicate-free
``int64`` array of value indices in ``[0, count)``.

Levels and dictionary indices (Encodings.md, "Run Length Encoding / Bit-Packing Hybrid"):

- :func:`rle_bp_decode`, :func:`rle_bp_decode_selected`: RLE/bit-packed hybrid, bit width 0..32;
- :func:`rle_bp_decode_codes`: the same for dictionary indices, bounds checked while unpacking;
- :func:`rle_bp_stream_end`: where a hybrid stream of so many values ends (v2 levels' lengths);
- :func:`check_dict_indices`: first dictionary index out of range.

Row selections (:mod:`lazyscan.format.kernels` has the runs of a selection and back):
:func:`plan_pages` (which pages hold selected rows, and which rows), :func:`dictionary_hits`
(the rows whose dictionary entry passes a filter).

Byte arrays:

- :func:`plain_byte_array_locate`: start and length of each PLAIN ``BYTE_ARRAY`` value;
- :func:`gather_bytes_size`, :func:`gather_bytes`, :func:`gather_bytes_at`: copy located values
  into Arrow layout;
- :func:`dict_gather_size`, :func:`dict_gather_bytes`: dictionary codes to Arrow layout;
- :func:`delta_byte_array_size`, :func:`delta_byte_array_build`: ``DELTA_BYTE_ARRAY`` values
  from decoded prefix and suffix lengths.

Other encodings:

- :func:`delta_binary_packed_decode`, :func:`delta_binary_packed_decode_selected`:
  ``DELTA_BINARY_PACKED`` with wrapping 64-bit arithmetic;
- :func:`byte_stream_split_decode`, :func:`byte_stream_split_decode_selected`: ``BYTE_STREAM_SPLIT``;
- :func:`unpack_bool_plain`, :func:`unpack_bool_plain_selected`: PLAIN booleans;
- :func:`gather_fixed`: selected PLAIN fixed-width values (full reads use numpy views).

Bloom filters (BloomFilter.md):

- :func:`xxhash64_values` (from :mod:`lazyscan.format.hashing`): XXH64 with seed 0 of each value;
- :func:`bloom_check`, :func:`bloom_insert`: split-block Bloom filter probe and insert.
"""

from __future__ import annotations

import numpy as np

from lazyscan.format.hashing import xxhash64_values  # noqa: F401  (K.xxhash64_values for Bloom filters)
from lazyscan.format.kernels import (  # noqa: F401  (the error codes, as K.ERR_* for parquet callers)
    ERR_BAD_ARGUMENT,
    ERR_BAD_BIT_WIDTH,
    ERR_BAD_HEADER,
    ERR_BAD_INDEX,
    ERR_BAD_LENGTH,
    ERR_TRUNCATED,
    ERROR_MESSAGES,
    kernel_jit,
    load_u32,
    load_u64,
)
from lazyscan.format.varint import unzigzag, uvarint

#: largest length of one byte array value (PLAIN stores it as a signed 32-bit int)
MAX_VALUE_LENGTH = 2**31 - 1

_U64_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
_U32_ALL = np.uint64(0xFFFFFFFF)
_MAX_RUN_GROUPS = 1 << 40  # clamp of a bit-packed run's group count: far beyond any page
_NO_BOUND = 1 << 32  # no value of 32 bits or fewer reaches it

_jit = kernel_jit(nogil=True, read_only=("buf", "a", "page_starts", "page_ends"))
_jit_inline = kernel_jit(nogil=True, inline="always", read_only=("buf",))
#: kernels of a few microseconds per row group (page plans, page headers) keep the GIL:
#: releasing it hands it to a waiting scan thread, and taking it back then waits for that
#: thread's Python (the Q17 semi join on two threads: 392-394 context switches per scan
#: against 476-528 when they release it, 58.0-60.0 against 59.7-62.8 ms)
jit_gil = kernel_jit(read_only=("buf", "page_starts", "page_ends"))


# --------------------------------------------------------------------------- small helpers


@_jit
def low_bits(bit_width):
    """uint64 with the low ``bit_width`` (0..64) bits set."""
    if bit_width == 0:
        return np.uint64(0)
    return _U64_ALL >> np.uint64(64 - bit_width)


@_jit_inline
def bits_at(buf, end, start, bit, bit_width):
    """Unmasked value of ``bit_width`` (0..64) bits at bit offset ``bit`` from byte ``start``.

    Reads whole words when eight (nine) bytes are available before ``end``, byte by byte
    otherwise; never reads at or past ``end``. The caller masks the result.
    """
    b = start + (bit >> 3)
    s = bit & 7
    if b + 9 <= end:
        v = load_u64(buf, b) >> np.uint64(s)
        if s + bit_width > 64:
            v |= np.uint64(buf[b + 8]) << np.uint64(64 - s)
        return v
    nbytes = (s + bit_width + 7) >> 3
    v = np.uint64(0)
    for t in range(min(nbytes, 8)):
        if b + t < end:
            v |= np.uint64(buf[b + t]) << np.uint64(8 * t)
    v >>= np.uint64(s)
    if nbytes > 8 and b + 8 < end:
        v |= np.uint64(buf[b + 8]) << np.uint64(64 - s)
    return v


@_jit_inline
def _copy(dst, d, src, s, n):
    """``dst[d:d + n] = src[s:s + n]`` for non-overlapping ranges the caller checked."""
    ud = np.uint64(d)
    us = np.uint64(s)
    for t in range(np.uint64(n)):
        dst[ud + t] = src[us + t]


@_jit
def _check_sel(sel, count):
    """True when ``sel`` is strictly increasing and within ``[0, count)``."""
    prev = -1
    for k in range(sel.shape[0]):
        s = sel[k]
        if s <= prev or s >= count:
            return False
        prev = s
    return True


@_jit
def _lower_bound(a, lo, hi, x):
    """First position in ``lo..hi`` of sorted ``a`` whose value is >= ``x`` (``hi`` if none)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@_jit
def _sel_end(sel, k, stop):
    """First position >= ``k`` of sorted ``sel`` whose index is >= ``stop``."""
    n = sel.shape[0]
    j = k
    while j < n and j < k + 16:
        if sel[j] >= stop:
            return j
        j += 1
    if j == n:
        return n
    return _lower_bound(sel, j, n, stop)


@_jit
def valid_range(buf, pos, end):
    """True when ``pos..end`` is a valid byte range of ``buf``."""
    return 0 <= pos <= end <= buf.shape[0]


# --------------------------------------------------------------------------- RLE / bit-packed


@_jit_inline
def _n_word_reads(start, end, bit_width, n):
    """How many of ``n`` packed values (``bit_width`` <= 56) can be read as whole 8-byte words.

    Value j starts in byte ``start + (j * bit_width >> 3)`` and fits one little-endian word
    shifted by at most 7 bits; the word must end at or before ``end``.
    """
    room = end - start - 8
    if room < 0:
        return 0
    return min(n, (8 * room + 7) // bit_width + 1)


@_jit_inline
def _as_i32(v):
    """uint64 ``v`` < 2**32 as the int32 with the same bits (held in an int64)."""
    x = np.int64(v)
    return x - ((x >> 31) << 32)


@_jit
def packed_groups(start, end, bit_width, n):
    """How a bit-packed run of ``n`` values (``bit_width`` 1..32) at byte ``start`` is read in
    groups of eight: (byte offset and bit shift of each position within a group, the number of
    leading groups whose 8-byte windows all end before ``end``). Group ``g`` starts at byte
    ``start + g * bit_width``; the values after those groups must be read bit by bit."""
    offs = np.empty(8, np.int64)
    shifts = np.empty(8, np.uint64)
    for t in range(8):
        offs[t] = (t * bit_width) >> 3
        shifts[t] = np.uint64((t * bit_width) & 7)
    # group g reads up to byte start + g * bit_width + offs[7] + 8
    room = end - start - offs[7] - 8
    groups = 0 if room < 0 else min(n >> 3, room // bit_width + 1)
    return offs, shifts, groups


@_jit
def _unpack_run(buf, start, end, bit_width, n, out, o, limit):
    """Unpack ``n`` bit-packed values (LSB first, ``bit_width`` <= 32) from byte ``start``;
    return how many are >= ``limit`` (as unsigned).

    The caller checked that the ``ceil(n * bit_width / 8)`` bytes lie before ``end``. Groups of
    eight values whose 8-byte windows fit before ``end`` are read with per-position offsets and
    shifts computed once (``bit_width`` bytes per group); the last few go byte by byte.
    """
    ulimit = np.uint64(limit)
    if bit_width == 0:
        out[o : o + n] = 0
        return n if ulimit == 0 else 0
    mask = low_bits(bit_width)
    offs, shifts, groups = packed_groups(start, end, bit_width, n)
    bad = 0
    for g in range(groups):
        b = start + g * bit_width
        d = o + g * 8
        for t in range(8):
            v = (load_u64(buf, b + offs[t]) >> shifts[t]) & mask
            bad += v >= ulimit
            out[d + t] = _as_i32(v)
    for j in range(groups * 8, n):
        v = bits_at(buf, end, start, j * bit_width, bit_width) & mask
        bad += v >= ulimit
        out[o + j] = _as_i32(v)
    return bad


@_jit
def _gather_packed(buf, start, end, bit_width, sel, k0, k1, base, out):
    """``out[k] = value[sel[k] - base]`` for k in ``k0..k1`` of a bit-packed run at ``start``.

    The caller checked that the bytes of the last selected value lie before ``end``.
    """
    if bit_width == 0:
        out[k0:k1] = 0
        return
    mask = low_bits(bit_width)
    n_fast = _n_word_reads(start, end, bit_width, sel[k1 - 1] - base + 1)
    k = k0
    while k < k1 and sel[k] - base < n_fast:
        bit = (sel[k] - base) * bit_width
        w = load_u64(buf, start + (bit >> 3))
        out[k] = _as_i32((w >> np.uint64(bit & 7)) & mask)
        k += 1
    for kk in range(k, k1):
        out[kk] = _as_i32(bits_at(buf, end, start, (sel[kk] - base) * bit_width, bit_width) & mask)


@_jit
def rle_value(buf, pos, byte_width):
    """The repeated value of an RLE run: ``byte_width`` little-endian bytes at ``pos``."""
    v = np.uint64(0)
    for t in range(byte_width):
        v |= np.uint64(buf[pos + t]) << np.uint64(8 * t)
    return v


@_jit
def next_run(buf, pos, end, bit_width, byte_width, remaining):
    """The run of a hybrid stream whose header is at ``pos``, of which at most ``remaining``
    values are wanted: (bit-packed, values taken, where its body starts, where the next run
    starts); the last is an error code when the header or the body does not fit before ``end``
    (``end`` must be the stream's end: a bit-packed run must fit whole)."""
    packed, n, pos = _run_header(buf, pos, end)
    if pos < 0:
        return packed, 0, pos, pos
    take = min(n, remaining)
    # a bit-packed run's groups lie whole before ``end`` (writers pad the last group; Arrow
    # refuses a run the data cannot hold), even when fewer of its values are wanted
    size = (n * bit_width + 7) // 8 if packed else byte_width
    if size > end - pos:
        return packed, take, pos, np.int64(ERR_TRUNCATED)
    return packed, take, pos, pos + ((take * bit_width + 7) // 8 if packed else size)


@_jit
def rle_bp_stream_end(buf, pos, end, bit_width, count):
    """Where the hybrid stream at ``pos`` holding ``count`` values ends: after the run holding
    its last value, a bit-packed run's groups whole. A bit-packed run whose values go on for a
    group (8) or more past ``count`` is ``ERR_BAD_LENGTH`` (writers pad only the last group);
    a run not fitting before ``end`` ``ERR_TRUNCATED``. Only run headers are read."""
    if bit_width < 0 or bit_width > 32:
        return np.int64(ERR_BAD_BIT_WIDTH)
    if count < 0 or not valid_range(buf, pos, end):
        return np.int64(ERR_BAD_ARGUMENT)
    byte_width = (bit_width + 7) // 8
    i = np.int64(0)
    while i < count:
        if pos >= end:
            return np.int64(ERR_TRUNCATED)
        packed, n, pos = _run_header(buf, pos, end)
        if pos < 0:
            return pos
        if packed:
            if n - (count - i) >= 8:
                return np.int64(ERR_BAD_LENGTH)
            size = n // 8 * bit_width
        else:
            size = byte_width
        if size > end - pos:
            return np.int64(ERR_TRUNCATED)
        pos += size
        i += n
    return pos


@_jit
def _run_header(buf, pos, end):
    """(is_bitpacked, run length in values, new position) of a hybrid run header; the position
    is ``ERR_BAD_HEADER`` for a run of no values, which no writer writes (Arrow refuses it)."""
    h, pos = uvarint(buf, pos, end)
    if pos < 0:
        return False, 0, pos
    half = h >> np.uint64(1)
    if half == np.uint64(0):
        return False, 0, np.int64(ERR_BAD_HEADER)
    if h & np.uint64(1):
        groups = _MAX_RUN_GROUPS if half > np.uint64(_MAX_RUN_GROUPS) else np.int64(half)
        return True, groups * 8, pos
    n = _MAX_RUN_GROUPS if half > np.uint64(_MAX_RUN_GROUPS) else np.int64(half)
    return False, n, pos


@_jit
def rle_bp_decode_codes(buf, pos, end, bit_width, count, out, dict_size):
    """:func:`rle_bp_decode` of dictionary indices: ``ERR_BAD_INDEX`` when one is not in
    ``[0, dict_size)``, checked while unpacking (``dict_size`` 2**32: no check)."""
    if bit_width < 0 or bit_width > 32:
        return ERR_BAD_BIT_WIDTH
    if count < 0 or out.shape[0] < count or not valid_range(buf, pos, end):
        return ERR_BAD_ARGUMENT
    byte_width = (bit_width + 7) // 8
    ulimit = np.uint64(dict_size)
    bad = 0
    i = np.int64(0)  # not a literal: one compiled callee for every call
    while i < count:
        if pos >= end:
            if bit_width == 0:
                out[i:count] = 0
                if ulimit == 0:
                    bad += count - i
                return ERR_BAD_INDEX if bad else count
            return ERR_TRUNCATED
        packed, take, body, pos = next_run(buf, pos, end, bit_width, byte_width, count - i)
        if pos < 0:
            return pos
        if packed:
            bad += _unpack_run(buf, body, end, bit_width, take, out, i, dict_size)
        else:
            v = rle_value(buf, body, byte_width)
            if v >= ulimit:
                bad += take
            out[i : i + take] = _as_i32(v)
        i += take
    return ERR_BAD_INDEX if bad else count


@_jit_inline
def _popcount(x):
    """Set bits of the uint64 ``x``."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@_jit
def rle_bp_count_ones(buf, pos, end, bit_width, count, limit):
    """How many of the ``count`` values of an RLE/bit-packed hybrid stream are 1 (the non-null
    rows of a page's definition levels of maximum 1), every value checked against ``limit``
    (``ERR_BAD_INDEX``) without writing any: RLE runs by their headers, bit-packed runs of
    width 1 a word at a time."""
    if bit_width < 0 or bit_width > 32:
        return ERR_BAD_BIT_WIDTH
    if count < 0 or not valid_range(buf, pos, end):
        return ERR_BAD_ARGUMENT
    byte_width = (bit_width + 7) // 8
    ulimit = np.uint64(limit)
    mask = low_bits(bit_width)
    ones = np.int64(0)
    i = np.int64(0)
    while i < count:
        if pos >= end:
            if bit_width == 0:
                return ERR_BAD_INDEX if ulimit == 0 else ones
            return ERR_TRUNCATED
        packed, take, body, pos = next_run(buf, pos, end, bit_width, byte_width, count - i)
        if pos < 0:
            return pos
        if not packed:
            v = rle_value(buf, body, byte_width)
            if v >= ulimit:
                return ERR_BAD_INDEX
            if v == 1:
                ones += take
        elif bit_width == 1:
            if ulimit < 2:
                for j in range(take):
                    if (buf[body + (j >> 3)] >> (j & 7)) & 1 >= ulimit:
                        return ERR_BAD_INDEX
            b = body
            full = take >> 3  # whole bytes
            while full >= 8:
                ones += _popcount(load_u64(buf, b))
                b += 8
                full -= 8
            for t in range(full):
                ones += _popcount(np.uint64(buf[b + t]))
            rest = take & 7
            if rest:
                ones += _popcount(np.uint64(buf[b + full]) & np.uint64((1 << rest) - 1))
        else:
            for j in range(take):
                v = bits_at(buf, end, body, j * bit_width, bit_width) & mask
                if v >= ulimit:
                    return ERR_BAD_INDEX
                if v == 1:
                    ones += 1
        i += take
    return ones


@_jit
def all_equal(values, v):
    """Whether every entry of ``values`` equals ``v`` (a page's definition levels: no nulls)."""
    for i in range(values.shape[0]):  # noqa: SIM110 - numba compiles the loop, not all(<generator>)
        if values[i] != v:
            return False
    return True


@_jit
def rle_bp_decode_dict_values(buf, pos, end, bit_width, count, dictionary, out):
    """:func:`rle_bp_decode_codes` and the dictionary look-up in one pass: ``out[i] =
    dictionary[code i]`` for a page without nulls, no array of codes in between. Returns
    ``count``, or an error code (``ERR_BAD_INDEX`` at the first code outside the dictionary)."""
    if bit_width < 0 or bit_width > 32:
        return ERR_BAD_BIT_WIDTH
    if count < 0 or out.shape[0] < count or not valid_range(buf, pos, end):
        return ERR_BAD_ARGUMENT
    m = dictionary.shape[0]
    byte_width = (bit_width + 7) // 8
    mask = low_bits(bit_width)
    um = np.uint64(m)
    i = np.int64(0)
    while i < count:
        if pos >= end:
            if bit_width == 0 and m > 0:
                out[i:count] = dictionary[0]
                return count
            return ERR_TRUNCATED if bit_width else ERR_BAD_INDEX
        packed, take, body, pos = next_run(buf, pos, end, bit_width, byte_width, count - i)
        if pos < 0:
            return pos
        if not packed:
            v = rle_value(buf, body, byte_width)
            if v >= um:
                return ERR_BAD_INDEX
            out[i : i + take] = dictionary[np.int64(v)]
        elif bit_width == 0:
            if m == 0:
                return ERR_BAD_INDEX
            out[i : i + take] = dictionary[0]
        else:
            offs, shifts, groups = packed_groups(body, end, bit_width, take)
            for g in range(groups):
                b = body + g * bit_width
                d = i + g * 8
                for t in range(8):
                    v = (load_u64(buf, b + offs[t]) >> shifts[t]) & mask
                    if v >= um:
                        return ERR_BAD_INDEX
                    out[d + t] = dictionary[np.int64(v)]
            for j in range(groups * 8, take):
                v = bits_at(buf, end, body, j * bit_width, bit_width) & mask
                if v >= um:
                    return ERR_BAD_INDEX
                out[i + j] = dictionary[np.int64(v)]
        i += take
    return count


@_jit
def rle_bp_decode_codes_from(buf, pos, end, bit_width, first, count, out, dict_size):
    """:func:`rle_bp_decode_codes` of the values ``first..count`` only: ``out[j]`` is value
    ``first + j``. Runs ending before ``first`` are skipped by their headers (an RLE run's value
    still checked), unread; :func:`rle_bp_decode_codes_window` with no values after ``count``."""
    return rle_bp_decode_codes_window(buf, pos, end, bit_width, first, count, count, out, dict_size)


@_jit
def rle_bp_decode_codes_window(buf, pos, end, bit_width, first, count, total, out, dict_size):
    """:func:`rle_bp_decode_codes_from` of a stream of ``total`` values: ``dict_size`` also
    bounds the values sharing a bit-packed group of eight with the first or the last decoded
    one (a damaged byte changes values of one group only: a decoded value it changed has its
    neighbours checked with it) and the value of every RLE run walked over. Returns
    ``count - first`` or an error code."""
    if bit_width < 0 or bit_width > 32:
        return ERR_BAD_BIT_WIDTH
    if first < 0 or count < first or out.shape[0] < count - first or not valid_range(buf, pos, end):
        return ERR_BAD_ARGUMENT
    byte_width = (bit_width + 7) // 8
    ulimit = np.uint64(dict_size)
    mask = low_bits(bit_width)
    check_groups = ulimit <= mask
    bad = 0
    i = np.int64(0)
    while i < count:
        if pos >= end:
            if bit_width == 0:
                a = max(i, first)
                out[a - first : count - first] = 0
                if ulimit == 0:
                    bad += count - a
                return ERR_BAD_INDEX if bad else count - first
            return ERR_TRUNCATED
        packed, n, body = _run_header(buf, pos, end)
        if body < 0:
            return body
        take = min(n, count - i)
        size = (take * bit_width + 7) // 8 if packed else byte_width
        if size > end - body:
            return ERR_TRUNCATED
        pos = body + size
        stop = i + take
        if not packed:
            x = rle_value(buf, body, byte_width)
            if x >= ulimit:
                bad += max(stop - max(i, first), 1)
            if stop > first:
                out[max(i, first) - first : stop - first] = _as_i32(x)
        elif stop > first:
            a = max(i, first)
            # the values before the next group of eight one by one, then whole groups
            head = min((8 - (a - i) % 8) % 8, stop - a)
            if check_groups:
                for v in range(a - (a - i) % 8, a):  # the first group's values before ``first``
                    bad += (bits_at(buf, end, body, (v - i) * bit_width, bit_width) & mask) >= ulimit
                if stop == count:  # the last group's values after ``count``
                    for v in range(stop, min(i + (stop - 1 - i) // 8 * 8 + 8, i + min(n, total - i))):
                        bit = (v - i) * bit_width
                        if body + ((bit + bit_width + 7) >> 3) > end:
                            break
                        bad += (bits_at(buf, end, body, bit, bit_width) & mask) >= ulimit
            for v in range(a, a + head):
                x = bits_at(buf, end, body, (v - i) * bit_width, bit_width) & mask
                bad += x >= ulimit
                out[v - first] = _as_i32(x)
            g = a + head
            if g < stop:
                bad += _unpack_run(buf, body + (g - i) * bit_width // 8, end, bit_width, stop - g, out, g - first, dict_size)
        i = stop
    return ERR_BAD_INDEX if bad else count - first


def rle_bp_decode(buf, pos, end, bit_width, count, out, limit=_NO_BOUND):
    """Decode ``count`` values of an RLE/bit-packed hybrid stream into ``out[:count]``.

    ``bit_width`` 0..32; the stream has no length prefix. Returns ``count`` or an error code:
    ``ERR_BAD_INDEX`` when a value is ``limit`` or more (levels above their maximum).
    (A Python call of :func:`rle_bp_decode_codes`: one compiled kernel.)
    """
    return rle_bp_decode_codes(buf, pos, end, bit_width, count, out, limit)


@_jit
def rle_bp_decode_selected(buf, pos, end, bit_width, count, sel, out):
    """Like :func:`rle_bp_decode` but writes only ``out[k] = value[sel[k]]``.

    Bit-packed values are read directly at their bit offsets, so groups without a selected
    index are never unpacked; parsing stops after the last selected value. Returns ``len(sel)``.
    """
    return rle_bp_decode_codes_selected(buf, pos, end, bit_width, count, sel, out, _NO_BOUND)


@_jit
def rle_bp_decode_codes_selected(buf, pos, end, bit_width, count, sel, out, limit):
    """:func:`rle_bp_decode_selected` of dictionary indices (or levels) below ``limit``:
    ``ERR_BAD_INDEX`` when a selected value or the value of an RLE run walked over is not
    (bit-packed values beside the selected ones stay unread: checking the groups of eight
    holding selected values costs 10-30 % of a read of 2-10 % of TPC-H lineitem's dictionary
    columns). ``count`` is the stream's number of values."""
    if bit_width < 0 or bit_width > 32:
        return ERR_BAD_BIT_WIDTH
    nsel = sel.shape[0]
    if count < 0 or out.shape[0] < nsel or not valid_range(buf, pos, end):
        return ERR_BAD_ARGUMENT
    if not _check_sel(sel, count):
        return ERR_BAD_ARGUMENT
    byte_width = (bit_width + 7) // 8
    ulimit = np.uint64(limit)
    i = np.int64(0)
    k = np.int64(0)
    while k < nsel:
        if pos >= end:
            if bit_width == 0:
                out[k:nsel] = 0
                return ERR_BAD_INDEX if ulimit == 0 else nsel
            return ERR_TRUNCATED
        packed, n, pos = _run_header(buf, pos, end)
        if pos < 0:
            return pos
        take = min(n, count - i)
        stop = i + take
        if packed:
            nbytes = (take * bit_width + 7) // 8
            last = _sel_end(sel, k, stop)
            if last > k:
                need = ((sel[last - 1] - i + 1) * bit_width + 7) // 8
                if need > end - pos:
                    return ERR_TRUNCATED
                _gather_packed(buf, pos, end, bit_width, sel, k, last, i, out)
                for kk in range(k, last):
                    if np.uint64(np.uint32(out[kk])) >= ulimit:
                        return ERR_BAD_INDEX
                k = last
            pos = pos + nbytes if nbytes <= end - pos else end
        else:
            if byte_width > end - pos:
                if k < nsel and sel[k] < stop:
                    return ERR_TRUNCATED
            else:
                x = rle_value(buf, pos, byte_width)
                if x >= ulimit:  # a run skipped is checked too: its value is at hand
                    return ERR_BAD_INDEX
                v = _as_i32(x)
                while k < nsel and sel[k] < stop:
                    out[k] = v
                    k += 1
            pos += byte_width
        i = stop
    return nsel


@_jit
def check_dict_indices(indices, n, dict_size):
    """-1 when every ``indices[:n]`` is in ``[0, dict_size)``, else the first bad position."""
    n = min(n, indices.shape[0])
    block = 1024
    for b0 in range(0, n, block):
        b1 = min(b0 + block, n)
        bad = False
        for i in range(b0, b1):
            v = indices[i]
            bad |= (v < 0) | (v >= dict_size)
        if bad:
            for i in range(b0, b1):
                v = indices[i]
                if v < 0 or v >= dict_size:
                    return i
    return -1


# --------------------------------------------------------------------------- row selections


@_jit
def dictionary_hits(codes, entry_passes, valid, has_valid, null_passes, rows, out):
    """Row indices (from ``rows``) whose dictionary code has ``entry_passes``, written to ``out``;
    their count. ``codes`` hold the non-null rows' codes; with ``has_valid``, ``valid`` marks
    the rows that have a value (a NULL row passes when ``null_passes``)."""
    n = rows.shape[0]
    m = entry_passes.shape[0]
    if out.shape[0] < n or (has_valid and valid.shape[0] < n) or (not has_valid and codes.shape[0] < n):
        return ERR_BAD_ARGUMENT
    k = 0
    j = 0
    for i in range(n):
        if has_valid and not valid[i]:
            if null_passes:
                out[k] = rows[i]
                k += 1
            continue
        if j >= codes.shape[0]:
            return ERR_BAD_ARGUMENT
        c = codes[j]
        j += 1
        if c < 0 or c >= m:
            return ERR_BAD_INDEX
        if entry_passes[c]:
            out[k] = rows[i]
            k += 1
    return k




@_jit
def plan_pages(sel_starts, sel_ends, idx, page_starts, page_ends, pages, lo, hi):
    """Pages (sorted by first row) holding a selected row: their numbers go to ``pages`` and
    the slice ``idx[lo:hi]`` of the selected rows (sorted indices ``idx``, covered by the
    ranges ``sel_starts``/``sel_ends``) inside each; returns how many pages."""
    npages = page_starts.shape[0]
    if page_ends.shape[0] < npages or min(pages.shape[0], lo.shape[0], hi.shape[0]) < npages:
        return ERR_BAD_ARGUMENT
    if sel_ends.shape[0] < sel_starts.shape[0]:
        return ERR_BAD_ARGUMENT
    n = 0
    r = 0
    nr = sel_starts.shape[0]
    for p in range(npages):
        ps = page_starts[p]
        pe = page_ends[p]
        while r < nr and sel_ends[r] <= ps:
            r += 1
        if r < nr and sel_starts[r] < pe:
            pages[n] = p
            lo[n] = _lower_bound(idx, np.int64(0), idx.shape[0], ps)
            hi[n] = _lower_bound(idx, lo[n], idx.shape[0], pe)
            n += 1
    return n


# --------------------------------------------------------------------------- byte arrays


@_jit
def plain_byte_array_locate(buf, pos, end, count, starts, lengths):
    """Walk ``count`` PLAIN byte arrays (4-byte little-endian length, then the bytes).

    Writes each value's absolute start (``starts``, int64) and length (``lengths``, int64 or
    int32). Returns the absolute position after the last value.
    """
    if count < 0 or starts.shape[0] < count or lengths.shape[0] < count:
        return ERR_BAD_ARGUMENT
    if not valid_range(buf, pos, end):
        return ERR_BAD_ARGUMENT
    for i in range(count):
        if end - pos < 4:
            return ERR_TRUNCATED
        n = np.int64(load_u32(buf, pos))
        pos += 4
        if n > MAX_VALUE_LENGTH:
            return ERR_BAD_LENGTH
        if n > end - pos:
            return ERR_TRUNCATED
        starts[i] = pos
        lengths[i] = n
        pos += n
    return pos


@_jit
def gather_bytes_size(lengths, idx):
    """Total bytes of values ``idx`` (int64 indices into ``lengths``); error when out of range."""
    n = lengths.shape[0]
    total = 0
    for k in range(idx.shape[0]):
        j = idx[k]
        if j < 0 or j >= n:
            return ERR_BAD_INDEX
        L = np.int64(lengths[j])
        if L < 0:
            return ERR_BAD_LENGTH
        total += L
    return total


@_jit_inline
def _append_value(buf, size, start, length, out_data, cap, o):
    """Copy ``buf[start:start + length]`` to ``out_data[o:]``; the new end, or an error code."""
    s = np.int64(start)
    L = np.int64(length)
    if L < 0 or s < 0 or s > size - L:
        return ERR_BAD_LENGTH
    if cap - o < L:
        return ERR_BAD_ARGUMENT
    _copy(out_data, o, buf, s, L)
    return o + L


@_jit
def gather_bytes(buf, starts, lengths, idx, out_offsets, out_data):
    """Copy values ``idx`` (located by ``starts``/``lengths``) into Arrow layout.

    ``out_offsets`` (int32 or int64, ``len(idx) + 1``) gets the running offsets starting at 0,
    ``out_data`` (uint8, sized by :func:`gather_bytes_size`) the bytes. Returns the byte total.
    """
    n = starts.shape[0]
    m = idx.shape[0]
    if lengths.shape[0] < n or out_offsets.shape[0] < m + 1:
        return ERR_BAD_ARGUMENT
    cap = out_data.shape[0]
    size = buf.shape[0]
    o = 0
    out_offsets[0] = 0
    for k in range(m):
        j = idx[k]
        if j < 0 or j >= n:
            return ERR_BAD_INDEX
        o = _append_value(buf, size, starts[j], lengths[j], out_data, cap, o)
        if o < 0:
            return o
        out_offsets[k + 1] = o
        if out_offsets[k + 1] != o:
            return ERR_BAD_LENGTH
    return o


@_jit
def gather_bytes_at(buf, starts, lengths, out_offsets, out_data, k0, o0):
    """Append all located values to Arrow layout being built: bytes at ``out_data[o0:]``,
    offsets ``out_offsets[k0 + 1 :]`` continuing from ``o0``. Returns the new byte end."""
    n = starts.shape[0]
    if lengths.shape[0] < n or out_offsets.shape[0] < k0 + n + 1 or k0 < 0 or o0 < 0:
        return ERR_BAD_ARGUMENT
    cap = out_data.shape[0]
    size = buf.shape[0]
    o = np.int64(o0)
    for i in range(n):
        o = _append_value(buf, size, starts[i], lengths[i], out_data, cap, o)
        if o < 0:
            return o
        out_offsets[k0 + 1 + i] = o
    return o


@_jit
def dict_gather_size(dict_offsets, indices):
    """Total bytes of dictionary entries ``indices`` (Arrow offsets, ``n + 1`` of them)."""
    n = dict_offsets.shape[0] - 1
    total = 0
    for k in range(indices.shape[0]):
        j = indices[k]
        if j < 0 or j >= n:
            return ERR_BAD_INDEX
        L = np.int64(dict_offsets[j + 1]) - np.int64(dict_offsets[j])
        if L < 0:
            return ERR_BAD_LENGTH
        total += L
    return total


@_jit
def dict_gather_bytes(dict_offsets, dict_data, indices, out_offsets, out_data):
    """Materialize dictionary entries ``indices`` into Arrow layout; returns the byte total.

    ``dict_offsets``/``out_offsets`` int32 or int64, ``dict_data``/``out_data`` uint8,
    ``out_data`` sized by :func:`dict_gather_size`.
    """
    n = dict_offsets.shape[0] - 1
    m = indices.shape[0]
    if out_offsets.shape[0] < m + 1:
        return ERR_BAD_ARGUMENT
    cap = out_data.shape[0]
    size = dict_data.shape[0]
    o = 0
    out_offsets[0] = 0
    for k in range(m):
        j = indices[k]
        if j < 0 or j >= n:
            return ERR_BAD_INDEX
        s = np.int64(dict_offsets[j])
        e = np.int64(dict_offsets[j + 1])
        if s < 0 or e < s or e > size:
            return ERR_BAD_LENGTH
        L = e - s
        if cap - o < L:
            return ERR_BAD_ARGUMENT
        _copy(out_data, o, dict_data, s, L)
        o += L
        out_offsets[k + 1] = o
        if out_offsets[k + 1] != o:
            return ERR_BAD_LENGTH
    return o


@_jit
def delta_byte_array_size(prefix_lengths, suffix_lengths):
    """Total bytes of the ``DELTA_BYTE_ARRAY`` values; validates every prefix and suffix length."""
    n = prefix_lengths.shape[0]
    if suffix_lengths.shape[0] != n:
        return ERR_BAD_ARGUMENT
    prev = 0
    total = 0
    for i in range(n):
        p = np.int64(prefix_lengths[i])
        s = np.int64(suffix_lengths[i])
        if p < 0 or s < 0 or p > prev or s > MAX_VALUE_LENGTH:
            return ERR_BAD_LENGTH
        L = p + s
        if L > MAX_VALUE_LENGTH:
            return ERR_BAD_LENGTH
        total += L
        prev = L
    return total


@_jit
def delta_byte_array_build(
    prefix_lengths, suffix_lengths, buf, suffix_pos, end, out_offsets, out_data
):
    """Build ``DELTA_BYTE_ARRAY`` values: value i = value(i-1)[:prefix i] + suffix i.

    Suffixes lie back to back from ``suffix_pos``. ``out_offsets`` int64 (``n + 1``),
    ``out_data`` uint8 sized by :func:`delta_byte_array_size`. Returns the absolute position
    after the last suffix.
    """
    n = prefix_lengths.shape[0]
    if suffix_lengths.shape[0] != n or out_offsets.shape[0] < n + 1:
        return ERR_BAD_ARGUMENT
    if not valid_range(buf, suffix_pos, end):
        return ERR_BAD_ARGUMENT
    cap = out_data.shape[0]
    pos = suffix_pos
    prev_start = 0
    prev_len = 0
    o = 0
    out_offsets[0] = 0
    for i in range(n):
        p = np.int64(prefix_lengths[i])
        s = np.int64(suffix_lengths[i])
        if p < 0 or s < 0 or p > prev_len or s > MAX_VALUE_LENGTH:
            return ERR_BAD_LENGTH
        if s > end - pos:
            return ERR_TRUNCATED
        if p + s > cap - o:
            return ERR_BAD_ARGUMENT
        _copy(out_data, o, out_data, prev_start, p)
        _copy(out_data, o + p, buf, pos, s)
        pos += s
        prev_start = o
        prev_len = p + s
        o += prev_len
        out_offsets[i + 1] = o
    return pos


# --------------------------------------------------------------------------- DELTA_BINARY_PACKED


@_jit
def _delta_header(buf, pos, end):
    """(values per miniblock, miniblocks per block, total count, first value, new pos)."""
    block_size, pos = uvarint(buf, pos, end)
    if pos < 0:
        return 0, 0, 0, np.uint64(0), pos
    n_mini, pos = uvarint(buf, pos, end)
    if pos < 0:
        return 0, 0, 0, np.uint64(0), pos
    total, pos = uvarint(buf, pos, end)
    if pos < 0:
        return 0, 0, 0, np.uint64(0), pos
    first, pos = uvarint(buf, pos, end)
    if pos < 0:
        return 0, 0, 0, np.uint64(0), pos
    if block_size == np.uint64(0) or block_size > np.uint64(1 << 31):
        return 0, 0, 0, np.uint64(0), ERR_BAD_HEADER
    if n_mini == np.uint64(0) or n_mini > block_size:
        return 0, 0, 0, np.uint64(0), ERR_BAD_HEADER
    bs = np.int64(block_size)
    nm = np.int64(n_mini)
    if bs % nm != 0 or (bs // nm) % 8 != 0:
        return 0, 0, 0, np.uint64(0), ERR_BAD_HEADER
    if total > np.uint64(1 << 62):
        return 0, 0, 0, np.uint64(0), ERR_BAD_LENGTH
    return bs // nm, nm, np.int64(total), np.uint64(unzigzag(first)), pos


@_jit
def _delta_run(buf, end, start, bit_width, n, last, min_delta, out, o):
    """Add ``n`` deltas (``min_delta`` + packed) to ``last``; store the running values from ``out[o]``."""
    if bit_width == 0:
        for j in range(n):
            last += min_delta
            out[o + j] = last
        return last
    mask = low_bits(bit_width)
    j0 = 0
    if bit_width <= 56:
        j0 = _n_word_reads(start, end, bit_width, n)
        for j in range(j0):
            bit = j * bit_width
            w = load_u64(buf, start + (bit >> 3))
            last += min_delta + ((w >> np.uint64(bit & 7)) & mask)
            out[o + j] = last
    for j in range(j0, n):
        last += min_delta + (bits_at(buf, end, start, j * bit_width, bit_width) & mask)
        out[o + j] = last
    return last


@_jit
def _delta_run_selected(buf, end, start, bit_width, n, last, min_delta, sel, k, base, out):
    """Like :func:`_delta_run` but stores only the values ``sel[k:]`` (indices from ``base``).

    ``n`` ends at the last selected value of the miniblock, so the loop is bounded by the
    selection. Returns the new ``last`` and the position in ``sel`` after the values stored.
    """
    nsel = sel.shape[0]
    mask = low_bits(bit_width)
    target = sel[k] - base
    jw = 0
    if 0 < bit_width <= 56:
        jw = _n_word_reads(start, end, bit_width, n)
        for j in range(jw):
            bit = j * bit_width
            w = load_u64(buf, start + (bit >> 3))
            last += min_delta + ((w >> np.uint64(bit & 7)) & mask)
            if j == target:
                out[k] = last
                k += 1
                target = sel[k] - base if k < nsel else n
    for j in range(jw, n):
        if bit_width == 0:
            last += min_delta
        else:
            last += min_delta + (bits_at(buf, end, start, j * bit_width, bit_width) & mask)
        if j == target:
            out[k] = last
            k += 1
            target = sel[k] - base if k < nsel else n
    return last, k


@_jit
def _delta_advance(buf, end, start, bit_width, j0, j1, last, min_delta):
    """``last`` advanced by the deltas ``j0..j1`` of a miniblock."""
    if j1 <= j0:
        return last
    last += min_delta * np.uint64(j1 - j0)
    if bit_width == 0:
        return last
    mask = low_bits(bit_width)
    jw = j0
    if bit_width <= 56:
        jw = max(j0, _n_word_reads(start, end, bit_width, j1))
        for j in range(j0, jw):
            bit = j * bit_width
            last += (load_u64(buf, start + (bit >> 3)) >> np.uint64(bit & 7)) & mask
    for j in range(jw, j1):
        last += bits_at(buf, end, start, j * bit_width, bit_width) & mask
    return last


@_jit
def _delta_scan(buf, pos, end, count, sel, selected, out):
    """Shared body of the two DELTA_BINARY_PACKED kernels (``selected`` picks the mode)."""
    if count < 0 or not valid_range(buf, pos, end):
        return ERR_BAD_ARGUMENT
    nsel = sel.shape[0]
    n_out = nsel if selected else count
    if out.shape[0] < n_out:
        return ERR_BAD_ARGUMENT
    if selected and not _check_sel(sel, count):
        return ERR_BAD_ARGUMENT
    vpm, n_mini, total, first, pos = _delta_header(buf, pos, end)
    if pos < 0:
        return pos
    if count > total:
        return ERR_TRUNCATED
    uout = out.view(np.uint64)
    last = first
    k = 0
    if selected:
        if nsel > 0 and sel[0] == 0:
            uout[0] = first
            k = 1
    elif count > 0:
        uout[0] = first
    i = 1
    while i < total:
        md, pos = uvarint(buf, pos, end)
        if pos < 0:
            return pos
        min_delta = np.uint64(unzigzag(md))
        if n_mini > end - pos:
            return ERR_TRUNCATED
        widths = pos
        pos += n_mini
        for m in range(n_mini):
            if i >= total:
                break
            bw = np.int64(buf[widths + m])
            if bw > 64:
                return ERR_BAD_HEADER
            nbytes = vpm * bw // 8
            if nbytes > end - pos:
                return ERR_TRUNCATED
            n = min(vpm, total - i)
            if selected:
                if k < nsel and sel[k] < i + n:
                    upto = sel[_sel_end(sel, k, i + n) - 1] - i + 1
                    last, k = _delta_run_selected(
                        buf, end, pos, bw, upto, last, min_delta, sel, k, i, uout
                    )
                    last = _delta_advance(buf, end, pos, bw, upto, n, last, min_delta)
                elif k < nsel:
                    last = _delta_advance(buf, end, pos, bw, 0, n, last, min_delta)
            elif i < count:
                take = min(n, count - i)
                last = _delta_run(buf, end, pos, bw, take, last, min_delta, uout, i)
            pos += nbytes
            i += n
    return pos


@_jit
def delta_binary_packed_decode(buf, pos, end, count, out):
    """Decode the first ``count`` values of a ``DELTA_BINARY_PACKED`` stream into ``out`` (int64).

    Arithmetic wraps modulo 2**64; for INT32 columns the low 32 bits (``astype(np.int32)``)
    are the values, as writers wrap at 32 bits. ``count`` may be below the header's total; it
    may not exceed it (:data:`ERR_TRUNCATED`). Returns the absolute position after the whole
    encoded stream (all blocks up to the header's total), where DELTA_LENGTH_BYTE_ARRAY data
    and DELTA_BYTE_ARRAY suffix lengths begin. Per Encodings.md the last block writes only the
    miniblocks it needs (their bit widths beyond that are ignored), each padded to full size.
    """
    return _delta_scan(buf, pos, end, count, out[:0].view(np.int64), False, out)


@_jit
def delta_binary_packed_decode_selected(buf, pos, end, count, sel, out):
    """Like :func:`delta_binary_packed_decode` but stores only ``out[k] = value[sel[k]]``."""
    return _delta_scan(buf, pos, end, count, sel, True, out)


# --------------------------------------------------------------------------- fixed width


@_jit
def _fixed_fits(pos, end, count, width):
    return count >= 0 and width > 0 and count <= (end - pos) // width


@_jit_inline
def _bss_words(buf, pos, count, words, width):
    """Reassemble ``count`` little-endian words of ``width`` bytes from the byte streams."""
    c = np.uint64(count)
    p = np.uint64(pos)
    for i in range(c):
        v = np.uint64(0)
        for b in range(np.uint64(width)):
            v |= np.uint64(buf[p + b * c + i]) << (np.uint64(8) * b)
        words[i] = v


@_jit
def byte_stream_split_decode(buf, pos, end, count, width, out):
    """``BYTE_STREAM_SPLIT``: ``out[i * width + b] = buf[pos + b * count + i]``; returns ``count``.

    ``out`` is uint8 with at least ``count * width`` bytes.
    """
    if not valid_range(buf, pos, end) or width <= 0 or count < 0:
        return ERR_BAD_ARGUMENT
    if not _fixed_fits(pos, end, count, width):
        return ERR_TRUNCATED
    if out.shape[0] < count * width:
        return ERR_BAD_ARGUMENT
    if width == 4:
        _bss_words(buf, pos, count, out[: count * 4].view(np.uint32), 4)
    elif width == 8:
        _bss_words(buf, pos, count, out[: count * 8].view(np.uint64), 8)
    else:
        for i in range(count):
            src = np.uint64(pos + i)
            dst = np.uint64(i * width)
            for b in range(np.uint64(width)):
                out[dst + b] = buf[src + b * np.uint64(count)]
    return count


@_jit
def byte_stream_split_decode_selected(buf, pos, end, count, width, sel, out):
    """``BYTE_STREAM_SPLIT`` of values ``sel`` only: ``out`` uint8, ``len(sel) * width``."""
    nsel = sel.shape[0]
    if not valid_range(buf, pos, end) or width <= 0 or count < 0:
        return ERR_BAD_ARGUMENT
    if not _fixed_fits(pos, end, count, width):
        return ERR_TRUNCATED
    if out.shape[0] < nsel * width or not _check_sel(sel, count):
        return ERR_BAD_ARGUMENT
    for b in range(width):
        src = pos + b * count
        for k in range(nsel):
            out[k * width + b] = buf[src + sel[k]]
    return nsel


@_jit
def unpack_bool_plain(buf, pos, end, count, out):
    """PLAIN booleans (bit-packed, LSB first) into ``out`` (uint8 0/1); returns ``count``."""
    if not valid_range(buf, pos, end) or count < 0 or out.shape[0] < count:
        return ERR_BAD_ARGUMENT
    if (count + 7) // 8 > end - pos:
        return ERR_TRUNCATED
    for i in range(count):
        out[i] = (buf[pos + (i >> 3)] >> (i & 7)) & 1
    return count


@_jit
def unpack_bool_plain_selected(buf, pos, end, count, sel, out):
    """PLAIN booleans ``sel`` only into ``out`` (uint8 0/1); returns ``len(sel)``."""
    nsel = sel.shape[0]
    if not valid_range(buf, pos, end) or count < 0 or out.shape[0] < nsel:
        return ERR_BAD_ARGUMENT
    if (count + 7) // 8 > end - pos:
        return ERR_TRUNCATED
    if not _check_sel(sel, count):
        return ERR_BAD_ARGUMENT
    for k in range(nsel):
        i = sel[k]
        out[k] = (buf[pos + (i >> 3)] >> (i & 7)) & 1
    return nsel


@_jit
def gather_fixed(buf, pos, end, count, width, sel, out):
    """Copy PLAIN fixed-width values ``sel`` to ``out[k * width:(k + 1) * width]`` (uint8)."""
    nsel = sel.shape[0]
    if not valid_range(buf, pos, end) or width <= 0 or count < 0:
        return ERR_BAD_ARGUMENT
    if not _fixed_fits(pos, end, count, width):
        return ERR_TRUNCATED
    if out.shape[0] < nsel * width or not _check_sel(sel, count):
        return ERR_BAD_ARGUMENT
    for k in range(nsel):
        src = pos + sel[k] * width
        dst = k * width
        for b in range(width):
            out[dst + b] = buf[src + b]
    return nsel


# --------------------------------------------------------------------------- Bloom


_SALT = np.array(
    [
        0x47B6137B,
        0x44974D91,
        0x8824AD5B,
        0xA2B7289D,
        0x705495C7,
        0x2DF1424B,
        0x9EFC4947,
        0x5C6BFB31,
    ],
    dtype=np.uint64,
)


@_jit
def _bloom_block(h, num_blocks):
    return np.int64(((h >> np.uint64(32)) * np.uint64(num_blocks)) >> np.uint64(32))


@_jit
def _bloom_bit(key, i):
    return np.uint64(1) << (((key * _SALT[i]) & _U32_ALL) >> np.uint64(27))


@_jit
def bloom_check(bitset_words, hashes, out):
    """``out[i]`` (uint8) = 1 when the split-block filter might contain ``hashes[i]`` (uint64).

    ``bitset_words`` is the filter as little-endian uint32 words, 8 per 32-byte block.
    Returns ``len(hashes)``.
    """
    nw = bitset_words.shape[0]
    n = hashes.shape[0]
    if nw == 0 or nw % 8 != 0:
        return ERR_BAD_LENGTH
    if out.shape[0] < n:
        return ERR_BAD_ARGUMENT
    num_blocks = nw // 8
    for k in range(n):
        h = hashes[k]
        base = _bloom_block(h, num_blocks) * 8
        key = h & _U32_ALL
        hit = 1
        for i in range(8):
            if np.uint64(bitset_words[base + i]) & _bloom_bit(key, i) == np.uint64(0):
                hit = 0
                break
        out[k] = hit
    return n


@_jit
def bloom_insert(bitset_words, hashes):
    """Insert ``hashes`` (uint64) into the split-block filter ``bitset_words`` (uint32)."""
    nw = bitset_words.shape[0]
    if nw == 0 or nw % 8 != 0:
        return ERR_BAD_LENGTH
    num_blocks = nw // 8
    for k in range(hashes.shape[0]):
        h = hashes[k]
        base = _bloom_block(h, num_blocks) * 8
        key = h & _U32_ALL
        for i in range(8):
            bitset_words[base + i] = np.uint64(bitset_words[base + i]) | _bloom_bit(key, i)
    return hashes.shape[0]
