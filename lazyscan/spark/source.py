"""The ``lazyscan`` Python data source: Spark plans, lazyscan filters and reads.

Parts and their roles:

- :class:`LazyScanDataSource` (``DataSource``) — created on the driver from the options; lists
  the files, infers the Spark schema from the footers (merged across files unless
  ``mergeSchema=false``, hive partition columns appended) and keeps the listing, which Spark
  pickles with the instance so the reader does not list again.
- :class:`LazyScanReader` (``DataSourceReader``) — binds each filter once, on the driver (the
  ``where`` option, key filters; ``pushFilters`` converts Spark's filters and hands back only
  those lazyscan cannot evaluate exactly); ``partitions`` prunes files by partition values (a
  table's data files also by the statistics the table states of them, counted in the profile
  the first task reports) and cuts the rest into Spark-sized tasks of byte ranges (no footer
  reads); ``read`` runs one
  selective scan over the ranges of its task with the bound filter and yields Arrow record
  batches in the exact Arrow schema Spark expects.
- :class:`Listing` — the files, the scan's Arrow schema and the Spark schema, picklable.

Usage — on Spark 4.1-4.3, hand the filter to the scan, and name only the needed columns::

    import lazyscan.spark
    lazyscan.spark.register(spark)

    # lazyscan or Spark's own reader, whichever a sample says is faster; needed columns only
    df = lazyscan.spark.read(spark, "/data/lineitem", ["l_orderkey"], "l_comment = 'carefully'")

    # the data source alone: the filter in the ``where`` option (any file column, also one
    # left out of the schema), the output columns in the schema
    df = (spark.read.format("lazyscan").schema("l_orderkey bigint")
          .option("where", "l_comment = 'carefully'").load("/data/lineitem"))

``spark.read.format("lazyscan").load(path).where(...)`` also works, but on Spark 4.1-4.3 that
filter is evaluated by Spark after lazyscan has read and shipped every row of every column of
the schema (often slower than ``spark.read.parquet``); lazyscan logs a warning on the driver
naming the filter and these routes, once per DataFrame.

Spark 4.1-4.3 give a Python data source no column pruning: the reader produces every column of
its schema. Give ``.schema("a INT, b STRING")`` with only the needed columns (or use
:func:`lazyscan.spark.read`, which does that) to read fewer columns.

Filters Spark pushes are used only where Spark keeps the read plan per scan. Spark 4.1-4.3 keep
the plan made by the last ``pushFilters`` call on the *data source instance*, shared by every
scan of one DataFrame or view: a self-join with different filters, or a query without pushable
filters after one with them, would read with another scan's filters. So with
``pushFilters=auto`` (the default) pushed filters are used only on a Spark whose reader API has
``pushLimit`` (the release that scoped read plans to scans); otherwise every filter stays in
Spark, and a filter for lazyscan goes in the ``where`` option, which belongs to the DataFrame and
is therefore right for every scan of it (:func:`lazyscan.spark.read` does this).
``pushFilters=true`` (per read, or for the session with ``register(spark, push_filters=True)``)
forces pushdown: safe when each DataFrame loaded with it is scanned once per query and not
reused with other filters; ``pushFilters=false`` keeps every filter in Spark without a warning.
"""

from __future__ import annotations

import copy
import datetime as dt
import decimal
import json
import logging
import math
import re
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, ClassVar
from urllib.parse import unquote
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import StructField, StructType, TimestampType

from lazyscan.errors import (
    LazyScanError,
    ObjectNotFoundError,
    OptionError,
    PredicateError,
    SourceError,
    TableFolderError,
)
from lazyscan.format.options import ReaderOptions
from lazyscan.io.retry import RetryPolicy
from lazyscan.predicate import (
    Answer,
    BoundExpr,
    Expr,
    bind,
    col,
    conjunction,
    evaluate,
    evaluate_statistics,
    parse_predicate,
    referenced_columns,
)
from lazyscan.predicate.bind import check_bound
from lazyscan.predicate.casts import session_time_zone
from lazyscan.predicate.keys import KeyFilter
from lazyscan.scan import scan
from lazyscan.scan.conjuncts import Conjunct, conjuncts_of
from lazyscan.scan.dataset import HIVE_NULL, FileInfo, FileSplit, discover, pinned
from lazyscan.scan.options import ScanOptions
from lazyscan.scan.profile import Profile
from lazyscan.scan.scan import TABLE_STATISTICS, Scan
from lazyscan.scan.table_source import table_statistics
from lazyscan.scan.unit_scan import PARTITION
from lazyscan.spark.catalog import CatalogTable
from lazyscan.spark.compat import (
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
    to_arrow_type,
)
from lazyscan.spark.filters import FilterColumn, convert_filter
from lazyscan.spark.options import KEY_FILTER_PREFIX, SessionDefaults, SourceSettings
from lazyscan.spark.planning import ScanTask, plan_tasks
from lazyscan.spark.profiles import new_scan_id, task_entry, write_task_profile
from lazyscan.spark.table_paths import local_table, plan_listing_parts, remote_table
from lazyscan.spark.types import (
    BatchShaper,
    OutputColumn,
    merge_spark_schemas,
    partition_spark_type,
    spark_schema_of,
)
from lazyscan.tables.plan import FileRead

log = logging.getLogger("lazyscan.spark")

#: the partition tier's name in the decision log
PARTITION_TIER = PARTITION.name


class LazyScanReadError(LazyScanError):
    """A Spark task could not read its part of a file; the message names file and cause."""


@dataclass(frozen=True)
class Listing:
    """Files of a source with the schemas derived from their footers and folder names."""

    files: tuple[FileInfo, ...]
    partition_schema: pa.Schema
    file_arrow_schema: pa.Schema
    file_spark_schema: StructType
    time_zone: str = "UTC"
    #: a Delta Lake or Iceberg table read by path: its kind (``delta``, ``iceberg``), root and
    #: the table and version, as messages name them (None: files)
    table_kind: str | None = None
    table_root: str | None = None
    table_context: str | None = None

    @property
    def partition_names(self) -> list[str]:
        return list(self.partition_schema.names)

    @property
    def scan_schema(self) -> pa.Schema:
        """Arrow schema the scan binds to: file columns, then partition columns."""
        parts = set(self.partition_names)
        fields = [f for f in self.file_arrow_schema if f.name not in parts]
        return pa.schema(fields + list(self.partition_schema))

    @property
    def spark_schema(self) -> StructType:
        """The schema Spark sees: a partition column named like a file column replaces it."""
        parts = {f.name: f for f in self.partition_schema}
        fields = []
        for f in self.file_spark_schema.fields:
            p = parts.pop(f.name, None)
            fields.append(f if p is None else StructField(p.name, partition_spark_type(p.type), True))
        for p in parts.values():
            fields.append(StructField(p.name, partition_spark_type(p.type), True))
        return StructType(fields)


def _open_paths(settings: SourceSettings) -> tuple[Any, list[str]]:
    fs: Any = None
    paths = []
    for p in settings.paths:
        this_fs, path = settings.filesystem.open(p)
        if this_fs is not None:
            if fs is not None and type(fs) is not type(this_fs):
                raise SourceError(f"paths on different filesystems cannot be read together: {settings.paths}")
            fs = this_fs
        paths.append(path)
    return fs, paths


def _with_time_zone(files: list[FileInfo], schema: pa.Schema, tz: str) -> tuple[list[FileInfo], pa.Schema]:
    """TIMESTAMP partition values are wall-clock text in the session time zone, as in Spark."""
    stamps = [f.name for f in schema if pa.types.is_timestamp(f.type) and f.type.tz is None]
    if not stamps:
        return files, schema
    zone = ZoneInfo(tz)
    out = []
    for info in files:
        values = dict(info.partition_values)
        for name in stamps:
            v = values.get(name)
            if v is not None:
                values[name] = v.replace(tzinfo=zone)
        out.append(replace(info, partition_values=values))
    fields = [pa.field(f.name, pa.timestamp("us", tz=tz)) if f.name in stamps else f for f in schema]
    return out, pa.schema(fields)


def retry_policy(settings: SourceSettings) -> RetryPolicy:
    """How the driver's requests (listing, footers) are retried: the ``retrySeconds`` option."""
    return RetryPolicy(max_seconds=settings.scan_kwargs.get("retry_seconds", ScanOptions.retry_seconds))


def list_files(settings: SourceSettings) -> tuple[Any, list[FileInfo], pa.Schema]:
    """The filesystem, the data files and the partition schema of the source."""
    fs, paths = _open_paths(settings)
    try:
        ds = discover(
            paths if len(paths) > 1 else paths[0], filesystem=fs, retry=retry_policy(settings),
            raw_files=bool(settings.scan_kwargs.get("raw_files", False)),
        )
    except SourceError:
        raise
    except LazyScanError as e:
        raise SourceError(f"cannot list {', '.join(settings.paths)}: {e}") from e
    except OSError as e:
        raise SourceError(f"cannot list {', '.join(settings.paths)}: {e}") from e
    files, pschema = _with_time_zone(list(ds.files), ds.partition_schema, settings.time_zone)
    return fs, files, pschema


def _folder_texts(path: str, names: Sequence[str]) -> dict[str, str | None]:
    """The text of the ``key=value`` folders of ``path`` for the partition columns ``names``
    (the innermost folder of a key, as :func:`~lazyscan.scan.discover` reads them)."""
    found: dict[str, str | None] = {}
    for seg in path.replace("\\", "/").split("/")[:-1]:
        k, eq, v = seg.partition("=")
        if eq and unquote(k) in names:
            text = unquote(v)
            found[unquote(k)] = None if text == HIVE_NULL else text
    missing = [n for n in names if n not in found]
    if missing:
        raise SourceError(f"file {path!r} is not in a folder of partition column {missing[0]!r}")
    return found


def _partitions_as_schema(
    settings: SourceSettings, listed: tuple[Any, list[FileInfo], pa.Schema], schema: StructType
) -> tuple[Any, list[FileInfo], pa.Schema]:
    """A path read's files with their partition values in the types ``schema`` gives the
    partition columns, parsed from the folder text as Spark parses them for a schema it is
    given: the transparent mode's rule passes Spark's types, which differ from the inferred ones
    where Spark's type inference is switched off (``z=007`` stays the string ``'007'``). A
    value that is not of its type is a :class:`SourceError` naming the file and column."""
    fs, files, pschema = listed
    names = schema.fieldNames()
    wanted: dict[str, tuple[pa.DataType, Any]] = {}
    for field in pschema:
        given = _resolve(field.name, names, settings.case_sensitive)
        if given is None:
            continue
        spark_type = schema[given].dataType
        atype = (
            pa.timestamp("us", tz=settings.time_zone) if isinstance(spark_type, TimestampType)
            else to_arrow_type(spark_type)
        )
        if atype != field.type:
            wanted[field.name] = (atype, spark_type)
    if not wanted:
        return listed
    texts = [_folder_texts(info.path, list(wanted)) for info in files]
    typed = [dict(info.partition_values) for info in files]
    for name, (atype, spark_type) in wanted.items():
        column = pa.array([t[name] for t in texts], pa.string())
        try:
            values = _parse_partition_text(column, atype).to_pylist()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            bad = next(i for i, t in enumerate(texts) if not _parses(t[name], atype))
            raise SourceError(
                f"file {files[bad].path!r}: the value {texts[bad][name]!r} of partition column {name!r} "
                f"is not of its type {spark_type.simpleString()}"
            ) from None
        for row, v in zip(typed, values):
            row[name] = v
    out_schema = pa.schema([pa.field(f.name, wanted[f.name][0]) if f.name in wanted else f for f in pschema])
    return fs, [replace(info, partition_values=v) for info, v in zip(files, typed)], out_schema


def _parse_partition_text(texts: pa.Array, atype: pa.DataType) -> pa.Array:
    """Folder texts as values of ``atype`` (a zoned TIMESTAMP: wall-clock time in its zone)."""
    if pa.types.is_timestamp(atype) and atype.tz is not None:
        return pc.assume_timezone(texts.cast(pa.timestamp("us")), atype.tz)
    return texts.cast(atype)


def _parses(text: str | None, atype: pa.DataType) -> bool:
    try:
        _parse_partition_text(pa.array([text], pa.string()), atype)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False
    return True


def list_table_files(settings: SourceSettings, table: CatalogTable) -> tuple[Any, list[FileInfo], pa.Schema]:
    """The filesystem, the data files and the partition schema of a catalog table: the files
    under each partition's location (the partitions the catalog lists, or the ``key=value``
    folders under the table's location where it lists none), with the partition values the
    catalog gives, in the catalog's types. A location that does not exist holds no files, as in
    Spark."""
    pschema = table.partition_schema(settings.time_zone)
    roots: list[tuple[str, tuple[str | None, ...] | None]] = [(table.location, None)]
    if table.partitions is not None:
        roots = [(p.location, p.values) for p in table.partitions]
    fs: Any = None
    texts: list[tuple[str | None, ...]] = []
    files: list[FileInfo] = []
    for location, values in roots:
        this_fs, root = settings.filesystem.open(location)
        if this_fs is not None:
            if fs is not None and type(fs) is not type(this_fs):
                raise SourceError(f"table {table.name}: partitions on different filesystems cannot be read together")
            fs = this_fs
        for info in _list_folder(settings, table, root, this_fs):
            files.append(info)
            texts.append(values if values is not None else _folder_values(table, root, info.path))
    typed = table.typed_values(texts, settings.time_zone) if table.partition_columns else [{} for _ in files]
    return fs, [replace(f, partition_values=v) for f, v in zip(files, typed)], pschema


def _list_folder(settings: SourceSettings, table: CatalogTable, root: str, fs: Any) -> list[FileInfo]:
    try:
        ds = discover(
            root, filesystem=fs, retry=retry_policy(settings),
            raw_files=bool(settings.scan_kwargs.get("raw_files", False)),
        )
    except ObjectNotFoundError:
        log.info("lazyscan: table %s, location %s does not exist: no files", table.name, root)
        return []
    except SourceError:
        raise
    except (LazyScanError, OSError) as e:
        raise SourceError(f"table {table.name}: cannot list {root}: {e}") from e
    return list(ds.files)


def _folder_values(table: CatalogTable, root: str, path: str) -> tuple[str | None, ...]:
    """The partition values of a file in ``key=value`` folders under ``root`` (as text)."""
    rel = path[len(root):].strip("/\\").replace("\\", "/").split("/")[:-1]
    found = {}
    for seg in rel:
        k, eq, v = seg.partition("=")
        if eq:
            found[unquote(k).lower()] = unquote(v)
    missing = [c for c in table.partition_columns if c.lower() not in found]
    if missing:
        raise SourceError(
            f"table {table.name}: file {path!r} is not in a folder of partition column {missing[0]!r} "
            f"(a key=value folder under {root})"
        )
    return tuple(None if found[c.lower()] == HIVE_NULL else found[c.lower()] for c in table.partition_columns)


def table_listing(
    settings: SourceSettings, table: CatalogTable, schema: StructType | None = None, where: Expr | None = None
) -> Listing:
    """The listing of a catalog table for ``schema`` (default: the catalog's): the partitions
    the conjuncts of ``where`` (default: the ``where`` option) on partition columns leave, their
    files, and the first file's footer for the spelling and types of the columns in the files."""
    if where is None and settings.where:
        try:
            with session_time_zone(settings.time_zone):
                where = parse_predicate(settings.where)
        except PredicateError:
            where = None  # reported when the reader binds it
    pruned = table.prune(where, settings.time_zone, settings.case_sensitive)
    listed = list_table_files(settings, pruned)
    return listing_for_schema(settings, schema or table.schema, listed, schema_names=True)


def _read_footer(
    info: FileInfo, fs: Any, binary_as_string: bool, retry: RetryPolicy | None = None
) -> tuple[FileInfo, pa.Schema, StructType]:
    """The file's schemas, and ``info`` pinned to the version read (:func:`pinned`): the tasks
    read that version or fail with a :class:`FileChangedError`."""
    from lazyscan.format.units import open_units

    path = info.path
    try:
        with open_units(path, fs, ReaderOptions(retry=retry)) as f:
            return pinned(info, f), f.arrow_schema, spark_schema_of(f, binary_as_string=binary_as_string)
    except LazyScanError:
        raise
    except OSError as e:
        raise SourceError(f"cannot read the footer of {path!r}: {e}") from e


def _with_pinned(files: list[FileInfo], read: Sequence[FileInfo]) -> tuple[FileInfo, ...]:
    """``files`` with the ones whose footers were read replaced by their pinned versions."""
    by_path = {f.path: f for f in read}
    return tuple(by_path.get(f.path, f) for f in files)


def _merge_arrow(schemas: Sequence[pa.Schema]) -> pa.Schema:
    fields: dict[str, pa.Field] = {}
    for s in schemas:
        for f in s:
            old = fields.get(f.name)
            if old is None or pa.types.is_null(old.type):
                fields[f.name] = f.with_nullable(True)
    return pa.schema(list(fields.values()))


def table_path_listing(settings: SourceSettings) -> Listing | None:
    """The listing of the Delta Lake or Iceberg table the source's path is, planned once (see
    :mod:`.table_paths`); None when it is no table. Its files carry how each is read."""
    plan = local_table(settings)
    if plan is None:
        return None
    return _plan_listing(settings, plan)


def _plan_listing(settings: SourceSettings, plan: Any) -> Listing:
    files, pschema, schema, spark_schema = plan_listing_parts(settings, plan)
    return Listing(
        tuple(files), pschema, schema, spark_schema, settings.time_zone,
        table_kind=plan.kind, table_root=plan.root, table_context=plan.context,
    )


def _listed_or_table(settings: SourceSettings) -> tuple[Any, list[FileInfo], pa.Schema] | Listing:
    """The source's files, or the listing of the table it is (a local one, or a Delta table on
    an object store, which its listing shows)."""
    table = table_path_listing(settings)
    if table is not None:
        return table
    try:
        return list_files(settings)
    except TableFolderError as e:
        plan = remote_table(settings, e) if len(settings.paths) == 1 else None
        if plan is None:
            raise
        return _plan_listing(settings, plan)


def build_listing(settings: SourceSettings, *, require_files: bool = True) -> Listing:
    """List the source and read the footers needed for its schema (a table's schema is its
    snapshot's)."""
    listed = _listed_or_table(settings)
    if isinstance(listed, Listing):
        return listed
    fs, files, pschema = listed
    if not files:
        if require_files:
            raise SourceError(
                f"unable to infer a schema for {', '.join(settings.paths)}: no Parquet or ORC files "
                "found; give the schema with .schema(...)"
            )
        return Listing((), pschema, pa.schema([]), StructType([]), settings.time_zone)
    targets = files if settings.merge_schema else files[:1]
    threads = max(1, min(settings.footer_threads, len(targets)))
    if threads == 1:
        footers = [_read_footer(f, fs, settings.binary_as_string, retry_policy(settings)) for f in targets]
    else:
        with ThreadPoolExecutor(threads, thread_name_prefix="lazyscan-footer") as pool:
            footers = list(
                pool.map(lambda f: _read_footer(f, fs, settings.binary_as_string, retry_policy(settings)), targets)
            )
    spark_schema = merge_spark_schemas([(i.path, s) for i, _, s in footers])
    arrow_schema = _merge_arrow([a for _, a, _ in footers])
    pinned_files = _with_pinned(files, [i for i, _, _ in footers])
    return Listing(pinned_files, pschema, arrow_schema, spark_schema, settings.time_zone)


def scan_scoped_read_plans() -> bool:
    """Whether this Spark keeps the read plan of a Python data source per scan.

    The release that added ``DataSourceReader.pushLimit`` also moved the plan made during
    pushdown from the shared data source instance into the scan.
    """
    return hasattr(DataSourceReader, "pushLimit")


def pushdown_enabled(mode: str) -> bool:
    """Resolve the ``pushFilters`` option (``auto``, ``true``, ``false``)."""
    if mode == "auto":
        return scan_scoped_read_plans()
    return mode == "true"


#: data sources (by ``source_id``) whose unused filters this process has warned about
_WARNED: set[str] = set()

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_COMPARE_OPS: dict[type, str] = {
    EqualTo: "=",
    EqualNullSafe: "<=>",
    GreaterThan: ">",
    GreaterThanOrEqual: ">=",
    LessThan: "<",
    LessThanOrEqual: "<=",
}


def _sql_name(attribute: tuple[str, ...]) -> str:
    return ".".join(a if _IDENTIFIER.match(a) else "`" + a.replace("`", "``") + "`" for a in attribute)


def _sql_value(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, str):
        return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(v, (bytes, bytearray)):
        return "X'" + bytes(v).hex().upper() + "'"
    if isinstance(v, dt.datetime):
        if v.tzinfo is None:
            return f"TIMESTAMP_NTZ '{v.isoformat(sep=' ')}'"
        return f"TIMESTAMP '{v.isoformat(sep=' ')}'"
    if isinstance(v, dt.date):
        return f"DATE '{v.isoformat()}'"
    if isinstance(v, float) and not math.isfinite(v):
        return f"CAST('{v}' AS DOUBLE)"
    if isinstance(v, decimal.Decimal):
        return str(v)
    return repr(v)


def describe_filter(f: Filter) -> str:
    """One filter Spark pushed, as Spark SQL text (usable in the ``where`` option)."""
    if isinstance(f, Not):
        return f"NOT ({describe_filter(f.child)})"
    attribute = getattr(f, "attribute", None)
    if not isinstance(attribute, tuple):
        return repr(f)
    name = _sql_name(attribute)
    value: Any = getattr(f, "value", None)
    op = _COMPARE_OPS.get(type(f))
    if op is not None:
        return f"{name} {op} {_sql_value(value)}"
    if isinstance(f, In):
        return f"{name} IN ({', '.join(_sql_value(v) for v in value)})"
    if isinstance(f, IsNull):
        return f"{name} IS NULL"
    if isinstance(f, IsNotNull):
        return f"{name} IS NOT NULL"
    pattern = {StringStartsWith: "{}%", StringEndsWith: "%{}", StringContains: "%{}%"}.get(type(f))
    if pattern is not None:
        escaped = str(value).replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        return f"{name} LIKE {_sql_value(pattern.format(escaped))}"
    return repr(f)


def describe_filters(filters: Sequence[Filter]) -> str:
    """Spark's pushed filters (a conjunction) as one Spark SQL predicate.

    ``c IS NOT NULL``, which Spark infers from a comparison on ``c``, is left out when another
    filter already rejects NULLs of ``c``.
    """

    def rejects_nulls(f: Filter) -> bool:  # NULL in the column makes the filter NULL
        inner = f.child if isinstance(f, Not) else f
        return not isinstance(inner, (IsNotNull, IsNull, EqualNullSafe))

    null_rejected = {
        getattr(f.child if isinstance(f, Not) else f, "attribute", None)
        for f in filters
        if rejects_nulls(f)
    }
    kept = [f for f in filters if not (isinstance(f, IsNotNull) and f.attribute in null_rejected)]
    return " AND ".join(describe_filter(f) for f in kept)


def unused_filters_message(source: str, filters: str) -> str:
    """The warning for filters Spark offered that lazyscan leaves to Spark."""
    import pyspark

    return (
        f"lazyscan: the filter {filters} on {source} is evaluated by Spark after lazyscan has "
        f"read every row of the DataFrame's columns: Spark {pyspark.__version__} shares one read "
        "plan between the scans of a DataFrame, so lazyscan does not use the filters Spark "
        "pushes. To evaluate it inside the scan, give it as the where option "
        f"(spark.read.format('lazyscan').option('where', {filters!r}).load(path)) or use "
        f"lazyscan.spark.read(spark, path, columns, where={filters!r}), which also reads only the "
        "needed columns. lazyscan.spark.register(spark, push_filters=True) uses pushed filters "
        "in the whole session (safe when each DataFrame is scanned once per query)."
    )


def listing_for_schema(
    settings: SourceSettings,
    schema: StructType,
    listed: tuple[Any, list[FileInfo], pa.Schema] | None = None,
    *,
    schema_names: bool = False,
) -> Listing:
    """The listing for a user-given schema: files, partitions, and the first file's footer only.

    The first file gives the spelling of column names (Spark matches them case-insensitively)
    and their Arrow types, which the scan's pruning tiers compare statistics in; columns not in
    that file take the Arrow type of their Spark type. Batches are cast to the user's types.

    The scan schema also holds the file's other columns, which are never output: a ``where``
    option may filter on them (``.schema("l_orderkey bigint").option("where", "l_comment =
    'x'")`` reads ``l_comment`` to filter and outputs ``l_orderkey``). A column the ``where``
    option names that the first file lacks is looked up in the other files' footers.

    ``listed``: the filesystem, files and partition schema, when the caller listed them (a
    catalog table); ``schema_names``: the columns keep the names of ``schema`` (a catalog's,
    which win over the files' spelling) instead of the first file's.
    """
    if listed is None:
        listed_or_table = _listed_or_table(settings)
        if isinstance(listed_or_table, Listing):
            return listed_or_table  # a table: its snapshot's schema; the reader casts to ``schema``
        listed = _partitions_as_schema(settings, listed_or_table, schema)
    fs, files, pschema = listed
    first = pa.schema([])
    read: list[FileInfo] = []
    if files:
        info, first, _ = _read_footer(files[0], fs, settings.binary_as_string, retry_policy(settings))
        read.append(info)
    fields_arrow, fields_spark = [], []
    exact = settings.case_sensitive
    for f in schema.fields:
        if _resolve(f.name, pschema.names, exact) is not None:
            continue
        name = _resolve(f.name, first.names, exact)
        if name is not None:
            fields_arrow.append(first.field(name).with_nullable(True))
        else:
            name = f.name
            atype = to_arrow_type(f.dataType)
            fields_arrow.append(pa.field(name, atype))
        fields_spark.append(StructField(f.name if schema_names else name, f.dataType, True))
    taken = {f.name for f in fields_arrow} | set(pschema.names)
    hidden = [f.with_nullable(True) for f in first if f.name not in taken]
    known = [*taken, *(f.name for f in hidden)]
    missing = _where_columns_missing(settings.where, known, exact)
    missing += [c for c, _ in settings.key_filters if _resolve(c, known, exact) is None and c not in missing]
    if missing and len(files) > 1:
        with ThreadPoolExecutor(max(1, min(settings.footer_threads, len(files) - 1))) as pool:
            others = list(pool.map(lambda i: _read_footer(i, fs, settings.binary_as_string, retry_policy(settings)), files[1:]))
        read += [info for info, _, _ in others]
        merged = _merge_arrow([schema for _, schema, _ in others])
        for name in missing:
            found = _resolve(name, merged.names, exact)
            if found is not None and found not in known:
                hidden.append(merged.field(found))
                known.append(found)
    arrow = pa.schema(fields_arrow + hidden)
    return Listing(_with_pinned(files, read), pschema, arrow, StructType(fields_spark), settings.time_zone)


#: the option naming the only columns the source outputs
COLUMNS_OPTION = "columns"


def parse_columns(text: str) -> tuple[str, ...]:
    """The ``columns`` option: a JSON array of names (any name), or names separated by commas."""
    text = str(text).strip()
    if text.startswith("["):
        try:
            names = json.loads(text)
        except ValueError as e:
            raise OptionError(f"option 'columns' is no JSON array of names: {e}") from None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise OptionError("option 'columns' must be a JSON array of strings")
    else:
        names = [n.strip() for n in text.split(",")]
    if not names or any(not n for n in names):
        raise OptionError(f"option 'columns' names an empty column: {text!r}")
    return tuple(names)


def _where_columns_missing(where: str | None, names: Sequence[str], case_sensitive: bool = False) -> list[str]:
    """Columns the ``where`` option names that no name in ``names`` matches."""
    if not where:
        return []
    try:
        expr = parse_predicate(where)
    except PredicateError:
        return []  # reported with the column list when the reader binds it
    low = {n.lower() for n in names}
    return sorted(
        c for c in referenced_columns(expr) if (c not in names if case_sensitive else c.lower() not in low)
    )


def _resolve(name: str, candidates: Sequence[str], case_sensitive: bool = False) -> str | None:
    """The candidate ``name`` refers to as Spark resolves it: the exact name, else (unless
    ``case_sensitive``, Spark's ``spark.sql.caseSensitive``) the one equal ignoring case."""
    if name in candidates:
        return name
    if case_sensitive:
        return None
    low = [c for c in candidates if c.lower() == name.lower()]
    return low[0] if len(low) == 1 else None


def _ruled_out_by_table(
    read: FileRead, conjuncts: Sequence[Conjunct], field_of: dict[str, pa.Field], names: Sequence[str]
) -> Conjunct | None:
    """The conjunct the statistics a table states of one of its data files (and the file's
    partition values) rule out, as the scan's table tier decides it; None: none."""
    if not (read.stats or read.constants):
        return None
    stats = table_statistics(read, field_of, names)
    return next((c for c in conjuncts if evaluate_statistics(c.bound, stats) is Answer.CANNOT_MATCH), None)


def _describe_split(part: FileInfo | FileSplit) -> str:
    if isinstance(part, FileSplit):
        return f"{part.path!r} (bytes {part.start}-{part.start + part.length} of {part.size})"
    return repr(part.path)


def bind_key_filter(listing: Listing, settings: SourceSettings, column: str, text: str) -> BoundExpr:
    """The ``keyFilter.<column>`` option ``text`` bound to the listing's scan schema, on the file
    column ``column`` names (:class:`OptionError` naming the option when there is none, or the
    text is no key filter of a type the column holds)."""
    option = f"{KEY_FILTER_PREFIX}{column}"
    names = [n for n in listing.scan_schema.names if n not in listing.partition_names]
    name = _resolve(column, names, settings.case_sensitive)
    if name is None:
        raise OptionError(f"option {option!r}: no file column {column!r}; columns: {', '.join(names)}")
    try:
        keys = KeyFilter.from_text(text)
        with session_time_zone(settings.time_zone):
            return bind(col(name).isin_keys(keys, adaptive=True), listing.scan_schema, case_sensitive=settings.case_sensitive)
    except LazyScanError as e:
        raise OptionError(f"option {option!r}: {e}") from None


class LazyScanReader(DataSourceReader):
    """Reads one planned scan; picklable (settings, listing, bound predicates and plain data
    only).

    Every predicate (the ``where`` option, key filters, filters Spark pushes, or
    ``bound_filter``, a filter the caller bound already) is bound once, on the driver, against
    the listing's scan schema; the tasks get the bound predicates and bind nothing.
    """

    def __init__(
        self,
        settings: SourceSettings,
        listing: Listing,
        schema: StructType,
        accumulator: Any = None,
        source_id: str = "",
        *,
        bound_filter: BoundExpr | None = None,
    ) -> None:
        self.settings = settings
        self.listing = listing
        self.schema = schema
        self.accumulator = accumulator
        self.scan_id = new_scan_id()
        #: the data source instance this reader belongs to (one per loaded DataFrame)
        self.source_id = source_id or self.scan_id
        self._predicates: list[BoundExpr] = []
        file_names = [n for n in listing.file_arrow_schema.names if n not in listing.partition_names]
        self.case_sensitive = settings.case_sensitive
        outputs = []
        for f in schema.fields:
            part = _resolve(f.name, listing.partition_names, self.case_sensitive)
            if part is not None:
                outputs.append(OutputColumn(f.name, None, part))
            else:
                outputs.append(OutputColumn(f.name, _resolve(f.name, file_names, self.case_sensitive)))
        self.outputs = tuple(outputs)
        self.scan_columns = list(dict.fromkeys(o.source for o in outputs if o.source is not None))
        self.shaper = BatchShaper(schema, outputs)
        if bound_filter is not None:
            check_bound(bound_filter, listing.scan_schema)
            self._predicates.append(bound_filter)
        if settings.where:
            self._predicates.append(self._option_filter(settings.where))
        for column, text in settings.key_filters:
            self._predicates.append(self._key_filter(column, text))
        # the decoded filters travel in the predicates; the text would double what Spark ships
        self.settings = replace(settings, key_filters=())

    @property
    def predicates(self) -> list[BoundExpr]:
        """The filters the scan evaluates (ANDed), bound to the listing's scan schema."""
        return self._predicates

    def _bind(self, expr: Expr) -> BoundExpr:
        """``expr`` bound to the listing's scan schema (the one bind a predicate gets)."""
        with session_time_zone(self.settings.time_zone):
            return bind(expr, self.listing.scan_schema, case_sensitive=self.case_sensitive)

    def _option_filter(self, text: str) -> BoundExpr:
        try:
            with session_time_zone(self.settings.time_zone):  # TIMESTAMP literals' zone
                expr = parse_predicate(text)
            return self._bind(expr)
        except PredicateError as e:
            raise OptionError(f"option 'where' cannot be evaluated by lazyscan: {e}") from None

    def _key_filter(self, column: str, text: str) -> BoundExpr:
        return bind_key_filter(self.listing, self.settings, column, text)

    # ---- planning (driver) ----------------------------------------------------------------

    def _filter_column(self, attribute: tuple[str, ...]) -> FilterColumn | None:
        name = _resolve(attribute[0], [f.name for f in self.schema.fields], self.case_sensitive)
        if name is None:
            return None
        i = self.schema.fieldNames().index(name)
        out = self.outputs[i]
        spark_type = self.schema.fields[i].dataType
        scan_schema = self.listing.scan_schema
        target = out.partition or out.source
        if target is None:
            return None
        return FilterColumn(target, spark_type, scan_schema.field(target).type)

    def pushFilters(self, filters: list[Filter]) -> list[Filter]:
        """Accept every filter lazyscan evaluates exactly; return the others to Spark.

        When pushed filters are not used (``pushFilters=auto`` on Spark 4.1-4.3), all of them
        go back to Spark; the first time a DataFrame's filters are refused this way, a warning
        names them and the routes that evaluate them inside the scan. Only ``IS NOT NULL``
        filters (which Spark infers for the keys of a join) give no warning: they remove few
        rows, where a scan's own filter is in the ``where`` option.
        """
        mode = self.settings.push_filters
        if not pushdown_enabled(mode):
            if mode == "auto" and any(not isinstance(f, IsNotNull) for f in filters):
                self._warn_unused(filters)
            else:
                log.info(
                    "lazyscan %s: %d filters stay in Spark (pushFilters=%s)",
                    self.scan_id,
                    len(filters),
                    mode,
                )
            return list(filters)
        kept: list[Filter] = []
        for f in filters:
            e = convert_filter(f, self._filter_column)
            bound = None
            if e is not None:
                try:
                    bound = self._bind(e)
                except PredicateError as err:
                    log.debug("filter %r stays in Spark: %s", f, err)
            if bound is None:
                kept.append(f)
            else:
                self._predicates.append(bound)
        log.info(
            "lazyscan %s: pushed %d of %d filters: %s",
            self.scan_id,
            len(self.predicates),
            len(filters),
            " AND ".join(str(p) for p in self.predicates) or "-",
        )
        return kept

    def _warn_unused(self, filters: Sequence[Filter]) -> None:
        text = describe_filters(filters)
        if self.source_id in _WARNED:
            log.info("lazyscan %s: filters stay in Spark: %s", self.scan_id, text)
            return
        _WARNED.add(self.source_id)
        log.warning(unused_filters_message(", ".join(self.settings.paths), text))

    @property
    def where(self) -> BoundExpr | None:
        """The scan's filter: every predicate ANDed, bound (None: no filter)."""
        if not self._predicates:
            return None
        result: BoundExpr = conjunction(self._predicates)
        return result

    def files_left(self) -> list[FileInfo]:
        """The listing's files the filter does not rule out by their partition values (or,
        for a table's data files, by the statistics the table states of them)."""
        return self._prune_files()[0]

    def _prune_files(self) -> tuple[list[FileInfo], Profile]:
        """:meth:`files_left`, and the profile of a table's data files ruled out, counted as the
        in-process scan counts them (files, rows, files pruned per tier, decisions): their
        tasks are never planned, so no task counts them. (Plain files pruned by partition
        values are not counted: their row groups and rows are known from their footers only.)"""
        files = list(self.listing.files)
        pruned = Profile()
        options = ScanOptions.from_mapping(self.settings.scan_kwargs)
        where = self.where
        if not files or where is None or not options.filter_in_scan:
            return files, pruned
        parts = self.listing.partition_names
        conjuncts = conjuncts_of(where, self.listing.scan_schema, parts)
        by_partition: list[Conjunct | None] = [None] * len(files)
        on_parts = [c for c in conjuncts if c.partition_only]
        if on_parts and options.prune_partitions:
            pschema = self.listing.partition_schema
            values = pa.table(
                {f.name: pa.array([i.partition_values.get(f.name) for i in files], f.type) for f in pschema},
                schema=pschema,
            )
            for c in on_parts:  # bound to the scan schema, whose partition columns are the partition schema's
                for i, keep in enumerate(evaluate(c.bound, values)):
                    if not keep and by_partition[i] is None:
                        by_partition[i] = c
        by_statistics = options.prune_statistics and any(f.table is not None for f in files)
        field_of = {f.name: f for f in self.listing.scan_schema}
        predicate_columns = sorted({n for c in conjuncts for n in c.columns})
        kept = []
        for info, partition_conjunct in zip(files, by_partition):
            tier, ruled_out = PARTITION_TIER, partition_conjunct
            if ruled_out is None and by_statistics and info.table is not None:
                tier, ruled_out = TABLE_STATISTICS, _ruled_out_by_table(info.table, conjuncts, field_of, predicate_columns)
            if ruled_out is None:
                kept.append(info)
                continue
            if info.table is not None:  # a plain file's rows and units are known from its footer only
                pruned.add("files")
                pruned.add("rows_total", info.table.num_records or 0)
                pruned.add("files_pruned_table_stats" if tier == TABLE_STATISTICS else "files_pruned_partition")
                pruned.decide(ruled_out.text, tier)
        if len(kept) < len(files):
            log.info(
                "lazyscan %s: partition values and table statistics kept %d of %d files",
                self.scan_id, len(kept), len(files),
            )
        return kept, pruned

    def partitions(self) -> list[InputPartition]:
        """Spark tasks: byte ranges of the files that survive partition pruning (and a table's
        statistics); the first task carries the profile of the files ruled out, reported with
        its own (an empty task when no file is left)."""
        files, pruned = self._prune_files()
        tasks = plan_tasks(self._as_tasks_read(files), self.settings.split_policy)
        if pruned.counters["files"]:
            first = tasks[0] if tasks else ScanTask(0, [])
            tasks[:1] = [ScanTask(first.index, first.splits, pruned.as_dict())]
        log.info("lazyscan %s: %d tasks over %d files", self.scan_id, len(tasks), len(self.listing.files))
        return list(tasks)

    def _as_tasks_read(self, files: list[FileInfo]) -> list[FileInfo]:
        """The files as the tasks read them: a table's data files without the statistics the
        table states of them when the driver ruled files out by those already (they are most of
        a planned file's pickled objects)."""
        options = ScanOptions.from_mapping(self.settings.scan_kwargs)
        if self.where is None or not (options.filter_in_scan and options.prune_statistics):
            return files
        return [f if f.table is None or not f.table.stats else replace(f, table=replace(f.table, stats={})) for f in files]

    def for_tasks(self) -> LazyScanReader:
        """This reader as the tasks of :meth:`partitions` need it, to ship with them: without
        the listing's files, which the tasks' byte ranges carry."""
        shipped = copy.copy(self)
        shipped.listing = replace(self.listing, files=())
        return shipped

    # ---- execution (executors) --------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Scan every byte range of the task and yield batches in Spark's Arrow schema."""
        if not isinstance(partition, ScanTask):
            return iter(())
        return self.read_task(partition)

    def read_task(self, task: ScanTask) -> Iterator[pa.RecordBatch]:
        """One scan over every byte range of the task (the adaptive predicate order and key
        filter switches learn across them), each batch shaped with its range's partition
        values and path; an error names the range it came from."""
        s: Scan | None = None
        split: FileSplit | None = None
        try:
            if not task.splits:
                return
            fs, _ = self.settings.filesystem.open(self.settings.paths[0])
            try:
                s = scan(
                    list(task.splits),
                    columns=self.scan_columns,
                    where=self.where,
                    schema=self.listing.scan_schema,
                    filesystem=fs,
                    **self.settings.scan_kwargs,
                )
                for part, batch in s.to_batches_by_file():
                    assert isinstance(part, FileSplit)
                    split = part
                    if batch.num_rows:
                        yield self.shaper.shape(batch, part.partition_values, part.path)
            except (LazyScanError, OSError, pa.ArrowException, ValueError, TypeError, KeyError, IndexError) as e:
                failed = (s.failed_part if s is not None else None) or split or task.splits[0]
                # the class is named: Spark passes on the message only
                raise LazyScanReadError(f"lazyscan cannot read {_describe_split(failed)}: {type(e).__name__}: {e}") from e
        finally:
            self._report(task, s.profile if s is not None else Profile())

    def _report(self, task: ScanTask, profile: Profile) -> None:
        if task.planned is not None:
            profile.merge(Profile.from_dict(task.planned))
        entry = task_entry(", ".join(self.settings.paths), profile)
        try:
            if self.accumulator is not None:
                self.accumulator.add({self.scan_id: entry})
            if self.settings.profile_dir:
                write_task_profile(self.settings.profile_dir, self.scan_id, task.index, entry)
        except Exception as e:  # reporting must never fail a task that read its data
            log.warning("lazyscan %s: could not report the task profile: %s", self.scan_id, e)


class LazyScanDataSource(DataSource):
    """Spark data source ``lazyscan``: selective Parquet scans with filter pushdown.

    Register it with :func:`lazyscan.spark.register` (which also enables Python filter pushdown
    and snapshots the session's split settings), then::

        # only a and b, filtered inside the scan (c need not be in the schema)
        spark.read.format("lazyscan").schema("a INT, b STRING").option("where", "c = 5").load(path)
        spark.read.format("lazyscan").load(path)                    # file, folder, glob, s3://...
        spark.read.format("lazyscan").option("batch_size", 8192).load(path)
        # only a and b (a JSON array also takes names holding commas)
        spark.read.format("lazyscan").option("columns", "a, b").load(path)
        spark.sql("CREATE TEMPORARY VIEW t USING lazyscan OPTIONS (path '/data/t')")
    """

    session_defaults: ClassVar[SessionDefaults] = SessionDefaults()
    profile_accumulator: ClassVar[Any] = None

    @classmethod
    def name(cls) -> str:
        return "lazyscan"

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        column_options = [v for k, v in options.items() if k.lower() == COLUMNS_OPTION.lower()]
        self.settings = SourceSettings.from_options(
            {k: v for k, v in options.items() if k.lower() != COLUMNS_OPTION.lower()}, self.session_defaults
        )
        #: the ``columns`` option: the only columns the source outputs (None: all)
        self.columns = parse_columns(column_options[0]) if column_options else None
        self._listing: Listing | None = None
        #: identifies this instance (one per loaded DataFrame) in every pickled copy
        self.source_id = uuid.uuid4().hex

    def schema(self) -> StructType:
        """Spark schema of the files (merged), hive partition columns appended; of a catalog
        table, the catalog's schema; only the ``columns`` option's columns when it is given."""
        if self.settings.table is not None:
            return self._only_columns(self.settings.table.schema)
        if self._listing is None:
            self._listing = build_listing(self.settings)
        return self._only_columns(self._listing.spark_schema)

    def _only_columns(self, schema: StructType) -> StructType:
        if self.columns is None:
            return schema
        names = schema.fieldNames()
        fields = []
        for c in self.columns:
            name = _resolve(c, names, self.settings.case_sensitive)
            if name is None:
                raise OptionError(f"option 'columns': no column {c!r}; columns: {', '.join(names)}")
            fields.append(schema[name])
        return StructType(fields)

    def _check_columns(self, schema: StructType) -> None:
        """A user schema and the ``columns`` option must name the same columns."""
        if self.columns is None:
            return
        names = schema.fieldNames()
        unknown = [n for n in names if _resolve(n, self.columns, self.settings.case_sensitive) is None]
        if unknown or len(names) != len(self.columns):
            raise OptionError(
                f"option 'columns' ({', '.join(self.columns)}) and the schema ({', '.join(names)}) "
                "name different columns"
            )

    def reader(self, schema: StructType) -> LazyScanReader:
        """A reader producing ``schema`` (the inferred schema or a user schema)."""
        self._check_columns(schema)
        if self._listing is None and self.settings.table is not None:
            self._listing = table_listing(self.settings, self.settings.table, schema)
        elif self._listing is None:
            self._listing = listing_for_schema(self.settings, schema)
        return LazyScanReader(
            self.settings, self._listing, schema, self.profile_accumulator, self.source_id
        )
