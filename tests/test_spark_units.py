"""Unit tests of lazyscan.spark that need no Spark session: filter conversion, task planning,
options, Spark type mapping, batch shaping, the profile accumulator, the warning about filters
left to Spark, and the cost model of ``lazyscan.spark.read``."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import math
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from lazyscan.errors import OptionError, UnsupportedFeatureError
from lazyscan.predicate import bind, evaluate_kleene
from lazyscan.scan.dataset import FileInfo
from lazyscan.scan.profile import Profile
from lazyscan.spark.choose import (
    CostModel,
    Workload,
    decide,
    lazyscan_fixed_seconds,
    lazyscan_seconds,
    spark_seconds,
)
from lazyscan.spark.filters import FilterColumn, convert_filter, convert_filters
from lazyscan.spark.options import SessionDefaults, SourceSettings, parse_size, push_mode
from lazyscan.spark.planning import SplitPolicy, plan_tasks, split_files
from lazyscan.spark.profiles import ProfileAccumulatorParam, task_entry
from lazyscan.spark.source import LazyScanReader, describe_filters, pushdown_enabled
from lazyscan.spark.types import (
    BatchShaper,
    OutputColumn,
    SchemaMismatchError,
    arrow_schema_for_spark,
    floor_to_micros,
    merge_spark_schemas,
    spark_type_of,
)

# ---- filters ----------------------------------------------------------------------------------

UTC = dt.timezone.utc
TABLE = pa.table(
    {
        "i": pa.array([1, 2, 3, None], pa.int32()),
        "f": pa.array([1.0, math.nan, -0.0, None], pa.float64()),
        "s": pa.array(["abc", "xbcx", "%_", None]),
        "b": pa.array([b"abc", b"x", b"", None]),
        "ts": pa.array(
            [dt.datetime(2020, 1, 1, tzinfo=UTC), dt.datetime(2021, 1, 1, tzinfo=UTC), None, None],
            pa.timestamp("us", "UTC"),
        ),
        "ns": pa.array([1_000_500, 2_000_000, 999, None], pa.timestamp("ns", "UTC")),
        "d": pa.array([decimal.Decimal("1.50"), decimal.Decimal("2.25"), None, None], pa.decimal128(9, 2)),
        "u64": pa.array([2**64 - 1, 5, None, 0], pa.uint64()),
        "flag": pa.array([True, False, None, True]),
    }
)
SPARK_TYPES = {
    "i": IntegerType(),
    "f": DoubleType(),
    "s": StringType(),
    "b": BinaryType(),
    "ts": TimestampType(),
    "ns": TimestampType(),
    "d": DecimalType(9, 2),
    "u64": DecimalType(20, 0),
    "flag": __import__("pyspark.sql.types", fromlist=["BooleanType"]).BooleanType(),
}


def resolve(attribute: tuple[str, ...]) -> FilterColumn | None:
    name = attribute[0]
    if len(attribute) != 1 or name not in SPARK_TYPES:
        return None
    return FilterColumn(name, SPARK_TYPES[name], TABLE.schema.field(name).type)


def results(f) -> list[bool | None]:
    expr = convert_filter(f, resolve)
    assert expr is not None, f"{f} was not converted"
    return evaluate_kleene(bind(expr, TABLE.schema), TABLE).to_pylist()


def ts_micros(us: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=us)


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        (EqualTo(("i",), 2), [False, True, False, None]),
        (Not(EqualTo(("i",), 2)), [True, False, True, None]),
        (GreaterThan(("i",), 1), [False, True, True, None]),
        (GreaterThanOrEqual(("i",), 2), [False, True, True, None]),
        (LessThan(("i",), 2), [True, False, False, None]),
        (LessThanOrEqual(("i",), 2), [True, True, False, None]),
        (EqualNullSafe(("i",), 2), [False, True, False, False]),
        (Not(EqualNullSafe(("i",), 2)), [True, False, True, True]),
        (EqualNullSafe(("i",), None), [False, False, False, True]),
        (Not(EqualNullSafe(("i",), None)), [True, True, True, False]),
        (In(("i",), [1, 3]), [True, False, True, None]),
        (Not(In(("i",), [1, 3])), [False, True, False, None]),
        (IsNull(("i",)), [False, False, False, True]),
        (IsNotNull(("i",)), [True, True, True, False]),
        (Not(IsNull(("i",))), [True, True, True, False]),
        # Spark: NaN = NaN, NaN above every number, -0.0 = 0.0
        (EqualTo(("f",), math.nan), [False, True, False, None]),
        (GreaterThan(("f",), 0.5), [True, True, False, None]),
        (LessThan(("f",), math.nan), [True, False, True, None]),
        (EqualTo(("f",), 0.0), [False, False, True, None]),
        (In(("f",), [math.nan]), [False, True, False, None]),
        (StringStartsWith(("s",), "ab"), [True, False, False, None]),
        (StringEndsWith(("s",), "cx"), [False, True, False, None]),
        (StringContains(("s",), "bc"), [True, True, False, None]),
        (StringContains(("s",), "%_"), [False, False, True, None]),
        (Not(StringContains(("s",), "bc")), [False, False, True, None]),
        (EqualTo(("b",), b"x"), [False, True, False, None]),
        (LessThan(("b",), b"abd"), [True, False, True, None]),
        (GreaterThan(("ts",), dt.datetime(2020, 6, 1, tzinfo=UTC)), [False, True, None, None]),
        (EqualTo(("d",), decimal.Decimal("2.25")), [False, True, None, None]),
        (EqualTo(("u64",), decimal.Decimal(2**64 - 1)), [True, False, None, False]),
        (GreaterThan(("u64",), decimal.Decimal(6)), [True, False, None, False]),
        (EqualTo(("flag",), True), [True, False, None, True]),
        (Not(EqualTo(("flag",), True)), [False, True, None, False]),
    ],
    ids=repr,
)
def test_filter_semantics(flt, expected):
    assert results(flt) == expected


def test_in_with_null_values():
    # x IN (1, NULL) is true or NULL; NOT (x IN (1, NULL)) is never true
    assert results(In(("i",), [1, None])) in ([True, False, False, None], [True, None, None, None])
    assert not any(v is True for v in results(Not(In(("i",), [1, None]))))
    assert not any(v is True for v in results(In(("i",), [None])))


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        # rows hold 1000.5 us, 2000 us, 0.999 us; Spark truncates INT96 to microseconds first
        (EqualTo(("ns",), ts_micros(1000)), [True, False, False, None]),
        (GreaterThan(("ns",), ts_micros(1000)), [False, True, False, None]),
        (GreaterThanOrEqual(("ns",), ts_micros(1000)), [True, True, False, None]),
        (LessThan(("ns",), ts_micros(1000)), [False, False, True, None]),
        (LessThanOrEqual(("ns",), ts_micros(1000)), [True, False, True, None]),
        (LessThanOrEqual(("ns",), ts_micros(0)), [False, False, True, None]),
        (Not(EqualNullSafe(("ns",), ts_micros(1000))), [False, True, True, True]),
        (In(("ns",), [ts_micros(0), ts_micros(2000)]), [False, True, True, None]),
    ],
    ids=repr,
)
def test_nanosecond_columns_compare_truncated(flt, expected):
    assert results(flt) == expected


@pytest.mark.parametrize(
    "flt",
    [
        EqualTo(("st", "x"), 1),  # nested field
        EqualTo(("missing",), 1),
        StringStartsWith(("b",), "a"),  # string filter on binary
        EqualTo(("i",), [1, 2]),  # array value
        EqualTo(("i",), None),
    ],
    ids=repr,
)
def test_unsupported_filters_stay_in_spark(flt):
    assert convert_filter(flt, resolve) is None


def test_convert_filters_returns_kept_by_reference():
    keep = StringStartsWith(("b",), "a")
    push = EqualTo(("i",), 1)
    pushed, kept = convert_filters([push, keep], resolve)
    assert len(pushed) == 1
    assert kept == [keep] and kept[0] is keep


# ---- planning ---------------------------------------------------------------------------------


def files(*sizes: int) -> list[FileInfo]:
    return [FileInfo(f"/d/f{i}.parquet", s, {}) for i, s in enumerate(sizes)]


def test_split_files_covers_every_byte_once():
    splits = split_files(files(10, 25, 0), 10)
    by_file: dict[str, list[tuple[int, int]]] = {}
    for s in splits:
        by_file.setdefault(s.path, []).append((s.start, s.length))
    assert by_file["/d/f0.parquet"] == [(0, 10)]
    assert by_file["/d/f1.parquet"] == [(0, 10), (10, 10), (20, 5)]
    assert by_file["/d/f2.parquet"] == [(0, 0)]


def test_plan_tasks_follows_spark_packing():
    mb = 1 << 20
    policy = SplitPolicy(max_partition_bytes=128 * mb, open_cost_in_bytes=4 * mb, min_partition_num=2)
    # total (10+4)*3 = 42 MB; per core 21 MB -> max split 21 MB
    tasks = plan_tasks(files(10 * mb, 10 * mb, 10 * mb), policy)
    assert policy.max_split_bytes(files(10 * mb, 10 * mb, 10 * mb)) == 21 * mb
    assert [len(t.splits) for t in tasks] == [1, 1, 1]
    many = plan_tasks(files(*([1000] * 100)), policy)
    assert [len(t.splits) for t in many] == [32, 32, 32, 4]  # 4 MB open cost per file, 128 MB tasks


def test_plan_tasks_without_max_partition_bytes_fills_every_core_evenly():
    mb = 1 << 20
    for size, cores, want in ((231 * mb, 2, 2), (2430 * mb, 2, 2), (5000 * mb, 2, 4), (2430 * mb, 8, 8), (40 * 1024 * mb, 4, 24)):
        policy = SplitPolicy(open_cost_in_bytes=4 * mb, min_partition_num=cores)
        tasks = plan_tasks(files(size), policy)
        assert len(tasks) == want, (size, cores)
        lengths = [sum(s.length for s in t.splits) for t in tasks]
        assert sum(lengths) == size and max(lengths) - min(lengths) <= 8 * mb
        assert max(lengths) <= 2048 * mb
    # many small files: the open cost counts (1000 x 5 MB = 2 waves of 2 tasks of at most 2 GiB)
    tasks = plan_tasks(files(*([mb] * 1000)), SplitPolicy(open_cost_in_bytes=4 * mb, min_partition_num=2))
    assert len(tasks) == 4 and sum(len(t.splits) for t in tasks) == 1000
    # an explicit maxPartitionBytes keeps Spark's sizing
    spark_like = SplitPolicy(max_partition_bytes=128 * mb, open_cost_in_bytes=4 * mb, min_partition_num=2)
    assert len(plan_tasks(files(2430 * mb), spark_like)) == 19


def test_plan_tasks_small_files_are_packed():
    policy = SplitPolicy(max_partition_bytes=10_000, open_cost_in_bytes=1000, min_partition_num=1)
    tasks = plan_tasks(files(*([1000] * 20)), policy)
    assert sum(len(t.splits) for t in tasks) == 20
    assert all(sum(s.length + 1000 for s in t.splits) <= 10_000 + 2000 for t in tasks)
    assert len(tasks) == 4


def test_plan_tasks_max_partition_num():
    policy = SplitPolicy(max_partition_bytes=1000, open_cost_in_bytes=10, min_partition_num=1, max_partition_num=3)
    tasks = plan_tasks(files(*([900] * 12)), policy)
    assert len(tasks) <= 3
    assert sum(len(t.splits) for t in tasks) == 12


def test_plan_tasks_is_pure_arithmetic():
    # thousands of files that do not exist: planning never opens them
    policy = SplitPolicy(min_partition_num=8)
    tasks = plan_tasks([FileInfo(f"/nope/{i}.parquet", 50_000_000, {}) for i in range(5000)], policy)
    assert sum(len(t.splits) for t in tasks) >= 5000


# ---- options ----------------------------------------------------------------------------------


def test_options_names_and_values():
    s = SourceSettings.from_options(
        {
            "path": "/data",
            "batchSize": "1024",
            "materialization_threshold": "5",
            "mergeSchema": "false",
            "maxPartitionBytes": "16m",
            "fs.region": "eu-west-1",
            "owner": "someone",  # catalog table property, ignored
        }
    )
    assert s.paths == ("/data",)
    assert s.scan_kwargs["batch_size"] == 1024
    assert s.scan_kwargs["materialization_threshold"] == 5
    assert s.scan_kwargs["threads"] == 1
    assert s.merge_schema is False
    assert s.split_policy.max_partition_bytes == 16 << 20
    assert s.filesystem.options == (("region", "eu-west-1"),)


def test_options_paths_json_and_defaults():
    s = SourceSettings.from_options({"paths": '["/a","/b"]'}, SessionDefaults(min_partition_num=8, time_zone="Europe/Paris"))
    assert s.paths == ("/a", "/b")
    assert s.split_policy.min_partition_num == 8
    assert s.time_zone == "Europe/Paris"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"path": "/a", "bogus": "1"}, "unknown option 'bogus'"),
        ({"path": "/a", "batch_size": "x"}, "batch_size"),
        ({"path": "/a", "maxPartitionBytes": "lots"}, "maxPartitionBytes"),
        ({"path": "/a", "pushFilters": "maybe"}, "pushFilters"),
        ({}, "needs a path"),
    ],
)
def test_bad_options(options, message):
    with pytest.raises(OptionError, match=message):
        SourceSettings.from_options(options)


def test_parse_size():
    assert parse_size("x", "134217728b") == 134217728
    assert parse_size("x", "4MB") == 4 << 20
    assert parse_size("x", "1g") == 1 << 30


def test_filesystem_paths():
    s = SourceSettings.from_options({"path": "file:/tmp/x"})
    assert s.filesystem.open("file:/tmp/x") == (None, "/tmp/x")
    assert s.filesystem.open("file:///tmp/x") == (None, "/tmp/x")


# ---- types ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("atype", "expected"),
    [
        (pa.uint8(), ShortType()),
        (pa.uint16(), IntegerType()),
        (pa.uint32(), LongType()),
        (pa.uint64(), DecimalType(20, 0)),
        (pa.timestamp("ms", "UTC"), TimestampType()),
        (pa.timestamp("us"), TimestampNTZType()),
        (pa.large_string(), StringType()),
        (pa.string_view(), StringType()),
        (pa.binary(4), BinaryType()),
        (pa.dictionary(pa.int32(), pa.string()), StringType()),
        (pa.list_(pa.uint32()), ArrayType(LongType(), True)),
        (pa.map_(pa.string(), pa.float64()), MapType(StringType(), DoubleType(), True)),
        (
            pa.struct([("a", pa.uint8())]),
            StructType([StructField("a", ShortType(), True)]),
        ),
    ],
    ids=str,
)
def test_spark_type_of(atype, expected):
    assert spark_type_of(atype, "c") == expected


def test_int96_is_timestamp_and_nanos_are_refused():
    assert spark_type_of(pa.timestamp("ns"), "c", int96=True) == TimestampType()
    with pytest.raises(UnsupportedFeatureError, match=r"NANOS.*column 'c'"):
        spark_type_of(pa.timestamp("ns", "UTC"), "c", path="/f.parquet")
    for t in (pa.float16(), pa.time64("us"), pa.decimal256(40, 2)):
        with pytest.raises(UnsupportedFeatureError):
            spark_type_of(t, "c")


def test_merge_spark_schemas():
    a = StructType([StructField("x", LongType()), StructField("s", StructType([StructField("p", LongType())]))])
    b = StructType([StructField("y", StringType()), StructField("s", StructType([StructField("q", LongType())]))])
    merged = merge_spark_schemas([("a", a), ("b", b)])
    assert merged.fieldNames() == ["x", "s", "y"]
    assert merged["s"].dataType.fieldNames() == ["p", "q"]
    with pytest.raises(SchemaMismatchError, match=r"'x'.*bigint.*'a'.*string.*'c'"):
        merge_spark_schemas([("a", a), ("c", StructType([StructField("x", StringType())]))])


def test_batch_shaper_casts_fills_and_floors():
    schema = StructType(
        [
            StructField("u", LongType()),
            StructField("big", DecimalType(20, 0)),
            StructField("t96", TimestampType()),
            StructField("gone", StringType()),
            StructField("k", IntegerType()),
        ]
    )
    shaper = BatchShaper(
        schema,
        [
            OutputColumn("u", "u"),
            OutputColumn("big", "big"),
            OutputColumn("t96", "t96"),
            OutputColumn("gone", None),
            OutputColumn("k", None, partition="k"),
        ],
    )
    batch = pa.record_batch(
        {
            "u": pa.array([4_000_000_000, None], pa.uint32()),
            "big": pa.array([2**64 - 1, 1], pa.uint64()),
            "t96": pa.array([-1, 1_999], pa.timestamp("ns")),
        }
    )
    out = shaper.shape(batch, {"k": 7}, "/f")
    assert out.schema.equals(arrow_schema_for_spark(schema))
    assert out.column(0).to_pylist() == [4_000_000_000, None]
    assert out.column(1).to_pylist() == [decimal.Decimal(2**64 - 1), decimal.Decimal(1)]
    assert out.column(2).cast(pa.int64()).to_pylist() == [-1, 1]  # floored, as Spark reads INT96
    assert out.column(3).null_count == 2
    assert out.column(4).to_pylist() == [7, 7]


def test_floor_to_micros_keeps_nulls():
    arr = floor_to_micros(pa.array([1500, None, -1500], pa.timestamp("ns")), "UTC")
    assert arr.cast(pa.int64()).to_pylist() == [1, None, -2]


# ---- profile accumulator ------------------------------------------------------------------------


def test_profile_accumulator_merges_by_scan():
    p = Profile()
    p.add("rows_total", 10)
    param = ProfileAccumulatorParam()
    acc = param.zero({})
    acc = param.addInPlace(acc, {"s1": task_entry("/a", p)})
    acc = param.addInPlace(acc, {"s1": task_entry("/a", p), "s2": task_entry("/b", p)})
    assert acc["s1"]["tasks"] == 2
    assert Profile.from_dict(acc["s1"]["profile"])["rows_total"] == 20
    assert acc["s2"]["tasks"] == 1


# ---- options: session default of pushFilters ------------------------------------------------------


def test_push_filters_session_default_and_option_override():
    on = SessionDefaults(push_filters="true")
    assert SourceSettings.from_options({"path": "/a"}, on).push_filters == "true"
    assert SourceSettings.from_options({"path": "/a", "pushFilters": "false"}, on).push_filters == "false"
    assert SourceSettings.from_options({"path": "/a", "push_filters": "auto"}, on).push_filters == "auto"
    assert SourceSettings.from_options({"path": "/a"}).push_filters == "auto"
    assert push_mode(True) == "true" and push_mode("AUTO") == "auto" and push_mode("off") == "false"


# ---- the unused-filter warning --------------------------------------------------------------------


def test_describe_filters_as_sql():
    filters = [
        IsNotNull(("s",)),
        EqualTo(("s",), "it's"),
        IsNotNull(("i",)),
        Not(EqualNullSafe(("i",), 3)),
        In(("d",), [decimal.Decimal("1.50"), None]),
        StringStartsWith(("s",), "50%"),
        GreaterThan(("ts",), dt.datetime(2020, 1, 1, tzinfo=UTC)),
        LessThan(("day",), dt.date(2021, 2, 3)),
        IsNull(("odd name",)),
    ]
    text = describe_filters(filters)
    assert text == (
        "s = 'it\\'s' AND i IS NOT NULL AND NOT (i <=> 3) AND d IN (1.50, NULL) AND s LIKE '50\\\\%%' "
        "AND ts > TIMESTAMP '2020-01-01 00:00:00+00:00' AND day < DATE '2021-02-03' AND `odd name` IS NULL"
    )
    assert describe_filters([]) == ""


@pytest.fixture
def small_file(tmp_path):
    path = tmp_path / "small.parquet"
    pq.write_table(pa.table({"a": pa.array(range(10), pa.int64()), "s": [f"v{i}" for i in range(10)]}), path)
    return path


def _reader(path, schema=None, **options):
    from lazyscan.spark.source import LazyScanDataSource

    source = LazyScanDataSource({"path": str(path), **options})
    return source.reader(schema or source.schema())


def _warnings(caplog):
    return [r for r in caplog.records if r.name == "lazyscan.spark" and r.levelname == "WARNING"]


def test_unused_filters_warn_once_per_data_source(small_file, caplog):
    caplog.set_level("INFO", logger="lazyscan.spark")
    reader = _reader(small_file)
    if pushdown_enabled("auto"):
        pytest.skip("this Spark keeps read plans per scan: pushed filters are used")
    filters = [IsNotNull(("a",)), EqualTo(("a",), 5)]
    assert reader.pushFilters(filters) == filters
    warned = _warnings(caplog)
    assert len(warned) == 1
    message = warned[0].getMessage()
    assert "a = 5" in message and "IS NOT NULL" not in message
    assert str(small_file) in message
    assert "option('where'" in message and "lazyscan.spark.read(" in message and "push_filters=True" in message
    # the same DataFrame planned again (Spark unpickles a copy of the source: same source_id)
    again = LazyScanReader(reader.settings, reader.listing, reader.schema, None, reader.source_id)
    again.pushFilters([EqualTo(("a",), 6)])
    assert len(_warnings(caplog)) == 1
    # another DataFrame warns once too
    _reader(small_file).pushFilters(filters)
    assert len(_warnings(caplog)) == 2


def test_no_warning_without_filters_or_when_chosen(small_file, caplog):
    caplog.set_level("INFO", logger="lazyscan.spark")
    assert _reader(small_file).pushFilters([]) == []
    assert _reader(small_file, pushFilters="false").pushFilters([EqualTo(("a",), 5)]) == [EqualTo(("a",), 5)]
    pushed = _reader(small_file, pushFilters="true")
    assert pushed.pushFilters([EqualTo(("a",), 5)]) == []
    assert pushed.where is not None
    assert _warnings(caplog) == []


def test_where_option_binds_columns_outside_the_user_schema(small_file):
    reader = _reader(small_file, StructType([StructField("A", LongType())]), where="s = 'v3'")
    assert reader.scan_columns == ["a"]
    assert [f.name for f in reader.listing.scan_schema] == ["a", "s"]
    assert reader.listing.spark_schema.fieldNames() == ["a"]
    (batch,) = [b for b in reader.read(reader.partitions()[0])]
    assert batch.to_pydict() == {"A": [3]}
    with pytest.raises(OptionError, match="nope"):
        _reader(small_file, StructType([StructField("a", LongType())]), where="nope = 1")


# ---- lazyscan.spark.read: the cost model ---------------------------------------------------------

#: round numbers, not the calibrated defaults: the tests check the decision logic
COSTS = CostModel(
    lazyscan_read_s=0.1,
    lazyscan_task_s=0.1,
    lazyscan_output_bytes_per_s=100e6,
    spark_read_s=0.05,
    spark_task_s=0.01,
    spark_footer_bytes_per_s=100e6,
    spark_value_s=10e-9,
    spark_bytes_per_s=1e9,
)


def workload(**changes) -> Workload:
    base = Workload(
        cores=2,
        row_groups=50,
        row_groups_left=50,
        rows_left=5_000_000,
        values_left=100_000_000,
        bytes_left=400_000_000,
        spark_tasks=2,
        footer_bytes=0,
        lazyscan_tasks=2,
        sampled_row_groups=4,
        sample_seconds=0.02,
        selectivity=0.0001,
        output_bytes_per_row=100,
    )
    return dataclasses.replace(base, **changes)


def test_cost_model_arithmetic():
    w = workload(footer_bytes=1_000_000, spark_tasks=4)
    # 0.05 + 2 waves x (0.01 + 0.01) + (100M values x 10 ns + 400 MB / 1 GB/s) / 2 cores
    assert spark_seconds(w, COSTS) == pytest.approx(0.05 + 0.04 + (1.0 + 0.4) / 2)
    assert lazyscan_fixed_seconds(w, COSTS) == pytest.approx(0.2)
    # tasks with nothing to scan stream nothing: the read's own cost only
    assert lazyscan_fixed_seconds(workload(row_groups_left=0), COSTS) == pytest.approx(0.1)
    # fixed + 50 row groups x 5 ms / 2 tasks + 500 rows x 100 bytes / (100 MB/s x 2)
    assert lazyscan_seconds(w, COSTS) == pytest.approx(0.2 + 0.125 + 0.00025)
    # one row group left: one core works, on both sides
    one = workload(row_groups_left=1, values_left=400_000, bytes_left=4_000_000)
    assert lazyscan_seconds(one, COSTS) == pytest.approx(0.2 + 0.005 + 0.0001 * 5_000_000 * 100 / 100e6)
    assert spark_seconds(one, COSTS) == pytest.approx(0.05 + 0.01 + 0.004 + 0.004)


def test_selective_scan_of_a_large_input_picks_lazyscan():
    use, reason, t_lazy, t_spark = decide(workload(), COSTS)
    assert use and t_lazy < t_spark
    assert reason.startswith("lazyscan ~0.33 s") and "vs Spark's reader ~0.76 s" in reason
    assert "50 row groups x 5.0 ms sampled on 4" in reason and "0.010% of rows survive" in reason


def test_fixed_cost_decides_small_inputs():
    # a key range that statistics narrow to one row group: the scan is cheap, Spark's reader too
    small = workload(row_groups_left=1, rows_left=100_000, values_left=1_600_000, bytes_left=7_000_000)
    use, reason, t_lazy, t_spark = decide(small, COSTS)
    assert not use and t_spark < lazyscan_fixed_seconds(small, COSTS) < t_lazy
    assert reason.startswith("Spark's reader ~")
    # the same range in a file of 500 row groups: Spark's 20 tasks each parse a 3 MB footer
    big = dataclasses.replace(small, row_groups=500, spark_tasks=20, footer_bytes=3_000_000)
    use, _, t_lazy, t_spark = decide(big, COSTS)
    assert use and t_lazy < t_spark


def test_slow_sample_or_many_survivors_pick_spark():
    assert not decide(workload(sample_seconds=0.5), COSTS)[0]
    use, reason, _, _ = decide(workload(selectivity=0.3), COSTS, max_selectivity=0.2)
    assert not use and "above 20% of rows survive" in reason
    # the Arrow output of many surviving rows counts
    wide = workload(selectivity=0.15, output_bytes_per_row=400)
    assert lazyscan_seconds(wide, COSTS) > spark_seconds(wide, COSTS)
    assert not decide(wide, COSTS)[0]


def test_overhead_is_a_margin_for_lazyscan():
    w = workload()
    _, _, t_lazy, t_spark = decide(w, COSTS)
    assert decide(w, COSTS, overhead=0.99 * t_spark / t_lazy)[0]
    assert not decide(w, COSTS, overhead=1.01 * t_spark / t_lazy)[0]


def test_key_filter_options_are_weighed_by_the_decision(tmp_path):
    """The rule passes a join's keys as ``keyFilter.<column>`` options: the cost model samples
    the scan with them (not as a read with no filter), alone or with ``where``."""
    import numpy as np

    from lazyscan.predicate.keys import key_filter
    from lazyscan.spark.decision import decide_options

    n = 200_000
    path = tmp_path / "fact.parquet"
    pq.write_table(
        pa.table({"k": pa.array(np.arange(n, dtype=np.int64) % 50_000), "v": pa.array(np.arange(n, dtype=np.int64))}),
        path, row_group_size=20_000,
    )
    slow_spark = CostModel(spark_bytes_per_s=4.9e6, spark_value_s=1e-6)
    keys = key_filter(pa.array([7, 11, 49_999], pa.int64())).to_text()
    base = {"path": str(path), "columns": '["v"]', "cores": "2"}
    alone = decide_options({**base, "keyFilter.K": keys}, SessionDefaults(), slow_spark)
    assert alone.use_lazyscan, alone.reason
    assert "no filter" not in alone.reason
    assert alone.selectivity is not None and alone.selectivity < 0.001  # 3 keys, 4 rows each; the sample sees some row groups
    # with a filter keeping most rows, the keys still make the scan selective
    wide = decide_options({**base, "where": "v >= 0", "keyFilter.k": keys}, SessionDefaults(), slow_spark)
    assert wide.use_lazyscan and wide.selectivity is not None and wide.selectivity < 0.001
    assert not decide_options({**base, "where": "v >= 0"}, SessionDefaults(), slow_spark).use_lazyscan
    with pytest.raises(OptionError, match=r"keyFilter\.nope"):
        decide_options({**base, "keyFilter.nope": keys}, SessionDefaults(), slow_spark)
    with pytest.raises(OptionError, match=r"keyFilter\.k"):
        decide_options({**base, "keyFilter.k": "damaged"}, SessionDefaults(), slow_spark)


def test_a_scan_of_a_larger_query_must_save_more(tmp_path: pathlib.Path) -> None:
    """``queryScans`` (the relations the rule's query reads): above one, lazyscan must be
    expected to save ``query_min_saving_s``, else Spark's reader is kept and the reason says so."""
    from lazyscan.spark.choose import CostModel
    from lazyscan.spark.decision import decide_options
    from lazyscan.spark.options import SessionDefaults

    path = tmp_path / "t.parquet"
    n = 200_000
    pq.write_table(pa.table({"k": pa.array(range(n), pa.int64()), "s": [f"v{i % 977}" for i in range(n)]}), path,
                   row_group_size=20_000)
    base = {"path": str(path), "where": "k = 123457", "columns": '["k", "s"]', "cores": "2"}
    slow_spark = CostModel(spark_bytes_per_s=1e6, spark_value_s=1e-6)
    alone = decide_options(base, SessionDefaults(), slow_spark)
    assert alone.use_lazyscan and alone.spark_seconds is not None and alone.lazyscan_seconds is not None
    saving = alone.spark_seconds - alone.lazyscan_seconds
    generous = dataclasses.replace(slow_spark, query_min_saving_s=saving / 2)
    assert decide_options({**base, "queryScans": "3"}, SessionDefaults(), generous).use_lazyscan  # saves enough
    demanding = dataclasses.replace(slow_spark, query_min_saving_s=saving * 10)
    assert decide_options({**base, "queryScans": "1"}, SessionDefaults(), demanding).use_lazyscan
    kept = decide_options({**base, "QUERYSCANS": "2"}, SessionDefaults(), demanding)
    assert not kept.use_lazyscan
    assert "a scan of a query reading 2 relations must save" in kept.reason and "lazyscan ~" in kept.reason
    with pytest.raises(OptionError, match="queryScans"):
        decide_options({**base, "queryScans": "two"}, SessionDefaults(), slow_spark)
