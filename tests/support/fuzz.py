"""Structure-aware fuzzing of lazyscan's Parquet and ORC readers.

Each case takes one of a few small valid files (the *seeds*, written by pyarrow: Parquet with v1
and v2 data pages, dictionaries, page indexes, Bloom filters, statistics and four codecs; ORC
uncompressed, zlib and zstd, with row indexes, Bloom filters and dictionaries) and changes one
thing in it:

- Parquet: an integer, string, boolean or double field of the footer (offsets, sizes, counts,
  types, encodings, statistics, schema) or a field dropped from it; a field of a page header
  (data, v2 or dictionary page: sizes, value counts, encodings, levels lengths, statistics); the
  bytes of a page (dictionary pages included); a field of a column index or offset index; a
  Bloom filter header field or bits of its bitset;
- ORC: a field of the postscript, the footer (stripes, types, statistics), the metadata (stripe
  statistics), a stripe footer (streams, encodings), a row index (positions, statistics) or a
  Bloom filter index, each decoded as protobuf and encoded again; the bytes of a stream;
- either format: random bits flipped anywhere, or the file cut short.

The mutant is then read by lazyscan whole (``lazyscan.scan(path).to_table()``), for random row
selections of each row group or stripe, and with two filtered scans (every pruning tier on), and
by pyarrow. The property is *the right rows or a clear error*: each lazyscan read either raises a
:class:`lazyscan.errors.LazyScanError`, or returns the rows of the original file or the rows
pyarrow reads from the mutant (for a v1 page whose definition levels are declared BIT_PACKED:
the rows pyarrow reads from that page with its level bits in the format's order,
``_levels_in_spec_order``). A filtered scan whose mutation changed only what pruning reads
(statistics, column index, Bloom filter, encoding lists) may lose rows the lie rules out, never
add or change one. A read of a file whose stored values alone were damaged may keep what its
statistics rule in (``_trusting_statistics``), and a selective ORC read may return the damaged
values of one column where the full read refuses the stripe (``_damaged_values_only``: ORC has
no checksums). Anything else is a finding: another exception (with its traceback), other rows,
a crash of the process or a hang.

Cases run in a child process (a crash or hang is caught and the child replaced; faulthandler
writes the stack of either). Case ``n`` of seed ``s`` is the same mutation on every run.

Commands (from the checkout)::

    python -m tests.support.fuzz --seed 1 --minutes 10      # the longer run; prints each finding
    python -m tests.support.fuzz --seed 1 --case 1234       # replays one case here, traceback included
    python -m tests.support.fuzz --seed 1 --case 1234 --write bad.parquet   # ... and keeps the mutant
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import decimal
import faulthandler
import math
import multiprocessing
import os
import random
import struct
import sys
import tempfile
import time
import traceback
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as porc
import pyarrow.parquet as pq

from lazyscan.orc.proto import read_varint
from lazyscan.parquet import thrift as T
from tests.support import page_files
from tests.support.footer import Node, encode
from tests.support.footer import typed_at as _typed_at
from tests.support.predicates import Predicate, filtered, sql_literal
from tests.support.tables import table_difference

ROWS = 2400

# ---- seeds --------------------------------------------------------------------------------------


def seed_table(rows: int = ROWS) -> pa.Table:
    """Every flat type with nulls; ``k`` sorted so that statistics and page indexes prune."""
    rng = np.random.default_rng(5)

    def nulls(p: float = 0.1) -> np.ndarray:
        return rng.random(rows) < p

    return pa.table({
        "k": pa.array(np.arange(rows, dtype=np.int32) * 3, pa.int32()),
        "i64": pa.array(rng.integers(-(2**40), 2**40, rows), pa.int64(), mask=nulls()),
        "f64": pa.array(np.where(rng.random(rows) < 0.02, np.nan, rng.normal(size=rows)), mask=nulls()),
        "s": pa.array([f"v{x}" for x in rng.integers(0, 40, rows)], mask=nulls()),
        "u": pa.array([f"unique-{i}-é" for i in range(rows)]),
        "b": pa.array(rng.random(rows) < 0.5, mask=nulls()),
        "d": pa.array(rng.integers(-3000, 30000, rows).astype(np.int32), pa.date32(), mask=nulls()),
        "ts": pa.array(rng.integers(0, 2 * 10**15, rows), pa.timestamp("us"), mask=nulls()),
        "dec": pa.array([decimal.Decimal(int(x)).scaleb(-2) for x in rng.integers(-(10**7), 10**7, rows)], pa.decimal128(9, 2)),
        "bin": pa.array([bytes([x % 256]) * (x % 5) for x in rng.integers(0, 1000, rows)], pa.binary(), mask=nulls()),
    })


_PAGE = {"data_page_size": 1024, "row_group_size": 1000, "write_statistics": True}
#: Parquet seeds: name -> pq.write_table options
PARQUET_SEEDS: dict[str, dict[str, Any]] = {
    "v1-snappy-dict-index-bloom": {
        **_PAGE, "compression": "snappy", "data_page_version": "1.0", "use_dictionary": True, "write_page_index": True,
        "bloom_filter_options": {"i64": {"ndv": 1000, "fpp": 0.05}, "u": {"ndv": 1000, "fpp": 0.05}},
    },
    "v2-zstd-plain-index-bloom": {
        **_PAGE, "compression": "zstd", "data_page_version": "2.0", "use_dictionary": False, "write_page_index": True,
        "bloom_filter_options": {"s": {"ndv": 100, "fpp": 0.05}},
    },
    "v1-none-delta-checksum": {
        **_PAGE, "compression": "none", "data_page_version": "1.0", "use_dictionary": False, "write_page_checksum": True,
        "column_encoding": {"i64": "DELTA_BINARY_PACKED", "u": "DELTA_LENGTH_BYTE_ARRAY", "s": "DELTA_BYTE_ARRAY", "f64": "BYTE_STREAM_SPLIT"},
    },
    "v2-gzip-dict": {**_PAGE, "compression": "gzip", "data_page_version": "2.0", "use_dictionary": True},
}
#: ORC seeds: name -> pyarrow.orc.write_table options (the ORC ids of i64, s and u: 2, 4, 5)
ORC_SEEDS: dict[str, dict[str, Any]] = {
    "none-dict-index-bloom": {
        "compression": "uncompressed", "row_index_stride": 500, "dictionary_key_size_threshold": 1.0,
        "bloom_filter_columns": [2, 4, 5], "stripe_size": 32 * 1024,
    },
    "zlib-index-bloom": {
        "compression": "zlib", "row_index_stride": 500, "bloom_filter_columns": [2, 5], "stripe_size": 8 * 1024,
        "compression_block_size": 64 * 1024,
    },
    "zstd-dict": {"compression": "zstd", "row_index_stride": 1000, "dictionary_key_size_threshold": 1.0},
}


@dataclass
class Seed:
    name: str
    path: Path
    format: str  # "parquet" or "orc"
    data: bytes
    original: pa.Table  # pyarrow's reading
    predicates: list[Predicate]


def write_seeds(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    table = seed_table()
    paths = []
    for name, opts in PARQUET_SEEDS.items():
        path = folder / f"{name}.parquet"
        pq.write_table(table, path, **opts)
        paths.append(path)
    for name, opts in ORC_SEEDS.items():
        path = folder / f"{name}.orc"
        porc.write_table(table, path, **opts)
        paths.append(path)
    return paths


def pyarrow_read(path: Path) -> pa.Table:
    if path.suffix == ".orc":
        return porc.ORCFile(str(path)).read()
    return pq.read_table(path, coerce_int96_timestamp_unit="us")


def _seed_predicates(table: pa.Table, rng: random.Random) -> list[Predicate]:
    out = []
    for name in table.column_names:
        arr = table.column(name).combine_chunks()
        values = arr.drop_null()
        if pa.types.is_floating(arr.type):
            values = values.filter(pc.invert(pc.is_nan(values)))
        pick = [values[rng.randrange(len(values))] for _ in range(3)]
        if any(sql_literal(v) is None for v in pick):
            continue
        lo, hi = sorted(pick[:2], key=lambda s: s.as_py())
        out += [
            Predicate(name, "IS NULL", ()), Predicate(name, "=", (pick[2],)), Predicate(name, "<", (pick[0],)),
            Predicate(name, ">=", (pick[1],)), Predicate(name, "IN", (pick[0], pick[2])), Predicate(name, "BETWEEN", (lo, hi)),
        ]
    return out


def load_seeds(folder: Path) -> list[Seed]:
    seeds = []
    for path in sorted(folder.glob("*.parquet")) + sorted(folder.glob("*.orc")):
        original = pyarrow_read(path)
        preds = _seed_predicates(original, random.Random(path.name))
        seeds.append(Seed(path.stem, path, path.suffix[1:], path.read_bytes(), original, preds))
    return seeds


# ---- mutations ------------------------------------------------------------------------------------


#: where a mutation landed: "pruning" (only what pruning reads: a lie there may cost rows of a
#: filtered scan), "data" (anything else)
PRUNING, DATA = "pruning", "data"


@dataclass
class Mutant:
    data: bytes
    what: str
    region: str = DATA
    kind: str = ""  # the format and the mutation's name
    #: ORC: the column id whose value bytes (a PRESENT, DATA, LENGTH, DICTIONARY_DATA or
    #: SECONDARY stream) alone were damaged
    damaged_column: int | None = None


class Skip(Exception):
    """This mutation does not apply to this seed (no such structure); try another."""


def _interesting_ints(v: int, rng: random.Random, lo: int, hi: int) -> int:
    choices = [0, 1, -1, v + 1, v - 1, v * 2, v // 2, -v, hi, lo, v ^ (1 << rng.randrange(max(1, v.bit_length() + 2))),
               rng.randint(min(-abs(v) - 10, 0), abs(v) * 2 + 10)]
    return max(lo, min(hi, rng.choice(choices)))


def _mutate_bytes(b: bytes, rng: random.Random, same_length: bool) -> bytes:
    out = bytearray(b)
    kind = rng.randrange(4) if not same_length else rng.randrange(2)
    if kind == 0 and out:
        i = rng.randrange(len(out))
        out[i] ^= 1 << rng.randrange(8)
    elif kind == 1 and out:
        i = rng.randrange(len(out))
        out[i] = rng.choice([0, 0xFF, 0x7F, 0x80, rng.randrange(256)])
    elif kind == 2:
        out = out[: rng.randrange(len(out) + 1)]
    else:
        out += bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    return bytes(out)


# ---- Thrift (Parquet) ------------------------------------------------------------------------

#: struct name -> field id -> (field name, struct name of the field's struct or list elements)
_THRIFT_NAMES: dict[str, dict[int, tuple[str, str | None]]] = {
    "FileMetaData": {1: ("version", None), 2: ("schema", "SchemaElement"), 3: ("num_rows", None), 4: ("row_groups", "RowGroup"),
                     5: ("key_value_metadata", "KeyValue"), 6: ("created_by", None), 7: ("column_orders", "ColumnOrder")},
    "SchemaElement": {1: ("type", None), 2: ("type_length", None), 3: ("repetition_type", None), 4: ("name", None),
                      5: ("num_children", None), 6: ("converted_type", None), 7: ("scale", None), 8: ("precision", None),
                      9: ("field_id", None), 10: ("logicalType", "LogicalType")},
    "RowGroup": {1: ("columns", "ColumnChunk"), 2: ("total_byte_size", None), 3: ("num_rows", None), 4: ("sorting_columns", None),
                 5: ("file_offset", None), 6: ("total_compressed_size", None), 7: ("ordinal", None)},
    "ColumnChunk": {1: ("file_path", None), 2: ("file_offset", None), 3: ("meta_data", "ColumnMetaData"),
                    4: ("offset_index_offset", None), 5: ("offset_index_length", None), 6: ("column_index_offset", None),
                    7: ("column_index_length", None)},
    "ColumnMetaData": {1: ("type", None), 2: ("encodings", None), 3: ("path_in_schema", None), 4: ("codec", None),
                       5: ("num_values", None), 6: ("total_uncompressed_size", None), 7: ("total_compressed_size", None),
                       8: ("key_value_metadata", "KeyValue"), 9: ("data_page_offset", None), 10: ("index_page_offset", None),
                       11: ("dictionary_page_offset", None), 12: ("statistics", "Statistics"), 13: ("encoding_stats", "PageEncodingStats"),
                       14: ("bloom_filter_offset", None), 15: ("bloom_filter_length", None), 16: ("size_statistics", None)},
    "Statistics": {1: ("max", None), 2: ("min", None), 3: ("null_count", None), 4: ("distinct_count", None), 5: ("max_value", None),
                   6: ("min_value", None), 7: ("is_max_value_exact", None), 8: ("is_min_value_exact", None)},
    "PageHeader": {1: ("type", None), 2: ("uncompressed_page_size", None), 3: ("compressed_page_size", None), 4: ("crc", None),
                   5: ("data_page_header", "DataPageHeader"), 7: ("dictionary_page_header", "DictionaryPageHeader"),
                   8: ("data_page_header_v2", "DataPageHeaderV2")},
    "DataPageHeader": {1: ("num_values", None), 2: ("encoding", None), 3: ("definition_level_encoding", None),
                       4: ("repetition_level_encoding", None), 5: ("statistics", "Statistics")},
    "DictionaryPageHeader": {1: ("num_values", None), 2: ("encoding", None), 3: ("is_sorted", None)},
    "DataPageHeaderV2": {1: ("num_values", None), 2: ("num_nulls", None), 3: ("num_rows", None), 4: ("encoding", None),
                         5: ("definition_levels_byte_length", None), 6: ("repetition_levels_byte_length", None),
                         7: ("is_compressed", None), 8: ("statistics", "Statistics")},
    "ColumnIndex": {1: ("null_pages", None), 2: ("min_values", None), 3: ("max_values", None), 4: ("boundary_order", None),
                    5: ("null_counts", None)},
    "OffsetIndex": {1: ("page_locations", "PageLocation"), 2: ("unencoded_byte_array_data_bytes", None)},
    "PageLocation": {1: ("offset", None), 2: ("compressed_page_size", None), 3: ("first_row_index", None)},
    "BloomFilterHeader": {1: ("numBytes", None), 2: ("algorithm", None), 3: ("hash", None), 4: ("compression", None)},
}
_INT_RANGE = {T.BYTE: (-(2**7), 2**7 - 1), T.I16: (-(2**15), 2**15 - 1), T.I32: (-(2**31), 2**31 - 1), T.I64: (-(2**63), 2**63 - 1)}
#: footer fields only pruning reads: statistics, page encodings (dictionary pruning), column order
#: (how statistics compare), where the column index and the Bloom filter are
_PRUNING_FIELDS = ("statistics", "encoding_stats", "encodings", "column_orders", "column_index_offset", "column_index_length",
                   "bloom_filter_offset", "bloom_filter_length", "size_statistics")


@dataclass
class Slot:
    """One mutable value in a decoded Thrift struct or protobuf message."""

    path: str
    kind: str  # thrift: its type; protobuf: "varint", "fixed64", "fixed32", "bytes"
    get: Callable[[], Any]
    set: Callable[[Any], None]


def _name(struct_name: str | None, fid: int) -> tuple[str, str | None]:
    return _THRIFT_NAMES.get(struct_name or "", {}).get(fid, (str(fid), None))


def thrift_slots(fields: dict[int, Node], struct_name: str | None, path: str) -> list[Slot]:
    out: list[Slot] = []
    for fid, node in fields.items():
        fname, child = _name(struct_name, fid)
        p = f"{path}.{fname}"
        if node.type == T.STRUCT:
            out += thrift_slots(node.value, child, p)
        elif node.type in (T.LIST, T.SET):
            etype, items = node.value
            for i, item in enumerate(items):
                if etype == T.STRUCT:
                    out += thrift_slots(item, child, f"{p}[{i}]")
                else:
                    out.append(Slot(f"{p}[{i}]", str(etype), (lambda items=items, i=i: items[i]),
                                    (lambda v, items=items, i=i: items.__setitem__(i, v))))
        else:
            out.append(Slot(p, str(node.type), (lambda node=node: node.value), (lambda v, node=node: setattr(node, "value", v))))
    return out


def thrift_structs(fields: dict[int, Node], struct_name: str | None, path: str) -> Iterator[tuple[str, dict[int, Node]]]:
    yield path, fields
    for fid, node in fields.items():
        fname, child = _name(struct_name, fid)
        if node.type == T.STRUCT:
            yield from thrift_structs(node.value, child, f"{path}.{fname}")
        elif node.type in (T.LIST, T.SET) and node.value[0] == T.STRUCT:
            for i, item in enumerate(node.value[1]):
                yield from thrift_structs(item, child, f"{path}.{fname}[{i}]")


def mutate_slot(slot: Slot, rng: random.Random, same_length: bool) -> str:
    """Change the slot's value; returns ``old -> new``."""
    old = slot.get()
    kind = int(slot.kind) if slot.kind.isdigit() else slot.kind
    if kind in _INT_RANGE or kind in ("varint", "fixed32", "fixed64"):
        if kind in _INT_RANGE:
            lo, hi = _INT_RANGE[kind]  # type: ignore[index]
        else:
            lo, hi = 0, {"varint": 2**64 - 1, "fixed32": 2**32 - 1, "fixed64": 2**64 - 1}[kind]  # type: ignore[index]
        new = old
        for _ in range(20):
            new = _interesting_ints(old, rng, lo, hi)
            if new != old and (not same_length or _encoded_length(kind, new) == _encoded_length(kind, old)):
                break
        else:
            new = old ^ 1 if lo <= (old ^ 1) <= hi else old
    elif kind in (T.BOOL_TRUE, T.BOOL_FALSE):
        new = not old
    elif kind == T.DOUBLE:
        new = rng.choice([math.nan, math.inf, -math.inf, -old, 0.0, old * 2 + 1])
    elif kind in (T.BINARY, "bytes"):
        new = _mutate_bytes(bytes(old), rng, same_length)
    else:
        raise Skip(f"no mutation for {slot.path} of type {slot.kind}")
    slot.set(new)
    return f"{slot.path}: {_short(old)} -> {_short(new)}"


def _encoded_length(kind: Any, v: int) -> int:
    if kind in ("fixed32", "fixed64"):
        return 0
    n = ((v << 1) ^ (v >> 63)) & (2**64 - 1) if kind in _INT_RANGE else v
    return max(1, (n.bit_length() + 6) // 7)


def _short(v: Any) -> str:
    if isinstance(v, (bytes, bytearray, memoryview)):
        b = bytes(v)
        return repr(b[:24]) + ("..." if len(b) > 24 else "")
    return repr(v)


@dataclass
class ParquetLayout:
    body: bytes
    footer: dict[int, Node]
    pages: list[tuple[int, int, int, int, int]]  # (row group, column, header start, header end, body end)


def parquet_layout(data: bytes) -> ParquetLayout:
    n = struct.unpack("<I", data[-8:-4])[0]
    footer = page_files.file_footer(data)
    return ParquetLayout(data[: len(data) - 8 - n], footer, page_files.page_spans(data, footer))


def _with_footer(body: bytes, footer: dict[int, Node]) -> bytes:
    raw = encode(footer)
    return bytes(body) + raw + struct.pack("<I", len(raw)) + b"PAR1"


def _pick_slot(slots: list[Slot], rng: random.Random, kinds: tuple[str, ...] | None = None) -> Slot:
    chosen = [s for s in slots if kinds is None or s.kind in kinds]
    if not chosen:
        raise Skip("no such field")
    return rng.choice(chosen)


_INT_KINDS = tuple(str(k) for k in _INT_RANGE)


def _parquet_footer(data: bytes, rng: random.Random) -> Mutant:
    lay = parquet_layout(data)
    r = rng.random()
    if r < 0.1:
        path, fields = rng.choice([s for s in thrift_structs(lay.footer, "FileMetaData", "footer") if s[1]])
        fid = rng.choice(list(fields))
        del fields[fid]
        what = f"{path}: field {fid} dropped"
        region = PRUNING if any(f in path for f in _PRUNING_FIELDS) else DATA
    else:
        slots = thrift_slots(lay.footer, "FileMetaData", "footer")
        kinds = _INT_KINDS if r < 0.7 else (str(T.BINARY),) if r < 0.9 else None
        slot = _pick_slot(slots, rng, kinds)
        what = mutate_slot(slot, rng, same_length=False)
        region = PRUNING if any(f in slot.path for f in _PRUNING_FIELDS) else DATA
    return Mutant(_with_footer(lay.body, lay.footer), what, region)


def _parquet_page_header(data: bytes, rng: random.Random, dictionary_only: bool = False) -> Mutant:
    lay = parquet_layout(data)
    pages = lay.pages
    if dictionary_only:
        pages = [p for p in pages if 7 in _typed_at(data, p[2])[0]]
    if not pages:
        raise Skip("no such page")
    rg, col, start, end, _ = rng.choice(pages)
    header = _typed_at(data, start)[0]
    slot = _pick_slot(thrift_slots(header, "PageHeader", f"row group {rg} column {col} page at {start}"), rng)
    what = mutate_slot(slot, rng, same_length=True)
    raw = encode(header)
    region = PRUNING if "statistics" in slot.path else DATA
    return Mutant(data[:start] + raw + data[end:], what + ("" if len(raw) == end - start else " (header length changed)"), region)


def _parquet_page_body(data: bytes, rng: random.Random, dictionary_only: bool = False) -> Mutant:
    lay = parquet_layout(data)
    pages = [p for p in lay.pages if p[4] > p[3]]
    if dictionary_only:
        pages = [p for p in pages if 7 in _typed_at(data, p[2])[0]]
    if not pages:
        raise Skip("no such page")
    rg, col, _, start, end = rng.choice(pages)
    out = bytearray(data)
    i = rng.randrange(start, end)
    out[i] = rng.choice([out[i] ^ (1 << rng.randrange(8)), rng.randrange(256), 0, 0xFF])
    return Mutant(bytes(out), f"row group {rg} column {col} page body at {start}: byte {i - start} of {end - start}: {data[i]} -> {out[i]}")


def _parquet_page_index(data: bytes, rng: random.Random) -> Mutant:
    lay = parquet_layout(data)
    found = []
    for rg, row_group in enumerate(lay.footer[4].value[1]):
        for c, chunk in enumerate(row_group[1].value[1]):
            if 4 in chunk and 5 in chunk:
                found.append((rg, c, chunk, 4, "OffsetIndex"))
            if 6 in chunk and 7 in chunk:
                found.append((rg, c, chunk, 6, "ColumnIndex"))
    if not found:
        raise Skip("no page index")
    rg, c, chunk, fid, name = rng.choice(found)
    off, length = chunk[fid].value, chunk[fid + 1].value
    index = _typed_at(data, off, off + length)[0]
    slot = _pick_slot(thrift_slots(index, name, f"row group {rg} column {c} {name}"), rng)
    what = mutate_slot(slot, rng, same_length=False)
    raw = encode(index)
    # the changed index goes after the data; the chunk points at it
    chunk[fid] = Node(T.I64, len(lay.body))
    chunk[fid + 1] = Node(T.I32, len(raw))
    return Mutant(_with_footer(lay.body + raw, lay.footer), what, PRUNING if name == "ColumnIndex" else DATA)


def _parquet_bloom(data: bytes, rng: random.Random) -> Mutant:
    lay = parquet_layout(data)
    found = []
    for rg, row_group in enumerate(lay.footer[4].value[1]):
        for c, chunk in enumerate(row_group[1].value[1]):
            md = chunk[3].value
            if 14 in md:
                found.append((rg, c, md[14].value))
    if not found:
        raise Skip("no Bloom filter")
    rg, c, off = rng.choice(found)
    header, bits = _typed_at(data, off)
    out = bytearray(data)
    if rng.random() < 0.4:
        slot = _pick_slot(thrift_slots(header, "BloomFilterHeader", f"row group {rg} column {c} Bloom filter header"), rng)
        what = mutate_slot(slot, rng, same_length=True)
        raw = encode(header)
        return Mutant(bytes(out[:off]) + raw + bytes(out[bits:]), what, PRUNING)
    size = header[1].value
    changed = []
    for _ in range(rng.randint(1, 16)):
        i = rng.randrange(size)
        out[bits + i] = rng.choice([0, out[bits + i] ^ (1 << rng.randrange(8))])
        changed.append(i)
    return Mutant(bytes(out), f"row group {rg} column {c} Bloom filter bitset bytes {sorted(changed)[:8]} changed", PRUNING)


# ---- protobuf (ORC) ---------------------------------------------------------------------------

VARINT, FIXED64, BYTES, FIXED32 = 0, 1, 2, 5
#: message -> field number -> the message its bytes hold, or "packed" (varints), or None (bytes)
_PROTO: dict[str, dict[int, str]] = {
    "PostScript": {4: "packed"},
    "Footer": {3: "StripeInformation", 4: "Type", 7: "ColumnStatistics"},
    "Type": {2: "packed"},
    "ColumnStatistics": {2: "IntegerStatistics", 3: "DoubleStatistics", 4: "StringStatistics", 5: "BucketStatistics",
                         6: "DecimalStatistics", 7: "DateStatistics", 8: "BinaryStatistics", 9: "TimestampStatistics",
                         12: "CollectionStatistics"},
    "BucketStatistics": {1: "packed"},
    "Metadata": {1: "StripeStatistics"},
    "StripeStatistics": {1: "ColumnStatistics"},
    "StripeFooter": {1: "Stream", 2: "ColumnEncoding"},
    "RowIndex": {1: "RowIndexEntry"},
    "RowIndexEntry": {1: "packed", 2: "ColumnStatistics"},
    "BloomFilterIndex": {1: "BloomFilter"},
}


@dataclass
class PField:
    number: int
    wire: int
    value: Any  # int; bytes; list[PField] (a message); list[int] (packed varints)
    packed: bool = False


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    return read_varint(buf, pos, len(buf))


def _put_varint(out: bytearray, n: int) -> None:
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return


def parse_message(buf: bytes, name: str | None) -> list[PField]:
    """A protobuf message as a list of fields, nested messages and packed lists decoded where
    :data:`_PROTO` knows them (the input must be a valid message: these are the seeds' own)."""
    out = []
    pos = 0
    nested = _PROTO.get(name or "", {})
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == VARINT:
            value, pos = _varint(buf, pos)
        elif wire == FIXED64:
            value, pos = int.from_bytes(buf[pos : pos + 8], "little"), pos + 8
        elif wire == FIXED32:
            value, pos = int.from_bytes(buf[pos : pos + 4], "little"), pos + 4
        elif wire == BYTES:
            n, pos = _varint(buf, pos)
            raw = bytes(buf[pos : pos + n])
            pos += n
            inner = nested.get(number)
            if inner == "packed":
                values, p = [], 0
                while p < len(raw):
                    v, p = _varint(raw, p)
                    values.append(v)
                out.append(PField(number, wire, values, packed=True))
                continue
            value = parse_message(raw, inner) if inner else raw
        else:
            raise ValueError(f"wire type {wire}")
        out.append(PField(number, wire, value))
    return out


def encode_message(fields: list[PField]) -> bytes:
    out = bytearray()
    for f in fields:
        _put_varint(out, (f.number << 3) | f.wire)
        if f.wire == VARINT:
            _put_varint(out, f.value)
        elif f.wire == FIXED64:
            out += (f.value & (2**64 - 1)).to_bytes(8, "little")
        elif f.wire == FIXED32:
            out += (f.value & (2**32 - 1)).to_bytes(4, "little")
        else:
            if f.packed:
                raw = bytearray()
                for v in f.value:
                    _put_varint(raw, v)
                payload = bytes(raw)
            elif isinstance(f.value, list):
                payload = encode_message(f.value)
            else:
                payload = bytes(f.value)
            _put_varint(out, len(payload))
            out += payload
    return bytes(out)


def proto_slots(fields: list[PField], path: str) -> list[Slot]:
    out: list[Slot] = []
    for f in fields:
        p = f"{path}.{f.number}"
        if f.packed:
            for i in range(len(f.value)):
                out.append(Slot(f"{p}[{i}]", "varint", (lambda f=f, i=i: f.value[i]), (lambda v, f=f, i=i: f.value.__setitem__(i, v))))
        elif isinstance(f.value, list):
            out += proto_slots(f.value, p)
        else:
            kind = {VARINT: "varint", FIXED64: "fixed64", FIXED32: "fixed32", BYTES: "bytes"}[f.wire]
            out.append(Slot(p, kind, (lambda f=f: f.value), (lambda v, f=f: setattr(f, "value", v))))
    return out


def _unframe(raw: bytes, codec: int) -> tuple[bytes, bool]:
    """The bytes of an ORC stream without its chunk headers, decompressed; and whether every
    chunk is stored original (then the decompressed bytes are in the file as they are)."""
    import cramjam

    if codec == 0:
        return raw, True
    out = bytearray()
    pos = 0
    all_original = True
    while pos < len(raw):
        h = raw[pos] | raw[pos + 1] << 8 | raw[pos + 2] << 16
        n, original = h >> 1, h & 1
        chunk = raw[pos + 3 : pos + 3 + n]
        pos += 3 + n
        if original:
            out += chunk
            continue
        all_original = False
        if codec == 1:
            out += zlib.decompress(chunk, -15)
        elif codec == 2:
            out += bytes(cramjam.snappy.decompress_raw(chunk))
        elif codec == 5:
            out += bytes(cramjam.zstd.decompress(chunk))
        elif codec == 4:
            out += bytes(cramjam.lz4.decompress_block(chunk))
        else:
            raise Skip(f"codec {codec}")
    return bytes(out), all_original


def _frame_original(raw: bytes, codec: int, block: int) -> bytes:
    if codec == 0:
        return raw
    out = bytearray()
    for i in range(0, max(1, len(raw)), max(1, block)):
        part = raw[i : i + block]
        out += ((len(part) << 1) | 1).to_bytes(3, "little") + part
    return bytes(out)


@dataclass
class OrcLayout:
    data: bytes
    postscript: list[PField]
    codec: int
    block: int
    footer_at: int
    metadata_at: int
    footer: list[PField]
    stripes: list[dict[int, int]] = field(default_factory=list)


def _fields_dict(fields: list[PField]) -> dict[int, Any]:
    return {f.number: f.value for f in fields}


def orc_layout(data: bytes) -> OrcLayout:
    ps_len = data[-1]
    ps = parse_message(data[-1 - ps_len : -1], "PostScript")
    d = _fields_dict(ps)
    codec, block = d.get(2, 0), d.get(3, 256 * 1024)
    footer_at = len(data) - 1 - ps_len - d[1]
    metadata_at = footer_at - d.get(5, 0)
    footer = parse_message(_unframe(data[footer_at : len(data) - 1 - ps_len], codec)[0], "Footer")
    stripes = [_fields_dict(f.value) for f in footer if f.number == 3]
    return OrcLayout(data, ps, codec, block, footer_at, metadata_at, footer, stripes)


def _orc_tail(lay: OrcLayout, metadata: bytes | None = None, footer: list[PField] | None = None,
              postscript: list[PField] | None = None) -> bytes:
    ps_len = lay.data[-1]
    meta_raw = lay.data[lay.metadata_at : lay.footer_at] if metadata is None else _frame_original(metadata, lay.codec, lay.block)
    foot_raw = lay.data[lay.footer_at : len(lay.data) - 1 - ps_len] if footer is None else _frame_original(
        encode_message(footer), lay.codec, lay.block)
    ps = postscript if postscript is not None else parse_message(lay.data[-1 - ps_len : -1], "PostScript")
    if postscript is None:
        for f in ps:
            if f.number == 1:
                f.value = len(foot_raw)
            elif f.number == 5:
                f.value = len(meta_raw)
    ps_raw = encode_message(ps)
    if len(ps_raw) > 255:
        raise Skip("postscript too long")
    return lay.data[: lay.metadata_at] + meta_raw + foot_raw + ps_raw + bytes([len(ps_raw)])


def _orc_postscript(data: bytes, rng: random.Random) -> Mutant:
    lay = orc_layout(data)
    slot = _pick_slot(proto_slots(lay.postscript, "postscript"), rng)
    what = mutate_slot(slot, rng, same_length=False)
    return Mutant(_orc_tail(lay, postscript=lay.postscript), what)


def _orc_footer(data: bytes, rng: random.Random) -> Mutant:
    lay = orc_layout(data)
    slots = proto_slots(lay.footer, "footer")
    slot = _pick_slot(slots, rng)
    what = mutate_slot(slot, rng, same_length=False)
    region = PRUNING if slot.path.startswith("footer.7.") else DATA
    return Mutant(_orc_tail(lay, footer=lay.footer), what, region)


def _orc_metadata(data: bytes, rng: random.Random) -> Mutant:
    lay = orc_layout(data)
    if lay.footer_at == lay.metadata_at:
        raise Skip("no metadata")
    meta = parse_message(_unframe(data[lay.metadata_at : lay.footer_at], lay.codec)[0], "Metadata")
    what = mutate_slot(_pick_slot(proto_slots(meta, "metadata (stripe statistics)"), rng), rng, same_length=False)
    return Mutant(_orc_tail(lay, metadata=encode_message(meta)), what, PRUNING)


def _stripe_streams(lay: OrcLayout, s: int) -> tuple[list[PField], int, int, list[tuple[int, int, int, int]]]:
    """A stripe's footer (decoded), where it is, and its streams as (kind, column, offset, length)."""
    st = lay.stripes[s]
    start = st.get(1, 0) + st.get(2, 0) + st.get(3, 0)
    raw = lay.data[start : start + st.get(4, 0)]
    footer = parse_message(_unframe(raw, lay.codec)[0], "StripeFooter")
    streams = []
    pos = st.get(1, 0)
    for f in footer:
        if f.number == 1:
            d = _fields_dict(f.value)
            streams.append((d.get(1, 0), d.get(2, 0), pos, d.get(3, 0)))
            pos += d.get(3, 0)
    return footer, start, len(raw), streams


def _in_place(lay: OrcLayout, start: int, length: int, name: str, what_prefix: str, rng: random.Random,
              region_of: Callable[[str], str]) -> Mutant:
    """Mutate the message stored at ``start`` (original chunks or an uncompressed file only: the
    changed message takes the place of the old one, at the same length)."""
    raw = lay.data[start : start + length]
    plain, original = _unframe(raw, lay.codec)
    if not original:
        raise Skip("compressed message")
    message = parse_message(plain, name)
    slot = _pick_slot(proto_slots(message, what_prefix), rng)
    what = mutate_slot(slot, rng, same_length=True)
    new = encode_message(message)
    if len(new) != len(plain):
        raise Skip("length changed")
    framed = _frame_original(new, lay.codec, lay.block)
    if len(framed) != length:
        raise Skip("framing changed")
    return Mutant(lay.data[:start] + framed + lay.data[start + length :], what, region_of(slot.path))


def _orc_stripe_footer(data: bytes, rng: random.Random) -> Mutant:
    lay = orc_layout(data)
    s = rng.randrange(len(lay.stripes))
    _, start, length, _ = _stripe_streams(lay, s)
    return _in_place(lay, start, length, "StripeFooter", f"stripe {s} footer", rng, lambda p: DATA)


def _orc_index(data: bytes, rng: random.Random, kinds: tuple[int, ...], name: str) -> Mutant:
    lay = orc_layout(data)
    s = rng.randrange(len(lay.stripes))
    streams = [st for st in _stripe_streams(lay, s)[3] if st[0] in kinds and st[3] > 0]
    if not streams:
        raise Skip("no such stream")
    _, column, off, length = rng.choice(streams)
    where = f"stripe {s} column {column} {name}"
    # a row index entry's statistics (field 2) only prune; its positions (field 1) place rows
    return _in_place(lay, off, length, name, where, rng,
                     lambda p: PRUNING if name == "BloomFilterIndex" or p[len(where):].startswith(".1.2") else DATA)


def _orc_stream_bytes(data: bytes, rng: random.Random) -> Mutant:
    lay = orc_layout(data)
    s = rng.randrange(len(lay.stripes))
    streams = [st for st in _stripe_streams(lay, s)[3] if st[3] > 0]
    kind, column, off, length = rng.choice(streams)
    out = bytearray(data)
    i = rng.randrange(length)
    out[off + i] = rng.choice([out[off + i] ^ (1 << rng.randrange(8)), rng.randrange(256), 0, 0xFF])
    region = PRUNING if kind in (7, 8) else DATA  # a damaged row index may also misplace rows: not allowed
    return Mutant(bytes(out), f"stripe {s} column {column} stream kind {kind} at {off}: byte {i} of {length}: {data[off + i]} -> {out[off + i]}",
                  region, damaged_column=column if kind in (0, 1, 2, 3, 5) else None)


def _flip_bit(data: bytes, rng: random.Random) -> Mutant:
    """One bit: with one change, pyarrow's verdict is about the same damage as lazyscan's."""
    out = bytearray(data)
    i = rng.randrange(len(out))
    out[i] ^= 1 << rng.randrange(8)
    return Mutant(bytes(out), f"bit flipped at {i} of {len(data)}: {data[i]} -> {out[i]}")


def _truncate(data: bytes, rng: random.Random) -> Mutant:
    cut = rng.randrange(len(data))
    if data.startswith(b"PAR1") and rng.random() < 0.5:
        n = struct.unpack("<I", data[-8:-4])[0]
        tail = data[len(data) - 8 - n :]
        cut = rng.randrange(4, len(data) - len(tail))
        return Mutant(data[:cut] + tail, f"cut at {cut} of {len(data)}, footer kept")
    return Mutant(data[:cut], f"cut at {cut} of {len(data)}")


#: (weight, name, mutator) for each format
MUTATIONS: dict[str, list[tuple[int, str, Callable[[bytes, random.Random], Mutant]]]] = {
    "parquet": [
        (6, "footer", _parquet_footer),
        (5, "page header", _parquet_page_header),
        (2, "dictionary page header", lambda d, r: _parquet_page_header(d, r, dictionary_only=True)),
        (3, "page body", _parquet_page_body),
        (1, "dictionary page body", lambda d, r: _parquet_page_body(d, r, dictionary_only=True)),
        (3, "page index", _parquet_page_index),
        (2, "Bloom filter", _parquet_bloom),
        (2, "bit flip", _flip_bit),
        (1, "truncation", _truncate),
    ],
    "orc": [
        (2, "postscript", _orc_postscript),
        (5, "footer", _orc_footer),
        (2, "metadata", _orc_metadata),
        (4, "stripe footer", _orc_stripe_footer),
        (4, "row index", lambda d, r: _orc_index(d, r, (6,), "RowIndex")),
        (2, "Bloom filter index", lambda d, r: _orc_index(d, r, (7, 8), "BloomFilterIndex")),
        (4, "stream bytes", _orc_stream_bytes),
        (2, "bit flip", _flip_bit),
        (1, "truncation", _truncate),
    ],
}


def mutate(seeds: list[Seed], seed: int, case: int) -> tuple[Seed, Mutant]:
    """The mutation of case ``case``: the same on every run."""
    rng = random.Random(f"{seed}:{case}")
    s = rng.choice(seeds)
    options = MUTATIONS[s.format]
    for _ in range(50):
        _, name, mutator = rng.choices(options, weights=[o[0] for o in options])[0]
        try:
            m = mutator(s.data, rng)
        except Skip:
            continue
        m.what = f"{s.name}.{s.format}: {name}: {m.what}"
        m.kind = f"{s.format} {name}"
        return s, m
    return s, dataclasses.replace(_flip_bit(s.data, rng), what=f"{s.name}.{s.format}: bit flip", kind=f"{s.format} bit flip")


# ---- the oracle ------------------------------------------------------------------------------------


@dataclass
class Finding:
    seed: int
    case: int
    kind: str  # "raw exception", "wrong rows", "crash", "hang", "harness error"
    phase: str
    what: str  # the mutation
    message: str
    trace: str = ""
    mutation: str = ""  # the format and the mutation's name
    verdict: str = ""  # what pyarrow made of the mutant

    @property
    def signature(self) -> str:
        """What identifies the bug rather than the case: for an exception its class and the
        innermost lazyscan frame; for other rows the family of the mutation (damaged bytes, or
        the structure it changed) and pyarrow's verdict; for a crash or hang also the read."""
        if self.kind in ("raw exception", "harness error"):
            return f"{self.kind}: {self.message.split(':')[0]} at {_innermost_lazyscan_frame(self.trace)}"
        if self.kind == "wrong rows":
            return f"{self.kind}: {_family(self.mutation)}, {self.verdict}"
        return f"{self.kind}: {self.mutation}, {_read_kind(self.phase)}"

    def describe(self) -> str:
        text = f"seed {self.seed} case {self.case}: {self.kind} in {self.phase}\n  mutation: {self.what}\n  {self.message}"
        return text + ("\n" + self.trace if self.trace else "")


#: mutations that damage bytes without regard to what they hold: one family of findings
_DAMAGE = ("bit flip", "truncation", "page body", "dictionary page body", "stream bytes")


def _family(mutation: str) -> str:
    fmt, _, name = mutation.partition(" ")
    return f"{fmt} damaged bytes" if name in _DAMAGE else mutation


def _read_kind(phase: str) -> str:
    """The kind of read a phase names: "filtered scan", "read_columns(rows)", ..."""
    if phase.startswith("scan where"):
        return "filtered scan"
    if phase.startswith(("row group ", "stripe ")):
        return phase.split(" ")[-1]
    return phase


def _innermost_lazyscan_frame(trace: str) -> str:
    frames = [line.strip() for line in trace.splitlines() if line.strip().startswith("File ") and "/lazyscan/" in line]
    if not frames:
        return "?"
    last = frames[-1]  # File ".../lazyscan/x/y.py", line N, in f
    path = last.split('"')[1]
    return path[path.rindex("/lazyscan/") + 1 :] + " in " + last.rsplit(" in ", 1)[-1]


@dataclass
class Outcome:
    """What one case did: per read, "error" (a lazyscan error), "right", "fewer" (a filtered
    scan lost rows to a lying statistic); and the findings."""

    reads: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


def _row_keys(t: pa.Table) -> list[str]:
    return [repr({k: ("NaN" if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}) for r in t.to_pylist()]


def _is_subsequence(small: pa.Table, big: pa.Table) -> bool:
    if small.column_names != big.column_names:
        return False
    with contextlib.suppress(pa.ArrowException):
        big = big.cast(small.schema)  # ORC timestamps: pyarrow's nanoseconds in lazyscan's unit
    it = iter(_row_keys(big))
    return all(any(k == b for b in it) for k in _row_keys(small))


def _filtered_reading(t: pa.Table, p: Predicate) -> pa.Table:
    """The rows of a reading ``t`` that ``p`` keeps. A mutated footer may give the column another
    type than the predicate's literal (a double column read as tinyint): the literal that type
    cannot hold is then compared with the column widened to the literal's type, as SQL does
    (decimals: both widened, as Spark's DecimalPrecision does).
    It may also rename the column to a name that differs only in case (``F64``): the
    predicate's name then finds it, as Spark resolves names without regard to case."""
    if p.column not in t.column_names:
        same = [n for n in t.column_names if n.lower() == p.column.lower()]
        if len(same) != 1:
            raise KeyError(p.column)
        p = dataclasses.replace(p, column=same[0])
    column = t.column(p.column)
    try:
        return filtered(t, p.mask(column))
    except pa.ArrowInvalid:
        if p.values and pa.types.is_decimal(column.type) and pa.types.is_decimal(p.values[0].type):
            # a precision too small for the literal (or for the values, which are read whole):
            # both widened, as Spark's DecimalPrecision compares them
            wide = pa.decimal128(38, max(column.type.scale, p.values[0].type.scale))
            return filtered(t, p.mask(column.cast(wide, safe=False)))
        if not p.values or not (pa.types.is_integer(column.type) and pa.types.is_floating(p.values[0].type)):
            raise
        return filtered(t, p.mask(column.cast(p.values[0].type)))


#: mutations of stored values alone (a page's bytes, a stream's bytes): what the file says about
#: its values (statistics, page index, Bloom filters) still describes the original ones
_VALUE_DAMAGE = ("parquet page body", "parquet dictionary page body", "parquet bit flip", "orc stream bytes", "orc bit flip")


def _damaged_values_only(got: pa.Table, want: pa.Table, column: str, unit_free: bool) -> bool:
    """Whether ``got`` is the rows ``want`` (the original file's) but for the values of
    ``column``, the one column whose value bytes were damaged.

    ORC keeps no checksums: damage to the bytes of a stream that leaves its runs well formed
    (a deflate block that still inflates, a value byte of a run) reads as other values, which
    only a read of the whole stripe can show to be wrong (the lengths no longer add up to the
    stream, a later run is cut). A selective read decodes the rows it needs and checks the runs
    of their row groups, not the whole stripe, so it returns the damaged values of its rows
    where the full read (and pyarrow, which reads whole stripes) refuses the stripe. Its rows
    and every other column must still be the original ones."""
    if column not in got.column_names or got.column_names != want.column_names or got.num_rows != want.num_rows:
        return False
    return table_difference(got.drop_columns([column]), want.drop_columns([column]), unit_free) is None


def _trusting_statistics(got: pa.Table, original: pa.Table, damaged: pa.Table, p: Predicate) -> bool:
    """Whether a filtered scan of a file whose values were damaged (``damaged``: pyarrow's
    reading of it) returned rows a reader that trusts the file's statistics returns.

    The statistics describe the original values: a tier that rules a row group or page out by
    them drops its rows whatever their damaged values are, and one that finds every row of it
    matching keeps them without evaluating the predicate on them (Arrow's dataset scanner drops
    a filter its row group's statistics guarantee the same way). So a row of the damaged reading
    may be kept when its damaged or its original value matches, and must be kept when both do;
    each kept row has its damaged values. Rows changed without a lie of the statistics are
    judged as before: their damaged value decides."""
    if damaged.num_rows != original.num_rows or p.column not in damaged.column_names:
        return False
    try:
        now = pc.fill_null(p.mask(damaged.column(p.column)), False)
        before = pc.fill_null(p.mask(original.column(p.column)), False)
        must, may = filtered(damaged, pc.and_(now, before)), filtered(damaged, pc.or_(now, before))
    except pa.ArrowException:
        return False
    return _is_subsequence(got, may) and _is_subsequence(must, got)


def _selection_reads(path: Path, fmt: str, rng: random.Random) -> Iterator[tuple[str, int, np.ndarray, Callable[[], pa.Table], list[str]]]:
    """(description, first row of the unit in the file, rows, read, the columns it reads) of
    random row selections."""
    from lazyscan.orc import OrcFile
    from lazyscan.parquet import ParquetFile

    if fmt == "parquet":
        pf = ParquetFile(str(path))
        start = 0
        for rg in range(pf.num_row_groups):
            n = pf.metadata.row_groups[rg].num_rows
            if n > 0:
                rows = np.sort(np.array(rng.sample(range(n), min(n, rng.choice([1, 7, 100])))))
                flat = [d for d in pf.schema.columns if d.flat]
                yield (f"row group {rg} read_row_group(rows)", start, rows, lambda rg=rg, rows=rows: pf.read_row_group(rg, rows=rows),
                       pf.arrow_schema.names)
                yield (f"row group {rg} read_columns(rows)", start, rows, lambda rg=rg, rows=rows, flat=flat: pa.table(
                    dict(zip([d.name for d in flat], pf.read_columns(rg, [d.index for d in flat], rows)))), [d.name for d in flat])
            start += n
        return
    f = OrcFile(path)
    start = 0
    for s in range(f.num_stripes):
        n = f.stripe(s).number_of_rows
        if n > 0:
            rows = np.sort(np.array(rng.sample(range(n), min(n, rng.choice([1, 7, 100])))))
            # by position: a mutated footer may give two columns one name
            yield (f"stripe {s} read_column(rows)", start, rows,
                   lambda s=s, rows=rows: pa.Table.from_arrays([f.read_column(s, i, rows) for i in range(len(f.columns))],
                                                               names=[c.name for c in f.columns]), [c.name for c in f.columns])
        start += n


def _declares_bit_packed_levels(header: dict[int, Node]) -> bool:
    """Whether a page header is a v1 data page's whose definition levels are BIT_PACKED."""
    return 5 in header and header[5].value.get(3, Node(0, 0)).value == page_files.BIT_PACKED


def _levels_in_spec_order(data: bytes, base: pa.Table) -> pa.Table | None:
    """``base`` with the rows of each v1 data page of the Parquet mutant ``data`` whose definition
    levels are declared BIT_PACKED replaced by pyarrow's reading of that page alone with the bits
    of its levels reversed. The format packs those levels from the most significant bit of each
    byte, as parquet-mr and lazyscan read them; pyarrow reads them from the least significant
    (apache/arrow#42368), so its reading of the mutant is not the format's. The seeds' columns are
    flat and nullable (levels one bit wide). None when no page has such levels or the mutant
    cannot be taken apart."""
    found = []
    try:
        footer = page_files.file_footer(data)
        # the page headers alone first: most mutants have no such page, and need no decompression
        if not any(_declares_bit_packed_levels(_typed_at(data, start)[0]) for _, _, start, _, _ in page_files.page_spans(data, footer)):
            return None
        starts = np.cumsum([0] + [rg[3].value for rg in footer[4].value[1]]).tolist()
        for chunk in page_files.chunks(data):
            if 3 not in chunk.element or chunk.element[3].value != page_files.OPTIONAL:
                continue
            dictionary = [p for p, first in zip(chunk.pages, chunk.first_rows) if first < 0]
            for page, first in zip(chunk.pages, chunk.first_rows):
                if first < 0 or not _declares_bit_packed_levels(page.header):
                    continue
                count = (page.header[5].value[1].value + 7) // 8
                if len(page.body) < count:
                    return None
                spec = page_files.Page(page.header, page_files.reverse_bits(page.body[:count]) + page.body[count:])
                alone = pq.read_table(pa.BufferReader(page_files.single_chunk_file(chunk, [*dictionary, spec])))
                found.append((starts[chunk.row_group] + first, chunk.column, alone.column(0).combine_chunks()))
        out = base
        for start, c, values in found:
            old = out.column(c)
            out = out.set_column(c, out.column_names[c], pa.concat_arrays([
                old.slice(0, start).combine_chunks(), values.cast(old.type), old.slice(start + len(values)).combine_chunks()]))
    except Exception:  # a mutant pyarrow cannot read this way has no such reading
        return None
    return out if found else None


def check_mutant(s: Seed, m: Mutant, path: Path, seed: int, case: int, phase: Callable[[str], None],
                 use_reference: bool = True) -> Outcome:
    """Read the mutant at ``path`` every way and judge each read (see the module docstring).
    Without ``use_reference`` (pyarrow crashed on this mutant) pyarrow counts as refusing it."""
    import lazyscan
    from lazyscan.errors import LazyScanError

    out = Outcome()
    unit_free = s.format == "orc"
    phase("pyarrow")
    ref: pa.Table | None = None
    if use_reference:
        with contextlib.suppress(Exception):  # pyarrow's refusal, whatever it raises
            read = pyarrow_read(path)
            read.column_names  # noqa: B018 - names that are not UTF-8 cannot be compared: a refusal too
            ref = read
    candidates = [s.original]
    if ref is not None and table_difference(ref, s.original, unit_free) is not None:
        candidates.append(ref)
    if s.format == "parquet":
        spec_order = _levels_in_spec_order(path.read_bytes(), ref if ref is not None else s.original)
        if spec_order is not None:
            candidates.append(spec_order)
    refs = "pyarrow reads the original rows" if len(candidates) == 1 and ref is not None else (
        "pyarrow refuses the mutant" if ref is None else "pyarrow reads other rows")
    # the top-level column whose value bytes alone were damaged (the seeds' columns are flat: ORC id i + 1)
    damaged = s.original.column_names[m.damaged_column - 1] if m.damaged_column and m.damaged_column <= s.original.num_columns else None

    def judge(where: str, read: Callable[[], pa.Table], expected: Callable[[pa.Table], pa.Table], subset_ok: bool,
              predicate: Predicate | None = None) -> None:
        phase(where)
        try:
            got = read()
        except LazyScanError:
            out.reads.append("error")
            return
        except Exception as e:
            out.findings.append(Finding(seed, case, "raw exception", where, m.what, f"{type(e).__name__}: {e}",
                                        traceback.format_exc(), m.kind, refs))
            return
        wanted = []
        for c in candidates:
            try:
                wanted.append(expected(c))
            except (IndexError, KeyError, pa.ArrowException):
                continue  # the selection is outside that reading, or names columns it does not have
        try:
            if any(table_difference(got, w, unit_free) is None for w in wanted):
                out.reads.append("right")
                return
            if subset_ok and wanted and _is_subsequence(got, wanted[0]):
                out.reads.append("fewer")
                return
            if predicate is not None and ref is not None and m.kind in _VALUE_DAMAGE and _trusting_statistics(got, s.original, ref, predicate):
                out.reads.append("right")
                return
            if (damaged is not None and ref is None and where != "whole scan" and out.reads[:1] == ["error"] and wanted
                    and _damaged_values_only(got, wanted[0], damaged, unit_free)):
                out.reads.append("damaged values")  # the full read refuses the stripe: see _damaged_values_only
                return
            why = table_difference(got, wanted[0], unit_free) if wanted else "no reading holds these rows"
        except UnicodeDecodeError as e:
            why = f"column names that are not UTF-8 ({e})"
        out.findings.append(Finding(seed, case, "wrong rows", where, m.what, f"{why} ({refs})", "", m.kind, refs))

    judge("whole scan", lambda: lazyscan.scan(str(path), threads=1).to_table(), lambda t: t, False)
    rng = random.Random(f"{seed}:{case}:reads")
    phase("opening for row selections")
    try:
        selections = list(_selection_reads(path, s.format, rng))
    except LazyScanError:
        selections = []
    except Exception as e:
        out.findings.append(Finding(seed, case, "raw exception", "opening the file", m.what, f"{type(e).__name__}: {e}",
                                    traceback.format_exc(), m.kind, refs))
        selections = []
    for where, start, rows, read, names in selections[:4]:
        judge(where, read, lambda t, start=start, rows=rows, names=names: (t if t.column_names == names else t.select(names)).take(
            pa.array(rows + start)), False)
    for p in rng.sample(s.predicates, 2):
        where = p.sql()
        judge(f"scan where {where}", lambda where=where: lazyscan.scan(str(path), where=where, threads=1).to_table(),
              lambda t, p=p: _filtered_reading(t, p), m.region == PRUNING, p)
    return out


def run_case(seeds: list[Seed], seed: int, case: int, folder: Path, phase: Callable[[str], None] = lambda p: None,
             use_reference: bool = True) -> Outcome:
    from lazyscan.parquet import clear_caches

    s, m = mutate(seeds, seed, case)
    phase("mutation: " + m.what)
    phase("kind: " + m.kind)
    path = folder / f"case{case}.{s.format}"
    path.write_bytes(m.data)
    clear_caches()
    try:
        return check_mutant(s, m, path, seed, case, phase, use_reference)
    except Exception as e:  # the harness's own failure: reported, the worker goes on
        return Outcome([], [Finding(seed, case, "harness error", "judging", m.what, f"{type(e).__name__}: {e}",
                                    traceback.format_exc(), m.kind)])
    finally:
        path.unlink(missing_ok=True)


# ---- running cases in a child process -----------------------------------------------------------


def _worker(conn: Any, seeds_dir: str, work_dir: str, log_path: str, seed: int, timeout: float, crash_at: int | None) -> None:
    log = open(log_path, "a")  # noqa: SIM115 - open for the process's life: faulthandler writes to it
    faulthandler.enable(file=log)
    seeds = load_seeds(Path(seeds_dir))
    folder = Path(work_dir)
    for s in seeds:  # compiles the kernels before any case's clock starts; the seeds must read right
        outcome = check_mutant(s, Mutant(s.data, f"{s.name}: unchanged"), s.path, seed, -1, lambda p: None)
        if outcome.findings or "right" not in outcome.reads:
            conn.send(("seed", [f.describe() for f in outcome.findings] or [f"{s.name}: {outcome.reads}"]))
            return
    conn.send(("ready", len(seeds)))
    while True:
        job = conn.recv()
        if job is None:
            return
        case, use_reference = job
        if case == crash_at:
            os.abort()  # lets the tests check that a crash is caught
        faulthandler.dump_traceback_later(timeout * 0.8, file=log)
        outcome = run_case(seeds, seed, case, folder, lambda p: conn.send(("phase", p)), use_reference)
        faulthandler.cancel_dump_traceback_later()
        conn.send(("done", outcome))


@dataclass
class Report:
    seed: int
    cases: int = 0
    #: cases whose mutant crashed pyarrow (then judged with pyarrow counted as refusing it)
    reference_crashes: list[int] = field(default_factory=list)
    reads: dict[str, int] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        reads = ", ".join(f"{k} {v}" for k, v in sorted(self.reads.items()))
        return (f"seed {self.seed}: {self.cases} cases in {self.seconds:.0f} s (reads: {reads}); {len(self.findings)} findings; "
                f"pyarrow crashed on {len(self.reference_crashes)} mutants")


class _Worker:
    def __init__(self, seeds_dir: Path, work_dir: Path, seed: int, timeout: float, crash_at: int | None) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.log = work_dir / f"worker-{time.monotonic_ns()}.log"
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker, args=(child, str(seeds_dir), str(work_dir), str(self.log), seed, timeout, crash_at),
                                   daemon=True)
        self.process.start()
        child.close()
        try:
            started = self.conn.poll(900)
            kind, payload = self.conn.recv() if started else ("timeout", ["no answer in 900 s"])
        except (EOFError, ConnectionError):
            kind, payload = "died", [f"exit code {self.process.exitcode}", self.log_tail()]
        if kind != "ready":
            self.stop()
            raise RuntimeError(f"the fuzz worker did not start ({kind}):\n" + "\n".join(payload))

    def log_tail(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-6000:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)
        self.conn.close()


def _one_case(worker: _Worker, case: int, use_reference: bool, seed: int, timeout: float) -> tuple[Outcome | None, Finding | None, str]:
    """Send one case to the worker and wait for its outcome, or for its death or silence."""
    worker.conn.send((case, use_reference))
    phase, what, kind, deadline = "starting", "?", "", time.monotonic() + timeout
    while True:
        try:
            msg = worker.conn.recv() if worker.conn.poll(max(0.0, deadline - time.monotonic())) else None
        except (EOFError, ConnectionError):
            worker.process.join(5)
            return None, Finding(seed, case, "crash", phase, what, f"the process died (exit code {worker.process.exitcode})",
                                 worker.log_tail(), kind), phase
        if msg is None:
            return None, Finding(seed, case, "hang", phase, what, f"no answer in {timeout:.0f} s", worker.log_tail(), kind), phase
        if msg[0] == "phase":
            phase = msg[1]
            if phase.startswith("mutation: "):
                what = phase[len("mutation: ") :]
            elif phase.startswith("kind: "):
                kind = phase[len("kind: ") :]
            continue
        return msg[1], None, phase


def run(seed: int, seconds: float, folder: Path, *, first_case: int = 0, cases: list[int] | None = None,
        timeout: float = 60.0, crash_at: int | None = None, report: Callable[[str], None] | None = None) -> Report:
    """Run cases ``first_case, first_case + 1, ...`` (or ``cases``) of ``seed`` for about
    ``seconds`` in a child process; findings come back in the report (``report`` gets each one's
    description as it is found)."""
    seeds_dir, work_dir = folder / "seeds", folder / "work"
    work_dir.mkdir(parents=True, exist_ok=True)
    write_seeds(seeds_dir)
    t0 = time.monotonic()
    result = Report(seed)
    worker = _Worker(seeds_dir, work_dir, seed, timeout, crash_at)
    todo = iter(cases) if cases is not None else iter(range(first_case, 2**62))
    try:
        for case in todo:
            if cases is None and time.monotonic() - t0 > seconds:
                break
            use_reference = True
            while True:
                outcome, finding, phase = _one_case(worker, case, use_reference, seed, timeout)
                if finding is None and outcome is not None:
                    break
                worker.stop()
                worker = _Worker(seeds_dir, work_dir, seed, timeout, crash_at)
                if finding is not None and finding.kind == "crash" and phase == "pyarrow" and use_reference:
                    result.reference_crashes.append(case)  # pyarrow's crash, not lazyscan's: judge without it
                    use_reference = False
                    continue
                outcome = Outcome([], [finding] if finding else [])
                break
            result.cases += 1
            for r in outcome.reads:
                result.reads[r] = result.reads.get(r, 0) + 1
            for f in outcome.findings:
                result.findings.append(f)
                if report:
                    report(f.describe())
        worker.conn.send(None)
    finally:
        worker.stop()
    result.seconds = time.monotonic() - t0
    return result


def replay(seed: int, case: int, folder: Path, write: Path | None = None) -> Outcome:
    """One case in this process (a crash takes the process down, with faulthandler's stack)."""
    faulthandler.enable()
    write_seeds(folder / "seeds")
    seeds = load_seeds(folder / "seeds")
    _, m = mutate(seeds, seed, case)
    if write is not None:
        write.write_bytes(m.data)
    (folder / "work").mkdir(exist_ok=True)
    return run_case(seeds, seed, case, folder / "work", lambda p: print(f"  {p}", flush=True))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1, help="the run's seed (case n of a seed is the same mutation every run)")
    parser.add_argument("--minutes", type=float, default=10.0, help="how long to run (default 10)")
    parser.add_argument("--first-case", type=int, default=0, help="the case to start from")
    parser.add_argument("--case", type=int, help="replay this one case in this process and print its findings")
    parser.add_argument("--write", type=Path, help="with --case: write the mutated file here")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds a case may take before it counts as a hang")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="lazyscan-fuzz-") as tmp:
        if args.case is not None:
            outcome = replay(args.seed, args.case, Path(tmp), args.write)
            print(f"reads: {outcome.reads}")
            for f in outcome.findings:
                print(f.describe())
            return 1 if outcome.findings else 0
        rep = run(args.seed, args.minutes * 60, Path(tmp), first_case=args.first_case, timeout=args.timeout,
                  report=lambda text: print(text + "\n", flush=True))
    print(rep.summary())
    by_signature: dict[str, list[int]] = {}
    for f in rep.findings:
        by_signature.setdefault(f.signature, []).append(f.case)
    for sig, found in sorted(by_signature.items()):
        print(f"  {sig}: cases {found[:10]}{' ...' if len(found) > 10 else ''}")
    return 1 if rep.findings else 0


if __name__ == "__main__":
    sys.exit(main())
