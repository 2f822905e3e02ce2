"""What checking page checksums costs on local reads (``verify_checksums``).

TPC-H lineitem is written again by pyarrow twice, with page checksums
(``write_page_checksum=True``) and without, with the source file's row groups and codec (cached
under ``data/tpch/sf<N>/checksums/``). On each copy, with verification on and off, run by run
in turn: the seed pair (Q-A ``select * where l_comment = V``, Q-B the same selecting
``l_orderkey``) and a full read of a few columns. On the copy without checksums the option
costs only the walk over the page headers that finds none; on the copy with them, one CRC-32 of
every fetched page's stored bytes (``zlib.crc32``). The medians, spreads and the cost in
percent decide the option's default.

Run: ``python -m benchmarks run checksums --sf 1`` (not part of ``all``), or
``python -m benchmarks.checksum_bench [--sf 1] [--reps 7]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from benchmarks import THREADS

#: the columns of the full read
FULL_COLUMNS = ("l_orderkey", "l_extendedprice", "l_shipdate", "l_comment")
QUERIES = ("Q-A", "Q-B", "full")


def checksum_copies(lineitem: Path, out_dir: Path) -> dict[str, Path]:
    """``{"crc": path, "no-crc": path}``: lineitem written by pyarrow with and without page
    checksums, row group by row group as the source has them, same codec (kept once written)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    src = pq.ParquetFile(lineitem)
    md = src.metadata
    codec = md.row_group(0).column(0).compression.lower() if md.num_row_groups else "snappy"
    copies = {"crc": out_dir / "lineitem_crc.parquet", "no-crc": out_dir / "lineitem_nocrc.parquet"}
    for kind, path in copies.items():
        if path.exists():
            continue
        tmp = path.with_suffix(".tmp")
        with pq.ParquetWriter(tmp, src.schema_arrow, compression=codec, write_page_checksum=kind == "crc") as w:
            for i in range(md.num_row_groups):
                w.write_table(src.read_row_group(i), row_group_size=md.row_group(i).num_rows)
        tmp.rename(path)
    return copies


def measure(copies: dict[str, Path], value: str, reps: int, threads: int = THREADS) -> dict[str, Any]:
    """Wall and CPU seconds (the process's, all threads) of every (copy, query, verification)
    run, interleaved run by run after a warm-up of each, with medians, spreads and the cost of
    verification in percent of the time without. On a shared machine the CPU seconds are the
    steadier measure of the work verification adds."""
    import lazyscan
    from benchmarks.engines import run_order

    where = lazyscan.col("l_comment") == value

    def runner(path: Path, query: str, verify: bool) -> Any:
        columns: list[str] | None = {"Q-A": None, "Q-B": ["l_orderkey"], "full": list(FULL_COLUMNS)}[query]
        predicate = None if query == "full" else where

        def run() -> int:
            return lazyscan.scan(str(path), columns, predicate, threads=threads, verify_checksums=verify).to_table().num_rows

        return run

    fns = {
        f"{kind}|{query}|{'on' if verify else 'off'}": runner(path, query, verify)
        for kind, path in copies.items()
        for query in QUERIES
        for verify in (True, False)
    }
    names = list(fns)
    rows = {name: fn() for name, fn in fns.items()}
    wall: dict[str, list[float]] = {k: [] for k in names}
    cpu: dict[str, list[float]] = {k: [] for k in names}
    for rep in range(reps):
        for i in run_order(len(names), rep):
            t0, c0 = time.perf_counter(), time.process_time()
            fns[names[i]]()
            wall[names[i]].append(time.perf_counter() - t0)
            cpu[names[i]].append(time.process_time() - c0)
    summary: dict[str, Any] = {}
    for name in names:
        kind, query, verify = name.split("|")
        summary.setdefault(kind, {}).setdefault(query, {})[verify] = {
            **{f"{label}_{k}": v for label, ts in (("wall", wall[name]), ("cpu", cpu[name])) for k, v in _spread(ts).items()},
            "wall_runs_s": [round(t, 4) for t in wall[name]],
            "rows": rows[name],
        }
    for by_query in summary.values():
        for entry in by_query.values():
            for label in ("wall", "cpu"):
                on, off = entry["on"][f"{label}_median_s"], entry["off"][f"{label}_median_s"]
                entry[f"{label}_cost_pct"] = round(100 * (on - off) / off, 1) if off else None
    return {"reps": reps, "threads": threads, "value": value, "summary": summary, "files": {k: str(p) for k, p in copies.items()}}


def verification_seconds(copies: dict[str, Path], value: str, reps: int, threads: int = THREADS) -> dict[str, Any]:
    """The seconds each query spends in the check itself (finding the pages, their CRC-32s),
    timed around :func:`lazyscan.parquet.checksums.mismatches` in scans with verification on:
    the work the option adds, measured directly, which on a busy machine is steadier than the
    difference of two noisy totals. Medians over ``reps`` scans."""
    import lazyscan
    from lazyscan.parquet import checksums

    where = lazyscan.col("l_comment") == value
    spent = [0.0]
    checked = [0]
    original = checksums.mismatches

    def timed(buf: Any, starts: Any, ends: Any, limits: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return original(buf, starts, ends, limits)
        finally:
            spent[0] += time.perf_counter() - t0
            checked[0] += int((ends - starts).sum())

    out: dict[str, Any] = {}
    checksums.mismatches = timed  # type: ignore[assignment]
    try:
        for kind, path in copies.items():
            for query in QUERIES:
                columns: list[str] | None = {"Q-A": None, "Q-B": ["l_orderkey"], "full": list(FULL_COLUMNS)}[query]
                runs = []
                for _ in range(reps):
                    spent[0], checked[0] = 0.0, 0
                    lazyscan.scan(str(path), columns, None if query == "full" else where, threads=threads).to_table()
                    runs.append(spent[0])
                out.setdefault(kind, {})[query] = {
                    "check_median_s": round(statistics.median(runs), 4), "check_min_s": round(min(runs), 4),
                    "bytes_checked": checked[0],
                }
    finally:
        checksums.mismatches = original  # type: ignore[assignment]
    return out


def _spread(ts: list[float]) -> dict[str, float]:
    return {"median_s": round(statistics.median(ts), 4), "min_s": round(min(ts), 4), "max_s": round(max(ts), 4)}


def summarize(result: dict[str, Any]) -> list[str]:
    lines = [
        f"verify_checksums on vs off, {result['reps']} runs each, {result['threads']} threads: "
        "median [min-max] seconds, wall and CPU"
    ]
    for kind, by_query in result["summary"].items():
        for query, e in by_query.items():
            parts = []
            for label in ("wall", "cpu"):
                on, off = e["on"], e["off"]
                parts.append(
                    f"{label} on {on[f'{label}_median_s']:.3f} [{on[f'{label}_min_s']:.3f}-{on[f'{label}_max_s']:.3f}] "
                    f"off {off[f'{label}_median_s']:.3f} [{off[f'{label}_min_s']:.3f}-{off[f'{label}_max_s']:.3f}] "
                    f"{e[f'{label}_cost_pct']:+.1f} %"
                )
            lines.append(f"  {kind:7} {query:5} " + " | ".join(parts))
    for kind, by_query in result.get("check", {}).items():
        for query, e in by_query.items():
            off = result["summary"][kind][query]["off"]["cpu_median_s"]
            lines.append(
                f"  {kind:7} {query:5} the check itself: {e['check_median_s']:.4f} s median "
                f"({100 * e['check_median_s'] / off:.1f} % of the CPU time without), "
                f"{e['bytes_checked'] / 1e6:.0f} MB of pages walked"
            )
    return lines


def scenario(ctx: Any) -> Any:
    """The ``checksums`` scenario of ``python -m benchmarks run checksums`` (not part of ``all``)."""
    from benchmarks.data import ensure_tpch, pick_query_value
    from benchmarks.scenarios import ScenarioResult
    from benchmarks.ui import console

    sf = ctx.seed_sf
    res = ScenarioResult(
        name="checksums",
        title=f"Page checksums: what verify_checksums costs on TPC-H SF{sf:g} lineitem, local reads",
        description=(
            "lineitem written again by pyarrow with page checksums (write_page_checksum=True) and without, "
            "same row groups and codec. Q-A `select * where l_comment = V`, Q-B `select l_orderkey ...` and a "
            f"full read of {', '.join(FULL_COLUMNS)}, with verify_checksums on and off, run by run in turn; "
            "medians, spreads, and the cost in percent of the time without verification."
        ),
        params={"sf": sf, "reps": ctx.reps, "threads": THREADS},
        chart={"kind": "none"},
    )
    dataset = ensure_tpch(sf, data_dir=ctx.data_dir, progress=ctx.progress)
    value = pick_query_value(dataset, target=ctx.sizes.value_target)
    res.params.update(value=value.value, value_rows=value.rows)
    copies = checksum_copies(Path(dataset.lineitem), Path(dataset.lineitem).parent / "checksums")
    result = measure(copies, value.value, max(ctx.reps, 3))
    result["check"] = verification_seconds(copies, value.value, max(ctx.reps, 3))
    for line in summarize(result):
        console.print(f"  {line}")
    res.derived["checksums"] = result
    counts = {(query, e[v]["rows"]) for by_query in result["summary"].values() for query, e in by_query.items() for v in ("on", "off")}
    res.derived["rows_agree"] = len(counts) == len(QUERIES)
    return res


def main(argv: list[str] | None = None) -> None:
    from benchmarks.data import ensure_tpch, pick_query_value

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--sf", type=float, default=1)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--threads", type=int, default=THREADS)
    ap.add_argument("--json", default=None, help="write the results to this file")
    ap.add_argument("--zlib", action="store_true", help="compute CRC-32s with zlib's, not zlib-ng's")
    args = ap.parse_args(argv)
    if args.zlib:
        import zlib

        from lazyscan.parquet import checksums

        checksums._crc32 = zlib.crc32
    dataset = ensure_tpch(args.sf)
    value = pick_query_value(dataset, target=100)
    copies = checksum_copies(Path(dataset.lineitem), Path(dataset.lineitem).parent / "checksums")
    result = measure(copies, value.value, args.reps, args.threads)
    result["check"] = verification_seconds(copies, value.value, args.reps, args.threads)
    print("\n".join(summarize(result)))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
