"""Reports: JSON documents, markdown, PNG charts, and the README headline table.

- `build_document(results, ...)`: one run as a JSON-ready dict with machine info and versions.
- `write_report(doc, reports_dir, prefix)`: `{prefix}-{stamp}.json`, `{prefix}.md`, and one
  `{prefix}-{scenario}.png` per scenario.
- `latest_document(reports_dir)`: the newest JSON document that holds a seed result.
- `headline_table(doc)`: the markdown table shown in README.md.
- `splice_readme(readme, table)`: replace the text between the headline markers.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks import THREADS
from benchmarks.data import REPO_ROOT

REPORTS_DIR = REPO_ROOT / "reports"
HEADLINE_START = "<!-- bench:headline:start -->"
HEADLINE_END = "<!-- bench:headline:end -->"
VERSIONED = ("pyarrow", "duckdb", "polars", "datafusion", "pyspark", "numba", "lazyscan")

PROFILE_COUNTERS = (
    "files",
    "row_groups_total",
    "row_groups_pruned_partition",
    "row_groups_pruned_stats",
    "row_groups_pruned_bloom",
    "row_groups_pruned_dictionary",
    "pages_total",
    "pages_pruned_index",
    "pages_skipped_lazily",
    "bytes_total",
    "bytes_read",
    "bytes_decompressed",
    "rows_total",
    "rows_returned",
)


# --------------------------------------------------------------------------- machine, versions


def machine_info() -> dict[str, Any]:
    """CPU model, cores, memory, OS."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = int(line.split()[1]) * 1024
                break
    except OSError:
        pass
    if memory is None:
        try:
            memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            memory = None
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_bytes": memory,
        "memory_gb": round(memory / 2**30, 1) if memory else None,
        "os": platform.platform(),
        "threads_per_engine": THREADS,
    }


def versions() -> dict[str, str | None]:
    """Versions of Python and of the engines, read from package metadata (no imports)."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    try:
        import subprocess

        java = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=20)
        first = (java.stderr or java.stdout).splitlines()
        out["java"] = first[0] if first else None
    except (OSError, subprocess.SubprocessError):
        out["java"] = None
    try:
        from benchmarks.data import tpchgen_version

        out["tpchgen-cli"] = tpchgen_version()
    except Exception:
        out["tpchgen-cli"] = None
    return out


def build_document(
    results: Sequence[Any], *, command: str = "", args: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A run as a JSON-ready dict: date, machine, versions, arguments and scenario results."""
    now = dt.datetime.now(dt.timezone.utc)
    return {
        "schema": 1,
        "date": now.isoformat(timespec="seconds"),
        "command": command or _command_line(),
        "args": args or {},
        "machine": machine_info(),
        "versions": versions(),
        "scenarios": {r.name: r.to_dict() for r in results},
    }


def _command_line() -> str:
    argv = list(sys.argv)
    if argv and Path(argv[0]).name == "__main__.py" and Path(argv[0]).parent.name == "benchmarks":
        return " ".join(["python -m benchmarks", *argv[1:]])
    return " ".join(argv)


# --------------------------------------------------------------------------- writing


def _stamp(doc: dict[str, Any]) -> str:
    try:
        when = dt.datetime.fromisoformat(doc["date"])
    except (KeyError, ValueError):
        when = dt.datetime.now(dt.timezone.utc)
    return when.strftime("%Y%m%dT%H%M%SZ")


def write_json(doc: dict[str, Any], reports_dir: Path, prefix: str) -> Path:
    """Write `{prefix}-{stamp}.json`."""
    reports_dir.mkdir(parents=True, exist_ok=True)
    path = reports_dir / f"{prefix}-{_stamp(doc)}.json"
    path.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    return path


def write_report(doc: dict[str, Any], reports_dir: Path | None = None, prefix: str = "bench") -> dict[str, Any]:
    """Write the JSON, the markdown and the charts of a run; return their paths."""
    reports_dir = reports_dir or REPORTS_DIR
    json_path = write_json(doc, reports_dir, prefix)
    charts = write_charts(doc, reports_dir, prefix)
    md_path = reports_dir / f"{prefix}.md"
    md_path.write_text(render_markdown(doc, charts={k: p.name for k, p in charts.items()}))
    return {"json": json_path, "markdown": md_path, "charts": charts}


# --------------------------------------------------------------------------- markdown


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "–"
    if s >= 10:
        return f"{s:.1f}"
    if s >= 1:
        return f"{s:.2f}"
    return f"{s:.3f}"


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "–"
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def _engines_in(scenario: dict[str, Any]) -> list[tuple[str, str]]:
    seen: dict[str, str] = {}
    for q in scenario.get("queries", []):
        for m in q["measurements"]:
            seen.setdefault(m["engine"], m["label"])
    return list(seen.items())


def _cell(m: dict[str, Any] | None) -> str:
    if m is None:
        return ""
    status = m["status"]
    if status == "ok":
        text = fmt_seconds(m["seconds"])
        if m.get("mismatch"):
            text = f"**{text} ⚠ {m['rows']} rows**"
        return text
    return "n/a" if status.startswith("unavailable") else "error"


def _x_label(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.4%}".rstrip("0").rstrip(".") if x < 1 else "100%"
    return str(x)


def scenario_markdown(scenario: dict[str, Any], chart: str | None = None) -> str:
    """One scenario: description, timing table per group, notes, penalty and profiles."""
    lines = [f"## {scenario['title']}", ""]
    if scenario.get("description"):
        lines += [scenario["description"], ""]
    if scenario.get("status", "ok") != "ok":
        lines += [f"Status: {scenario['status']}", ""]
    engines = _engines_in(scenario)
    groups: dict[str, list[dict[str, Any]]] = {}
    for q in scenario.get("queries", []):
        groups.setdefault(q["query"]["group"], []).append(q)
    for group, qs in groups.items():
        if len(groups) > 1 or group not in ("", scenario["name"]):
            lines += [f"**{group}** (seconds, median)", ""]
        header = ["query", "rows", *[label for _, label in engines]]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "|".join(["---"] * 2 + ["---:"] * len(engines)) + "|")
        for q in qs:
            ms = {m["engine"]: m for m in q["measurements"]}
            rows = q["query"].get("expected_rows")
            if rows is None:
                rows = next((m["rows"] for m in q["measurements"] if m["status"] == "ok"), None)
            name = q["query"].get("label") or _x_label(q["query"]["x"]) or q["query"]["name"]
            cells = [name, "" if rows is None else f"{rows:,}"]
            cells += [_cell(ms.get(e)) for e, _ in engines]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    mismatches = [q for q in scenario.get("queries", []) if not q["agree"]]
    for q in mismatches:
        lines.append(f"- ⚠ **{q['query']['name']}: {q['verdict']}**")
    penalty = scenario.get("derived", {}).get("penalty")
    if penalty:
        lines += ["", penalty_markdown(penalty), ""]
    floor = scenario.get("derived", {}).get("penalty_floor")
    if floor:
        lines += [floor_sentence(floor), ""]
    ratios = scenario.get("derived", {}).get("spark_ratio")
    if ratios:
        lines += ["", spark_ratio_markdown(scenario, ratios), ""]
    auto = scenario.get("derived", {}).get("auto_vs_faster")
    if auto:
        lines += [
            "| query | Spark lazyscan.read auto / fastest of Spark parquet and the lazyscan routes |",
            "|---|---:|",
            *[f"| {q} | {r:.2f} |" for q, r in auto.items()],
            "",
        ]
    if scenario.get("derived", {}).get("spread"):
        lines += ["", orc_markdown(scenario), ""]
    if scenario.get("derived", {}).get("object_store"):
        from benchmarks.object_store import markdown as object_store_markdown

        lines += ["", object_store_markdown(scenario["derived"]["object_store"]), ""]
    profiles = profile_markdown(scenario)
    if profiles:
        lines += ["", profiles, ""]
    notes = _status_notes(scenario)
    if notes:
        lines += [""] + [f"- {n}" for n in notes]
    if chart:
        lines += ["", f"![{scenario['name']}]({chart})"]
    if scenario.get("extra") is not None and scenario["name"] == "reader":
        from benchmarks.reader_bench import summarize

        try:
            lines += ["", *summarize(scenario["extra"])]
        except (KeyError, TypeError):
            lines += ["", "```json", json.dumps(scenario["extra"], indent=1, default=str)[:20000], "```"]
    lines.append("")
    return "\n".join(lines)


def _status_notes(scenario: dict[str, Any]) -> list[str]:
    seen: dict[str, str] = {}
    for q in scenario.get("queries", []):
        for m in q["measurements"]:
            key = f"{m['label']}: {m['status']}" if m["status"] != "ok" else ""
            if key:
                seen.setdefault(key, key)
            for n in m.get("notes", []):
                if "\n" not in n:
                    seen.setdefault(f"{m['label']}: {n}", f"{m['label']}: {n}")
    return list(seen.values())


def floor_sentence(floor: dict[str, Any]) -> str:
    """The measured floor of lazyscan's select-* penalty, as a sentence."""
    if "stripes_with_matches" in floor:
        return (
            f"Floor for lazyscan's penalty on this ORC copy: {floor['floor']:.2f}. Beyond Q-B's work, Q-A "
            f"must decompress, for {floor['columns']} more columns in each of the "
            f"{floor['stripes_with_matches']} stripes holding a match, the compression chunks from each "
            f"selected row's row group start to the next row group's "
            f"({floor['bytes_decompressed'] / 1e6:,.1f} MB): {fmt_seconds(floor['decompress_s'])} on one "
            f"thread, shared by {THREADS}."
        )
    return (
        f"Floor for lazyscan's penalty on this file: {floor['floor']:.2f}. Beyond Q-B's work, Q-A must "
        f"decompress, for {floor['columns']} more columns in each of the "
        f"{floor['row_groups_with_matches']} row groups holding a match, the dictionary page and the "
        f"pages holding a match: {fmt_seconds(floor['decompress_s'])} on one thread, shared by "
        f"{THREADS}."
        + (
            f" Reading those pages out of the page cache adds {fmt_seconds(floor['read_s'])} "
            f"(floor with reads: {floor['floor_with_reads']:.2f})."
            if "floor_with_reads" in floor
            else ""
        )
        + (
            f" Decompressed by {THREADS} threads at once, those pages take "
            f"{fmt_seconds(floor['decompress_parallel_s'])} ({floor['thread_gain']:.2f}x the one-thread "
            f"speed, not {THREADS}x): floor with the threads measured {floor['floor_measured_threads']:.2f}."
            if floor.get("thread_gain")
            else ""
        )
    )


def penalty_markdown(penalty: dict[str, Any]) -> str:
    """The select-* penalty table of the seed scenario."""
    lines = [
        "| engine | Q-A select * (s) | Q-B select l_orderkey (s) | penalty Q-A/Q-B | Q-A vs fastest |",
        "|---|---:|---:|---:|---:|",
    ]
    for entry in penalty.values():
        if "penalty" in entry:
            vs = entry.get("qa_vs_fastest")
            lines.append(
                f"| {entry['label']} | {fmt_seconds(entry['qa'])} | {fmt_seconds(entry['qb'])} "
                f"| {entry['penalty']:.2f} | {'' if vs is None else f'{vs:.2f}x'} |"
            )
        else:
            short = "n/a" if entry["status"].startswith("unavailable") else "error"
            lines.append(f"| {entry['label']} | {short} | {short} | | |")
    return "\n".join(lines)


def spark_ratio_markdown(scenario: dict[str, Any], ratios: dict[str, dict[str, float]]) -> str:
    """Spark parquet time / lazyscan time per query and lazyscan reader (above 1: faster)."""
    labels = dict(_engines_in(scenario))
    readers = sorted({e for r in ratios.values() for e in r})
    lines = [
        "| query | " + " | ".join(f"Spark parquet / {labels.get(e, e)}" for e in readers) + " |",
        "|---|" + "---:|" * len(readers),
    ]
    for query, by in ratios.items():
        lines.append(f"| {query} | " + " | ".join(f"{by[e]:.2f}x" if e in by else "n/a" for e in readers) + " |")
    return "\n".join(lines)


def _range(r: dict[str, float]) -> str:
    return f"{r['median']:.2f} ({r['low']:.2f}–{r['high']:.2f})"


def orc_markdown(scenario: dict[str, Any]) -> str:
    """The `orc` scenario's spreads and ratios: per query and engine the median and min–max of
    the runs, the ratios of `orc_bench.RATIOS` and the select-* penalty with their ranges, and
    the rows ORC's scan handed to Spark."""
    derived = scenario.get("derived", {})
    spread = derived.get("spread", {})
    engines = list(dict.fromkeys((e, m["label"]) for by in spread.values() for e, m in by.items()))
    lines = []
    layout = scenario.get("datasets", {}).get("lineitem_orc")
    if layout:
        lines += [
            f"ORC copy: `{layout['path']}`, {layout['files']} files, {fmt_bytes(layout['bytes'])}, "
            f"{layout['rows']:,} rows, {layout['stripes']} stripes ({'/'.join(map(str, layout['stripes_per_file']))} "
            f"per file), {', '.join(layout['compression'])}, row index stride "
            f"{'/'.join(map(str, layout['row_index_stride']))}.",
            "",
        ]
    lines += [
        "Seconds: median (min–max) of the timed runs.",
        "",
        "| query | rows | " + " | ".join(label for _, label in engines) + " |",
        "|---|---:|" + "---:|" * len(engines),
    ]
    for query, by in spread.items():
        rows = next((m["rows"] for m in by.values()), None)
        cells = [query, "" if rows is None else f"{rows:,}"]
        for e, _ in engines:
            m = by.get(e)
            cells.append(
                "" if m is None
                else f"{fmt_seconds(m['median_s'])} ({fmt_seconds(m['min_s'])}–{fmt_seconds(m['max_s'])})"
            )
        lines.append("| " + " | ".join(cells) + " |")
    ratios = derived.get("orc_ratios", {})
    names = list(dict.fromkeys(n for by in ratios.values() for n in by))
    if names:
        lines += [
            "",
            "Ratios (above 1: the second is faster): median ratio (range over the runs).",
            "",
            "| query | " + " | ".join(names) + " |",
            "|---|" + "---:|" * len(names),
        ]
        for query, by in ratios.items():
            lines.append(f"| {query} | " + " | ".join(_range(by[n]) if n in by else "n/a" for n in names) + " |")
    penalty = derived.get("penalty_spread", {})
    if penalty:
        lines += ["", "| engine | select-* penalty Q-A/Q-B (range) |", "|---|---:|"]
        lines += [f"| {p['label']} | {_range(p)} |" for p in penalty.values()]
    reader_rows = derived.get("orc_reader_rows", {})
    if reader_rows:
        spark = list(dict.fromkeys(e for by in reader_rows.values() for e in by))
        labels = {e: label for e, label in engines}
        lines += [
            "",
            "Rows the ORC scan handed to Spark (its `numOutputRows`, one untimed run):",
            "",
            "| query | " + " | ".join(labels.get(e, e) for e in spark) + " |",
            "|---|" + "---:|" * len(spark),
        ]
        for query, by in reader_rows.items():
            lines.append(
                f"| {query} | " + " | ".join("?" if by.get(e) is None else f"{by[e]:,}" for e in spark) + " |"
            )
    return "\n".join(lines)


def profile_markdown(scenario: dict[str, Any]) -> str:
    """lazyscan's scan profile per query (in-process and Spark source), when measured."""
    rows = []
    for q in scenario.get("queries", []):
        for m in q["measurements"]:
            p = m.get("profile")
            if not p:
                continue
            rows.append(
                f"| {q['query']['name']} | {m['label']} | {p.get('row_groups_total', '–')} "
                f"| {p.get('row_groups_pruned_stats', '–')} | {p.get('row_groups_pruned_dictionary', '–')} "
                f"| {p.get('row_groups_pruned_bloom', '–')} | {p.get('pages_total', '–')} "
                f"| {p.get('pages_pruned_index', '–')} | {p.get('pages_skipped_lazily', '–')} "
                f"| {fmt_bytes(p.get('bytes_read'))} of {fmt_bytes(p.get('bytes_total'))} |"
            )
    if not rows:
        return ""
    header = (
        "| query | engine | row groups | pruned stats | pruned dictionary | pruned Bloom "
        "| pages | pruned by index | skipped lazily | bytes read |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    return "lazyscan scan profile:\n\n" + header + "\n" + "\n".join(rows)


def render_markdown(doc: dict[str, Any], charts: dict[str, str] | None = None) -> str:
    """The whole run as markdown."""
    charts = charts or {}
    m, v = doc.get("machine", {}), doc.get("versions", {})
    ver = ", ".join(f"{k} {val}" for k, val in v.items() if val)
    lines = [
        f"# lazyscan benchmarks — {doc.get('date', '')}",
        "",
        f"Machine: {m.get('cpu')}, {m.get('cores')} cores, {m.get('memory_gb')} GB, "
        f"{m.get('os')}; every engine gets {m.get('threads_per_engine', THREADS)} threads.",
        "",
        f"Versions: {ver}.",
        "",
        f"Command: `{doc.get('command', '')}`",
        "",
        "Times are medians of the repetitions after one warm-up run, in seconds; rows are "
        "checked to agree across engines (⚠ marks a mismatch). n/a: engine unavailable.",
        "",
    ]
    for name, scenario in doc.get("scenarios", {}).items():
        lines.append(scenario_markdown(scenario, charts.get(name)))
    return "\n".join(lines)


# --------------------------------------------------------------------------- charts


def write_charts(doc: dict[str, Any], reports_dir: Path, prefix: str) -> dict[str, Path]:
    """One PNG per scenario with measurements: `{prefix}-{scenario}.png`."""
    out: dict[str, Path] = {}
    for name, scenario in doc.get("scenarios", {}).items():
        path = reports_dir / f"{prefix}-{name}.png"
        if plot_scenario(scenario, path):
            out[name] = path
    return out


def plot_scenario(scenario: dict[str, Any], path: Path) -> bool:
    """Plot one scenario (one panel per query group, one series per engine); False if empty."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    chart = scenario.get("chart", {})
    if chart.get("kind") == "none":
        return False
    groups: dict[str, list[dict[str, Any]]] = {}
    for q in scenario.get("queries", []):
        groups.setdefault(q["query"]["group"], []).append(q)
    engines = [
        (e, label)
        for e, label in _engines_in(scenario)
        if any(
            m["engine"] == e and m["status"] == "ok"
            for q in scenario.get("queries", [])
            for m in q["measurements"]
        )
    ]
    if not groups or not engines:
        return False
    penalty = {
        e["label"]: e["penalty"]
        for e in scenario.get("derived", {}).get("penalty", {}).values()
        if "penalty" in e
    }
    n = len(groups) + (1 if penalty else 0)
    fig, axes = plt.subplots(1, n, figsize=(max(6.0, 5.5 * n), 4.2), squeeze=False)
    colors = plt.get_cmap("tab10")
    for ax, (group, qs) in zip(axes[0], groups.items()):
        xs = [q["query"]["x"] for q in qs]
        numeric = chart.get("kind") == "lines" and all(isinstance(x, (int, float)) for x in xs)
        width = 0.8 / max(1, len(engines))
        for i, (e, label) in enumerate(engines):
            ys = []
            for q in qs:
                m = next((m for m in q["measurements"] if m["engine"] == e), None)
                ys.append(m["seconds"] if m and m["status"] == "ok" else float("nan"))
            if numeric:
                ax.plot(xs, ys, marker="o", label=label, color=colors(i % 10))
            else:
                pos = [j + (i - (len(engines) - 1) / 2) * width for j in range(len(xs))]
                ax.bar(pos, ys, width=width, label=label, color=colors(i % 10))
        if numeric:
            if chart.get("xlog"):
                ax.set_xscale("log")
        else:
            ax.set_xticks(range(len(xs)))
            ax.set_xticklabels([_x_label(x) for x in xs], rotation=20, ha="right", fontsize=8)
        if chart.get("ylog"):
            ax.set_yscale("log")
        if group and group != scenario["name"]:
            ax.set_title(group, fontsize=10)
        ax.set_xlabel(chart.get("xlabel", ""))
        ax.set_ylabel(chart.get("ylabel", "seconds (median)"))
        ax.grid(True, alpha=0.3)
    axes[0][0].legend(fontsize=7)
    if penalty:
        ax = axes[0][-1]
        labels = list(penalty)
        color_of = {lab: colors(i % 10) for i, (_, lab) in enumerate(engines)}
        bar_colors = [color_of.get(k, "grey") for k in labels]
        ax.bar(range(len(labels)), [penalty[k] for k in labels], color=bar_colors)
        ax.axhline(1.0, color="grey", linewidth=0.8)
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=20, ha="right", fontsize=8)
        ax.set_title("select-* penalty Q-A / Q-B", fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(scenario["title"], fontsize=11)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# --------------------------------------------------------------------------- headline


def latest_document(
    reports_dir: Path | None = None, sf: float | None = 1, scenario: str = "seed"
) -> tuple[Path, dict[str, Any]] | None:
    """The newest JSON document under `reports_dir` with a measured `scenario` result.

    Only documents of scale factor `sf` (any when None) from runs without `--quick`.
    """
    reports_dir = reports_dir or REPORTS_DIR
    candidates = []
    for p in reports_dir.glob("*.json"):
        try:
            doc = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        seed = doc.get("scenarios", {}).get(scenario) if isinstance(doc, dict) else None
        if not seed or not any(
            m["status"] == "ok" for q in seed.get("queries", []) for m in q["measurements"]
        ):
            continue
        if doc.get("args", {}).get("quick"):
            continue
        if sf is not None and float(seed.get("params", {}).get("sf", -1)) != float(sf):
            continue
        candidates.append((str(doc.get("date", "")), p.stat().st_mtime, p, doc))
    if not candidates:
        return None
    candidates.sort(key=lambda c: (c[0], c[1]))
    _, _, path, doc = candidates[-1]
    return path, doc


def headline_table(
    doc: dict[str, Any], source: str | None = None, spark_doc: dict[str, Any] | None = None
) -> str:
    """The README headline: the seed query pair per engine, from one run document, and the
    Spark table from the same run (or from `spark_doc`, a run of the `spark` scenario)."""
    seed = doc["scenarios"]["seed"]
    params = seed.get("params", {})
    lineitem = seed.get("datasets", {}).get("lineitem", {})
    m = doc.get("machine", {})
    penalty = seed.get("derived", {}).get("penalty", {})
    intro = (
        f"TPC-H SF{params.get('sf', 1):g} `lineitem` ({lineitem.get('rows', 0):,} rows, "
        f"{lineitem.get('row_groups', '?')} row groups), `l_comment = "
        f"'{params.get('value', '?')}'` ({params.get('value_rows', '?')} rows). "
        f"Median of {params.get('reps', '?')} runs after a warm-up, "
        f"{m.get('threads_per_engine', THREADS)} threads per engine; "
        f"{m.get('cpu', '?')}, {m.get('cores', '?')} cores; {doc.get('date', '')[:10]}."
    )
    lines = [intro, "", penalty_markdown(penalty)]
    floor = seed.get("derived", {}).get("penalty_floor")
    if floor:
        lines += ["", floor_sentence(floor)]
    spark = spark_doc["scenarios"].get("spark") if spark_doc is not None else doc["scenarios"].get("spark")
    if spark and spark.get("status") == "ok" and spark.get("derived", {}).get("spark_ratio"):
        lines += ["", spark_headline(spark)]
    if source:
        lines += ["", f"Generated by `python -m benchmarks` from `{source}`."]
    return "\n".join(lines)


def spark_headline(spark: dict[str, Any]) -> str:
    """Spark `local[2]`: each query through Spark's reader and the lazyscan source, with ratios."""
    engines = _engines_in(spark)
    ratios = spark["derived"]["spark_ratio"]
    auto = spark["derived"].get("auto_vs_faster")
    header = ["Spark local[2]", "rows", *[f"{label} (s)" for _, label in engines]]
    header += [f"Spark parquet / {label}" for e, label in engines if e != "spark-parquet"]
    if auto:
        header.append("auto / fastest")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * 2 + "---:|" * (len(header) - 2)]
    for q in spark.get("queries", []):
        ms = {m["engine"]: m for m in q["measurements"]}
        name = q["query"].get("label") or _x_label(q["query"]["x"]) or q["query"]["name"]
        rows = q["query"].get("expected_rows")
        cells = [name, "" if rows is None else f"{rows:,}"]
        cells += [_cell(ms.get(e)) for e, _ in engines]
        r = ratios.get(q["query"]["name"], {})
        cells += [f"{r[e]:.2f}x" if e in r else "n/a" for e, _ in engines if e != "spark-parquet"]
        if auto:
            a = auto.get(q["query"]["name"])
            cells.append("n/a" if a is None else f"{a:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def splice_readme(readme: Path, table: str) -> bool:
    """Put `table` between the headline markers of `readme`; True if the file changed."""
    text = readme.read_text()
    start = text.find(HEADLINE_START)
    end = text.find(HEADLINE_END)
    if start < 0 or end < 0 or end < start:
        raise ValueError(
            f"{readme} needs the markers {HEADLINE_START} and {HEADLINE_END}, in that order"
        )
    new = text[: start + len(HEADLINE_START)] + "\n" + table.strip() + "\n" + text[end:]
    if new == text:
        return False
    readme.write_text(new)
    return True
