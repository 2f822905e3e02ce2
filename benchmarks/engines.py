"""Engines and measurements.

Parts:

- `Query`: paths × columns × where-SQL, with labels for reports and the rows expected if known.
- `Engine` and one subclass per engine; `Engine.run(query) -> (rows, seconds)` runs in-process
  and materializes the result (an Arrow table, a Polars frame, or Spark rows).
- `make_engines(names)`: engines by name (`ENGINES`); Spark shares one `local[2]` session.
- `measure(engine, query, reps)`: a warm-up run, then the median of `reps` runs;
  `measure_interleaved(engines, query, reps)` the same for several engines, run by run;
  `measure_turns(engines, queries, reps)` for every (query, engine) pair, run by run.
- `run_queries(engines, queries, reps)`: every query on every engine, with progress and a
  row-count agreement check per query (mismatches are marked in the results).

An engine that cannot start (lazyscan not written yet, no Java for Spark) reports
`unavailable: <reason>` for every query instead of failing the suite.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import math
import os
import shutil
import statistics
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from benchmarks import THREADS
from benchmarks.ui import console, progress_or

SPARK_COLLECT_LIMIT = 20_000
"""Above this many expected rows, Spark queries are drained by a `noop` write instead of collect."""


@dataclass(frozen=True)
class Query:
    """One scan: files, projection (None = all columns), filter (SQL), and report labels."""

    name: str
    paths: tuple[str, ...]
    columns: tuple[str, ...] | None = None
    where: str | None = None
    group: str = ""
    x: str | float | int = ""
    expected_rows: int | None = None
    label: str = ""

    @property
    def spark_sink(self) -> str:
        """How Spark materializes the result: 'collect' (rows to the driver) or 'noop'."""
        if self.expected_rows is not None and self.expected_rows > SPARK_COLLECT_LIMIT:
            return "noop"
        return "collect"

    def select_list(self) -> str:
        if not self.columns:
            return "*"
        return ", ".join(quote_ident(c) for c in self.columns)

    def sql(self, table: str) -> str:
        """The query as SQL against `table`."""
        text = f"SELECT {self.select_list()} FROM {table}"
        if self.where:
            text += f" WHERE {self.where}"
        return text

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["paths"] = list(self.paths)
        d["columns"] = list(self.columns) if self.columns else None
        d["sql"] = self.sql("t")
        d["spark_sink"] = self.spark_sink
        return d


def quote_ident(name: str) -> str:
    """A double-quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


class EngineUnavailable(RuntimeError):
    """The engine cannot run here; the message says why."""


# --------------------------------------------------------------------------- SQL -> pyarrow


def sql_to_arrow(where: str, schema: pa.Schema | None = None) -> tuple[pc.Expression, set[str]]:
    """A pyarrow expression for a SQL predicate, and the columns it reads.

    Covers comparisons, AND/OR/NOT, IN, BETWEEN, IS [NOT] NULL, LIKE, and number, string,
    boolean and DATE literals.
    """
    import sqlglot
    from sqlglot import exp

    columns: set[str] = set()

    def lit(node: Any) -> Any:
        if isinstance(node, exp.Paren):
            return lit(node.this)
        if isinstance(node, exp.Literal):
            if node.is_string:
                return node.this
            text = node.this
            try:
                return int(text)
            except ValueError:
                return decimal.Decimal(text)  # exact, like SQL
        if isinstance(node, exp.Neg):
            return -lit(node.this)
        if isinstance(node, exp.Boolean):
            return bool(node.this)
        if isinstance(node, exp.Null):
            return None
        if isinstance(node, exp.Cast) and node.to.this == exp.DataType.Type.DATE:
            return dt.date.fromisoformat(lit(node.this))
        raise ValueError(f"unsupported literal in predicate: {node.sql()}")

    def typed(value: Any, column: Any) -> Any:
        # numbers against a decimal column as Decimal scalars: pyarrow's common type of int64
        # and decimal(15, 2) needs more precision than it allows
        if schema is None or not isinstance(column, exp.Column) or isinstance(value, bool):
            return value
        idx = schema.get_field_index(column.name)
        if idx < 0:
            return value
        t = schema.field(idx).type
        if pa.types.is_decimal(t) and isinstance(value, int):
            return decimal.Decimal(value)
        if pa.types.is_floating(t) and isinstance(value, decimal.Decimal):
            return float(value)
        return value

    def conv(node: Any) -> Any:
        if isinstance(node, exp.Paren):
            return conv(node.this)
        if isinstance(node, exp.Column):
            columns.add(node.name)
            return pc.field(node.name)
        if isinstance(node, exp.And):
            return conv(node.left) & conv(node.right)
        if isinstance(node, exp.Or):
            return conv(node.left) | conv(node.right)
        if isinstance(node, exp.Not):
            return ~conv(node.this)
        binary = {
            exp.EQ: lambda a, b: a == b,
            exp.NEQ: lambda a, b: a != b,
            exp.GT: lambda a, b: a > b,
            exp.GTE: lambda a, b: a >= b,
            exp.LT: lambda a, b: a < b,
            exp.LTE: lambda a, b: a <= b,
        }
        for cls, fn in binary.items():
            if isinstance(node, cls):
                left, right = node.left, node.right
                col = left if isinstance(left, exp.Column) else right
                a = conv(left) if isinstance(left, exp.Column) else typed(lit(left), col)
                b = conv(right) if isinstance(right, exp.Column) else typed(lit(right), col)
                return fn(a, b)
        if isinstance(node, exp.In):
            return conv(node.this).isin([lit(e) for e in node.expressions])
        if isinstance(node, exp.Between):
            f = conv(node.this)
            low, high = typed(lit(node.args["low"]), node.this), typed(lit(node.args["high"]), node.this)
            return (f >= low) & (f <= high)
        if isinstance(node, exp.Is):
            if isinstance(node.expression, exp.Null):
                return conv(node.this).is_null()
            raise ValueError(f"unsupported IS: {node.sql()}")
        if isinstance(node, exp.Like):
            return pc.match_like(conv(node.this), lit(node.expression))
        raise ValueError(f"unsupported predicate: {node.sql()}")

    tree = sqlglot.parse_one(where)
    return conv(tree), columns


# --------------------------------------------------------------------------- engines


class Engine:
    """A query runner. `setup` runs once, lazily; `run` times one materialized execution."""

    name: str = ""
    label: str = ""

    def __init__(self) -> None:
        self._ready = False
        self._unavailable: str | None = None
        self.last_profile: dict[str, Any] | None = None
        self.last_notes: list[str] = []
        self.notes: list[str] = []

    def settle(self) -> None:
        """Let background work of the last measurement finish before the next engine runs."""
        release_arrow_memory()

    def ensure_ready(self) -> None:
        if self._unavailable is not None:
            raise EngineUnavailable(self._unavailable)
        if self._ready:
            return
        try:
            self.setup()
        except Exception as e:
            reason = str(e) if isinstance(e, EngineUnavailable) else f"{type(e).__name__}: {e}"
            self._unavailable = reason.splitlines()[0][:300] if reason else type(e).__name__
            raise EngineUnavailable(self._unavailable) from e
        self._ready = True

    def setup(self) -> None:
        """Import and configure the engine; raise `EngineUnavailable` when it cannot run."""

    def close(self) -> None:
        """Release resources."""

    def run(self, query: Query) -> tuple[int, float]:
        """Run `query` once; return (rows returned, seconds)."""
        self.ensure_ready()
        self.last_profile = None
        self.last_notes = []
        return self._run(query)

    def _run(self, query: Query) -> tuple[int, float]:
        raise NotImplementedError


def _timed(fn: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def duckdb_connection() -> Any:
    """A DuckDB connection with the suite's thread count."""
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET threads = {THREADS}")
    return con


def datafusion_context(pushdown: bool) -> Any:
    """A DataFusion context with the suite's thread count, Parquet filter pushdown on or off."""
    from datafusion import SessionConfig, SessionContext

    value = "true" if pushdown else "false"
    config = (
        SessionConfig()
        .with_target_partitions(THREADS)
        .set("datafusion.execution.parquet.pushdown_filters", value)
        .set("datafusion.execution.parquet.reorder_filters", value)
    )
    return SessionContext(config)


class DuckDBEngine(Engine):
    name = "duckdb"
    label = "DuckDB"

    def setup(self) -> None:
        self.con = duckdb_connection()

    def _run(self, query: Query) -> tuple[int, float]:
        paths = ", ".join("'" + p.replace("'", "''") + "'" for p in query.paths)
        sql = query.sql(f"read_parquet([{paths}])")
        table, seconds = _timed(lambda: self.con.sql(sql).to_arrow_table())
        return table.num_rows, seconds

    def close(self) -> None:
        if self._ready:
            self.con.close()


class PolarsEngine(Engine):
    name = "polars"
    label = "Polars"

    def setup(self) -> None:
        os.environ.setdefault("POLARS_MAX_THREADS", str(THREADS))
        import polars as pl

        self.pl = pl
        if pl.thread_pool_size() != THREADS:
            self.notes.append(f"polars thread pool has {pl.thread_pool_size()} threads")

    def _run(self, query: Query) -> tuple[int, float]:
        pl = self.pl

        df, seconds = _timed(lambda: polars_collect(pl, pl.scan_parquet(list(query.paths)), query))
        return df.height, seconds


def polars_collect(pl: Any, lf: Any, query: Query) -> Any:
    """The rows of ``query`` from the Polars LazyFrame ``lf``: its filter (SQL text), then its
    columns, collected."""
    if query.where:
        lf = lf.filter(pl.sql_expr(query.where))
    if query.columns:
        lf = lf.select(list(query.columns))
    return lf.collect()


class DataFusionEngine(Engine):
    label = "DataFusion"

    def __init__(self, pushdown: bool) -> None:
        super().__init__()
        self.pushdown = pushdown
        self.name = "datafusion-pushdown" if pushdown else "datafusion-nopushdown"
        self.label = "DataFusion pushdown" if pushdown else "DataFusion no pushdown"
        self._tables: dict[tuple[str, ...], str] = {}

    def setup(self) -> None:
        self.ctx = datafusion_context(self.pushdown)

    def _table(self, paths: tuple[str, ...]) -> str:
        if paths not in self._tables:
            name = f"t{len(self._tables)}"
            parts = []
            for i, p in enumerate(paths):
                part = f"{name}_{i}"
                self.ctx.register_parquet(part, p)
                parts.append(f"SELECT * FROM {part}")
            if len(parts) == 1:
                self._tables[paths] = f"{name}_0"
            else:
                self.ctx.register_view(name, self.ctx.sql(" UNION ALL ".join(parts)))
                self._tables[paths] = name
        return self._tables[paths]

    def _run(self, query: Query) -> tuple[int, float]:
        sql = query.sql(self._table(query.paths))
        table, seconds = _timed(lambda: self.ctx.sql(sql).to_arrow_table())
        return table.num_rows, seconds


VIEW_TYPES = (pa.string_view(), pa.binary_view())


class PyArrowEngine(Engine):
    """pyarrow.dataset with a filter expression.

    pyarrow's compute kernels have no string_view filter, so files whose stored Arrow schema
    has view types (tpchgen-cli writes `string_view`) are read in batches, cast to `string`
    and filtered after reading, without pushdown; a note says so.
    """

    name = "pyarrow"
    label = "pyarrow"

    def setup(self) -> None:
        pa.set_cpu_count(THREADS)
        pa.set_io_thread_count(THREADS)

    def _run(self, query: Query) -> tuple[int, float]:
        import pyarrow.dataset as ds

        viewed = False

        def go() -> pa.Table:
            nonlocal viewed
            dataset = ds.dataset(list(query.paths), format="parquet")
            schema = dataset.schema
            columns = list(query.columns) if query.columns else list(schema.names)
            expr, pred_cols = sql_to_arrow(query.where, schema) if query.where else (None, set())
            if not any(schema.field(c).type in VIEW_TYPES for c in set(columns) | pred_cols):
                return dataset.to_table(columns=columns, filter=expr, use_threads=True)
            viewed = True
            needed = columns + sorted(pred_cols - set(columns))
            pieces = []
            for batch in dataset.to_batches(columns=needed, use_threads=True):
                t = pa.Table.from_batches([_unview(batch)])
                if expr is not None:
                    t = t.filter(expr)
                if t.num_rows:
                    pieces.append(t.select(columns))
            target = pa.schema([_unview_field(schema.field(c)) for c in columns])
            return pa.concat_tables(pieces) if pieces else target.empty_table()

        table, seconds = _timed(go)
        if viewed:
            self.last_notes.append("view-typed columns: filtered after reading (no pushdown)")
        return table.num_rows, seconds


def _unview_field(f: pa.Field) -> pa.Field:
    if f.type == pa.string_view():
        return f.with_type(pa.string())
    if f.type == pa.binary_view():
        return f.with_type(pa.binary())
    return f


def _unview(batch: pa.RecordBatch) -> pa.RecordBatch:
    schema = pa.schema([_unview_field(f) for f in batch.schema])
    return batch if schema.equals(batch.schema) else batch.cast(schema)


class LazyscanEngine(Engine):
    """lazyscan in-process: `lazyscan.scan(...).to_table()`, keeping the scan profile."""

    name = "lazyscan"
    label = "lazyscan"

    def setup(self) -> None:
        import lazyscan

        scan = getattr(lazyscan, "scan", None)
        if scan is None:
            raise EngineUnavailable("lazyscan.scan is not implemented yet")
        self.scan = scan

    def _run(self, query: Query) -> tuple[int, float]:
        source: Any = query.paths[0] if len(query.paths) == 1 else list(query.paths)
        columns = list(query.columns) if query.columns else None

        def go() -> tuple[Any, pa.Table]:
            s = self.scan(source, columns=columns, where=query.where, threads=THREADS)
            return s, s.to_table()

        (s, table), seconds = _timed(go)
        self.last_profile = _profile_dict(getattr(s, "profile", None))
        return table.num_rows, seconds


def _profile_dict(profile: Any) -> dict[str, Any] | None:
    if profile is None:
        return None
    as_dict = getattr(profile, "as_dict", None)
    try:
        data = as_dict() if callable(as_dict) else dict(profile)
    except Exception:
        return None
    return {str(k): v for k, v in data.items()} if isinstance(data, dict) else None


# --------------------------------------------------------------------------- Spark

_spark_lock = threading.Lock()
_spark_session: Any = None

SPARK_CONF = {
    "spark.master": f"local[{THREADS}]",
    "spark.driver.memory": "6g",
    "spark.sql.shuffle.partitions": str(THREADS),
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.adaptive.enabled": "true",
}


def get_spark() -> Any:
    """The suite's shared SparkSession (`local[2]`), created on first use."""
    global _spark_session
    with _spark_lock:
        if _spark_session is not None:
            return _spark_session
        if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
            raise EngineUnavailable("Java not found: Spark needs Java 17 (make java)")
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        import warnings

        warnings.filterwarnings("ignore", category=FutureWarning, module="pyspark.*")
        from pyspark.sql import SparkSession

        builder = SparkSession.builder.appName("lazyscan-benchmarks").config(
            "spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{_log4j_file()}"
        )
        for k, v in SPARK_CONF.items():
            builder = builder.config(k, v)
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        _spark_session = spark
        return spark


LOG4J2_PROPERTIES = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
"""


def _log4j_file() -> str:
    """A log4j2 configuration that keeps Spark quiet except for errors."""
    import tempfile

    path = os.path.join(tempfile.gettempdir(), "lazyscan-bench-log4j2.properties")
    with open(path, "w") as fh:
        fh.write(LOG4J2_PROPERTIES)
    return path


def stop_spark() -> None:
    """Stop the shared SparkSession if one was started."""
    global _spark_session
    with _spark_lock:
        if _spark_session is not None:
            _spark_session.stop()
            _spark_session = None


#: pause after each Spark measurement (after a full JVM garbage collection)
SETTLE_S = 0.5


def release_arrow_memory() -> None:
    """Return the memory pyarrow's pool keeps after a run to the system, untimed. After a full
    read (gigabytes of Arrow arrays freed), mimalloc otherwise hands it back during the next
    engine's run: lazyscan's SF10 Q-A took 0.870 s after pyarrow's Q-A, 0.799 s with the
    memory released first (median of 8 each, in turns)."""
    pa.default_memory_pool().release_unused()


def settle_spark(spark: Any) -> None:
    """Collect the JVM's garbage, untimed: otherwise the JVM collects the last query's garbage
    on the machine's two cores while the next engine is timed."""
    release_arrow_memory()
    if spark is None:
        return
    try:
        spark.sparkContext._jvm.System.gc()
    except Exception:
        return
    time.sleep(SETTLE_S)

SPARK_READERS = {
    "parquet": "Spark parquet",
    "lazyscan": "Spark lazyscan",
    "lazyscan-df": "Spark lazyscan df",
    "lazyscan-auto": "Spark lazyscan.read auto",
    "lazyscan-source": "Spark lazyscan data source",
    "lazyscan-tasks": "Spark lazyscan mapInArrow",
}
#: the route of `lazyscan.spark.read` each forced lazyscan reader takes
SPARK_ROUTES = {"lazyscan": "auto", "lazyscan-source": "source", "lazyscan-tasks": "tasks", "lazyscan-auto": "auto"}


class SparkEngine(Engine):
    """Spark local[2]: its own Parquet reader, or the lazyscan data source.

    Readers:

    - `parquet`: `spark.read.parquet(paths).where(sql).select(columns)`.
    - `lazyscan`: `lazyscan.spark.read(spark, paths, columns, where, force="lazyscan")`, the
      documented way to hand lazyscan the filter and the columns (Spark 4.1-4.3 give a Python
      data source no column pruning and lazyscan keeps pushed filters off there); without that
      helper, the same as `lazyscan-df`.
    - `lazyscan-source` / `lazyscan-tasks`: the same with `route="source"` (the `lazyscan` data
      source) or `route="tasks"` (`mapInArrow` over planned tasks), side by side.
    - `lazyscan-df`: `spark.read.format("lazyscan").load(paths).where(sql).select(columns)`.
    - `lazyscan-auto`: `lazyscan.spark.read(spark, paths, columns, where)`: the helper estimates
      the selectivity and returns a lazyscan or a `spark.read.parquet` DataFrame (the estimate is
      inside the timed region).

    The timed region builds the DataFrame and runs the action. Results of up to
    `SPARK_COLLECT_LIMIT` expected rows are collected to the driver (the seed query pair, the
    demo); larger ones are drained by a `noop` write, and the row count comes from an untimed
    `count()`. All readers are measured the same way.
    """

    def __init__(self, reader: str) -> None:
        super().__init__()
        if reader not in SPARK_READERS:
            raise ValueError(f"unknown Spark reader {reader!r}; use one of {', '.join(SPARK_READERS)}")
        self.reader = reader
        self.name = f"spark-{reader}"
        self.label = SPARK_READERS[reader]
        self._counts: dict[Query, int] = {}
        self._helper: Any = None
        self._last_profile: Any = None

    def setup(self) -> None:
        self.spark = get_spark()
        if self.reader == "parquet":
            return
        import lazyscan.spark as lspark

        register = getattr(lspark, "register", None)
        if register is None:
            raise EngineUnavailable("lazyscan.spark.register is not implemented yet")
        register(self.spark)
        self._last_profile = getattr(lspark, "last_profile", None)
        if self.reader in SPARK_ROUTES:
            self._helper = getattr(lspark, "read", None)
            if self._helper is None:
                self.notes.append("no lazyscan.spark.read: DataFrame filter on format('lazyscan')")

    def settle(self) -> None:
        settle_spark(getattr(self, "spark", None))

    def frame(self, query: Query) -> Any:
        """The query's DataFrame (not yet executed)."""
        paths: Any = query.paths[0] if len(query.paths) == 1 else list(query.paths)
        if self._helper is not None:
            columns = list(query.columns) if query.columns else None
            force = None if self.reader == "lazyscan-auto" else "lazyscan"
            route = SPARK_ROUTES[self.reader]
            return self._helper(self.spark, paths, columns, query.where, force=force, route=route)
        if self.reader == "parquet":
            df = self.spark.read.parquet(*query.paths)
        else:
            df = self.spark.read.format("lazyscan").load(paths)
        if query.where:
            df = df.where(query.where)
        if query.columns:
            df = df.select(*query.columns)
        return df

    def _profile(self) -> dict[str, Any] | None:
        if not callable(self._last_profile):
            return None
        try:
            return _profile_dict(self._last_profile())
        except Exception:
            return None

    def _run(self, query: Query) -> tuple[int, float]:
        self._profile()
        if query.spark_sink == "collect":
            rows, seconds = _timed(lambda: self.frame(query).collect())
            count = len(rows)
            self.last_profile = self._profile()
        else:

            def drain() -> Any:
                df = self.frame(query)
                df.write.format("noop").mode("overwrite").save()
                return df

            df, seconds = _timed(drain)
            self.last_profile = self._profile()
            if query not in self._counts:
                self._counts[query] = int(df.count())
            count = self._counts[query]
        return count, seconds


ALL_ENGINES = (
    "spark-parquet",
    "spark-lazyscan",
    "spark-lazyscan-df",
    "spark-lazyscan-auto",
    "spark-lazyscan-source",
    "spark-lazyscan-tasks",
    "lazyscan",
    "duckdb",
    "polars",
    "datafusion-pushdown",
    "datafusion-nopushdown",
    "pyarrow",
)
"""Every engine name, in report order."""

ENGINES = (
    "spark-parquet",
    "spark-lazyscan",
    "lazyscan",
    "duckdb",
    "polars",
    "datafusion-pushdown",
    "datafusion-nopushdown",
    "pyarrow",
)
"""The default engines (all but `spark-lazyscan-df`, which reads every row and column)."""

DEMO_ENGINES = ("spark-parquet", "spark-lazyscan", "lazyscan", "duckdb", "polars")


def make_engine(name: str) -> Engine:
    """The engine called `name` (one of `ENGINES`)."""
    factories: dict[str, Any] = {
        "spark-parquet": lambda: SparkEngine("parquet"),
        "spark-lazyscan": lambda: SparkEngine("lazyscan"),
        "spark-lazyscan-df": lambda: SparkEngine("lazyscan-df"),
        "spark-lazyscan-auto": lambda: SparkEngine("lazyscan-auto"),
        "spark-lazyscan-source": lambda: SparkEngine("lazyscan-source"),
        "spark-lazyscan-tasks": lambda: SparkEngine("lazyscan-tasks"),
        "lazyscan": LazyscanEngine,
        "duckdb": DuckDBEngine,
        "polars": PolarsEngine,
        "datafusion-pushdown": lambda: DataFusionEngine(True),
        "datafusion-nopushdown": lambda: DataFusionEngine(False),
        "pyarrow": PyArrowEngine,
    }
    if name not in factories:
        raise ValueError(f"unknown engine {name!r}; choose from {', '.join(ALL_ENGINES)}")
    engine: Engine = factories[name]()
    return engine


def make_engines(names: Sequence[str] | None = None) -> list[Engine]:
    """Engines by name, in the given order (default: all)."""
    return [make_engine(n) for n in (names or ENGINES)]


def close_engines(engines: Sequence[Engine]) -> None:
    """Close every engine and stop Spark."""
    for e in engines:
        with contextlib.suppress(Exception):
            e.close()
    stop_spark()


# --------------------------------------------------------------------------- measuring


@dataclass
class Measurement:
    """One engine on one query: median seconds of the repetitions after a warm-up."""

    engine: str
    label: str
    status: str
    rows: int | None = None
    seconds: float | None = None
    times: list[float] = field(default_factory=list)
    warmup: float | None = None
    profile: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    mismatch: bool = False

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class QueryResult:
    """All engines on one query, with the row-count verdict."""

    query: Query
    measurements: list[Measurement]
    agree: bool = True
    verdict: str = ""

    def by_engine(self) -> dict[str, Measurement]:
        return {m.engine: m for m in self.measurements}

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query.to_dict(),
            "agree": self.agree,
            "verdict": self.verdict,
            "measurements": [m.to_dict() for m in self.measurements],
        }


MEASURE_BUDGET_S = 12.0
"""Time for the timed runs of one measurement: fewer repetitions when the warm-up is slow."""


def measure(
    engine: Engine, query: Query, reps: int = 3, budget_s: float | None = MEASURE_BUDGET_S
) -> Measurement:
    """Warm-up run, then up to `reps` timed runs; the median is the result.

    When the warm-up shows that `reps` runs would exceed `budget_s`, fewer runs are made (at
    least one); `times` shows how many.
    """
    return measure_interleaved([engine], query, reps, budget_s)[0]


def _failed(m: Measurement, e: Exception) -> None:
    if isinstance(e, EngineUnavailable):
        m.status = f"unavailable: {e}"
        return
    first = (str(e).strip().splitlines() or [""])[0][:300]
    m.status = f"error: {type(e).__name__}: {first}"
    m.notes.append(traceback.format_exc(limit=3)[-1500:])


def run_order(n: int, rep: int) -> list[int]:
    """The order of ``n`` engines in repetition ``rep``: engine ``(rep + k * stride) % n`` runs
    ``k``-th, the stride cycling through the numbers coprime to ``n``. The first place moves
    from run to run and so does each engine's predecessor (a plain rotation would keep every
    engine right after the same one)."""
    if n <= 0:
        return []
    strides = [s for s in range(1, n) if math.gcd(s, n) == 1] or [1]
    stride = strides[rep % len(strides)]
    return [(rep + k * stride) % n for k in range(n)]


def measure_interleaved(
    engines: Sequence[Engine], query: Query, reps: int = 3, budget_s: float | None = MEASURE_BUDGET_S
) -> list[Measurement]:
    """:func:`measure` for several engines on one query, run by run: a warm-up of each, then
    repetition 1 of every engine, repetition 2 of every engine, ... so a slow phase of a shared
    machine spreads over all engines instead of landing on one. The order changes from run to
    run (:func:`run_order`), so no engine always runs right after the same one (after Spark's
    JVM, say)."""
    return measure_turns(engines, [query], reps, budget_s)[0]


def measure_turns(
    engines: Sequence[Engine],
    queries: Sequence[Query],
    reps: int = 3,
    budget_s: float | None = MEASURE_BUDGET_S,
) -> list[list[Measurement]]:
    """:func:`measure_interleaved` over every (query, engine) pair at once: each repetition runs
    every query on every engine, in an order that moves from run to run. Used where a ratio of
    two queries is reported (the seed's penalty Q-A / Q-B): its two sides then see the same
    phases of a shared machine, as the engines of one query do. Returns ``[query][engine]``."""
    pairs = [(q, e) for q in queries for e in engines]
    ms = [Measurement(engine=e.name, label=e.label, status="ok") for _, e in pairs]
    rows: list[int | None] = [None] * len(pairs)
    runs = [0] * len(pairs)
    for i, ((q, e), m) in enumerate(zip(pairs, ms)):
        try:
            rows[i], m.warmup = e.run(q)
            runs[i] = max(1, reps)
            if budget_s is not None and m.warmup > 0 and m.warmup * runs[i] > budget_s:
                runs[i] = max(1, min(runs[i], int(budget_s // m.warmup)))
                m.notes.append(f"{runs[i]} of {reps} repetitions (slow warm-up: {m.warmup:.1f} s)")
        except Exception as err:
            _failed(m, err)
        e.settle()
    for rep in range(max(runs, default=0)):
        for i in run_order(len(pairs), rep):
            (q, e), m = pairs[i], ms[i]
            if rep >= runs[i] or not m.ok:
                continue
            try:
                r, seconds = e.run(q)
            except Exception as err:
                _failed(m, err)
                continue
            m.times.append(seconds)
            # the engine's profile and notes are those of its last run, which may be another query's
            m.profile = e.last_profile
            m.notes.extend(n for n in e.last_notes if n not in m.notes)
            if r != rows[i]:
                m.notes.append(f"row count changed between runs: {rows[i]} then {r}")
                rows[i] = r
            e.settle()
    for i, ((_, e), m) in enumerate(zip(pairs, ms)):
        if not m.ok:
            continue
        m.rows = rows[i]
        m.seconds = statistics.median(m.times)
        m.notes[:0] = [n for n in e.notes if n not in m.notes]
    n = len(engines)
    return [ms[k * n : (k + 1) * n] for k in range(len(queries))]


def check_agreement(result: QueryResult) -> None:
    """Mark engines whose row count differs from the expected count (or from the majority)."""
    ok = [m for m in result.measurements if m.ok]
    expected = result.query.expected_rows
    if not ok:
        result.agree = expected is None
        result.verdict = "no engine ran"
        return
    if expected is None:
        expected = Counter(m.rows for m in ok).most_common(1)[0][0]
    bad = [m for m in ok if m.rows != expected]
    for m in bad:
        m.mismatch = True
    result.agree = not bad
    if bad:
        names = ", ".join(f"{m.label}={m.rows}" for m in bad)
        result.verdict = f"ROW COUNT MISMATCH: expected {expected}, got {names}"
    else:
        result.verdict = f"all {len(ok)} engines returned {expected} rows"


def summary_line(result: QueryResult) -> str:
    """One line per query: rows and each engine's median seconds."""
    parts = []
    for m in result.measurements:
        if m.ok and m.seconds is not None:
            parts.append(f"{m.label} {m.seconds:.3f}s" + (" [red]⚠[/]" if m.mismatch else ""))
        elif m.status.startswith("error"):
            parts.append(f"{m.label} [red]error[/]")
    rows = next((m.rows for m in result.measurements if m.ok), None)
    return f"{result.query.name} ({'?' if rows is None else f'{rows:,}'} rows): " + " · ".join(parts)


def run_queries(
    engines: Sequence[Engine],
    queries: Sequence[Query],
    reps: int = 3,
    *,
    progress: Any = None,
    title: str = "queries",
    budget_s: float | None = MEASURE_BUDGET_S,
    in_turns: bool = False,
) -> list[QueryResult]:
    """Every query on every engine, with progress and agreement checks: query by query, engines
    interleaved run by run; with ``in_turns`` the queries take turns as well
    (:func:`measure_turns`), for a scenario that reports a ratio of two queries."""
    results: list[QueryResult] = []
    with progress_or(progress) as prog:
        total = len(queries) * len(engines)
        task = prog.add_task(title, total=total)
        if in_turns:
            prog.update(task, description=f"{title}: {len(queries)} queries × {len(engines)} engines in turns, run by run")
            measured = measure_turns(engines, queries, reps, budget_s)
            prog.advance(task, total)
        else:
            measured = []
        for k, q in enumerate(queries):
            if not in_turns:
                prog.update(task, description=f"{title} [{(k + 1) * len(engines)}/{total}]: {q.name} · engines interleaved run by run")
                measured.append(measure_interleaved(engines, q, reps, budget_s))
                prog.advance(task, len(engines))
            res = QueryResult(q, measured[k])
            check_agreement(res)
            console.print(f"  {title}: {summary_line(res)}", highlight=False)
            if not res.agree:
                console.print(f"[bold red]{q.name}: {res.verdict}[/]")
            results.append(res)
        prog.update(task, description=f"{title}: {total} measurements")
    return results
