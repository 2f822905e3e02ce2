"""The selective scan as ``mapInArrow`` over a DataFrame of tasks.

This route runs lazyscan where Spark offers no usable Python data source (Spark 3.4 to 4.0,
and Spark Connect clients of those releases), and it is the second route on Spark 4.1-4.3,
which :func:`lazyscan.spark.read` picks when it is faster (see :mod:`.choose`).

The driver plans the tasks exactly as the data source does (:mod:`.planning`: byte ranges of
files, partition pruning, no footer reads). Spark then runs a DataFrame of ``n`` partitions
holding one row each, the task's number, through ``mapInArrow``: each Python worker runs the
scan of its task with the data source's own reader code (:meth:`LazyScanReader.read_task`: same
options, same filter, same errors) and yields batches in the Arrow schema of the declared Spark
schema. The plan (reader and tasks) travels inside the function Spark pickles for the tasks.

On classic sessions the task numbers come from an RDD of the JVM (``spark.range``'s rows turned
into a DataFrame over their RDD, with no Python stage), whose size Spark's planner does not know
(it assumes ``spark.sql.defaultSizeInBytes``, as for a Python data source): built from
``spark.range`` directly, the scan would look a few bytes large and Spark could broadcast it,
whatever it returns, in a join. Spark Connect has no RDDs: there the numbers come from ``spark.range``,
and a join may broadcast the result (on Connect to Spark 4.1 or later, ``read`` takes the data
source route by default).

Profiles arrive as with the data source: through the accumulator that
:func:`lazyscan.spark.register` created (classic sessions; :func:`lazyscan.spark.last_profile`)
and through the ``profileDir`` option (any session, Connect included).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.types import StructType

from lazyscan.errors import UnsupportedFeatureError
from lazyscan.spark.compat import is_connect, spark_version_text, to_arrow_type
from lazyscan.spark.planning import ScanTask

log = logging.getLogger("lazyscan.spark")


class TaskRunner:
    """The function ``mapInArrow`` runs: scans the tasks whose numbers arrive in its batches."""

    def __init__(self, reader: Any, tasks: Sequence[ScanTask], name: str | None = None) -> None:
        self.reader = reader.for_tasks()  # the tasks carry their files
        self.tasks = tuple(tasks)
        #: how Spark's plans name the function (PySpark takes a function's ``__name__``)
        self.__name__ = name or type(self).__name__

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for index in batch.column(0).to_pylist():
                yield from self.reader.read_task(self.tasks[index])


def tasks_frame(spark: Any, reader: Any, name: str | None = None) -> Any:
    """The DataFrame of ``reader``'s scan (a :class:`LazyScanReader` with its filter set):
    one Spark task per planned :class:`ScanTask`, each scanning in a Python worker; ``name``
    names the scan in Spark's plans (default ``TaskRunner``)."""
    schema: StructType = reader.schema
    check_output_types(schema)
    tasks = reader.partitions()
    log.info("lazyscan %s: %d tasks through mapInArrow", reader.scan_id, len(tasks))
    if not tasks:
        return spark.createDataFrame([], schema)
    return task_numbers(spark, len(tasks)).mapInArrow(TaskRunner(reader, tasks, name), schema)


def check_output_types(schema: StructType) -> None:
    """Refuse, naming the column, an output type this PySpark cannot return from mapInArrow
    (PySpark 3.4 refuses struct columns: "Nested StructType not supported")."""
    for f in schema.fields:
        try:
            to_arrow_type(StructType([f]))
        except (TypeError, NotImplementedError) as e:
            raise UnsupportedFeatureError(
                f"PySpark {spark_version_text()} cannot return column {f.name!r} "
                f"({f.dataType.simpleString()}) from mapInArrow ({e}): leave it out of the columns, "
                "or use PySpark 3.5 or later"
            ) from None


def task_numbers(spark: Any, n: int) -> Any:
    """A DataFrame of ``n`` partitions, partition ``i`` holding the one row ``i``."""
    if is_connect(spark):
        return spark.range(n, numPartitions=n)
    from pyspark.sql import DataFrame

    rows = spark._jsparkSession.range(0, n, 1, n).toDF()
    return DataFrame(spark._jsparkSession.createDataFrame(rows.javaRDD(), rows.schema()), spark)


__all__ = ["TaskRunner", "check_output_types", "task_numbers", "tasks_frame"]
