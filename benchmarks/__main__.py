"""Command line: `python -m benchmarks {demo,run,data,headline,readme}`.

    python -m benchmarks demo [--sf N] [--reps R]
    python -m benchmarks run [seed|selectivity|width|encodings|skipping|spark|reader|q17|keys|orc|tables|extension|all]
                             [--sf N] [--reps R] [--quick] [--engines a,b] [--no-spark]
    python -m benchmarks data [--sf N] [--tables lineitem,orders]   # generate, print layout
    python -m benchmarks headline [--json FILE]                     # README table from JSON
    python -m benchmarks readme [--readme README.md] [--json FILE]  # splice it into README
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from rich.table import Table

from benchmarks.engines import ALL_ENGINES, DEMO_ENGINES, ENGINES, close_engines, make_engines
from benchmarks.scenarios import EXTRA_SCENARIOS, FULL, QUICK, SCENARIOS, RunContext, run_scenario
from benchmarks.ui import console, make_progress

DEFAULT_REPS = {"seed": 5}
"""Repetitions per scenario when `--reps` is not given (otherwise 3; 1 with --quick)."""


def _engine_list(text: str | None, no_spark: bool, default: Sequence[str]) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()] if text else list(default)
    unknown = [n for n in names if n not in ALL_ENGINES]
    if unknown:
        raise SystemExit(f"unknown engines {unknown}; choose from {', '.join(ALL_ENGINES)}")
    if no_spark:
        names = [n for n in names if not n.startswith("spark")]
    return names


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sf", type=float, default=None, help="TPC-H scale factor (default 1)")
    p.add_argument("--reps", type=int, default=None, help="timed repetitions after a warm-up")
    p.add_argument(
        "--engines", default=None, help=f"comma-separated, from: {', '.join(ALL_ENGINES)}"
    )
    p.add_argument("--no-spark", action="store_true", help="leave out the Spark engines")
    p.add_argument("--reports", type=Path, default=None, help="report folder (default reports/)")
    p.add_argument("--data", type=Path, default=None, help="data folder (default data/)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="the seed question on Spark, lazyscan, DuckDB, Polars")
    _add_common(demo)

    run = sub.add_parser("run", help="run scenarios and write reports")
    run.add_argument(
        "scenario", nargs="?", default="all", choices=[*SCENARIOS, *EXTRA_SCENARIOS, "all"],
        help="`all` runs every scenario but the extra ones (orc)",
    )
    run.add_argument("--quick", action="store_true", help="tiny data, one repetition")
    run.add_argument(
        "--queries", default=None,
        help="extension scenario only: TPC-H query numbers and/or `seed`, comma-separated (e.g. 6,12-14,seed)",
    )
    run.add_argument(
        "--no-key-filters", dest="key_filters", action="store_false",
        help="extension scenario only: with the extension on, no key filters from joins and IN subqueries "
        "(spark.lazyscan.keyFilter.enabled=false; on by default)",
    )
    _add_common(run)

    data = sub.add_parser("data", help="generate TPC-H data and print its layout")
    data.add_argument("--sf", type=float, default=1)
    data.add_argument("--tables", default="lineitem")
    data.add_argument("--data", type=Path, default=None)

    head = sub.add_parser("headline", help="print the README headline table")
    readme = sub.add_parser("readme", help="splice the headline table into README.md")
    readme.add_argument("--readme", type=Path, default=None)
    for p in (head, readme):
        p.add_argument("--json", type=Path, default=None, help="run document (default: latest)")
        p.add_argument("--sf", type=float, default=1, help="scale factor of the latest run to use")
        p.add_argument("--reports", type=Path, default=None)
    return parser


def cmd_demo(args: argparse.Namespace) -> int:
    from benchmarks.demo import run_demo

    run_demo(
        sf=args.sf or 1,
        reps=args.reps or DEFAULT_REPS["seed"],
        engines=_engine_list(args.engines, args.no_spark, DEMO_ENGINES),
        reports_dir=args.reports,
        data_dir=args.data,
    )
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from benchmarks.report import build_document, write_report

    names = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    sizes = QUICK if args.quick else FULL
    engines = make_engines(_engine_list(args.engines, args.no_spark, ENGINES))
    results = []
    started = time.perf_counter()
    try:
        with make_progress() as progress:
            task = progress.add_task("scenarios", total=len(names))
            for name in names:
                progress.update(task, description=f"scenario {name}")
                reps = args.reps or (1 if args.quick else DEFAULT_REPS.get(name, 3))
                ctx = RunContext(
                    engines,
                    sizes=sizes,
                    reps=reps,
                    quick=args.quick,
                    data_dir=args.data,
                    progress=progress,
                    sf=args.sf,
                    queries=args.queries,
                    key_filters=args.key_filters,
                )
                results.append(run_scenario(name, ctx))
                progress.advance(task)
    finally:
        close_engines(engines)
    elapsed = time.perf_counter() - started
    doc = build_document(
        results,
        args={
            "scenarios": names,
            "sf": args.sf,
            "reps": args.reps,
            "quick": args.quick,
            "engines": [e.name for e in engines],
            "seconds": round(elapsed, 1),
        },
    )
    if names == ["tables"]:
        from benchmarks.tables_bench import write_reports

        paths = write_reports(doc, args.reports, args.sf if args.sf is not None else sizes.seed_sf)
    elif names == ["extension"]:
        from benchmarks.extension_bench import write_reports as write_extension_reports

        paths = write_extension_reports(doc, args.reports, args.sf if args.sf is not None else sizes.seed_sf)
    else:
        paths = write_report(doc, args.reports, prefix=_prefix(args, names))
    summary = Table(title=f"benchmark run: {elapsed:.0f} s", title_justify="left")
    for col in ("scenario", "status", "queries", "row-count mismatches", "seconds"):
        summary.add_column(col)
    for r in results:
        bad = sum(not q.agree for q in r.queries)
        summary.add_row(
            r.name,
            r.status,
            str(len(r.queries)),
            f"[bold red]{bad}[/]" if bad else "0",
            f"{r.seconds:.1f}",
        )
    console.print(summary)
    seed = next((r for r in results if r.name == "seed" and r.derived.get("penalty")), None)
    if seed is not None:
        from benchmarks.demo import results_table

        console.print(results_table(seed))
    console.print(f"report: [cyan]{paths['markdown']}[/] · data: {paths['json']}")
    return 1 if any(not q.agree for r in results for q in r.queries) else 0


def _prefix(args: argparse.Namespace, names: Sequence[str]) -> str:
    """Report name: `bench` for a full run, else with scenario, scale factor and `quick`."""
    parts = ["bench"]
    if list(names) != list(SCENARIOS):
        parts += list(names)
    if args.sf is not None and args.sf != FULL.seed_sf:
        parts.append(f"sf{args.sf:g}")
    if args.quick:
        parts.append("quick")
    return "-".join(parts)


def cmd_data(args: argparse.Namespace) -> int:
    from benchmarks.data import describe_layout, ensure_tpch, pick_query_value

    tables = [t.strip() for t in args.tables.split(",") if t.strip()]
    dataset = ensure_tpch(args.sf, tables, data_dir=args.data)
    for t in tables:
        console.print_json(json.dumps(describe_layout(dataset.table(t)), default=str))
    if "lineitem" in tables:
        console.print(pick_query_value(dataset))
    return 0


def _document(args: argparse.Namespace) -> tuple[Path, dict]:
    from benchmarks.report import latest_document

    if args.json is not None:
        return args.json, json.loads(args.json.read_text())
    found = latest_document(args.reports, sf=args.sf)
    if found is None:
        raise SystemExit(f"no SF{args.sf:g} seed result under reports/; run the demo first")
    return found


def cmd_headline(args: argparse.Namespace) -> int:
    from benchmarks.report import REPO_ROOT, headline_table

    path, doc = _document(args)
    console.print(headline_table(doc, source=_relative(path, REPO_ROOT)), markup=False)
    return 0


def cmd_readme(args: argparse.Namespace) -> int:
    from benchmarks.report import REPO_ROOT, headline_table, latest_document, splice_readme

    path, doc = _document(args)
    readme = args.readme or REPO_ROOT / "README.md"
    source = _relative(path, REPO_ROOT)
    spark_doc = None
    if args.json is None and "spark" not in doc.get("scenarios", {}):
        # a seed-only run: the Spark table comes from the latest Spark run of the same scale
        spark = latest_document(args.reports, sf=args.sf, scenario="spark")
        if spark is not None:
            spark_doc = spark[1]
            source += f"` and `{_relative(spark[0], REPO_ROOT)}"
    tables = [headline_table(doc, source=source, spark_doc=spark_doc)]
    if args.json is None:
        # the larger scale factor's latest run too, when there is one
        for sf in EXTRA_HEADLINE_SF:
            found = latest_document(args.reports, sf=sf) if sf != args.sf else None
            if found is not None:
                spark = latest_document(args.reports, sf=sf, scenario="spark")
                source = _relative(found[0], REPO_ROOT)
                if spark is not None and spark[0] != found[0]:
                    source += f"` and `{_relative(spark[0], REPO_ROOT)}"
                tables.append(headline_table(found[1], source=source, spark_doc=spark[1] if spark else None))
    changed = splice_readme(readme, "\n\n".join(tables))
    console.print(f"{readme}: {'updated' if changed else 'unchanged'}")
    return 0


#: scale factors whose latest seed run joins the README headline after the chosen one
EXTRA_HEADLINE_SF = (10.0,)


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root))
    except ValueError:
        return str(path)


COMMANDS = {
    "demo": cmd_demo,
    "run": cmd_run,
    "data": cmd_data,
    "headline": cmd_headline,
    "readme": cmd_readme,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (1 when engines disagree on row counts)."""
    args = build_parser().parse_args(argv)
    return COMMANDS[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
