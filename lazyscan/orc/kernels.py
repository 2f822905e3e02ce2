"""numba kernels: every per-value loop of the ORC physical reader.

Run-length encodings of the ORC specification (``ORCv1.md``, "Run Length Encoding"):

- :func:`byte_rle`: byte runs (tinyint columns, and the bytes under boolean streams);
- :func:`int_rle_v1`: integer runs of format 0.11 (``DIRECT``/``DICTIONARY`` encodings);
- :func:`int_rle_v2`: integer runs of format 0.12 (``*_V2`` encodings): SHORT_REPEAT, DIRECT,
  PATCHED_BASE and DELTA;
- :func:`varint128`: the unbounded zigzag base-128 varints of decimals, as 128-bit pairs.

Every decoder reads ``buf[pos:end]``, drops the first ``skip`` values (a row-index seek lands
inside a run), writes ``count`` values to ``out`` and returns the position after the last run it
read, or a negative ``ERR_*`` code (the table every format shares, in
:mod:`lazyscan.format.kernels`). Input bytes are untrusted: every read is bounds checked and
every loop is bounded by ``count`` or the input size. Kernels never raise.

The run-length decoders also check where their runs lie (``check_k``, ``check_pos``; -1: no
check): a run must start at byte ``check_pos`` with value ``check_k`` (counting the skipped
values), or the last run must end there; runs past the values wanted are walked over (their
headers read, their values not decoded) up to that point. A whole stream is checked against
its end (``count`` values, its length): a run that overruns the values the stripe holds, or
bytes left after its last run, is an error. A row-index seek is checked against the next row
group's position (the run holding that row group's first value starts there): a position or
run that is off shows, at the cost of reading the headers of the rest of the row group.
"""

from __future__ import annotations

import numpy as np

from lazyscan.format.kernels import (  # noqa: F401  (the shared error codes, as K.ERR_* for orc callers)
    ERR_BAD_ARGUMENT,
    ERR_BAD_HEADER,
    ERR_MISPLACED,
    ERR_TRUNCATED,
    ERROR_MESSAGES,
    kernel_jit,
)
from lazyscan.format.varint import unzigzag, uvarint

#: helpers are functions of their own, not inlined into numba's IR: LLVM inlines them all the
#: same, and numba compiles the decoders faster (int_rle_v2: 4.1 s to 1.4 s)
_jit = kernel_jit(nogil=True, read_only=("buf",))

#: longest run of each encoding (RLE v2: 512 values; v1 and byte RLE: 130)
_MAX_RUN = 512


@_jit
def _emit(run, n, k, skip, out, count):
    """Copy run[0:n] into the output window; the new produced-value counter."""
    for i in range(n):
        j = k + i - skip
        if 0 <= j < count:
            out[j] = run[i]
    return k + n


@_jit
def byte_rle(buf, pos, end, skip, count, out, check_k, check_pos):
    """Byte run-length decoding: control 0..127 repeats the next byte control + 3 times,
    -128..-1 is followed by -control literal bytes."""
    if out.shape[0] < count or skip < 0:
        return ERR_BAD_ARGUMENT
    total = skip + count
    k = 0
    hit = check_k < 0
    while k < total or k < check_k:
        if k == check_k:
            if pos != check_pos:
                return ERR_MISPLACED
            hit = True
        if pos >= end:
            return ERR_TRUNCATED
        control = np.int64(buf[pos])
        pos += 1
        if k >= total:  # walking to the check point
            n = control + 3 if control < 128 else 256 - control
            pos += 1 if control < 128 else n
            if pos > end:
                return ERR_TRUNCATED
            k += n
            continue
        if control < 128:
            n = control + 3
            if pos >= end:
                return ERR_TRUNCATED
            v = buf[pos]
            pos += 1
            for i in range(n):
                j = k + i - skip
                if 0 <= j < count:
                    out[j] = v
            k += n
        else:
            n = 256 - control
            if pos + n > end:
                return ERR_TRUNCATED
            for i in range(n):
                j = k + i - skip
                if 0 <= j < count:
                    out[j] = buf[pos + i]
            pos += n
            k += n
    if not hit and (k != check_k or pos != check_pos):
        return ERR_MISPLACED
    return pos


@_jit
def int_rle_v1(buf, pos, end, signed, skip, count, out, check_k, check_pos):
    """Integer RLE version 1: a run (control 0..127: control + 3 values, a signed delta byte,
    a varint base) or -control literal varints."""
    if out.shape[0] < count or skip < 0:
        return ERR_BAD_ARGUMENT
    run = np.empty(130, np.int64)
    total = skip + count
    k = 0
    hit = check_k < 0
    while k < total or k < check_k:
        if k == check_k:
            if pos != check_pos:
                return ERR_MISPLACED
            hit = True
        if pos >= end:
            return ERR_TRUNCATED
        control = np.int64(buf[pos])
        pos += 1
        if k >= total:  # walking to the check point: the run's varints are passed over
            n = control + 3 if control < 128 else 256 - control
            for _ in range(1 if control < 128 else n):
                if control < 128:
                    pos += 1  # the delta byte
                _, pos = uvarint(buf, pos, end)
                if pos < 0:
                    return pos
            k += n
            continue
        if control < 128:
            n = control + 3
            if pos >= end:
                return ERR_TRUNCATED
            delta = np.int64(buf[pos])
            if delta >= 128:
                delta -= 256
            pos += 1
            u, pos = uvarint(buf, pos, end)
            if pos < 0:
                return pos
            base = unzigzag(u) if signed else np.int64(u)
            for i in range(n):
                run[i] = base + i * delta
        else:
            n = 256 - control
            for i in range(n):
                u, pos = uvarint(buf, pos, end)
                if pos < 0:
                    return pos
                run[i] = unzigzag(u) if signed else np.int64(u)
        k = _emit(run, n, k, skip, out, count)
    if not hit and (k != check_k or pos != check_pos):
        return ERR_MISPLACED
    return pos


@_jit
def _width(code):
    """RLE v2's 5-bit width code to a bit width."""
    if code <= 23:
        return code + 1
    if code == 24:
        return 26
    if code == 25:
        return 28
    if code == 26:
        return 30
    if code == 27:
        return 32
    if code == 28:
        return 40
    if code == 29:
        return 48
    if code == 30:
        return 56
    return 64


@_jit
def _closest_width(n):
    """The smallest width of RLE v2's table that holds ``n`` bits."""
    if n <= 1:
        return 1
    if n <= 24:
        return n
    if n <= 26:
        return 26
    if n <= 28:
        return 28
    if n <= 30:
        return 30
    if n <= 32:
        return 32
    if n <= 40:
        return 40
    if n <= 48:
        return 48
    if n <= 56:
        return 56
    return 64


@_jit
def _unpack_be(buf, pos, end, width, n, dst):
    """``n`` big-endian bit-packed values of ``width`` bits from ``buf[pos]`` into dst[0:n];
    the position of the byte after them (groups end on a byte boundary), -1 if truncated."""
    nbits = width * n
    stop = pos + (nbits + 7) // 8
    if stop > end:
        return -1
    if width % 8 == 0:  # whole bytes, big-endian
        nb = width // 8
        p = pos
        for i in range(n):
            v = np.uint64(0)
            for b in range(nb):
                v = (v << np.uint64(8)) | np.uint64(buf[p + b])
            p += nb
            dst[i] = np.int64(v)
        return stop
    if width <= 56:  # a bit buffer never holds more than width + 7 <= 63 bits
        acc = np.uint64(0)
        have = 0
        p = pos
        mask = (np.uint64(1) << np.uint64(width)) - np.uint64(1)
        for i in range(n):
            while have < width:
                acc = ((acc << np.uint64(8)) | np.uint64(buf[p])) & np.uint64(0x7FFFFFFFFFFFFFFF)
                p += 1
                have += 8
            have -= width
            dst[i] = np.int64((acc >> np.uint64(have)) & mask)
        return stop
    bit = np.int64(pos) * 8
    for i in range(n):
        v = np.uint64(0)
        remaining = width
        while remaining > 0:
            byte = buf[bit >> 3]
            avail = 8 - (bit & 7)
            take = avail if avail < remaining else remaining
            shift = avail - take
            part = (np.uint64(byte) >> np.uint64(shift)) & np.uint64((1 << take) - 1)
            v = (v << np.uint64(take)) | part
            remaining -= take
            bit += take
        dst[i] = np.int64(v)
    return stop


@_jit
def _v2_run_end(buf, pos, end, first, n):
    """The position after the RLE v2 run of ``n`` values whose header starts at ``pos``
    (``first``: its first byte), from its header alone; a negative ``ERR_*`` code."""
    kind = first >> 6
    if kind == 0:  # SHORT_REPEAT
        pos += 2 + ((first >> 3) & 7)
    else:
        code = (first >> 1) & 0x1F
        if kind == 1:  # DIRECT
            pos += 2 + (_width(code) * n + 7) // 8
        elif kind == 2:  # PATCHED_BASE
            if pos + 4 > end:
                return ERR_TRUNCATED
            third = np.int64(buf[pos + 2])
            fourth = np.int64(buf[pos + 3])
            patch_bits = _closest_width(_width(third & 0x1F) + ((fourth >> 5) & 7) + 1)
            pos += 4 + ((third >> 5) & 7) + 1 + (_width(code) * n + 7) // 8 + (patch_bits * (fourth & 0x1F) + 7) // 8
        else:  # DELTA
            _, pos = uvarint(buf, pos + 2, end)
            if pos < 0:
                return pos
            _, pos = uvarint(buf, pos, end)
            if pos < 0:
                return pos
            if code != 0:
                if n < 2:
                    return ERR_BAD_HEADER
                pos += (_width(code) * (n - 2) + 7) // 8
    return pos if pos <= end else ERR_TRUNCATED


@_jit
def int_rle_v2(buf, pos, end, signed, skip, count, out, check_k, check_pos):
    """Integer RLE version 2 (SHORT_REPEAT, DIRECT, PATCHED_BASE, DELTA runs of up to 512)."""
    if out.shape[0] < count or skip < 0:
        return ERR_BAD_ARGUMENT
    run = np.empty(_MAX_RUN, np.int64)
    patches = np.empty(32, np.int64)
    total = skip + count
    k = 0
    hit = check_k < 0
    while k < total or k < check_k:
        if k == check_k:
            if pos != check_pos:
                return ERR_MISPLACED
            hit = True
        if pos >= end:
            return ERR_TRUNCATED
        first = np.int64(buf[pos])
        kind = first >> 6
        if kind == 0:
            n = (first & 7) + 3
        else:
            if pos + 2 > end:
                return ERR_TRUNCATED
            n = (((first & 1) << 8) | np.int64(buf[pos + 1])) + 1
        if k >= total:  # walking to the check point
            pos = _v2_run_end(buf, pos, end, first, n)
            if pos < 0:
                return pos
            k += n
            continue
        # a run wholly inside the output window is decoded in place, others through ``run``
        direct = k >= skip and k - skip + n <= count
        dst = out[k - skip : k - skip + n] if direct else run
        if kind == 0:  # SHORT_REPEAT
            size = ((first >> 3) & 7) + 1
            pos += 1
            if pos + size > end:
                return ERR_TRUNCATED
            u = np.uint64(0)
            for i in range(size):
                u = (u << np.uint64(8)) | np.uint64(buf[pos + i])
            pos += size
            v = unzigzag(u) if signed else np.int64(u)
            for i in range(n):
                dst[i] = v
        else:
            code = (first >> 1) & 0x1F
            pos += 2
            if kind == 1:  # DIRECT
                width = _width(code)
                pos = _unpack_be(buf, pos, end, width, n, dst)
                if pos < 0:
                    return ERR_TRUNCATED
                if signed:
                    for i in range(n):
                        dst[i] = unzigzag(np.uint64(dst[i]))
            elif kind == 2:  # PATCHED_BASE
                width = _width(code)
                if pos + 2 > end:
                    return ERR_TRUNCATED
                third = np.int64(buf[pos])
                fourth = np.int64(buf[pos + 1])
                pos += 2
                base_bytes = ((third >> 5) & 7) + 1
                patch_width = _width(third & 0x1F)
                gap_width = ((fourth >> 5) & 7) + 1
                n_patches = fourth & 0x1F
                # patch_width + width may exceed 64 (the patch width is rounded up to the
                # table): the bits beyond 64 are zero for any value that fits 64 bits
                if pos + base_bytes > end:
                    return ERR_TRUNCATED
                ub = np.uint64(0)
                for i in range(base_bytes):
                    ub = (ub << np.uint64(8)) | np.uint64(buf[pos + i])
                pos += base_bytes
                sign = np.uint64(1) << np.uint64(base_bytes * 8 - 1)
                base = np.int64(ub & ~sign)
                if ub & sign:
                    base = -base
                pos = _unpack_be(buf, pos, end, width, n, dst)
                if pos < 0:
                    return ERR_TRUNCATED
                pos = _unpack_be(buf, pos, end, _closest_width(patch_width + gap_width), n_patches, patches)
                if pos < 0:
                    return ERR_TRUNCATED
                patch_mask = (np.uint64(1) << np.uint64(patch_width)) - np.uint64(1) if patch_width < 64 else ~np.uint64(0)
                at = 0
                for p in range(n_patches):
                    entry = np.uint64(patches[p])
                    gap = np.int64(entry >> np.uint64(patch_width)) if patch_width < 64 else 0
                    patch = entry & patch_mask
                    at += gap
                    if patch == 0 and gap == 255:
                        continue  # a long gap, carried into the next entry
                    if at >= n:
                        return ERR_BAD_HEADER
                    dst[at] = np.int64(np.uint64(dst[at]) | (patch << np.uint64(width)))
                for i in range(n):
                    dst[i] = base + dst[i]
            else:  # DELTA
                width = _width(code) if code != 0 else 0
                u, pos = uvarint(buf, pos, end)
                if pos < 0:
                    return pos
                first_value = unzigzag(u) if signed else np.int64(u)
                ud, pos = uvarint(buf, pos, end)
                if pos < 0:
                    return pos
                delta_base = unzigzag(ud)
                dst[0] = first_value
                if width == 0:
                    for i in range(1, n):
                        dst[i] = dst[i - 1] + delta_base
                else:
                    if n < 2:
                        return ERR_BAD_HEADER
                    dst[1] = first_value + delta_base
                    pos = _unpack_be(buf, pos, end, width, n - 2, dst[2:])
                    if pos < 0:
                        return ERR_TRUNCATED
                    for i in range(2, n):
                        if delta_base < 0:
                            dst[i] = dst[i - 1] - dst[i]
                        else:
                            dst[i] = dst[i - 1] + dst[i]
        if direct:
            k += n
        else:
            k = _emit(run, n, k, skip, out, count)
    if not hit and (k != check_k or pos != check_pos):
        return ERR_MISPLACED
    return pos


@_jit
def varint128(buf, pos, end, skip, count, lo, hi):
    """Signed zigzag base-128 varints of up to 128 bits (decimal values) as (low, high) 64-bit
    words of a two's-complement 128-bit integer."""
    if lo.shape[0] < count or hi.shape[0] < count or skip < 0:
        return ERR_BAD_ARGUMENT
    total = skip + count
    for k in range(total):
        a = np.uint64(0)
        b = np.uint64(0)
        shift = 0
        while True:
            if pos >= end:
                return ERR_TRUNCATED
            byte = np.uint64(buf[pos])
            pos += 1
            bits = byte & np.uint64(0x7F)
            if shift < 64:
                a |= bits << np.uint64(shift)
                if shift > 57:
                    b |= bits >> np.uint64(64 - shift)
            elif shift < 128:
                if shift > 121 and bits >> np.uint64(128 - shift) != np.uint64(0):
                    return ERR_BAD_HEADER  # bits beyond the 128 a decimal holds
                b |= bits << np.uint64(shift - 64)
            elif bits != np.uint64(0):
                return ERR_BAD_HEADER
            if byte < 128:
                break
            shift += 7
            if shift > 133:
                return ERR_BAD_HEADER
        # zigzag: value = (u >> 1) ^ -(u & 1) on 128 bits
        neg = a & np.uint64(1)
        a = (a >> np.uint64(1)) | ((b & np.uint64(1)) << np.uint64(63))
        b = b >> np.uint64(1)
        if neg:
            a = ~a
            b = ~b
        j = k - skip
        if j >= 0:
            lo[j] = np.int64(a)
            hi[j] = np.int64(b)
    return pos


@_jit
def string_offsets(lengths, offsets):
    """Arrow offsets (n + 1) from value lengths; -1 on a negative length or overflow."""
    total = np.int64(0)
    offsets[0] = 0
    for i in range(lengths.shape[0]):
        n = lengths[i]
        if n < 0:
            return -1
        total += n
        if total > 2**62:
            return -1
        offsets[i + 1] = total
    return total


@_jit
def gather_strings(data, offsets, codes, out_offsets, out_data):
    """Dictionary strings: the bytes of entry ``codes[i]`` for each row, into Arrow layout."""
    m = offsets.shape[0] - 1
    at = np.int64(0)
    out_offsets[0] = 0
    for i in range(codes.shape[0]):
        c = codes[i]
        if c < 0 or c >= m:
            return -1
        s = offsets[c]
        e = offsets[c + 1]
        n = e - s
        if at + n > out_data.shape[0]:
            return -1
        if n > 16:
            out_data[at : at + n] = data[s:e]
        else:  # short values: a byte loop beats a slice copy's setup
            for b in range(n):
                out_data[at + b] = data[s + b]
        at += n
        out_offsets[i + 1] = at
    return at


@_jit
def dictionary_size(offsets, codes):
    """Total bytes of the entries ``codes`` pick; -1 on a code out of range."""
    m = offsets.shape[0] - 1
    total = np.int64(0)
    for i in range(codes.shape[0]):
        c = codes[i]
        if c < 0 or c >= m:
            return -1
        total += offsets[c + 1] - offsets[c]
    return total


# ---- several row-group spans of one stream in one call ------------------------------------
#
# A selective read decodes the row groups holding selected rows: spans of a stream, each
# starting at its row-index position (``starts``, bounded by ``ends``) with ``skips`` values of
# a run to drop, each producing ``counts`` values, one span after another in ``out``. They
# return the number of values written or a negative ``ERR_*`` code.


@_jit
def int_rle_spans(v2, buf, starts, ends, skips, counts, signed, out, check_k, check_pos):
    """:func:`int_rle_v2` (``v2``) or :func:`int_rle_v1` over spans, each checked against
    ``check_k[i]``, ``check_pos[i]``."""
    o = 0
    for i in range(starts.shape[0]):
        c = counts[i]
        if c == 0:
            continue
        if o + c > out.shape[0] or ends[i] > buf.shape[0]:
            return ERR_BAD_ARGUMENT
        if v2:
            r = int_rle_v2(buf, starts[i], ends[i], signed, skips[i], c, out[o : o + c], check_k[i], check_pos[i])
        else:
            r = int_rle_v1(buf, starts[i], ends[i], signed, skips[i], c, out[o : o + c], check_k[i], check_pos[i])
        if r < 0:
            return r
        o += c
    return o


@_jit
def byte_rle_spans(buf, starts, ends, skips, counts, out, check_k, check_pos):
    """:func:`byte_rle` over spans, each checked against ``check_k[i]``, ``check_pos[i]``."""
    o = 0
    for i in range(starts.shape[0]):
        c = counts[i]
        if c == 0:
            continue
        if o + c > out.shape[0] or ends[i] > buf.shape[0]:
            return ERR_BAD_ARGUMENT
        r = byte_rle(buf, starts[i], ends[i], skips[i], c, out[o : o + c], check_k[i], check_pos[i])
        if r < 0:
            return r
        o += c
    return o


@_jit
def boolean_spans(buf, starts, ends, skips, bits, counts, out, check_k, check_pos):
    """Boolean streams (bits MSB first over byte RLE) over spans; ``bits`` of the first byte of
    each span belong to the row group before it; the byte runs of span ``i`` are checked
    against ``check_k[i]``, ``check_pos[i]`` (in bytes)."""
    o = 0
    most = 0
    for i in range(starts.shape[0]):
        most = max(most, (bits[i] + counts[i] + 7) // 8)
    packed = np.empty(most, np.uint8)
    for i in range(starts.shape[0]):
        c = counts[i]
        if c == 0:
            continue
        b = bits[i]
        if o + c > out.shape[0] or ends[i] > buf.shape[0] or b < 0 or b > 7:
            return ERR_BAD_ARGUMENT
        nbytes = (b + c + 7) // 8
        r = byte_rle(buf, starts[i], ends[i], skips[i], nbytes, packed, check_k[i], check_pos[i])
        if r < 0:
            return r
        for j in range(c):
            k = b + j
            out[o + j] = (packed[k >> 3] >> (7 - (k & 7))) & 1
        o += c
    return o


@_jit
def varint128_spans(buf, starts, ends, counts, lo, hi, check_pos, check_counts):
    """:func:`varint128` over spans (decimal values start at a byte, never inside a run):
    ``counts[i]`` values decoded, and the varints after them passed over up to
    ``check_counts[i]``, where span ``i`` must end at ``check_pos[i]`` (-1: unchecked)."""
    o = 0
    for i in range(starts.shape[0]):
        c = counts[i]
        if c == 0 and check_counts[i] == 0:
            continue
        if o + c > lo.shape[0] or ends[i] > buf.shape[0]:
            return ERR_BAD_ARGUMENT
        r = varint128(buf, starts[i], ends[i], 0, c, lo[o : o + c], hi[o : o + c])
        if r < 0:
            return r
        left = check_counts[i] - c  # varints still to pass over: count their last bytes
        e = ends[i]
        while left > 0:
            if r >= e:
                return ERR_TRUNCATED
            if buf[r] < 128:
                left -= 1
            r += 1
        if check_pos[i] >= 0 and r != check_pos[i]:
            return ERR_MISPLACED
        o += c
    return o


@_jit
def gather_ranges(data, starts, lengths, out_offsets, out_data):
    """Byte strings ``data[starts[i]:starts[i] + lengths[i]]`` into Arrow layout; -1 when one
    lies outside ``data`` or ``out_data`` is too small."""
    at = np.int64(0)
    out_offsets[0] = 0
    for i in range(starts.shape[0]):
        s = starts[i]
        n = lengths[i]
        if s < 0 or n < 0 or s + n > data.shape[0] or at + n > out_data.shape[0]:
            return -1
        if n > 16:
            out_data[at : at + n] = data[s : s + n]
        else:
            for b in range(n):
                out_data[at + b] = data[s + b]
        at += n
        out_offsets[i + 1] = at
    return at


@_jit
def row_index_positions(buf):
    """The positions of a ``RowIndex`` message (protobuf: ``repeated RowIndexEntry entry = 1``,
    each ``repeated uint64 positions = 1``, packed or not; statistics are skipped) as
    (status, entry offsets into the values, values). Status is 0 or ``ERR_*``."""
    n = buf.shape[0]
    empty = np.zeros(1, np.int64)
    # pass 1 counts entries and positions, pass 2 fills them
    entries = 0
    values = 0
    for fill in range(2):
        if fill == 1:
            offsets = np.zeros(entries + 1, np.int64)
            out = np.empty(values, np.int64)
        else:
            offsets = empty
            out = empty
        e = 0
        v = 0
        pos = 0
        while pos < n:
            key, pos = _pb_varint(buf, pos, n)
            if pos < 0:
                return ERR_TRUNCATED, empty, empty
            field = key >> 3
            wire = key & 7
            if field == 1 and wire == 2:
                length, pos = _pb_varint(buf, pos, n)
                if pos < 0 or length > n - pos:
                    return ERR_TRUNCATED, empty, empty
                end = pos + length
                while pos < end:
                    k2, pos = _pb_varint(buf, pos, end)
                    if pos < 0:
                        return ERR_TRUNCATED, empty, empty
                    f2 = k2 >> 3
                    w2 = k2 & 7
                    if f2 == 1 and w2 == 2:
                        ln, pos = _pb_varint(buf, pos, end)
                        if pos < 0 or ln > end - pos:
                            return ERR_TRUNCATED, empty, empty
                        stop = pos + ln
                        while pos < stop:
                            x, pos = _pb_varint(buf, pos, stop)
                            if pos < 0:
                                return ERR_TRUNCATED, empty, empty
                            if fill == 1:
                                out[v] = x
                            v += 1
                    elif f2 == 1 and w2 == 0:
                        x, pos = _pb_varint(buf, pos, end)
                        if pos < 0:
                            return ERR_TRUNCATED, empty, empty
                        if fill == 1:
                            out[v] = x
                        v += 1
                    else:
                        pos = _pb_skip(buf, pos, end, w2)
                        if pos < 0:
                            return pos, empty, empty
                if pos != end:
                    return ERR_TRUNCATED, empty, empty
                e += 1
                if fill == 1:
                    offsets[e] = v
            else:
                pos = _pb_skip(buf, pos, n, wire)
                if pos < 0:
                    return pos, empty, empty
        entries = e
        values = v
    return 0, offsets, out


@_jit
def _pb_varint(buf, pos, end):
    """A protobuf varint at ``pos`` as int64 (from 2**63 on negative, as protobuf's int64 reads
    it): (value, next position), or a negative ``ERR_*`` code for the position."""
    u, pos = uvarint(buf, pos, end)
    return np.int64(u), pos


@_jit
def _pb_skip(buf, pos, end, wire):
    """The position after a field of wire type ``wire`` whose key was read; negative on error."""
    if wire == 0:
        _, pos = _pb_varint(buf, pos, end)
        return pos if pos >= 0 else ERR_TRUNCATED
    if wire == 1:
        return pos + 8 if pos + 8 <= end else ERR_TRUNCATED
    if wire == 5:
        return pos + 4 if pos + 4 <= end else ERR_TRUNCATED
    if wire == 2:
        length, pos = _pb_varint(buf, pos, end)
        if pos < 0 or length < 0 or length > end - pos:
            return ERR_TRUNCATED
        return pos + length
    return ERR_BAD_HEADER


# ---- values converted to their Arrow form -------------------------------------------------

TS_BAD_NANOS = 1
TS_OUT_OF_RANGE = 2

#: seconds in 400 Gregorian years, after which calendar and weekdays (so a zone's rules) repeat
GREGORIAN_CYCLE_SECONDS = 146_097 * 86_400
#: seconds stored for a timestamp beyond this magnitude are not converted (no unit holds them)
_MAX_STORED_SECONDS = 1 << 62


@_jit
def _zone_offset(t, changes, offsets, cycle_start):
    """The UTC offset at instant ``t`` from a zone table (instants where the offset changes,
    ascending, and the offset from each on); instants past ``cycle_start`` plus one cycle are
    taken back by whole 400-year cycles, instants before the first change get its offset."""
    cycle_end = cycle_start + GREGORIAN_CYCLE_SECONDS
    if t >= cycle_end:
        t = cycle_start + (t - cycle_start) % GREGORIAN_CYCLE_SECONDS
    lo = 0
    hi = changes.shape[0]
    while lo < hi:  # the first change after t
        mid = (lo + hi) >> 1
        if changes[mid] <= t:
            lo = mid + 1
        else:
            hi = mid
    return offsets[lo - 1] if lo > 0 else offsets[0]


@_jit
def orc_timestamps(secs, encoded_nanos, epoch, changes, offsets, cycle_start, nanos_per_unit, bounds, out):
    """ORC timestamps (``secs``: the DATA stream, seconds from ``epoch``; ``encoded_nanos``:
    the SECONDARY stream, nanoseconds shifted left by 3 bits that count their trailing zeros) as
    units of ``nanos_per_unit`` nanoseconds since 1970-01-01 into ``out``, the fraction below a
    unit dropped (toward negative infinity). A negative second with a fraction above 999,999 ns
    is one less, as ORC's readers take it (the writers stored it one higher). A negative
    fraction (pyarrow's writer stores a negative timestamp as its second truncated toward zero
    and a negative fraction) counts back from the second, as ORC's C++ reader takes it. With a
    zone table (``changes`` not empty) the value is the wall clock of the instant in that zone,
    else the instant. ``bounds``: (lowest second, lowest unit within it, highest second,
    highest unit within it) that the unit's int64 holds.

    Returns (0, -1), or (``TS_BAD_NANOS`` / ``TS_OUT_OF_RANGE``, index of the first such value).
    """
    units_per_second = 1_000_000_000 // nanos_per_unit
    zoned = changes.shape[0] > 0
    for i in range(secs.shape[0]):
        raw = encoded_nanos[i]
        zeros = raw & 7
        nanos = raw >> 3
        if zeros != 0:
            scale = np.int64(10)
            for _ in range(zeros):
                scale *= 10
            if nanos > 999_999_999 // scale or nanos < -999_999_999 // scale:
                return TS_BAD_NANOS, i
            nanos *= scale
        elif nanos > 999_999_999 or nanos < -999_999_999:
            return TS_BAD_NANOS, i
        s = secs[i]
        if s > _MAX_STORED_SECONDS or s < -_MAX_STORED_SECONDS:
            return TS_OUT_OF_RANGE, i
        s += epoch
        if s < 0 and nanos > 999_999:
            s -= 1
        elif nanos < 0:
            s -= 1
            nanos += 1_000_000_000
        if zoned:
            s += _zone_offset(s, changes, offsets, cycle_start)
        sub = nanos // nanos_per_unit
        if s < bounds[0] or (s == bounds[0] and sub < bounds[1]) or s > bounds[2] or (s == bounds[2] and sub > bounds[3]):
            return TS_OUT_OF_RANGE, i
        out[i] = s * units_per_second + sub
    return 0, -1


@_jit
def decimals_beyond(lo, hi, limit_lo, limit_hi):
    """The index of the first 128-bit integer (``lo``, ``hi``: its two's-complement words) whose
    magnitude reaches ``limit`` (its unsigned words), -1 when every one is below it."""
    for i in range(lo.shape[0]):
        a = np.uint64(lo[i])
        b = np.uint64(hi[i])
        if hi[i] < 0:  # magnitude of a negative value: two's complement negation
            a = ~a + np.uint64(1)
            b = ~b + (np.uint64(1) if a == np.uint64(0) else np.uint64(0))
        if b > limit_hi or (b == limit_hi and a >= limit_lo):
            return i
    return -1
