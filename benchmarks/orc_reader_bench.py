"""ORC reader benchmark: full column reads and row selections against pyarrow's ORC reader.

For each column of TPC-H lineitem written as ORC: the time to read every stripe with
``OrcFile.read_column`` against ``pyarrow.orc.ORCFile.read(columns=[c])``, and for row selections
(one row, 0.001 % .. 10 % of the rows, uniform or in 5 clustered runs) the time of a selective
read against pyarrow's read of the same stripes plus ``take``. Engines alternate run by run; the
report gives medians, the spread, the share of 10,000-row row groups holding a selected row, and
the bytes each selective read fetched.

The ORC copy of lineitem is written once from the Parquet file (``--writer pyarrow``: zstd,
dictionary threshold 0.8 as ORC Java's default; 64 MiB stripes).

Run: ``python -m benchmarks.orc_reader_bench [--sf 1] [--reps 5] [--columns a,b]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.orc as porc
import pyarrow.parquet as pq

from benchmarks.reader_bench import FRACTIONS, interleaved, selections, split_rows

#: selective reads are worth it where the row groups holding the rows are under this share
GROUP_SHARE = 1 / 3


def orc_lineitem(sf: float) -> Path:
    """TPC-H lineitem as ORC (zstd, dictionaries as ORC Java decides them), written once."""
    from benchmarks.data import ensure_tpch

    parquet = ensure_tpch(sf).lineitem
    path = parquet.with_name("lineitem-zstd.orc")
    if not path.exists():
        table = pq.read_table(parquet)
        plain = pa.schema([
            pa.field(f.name, pa.string() if pa.types.is_string_view(f.type) else f.type) for f in table.schema
        ])
        tmp = path.with_suffix(".tmp")
        porc.write_table(table.cast(plain), tmp, compression="zstd", dictionary_key_size_threshold=0.8)
        tmp.rename(path)
    return path


def _stat(times: list[float]) -> dict[str, float]:
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times)}


def run(path: str, reps: int = 5, columns: list[str] | None = None, seed: int = 0) -> dict[str, Any]:
    from lazyscan.format.counters import ReadCounters
    from lazyscan.orc import OrcFile

    f = OrcFile(path)
    ref = porc.ORCFile(path)
    names = columns or [c.name for c in f.columns]
    stripe_rows = [f.stripe(s).number_of_rows for s in range(f.num_stripes)]
    total = sum(stripe_rows)
    stride = f.row_index_stride
    groups_total = sum(-(-n // stride) for n in stripe_rows)
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {"file": path, "rows": total, "stripes": f.num_stripes, "row_groups": groups_total, "columns": {}}
    for name in names:
        col: dict[str, Any] = {}
        t = interleaved({
            "lazyscan": lambda name=name: [f.read_column(s, name) for s in range(f.num_stripes)],
            "pyarrow": lambda name=name: ref.read(columns=[name]),
        }, reps)
        col["full"] = {"lazyscan": _stat(t["lazyscan"]), "pyarrow": _stat(t["pyarrow"]),
                       "ratio": statistics.median(t["lazyscan"]) / statistics.median(t["pyarrow"])}
        sels: dict[str, Any] = {}
        for kind in ("uniform", "clustered"):
            for frac in (None, *FRACTIONS):
                if kind == "clustered" and frac is None:
                    continue
                label = f"{kind}:{'1row' if frac is None else f'{frac * 100:g}%'}"
                picked = selections(total, kind, frac, rng)
                wanted = split_rows(picked, stripe_rows)
                hit = sum(len(np.unique(idx // stride)) for _, idx in wanted)

                def ours(name: str = name, wanted: list = wanted) -> None:
                    for s, idx in wanted:
                        f.read_column(s, name, idx)

                def theirs(name: str = name, wanted: list = wanted) -> None:
                    for s, idx in wanted:
                        ref.read_stripe(s, columns=[name]).column(0).take(pa.array(idx))

                counters = ReadCounters()
                for s, idx in wanted:
                    f.read_column(s, name, idx, counters=counters)
                t = interleaved({"lazyscan": ours, "pyarrow": theirs}, reps)
                share = hit / groups_total
                sels[label] = {
                    "rows": len(picked),
                    "row_group_share": share,
                    "lazyscan": _stat(t["lazyscan"]),
                    "pyarrow_full_take": _stat(t["pyarrow"]),
                    "speedup": statistics.median(t["pyarrow"]) / statistics.median(t["lazyscan"]),
                    "bytes_fetched": counters.bytes_fetched,
                    "values_decoded": counters.values_decoded,
                }
        col["selections"] = sels
        out["columns"][name] = col
    return out


def summarize(results: dict[str, Any]) -> list[str]:
    lines = [f"{results['file']}: {results['rows']:,} rows, {results['stripes']} stripes, {results['row_groups']} row groups"]
    worst_full = max(results["columns"].items(), key=lambda kv: kv[1]["full"]["ratio"])
    lines.append(f"full reads: lazyscan / pyarrow from {min(c['full']['ratio'] for c in results['columns'].values()):.2f} "
                 f"to {worst_full[1]['full']['ratio']:.2f} ({worst_full[0]}); target <= 1.5")
    for name, col in results["columns"].items():
        parts = [f"full {col['full']['ratio']:.2f}x pyarrow's time"]
        for label, sel in col["selections"].items():
            mark = "*" if sel["row_group_share"] < GROUP_SHARE else ""
            parts.append(f"{label} {sel['speedup']:.1f}x{mark}")
        lines.append(f"  {name}: " + ", ".join(parts))
    lines.append("  (speedup = pyarrow stripe read + take / lazyscan selective read; * = row groups hit under a third)")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--columns", default=None)
    parser.add_argument("--path", default=None, help="an ORC file instead of TPC-H lineitem")
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    args = parser.parse_args(argv)
    path = args.path or str(orc_lineitem(args.sf))
    columns = args.columns.split(",") if args.columns else None
    results = run(path, args.reps, columns)
    print("\n".join(summarize(results)))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
