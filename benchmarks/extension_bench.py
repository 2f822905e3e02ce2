"""Transparent mode in Spark: queries as written, with lazyscan's extension on against off.

One Spark ``local[2]`` session started with ``lazyscan.spark.configure(builder)`` and
``lazyscan.spark.enable``; the extension is switched on and off per run with the session setting
``spark.lazyscan.enabled`` (read each time a query is optimized), the two taking turns run by run
(on, off, off, on, ...), each run building its DataFrame anew. Two parts:

1. **TPC-H**: the 22 queries (``benchmarks.tpch_queries``) as SQL over temp views of
   ``spark.read.parquet`` of the eight tables at the run's scale factor (``ensure_tpch``,
   generated where missing). Per query: the median on/off ratio and its range over the runs
   (min/max .. max/min), the reader the rule picked (``lazyscan`` when ``lazyscan(`` is in the
   executed plan), and whether the rows agree. Then each query is planned again on and off
   (its DataFrame built anew, up to the executed plan), taking turns, for the planning time
   the extension adds. Totals on and off, and the targets of issue 38: every query at most
   1.05x Spark's time, those that keep Spark's reader with its plan and at most 0.05 s more
   planning, the total no slower, the selective ones (Q6, Q12, Q14, Q15, Q17, Q19, Q20) faster.
2. **The seed pair** (Q-A ``select * from lineitem where l_comment = V``, Q-B ``select
   l_orderkey ...``, V as the ``seed`` scenario picks it) through plain
   ``spark.read.parquet(p).where(...)`` with the extension on, off, and through
   ``lazyscan.spark.read(..., force="lazyscan")`` (the route that exists without the extension).
   Factors: off / on and off / read. The peak resident memory of each Python worker (VmHWM of
   every Python process under Spark's JVM, reset before and sampled during one extra, untimed
   run per reader and query).

Run: ``python -m benchmarks run extension --sf N`` (reports ``reports/extension-sf{N}-<stamp>.json``
and ``.md``). With ``--quick``: SF 0.01 and one timed run after the warm-up.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import hashlib
import os
import re
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.data import TPCH_TABLES, ensure_tpch, pick_query_value, sf_label
from benchmarks.engines import (
    Engine,
    EngineUnavailable,
    Query,
    QueryResult,
    _profile_dict,
    _timed,
    run_queries,
    settle_spark,
)

SELECTIVE = (6, 12, 14, 15, 17, 19, 20)
"""The TPC-H queries issue 38 expects faster with the extension on."""
#: the session setting of key filters from joins (``LazyScanRule.KEY_FILTERS``)
KEY_FILTERS_CONF = "spark.lazyscan.keyFilter.enabled"

MAX_RATIO = 1.05
#: the most planning a query that keeps Spark's reader may add with the extension on (seconds)
PLANNING_SLACK_S = 0.05
#: planning runs per query and mode (the first, which fills the session's caches, left out)
PLANNING_REPS = 6
"""The most any query may take with the extension on, as a multiple of its time off."""

TPCH_BUDGET_S = 900.0
"""Time for the timed runs of one TPC-H query on both sides: fewer runs beyond it."""

SEED_BUDGET_S = 300.0
"""The same for the seed pair (all readers and both queries)."""

RSS_POLL_S = 0.05
"""Interval at which the Python workers' peak memory is sampled during the memory runs."""

MODES = {
    "on": "Spark, extension on",
    "off": "Spark, extension off",
    "read": "Spark lazyscan.spark.read",
}
"""The readers: the extension on or off over ``spark.read.parquet``; ``lazyscan.spark.read``."""


@dataclass(frozen=True)
class SqlQuery(Query):
    """A query given as SQL text over the session's temp views (``paths`` name the data)."""

    text: str = ""


# --------------------------------------------------------------------------- the session


def extension_spark() -> Any:
    """The suite's shared ``local[2]`` session, started with lazyscan's extension configured and
    the data source registered. Raises :class:`EngineUnavailable` when a session without the
    extension already runs in this process (the extension is a static setting)."""
    from benchmarks import engines

    if engines._spark_session is None:
        from pyspark import SparkContext

        if SparkContext._active_spark_context is None:
            _start_extension_session()
    spark = engines.get_spark()  # the session started above, now the suite's shared one
    from lazyscan.errors import OptionError
    from lazyscan.spark import enable

    try:
        enable(spark)
    except OptionError as e:
        raise EngineUnavailable(
            "a Spark session without lazyscan's extension runs in this process; run the extension "
            f"scenario on its own (python -m benchmarks run extension): {e}"
        ) from e
    return spark


def _start_extension_session() -> None:
    from benchmarks.engines import SPARK_CONF, _log4j_file

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    import warnings

    warnings.filterwarnings("ignore", category=FutureWarning, module="pyspark.*")
    from pyspark.sql import SparkSession

    import lazyscan.spark

    builder = SparkSession.builder.appName("lazyscan-benchmarks-extension").config(
        "spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{_log4j_file()}"
    )
    for k, v in SPARK_CONF.items():
        builder = builder.config(k, v)
    lazyscan.spark.configure(builder).getOrCreate()


# --------------------------------------------------------------------------- rows


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.9g}"
    if isinstance(v, decimal.Decimal):
        return f"{v:.6f}"
    if isinstance(v, (dt.date, dt.datetime)):
        return v.isoformat()
    return repr(v)


def rows_digest(rows: Sequence[Any]) -> str:
    """A digest of a result's rows, in any order: floats to 9 significant digits (sums of
    doubles may add up in another order), decimals to 6 places."""
    lines = sorted("\x1f".join(_cell(v) for v in tuple(r)) for r in rows)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def plan_digest(plan: str) -> str:
    """A digest of an executed plan's text as the optimizer left it (of an adaptive plan, its
    initial plan: the final one changes from run to run with the order stages finish in), with
    expression, plan and stage ids left out: two plans with the same digest run the same
    operators on the same columns."""
    parts = plan.split("== Initial Plan ==")
    text = (parts[1] if len(parts) > 1 else parts[0]).strip()
    text = re.sub(r"#\d+L?", "#", text)
    text = re.sub(r"plan_id=\d+", "plan_id=", text)
    text = re.sub(r"\*\(\d+\)", "*()", text)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def readers_in_plan(plan: str) -> dict[str, int]:
    """Scans in an executed plan's text: lazyscan's (``lazyscan(``) and Spark's Parquet scans
    (``Scan parquet``, ``FileScan parquet`` included); of an adaptive plan, the final plan's."""
    final = plan.split("== Initial Plan ==")[0]
    return {"lazyscan": final.count("lazyscan("), "parquet": final.count("Scan parquet ")}


# --------------------------------------------------------------------------- worker memory


def _proc_stat(pid: int | str) -> tuple[int, str, int] | None:
    """(parent pid, command name, CPU ticks used) of a process, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    head, _, tail = text.rpartition(")")
    fields = tail.split()  # from field 3 (state) on: ppid is field 4, utime 14, stime 15
    if len(fields) < 13:
        return None
    return int(fields[1]), head.partition("(")[2], int(fields[11]) + int(fields[12])


def python_workers(root: int | None = None) -> dict[int, str]:
    """The Python processes under the JVMs started from ``root`` (this process): pid -> role
    (``daemon``, ``worker`` forked by the daemon, or the module a worker was started with)."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        found = _proc_stat(entry)
        if found is not None:
            children.setdefault(found[0], []).append(int(entry))
            names[int(entry)] = found[1]
    out: dict[int, str] = {}
    stack = [(root, False)]
    while stack:
        pid, under_jvm = stack.pop()
        for child in children.get(pid, []):
            name = names.get(child, "")
            if under_jvm and name.startswith("python"):
                out[child] = _role(child, names.get(pid, ""))
            stack.append((child, under_jvm or name == "java"))
    return out


def _role(pid: int, parent: str) -> str:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "python"
    args = [a.decode(errors="replace") for a in argv if a]
    module = args[args.index("-m") + 1] if "-m" in args[:-1] else "python"
    if module == "pyspark.daemon":
        return "daemon" if parent == "java" else "worker"
    return module


def _status_bytes(pid: int, key: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


class WorkerMemory:
    """Peak resident memory of Spark's Python workers while a block runs. Each worker's high
    water mark (VmHWM) is reset first (``/proc/<pid>/clear_refs``), so it starts at what the
    worker holds now; it is then sampled every ``RSS_POLL_S`` seconds, so a worker that exits
    before the end counts too. Only workers that used CPU during the block (or started in it)
    are reported: an idle worker keeps what earlier queries left it."""

    def __init__(self, poll_s: float = RSS_POLL_S) -> None:
        self.poll_s = poll_s
        self.peaks: dict[int, int] = {}
        self.roles: dict[int, str] = {}
        self.start_rss: dict[int, int | None] = {}
        self.start_cpu: dict[int, int] = {}
        self.cpu: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        for pid, role in python_workers().items():
            peak, stat = _status_bytes(pid, "VmHWM"), _proc_stat(pid)
            if peak is None or stat is None:
                continue
            self.peaks[pid] = max(self.peaks.get(pid, 0), peak)
            self.roles.setdefault(pid, role)
            self.cpu[pid] = stat[2]

    def _loop(self) -> None:
        while not self._stop.wait(self.poll_s):
            self._sample()

    def __enter__(self) -> WorkerMemory:
        for pid in python_workers():
            with contextlib.suppress(OSError):
                Path(f"/proc/{pid}/clear_refs").write_text("5")
            stat = _proc_stat(pid)
            if stat is not None:
                self.start_cpu[pid] = stat[2]
                self.start_rss[pid] = _status_bytes(pid, "VmRSS")
        self._thread = threading.Thread(target=self._loop, name="worker-memory", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()

    def ran(self, pid: int) -> bool:
        """Whether worker ``pid`` used CPU during the block (or started in it)."""
        return pid not in self.start_cpu or self.cpu.get(pid, 0) > self.start_cpu[pid]

    def summary(self) -> dict[str, Any]:
        """The workers that ran (largest peak first): role, peak bytes, bytes held at the
        start (None: started during the block) and the growth; the largest peak and growth of
        those that ran tasks (the daemon only forks them); how many stayed idle."""
        order = sorted((pid for pid in self.peaks if self.ran(pid)), key=lambda pid: -self.peaks[pid])
        workers: list[dict[str, Any]] = []
        for pid in order:
            start = self.start_rss.get(pid)
            workers.append({"pid": pid, "role": self.roles[pid], "peak_rss_bytes": self.peaks[pid],
                            "start_rss_bytes": start,
                            "growth_bytes": None if start is None else self.peaks[pid] - start})
        tasks = [w for w in workers if w["role"] != "daemon"]
        growths = [int(w["growth_bytes"]) for w in tasks if w["growth_bytes"] is not None]
        return {
            "workers": workers,
            "max_worker_peak_rss_bytes": max((int(w["peak_rss_bytes"]) for w in tasks), default=None),
            "max_worker_growth_bytes": max(growths, default=None),
            "idle_workers": len(self.peaks) - len(workers),
        }


# --------------------------------------------------------------------------- the engine


class ExtensionEngine(Engine):
    """One reader of the scenario (``MODES``) on the extension's session. Queries are
    ``SqlQuery`` (SQL over the temp views) or a plain ``Query`` (``spark.read.parquet`` of its
    path, filtered, its columns selected; ``read``: ``lazyscan.spark.read``). The setting
    ``spark.lazyscan.enabled`` is set before each run, untimed. The first run of each query
    keeps its rows' digest and the scans of its executed plan."""

    def __init__(self, mode: str) -> None:
        super().__init__()
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; use one of {', '.join(MODES)}")
        self.mode = mode
        self.name = f"extension-{mode}"
        self.label = MODES[mode]
        self.digests: dict[str, str] = {}
        self.readers: dict[str, dict[str, int]] = {}
        self.plans: dict[str, str] = {}
        #: per query, the seconds of each run spent building the DataFrame (before the action):
        #: ``spark.read.parquet``'s listing and schema inference, or ``read``'s planning
        self.built: dict[str, list[float]] = {}
        self.spark: Any = None

    def setup(self) -> None:
        self.spark = extension_spark()

    def settle(self) -> None:
        settle_spark(self.spark)

    def frame(self, query: Query) -> Any:
        """The query's DataFrame, built anew."""
        if isinstance(query, SqlQuery):
            return self.spark.sql(query.text)
        columns = list(query.columns) if query.columns else None
        if self.mode == "read":
            from lazyscan.spark import read

            return read(self.spark, query.paths[0], columns, query.where, force="lazyscan")
        df = self.spark.read.parquet(*query.paths)
        if query.where:
            df = df.where(query.where)
        return df.select(*columns) if columns else df

    def switch(self) -> None:
        """Sets ``spark.lazyscan.enabled``: true for ``on``, false otherwise (``read`` needs no rule)."""
        from lazyscan.spark.extension import ENABLED_CONF

        self.spark.conf.set(ENABLED_CONF, "true" if self.mode == "on" else "false")

    def _run(self, query: Query) -> tuple[int, float]:
        from lazyscan.spark import last_profile

        self.switch()
        last_profile()  # what earlier runs left
        df, built = _timed(lambda: self.frame(query))
        rows, collected = _timed(df.collect)
        seconds = built + collected
        self.built.setdefault(query.name, []).append(built)
        profile = last_profile()
        self.last_profile = _profile_dict(profile) if self.mode != "off" else None
        if query.name not in self.digests:
            self.digests[query.name] = rows_digest(rows)
            plan = str(df._jdf.queryExecution().executedPlan().toString())
            self.readers[query.name] = readers_in_plan(plan)
            self.plans[query.name] = plan_digest(plan)
        return len(rows), seconds


def check_rows(results: Sequence[QueryResult], engines: Sequence[ExtensionEngine]) -> None:
    """Mark a query whose readers returned different rows (by digest), not only counts."""
    for r in results:
        digests = {e.name: e.digests.get(r.query.name) for e in engines}
        found = {d for d in digests.values() if d is not None}
        if len(found) > 1:
            r.agree = False
            r.verdict = "ROWS DIFFER: " + ", ".join(f"{k}={v}" for k, v in digests.items())


def memory_runs(engines: Sequence[ExtensionEngine], queries: Sequence[Query]) -> dict[str, dict[str, Any]]:
    """One untimed run of each query on each engine under :class:`WorkerMemory`:
    query -> engine -> the memory summary."""
    out: dict[str, dict[str, Any]] = {}
    for q in queries:
        for e in engines:
            try:
                with WorkerMemory() as memory:
                    e.run(q)
                out.setdefault(q.name, {})[e.name] = memory.summary()
            except Exception as err:
                out.setdefault(q.name, {})[e.name] = {"error": f"{type(err).__name__}: {str(err)[:200]}"}
            e.settle()
    return out


def planning_runs(on: ExtensionEngine, off: ExtensionEngine, queries: Sequence[SqlQuery],
                  reps: int = PLANNING_REPS) -> dict[str, dict[str, list[float]]]:
    """Seconds to plan each query (its DataFrame built anew, up to the executed plan; nothing
    runs but what planning runs), on and off taking turns: query -> mode -> seconds, the first
    run of each left out (it fills the session's caches, as the timed runs' warm-up does)."""
    out: dict[str, dict[str, list[float]]] = {}
    for q in queries:
        times: dict[str, list[float]] = {"on": [], "off": []}
        for i in range(reps):
            for engine in (on, off) if i % 2 == 0 else (off, on):
                engine.switch()
                started = time.perf_counter()
                engine.frame(q)._jdf.queryExecution().executedPlan()
                times[engine.mode].append(time.perf_counter() - started)
        out[q.name] = {mode: t[1:] for mode, t in times.items()}
    return out


# --------------------------------------------------------------------------- the math


def _times(r: QueryResult, engine: str) -> list[float]:
    m = r.by_engine().get(engine)
    return list(m.times) if m is not None and m.ok and m.times else []


def ratio_range(a: Sequence[float], b: Sequence[float]) -> dict[str, float] | None:
    """median(a) / median(b), and its range over the runs: min(a)/max(b) .. max(a)/min(b)."""
    if not a or not b:
        return None
    return {
        "median": statistics.median(a) / statistics.median(b),
        "low": min(a) / max(b),
        "high": max(a) / min(b),
    }


def tpch_summary(
    results: Sequence[QueryResult],
    readers: dict[str, dict[str, int]],
    off_readers: dict[str, dict[str, int]] | None = None,
    plans: tuple[dict[str, str], dict[str, str]] | None = None,
    planning: dict[str, dict[str, list[float]]] | None = None,
) -> dict[str, Any]:
    """Per query: on and off medians, on/off (range), the reader the rule picked (``readers``:
    the scans of the plans with the extension on; ``off_readers``: off, where no lazyscan scan
    may appear), whether the executed plans on and off are the same (``plans``: their
    :func:`plan_digest` on and off); totals and
    the targets of issue 38 (each at most ``MAX_RATIO``, the total no slower, the ``SELECTIVE``
    ones faster). ``planning``: per query, the planning seconds on and off (:func:`planning_runs`);
    a query that keeps Spark's reader should run the same plan as off and spend at most
    ``PLANNING_SLACK_S`` more planning it (the target that the machine's spread cannot hide)."""
    per: dict[str, Any] = {}
    for r in results:
        on, off = _times(r, "extension-on"), _times(r, "extension-off")
        scans = readers.get(r.query.name)
        off_scans = (off_readers or {}).get(r.query.name, {})
        reader = None if scans is None else ("lazyscan" if scans.get("lazyscan") else "spark")
        entry: dict[str, Any] = {
            "on_s": statistics.median(on) if on else None,
            "off_s": statistics.median(off) if off else None,
            "ratio": ratio_range(on, off),
            "reader": reader,  # None: no run with the extension on finished
            "scans": scans or {},
            "off_lazyscan_scans": off_scans.get("lazyscan"),
            # None: not compared; True: the extension changed nothing Spark runs (only planning)
            "plan_as_off": None if plans is None or r.query.name not in plans[0] or r.query.name not in plans[1]
            else plans[0][r.query.name] == plans[1][r.query.name],
            "rows_agree": r.agree if on and off else None,  # None: not compared
        }
        planned = (planning or {}).get(r.query.name, {})
        if planned.get("on") and planned.get("off"):
            entry["planning_on_s"] = statistics.median(planned["on"])
            entry["planning_off_s"] = statistics.median(planned["off"])
            entry["planning_delta_s"] = entry["planning_on_s"] - entry["planning_off_s"]
        per[r.query.name] = entry
    timed = [e for e in per.values() if e["ratio"] is not None]
    total_on = sum(e["on_s"] for e in timed)
    total_off = sum(e["off_s"] for e in timed)
    over = [name for name, e in per.items() if e["ratio"] is not None and e["ratio"]["median"] > MAX_RATIO]
    selective = [f"Q{n}" for n in SELECTIVE if f"Q{n}" in per]
    not_faster = [name for name in selective if per[name]["ratio"] is None or per[name]["ratio"]["median"] >= 1]
    complete = len(timed) == len(per) and bool(per)
    kept = [name for name, e in per.items() if e["reader"] == "spark"]
    # a query that kept Spark's reader: another plan than off, or planning over the slack
    kept_over = [name for name in kept if per[name]["plan_as_off"] is False
                 or per[name].get("planning_delta_s", 0.0) > PLANNING_SLACK_S]
    kept_measured = all("planning_delta_s" in per[name] and per[name]["plan_as_off"] is not None for name in kept)
    return {
        "queries": per,
        "total_on_s": total_on,
        "total_off_s": total_off,
        "total_ratio": total_on / total_off if total_off else None,
        "targets": {
            "each_at_most": {"limit": MAX_RATIO, "met": complete and not over, "over": over,
                             "over_with_plan_as_off": [name for name in over if per[name]["plan_as_off"]]},
            "kept_as_off": {"slack_s": PLANNING_SLACK_S, "queries": kept, "over": kept_over,
                            "met": (complete and kept_measured and not kept_over) if kept else None},
            "total_no_slower": {"met": complete and total_on <= total_off},
            # None: none of the selective queries ran
            "selective_faster": {"queries": selective, "met": (complete and not not_faster) if selective else None,
                                 "not_faster": not_faster},
        },
        "lazyscan_queries": [name for name, e in per.items() if e["reader"] == "lazyscan"],
        "rows_agree": all(e["rows_agree"] is not False for e in per.values()),
    }


def seed_summary(
    results: Sequence[QueryResult],
    memory: dict[str, dict[str, Any]],
    built: dict[str, dict[str, list[float]]] | None = None,
) -> dict[str, Any]:
    """Per seed query: each reader's median, the factors off / on and off / read (above 1:
    faster than Spark's reader) with their ranges, whether the extension reaches the factor of
    ``lazyscan.spark.read``, and the largest peak memory of a Python worker per reader.

    ``built``: per engine and query, the seconds spent building each run's DataFrame. With the
    extension on, that is ``spark.read.parquet``'s listing and schema inference, which
    ``lazyscan.spark.read`` does not do, while the rule does ``read``'s planning when the query
    runs: ``floor_s`` (``read`` plus that build) is the least the extension can take, and
    ``factor_floor`` the factor it would get there."""
    out: dict[str, Any] = {}
    for r in results:
        on, off, read = (_times(r, f"extension-{m}") for m in ("on", "off", "read"))
        by_on, by_read = ratio_range(off, on), ratio_range(off, read)
        built_on = (built or {}).get("extension-on", {}).get(r.query.name)
        built_s = statistics.median(built_on) if built_on else None
        floor_s = statistics.median(read) + built_s if read and built_s is not None else None
        runs = memory.get(r.query.name, {})
        peaks = {engine: m.get("max_worker_peak_rss_bytes") for engine, m in runs.items()}
        growths = {engine: m.get("max_worker_growth_bytes") for engine, m in runs.items()}
        out[r.query.name] = {
            "on_s": statistics.median(on) if on else None,
            "off_s": statistics.median(off) if off else None,
            "read_s": statistics.median(read) if read else None,
            "factor_on": by_on,
            "factor_read": by_read,
            "reaches_read": (by_on["median"] >= by_read["median"]) if by_on and by_read else None,
            "built_on_s": built_s,
            "floor_s": floor_s,
            "factor_floor": statistics.median(off) / floor_s if off and floor_s else None,
            "max_worker_peak_rss_bytes": peaks,
            "max_worker_growth_bytes": growths,
            "rows_agree": r.agree if on and off else None,
        }
    return out


# --------------------------------------------------------------------------- scenario


def tables_in(text: str) -> tuple[str, ...]:
    """The TPC-H tables a query's SQL text names."""
    words = set(re.findall(r"[a-z]+", text.lower()))
    return tuple(t for t in TPCH_TABLES if t in words)


def tpch_queries(sf: float, numbers: Sequence[int] | None = None) -> list[SqlQuery]:
    """The TPC-H queries (all 22 when ``numbers`` is None, else ``numbers``, possibly none) as
    :class:`SqlQuery` over the temp views; ``paths`` names the tables each reads."""
    from benchmarks.tpch_queries import QUERIES, query

    chosen = sorted(QUERIES) if numbers is None else list(numbers)
    texts = {n: query(n, sf) for n in chosen}
    return [
        SqlQuery(f"Q{n}", tables_in(text), None, None, group="TPC-H", x=f"Q{n}", text=text)
        for n, text in texts.items()
    ]


def seed_queries(path: Path, value: Any) -> list[Query]:
    """Q-A and Q-B of the seed question over ``spark.read.parquet`` of lineitem."""
    from benchmarks.scenarios import seed_queries as seed_pair

    return [
        Query(q.name, q.paths, q.columns, q.where, group="seed pair", x=q.x, expected_rows=q.expected_rows)
        for q in seed_pair(path, value)
    ]


def create_views(spark: Any, dataset: Any, tables: Sequence[str]) -> None:
    """Temp views of TPC-H tables over ``spark.read.parquet``."""
    for table in tables:
        spark.read.parquet(str(dataset.table(table))).createOrReplaceTempView(table)


def select_queries(spec: str | None) -> tuple[list[int] | None, bool]:
    """``--queries`` text (``6,12-14,seed``) as (TPC-H query numbers, seed pair wanted). None:
    every query and the seed pair; an empty list: no TPC-H query."""
    if spec is None or not spec.strip():
        return None, True
    from benchmarks.tpch_queries import QUERIES

    numbers: list[int] = []
    seed = False
    for part in (p.strip().lower().lstrip("q") for p in spec.split(",")):
        if part == "seed":
            seed = True
            continue
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise ValueError(f"--queries: {part!r} is neither a TPC-H query number, a range a-b, nor 'seed'")
        lo, hi = int(m[1]), int(m[2] or m[1])
        bad = [n for n in range(lo, hi + 1) if n not in QUERIES]
        if bad or lo > hi:
            raise ValueError(f"--queries: TPC-H has queries 1 to 22, not {part!r}")
        numbers.extend(n for n in range(lo, hi + 1) if n not in numbers)
    return numbers, seed


def scenario(ctx: Any, numbers: Sequence[int] | None = None, seed_pair: bool = True) -> Any:
    """The ``extension`` scenario of ``python -m benchmarks run extension`` (not part of ``all``);
    ``numbers``: only these TPC-H queries (an empty list: none); ``seed_pair=False``: TPC-H only.
    ``ctx.queries`` (``--queries``), when given, chooses both."""
    from benchmarks.scenarios import ScenarioResult

    if ctx.queries:
        numbers, seed_pair = select_queries(ctx.queries)
    sf = ctx.seed_sf
    res = ScenarioResult(
        name="extension",
        title=f"Transparent mode: Spark with lazyscan's extension on and off, TPC-H SF{sf:g}",
        description=(
            "Spark `local[2]`, one session started with `lazyscan.spark.configure`; the extension "
            "switched per run by `spark.lazyscan.enabled`, on and off taking turns run by run, each "
            "run building its DataFrame anew. TPC-H: the 22 queries as SQL over temp views of "
            "`spark.read.parquet`. Seed pair: `spark.read.parquet(p).where(...)` on and off, and "
            "`lazyscan.spark.read(..., force='lazyscan')`. Ratios: median ratio (range over the runs: "
            "min/max .. max/min)."
        ),
        params={"sf": sf, "reps": ctx.reps, "max_ratio": MAX_RATIO, "selective": [f"Q{n}" for n in SELECTIVE],
                "key_filters": ctx.key_filters},
        chart={"kind": "none"},
    )
    if not ctx.key_filters:
        res.description += (" Key filters off (`spark.lazyscan.keyFilter.enabled=false`): the extension passes no "
                            "join's or IN subquery's keys to the other scan.")
    queries = tpch_queries(sf, numbers)
    # the tables the queries read, lineitem always (the seed pair reads it)
    tables = [t for t in TPCH_TABLES if t == "lineitem" or any(t in q.paths for q in queries)]
    dataset = ensure_tpch(sf, tables, data_dir=ctx.data_dir, progress=ctx.progress)
    value = pick_query_value(dataset, target=ctx.sizes.value_target)
    res.params.update(value=value.value, value_rows=value.rows)
    res.datasets = {t: dict(dataset.marker().get("tables", {}).get(t, {})) for t in tables}
    on, off, read = (ExtensionEngine(m) for m in MODES)
    try:
        on.ensure_ready()
    except EngineUnavailable as e:
        res.status = f"unavailable: {e}"
        return res
    on.spark.conf.set(KEY_FILTERS_CONF, "true" if ctx.key_filters else "false")
    started = time.perf_counter()
    create_views(on.spark, dataset, tables)
    tpch = run_queries([on, off], queries, ctx.reps, progress=ctx.progress,
                       title=f"TPC-H SF{sf:g} extension on/off", budget_s=max(ctx.budget_s, TPCH_BUDGET_S))
    check_rows(tpch, [on, off])
    planning = planning_runs(on, off, queries) if queries else {}
    tpch_seconds = time.perf_counter() - started
    res.queries = tpch
    res.derived["tpch"] = tpch_summary(tpch, on.readers, off.readers, (on.plans, off.plans), planning)
    res.derived["part_seconds"] = {"tpch": round(tpch_seconds, 1)}
    res.derived["rows_agree"] = all(q.agree for q in res.queries)
    if not seed_pair:
        return res
    seed_engines = [on, off, read]
    started = time.perf_counter()
    pair = seed_queries(dataset.lineitem, value)
    seed = run_queries(seed_engines, pair, ctx.reps, progress=ctx.progress, title=f"seed pair SF{sf:g}",
                       budget_s=max(ctx.budget_s, SEED_BUDGET_S), in_turns=True)
    check_rows(seed, seed_engines)
    memory = memory_runs(seed_engines, pair)
    seed_seconds = time.perf_counter() - started
    res.queries = [*tpch, *seed]
    res.derived["seed"] = seed_summary(seed, memory, {e.name: e.built for e in seed_engines})
    res.derived["worker_memory"] = memory
    res.derived["rows_agree"] = all(q.agree for q in res.queries)
    res.derived["part_seconds"]["seed"] = round(seed_seconds, 1)
    return res


# --------------------------------------------------------------------------- report


def _range(r: dict[str, float] | None, suffix: str = "") -> str:
    if r is None:
        return "n/a"
    return f"{r['median']:.2f}{suffix} ({r['low']:.2f}–{r['high']:.2f})"


def _met(flag: bool | None) -> str:
    return "n/a" if flag is None else ("met" if flag else "**not met**")


def _mb(n: int | None) -> str:
    return "n/a" if n is None else f"{n / 1e6:,.0f} MB"


def _reader(e: dict[str, Any]) -> str:
    if e.get("reader") is None:
        return "n/a (no run finished)"
    scans = e.get("scans", {})
    return f"{e['reader']} ({scans.get('lazyscan', 0)} / {scans.get('parquet', 0)})"


def _yes_no(flag: bool | None) -> str:
    return "n/a" if flag is None else ("yes" if flag else "no")


def _agree(flag: bool | None) -> str:
    return "n/a" if flag is None else ("yes" if flag else "**no**")


def _peak(peaks: dict[str, Any], growths: dict[str, Any], engine: str) -> str:
    growth = growths.get(engine)
    return _mb(peaks.get(engine)) + ("" if growth is None else f" (+{_mb(growth)})")


def _floor(e: dict[str, Any]) -> str:
    from benchmarks.report import fmt_seconds

    if e.get("floor_s") is None:
        return "n/a"
    return f"{fmt_seconds(e['floor_s'])} ({fmt_seconds(e['built_on_s'])})"


def _planning(e: dict[str, Any]) -> str:
    if "planning_delta_s" not in e:
        return "n/a"
    return f"{e['planning_on_s']:.3f} / {e['planning_off_s']:.3f}"


def _kept_line(targets: dict[str, Any]) -> list[str]:
    kept = targets.get("kept_as_off")
    if not kept or kept["met"] is None:
        return []
    over = f": not so for {', '.join(kept['over'])}" if kept["over"] else ""
    return [f"| the {len(kept['queries'])} queries that keep Spark's reader: the same executed plan as off and "
            f"at most {kept['slack_s']:.2f} s more planning (median) | {_met(kept['met'])}{over} |"]


def _factor(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}x"


def extension_markdown(scenario: dict[str, Any]) -> str:
    """The scenario's own tables: TPC-H per query with the reader picked, totals and targets;
    the seed pair's factors and the Python workers' peak memory."""
    from benchmarks.report import fmt_seconds

    derived = scenario.get("derived", {})
    lines: list[str] = []
    tpch = derived.get("tpch")
    if tpch and tpch["queries"]:  # none with --queries seed
        lines += ["### TPC-H: extension on / off (below 1: faster with the extension)", "",
                  "| query | reader picked (lazyscan scans / Spark Parquet scans) | plan as off | on s | off s "
                  "| on / off (range) | planning on / off s | rows agree |", "|---|---|---|---:|---:|---:|---:|---|"]
        for name, e in tpch["queries"].items():
            lines.append(
                f"| {name} | {_reader(e)} | {_yes_no(e.get('plan_as_off'))} "
                f"| {fmt_seconds(e['on_s'])} | {fmt_seconds(e['off_s'])} | {_range(e['ratio'])} "
                f"| {_planning(e)} | {_agree(e['rows_agree'])} |"
            )
        t = tpch["targets"]
        ratio = tpch.get("total_ratio")
        lines += [
            "",
            f"Total: on {fmt_seconds(tpch['total_on_s'])} s, off {fmt_seconds(tpch['total_off_s'])} s, "
            f"on / off {'n/a' if ratio is None else f'{ratio:.3f}'}.",
            "",
            "| target (issue 38) | result |",
            "|---|---|",
            f"| every query at most {t['each_at_most']['limit']:.2f}x off | {_met(t['each_at_most']['met'])}"
            + (f": over it {', '.join(t['each_at_most']['over'])}" if t["each_at_most"]["over"] else "")
            + (f" ({', '.join(t['each_at_most']['over_with_plan_as_off'])}: the same executed plan as off, "
               "so the difference is planning and the machine's spread)"
               if t["each_at_most"].get("over_with_plan_as_off") else "") + " |",
            *_kept_line(t),
            f"| total no slower | {_met(t['total_no_slower']['met'])} |",
            f"| {', '.join(t['selective_faster']['queries']) or 'the selective queries'} faster "
            f"| {_met(t['selective_faster']['met'])}"
            + (f": not faster {', '.join(t['selective_faster']['not_faster'])}"
               if t["selective_faster"]["not_faster"] else "") + " |",
            "",
        ]
    seed = derived.get("seed")
    if seed:
        lines += ["### Seed pair through `spark.read.parquet(p).where(...)`", "",
                  "Factor = off / reader (above 1: faster than Spark's reader). Worker peak: the largest "
                  "high-water mark of a Python worker that ran during one untimed run, and in brackets the "
                  "most a worker grew during it (forked workers count the pages they share with Spark's "
                  "Python daemon; a reused worker starts with what earlier queries left it). Floor: "
                  "`lazyscan.spark.read`'s time plus `spark.read.parquet`'s own (listing and schema "
                  "inference, in brackets), which the extension pays and `read` does not; off / floor "
                  "is the most the extension can get.", "",
                  "| query | off s | on s | lazyscan.spark.read s | off / on (range) | off / read (range) "
                  "| on reaches read | floor s | off / floor | worker peak on | worker peak read |",
                  "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|"]
        for name, e in seed.items():
            peaks, growths = e.get("max_worker_peak_rss_bytes", {}), e.get("max_worker_growth_bytes", {})
            reach = e.get("reaches_read")
            lines.append(
                f"| {name} | {fmt_seconds(e['off_s'])} | {fmt_seconds(e['on_s'])} | {fmt_seconds(e['read_s'])} "
                f"| {_range(e['factor_on'], 'x')} | {_range(e['factor_read'], 'x')} "
                f"| {'n/a' if reach is None else ('yes' if reach else '**no**')} "
                f"| {_floor(e)} | {_factor(e.get('factor_floor'))} "
                f"| {_peak(peaks, growths, 'extension-on')} | {_peak(peaks, growths, 'extension-read')} |"
            )
        lines.append("")
    parts = derived.get("part_seconds")
    if parts:
        seed_part = f", seed pair {parts['seed']:.0f} s" if "seed" in parts else ""
        lines += [f"Wall time: TPC-H {parts['tpch']:.0f} s{seed_part} "
                  f"(whole scenario {scenario.get('seconds', 0):.0f} s).", ""]
    return "\n".join(lines)


def write_reports(doc: dict[str, Any], reports_dir: Path | None, sf: float) -> dict[str, Path]:
    """``extension-sf{N}-<stamp>.json`` and ``.md`` (the suite's markdown of the run, then the
    scenario's own tables)."""
    from benchmarks.report import REPORTS_DIR, _stamp, render_markdown, write_json

    folder = reports_dir or REPORTS_DIR
    prefix = f"extension-{sf_label(sf)}"
    json_path = write_json(doc, folder, prefix)
    md_path = folder / f"{prefix}-{_stamp(doc)}.md"
    text = render_markdown(doc)
    scen = doc.get("scenarios", {}).get("extension")
    if scen is not None:
        text += "\n" + extension_markdown(scen)
    md_path.write_text(text)
    return {"json": json_path, "markdown": md_path}

