"""Tables of Spark's session catalog read by name: ``lazyscan.spark.read(spark, "db.t", ...)``
and the data source with :func:`lazyscan.spark.table_options`.

One session with Hive support and a Derby metastore in a temporary folder
(:func:`tests.spark_support.get_hive_spark`, on the shared session's JVM) holds the tables:
written with ``saveAsTable`` (Parquet, partitioned, mixed-case names; ORC), created with
``CREATE TABLE ... USING parquet PARTITIONED BY`` and a column added later with ``ALTER TABLE
ADD COLUMNS`` (older files lack it), and Hive tables ``STORED AS PARQUET`` / ``STORED AS ORC``
with a partition added at a location of its own. Every read is compared with
``spark.table(name).where(filter)`` in the same session, nulls and NaNs included, through both
routes of ``read`` and the data source.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lazyscan.spark
from lazyscan.errors import OptionError, SourceError, UnsupportedFeatureError
from lazyscan.predicate import parse_predicate
from lazyscan.spark.catalog import resolve_table
from lazyscan.spark.compat import HAS_PYTHON_DATA_SOURCE
from tests.spark_support import assert_same_rows, get_hive_spark

pytestmark = pytest.mark.spark

#: one task per file range: the tables are small
ONE_TASK = {"minPartitionNum": "1", "openCostInBytes": "1"}
ROUTES = ["tasks", "source"] if HAS_PYTHON_DATA_SOURCE else ["tasks"]


def _events(n: int, seed: int) -> dict[str, list[Any]]:
    rng = np.random.default_rng(seed)

    def nulls(values: list[Any]) -> list[Any]:
        return [None if rng.random() < 0.1 else v for v in values]

    scores = [-1.5, 0.0, 2.5, math.nan, math.inf, 7.25]
    return {
        "Id": list(range(seed * 10_000, seed * 10_000 + n)),
        "UserName": nulls([f"user{int(i) % 17}" for i in rng.integers(0, 100, n)]),
        "Score": nulls([scores[int(i)] for i in rng.integers(0, len(scores), n)]),
        "Region": nulls([["eu", "us", "apac"][int(i)] for i in rng.integers(0, 3, n)]),
        "Yr": nulls([int(y) for y in rng.integers(2021, 2024, n)]),
    }


def _frame(spark: Any, data: dict[str, list[Any]], ddl: str) -> Any:
    rows = list(zip(*data.values()))
    return spark.createDataFrame(rows, ddl)


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("hive")
    s = get_hive_spark(folder)
    s.sql("CREATE DATABASE IF NOT EXISTS lz")
    ddl = "Id BIGINT, UserName STRING, Score DOUBLE, Region STRING, Yr INT"

    # saveAsTable, Parquet, partitioned by a mixed-case column (NULL partition included)
    _frame(s, _events(600, 1), ddl).write.format("parquet").partitionBy("Region").saveAsTable("lz.Saved")
    # saveAsTable, ORC, no partitions
    _frame(s, _events(500, 2), ddl).write.format("orc").saveAsTable("lz.saved_orc")

    # CREATE TABLE ... USING parquet PARTITIONED BY, then a column added: old files lack it
    s.sql("CREATE TABLE lz.Events (Id BIGINT, UserName STRING, Score DOUBLE, Region STRING, Yr INT) "
          "USING parquet PARTITIONED BY (Region, Yr)")
    _frame(s, _events(800, 3), ddl).write.insertInto("lz.Events")
    s.sql("ALTER TABLE lz.Events ADD COLUMNS (Extra STRING)")
    later = _events(300, 4)
    later["Extra"] = [None if i % 3 == 0 else f"x{i % 5}" for i in range(300)]
    _frame(s, {k: later[k] for k in ["Id", "UserName", "Score", "Extra", "Region", "Yr"]},
           "Id BIGINT, UserName STRING, Score DOUBLE, Extra STRING, Region STRING, Yr INT").write.insertInto("lz.Events")

    # Hive tables; a partition at a location of its own, written by another writer (pyarrow:
    # INT instead of the catalog's BIGINT), and one whose folder is missing
    s.sql("CREATE TABLE lz.hive_pq (id BIGINT, user_name STRING, score DOUBLE) "
          "PARTITIONED BY (d STRING) STORED AS PARQUET")
    hive_data = _events(400, 5)
    _frame(s, {"id": hive_data["Id"], "user_name": hive_data["UserName"], "score": hive_data["Score"],
               "d": [["a", "b"][i % 2] for i in range(400)]},
           "id BIGINT, user_name STRING, score DOUBLE, d STRING").write.insertInto("lz.hive_pq")
    custom = folder / "custom" / "somewhere"
    custom.mkdir(parents=True)
    pq.write_table(pa.table({"id": pa.array([7, 8, None], pa.int32()), "user_name": ["c7", None, "c9"],
                             "score": [1.0, math.nan, None]}), custom / "other-writer.parquet")
    s.sql(f"ALTER TABLE lz.hive_pq ADD PARTITION (d='custom') LOCATION '{custom}'")
    s.sql(f"ALTER TABLE lz.hive_pq ADD PARTITION (d='gone') LOCATION '{folder / 'never-written'}'")
    s.sql("CREATE TABLE lz.hive_orc (id BIGINT, score DOUBLE) PARTITIONED BY (d STRING) STORED AS ORC")
    s.sql("INSERT INTO lz.hive_orc PARTITION (d='x') VALUES (1, 1.5), (2, NULL), (3, CAST('NaN' AS DOUBLE))")
    s.sql("INSERT INTO lz.hive_orc PARTITION (d='y') VALUES (4, -2.0)")

    # partition values of several types, text that folder names escape, NULLs
    s.sql("CREATE TABLE lz.typed_parts (v INT, day DATE, at TIMESTAMP, tag STRING) USING parquet "
          "PARTITIONED BY (day, at, tag)")
    s.sql("INSERT INTO lz.typed_parts VALUES "
          "(1, DATE'2024-02-29', TIMESTAMP'2024-03-01 10:30:00', 'a/b'), "
          "(2, DATE'2024-02-29', TIMESTAMP'2024-03-01 10:30:00', 'x=y %'), "
          "(3, NULL, TIMESTAMP'1999-12-31 23:59:59.5', NULL), "
          "(4, DATE'1970-01-01', NULL, 'plain')")
    # partitions the catalog does not track: found as key=value folders under the location
    s.conf.set("spark.sql.hive.manageFilesourcePartitions", "false")
    try:
        _frame(s, _events(300, 6), ddl).write.format("parquet").partitionBy("Yr").saveAsTable("lz.untracked")
    finally:
        s.conf.unset("spark.sql.hive.manageFilesourcePartitions")

    # a partition written with other spellings of the column names
    upper = folder / "upper"
    upper.mkdir()
    pq.write_table(pa.table({"ID": pa.array([1, 2, None], pa.int64()), "Score": [1.5, None, math.nan]}),
                   upper / "upper-case.parquet")
    s.sql("CREATE TABLE lz.hive_case (id BIGINT, score DOUBLE) PARTITIONED BY (d STRING) STORED AS PARQUET")
    s.sql("INSERT INTO lz.hive_case PARTITION (d='lower') VALUES (3, 0.5)")
    s.sql(f"ALTER TABLE lz.hive_case ADD PARTITION (d='upper') LOCATION '{upper}'")

    # a partition whose file is not Parquet: only pruning keeps a read from reaching it
    broken = folder / "broken"
    broken.mkdir()
    (broken / "part-0.parquet").write_bytes(b"not parquet at all")
    s.sql("CREATE TABLE lz.pruned (v INT) PARTITIONED BY (p STRING) STORED AS PARQUET")
    s.sql("INSERT INTO lz.pruned PARTITION (p='ok') VALUES (1), (2)")
    s.sql(f"ALTER TABLE lz.pruned ADD PARTITION (p='broken') LOCATION '{broken}'")

    s.sql("CREATE TABLE lz.empty (a INT, B STRING) USING parquet PARTITIONED BY (B)")

    # what lazyscan refuses
    s.sql("CREATE OR REPLACE VIEW lz.a_view AS SELECT * FROM lz.saved_orc")
    s.sql("CREATE TABLE lz.as_csv (a INT) USING csv")
    # a table of no files: Derby's own catalog over JDBC (Derby is on Spark's class path)
    s.sql("CREATE TABLE lz.over_jdbc USING jdbc OPTIONS (url 'jdbc:derby:memory:lazyscan;create=true', "
          "dbtable 'SYS.SYSTABLES')")
    s.sql("CREATE TABLE lz.hive_text (a INT) STORED AS TEXTFILE")
    s.sql("CREATE OR REPLACE TEMPORARY VIEW temp_v AS SELECT 1 AS a")
    return s


CASES = [
    # table, columns (None: all), filter
    ("lz.Saved", ["Id", "UserName", "Score", "Region"], "Score > 0 OR UserName = 'user3'"),
    ("lz.Saved", ["Id", "Score"], "Region = 'eu' AND Score IS NULL"),
    ("lz.Saved", None, "Region IS NULL AND Id < 10300"),
    ("lz.saved_orc", ["Id", "Score", "Yr"], "Yr = 2022 AND (Score = CAST('NaN' AS DOUBLE) OR Score IS NULL)"),
    ("lz.Events", None, "Yr >= 2022 AND Region <> 'us' AND Score <= 2.5"),
    ("lz.Events", ["Id", "Extra", "Region"], "Extra IS NULL AND Yr IS NULL"),
    ("lz.Events", ["id", "extra"], "extra = 'x1' OR username = 'user5'"),
    ("lz.hive_pq", None, "score IS NULL OR d = 'custom'"),
    ("lz.hive_pq", ["id", "d"], "d IN ('b', 'gone') AND id BETWEEN 50100 AND 50200"),
    ("lz.hive_orc", None, "score IS NULL OR score = CAST('NaN' AS DOUBLE) OR d = 'y'"),
    ("lz.typed_parts", None, "day = DATE'2024-02-29' OR tag IS NULL OR at IS NULL"),
    ("lz.typed_parts", ["v", "tag"], "at < TIMESTAMP'2000-01-01 00:00:00' OR tag = 'x=y %'"),
    ("lz.untracked", None, "Yr = 2022 OR Yr IS NULL"),
]


def _expected(spark: Any, table: str, columns: list[str] | None, where: str) -> Any:
    df = spark.table(table).where(where)
    return df.select(*columns) if columns else df


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(("table", "columns", "where"), CASES)
def test_read_table_matches_spark(spark: Any, route: str, table: str, columns: list[str] | None, where: str) -> None:
    expected = _expected(spark, table, columns, where)
    got = lazyscan.spark.read(spark, table, columns, where, force="lazyscan", route=route, **ONE_TASK)
    # the catalog's names and case (also for a name asked in another case, as for a path's
    # columns, see test_spark_names.py), in the order asked; the catalog's types, also where a
    # file holds INT for a BIGINT column
    catalog_names = {c.lower(): c for c in spark.table(table).columns}
    assert got.columns == [catalog_names[c.lower()] for c in expected.columns]
    assert [f.dataType for f in got.schema] == [f.dataType for f in expected.schema]
    rows = expected.collect()
    assert rows, f"{table} {where}: the filter keeps no row, the comparison proves little"
    assert_same_rows(got.collect(), rows, f"{table} {where} ({route})")


@pytest.mark.skipif(not HAS_PYTHON_DATA_SOURCE, reason="the Python data source needs Spark 4.1")
@pytest.mark.parametrize(("table", "columns", "where"), [CASES[0], CASES[4], CASES[7]])
def test_data_source_table_options_match_spark(spark: Any, table: str, columns: list[str] | None, where: str) -> None:
    reader = spark.read.format("lazyscan").options(**lazyscan.spark.table_options(spark, table), **ONE_TASK)
    got = reader.option("where", where).load()
    expected = spark.table(table).where(where)
    assert got.schema == expected.schema
    if columns:
        got, expected = got.select(*columns), expected.select(*columns)
    assert_same_rows(got.collect(), expected.collect(), f"{table} {where} (data source)")


def test_file_spelling_names_in_another_case(spark: Any) -> None:
    """A partition's file spelling ``ID`` where the table (and the first file) says ``id`` is
    read by the table's names, as Spark's readers match names ignoring case."""
    for where in ["d IS NOT NULL", "id >= 2", "score IS NULL OR score = CAST('NaN' AS DOUBLE)"]:
        got = lazyscan.spark.read(spark, "lz.hive_case", None, where, force="lazyscan", route="tasks", **ONE_TASK)
        expected = spark.table("lz.hive_case").where(where).collect()
        assert expected
        assert_same_rows(got.collect(), expected, f"hive_case {where}")


def test_chooser_on_a_table(spark: Any) -> None:
    """Without ``force`` the chooser samples the table's files (its choice may go either way on
    these small files): the rows are the table's."""
    for where in ["UserName = 'user3' AND Yr = 2022", "Score > 100"]:
        got = lazyscan.spark.read(spark, "lz.Events", ["Id", "Extra"], where)
        assert_same_rows(got.collect(), spark.table("lz.Events").where(where).select("Id", "Extra").collect(), where)


def test_spark_reader_side_reads_the_table(spark: Any) -> None:
    """``force="spark"`` is ``spark.table`` with the filter: the same rows, custom partition included."""
    where = "d = 'custom' OR id < 50010"
    got = lazyscan.spark.read(spark, "lz.hive_pq", ["id", "user_name"], where, force="spark")
    assert_same_rows(got.collect(), spark.table("lz.hive_pq").where(where).select("id", "user_name").collect())


def test_catalog_description(spark: Any) -> None:
    t = resolve_table(spark, "lz.hive_pq")
    assert (t.format, t.partition_columns) == ("parquet", ("d",))
    assert t.partitions is not None
    by_value = {p.values: p.location for p in t.partitions}
    assert set(by_value) == {("a",), ("b",), ("custom",), ("gone",)}
    assert by_value[("custom",)].endswith("custom/somewhere")
    assert resolve_table(spark, "lz.hive_orc").format == "orc"
    events = resolve_table(spark, "lz.Events")
    assert events.schema.fieldNames() == ["Id", "UserName", "Score", "Extra", "Region", "Yr"]
    assert events.partition_columns == ("Region", "Yr")
    nulls = [p for p in events.partitions or () if None in p.values]
    assert nulls, "the NULL partitions (__HIVE_DEFAULT_PARTITION__) are listed as NULL"


def test_partition_filter_prunes_before_listing(spark: Any) -> None:
    """Partitions the filter rules out are not listed: the partition holding a file that is not
    Parquet is never opened, and without the filter the read names that file."""
    t = resolve_table(spark, "lz.pruned", where=parse_predicate("p = 'ok' AND v > 0"))
    assert [p.values for p in t.partitions or ()] == [("ok",)]
    got = lazyscan.spark.read(spark, "lz.pruned", ["v", "p"], "p = 'ok'", force="lazyscan", route="tasks", **ONE_TASK)
    assert_same_rows(got.collect(), [(1, "ok"), (2, "ok")], "pruned")
    with pytest.raises(Exception, match="broken"):
        lazyscan.spark.read(spark, "lz.pruned", ["v", "p"], "v > 0", force="lazyscan", route="tasks", **ONE_TASK).collect()


@pytest.mark.parametrize("route", ROUTES)
def test_empty_table_and_every_partition_pruned(spark: Any, route: str) -> None:
    empty = lazyscan.spark.read(spark, "lz.empty", None, "a > 0", force="lazyscan", route=route)
    assert empty.columns == ["a", "B"] and empty.collect() == []
    none = lazyscan.spark.read(spark, "lz.Saved", ["Id", "Region"], "Region = 'nowhere'", force="lazyscan", route=route)
    assert none.columns == ["Id", "Region"] and none.collect() == []


def test_untracked_partitions_come_from_folders(spark: Any) -> None:
    t = resolve_table(spark, "lz.untracked")
    assert t.partition_columns == ("Yr",) and t.partitions is None


def test_sql_partition_listing_matches_the_external_catalog(spark: Any) -> None:
    """The SQL route (SHOW PARTITIONS, then DESCRIBE ... PARTITION for the partitions left),
    which Spark Connect sessions take, finds the same partitions and locations."""
    from lazyscan.spark import catalog

    for name in ["lz.hive_pq", "lz.typed_parts"]:
        table = resolve_table(spark, name)
        specs = catalog._show_partitions(spark, name, table.partition_columns)
        located = {s: catalog._partition_location(spark, name, table.partition_columns, s) for s in specs}
        assert located == {p.values: p.location for p in table.partitions or ()}, name
    events = resolve_table(spark, "lz.Events")
    null_specs = [s for s in catalog._show_partitions(spark, "lz.Events", events.partition_columns) if None in s]
    assert sorted(null_specs, key=str) == sorted((p.values for p in events.partitions or () if None in p.values), key=str)


@pytest.mark.parametrize(
    ("name", "error", "text"),
    [
        ("lz.no_such_table", SourceError, r"'lz\.no_such_table' is neither a table or view of the session catalog "
         r"\(current database default\) nor a file or folder"),
        ("no_such_thing", SourceError, "'no_such_thing' is neither a table or view"),
        ("lz.a_view", UnsupportedFeatureError, r"lz\.a_view is a view"),
        ("temp_v", UnsupportedFeatureError, "temp_v is a temporary view"),
        ("lz.as_csv", UnsupportedFeatureError, r"lz\.as_csv is a table of provider csv"),
        ("lz.over_jdbc", UnsupportedFeatureError, r"lz\.over_jdbc is a table of provider jdbc"),
        ("lz.hive_text", UnsupportedFeatureError, r"lz\.hive_text is a Hive table with SerDe .*LazySimpleSerDe"),
    ],
)
def test_what_is_not_a_file_table_is_refused_by_name(spark: Any, name: str, error: type, text: str) -> None:
    with pytest.raises(error, match=text) as info:
        lazyscan.spark.read(spark, name, None, "a = 1", force="lazyscan")
    assert "Parquet and ORC file tables" in str(info.value) or error is SourceError


def test_data_source_table_option_alone_says_how(spark: Any) -> None:
    if not HAS_PYTHON_DATA_SOURCE:
        pytest.skip("the Python data source needs Spark 4.1")
    from lazyscan.spark.options import SourceSettings

    with pytest.raises(OptionError, match="table_options"):
        SourceSettings.from_options({"table": "lz.Saved"})
    with pytest.raises(OptionError, match="a path or a table, not both"):
        SourceSettings.from_options({"path": "/x", **lazyscan.spark.table_options(spark, "lz.Saved")})
    with pytest.raises(Exception, match="table_options"):
        spark.read.format("lazyscan").option("table", "lz.Saved").load().collect()


def test_path_with_a_slash_is_never_a_table(spark: Any, tmp_path: Path) -> None:
    """A folder named like a table is read by path when written with a '/'."""
    folder = tmp_path / "lz.Saved"
    folder.mkdir()
    pq.write_table(pa.table({"q": [1, 2, 3]}), folder / "f.parquet")
    got = lazyscan.spark.read(spark, str(folder), ["q"], "q > 1", force="lazyscan", route="tasks", **ONE_TASK)
    assert sorted(r.q for r in got.collect()) == [2, 3]

