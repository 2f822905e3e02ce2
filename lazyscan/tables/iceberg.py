"""Apache Iceberg tables: which files a snapshot reads and which of their rows it removes.

pyiceberg reads the metadata (metadata.json, manifest lists, manifests) and prunes data files by
partition and column statistics; lazyscan owns the deletes, because pyiceberg 0.12 refuses
equality deletes and silently drops position deletes whose ``file_path`` is written in another
form than the manifest's (Impala: ``hdfs://host:port/warehouse/…`` in the delete file,
``/warehouse/…`` in the manifest). Paths are therefore matched by what they point at: without
scheme and authority, after re-rooting.

Delete rules (Iceberg table spec, "Scan Planning"): a position delete or deletion vector applies to
a data file when the data file's sequence number is <= the delete's; an equality delete when it is
strictly lower, and only in the same partition (same spec) unless the delete's spec is
unpartitioned.

:func:`plan_iceberg` returns an :class:`IcebergPlan`; :func:`resolve_columns` says, for one data
file's Arrow schema, where each table column comes from (field ids, else the table's name mapping).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from lazyscan.errors import (
    IcebergPlanError,
    IcebergUnsupportedError,
    MissingDependencyError,
    ObjectNotFoundError,
    OptionError,
)
from lazyscan.tables.plan import (
    ColumnSource,
    EqualityDelete,
    FileColumnStats,
    FileRead,
    LogicalColumn,
    field_ids_of,
)

__all__ = [
    "ColumnSource",
    "EqualityDelete",
    "IcebergFile",
    "IcebergPlan",
    "IcebergPlanError",
    "IcebergUnsupportedError",
    "Rerooter",
    "describe",
    "plan_iceberg",
    "resolve_columns",
    "static_table",
    "strip_authority",
    "verify_files",
]

#: Arrow field metadata key holding the Iceberg field id (the key Parquet readers use)
FIELD_ID_KEY = b"PARQUET:field_id"


@dataclass
class IcebergFile:
    """One data file of the snapshot and what the snapshot removes from it."""

    path: str
    size: int
    num_records: int
    file_format: str
    spec_id: int
    #: partition field name -> value (transformed values: ``event_time_hour`` = hours since epoch)
    partition_values: dict[str, Any]
    #: source column name -> value for identity partitions (a file may lack the column)
    identity_values: dict[str, Any]
    sequence_number: int
    #: sorted unique int64 row positions removed by position deletes and deletion vectors, or None
    deleted_rows: np.ndarray | None = None
    deleted_count: int = 0
    equality_deletes: list[EqualityDelete] = field(default_factory=list)
    #: the filter still to evaluate on this file's rows (pyiceberg's residual), or None
    residual: Any = None
    #: top-level column -> its bounds and null count in this file, from the manifest's metrics
    #: (values as pyiceberg decodes them: ints for dates and timestamps); identity partition
    #: columns hold their partition value
    stats: dict[str, FileColumnStats] = field(default_factory=dict)

    @property
    def live_rows(self) -> int:
        """Rows left after position deletes and deletion vectors (equality deletes are known
        only by reading the key columns)."""
        return self.num_records - self.deleted_count


@dataclass
class IcebergPlan:
    """What one snapshot of an Iceberg table reads."""

    root: str
    metadata_location: str
    #: the snapshot id (None: a table without snapshots)
    version: int | None
    sequence_number: int | None
    format_version: int
    #: the snapshot's schema; every field carries its Iceberg field id as ``PARQUET:field_id``
    schema: pa.Schema
    #: Iceberg field id -> initial default (v3 columns added with a default), for files lacking it
    initial_defaults: dict[int, Any]
    #: source column names of the current spec's identity partitions
    partition_columns: tuple[str, ...]
    #: ``schema.name-mapping.default`` (files written without field ids), or None
    name_mapping: Any
    files: tuple[IcebergFile, ...]
    #: the table as messages name it (catalog name or metadata location)
    table: str = ""
    kind: str = "iceberg"

    @property
    def snapshot_id(self) -> int | None:
        return self.version

    @property
    def context(self) -> str:
        """``Iceberg table '…', snapshot N``: the prefix of errors about this plan's files."""
        return f"Iceberg table {self.table!r}, snapshot {self.snapshot_id}"

    @property
    def constant_columns(self) -> tuple[str, ...]:
        """None: a file may store its identity partition columns, and partition specs evolve,
        so a column's partition value is used only where the opened file lacks the column."""
        return ()

    def file_reads(self) -> list[FileRead]:
        """How the scan reads each data file (:class:`~lazyscan.tables.plan.FileRead`): columns
        by field id, or through the name mapping in files without field ids; a column a file
        lacks reads as its identity partition value, its initial default, or null."""
        mapped_names: dict[int, tuple[str, ...]] = {}
        if self.name_mapping is not None:
            for mapped in self.name_mapping:
                if mapped.field_id is not None:
                    mapped_names[mapped.field_id] = tuple(mapped.names)
        columns = []
        for f in self.schema:
            fid = int((f.metadata or {})[FIELD_ID_KEY])
            columns.append(LogicalColumn(f.name, fid, mapped_names.get(fid, ())))
        shared = tuple(columns)
        by_name = {c.field_id: c.name for c in shared}
        initial = {by_name[fid]: v for fid, v in self.initial_defaults.items() if fid in by_name}
        reads = []
        for data_file in self.files:
            identity = {k: v for k, v in data_file.identity_values.items() if k in self.schema.names}
            reads.append(
                FileRead(
                    where=self.context,
                    path=data_file.path,
                    size=data_file.size,
                    file_format=data_file.file_format,
                    num_records=data_file.num_records,
                    columns=shared,
                    by_field_id=True,
                    defaults={**initial, **identity},
                    deleted_rows=data_file.deleted_rows,
                    equality_deletes=tuple(data_file.equality_deletes),
                    stats=data_file.stats,
                )
            )
        return reads


_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:(//[^/]*)?")


def strip_authority(path: str) -> str:
    """``hdfs://host:1/a``, ``file:/a``, ``file:///a`` and ``/a`` all become ``/a``."""
    return _SCHEME.sub("", path)


class Rerooter:
    """Maps locations written on another machine to where the table is now."""

    def __init__(self, reroot: Mapping[str, str] | None) -> None:
        pairs = [(old.rstrip("/"), new.rstrip("/")) for old, new in (reroot or {}).items()]
        self.pairs = sorted(pairs, key=lambda p: len(p[0]), reverse=True)

    def __call__(self, location: str) -> str:
        for old, new in self.pairs:
            for candidate, prefix in (
                (location, old),
                (strip_authority(location), strip_authority(old)),
            ):
                if candidate == prefix or candidate.startswith(prefix + "/"):
                    return new + candidate[len(prefix) :]
        return location

    def key(self, location: str) -> str:
        """The identity of a file: re-rooted, without scheme and authority."""
        return strip_authority(self(location))


def _reroot_io(base_properties: Mapping[str, str], rerooter: Rerooter) -> Any:
    from pyiceberg.io.pyarrow import PyArrowFileIO

    class RerootFileIO(PyArrowFileIO):
        def new_input(self, location: str) -> Any:
            return super().new_input(rerooter(location))

        def new_output(self, location: str) -> Any:
            return super().new_output(rerooter(location))

    return RerootFileIO(dict(base_properties))


def _arrow_filesystem(filesystem: Any) -> Any:
    """``filesystem`` as a pyarrow one (an fsspec filesystem wrapped)."""
    import pyarrow.fs as pafs

    if isinstance(filesystem, pafs.FileSystem):
        return filesystem
    return pafs.PyFileSystem(pafs.FSSpecHandler(filesystem))


def store_path(location: str) -> str:
    """A location as a path of the object store's filesystem: without its scheme
    (``s3://bucket/key`` -> ``bucket/key``)."""
    return location.split("://", 1)[1] if "://" in location else location


def _store_io(filesystem: Any, rerooter: Rerooter) -> Any:
    """A pyiceberg FileIO reading every location (re-rooted) through ``filesystem``, the object
    store's filesystem the scan reads the data files through (its settings, its retries)."""
    from pyiceberg.io.pyarrow import PyArrowFile, PyArrowFileIO

    fs = _arrow_filesystem(filesystem)

    class StoreFileIO(PyArrowFileIO):
        def new_input(self, location: str) -> Any:
            moved = rerooter(location)
            return PyArrowFile(moved, store_path(moved), fs)

        def new_output(self, location: str) -> Any:
            return self.new_input(location)

    return StoreFileIO({})


_METADATA_NAME = re.compile(r"v?(\d+)[-.].*metadata\.json$")


def _latest_metadata_name(names: list[str], meta: str, table: str) -> str:
    """The metadata JSON file of the highest version among ``names`` (of folder ``meta``)."""
    found = [(int(m.group(1)), name) for name in names if (m := _METADATA_NAME.match(name))]
    if not found:
        raise ObjectNotFoundError(f"Iceberg table {table!r}: no metadata JSON in {meta!r}")
    return max(found)[1]


def _load_stored_metadata(location: str, io: Any, filesystem: Any) -> tuple[Any, str, str]:
    """(TableMetadata, metadata location, table name for messages) of a table on an object
    store: ``location`` is its metadata JSON file, or its folder (the highest version in
    ``metadata/``)."""
    import pyarrow.fs as pafs

    table = location.rstrip("/")
    if not _METADATA_NAME.search(table.rsplit("/", 1)[-1]):
        meta = f"{table}/metadata"
        try:
            infos = _arrow_filesystem(filesystem).get_file_info(pafs.FileSelector(store_path(meta)))
        except FileNotFoundError as exc:
            raise ObjectNotFoundError(f"Iceberg table {table!r}: no metadata folder {meta!r}") from exc
        location = f"{meta}/{_latest_metadata_name([i.base_name for i in infos if i.is_file], meta, table)}"
    try:
        with io.new_input(location).open() as f:
            raw = f.read()
    except FileNotFoundError as exc:
        raise ObjectNotFoundError(f"Iceberg metadata file {location!r} does not exist") from exc
    return _parse_metadata(raw, location), location, table


def _require_stored_location(location: str, rerooter: Rerooter, table: str) -> None:
    """Refuse a table on an object store whose metadata places it on local disk (it was written
    there and copied): its manifests and data files are looked for where ``reroot`` says."""
    moved = rerooter(location)
    if moved.startswith("/") or moved.startswith("file:"):
        folder = re.sub(r"/metadata/[^/]*$", "", table) if _METADATA_NAME.search(table.rsplit("/", 1)[-1]) else table
        raise OptionError(
            f"Iceberg table {table!r}: its metadata places the table at {location!r}, on local disk, "
            f"not on the object store it is read from; a table copied there is read with "
            f"reroot={{{location!r}: {folder!r}}}"
        )


def _require_pyiceberg() -> None:
    try:
        import pyiceberg  # noqa: F401
    except ImportError:
        raise MissingDependencyError(
            "reading Apache Iceberg tables needs the pyiceberg package: pip install 'lazyscan[tables]'"
        ) from None


def _latest_metadata_file(folder: str) -> str:
    import os

    meta = os.path.join(folder, "metadata")
    return os.path.join(meta, _latest_metadata_name(os.listdir(meta), meta, folder))


def _load_metadata(
    table_or_location: Any, catalog: str | None, catalog_properties: Mapping[str, str] | None
) -> tuple[Any, str, Mapping[str, str], str]:
    """(TableMetadata, metadata location, io properties, table name for messages)."""
    import os

    if hasattr(table_or_location, "metadata") and hasattr(table_or_location, "io"):
        t = table_or_location
        return t.metadata, t.metadata_location, dict(t.io.properties), ".".join(t.name())
    if catalog is not None or catalog_properties:
        from pyiceberg.catalog import load_catalog

        try:
            t = load_catalog(catalog or "default", **dict(catalog_properties or {})).load_table(
                table_or_location
            )
        except Exception as exc:
            if "variant" in str(exc):
                raise IcebergUnsupportedError(
                    f"Iceberg table {table_or_location!r}: v3 variant type"
                ) from exc
            raise IcebergPlanError(
                f"Iceberg table {table_or_location!r}: cannot load it from catalog {catalog!r}: {exc}"
            ) from exc
        return t.metadata, t.metadata_location, dict(t.io.properties), str(table_or_location)
    location = os.fspath(table_or_location)
    if os.path.isdir(location):
        location = _latest_metadata_file(location)
    try:
        with open(location, "rb") as f:
            raw = f.read()
    except FileNotFoundError as exc:
        raise ObjectNotFoundError(f"Iceberg metadata file {location!r} does not exist") from exc
    return _parse_metadata(raw, location), location, {}, location


def _parse_metadata(raw: bytes, location: str) -> Any:
    """The TableMetadata of a metadata JSON file's bytes; a version or type lazyscan does not
    read is an :class:`IcebergUnsupportedError`, bad JSON an :class:`IcebergPlanError`."""
    from pyiceberg.table.metadata import TableMetadataUtil

    try:
        return TableMetadataUtil.parse_raw(raw.decode("utf-8", errors="replace"))
    except Exception as exc:
        version = re.search(rb'"format-version"\s*:\s*(\d+)', raw)
        if version is not None and int(version.group(1)) > 3:
            raise IcebergUnsupportedError(
                f"Iceberg table {location!r}: format version {int(version.group(1))}", file=location
            ) from exc
        if re.search(rb'"type"\s*:\s*"variant"', raw):
            raise IcebergUnsupportedError(
                f"Iceberg table {location!r}: v3 variant type", file=location
            ) from exc
        raise IcebergPlanError(
            f"Iceberg table {location!r}: metadata is not valid: {exc}", file=location
        ) from exc


def _check_types(schema: Any, table: str) -> None:
    """Refuse the types lazyscan does not read (v3 geometry and geography)."""
    from pyiceberg.types import GeographyType, GeometryType, ListType, MapType, StructType

    def walk(t: Any) -> None:
        if isinstance(t, (GeometryType, GeographyType)):
            raise IcebergUnsupportedError(f"Iceberg table {table!r}: v3 {t} type")
        if isinstance(t, StructType):
            for f in t.fields:
                walk(f.field_type)
        elif isinstance(t, ListType):
            walk(t.element_type)
        elif isinstance(t, MapType):
            walk(t.key_type)
            walk(t.value_type)

    for f in schema.fields:
        walk(f.field_type)


def plan_iceberg(
    table_or_location: Any,
    snapshot_id: int | None = None,
    as_of: Any = None,
    catalog: str | None = None,
    catalog_properties: Mapping[str, str] | None = None,
    reroot: Mapping[str, str] | None = None,
    row_filter: Any = None,
    filesystem: Any = None,
) -> IcebergPlan:
    """Plan a snapshot of an Iceberg table.

    ``table_or_location``: a pyiceberg ``Table``, a metadata JSON file (or the table folder: its
    highest ``vN.metadata.json``), or a table name in ``catalog`` (loaded with
    ``catalog_properties``). ``snapshot_id`` or ``as_of`` (a datetime or milliseconds since the
    epoch: the snapshot current then) choose the snapshot, else the current one. ``reroot`` maps
    old location prefixes to where the table is now. ``row_filter``: a pyiceberg expression or
    filter string, used to prune files; each file's residual is in :attr:`IcebergFile.residual`.
    ``filesystem``: a pyarrow or fsspec filesystem of an object store holding the table (the
    location a URI, or a path on it): the metadata, manifests and delete files are read through
    it, as the scan reads the data files.
    """
    _require_pyiceberg()
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.expressions.visitors import residual_evaluator_of
    from pyiceberg.io.pyarrow import schema_to_pyarrow
    from pyiceberg.manifest import DataFileContent, ManifestContent
    from pyiceberg.table import ManifestGroupPlanner

    rerooter = Rerooter(reroot)
    if filesystem is not None:
        io = _store_io(filesystem, rerooter)
        metadata, metadata_location, table_name = _load_stored_metadata(str(table_or_location), io, filesystem)
        _require_stored_location(metadata.location, rerooter, table_name)
    else:
        metadata, metadata_location, io_properties, table_name = _load_metadata(
            table_or_location, catalog, catalog_properties
        )
        io = _reroot_io(io_properties, rerooter)

    snapshot = _choose_snapshot(metadata, snapshot_id, as_of, table_name)
    schema = (
        metadata.schema_by_id(snapshot.schema_id)
        if snapshot is not None and snapshot.schema_id is not None
        else metadata.schema()
    )
    if schema is None:
        schema = metadata.schema()
    _check_types(schema, table_name)
    arrow_schema = schema_to_pyarrow(schema, include_field_ids=True)
    spec = metadata.spec()
    partition_columns = [
        schema.find_column_name(pf.source_id) or ""
        for pf in spec.fields
        if str(pf.transform) == "identity"
    ]
    mapping_text = metadata.properties.get("schema.name-mapping.default")
    name_mapping = None
    if mapping_text:
        from pyiceberg.table.name_mapping import parse_mapping_from_json

        name_mapping = parse_mapping_from_json(mapping_text)
    defaults = {
        f.field_id: f.initial_default
        for f in schema.fields
        if getattr(f, "initial_default", None) is not None
    }
    plan = IcebergPlan(
        root=rerooter(metadata.location),
        metadata_location=metadata_location,
        version=snapshot.snapshot_id if snapshot is not None else None,
        sequence_number=snapshot.sequence_number if snapshot is not None else None,
        format_version=metadata.format_version,
        schema=arrow_schema,
        initial_defaults=defaults,
        partition_columns=tuple(partition_columns),
        name_mapping=name_mapping,
        files=(),
        table=table_name,
    )
    if snapshot is None:
        return plan
    where = f"Iceberg table {table_name!r}, snapshot {snapshot.snapshot_id}"

    with _reading(where, "manifest list", snapshot.manifest_list):
        manifests = snapshot.manifests(io)
    data_manifests = [m for m in manifests if m.content == ManifestContent.DATA]
    delete_manifests = [m for m in manifests if m.content == ManifestContent.DELETES]

    if row_filter is None:
        row_filter = AlwaysTrue()
    planner = ManifestGroupPlanner(metadata, io, row_filter=row_filter)
    data_entries = []
    for manifest in data_manifests:
        with _reading(where, "manifest", manifest.manifest_path):
            for entries in planner.plan_manifest_entries([manifest]):
                data_entries.extend(entries)

    delete_entries = []
    for manifest in delete_manifests:
        with _reading(where, "delete manifest", manifest.manifest_path):
            delete_entries.extend(manifest.fetch_manifest_entry(io, discard_deleted=True))

    positions_by_file: dict[str, list[tuple[int, np.ndarray, str]]] = {}
    equality_entries = []
    puffins: dict[str, list[tuple[str, int, np.ndarray]]] = {}
    # delete files only matter for the planned data files: same partition, not older than them
    specs = metadata.specs()
    planned_partitions = {(e.data_file.spec_id, _partition_key(e.data_file)) for e in data_entries}
    min_data_seq = min((e.sequence_number or 0 for e in data_entries), default=0)
    relevant = [
        entry
        for entry in delete_entries
        if data_entries
        and (entry.sequence_number or 0) >= min_data_seq
        and not (
            specs[entry.data_file.spec_id].fields
            and (entry.data_file.spec_id, _partition_key(entry.data_file)) not in planned_partitions
        )
    ]
    position_files = list(dict.fromkeys(
        (e.data_file.file_path, e.data_file.file_format.name)
        for e in relevant
        if e.data_file.content == DataFileContent.POSITION_DELETES
        and e.data_file.file_format.name != "PUFFIN"
    ))
    # delete files read concurrently: a table holds one per partition or more, and each read
    # waits on storage
    with ThreadPoolExecutor(min(8, len(position_files) or 1)) as pool:
        position_deletes = dict(zip(position_files, pool.map(
            lambda pf: _read_position_deletes(io, pf[0], pf[1], where), position_files
        )))
    for entry in relevant:
        df = entry.data_file
        seq = entry.sequence_number or 0
        if df.content == DataFileContent.POSITION_DELETES:
            fmt = df.file_format.name
            if fmt == "PUFFIN":
                if df.file_path not in puffins:
                    puffins[df.file_path] = _read_deletion_vectors(io, df.file_path, where)
                # v3 entry fields; pyiceberg 0.12's DataFile may not carry them
                content_offset = getattr(df, "content_offset", None)
                referenced = getattr(df, "referenced_data_file", None)
                for target, offset, positions in puffins[df.file_path]:
                    # each manifest entry names its own blob (offset) and data file
                    if content_offset is not None and offset != content_offset:
                        continue
                    if referenced and rerooter.key(referenced) != rerooter.key(target):
                        continue
                    positions_by_file.setdefault(rerooter.key(target), []).append(
                        (seq, positions, rerooter(df.file_path))
                    )
            else:
                for target, positions in position_deletes[(df.file_path, fmt)].items():
                    positions_by_file.setdefault(rerooter.key(target), []).append(
                        (seq, positions, rerooter(df.file_path))
                    )
        elif df.content == DataFileContent.EQUALITY_DELETES:
            equality_entries.append(entry)
        else:
            raise IcebergUnsupportedError(
                f"{where}: delete file content {df.content}", file=df.file_path
            )

    equality_cache: dict[str, pa.Table] = {}
    residuals: dict[int, Any] = {}
    planned: list[IcebergFile] = []
    for entry in data_entries:
        df = entry.data_file
        seq = entry.sequence_number or 0
        if df.file_format.name not in ("PARQUET", "ORC"):
            raise IcebergUnsupportedError(
                f"{where}: data files in {df.file_format.name.capitalize()}", file=df.file_path
            )
        key = rerooter.key(df.file_path)
        chunks = [positions for dseq, positions, _ in positions_by_file.get(key, []) if seq <= dseq]
        deleted = (
            np.unique(np.concatenate(chunks)).astype(np.int64) if chunks else np.empty(0, np.int64)
        )
        if len(deleted) and (deleted[0] < 0 or deleted[-1] >= df.record_count):
            source = next(
                p
                for dseq, positions, p in positions_by_file[key]
                if seq <= dseq
                and len(positions)
                and (positions.min() < 0 or positions.max() >= df.record_count)
            )
            raise IcebergPlanError(
                f"{where}: delete file {source!r} removes row {int(deleted[-1] if deleted[-1] >= df.record_count else deleted[0])} "
                f"of data file {df.file_path!r}, which has {df.record_count} rows",
                file=source,
            )
        equality = []
        for e_entry in equality_entries:
            edf = e_entry.data_file
            if not seq < (e_entry.sequence_number or 0):
                continue
            if specs[edf.spec_id].fields and (
                edf.spec_id != df.spec_id or edf.partition != df.partition
            ):
                continue
            ids = tuple(edf.equality_ids or ())
            if edf.file_path not in equality_cache:
                equality_cache[edf.file_path] = _read_equality_keys(
                    io, edf.file_path, edf.file_format.name, ids, schema, where
                )
            equality.append(EqualityDelete(rerooter(edf.file_path), ids, equality_cache[edf.file_path]))
        data_spec = specs[df.spec_id]
        partition_values = {pf.name: df.partition[i] for i, pf in enumerate(data_spec.fields)}
        identity_values = {
            schema.find_column_name(pf.source_id) or pf.name: df.partition[i]
            for i, pf in enumerate(data_spec.fields)
            if str(pf.transform) == "identity"
        }
        if df.spec_id not in residuals:
            residuals[df.spec_id] = residual_evaluator_of(
                spec=data_spec,
                expr=planner.row_filter,
                case_sensitive=True,
                schema=metadata.schema(),
            )
        residual = residuals[df.spec_id].residual_for(df.partition)
        stats = _file_stats(df, schema, identity_values)
        planned.append(
            IcebergFile(
                path=rerooter(df.file_path),
                size=df.file_size_in_bytes,
                num_records=df.record_count,
                file_format=df.file_format.name.lower(),
                spec_id=df.spec_id,
                partition_values=partition_values,
                identity_values=identity_values,
                sequence_number=seq,
                deleted_rows=deleted if len(deleted) else None,
                deleted_count=len(deleted),
                equality_deletes=equality,
                residual=None if isinstance(residual, AlwaysTrue) else residual,
                stats=stats,
            )
        )
    plan.files = tuple(planned)
    return plan


def _file_stats(data_file: Any, schema: Any, identity_values: Mapping[str, Any]) -> dict[str, FileColumnStats]:
    """A data file's statistics of the table's top-level primitive columns, from its manifest
    entry (lower and upper bounds, null counts: the metrics pyiceberg's own planning prunes
    with); an identity partition column's bounds are its partition value."""
    from pyiceberg.conversions import from_bytes

    lower = data_file.lower_bounds or {}
    upper = data_file.upper_bounds or {}
    nulls = data_file.null_value_counts or {}
    out = {}
    for f in schema.fields:
        if not f.field_type.is_primitive:
            continue
        fid = f.field_id
        if fid not in lower and fid not in upper and fid not in nulls:
            continue
        try:
            lo = from_bytes(f.field_type, lower[fid]) if fid in lower else None
            hi = from_bytes(f.field_type, upper[fid]) if fid in upper else None
        except Exception:  # bounds a writer serialized otherwise: not used
            lo = hi = None
        out[f.name] = FileColumnStats(lo, hi, nulls.get(fid))
    for name, value in identity_values.items():
        rows = data_file.record_count
        out[name] = FileColumnStats(value, value, rows if value is None else 0)
    return out


@contextlib.contextmanager
def _reading(where: str, what: str, path: str) -> Iterator[None]:
    """A failure reading ``path`` (the ``what`` of the table and snapshot ``where``) as an
    :class:`IcebergPlanError` naming it: missing, or unreadable and why."""
    try:
        yield
    except FileNotFoundError as exc:
        raise IcebergPlanError(f"{where}: {what} is missing", file=path) from exc
    except Exception as exc:
        raise IcebergPlanError(f"{where}: {what} cannot be read: {exc}", file=path) from exc


def _partition_key(data_file: Any) -> tuple[Any, ...]:
    partition = data_file.partition
    return tuple(partition[i] for i in range(len(partition)))


def _choose_snapshot(metadata: Any, snapshot_id: int | None, as_of: Any, table: str) -> Any:
    if snapshot_id is not None and as_of is not None:
        raise IcebergPlanError(f"Iceberg table {table!r}: give snapshot_id or as_of, not both")
    if snapshot_id is not None:
        snap = metadata.snapshot_by_id(snapshot_id)
        if snap is None:
            known = ", ".join(str(s.snapshot_id) for s in metadata.snapshots)
            raise IcebergPlanError(
                f"Iceberg table {table!r} has no snapshot {snapshot_id} (snapshots: {known})"
            )
        return snap
    if as_of is not None:
        millis = int(as_of.timestamp() * 1000) if hasattr(as_of, "timestamp") else int(as_of)
        current = None
        for entry in sorted(metadata.snapshot_log, key=lambda e: e.timestamp_ms):
            if entry.timestamp_ms <= millis:
                current = entry.snapshot_id
        if current is None:
            raise IcebergPlanError(f"Iceberg table {table!r} has no snapshot at or before {as_of}")
        return metadata.snapshot_by_id(current)
    return metadata.current_snapshot()


def _read_whole(io: Any, path: str, where: str) -> bytes:
    try:
        with io.new_input(path).open() as f:
            data: bytes = f.read()
            return data
    except FileNotFoundError as exc:
        raise IcebergPlanError(f"{where}: delete file is missing", file=path) from exc


def _read_arrow(io: Any, path: str, fmt: str, where: str) -> pa.Table:
    raw = _read_whole(io, path, where)
    try:
        if fmt == "ORC":
            import pyarrow.orc as po

            return po.ORCFile(pa.BufferReader(raw)).read()
        if fmt == "PARQUET":
            import pyarrow.parquet as pq

            # ParquetFile, not read_table: no dataset machinery per small delete file (a quarter
            # of the time on a table with a delete file per partition)
            return pq.ParquetFile(pa.BufferReader(raw)).read()
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise IcebergPlanError(f"{where}: delete file cannot be read: {exc}", file=path) from exc
    raise IcebergUnsupportedError(f"{where}: delete files in {fmt}", file=path)


def _read_position_deletes(io: Any, path: str, fmt: str, where: str) -> dict[str, np.ndarray]:
    """Target data file path (as written) -> int64 positions, from one position delete file."""
    import pyarrow.compute as pc

    table = _read_arrow(io, path, fmt, where)
    if "file_path" not in table.column_names or "pos" not in table.column_names:
        raise IcebergPlanError(f"{where}: position delete file lacks file_path or pos", file=path)
    paths = table.column("file_path").combine_chunks()
    positions = table.column("pos").combine_chunks()
    if paths.null_count or positions.null_count:
        raise IcebergPlanError(
            f"{where}: position delete file has null file_path or pos", file=path
        )
    encoded = pc.dictionary_encode(paths)
    indices = encoded.indices.to_numpy(zero_copy_only=False)
    pos = positions.cast(pa.int64()).to_numpy(zero_copy_only=False)
    out: dict[str, np.ndarray] = {}
    for i, target in enumerate(encoded.dictionary.to_pylist()):
        out[target] = pos[indices == i]
    return out


def _read_deletion_vectors(io: Any, path: str, where: str) -> list[tuple[str, int, np.ndarray]]:
    """(target data file path, blob offset, positions) of each deletion-vector-v1 blob of a
    puffin file."""
    from pyiceberg.table.deletion_vector import deletion_vectors_from_puffin_file
    from pyiceberg.table.puffin import PuffinFile

    raw = _read_whole(io, path, where)
    try:
        puffin = PuffinFile(raw)
        vectors = deletion_vectors_from_puffin_file(puffin)
    except Exception as exc:
        raise IcebergPlanError(
            f"{where}: deletion vector file cannot be read: {exc}", file=path
        ) from exc
    out: list[tuple[str, int, np.ndarray]] = []
    for blob, vector in zip(puffin.footer.blobs, vectors):
        if blob.type != "deletion-vector-v1":
            raise IcebergUnsupportedError(
                f"{where}: puffin blob type {blob.type!r} in a delete file", file=path
            )
        positions = vector.to_vector().to_numpy().astype(np.int64)
        cardinality = blob.properties.get("cardinality")
        if cardinality is not None and int(cardinality) != len(positions):
            raise IcebergPlanError(
                f"{where}: deletion vector for {vector.referenced_data_file!r} holds {len(positions)} positions, its cardinality says {cardinality}",
                file=path,
            )
        out.append((vector.referenced_data_file, blob.offset, positions))
    return out


def _read_equality_keys(
    io: Any, path: str, fmt: str, ids: tuple[int, ...], schema: Any, where: str
) -> pa.Table:
    table = _read_arrow(io, path, fmt, where)
    by_id = field_ids_of(table.schema)
    columns = []
    names = []
    for fid in ids:
        if fid not in by_id:
            raise IcebergPlanError(
                f"{where}: equality delete file has no column with field id {fid}", file=path
            )
        columns.append(table.column(by_id[fid]))
        names.append(schema.find_column_name(fid) or f"field_{fid}")
    return pa.table(columns, names=names)


def resolve_columns(
    plan: IcebergPlan, data_file: IcebergFile, file_schema: pa.Schema
) -> list[ColumnSource]:
    """For each column of ``plan.schema``: which column of this data file holds it.

    Matching is by Iceberg field id (renamed and reordered columns follow their id; a dropped
    column is simply not in the table schema). A file without field ids (a migrated table) is
    matched through the table's name mapping. A column the file lacks reads as its identity
    partition value, its v3 initial default, or null.
    """
    by_id = field_ids_of(file_schema)
    if not by_id and plan.name_mapping is not None:
        for mapped in plan.name_mapping:
            for name in mapped.names:
                if name in file_schema.names and mapped.field_id is not None:
                    by_id[mapped.field_id] = name
    out = []
    for f in plan.schema:
        fid = int((f.metadata or {})[FIELD_ID_KEY])
        name = by_id.get(fid)
        if name is not None:
            out.append(ColumnSource(f.name, fid, name))
        elif f.name in data_file.identity_values:
            out.append(ColumnSource(f.name, fid, None, data_file.identity_values[f.name]))
        else:
            out.append(ColumnSource(f.name, fid, None, plan.initial_defaults.get(fid)))
    return out


def describe(plan: IcebergPlan) -> dict[str, Any]:
    """A JSON-ready summary (for ``explain`` / ``inspect``)."""
    return {
        "kind": plan.kind,
        "root": plan.root,
        "snapshot_id": plan.snapshot_id,
        "files": len(plan.files),
        "rows_in_files": sum(f.num_records for f in plan.files),
        "position_deleted_rows": sum(f.deleted_count for f in plan.files),
        "equality_delete_files": len({e.path for f in plan.files for e in f.equality_deletes}),
    }


def static_table(metadata_location: str, reroot: Mapping[str, str] | None = None) -> Any:
    """A pyiceberg ``StaticTable`` of a metadata JSON file whose locations are re-rooted with
    ``reroot`` (old prefix -> new location), for pyiceberg's own reads of a copied table."""
    from pyiceberg.catalog.noop import NoopCatalog
    from pyiceberg.table import StaticTable

    metadata, location, _, _ = _load_metadata(metadata_location, None, None)
    return StaticTable(
        identifier=("static-table", location),
        metadata_location=location,
        metadata=metadata,
        io=_reroot_io({}, Rerooter(reroot)),
        catalog=NoopCatalog("static-table"),
    )


def verify_files(plan: IcebergPlan) -> None:
    """Check that every planned data file exists with the size its manifest gives (one listing
    call per filesystem); raise :class:`IcebergPlanError` naming table, snapshot and file."""
    from pyarrow import fs as pafs

    groups: dict[int, tuple[Any, list[tuple[str, IcebergFile]]]] = {}
    for data_file in plan.files:
        try:
            filesystem, inner = pafs.FileSystem.from_uri(data_file.path)
        except (pa.ArrowInvalid, ValueError):
            filesystem, inner = pafs.LocalFileSystem(), data_file.path
        groups.setdefault(id(type(filesystem)), (filesystem, []))[1].append((inner, data_file))
    for filesystem, members in groups.values():
        infos = filesystem.get_file_info([inner for inner, _ in members])
        for info, (_, data_file) in zip(infos, members):
            if info.type == pafs.FileType.NotFound:
                raise IcebergPlanError(f"{plan.context}: data file is missing", file=data_file.path)
            if info.size != data_file.size:
                raise IcebergPlanError(
                    f"{plan.context}: data file has {info.size} bytes, its manifest says {data_file.size}",
                    file=data_file.path,
                )
