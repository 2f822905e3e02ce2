"""Transparent mode's choice per scan: lazyscan or Spark's reader, by :mod:`.choose`'s cost model.

The rule (``jvm/LazyScanRule.java``) asks ``jvm/LazyScanChoice.java`` about each scan it could
take over, with the options it gives the ``lazyscan`` data source (files or table, ``where``,
the needed ``columns``), the session's cores and the number of relations the query reads (a
scan of a larger query must be expected to save more: :func:`in_query`). That class asks the
cost model of :func:`lazyscan.spark.read` (one model, in Python: :func:`decide_options`) on one
of two routes:

- **the driver's model** (classic sessions): :func:`enable_choice` registers a
  :class:`DriverModel` with the session's JVM, which calls it back through Py4J's callback
  server (started on the way). The model runs in the driver's Python process, warm after its
  first decision.
- **the planning call** (a Spark Connect server, whose JVM has no Python driver to call back,
  or ``spark.lazyscan.choiceRoute=source``): the JVM loads ``format("lazyscanChoice")`` with
  those options and no schema, so Spark calls :meth:`LazyScanChoiceSource.schema` in a Python
  worker, which answers in the metadata of its one field. Nothing is read through the source.
  The Connect client's :func:`~lazyscan.spark.enable` registers the source with the server's
  session.

Measured on ``local[2]`` (TPC-H SF1 lineitem, Q6 and a needle filter, a 2-core machine loaded
about seven times over): besides the model itself (median 190-260 ms: listing, footer, two to
four sampled row groups), the callback costs a median 1-7 ms and the planning call 23-26 ms
(up to 500 ms). The first decision in a process loads the compiled kernels the sample runs
(about 2 s in the driver); a new Python worker also imports lazyscan (3-11 s). The JVM keeps
each decision per session, options and file listing, so a query planned twice (``explain()``,
then an action) asks once; a kept decision for Spark's reader adds about 10-15 ms to planning.

A decision that fails (the source not registered, a worker that cannot import lazyscan, an
error in the model, a driver that stopped answering) keeps Spark's reader with the reason
logged on the driver; it is not kept, so the next query asks again.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import replace
from typing import Any, ClassVar

from pyspark.sql.types import StringType, StructField, StructType

from lazyscan.errors import OptionError
from lazyscan.spark.choose import CostModel, Estimate, estimate_source
from lazyscan.spark.compat import DataSource
from lazyscan.spark.options import SessionDefaults
from lazyscan.spark.source import COLUMNS_OPTION, parse_columns

log = logging.getLogger("lazyscan.spark")

#: the name the choice source is registered under (``LazyScanChoice.SOURCE`` in Java)
CHOICE_SOURCE = "lazyscanChoice"
#: the one field of its schema, whose metadata holds the verdict
VERDICT_FIELD = "lazyscan_choice"
#: the option with the session's cores (``spark.sparkContext.defaultParallelism``)
CORES_OPTION = "cores"
#: the option with the number of relations the query reads (its subqueries included)
QUERY_SCANS_OPTION = "queryScans"
#: the session setting: ``auto`` (the cost model decides) or ``lazyscan`` (every scan the rule
#: can take, as before the cost model)
CHOICE_CONF = "spark.lazyscan.choice"


def decide_options(
    options: dict[str, str], defaults: SessionDefaults, costs: CostModel | None = None
) -> Estimate:
    """The cost model's estimate of the ``lazyscan`` read with data source ``options`` (with
    ``where``, ``columns`` and ``cores``), for a session with settings ``defaults``."""
    rest = {str(k): str(v) for k, v in options.items()}
    lowered = {k.lower(): k for k in rest}
    where = rest.pop(lowered["where"]) if "where" in lowered else None
    columns = parse_columns(rest.pop(lowered[COLUMNS_OPTION])) if COLUMNS_OPTION in lowered else None
    cores = _whole_number(rest, lowered, CORES_OPTION)
    query_scans = _whole_number(rest, lowered, QUERY_SCANS_OPTION)
    costs = costs or CostModel()
    est = estimate_source(rest, columns, where, defaults=defaults, cores=cores, costs=costs)
    return in_query(est, query_scans, costs)


def _whole_number(options: dict[str, str], lowered: dict[str, str], name: str) -> int:
    text = options.pop(lowered[name.lower()]) if name.lower() in lowered else "1"
    try:
        return max(1, int(text))
    except ValueError:
        raise OptionError(f"option {name!r} must be a whole number, got {text!r}") from None


def in_query(est: Estimate, query_scans: int, costs: CostModel) -> Estimate:
    """``est`` for a scan of a query reading ``query_scans`` relations: inside a larger query
    lazyscan must be expected to save at least ``costs.query_min_saving_s``, or Spark's reader
    is kept (see :class:`~lazyscan.spark.choose.CostModel`)."""
    if query_scans <= 1 or not est.use_lazyscan or est.lazyscan_seconds is None or est.spark_seconds is None:
        return est
    saving = est.spark_seconds - est.lazyscan_seconds
    if saving >= costs.query_min_saving_s:
        return est
    return replace(
        est,
        use_lazyscan=False,
        reason=f"expected to save ~{saving:.2f} s, under the {costs.query_min_saving_s:.2f} s a scan of a query "
        f"reading {query_scans} relations must save ({est.reason})",
    )


def verdict_metadata(options: dict[str, str], defaults: SessionDefaults, costs: CostModel | None) -> dict[str, Any]:
    """The metadata of the verdict field: ``useLazyscan``, ``reason`` and ``seconds`` (the time
    the model took: listing, footers, sample), or ``error`` when the model could not decide."""
    started = time.perf_counter()
    try:
        est = decide_options(options, defaults, costs)
    except Exception as e:  # any failure keeps Spark's reader; the JVM logs the text
        return {"error": f"{type(e).__name__}: {e}"}
    seconds = round(time.perf_counter() - started, 6)
    return {"useLazyscan": est.use_lazyscan, "reason": est.reason, "seconds": seconds}


class LazyScanChoiceSource(DataSource):
    """Data source ``lazyscanChoice``: its schema is the cost model's verdict on a ``lazyscan``
    read (see the module docs); it reads nothing. Registered by :func:`register_choice`."""

    session_defaults: ClassVar[SessionDefaults] = SessionDefaults()
    costs: ClassVar[CostModel | None] = None

    @classmethod
    def name(cls) -> str:
        return CHOICE_SOURCE

    def schema(self) -> StructType:
        meta = verdict_metadata(dict(self.options), self.session_defaults, self.costs)
        return StructType([StructField(VERDICT_FIELD, StringType(), True, meta)])

    def reader(self, schema: StructType) -> Any:
        raise OptionError(
            f"the {CHOICE_SOURCE} data source only answers lazyscan's transparent mode which reader "
            "to use; read with format('lazyscan')"
        )


class DriverModel:
    """The cost model in the driver's Python process, as the JVM calls it back: options as a
    JSON object in, the verdict (:func:`verdict_metadata`) as one out."""

    def __init__(self, defaults: SessionDefaults, costs: CostModel | None = None) -> None:
        self.defaults = defaults
        self.costs = costs

    def apply(self, options_json: str) -> str:
        try:
            options = json.loads(options_json)
        except ValueError as e:
            return json.dumps({"error": f"options are no JSON object: {e}"})
        return json.dumps(verdict_metadata(options, self.defaults, self.costs))

    class Java:
        implements: ClassVar[list[str]] = ["java.util.function.Function"]


def enable_choice(spark: Any, costs: CostModel | None = None, choice_class: Any = None) -> None:
    """Register the cost model with ``spark`` on both routes: the ``lazyscanChoice`` source,
    and on a classic session the driver's model (``choice_class``: the JVM class
    ``LazyScanChoice``, default the one ``spark.jars`` loaded)."""
    from lazyscan.spark import session_defaults
    from lazyscan.spark.compat import is_connect, register_driver_callback

    register_choice(spark, costs)
    if is_connect(spark):
        return
    model = DriverModel(session_defaults(spark), costs)
    if not register_driver_callback(spark, "lazyscan.spark.jvm.LazyScanChoice", model, choice_class):
        log.info("lazyscan: LazyScanChoice is not on the driver's class path: the rule asks the "
                 "cost model through the %s data source", CHOICE_SOURCE)


def register_choice(spark: Any, costs: CostModel | None = None) -> type[LazyScanChoiceSource]:
    """Register ``lazyscanChoice`` with ``spark``, carrying the session's settings (as
    :func:`lazyscan.spark.register` snapshots them for ``lazyscan``) and ``costs`` (default:
    :class:`~lazyscan.spark.choose.CostModel`)."""
    from lazyscan.spark import session_defaults

    cls = type(
        "LazyScanChoiceSource",
        (LazyScanChoiceSource,),
        {
            "__module__": LazyScanChoiceSource.__module__,
            # a name the module does not define: the class travels by value, with its settings
            "__qualname__": "RegisteredLazyScanChoiceSource",
            "__doc__": LazyScanChoiceSource.__doc__,
            "session_defaults": session_defaults(spark),
            "costs": costs,
        },
    )
    spark.dataSource.register(cls)
    return cls


def verdicts(spark: Any) -> list[str]:
    """The decisions kept for ``spark`` (classic sessions): one line per scan and options."""
    jvm = spark.sparkContext._jvm
    return list(jvm.lazyscan.spark.jvm.LazyScanChoice.verdicts(spark._jsparkSession))


__all__ = [
    "CHOICE_CONF",
    "CHOICE_SOURCE",
    "DriverModel",
    "LazyScanChoiceSource",
    "decide_options",
    "enable_choice",
    "register_choice",
    "verdict_metadata",
    "verdicts",
]
