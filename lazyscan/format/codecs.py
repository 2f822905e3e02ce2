"""Block decompression into a caller's buffer, one function per algorithm, for every format.

Each function takes one compressed block and a ``numpy.uint8`` buffer ``out``, writes at most
``len(out)`` bytes into it (so a damaged or hostile block cannot allocate beyond what its format
declares) and returns the number of bytes written. Damaged data raises
:class:`DecompressionError`; data that would decompress to more than ``len(out)`` raises
:class:`OutputOverflow` (cramjam's decoders report that as damage). Both are :class:`~lazyscan.errors.CorruptFileError`: a format adds the
place (page, stripe) and its own checks of the size (a Parquet page must fill its buffer exactly;
an ORC chunk may fill at most a compression block).

Compressed input is read in place (``bytes``, ``memoryview`` or ``numpy`` array); Snappy goes
through lazyscan's kernel (:mod:`lazyscan.format.snappy`), zlib streams through :mod:`zlib` with a
bounded ``max_length``, the others through cramjam's ``*_into`` functions.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import cramjam
import numpy as np

from lazyscan.errors import CorruptFileError
from lazyscan.format import snappy as S

Compressed = memoryview | bytes | np.ndarray
#: a block decompressor: (compressed block, output buffer) -> bytes written
Decompressor = Callable[[Compressed, np.ndarray], int]


class DecompressionError(CorruptFileError):
    """A compressed block that cannot be decompressed."""


class OutputOverflow(DecompressionError):
    """A compressed block that decompresses to more bytes than its buffer holds."""


def snappy(data: Compressed, out: np.ndarray) -> int:
    """Snappy's raw format (no framing), through lazyscan's kernel."""
    src = np.frombuffer(data, np.uint8)
    n = int(S.declared_length(src, 0, len(src)))
    if n > len(out):
        raise OutputOverflow(f"snappy data decompresses to {n} bytes, more than {len(out)}")
    if n < 0 or S.decompress(src, 0, len(src), out, 0, n) != n:
        raise DecompressionError("snappy data is not a valid snappy stream")
    return n


def deflate(data: Compressed, out: np.ndarray) -> int:
    """A raw deflate stream (no zlib or gzip header), as ORC's ZLIB stores it."""
    try:
        d = zlib.decompressobj(-15)
        raw = d.decompress(data, len(out))  # type: ignore[arg-type]
    except zlib.error as e:
        raise DecompressionError(f"deflate data cannot be decompressed: {e}") from None
    if d.unconsumed_tail:
        raise OutputOverflow(f"deflate data decompresses to more than {len(out)} bytes")
    out[: len(raw)] = np.frombuffer(raw, np.uint8)
    return len(raw)


def gzip(data: Compressed, out: np.ndarray) -> int:
    """A gzip (or zlib) stream, several gzip members back to back too, as Parquet's GZIP
    stores it; zero bytes after the last member are padding."""
    buf = bytes(data)
    total = 0
    cap = len(out)
    while buf:
        try:
            d = zlib.decompressobj(wbits=47)  # 32 + 15: a gzip or zlib header, detected
            chunk = d.decompress(buf, cap - total + 1)
        except zlib.error as e:
            raise DecompressionError(f"gzip data cannot be decompressed: {e}") from None
        if total + len(chunk) > cap or (not d.eof and d.unconsumed_tail):
            raise OutputOverflow(f"gzip data decompresses to more than {cap} bytes")
        out[total : total + len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
        total += len(chunk)
        if not d.eof:
            raise DecompressionError("gzip data ends before the end of its stream")
        buf = d.unused_data
        if buf and not buf.strip(b"\x00"):
            break
    return total


# cramjam's decoders stop at the end of ``out`` and report that like damage


def zstd(data: Compressed, out: np.ndarray) -> int:
    """A zstd frame, through cramjam."""
    try:
        return int(cramjam.zstd.decompress_into(data, out))  # type: ignore[arg-type]
    except Exception as e:
        raise DecompressionError(f"zstd data cannot be decompressed: {e}") from None


def brotli(data: Compressed, out: np.ndarray) -> int:
    """A brotli stream, through cramjam."""
    try:
        return int(cramjam.brotli.decompress_into(data, out))  # type: ignore[arg-type]
    except Exception as e:
        raise DecompressionError(f"brotli data cannot be decompressed: {e}") from None


def lz4_block(data: Compressed, out: np.ndarray) -> int:
    """One LZ4 block (no frame, no size prefix), as Parquet's LZ4_RAW and ORC's LZ4 store it."""
    try:
        return int(cramjam.lz4.decompress_block_into(data, out))  # type: ignore[arg-type]
    except Exception as e:
        raise DecompressionError(f"lz4 data cannot be decompressed: {e}") from None


#: every block decompressor by algorithm name; formats map their codec ids to these
DECOMPRESSORS: dict[str, Decompressor] = {
    "snappy": snappy,
    "deflate": deflate,
    "gzip": gzip,
    "zstd": zstd,
    "brotli": brotli,
    "lz4_block": lz4_block,
}
