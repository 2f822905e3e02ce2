"""Layouts of other and older writers that other readers accept, read as they do.

- v2 data pages whose header says ``is_compressed = false`` although the values are compressed:
  parquet-cpp up to 1.5.1 (pyarrow before 3.0) wrote them (ARROW-10353); Arrow reads them by
  the writer's version (ARROW-17100). Example: ``ARROW-17100.parquet`` of apache/arrow-testing.
- offset indexes listing pages never written with offset -1 (Impala 4.0,
  ``alltypes_empty_pages.parquet``), and whose page sizes leave out the page header
  (parquet-go, ``issue206.parquet``);
- an offset index that locates pages wrongly in other ways: the chunk is read from its page
  headers instead, with the same rows;
- ORC type trees nested deeper than 64 levels (Impala's ``max_nesting_depth`` files).

Each example file is read whole, for random row selections and with filtered scans, against
pyarrow; more cases of each class are built from pyarrow-written files whose metadata is
rewritten into the legacy form (:class:`_Rewriter`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import lazyscan
from lazyscan import ParquetFile
from lazyscan.errors import CorruptFileError
from lazyscan.format.writers import v2_pages_always_compressed
from lazyscan.parquet import clear_caches, page_table
from lazyscan.parquet import thrift as T
from lazyscan.parquet.page_header import parse_page_header
from tests.support.compare import assert_same_array
from tests.support.data import foreign_file, parquet_testing_file

# --------------------------------------------------------------------------------------------
# rewriting Parquet metadata


class _TypedReader:
    """Compact-protocol structs as ``[field id, type, value]`` lists, so that they can be written
    back with :class:`~lazyscan.parquet.thrift.CompactWriter` after a change."""

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def _byte(self) -> int:
        b = self.data[self.pos]
        self.pos += 1
        return b

    def _varint(self) -> int:
        shift = result = 0
        while True:
            b = self._byte()
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result
            shift += 7

    def _zigzag(self) -> int:
        n = self._varint()
        return (n >> 1) ^ -(n & 1)

    def value(self, ftype: int) -> Any:
        if ftype in (T.I16, T.I32, T.I64):
            return self._zigzag()
        if ftype == T.BINARY:
            n = self._varint()
            self.pos += n
            return bytes(self.data[self.pos - n : self.pos])
        if ftype == T.STRUCT:
            return self.struct()
        if ftype == T.BYTE:
            return self._byte()
        if ftype == T.DOUBLE:
            self.pos += 8
            return struct.unpack("<d", self.data[self.pos - 8 : self.pos])[0]
        if ftype in (T.LIST, T.SET):
            head = self._byte()
            size, etype = head >> 4, head & 0x0F
            if size == 15:
                size = self._varint()
            if etype in (T.BOOL_TRUE, T.BOOL_FALSE):
                return (etype, [self._byte() == T.BOOL_TRUE for _ in range(size)])
            return (etype, [self.value(etype) for _ in range(size)])
        raise ValueError(f"type {ftype} is not used by Parquet metadata")

    def struct(self) -> list[list[Any]]:
        fields: list[list[Any]] = []
        last = 0
        while True:
            b = self._byte()
            if b == 0:
                return fields
            ftype, delta = b & 0x0F, b >> 4
            fid = last + delta if delta else self._zigzag()
            value = ftype == T.BOOL_TRUE if ftype in (T.BOOL_TRUE, T.BOOL_FALSE) else self.value(ftype)
            fields.append([fid, ftype, value])
            last = fid


def _field(fields: list[list[Any]], fid: int) -> Any:
    return next((f[2] for f in fields if f[0] == fid), None)


def _set(fields: list[list[Any]], fid: int, ftype: int, value: Any) -> None:
    for f in fields:
        if f[0] == fid:
            f[1], f[2] = ftype, value
            return
    fields.append([fid, ftype, value])
    fields.sort(key=lambda f: f[0])


def _encode(fields: list[list[Any]]) -> bytes:
    w = T.CompactWriter()
    w.struct([tuple(f) for f in fields])  # type: ignore[misc]
    return bytes(w.out)


#: an offset index entry: (offset, compressed_page_size, first_row_index)
Location = tuple[int, int, int]
#: column index entries: (null page, min, max, null count)
IndexEntry = tuple[bool, bytes, bytes, int]


#: a page as the rebuild hands it over: its header's fields and its body
Page = tuple[list[list[Any]], bytes]


class _Rewriter:
    """A Parquet file written anew page by page: ``page(codec, header, body)`` may change any
    page (sizes included: the chunks' offsets, sizes and offset indexes follow), the page
    indexes of every chunk go through ``offset_index`` / ``column_index`` (``(row group, column,
    entries) -> entries``), and the footer may say another writer."""

    def __init__(self, path: Path) -> None:
        self.data = path.read_bytes()
        footer_len = int.from_bytes(self.data[-8:-4], "little")
        self.footer = _TypedReader(self.data, len(self.data) - 8 - footer_len).struct()
        self.page: Callable[[int, list[list[Any]], bytes], Page] | None = None
        self.oi: Callable[[int, int, list[Location]], list[Location]] | None = None
        self.ci: Callable[[int, int, list[IndexEntry]], list[IndexEntry]] | None = None
        #: (row group, column, data page) of the page ``page`` is given (-1: a dictionary page)
        self.at = (0, 0, 0)

    def chunks(self) -> list[tuple[int, int, list[list[Any]]]]:
        return [(r, c, chunk) for r, rg in enumerate(_field(self.footer, 4)[1]) for c, chunk in enumerate(_field(rg, 1)[1])]

    def pages(self, chunk: list[list[Any]]) -> list[tuple[int, list[list[Any]], bytes]]:
        """(offset, header fields, body) of every page of a chunk."""
        md = _field(chunk, 3)
        start = _field(md, 9)
        if _field(md, 11) is not None and 4 <= _field(md, 11) < start:
            start = _field(md, 11)
        end = start + _field(md, 7)
        out = []
        pos = start
        while pos < end:
            reader = _TypedReader(self.data, pos)
            header = reader.struct()
            body = self.data[reader.pos : reader.pos + _field(header, 3)]
            out.append((pos, header, body))
            pos = reader.pos + len(body)
        return out

    def set_created_by(self, text: str) -> None:
        _set(self.footer, 6, T.BINARY, text.encode())

    def write(self, path: Path) -> Path:
        out = bytearray(b"PAR1")
        located: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for r, c, chunk in self.chunks():
            md = _field(chunk, 3)
            codec = _field(md, 4)
            chunk_start = len(out)
            data_pages: list[tuple[int, int]] = []
            dictionary = None
            for _pos, header, body in self.pages(chunk):
                self.at = (r, c, -1 if _field(header, 1) == 2 else len(data_pages))
                if self.page is not None:
                    header, body = self.page(codec, header, body)
                _set(header, 3, T.I32, len(body))
                encoded = _encode(header) + body
                if _field(header, 1) == 2:
                    dictionary = len(out)
                else:
                    data_pages.append((len(out), len(encoded)))
                out += encoded
            _set(md, 9, T.I64, data_pages[0][0])
            if dictionary is not None:
                _set(md, 11, T.I64, dictionary)
            _set(md, 7, T.I64, len(out) - chunk_start)
            located[(r, c)] = data_pages
        for r, c, chunk in self.chunks():
            if _field(chunk, 4) is not None:
                raw = _TypedReader(self.data, _field(chunk, 4)).struct()
                old = _oi_entries(raw)
                assert len(old) == len(located[(r, c)])
                entries = [(o, s, f) for (o, s), (_, _, f) in zip(located[(r, c)], old)]
                new = _oi_bytes(self.oi(r, c, entries) if self.oi else entries)
                _set(chunk, 4, T.I64, len(out))
                _set(chunk, 5, T.I32, len(new))
                out += new
            if _field(chunk, 6) is not None:
                raw = _TypedReader(self.data, _field(chunk, 6)).struct()
                stats = _ci_entries(raw)
                new = _ci_bytes(raw, self.ci(r, c, stats) if self.ci else stats)
                _set(chunk, 6, T.I64, len(out))
                _set(chunk, 7, T.I32, len(new))
                out += new
        for rg in _field(self.footer, 4)[1]:
            first = _field(_field(rg, 1)[1][0], 3)
            starts = [v for v in (_field(first, 9), _field(first, 11)) if v is not None]
            if _field(rg, 5) is not None:
                _set(rg, 5, T.I64, min(starts))
        footer = _encode(self.footer)
        path.write_bytes(bytes(out) + footer + len(footer).to_bytes(4, "little") + b"PAR1")
        return path


def _oi_entries(raw: list[list[Any]]) -> list[Location]:
    return [(_field(p, 1), _field(p, 2), _field(p, 3)) for p in _field(raw, 1)[1]]


def _oi_bytes(entries: list[Location]) -> bytes:
    locs = [[[1, T.I64, o], [2, T.I32, s], [3, T.I64, f]] for o, s, f in entries]
    return _encode([[1, T.LIST, (T.STRUCT, locs)]])


def _ci_entries(raw: list[list[Any]]) -> list[IndexEntry]:
    nulls = _field(raw, 1)[1]
    counts = _field(raw, 5)[1] if _field(raw, 5) is not None else [0] * len(nulls)
    return list(zip(nulls, _field(raw, 2)[1], _field(raw, 3)[1], counts))


def _ci_bytes(raw: list[list[Any]], entries: list[IndexEntry]) -> bytes:
    out = [[1, T.LIST, (T.BOOL_TRUE, [e[0] for e in entries])], [2, T.LIST, (T.BINARY, [e[1] for e in entries])],
           [3, T.LIST, (T.BINARY, [e[2] for e in entries])], [4, T.I32, _field(raw, 4) or 0]]
    if _field(raw, 5) is not None:
        out.append([5, T.LIST, (T.I64, [e[3] for e in entries])])
    return _encode(out)


# --------------------------------------------------------------------------------------------
# reading a file every way against pyarrow


def _flat_columns(pf: ParquetFile) -> list[int]:
    return [c.index for c in pf.schema.columns if c.flat]


def _reference(path: Path) -> pa.Table:
    return pq.read_table(path)


def _check_reads(path: Path, seed: int = 0, selections: int = 8) -> None:
    """Every flat column of every row group read whole, for random selections of several
    densities (the selected-rows route takes those of at most 2 %) one column at a time and all at once,
    equal to pyarrow."""
    clear_caches()
    rng = np.random.default_rng(seed)
    pf = ParquetFile(str(path))
    ref_file = pq.ParquetFile(path)
    columns = _flat_columns(pf)
    for rg in range(pf.num_row_groups):
        n = pf.metadata.row_groups[rg].num_rows
        ref = ref_file.read_row_group(rg)
        expected = {c: ref.column(pf.arrow_schema.field(pf.schema.columns[c].top_level_field).name) for c in columns}
        for c in columns:
            assert_same_array(pf.read_column(rg, c), expected[c], f"{path.name} rg {rg} column {c} whole")
        if n == 0:
            continue
        for k in range(selections):
            share = [0.001, 0.01, 0.02, 0.1, 0.5, 0.9][k % 6]
            rows = np.sort(rng.choice(n, size=max(1, min(n, int(n * share))), replace=False))
            take = pa.array(rows)
            for c in columns:
                got = pf.read_column(rg, c, rows)
                assert_same_array(got, expected[c].take(take), f"{path.name} rg {rg} column {c} rows {share}")
            together = pf.read_columns(rg, columns, rows)
            for c, got in zip(columns, together):
                assert_same_array(got, expected[c].take(take), f"{path.name} rg {rg} columns {c} rows {share}")


def _check_scan(path: Path, where: str, mask: Callable[[pa.Table], pa.Array], table: pa.Table | None = None) -> int:
    """A filtered scan equal to the rows of pyarrow's read (or ``table``) under ``mask``;
    returns the rows it kept."""
    clear_caches()
    expected = _reference(path) if table is None else table
    expected = expected.filter(mask(expected))
    got = lazyscan.scan(str(path), where=where).to_table()
    assert got.num_rows == expected.num_rows, f"{path.name} where {where}"
    for name in got.column_names:
        assert_same_array(got.column(name).combine_chunks(), expected.column(name), f"{path.name} where {where}: {name}")
    return got.num_rows


# --------------------------------------------------------------------------------------------
# the example files


def test_arrow_17100_v2_pages_compressed_though_marked_not() -> None:
    path = foreign_file("ARROW-17100.parquet")
    pf = ParquetFile(str(path))
    assert pf.metadata.created_by == "parquet-cpp version 1.5.1-SNAPSHOT"
    assert v2_pages_always_compressed(pf.metadata.created_by)
    _check_reads(path)
    assert _check_scan(path, "col1 = 1", lambda t: pc.equal(t["col1"], 1)) == 1
    assert _check_scan(path, "col2 >= 'b'", lambda t: pc.greater_equal(t["col2"], "b")) > 0


def test_impala_offset_index_with_unwritten_pages() -> None:
    path = foreign_file("alltypes_empty_pages.parquet")
    pf = ParquetFile(str(path))
    indexes = [pf.offset_index(0, c) for c in _flat_columns(pf)]
    unwritten = [oi for oi in indexes if oi is not None and any(loc.unwritten for loc in oi.page_locations)]
    assert unwritten, "the example lists unwritten pages"
    for c in _flat_columns(pf):
        # the offset index is used, its unwritten entries left out; its column index kept aligned
        layout = pf.page_layout(0, c)
        assert layout.from_offset_index
        assert pf.page_statistics(0, c) is not None
    _check_reads(path)
    assert _check_scan(path, "id = 1", lambda t: pc.equal(t["id"], 1)) == 1
    assert _check_scan(path, "bigint_col > 50", lambda t: pc.greater(t["bigint_col"], 50)) > 0
    assert _check_scan(path, "string_col = '1'", lambda t: pc.equal(t["string_col"], b"1")) > 0
    assert _check_scan(path, "year = 2009 and smallint_col < 3", lambda t: pc.and_(pc.equal(t["year"], 2009), pc.less(t["smallint_col"], 3))) > 0


def test_parquet_go_offset_index_sizes_without_header() -> None:
    path = foreign_file("issue206.parquet")
    pf = ParquetFile(str(path))
    buf = np.frombuffer(path.read_bytes(), np.uint8)
    oi = pf.offset_index(0, 0)
    assert oi is not None
    loc = oi.page_locations[0]
    header = parse_page_header(buf, loc.offset, len(buf))
    assert loc.compressed_page_size == header.compressed_page_size  # the header left out
    for c in _flat_columns(pf):
        assert pf.page_layout(0, c).from_offset_index
    _check_reads(path)
    ids = pq.read_table(path, columns=["change_id"])["change_id"]
    needle = ids[ids.length() // 2].as_py()
    assert _check_scan(path, f"change_id = {needle}", lambda t: pc.equal(t["change_id"], needle)) == 1
    assert _check_scan(path, "instrument_name = 'BTC-PERPETUAL'", lambda t: pc.equal(t["instrument_name"], "BTC-PERPETUAL")) >= 0


def test_dictionary_page_offset_zero() -> None:
    """parquet-mr 1.12.0 wrote ``dictionary_page_offset = 0`` for chunks without a dictionary."""
    path = parquet_testing_file("dict-page-offset-zero.parquet")
    _check_reads(path)


# --------------------------------------------------------------------------------------------
# generated cases of each class


def _table(n: int = 6000, seed: int = 1) -> pa.Table:
    rng = np.random.default_rng(seed)
    ints = rng.integers(0, 1000, n)
    words = np.array([f"w{i:04d}" for i in range(300)])
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "k": pa.array(ints.astype(np.int32), mask=rng.random(n) < 0.1),
        "d": pa.array(rng.random(n)),
        "s": pa.array(words[rng.integers(0, len(words), n)], mask=rng.random(n) < 0.05),
        "u": pa.array([f"unique-{i}-{v}" for i, v in enumerate(ints)]),
    })


def _write(path: Path, table: pa.Table, **kw: Any) -> Path:
    opts: dict[str, Any] = {"write_page_index": True, "data_page_size": 2048, "row_group_size": 4000, "compression": "none"}
    opts.update(kw)
    pq.write_table(table, path, **opts)
    return path


_CODECS = {1: "snappy", 2: "gzip", 6: "zstd"}


def _as_old_parquet_cpp(codec: int, header: list[list[Any]], body: bytes) -> Page:
    """A v2 data page as parquet-cpp up to 1.5.1 wrote it: values compressed with the chunk's
    codec, the header saying they are not (ARROW-10353); other pages unchanged."""
    v2 = _field(header, 8)
    if _field(header, 1) != 3 or v2 is None:
        return header, body
    levels = _field(v2, 5) + _field(v2, 6)
    values = body[levels:]
    size = _field(header, 2) - levels
    if _field(v2, 7) is not False:
        values = pa.Codec(_CODECS[codec]).decompress(values, size, asbytes=True)
    assert len(values) == size
    compressed = pa.Codec(_CODECS[codec]).compress(values, asbytes=True)
    _set(v2, 7, T.BOOL_TRUE, False)
    return header, body[:levels] + compressed


def _marked_uncompressed(codec: int, header: list[list[Any]], body: bytes) -> Page:
    """A v2 data page whose header says its (compressed) values are not compressed."""
    v2 = _field(header, 8)
    if _field(header, 1) == 3 and v2 is not None and _field(v2, 7) is not False:
        _set(v2, 7, T.BOOL_TRUE, False)
    return header, body


def _v2_table(n: int = 6000, seed: int = 1) -> pa.Table:
    """:func:`_table` with runs, so that every page compresses."""
    t = _table(n, seed)
    order = pc.sort_indices(t, [("s", "ascending"), ("k", "ascending")])
    return t.take(order).set_column(0, "id", pa.array(np.arange(n, dtype=np.int64)))


@pytest.mark.parametrize("codec", ["snappy", "zstd", "gzip"])
def test_old_parquet_cpp_v2_pages_every_route(tmp_path: Path, codec: str) -> None:
    """Files of the ARROW-17100 kind, with dictionaries, nulls and many pages: read in every
    route (whole, selected-rows and general selections, filtered scans) as pyarrow reads them."""
    table = _v2_table()
    src = _write(tmp_path / "src.parquet", table, data_page_version="2.0", compression=codec)
    rw = _Rewriter(src)
    rw.page = _as_old_parquet_cpp
    rw.set_created_by("parquet-cpp version 1.5.1-SNAPSHOT")
    path = rw.write(tmp_path / "old_cpp.parquet")
    assert pq.read_table(path).equals(table)  # pyarrow applies the rule
    _check_reads(path)
    needle = table["u"][17].as_py()
    for where, mask in [
        ("k = 7", lambda t: pc.equal(t["k"], 7)),
        ("s = 'w0042'", lambda t: pc.equal(t["s"], "w0042")),
        ("s in ('w0001', 'w0299') and d < 0.5", lambda t: pc.and_(pc.is_in(t["s"], pa.array(["w0001", "w0299"])), pc.less(t["d"], 0.5))),
        (f"u = '{needle}'", lambda t: pc.equal(t["u"], needle)),
    ]:
        _check_scan(path, where, mask)


def test_old_parquet_cpp_v2_pages_matched_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernels that match ``=`` on the encoded pages of a whole chunk, and that pick the rows
    whose dictionary entry passes, read ARROW-17100 pages too (not by handing them over to the
    general route)."""
    from lazyscan.parquet import PageCache, predicate_match
    from lazyscan.parquet.match import BytesMatcher

    table = _v2_table(4000)
    src = _write(tmp_path / "src.parquet", table, data_page_version="2.0", compression="snappy")
    rw = _Rewriter(src)
    rw.page = _as_old_parquet_cpp
    rw.set_created_by("parquet-cpp version 1.5.1-SNAPSHOT")
    path = rw.write(tmp_path / "old_cpp.parquet")
    answers: list[object] = []
    for name in ("match_full", "match_dictionary_rows"):
        kernel = getattr(predicate_match, name)

        def counted(*args: Any, _kernel: Any = kernel, **kwargs: Any) -> Any:
            answers.append(_kernel(*args, **kwargs))
            return answers[-1]

        monkeypatch.setattr(predicate_match, name, counted)
    pf = ParquetFile(str(path))
    for column in ("u", "s"):
        needle = table[column][123].as_py()
        mask = pf.read_assembled(0, column, matcher=BytesMatcher.of([needle.encode()])).values
        expected = pc.fill_null(pc.equal(table[column], needle), False).to_numpy(zero_copy_only=False)
        assert np.array_equal(np.asarray(mask, bool), expected)
    cache = PageCache()
    dictionary = pf.read_dictionary(0, "s", cache=cache)
    assert dictionary is not None
    passes = pc.equal(dictionary, "w0042").to_numpy(zero_copy_only=False)
    found = pf.dictionary_rows(0, "s", passes, False, cache=cache)
    assert found is not None
    assert found[0].tolist() == np.flatnonzero(pc.fill_null(pc.equal(table["s"], "w0042"), False).to_numpy(zero_copy_only=False)).tolist()
    assert len(answers) == 3 and all(a is not None for a in answers)


def _equal_size_values() -> pa.Table:
    """Doubles whose snappy compression takes exactly as many bytes as they do: random ones
    after two values sharing zero bytes with each other (searched, as it depends on snappy's
    matching)."""
    rng = np.random.default_rng(3)
    noise = rng.random(200)
    snappy = pa.Codec("snappy")
    heads = []
    for zeros in range(9):
        for fill in (0x11, 0x22):
            pattern = bytes(zeros) + bytes([fill] * max(0, 6 - zeros)) + (b"\xe0\x3f" if zeros <= 6 else bytes(8 - zeros))
            heads.append(np.frombuffer(pattern[:8], np.float64)[0])
    for a in heads:
        for b in heads:
            values = np.concatenate([[a, b], noise])
            if len(snappy.compress(values.tobytes(), asbytes=True)) == values.nbytes:
                return pa.table({"d": values})
    raise AssertionError("no values found that compress to their own size")


def test_old_parquet_cpp_v2_page_of_equal_sizes(tmp_path: Path) -> None:
    """Compressed values as long as the values: only the writer's version tells."""
    table = _equal_size_values()
    src = tmp_path / "src.parquet"
    pq.write_table(table, src, data_page_version="2.0", compression="snappy", use_dictionary=False, write_statistics=False)
    rw = _Rewriter(src)
    rw.page = _as_old_parquet_cpp
    rw.set_created_by("parquet-cpp version 1.4.0")
    path = rw.write(tmp_path / "old_eq.parquet")
    written = _Rewriter(path)
    [(_, header, _)] = written.pages(written.chunks()[0][2])
    assert _field(header, 2) == _field(header, 3) and _field(_field(header, 8), 7) is False
    assert pq.read_table(path).equals(table)
    _check_reads(path, selections=3)
    assert _check_scan(path, "d > 0.5", lambda t: pc.greater(t["d"], 0.5)) > 0


def test_v2_pages_marked_uncompressed_by_a_later_writer(tmp_path: Path) -> None:
    """A writer that is not old parquet-cpp: values marked uncompressed are read as stored when
    their size is the one declared (as pyarrow does: pyarrow 26 itself stores pages so when
    compressing them does not pay), and decompressed when it is not.

    The second differs from pyarrow on purpose: pyarrow hands the compressed bytes to the
    decoder as values (garbage or an error). Values stored as they are take the size the header
    declares, so values of another size can only be compressed, and decompressing them gives
    back the values written."""
    table = _equal_size_values()
    src = tmp_path / "src.parquet"
    pq.write_table(table, src, data_page_version="2.0", compression="snappy", use_dictionary=False, write_statistics=False)
    rw = _Rewriter(src)
    rw.page = _as_old_parquet_cpp
    path = rw.write(tmp_path / "later_eq.parquet")
    pf = ParquetFile(str(path))
    assert not v2_pages_always_compressed(pf.metadata.created_by)
    raw = pf.read_column(0, 0)
    assert_same_array(raw, pq.read_table(path)["d"], "stored as is")
    assert not raw.equals(table["d"].combine_chunks())

    table = _v2_table(3000)
    src = _write(tmp_path / "src2.parquet", table, data_page_version="2.0", compression="snappy")
    rw = _Rewriter(src)
    rw.page = _marked_uncompressed
    path = rw.write(tmp_path / "later.parquet")
    pf = ParquetFile(str(path))
    n = pf.metadata.row_groups[0].num_rows
    first = table.slice(0, n)
    rng = np.random.default_rng(2)
    for c, name in enumerate(table.column_names):
        assert_same_array(pf.read_column(0, c), first[name], name)
        for share in (0.005, 0.3):
            rows = np.sort(rng.choice(n, int(n * share), replace=False))
            assert_same_array(pf.read_column(0, c, rows), first[name].take(pa.array(rows)), name)
    assert _check_scan(path, "s = 'w0042'", lambda t: pc.equal(t["s"], "w0042"), table) > 0


def test_v2_page_of_wrong_size_in_an_uncompressed_chunk(tmp_path: Path) -> None:
    """No codec, values marked uncompressed, and a declared size that is not theirs: corrupt."""
    src = _write(tmp_path / "src.parquet", _table(2000), data_page_version="2.0", compression="none")
    page = ParquetFile(str(src)).page_layout(0, "d").pages[1]
    rw = _Rewriter(src)

    def grow(codec: int, header: list[list[Any]], body: bytes) -> Page:
        if rw.at == (0, 2, 1):
            _set(header, 2, T.I32, _field(header, 2) + 8)
        return header, body

    rw.page = grow
    bad = rw.write(tmp_path / "bad.parquet")
    for rows in (None, np.array([page.first_row + 1]), np.arange(0, 2000, 3)):
        clear_caches()
        with pytest.raises(CorruptFileError, match="v2 page stores") as e:
            ParquetFile(str(bad)).read_column(0, "d", rows)
        assert "'d'" in str(e.value) and "page" in str(e.value)


def _chunks_with_pages(path: Path) -> dict[tuple[int, int], int]:
    pf = ParquetFile(str(path))
    return {(r, c): len(pf.page_layout(r, c).pages) for r in range(pf.num_row_groups) for c in range(len(pf.schema.columns))}


@pytest.mark.parametrize("column_index_lists_them", [True, False])
def test_offset_index_with_unwritten_pages(tmp_path: Path, column_index_lists_them: bool) -> None:
    """Impala's form: entries (-1, 0, -1) for pages never written, at the start, in the middle
    and at the end; its column index lists them as null pages, or does not."""
    table = _table()
    src = _write(tmp_path / "src.parquet", table, compression="snappy")
    rng = np.random.default_rng(5)
    inserted: dict[tuple[int, int], list[int]] = {}

    def oi(r: int, c: int, entries: list[Location]) -> list[Location]:
        spots = sorted({0, len(entries), *rng.integers(0, len(entries) + 1, 3).tolist()}, reverse=True)
        for at in spots:
            entries.insert(at, (-1, 0, -1))
        inserted[(r, c)] = spots
        return entries

    def ci(r: int, c: int, entries: list[IndexEntry]) -> list[IndexEntry]:
        for at in inserted[(r, c)]:
            entries.insert(at, (True, b"", b"", 0))
        return entries

    rw = _Rewriter(src)
    rw.oi = oi
    if column_index_lists_them:
        rw.ci = ci
    path = rw.write(tmp_path / "impala.parquet")
    pf = ParquetFile(str(path))
    for (r, c), pages in _chunks_with_pages(src).items():
        layout = pf.page_layout(r, c)
        assert layout.from_offset_index and len(layout.pages) == pages
        assert pf.page_statistics(r, c) is not None
    _check_reads(path)
    for where, mask in [
        ("id = 4321", lambda t: pc.equal(t["id"], 4321)),
        ("id between 100 and 180", lambda t: pc.and_(pc.greater_equal(t["id"], 100), pc.less_equal(t["id"], 180))),
        ("k = 7", lambda t: pc.equal(t["k"], 7)),
        ("s = 'w0042'", lambda t: pc.equal(t["s"], "w0042")),
    ]:
        _check_scan(path, where, mask)


def _header_sizes(path: Path) -> dict[int, int]:
    """The size of each page's header, by the page's offset."""
    rw = _Rewriter(path)
    return {pos: len(_encode(header)) for _r, _c, chunk in rw.chunks() for pos, header, _ in rw.pages(chunk)}


@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_offset_index_sizes_without_header(tmp_path: Path, version: str) -> None:
    """parquet-go's form: every page's size in the offset index leaves out its header."""
    table = _table()
    src = _write(tmp_path / "src.parquet", table, compression="zstd", data_page_version=version)
    heads = _header_sizes(src)
    rw = _Rewriter(src)
    rw.oi = lambda r, c, entries: [(o, s - heads[o], f) for o, s, f in entries]
    path = rw.write(tmp_path / "go.parquet")
    pf = ParquetFile(str(path))
    for (r, c), pages in _chunks_with_pages(src).items():
        layout = pf.page_layout(r, c)
        assert layout.from_offset_index and len(layout.pages) == pages
    _check_reads(path)
    _check_scan(path, "k = 7 and s <> 'w0001'", lambda t: pc.and_(pc.equal(t["k"], 7), pc.not_equal(t["s"], "w0001")))
    _check_scan(path, "id < 30", lambda t: pc.less(t["id"], 30))


def _shift_first_row(r: int, c: int, entries: list[Location]) -> list[Location]:
    if len(entries) > 3:
        o, s, f = entries[2]
        entries[2] = (o, s, f + 3)
    return entries


def _offset_into_page(r: int, c: int, entries: list[Location]) -> list[Location]:
    if len(entries) > 3:
        o, s, f = entries[2]
        entries[2] = (o + 5, s - 5, f)
    return entries


def _first_page_later(r: int, c: int, entries: list[Location]) -> list[Location]:
    o, s, f = entries[0]
    entries[0] = (o + 7, s - 7, f)
    return entries


def _unordered(r: int, c: int, entries: list[Location]) -> list[Location]:
    if len(entries) > 3:
        entries[1], entries[2] = entries[2], entries[1]
    return entries


def _outside(r: int, c: int, entries: list[Location]) -> list[Location]:
    o, s, f = entries[-1]
    entries[-1] = (o, s + 10**9, f)
    return entries


def _missing_page(r: int, c: int, entries: list[Location]) -> list[Location]:
    if len(entries) > 3:
        del entries[2]
    return entries


@pytest.mark.parametrize("damage", [_shift_first_row, _offset_into_page, _first_page_later, _unordered, _outside, _missing_page])
def test_wrong_offset_index_gives_way_to_the_page_headers(tmp_path: Path, damage: Callable[..., Any]) -> None:
    """An offset index that locates pages wrongly: the chunk's pages are found from their
    headers, found before planning (what the index says does not add up) or when a page fetched
    is not what the index says, and the rows read are pyarrow's."""
    table = _table()
    src = _write(tmp_path / "src.parquet", table, compression="snappy")
    rw = _Rewriter(src)
    rw.oi = damage
    path = rw.write(tmp_path / "damaged.parquet")
    _check_reads(path, selections=12)
    _check_scan(path, "k = 7", lambda t: pc.equal(t["k"], 7))
    _check_scan(path, "id between 1000 and 1100", lambda t: pc.and_(pc.greater_equal(t["id"], 1000), pc.less_equal(t["id"], 1100)))
    # the rows of the damaged page, read alone (the selected-rows route, then the general one)
    pf = ParquetFile(str(path))
    ref = pq.ParquetFile(path).read_row_group(0)
    damaged = 0
    for c, name in enumerate(table.column_names):
        pages = ParquetFile(str(src)).page_layout(0, c).pages
        if len(pages) <= 3:
            continue
        damaged += 1
        first, third = pages[0], pages[2]
        for rows in (
            np.array([first.first_row + 1]), np.array([third.first_row]), np.arange(third.first_row, third.first_row + third.num_rows),
        ):
            clear_caches()
            assert_same_array(pf.read_column(0, c, rows), ref[name].take(pa.array(rows)), name)
        rows = np.concatenate([np.arange(first.num_rows), np.arange(third.first_row, third.first_row + third.num_rows)])
        assert_same_array(pf.read_column(0, c, rows), ref[name].take(pa.array(rows)), name)
        assert not pf.page_layout(0, c).from_offset_index
    assert damaged >= 2


def test_wrong_offset_index_and_pages_is_corrupt(tmp_path: Path) -> None:
    """When the page headers are broken too, the read says the file is corrupt."""
    src = _write(tmp_path / "src.parquet", _table(), compression="snappy")
    rw = _Rewriter(src)
    rw.oi = _offset_into_page
    path = rw.write(tmp_path / "broken.parquet")
    written = _Rewriter(path)
    offset = written.pages(written.chunks()[0][2])[3][0]  # the third data page of "id" (after its dictionary)
    first_row = ParquetFile(str(src)).page_layout(0, "id").pages[2].first_row
    data = bytearray(path.read_bytes())
    data[offset : offset + 12] = b"\xff" * 12
    path.write_bytes(bytes(data))
    for rows in (np.array([first_row]), np.arange(0, 4000, 7), None):
        clear_caches()
        with pytest.raises(CorruptFileError) as e:
            ParquetFile(str(path)).read_column(0, "id", rows)
        assert "broken.parquet" in str(e.value) and "'id'" in str(e.value)


def test_v2_writer_rule() -> None:
    assert v2_pages_always_compressed("parquet-cpp version 1.5.1-SNAPSHOT")
    assert v2_pages_always_compressed("parquet-cpp version 1.3.0 (build 1234)")
    assert v2_pages_always_compressed("parquet-cpp")
    assert not v2_pages_always_compressed("parquet-cpp version 2.0.0")
    assert not v2_pages_always_compressed("parquet-cpp-arrow version 2.0.0")
    assert not v2_pages_always_compressed("parquet-mr version 1.10.0 (build x)")
    assert not v2_pages_always_compressed(None)


def test_v2_kernel_rule() -> None:
    """The kernels' rule for v2 values: the header's flag, the writer's rule, or sizes that
    differ (which only compressed values can)."""
    from lazyscan.parquet import page_header as H

    header = np.full(H.SLOTS, H.MISSING, np.int64)
    header[H.SLOT_V2_COMPRESSED] = 0
    assert not page_table.v2_values_compressed(header, 10, 10, False)
    assert page_table.v2_values_compressed(header, 10, 10, True)
    assert page_table.v2_values_compressed(header, 9, 10, False)
    header[H.SLOT_V2_COMPRESSED] = 1
    assert page_table.v2_values_compressed(header, 10, 10, False)


# --------------------------------------------------------------------------------------------
# ORC type trees nested deeper than 64 levels


def _nested_orc(path: Path, depth: int, kind: str, rows: int = 50) -> list[Any]:
    """An ORC file of an ``id`` column and a column nested ``depth`` levels deep (``kind``:
    struct, list or map, or all three in turn) around an int, written by pyorc; its rows."""
    import pyorc

    kinds = ["struct", "list", "map"] if kind == "mixed" else [kind]
    schema = "int"
    for level in range(depth - 1):
        k = kinds[level % len(kinds)]
        schema = {"struct": f"struct<f:{schema}>", "list": f"array<{schema}>", "map": f"map<string,{schema}>"}[k]
    written = []
    with path.open("wb") as f, pyorc.Writer(f, f"struct<id:int,deep:{schema}>", struct_repr=pyorc.StructRepr.DICT) as w:
        for r in range(rows):
            value: Any = None if r % 7 == 3 else r
            for level in range(depth - 1):
                k = kinds[level % len(kinds)]
                value = {"struct": {"f": value}, "list": [value], "map": {f"k{r}": value}}[k]
            row = {"id": r, "deep": None if r % 11 == 5 else value}
            w.write(row)
            written.append(row)
    return written


def _pyorc_rows(path: Path) -> list[Any]:
    import pyorc

    with path.open("rb") as f:
        return list(pyorc.Reader(f, struct_repr=pyorc.StructRepr.DICT))


def _plain(value: Any) -> Any:
    """A value from Arrow's ``to_pylist`` as pyorc gives it (maps as dicts)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
            return {k: _plain(v) for k, v in value}
        return [_plain(v) for v in value]
    return value


def test_impala_max_nesting_depth_struct() -> None:
    path = foreign_file("max_nesting_depth_struct.orc")
    from lazyscan.orc.file import OrcFile

    assert OrcFile(str(path)).footer.type_depth > 64
    got = lazyscan.scan(str(path)).to_table()
    assert got.equals(pa.orc.ORCFile(str(path)).read())
    assert [_plain(r) for r in got.to_pylist()] == _pyorc_rows(path)


@pytest.mark.parametrize("kind", ["struct", "list", "map", "mixed"])
@pytest.mark.parametrize("depth", [65, 100, 256])
def test_deep_orc_types_read_as_pyorc_reads_them(tmp_path: Path, kind: str, depth: int) -> None:
    path = tmp_path / f"{kind}{depth}.orc"
    _nested_orc(path, depth, kind)
    expected = _pyorc_rows(path)
    got = lazyscan.scan(str(path)).to_table()
    assert [_plain(r) for r in got.to_pylist()] == expected
    kept = lazyscan.scan(str(path), where="id in (1, 6, 17, 33, 40)", columns=["deep", "id"]).to_table()
    wanted = [{"deep": r["deep"], "id": r["id"]} for r in expected if r["id"] in (1, 6, 17, 33, 40)]
    assert [_plain(r) for r in kept.to_pylist()] == wanted


def test_orc_types_deeper_than_the_limit_are_refused(tmp_path: Path) -> None:
    from lazyscan.errors import UnsupportedFeatureError
    from lazyscan.orc import proto

    path = tmp_path / "too_deep.orc"
    depth = proto.MAX_TYPE_DEPTH + 1
    _nested_orc(path, depth, "struct", rows=3)
    with pytest.raises(UnsupportedFeatureError, match=f"nested {depth} levels deep; lazyscan reads at most {proto.MAX_TYPE_DEPTH}") as e:
        lazyscan.scan(str(path)).to_table()
    assert "too_deep.orc" in str(e.value)


def test_orc_type_tree_checks() -> None:
    """A footer's types must form one tree in pre-order: no subtype before its type or outside
    the types, none shared by two types (which would also make conversions exponential)."""
    from lazyscan.orc import proto as P

    def types(*subtypes: list[int]) -> list[P.OrcType]:
        return [P.OrcType(kind=P.STRUCT if s else P.INT, subtypes=list(s), field_names=[f"c{j}" for j in range(len(s))]) for s in subtypes]

    assert P.type_tree_depth(types([1, 2], [], [])) == 1
    assert P.type_tree_depth(types([1], [2], [3], [])) == 3
    for bad in (types([1], [0]), types([1], [1]), types([1, 5], []), types([1, 2], [2], [])):
        with pytest.raises(P.ProtoError):
            P.type_tree_depth(bad)
