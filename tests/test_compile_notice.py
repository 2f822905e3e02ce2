"""The first compile of lazyscan's kernels in a process says so once; a cached kernel says nothing.

The end-to-end case runs two new processes on one new, empty numba cache: the first compiles the
kernels of a small read and prints the notice once on standard error, the second loads them from
the cache and prints nothing. The listener is also checked directly, without compiling.
"""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lazyscan._compile_notice import MESSAGE, FirstCompileNotice

REPO = Path(__file__).resolve().parents[1]

READ = """
import lazyscan, sys
t = lazyscan.scan(sys.argv[1], where="k < 5").to_table()
assert t.num_rows == 5, t.num_rows
"""


def run_read(path: Path, cache: Path) -> str:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO), "LAZYSCAN_SHIPPED_KERNELS": "0"}
    done = subprocess.run(
        [sys.executable, "-c", READ, str(path)], env=env, cwd=REPO, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_a_new_cache_says_it_compiles_once_and_a_filled_one_says_nothing(tmp_path: Path) -> None:
    path = tmp_path / "small.parquet"
    pq.write_table(pa.table({"k": pa.array(range(100), pa.int64())}), path)
    cache = tmp_path / "numba-cache"
    first = run_read(path, cache)
    assert first.count("compiling its numba kernels for first use") == 1, first
    assert "lazyscan warmup" in first
    second = run_read(path, cache)
    assert "compiling" not in second, second


def dispatcher_of(module: str) -> SimpleNamespace:
    return SimpleNamespace(py_func=SimpleNamespace(__module__=module))


def test_only_lazyscans_kernels_are_announced_and_only_once(caplog: pytest.LogCaptureFixture) -> None:
    notice = FirstCompileNotice()
    with caplog.at_level(logging.WARNING, logger="lazyscan._compile_notice"):
        notice.on_start(SimpleNamespace(data={"dispatcher": dispatcher_of("user_code")}))
        notice.on_start(SimpleNamespace(data={"dispatcher": None}))
        assert caplog.messages == []
        notice.on_start(SimpleNamespace(data={"dispatcher": dispatcher_of("lazyscan.parquet.kernels")}))
        notice.on_start(SimpleNamespace(data={"dispatcher": dispatcher_of("lazyscan.orc.kernels")}))
    assert caplog.messages == [MESSAGE]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _event(module: str) -> SimpleNamespace:
    return SimpleNamespace(data={"dispatcher": dispatcher_of(module)})


def test_a_terminal_sees_a_live_count_and_a_summary_when_compiling_stops() -> None:
    terminal = Terminal()
    notice = FirstCompileNotice(stream=terminal)
    progress = notice._progress_line()
    assert progress is not None
    progress.interval, progress.idle = 0.02, 0.2
    for _ in range(3):
        notice.on_start(_event("lazyscan.parquet.kernels"))
        notice.on_start(_event("user_code"))  # not counted
        time.sleep(0.05)
        notice.on_end(_event("lazyscan.parquet.kernels"))
    deadline = time.monotonic() + 10
    while "compiled 3 kernel signatures" not in terminal.getvalue() and time.monotonic() < deadline:
        time.sleep(0.02)
    text = terminal.getvalue()
    assert "lazyscan: compiling kernels" in text  # the live line, redrawn in place
    assert text.rstrip("\n").endswith("(cached for the next processes)")
    assert "compiled 3 kernel signatures in" in text and text.endswith("\n")
    # a later compile starts a new count
    notice.on_start(_event("lazyscan.orc.kernels"))
    notice.on_end(_event("lazyscan.orc.kernels"))
    deadline = time.monotonic() + 10
    while "compiled 1 kernel signatures" not in terminal.getvalue() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert "compiled 1 kernel signatures" in terminal.getvalue()


def test_no_live_line_off_a_terminal_or_when_silenced(caplog: pytest.LogCaptureFixture) -> None:
    plain = io.StringIO()
    assert FirstCompileNotice(stream=plain)._progress_line() is None
    logger = logging.getLogger("lazyscan._compile_notice")
    level = logger.level
    logger.setLevel(logging.ERROR)  # what lazyscan warmup does
    try:
        assert FirstCompileNotice(stream=Terminal())._progress_line() is None
    finally:
        logger.setLevel(level)
