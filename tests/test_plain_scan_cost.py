"""What a plain Parquet scan (no Delta Lake or Iceberg table) pays for the table features: the
check that its path is no table, once per path and not per file; the look for columns spelled in
another case, only in a file that lacks a needed name. Counted, not timed: the stat and listing
calls of local scans (``os.stat`` and friends patched) and the requests the S3 test server sees.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lazyscan
from lazyscan.parquet import clear_caches
from tests.support.s3 import S3Server

#: the module (``lazyscan.scan`` the attribute is the function)
scan_files = importlib.import_module("lazyscan.scan.files")

BUCKET = "plain-scan-cost"
ROWS = 100
#: matches one row of the file ``part-1.parquet``; the footer statistics rule out the others
WHERE = f"k = {ROWS + 50}"


def _write_parts(folder: Path, n: int, names: tuple[str, str] = ("k", "s")) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        table = pa.table({names[0]: np.arange(ROWS) + ROWS * i, names[1]: [f"v{j}" for j in range(ROWS)]})
        path = folder / f"part-{i}.parquet"
        pq.write_table(table, path)
        paths.append(path)
    return paths


class FsCalls:
    """The file system calls made while :meth:`counting`, by kind and path."""

    KINDS = ("stat", "lstat", "listdir", "scandir")

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: Counter[tuple[str, str]] = Counter()
        self.on = False
        for kind in self.KINDS:
            monkeypatch.setattr(os, kind, self._counted(kind, getattr(os, kind)))

    def _counted(self, kind: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def counted(path: Any = ".", *args: Any, **kwargs: Any) -> Any:
            if self.on and not isinstance(path, int):
                self.calls[kind, os.fspath(path)] += 1
            return original(path, *args, **kwargs)

        return counted

    @contextlib.contextmanager
    def counting(self) -> Iterator[None]:
        self.calls.clear()
        self.on = True
        try:
            yield
        finally:
            self.on = False

    def of(self, kind: str, where: Callable[[str], bool] = lambda p: True) -> int:
        return sum(n for (k, p), n in self.calls.items() if k == kind and where(p))


@pytest.fixture
def fs_calls(monkeypatch: pytest.MonkeyPatch) -> FsCalls:
    return FsCalls(monkeypatch)


def _scan_counted(fs_calls: FsCalls, source: str, **options: Any) -> pa.Table:
    lazyscan.scan(source, where=WHERE, threads=1, **options).to_table()  # imports, kernels
    clear_caches()
    with fs_calls.counting():
        return lazyscan.scan(source, where=WHERE, threads=1, **options).to_table()


def _table_probes(folder: Path) -> int:
    """The stat calls that look for a table at ``folder`` and above it, each folder once: its
    Delta log and Iceberg metadata folders."""
    return 2 * (1 + len(folder.parents))


@pytest.mark.parametrize("n", [3, 12])
def test_local_folder_stats_each_file_once_and_looks_for_tables_per_folder(
    fs_calls: FsCalls, tmp_path: Path, n: int
) -> None:
    folder = tmp_path / "plain"
    parts = _write_parts(folder, n)
    result = _scan_counted(fs_calls, str(folder))
    assert result["k"].to_pylist() == [ROWS + 50]
    part_names = {str(p) for p in parts}
    # each file: one stat by the listing (its identity); the one file read, one more after its
    # row groups (is it still the version planned?). Opens use fstat of their descriptor.
    per_file = {p: fs_calls.calls["stat", p] for p in part_names}
    assert per_file == {p: 2 if p.endswith("part-1.parquet") else 1 for p in part_names}
    # one listing of the folder, no other folder read
    assert fs_calls.of("scandir") == 1 and fs_calls.of("listdir") == 0
    # the table checks do not grow with the files: the folder is a table's root? (the scan's
    # check, 3 stats: itself, its _delta_log and metadata folders), then the listing's check
    # of the folder and every folder above it (3 stats the folder's kind, 2 each folder looked
    # at); an Iceberg metadata folder is listed only where one exists
    others = fs_calls.of("stat", lambda p: p not in part_names)
    assert others == 3 + 3 + _table_probes(folder), sorted(fs_calls.calls.items())
    assert fs_calls.of("lstat") == 0


def test_local_file_stats(fs_calls: FsCalls, tmp_path: Path) -> None:
    folder = tmp_path / "one"
    path = _write_parts(folder, 2)[1]
    result = _scan_counted(fs_calls, str(path))
    assert result["k"].to_pylist() == [ROWS + 50]
    # the file: one stat to tell it is no table (no Iceberg metadata name, no folder), five of
    # the listing (a folder? asked twice, a file? a table above? its identity), one after its
    # row group is read
    assert fs_calls.calls["stat", str(path)] == 1 + 5 + 1
    assert fs_calls.of("stat", lambda p: p != str(path)) == _table_probes(folder)
    assert fs_calls.of("scandir") == 0 and fs_calls.of("listdir") == 0


def test_partition_folders_are_listed_once_each(fs_calls: FsCalls, tmp_path: Path) -> None:
    root = tmp_path / "parted"
    for day in ("d=1", "d=2"):
        _write_parts(root / day, 2)
    result = _scan_counted(fs_calls, str(root))
    assert sorted(result["d"].to_pylist()) == [1, 2]
    assert fs_calls.of("scandir") == 3 and fs_calls.of("listdir") == 0
    # the partition folders are not looked at as tables one by one: the walk sees no
    # _delta_log or metadata folder in them
    assert fs_calls.of("stat", lambda p: p.endswith(("_delta_log", "metadata"))) == 2 + _table_probes(root)


def test_exact_names_are_not_looked_for_in_other_spellings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a file whose columns carry the scan's names exactly is read as it is; only a file lacking
    # a needed name looks for another spelling of it (Spark's case-insensitive matching)
    _write_parts(tmp_path / "exact", 4)
    _write_parts(tmp_path / "mixed", 2)
    other = tmp_path / "mixed" / "part-9.parquet"
    pq.write_table(pa.table({"K": np.arange(3) + 900, "s": ["x", "y", "z"]}), other)
    looked: list[str] = []
    original = scan_files.columns_by_case

    def counted(path: str, *args: Any) -> dict[str, str]:
        looked.append(path)
        return original(path, *args)

    monkeypatch.setattr(scan_files, "columns_by_case", counted)
    assert lazyscan.scan(str(tmp_path / "exact"), where=WHERE).to_table()["k"].to_pylist() == [ROWS + 50]
    assert looked == []
    got = lazyscan.scan(str(tmp_path / "mixed"), where="k >= 150 AND k < 902").to_table()
    assert sorted(got["k"].to_pylist()) == [*range(150, 200), 900, 901]
    assert looked == [str(other)]


# ---- object stores -----------------------------------------------------------------------------


def _requests_by_kind(server: S3Server, since: int) -> Counter[str]:
    """The server's requests after line ``since`` of its log: HEAD, LIST (a listing) or GET."""
    with open(server.log, "rb") as f:
        lines = f.readlines()[since:]
    kinds: Counter[str] = Counter()
    for line in lines:
        if b"/moto-api" in line:
            continue
        if b"HEAD /" in line:
            kinds["HEAD"] += 1
        elif b"GET /" in line:
            kinds["LIST" if b"list-type" in line else "GET"] += 1
    return kinds


def _log_length(server: S3Server) -> int:
    with open(server.log, "rb") as f:
        return sum(1 for _ in f)


@pytest.mark.parametrize("client", ["pyarrow", "fsspec"])
@pytest.mark.parametrize("n", [2, 6])
def test_requests_per_plain_scan_on_s3(
    s3_server: S3Server, tmp_path: Path, client: str, n: int
) -> None:
    local = tmp_path / "parts"
    _write_parts(local, n)
    prefix = f"{client}-{n}"
    s3_server.upload_tree(local, BUCKET, prefix)
    fs = s3_server.arrow_filesystem() if client == "pyarrow" else s3_server.fsspec_filesystem()
    clear_caches()
    since = _log_length(s3_server)
    got = lazyscan.scan(f"{BUCKET}/{prefix}", where=WHERE, filesystem=fs, threads=1).to_table()
    assert got["k"].to_pylist() == [ROWS + 50]
    # per scan: what the path is (a HEAD, a listing of one key), the listing of the folder,
    # and one listing looking for a Delta log in the folder above (the bucket); per file: its
    # open while planning (HEAD, footer), the check before its row groups are read that it is
    # still that version (HEAD); the file read: its row group (GET) and the check after (HEAD)
    assert _requests_by_kind(s3_server, since) == {"HEAD": 1 + 2 * n + 1, "LIST": 1 + 1 + 1, "GET": n + 1}


def test_object_store_paths_are_not_looked_for_on_local_disk(
    s3_server: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fs_calls: FsCalls
) -> None:
    # the bucket's folder, and a local folder of the same relative name that looks like a Delta
    # table: a path on the object store's filesystem names the object store's files only
    local = tmp_path / "parts"
    _write_parts(local, 2)
    s3_server.upload_tree(local, BUCKET, "shadowed")
    monkeypatch.chdir(tmp_path)
    (tmp_path / BUCKET / "shadowed" / "_delta_log").mkdir(parents=True)
    fs = s3_server.arrow_filesystem()
    with fs_calls.counting():
        got = lazyscan.scan(f"{BUCKET}/shadowed", where=WHERE, filesystem=fs).to_table()
    assert got["k"].to_pylist() == [ROWS + 50]
    assert not [p for (_, p) in fs_calls.calls if BUCKET in p]
