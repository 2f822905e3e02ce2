"""Equality matching of byte-array values on encoded pages, without materializing them.

A :class:`BytesMatcher` holds the values to look for (``=`` / ``IN`` on a string or binary
column). On a PLAIN page, :func:`plain_byte_array_match` walks the length prefixes and compares
only values of the right length; on dictionary pages the dictionary is matched once and the codes
are looked up; other encodings decode the values and match them with :func:`byte_arrays_match`.
The result for a page is a ``uint8`` mask over its selected non-null values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lazyscan.format.kernels import kernel_jit
from lazyscan.parquet.kernels import ERR_BAD_LENGTH, ERR_TRUNCATED

_jit = kernel_jit(nogil=True, read_only=("buf",))


@_jit
def equals_any(buf, s, length, needles, needle_offsets) -> bool:  # type: ignore[no-untyped-def]
    for k in range(needle_offsets.shape[0] - 1):
        ns = needle_offsets[k]
        nl = needle_offsets[k + 1] - ns
        if nl != length:
            continue
        same = True
        for t in range(length):
            if buf[s + t] != needles[ns + t]:
                same = False
                break
        if same:
            return True
    return False


@_jit
def plain_byte_array_match(buf, pos, end, count, sel, needles, needle_offsets, out):  # type: ignore[no-untyped-def]
    """Match ``count`` PLAIN byte arrays at ``buf[pos:end]`` against the needles.

    ``sel`` (sorted int64) picks the values to test (empty array with ``out`` of length
    ``count``: all). Writes 1/0 into ``out`` per tested value; returns the end position or a
    negative error code.
    """
    all_values = sel.shape[0] == 0 and out.shape[0] == count
    k = 0
    nsel = sel.shape[0]
    for i in range(count):
        if end - pos < 4:
            return ERR_TRUNCATED
        length = np.int64(buf[pos]) | (np.int64(buf[pos + 1]) << 8) | (np.int64(buf[pos + 2]) << 16) | (np.int64(buf[pos + 3]) << 24)
        pos += 4
        if length < 0 or length > end - pos:
            return ERR_BAD_LENGTH
        if all_values:
            out[i] = 1 if equals_any(buf, pos, length, needles, needle_offsets) else 0
        elif k < nsel and sel[k] == i:
            out[k] = 1 if equals_any(buf, pos, length, needles, needle_offsets) else 0
            k += 1
        pos += length
    return pos


@_jit
def byte_arrays_match(offsets, data, needles, needle_offsets, out):  # type: ignore[no-untyped-def]
    """Match values ``data[offsets[i]:offsets[i+1]]`` (already decoded) against the needles."""
    for i in range(offsets.shape[0] - 1):
        s = offsets[i]
        out[i] = 1 if equals_any(data, s, offsets[i + 1] - s, needles, needle_offsets) else 0


@_jit
def located_byte_arrays_match(buf, starts, lengths, needles, needle_offsets, out):  # type: ignore[no-untyped-def]
    """Match values ``buf[starts[i]:starts[i] + lengths[i]]`` (checked by the locator) in place."""
    for i in range(starts.shape[0]):
        out[i] = 1 if equals_any(buf, starts[i], lengths[i], needles, needle_offsets) else 0


@dataclass(frozen=True)
class BytesMatcher:
    """Values searched for in a byte-array column (UTF-8 for strings)."""

    needles: np.ndarray
    needle_offsets: np.ndarray

    @classmethod
    def of(cls, values: list[bytes]) -> BytesMatcher:
        offsets = np.zeros(len(values) + 1, dtype=np.int64)
        np.cumsum([len(v) for v in values], out=offsets[1:])
        data = np.frombuffer(b"".join(values), dtype=np.uint8) if values else np.empty(0, np.uint8)
        return cls(np.ascontiguousarray(data), offsets)

    @property
    def single(self) -> bytes | None:
        """The value searched for, when there is exactly one."""
        return self.needles.tobytes() if len(self.needle_offsets) == 2 else None

    def match(self, offsets: np.ndarray, data: np.ndarray) -> np.ndarray:
        out = np.empty(len(offsets) - 1, dtype=np.uint8)
        byte_arrays_match(offsets, data, self.needles, self.needle_offsets, out)
        return out

    def match_located(self, buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Match values left in place in ``buf`` (bounds already validated by the locator)."""
        out = np.empty(len(starts), dtype=np.uint8)
        located_byte_arrays_match(buf, starts, lengths, self.needles, self.needle_offsets, out)
        return out
