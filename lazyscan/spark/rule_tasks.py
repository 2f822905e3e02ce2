"""The transparent mode's tasks route: a scan the rule takes, planned in the driver's Python
process as ``mapInArrow`` tasks (classic sessions).

For a query that reads one relation, the rule (``LazyScanTasks`` in ``jvm/``) calls back
:class:`DriverPlanner`, which :func:`lazyscan.spark.enable` registers with the session, with the
``lazyscan`` data source options and the schema it would load the data source with. The planner
builds that source's reader here and returns the DataFrame of its tasks (:mod:`.tasks`), whose
plan the rule puts in place of the relation. The rows, filter, errors and profiles are the data
source's; what changes is that Spark starts no Python planning worker for the scan (the data
source is planned in two, each importing lazyscan, which Spark stops after a minute idle).

Joins keep the data source route (Spark plans them by the relation's size, which an RDD of
tasks lacks), as do Spark Connect servers (no driver Python) and sessions with
``spark.lazyscan.scanRoute=source``.
"""

from __future__ import annotations

import json
import logging
from typing import Any, ClassVar

from pyspark.sql.types import StructType

log = logging.getLogger("lazyscan.spark")

#: the session setting choosing the route of the scans the rule takes (``LazyScanTasks.ROUTE``)
ROUTE_CONF = "spark.lazyscan.scanRoute"


class DriverPlanner:
    """Plans the rule's scans in the driver's Python process: a request (JSON: the data source
    ``options``, the Spark ``schema`` to read and the scan's ``name``) in, the JVM Dataset of
    the scan's ``mapInArrow`` tasks out. ``source_class`` is the registered ``lazyscan`` data
    source (its session defaults and profile accumulator)."""

    def __init__(self, spark: Any, source_class: type) -> None:
        self.spark = spark
        self.source_class = source_class

    def apply(self, request: str) -> Any:
        from lazyscan.spark.tasks import tasks_frame

        asked = json.loads(request)
        source = self.source_class(asked["options"])
        reader = source.reader(StructType.fromJson(asked["schema"]))
        frame = tasks_frame(self.spark, reader, name=asked.get("name"))
        return frame._jdf

    class Java:
        implements: ClassVar[list[str]] = ["java.util.function.Function"]


def enable_tasks(spark: Any, source_class: type | None, tasks_class: Any = None) -> bool:
    """Register :class:`DriverPlanner` with the classic session ``spark`` (``tasks_class``:
    the JVM class ``LazyScanTasks``, default the one ``spark.jars`` loaded); False where the
    scans keep the data source route."""
    from lazyscan.spark.compat import is_connect, register_driver_callback

    if source_class is None or is_connect(spark):
        return False
    planner = DriverPlanner(spark, source_class)
    if not register_driver_callback(spark, "lazyscan.spark.jvm.LazyScanTasks", planner, tasks_class):
        log.info("lazyscan: LazyScanTasks is not on the driver's class path: scans take the data source route")
        return False
    return True


__all__ = ["ROUTE_CONF", "DriverPlanner", "enable_tasks"]
