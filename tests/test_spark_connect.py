"""lazyscan through a Spark Connect session: a local Connect server started by the fixture
(:mod:`tests.support.connect`), the client in this process. Results are compared with
``spark.read.parquet`` through the same Connect session. Connect has no accumulators: the
profile arrives through the ``profileDir`` option."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lazyscan.spark
from lazyscan.spark.choose import resolve_route
from lazyscan.spark.compat import HAS_PYTHON_DATA_SOURCE, default_parallelism, is_connect
from tests.spark_support import assert_same_rows, typed_table
from tests.support.connect import start_connect_server

pytestmark = pytest.mark.spark

FILTERS = [
    "i32 = 5",
    "s LIKE 'a%' OR i64 IN (1, 2, 3)",
    "NOT (f64 > 0.5) AND dt < DATE '2000-01-01'",
    "ts IS NULL OR d18 BETWEEN -1.5 AND 2",
    "bin = X'6162' OR b",
]


@pytest.fixture(scope="module")
def connect(tmp_path_factory) -> Iterator[Any]:
    os.environ["TZ"] = "UTC"
    saved = {k: os.environ.get(k) for k in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")}
    server = start_connect_server(tmp_path_factory.mktemp("connect"))
    try:
        session = server.session()
        assert is_connect(session)
        yield session
        session.stop()
    finally:
        server.stop()
        for k, v in saved.items():  # later modules use the classic session
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("connect_data")
    t = typed_table(2500, seed=31, unsigned=False, nested=True)
    pq.write_table(t.slice(0, 1000), d / "a.parquet", row_group_size=250)
    pq.write_table(t.slice(1000), d / "b.parquet", row_group_size=500, write_page_index=True, data_page_size=2048)
    return d


def test_connect_session_facts(connect):
    assert default_parallelism(connect) == 2  # from the local[2] master: no sparkContext here
    expected = "source" if HAS_PYTHON_DATA_SOURCE else "tasks"
    assert resolve_route("auto", connect) == expected


@pytest.mark.parametrize("where", FILTERS)
def test_tasks_route_matches_spark(connect, data, where, tmp_path):
    profiles = tmp_path / "profiles"
    df = lazyscan.spark.read(
        connect, str(data), ["rid", "s", "i32", "arr"], where, force="lazyscan", route="tasks",
        profileDir=str(profiles),
    )
    want = connect.read.parquet(str(data)).where(where).select("rid", "s", "i32", "arr")
    rows = df.collect()
    assert_same_rows(rows, want.collect(), where)
    assert lazyscan.spark.read_profile_dir(str(profiles))["rows_returned"] == len(rows)


@pytest.mark.skipif(not HAS_PYTHON_DATA_SOURCE, reason="the data source needs Spark 4.1 or later")
def test_data_source_route_matches_spark(connect, data):
    from lazyscan.spark.profiles import current_accumulator

    before = current_accumulator()
    assert lazyscan.spark.register(connect) is not None
    assert current_accumulator() is before  # a classic session's profiles still arrive
    for where in FILTERS:
        df = lazyscan.spark.read(connect, str(data), ["rid", "f64", "st"], where, force="lazyscan")
        want = connect.read.parquet(str(data)).where(where).select("rid", "f64", "st")
        assert_same_rows(df.collect(), want.collect(), where)
    df = connect.read.format("lazyscan").schema("rid bigint").option("where", "i8 < 0").load(str(data))
    assert sorted(r.rid for r in df.collect()) == sorted(
        r.rid for r in connect.read.parquet(str(data)).where("i8 < 0").select("rid").collect()
    )


def test_semi_join_on_connect(connect, data):
    lazyscan.spark.register(connect)  # as documented: not left to an earlier test
    dim = connect.createDataFrame([(k,) for k in (1, 2, 30)], "k bigint")
    df = lazyscan.spark.read(connect, str(data), ["rid", "i64"], None, semi_join=(dim, "k", "i64"), force="lazyscan")
    want = connect.read.parquet(str(data)).where("i64 IN (1, 2, 30)").select("rid", "i64")
    assert_same_rows(df.collect(), want.collect(), "semi join")


def test_corrupt_file_on_connect(connect, tmp_path):
    t = pa.table({"a": pa.array(np.arange(5000)), "s": pa.array([f"v{i}" for i in range(5000)])})
    pq.write_table(t, tmp_path / "broken.parquet", use_dictionary=False)
    data = bytearray((tmp_path / "broken.parquet").read_bytes())
    data[100:3000] = b"\xcd" * 2900
    (tmp_path / "broken.parquet").write_bytes(bytes(data))
    df = lazyscan.spark.read(connect, str(tmp_path), ["a", "s"], "a > 1", force="lazyscan", route="tasks")
    with pytest.raises(Exception, match=r"broken\.parquet") as info:
        df.collect()
    assert "lazyscan cannot read" in str(info.value)


def test_chooser_on_connect(connect, data):
    # no filter: Spark's own reader, through the Connect session
    df = lazyscan.spark.read(connect, str(data), ["rid"])
    assert df.count() == 2500
