"""Rewriting a Parquet file's footer (and page indexes) to reproduce what other writers put there.

The footer is decoded into a typed tree (every field keeps its Thrift type, so the re-encoded
footer is one any reader accepts), changed, and written back after the data; a changed
ColumnIndex is appended after the data and its chunk pointed at it.

Field ids (parquet.thrift): FileMetaData 4 row_groups, 6 created_by; RowGroup 1 columns,
3 num_rows; ColumnChunk 3 meta_data, 6/7 column_index offset/length; ColumnMetaData
5 num_values, 12 statistics; Statistics 1 max, 2 min, 3 null_count, 5 max_value, 6 min_value;
ColumnIndex 1 null_pages, 2 min_values, 3 max_values, 4 boundary_order, 5 null_counts.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lazyscan.parquet import thrift as T


@dataclass
class Node:
    """A Thrift value with its type: a struct is a dict id -> Node, a list a (type, [values])."""

    type: int
    value: Any


class _TypedReader(T.CompactReader):
    def typed_struct(self) -> dict[int, Node]:
        fields: dict[int, Node] = {}
        last = 0
        while True:
            header = self._byte()
            if header == T.STOP:
                return fields
            ftype, delta = header & 0x0F, header >> 4
            fid = last + delta if delta else self.zigzag()
            last = fid
            fields[fid] = Node(T.BOOL_TRUE if ftype == T.BOOL_FALSE else ftype, self.typed_value(ftype))

    def typed_value(self, ftype: int) -> Any:
        if ftype == T.STRUCT:
            return self.typed_struct()
        if ftype in (T.LIST, T.SET):
            header = self._byte()
            size, etype = header >> 4, header & 0x0F
            if size == 15:
                size = self.varint()
            if etype in (T.BOOL_TRUE, T.BOOL_FALSE):
                return (T.BOOL_TRUE, [self._byte() == T.BOOL_TRUE for _ in range(size)])
            return (etype, [self.typed_value(etype) for _ in range(size)])
        return self.value(ftype, 0)


def _encode_struct(w: T.CompactWriter, fields: dict[int, Node]) -> None:
    w.struct([(fid, node.type, _plain(node.type, node.value)) for fid, node in sorted(fields.items())])


def _plain(ftype: int, value: Any) -> Any:
    if ftype == T.STRUCT:
        return [(fid, n.type, _plain(n.type, n.value)) for fid, n in sorted(value.items())]
    if ftype == T.LIST:
        etype, items = value
        return (etype, [_plain(etype, v) for v in items])
    return value


def typed_at(data: bytes, pos: int, end: int | None = None) -> tuple[dict[int, Node], int]:
    """The struct at ``data[pos:]`` (before ``end``) and the position after it."""
    reader = _TypedReader(data, pos, end)
    fields = reader.typed_struct()
    return fields, reader.pos


def read_typed(data: bytes) -> dict[int, Node]:
    return _TypedReader(data).typed_struct()


def encode(fields: dict[int, Node]) -> bytes:
    w = T.CompactWriter()
    _encode_struct(w, fields)
    return bytes(w.out)


class ParquetPatch:
    """A Parquet file whose footer and column indexes can be changed, then written out."""

    def __init__(self, path: Path | str) -> None:
        data = Path(path).read_bytes()
        n = struct.unpack("<I", data[-8:-4])[0]
        self.body = bytearray(data[: len(data) - 8 - n])
        self.footer = read_typed(data[len(data) - 8 - n : -8])

    # ---- footer fields ----
    def set_created_by(self, text: str | None) -> ParquetPatch:
        if text is None:
            self.footer.pop(6, None)
        else:
            self.footer[6] = Node(T.BINARY, text.encode())
        return self

    def chunk(self, row_group: int, column: int) -> dict[int, Node]:
        return self.footer[4].value[1][row_group][1].value[1][column]  # type: ignore[no-any-return]

    def metadata(self, row_group: int, column: int) -> dict[int, Node]:
        return self.chunk(row_group, column)[3].value  # type: ignore[no-any-return]

    def statistics(self, row_group: int, column: int) -> dict[int, Node]:
        md = self.metadata(row_group, column)
        if 12 not in md:
            md[12] = Node(T.STRUCT, {})
        return md[12].value  # type: ignore[no-any-return]

    def set_statistics(
        self, row_group: int, column: int, *, null_count: int | None = None,
        min_value: bytes | None = None, max_value: bytes | None = None,
    ) -> ParquetPatch:
        st = self.statistics(row_group, column)
        if null_count is not None:
            st[3] = Node(T.I64, null_count)
        if min_value is not None:
            st[6] = Node(T.BINARY, min_value)
            st.pop(2, None)
        if max_value is not None:
            st[5] = Node(T.BINARY, max_value)
            st.pop(1, None)
        return self

    def set_num_values(self, row_group: int, column: int, n: int) -> ParquetPatch:
        self.metadata(row_group, column)[5] = Node(T.I64, n)
        return self

    # ---- page index ----
    def column_index(self, row_group: int, column: int) -> dict[int, Node]:
        ch = self.chunk(row_group, column)
        off, length = ch[6].value, ch[7].value
        return read_typed(bytes(self.body[off : off + length]))

    def set_column_index(self, row_group: int, column: int, index: dict[int, Node]) -> ParquetPatch:
        """Append ``index`` after the data and point the chunk at it."""
        raw = encode(index)
        ch = self.chunk(row_group, column)
        ch[6] = Node(T.I64, len(self.body))
        ch[7] = Node(T.I32, len(raw))
        self.body += raw
        return self

    def write(self, path: Path | str) -> Path:
        footer = encode(self.footer)
        Path(path).write_bytes(bytes(self.body) + footer + struct.pack("<I", len(footer)) + b"PAR1")
        return Path(path)
