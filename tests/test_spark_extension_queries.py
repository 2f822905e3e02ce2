"""Transparent mode on whole queries: the same rows with lazyscan's extension on and off.

One session with the extension (on the shared test SparkContext, as in
``tests/test_spark_extension.py``) serves the module; each query runs with
``spark.lazyscan.enabled`` true, then false, and the two results must be equal as multisets. The
rule is told to take every scan it can (``spark.lazyscan.choice=lazyscan``), so that the cost
model's choice cannot hide a wrong lazyscan read at this small scale.

- The 22 TPC-H queries at SF 0.1 (:mod:`benchmarks.tpch_queries`), every table Parquet; each
  query reads half of the tables as catalog tables (``CREATE TABLE ... USING parquet
  LOCATION``) and half as temporary views over ``spark.read.parquet(path)``, odd and even
  queries swapping the halves. The selective queries must show the lazyscan scan in their plan.
- The shared-plan trap (one relation read with different filters in one plan: self-joins, a
  union of 24 filters), cached DataFrames (cache then filter, filter then cache), a partitioned
  table by path and from the catalog with partition filters, column names in another case and
  ``spark.sql.caseSensitive=true``, CTEs and subqueries.
- The random filters of ``tests/test_spark_differential.py`` through the rule.
- A corrupt file in a folder fails the query with lazyscan's located error; the next query runs.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

import lazyscan.spark
from benchmarks.data import DataError, tpchgen_binary
from benchmarks.tpch_queries import QUERIES, QUERY_SCALE, TABLES, generate_tables
from lazyscan.spark.extension import ENABLED_CONF
from tests.spark_extension_support import (
    extension_session,
    on_and_off,
    optimized_plan,
    scan_options,
)
from tests.spark_support import assert_same_rows, get_spark, typed_table
from tests.test_spark_differential import FILTERS_PER_ROUND, FilterMaker

pytestmark = pytest.mark.spark

#: the session setting of the rule's choice: ``lazyscan`` takes every scan the rule can take
CHOICE_CONF = "spark.lazyscan.choice"
#: the catalog database holding the TPC-H tables
DATABASE = "lzq_tpch"
#: tables read from the catalog by the odd queries; the even queries read these by path and the
#: others from the catalog
ODD_CATALOG = frozenset({"lineitem", "part", "customer", "nation"})
#: queries whose plan must read a scan through lazyscan (a filter on a column of a scan)
SELECTIVE = (1, 3, 4, 5, 6, 7, 8, 10, 12, 14, 15, 19, 20)


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    shared = get_spark()
    session = extension_session(shared)
    session.conf.set(CHOICE_CONF, "lazyscan")
    yield session
    lazyscan.spark.register(shared)  # the shared session's profile accumulator back in place


@pytest.fixture(scope="module")
def tpch(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The TPC-H tables at SF 0.1, by path, each also a catalog table of :data:`DATABASE`."""
    try:
        tpchgen_binary()
    except DataError:
        pytest.skip("tpchgen-cli is not installed")
    paths = generate_tables(QUERY_SCALE, tmp_path_factory.mktemp("tpch"), parts=2, row_group_bytes="2MB")
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
    for table, folder in paths.items():
        spark.sql(f"CREATE TABLE IF NOT EXISTS {DATABASE}.{table} USING parquet LOCATION '{folder}'")
    return paths


def _tpch_views(spark: Any, tpch: dict[str, Path], catalog: frozenset[str]) -> None:
    """Unqualified TPC-H names resolve to the catalog table for ``catalog``'s tables and to a
    temporary view over ``spark.read.parquet`` for the others."""
    spark.catalog.setCurrentDatabase(DATABASE)
    for table in TABLES:
        if table in catalog:
            spark.catalog.dropTempView(table)
        else:
            spark.read.parquet(str(tpch[table])).createOrReplaceTempView(table)


#: the TPC-H table of a column, by the column name's prefix
TABLE_OF_PREFIX = {"l": "lineitem", "o": "orders", "c": "customer", "p": "part", "ps": "partsupp", "s": "supplier",
                   "n": "nation", "r": "region"}


@pytest.mark.parametrize("number", sorted(QUERIES), ids=lambda n: f"Q{n}")
def test_tpch_query(spark: Any, tpch: dict[str, Path], number: int) -> None:
    catalog = ODD_CATALOG if number % 2 else frozenset(TABLES) - ODD_CATALOG
    _tpch_views(spark, tpch, catalog)
    try:
        on, off, on_plan, off_plan = on_and_off(spark, lambda s: s.sql(QUERIES[number]))
        scans = _lazyscan_scans(spark.sql(QUERIES[number]))
    finally:
        spark.catalog.setCurrentDatabase("default")
    assert_same_rows(on, off, f"TPC-H Q{number}")
    assert len(off) > 0
    assert "lazyscan" not in off_plan, off_plan
    if number in SELECTIVE:
        assert "lazyscan(where:" in on_plan, on_plan
    for options in scans:  # each scan read its table the way the query named it
        table = TABLE_OF_PREFIX[json.loads(options["columns"])[0].split("_")[0]]
        if table in catalog:
            assert options.get("table", "").endswith(f"{DATABASE}.{table}"), options
        else:
            assert "table" not in options and str(tpch[table]) in options.get("path", options.get("paths", "")), options


# ---- helpers -------------------------------------------------------------------------------------


def _lazyscan_scans(df: Any) -> list[dict[str, str]]:
    """The data source options of each lazyscan scan of ``df``'s optimized plan (subqueries
    left out), either route, whether the V2 pushdown has turned a relation into a scan yet or not."""
    return scan_options(df)


def _where_count(plan: str) -> int:
    return plan.count("lazyscan(where:")


# ---- one relation, several filters (the shared-plan trap) ---------------------------------------


def test_self_join_dataframes(spark: Any, tpch: dict[str, Path]) -> None:
    """Two filters on one DataFrame of lineitem, joined: each side keeps its own filter, also
    where both filter the same column with other values."""
    path = str(tpch["lineitem"])

    def query(s: Any) -> Any:
        items = s.read.parquet(path)
        small = items.where("l_quantity < 3 AND l_shipmode = 'AIR'").select("l_orderkey", "l_linenumber")
        large = items.where("l_quantity > 48").select("l_orderkey", items.l_partkey.alias("other_part"))
        return small.join(large, "l_orderkey")

    on, off, on_plan, _ = on_and_off(spark, query)
    assert _where_count(on_plan) == 2, on_plan
    assert "`l_quantity` < 3" in on_plan and "`l_quantity` > 48" in on_plan, on_plan
    assert_same_rows(on, off, "self-join")
    assert len(off) > 0


def test_self_join_of_a_catalog_table_in_sql(spark: Any, tpch: dict[str, Path]) -> None:
    query = f"""
        SELECT a.l_orderkey, a.l_linenumber, b.l_linenumber AS other, b.l_shipdate
        FROM {DATABASE}.lineitem a JOIN {DATABASE}.lineitem b
          ON a.l_orderkey = b.l_orderkey AND a.l_linenumber <> b.l_linenumber
        WHERE a.l_shipmode = 'MAIL' AND a.l_discount = 0.10 AND b.l_shipdate > DATE'1998-08-01'"""
    on, off, on_plan, _ = on_and_off(spark, lambda s: s.sql(query))
    assert _where_count(on_plan) == 2, on_plan
    assert_same_rows(on, off, "self-join in SQL")
    assert len(off) > 0


def test_union_of_one_dataframe_filtered_three_ways(spark: Any, tpch: dict[str, Path]) -> None:
    def query(s: Any) -> Any:
        orders = s.read.parquet(str(tpch["orders"]))
        parts = [
            orders.where("o_totalprice > 450000").select(F.lit(1).alias("q"), "o_orderkey"),
            orders.where("o_totalprice < 1000").select(F.lit(2).alias("q"), "o_orderkey"),
            orders.where("o_orderpriority = '1-URGENT' AND o_orderdate = DATE'1995-03-15'").select(
                F.lit(3).alias("q"), "o_orderkey"
            ),
        ]
        return parts[0].union(parts[1]).union(parts[2])

    on, off, on_plan, _ = on_and_off(spark, query)
    assert _where_count(on_plan) == 3, on_plan
    assert_same_rows(on, off, "union")
    assert {r.q for r in off} == {1, 2, 3}


# ---- cached DataFrames --------------------------------------------------------------------------


def _off_rows(spark: Any, build: Any) -> list[Any]:
    spark.conf.set(ENABLED_CONF, "false")
    try:
        return build(spark).collect()
    finally:
        spark.conf.set(ENABLED_CONF, "true")


def test_cache_then_filter(spark: Any, tpch: dict[str, Path]) -> None:
    """A filter over a cached read is applied to the cache (which holds Spark's scan of every
    row), not turned into a lazyscan scan."""
    path = str(tpch["orders"])
    where = "o_orderpriority = '1-URGENT' AND o_totalprice > 400000"
    expected = _off_rows(spark, lambda s: s.read.parquet(path).where(where).select("o_orderkey", "o_totalprice"))
    cached = spark.read.parquet(path).cache()
    try:
        cached.count()
        df = cached.where(where).select("o_orderkey", "o_totalprice")
        plan = optimized_plan(df)
        assert "InMemoryRelation" in plan and "lazyscan" not in plan, plan
        assert_same_rows(df.collect(), expected, "cache then filter")
    finally:
        cached.unpersist(blocking=True)
    assert len(expected) > 0


def test_filter_then_cache(spark: Any, tpch: dict[str, Path]) -> None:
    """A cached filtered read holds what lazyscan read; filtered again, and read again by a new
    DataFrame of the same plan (which Spark answers from the cache), it gives Spark's rows."""
    path = str(tpch["orders"])

    def build(s: Any) -> Any:
        return s.read.parquet(path).where("o_orderstatus = 'P' AND o_totalprice > 200000").select(
            "o_orderkey", "o_custkey", "o_totalprice"
        )

    expected = _off_rows(spark, build)
    cached = build(spark).cache()
    try:
        assert "lazyscan(where:" in str(cached._jdf.queryExecution().executedPlan().toString())
        assert_same_rows(cached.collect(), expected, "filter then cache")
        again = cached.where("o_custkey < 5000")
        assert "InMemoryRelation" in optimized_plan(again)
        assert_same_rows(again.collect(), [r for r in expected if r.o_custkey < 5000], "cached, filtered again")
        assert_same_rows(build(spark).collect(), expected, "the same plan, from the cache")
    finally:
        cached.unpersist(blocking=True)
    assert_same_rows(build(spark).collect(), expected, "after unpersist")
    assert len(expected) > 0


# ---- partitioned tables ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def partitioned(spark: Any, tpch: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Part of lineitem written by Spark partitioned by ``l_shipmode``, also the catalog table
    ``lineitem_by_mode`` (partitions recovered into the catalog), and a small table of modes."""
    folder = tmp_path_factory.mktemp("partitioned") / "lineitem"
    spark.conf.set(ENABLED_CONF, "false")
    try:
        spark.read.parquet(str(tpch["lineitem"])).where("l_orderkey < 150000").write.partitionBy(
            "l_shipmode"
        ).parquet(str(folder))
    finally:
        spark.conf.set(ENABLED_CONF, "true")
    spark.sql(f"CREATE TABLE {DATABASE}.lineitem_by_mode USING parquet LOCATION '{folder}'")  # partitions inferred
    spark.sql(f"ALTER TABLE {DATABASE}.lineitem_by_mode RECOVER PARTITIONS")
    modes = pa.table({"mode": ["AIR", "MAIL", "RAIL", "SHIP", "TRUCK", "REG AIR", "FOB"],
                      "by_sea": [False, False, False, True, False, False, True]})
    pq.write_table(modes, folder.parent / "modes.parquet")
    return folder


PARTITION_FILTERS = [
    ("l_shipmode = 'AIR' AND l_quantity > 40", True),
    ("l_shipmode IN ('MAIL', 'SHIP') OR l_discount > 0.09", True),
    ("substring(l_shipmode, 1, 1) = 'R' AND l_tax < 0.01", True),  # pruned by Spark only
    ("l_shipmode >= 'S' AND l_shipmode <> 'TRUCK' AND l_comment LIKE '%furiously%'", True),
]


@pytest.mark.parametrize("route", ["path", "catalog"])
@pytest.mark.parametrize(("where", "taken"), PARTITION_FILTERS, ids=[f[0] for f in PARTITION_FILTERS])
def test_partition_filters(spark: Any, partitioned: Path, route: str, where: str, taken: bool) -> None:
    def query(s: Any) -> Any:
        table = s.read.parquet(str(partitioned)) if route == "path" else s.table(f"{DATABASE}.lineitem_by_mode")
        return table.where(where).select("l_orderkey", "l_linenumber", "l_shipmode", "l_quantity")

    on, off, on_plan, _ = on_and_off(spark, query)
    assert ("lazyscan(where:" in on_plan) == taken, on_plan
    assert_same_rows(on, off, f"{route}: {where}")
    assert len(off) > 0


def test_partition_filter_from_a_join(spark: Any, partitioned: Path) -> None:
    """The partitions to read come from the other side of a join (Spark's dynamic partition
    pruning where its reader is kept)."""
    modes = str(partitioned.parent / "modes.parquet")

    def query(s: Any) -> Any:
        s.read.parquet(modes).createOrReplaceTempView("lzq_modes")
        return s.sql(
            f"""SELECT l.l_shipmode, count(*) AS n, sum(l.l_extendedprice) AS total
                FROM {DATABASE}.lineitem_by_mode l JOIN lzq_modes m ON l.l_shipmode = m.mode
                WHERE m.by_sea AND l.l_quantity > 30
                GROUP BY l.l_shipmode"""
        )

    on, off, on_plan, _ = on_and_off(spark, query)
    assert "lazyscan(where:" in on_plan, on_plan
    assert_same_rows(on, off, "partitions from a join")
    assert {r.l_shipmode for r in off} == {"SHIP", "FOB"}


# ---- column names in another case, spark.sql.caseSensitive ----------------------------------------


def test_names_in_another_case(spark: Any, tpch: dict[str, Path]) -> None:
    path = str(tpch["lineitem"])
    on, off, on_plan, _ = on_and_off(
        spark, lambda s: s.read.parquet(path).where("L_ORDERKEY = 5 OR L_Comment LIKE 'furiously%'").select(
            "l_linenumber", "L_COMMENT", "l_OrderKey"
        )
    )
    # the file's spelling, and only the columns the query names
    assert "lazyscan(where: (`l_orderkey` = 5" in on_plan and "OR (`l_comment` LIKE 'furiously%')" in on_plan, on_plan
    assert "columns: l_orderkey, l_linenumber, l_comment)" in on_plan, on_plan
    assert_same_rows(on, off, "names in another case")
    assert len(off) > 1


@pytest.fixture
def case_sensitive(spark: Any) -> Iterator[Any]:
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        yield spark
    finally:
        spark.conf.unset("spark.sql.caseSensitive")


def test_case_sensitive_names_of_one_spelling(case_sensitive: Any, tpch: dict[str, Path]) -> None:
    from pyspark.errors import AnalysisException

    spark = case_sensitive
    path = str(tpch["lineitem"])
    on, off, on_plan, _ = on_and_off(
        spark, lambda s: s.read.parquet(path).where("l_orderkey < 40 AND l_tax = 0.02").select("l_orderkey", "l_tax")
    )
    assert "lazyscan(where:" in on_plan, on_plan
    assert_same_rows(on, off, "case-sensitive session")
    assert len(off) > 0
    for enabled in ("true", "false"):
        spark.conf.set(ENABLED_CONF, enabled)
        with pytest.raises(AnalysisException, match="L_ORDERKEY"):
            spark.read.parquet(path).where("L_ORDERKEY = 5").collect()
    spark.conf.set(ENABLED_CONF, "true")


def test_case_sensitive_columns_differing_only_in_case(case_sensitive: Any, tmp_path: Path) -> None:
    """With ``spark.sql.caseSensitive=true`` a file may hold ``Val`` and ``val``: each name reads
    its own column."""
    spark = case_sensitive
    n = 2000
    table = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "Val": pa.array([i % 100 for i in range(n)], pa.int32()),
        "val": pa.array([(i * 7) % 100 for i in range(n)], pa.int32()),
        "Name": pa.array([f"n{i % 13}" for i in range(n)]),
        "name": pa.array([f"m{i % 17}" for i in range(n)]),
    })
    pq.write_table(table, tmp_path / "cased.parquet", row_group_size=500)
    path = str(tmp_path / "cased.parquet")
    for where, columns in [
        ("Val > 90", ["id", "val"]),
        ("val > 90", ["id", "Val"]),
        ("Val < 10 AND val > 50", ["id", "Val", "val"]),
        ("Name = 'n3' AND name = 'm4'", ["id", "Name", "name"]),
        ("name = 'm1'", ["id", "Name"]),
    ]:
        on, off, on_plan, _ = on_and_off(spark, lambda s, w=where, c=columns: s.read.parquet(path).where(w).select(*c))
        assert "lazyscan(where:" in on_plan, on_plan
        assert_same_rows(on, off, where)
        assert len(off) > 0, where


# ---- CTEs and subqueries --------------------------------------------------------------------------


def test_ctes_and_subqueries(spark: Any, tpch: dict[str, Path]) -> None:
    _tpch_views(spark, tpch, frozenset({"customer"}))
    query = """
        WITH big AS (SELECT o_orderkey, o_custkey, o_orderdate FROM orders WHERE o_totalprice > 250000),
             late AS (SELECT l_orderkey FROM lineitem WHERE l_receiptdate > l_commitdate AND l_shipmode = 'RAIL')
        SELECT c_mktsegment, count(*) AS n, min(o_orderdate) AS first
        FROM customer JOIN big ON c_custkey = o_custkey
        WHERE o_orderkey IN (SELECT l_orderkey FROM late)
          AND c_acctbal > (SELECT avg(c_acctbal) FROM customer WHERE c_mktsegment = 'BUILDING')
          AND EXISTS (SELECT 1 FROM lineitem l2 WHERE l2.l_orderkey = o_orderkey AND l2.l_quantity > 45)
        GROUP BY c_mktsegment"""
    try:
        on, off, on_plan, _ = on_and_off(spark, lambda s: s.sql(query))
    finally:
        spark.catalog.setCurrentDatabase("default")
    assert _where_count(on_plan) >= 4, on_plan
    assert_same_rows(on, off, "CTEs and subqueries")
    assert len(off) > 0


def test_cte_read_twice_with_two_filters(spark: Any, tpch: dict[str, Path]) -> None:
    spark.read.parquet(str(tpch["partsupp"])).createOrReplaceTempView("lzq_partsupp")
    query = """
        WITH ps AS (SELECT * FROM lzq_partsupp)
        SELECT a.ps_partkey, a.ps_suppkey, b.ps_suppkey AS other
        FROM ps a JOIN ps b ON a.ps_partkey = b.ps_partkey
        WHERE a.ps_availqty < 20 AND b.ps_supplycost > 990"""
    on, off, on_plan, _ = on_and_off(spark, lambda s: s.sql(query))
    assert _where_count(on_plan) == 2 and "`ps_availqty` < 20" in on_plan and "`ps_supplycost` > 990" in on_plan
    assert_same_rows(on, off, "a CTE read twice")
    assert len(off) > 0


# ---- the random filters of the data source's differential test -----------------------------------


@pytest.fixture(scope="module")
def typed_files(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The data set of ``tests/test_spark_differential.py``: every Spark column type, two files
    with other row group sizes, dictionaries and page indexes."""
    folder = tmp_path_factory.mktemp("typed")
    t = typed_table(3000, seed=11, nested=False)
    pq.write_table(t.slice(0, 1000), folder / "a.parquet", row_group_size=128, use_dictionary=True)
    pq.write_table(t.slice(1000), folder / "b.parquet", row_group_size=500, use_dictionary=["s", "i32"],
                   data_page_size=2048, write_page_index=True)
    return str(folder)


@pytest.mark.parametrize("seed", [300, 301])
def test_random_filters(spark: Any, typed_files: str, seed: int) -> None:
    """24 random filters on one DataFrame, unioned into one job, tagged by filter: the same
    (filter, row) multiset with the rule on and off. Spark's reader runs without Parquet filter
    pushdown both times (it drops NaN rows for ``x = NaN``, see ``run_round`` there)."""
    plain = spark.read.parquet(typed_files)
    maker = FilterMaker(plain.schema, plain.collect(), seed=seed)
    filters = [maker.filter() for _ in range(FILTERS_PER_ROUND)]

    def query(s: Any) -> Any:
        table = s.read.parquet(typed_files)
        tagged = [table.where(e).select(F.lit(i).alias("q"), "rid") for i, (e, _, _) in enumerate(filters)]
        union = tagged[0]
        for t in tagged[1:]:
            union = union.union(t)
        return union

    on, off, on_plan, _ = on_and_off(spark, query, parquet_pushdown=False)
    taken = _where_count(on_plan)
    assert taken >= FILTERS_PER_ROUND // 2, on_plan
    got, want = Counter((r.q, r.rid) for r in on), Counter((r.q, r.rid) for r in off)
    for i, (_, text, _) in enumerate(filters):
        mine = sorted(rid for (q, rid) in got.elements() if q == i)
        spark_rows = sorted(rid for (q, rid) in want.elements() if q == i)
        assert mine == spark_rows, f"filter {text!r}: {len(mine)} rows on, {len(spark_rows)} off"


# ---- bad input ------------------------------------------------------------------------------------


def test_corrupt_file_in_a_folder(spark: Any, tpch: dict[str, Path], tmp_path: Path) -> None:
    """A folder of good files and one whose pages are overwritten: the query fails with
    lazyscan's error naming the file; the next query on the session runs."""
    folder = tmp_path / "orders"
    shutil.copytree(tpch["orders"], folder)
    rows = pq.read_table(next(folder.glob("*.parquet"))).slice(0, 20_000)
    broken = folder / "orders.broken.parquet"
    pq.write_table(rows, broken, use_dictionary=False, row_group_size=5_000)
    data = bytearray(broken.read_bytes())
    footer = int.from_bytes(data[-8:-4], "little")
    data[4 : len(data) - footer - 8] = b"\xab" * (len(data) - footer - 12)  # every page, not the footer
    broken.write_bytes(bytes(data))

    df = spark.read.parquet(str(folder)).where("o_totalprice > 100000").select("o_orderkey", "o_comment")
    assert "lazyscan(where:" in optimized_plan(df)
    with pytest.raises(Exception, match=r"lazyscan cannot read .*orders\.broken\.parquet") as failed:
        df.collect()
    assert "row group" in str(failed.value), str(failed.value)[-2000:]
    broken.unlink()
    on, off, on_plan, _ = on_and_off(
        spark, lambda s: s.read.parquet(str(folder)).where("o_totalprice > 100000").select("o_orderkey", "o_comment")
    )
    assert "lazyscan(where:" in on_plan
    assert_same_rows(on, off, "after the failure")
    assert len(off) > 0


# ---- partition values, time zones -----------------------------------------------------------------


def _partition_folder(root: Path, values: list[str]) -> str:
    """A folder ``z=<value>/part.parquet`` per value (written as Spark escapes them), 400 rows
    each of ``id`` and ``i``."""
    for j, value in enumerate(values):
        (root / f"z={value}").mkdir(parents=True)
        rows = pa.table({"id": pa.array(range(j * 400, (j + 1) * 400), pa.int64()),
                         "i": pa.array([k % 50 for k in range(400)], pa.int32())})
        pq.write_table(rows, root / f"z={value}" / "part.parquet")
    return str(root)


PARTITION_VALUES = {
    "ints with a leading zero": ["007", "10"],  # Spark infers int: 7
    "ints and a word": ["007", "abc"],  # string: '007'
    "doubles": ["1.50", "2"],
    "a long": ["3000000000", "1"],
    "timestamps": ["2024-01-01 10%3A00%3A00", "2024-01-02 11%3A30%3A00"],
    "dates and a word": ["2024-01-01", "x"],
    "a null partition": ["__HIVE_DEFAULT_PARTITION__", "3"],
}


@pytest.mark.parametrize("values", PARTITION_VALUES.values(), ids=PARTITION_VALUES.keys())
def test_partition_values_typed_as_spark_types_them(spark: Any, tmp_path: Path, values: list[str]) -> None:
    path = _partition_folder(tmp_path / "t", values)
    on, off, on_plan, _ = on_and_off(spark, lambda s: s.read.parquet(path).where("i > 40").select("id", "z"))
    assert "lazyscan(where:" in on_plan, on_plan
    assert_same_rows(on, off, f"partition values {values}")
    assert len(off) == 2 * 9 * 8


def test_partition_value_beyond_long(spark: Any, tmp_path: Path) -> None:
    """Spark types z as decimal(20,0) (an integer beyond long, PartitioningUtils)."""
    path = _partition_folder(tmp_path / "t", ["99999999999999999999", "1"])
    for where in ["i > 40", "i > 40 AND z > 5"]:
        on, off, on_plan, _ = on_and_off(spark, lambda s, w=where: s.read.parquet(path).where(w).select("id", "z"))
        assert "lazyscan(where:" in on_plan, on_plan
        assert_same_rows(on, off, f"a partition value beyond long, {where}")
        assert len(off) > 0


def test_partition_values_without_type_inference(spark: Any, tmp_path: Path) -> None:
    path = _partition_folder(tmp_path / "t", ["007", "10"])
    spark.conf.set("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
    try:
        for where in ["i > 40", "i > 40 AND z = '007'"]:
            on, off, on_plan, _ = on_and_off(spark, lambda s, w=where: s.read.parquet(path).where(w).select("id", "z"))
            assert "lazyscan(where:" in on_plan, on_plan
            assert_same_rows(on, off, where)
            assert len(off) > 0
    finally:
        spark.conf.unset("spark.sql.sources.partitionColumnTypeInference.enabled")


TIMESTAMP_FILTERS = [
    "ts > TIMESTAMP'2024-03-10 02:30:00'",  # a local time the spring-forward change skips
    "ts >= TIMESTAMP'2024-03-12 00:00:00' AND ts < TIMESTAMP'2024-03-13 00:00:00'",
    "tn >= TIMESTAMP_NTZ'2024-03-12 00:00:00' AND tn < TIMESTAMP_NTZ'2024-03-13 00:00:00'",
    "ts < '2024-03-11' OR tn = TIMESTAMP_NTZ'2024-03-11 14:45:00'",
    "ts IN (TIMESTAMP'2024-03-10 00:37:00+00:00', TIMESTAMP'2024-03-10 01:14:00Z') OR tn IN (TIMESTAMP_NTZ'2024-03-10 01:51:00')",
]


@pytest.mark.parametrize("zone", ["America/Los_Angeles", "Asia/Kolkata"])
def test_timestamp_filters_in_a_session_time_zone(spark: Any, tmp_path: Path, zone: str) -> None:
    """Timestamp literals are read in the session's time zone; UTC-adjusted and local
    timestamps (``TIMESTAMP_NTZ``) compare as Spark compares them."""
    n = 1000
    start = dt.datetime(2024, 3, 10)
    pq.write_table(pa.table({
        "id": pa.array(range(n), pa.int64()),
        "ts": pa.array([start + dt.timedelta(minutes=37 * j) for j in range(n)], pa.timestamp("us", "UTC")),
        "tn": pa.array([start + dt.timedelta(minutes=37 * j) for j in range(n)], pa.timestamp("us")),
    }), tmp_path / "times.parquet", row_group_size=100)
    path = str(tmp_path / "times.parquet")
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        for where in TIMESTAMP_FILTERS:
            on, off, on_plan, _ = on_and_off(spark, lambda s, w=where: s.read.parquet(path).where(w).select("id", "ts", "tn"))
            assert "lazyscan(where:" in on_plan, on_plan
            assert_same_rows(on, off, f"{zone}: {where}")
            assert len(off) > 0, where
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)
