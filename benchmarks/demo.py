"""The product demo: the seed question through Spark, lazyscan, DuckDB and Polars.

Generates (or reuses) TPC-H lineitem, picks V, runs Q-A `select *` and Q-B `select l_orderkey`
where `l_comment = V` on each engine, prints times, rows, the select-* penalty and lazyscan's
scan profile, and writes `reports/demo.md`, `reports/demo-seed.png` and a JSON document.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.table import Table

from benchmarks.data import ensure_tpch, pick_query_value, sql_string
from benchmarks.engines import DEMO_ENGINES, close_engines, make_engines
from benchmarks.report import build_document, fmt_bytes, fmt_seconds, write_report
from benchmarks.scenarios import FULL, RunContext, ScenarioResult, seed
from benchmarks.ui import console, make_progress


def results_table(result: ScenarioResult) -> Table:
    """Times, rows and penalty per engine for the seed query pair."""
    table = Table(title=result.title, title_justify="left")
    table.add_column("engine")
    table.add_column("Q-A select * (s)", justify="right")
    table.add_column("Q-B select l_orderkey (s)", justify="right")
    table.add_column("penalty Q-A/Q-B", justify="right")
    table.add_column("Q-A vs fastest", justify="right")
    table.add_column("rows A / B", justify="right")
    by_query = {q.query.name: q.by_engine() for q in result.queries}
    penalty = result.derived.get("penalty", {})
    for engine, a in by_query.get("Q-A", {}).items():
        b = by_query.get("Q-B", {}).get(engine)
        if not a.ok or b is None or not b.ok:
            status = a.status if not a.ok else (b.status if b is not None else "missing")
            short = "n/a" if status.startswith("unavailable") else "error"
            table.add_row(a.label, f"[dim]{short}[/]", f"[dim]{short}[/]", "", "", "")
            continue
        p = penalty.get(engine, {})
        rows = f"{a.rows} / {b.rows}"
        if a.mismatch or b.mismatch:
            rows = f"[bold red]{rows} ⚠[/]"
        vs = p.get("qa_vs_fastest")
        table.add_row(
            a.label,
            fmt_seconds(a.seconds),
            fmt_seconds(b.seconds),
            f"{p['penalty']:.2f}" if "penalty" in p else "",
            f"{vs:.2f}x" if vs else "",
            rows,
        )
    return table


def profile_table(result: ScenarioResult) -> Table | None:
    """lazyscan's scan profile for each query and lazyscan engine that reported one."""
    rows = []
    for q in result.queries:
        for m in q.measurements:
            if m.profile:
                rows.append((q.query.name, m.label, m.profile))
    if not rows:
        return None
    table = Table(title="lazyscan scan profile", title_justify="left")
    for col in (
        "query",
        "engine",
        "row groups",
        "pruned: stats / dict / Bloom",
        "pages",
        "pruned by index / skipped lazily",
        "bytes read of total",
        "rows returned of total",
    ):
        table.add_column(col, justify="left" if col in ("query", "engine") else "right")
    for name, label, p in rows:
        total, read = p.get("bytes_total"), p.get("bytes_read")
        share = f" ({read / total:.1%})" if total and read is not None else ""
        table.add_row(
            name,
            label,
            str(p.get("row_groups_total", "–")),
            f"{p.get('row_groups_pruned_stats', '–')} / {p.get('row_groups_pruned_dictionary', '–')}"
            f" / {p.get('row_groups_pruned_bloom', '–')}",
            str(p.get("pages_total", "–")),
            f"{p.get('pages_pruned_index', '–')} / {p.get('pages_skipped_lazily', '–')}",
            f"{fmt_bytes(read)} of {fmt_bytes(total)}{share}",
            f"{p.get('rows_returned', '–')} of {p.get('rows_total', '–')}",
        )
    return table


def run_demo(
    sf: float = 1,
    reps: int = 5,
    engines: Sequence[str] = DEMO_ENGINES,
    *,
    reports_dir: Path | None = None,
    data_dir: Path | None = None,
    value_target: int = 100,
) -> dict[str, Any]:
    """Run the demo; return the written paths and the run document."""
    console.rule(f"[bold]lazyscan demo[/] · TPC-H SF{sf:g}")
    dataset = ensure_tpch(sf, data_dir=data_dir)
    value = pick_query_value(dataset, target=value_target)
    console.print(
        f"lineitem: [cyan]{dataset.lineitem}[/] · {dataset.marker()['tables']['lineitem']['rows']:,} rows"
        f" · {dataset.marker()['tables']['lineitem']['row_groups']} row groups"
    )
    console.print(f"V = {sql_string(value.value)} matches {value.rows} rows")
    runners = make_engines(engines)
    try:
        with make_progress() as progress:
            ctx = RunContext(
                runners,
                sizes=replace(FULL, value_target=value_target),
                reps=reps,
                data_dir=data_dir,
                progress=progress,
                sf=sf,
            )
            result = seed(ctx)
    finally:
        close_engines(runners)
    console.print(results_table(result))
    for q in result.queries:
        style = "green" if q.agree else "bold red"
        console.print(f"[{style}]{q.query.name}: {q.verdict}[/]")
    for label, status in {
        m.label: m.status for q in result.queries for m in q.measurements if not m.ok
    }.items():
        console.print(f"[yellow]{label}: {status}[/]")
    prof = profile_table(result)
    if prof is not None:
        console.print(prof)
    doc = build_document([result], args={"sf": sf, "reps": reps, "engines": list(engines)})
    paths = write_report(doc, reports_dir, prefix="demo")
    console.print(
        f"report: [cyan]{paths['markdown']}[/], charts: "
        + ", ".join(str(p) for p in paths["charts"].values())
        + f", data: {paths['json']}"
    )
    return {"document": doc, **paths}
