"""Row-index positions: where each stream of a column resumes at a row group.

A row-index entry holds, for each stream of the column in a fixed order, the position of the
row group's first value: the byte offset of the compression chunk and the offset inside its
decompressed bytes (only the byte offset when the file is uncompressed), then what the stream's
encoding needs: values to skip in a run-length run, and bits to skip for boolean streams. The
PRESENT stream comes first when the stripe has one (writers drop its positions with the stream).
The order and counts follow the ORC specification ("Indexes", "Row Group Index").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lazyscan.errors import CorruptFileError, UnsupportedFeatureError
from lazyscan.orc import proto as P

#: what an encoding adds after the byte position: nothing (raw bytes), values to skip in a run,
#: or values to skip in a byte run plus bits to skip (booleans)
RAW, RUN, BITS = 0, 1, 2
_EXTRA = {RAW: 0, RUN: 1, BITS: 2}


def stream_layout(kind: int, encoding: int, has_present: bool, has_secondary: bool = True) -> list[tuple[int, int]]:
    """(stream kind, position kind) in index order for a flat column (a decimal column without
    a SECONDARY stream holds its values as integers, as ``DECIMAL_64`` does)."""
    out: list[tuple[int, int]] = [(P.PRESENT, BITS)] if has_present else []
    if kind == P.BOOLEAN:
        out.append((P.DATA, BITS))
    elif kind == P.BYTE or kind in (P.SHORT, P.INT, P.LONG, P.DATE):
        out.append((P.DATA, RUN))
    elif kind in (P.FLOAT, P.DOUBLE):
        out.append((P.DATA, RAW))
    elif kind in (P.STRING, P.VARCHAR, P.CHAR, P.BINARY):
        if encoding in (P.DICTIONARY, P.DICTIONARY_V2):
            out.append((P.DATA, RUN))
        else:
            out.extend([(P.DATA, RAW), (P.LENGTH, RUN)])
    elif kind == P.DECIMAL:
        if encoding == P.DECIMAL_64 or not has_secondary:
            out.append((P.DATA, RUN))
        else:
            out.extend([(P.DATA, RAW), (P.SECONDARY, RUN)])
    elif kind in (P.TIMESTAMP, P.TIMESTAMP_INSTANT):
        out.extend([(P.DATA, RUN), (P.SECONDARY, RUN)])
    else:
        raise UnsupportedFeatureError(f"no row-index layout for ORC type {P.TYPE_NAMES.get(kind, kind)}")
    return out


@dataclass(frozen=True)
class PositionColumns:
    """Where one stream's position lies in a row-index entry: the columns of the chunk offset,
    the offset inside the decompressed chunk, values to skip and bits to skip (-1: absent)."""

    chunk: int
    within: int
    skip: int
    bits: int


def position_columns(layout: list[tuple[int, int]], compressed: bool, width: int, exact: bool = False) -> dict[int, PositionColumns]:
    """Per stream kind, the columns of its position in entries of ``width`` positions (with
    ``exact``, entries must hold no more positions than the streams take: more would mean the
    positions belong to other streams, e.g. of a PRESENT stream the stripe footer lost)."""
    out: dict[int, PositionColumns] = {}
    i = 0
    for stream, how in layout:
        need = (2 if compressed else 1) + _EXTRA[how]
        if i + need > width:
            raise CorruptFileError(f"row index entry has {width} positions, the column's streams need at least {i + need}")
        j = i + (2 if compressed else 1)
        out[stream] = PositionColumns(i, i + 1 if compressed else -1, j if how != RAW else -1, j + 1 if how == BITS else -1)
        i += need
    if exact and i != width:
        raise CorruptFileError(f"row index entry has {width} positions, the column's streams take {i}")
    return out


@dataclass(frozen=True)
class Resume:
    """Where each span of row groups starts in one stream's decompressed bytes (``pos``),
    where the bytes read for it end (``end``), the values of a run and the bits of a byte to
    skip there; and where the span's values must end: the position of the row group after it
    (``next_pos``, ``next_skip``, ``next_bits``), or the stream's end (``next_bits`` -1: the
    last byte of a boolean stream may hold padding bits); ``begin``: the first byte read for
    the span (the bytes before its position there were read too). One entry per span."""

    pos: np.ndarray
    end: np.ndarray
    skip: np.ndarray
    bits: np.ndarray
    next_pos: np.ndarray
    next_skip: np.ndarray
    next_bits: np.ndarray
    begin: np.ndarray

    @staticmethod
    def whole(length: int) -> Resume:
        """A stream read from its start to ``length``, its values ending there."""
        zero = np.zeros(1, np.int64)
        end = np.array([length], np.int64)
        return Resume(zero, end, zero, zero, end, zero, np.full(1, -1, np.int64), zero)

    def run_checks(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(check_k, check_pos) for the run-length kernels of spans of ``values`` values: the
        run holding the value after each span starts at ``next_pos``, ``next_skip`` values
        before it (counted from the span's first run, skipped values included)."""
        check_k = self.skip + values - self.next_skip
        if ((check_k < 0) & (values > 0)).any():
            raise CorruptFileError("a row-index position skips more values of a run than the row group before it leaves")
        return check_k, self.next_pos

    def bit_checks(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The same for boolean streams (runs of bytes of 8 values): a span that ends before
        another row group ends at its bit; the stream's last byte may be partly padding."""
        bits = self.bits + values
        at_group = self.next_bits >= 0
        if ((bits % 8 != self.next_bits) & at_group & (values > 0)).any():
            raise CorruptFileError("a boolean stream's values do not end at the bit the row index places the next row group at")
        nbytes = np.where(at_group, bits // 8, (bits + 7) // 8)
        check_k = self.skip + nbytes - self.next_skip
        if ((check_k < 0) & (values > 0)).any():
            raise CorruptFileError("a row-index position skips more bytes of a run than the row group before it leaves")
        return check_k, self.next_pos
