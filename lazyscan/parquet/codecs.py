"""Page decompression into buffers of the size the page header declares.

Each codec decompresses into a preallocated ``numpy.uint8`` buffer of exactly
``uncompressed_page_size`` bytes, so output is bounded by the header (no decompression bombs), and
an output of any other size is a corrupt page. The declared size itself is bounded by
``max_page_size`` and by a codec-specific ratio to the compressed size.

Codecs: UNCOMPRESSED, SNAPPY, GZIP (concatenated members too), ZSTD, BROTLI, LZ4_RAW and LZ4
(Hadoop framing, falling back to a raw block and to the LZ4 frame format, as other readers do).
LZO is unsupported. The block decompressors are the format floor's (:mod:`lazyscan.format.codecs`);
this module maps Parquet's codec ids to them and keeps what is Parquet's: the checks of the
declared page size and the Hadoop LZ4 framing.
"""

from __future__ import annotations

import cramjam
import numpy as np

from lazyscan.errors import CorruptFileError, UnsupportedFeatureError
from lazyscan.format import codecs as blocks
from lazyscan.format.options import DEFAULT_MAX_PAGE_SIZE
from lazyscan.parquet import buffers
from lazyscan.parquet.metadata import Codec

# An upper bound of decompressed / compressed size for each codec. Snappy and LZ4 cannot exceed
# about 255:1 (their longest match costs a few bytes); zlib's limit is 1032:1; zstd and brotli
# can go higher, so they are only bounded by max_page_size.
_MAX_RATIO: dict[int, int] = {Codec.SNAPPY: 256, Codec.LZ4_RAW: 256, Codec.LZ4: 256, Codec.GZIP: 1100}


def codec_name(codec: int) -> str:
    try:
        return Codec(codec).name
    except ValueError:
        return f"codec #{codec}"


def check_codec(codec: int) -> None:
    """Raise UnsupportedFeatureError for codecs lazyscan cannot decompress."""
    if codec not in _DECOMPRESSORS and codec != Codec.UNCOMPRESSED:
        raise UnsupportedFeatureError(f"compression codec {codec_name(codec)} is not supported")


def decompress(
    codec: int, data: memoryview | bytes | np.ndarray, uncompressed_size: int, max_page_size: int = DEFAULT_MAX_PAGE_SIZE
) -> np.ndarray:
    """Decompress ``data`` into a new ``uint8`` array of ``uncompressed_size`` bytes."""
    if codec == Codec.UNCOMPRESSED:
        if len(data) != uncompressed_size:
            raise CorruptFileError(
                f"uncompressed page has {len(data)} bytes, header says {uncompressed_size}"
            )
        return np.frombuffer(data, dtype=np.uint8)
    _check_size(codec, len(data), uncompressed_size, max_page_size)
    out = buffers.empty(uncompressed_size, np.uint8)
    _decompress_checked(codec, data, out)
    return out


def decompress_into(
    codec: int, data: memoryview | bytes | np.ndarray, out: np.ndarray, max_page_size: int = DEFAULT_MAX_PAGE_SIZE
) -> None:
    """Decompress ``data`` into ``out`` (``uint8``), which it must fill exactly."""
    if codec == Codec.UNCOMPRESSED:
        if len(data) != len(out):
            raise CorruptFileError(f"uncompressed page has {len(data)} bytes, header says {len(out)}")
        out[:] = np.frombuffer(data, dtype=np.uint8)
        return
    _check_size(codec, len(data), len(out), max_page_size)
    _decompress_checked(codec, data, out)


def _within_ratio(ratio: int | None, compressed: int, uncompressed: int) -> bool:
    """Whether ``compressed`` bytes can decompress to ``uncompressed`` under the codec's largest
    ratio (None or 0: unbounded), with slack for headers of tiny pages."""
    return not ratio or uncompressed <= ratio * compressed + 1024


def _check_size(codec: int, compressed: int, uncompressed: int, max_page_size: int) -> None:
    if codec not in _DECOMPRESSORS:
        raise UnsupportedFeatureError(f"compression codec {codec_name(codec)} is not supported")
    if uncompressed > max_page_size:
        raise CorruptFileError(
            f"page declares {uncompressed} uncompressed bytes, more than the limit {max_page_size}"
        )
    if not _within_ratio(_MAX_RATIO.get(codec), compressed, uncompressed):
        raise CorruptFileError(
            f"page declares {uncompressed} bytes from {compressed} {codec_name(codec)} bytes, "
            "an impossible ratio"
        )


def _decompress_checked(codec: int, data: memoryview | bytes | np.ndarray, out: np.ndarray) -> None:
    if len(out) == 0:
        return
    try:
        n = _DECOMPRESSORS[codec](data, out)
    except blocks.OutputOverflow:
        raise CorruptFileError(
            f"{codec_name(codec)} page decompresses to more than the declared {len(out)} bytes"
        ) from None
    except CorruptFileError:
        raise
    except Exception as e:
        raise CorruptFileError(f"{codec_name(codec)} data cannot be decompressed: {e}") from None
    if n != len(out):
        raise CorruptFileError(f"{codec_name(codec)} page decompressed to {n} bytes, header says {len(out)}")


def _lz4_hadoop(data: memoryview | bytes | np.ndarray, out: np.ndarray) -> int:
    """Hadoop's framing: blocks of [4-byte BE size][4-byte BE compressed size][lz4 block]."""
    raw = bytes(data)
    try:
        return _lz4_hadoop_frames(raw, out)
    except Exception:
        pass
    try:
        return blocks.lz4_block(raw, out)
    except Exception:
        pass
    res = cramjam.lz4.decompress(raw)
    view = np.frombuffer(res, dtype=np.uint8)
    if len(view) != len(out):
        return len(view)
    out[:] = view
    return len(view)


def _lz4_hadoop_frames(raw: bytes, out: np.ndarray) -> int:
    pos = 0
    total = 0
    n = len(raw)
    while pos < n:
        if n - pos < 8:
            raise ValueError("truncated hadoop lz4 header")
        expect = int.from_bytes(raw[pos : pos + 4], "big")
        pos += 4
        produced = 0
        while produced < expect:
            if n - pos < 4:
                raise ValueError("truncated hadoop lz4 block header")
            clen = int.from_bytes(raw[pos : pos + 4], "big")
            pos += 4
            if clen > n - pos or clen == 0:
                raise ValueError("bad hadoop lz4 block length")
            remaining = expect - produced
            if total + remaining > len(out):
                raise ValueError("hadoop lz4 output larger than the page")
            got = blocks.lz4_block(raw[pos : pos + clen], out[total : total + remaining])
            pos += clen
            produced += got
            total += got
            if got == 0:
                raise ValueError("empty hadoop lz4 block")
    return total


#: Parquet's codecs and their decompressors (snappy through lazyscan's kernel: faster than
#: cramjam's on the pages of TPC-H's lineitem)
_DECOMPRESSORS: dict[int, blocks.Decompressor] = {
    Codec.SNAPPY: blocks.snappy,
    Codec.GZIP: blocks.gzip,
    Codec.ZSTD: blocks.zstd,
    Codec.BROTLI: blocks.brotli,
    Codec.LZ4_RAW: blocks.lz4_block,
    Codec.LZ4: _lz4_hadoop,
}
