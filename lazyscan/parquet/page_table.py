"""The page table and decompression jobs of a fetched column chunk, shared by the kernels that
read a chunk in few calls (:mod:`.selected_rows`, :mod:`.predicate_match`).

A chunk's pages are described by one row each of an int64 table (the columns below: page kind,
where its body lies in the buffer of bodies, values, encoding, level lengths, first row, slice of
the selection, lazily decompressed stream, nulls of a v2 page); their bodies are decompressed
into one buffer by jobs (source range, target range, codec), snappy ones by :func:`run_jobs` in a
kernel, others by :func:`finish_jobs` through :mod:`.codecs`.
"""

from __future__ import annotations

import threading

import numpy as np

from lazyscan.format import snappy as S
from lazyscan.format.kernels import kernel_jit
from lazyscan.parquet import codecs
from lazyscan.parquet import kernels as K
from lazyscan.parquet import page_header as H
from lazyscan.parquet.metadata import Codec

_jit = kernel_jit(nogil=True, read_only=("buf",))

# columns of the page table the decode kernels read; LAZY: the page's row in the table of
# snappy streams decompressed as far as the kernels read (-1: the body is decompressed whole)
KIND, BODY, BODY_END, NUM, ENC, REP_LEN, DEF_LEN, FIRST, LO, HI, LAZY, NULLS = range(12)
PAGE_FIELDS = 12

#: a selective read decompresses snappy pages (dictionary and data pages) only as far as the
#: kernels read them (snappy.until): its kernels decompress faster per byte than cramjam
#: (0.77-1.04x its time on the dictionary pages of TPC-H's lineitem), so a prefix never costs
#: more than the whole page would. Other codecs decompress whole pages in jobs.
SNAPPY = int(Codec.SNAPPY)

# columns of a decompression job: source range in the fetched buffer, target range in the
# buffer of bodies, and the codec to decompress with (0: a copy)
J_SRC, J_SRC_LEN, J_DST, J_DST_LEN, J_CODEC = range(5)
JOB_FIELDS = 5
#: the column of a decompression job naming its member (in a table of several chunks' jobs)
J_MEMBER = JOB_FIELDS
# slots of the summary a walk of the page headers returns: where the dictionary's values go, how
# many, the jobs, the dictionary's row of snappy streams (-1: decompressed whole) and the number
# of rows of snappy streams
I_DICT_OFF, I_DICT_END, I_DICT_COUNT, I_JOBS, I_DICT_LAZY, I_LAZY = range(6)
INFO_FIELDS = 6


@_jit
def add_page_jobs(jobs, nj, b, csize, usize, total, codec, v2_levels, v2_compressed):
    """The decompression jobs of one page whose body of ``csize`` bytes starts at ``b`` and goes
    to ``total`` in the buffer of bodies, from row ``nj`` of ``jobs``; returns the next row.
    ``v2_levels`` >= 0: a v2 data page, whose levels (that many bytes) are stored uncompressed
    ahead of the values, which are compressed when ``v2_compressed``."""
    if v2_levels >= 0:
        nj = add_job(jobs, nj, b, v2_levels, total, v2_levels, 0)
        return add_job(jobs, nj, b + v2_levels, csize - v2_levels, total + v2_levels, usize - v2_levels, codec if v2_compressed else 0)
    return add_job(jobs, nj, b, csize, total, usize, codec)


@_jit
def v2_values_compressed(header, csize, usize, v2_always):
    """Whether the values of the v2 data page ``header`` (a :func:`.page_header._parse` vector)
    are compressed: as the header says, and also where it says they are not but the writer
    compressed them regardless (``v2_always``, ARROW-17100) or they take another size than
    stored, which only compressed values can."""
    return header[H.SLOT_V2_COMPRESSED] != 0 or v2_always or csize != usize


@_jit
def add_job(jobs, nj, src, src_len, dst, dst_len, codec):
    """Row ``nj`` of ``jobs``: ``src_len`` bytes at ``src`` decompressed (or copied) into
    ``dst_len`` bytes at ``dst``; returns the next row."""
    jobs[nj, J_SRC] = src
    jobs[nj, J_SRC_LEN] = src_len
    jobs[nj, J_DST] = dst
    jobs[nj, J_DST_LEN] = dst_len
    jobs[nj, J_CODEC] = codec
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
        src = jobs[j, J_SRC]
        src_len = jobs[j, J_SRC_LEN]
        dst = jobs[j, J_DST]
        dst_len = jobs[j, J_DST_LEN]
        codec = jobs[j, J_CODEC]
        done[j] = JOB_FAILED
        if src < 0 or src_len < 0 or src + src_len > buf.shape[0] or dst < 0 or dst_len < 0 or dst + dst_len > dec.shape[0]:
            left += 1
        elif codec == 0:
            if src_len == dst_len:
                dec[dst : dst + dst_len] = buf[src : src + src_len]
                done[j] = 0
            else:
                left += 1
        elif codec == SNAPPY:
            if dst_len <= max_page_size and S.decompress(buf, src, src + src_len, dec, dst, dst + dst_len) == dst_len:
                done[j] = dst_len
            else:
                left += 1
        else:
            done[j] = JOB_ELSEWHERE
            left += 1
    return left



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
        src, src_len, dst, dst_len, codec = jobs[j, :JOB_FIELDS].tolist()
        try:
            codecs.decompress_into(codec, bufv[src : src + src_len], np.frombuffer(decv[dst : dst + dst_len], np.uint8), max_page_size)
        except Exception:
            failed.append(j)
            continue
        done[j] = dst_len
    return failed


_local = threading.local()


def scratch(size: int) -> np.ndarray:
    """A per-thread buffer for decompressed pages, reused from chunk to chunk: a fresh one per
    chunk pays for allocation and page faults, and the arrays built from it are copies."""
    buf = getattr(_local, "buf", None)
    if buf is None or len(buf) < size:
        buf = _local.buf = np.empty(max(size, 1 << 20, 0 if buf is None else 2 * len(buf)), np.uint8)
    return buf[:size]  # type: ignore[no-any-return]
