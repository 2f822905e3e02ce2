"""Getting the scan profile of Spark tasks back to the user.

Each task of a ``lazyscan`` read merges the :class:`~lazyscan.scan.Profile` of its splits and
reports it through up to two channels:

- **an accumulator** (classic PySpark): :func:`lazyscan.spark.register` creates one Spark
  accumulator per session and ships it with the data source class. Python data source tasks
  send accumulator updates back with their results like Python UDFs do, so this works in local
  and cluster mode. :func:`last_profile` returns the merged profile of every task that finished
  since the previous call. Spark applies the updates of successful tasks; a stage that Spark
  recomputes (a lost shuffle, a DataFrame read by two actions) reports again.
- **a profile folder** (option ``profileDir``; works with Spark Connect, where there is no
  accumulator): each task writes ``<profileDir>/<scan id>/task-<n>.json`` (with ``worker``:
  the host and working folder it ran in); a retried task overwrites its file. The folder must
  be shared by driver and executors in cluster mode (a local path in local mode, or any URI
  pyarrow opens: ``s3://``, ``hdfs://``, ...).
  :func:`read_profile_dir` merges the files.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from typing import Any

from pyspark.accumulators import AccumulatorParam

from lazyscan.scan.profile import Profile

#: entry of the accumulator value: scan id -> {"source", "tasks", "profile"}
ProfileBag = dict[str, dict[str, Any]]


def new_scan_id() -> str:
    """A sortable id for one planned read: UTC time plus a random suffix."""
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + uuid.uuid4().hex[:8]


def _merge_entry(into: dict[str, Any], other: dict[str, Any]) -> None:
    merged = Profile.from_dict(into["profile"])
    merged.merge(Profile.from_dict(other["profile"]))
    into["profile"] = merged.as_dict()
    into["tasks"] = into.get("tasks", 0) + other.get("tasks", 0)


class ProfileAccumulatorParam(AccumulatorParam):  # type: ignore[type-arg]
    """Accumulates per-scan profiles: ``{scan id: {"source", "tasks", "profile"}}``."""

    def zero(self, value: ProfileBag) -> ProfileBag:
        return {}

    def addInPlace(self, value1: ProfileBag, value2: ProfileBag) -> ProfileBag:
        for scan_id, entry in value2.items():
            mine = value1.get(scan_id)
            if mine is None:
                value1[scan_id] = {
                    "source": entry.get("source", ""),
                    "tasks": entry.get("tasks", 0),
                    "profile": dict(entry["profile"]),
                }
            else:
                _merge_entry(mine, entry)
        return value1


def task_entry(source: str, profile: Profile) -> dict[str, Any]:
    return {"source": source, "tasks": 1, "profile": profile.as_dict()}


def worker_name() -> str:
    """Where a task ran: host and working folder (each executor of a cluster has its own)."""
    return f"{socket.gethostname()}:{os.getcwd()}"


_lock = threading.Lock()
_accumulator: Any = None


def set_accumulator(accumulator: Any) -> None:
    """Remember the accumulator of the session that registered the source (driver side)."""
    global _accumulator
    with _lock:
        _accumulator = accumulator


def current_accumulator() -> Any:
    """The accumulator of the session that last called :func:`lazyscan.spark.register`."""
    with _lock:
        return _accumulator


def _take() -> ProfileBag:
    with _lock:
        acc = _accumulator
        if acc is None:
            return {}
        value: ProfileBag = dict(acc.value)
        acc.value = {}
        return value


def last_profile(per_scan: bool = False) -> Any:
    """The profile of the lazyscan tasks that finished since the previous call.

    Returns one merged :class:`~lazyscan.scan.Profile`, or with ``per_scan=True`` a dict
    ``{scan id: (source path, number of tasks, Profile)}``. Needs :func:`register` in a classic
    (non-Connect) session; otherwise use the ``profileDir`` option and :func:`read_profile_dir`.
    """
    bag = _take()
    if per_scan:
        return {
            k: (v.get("source", ""), v.get("tasks", 0), Profile.from_dict(v["profile"]))
            for k, v in sorted(bag.items())
        }
    total = Profile()
    for entry in bag.values():
        total.merge(Profile.from_dict(entry["profile"]))
    return total


def _filesystem(uri: str) -> tuple[Any, str]:
    if "://" in uri and not uri.startswith("file://"):
        import pyarrow.fs as pafs

        fs, path = pafs.FileSystem.from_uri(uri)
        return fs, path
    return None, uri.removeprefix("file://")


def write_task_profile(directory: str, scan_id: str, task: int, entry: dict[str, Any]) -> None:
    """Write one task's profile as ``<directory>/<scan_id>/task-<task>.json``."""
    fs, root = _filesystem(directory)
    data = json.dumps({"scan_id": scan_id, "task": task, "worker": worker_name(), **entry}).encode()
    name = f"task-{task:05d}.json"
    if fs is None:
        folder = os.path.join(root, scan_id)
        os.makedirs(folder, exist_ok=True)
        tmp = os.path.join(folder, f".{name}.{uuid.uuid4().hex[:6]}")
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, os.path.join(folder, name))
        return
    folder = f"{root.rstrip('/')}/{scan_id}"
    fs.create_dir(folder, recursive=True)
    with fs.open_output_stream(f"{folder}/{name}") as out:
        out.write(data)


def read_profile_dir(directory: str, scan_id: str | None = None) -> Profile:
    """Merge the task profiles written under ``directory`` (all scans, or one scan id)."""
    fs, root = _filesystem(directory)
    total = Profile()
    for data in _profile_files(fs, root, scan_id):
        entry = json.loads(data)
        total.merge(Profile.from_dict(entry["profile"]))
    return total


def profile_scan_ids(directory: str) -> list[str]:
    """The scan ids under ``directory``, oldest first."""
    fs, root = _filesystem(directory)
    return _scan_ids(fs, root)


def _scan_ids(fs: Any, root: str) -> list[str]:
    if fs is None:
        if not os.path.isdir(root):
            return []
        return sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    import pyarrow.fs as pafs

    infos = fs.get_file_info(pafs.FileSelector(root, allow_not_found=True))
    return sorted(i.base_name for i in infos if i.type == pafs.FileType.Directory)


def _profile_files(fs: Any, root: str, scan_id: str | None) -> list[bytes]:
    ids = [scan_id] if scan_id else _scan_ids(fs, root)
    out = []
    for sid in ids:
        if fs is None:
            folder = os.path.join(root, sid)
            if not os.path.isdir(folder):
                continue
            for name in sorted(os.listdir(folder)):
                if name.startswith("task-") and name.endswith(".json"):
                    with open(os.path.join(folder, name), "rb") as f:
                        out.append(f.read())
        else:
            import pyarrow.fs as pafs

            sel = pafs.FileSelector(f"{root.rstrip('/')}/{sid}", allow_not_found=True)
            for info in fs.get_file_info(sel):
                if info.base_name.startswith("task-") and info.base_name.endswith(".json"):
                    with fs.open_input_stream(info.path) as f:
                        out.append(f.read())
    return out
