"""numba's cache of lazyscan's kernels under NUMBA_CACHE_DIR is shared by copies of the package
in different folders (a packed environment unpacked per Spark executor and application)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import lazyscan
from lazyscan.kernel_cache import cache_folder

REPO = Path(__file__).resolve().parents[1]

# one small kernel, called in a fresh interpreter: its cache statistics and where it came from
PROBE = """
import json, numpy as np
import lazyscan
from lazyscan.format import kernels as K
idx = np.array([1, 2, 3, 7, 9], np.int64)
starts, ends = np.empty(5, np.int64), np.empty(5, np.int64)
n = K.index_runs(idx, starts, ends)
print(json.dumps({"file": lazyscan.__file__, "runs": int(n), "hits": sum(K.index_runs.stats.cache_hits.values()),
                  "misses": sum(K.index_runs.stats.cache_misses.values())}))
"""


def _copy_package(to: Path) -> Path:
    shutil.copytree(REPO / "lazyscan", to / "lazyscan", ignore=shutil.ignore_patterns("__pycache__", "_kernels"))
    return to


def _probe(where: Path, cache: Path) -> dict[str, object]:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(where)}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=where, env=env, capture_output=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    result: dict[str, object] = json.loads(done.stdout.decode().strip().splitlines()[-1])
    return result


def test_copies_in_other_folders_load_the_first_copys_kernels(tmp_path: Path) -> None:
    cache = tmp_path / "numba-cache"
    first = _probe(_copy_package(tmp_path / "a"), cache)
    assert first["file"] == str(tmp_path / "a" / "lazyscan" / "__init__.py")
    assert first["runs"] == 3 and first["misses"] == 1 and first["hits"] == 0
    entries = sorted(p.relative_to(cache) for p in cache.rglob("kernels.index_runs-*"))
    assert entries and all(p.parts[:2] == (f"lazyscan-{lazyscan.__version__}", "format") for p in entries)
    assert all(p.parts[2].startswith("kernels-") for p in entries)

    second = _probe(_copy_package(tmp_path / "b"), cache)  # another folder: the same cache
    assert second["file"] == str(tmp_path / "b" / "lazyscan" / "__init__.py")
    assert second["runs"] == 3 and second["hits"] == 1 and second["misses"] == 0
    assert sorted(p.relative_to(cache) for p in cache.rglob("kernels.index_runs-*")) == entries

    # a changed source file is compiled again into a folder of its own: the first copy's entries stay
    changed = _copy_package(tmp_path / "c")
    kernels = changed / "lazyscan" / "format" / "kernels.py"
    kernels.write_text(kernels.read_text() + "\n# changed\n")
    third = _probe(changed, cache)
    assert third["hits"] == 0 and third["misses"] == 1
    assert set(entries) < {p.relative_to(cache) for p in cache.rglob("kernels.index_runs-*")}
    assert _probe(tmp_path / "a", cache)["hits"] == 1


def test_cache_folder_only_for_lazyscan_modules_with_a_cache_dir(monkeypatch, tmp_path: Path) -> None:
    from numba.core import config

    kernels = str(REPO / "lazyscan" / "parquet" / "kernels.py")
    monkeypatch.setattr(config, "CACHE_DIR", "", raising=False)
    assert cache_folder(kernels) is None
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path), raising=False)
    installed = Path(lazyscan.__file__).parent / "parquet" / "kernels.py"
    folder = Path(cache_folder(str(installed)) or "")
    assert folder.parent == tmp_path / f"lazyscan-{lazyscan.__version__}" / "parquet"
    assert folder.name.startswith("kernels-") and len(folder.name) == len("kernels-") + 16
    assert cache_folder(str(tmp_path / "elsewhere" / "module.py")) is None
