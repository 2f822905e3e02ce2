"""Delta Lake and Apache Iceberg tables read by path in Spark, planned once on the driver.

A source that is one table's folder (a Delta log at its root; an Iceberg table's ``metadata``
folder, or its metadata JSON file) is planned with :mod:`lazyscan.tables` where the driver
lists files (:func:`lazyscan.spark.read`, or the data source's schema): the snapshot's data
files, each carrying its :class:`~lazyscan.tables.plan.FileRead` (the columns by logical name
and where each file keeps them: physical name or field id; partition values; the deleted row
positions of deletion vectors and position deletes; equality deletes). The planned tasks carry
them in their byte ranges, so no task replays the log or reads a manifest. The columns are the
table's logical ones, typed as Spark types the Arrow types of the snapshot's schema.

A Delta table on an object store is found as the scan finds it: its listing shows the log,
which ``deltalake`` reads with the ``storage.<name>`` options (its storage options). An Iceberg
table on an object store (its folder, whose listing shows ``metadata/``, or a metadata JSON
file) is planned by pyiceberg reading its metadata, manifests and delete files through the
object store's filesystem of the ``fs.<name>`` options, the one the tasks read data files with.

Time travel: the options ``version`` and ``timestamp`` (a Delta version or an Iceberg snapshot
id; RFC 3339 text, or for Iceberg also epoch milliseconds). ``reroot``: an Iceberg table copied
from another location (its metadata names the old one) is read where it is now, old prefix ->
new location, as the scan's ``reroot=``. ``rawFiles=true`` reads the folder's files as they are
instead, on purpose.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from typing import Any

import pyarrow as pa
from pyspark.sql.types import StructField, StructType

from lazyscan.errors import OptionError, TableFolderError
from lazyscan.scan.dataset import table_at
from lazyscan.scan.table_source import (
    plan_table,
    refuse_table_options,
    remote_delta_uri,
    table_tasks,
)
from lazyscan.spark.options import SourceSettings
from lazyscan.spark.types import spark_type_of
from lazyscan.tables.plan import PlannedTable

_ICEBERG_METADATA_FILE = re.compile(r".*\.metadata\.json(\.gz)?$")


def time_travel(settings: SourceSettings) -> dict[str, Any]:
    """The table options of the source: ``version``, ``timestamp`` as text, and ``reroot``."""
    given: dict[str, Any] = {}
    if settings.version is not None:
        given["version"] = settings.version
    if settings.timestamp is not None:
        given["timestamp"] = settings.timestamp.strip()
    if settings.reroot:
        given["reroot"] = dict(settings.reroot)
    return given


def _parsed_timestamp(plan_kind: str, text: str) -> Any:
    """A ``timestamp`` option as the planner of ``plan_kind`` takes it: Delta, RFC 3339 text;
    Iceberg, epoch milliseconds (digits) or a datetime."""
    if plan_kind != "iceberg":
        return text
    if text.isdigit():
        return int(text)
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise OptionError(f"option 'timestamp' expects RFC 3339 text or epoch milliseconds, got {text!r}") from None


def local_table(settings: SourceSettings) -> PlannedTable | None:
    """The planned snapshot of the local table the source's one path is (or of the Iceberg
    table whose metadata JSON file on an object store it names), or None (more than one path,
    another path on an object store, no table, or ``rawFiles``)."""
    raw = bool(settings.scan_kwargs.get("raw_files", False))
    given = time_travel(settings)
    fs, path = settings.filesystem.open(settings.paths[0])
    kind = None
    if len(settings.paths) == 1 and not raw:
        if fs is not None:
            if _ICEBERG_METADATA_FILE.fullmatch(path.rstrip("/").rsplit("/", 1)[-1]):
                return remote_iceberg(settings, fs)
        elif os.path.isdir(path):
            found = table_at(path)
            kind = None if found is None else found.kind
        elif os.path.isfile(path) and _ICEBERG_METADATA_FILE.fullmatch(os.path.basename(path)):
            kind = "iceberg"
    if kind is None:
        if given and (fs is None or raw):
            refuse_table_options(", ".join(settings.paths), given)
        return None
    if "timestamp" in given:
        given["timestamp"] = _parsed_timestamp(kind, given["timestamp"])
    return plan_table(kind, path, given)


def remote_table(settings: SourceSettings, refused: TableFolderError) -> PlannedTable | None:
    """The Delta Lake or Iceberg table on an object store whose folder the listing refused as a
    table's, planned; None for any other refusal (a path inside a table, a folder holding one)."""
    fs, path = settings.filesystem.open(settings.paths[0])
    if refused.kind == "iceberg" and refused.root is not None and refused.root.rstrip("/") == path.rstrip("/"):
        return remote_iceberg(settings, fs)
    uri = remote_delta_uri(settings.paths[0], refused, fs)
    if uri is None:
        return None
    given = time_travel(settings)
    if settings.storage_options:
        given["storage_options"] = dict(settings.storage_options)
    return plan_table("delta", uri, given, fs)


def remote_iceberg(settings: SourceSettings, filesystem: Any) -> PlannedTable:
    """The Iceberg table on an object store the source's path is (its folder or a metadata JSON
    file), planned on the driver: pyiceberg reads the metadata, manifests and delete files
    through ``filesystem``, the object store's filesystem of the ``fs.*`` options, which the
    tasks read the data files through."""
    from lazyscan.tables.iceberg import plan_iceberg

    if settings.storage_options:
        raise OptionError(
            f"storage.{settings.storage_options[0][0]}: deltalake's options for a Delta Lake table; "
            f"{settings.paths[0]} is an Iceberg table, read through the fs.<name> options"
        )
    given = time_travel(settings)
    as_of = _parsed_timestamp("iceberg", given["timestamp"]) if "timestamp" in given else None
    return plan_iceberg(
        settings.paths[0], snapshot_id=given.get("version"), as_of=as_of, reroot=given.get("reroot"),
        filesystem=filesystem,
    )


def plan_listing_parts(settings: SourceSettings, plan: PlannedTable) -> tuple[list[Any], pa.Schema, pa.Schema, StructType]:
    """The files (each with its FileRead), the partition schema, the table's Arrow schema and
    its Spark schema."""
    fs, _ = settings.filesystem.open(settings.paths[0])
    schema, constant, files = table_tasks(plan, fs)
    pschema = pa.schema([schema.field(n) for n in schema.names if n in constant])
    reader = "ORC" if any(getattr(f.table, "file_format", None) == "orc" for f in files[:1]) else "Parquet"
    spark_schema = StructType([
        StructField(f.name, spark_type_of(f.type, f.name, path=plan.root, reader=reader), True) for f in schema
    ])
    return files, pschema, schema, spark_schema


__all__ = ["local_table", "plan_listing_parts", "remote_iceberg", "remote_table", "time_travel"]
