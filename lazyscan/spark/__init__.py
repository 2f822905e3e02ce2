"""lazyscan.spark: the selective scan inside Spark, as the Python data source ``lazyscan``.

Modules and their roles:

- :mod:`.source` — the data source and its reader (schema, filter pushdown, tasks, reading).
- :mod:`.types` — Spark's type mapping of any format's file (`spark_schema_of`), schema merging, batches in Spark's Arrow schema.
- :mod:`.filters` — Spark's pushed filters as lazyscan predicates.
- :mod:`.planning` — tasks of byte ranges, as Spark's file sources plan them (no footer reads).
- :mod:`.options` — option validation and session defaults.
- :mod:`.profiles` — task profiles back to the driver (accumulator, or a profile folder).
- :mod:`.choose` — :func:`read`: lazyscan or Spark's own reader, whichever is expected faster.
- :mod:`.tasks` — the scan as ``mapInArrow`` over planned tasks (:func:`read`'s default route on
  classic sessions, and the only one before Spark 4.1).
- :mod:`.compat` — what differs between PySpark 3.4-4.3, classic and Connect.
- :mod:`.keys` — :func:`key_filter`: a key filter from a Spark DataFrame (semi-join pushdown).
- :mod:`.workers` — the driver's check that Spark's Python workers can import this lazyscan.
- :mod:`.catalog` — tables of the session catalog: location, format, schema, partitions
  (:func:`read` takes a table's name; :func:`table_options` gives the data source one).
- :mod:`.extension` — :func:`configure` / :func:`enable`: transparent mode, a Catalyst rule (Java,
  ``jvm/``) that reads filtered ``spark.read.parquet`` scans through the data source (Spark 4.1+).
- :mod:`.decision` — the rule's choice per scan, lazyscan or Spark's reader, by :mod:`.choose`'s
  cost model, asked from the JVM through the Python data source ``lazyscanChoice``.
- :mod:`.rule_tasks` — the rule's scan of a one-relation query planned in the driver's Python
  process as :mod:`.tasks`' ``mapInArrow`` tasks (no Python planning worker).
- :mod:`.table_paths` — Delta Lake and Iceberg tables read by path: the snapshot planned once
  on the driver, each task's files carrying their deletes and column mapping.

Usage (the ways that evaluate the filter inside the scan; the data source needs Spark 4.1)::

    import lazyscan.spark
    lazyscan.spark.register(spark)
    # lazyscan or spark.read.parquet, whichever a sample says is faster; needed columns only
    df = lazyscan.spark.read(spark, path, ["a", "b"], "x = 5")
    # the data source with the filter as the ``where`` option and only the needed columns
    df = spark.read.format("lazyscan").schema("a INT, b STRING").option("where", "x = 5").load(path)
    # a Parquet or ORC table of the session catalog, by name
    df = lazyscan.spark.read(spark, "db.events", ["a", "b"], "day = DATE'2024-06-01' AND x = 5")
    df = spark.read.format("lazyscan").options(**lazyscan.spark.table_options(spark, "db.events")).load()
    df.collect()
    print(lazyscan.spark.last_profile().summary())

``spark.read.format("lazyscan").load(path).where("x = 5")`` leaves the filter to Spark on these
releases (see :mod:`.source`; a warning says so), unless pushed filters are enabled with
``register(spark, push_filters=True)`` or the ``pushFilters=true`` option.
"""

from __future__ import annotations

import logging
from typing import Any

from lazyscan.spark.catalog import CatalogTable, resolve_table, table_options
from lazyscan.spark.choose import CostModel, Estimate, Workload, estimate, read
from lazyscan.spark.compat import (
    HAS_PYTHON_DATA_SOURCE,
    conf_value,
    default_parallelism,
    spark_version_text,
)
from lazyscan.spark.extension import configure, decisions, enable
from lazyscan.spark.keys import KeyFilterTooLarge, key_filter
from lazyscan.spark.options import SessionDefaults, parse_size, push_mode
from lazyscan.spark.profiles import (
    ProfileAccumulatorParam,
    last_profile,
    profile_scan_ids,
    read_profile_dir,
    set_accumulator,
)
from lazyscan.spark.source import LazyScanDataSource, LazyScanReader, LazyScanReadError
from lazyscan.spark.workers import check_workers

log = logging.getLogger("lazyscan.spark")

#: the Spark setting without which Spark refuses a Python reader that implements pushFilters
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def session_defaults(spark: Any, push_filters: bool | str = "auto") -> SessionDefaults:
    """Split settings, time zone and ``spark.sql.caseSensitive`` of ``spark``, as the data
    source uses them, and the default of the ``pushFilters`` option."""
    d = SessionDefaults()
    max_bytes = conf_value(spark, "spark.sql.files.maxPartitionBytes")
    open_cost = conf_value(spark, "spark.sql.files.openCostInBytes")
    min_num = conf_value(spark, "spark.sql.files.minPartitionNum")
    max_num = conf_value(spark, "spark.sql.files.maxPartitionNum")
    if min_num is None:
        cores = default_parallelism(spark)
        min_num = None if cores is None else str(cores)
    return SessionDefaults(
        max_partition_bytes=parse_size("maxPartitionBytes", max_bytes) if max_bytes else d.max_partition_bytes,
        open_cost_in_bytes=parse_size("openCostInBytes", open_cost) if open_cost else d.open_cost_in_bytes,
        min_partition_num=int(min_num) if min_num else d.min_partition_num,
        max_partition_num=int(max_num) if max_num else None,
        time_zone=conf_value(spark, "spark.sql.session.timeZone") or d.time_zone,
        push_filters=push_mode(push_filters),
        case_sensitive=(conf_value(spark, "spark.sql.caseSensitive") or "false").strip().lower() == "true",
    )


def register(spark: Any, push_filters: bool | str = "auto") -> type[LazyScanDataSource] | None:
    """Register the data source ``lazyscan`` with ``spark`` and enable Python filter pushdown.

    On Spark before 4.1 (no Python data source with pushed filters) nothing is registered and
    None is returned: :func:`read` runs the scan through ``mapInArrow`` there
    (:mod:`.tasks`), with the accumulator created here for :func:`last_profile`.

    Snapshots ``spark.sql.files.maxPartitionBytes`` / ``openCostInBytes`` / ``minPartitionNum``
    (default: the default parallelism) / ``maxPartitionNum`` and the session time zone as option
    defaults, and creates the accumulator behind :func:`last_profile` (classic sessions; Spark
    Connect has none: use the ``profileDir`` option). Call again after changing those settings.

    The fast routes on Spark 4.1-4.3 hand lazyscan the filter and the needed columns:
    :func:`read` (which also picks Spark's own reader when that is faster), or
    ``spark.read.format("lazyscan").schema(columns).option("where", filter).load(path)``.
    A filter written as ``.load(path).where(...)`` is offered to the source by Spark, but by
    default (``push_filters="auto"``) lazyscan uses such pushed filters only on a Spark that
    keeps read plans per scan; on 4.1-4.3 the filter stays in Spark and a warning names it.

    ``push_filters``: the session default of the ``pushFilters`` option (``"auto"``, ``True``,
    ``False``; a read's own option overrides it). ``True`` makes ``.load(path).where(...)``
    filter inside the scan, and accepts the shared-plan limit of Spark 4.1-4.3: there the plan
    made while pushing filters (read function and tasks) is stored on the data source instance,
    which every scan of one DataFrame (or view) shares, so

    - the same DataFrame scanned twice with different filters in one query (a self-join, a
      union of two filtered copies) reads both scans with one scan's filters, and
    - a DataFrame reused without a filter after a filtered query (``df.where(f).count()`` then
      ``df.count()``) can read with the earlier query's filter,

    and both return wrong rows. Safe: one filtered scan per DataFrame per query, a fresh
    DataFrame (``spark.read.format("lazyscan")...load(path)``) for each query or each side of
    a join. ``False`` keeps every filter in Spark without the warning.

    On a local master, raises :class:`~lazyscan.errors.OptionError` when Spark's Python workers
    would start an interpreter without this lazyscan, naming it and the fix (see
    :mod:`.workers`; ``spark.lazyscan.checkWorkers=false`` turns the check off).
    """
    check_workers(spark)
    accumulator = None
    try:
        accumulator = spark.sparkContext.accumulator({}, ProfileAccumulatorParam())
    except Exception as e:
        log.info("no accumulator for lazyscan profiles (%s); use the profileDir option", e)
    if accumulator is not None:  # a Connect session keeps a classic session's accumulator in place
        set_accumulator(accumulator)
    if not HAS_PYTHON_DATA_SOURCE:
        log.info("Spark %s has no Python data source with filter pushdown: lazyscan.spark.read "
                 "scans through mapInArrow", spark_version_text())
        return None
    spark.conf.set(PUSHDOWN_CONF, "true")
    cls = type(
        "LazyScanDataSource",
        (LazyScanDataSource,),
        {
            "__module__": LazyScanDataSource.__module__,
            "__qualname__": "RegisteredLazyScanDataSource",
            "__doc__": LazyScanDataSource.__doc__,
            "session_defaults": session_defaults(spark, push_filters),
            "profile_accumulator": accumulator,
        },
    )
    spark.dataSource.register(cls)
    return cls


__all__ = [
    "PUSHDOWN_CONF",
    "CatalogTable",
    "CostModel",
    "Estimate",
    "KeyFilterTooLarge",
    "LazyScanDataSource",
    "LazyScanReadError",
    "LazyScanReader",
    "Workload",
    "configure",
    "decisions",
    "enable",
    "estimate",
    "key_filter",
    "last_profile",
    "profile_scan_ids",
    "read",
    "read_profile_dir",
    "register",
    "resolve_table",
    "session_defaults",
    "table_options",
]
