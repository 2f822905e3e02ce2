"""The numba page-header parser against the generic thrift parser, and the selection kernels.

- every page header of pyarrow-written files (v1 and v2 pages, dictionaries, page statistics on
  and off) and of the parquet-testing files parses to the same PageHeader both ways;
- hypothesis builds headers with optional, repeated, unknown and wrongly typed fields; mutated
  and truncated real headers: both parsers agree, or both raise ThriftError;
- RowRanges built from sorted indices keep them, and round-trip through the numba kernels.
"""

from __future__ import annotations

import io
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lazyscan.format.kernels import SMALL_SELECTION
from lazyscan.parquet import ParquetFile, RowRanges
from lazyscan.parquet import thrift as T
from lazyscan.parquet.page_header import _generic, parse_page_header
from lazyscan.parquet.thrift import CompactWriter, ThriftError
from tests.support.data import PARQUET_TESTING, parquet_testing_files

DATA = PARQUET_TESTING


def both(buf: np.ndarray) -> tuple[object, object]:
    """(fast result, generic result); a ThriftError is returned as its class."""
    out = []
    for fn in (parse_page_header, _generic):
        try:
            out.append(fn(buf, 0, len(buf)))
        except ThriftError:
            out.append(ThriftError)
    return out[0], out[1]


def headers_of(path: str | Path) -> list[np.ndarray]:
    """The raw bytes of every page header (and what follows, up to 256 bytes) of a file."""
    pf = ParquetFile(str(path))
    raw = Path(path).read_bytes() if not isinstance(path, io.BytesIO) else b""
    out = []
    for rg in range(pf.num_row_groups):
        for col in pf.schema.columns:
            if not col.flat:
                continue
            layout = pf.page_layout(rg, col.index)
            spans = ([layout.dictionary] if layout.dictionary else []) + [(p.offset, p.size) for p in layout.pages]
            for off, size in spans:
                out.append(np.frombuffer(raw[off : off + min(size, 256)], np.uint8))
    return out


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    d = tmp_path_factory.mktemp("headers")
    rng = np.random.default_rng(3)
    n = 5000
    table = pa.table(
        {
            "i": pa.array(rng.integers(0, 50, n), pa.int64()),
            "s": pa.array([None if k % 7 == 0 else f"v{k % 300}" for k in range(n)]),
            "f": pa.array(rng.normal(size=n)),
        }
    )
    paths = []
    for version in ("1.0", "2.0"):
        for stats in (True, False):
            p = d / f"h-{version}-{stats}.parquet"
            pq.write_table(
                table, p, data_page_version=version, write_statistics=stats, data_page_size=2048,
                write_page_checksum=stats, write_page_index=not stats,
            )
            paths.append(p)
    return paths


def test_real_headers_parse_identically(written: list[Path]) -> None:
    files = [*written, *parquet_testing_files()]
    count = 0
    for path in files:
        try:
            bufs = headers_of(path)
        except Exception:
            continue  # files lazyscan rejects are covered by the reader tests
        for buf in bufs:
            fast, generic = both(buf)
            assert fast == generic, path
            count += 1
    assert count > 500


def test_mutated_headers_agree(written: list[Path]) -> None:
    rnd = random.Random(11)
    bufs = headers_of(written[0]) + headers_of(written[2])
    for _ in range(3000):
        buf = bytearray(rnd.choice(bufs).tobytes())
        for _ in range(rnd.randint(1, 4)):
            buf[rnd.randrange(len(buf))] = rnd.randrange(256)
        if rnd.random() < 0.3:
            buf = buf[: rnd.randrange(len(buf) + 1)]
        fast, generic = both(np.frombuffer(bytes(buf), np.uint8))
        assert fast == generic


_int_types = st.sampled_from([T.I16, T.I32, T.I64])
_small = st.integers(-5, 1 << 40)


@st.composite
def _sub_fields(draw: st.DrawFn, ids: list[int], flag: int | None, stats: int | None) -> list[tuple[int, int, object]]:
    fields: list[tuple[int, int, object]] = []
    for fid in ids:
        if draw(st.booleans()):
            fields.append((fid, draw(_int_types), draw(_small)))
    if flag is not None and draw(st.booleans()):
        fields.append((flag, T.BOOL_TRUE, draw(st.booleans())))
    if stats is not None and draw(st.booleans()):
        fields.append((stats, T.STRUCT, [(3, T.I64, draw(_small)), (5, T.BINARY, draw(st.binary(max_size=9)))]))
    if draw(st.booleans()):  # an unknown field of some type
        ftype = draw(st.sampled_from([T.BINARY, T.I32, T.BOOL_TRUE, T.DOUBLE]))
        fields.append((20, ftype, _value_for(ftype, 1)))
    fields.sort(key=lambda f: f[0])
    return fields


def _value_for(ftype: int, value: object) -> object:
    if ftype == T.BINARY:
        return b"xy"
    if ftype == T.DOUBLE:
        return 1.5
    return value


@st.composite
def page_headers(draw: st.DrawFn) -> bytes:
    fields: list[tuple[int, int, object]] = []
    for fid in (1, 2, 3, 4):
        if draw(st.integers(0, 9)) > 0:
            ftype = draw(st.sampled_from([T.I32, T.I32, T.I64, T.BYTE, T.BINARY]))
            value = draw(st.integers(-3, 100000)) if ftype != T.BYTE else draw(st.integers(-3, 100))
            fields.append((fid, ftype, _value_for(ftype, value)))
    if draw(st.booleans()):
        fields.append((5, T.STRUCT, draw(_sub_fields([1, 2, 3, 4], None, 5))))
    if draw(st.booleans()):
        fields.append((7, T.STRUCT, draw(_sub_fields([1, 2], 3, None))))
    if draw(st.booleans()):
        fields.append((8, T.STRUCT, draw(_sub_fields([1, 2, 3, 4, 5, 6], 7, 8))))
    if draw(st.booleans()):  # an unknown field (6 is the index page header, an empty struct)
        ftype = draw(st.sampled_from([T.STRUCT, T.I32, T.BINARY]))
        fields.append((draw(st.sampled_from([6, 9, 30])), ftype, [] if ftype == T.STRUCT else _value_for(ftype, 1)))
    fields.sort(key=lambda f: f[0])
    w = CompactWriter()
    w.struct(fields)
    return bytes(w.out) + draw(st.binary(max_size=4))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(page_headers())
def test_generated_headers_agree(data: bytes) -> None:
    fast, generic = both(np.frombuffer(data, np.uint8))
    assert fast == generic


def test_repeated_substruct_replaces_the_earlier_one() -> None:
    w = CompactWriter()
    w.struct(
        [
            (1, T.I32, 0), (2, T.I32, 10), (3, T.I32, 10),
            (5, T.STRUCT, [(1, T.I32, 7), (2, T.I32, 0), (5, T.STRUCT, [(3, T.I64, 1)])]),
        ]
    )
    body = bytes(w.out)
    # the same field 5 again, without statistics and with another count
    w2 = CompactWriter()
    w2.struct([(1, T.I32, 9), (2, T.I32, 0)])
    # long-form field header (type byte, then the zigzag id 5) so the id does not depend on deltas
    data = body[:-1] + bytes([T.STRUCT, 10]) + bytes(w2.out) + b"\x00"
    fast, generic = both(np.frombuffer(data, np.uint8))
    assert fast == generic
    assert fast.data_page_header.num_values == 9  # type: ignore[union-attr]
    assert fast.data_page_header.statistics is None  # type: ignore[union-attr]


# --------------------------------------------------------------------------- row selections


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 500), max_size=80))
def test_row_ranges_from_indices(values: list[int]) -> None:
    expected = np.unique(np.array(values, dtype=np.int64))
    sel = RowRanges.from_indices(values)
    assert np.array_equal(sel.to_indices(), expected)
    rebuilt = RowRanges(sel.starts, sel.ends)  # indices recomputed by the kernel
    assert np.array_equal(rebuilt.to_indices(), expected)
    assert rebuilt == sel
    assert sel.row_count == len(expected)
    if len(expected) > 1:
        assert np.all(sel.starts[1:] > sel.ends[:-1])  # disjoint and not adjacent


@pytest.mark.parametrize("shape", ["one run", "few runs", "scattered", "unsorted", "repeated", "negative"])
def test_long_sorted_index_lists_count_their_runs_first(shape: str) -> None:
    """Past the short-selection size, runs are counted before they are stored; the ranges
    equal numpy's, and indices that are not sorted, distinct and non-negative are refused
    wherever the fault lies."""
    rng = np.random.default_rng(len(shape))
    n = 3 * SMALL_SELECTION
    if shape == "one run":
        idx = np.arange(500, 500 + n, dtype=np.int64)
    elif shape == "few runs":
        idx = np.concatenate([np.arange(s, s + n // 4) for s in (0, 50_000, 90_000, 200_000)]).astype(np.int64)
    else:
        idx = np.sort(rng.choice(10 * n, n, replace=False)).astype(np.int64)
    bad = shape in ("unsorted", "repeated", "negative")
    at = int(rng.integers(1, n - 1))
    if shape == "unsorted":
        idx[at], idx[at + 1] = idx[at + 1], idx[at]
    elif shape == "repeated":
        idx[at] = idx[at - 1]
    elif shape == "negative":
        idx[0] = -1
    sel = RowRanges.from_sorted_indices(idx)
    if bad:
        assert sel is None
        return
    assert sel is not None
    breaks = np.flatnonzero(np.diff(idx) != 1)
    assert sel.starts.tolist() == [int(idx[0]), *idx[breaks + 1].tolist()]
    assert sel.ends.tolist() == [*(idx[breaks] + 1).tolist(), int(idx[-1]) + 1]
    assert np.array_equal(sel.to_indices(), idx) and sel.row_count == n
    assert len(sel.starts) == {"one run": 1, "few runs": 4}.get(shape, len(breaks) + 1)


def test_sorted_indices_are_checked_and_kept() -> None:
    idx = np.array([3, 4, 5, 9], dtype=np.int64)
    sel = RowRanges.from_sorted_indices(idx)
    assert sel is not None
    assert sel.starts.tolist() == [3, 9] and sel.ends.tolist() == [6, 10]
    idx[0] = 0  # the selection owns a copy
    assert sel.to_indices().tolist() == [3, 4, 5, 9]
    assert not sel.to_indices().flags.writeable
    assert RowRanges.from_sorted_indices(np.array([1, 1])) is None
    # the count each constructor records equals the one computed from the ranges
    for made in (sel, RowRanges.all(7), RowRanges.empty(), RowRanges.all(0)):
        assert made.row_count == RowRanges(made.starts, made.ends).row_count
    assert sel.row_count == 4
    assert RowRanges.from_sorted_indices(np.array([2, 1])) is None
    assert RowRanges.from_sorted_indices(np.array([-1, 1])) is None
    with pytest.raises(ValueError, match="negative"):
        RowRanges.from_indices([-2, 5])
