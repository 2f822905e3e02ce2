"""Tables of Spark's session catalog, read by lazyscan: name, format, location, schema, partitions.

:func:`resolve_table` asks the session (on the driver) what a table is, with what Spark offers
on classic and Connect sessions alike: ``spark.catalog.tableExists`` / ``getTable`` (a
temporary view or a view is refused by name), ``DESCRIBE TABLE EXTENDED`` (provider, Hive SerDe,
location, partition columns, whether the catalog tracks the partitions), ``spark.table(name)
.schema`` (the catalog schema: names, case and types, which win over the files' footers) and
``SHOW PARTITIONS``. A partition's location comes from the external catalog in one call on
classic sessions; on Connect, ``DESCRIBE TABLE EXTENDED ... PARTITION (...)`` answers it, one
query per partition left after pruning. Partitions the catalog does not track (a data source
table created with ``spark.sql.hive.manageFilesourcePartitions=false``) come from the
``key=value`` folders under the table's location, as Spark finds them.

Read are file tables of format ``parquet`` or ``orc``, and ``hive`` tables whose SerDe is
Parquet's or ORC's; anything else (views, JDBC, Delta Lake, Iceberg, text tables) raises an
:class:`~lazyscan.errors.UnsupportedFeatureError` naming the table and what it is.

The result, a :class:`CatalogTable`, is plain data: the data source gets it as the
``catalogTable`` option (JSON), since Spark plans a Python data source in a worker process that
has no session to ask (see :func:`table_options`).

A name given to :func:`lazyscan.spark.read` is a table when :func:`is_table_name` says so: it
holds no ``/`` or ``\\`` (a path does, and so does every URI), it is a Spark identifier (parts of
letters, digits and ``_``, or backquoted, joined by dots) and ``spark.catalog.tableExists``
knows it. Otherwise it is a path; ``./name`` reads a folder ``name`` in the working folder even
when a table of that name exists.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import StructType, TimestampType

from lazyscan.errors import (
    LazyScanError,
    OptionError,
    PredicateError,
    SourceError,
    UnsupportedFeatureError,
)
from lazyscan.predicate import (
    Expr,
    bind,
    conjunction,
    evaluate,
    referenced_columns,
    split_conjuncts,
)
from lazyscan.predicate.casts import session_time_zone
from lazyscan.scan.dataset import HIVE_NULL
from lazyscan.spark.compat import is_connect, to_arrow_type

log = logging.getLogger("lazyscan.spark")

#: Hive SerDe classes (lower case, by what their name contains) and the format of their files
_SERDE_FORMATS = (("parquet", "parquet"), ("orc", "orc"))
_FILE_PROVIDERS = ("parquet", "orc")

_PART = r"(?:[A-Za-z0-9_]+|`(?:[^`]|``)+`)"
_IDENTIFIER = re.compile(rf"^{_PART}(?:\.{_PART})*$")


@dataclass(frozen=True)
class CatalogPartition:
    """One partition of a catalog table: its values as the catalog writes them (text, None for
    NULL), in the order of the table's partition columns, and the folder holding its files."""

    values: tuple[str | None, ...]
    location: str


@dataclass(frozen=True)
class CatalogTable:
    """What lazyscan reads of a catalog table: ``name`` (qualified), file ``format``,
    ``location``, the catalog schema (Spark JSON; partition columns last, as Spark keeps them),
    the partition columns and, where the catalog tracks them, the partitions (else None: the
    ``key=value`` folders under ``location`` are the partitions)."""

    name: str
    format: str
    location: str
    schema_json: str
    partition_columns: tuple[str, ...] = ()
    partitions: tuple[CatalogPartition, ...] | None = None

    @property
    def schema(self) -> StructType:
        """The catalog schema, partition columns included."""
        return StructType.fromJson(json.loads(self.schema_json))

    def to_json(self) -> str:
        """The table as the ``catalogTable`` option of the data source."""
        parts = None if self.partitions is None else [[list(p.values), p.location] for p in self.partitions]
        return json.dumps({
            "name": self.name, "format": self.format, "location": self.location,
            "schema": json.loads(self.schema_json), "partitionColumns": list(self.partition_columns),
            "partitions": parts,
        })

    @classmethod
    def from_json(cls, text: str) -> CatalogTable:
        """The table from the ``catalogTable`` option; :class:`OptionError` if it is not one."""
        try:
            d = json.loads(text)
            parts = d.get("partitions")
            return cls(
                name=str(d["name"]), format=str(d["format"]), location=str(d["location"]),
                schema_json=json.dumps(d["schema"]),
                partition_columns=tuple(str(c) for c in d.get("partitionColumns", [])),
                partitions=None if parts is None else tuple(
                    CatalogPartition(tuple(None if v is None else str(v) for v in values), str(location))
                    for values, location in parts
                ),
            )
        except (ValueError, KeyError, TypeError) as e:
            raise OptionError(
                f"option 'catalogTable' is not a table description of lazyscan.spark.table_options ({e})"
            ) from None

    def partition_schema(self, time_zone: str) -> pa.Schema:
        """Arrow types of the partition columns (TIMESTAMP in the session time zone, as the
        values are wall-clock text in that zone)."""
        by_name = {f.name: f for f in self.schema.fields}
        fields = []
        for name in self.partition_columns:
            spark_type = by_name[name].dataType
            atype = pa.timestamp("us", tz=time_zone) if isinstance(spark_type, TimestampType) else to_arrow_type(spark_type)
            fields.append(pa.field(name, atype))
        return pa.schema(fields)

    def typed_values(self, texts: Sequence[Sequence[str | None]], time_zone: str) -> list[dict[str, Any]]:
        """Partition values (one row of text per partition, the catalog's order of columns) in
        the columns' types; a value that is not of its column's type is a :class:`SourceError`."""
        schema = self.partition_schema(time_zone)
        columns = []
        for i, field in enumerate(schema):
            raw = pa.array([None if row[i] in (None, HIVE_NULL) else row[i] for row in texts], pa.string())
            try:
                if pa.types.is_timestamp(field.type):
                    naive = raw.cast(pa.timestamp("us"))
                    columns.append(pc.assume_timezone(naive, field.type.tz).to_pylist())
                else:
                    columns.append(raw.cast(field.type).to_pylist())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise SourceError(
                    f"table {self.name}: a value of partition column {field.name!r} is not of its "
                    f"type {field.type}: {e}"
                ) from None
        return [{f.name: columns[i][row] for i, f in enumerate(schema)} for row in range(len(texts))]

    def prune(self, where: Expr | None, time_zone: str, case_sensitive: bool = False) -> CatalogTable:
        """The table with only the partitions the conjuncts of ``where`` on partition columns
        alone do not rule out (all of them when the catalog does not track partitions)."""
        if where is None or not self.partitions:
            return self
        schema = self.partition_schema(time_zone)
        names = schema.names if case_sensitive else [n.lower() for n in schema.names]
        bound = []
        for part in split_conjuncts(where):
            used = referenced_columns(part)
            if not used or not all((c if case_sensitive else c.lower()) in names for c in used):
                continue
            try:
                with session_time_zone(time_zone):
                    bound.append(bind(part, schema, case_sensitive=case_sensitive))
            except PredicateError as e:  # the scan reports it when it binds the whole filter
                log.debug("partition pruning leaves out %s: %s", part, e)
        if not bound:
            return self
        values = self.typed_values([p.values for p in self.partitions], time_zone)
        data = pa.table({f.name: pa.array([v[f.name] for v in values], f.type) for f in schema}, schema=schema)
        mask = evaluate(conjunction(bound), data)
        kept = tuple(p for p, keep in zip(self.partitions, mask) if keep)
        log.info("lazyscan: table %s, partition pruning kept %d of %d partitions", self.name, len(kept), len(self.partitions))
        return replace(self, partitions=kept)


def is_table_name(spark: Any, text: str) -> bool:
    """Whether ``text`` names a table or view of the session catalog (see the module docs)."""
    if "/" in text or "\\" in text or not _IDENTIFIER.match(text):
        return False
    try:
        return bool(spark.catalog.tableExists(text))
    except Exception as e:  # a name Spark's parser refuses is no table
        log.debug("spark.catalog.tableExists(%r): %s", text, e)
        return False


def looks_like_table_name(text: str) -> bool:
    """Whether ``text`` could be a table name (no path separator, a Spark identifier)."""
    return "/" not in text and "\\" not in text and bool(_IDENTIFIER.match(text))


def _describe(spark: Any, sql: str) -> tuple[dict[str, str], list[str]]:
    """Rows of ``DESCRIBE ... EXTENDED`` as {name: value} of its detail section (the first value
    of each name) and the partition columns its partition section lists."""
    details: dict[str, str] = {}
    partition_columns: list[str] = []
    section = "columns"
    for row in spark.sql(sql).collect():
        name = (row[0] or "").strip()
        value = (row[1] or "").strip()
        if name.startswith("# "):
            if name == "# Partition Information":
                section = "partitions"
            elif name.startswith("# Detailed") or name == "# Storage Information":
                section = "details"
            elif name != "# col_name":
                section = "other"
            continue
        if not name:
            if section == "partitions":
                section = "columns-done"
            continue
        if section == "partitions":
            partition_columns.append(name)
        elif section == "details":
            details.setdefault(name, value)
    return details, partition_columns


def _file_format(name: str, details: dict[str, str]) -> str:
    """The files' format of a table from its provider (and Hive SerDe), or a refusal."""
    provider = details.get("Provider", "").lower()
    kind = details.get("Type", "").upper()
    if kind == "VIEW":
        raise UnsupportedFeatureError(
            f"{name} is a view: lazyscan reads Parquet and ORC file tables of the catalog only; "
            "read the view with spark.table"
        )
    if provider in _FILE_PROVIDERS:
        return provider
    if provider == "hive":
        serde = details.get("Serde Library", "").lower()
        for part, fmt in _SERDE_FORMATS:
            if part in serde:
                return fmt
        raise UnsupportedFeatureError(
            f"{name} is a Hive table with SerDe {details.get('Serde Library') or '(none)'}: lazyscan "
            "reads Parquet and ORC file tables of the catalog only"
        )
    location = details.get("Location")
    by_path = (
        f"; read the table by its folder: lazyscan.spark.read(spark, {location!r}, ...)"
        if provider in ("delta", "iceberg") and location else ""
    )
    raise UnsupportedFeatureError(
        f"{name} is a table of provider {provider or '(none)'}: lazyscan reads Parquet and ORC file "
        f"tables of the catalog only{by_path}"
    )


def resolve_table(spark: Any, name: str, where: Expr | None = None, time_zone: str = "UTC",
                  case_sensitive: bool = False) -> CatalogTable:
    """What the session catalog says of table ``name`` (see the module docs); partitions the
    conjuncts of ``where`` on partition columns rule out are left out before their locations
    are asked for."""
    if not looks_like_table_name(name) or not _exists(spark, name):
        raise SourceError(
            f"no table or view {name!r} in the session catalog (current database "
            f"{current_database(spark)})"
        )
    info = spark.catalog.getTable(name)
    if info.isTemporary or (info.tableType or "").upper() == "TEMPORARY":
        raise UnsupportedFeatureError(
            f"{name} is a temporary view: lazyscan reads Parquet and ORC file tables of the catalog "
            "only; read the view with spark.table, or its files by path"
        )
    qualified = ".".join([*(info.namespace or []), info.name])
    details, partition_columns = _describe(spark, f"DESCRIBE TABLE EXTENDED {name}")
    fmt = _file_format(name, details)
    location = details.get("Location")
    if not location:
        raise UnsupportedFeatureError(f"{name} has no location: lazyscan reads file tables of the catalog only")
    schema = spark.table(name).schema
    table = CatalogTable(qualified, fmt, location, schema.json(), tuple(partition_columns))
    if partition_columns and details.get("Partition Provider", "").lower() == "catalog":
        table = _with_partitions(spark, name, info, table, where, time_zone, case_sensitive)
    return table


def _exists(spark: Any, name: str) -> bool:
    try:
        return bool(spark.catalog.tableExists(name))
    except Exception as e:
        log.debug("spark.catalog.tableExists(%r): %s", name, e)
        return False


def current_database(spark: Any) -> str:
    """The session's current database, for messages."""
    try:
        return str(spark.catalog.currentDatabase())
    except Exception:
        return "unknown"


def _with_partitions(spark: Any, name: str, info: Any, table: CatalogTable, where: Expr | None,
                     time_zone: str, case_sensitive: bool) -> CatalogTable:
    if not is_connect(spark) and (info.catalog or "spark_catalog") == "spark_catalog":
        try:
            parts = _jvm_partitions(spark, info, table.partition_columns)
            return replace(table, partitions=parts).prune(where, time_zone, case_sensitive)
        except LazyScanError:
            raise
        except Exception as e:  # an older or newer Spark's catalog classes: ask in SQL
            log.info("lazyscan: the external catalog did not list the partitions of %s (%s); asking in SQL", name, e)
    specs = _show_partitions(spark, name, table.partition_columns)
    unlocated = replace(table, partitions=tuple(CatalogPartition(s, "") for s in specs))
    kept = unlocated.prune(where, time_zone, case_sensitive).partitions or ()
    located = tuple(CatalogPartition(p.values, _partition_location(spark, name, table.partition_columns, p.values))
                    for p in kept)
    return replace(table, partitions=located)


def _jvm_partitions(spark: Any, info: Any, columns: Sequence[str]) -> tuple[CatalogPartition, ...]:
    """Every partition with its location from the session's external catalog, in one call (and
    a few small ones per partition: each py4j call costs about 0.1 ms)."""
    jvm = spark.sparkContext._jvm
    catalog = spark._jsparkSession.sessionState().catalog().externalCatalog()
    database = (info.namespace or ["default"])[-1]
    listed = catalog.listPartitions(database, info.name, jvm.scala.Option.empty())
    out = []
    for i in range(listed.size()):
        p = listed.apply(i)
        spec = p.spec()
        values = []
        for c in columns:
            found = spec.get(c)  # the catalog keeps the columns' case; Hive's metastore lower case
            if not found.isDefined():
                found = spec.get(c.lower())
            if not found.isDefined():
                raise SourceError(f"table {info.name}: partition {spec.toString()} has no value of column {c!r}")
            v = found.get()
            values.append(None if v is None or v == HIVE_NULL else str(v))
        uri = p.storage().locationUri()
        if not uri.isDefined():
            raise SourceError(f"table {info.name}: partition {spec.toString()} has no location in the catalog")
        # a URI, percent-encoded; DESCRIBE and the filesystems name the folder decoded
        out.append(CatalogPartition(tuple(values), unquote(str(uri.get().toString()))))
    return tuple(out)


def _show_partitions(spark: Any, name: str, columns: Sequence[str]) -> list[tuple[str | None, ...]]:
    """The partitions ``SHOW PARTITIONS`` lists, as values in the order of ``columns``."""
    out = []
    for row in spark.sql(f"SHOW PARTITIONS {name}").collect():
        pairs = {}
        for seg in str(row[0]).split("/"):
            k, _, v = seg.partition("=")
            pairs[unquote(k).lower()] = unquote(v)
        values = tuple(None if pairs.get(c.lower(), HIVE_NULL) == HIVE_NULL else pairs[c.lower()] for c in columns)
        out.append(values)
    return out


def _sql_text(value: str | None) -> str:
    if value is None:
        return "NULL"
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _partition_location(spark: Any, name: str, columns: Sequence[str], values: Sequence[str | None]) -> str:
    spec = ", ".join(f"`{c.replace('`', '``')}` = {_sql_text(v)}" for c, v in zip(columns, values))
    details, _ = _describe(spark, f"DESCRIBE TABLE EXTENDED {name} PARTITION ({spec})")
    location = details.get("Location")
    if not location:
        raise SourceError(f"table {name}: partition ({spec}) has no location in the catalog")
    return location


def table_options(spark: Any, name: str) -> dict[str, str]:
    """The ``lazyscan`` data source options that read catalog table ``name``::

        (spark.read.format("lazyscan").options(**lazyscan.spark.table_options(spark, "db.t"))
         .option("where", "x = 5").load())

    ``table`` (the name) and ``catalogTable`` (what the catalog says, as JSON): Spark plans a
    Python data source in a worker process without a session, so the driver asks the catalog
    here. Every partition is included; the data source prunes them by its ``where`` option.
    """
    table = resolve_table(spark, name)
    return {"table": name, "catalogTable": table.to_json()}


__all__ = [
    "CatalogPartition",
    "CatalogTable",
    "is_table_name",
    "looks_like_table_name",
    "resolve_table",
    "table_options",
]
