"""Spark-written ORC: seed pair Q-A/Q-B, range and Q6-like queries, engines side by side.

TPC-H lineitem written as ORC by Spark with its defaults (zstd, 64 MiB stripes, 10,000-row
row groups; ``data/tpch/sf{N}/lineitem-spark.orc/``, a folder of part files, written once
from the Parquet copy).

Queries (the same predicates and columns as ``benchmarks.scenarios``; the range's K and the
expected row counts of range and Q6 come from the Parquet copy, exactly as in the ``spark``
scenario):

- Q-A ``select * where l_comment = V`` and Q-B ``select l_orderkey where l_comment = V``
  (V from ``query_value.json``, the seed's value);
- range ``select * where l_orderkey between K and K+1000``, K = half the largest order key;
- Q6 ``select l_extendedprice, l_discount`` where TPC-H Q6's filter holds (``Q6_WHERE``).

Engines, interleaved run by run (``benchmarks.engines.run_queries``: a warm-up of each, then
repetition 1 of every engine, repetition 2, ...): Spark ``local[2]`` with its own ORC reader
(``spark.read.orc``), the same with ORC's row filter (see below), Spark with lazyscan
(``lazyscan.spark.read(..., force="lazyscan")``, the column-pruning route, as the Parquet
suite's ``spark-lazyscan``), pyarrow's ORC reader file by file then a filter, and lazyscan
in-process (``lazyscan.scan(..., threads=2)``). Spark results above 20,000 rows (Q6) are
drained by a ``noop`` write, as in the Parquet suite. Every engine must return the expected
row count (``check_agreement``; ``run`` exits 1 otherwise, and so does this script).

Does Spark honour ``orc.sarg.to.filter`` / ``orc.filter.use.selected``? (Spark 4.3.0,
ORC 2.3.0; checked 2026-11-24 on the SF1 copy, Q-A and Q-B.)

- Not the way this benchmark used to set them. ``spark.conf.set("spark.hadoop.orc.sarg.to.filter",
  "true")`` on a running session stores the key verbatim: ``SessionState.newHadoopConf`` copies
  every SQL conf entry into the Hadoop configuration as is (the ``spark.hadoop.`` prefix is
  only stripped from confs present when the SparkContext starts), so ORC's reader sees
  ``orc.sarg.to.filter`` unset. Evidence: ``sessionState().newHadoopConf()`` holds
  ``spark.hadoop.orc.sarg.to.filter=true`` and ``orc.sarg.to.filter=null``, and the ORC scan
  node's ``numOutputRows`` is 6,001,215 (every row) with and without it. The earlier
  "Spark ORC + row filter" numbers (``reports/orc-seed-sf1-20261124.json``: 1.33 s vs 1.32 s
  on Q-A) therefore measured plain Spark ORC twice.
- Set so that the key reaches ORC (``spark.read.option("orc.sarg.to.filter", "true")``, or
  ``spark.conf.set("orc.sarg.to.filter", "true")``, or ``spark.hadoop.orc.sarg.to.filter`` in
  the session builder), ORC's filter works: ``OrcColumnarBatchReader`` builds its
  ``Reader.Options`` with ``OrcInputFormat.buildOptions(conf, ...)`` and passes Spark's pushed
  SearchArgument, so ``RecordReaderImpl`` reads ``l_comment`` first, skips every 4,096-row
  batch without a match (the follower columns are not decoded there) and returns only the
  batches with one. The scan's ``numOutputRows`` drops to 348,784 (about 85 batches for 100
  matches), the answer stays 100 rows, and Q-A took 0.33 s instead of 0.84-0.94 s (best of 2,
  probe run; Q-B 0.14-0.15 s vs 0.18-0.20 s).
- ``orc.filter.use.selected=true`` gives wrong answers in Spark: ORC then returns each batch
  as ``size`` = matching rows plus a ``selected`` index vector, and Spark's
  ``OrcColumnarBatchReader`` ignores ``selected`` (it only asserts ``!selectedInUse`` when it
  sets the batch up), so Spark reads rows 0..size-1 of each batch instead of the matching
  ones: the scan returned 100 rows and Spark's own filter kept 0 of them (Q-A and Q-B
  returned 0 rows instead of 100). ORC's documentation says the same: without a selected
  vector (the default, false) the caller must re-apply the filter, which Spark always does.

So the "Spark ORC + row filter" engine here passes ``orc.sarg.to.filter=true`` and
``orc.filter.use.selected=false`` as reader options, and the report records, per query and
Spark ORC engine, the rows the ORC scan handed to Spark (``derived.orc_reader_rows``,
measured once, untimed), the evidence that the filter was or was not in effect.

Run: ``python -m benchmarks run orc [--sf N] [--reps R]`` (report under ``reports/``), or
``python -m benchmarks.orc_bench [--sf 1] [--reps 3] [--no-spark] [--out report.json]`` (all
repetitions run, no time budget; ``--out`` writes the same JSON document as ``run``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from benchmarks import THREADS
from benchmarks.engines import (
    Engine,
    LazyscanEngine,
    Query,
    QueryResult,
    SparkEngine,
    _timed,
    get_spark,
    run_queries,
    sql_to_arrow,
)
from benchmarks.scenarios import (
    RunContext,
    ScenarioResult,
    seed_penalty,
    seed_queries,
    spark_queries,
)

ORC_ENGINES = ("spark-orc", "spark-orc-rowfilter", "spark-lazyscan", "pyarrow-orc", "lazyscan")
"""Engine names of the scenario, in report order."""

ROW_FILTER_OPTIONS = {"orc.sarg.to.filter": "true", "orc.filter.use.selected": "false"}
"""Reader options of "Spark ORC + row filter" (``use.selected`` must stay false in Spark)."""


def spark_orc_lineitem(sf: float, data_dir: Path | None = None, progress: Any = None) -> Path:
    """lineitem as ORC written by Spark with its defaults, from the Parquet copy (once)."""
    from benchmarks.data import ensure_tpch

    parquet = ensure_tpch(sf, data_dir=data_dir, progress=progress).lineitem
    out = parquet.with_name("lineitem-spark.orc")
    if not out.exists():
        spark = get_spark()
        tmp = out.with_name(out.name + ".tmp")
        spark.read.parquet(str(parquet)).write.mode("overwrite").orc(str(tmp))
        tmp.rename(out)
    return out


def orc_files(path: str | Path) -> list[Path]:
    """The ORC files of a file or of a folder written by Spark (no ``.crc``, no ``_SUCCESS``)."""
    p = Path(path)
    return [p] if p.is_file() else sorted(p.glob("*.orc"))


def orc_layout(path: Path) -> dict[str, Any]:
    """Files, bytes, rows, stripes per file, compression and row-index stride of an ORC copy."""
    import pyarrow.orc as porc

    files = [porc.ORCFile(str(f)) for f in orc_files(path)]
    return {
        "path": str(path),
        "files": len(files),
        "bytes": sum(f.file_length for f in files),
        "rows": sum(f.nrows for f in files),
        "stripes_per_file": sorted({f.nstripes for f in files}),
        "stripes": sum(f.nstripes for f in files),
        "compression": sorted({str(f.compression) for f in files}),
        "row_index_stride": sorted({f.row_index_stride for f in files}),
        "writer": sorted({f"{f.writer} {f.software_version}" for f in files}),
    }


# --------------------------------------------------------------------------- engines


class SparkOrcEngine(SparkEngine):
    """Spark's own ORC reader: ``spark.read[.option(...)].orc(path).where(sql).select(...)``;
    with ``row_filter``, ORC's row filter through the reader options ``ROW_FILTER_OPTIONS``."""

    def __init__(self, row_filter: bool) -> None:
        super().__init__("parquet")
        self.row_filter = row_filter
        self.name = "spark-orc-rowfilter" if row_filter else "spark-orc"
        self.label = "Spark ORC + row filter" if row_filter else "Spark ORC"

    def frame(self, query: Query) -> Any:
        reader = self.spark.read
        if self.row_filter:
            for key, value in ROW_FILTER_OPTIONS.items():
                reader = reader.option(key, value)
        df = reader.orc(*query.paths)
        if query.where:
            df = df.where(query.where)
        if query.columns:
            df = df.select(*query.columns)
        return df

    def reader_rows(self, query: Query) -> int | None:
        """Rows the ORC scan handed to Spark for ``query`` (its ``numOutputRows``), untimed."""
        self.ensure_ready()
        try:
            plan = self.frame(query)._jdf.queryExecution().executedPlan()
            plan.execute().count()
            if plan.nodeName() == "AdaptiveSparkPlan":
                plan = plan.executedPlan()
            return _scan_rows(plan)
        except Exception:
            return None


def _scan_rows(plan: Any) -> int | None:
    if plan.nodeName().startswith("Scan orc"):
        return int(plan.metrics().apply("numOutputRows").value())
    children = plan.children()
    for i in range(children.size()):
        found = _scan_rows(children.apply(i))
        if found is not None:
            return found
    return None


class PyArrowOrcEngine(Engine):
    """pyarrow's ORC reader: each file's needed columns read whole (``ORCFile.read``), then
    filtered with the SQL predicate as a pyarrow expression; no pushdown."""

    name = "pyarrow-orc"
    label = "pyarrow ORC + filter"

    def setup(self) -> None:
        pa.set_cpu_count(THREADS)
        pa.set_io_thread_count(THREADS)

    def _run(self, query: Query) -> tuple[int, float]:
        import pyarrow.orc as porc

        def go() -> pa.Table:
            pieces = []
            expr = None
            columns: list[str] = []
            needed: list[str] = []
            for f in orc_files(query.paths[0]):
                orc = porc.ORCFile(str(f))
                if not needed:
                    schema = orc.schema
                    expr, pred = sql_to_arrow(query.where, schema) if query.where else (None, set())
                    columns = list(query.columns) if query.columns else list(schema.names)
                    needed = columns + sorted(pred - set(columns))
                t = orc.read(columns=needed)
                if expr is not None:
                    t = t.filter(expr)
                pieces.append(t.select(columns))
            return pa.concat_tables(pieces)

        table, seconds = _timed(go)
        return table.num_rows, seconds


def orc_engines(names: Sequence[str] = ORC_ENGINES) -> list[Engine]:
    """The scenario's engines, by name (``ORC_ENGINES``)."""
    out: list[Engine] = []
    for name in names:
        engine: Engine
        if name in ("spark-orc", "spark-orc-rowfilter"):
            engine = SparkOrcEngine(row_filter=name == "spark-orc-rowfilter")
        elif name == "spark-lazyscan":
            engine = SparkEngine("lazyscan")
            engine.label = "Spark + lazyscan"
        elif name == "pyarrow-orc":
            engine = PyArrowOrcEngine()
        elif name == "lazyscan":
            engine = LazyscanEngine()
            engine.label = "lazyscan in-process"
        else:
            raise ValueError(f"unknown ORC engine {name!r}; choose from {', '.join(ORC_ENGINES)}")
        out.append(engine)
    return out


# --------------------------------------------------------------------------- queries


def orc_queries(orc_path: Path, parquet_path: Path, value: Any) -> list[Query]:
    """Q-A, Q-B (``seed_queries``), range and Q6 (``spark_queries``, K and expected rows from
    the Parquet copy) over the ORC copy."""
    seed = seed_queries(orc_path, value)
    _, range_q, q6 = spark_queries(parquet_path, value)
    paths = (str(orc_path),)
    return [
        dataclasses.replace(q, paths=paths, group="orc")
        for q in (*seed, range_q, q6)
    ]


# --------------------------------------------------------------------------- derived numbers


def spread(results: Sequence[QueryResult]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per query and engine: median, min and max of the timed runs, and their number."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for r in results:
        out[r.query.name] = {
            m.engine: {
                "label": m.label,
                "rows": m.rows,
                "median_s": statistics.median(m.times),
                "min_s": min(m.times),
                "max_s": max(m.times),
                "runs": len(m.times),
            }
            for m in r.measurements
            if m.ok and m.times
        }
    return out


def _ratio(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, float] | None:
    """a / b: of the medians, and its range over the runs (a's min / b's max .. a's max / b's min)."""
    if not a or not b or not b["median_s"] or not b["min_s"]:
        return None
    return {
        "median": a["median_s"] / b["median_s"],
        "low": a["min_s"] / b["max_s"],
        "high": a["max_s"] / b["min_s"],
    }


RATIOS = (
    ("Spark ORC / Spark + lazyscan", "spark-orc", "spark-lazyscan"),
    ("Spark ORC + row filter / Spark + lazyscan", "spark-orc-rowfilter", "spark-lazyscan"),
    ("Spark ORC / Spark ORC + row filter", "spark-orc", "spark-orc-rowfilter"),
    ("Spark + lazyscan / lazyscan in-process", "spark-lazyscan", "lazyscan"),
)
"""Per query: (name, numerator engine, denominator engine); above 1, the denominator is faster."""


def ratios(sp: dict[str, dict[str, dict[str, Any]]]) -> dict[str, dict[str, dict[str, float]]]:
    """``RATIOS`` per query, each with its spread."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for query, by in sp.items():
        entry = {}
        for name, a, b in RATIOS:
            r = _ratio(by.get(a), by.get(b))
            if r is not None:
                entry[name] = r
        out[query] = entry
    return out


def penalty_spread(sp: dict[str, dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per engine: the select-* penalty Q-A / Q-B with its spread."""
    qa, qb = sp.get("Q-A", {}), sp.get("Q-B", {})
    out: dict[str, dict[str, Any]] = {}
    for engine, a in qa.items():
        r = _ratio(a, qb.get(engine))
        if r is not None:
            out[engine] = {"label": a["label"], **r}
    return out


# --------------------------------------------------------------------------- scenario


def orc_penalty_floor(path: Path, value: Any, qb_seconds: float | None, reps: int) -> dict[str, Any] | None:
    """A lower bound on lazyscan's select-* penalty on this ORC copy: Q-A does at least what
    Q-B does plus decompress, for each column Q-B does not read, the compression chunks that
    hold the selected rows' values: from the chunk where each selected row's 10,000-row row
    group starts (the row index's positions, the finest seek ORC offers) to the chunk where
    the next one starts (``THREADS`` threads share that work). Measured as the decompression
    time of lazyscan's own selective reads of those columns, one thread, best of ``reps``.
    Floor = (Q-B + that / THREADS) / Q-B."""
    if not qb_seconds:
        return None
    import numpy as np
    import pyarrow.compute as pc

    from lazyscan.format.counters import ReadCounters
    from lazyscan.orc import OrcFile

    reads = []
    for file in orc_files(path):
        f = OrcFile(file)
        for s in range(f.num_stripes):
            comments = f.read_column(s, "l_comment")
            rows = np.flatnonzero(pc.fill_null(pc.equal(comments, value.value), False).to_numpy(zero_copy_only=False))
            if len(rows):
                reads.append((f, s, rows))
    extra = [c.name for c in reads[0][0].columns if c.name not in ("l_comment", "l_orderkey")] if reads else []
    best = None
    for _ in range(max(1, reps)):
        counters = ReadCounters()
        for f, s, rows in reads:
            for name in extra:
                f.read_column(s, name, rows, counters)
        best = counters.decompress_seconds if best is None else min(best, counters.decompress_seconds)
        fetched, decompressed = counters.bytes_fetched, counters.bytes_decompressed
    seconds = best or 0.0
    return {
        "stripes_with_matches": len(reads),
        "columns": len(extra),
        "decompress_s": seconds,
        "bytes_fetched": fetched if reads else 0,
        "bytes_decompressed": decompressed if reads else 0,
        "floor": (qb_seconds + seconds / THREADS) / qb_seconds,
    }


def scenario(ctx: RunContext) -> ScenarioResult:
    """The ``orc`` scenario of ``python -m benchmarks run orc`` (not part of ``all``)."""
    from benchmarks.data import ensure_tpch, pick_query_value

    sf = ctx.seed_sf
    res = ScenarioResult(
        name="orc",
        title=f"ORC: seed pair, range and Q6 on Spark-written TPC-H SF{sf:g} lineitem",
        description=(
            "lineitem written as ORC by Spark with its defaults (zstd, 64 MiB stripes, 10,000-row "
            "row groups). Q-A `select * where l_comment = V`, Q-B `select l_orderkey ...`, range "
            "`select * where l_orderkey between K and K+1000`, Q6 `select l_extendedprice, "
            "l_discount` where TPC-H Q6's filter holds (the `spark` scenario's range and Q6). "
            "Spark `local[2]`: its ORC reader; the same with ORC's row filter (reader options "
            "`orc.sarg.to.filter=true`, `orc.filter.use.selected=false`); `lazyscan.spark.read"
            "(..., force='lazyscan')`. pyarrow: `ORCFile.read` per file, then the filter. lazyscan "
            "in-process: `lazyscan.scan(..., threads=2)`. Engines interleaved run by run. "
            "Ratios: median ratio and its range over the runs (min/max .. max/min)."
        ),
        params={"sf": sf, "reps": ctx.reps},
        chart={"kind": "bars", "ylabel": "seconds (median)"},
    )
    chosen = {e.name for e in ctx.engines}
    names = [
        n
        for n in ORC_ENGINES
        if (n.startswith("spark") and any(c.startswith("spark") for c in chosen))
        or (n == "pyarrow-orc" and "pyarrow" in chosen)
        or (n == "lazyscan" and "lazyscan" in chosen)
    ]
    if not names:
        res.status = "skipped: no ORC engine among the chosen engines (spark-*, pyarrow, lazyscan)"
        return res
    dataset = ensure_tpch(sf, data_dir=ctx.data_dir, progress=ctx.progress)
    value = pick_query_value(dataset, target=ctx.sizes.value_target)
    path = spark_orc_lineitem(sf, data_dir=ctx.data_dir, progress=ctx.progress)
    res.params.update(value=value.value, value_rows=value.rows, parquet=str(dataset.lineitem))
    res.datasets["lineitem_orc"] = orc_layout(path)
    engines = orc_engines(names)
    queries = orc_queries(path, dataset.lineitem, value)
    budget = max(ctx.budget_s, 90.0)
    res.queries = run_queries(engines, queries, ctx.reps, progress=ctx.progress, title=f"orc SF{sf:g}",
                              budget_s=budget)
    sp = spread(res.queries)
    res.derived["rows_agree"] = all(q.agree for q in res.queries)
    res.derived["spread"] = sp
    res.derived["orc_ratios"] = ratios(sp)
    res.derived["penalty"] = seed_penalty([q for q in res.queries if q.query.name in ("Q-A", "Q-B")])
    res.derived["penalty_spread"] = penalty_spread(sp)
    ours = res.derived["penalty"].get("lazyscan", {})
    res.derived["penalty_floor"] = orc_penalty_floor(path, value, ours.get("qb"), ctx.reps)
    spark_orc = [e for e in engines if isinstance(e, SparkOrcEngine)]
    res.derived["orc_reader_rows"] = {
        q.name: {e.name: e.reader_rows(q) for e in spark_orc} for q in queries if spark_orc
    }
    return res


# --------------------------------------------------------------------------- script


def main(argv: list[str] | None = None) -> int:
    from benchmarks.engines import close_engines, make_engines
    from benchmarks.report import build_document, orc_markdown

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--no-spark", action="store_true", help="leave out the Spark engines")
    parser.add_argument("--out", default=None, help="write the run document (JSON) here")
    args = parser.parse_args(argv)
    chosen = make_engines([n for n in ("spark-parquet", "pyarrow", "lazyscan")
                           if not (args.no_spark and n.startswith("spark"))])
    ctx = RunContext(chosen, reps=args.reps, sf=args.sf, budget_s=float("inf"))
    try:
        result = scenario(ctx)
    finally:
        close_engines(chosen)
    if result.status != "ok":
        print(result.status)
        return 1
    doc = build_document([result], args={"scenarios": ["orc"], "sf": args.sf, "reps": args.reps})
    print(orc_markdown(doc["scenarios"]["orc"]))
    if args.out:
        Path(args.out).write_text(json.dumps(doc, indent=1, default=str) + "\n")
    return 0 if result.derived["rows_agree"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
