"""Delta Lake and Iceberg tables: TPC-H lineitem read as a table against the table readers.

Data (built once under ``data/tables/sf{N}/``, reused while its marker ``tables.json`` is there):
TPC-H lineitem at scale N, partitioned by month of ``l_shipdate`` and written in the order
``(month, l_orderkey, l_linenumber)``:

- a Delta table written by ``deltalake`` (delta-rs); the partition column is ``l_shipmonth`` (``'YYYY-MM'``, not stored in the data files), so a
  ``select *`` of the table has 17 columns;
- an Iceberg table (format v2) written by ``pyiceberg`` into a SQL catalog on SQLite in the data
  folder, partitioned by the hidden transform ``month(l_shipdate)`` (16 columns).

Then 1 % of the rows of every data file are deleted, chosen at random (seeded) among the rows that
do not match the seed value V, so Q-A and Q-B match the same rows with and without the deletes
(Spark's Parquet reader over the snapshot's files can then be compared on them). The table
writers do not write row-level deletes here, checked with deltalake 1.6.6 and pyiceberg 0.12.0:

- ``DeltaTable.delete`` rewrites every file holding a deleted row (copy-on-write) even with
  ``delta.enableDeletionVectors`` set: the commit holds ``remove`` and ``add`` actions and no
  ``deletionVector``. So the deletes are committed here as deletion vectors: a 64-bit roaring
  bitmap array per file (``pyroaring`` serializes each 32-bit bitmap in the portable format), all
  in one ``deletion_vector_<uuid>.bin`` (storage type ``u``), one commit of the protocol
  (reader 3 / writer 7, feature ``deletionVectors``) and ``remove`` + ``add`` with
  ``deletionVector`` per file (the Delta Lake protocol, "Deletion Vectors"). The table is
  written without ``delta.enableDeletionVectors``: with it, deltalake 1.6.6 also lists the reader
  feature ``variantType`` (no column is a variant), which lazyscan refuses. The build checks
  the result with ``deltalake``'s own reader (``QueryBuilder``, delta-kernel-rs): its row count of
  the new version must be the rows written minus the rows deleted, and its rows must hold none of
  the deleted keys.
- ``Table.delete`` rewrites the files too (``write.delete.mode=merge-on-read`` only warns "Merge on
  read is not yet supported, falling back to copy-on-write"). So the deletes are written as
  position delete files (``file_path``, ``pos``; one per data file, in its partition) and added
  in one snapshot whose manifest has content ``deletes``, through pyiceberg's snapshot producer.
  The build checks the result with pyiceberg's own reader (``scan().to_arrow()``, which applies
  position deletes): row count and deleted keys as for Delta.

Each table keeps its older version (Delta version 0, the first Iceberg snapshot): the rows before
the deletes, read by time travel.

Cases, per table: the seed pair Q-A ``select * where l_comment = V`` and Q-B ``select l_orderkey
where l_comment = V`` (taking turns run by run, for the select-* penalty), TPC-H Q6's filter
selecting ``l_extendedprice, l_discount``, a key range ``select * where l_orderkey between K and
K+1000``, and Q-A and Q6 at the older version. Engines, in-process, interleaved run by run:

- ``lazyscan`` on the table (``lazyscan.scan(root, version=...)``);
- ``lazyscan`` on the snapshot's data files as plain Parquet (``raw_files=True``; the seed pair
  only, for the penalty comparison: the deletes do not touch its rows);
- Polars ``scan_delta`` / ``scan_iceberg``;
- ``deltalake``: ``QueryBuilder`` (SQL through delta-kernel-rs and DataFusion) and
  ``to_pyarrow_dataset`` (which refuses tables with deletion vectors: reported as unavailable,
  with deltalake's message);
- pyiceberg ``scan(row_filter, selected_fields).to_arrow()``.

Every engine must return the expected row count (DuckDB's count over the source minus the deleted
rows that match); ``run`` exits 1 otherwise. Spark ``local[2]`` (with ``--no-spark`` left out):
``lazyscan.spark.read(spark, root, ...)`` on the table against ``spark.read.parquet`` over the
snapshot's data files and against ``lazyscan.spark.read`` over those files, on the seed pair.

Planning: a Delta and an Iceberg table of 1,000 small files (a 1,000-value partition column, one
commit / snapshot) planned by lazyscan (``plan_delta`` / ``plan_iceberg``: the driver's work in
Spark), by ``deltalake`` (``DeltaTable(...).file_uris()``) and by pyiceberg (``plan_files()``).

Run: ``python -m benchmarks run tables --sf N`` (reports ``reports/tables-sf{N}-<stamp>.json``
and ``.md``).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import shutil
import statistics
import struct
import time
import uuid
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from benchmarks import THREADS
from benchmarks.data import QueryValue, ensure_tpch, pick_query_value, sf_label
from benchmarks.engines import (
    Engine,
    EngineUnavailable,
    Query,
    QueryResult,
    SparkEngine,
    _profile_dict,
    _timed,
    polars_collect,
    run_queries,
)
from benchmarks.ui import progress_or

DELETE_FRACTION = 0.01
"""Share of each data file's rows deleted (deletion vectors / position deletes)."""

SEED = 37
"""Seed of the rows chosen for deletion."""

MARKER = "tables.json"
"""Written last into the data folder: the build is complete and what it holds."""

BUILD_VERSION = 1
"""Bumped when the build changes; a marker of another version is rebuilt."""

SORT_MEMORY = "4GB"
"""DuckDB's memory while it sorts lineitem by month (it spills beyond; SF10 is ~10 GB as Arrow)."""

PLAN_FILES = 1000
"""Data files of the planning tables."""

Q6_WHERE = (
    "l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' "
    "AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24"
)
Q6_COLUMNS = ("l_extendedprice", "l_discount")

DV_MAGIC = 1681511377
"""First four bytes of a serialized Delta deletion vector (RoaringBitmapArray, little-endian)."""

_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_B85 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"

ICEBERG_POS_FIELD_IDS = {"file_path": 2147483546, "pos": 2147483545}
"""Field ids of a position delete file's columns (Iceberg spec, "Position Delete Files")."""


# --------------------------------------------------------------------------- the built tables


@dataclass
class TableVersion:
    """One version of a built table: its id (Delta version, Iceberg snapshot id) and data files."""

    version: int
    files: list[str]
    rows: int


@dataclass
class BuiltTable:
    """A built table: format, root folder, the current version (with deletes) and the older one."""

    fmt: str
    root: str
    current: TableVersion
    older: TableVersion
    deleted_rows: int
    deleted_path: str
    build_seconds: float
    notes: list[str] = field(default_factory=list)
    catalog: dict[str, str] = field(default_factory=dict)
    identifier: str = ""
    metadata_location: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "fmt": self.fmt,
            "root": self.root,
            "current": vars(self.current),
            "older": vars(self.older),
            "deleted_rows": self.deleted_rows,
            "deleted_path": self.deleted_path,
            "build_seconds": self.build_seconds,
            "notes": self.notes,
            "catalog": self.catalog,
            "identifier": self.identifier,
            "metadata_location": self.metadata_location,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BuiltTable:
        d = dict(d)
        d["current"] = TableVersion(**d["current"])
        d["older"] = TableVersion(**d["older"])
        return cls(**d)


def tables_root(sf: float, data_dir: Path | None = None) -> Path:
    from benchmarks.data import DATA_DIR

    return (data_dir or DATA_DIR) / "tables" / sf_label(sf)


def month_batches(lineitem: Path, batch_rows: int = 1 << 20) -> Iterator[tuple[str, pa.Table]]:
    """lineitem month by month of ``l_shipdate``, each month's rows ordered by
    ``(l_orderkey, l_linenumber)``, with the column ``l_shipmonth`` ('YYYY-MM') appended.
    DuckDB sorts (spilling to disk when needed); one month is in memory at a time."""
    import duckdb

    con = duckdb.connect()
    try:
        con.execute(f"SET threads = {THREADS}")
        con.execute(f"SET memory_limit = '{SORT_MEMORY}'")
        con.execute(f"SET temp_directory = '{lineitem.parent / '.duckdb-sort'}'")
        con.execute("SET preserve_insertion_order = true")
        con.execute("SET enable_progress_bar = false")
        source = "'" + str(lineitem).replace("'", "''") + "'"
        reader = con.sql(
            f"SELECT *, strftime(l_shipdate, '%Y-%m') AS l_shipmonth FROM read_parquet({source}) "
            "ORDER BY l_shipmonth, l_orderkey, l_linenumber"
        ).to_arrow_reader(batch_rows)
        month: str | None = None
        pieces: list[pa.Table] = []
        for batch in reader:
            t = _unview_table(pa.Table.from_batches([batch]))
            months = t.column("l_shipmonth")
            while t.num_rows:
                first = months[0].as_py()
                if month is not None and first != month:
                    yield month, pa.concat_tables(pieces)
                    pieces = []
                month = first
                same = pc.equal(months, first)
                # the rows are sorted by month: the month's rows are a prefix
                n = int(pc.sum(same).as_py() or 0)
                pieces.append(t.slice(0, n))
                t, months = t.slice(n), months.slice(n)
        if month is not None and pieces:
            yield month, pa.concat_tables(pieces)
    finally:
        con.close()


def _unview_table(t: pa.Table) -> pa.Table:
    """View types as their plain types (pyiceberg and deltalake's schemas speak those)."""
    fields = []
    for f in t.schema:
        if f.type == pa.string_view() or f.type == pa.large_string():
            f = f.with_type(pa.string())
        elif f.type == pa.binary_view():
            f = f.with_type(pa.binary())
        fields.append(f)
    schema = pa.schema(fields)
    return t if schema.equals(t.schema) else t.cast(schema)


def choose_deletes(path: str, value: str, seed: int) -> np.ndarray:
    """Sorted positions of 1 % of a data file's rows, at random among those whose ``l_comment``
    is not ``value``."""
    comments = pq.read_table(path, columns=["l_comment"]).column(0)
    eligible = np.flatnonzero(~pc.fill_null(pc.equal(comments, value), False).to_numpy(zero_copy_only=False))
    n = round(len(comments) * DELETE_FRACTION)
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(eligible, size=min(n, len(eligible)), replace=False)).astype(np.int64)


def _deleted_rows(path: str, positions: np.ndarray, partition: dict[str, Any] | None = None) -> pa.Table:
    t = _unview_table(pq.read_table(path)).take(pa.array(positions))
    for name, v in (partition or {}).items():
        t = t.append_column(name, pa.array([v] * t.num_rows, pa.string()))
    return t


def z85_encode(data: bytes) -> str:
    """Z85 (ZeroMQ RFC 32) of ``data`` (length a multiple of 4): base 85, big-endian words, as
    Python's b85 but with Z85's alphabet."""
    import base64

    return base64.b85encode(data).decode().translate(str.maketrans(_B85, _Z85))


def serialize_deletion_vector(positions: np.ndarray) -> bytes:
    """A Delta deletion vector: the magic, the number of 32-bit bitmaps, then per bitmap its key
    (the high 32 bits) and the bitmap of the low 32 bits in the portable roaring format."""
    from pyroaring import BitMap

    high = (positions >> 32).astype(np.int64)
    keys = np.unique(high)
    out = [struct.pack("<iq", DV_MAGIC, len(keys))]
    for key in keys:
        low = (positions[high == key] & 0xFFFFFFFF).astype(np.uint32)
        out.append(struct.pack("<I", int(key)) + BitMap(low.tolist()).serialize())
    return b"".join(out)


def _delta_log_adds(root: Path) -> list[dict[str, Any]]:
    adds: dict[str, dict[str, Any]] = {}
    for commit in sorted((root / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            if not line.strip():
                continue
            action = json.loads(line)
            if "add" in action:
                adds[action["add"]["path"]] = action["add"]
            elif "remove" in action:
                adds.pop(action["remove"]["path"], None)
    return list(adds.values())


def commit_deletion_vectors(root: Path, deletes: dict[str, np.ndarray]) -> int:
    """Commit the next version of the Delta table at ``root``: each data file of ``deletes`` (log
    path -> sorted row positions) removed and added again with its deletion vector, the vectors
    in one file of storage type ``u``. Returns the new version."""
    log = root / "_delta_log"
    version = max(int(p.stem) for p in log.glob("*.json")) + 1
    adds = {a["path"]: a for a in _delta_log_adds(root)}
    dv_uuid = uuid.uuid4()
    blob = bytearray(b"\x01")  # format version of a deletion vector file
    now = int(time.time() * 1000)
    actions: list[dict[str, Any]] = [
        {"commitInfo": {"timestamp": now, "operation": "DELETE",
                        "operationParameters": {"predicate": "1 % of the rows (benchmark)"},
                        "readVersion": version - 1, "isBlindAppend": False}},
        # table features: reader 3 / writer 7, listing the writer features version 2 implies
        {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
                      "writerFeatures": ["appendOnly", "invariants", "deletionVectors"]}},
    ]
    for path, positions in deletes.items():
        data = serialize_deletion_vector(positions)
        descriptor = {
            "storageType": "u",
            "pathOrInlineDv": z85_encode(dv_uuid.bytes),
            "offset": len(blob),
            "sizeInBytes": len(data),
            "cardinality": len(positions),
        }
        blob += struct.pack(">i", len(data)) + data + struct.pack(">I", zlib.crc32(data))
        add = dict(adds[path], deletionVector=descriptor, dataChange=True, modificationTime=now)
        remove = {"path": path, "dataChange": True, "deletionTimestamp": now, "extendedFileMetadata": True,
                  "partitionValues": add.get("partitionValues", {}), "size": add.get("size")}
        actions += [{"remove": remove}, {"add": add}]
    (root / f"deletion_vector_{dv_uuid}.bin").write_bytes(bytes(blob))
    tmp = log / f".{version:020d}.json.tmp"
    tmp.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    os.replace(tmp, log / f"{version:020d}.json")
    return version


def _check_deleted(table: pa.Table, deleted: pa.Table, reader: str, expected_rows: int) -> None:
    """``reader``'s rows of the new version: ``expected_rows`` of them, none of the deleted keys."""
    if table.num_rows != expected_rows:
        raise RuntimeError(f"{reader} reads {table.num_rows:,} rows after the deletes, expected {expected_rows:,}")
    import duckdb

    con = duckdb.connect()
    try:
        con.register("t", table)
        con.register("d", deleted.select(["l_orderkey", "l_linenumber"]))
        row = con.execute("SELECT count(*) FROM t JOIN d USING (l_orderkey, l_linenumber)").fetchone()
    finally:
        con.close()
    if row is None or row[0]:
        raise RuntimeError(f"{reader} still returns {row and row[0]} deleted rows")


def build_delta(root: Path, lineitem: Path, value: QueryValue, progress: Any = None) -> BuiltTable:
    """The Delta table: version 0 written by deltalake, version 1 its deletion vectors."""
    import deltalake

    started = time.perf_counter()
    shutil.rmtree(root, ignore_errors=True)
    with progress_or(progress) as prog:
        task = prog.add_task("Delta: writing months", total=None)

        months = month_batches(lineitem)
        first = next(months)

        def batches() -> Iterator[pa.RecordBatch]:
            yield from first[1].to_batches()
            for month, t in months:
                prog.update(task, description=f"Delta: writing {month}")
                yield from t.to_batches()

        reader = pa.RecordBatchReader.from_batches(first[1].schema, batches())
        deltalake.write_deltalake(str(root), reader, partition_by=["l_shipmonth"])
        prog.update(task, description="Delta: choosing deletes")
        adds = sorted(_delta_log_adds(root), key=lambda a: a["path"])
        files0 = [str(root / a["path"]) for a in adds]
        rows0 = sum(json.loads(a["stats"])["numRecords"] for a in adds)
        deletes: dict[str, np.ndarray] = {}
        deleted: list[pa.Table] = []
        for i, a in enumerate(adds):
            path = str(root / a["path"])
            positions = choose_deletes(path, value.value, SEED + i)
            if len(positions):
                deletes[a["path"]] = positions
                deleted.append(_deleted_rows(path, positions, a.get("partitionValues")))
        prog.update(task, description="Delta: committing deletion vectors")
        version = commit_deletion_vectors(root, deletes)
        deleted_table = pa.concat_tables(deleted)
        deleted_path = root.parent / "delta-deleted.parquet"
        pq.write_table(deleted_table, deleted_path)
        prog.update(task, description="Delta: checking with deltalake's QueryBuilder")
        dtable = deltalake.DeltaTable(str(root), version=version)
        check = pa.table(
            deltalake.QueryBuilder().register("t", dtable).execute("select l_orderkey, l_linenumber from t").read_all()
        )
        _check_deleted(check, deleted_table, "deltalake QueryBuilder", rows0 - deleted_table.num_rows)
        prog.remove_task(task)
    files1 = [str(root / a["path"]) for a in sorted(_delta_log_adds(root), key=lambda a: a["path"])]
    return BuiltTable(
        fmt="delta", root=str(root),
        current=TableVersion(version, files1, rows0 - deleted_table.num_rows),
        older=TableVersion(0, files0, rows0),
        deleted_rows=deleted_table.num_rows, deleted_path=str(deleted_path),
        build_seconds=time.perf_counter() - started,
        notes=[
            "deltalake 1.6.6's DeltaTable.delete rewrites files (copy-on-write) even with "
            "delta.enableDeletionVectors; the deletion vectors are committed by the benchmark's "
            "builder and checked with deltalake's QueryBuilder",
        ],
    )


def iceberg_catalog(folder: Path) -> tuple[Any, dict[str, str]]:
    """pyiceberg's SQL catalog on SQLite in ``folder``, and its properties."""
    from pyiceberg.catalog.sql import SqlCatalog

    folder.mkdir(parents=True, exist_ok=True)
    props = {"uri": f"sqlite:///{folder / 'catalog.db'}", "warehouse": (folder / "warehouse").as_uri()}
    return SqlCatalog("bench", **props), props


def _position_delete_writer() -> Any:
    """A pyiceberg manifest writer for delete files (its own writers write data manifests)."""
    from pyiceberg.manifest import ManifestContent, ManifestWriterV2

    class DeleteManifestWriter(ManifestWriterV2):
        def content(self) -> ManifestContent:
            return ManifestContent.DELETES

        @property
        def _meta(self) -> dict[str, str]:
            return {**super()._meta, "content": "deletes"}

    return DeleteManifestWriter


def add_position_deletes(table: Any, deletes: dict[str, tuple[Any, np.ndarray]]) -> None:
    """Commit one snapshot adding a position delete file per data file of ``deletes`` (data file
    path -> (its pyiceberg DataFile, sorted positions)), each in its data file's partition."""
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.table.snapshots import Operation
    from pyiceberg.table.update.snapshot import _FastAppendFiles

    writer_class = _position_delete_writer()
    schema = pa.schema([
        pa.field("file_path", pa.string(), nullable=False,
                 metadata={b"PARQUET:field_id": str(ICEBERG_POS_FIELD_IDS["file_path"]).encode()}),
        pa.field("pos", pa.int64(), nullable=False,
                 metadata={b"PARQUET:field_id": str(ICEBERG_POS_FIELD_IDS["pos"]).encode()}),
    ])
    location = table.metadata.location.removeprefix("file://")
    delete_files = []
    for data_path, (data_file, positions) in deletes.items():
        local = Path(location) / "data" / f"delete-{uuid.uuid4()}.parquet"
        local.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table([pa.array([data_path] * len(positions)), pa.array(positions)], schema=schema), local)
        delete_files.append(DataFile.from_args(
            content=DataFileContent.POSITION_DELETES,
            file_path=local.as_uri(),
            file_format=FileFormat.PARQUET,
            partition=data_file.partition,
            record_count=len(positions),
            file_size_in_bytes=local.stat().st_size,
            lower_bounds={ICEBERG_POS_FIELD_IDS["file_path"]: data_path.encode()},
            upper_bounds={ICEBERG_POS_FIELD_IDS["file_path"]: data_path.encode()},
            spec_id=data_file.spec_id,
        ))

    class AddDeleteFiles(_FastAppendFiles):
        def new_manifest_writer(self, spec: Any) -> Any:
            return writer_class(spec, self.schema(), self.new_manifest_output(), self._snapshot_id,
                                self._compression)

    with table.transaction() as tx:
        producer = AddDeleteFiles(operation=Operation.OVERWRITE, transaction=tx, io=table.io)
        with producer as snapshot:
            for f in delete_files:
                snapshot.append_data_file(f)


def build_iceberg(folder: Path, lineitem: Path, value: QueryValue, progress: Any = None) -> BuiltTable:
    """The Iceberg table: a first snapshot of the data written by pyiceberg (one snapshot, month
    by month), a second adding position delete files."""
    from pyiceberg.io.pyarrow import _dataframe_to_data_files
    from pyiceberg.transforms import MonthTransform

    started = time.perf_counter()
    shutil.rmtree(folder, ignore_errors=True)
    catalog, props = iceberg_catalog(folder)
    catalog.create_namespace("tpch")
    with progress_or(progress) as prog:
        task = prog.add_task("Iceberg: writing months", total=None)
        months = month_batches(lineitem)
        month, t = next(months)
        t = t.drop_columns(["l_shipmonth"])
        table = catalog.create_table("tpch.lineitem", schema=t.schema)
        with table.update_spec() as spec:
            spec.add_field("l_shipdate", MonthTransform(), "l_shipdate_month")
        table = catalog.load_table("tpch.lineitem")
        with table.transaction() as tx, tx.update_snapshot().fast_append() as append:
            while True:
                prog.update(task, description=f"Iceberg: writing {month}")
                for data_file in _dataframe_to_data_files(
                    table_metadata=tx.table_metadata, write_uuid=append.commit_uuid, df=t, io=table.io
                ):
                    append.append_data_file(data_file)
                nxt = next(months, None)
                if nxt is None:
                    break
                month, t = nxt[0], nxt[1].drop_columns(["l_shipmonth"])
        table = catalog.load_table("tpch.lineitem")
        older = table.current_snapshot()
        tasks = list(table.scan().plan_files())
        files0 = sorted(t.file.file_path.removeprefix("file://") for t in tasks)
        rows0 = sum(t.file.record_count for t in tasks)
        prog.update(task, description="Iceberg: choosing deletes")
        deletes: dict[str, tuple[Any, np.ndarray]] = {}
        deleted: list[pa.Table] = []
        for i, st in enumerate(sorted(tasks, key=lambda t: t.file.file_path)):
            path = st.file.file_path.removeprefix("file://")
            positions = choose_deletes(path, value.value, SEED + i)
            if len(positions):
                deletes[st.file.file_path] = (st.file, positions)
                deleted.append(_deleted_rows(path, positions))
        prog.update(task, description="Iceberg: committing position deletes")
        add_position_deletes(table, deletes)
        table = catalog.load_table("tpch.lineitem")
        deleted_table = pa.concat_tables(deleted)
        deleted_path = folder / "iceberg-deleted.parquet"
        pq.write_table(deleted_table, deleted_path)
        prog.update(task, description="Iceberg: checking with pyiceberg's reader")
        check = table.scan(selected_fields=("l_orderkey", "l_linenumber")).to_arrow()
        _check_deleted(check, deleted_table, "pyiceberg scan().to_arrow()", rows0 - deleted_table.num_rows)
        prog.remove_task(task)
    current = table.current_snapshot()
    return BuiltTable(
        fmt="iceberg", root=table.metadata.location.removeprefix("file://"),
        current=TableVersion(current.snapshot_id, files0, rows0 - deleted_table.num_rows),
        older=TableVersion(older.snapshot_id, files0, rows0),
        deleted_rows=deleted_table.num_rows, deleted_path=str(deleted_path),
        build_seconds=time.perf_counter() - started,
        notes=[
            "pyiceberg 0.12.0's Table.delete rewrites files (copy-on-write; merge-on-read only "
            "warns); the position delete files are written by the benchmark's builder and "
            "checked with pyiceberg's scan().to_arrow()",
        ],
        catalog=props, identifier="tpch.lineitem", metadata_location=table.metadata_location,
    )


def ensure_tables(sf: float, data_dir: Path | None = None, progress: Any = None) -> dict[str, BuiltTable]:
    """The Delta and the Iceberg table of TPC-H lineitem at ``sf``, built when missing."""
    root = tables_root(sf, data_dir).resolve()  # file URIs and the marker's paths need it absolute
    marker = root / MARKER
    if marker.exists():
        try:
            saved = json.loads(marker.read_text())
            if saved.get("build") == BUILD_VERSION:
                return {k: BuiltTable.from_dict(v) for k, v in saved["tables"].items()}
        except (ValueError, KeyError, TypeError):
            pass
    dataset = ensure_tpch(sf, data_dir=data_dir, progress=progress)
    value = pick_query_value(dataset, target=_value_target(sf))
    root.mkdir(parents=True, exist_ok=True)
    marker.unlink(missing_ok=True)
    built = {
        "delta": build_delta(root / "delta" / "lineitem", dataset.lineitem, value, progress),
        "iceberg": build_iceberg(root / "iceberg", dataset.lineitem, value, progress),
    }
    marker.write_text(json.dumps({"build": BUILD_VERSION, "sf": sf, "value": value.value,
                                  "tables": {k: v.to_dict() for k, v in built.items()}}, indent=1) + "\n")
    return built


def _value_target(sf: float) -> int:
    """Rows of the seed value: 100 (2 on the tiny scale factors, as the suite's --quick)."""
    return 100 if sf >= 0.1 else 2


# --------------------------------------------------------------------------- queries


@dataclass(frozen=True)
class TableQuery(Query):
    """A query on one version of a built table: ``paths`` is the table's root; ``version`` the
    Delta version or Iceberg snapshot id (None: the current one); ``files`` the version's data
    files, for the engines that read them as plain Parquet."""

    fmt: str = ""
    version: int | None = None
    files: tuple[str, ...] = ()


def duckdb_count(paths: Sequence[str], where: str | None) -> int:
    """Rows of the Parquet files ``paths`` matching ``where``."""
    import duckdb

    con = duckdb.connect()
    try:
        con.execute(f"SET threads = {THREADS}")
        listed = ", ".join("'" + p.replace("'", "''") + "'" for p in paths)
        row = con.execute(f"SELECT count(*) FROM read_parquet([{listed}]) WHERE {where or 'true'}").fetchone()
    finally:
        con.close()
    return int(row[0]) if row else 0


def key_range(lineitem: Path) -> str:
    """``l_orderkey between K and K+1000``, K half the largest order key (as the ``spark``
    scenario's range)."""
    md = pq.ParquetFile(lineitem).metadata
    col = md.schema.to_arrow_schema().get_field_index("l_orderkey")
    top = max(int(md.row_group(i).column(col).statistics.max) for i in range(md.num_row_groups))
    k = top // 2
    return f"l_orderkey BETWEEN {k} AND {k + 1000}"


def table_queries(built: BuiltTable, lineitem: Path, value: QueryValue) -> list[TableQuery]:
    """The cases on one table: the seed pair, Q6, the key range (current version), Q-A and Q6
    at the older version; expected rows = DuckDB's count over the source minus the deleted rows
    that match."""
    label = {"delta": "Delta", "iceberg": "Iceberg"}[built.fmt]
    seed = value.predicate()
    rng = key_range(lineitem)
    cases = [
        ("Q-A", None, seed, "Q-A select * where l_comment = V"),
        ("Q-B", ("l_orderkey",), seed, "Q-B select l_orderkey where l_comment = V"),
        ("Q6", Q6_COLUMNS, Q6_WHERE, "Q6 filter, select l_extendedprice, l_discount"),
        ("range", None, rng, "select * where l_orderkey between K and K+1000"),
        ("Q-A old", None, seed, "Q-A at the older version (time travel)"),
        ("Q6 old", Q6_COLUMNS, Q6_WHERE, "Q6 at the older version (time travel)"),
    ]
    out = []
    for name, columns, where, text in cases:
        old = name.endswith(" old")
        version = built.older if old else built.current
        expected = duckdb_count([str(lineitem)], where)
        if not old:
            expected -= duckdb_count([built.deleted_path], where)
        out.append(TableQuery(
            f"{label} {name}", (built.root,), columns, where, group=f"{label} table",
            x=text, expected_rows=expected, label=name,
            fmt=built.fmt, version=None if not old else version.version, files=tuple(version.files),
        ))
    return out


# --------------------------------------------------------------------------- engines


def _where_sql(query: Query) -> str:
    return query.sql("t")


class _LazyscanEngine(Engine):
    """``lazyscan.scan(...).to_table()`` on what :meth:`_source` gives, its profile kept."""

    def setup(self) -> None:
        import lazyscan

        self.scan = lazyscan.scan

    def _source(self, query: TableQuery) -> tuple[Any, dict[str, Any]]:
        """The scan's source and its table options."""
        raise NotImplementedError

    def _run(self, query: Query) -> tuple[int, float]:
        assert isinstance(query, TableQuery)
        columns = list(query.columns) if query.columns else None
        source, options = self._source(query)

        def go() -> tuple[Any, pa.Table]:
            s = self.scan(source, columns=columns, where=query.where, threads=THREADS, **options)
            return s, s.to_table()

        (s, table), seconds = _timed(go)
        self.last_profile = _profile_dict(getattr(s, "profile", None))
        return table.num_rows, seconds


class LazyscanTableEngine(_LazyscanEngine):
    """lazyscan on the table: ``lazyscan.scan(root, columns, where, version=..., threads=2)``."""

    def __init__(self, fmt: str) -> None:
        super().__init__()
        self.fmt = fmt
        self.name = "lazyscan"
        self.label = "lazyscan table"

    def _source(self, query: TableQuery) -> tuple[Any, dict[str, Any]]:
        return query.paths[0], {"version": query.version}


class LazyscanFilesEngine(_LazyscanEngine):
    """lazyscan on the version's data files as plain Parquet (``raw_files=True``): the deletes
    are not applied and a Delta partition column is not added."""

    name = "lazyscan-files"
    label = "lazyscan plain files"

    def _source(self, query: TableQuery) -> tuple[Any, dict[str, Any]]:
        return list(query.files), {"raw_files": True}


class PolarsTableEngine(Engine):
    """Polars ``scan_delta`` / ``scan_iceberg`` (the pyiceberg table, loaded once), the filter as
    ``pl.sql_expr``, then ``select``, ``collect``."""

    def __init__(self, fmt: str, built: BuiltTable) -> None:
        super().__init__()
        self.fmt, self.built = fmt, built
        self.name = f"polars-{fmt}"
        self.label = "Polars scan_delta" if fmt == "delta" else "Polars scan_iceberg"

    def setup(self) -> None:
        os.environ.setdefault("POLARS_MAX_THREADS", str(THREADS))
        # Polars plans Iceberg scans with pyiceberg unless the polars_iceberg plugin is installed
        # (it is not here); this says so without its warning on every scan
        os.environ.setdefault("POLARS_ICEBERG_PLANNER", "pyiceberg")
        import polars as pl

        self.pl = pl
        self.table = load_iceberg(self.built) if self.fmt == "iceberg" else None

    def _run(self, query: Query) -> tuple[int, float]:
        assert isinstance(query, TableQuery)
        pl = self.pl

        def go() -> Any:
            if self.fmt == "delta":
                lf = pl.scan_delta(query.paths[0], version=query.version)
            else:
                lf = pl.scan_iceberg(self.table, snapshot_id=query.version)
            return polars_collect(pl, lf, query)

        df, seconds = _timed(go)
        return df.height, seconds


class DeltaQueryBuilderEngine(Engine):
    """deltalake's ``QueryBuilder``: ``DeltaTable(root, version)`` registered as ``t``, the query
    as SQL, ``read_all()``."""

    name = "deltalake-sql"
    label = "deltalake QueryBuilder"

    def setup(self) -> None:
        import deltalake

        self.deltalake = deltalake

    def _run(self, query: Query) -> tuple[int, float]:
        assert isinstance(query, TableQuery)
        dl = self.deltalake

        def go() -> pa.Table:
            table = dl.DeltaTable(query.paths[0], version=query.version)
            return pa.table(dl.QueryBuilder().register("t", table).execute(_where_sql(query)).read_all())

        table, seconds = _timed(go)
        return table.num_rows, seconds


class DeltaDatasetEngine(Engine):
    """deltalake's ``to_pyarrow_dataset()`` with the filter as a pyarrow expression. deltalake
    1.6.6 refuses tables with deletion vectors there (only its ``QueryBuilder`` reads them)."""

    name = "deltalake-pyarrow"
    label = "deltalake to_pyarrow_dataset"

    def setup(self) -> None:
        import deltalake

        pa.set_cpu_count(THREADS)
        pa.set_io_thread_count(THREADS)
        self.deltalake = deltalake

    def _run(self, query: Query) -> tuple[int, float]:
        from benchmarks.engines import sql_to_arrow

        assert isinstance(query, TableQuery)

        def go() -> pa.Table:
            try:
                dataset = self.deltalake.DeltaTable(query.paths[0], version=query.version).to_pyarrow_dataset()
            except Exception as e:
                raise EngineUnavailable(f"{type(e).__name__}: {e}") from e
            expr = sql_to_arrow(query.where, dataset.schema)[0] if query.where else None
            return dataset.to_table(columns=list(query.columns) if query.columns else None, filter=expr)

        table, seconds = _timed(go)
        return table.num_rows, seconds


def load_iceberg(built: BuiltTable) -> Any:
    """The built Iceberg table, from its SQL catalog."""
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog("bench", **built.catalog).load_table(built.identifier)


def iceberg_filter(where: str) -> Any:
    """A pyiceberg expression for the SQL predicates of the cases: comparisons, AND, BETWEEN,
    string / number / DATE literals."""
    import sqlglot
    from pyiceberg import expressions as ie
    from sqlglot import exp

    def lit(node: Any) -> Any:
        if isinstance(node, exp.Literal):
            if node.is_string:
                return node.this
            text = node.this
            return int(text) if text.lstrip("-").isdigit() else decimal.Decimal(text)
        if isinstance(node, exp.Cast) and node.to.this == exp.DataType.Type.DATE:
            return dt.date.fromisoformat(lit(node.this)).isoformat()
        raise ValueError(f"unsupported literal: {node.sql()}")

    ops = {exp.EQ: ie.EqualTo, exp.GT: ie.GreaterThan, exp.GTE: ie.GreaterThanOrEqual,
           exp.LT: ie.LessThan, exp.LTE: ie.LessThanOrEqual, exp.NEQ: ie.NotEqualTo}

    def conv(node: Any) -> Any:
        if isinstance(node, exp.Paren):
            return conv(node.this)
        if isinstance(node, exp.And):
            return ie.And(conv(node.left), conv(node.right))
        if isinstance(node, exp.Between):
            name = node.this.name
            return ie.And(ie.GreaterThanOrEqual(term=name, value=lit(node.args["low"])),
                          ie.LessThanOrEqual(term=name, value=lit(node.args["high"])))
        for cls, op in ops.items():
            if isinstance(node, cls) and isinstance(node.left, exp.Column):
                return op(term=node.left.name, value=lit(node.right))
        raise ValueError(f"unsupported predicate: {node.sql()}")

    return conv(sqlglot.parse_one(where))


class PyIcebergEngine(Engine):
    """pyiceberg's ``scan(row_filter, selected_fields, snapshot_id).to_arrow()`` on the table
    loaded once from its catalog."""

    name = "pyiceberg"
    label = "pyiceberg to_arrow"

    def __init__(self, built: BuiltTable) -> None:
        super().__init__()
        self.built = built

    def setup(self) -> None:
        pa.set_cpu_count(THREADS)
        pa.set_io_thread_count(THREADS)
        self.table = load_iceberg(self.built)

    def _run(self, query: Query) -> tuple[int, float]:
        assert isinstance(query, TableQuery)
        row_filter = iceberg_filter(query.where) if query.where else None
        fields = tuple(query.columns) if query.columns else ("*",)

        def go() -> pa.Table:
            kwargs: dict[str, Any] = {"selected_fields": fields, "snapshot_id": query.version}
            if row_filter is not None:
                kwargs["row_filter"] = row_filter
            return self.table.scan(**kwargs).to_arrow()

        table, seconds = _timed(go)
        return table.num_rows, seconds


class SparkTableEngine(SparkEngine):
    """Spark ``local[2]`` on the seed pair: ``parquet`` = ``spark.read.parquet`` over the
    version's data files (no deletes applied; the seed pair's rows are not deleted);
    ``lazyscan-table`` = ``lazyscan.spark.read(spark, root, ..., force="lazyscan")``;
    ``lazyscan-files`` = the same over the data files (``rawFiles``). A new DataFrame each run."""

    def __init__(self, kind: str) -> None:
        super().__init__("parquet" if kind == "parquet" else "lazyscan")
        self.kind = kind
        self.name = f"spark-{kind}"
        self.label = {"parquet": "Spark parquet (files)", "lazyscan-table": "Spark lazyscan table",
                      "lazyscan-files": "Spark lazyscan (files)"}[kind]

    def frame(self, query: Query) -> Any:
        assert isinstance(query, TableQuery)
        columns = list(query.columns) if query.columns else None
        if self.kind == "parquet":
            df = self.spark.read.parquet(*query.files)
            if query.where:
                df = df.where(query.where)
            return df.select(*columns) if columns else df
        if self._helper is None:
            raise EngineUnavailable("lazyscan.spark.read is missing")
        if self.kind == "lazyscan-table":
            extra = {} if query.version is None else {"version": str(query.version)}
            return self._helper(self.spark, query.paths[0], columns, query.where, force="lazyscan", **extra)
        return self._helper(self.spark, list(query.files), columns, query.where, force="lazyscan", rawFiles="true")


# --------------------------------------------------------------------------- planning


def build_planning_tables(root: Path, files: int = PLAN_FILES) -> dict[str, str]:
    """A Delta and an Iceberg table of ``files`` one-row-group data files (a partition column
    with ``files`` values, ten rows each), each written in one commit / snapshot."""
    import deltalake
    marker = root / f"planning-{files}.json"
    if marker.exists():
        return dict(json.loads(marker.read_text()))
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    n = files * 10
    t = pa.table({
        "part": pa.array(np.arange(n) // 10, pa.int64()),
        "id": pa.array(np.arange(n), pa.int64()),
        "x": pa.array(np.random.default_rng(SEED).random(n)),
        "s": pa.array([f"row {i}" for i in range(n)]),
    })
    delta = root / "delta"
    deltalake.write_deltalake(str(delta), t, partition_by=["part"])
    catalog, props = iceberg_catalog(root / "iceberg")
    catalog.create_namespace("plan")
    table = catalog.create_table("plan.files", schema=t.schema)
    with table.update_spec() as spec:
        spec.add_identity("part")
    table = catalog.load_table("plan.files")
    table.append(t)
    out = {"delta": str(delta), "iceberg": table.metadata.location.removeprefix("file://"),
           "catalog": json.dumps(props), "identifier": "plan.files"}
    marker.write_text(json.dumps(out) + "\n")
    return out


def planning_times(tables: dict[str, str], reps: int, spark: Any = None) -> dict[str, Any]:
    """Seconds to plan each 1,000-file table, best / median / max of ``reps`` after a warm-up:
    lazyscan's planners (what ``lazyscan.spark.read`` does on the driver), ``lazyscan.scan``
    constructed (planning included, nothing read), deltalake's file list, pyiceberg's
    ``plan_files``, and (with ``spark``) ``lazyscan.spark.read`` building its DataFrame."""
    import deltalake
    from pyiceberg.catalog.sql import SqlCatalog

    import lazyscan
    from lazyscan.tables.delta import plan_delta
    from lazyscan.tables.iceberg import plan_iceberg

    iceberg = SqlCatalog("bench", **json.loads(tables["catalog"])).load_table(tables["identifier"])
    cases: dict[str, Any] = {
        "lazyscan plan_delta": lambda: len(plan_delta(tables["delta"]).files),
        "lazyscan.scan(delta)": lambda: lazyscan.scan(tables["delta"], where="id >= 0").table is not None,
        "deltalake file_uris": lambda: len(deltalake.DeltaTable(tables["delta"]).file_uris()),
        "lazyscan plan_iceberg": lambda: len(plan_iceberg(tables["iceberg"]).files),
        "lazyscan.scan(iceberg)": lambda: lazyscan.scan(tables["iceberg"], where="id >= 0").table is not None,
        "pyiceberg plan_files": lambda: len(list(iceberg.scan().plan_files())),
    }
    if spark is not None:
        from lazyscan.spark import read

        cases["Spark lazyscan.spark.read(delta)"] = lambda: read(spark, tables["delta"], where="id >= 0",
                                                                 force="lazyscan")
        cases["Spark lazyscan.spark.read(iceberg)"] = lambda: read(spark, tables["iceberg"], where="id >= 0",
                                                                   force="lazyscan")
    out: dict[str, Any] = {}
    for name, fn in cases.items():
        try:
            fn()
            times = [_timed(fn)[1] for _ in range(max(1, reps))]
        except Exception as e:
            out[name] = {"status": f"error: {type(e).__name__}: {str(e).splitlines()[0][:200]}"}
            continue
        out[name] = {"status": "ok", "min_s": min(times), "median_s": statistics.median(times),
                     "max_s": max(times), "runs": len(times)}
    return out


# --------------------------------------------------------------------------- derived numbers


IN_PROCESS_PEERS = ("polars-delta", "polars-iceberg", "deltalake-sql", "deltalake-pyarrow", "pyiceberg")
"""The table readers lazyscan's table read is compared with."""


def _spread(times: Sequence[float]) -> dict[str, float]:
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times)}


def case_ratios(results: Sequence[QueryResult]) -> dict[str, dict[str, Any]]:
    """Per case: lazyscan table / the fastest in-process peer (median, and its range over the
    runs: min / max .. max / min), and which peer that is."""
    out: dict[str, dict[str, Any]] = {}
    for r in results:
        by = {m.engine: m for m in r.measurements if m.ok and m.times}
        ours = by.get("lazyscan")
        peers = {k: m for k, m in by.items() if k in IN_PROCESS_PEERS}
        if ours is None or not peers:
            continue
        fastest = min(peers.values(), key=lambda m: m.seconds or float("inf"))
        a, b = _spread(ours.times), _spread(fastest.times)
        out[r.query.name] = {
            "fastest_peer": fastest.label,
            "median": a["median_s"] / b["median_s"],
            "low": a["min_s"] / b["max_s"],
            "high": a["max_s"] / b["min_s"],
        }
    return out


def penalties(results: Sequence[QueryResult]) -> dict[str, dict[str, Any]]:
    """Per table and engine: the select-* penalty Q-A / Q-B (median ratio and range)."""
    by_name = {r.query.name: r for r in results}
    out: dict[str, dict[str, Any]] = {}
    for label in ("Delta", "Iceberg"):
        qa, qb = by_name.get(f"{label} Q-A"), by_name.get(f"{label} Q-B")
        if qa is None or qb is None:
            continue
        bs = {m.engine: m for m in qb.measurements if m.ok and m.times}
        entry: dict[str, Any] = {}
        for m in qa.measurements:
            b = bs.get(m.engine)
            if not m.ok or not m.times or b is None:
                continue
            a_s, b_s = _spread(m.times), _spread(b.times)
            entry[m.engine] = {
                "label": m.label, "qa": a_s["median_s"], "qb": b_s["median_s"],
                "median": a_s["median_s"] / b_s["median_s"],
                "low": a_s["min_s"] / b_s["max_s"], "high": a_s["max_s"] / b_s["min_s"],
            }
        if "lazyscan" in entry and "lazyscan-files" in entry:
            entry["table_minus_files"] = entry["lazyscan"]["median"] - entry["lazyscan-files"]["median"]
        out[label] = entry
    return out


def spark_factors(results: Sequence[QueryResult]) -> dict[str, dict[str, float]]:
    """Per Spark case: Spark's reader over the files / lazyscan on the table, and / lazyscan on
    the same files (above 1: lazyscan faster)."""
    out: dict[str, dict[str, float]] = {}
    for r in results:
        by = {m.engine: m for m in r.measurements if m.ok and m.seconds}
        base = by.get("spark-parquet")
        if base is None or base.seconds is None:
            continue
        entry = {}
        for name in ("spark-lazyscan-table", "spark-lazyscan-files"):
            m = by.get(name)
            if m is not None and m.seconds:
                entry[name] = base.seconds / m.seconds
        out[r.query.name] = entry
    return out


# --------------------------------------------------------------------------- scenario


def table_engines(built: BuiltTable) -> list[Engine]:
    """The in-process engines of one table, lazyscan first."""
    engines: list[Engine] = [LazyscanTableEngine(built.fmt), PolarsTableEngine(built.fmt, built)]
    if built.fmt == "delta":
        engines += [DeltaQueryBuilderEngine(), DeltaDatasetEngine()]
    else:
        engines.append(PyIcebergEngine(built))
    return engines


def scenario(ctx: Any) -> Any:
    """The ``tables`` scenario of ``python -m benchmarks run tables`` (not part of ``all``)."""
    import dataclasses

    from benchmarks.engines import get_spark
    from benchmarks.scenarios import ScenarioResult

    sf = ctx.seed_sf
    res = ScenarioResult(
        name="tables",
        title=f"Tables: TPC-H SF{sf:g} lineitem as a Delta and an Iceberg table",
        description=(
            "Partitioned by month of `l_shipdate`; 1 % of the rows deleted (Delta: deletion vectors, "
            "Iceberg: position deletes; none of them matches V); the older version is the table before "
            "the deletes. In-process engines interleaved run by run, Q-A and Q-B in turns; lazyscan "
            "plain files = the version's data files read as Parquet (`raw_files=True`). Ratios: "
            "median ratio (range over the runs: min/max .. max/min)."
        ),
        params={"sf": sf, "reps": ctx.reps, "delete_fraction": DELETE_FRACTION},
        chart={"kind": "none"},
    )
    dataset = ensure_tpch(sf, data_dir=ctx.data_dir, progress=ctx.progress)
    value = pick_query_value(dataset, target=_value_target(sf))
    built = ensure_tables(sf, data_dir=ctx.data_dir, progress=ctx.progress)
    res.params.update(value=value.value, value_rows=value.rows)
    res.datasets = {k: _table_facts(b) for k, b in built.items()}
    budget = max(ctx.budget_s, 60.0)
    results: list[QueryResult] = []
    spark_queries: list[TableQuery] = []
    for fmt in ("delta", "iceberg"):
        b = built[fmt]
        queries = table_queries(b, dataset.lineitem, value)
        engines = table_engines(b)
        results += run_queries([*engines, LazyscanFilesEngine()], queries[:2], ctx.reps, progress=ctx.progress,
                               title=f"tables {fmt} seed pair", budget_s=budget, in_turns=True)
        results += run_queries(engines, queries[2:], ctx.reps, progress=ctx.progress,
                               title=f"tables {fmt}", budget_s=budget)
        spark_queries += [dataclasses.replace(q, name=f"Spark {q.name}", group="Spark local[2]") for q in queries[:2]]
    spark = None
    if any(e.name.startswith("spark") for e in ctx.engines):
        spark_engines = [SparkTableEngine(k) for k in ("parquet", "lazyscan-table", "lazyscan-files")]
        results += run_queries(spark_engines, spark_queries, ctx.reps, progress=ctx.progress,
                               title="tables Spark", budget_s=budget)
        try:
            spark = get_spark()
        except Exception:
            spark = None
    res.queries = results
    res.derived["rows_agree"] = all(q.agree for q in results)
    res.derived["case_ratios"] = case_ratios(results)
    res.derived["penalties"] = penalties(results)
    res.derived["spark_factors"] = spark_factors(results)
    planning = build_planning_tables(tables_root(sf, ctx.data_dir).parent / "planning")
    res.derived["planning"] = planning_times(planning, reps=max(5, ctx.reps), spark=spark)
    return res


def _table_facts(b: BuiltTable) -> dict[str, Any]:
    sizes = [os.path.getsize(f) for f in b.current.files]
    return {
        "format": b.fmt, "root": b.root, "version": b.current.version, "older_version": b.older.version,
        "files": len(b.current.files), "bytes": sum(sizes), "rows": b.current.rows, "rows_older": b.older.rows,
        "deleted_rows": b.deleted_rows, "build_seconds": round(b.build_seconds, 1), "notes": b.notes,
    }


# --------------------------------------------------------------------------- report


def _range(r: dict[str, Any]) -> str:
    return f"{r['median']:.2f} ({r['low']:.2f}–{r['high']:.2f})"


def tables_markdown(scenario: dict[str, Any]) -> str:
    """The scenario's own tables: data, per case each engine's median (min–max), lazyscan /
    the fastest peer, the penalties, the Spark factors and the planning times."""
    from benchmarks.report import fmt_bytes, fmt_seconds

    derived = scenario.get("derived", {})
    lines = ["### Tables built", ""]
    lines += ["| table | version (older) | data files | size | rows | deleted rows | built in |",
              "|---|---|---:|---:|---:|---:|---:|"]
    for facts in scenario.get("datasets", {}).values():
        lines.append(
            f"| {facts['format']} | {facts['version']} ({facts['older_version']}) | {facts['files']:,} "
            f"| {fmt_bytes(facts['bytes'])} | {facts['rows']:,} | {facts['deleted_rows']:,} "
            f"| {facts['build_seconds']:.0f} s |"
        )
    notes = [n for f in scenario.get("datasets", {}).values() for n in f.get("notes", [])]
    lines += ["", *[f"- {n}" for n in notes], ""]
    lines += ["### Seconds per case: median (min–max) of the timed runs", ""]
    for q in scenario.get("queries", []):
        cells = [
            f"{m['label']} {fmt_seconds(m['seconds'])} ({fmt_seconds(min(m['times']))}–{fmt_seconds(max(m['times']))})"
            + (" ⚠" if m.get("mismatch") else "")
            if m["status"] == "ok" and m["times"] else f"{m['label']} {m['status'][:120]}"
            for m in q["measurements"]
        ]
        rows = q["query"].get("expected_rows")
        lines.append(f"- **{q['query']['name']}** ({rows:,} rows): " + " · ".join(cells))
    ratios = derived.get("case_ratios", {})
    if ratios:
        lines += ["", "### lazyscan table / fastest in-process peer (below 1: lazyscan faster)", "",
                  "| case | fastest peer | ratio (range) |", "|---|---|---:|"]
        lines += [f"| {name} | {r['fastest_peer']} | {_range(r)} |" for name, r in ratios.items()]
    pens = derived.get("penalties", {})
    if pens:
        lines += ["", "### Select-* penalty Q-A / Q-B", "",
                  "| table | engine | Q-A s | Q-B s | penalty (range) |", "|---|---|---:|---:|---:|"]
        for table, by in pens.items():
            for p in by.values():
                if isinstance(p, dict):
                    lines.append(f"| {table} | {p['label']} | {fmt_seconds(p['qa'])} | {fmt_seconds(p['qb'])} "
                                 f"| {_range(p)} |")
        for table, by in pens.items():
            if "table_minus_files" in by:
                lines.append(f"\n{table}: lazyscan's penalty on the table minus on the plain files: "
                             f"{by['table_minus_files']:+.2f} (target: within 0.05).")
    factors = derived.get("spark_factors", {})
    if factors:
        lines += ["", "### Spark local[2]: Spark parquet over the files / lazyscan (above 1: lazyscan faster)", "",
                  "| case | / lazyscan table | / lazyscan plain files |", "|---|---:|---:|"]
        for name, f in factors.items():
            a, b = f.get("spark-lazyscan-table"), f.get("spark-lazyscan-files")
            lines.append(f"| {name} | {'n/a' if a is None else f'{a:.2f}x'} | {'n/a' if b is None else f'{b:.2f}x'} |")
    planning = derived.get("planning", {})
    if planning:
        lines += ["", f"### Planning a table of {PLAN_FILES:,} data files (seconds)", "",
                  "| planner | median | min | max |", "|---|---:|---:|---:|"]
        for name, p in planning.items():
            if p.get("status") == "ok":
                lines.append(f"| {name} | {fmt_seconds(p['median_s'])} | {fmt_seconds(p['min_s'])} "
                             f"| {fmt_seconds(p['max_s'])} |")
            else:
                lines.append(f"| {name} | {p.get('status')} | | |")
    return "\n".join(lines) + "\n"


def write_reports(doc: dict[str, Any], reports_dir: Path | None, sf: float) -> dict[str, Path]:
    """``tables-sf{N}-<stamp>.json`` and ``.md`` (the suite's markdown of the run, then the
    scenario's own tables)."""
    from benchmarks.report import REPORTS_DIR, _stamp, render_markdown, write_json

    folder = reports_dir or REPORTS_DIR
    prefix = f"tables-{sf_label(sf)}"
    json_path = write_json(doc, folder, prefix)
    md_path = folder / f"{prefix}-{_stamp(doc)}.md"
    text = render_markdown(doc)
    scen = doc.get("scenarios", {}).get("tables")
    if scen is not None:
        text += "\n" + tables_markdown(scen)
    md_path.write_text(text)
    return {"json": json_path, "markdown": md_path}
