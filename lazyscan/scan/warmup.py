"""Compile lazyscan's kernels ahead of the first query: :func:`warm_up`, ``lazyscan warmup``.

numba compiles each kernel the first time a process calls it with new argument types and keeps
the machine code in its cache (``NUMBA_CACHE_DIR`` when set, else ``__pycache__`` beside the
installed modules). With an empty cache the first query on a machine waits for that: about 30 s
on a 2-core machine for a first selective read. :func:`warm_up` pays it up front, e.g. while
a container image is built or a cluster node boots, by scanning small files it writes
itself: every column type lazyscan reads, dictionary and plain encodings, data pages v1 and v2,
nulls, the usual codecs, and the read paths a scan takes (full columns, sparse and dense row
selections, byte-array matching, key filters), in Parquet and in ORC.

:func:`ship_kernels` (``lazyscan warmup --ship``) runs the same steps in several processes, for a
portable CPU level, and stores the result inside the installed package
(:mod:`lazyscan.kernel_cache`): a wheel or a packed environment built afterwards carries compiled
kernels, and a new machine of the same CPU family compiles nothing.
"""

from __future__ import annotations

import contextlib
import decimal
import functools
import inspect
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lazyscan.predicate import Expr

#: rows of each sample file, in row groups of ROW_GROUP rows (a few pages each); a dense
#: selection of a row group holds more indices than the kernels' small-selection path takes
ROWS = 30_000
ROW_GROUP = 10_000
PAGE_ROWS = 2_000


@dataclass
class WarmUpReport:
    """What :func:`warm_up` did: its steps, the kernels numba compiled and loaded, seconds."""

    steps: int = 0
    compiled: int = 0
    loaded: int = 0
    seconds: float = 0.0
    cache_dir: str = ""
    failures: list[str] = field(default_factory=list)

    def summary(self) -> str:
        text = (
            f"{self.steps} steps in {self.seconds:.1f} s: {self.compiled} kernel signatures compiled, "
            f"{self.loaded} loaded from the cache ({self.cache_dir})"
        )
        if self.failures:
            text += f"; {len(self.failures)} steps failed: " + "; ".join(self.failures)
        return text


def sample_table(rows: int = ROWS, seed: int = 7) -> pa.Table:
    """A table with every column type the scan reads, nulls in some columns, NaN in floats,
    repeated values (dictionaries) and a few distinct needles."""
    rng = np.random.default_rng(seed)
    nulls = rng.random(rows) < 0.1
    words = np.array(["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"])
    text = [f"{words[i % 8]} {int(v)}" for i, v in enumerate(rng.integers(0, 400, rows))]
    floats = rng.random(rows)
    floats[::97] = np.nan
    day0 = date(2020, 1, 1).toordinal()
    moment = int(datetime(2020, 1, 1, tzinfo=timezone.utc).timestamp())
    cents = rng.integers(-10_000_000, 10_000_000, rows)
    return pa.table(
        {
            "k": pa.array(np.arange(rows, dtype=np.int64)),
            "i8": pa.array(rng.integers(-100, 100, rows).astype(np.int8)),
            "i16": pa.array(rng.integers(-1000, 1000, rows).astype(np.int16)),
            "i32": pa.array(rng.integers(0, 50, rows).astype(np.int32), mask=nulls),
            "i64": pa.array(rng.integers(0, 1 << 40, rows)),
            "u32": pa.array(rng.integers(0, 1 << 31, rows).astype(np.uint32)),
            "f32": pa.array(floats.astype(np.float32)),
            "f64": pa.array(floats, mask=nulls),
            "d9": pa.array([decimal.Decimal(int(c) % 100_000) / 100 for c in cents], pa.decimal128(9, 2)),
            "d15": pa.array([decimal.Decimal(int(c)) / 100 for c in cents], pa.decimal128(15, 2)),
            "d38": pa.array([decimal.Decimal(int(c)) / 10_000 for c in cents], pa.decimal128(38, 4)),
            "flag": pa.array(rng.random(rows) < 0.3, mask=nulls),
            "day": pa.array([date.fromordinal(day0 + int(v)) for v in rng.integers(0, 2000, rows)], pa.date32()),
            "ts": pa.array((moment + rng.integers(0, 10**8, rows)) * 1_000_000, pa.timestamp("us")),
            "ts_utc": pa.array((moment + rng.integers(0, 10**8, rows)) * 1_000_000, pa.timestamp("us", tz="UTC")),
            "mode": pa.array(words[rng.integers(0, 8, rows)]),
            "text": pa.array(text, mask=nulls),
            "view": pa.array(text).cast(pa.string_view()),
            "blob": pa.array([t.encode() for t in text], pa.binary()),
        }
    )


#: (file name, pyarrow.parquet.write_table keywords): the layouts writers produce (decimals
#: stored as integers, as Spark and tpchgen-cli write them, in the first)
PARQUET_LAYOUTS: tuple[tuple[str, dict[str, object]], ...] = (
    (
        "dictionary-snappy-v1.parquet",
        {"compression": "snappy", "data_page_version": "1.0", "write_page_index": True, "store_decimal_as_integer": True},
    ),
    ("plain-zstd-v2.parquet", {"compression": "zstd", "use_dictionary": False, "data_page_version": "2.0"}),
    ("dictionary-none-v2.parquet", {"compression": "none", "data_page_version": "2.0", "write_statistics": False}),
    ("dictionary-gzip-v1.parquet", {"compression": "gzip", "data_page_version": "1.0"}),
)

#: ORC compressions written (pyarrow.orc)
ORC_COMPRESSIONS = ("snappy", "zlib", "zstd", "uncompressed")

#: the scans run on every sample file: (output columns or None for all, filter)
QUERIES: tuple[tuple[list[str] | None, str | None], ...] = (
    (None, None),
    (None, "text = 'alpha 7'"),
    (["k"], "text = 'alpha 7'"),
    (None, "mode = 'golf' AND i32 < 3"),
    (["k", "d15", "view"], "k BETWEEN 1000 AND 1400"),
    (["k", "text"], "i32 < 25"),
    (None, "i64 < 1000000000"),
    (["k"], "f64 > 0.99 OR flag"),
    (None, "text LIKE 'bravo 1%' OR blob = 'echo 3'"),
    (["k", "ts"], "day >= DATE '2024-01-01' AND i8 IN (1, 2, 3)"),
    (None, "d15 > 90000.00 AND d38 IS NOT NULL AND ts_utc < TIMESTAMP '2021-01-01 00:00:00'"),
    (["text"], "view IS NULL OR u32 = 5 OR i16 = -7 OR d9 < 1.00 OR f32 < 0.001"),
)


def write_samples(folder: str | os.PathLike[str]) -> list[Path]:
    """Write the sample files into ``folder``; returns their paths."""
    import pyarrow.orc as orc

    folder = Path(folder)
    table = sample_table()
    paths = []
    accepted = inspect.signature(pq.write_table).parameters
    for name, kwargs in PARQUET_LAYOUTS:
        path = folder / name
        kwargs = {k: v for k, v in kwargs.items() if k in accepted}  # older pyarrow: fewer knobs
        pq.write_table(table, path, row_group_size=ROW_GROUP, data_page_size=PAGE_ROWS * 8, **kwargs)  # type: ignore[arg-type]
        paths.append(path)
    # ORC has no string_view or unsigned types
    orc_table = table.drop_columns(["view"])
    orc_table = orc_table.set_column(orc_table.schema.get_field_index("u32"), "u32", table.column("u32").cast(pa.int64()))
    for compression in ORC_COMPRESSIONS:
        path = folder / f"{compression}.orc"
        orc.write_table(orc_table, path, compression=compression, stripe_size=64 * 1024, row_index_stride=1000)
        paths.append(path)
    return paths


def _scan(path: Path, columns: list[str] | None, where: str | Expr | None) -> None:
    from lazyscan.scan.scan import scan

    scan(str(path), columns=columns, where=where).to_table()


def _column_reads(path: Path, names: list[str]) -> None:
    """The physical reader: every column whole, for a few rows, for half the rows, and all of
    them at once for a few rows."""
    from lazyscan.parquet import ParquetFile

    sparse = np.array([3, 400, ROW_GROUP - 1], np.int64)
    dense = np.arange(0, ROW_GROUP, 2, dtype=np.int64)
    with ParquetFile(str(path)) as pf:
        for name in names:
            pf.read_column(0, name)
            pf.read_column(1, name, sparse)
            pf.read_column(1, name, dense)
        pf.read_columns(2, names, sparse)


def _steps(paths: list[Path]) -> Iterator[tuple[str, Callable[[], object]]]:
    """(description, action) for every step after the samples are written."""
    import lazyscan

    keys = lazyscan.key_filter(np.arange(100, 6000, 7, dtype=np.int64))  # a bitmap
    bloom = lazyscan.key_filter(np.arange(0, 6_000_000, 37, dtype=np.int64))  # a Bloom filter
    texts = lazyscan.key_filter(pa.array([f"alpha {i}" for i in range(0, 400, 3)]))  # a hash set
    # a hash table of a few integers too far apart for a bitmap (a dimension's keys in a semi join)
    spread = lazyscan.key_filter(np.array([3, 17, 99, 4_000, 10**12], np.int64))
    columns_of_all = sample_table(8).column_names
    for path in paths:
        orc_file = path.suffix == ".orc"
        names = [n for n in columns_of_all if not (orc_file and n == "view")]
        for columns, where in QUERIES:
            if orc_file and columns is not None:
                columns = [c for c in columns if c != "view"]
            if orc_file and where is not None:
                where = where.replace("view IS NULL", "text IS NULL")
            yield f"{path.name}: {where or 'full scan'}", functools.partial(_scan, path, columns, where)
        if not orc_file:
            yield f"{path.name}: column reads", functools.partial(_column_reads, path, names)
        for filt, column in ((keys, "k"), (bloom, "i64"), (texts, "text"), (spread, "k"), (spread, "i32")):
            where_keys = lazyscan.col(column).isin_keys(filt)
            yield f"{path.name}: key filter on {column}", functools.partial(_scan, path, None, where_keys)


def _kernels() -> list[Any]:
    """lazyscan's numba kernels (its modules' dispatchers) imported so far, each once."""
    from numba.core.dispatcher import Dispatcher

    found: dict[int, Any] = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("lazyscan") and module is not None:
            for value in list(vars(module).values()):
                if isinstance(value, Dispatcher):
                    found.setdefault(id(value), value)
    return list(found.values())


def kernel_signatures() -> dict[str, list[str]]:
    """Per kernel (``module.function``), the argument types this process compiled it for or
    loaded from the cache: what a later process on the machine finds there."""
    out: dict[str, set[str]] = {}
    for kernel in _kernels():
        key = f"{kernel.py_func.__module__}.{kernel.py_func.__qualname__}"
        out.setdefault(key, set()).update(str(sig) for sig in kernel.signatures)
    return {k: sorted(v) for k, v in out.items()}


def kernel_counts() -> tuple[int, int]:
    """(signatures compiled, signatures loaded from a cache or the shipped kernels) by
    lazyscan's kernels so far in this process. Compiled counts machine code made here: a typing
    attempt numba retries with literal arguments misses the cache but compiles nothing."""
    compiled = loaded = 0
    for kernel in _kernels():
        hits = sum(kernel.stats.cache_hits.values())
        loaded += hits
        compiled += max(0, len(kernel.overloads) - hits)
    return compiled, loaded


def warm_up(
    progress: Callable[[int, int, str], None] | None = None, part: int = 0, parts: int = 1
) -> WarmUpReport:
    """Compile (or load from numba's cache) the kernels lazyscan's reads and scans use, by
    scanning sample files written to a temporary folder. ``progress(done, total, step)`` is
    called before each step. ``part`` of ``parts`` runs every ``parts``-th step only (the
    processes of a parallel warm-up). A step that fails is reported, not raised: a warm-up
    never stops a deployment."""
    from numba.core import config

    report = WarmUpReport(cache_dir=getattr(config, "CACHE_DIR", "") or "beside lazyscan's modules")
    start = time.perf_counter()
    # compiling is what a warm-up is for: no first-use notice meanwhile
    notice = logging.getLogger("lazyscan._compile_notice")
    level = notice.level
    notice.setLevel(logging.ERROR)
    with contextlib.ExitStack() as restore, tempfile.TemporaryDirectory(prefix="lazyscan-warmup-") as folder:
        restore.callback(notice.setLevel, level)
        steps = list(_steps(write_samples(folder)))[part::parts]
        for i, (what, action) in enumerate(steps):
            if progress is not None:
                progress(i, len(steps), what)
            try:
                action()
            except Exception as e:  # reported in the summary
                report.failures.append(f"{what}: {type(e).__name__}: {e}")
            report.steps += 1
        if progress is not None:
            progress(len(steps), len(steps), "done")
    report.compiled, report.loaded = kernel_counts()
    report.seconds = time.perf_counter() - start
    return report


@dataclass
class ShipReport:
    """What :func:`ship_kernels` did."""

    folder: str
    entries: int = 0
    seconds: float = 0.0
    processes: int = 1
    cpu: str = ""
    up_to_date: bool = False
    failures: list[str] = field(default_factory=list)

    def summary(self) -> str:
        if self.up_to_date:
            return f"the kernels in {self.folder} were built from these sources: nothing to do (--force rebuilds)"
        text = (
            f"{self.entries} kernel signatures compiled for {self.cpu} in {self.seconds:.1f} s "
            f"({self.processes} processes), shipped in {self.folder}"
        )
        if self.failures:
            text += f"; {len(self.failures)} steps failed: " + "; ".join(self.failures)
        return text


def ship_kernels(
    jobs: int | None = None,
    into: str | os.PathLike[str] | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    force: bool = False,
) -> ShipReport:
    """Compile the warm-up's kernels for the portable CPU level in ``jobs`` processes (default:
    the CPUs) and store them in ``into`` (default: the installed package's ``_kernels`` folder,
    which a wheel or packed environment built afterwards carries). Replaces what was shipped;
    does nothing when it was built from these very sources, numba and Python (unless ``force``)."""
    from lazyscan import kernel_cache

    jobs = max(1, jobs or os.cpu_count() or 1)
    into = str(into or kernel_cache.SHIPPED)
    report = ShipReport(folder=into, processes=jobs, cpu=kernel_cache.PORTABLE_CPU[0])
    if not force and kernel_cache.shipped_is_current(into):
        report.up_to_date = True
        return report
    _check_writable(into)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="lazyscan-ship-") as built:
        if _run_build_processes(jobs, built, progress, report):
            kernel_cache.clear_shipped(into)
            report.entries = kernel_cache.pack_shipped(built, into)
            if not report.failures:
                kernel_cache.write_shipped_stamp(into, report.entries)
    report.seconds = time.perf_counter() - start
    return report


def _run_build_processes(
    jobs: int, built: str, progress: Callable[[int, int, str], None] | None, report: ShipReport
) -> bool:
    """``jobs`` processes, each compiling its share of the warm-up's steps for the portable CPU
    level into its own cache under ``built``; their progress lines drive ``progress``, their
    failures go into ``report``. True when every process ran to its end."""
    import json
    import subprocess
    import threading

    from lazyscan import kernel_cache

    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(kernel_cache.__file__)))
    done = [0] * jobs
    totals = [0] * jobs
    lock = threading.Lock()

    def follow(part: int, child: subprocess.Popen[str]) -> None:
        assert child.stdout is not None
        for line in child.stdout:
            if line.startswith("step "):
                _, at, total, what = line.rstrip("\n").split(" ", 3)
                with lock:
                    done[part], totals[part] = int(at), int(total)
                    if progress is not None:
                        progress(sum(done), sum(totals), what)
            elif line.startswith("{"):
                with lock:
                    report.failures.extend(json.loads(line).get("failures", []))

    with contextlib.ExitStack() as files:
        children = []
        for part in range(jobs):
            env = {
                **os.environ,
                **kernel_cache.portable_build_env(),
                "NUMBA_CACHE_DIR": os.path.join(built, str(part)),
                "PYTHONPATH": os.pathsep.join(filter(None, [package_parent, os.environ.get("PYTHONPATH")])),
            }
            command = [sys.executable, "-m", "lazyscan.scan.warmup", str(part), str(jobs)]
            errors = files.enter_context(tempfile.TemporaryFile(mode="w+"))  # a full pipe would stall it
            child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=errors, text=True)
            children.append((child, errors))
        readers = [threading.Thread(target=follow, args=(i, c), daemon=True) for i, (c, _) in enumerate(children)]
        for reader in readers:
            reader.start()
        finished = True
        for part, (child, errors) in enumerate(children):
            readers[part].join()
            if child.wait() != 0:
                finished = False
                errors.seek(0)
                tail = errors.read().strip()[-2000:]
                report.failures.append(f"build process {part} exited with {child.returncode}: {tail}")
    return finished


def _check_writable(into: str) -> None:
    """Fail before compiling when the shipped kernels could not be stored."""
    from lazyscan.errors import OptionError

    folder = Path(into)
    existing = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if existing is None or not os.access(existing, os.W_OK | os.X_OK):
        raise OptionError(
            f"lazyscan warmup --ship cannot write the kernels into {into}: {existing} is not writable; "
            "run it as the owner of the installation, or choose another folder with --into"
        )


def _build_part(part: int, parts: int) -> None:
    """One process of :func:`ship_kernels`: progress lines, then the report as JSON."""
    import json

    def say(done: int, total: int, what: str) -> None:
        print(f"step {done} {total} {what}", flush=True)

    report = warm_up(say, part, parts)
    print(json.dumps({"compiled": report.compiled, "failures": report.failures}), flush=True)


if __name__ == "__main__":
    _build_part(int(sys.argv[1]), int(sys.argv[2]))
