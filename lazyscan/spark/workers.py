"""Spark's Python workers need lazyscan: a check on the driver, before any job runs.

Spark starts its Python workers with the interpreter the session's ``SparkContext`` was created
with (``sparkContext.pythonExec``): ``PYSPARK_PYTHON`` from the driver's environment when the
session started, else ``python3`` from the PATH. ``spark-submit`` and the ``pyspark`` shell turn
``spark.pyspark.python`` into ``PYSPARK_PYTHON`` before the driver starts; set on a session
builder inside a running Python it changes nothing (PySpark 4.3,
``pyspark/core/context.py``). A driver in a virtual environment that is not activated thus
sends tasks to a ``python3`` without lazyscan, and the first read fails deep in a worker
traceback with ``ModuleNotFoundError: No module named 'lazyscan'``.

On a local master (``local``, ``local[N]``, ``local-cluster[...]``) the workers run on this
machine: :func:`check_workers` runs that interpreter once per process (``import lazyscan``,
with a timeout) and raises :class:`~lazyscan.errors.OptionError` naming it and the fix when it
lacks lazyscan or has another version. On other masters the executors' interpreter is not
reachable from the driver (an archive's ``./env/bin/python`` exists only once unpacked), and a
probe job would wait for executors to be allocated and would see one of them only: the check is
skipped there, and on Spark Connect, whose server picks the interpreter.

``spark.lazyscan.checkWorkers=false`` (session setting) turns the check off.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass
from typing import Any

from lazyscan._version import __version__
from lazyscan.errors import OptionError
from lazyscan.spark.compat import conf_value, is_connect

log = logging.getLogger("lazyscan.spark")

#: the session setting that turns the check off (``false``)
CHECK_CONF = "spark.lazyscan.checkWorkers"
#: seconds the probe interpreter may take to import lazyscan
PROBE_TIMEOUT = 30.0

#: what the probe runs: prints the lazyscan version the interpreter imports
PROBE_CODE = "import lazyscan, sys; sys.stdout.write(lazyscan.__version__)"
_LOCAL_MASTER = re.compile(r"local(?:\[.*\]|-cluster\[.*\])?")


@dataclass(frozen=True)
class Probe:
    """What an interpreter said to ``import lazyscan``: its version, or why it failed (None
    when the probe could not tell, e.g. it timed out)."""

    python: str
    version: str | None = None
    failure: str | None = None


_probes: dict[str, Probe] = {}
_probes_lock = threading.Lock()


def worker_python(spark: Any) -> str | None:
    """The interpreter Spark starts for ``spark``'s Python workers, as configured (a path or a
    name looked up in the PATH); None on Spark Connect or when the session does not say."""
    if is_connect(spark):
        return None
    try:
        python = spark.sparkContext.pythonExec
    except Exception:
        return None
    return str(python) if python else None


def is_local_master(master: str | None) -> bool:
    """Whether a master runs its executors on this machine."""
    return master is not None and _LOCAL_MASTER.fullmatch(master.strip()) is not None


def resolve_python(python: str) -> str | None:
    """The file ``python`` names, found as the JVM's process builder finds it: a path with a
    separator as is (relative to the working folder), else the first match in the PATH."""
    if os.sep in python or (os.altsep and os.altsep in python):
        return os.path.abspath(python) if os.path.isfile(python) else None
    found = shutil.which(python)
    return os.path.abspath(found) if found else None


def probe(python: str, timeout: float = PROBE_TIMEOUT) -> Probe:
    """Import lazyscan in ``python`` (a resolved path), in this process's environment and
    working folder as Spark's local workers have them; once per interpreter per process.
    The driver's own interpreter is not run again."""
    if os.path.normcase(python) == os.path.normcase(os.path.abspath(sys.executable)):
        return Probe(python, version=__version__)
    with _probes_lock:
        known = _probes.get(python)
    if known is not None:
        return known
    result = _run_probe(python, timeout)
    if result.version is not None or result.failure is not None:
        with _probes_lock:
            _probes[python] = result
    return result


def _run_probe(python: str, timeout: float) -> Probe:
    try:
        done = subprocess.run(
            [python, "-c", PROBE_CODE], capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        log.warning("could not check that Spark's Python workers (%s) have lazyscan: "
                    "importing it took over %.0f s", python, timeout)
        return Probe(python)
    except OSError as e:
        return Probe(python, failure=f"it cannot be started ({e})")
    if done.returncode == 0:
        return Probe(python, version=done.stdout.strip())
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    return Probe(python, failure=lines[-1].strip() if lines else f"exit status {done.returncode}")


def check_workers(spark: Any) -> None:
    """Raise :class:`OptionError` when ``spark``'s Python workers would start an interpreter
    without lazyscan, or with another lazyscan version than the driver's (local masters only;
    see the module docs). ``spark.lazyscan.checkWorkers=false`` skips it."""
    python = worker_python(spark)
    if python is None:
        return
    if (conf_value(spark, CHECK_CONF) or "true").strip().lower() == "false":
        return
    master = conf_value(spark, "spark.master")
    if not is_local_master(master):
        log.debug("master %s: the executors' Python (%s) is not checked from the driver", master, python)
        return
    path = resolve_python(python)
    if path is None:
        where = "" if os.sep in python else " in the PATH"
        raise OptionError(f"Spark's Python workers would start {python!r}, which is not found{where}. "
                          + _fix())
    result = probe(path)
    if result.failure is not None:
        raise OptionError(
            f"Spark's Python workers would start {_named(python, path)}, which cannot import lazyscan "
            f"({result.failure}); the driver runs {sys.executable}. " + _fix()
        )
    if result.version is not None and result.version != __version__:
        raise OptionError(
            f"Spark's Python workers would start {_named(python, path)}, which has lazyscan "
            f"{result.version}; the driver ({sys.executable}) has lazyscan {__version__}. " + _fix()
        )


def _named(python: str, path: str) -> str:
    return path if python == path else f"{python!r} ({path})"


def _fix() -> str:
    return (
        "Start the session with PYSPARK_PYTHON set to an interpreter that has this lazyscan "
        f"(in Python: os.environ['PYSPARK_PYTHON'] = sys.executable before the session starts; "
        "with spark-submit or pyspark: --conf spark.pyspark.python=...); on a cluster ship a "
        "packed environment (docs/SPARK.md, 'Installing on a cluster'). "
        f"{CHECK_CONF}=false skips this check."
    )
