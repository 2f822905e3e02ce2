"""A table snapshot as the scan's files: Delta Lake and Apache Iceberg tables read as tables.

- :func:`table_of` recognizes a table among the scan's sources (a Delta table folder, an Iceberg
  table folder or metadata file, on local disk or an object store, a pyiceberg ``Table``, a
  ready plan) and plans its snapshot (:mod:`lazyscan.tables`); :func:`remote_table` plans the
  table on an object store whose folder the listing found; :func:`table_tasks` turns the plan into one
  :class:`~lazyscan.scan.dataset.FileInfo` per data file, each carrying its
  :class:`~lazyscan.tables.plan.FileRead`.
- :class:`TableFile`: an open data file as the scan sees it: :class:`TableUnitFile` speaks the
  table's logical column names over the file's own (physical names, field ids); the file's
  deleted row positions become each unit's starting selection (:meth:`TableFile.live_rows`);
  :func:`equality_deleted` is the anti filter of equality deletes.
- :func:`table_statistics`: a data file's statistics as the table states them, in the
  statistics domain, to rule the file out before it is opened.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lazyscan.errors import (
    CorruptFileError,
    MissingDependencyError,
    OptionError,
    TableFolderError,
    UnsupportedFeatureError,
)
from lazyscan.format.counters import ReadCounters
from lazyscan.format.selection import RowRanges
from lazyscan.format.statistics import ColumnStats
from lazyscan.format.units import EncodedChunk, EncodedReads, FieldStorage, UnitFile
from lazyscan.scan.dataset import FileInfo, table_at
from lazyscan.tables.plan import (
    EqualityDelete,
    FileColumnStats,
    FileRead,
    PlannedTable,
)

#: the time travel options, by table format
TABLE_OPTIONS = (
    "version", "timestamp", "snapshot_id", "as_of", "reroot", "storage_options", "catalog", "catalog_properties",
)
_ICEBERG_METADATA_FILE = re.compile(r".*\.metadata\.json(\.gz)?$")


def _is_pyiceberg_table(source: Any) -> bool:
    return all(hasattr(source, a) for a in ("metadata", "metadata_location", "io", "scan"))


def _one_of(a: Any, b: Any, names: str) -> Any:
    if a is not None and b is not None:
        raise OptionError(f"give {names}, not both")
    return a if a is not None else b


def table_of(source: Any, raw_files: bool, options: Mapping[str, Any], filesystem: Any = None) -> PlannedTable | None:
    """The planned snapshot of the table ``source`` is, or None when it is no table (plain
    files; or ``raw_files``: the files of a table folder as they are) or may be one on an
    object store (its listing tells: :func:`remote_delta_uri`). ``options``: the table options
    given (:data:`TABLE_OPTIONS`), each None when not given."""
    given = {k: v for k, v in options.items() if v is not None}
    if isinstance(source, PlannedTable):
        if given:
            raise OptionError(f"{', '.join(sorted(given))}: a table plan is already of one snapshot")
        return source
    kind, location = None, None
    if _is_pyiceberg_table(source):
        kind, location = "iceberg", source
    elif isinstance(source, str) and ("catalog" in given or "catalog_properties" in given):
        kind, location = "iceberg", source  # a table name in an Iceberg catalog
    elif isinstance(source, (str, os.PathLike)) and not raw_files and _on_local_disk(filesystem) and not _remote_uri(source):
        found = _local_table(os.fspath(source))
        if found is not None:
            kind, location = found
    elif isinstance(source, str) and not raw_files and _ICEBERG_METADATA_FILE.fullmatch(source.rstrip("/").rsplit("/", 1)[-1]):
        # an Iceberg metadata file on an object store: its name says so, no request asked
        return plan_table("iceberg", source, given, filesystem)
    if kind is None:
        remote = isinstance(source, str) and ("://" in source or filesystem is not None)
        if given and not (remote and not raw_files):
            refuse_table_options(source, given)
        return None
    return plan_table(kind, location, given)


def _remote_uri(source: Any) -> bool:
    """Whether ``source`` is a URI of a filesystem other than the local one."""
    return isinstance(source, str) and "://" in source and not source.startswith("file:")


def _on_local_disk(filesystem: Any) -> bool:
    """Whether paths without a scheme name local files under ``filesystem`` (None, or a local
    pyarrow or fsspec filesystem): a path on an object store is never looked for on local disk."""
    if filesystem is None:
        return True
    name = getattr(filesystem, "type_name", None)  # pyarrow
    if isinstance(name, str):
        return name == "local"
    protocol = getattr(filesystem, "protocol", None)  # fsspec
    protocols = protocol if isinstance(protocol, (tuple, list)) else (protocol,)
    return any(p in ("file", "local") for p in protocols)


def _local_table(path: str) -> tuple[str, str] | None:
    """The kind and location of the local table ``path`` is (its root folder, or an Iceberg
    metadata file), else None. A plain file costs one stat; a folder three (itself, then its
    Delta log and Iceberg metadata folders, :func:`~lazyscan.scan.dataset.table_at`)."""
    if path.startswith("file://"):
        path = path[len("file://") :]
    if "://" in path:
        return None
    # the name first: a plain file's one stat is the folder check below
    if _ICEBERG_METADATA_FILE.fullmatch(os.path.basename(path)) and os.path.isfile(path):
        return "iceberg", path
    if not os.path.isdir(path):
        return None
    found = table_at(path)
    return None if found is None else (found.kind, path)


def refuse_table_options(source: Any, given: Mapping[str, Any]) -> None:
    """Raise :class:`OptionError` for table options ``given`` to a source that is no table."""
    if given:
        raise OptionError(
            f"{', '.join(sorted(given))}: options of a Delta Lake or Iceberg table, and {source!r} is not one"
        )


def remote_table(
    source: Any, refused: TableFolderError, filesystem: Any, given: Mapping[str, Any]
) -> PlannedTable | None:
    """The planned snapshot of the Delta Lake or Iceberg table on an object store whose folder
    ``source`` names, when the listing refused it as a table's folder (``refused``); None for
    any other refusal (a path inside a table, a folder holding one). ``given``: the table
    options given."""
    if refused.kind == "iceberg":
        if not isinstance(source, str) or refused.root is None:
            return None
        if refused.root.rstrip("/") != source.split("://", 1)[-1].rstrip("/"):
            return None
        return plan_table("iceberg", source, given, filesystem)
    uri = remote_delta_uri(source, refused, filesystem)
    return None if uri is None else plan_table("delta", uri, given, filesystem)


def remote_delta_uri(source: Any, refused: TableFolderError, filesystem: Any) -> str | None:
    """The URI of the Delta table on an object store that ``source`` names, when the listing
    refused it as a table's folder (``refused``); None for any other refusal (a path inside a
    table, a folder holding one, an Iceberg table: read those through pyiceberg)."""
    if refused.kind != "delta" or not isinstance(source, str) or refused.root is None:
        return None
    if refused.root.rstrip("/") != source.split("://", 1)[-1].rstrip("/"):
        return None
    if "://" in source:
        return source
    scheme = _scheme_of(filesystem)
    return None if scheme is None else f"{scheme}://{source.strip('/')}"


def _scheme_of(filesystem: Any) -> str | None:
    """The URI scheme of a pyarrow or fsspec filesystem (``s3``, ``gs``, ...)."""
    if filesystem is None:
        return None
    name = getattr(filesystem, "type_name", None)  # pyarrow
    if isinstance(name, str):
        return {"s3": "s3", "gcs": "gs", "abfs": "abfs", "hdfs": "hdfs"}.get(name)
    protocol = getattr(filesystem, "protocol", None)  # fsspec
    if isinstance(protocol, (tuple, list)):
        protocol = protocol[0]
    return protocol if isinstance(protocol, str) else None


def plan_table(kind: str, location: Any, given: Mapping[str, Any], filesystem: Any = None) -> PlannedTable:
    """Plan the ``kind`` table at ``location`` (a path, URI, pyiceberg table or catalog table
    name) with the table options ``given`` (``filesystem``: a pyarrow one reads Delta deletion
    vectors; an object store's reads an Iceberg table's metadata, manifests and delete files,
    as the scan reads its data files). Delta takes ``version`` / ``timestamp`` / ``storage_options``; Iceberg takes
    ``version`` or ``snapshot_id`` (a snapshot id), ``timestamp`` or ``as_of``, ``reroot``,
    ``catalog`` / ``catalog_properties``."""
    try:
        if kind == "delta":
            wrong = sorted(set(given) & {"snapshot_id", "as_of", "reroot", "catalog", "catalog_properties"})
            if wrong:
                raise OptionError(
                    f"{', '.join(wrong)}: options of Iceberg tables; {location!r} is a Delta Lake "
                    "table (time travel: version= or timestamp=)"
                )
            import pyarrow.fs as pafs

            from lazyscan.tables.delta import plan_delta

            return plan_delta(
                os.fspath(location), version=given.get("version"), timestamp=given.get("timestamp"),
                storage_options=given.get("storage_options"),
                filesystem=filesystem if isinstance(filesystem, pafs.FileSystem) else None,
            )
        if "storage_options" in given:
            raise OptionError("storage_options: an option of Delta Lake tables (Iceberg reads through pyiceberg's io)")
        from lazyscan.tables.iceberg import plan_iceberg

        by_name = "catalog" in given or "catalog_properties" in given
        if by_name and not isinstance(location, str):
            raise OptionError("catalog= and catalog_properties= name a table of a catalog: give its name as the source")
        place = location if by_name or _is_pyiceberg_table(location) else os.fspath(location)
        store = None if by_name or _is_pyiceberg_table(location) else _object_store(place, filesystem)
        return plan_iceberg(
            place,
            snapshot_id=_one_of(given.get("version"), given.get("snapshot_id"), "version= or snapshot_id="),
            as_of=_one_of(given.get("timestamp"), given.get("as_of"), "timestamp= or as_of="),
            catalog=given.get("catalog"),
            catalog_properties=given.get("catalog_properties"),
            reroot=given.get("reroot"),
            filesystem=store,
        )
    except MissingDependencyError as e:
        raise MissingDependencyError(
            f"{location} is a {'Delta Lake' if kind == 'delta' else 'Apache Iceberg'} table: {e}; "
            "or, to read the Parquet and ORC files in its folder as they are on purpose, pass "
            "raw_files=True"
        ) from None


def _object_store(location: str, filesystem: Any) -> Any:
    """The object store's filesystem an Iceberg table at ``location`` is read through: the
    ``filesystem`` given, else the one of the URI (as the scan opens a URI's files); None for
    a table on local disk (pyiceberg's own io reads it)."""
    if filesystem is not None and not _on_local_disk(filesystem):
        return filesystem
    if _remote_uri(location):
        from lazyscan.io.source import filesystem_from_uri

        return filesystem_from_uri(location)[0]
    return None


def _file_path(path: str, filesystem: Any) -> str:
    """A data file's path as the scan opens it: local paths plain, URIs kept (each opens on its
    own filesystem), or on the ``filesystem`` given without their scheme."""
    if path.startswith("file:"):
        return re.sub(r"^file:(//[^/]*)?", "", path)
    if filesystem is not None and "://" in path:
        return path.split("://", 1)[1]
    return path


def table_tasks(plan: PlannedTable, filesystem: Any) -> tuple[pa.Schema, set[str], list[FileInfo]]:
    """The dataset schema (the table's logical schema, without the formats' field metadata),
    the columns constant per file (pruned on before a file is opened) and one file per data
    file of the plan."""
    schema = pa.schema([f.remove_metadata() for f in plan.schema])
    constant = set(plan.constant_columns)
    files = [
        FileInfo(_file_path(r.path, filesystem), r.size, dict(r.constants), table=r)
        for r in plan.file_reads()
    ]
    return schema, constant, files


# ---- statistics as the table states them ------------------------------------------------------


def _storage(value: Any, t: pa.DataType, upper: bool) -> Any:
    """A statistic of the table (a Python value) in the statistics domain of type ``t``; None
    where it cannot be a safe bound (``upper``: the max)."""
    if value is None:
        return None
    if pa.types.is_boolean(t):
        return bool(value)
    if pa.types.is_integer(t):
        return int(value)
    if pa.types.is_floating(t):
        f = float(value)
        return None if math.isnan(f) else f
    if pa.types.is_date32(t):
        if isinstance(value, int):
            return value  # days since the epoch (Iceberg's metrics)
        day = dt.date.fromisoformat(value[:10]) if isinstance(value, str) else value
        if isinstance(day, dt.datetime):
            day = day.date()
        return (day - dt.date(1970, 1, 1)).days
    if pa.types.is_timestamp(t):
        raw = int(pa.array([value], type=t).cast(pa.int64())[0].as_py())
        # Delta writes timestamp statistics truncated to milliseconds (Delta's
        # DataSkippingReader widens the max by 1 ms for that reason): the max moves up a ms
        per_ms = {"s": 0, "ms": 1, "us": 1000, "ns": 1_000_000}[t.unit]
        return raw + per_ms if upper else raw
    if pa.types.is_decimal(t):
        scaled = decimal.Decimal(value).scaleb(t.scale)
        return int(scaled.to_integral_value(decimal.ROUND_CEILING if upper else decimal.ROUND_FLOOR))
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        # writers truncate string statistics to a prefix (Delta: 32 characters; Iceberg: 16,
        # the upper bound then incremented): a lower bound as stated, and the smallest string
        # above every string starting with it as the upper bound
        text = str(value).encode()
        return _successor(text) if upper else text
    return None


def _successor(prefix: bytes) -> bytes | None:
    """The smallest byte string greater than every string starting with ``prefix`` (None: none)."""
    stripped = prefix.rstrip(b"\xff")
    return stripped[:-1] + bytes([stripped[-1] + 1]) if stripped else None


def table_statistics(
    read: FileRead, field_of: Mapping[str, pa.Field], names: Sequence[str]
) -> dict[str, ColumnStats]:
    """The statistics of columns ``names`` over the whole data file, from the table's metadata
    (per-file min, max, null count) and the file's constants."""
    rows = read.num_records
    out: dict[str, ColumnStats] = {}
    for name in names:
        f = field_of.get(name)
        if f is None:
            continue
        if name in read.constants:
            value = read.constants[name]
            stored = None if value is None else _storage(value, f.type, False)
            if value is None or stored is not None:
                out[name] = ColumnStats(stored, stored, rows if value is None else 0, rows)
            continue
        st: FileColumnStats | None = read.stats.get(name)
        if st is None:
            continue
        try:
            lo, hi = _storage(st.min, f.type, False), _storage(st.max, f.type, True)
        except (ValueError, TypeError, ArithmeticError, pa.ArrowException):
            continue
        text = pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
        out[name] = ColumnStats(
            lo, hi, st.null_count, rows, min_exact=not text, max_exact=not (text or pa.types.is_timestamp(f.type))
        )
    return out


# ---- the open data file ------------------------------------------------------------------------


def _field_key(f: pa.Field) -> tuple[bytes | None, str]:
    meta = f.metadata or {}
    fid = meta.get(b"PARQUET:field_id") or meta.get(b"delta.columnMapping.id") or meta.get(b"iceberg.id")
    physical = meta.get(b"delta.columnMapping.physicalName")
    return fid, physical.decode() if physical is not None else f.name


def _child_index(have: pa.StructType, want: pa.Field) -> int | None:
    """The child of ``have`` holding the field ``want``: by field id, else physical name, else name."""
    fid, physical = _field_key(want)
    if fid is not None:
        for i in range(have.num_fields):
            if _field_key(have.field(i))[0] == fid:
                return i
    for name in (physical, want.name):
        i = have.get_field_index(name)
        if i >= 0:
            return i
    return None


def conform(arr: pa.Array, want: pa.DataType) -> pa.Array:
    """A nested array of a data file in the table's type: struct fields renamed to the table's
    names (matched by field id, physical name or name), missing ones null, leaves cast. (A cast
    alone would match struct fields by name and turn renamed ones into nulls.)"""
    t = arr.type
    if t == want:
        return arr
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(t) and pa.types.is_struct(want):
        children = []
        for j in range(want.num_fields):
            wf = want.field(j)
            i = _child_index(t, wf)
            children.append(pa.nulls(len(arr), wf.type) if i is None else conform(arr.field(i), wf.type))
        return pa.StructArray.from_arrays(children, fields=list(want), mask=mask)
    if pa.types.is_map(t) and pa.types.is_map(want):
        return pa.MapArray.from_arrays(
            arr.offsets, conform(arr.keys, want.key_type), conform(arr.items, want.item_type), type=want, mask=mask
        )
    if (pa.types.is_list(t) or pa.types.is_large_list(t)) and (pa.types.is_list(want) or pa.types.is_large_list(want)):
        cls = pa.LargeListArray if pa.types.is_large_list(want) else pa.ListArray
        offsets = arr.offsets.cast(pa.int64() if cls is pa.LargeListArray else pa.int32())
        return cls.from_arrays(offsets, conform(arr.values, want.value_type), type=want, mask=mask)
    return arr.cast(want)


def _same_values(have: pa.DataType, want: pa.DataType) -> bool:
    """Whether a column stored as ``have`` holds ``want``'s values byte for byte: the same type,
    or text (binary) types that differ only in their offsets' width (Iceberg's Arrow schema
    says ``large_string`` where writers store ``string``)."""
    if have == want:
        return True
    text = (pa.string(), pa.large_string())
    binary = (pa.binary(), pa.large_binary())
    return (have in text and want in text) or (have in binary and want in binary)


def _same_domain(have: pa.DataType, want: pa.DataType) -> bool:
    """Whether statistics of a column stored as ``have`` compare with literals of ``want``."""
    if _same_values(have, want):
        return True
    return (pa.types.is_integer(have) and pa.types.is_integer(want)) or (
        pa.types.is_floating(have) and pa.types.is_floating(want)
    )


class _TableEncoded(EncodedReads):
    """The file's encoded reads under logical names; a column stored in another type than the
    table's is not read this way (its values are cast first)."""

    def __init__(self, inner: EncodedReads, names: Mapping[str, str], same_type: set[str]) -> None:
        self.inner = inner
        self.names = names
        self.same_type = same_type

    def codes(self, unit: int, name: str, rows: RowRanges, counters: ReadCounters, cache: Any) -> EncodedChunk | None:
        if name not in self.same_type:
            return None
        return self.inner.codes(unit, self.names[name], rows, counters, cache)

    def codes_to_arrow(self, unit: int, name: str, chunk: EncodedChunk, counters: ReadCounters) -> pa.Array:
        return self.inner.codes_to_arrow(unit, self.names[name], chunk, counters)

    def dictionary_rows(
        self, unit: int, name: str, entry_passes: np.ndarray, null_passes: bool, counters: ReadCounters, cache: Any
    ) -> tuple[np.ndarray, EncodedChunk] | None:
        if name not in self.same_type:
            return None
        return self.inner.dictionary_rows(unit, self.names[name], entry_passes, null_passes, counters, cache)

    def rows_passing(
        self, unit: int, name: str, chunk: EncodedChunk, entry_passes: np.ndarray, null_passes: bool, rows: np.ndarray
    ) -> np.ndarray:
        return self.inner.rows_passing(unit, self.names[name], chunk, entry_passes, null_passes, rows)

    def byte_matcher(self, values: Sequence[bytes]) -> Any:
        return self.inner.byte_matcher(values)

    def match(
        self, unit: int, name: str, rows: RowRanges, counters: ReadCounters, matcher: Any, cache: Any
    ) -> np.ndarray | None:
        if name not in self.same_type:
            return None
        return self.inner.match(unit, self.names[name], rows, counters, matcher, cache)


class TableUnitFile(UnitFile):
    """A data file of a table under the table's logical column names: each logical column the
    file stores is read from its file column (``names``: logical -> file column); nested columns
    come back in the table's type. Statistics, Bloom filters and finer statistics of a column
    stored in another type than the table's are used only where their values compare alike."""

    def __init__(self, inner: UnitFile, names: Mapping[str, str], table_schema: pa.Schema) -> None:
        self.inner = inner
        self.path = inner.path
        self.source = inner.source
        self.format_name = inner.format_name
        self.binary_may_be_text = inner.binary_may_be_text
        self.names = dict(names)
        self.want = {n: table_schema.field(n).type for n in self.names}
        stored = {n: inner.arrow_schema.field(p).type for n, p in self.names.items()}
        self.arrow_schema = pa.schema([pa.field(n, stored[n]) for n in self.names])
        self.same_type = {n for n in self.names if _same_values(stored[n], self.want[n])}
        self.comparable = {n for n in self.names if _same_domain(stored[n], self.want[n])}
        self.encoded = None if inner.encoded is None else _TableEncoded(inner.encoded, self.names, self.same_type)

    # ---- layout, delegated --------------------------------------------------------------------

    def num_units(self) -> int:
        return self.inner.num_units()

    def unit_rows(self, unit: int) -> int:
        return self.inner.unit_rows(unit)

    def unit_ranges(self) -> tuple[np.ndarray, np.ndarray]:
        return self.inner.unit_ranges()

    def units_of_split(self, start: int, length: int) -> list[int]:
        return self.inner.units_of_split(start, length)

    @property
    def footer_digest(self) -> bytes:
        return self.inner.footer_digest

    def units_bytes(self, units: Sequence[int]) -> int:
        return self.inner.units_bytes(units)

    def metadata_bytes(self) -> int:
        return self.inner.metadata_bytes()

    def new_cache(self) -> Any:
        return self.inner.new_cache()

    def read_options(self) -> Any:
        return self.inner.read_options()

    def use_options(self, options: Any) -> None:
        self.inner.use_options(options)

    def close(self) -> None:
        self.inner.close()

    # ---- columns, by logical name ---------------------------------------------------------------

    def _physical(self, names: Sequence[str]) -> list[str]:
        return [self.names[n] for n in names if n in self.names]

    def column_bytes(self, names: Any) -> np.ndarray:
        return self.inner.column_bytes(self._physical(list(names)))

    def value_columns(self, names: Any) -> int:
        return self.inner.value_columns(self._physical(list(names)))

    def field_storage(self, name: str) -> FieldStorage:
        return self.inner.field_storage(self.names[name])

    def has(self, name: str) -> bool:
        return name in self.names

    def flat(self, name: str) -> bool:
        return name in self.names and self.inner.flat(self.names[name])

    def byte_array(self, name: str) -> bool:
        return name in self.names and self.inner.byte_array(self.names[name])

    def finer_units(self, unit: int, name: str) -> int:
        return self.inner.finer_units(unit, self.names[name]) if name in self.names else 0

    def statistics(self, unit: int, name: str) -> ColumnStats | None:
        if name not in self.comparable:
            return None
        return self.inner.statistics(unit, self.names[name])

    def might_contain(self, unit: int, name: str, values: list[Any], filters: dict[str, Any]) -> list[bool] | None:
        # a Bloom filter hashes the stored type's bytes: probed only with values of that type
        if name not in self.same_type:
            return None
        return self.inner.might_contain(unit, self.names[name], values, filters)

    def dictionary(self, unit: int, name: str, counters: ReadCounters, cache: Any) -> pa.Array | None:
        return self.inner.dictionary(unit, self.names[name], counters, cache)

    def finer_statistics(self, unit: int, name: str) -> tuple[list[ColumnStats | None], np.ndarray, np.ndarray] | None:
        if name not in self.comparable:
            return None
        return self.inner.finer_statistics(unit, self.names[name])

    def finer_might_contain(
        self, unit: int, name: str, values: list[Any], filters: dict[str, Any]
    ) -> list[list[bool]] | None:
        if name not in self.same_type:
            return None
        return self.inner.finer_might_contain(unit, self.names[name], values, filters)

    def _logical(self, name: str, arr: pa.Array) -> pa.Array:
        """A nested column in the table's type (flat ones are cast by the scan)."""
        if arr.type == self.want[name] or self.inner.flat(self.names[name]):
            return arr
        return conform(arr, self.want[name])

    def read(self, unit: int, name: str, rows: RowRanges | None, counters: ReadCounters, cache: Any) -> pa.Array:
        return self._logical(name, self.inner.read(unit, self.names[name], rows, counters, cache))

    def read_many(
        self, unit: int, names: list[str], rows: RowRanges, counters: ReadCounters, cache: Any
    ) -> list[pa.Array]:
        arrays = self.inner.read_many(unit, self._physical(names), rows, counters, cache)
        return [self._logical(n, a) for n, a in zip(names, arrays)]

    def read_ahead_ranges(self, unit: int, names: list[str], dictionary_only: bool) -> list[tuple[int, int]]:
        return self.inner.read_ahead_ranges(unit, self._physical(names), dictionary_only)


def _file_columns_by_id(inner: UnitFile, read: FileRead) -> dict[int, str]:
    """Field id -> the data file's top-level column, from the ids its metadata gives
    (:meth:`~lazyscan.format.units.UnitFile.field_ids`); two columns of one id are an error."""
    out: dict[int, str] = {}
    for name, fid in inner.field_ids().items():
        if fid in out:
            raise CorruptFileError(
                f"{read.where}: the data file's columns {out[fid]!r} and {name!r} have the same field id {fid}",
                file=read.path,
            )
        out[fid] = name
    return out


class TableFile:
    """What the scan knows of an open data file of a table: its columns under logical names
    (:attr:`file`), the constants it adds, its deleted rows per unit and its equality deletes."""

    def __init__(self, inner: UnitFile, read: FileRead, table_schema: pa.Schema) -> None:
        self.read = read
        ids = _file_columns_by_id(inner, read) if read.by_field_id else {}
        names = read.sources(inner.arrow_schema, ids)
        self.file = TableUnitFile(inner, names, table_schema)
        #: logical column -> constant value: the file's constants, and the defaults of the
        #: columns it does not store
        self.constants = {**{k: v for k, v in read.defaults.items() if k not in names}, **read.constants}
        rows = [inner.unit_rows(u) for u in range(inner.num_units())]
        self.first_rows = np.concatenate([[0], np.cumsum(rows, dtype=np.int64)]).astype(np.int64)
        total = int(self.first_rows[-1])
        if read.num_records is not None and read.num_records != total:
            raise CorruptFileError(
                f"{read.where}: the data file has {total} rows, the table says {read.num_records}", file=read.path
            )
        deleted = read.deleted_rows
        if deleted is not None and len(deleted) and (deleted[0] < 0 or deleted[-1] >= total):
            bad = int(deleted[-1] if deleted[-1] >= total else deleted[0])
            raise CorruptFileError(
                f"{read.where}: a deleted row position ({bad}) lies past the data file's {total} rows",
                file=read.path,
            )
        self.deleted = deleted if deleted is not None and len(deleted) else None
        for delete in read.equality_deletes:
            missing = [n for n in delete.keys.column_names if table_schema.get_field_index(n) < 0]
            if missing:
                raise UnsupportedFeatureError(
                    f"{read.where}: an equality delete on {', '.join(missing)}, not a top-level column of the table",
                    file=delete.path,
                )
        self.equality_deletes = read.equality_deletes
        #: the columns the equality deletes compare
        self.equality_columns = list(dict.fromkeys(n for d in self.equality_deletes for n in d.keys.column_names))

    def live_rows(self, unit: int, n: int) -> RowRanges:
        """The rows of ``unit`` (``n`` rows) the table keeps after deletion vectors and
        position deletes."""
        if self.deleted is None:
            return RowRanges.all(n)
        first = int(self.first_rows[unit])
        lo, hi = np.searchsorted(self.deleted, [first, first + n])
        if lo == hi:
            return RowRanges.all(n)
        gone = self.deleted[lo:hi] - first
        starts = np.concatenate([[0], gone + 1]).astype(np.int64)
        ends = np.concatenate([gone, [n]]).astype(np.int64)
        keep = starts < ends
        return RowRanges(starts[keep], ends[keep])


def _common_type(have: pa.DataType, keys: pa.DataType) -> pa.DataType:
    if pa.types.is_integer(have) and pa.types.is_integer(keys):
        return pa.int64()
    if pa.types.is_floating(have) and pa.types.is_floating(keys):
        return pa.float64()
    return have


def _deleted_by(delete: EqualityDelete, columns: Sequence[pa.Array]) -> np.ndarray:
    """Whether each row (``columns``: the delete's key columns) equals a key of ``delete``; null
    equals null (Iceberg table spec, "Equality Delete Files")."""
    n = len(columns[0])
    radix = 1
    code = np.zeros(n, np.int64)
    key_code = np.zeros(delete.keys.num_rows, np.int64)
    present = np.ones(n, bool)
    for col, key in zip(columns, delete.keys.columns):
        common = _common_type(col.type, key.type)
        values = col.cast(common) if col.type != common else col
        keys = key.combine_chunks().cast(common)
        if len(columns) == 1:
            return np.asarray(pc.is_in(values, value_set=keys, skip_nulls=False).to_numpy(zero_copy_only=False), bool)
        distinct = pc.unique(keys)
        found = pc.index_in(values, value_set=distinct, skip_nulls=False)
        present &= np.asarray(found.is_valid().to_numpy(zero_copy_only=False), bool)
        code += found.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64) * radix
        key_code += pc.index_in(keys, value_set=distinct, skip_nulls=False).to_numpy(zero_copy_only=False).astype(np.int64) * radix
        radix *= len(distinct)
        if radix >= 2**62:
            raise UnsupportedFeatureError(f"an equality delete with {radix:,}+ distinct key combinations", file=delete.path)
    return present & np.isin(code, key_code)


def equality_deleted(deletes: Sequence[EqualityDelete], arrays: Mapping[str, pa.Array]) -> np.ndarray:
    """Whether each row (``arrays``: the key columns by logical name) is removed by one of the
    equality deletes."""
    n = len(next(iter(arrays.values())))
    gone = np.zeros(n, bool)
    for delete in deletes:
        if n and delete.keys.num_rows:
            gone |= _deleted_by(delete, [arrays[name] for name in delete.keys.column_names])
    return gone
