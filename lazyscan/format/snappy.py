"""Snappy decompression that can stop early and resume: numba kernels.

A selective read needs the bytes of a page only up to its last selected value, and the entries of
a dictionary only up to the largest code it looks up. Snappy's raw format (a varint of the
decompressed length, then literals and back-references into the bytes already produced) can be
decompressed as a prefix: every element depends only on what comes before it. These kernels keep
a stream's position in a small state row, so a decode kernel decompresses a page as far as it
reads and no further.

Far from the ends of the input and the output, short literals and the copies a compressor emits
(1- and 2-byte offsets) move whole words without per-element bounds checks, copies from fewer
than 8 bytes back (runs) included, and the position of the next element is known from the tag
alone. On the dictionary pages of TPC-H's lineitem that takes 0.77-0.88x cramjam's time per page
(l_orderkey's copies 8 bytes back: 1.0-1.04x), on runs of bytes, zeros and short values
0.62-0.89x, measured by decompressing the same page in turns.

Format: https://github.com/google/snappy/blob/main/format_description.txt
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from lazyscan.format.kernels import kernel_jit, load_u32, load_u64

# the helpers are small functions of their own, not inlined into numba's IR: LLVM inlines them
# all the same, and numba compiles the callers faster (the first read of a column with no
# compiled cache: 21 s against 26 s)
_jit = kernel_jit(nogil=True, boundscheck=False, read_only=("src",))


def _own(kernel: Any) -> Any:
    """One of the kernels' helpers as a function of its own here (see above), not cached on its
    own (its callers' cached code holds it); with NUMBA_DISABLE_JIT the kernels are plain
    functions."""
    return numba.njit(nogil=True, boundscheck=False)(getattr(kernel, "py_func", kernel))


#: the kernels' little-endian loads of 8 and 4 bytes (as uint64)
_load8 = _own(load_u64)
_load4 = _own(load_u32)

#: a stream's state row: next compressed byte, end of the compressed bytes, end of what was
#: produced, end of the output, start of the output (back-references may not reach before it)
SRC, SRC_END, OUT, OUT_END, OUT_START = range(5)
STATE_FIELDS = 5

#: errors: the input is not a snappy stream of the declared length
ERR_CORRUPT = -1


@_jit
def _store8(buf, b, v):
    u = np.uint64(b)
    m = np.uint64(0xFF)
    buf[u] = np.uint8(v & m)
    buf[u + np.uint64(1)] = np.uint8((v >> np.uint64(8)) & m)
    buf[u + np.uint64(2)] = np.uint8((v >> np.uint64(16)) & m)
    buf[u + np.uint64(3)] = np.uint8((v >> np.uint64(24)) & m)
    buf[u + np.uint64(4)] = np.uint8((v >> np.uint64(32)) & m)
    buf[u + np.uint64(5)] = np.uint8((v >> np.uint64(40)) & m)
    buf[u + np.uint64(6)] = np.uint8((v >> np.uint64(48)) & m)
    buf[u + np.uint64(7)] = np.uint8((v >> np.uint64(56)) & m)


@_jit
def _byte(src, i):
    return np.int64(src[np.uint64(i)])


@_jit
def _copy(src, p, dst, o, n):
    """``dst[o:o + n] = src[p:p + n]``, eight bytes at a time; forward, so an overlapping
    back-reference at least eight bytes behind repeats its pattern correctly."""
    k = np.int64(0)
    while k + 16 <= n:
        a = _load8(src, p + k)
        b = _load8(src, p + k + 8)
        _store8(dst, o + k, a)
        _store8(dst, o + k + 8, b)
        k += 16
    while k + 8 <= n:
        _store8(dst, o + k, _load8(src, p + k))
        k += 8
    while k < n:
        dst[np.uint64(o + k)] = src[np.uint64(p + k)]
        k += 1


@_jit
def _header(src, s0, s1):
    """(declared decompressed length, position after the varint holding it) of the stream
    ``src[s0:s1]``; (``ERR_CORRUPT``, 0) when the varint is cut short or too long."""
    p = np.int64(s0)
    n = np.int64(0)
    shift = np.int64(0)
    while True:
        if p >= s1 or shift > 28:
            return ERR_CORRUPT, np.int64(0)
        b = _byte(src, p)
        p += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return n, p
        shift += 7


@_jit
def declared_length(src, s0, s1):
    """The decompressed length the snappy stream ``src[s0:s1]`` declares, or ``ERR_CORRUPT``."""
    if s0 < 0 or s1 > src.shape[0] or s0 > s1:
        return ERR_CORRUPT
    return _header(src, s0, s1)[0]


@_jit
def start(src, s0, s1, d0, d1, state):
    """Set ``state`` up for decompressing ``src[s0:s1]`` into ``[d0, d1)`` of an output
    buffer; 0, or ``ERR_CORRUPT`` when the stream does not declare ``d1 - d0`` bytes."""
    if s0 < 0 or s1 > src.shape[0] or s0 > s1 or d0 > d1:
        return ERR_CORRUPT
    n, p = _header(src, s0, s1)
    if n != d1 - d0:
        return ERR_CORRUPT
    state[SRC] = p
    state[SRC_END] = s1
    state[OUT] = d0
    state[OUT_END] = d1
    state[OUT_START] = d0
    return 0


# per copy tag byte (kinds 1 and 2): the copy's length, the mask of its offset bytes (loaded as
# a little-endian word after the tag) and the offset bits the tag itself holds
_COPY_LEN = np.zeros(256, np.int64)
_COPY_MASK = np.zeros(256, np.int64)
_COPY_HIGH = np.zeros(256, np.int64)
for _t in range(256):
    if _t & 3 == 1:
        _COPY_LEN[_t] = ((_t >> 2) & 7) + 4
        _COPY_MASK[_t] = 0xFF
        _COPY_HIGH[_t] = (_t >> 5) << 8
    elif _t & 3 == 2:
        _COPY_LEN[_t] = (_t >> 2) + 1
        _COPY_MASK[_t] = 0xFFFF


@_jit
def until(src, dst, state, need):
    """Decompress the stream of ``state`` until its output reaches ``need`` (or its end);
    returns the end of the output produced, or ``ERR_CORRUPT``. Whole elements are decoded, so
    the output may pass ``need``; it never passes the stream's declared end."""
    p = state[SRC]
    s1 = state[SRC_END]
    o = state[OUT]
    end = state[OUT_END]
    base = state[OUT_START]
    if end > dst.shape[0] or base < 0 or s1 > src.shape[0]:
        return ERR_CORRUPT
    if need > end:
        need = end
    while o < need:
        if p + 24 <= s1 and o + 80 <= end:
            # far from both ends, no element can run past them (a literal reads at most 17
            # bytes, a copy of at most 64 writes at most 72): short literals and copies of
            # kinds 1 and 2 move whole words unchecked
            tag = _byte(src, p)
            kind = tag & 3
            if kind == 0:
                n = (tag >> 2) + 1
                if n <= 16:
                    _store8(dst, o, _load8(src, p + 1))
                    _store8(dst, o + 8, _load8(src, p + 9))
                    o += n
                    p += n + 1
                    continue
            elif kind != 3:
                # kinds 1 and 2 take 1 and 2 offset bytes: the next tag's position is known
                # before the tables answer, which keeps the loop's one serial chain short
                n = _COPY_LEN[tag]
                offset = _COPY_HIGH[tag] | (np.int64(_load4(src, p + 1)) & _COPY_MASK[tag])
                step = kind + 1
                if offset == 0 or offset > o - base:
                    return ERR_CORRUPT
                if offset >= 8:
                    q = o - offset
                    _store8(dst, o, _load8(dst, q))
                    _store8(dst, o + 8, _load8(dst, q + 8))
                    if n > 16:
                        w = np.int64(16)
                        while w < n:
                            _store8(dst, o + w, _load8(dst, q + w))
                            w += 8
                    o += n
                    p += step
                    continue
                # a repeating pattern shorter than a word (runs of a byte or a short value):
                # its first 8 bytes one at a time, then words from a whole number of periods
                # back (at least 8 bytes), which repeat it as well
                q = o - offset
                for k in range(8):
                    dst[np.uint64(o + k)] = dst[np.uint64(q + k)]
                period = offset * ((offset + 7) // offset)
                w = np.int64(8)
                while w < n:
                    _store8(dst, o + w, _load8(dst, o + w - period))
                    w += 8
                o += n
                p += step
                continue
        # near an end, a long literal or a 4-byte-offset copy: checked element by element
        if p >= s1:
            return ERR_CORRUPT
        tag = _byte(src, p)
        p += 1
        kind = tag & 3
        if kind == 0:  # literal
            n = tag >> 2
            if n >= 60:
                extra = n - 59
                if p + extra > s1:
                    return ERR_CORRUPT
                n = np.int64(0)
                for k in range(extra):
                    n |= _byte(src, p + k) << (8 * k)
                p += extra
            n += 1
            if n > s1 - p or n > end - o:
                return ERR_CORRUPT
            if n <= 16 and p + 16 <= s1 and o + 16 <= end:
                _store8(dst, o, _load8(src, p))
                _store8(dst, o + 8, _load8(src, p + 8))
            else:
                _copy(src, p, dst, o, n)
            o += n
            p += n
            continue
        if kind == 1:
            if p >= s1:
                return ERR_CORRUPT
            n = ((tag >> 2) & 7) + 4
            offset = ((tag >> 5) << 8) | _byte(src, p)
            p += 1
        elif kind == 2:
            if p + 2 > s1:
                return ERR_CORRUPT
            n = (tag >> 2) + 1
            offset = _byte(src, p) | (_byte(src, p + 1) << 8)
            p += 2
        else:
            if p + 4 > s1:
                return ERR_CORRUPT
            n = (tag >> 2) + 1
            offset = _byte(src, p) | (_byte(src, p + 1) << 8) | (_byte(src, p + 2) << 16) | (_byte(src, p + 3) << 24)
            p += 4
        if offset == 0 or offset > o - base or n > end - o:
            return ERR_CORRUPT
        q = o - offset
        if offset >= 8 and o + n + 8 <= end:
            w = np.int64(0)
            while w < n:
                _store8(dst, o + w, _load8(dst, q + w))
                w += 8
        else:
            for k in range(n):
                dst[np.uint64(o + k)] = dst[np.uint64(q + k)]
        o += n
    state[SRC] = p
    state[OUT] = o
    if o >= end and p != s1:
        return ERR_CORRUPT  # bytes after the declared end
    return o


@_jit
def decompress(src, s0, s1, dst, d0, d1):
    """Decompress ``src[s0:s1]`` into ``dst[d0:d1]`` entirely; returns ``d1 - d0`` or
    ``ERR_CORRUPT``."""
    state = np.empty(STATE_FIELDS, np.int64)
    if d1 > dst.shape[0] or start(src, s0, s1, d0, d1, state) < 0:
        return ERR_CORRUPT
    got = until(src, dst, state, d1)
    if got != d1:
        return ERR_CORRUPT
    return d1 - d0
