"""What a new process pays before its first answer: import, first query, compiled kernels.

Every case runs in a new process of this interpreter with its own numba cache
(``NUMBA_CACHE_DIR`` pointed at a fresh temporary folder: lazyscan's cache locator,
``lazyscan/kernel_cache.py``, then files every kernel under that folder, so the run neither
reads nor disturbs the checkout's cache). On TPC-H lineitem at the run's scale factor:

- an installation without shipped kernels (``LAZYSCAN_SHIPPED_KERNELS=0``), empty cache:
  ``import lazyscan`` alone; the seed query (``select * where l_comment = V``), a selective read
  (``select *`` of a key range of 1,000 orderkeys) and a key-filter scan (``l_orderkey`` in a
  key filter of about 1,000 keys), each first and second in one process, with the number of
  kernel signatures the first compiled (as ``lazyscan.scan.warmup.kernel_counts`` counts them,
  the count the warm-up's test uses) and the seconds spent loading cached ones;
- the seed query again in a new process on the cache the empty-cache seed process left
  ("cache present");
- the same three queries with the kernels ``lazyscan warmup --ship`` put into the package and an
  empty cache (not run, with the reason, when the package has none for the current sources);
- two processes started together on one shared empty cache, both the seed query: each one's
  first query and signatures compiled (the compile lock of ``lazyscan/kernel_cache.py`` should
  make them compile each signature once between them);
- Spark ``local[2]``: a new application (a new process creating its session) whose Python
  workers start with an empty cache, the seed query through ``lazyscan.spark.read`` collected,
  first and second (a new DataFrame each), with shipped kernels and without; signatures compiled
  are the entries the driver and the workers wrote into the empty cache; for comparison the
  same after a Python job that imports nothing (Spark's Python workers and the JVM's first job
  already started), and Spark's own reader (``force="spark"``), which compiles nothing;
- Polars and DuckDB answering the seed query in a new process (they compile nothing).

One repetition per case: an empty-cache case costs a whole compile (30-45 s at SF1). The
targets come from issue 36: without shipped kernels the first query at most 5 s, ``import
lazyscan`` under 0.5 s; with a cache present or shipped kernels the first query within 1.2x of
the second with 0 signatures compiled; Spark's first read within 2x of its second.

Run: ``python -m benchmarks run coldstart --sf 1`` (not part of ``all``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: issue 36's targets
EMPTY_CACHE_FIRST_S = 5.0
CACHE_PRESENT_RATIO = 1.2
IMPORT_S = 0.5
SPARK_RATIO = 2.0
#: processes sharing one cache: their compiled signatures together at most this times one
#: process's (each signature compiled once between them)
SHARED_COMPILE_RATIO = 1.1

CHILD_TIMEOUT_S = 900

# the child: times the import and two runs of one query, prints JSON on its last line
_CHILD = r"""
import json, sys, time
case = json.loads(sys.argv[1])
engine, query, path, value, sf = case["engine"], case["query"], case["path"], case["value"], case["sf"]
t0 = time.perf_counter()
if engine == "lazyscan":
    import lazyscan
elif engine == "polars":
    import polars as pl
elif engine == "duckdb":
    import duckdb
import_s = time.perf_counter() - t0
out = {"import_s": import_s, "started": time.time()}
if query != "import":
    if engine == "lazyscan":
        from numba.core import caching
        from lazyscan.kernel_cache import COMPILE_LOCK
        from lazyscan.scan.warmup import kernel_counts
        loading = [0.0]
        plain_load = caching.Cache.load_overload
        def timed_load(self, sig, target_context):
            t = time.perf_counter()
            try:
                return plain_load(self, sig, target_context)
            finally:
                loading[0] += time.perf_counter() - t
        caching.Cache.load_overload = timed_load
        if query == "seed":
            run = lambda: lazyscan.scan(path, where=lazyscan.col("l_comment") == value).to_table().num_rows
        elif query == "range":
            low = int(3_000_000 * sf)
            run = lambda: lazyscan.scan(path, where=f"l_orderkey BETWEEN {low} AND {low + 1000}").to_table().num_rows
        else:
            import numpy as np
            keys = np.arange(1, int(6_000_000 * sf) + 1, max(1, int(6_000 * sf)), dtype=np.int64)
            where = lazyscan.col("l_orderkey").isin_keys(lazyscan.key_filter(keys))
            run = lambda: lazyscan.scan(path, where=where).to_table().num_rows
    elif engine == "polars":
        run = lambda: pl.scan_parquet(path).filter(pl.col("l_comment") == value).collect().height
    else:
        con = duckdb.connect()
        run = lambda: con.execute("select * from read_parquet(?) where l_comment = ?", [path, value]).to_arrow_table().num_rows
    t1 = time.perf_counter()
    out["rows"] = run()
    out["first_s"] = time.perf_counter() - t1
    if engine == "lazyscan":
        out["compiled"], out["loaded"] = kernel_counts()
        out["load_s"] = loading[0]
        out["lock_wait_s"] = COMPILE_LOCK.waited
    t2 = time.perf_counter()
    run()
    out["second_s"] = time.perf_counter() - t2
print(json.dumps(out))
"""

# the Spark child: a new application on local[2], the seed query through lazyscan.spark.read
# twice (a new DataFrame each), then a probe of what the Python workers saw
_SPARK_CHILD = r"""
import glob, json, logging, os, sys, time
case = json.loads(sys.argv[1])
chosen = []
class Keep(logging.Handler):
    def emit(self, record):
        if record.getMessage().startswith("lazyscan.spark.read"):
            chosen.append(record.getMessage())
choose_log = logging.getLogger("lazyscan.spark")
choose_log.setLevel(logging.INFO)
choose_log.addHandler(Keep())
t0 = time.perf_counter()
from pyspark.sql import SparkSession
builder = SparkSession.builder.appName("lazyscan-coldstart")
for k, v in case["conf"].items():
    builder = builder.config(k, v)
spark = builder.getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
out = {"session_s": time.perf_counter() - t0}
t1 = time.perf_counter()
import lazyscan.spark as lspark
lspark.register(spark)
out["import_s"] = time.perf_counter() - t1
literal = "'" + case["value"].replace("'", "''") + "'"
where = f"l_comment = {literal}"
cache = os.environ["NUMBA_CACHE_DIR"]
entries = lambda: len(glob.glob(os.path.join(cache, "**", "*.nbc"), recursive=True))
run = lambda: len(lspark.read(spark, case["path"], where=where, force=case["force"]).collect())
if case["python_job_first"]:
    # a first Python job that imports nothing: starts Spark's Python workers and the JVM's jobs
    t = time.perf_counter()
    spark.range(0, 2, 1, 2).mapInArrow(lambda batches: batches, "id long").collect()
    out["python_job_s"] = time.perf_counter() - t
t2 = time.perf_counter()
lspark.last_profile()
out["rows"] = run()
out["first_s"] = time.perf_counter() - t2
out["compiled"] = entries()
# seconds the tasks spent inside lazyscan's scans (all tasks together)
out["first_scan_s"] = lspark.last_profile().timings.get("total", 0.0)
t3 = time.perf_counter()
run()
out["second_s"] = time.perf_counter() - t3
out["second_scan_s"] = lspark.last_profile().timings.get("total", 0.0)
out["compiled_after_second"] = entries()
out["chosen"] = chosen
from lazyscan.scan.warmup import kernel_counts
out["driver_compiled"], out["driver_loaded"] = kernel_counts()

def probe(batches):
    import os, sys
    import pyarrow as pa
    compiled = loaded = -1
    if "lazyscan" in sys.modules:
        from lazyscan.scan.warmup import kernel_counts
        compiled, loaded = kernel_counts()
    for _ in batches:
        pass
    yield pa.RecordBatch.from_pylist([{
        "pid": os.getpid(),
        "numba_cache_dir": os.environ.get("NUMBA_CACHE_DIR"),
        "shipped_kernels": os.environ.get("LAZYSCAN_SHIPPED_KERNELS"),
        "compiled": compiled,
        "loaded": loaded,
    }])

schema = "pid long, numba_cache_dir string, shipped_kernels string, compiled long, loaded long"
workers = spark.range(0, 2, 1, 2).mapInArrow(probe, schema).collect()
out["workers"] = sorted({tuple(r) for r in workers})
out["workers_see_cache"] = all(r["numba_cache_dir"] == cache for r in workers)
spark.stop()
print(json.dumps(out))
"""


@dataclass(frozen=True)
class Case:
    """One case: which engine answers which query, on which cache, in how many processes."""

    name: str
    engine: str  # "lazyscan", "spark", "polars" or "duckdb"
    query: str  # "import", "seed", "range" or "keys"
    #: "empty" (no shipped kernels either), "present" (the folder the empty-cache seed case
    #: filled), "shipped" (empty, with the package's shipped kernels) or "none"
    cache: str
    processes: int = 1
    #: Spark: the reader ``lazyscan.spark.read`` is forced to (None: its own choice)
    force: str | None = None
    #: Spark: run a Python job that imports nothing before the first read
    python_job_first: bool = False


CASES: tuple[Case, ...] = (
    Case("import lazyscan", "lazyscan", "import", "empty"),
    Case("seed query, empty cache", "lazyscan", "seed", "empty"),
    Case("seed query, cache present", "lazyscan", "seed", "present"),
    Case("key range, empty cache", "lazyscan", "range", "empty"),
    Case("key filter, empty cache", "lazyscan", "keys", "empty"),
    Case("seed query, shipped kernels", "lazyscan", "seed", "shipped"),
    Case("key range, shipped kernels", "lazyscan", "range", "shipped"),
    Case("key filter, shipped kernels", "lazyscan", "keys", "shipped"),
    Case("seed query, two processes at once, empty cache", "lazyscan", "seed", "empty", processes=2),
    Case("Spark local[2] seed read, shipped kernels", "spark", "seed", "shipped"),
    Case("Spark local[2] seed read, empty cache", "spark", "seed", "empty"),
    Case("Spark local[2] seed read, shipped kernels, after a Python job", "spark", "seed", "shipped",
         python_job_first=True),
    Case("Spark local[2] seed, Spark's own reader", "spark", "seed", "none", force="spark"),
    Case("seed query, polars", "polars", "seed", "none"),
    Case("seed query, duckdb", "duckdb", "seed", "none"),
)

#: the case whose compiled count is one process's, for the two-process case
SINGLE_SEED = "seed query, empty cache"


def case_env(case: Case, cache_dir: Path) -> dict[str, str]:
    """The environment of a case's process: its numba cache, and the shipped kernels switched
    off unless the case is about them."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir)}
    if case.cache == "shipped":
        env.pop("LAZYSCAN_SHIPPED_KERNELS", None)
    else:
        env["LAZYSCAN_SHIPPED_KERNELS"] = "0"
    if case.engine == "spark":
        env["PYSPARK_PYTHON"] = env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    return env


def _start(case: Case, arg: dict[str, Any], cache_dir: Path) -> subprocess.Popen[bytes]:
    code = _SPARK_CHILD if case.engine == "spark" else _CHILD
    return subprocess.Popen(
        [sys.executable, "-c", code, json.dumps(arg)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=case_env(case, cache_dir),
        cwd=Path(__file__).resolve().parent.parent,
    )


def _finish(child: subprocess.Popen[bytes], started: float) -> dict[str, Any]:
    try:
        stdout, stderr = child.communicate(timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        return {"error": f"timed out after {CHILD_TIMEOUT_S} s", "process_s": time.perf_counter() - started}
    wall = time.perf_counter() - started
    if child.returncode != 0:
        return {
            "error": f"exit code {child.returncode}: " + stderr.decode(errors="replace")[-2000:],
            "process_s": wall,
        }
    result: dict[str, Any] = json.loads(stdout.decode().strip().splitlines()[-1])
    result["process_s"] = wall
    return result


def run_case(
    case: Case, path: Path, value: str, sf: float, cache_dir: Path, spark_conf: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run one case in new processes with ``NUMBA_CACHE_DIR=cache_dir`` (all of them started
    together, on that one folder); its measurements with the process's wall seconds, or an
    ``error``. Several processes: ``processes`` holds each one's, and the case's own
    ``compiled`` their sum."""
    arg = {"engine": case.engine, "query": case.query, "path": str(path), "value": value, "sf": sf}
    if case.engine == "spark":
        arg.update(conf=spark_conf or {}, force=case.force, python_job_first=case.python_job_first)
    started = time.perf_counter()
    children = [_start(case, arg, cache_dir) for _ in range(case.processes)]
    results = [_finish(child, started) for child in children]
    if case.processes == 1:
        return results[0]
    failed = [r["error"] for r in results if "error" in r]
    if failed:
        return {"error": failed[0], "processes": results}
    return {
        "processes": results,
        "compiled": sum(r["compiled"] for r in results),
        "started_apart_s": max(r["started"] for r in results) - min(r["started"] for r in results),
    }


def shipped_kernels_missing() -> str | None:
    """Why this package's shipped kernels cannot serve the current sources (None: they can):
    none shipped, some shipped for older module contents, or a CPU without the portable level."""
    try:
        import lazyscan
        from lazyscan import kernel_cache
    except Exception as e:  # the lazyscan cases report the import failure themselves
        return f"lazyscan does not import ({type(e).__name__}: {e})"
    root = Path(kernel_cache.SHIPPED) / f"lazyscan-{lazyscan.__version__}"
    if not root.is_dir():
        return "the package ships no kernels: run `lazyscan warmup --ship`"
    package = Path(lazyscan.__file__).resolve().parent
    stale = []
    for folder in sorted(p for p in root.rglob("*-*") if p.is_dir() and any(p.glob("*.nbi"))):
        module, _, _ = folder.name.rpartition("-")
        source = package / folder.parent.relative_to(root) / f"{module}.py"
        current = kernel_cache.cache_folder(str(source), kernel_cache.SHIPPED)
        if current is None or not os.path.isdir(current):
            stale.append(str(source.relative_to(package)))
    if stale:
        stale = sorted(set(stale))
        return f"the shipped kernels are for older sources of {', '.join(stale)}: run `lazyscan warmup --ship`"
    is_current = getattr(kernel_cache, "shipped_is_current", None)
    if is_current is not None and not is_current(kernel_cache.SHIPPED):
        return (
            "the shipped kernels were built from other sources, numba or Python than these (their "
            "built-*.json stamp differs): run `lazyscan warmup --ship`"
        )
    if not kernel_cache.host_runs_portable_code():
        return f"this CPU lacks {kernel_cache.PORTABLE_CPU[0]}, the level the kernels are shipped for"
    return None


def shipped_stamp() -> str | None:
    """What the package's shipped kernels were last built from, with when (None: no record):
    a run compares it before and after, since a rebuild meanwhile changes what it measures."""
    try:
        from lazyscan import kernel_cache
    except Exception:
        return None
    stamps = sorted(Path(kernel_cache.SHIPPED).glob("lazyscan-*/built-*.json"))
    return "; ".join(f"{p.read_text().strip()} at {p.stat().st_mtime:.0f}" for p in stamps) or None


def spark_missing(ctx: Any) -> str | None:
    """Why the Spark cases cannot run here (None: they can)."""
    engines = getattr(ctx, "engines", None)
    if engines is not None and not any(getattr(e, "name", "").startswith("spark") for e in engines):
        return "no Spark engine in this run (--no-spark or --engines)"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "Java not found: Spark needs Java 17 (make java)"
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed"
    return None


def spark_conf() -> dict[str, str]:
    """A new local[2] application configured as the suite's Spark sessions are (quiet logs,
    no UI)."""
    from benchmarks.engines import SPARK_CONF, _log4j_file

    return {
        **SPARK_CONF,
        "spark.master": "local[2]",
        "spark.ui.enabled": "false",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{_log4j_file()}",
    }


def verdict(case: Case, m: dict[str, Any], measured: dict[str, dict[str, Any]] | None = None) -> tuple[str, bool | None]:
    """Issue 36's target for a case and whether the measurement ``m`` meets it (None: no
    target, or nothing measured). ``measured``: every case's, for the targets of the
    two-process case (one process's compiled count)."""
    if "error" in m or "skipped" in m:
        return "", None
    if case.query == "import":
        return f"import < {IMPORT_S:g} s", m["import_s"] < IMPORT_S
    if case.engine == "spark" and case.force != "spark":
        return f"first ≤ {SPARK_RATIO:g}x second", m["first_s"] <= SPARK_RATIO * m["second_s"]
    if case.engine != "lazyscan":
        return "", None
    if case.processes > 1:
        single = (measured or {}).get(SINGLE_SEED, {}).get("compiled")
        if single is None:
            return "compiled together ≈ one process's", None
        limit = SHARED_COMPILE_RATIO * single
        return f"compiled together ≤ {SHARED_COMPILE_RATIO:g}x one process's ({single})", m["compiled"] <= limit
    if case.cache in ("present", "shipped"):
        ok = m["first_s"] <= CACHE_PRESENT_RATIO * m["second_s"] and m.get("compiled") == 0
        return f"first ≤ {CACHE_PRESENT_RATIO:g}x second, 0 compiled", ok
    return f"first ≤ {EMPTY_CACHE_FIRST_S:g} s", m["first_s"] <= EMPTY_CACHE_FIRST_S


def _row(name: str, m: dict[str, Any], target: str, verdict_text: str, import_only: bool = False) -> dict[str, Any]:
    if import_only:
        first, second = m.get("import_s"), None
    else:
        first, second = m.get("first_s"), m.get("second_s")
    return {
        "case": name,
        "first_s": first,
        "second_s": second,
        "ratio": first / second if first is not None and second else None,
        "compiled": m.get("compiled"),
        "loaded": m.get("loaded"),
        "target": target,
        "verdict": verdict_text,
    }


def table_rows(cases: Sequence[Case], measured: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per case (and one per process of a several-process case, before the case's own
    row): first and second seconds, their ratio, signatures compiled and loaded, target,
    met/missed (``n/a`` without a target, ``not run: why`` for a case left out)."""
    rows = []
    for case in cases:
        m = measured.get(case.name, {"error": "not run"})
        target, met = verdict(case, m, measured)
        if "skipped" in m:
            text = f"not run: {m['skipped']}"
        elif "error" in m:
            text = "error"
        else:
            text = {True: "met", False: "missed", None: "n/a"}[met]
        for i, proc in enumerate(m.get("processes", ())):
            rows.append(_row(f"{case.name}: process {i + 1}", proc, "", "error" if "error" in proc else ""))
        if case.processes > 1:
            rows.append({**_row(f"{case.name}: both", {}, target, text), "compiled": m.get("compiled")})
        else:
            rows.append(_row(case.name, m, target, text, import_only=case.query == "import"))
    return rows


def markdown_table(rows: Sequence[dict[str, Any]]) -> str:
    """The rows of :func:`table_rows` as a markdown table."""

    def num(v: Any, fmt: str) -> str:
        return "" if v is None else format(v, fmt)

    lines = [
        "| case | first s | second s | ratio | signatures compiled (loaded) | target | |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    for r in rows:
        compiled = num(r["compiled"], "d")
        if compiled and r.get("loaded"):
            compiled += f" ({r['loaded']})"
        lines.append(
            f"| {r['case']} | {num(r['first_s'], '.2f')} | {num(r['second_s'], '.2f')} | "
            f"{num(r['ratio'], '.1f')}{'x' if r['ratio'] is not None else ''} | {compiled} | "
            f"{r['target']} | {r['verdict']} |"
        )
    return "\n".join(lines)


def scenario(ctx: Any) -> Any:
    """The ``coldstart`` scenario of ``python -m benchmarks run coldstart`` (not part of ``all``)."""
    from benchmarks.data import ensure_tpch, pick_query_value, sql_string
    from benchmarks.scenarios import ScenarioResult
    from benchmarks.ui import console

    sf = ctx.seed_sf
    dataset = ensure_tpch(sf, data_dir=ctx.data_dir, progress=ctx.progress)
    value = pick_query_value(dataset, target=ctx.sizes.value_target)
    no_shipped = shipped_kernels_missing()
    stamp_before = shipped_stamp()
    no_spark = spark_missing(ctx)
    conf = spark_conf() if no_spark is None else None
    measured: dict[str, dict[str, Any]] = {}
    loads = []
    with tempfile.TemporaryDirectory(prefix="lazyscan-coldstart-") as tmp:
        filled = Path(tmp) / "seed"  # the empty-cache seed case fills it, the cache-present case reads it
        for i, case in enumerate(CASES):
            if case.cache == "shipped" and no_shipped is not None:
                measured[case.name] = {"skipped": no_shipped}
                continue
            if case.engine == "spark" and no_spark is not None:
                measured[case.name] = {"skipped": no_spark}
                continue
            if case.engine == "lazyscan" and case.query == "seed" and case.cache in ("empty", "present") and case.processes == 1:
                cache_dir = filled
            else:
                cache_dir = Path(tmp) / f"case{i}"
            console.print(f"  coldstart: {case.name} …")
            measured[case.name] = run_case(case, dataset.lineitem, value.value, sf, cache_dir, conf)
            if hasattr(os, "getloadavg"):
                loads.append(os.getloadavg()[0])
    stamp_after = shipped_stamp()
    rebuilt = stamp_after != stamp_before
    rows = table_rows(CASES, measured)
    table = markdown_table(rows)
    for line in table.splitlines():
        console.print(f"  {line}", markup=False, highlight=False, soft_wrap=True)
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    load_text = (
        f"1-minute load average after each case {min(loads):.1f}–{max(loads):.1f}; at the end "
        + ", ".join(f"{x:.1f}" for x in load)
        if load and loads
        else "load average n/a"
    )
    res = ScenarioResult(
        name="coldstart",
        title=f"Cold start: a new process's first query, TPC-H SF{sf:g} lineitem",
        description=(
            "Each case new processes with a new empty numba cache (NUMBA_CACHE_DIR a fresh folder), one "
            "repetition. Without shipped kernels (LAZYSCAN_SHIPPED_KERNELS=0): `import lazyscan`; the seed query "
            f"`select * where l_comment = {sql_string(value.value)}` ({value.rows} rows), a key range (`select *`, "
            "1,000 orderkeys) and a key-filter scan (~1,000 orderkeys), first and second in one process, with the "
            "kernel signatures the first compiled (and loaded from a cache); the seed query again in a new process "
            "on the cache the first seed process left (cache present). The same three queries with the kernels "
            "`lazyscan warmup --ship` put into the package (shipped kernels). Two processes started together on one "
            "empty cache, both the seed query. Spark local[2]: a new application whose Python workers start on an "
            "empty cache, the seed query through `lazyscan.spark.read(spark, path, where=...)` collected, first and "
            "second (a new DataFrame each), with shipped kernels and without; its signatures compiled are the "
            "entries the driver and the workers wrote into the cache; for comparison the same with a Python job "
            "that imports nothing run first (Spark's Python workers and the JVM's first job already started), and "
            "Spark's own reader (`force='spark'`). Polars and DuckDB on the seed query. Targets "
            f"from issue 36. {load_text}; another session may share the machine."
            + (" The shipped kernels were rebuilt during the run: the shipped cases may have seen either build." if rebuilt else "")
            + "\n\n"
            + table
        ),
        params={
            "sf": sf,
            "value": value.value,
            "value_rows": value.rows,
            "repetitions": 1,
            "python": sys.executable,
            "shipped_kernels": no_shipped or "present",
            "shipped_stamp": stamp_before,
            "shipped_rebuilt_during_run": rebuilt,
            "spark": no_spark or "local[2]",
        },
        chart={"kind": "none"},
    )
    res.derived["coldstart"] = {"rows": rows, "measured": measured}
    res.derived["load_average"] = list(load) if load else None
    res.derived["load_after_each_case"] = loads
    seed_rows = set()
    for name, m in measured.items():
        if "seed" in name:
            for one in m.get("processes", [m]):
                if "rows" in one:
                    seed_rows.add(one["rows"])
    res.derived["rows_agree"] = len(seed_rows) == 1
    errors = [name for name, m in measured.items() if "error" in m]
    if errors:
        res.status = "error: " + ", ".join(errors)
        res.extra = {name: measured[name]["error"] for name in errors}
    return res
