"""Options of the ``lazyscan`` Spark data source, validated on the driver.

Option names are case-insensitive and may be written camelCase or snake_case
(``batchSize`` = ``batch_size``). Three groups:

- source options, handled here: ``path`` / ``paths``, ``mergeSchema`` (default true),
  ``binaryAsString``, ``timeZone`` (of TIMESTAMP partition values), ``maxPartitionBytes``,
  ``openCostInBytes``, ``minPartitionNum``, ``maxPartitionNum`` (as the ``spark.sql.files.*``
  settings; sizes accept ``128m``, ``1g``), ``footerThreads`` (driver threads reading footers for
  schema inference), ``profileDir``, ``filesystem`` (``auto``, ``pyarrow`` or ``fsspec``) and
  ``fs.<name>`` (keyword arguments of the filesystem, e.g. ``fs.region``,
  ``fs.endpoint_override``), ``where`` (a filter in Spark SQL syntax evaluated inside the scan
  in addition to the filters Spark pushes; it may contain ``OR``, which Spark never pushes),
  ``pushFilters`` (``auto``, ``true``, ``false``: whether filters Spark pushes are used, see
  :mod:`lazyscan.spark.source`; the default comes from ``register(spark, push_filters=...)``),
  ``keyFilter.<column>`` (a key filter's text form, :meth:`lazyscan.KeyFilter.to_text`: the
  scan keeps rows whose ``column`` may hold one of its keys, probing adaptively), ``table`` and
  ``catalogTable`` (a table of the session catalog instead of a path, as
  :func:`lazyscan.spark.table_options` gives them; see :mod:`lazyscan.spark.catalog`),
  ``version`` and ``timestamp`` (time travel in a Delta Lake or Iceberg table read by path, see
  :mod:`lazyscan.spark.table_paths`), ``reroot`` (an Iceberg table copied from another
  location: ``old=new``, or a JSON object of old prefix -> new location), ``storage.<name>`` (``deltalake``'s storage options for a
  Delta table on an object store, e.g. ``storage.AWS_ENDPOINT_URL``);
- scan options: every field of :class:`lazyscan.scan.ScanOptions` (``batch_size``,
  ``materialization_threshold``, ``late_materialization``, ``adaptive_order``, the ``prune_*``
  switches, ``enabled=false`` for a plain read, ``rawFiles=true`` to read a Delta Lake or
  Iceberg table's folder as plain files on purpose, ...); ``threads`` defaults to 1 in Spark tasks,
  since Spark already runs one task per core;
- anything else is an error listing the accepted names.

Defaults for the split settings, the time zone and ``caseSensitive`` (column names resolved
exactly only, ``spark.sql.caseSensitive``) come from the session that called
:func:`lazyscan.spark.register` (snapshotted then; register again after changing them;
:func:`lazyscan.spark.read` reads them at each call).
"""

from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lazyscan.errors import OptionError
from lazyscan.io.source import filesystem_from_uri, s3_filesystem_for_lazyscan, s3_uri
from lazyscan.scan.options import ScanOptions
from lazyscan.spark.catalog import CatalogTable
from lazyscan.spark.planning import (
    DEFAULT_OPEN_COST_IN_BYTES,
    SplitPolicy,
)

_SIZE = re.compile(r"^\s*(\d+)\s*([kmgtp]?)(i?b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}

SOURCE_OPTIONS = (
    "path",
    "paths",
    "mergeSchema",
    "binaryAsString",
    "timeZone",
    "maxPartitionBytes",
    "openCostInBytes",
    "minPartitionNum",
    "maxPartitionNum",
    "footerThreads",
    "profileDir",
    "filesystem",
    "where",
    "pushFilters",
    "table",
    "catalogTable",
    "version",
    "timestamp",
    "reroot",
)
#: scan options whose Spark default differs from lazyscan's
SPARK_SCAN_DEFAULTS = {"threads": 1}
#: options ``keyFilter.<column>`` carry key filters
KEY_FILTER_PREFIX = "keyFilter."
#: options ``storage.<name>`` are ``deltalake``'s storage options (a Delta table on an object store)
STORAGE_PREFIX = "storage."
#: table properties Spark adds to the options of a catalog table (``CREATE TABLE ... USING``)
CATALOG_PROPERTIES = frozenset(
    {"owner", "provider", "location", "comment", "external", "is_managed_location", "collation"}
)
#: scan options the data source sets itself
_RESERVED_SCAN = {"merge_schema", "time_zone"}


def _key(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


def parse_size(name: str, value: Any) -> int:
    """A byte size: an integer, or a number with a unit (``128m``, ``1g``, ``64MB``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        n = value
    else:
        m = _SIZE.match(str(value))
        if not m:
            raise OptionError(f"option {name!r} expects a byte size such as 134217728 or 128m, got {value!r}")
        n = int(m.group(1)) * _UNITS[m.group(2).lower()]
    if n <= 0:
        raise OptionError(f"option {name!r} must be positive, got {value!r}")
    return n


def _parse_bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise OptionError(f"option {name!r} expects true or false, got {value!r}")


def _parse_int(name: str, value: Any, minimum: int = 1) -> int:
    try:
        n = int(str(value).strip())
    except ValueError:
        raise OptionError(f"option {name!r} expects an integer, got {value!r}") from None
    if n < minimum:
        raise OptionError(f"option {name!r} must be at least {minimum}, got {value!r}")
    return n


def _fs_value(text: str) -> Any:
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if re.fullmatch(r"-?\d+", text.strip()):
        return int(text)
    return text


@dataclass(frozen=True)
class SessionDefaults:
    """Settings of the session that registered the source (snapshotted by ``register``)."""

    max_partition_bytes: int | None = None
    open_cost_in_bytes: int = DEFAULT_OPEN_COST_IN_BYTES
    min_partition_num: int = 1
    max_partition_num: int | None = None
    time_zone: str = "UTC"
    #: default of the ``pushFilters`` option (``register(spark, push_filters=...)``)
    push_filters: str = "auto"
    #: ``spark.sql.caseSensitive``: the default of the ``caseSensitive`` scan option
    case_sensitive: bool = False


@dataclass(frozen=True)
class FilesystemSpec:
    """How to open the source's paths: pyarrow's filesystem for a URI, or fsspec, with keyword
    arguments. Rebuilt in every task (filesystem objects are not shipped)."""

    kind: str = "auto"
    options: tuple[tuple[str, Any], ...] = ()

    def open(self, uri: str) -> tuple[Any, str]:
        """``(filesystem or None, path on it)`` for ``uri``; ``None`` means a local path."""
        uri = s3_uri(uri)
        if uri.startswith("file:"):
            uri = "/" + uri[len("file:") :].lstrip("/")
        if "://" not in uri:
            if self.kind == "fsspec" and self.options:
                import fsspec

                return fsspec.filesystem("file", **dict(self.options)), uri
            return None, uri
        scheme, rest = uri.split("://", 1)
        kwargs = dict(self.options)
        if self.kind == "fsspec":
            import fsspec

            fs = fsspec.filesystem(scheme, **kwargs)
            return fs, fs._strip_protocol(uri)
        import pyarrow.fs as pafs

        if not kwargs:
            return filesystem_from_uri(uri)
        makers = {
            "s3": "S3FileSystem",
            "gs": "GcsFileSystem",
            "gcs": "GcsFileSystem",
            "hdfs": "HadoopFileSystem",
            "abfs": "AzureFileSystem",
            "abfss": "AzureFileSystem",
        }
        maker = makers.get(scheme)
        if maker is None:
            raise OptionError(
                f"fs.* options are not supported for {scheme}:// with pyarrow; "
                "set filesystem=fsspec"
            )
        try:
            fs = getattr(pafs, maker)(**kwargs)
        except TypeError as e:
            raise OptionError(f"bad fs.* option for {maker}: {e}") from None
        if isinstance(fs, pafs.S3FileSystem) and "retry_strategy" not in kwargs:
            # lazyscan's sources retry, each attempt and wait counted in the scan's profile
            fs = s3_filesystem_for_lazyscan(fs)
        return fs, rest


@dataclass(frozen=True)
class SourceSettings:
    """Everything a read needs from its options, validated."""

    paths: tuple[str, ...]
    merge_schema: bool = True
    binary_as_string: bool = False
    time_zone: str = "UTC"
    split_policy: SplitPolicy = field(default_factory=SplitPolicy)
    footer_threads: int = 16
    profile_dir: str | None = None
    where: str | None = None
    push_filters: str = "auto"
    filesystem: FilesystemSpec = field(default_factory=FilesystemSpec)
    scan_options: tuple[tuple[str, Any], ...] = ()
    #: ``keyFilter.<column>`` options: (column, the filter's text form)
    key_filters: tuple[tuple[str, str], ...] = ()
    #: the catalog table read (the ``table`` and ``catalogTable`` options); ``paths`` is then
    #: its location
    table: CatalogTable | None = None
    #: time travel in a Delta Lake or Iceberg table read by path (``version``, ``timestamp``)
    version: int | None = None
    timestamp: str | None = None
    #: ``storage.<name>`` options: how ``deltalake`` reaches a Delta table on an object store
    storage_options: tuple[tuple[str, str], ...] = ()
    #: the ``reroot`` option: (old prefix, new location) of an Iceberg table copied elsewhere
    reroot: tuple[tuple[str, str], ...] = ()

    @property
    def scan_kwargs(self) -> dict[str, Any]:
        return {**dict(self.scan_options), "time_zone": self.time_zone}

    @property
    def case_sensitive(self) -> bool:
        """Whether column names resolve exactly only (``spark.sql.caseSensitive``)."""
        return bool(dict(self.scan_options).get("case_sensitive", False))

    @classmethod
    def from_options(
        cls, options: Mapping[str, str], defaults: SessionDefaults | None = None
    ) -> SourceSettings:
        """Validate the data source options; raises :class:`OptionError` on a bad name or value."""
        d = defaults or SessionDefaults()
        source = {_key(n): n for n in SOURCE_OPTIONS}
        scan_names = {_key(n): n for n in ScanOptions.names() if n not in _RESERVED_SCAN}
        values: dict[str, Any] = {}
        scan: dict[str, Any] = dict(SPARK_SCAN_DEFAULTS)
        fs_options: dict[str, Any] = {}
        key_filters: list[tuple[str, str]] = []
        storage: dict[str, str] = {}
        for raw_name, value in options.items():
            if raw_name.lower().startswith(STORAGE_PREFIX):
                storage[raw_name[len(STORAGE_PREFIX):]] = str(value)
                continue
            if raw_name.lower().startswith("fs."):
                fs_options[raw_name[3:]] = _fs_value(str(value))
                continue
            if raw_name.lower().startswith(KEY_FILTER_PREFIX.lower()):
                column = raw_name[len(KEY_FILTER_PREFIX) :]
                if not column:
                    raise OptionError(f"option {raw_name!r} names no column: use keyFilter.<column>")
                key_filters.append((column, str(value)))
                continue
            k = _key(raw_name)
            if raw_name.lower() in CATALOG_PROPERTIES or raw_name.lower().startswith("spark.sql."):
                continue
            if k in source:
                values[source[k]] = value
            elif k in scan_names:
                scan[scan_names[k]] = value
            else:
                accepted = [
                    *sorted(set(SOURCE_OPTIONS) | set(scan_names.values())), "fs.<name>", "keyFilter.<column>",
                    "storage.<name>",
                ]
                raise OptionError(
                    f"unknown option {raw_name!r} for the lazyscan data source; accepted: "
                    + ", ".join(accepted)
                )
        table = _table(values)
        paths = (table.location,) if table is not None else _paths(values)
        scan.setdefault("case_sensitive", d.case_sensitive)
        checked = ScanOptions.from_mapping(scan)
        scan_kwargs = {k: getattr(checked, k) for k in scan}
        kind = str(values.get("filesystem", "auto")).lower()
        if kind not in ("auto", "pyarrow", "fsspec"):
            raise OptionError(f"option 'filesystem' accepts auto, pyarrow or fsspec, got {kind!r}")
        max_num = values.get("maxPartitionNum")
        return cls(
            paths=paths,
            merge_schema=_parse_bool("mergeSchema", values.get("mergeSchema", True)),
            binary_as_string=_parse_bool("binaryAsString", values.get("binaryAsString", False)),
            time_zone=str(values.get("timeZone", d.time_zone)),
            split_policy=SplitPolicy(
                max_partition_bytes=(
                    parse_size("maxPartitionBytes", values["maxPartitionBytes"])
                    if values.get("maxPartitionBytes") is not None
                    else d.max_partition_bytes
                ),
                open_cost_in_bytes=parse_size(
                    "openCostInBytes", values.get("openCostInBytes", d.open_cost_in_bytes)
                ),
                min_partition_num=_parse_int(
                    "minPartitionNum", values.get("minPartitionNum", d.min_partition_num)
                ),
                max_partition_num=(
                    _parse_int("maxPartitionNum", max_num) if max_num is not None else d.max_partition_num
                ),
            ),
            footer_threads=_parse_int("footerThreads", values.get("footerThreads", 16)),
            profile_dir=values.get("profileDir") or None,
            where=values.get("where") or None,
            push_filters=push_mode(values.get("pushFilters", d.push_filters)),
            filesystem=FilesystemSpec(kind, tuple(sorted(fs_options.items()))),
            scan_options=tuple(sorted(scan_kwargs.items())),
            key_filters=tuple(sorted(key_filters)),
            table=table,
            version=_parse_int("version", values["version"], minimum=0) if values.get("version") is not None else None,
            timestamp=str(values["timestamp"]) if values.get("timestamp") is not None else None,
            storage_options=tuple(sorted(storage.items())),
            reroot=parse_reroot(values["reroot"]) if values.get("reroot") else (),
        )


def parse_reroot(value: Any) -> tuple[tuple[str, str], ...]:
    """The ``reroot`` option: ``old=new`` (as the command line's ``--reroot``), or a JSON object
    of old prefix -> new location; a dict given to :func:`lazyscan.spark.read` arrives as its
    text, which is read alike."""
    if isinstance(value, Mapping):
        pairs = dict(value)
    else:
        text = str(value).strip()
        if text.startswith("{"):
            try:
                pairs = json.loads(text)
            except ValueError:
                try:
                    pairs = ast.literal_eval(text)
                except (ValueError, SyntaxError):
                    raise OptionError(f"option 'reroot' is no JSON object of old prefix -> new location: {text!r}") from None
        else:
            old, eq, new = text.partition("=")
            if not eq:
                raise OptionError(f"option 'reroot' expects old=new or a JSON object of old prefix -> new location, got {text!r}")
            pairs = {old.strip(): new.strip()}
    if not isinstance(pairs, dict) or not all(isinstance(k, str) and isinstance(v, str) and k and v for k, v in pairs.items()):
        raise OptionError(f"option 'reroot' maps old location prefixes to new locations (text to text), got {value!r}")
    return tuple(sorted((old, absolute_local_path(new)) for old, new in pairs.items()))


def push_mode(value: Any) -> str:
    """Normalize a ``pushFilters`` value: ``auto``, ``true`` or ``false``."""
    text = str(value).strip().lower()
    if text == "auto":
        return text
    return "true" if _parse_bool("pushFilters", value) else "false"


def _table(values: dict[str, Any]) -> CatalogTable | None:
    """The catalog table of the ``table`` / ``catalogTable`` options, or None."""
    name, described = values.get("table"), values.get("catalogTable")
    if not name and not described:
        return None
    if values.get("path") or values.get("paths"):
        raise OptionError("the lazyscan data source reads a path or a table, not both: drop the path or the table option")
    if not described:
        raise OptionError(
            f"option 'table' ({name}) needs the catalog's description of the table: Spark plans a "
            "Python data source in a worker process that cannot ask the session catalog, so the "
            "driver does: spark.read.format('lazyscan').options(**lazyscan.spark.table_options("
            f"spark, {str(name)!r})).load(), or lazyscan.spark.read(spark, {str(name)!r}, columns, where)"
        )
    return CatalogTable.from_json(str(described))


def _paths(values: dict[str, Any]) -> tuple[str, ...]:
    out: list[str] = []
    raw = values.get("paths")
    if raw:
        try:
            parsed = json.loads(raw)
        except (TypeError, ValueError):
            parsed = [p for p in str(raw).split(",") if p]
        if isinstance(parsed, str):
            parsed = [parsed]
        out.extend(str(p) for p in parsed)
    if values.get("path"):
        out.insert(0, str(values["path"]))
    if not out:
        raise OptionError(
            "the lazyscan data source needs a path: spark.read.format('lazyscan').load(path)"
        )
    return tuple(dict.fromkeys(absolute_local_path(p) for p in out))


def absolute_local_path(path: str) -> str:
    """A local path made absolute where it is planned (the driver), as Spark resolves relative
    paths against the driver's working folder; executors run in folders of their own. URIs
    (``s3://``, ``file:``, ...) stay as they are."""
    if "://" in path or path.startswith("file:") or os.path.isabs(path):
        return path
    return os.path.abspath(path)
