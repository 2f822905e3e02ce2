"""Planning Spark tasks the way Spark's file sources do, without reading any footer.

Spark (``FilePartition.maxSplitBytes`` and ``getFilePartitions``) cuts every file into byte
ranges of at most ``maxSplitBytes`` and packs the ranges, largest first, into tasks of about that
size, charging ``openCostInBytes`` per range::

    maxSplitBytes = min(maxPartitionBytes, max(openCostInBytes, bytesPerCore))
    bytesPerCore  = sum(size + openCostInBytes) / minPartitionNum

When neither the option ``maxPartitionBytes`` nor ``spark.sql.files.maxPartitionBytes`` is set,
lazyscan sizes tasks itself: Spark 4.1-4.3 spend about 85 ms per task of a Python data source
(measured with a source that returns one row per task, ``local[2]``), while a selective scan
reads only a small part of its byte range. So the task count is the smallest multiple of
``minPartitionNum`` (the cores) that keeps tasks at most ``DEFAULT_TASK_BYTES`` of file, and the
bytes are spread evenly over them: every wave of tasks keeps every core busy.

A range owns the row groups whose midpoint lies inside it (the scan decides that from the footer
when the task runs), so the driver needs only file names and sizes: planning is arithmetic and
scales to many thousands of files. Each range carries the version of its file the driver saw
(identity, and the footer's digest where the schema was read from it): a task whose file is no
longer that version fails with a ``FileChangedError`` instead of reading rows the plan never saw. Files whose partition values the pushed filter rules out are
dropped before planning (partition pruning). A data file of a Delta Lake or Iceberg table
carries its :class:`~lazyscan.tables.plan.FileRead` (columns, deletes) into each of its ranges.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lazyscan.scan.dataset import FileInfo, FileSplit
from lazyscan.spark.compat import InputPartition

#: the largest task (bytes of file) lazyscan plans when no maxPartitionBytes is set
DEFAULT_TASK_BYTES = 2 * 1024 * 1024 * 1024
DEFAULT_OPEN_COST_IN_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class SplitPolicy:
    """Spark's split settings: ``spark.sql.files.maxPartitionBytes`` (None: lazyscan sizes
    tasks, see the module docstring), ``openCostInBytes``, ``minPartitionNum`` (default: the
    default parallelism) and ``maxPartitionNum``."""

    max_partition_bytes: int | None = None
    open_cost_in_bytes: int = DEFAULT_OPEN_COST_IN_BYTES
    min_partition_num: int = 1
    max_partition_num: int | None = None

    def max_split_bytes(self, files: Sequence[FileInfo]) -> int:
        total = sum(f.size + self.open_cost_in_bytes for f in files)
        cores = max(1, self.min_partition_num)
        if self.max_partition_bytes is None:
            waves = -(-total // (cores * DEFAULT_TASK_BYTES))
            return max(1, self.open_cost_in_bytes, -(-total // (cores * max(1, waves))))
        per_core = total // cores
        return max(1, min(self.max_partition_bytes, max(self.open_cost_in_bytes, per_core)))


class ScanTask(InputPartition):
    """One Spark task: byte ranges of files, read one after another. ``planned``: the profile
    (as a dict) of what the driver ruled out before planning tasks (files pruned by partition
    values or a table's statistics), which one task reports with its own."""

    def __init__(self, index: int, splits: Sequence[FileSplit], planned: dict[str, Any] | None = None) -> None:
        super().__init__(index)
        self.index = index
        self.splits = tuple(splits)
        self.planned = planned

    @property
    def paths(self) -> list[str]:
        return list(dict.fromkeys(s.path for s in self.splits))

    def __repr__(self) -> str:
        return f"ScanTask({self.index}, {len(self.splits)} splits, {sum(s.length for s in self.splits)} bytes)"


def split_files(files: Sequence[FileInfo], max_split_bytes: int) -> list[FileSplit]:
    """Byte ranges of at most ``max_split_bytes`` covering every file (Parquet is splittable)."""
    out = []
    for f in files:
        if f.size == 0:
            out.append(FileSplit(f.path, 0, 0, 0, dict(f.partition_values), f.identity, f.footer_digest, f.table))
            continue
        start = 0
        while start < f.size:
            length = min(max_split_bytes, f.size - start)
            out.append(FileSplit(
                f.path, start, length, f.size, dict(f.partition_values), f.identity, f.footer_digest, f.table
            ))
            start += length
    return out


def _pack(splits: list[FileSplit], max_split_bytes: int, open_cost: int) -> list[list[FileSplit]]:
    groups: list[list[FileSplit]] = []
    current: list[FileSplit] = []
    size = 0
    for s in splits:
        if current and size + s.length > max_split_bytes:
            groups.append(current)
            current, size = [], 0
        size += s.length + open_cost
        current.append(s)
    if current:
        groups.append(current)
    return groups


def plan_tasks(files: Sequence[FileInfo], policy: SplitPolicy) -> list[ScanTask]:
    """Spark's file partitions for ``files``: splits packed largest first."""
    if not files:
        return []
    max_split = policy.max_split_bytes(files)
    splits = sorted(split_files(files, max_split), key=lambda s: s.length, reverse=True)
    groups = _pack(splits, max_split, policy.open_cost_in_bytes)
    if policy.max_partition_num and len(groups) > policy.max_partition_num:
        total = sum(s.length + policy.open_cost_in_bytes for s in splits)
        wider = max(max_split, -(-total // policy.max_partition_num))
        groups = _pack(splits, wider, policy.open_cost_in_bytes)
    return [ScanTask(i, g) for i, g in enumerate(groups)]
