"""The seed pair read from an object store: TPC-H lineitem uploaded to a local S3 server
(moto's, on 127.0.0.1), Q-A and Q-B through lazyscan (its default coalescing gap, a 64 KiB and
an 8 MiB one), Polars and pyarrow reading the same object, through a proxy in front of the
server (:class:`benchmarks.s3_server.FaultProxy`): once as it is, once with a seeded 10 % of
the requests answered ``503 SlowDown``. Per run: seconds, whether the read succeeded, the
requests the proxy saw (throttled ones included), how many it throttled and the bytes it sent
back. Engines and conditions interleaved run by run.

moto copies the whole object on every ranged GET, so a request costs it about 0.1 s for a
231 MB object whatever the range: on this server time follows the request count, far more
than on S3, where a request costs tens of milliseconds and many run at once.

Run: ``python -m benchmarks run s3 --sf 1`` (not part of ``all``).
"""

from __future__ import annotations

import itertools
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import THREADS

BUCKET = "tpch"
GAPS = {"lazyscan": None, "lazyscan-gap64k": 64 * 1024, "lazyscan-gap8m": 8 * 1024 * 1024}
ENGINES = ("lazyscan", "lazyscan-gap64k", "lazyscan-gap8m", "polars", "pyarrow")
LABELS = {
    "lazyscan": "lazyscan (gap 1 MiB, default)",
    "lazyscan-gap64k": "lazyscan (gap 64 KiB)",
    "lazyscan-gap8m": "lazyscan (gap 8 MiB)",
    "polars": "Polars",
    "pyarrow": "pyarrow",
    "lazyscan-local": "lazyscan, local file",
}


def _runners(proxy: Any, key: str, value: str) -> dict[str, Callable[[bool], tuple[int, dict[str, Any]]]]:
    """Per engine a function ``run(select_star) -> (rows, extra)`` reading through the proxy."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    import pyarrow.fs as pafs

    import lazyscan
    from benchmarks.engines import _unview
    from benchmarks.s3_server import ACCESS_KEY, REGION, SECRET_KEY

    def arrow_fs() -> Any:
        return pafs.S3FileSystem(
            endpoint_override=proxy.host_port, scheme="http", access_key=ACCESS_KEY, secret_key=SECRET_KEY,
            region=REGION,
        )

    where = lazyscan.col("l_comment") == value

    def lazy(gap: int | None) -> Callable[[bool], tuple[int, dict[str, Any]]]:
        def run(star: bool) -> tuple[int, dict[str, Any]]:
            opts = {} if gap is None else {"coalesce_gap": gap}
            s = lazyscan.scan(key, None if star else ["l_orderkey"], where, filesystem=arrow_fs(), threads=THREADS, **opts)
            rows = s.to_table().num_rows
            profile = s.profile
            return rows, {
                "profile_requests": profile["requests"], "profile_bytes": profile["bytes_read"],
                "profile_retries": profile.counters.get("retries", 0), "profile_retrying_s": profile.timings.get("retrying", 0.0),
            }

        return run

    def polars(star: bool) -> tuple[int, dict[str, Any]]:
        import polars as pl

        options = {
            "aws_endpoint_url": proxy.endpoint, "aws_access_key_id": ACCESS_KEY, "aws_secret_access_key": SECRET_KEY,
            "aws_region": REGION, "aws_allow_http": "true",
        }
        lf = pl.scan_parquet(f"s3://{key}", storage_options=options).filter(pl.col("l_comment") == value)
        if not star:
            lf = lf.select("l_orderkey")
        return lf.collect().height, {}

    def pyarrow_read(star: bool) -> tuple[int, dict[str, Any]]:
        # tpchgen-cli stores string_view columns, which pyarrow's filter kernels do not take:
        # read in batches, cast, filter (no pushdown), as the local pyarrow engine does
        dataset = ds.dataset(key, filesystem=arrow_fs(), format="parquet")
        columns = dataset.schema.names if star else ["l_orderkey", "l_comment"]
        rows = 0
        for batch in dataset.to_batches(columns=columns, use_threads=True):
            t = pa.Table.from_batches([_unview(batch)])
            rows += t.filter(pc.equal(t["l_comment"], value)).num_rows
        return rows, {}

    return {**{name: lazy(gap) for name, gap in GAPS.items()}, "polars": polars, "pyarrow": pyarrow_read}


#: the conditions of the measurement: (name, share of requests answered 503 SlowDown)
CONDITIONS = (("clean", 0.0), ("10% throttled", 0.1))
#: the engines measured under throttling (the gap variants only change how many requests there are)
THROTTLED_ENGINES = ("lazyscan", "polars", "pyarrow")
THROTTLE_SEED = 34


def measure(
    lineitem: Path,
    value: str,
    reps: int,
    engines: tuple[str, ...] = ENGINES,
    progress: Any = None,
    conditions: tuple[tuple[str, float], ...] = CONDITIONS,
) -> dict[str, Any]:
    """Upload ``lineitem`` to a fresh server and run Q-A / Q-B on every engine ``reps`` times
    after a warm-up run, under each condition: engines and conditions interleaved, the engines'
    order rotated run by run. A throttled run answers each request ``503 SlowDown`` with the
    condition's probability, decided from a seed (the repetition's), the request's range and how
    often it was asked for in that run; a failed read is recorded with its error."""
    import lazyscan
    from benchmarks.s3_server import FaultProxy, Rule, start_s3_server, status

    folder = Path(tempfile.mkdtemp(prefix="lazyscan-s3-bench-"))
    server = start_s3_server(folder)
    proxy = FaultProxy(server.port)
    try:
        key = f"{BUCKET}/lineitem/{lineitem.name}"
        server.upload(lineitem, BUCKET, f"lineitem/{lineitem.name}")
        runners = _runners(proxy, key, value)
        local: dict[str, Any] = {}
        where = lazyscan.col("l_comment") == value
        for qname, star in (("Q-A", True), ("Q-B", False)):
            lazyscan.scan(str(lineitem), None if star else ["l_orderkey"], where).to_table()
            s = lazyscan.scan(str(lineitem), None if star else ["l_orderkey"], where, threads=THREADS)
            local[qname] = {"rows": s.to_table().num_rows, "bytes": s.profile["bytes_read"], "requests": s.profile["requests"]}
        chosen = {cond: engines if share == 0 else tuple(e for e in engines if e in THROTTLED_ENGINES) for cond, share in conditions}
        runs: dict[str, dict[str, dict[str, list[dict[str, Any]]]]] = {
            cond: {q: {e: [] for e in chosen[cond]} for q in ("Q-A", "Q-B")} for cond, _ in conditions
        }
        order = list(engines)
        for rep in range(reps + 1):
            for cond, share in conditions:
                rules = [Rule(status(503), method=None, fraction=share, seed=THROTTLE_SEED + rep)] if share > 0 else []
                for qname, star in (("Q-A", True), ("Q-B", False)):
                    for name in (e for e in order if e in chosen[cond]):
                        proxy.reset_counters()
                        proxy.set_rules(*rules)
                        t0 = time.perf_counter()
                        error = None
                        try:
                            rows, extra = runners[name](star)
                        except Exception as e:  # a failed read is a result of the throttled runs
                            rows, extra, error = None, {}, f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"
                        seconds = time.perf_counter() - t0
                        proxy.set_rules()
                        entry = {
                            "seconds": seconds, "rows": rows, "ok": error is None, "error": error,
                            "requests": len(proxy.log), "throttled": proxy.injected["503"], "bytes": proxy.bytes_down, **extra,
                        }
                        if rep > 0:  # the first run warms footers, layouts and compiled kernels
                            runs[cond][qname][name].append(entry)
                        if progress is not None:
                            outcome = "ok" if error is None else f"FAILED ({error[:120]})"
                            progress(
                                f"s3 {cond} {qname} {LABELS[name]}: {seconds:.2f} s, {entry['requests']} requests "
                                f"({entry['throttled']} throttled), {entry['bytes'] / 1e6:.1f} MB, {outcome}"
                            )
            order = order[1:] + order[:1]
        summary = {cond: summarize(by_query, local) for cond, by_query in runs.items()}
        return {
            "runs": runs, "local": local, "object_bytes": lineitem.stat().st_size, "summary": summary,
            "conditions": {cond: share for cond, share in conditions}, "seed": THROTTLE_SEED,
        }
    finally:
        proxy.close()
        server.stop()


def request_bound(lineitem: Path, value: str, budgets: tuple[float, ...] = (1.0, 1.1, 1.2, 1.5)) -> dict[str, Any]:
    """The fewest requests Q-A could make at each byte budget (a multiple of the bytes it must
    read), knowing every needed range in advance: the whole ``l_comment`` chunk of each row
    group and, where it matches, the dictionary and data pages of the other columns holding a
    match (from the page index); the closest ranges are merged first until the budget is spent."""
    from benchmarks.reader_bench import comment_matches, needed_pages
    from lazyscan.parquet import ParquetFile

    hits = dict(comment_matches(lineitem, value))
    pf = ParquetFile(str(lineitem))
    ranges: list[tuple[int, int]] = []
    try:
        for rg in range(pf.num_row_groups):
            rows = hits.get(rg)
            for desc in pf.schema.columns:
                if desc.name == "l_comment":
                    ranges.append(pf.chunk_range(rg, desc.index))
                elif rows is not None:
                    ranges += needed_pages(pf.page_layout(rg, desc.name), rows)
    finally:
        pf.close()
    ranges.sort()
    needed = sum(length for _, length in ranges)
    gaps = sorted(max(0, b[0] - (a[0] + a[1])) for a, b in itertools.pairwise(ranges))
    out: dict[str, Any] = {"ranges": len(ranges), "needed_bytes": needed, "fewest_requests": {}}
    for budget in budgets:
        spare = (budget - 1.0) * needed
        merged = 0
        for g in gaps:
            if g > spare:
                break
            spare -= g
            merged += 1
        out["fewest_requests"][f"{budget:g}"] = len(ranges) - merged
    return out


def summarize(runs: dict[str, dict[str, list[dict[str, Any]]]], local: dict[str, Any]) -> dict[str, Any]:
    """Per query and engine: runs that succeeded, median seconds of those and their range,
    requests, throttled requests and bytes (medians), rows, the bytes against the local read's
    and the time against Polars'. The first error of a failed run is kept."""
    out: dict[str, Any] = {}
    for qname, by in runs.items():
        q: dict[str, Any] = {}
        for name, entries in by.items():
            if not entries:
                continue
            done = [e for e in entries if e.get("ok", True)]
            timed = done or entries
            secs = [e["seconds"] for e in timed]
            q[name] = {
                "label": LABELS[name],
                "succeeded": len(done), "runs": len(entries),
                "error": next((e["error"] for e in entries if not e.get("ok", True)), None),
                "median_s": statistics.median(secs), "min_s": min(secs), "max_s": max(secs),
                "requests": int(statistics.median(e["requests"] for e in timed)),
                "throttled": int(statistics.median(e.get("throttled", 0) for e in timed)),
                "bytes": int(statistics.median(e["bytes"] for e in timed)),
                "rows": sorted({e["rows"] for e in done}),
            }
            if any("profile_retries" in e for e in timed):
                q[name]["profile_retries"] = statistics.median(e.get("profile_retries", 0) for e in timed)
                q[name]["profile_retrying_s"] = statistics.median(e.get("profile_retrying_s", 0.0) for e in timed)
        base = local[qname]["bytes"]
        for m in q.values():
            m["bytes_vs_local"] = m["bytes"] / base if base else None
        polars = q.get("polars")
        for m in q.values():
            m["time_vs_polars"] = m["median_s"] / polars["median_s"] if polars and polars["succeeded"] else None
        out[qname] = q
    return out


def markdown(result: dict[str, Any]) -> str:
    """The scenario's table: one row per condition, query and engine (runs before the throttled
    condition existed have one, unnamed)."""
    by_condition = result["summary"] if "conditions" in result else {"clean": result["summary"]}
    shares = result.get("conditions", {"clean": 0.0})
    lines = [
        "| condition | query | engine | succeeded | seconds, median (min–max) | requests | throttled | MB sent "
        "| bytes / local read | time / Polars | rows |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    errors: list[str] = []
    for cond, summary in by_condition.items():
        for qname, by in summary.items():
            loc = result["local"][qname]
            if shares.get(cond, 0) == 0:
                lines.append(
                    f"| {cond} | {qname} | lazyscan, local file | | | {loc['requests']} | | {loc['bytes'] / 1e6:.1f} | 1.00 | "
                    f"| {loc['rows']:,} |"
                )
            for m in by.values():
                ratio = "" if m["bytes_vs_local"] is None else f"{m['bytes_vs_local']:.2f}"
                vs = "" if m["time_vs_polars"] is None else f"{m['time_vs_polars']:.2f}"
                ok = f"{m.get('succeeded', len(m['rows']))}/{m.get('runs', len(m['rows']))}"
                lines.append(
                    f"| {cond} | {qname} | {m['label']} | {ok} | {m['median_s']:.2f} ({m['min_s']:.2f}–{m['max_s']:.2f}) | "
                    f"{m['requests']} | {m.get('throttled', 0)} | {m['bytes'] / 1e6:.1f} | {ratio} | {vs} | "
                    f"{', '.join(f'{r:,}' for r in m['rows'])} |"
                )
                if m.get("error"):
                    errors.append(f"- {cond}, {qname}, {m['label']}: {m['error']}")
    retried = [
        f"{cond} {qname}: {m['profile_retries']:g} retries, {m['profile_retrying_s']:.2f} s lost to them"
        for cond, summary in by_condition.items() if shares.get(cond, 0) > 0
        for qname, by in summary.items() for name, m in by.items() if name == "lazyscan" and "profile_retries" in m
    ]
    if retried:
        lines += ["", "lazyscan's profile of its default reads (medians): " + "; ".join(retried) + "."]
    if errors:
        lines += ["", "Failed runs (the first error of each engine):", "", *errors]
    bound = result.get("bound")
    if bound:
        fewest = ", ".join(f"{b}x: {n:,}" for b, n in bound["fewest_requests"].items())
        lines += [
            "",
            f"Q-A must read {bound['needed_bytes'] / 1e6:.1f} MB in {bound['ranges']:,} ranges (the `l_comment` chunks, and the "
            f"pages holding a match of the other columns). The fewest requests within a byte budget, merging the "
            f"closest ranges first: {fewest}.",
        ]
    return "\n".join(lines)


def scenario(ctx: Any) -> Any:
    """The ``s3`` scenario of ``python -m benchmarks run s3`` (not part of ``all``)."""
    from benchmarks.data import ensure_tpch, pick_query_value
    from benchmarks.scenarios import ScenarioResult

    sf = ctx.seed_sf
    res = ScenarioResult(
        name="s3",
        title=f"Object store: the seed pair on TPC-H SF{sf:g} lineitem in a local S3 server",
        description=(
            "lineitem uploaded to moto's S3 server on 127.0.0.1; Q-A `select * where l_comment = V`, Q-B "
            "`select l_orderkey ...`. lazyscan in-process (pyarrow's S3FileSystem, 2 threads, read-ahead on) with its "
            "default coalescing gap on object stores (1 MiB), with 64 KiB and with 8 MiB; Polars `scan_parquet` on the "
            "`s3://` URI; pyarrow `dataset` batches, cast and filtered. Every engine reads through a proxy in front "
            "of the server: clean, and with 10 % of the requests answered `503 SlowDown` (seeded; lazyscan's "
            "default, Polars and pyarrow), each with its own retries. Requests: those the proxy saw, throttled "
            "ones included; MB sent: what it sent back, headers included; succeeded: runs that returned rows "
            "(times are of those). moto copies the whole object on each ranged GET (about 0.1 s per request "
            "here, whatever the range), so time follows the request count. Medians of the timed runs after a "
            "warm-up, engines and conditions interleaved run by run."
        ),
        params={"sf": sf, "reps": ctx.reps},
    )
    chosen = {e.name for e in ctx.engines}
    engines = tuple(n for n in ENGINES if n.split("-")[0] in chosen)
    if not engines:
        res.status = "skipped: none of lazyscan, polars, pyarrow among the chosen engines"
        return res
    dataset = ensure_tpch(sf, data_dir=ctx.data_dir, progress=ctx.progress)
    value = pick_query_value(dataset, target=ctx.sizes.value_target)
    res.params.update(value=value.value, value_rows=value.rows)
    from benchmarks.ui import console

    result = measure(Path(dataset.lineitem), value.value, ctx.reps, engines, progress=lambda line: console.print(f"  {line}"))
    result["bound"] = request_bound(Path(dataset.lineitem), value.value)
    res.derived["object_store"] = result
    done = [(q, m) for summary in result["summary"].values() for q, by in summary.items() for m in by.values()]
    res.derived["rows_agree"] = all(m["rows"] in ([], [result["local"][q]["rows"]]) for q, m in done)
    return res
