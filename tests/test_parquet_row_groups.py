"""The footer's row groups located by the numba kernel (:mod:`lazyscan.parquet.row_groups`)
against the same footer decoded whole by the Python Thrift reader: every writer's files in
``tests/data``, footers damaged byte by byte, and the row groups a scan decodes."""

from __future__ import annotations

import pickle
import random
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lazyscan.errors import CorruptFileError, LazyScanError
from lazyscan.parquet import ParquetFile, clear_caches
from lazyscan.parquet import row_groups as RG
from lazyscan.parquet import thrift as T
from lazyscan.parquet.metadata import (
    FileMetaData,
    PageType,
    file_metadata_from_thrift,
    row_group_from_thrift,
)
from lazyscan.parquet.row_groups import LazyRowGroups, index_row_groups, read_file_metadata_fields

DATA = Path(__file__).parent / "data"


def footer_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    n = int.from_bytes(data[-8:-4], "little")
    return data[-8 - n : -8]


def eager(footer: bytes) -> FileMetaData:
    """The footer decoded whole, as the Python Thrift reader does."""
    fields, _ = T.read_struct(footer)
    return file_metadata_from_thrift(fields)


def lazy(footer: bytes) -> tuple[FileMetaData, LazyRowGroups]:
    fields, index = read_file_metadata_fields(footer)
    rgs = LazyRowGroups(footer, index or RG.RowGroupIndex.empty(), "f.parquet")
    return file_metadata_from_thrift(fields, rgs), rgs


def expected_chunk_row(chunk: Any) -> list[int]:
    """What the kernel should say of one ColumnChunk."""
    md = chunk.meta_data
    row = [-1] * RG.CHUNK_FIELDS
    row[RG.NUM_VALUES] = row[RG.UNCOMPRESSED] = row[RG.COMPRESSED] = 0
    flags = (RG.HAS_FILE_PATH if chunk.file_path is not None else 0) | (RG.ENCRYPTED if chunk.encrypted else 0)
    row[RG.FLAGS] = flags
    for col, value in (
        (RG.COLUMN_INDEX_OFFSET, chunk.column_index_offset), (RG.COLUMN_INDEX_LENGTH, chunk.column_index_length),
        (RG.OFFSET_INDEX_OFFSET, chunk.offset_index_offset), (RG.OFFSET_INDEX_LENGTH, chunk.offset_index_length),
    ):
        if value is not None:
            row[col] = value
    if md is not None:
        row[RG.TYPE] = int(md.type)
        row[RG.NUM_VALUES] = md.num_values
        row[RG.UNCOMPRESSED] = md.total_uncompressed_size
        row[RG.COMPRESSED] = md.total_compressed_size
        row[RG.DATA_OFFSET] = md.data_page_offset
        if md.dictionary_page_offset is not None:
            row[RG.DICTIONARY_OFFSET] = md.dictionary_page_offset
        if md.encoding_stats is not None:
            row[RG.DATA_PAGES] = sum(
                s.count for s in md.encoding_stats if s.page_type in (PageType.DATA_PAGE, PageType.DATA_PAGE_V2)
            )
    return row


def assert_same(footer: bytes) -> None:
    whole = eager(footer)
    md, rgs = lazy(footer)
    assert rgs.decoded == 0
    assert len(md.row_groups) == len(whole.row_groups)
    index = rgs.located
    assert index.rows.tolist() == [rg.num_rows for rg in whole.row_groups]
    assert index.columns.tolist() == [len(rg.columns) for rg in whole.row_groups]
    expected = [expected_chunk_row(c) for rg in whole.row_groups for c in rg.columns]
    assert index.chunks.tolist() == expected
    assert list(md.row_groups) == list(whole.row_groups)
    assert (md.schema, md.num_rows, md.key_value_metadata, md.created_by, md.column_orders) == (
        whole.schema, whole.num_rows, whole.key_value_metadata, whole.created_by, whole.column_orders,
    )


def corpus() -> list[Path]:
    paths = sorted(p for p in DATA.rglob("*.parquet") if p.stat().st_size >= 12)
    out = []
    for p in paths:
        data = p.read_bytes()
        if data[-4:] != b"PAR1" or int.from_bytes(data[-8:-4], "little") + 12 > len(data):
            continue
        try:
            eager(footer_bytes(p))
        except (T.ThriftError, ValueError):
            continue  # damaged on purpose: the bad-input tests cover them
        out.append(p)
    return out


CORPUS = corpus()


def test_corpus_is_large() -> None:
    assert len(CORPUS) > 100


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: str(p.relative_to(DATA)))
def test_index_and_lazy_row_groups_match_the_whole_decode(path: Path) -> None:
    assert_same(footer_bytes(path))


def many_row_groups(tmp_path: Path) -> Path:
    n = 3000
    table = pa.table({
        "k": pa.array(np.arange(n, dtype=np.int64)),
        "s": pa.array([f"v{i % 7}" if i % 5 else None for i in range(n)]),
        "d": pa.array(np.linspace(0, 1, n)),
    })
    path = tmp_path / "many.parquet"
    pq.write_table(table, path, row_group_size=100, write_statistics=True, write_page_index=True, use_dictionary=["s"])
    return path


def test_a_file_of_many_row_groups(tmp_path: Path) -> None:
    assert_same(footer_bytes(many_row_groups(tmp_path)))


def test_opening_a_file_decodes_no_row_group_and_reading_one_decodes_it_alone(tmp_path: Path) -> None:
    path = many_row_groups(tmp_path)
    clear_caches()
    with ParquetFile(str(path)) as pf:
        rgs = pf.metadata.row_groups
        assert isinstance(rgs, LazyRowGroups)
        assert pf.num_row_groups == 30
        assert pf.summary.rows.sum() == 3000
        assert rgs.decoded == 0
        got = pf.read_row_group(7, ["k"]).column("k").to_pylist()
        assert got == list(range(700, 800))
        assert rgs.decoded == 1
        assert rgs[7] is rgs[7]


def test_a_bounded_number_of_row_groups_stays_decoded(tmp_path: Path) -> None:
    footer = footer_bytes(many_row_groups(tmp_path))
    _, index = read_file_metadata_fields(footer)
    assert index is not None
    rgs = LazyRowGroups(footer, index, "many.parquet", keep_chunks=3 * 8)  # 3 chunks a row group: 8 kept
    assert rgs.keep == 8
    whole = eager(footer).row_groups
    for _ in range(2):
        for i in range(len(rgs)):
            assert rgs[i] == whole[i]
            assert rgs.decoded <= 8
    assert rgs.decoded == 8
    first = rgs[29]
    assert rgs[29] is first  # a kept row group is not decoded again
    assert pickle.loads(pickle.dumps(rgs)).keep == 8


def test_pickled_row_groups_decode_the_same(tmp_path: Path) -> None:
    footer = footer_bytes(many_row_groups(tmp_path))
    _, rgs = lazy(footer)
    again = pickle.loads(pickle.dumps(rgs))
    assert again.located.chunks.tolist() == rgs.located.chunks.tolist()
    assert list(again) == list(eager(footer).row_groups)


def damaged(footer: bytes, rng: random.Random) -> bytes:
    data = bytearray(footer)
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(data))
        data[i] = rng.choice([0, 0xFF, 0x7F, 0x80, 0x15, 0x19, 0x1C, rng.randrange(256)])
    return bytes(data)


def outcome(footer: bytes, decode: Any) -> Any:
    try:
        md = decode(footer)
        return ("ok", list(md.row_groups), md.schema, md.num_rows)
    except (T.ThriftError, CorruptFileError):
        return "refused"


@pytest.mark.parametrize("seed", range(4))
def test_damaged_footers_are_refused_or_read_alike(tmp_path: Path, seed: int) -> None:
    """A damaged footer: the lazy decode (every row group asked for) refuses it exactly when
    the whole decode does, and otherwise gives the same metadata; nothing else is raised."""
    rng = random.Random(seed)
    source = [footer_bytes(many_row_groups(tmp_path))] + [footer_bytes(p) for p in rng.sample(CORPUS, 5)]
    refused = 0
    for i in range(300):
        mutant = damaged(source[i % len(source)], rng)
        whole = outcome(mutant, eager)
        got = outcome(mutant, lambda f: lazy(f)[0])
        assert got == whole, f"mutant {i}"
        refused += whole == "refused"
    assert 0 < refused < 300


def test_truncated_footers_are_refused() -> None:
    for path in CORPUS[:20]:
        footer = footer_bytes(path)
        at = _row_groups_list(footer)
        _, after = index_row_groups(footer, at, len(footer))
        for cut in range(at, after):
            with pytest.raises(T.ThriftError):
                index_row_groups(footer, at, cut)


def _row_groups_list(footer: bytes) -> int:
    """Where the row groups list's header lies (after field 4's header)."""
    reader = T.CompactReader(footer)
    last = 0
    while (field := reader.field_header(last)) is not None:
        last, ftype = field
        if last == 4:
            return reader.pos
        reader.value(ftype, 0)
    raise AssertionError("no row groups")


def nested_list(depth: int) -> bytes:
    """A footer whose first row group holds a field of ``depth`` nested lists."""
    w = T.CompactWriter()
    value: Any = (T.I32, [1])
    for _ in range(depth - 1):
        value = (T.LIST, [value])
    w.struct([(4, T.LIST, (T.STRUCT, [[(1, T.LIST, (T.STRUCT, [])), (3, T.I64, 0), (9, T.LIST, value)]]))])
    return bytes(w.out)


def test_nesting_is_capped() -> None:
    index, _ = index_row_groups(nested := nested_list(10), 1, len(nested))
    assert index.rows.tolist() == [0]
    deep = nested_list(T.MAX_DEPTH + 5)
    with pytest.raises(T.ThriftError, match="malformed"):
        index_row_groups(deep, 1, len(deep))


def test_a_corrupt_row_group_names_the_file_and_row_group() -> None:
    w = T.CompactWriter()
    # row group 0 fine, row group 1's sorting columns a list of integers (structs expected)
    w.struct([(4, T.LIST, (T.STRUCT, [
        [(1, T.LIST, (T.STRUCT, [])), (3, T.I64, 0)],
        [(1, T.LIST, (T.STRUCT, [])), (3, T.I64, 0), (4, T.LIST, (T.I32, [1, 2]))],
    ]))])
    footer = bytes(w.out)
    _, index = read_file_metadata_fields(footer)
    assert index is not None
    rgs = LazyRowGroups(footer, index, "damaged.parquet")
    assert rgs[0] == row_group_from_thrift({1: [], 3: 0})
    with pytest.raises(CorruptFileError, match=r"damaged\.parquet") as e:
        rgs[1]
    assert isinstance(e.value, LazyScanError)
    assert "row group 1" in str(e.value)


def test_sets_are_read_as_lists() -> None:
    """The Python reader takes a Thrift set where a list belongs; so does the index."""
    w = T.CompactWriter()
    w.struct([(4, T.LIST, (T.STRUCT, [[(1, T.LIST, (T.STRUCT, [])), (3, T.I64, 5)]]))])
    footer = bytearray(w.out)
    assert footer[0] == 0x49 and footer[1] == 0x1C  # field 4 a list of one struct
    footer[0] = 0x4A  # ... as a set, and the row group's columns too
    assert footer[2] == 0x19
    footer[2] = 0x1A
    _, index = read_file_metadata_fields(bytes(footer))
    assert index is not None and index.rows.tolist() == [5] and index.columns.tolist() == [0]
    whole = row_group_from_thrift(T.read_struct(bytes(footer))[0][4][0])
    assert list(LazyRowGroups(bytes(footer), index)) == [whole]
