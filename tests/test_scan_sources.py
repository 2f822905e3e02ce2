"""Scans over filesystems: pyarrow and fsspec filesystems, ``file://`` URLs and globs give the
same rows as local paths. (Pushdown on against off over every file in ``tests/data`` is
``tests/test_conformance.py``'s and ``tests/test_pruning_never_loses_rows.py``'s.)"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

import lazyscan
from tests.support.data import PARQUET_TESTING

DATA = PARQUET_TESTING


def _key(row: dict) -> str:
    return repr({k: ("NaN" if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()})


def _rows(t: pa.Table) -> list[str]:
    return sorted(_key(r) for r in t.to_pylist())


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for part in ("a", "b"):
        d = tmp_path / f"part={part}"
        d.mkdir()
        pq.write_table(pa.table({"x": np.arange(1000) + (0 if part == "a" else 1000), "s": [f"v{i % 17}" for i in range(1000)]}), d / "f.parquet", row_group_size=300)
    return tmp_path


def test_pyarrow_filesystem(folder: Path) -> None:
    local = lazyscan.scan(str(folder), where="x > 1500 AND s = 'v3'").to_table()
    fs = pafs.LocalFileSystem()
    remote = lazyscan.scan(str(folder), where="x > 1500 AND s = 'v3'", filesystem=fs).to_table()
    assert local.num_rows > 0 and _rows(local) == _rows(remote)
    sub = pafs.SubTreeFileSystem(str(folder), fs)
    via_subtree = lazyscan.scan("part=b", where="x > 1500 AND s = 'v3'", filesystem=sub).to_table()
    assert via_subtree.num_rows == local.num_rows


def test_fsspec_filesystem(folder: Path) -> None:
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("file")
    got = lazyscan.scan(str(folder), where="x < 10", filesystem=fs).to_table()
    assert sorted(got["x"].to_pylist()) == list(range(10))
    assert set(got["part"].to_pylist()) == {"a"}


def test_file_url_and_glob(folder: Path) -> None:
    a = lazyscan.scan("file://" + str(folder / "part=a" / "f.parquet"), where="x = 5").to_table()
    assert a["x"].to_pylist() == [5]
    g = lazyscan.scan(str(folder / "part=*" / "*.parquet"), where="x IN (5, 1005)").to_table()
    assert sorted(g["x"].to_pylist()) == [5, 1005]


def test_open_file_left_at_interpreter_exit_is_closed_quietly(tmp_path: Path) -> None:
    """A reader still open when the interpreter exits is finalized without a traceback, even
    after module globals have been torn down."""
    import subprocess
    import sys

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": [1, 2, 3]}), path)
    code = (
        "import lazyscan\n"
        "from lazyscan.parquet import ParquetFile\n"
        f"keep = ParquetFile({str(path)!r})\n"
        "keep.read_column(0, 'a')\n"
        "import lazyscan.io.source as s\n"
        "s.contextlib = s.os = None  # what interpreter teardown may leave behind\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "Exception ignored" not in res.stderr, res.stderr
