"""The seed questions over ORC: Q-A ``select * from lineitem where l_comment = V`` and Q-B
``select l_orderkey ... where l_comment = V`` on TPC-H lineitem written as ORC by Spark with its
defaults (zstd, 64 MiB stripes, 10,000-row row groups).

Engines, alternating run by run: Spark ``local[2]`` with its own ORC reader
(``spark.read.orc``; also with ORC's row filter turned on through ``orc.sarg.to.filter`` and
``orc.filter.use.selected``), Spark with lazyscan (``lazyscan.spark.read`` with the columns
and the filter), pyarrow's ORC
reader then a filter, and lazyscan in-process. Every engine must return the same row count.

Run: ``python -m benchmarks.orc_bench [--sf 1] [--reps 3] [--out report.json]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.orc as porc

from benchmarks.engines import get_spark, settle_spark, stop_spark


def spark_orc_lineitem(sf: float) -> Path:
    """lineitem as ORC written by Spark with its defaults, from the Parquet copy (once)."""
    from benchmarks.data import ensure_tpch

    parquet = ensure_tpch(sf).lineitem
    out = parquet.with_name("lineitem-spark.orc")
    if not out.exists():
        spark = get_spark()
        tmp = out.with_name(out.name + ".tmp")
        spark.read.parquet(str(parquet)).write.mode("overwrite").orc(str(tmp))
        tmp.rename(out)
    return out


def needle(sf: float) -> str:
    """The seed's l_comment value (the one the Parquet seed scenario uses)."""
    from benchmarks.data import ensure_tpch

    marker = ensure_tpch(sf).lineitem.with_name("query_value.json")
    return str(json.loads(marker.read_text())["lineitem.l_comment@100"]["value"])


def engines(path: Path, value: str) -> dict[str, dict[str, Callable[[], int]]]:
    import lazyscan.spark

    spark = get_spark()
    lazyscan.spark.register(spark)
    where = f"l_comment = '{value}'"
    files = [str(p) for p in sorted(path.glob("*.orc"))]

    def spark_orc(cols: str, row_filter: bool) -> Callable[[], int]:
        def run() -> int:
            spark.conf.set("spark.hadoop.orc.sarg.to.filter", str(row_filter).lower())
            spark.conf.set("spark.hadoop.orc.filter.use.selected", str(row_filter).lower())
            df = spark.read.orc(str(path)).where(where)
            return len(df.collect() if cols == "*" else df.select(cols).collect())

        return run

    def spark_lazyscan(cols: str) -> Callable[[], int]:
        # the documented route (as the Parquet suite's Spark engine): Spark 4.1-4.3 give a Python
        # data source no column pruning, lazyscan.spark.read hands it the columns and the filter
        def run() -> int:
            columns = None if cols == "*" else [cols]
            return len(lazyscan.spark.read(spark, str(path), columns, where, force="lazyscan").collect())

        return run

    def pyarrow_filter(cols: str) -> Callable[[], int]:
        def run() -> int:
            n = 0
            for f in files:
                t = porc.ORCFile(f).read(columns=None if cols == "*" else [cols, "l_comment"])
                n += t.filter(pc.equal(t.column("l_comment"), value)).num_rows
            return n

        return run

    def lazyscan_inprocess(cols: str) -> Callable[[], int]:
        def run() -> int:
            import lazyscan

            return lazyscan.scan(str(path), columns=None if cols == "*" else [cols], where=where).to_table().num_rows

        return run

    out = {}
    for label, cols in (("Q-A", "*"), ("Q-B", "l_orderkey")):
        out[label] = {
            "Spark ORC": spark_orc(cols, False),
            "Spark ORC + row filter": spark_orc(cols, True),
            "Spark + lazyscan": spark_lazyscan(cols),
            "pyarrow ORC + filter": pyarrow_filter(cols),
            "lazyscan in-process": lazyscan_inprocess(cols),
        }
    return out


def run(sf: float, reps: int) -> dict[str, Any]:
    path = spark_orc_lineitem(sf)
    value = needle(sf)
    spark = get_spark()
    results: dict[str, Any] = {"sf": sf, "path": str(path), "value": value, "queries": {}}
    for label, fns in engines(path, value).items():
        rows = {name: fn() for name, fn in fns.items()}  # warm-up, and the answers
        settle_spark(spark)
        times: dict[str, list[float]] = {name: [] for name in fns}
        for _ in range(reps):
            for name, fn in fns.items():
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
                if name.startswith("Spark"):
                    settle_spark(spark)
        results["queries"][label] = {
            name: {"rows": rows[name], "median_s": statistics.median(ts), "min_s": min(ts), "max_s": max(ts)}
            for name, ts in times.items()
        }
        results["queries"][label]["rows_agree"] = len(set(rows.values())) == 1
    qa, qb = results["queries"]["Q-A"], results["queries"]["Q-B"]
    results["derived"] = {
        "spark_orc_over_spark_lazyscan_QA": qa["Spark ORC"]["median_s"] / qa["Spark + lazyscan"]["median_s"],
        "lazyscan_penalty_QA_over_QB": qa["lazyscan in-process"]["median_s"] / qb["lazyscan in-process"]["median_s"],
        "spark_orc_penalty_QA_over_QB": qa["Spark ORC"]["median_s"] / qb["Spark ORC"]["median_s"],
    }
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    args = parser.parse_args(argv)
    try:
        results = run(args.sf, args.reps)
    finally:
        stop_spark()
    for label, engines_ in results["queries"].items():
        print(f"{label} (rows agree: {engines_['rows_agree']})")
        for name, m in engines_.items():
            if isinstance(m, dict):
                print(f"  {name:24} {m['median_s']:8.3f} s  ({m['min_s']:.3f}-{m['max_s']:.3f}), {m['rows']} rows")
    print(json.dumps(results["derived"], indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
