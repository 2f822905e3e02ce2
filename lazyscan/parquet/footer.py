"""A Parquet file's footer and what it locates: column chunks, statistics, page indexes, Bloom
filters.

The footer is read with one speculative tail request, parsed by the bounded thrift reader (its
row groups located by a numba pass and each decoded on first use, :mod:`.row_groups`) and
cached per process by path, file identity (:class:`~lazyscan.io.FileIdentity`) and the footer's
bytes, so repeated scans do not parse it again and a file rewritten in place is never read with
its old footer; :attr:`Footer.digest` lets a plan pin the footer it was made from. The page
indexes and Bloom filters it points at are read on demand (the page indexes of a file in one
request where they lie side by side).
"""

from __future__ import annotations

import hashlib
import itertools
import threading
from typing import Any, NamedTuple

import numpy as np

from lazyscan.errors import CorruptFileError, FileError, UnsupportedFeatureError
from lazyscan.format.statistics import ColumnStats
from lazyscan.format.writers import (
    chunk_size_leaves_out_dictionary_header,
    v2_pages_always_compressed,
)
from lazyscan.io import Source
from lazyscan.io.source import tail_read_length
from lazyscan.parquet import caches
from lazyscan.parquet import row_groups as RG
from lazyscan.parquet.bloom import BloomFilter
from lazyscan.parquet.metadata import (
    ColumnChunk,
    ColumnIndex,
    ColumnMetaData,
    FileMetaData,
    OffsetIndex,
    PageType,
    bloom_filter_header_from_thrift,
    column_index_from_thrift,
    file_metadata_from_thrift,
    offset_index_from_thrift,
)
from lazyscan.parquet.row_groups import LazyRowGroups, RowGroupIndex, read_file_metadata_fields
from lazyscan.parquet.schema import ColumnDescriptor, FileSchema, SchemaError, build_schema
from lazyscan.parquet.statistics import decode_statistics
from lazyscan.parquet.thrift import ThriftError, read_struct

MAGIC = b"PAR1"
MAGIC_ENCRYPTED = b"PARE"
_TAIL_READ = 64 * 1024
#: a file's page indexes (all ColumnIndexes and OffsetIndexes, which writers put side by side)
#: are fetched in one request when they span at most this many bytes
_INDEX_REGION_MAX = 16 * 1024 * 1024
#: what old parquet-mr's chunk sizes leave out at most (PARQUET-816, see :meth:`Footer.chunk_range_of`)
_PARQUET_816_PADDING = 100
_FOOTER_TOKENS = itertools.count(1)


class CachedFooter(NamedTuple):
    """A parsed footer as the footer cache keeps it."""

    metadata: FileMetaData
    schema: FileSchema
    #: names this footer in the keys of the other caches: a small number is cheaper to hash than
    #: the footer's key, and a footer read again after its entry left the cache gets a new one,
    #: so nothing cached for a file's other versions is ever found under it
    token: int
    #: what :attr:`Footer.digest` gives
    digest: bytes
    #: the footer's bytes the entry was parsed from, compared whole on every hit
    content: bytes
    #: the footer's Thrift bytes (:attr:`Footer.thrift`)
    thrift: memoryview


def footer_digest(data: bytes) -> bytes:
    """The digest a plan pins a file's footer (or other metadata) by: BLAKE2b of 16 bytes."""
    return hashlib.blake2b(data, digest_size=16).digest()


class FooterSummary:
    """A footer's row groups as arrays, for planning over many row groups without walking the
    thrift structures: rows, the first chunk's offset and the compressed bytes of each row
    group, the uncompressed and compressed bytes of each (row group, leaf) chunk, and the
    decoded row-group statistics (filled as they are asked for)."""

    def __init__(self, index: RowGroupIndex, num_leaves: int) -> None:
        chunks = index.chunk_table(num_leaves)
        has_meta = chunks[:, :, RG.TYPE] >= 0
        data = chunks[:, :, RG.DATA_OFFSET]
        dictionary = chunks[:, :, RG.DICTIONARY_OFFSET]
        # the dictionary page when it comes first (an offset below 4, inside the magic number,
        # is a writer's placeholder)
        start = np.where((dictionary >= 4) & (dictionary < data), dictionary, data)
        self.rows = index.rows.copy()
        self.uncompressed = np.where(has_meta, chunks[:, :, RG.UNCOMPRESSED], 0)
        self.compressed = np.where(has_meta, chunks[:, :, RG.COMPRESSED], 0)
        big = np.iinfo(np.int64).max
        first = np.where(has_meta, start, big).min(axis=1, initial=big)
        self.starts = np.where(first == big, -1, first)
        self.sizes = self.compressed.sum(axis=1)
        #: end of the last column chunk (the footer follows)
        self.data_end = int(np.where(has_meta, start + self.compressed, 4).max(initial=4))
        self.stats: dict[tuple[int, int], ColumnStats] = {}


class Footer:
    """The footer of the file ``source`` holds, read (or found in the process's cache) when made,
    and the metadata it locates."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.path = source.path
        #: the footer's token (:class:`CachedFooter`): the first part of every cache key of this file
        self.token = 0
        #: see :attr:`ParquetFile.footer_digest <lazyscan.parquet.file.ParquetFile.footer_digest>`
        self.digest = b""
        #: the footer's Thrift bytes, for a reader that parses the footer itself (pyarrow, for
        #: the Arrow types of nested columns): it need not fetch them again
        self.thrift = memoryview(b"")
        self.metadata, self.schema = self._read()
        #: the writer compressed v2 pages that say they are not (ARROW-17100)
        self.v2_always_compressed = v2_pages_always_compressed(self.metadata.created_by)
        self._index_lock = threading.Lock()
        self._index_region: tuple[int, bytes] | None = None
        self._index_region_known = False

    def error(self, cls: type[FileError], msg: str, **where: Any) -> FileError:
        """An error of class ``cls`` naming this file and ``where``."""
        return cls(msg, file=self.path, **where)

    def _read(self) -> tuple[FileMetaData, FileSchema]:
        size = self.source.size
        if size < 12:
            raise self.error(CorruptFileError, f"file of {size} bytes is too small to be Parquet")
        tail_len = tail_read_length(self.source, _TAIL_READ)
        tail = self.source.read_at(size - tail_len, tail_len)
        if tail[-4:] == MAGIC_ENCRYPTED:
            raise self.error(UnsupportedFeatureError, "encrypted Parquet files are not supported")
        if tail[-4:] != MAGIC:
            raise self.error(CorruptFileError, "not a Parquet file: bad magic number at the end")
        footer_len = int.from_bytes(tail[-8:-4], "little")
        if footer_len + 12 > size:
            raise self.error(
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
        cached: CachedFooter | None = caches.FOOTERS.get(key)
        if cached is not None and cached.content == content:
            self.token, self.digest, self.thrift = cached.token, cached.digest, cached.thrift
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
                raise self.error(CorruptFileError, "not a Parquet file: bad magic number at the start")
        try:
            fields, index = read_file_metadata_fields(footer)
            row_groups = LazyRowGroups(footer, index or RowGroupIndex.empty(), self.path)
            md = file_metadata_from_thrift(fields, row_groups)
        except ThriftError as e:
            raise self.error(CorruptFileError, f"corrupt footer: {e}") from None
        if md.encrypted:
            raise self.error(UnsupportedFeatureError, "encrypted Parquet files are not supported")
        try:
            schema = build_schema(md.schema, md.key_value_metadata)
        except SchemaError as e:
            raise self.error(CorruptFileError, f"corrupt schema: {e}", column=e.column) from None
        index = row_groups.located
        wrong = np.flatnonzero(index.columns != len(schema.columns))
        if len(wrong):
            i = int(wrong[0])
            raise self.error(
                CorruptFileError,
                f"row group has {index.columns[i]} column chunks, schema has {len(schema.columns)} columns",
                row_group=i,
            )
        self._check_row_counts(md, index, schema)
        entry = CachedFooter(md, schema, next(_FOOTER_TOKENS), footer_digest(content), content, footer)
        caches.FOOTERS.put(key, entry)
        self.token, self.digest, self.thrift = entry.token, entry.digest, entry.thrift
        return md, schema

    def _check_row_counts(self, md: FileMetaData, index: RowGroupIndex, schema: FileSchema) -> None:
        """Refuse a footer whose chunks' physical types differ from the schema's, or whose row
        counts contradict each other: the row groups' rows must add
        up to the file's (a file's count of 0 is a writer leaving it out: parquet-testing's
        ``repeated_no_annotation.parquet``, which pyarrow reads), and a required top-level
        column holds one value per row of its row group. Rows of later row groups are numbered
        after the earlier ones', so one wrong count would move every row after it."""
        total = int(index.rows.sum())
        if md.num_rows and total != md.num_rows:
            raise self.error(CorruptFileError, f"the row groups hold {total} rows, the footer says the file has {md.num_rows}")
        chunks = index.chunk_table(len(schema.columns))
        types = chunks[:, :, RG.TYPE]
        expected = np.array([int(d.physical_type) for d in schema.columns], np.int64)
        # refused here, not only by a read of the chunk: a scan that reads no row of it would
        # give the column the schema's type
        bad = np.argwhere((types >= 0) & (types != expected))
        if len(bad):
            i, c = (int(v) for v in bad[0])
            raise self.error(CorruptFileError, "column chunk type differs from the schema", row_group=i, column=schema.columns[c].name)
        required = [d.index for d in schema.columns if d.flat and d.max_definition_level == 0]
        values = chunks[:, required, RG.NUM_VALUES]
        bad = np.argwhere((types[:, required] >= 0) & (values != index.rows[:, None]))
        if len(bad):
            i, k = (int(v) for v in bad[0])
            c = required[k]
            raise self.error(
                CorruptFileError,
                f"required column chunk holds {values[i, k]} values, its row group has {index.rows[i]} rows",
                row_group=i, column=schema.columns[c].name,
            )

    # ---- accessors ------------------------------------------------------------------------

    @property
    def num_row_groups(self) -> int:
        return len(self.metadata.row_groups)

    @property
    def num_rows(self) -> int:
        return self.metadata.num_rows


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
            raise self.error(UnsupportedFeatureError, "encrypted columns are not supported", **where)
        if chunk.file_path:
            raise self.error(
                UnsupportedFeatureError, f"column chunk stored in another file ({chunk.file_path})", **where
            )
        md = chunk.meta_data
        if md is None:
            raise self.error(CorruptFileError, "column chunk has no metadata", **where)
        if md.type != desc.physical_type:
            raise self.error(CorruptFileError, "column chunk type differs from the schema", **where)
        # a histogram has one count per level: one of another length is of another schema (an
        # optional column declared required would have its levels read as values)
        for kind, length, max_level in zip(
            ("repetition", "definition"), md.level_histogram_lengths, (desc.max_repetition_level, desc.max_definition_level)
        ):
            if length and length != max_level + 1:
                raise self.error(
                    CorruptFileError,
                    f"the chunk's {kind} level histogram has {length} counts, the schema's maximum {kind} level is {max_level}",
                    **where,
                )
        return desc, chunk, md

    def type_defined_order(self, desc: ColumnDescriptor) -> bool | None:
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
                desc, md.statistics, num_rows, self.type_defined_order(desc), chunk=md, footer=self.metadata
            )
            stats[(row_group, desc.index)] = found
        return found

    @property
    def row_group_index(self) -> RowGroupIndex:
        """Where each row group lies in the footer, and its chunks' sizes and offsets as arrays."""
        row_groups = self.metadata.row_groups
        assert isinstance(row_groups, LazyRowGroups)
        return row_groups.located

    @property
    def summary(self) -> FooterSummary:
        """The footer's row groups as arrays (built once per footer and process)."""
        found = caches.SUMMARIES.get(self.token)
        if found is None:
            found = FooterSummary(self.row_group_index, len(self.schema.columns))
            caches.SUMMARIES.put(self.token, found)
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
                cached = caches.INDEX_REGIONS.get(self.token)
                if cached is None:
                    cached = self._fetch_index_region() or caches.NONE_FOUND
                    caches.INDEX_REGIONS.put(self.token, cached)
                self._index_region = None if cached is caches.NONE_FOUND else cached
            return self._index_region

    def _fetch_index_region(self) -> tuple[int, bytes] | None:
        chunks = self.row_group_index.chunks
        offsets = np.concatenate([chunks[:, RG.COLUMN_INDEX_OFFSET], chunks[:, RG.OFFSET_INDEX_OFFSET]])
        lengths = np.concatenate([chunks[:, RG.COLUMN_INDEX_LENGTH], chunks[:, RG.OFFSET_INDEX_LENGTH]])
        present = (offsets >= 0) & (lengths > 0)
        if present.sum() < 2:
            return None
        offsets, lengths = offsets[present], lengths[present]
        lo = int(offsets.min())
        hi = int((offsets + lengths).max())
        inside = int(lengths.sum())
        if hi <= self.source.size and hi - lo <= _INDEX_REGION_MAX and 2 * inside >= hi - lo:
            return lo, bytes(self.source.read_at(lo, hi - lo))
        return None

    def _read_struct_at(self, offset: int, length: int, what: str, **where: Any) -> dict[int, Any]:
        if offset < 0 or length <= 0 or offset + length > self.source.size:
            raise self.error(CorruptFileError, f"{what} at {offset}+{length} lies outside the file", **where)
        region = self._page_index_region() if what in ("column index", "offset index") else None
        data: memoryview | bytes
        if region is not None and region[0] <= offset and offset + length <= region[0] + len(region[1]):
            data = memoryview(region[1])[offset - region[0] : offset - region[0] + length]
        else:
            data = self.source.read_at(offset, length)
        try:
            fields, _ = read_struct(data)
        except ThriftError as e:
            raise self.error(CorruptFileError, f"corrupt {what}: {e}", **where) from None
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
            raise self.error(CorruptFileError, f"corrupt column index: {e}", **where) from None

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
            raise self.error(CorruptFileError, f"corrupt offset index: {e}", **where) from None

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
            raise self.error(CorruptFileError, "Bloom filter offset outside the file", **where)
        head = self.source.read_at(off, length if length else min(size - off, 256))
        try:
            fields, hsize = read_struct(head)
            header = bloom_filter_header_from_thrift(fields)
        except ThriftError as e:
            raise self.error(CorruptFileError, f"corrupt Bloom filter header: {e}", **where) from None
        if not (header.algorithm_block and header.hash_xxhash and header.uncompressed):
            return None  # an algorithm lazyscan does not know: no pruning, no error
        nbytes = header.num_bytes
        if nbytes == 0 or nbytes % 32 or off + hsize + nbytes > size or nbytes > (1 << 30):
            raise self.error(CorruptFileError, f"Bloom filter of {nbytes} bytes is invalid", **where)
        if length and hsize + nbytes <= len(head):
            bits = head[hsize : hsize + nbytes]
        else:
            bits = self.source.read_at(off + hsize, nbytes)
        return BloomFilter(np.frombuffer(bits, dtype="<u4").copy())

    # ---- page layout ----------------------------------------------------------------------

    def chunk_range(self, row_group: int, column: int | str) -> tuple[int, int]:
        """``(offset, length)`` of a column chunk's bytes in the file."""
        return self.chunk_range_of(self.column_chunk(row_group, column)[2])

    def chunk_range_of(self, md: ColumnMetaData) -> tuple[int, int]:
        start = md.chunk_start
        total = md.total_compressed_size
        if chunk_size_leaves_out_dictionary_header(self.metadata.created_by):
            # PARQUET-816: old parquet-mr left the dictionary page out of the chunk size
            total = min(total + _PARQUET_816_PADDING, self.source.size - start)
        return start, total

    def data_pages_per_row_group(self, columns: np.ndarray) -> np.ndarray:
        """The data pages of the leaf columns ``columns`` in each row group, summed; -1 for a
        row group where a chunk's count is not in the footer (:meth:`.PageLayouts.data_page_count` counts it)."""
        counts = self.data_page_counts()[:, columns]
        out = counts.sum(axis=1)
        out[(counts < 0).any(axis=1)] = -1
        return out  # type: ignore[no-any-return]

    def data_page_counts(self) -> np.ndarray:
        """Data pages per column chunk, ``[row group, leaf column]``, from the chunks' encoding
        statistics in one pass over the footer (kept per footer); -1 where a writer left them out
        or the chunk cannot be read, for :meth:`.PageLayouts.data_page_count` to count or report."""
        found = caches.PAGE_COUNTS.get(self.token)
        if found is not None:
            return found  # type: ignore[no-any-return]
        leaves = len(self.schema.columns)
        chunks = self.row_group_index.chunk_table(leaves)
        types = np.array([int(d.physical_type) for d in self.schema.columns], np.int64)
        readable = (chunks[:, :, RG.TYPE] == types) & (chunks[:, :, RG.FLAGS] & (RG.HAS_FILE_PATH | RG.ENCRYPTED) == 0)
        counts = np.where(readable, chunks[:, :, RG.DATA_PAGES], -1)
        caches.PAGE_COUNTS.put(self.token, counts)
        return counts
