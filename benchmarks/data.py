"""Benchmark data: TPC-H from tpchgen-cli and seeded synthetic Parquet files.

Parts:

- `ensure_tpch(sf)`: TPC-H tables in tpchgen-cli's default Parquet layout, cached under
  `data/tpch/sf{N}/`, complete only when the marker file `_tpch.json` lists the table.
- `pick_query_value(dataset)`: the `l_comment` value of the seed question, chosen with DuckDB
  once and cached in the dataset folder.
- `describe_layout(path)`: row groups, pages, encodings, statistics and indexes of a file.
- `ensure_synthetic(spec)`: synthetic files for the scenarios, cached by their parameters.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from rich.progress import (
    BarColumn,
    FileSizeColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TotalFileSizeColumn,
)

from benchmarks import THREADS
from benchmarks.ui import console

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = REPO_ROOT / "data"
TPCH_MARKER = "_tpch.json"
QUERY_VALUE_FILE = "query_value.json"

TPCH_TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem")
TPCH_BYTES_SF1 = {
    "region": 2_000,
    "nation": 3_500,
    "supplier": 1_300_000,
    "customer": 14_000_000,
    "part": 8_000_000,
    "partsupp": 46_000_000,
    "orders": 61_000_000,
    "lineitem": 232_000_000,
}
"""Approximate Parquet size of each table at SF1, for the progress display."""


class DataError(RuntimeError):
    """Benchmark data could not be generated or read."""


def sf_label(sf: float) -> str:
    """Folder name of a scale factor: 1 -> 'sf1', 0.01 -> 'sf0.01'."""
    return f"sf{float(sf):g}"


def tpchgen_binary() -> str:
    """Path of tpchgen-cli: beside the running interpreter, else on PATH."""
    local = Path(sys.executable).parent / "tpchgen-cli"
    if local.exists():
        return str(local)
    found = shutil.which("tpchgen-cli")
    if found is None:
        raise DataError("tpchgen-cli not found: install it with `pip install tpchgen-cli`")
    return found


def tpchgen_version() -> str:
    """Version string printed by tpchgen-cli."""
    out = subprocess.run([tpchgen_binary(), "--version"], capture_output=True, text=True)
    text = out.stdout.strip() or out.stderr.strip()
    return text.removeprefix("tpchgen-cli").strip() or text


@dataclass(frozen=True)
class TpchDataset:
    """A cached TPC-H dataset: one Parquet file per table."""

    sf: float
    root: Path

    def table(self, name: str) -> Path:
        return self.root / f"{name}.parquet"

    @property
    def lineitem(self) -> Path:
        return self.table("lineitem")

    def marker(self) -> dict[str, Any]:
        return read_marker(self.root)


def read_marker(root: Path) -> dict[str, Any]:
    """The marker of a TPC-H folder, or an empty dict when absent or unreadable."""
    path = root / TPCH_MARKER
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _dir_bytes(path: Path) -> int:
    total = 0
    if path.exists():
        for p in path.rglob("*"):
            try:
                if p.is_file():
                    total += p.stat().st_size
            except OSError:
                pass
    return total


def _run_tpchgen(sf: float, table: str, out_dir: Path, progress: Progress | None) -> None:
    """Run tpchgen-cli for one table, updating a byte-count progress task while it runs."""
    cmd = [
        tpchgen_binary(),
        "parquet",
        "--scale-factor",
        f"{float(sf):g}",
        "--tables",
        table,
        "--output-dir",
        str(out_dir),
        "--num-threads",
        str(THREADS),
        "--no-progress",
        "--overwrite",
        "--quiet",
    ]
    expected = max(1, int(TPCH_BYTES_SF1[table] * sf))
    task = None
    if progress is not None:
        task = progress.add_task(f"tpchgen {table} sf{float(sf):g}", total=expected)
    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(0.25):
            if progress is not None and task is not None:
                done = _dir_bytes(out_dir)
                progress.update(task, completed=min(done, int(expected * 0.99)))

    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    finally:
        stop.set()
        watcher.join()
    if proc.returncode != 0:
        raise DataError(
            f"tpchgen-cli failed for {table} at SF {sf:g} (exit {proc.returncode}): "
            f"{proc.stderr.strip()[-2000:]}"
        )
    if progress is not None and task is not None:
        progress.update(task, total=_dir_bytes(out_dir), completed=_dir_bytes(out_dir))


def ensure_tpch(
    sf: float = 1,
    tables: Sequence[str] = ("lineitem",),
    *,
    data_dir: Path | None = None,
    show_progress: bool = True,
    progress: Progress | None = None,
) -> TpchDataset:
    """Generate the TPC-H tables missing from `data/tpch/sf{N}/`; reuse the complete ones.

    Each table is written to a hidden staging folder, moved into place, and only then listed in
    the marker file; a table that is present but not in the marker is regenerated.
    """
    unknown = [t for t in tables if t not in TPCH_TABLES]
    if unknown:
        raise DataError(f"unknown TPC-H tables {unknown}; known: {', '.join(TPCH_TABLES)}")
    root = (data_dir or DATA_DIR) / "tpch" / sf_label(sf)
    root.mkdir(parents=True, exist_ok=True)
    marker = read_marker(root)
    done: dict[str, Any] = dict(marker.get("tables", {}))
    missing = [t for t in tables if t not in done or not (root / f"{t}.parquet").exists()]
    if not missing:
        return TpchDataset(float(sf), root)
    staging = root / ".staging"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    version = tpchgen_version()
    columns = [
        TextColumn("[bold]{task.description}"),
        BarColumn(bar_width=30),
        FileSizeColumn(),
        TextColumn("of ~"),
        TotalFileSizeColumn(),
        TimeElapsedColumn(),
    ]
    own = progress is None and show_progress
    if own:
        progress = Progress(SpinnerColumn(), *columns, console=console, transient=False)
    try:
        if own and progress is not None:
            progress.start()
        for table in missing:
            out = staging / table
            out.mkdir()
            started = time.perf_counter()
            _run_tpchgen(sf, table, out, progress)
            produced = out / f"{table}.parquet"
            if not produced.exists():
                raise DataError(f"tpchgen-cli wrote no {produced.name} in {out}")
            meta = pq.ParquetFile(produced).metadata
            os.replace(produced, root / produced.name)
            done[table] = {
                "rows": meta.num_rows,
                "row_groups": meta.num_row_groups,
                "bytes": (root / produced.name).stat().st_size,
                "seconds": round(time.perf_counter() - started, 2),
            }
            _write_json_atomic(
                root / TPCH_MARKER,
                {
                    "sf": float(sf),
                    "generator": f"tpchgen-cli {version}",
                    "options": "parquet defaults (SNAPPY, --row-group-bytes 7MiB)",
                    "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                    "tables": done,
                },
            )
    finally:
        if own and progress is not None:
            progress.stop()
        shutil.rmtree(staging, ignore_errors=True)
    return TpchDataset(float(sf), root)


def _write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    os.replace(tmp, path)


def sql_string(value: str) -> str:
    """A SQL string literal that every engine reads the same way.

    Quotes and backslashes are refused: Spark SQL escapes with backslashes and reads `''` as
    two adjacent literals, while the others double the quote.
    """
    if "'" in value or "\\" in value:
        raise ValueError(f"value {value!r} has a quote or backslash; no portable SQL literal")
    return f"'{value}'"


@dataclass(frozen=True)
class QueryValue:
    """A literal for `column = value` and the number of rows it matches."""

    table: str
    column: str
    value: str
    rows: int
    target: int

    def predicate(self) -> str:
        return f"{self.column} = {sql_string(self.value)}"


#: up to this many rows, :func:`pick_query_value` counts every value (SF10 has 60 M lineitems)
EXACT_PICK_ROWS = 100_000_000
#: above it, the rows one hash bucket of values holds, about
PICK_BUCKET_ROWS = 10_000_000


def pick_buckets(rows: int) -> int:
    """Into how many hash buckets :func:`pick_query_value` splits the values of a `rows`-row
    table to count one: 1 (all values) up to :data:`EXACT_PICK_ROWS`."""
    return 1 if rows <= EXACT_PICK_ROWS else -(-rows // PICK_BUCKET_ROWS)


def pick_query_value(
    dataset: TpchDataset, *, table: str = "lineitem", column: str = "l_comment", target: int = 100
) -> QueryValue:
    """The value of `column` whose row count is closest to `target`, cached in the dataset folder.

    Deterministic: ties go to the smaller count, then to the smaller value (byte order). Values
    with leading or trailing blanks, quotes or backslashes are skipped so the literal reads the
    same in every engine. Over :data:`EXACT_PICK_ROWS` rows, counting every value needs a hash
    table of nearly all rows (at SF100, 600 M comments ran over 38 CPU-minutes at 10 GB); the
    pick then counts only the values of one bucket of DuckDB's ``hash()``, about
    :data:`PICK_BUCKET_ROWS` rows, and the value is the closest to `target` among those (another
    DuckDB version may hash to other buckets: the pick is cached with the data). At SF100 that
    takes about 20 s and 650 MB.
    """
    cache = dataset.root / QUERY_VALUE_FILE
    key = f"{table}.{column}@{target}"
    cached: dict[str, Any] = {}
    if cache.exists():
        try:
            cached = json.loads(cache.read_text())
        except ValueError:
            cached = {}
        if key in cached:
            return QueryValue(**cached[key])
    import duckdb

    path = dataset.table(table)
    if not path.exists():
        raise DataError(f"{path} is missing; generate it first")
    buckets = pick_buckets(pq.ParquetFile(path).metadata.num_rows)
    bucket = "" if buckets == 1 else f' WHERE hash("{column}") % {buckets} = 0'
    con = duckdb.connect()
    try:
        con.execute(f"SET threads = {THREADS}")
        # counted first, filtered after: in one statement DuckDB pushed the string tests below
        # the count into the scan, which took 316 s instead of 2 s on SF10's bucket
        con.execute(
            f'CREATE TEMP TABLE counts AS SELECT "{column}" AS v, count(*) AS n FROM read_parquet(?){bucket} GROUP BY 1',
            [str(path)],
        )
        row = con.execute(
            """
            SELECT v, n FROM counts
            WHERE v IS NOT NULL AND v = trim(v) AND v <> ''
              AND strpos(v, '''') = 0 AND strpos(v, '\\') = 0
            ORDER BY abs(n - ?), n, v
            LIMIT 1
            """,
            [target],
        ).fetchone()
    finally:
        con.close()
    if row is None:
        raise DataError(f"no usable value in {path}:{column}")
    picked = QueryValue(table=table, column=column, value=str(row[0]), rows=int(row[1]), target=target)
    cached[key] = asdict(picked)
    _write_json_atomic(cache, cached)
    return picked


def describe_layout(path: Path) -> dict[str, Any]:
    """Physical layout of a Parquet file: row groups, pages, encodings, statistics, indexes."""
    import duckdb

    pf = pq.ParquetFile(path)
    md = pf.metadata
    rg_rows = [md.row_group(i).num_rows for i in range(md.num_row_groups)]
    con = duckdb.connect()
    try:
        con.execute(f"SET threads = {THREADS}")
        rel = con.execute(
            """
            SELECT path_in_schema, row_group_id, total_compressed_size, total_uncompressed_size,
                   encoding_stats,
                   coalesce(stats_min_value, stats_min) IS NOT NULL
                       AND coalesce(stats_max_value, stats_max) IS NOT NULL,
                   bloom_filter_offset IS NOT NULL, compression
            FROM parquet_metadata(?)
            """,
            [str(path)],
        ).fetchall()
    finally:
        con.close()
    columns: dict[str, dict[str, Any]] = {}
    for name, _rg, comp, unc, enc_stats, has_stats, has_bloom, codec in rel:
        col = columns.setdefault(
            name,
            {
                "compression": codec,
                "compressed_bytes": 0,
                "uncompressed_bytes": 0,
                "pages": {},
                "statistics_chunks": 0,
                "bloom_chunks": 0,
            },
        )
        col["compressed_bytes"] += int(comp)
        col["uncompressed_bytes"] += int(unc)
        col["statistics_chunks"] += int(bool(has_stats))
        col["bloom_chunks"] += int(bool(has_bloom))
        for es in enc_stats or []:
            k = f"{es['page_type']}:{es['encoding']}"
            col["pages"][k] = col["pages"].get(k, 0) + int(es["count"])
    for i, name in enumerate(md.schema.names):
        chunks = [md.row_group(r).column(i) for r in range(md.num_row_groups)]
        col = columns.get(name, {})
        col["physical_type"] = md.schema.column(i).physical_type
        col["column_index_chunks"] = sum(bool(c.has_column_index) for c in chunks)
        col["offset_index_chunks"] = sum(bool(c.has_offset_index) for c in chunks)
        data_pages = sum(v for k, v in col.get("pages", {}).items() if k.startswith("DATA_PAGE"))
        col["data_pages"] = data_pages
        col["data_pages_per_row_group"] = round(data_pages / max(1, md.num_row_groups), 2)
        col["avg_page_uncompressed_bytes"] = int(
            col.get("uncompressed_bytes", 0) / max(1, data_pages)
        )
    return {
        "path": str(path),
        "bytes": path.stat().st_size,
        "created_by": md.created_by,
        "format_version": md.format_version,
        "rows": md.num_rows,
        "row_groups": md.num_row_groups,
        "rows_per_row_group": {
            "min": min(rg_rows, default=0),
            "max": max(rg_rows, default=0),
            "mean": int(sum(rg_rows) / max(1, len(rg_rows))),
        },
        "row_group_uncompressed_bytes_mean": int(
            sum(md.row_group(i).total_byte_size for i in range(md.num_row_groups))
            / max(1, md.num_row_groups)
        ),
        "arrow_schema": {f.name: str(f.type) for f in pf.schema_arrow},
        "columns": columns,
    }


# --------------------------------------------------------------------------- synthetic data


@dataclass(frozen=True)
class SyntheticSpec:
    """Parameters of one synthetic file; the file is cached under a hash of them."""

    kind: str
    rows: int
    params: tuple[tuple[str, Any], ...] = ()
    seed: int = 42
    row_group_rows: int = 131_072
    compression: str = "snappy"
    version: int = 1

    def param(self, name: str, default: Any = None) -> Any:
        return dict(self.params).get(name, default)

    def digest(self) -> str:
        blob = json.dumps(asdict(self), sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:12]

    def filename(self) -> str:
        label = "-".join(f"{k}={v}" for k, v in self.params)
        label = "".join(c if c.isalnum() or c in "-=_." else "_" for c in label)
        return f"{self.kind}-{self.rows}-{label}-{self.digest()}.parquet"


@dataclass
class SyntheticFile:
    """A generated file and what the generator knows about it."""

    path: Path
    spec: SyntheticSpec
    facts: dict[str, Any] = field(default_factory=dict)


WORDS = (
    "furiously", "quickly", "carefully", "blithely", "slyly", "fluffily", "regular", "final",
    "ironic", "express", "pending", "special", "bold", "even", "silent", "unusual", "daring",
    "idle", "ruthless", "busy", "close", "permanent", "stealthy", "deposits", "requests",
    "accounts", "packages", "instructions", "theodolites", "pinto", "beans", "foxes", "ideas",
    "dependencies", "excuses", "platelets", "asymptotes", "courts", "dolphins", "multipliers",
    "sauternes", "warthogs", "frets", "dinos", "attainments", "somas", "tithes", "braids",
    "hockey", "players", "sheaves", "pearls", "realms", "sleep", "wake", "are", "cajole",
    "haggle", "nag", "use", "boost", "affix", "detect", "integrate", "maintain", "nod", "was",
    "lose", "among", "above", "across", "along", "against", "around", "about", "after", "before",
    "behind", "beneath", "beside",
)

US_REGIONS: dict[str, tuple[str, ...]] = {
    "northeast": ("CT", "MA", "ME", "NH", "NJ", "NY", "PA", "RI", "VT"),
    "midwest": ("IA", "IL", "IN", "KS", "MI", "MN", "MO", "ND", "NE", "OH", "SD", "WI"),
    "south": (
        "AL", "AR", "DC", "DE", "FL", "GA", "KY", "LA", "MD", "MS", "NC", "OK", "SC", "TN",
        "TX", "VA", "WV",
    ),
    "west": ("AK", "AZ", "CA", "CO", "HI", "ID", "MT", "NM", "NV", "OR", "UT", "WA", "WY"),
}


def _rng(spec: SyntheticSpec, salt: str) -> np.random.Generator:
    h = int(hashlib.sha256(f"{spec.seed}:{salt}".encode()).hexdigest()[:16], 16)
    return np.random.default_rng(h)


def _with_nulls(arr: pa.Array, rng: np.random.Generator, fraction: float) -> pa.Array:
    if fraction <= 0:
        return arr
    mask = pa.array(rng.random(len(arr)) < fraction)
    return pc.if_else(mask, pa.scalar(None, arr.type), arr)


def _phrases(rng: np.random.Generator, n: int, words: int) -> pa.Array:
    vocab = pa.array(WORDS)
    parts = [vocab.take(pa.array(rng.integers(0, len(WORDS), n))) for _ in range(words)]
    return pc.binary_join_element_wise(*parts, " ")


PAYLOAD_TYPES = (
    "int64",
    "float64",
    "string",
    "int32",
    "date32",
    "decimal",
    "timestamp",
    "category",
    "bool",
    "float32",
)


def payload_columns(spec: SyntheticSpec, n: int, count: int, prefix: str = "c") -> dict[str, pa.Array]:
    """`count` payload columns of mixed types (cycling through `PAYLOAD_TYPES`), some nullable."""
    out: dict[str, pa.Array] = {}
    for i in range(count):
        kind = PAYLOAD_TYPES[i % len(PAYLOAD_TYPES)]
        rng = _rng(spec, f"payload:{i}")
        name = f"{prefix}{i:02d}_{kind}"
        arr: pa.Array
        if kind == "int64":
            arr = pa.array(rng.integers(-(2**40), 2**40, n, dtype=np.int64))
        elif kind == "float64":
            arr = _with_nulls(pa.array(rng.normal(1000.0, 250.0, n)), rng, 0.05)
        elif kind == "string":
            arr = _phrases(rng, n, 3)
        elif kind == "int32":
            arr = pa.array(rng.integers(0, 100_000, n, dtype=np.int32))
        elif kind == "date32":
            arr = pa.array(rng.integers(8_000, 20_000, n, dtype=np.int32)).cast(pa.date32())
        elif kind == "decimal":
            cents = pa.array(rng.integers(0, 10_000_000, n, dtype=np.int64))
            arr = cents.cast(pa.decimal128(21, 2)).cast(pa.decimal128(12, 2))
        elif kind == "timestamp":
            base = 1_600_000_000_000_000
            arr = pa.array(base + rng.integers(0, 10**14, n, dtype=np.int64)).cast(
                pa.timestamp("us")
            )
        elif kind == "category":
            arr = _with_nulls(
                pa.array(["AIR", "MAIL", "RAIL", "SHIP", "TRUCK", "FOB", "REG AIR"]).take(
                    pa.array(rng.integers(0, 7, n))
                ),
                rng,
                0.02,
            )
        elif kind == "bool":
            arr = pa.array(rng.random(n) < 0.3)
        else:
            arr = pa.array(rng.random(n).astype(np.float32))
        out[name] = arr
    return out


def clustered_permutation(rng: np.random.Generator, n: int, run_length: int) -> np.ndarray:
    """0..n-1 arranged as shuffled runs of `run_length` consecutive values."""
    blocks = -(-n // run_length)
    order = rng.permutation(blocks)
    starts = order.astype(np.int64) * run_length
    lengths = np.minimum(run_length, n - starts)
    out_starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    pos = np.arange(n, dtype=np.int64)
    return np.repeat(starts, lengths) + (pos - np.repeat(out_starts, lengths))


def _build_selectivity(spec: SyntheticSpec) -> tuple[pa.Table, dict[str, Any], dict[str, Any]]:
    n = spec.rows
    rng = _rng(spec, "key")
    dist = spec.param("distribution", "uniform")
    if dist == "uniform":
        key = rng.permutation(n).astype(np.int64)
    elif dist == "clustered":
        key = clustered_permutation(rng, n, int(spec.param("run_length", 10_000)))
    else:
        raise DataError(f"unknown distribution {dist!r}")
    cols: dict[str, pa.Array] = {"key": pa.array(key)}
    cols.update(payload_columns(spec, n, int(spec.param("payload", 10))))
    return pa.table(cols), {}, {"key_values": "0..rows-1, each once", "distribution": dist}


def _build_encoding(spec: SyntheticSpec) -> tuple[pa.Table, dict[str, Any], dict[str, Any]]:
    n = spec.rows
    rng = _rng(spec, "predicate")
    predicate = spec.param("predicate")
    cardinality = int(spec.param("cardinality", 1000))
    codes = rng.integers(0, cardinality, n)
    opts: dict[str, Any] = {}
    payload = payload_columns(spec, n, int(spec.param("payload", 4)))
    facts: dict[str, Any] = {"cardinality": cardinality}
    if predicate in ("plain_int", "dict_int"):
        values = pa.array(codes.astype(np.int64) * 7919 + 13)
        facts["target"] = 13
        if predicate == "plain_int":
            opts["use_dictionary"] = list(payload)
    elif predicate == "dict_str":
        vrng = _rng(spec, "vocab")
        letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
        tails = letters[vrng.integers(0, 26, (cardinality, 10))]
        vocab = pa.array(
            [f"v{i:05d}-" + bytes(tails[i]).decode() for i in range(cardinality)], pa.string()
        )
        values = vocab.take(pa.array(codes))
        facts["target"] = vocab[0].as_py()
    else:
        raise DataError(f"unknown predicate encoding {predicate!r}")
    facts["target_rows"] = int((codes == 0).sum())
    cols = {"p": values, **payload}
    return pa.table(cols), opts, facts


def _build_width(spec: SyntheticSpec) -> tuple[pa.Table, dict[str, Any], dict[str, Any]]:
    n = spec.rows
    key = _rng(spec, "key").permutation(n).astype(np.int64)
    cols: dict[str, pa.Array] = {"key": pa.array(key)}
    cols.update(payload_columns(spec, n, int(spec.param("payload", 50))))
    return pa.table(cols), {}, {"key_values": "0..rows-1, each once"}


def _build_skipping(spec: SyntheticSpec) -> tuple[pa.Table, dict[str, Any], dict[str, Any]]:
    n = spec.rows
    layout = spec.param("layout")
    rng = _rng(spec, "skip")
    payload = payload_columns(spec, n, int(spec.param("payload", 4)))
    opts: dict[str, Any] = {}
    facts: dict[str, Any] = {"layout": layout}
    if layout in ("letters_sorted", "letters_unsorted"):
        letters = np.array([chr(ord("A") + i) for i in range(26)])
        codes = np.sort(rng.integers(0, 26, n))
        if layout == "letters_unsorted":
            codes = rng.permutation(codes)
        else:
            opts["sorting_columns"] = [pq.SortingColumn(0)]
        cols = {"letter": pa.array(letters[codes])}
        facts["target_rows"] = int((codes == ord("Q") - ord("A")).sum())
    elif layout == "states_by_region":
        parts = []
        for region in sorted(US_REGIONS):
            states = np.array(US_REGIONS[region])
            size = n // len(US_REGIONS)
            parts.append(states[rng.integers(0, len(states), size)])
        states_col = np.concatenate(parts)
        extra = n - len(states_col)
        if extra:
            states_col = np.concatenate([states_col, np.array(US_REGIONS["west"])[:1].repeat(extra)])
        cols = {"state": pa.array(states_col)}
        facts["target_rows"] = int((states_col == "NY").sum())
        facts["regions"] = "contiguous blocks: midwest, northeast, south, west; states random inside"
    elif layout in ("ids_bloom", "ids_plain"):
        ids = rng.permutation(n).astype(np.int64) * 2 + 1
        cols = {"id": pa.array(ids)}
        opts["use_dictionary"] = list(payload)
        if layout == "ids_bloom":
            opts["bloom_filter_options"] = {"id": {"ndv": spec.row_group_rows, "fpp": 0.01}}
        facts["target"] = int(ids[n // 2])
        facts["target_rows"] = 1
    else:
        raise DataError(f"unknown skipping layout {layout!r}")
    return pa.table({**cols, **payload}), opts, facts


BUILDERS = {
    "selectivity": _build_selectivity,
    "encoding": _build_encoding,
    "width": _build_width,
    "skipping": _build_skipping,
}


def ensure_synthetic(
    spec: SyntheticSpec, *, data_dir: Path | None = None, progress: Progress | None = None
) -> SyntheticFile:
    """Generate (or reuse) the synthetic file of `spec`; facts are stored beside it."""
    root = (data_dir or DATA_DIR) / "synthetic"
    root.mkdir(parents=True, exist_ok=True)
    path = root / spec.filename()
    facts_path = path.with_suffix(".json")
    if path.exists() and facts_path.exists():
        try:
            stored = json.loads(facts_path.read_text())
            return SyntheticFile(path, spec, stored.get("facts", {}))
        except ValueError:
            pass
    if spec.kind not in BUILDERS:
        raise DataError(f"unknown synthetic kind {spec.kind!r}")
    task = None
    if progress is not None:
        task = progress.add_task(f"generating {path.name}", total=None)
    try:
        table, opts, facts = BUILDERS[spec.kind](spec)
        _write_synthetic(path, spec, table, opts)
    finally:
        if progress is not None and task is not None:
            progress.remove_task(task)
    facts.update({"rows": table.num_rows, "columns": table.num_columns})
    _write_json_atomic(facts_path, {"spec": asdict(spec), "facts": facts})
    return SyntheticFile(path, spec, facts)


def _write_synthetic(path: Path, spec: SyntheticSpec, table: pa.Table, opts: dict[str, Any]) -> None:
    write_opts: dict[str, Any] = {
        "row_group_size": spec.row_group_rows,
        "compression": spec.compression,
        "write_statistics": True,
        "write_page_index": True,
        "max_rows_per_page": 20_000,
    }
    write_opts.update(opts)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        pq.write_table(table, tmp, **write_opts)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
