"""Shared helpers for the Spark tests: one local Spark session, typed test data, row comparison.

:func:`get_spark` creates the session once per test run; each Spark test module wraps it in a
session-scoped ``spark`` fixture. The session is ``local[2]`` with the UI off, session time zone UTC, few shuffle
partitions, and the ``lazyscan`` data source registered. The Python workers run this
interpreter (``PYSPARK_PYTHON``), and the process time zone is UTC so that collected timestamps
compare equal whatever the machine's zone.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import os
import sys
import time
from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa

from lazyscan.predicate.expr import Compare, In
from tests.support.jvm import TEST_JVM_OPTIONS

_SESSION: Any = None


def get_spark() -> Any:
    """The shared local Spark session (created on first use)."""
    global _SESSION
    if _SESSION is not None:
        return _SESSION
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["TZ"] = "UTC"
    time.tzset()
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("lazyscan-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.ansi.enabled", "true")  # the default from Spark 4.0 on
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "2g")
        .config("spark.driver.extraJavaOptions", TEST_JVM_OPTIONS)
        .config("spark.python.worker.faulthandler.enabled", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    import lazyscan.spark

    lazyscan.spark.register(spark)
    _SESSION = spark
    return spark


_HIVE_SESSION: Any = None


def get_hive_spark(folder: Any) -> Any:
    """A session with Hive support whose warehouse and Derby metastore are in ``folder`` (on
    the first call; later calls return that session), on the shared session's SparkContext: no
    second JVM, and the shared session keeps its in-memory catalog.

    Spark chooses a session's catalog when its shared state is made, from the options the
    session is created with, so this session is created directly (PySpark's builder would
    return the shared one). It is not made the default or active session. The ``lazyscan``
    data source is registered with it (with an accumulator of its own; the one behind
    :func:`lazyscan.spark.last_profile` stays the shared session's).
    """
    global _HIVE_SESSION
    if _HIVE_SESSION is not None:
        return _HIVE_SESSION
    from pyspark.sql import SparkSession

    import lazyscan.spark
    from lazyscan.spark.profiles import current_accumulator, set_accumulator

    shared = get_spark()
    context = shared.sparkContext
    jvm = context._jvm
    folder = os.fspath(folder)
    jvm.java.lang.System.setProperty("derby.stream.error.file", os.path.join(folder, "derby.log"))
    options = jvm.java.util.HashMap()
    for key, value in {
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": os.path.join(folder, "warehouse"),
        "javax.jdo.option.ConnectionURL":
            f"jdbc:derby:;databaseName={os.path.join(folder, 'metastore_db')};create=true",
    }.items():
        options.put(key, value)
    session_class = getattr(SparkSession, "_get_j_spark_session_class", None)
    java_class = session_class(jvm) if session_class else jvm.org.apache.spark.sql.SparkSession
    session = SparkSession(context, jsparkSession=java_class(context._jsc.sc(), options))
    # Spark checks a new data source's name against the active session's sources
    accumulator = current_accumulator()
    java_class.setActiveSession(session._jsparkSession)
    try:
        lazyscan.spark.register(session)
    finally:
        java_class.setActiveSession(shared._jsparkSession)
        set_accumulator(accumulator)
    _HIVE_SESSION = session
    return session


# ---- Spark's quirks ----------------------------------------------------------------------

_BIGINT_COLUMNS = ("i64", "u32")  # Spark reads uint32 as BIGINT


def hits_spark_bigint_quirk(expr: Any) -> bool:
    """Spark 4.3 answers FALSE / TRUE instead of NULL when a NULL BIGINT is compared with an
    integer or decimal literal beyond the BIGINT range (``i64 >= 9223372036854775808`` is FALSE
    and its NOT is TRUE for a NULL ``i64``): its optimizer drops the NULL check when it removes
    the cast. lazyscan keeps SQL's NULL; predicates that run into this are left out of the
    random comparison (see test_spark_bigint_out_of_range_quirk)."""
    stack: list[Any] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, (Compare, In)) and node.column.name in _BIGINT_COLUMNS:
            values = [node.value] if isinstance(node, Compare) else list(node.values)
            for v in values:
                if v.kind in ("integer", "decimal") and not -(2**63) <= v.value <= 2**63 - 1:
                    return True
        stack.extend(getattr(node, a) for a in ("left", "right", "child") if hasattr(node, a))
    return False


# ---- comparison ----------------------------------------------------------------------------


def _norm(value: Any) -> Any:
    if value is None:
        return ("null",)
    if isinstance(value, float):
        if math.isnan(value):
            return ("nan",)
        return ("num", 0.0 if value == 0 else value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return ("bytes", bytes(value))
    if isinstance(value, dict):
        return ("map", tuple(sorted((_norm(k), _norm(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return ("seq", tuple(_norm(v) for v in value))
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, decimal.Decimal)):
        return ("num", value)
    return (type(value).__name__, value)


def row_multiset(rows: Iterable[Any]) -> Counter[Any]:
    """Rows as a multiset of normalized tuples (NaN equals NaN, -0.0 equals 0.0, null aware)."""
    return Counter(_norm(tuple(r)) for r in rows)


def assert_same_rows(actual: Iterable[Any], expected: Iterable[Any], context: str = "") -> None:
    """Assert two row collections are equal as multisets, showing a few differences."""
    a, e = row_multiset(actual), row_multiset(expected)
    if a == e:
        return
    missing = list((e - a).elements())[:5]
    extra = list((a - e).elements())[:5]
    raise AssertionError(
        f"{context}: {sum(a.values())} rows vs {sum(e.values())} expected; "
        f"missing (first 5): {missing}; unexpected (first 5): {extra}"
    )


# ---- typed test data ---------------------------------------------------------------------------

_STRINGS = [
    "",
    "a",
    "ab",
    "abc",
    "abd",
    "b",
    "B",
    "a%b",
    "a_b",
    "é",
    "äöü",
    "日本語",
    "😀 smile",
    "zzz",
    "carefully regular",
    "carefully final",
    "a\\b",
    "it's",
]


def typed_table(n: int = 2000, seed: int = 7, unsigned: bool = True, nested: bool = True) -> pa.Table:
    """A table with a column of every Spark-readable Parquet type, nulls in each, special floats,
    unicode strings, extreme dates and timestamps; ``rid`` numbers the rows."""
    rng = np.random.default_rng(seed)

    def nulls(values: list[Any], rate: float = 0.1) -> list[Any]:
        mask = rng.random(len(values)) < rate
        return [None if m else v for v, m in zip(values, mask)]

    def pick(pool: list[Any]) -> list[Any]:
        return [pool[i] for i in rng.integers(0, len(pool), n)]

    ints = rng.integers(-50, 50, n)
    floats = [-math.inf, -1.5, -0.0, 0.0, 0.5, 1.0, 2.25, 1e30, math.inf, math.nan, 3.0]
    dates = [dt.date(1900, 1, 1), dt.date(1970, 1, 1), dt.date(1999, 12, 31), dt.date(2020, 2, 29),
             dt.date(2024, 6, 1), dt.date(2100, 1, 1)]
    base = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)
    stamps = [base + dt.timedelta(days=int(d), microseconds=int(u))
              for d, u in zip(rng.integers(-40000, 40000, 40), rng.integers(0, 10**6, 40))]
    cols: dict[str, pa.Array] = {
        "rid": pa.array(np.arange(n, dtype=np.int64)),
        "b": pa.array(nulls(pick([True, False])), pa.bool_()),
        "i8": pa.array(nulls([int(x) for x in ints]), pa.int8()),
        "i16": pa.array(nulls([int(x) * 300 for x in ints]), pa.int16()),
        "i32": pa.array(nulls(pick([-(2**31), 2**31 - 1, *range(-20, 20)])), pa.int32()),
        "i64": pa.array(nulls(pick([-(2**63), 2**63 - 1, *range(-20, 20), 10**12])), pa.int64()),
        "f32": pa.array(nulls([float(np.float32(x)) for x in pick(floats)]), pa.float32()),
        "f64": pa.array(nulls(pick(floats)), pa.float64()),
        "d9": pa.array(nulls([decimal.Decimal(int(x)) / 4 for x in ints]), pa.decimal128(9, 2)),
        "d18": pa.array(nulls([decimal.Decimal(int(x) * 12345) / 10000 for x in ints]), pa.decimal128(18, 4)),
        "d38": pa.array(
            nulls([decimal.Decimal(int(x)) * decimal.Decimal("1234567890123.0123456789") for x in ints]),
            pa.decimal128(38, 10),
        ),
        "s": pa.array(nulls(pick(_STRINGS)), pa.string()),
        "bin": pa.array(nulls(pick([b"", b"\x00", b"a", b"ab", b"\xff\xfe", b"abc"])), pa.binary()),
        "dt": pa.array(nulls(pick(dates)), pa.date32()),
        "ts": pa.array(nulls(pick(stamps)), pa.timestamp("us", tz="UTC")),
        "ntz": pa.array(nulls([s.replace(tzinfo=None) for s in pick(stamps)]), pa.timestamp("us")),
    }
    if unsigned:
        cols["u8"] = pa.array(nulls(pick([0, 1, 200, 255])), pa.uint8())
        cols["u16"] = pa.array(nulls(pick([0, 1, 40000, 65535])), pa.uint16())
        cols["u32"] = pa.array(nulls(pick([0, 7, 3_000_000_000, 2**32 - 1])), pa.uint32())
        cols["u64"] = pa.array(nulls(pick([0, 7, 2**63 + 5, 2**64 - 1])), pa.uint64())
        cols["ts_ms"] = pa.array(
            nulls([s.replace(microsecond=(s.microsecond // 1000) * 1000) for s in pick(stamps)]),
            pa.timestamp("ms", tz="UTC"),
        )
    if nested:
        cols["arr"] = pa.array(nulls([[int(x), None, int(x) + 1] for x in ints]), pa.list_(pa.int32()))
        cols["st"] = pa.array(
            nulls([{"x": int(x), "y": str(x)} for x in ints]),
            pa.struct([("x", pa.int32()), ("y", pa.string())]),
        )
        cols["mp"] = pa.array(nulls([[("k", int(x))] for x in ints]), pa.map_(pa.string(), pa.int64()))
    return pa.table(cols)
