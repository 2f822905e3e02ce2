"""Statistics pruning trusts only what writers get right (lazyscan.format.writers).

- the writer of a file is read from Parquet's ``created_by`` and ORC's writer id and version;
- each rule of the table applies to the writers and versions it names, and only to them: the
  same lying statistics, under a ``created_by`` of a fixed version, ARE used for pruning (the
  profile counts the pruned row groups and rows are lost, which is what the lie asks for);
- statistics that contradict the row count or each other are never used, whoever wrote them;
- the example files of other writers (Hive streaming ORC, parquet-cpp-arrow 4.0.1) give the rows
  pyarrow and pyorc give.

Lying statistics are made by writing a file with pyarrow or pyorc and patching its footer
(tests.support.footer) to hold what the buggy writer wrote.
"""

from __future__ import annotations

import decimal
import io
import math
import re
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as porc
import pyarrow.parquet as pq
import pyorc
import pytest

import lazyscan
from lazyscan.format import RULES, orc_writer, parquet_writer
from lazyscan.format.writers import (
    BLOOM_FILTER,
    CHUNK,
    MIN_MAX,
    NULL_COUNT,
    PAGE,
    ColumnFacts,
    StatisticsTrust,
    chunk_size_leaves_out_dictionary_header,
)
from lazyscan.orc import proto as P
from lazyscan.orc.file import OrcFile
from lazyscan.orc.statistics import column_stats
from tests.support.data import DATA, foreign_file
from tests.support.footer import Node, ParquetPatch

# ---- who wrote the file --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("created_by", "name", "version"),
    [
        ("parquet-mr version 1.8.2 (build c6522788629e590a53eb79874b95f6c3ff11f16c)", "parquet-mr", (1, 8, 2)),
        ("parquet-mr version 1.12.0-201812210311360288-a86293f (build cec1a483)", "parquet-mr", (1, 12, 0)),
        ("parquet-mr version 1.5.0-cdh5.5.0 (build abc)", "parquet-mr", (1, 5, 0)),
        ("parquet-mr", "parquet-mr", None),
        ("parquet-cpp version 1.5.1-SNAPSHOT", "parquet-cpp", (1, 5, 1)),
        ("parquet-cpp-arrow version 4.0.1", "parquet-cpp-arrow", (4, 0, 1)),
        ("impala version 1.3.0-INTERNAL (build 8a48ddb1)", "impala", (1, 3, 0)),
        ("parquet-rs version 53.2.0", "parquet-rs", (53, 2, 0)),
        ("github.com/parquet-go/parquet-go version 0.26.2(build 88f2a7f0ce17)", "github.com/parquet-go/parquet-go", (0, 26, 2)),
        ("parquet-go version latest", "parquet-go", None),
        ("Polars (python) version 2.1.0 (build 7f902bd3)", "polars", (2, 1, 0)),
        ("Polars", "polars", None),
        ("DuckDB version v2.0.1 (build 8d78114e90)", "duckdb", (2, 0, 1)),
        ("fastparquet-python version 0.8.1 (build 0)", "fastparquet", (0, 8, 1)),
        ("", "", None),
        (None, "", None),
        ("HVR 5.3.0/9 (linux_glibc2.5-x64-64bit)", "hvr 5.3.0/9 (linux_glibc2.5-x64-64bit)", None),
    ],
)
def test_created_by_names_the_writer(created_by: str | None, name: str, version: tuple | None) -> None:
    w = parquet_writer(created_by)
    assert (w.format, w.name, w.version) == ("parquet", name, version)


def test_orc_writer_from_id_version_and_software_version() -> None:
    w = orc_writer(1, 6, "2.3.1")
    assert (w.format, w.name, w.version, w.orc_version) == ("orc", "orc-cpp", (2, 3, 1), 6)
    assert orc_writer(0, 0).name == "orc-java"
    assert orc_writer(None, None).orc_version == 0


def test_every_rule_has_a_source_and_a_statistic() -> None:
    for r in RULES:
        assert re.search(r"\b(PARQUET|ARROW|ORC|HIVE|IMPALA)-\d+|[\w.-]+/[\w.-]+#\d+", r.source), r
        assert r.statistics and r.statistics <= {MIN_MAX, NULL_COUNT, BLOOM_FILTER}, r
        assert r.describe().startswith(r.format + ":")


def test_rules_apply_to_the_versions_they_name_only() -> None:
    """For each Parquet rule with a fixed version: the release before it is affected, the fixed
    one and later are not, a version that cannot be read is, another writer never is."""
    for r in RULES:
        if r.format != "parquet" or r.writer in ("*", ""):
            continue
        other = parquet_writer("some-other-writer version 0.0.1")
        assert not r.affects(other)
        unknown = parquet_writer(f"{r.writer} version unknown")
        assert r.affects(unknown), r
        if r.fixed is None:
            assert r.affects(parquet_writer(f"{r.writer} version 999.0.0")), r
            continue
        major, minor, patch = r.fixed
        before = (major, minor, patch - 1) if patch else (major, minor - 1, 99) if minor else (major - 1, 99, 99)
        text = ".".join(map(str, before))
        assert r.affects(parquet_writer(f"{r.writer} version {text}")), r
        assert not r.affects(parquet_writer(f"{r.writer} version {'.'.join(map(str, r.fixed))}")), r
        assert not r.affects(parquet_writer(f"{r.writer} version {major + 1}.0.0")), r


def test_back_ported_fixes_and_vendor_builds() -> None:
    binary = ColumnFacts("string", "BYTE_ARRAY")
    floating = ColumnFacts("float", "DOUBLE")

    def distrusted(created_by: str, facts: ColumnFacts) -> frozenset[str]:
        return StatisticsTrust(parquet_writer(created_by)).distrusted(facts)

    assert MIN_MAX in distrusted("parquet-mr version 1.7.0 (build x)", binary)  # PARQUET-251
    assert MIN_MAX in distrusted("parquet-mr version 1.5.0-cdh5.4.0 (build x)", binary)
    # CDH 5.5 ships 1.5.0 with the PARQUET-251 fix; its strings are still signed-order (PARQUET-686)
    assert StatisticsTrust(parquet_writer("parquet-mr version 1.5.0-cdh5.5.0 (build x)")).reasons(binary)[0].source.startswith("PARQUET-686")
    # PARQUET-1246 was back-ported to 1.8.3
    assert MIN_MAX in distrusted("parquet-mr version 1.8.2 (build x)", floating)
    assert MIN_MAX not in distrusted("parquet-mr version 1.8.3 (build x)", floating)
    assert MIN_MAX in distrusted("parquet-mr version 1.9.0 (build x)", floating)
    assert not distrusted("parquet-mr version 1.10.0 (build x)", floating)


def test_a_trusted_writer_costs_one_lookup_per_file() -> None:
    trust = StatisticsTrust(parquet_writer("parquet-cpp-arrow version 26.0.1"))
    assert not trust and trust.rules == ()
    assert trust.distrusted(ColumnFacts("string", "BYTE_ARRAY", dictionary_encoded=True)) == frozenset()


def test_page_only_rules_leave_chunk_statistics_alone() -> None:
    facts = ColumnFacts("string", "BYTE_ARRAY", dictionary_encoded=True, arrow_dictionary=True)
    trust = StatisticsTrust(parquet_writer("parquet-cpp-arrow version 11.0.0"))
    assert trust.distrusted(facts, CHUNK) == frozenset()
    assert trust.distrusted(facts, PAGE) == {MIN_MAX, NULL_COUNT}
    assert trust.distrusted(ColumnFacts("string", "BYTE_ARRAY", dictionary_encoded=True, arrow_dictionary=False), PAGE) == frozenset()


def test_parquet_816_chunk_sizes() -> None:
    assert chunk_size_leaves_out_dictionary_header("parquet-mr version 1.2.8")
    assert chunk_size_leaves_out_dictionary_header("parquet-mr")
    assert not chunk_size_leaves_out_dictionary_header("parquet-mr version 1.2.9")
    assert not chunk_size_leaves_out_dictionary_header("parquet-cpp version 1.0.0")


# ---- the example files ---------------------------------------------------------------------


def test_parquet_cpp_arrow_4_dictionary_null_counts() -> None:
    """ARROW-12513: the footer says null_count 0 for id1 and id2, which hold NULLs."""
    path = foreign_file("h2oai_group_small.parquet")
    table = pq.read_table(path)
    assert pq.ParquetFile(path).metadata.row_group(0).column(0).statistics.null_count == 0
    for name in ("id1", "id2", "id3", "v1"):
        nulls = table.column(name).null_count
        assert nulls > 0
        assert lazyscan.scan(str(path), where=f"{name} IS NULL").to_table().num_rows == nulls
        assert lazyscan.scan(str(path), where=f"{name} IS NOT NULL").to_table().num_rows == table.num_rows - nulls
    assert lazyscan.scan(str(path), where="id1 IS NULL").to_table().num_rows == 472
    # what the file says about columns written from plain arrays is still used
    s = lazyscan.scan(str(path), where="v1 < 0 OR id3 = 'zzz'")
    assert s.to_table().num_rows == 0 and s.profile["row_groups_pruned_stats"] == 1


def test_hive_streaming_orc_counts() -> None:
    """numberOfValues 0 with hasNull false on stripes of two rows: not "all NULL"."""
    path = foreign_file("streaming.orc")
    rows = list(pyorc.Reader(open(path, "rb")))  # noqa: SIM115
    operations = [r[0] for r in rows]
    assert len(operations) == 4 and None not in operations
    expected = sum(1 for v in operations if v <= 0)
    assert lazyscan.scan(str(path), where="operation <= 0").to_table().num_rows == expected == 4
    assert lazyscan.scan(str(path), where="operation IS NULL").to_table().num_rows == 0
    assert lazyscan.scan(str(path), where="operation IS NOT NULL").to_table().num_rows == 4
    assert lazyscan.scan(str(path), where="currentTransaction = 2").to_table().num_rows == sum(1 for r in rows if r[4] == 2)


# ---- Parquet writer rules, reproduced by patching pyarrow's footer ----------------------------


def _scan(path: Path, where: str) -> tuple[int, int]:
    s = lazyscan.scan(str(path), where=where)
    return s.to_table().num_rows, s.profile["row_groups_pruned_stats"]


def _truth(path: Path, where: str) -> int:
    return lazyscan.scan(str(path), where=where, pushdown=False).to_table().num_rows


def _check_rule(tmp_path: Path, source: Path, where: str, buggy: str, fixed: str, **patch: object) -> None:
    """With ``buggy``'s created_by the patched statistics are not used (the right rows); with
    ``fixed``'s they are (the row group is pruned and the rows the lie hides are lost)."""
    expected = _truth(source, where)
    assert expected > 0
    for created_by, trusted in ((buggy, False), (fixed, True)):
        out = ParquetPatch(source).set_created_by(created_by)
        out.set_statistics(0, 0, **patch)  # type: ignore[arg-type]
        path = out.write(tmp_path / f"patched-{trusted}.parquet")
        rows, pruned = _scan(path, where)
        if trusted:
            assert (rows, pruned) == (0, 1), created_by
        else:
            assert (rows, pruned) == (expected, 0), created_by


def _write(tmp_path: Path, table: pa.Table, **kwargs: object) -> Path:
    path = tmp_path / "source.parquet"
    pq.write_table(table, path, **kwargs)  # type: ignore[arg-type]
    return path


def test_arrow_12513_dictionary_null_count(tmp_path: Path) -> None:
    values = pa.array(["a", None, "b", "c", None] * 20).dictionary_encode()
    source = _write(tmp_path, pa.table({"d": values}))
    _check_rule(tmp_path, source, "d IS NULL", "parquet-cpp-arrow version 4.0.1", "parquet-cpp-arrow version 11.0.0", null_count=0)
    # between 5.0.0 and 11.0.0 the null count is still suspect, for apache/arrow#15042
    facts = ColumnFacts("string", "BYTE_ARRAY", dictionary_encoded=True, arrow_dictionary=True)
    reasons = StatisticsTrust(parquet_writer("parquet-cpp-arrow version 5.0.0")).reasons(facts)
    assert [r.source.split(":")[0] for r in reasons] == ["apache/arrow#15042"]


def test_arrow_12513_spares_columns_stored_arrow_schema_says_are_plain(tmp_path: Path) -> None:
    """The rule names columns written from dictionary arrays; a plain string column that
    parquet-cpp-arrow dictionary-encoded itself keeps its (here: lying) null count."""
    source = _write(tmp_path, pa.table({"s": pa.array(["a", None, "b"] * 30)}))
    assert pq.ParquetFile(source).metadata.row_group(0).column(0).has_dictionary_page
    path = ParquetPatch(source).set_created_by("parquet-cpp-arrow version 4.0.1").set_statistics(0, 0, null_count=0).write(tmp_path / "p.parquet")
    assert _scan(path, "s IS NULL") == (0, 1)


def test_arrow_12513_without_a_stored_arrow_schema(tmp_path: Path) -> None:
    """Without ARROW:schema, every dictionary-encoded column of such a writer is suspect."""
    source = _write(tmp_path, pa.table({"s": pa.array(["a", None, "b"] * 30)}), store_schema=False)
    path = ParquetPatch(source).set_created_by("parquet-cpp-arrow version 4.0.1").set_statistics(0, 0, null_count=0).write(tmp_path / "p.parquet")
    assert _scan(path, "s IS NULL") == (30, 0)


def test_arrow_15042_dictionary_min_max(tmp_path: Path) -> None:
    values = pa.array(["k", "m", "z", None] * 25).dictionary_encode()
    source = _write(tmp_path, pa.table({"d": values}))
    _check_rule(tmp_path, source, "d = 'z'", "parquet-cpp-arrow version 10.0.1", "parquet-cpp-arrow version 11.0.0",
                min_value=b"k", max_value=b"m")


def test_parquet_251_binary_min_max(tmp_path: Path) -> None:
    source = _write(tmp_path, pa.table({"s": pa.array([f"v{i:03}" for i in range(100)])}), use_dictionary=False)
    _check_rule(tmp_path, source, "s = 'v050'", "parquet-mr version 1.7.0 (build x)", "parquet-mr version 1.10.0 (build x)",
                min_value=b"v000", max_value=b"v010")


def test_parquet_297_no_created_by(tmp_path: Path) -> None:
    source = _write(tmp_path, pa.table({"s": pa.array([f"v{i:03}" for i in range(100)])}), use_dictionary=False)
    path = ParquetPatch(source).set_created_by(None).set_statistics(0, 0, min_value=b"v000", max_value=b"v010").write(tmp_path / "p.parquet")
    assert pq.ParquetFile(path).metadata.created_by in (None, "")
    assert _scan(path, "s = 'v050'") == (1, 0)


def test_parquet_1246_float_min_max(tmp_path: Path) -> None:
    source = _write(tmp_path, pa.table({"x": pa.array(np.arange(100, dtype=np.float64))}))
    lie = {"min_value": struct.pack("<d", 0.0), "max_value": struct.pack("<d", 10.0)}
    # (x = 50: a NaN, which min/max never cover, cannot match it)
    _check_rule(tmp_path, source, "x = 50", "parquet-mr version 1.9.0 (build x)", "parquet-mr version 1.8.3 (build x)", **lie)
    _check_rule(tmp_path, source, "x = 50", "parquet-cpp version 1.4.0", "parquet-cpp version 1.5.0", **lie)
    _check_rule(tmp_path, source, "x = 50", "impala version 2.11.0-cdh5 (build x)", "impala version 2.12.0 (build x)", **lie)


def test_parquet_1655_decimal_min_max(tmp_path: Path) -> None:
    d = decimal.Decimal
    source = _write(tmp_path, pa.table({"m": pa.array([d(i) / 4 for i in range(-50, 50)], pa.decimal128(20, 2))}))
    assert pq.ParquetFile(source).metadata.row_group(0).column(0).physical_type == "FIXED_LEN_BYTE_ARRAY"
    lie = {"min_value": (0).to_bytes(9, "big", signed=True), "max_value": (100).to_bytes(9, "big", signed=True)}
    _check_rule(tmp_path, source, "m < -5", "parquet-cpp-arrow version 3.0.0", "parquet-cpp-arrow version 4.0.0", **lie)
    _check_rule(tmp_path, source, "m < -5", "Polars (python) version 1.30.0 (build x)", "Polars (python) version 2.1.0 (build x)", **lie)


def test_unsigned_min_max_of_polars_and_arrow_go(tmp_path: Path) -> None:
    source = _write(tmp_path, pa.table({"u": pa.array(np.arange(100, dtype=np.uint64) + 2**63)}))
    lie = {"min_value": struct.pack("<Q", 2**63), "max_value": struct.pack("<Q", 2**63 + 10)}
    _check_rule(tmp_path, source, f"u = {2**63 + 50}", "Polars (python) version 0.20.31 (build x)", "Polars (python) version 1.0.0 (build x)", **lie)
    _check_rule(tmp_path, source, f"u = {2**63 + 50}", "parquet-go version 18.0.0", "parquet-go version 18.1.0", **lie)


def test_arrow_34106_page_statistics_of_dictionary_arrays(tmp_path: Path) -> None:
    """Page index statistics of dictionary arrays are used from 12.0.0 on only; the chunk's are
    used from 11.0.0 on."""
    values = pa.array([f"k{i // 100:02}" for i in range(1000)]).dictionary_encode()
    source = tmp_path / "source.parquet"
    pq.write_table(pa.table({"d": values}), source, write_page_index=True, data_page_size=64, write_batch_size=50)
    patch = ParquetPatch(source)
    index = patch.column_index(0, 0)
    pages = len(index[2].value[1])
    assert pages > 1
    where = "d = 'k09'"
    expected = _truth(source, where)
    assert expected == 100
    # a lie: every page holds only "k00"
    index[2] = Node(index[2].type, (index[2].value[0], [b"k00"] * pages))
    index[3] = Node(index[3].type, (index[3].value[0], [b"k00"] * pages))
    for created_by, right in (("parquet-cpp-arrow version 11.0.0", True), ("parquet-cpp-arrow version 12.0.0", False)):
        path = ParquetPatch(source).set_created_by(created_by).set_column_index(0, 0, index).write(tmp_path / "p.parquet")
        s = lazyscan.scan(str(path), where=where)
        rows = s.to_table().num_rows
        if right:
            assert rows == expected and s.profile["pages_pruned_index"] == 0
        else:
            assert rows == 0 and s.profile["pages_pruned_index"] > 0


# ---- statistics that contradict the rows or each other ---------------------------------------

MODERN = "parquet-cpp-arrow version 26.0.1"


@pytest.fixture
def numbers(tmp_path: Path) -> Path:
    return _write(tmp_path, pa.table({"x": pa.array(np.arange(100, dtype=np.int64))}))


@pytest.mark.parametrize(
    ("patch", "where"),
    [
        ({"null_count": 105}, "x = 5"),  # more NULLs than rows: would read as "all NULL"
        ({"null_count": 100}, "x = 5"),  # "all NULL" beside bounds of values
        ({"null_count": -1}, "x IS NULL OR x = 5"),
        ({"min_value": struct.pack("<q", 50), "max_value": struct.pack("<q", 10)}, "x = 5"),  # out of order
    ],
)
def test_contradicting_statistics_are_not_used(tmp_path: Path, numbers: Path, patch: dict, where: str) -> None:
    path = ParquetPatch(numbers).set_created_by(MODERN).set_statistics(0, 0, **patch).write(tmp_path / "p.parquet")
    assert _scan(path, where) == (_truth(numbers, where), 0)


def test_null_count_of_a_chunk_whose_value_count_is_not_its_row_count(tmp_path: Path) -> None:
    source = _write(tmp_path, pa.table({"x": pa.array([1, None, 3] * 10)}))
    path = ParquetPatch(source).set_statistics(0, 0, null_count=0).set_num_values(0, 0, 20).write(tmp_path / "p.parquet")
    assert _scan(path, "x IS NULL") == (10, 0)
    trusted = ParquetPatch(source).set_statistics(0, 0, null_count=0).write(tmp_path / "q.parquet")
    assert _scan(trusted, "x IS NULL") == (0, 1)


def test_page_null_counts_that_contradict_the_chunk_or_the_null_pages(tmp_path: Path) -> None:
    source = tmp_path / "source.parquet"
    table = pa.table({"x": pa.array([None if i % 7 == 0 else i for i in range(2000)], pa.int64())})
    pq.write_table(table, source, write_page_index=True, data_page_size=256, use_dictionary=False, write_batch_size=100)
    index = ParquetPatch(source).column_index(0, 0)
    counts = index[5].value[1]
    assert len(counts) > 2 and sum(counts) == table.column("x").null_count
    truth = _truth(source, "x IS NULL")
    # a page claims no NULLs: the counts no longer add up to the chunk's, none of them is used
    lying = dict(index)
    lying[5] = Node(index[5].type, (index[5].value[0], [0, *counts[1:]]))
    path = ParquetPatch(source).set_column_index(0, 0, lying).write(tmp_path / "a.parquet")
    assert lazyscan.scan(str(path), where="x IS NULL").to_table().num_rows == truth
    # a page not marked all-NULL whose count says every row is NULL: its statistics go unused
    pf = lazyscan.ParquetFile(str(source))
    rows_per_page = [p.num_rows for p in pf.page_layout(0, 0).pages]
    second = list(counts)
    second[1] = rows_per_page[1]
    lying = dict(index)
    lying[5] = Node(index[5].type, (index[5].value[0], second))
    path = ParquetPatch(source).set_statistics(0, 0, null_count=sum(second)).set_column_index(0, 0, lying).write(tmp_path / "b.parquet")
    where = "x IS NOT NULL AND x < 100000"
    assert lazyscan.scan(str(path), where=where).to_table().num_rows == _truth(source, where)


# ---- ORC ------------------------------------------------------------------------------------


def _orc_stats(**kw: object) -> P.ColumnStatistics:
    return P.ColumnStatistics(**kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("stats", "rows"),
    [
        (_orc_stats(number_of_values=0, has_null=False, kind="int"), 2),  # Hive streaming
        (_orc_stats(number_of_values=5, has_null=False, kind="int", minimum=1, maximum=2), 4),  # more values than rows
        (_orc_stats(number_of_values=3, has_null=False, kind="int", minimum=1, maximum=2), 4),  # missing NULLs
        (_orc_stats(number_of_values=4, has_null=True, kind="int", minimum=1, maximum=2), 4),  # NULLs with no room
    ],
)
def test_orc_counts_that_contradict_the_rows_are_not_used(stats: P.ColumnStatistics, rows: int) -> None:
    s = column_stats(stats, pa.int64(), rows)
    assert s is not None and (s.min, s.max, s.null_count) == (None, None, None)


def test_orc_bounds_that_cannot_be_right_are_not_used() -> None:
    def bounds(t: pa.DataType, **kw: object) -> tuple:
        s = column_stats(_orc_stats(number_of_values=4, has_null=False, **kw), t, 4)
        assert s is not None and s.null_count == 0
        return s.min, s.max

    assert bounds(pa.int64(), kind="int", minimum=1, maximum=2) == (1, 2)
    assert bounds(pa.int64(), kind="int", minimum=3, maximum=2) == (None, None)
    assert bounds(pa.int8(), kind="int", minimum=1, maximum=200) == (None, None)  # beyond tinyint
    assert bounds(pa.float64(), kind="double", minimum=1.0, maximum=2.0, sum=3.0) == (1.0, 2.0)
    assert bounds(pa.float64(), kind="double", minimum=1.0, maximum=2.0, sum=math.nan) == (None, None)
    assert bounds(pa.bool_(), kind="boolean", true_count=9) == (None, None)


def test_orc_writer_version_rules() -> None:
    from lazyscan.format import orc_trust

    ts = _orc_stats(number_of_values=2, has_null=False, kind="timestamp", minimum=0, maximum=1000)
    assert column_stats(ts, pa.timestamp("ns"), 2, trust=orc_trust(0, 5)).min is None  # ORC-135
    assert column_stats(ts, pa.timestamp("ns"), 2, trust=orc_trust(0, 6)).min is not None
    dec = _orc_stats(number_of_values=2, has_null=False, kind="decimal", minimum="1.5", maximum="2.5")
    assert column_stats(dec, pa.decimal128(10, 2), 2, trust=orc_trust(0, 6)).min is None  # ORC-517, Java
    assert column_stats(dec, pa.decimal128(10, 2), 2, trust=orc_trust(1, 6)).min == 150  # C++ writer
    assert column_stats(dec, pa.decimal128(10, 2), 2, trust=orc_trust(0, 7)).min == 150
    assert column_stats(dec, pa.decimal128(20, 2), 2, trust=orc_trust(0, 6)).min == 150
    original = column_stats(dec, pa.decimal128(10, 2), 2, trust=orc_trust(0, 0))  # HIVE-8732
    assert (original.min, original.null_count) == (None, None)


def _orc_file(rows: list[tuple], schema: str, **kwargs: object) -> bytes:
    buf = io.BytesIO()
    with pyorc.Writer(buf, schema, compression=pyorc.CompressionKind.NONE, **kwargs) as w:  # type: ignore[arg-type]
        for r in rows:
            w.write(r)
    return buf.getvalue()


def test_orc_writer_version_is_read_from_the_postscript(tmp_path: Path) -> None:
    """The same file under writer version 0 (HIVE-8732) is not pruned by statistics; as
    written (6) it is."""
    data = _orc_file([(i,) for i in range(100)], "struct<x:bigint>")
    ps_len = data[-1]
    ps = bytearray(data[-1 - ps_len : -1])
    # postscript field 6 (writerVersion) is one varint byte: tag 0x30 then the value
    at = ps.index(bytes([0x30, 6]))
    ps[at + 1] = 0
    old = tmp_path / "original.orc"
    old.write_bytes(data[: -1 - ps_len] + bytes(ps) + data[-1:])
    new = tmp_path / "current.orc"
    new.write_bytes(data)
    assert OrcFile(str(old)).postscript.writer_version == 0
    for path, pruned in ((old, 0), (new, 1)):
        s = lazyscan.scan(str(path), where="x > 1000")
        assert s.to_table().num_rows == 0
        assert s.profile["row_groups_pruned_stats"] == pruned


def test_orc_nan_first_in_a_row_group_keeps_the_stripe(tmp_path: Path) -> None:
    """A NaN first in a row group freezes that row group's min/max at NaN, and the stripe's
    min/max (here 0..999, written by ORC's C++ writer) then leave the row group's values out;
    the NaN sum says so (ORC-629)."""
    stride = 1000
    values = [float(i) for i in range(stride)] + [math.nan] + [5000.0 + i for i in range(stride - 1)]
    path = tmp_path / "nan.orc"
    path.write_bytes(_orc_file([(v,) for v in values], "struct<d:double>", row_index_stride=stride))
    stripe = OrcFile(str(path)).stripe_statistics(0, "d")
    assert stripe is not None and stripe.maximum < 5000 and math.isnan(stripe.sum)
    table = porc.read_table(path)
    for where, wanted in (("d = 5500", [5500.0]), ("d IN (1, 5998)", [1.0, 5998.0])):
        expected = pc.sum(pc.is_in(table.column("d"), value_set=pa.array(wanted))).as_py()
        assert expected == len(wanted)
        assert lazyscan.scan(str(path), where=where).to_table().num_rows == expected, where


def test_orc_cpp_bloom_filters_of_orc_1024() -> None:
    """ORC C++ 1.6.0-1.6.11 and 1.7.0 hashed numbers unlike the readers (ORC-1024): their Bloom
    filters would rule out row groups holding the value; ORC's own test files show it."""
    from lazyscan.format import orc_trust

    number = ColumnFacts("int", "int64")
    assert BLOOM_FILTER in orc_trust(1, 6, None).distrusted(number)  # no softwareVersion: 1.6.0-1.6.10
    assert BLOOM_FILTER in orc_trust(1, 6, "1.6.11").distrusted(number)
    assert BLOOM_FILTER in orc_trust(1, 6, "1.7.0").distrusted(number)
    assert not orc_trust(1, 6, "1.6.12").distrusted(number)
    assert not orc_trust(1, 6, "1.7.1").distrusted(number)
    assert not orc_trust(0, 6, "1.6.11").distrusted(number)  # the Java writer
    for name in ("bad_bloom_filter_1.6.0.orc", "bad_bloom_filter_1.6.11.orc"):
        path = DATA / "orc-testing" / name
        ids = porc.read_table(path).column("id").to_pylist()
        for value in sorted(set(ids))[:5]:
            got = lazyscan.scan(str(path), where=f"id = {value}").to_table().num_rows
            assert got == ids.count(value), (name, value)


def test_inspect_names_the_writer_rules_that_apply(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``lazyscan inspect`` says which statistics pruning leaves unused for the file's writer,
    with the rule's source; a writer no rule names gets no such line."""
    from lazyscan.cli.main import main

    assert main(["inspect", str(foreign_file("h2oai_group_small.parquet"))]) == 0
    out = capsys.readouterr().out
    assert "statistics not used for pruning" in out and "ARROW-12513" in out
    assert main(["inspect", str(DATA / "orc-testing" / "bad_bloom_filter_1.6.0.orc")]) == 0
    out = capsys.readouterr().out
    assert "written by orc-cpp" in out and "ORC-1024" in out
    pq.write_table(pa.table({"x": [1.5, None]}), tmp_path / "new.parquet")  # this pyarrow: no known bug
    assert main(["inspect", str(tmp_path / "new.parquet")]) == 0
    assert "statistics not used" not in capsys.readouterr().out
