"""What differs between the PySpark releases lazyscan runs on (3.4 to 4.3, classic and Connect).

- The Python data source API (:mod:`pyspark.sql.datasource` with pushed filters) exists from
  Spark 4.1 on. Older releases get stand-in classes with the same names, so that the modules
  built on it import everywhere; :data:`HAS_PYTHON_DATA_SOURCE` says which one is loaded. There
  :func:`lazyscan.spark.read` runs the scan with ``mapInArrow`` (:mod:`lazyscan.spark.tasks`).
- ``to_arrow_type`` / ``to_arrow_schema`` took a time zone and ``prefers_large_types`` from 4.0
  on; 3.x always maps ``TIMESTAMP`` to UTC microseconds, as lazyscan needs.
- Spark Connect sessions have no ``sparkContext`` (no accumulators, no default parallelism).
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

import pyarrow as pa

if TYPE_CHECKING:
    from pyspark.sql.datasource import (
        DataSource,
        DataSourceReader,
        EqualNullSafe,
        EqualTo,
        Filter,
        GreaterThan,
        GreaterThanOrEqual,
        In,
        InputPartition,
        IsNotNull,
        IsNull,
        LessThan,
        LessThanOrEqual,
        Not,
        StringContains,
        StringEndsWith,
        StringStartsWith,
    )

    HAS_PYTHON_DATA_SOURCE = True
else:
    try:
        from pyspark.sql.datasource import (
            DataSource,
            DataSourceReader,
            EqualNullSafe,
            EqualTo,
            Filter,
            GreaterThan,
            GreaterThanOrEqual,
            In,
            InputPartition,
            IsNotNull,
            IsNull,
            LessThan,
            LessThanOrEqual,
            Not,
            StringContains,
            StringEndsWith,
            StringStartsWith,
        )

        HAS_PYTHON_DATA_SOURCE = True
    except ImportError:  # Spark before 4.1: no data source with pushed filters
        HAS_PYTHON_DATA_SOURCE = False

        class InputPartition:
            def __init__(self, value: Any) -> None:
                self.value = value

        class DataSource:
            def __init__(self, options: dict[str, str]) -> None:
                self.options = options

        class DataSourceReader:
            pass

        class Filter:
            pass

        class EqualTo(Filter):
            pass

        class EqualNullSafe(Filter):
            pass

        class GreaterThan(Filter):
            pass

        class GreaterThanOrEqual(Filter):
            pass

        class LessThan(Filter):
            pass

        class LessThanOrEqual(Filter):
            pass

        class In(Filter):
            pass

        class IsNull(Filter):
            pass

        class IsNotNull(Filter):
            pass

        class Not(Filter):
            pass

        class StringStartsWith(Filter):
            pass

        class StringEndsWith(Filter):
            pass

        class StringContains(Filter):
            pass


def spark_version() -> tuple[int, int]:
    """(major, minor) of the installed PySpark."""
    import pyspark

    major, minor = re.match(r"(\d+)\.(\d+)", pyspark.__version__).groups()  # type: ignore[union-attr]
    return int(major), int(minor)


def spark_version_text() -> str:
    """The installed PySpark's version."""
    import pyspark

    return str(pyspark.__version__)


def to_arrow_type(data_type: Any) -> pa.DataType:
    """The Arrow type Spark exchanges for ``data_type`` (TIMESTAMP in UTC, no large types)."""
    from pyspark.sql.pandas.types import to_arrow_type as convert

    try:
        return convert(data_type, timezone="UTC", prefers_large_types=False)
    except TypeError:  # PySpark 3.x: one argument, TIMESTAMP always UTC
        return convert(data_type)


def to_arrow_schema(schema: Any) -> pa.Schema:
    """The Arrow schema Spark exchanges for a ``StructType`` (TIMESTAMP in UTC)."""
    from pyspark.sql.pandas.types import to_arrow_schema as convert

    try:
        return convert(schema, timezone="UTC", prefers_large_types=False)
    except TypeError:
        return convert(schema)


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def conf_value(spark: Any, key: str) -> str | None:
    """A Spark setting of ``spark``, None when unset or empty (or unreadable)."""
    try:
        value = spark.conf.get(key, None)
    except Exception:
        return None
    return None if value in (None, "") else str(value)


def register_driver_callback(spark: Any, class_name: str, callback: Any, jvm_class: Any = None) -> bool:
    """Register ``callback`` (a Python object implementing a Java interface) with the classic
    session ``spark`` through the static ``register(session, callback)`` of the JVM class
    ``class_name``: the one ``spark.jars`` put on the driver's class path, or ``jvm_class`` (the
    class loaded some other way). False when the driver's class path has no such class."""
    from py4j.java_gateway import JavaClass
    from pyspark.java_gateway import ensure_callback_server_started

    context = spark.sparkContext
    if jvm_class is None:
        found = context._jvm
        for part in class_name.split("."):
            found = getattr(found, part)
        if not isinstance(found, JavaClass):  # the jar is not on the driver's class path
            return False
        ensure_callback_server_started(context._gateway)
        found.register(spark._jsparkSession, callback)
        return True
    ensure_callback_server_started(context._gateway)
    register = next(m for m in jvm_class.getMethods() if m.getName() == "register")
    args = context._jvm.java.util.ArrayList()  # a Java array cannot take a Python object
    args.add(spark._jsparkSession)
    args.add(callback)
    register.invoke(None, args.toArray())
    return True


def default_parallelism(spark: Any) -> int | None:
    """The cores Spark runs tasks on: ``sparkContext.defaultParallelism`` on classic sessions;
    on Connect ``spark.default.parallelism``, the ``local[N]`` master, or executors x cores
    from the settings; None when none of them says."""
    try:
        return max(1, int(spark.sparkContext.defaultParallelism))
    except Exception:
        pass
    value = conf_value(spark, "spark.default.parallelism")
    if value and value.isdigit():
        return max(1, int(value))
    master = conf_value(spark, "spark.master") or ""
    m = re.fullmatch(r"local(?:\[(\d+|\*)(?:,\s*\d+)?\])?", master.strip())
    if m:
        n = m.group(1)
        return (os.cpu_count() or 1) if n == "*" else int(n or 1)
    executors, cores = conf_value(spark, "spark.executor.instances"), conf_value(spark, "spark.executor.cores")
    if executors and cores and executors.isdigit() and cores.isdigit():
        return max(1, int(executors) * int(cores))
    return None


__all__ = [
    "HAS_PYTHON_DATA_SOURCE",
    "DataSource",
    "DataSourceReader",
    "EqualNullSafe",
    "EqualTo",
    "Filter",
    "GreaterThan",
    "GreaterThanOrEqual",
    "In",
    "InputPartition",
    "IsNotNull",
    "IsNull",
    "LessThan",
    "LessThanOrEqual",
    "Not",
    "StringContains",
    "StringEndsWith",
    "StringStartsWith",
    "conf_value",
    "default_parallelism",
    "is_connect",
    "register_driver_callback",
    "spark_version",
    "spark_version_text",
    "to_arrow_schema",
    "to_arrow_type",
]
