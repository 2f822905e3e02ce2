"""Parquet files of one column chunk built from the pages of another file, uncompressed: to read
one page alone, or a page whose bytes were rewritten (levels in another encoding).

Field ids (parquet.thrift): PageHeader 1 type, 2 uncompressed_page_size, 3 compressed_page_size,
4 crc, 5 data_page_header, 7 dictionary_page_header, 8 data_page_header_v2; DataPageHeader
1 num_values, 3 definition_level_encoding; ColumnMetaData 4 codec, 5 num_values,
6 total_uncompressed_size, 7 total_compressed_size, 9 data_page_offset, 11 dictionary_page_offset;
SchemaElement 3 repetition_type, 5 num_children.
"""

from __future__ import annotations

import copy
import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lazyscan.parquet import thrift as T
from tests.support.footer import Node, encode, typed_at

#: Parquet codec id -> pyarrow codec name
ARROW_CODECS = {1: "snappy", 2: "gzip", 4: "brotli", 6: "zstd", 7: "lz4_raw"}
BIT_PACKED = 4
OPTIONAL = 1


@dataclass
class Page:
    header: dict[int, Node]
    body: bytes  # uncompressed


@dataclass
class Chunk:
    """One column chunk of a file: its footer, where it is, and its pages in file order."""

    footer: dict[int, Node]
    row_group: int
    column: int
    pages: list[Page]
    first_rows: list[int]  # the first row of each data page in the row group (-1: dictionary page)

    @property
    def metadata(self) -> dict[int, Node]:
        return self.footer[4].value[1][self.row_group][1].value[1][self.column][3].value  # type: ignore[no-any-return]

    @property
    def element(self) -> dict[int, Node]:
        return self.footer[2].value[1][self.column + 1]  # type: ignore[no-any-return]


def file_footer(data: bytes) -> dict[int, Node]:
    n = struct.unpack("<I", data[-8:-4])[0]
    return typed_at(data, len(data) - 8 - n, len(data) - 8)[0]


def page_spans(data: bytes, footer: dict[int, Node]) -> list[tuple[int, int, int, int, int]]:
    """(row group, column, header start, body start, body end) of every page of ``data``, in
    the order of the footer's column chunks."""
    spans = []
    for rg, row_group in enumerate(footer[4].value[1]):
        for c, column in enumerate(row_group[1].value[1]):
            md = column[3].value
            start = md[9].value
            if 11 in md and 0 < md[11].value < start:
                start = md[11].value
            end, pos = start + md[7].value, start
            while pos < end:
                header, body = typed_at(data, pos)
                spans.append((rg, c, pos, body, body + header[3].value))
                pos = body + header[3].value
    return spans


def chunks(data: bytes) -> list[Chunk]:
    """Every column chunk of the flat file ``data`` with its pages decompressed."""
    footer = file_footer(data)
    out: dict[tuple[int, int], Chunk] = {}
    rows: dict[tuple[int, int], int] = {}
    for rg, c, start, body, end in page_spans(data, footer):
        chunk = out.setdefault((rg, c), Chunk(footer, rg, c, [], []))
        codec = chunk.metadata[4].value
        header = typed_at(data, start)[0]
        raw = data[body:end]
        if 8 in header:  # v2: levels stay uncompressed, only the values are compressed
            v2 = header[8].value
            levels = v2[5].value + v2[6].value
            values = raw[levels:]
            if codec and v2.get(7, Node(T.BOOL_TRUE, True)).value:
                values = pa.Codec(ARROW_CODECS[codec]).decompress(values, header[2].value - levels).to_pybytes()
            raw = raw[:levels] + values
            header[8].value[7] = Node(T.BOOL_TRUE, False)
        elif codec:
            raw = pa.Codec(ARROW_CODECS[codec]).decompress(raw, header[2].value).to_pybytes()
        chunk.pages.append(Page(header, raw))
        if 7 in header:
            chunk.first_rows.append(-1)
        else:
            row = rows.get((rg, c), 0)
            chunk.first_rows.append(row)
            rows[(rg, c)] = row + (header[5].value[1].value if 5 in header else header[8].value[3].value)
    return list(out.values())


def single_chunk_file(chunk: Chunk, pages: list[Page]) -> bytes:
    """A file of ``chunk``'s column alone (one row group, uncompressed, no statistics, indexes or
    Bloom filter) holding ``pages``; its rows are the data pages' values."""
    body = bytearray(b"PAR1")
    dictionary_offset = data_offset = None
    rows = 0
    for page in pages:
        header = copy.deepcopy(page.header)
        header[2] = Node(T.I32, len(page.body))
        header[3] = Node(T.I32, len(page.body))
        header.pop(4, None)  # the checksum of the original bytes
        if 7 in header:
            dictionary_offset = len(body)
        else:
            data_offset = len(body) if data_offset is None else data_offset
            rows += header[5].value[1].value if 5 in header else header[8].value[3].value
        body += encode(header) + page.body
    assert data_offset is not None, "a chunk needs a data page"
    size = len(body) - (dictionary_offset if dictionary_offset is not None else data_offset)
    md = copy.deepcopy(chunk.metadata)
    for fid in (12, 13, 14, 15, 16):  # statistics, encoding stats, Bloom filter, size statistics
        md.pop(fid, None)
    md[4] = Node(T.I32, 0)
    md[5] = Node(T.I64, rows)
    md[6] = Node(T.I64, size)
    md[7] = Node(T.I64, size)
    md[9] = Node(T.I64, data_offset)
    if dictionary_offset is not None:
        md[11] = Node(T.I64, dictionary_offset)
    else:
        md.pop(11, None)
    column = {2: Node(T.I64, dictionary_offset if dictionary_offset is not None else data_offset), 3: Node(T.STRUCT, md)}
    row_group = {1: Node(T.LIST, (T.STRUCT, [column])), 2: Node(T.I64, size), 3: Node(T.I64, rows)}
    root = copy.deepcopy(chunk.footer[2].value[1][0])
    root[5] = Node(T.I32, 1)
    footer = {
        1: chunk.footer[1],
        2: Node(T.LIST, (T.STRUCT, [root, copy.deepcopy(chunk.element)])),
        3: Node(T.I64, rows),
        4: Node(T.LIST, (T.STRUCT, [row_group])),
    }
    raw = encode(footer)
    return bytes(body) + raw + struct.pack("<I", len(raw)) + b"PAR1"


_REVERSED = bytes(int(f"{b:08b}"[::-1], 2) for b in range(256))


def reverse_bits(data: bytes) -> bytes:
    """Each byte with its bit order reversed."""
    return data.translate(_REVERSED)


def bit_packed_msb_first(levels: np.ndarray, width: int) -> bytes:
    """``levels`` in the deprecated BIT_PACKED encoding: each value's bits from the most
    significant, packed from the most significant bit of each byte (parquet-format Encodings.md)."""
    bits = ((levels[:, None] >> np.arange(width - 1, -1, -1)) & 1).astype(np.uint8).ravel()
    return np.packbits(bits, bitorder="big").tobytes()
