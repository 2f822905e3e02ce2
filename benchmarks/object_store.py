"""The seed pair read from an object store: TPC-H lineitem uploaded to a local S3 server
(moto's, on 127.0.0.1), Q-A and Q-B through lazyscan (its default coalescing gap and a 64 KiB
one), Polars and pyarrow reading the same object. Per run: seconds, the requests the server
logged and the bytes it sent (counted by a relay in front of it). Engines interleaved run by run.

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


def _runners(relay: Any, key: str, value: str) -> dict[str, Callable[[bool], tuple[int, dict[str, Any]]]]:
    """Per engine a function ``run(select_star) -> (rows, extra)`` reading through the relay."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    import pyarrow.fs as pafs

    import lazyscan
    from benchmarks.engines import _unview
    from benchmarks.s3_server import ACCESS_KEY, REGION, SECRET_KEY

    def arrow_fs() -> Any:
        return pafs.S3FileSystem(
            endpoint_override=relay.host_port, scheme="http", access_key=ACCESS_KEY, secret_key=SECRET_KEY,
            region=REGION,
        )

    where = lazyscan.col("l_comment") == value

    def lazy(gap: int | None) -> Callable[[bool], tuple[int, dict[str, Any]]]:
        def run(star: bool) -> tuple[int, dict[str, Any]]:
            opts = {} if gap is None else {"coalesce_gap": gap}
            s = lazyscan.scan(key, None if star else ["l_orderkey"], where, filesystem=arrow_fs(), threads=THREADS, **opts)
            rows = s.to_table().num_rows
            return rows, {"profile_requests": s.profile["requests"], "profile_bytes": s.profile["bytes_read"]}

        return run

    def polars(star: bool) -> tuple[int, dict[str, Any]]:
        import polars as pl

        options = {
            "aws_endpoint_url": relay.endpoint, "aws_access_key_id": ACCESS_KEY, "aws_secret_access_key": SECRET_KEY,
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


def measure(lineitem: Path, value: str, reps: int, engines: tuple[str, ...] = ENGINES, progress: Any = None) -> dict[str, Any]:
    """Upload ``lineitem`` to a fresh server and run Q-A / Q-B on every engine ``reps`` times
    after a warm-up run, engines interleaved and their order rotated run by run."""
    import lazyscan
    from benchmarks.s3_server import CountingRelay, start_s3_server

    folder = Path(tempfile.mkdtemp(prefix="lazyscan-s3-bench-"))
    server = start_s3_server(folder)
    relay = CountingRelay(server.port)
    try:
        key = f"{BUCKET}/lineitem/{lineitem.name}"
        server.upload(lineitem, BUCKET, f"lineitem/{lineitem.name}")
        runners = _runners(relay, key, value)
        local: dict[str, Any] = {}
        where = lazyscan.col("l_comment") == value
        for qname, star in (("Q-A", True), ("Q-B", False)):
            lazyscan.scan(str(lineitem), None if star else ["l_orderkey"], where).to_table()
            s = lazyscan.scan(str(lineitem), None if star else ["l_orderkey"], where, threads=THREADS)
            local[qname] = {"rows": s.to_table().num_rows, "bytes": s.profile["bytes_read"], "requests": s.profile["requests"]}
        runs: dict[str, dict[str, list[dict[str, Any]]]] = {q: {e: [] for e in engines} for q in ("Q-A", "Q-B")}
        order = list(engines)
        for rep in range(reps + 1):
            for qname, star in (("Q-A", True), ("Q-B", False)):
                for name in order:
                    req0, bytes0 = server.requests(), relay.bytes_down
                    t0 = time.perf_counter()
                    rows, extra = runners[name](star)
                    seconds = time.perf_counter() - t0
                    time.sleep(0.05)  # the server logs a request after answering it
                    entry = {"seconds": seconds, "rows": rows, "requests": server.requests() - req0,
                             "bytes": relay.bytes_down - bytes0, **extra}
                    if rep > 0:  # the first run warms footers, layouts and compiled kernels
                        runs[qname][name].append(entry)
                    if progress is not None:
                        progress(f"s3 {qname} {LABELS[name]}: {seconds:.2f} s, {entry['requests']} requests, {entry['bytes'] / 1e6:.1f} MB")
            order = order[1:] + order[:1]
        return {"runs": runs, "local": local, "object_bytes": lineitem.stat().st_size, "summary": summarize(runs, local)}
    finally:
        relay.close()
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
    """Per query and engine: median seconds and their range, requests and bytes (medians),
    rows, the bytes against the local read's and the time against Polars'."""
    out: dict[str, Any] = {}
    for qname, by in runs.items():
        q: dict[str, Any] = {}
        for name, entries in by.items():
            if not entries:
                continue
            secs = [e["seconds"] for e in entries]
            q[name] = {
                "label": LABELS[name],
                "median_s": statistics.median(secs), "min_s": min(secs), "max_s": max(secs),
                "requests": int(statistics.median(e["requests"] for e in entries)),
                "bytes": int(statistics.median(e["bytes"] for e in entries)),
                "rows": sorted({e["rows"] for e in entries}),
            }
        base = local[qname]["bytes"]
        for m in q.values():
            m["bytes_vs_local"] = m["bytes"] / base if base else None
        polars = q.get("polars")
        for m in q.values():
            m["time_vs_polars"] = m["median_s"] / polars["median_s"] if polars else None
        out[qname] = q
    return out


def markdown(result: dict[str, Any]) -> str:
    """The scenario's table."""
    lines = [
        "| query | engine | seconds, median (min–max) | requests | MB sent | bytes / local read | time / Polars | rows |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for qname, by in result["summary"].items():
        loc = result["local"][qname]
        lines.append(f"| {qname} | lazyscan, local file | | {loc['requests']} | {loc['bytes'] / 1e6:.1f} | 1.00 | | {loc['rows']:,} |")
        for m in by.values():
            ratio = "" if m["bytes_vs_local"] is None else f"{m['bytes_vs_local']:.2f}"
            vs = "" if m["time_vs_polars"] is None else f"{m['time_vs_polars']:.2f}"
            lines.append(
                f"| {qname} | {m['label']} | {m['median_s']:.2f} ({m['min_s']:.2f}–{m['max_s']:.2f}) | {m['requests']} | "
                f"{m['bytes'] / 1e6:.1f} | {ratio} | {vs} | {', '.join(f'{r:,}' for r in m['rows'])} |"
            )
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
            "`s3://` URI; pyarrow `dataset` batches, cast and filtered. Requests: the GETs and HEADs the "
            "server logged; MB sent: what it sent back, headers included. moto copies the whole object on "
            "each ranged GET (about 0.1 s per request here, whatever the range), so time follows the request "
            "count. Medians of the timed runs after a warm-up, engines interleaved run by run."
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
    agree = {tuple(m["rows"]) for by in result["summary"].values() for m in by.values()}
    res.derived["rows_agree"] = all(len(r) == 1 for r in agree) and all(
        m["rows"] == [result["local"][q]["rows"]] for q, by in result["summary"].items() for m in by.values()
    )
    return res
