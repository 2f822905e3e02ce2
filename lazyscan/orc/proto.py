"""A bounded reader of the protobuf wire format, and the ORC tail messages built on it.

Only what an ORC reader needs (the messages of ``orc_proto.proto``: PostScript, Footer, Type,
StripeInformation, ColumnStatistics, Metadata, StripeFooter, RowIndex, BloomFilterIndex).
Input bytes are untrusted: every length is checked against the end of its buffer, each parser
descends only into the messages its schema nests (no recursion on input), and a damaged message
raises :class:`ProtoError`; unknown fields are skipped.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lazyscan.errors import LazyScanError
from lazyscan.format.varint import VarintError, read_uvarint, zigzag

VARINT, FIXED64, BYTES, FIXED32 = 0, 1, 2, 5

#: what the parsers read: bytes, a memoryview or a uint8 array
Buf = bytes | memoryview | np.ndarray


class ProtoError(LazyScanError):
    """A protobuf message that cannot be read (truncated, bad varint, bad wire type)."""


def read_varint(buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    """The unsigned varint at ``pos``: (value, position after it)."""
    try:
        return read_uvarint(buf, pos, end)
    except VarintError as e:
        raise ProtoError(str(e)) from None


def fields(buf: Buf) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value) of each field of a message: an int for varints and
    fixed fields, a memoryview for length-delimited ones."""
    view = memoryview(buf)  # type: ignore[arg-type]
    pos, end = 0, len(view)
    while pos < end:
        key, pos = read_varint(view, pos, end)
        number, wire = key >> 3, key & 7
        value: Any
        if number == 0:
            raise ProtoError("field number 0")
        if wire == VARINT:
            value, pos = read_varint(view, pos, end)
        elif wire == FIXED64:
            if pos + 8 > end:
                raise ProtoError("truncated fixed64 field")
            value = int.from_bytes(view[pos : pos + 8], "little")
            pos += 8
        elif wire == FIXED32:
            if pos + 4 > end:
                raise ProtoError("truncated fixed32 field")
            value = int.from_bytes(view[pos : pos + 4], "little")
            pos += 4
        elif wire == BYTES:
            n, pos = read_varint(view, pos, end)
            if n > end - pos:
                raise ProtoError(f"field {number}: length {n} runs past the message end")
            value = view[pos : pos + n]
            pos += n
        else:
            raise ProtoError(f"field {number}: unsupported wire type {wire}")
        yield number, wire, value


def packed_uints(value: Any, wire: int) -> list[int]:
    """A repeated unsigned field: packed (one length-delimited field) or one varint."""
    if wire == VARINT:
        return [int(value)]
    if wire != BYTES:
        raise ProtoError("repeated integer field with a bad wire type")
    out = []
    pos, end = 0, len(value)
    while pos < end:
        v, pos = read_varint(value, pos, end)
        out.append(v)
    return out


def _double(value: int) -> float:
    return float(struct.unpack("<d", value.to_bytes(8, "little"))[0])


def _text(value: Any) -> str:
    try:
        return bytes(value).decode("utf-8")
    except UnicodeDecodeError:
        raise ProtoError("string field is not UTF-8") from None


def _varint_field(wire: int, value: Any, name: str) -> int:
    if wire != VARINT:
        raise ProtoError(f"{name}: expected a varint")
    return int(value)


def _message(wire: int, value: Any, name: str) -> memoryview:
    if wire != BYTES:
        raise ProtoError(f"{name}: expected a message")
    return value  # type: ignore[no-any-return]


# ---- messages ----------------------------------------------------------------------------

COMPRESSION_NAMES = {0: "NONE", 1: "ZLIB", 2: "SNAPPY", 3: "LZO", 4: "LZ4", 5: "ZSTD"}


@dataclass
class PostScript:
    footer_length: int = 0
    compression: int = 0
    compression_block_size: int = 256 * 1024
    version: list[int] = field(default_factory=list)
    metadata_length: int = 0
    writer_version: int = 0
    stripe_statistics_length: int = 0
    magic: str = ""


def parse_postscript(buf: Buf) -> PostScript:
    ps = PostScript()
    for n, w, v in fields(buf):
        if n == 1:
            ps.footer_length = _varint_field(w, v, "footerLength")
        elif n == 2:
            ps.compression = _varint_field(w, v, "compression")
        elif n == 3:
            ps.compression_block_size = _varint_field(w, v, "compressionBlockSize")
        elif n == 4:
            ps.version.extend(packed_uints(v, w))
        elif n == 5:
            ps.metadata_length = _varint_field(w, v, "metadataLength")
        elif n == 6:
            ps.writer_version = _varint_field(w, v, "writerVersion")
        elif n == 7:
            ps.stripe_statistics_length = _varint_field(w, v, "stripeStatisticsLength")
        elif n == 8000:
            ps.magic = _text(v)
    return ps


# Type.Kind
BOOLEAN, BYTE, SHORT, INT, LONG, FLOAT, DOUBLE, STRING, BINARY, TIMESTAMP = range(10)
LIST, MAP, STRUCT, UNION, DECIMAL, DATE, VARCHAR, CHAR, TIMESTAMP_INSTANT = range(10, 19)
TYPE_NAMES = {
    BOOLEAN: "boolean", BYTE: "tinyint", SHORT: "smallint", INT: "int", LONG: "bigint", FLOAT: "float",
    DOUBLE: "double", STRING: "string", BINARY: "binary", TIMESTAMP: "timestamp", LIST: "array", MAP: "map",
    STRUCT: "struct", UNION: "uniontype", DECIMAL: "decimal", DATE: "date", VARCHAR: "varchar", CHAR: "char",
    TIMESTAMP_INSTANT: "timestamp with local time zone",
}


@dataclass
class OrcType:
    kind: int = 0
    subtypes: list[int] = field(default_factory=list)
    field_names: list[str] = field(default_factory=list)
    maximum_length: int = 0
    precision: int = 0
    scale: int = 0
    #: the type's key-value attributes (``Type.attributes``, ORC 1.7): Iceberg keeps the field id
    #: under ``iceberg.id``
    attributes: dict[str, str] = field(default_factory=dict)


def _attribute(buf: Buf) -> tuple[str, str]:
    """A ``StringPair``; bytes that are not UTF-8 are replaced (an attribute names no value)."""
    key = value = ""
    for n, w, v in fields(buf):
        if n in (1, 2):
            text = bytes(_message(w, v, "attribute")).decode("utf-8", errors="replace")
            if n == 1:
                key = text
            else:
                value = text
    return key, value


def parse_type(buf: Buf) -> OrcType:
    t = OrcType()
    for n, w, v in fields(buf):
        if n == 1:
            t.kind = _varint_field(w, v, "Type.kind")
        elif n == 2:
            t.subtypes.extend(packed_uints(v, w))
        elif n == 3:
            t.field_names.append(_text(_message(w, v, "fieldNames")))
        elif n == 4:
            t.maximum_length = _varint_field(w, v, "maximumLength")
        elif n == 5:
            t.precision = _varint_field(w, v, "precision")
        elif n == 6:
            t.scale = _varint_field(w, v, "scale")
        elif n == 7:
            key, value = _attribute(_message(w, v, "attributes"))
            t.attributes[key] = value
    return t


@dataclass
class StripeInformation:
    offset: int = 0
    index_length: int = 0
    data_length: int = 0
    footer_length: int = 0
    number_of_rows: int = 0
    encrypt_stripe_id: int = 0


def parse_stripe_information(buf: Buf) -> StripeInformation:
    s = StripeInformation()
    for n, w, v in fields(buf):
        if n == 1:
            s.offset = _varint_field(w, v, "offset")
        elif n == 2:
            s.index_length = _varint_field(w, v, "indexLength")
        elif n == 3:
            s.data_length = _varint_field(w, v, "dataLength")
        elif n == 4:
            s.footer_length = _varint_field(w, v, "footerLength")
        elif n == 5:
            s.number_of_rows = _varint_field(w, v, "numberOfRows")
        elif n == 6:
            s.encrypt_stripe_id = _varint_field(w, v, "encryptStripeId")
    return s


@dataclass
class ColumnStatistics:
    """Statistics of one column (file, stripe or row group). ``minimum``/``maximum`` are in the
    column's storage domain: int for integers, dates (days) and timestamps (ms UTC), float for
    floating point, bytes for strings, a decimal string for decimals; None when absent."""

    number_of_values: int | None = None
    has_null: bool | None = None
    kind: str | None = None
    minimum: Any = None
    maximum: Any = None
    true_count: int | None = None
    #: strings: ``lowerBound``/``upperBound`` replace a min/max longer than the writer keeps
    lower_bound: bytes | None = None
    upper_bound: bytes | None = None
    #: doubles: the sum, NaN when a NaN was counted (then min/max may leave values out, ORC-629)
    sum: float | None = None


def _bounds(message: memoryview, name: str, read: Any) -> tuple[Any, Any]:
    """Fields 1 and 2 (minimum, maximum) of a statistics message, each through ``read``."""
    lo = hi = None
    for m, mw, mv in fields(message):
        if m == 1:
            lo = read(mw, mv, name)
        elif m == 2:
            hi = read(mw, mv, name)
    return lo, hi


def _sint(wire: int, value: Any, name: str) -> int:
    return zigzag(_varint_field(wire, value, name))


def _fixed_double(wire: int, value: Any, name: str) -> float:
    if wire != FIXED64:
        raise ProtoError(f"{name}: expected a fixed64")
    return _double(value)


def _utf8(wire: int, value: Any, name: str) -> str:
    return _text(_message(wire, value, name))


def parse_column_statistics(buf: Buf) -> ColumnStatistics:
    s = ColumnStatistics()
    for n, w, v in fields(buf):
        if n == 1:
            s.number_of_values = _varint_field(w, v, "numberOfValues")
        elif n == 10:
            s.has_null = bool(_varint_field(w, v, "hasNull"))
        elif n == 2:
            s.kind = "int"
            s.minimum, s.maximum = _bounds(_message(w, v, "intStatistics"), "intStatistics", _sint)
        elif n == 3:
            s.kind = "double"
            message = _message(w, v, "doubleStatistics")
            s.minimum, s.maximum = _bounds(message, "doubleStatistics", _fixed_double)
            for m, mw, mv in fields(message):
                if m == 3:
                    s.sum = _fixed_double(mw, mv, "doubleStatistics.sum")
        elif n == 4:
            s.kind = "string"
            for m, mw, mv in fields(_message(w, v, "stringStatistics")):
                if m == 1:
                    s.minimum = bytes(_message(mw, mv, "minimum"))
                elif m == 2:
                    s.maximum = bytes(_message(mw, mv, "maximum"))
                elif m == 4:
                    s.lower_bound = bytes(_message(mw, mv, "lowerBound"))
                elif m == 5:
                    s.upper_bound = bytes(_message(mw, mv, "upperBound"))
        elif n == 5:
            s.kind = "boolean"
            counts = []
            for m, mw, mv in fields(_message(w, v, "bucketStatistics")):
                if m == 1:
                    counts.extend(packed_uints(mv, mw))
            s.true_count = counts[0] if counts else None
        elif n == 6:
            s.kind = "decimal"
            s.minimum, s.maximum = _bounds(_message(w, v, "decimalStatistics"), "decimalStatistics", _utf8)
        elif n == 7:
            s.kind = "date"
            s.minimum, s.maximum = _bounds(_message(w, v, "dateStatistics"), "dateStatistics", _sint)
        elif n == 9:
            s.kind = "timestamp"
            utc: dict[int, int] = {}
            local: dict[int, int] = {}
            for m, mw, mv in fields(_message(w, v, "timestampStatistics")):
                if m in (1, 2):
                    local[m] = zigzag(_varint_field(mw, mv, "timestampStatistics"))
                elif m in (3, 4):
                    utc[m - 2] = zigzag(_varint_field(mw, mv, "timestampStatistics"))
            # only the UTC bounds (ORC-135) are comparable across writers' time zones
            s.minimum, s.maximum = utc.get(1), utc.get(2)
            if not utc:
                s.kind = "timestamp-local"
                s.minimum, s.maximum = local.get(1), local.get(2)
        elif n == 8:
            s.kind = "binary"
    return s


@dataclass
class Footer:
    header_length: int = 0
    content_length: int = 0
    stripes: list[StripeInformation] = field(default_factory=list)
    types: list[OrcType] = field(default_factory=list)
    metadata: dict[str, bytes] = field(default_factory=dict)
    number_of_rows: int = 0
    statistics: list[ColumnStatistics] = field(default_factory=list)
    row_index_stride: int = 0
    writer: int = 0
    encrypted: bool = False
    #: the writing library's version (``softwareVersion``, written since ORC 1.7)
    software_version: str | None = None
    #: how deep the type tree is (:func:`type_tree_depth`)
    type_depth: int = 0


#: the deepest type tree read: Impala writes and tests nesting up to 100 levels
#: (``testdata/max_nesting_depth``); type trees are converted by recursion, so a limit far
#: above what writers produce keeps a file from exhausting Python's stack
MAX_TYPE_DEPTH = 256


def type_tree_depth(types: list[OrcType]) -> int:
    """The depth of a footer's type tree (the root struct 0, its columns 1, ...), after checking
    that the types form one as the format lays it out: in pre-order, so that every type's
    subtypes come after it, and each type the subtype of at most one other. ProtoError if not."""
    n = len(types)
    depth = [-1] * n
    if n:
        depth[0] = 0
    deepest = 0
    for i, t in enumerate(types):
        for s in t.subtypes:
            if not i < s < n:
                raise ProtoError(f"type {i} has subtype {s}: subtypes follow their type among the {n} types")
            if depth[s] >= 0:
                raise ProtoError(f"type {s} is a subtype of two types")
            if depth[i] >= 0:
                depth[s] = depth[i] + 1
                deepest = max(deepest, depth[s])
    return deepest


def parse_footer(buf: Buf) -> Footer:
    f = Footer()
    for n, w, v in fields(buf):
        if n == 1:
            f.header_length = _varint_field(w, v, "headerLength")
        elif n == 2:
            f.content_length = _varint_field(w, v, "contentLength")
        elif n == 3:
            f.stripes.append(parse_stripe_information(_message(w, v, "stripes")))
        elif n == 4:
            f.types.append(parse_type(_message(w, v, "types")))
        elif n == 5:
            name, value = "", b""
            for m, mw, mv in fields(_message(w, v, "metadata")):
                if m == 1:
                    name = _text(_message(mw, mv, "name"))
                elif m == 2:
                    value = bytes(_message(mw, mv, "value"))
            f.metadata[name] = value
        elif n == 6:
            f.number_of_rows = _varint_field(w, v, "numberOfRows")
        elif n == 7:
            f.statistics.append(parse_column_statistics(_message(w, v, "statistics")))
        elif n == 8:
            f.row_index_stride = _varint_field(w, v, "rowIndexStride")
        elif n == 9:
            f.writer = _varint_field(w, v, "writer")
        elif n == 10:
            f.encrypted = True
        elif n == 12:
            f.software_version = bytes(_message(w, v, "softwareVersion")).decode("utf-8", "replace")
    f.type_depth = type_tree_depth(f.types)
    return f


def parse_metadata(buf: Buf) -> list[list[ColumnStatistics]]:
    """Per stripe, the statistics of every column."""
    out = []
    for n, w, v in fields(buf):
        if n == 1:
            stripe = [parse_column_statistics(_message(cw, cv, "colStats")) for m, cw, cv in fields(_message(w, v, "stripeStats")) if m == 1]
            out.append(stripe)
    return out


# Stream.Kind
PRESENT, DATA, LENGTH, DICTIONARY_DATA, DICTIONARY_COUNT, SECONDARY, ROW_INDEX, BLOOM_FILTER, BLOOM_FILTER_UTF8 = range(9)
ENCRYPTED_INDEX, ENCRYPTED_DATA = 10, 11
STRIPE_STATISTICS, FILE_STATISTICS = 100, 101
STREAM_NAMES = {
    PRESENT: "PRESENT", DATA: "DATA", LENGTH: "LENGTH", DICTIONARY_DATA: "DICTIONARY_DATA",
    DICTIONARY_COUNT: "DICTIONARY_COUNT", SECONDARY: "SECONDARY", ROW_INDEX: "ROW_INDEX",
    BLOOM_FILTER: "BLOOM_FILTER", BLOOM_FILTER_UTF8: "BLOOM_FILTER_UTF8",
}

# ColumnEncoding.Kind
DIRECT, DICTIONARY, DIRECT_V2, DICTIONARY_V2, DECIMAL_64 = range(5)
ENCODING_NAMES = {DIRECT: "DIRECT", DICTIONARY: "DICTIONARY", DIRECT_V2: "DIRECT_V2", DICTIONARY_V2: "DICTIONARY_V2", DECIMAL_64: "DECIMAL_64"}


@dataclass
class Stream:
    kind: int
    column: int
    length: int
    #: offset of the stream from the start of its stripe (streams lie back to back)
    offset: int = 0


@dataclass
class ColumnEncoding:
    kind: int = DIRECT
    dictionary_size: int = 0
    bloom_encoding: int = 0


@dataclass
class StripeFooter:
    streams: list[Stream] = field(default_factory=list)
    columns: list[ColumnEncoding] = field(default_factory=list)
    writer_timezone: str = ""


def parse_stripe_footer(buf: Buf) -> StripeFooter:
    sf = StripeFooter()
    offset = 0
    for n, w, v in fields(buf):
        if n == 1:
            kind = column = length = 0
            for m, mw, mv in fields(_message(w, v, "streams")):
                if m == 1:
                    kind = _varint_field(mw, mv, "Stream.kind")
                elif m == 2:
                    column = _varint_field(mw, mv, "Stream.column")
                elif m == 3:
                    length = _varint_field(mw, mv, "Stream.length")
            sf.streams.append(Stream(kind, column, length, offset))
            offset += length
        elif n == 2:
            enc = ColumnEncoding()
            for m, mw, mv in fields(_message(w, v, "columns")):
                if m == 1:
                    enc.kind = _varint_field(mw, mv, "ColumnEncoding.kind")
                elif m == 2:
                    enc.dictionary_size = _varint_field(mw, mv, "dictionarySize")
                elif m == 3:
                    enc.bloom_encoding = _varint_field(mw, mv, "bloomEncoding")
            sf.columns.append(enc)
        elif n == 3:
            sf.writer_timezone = _text(_message(w, v, "writerTimezone"))
    return sf


@dataclass
class RowIndexEntry:
    positions: list[int]
    statistics: ColumnStatistics | None


def parse_row_index(buf: Buf) -> list[RowIndexEntry]:
    out = []
    for n, w, v in fields(buf):
        if n != 1:
            continue
        positions: list[int] = []
        stats = None
        for m, mw, mv in fields(_message(w, v, "RowIndex.entry")):
            if m == 1:
                positions.extend(packed_uints(mv, mw))
            elif m == 2:
                stats = parse_column_statistics(_message(mw, mv, "RowIndexEntry.statistics"))
        out.append(RowIndexEntry(positions, stats))
    return out


@dataclass
class BloomFilterEntry:
    num_hash_functions: int
    #: the bit set as little-endian 64-bit words
    bitset: np.ndarray
    #: from a BLOOM_FILTER_UTF8 stream (strings hashed as UTF-8, ORC-101)
    utf8: bool = False


class UnknownBloomFormat(ProtoError):
    """A Bloom filter message of a layout no released ORC version writes."""


def parse_bloom_filter_index(buf: Buf, utf8: bool = False) -> list[BloomFilterEntry]:
    out = []
    for n, w, v in fields(buf):
        if n != 1:
            continue
        k = 0
        words: list[int] = []
        raw: bytes | None = None
        for m, mw, mv in fields(_message(w, v, "BloomFilterIndex.bloomFilter")):
            if m == 1:
                k = _varint_field(mw, mv, "numHashFunctions")
            elif m == 2:
                if mw == FIXED64:
                    words.append(mv)
                elif mw == BYTES:
                    if len(mv) % 8:
                        raise ProtoError("packed fixed64 bit set of a length not a multiple of 8")
                    words.extend(np.frombuffer(bytes(mv), "<u8").tolist())
                else:
                    raise ProtoError("BloomFilter.bitset: bad wire type")
            elif m == 3:
                if mw != BYTES:
                    raise UnknownBloomFormat("Bloom filter field 3 is not a byte string")
                raw = bytes(mv)
        if raw is not None:
            if len(raw) % 8:
                raise ProtoError("utf8bitset of a length not a multiple of 8")
            bits = np.frombuffer(raw, "<u8").astype(np.uint64)
        else:
            bits = np.array(words, dtype=np.uint64)
        out.append(BloomFilterEntry(k, bits, utf8))
    return out
