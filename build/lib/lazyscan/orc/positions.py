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


def stream_layout(kind: int, encoding: int, has_present: bool) -> list[tuple[int, int]]:
    """(stream kind, position kind) in index order for a flat column."""
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
        if encoding == P.DECIMAL_64:
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


def position_columns(layout: list[tuple[int, int]], compressed: bool, width: int) -> dict[int, PositionColumns]:
    """Per stream kind, the columns of its position in entries of ``width`` positions."""
    out: dict[int, PositionColumns] = {}
    i = 0
    for stream, how in layout:
        need = (2 if compressed else 1) + _EXTRA[how]
        if i + need > width:
            raise CorruptFileError(f"row index entry has {width} positions, the column's streams need at least {i + need}")
        j = i + (2 if compressed else 1)
        out[stream] = PositionColumns(i, i + 1 if compressed else -1, j if how != RAW else -1, j + 1 if how == BITS else -1)
        i += need
    return out


@dataclass(frozen=True)
class Resume:
    """Where each span of row groups starts in one stream's decompressed bytes (``pos``),
    where the bytes read for it end (``end``), the values of a run and the bits of a byte to
    skip there; one entry per span."""

    pos: np.ndarray
    end: np.ndarray
    skip: np.ndarray
    bits: np.ndarray

    @staticmethod
    def whole(length: int) -> Resume:
        """A stream read from its start to ``length``."""
        zero = np.zeros(1, np.int64)
        return Resume(zero, np.array([length], np.int64), zero, zero)
