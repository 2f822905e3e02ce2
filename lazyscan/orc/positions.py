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

from lazyscan.errors import CorruptFileError, UnsupportedFeatureError
from lazyscan.orc import proto as P

#: what an encoding adds after the byte position: nothing (raw bytes), values to skip in a run,
#: or values to skip in a byte run plus bits to skip (booleans)
RAW, RUN, BITS = 0, 1, 2
_EXTRA = {RAW: 0, RUN: 1, BITS: 2}


@dataclass(frozen=True)
class StreamPosition:
    """Where one stream resumes: the chunk (or byte) offset, the offset inside the decompressed
    chunk, values to skip and bits to skip."""

    chunk: int
    within: int
    skip: int
    bits: int


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


def decode_positions(
    positions: list[int], layout: list[tuple[int, int]], compressed: bool
) -> dict[int, StreamPosition]:
    """The positions of one row-index entry, per stream kind."""
    out: dict[int, StreamPosition] = {}
    i = 0
    for stream, how in layout:
        need = (2 if compressed else 1) + _EXTRA[how]
        if i + need > len(positions):
            raise CorruptFileError(
                f"row index entry has {len(positions)} positions, the column's streams need at least {i + need}"
            )
        chunk = positions[i]
        within = positions[i + 1] if compressed else 0
        j = i + (2 if compressed else 1)
        skip = positions[j] if how != RAW else 0
        bits = positions[j + 1] if how == BITS else 0
        if bits > 7:
            raise CorruptFileError(f"row index position skips {bits} bits of a byte")
        out[stream] = StreamPosition(chunk, within, skip, bits)
        i += need
    return out
