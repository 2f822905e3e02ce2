"""Transparent mode's choice: the rule asks :func:`lazyscan.spark.read`'s cost model whether
lazyscan or Spark's reader reads a scan (``LazyScanChoice.java``, :mod:`lazyscan.spark.decision`).

The module's session carries the extension on the shared test SparkContext, its jar loaded into a
class loader of its own (as in ``tests/test_spark_extension.py``). Where the rule in the checkout
does not ask ``LazyScanChoice`` yet, the jar is built from a copy of the rule sources with that
call added after the lazyscan relation is made, which is where the rule is to ask.

The decisions are asked on both routes (:mod:`lazyscan.spark.decision`): the driver's model,
called back through Py4J, and the planning call of the ``lazyscanChoice`` source in a Python
worker (``spark.lazyscan.choiceRoute=source``, and on a Spark Connect server started with the
extension, :func:`test_connect_server_asks_through_the_planning_call`).

The cost model is the same class everywhere: the session is enabled with a :class:`CostModel`
whose Spark reader is slow (:data:`COSTS`), so that on test-sized files a needle filter goes to
lazyscan and decisions sit far from the model's break-even point (the sample's timings then
cannot tip them); a filter that keeps most rows goes to Spark's reader whatever the timings
(above ``max_selectivity``).
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import lazyscan.spark
from lazyscan.spark.choose import CostModel, estimate
from lazyscan.spark.decision import (
    CHOICE_CONF,
    CHOICE_SOURCE,
    DriverModel,
    LazyScanChoiceSource,
    enable_choice,
    register_choice,
)
from lazyscan.spark.extension import ENABLED_CONF, EXTENSION_CLASS, build_jar
from tests.spark_extension_support import extension_session, optimized_plan, rule_loader
from tests.spark_support import assert_same_rows, get_spark
from tests.support.jvm import TEST_JVM_OPTIONS

pytestmark = pytest.mark.spark

#: Spark's reader made 100 times slower than calibrated: lazyscan wins every selective read here
COSTS = CostModel(spark_bytes_per_s=4.9e6, spark_value_s=1e-6)
ROWS = 200_000
ROUTE_CONF = "spark.lazyscan.choiceRoute"
#: the routes, as the setting names them and as the verdicts do
ROUTES = {"auto": "driver's model", "source": "lazyscanChoice source"}


def _lineitem(n: int = ROWS, seed: int = 7) -> pa.Table:
    """Columns shaped like TPC-H lineitem's (Q6 reads quantity, price, discount, ship date)."""
    rng = np.random.default_rng(seed)
    cents = lambda v: pa.array([decimal.Decimal(int(c)) / 100 for c in v], pa.decimal128(15, 2))  # noqa: E731
    words = np.array(["carefully", "quickly", "final", "ironic", "bold", "pending", "regular", "express"])
    comments = [" ".join(words[rng.integers(0, len(words), 3)]) for _ in range(n)]
    comments[n // 2] = "needle in the lineitems"
    days = rng.integers(0, 7 * 365, n)
    return pa.table(
        {
            "l_orderkey": pa.array(np.arange(n, dtype=np.int64) * 4),
            "l_quantity": cents(rng.integers(1, 51, n) * 100),
            "l_extendedprice": cents(rng.integers(90_000, 10_000_000, n)),
            "l_discount": cents(rng.integers(0, 11, n)),
            "l_shipdate": pa.array([dt.date(1992, 1, 1) + dt.timedelta(days=int(d)) for d in days]),
            "l_comment": pa.array(comments),
        }
    )


class _Session:
    """A session with the extension deciding by the cost model (``COSTS``), and the class
    loader of the rule's jar (the one every extension test module shares: two loaders of one
    jar in one JVM confuse Py4J's method lookup)."""

    def __init__(self, shared: Any) -> None:
        self.spark = extension_session(shared)
        self.spark.conf.unset(CHOICE_CONF)  # ask the model (extension_session takes every scan)
        self.loader = rule_loader(shared)
        self.jvm, self.gateway = shared.sparkContext._jvm, shared.sparkContext._gateway
        self.use_costs(COSTS)

    def use_costs(self, costs: CostModel, model: Any = None) -> None:
        """The cost model of both routes (the driver's: ``model`` when given)."""
        choice = self.loader.loadClass("lazyscan.spark.jvm.LazyScanChoice")
        enable_choice(self.spark, costs, choice_class=choice)  # the jar is not on the class path
        if model is not None:
            self.call("register", self.spark._jsparkSession, model)

    def call(self, name: str, *args: Any) -> Any:
        """A static method of ``LazyScanChoice`` (through reflection: the class is in the loader)."""
        cls = self.loader.loadClass("lazyscan.spark.jvm.LazyScanChoice")
        for m in cls.getMethods():
            if m.getName() == name and len(m.getParameterTypes()) == len(args):
                values = self.jvm.java.util.ArrayList()  # takes Python objects, unlike a Java array
                for a in args:
                    values.add(a)
                return m.invoke(None, values.toArray())
        raise AssertionError(f"LazyScanChoice has no {name} of {len(args)} arguments")

    def forget(self) -> None:
        self.call("forget", self.spark._jsparkSession)

    def model_calls(self) -> int:
        return int(self.call("modelCalls"))

    def verdicts(self) -> list[str]:
        return [str(v) for v in self.call("verdicts", self.spark._jsparkSession)]


@pytest.fixture(scope="module")
def session() -> Iterator[_Session]:
    shared = get_spark()
    s = _Session(shared)
    s.spark.conf.set(ENABLED_CONF, "true")
    yield s
    lazyscan.spark.register(shared)  # the shared session's profile accumulator back in place


@pytest.fixture(params=list(ROUTES))
def route(request: pytest.FixtureRequest, session: _Session) -> Iterator[str]:
    """Decisions asked on one route (none kept from before)."""
    session.spark.conf.set(ROUTE_CONF, request.param)
    session.forget()
    yield ROUTES[request.param]
    session.spark.conf.unset(ROUTE_CONF)
    session.forget()


@pytest.fixture(scope="module")
def lineitem(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("choice-data") / "lineitem.parquet"
    pq.write_table(_lineitem(), path, row_group_size=20_000)
    return path


def _on_and_off(spark: Any, build: Any) -> tuple[list[Any], list[Any], str]:
    """Rows of ``build(spark)`` with the rule on (and its optimized plan) and off."""
    on = build(spark)
    plan, on_rows = optimized_plan(on), on.collect()
    spark.conf.set(ENABLED_CONF, "false")
    try:
        off_rows = build(spark).collect()
    finally:
        spark.conf.set(ENABLED_CONF, "true")
    return on_rows, off_rows, plan


def _verdict(session: _Session, path: Path) -> str:
    """The latest verdict kept for ``path``."""
    found = [v for v in session.verdicts() if str(path) in v]
    assert found, session.verdicts()
    return found[-1]


Q6 = ("l_shipdate >= DATE'1992-01-01' AND l_shipdate < DATE'1999-01-01' "
      "AND l_discount BETWEEN 0.00 AND 0.10 AND l_quantity < 50")
NEEDLE = "l_comment = 'needle in the lineitems'"


def test_q6_like_wide_filter_keeps_sparks_reader(session: _Session, lineitem: Path, route: str) -> None:
    query = lambda s: (  # noqa: E731
        s.read.parquet(str(lineitem)).where(Q6).selectExpr("sum(l_extendedprice * l_discount)")
    )
    before = session.model_calls()
    on, off, plan = _on_and_off(session.spark, query)
    # asked once: the optimizer's second pass, with the IS NOT NULL conjuncts Spark infers
    # from the filter, finds the decision kept
    assert session.model_calls() == before + 1
    assert on == off
    assert "lazyscan(where:" not in plan, plan
    verdict = _verdict(session, lineitem)
    assert "Spark's reader: " in verdict and "of rows survive" in verdict, verdict
    assert f"by the {route}" in verdict, verdict


def test_needle_goes_to_lazyscan(session: _Session, lineitem: Path, route: str) -> None:
    query = lambda s: s.read.parquet(str(lineitem)).where(NEEDLE).select("l_orderkey", "l_shipdate")  # noqa: E731
    on, off, plan = _on_and_off(session.spark, query)
    assert_same_rows(on, off, NEEDLE)
    assert len(on) == 1
    assert "lazyscan(where: `l_comment` = 'needle in the lineitems'" in plan, plan
    verdict = _verdict(session, lineitem)
    assert ": lazyscan: lazyscan ~" in verdict and f"by the {route}" in verdict, verdict


def test_scan_of_a_join_must_save_more(session: _Session, lineitem: Path, route: str) -> None:
    """The rule tells the model how many relations the query reads: the needle scan alone goes
    to lazyscan, the same scan joined with another relation keeps Spark's reader when the model
    expects it to save less than ``query_min_saving_s`` (here set out of reach)."""
    spark = session.spark
    session.use_costs(replace(COSTS, query_min_saving_s=1e6))
    try:
        alone = spark.read.parquet(str(lineitem)).where(NEEDLE).select("l_orderkey")
        assert "lazyscan(where:" in optimized_plan(alone)
        other = spark.read.parquet(str(lineitem)).where("l_orderkey < 100").select("l_orderkey")
        joined = alone.join(other, "l_orderkey")
        assert "lazyscan(where:" not in optimized_plan(joined)
        needle = [v for v in session.verdicts() if "needle in the lineitems" in v]
        assert any("a scan of a query reading 2 relations must save" in v for v in needle), needle
        assert_same_rows(joined.collect(), [r for r in alone.collect() if r.l_orderkey < 100], "join")
    finally:
        session.use_costs(COSTS)
        session.forget()


def test_key_filtered_scan_counts_the_whole_query(session: _Session, lineitem: Path, tmp_path: Path) -> None:
    """The key filter's keys are collected by a query optimized on the same thread; the fact
    scan's decision after it still counts the relations of the whole join."""
    spark = session.spark
    dim = tmp_path / "dim.parquet"
    pq.write_table(pa.table({"k": pa.array([4, 8, 400004], pa.int64()), "tag": ["a", "b", "a"]}), dim)
    session.use_costs(replace(COSTS, query_min_saving_s=1e6))
    spark.conf.set("spark.lazyscan.keyFilter.enabled", "true")
    spark.conf.set("spark.lazyscan.keyFilter.minScanBytes", "0")  # the test's small lineitem
    try:
        fact = spark.read.parquet(str(lineitem)).select("l_orderkey", "l_quantity")
        small = spark.read.parquet(str(dim)).where("tag = 'a'")
        joined = fact.join(small, fact.l_orderkey == small.k)
        assert "lazyscan(" not in optimized_plan(joined)
        keyed = [v for v in session.verdicts() if str(lineitem) in v]
        assert keyed, session.verdicts()  # the fact scan was asked about with the keys
        assert all("a scan of a query reading 2 relations must save" in v for v in keyed), keyed
        assert sorted(r.l_orderkey for r in joined.collect()) == [4, 400004]
    finally:
        spark.conf.unset("spark.lazyscan.keyFilter.enabled")
        spark.conf.unset("spark.lazyscan.keyFilter.minScanBytes")
        session.use_costs(COSTS)
        session.forget()


# Spark SQL filters; the needed columns of the rule's scan (output and filter columns)
FILTERS = [
    (NEEDLE, ["l_orderkey", "l_comment"]),
    ("l_orderkey = 4000", ["l_orderkey"]),
    ("l_orderkey < 0", ["l_orderkey"]),  # statistics rule out every row group
    ("l_quantity < 40", ["l_orderkey", "l_quantity"]),  # most rows survive
    ("l_comment LIKE 'needle%' OR l_orderkey IN (8, 400004)", ["l_orderkey", "l_comment"]),
    ("l_shipdate = DATE'1995-06-17' AND l_discount = 0.04", ["l_orderkey", "l_discount", "l_shipdate"]),
]


@pytest.mark.parametrize(("where", "needed"), FILTERS, ids=[f[0] for f in FILTERS])
def test_same_decision_as_lazyscan_spark_read(
    session: _Session, lineitem: Path, route: str, where: str, needed: list[str]
) -> None:
    spark = session.spark
    df = spark.read.parquet(str(lineitem)).where(where).select("l_orderkey")
    taken = "lazyscan(where:" in optimized_plan(df)
    chooser = estimate(spark, [str(lineitem)], needed, where, costs=COSTS, rawFiles="true")
    assert taken == chooser.use_lazyscan, (where, _verdict(session, lineitem), chooser)


def _keep_reason(session: _Session, path: Path, where: str, columns: str) -> Any:
    """``LazyScanChoice.keepSparkReason`` for a scan of ``path``, as the rule asks it."""
    relation = session.spark.read.parquet(str(path))._jdf.queryExecution().analyzed().relation()
    options = session.jvm.java.util.HashMap()
    for k, v in {"path": f"file:{path}", "where": where, "columns": columns, "rawFiles": "true"}.items():
        options.put(k, v)
    return session.call("keepSparkReason", session.spark._jsparkSession, relation, options)


def test_decisions_are_kept_per_listing(session: _Session, tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    pq.write_table(_lineitem(), path, row_group_size=20_000)
    # each DataFrame lists the files again and is optimized on its own
    query = lambda: session.spark.read.parquet(str(path)).where(NEEDLE).select("l_orderkey")  # noqa: E731
    before = session.model_calls()
    query().explain()
    assert len(query().collect()) == 1
    assert "lazyscan(where:" in optimized_plan(query())
    assert session.model_calls() == before + 1  # planned three times, asked once
    # the file rewritten (another size, another time): asked again
    pq.write_table(_lineitem(ROWS // 2), path, row_group_size=20_000)
    os.utime(path, (1e9, 1e9))
    assert len(query().collect()) == 1
    assert session.model_calls() == before + 2
    # another scan of the same files (only the filter column for a count): its own decision
    assert query().count() == 1
    assert session.model_calls() == before + 3


def test_choice_setting_takes_every_scan(session: _Session, lineitem: Path) -> None:
    spark = session.spark
    build = lambda s: s.read.parquet(str(lineitem)).where("l_quantity < 40").select("l_orderkey")  # noqa: E731
    assert "lazyscan(where:" not in optimized_plan(build(spark))
    spark.conf.set(CHOICE_CONF, "lazyscan")
    try:
        on, off, plan = _on_and_off(spark, build)
    finally:
        spark.conf.unset(CHOICE_CONF)
    assert "lazyscan(where: `l_quantity` < 40" in plan, plan
    assert_same_rows(on, off, "l_quantity < 40")


def _failing_source() -> type:
    """A ``lazyscanChoice`` source whose planning call fails, as a worker that cannot run it."""
    return type(
        "LazyScanChoiceSource",
        (LazyScanChoiceSource,),
        {"__module__": LazyScanChoiceSource.__module__, "__qualname__": "FailingChoiceSource",
         "schema": lambda self: 1 // 0},
    )


class _FailingModel(DriverModel):
    """A driver's model that raises, as a driver that cannot answer."""

    def apply(self, options_json: str) -> str:
        raise RuntimeError("the driver's model is gone")


#: (what fails, route, the reason names)
FAILURES = [
    ("model", "auto", "ZeroDivisionError"),
    ("model", "source", "ZeroDivisionError"),
    ("driver", "auto", "Py4J|gone"),
    ("worker", "source", "ZeroDivisionError|PYTHON_DATA_SOURCE|DATA_SOURCE"),
]


@pytest.mark.parametrize(("failure", "route_name", "named"), FAILURES, ids=[f"{f[0]}-{f[1]}" for f in FAILURES])
def test_failed_decision_keeps_sparks_reader(
    session: _Session, tmp_path: Path, failure: str, route_name: str, named: str
) -> None:
    spark = session.spark
    path = tmp_path / "t.parquet"
    pq.write_table(_lineitem(20_000), path, row_group_size=5_000)
    spark.conf.set(ROUTE_CONF, route_name)
    if failure == "model":
        session.use_costs(CostModel(spark_bytes_per_s=0.0))  # divides by zero
    elif failure == "driver":
        session.use_costs(COSTS, _FailingModel(lazyscan.spark.session_defaults(spark)))
    else:
        spark.dataSource.register(_failing_source())
    try:
        before = session.model_calls()
        query = lambda s: s.read.parquet(str(path)).where(NEEDLE).select("l_orderkey", "l_comment")  # noqa: E731
        on, off, plan = _on_and_off(spark, query)
        reason = _keep_reason(session, path, "`l_comment` = 'needle in the lineitems'", '["l_orderkey", "l_comment"]')
    finally:
        session.use_costs(COSTS)
        register_choice(spark, COSTS)
        spark.conf.unset(ROUTE_CONF)
    assert_same_rows(on, off, NEEDLE)
    assert len(on) == 1
    assert "lazyscan(where:" not in plan, plan
    assert reason is not None and str(reason).startswith("lazyscan's cost model could not decide: "), reason
    assert re.search(named, str(reason)), reason
    assert session.model_calls() >= before + 2  # a failed decision is not kept
    assert not any(str(path) in v for v in session.verdicts())


def test_choice_source_reads_nothing(session: _Session, lineitem: Path) -> None:
    spark = session.spark
    df = spark.read.format(CHOICE_SOURCE).options(path=str(lineitem), where=NEEDLE, columns="l_orderkey", cores="2").load()
    field = df.schema.fields[0]
    assert field.metadata["useLazyscan"] is True, field.metadata
    assert field.metadata["reason"].startswith("lazyscan ~"), field.metadata
    with pytest.raises(Exception, match="only answers lazyscan's transparent mode"):
        df.collect()


def test_user_route_asks_the_drivers_model(tmp_path: Path) -> None:
    """On a fresh JVM started as users start it (configure, getOrCreate, enable), the JVM finds
    the driver's model that enable registered and calls it back."""
    path = tmp_path / "lineitem.parquet"
    pq.write_table(_lineitem(), path, row_group_size=20_000)
    script = textwrap.dedent(
        f"""
        import os, sys
        os.environ["PYSPARK_PYTHON"] = sys.executable
        from pyspark.sql import SparkSession
        import lazyscan.spark
        from lazyscan.spark.choose import CostModel
        builder = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
                   .config("spark.driver.extraJavaOptions", {TEST_JVM_OPTIONS!r}))
        spark = lazyscan.spark.configure(builder).getOrCreate()
        lazyscan.spark.enable(spark, costs=CostModel(spark_bytes_per_s=4.9e6, spark_value_s=1e-6))
        choice = spark._jvm.lazyscan.spark.jvm.LazyScanChoice
        relation = spark.read.parquet({str(path)!r})._jdf.queryExecution().analyzed().relation()
        options = spark._jvm.java.util.HashMap()
        for k, v in {{"path": {f"file:{path}"!r}, "where": "`l_comment` = 'needle in the lineitems'",
                     "columns": '["l_orderkey", "l_comment"]', "rawFiles": "true"}}.items():
            options.put(k, v)
        print("REASON", choice.keepSparkReason(spark._jsparkSession, relation, options))
        from lazyscan.spark.decision import verdicts
        for verdict in verdicts(spark):
            print("VERDICT", verdict)
        rows = spark.read.parquet({str(path)!r}).where("l_comment = 'needle in the lineitems'").select("l_orderkey")
        print("ROWS", sorted(r[0] for r in rows.collect()))
        for decision in lazyscan.spark.decisions(spark):
            print("DECISION", decision)
        """
    )
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "REASON None" in done.stdout, done.stdout
    assert ": lazyscan: lazyscan ~" in done.stdout and "by the driver's model" in done.stdout, done.stdout
    needle = pq.read_table(path).filter(pc.field("l_comment") == "needle in the lineitems")
    assert f"ROWS {sorted(needle.column('l_orderkey').to_pylist())}" in done.stdout, done.stdout
    assert needle.num_rows > 0
    # the rule itself ran in the user's JVM: its decision for the query, read with lazyscan
    decisions = [line for line in done.stdout.splitlines() if line.startswith(f"DECISION file:{path}: lazyscan(where: ")]
    assert len(decisions) == 1 and "`l_comment` = 'needle in the lineitems'" in decisions[0], done.stdout


@pytest.fixture(scope="module")
def connect(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A Spark Connect server started with the extension (``spark-defaults.conf`` in
    ``SPARK_CONF_DIR``: spark-submit reads it), and a client session of it."""
    from tests.support.connect import start_connect_server

    folder = tmp_path_factory.mktemp("choice-connect")
    jar = build_jar()
    (folder / "conf").mkdir()
    (folder / "conf" / "spark-defaults.conf").write_text(
        f"spark.jars {jar}\nspark.sql.extensions {EXTENSION_CLASS}\n"
    )
    names = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_CONF_DIR")
    saved = {k: os.environ.get(k) for k in names}
    os.environ["SPARK_CONF_DIR"] = str(folder / "conf")
    server = start_connect_server(folder / "server")
    try:
        client = server.session()
        lazyscan.spark.enable(client, costs=COSTS)
        yield client
        client.stop()
    finally:
        server.stop()
        for k, v in saved.items():  # later modules use the classic session
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.mark.parametrize(("where", "taken"), [(NEEDLE, True), (Q6, False)], ids=["needle", "q6-like"])
def test_connect_server_asks_through_the_planning_call(connect: Any, lineitem: Path, where: str, taken: bool) -> None:
    """On a Spark Connect server the JVM has no Python driver to call back: the model answers in
    a Python worker of the server, with the client's cost model."""
    query = lambda s: s.read.parquet(str(lineitem)).where(where).select("l_orderkey", "l_discount")  # noqa: E731
    on, off = _on_and_off_connect(connect, query)
    assert_same_rows(on, off, where)
    plan = query(connect)._explain_string(extended=True)
    assert ("lazyscan(where:" in plan) == taken, plan
    # enable() named the lazyscan section in the server session's explain providers
    [section] = plan.split("== Extended Information (lazyscan) ==\n")[1:]
    line = section.splitlines()[0]
    if taken:
        assert line.startswith(f"file:{lineitem}: lazyscan(where: "), plan
    else:  # the model's estimate is the reason
        assert line.startswith(f"file:{lineitem}: Spark's reader: ") and "~" in line, plan


def _on_and_off_connect(spark: Any, build: Any) -> tuple[list[Any], list[Any]]:
    """Rows of ``build(spark)`` with the rule on and off (a Connect session's settings)."""
    on = build(spark).collect()
    spark.conf.set(ENABLED_CONF, "false")
    try:
        off = build(spark).collect()
    finally:
        spark.conf.set(ENABLED_CONF, "true")
    return on, off
