"""Finding the files of a scan: paths, globs, directories with hive-style partition folders.

:func:`discover` lists the Parquet files of a source and the partition values encoded in their
folder names (``key=value``, typed the way Spark infers partition column types); a
:class:`Dataset` then gives the merged Arrow schema of the files plus the partition columns.
Hidden files and folders (names starting with ``_`` or ``.``, such as ``_SUCCESS``) are skipped,
as Spark does. Each :class:`FileInfo` pins the version of its file the plan is made from: the
identity the listing gives (a local stat; an object's ETag or Last-Modified where the listing
has them), replaced by the identity and footer digest of an open where planning reads the file.

A Delta Lake or Apache Iceberg table is not a pile of files: its folder keeps the files of older
versions and rows the table removed. A path that is such a table, lies inside one or holds one
(a ``_delta_log`` folder at the table's root; a ``metadata`` folder holding Iceberg's
``*.metadata.json`` or ``version-hint.text``, the data under ``data/``) raises a
:class:`~lazyscan.errors.TableFolderError` unless ``raw_files=True`` asks for the raw files; an
Iceberg table's ``metadata`` folder is never listed as data. The check rides on the listing;
above the path, local folders are checked up to the file system's root, folders on an object
store :data:`REMOTE_ANCESTORS` levels up (a request or two each).
"""

from __future__ import annotations

import datetime as dt
import decimal
import glob as globlib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar
from urllib.parse import unquote

import pyarrow as pa

from lazyscan.errors import (
    FileChangedError,
    LazyScanError,
    ObjectNotFoundError,
    SourceError,
    TableFolderError,
)
from lazyscan.io.retry import DEFAULT_RETRY, RetryPolicy
from lazyscan.io.source import (
    FileIdentity,
    IOStats,
    call_with_retries,
    filesystem_from_uri,
    local_identity,
)

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


@dataclass(frozen=True)
class FileInfo:
    """One data file: path (as the filesystem names it), size in bytes, partition values.

    ``identity`` and ``footer_digest`` pin the version of the file a plan was made from (see
    :func:`check_planned`): the identity as the listing or an open saw it, the digest of the
    footer where planning read it; None where not known.
    """

    path: str
    size: int
    partition_values: dict[str, Any] = field(default_factory=dict)
    identity: FileIdentity | None = None
    footer_digest: bytes | None = None
    #: for a data file of a table: how to read it (:class:`~lazyscan.tables.plan.FileRead`)
    table: Any = None


@dataclass(frozen=True)
class FileSplit:
    """A byte range of a file: a scan of it reads the row groups whose midpoint lies inside.
    ``size``, ``identity`` and ``footer_digest`` are the file's as planned (:class:`FileInfo`)."""

    path: str
    start: int
    length: int
    size: int
    partition_values: dict[str, Any] = field(default_factory=dict)
    identity: FileIdentity | None = None
    footer_digest: bytes | None = None
    #: for a data file of a table: how to read it (:class:`~lazyscan.tables.plan.FileRead`)
    table: Any = None


_Pinned = TypeVar("_Pinned", FileInfo, FileSplit)


def pinned(info: _Pinned, file: Any) -> _Pinned:
    """``info`` pinned to the version of the file ``file`` (a :class:`~lazyscan.format.units.UnitFile`
    open on it) read: its source's identity and its footer's digest."""
    return replace(info, size=file.source.size, identity=file.source.identity, footer_digest=file.footer_digest)


def check_planned(info: FileInfo | FileSplit, file: Any) -> None:
    """Raise :class:`FileChangedError` naming the file when ``file`` (just opened: its identity
    and footer come from this open, no request is made) is not the version ``info`` pins: another
    size, modification time, inode, ETag or version id, or another footer."""
    source = file.source
    difference = None
    if info.identity is not None:
        difference = info.identity.describe_difference(source.identity)
    elif info.size != source.size:
        difference = f"size {info.size} -> {source.size}"
    if difference is None and info.footer_digest is not None and info.footer_digest != file.footer_digest:
        difference = "its footer differs from the one the plan was made from"
    if difference is not None:
        raise FileChangedError(f"changed since planning: {difference}", file=source.path)


#: object-store files schema discovery keeps open for the scan
_KEEP_OPEN = 64


def _is_hidden(name: str) -> bool:
    return name.startswith((".", "_")) and "=" not in name


#: the folder of a Delta Lake table's log, at the table's root
DELTA_LOG = "_delta_log"
#: the folder of an Apache Iceberg table's metadata, at the table's root
ICEBERG_METADATA = "metadata"
#: the folder of an Apache Iceberg table's data files (by default), at the table's root
ICEBERG_DATA = "data"
#: folders above a path on an object store checked for a table's root
REMOTE_ANCESTORS = 4


@dataclass(frozen=True)
class TableRoot:
    """A table found where plain files were to be listed: ``kind`` (``delta`` or ``iceberg``),
    its ``root`` folder and the ``marker`` that says so (the Delta log folder, an Iceberg
    metadata file)."""

    kind: str
    root: str
    marker: str


#: the names of Iceberg's table metadata files: ``v<N>.metadata.json`` (tables of a file system
#: catalog) or ``<NNNNN>-<uuid>.metadata.json`` (other catalogs), either gzip-compressed, and
#: the version hint (``version-hint.text``; some writers name it ``version-hint.txt``)
_ICEBERG_METADATA_NAME = re.compile(
    r"(v\d+|\d+-[0-9a-fA-F-]+)(\.gz)?\.metadata\.json(\.gz)?|version-hint\.te?xt"
)


def _is_iceberg_metadata(name: str) -> bool:
    return _ICEBERG_METADATA_NAME.fullmatch(name) is not None


def _join(folder: str, name: str) -> str:
    """``folder/name`` on an object store (paths there always use ``/``)."""
    return f"{folder.rstrip('/')}/{name}"


def _local_iceberg_marker(metadata: str) -> str | None:
    """An Iceberg metadata file in the local folder ``metadata``, if any."""
    try:
        names = sorted(os.listdir(metadata))
    except OSError:
        return None
    for name in names:
        if _is_iceberg_metadata(name):
            return os.path.join(metadata, name)
    return None


def table_at(folder: str) -> TableRoot | None:
    """The table whose root is the local ``folder``, if it is one."""
    log = os.path.join(folder, DELTA_LOG)
    if os.path.isdir(log):
        return TableRoot("delta", folder, log)
    metadata = os.path.join(folder, ICEBERG_METADATA)
    marker = _local_iceberg_marker(metadata) if os.path.isdir(metadata) else None
    return None if marker is None else TableRoot("iceberg", folder, marker)


def _local_table_above(path: str, seen: dict[str, TableRoot | None]) -> TableRoot | None:
    """The table a local ``path`` is or lies inside: the nearest folder that is a table's root,
    the folder ``path`` itself first (each folder looked at once per ``seen``)."""
    here = os.path.abspath(path)
    folder = here if os.path.isdir(here) else os.path.dirname(here)
    while True:
        if folder not in seen:
            seen[folder] = table_at(folder)
        if seen[folder] is not None:
            return seen[folder]
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _tables_in_listing(root: str, paths: Sequence[str]) -> list[TableRoot]:
    """The tables an object-store listing of ``root`` (every path under it, hidden ones
    included) shows: folders holding a Delta log or Iceberg metadata files."""
    found: dict[str, TableRoot] = {}
    base = root.rstrip("/")
    for path in paths:
        rel = path[len(base) :].strip("/").split("/")
        for i, part in enumerate(rel[:-1]):
            if part == DELTA_LOG:
                folder = "/".join([base, *rel[:i]])
                found.setdefault(folder, TableRoot("delta", folder, _join(folder, DELTA_LOG)))
                break
        if len(rel) >= 2 and rel[-2] == ICEBERG_METADATA and _is_iceberg_metadata(rel[-1]):
            folder = "/".join([base, *rel[:-2]])
            if folder not in found:
                found[folder] = TableRoot("iceberg", folder, path)
    return sorted(found.values(), key=lambda t: t.root)


def _remote_table_above(
    path: str, is_folder: bool, filesystem: Any, ask: Callable[[Callable[[], Any], str], Any]
) -> TableRoot | None:
    """The table a path on an object store lies inside, looking :data:`REMOTE_ANCESTORS`
    folders up: one holding a ``_delta_log`` folder, or the parent of a ``data`` folder (the
    path itself included) holding Iceberg metadata files. Each folder costs a request or two."""
    parts = path.strip("/").split("/")
    lowest = len(parts) if is_folder else len(parts) - 1
    for end in range(lowest, max(0, len(parts) - REMOTE_ANCESTORS - 1), -1):
        folder = "/".join(parts[:end])
        if end < len(parts):  # the path itself is listed: its own log is in the listing
            log = _join(folder, DELTA_LOG)
            if _remote_is_folder(log, filesystem, ask):
                return TableRoot("delta", folder, log)
        if parts[end - 1] == ICEBERG_DATA and end >= 2:
            root = "/".join(parts[: end - 1])
            marker = _remote_iceberg_marker(_join(root, ICEBERG_METADATA), filesystem, ask)
            if marker is not None:
                return TableRoot("iceberg", root, marker)
    return None


def _remote_is_folder(path: str, filesystem: Any, ask: Callable[[Callable[[], Any], str], Any]) -> bool:
    """Whether the folder ``path`` on an object store holds anything: one request (a listing
    of it, which a missing folder answers empty; a HEAD would take a listing more)."""
    import pyarrow.fs as pafs

    what = f"asking whether {path!r} is a table's log"
    if isinstance(filesystem, pafs.FileSystem):
        selector = pafs.FileSelector(path, allow_not_found=True)
        return bool(ask(lambda: filesystem.get_file_info(selector), what))
    return bool(ask(lambda: _isdir(filesystem, path), what))


def _isdir(filesystem: Any, path: str) -> bool:
    """fsspec's ``isdir``; a filesystem object that only answers ``info`` (a minimal one
    written for one purpose) is asked that."""
    if hasattr(filesystem, "isdir"):
        return bool(filesystem.isdir(path))
    try:
        return bool(filesystem.info(path).get("type") == "directory")
    except FileNotFoundError:
        return False


def _remote_iceberg_marker(
    metadata: str, filesystem: Any, ask: Callable[[Callable[[], Any], str], Any]
) -> str | None:
    """An Iceberg metadata file in the folder ``metadata`` on an object store, if any: one
    request where the folder is missing, two at most where it is there."""
    import pyarrow.fs as pafs

    what = f"listing {metadata!r} for Iceberg metadata"
    if isinstance(filesystem, pafs.FileSystem):
        selector = pafs.FileSelector(metadata, allow_not_found=True)
        names = [i.path for i in ask(lambda: filesystem.get_file_info(selector), what)]
    else:
        if not ask(lambda: _isdir(filesystem, metadata), what) or not hasattr(filesystem, "ls"):
            return None
        try:
            names = list(ask(lambda: filesystem.ls(metadata, detail=False), what))
        except ObjectNotFoundError:
            return None
    for name in sorted(names):
        if _is_iceberg_metadata(name.rstrip("/").rsplit("/", 1)[-1]):
            return str(name)
    return None


_KIND_NAMES = {"delta": "Delta Lake", "iceberg": "Apache Iceberg"}


def table_folder_error(path: str, table: TableRoot, remote: bool = False) -> TableFolderError:
    """The error refusing to read ``path`` (on an object store where ``remote``) as plain
    files: what it is, where, and how to read it."""
    name = _KIND_NAMES[table.kind]
    article = "a" if table.kind == "delta" else "an"
    if remote:
        here, root, sep = path.rstrip("/"), table.root.rstrip("/"), "/"
    else:
        here, root, sep = os.path.abspath(path), os.path.abspath(table.root), os.sep
    if here == root:
        relation = f"is {article} {name} table"
    elif root.startswith(here.rstrip(sep) + sep):
        relation = f"holds {article} {name} table at {table.root}"
    else:
        relation = f"lies inside {article} {name} table at {table.root}"
    if table.kind == "delta":
        evidence = f"its log is {table.marker}"
        removed = "rows the table removed (the files of its older versions stay in the folder)"
        reader = (
            f"lazyscan.scan({table.root!r}) reads the table (time travel: version= or timestamp=; "
            "a filter on its partition columns reads only their files)"
        )
    else:
        evidence = f"its metadata is {table.marker}"
        removed = (
            "rows the table removed (the files of its older snapshots stay in the folder, and its "
            "delete files are not applied)"
        )
        reader = f"lazyscan.scan({table.root!r}) reads the table (time travel: snapshot_id= or as_of=)"
    return TableFolderError(
        f"{path} {relation} ({evidence}): reading its folder as plain files would return {removed}; "
        f"{reader}; or, to read the Parquet and ORC files "
        "in the folder as they are on purpose, pass the scan option raw_files=True "
        "(command line: --raw-files; Spark: the option rawFiles=true of lazyscan.spark.read or the lazyscan "
        "data source)",
        path=path, root=table.root, kind=table.kind,
    )


def _has_glob(path: str) -> bool:
    return any(ch in path for ch in "*?[")


#: a listed file: path, size and identity (None where the listing does not give one that an
#: open would give alike)
_Listed = tuple[str, int, "FileIdentity | None"]


def _local_file(path: str) -> _Listed:
    """A local file as listed: the identity its open will have (the same stat fields)."""
    identity = local_identity(os.stat(path))
    return path, identity.size, identity


def _list_local(root: str, tables: list[TableRoot] | None = None) -> list[_Listed]:
    """The files under the local folder ``root``; the tables found on the way are added to
    ``tables`` (an Iceberg table's ``metadata`` folder is not listed)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        if DELTA_LOG in dirnames or ICEBERG_METADATA in dirnames:
            table = table_at(dirpath)
            if table is not None and tables is not None:
                tables.append(table)
            if ICEBERG_METADATA in dirnames and _local_iceberg_marker(os.path.join(dirpath, ICEBERG_METADATA)):
                dirnames.remove(ICEBERG_METADATA)  # manifests and metadata, never data
        dirnames[:] = sorted(d for d in dirnames if not _is_hidden(d))
        for name in sorted(filenames):
            if _is_hidden(name) or name.endswith(".crc"):
                continue
            out.append(_local_file(os.path.join(dirpath, name)))
    return out


def _list_remote(
    root: str,
    filesystem: Any,
    retry: RetryPolicy | None = None,
    raw_files: bool = False,
    probes: IOStats | None = None,
) -> list[_Listed]:
    """The files under ``root`` (or ``root`` itself), each request of the listing retried under
    ``retry`` (None: :data:`DEFAULT_RETRY`): a 403 is an :class:`AccessDeniedError`, a missing
    path an :class:`ObjectNotFoundError`, throttling past the budget a
    :class:`TransientSourceError`. Unless ``raw_files``, a :class:`TableFolderError` when
    ``root`` is, holds or lies inside a Delta Lake or Iceberg table; the requests looking for
    a table above ``root`` and their retries are counted in ``probes``."""
    policy = retry or DEFAULT_RETRY

    def ask(request: Callable[[], Any], what: str) -> Any:
        return call_with_retries(request, path=root, what=what, policy=policy, action="list")

    def probe(request: Callable[[], Any], what: str) -> Any:
        if probes is not None:
            probes.add(0, 0.0)
        return call_with_retries(request, path=root, what=what, policy=policy, action="list", stats=probes)

    tables: list[TableRoot] = []
    files = _list_on(root, filesystem, ask, tables)
    if not raw_files:
        if tables:
            raise table_folder_error(root, tables[0], remote=True)
        is_folder = len(files) != 1 or files[0][0] != root
        above = _remote_table_above(root, is_folder, filesystem, probe)
        if above is not None:
            raise table_folder_error(root, above, remote=True)
    return files


def _store_file(path: str, size: int, meta: dict[str, Any] | None = None, seconds: int | None = None) -> _Listed:
    """An object as listed: size, and the ETag and version id where the listing gives them.
    ``seconds``: its modification time in whole seconds, where an open learns it from an S3 HEAD
    (whose Last-Modified has no finer unit); a listing's finer time is not kept."""
    etag = version = None
    if meta:
        lower = {str(k).lower(): v for k, v in meta.items()}
        etag = lower.get("etag") or None
        version = lower.get("versionid") or lower.get("version_id") or None
    if etag is None and version is None and seconds is None:
        return path, size, None
    return path, size, FileIdentity(
        size=size, mtime_ns=None if seconds is None else seconds * 1_000_000_000,
        etag=str(etag) if etag else None, version_id=str(version) if version else None,
    )


def _arrow_file(info: Any, filesystem: Any) -> _Listed:
    """A file of a pyarrow listing: on S3, with the whole seconds of its modification time (what
    the open's HEAD says too), elsewhere its size alone (an open may learn the time another way)."""
    import pyarrow.fs as pafs

    seconds = None
    if isinstance(filesystem, pafs.S3FileSystem) and info.mtime_ns is not None:
        seconds = info.mtime_ns // 1_000_000_000
    return _store_file(info.path, info.size, seconds=seconds)


def _list_on(
    root: str,
    filesystem: Any,
    ask: Callable[[Callable[[], Any], str], Any],
    tables: list[TableRoot] | None = None,
) -> list[_Listed]:
    """The listing of ``root``; ``ask(request, what)`` makes each request to the store. The
    tables the listing shows are added to ``tables``; their Iceberg metadata is not listed."""
    import pyarrow.fs as pafs

    if isinstance(filesystem, pafs.FileSystem):
        info = ask(lambda: filesystem.get_file_info(root), "asking what it is")
        if info.type == pafs.FileType.NotFound:
            raise ObjectNotFoundError(f"path not found: {root!r}")
        if info.type == pafs.FileType.File:
            return [_arrow_file(info, filesystem)]
        infos = ask(lambda: filesystem.get_file_info(pafs.FileSelector(root, recursive=True)), "listing it")
        found = _tables_in_listing(root, [i.path for i in infos if i.type == pafs.FileType.File])
        skipped = _iceberg_metadata_folders(found)
        files = []
        for i in infos:
            if i.type != pafs.FileType.File or i.path.startswith(skipped):
                continue
            rel = i.path[len(root) :].strip("/").split("/")
            if any(_is_hidden(part) for part in rel):
                continue
            files.append(_arrow_file(i, filesystem))
        if tables is not None:
            tables += found
        return sorted(files)
    # fsspec
    try:
        meta = ask(lambda: filesystem.info(root), "asking what it is")
    except ObjectNotFoundError:
        raise ObjectNotFoundError(f"path not found: {root!r}") from None
    if meta.get("type") != "directory":
        return [_store_file(root, int(meta.get("size", 0)), meta)]
    listing = ask(lambda: filesystem.find(root, detail=True), "listing it")
    found = _tables_in_listing(root, [p for p, m in listing.items() if m.get("type") != "directory"])
    skipped = _iceberg_metadata_folders(found)
    files = []
    for path, meta in sorted(listing.items()):
        rel = path[len(root.rstrip("/")) :].strip("/").split("/")
        if any(_is_hidden(part) for part in rel) or meta.get("type") == "directory" or path.startswith(skipped):
            continue
        files.append(_store_file(path, int(meta.get("size", 0)), meta))
    if tables is not None:
        tables += found
    return files


def _iceberg_metadata_folders(tables: Sequence[TableRoot]) -> tuple[str, ...]:
    """The prefixes of the Iceberg tables' ``metadata`` folders (never data files)."""
    return tuple(_join(t.root, ICEBERG_METADATA) + "/" for t in tables if t.kind == "iceberg")


#: Spark's bounds of its integral partition types (``Integer.parseInt``, ``Long.parseLong``)
_INT_RANGE = (-(2**31), 2**31)
_LONG_RANGE = (-(2**63), 2**63)
#: the largest precision of a Spark decimal
_MAX_DECIMAL_PRECISION = 38
_INTEGRAL_TEXT = re.compile(r"[+-]?[0-9]+")
_FRACTIONAL_TEXT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)")


def _infer_value(text: str) -> Any:
    """Spark's partition value inference (``PartitioningUtils.inferPartitionColumnValue``):
    int, long, an integral decimal of up to 38 digits, double, date, timestamp, string."""
    if text == HIVE_NULL:
        return None
    if _INTEGRAL_TEXT.fullmatch(text):
        value = int(text)
        if _LONG_RANGE[0] <= value < _LONG_RANGE[1]:
            return value
        if len(decimal.Decimal(text).as_tuple().digits) <= _MAX_DECIMAL_PRECISION:
            return decimal.Decimal(text)
        return float(text)
    if _FRACTIONAL_TEXT.fullmatch(text.strip()):  # Java's parseDouble trims; it takes no ``_``
        return float(text)
    try:
        return dt.date.fromisoformat(text) if len(text) == 10 else dt.datetime.fromisoformat(text)
    except ValueError:
        return text


def _value_type(value: Any) -> pa.DataType:
    if isinstance(value, str):
        return pa.string()
    if isinstance(value, int):
        return pa.int32() if _INT_RANGE[0] <= value < _INT_RANGE[1] else pa.int64()
    if isinstance(value, decimal.Decimal):
        return pa.decimal128(max(1, len(value.as_tuple().digits)), 0)
    if isinstance(value, float):
        return pa.float64()
    if isinstance(value, dt.datetime):  # before date: a datetime is a date
        return pa.timestamp("us")
    if isinstance(value, dt.date):
        return pa.date32()
    return pa.string()


#: the precision of the decimal an integral type widens to, as in Spark's type coercion
_DECIMAL_OF = {pa.int32(): 10, pa.int64(): 20}


def _wider_type(left: pa.DataType, right: pa.DataType) -> pa.DataType:
    """Spark's ``findWiderTypeForPartitionColumn``: a double with a long or a decimal is a
    string (either would lose digits); otherwise the wider of the two, a string where there
    is none."""
    if left == right:
        return left
    pair = {left, right}
    if pair == {pa.int32(), pa.int64()}:
        return pa.int64()
    if pair == {pa.int32(), pa.float64()}:
        return pa.float64()
    if pair == {pa.date32(), pa.timestamp("us")}:
        return pa.timestamp("us")
    if all(pa.types.is_decimal(t) or t in _DECIMAL_OF for t in pair):
        precision = max(t.precision if pa.types.is_decimal(t) else _DECIMAL_OF[t] for t in pair)
        return pa.decimal128(precision, 0)
    return pa.string()


def _arrow_type_of_values(values: list[Any]) -> pa.DataType:
    present = [v for v in values if v is not None]
    if not present:
        return pa.string()
    types = {_value_type(v) for v in present}
    merged = types.pop()
    for t in types:
        merged = _wider_type(merged, t)
    return merged


def _coerce(value: Any, raw: str, atype: pa.DataType) -> Any:
    if value is None:
        return None
    if pa.types.is_string(atype):
        return raw
    if pa.types.is_floating(atype):
        return float(value)
    if pa.types.is_decimal(atype):
        return decimal.Decimal(value)
    if pa.types.is_timestamp(atype) and not isinstance(value, dt.datetime):
        return dt.datetime.combine(value, dt.time())  # a date among timestamps: its midnight
    return value


@dataclass
class Dataset:
    """The files of a source and their partition columns."""

    root: str | None
    files: list[FileInfo]
    partition_schema: pa.Schema
    filesystem: Any = None
    _file_schema: pa.Schema | None = None
    #: ``parquet``, ``orc`` or None (each file recognized by its extension or first bytes)
    format: str | None = None
    #: object-store files opened to read their schema, kept for the scan (a HEAD and a
    #: footer request fewer each); at most ``_KEEP_OPEN``
    _opened: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    #: the unit ORC timestamps are read in (``ScanOptions.timestamp_unit``)
    timestamp_unit: str = "us"
    #: how the requests of planning (opens, footers) are retried (``ScanOptions.retry_seconds``)
    retry: RetryPolicy | None = None
    #: the requests on an object store that looked for a table above the paths, and their retries
    probes: IOStats = field(default_factory=IOStats, repr=False, compare=False)
    #: whether file columns spelled in another case are other columns (``ScanOptions.case_sensitive``)
    case_sensitive: bool = False

    def use_case_sensitive(self, case_sensitive: bool) -> None:
        """Merge the files' columns by exact name only (``case_sensitive``) or ignoring case
        from now on (the schema is derived anew)."""
        if case_sensitive != self.case_sensitive:
            self.case_sensitive = case_sensitive
            self._file_schema = None

    def use_timestamp_unit(self, unit: str) -> None:
        """Read ORC timestamps in ``unit`` from now on (the schema is derived anew)."""
        if unit != self.timestamp_unit:
            self.timestamp_unit = unit
            self._file_schema = None
            for f in self._opened.values():
                f.close()
            self._opened.clear()

    def file_schema(self, merge: bool = True) -> pa.Schema:
        """Arrow schema of the files (merged across all files, or the first file's)."""
        if self._file_schema is None or not merge:
            from lazyscan.format.options import ReaderOptions
            from lazyscan.format.units import open_units

            schemas = []
            options = ReaderOptions(timestamp_unit=self.timestamp_unit, retry=self.retry)
            for i, info in enumerate(self.files if merge else self.files[:1]):
                f = open_units(info.path, self.filesystem, options, fmt=self.format)
                try:
                    schemas.append(f.arrow_schema)
                    # the plan is made from this version's footer: the scan reads that version
                    self.files[i] = pinned(info, f)
                finally:
                    if f.source.remote and len(self._opened) < _KEEP_OPEN and info.path not in self._opened:
                        self._opened[info.path] = f
                    else:
                        f.close()
            merged = merge_schemas(schemas, self.case_sensitive)
            if not merge:
                return merged
            self._file_schema = merged
        return self._file_schema

    def take_opened(self, path: str) -> Any:
        """The file at ``path`` if schema discovery left it open (then it is the caller's to
        close), else None."""
        return self._opened.pop(path, None)

    def schema(self, merge: bool = True) -> pa.Schema:
        """File schema with the partition columns appended."""
        base = self.file_schema(merge)
        fields = list(base)
        for f in self.partition_schema:
            if base.get_field_index(f.name) < 0:
                fields.append(f)
        return pa.schema(fields)


def merge_schemas(schemas: Sequence[pa.Schema], case_sensitive: bool = False) -> pa.Schema:
    """Union of fields by name, in first-seen order (a name with two types is an error).

    Unless ``case_sensitive``, a field whose name no earlier file has exactly is the column of
    an earlier file spelling it in another case, under that first spelling: Spark's readers
    match file columns to the table's so (``spark.sql.caseSensitive=false``, its default), and a
    scan reads each file's spelling (:func:`~lazyscan.scan.files.columns_by_case`). Columns one
    file spells apart (``a`` and ``A``) stay apart; a field matching several such columns
    ignoring case and none exactly is an error."""
    fields: dict[str, pa.Field] = {}
    folded: dict[str, list[str]] = {}  # lower-case name -> the merged names spelling it
    for s in schemas:
        own = set(s.names)
        for f in s:
            name = f.name
            if name not in fields and not case_sensitive:
                similar = [n for n in folded.get(name.lower(), []) if n not in own]
                if len(similar) > 1:
                    raise LazyScanError(
                        f"column {name!r} of one file matches the columns {' and '.join(map(repr, similar))} "
                        "of others ignoring case; read with case_sensitive=True to match names exactly"
                    )
                if similar:
                    name = similar[0]
            old = fields.get(name)
            if old is None:
                fields[name] = f.with_nullable(True) if len(schemas) > 1 else f
                folded.setdefault(name.lower(), []).append(name)
            elif old.type != f.type:
                if pa.types.is_null(old.type):
                    fields[name] = f.with_name(name)
                elif not pa.types.is_null(f.type):
                    spelled = f" (spelled {f.name!r})" if f.name != name else ""
                    raise LazyScanError(
                        f"column {name!r} has type {old.type} in one file and {f.type} in another{spelled}"
                    )
    return pa.schema(list(fields.values()))


def discover(
    source: Any, filesystem: Any = None, retry: RetryPolicy | None = None, raw_files: bool = False
) -> Dataset:
    """List the files of ``source``: a file, a directory (recursive, hive partitions), a glob,
    or a list of those; local paths, ``file://`` URLs, or paths on a pyarrow/fsspec filesystem.
    ``retry``: how the requests listing an object store are retried (None: the default policy).

    A path that is, holds or lies inside a Delta Lake or Apache Iceberg table raises a
    :class:`~lazyscan.errors.TableFolderError` (its folder holds files the table removed);
    ``raw_files=True`` lists the Parquet and ORC files there as they are, on purpose."""
    if isinstance(source, Dataset):
        return source
    items = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    if not items:
        raise SourceError("no paths given")
    listed: list[tuple[_Listed, str | None]] = []  # the file, its partition root
    roots = []
    local = _LocalTables(raw_files)
    probes = IOStats()
    for item in items:
        p = os.fspath(item)
        if filesystem is None and p.startswith("file://"):
            p = p[len("file://") :]
        if filesystem is None and "://" in p:
            filesystem, p = filesystem_from_uri(p)
        if filesystem is None:
            if os.path.isdir(p) and not _has_glob(p):
                roots.append(p)
            listed += _list_local_path(p, local)
        else:
            files = _list_remote(p, filesystem, retry, raw_files, probes)
            root = p if len(files) != 1 or files[0][0] != p else None
            listed += [(f, root) for f in files]
    infos, pschema = _partitions(listed)
    return Dataset(roots[0] if len(roots) == 1 else None, infos, pschema, filesystem, retry=retry, probes=probes)


class _LocalTables:
    """Refuses local paths that are, hold or lie inside a table, unless the raw files are asked
    for; each folder is looked at once."""

    def __init__(self, raw_files: bool) -> None:
        self.raw_files = raw_files
        self.seen: dict[str, TableRoot | None] = {}

    def refuse(self, path: str, tables: Sequence[TableRoot] | None = None) -> None:
        """Raise when ``path`` is or lies inside a table, or (``tables``: found by its listing)
        holds one."""
        if self.raw_files:
            return
        table = _local_table_above(path, self.seen) if tables is None else next(iter(tables), None)
        if table is not None:
            raise table_folder_error(path, table)


def _list_local_path(p: str, local: _LocalTables) -> list[tuple[_Listed, str | None]]:
    """The files of one local path (a file, a folder, a glob), each with its partition root."""
    if _has_glob(p):
        matches = sorted(globlib.glob(p, recursive=True))
        if not matches:
            raise SourceError(f"no files match {p!r}")
        out: list[tuple[_Listed, str | None]] = []
        for m in matches:
            if os.path.isdir(m):
                out += _list_local_folder(m, local)
            elif not _is_hidden(os.path.basename(m)):
                local.refuse(m)
                out.append((_local_file(m), None))
        return out
    if os.path.isdir(p):
        return _list_local_folder(p, local)
    if os.path.isfile(p):
        local.refuse(p)
        return [(_local_file(p), None)]
    raise ObjectNotFoundError(f"path not found: {p!r}")


def _list_local_folder(folder: str, local: _LocalTables) -> list[tuple[_Listed, str | None]]:
    local.refuse(folder)  # before its listing
    tables: list[TableRoot] = []
    files: list[tuple[_Listed, str | None]] = [(f, folder) for f in _list_local(folder, tables)]
    local.refuse(folder, tables)
    return files


def _partitions(listed: list[tuple[_Listed, str | None]]) -> tuple[list[FileInfo], pa.Schema]:
    raw: list[dict[str, str]] = []
    for (path, _, _), root in listed:
        parts: dict[str, str] = {}
        if root is not None:
            rel = os.path.relpath(path, root) if "://" not in path else path[len(root) :].strip("/")
            for seg in rel.replace("\\", "/").split("/")[:-1]:
                if "=" in seg:
                    k, _, v = seg.partition("=")
                    parts[unquote(k)] = unquote(v)
        raw.append(parts)
    keys: list[str] = []
    for parts in raw:
        for k in parts:
            if k not in keys:
                keys.append(k)
    if keys and any(set(parts) != set(keys) for parts in raw):
        raise SourceError(
            "files are not all under the same partition columns: " + ", ".join(keys)
        )
    types = {k: _arrow_type_of_values([_infer_value(parts[k]) for parts in raw]) for k in keys}
    infos = []
    for ((path, size, identity), _), parts in zip(listed, raw):
        values = {k: _coerce(_infer_value(parts[k]), parts[k], types[k]) for k in keys}
        infos.append(FileInfo(path, size, values, identity))
    return infos, pa.schema([pa.field(k, types[k]) for k in keys])
