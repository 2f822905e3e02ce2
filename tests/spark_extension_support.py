"""Helpers of the transparent-mode tests (``tests/test_spark_extension*.py``): a session with
lazyscan's extension on the shared test SparkContext, a query's rows and optimized plans with
the rule on and off, and what the rule did (its decisions, the lazyscan relations' options).

A context's ``spark.sql.extensions`` cannot change once it runs, so the jar that
:func:`lazyscan.spark.configure` builds is loaded into a class loader of its own and its
extension applied to a new session on the shared context.
"""

from __future__ import annotations

import json
from typing import Any

import lazyscan.spark
from lazyscan.spark.extension import ENABLED_CONF, EXTENSION_CLASS, build_jar
from lazyscan.spark.rule_tasks import enable_tasks

#: the setting of the rule's choice (LazyScanChoice): ``lazyscan`` takes every scan it can
CHOICE_CONF = "spark.lazyscan.choice"

_LOADERS: dict[str, Any] = {}


def rule_loader(shared: Any) -> Any:
    """The class loader of the rule's jar (one per test run, so that the rule's classes, and
    the decisions they keep, are the same for every session of the module)."""
    jar = str(build_jar())
    if jar not in _LOADERS:
        jvm = shared.sparkContext._jvm
        urls = shared.sparkContext._gateway.new_array(jvm.java.net.URL, 1)
        urls[0] = jvm.java.io.File(jar).toURI().toURL()
        _LOADERS[jar] = jvm.java.net.URLClassLoader(urls, jvm.java.lang.Thread.currentThread().getContextClassLoader())
    return _LOADERS[jar]


def extension_session(shared: Any, shared_state: Any = None) -> Any:
    """A session on ``shared``'s SparkContext with lazyscan's extension applied; on the shared
    state (and so the catalog) of ``shared_state``'s session when given."""
    from pyspark.sql import SparkSession

    context = shared.sparkContext
    jvm = context._jvm
    gateway = context._gateway
    loader = rule_loader(shared)
    extension_class = loader.loadClass(EXTENSION_CLASS)
    extension = extension_class.getDeclaredConstructor(gateway.new_array(jvm.java.lang.Class, 0)).newInstance(
        gateway.new_array(jvm.java.lang.Object, 0)
    )
    extensions = jvm.org.apache.spark.sql.SparkSessionExtensions()
    extension.apply(extensions)
    options = jvm.java.util.HashMap()
    options.put("spark.sql.extensions", EXTENSION_CLASS)  # what enable() checks
    to_map = jvm.org.apache.spark.api.python.PythonUtils.toScalaMap
    none = jvm.scala.Option.empty()
    state = none if shared_state is None else jvm.scala.Option.apply(shared_state._jsparkSession.sharedState())
    java_class = SparkSession._get_j_spark_session_class(jvm)
    session = SparkSession(
        context,
        jsparkSession=java_class(context._jsc.sc(), state, none, extensions, to_map(options),
                                 to_map(jvm.java.util.HashMap())),
    )
    if shared_state is not None:  # the shared state's static settings win over the options
        session._jsparkSession.sessionState().conf().setConfString("spark.sql.extensions", EXTENSION_CLASS)
    session.conf.set(ENABLED_CONF, "true")
    session.conf.set(CHOICE_CONF, "lazyscan")  # every scan the rule can take: its reach, not the model
    java_class.setActiveSession(session._jsparkSession)
    try:
        lazyscan.spark.enable(session)
        # enable() finds the planner's JVM class on the driver's class path; here it is the loader's
        enable_tasks(session, lazyscan.spark.register(session), loader.loadClass("lazyscan.spark.jvm.LazyScanTasks"))
    finally:
        java_class.setActiveSession(shared._jsparkSession)
    return session


def optimized_plan(df: Any) -> str:
    return str(df._jdf.queryExecution().optimizedPlan().toString())


def _call_static(session: Any, class_name: str, method: str, parameter_class: Any, argument: Any) -> Any:
    """``class_name.method(argument)``, a static method of one parameter of the rule's jar
    (loaded by :func:`rule_loader`)."""
    gateway = session.sparkContext._gateway
    jvm = session.sparkContext._jvm
    loaded = rule_loader(session).loadClass(class_name)
    types = gateway.new_array(jvm.java.lang.Class, 1)
    types[0] = parameter_class
    args = gateway.new_array(jvm.java.lang.Object, 1)
    args[0] = argument
    return loaded.getMethod(method, types).invoke(None, args)


def rule_decisions(session: Any) -> list[str]:
    """The rule's latest decisions in ``session`` (``LazyScanRule.decisions``)."""
    jsession = session._jsparkSession
    # the parameter is org.apache.spark.sql.SparkSession, the classic session's superclass
    decided = _call_static(session, "lazyscan.spark.jvm.LazyScanRule", "decisions", jsession.getClass().getSuperclass(), jsession)
    return [str(d) for d in decided]


def explain_section(df: Any) -> list[str]:
    """The lines of the ``lazyscan`` section ``explain()`` shows for ``df``
    (``LazyScanExplain`` over its executed plan; the test sessions load the rule's jar in a
    class loader of their own, which Spark's ``spark.sql.extendedExplainProviders`` cannot
    see)."""
    session = df.sparkSession
    gateway = session.sparkContext._gateway
    jvm = session.sparkContext._jvm
    generator_class = rule_loader(session).loadClass("lazyscan.spark.jvm.LazyScanExplain")
    generator = generator_class.getDeclaredConstructor(gateway.new_array(jvm.java.lang.Class, 0)).newInstance(
        gateway.new_array(jvm.java.lang.Object, 0)
    )
    return str(generator.generateExtendedInfo(df._jdf.queryExecution().executedPlan())).splitlines()


def scan_options(df: Any) -> list[dict[str, str]]:
    """The data source options of each lazyscan scan of ``df``'s optimized plan (either route;
    subqueries left out), by ``LazyScanTasks.scanOptions``."""
    session = df.sparkSession
    plan_class = session.sparkContext._jvm.java.lang.Class.forName("org.apache.spark.sql.catalyst.plans.logical.LogicalPlan")
    found = _call_static(session, "lazyscan.spark.jvm.LazyScanTasks", "scanOptions", plan_class,
                         df._jdf.queryExecution().optimizedPlan())
    return [json.loads(str(o)) for o in found]


def scan_routes(df: Any) -> list[str]:
    """``tasks`` or ``source`` for each lazyscan scan of ``df``'s optimized plan, in plan order."""
    plan = optimized_plan(df)
    return ["tasks" if line.lstrip(":+- ").startswith("MapInArrow lazyscan(") else "source"
            for line in plan.splitlines() if "lazyscan(where:" in line]


def on_and_off(spark: Any, build: Any, *, parquet_pushdown: bool = True) -> tuple[list[Any], list[Any], str, str]:
    """Rows and optimized plans of ``build(spark)`` with the rule on and off.

    ``parquet_pushdown=False``: Spark's reader runs without Parquet filter pushdown, for
    filters on NaN (Spark's reader drops NaN rows that match them, statistics leaving NaN
    out; Spark SQL's own answer, which lazyscan gives, is the one without pushdown: see
    docs/SPARK.md, Notes)."""
    spark.conf.set(ENABLED_CONF, "true")
    on = build(spark)
    on_plan, on_rows = optimized_plan(on), on.collect()
    spark.conf.set(ENABLED_CONF, "false")
    spark.conf.set("spark.sql.parquet.filterPushdown", str(parquet_pushdown).lower())
    try:
        off = build(spark)
        off_plan, off_rows = optimized_plan(off), off.collect()
    finally:
        spark.conf.set(ENABLED_CONF, "true")
        spark.conf.set("spark.sql.parquet.filterPushdown", "true")
    return on_rows, off_rows, on_plan, off_plan
