"""Timestamps of every year, and every conversion of dates, timestamps and decimals that could
overflow: each value is held or refused with an error naming its place, never wrapped.

- ORC timestamps (TIMESTAMP and TIMESTAMP WITH LOCAL TIME ZONE) of the years 1 to 9999, written
  by pyorc (the ORC C++ writer) in several writer time zones, read as microseconds against
  pyorc's own reading (pyarrow refuses years outside 1677-2262: "out of range for nanosecond
  resolution"); in nanoseconds (``timestamp_unit="ns"``) a value out of range is an error
  naming file, stripe, column and row; filters and statistics pruning on such files;
- cuDF's ``TestOrcFile.largeTimestamps.orc`` (written by Spark 3.1.1, years up to 9970);
- Parquet INT96 of every year, flat and nested, as microseconds; Julian day 0 and negative days;
  a day beyond what 64-bit microseconds hold;
- ORC dates, integers and decimals that do not fit their Arrow type, and the kernels' guards;
- the deliberate differences from pyarrow (each test says why, with its source).
"""

from __future__ import annotations

import datetime as dt
import decimal
import struct
import zoneinfo
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as porc
import pyarrow.parquet as pq
import pyorc
import pytest

import lazyscan
from lazyscan.errors import CorruptFileError, UnsupportedFeatureError
from lazyscan.orc import OrcFile
from lazyscan.orc import kernels as K
from lazyscan.parquet import ParquetFile
from lazyscan.parquet import thrift as T
from lazyscan.parquet.convert import _int96_beyond_int64, _int96_to_units
from tests.support import fuzz
from tests.support.data import foreign_file
from tests.support.footer import Node, ParquetPatch
from tests.support.orc import CONVERTERS, SECOND

UTC = dt.timezone.utc
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
#: the instants 64-bit nanoseconds hold
NS_MIN, NS_MAX = -(2**63), 2**63 - 1


def ns(year: int, month: int = 1, day: int = 1, hour: int = 0, minute: int = 0, second: int = 0, nanos: int = 0) -> int:
    """Nanoseconds since 1970-01-01 UTC (Python ints: any year)."""
    delta = dt.datetime(year, month, day, hour, minute, second, tzinfo=UTC) - EPOCH
    return (delta.days * 86_400 + delta.seconds) * SECOND + nanos


#: instants of the years 1 to 9999 with fractions finer than a microsecond, at the edges of the
#: nanosecond range and before 1970
EDGES = [
    ns(1, 6, 15, 12, 0, 0, 123_456_789),
    ns(1234, 5, 6, 7, 8, 9, 1),
    ns(1500, 2, 28, 23, 59, 59, 999_999_500),
    NS_MIN - 1,  # 1677-09-21 00:12:43.145224191
    NS_MIN,
    ns(1900, 1, 1, 0, 0, 0, 1_000),
    ns(1969, 12, 31, 23, 59, 58, 500_000_000),
    -1,  # the second before 1970: reads a second later (tests/test_orc_pyorc.py's docstring)
    0,
    ns(2021, 3, 14, 7, 30),
    NS_MAX,  # 2262-04-11 23:47:16.854775807
    NS_MAX + 1,
    ns(2263, 1, 1),
    ns(9999, 6, 15, 23, 59, 59, 999_999_999),
]
ZONES = ["UTC", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe", "Pacific/Apia", "Europe/Amsterdam"]


class RawConverter(pyorc.converters.ORCConverter):
    """Values as stored (dates as day counts, whatever their size)."""

    @staticmethod
    def from_orc(value: Any, *rest: Any) -> Any:
        return value

    @staticmethod
    def to_orc(obj: Any, *rest: Any) -> Any:
        return obj



def write_orc(path: Path, schema: str, rows: list[tuple], *, tz: str = "UTC", stride: int = 1000,
              converters: dict[pyorc.TypeKind, type[pyorc.converters.ORCConverter]] | None = None, compression: Any = pyorc.CompressionKind.ZLIB) -> Path:
    with path.open("wb") as out, pyorc.Writer(
        out, schema, batch_size=512, stripe_size=16 * 1024, row_index_stride=stride, compression=compression,
        compression_block_size=4096, memory_block_size=1024, timezone=zoneinfo.ZoneInfo(tz),
        converters=converters if converters is not None else CONVERTERS,
    ) as writer:
        writer.writerows(rows)
    return path


def read_pyorc(path: Path, tz: str = "UTC") -> list[tuple]:
    """pyorc's reading: timestamps as UTC instants in nanoseconds."""
    with path.open("rb") as fh:
        return [tuple(r) for r in pyorc.Reader(fh, timezone=zoneinfo.ZoneInfo(tz), converters=CONVERTERS)]


def wall_clock(instant: int | None, tz: str) -> int | None:
    """The wall clock (as nanoseconds of a UTC clock) of an instant in zone ``tz``."""
    if instant is None:
        return None
    offset = dt.datetime.fromtimestamp(instant // SECOND, zoneinfo.ZoneInfo(tz)).utcoffset()
    assert offset is not None
    return instant + int(offset.total_seconds()) * SECOND


def micros(values: list[int | None]) -> list[int | None]:
    """Nanoseconds floored to microseconds, as lazyscan (and Spark) read ORC timestamps."""
    return [None if v is None else v // 1000 for v in values]


def as_ints(arr: pa.Array | pa.ChunkedArray) -> list[int | None]:
    return arr.cast(pa.int64()).to_pylist()  # type: ignore[no-any-return]


def read_whole(f: OrcFile, name: str) -> pa.Array:
    return pa.concat_arrays([f.read_column(s, name) for s in range(f.num_stripes)])


def _instants(rng: np.random.Generator, n: int) -> list[int | None]:
    """Random instants of the years 1 to 9999 (a day short of each end: the wall clock of every
    zone stays within them), the edges among them, some NULLs."""
    lo, hi = ns(1, 1, 2), ns(9999, 12, 30)
    values: list[int | None] = [int(v) for v in rng.integers(lo // SECOND, hi // SECOND, n)]
    fractions = rng.integers(0, SECOND, n)
    values = [v * SECOND + int(f) for v, f in zip(values, fractions)]  # type: ignore[operator]
    at = rng.choice(n, len(EDGES) * 3, replace=False)
    for i, j in enumerate(at):
        values[j] = EDGES[i % len(EDGES)]
    for j in rng.choice(n, n // 20, replace=False):
        values[j] = None
    return values


# ---- ORC: timestamps of any year ---------------------------------------------------------------


@pytest.mark.parametrize("tz", ZONES)
def test_orc_timestamps_of_every_year_read_as_pyorc_does(tmp_path: Path, tz: str) -> None:
    """Microseconds (the default) hold every year: TIMESTAMP reads as the wall clock of the
    writer's zone, TIMESTAMP WITH LOCAL TIME ZONE as the UTC instant, both floored to
    microseconds, equal to pyorc's reading; whole stripes and row selections."""
    rng = np.random.default_rng(len(tz))
    n = 4_000
    instants = _instants(rng, n)
    rows = [(i, v, instants[(i * 7) % n]) for i, v in enumerate(instants)]
    path = write_orc(tmp_path / "t.orc", "struct<id:bigint,ts:timestamp,tsi:timestamp with local time zone>", rows, tz=tz)
    back = read_pyorc(path, tz)
    want = {
        "ts": micros([wall_clock(r[1], tz) for r in back]),
        "tsi": micros([r[2] for r in back]),
    }
    f = OrcFile(path)
    assert f.num_stripes > 1 and f.stripe_footer(0).writer_timezone == tz
    assert f.column("ts").arrow_type == pa.timestamp("us") and f.column("tsi").arrow_type == pa.timestamp("us", tz="UTC")
    for name in ("ts", "tsi"):
        assert as_ints(read_whole(f, name)) == want[name], name
        first = 0
        for s in range(f.num_stripes):
            count = f.stripe(s).number_of_rows
            picked = np.sort(rng.choice(count, 25, replace=False))
            got = as_ints(f.read_column(s, name, picked))
            assert got == [want[name][first + int(i)] for i in picked], (name, s)
            first += count
    # the scan gives the same, in the same types
    table = lazyscan.scan(path).to_table()
    assert table.schema.field("ts").type == pa.timestamp("us")
    assert as_ints(table.column("ts")) == want["ts"] and as_ints(table.column("tsi")) == want["tsi"]


@pytest.mark.parametrize("tz", ["UTC", "America/New_York"])
def test_orc_nanoseconds_hold_their_range_and_name_the_row_beyond_it(tmp_path: Path, tz: str) -> None:
    """``timestamp_unit="ns"`` reads pyarrow's unit: values of 1677-09-21 to 2262-04-11 exactly,
    a value beyond them an error naming file, stripe, column and row, whether the stripe is
    read whole or for a selection holding it; selections without it read."""
    n = 3_000
    inside = [ns(1700, 1, 1) + i * 86_400 * SECOND * 60 + 123_456_789 for i in range(n)]  # to 2193
    bad_row = 1_234
    values: list[int | None] = list(inside)
    values[bad_row] = ns(1234, 5, 6, 7, 8, 9)
    values[7] = None
    path = write_orc(tmp_path / "t.orc", "struct<ts:timestamp>", [(v,) for v in values], tz=tz, stride=500)
    f = OrcFile(path, timestamp_unit="ns")
    assert f.num_stripes == 1 and f.column("ts").arrow_type == pa.timestamp("ns")
    for rows in (None, np.array([3, bad_row, 2_000])):
        with pytest.raises(UnsupportedFeatureError) as e:
            f.read_column(0, "ts", rows)
        text = str(e.value)
        assert f"row {bad_row} of the stripe" in text and "1234-05-06" in text and "timestamp[ns]" in text
        assert "stripe 0" in text and "column 'ts'" in text and str(path) in text
    back = read_pyorc(path, tz)
    want = [wall_clock(r[0], tz) for r in back]
    keep = np.array([0, 7, 10, 2_500, n - 1])
    assert as_ints(f.read_column(0, "ts", keep)) == [want[i] for i in keep]
    # in microseconds the whole stripe reads
    assert as_ints(OrcFile(path).read_column(0, "ts")) == micros(want)


def test_orc_nanosecond_edges_are_exact(tmp_path: Path) -> None:
    """The first and last instants 64-bit nanoseconds hold read exactly; one nanosecond beyond
    either end is refused."""
    for value, fits in ((NS_MIN, True), (NS_MAX, True), (NS_MIN - 1, False), (NS_MAX + 1, False)):
        path = write_orc(tmp_path / "edge.orc", "struct<tsi:timestamp with local time zone>", [(0,), (value,)])
        f = OrcFile(path, timestamp_unit="ns")
        if fits:
            assert as_ints(f.read_column(0, "tsi")) == [0, value]
        else:
            with pytest.raises(UnsupportedFeatureError, match="row 1 of the stripe"):
                f.read_column(0, "tsi")
        assert as_ints(OrcFile(path).read_column(0, "tsi")) == [0, value // 1000]


def test_large_timestamps_example_reads_as_pyorc(tmp_path: Path) -> None:
    """cuDF's TestOrcFile.largeTimestamps.orc (Spark 3.1.1 wrote it; years up to 9970): read as
    pyorc reads it, where it used to come back wrapped (year 9910 as 1726); pyarrow refuses it."""
    path = foreign_file("TestOrcFile.largeTimestamps.orc")
    with pytest.raises(pa.ArrowInvalid, match="out of range"):
        porc.read_table(path)
    back = [r[0] for r in read_pyorc(path)]
    table = lazyscan.scan(path).to_table()
    assert table.schema.field("_c0").type == pa.timestamp("us")
    assert as_ints(table.column("_c0")) == micros(back)
    assert sum(v is not None and v > NS_MAX for v in back) > 100
    with pytest.raises(UnsupportedFeatureError, match=r"row 0 of the stripe: timestamp 9910-09-16"):
        OrcFile(path, timestamp_unit="ns").read_column(0, "_c0")
    # filters, with and without the statistics
    for where, keep in [
        ("_c0 < timestamp '1500-01-01 00:00:00'", lambda v: v < ns(1500)),
        ("_c0 >= timestamp '5000-06-01 12:00:00'", lambda v: v >= ns(5000, 6, 1, 12)),
        ("_c0 = timestamp '9970-11-07 16:22:54.558'", lambda v: v // 1000 == ns(9970, 11, 7, 16, 22, 54, 558_000_000) // 1000),
        ("_c0 BETWEEN timestamp '2262-04-11 00:00:00' AND timestamp '3000-01-01 00:00:00'",
         lambda v: ns(2262, 4, 11) <= v // 1000 * 1000 <= ns(3000)),
    ]:
        want = sorted(v // 1000 for v in back if v is not None and keep(v))
        for prune in (True, False):
            got = lazyscan.scan(path, where=where, prune_statistics=prune).to_table()
            assert sorted(as_ints(got.column("_c0"))) == want, (where, prune)  # type: ignore[type-var]


def test_scan_timestamp_unit_option(tmp_path: Path) -> None:
    """``lazyscan.scan(..., timestamp_unit="ns")`` reads ORC timestamps as pyarrow does (the
    schema of a folder included), names the row a value does not fit, and leaves Parquet alone."""
    (tmp_path / "d").mkdir()
    inside = write_orc(tmp_path / "d" / "inside.orc", "struct<id:bigint,ts:timestamp>",
                       [(i, ns(2000, 1, 1, 0, 0, i, 123_456_789)) for i in range(5)])
    pq.write_table(pa.table({"ts": pa.array([1, 2], pa.timestamp("ns"))}), tmp_path / "p.parquet")
    ns_table = lazyscan.scan(inside, timestamp_unit="ns").to_table()
    assert ns_table.equals(porc.read_table(inside))
    assert lazyscan.scan(inside).to_table().schema.field("ts").type == pa.timestamp("us")
    folder = lazyscan.scan(tmp_path / "d", where="id >= 3", timestamp_unit="ns").to_table()
    assert folder.schema.field("ts").type == pa.timestamp("ns") and folder.num_rows == 2
    assert lazyscan.scan(tmp_path / "p.parquet").to_table().schema.field("ts").type == pa.timestamp("ns")
    big = foreign_file("TestOrcFile.largeTimestamps.orc")
    with pytest.raises(UnsupportedFeatureError, match=r"row 0 of the stripe.*column '_c0'"):
        lazyscan.scan(big, timestamp_unit="ns").to_table()
    with pytest.raises(lazyscan.OptionError, match="timestamp_unit"):
        lazyscan.scan(inside, timestamp_unit="ms")


def test_filters_and_statistics_on_timestamps_of_every_year(tmp_path: Path) -> None:
    """Sorted timestamps of the years 1 to 9999 over several stripes and row groups: the
    statistics prune (in microseconds now) and never remove a matching row; DuckDB over pyorc's
    reading is the reference."""
    rng = np.random.default_rng(5)
    n = 12_000
    values = sorted(v for v in _instants(rng, n) if v is not None)
    rows = [(i, v, v) for i, v in enumerate(values)]
    path = write_orc(tmp_path / "sorted.orc", "struct<id:bigint,ts:timestamp,tsi:timestamp with local time zone>", rows)
    back = read_pyorc(path)
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    reference = pa.table({
        "id": pa.array([r[0] for r in back], pa.int64()),
        "ts": pa.array(micros([r[1] for r in back]), pa.int64()).cast(pa.timestamp("us")),
        "tsi": pa.array(micros([r[2] for r in back]), pa.int64()).cast(pa.timestamp("us", tz="UTC")),
    })
    con.register("t", reference)
    f = OrcFile(path)
    assert f.num_stripes > 3
    pruned = 0
    for where in [
        "ts < TIMESTAMP '1500-01-01 00:00:00'",
        "ts >= TIMESTAMP '9000-01-01 00:00:00'",
        "ts BETWEEN TIMESTAMP '1234-05-06 07:08:09' AND TIMESTAMP '1677-09-21 00:12:44'",
        "ts > TIMESTAMP '2262-04-11 23:47:16.854775' AND ts < TIMESTAMP '2263-01-01 00:00:00.000001'",
        "ts = TIMESTAMP '1234-05-06 07:08:09'",
        "tsi < TIMESTAMP '0100-01-01 00:00:00'",
        "tsi >= TIMESTAMP '1969-12-31 23:59:58' AND tsi <= TIMESTAMP '1970-01-01 00:00:01'",
        "tsi > TIMESTAMP '9999-06-15 23:59:59.999998'",
    ]:
        want = [r[0] for r in con.execute(f"SELECT id FROM t WHERE {where} ORDER BY id").fetchall()]
        s = lazyscan.scan(path, columns=["id"], where=where)
        assert sorted(s.to_table().column("id").to_pylist()) == want and want, where
        pruned += s.profile["row_groups_pruned_stats"]
        off = lazyscan.scan(path, columns=["id"], where=where, prune_statistics=False)
        assert sorted(off.to_table().column("id").to_pylist()) == want, where
    assert pruned > 5


def test_orc_nested_timestamps_read_as_flat_ones(tmp_path: Path) -> None:
    """Timestamps inside structs and lists (read through pyarrow's ORC reader, in nanoseconds)
    come in the column's unit, floored like the flat ones; a nested value beyond nanoseconds is
    refused with the reason."""
    values = [ns(1969, 12, 31, 23, 59, 58, 123_456_789), ns(2000, 1, 1, 0, 0, 0, 999), None, ns(1800, 1, 1, 0, 0, 0, 1)]
    rows = [((v,), [v, 0]) for v in values]
    path = write_orc(tmp_path / "nested.orc", "struct<s:struct<a:timestamp>,l:array<timestamp>>", rows)
    back = read_pyorc(path)
    f = OrcFile(path)
    assert f.column("s").arrow_type == pa.struct([("a", pa.timestamp("us"))])
    assert f.column("l").arrow_type == pa.list_(pa.timestamp("us"))
    s = f.read_column(0, "s")
    assert as_ints(s.field("a")) == micros([r[0][0] for r in back])
    lists = f.read_column(0, "l")
    assert as_ints(lists.flatten()) == micros([x for r in back for x in r[1]])
    assert as_ints(OrcFile(path, timestamp_unit="ns").read_column(0, "s").field("a")) == [r[0][0] for r in back]
    far = write_orc(tmp_path / "far.orc", "struct<s:struct<a:timestamp>>", [((ns(1234),),)])
    with pytest.raises(UnsupportedFeatureError, match="nested column holds a timestamp outside 1677-09-21 to 2262-04-11"):
        OrcFile(far).read_column(0, "s")


# ---- ORC: class 6, where lazyscan follows the format and Spark ---------------------------------


@pytest.mark.parametrize("tz", ["America/Los_Angeles", "Europe/Paris", "Asia/Tokyo"])
def test_orc_timestamps_around_1970_in_a_writer_zone(tmp_path: Path, tz: str) -> None:
    """Around 1970-01-01 in a writer zone other than UTC, pyarrow's ORC reader applies the
    one-second correction of negative seconds (ORC's readers take a second off a negative
    second with a fraction above 999,999 ns, the writers having stored it one higher) to the
    wall clock, where ORC's Java reader (TreeReaderFactory.TimestampTreeReader, which Spark
    reads through) and pyorc apply it to the instant before moving to the writer's zone; so
    wherever the wall clock and the instant fall on different sides of 1970, pyarrow is one
    second off. lazyscan follows the Java reader: the wall clock of pyorc's instant."""
    instants = [k * SECOND // 4 + f for k in range(-40 * 3600 * 4, 40 * 3600 * 4, 3613) for f in (0, 1_000_001, 999_999_999 // 4)]
    path = write_orc(tmp_path / "t.orc", "struct<ts:timestamp>", [(v,) for v in instants], tz=tz)
    want = micros([wall_clock(r[0], tz) for r in read_pyorc(path, tz)])
    got = as_ints(read_whole(OrcFile(path), "ts"))
    assert got == want
    arrow = micros(as_ints(porc.read_table(path).column("ts")))
    differ = [i for i, (a, b) in enumerate(zip(arrow, want)) if a != b]
    # pyarrow's difference is the one second, only where wall clock and instant straddle 1970
    assert differ, "pyarrow's reading is expected to differ near 1970 in this zone"
    for i in differ:
        assert abs(arrow[i] - want[i]) == 1_000_000  # type: ignore[operator]
        assert (instants[i] < 0) != (want[i] < 0)  # type: ignore[operator]


# ---- ORC: dates, integers and decimals that do not fit --------------------------------------------


def test_orc_date_beyond_date32_is_refused_not_wrapped(tmp_path: Path) -> None:
    """ORC stores dates as 64-bit day counts, Arrow's date32 (and Spark's DateType) holds 32
    bits: a day beyond them is an error naming the row (Spark's ORC reader casts it to int and
    wraps)."""
    days = [0, -719_162, 2**31 - 1, -(2**31), 2**31 + 5, 17]
    path = write_orc(tmp_path / "d.orc", "struct<d:date>", [(d,) for d in days],
                     converters={pyorc.TypeKind.DATE: RawConverter})
    f = OrcFile(path)
    with pytest.raises(UnsupportedFeatureError, match=r"row 4 of the stripe: date \(days since 1970-01-01\) 2147483653 is outside what date32 holds"):
        f.read_column(0, "d")
    # the edges of date32 themselves read
    edges = write_orc(tmp_path / "e.orc", "struct<d:date>", [(d,) for d in days[:4]], converters={pyorc.TypeKind.DATE: RawConverter})
    assert OrcFile(edges).read_column(0, "d").cast(pa.int32()).to_pylist() == days[:4]


@pytest.mark.parametrize(("orc_type", "big"), [("smallint", 70_000), ("int", 2**40), ("int", -(2**31) - 1)])
def test_orc_integers_beyond_their_width_are_refused_not_wrapped(tmp_path: Path, orc_type: str, big: int) -> None:
    """The file's statistics show it at open (naming the column); without them, the value's
    row is named where it is read."""
    path = write_orc(tmp_path / "i.orc", f"struct<v:{orc_type}>", [(1,), (None,), (big,), (2,)])
    with pytest.raises(CorruptFileError, match=rf"of column 1 cannot hold its statistics' minimum {min(big, 1)} and maximum {max(big, 2)}.*'v'"):
        OrcFile(path)
    lay = fuzz.orc_layout(path.read_bytes())
    column_stats = [f for f in lay.footer if f.number == 7][1]
    column_stats.value = [f for f in column_stats.value if f.number != 2]  # no intStatistics
    without = tmp_path / "without-statistics.orc"
    without.write_bytes(fuzz._orc_tail(lay, footer=lay.footer))
    with pytest.raises(CorruptFileError, match=rf"row 2 of the stripe: .* value {big} is outside what int\d+ holds"):
        OrcFile(without).read_column(0, "v")


def _with_precision(path: Path, old: tuple[int, int], new: tuple[int, int]) -> Path:
    """The uncompressed ORC file with its decimal type's (precision, scale) changed in the footer
    (protobuf fields 5 and 6 of the Type message, each one byte here)."""
    data = bytearray(path.read_bytes())
    before, after = bytes([0x28, old[0], 0x30, old[1]]), bytes([0x28, new[0], 0x30, new[1]])
    assert data.count(before) == 1
    at = data.index(before)
    data[at : at + 4] = after
    out = path.with_name("patched.orc")
    out.write_bytes(bytes(data))
    return out


@pytest.mark.parametrize("precision", [4, 30])
def test_orc_decimals_beyond_their_precision_are_refused(tmp_path: Path, precision: int) -> None:
    """A decimal with more digits than its type declares cannot be an Arrow decimal of that
    type: an error naming the row. (ORC's Java reader, and so Spark, reads it as NULL:
    HiveDecimalWritable.mutateEnforcePrecisionScale in DecimalColumnVector.set.)"""
    wide = 38 if precision > 18 else 18
    values = [decimal.Decimal("1.25"), None, decimal.Decimal(2 * 10**precision).scaleb(-2), decimal.Decimal("-3")]
    path = write_orc(tmp_path / "dec.orc", f"struct<x:decimal({wide},2)>", [(v,) for v in values],
                     compression=pyorc.CompressionKind.NONE)
    narrow = _with_precision(path, (wide, 2), (precision, 2))
    f = OrcFile(narrow)
    assert f.column("x").arrow_type == pa.decimal128(precision, 2)
    for rows in (None, [2]):
        with pytest.raises(CorruptFileError, match=rf"row 2 of the stripe: decimal value \(unscaled\) {2 * 10**precision} has more digits than decimal128\({precision}, 2\)"):
            f.read_column(0, "x", rows)
    # the largest value of the precision reads
    values[2] = decimal.Decimal(9 * 10 ** (precision - 1)).scaleb(-2)
    path = write_orc(tmp_path / "dec.orc", f"struct<x:decimal({wide},2)>", [(v,) for v in values],
                     compression=pyorc.CompressionKind.NONE)
    assert OrcFile(_with_precision(path, (wide, 2), (precision, 2))).read_column(0, "x").to_pylist() == values


# ---- kernels' guards -------------------------------------------------------------------------------


def _zigzag_varint(value: int) -> bytes:
    u = (value << 1) ^ (value >> 200) if value < 0 else value << 1
    out = bytearray()
    while True:
        b = u & 0x7F
        u >>= 7
        out.append(b | (0x80 if u else 0))
        if not u:
            return bytes(out)


def test_varint128_refuses_bits_beyond_128() -> None:
    lo = np.empty(1, np.int64)
    hi = np.empty(1, np.int64)
    for value in (2**127 - 1, -(2**127), 10**38, -(10**38)):
        buf = np.frombuffer(_zigzag_varint(value), np.uint8)
        assert K.varint128(buf, 0, len(buf), 0, 1, lo, hi) == len(buf)
        assert ((int(hi[0]) << 64) | (int(lo[0]) & (2**64 - 1))) == value
    for value in (2**127, -(2**127) - 1, 2**130):
        buf = np.frombuffer(_zigzag_varint(value), np.uint8)
        assert K.varint128(buf, 0, len(buf), 0, 1, lo, hi) == K.ERR_BAD_HEADER, value


def test_decimals_beyond_compares_magnitudes_of_128_bits() -> None:
    limit = 10**38
    values = [0, limit - 1, -(limit - 1), limit, -limit, 2**127 - 1, -(2**127)]
    lo = np.array([v & (2**64 - 1) for v in values], np.uint64).view(np.int64)
    hi = np.array([v >> 64 for v in values], np.int64)
    args = (np.uint64(limit & (2**64 - 1)), np.uint64(limit >> 64))
    assert [K.decimals_beyond(lo[i : i + 1], hi[i : i + 1], *args) for i in range(len(values))] == [-1, -1, -1, 0, 0, 0, 0]


def test_orc_timestamps_kernel_refuses_fractions_of_a_second_or_more() -> None:
    out = np.empty(1, np.int64)
    bounds = np.array([*divmod(NS_MIN, SECOND), *divmod(NS_MAX, SECOND)], np.int64)
    empty = np.empty(0, np.int64)
    for encoded, status in (((999_999_999 << 3), 0), ((1_000_000_000 << 3), K.TS_BAD_NANOS), ((100_000_000 << 3) | 1, K.TS_BAD_NANOS),
                            ((-999_999_999 << 3), 0), (2**62, K.TS_BAD_NANOS)):
        got = K.orc_timestamps(np.zeros(1, np.int64), np.array([encoded], np.int64), 0, empty, empty, 0, 1, bounds, out)
        assert got[0] == status, encoded
    got = K.orc_timestamps(np.array([2**62 + 1], np.int64), np.zeros(1, np.int64), 0, empty, empty, 0, 1000, bounds, out)
    assert got == (K.TS_OUT_OF_RANGE, 0)


# ---- Parquet INT96 ------------------------------------------------------------------------------


def _int96_file(path: Path, values: list[dt.datetime | None], **kwargs: Any) -> Path:
    pq.write_table(pa.table({"t": pa.array(values, pa.timestamp("us"))}), path, use_deprecated_int96_timestamps=True,
                   compression="none", use_dictionary=False, **kwargs)
    return path


def _micros_of(d: dt.datetime) -> int:
    delta = d.replace(tzinfo=UTC) - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


YEARS = [dt.datetime(1, 1, 1), dt.datetime(1234, 5, 6, 7, 8, 9, 10), dt.datetime(1677, 9, 21, 0, 12, 43, 145_224),
         dt.datetime(1969, 12, 31, 23, 59, 59, 999_999), dt.datetime(2262, 4, 11, 23, 47, 16, 854_776),
         dt.datetime(2263, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999_999)]


def test_int96_of_every_year_reads_as_microseconds(tmp_path: Path) -> None:
    """INT96 reads as microseconds (Spark's unit and reading), every year; pyarrow's default
    nanoseconds wrap outside 1677-2262 (asked for microseconds it agrees here)."""
    values = [*YEARS, None, *YEARS[::-1]]
    path = _int96_file(tmp_path / "i96.parquet", values)
    want = [None if v is None else _micros_of(v) for v in values]
    table = lazyscan.scan(path).to_table()
    assert table.schema.field("t").type == pa.timestamp("us")
    assert as_ints(table.column("t")) == want
    assert as_ints(pq.read_table(path, coerce_int96_timestamp_unit="us").column("t")) == want
    f = ParquetFile(path)
    assert as_ints(f.read_column(0, 0, [1, 5, 7, 12])) == [want[i] for i in (1, 5, 7, 12)]
    for where, keep in [("t < timestamp '1500-01-01 00:00:00'", lambda v: v < _micros_of(dt.datetime(1500, 1, 1))),
                        ("t >= timestamp '2262-04-11 23:47:16.854776'", lambda v: v >= _micros_of(YEARS[4]))]:
        got = lazyscan.scan(path, where=where).to_table()
        assert sorted(as_ints(got.column("t"))) == sorted(v for v in want if v is not None and keep(v)), where  # type: ignore[type-var]


def test_int96_fraction_below_a_microsecond_is_dropped(tmp_path: Path) -> None:
    """Nanoseconds written as INT96 read as microseconds, the rest of the nanoseconds dropped
    (Spark: ``nanos / NANOS_PER_MICROS`` in DateTimeUtils.fromJulianDay)."""
    values = [-1, -999, -1_001, 0, 999, 1_001, 1_234_567_891_234_567_891, -1_234_567_891_234_567_891]
    path = tmp_path / "ns.parquet"
    pq.write_table(pa.table({"t": pa.array(values, pa.timestamp("ns"))}), path, use_deprecated_int96_timestamps=True)
    assert as_ints(lazyscan.scan(path).to_table().column("t")) == [v // 1000 for v in values]


def _patch_int96(path: Path, replace: dict[dt.datetime, tuple[int, int]]) -> Path:
    """The PLAIN, uncompressed INT96 file with the values ``replace`` names rewritten to
    (Julian day, nanoseconds of the day)."""
    data = bytearray(path.read_bytes())
    for value, (day, nanos) in replace.items():
        micros_ = _micros_of(value)
        days, rest = divmod(micros_, 86_400_000_000)
        stored = struct.pack("<qi", rest * 1000, days + 2_440_588)
        assert data.count(stored) == 1
        at = data.index(stored)
        data[at : at + 12] = struct.pack("<qi", nanos, day)
    out = path.with_name("patched.parquet")
    out.write_bytes(bytes(data))
    return out


def spark_micros(day: int, nanos: int) -> int:
    """Spark's DateTimeUtils.fromJulianDay: (day - 2440588) * MICROS_PER_DAY + nanos / 1000, the
    division truncating toward zero as Java's does."""
    part = abs(nanos) // 1000
    return (day - 2_440_588) * 86_400_000_000 + (part if nanos >= 0 else -part)


def test_int96_julian_day_zero_and_negative_days(tmp_path: Path) -> None:
    """INT96 with Julian day 0 (4714-11-24 BC, proleptic Gregorian) and negative days: lazyscan
    reads them as Spark does (DateTimeUtils.fromJulianDay, with
    spark.sql.parquet.int96RebaseModeInRead=CORRECTED: no Julian calendar rebase), negative
    nanoseconds truncated toward zero. pyarrow differs in either unit: it reads day 0 as
    1970-01-01 and wraps the negative days."""
    a, b, c, d = (dt.datetime(2000, 1, 1, 0, 0, k) for k in range(4))
    path = _int96_file(tmp_path / "i96.parquet", [a, None, b, c, d])
    cases = {a: (0, 0), b: (0, 3_600_000_000_123), c: (-1, 86_399_999_999_999), d: (-(2**20), -1_999)}
    patched = _patch_int96(path, cases)
    want = [spark_micros(*cases[a]), None, spark_micros(*cases[b]), spark_micros(*cases[c]), spark_micros(*cases[d])]
    got = as_ints(lazyscan.scan(patched).to_table().column("t"))
    assert got == want
    assert got[0] == -210_866_803_200_000_000  # 4714-11-24 BC (proleptic Gregorian) 00:00 UTC
    assert got[4] == -(2**20 + 2_440_588) * 86_400_000_000 - 1  # -1,999 ns: -1 us, toward zero
    for unit in ("us", "ns"):
        arrow = as_ints(pq.read_table(patched, coerce_int96_timestamp_unit=unit).column("t"))
        assert arrow[0] == 0 and all(x != y for x, y in zip(arrow, want) if y is not None), unit


def test_int96_beyond_64_bit_microseconds_is_refused(tmp_path: Path) -> None:
    """A Julian day too far for 64-bit microseconds (about 292,000 years from 1970) is an error
    naming the column (Spark's Long multiplication wraps it silently)."""
    a, b = dt.datetime(2000, 1, 1), dt.datetime(2000, 1, 2)
    patched = _patch_int96(_int96_file(tmp_path / "i96.parquet", [a, b]), {b: (2**31 - 1, 0)})
    with pytest.raises(UnsupportedFeatureError, match=r"INT96 timestamp \(Julian day 2147483647, 0 ns into it\) is outside what timestamp\[us\] holds") as e:
        lazyscan.scan(patched).to_table()
    assert "column 't'" in str(e.value) and "patched.parquet" in str(e.value)


def test_int96_kernel_bounds() -> None:
    """The first and last days 64-bit microseconds hold convert; a day or a microsecond beyond
    them is refused."""
    per_day = 86_400_000_000
    last = (2**63 - 1) // per_day
    out = np.empty(1, np.int64)
    overflow = np.empty(1, np.bool_)
    for day, nanos, fits in [
        (2_440_588, 0, True),
        (2_440_588 + last, 0, True),
        (2_440_588 + last, per_day * 1000, False),  # the day fits, with its nanoseconds it does not
        (2_440_588 + last + 1, 0, False),
        (2_440_588 - last, -(10**12), True),
        (2_440_588 - last - 1, 0, False),
        (-(2**31), 0, False),
        (2**31 - 1, 0, False),
        (2_440_588, 2**63 - 1, True),
        (2_440_588, -(2**63), True),
    ]:
        raw = np.frombuffer(struct.pack("<qi", nanos, day), np.uint8).reshape(1, 12).copy()
        marked = _int96_to_units(raw, per_day, 1000, out, overflow)
        assert (marked == 0) == fits and bool(overflow[0]) != fits, (day, nanos)
        if fits:
            assert int(out[0]) == spark_micros(day, nanos), (day, nanos)


def test_int96_written_by_spark_beyond_year_287000_reads_as_spark_wrote_it() -> None:
    """Spark's writer adds the Julian epoch to the microseconds (DateTimeUtils.toJulianDay) and
    overflows for years after about 287,000; its reader overflows back. That one wrap is undone
    (parquet-testing's int96_from_spark.parquet holds such a value, read in
    tests/test_parquet_testing_files.py); any other value beyond 64 bits is refused."""
    per_day = 86_400_000_000

    def spark_writes(micros_: int) -> tuple[int, int]:
        julian = (micros_ + 2_440_588 * per_day + 2**63) % 2**64 - 2**63  # Java's Long addition
        days = int(julian / per_day) if abs(julian) < 2**53 else (abs(julian) // per_day) * (1 if julian >= 0 else -1)
        return days, (julian - days * per_day) * 1000

    for micros_ in (2**63 - 1, 9_089_380_393_200_000_000, 2**63 - 2_440_588 * per_day + 5):
        day, nanos = spark_writes(micros_)
        assert spark_micros(day, nanos) < -(2**63)
        assert _int96_beyond_int64(day, nanos, per_day, 1000) == micros_
    assert _int96_beyond_int64(2**31 - 1, 0, per_day, 1000) is None
    assert _int96_beyond_int64(-(2**31), 0, per_day, 1000) is None


def test_nested_int96_reads_as_microseconds_like_flat(tmp_path: Path) -> None:
    """INT96 inside lists and structs reads as the flat column does: timestamp[us], every year."""
    values: list[list[dt.datetime | None] | None] = [list(YEARS), [None, YEARS[2]], None]
    table = pa.table({
        "flat": pa.array([v[0] if v else None for v in values], pa.timestamp("us")),
        "l": pa.array(values, pa.list_(pa.timestamp("us"))),
        "s": pa.array([{"a": v[-1]} if v else None for v in values], pa.struct([("a", pa.timestamp("us"))])),
    })
    path = tmp_path / "nested.parquet"
    pq.write_table(table, path, use_deprecated_int96_timestamps=True)
    got = lazyscan.scan(path).to_table()
    assert got.schema.field("l").type == pa.list_(pa.timestamp("us"))
    assert got.schema.field("s").type == pa.struct([("a", pa.timestamp("us"))])
    assert got.column("l").to_pylist() == table.column("l").to_pylist()
    assert got.column("s").to_pylist() == table.column("s").to_pylist()
    assert got.column("flat").to_pylist() == table.column("flat").to_pylist()


# ---- Parquet INTERVAL (class 6) ---------------------------------------------------------------------


INTERVALS = [struct.pack("<III", 1, 2, 3), None, struct.pack("<III", 14, 0, 86_399_999)]


def interval_file(folder: Path) -> Path:
    """A Parquet file of one INTERVAL column ``iv`` holding :data:`INTERVALS` (pyarrow writes
    no INTERVAL: its 12-byte column is patched into one in the footer)."""
    plain = folder / "fixed.parquet"
    pq.write_table(pa.table({"iv": pa.array(INTERVALS, pa.binary(12))}), plain, compression="none")
    patch = ParquetPatch(plain)
    element = patch.footer[2].value[1][1]  # FileMetaData.schema[1], the column
    element[6] = Node(T.I32, 21)  # SchemaElement.converted_type = INTERVAL
    return patch.write(folder / "interval.parquet")


def test_parquet_interval_reads_as_its_twelve_bytes(tmp_path: Path) -> None:
    """INTERVAL (converted type 21 on a 12-byte FIXED_LEN_BYTE_ARRAY: months, days and
    milliseconds as little-endian uint32) reads as its 12 bytes, fixed_size_binary(12), as
    pyarrow reads it. DuckDB converts it to its INTERVAL type; Spark refuses the column
    (ParquetSchemaConverter: FIXED_LEN_BYTE_ARRAY with INTERVAL is typeNotImplemented, "Parquet
    type not yet supported"); Arrow has no Parquet mapping to month_day_nano for it."""
    path = interval_file(tmp_path)
    raw = INTERVALS
    assert "(Interval)" in str(pq.ParquetFile(path).schema)
    got = lazyscan.scan(path).to_table()
    assert got.schema.field("iv").type == pa.binary(12)
    assert got.column("iv").to_pylist() == raw == pq.read_table(path).column("iv").to_pylist()
    months_days = duckdb.execute(f"SELECT iv FROM '{path}'").fetchall()
    assert months_days[0][0] == dt.timedelta(days=32, milliseconds=3)  # DuckDB: 1 month as 30 days
    assert pc.equal(got.column("iv"), pq.read_table(path).column("iv")).to_pylist() == [True, None, True]
