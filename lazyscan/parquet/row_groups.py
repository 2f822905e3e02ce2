"""A footer's row groups, located and summarized by one numba pass instead of parsed.

A footer's ``row_groups`` list is most of its bytes: one ColumnChunk with its ColumnMetaData
and statistics per (row group, leaf column). Decoding all of it into Python objects costs
about 57 us per column chunk (4.8 s for the 5,232 row groups and 84k chunks of TPC-H SF100's
lineitem in one file, where pyarrow's C++ parser takes 0.13 s), and a Spark task reading a
few row groups, a planner that only needs the schema, or a sample of three row groups would
pay it in full. Here :func:`index_row_groups` walks the list in a numba kernel and returns
where each row group's struct lies and the few numbers planning and validation need of every
chunk (:class:`RowGroupIndex`); :class:`LazyRowGroups` decodes a row group into
:class:`~lazyscan.parquet.metadata.RowGroup` only when it is first asked for.

The kernels check every length and position against the footer's end and cap nesting depth,
like :mod:`lazyscan.parquet.thrift`; damage gives a negative ``ERR_*`` code that the caller
turns into :class:`~lazyscan.parquet.thrift.ThriftError`.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any, overload

import numpy as np

from lazyscan.errors import CorruptFileError
from lazyscan.format.kernels import (
    ERR_BAD_HEADER,
    ERR_BAD_LENGTH,
    ERR_TRUNCATED,
    ERROR_MESSAGES,
    kernel_jit,
)
from lazyscan.format.varint import unzigzag, uvarint
from lazyscan.parquet.metadata import RowGroup, row_group_from_thrift
from lazyscan.parquet.thrift import MAX_DEPTH, CompactReader, ThriftError

_jit = kernel_jit(nogil=True, read_only=("buf",))
_jit_inline = kernel_jit(nogil=True, inline="always", read_only=("buf",))

# compact-protocol type ids (numba compiles module globals in as constants)
_STOP = 0
_BOOL_TRUE = 1
_BOOL_FALSE = 2
_BYTE = 3
_I16 = 4
_I32 = 5
_I64 = 6
_DOUBLE = 7
_BINARY = 8
_LIST = 9
_SET = 10
_MAP = 11
_STRUCT = 12

# columns of RowGroupIndex.chunks, one row per column chunk in file order
TYPE = 0  #: physical type (-1: no ColumnMetaData)
NUM_VALUES = 1
UNCOMPRESSED = 2  #: total_uncompressed_size
COMPRESSED = 3  #: total_compressed_size
DATA_OFFSET = 4  #: data_page_offset
DICTIONARY_OFFSET = 5  #: dictionary_page_offset (-1: absent)
COLUMN_INDEX_OFFSET = 6  #: -1: absent
COLUMN_INDEX_LENGTH = 7
OFFSET_INDEX_OFFSET = 8
OFFSET_INDEX_LENGTH = 9
DATA_PAGES = 10  #: data pages by the chunk's encoding statistics (-1: no encoding statistics)
FLAGS = 11  #: HAS_* bits
CHUNK_FIELDS = 12

HAS_FILE_PATH = 1  #: the chunk lies in another file
ENCRYPTED = 2  #: encrypted column metadata


@_jit_inline
def _is_int(t):
    return t in (_I16, _I32, _I64)


@_jit
def _signed(buf, pos, end):
    u, pos = uvarint(buf, pos, end)
    return unzigzag(u), pos


@_jit
def _field_header(buf, pos, end, last):
    """(field id, type, position after the header); type -1 at STOP; a negative position on damage."""
    if pos >= end:
        return 0, 0, ERR_TRUNCATED
    header = np.int64(buf[pos])
    pos += 1
    if header == _STOP:
        return 0, -1, pos
    t = header & 15
    delta = header >> 4
    if delta != 0:
        return last + delta, t, pos
    fid, pos = _signed(buf, pos, end)
    return fid, t, pos


@_jit
def _list_header(buf, pos, end):
    """(size, element type, position after the header); a negative position on damage."""
    if pos >= end:
        return 0, 0, ERR_TRUNCATED
    header = np.int64(buf[pos])
    pos += 1
    size = header >> 4
    etype = header & 15
    if size == 15:
        u, pos = uvarint(buf, pos, end)
        if pos < 0:
            return 0, 0, pos
        if u > np.uint64(end):
            return 0, 0, ERR_BAD_LENGTH
        size = np.int64(u)
    if size > end - pos:  # every element takes a byte at least
        return 0, 0, ERR_BAD_LENGTH
    return size, etype, pos


@_jit
def _int_field(buf, pos, end, t, nonneg):
    """(value, position after it) of an integer field; a negative position when it is of
    another type, or negative where it must not be."""
    if not _is_int(t):
        return 0, ERR_BAD_HEADER
    value, pos = _signed(buf, pos, end)
    if pos >= 0 and nonneg and value < 0:
        return value, ERR_BAD_HEADER
    return value, pos


@_jit
def skip_value(buf, pos, end, ftype, in_container, kinds, counts, types):
    """The position after the value of type ``ftype`` at ``buf[pos:end]`` (a struct field's
    boolean takes no byte, a container's one byte: ``in_container``); a negative ``ERR_*`` on
    damage. ``kinds``, ``counts`` and ``types`` (MAX_DEPTH + 1 int64 each) are the stack."""
    depth = 0
    t = ftype
    boxed = in_container
    while True:
        # consume one value of type t
        if t in (_BOOL_TRUE, _BOOL_FALSE):
            if boxed:
                if pos >= end:
                    return ERR_TRUNCATED
                pos += 1
        elif t == _BYTE:
            if pos >= end:
                return ERR_TRUNCATED
            pos += 1
        elif t in (_I16, _I32, _I64):
            _, pos = uvarint(buf, pos, end)
            if pos < 0:
                return pos
        elif t == _DOUBLE:
            if end - pos < 8:
                return ERR_TRUNCATED
            pos += 8
        elif t == _BINARY:
            u, pos = uvarint(buf, pos, end)
            if pos < 0:
                return pos
            if u > np.uint64(end - pos):
                return ERR_BAD_LENGTH
            pos += np.int64(u)
        elif t in (_STRUCT, _LIST, _SET, _MAP):
            if depth >= MAX_DEPTH:
                return ERR_BAD_HEADER
            if t == _STRUCT:
                kinds[depth] = _STRUCT
                counts[depth] = 0  # the last field id
            elif t == _MAP:
                u, pos = uvarint(buf, pos, end)
                if pos < 0:
                    return pos
                if u > np.uint64(end - pos):
                    return ERR_BAD_LENGTH
                size = np.int64(u)
                kinds[depth] = _MAP
                counts[depth] = 2 * size
                if size > 0:
                    if pos >= end:
                        return ERR_TRUNCATED
                    types[depth] = buf[pos]
                    pos += 1
            else:
                size, etype, pos = _list_header(buf, pos, end)
                if pos < 0:
                    return pos
                kinds[depth] = _LIST
                counts[depth] = size
                types[depth] = etype
            depth += 1
        else:
            return ERR_BAD_HEADER
        # the next value to consume, closing the containers that end
        while True:
            if depth == 0:
                return pos
            top = depth - 1
            if kinds[top] == _STRUCT:
                fid, t, pos = _field_header(buf, pos, end, counts[top])
                if pos < 0:
                    return pos
                if t < 0:
                    depth -= 1
                    continue
                counts[top] = fid
                boxed = False
                break
            if counts[top] == 0:
                depth -= 1
                continue
            if kinds[top] == _LIST:
                t = types[top]
            elif counts[top] % 2 == 0:
                t = types[top] >> 4
            else:
                t = types[top] & 15
            counts[top] -= 1
            boxed = True
            break


@_jit
def row_group_spans(buf, pos, end):
    """Walk the FileMetaData ``row_groups`` list whose header is at ``buf[pos]``: (position
    after the list or a negative ``ERR_*``, start and end of each row group's struct, its
    num_rows, its number of column chunks)."""
    kinds = np.empty(MAX_DEPTH + 1, np.int64)
    counts = np.empty(MAX_DEPTH + 1, np.int64)
    types = np.empty(MAX_DEPTH + 1, np.int64)
    none = np.empty(0, np.int64)
    size, etype, pos = _list_header(buf, pos, end)
    if pos < 0:
        return pos, none, none, none, none
    if size > 0 and etype != _STRUCT:
        return ERR_BAD_HEADER, none, none, none, none
    starts = np.empty(size, np.int64)
    ends = np.empty(size, np.int64)
    rows = np.zeros(size, np.int64)
    columns = np.zeros(size, np.int64)
    for i in range(size):
        starts[i] = pos
        last = 0
        while True:
            fid, t, pos = _field_header(buf, pos, end, last)
            if pos < 0:
                return pos, none, none, none, none
            if t < 0:
                break
            last = fid
            if fid == 1:
                if t not in (_LIST, _SET):  # the Python reader takes a set as a list
                    return ERR_BAD_HEADER, none, none, none, none
                n, etype, after = _list_header(buf, pos, end)
                if after < 0:
                    return after, none, none, none, none
                if n > 0 and etype != _STRUCT:
                    return ERR_BAD_HEADER, none, none, none, none
                columns[i] = n
            elif fid == 3:
                value, after = _int_field(buf, pos, end, t, True)
                if after < 0:
                    return after, none, none, none, none
                rows[i] = value
            pos = skip_value(buf, pos, end, t, False, kinds, counts, types)
            if pos < 0:
                return pos, none, none, none, none
        ends[i] = pos
    return pos, starts, ends, rows, columns


@_jit
def _column_metadata(buf, pos, end, row, kinds, counts, types):
    """Fill ``row`` (one row of the chunks array) from the ColumnMetaData struct at ``pos``;
    the position after it or a negative ``ERR_*``."""
    last = 0
    seen_type = False
    seen_offset = False
    while True:
        fid, t, pos = _field_header(buf, pos, end, last)
        if pos < 0:
            return pos
        if t < 0:
            break
        last = fid
        if fid == 1 or fid == 5 or fid == 6 or fid == 7 or fid == 9 or fid == 11:
            value, pos = _int_field(buf, pos, end, t, fid != 11)
            if pos < 0:
                return pos
            if fid == 1:
                if value > 7:
                    return ERR_BAD_HEADER
                row[TYPE] = value
                seen_type = True
            elif fid == 5:
                row[NUM_VALUES] = value
            elif fid == 6:
                row[UNCOMPRESSED] = value
            elif fid == 7:
                row[COMPRESSED] = value
            elif fid == 9:
                row[DATA_OFFSET] = value
                seen_offset = True
            else:
                row[DICTIONARY_OFFSET] = value
        elif fid == 13:
            if t not in (_LIST, _SET):
                return ERR_BAD_HEADER
            n, etype, pos = _list_header(buf, pos, end)
            if pos < 0:
                return pos
            if n > 0 and etype != _STRUCT:
                return ERR_BAD_HEADER
            pages = 0
            for _ in range(n):
                page_type = -1
                count = 0
                inner = 0
                while True:
                    sid, st, pos = _field_header(buf, pos, end, inner)
                    if pos < 0:
                        return pos
                    if st < 0:
                        break
                    inner = sid
                    if sid == 1 or sid == 2 or sid == 3:
                        value, pos = _int_field(buf, pos, end, st, False)
                        if pos < 0:
                            return pos
                        if sid == 1:
                            page_type = value
                        elif sid == 3:
                            count = value
                    else:
                        pos = skip_value(buf, pos, end, st, False, kinds, counts, types)
                        if pos < 0:
                            return pos
                if page_type == 0 or page_type == 3:  # DATA_PAGE, DATA_PAGE_V2
                    pages += count
            row[DATA_PAGES] = pages
        else:
            pos = skip_value(buf, pos, end, t, False, kinds, counts, types)
            if pos < 0:
                return pos
    if not (seen_type and seen_offset):
        return ERR_BAD_HEADER
    return pos


@_jit
def _column_chunk(buf, pos, end, row, kinds, counts, types):
    """Fill ``row`` from the ColumnChunk struct at ``pos``; the position after it or a negative ``ERR_*``."""
    last = 0
    while True:
        fid, t, pos = _field_header(buf, pos, end, last)
        if pos < 0:
            return pos
        if t < 0:
            return pos
        last = fid
        if fid == 3:
            if t != _STRUCT:
                return ERR_BAD_HEADER
            pos = _column_metadata(buf, pos, end, row, kinds, counts, types)
        elif fid >= 4 and fid <= 7:
            value, pos = _int_field(buf, pos, end, t, False)
            if pos >= 0:
                row[COLUMN_INDEX_OFFSET + fid - 6 if fid >= 6 else OFFSET_INDEX_OFFSET + fid - 4] = value
        else:
            if fid == 1:
                row[FLAGS] |= HAS_FILE_PATH
            elif fid == 8 or fid == 9:
                row[FLAGS] |= ENCRYPTED
            pos = skip_value(buf, pos, end, t, False, kinds, counts, types)
        if pos < 0:
            return pos


@_jit
def chunk_summaries(buf, end, starts, first_chunk, chunks):
    """Fill ``chunks`` (CHUNK_FIELDS columns, one row per column chunk; row group ``i``'s
    first at ``first_chunk[i]``) from the row group structs at ``starts``; 0 or a negative ``ERR_*``."""
    kinds = np.empty(MAX_DEPTH + 1, np.int64)
    counts = np.empty(MAX_DEPTH + 1, np.int64)
    types = np.empty(MAX_DEPTH + 1, np.int64)
    for i in range(starts.shape[0]):
        pos = starts[i]
        last = 0
        while True:
            fid, t, pos = _field_header(buf, pos, end, last)
            if pos < 0:
                return pos
            if t < 0:
                break
            last = fid
            if fid != 1:
                pos = skip_value(buf, pos, end, t, False, kinds, counts, types)
                if pos < 0:
                    return pos
                continue
            n, _, pos = _list_header(buf, pos, end)
            if pos < 0:
                return pos
            for j in range(n):
                row = chunks[first_chunk[i] + j]
                row[:] = -1
                row[NUM_VALUES] = 0
                row[UNCOMPRESSED] = 0
                row[COMPRESSED] = 0
                row[FLAGS] = 0
                pos = _column_chunk(buf, pos, end, row, kinds, counts, types)
                if pos < 0:
                    return pos
    return 0


class RowGroupIndex:
    """Every row group of a footer located, and its chunks summarized as arrays (one row per
    column chunk, in file order; the ``TYPE`` ... ``FLAGS`` columns)."""

    def __init__(self, starts: np.ndarray, ends: np.ndarray, rows: np.ndarray, columns: np.ndarray, chunks: np.ndarray) -> None:
        #: where each row group's struct starts and ends in the footer's bytes
        self.starts, self.ends = starts, ends
        #: each row group's num_rows, and its number of column chunks
        self.rows, self.columns = rows, columns
        self.chunks = chunks

    def __len__(self) -> int:
        return len(self.starts)

    @classmethod
    def empty(cls) -> RowGroupIndex:
        """The index of a footer without row groups."""
        none = np.zeros(0, np.int64)
        return cls(none, none, none, none, np.zeros((0, CHUNK_FIELDS), np.int64))

    def chunk_table(self, leaves: int) -> np.ndarray:
        """``chunks`` as ``[row group, leaf column, field]``; every row group must hold ``leaves`` chunks."""
        return self.chunks.reshape(len(self.starts), leaves, CHUNK_FIELDS)


def index_row_groups(buf: memoryview | bytes, pos: int, end: int) -> tuple[RowGroupIndex, int]:
    """The row groups of the list whose header is at ``buf[pos]``, and the position after the list."""
    data = np.frombuffer(buf, np.uint8)
    after, starts, ends, rows, columns = row_group_spans(data, pos, end)
    if after < 0:
        raise ThriftError(f"row groups: {ERROR_MESSAGES.get(after, 'malformed')}")
    first = np.zeros(len(starts), np.int64)
    if len(columns):
        np.cumsum(columns[:-1], out=first[1:])
    chunks = np.empty((int(columns.sum()), CHUNK_FIELDS), np.int64)
    code = chunk_summaries(data, end, starts, first, chunks)
    if code < 0:
        raise ThriftError(f"column chunks: {ERROR_MESSAGES.get(code, 'malformed')}")
    return RowGroupIndex(starts, ends, rows, columns, chunks), after


def read_file_metadata_fields(footer: memoryview | bytes) -> tuple[dict[int, Any], RowGroupIndex | None]:
    """The FileMetaData struct's fields, its ``row_groups`` (field 4) left out and indexed instead."""
    reader = CompactReader(footer)
    fields: dict[int, Any] = {}
    index: RowGroupIndex | None = None
    last = 0
    while (field := reader.field_header(last)) is not None:
        fid, ftype = field
        last = fid
        if fid == 4:
            if ftype not in (_LIST, _SET):
                raise ThriftError("row groups is not a list of structs")
            index, reader.pos = index_row_groups(footer, reader.pos, reader.end)
            fields.pop(4, None)
        else:
            fields[fid] = reader.value(ftype, 0)
    return fields, index


#: column chunks a footer keeps decoded at most (about 2 KB each): the oldest decoded row group
#: is dropped first, and decoded again when asked for again
KEEP_DECODED_CHUNKS = 32_768


class LazyRowGroups(Sequence[RowGroup]):
    """A footer's row groups, each decoded on first use from its bytes (see the module), the
    most recently decoded ones kept (:data:`KEEP_DECODED_CHUNKS`), so a process reading a file
    of thousands of row groups holds a bounded part of its metadata. A row group that does not
    decode raises :class:`CorruptFileError` naming the file ``path``."""

    def __init__(
        self, footer: memoryview | bytes, index: RowGroupIndex, path: str = "", keep_chunks: int = KEEP_DECODED_CHUNKS
    ) -> None:
        self._footer = footer
        #: the row groups located (not named ``index``: that is Sequence's method)
        self.located = index
        self.path = path
        self._decoded: list[RowGroup | None] = [None] * len(index)
        self._keep_chunks = keep_chunks
        widest = int(index.columns.max()) if len(index) else 1
        #: row groups kept decoded at most
        self.keep = max(1, keep_chunks // max(1, widest))
        self._order: deque[int] = deque()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._decoded)

    @overload
    def __getitem__(self, i: int) -> RowGroup: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[RowGroup]: ...

    def __getitem__(self, i: int | slice) -> RowGroup | Sequence[RowGroup]:
        if isinstance(i, slice):
            return tuple(self[k] for k in range(*i.indices(len(self))))
        found = self._decoded[i]
        if found is None:
            found = self._decode(i if i >= 0 else i + len(self))
        return found

    def __iter__(self) -> Iterator[RowGroup]:
        for i in range(len(self)):
            yield self[i]

    def _decode(self, i: int) -> RowGroup:
        start, end = int(self.located.starts[i]), int(self.located.ends[i])
        reader = CompactReader(self._footer, start, end)
        try:
            decoded = row_group_from_thrift(reader.struct())
        except ThriftError as e:
            raise CorruptFileError(f"corrupt footer: {e}", file=self.path, row_group=i) from None
        except (TypeError, AttributeError, KeyError, ValueError, IndexError, OverflowError) as e:
            raise CorruptFileError(f"corrupt footer: malformed row group: {e}", file=self.path, row_group=i) from None
        with self._lock:
            if self._decoded[i] is None:
                self._order.append(i)
                while len(self._order) > self.keep:
                    self._decoded[self._order.popleft()] = None
            self._decoded[i] = decoded
        return decoded

    @property
    def decoded(self) -> int:
        """How many row groups were decoded so far."""
        return sum(rg is not None for rg in self._decoded)

    def __reduce__(self) -> tuple[Any, ...]:
        return (LazyRowGroups, (bytes(self._footer), self.located, self.path, self._keep_chunks))
