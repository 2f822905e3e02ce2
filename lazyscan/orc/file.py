"""One ORC file: its tail (postscript, footer, metadata), stripe footers, row indexes and column
reads, decoded by the kernels of :mod:`lazyscan.orc.kernels`.

Columns are named by their top-level field name or their ORC column id (pre-order, 0 is the
root struct). Flat columns are decoded here; nested ones go through pyarrow's ORC reader for
the stripe and are then selected, with the same results.

Timestamps read as microseconds by default, the unit of Spark's ``TimestampType``, which holds
every year an ORC file stores (pyarrow's nanoseconds hold only 1677 to 2262); the fraction
below a microsecond is dropped toward negative infinity, as Spark's ORC reader does (it takes
``millis * 1000 + nanos / 1000 % 1000`` from ORC's vectors, ``DateTimeUtils.fromJavaTimestamp``).
``timestamp_unit="ns"`` keeps nanoseconds; a value that unit cannot hold is then an error naming
its row, never a wrapped value. So is every value that does not fit the Arrow type it is read
into: a date beyond date32's days, an integer beyond its column's width, a decimal with more
digits than its declared precision.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import hashlib
import time
import zoneinfo
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from lazyscan.errors import (
    AccessDeniedError,
    CorruptFileError,
    FileError,
    ObjectNotFoundError,
    OptionError,
    TransientSourceError,
    UnsupportedFeatureError,
)
from lazyscan.format.counters import ReadCounters
from lazyscan.format.selection import RowRanges
from lazyscan.format.statistics import ColumnStats
from lazyscan.format.units import SourceFile
from lazyscan.io.fetch import fetch
from lazyscan.io.retry import RetryPolicy
from lazyscan.io.source import (
    LocalSource,
    ReadOptions,
    ShortReadError,
    Source,
    SourceError,
    open_source,
    tail_read_length,
)
from lazyscan.orc import kernels as K
from lazyscan.orc import proto as P
from lazyscan.orc.compression import NONE, Decompressed, check_codec, decompress_stream
from lazyscan.orc.positions import RUN, PositionColumns, Resume, position_columns, stream_layout
from lazyscan.orc.statistics import (
    bloom_filters_trusted,
    column_stats,
    file_trust,
    stripes_agree_with_file,
)

MAGIC = b"ORC"
#: bytes read from the end of the file first (postscript, footer and usually the metadata)
_TAIL_READ = 64 * 1024
#: seconds from 1970-01-01 to ORC's timestamp base, 2015-01-01 00:00:00
ORC_EPOCH = 1_420_070_400
_UTC_NAMES = {"", "UTC", "GMT", "Etc/UTC", "Etc/GMT", "Z", "Zulu", "Universal", "Etc/Universal"}
#: the longest encoded run-length run (512 values of 8 bytes, plus its header)
_MAX_RUN_BYTES = 2 + 8 * 512
#: a selection whose row groups hold more than this share of the stripe's rows is read whole
SEEK_MAX_SHARE = 0.5
#: the units timestamps read in, by name: nanoseconds per unit
TIMESTAMP_UNITS = {"us": 1_000, "ns": 1}


@dataclass
class OrcColumn:
    """A column of the file: its ORC id, top-level name, ORC type and Arrow type."""

    id: int
    name: str
    type: P.OrcType
    arrow_type: pa.DataType

    @property
    def flat(self) -> bool:
        return self.type.kind not in (P.LIST, P.MAP, P.STRUCT, P.UNION)


def arrow_type(types: list[P.OrcType], i: int, depth: int = 0, timestamp_unit: str = "us") -> pa.DataType:
    """The Arrow type ORC type ``i`` reads as: pyarrow's ORC reader's, but for timestamps, which
    are in ``timestamp_unit``."""
    if i >= len(types):  # the footer's parser checked the tree (proto.type_tree_depth)
        raise CorruptFileError(f"type tree refers to type {i} of {len(types)}")
    t = types[i]
    k = t.kind
    simple = {
        P.BOOLEAN: pa.bool_(), P.BYTE: pa.int8(), P.SHORT: pa.int16(), P.INT: pa.int32(), P.LONG: pa.int64(),
        P.FLOAT: pa.float32(), P.DOUBLE: pa.float64(), P.STRING: pa.string(), P.VARCHAR: pa.string(),
        P.CHAR: pa.string(), P.BINARY: pa.binary(), P.DATE: pa.date32(), P.TIMESTAMP: pa.timestamp(timestamp_unit),
        P.TIMESTAMP_INSTANT: pa.timestamp(timestamp_unit, tz="UTC"),
    }
    if k in simple:
        return simple[k]
    if k == P.DECIMAL:
        if t.precision == 0:  # format 0.11: no precision, each value carries its own scale
            return pa.decimal128(38, 6)
        precision = t.precision
        if not 1 <= precision <= 38 or t.scale > precision:
            raise CorruptFileError(f"decimal({t.precision}, {t.scale}) is not a valid decimal type")
        return pa.decimal128(precision, t.scale)
    def child(name: str, s: int, nullable: bool = True) -> pa.Field:
        # a child's type attributes (Iceberg's field id ``iceberg.id``) as its field metadata,
        # as pyarrow's ORC reader gives them
        attributes = types[s].attributes if s < len(types) else None
        return pa.field(name, arrow_type(types, s, depth + 1, timestamp_unit), nullable, attributes or None)

    if k == P.LIST:
        if len(t.subtypes) != 1:
            raise CorruptFileError("a list type must have one subtype")
        return pa.list_(child("item", t.subtypes[0]))
    if k == P.MAP:
        if len(t.subtypes) != 2:
            raise CorruptFileError("a map type must have two subtypes")
        return pa.map_(child("key", t.subtypes[0], nullable=False), child("value", t.subtypes[1]))
    if k == P.STRUCT:
        if len(t.field_names) != len(t.subtypes):
            raise CorruptFileError("a struct type has a different number of names and subtypes")
        return pa.struct([child(n, s) for n, s in zip(t.field_names, t.subtypes)])
    if k == P.UNION:
        return pa.sparse_union([child(f"_union_{j}", s) for j, s in enumerate(t.subtypes)])
    raise UnsupportedFeatureError(f"ORC type kind {k} is not supported")


class OrcFile:
    """One ORC file: metadata, statistics, row indexes and column reads.

    ``source`` is a path (local, ``file://``, or a URI pyarrow understands), a path on
    ``filesystem`` (pyarrow or fsspec), or an open :class:`lazyscan.io.Source`.
    """

    def __init__(
        self, source: Any, filesystem: Any = None, *, read: ReadOptions | None = None, timestamp_unit: str = "us",
        retry: RetryPolicy | None = None,
    ) -> None:
        """``read``: request coalescing (None: the source's policy, see :class:`ReadOptions`).
        ``retry``: how object-store requests are retried (None: the default policy).
        ``timestamp_unit``: ``us`` (Spark's unit, every year ORC stores) or ``ns`` (pyarrow's;
        a value outside 1677-09-21 to 2262-04-11 is then an error)."""
        if timestamp_unit not in TIMESTAMP_UNITS:
            raise OptionError(f"timestamp_unit must be one of {', '.join(TIMESTAMP_UNITS)}, got {timestamp_unit!r}")
        self.timestamp_unit = timestamp_unit
        self.source: Source = open_source(source, filesystem, retry=retry)
        self._read = read
        self.path = self.source.path
        self.counters = ReadCounters()
        self._stripe_footers: dict[int, P.StripeFooter] = {}
        self._row_indexes: dict[tuple[int, int], list[P.RowIndexEntry] | None] = {}
        self._positions: dict[tuple[int, int], np.ndarray | None] = {}
        self._stripe_stats_agree: dict[int, bool] = {}
        self._seekable: dict[tuple[str, int, int], tuple[np.ndarray, dict[int, PositionColumns]] | None] = {}
        self._stripe_stats: list[list[P.ColumnStatistics]] | None = None
        self._metadata_bytes: memoryview | None = None
        #: the file's tail as read: metadata, footer and postscript (see :attr:`footer_digest`)
        self._tail: memoryview = memoryview(b"")
        self._footer_digest: bytes | None = None
        #: the bytes read at the end of the file with its tail, and where they start: the last
        #: stripe's footer usually lies in them
        self._tail_read: tuple[int, bytes] = (0, b"")
        self._read_tail()

    def _error(self, cls: type[FileError], msg: str, **where: Any) -> FileError:
        return cls(msg, file=self.path, **where)

    # ---- tail ---------------------------------------------------------------------------

    def _read_tail(self) -> None:
        size = self.source.size
        if size < 4:
            raise self._error(CorruptFileError, f"file of {size} bytes is too small to be ORC")
        try:
            tail_len = tail_read_length(self.source, _TAIL_READ)
            tail = self.source.read_at(size - tail_len, tail_len)
        except (AccessDeniedError, ObjectNotFoundError, TransientSourceError):
            raise  # the store's answer, not the file's fault
        except SourceError as e:
            raise self._error(CorruptFileError, f"cannot read the file tail: {e}") from None
        ps_len = tail[-1]
        if ps_len == 0 or ps_len + 1 > len(tail):
            raise self._error(CorruptFileError, f"postscript length {ps_len} does not fit the file")
        ps_bytes = memoryview(tail)[len(tail) - 1 - ps_len : len(tail) - 1]
        try:
            ps = P.parse_postscript(ps_bytes)
        except P.ProtoError as e:
            raise self._error(CorruptFileError, f"not an ORC file or corrupt postscript: {e}") from None
        # files of the first format version carry the magic only at the start of the file
        if ps.magic != "ORC" and self.source.read_at(0, 3) != MAGIC:
            raise self._error(CorruptFileError, "not an ORC file: no 'ORC' magic in the postscript or at the start")
        try:
            check_codec(ps.compression)
        except UnsupportedFeatureError as e:
            raise self._error(UnsupportedFeatureError, str(e)) from None
        if ps.compression != NONE and not 0 < ps.compression_block_size <= 1 << 30:
            raise self._error(CorruptFileError, f"compression block size {ps.compression_block_size} is out of range")
        self.postscript = ps
        self.compression = ps.compression
        self.block_size = ps.compression_block_size
        tail_len = 1 + ps_len + ps.footer_length + ps.metadata_length
        if tail_len > size:
            raise self._error(CorruptFileError, f"footer and metadata ({tail_len} bytes) exceed the file size {size}")
        if tail_len > len(tail):
            tail = self.source.read_at(size - tail_len, tail_len)
        self._tail_read = (size - len(tail), tail)
        view = memoryview(tail)
        self._tail = view[len(tail) - tail_len :]
        footer_end = len(tail) - 1 - ps_len
        footer_raw = view[footer_end - ps.footer_length : footer_end]
        self._metadata_bytes = view[footer_end - ps.footer_length - ps.metadata_length : footer_end - ps.footer_length]
        try:
            footer = P.parse_footer(self._decompress(footer_raw).data)
        except P.ProtoError as e:
            raise self._error(CorruptFileError, f"corrupt footer: {e}") from None
        except CorruptFileError as e:
            raise self._error(CorruptFileError, f"corrupt footer: {e.reason}") from None
        if footer.encrypted:
            raise self._error(UnsupportedFeatureError, "encrypted ORC files are not supported")
        self.footer = footer
        self.types = footer.types
        if not self.types:
            raise self._error(CorruptFileError, "the footer has no types")
        if footer.type_depth > P.MAX_TYPE_DEPTH:
            raise self._error(
                UnsupportedFeatureError,
                f"types nested {footer.type_depth} levels deep; lazyscan reads at most {P.MAX_TYPE_DEPTH}",
            )
        root = self.types[0]
        if root.kind != P.STRUCT:
            raise self._error(UnsupportedFeatureError, "ORC files whose root type is not a struct are not supported")
        self.columns: list[OrcColumn] = []
        for name, sub in zip(root.field_names, root.subtypes):
            self.columns.append(OrcColumn(
                sub, name, self.types[sub] if sub < len(self.types) else P.OrcType(),
                arrow_type(self.types, sub, timestamp_unit=self.timestamp_unit),
            ))
        self.arrow_schema = pa.schema([pa.field(c.name, c.arrow_type) for c in self.columns])
        for i, (t, st) in enumerate(zip(self.types, footer.statistics)):
            if st.kind is not None and st.kind not in _STATISTICS_KINDS.get(t.kind, (st.kind,)):
                # a type changed in the footer: the streams hold the other type's values
                raise self._error(
                    CorruptFileError, f"the footer's type {P.TYPE_NAMES.get(t.kind, t.kind)} of column {i} contradicts its "
                    f"{st.kind} statistics", **({"column": self._column_name(i)} if i else {}),
                )
        for c in self.columns:
            stats = footer.statistics[c.id] if c.id < len(footer.statistics) else None
            if stats is None or stats.kind != "int" or c.type.kind not in _NARROW_INTEGERS:
                continue
            held = np.iinfo(c.arrow_type.to_pandas_dtype())
            if any(v is not None and not held.min <= v <= held.max for v in (stats.minimum, stats.maximum)):
                # a wider integer type narrowed in the footer: filters bound on the narrow type
                # and its streams read as other values. Top-level columns only: writers leave
                # garbage in the statistics of a union's members (pyorc, ORC's C++ writer)
                raise self._error(
                    CorruptFileError, f"the footer's type {P.TYPE_NAMES.get(c.type.kind, c.type.kind)} of column {c.id} "
                    f"cannot hold its statistics' minimum {stats.minimum} and maximum {stats.maximum}", column=c.name,
                )
        total = sum(s.number_of_rows for s in footer.stripes)
        if footer.stripes and total != footer.number_of_rows:
            raise self._error(CorruptFileError, f"stripes hold {total} rows, the footer says {footer.number_of_rows}")
        for i, s in enumerate(footer.stripes):
            if s.offset + s.index_length + s.data_length + s.footer_length > size:
                raise self._error(CorruptFileError, "stripe runs past the end of the file", stripe=i)

    @property
    def footer_digest(self) -> bytes:
        """A digest (BLAKE2b, 16 bytes) of the file's tail (metadata, footer and postscript) as
        read: the same for every open of one version of the file, so a plan can pin the metadata
        it was made from and a later open compare. Computed when first asked for."""
        if self._footer_digest is None:
            self._footer_digest = hashlib.blake2b(self._tail, digest_size=16).digest()
        return self._footer_digest

    def _decompress(self, data: memoryview | bytes | np.ndarray, base: int = 0) -> Decompressed:
        return decompress_stream(data, self.compression, self.block_size, base)

    # ---- accessors ----------------------------------------------------------------------

    @property
    def num_stripes(self) -> int:
        return len(self.footer.stripes)

    @property
    def num_rows(self) -> int:
        return self.footer.number_of_rows

    @property
    def row_index_stride(self) -> int:
        return self.footer.row_index_stride

    def stripe(self, i: int) -> P.StripeInformation:
        if not 0 <= i < self.num_stripes:
            raise IndexError(f"stripe {i} out of range: the file has {self.num_stripes}")
        return self.footer.stripes[i]

    def column(self, column: int | str) -> OrcColumn:
        """A top-level column by name, or by position among the top-level fields."""
        if isinstance(column, str):
            for c in self.columns:
                if c.name == column:
                    return c
            raise KeyError(f"no column {column!r} in {self.path}; it has: {', '.join(c.name for c in self.columns)}")
        if not 0 <= column < len(self.columns):
            raise IndexError(f"column {column} out of range: the file has {len(self.columns)}")
        return self.columns[column]

    def file_statistics(self, column: int | str) -> P.ColumnStatistics | None:
        c = self.column(column)
        stats = self.footer.statistics
        return stats[c.id] if c.id < len(stats) else None

    def stripe_statistics(self, stripe: int, column: int | str) -> P.ColumnStatistics | None:
        """The column's statistics in one stripe (from the file metadata), if written."""
        c = self.column(column)
        if self._stripe_stats is None:
            raw = self._metadata_bytes
            try:
                self._stripe_stats = P.parse_metadata(self._decompress(raw).data) if raw is not None and len(raw) else []
            except (P.ProtoError, CorruptFileError) as e:
                raise self._error(CorruptFileError, f"corrupt metadata (stripe statistics): {e}") from None
        if stripe >= len(self._stripe_stats):
            return None
        per_column = self._stripe_stats[stripe]
        return per_column[c.id] if c.id < len(per_column) else None

    def _utc_values(self, stripe: int, c: OrcColumn) -> bool:
        """Whether the column's values read as UTC instants (so timestamp statistics apply)."""
        if c.type.kind not in (P.TIMESTAMP, P.TIMESTAMP_INSTANT):
            return True
        return c.type.kind == P.TIMESTAMP_INSTANT or self.stripe_footer(stripe).writer_timezone in _UTC_NAMES

    def statistics(self, stripe: int, column: int | str) -> ColumnStats | None:
        """The column's statistics over a stripe, in the form predicates compare with."""
        c = self.column(column)
        rows = self.stripe(stripe).number_of_rows
        if c.id not in self._stripe_stats_agree:
            every = [self.stripe_statistics(s, c.name) for s in range(self.num_stripes)]
            self._stripe_stats_agree[c.id] = stripes_agree_with_file(self.file_statistics(c.name), every)
        if not self._stripe_stats_agree[c.id]:
            return None  # the stripes' statistics contradict the file's: neither describes the values for sure
        return column_stats(
            self.stripe_statistics(stripe, c.name), c.arrow_type, rows, self._utc_values(stripe, c),
            file_trust(self.postscript, self.footer),
        )

    def row_group_statistics(self, stripe: int, column: int | str) -> list[ColumnStats | None] | None:
        """Per row group (``row_index_stride`` rows) of a stripe, the column's statistics."""
        c = self.column(column)
        if not self._index_fits(stripe):
            return None
        index = self.row_index(stripe, c.name)
        if not index or len(index) != self._row_groups(stripe):
            return None
        rows = self.stripe(stripe).number_of_rows
        stride = self.row_index_stride
        utc = self._utc_values(stripe, c)
        trust = file_trust(self.postscript, self.footer)
        return [
            column_stats(e.statistics, c.arrow_type, min(stride, rows - g * stride), utc, trust) for g, e in enumerate(index)
        ]

    def _read_metadata(self, offset: int, length: int) -> bytes | memoryview:
        """``length`` bytes at ``offset``: from the bytes read with the tail where they lie
        there, else from the source."""
        start, data = self._tail_read
        if start <= offset and offset + length <= start + len(data):
            return memoryview(data)[offset - start : offset - start + length]
        return self.source.read_at(offset, length)

    def stripe_footer(self, stripe: int) -> P.StripeFooter:
        cached = self._stripe_footers.get(stripe)
        if cached is not None:
            return cached
        s = self.stripe(stripe)
        raw = self._read_metadata(s.offset + s.index_length + s.data_length, s.footer_length)
        try:
            sf = P.parse_stripe_footer(self._decompress(raw).data)
        except (P.ProtoError, CorruptFileError) as e:
            raise self._error(CorruptFileError, f"corrupt stripe footer: {e}", stripe=stripe) from None
        if len(sf.columns) < len(self.types):
            raise self._error(CorruptFileError, f"stripe footer has {len(sf.columns)} column encodings for {len(self.types)} types", stripe=stripe)
        if sum(st.length for st in sf.streams) > s.index_length + s.data_length:
            raise self._error(CorruptFileError, "stream lengths exceed the stripe", stripe=stripe)
        problem = _inconsistent_streams(sf, self.types)
        if problem is not None:
            column, reason = problem
            name = self._column_name(column)
            raise self._error(CorruptFileError, f"inconsistent stripe footer: {reason}", stripe=stripe,
                              **({"column": name} if name is not None else {}))
        self._stripe_footers[stripe] = sf
        return sf

    def _column_name(self, column_id: int) -> str | None:
        """The name of ORC column ``column_id``: a top-level column's name, else its id (None
        for the root)."""
        if column_id == 0:
            return None
        for c in self.columns:
            if c.id == column_id:
                return c.name
        return f"ORC column {column_id}"

    def encoding(self, stripe: int, column: int | str) -> P.ColumnEncoding:
        return self.stripe_footer(stripe).columns[self.column(column).id]

    def streams(self, stripe: int, column_id: int) -> dict[int, P.Stream]:
        """The streams of an ORC column id in a stripe, by kind."""
        return {st.kind: st for st in self.stripe_footer(stripe).streams if st.column == column_id}

    def row_index(self, stripe: int, column: int | str) -> list[P.RowIndexEntry] | None:
        """The row index of a column in a stripe (one entry per ``row_index_stride`` rows)."""
        c = self.column(column)
        key = (stripe, c.id)
        if key in self._row_indexes:
            return self._row_indexes[key]
        st = self.streams(stripe, c.id).get(P.ROW_INDEX)
        index = None
        if st is not None:
            raw = self._fetch(stripe, [st], None)[0]
            try:
                index = P.parse_row_index(self._decompress(raw).data)
            except (P.ProtoError, CorruptFileError) as e:
                raise self._error(CorruptFileError, f"corrupt row index: {e}", stripe=stripe, column=c.name) from None
        self._row_indexes[key] = index
        return index

    def bloom_filters(self, stripe: int, column: int | str) -> list[P.BloomFilterEntry] | None:
        """The column's Bloom filters in a stripe (one per row group), UTF-8 kind preferred;
        None when the column has none or only ones of a pre-release layout."""
        c = self.column(column)
        streams = self.streams(stripe, c.id)
        st = streams.get(P.BLOOM_FILTER_UTF8) or streams.get(P.BLOOM_FILTER)
        if st is None or not bloom_filters_trusted(self.postscript, self.footer, c.arrow_type):
            return None
        raw = self._fetch(stripe, [st], None)[0]
        try:
            return P.parse_bloom_filter_index(self._decompress(raw).data, utf8=st.kind == P.BLOOM_FILTER_UTF8)
        except P.UnknownBloomFormat:
            return None  # an optimization only: the rows are still filtered
        except (P.ProtoError, CorruptFileError) as e:
            raise self._error(CorruptFileError, f"corrupt Bloom filter index: {e}", stripe=stripe, column=c.name) from None

    # ---- reading ------------------------------------------------------------------------

    @property
    def read_options(self) -> ReadOptions:
        """How this file's reads coalesce ranges: the options given, else the source's
        policy (:attr:`lazyscan.io.Source.default_read`)."""
        return self._read or self.source.default_read

    @read_options.setter
    def read_options(self, read: ReadOptions | None) -> None:
        self._read = read

    def _fetch(self, stripe: int, streams: list[P.Stream], counters: ReadCounters | None) -> list[memoryview]:
        s = self.stripe(stripe)
        ranges = [(s.offset + st.offset, st.length) for st in streams]
        try:
            return fetch(self.source, ranges, counters if counters is not None else self.counters, self.read_options)
        except ShortReadError as e:
            st = streams[e.index or 0]
            name = P.STREAM_NAMES.get(st.kind, st.kind)
            raise self._error(CorruptFileError, f"the file ends inside stream {name}", stripe=stripe, column=self._column_name(st.column)) from None

    def _row_groups(self, stripe: int) -> int:
        """The row groups of a stripe (entries its row indexes must have); 0 without a stride."""
        stride = self.row_index_stride
        return -(-self.stripe(stripe).number_of_rows // stride) if stride > 0 else 0

    def _index_fits(self, stripe: int) -> bool:
        """Whether the stripe's row indexes may be used at all: the file has a row index stride
        (a stride of 0 beside row indexes would place their entries on other rows)."""
        return self.row_index_stride > 0 and self.stripe(stripe).number_of_rows > 0

    def _seek_positions(self, stripe: int, c: OrcColumn) -> tuple[np.ndarray, dict[int, PositionColumns]] | None:
        """The column's row-index positions in a stripe and where each stream's lie in them,
        when they can be trusted to seek: one entry per row group, as many positions as the
        column's streams take, the first row group at the start of every stream, each stream's
        positions ascending and inside the stream. None otherwise: the stripe is then read
        from the start of its streams, as a full read does (once per stripe and column)."""
        key = ("seek", stripe, c.id)
        if key in self._seekable:
            return self._seekable[key]
        found = None
        try:
            matrix = self.positions(stripe, c.name) if self._index_fits(stripe) else None
            if matrix is not None and matrix.shape[0] == self._row_groups(stripe) and matrix.shape[1] > 0:
                enc = self.stripe_footer(stripe).columns[c.id]
                streams = self.streams(stripe, c.id)
                layout = stream_layout(c.type.kind, enc.kind, P.PRESENT in streams, P.SECONDARY in streams)
                where = position_columns(layout, self.compression != NONE, matrix.shape[1], exact=True)
                # a position's values to skip are values a writer holds back before it writes a
                # run: at most one run's (ORC's writers: 512 for RLE v2, 130 for RLE v1 and bytes)
                v2 = enc.kind in (P.DIRECT_V2, P.DICTIONARY_V2, P.DECIMAL_64) or (
                    c.type.kind == P.DECIMAL and P.SECONDARY not in streams)
                longest = {kind: 512 if v2 and how == RUN and c.type.kind != P.BYTE else 130 for kind, how in layout}
                # a boolean stream's bits to skip are its values before the row group, modulo 8
                # (the seek's checks cannot see a bit missing from the stream's last byte)
                groups = np.arange(matrix.shape[0], dtype=np.int64)
                before: dict[int, np.ndarray | None] = {P.PRESENT: groups * self.row_index_stride}
                if c.type.kind == P.BOOLEAN:
                    before[P.DATA] = groups * self.row_index_stride if P.PRESENT not in streams else self._values_before(stripe, c)
                if _positions_fit(matrix, where, streams, self.compression != NONE, self.block_size, longest, before):
                    found = matrix, where
        except (CorruptFileError, UnsupportedFeatureError):
            found = None  # the whole-stripe read reports what is wrong, with its place
        self._seekable[key] = found
        return found

    def _values_before(self, stripe: int, c: OrcColumn) -> np.ndarray | None:
        """The column's values (not NULL) before each row group of a stripe, from its row
        index's statistics; None when an entry has no value count."""
        index = self.row_index(stripe, c.name) or []
        counts = [e.statistics.number_of_values if e.statistics is not None else None for e in index]
        if not counts or None in counts:
            return None
        return np.concatenate([[0], np.cumsum(np.array(counts[:-1], np.int64))])

    def positions(self, stripe: int, column: int | str) -> np.ndarray | None:
        """The row index's positions of a column in a stripe: one row per row group, one
        column per position (see :mod:`lazyscan.orc.positions`); None without a row index or
        when its entries differ in length."""
        c = self.column(column)
        key = (stripe, c.id)
        if key in self._positions:
            return self._positions[key]
        st = self.streams(stripe, c.id).get(P.ROW_INDEX)
        matrix = None
        if st is not None:
            raw = self._fetch(stripe, [st], None)[0]
            status, offsets, values = K.row_index_positions(self._decompress(raw).data)
            if status < 0:
                raise self._error(CorruptFileError, f"corrupt row index: {K.ERROR_MESSAGES[status]}", stripe=stripe, column=c.name)
            widths = np.diff(offsets)
            if len(widths) and (widths == widths[0]).all():
                matrix = values.reshape(len(widths), int(widths[0]))
        self._positions[key] = matrix
        return matrix

    def read_column(
        self,
        stripe: int,
        column: int | str,
        rows: RowRanges | np.ndarray | Sequence[int] | None = None,
        counters: ReadCounters | None = None,
        cache: dict | None = None,
    ) -> pa.Array:
        """Read a column of a stripe: all rows, or the rows selected by ``rows`` (a sorted array
        of distinct row indices within the stripe, or a :class:`RowRanges`). Values equal
        pyarrow's for the same rows, nulls included. ``cache``: a dict kept across the reads of
        one stripe (decoded dictionaries)."""
        c = self.column(column)
        n = self.stripe(stripe).number_of_rows
        selection = _as_selection(rows, n)
        if not c.flat:
            arr = self._read_nested(stripe, c)
            return arr.take(pa.array(selection.to_indices())) if selection is not None else arr
        try:
            if selection is not None:
                spans = self._spans(stripe, c, selection)
                if spans is not None:
                    try:
                        return self._read_spans(stripe, c, selection, spans, counters, cache)
                    except CorruptFileError:
                        pass  # the whole stripe decides: a corrupt one fails there, with its place
            arr = self._read_flat(stripe, c, counters, cache)
        except FileError as e:
            raise e.at(file=self.path, stripe=stripe, column=c.name) from None
        if selection is not None:
            arr = arr.take(pa.array(selection.to_indices()))
        return arr

    # ---- selective reads ------------------------------------------------------------------

    def _spans(self, stripe: int, c: OrcColumn, selection: RowRanges) -> tuple[np.ndarray, np.ndarray] | None:
        """The first and last row group of each run of row groups holding selected rows; None
        when the whole stripe is the better read (no usable row index, or most of its rows
        selected)."""
        stride = self.row_index_stride
        n = self.stripe(stripe).number_of_rows
        if stride <= 0 or selection.is_empty:
            return None
        if self._seek_positions(stripe, c) is None:
            return None  # no positions (some writers leave them out), or ones that cannot be trusted
        first = selection.starts // stride
        last = (selection.ends - 1) // stride
        # row groups covered by the selected ranges, as runs: ranges ascend and do not overlap
        keep = np.ones(len(first), bool)
        keep[1:] = first[1:] > last[:-1] + 1
        starts = first[keep]
        ends = np.maximum.accumulate(last)[np.append(np.flatnonzero(keep)[1:] - 1, len(last) - 1)]
        if int((ends - starts + 1).sum()) * stride > SEEK_MAX_SHARE * n:
            return None
        return starts.astype(np.int64), ends.astype(np.int64)

    def _read_spans(
        self, stripe: int, c: OrcColumn, selection: RowRanges, spans: tuple[np.ndarray, np.ndarray],
        counters: ReadCounters | None, cache: dict | None,
    ) -> pa.Array:
        """The selected rows, decoding only the row groups of ``spans``, all spans of a stream
        in one kernel call."""
        g0, g1 = spans
        stride = self.row_index_stride
        n = self.stripe(stripe).number_of_rows
        enc = self.stripe_footer(stripe).columns[c.id]
        streams = self.streams(stripe, c.id)
        seek = self._seek_positions(stripe, c)
        assert seek is not None
        matrix, where = seek
        entries = matrix.shape[0]
        compressed = self.compression != NONE
        if compressed:
            slop = (2 + (_MAX_RUN_BYTES - 1) // self.block_size) * (3 + self.block_size)
        else:
            slop = _MAX_RUN_BYTES
        has_next = g1 + 1 < entries
        after = np.minimum(g1 + 1, entries - 1)
        varints = c.type.kind == P.DECIMAL and P.DATA in where and where[P.DATA].skip < 0
        # per stream, the byte range each span needs; ranges that overlap (spans sharing a
        # compression chunk) merge, so a chunk is fetched and decompressed once; decompression
        # stops at the chunk where the next row group starts (one more if its run began earlier)
        pieces: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        ranges: list[P.Stream] = []
        for kind, col in where.items():
            st = streams.get(kind)
            if st is None:
                raise CorruptFileError(f"the {P.STREAM_NAMES[kind]} stream is missing")
            start = matrix[g0, col.chunk]
            if not compressed and kind == P.DATA and varints:
                # the byte before a decimal's position too: a value ends there (checked on decoding)
                start = np.maximum(start - 1, 0)
            nxt = matrix[after, col.chunk]
            end = np.where(has_next, np.minimum(st.length, nxt + slop), st.length)
            if (start < 0).any() or (start > end).any():
                raise CorruptFileError(f"row index position lies outside the {P.STREAM_NAMES[kind]} stream")
            begun = np.zeros(len(g0), bool)
            for extra in (col.skip, col.bits):
                if extra >= 0:
                    begun |= matrix[after, extra] != 0
            stop = np.where(has_next, nxt * 2 + begun, st.length * 2)
            reach = np.maximum.accumulate(end)
            fresh = np.ones(len(start), bool)
            fresh[1:] = start[1:] > reach[:-1]
            heads = np.flatnonzero(fresh)
            tails = np.append(heads[1:] - 1, len(start) - 1)
            p_start, p_end = start[heads], reach[tails]
            p_stop = np.maximum.reduceat(stop, heads)
            pieces[kind] = (p_start, p_end, p_stop, np.arange(len(ranges), len(ranges) + len(heads)))
            ranges.extend(P.Stream(kind, c.id, int(b - a), st.offset + int(a)) for a, b in zip(p_start, p_end))
        dictionary = None
        if enc.kind in (P.DICTIONARY, P.DICTIONARY_V2) and c.type.kind in _STRING_KINDS:
            dictionary = self._dictionary(stripe, c, counters, cache)
        whole = [k for k in (P.LENGTH, P.DICTIONARY_DATA) if k in streams and k not in where and dictionary is None]
        whole_at = len(ranges)
        ranges.extend(streams[k] for k in whole)
        views = self._fetch(stripe, ranges, counters)
        cnt = counters if counters is not None else self.counters
        t0 = time.perf_counter()
        data = {k: self._decompress(views[whole_at + i]).data for i, k in enumerate(whole)}
        starts: dict[int, Resume] = {}
        for kind, col in where.items():
            p_start, p_end, p_stop, at = pieces[kind]
            parts = [
                decompress_stream(views[i], self.compression, self.block_size, int(a), partial=True,
                                  stop_at=int(s) >> 1, extra=int(s) & 1)
                for a, s, i in zip(p_start.tolist(), p_stop.tolist(), at.tolist())
            ]
            data[kind], starts[kind] = _resume(parts, matrix[g0], matrix[after], has_next, col, p_start, compressed)
        cnt.decompress_seconds += time.perf_counter() - t0
        cnt.bytes_decompressed += sum(len(data[k]) for k in where)
        t0 = time.perf_counter()
        # each span is decoded from its first row to its last selected row; past it, the runs
        # of every stream are walked over (headers only) to the end of the span's last row
        # group, where they must arrive at the next row group's position or the stream's end:
        # a wrong position or a damaged run shows there, and the stripe is then read whole
        rows = selection.to_indices()
        first_rows = g0 * stride
        span = np.searchsorted(first_rows, rows, side="right") - 1
        span_rows = np.zeros(len(g0), np.int64)
        np.maximum.at(span_rows, span, rows - first_rows[span] + 1)
        full_rows = np.minimum((g1 + 1) * stride, n) - first_rows
        present = None
        counts, full_counts = span_rows, full_rows
        base = np.cumsum(span_rows) - span_rows
        keep = rows - first_rows[span] + base[span]  # the selected rows among those decoded
        if P.PRESENT in starts:
            # the bits of whole spans: the values each span's other streams hold
            full_base = np.cumsum(full_rows) - full_rows
            bits = _boolean_values(data[P.PRESENT], starts[P.PRESENT], full_rows)
            ones = np.concatenate([[0], np.cumsum(bits, dtype=np.int64)])
            counts = ones[full_base + span_rows] - ones[full_base]
            full_counts = ones[full_base + full_rows] - ones[full_base]
            local = rows - first_rows[span] + full_base[span]
            present = bits[local]
            before = ones[local] - ones[full_base[span]] + (np.cumsum(counts) - counts)[span]
            keep = before[present]
        decoder = _ColumnDecoder(c, enc, data, counts, self.stripe_footer(stripe).writer_timezone, starts, dictionary,
                                 full_counts)
        try:
            arr = decoder.decode(keep)
        except _BadValue as e:
            raise e.at_row(int((rows if present is None else rows[present])[e.index])) from None
        cnt.values_decoded += decoder.count
        out = _with_nulls(arr, present, len(rows))
        cnt.decode_seconds += time.perf_counter() - t0
        return out

    def _dictionary(
        self, stripe: int, c: OrcColumn, counters: ReadCounters | None, cache: dict | None
    ) -> tuple[np.ndarray, np.ndarray, pa.Array]:
        """A dictionary-encoded string column's entries in a stripe: (entry offsets, entry
        bytes, the entries as a large Arrow array), decoded once per ``cache``."""
        key = ("dictionary", stripe, c.id)
        if cache is not None and key in cache:
            return cache[key]  # type: ignore[no-any-return]
        enc = self.stripe_footer(stripe).columns[c.id]
        streams = self.streams(stripe, c.id)
        wanted = [streams[k] for k in (P.LENGTH, P.DICTIONARY_DATA) if k in streams]
        raw = dict(zip([st.kind for st in wanted], self._fetch(stripe, wanted, counters)))
        data = {kind: self._decompress(view).data for kind, view in raw.items()}
        entries = _ColumnDecoder(c, enc, data, np.zeros(1, np.int64), "").dictionary_entries()
        if cache is not None:
            cache[key] = entries
        return entries

    def read_dictionary(
        self, stripe: int, column: int | str, counters: ReadCounters | None = None, cache: dict | None = None
    ) -> pa.Array | None:
        """The stripe's dictionary of a dictionary-encoded string column (entries in the
        column's Arrow type), or None when the column is not dictionary encoded there."""
        c = self.column(column)
        if c.type.kind not in _STRING_KINDS:
            return None
        enc = self.stripe_footer(stripe).columns[c.id]
        if enc.kind not in (P.DICTIONARY, P.DICTIONARY_V2):
            return None
        try:
            arr = self._dictionary(stripe, c, counters, cache)[2]
        except FileError as e:
            raise e.at(file=self.path, stripe=stripe, column=c.name) from None
        return arr.cast(c.arrow_type)

    def read_stripe(self, stripe: int, columns: Sequence[int | str] | None = None) -> pa.Table:
        cols = [self.column(c) for c in columns] if columns is not None else self.columns
        return pa.table({c.name: self.read_column(stripe, c.name) for c in cols})

    def _read_nested(self, stripe: int, c: OrcColumn) -> pa.Array:
        import pyarrow.orc as porc

        # a local file by its path (pyarrow's own reads); else the source this file opened, whose
        # reads are retried and counted as lazyscan's and serve the tail from what it fetched
        reader = None if isinstance(self.source, LocalSource) else SourceFile(self.source)
        try:
            batch = porc.ORCFile(self.path if reader is None else pa.PythonFile(reader, mode="r")).read_stripe(
                stripe, columns=[c.name]
            )
        except (pa.ArrowException, OSError) as e:
            if reader is not None and reader.error is not None:
                # the store's answer (denied, gone, still failing after retries), not the file's fault
                error = reader.error
                raise (error.at(stripe=stripe, column=c.name) if isinstance(error, FileError) else error) from None
            if "out of range for nanosecond" in str(e):
                raise self._error(
                    UnsupportedFeatureError,
                    "nested column holds a timestamp outside 1677-09-21 to 2262-04-11, the years the ORC reader "
                    f"of nested columns (pyarrow's, in nanoseconds) holds: {e}",
                    stripe=stripe, column=c.name,
                ) from None
            raise self._error(CorruptFileError, f"nested column cannot be read: {e}", stripe=stripe, column=c.name) from None
        col = batch.column(0)
        arr = _with_timestamp_unit(col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col, c.arrow_type)
        if not arr.type.equals(c.arrow_type, check_metadata=True):
            # pyarrow's arrays lack some field metadata its schema has (map keys' and values'
            # type attributes: Iceberg's field ids); the same layout under the file's type
            with contextlib.suppress(pa.ArrowException):
                arr = arr.view(c.arrow_type)
        return arr

    def _read_flat(self, stripe: int, c: OrcColumn, counters: ReadCounters | None, cache: dict | None) -> pa.Array:
        n = self.stripe(stripe).number_of_rows
        enc = self.stripe_footer(stripe).columns[c.id]
        streams = self.streams(stripe, c.id)
        dictionary = None
        if enc.kind in (P.DICTIONARY, P.DICTIONARY_V2) and c.type.kind in _STRING_KINDS:
            dictionary = self._dictionary(stripe, c, counters, cache)
        kinds = (P.PRESENT, P.DATA, P.SECONDARY) if dictionary is not None else (P.PRESENT, P.DATA, P.LENGTH, P.DICTIONARY_DATA, P.SECONDARY)
        wanted = [st for kind, st in streams.items() if kind in kinds]
        raw = dict(zip([st.kind for st in wanted], self._fetch(stripe, wanted, counters)))
        cnt = counters if counters is not None else self.counters
        t0 = time.perf_counter()
        data = {kind: self._decompress(view).data for kind, view in raw.items()}
        cnt.decompress_seconds += time.perf_counter() - t0
        cnt.bytes_decompressed += sum(len(d) for d in data.values())
        t0 = time.perf_counter()
        present = None
        if P.PRESENT in data:
            present = _boolean_values(data[P.PRESENT], Resume.whole(len(data[P.PRESENT])), np.array([n], np.int64))
        count = int(present.sum()) if present is not None else n
        decoder = _ColumnDecoder(c, enc, data, np.array([count], np.int64), self.stripe_footer(stripe).writer_timezone, None, dictionary)
        try:
            arr = decoder.decode()
        except _BadValue as e:
            raise e.at_row(e.index if present is None else int(np.flatnonzero(present)[e.index])) from None
        cnt.values_decoded += count
        out = _with_nulls(arr, present, n)
        cnt.decode_seconds += time.perf_counter() - t0
        return out

    def close(self) -> None:
        self.source.close()

    def __enter__(self) -> OrcFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_STRING_KINDS = (P.STRING, P.VARCHAR, P.CHAR, P.BINARY)
#: ORC's integer types narrower than the 64 bits their statistics hold
_NARROW_INTEGERS = (P.BYTE, P.SHORT, P.INT)
#: the kinds of statistics (:class:`lazyscan.orc.proto.ColumnStatistics`) each ORC type is written with
_STATISTICS_KINDS = {
    P.BOOLEAN: ("boolean",), P.BYTE: ("int",), P.SHORT: ("int",), P.INT: ("int",), P.LONG: ("int",),
    P.FLOAT: ("double",), P.DOUBLE: ("double",), P.STRING: ("string",), P.VARCHAR: ("string",), P.CHAR: ("string",),
    P.BINARY: ("binary", "string"), P.DECIMAL: ("decimal",), P.DATE: ("date",),
    P.TIMESTAMP: ("timestamp", "timestamp-local"), P.TIMESTAMP_INSTANT: ("timestamp", "timestamp-local"),
    P.LIST: (), P.MAP: (), P.STRUCT: (), P.UNION: (),
}
_DICTIONARY_ENCODINGS = (P.DICTIONARY, P.DICTIONARY_V2)
#: streams any column may have
_ANY_COLUMN = frozenset((P.PRESENT, P.ROW_INDEX, P.BLOOM_FILTER, P.BLOOM_FILTER_UTF8))
#: types whose values have one encoding, DIRECT (no RLE version: bytes and booleans in byte
#: runs, IEEE floats); ORC's Java reader refuses any other (TreeReader.checkEncoding). A byte
#: column in DIRECT_V2 is an integer column relabelled in the footer: its RLEv2 runs would read
#: as byte runs.
_DIRECT_ONLY = frozenset((P.BOOLEAN, P.BYTE, P.FLOAT, P.DOUBLE))
#: the stream kinds whose meaning the checks below know (newer kinds are left alone)
_KNOWN_STREAMS = frozenset(range(P.BLOOM_FILTER_UTF8 + 1))


def _allowed_streams(kind: int, encoding: int) -> frozenset[int] | None:
    """The stream kinds a column of ORC type ``kind`` in ``encoding`` may have (ORC
    specification, "Column Encodings"); None when the encoding is not one of the type's."""
    if kind in _STRING_KINDS:
        if encoding in _DICTIONARY_ENCODINGS:
            return _ANY_COLUMN | {P.DATA, P.LENGTH, P.DICTIONARY_DATA, P.DICTIONARY_COUNT}
        return _ANY_COLUMN | {P.DATA, P.LENGTH} if encoding in (P.DIRECT, P.DIRECT_V2) else None
    if kind == P.DECIMAL:
        if encoding == P.DECIMAL_64:
            return _ANY_COLUMN | {P.DATA}
        return _ANY_COLUMN | {P.DATA, P.SECONDARY} if encoding in (P.DIRECT, P.DIRECT_V2) else None
    if encoding not in (P.DIRECT, P.DIRECT_V2) or (kind in _DIRECT_ONLY and encoding != P.DIRECT):
        return None
    if kind in (P.TIMESTAMP, P.TIMESTAMP_INSTANT):
        return _ANY_COLUMN | {P.DATA, P.SECONDARY}
    if kind in (P.LIST, P.MAP):
        return _ANY_COLUMN | {P.LENGTH}
    if kind == P.STRUCT:
        return _ANY_COLUMN
    return _ANY_COLUMN | {P.DATA}


def _inconsistent_streams(sf: P.StripeFooter, types: list[P.OrcType]) -> tuple[int, str] | None:
    """(column id, what is wrong) where a stripe's streams and encodings contradict the file's
    types: a stream of a column the file does not have, two streams of one kind for a column,
    an encoding the column's type has not, or a stream its type and encoding never have (a
    stream relabelled to another column or kind would be read as other values); else None.
    Streams of kinds newer than this reader, and encodings it does not know, are left to the
    column's read."""
    seen: set[tuple[int, int]] = set()
    for st in sf.streams:
        if st.kind not in _KNOWN_STREAMS:
            continue
        what = P.STREAM_NAMES.get(st.kind, str(st.kind))
        if st.column >= len(types):
            return st.column, f"a {what} stream of column {st.column}, the file has {len(types)} columns"
        if (st.column, st.kind) in seen:
            return st.column, f"two {what} streams for one column"
        seen.add((st.column, st.kind))
    for column, (t, enc) in enumerate(zip(types, sf.columns)):
        if enc.kind not in P.ENCODING_NAMES:
            continue
        allowed = _allowed_streams(t.kind, enc.kind)
        type_name = P.TYPE_NAMES.get(t.kind, str(t.kind))
        if allowed is None:
            return column, f"encoding {P.ENCODING_NAMES[enc.kind]} for a {type_name} column"
    for column, kind in seen:
        enc = sf.columns[column]
        if enc.kind not in P.ENCODING_NAMES:
            continue
        allowed = _allowed_streams(types[column].kind, enc.kind)
        if allowed is not None and kind not in allowed:
            return column, (f"a {P.STREAM_NAMES[kind]} stream for a {P.TYPE_NAMES.get(types[column].kind, types[column].kind)} "
                            f"column in {P.ENCODING_NAMES[enc.kind]} encoding")
    return None


def _positions_fit(
    matrix: np.ndarray, where: dict[int, PositionColumns], streams: dict[int, P.Stream], compressed: bool, block_size: int,
    longest: dict[int, int], before: dict[int, np.ndarray | None],
) -> bool:
    """Whether row-index positions (one row per row group) can be used to seek: every stream
    starts at the first row group, each stream's positions lie inside it (a compression chunk
    starting inside the stream, an offset within the chunk's decompressed bytes, values to
    skip within ``longest[kind]``, bits to skip the values ``before[kind]`` each row group
    leave in their last byte) and do not go back from one row group to the next."""
    if (matrix < 0).any() or (matrix[0] != 0).any():
        return False
    for kind, col in where.items():
        st = streams.get(kind)
        if st is None:
            return False
        chunk = matrix[:, col.chunk]
        at_end = chunk == st.length  # a row group without values in this stream, at its end
        if (chunk > st.length).any():
            return False
        if compressed:
            within = matrix[:, col.within]
            if (within > block_size).any() or (within[at_end] != 0).any():
                return False
        if col.bits >= 0:
            values = before.get(kind)
            if values is None or (matrix[:, col.bits] != values % 8).any():
                return False
        if col.skip >= 0 and (matrix[:, col.skip] > longest[kind]).any():
            return False
        used = [i for i in (col.chunk, col.within, col.skip, col.bits) if i >= 0]
        step = np.diff(matrix[:, used], axis=0)
        if len(step):
            first = np.argmax(step != 0, axis=1)  # the first position that changes decides the order
            if (step[np.arange(len(step)), first] < 0).any():
                return False
    return True


def _resume(
    parts: list[Decompressed], entries: np.ndarray, nexts: np.ndarray, has_next: np.ndarray, col: PositionColumns,
    piece_starts: np.ndarray, compressed: bool,
) -> tuple[np.ndarray, Resume]:
    """The decompressed pieces of a stream as one buffer, where each span starts in it
    (``entries``: the row-index entry of each span's first row group) and where its values
    must end: at the entry of the row group after it (``nexts``, where ``has_next``), else at
    the end of the stream (the end of the span's piece, read to the stream's end). The
    positions were checked once per stripe (:func:`_positions_fit`)."""
    sizes = np.array([len(p.data) for p in parts], np.int64)
    bases = np.concatenate([[0], np.cumsum(sizes)])
    buf = parts[0].data if len(parts) == 1 else np.concatenate([p.data for p in parts])
    chunk = entries[:, col.chunk]
    piece = np.searchsorted(piece_starts, chunk, side="right") - 1
    if (piece < 0).any():
        raise CorruptFileError("row index position lies before the bytes read")
    end = bases[piece + 1]
    spans = len(chunk)
    # the start of each span and of the row group after it, in one pass
    at = np.concatenate([chunk, np.where(has_next, nexts[:, col.chunk], chunk)])
    in_piece = np.concatenate([piece, piece])
    if compressed:
        within = np.concatenate([entries[:, col.within], np.where(has_next, nexts[:, col.within], 0)])
        offsets = np.concatenate([p.chunk_offsets for p in parts])
        landed = np.concatenate([p.data_offsets + b for p, b in zip(parts, bases[:-1].tolist())])
        if len(offsets):
            piece_of_chunk = np.repeat(np.arange(len(parts)), [len(p.chunk_offsets) for p in parts])
            i = np.minimum(np.searchsorted(offsets, at), len(offsets) - 1)
            found = (offsets[i] == at) & (piece_of_chunk[i] == in_piece)
            chunk_end = np.append(landed[1:], bases[-1])  # a piece's last chunk ends where the next piece begins
            if (found & (within > chunk_end[i] - landed[i])).any():
                raise CorruptFileError("row index position lies beyond its compression chunk")
            located = landed[i] + within
        else:
            found = np.zeros(len(at), bool)
            located = np.zeros(len(at), np.int64)
        # a position just past the last chunk read (with nothing inside it) is the piece's end
        if not (found | (within == 0)).all():
            raise CorruptFileError("row index position is not the start of a compression chunk")
        located = np.where(found, located, bases[in_piece + 1])
    else:
        located = at - piece_starts[in_piece] + bases[in_piece]
    pos, next_pos = located[:spans], np.where(has_next, located[spans:], end)
    if (pos > end).any() or (next_pos > end).any() or (next_pos < pos).any():
        raise CorruptFileError("row index position lies beyond the bytes read")
    zeros = np.zeros(spans, np.int64)
    # contiguous copies: a column of the entries is a strided view, one more kernel signature
    skip = np.ascontiguousarray(entries[:, col.skip]) if col.skip >= 0 else zeros
    bits = np.ascontiguousarray(entries[:, col.bits]) if col.bits >= 0 else zeros
    next_skip = np.where(has_next, nexts[:, col.skip], 0) if col.skip >= 0 else zeros
    next_bits = np.where(has_next, nexts[:, col.bits], -1) if col.bits >= 0 else zeros
    return buf, Resume(pos, end, skip, bits, next_pos, next_skip, next_bits, bases[piece])


def _as_selection(rows: RowRanges | np.ndarray | Sequence[int] | None, n: int) -> RowRanges | None:
    if rows is None:
        return None
    sel = rows if isinstance(rows, RowRanges) else RowRanges.from_indices(np.asarray(rows, dtype=np.int64))
    if not sel.is_empty and (sel.starts[0] < 0 or sel.ends[-1] > n):
        raise IndexError(f"row selection outside the stripe's {n} rows")
    return sel


def _check(result: int, what: str) -> int:
    if result < 0:
        raise CorruptFileError(f"{what}: {K.ERROR_MESSAGES.get(result, 'corrupt data')}")
    return result


def _boolean_values(buf: np.ndarray, at: Resume, counts: np.ndarray, full_counts: np.ndarray | None = None) -> np.ndarray:
    """A boolean stream (bits MSB first over byte RLE): ``counts[i]`` values from span ``i``,
    which holds ``full_counts[i]`` (default: ``counts``)."""
    out = np.empty(int(counts.sum()), np.bool_)
    check_k, check_pos = at.bit_checks(counts if full_counts is None else full_counts)
    _check(K.boolean_spans(buf, at.pos, at.end, at.skip, at.bits, counts, out.view(np.uint8), check_k, check_pos), "boolean stream")
    return out


def _byte_values(t: pa.DataType, n: int, offsets: np.ndarray, data: np.ndarray, what: str | None) -> pa.Array:
    """``n`` byte strings in Arrow's large layout for column type ``t``; with ``what``, string
    values are checked as UTF-8 (a failure names ``what``)."""
    large = pa.large_binary() if pa.types.is_binary(t) else pa.large_string()
    arr = pa.Array.from_buffers(large, n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    if what is not None and pa.types.is_string(t):
        try:
            arr.validate(full=True)
        except pa.ArrowInvalid:
            raise CorruptFileError(f"{what} are not valid UTF-8") from None
    return arr


def _with_nulls(arr: pa.Array, present: np.ndarray | None, n: int) -> pa.Array:
    """Spread the non-null values of ``arr`` over the rows where ``present``."""
    if present is None or len(arr) == n:
        return arr
    positions = np.cumsum(present, dtype=np.int64) - 1
    positions[~present] = 0
    if len(arr) == 0:
        return pa.nulls(n, arr.type)
    return arr.take(pa.array(positions, mask=~present))


class _ColumnDecoder:
    """Decodes the non-null values of one flat column of a stripe from its streams: the whole
    stripe, or spans of row groups (``counts[i]`` values from span ``i``, which holds
    ``full_counts[i]``: the values after them are checked, not decoded; ``starts``: where each
    positioned stream resumes for each span)."""

    def __init__(
        self, c: OrcColumn, enc: P.ColumnEncoding, data: dict[int, np.ndarray], counts: np.ndarray, writer_tz: str,
        starts: dict[int, Resume] | None = None, dictionary: tuple[np.ndarray, np.ndarray, pa.Array] | None = None,
        full_counts: np.ndarray | None = None,
    ) -> None:
        self.c = c
        self.enc = enc
        self.data = data
        self.counts = counts
        self.full_counts = counts if full_counts is None else full_counts
        self.count = int(counts.sum())
        self.writer_tz = writer_tz
        self.starts = starts or {}
        self.dictionary = dictionary
        self.v2 = enc.kind in (P.DIRECT_V2, P.DICTIONARY_V2)
        #: which of the decoded values to return (sorted positions), None: all of them
        self.keep: np.ndarray | None = None
        self.out_count = self.count

    def stream(self, kind: int) -> np.ndarray:
        s = self.data.get(kind)
        if s is None:
            if self.count == 0:
                return np.empty(0, np.uint8)
            raise CorruptFileError(f"the {P.STREAM_NAMES.get(kind, kind)} stream is missing")
        return s

    def at(self, kind: int, buf: np.ndarray) -> Resume:
        r = self.starts.get(kind)
        if r is None:
            if len(self.counts) != 1:
                raise CorruptFileError(f"no row-index position for the {P.STREAM_NAMES.get(kind, kind)} stream")
            return Resume.whole(len(buf))
        return r

    def ints(self, kind: int, signed: bool, counts: np.ndarray | None = None, whole_spans: bool = False) -> np.ndarray:
        """The stream's integers: ``counts`` from its start, or the spans' values (all of each
        span's with ``whole_spans``)."""
        spans = counts is None
        if spans:
            counts = self.full_counts if whole_spans else self.counts
        assert counts is not None
        total = int(counts.sum())
        out = np.empty(total, np.int64)
        if total:
            buf = self.stream(kind)
            r = self.at(kind, buf) if spans else Resume.whole(len(buf))
            check_k, check_pos = r.run_checks(self.full_counts if spans else counts)
            _check(K.int_rle_spans(self.v2, buf, r.pos, r.end, r.skip, counts, signed, out, check_k, check_pos),
                   f"{P.STREAM_NAMES[kind]} stream")
        return out

    def kept(self, values: np.ndarray) -> np.ndarray:
        return values if self.keep is None else values[self.keep]

    def decode(self, keep: np.ndarray | None = None) -> pa.Array:
        """The decoded values, or only those at positions ``keep`` (each kind of value is
        converted after the selection where it can be)."""
        self.keep = keep
        self.out_count = self.count if keep is None else len(keep)
        k = self.c.type.kind
        t = self.c.arrow_type
        if k == P.BOOLEAN:
            buf = self.stream(P.DATA)
            return pa.array(self.kept(_boolean_values(buf, self.at(P.DATA, buf), self.counts, self.full_counts)), pa.bool_())
        if k == P.BYTE:
            out = np.empty(self.count, np.uint8)
            if self.count:
                buf = self.stream(P.DATA)
                r = self.at(P.DATA, buf)
                check_k, check_pos = r.run_checks(self.full_counts)
                _check(K.byte_rle_spans(buf, r.pos, r.end, r.skip, self.counts, out, check_k, check_pos), "DATA stream")
            return pa.array(self.kept(out).view(np.int8), pa.int8())
        if k in (P.SHORT, P.INT, P.LONG):
            vals = self.kept(self.ints(P.DATA, True))
            if k != P.LONG:
                _check_width(vals, t.to_pandas_dtype(), CorruptFileError, f"{P.TYPE_NAMES.get(k, k)} value")
            return pa.array(vals.astype(t.to_pandas_dtype(), copy=False), t)
        if k == P.DATE:
            days = self.kept(self.ints(P.DATA, True))
            _check_width(days, np.int32, UnsupportedFeatureError, "date (days since 1970-01-01)", "date32")
            return pa.array(days.astype(np.int32), pa.int32()).view(pa.date32())
        if k in (P.FLOAT, P.DOUBLE):
            return self.floats(4 if k == P.FLOAT else 8)
        if k in _STRING_KINDS:
            return self.strings()
        if k == P.DECIMAL:
            return self.decimals()
        if k in (P.TIMESTAMP, P.TIMESTAMP_INSTANT):
            return self.timestamps()
        raise UnsupportedFeatureError(f"ORC type {P.TYPE_NAMES.get(k, k)} is not supported")

    def floats(self, width: int) -> pa.Array:
        buf = self.stream(P.DATA)
        r = self.at(P.DATA, buf)
        need = self.full_counts * width
        if (r.pos + need > r.end).any():
            raise CorruptFileError(f"DATA stream holds fewer than the {int(self.full_counts.sum())} values expected")
        if (r.pos + need != r.next_pos)[self.full_counts > 0].any():
            raise CorruptFileError(f"DATA stream holds more than the {self.count} values expected, or the row index misplaces them")
        if len(need) == 1 and self.keep is None:
            raw = buf[int(r.pos[0]) : int(r.pos[0]) + self.count * width]
        else:
            # values are fixed width: the kept ones are picked straight from the bytes
            wanted = np.arange(self.count, dtype=np.int64) if self.keep is None else self.keep
            bounds = np.concatenate([[0], np.cumsum(self.counts)])
            span = np.searchsorted(bounds, wanted, side="right") - 1
            at = r.pos[span] + (wanted - bounds[span]) * width
            raw = buf[at[:, None] + np.arange(width)]
        return pa.array(np.frombuffer(raw.tobytes(), "<f4" if width == 4 else "<f8"), self.c.arrow_type)

    def strings(self) -> pa.Array:
        n = self.count
        m = self.out_count
        t = self.c.arrow_type
        if self.enc.kind in (P.DIRECT, P.DIRECT_V2):
            # the lengths of whole spans: where each span's bytes end is checked
            lengths = self.ints(P.LENGTH, False, whole_spans=True)
            offsets = np.empty(len(lengths) + 1, np.int64)
            total = _check(K.string_offsets(lengths, offsets), "LENGTH stream")
            data = self.stream(P.DATA)
            r = self.at(P.DATA, data) if len(lengths) else Resume.whole(0)
            # each span's values lie back to back from where the span starts
            full_bounds = np.concatenate([[0], np.cumsum(self.full_counts)])
            span_bytes = offsets[full_bounds[1:]] - offsets[full_bounds[:-1]]
            if (r.pos + span_bytes > r.end).any():
                raise CorruptFileError(f"string lengths add up to more bytes than the DATA stream holds ({len(data)})")
            if (r.pos + span_bytes != r.next_pos)[self.full_counts > 0].any():
                raise CorruptFileError("string lengths add up to fewer bytes than the DATA stream holds, or the row index misplaces them")
            if len(self.counts) == 1 and self.keep is None and n == len(lengths):
                start = int(r.pos[0])
                arr = _byte_values(t, n, offsets, data[start : start + total], "string values")
            else:
                bounds = np.concatenate([[0], np.cumsum(self.counts)])
                wanted = np.arange(n, dtype=np.int64) if self.keep is None else self.keep
                span = np.searchsorted(bounds, wanted, side="right") - 1
                at = wanted - bounds[span] + full_bounds[span]  # among the lengths of whole spans
                starts = offsets[at] - offsets[full_bounds[span]] + r.pos[span]
                sizes = lengths[at]
                out_offsets = np.empty(m + 1, np.int64)
                out_data = np.empty(int(sizes.sum()), np.uint8)
                _check(K.gather_ranges(data, starts, sizes, out_offsets, out_data), "string values")
                arr = _byte_values(t, m, out_offsets, out_data, "string values")
        elif self.enc.kind in (P.DICTIONARY, P.DICTIONARY_V2):
            codes = self.kept(self.ints(P.DATA, False))
            # entries are checked once per stripe, not once per row
            entry_offsets, blob, _ = self.dictionary if self.dictionary is not None else self.dictionary_entries()
            out_size = K.dictionary_size(entry_offsets, codes)
            if out_size < 0:
                raise CorruptFileError(f"a dictionary code is outside the dictionary of {self.enc.dictionary_size} entries")
            out_offsets = np.empty(m + 1, np.int64)
            out_data = np.empty(out_size, np.uint8)
            _check(K.gather_strings(blob, entry_offsets, codes, out_offsets, out_data), "dictionary codes")
            arr = _byte_values(t, m, out_offsets, out_data, None)
        else:
            raise UnsupportedFeatureError(f"string encoding {P.ENCODING_NAMES.get(self.enc.kind, self.enc.kind)}")
        return arr.cast(t)

    def dictionary_entries(self) -> tuple[np.ndarray, np.ndarray, pa.Array]:
        """The stripe's dictionary: (entry offsets, entry bytes, the entries as a large Arrow
        array, checked as UTF-8 for strings)."""
        size = self.enc.dictionary_size
        lengths = self.ints(P.LENGTH, False, np.array([size], np.int64))
        offsets = np.empty(size + 1, np.int64)
        total = _check(K.string_offsets(lengths, offsets), "dictionary LENGTH stream")
        blob = self.data.get(P.DICTIONARY_DATA, np.empty(0, np.uint8))
        if total != len(blob):  # as ORC's readers require: other lengths would misplace every entry
            raise CorruptFileError(f"dictionary lengths add up to {total} bytes, DICTIONARY_DATA holds {len(blob)}")
        return offsets, blob, _byte_values(self.c.arrow_type, size, offsets, blob[:total], "dictionary entries")

    def decimals(self) -> pa.Array:
        n = self.count
        t = self.c.arrow_type
        if self.enc.kind == P.DECIMAL_64 or (P.SECONDARY not in self.data and t.precision <= 18 and n):
            # DECIMAL_64, or the pre-2.0 format's decimal64: integers at the type's scale, RLE v2
            self.v2 = True
            lo = self.kept(self.ints(P.DATA, True))
            _check_width(lo, None, CorruptFileError, "decimal value (unscaled)", str(t), 10**t.precision)
            hi = np.where(lo < 0, -1, 0).astype(np.int64)
        else:
            lo = np.empty(n, np.int64)
            hi = np.empty(n, np.int64)
            if n:
                buf = self.stream(P.DATA)
                r = self.at(P.DATA, buf)
                inside = r.pos > r.begin  # the byte before a value's first byte ends the value before it
                if (buf[r.pos[inside] - 1] >= 128).any():
                    raise CorruptFileError("a row-index position of the decimal DATA stream lies inside a value")
                _check(K.varint128_spans(buf, r.pos, r.end, self.counts, lo, hi, r.next_pos, self.full_counts), "decimal DATA stream")
            scales = self.kept(self.ints(P.SECONDARY, True))
            lo, hi = self.kept(lo), self.kept(hi)
            if len(lo) and (scales != t.scale).any():
                outside = np.flatnonzero((scales < 0) | (scales > _MAX_DECIMAL_SCALE))
                if len(outside):
                    at = int(outside[0])
                    raise _BadValue(CorruptFileError, at, f"decimal scale {int(scales[at])} is outside 0 to {_MAX_DECIMAL_SCALE}")
                return self._rescaled(lo, hi, scales)
            limit = 10**t.precision
            bad = K.decimals_beyond(lo, hi, np.uint64(limit & _M64), np.uint64(limit >> 64))
            if bad >= 0:
                value = (int(hi[bad]) << 64) | (int(lo[bad]) & _M64)
                raise _BadValue(CorruptFileError, bad, f"decimal value (unscaled) {value} has more digits than {t} holds")
        words = np.empty(2 * len(lo), np.int64)
        words[0::2] = lo
        words[1::2] = hi
        return pa.Array.from_buffers(t, len(lo), [None, pa.py_buffer(words)])

    def _rescaled(self, lo: np.ndarray, hi: np.ndarray, scales: np.ndarray) -> pa.Array:
        """Values written at their own scales (ORC Java writes each value's scale), brought to
        the type's scale: vectorized where every value fits 64 bits, else exact per value. A
        value of a typed decimal column written at a larger scale than the column's, with
        digits the column's scale cannot hold, is an error (writers round values to the
        column's scale before writing them; pyarrow's reader refuses the loss as well); the
        untyped decimals of format 0.11 are truncated to the scale they read at."""
        t = self.c.arrow_type
        shift = t.scale - scales
        if self.c.type.precision:
            lost = np.flatnonzero(_digits_lost(lo, hi, np.clip(-shift, 0, None)))
            if len(lost):
                at = int(lost[0])
                raise _BadValue(CorruptFileError, at, f"decimal value written at scale {int(scales[at])} has digits {t} does not hold")
        fits = bool(((hi == (lo >> 63)) & (np.abs(shift) <= 18)).all()) and t.precision <= 18
        if fits:
            # the products fit 64 bits where each value is below 10 ** (18 - its shift up)
            room = np.power(10, 18 - np.clip(shift, 0, 18), dtype=np.int64)
            fits = bool(((lo > -room) & (lo < room)).all())
        if fits:
            up = np.power(10, np.clip(shift, 0, 18), dtype=np.int64)
            down = np.power(10, np.clip(-shift, 0, 18), dtype=np.int64)
            values = np.where(shift >= 0, lo * up, np.sign(lo) * (np.abs(lo) // down))
            _check_width(values, None, CorruptFileError, "decimal value (unscaled, rescaled)", str(t), 10**t.precision)
            words = np.empty(2 * len(values), np.int64)
            words[0::2] = values
            words[1::2] = values >> 63
            return pa.Array.from_buffers(t, len(values), [None, pa.py_buffer(words)])
        out: list[int] = []
        for a, b, s in zip(lo.tolist(), hi.tolist(), scales.tolist()):
            v = (b << 64) | (a & 0xFFFFFFFFFFFFFFFF)
            d = t.scale - s
            v = v * 10**d if d >= 0 else _div_truncate(v, 10**-d)
            if abs(v) >= 10**t.precision:
                raise _BadValue(CorruptFileError, len(out), f"decimal value (unscaled, rescaled) {v} has more digits than {t} holds")
            out.append(v)
        import decimal

        ctx = decimal.Context(prec=80)
        return pa.array([decimal.Decimal(v).scaleb(-t.scale, ctx) for v in out], t)

    def timestamps(self) -> pa.Array:
        secs = self.kept(self.ints(P.DATA, True))
        encoded = self.kept(self.ints(P.SECONDARY, False))
        t = self.c.arrow_type
        if self.c.type.kind == P.TIMESTAMP_INSTANT or self.writer_tz in _UTC_NAMES:
            epoch = ORC_EPOCH
            changes = offsets = _NO_ZONE
        else:
            # a timestamp without time zone reads as the wall clock of the writer's zone
            epoch = _local_epoch(self.writer_tz)
            changes, offsets = _zone_table(self.writer_tz)
        out = np.empty(len(secs), np.int64)
        per_unit = TIMESTAMP_UNITS[t.unit]
        status, at = K.orc_timestamps(secs, encoded, epoch, changes, offsets, _CYCLE_START, per_unit, _unit_bounds(per_unit), out)
        if status == K.TS_BAD_NANOS:
            raise _BadValue(CorruptFileError, at, f"timestamp nanoseconds (encoded {int(encoded[at])}) are not a fraction of a second")
        if status == K.TS_OUT_OF_RANGE:
            zeros = int(encoded[at]) & 7
            nanos = (int(encoded[at]) >> 3) * (10 ** (zeros + 1) if zeros else 1)
            value = _describe_timestamp(*divmod((int(secs[at]) + epoch) * 1_000_000_000 + nanos, 1_000_000_000))
            hint = "; read with timestamp_unit='us'" if t.unit == "ns" else ""
            raise _BadValue(UnsupportedFeatureError, at, f"timestamp {value} is outside what {t} holds{hint}")
        return pa.Array.from_buffers(t, len(out), [None, pa.py_buffer(out)])


_M64 = (1 << 64) - 1
#: the largest scale of an ORC decimal (Hive's 38 digits)
_MAX_DECIMAL_SCALE = 38


def _digits_lost(lo: np.ndarray, hi: np.ndarray, drop: np.ndarray) -> np.ndarray:
    """Per 128-bit integer (``lo``, ``hi``: its two's-complement words), whether dropping its
    last ``drop`` decimal digits loses a digit that is not zero."""
    small = (hi == (lo >> 63)) & (drop <= 18)  # 64-bit values: vectorized
    out = small & (lo % np.power(10, np.clip(drop, 0, 18), dtype=np.int64) != 0)
    for i in np.flatnonzero(~small & (drop > 0)).tolist():
        v = (int(hi[i]) << 64) | (int(lo[i]) & _M64)
        out[i] = v % 10 ** int(drop[i]) != 0
    return out
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_NO_ZONE = np.empty(0, np.int64)


class _BadValue(Exception):
    """A decoded value the column's Arrow type cannot hold (or a corrupt one): ``index`` is its
    place among the values decoded, which the reader turns into a row."""

    def __init__(self, cls: type[FileError], index: int, reason: str) -> None:
        super().__init__(reason)
        self.cls = cls
        self.index = index
        self.reason = reason

    def at_row(self, row: int) -> FileError:
        return self.cls(f"row {row} of the stripe: {self.reason}")


def _check_width(values: np.ndarray, dtype: Any, cls: type[FileError], what: str, target: str | None = None,
                 limit: int | None = None) -> None:
    """Raise :class:`_BadValue` for the first of ``values`` outside integer type ``dtype`` (or
    of magnitude ``limit`` or more)."""
    if not len(values):
        return
    if limit is not None:
        lo, hi = -limit + 1, limit - 1
    else:
        info = np.iinfo(dtype)
        lo, hi = int(info.min), int(info.max)
    if lo <= int(values.min()) and int(values.max()) <= hi:
        return
    at = int(np.flatnonzero((values < lo) | (values > hi))[0])
    holds = target or np.dtype(dtype).name
    raise _BadValue(cls, at, f"{what} {int(values[at])} is outside what {holds} holds")


@functools.lru_cache(maxsize=4)
def _unit_bounds(nanos_per_unit: int) -> np.ndarray:
    """(lowest second, lowest unit within it, highest second, highest unit within it) of the
    instants int64 counts of the unit hold."""
    per_second = 1_000_000_000 // nanos_per_unit
    low = divmod(_INT64_MIN, per_second)
    high = divmod(_INT64_MAX, per_second)
    return np.array([*low, *high], np.int64)


def _describe_timestamp(second: int, nanos: int) -> str:
    """An instant (seconds since 1970 and nanoseconds) as text, for error messages."""
    try:
        stamp = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=second)
        return f"{stamp:%Y-%m-%d %H:%M:%S}.{nanos:09d}"
    except OverflowError:
        return f"{second}.{nanos:09d} s after 1970-01-01"


def _with_timestamp_unit(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """A nested array as pyarrow's ORC reader gives it (nanosecond timestamps) in ``target``:
    timestamps in its unit, floored as the flat columns' are."""
    if arr.type == target:
        return arr
    if pa.types.is_timestamp(target):
        import pyarrow.compute as pc

        return pc.floor_temporal(arr, unit="microsecond" if target.unit == "us" else "nanosecond").cast(target)
    if arr.offset:
        arr = pa.concat_arrays([arr])  # children of an unsliced array line up with its buffers
    if pa.types.is_struct(target):
        children = [_with_timestamp_unit(arr.field(j), target.field(j).type) for j in range(target.num_fields)]
        buffers = arr.buffers()[:1]
    elif pa.types.is_map(target):
        entries = pa.StructArray.from_arrays(
            [_with_timestamp_unit(arr.keys, target.key_type), _with_timestamp_unit(arr.items, target.item_type)],
            fields=[target.key_field, target.item_field],
        )
        children = [entries]
        buffers = arr.buffers()[:2]
    elif pa.types.is_list(target):
        children = [_with_timestamp_unit(arr.values, target.value_type)]
        buffers = arr.buffers()[:2]
    elif pa.types.is_union(target):
        children = [_with_timestamp_unit(arr.field(j), target.field(j).type) for j in range(target.num_fields)]
        buffers = arr.buffers()[:3 if target.mode == "dense" else 2]
    else:
        return arr.cast(target)
    return pa.Array.from_buffers(target, len(arr), buffers, arr.null_count, 0, children)


def _div_truncate(v: int, d: int) -> int:
    q = abs(v) // d
    return q if v >= 0 else -q


def _local_epoch(tz: str) -> int:
    """UTC seconds of 2015-01-01 00:00:00 in time zone ``tz``."""
    try:
        zone = zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise UnsupportedFeatureError(f"unknown writer time zone {tz!r}") from None
    return int(dt.datetime(2015, 1, 1, tzinfo=zone).timestamp())


def _utc_seconds(year: int) -> int:
    return int(dt.datetime(year, 1, 1, tzinfo=dt.timezone.utc).timestamp())


#: a zone's offsets are tabulated from 1800 (no zone of the zone database changes its offset
#: between the year 1 and 1800), day by day from 1900 to 2100 and week by week outside that
_TABLE_FROM, _DAILY_FROM, _DAILY_TO = _utc_seconds(1800), _utc_seconds(1900), _utc_seconds(2100)
#: from 2100 on a zone's offsets follow its yearly rules, which repeat with the calendar every
#: 400 years: the table covers one such cycle, later instants are taken back into it
_CYCLE_START = _DAILY_TO
_TABLE_TO = _CYCLE_START + K.GREGORIAN_CYCLE_SECONDS


@functools.lru_cache(maxsize=16)
def _zone_table(tz: str) -> tuple[np.ndarray, np.ndarray]:
    """(instants where the UTC offset of ``tz`` changes, the offset from each on), 1800 to the
    end of the 400-year cycle from 2100 (see :func:`lazyscan.orc.kernels.orc_timestamps`)."""
    zone = zoneinfo.ZoneInfo(tz)

    def offset(t: int) -> int:
        return int(dt.datetime.fromtimestamp(t, zone).utcoffset().total_seconds())  # type: ignore[union-attr]

    week, day = 7 * 86_400, 86_400
    samples = [*range(_TABLE_FROM, _DAILY_FROM, week), *range(_DAILY_FROM, _DAILY_TO, day), *range(_DAILY_TO, _TABLE_TO, week), _TABLE_TO]
    changes = [_TABLE_FROM]
    offsets = [offset(_TABLE_FROM)]
    prev_t, prev = _TABLE_FROM, offsets[0]
    for t in samples:
        cur = offset(t)
        if cur != prev:
            lo, hi = prev_t, t  # the change lies in (lo, hi]: bisect to the second
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if offset(mid) == prev:
                    lo = mid
                else:
                    hi = mid
            changes.append(hi)
            offsets.append(cur)
            prev = cur
        prev_t = t
    return np.array(changes, np.int64), np.array(offsets, np.int64)
