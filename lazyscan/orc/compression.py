"""ORC compression framing: a stream is a sequence of chunks, each behind a 3-byte header.

The header is little-endian ``length * 2 + is_original``; an original chunk is stored raw. A
chunk decompresses to at most the file's compression block size. Uncompressed files have no
headers. Row-index positions into a compressed stream name a chunk (its offset in the stream)
and a byte offset inside the chunk's decompressed bytes: :class:`Decompressed` maps them. The
block decompressors are the format floor's (:mod:`lazyscan.format.codecs`); this module maps
ORC's codec ids to them and keeps the chunk headers and the block-size bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lazyscan.errors import CorruptFileError, UnsupportedFeatureError
from lazyscan.format import codecs as blocks
from lazyscan.orc.proto import COMPRESSION_NAMES

NONE, ZLIB, SNAPPY, LZO, LZ4, ZSTD = range(6)


@dataclass
class Decompressed:
    """The decompressed bytes of (part of) a stream and where each chunk landed."""

    data: np.ndarray
    #: offset of each chunk header in the stream (as row-index positions name them)
    chunk_offsets: np.ndarray
    #: offset of each chunk's first byte in ``data``
    data_offsets: np.ndarray
    #: False for an uncompressed file: positions are plain byte offsets in the stream
    compressed: bool = True

    def position(self, chunk_offset: int, within: int) -> int:
        """The offset in ``data`` of row-index position (``chunk_offset``, ``within``)."""
        if not self.compressed:
            pos = chunk_offset - int(self.chunk_offsets[0])
            if not 0 <= pos <= len(self.data):
                raise CorruptFileError(f"row index position {chunk_offset} lies outside the bytes read")
            return pos
        i = int(np.searchsorted(self.chunk_offsets, chunk_offset))
        if i == len(self.chunk_offsets) and within == 0:
            return len(self.data)  # at the end of the bytes read: a row group without values here
        if self.chunk_offsets[i] != chunk_offset:
            raise CorruptFileError(f"row index position {chunk_offset} is not the start of a compression chunk")
        pos = int(self.data_offsets[i]) + within
        if pos > len(self.data):
            raise CorruptFileError(f"row index position {within} lies beyond its compression chunk")
        return pos


#: ORC's codecs and their decompressors (ZLIB is raw deflate; LZ4 one block per chunk)
_DECOMPRESSORS: dict[int, blocks.Decompressor] = {
    ZLIB: blocks.deflate,
    SNAPPY: blocks.snappy,
    ZSTD: blocks.zstd,
    LZ4: blocks.lz4_block,
}


def _decompress_chunk_into(codec: int, chunk: memoryview, out: np.ndarray) -> int:
    """Decompress one chunk into ``out`` (block-size bytes); the number of bytes written."""
    decompress = _DECOMPRESSORS.get(codec)
    if decompress is None:
        raise UnsupportedFeatureError(f"{COMPRESSION_NAMES.get(codec, codec)} compression is not supported")
    try:
        return decompress(chunk, out)
    except blocks.OutputOverflow:
        name = COMPRESSION_NAMES[codec].lower()
        raise CorruptFileError(f"a {name} chunk decompresses beyond the block size {len(out)}") from None


def check_codec(codec: int) -> None:
    if codec != NONE and codec not in _DECOMPRESSORS:
        raise UnsupportedFeatureError(f"ORC {COMPRESSION_NAMES.get(codec, f'codec {codec}')} compression is not supported")


def decompress_stream(
    data: bytes | memoryview | np.ndarray,
    codec: int,
    block_size: int,
    base: int = 0,
    partial: bool = False,
    stop_at: int | None = None,
    extra: int = 0,
) -> Decompressed:
    """Decompress the chunks of ``data``, a stream or a part of one starting at a chunk header
    (``base`` is that header's offset in the stream). With ``partial``, ``data`` may end inside
    a chunk, which is then left out. With ``stop_at`` (a stream offset), decompression ends with
    the first chunk starting at or after it, plus ``extra`` chunks."""
    view = data if isinstance(data, memoryview) else memoryview(data).cast("B")  # type: ignore[arg-type]
    if codec == NONE:
        arr = np.frombuffer(view, dtype=np.uint8)
        return Decompressed(arr, np.array([base], np.int64), np.zeros(1, np.int64), compressed=False)
    chunks: list[tuple[int, int, int]] = []  # (header offset, payload start, length | original << 62)
    pos, end = 0, len(view)
    bound = 0
    while pos < end:
        if pos + 3 > end:
            if partial:
                break
            raise CorruptFileError("compression chunk header cut short")
        header = view[pos] | (view[pos + 1] << 8) | (view[pos + 2] << 16)
        length, original = header >> 1, header & 1
        start = pos + 3
        if length > end - start:
            if partial:
                break
            raise CorruptFileError(f"compression chunk of {length} bytes runs past the stream end")
        chunks.append((pos, start, length | (original << 62)))
        bound += length if original else max(block_size, 1)
        pos = start + length
        if stop_at is not None and base + chunks[-1][0] >= stop_at:
            if extra <= 0:
                break
            extra -= 1
    out = np.empty(bound, np.uint8)
    chunk_offsets = np.empty(len(chunks), np.int64)
    data_offsets = np.empty(len(chunks), np.int64)
    total = 0
    limit = max(block_size, 1)
    for i, (head, start, packed) in enumerate(chunks):
        length, original = packed & ((1 << 62) - 1), packed >> 62
        chunk_offsets[i] = base + head
        data_offsets[i] = total
        chunk = view[start : start + length]
        if original:
            out[total : total + length] = np.frombuffer(chunk, np.uint8)
            total += length
            continue
        try:
            n = _decompress_chunk_into(codec, chunk, out[total : total + limit])
        except (CorruptFileError, UnsupportedFeatureError):
            raise
        except Exception as e:
            raise CorruptFileError(f"{COMPRESSION_NAMES.get(codec)} chunk cannot be decompressed: {e}") from None
        total += n
    out = out[:total]
    return Decompressed(out, chunk_offsets, data_offsets)
