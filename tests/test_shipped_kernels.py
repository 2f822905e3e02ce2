"""Kernels shipped inside the package (``lazyscan warmup --ship``) and one compile per machine.

Each case runs fresh interpreters on a copy of the package, with a new empty ``NUMBA_CACHE_DIR``:
what a new machine (or a new Spark executor) sees.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lazyscan import kernel_cache
from lazyscan.kernel_cache import CompileLock, pack_shipped
from tests.support.compiles import COMPILE_COUNTER

REPO = Path(__file__).resolve().parents[1]

# a physical read of every column (a few kernels: the whole-column route), then how many kernel
# signatures were compiled into machine code (tests.support.compiles) and loaded from a cache
PROBE = COMPILE_COUNTER + """
import json, sys
import lazyscan
from lazyscan import kernel_cache
if {no_portable_cpu!r}:
    kernel_cache.host_runs_portable_code = lambda: False
from lazyscan.parquet import ParquetFile
from lazyscan.scan.warmup import _kernels
path = {path!r}
with ParquetFile(path) as pf:
    columns = {{c.name: pf.read_column(0, c.name).to_pylist() for c in pf.schema.columns}}
cached = [k for k in _kernels() if k._cache.cache_path is not None]
loaded = sum(sum(k.stats.cache_hits.values()) for k in cached)
print(json.dumps({{"file": lazyscan.__file__, "columns": columns, "compiled": _Compiled.count, "loaded": loaded}}))
"""


def _sample(folder: Path) -> Path:
    rng = np.random.default_rng(3)
    n = 5000
    table = pa.table(
        {
            "x": pa.array(rng.integers(0, 1000, n)),
            "f": pa.array(rng.random(n), mask=rng.random(n) < 0.1),
            "s": pa.array([f"v{i % 200}" for i in range(n)]),
        }
    )
    path = folder / "sample.parquet"
    pq.write_table(table, path, row_group_size=n, compression="snappy")
    return path


def _copy_package(to: Path) -> Path:
    shutil.copytree(
        REPO / "lazyscan", to / "lazyscan", ignore=shutil.ignore_patterns("__pycache__", "_kernels")
    )
    return to


def _copy_with_shipped(package: Path, to: Path) -> Path:
    """Another copy of the package, with ``package``'s shipped kernels (to damage or age)."""
    other = _copy_package(to)
    shutil.copytree(package / "lazyscan" / "_kernels", other / "lazyscan" / "_kernels")
    return other


def _probe(where: Path, cache: Path, path: Path, *, env: dict[str, str] | None = None, no_portable_cpu: bool = False,
           start_only: bool = False) -> dict[str, object] | subprocess.Popen[bytes]:
    full_env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(where), **(env or {})}
    for name in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES"):
        if env is None or name not in env:
            full_env.pop(name, None)
    code = PROBE.format(path=str(path), no_portable_cpu=no_portable_cpu)
    child = subprocess.Popen([sys.executable, "-c", code], cwd=where, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if start_only:
        return child
    return _result(child)


def _result(child: subprocess.Popen[bytes]) -> dict[str, object]:
    out, err = child.communicate(timeout=600)
    assert child.returncode == 0, err.decode(errors="replace")[-3000:]
    result: dict[str, object] = json.loads(out.decode().strip().splitlines()[-1])
    return result


def _expected(path: Path) -> dict[str, list[object]]:
    table = pq.read_table(path)
    return {name: table.column(name).to_pylist() for name in table.column_names}


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A copy of the package whose ``_kernels`` holds what the probe compiled for the portable
    CPU level, and the sample file."""
    root = tmp_path_factory.mktemp("shipped")
    path = _sample(root)
    package = _copy_package(root / "pkg")
    built = _probe(package, root / "build-cache", path, env=kernel_cache.portable_build_env())
    assert isinstance(built, dict) and built["compiled"] > 0  # type: ignore[operator]
    count = pack_shipped(root / "build-cache", package / "lazyscan" / "_kernels")
    assert count > 0
    return package, path


def test_a_new_machine_loads_the_shipped_kernels_and_compiles_nothing(shipped: tuple[Path, Path], tmp_path: Path) -> None:
    package, path = shipped
    got = _probe(package, tmp_path / "empty-cache", path)
    assert isinstance(got, dict)
    assert got["file"] == str(package / "lazyscan" / "__init__.py")
    assert got["compiled"] == 0 and got["loaded"] > 0  # type: ignore[operator]
    assert got["columns"] == _expected(path)
    # nothing was written into the user's cache for the shipped entries
    assert not list((tmp_path / "empty-cache").rglob("*.nbc"))


def test_a_cpu_without_the_portable_level_compiles_and_reads_the_same(shipped: tuple[Path, Path], tmp_path: Path) -> None:
    package, path = shipped
    got = _probe(package, tmp_path / "empty-cache", path, no_portable_cpu=True)
    assert isinstance(got, dict) and got["compiled"] > 0  # type: ignore[operator]
    assert got["columns"] == _expected(path)


def test_kernels_shipped_by_another_numba_version_are_not_used(shipped: tuple[Path, Path], tmp_path: Path) -> None:
    package, path = shipped
    other = _copy_with_shipped(package, tmp_path / "pkg")
    for index in (other / "lazyscan" / "_kernels").rglob("*.nbi"):
        with open(index, "rb") as f:
            pickle.load(f)
            rest = f.read()
        index.write_bytes(pickle.dumps("0.1.0") + rest)
    got = _probe(other, tmp_path / "empty-cache", path)
    assert isinstance(got, dict) and got["compiled"] > 0  # type: ignore[operator]
    assert got["columns"] == _expected(path)


def test_a_changed_module_does_not_load_its_old_shipped_kernels(shipped: tuple[Path, Path], tmp_path: Path) -> None:
    package, path = shipped
    other = _copy_with_shipped(package, tmp_path / "pkg")
    kernels = other / "lazyscan" / "parquet" / "kernels.py"
    kernels.write_text(kernels.read_text() + "\n# changed\n")
    got = _probe(other, tmp_path / "empty-cache", path)
    assert isinstance(got, dict) and got["compiled"] > 0  # type: ignore[operator]
    assert got["columns"] == _expected(path)


def test_only_entries_built_for_the_portable_level_are_packed(tmp_path: Path) -> None:
    path = _sample(tmp_path)
    package = _copy_package(tmp_path / "pkg")
    built = _probe(package, tmp_path / "host-cache", path)  # the host's CPU, not the portable level
    assert isinstance(built, dict) and built["compiled"] > 0  # type: ignore[operator]
    assert pack_shipped(tmp_path / "host-cache", tmp_path / "shipped") == 0


def test_two_processes_on_an_empty_cache_compile_each_kernel_once(tmp_path: Path) -> None:
    path = _sample(tmp_path)
    package = _copy_package(tmp_path / "pkg")
    alone = _probe(package, tmp_path / "alone", path)
    assert isinstance(alone, dict)
    both = [_probe(package, tmp_path / "shared", path, start_only=True) for _ in range(2)]
    first, second = (_result(child) for child in both)  # type: ignore[arg-type]
    # each signature compiled by one of them; the other loaded it from the shared cache
    assert first["compiled"] + second["compiled"] == alone["compiled"]  # type: ignore[operator]
    assert first["columns"] == second["columns"] == _expected(path)


HOLD = """
import fcntl, sys, time
fd = open(sys.argv[1], "a")
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


def test_compile_lock_waits_for_another_process_and_is_reentrant(tmp_path: Path) -> None:
    lock = CompileLock(str(tmp_path / "compile.lock"))
    holder = subprocess.Popen([sys.executable, "-c", HOLD, lock.path, "1.0"], stdout=subprocess.PIPE)
    assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
    start = time.monotonic()
    assert lock.acquire() is True  # waited for the holder to exit
    assert time.monotonic() - start > 0.3
    assert lock.acquire() is False and lock.depth == 2  # a callee's compile: no second flock
    lock.release()
    assert lock.depth == 1 and lock._fd is not None
    lock.release()
    assert lock.depth == 0 and lock._fd is None
    lock.release()  # one release too many is harmless
    assert lock.depth == 0
    holder.wait(timeout=30)


def test_a_stuck_holder_does_not_make_a_compile_hang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernel_cache, "LOCK_WAIT_SECONDS", 0.5)
    lock = CompileLock(str(tmp_path / "compile.lock"))
    holder = subprocess.Popen([sys.executable, "-c", HOLD, lock.path, "30"], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        start = time.monotonic()
        assert lock.acquire() is True
        assert 0.4 < time.monotonic() - start < 10
        lock.release()
        assert lock.depth == 0
    finally:
        holder.kill()
        holder.wait(timeout=30)


def test_a_compile_that_fails_gives_the_lock_back() -> None:
    from numba.core.errors import TypingError

    from lazyscan.format import kernels as K

    assert kernel_cache.COMPILE_LOCK.depth == 0
    with pytest.raises(TypingError):
        K.index_runs("not an array", np.empty(1, np.int64), np.empty(1, np.int64))
    assert kernel_cache.COMPILE_LOCK.depth == 0 and kernel_cache.COMPILE_LOCK._fd is None
    # and a kernel still compiles (or loads) afterwards
    starts, ends = np.empty(2, np.int64), np.empty(2, np.int64)
    assert K.index_runs(np.array([1, 2, 7], np.int64), starts, ends) == 2


def test_ship_does_nothing_when_built_from_these_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lazyscan.scan import warmup

    into = tmp_path / "kernels"
    assert not kernel_cache.shipped_is_current(into)
    kernel_cache.write_shipped_stamp(into, entries=0)
    assert not kernel_cache.shipped_is_current(into)  # a build that shipped nothing is not one
    kernel_cache.write_shipped_stamp(into, entries=12)
    assert kernel_cache.shipped_is_current(into)

    def no_build(*args: object, **kwargs: object) -> None:
        raise AssertionError("a build process was started")

    monkeypatch.setattr(subprocess, "Popen", no_build)
    report = warmup.ship_kernels(jobs=2, into=into)
    assert report.up_to_date and "nothing to do" in report.summary()
    # other sources (or another numba, Python or CPU level): built again
    monkeypatch.setattr(kernel_cache, "sources_digest", lambda: "something else")
    assert not kernel_cache.shipped_is_current(into)
    with pytest.raises(AssertionError, match="a build process was started"):
        warmup.ship_kernels(jobs=1, into=into)


def test_ship_into_a_folder_it_cannot_write_says_so_before_compiling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lazyscan.errors import OptionError
    from lazyscan.scan import warmup

    locked = tmp_path / "site-packages"
    locked.mkdir()
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != locked)  # root may write anywhere

    def no_build(*args: object, **kwargs: object) -> None:
        raise AssertionError("a build process was started")

    monkeypatch.setattr(subprocess, "Popen", no_build)
    with pytest.raises(OptionError, match=r"cannot write the kernels into .*site-packages/lazyscan/_kernels.*--into"):
        warmup.ship_kernels(jobs=1, into=locked / "lazyscan" / "_kernels")


def test_damaged_shipped_kernels_are_compiled_instead_with_a_warning(shipped: tuple[Path, Path], tmp_path: Path) -> None:
    package, path = shipped
    other = _copy_with_shipped(package, tmp_path / "pkg")
    for index in (other / "lazyscan" / "_kernels").rglob("*.nbi"):
        raw = index.read_bytes()
        index.write_bytes(raw[: len(raw) // 2])  # a truncated index
    for data in (other / "lazyscan" / "_kernels").rglob("*.nbc"):
        data.write_bytes(b"\x00" * 64)
    child = _probe(other, tmp_path / "empty-cache", path, start_only=True)
    assert isinstance(child, subprocess.Popen)
    out, err = child.communicate(timeout=600)
    assert child.returncode == 0, err.decode(errors="replace")[-3000:]
    got = json.loads(out.decode().strip().splitlines()[-1])
    assert got["compiled"] > 0 and got["columns"] == _expected(path)
    assert "cannot be loaded" in err.decode() and "--force" in err.decode()
