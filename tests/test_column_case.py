"""File columns spelled in another case than the scan's schema.

Spark's Parquet and ORC readers match a file's columns to the table's ignoring case unless
``spark.sql.caseSensitive`` (ParquetReadSupport.clipParquetSchema; OrcUtils.requestedColumnIds);
a catalog table says ``id`` where a file written by another tool says ``ID``. lazyscan does the
same with ``case_sensitive=False`` (its default): the same rows as pyarrow reading the file with
its columns renamed to the schema's spelling, through every pruning tier, and the same tier
counters as a twin file spelling the columns as the schema does. Two file columns matching one
scan column ignoring case are an error (Spark: "Found duplicate field(s) ... in case-insensitive
mode"); ``case_sensitive=True`` matches exact names only, as Spark then does.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.orc as porc
import pyarrow.parquet as pq
import pytest

import lazyscan
from lazyscan import FileSplit
from lazyscan.errors import LazyScanError, UnsupportedFeatureError
from lazyscan.scan.dataset import discover, merge_schemas
from tests.support.compare import assert_same_array
from tests.test_scan import SWITCHES, _rows

ROWS = 16_000
PER_GROUP = 2_000
SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("v", pa.float64())])
#: the pruning counters a file spelling ``ID`` / ``Name`` must share with its ``id`` / ``name`` twin
TIER_COUNTERS = (
    "row_groups_pruned_stats", "row_groups_pruned_bloom", "row_groups_pruned_dictionary",
    "row_groups_pruned_page_index", "pages_pruned_index", "pages_pruned_bloom", "rows_after_pruning",
    "rows_returned",
)
WHERE = (
    "id >= 29000",  # statistics: the last row group only
    "id BETWEEN 8200 AND 8300",  # page index: a few pages of one row group
    "id = 777",  # odd: no row; statistics keep row group 0, its Bloom filter rules it out
    "name = 'g3-b'",  # statistics keep row group 3, its dictionary (g3-a, g3-c) rules it out
    "name IN ('g2-a', 'g5-c') AND v > 0",
    "name IS NULL OR v IS NULL",
    "ID < 100 AND Name <> 'g0-a'",  # the filter spells the columns as the file does
)


def _data(upper: bool) -> pa.Table:
    """Even ids in order; per row group two names (``g<k>-a``, ``g<k>-c``) and some NULLs; a
    float column with NULLs and NaNs. ``upper``: the columns spelled ``ID`` and ``Name``."""
    i = np.arange(ROWS)
    group = i // PER_GROUP
    names = [None if j % 97 == 0 else f"g{g}-{'a' if j % 2 else 'c'}" for j, g in zip(i.tolist(), group.tolist())]
    v = np.sin(i.astype(np.float64))
    v[i % 89 == 0] = np.nan
    table = pa.table({
        "id": pa.array(2 * i, pa.int64()),
        "name": pa.array(names, pa.string()),
        "v": pa.array(v, pa.float64(), mask=i % 53 == 0),
    })
    return table.rename_columns(["ID", "Name", "v"]) if upper else table


def _write(table: pa.Table, path: Path) -> None:
    if path.suffix == ".orc":
        porc.write_table(
            table, path, stripe_size=64 * 1024, row_index_stride=250, bloom_filter_columns=[0, 1],
            bloom_filter_fpp=0.01, dictionary_key_size_threshold=1.0,
        )
    else:
        id_name, name_name = table.column_names[:2]
        pq.write_table(
            table, path, row_group_size=PER_GROUP, data_page_size=2_048, write_page_index=True,
            bloom_filter_options={id_name: {"ndv": PER_GROUP, "fpp": 0.01}, name_name: {"ndv": 10, "fpp": 0.01}},
        )


def _read_with_pyarrow(path: Path) -> pa.Table:
    return porc.read_table(path) if path.suffix == ".orc" else pq.read_table(path)


def _reference(table: pa.Table, where: str) -> list[tuple]:
    """``table`` (columns in the schema's spelling) filtered by DuckDB."""
    con = duckdb.connect()
    con.register("ref", table.rename_columns(SCHEMA.names))
    return _rows(con.sql(f"SELECT * FROM ref WHERE {where}").to_arrow_table())


@pytest.fixture(scope="module", params=["parquet", "orc"])
def twins(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same rows in two files: one spelling ``ID`` / ``Name``, one ``id`` / ``name``."""
    root = tmp_path_factory.mktemp(f"case-{request.param}")
    upper, lower = root / f"upper.{request.param}", root / f"lower.{request.param}"
    _write(_data(True), upper)
    _write(_data(False), lower)
    return upper, lower


@pytest.mark.parametrize("where", WHERE)
def test_file_spelling_columns_in_another_case(twins: tuple[Path, Path], where: str) -> None:
    upper, lower = twins
    expected = _reference(_read_with_pyarrow(upper), where)
    got = lazyscan.scan(upper, schema=SCHEMA, where=where)
    table = got.to_table()
    assert table.schema.names == SCHEMA.names
    assert _rows(table) == expected
    twin = lazyscan.scan(lower, schema=SCHEMA, where=where)
    assert _rows(twin.to_table()) == expected
    assert {k: got.profile.counters.get(k) for k in TIER_COUNTERS} == {k: twin.profile.counters.get(k) for k in TIER_COUNTERS}


@pytest.mark.parametrize("switch", SWITCHES)
def test_every_switch_off(twins: tuple[Path, Path], switch: str) -> None:
    upper, _ = twins
    ref = _read_with_pyarrow(upper)
    for where in WHERE:
        got = lazyscan.scan(upper, schema=SCHEMA, where=where, **{switch: False}).to_table()
        assert _rows(got) == _reference(ref, where), (switch, where)


def test_the_tiers_see_the_file_spelling(twins: tuple[Path, Path]) -> None:
    """Each tier reads the renamed columns: statistics, the page index (fewer rows left than
    without it), Bloom filters and dictionaries each rule out units; none reads any row."""
    upper, _ = twins

    def profile(where: str, **options: bool) -> lazyscan.Profile:
        s = lazyscan.scan(upper, schema=SCHEMA, where=where, **options)
        s.to_table()
        return s.profile

    total = profile("id >= 0")["row_groups_total"]
    assert total > 1
    # the last row group (Parquet) or the last two stripes of 1,000 rows (ORC) may hold id 29000+
    assert profile("id >= 29000")["row_groups_pruned_stats"] == (total - 1 if upper.suffix == ".parquet" else total - 2)
    with_index = profile("id BETWEEN 8200 AND 8300")["rows_after_pruning"]
    assert with_index < profile("id BETWEEN 8200 AND 8300", prune_page_index=False)["rows_after_pruning"]
    bloom = profile("id = 777")
    assert (bloom["row_groups_pruned_stats"], bloom["row_groups_pruned_bloom"]) == (total - 1, 1)
    dictionary = profile("name = 'g3-b'", prune_bloom=False)
    assert dictionary["row_groups_pruned_dictionary"] > 0
    assert dictionary["row_groups_pruned_stats"] + dictionary["row_groups_pruned_dictionary"] == total


def test_case_sensitive_matches_exact_names_only(twins: tuple[Path, Path]) -> None:
    """With ``case_sensitive=True`` the file has no column ``id`` nor ``name``: both read as
    NULL, as Spark's readers do under ``spark.sql.caseSensitive=true``."""
    upper, _ = twins
    got = lazyscan.scan(upper, schema=SCHEMA, case_sensitive=True).to_table()
    assert got.num_rows == ROWS
    assert got["id"].null_count == ROWS and got["name"].null_count == ROWS
    assert_same_array(got["v"].combine_chunks(), _read_with_pyarrow(upper)["v"], "v")
    assert lazyscan.scan(upper, schema=SCHEMA, where="id = 2", case_sensitive=True).to_table().num_rows == 0


@pytest.mark.parametrize("suffix", [".parquet", ".orc"])
def test_folder_of_files_spelling_a_column_two_ways(tmp_path: Path, suffix: str) -> None:
    """One file spells ``id`` / ``name``, the other ``ID`` / ``Name``: one column each, under
    the first file's spelling (Spark's schema merge with caseSensitive=false keeps one field),
    read from both files."""
    folder = tmp_path / "t"
    folder.mkdir()
    first, second = _data(False).slice(0, 6_000), _data(True).slice(6_000)
    _write(first, folder / f"a{suffix}")
    _write(second, folder / f"b{suffix}")
    both = pa.concat_tables([first, second.rename_columns(first.column_names)])
    for where in WHERE:
        got = lazyscan.scan(folder, where=where)
        table = got.to_table()
        assert table.schema.names == SCHEMA.names
        assert _rows(table) == _reference(both, where), where


def test_merge_by_case(tmp_path: Path) -> None:
    lower = pa.schema([("id", pa.int64()), ("x", pa.int32())])
    upper = pa.schema([("ID", pa.int64()), ("y", pa.string())])
    assert merge_schemas([lower, upper]).names == ["id", "x", "y"]
    assert merge_schemas([upper, lower]).names == ["ID", "y", "x"]
    assert merge_schemas([lower, upper], case_sensitive=True).names == ["id", "x", "ID", "y"]
    # one file spelling a column two ways keeps both; another file's third spelling matches neither
    two = pa.schema([("id", pa.int64()), ("ID", pa.int64())])
    assert merge_schemas([two, lower]).names == ["id", "ID", "x"]
    with pytest.raises(LazyScanError, match="'Id' of one file matches the columns 'id' and 'ID'"):
        merge_schemas([two, pa.schema([("Id", pa.int64())])])
    with pytest.raises(LazyScanError, match="column 'id' has type int64 in one file and string in another"):
        merge_schemas([lower, pa.schema([("ID", pa.string())])])


def test_dataset_merged_case_sensitively(tmp_path: Path) -> None:
    """A dataset merged with ``case_sensitive``: ``id`` and ``ID`` are two columns, each NULL
    in the file that lacks its exact name."""
    folder = tmp_path / "t"
    folder.mkdir()
    first, second = _data(False).slice(0, 100), _data(True).slice(100, 100)
    _write(first, folder / "a.parquet")
    _write(second, folder / "b.parquet")
    ds = discover(folder)
    ds.use_case_sensitive(True)
    got = lazyscan.scan(ds, case_sensitive=True).to_table()
    assert got.schema.names == ["id", "name", "v", "ID", "Name"]
    assert got["id"].null_count == 100 and got["ID"].null_count == 100
    assert got["id"].to_pylist()[:100] == first["id"].to_pylist()
    assert got["ID"].to_pylist()[100:] == second["ID"].to_pylist()


def test_folder_read_case_sensitively(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    folder.mkdir()
    _write(_data(False).slice(0, 100), folder / "a.parquet")
    _write(_data(True).slice(100, 100), folder / "b.parquet")
    got = lazyscan.scan(folder, case_sensitive=True).to_table()
    assert got.schema.names == ["id", "name", "v", "ID", "Name"]


@pytest.mark.parametrize("suffix", [".parquet", ".orc"])
def test_two_file_columns_matching_one_is_an_error(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"two{suffix}"
    table = pa.table({"ID": [1, 2], "Id": [3, 4], "v": [0.5, 1.5]})
    porc.write_table(table, path) if suffix == ".orc" else pq.write_table(table, path)
    schema = pa.schema([("id", pa.int64()), ("v", pa.float64())])
    with pytest.raises(UnsupportedFeatureError, match="'ID' and 'Id' both match the scan's column 'id'") as e:
        lazyscan.scan(path, schema=schema).to_table()
    assert str(path) in str(e.value) and "case_sensitive=True" in str(e.value)
    # the ambiguity matters only for a column the scan reads
    assert lazyscan.scan(path, ["v"], schema=schema).to_table().column("v").to_pylist() == [0.5, 1.5]
    # matched exactly, neither is the scan's column
    exact = lazyscan.scan(path, schema=schema, case_sensitive=True).to_table()
    assert exact["id"].null_count == 2


def test_the_exact_name_wins(tmp_path: Path) -> None:
    """A file holding ``id`` and ``ID`` reads its ``id`` for the scan's ``id``: names resolve
    as lazyscan resolves a filter's names (the exact one first; Spark's Parquet reader refuses
    such a file in case-insensitive mode instead)."""
    path = tmp_path / "both.parquet"
    pq.write_table(pa.table({"ID": [1, 2], "id": [3, 4]}), path)
    got = lazyscan.scan(path, schema=pa.schema([("id", pa.int64())]), where="id > 3").to_table()
    assert got.column("id").to_pylist() == [4]
    # the scan's ``ID`` is the file's ``ID``, never its ``id`` again
    both = lazyscan.scan(path, schema=pa.schema([("id", pa.int64()), ("ID", pa.int64())])).to_table()
    assert both.to_pydict() == {"id": [3, 4], "ID": [1, 2]}


def test_byte_ranges_of_a_file_spelling_another_case(twins: tuple[Path, Path]) -> None:
    """Byte ranges (how Spark's tasks read) of a file spelling ``ID`` / ``Name``: each range
    reads its units under the schema's names."""
    upper, _ = twins
    size = upper.stat().st_size
    half = size // 2
    splits = [FileSplit(str(upper), 0, half, size), FileSplit(str(upper), half, size - half, size)]
    where = "id BETWEEN 8200 AND 8300 OR name = 'g6-a'"
    got = lazyscan.scan(splits, schema=SCHEMA, where=where).to_table()
    assert _rows(got) == _reference(_read_with_pyarrow(upper), where)


def _lowered(value: object) -> object:
    """A row's value with the names of its struct fields in lower case."""
    if isinstance(value, dict):
        return {k.lower(): _lowered(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_lowered(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_lowered(v) for v in value)
    return value


@pytest.mark.parametrize("suffix", [".parquet", ".orc"])
def test_nested_fields_in_another_case(tmp_path: Path, suffix: str) -> None:
    """Struct fields spelled in another case, at any depth (in lists, as map values), top-level
    column spelled alike or not: read into the schema's fields (Spark's Parquet reader matches
    nested fields ignoring case too), never NULLs."""
    n = 3_000
    i = np.arange(n)
    table = pa.table({
        "S": pa.array([{"A": int(j), "b": f"x{j}"} for j in i.tolist()]),
        "K": pa.array(i, pa.int64()),
        "l": pa.array([[{"Q": int(j)}] * (j % 3) for j in i.tolist()]),
        "m": pa.array(
            [None if j % 7 == 0 else [("k", {"Z": int(j)})] for j in i.tolist()],
            pa.map_(pa.string(), pa.struct([("Z", pa.int64())])),
        ),
    })
    path = tmp_path / f"nested{suffix}"
    porc.write_table(table, path) if suffix == ".orc" else pq.write_table(table, path, row_group_size=1_000)
    schema = pa.schema([
        ("s", pa.struct([("a", pa.int64()), ("b", pa.string())])),
        ("k", pa.int64()),
        ("l", pa.list_(pa.struct([("q", pa.int64())]))),
        ("m", pa.map_(pa.string(), pa.struct([("z", pa.int64())]))),
    ])
    rows = [_lowered(r) for r in _read_with_pyarrow(path).to_pylist()]
    assert lazyscan.scan(path, schema=schema).to_table().to_pylist() == rows
    for where, keep in (("k IN (7, 1500, 2222)", lambda r: r["k"] in (7, 1500, 2222)), ("k >= 2990", lambda r: r["k"] >= 2990)):
        got = lazyscan.scan(path, schema=schema, where=where).to_table().to_pylist()
        assert got == [r for r in rows if keep(r)], where
    exact = lazyscan.scan(path, schema=schema, case_sensitive=True).to_table()
    assert exact["k"].null_count == n
    assert exact["s"].combine_chunks().field("a").null_count == n


def test_two_struct_fields_matching_one_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "two.parquet"
    pq.write_table(pa.table({"s": pa.array([{"Ab": 1, "AB": 2}])}), path)
    schema = pa.schema([("s", pa.struct([("ab", pa.int64())]))])
    with pytest.raises(UnsupportedFeatureError, match="the fields 'Ab' and 'AB' of a struct both match the scan's field 'ab'"):
        lazyscan.scan(path, schema=schema).to_table()
    assert lazyscan.scan(path, schema=schema, case_sensitive=True).to_table().to_pylist() == [{"s": {"ab": None}}]
