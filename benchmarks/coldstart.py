"""What a new process pays before its first answer: import, first query, compiled kernels.

Every case runs in a new process of this interpreter with its own new, empty numba cache
(``NUMBA_CACHE_DIR`` pointed at a fresh temporary folder: lazyscan's cache locator,
``lazyscan/_numba_cache.py``, then files every kernel under that folder, so the run neither
reads nor disturbs the checkout's cache). On TPC-H lineitem at the run's scale factor:

- ``import lazyscan`` alone;
- the seed query (``select * where l_comment = V``), a selective read (``select *`` of a key
  range of 1,000 orderkeys) and a key-filter scan (``l_orderkey`` in a key filter of about
  1,000 keys), each first and second in one process with an empty cache, with the number of
  kernel signatures the first compiled (as ``lazyscan.scan.warmup._kernel_counts`` counts them,
  the count the warm-up's test uses);
- the seed query again in a new process on the cache the empty-cache seed process left
  ("cache present");
- Polars and DuckDB answering the seed query in a new process (they compile nothing).

One repetition per case: an empty-cache case costs a whole compile (30-45 s at SF1). The
targets come from issue 36: with an empty cache the first query at most 5 s, ``import
lazyscan`` under 0.5 s, and with a cache present the first query within 1.2x of the second with
0 signatures compiled.

Run: ``python -m benchmarks run coldstart --sf 1`` (not part of ``all``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: issue 36's targets
EMPTY_CACHE_FIRST_S = 5.0
CACHE_PRESENT_RATIO = 1.2
IMPORT_S = 0.5

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
out = {"import_s": import_s}
if query != "import":
    if engine == "lazyscan":
        from lazyscan.scan.warmup import _kernel_counts
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
        out["compiled"], out["loaded"] = _kernel_counts()
    t2 = time.perf_counter()
    run()
    out["second_s"] = time.perf_counter() - t2
print(json.dumps(out))
"""


@dataclass(frozen=True)
class Case:
    """One new process: which engine answers which query, on which cache."""

    name: str
    engine: str
    query: str  # "import", "seed", "range" or "keys"
    cache: str  # "empty", "present" (the folder the empty-cache seed case filled) or "none"


CASES: tuple[Case, ...] = (
    Case("import lazyscan", "lazyscan", "import", "empty"),
    Case("seed query, empty cache", "lazyscan", "seed", "empty"),
    Case("seed query, cache present", "lazyscan", "seed", "present"),
    Case("key range, empty cache", "lazyscan", "range", "empty"),
    Case("key filter, empty cache", "lazyscan", "keys", "empty"),
    Case("seed query, polars", "polars", "seed", "none"),
    Case("seed query, duckdb", "duckdb", "seed", "none"),
)


def run_case(case: Case, path: Path, value: str, sf: float, cache_dir: Path) -> dict[str, Any]:
    """Run one case in a new process with ``NUMBA_CACHE_DIR=cache_dir``; its measurements,
    with the process's wall seconds, or an ``error``."""
    import time

    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir)}
    arg = json.dumps({"engine": case.engine, "query": case.query, "path": str(path), "value": value, "sf": sf})
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, arg],
        capture_output=True,
        env=env,
        cwd=Path(__file__).resolve().parent.parent,
        timeout=CHILD_TIMEOUT_S,
        check=False,
    )
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        return {"error": done.stderr.decode(errors="replace")[-2000:], "process_s": wall}
    result: dict[str, Any] = json.loads(done.stdout.decode().strip().splitlines()[-1])
    result["process_s"] = wall
    return result


def verdict(case: Case, m: dict[str, Any]) -> tuple[str, bool | None]:
    """Issue 36's target for a case and whether the measurement ``m`` meets it (None: no
    target, or nothing measured)."""
    if "error" in m:
        return "", None
    if case.query == "import":
        return f"import < {IMPORT_S:g} s", m["import_s"] < IMPORT_S
    if case.engine != "lazyscan":
        return "", None
    if case.cache == "present":
        ok = m["first_s"] <= CACHE_PRESENT_RATIO * m["second_s"] and m.get("compiled") == 0
        return f"first ≤ {CACHE_PRESENT_RATIO:g}x second, 0 compiled", ok
    return f"first ≤ {EMPTY_CACHE_FIRST_S:g} s", m["first_s"] <= EMPTY_CACHE_FIRST_S


def table_rows(cases: Sequence[Case], measured: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per case: first and second seconds, their ratio, signatures compiled, target,
    met/missed (``n/a`` without a target)."""
    rows = []
    for case in cases:
        m = measured.get(case.name, {"error": "not run"})
        target, met = verdict(case, m)
        if case.query == "import":
            first, second = m.get("import_s"), None
        else:
            first, second = m.get("first_s"), m.get("second_s")
        rows.append({
            "case": case.name,
            "first_s": first,
            "second_s": second,
            "ratio": first / second if first is not None and second else None,
            "compiled": m.get("compiled"),
            "target": target,
            "verdict": "error" if "error" in m else {True: "met", False: "missed", None: "n/a"}[met],
        })
    return rows


def markdown_table(rows: Sequence[dict[str, Any]]) -> str:
    """The rows of :func:`table_rows` as a markdown table."""

    def num(v: Any, fmt: str) -> str:
        return "" if v is None else format(v, fmt)

    lines = [
        "| case | first s | second s | ratio | signatures compiled | target | |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['case']} | {num(r['first_s'], '.2f')} | {num(r['second_s'], '.2f')} | "
            f"{num(r['ratio'], '.1f')}{'x' if r['ratio'] is not None else ''} | {num(r['compiled'], 'd')} | "
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
    measured: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="lazyscan-coldstart-") as tmp:
        filled = Path(tmp) / "seed"  # the empty-cache seed case fills it, the cache-present case reads it
        for i, case in enumerate(CASES):
            if case.engine == "lazyscan" and case.query == "seed":
                cache_dir = filled
            else:
                cache_dir = Path(tmp) / f"case{i}"
            console.print(f"  coldstart: {case.name} …")
            measured[case.name] = run_case(case, dataset.lineitem, value.value, sf, cache_dir)
    rows = table_rows(CASES, measured)
    table = markdown_table(rows)
    for line in table.splitlines():
        console.print(f"  {line}", markup=False, highlight=False, soft_wrap=True)
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    res = ScenarioResult(
        name="coldstart",
        title=f"Cold start: a new process's first query, TPC-H SF{sf:g} lineitem",
        description=(
            "Each case a new process with a new empty numba cache (NUMBA_CACHE_DIR a fresh folder), one "
            "repetition: `import lazyscan`; the seed query `select * where l_comment = "
            f"{sql_string(value.value)}` ({value.rows} rows), a key range (`select *`, 1,000 orderkeys) and a "
            "key-filter scan (~1,000 orderkeys), first and second in one process, with the kernel signatures the "
            "first compiled; the seed query again in a new process on the cache the first seed process left "
            "(cache present); Polars and DuckDB on the seed query. Targets from issue 36. "
            f"Load average at the end: {', '.join(f'{x:.1f}' for x in load) if load else 'n/a'}.\n\n" + table
        ),
        params={"sf": sf, "value": value.value, "value_rows": value.rows, "repetitions": 1, "python": sys.executable},
        chart={"kind": "none"},
    )
    res.derived["coldstart"] = {"rows": rows, "measured": measured}
    res.derived["load_average"] = list(load) if load else None
    seed_rows = {m.get("rows") for name, m in measured.items() if "seed" in name and "error" not in m}
    res.derived["rows_agree"] = len(seed_rows) == 1
    errors = [name for name, m in measured.items() if "error" in m]
    if errors:
        res.status = "error: " + ", ".join(errors)
        res.extra = {name: measured[name]["error"] for name in errors}
    return res
