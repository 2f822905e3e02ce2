"""The block decompressors of the format floor (lazyscan/format/codecs.py) and the two formats'
use of them: every algorithm gives back what its reference compressor was given, writes no more
than its buffer holds, and refuses damaged data with a lazyscan error; Parquet keeps its
exact-size pages, ORC its chunks of at most the block size."""

from __future__ import annotations

import gzip as gzip_module
import zlib
from collections.abc import Callable

import cramjam
import numpy as np
import pytest

from lazyscan.errors import CorruptFileError, UnsupportedFeatureError
from lazyscan.format import codecs
from lazyscan.orc import compression as orc_compression
from lazyscan.parquet.codecs import decompress as parquet_decompress
from lazyscan.parquet.metadata import Codec

PAYLOAD = (b"lineitem comment " * 300) + bytes(range(256)) * 4


def _raw_deflate(data: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


#: each algorithm with the reference compressor of the stream it reads
COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {
    "snappy": lambda d: bytes(cramjam.snappy.compress_raw(d)),
    "deflate": _raw_deflate,
    "gzip": gzip_module.compress,
    "zstd": lambda d: bytes(cramjam.zstd.compress(d)),
    "brotli": lambda d: bytes(cramjam.brotli.compress(d)),
    "lz4_block": lambda d: bytes(cramjam.lz4.compress_block(d, store_size=False)),
}


def test_every_algorithm_has_a_reference_compressor_here() -> None:
    assert set(codecs.DECOMPRESSORS) == set(COMPRESSORS)


@pytest.mark.parametrize("name", sorted(COMPRESSORS))
def test_round_trip_into_a_buffer_of_any_type_of_input(name: str) -> None:
    comp = COMPRESSORS[name](PAYLOAD)
    decompress = codecs.DECOMPRESSORS[name]
    for data in (comp, memoryview(comp), np.frombuffer(comp, np.uint8)):
        out = np.zeros(len(PAYLOAD), np.uint8)
        assert decompress(data, out) == len(PAYLOAD)
        assert out.tobytes() == PAYLOAD


@pytest.mark.parametrize("name", sorted(COMPRESSORS))
def test_a_larger_buffer_is_filled_as_far_as_the_data_goes(name: str) -> None:
    out = np.full(len(PAYLOAD) + 100, 7, np.uint8)
    assert codecs.DECOMPRESSORS[name](COMPRESSORS[name](PAYLOAD), out) == len(PAYLOAD)
    assert out[: len(PAYLOAD)].tobytes() == PAYLOAD
    assert (out[len(PAYLOAD) :] == 7).all(), "nothing written past the data"


@pytest.mark.parametrize("name", sorted(COMPRESSORS))
def test_a_smaller_buffer_is_never_overrun(name: str) -> None:
    out = np.full(len(PAYLOAD) + 64, 7, np.uint8)
    with pytest.raises(codecs.DecompressionError):
        codecs.DECOMPRESSORS[name](COMPRESSORS[name](PAYLOAD), out[: len(PAYLOAD) - 1])
    assert (out[len(PAYLOAD) - 1 :] == 7).all()


@pytest.mark.parametrize("name", ["snappy", "deflate", "gzip"])
def test_too_much_output_is_told_apart_from_damage(name: str) -> None:
    """The algorithms whose decoder lazyscan drives say which: the formats word it their way."""
    with pytest.raises(codecs.OutputOverflow):
        codecs.DECOMPRESSORS[name](COMPRESSORS[name](PAYLOAD), np.zeros(100, np.uint8))


@pytest.mark.parametrize("name", sorted(COMPRESSORS))
def test_damaged_data_is_a_corrupt_file_error(name: str) -> None:
    comp = bytearray(COMPRESSORS[name](PAYLOAD))
    cut = bytes(comp[: len(comp) // 2])
    garbage = bytes(comp[:2]) + b"\xff" * 40
    for data in (cut, garbage):
        out = np.zeros(len(PAYLOAD), np.uint8)
        try:
            n = codecs.DECOMPRESSORS[name](data, out)
        except codecs.DecompressionError as e:
            assert isinstance(e, CorruptFileError)
            continue
        assert n <= len(PAYLOAD)
        if name != "deflate":
            # a prefix of a stream may decode to a prefix of the data; never to other bytes. Raw
            # deflate has no check value, and ORC's Java reader (ZlibCodec) takes what inflates:
            # ORC's stream decoders check the lengths of what comes out.
            assert n < len(PAYLOAD) and out[:n].tobytes() == PAYLOAD[:n], name


def test_gzip_members_back_to_back_and_zero_padding() -> None:
    two = gzip_module.compress(PAYLOAD[:1000]) + gzip_module.compress(PAYLOAD[1000:]) + b"\x00" * 8
    out = np.zeros(len(PAYLOAD), np.uint8)
    assert codecs.gzip(two, out) == len(PAYLOAD)
    assert out.tobytes() == PAYLOAD
    with pytest.raises(codecs.DecompressionError, match="ends before the end"):
        codecs.gzip(gzip_module.compress(PAYLOAD)[:-12], np.zeros(len(PAYLOAD), np.uint8))


@pytest.mark.parametrize(
    ("codec", "name"),
    [(Codec.SNAPPY, "snappy"), (Codec.GZIP, "gzip"), (Codec.ZSTD, "zstd"), (Codec.BROTLI, "brotli"), (Codec.LZ4_RAW, "lz4_block")],
)
def test_parquet_pages_must_fill_the_size_they_declare(codec: Codec, name: str) -> None:
    comp = COMPRESSORS[name](PAYLOAD)
    assert parquet_decompress(codec, comp, len(PAYLOAD)).tobytes() == PAYLOAD
    with pytest.raises(CorruptFileError, match=r"header says|cannot be decompressed"):
        parquet_decompress(codec, comp, len(PAYLOAD) + 10)
    with pytest.raises(CorruptFileError):
        parquet_decompress(codec, comp, len(PAYLOAD) - 10)


@pytest.mark.parametrize(("codec", "name"), [(Codec.SNAPPY, "SNAPPY"), (Codec.GZIP, "GZIP")])
def test_parquet_words_too_much_output_as_more_than_the_page_declares(codec: Codec, name: str) -> None:
    comp = COMPRESSORS[name.lower()](PAYLOAD)
    with pytest.raises(CorruptFileError, match=f"{name} page decompresses to more than the declared 1000 bytes"):
        parquet_decompress(codec, comp, 1000)


def _orc_stream(chunks: list[bytes], original: bool = False) -> bytes:
    out = b""
    for c in chunks:
        header = len(c) * 2 + int(original)
        out += header.to_bytes(3, "little") + c
    return out


@pytest.mark.parametrize(
    ("codec", "name"),
    [(orc_compression.ZLIB, "deflate"), (orc_compression.SNAPPY, "snappy"), (orc_compression.ZSTD, "zstd"), (orc_compression.LZ4, "lz4_block")],
)
def test_orc_chunks_decompress_to_at_most_the_block_size(codec: int, name: str) -> None:
    block = 4096
    parts = [PAYLOAD[i : i + block] for i in range(0, len(PAYLOAD), block)]
    stream = _orc_stream([COMPRESSORS[name](p) for p in parts])
    got = orc_compression.decompress_stream(stream, codec, block)
    assert got.data.tobytes() == PAYLOAD
    assert got.data_offsets.tolist() == [i * block for i in range(len(parts))]
    with pytest.raises(CorruptFileError, match=r"beyond the block size|cannot be decompressed"):
        orc_compression.decompress_stream(_orc_stream([COMPRESSORS[name](PAYLOAD)]), codec, block)


@pytest.mark.parametrize(("codec", "name"), [(orc_compression.ZLIB, "zlib"), (orc_compression.SNAPPY, "snappy")])
def test_orc_words_too_much_output_as_beyond_the_block_size(codec: int, name: str) -> None:
    algorithm = "deflate" if name == "zlib" else name
    stream = _orc_stream([COMPRESSORS[algorithm](PAYLOAD)])
    with pytest.raises(CorruptFileError, match=f"a {name} chunk decompresses beyond the block size 1024"):
        orc_compression.decompress_stream(stream, codec, 1024)


def test_orc_refuses_lzo() -> None:
    with pytest.raises(UnsupportedFeatureError, match="LZO"):
        orc_compression.check_codec(orc_compression.LZO)
    with pytest.raises(UnsupportedFeatureError, match="LZO"):
        orc_compression.decompress_stream(_orc_stream([b"abc"]), orc_compression.LZO, 1024)
