"""One page of a column chunk decompressed and decoded, with counters; the page cache a task's
reads share.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pyarrow as pa

from lazyscan.errors import CorruptFileError, FileError, LazyScanError, UnsupportedFeatureError
from lazyscan.format.counters import ReadCounters
from lazyscan.parquet import codecs
from lazyscan.parquet import kernels as K
from lazyscan.parquet.convert import Assembled, stored_as_is, to_arrow
from lazyscan.parquet.decode import (
    ByteArrays,
    LocatedByteArrays,
    PageValues,
    Values,
    check_zero_levels,
    decode_data_page,
    decode_dictionary_page,
    decode_levels_rle,
    decode_levels_v1,
)
from lazyscan.parquet.fetch import OpenFile
from lazyscan.parquet.layout import IndexMismatch
from lazyscan.parquet.match import BytesMatcher
from lazyscan.parquet.metadata import ColumnMetaData, Encoding, PageHeader, PageType
from lazyscan.parquet.page_header import parse_page_header
from lazyscan.parquet.schema import ColumnDescriptor
from lazyscan.parquet.thrift import ThriftError


class PageCache:
    """Decompressed page bodies and decoded dictionaries of one task, keyed by file offset.

    The scan evaluates ``=`` / ``IN`` on a byte-array column's encoded pages and later
    materializes that column for the surviving rows; pages holding a match are kept here by the
    first read so the second does not decompress them again. Only pages with a match are
    stored, so the cache holds at most one page per surviving row and predicate column.
    Dictionaries decoded by a read (or by :meth:`ParquetFile.read_dictionary <lazyscan.parquet.file.ParquetFile.read_dictionary>` for dictionary
    pruning) are kept too, so later reads of the chunk neither fetch nor decode them again.
    """

    def __init__(self) -> None:
        self.bodies: dict[int, np.ndarray] = {}
        #: headers of the v1 pages in ``bodies``: such a page is decoded again without a fetch
        self.headers: dict[int, PageHeader] = {}
        self.dictionaries: dict[int, Values] = {}

    def __len__(self) -> int:
        return len(self.bodies)


def parse_header(buf: np.ndarray, pos: int, end: int) -> PageHeader:
    """The page header at ``buf[pos:end]``; CorruptFileError when it does not parse."""
    try:
        return parse_page_header(buf, pos, end)
    except ThriftError as e:
        raise CorruptFileError(f"corrupt page header: {e}") from None


def match_dictionary(matcher: BytesMatcher | None, dictionary: Values | None) -> np.ndarray | None:
    """Which entries of a byte-array ``dictionary`` ``matcher`` matches (None without either)."""
    if matcher is None or dictionary is None:
        return None
    if isinstance(dictionary, LocatedByteArrays):
        return matcher.match_located(dictionary.buf, dictionary.starts, dictionary.lengths)
    assert isinstance(dictionary, ByteArrays)
    return matcher.match(dictionary.offsets, dictionary.data)


def looked_up(dictionary: Any, desc: ColumnDescriptor) -> bool:
    """Whether pages coded against ``dictionary`` are better decoded by looking their codes up
    as they are unpacked: one number per entry, which Arrow stores as it is (a decimal or a
    narrower integer is converted once per dictionary entry on the codes' way instead)."""
    return (
        isinstance(dictionary, np.ndarray)
        and dictionary.ndim == 1
        and dictionary.dtype.kind in "iuf"
        and stored_as_is(desc, dictionary.dtype)
    )


class PageDecoder:
    """Decompresses and decodes the pages of one open file's column chunks."""

    def __init__(self, file: OpenFile, v2_always_compressed: bool) -> None:
        self.file = file
        #: the writer compressed v2 pages that say they are not (ARROW-17100)
        self.v2_always_compressed = v2_always_compressed

    def to_arrow(self, row_group: int, desc: ColumnDescriptor, chunk: Assembled, c: ReadCounters) -> pa.Array:
        """Convert an assembled chunk of a flat column to its Arrow array."""
        t0 = time.perf_counter()
        try:
            arr = to_arrow(desc, chunk)
        except FileError as e:
            raise e.at(file=self.file.path, row_group=row_group, column=desc.name) from None
        except (ValueError, IndexError, TypeError, OverflowError) as e:
            raise CorruptFileError(
                f"cannot convert column chunk: {type(e).__name__}: {e}", file=self.file.path, row_group=row_group, column=desc.name
            ) from e
        c.decode_seconds += time.perf_counter() - t0
        return arr

    def decompress(
        self, codec: int, body: memoryview | np.ndarray, size: int, c: ReadCounters
    ) -> np.ndarray:
        t0 = time.perf_counter()
        out = codecs.decompress(codec, body, size, self.file.options.max_page_size)
        c.decompress_seconds += time.perf_counter() - t0
        if codec != 0:
            c.bytes_decompressed += size
        return out

    def decode_dictionary(
        self, buf: np.ndarray, pos: int, end: int, desc: ColumnDescriptor, md: ColumnMetaData,
        c: ReadCounters, cache: PageCache | None = None, offset: int = -1,
        indexed: bool = False,
    ) -> Values:
        """The dictionary page at ``buf[pos:end]``; ``indexed``: that extent comes from the chunk's
        offset index (the space before its first data page), which the page must fill."""
        if cache is not None:
            hit = cache.dictionaries.get(offset)
            if hit is not None:
                return hit
        values = self._decode_dictionary_page(buf, pos, end, desc, md, c, indexed)
        if cache is not None:
            cache.dictionaries[offset] = values
        return values

    def _decode_dictionary_page(
        self, buf: np.ndarray, pos: int, end: int, desc: ColumnDescriptor, md: ColumnMetaData, c: ReadCounters,
        indexed: bool = False,
    ) -> Values:
        mismatch = IndexMismatch if indexed else CorruptFileError
        try:
            header = parse_page_header(buf, pos, end)
        except ThriftError as e:
            raise mismatch(f"corrupt page header: {e}") from None
        body_start = pos + header.header_size
        if header.type != PageType.DICTIONARY_PAGE or header.dictionary_page_header is None:
            raise mismatch("expected a dictionary page")
        if body_start + header.compressed_page_size > end:
            raise mismatch("dictionary page extends past its column chunk")
        if indexed and body_start + header.compressed_page_size != end:
            raise mismatch("the offset index's first data page does not follow the dictionary page")
        enc = header.dictionary_page_header.encoding
        if enc not in (0, 2):
            raise UnsupportedFeatureError(f"dictionary page encoding #{enc} is not supported")
        body = self.decompress(md.codec, buf[body_start : body_start + header.compressed_page_size], header.uncompressed_page_size, c)
        t0 = time.perf_counter()
        values = decode_dictionary_page(body, desc, header.dictionary_page_header.num_values)
        c.decode_seconds += time.perf_counter() - t0
        c.values_decoded += header.dictionary_page_header.num_values
        return values

    def decode_page(
        self,
        header: PageHeader,
        buf: np.ndarray,
        body_start: int,
        desc: ColumnDescriptor,
        md: ColumnMetaData,
        sel: np.ndarray | None,
        dictionary: Values | None,
        c: ReadCounters,
        matcher: BytesMatcher | None = None,
        dict_mask: np.ndarray | None = None,
        cache: PageCache | None = None,
        offset: int = -1,
    ) -> PageValues:
        """Decode one data page; ``offset`` (the page's place in the file) keys ``cache``."""
        body_end = body_start + header.compressed_page_size
        cached = cache.bodies.get(offset) if cache is not None else None
        if cached is None and body_end > len(buf):
            raise CorruptFileError("page extends past its column chunk")
        max_def = desc.max_definition_level
        if header.type == PageType.DATA_PAGE:
            dph = header.data_page_header
            if dph is None:
                raise CorruptFileError("data page without a data page header")
            n = dph.num_values
            if cached is not None:
                body = cached
            else:
                body = self.decompress(md.codec, buf[body_start:body_end], header.uncompressed_page_size, c)
            t0 = time.perf_counter()
            pos = 0
            defs = None
            if max_def > 0:
                defs, pos = decode_levels_v1(body, 0, len(body), dph.definition_level_encoding, max_def, n)
            encoding = dph.encoding
            vbuf, vpos, vend = body, pos, len(body)
        else:
            h2 = header.data_page_header_v2
            if h2 is None:
                raise CorruptFileError("v2 data page without a v2 header")
            n = h2.num_values
            if h2.num_rows != n:
                raise CorruptFileError("v2 page of a flat column with num_rows != num_values")
            levels_len = h2.repetition_levels_byte_length + h2.definition_levels_byte_length
            if levels_len > header.compressed_page_size or levels_len > header.uncompressed_page_size:
                raise CorruptFileError("v2 page levels exceed the page")
            check_zero_levels(buf, body_start, h2.repetition_levels_byte_length, n, "repetition")
            if max_def == 0:
                check_zero_levels(buf, body_start + h2.repetition_levels_byte_length, h2.definition_levels_byte_length, n, "definition")
            levels_start = body_start + h2.repetition_levels_byte_length
            defs = None
            t0 = time.perf_counter()
            if max_def > 0:
                defs = decode_levels_rle(buf, levels_start, levels_start + h2.definition_levels_byte_length, max_def, n)
                if max_def == 1:  # counted from the runs, a word at a time
                    nonnull = K.rle_bp_count_ones(buf, levels_start, levels_start + h2.definition_levels_byte_length, 1, n, 2)
                else:
                    nonnull = int(np.count_nonzero(defs == max_def))
                nulls = n - nonnull
                if nulls != h2.num_nulls:
                    raise CorruptFileError(f"v2 page levels hold {nulls} nulls, its header says {h2.num_nulls}")
            c.decode_seconds += time.perf_counter() - t0
            values_raw = buf[body_start + levels_len : body_end]
            vsize = header.uncompressed_page_size - levels_len
            if cached is not None:
                vbuf = cached
            elif md.codec != 0 and (h2.is_compressed or self.v2_always_compressed or len(values_raw) != vsize):
                # values said to be stored as they are, yet of another size than stored, can only
                # be compressed: old parquet-cpp wrote them so (ARROW-17100)
                vbuf = self.decompress(md.codec, values_raw, vsize, c)
            else:
                if len(values_raw) != vsize:
                    raise CorruptFileError(
                        f"v2 page stores {len(values_raw)} bytes of values uncompressed, its header says {vsize}"
                    )
                vbuf = np.asarray(values_raw)
            vpos, vend = 0, len(vbuf)
            encoding = h2.encoding
            t0 = time.perf_counter()
        dict_size = len(dictionary) if dictionary is not None else None
        page = decode_data_page(vbuf, vpos, vend, encoding, desc, n, defs, sel, dict_size, matcher, dict_mask)
        c.decode_seconds += time.perf_counter() - t0
        c.values_decoded += len(page.values)
        if cache is not None and cached is None and matcher is not None and np.any(page.values):  # type: ignore[arg-type]
            if header.type == PageType.DATA_PAGE:
                cache.bodies[offset] = body
                cache.headers[offset] = header
            else:
                cache.bodies[offset] = vbuf
        return page

    def page_looked_up(
        self, header: PageHeader, buf: np.ndarray, body_start: int, desc: ColumnDescriptor, md: ColumnMetaData,
        dictionary: np.ndarray, out: np.ndarray, at: int, c: ReadCounters,
    ) -> bool:
        """Decode a v1 dictionary-encoded page without nulls straight into ``out[at:]`` by
        looking its codes up as they are unpacked; False (nothing written that counts) for any
        other page or any fault, which the general decoder then reads or reports."""
        dph = header.data_page_header
        if header.type != PageType.DATA_PAGE or dph is None:
            return False
        if dph.encoding not in (Encoding.RLE_DICTIONARY, Encoding.PLAIN_DICTIONARY):
            return False
        n = dph.num_values
        body_end = body_start + header.compressed_page_size
        if n <= 0 or at + n > len(out) or body_end > len(buf):
            return False
        body = self.decompress(md.codec, buf[body_start:body_end], header.uncompressed_page_size, c)
        t0 = time.perf_counter()
        pos = 0
        max_def = desc.max_definition_level
        if max_def > 0:
            try:
                defs, pos = decode_levels_v1(body, 0, len(body), dph.definition_level_encoding, max_def, n)
            except (LazyScanError, ValueError):
                return False
            if not K.all_equal(defs, max_def):
                return False  # nulls
        if len(body) - pos < 2:
            return False
        if dictionary.dtype.kind == "f" and out.dtype == dictionary.dtype:
            # floats move as integers of their width: one kernel signature for int32 and float32
            word = np.dtype(f"<i{dictionary.dtype.itemsize}")
            dictionary, out = dictionary.view(word), out.view(word)
        got = K.rle_bp_decode_dict_values(body, pos + 1, len(body), int(body[pos]), n, dictionary, out[at : at + n])
        c.decode_seconds += time.perf_counter() - t0
        if got != n:
            return False
        c.values_decoded += n
        return True
