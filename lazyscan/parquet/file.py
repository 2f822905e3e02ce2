"""``ParquetFile``: metadata access and row-selective column reads of one Parquet file.

Parts:

- footer: read with one speculative tail request, parsed by the bounded thrift reader, cached per
  process by path, file identity (:class:`~lazyscan.io.FileIdentity`) and the footer's bytes, so
  repeated scans do not parse it again and a file rewritten in place is never read with its old
  footer; :attr:`ParquetFile.footer_digest` lets a plan pin the footer it was made from;
- page layout of a column chunk: from the OffsetIndex when present, otherwise by walking the page
  headers (reading headers only), cached per footer the same way;
- :meth:`ParquetFile.read_column`: a whole column chunk, or only a row selection of it: pages with
  no selected row are neither fetched nor decompressed; chosen pages are fetched with coalesced
  requests; inside a page only the selected values are decoded;
- page index, Bloom filters, dictionaries and statistics accessors for the pruning tiers above.

Errors name the file, row group, column and page.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from lazyscan.errors import (
    CorruptFileError,
    FileError,
    LazyScanError,
    OptionError,
    UnsupportedFeatureError,
)
from lazyscan.format.counters import ReadCounters
from lazyscan.format.options import ReaderOptions
from lazyscan.format.selection import RowRanges
from lazyscan.format.statistics import ColumnStats
from lazyscan.format.writers import (
    chunk_size_leaves_out_dictionary_header,
    v2_pages_always_compressed,
)
from lazyscan.io import ReadOptions, Source, open_source
from lazyscan.io.source import ShortReadError, tail_read_length
from lazyscan.parquet import buffers, checksums, codecs, fused, fused_match
from lazyscan.parquet import kernels as K
from lazyscan.parquet.bloom import BloomFilter
from lazyscan.parquet.convert import Assembled, assemble, stored_as_is, to_arrow
from lazyscan.parquet.decode import (
    PageValues,
    Values,
    check_zero_levels,
    decode_data_page,
    decode_dictionary_page,
    decode_levels_rle,
    decode_levels_v1,
)
from lazyscan.parquet.match import BytesMatcher
from lazyscan.parquet.metadata import (
    ColumnChunk,
    ColumnIndex,
    ColumnMetaData,
    Encoding,
    FileMetaData,
    OffsetIndex,
    PageHeader,
    PageLocation,
    PageType,
    PhysicalType,
    bloom_filter_header_from_thrift,
    column_index_from_thrift,
    file_metadata_from_thrift,
    offset_index_from_thrift,
)
from lazyscan.parquet.page_header import parse_page_header
from lazyscan.parquet.schema import ColumnDescriptor, FileSchema, SchemaError, build_schema
from lazyscan.parquet.statistics import decode_column_index, decode_statistics
from lazyscan.parquet.thrift import ThriftError, read_struct

MAGIC = b"PAR1"
MAGIC_ENCRYPTED = b"PARE"
_TAIL_READ = 64 * 1024
_HEADER_WINDOW = 256  # first read of a page header while walking; grows 4x until it parses
_MAX_HEADER = 16 * 1024 * 1024
#: What one GET on an object store costs, in bytes of transfer: S3 answers a request in some tens
#: of milliseconds before the first byte and then sends on the order of 100 MB/s per connection,
#: so a request costs about what 1-8 MB of transfer does. The low end is taken: a chunk read whole
#: to walk its page headers never costs more than the header GETs it replaces.
_REQUEST_COST_BYTES = 1024 * 1024
#: The largest column chunk read whole to walk its page headers on an object store (the upper end
#: of that range): beyond it the walk reads header by header, so a scan that needs a page or two
#: of a big chunk does not fetch all of it.
_WHOLE_WALK_MAX = 8 * 1024 * 1024
#: The page size parquet-mr and Arrow write by default (uncompressed): estimates how many
#: headers a walk reads where the footer does not count a chunk's pages.
_TYPICAL_PAGE = 1024 * 1024


@dataclass(frozen=True)
class PageInfo:
    """A data page: file offset of its header, total size (header + body), rows it holds."""

    offset: int
    size: int
    first_row: int
    num_rows: int


@dataclass(frozen=True)
class ChunkLayout:
    dictionary: tuple[int, int] | None  # (offset, size) of the dictionary page
    pages: tuple[PageInfo, ...]
    from_offset_index: bool
    #: the offset index entry of each page, when the index lists pages never written
    index_entries: tuple[int, ...] | None = None
    #: first row and end row of each page, as arrays (derived from ``pages``)
    page_starts: np.ndarray = field(init=False, repr=False, compare=False)
    page_ends: np.ndarray = field(init=False, repr=False, compare=False)
    #: file offset and size (header included) of each page, as arrays
    page_offsets: np.ndarray = field(init=False, repr=False, compare=False)
    page_sizes: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        table = np.array([(p.first_row, p.num_rows, p.offset, p.size) for p in self.pages], dtype=np.int64).reshape(-1, 4)
        starts = np.ascontiguousarray(table[:, 0])
        ends = starts + table[:, 1]
        arrays = {"page_starts": starts, "page_ends": ends, "page_offsets": np.ascontiguousarray(table[:, 2]), "page_sizes": np.ascontiguousarray(table[:, 3])}
        for name, array in arrays.items():
            array.flags.writeable = False
            object.__setattr__(self, name, array)


class _Cache:
    """A small thread-safe LRU cache."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._data: OrderedDict[Any, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.capacity:
                self._data.popitem(last=False)

    def drop(self, key: Any) -> None:
        with self._lock:
            self._data.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


class _Footer(NamedTuple):
    """A parsed footer as the footer cache keeps it."""

    metadata: FileMetaData
    schema: FileSchema
    #: names this footer in the keys of the other caches: a small number is cheaper to hash than
    #: the footer's key, and a footer read again after its entry left the cache gets a new one,
    #: so nothing cached for a file's other versions is ever found under it
    token: int
    #: what :attr:`ParquetFile.footer_digest` gives
    digest: bytes
    #: the footer's bytes the entry was parsed from, compared whole on every hit
    content: bytes


#: parsed footers, found by path, :class:`FileIdentity`, footer length and the footer's last
#: bytes, and used only when the whole footer equals the entry's (see
#: :meth:`ParquetFile._read_footer`)
_FOOTER_CACHE = _Cache(256)
_FOOTER_TOKENS = itertools.count(1)
#: a footer's per-row-group sizes as arrays and its decoded statistics, keyed by its token
_SUMMARY_CACHE = _Cache(256)
_LAYOUT_CACHE = _Cache(65536)
#: fused-read groups (one per file, row group and list of columns read), by footer token
_GROUP_CACHE = _Cache(4096)
_NO_GROUP = object()
#: per-page statistics decoded from ColumnIndexes, keyed like layouts
_PAGE_STATS_CACHE = _Cache(16384)
#: data pages per column chunk of a file (an array per footer), keyed by its token
_PAGE_COUNT_CACHE = _Cache(256)
_NO_PAGE_STATS = object()
#: column chunks whose offset index located a page wrongly: their layout comes from the page
#: headers, and their column index is not used; keyed like layouts
_DISTRUSTED = _Cache(65536)
#: counts the chunks distrusted so far: part of the keys of cached fused-read groups, which
#: hold layouts
_LAYOUT_GENERATION = 0
_GENERATION_LOCK = threading.Lock()
_NO_BYTES = np.empty(0, np.uint8)
#: a file's page indexes (all ColumnIndexes and OffsetIndexes, which writers put side by side)
#: are fetched in one request when they span at most this many bytes
_INDEX_REGION_MAX = 16 * 1024 * 1024
#: where a chunk's dictionary page is, learnt from its first page header without walking the
#: rest (object stores), keyed like layouts
_DICTIONARY_AT = _Cache(65536)
_NO_DICTIONARY = object()
#: one walk of a chunk's page headers at a time: threads wanting the same layout wait for it
#: (striped by key, so walks of other chunks rarely wait)
_WALK_LOCKS = tuple(threading.Lock() for _ in range(64))
_KEEP_LOCK = threading.Lock()
#: prefetches of whole chunks merge only ranges that touch (a gap may hold bytes read already)
_TOUCHING = ReadOptions(coalesce_gap=0)


class PageCache:
    """Decompressed page bodies and decoded dictionaries of one task, keyed by file offset.

    The scan evaluates ``=`` / ``IN`` on a byte-array column's encoded pages and later
    materializes that column for the surviving rows; pages holding a match are kept here by the
    first read so the second does not decompress them again. Only pages with a match are
    stored, so the cache holds at most one page per surviving row and predicate column.
    Dictionaries decoded by a read (or by :meth:`ParquetFile.read_dictionary` for dictionary
    pruning) are kept too, so later reads of the chunk neither fetch nor decode them again.
    """

    def __init__(self) -> None:
        self.bodies: dict[int, np.ndarray] = {}
        #: headers of the v1 pages in ``bodies``: such a page is decoded again without a fetch
        self.headers: dict[int, PageHeader] = {}
        self.dictionaries: dict[int, Values] = {}

    def __len__(self) -> int:
        return len(self.bodies)


class _SelectedRows(NamedTuple):
    """A row selection as the decoders take it: the ranges to decode (close ranges merged by the
    materialization threshold), their row indices, and the positions of the selected rows among
    them (None when nothing was merged)."""

    starts: np.ndarray
    ends: np.ndarray
    idx: np.ndarray
    positions: np.ndarray | None


class _ChunkPlan(NamedTuple):
    """The pages of one column chunk a selective read decodes, and the byte ranges to fetch."""

    desc: ColumnDescriptor
    md: ColumnMetaData
    layout: ChunkLayout
    needed: list[int]
    los: list[int]
    his: list[int]
    dictionary: Values | None
    fetch_dictionary: bool
    ranges: list[tuple[int, int]]
    pages_skipped: int
    #: the needed pages held whole by the page cache (header and body): not fetched
    cached: frozenset[int]


class _Check(NamedTuple):
    """What the ranges of a fetch hold, for checking their pages' checksums: pages of row group
    ``row_group``; each range one page (``walk_rows`` is ``checksums.ONE_PAGE``), or the
    consecutive pages from its start holding ``walk_rows`` rows of data, the first of them page
    ``first_page`` of its chunk (else a bad page's number comes from the chunk's layout)."""

    row_group: int
    walk_rows: int = checksums.ONE_PAGE
    first_page: int | None = None


class FooterSummary:
    """A footer's row groups as arrays, for planning over many row groups without walking the
    thrift structures: rows, the first chunk's offset and the compressed bytes of each row
    group, the uncompressed and compressed bytes of each (row group, leaf) chunk, and the
    decoded row-group statistics (filled as they are asked for)."""

    def __init__(self, md: FileMetaData, num_leaves: int) -> None:
        n = len(md.row_groups)
        self.rows = np.array([rg.num_rows for rg in md.row_groups], np.int64)
        self.starts = np.full(n, -1, np.int64)
        self.uncompressed = np.zeros((n, num_leaves), np.int64)
        self.compressed = np.zeros((n, num_leaves), np.int64)
        data_end = 4
        for i, rg in enumerate(md.row_groups):
            first = -1
            for j, chunk in enumerate(rg.columns[:num_leaves]):
                cmd = chunk.meta_data
                if cmd is None:
                    continue
                start = cmd.chunk_start
                first = start if first < 0 else min(first, start)
                self.uncompressed[i, j] = cmd.total_uncompressed_size
                self.compressed[i, j] = cmd.total_compressed_size
                data_end = max(data_end, start + cmd.total_compressed_size)
            self.starts[i] = first
        self.sizes = self.compressed.sum(axis=1)
        #: end of the last column chunk (the footer follows)
        self.data_end = data_end
        self.stats: dict[tuple[int, int], ColumnStats] = {}

    def row_groups_in(self, start: int, end: int) -> list[int]:
        """Row groups whose midpoint lies in ``[start, end)`` (how byte-range splits own row
        groups); a row group without column chunks belongs to the split starting at 0."""
        mid = self.starts + self.sizes // 2
        owned = (self.starts >= 0) & (mid >= start) & (mid < end)
        if start == 0:
            owned |= self.starts < 0
        return np.flatnonzero(owned).tolist()


def footer_digest(data: bytes) -> bytes:
    """The digest a plan pins a file's footer (or other metadata) by: BLAKE2b of 16 bytes."""
    return hashlib.blake2b(data, digest_size=16).digest()


def clear_caches() -> None:
    """Forget cached footers, page layouts and page statistics (tests and benchmarks use this)."""
    _FOOTER_CACHE.clear()
    _SUMMARY_CACHE.clear()
    _GROUP_CACHE.clear()
    _LAYOUT_CACHE.clear()
    _PAGE_STATS_CACHE.clear()
    _PAGE_COUNT_CACHE.clear()
    _DISTRUSTED.clear()
    _DICTIONARY_AT.clear()


class ParquetFile:
    """One Parquet file: metadata, page index, Bloom filters and column reads.

    ``source`` is a path (local, ``file://``, or a URI pyarrow understands), a path on
    ``filesystem`` (pyarrow or fsspec), or an open :class:`lazyscan.io.Source`.
    """

    def __init__(
        self, source: Any, filesystem: Any = None, *, options: ReaderOptions | None = None
    ) -> None:
        self.options = options or ReaderOptions()
        self.source: Source = open_source(source, filesystem, retry=self.options.retry)
        self.path = self.source.path
        self._default_read = self.source_default_read_options()
        self._filesystem = filesystem
        self.counters = ReadCounters()
        #: the footer's token (:class:`_Footer`): the first part of every cache key of this file
        self._footer_key = 0
        #: see :attr:`footer_digest`
        self._footer_digest = b""
        self.metadata, self.schema = self._read_footer()
        #: the writer compressed v2 pages that say they are not (ARROW-17100)
        self._v2_always_compressed = v2_pages_always_compressed(self.metadata.created_by)
        self._nested_fields: dict[str, pa.Field] | None = None
        self._shapes: dict[int, fused.Shape | None] = {}
        self._index_lock = threading.Lock()
        self._index_region: tuple[int, bytes] | None = None
        self._index_region_known = False

    # ---- footer -------------------------------------------------------------------------

    def _error(self, cls: type[FileError], msg: str, **where: Any) -> FileError:
        return cls(msg, file=self.path, **where)

    @property
    def footer_digest(self) -> bytes:
        """A digest (BLAKE2b, 16 bytes) of the footer as read: the same for every open of one
        version of the file, so a plan can pin the footer it was made from and a later open
        compare (with :attr:`Source.identity <lazyscan.io.Source.identity>`). Where the
        identity holds an ETag or version id, which name the object's whole content, and the
        footer is longer than the tail read, it is the digest of the tail read (the last 64
        KiB), not of the whole footer."""
        return self._footer_digest

    def _read_footer(self) -> tuple[FileMetaData, FileSchema]:
        size = self.source.size
        if size < 12:
            raise self._error(CorruptFileError, f"file of {size} bytes is too small to be Parquet")
        tail_len = tail_read_length(self.source, _TAIL_READ)
        tail = self.source.read_at(size - tail_len, tail_len)
        if tail[-4:] == MAGIC_ENCRYPTED:
            raise self._error(UnsupportedFeatureError, "encrypted Parquet files are not supported")
        if tail[-4:] != MAGIC:
            raise self._error(CorruptFileError, "not a Parquet file: bad magic number at the end")
        footer_len = int.from_bytes(tail[-8:-4], "little")
        if footer_len + 12 > size:
            raise self._error(
                CorruptFileError, f"footer length {footer_len} exceeds the file size {size}"
            )
        # Cached footers are keyed by the file's identity (size, modification time, inode; ETag
        # and version id on object stores) and the footer's bytes: two versions of a file that
        # share a size, a modification time tick and the end of their footers (one writer, one
        # schema) never share an entry. Where an ETag or version id names the content, the
        # footer's bytes in the tail read are enough: the rest of a longer footer is not fetched
        # again on each open of a file the cache holds.
        identity = self.source.identity
        footer: memoryview | None = None
        if footer_len + 8 <= len(tail):
            content = bytes(tail[len(tail) - 8 - footer_len : len(tail) - 8])
            footer = memoryview(content)
        elif identity.etag is not None or identity.version_id is not None:
            content = bytes(tail)
        else:
            content = bytes(self.source.read_at(size - 8 - footer_len, footer_len))  # no copy of bytes
            footer = memoryview(content)
        # found by a key cheap to hash, then compared whole (hashing 100 KiB of footer would cost
        # ~50 us, the comparison ~5)
        key = (self.path, identity, footer_len, content[-64:])
        cached: _Footer | None = _FOOTER_CACHE.get(key)
        if cached is not None and cached.content == content:
            self._footer_key, self._footer_digest = cached.token, cached.digest
            return cached.metadata, cached.schema
        if footer is None:
            footer = memoryview(self.source.read_at(size - 8 - footer_len, footer_len))
        # the magic at the start is checked where it costs no request of its own: locally, and
        # where the tail read holds it (an object store would answer a GET of its own, 64 KiB
        # at the least, see MIN_REMOTE_READ); the footer's magic, its length and its parse
        # checked the file already (pyarrow's reader checks the footer's end alone)
        if not self.source.remote or tail_len == size:
            head = tail[:4] if tail_len == size else self.source.read_at(0, 4)
            if head != MAGIC:
                raise self._error(CorruptFileError, "not a Parquet file: bad magic number at the start")
        try:
            fields, _ = read_struct(footer)
            md = file_metadata_from_thrift(fields)
        except ThriftError as e:
            raise self._error(CorruptFileError, f"corrupt footer: {e}") from None
        if md.encrypted:
            raise self._error(UnsupportedFeatureError, "encrypted Parquet files are not supported")
        try:
            schema = build_schema(md.schema, md.key_value_metadata)
        except SchemaError as e:
            raise self._error(CorruptFileError, f"corrupt schema: {e}", column=e.column) from None
        for i, rg in enumerate(md.row_groups):
            if len(rg.columns) != len(schema.columns):
                raise self._error(
                    CorruptFileError,
                    f"row group has {len(rg.columns)} column chunks, schema has {len(schema.columns)} columns",
                    row_group=i,
                )
        self._check_row_counts(md, schema)
        entry = _Footer(md, schema, next(_FOOTER_TOKENS), footer_digest(content), content)
        _FOOTER_CACHE.put(key, entry)
        self._footer_key, self._footer_digest = entry.token, entry.digest
        return md, schema

    def _check_row_counts(self, md: FileMetaData, schema: FileSchema) -> None:
        """Refuse a footer whose chunks' physical types differ from the schema's, or whose row
        counts contradict each other: the row groups' rows must add
        up to the file's (a file's count of 0 is a writer leaving it out: parquet-testing's
        ``repeated_no_annotation.parquet``, which pyarrow reads), and a required top-level
        column holds one value per row of its row group. Rows of later row groups are numbered
        after the earlier ones', so one wrong count would move every row after it."""
        total = sum(rg.num_rows for rg in md.row_groups)
        if md.num_rows and total != md.num_rows:
            raise self._error(CorruptFileError, f"the row groups hold {total} rows, the footer says the file has {md.num_rows}")
        required = [d.index for d in schema.columns if d.flat and d.max_definition_level == 0]
        for i, rg in enumerate(md.row_groups):
            for desc, chunk in zip(schema.columns, rg.columns):
                if chunk.meta_data is not None and chunk.meta_data.type != desc.physical_type:
                    # refused here, not only by a read of the chunk: a scan that reads no row of it
                    # would give the column the schema's type
                    raise self._error(CorruptFileError, "column chunk type differs from the schema", row_group=i, column=desc.name)
            for c in required:
                cmd = rg.columns[c].meta_data
                if cmd is not None and cmd.num_values != rg.num_rows:
                    raise self._error(
                        CorruptFileError,
                        f"required column chunk holds {cmd.num_values} values, its row group has {rg.num_rows} rows",
                        row_group=i, column=schema.columns[c].name,
                    )

    # ---- simple accessors -----------------------------------------------------------------

    @property
    def num_row_groups(self) -> int:
        return len(self.metadata.row_groups)

    @property
    def num_rows(self) -> int:
        return self.metadata.num_rows

    @property
    def arrow_schema(self) -> pa.Schema:
        """Arrow schema of the file's top-level fields."""
        schema = self.schema.arrow_schema
        if any(pa.types.is_null(f.type) for f in schema) and any(
            not self.schema.columns[leaves[0]].flat for leaves in self.schema.field_leaves if leaves
        ):
            nested = self._pyarrow_nested_fields()
            schema = pa.schema([nested.get(f.name, f) if pa.types.is_null(f.type) else f for f in schema])
        return schema

    def column(self, column: int | str) -> ColumnDescriptor:
        """A leaf column by index or dotted name."""
        if isinstance(column, (int, np.integer)):
            if not 0 <= column < len(self.schema.columns):
                raise KeyError(f"column index {column} out of range")
            return self.schema.columns[int(column)]
        try:
            return self.schema.leaf(column)
        except KeyError:
            raise KeyError(f"no column {column!r} in {self.path!r}") from None

    def column_chunk(self, row_group: int, column: int | str) -> tuple[ColumnDescriptor, ColumnChunk, ColumnMetaData]:
        desc = self.column(column)
        if not 0 <= row_group < self.num_row_groups:
            raise IndexError(f"row group {row_group} out of range (file has {self.num_row_groups})")
        chunk = self.metadata.row_groups[row_group].columns[desc.index]
        where = {"row_group": row_group, "column": desc.name}
        if chunk.encrypted:
            raise self._error(UnsupportedFeatureError, "encrypted columns are not supported", **where)
        if chunk.file_path:
            raise self._error(
                UnsupportedFeatureError, f"column chunk stored in another file ({chunk.file_path})", **where
            )
        md = chunk.meta_data
        if md is None:
            raise self._error(CorruptFileError, "column chunk has no metadata", **where)
        if md.type != desc.physical_type:
            raise self._error(CorruptFileError, "column chunk type differs from the schema", **where)
        return desc, chunk, md

    def _type_defined_order(self, desc: ColumnDescriptor) -> bool | None:
        orders = self.metadata.column_orders
        if orders is None or desc.index >= len(orders):
            return None
        return orders[desc.index]

    def statistics(self, row_group: int, column: int | str) -> ColumnStats:
        """Row-group statistics of a leaf column, in the Arrow storage domain."""
        desc, _, md = self.column_chunk(row_group, column)
        stats = self.summary.stats
        found = stats.get((row_group, desc.index))
        if found is None:
            num_rows = self.metadata.row_groups[row_group].num_rows
            found = decode_statistics(
                desc, md.statistics, num_rows, self._type_defined_order(desc), chunk=md, footer=self.metadata
            )
            stats[(row_group, desc.index)] = found
        return found

    @property
    def summary(self) -> FooterSummary:
        """The footer's row groups as arrays (built once per footer and process)."""
        found = _SUMMARY_CACHE.get(self._footer_key)
        if found is None:
            found = FooterSummary(self.metadata, len(self.schema.columns))
            _SUMMARY_CACHE.put(self._footer_key, found)
        return found  # type: ignore[no-any-return]

    def is_fully_dictionary_encoded(self, row_group: int, column: int | str) -> bool:
        """True when every data page of the chunk is dictionary encoded (from encoding stats,
        else from the chunk's encodings list)."""
        _, _, md = self.column_chunk(row_group, column)
        if md.encoding_stats is not None:
            data_pages = [s for s in md.encoding_stats if s.page_type in (PageType.DATA_PAGE, PageType.DATA_PAGE_V2)]
            has_dict_page = any(s.page_type == PageType.DICTIONARY_PAGE for s in md.encoding_stats)
            return has_dict_page and all(s.encoding in (2, 8) for s in data_pages if s.count > 0)
        encs = set(md.encodings)
        if not encs & {2, 8}:
            return False
        # RLE / BIT_PACKED only serve levels; PLAIN may be the dictionary page's encoding
        # (PLAIN_DICTIONARY era) or a fallback; without encoding stats it is ambiguous.
        rest = encs - {2, 8, 3, 4}
        return not rest or (rest == {0} and 2 in encs and 8 not in encs)

    # ---- page index and Bloom filters ----------------------------------------------------------

    def _page_index_region(self) -> tuple[int, bytes] | None:
        """``(start, bytes)`` of the span holding every page index of the file, fetched once,
        when that span is small and mostly index (else None: each index is read alone). On an
        object store this turns one request per column chunk into one per file."""
        with self._index_lock:
            if not self._index_region_known:
                self._index_region_known = True
                spans = [
                    (off, length)
                    for rg in self.metadata.row_groups
                    for ch in rg.columns
                    for off, length in ((ch.column_index_offset, ch.column_index_length), (ch.offset_index_offset, ch.offset_index_length))
                    if off is not None and length and off >= 0 and length > 0
                ]
                if len(spans) > 1:
                    lo = min(off for off, _ in spans)
                    hi = max(off + length for off, length in spans)
                    inside = sum(length for _, length in spans)
                    if hi <= self.source.size and hi - lo <= _INDEX_REGION_MAX and 2 * inside >= hi - lo:
                        self._index_region = (lo, self.source.read_at(lo, hi - lo))
            return self._index_region

    def _read_struct_at(self, offset: int, length: int, what: str, **where: Any) -> dict[int, Any]:
        if offset < 0 or length <= 0 or offset + length > self.source.size:
            raise self._error(CorruptFileError, f"{what} at {offset}+{length} lies outside the file", **where)
        region = self._page_index_region() if what in ("column index", "offset index") else None
        if region is not None and region[0] <= offset and offset + length <= region[0] + len(region[1]):
            data = memoryview(region[1])[offset - region[0] : offset - region[0] + length]
        else:
            data = self.source.read_at(offset, length)
        try:
            fields, _ = read_struct(data)
        except ThriftError as e:
            raise self._error(CorruptFileError, f"corrupt {what}: {e}", **where) from None
        return fields

    def column_index(self, row_group: int, column: int | str) -> ColumnIndex | None:
        """The chunk's ColumnIndex (page min/max, null pages), or None when absent."""
        desc, chunk, _ = self.column_chunk(row_group, column)
        if chunk.column_index_offset is None or not chunk.column_index_length:
            return None
        where = {"row_group": row_group, "column": desc.name}
        fields = self._read_struct_at(chunk.column_index_offset, chunk.column_index_length, "column index", **where)
        try:
            return column_index_from_thrift(fields)
        except ThriftError as e:
            raise self._error(CorruptFileError, f"corrupt column index: {e}", **where) from None

    def offset_index(self, row_group: int, column: int | str) -> OffsetIndex | None:
        """The chunk's OffsetIndex (page locations), or None when absent."""
        desc, chunk, _ = self.column_chunk(row_group, column)
        if chunk.offset_index_offset is None or not chunk.offset_index_length:
            return None
        where = {"row_group": row_group, "column": desc.name}
        fields = self._read_struct_at(chunk.offset_index_offset, chunk.offset_index_length, "offset index", **where)
        try:
            return offset_index_from_thrift(fields)
        except ThriftError as e:
            raise self._error(CorruptFileError, f"corrupt offset index: {e}", **where) from None

    def page_statistics(self, row_group: int, column: int | str) -> tuple[list[ColumnStats], ChunkLayout] | None:
        """Per-page statistics from the ColumnIndex with the page layout, or None."""
        desc = self.column(column)
        key = (self._footer_key, row_group, desc.index)
        cached = _PAGE_STATS_CACHE.get(key)
        if cached is not None:
            return cached if cached is not _NO_PAGE_STATS else None  # type: ignore[no-any-return]
        ci = self.column_index(row_group, column)
        layout = self.page_layout(row_group, column) if ci is not None else None
        if ci is not None and layout is not None and layout.index_entries is not None:
            entries = layout.index_entries
            if len(ci.null_pages) != len(layout.pages) and len(ci.null_pages) > entries[-1]:
                ci = ci.select(entries)  # it lists the pages never written, as the offset index does
        if ci is None or layout is None or len(layout.pages) != len(ci.null_pages) or _DISTRUSTED.get(key) is not None:
            # no index, or one whose pages are not the chunk's: no page-level pruning
            _PAGE_STATS_CACHE.put(key, _NO_PAGE_STATS)
            return None
        _, _, md = self.column_chunk(row_group, column)
        stats = decode_column_index(
            desc, ci, [p.num_rows for p in layout.pages], self._type_defined_order(desc), chunk=md,
            footer=self.metadata, chunk_null_count=self.statistics(row_group, column).null_count,
        )
        result = (stats, layout)
        _PAGE_STATS_CACHE.put(key, result)
        return result

    def bloom_filter(self, row_group: int, column: int | str) -> BloomFilter | None:
        """The chunk's split-block Bloom filter, or None when absent."""
        desc, _, md = self.column_chunk(row_group, column)
        off = md.bloom_filter_offset
        if off is None:
            return None
        where = {"row_group": row_group, "column": desc.name}
        size = self.source.size
        length = md.bloom_filter_length
        if off < 0 or off >= size:
            raise self._error(CorruptFileError, "Bloom filter offset outside the file", **where)
        head = self.source.read_at(off, length if length else min(size - off, 256))
        try:
            fields, hsize = read_struct(head)
            header = bloom_filter_header_from_thrift(fields)
        except ThriftError as e:
            raise self._error(CorruptFileError, f"corrupt Bloom filter header: {e}", **where) from None
        if not (header.algorithm_block and header.hash_xxhash and header.uncompressed):
            return None  # an algorithm lazyscan does not know: no pruning, no error
        nbytes = header.num_bytes
        if nbytes == 0 or nbytes % 32 or off + hsize + nbytes > size or nbytes > (1 << 30):
            raise self._error(CorruptFileError, f"Bloom filter of {nbytes} bytes is invalid", **where)
        if length and hsize + nbytes <= len(head):
            bits = head[hsize : hsize + nbytes]
        else:
            bits = self.source.read_at(off + hsize, nbytes)
        return BloomFilter(np.frombuffer(bits, dtype="<u4").copy())

    # ---- page layout ----------------------------------------------------------------------

    def chunk_range(self, row_group: int, column: int | str) -> tuple[int, int]:
        """``(offset, length)`` of a column chunk's bytes in the file."""
        return self._chunk_range(self.column_chunk(row_group, column)[2])

    def _chunk_range(self, md: ColumnMetaData) -> tuple[int, int]:
        start = md.chunk_start
        total = md.total_compressed_size
        if _old_parquet_mr(self.metadata.created_by):
            # PARQUET-816: old parquet-mr left the dictionary page out of the chunk size
            total = min(total + _PARQUET_816_PADDING, self.source.size - start)
        return start, total

    def data_page_count(self, row_group: int, column: int | str) -> int:
        """How many data pages a column chunk holds: from its encoding statistics when the
        writer kept them, else from its page layout (counted once per footer)."""
        desc = self.column(column)
        counts = self._data_page_counts()
        if not 0 <= row_group < self.num_row_groups:
            raise IndexError(f"row group {row_group} out of range (file has {self.num_row_groups})")
        n = int(counts[row_group, desc.index])
        if n < 0:
            n = len(self.page_layout(row_group, desc.index).pages)
            counts[row_group, desc.index] = n
        return n

    def data_pages_per_row_group(self, columns: np.ndarray) -> np.ndarray:
        """The data pages of the leaf columns ``columns`` in each row group, summed; -1 for a
        row group where a chunk's count is not in the footer (:meth:`data_page_count` counts it)."""
        counts = self._data_page_counts()[:, columns]
        out = counts.sum(axis=1)
        out[(counts < 0).any(axis=1)] = -1
        return out  # type: ignore[no-any-return]

    def _data_page_counts(self) -> np.ndarray:
        """Data pages per column chunk, ``[row group, leaf column]``, from the chunks' encoding
        statistics in one pass over the footer (kept per footer); -1 where a writer left them out
        or the chunk cannot be read, for :meth:`data_page_count` to count or report."""
        found = _PAGE_COUNT_CACHE.get(self._footer_key)
        if found is not None:
            return found  # type: ignore[no-any-return]
        data_pages = (PageType.DATA_PAGE, PageType.DATA_PAGE_V2)
        types = [d.physical_type for d in self.schema.columns]
        counts = np.full((self.num_row_groups, len(types)), -1, np.int64)
        for r, rg in enumerate(self.metadata.row_groups):
            for c, chunk in enumerate(rg.columns[: len(types)]):
                md = chunk.meta_data
                if md is None or md.encoding_stats is None or md.type != types[c] or chunk.encrypted or chunk.file_path:
                    continue
                counts[r, c] = sum(s.count for s in md.encoding_stats if s.page_type in data_pages)
        _PAGE_COUNT_CACHE.put(self._footer_key, counts)
        return counts

    def page_layout(self, row_group: int, column: int | str) -> ChunkLayout:
        """Where the pages of a column chunk are: OffsetIndex, else a walk over page headers."""
        desc, _chunk, md = self.column_chunk(row_group, column)
        return self._layout(row_group, desc, md)

    def _layout(self, row_group: int, desc: ColumnDescriptor, md: ColumnMetaData) -> ChunkLayout:
        key = (self._footer_key, row_group, desc.index)
        cached = _LAYOUT_CACHE.get(key)
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        where = {"row_group": row_group, "column": desc.name}
        num_rows = self.metadata.row_groups[row_group].num_rows
        start, total = self._chunk_range(md)
        layout = None
        if desc.flat and _DISTRUSTED.get(key) is None:
            oi = self.offset_index(row_group, desc.index)
            if oi is not None and oi.page_locations:
                data_pages = int(self._data_page_counts()[row_group, desc.index])
                layout = _index_layout(
                    oi.page_locations, start, start + total, num_rows, self.source.size, data_pages if data_pages >= 0 else None
                )
        if layout is None:
            # one walk per chunk: a thread wanting a layout being walked waits for it
            with _WALK_LOCKS[hash(key) % len(_WALK_LOCKS)]:
                cached = _LAYOUT_CACHE.get(key)
                if cached is not None:
                    return cached  # type: ignore[no-any-return]
                whole = self._whole_walk(row_group, desc, md, total)
                layout = self._walk_pages(start, total, num_rows, where, whole, self._known_dictionary(row_group, desc))
                _LAYOUT_CACHE.put(key, layout)
            return layout
        _LAYOUT_CACHE.put(key, layout)
        return layout

    def _distrust_offset_index(self, row_group: int, desc: ColumnDescriptor, md: ColumnMetaData) -> ChunkLayout:
        """The chunk's layout from its page headers, after a page its offset index located did
        not match what the index says: that chunk's index is not used again (not for planning,
        nor its column index for pruning, whose entries follow the offset index's pages)."""
        global _LAYOUT_GENERATION
        key = (self._footer_key, row_group, desc.index)
        _DISTRUSTED.put(key, True)
        _LAYOUT_CACHE.drop(key)
        _PAGE_STATS_CACHE.put(key, _NO_PAGE_STATS)
        with _GENERATION_LOCK:
            _LAYOUT_GENERATION += 1
        return self._layout(row_group, desc, md)

    def _walks_headers(self, row_group: int, desc: ColumnDescriptor) -> bool:
        """Whether the chunk's layout is not known yet and will come from its page headers (no
        offset index to take it from)."""
        key = (self._footer_key, row_group, desc.index)
        if _LAYOUT_CACHE.get(key) is not None:
            return False
        chunk = self.metadata.row_groups[row_group].columns[desc.index]
        has_index = chunk.offset_index_offset is not None and bool(chunk.offset_index_length)
        return not (desc.flat and has_index and _DISTRUSTED.get(key) is None)

    def _page_headers(self, row_group: int, desc: ColumnDescriptor, md: ColumnMetaData) -> int:
        """How many page headers a walk of the chunk reads: its data pages as the footer's
        encoding statistics count them (else as many as the usual page size makes of its
        uncompressed size), plus the dictionary page."""
        pages = int(self._data_page_counts()[row_group, desc.index])
        if pages < 0:
            pages = max(1, -(-md.total_uncompressed_size // _TYPICAL_PAGE))
        return pages + (1 if md.chunk_start < md.data_page_offset else 0)

    def _whole_walk(self, row_group: int, desc: ColumnDescriptor, md: ColumnMetaData, total: int) -> bool:
        """Whether to walk the chunk's page headers from one read of the whole chunk: on an
        object store, where that read costs less than the header GETs it replaces (its bytes
        then serve the page reads that follow)."""
        if not self.source.remote or total > _WHOLE_WALK_MAX:
            return False
        return total <= self._page_headers(row_group, desc, md) * _REQUEST_COST_BYTES

    def _known_dictionary(self, row_group: int, desc: ColumnDescriptor) -> tuple[int, int] | None:
        """The chunk's dictionary page where its first header was read already (then a walk
        starts after it, and a whole read of the chunk leaves out the bytes read)."""
        found = _DICTIONARY_AT.get((self._footer_key, row_group, desc.index))
        return None if found is None or found is _NO_DICTIONARY else found  # type: ignore[no-any-return]

    def _keep_fetched(self) -> None:
        """Have the source keep what is prefetched (the read-ahead blocks a scan turns on for
        object stores), for walks outside a scan too; once per source, whichever thread asks."""
        with _KEEP_LOCK:
            self.source.enable_prefetch()

    def _chunk_bytes(self, start: int, total: int) -> np.ndarray:
        """The bytes ``[start, start + total)`` from one request, left with the source's
        read-ahead blocks so that the page reads after the walk do not fetch them again."""
        self._keep_fetched()
        self.source.prefetch([(start, total)], _TOUCHING)
        return np.frombuffer(self.source.read_at(start, total), np.uint8)

    def _prefetch_walks(self, row_group: int, descs: Sequence[ColumnDescriptor]) -> None:
        """Before reading ``descs`` in a row group on an object store: fetch in one go (chunks
        side by side in one request) every chunk whose page headers will be walked from a
        whole read, so that the walks of several columns do not make a request each."""
        if not self.source.remote:
            return
        ranges = []
        for desc in descs:
            if not self._walks_headers(row_group, desc):
                continue
            _, _chunk, md = self.column_chunk(row_group, desc.index)
            start, total = self._chunk_range(md)
            if total > 0 and start + total <= self.source.size and self._whole_walk(row_group, desc, md, total):
                known = self._known_dictionary(row_group, desc)
                skip = known[1] if known is not None and known[0] == start and known[1] < total else 0
                ranges.append((start + skip, total - skip))
        if ranges:
            self._keep_fetched()
            self.source.prefetch(ranges, _TOUCHING)

    def _walk_pages(
        self, start: int, total: int, num_rows: int, where: dict[str, Any], whole: bool = False,
        dictionary: tuple[int, int] | None = None,
    ) -> ChunkLayout:
        """The chunk's layout from its page headers, read one at a time or (``whole``) from one
        read of the chunk; after ``dictionary``, the dictionary page found at its start already."""
        end = start + total
        if end > self.source.size:
            raise self._error(CorruptFileError, "column chunk extends past the end of the file", **where)
        pos = start
        index = 0
        if dictionary is not None and dictionary[0] == start and 0 < dictionary[1] < total:
            pos += dictionary[1]
            index = 1
        else:
            dictionary = None
        chunk = self._chunk_bytes(pos, end - pos) if whole else None
        chunk_start = pos
        pages: list[PageInfo] = []
        row = 0
        while pos < end and row < num_rows:
            header = self._read_page_header(pos, end, where, index, chunk, chunk_start)
            size = header.header_size + header.compressed_page_size
            if pos + size > end:
                raise self._error(CorruptFileError, "page extends past its column chunk", page=index, **where)
            if header.type == PageType.DICTIONARY_PAGE:
                if pages or dictionary is not None:
                    raise self._error(CorruptFileError, "dictionary page after data pages", page=index, **where)
                dictionary = (pos, size)
            elif header.type in (PageType.DATA_PAGE, PageType.DATA_PAGE_V2):
                rows = _page_rows(header)
                pages.append(PageInfo(pos, size, row, rows))
                row += rows
            pos += size
            index += 1
        if row != num_rows:
            raise self._error(
                CorruptFileError, f"pages hold {row} rows, the row group has {num_rows}", **where
            )
        return ChunkLayout(dictionary, tuple(pages), False)

    def _read_page_header(
        self, pos: int, end: int, where: dict[str, Any], index: int, chunk: np.ndarray | None = None, chunk_start: int = 0
    ) -> PageHeader:
        """The page header at ``pos`` (its page ends by ``end``): parsed from ``chunk`` (the
        bytes from ``chunk_start``) when given, else read with a window growing until it parses."""
        if chunk is not None:
            at = pos - chunk_start
            if at >= len(chunk):
                raise self._error(CorruptFileError, "file ends inside the column chunk", page=index, **where)
            try:
                return parse_page_header(chunk, at, min(len(chunk), end - chunk_start))
            except ThriftError as e:
                raise self._error(CorruptFileError, f"corrupt page header: {e}", page=index, **where) from None
        window = min(_HEADER_WINDOW, end - pos)
        while True:
            data = self.source.read_at(pos, window)
            try:
                return parse_page_header(np.frombuffer(data, np.uint8), 0, len(data))
            except ThriftError as e:
                if window < end - pos and window < _MAX_HEADER:
                    window = min(window * 4, end - pos)
                    continue
                raise self._error(CorruptFileError, f"corrupt page header: {e}", page=index, **where) from None

    def _dictionary_location(
        self, row_group: int, desc: ColumnDescriptor, md: ColumnMetaData
    ) -> tuple[tuple[int, int] | None, bool]:
        """``(offset, size)`` of the chunk's dictionary page (None without one), and whether an
        offset index located it. On an object store a chunk without a usable offset index is
        not walked for this: its first page header tells (a read of the dictionary alone may
        rule the row group out, leaving the rest of the chunk unread)."""
        if not self.source.remote or not self._walks_headers(row_group, desc):
            layout = self._layout(row_group, desc, md)
            return layout.dictionary, layout.from_offset_index
        key = (self._footer_key, row_group, desc.index)
        found = _DICTIONARY_AT.get(key)
        if found is None:
            found = self._first_page_dictionary(row_group, desc, md)
            _DICTIONARY_AT.put(key, _NO_DICTIONARY if found is None else found)
        return (None if found is _NO_DICTIONARY else found), False

    def _first_page_dictionary(self, row_group: int, desc: ColumnDescriptor, md: ColumnMetaData) -> tuple[int, int] | None:
        """The chunk's dictionary page from its first page header, fetched with as much of the
        chunk as the footer says the dictionary takes (one request for header and page)."""
        where = {"row_group": row_group, "column": desc.name}
        start, total = self._chunk_range(md)
        end = start + total
        if end > self.source.size:
            raise self._error(CorruptFileError, "column chunk extends past the end of the file", **where)
        if total <= 0:
            return None
        claimed = md.data_page_offset - start
        header = None
        if 0 < claimed <= min(total, _WHOLE_WALK_MAX):
            # header and page in one request, and no byte of the data pages after them
            self._keep_fetched()
            self.source.prefetch([(start, claimed)], _TOUCHING)
            with contextlib.suppress(CorruptFileError):
                header = self._read_page_header(start, start + claimed, where, 0)
        if header is None:  # the footer's offsets are off: the header alone says
            header = self._read_page_header(start, end, where, 0)
        if header.type != PageType.DICTIONARY_PAGE:
            return None
        size = header.header_size + header.compressed_page_size
        if size > total:
            raise self._error(CorruptFileError, "page extends past its column chunk", page=0, **where)
        return start, size

    def read_ahead_range(self, row_group: int, column: int | str, dictionary_only: bool) -> tuple[int, int]:
        """The bytes of a chunk worth fetching ahead to read it as a filter column, known
        without a request: its dictionary page where ``dictionary_only`` and every data page
        is dictionary encoded (the dictionary may rule the row group out), else the chunk."""
        desc, _chunk, md = self.column_chunk(row_group, column)
        start, total = self._chunk_range(md)
        if not (dictionary_only and self.is_fully_dictionary_encoded(row_group, desc.index)):
            return start, total
        key = (self._footer_key, row_group, desc.index)
        layout = _LAYOUT_CACHE.get(key)
        if layout is not None:
            return layout.dictionary or (start, total)  # type: ignore[no-any-return]
        found = _DICTIONARY_AT.get(key)
        if found is not None:
            return (start, total) if found is _NO_DICTIONARY else found  # type: ignore[no-any-return]
        # where the footer says the data pages start (the read of the first header checks it)
        claimed = md.data_page_offset - start
        return (start, claimed) if 0 < claimed <= total else (start, total)

    # ---- reading ------------------------------------------------------------------------

    def read_dictionary(
        self, row_group: int, column: int | str, counters: ReadCounters | None = None, cache: PageCache | None = None
    ) -> pa.Array | None:
        """The chunk's dictionary as an Arrow array of the column type, or None if it has none.
        With a ``cache``, the decoded dictionary is kept there for later reads of the chunk."""
        desc, _, md = self.column_chunk(row_group, column)
        if not desc.flat:
            return None
        location, from_offset_index = self._dictionary_location(row_group, desc, md)
        if location is None:
            return None
        c = counters if counters is not None else self.counters
        where = {"row_group": row_group, "column": desc.name}
        off, size = location
        values = cache.dictionaries.get(off) if cache is not None else None
        if values is None:
            data = self._fetch([(off, size)], c, _Check(row_group, first_page=0))[0]
            try:
                values = self._decode_dictionary(
                    np.frombuffer(data, np.uint8), 0, size, desc, md, c, where, cache, off, from_offset_index
                )
            except _IndexMismatch:
                self._distrust_offset_index(row_group, desc, md)
                return self.read_dictionary(row_group, column, counters, cache)
            except FileError as e:
                raise e.at(file=self.path, page=0, **where) from None
        return to_arrow(desc, Assembled(len(values), None, values=values))

    def read_column(
        self,
        row_group: int,
        column: int | str,
        rows: RowRanges | np.ndarray | Sequence[int] | None = None,
        counters: ReadCounters | None = None,
        cache: PageCache | None = None,
    ) -> pa.Array:
        """Read a column of a row group: all rows, or the rows selected by ``rows``.

        ``rows`` is None, a sorted array of distinct row indices within the row group, or a
        :class:`RowRanges`. Values equal pyarrow's for the same rows, nulls included. Pages
        found in ``cache`` are not decompressed again.
        """
        desc = self.column(column)
        if not desc.flat:
            num_rows = self.metadata.row_groups[row_group].num_rows
            return self._read_nested(row_group, desc, _as_ranges(rows, num_rows))
        if rows is not None and self._fused_shape(desc) is not None:
            num_rows = self.metadata.row_groups[row_group].num_rows
            uncached = cache is None or not (cache.dictionaries or cache.bodies)
            if not isinstance(rows, RowRanges) and uncached:
                # row indices, the library's own form: checked by the planning kernel
                idx = _index_array(rows)
                if 0 < len(idx) < num_rows and fused.takes(len(idx), num_rows):
                    arr = self._read_fused_indices(row_group, desc, idx, num_rows, counters)
                    if arr is not None:
                        return arr
            selection = _as_ranges(rows, num_rows)
            if selection is not None and 0 < selection.row_count < num_rows and fused.takes(selection.row_count, num_rows):
                if uncached:
                    arr = self._read_fused_one(row_group, desc, selection, counters)
                    if arr is not None:
                        return arr
                return self._read_selection(row_group, [desc], selection, num_rows, counters, cache)[0]
            rows = selection
        chunk = self.read_assembled(row_group, column, rows, counters, cache=cache, values=True)
        return self.to_arrow(row_group, desc, chunk, counters)

    def to_arrow(
        self, row_group: int, desc: ColumnDescriptor, chunk: Assembled, counters: ReadCounters | None = None
    ) -> pa.Array:
        """Convert an assembled chunk of a flat column to its Arrow array."""
        c = counters if counters is not None else self.counters
        t0 = time.perf_counter()
        try:
            arr = to_arrow(desc, chunk)
        except FileError as e:
            raise e.at(file=self.path, row_group=row_group, column=desc.name) from None
        except (ValueError, IndexError, TypeError, OverflowError) as e:
            raise CorruptFileError(
                f"cannot convert column chunk: {type(e).__name__}: {e}", file=self.path, row_group=row_group, column=desc.name
            ) from e
        c.decode_seconds += time.perf_counter() - t0
        return arr

    def read_assembled(
        self,
        row_group: int,
        column: int | str,
        rows: RowRanges | np.ndarray | Sequence[int] | None = None,
        counters: ReadCounters | None = None,
        matcher: BytesMatcher | None = None,
        cache: PageCache | None = None,
        values: bool = False,
    ) -> Assembled:
        """Decode a flat column's selected rows without building the Arrow array: when every
        page is dictionary encoded the result holds the codes and the dictionary, so predicates
        can be evaluated once per dictionary entry. With a ``matcher`` (byte-array columns) the
        values are a uint8 mask of matches instead, computed on the encoded pages; with a
        ``cache`` too, the pages holding a match are kept there for a later read. ``values``:
        the caller wants the values, not codes (a read of every row of a column without nulls
        then looks its codes up as it unpacks them)."""
        desc, _chunk, md = self.column_chunk(row_group, column)
        if not desc.flat:
            raise UnsupportedFeatureError("nested columns are read with read_column", file=self.path, column=desc.name)
        num_rows = self.metadata.row_groups[row_group].num_rows
        selection = _as_ranges(rows, num_rows)
        c = counters if counters is not None else self.counters
        where: dict[str, Any] = {"row_group": row_group, "column": desc.name}
        try:
            if md.codec != 0:
                codecs.check_codec(md.codec)
            if selection is not None and selection.is_empty:
                return Assembled(0, None, values=_empty(desc))
            if matcher is not None and desc.physical_type != 6:
                raise UnsupportedFeatureError("byte matching needs a BYTE_ARRAY column")
            if selection is None or selection.row_count == num_rows:
                return self._read_full(row_group, desc, md, num_rows, c, where, matcher, cache, values)
            return self._read_selected(row_group, desc, md, selection, c, where, matcher, cache)
        except (LazyScanError, ValueError, IndexError, TypeError, OverflowError, MemoryError) as e:
            raise self._located(e, where) from (None if isinstance(e, LazyScanError) else e)

    def dictionary_rows(
        self,
        row_group: int,
        column: int | str,
        entry_passes: np.ndarray,
        null_passes: bool,
        counters: ReadCounters | None = None,
        cache: PageCache | None = None,
    ) -> tuple[np.ndarray, Assembled] | None:
        """The rows of a fully dictionary-encoded flat chunk whose dictionary entry passes
        (``entry_passes``, one flag per entry; NULL rows when ``null_passes``), and those rows as
        codes with the dictionary, read in two kernel calls. Needs the dictionary decoded into
        ``cache`` (:meth:`read_dictionary`); None when this path does not read the chunk (the
        general path then reads it, or says what is wrong)."""
        if cache is None:
            return None
        desc, _chunk, md = self.column_chunk(row_group, column)
        if self._fused_shape(desc) is None:
            return None
        where = {"row_group": row_group, "column": desc.name}
        c = counters if counters is not None else self.counters
        try:
            if md.codec != 0:
                codecs.check_codec(md.codec)
            start, total = self._chunk_range(md)
            dictionary = cache.dictionaries.get(start)
            if dictionary is None or len(entry_passes) != len(dictionary):
                return None
            first = self._first_data_page(row_group, desc, md, start, total)
            if first is None:
                return None
            if start + total > self.source.size:
                raise CorruptFileError("column chunk extends past the end of the file")
            rows_held = self.metadata.row_groups[row_group].num_rows
            buf = np.frombuffer(
                self._fetch([(first, total - (first - start))], c, _Check(row_group, rows_held, first_page=1))[0], dtype=np.uint8
            )
        except (LazyScanError, ValueError, IndexError, TypeError, OverflowError, MemoryError) as e:
            raise self._located(e, where) from (None if isinstance(e, LazyScanError) else e)
        num_rows = self.metadata.row_groups[row_group].num_rows
        found = fused_match.match_dictionary_rows(
            buf, desc, num_rows, md.codec, len(dictionary), entry_passes, null_passes, c, self.options.max_page_size,
            self._v2_always_compressed,
        )
        if found is None:
            return None
        rows, codes, valid = found
        every = len(codes) == len(rows)  # codes are kept for the rows holding a value only
        return rows, Assembled(len(rows), None if every else valid, codes=codes, dictionary=dictionary)

    def read_row_group(
        self, row_group: int, columns: Sequence[str] | None = None, rows: RowRanges | np.ndarray | None = None
    ) -> pa.Table:
        """Read top-level columns of a row group (all rows or a selection) as a table."""
        schema = self.arrow_schema
        names = list(columns) if columns is not None else schema.names
        arrays = []
        fields = []
        for name in names:
            idx = schema.get_field_index(name)
            if idx < 0:
                raise KeyError(f"no column {name!r} in {self.path!r}")
            leaves = self.schema.field_leaves[idx]
            if leaves:
                leaf = self.schema.columns[leaves[0]]
                arrays.append(self.read_column(row_group, leaf.index if leaf.flat else leaf.name, rows))
            else:
                # a group without leaves stores nothing: every value is NULL
                arrays.append(pa.nulls(self._selection_size(row_group, rows), schema.field(idx).type))
            fields.append(schema.field(idx))
        if not arrays:
            n = self._selection_size(row_group, rows)
            return pa.table({}).append_column("_", pa.nulls(n)).drop_columns(["_"]) if n else pa.table({})
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))

    def _selection_size(self, row_group: int, rows: RowRanges | np.ndarray | None) -> int:
        num_rows = self.metadata.row_groups[row_group].num_rows
        sel = _as_ranges(rows, num_rows)
        return num_rows if sel is None else sel.row_count

    # ---- internals ------------------------------------------------------------------------

    def _fetch(self, ranges: list[tuple[int, int]], c: ReadCounters, check: _Check | None = None) -> list[memoryview]:
        """The bytes of ``ranges``; with ``check`` (what they hold), their pages' checksums
        verified (:meth:`_verified_views`) when the reader options ask for it."""
        self._check_ranges(ranges)
        t0 = time.perf_counter()
        opts = self.read_options
        out, nbytes, requests = self.source.read_ranges_counted(ranges, opts)
        c.io_seconds += time.perf_counter() - t0
        c.bytes_fetched += nbytes
        c.requests += requests
        for (_, length), view in zip(ranges, out):
            if len(view) != length:
                raise CorruptFileError("file ends inside a page")
        if check is not None and self.options.verify_checksums:
            out = self._verified_views(ranges, out, check, c)
        return out

    def _verified_views(
        self, ranges: list[tuple[int, int]], views: list[memoryview], check: _Check, c: ReadCounters
    ) -> list[memoryview]:
        """``views`` (the bytes of ``ranges``) with the pages whose checksum does not match
        fetched again; CorruptFileError when a page's bytes do not match twice."""
        limits = np.array([check.walk_rows], np.int64)
        start = np.zeros(1, np.int64)
        out = views
        for r, ((offset, _), view) in enumerate(zip(ranges, views)):
            buf = np.frombuffer(view, np.uint8)
            bad = checksums.mismatches(buf, start, np.array([len(buf)], np.int64), limits)
            if not bad:
                continue
            fixed = bytearray(view)
            for m in bad:
                fixed[m.at : m.at + m.size] = self._page_fetched_again(offset + m.at, m, check, c).data
            out = list(out) if out is views else out
            out[r] = memoryview(fixed)
        return out

    def _page_fetched_again(self, offset: int, m: checksums.Mismatch, check: _Check, c: ReadCounters) -> np.ndarray:
        """The page at ``offset`` whose checksum did not match as fetched (``m``), read again
        from the source itself (not from bytes fetched ahead): a transfer may have damaged it.
        CorruptFileError naming the page when its bytes do not match again."""
        t0 = time.perf_counter()
        # one request of at least the source's smallest (a store's error body must fit)
        start, end = self.source._widened(offset, offset + m.size)
        try:
            wide = self.source._read_counted(start, end - start)
        finally:
            c.io_seconds += time.perf_counter() - t0
        c.bytes_fetched += len(wide)
        c.requests += 1
        c.pages_refetched += 1
        data = np.frombuffer(wide, np.uint8)[offset - start : offset - start + m.size]
        ok, stored, computed = checksums.page_matches(data)
        if ok and len(data) == m.size:
            return data
        if not stored and not computed:
            stored, computed = m.stored, m.computed
        column, page = self._page_at(check.row_group, offset)
        if check.first_page is not None:
            page = check.first_page + m.ordinal
        raise CorruptFileError(
            checksums.describe(stored, computed), file=self.path, row_group=check.row_group, column=column, page=page
        )

    def _page_at(self, row_group: int, offset: int) -> tuple[str | None, int | None]:
        """The column whose chunk holds the page at file offset ``offset`` and that page's
        number in the chunk (None where the chunk's layout does not list it)."""
        best: tuple[int, ColumnDescriptor, ColumnMetaData] | None = None
        for desc, chunk in zip(self.schema.columns, self.metadata.row_groups[row_group].columns):
            md = chunk.meta_data
            if md is None:
                continue
            start, total = self._chunk_range(md)
            if start <= offset < start + total and (best is None or start > best[0]):
                best = (start, desc, md)
        if best is None:
            return None, None
        _, desc, md = best
        try:
            layout = self._layout(row_group, desc, md)
        except (LazyScanError, ValueError):
            return desc.name, None
        if layout.dictionary is not None and layout.dictionary[0] == offset:
            return desc.name, 0
        i = int(np.searchsorted(layout.page_offsets, offset))
        if i < len(layout.pages) and layout.pages[i].offset == offset:
            return desc.name, i + (layout.dictionary is not None)
        return desc.name, None

    @property
    def read_options(self) -> ReadOptions:
        """How this file's reads coalesce ranges: the reader option, else the source's default."""
        return self.options.read or self._default_read

    def source_default_read_options(self) -> ReadOptions:
        from lazyscan.io.source import LocalSource

        if isinstance(self.source, LocalSource):
            return ReadOptions(coalesce_gap=0, coalesce_max=64 * 1024 * 1024)
        return ReadOptions(coalesce_gap=1024 * 1024, coalesce_max=64 * 1024 * 1024)

    def _decompress(
        self, codec: int, body: memoryview | np.ndarray, size: int, c: ReadCounters
    ) -> np.ndarray:
        t0 = time.perf_counter()
        out = codecs.decompress(codec, body, size, self.options.max_page_size)
        c.decompress_seconds += time.perf_counter() - t0
        if codec != 0:
            c.bytes_decompressed += size
        return out

    def _decode_dictionary(
        self, buf: np.ndarray, pos: int, end: int, desc: ColumnDescriptor, md: ColumnMetaData,
        c: ReadCounters, where: dict[str, Any], cache: PageCache | None = None, offset: int = -1,
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
        mismatch = _IndexMismatch if indexed else CorruptFileError
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
        body = self._decompress(md.codec, buf[body_start : body_start + header.compressed_page_size], header.uncompressed_page_size, c)
        t0 = time.perf_counter()
        values = decode_dictionary_page(body, desc, header.dictionary_page_header.num_values)
        c.decode_seconds += time.perf_counter() - t0
        c.values_decoded += header.dictionary_page_header.num_values
        return values

    def _decode_page(
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
                body = self._decompress(md.codec, buf[body_start:body_end], header.uncompressed_page_size, c)
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
            elif md.codec != 0 and (h2.is_compressed or self._v2_always_compressed or len(values_raw) != vsize):
                # values said to be stored as they are, yet of another size than stored, can only
                # be compressed: old parquet-cpp wrote them so (ARROW-17100)
                vbuf = self._decompress(md.codec, values_raw, vsize, c)
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
        if cache is not None and cached is None and matcher is not None and np.any(page.values):
            if header.type == PageType.DATA_PAGE:
                cache.bodies[offset] = body
                cache.headers[offset] = header
            else:
                cache.bodies[offset] = vbuf
        return page

    def _read_full(
        self, row_group: int, desc: ColumnDescriptor, md: ColumnMetaData, num_rows: int, c: ReadCounters,
        where: dict[str, Any],
        matcher: BytesMatcher | None = None,
        cache: PageCache | None = None,
        values: bool = False,
    ) -> Assembled:
        start, total = self._chunk_range(md)
        if start + total > self.source.size:
            raise CorruptFileError("column chunk extends past the end of the file")
        dictionary = None
        index = 0
        # the data pages fetched from where the page layout says they start (the dictionary
        # was decoded already): a layout from an offset index may say so wrongly
        shortcut = False
        if cache is not None and cache.dictionaries:
            # the dictionary was decoded already (a predicate on it): fetch the data pages only
            dictionary = cache.dictionaries.get(start)
            if dictionary is not None:
                first = self._first_data_page(row_group, desc, md, start, total)
                if first is not None:
                    total -= first - start
                    start = first
                    index = 1
                    shortcut = True
                else:
                    dictionary = None
        buf = np.frombuffer(self._fetch([(start, total)], c, _Check(row_group, num_rows, index))[0], dtype=np.uint8)
        if matcher is not None and dictionary is None and self._fused_shape(desc) is not None:
            mask = fused_match.match_full(
                buf, desc, num_rows, md.codec, matcher, c, self.options.max_page_size, cache, start, self._v2_always_compressed
            )
            if mask is not None:
                return Assembled(num_rows, None, values=mask)
        pos = 0
        end = len(buf)
        dict_mask = _match_dictionary(matcher, dictionary)
        pages: list[PageValues] = []
        rows = 0
        # the values straight from the codes, for a caller that wants values of a column
        # without nulls: no array of codes, no separate look-up (``out`` once a dictionary of
        # fixed-width values is known)
        direct = values and matcher is None and (cache is None or not cache.bodies)
        out: np.ndarray | None = None
        while pos < end and rows < num_rows:
            try:
                header = _parse_header(buf, pos, end)
                body_start = pos + header.header_size
                if header.type == PageType.DICTIONARY_PAGE:
                    if pages or dictionary is not None:
                        raise CorruptFileError("dictionary page after data pages")
                    dictionary = self._decode_dictionary(buf, pos, end, desc, md, c, where, cache, start + pos)
                    dict_mask = _match_dictionary(matcher, dictionary)
                elif header.type in (PageType.DATA_PAGE, PageType.DATA_PAGE_V2):
                    if direct and out is None and not pages and _looked_up(dictionary, desc):
                        assert isinstance(dictionary, np.ndarray)
                        out = buffers.empty(num_rows, dictionary.dtype)
                    if out is not None and self._page_looked_up(header, buf, body_start, desc, md, dictionary, out, rows, c):
                        rows += header.data_page_header.num_values  # type: ignore[union-attr]
                    else:
                        page = self._decode_page(
                            header, buf, body_start, desc, md, None, dictionary, c, matcher, dict_mask, cache, start + pos
                        )
                        if out is not None and page.valid is not None:
                            # a page with nulls: the values are spread by the general assembly
                            if rows:
                                return self._read_full(row_group, desc, md, num_rows, c, where, matcher, cache)
                            out = None
                            direct = False
                        if out is not None:  # a page the look-up does not take (PLAIN after a dictionary)
                            if rows + page.num_rows > num_rows:
                                raise CorruptFileError(f"pages hold more than the row group's {num_rows} rows")
                            part = page.values if not page.is_codes else dictionary[page.values]  # type: ignore[index]
                            out[rows : rows + page.num_rows] = part
                        else:
                            pages.append(page)
                        rows += page.num_rows
                    c.pages_fetched += 1
            except FileError as e:
                if shortcut and isinstance(e, CorruptFileError):
                    return self._read_full_again(row_group, desc, md, num_rows, c, where, matcher, cache, values, e, index)
                raise e.at(page=index) from None
            pos = body_start + header.compressed_page_size
            index += 1
        if rows != num_rows:
            short = CorruptFileError(f"pages hold {rows} rows, the row group has {num_rows}")
            if shortcut:
                return self._read_full_again(row_group, desc, md, num_rows, c, where, matcher, cache, values, short, None)
            raise short
        if out is not None:
            return Assembled(num_rows, None, values=out)
        if not pages:
            return Assembled(0, None, values=_empty(desc))
        return assemble(desc, pages, dictionary)

    def _read_full_again(
        self, row_group: int, desc: ColumnDescriptor, md: ColumnMetaData, num_rows: int, c: ReadCounters,
        where: dict[str, Any], matcher: BytesMatcher | None, cache: PageCache | None, values: bool,
        error: CorruptFileError, page: int | None,
    ) -> Assembled:
        """:meth:`_read_full` from the chunk's page headers, after a read that started at the
        first data page an offset index gave failed with ``error`` (else ``error`` stands)."""
        if not self._layout(row_group, desc, md).from_offset_index:
            raise error.at(page=page) if page is not None else error
        self._distrust_offset_index(row_group, desc, md)
        return self._read_full(row_group, desc, md, num_rows, c, where, matcher, cache, values)

    def _page_looked_up(
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
        body = self._decompress(md.codec, buf[body_start:body_end], header.uncompressed_page_size, c)
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
        got = K.rle_bp_decode_dict_values(body, pos + 1, len(body), int(body[pos]), n, dictionary, out[at : at + n])
        c.decode_seconds += time.perf_counter() - t0
        if got != n:
            return False
        c.values_decoded += n
        return True

    def _first_data_page(
        self, row_group: int, desc: ColumnDescriptor, md: ColumnMetaData, start: int, total: int
    ) -> int | None:
        """Where the data pages of the chunk at ``[start, start + total)`` begin, when it starts
        with its dictionary page (a read with the dictionary decoded fetches from there)."""
        location, _ = self._dictionary_location(row_group, desc, md)
        if location is None or location[0] != start:
            return None
        first = start + location[1]
        return first if 0 < first - start < total else None

    def _checked_layout(self, row_group: int, desc: ColumnDescriptor, md: ColumnMetaData) -> ChunkLayout:
        """The chunk's page layout, once its codec is known to be readable."""
        if md.codec != 0:
            codecs.check_codec(md.codec)
        return self._layout(row_group, desc, md)

    def _plan_selected(
        self, row_group: int, desc: ColumnDescriptor, md: ColumnMetaData, rows: _SelectedRows, cache: PageCache | None
    ) -> _ChunkPlan:
        """Which pages of a chunk hold selected rows, and the byte ranges to fetch for them
        (the dictionary page first, unless ``cache`` has it decoded already)."""
        layout = self._checked_layout(row_group, desc, md)
        npages = len(layout.pages)
        plan = np.empty((3, npages), np.int64)
        count = K.plan_pages(rows.starts, rows.ends, rows.idx, layout.page_starts, layout.page_ends, plan[0], plan[1], plan[2])
        if count < 0:
            raise ValueError("inconsistent page plan")
        needed, los, his = plan[:, :count].tolist()
        pages = layout.pages
        cached: frozenset[int] = frozenset()
        if cache is not None and cache.headers:
            cached = frozenset(i for i in needed if pages[i].offset in cache.headers)
        ranges = [(pages[i].offset, pages[i].size) for i in needed if i not in cached]
        dictionary = None
        if layout.dictionary is not None and cache is not None:
            dictionary = cache.dictionaries.get(layout.dictionary[0])
        fetch_dictionary = layout.dictionary is not None and dictionary is None
        if fetch_dictionary:
            assert layout.dictionary is not None
            ranges.insert(0, layout.dictionary)
        return _ChunkPlan(desc, md, layout, needed, los, his, dictionary, fetch_dictionary, ranges, npages - count, cached)

    def _decode_selected(
        self,
        plan: _ChunkPlan,
        views: Sequence[memoryview],
        rows: _SelectedRows,
        c: ReadCounters,
        where: dict[str, Any],
        matcher: BytesMatcher | None = None,
        cache: PageCache | None = None,
    ) -> Assembled:
        """Decode the selected rows of a chunk from the pages fetched for ``plan``."""
        desc, md, layout = plan.desc, plan.md, plan.layout
        # what does not match the page index comes from an offset index that located a page
        # wrongly when the layout is the index's: the caller reads the chunk's headers instead
        mismatch = _IndexMismatch if layout.from_offset_index else CorruptFileError
        dictionary = plan.dictionary
        if plan.fetch_dictionary:
            assert layout.dictionary is not None
            dview = np.frombuffer(views[0], dtype=np.uint8)
            try:
                dictionary = self._decode_dictionary(
                    dview, 0, len(dview), desc, md, c, where, cache, layout.dictionary[0], layout.from_offset_index
                )
            except FileError as e:
                raise e.at(page=0) from None
            views = views[1:]
        dict_mask = _match_dictionary(matcher, dictionary)
        pages: list[PageValues] = []
        page_base = 1 if layout.dictionary is not None else 0
        idx = rows.idx
        los, his = plan.los, plan.his
        fetched = iter(views)
        for k, i in enumerate(plan.needed):
            info = layout.pages[i]
            sel = None if his[k] - los[k] == info.num_rows else idx[los[k] : his[k]] - info.first_row
            try:
                if i in plan.cached:
                    assert cache is not None
                    buf = _NO_BYTES
                    header = cache.headers[info.offset]
                else:
                    buf = np.frombuffer(next(fetched), dtype=np.uint8)
                    try:
                        header = parse_page_header(buf, 0, len(buf))
                    except ThriftError as e:
                        raise mismatch(f"corrupt page header: {e}") from None
                    if header.type not in (PageType.DATA_PAGE, PageType.DATA_PAGE_V2):
                        raise mismatch("page index points at a page that is not a data page")
                    if header.header_size + header.compressed_page_size > len(buf):
                        raise mismatch("page extends past its recorded size")
                    if _page_rows(header) != info.num_rows:
                        raise mismatch(f"page holds {_page_rows(header)} rows, the page index says {info.num_rows}")
                page = self._decode_page(
                    header, buf, header.header_size, desc, md, sel, dictionary, c, matcher, dict_mask, cache, info.offset
                )
                if sel is None and page.num_rows != info.num_rows:
                    raise CorruptFileError(f"page holds {page.num_rows} rows, the page index says {info.num_rows}")
            except FileError as e:
                raise e.at(page=int(i) + page_base) from None
            pages.append(page)
        c.pages_fetched += len(pages)
        c.pages_skipped += plan.pages_skipped
        chunk = assemble(desc, pages, dictionary) if pages else Assembled(0, None, values=_empty(desc))
        if rows.positions is not None:
            chunk = chunk.take(rows.positions)
        return chunk

    def _selected_rows(self, selection: RowRanges) -> _SelectedRows:
        threshold = self.options.materialization_threshold
        decode_set = selection.merge_close(threshold) if threshold > 0 else selection
        positions = decode_set.positions_in(selection) if decode_set is not selection else None
        return _SelectedRows(decode_set.starts, decode_set.ends, decode_set.to_indices(), positions)

    def _read_selected(
        self,
        row_group: int,
        desc: ColumnDescriptor,
        md: ColumnMetaData,
        selection: RowRanges,
        c: ReadCounters,
        where: dict[str, Any],
        matcher: BytesMatcher | None = None,
        cache: PageCache | None = None,
    ) -> Assembled:
        rows = self._selected_rows(selection)
        plan = self._plan_selected(row_group, desc, md, rows, cache)
        views = self._fetch(plan.ranges, c, _Check(row_group))
        try:
            return self._decode_selected(plan, views, rows, c, where, matcher, cache)
        except _IndexMismatch:
            self._distrust_offset_index(row_group, desc, md)
        return self._read_selected(row_group, desc, md, selection, c, where, matcher, cache)

    def read_columns(
        self,
        row_group: int,
        columns: Sequence[int | str],
        rows: RowRanges | np.ndarray | Sequence[int] | None = None,
        counters: ReadCounters | None = None,
        cache: PageCache | None = None,
    ) -> list[pa.Array]:
        """Read several columns of one row group for one row selection, as :meth:`read_column`
        would one by one, in one pass: the selection is converted once, the pages every column
        needs (dictionary pages included) are fetched in one coalesced request list, then each
        column is decoded from them."""
        num_rows = self.metadata.row_groups[row_group].num_rows
        selection = _as_ranges(rows, num_rows)
        descs = [self.column(col) for col in columns]
        if selection is None or selection.row_count == num_rows or selection.is_empty:
            return [self.read_column(row_group, d.index, selection, counters, cache) for d in descs]
        return self._read_selection(row_group, descs, selection, num_rows, counters, cache)

    def _read_selection(
        self, row_group: int, descs: list[ColumnDescriptor], selection: RowRanges, num_rows: int,
        counters: ReadCounters | None, cache: PageCache | None,
    ) -> list[pa.Array]:
        """:meth:`read_columns` of a selection of some but not all rows."""
        c = counters if counters is not None else self.counters
        self._prefetch_walks(row_group, descs)
        # the fused path decodes exactly the selected rows: its plans skip the merging
        exact_rows = _SelectedRows(selection.starts, selection.ends, selection.to_indices(), None)
        group: fused.Group | None = None
        gplan: fused.GroupPlan | None = None
        ranges: list[Any] = []
        fused_at: dict[int, int] = {}  # position in ``columns`` -> member of the group
        if fused.takes(selection.row_count, num_rows):
            group = self._fused_group(row_group, descs)
        if group is not None:
            status = np.zeros(len(group.members), np.int64)  # fused.OK
            if cache is not None and (cache.dictionaries or cache.bodies):
                for k, layout in enumerate(group.layouts):
                    if self._cached_pages(cache, layout):
                        status[k] = fused.GENERAL  # a predicate decoded some of it already: reuse that
            try:
                gplan = fused.plan(group, exact_rows.starts, exact_rows.ends, exact_rows.idx, status, self.source.size)
            except fused.PlanError as e:
                desc = descs[group.members[e.member]]
                err: Exception = e if e.reason == fused.PLAN_INCONSISTENT else CorruptFileError(str(e))
                raise self._located(err, {"row_group": row_group, "column": desc.name}) from None
            ranges = gplan.ranges()
            fused_at = {pos: k for k, (pos, st) in enumerate(zip(group.members, status.tolist())) if st == fused.OK}
        sel_rows: _SelectedRows | None = None
        plans: list[_ChunkPlan | None] = [None] * len(descs)
        for pos, desc in enumerate(descs):
            if not desc.flat or pos in fused_at:
                continue
            _, _chunk, md = self.column_chunk(row_group, desc.index)
            try:
                if sel_rows is None:
                    sel_rows = self._selected_rows(selection)
                plan = plans[pos] = self._plan_selected(row_group, desc, md, sel_rows, cache)
                self._check_ranges(plan.ranges)
            except (LazyScanError, ValueError) as e:
                raise self._located(e, {"row_group": row_group, "column": desc.name}) from None
            ranges += plan.ranges
        try:
            buf, at_list = self._fetch_into(ranges, c, _Check(row_group)) if ranges else (np.empty(0, np.uint8), [])
        except FileError as e:
            raise e.at(file=self.path, row_group=row_group) from None
        out: list[pa.Array | None] = [None] * len(descs)
        n_fused = 0
        if group is not None and gplan is not None and fused_at:
            n_fused = gplan.n_ranges
            at = np.array(at_list[:n_fused], np.int64)
            arrays = fused.read_group(
                group, gplan, buf, at, exact_rows.idx, c, self.options.max_page_size, self.options.partial_decompression
            )
            for pos, k in fused_at.items():
                arr = arrays[k]
                if arr is None:
                    # the general path reads it, or says precisely what is wrong
                    md = group.mds[k]
                    plan = self._plan_selected(row_group, descs[pos], md, exact_rows, None)
                    first = int(gplan.col_rows[k, 0])
                    arr = self._read_planned(row_group, plan, buf, at_list[first:], exact_rows, c, cache)
                out[pos] = arr
        at_general = at_list[n_fused:]
        for pos, desc in enumerate(descs):
            if pos in fused_at:
                continue
            plan = plans[pos]
            if plan is None:
                out[pos] = self._read_nested(row_group, desc, selection)
                continue
            assert sel_rows is not None
            out[pos] = self._read_planned(row_group, plan, buf, at_general, sel_rows, c, cache)
            at_general = at_general[len(plan.ranges) :]
        return out  # type: ignore[return-value]

    def _read_fused_one(
        self, row_group: int, desc: ColumnDescriptor, selection: RowRanges, counters: ReadCounters | None
    ) -> pa.Array | None:
        """:meth:`_read_selection` of one column on the fused path, with none of its
        bookkeeping for several columns and two paths; None when the general path must read it
        (which then also reports whatever is wrong)."""
        group = self._fused_group(row_group, [desc])
        if group is None:
            return None
        idx = selection.to_indices()
        try:
            gplan = fused.plan(group, selection.starts, selection.ends, idx, None, self.source.size)
        except fused.PlanError:
            return None
        return self._read_fused_planned(row_group, group, gplan, idx, counters)

    def _read_fused_indices(
        self, row_group: int, desc: ColumnDescriptor, idx: np.ndarray, num_rows: int, counters: ReadCounters | None
    ) -> pa.Array | None:
        """:meth:`_read_fused_one` of the rows ``idx`` (read-only contiguous int64, as
        :func:`_index_array` makes them), planned from the indices in one kernel call."""
        group = self._fused_group(row_group, [desc])
        if group is None:
            return None
        try:
            gplan = fused.plan_indices(group, idx, num_rows, self.source.size)
        except fused.PlanError:
            return None
        return self._read_fused_planned(row_group, group, gplan, idx, counters)

    def _read_fused_planned(
        self, row_group: int, group: fused.Group, gplan: fused.GroupPlan, idx: np.ndarray, counters: ReadCounters | None
    ) -> pa.Array | None:
        """Fetch the pages ``gplan`` needs and decode the one member of ``group`` from them."""
        c = counters if counters is not None else self.counters
        try:
            buf, at = self._fetch_into(gplan.ranges(), c, _Check(row_group))
        except FileError as e:
            raise e.at(file=self.path, row_group=row_group) from None
        return fused.read_group(
            group, gplan, buf, np.array(at, np.int64), idx, c, self.options.max_page_size, self.options.partial_decompression
        )[0]

    def _read_planned(
        self, row_group: int, plan: _ChunkPlan, buf: np.ndarray, at: list[int], rows: _SelectedRows, c: ReadCounters,
        cache: PageCache | None,
    ) -> pa.Array:
        """Decode a chunk whose planned ranges were fetched into ``buf`` (the ``i``-th at ``at[i]``)."""
        views = [buf[a : a + length] for a, (_, length) in zip(at, plan.ranges)]
        where = {"row_group": row_group, "column": plan.desc.name}
        try:
            try:
                chunk = self._decode_selected(plan, views, rows, c, where, cache=cache)
            except _IndexMismatch:
                self._distrust_offset_index(row_group, plan.desc, plan.md)
                plan = self._plan_selected(row_group, plan.desc, plan.md, rows, cache)
                chunk = self._decode_selected(plan, self._fetch(plan.ranges, c, _Check(row_group)), rows, c, where, cache=cache)
        except (LazyScanError, ValueError, IndexError, TypeError, OverflowError, MemoryError) as e:
            raise self._located(e, where) from (None if isinstance(e, LazyScanError) else e)
        return self.to_arrow(row_group, plan.desc, chunk, c)

    def _fused_group(self, row_group: int, descs: list[ColumnDescriptor]) -> fused.Group | None:
        """The columns of ``descs`` the fused path reads in this row group (cached)."""
        key = (self._footer_key, row_group, tuple(d.index for d in descs), _LAYOUT_GENERATION)
        cached = _GROUP_CACHE.get(key)
        if cached is not None:
            return None if cached is _NO_GROUP else cached  # type: ignore[no-any-return]
        members, shapes, layouts, max_defs, codec_ids, mds = [], [], [], [], [], []
        for pos, desc in enumerate(descs):
            shape = self._fused_shape(desc)
            if shape is None:
                continue
            _, _chunk, md = self.column_chunk(row_group, desc.index)
            try:
                layout = self._checked_layout(row_group, desc, md)
            except (LazyScanError, ValueError) as e:
                raise self._located(e, {"row_group": row_group, "column": desc.name}) from None
            members.append(pos)
            shapes.append(shape)
            layouts.append(layout)
            max_defs.append(desc.max_definition_level)
            codec_ids.append(md.codec)
            mds.append(md)
        g = fused.group(members, shapes, layouts, max_defs, codec_ids, mds, self._v2_always_compressed) if members else None
        _GROUP_CACHE.put(key, _NO_GROUP if g is None else g)
        return g

    @staticmethod
    def _cached_pages(cache: PageCache, layout: ChunkLayout) -> bool:
        """Whether ``cache`` holds the chunk's dictionary or some of its page bodies."""
        if layout.dictionary is not None and layout.dictionary[0] in cache.dictionaries:
            return True
        return bool(cache.bodies) and any(p.offset in cache.bodies for p in layout.pages)

    def _fused_shape(self, desc: ColumnDescriptor) -> fused.Shape | None:
        try:
            return self._shapes[desc.index]
        except KeyError:
            shape = self._shapes[desc.index] = fused.shape_of(desc)
            return shape

    def _fetch_into(
        self, ranges: list[tuple[int, int]], c: ReadCounters, check: _Check | None = None
    ) -> tuple[np.ndarray, list[int]]:
        """:meth:`_fetch` into one array: (the array, where each range starts in it). The
        callers have checked that every range lies inside the file."""
        t0 = time.perf_counter()
        opts = self.read_options
        try:
            buf, at, nbytes, requests = self.source.read_ranges_into(ranges, opts)
        except ShortReadError:
            raise CorruptFileError("file ends inside a page") from None
        c.io_seconds += time.perf_counter() - t0
        c.bytes_fetched += nbytes
        c.requests += requests
        if check is not None and self.options.verify_checksums and ranges:
            starts = np.array(at, np.int64)
            ends = starts + np.array([length for _, length in ranges], np.int64)
            limits = np.full(len(ranges), check.walk_rows, np.int64)
            for m in checksums.mismatches(buf, starts, ends, limits):
                good = self._page_fetched_again(ranges[m.range][0] + m.at - at[m.range], m, check, c)
                if not buf.flags.writeable:
                    buf = buf.copy()
                buf[m.at : m.at + m.size] = good
        return buf, at

    def _check_ranges(self, ranges: list[tuple[int, int]]) -> None:
        size = self.source.size
        for off, length in ranges:
            if off < 0 or length < 0 or off + length > size:
                raise CorruptFileError(f"byte range {off}+{length} lies outside the file")

    def _located(self, e: Exception, where: dict[str, Any]) -> LazyScanError:
        """``e`` as a lazyscan error that names the file and ``where``."""
        if isinstance(e, FileError):
            return e.at(file=self.path, **where)
        if isinstance(e, LazyScanError):
            return e
        return CorruptFileError(f"cannot decode column chunk: {type(e).__name__}: {e}", file=self.path, **where)

    def _pyarrow_nested_fields(self) -> dict[str, pa.Field]:
        """pyarrow's fields of the top-level columns (types and nullability of nested ones;
        INT96 as microseconds, as lazyscan reads it)."""
        if self._nested_fields is None:
            try:
                schema = self._pyarrow_parquet_file().schema_arrow
            except (OSError, pa.ArrowException) as e:
                raise CorruptFileError(f"nested columns' Arrow types cannot be derived: {e}", file=self.path) from None
            self._nested_fields = {f.name: f for f in schema}
        return self._nested_fields

    def _pyarrow_parquet_file(self) -> Any:
        import pyarrow.parquet as pq

        return pq.ParquetFile(
            self._pyarrow_file(), coerce_int96_timestamp_unit="us", page_checksum_verification=self.options.verify_checksums
        )

    def _pyarrow_file(self) -> Any:
        from lazyscan.io.source import ArrowSource, FsspecSource, LocalSource

        src = self.source
        if isinstance(src, LocalSource):
            return src.path
        if isinstance(src, ArrowSource):
            return src._fs.open_input_file(src.path)
        if isinstance(src, FsspecSource):
            return src._fs.open(src.path, "rb")
        raise UnsupportedFeatureError("nested columns need a file pyarrow can open")

    def _read_nested(self, row_group: int, desc: ColumnDescriptor, selection: RowRanges | None) -> pa.Array:
        name = self.arrow_schema.field(desc.top_level_field).name
        for leaf in self.schema.field_leaves[desc.top_level_field]:
            md = self.metadata.row_groups[row_group].columns[leaf].meta_data
            if (
                md is not None and md.type == PhysicalType.BYTE_ARRAY
                and md.total_uncompressed_size >= _NESTED_BYTES_LIMIT
            ):
                # pyarrow would decompress all of it, then refuse: say so before
                raise UnsupportedFeatureError(
                    f"nested column cannot be read: its leaf {self.schema.columns[leaf].name!r} holds "
                    f"{md.total_uncompressed_size:,} bytes of values in this row group, more than the "
                    f"{_NESTED_BYTES_LIMIT:,} one Arrow array of a nested column holds",
                    file=self.path, row_group=row_group, column=name,
                )
        try:
            table = self._pyarrow_parquet_file().read_row_group(row_group, columns=[name])
        except (OSError, pa.ArrowException) as e:
            where = {"file": self.path, "row_group": row_group, "column": name}
            if isinstance(e, pa.ArrowNotImplementedError) or _holds_empty_struct(self.arrow_schema.field(name).type):
                # e.g. a group without fields beside fields with values: a valid schema that
                # pyarrow (and DuckDB) do not read
                raise UnsupportedFeatureError(f"nested column of a shape lazyscan cannot read: {e}", **where) from None
            raise CorruptFileError(f"nested column cannot be read: {e}", **where) from None
        arr = table.column(0).combine_chunks()
        if selection is not None:
            arr = arr.take(pa.array(selection.to_indices()))
        return arr

    def __repr__(self) -> str:
        return f"ParquetFile({self.path!r}, rows={self.num_rows}, row_groups={self.num_row_groups})"

    def close(self) -> None:
        self.source.close()

    def __enter__(self) -> ParquetFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_PARQUET_816_PADDING = 100
#: a nested column (read through pyarrow) whose byte-array leaf holds this much in one row group
#: does not fit the 32-bit offsets of one Arrow array; pyarrow decompresses it all before saying so
_NESTED_BYTES_LIMIT = 2**31 - 1


def _holds_empty_struct(t: pa.DataType) -> bool:
    """Whether a nested type holds a struct without fields at any depth."""
    if pa.types.is_struct(t):
        return t.num_fields == 0 or any(_holds_empty_struct(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _holds_empty_struct(t.value_type)
    if pa.types.is_map(t):
        return _holds_empty_struct(t.key_type) or _holds_empty_struct(t.item_type)
    return False


def _index_layout(
    locs: Sequence[PageLocation], start: int, end: int, num_rows: int, file_size: int, data_pages: int | None
) -> ChunkLayout | None:
    """The layout of a chunk at ``[start, end)`` as its offset index ``locs`` gives it, or None
    when the index does not add up (the caller then walks the page headers).

    Entries of pages never written (Impala) are left out. A page extends to where the next one
    starts, the last one to the chunk's end: the sizes recorded are only checked not to reach
    into the next page, since parquet-go recorded them without the page header (a reader of a
    page checks its header against what was fetched). ``data_pages``: how many data pages the
    chunk's encoding statistics count, if they do (an index that lists fewer misses some)."""
    entries = [i for i, loc in enumerate(locs) if not loc.unwritten]
    kept = [locs[i] for i in entries]
    if not kept or kept[0].first_row_index != 0 or kept[0].offset < start:
        return None
    if data_pages is not None and data_pages not in (len(kept), len(locs)):  # Impala counts unwritten pages too
        return None
    last = kept[-1]
    last_end = max(end, last.offset + last.compressed_page_size)
    if last_end > file_size:
        last_end = last.offset + last.compressed_page_size
    if last_end > file_size or last.offset >= end or last.first_row_index > num_rows:
        return None
    pages = []
    for i, loc in enumerate(kept):
        nxt = kept[i + 1] if i + 1 < len(kept) else None
        page_end = last_end if nxt is None else nxt.offset
        next_row = num_rows if nxt is None else nxt.first_row_index
        if loc.compressed_page_size <= 0 or loc.offset + loc.compressed_page_size > page_end or next_row < loc.first_row_index:
            return None
        pages.append(PageInfo(loc.offset, page_end - loc.offset, loc.first_row_index, next_row - loc.first_row_index))
    first = kept[0].offset
    dictionary = (start, first - start) if first > start else None
    return ChunkLayout(dictionary, tuple(pages), True, None if len(kept) == len(locs) else tuple(entries))


class _IndexMismatch(CorruptFileError):
    """A page located by the chunk's offset index is not what the index says (the caller reads
    the chunk again from its page headers)."""


def _old_parquet_mr(created_by: str | None) -> bool:
    """parquet-mr before 1.2.9 (or without a version) wrote too small column chunk sizes."""
    return chunk_size_leaves_out_dictionary_header(created_by)


def _match_dictionary(matcher: BytesMatcher | None, dictionary: Values | None) -> np.ndarray | None:
    if matcher is None or dictionary is None:
        return None
    from lazyscan.parquet.decode import ByteArrays, LocatedByteArrays

    if isinstance(dictionary, LocatedByteArrays):
        return matcher.match_located(dictionary.buf, dictionary.starts, dictionary.lengths)
    assert isinstance(dictionary, ByteArrays)
    return matcher.match(dictionary.offsets, dictionary.data)


def _page_rows(header: PageHeader) -> int:
    if header.data_page_header_v2 is not None:
        return header.data_page_header_v2.num_rows
    return header.num_values


def _parse_header(buf: np.ndarray, pos: int, end: int) -> PageHeader:
    try:
        return parse_page_header(buf, pos, end)
    except ThriftError as e:
        raise CorruptFileError(f"corrupt page header: {e}") from None


def _empty(desc: ColumnDescriptor) -> Values:
    from lazyscan.parquet.convert import empty_values

    return empty_values(desc)


def _index_array(rows: np.ndarray | Sequence[int]) -> np.ndarray:
    """Row indices as the kernels take them: a contiguous int64 array, read only (a view when
    the caller's array already is one, so the caller's flags stay as they were)."""
    idx = np.ascontiguousarray(rows, dtype=np.int64)
    if idx.ndim != 1:
        raise OptionError("row indices must be a 1-D array")
    if idx.flags.writeable:
        idx = idx.view()
        idx.flags.writeable = False
    return idx


def _looked_up(dictionary: Any, desc: ColumnDescriptor) -> bool:
    """Whether pages coded against ``dictionary`` are better decoded by looking their codes up
    as they are unpacked: one number per entry, which Arrow stores as it is (a decimal or a
    narrower integer is converted once per dictionary entry on the codes' way instead)."""
    return (
        isinstance(dictionary, np.ndarray)
        and dictionary.ndim == 1
        and dictionary.dtype.kind in "iuf"
        and stored_as_is(desc, dictionary.dtype)
    )


def _as_ranges(rows: RowRanges | np.ndarray | Sequence[int] | None, num_rows: int) -> RowRanges | None:
    if rows is None:
        return None
    if isinstance(rows, RowRanges):
        sel = rows
    else:
        # the selection lives for one read: it may keep (a read-only view of) the caller's indices
        checked = RowRanges.from_sorted_indices(_index_array(rows), copy=False)
        if checked is None:
            raise OptionError("row indices must be sorted, distinct and non-negative")
        sel = checked
    if not sel.is_empty and (sel.starts[0] < 0 or sel.ends[-1] > num_rows):
        raise IndexError(f"row selection exceeds the row group's {num_rows} rows")
    return sel


def file_size(path: str) -> int:
    return os.path.getsize(path)
