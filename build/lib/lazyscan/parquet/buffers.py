"""Output buffers from Arrow's memory pool.

Column reads allocate their outputs (decompressed pages, decoded values, gathered dictionary
values) here rather than with ``numpy.empty``: large numpy allocations come fresh from the
operating system and pay a page fault per 4 KiB on first write, while Arrow's pool (mimalloc or
jemalloc) keeps freed memory for the next read. Small buffers stay with numpy.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa

#: buffers smaller than this come from numpy
POOL_MIN_BYTES = 1 << 16


def empty(shape: int | tuple[int, ...], dtype: np.dtype | type) -> np.ndarray:
    """An uninitialized writable array, from Arrow's memory pool when large."""
    dt = np.dtype(dtype)
    if isinstance(shape, int):
        nbytes = shape * dt.itemsize
        if nbytes < POOL_MIN_BYTES:
            return np.empty(shape, dtype=dt)
        return np.frombuffer(pa.allocate_buffer(nbytes), dtype=dt, count=shape)
    count = math.prod(shape)
    nbytes = count * dt.itemsize
    if nbytes < POOL_MIN_BYTES:
        return np.empty(shape, dtype=dt)
    return np.frombuffer(pa.allocate_buffer(nbytes), dtype=dt, count=count).reshape(shape)
