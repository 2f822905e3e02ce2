"""Transparent mode and joins: filters Spark infers later, and join keys as key filters.

Each case runs a join with the rule on and off (``spark.lazyscan.enabled``) and asserts the same
rows, and what the optimized plan's lazyscan relation holds:

- a filter Spark infers after the pass that swapped a scan (a constant carried over an
  equi-join) is added to the scan's ``where``, with the inferred ``IS NOT NULL`` ones (alone,
  those plan nothing again);
- with ``spark.lazyscan.keyFilter.enabled`` (on by default), the fact side of a join with a
  small selectively filtered scan (Q17-like: lineitem with a filtered part; found under the other
  side's inner joins and aggregates grouped by the key, and reached through the fact side's
  aggregates grouped by it) gets that scan's distinct keys as its ``keyFilter.<column>`` option,
  unless there are more than ``spark.lazyscan.keyFilter.maxKeys``, the scan is under
  ``spark.lazyscan.keyFilter.minScanBytes`` or either side is not deterministic; the keys the
  JVM writes are the ones :meth:`lazyscan.KeyFilter.from_text` reads;
- a relation planned inside a subquery before Spark pruned its columns is planned again for the
  columns used;
- an uncorrelated ``x IN (SELECT k ...)`` conjunct gives the scan its subquery's keys the same
  way (Spark makes it a left semi join only after its V2 scan pushdown, so the rule takes it as
  the filter's conjunct); ``NOT IN``, correlated and random subqueries give none;
- a partitioned table joined on its partition column keeps Spark's reader (its dynamic partition
  pruning skips partitions, which the Python source cannot).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lazyscan.spark
from lazyscan.predicate.keys import KeyFilter
from lazyscan.spark.extension import ENABLED_CONF
from tests.spark_extension_support import (
    extension_session,
    on_and_off,
    optimized_plan,
    rule_decisions,
    scan_options,
)
from tests.spark_support import assert_same_rows, get_spark

pytestmark = pytest.mark.spark

KEY_FILTERS = "spark.lazyscan.keyFilter.enabled"
MAX_KEYS = "spark.lazyscan.keyFilter.maxKeys"
MAX_DIMENSION_BYTES = "spark.lazyscan.keyFilter.maxDimensionBytes"
MIN_SCAN_BYTES = "spark.lazyscan.keyFilter.minScanBytes"

PARTS = 2000
LINES = 40_000
BRANDS = [f"Brand#{i}{j}" for i in range(1, 6) for j in range(1, 6)]
CONTAINERS = ["SM BOX", "MED BOX", "LG BOX", "JUMBO PKG"]


def _part() -> pa.Table:
    keys = list(range(1, PARTS + 1))
    return pa.table(
        {
            "p_partkey": pa.array(keys, pa.int64()),
            "p_brand": pa.array([BRANDS[k * 7 % len(BRANDS)] for k in keys]),
            "p_container": pa.array([CONTAINERS[k * 3 % len(CONTAINERS)] for k in keys]),
            "p_name": pa.array([f"part {k:05d}" for k in keys]),
            "p_day": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=k % 400) for k in keys]),
            "p_price": pa.array([decimal.Decimal(k % 997) / 10 for k in keys], pa.decimal128(12, 1)),
        }
    )


def _lineitem() -> pa.Table:
    rows = range(LINES)
    return pa.table(
        {
            "l_orderkey": pa.array([r // 4 for r in rows], pa.int64()),
            # NULL keys every so often: an inner join never matches them
            "l_partkey": pa.array([None if r % 97 == 0 else r * 7919 % PARTS + 1 for r in rows], pa.int64()),
            "l_quantity": pa.array([decimal.Decimal((r + r // PARTS * 13) % 50 + 1) for r in rows], pa.decimal128(12, 2)),
            "l_extendedprice": pa.array([decimal.Decimal(r % 10_000) / 100 for r in rows], pa.decimal128(12, 2)),
            "l_name": pa.array([f"part {r * 7919 % PARTS + 1:05d}" for r in rows]),
            "l_day": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=(r * 7919 % PARTS + 1) % 400) for r in rows]),
            "l_price": pa.array([decimal.Decimal((r * 7919 % PARTS + 1) % 997) / 10 for r in rows],
                                pa.decimal128(12, 1)),
        }
    )


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    shared = get_spark()
    session = extension_session(shared)
    session.conf.set(KEY_FILTERS, "true")
    session.conf.set(MIN_SCAN_BYTES, "0")  # the tables here are small
    yield session
    lazyscan.spark.register(shared)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("joins")
    # lineitem sorted by part key: its row groups hold key ranges a key filter can skip
    lineitem = _lineitem()
    pq.write_table(lineitem.sort_by("l_partkey"), root / "lineitem.parquet", row_group_size=2000)
    pq.write_table(_part(), root / "part.parquet", row_group_size=500)
    folder = root / "sales"
    for day in range(4):
        (folder / f"day={day}").mkdir(parents=True)
        pq.write_table(lineitem.slice(day * 1000, 1000), folder / f"day={day}" / "part-0.parquet")
    pq.write_table(pa.table({"d": pa.array([1, 2], pa.int32()), "label": ["a", "b"]}), root / "days.parquet")
    return root


def _views(spark: Any, data: Path) -> None:
    spark.read.parquet(str(data / "lineitem.parquet")).createOrReplaceTempView("lineitem")
    spark.read.parquet(str(data / "part.parquet")).createOrReplaceTempView("part")


Q17 = """
    SELECT sum(l_extendedprice) / 7.0 AS avg_yearly, count(*) AS n
    FROM lineitem, part
    WHERE p_partkey = l_partkey AND p_brand = 'Brand#23' AND p_container = 'MED BOX'
      AND l_quantity < (SELECT 0.2 * avg(l_quantity) FROM lineitem WHERE l_partkey = p_partkey)
"""


def _lazyscan_options(df: Any, path_part: str) -> list[dict[str, str]]:
    return [o for o in scan_options(df) if path_part in o.get("path", "")]


# ---- filters Spark infers after the swap --------------------------------------------------


def test_inferred_constant_reaches_the_where(spark: Any, data: Path) -> None:
    _views(spark, data)
    # l_partkey = p_partkey AND p_partkey = 7: Spark infers l_partkey = 7 for lineitem, after
    # the first pass swapped lineitem for its own filter l_quantity > 10
    query = """SELECT l_orderkey, l_quantity, p_name FROM lineitem JOIN part ON l_partkey = p_partkey
               WHERE l_quantity > 10 AND p_partkey = 7"""
    on, off, on_plan, off_plan = on_and_off(spark, lambda s: s.sql(query))
    assert_same_rows(on, off, query)
    assert len(off) > 0
    where = [o["where"] for o in _lazyscan_options(spark.sql(query), "lineitem")]
    assert len(where) == 1, on_plan
    assert "`l_partkey` = 7L" in where[0] and "`l_quantity` > 10" in where[0], where
    assert "`l_partkey` IS NOT NULL" in where[0], where
    assert "`l_partkey` = 7L" in on_plan  # the relation's name shows it in explain()
    assert "lazyscan" not in off_plan


def test_inferred_is_not_null_alone_plans_no_scan_again(spark: Any, data: Path) -> None:
    _views(spark, data)
    spark.conf.set(ENABLED_CONF, "true")
    df = spark.sql("SELECT l_orderkey FROM lineitem WHERE l_quantity > 40")
    options = _lazyscan_options(df, "lineitem")
    # Spark infers IS NOT NULL of the compared column after the first pass: not worth a new plan
    assert [o["where"] for o in options] == ["`l_quantity` > 40.00BD"], options


# ---- key filters from joins ------------------------------------------------------------------


def test_q17_like_join_same_rows_and_key_filter(spark: Any, data: Path) -> None:
    _views(spark, data)
    on, off, on_plan, _ = on_and_off(spark, lambda s: s.sql(Q17))
    assert_same_rows(on, off, Q17)
    assert off[0]["n"] > 0
    keyed = [o for o in _lazyscan_options(spark.sql(Q17), "lineitem") if "keyFilter.l_partkey" in o]
    assert keyed, on_plan
    wanted = {r.p_partkey for r in spark.read.parquet(str(data / "part.parquet"))
              .where("p_brand = 'Brand#23' AND p_container = 'MED BOX'").collect()}
    kf = KeyFilter.from_text(keyed[0]["keyFilter.l_partkey"])
    assert kf.exact and len(kf) == len(wanted)
    assert set(kf.values(len(wanted) + 1) or []) == wanted
    assert "keys: l_partkey (" in on_plan
    assert any("key filter on l_partkey: " in d and d.endswith(" keys") for d in rule_decisions(spark))


def test_q17_aggregate_scan_gets_the_keys_through_its_grouping_key(spark: Any, data: Path) -> None:
    """Q17's second lineitem scan feeds ``avg(l_quantity) GROUP BY l_partkey``, joined to the
    first join's ``p_partkey``: the keys come from the filtered part under that join, and cross
    the aggregate by its grouping key (a group whose key the join drops is dropped whole)."""
    _views(spark, data)
    spark.conf.set(ENABLED_CONF, "true")
    keyed = [o for o in _lazyscan_options(spark.sql(Q17), "lineitem") if "keyFilter.l_partkey" in o]
    assert len(keyed) == 2, optimized_plan(spark.sql(Q17))
    assert sorted(sorted(json.loads(o["columns"])) for o in keyed) == [
        ["l_extendedprice", "l_partkey", "l_quantity"], ["l_partkey", "l_quantity"]
    ], keyed
    assert len({o["keyFilter.l_partkey"] for o in keyed}) == 1
    # one decision per scan: the two scans of lineitem are listed apart, each with its columns
    lineitem = [d for d in rule_decisions(spark) if d.startswith(f"file:{data / 'lineitem.parquet'}: lazyscan(")]
    assert len(lineitem) == 2, rule_decisions(spark)
    assert {("l_extendedprice" in d) for d in lineitem} == {True, False}, lineitem


@pytest.mark.parametrize(
    ("query", "keyed_scans"),
    [
        # the key comes from the big side of the inner join: its equi-join partner bounds it
        ("""SELECT a.l_orderkey, a.l_quantity FROM lineitem a JOIN
              (SELECT l_partkey FROM lineitem JOIN part ON l_partkey = p_partkey
               WHERE p_brand = 'Brand#23' AND l_quantity > 45) b ON a.l_partkey = b.l_partkey""", 2),
        # the key crosses an aggregate on the other side too
        ("""SELECT l_orderkey, n FROM lineitem JOIN
              (SELECT p_partkey, count(*) AS n FROM part WHERE p_brand = 'Brand#23' GROUP BY p_partkey)
              ON l_partkey = p_partkey""", 1),
        # one of several grouping keys is the join key
        ("""SELECT t.l_orderkey, t.q FROM
              (SELECT l_orderkey, l_partkey, sum(l_quantity) AS q FROM lineitem GROUP BY l_orderkey, l_partkey) t
              JOIN part ON t.l_orderkey = p_partkey WHERE p_brand = 'Brand#23'""", 1),
        # joined on an aggregate's result, not a grouping key: no keys cross that aggregate
        ("""SELECT t.l_partkey, t.n FROM
              (SELECT l_partkey, count(*) AS n FROM lineitem GROUP BY l_partkey) t
              JOIN part ON t.n = p_partkey WHERE p_brand = 'Brand#23'""", 0),
    ],
)
def test_keys_found_through_joins_and_aggregates(spark: Any, data: Path, query: str, keyed_scans: int) -> None:
    _views(spark, data)
    on, off, on_plan, _ = on_and_off(spark, lambda s: s.sql(query))
    assert_same_rows(on, off, query)
    assert len(off) > 0 or not keyed_scans
    keyed = [o for o in _lazyscan_options(spark.sql(query), "lineitem") if any(k.startswith("keyFilter.") for k in o)]
    assert len(keyed) == keyed_scans, (on_plan, rule_decisions(spark))


def test_correlated_subquery_scan_reads_only_the_columns_it_needs(spark: Any, data: Path) -> None:
    """A filtered scan inside a correlated subquery is swapped before Spark prunes its columns
    (the filter sits on the whole table); once the query around it is planned, its relation is
    planned again for the columns used."""
    _views(spark, data)
    query = """SELECT p_partkey, p_name FROM part WHERE p_price * 100 >
                 (SELECT sum(l_quantity) FROM lineitem WHERE l_partkey = p_partkey AND l_day >= DATE '2020-06-01')"""
    on, off, on_plan, _ = on_and_off(spark, lambda s: s.sql(query))
    assert_same_rows(on, off, query)
    assert len(off) > 0
    options = _lazyscan_options(spark.sql(query), "lineitem")
    assert len(options) == 1, on_plan
    assert sorted(json.loads(options[0]["columns"])) == ["l_day", "l_partkey", "l_quantity"], options


def test_key_filter_joins_a_scan_with_its_own_filter(spark: Any, data: Path) -> None:
    _views(spark, data)
    query = """SELECT l_orderkey, l_quantity, p_name FROM lineitem JOIN part ON l_partkey = p_partkey
               WHERE l_quantity > 10 AND p_brand = 'Brand#23'"""
    on, off, _, _ = on_and_off(spark, lambda s: s.sql(query))
    assert_same_rows(on, off, query)
    assert len(off) > 0
    options = _lazyscan_options(spark.sql(query), "lineitem")
    assert len(options) == 1 and "keyFilter.l_partkey" in options[0], options
    assert "`l_quantity` > 10.00BD" in options[0]["where"], options


def test_random_filter_gives_no_key_filter(spark: Any, data: Path) -> None:
    _views(spark, data)
    query = """SELECT l_orderkey FROM lineitem
               JOIN (SELECT * FROM part WHERE p_brand = 'Brand#23' AND rand() < 0.5) ON l_partkey = p_partkey"""
    spark.conf.set(ENABLED_CONF, "true")
    assert not any("keyFilter.l_partkey" in o for o in scan_options(spark.sql(query))), optimized_plan(spark.sql(query))


def test_key_filter_needs_a_small_side(spark: Any, data: Path) -> None:
    _views(spark, data)
    spark.conf.set(MAX_DIMENSION_BYTES, "10")
    try:
        on, off, _, _ = on_and_off(spark, lambda s: s.sql(Q17))
        assert not any("keyFilter.l_partkey" in o for o in scan_options(spark.sql(Q17)))
    finally:
        spark.conf.unset(MAX_DIMENSION_BYTES)
    assert_same_rows(on, off, Q17)


def test_key_filter_needs_a_large_scan(spark: Any, data: Path) -> None:
    """Under ``spark.lazyscan.keyFilter.minScanBytes`` (128m by default) Spark's reader reads
    the scan in less time than collecting the keys takes: no keys are collected."""
    _views(spark, data)
    spark.conf.set(MIN_SCAN_BYTES, "1g")
    try:
        assert not any("keyFilter.l_partkey" in o for o in scan_options(spark.sql(Q17)))
    finally:
        spark.conf.set(MIN_SCAN_BYTES, "0")
    assert any("keyFilter.l_partkey" in o for o in scan_options(spark.sql(Q17)))


def test_side_filtered_by_is_not_null_alone_gives_no_keys(spark: Any, data: Path) -> None:
    """A side whose only filters are ``IS NOT NULL`` (Spark adds them to every join key) holds
    nearly all its keys: collecting them would cost a job and filter nothing."""
    _views(spark, data)
    query = """SELECT l_orderkey, p_name FROM lineitem
               JOIN (SELECT p_partkey, p_name FROM part WHERE p_name IS NOT NULL) ON l_partkey = p_partkey"""
    on, off, _, _ = on_and_off(spark, lambda s: s.sql(query))
    assert_same_rows(on, off, query)
    assert not any("keyFilter.l_partkey" in o for o in scan_options(spark.sql(query)))


def test_over_the_cap_no_key_filter(spark: Any, data: Path) -> None:
    _views(spark, data)
    query = """SELECT l_orderkey, p_name FROM lineitem JOIN part ON l_partkey = p_partkey
               WHERE p_brand = 'Brand#23'"""
    brand_parts = PARTS // len(BRANDS)
    spark.conf.set(MAX_KEYS, str(brand_parts - 1))
    try:
        on, off, _, _ = on_and_off(spark, lambda s: s.sql(query))
        assert not any("keyFilter.l_partkey" in o for o in scan_options(spark.sql(query)))
        assert any(f"none: the other side has more than {brand_parts - 1} distinct keys" in d
                   for d in rule_decisions(spark))
    finally:
        spark.conf.unset(MAX_KEYS)
    assert_same_rows(on, off, query)
    spark.conf.set(MAX_KEYS, str(brand_parts))
    try:
        assert any("keyFilter.l_partkey" in o for o in scan_options(spark.sql(query)))
    finally:
        spark.conf.unset(MAX_KEYS)


def test_a_side_over_the_cap_is_remembered_for_the_session(spark: Any, data: Path, tmp_path: Path) -> None:
    """A side found over the cap costs its collection job once: a later query with the same
    side, files and cap runs none; other files or another cap are collected again."""
    _views(spark, data)
    query = "SELECT l_orderkey FROM lineitem JOIN part ON l_partkey = p_partkey WHERE p_brand = 'Brand#13'"
    tracker = spark.sparkContext.statusTracker()

    def jobs_while_planning() -> int:
        before = set(tracker.getJobIdsForGroup())
        optimized_plan(spark.sql(query))
        return len(set(tracker.getJobIdsForGroup()) - before)

    spark.conf.set(ENABLED_CONF, "true")
    spark.conf.set(MAX_KEYS, "3")
    try:
        assert jobs_while_planning() >= 1  # the collection job
        assert jobs_while_planning() == 0
        assert any("none: the other side has more than 3 distinct keys" in d and "found by an earlier query" in d
                   for d in rule_decisions(spark)), rule_decisions(spark)
        copy = tmp_path / "part.parquet"
        pq.write_table(pq.read_table(data / "part.parquet"), copy)
        spark.read.parquet(str(copy)).createOrReplaceTempView("part")
        assert jobs_while_planning() >= 1  # other files
        spark.conf.set(MAX_KEYS, "4")
        assert jobs_while_planning() >= 1  # another cap
        assert jobs_while_planning() == 0
    finally:
        spark.conf.unset(MAX_KEYS)
        _views(spark, data)
    # under the cap, the keys are collected by every query (the files may have changed)
    assert jobs_while_planning() >= 1
    assert jobs_while_planning() >= 1
    assert any("keyFilter.l_partkey" in o for o in scan_options(spark.sql(query)))


def test_key_filter_switch(spark: Any, data: Path) -> None:
    _views(spark, data)
    spark.conf.set(ENABLED_CONF, "true")
    try:
        spark.conf.set(KEY_FILTERS, "false")
        assert not any("keyFilter.l_partkey" in o for o in scan_options(spark.sql(Q17)))
        spark.conf.unset(KEY_FILTERS)  # the default: on
        assert any("keyFilter.l_partkey" in o for o in scan_options(spark.sql(Q17)))
    finally:
        spark.conf.set(KEY_FILTERS, "true")


@pytest.mark.parametrize(
    ("fact_key", "part_key", "part_filter"),
    [
        ("l_name", "p_name", "p_brand = 'Brand#12' AND p_container = 'SM BOX'"),  # strings
        ("l_day", "p_day", "p_brand = 'Brand#31'"),  # dates
        ("l_price", "p_price", "p_container = 'LG BOX' AND p_brand = 'Brand#44'"),  # decimals
    ],
)
def test_key_types(spark: Any, data: Path, fact_key: str, part_key: str, part_filter: str) -> None:
    _views(spark, data)
    query = f"""SELECT l_orderkey, l_quantity, {fact_key}, p_partkey FROM lineitem JOIN part ON {fact_key} = {part_key}
                WHERE {part_filter}"""
    on, off, on_plan, _ = on_and_off(spark, lambda s: s.sql(query))
    assert_same_rows(on, off, query)
    assert len(off) > 0
    keyed = [o for o in _lazyscan_options(spark.sql(query), "lineitem") if f"keyFilter.{fact_key}" in o]
    assert keyed, (on_plan, rule_decisions(spark))
    wanted = spark.read.parquet(str(data / "part.parquet")).where(part_filter).select(part_key).distinct().count()
    assert len(KeyFilter.from_text(keyed[0][f"keyFilter.{fact_key}"])) == wanted


@pytest.mark.parametrize("own_filter", ["", " AND l_quantity > 10"])
def test_in_subquery_gives_its_keys(spark: Any, data: Path, own_filter: str) -> None:
    """``x IN (SELECT k ...)``: the subquery's distinct keys become the scan's key filter (with
    the scan's own filter, if any, as its ``where``); Spark's IN stays and checks every row."""
    _views(spark, data)
    query = ("SELECT l_orderkey FROM lineitem WHERE l_partkey IN (SELECT p_partkey FROM part WHERE p_brand = 'Brand#23')"
             + own_filter)
    on, off, on_plan, _ = on_and_off(spark, lambda s: s.sql(query))
    assert_same_rows(on, off, query)
    assert len(off) > 0
    keyed = [o for o in _lazyscan_options(spark.sql(query), "lineitem") if "keyFilter.l_partkey" in o]
    assert len(keyed) == 1, on_plan
    wanted = {r.p_partkey for r in spark.read.parquet(str(data / "part.parquet")).where("p_brand = 'Brand#23'").collect()}
    kf = KeyFilter.from_text(keyed[0]["keyFilter.l_partkey"])
    assert kf.exact and set(kf.values(len(wanted) + 1) or []) == wanted
    assert ("`l_quantity` > 10" in keyed[0].get("where", "")) == bool(own_filter), keyed


@pytest.mark.parametrize(
    "query",
    [
        "SELECT l_orderkey FROM lineitem WHERE l_partkey NOT IN (SELECT p_partkey FROM part WHERE p_brand = 'Brand#23')",
        # correlated: the keys depend on the outer row
        "SELECT l_orderkey FROM lineitem WHERE l_partkey IN (SELECT p_partkey FROM part WHERE p_name = l_name)",
        "SELECT l_orderkey FROM lineitem WHERE l_partkey IN (SELECT p_partkey FROM part WHERE p_brand = 'Brand#23' "
        "AND rand() < 0.5)",
    ],
)
def test_subqueries_that_give_no_keys(spark: Any, data: Path, query: str) -> None:
    _views(spark, data)
    on, off, _, _ = on_and_off(spark, lambda s: s.sql(query))
    if "rand()" not in query:
        assert_same_rows(on, off, query)
    assert not any("keyFilter.l_partkey" in o for o in scan_options(spark.sql(query))), optimized_plan(spark.sql(query))


def test_empty_other_side(spark: Any, data: Path) -> None:
    _views(spark, data)
    query = "SELECT l_orderkey FROM lineitem JOIN part ON l_partkey = p_partkey WHERE p_brand = 'no such brand'"
    on, off, _, _ = on_and_off(spark, lambda s: s.sql(query))
    assert on == off == []
    keyed = [o for o in _lazyscan_options(spark.sql(query), "lineitem") if "keyFilter.l_partkey" in o]
    assert keyed and len(KeyFilter.from_text(keyed[0]["keyFilter.l_partkey"])) == 0  # the scan reads no row


def test_partition_column_join_keeps_sparks_reader(spark: Any, data: Path) -> None:
    spark.read.parquet(str(data / "sales")).createOrReplaceTempView("sales")
    spark.read.parquet(str(data / "days.parquet")).createOrReplaceTempView("days")
    query = """SELECT l_orderkey, label FROM sales JOIN days ON day = d
               WHERE l_quantity > 30 AND label = 'b'"""
    on, off, on_plan, _ = on_and_off(spark, lambda s: s.sql(query))
    assert_same_rows(on, off, query)
    assert not _lazyscan_options(spark.sql(query), "sales"), on_plan
    assert any("dynamic partition pruning: joined on its partition column day" in d for d in rule_decisions(spark))
    assert "dynamicpruning" in on_plan, on_plan


def test_optimized_plan_of_spark_reader_unchanged_when_off(spark: Any, data: Path) -> None:
    _views(spark, data)
    spark.conf.set(ENABLED_CONF, "false")
    try:
        assert "lazyscan" not in optimized_plan(spark.sql(Q17))
    finally:
        spark.conf.set(ENABLED_CONF, "true")
