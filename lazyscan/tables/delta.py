"""A Delta Lake table's snapshot as the data files to read (:func:`plan_delta`).

``deltalake`` (delta-rs) replays the log: the snapshot's files, their partition values and
statistics, the schema and the protocol. Deletion vectors are read here, from the descriptors in
the log, and decoded to the sorted row positions they delete (Delta protocol, "Deletion Vector
Format": Z85 ids, the ``deletion_vector_<uuid>.bin`` files, 64-bit RoaringBitmap arrays in the
portable serialization), so the scan can turn them into row exclusions without asking the log
again.
"""

from __future__ import annotations

import json
import os
import re
import struct
import uuid
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from lazyscan.errors import (
    CorruptFileError,
    MissingDependencyError,
    ObjectNotFoundError,
    OptionError,
    SourceError,
    UnsupportedFeatureError,
)
from lazyscan.tables.plan import FileColumnStats, FileRead, LogicalColumn

__all__ = [
    "ColumnMapping",
    "ColumnStats",
    "DataFile",
    "MissingDependencyError",
    "TablePlan",
    "decode_deletion_vector",
    "plan_delta",
    "z85_decode",
]

#: reader features whose tables this module plans correctly (with what the scan does with them:
#: column mapping renames, deletion vectors become row exclusions); any other is refused
SUPPORTED_READER_FEATURES = frozenset(
    {"columnMapping", "deletionVectors", "timestampNtz", "v2Checkpoint", "vacuumProtocolCheck"}
)

#: reader features that only announce a column type: a table whose schema holds no column of
#: the type reads as any other (deltalake 1.6.6 lists ``variantType`` on every table it writes
#: with deletion vectors enabled)
TYPE_READER_FEATURES = {"variantType": "variant", "variantType-preview": "variant"}

#: the first four bytes of a serialized deletion vector (little-endian), Delta protocol
DV_MAGIC = 1681511377
#: RoaringBitmap portable serialization cookies
_COOKIE_NO_RUNS = 12346
_COOKIE_RUNS = 12347
#: the largest array container; larger ones are bitmaps of 2**16 bits
_ARRAY_MAX = 4096

_Z85_ALPHABET = (
    b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
)
_Z85_VALUES = np.full(256, 255, np.uint8)
_Z85_VALUES[np.frombuffer(_Z85_ALPHABET, np.uint8)] = np.arange(85, dtype=np.uint8)

_COMMIT = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(?:\.\d+\.\d+|\.[0-9a-fA-F-]+)?\.(parquet|json)$")


@dataclass(frozen=True)
class ColumnMapping:
    """A top-level column's logical name, its name in the data files and, under column mapping
    by id, the Parquet field id that identifies it there."""

    name: str
    physical_name: str
    field_id: int | None = None


#: a data file's statistics of one column, as the log states them (``None``: not stated)
ColumnStats = FileColumnStats


@dataclass(frozen=True, eq=False)
class DataFile:
    """One data file of the snapshot.

    ``path``: absolute local path or URI; ``partition_values``: typed per the table schema
    (``None`` for a null partition); ``num_records``: the log's row count (``None`` when the
    writer left no statistics); ``stats``: by logical column name; ``deleted_rows``: the sorted
    positions (int64) its deletion vector removes, ``None`` without one."""

    path: str
    size: int
    partition_values: Mapping[str, Any] = field(default_factory=dict)
    num_records: int | None = None
    stats: Mapping[str, ColumnStats] = field(default_factory=dict)
    deleted_rows: np.ndarray | None = None
    deleted_count: int = 0

    @property
    def live_rows(self) -> int | None:
        """The rows the snapshot keeps of this file, when its row count is known."""
        return None if self.num_records is None else self.num_records - self.deleted_count


@dataclass(frozen=True, eq=False)
class TablePlan:
    """A table snapshot planned: what the scan reads and how.

    ``schema`` is the table's Arrow schema under logical names (its fields keep the log's
    column-mapping metadata); ``columns`` maps each top-level column to its physical name
    (``column_mapping`` is ``"none"``, ``"name"`` or ``"id"``); partition columns are not in the
    data files but in each file's ``partition_values``. Data files lacking a column of the schema
    (written before it was added) read it as nulls."""

    root: str
    kind: str
    version: int
    schema: pa.Schema
    partition_columns: tuple[str, ...]
    column_mapping: str
    columns: tuple[ColumnMapping, ...]
    files: tuple[DataFile, ...]

    @property
    def num_rows(self) -> int | None:
        """The snapshot's rows, when every file states its row count."""
        counts = [f.live_rows for f in self.files]
        return None if any(c is None for c in counts) else sum(c for c in counts if c is not None)

    def physical_names(self) -> dict[str, str]:
        """Logical column name -> the name in the data files."""
        return {c.name: c.physical_name for c in self.columns}

    @property
    def context(self) -> str:
        """``Delta table '…', version N``: the prefix of messages about this plan's files."""
        return f"Delta table {self.root!r}, version {self.version}"

    @property
    def constant_columns(self) -> tuple[str, ...]:
        """Partition columns: not in the data files, one value per file in the log."""
        return self.partition_columns

    def file_reads(self) -> list[FileRead]:
        """How the scan reads each data file (:class:`~lazyscan.tables.plan.FileRead`): under
        column mapping by id through the Parquet field ids, else by physical name."""
        by_id = self.column_mapping == "id"
        columns = tuple(
            LogicalColumn(c.name, c.field_id, (c.physical_name,)) for c in self.columns
        )
        where = self.context
        return [
            FileRead(
                where=where,
                path=f.path,
                size=f.size,
                file_format="parquet",
                num_records=f.num_records,
                columns=columns,
                by_field_id=by_id,
                constants={k: v for k, v in f.partition_values.items() if k in self.partition_columns},
                deleted_rows=f.deleted_rows,
                stats=f.stats,
            )
            for f in self.files
        ]


# --- Z85 and RoaringBitmap ---------------------------------------------------------------------


def z85_decode(text: str) -> bytes:
    """The bytes of a Z85 string (ZeroMQ RFC 32: 5 characters -> 4 bytes, big-endian).

    A last group that starts with ``#`` is a short tail: ``#`` cannot start a standard group (its
    value would pass 2**32), and ``k`` of them mean the other ``5 - k`` characters hold
    ``4 - k`` bytes. That is the padding of the Rust ``z85`` crate, which delta-kernel-rs
    decodes with (its ``cdf-table-with-dv`` test table has inline deletion vectors written so)."""
    raw = np.frombuffer(text.encode("ascii", "replace"), np.uint8)
    if raw.size % 5:
        raise ValueError(f"a Z85 string's length is a multiple of 5, not {raw.size}")
    digits = _Z85_VALUES[raw]
    if (digits == 255).any():
        raise ValueError("not a Z85 string")
    tail = b""
    padding = len(text[-5:]) - len(text[-5:].lstrip("#"))
    if raw.size and 0 < padding < 4:
        value = 0
        for d in digits[-5 + padding :].tolist():
            value = value * 85 + d
        if value >= 1 << (8 * (4 - padding)):
            raise ValueError("a short Z85 tail exceeds its bytes")
        tail = value.to_bytes(4 - padding, "big")
        digits = digits[:-5]
    groups = digits.reshape(-1, 5).astype(np.uint64)
    values = groups @ (np.uint64(85) ** np.arange(4, -1, -1, dtype=np.uint64))
    if (values > 0xFFFFFFFF).any():
        raise ValueError("a Z85 group exceeds 32 bits")
    return values.astype(">u4").tobytes() + tail


def _roaring32(buf: bytes, pos: int) -> tuple[np.ndarray, int]:
    """The values (uint32) of a 32-bit RoaringBitmap in the portable serialization at ``pos``,
    and the offset after it. Each container is decoded with numpy."""
    (cookie,) = struct.unpack_from("<I", buf, pos)
    if cookie & 0xFFFF == _COOKIE_RUNS:
        count = (cookie >> 16) + 1
        pos += 4
        run_flags = np.unpackbits(
            np.frombuffer(buf, np.uint8, (count + 7) // 8, pos), bitorder="little"
        )[:count]
        pos += (count + 7) // 8
    elif cookie == _COOKIE_NO_RUNS:
        (count,) = struct.unpack_from("<I", buf, pos + 4)
        pos += 8
        run_flags = np.zeros(count, np.uint8)
    else:
        raise ValueError(f"unknown RoaringBitmap cookie {cookie}")
    header = np.frombuffer(buf, "<u2", 2 * count, pos).astype(np.int64)
    keys, cards = header[0::2], header[1::2] + 1
    pos += 4 * count
    if cookie == _COOKIE_NO_RUNS or count >= 4:
        pos += 4 * count  # the offset header: containers are read in order
    parts = []
    for key, card, is_run in zip(keys.tolist(), cards.tolist(), run_flags.tolist(), strict=True):
        if is_run:
            (runs,) = struct.unpack_from("<H", buf, pos)
            pairs = np.frombuffer(buf, "<u2", 2 * runs, pos + 2).astype(np.int64).reshape(-1, 2)
            pos += 2 + 4 * runs
            lengths = pairs[:, 1] + 1
            firsts = np.cumsum(lengths) - lengths
            low = np.repeat(pairs[:, 0] - firsts, lengths) + np.arange(int(lengths.sum()))
        elif card > _ARRAY_MAX:
            bits = np.frombuffer(buf, np.uint8, 8192, pos)
            pos += 8192
            low = np.flatnonzero(np.unpackbits(bits, bitorder="little"))
        else:
            low = np.frombuffer(buf, "<u2", card, pos).astype(np.int64)
            pos += 2 * card
        if low.size != card:
            raise ValueError(f"a container holds {low.size} values, its header says {card}")
        parts.append(low + (key << 16))
    values = np.concatenate(parts) if parts else np.empty(0, np.int64)
    return values, pos


def decode_deletion_vector(data: bytes) -> np.ndarray:
    """The sorted row positions (int64) of a serialized deletion vector: the magic number, then a
    RoaringBitmap array in the portable serialization (an int64 count, then per bucket a uint32
    key, the high 32 bits, and a 32-bit bitmap). Raises ``ValueError`` on malformed bytes."""
    try:
        (magic,) = struct.unpack_from("<i", data, 0)
        if magic != DV_MAGIC:
            raise ValueError(f"bad magic number {magic} (expected {DV_MAGIC})")
        (buckets,) = struct.unpack_from("<q", data, 4)
        if buckets < 0 or buckets > len(data):
            raise ValueError(f"bad bucket count {buckets}")
        pos = 12
        parts = []
        for _ in range(buckets):
            (high,) = struct.unpack_from("<I", data, pos)
            low, pos = _roaring32(data, pos + 4)
            parts.append(low + (high << 32))
    except struct.error as exc:
        raise ValueError(f"truncated deletion vector: {exc}") from None
    rows = np.concatenate(parts) if parts else np.empty(0, np.int64)
    if rows.size > 1 and not (np.diff(rows) > 0).all():
        raise ValueError("positions are not strictly increasing")
    return rows


# --- files of the table --------------------------------------------------------------------------


class _Files:
    """The table's folder on a filesystem: reads of log and deletion-vector files."""

    def __init__(self, root: str, filesystem: pafs.FileSystem | None) -> None:
        if filesystem is not None:
            # the filesystem's paths: a URI's bucket and key, a local path as it is
            parsed = urlparse(root)
            self.fs = filesystem
            self.base = (
                f"{parsed.netloc}{parsed.path}"
                if parsed.scheme and parsed.scheme != "file"
                else parsed.path
            )
        elif urlparse(root).scheme in ("", "file") or os.path.isabs(root):
            self.fs = pafs.LocalFileSystem()
            self.base = urlparse(root).path if root.startswith("file:") else root
        else:
            self.fs, self.base = pafs.FileSystem.from_uri(root)
        self.base = self.base.rstrip("/")
        self._dv_files: dict[str, bytes] = {}
        self._dv_reads: dict[str, int] = {}

    def resolve(self, path_or_uri: str) -> str:
        """A path of this filesystem for an absolute URI or a path relative to the root."""
        parsed = urlparse(path_or_uri)
        if parsed.scheme == "file":
            return unquote(parsed.path)
        if parsed.scheme:
            return f"{parsed.netloc}{unquote(parsed.path)}"
        return f"{self.base}/{path_or_uri}"

    def read(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        with self.fs.open_input_file(path) as f:
            if length is None:
                return bytes(f.read())
            return bytes(f.read_at(length, offset))

    def read_dv(self, path: str, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset`` of a deletion-vector file; a file asked for a second
        time is read whole once (one file holds the vectors of many data files)."""
        data = self._dv_files.get(path)
        if data is None:
            self._dv_reads[path] = self._dv_reads.get(path, 0) + 1
            if self._dv_reads[path] == 1:
                return self.read(path, offset, length)
            data = self._dv_files[path] = self.read(path)
            if data[:1] != b"\x01":
                raise ValueError(f"unknown deletion vector file format version {data[:1]!r}")
        return data[offset : offset + length]

    def log_listing(self) -> list[str]:
        """The names in ``_delta_log/`` (not recursive: ``_delta_log/.tmp`` is no part of the log)."""
        infos = self.fs.get_file_info(pafs.FileSelector(f"{self.base}/_delta_log", recursive=False))
        return [i.base_name for i in infos if i.type == pafs.FileType.File]


def _deletion_vector_descriptors(
    files: _Files, version: int, wanted: set[str]
) -> dict[str, dict[str, Any]]:
    """Path (URL-decoded) -> the deletion-vector descriptor of its live ``add`` action at
    ``version``, for the ``wanted`` paths that have one. The newest ``add`` of a path is its
    live one: commits are read newest first down to the newest checkpoint, then the checkpoint.
    A wanted path found nowhere means this replay and deltalake's disagree: an error, not a file
    read without its deletion vector."""
    names = files.log_listing()
    commits = sorted(
        int(m.group(1)) for n in names if (m := _COMMIT.match(n)) and int(m.group(1)) <= version
    )
    checkpoints: dict[int, list[str]] = {}
    for n in names:
        if (m := _CHECKPOINT.match(n)) and int(m.group(1)) <= version:
            checkpoints.setdefault(int(m.group(1)), []).append(n)
    start = max(checkpoints, default=-1)
    found: dict[str, dict[str, Any]] = {}
    remaining = set(wanted)
    for v in reversed([c for c in commits if c > start]):
        if not remaining:
            break
        for action in _json_lines(files.read(f"{files.base}/_delta_log/{v:020d}.json")):
            add = action.get("add")
            if not add:
                continue
            path = unquote(add.get("path") or "")
            if path in remaining:
                remaining.discard(path)
                if add.get("deletionVector"):
                    found[path] = add["deletionVector"]
    if remaining and start >= 0:
        for add in _checkpoint_adds(files, checkpoints[start]):
            path = unquote(add.get("path") or "")
            if path in remaining:
                remaining.discard(path)
                if add.get("deletionVector"):
                    found[path] = add["deletionVector"]
    if remaining:
        missing = sorted(remaining)[0]
        raise CorruptFileError(
            f"Delta table {files.base!r} version {version}: no add action for {missing!r} in the log "
            f"read for deletion vectors ({len(remaining)} such files)",
            file=missing,
        )
    return found


def _json_lines(data: bytes) -> Iterator[dict[str, Any]]:
    for line in data.splitlines():
        if line.strip():
            yield json.loads(line)


def _checkpoint_adds(files: _Files, names: list[str]) -> Iterator[dict[str, Any]]:
    """The ``add`` actions (path and deletion vector) of a checkpoint: classic or multi-part
    Parquet, or a v2 checkpoint (JSON or Parquet) with its sidecar files."""
    log = f"{files.base}/_delta_log"
    sidecars: list[str] = []
    for name in sorted(names):
        if name.endswith(".json"):
            for action in _json_lines(files.read(f"{log}/{name}")):
                if action.get("add"):
                    yield action["add"]
                elif action.get("sidecar"):
                    sidecars.append(action["sidecar"]["path"])
        else:
            table = _parquet_actions(files, f"{log}/{name}")
            if "sidecar" in table.column_names:
                sidecars += [s["path"] for s in table.column("sidecar").to_pylist() if s]
            yield from _adds_of(table)
    for sidecar in sidecars:
        path = files.resolve(sidecar) if urlparse(sidecar).scheme else f"{log}/_sidecars/{sidecar}"
        yield from _adds_of(_parquet_actions(files, path))


def _parquet_actions(files: _Files, path: str) -> pa.Table:
    schema = pq.read_schema(path, filesystem=files.fs)
    columns = [c for c in ("add", "sidecar") if c in schema.names]
    return pq.read_table(path, columns=columns, filesystem=files.fs)


def _adds_of(table: pa.Table) -> Iterator[dict[str, Any]]:
    if "add" not in table.column_names:
        return
    adds = table.column("add")
    if not pa.types.is_struct(adds.type) or adds.type.get_field_index("deletionVector") < 0:
        return
    paths = pc.struct_field(adds, "path").to_pylist()
    dvs = pc.struct_field(adds, "deletionVector").to_pylist()
    for path, dv in zip(paths, dvs, strict=True):
        if path is not None:
            yield {"path": path, "deletionVector": dv}


def _read_deletion_vector(
    files: _Files,
    descriptor: Mapping[str, Any],
    *,
    table: str,
    version: int,
    data_file: str,
    num_records: int | None,
) -> np.ndarray:
    """The sorted row positions a deletion-vector descriptor deletes, checked against its
    cardinality, its CRC and the data file's row count."""
    kind = descriptor.get("storageType")
    where = f"table {table!r} version {version}, data file {data_file!r}"
    stored = str(descriptor.get("pathOrInlineDv", ""))
    size = int(descriptor.get("sizeInBytes", 0))
    dv_file = data_file
    try:
        if kind == "i":
            data = z85_decode(stored)[:size]
        elif kind in ("u", "p"):
            if kind == "u":
                prefix, encoded = stored[:-20], stored[-20:]
                name = f"deletion_vector_{uuid.UUID(bytes=z85_decode(encoded))}.bin"
                dv_file = f"{files.base}/{prefix}/{name}" if prefix else f"{files.base}/{name}"
            else:
                dv_file = files.resolve(stored)
            offset = int(descriptor.get("offset") or 0)
            framed = files.read_dv(dv_file, offset, size + 8)
            if len(framed) < size + 8:
                raise ValueError(f"the file ends {size + 8 - len(framed)} bytes early")
            (stated,) = struct.unpack_from(">i", framed, 0)
            if stated != size:
                raise ValueError(f"the stored size is {stated}, the log says {size}")
            data = framed[4 : 4 + size]
            (crc,) = struct.unpack_from(">I", framed, 4 + size)
            if zlib.crc32(data) != crc:
                raise ValueError("CRC-32 mismatch")
        else:
            raise UnsupportedFeatureError(
                f"deletion vector storage type {kind!r} in {where}", file=data_file
            )
        rows = decode_deletion_vector(data)
    except (ValueError, OSError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise ObjectNotFoundError(
                f"missing deletion vector file {dv_file!r} of {where}"
            ) from None
        raise CorruptFileError(f"bad deletion vector of {where}: {exc}", file=dv_file) from None
    cardinality = descriptor.get("cardinality")
    if cardinality is not None and int(cardinality) != rows.size:
        raise CorruptFileError(
            f"deletion vector of {where} holds {rows.size} positions, the log says {cardinality}",
            file=dv_file,
        )
    if num_records is not None and rows.size and rows[-1] >= num_records:
        raise CorruptFileError(
            f"deletion vector of {where} deletes row {int(rows[-1])}, past the file's {num_records} rows",
            file=dv_file,
        )
    return rows


# --- planning ------------------------------------------------------------------------------------


def _deltalake() -> Any:
    try:
        import deltalake
    except ImportError:
        raise MissingDependencyError(
            "reading Delta Lake tables needs the deltalake package: pip install 'lazyscan[tables]'"
        ) from None
    return deltalake


def _schema_types(node: Any) -> set[str]:
    """Every type name a Delta schema (its JSON form) uses, at any depth."""
    found: set[str] = set()
    if isinstance(node, dict):
        kind = node.get("type")
        if isinstance(kind, str):
            found.add(kind)
        for value in node.values():
            if isinstance(value, (dict, list)):
                found |= _schema_types(value)
    elif isinstance(node, list):
        for value in node:
            found |= _schema_types(value)
    return found


def _check_protocol(dt: Any, root: str, version: int) -> None:
    protocol = dt.protocol()
    where = f"Delta table {root!r} version {version}"
    if protocol.min_reader_version > 3:
        raise UnsupportedFeatureError(
            f"{where} needs reader version {protocol.min_reader_version} (lazyscan reads up to 3)",
            file=root,
        )
    unsupported = sorted(set(protocol.reader_features or ()) - SUPPORTED_READER_FEATURES)
    if any(f in TYPE_READER_FEATURES for f in unsupported):
        used = _schema_types(json.loads(dt.schema().to_json()))
        unsupported = [f for f in unsupported if TYPE_READER_FEATURES.get(f) in used or f not in TYPE_READER_FEATURES]
    if unsupported:
        raise UnsupportedFeatureError(
            f"{where} uses reader feature(s) lazyscan does not read: {', '.join(unsupported)}",
            file=root,
        )


def _load(
    path: str,
    version: int | None,
    timestamp: datetime | str | None,
    storage_options: Mapping[str, str] | None,
) -> Any:
    deltalake = _deltalake()
    from deltalake.exceptions import DeltaError, DeltaProtocolError, TableNotFoundError

    if version is not None and timestamp is not None:
        raise OptionError("give version= or timestamp=, not both")
    try:
        dt = deltalake.DeltaTable(
            path, storage_options=dict(storage_options) if storage_options else None
        )
        latest = int(dt.version())
        if version is not None:
            if not 0 <= version <= latest:
                raise OptionError(f"Delta table {path!r} has versions 0 to {latest}, not {version}")
            dt.load_as_version(version)
        elif timestamp is not None:
            options = dict(storage_options) if storage_options else None
            latest_table = deltalake.DeltaTable(path, storage_options=options)
            dt.load_as_version(timestamp)
            _check_not_before_first(dt, latest_table, path, timestamp)
    except TableNotFoundError as exc:
        raise ObjectNotFoundError(
            f"no Delta table at {path!r} (no readable _delta_log): {exc}"
        ) from None
    except DeltaProtocolError as exc:
        raise UnsupportedFeatureError(
            f"Delta table {path!r}: {_without_backtrace(str(exc))}", file=path
        ) from None
    except DeltaError as exc:
        message = _without_backtrace(str(exc))
        if "nsupported" in message or "not yet supported" in message:
            raise UnsupportedFeatureError(f"Delta table {path!r}: {message}", file=path) from None
        at = (
            f" version {version}"
            if version is not None
            else f" at {timestamp}"
            if timestamp is not None
            else ""
        )
        raise CorruptFileError(
            f"Delta table {path!r}{at} cannot be loaded: {message}", file=path
        ) from None
    except OSError as exc:
        # the store refused or could not be reached (credentials, endpoint): deltalake's own
        # access, configured by storage_options
        raise SourceError(
            f"Delta table {path!r}: its log cannot be read ({_without_backtrace(str(exc))}); "
            "deltalake reaches the store with storage_options= (credentials, endpoint, region)"
        ) from None
    return dt


def _without_backtrace(message: str) -> str:
    """A delta-rs error message without the Rust backtrace it may carry."""
    return re.split(r"\n\s+0: ", message, maxsplit=1)[0].strip()


def _check_not_before_first(dt: Any, latest: Any, path: str, timestamp: datetime | str) -> None:
    """Refuse a timestamp before the first version's commit: deltalake then loads the first
    version, where Delta's time travel is an error (no version existed at that time).

    deltalake picks the version by its commit file's modification time (the protocol's commit
    timestamp), so a later version it loaded was committed by then. For the first version the
    time is its commit file's (a local table) or its commit information's, whichever is earlier:
    a writer stamps the commit information up to a few ms after the file. The times come from the
    latest snapshot's history (deltalake 1.6.6 numbers the history of a time-travelled table from
    the loaded version down, so it is not asked)."""
    wanted = datetime.fromisoformat(timestamp) if isinstance(timestamp, str) else timestamp
    if wanted.tzinfo is None:
        return
    loaded = int(dt.version())
    history = latest.history()
    versions = [int(h["version"]) for h in history if h.get("version") is not None]
    if versions and loaded != min(versions):
        return
    stamps = [int(h["timestamp"]) for h in history if h.get("version") == loaded and h.get("timestamp") is not None]
    commit_file = os.path.join(path, "_delta_log", f"{loaded:020d}.json")
    if "://" not in path and os.path.isfile(commit_file):
        stamps.append(os.stat(commit_file).st_mtime_ns // 1_000_000)
    if stamps and wanted.timestamp() * 1000 < min(stamps):
        raise OptionError(
            f"Delta table {path!r} has no version at {wanted.isoformat()}: its first commit is later"
        )


def _column_mappings(schema: pa.Schema, mode: str) -> tuple[ColumnMapping, ...]:
    mappings = []
    for f in schema:
        meta = {k.decode(): v.decode() for k, v in (f.metadata or {}).items()}
        physical = (
            meta.get("delta.columnMapping.physicalName", f.name) if mode != "none" else f.name
        )
        field_id = (
            int(meta["delta.columnMapping.id"])
            if mode == "id" and "delta.columnMapping.id" in meta
            else None
        )
        mappings.append(ColumnMapping(f.name, physical, field_id))
    return tuple(mappings)


def _file_stats(row: Mapping[str, Any], logical: Mapping[str, str]) -> dict[str, ColumnStats]:
    mins, maxes, nulls = (row.get(k) or {} for k in ("min", "max", "null_count"))
    stats = {}
    for physical in set(mins) | set(maxes) | set(nulls):
        lo, hi, n = mins.get(physical), maxes.get(physical), nulls.get(physical)
        if isinstance(lo, dict) or isinstance(hi, dict) or isinstance(n, dict):
            continue  # nested columns: their leaves' statistics are not kept yet
        stats[logical.get(physical, physical)] = ColumnStats(lo, hi, n)
    return stats


def _data_file_path(root: str, log_path: str) -> str:
    """A log path (URL-encoded, relative to the root or an absolute URI) as a path or URI."""
    if urlparse(log_path).scheme:
        return log_path
    return f"{root.rstrip('/')}/{unquote(log_path)}"


def plan_delta(
    path: str,
    version: int | None = None,
    timestamp: datetime | str | None = None,
    storage_options: Mapping[str, str] | None = None,
    filesystem: pafs.FileSystem | None = None,
) -> TablePlan:
    """Plan the Delta table at ``path`` (a local folder or a URI): its current snapshot, or the
    one of ``version`` or of ``timestamp`` (a datetime or an RFC 3339 string). ``storage_options``
    go to ``deltalake``; ``filesystem`` (pyarrow) reads the deletion vectors, else one is derived
    from the path. Raises :class:`UnsupportedFeatureError` for a reader feature lazyscan does not
    read, :class:`CorruptFileError` for a bad deletion vector."""
    root = path if urlparse(path).scheme else os.path.abspath(path)
    dt = _load(root, version, timestamp, storage_options)
    read_version = int(dt.version())
    _check_protocol(dt, root, read_version)
    metadata = dt.metadata()
    mode = str(metadata.configuration.get("delta.columnMapping.mode", "none"))
    if mode not in ("none", "name", "id"):
        raise UnsupportedFeatureError(
            f"Delta table {root!r} version {read_version}: column mapping mode {mode!r}", file=root
        )
    schema = pa.schema(dt.schema().to_arrow())
    columns = _column_mappings(schema, mode)
    logical = {c.physical_name: c.name for c in columns}
    rows = pa.table(dt.get_add_actions(flatten=False)).to_pylist()

    descriptors: dict[str, dict[str, Any]] = {}
    table_files = None
    if "deletionVectors" in set(dt.protocol().reader_features or ()):
        table_files = _Files(root, filesystem)
        descriptors = _deletion_vector_descriptors(
            table_files, read_version, {unquote(r["path"]) for r in rows}
        )

    planned = []
    for row in rows:
        full = _data_file_path(root, row["path"])
        partition = {logical.get(k, k): v for k, v in (row.get("partition") or {}).items()}
        num_records = row.get("num_records")
        deleted = None
        descriptor = descriptors.get(unquote(row["path"]))
        if descriptor is not None and table_files is not None:
            deleted = _read_deletion_vector(
                table_files,
                descriptor,
                table=root,
                version=read_version,
                data_file=full,
                num_records=num_records,
            )
        planned.append(
            DataFile(
                path=full,
                size=int(row["size_bytes"]),
                partition_values=partition,
                num_records=None if num_records is None else int(num_records),
                stats=_file_stats(row, logical),
                deleted_rows=deleted,
                deleted_count=0 if deleted is None else int(deleted.size),
            )
        )
    return TablePlan(
        root=root,
        kind="delta",
        version=read_version,
        schema=schema,
        partition_columns=tuple(metadata.partition_columns),
        column_mapping=mode,
        columns=columns,
        files=tuple(planned),
    )
