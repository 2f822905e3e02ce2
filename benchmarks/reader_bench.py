"""Physical reader benchmark: full decodes and row selections against pyarrow, one thread.

For each column of TPC-H lineitem: the time to decode every row group with
``ParquetFile.read_column`` vs ``pyarrow.parquet.ParquetFile.read_row_group`` (use_threads=False),
and for row selections (1 row, 0.001% .. 10% of rows, uniform or as a few clustered runs) the time
of a selective read vs pyarrow's full read plus ``take``. Bytes fetched and decompressed come from
the reader's counters. Cold start (first import and first read with an empty numba cache) is
measured in a subprocess.

Run: ``python -m benchmarks.reader_bench [--sf 1] [--reps 3] [--columns a,b]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

FRACTIONS = (0.00001, 0.0001, 0.001, 0.01, 0.1)


def _median_time(fn: Callable[[], Any], reps: int) -> float:
    return statistics.median(interleaved({"fn": fn}, reps)["fn"])


def interleaved(fns: dict[str, Callable[[], Any]], reps: int) -> dict[str, list[float]]:
    """Seconds of ``reps`` runs of each function after a warm-up of each, run by run: repetition
    1 of every function, then repetition 2, ... in an order that changes from run to run
    (:func:`.engines.run_order`), so that none always runs right after the same one (a full read
    leaves the caches cold for whatever comes next)."""
    from benchmarks.engines import run_order

    names = list(fns)
    for fn in fns.values():
        fn()
    times: dict[str, list[float]] = {k: [] for k in names}
    for rep in range(reps):
        for i in run_order(len(names), rep):
            t0 = time.perf_counter()
            fns[names[i]]()
            times[names[i]].append(time.perf_counter() - t0)
    return times


def selections(num_rows: int, kind: str, frac: float | None, rng: np.random.Generator) -> np.ndarray:
    """Row indices: one row (frac None), or ``frac`` of rows uniform or in 5 clustered runs."""
    if frac is None:
        return np.array([int(rng.integers(0, num_rows))])
    k = max(1, int(num_rows * frac))
    if kind == "uniform":
        return np.sort(rng.choice(num_rows, size=k, replace=False))
    runs = 5 if k >= 5 else 1
    per = k // runs
    starts = np.sort(rng.choice(max(1, num_rows - per), size=runs, replace=False))
    return np.unique(np.concatenate([np.arange(s, s + per) for s in starts]))


def split_rows(picked: np.ndarray, unit_rows: list[int]) -> list[tuple[int, np.ndarray]]:
    """Sorted file-wide row indices as (unit, indices within it) for the units holding any."""
    out = []
    base = 0
    for unit, n in enumerate(unit_rows):
        lo, hi = np.searchsorted(picked, [base, base + n])
        if hi > lo:
            out.append((unit, picked[lo:hi] - base))
        base += n
    return out


def _take(arr: pa.ChunkedArray, idx: np.ndarray) -> pa.ChunkedArray:
    # tpchgen-cli stores string_view in its Arrow schema; pyarrow has no take for views
    if pa.types.is_string_view(arr.type):
        arr = arr.cast(pa.string())
    elif pa.types.is_binary_view(arr.type):
        arr = arr.cast(pa.binary())
    return arr.take(pa.array(idx))


def comment_matches(path: Path | str, value: str) -> list[tuple[int, np.ndarray]]:
    """``(row group, rows)`` of each row group of a lineitem file with rows where
    ``l_comment = value`` (read with pyarrow, the reference)."""
    import pyarrow.compute as pc

    ref = pq.ParquetFile(path)
    hit = []
    for rg in range(ref.num_row_groups):
        comments = ref.read_row_group(rg, columns=["l_comment"]).column(0).cast(pa.string())
        rows = pc.indices_nonzero(pc.fill_null(pc.equal(comments, value), False)).to_numpy()
        if len(rows):
            hit.append((rg, rows.astype(np.int64)))
    return hit


def needed_pages(layout: Any, idx: np.ndarray) -> list[tuple[int, int]]:
    """(offset, size) of the pages a read of rows ``idx`` must fetch: the dictionary page and
    every data page holding a selected row."""
    pages = [layout.dictionary] if layout.dictionary is not None else []
    lo = np.searchsorted(idx, layout.page_starts)
    hi = np.searchsorted(idx, layout.page_ends)
    pages += [(p.offset, p.size) for p, a, b in zip(layout.pages, lo, hi) if a < b]
    return pages


def decompress_floor_seconds(pf: Any, wanted: list[tuple[int, np.ndarray]], name: str, reps: int) -> float:
    """Time to decompress what a selective read of ``wanted`` must decompress and nothing
    else: the dictionary page and the data pages holding a selected row of each row group.
    No read can do less, so ``pyarrow time / this`` bounds a selective read's speedup.
    ``wanted`` with empty selections: the dictionary pages alone."""
    fn = decompress_floor(pf, wanted, name)
    return 0.0 if fn is None else _median_time(fn, reps)


def decompress_floor(pf: Any, wanted: list[tuple[int, np.ndarray]], name: str) -> Callable[[], Any] | None:
    """What :func:`decompress_floor_seconds` times (None: nothing to decompress)."""
    from lazyscan.parquet import codecs

    bodies = _needed_bodies(pf, wanted, name)
    if not bodies:
        return None
    return lambda: [codecs.decompress(c, b, n) for c, b, n in bodies]


def parallel_decompress_floor_seconds(
    pf: Any, wanted: list[tuple[int, np.ndarray]], names: list[str], threads: int, reps: int
) -> float:
    """:func:`decompress_floor_seconds` of several columns at once, the pages shared among
    ``threads`` threads as evenly as their sizes allow: what that floor takes on this machine
    with that many threads, rather than the one-thread time divided by them (two threads of
    nogil decompression gain 1.6x here, not 2x)."""
    from concurrent.futures import ThreadPoolExecutor

    from lazyscan.parquet import codecs

    bodies = sorted((b for name in names for b in _needed_bodies(pf, wanted, name)), key=lambda b: -len(b[1]))
    if not bodies:
        return 0.0
    shares: list[list[tuple[int, np.ndarray, int]]] = [[] for _ in range(threads)]
    loads = [0] * threads
    for body in bodies:  # largest first, each to the least loaded thread
        k = loads.index(min(loads))
        shares[k].append(body)
        loads[k] += body[2]

    def work(share: list[tuple[int, np.ndarray, int]]) -> None:
        for c, b, n in share:
            codecs.decompress(c, b, n)

    with ThreadPoolExecutor(threads) as pool:
        return _median_time(lambda: list(pool.map(work, shares)), reps)


def _needed_bodies(pf: Any, wanted: list[tuple[int, np.ndarray]], name: str) -> list[tuple[int, np.ndarray, int]]:
    """(codec, compressed body, decompressed size) of every page :func:`decompress_floor`
    decompresses."""
    from lazyscan.parquet.page_header import parse_page_header

    bodies = []
    for rg, idx in wanted:
        codec = pf.column_chunk(rg, name)[2].codec
        for off, size in needed_pages(pf.page_layout(rg, name), idx):
            raw = np.frombuffer(pf.source.read_at(off, size), dtype=np.uint8)
            h = parse_page_header(raw, 0, size)
            start, usize = h.header_size, h.uncompressed_page_size
            v2 = h.data_page_header_v2
            if v2 is not None:
                if not v2.is_compressed:
                    continue
                levels = v2.definition_levels_byte_length + v2.repetition_levels_byte_length
                start, usize = start + levels, usize - levels
            bodies.append((codec, raw[start : h.header_size + h.compressed_page_size], usize))
    return bodies


def read_floor_seconds(pf: Any, wanted: list[tuple[int, np.ndarray]], name: str, reps: int) -> float:
    """Time to read from the file, warm in the page cache, the pages
    :func:`decompress_floor_seconds` decompresses (one ``pread`` per chunk, its needed pages
    being adjacent or not, into one reused buffer): what a reader that copies pages out of the
    page cache pays beside decompressing them."""
    fn = read_floor(pf, wanted, name)
    if fn is None:
        return 0.0
    try:
        return _median_time(fn, reps)
    finally:
        fn.close()


class PageReads:
    """What :func:`read_floor_seconds` times: one ``preadv`` per span into a reused buffer,
    with the file open until :meth:`close`."""

    def __init__(self, path: str, spans: list[tuple[int, int]]) -> None:
        self.spans = spans
        self.view = memoryview(bytearray(max(n for _, n in spans)))
        self.fd = os.open(path, os.O_RDONLY)

    def __call__(self) -> None:
        for off, n in self.spans:
            os.preadv(self.fd, [self.view[:n]], off)

    def close(self) -> None:
        os.close(self.fd)


def read_floor(pf: Any, wanted: list[tuple[int, np.ndarray]], name: str) -> PageReads | None:
    """The reads :func:`read_floor_seconds` times (None when no page is needed)."""
    spans = []
    for rg, idx in wanted:
        pages = needed_pages(pf.page_layout(rg, name), idx)
        if pages:
            start = min(off for off, _ in pages)
            spans.append((start, max(off + size for off, size in pages) - start))
    return PageReads(pf.path, spans) if spans else None


def chunk_overhead(pf: Any, reps: int, seed: int = 0) -> dict[str, Any]:
    """Cost of a selective read per column chunk beyond fetching and decompressing its pages.

    One random row per row group, every flat column, read in one pass per row group
    (``read_columns``) and column by column (``read_column``), interleaved. The reader's own
    counters time its reads and its decompression; ``(wall - io - decompress) / chunks`` is what
    remains per chunk: Python work plus the decode kernels (a few values each). Pages are
    decompressed whole here (``partial_decompression`` off), so that no decompression hides
    in the decode kernels' share."""
    from lazyscan.format.options import ReaderOptions
    from lazyscan.parquet import ParquetFile, ReadCounters

    pf = ParquetFile(pf.path, options=ReaderOptions(partial_decompression=False))

    rng = np.random.default_rng(seed)
    flat = [c.index for c in pf.schema.columns if c.flat]
    rows = [np.array([int(rng.integers(0, rg.num_rows))]) for rg in pf.metadata.row_groups if rg.num_rows]
    rgs = range(len(rows))
    reads = {
        "one_pass": lambda c: [pf.read_columns(rg, flat, rows[rg], counters=c) for rg in rgs],
        "per_column": lambda c: [pf.read_column(rg, col, rows[rg], counters=c) for rg in rgs for col in flat],
    }
    for read in reads.values():
        read(ReadCounters())
    rest: dict[str, list[float]] = {k: [] for k in reads}
    wall: dict[str, list[float]] = {k: [] for k in reads}
    io: dict[str, list[float]] = {k: [] for k in reads}
    for _ in range(reps):
        for k, read in reads.items():
            c = ReadCounters()
            t0 = time.perf_counter()
            read(c)
            t = time.perf_counter() - t0
            wall[k].append(t)
            io[k].append(c.io_seconds + c.decompress_seconds)
            rest[k].append(t - c.io_seconds - c.decompress_seconds)
    chunks = len(rows) * len(flat)
    out: dict[str, Any] = {"chunks": chunks}
    for k in reads:
        out[f"{k}_s"] = statistics.median(wall[k])
        out[f"{k}_fetch_decompress_s"] = statistics.median(io[k])
        out[f"{k}_us_per_chunk"] = statistics.median(rest[k]) / chunks * 1e6
    return out


def run(path: str, reps: int = 3, columns: list[str] | None = None, seed: int = 0) -> dict[str, Any]:
    """Benchmark one file; returns a JSON-able dict of per-column results."""
    from lazyscan.parquet import ParquetFile, ReadCounters

    pf = ParquetFile(path)
    ref = pq.ParquetFile(path)
    names = columns or [c.name for c in pf.schema.columns if c.flat]
    rgs = range(pf.num_row_groups)
    rg_rows = [rg.num_rows for rg in pf.metadata.row_groups]
    total_rows = sum(rg_rows)
    rng = np.random.default_rng(seed)
    results: dict[str, Any] = {"file": path, "rows": total_rows, "row_groups": len(rg_rows), "columns": {}}
    for name in names:
        col: dict[str, Any] = {}
        full = interleaved(
            {
                "ours": lambda name=name: [pf.read_column(rg, name) for rg in rgs],
                "ref": lambda name=name: [ref.read_row_group(rg, columns=[name], use_threads=False) for rg in rgs],
            },
            reps,
        )
        t_ours, t_ref = statistics.median(full["ours"]), statistics.median(full["ref"])
        col["full"] = {"lazyscan_s": t_ours, "pyarrow_s": t_ref, "speed_vs_pyarrow": t_ref / t_ours}
        sels: dict[str, Any] = {}
        for kind in ("uniform", "clustered"):
            for frac in (None, *FRACTIONS):
                if kind == "clustered" and frac is None:
                    continue
                label = f"{kind}:{'1row' if frac is None else f'{frac * 100:g}%'}"
                # the same rows for both readers: global row indices split per row group
                picked = selections(total_rows, kind, frac, rng)
                wanted = split_rows(picked, rg_rows)

                def ours(name: str = name, wanted: list = wanted) -> None:
                    for rg, idx in wanted:
                        pf.read_column(rg, name, idx)

                def theirs(name: str = name, wanted: list = wanted) -> None:
                    for rg, idx in wanted:
                        _take(ref.read_row_group(rg, columns=[name], use_threads=False).column(0), idx)

                counters = ReadCounters()
                for rg, idx in wanted:
                    pf.read_column(rg, name, idx, counters=counters)
                needed = sum(size for rg, idx in wanted for _, size in needed_pages(pf.page_layout(rg, name), idx))
                fns: dict[str, Callable[[], Any]] = {"ours": ours, "theirs": theirs}
                floor_fn = decompress_floor(pf, wanted, name)
                read_fn = read_floor(pf, wanted, name)
                if floor_fn is not None:
                    fns["floor"] = floor_fn
                if read_fn is not None:
                    fns["read"] = read_fn
                try:
                    times = {k: statistics.median(v) for k, v in interleaved(fns, reps).items()}
                finally:
                    if read_fn is not None:
                        read_fn.close()
                t_sel, t_full = times["ours"], times["theirs"]
                t_floor, t_read = times.get("floor", 0.0), times.get("read", 0.0)
                sels[label] = {
                    "rows": len(picked),
                    "lazyscan_s": t_sel,
                    "pyarrow_full_take_s": t_full,
                    "speedup": t_full / t_sel if t_sel else float("inf"),
                    "decompress_floor_s": t_floor,
                    "speedup_bound": t_full / t_floor if t_floor else None,
                    "read_floor_s": t_read,
                    "speedup_bound_with_reads": t_full / (t_floor + t_read) if t_floor + t_read else None,
                    "bytes_fetched": counters.bytes_fetched,
                    "bytes_in_pages_with_selected_rows": int(needed),
                    "bytes_decompressed": counters.bytes_decompressed,
                    "pages_fetched": counters.pages_fetched,
                    "pages_skipped": counters.pages_skipped,
                }
        col["selections"] = sels
        results["columns"][name] = col
    if columns is None:
        results["chunk_overhead"] = chunk_overhead(pf, max(reps, 5), seed)
    return results


def cold_start(path: str, column: str) -> dict[str, float]:
    """Seconds for import + first read with an empty numba cache, and with a warm cache."""
    code = (
        "import time; t0=time.perf_counter(); from lazyscan.parquet import ParquetFile; t1=time.perf_counter();"
        f"pf=ParquetFile({path!r}); pf.read_column(0, {column!r}); pf.read_column(0, {column!r}, [0, 5]); t2=time.perf_counter();"
        "print(t1-t0, t2-t1)"
    )
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        for label in ("cold", "warm"):
            res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
            imp, first = map(float, res.stdout.split())
            out[f"{label}_import_s"] = imp
            out[f"{label}_first_read_s"] = first
    return out


def _bound(sel: dict[str, Any]) -> str:
    bound = sel.get("speedup_bound")
    if bound is None:
        return "-"
    with_reads = sel.get("speedup_bound_with_reads")
    return f"{bound:.1f}x" if with_reads is None else f"{bound:.1f}x ({with_reads:.1f}x)"


#: the selective-read target: this speed-up over pyarrow's full read plus take ...
TARGET_SPEEDUP = 4.0
#: ... or this fraction of the bound where the bound is below it
TARGET_OF_BOUND = 0.8


def meets_target(sel: dict[str, Any], key: str = "speedup_bound") -> bool:
    """Whether a selection's speed-up meets the target against the bound named ``key``."""
    bound = sel.get(key)
    if sel["speedup"] >= TARGET_SPEEDUP:
        return True
    return bound is not None and bound < TARGET_SPEEDUP and sel["speedup"] >= TARGET_OF_BOUND * bound


def _met(sel: dict[str, Any]) -> str:
    def word(ok: bool) -> str:
        return "met" if ok else "missed"

    if "speedup_bound_with_reads" not in sel:
        return word(meets_target(sel))
    return f"{word(meets_target(sel))} ({word(meets_target(sel, 'speedup_bound_with_reads'))})"


def summarize(results: dict[str, Any]) -> list[str]:
    """A markdown table per column: full decode and selections against pyarrow (above 1x:
    lazyscan faster), the slowest selection, whether the bytes fetched were exactly the pages
    holding a selected row, the bound on a selective read's speedup set by decompressing the
    pages it needs (pyarrow's time / that time; in parentheses with the time to read those
    pages from the page cache added), and whether the target (4x, or 80 % of a bound below
    4x) is met against each bound."""
    lines = [
        "| column | full decode vs pyarrow | 1 row | 0.001% uniform | 0.1% clustered | 10% uniform "
        "| slowest selection | bytes fetched = pages with a selected row "
        "| bound at 0.001% / 0.1% clustered (with reads) | target at 0.001% / 0.1% clustered (with reads) |",
        "|---|---:|---:|---:|---:|---:|---|---|---:|---|",
    ]
    for name, col in results["columns"].items():
        s = col["selections"]
        worst = min(s, key=lambda k: s[k]["speedup"])
        exact = all(v["bytes_fetched"] == v["bytes_in_pages_with_selected_rows"] for v in s.values())
        lines.append(
            f"| {name} | {col['full']['speed_vs_pyarrow']:.2f}x | {s['uniform:1row']['speedup']:.1f}x | "
            f"{s['uniform:0.001%']['speedup']:.1f}x | {s['clustered:0.1%']['speedup']:.1f}x | "
            f"{s['uniform:10%']['speedup']:.2f}x | {worst} {s[worst]['speedup']:.2f}x | {'yes' if exact else 'no'} "
            f"| {_bound(s['uniform:0.001%'])} / {_bound(s['clustered:0.1%'])} "
            f"| {_met(s['uniform:0.001%'])} / {_met(s['clustered:0.1%'])} |"
        )
    over = results.get("chunk_overhead")
    if over:
        lines += [
            "",
            f"Selective read of one row per row group, every column ({over['chunks']} column chunks): beyond "
            f"fetching and decompressing its pages, {over['one_pass_us_per_chunk']:.1f} µs per chunk read in one "
            f"pass per row group ({over['one_pass_s'] * 1e3:.1f} ms in all, "
            f"{over['one_pass_fetch_decompress_s'] * 1e3:.1f} ms of it fetching and decompressing), "
            f"{over['per_column_us_per_chunk']:.1f} µs column by column ({over['per_column_s'] * 1e3:.1f} ms).",
        ]
    cold = results.get("cold_start")
    if cold:
        lines += [
            "",
            "numba start-up (subprocess): "
            + ", ".join(f"{k.replace('_s', '').replace('_', ' ')} {v:.2f} s" for k, v in cold.items()),
        ]
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--columns", default=None)
    parser.add_argument("--path", default=None, help="a Parquet file instead of TPC-H lineitem")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    if args.path:
        path = args.path
    else:
        from benchmarks.data import ensure_tpch

        path = str(ensure_tpch(args.sf).lineitem)
    columns = args.columns.split(",") if args.columns else None
    results = run(path, args.reps, columns)
    results["cold_start"] = cold_start(path, (columns or ["l_comment"])[0])
    print("\n".join(summarize(results)))
    print(json.dumps(results["cold_start"], indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
