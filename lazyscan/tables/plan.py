"""What a planned table gives the scan, the same for every table format.

A plan (:class:`~lazyscan.tables.delta.TablePlan`, :class:`~lazyscan.tables.iceberg.IcebergPlan`)
satisfies :class:`PlannedTable`: the table's logical schema, the columns constant in every file
(partition columns), and per data file a :class:`FileRead` saying how the scan reads it: which
file column holds each logical column (:class:`LogicalColumn`: by field id, else by name),
constants for columns the file does not store, the deleted row positions, the equality deletes
and the file's statistics as the table's metadata states them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pyarrow as pa

#: Arrow field metadata keys holding a column's field id: Parquet readers' key, and the ORC
#: attribute Iceberg writers set
FIELD_ID_KEYS = (b"PARQUET:field_id", b"iceberg.id")


@dataclass(frozen=True)
class EqualityDelete:
    """Rows of one equality delete file that apply to a data file: a data row is deleted when its
    values of ``field_ids`` equal one row of ``keys`` (null equals null). ``keys`` has one column
    per field id, named as the snapshot's schema names the field."""

    path: str
    field_ids: tuple[int, ...]
    keys: pa.Table


@dataclass(frozen=True)
class ColumnSource:
    """Where a table column comes from in one data file: the file's column ``file_name``, or
    (``file_name`` None) the constant ``default`` (null unless a v3 initial default or an identity
    partition value applies)."""

    table_name: str
    field_id: int
    file_name: str | None
    default: Any = None


@dataclass(frozen=True)
class FileColumnStats:
    """A data file's statistics of one column, as the table's metadata states them (``None``:
    not stated), in the column's Python values (dates, datetimes, strings, decimals)."""

    min: Any = None
    max: Any = None
    null_count: int | None = None


@dataclass(frozen=True)
class LogicalColumn:
    """A top-level column of the table and how a data file stores it: by ``field_id`` where the
    plan reads by field id and the file has field ids, else under one of ``names``."""

    name: str
    field_id: int | None
    names: tuple[str, ...]


@dataclass(frozen=True, eq=False)
class FileRead:
    """One data file of a planned table, as the scan reads it.

    ``where``: the table and version, for messages; ``columns``: every logical column (shared by
    the plan's files); ``by_field_id``: match file columns by field id where the file has them;
    ``constants``: logical column -> value (typed as the table schema) for columns the file does
    not store or whose value is fixed for the file (partition values, initial defaults);
    ``deleted_rows``: sorted int64 positions in the file the table removed;
    ``equality_deletes``: key tables whose rows the table removed; ``stats``: by logical name."""

    where: str
    path: str
    size: int
    file_format: str | None
    num_records: int | None
    columns: tuple[LogicalColumn, ...]
    by_field_id: bool
    constants: Mapping[str, Any] = field(default_factory=dict)
    #: constants that apply only when the file lacks the column (Iceberg identity partition
    #: values, initial defaults): a file that stores the column is read
    defaults: Mapping[str, Any] = field(default_factory=dict)
    deleted_rows: np.ndarray | None = None
    equality_deletes: tuple[EqualityDelete, ...] = ()
    stats: Mapping[str, FileColumnStats] = field(default_factory=dict)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled small, as a plan travels to every Spark task: the deleted row positions as
        their gaps in the narrowest unsigned type (sorted positions of a few deleted rows per
        hundred take 2 bytes each instead of 8)."""
        state = dict(self.__dict__)
        state["deleted_rows"] = pack_positions(self.deleted_rows)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        state["deleted_rows"] = unpack_positions(state["deleted_rows"])
        self.__dict__.update(state)  # frozen: no __setattr__

    def sources(self, file_schema: pa.Schema, field_ids: Mapping[int, str]) -> dict[str, str]:
        """Logical column -> the column of the data file (``file_schema``, with ``field_ids``:
        field id -> file column) that holds it; a column the file lacks is left out."""
        ids = field_ids if self.by_field_id else {}
        present = set(file_schema.names)
        out = {}
        for c in self.columns:
            if c.name in self.constants:
                continue
            if ids:
                found = ids.get(c.field_id) if c.field_id is not None else None
            else:
                found = next((n for n in c.names if n in present), None)
            if found is not None:
                out[c.name] = found
        return out


def pack_positions(positions: np.ndarray | None) -> Any:
    """Sorted unique row positions as ``(first, gaps)`` with the gaps in the narrowest unsigned
    type that holds them; other arrays (and None) as they are."""
    if positions is None or len(positions) < 2:
        return positions
    gaps = np.diff(positions)
    if gaps.min() <= 0:
        return positions
    top = int(gaps.max())
    kind = next(t for t in (np.uint8, np.uint16, np.uint32, np.uint64) if top <= np.iinfo(t).max)
    return int(positions[0]), gaps.astype(kind)


def unpack_positions(packed: Any) -> np.ndarray | None:
    """The int64 positions :func:`pack_positions` packed."""
    if not isinstance(packed, tuple):
        return packed
    first, gaps = packed
    out = np.empty(len(gaps) + 1, np.int64)
    out[0] = first
    np.cumsum(gaps, dtype=np.int64, out=out[1:])
    out[1:] += first
    return out


def field_ids_of(schema: pa.Schema) -> dict[int, str]:
    """Top-level field id -> column name, from Parquet (``PARQUET:field_id``) or ORC
    (``iceberg.id``) field metadata."""
    out = {}
    for f in schema:
        meta = f.metadata or {}
        raw = next((meta[k] for k in FIELD_ID_KEYS if k in meta), None)
        if raw is not None:
            out[int(raw)] = f.name
    return out


@runtime_checkable
class PlannedTable(Protocol):
    """A table snapshot planned, whatever the format: what :func:`lazyscan.scan` reads."""

    @property
    def root(self) -> str:
        """The table's location."""
        ...

    @property
    def kind(self) -> str:
        """``delta`` or ``iceberg``."""
        ...

    @property
    def schema(self) -> pa.Schema:
        """The snapshot's schema under logical names."""
        ...

    @property
    def context(self) -> str:
        """The table and its version, as messages name them."""
        ...

    @property
    def constant_columns(self) -> tuple[str, ...]:
        """The columns every file holds as a constant known before it is opened (partition
        columns): the scan prunes whole files on them."""
        ...

    def file_reads(self) -> Sequence[FileRead]:
        """How the scan reads each data file, in the plan's order."""
        ...
