"""Benchmark scenarios. Each takes a `RunContext` and returns a `ScenarioResult`.

- `seed`: the seed question on TPC-H lineitem, Q-A `select *` vs Q-B `select l_orderkey`
  where `l_comment = V`; the select-* penalty Q-A/Q-B per engine.
- `selectivity`: a centred key range holding 1 row … 100% of rows, on uniform data (keys shuffled row by row)
  and clustered data (keys in shuffled runs, so matches come in runs while row-group min/max
  stay wide).
- `width`: 10, 25, 50 payload columns at two selectivities.
- `encodings`: the predicate column as PLAIN ints, dictionary ints, dictionary strings of 512 to
  32,768 entries; and the whole file under none / snappy / zstd / gzip.
- `skipping`: what each pruning tier can do: statistics (letters A–Z sorted vs unsorted),
  dictionary (US state codes clustered by region: min/max wide, dictionaries narrow), Bloom
  filter (unique ids, with and without a filter).
- `spark`: the Spark data source against Spark's own reader on TPC-H lineitem: the seed's
  Q-A, a key range pruned by statistics, and a Q6-like filter through `lazyscan.spark.read`.
- `reader`: the physical reader benchmark in `benchmarks.reader_bench`, when that module exists.
- `orc` (run by name only, not part of `all`): Q-A, Q-B, the `spark` scenario's range and Q6
  on lineitem written as ORC by Spark, Spark's ORC reader (with and without ORC's row filter),
  Spark + lazyscan, pyarrow and lazyscan in-process (`benchmarks.orc_bench`).
- `checksums` (run by name only): what `verify_checksums` costs on local reads, the seed pair and
  a full read of four columns on lineitem written with and without page checksums
  (`benchmarks.checksum_bench`).
- `tables` (run by name only): TPC-H lineitem as a Delta and an Iceberg table partitioned by month,
  1 % of the rows deleted, against Polars, deltalake, pyiceberg and Spark; planning 1,000 files
  (`benchmarks.tables_bench`).
- `coldstart` (run by name only): each case a new process with a new empty numba cache: import,
  the seed query, a key range and a key-filter scan first and second, the seed query with a cache
  present, the same with shipped kernels, two processes on one cache, a new Spark local[2]
  application, Polars and DuckDB (`benchmarks.coldstart`).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from benchmarks import THREADS
from benchmarks.data import (
    SyntheticSpec,
    describe_layout,
    ensure_synthetic,
    ensure_tpch,
    pick_query_value,
    sql_string,
)
from benchmarks.engines import (
    MEASURE_BUDGET_S,
    Engine,
    Query,
    QueryResult,
    make_engine,
    run_queries,
)
from benchmarks.ui import console


@dataclass(frozen=True)
class Sizes:
    """Data sizes of a run."""

    seed_sf: float = 1
    selectivity_rows: int = 10_000_000
    width_rows: int = 1_000_000
    encoding_rows: int = 2_000_000
    skipping_rows: int = 4_000_000
    row_group_rows: int = 131_072
    run_length: int = 10_000
    value_target: int = 100


FULL = Sizes()
QUICK = Sizes(
    seed_sf=0.01,
    selectivity_rows=40_000,
    width_rows=20_000,
    encoding_rows=40_000,
    skipping_rows=40_000,
    row_group_rows=8_192,
    run_length=500,
    value_target=2,
)


@dataclass
class RunContext:
    """What scenarios share: engines (one Spark session), sizes, repetitions, progress."""

    engines: Sequence[Engine]
    sizes: Sizes = FULL
    reps: int = 3
    quick: bool = False
    data_dir: Path | None = None
    progress: Any = None
    sf: float | None = None
    budget_s: float = MEASURE_BUDGET_S
    queries: str | None = None
    """The extension scenario's query selection (`--queries`), all when None."""
    key_filters: bool = True
    """The extension scenario's key filters, on by default as in lazyscan (`--no-key-filters`)."""

    @property
    def seed_sf(self) -> float:
        return self.sf if self.sf is not None else self.sizes.seed_sf


@dataclass
class ScenarioResult:
    """Results of one scenario, with hints for the charts."""

    name: str
    title: str
    description: str
    queries: list[QueryResult] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    datasets: dict[str, Any] = field(default_factory=dict)
    derived: dict[str, Any] = field(default_factory=dict)
    chart: dict[str, Any] = field(default_factory=dict)
    status: str = "ok"
    seconds: float = 0.0
    extra: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "status": self.status,
            "seconds": round(self.seconds, 3),
            "params": self.params,
            "datasets": self.datasets,
            "derived": self.derived,
            "chart": self.chart,
            "queries": [q.to_dict() for q in self.queries],
            "extra": self.extra,
        }


def _run(
    ctx: RunContext,
    queries: list[Query],
    title: str,
    budget_s: float | None = None,
    in_turns: bool = False,
) -> list[QueryResult]:
    return run_queries(
        ctx.engines,
        queries,
        ctx.reps,
        progress=ctx.progress,
        title=title,
        budget_s=budget_s or ctx.budget_s,
        in_turns=in_turns,
    )


def _synthetic(ctx: RunContext, kind: str, rows: int, **params: Any) -> Any:
    compression = params.pop("compression", "snappy")
    spec = SyntheticSpec(
        kind=kind,
        rows=rows,
        params=tuple(sorted(params.items())),
        row_group_rows=ctx.sizes.row_group_rows,
        compression=compression,
    )
    return ensure_synthetic(spec, data_dir=ctx.data_dir, progress=ctx.progress)


def _layout_summary(path: Path) -> dict[str, Any]:
    layout = describe_layout(path)
    return {
        "path": layout["path"],
        "bytes": layout["bytes"],
        "rows": layout["rows"],
        "row_groups": layout["row_groups"],
        "rows_per_row_group": layout["rows_per_row_group"],
        "created_by": layout["created_by"],
    }


# --------------------------------------------------------------------------- seed


def seed_queries(path: Path, value: Any) -> list[Query]:
    """Q-A and Q-B of the seed question on one lineitem file."""
    paths = (str(path),)
    where = value.predicate()
    return [
        Query("Q-A", paths, None, where, group="seed", x="Q-A select *", expected_rows=value.rows),
        Query(
            "Q-B",
            paths,
            ("l_orderkey",),
            where,
            group="seed",
            x="Q-B select l_orderkey",
            expected_rows=value.rows,
        ),
    ]


def seed_penalty(results: Sequence[QueryResult]) -> dict[str, Any]:
    """Per engine: Q-A and Q-B medians, penalty Q-A/Q-B, and Q-A relative to the fastest engine."""
    by_name = {r.query.name: r.by_engine() for r in results}
    qa, qb = by_name.get("Q-A", {}), by_name.get("Q-B", {})
    fastest = min(
        (m.seconds for m in qa.values() if m.ok and m.seconds is not None), default=None
    )
    out: dict[str, Any] = {}
    for engine, a in qa.items():
        b = qb.get(engine)
        entry: dict[str, Any] = {"label": a.label, "status": a.status}
        if a.ok and b is not None and b.ok and a.seconds and b.seconds:
            entry.update(
                qa=a.seconds,
                qb=b.seconds,
                penalty=a.seconds / b.seconds,
                qa_vs_fastest=(a.seconds / fastest) if fastest else None,
                rows_qa=a.rows,
                rows_qb=b.rows,
            )
        out[engine] = entry
    return out


def penalty_floor(path: Path, value: Any, qb_seconds: float | None, reps: int) -> dict[str, Any] | None:
    """A lower bound on lazyscan's select-* penalty for this file: Q-A does at least what Q-B
    does plus decompress, for each column Q-B does not read, the dictionary page and the data
    pages holding a match of every row group with a match (``THREADS`` threads share that
    work). Floor = (Q-B + that / THREADS) / Q-B."""
    if not qb_seconds:
        return None

    from benchmarks.reader_bench import (
        comment_matches,
        decompress_floor_seconds,
        parallel_decompress_floor_seconds,
        read_floor_seconds,
    )
    from lazyscan.parquet import ParquetFile

    hit = comment_matches(path, value.value)
    pf = ParquetFile(str(path))
    try:
        extra = [c.name for c in pf.schema.columns if c.name not in ("l_comment", "l_orderkey")]
        seconds = sum(decompress_floor_seconds(pf, hit, name, reps) for name in extra)
        read = sum(read_floor_seconds(pf, hit, name, reps) for name in extra)
        parallel = parallel_decompress_floor_seconds(pf, hit, extra, THREADS, reps)
    finally:
        pf.close()
    return {
        "row_groups_with_matches": len(hit),
        "columns": len(extra),
        "decompress_s": seconds,
        "floor": (qb_seconds + seconds / THREADS) / qb_seconds,
        # reading those pages out of the page cache as well (a copy the decompression floor leaves out)
        "read_s": read,
        "floor_with_reads": (qb_seconds + (seconds + read) / THREADS) / qb_seconds,
        # the same pages decompressed by THREADS threads, timed: what two threads gain on this
        # machine instead of an assumed THREADS-fold
        "decompress_parallel_s": parallel,
        "thread_gain": seconds / parallel if parallel else None,
        "floor_measured_threads": (qb_seconds + parallel) / qb_seconds,
    }


def seed(ctx: RunContext) -> ScenarioResult:
    """The seed's query pair on TPC-H lineitem at the run's scale factor."""
    sf = ctx.seed_sf
    dataset = ensure_tpch(sf, data_dir=ctx.data_dir, progress=ctx.progress)
    value = pick_query_value(dataset, target=ctx.sizes.value_target)
    res = ScenarioResult(
        name="seed",
        title=f"Seed query pair, TPC-H SF{sf:g} lineitem",
        description=(
            f"Q-A `select * from lineitem where l_comment = V` vs Q-B `select l_orderkey ...`; "
            f"V = {sql_string(value.value)} matches {value.rows} rows. Penalty = Q-A / Q-B."
        ),
        params={"sf": sf, "value": value.value, "value_rows": value.rows, "reps": ctx.reps},
        chart={"kind": "bars", "ylabel": "seconds (median)"},
    )
    res.datasets["lineitem"] = _layout_summary(dataset.lineitem)
    # Q-A and Q-B take turns run by run: the penalty is their ratio, so both see the same
    # phases of the machine (measured one after the other, a slow minute lands on one of them)
    res.queries = _run(
        ctx, seed_queries(dataset.lineitem, value), f"seed SF{sf:g}", max(ctx.budget_s, 90.0), in_turns=True
    )
    res.derived["penalty"] = seed_penalty(res.queries)
    ours = res.derived["penalty"].get("lazyscan", {})
    res.derived["penalty_floor"] = penalty_floor(dataset.lineitem, value, ours.get("qb"), ctx.reps)
    return res


# --------------------------------------------------------------------------- selectivity

SELECTIVITIES: tuple[tuple[str, float], ...] = (
    ("1 row", 0.0),
    ("0.01%", 0.0001),
    ("0.1%", 0.001),
    ("1%", 0.01),
    ("10%", 0.1),
    ("50%", 0.5),
    ("100%", 1.0),
)


def _threshold(rows: int, fraction: float) -> int:
    return 1 if fraction <= 0 else max(1, min(rows, round(rows * fraction)))


def key_range(rows: int, matches: int) -> str:
    """`key >= lo AND key < lo + matches`, centred in 0..rows-1.

    A centred range is inside every row group's min/max on uniform and clustered keys, so no
    engine can prune by statistics; the predicate alone decides.
    """
    lo = (rows - matches) // 2
    return f"key >= {lo} AND key < {lo + matches}"


def selectivity(ctx: RunContext) -> ScenarioResult:
    """`select *` where a centred key range holds 1 row … 100%, on uniform and clustered keys."""
    n = ctx.sizes.selectivity_rows
    res = ScenarioResult(
        name="selectivity",
        title=f"Selectivity sweep, {n:,} rows, 10 payload columns",
        description=(
            "`select * where key >= lo and key < lo + T` (a centred range of T keys). uniform: "
            "keys shuffled row by row; clustered: keys in "
            f"shuffled runs of {ctx.sizes.run_length:,} rows (matches come in runs, row-group "
            "min/max stay wide)."
        ),
        params={"rows": n, "run_length": ctx.sizes.run_length, "reps": ctx.reps},
        chart={"kind": "lines", "xlog": True, "xlabel": "fraction of rows", "ylog": True},
    )
    queries = []
    for dist in ("uniform", "clustered"):
        f = _synthetic(
            ctx, "selectivity", n, distribution=dist, run_length=ctx.sizes.run_length, payload=10
        )
        res.datasets[dist] = _layout_summary(f.path)
        for label, fraction in SELECTIVITIES:
            t = _threshold(n, fraction)
            queries.append(
                Query(
                    f"{dist} {label}",
                    (str(f.path),),
                    None,
                    key_range(n, t),
                    group=dist,
                    x=t / n,
                    expected_rows=t,
                    label=label,
                )
            )
    res.queries = _run(ctx, queries, "selectivity")
    return res


# --------------------------------------------------------------------------- width

WIDTHS = (10, 25, 50)
WIDTH_FRACTIONS = (0.0001, 0.01)


def width(ctx: RunContext) -> ScenarioResult:
    """`select key, c00..c{w}` where a centred key range holds T rows, w = 10, 25, 50."""
    n = ctx.sizes.width_rows
    f = _synthetic(ctx, "width", n, payload=max(WIDTHS))
    names = [c for c in _column_names(f.path) if c != "key"]
    res = ScenarioResult(
        name="width",
        title=f"Payload width, {n:,} rows",
        description=(
            "`select key + w payload columns where key >= lo and key < lo + T` (uniform keys)."
        ),
        params={"rows": n, "widths": list(WIDTHS), "fractions": list(WIDTH_FRACTIONS)},
        chart={"kind": "lines", "xlabel": "payload columns", "ylog": True},
    )
    res.datasets["width"] = _layout_summary(f.path)
    queries = []
    for fraction in WIDTH_FRACTIONS:
        t = _threshold(n, fraction)
        for w in WIDTHS:
            queries.append(
                Query(
                    f"{w} cols, {fraction:.2%}",
                    (str(f.path),),
                    ("key", *names[:w]),
                    key_range(n, t),
                    group=f"{fraction:.2%} of rows",
                    x=w,
                    expected_rows=t,
                    label=f"{w} payload columns",
                )
            )
    res.queries = _run(ctx, queries, "width")
    return res


def _column_names(path: Path) -> list[str]:
    import pyarrow.parquet as pq

    return list(pq.ParquetFile(path).schema_arrow.names)


# --------------------------------------------------------------------------- encodings

DICT_SIZES = (512, 2048, 8192, 32768)
CODECS = ("none", "snappy", "zstd", "gzip")


def encodings(ctx: RunContext) -> ScenarioResult:
    """Predicate column encodings and file compression, `select * where p = const`."""
    n = ctx.sizes.encoding_rows
    res = ScenarioResult(
        name="encodings",
        title=f"Predicate encodings and compression, {n:,} rows",
        description=(
            "`select * where p = const` with 4 payload columns. Ints: 1,000 distinct values "
            "(~0.1% match); strings: a dictionary of N entries (~1/N match). Compression applies "
            "to the whole file (dictionary strings, 2,048 entries)."
        ),
        params={"rows": n, "dictionary_sizes": list(DICT_SIZES), "codecs": list(CODECS)},
        chart={"kind": "bars", "ylabel": "seconds (median)"},
    )
    variants: list[tuple[str, str, Any]] = [
        ("predicate encoding", "PLAIN int64", {"predicate": "plain_int", "cardinality": 1000}),
        ("predicate encoding", "dict int64", {"predicate": "dict_int", "cardinality": 1000}),
    ]
    for d in DICT_SIZES:
        variants.append(
            ("predicate encoding", f"dict str {d}", {"predicate": "dict_str", "cardinality": d})
        )
    for codec in CODECS:
        variants.append(
            (
                "compression",
                codec,
                {"predicate": "dict_str", "cardinality": 2048, "compression": codec},
            )
        )
    queries = []
    for group, label, params in variants:
        f = _synthetic(ctx, "encoding", n, payload=4, **params)
        res.datasets[f"{group}: {label}"] = _layout_summary(f.path)
        target = f.facts["target"]
        lit = sql_string(target) if isinstance(target, str) else str(target)
        queries.append(
            Query(
                f"{group}: {label}",
                (str(f.path),),
                None,
                f"p = {lit}",
                group=group,
                x=label,
                expected_rows=f.facts["target_rows"],
            )
        )
    res.queries = _run(ctx, queries, "encodings")
    return res


# --------------------------------------------------------------------------- skipping


def skipping(ctx: RunContext) -> ScenarioResult:
    """Pruning by statistics, dictionary and Bloom filter (the Impala 2.9 examples)."""
    n = ctx.sizes.skipping_rows
    res = ScenarioResult(
        name="skipping",
        title=f"Data skipping by tier, {n:,} rows",
        description=(
            "statistics: `letter = 'Q'` on letters A–Z, sorted vs unsorted. dictionary: US "
            "state codes in region blocks, so row-group min/max span most codes while each "
            "dictionary holds one region; `state = 'NY'` and the absent `'PR'`. Bloom: unique "
            "odd ids without dictionary; `id = present` and `id = absent (even)`, with and "
            "without a Bloom filter."
        ),
        params={"rows": n, "row_group_rows": ctx.sizes.row_group_rows},
        chart={"kind": "bars", "ylabel": "seconds (median)"},
    )
    queries = []
    for layout, label in (("letters_sorted", "sorted"), ("letters_unsorted", "unsorted")):
        f = _synthetic(ctx, "skipping", n, layout=layout)
        res.datasets[layout] = _layout_summary(f.path)
        queries.append(
            Query(
                f"letters {label}",
                (str(f.path),),
                None,
                "letter = 'Q'",
                group="statistics: letters A–Z",
                x=label,
                expected_rows=f.facts["target_rows"],
            )
        )
    f = _synthetic(ctx, "skipping", n, layout="states_by_region")
    res.datasets["states_by_region"] = _layout_summary(f.path)
    queries += [
        Query(
            "states NY",
            (str(f.path),),
            None,
            "state = 'NY'",
            group="dictionary: states by region",
            x="NY (one region)",
            expected_rows=f.facts["target_rows"],
        ),
        Query(
            "states PR",
            (str(f.path),),
            None,
            "state = 'PR'",
            group="dictionary: states by region",
            x="PR (absent)",
            expected_rows=0,
        ),
    ]
    for layout, label in (("ids_bloom", "Bloom"), ("ids_plain", "no Bloom")):
        f = _synthetic(ctx, "skipping", n, layout=layout)
        res.datasets[layout] = _layout_summary(f.path)
        target = int(f.facts["target"])
        queries += [
            Query(
                f"ids {label} present",
                (str(f.path),),
                None,
                f"id = {target}",
                group="Bloom filter: unique ids",
                x=f"{label}, present",
                expected_rows=1,
            ),
            Query(
                f"ids {label} absent",
                (str(f.path),),
                None,
                f"id = {target + 1}",
                group="Bloom filter: unique ids",
                x=f"{label}, absent",
                expected_rows=0,
            ),
        ]
    res.queries = _run(ctx, queries, "skipping")
    return res


# --------------------------------------------------------------------------- reader

READER_MODULE = "benchmarks.reader_bench"
# --------------------------------------------------------------------------- spark

SPARK_ENGINES = (
    "spark-parquet", "spark-lazyscan-source", "spark-lazyscan-tasks", "spark-lazyscan-auto"
)

Q6_WHERE = (
    "l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' "
    "AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24"
)


def _duckdb_count(path: Path, where: str) -> int:
    import duckdb

    con = duckdb.connect()
    try:
        row = con.execute(f"SELECT count(*) FROM read_parquet(?) WHERE {where}", [str(path)]).fetchone()
    finally:
        con.close()
    return int(row[0]) if row else 0


def spark_queries(path: Path, value: Any) -> list[Query]:
    """Q-A, a statistics-pruned key range, and Q6's filter on one lineitem file."""
    import pyarrow.parquet as pq

    md = pq.ParquetFile(path).metadata
    col = md.schema.to_arrow_schema().get_field_index("l_orderkey")
    top = max(int(md.row_group(i).column(col).statistics.max) for i in range(md.num_row_groups))
    k = top // 2
    range_where = f"l_orderkey BETWEEN {k} AND {k + 1000}"
    paths = (str(path),)
    return [
        Query("Q-A", paths, None, value.predicate(), group="spark", x="Q-A select * where l_comment = V",
              expected_rows=value.rows),
        Query("range", paths, None, range_where, group="spark", x="select * where l_orderkey between K and K+1000",
              expected_rows=_duckdb_count(path, range_where)),
        Query("Q6", paths, ("l_extendedprice", "l_discount"), Q6_WHERE, group="spark",
              x="Q6 filter, select l_extendedprice, l_discount", expected_rows=_duckdb_count(path, Q6_WHERE)),
    ]


def spark_ratios(results: Sequence[QueryResult]) -> dict[str, Any]:
    """Per query: Spark's reader time over each lazyscan reader's time (above 1: lazyscan faster)."""
    out: dict[str, Any] = {}
    for r in results:
        by = r.by_engine()
        base = by.get("spark-parquet")
        if base is None or not base.ok or not base.seconds:
            continue
        out[r.query.name] = {
            name: base.seconds / m.seconds
            for name, m in by.items()
            if name != "spark-parquet" and m.ok and m.seconds
        }
    return out


def auto_vs_faster(results: Sequence[QueryResult]) -> dict[str, float]:
    """Per query: `lazyscan.spark.read` auto's time over the fastest of Spark's reader and
    lazyscan's two routes (issue 10 asks for at most 1.1)."""
    out: dict[str, float] = {}
    for r in results:
        by = r.by_engine()
        auto = by.get("spark-lazyscan-auto")
        both = [by.get("spark-parquet")]
        both += [m for name in ("spark-lazyscan", "spark-lazyscan-source", "spark-lazyscan-tasks") if (m := by.get(name))]
        if auto is None or not auto.ok or not auto.seconds:
            continue
        if any(m is None or not m.ok or not m.seconds for m in both):
            continue
        out[r.query.name] = auto.seconds / min(m.seconds for m in both if m is not None and m.seconds)
    return out


def spark(ctx: RunContext) -> ScenarioResult:
    """The Spark data source against Spark's own Parquet reader, TPC-H lineitem."""
    sf = ctx.seed_sf
    engines = [e for e in ctx.engines if e.name in SPARK_ENGINES]
    res = ScenarioResult(
        name="spark",
        title=f"Spark data source vs Spark's Parquet reader, TPC-H SF{sf:g} lineitem",
        description=(
            "Spark `local[2]`. Q-A: the seed's needle query; range: `select *` of 1,001 order keys "
            "in the middle of the key range (row-group statistics prune); Q6: the filter of TPC-H "
            "Q6, through `lazyscan.spark.read` (auto picks the reader and the route) and forced "
            "to lazyscan on each route: the `lazyscan` data source and `mapInArrow` over planned "
            "tasks. Ratio = Spark parquet time / lazyscan time; auto / fastest = auto's time / "
            "the fastest of Spark parquet and the two lazyscan routes."
        ),
        params={"sf": sf, "reps": ctx.reps},
        chart={"kind": "bars", "ylabel": "seconds (median)"},
    )
    if not any(e.name == "spark-parquet" for e in engines):
        res.status = "skipped: needs the Spark engines (run without --no-spark)"
        return res
    for name in SPARK_ENGINES[1:]:
        if not any(e.name == name for e in engines):
            engines.append(make_engine(name))
    dataset = ensure_tpch(sf, data_dir=ctx.data_dir, progress=ctx.progress)
    value = pick_query_value(dataset, target=ctx.sizes.value_target)
    res.datasets["lineitem"] = _layout_summary(dataset.lineitem)
    res.queries = run_queries(
        engines,
        spark_queries(dataset.lineitem, value),
        ctx.reps,
        progress=ctx.progress,
        title=f"spark SF{sf:g}",
        budget_s=max(ctx.budget_s, 60.0),
    )
    res.derived["spark_ratio"] = spark_ratios(res.queries)
    res.derived["auto_vs_faster"] = auto_vs_faster(res.queries)
    return res


READER_QUICK_COLUMNS = ("l_orderkey", "l_comment")


def reader(ctx: RunContext) -> ScenarioResult:
    """The physical reader benchmark (`benchmarks.reader_bench.run`), when it exists."""
    res = ScenarioResult(
        name="reader",
        title="Physical reader: decode and row selection",
        description="lazyscan.parquet column reads vs pyarrow read_row_group (+ take).",
        chart={"kind": "none"},
    )
    if importlib.util.find_spec(READER_MODULE) is None:
        res.status = f"unavailable: {READER_MODULE} not written yet"
        return res
    try:
        dataset = ensure_tpch(ctx.seed_sf, data_dir=ctx.data_dir, progress=ctx.progress)
        res.params = {"sf": ctx.seed_sf, "reps": ctx.reps}
        module = importlib.import_module(READER_MODULE)
        run = module.run
        offered = {
            "path": str(dataset.lineitem),
            "reps": ctx.reps,
            "columns": list(READER_QUICK_COLUMNS) if ctx.quick else None,
            "quick": ctx.quick,
            "sf": ctx.seed_sf,
            "data_dir": ctx.data_dir,
            "progress": ctx.progress,
        }
        params = inspect.signature(run).parameters
        accepts_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        kwargs = {k: v for k, v in offered.items() if accepts_any or k in params}
        task = None
        if ctx.progress is not None:
            task = ctx.progress.add_task(f"{READER_MODULE}.run", total=None)
        try:
            res.extra = run(**kwargs)
            cold = getattr(module, "cold_start", None)
            if not ctx.quick and callable(cold) and isinstance(res.extra, dict):
                res.extra["cold_start"] = cold(str(dataset.lineitem), "l_comment")
        finally:
            if task is not None:
                ctx.progress.remove_task(task)
    except Exception as e:
        res.status = f"error: {type(e).__name__}: {e}"
    return res


def q17(ctx: RunContext) -> ScenarioResult:
    """TPC-H Q17 and its lineitem semi join: Spark's default plan against Spark with lazyscan's
    semi-join pushdown; DuckDB, Polars, DataFusion and lazyscan in-process."""
    from benchmarks import joins

    sf = ctx.seed_sf
    spark = any(e.name.startswith("spark") for e in ctx.engines)
    res = ScenarioResult(
        name="q17",
        title=f"Join pushdown: TPC-H Q17, SF{sf:g}",
        description=(
            "Q17: Spark `local[2]` default plan over `spark.read.parquet` vs lineitem through "
            "`lazyscan.spark.read(semi_join=(part filtered, 'p_partkey', 'l_partkey'))` (filter built by a "
            "Spark job inside the timed run, one DataFrame for both lineitem scans); DuckDB, Polars, "
            "DataFusion; lazyscan in-process = key filter + lineitem scan + pyarrow aggregate. "
            "Semi join: the lineitem rows whose l_partkey is a key of the filtered part, each engine "
            "from the two files. Engines interleaved run by run."
        ),
        params={"sf": sf, "reps": ctx.reps},
        chart={"kind": "bars", "ylabel": "seconds (median)"},
    )
    dataset = ensure_tpch(sf, tables=("lineitem", "part"), data_dir=ctx.data_dir, progress=ctx.progress)
    wanted = {e.name.split("-")[0] for e in ctx.engines}  # datafusion-pushdown -> datafusion
    engines = [e for e in joins.join_engines(spark) if e.name in wanted or e.name.startswith("spark")]
    queries = joins.q17_queries(dataset.lineitem, dataset.table("part"))
    res.queries = run_queries(engines, queries, ctx.reps, progress=ctx.progress, title=f"q17 SF{sf:g}",
                              budget_s=max(ctx.budget_s, 120.0))
    answers = {e.name: e.answers.get("Q17") for e in engines if e.answers}
    values = {round(v, 2) for v in answers.values() if v is not None}
    res.derived["q17_answers"] = answers
    res.derived["q17_answers_agree"] = len(values) == 1
    res.derived["q17_ratios"] = _join_ratios(res.queries)
    return res


def _medians(r: QueryResult) -> dict[str, float]:
    """Engine -> median seconds, for the engines that ran ``r``."""
    return {m.engine: m.seconds for m in r.measurements if m.ok and m.seconds}


def _join_ratios(results: Sequence[QueryResult]) -> dict[str, Any]:
    """Per query: Spark default / Spark with lazyscan, and lazyscan / the fastest peer."""
    out: dict[str, Any] = {}
    for r in results:
        by = _medians(r)
        entry: dict[str, Any] = {}
        if "spark-parquet" in by and "spark-lazyscan" in by:
            entry["spark_default_over_lazyscan"] = by["spark-parquet"] / by["spark-lazyscan"]
        peers = {k: v for k, v in by.items() if k in ("duckdb", "polars", "datafusion")}
        if peers and "lazyscan" in by:
            fastest = min(peers, key=lambda k: peers[k])
            entry["lazyscan_over_fastest_peer"] = by["lazyscan"] / peers[fastest]
            entry["fastest_peer"] = fastest
        out[r.query.name] = entry
    return out


def keys(ctx: RunContext) -> ScenarioResult:
    """Join-selectivity sweep (key filter vs plain read vs DuckDB) and probe throughput."""
    from benchmarks import joins

    sf = ctx.seed_sf
    res = ScenarioResult(
        name="keys",
        title=f"Key filters: join-selectivity sweep on TPC-H SF{sf:g} lineitem, probe throughput",
        description=(
            "Keys drawn from part so that the given share of lineitem rows joins; l_partkey "
            "dictionary-encoded (tpchgen-cli) and PLAIN (a copy); 1 payload column (l_extendedprice) "
            "and all 15. lazyscan = adaptive key filter in the scan; lazyscan plain = the same columns "
            "read without it, then Arrow is_in on the keys (no pushdown: the join filters); DuckDB = IN (keys). Probe: values per second on "
            "one thread per filter kind; build: seconds per key count."
        ),
        params={"sf": sf, "reps": ctx.reps},
        chart={"kind": "lines", "xlog": True, "xlabel": "share of lineitem rows joining", "ylabel": "seconds (median)"},
    )
    dataset = ensure_tpch(sf, tables=("lineitem", "part"), data_dir=ctx.data_dir, progress=ctx.progress)
    part = str(dataset.table("part"))
    fractions = joins.SWEEP_QUICK_FRACTIONS if ctx.quick else joins.SWEEP_FRACTIONS
    key_sets = {f: joins.sweep_keys(part, f) for f in fractions}
    files = {"dictionary": dataset.lineitem, "plain": joins.plain_key_copy(dataset.lineitem)}
    all_columns = [c for c in pq.read_schema(dataset.lineitem).names if c != "l_partkey"]
    widths = {"1": ["l_partkey", "l_extendedprice"], "15": ["l_partkey", *all_columns]}
    engines = [
        joins.SweepEngine("lazyscan", "lazyscan key filter", key_sets),
        joins.SweepEngine("lazyscan-plain", "lazyscan plain read", key_sets),
        joins.DuckDBSweep("duckdb", "DuckDB IN (keys)", key_sets),
    ]
    queries = [
        Query(f"{enc} keys, {w} payload, {f:.2%}", (str(path),), tuple(cols), None, group=f"{enc}/{w}", x=f)
        for enc, path in files.items()
        for w, cols in widths.items()
        for f in fractions
    ]
    res.queries = run_queries(engines, queries, ctx.reps, progress=ctx.progress, title=f"keys SF{sf:g}")
    ratios: dict[str, Any] = {}
    for r in res.queries:
        by = _medians(r)
        if "lazyscan" in by and "lazyscan-plain" in by:
            entry = {"filter_over_plain": by["lazyscan"] / by["lazyscan-plain"]}
            if "duckdb" in by:
                entry["filter_over_duckdb"] = by["lazyscan"] / by["duckdb"]
            m = r.by_engine().get("lazyscan")
            entry["switched_off"] = bool(m and m.profile and m.profile.get("switched_off"))
            ratios[r.query.name] = entry
    res.derived["sweep"] = ratios
    res.extra = {"keys": {str(f): len(k) for f, k in key_sets.items()},
                 "throughput": joins.probe_throughput(reps=2 if ctx.quick else 5, n=200_000 if ctx.quick else 4_000_000)}
    return res


SCENARIOS: dict[str, Callable[[RunContext], ScenarioResult]] = {
    "seed": seed,
    "selectivity": selectivity,
    "width": width,
    "encodings": encodings,
    "skipping": skipping,
    "spark": spark,
    "reader": reader,
    "q17": q17,
    "keys": keys,
}


def orc(ctx: RunContext) -> ScenarioResult:
    """lazyscan over Spark-written ORC (`benchmarks.orc_bench.scenario`)."""
    from benchmarks import orc_bench

    return orc_bench.scenario(ctx)


def s3(ctx: RunContext) -> ScenarioResult:
    """The seed pair from a local S3 server, clean and with 10 % of the requests throttled
    (`benchmarks.object_store.scenario`)."""
    from benchmarks import object_store

    return object_store.scenario(ctx)  # type: ignore[no-any-return]


def checksums(ctx: RunContext) -> ScenarioResult:
    """What verifying page checksums costs on local reads (`benchmarks.checksum_bench.scenario`)."""
    from benchmarks import checksum_bench

    return checksum_bench.scenario(ctx)  # type: ignore[no-any-return]


def coldstart(ctx: RunContext) -> ScenarioResult:
    """A new process's import, first and second query with an empty numba cache, with one
    present and with shipped kernels (`benchmarks.coldstart.scenario`)."""
    from benchmarks import coldstart as cold

    return cold.scenario(ctx)  # type: ignore[no-any-return]


def tables(ctx: RunContext) -> ScenarioResult:
    """TPC-H lineitem as a Delta and an Iceberg table with deletes, against the table readers
    (`benchmarks.tables_bench.scenario`)."""
    from benchmarks import tables_bench

    return tables_bench.scenario(ctx)  # type: ignore[no-any-return]


def extension(ctx: RunContext) -> ScenarioResult:
    """TPC-H and the seed pair in Spark with lazyscan's extension on and off
    (`benchmarks.extension_bench.scenario`)."""
    from benchmarks import extension_bench

    return extension_bench.scenario(ctx)  # type: ignore[no-any-return]


EXTRA_SCENARIOS: dict[str, Callable[[RunContext], ScenarioResult]] = {
    "orc": orc,
    "s3": s3,
    "checksums": checksums,
    "coldstart": coldstart,
    "tables": tables,
    "extension": extension,
}
"""Scenarios run by name only, not by `all`: `orc` writes an ORC copy with Spark and runs
mostly Spark engines (about a minute at SF1 with one repetition, 1-2 with three); `s3` reads
from a local S3 server, clean and with 10 % of the requests throttled (about 14 minutes at SF1
with three repetitions); `checksums` writes lineitem again with and without page checksums and
reads both with verification on and off (about 3 minutes at SF1 with three repetitions);
`coldstart` runs each case in a new process with a new empty numba cache: import, the seed
query, a key range and a key-filter scan first and second, the seed query with a cache present,
the same with shipped kernels, two processes on one cache, a new Spark local[2] application,
Polars and DuckDB (about 6–7 minutes at SF1, one repetition per case whatever `--reps` says);
`tables` builds TPC-H lineitem as a Delta and an Iceberg table with 1 % of the rows deleted (once,
under `data/tables/`) and reads them with lazyscan, Polars, deltalake, pyiceberg and Spark;
`extension` runs TPC-H's 22 queries and the seed pair in Spark with the transparent mode on and
off (about an hour at SF1 with three repetitions on a busy machine)."""


def run_scenario(name: str, ctx: RunContext) -> ScenarioResult:
    """Run one scenario by name, timing it; failures become an error status, not an exception."""
    known = {**SCENARIOS, **EXTRA_SCENARIOS}
    if name not in known:
        raise ValueError(f"unknown scenario {name!r}; choose from {', '.join(known)}, all")
    start = time.perf_counter()
    try:
        result = known[name](ctx)
    except Exception as e:
        result = ScenarioResult(
            name=name,
            title=name,
            description="",
            status=f"error: {type(e).__name__}: {e}",
            extra={"traceback": traceback.format_exc(limit=6)},
        )
        console.print(f"[bold red]scenario {name} failed:[/] {type(e).__name__}: {e}")
    result.seconds = time.perf_counter() - start
    return result
