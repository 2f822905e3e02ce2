"""``lazyscan.spark.read``: a DataFrame from lazyscan or from Spark's own Parquet or ORC
reader, whichever is expected to be faster, with the reason logged.

The choice compares two expected times (seconds on the session's cores):

- **Spark's reader**: a fixed cost per read, a cost per wave of its tasks (each task parses
  the file footer, so it grows with the footer), and decoding the needed columns of the row
  groups that row-group statistics leave (Spark prunes with them too), at
  ``spark_bytes_per_s`` of uncompressed column chunk per core. ORC files give no uncompressed
  sizes: Spark's ORC reader is modelled on the compressed bytes of the needed columns' streams
  in the stripes statistics leave (``spark_orc_*`` constants).
- **lazyscan**: a fixed cost per read of a Python data source (the planning calls in Python
  workers and the job), a cost per wave of its tasks that scan something (a Python worker,
  the pickled reader, the Arrow stream), the selective scan of the row groups statistics
  leave, and the surviving rows crossing from Python into the JVM. The scan time is
  measured: the selective scan runs on a sample of those row groups (a few, spread over the
  source) in the driver, one thread, and its time per row group is scaled to their number and
  divided by the tasks running at once.

lazyscan is picked when its expected time is below Spark's (times ``overhead``, default 1) and
at most ``max_selectivity`` of the sampled rows survive. When Spark's expected time is below
lazyscan's fixed costs alone, nothing is sampled. The constants are in :class:`CostModel`,
calibrated on a 2-core machine (``local[2]``, TPC-H lineitem SF1 and SF10); pass another
``CostModel`` to :func:`read` for other machines or clusters. Without a filter, Spark's
reader is used; filters lazyscan cannot parse also go to Spark's reader.

The lazyscan DataFrame reads only the output columns and gets the whole filter, evaluated
inside the scan against the file columns, so even disjunctions, which Spark never pushes to
Python sources, are evaluated there and Spark does not filter again. It runs on one of two
routes (``route``): ``mapInArrow`` over the planned tasks (:mod:`.tasks`; the default on classic
sessions, and the only route before Spark 4.1) or the ``lazyscan`` data source with the output
columns as its schema and the filter as its ``where`` option (the default on Spark Connect to
4.1 or later).
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from lazyscan.errors import (
    LazyScanError,
    OptionError,
    PredicateError,
    SourceError,
    TableFolderError,
)
from lazyscan.io.retry import RetryPolicy
from lazyscan.predicate import (
    Answer,
    Expr,
    bind,
    col,
    conjunction,
    evaluate_statistics,
    referenced_columns,
    to_expr,
)
from lazyscan.predicate.bind import resolve_name
from lazyscan.predicate.bound import BoundExpr
from lazyscan.predicate.casts import session_time_zone
from lazyscan.predicate.keys import KeyFilter
from lazyscan.predicate.prune import merge_statistics
from lazyscan.predicate.sql import double_quoted_names
from lazyscan.scan import scan
from lazyscan.scan.dataset import FileInfo, FileSplit
from lazyscan.scan.profile import Profile
from lazyscan.spark.catalog import CatalogTable, is_table_name, looks_like_table_name, resolve_table
from lazyscan.spark.compat import (
    HAS_PYTHON_DATA_SOURCE,
    default_parallelism,
    is_connect,
    spark_version_text,
)
from lazyscan.spark.keys import DEFAULT_MAX_BYTES, DEFAULT_MAX_KEYS
from lazyscan.spark.options import KEY_FILTER_PREFIX
from lazyscan.spark.workers import check_workers

log = logging.getLogger("lazyscan.spark")

DEFAULT_MAX_SELECTIVITY = 0.2
DEFAULT_OVERHEAD = 1.0
DEFAULT_SAMPLE_FILES = 4
DEFAULT_SAMPLE_ROW_GROUPS = 4
#: Spark's default ``spark.sql.files.maxPartitionBytes``
SPARK_MAX_PARTITION_BYTES = 128 * 1024 * 1024


@dataclass(frozen=True)
class CostModel:
    """Constants of the chooser's time model (seconds, bytes per second).

    Calibrated by measurement on a 2-core machine, Spark 4.3 ``local[2]``, TPC-H lineitem SF1
    (one 232 MB file, 53 row groups) and SF10 (2.5 GB, 524 row groups), each reader timed the
    way the benchmark times it (DataFrame built and action run, after a JVM garbage
    collection). Examples: a filter that statistics rule out everywhere took 0.08 s (SF1) and
    0.26 s (SF10: 19 tasks, each parsing a 2.9 MB footer) on Spark's reader, 0.12 s and 0.14 s
    on lazyscan; a key range left by statistics in one row group took 0.15 s on lazyscan at
    SF1; lazyscan's tasks spent about as long per row group as the driver's sample.
    """

    #: lazyscan: planning a Python data source read (create, push filters, partitions), the job
    lazyscan_read_s: float = 0.11
    #: lazyscan: each wave of tasks that scan something (one task per core at once)
    lazyscan_task_s: float = 0.045
    #: lazyscan: a Spark task's scan time per row group / the driver sample's (CPU time)
    lazyscan_scan_factor: float = 1.0
    #: lazyscan: Arrow output moving from the Python workers into the JVM, per core
    lazyscan_output_bytes_per_s: float = 100e6
    #: transparent mode: the least a scan of a query reading more than one relation must be
    #: expected to save for lazyscan to take it. Inside a join its stage shares the cores with
    #: the other scans, and the per-scan model sees none of that: at TPC-H SF10 the scans it
    #: expected to save 0.11-0.32 s (the orders scans of Q4, Q5, Q10, lineitem of Q20) made
    #: their queries 1.03-1.08x slower, those expected to save 0.70-1.74 s (Q6, Q12, Q14,
    #: Q15, Q19) made them 0.55-0.92x
    query_min_saving_s: float = 0.5
    #: Spark's reader: schema inference, planning and the job
    spark_read_s: float = 0.075
    #: Spark's reader: each wave of tasks, besides parsing the footer
    spark_task_s: float = 0.012
    #: Spark's reader: footer parsing in each task
    spark_footer_bytes_per_s: float = 450e6
    #: Spark's reader: each value (row x needed column) decoded and filtered, per core
    spark_value_s: float = 10e-9
    #: Spark's reader: uncompressed bytes of needed column chunks decoded per core
    spark_bytes_per_s: float = 490e6
    #: Spark's ORC reader: each value decoded and filtered, per core (TPC-H lineitem SF1
    #: written by Spark, Q-A 1.32 s and Q-B 0.37 s on ``local[2]``: 96 M values and 147 MB of
    #: streams, 12 M values and 51 MB)
    spark_orc_value_s: float = 13.5e-9
    #: Spark's ORC reader: compressed stream bytes of needed columns read and decoded per core
    spark_orc_bytes_per_s: float = 126e6


@dataclass(frozen=True)
class Workload:
    """What the chooser knows about one read: from footers, task plans and the sample."""

    cores: int
    row_groups: int
    #: row groups and rows left by partition values and row-group statistics
    row_groups_left: int
    rows_left: int
    #: values (rows x needed leaf columns) in the row groups left
    values_left: int
    #: uncompressed bytes of the needed columns (output and filter) in the row groups left
    #: (ORC: compressed stream bytes; row groups are stripes)
    bytes_left: int
    spark_tasks: int
    #: footer bytes each task of Spark's reader parses (largest file)
    footer_bytes: int
    lazyscan_tasks: int
    sampled_row_groups: int = 0
    #: lazyscan's one-thread time for the sampled row groups
    sample_seconds: float = 0.0
    #: rows returned / rows of the sampled row groups
    selectivity: float = 0.0
    output_bytes_per_row: float = 0.0
    #: the files' format (:data:`lazyscan.format.units.FORMATS`): which of Spark's readers
    format: str = "parquet"


def _waves(tasks: int, cores: int) -> int:
    return max(1, -(-max(1, tasks) // max(1, cores)))


def spark_seconds(w: Workload, c: CostModel) -> float:
    """Expected time of Spark's own Parquet or ORC reader."""
    per_task = c.spark_task_s + w.footer_bytes / c.spark_footer_bytes_per_s
    parallel = max(1, min(w.cores, w.spark_tasks, w.row_groups_left))
    if w.format == "orc":
        work = w.values_left * c.spark_orc_value_s + w.bytes_left / c.spark_orc_bytes_per_s
    else:
        work = w.values_left * c.spark_value_s + w.bytes_left / c.spark_bytes_per_s
    return c.spark_read_s + _waves(w.spark_tasks, w.cores) * per_task + work / parallel


def lazyscan_fixed_seconds(w: Workload, c: CostModel) -> float:
    """lazyscan's cost besides the scan itself: the read and its waves of tasks (tasks with no
    row group to scan return before they stream anything)."""
    if not w.row_groups_left:
        return c.lazyscan_read_s
    return c.lazyscan_read_s + _waves(w.lazyscan_tasks, w.cores) * c.lazyscan_task_s


def lazyscan_seconds(w: Workload, c: CostModel) -> float:
    """Expected time of the lazyscan data source (needs the sample)."""
    parallel = max(1, min(w.cores, w.lazyscan_tasks, w.row_groups_left))
    per_group = w.sample_seconds / w.sampled_row_groups if w.sampled_row_groups else 0.0
    scan_s = c.lazyscan_scan_factor * per_group * w.row_groups_left / parallel
    output = w.selectivity * w.rows_left * w.output_bytes_per_row
    return lazyscan_fixed_seconds(w, c) + scan_s + output / (c.lazyscan_output_bytes_per_s * parallel)


def _mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB" if n < 10e9 else f"{n / 1e9:,.1f} GB"


def _spark_text(w: Workload, t_spark: float) -> str:
    if w.format == "orc":
        return (
            f"Spark's ORC reader ~{t_spark:.2f} s ({w.spark_tasks} tasks, {_mb(w.bytes_left)} of "
            f"needed column streams in {w.row_groups_left} of {w.row_groups} stripes left by statistics)"
        )
    return (
        f"Spark's reader ~{t_spark:.2f} s ({w.spark_tasks} tasks, {_mb(w.bytes_left)} of needed "
        f"columns in {w.row_groups_left} of {w.row_groups} row groups left by statistics)"
    )


def decide(
    w: Workload,
    c: CostModel,
    *,
    max_selectivity: float = DEFAULT_MAX_SELECTIVITY,
    overhead: float = DEFAULT_OVERHEAD,
) -> tuple[bool, str, float, float]:
    """``(use lazyscan, reason, lazyscan seconds, Spark seconds)`` for a sampled workload."""
    t_spark = spark_seconds(w, c)
    t_lazy = lazyscan_seconds(w, c)
    spark_text = _spark_text(w, t_spark)
    per_group = w.sample_seconds / w.sampled_row_groups if w.sampled_row_groups else 0.0
    lazy_text = (
        f"lazyscan ~{t_lazy:.2f} s ({w.lazyscan_tasks} tasks, fixed "
        f"{lazyscan_fixed_seconds(w, c):.2f} s, {w.row_groups_left} row groups x "
        f"{per_group * 1e3:.1f} ms sampled on {w.sampled_row_groups}, "
        f"{w.selectivity:.3%} of rows survive)"
    )
    if w.selectivity > max_selectivity:
        return False, f"{lazy_text}; above {max_selectivity:.0%} of rows survive, {spark_text}", t_lazy, t_spark
    if t_lazy * overhead < t_spark:
        return True, f"{lazy_text} vs {spark_text}", t_lazy, t_spark
    return False, f"{spark_text} vs {lazy_text}", t_lazy, t_spark


@dataclass
class Estimate:
    """What the footers and the sample showed and which reader it picked."""

    use_lazyscan: bool
    reason: str
    selectivity: float | None = None
    page_fraction: float | None = None
    rows_sampled: int = 0
    row_groups_sampled: int = 0
    seconds: float = 0.0
    #: expected seconds of each reader (lazyscan's is None when nothing was sampled)
    lazyscan_seconds: float | None = None
    spark_seconds: float | None = None
    workload: Workload | None = None
    profile: Profile = field(default_factory=Profile)

    def __str__(self) -> str:
        fmt = self.workload.format if self.workload is not None else "parquet"
        reader = "lazyscan" if self.use_lazyscan else f"spark.read.{fmt}"
        return f"{reader}: {self.reason}"


def _sample_files(files: Sequence[FileInfo], n: int) -> list[FileInfo]:
    files = [f for f in files if f.size > 0]
    if len(files) <= n:
        return list(files)
    step = len(files) / n
    return [files[int(i * step)] for i in range(n)]


def _spread(items: Sequence[Any], n: int) -> list[Any]:
    if len(items) <= n:
        return list(items)
    step = len(items) / n
    return [items[int(i * step + step / 2)] for i in range(n)]


@dataclass(frozen=True)
class _Group:
    """One row group of a sampled file, as the cost model sees it."""

    info: FileInfo
    index: int
    rows: int
    needed_values: int
    needed_bytes: int
    output_bytes: int
    start: int
    length: int
    left: bool  # not ruled out by statistics


@dataclass(frozen=True)
class _FileFacts:
    groups: tuple[_Group, ...]
    footer_bytes: int


#: row groups whose statistics are first evaluated merged, to skip them together
STATISTICS_BLOCK = 16


def _unit_stats(
    columns: set[str], info: FileInfo, unit: int, rows: int,
    in_file: Callable[[str], bool], file_stats: Callable[[int, str], Any],
) -> dict[str, Any] | None:
    """The statistics of a row group (stripe) for ``columns``: a column the file lacks is all
    NULL there; None when they cannot be read (the rows are then left)."""
    from lazyscan.format.statistics import ColumnStats

    stats: dict[str, ColumnStats] = {}
    try:
        for name in columns:
            if not in_file(name):
                if name not in info.partition_values:
                    stats[name] = ColumnStats(None, None, rows, rows)
                continue
            found = file_stats(unit, name)
            if found is not None:
                stats[name] = found
    except (LazyScanError, TypeError, ValueError):
        return None
    return stats


def _left_by_statistics(
    bound: BoundExpr | None, columns: set[str], info: FileInfo, rows: Sequence[int],
    in_file: Callable[[str], bool], file_stats: Callable[[int, str], Any],
) -> list[bool]:
    """Per row group (stripe): whether its statistics leave rows that may match. Blocks of
    ``STATISTICS_BLOCK`` units are tried merged first; unreadable statistics leave the rows."""
    if bound is None:
        return [n > 0 for n in rows]

    def left(stats: dict[str, Any] | None) -> bool:
        if stats is None:
            return True
        try:
            return evaluate_statistics(bound, stats) is not Answer.CANNOT_MATCH
        except (LazyScanError, TypeError, ValueError):
            return True

    out = [False] * len(rows)
    for b0 in range(0, len(rows), STATISTICS_BLOCK):
        units = [u for u in range(b0, min(len(rows), b0 + STATISTICS_BLOCK)) if rows[u] > 0]
        block = [_unit_stats(columns, info, u, rows[u], in_file, file_stats) for u in units]
        if len(units) > 1 and all(b is not None for b in block):
            names = set().union(*(b for b in block if b is not None))
            merged: dict[str, Any] = {}
            try:
                for name in names:
                    if all(name in b for b in block if b is not None):
                        merged[name] = merge_statistics([b[name] for b in block if b is not None])
            except (TypeError, ValueError):
                merged = {}
            if merged and not left(merged):
                continue
        for u, stats in zip(units, block):
            out[u] = left(stats)
    return out


def _file_facts(
    info: FileInfo, fs: Any, needed: set[str], output: set[str], bound: BoundExpr | None, columns: set[str],
    retry: RetryPolicy | None = None, fmt: str | None = None,
) -> _FileFacts:
    """The cost model's view of a file of any format (``fmt``: its name, None to recognize
    it): one group per unit, with the bytes of the needed and the output columns in the
    format's measure (:meth:`~lazyscan.format.units.UnitFile.column_bytes`)."""
    from lazyscan.format.options import ReaderOptions
    from lazyscan.format.units import open_units

    with open_units(info.path, fs, ReaderOptions(retry=retry), fmt) as f:
        rows_of = [f.unit_rows(u) for u in range(f.num_units())]
        starts, sizes = f.unit_ranges()
        need = f.column_bytes(needed).tolist()
        out = f.column_bytes(output).tolist()
        values_per_row = f.value_columns(needed)
        left = _left_by_statistics(
            bound, columns, info, rows_of, f.has,
            lambda unit, name: f.statistics(unit, name) if f.flat(name) else None,
        )
        groups = [
            _Group(info, i, rows, rows * values_per_row, need[i], out[i], max(0, start), size, left[i])
            for i, (rows, start, size) in enumerate(zip(rows_of, starts.tolist(), sizes.tolist()))
        ]
        return _FileFacts(tuple(groups), f.metadata_bytes())


#: the sample stops once it has cost this share of the faster reader's expected time, or once
#: one reader is expected this many times faster (it takes two row groups where there are two,
#: unless the first already shows lazyscan this much faster)
SAMPLE_BUDGET = 0.03
SAMPLE_CLEAR = 2.0
#: whether this process has run a sample (the first scan in a process loads compiled kernels)
_WARM = False


def _split(info: FileInfo, start: int, length: int) -> FileSplit:
    """A byte range of a listed file, pinned to the version the listing holds."""
    return FileSplit(info.path, start, length, info.size, dict(info.partition_values), info.identity, info.footer_digest)


class _Sampler:
    """Runs the selective scan on sampled row groups, one at a time, in this thread.

    Times are CPU seconds of this thread, not wall time: the driver shares its cores with the
    JVM and other work, which should not make a sample look slow. Each row group is its own
    scan call, so what a call costs besides its row groups (mapping a byte range to row groups
    walks the footer) is measured once on an empty range and taken off; a Spark task pays it
    once per byte range. The first sample may load compiled kernels: it counts at most as much
    as the slowest later one, and the first sample in a process runs twice (the first run loads
    the kernels and is not counted).
    """

    def __init__(self, plan: _Plan, fs: Any) -> None:
        self.plan = plan
        self.fs = fs
        self.kwargs = {**plan.settings.scan_kwargs, "threads": 1}
        self.columns = plan.scan_output_columns()
        self.times: list[float] = []
        self.spent = 0.0
        self.rows = self.rows_out = self.bytes_out = 0
        self.profile = Profile()
        self._call: float | None = None

    def _run(self, split: FileSplit) -> tuple[float, Profile, int, int]:
        started = time.thread_time()
        s = scan(
            [split],
            columns=self.columns,
            where=self.plan.bound,
            schema=self.plan.listing.scan_schema,
            filesystem=self.fs,
            **self.kwargs,
        )
        rows = nbytes = 0
        for batch in s.to_batches():
            rows += batch.num_rows
            nbytes += batch.nbytes
        elapsed = time.thread_time() - started
        self.spent += elapsed
        return elapsed, s.profile, rows, nbytes

    def add(self, g: _Group) -> None:
        global _WARM
        if not _WARM:
            self._run(_split(g.info, g.start, g.length))
            _WARM = True
        if self._call is None:
            empty = _split(g.info, max(0, g.info.size - 2), 1)
            self._call = self._run(empty)[0]
        split = _split(g.info, g.start, g.length)
        elapsed, profile, rows, nbytes = self._run(split)
        self.times.append(max(0.0, elapsed - self._call))
        self.profile.merge(profile)
        self.rows += profile.counters.get("rows_total", 0)
        self.rows_out += rows
        self.bytes_out += nbytes

    @property
    def seconds(self) -> float:
        """Scan time of the sampled row groups (the first one capped, see the class docs)."""
        if len(self.times) < 2:
            return sum(self.times)
        return min(self.times[0], max(self.times[1:])) + sum(self.times[1:])

    def apply(self, w: Workload) -> Workload:
        return replace(
            w,
            sampled_row_groups=len(self.times),
            sample_seconds=self.seconds,
            selectivity=self.rows_out / self.rows if self.rows else 0.0,
            output_bytes_per_row=self.bytes_out / self.rows_out if self.rows_out else w.output_bytes_per_row,
        )


def _middle_out(items: Sequence[Any]) -> list[Any]:
    """``items`` reordered so that any prefix is spread over the whole range."""
    order: list[int] = []
    pending = [(0, len(items))]
    while pending:
        lo, hi = pending.pop(0)
        if lo >= hi:
            continue
        mid = (lo + hi) // 2
        order.append(mid)
        pending += [(lo, mid), (mid + 1, hi)]
    return [items[i] for i in order]


def estimate(
    spark: Any,
    path: str | Sequence[str],
    columns: Sequence[str] | None = None,
    where: str | Expr | None = None,
    *,
    max_selectivity: float = DEFAULT_MAX_SELECTIVITY,
    overhead: float = DEFAULT_OVERHEAD,
    sample_files: int = DEFAULT_SAMPLE_FILES,
    sample_row_groups: int = DEFAULT_SAMPLE_ROW_GROUPS,
    costs: CostModel | None = None,
    **options: Any,
) -> Estimate:
    """Look at the footers, sample the source, and decide between lazyscan and Spark's reader
    (see the module docs). ``sample_row_groups`` row groups in all, spread over at most
    ``sample_files`` files."""
    plan = _Plan.make(spark, path, columns, where, options)
    return plan.estimate(max_selectivity, overhead, sample_files, sample_row_groups, costs or CostModel())


def estimate_source(
    options: dict[str, Any],
    columns: Sequence[str] | None,
    where: str | None,
    *,
    defaults: Any,
    cores: int,
    max_selectivity: float = DEFAULT_MAX_SELECTIVITY,
    overhead: float = DEFAULT_OVERHEAD,
    costs: CostModel | None = None,
) -> Estimate:
    """:func:`estimate` of a read given as ``lazyscan`` data source ``options`` (``path`` /
    ``paths``, or ``table`` and ``catalogTable``, and scan options), without a session: its
    settings come as ``defaults`` (a :class:`~lazyscan.spark.options.SessionDefaults`, as
    :func:`lazyscan.spark.register` snapshots them) and ``cores`` (its default parallelism).
    For the planning calls of a Python data source, which run in a Python worker
    (:mod:`.decision`)."""
    plan = _Plan.from_source_options(options, columns, where, defaults, cores)
    return plan.estimate(
        max_selectivity, overhead, DEFAULT_SAMPLE_FILES, DEFAULT_SAMPLE_ROW_GROUPS, costs or CostModel()
    )


def _bound_filter(expr: Any, error: str | None, settings: Any, listing: Any) -> tuple[Any, Any, str | None]:
    """``expr`` bound to the listing's scan schema, or (None, None, why) when it cannot be."""
    if expr is None:
        return None, None, error
    try:
        with session_time_zone(settings.time_zone):
            return expr, bind(expr, listing.scan_schema, case_sensitive=settings.case_sensitive), error
    except LazyScanError as e:
        return None, None, str(e)


@dataclass
class _Plan:
    spark: Any
    paths: list[str]
    options: dict[str, Any]
    settings: Any
    listing: Any
    columns: list[str] | None
    where: str | Expr | None
    expr: Expr | None
    parse_error: str | None
    #: semi-join key filters: (file column, filter)
    keys: list[tuple[str, KeyFilter]] = field(default_factory=list)
    #: the session's settings (a SessionDefaults) read once when the plan was made
    defaults: Any = None
    #: :attr:`filter_expr` bound to the listing's scan schema, each part once (the samples, the
    #: cost model and the tasks use it as it is)
    bound: BoundExpr | None = None
    #: the catalog table read (its partitions pruned by the filter), None for paths
    table: CatalogTable | None = None
    #: the table's name as given
    table_name: str | None = None
    #: the session's cores when the plan was made without a session (None: ask the session)
    cores: int | None = None
    #: key filters given as ``keyFilter.<column>`` options, in :attr:`bound` (not in :attr:`keys`)
    option_keys: int = 0

    @property
    def filter_expr(self) -> Expr | None:
        """The filter the lazyscan DataFrame evaluates: ``where`` and the key filters."""
        parts = [] if self.expr is None else [self.expr]
        parts += [col(c).isin_keys(kf, adaptive=True) for c, kf in self.keys]
        return conjunction(parts) if parts else None

    def add_key_filter(self, column: str, kf: KeyFilter) -> None:
        """AND a semi join's key filter on file column ``column`` to the filter (bound once:
        a key type the column cannot hold is a :class:`PredicateError` here)."""
        with session_time_zone(self.settings.time_zone):
            key = bind(col(column).isin_keys(kf, adaptive=True), self.listing.scan_schema, case_sensitive=self.settings.case_sensitive)
        self.keys.append((column, kf))
        self.bound = key if self.bound is None else conjunction([self.bound, key])

    @functools.cached_property
    def format(self) -> str:
        """The files' format, also the name of Spark's data source for it (judged by the first
        file, as a Spark file source reads one format per path)."""
        from lazyscan.format.units import FORMATS, detect_format

        if self.table is not None:
            return self.table.format
        files = self.listing.files
        if not files:
            return FORMATS[0].name
        fs, _ = self.settings.filesystem.open(self.settings.paths[0])
        from lazyscan.spark.source import retry_policy

        return detect_format(files[0].path, fs, retry_policy(self.settings))

    @classmethod
    def make(
        cls,
        spark: Any,
        path: str | Sequence[str],
        columns: Sequence[str] | None,
        where: str | Expr | None,
        options: dict[str, Any],
    ) -> _Plan:
        from lazyscan.spark import session_defaults
        from lazyscan.spark.options import SourceSettings, absolute_local_path
        from lazyscan.spark.source import build_listing, table_listing

        opts = {str(k): str(v) for k, v in options.items()}
        defaults = session_defaults(spark)
        table_name = _table_name(spark, path)
        table = None
        expr, error = None, None
        if where is not None:
            try:
                with session_time_zone(_option(opts, "timeZone", defaults.time_zone)):
                    expr = to_expr(where)
            except LazyScanError as e:
                error = str(e)
        if table_name is not None:
            if any(_option_key(k) in ("path", "paths", "table", "catalogtable") for k in opts):
                raise OptionError(f"lazyscan.spark.read reads table {table_name}: options path, paths, table and catalogTable do not apply")
            case_sensitive = _option(opts, "caseSensitive", str(defaults.case_sensitive)).strip().lower() == "true"
            time_zone = _option(opts, "timeZone", defaults.time_zone)
            table = resolve_table(spark, table_name, expr, time_zone, case_sensitive)
            settings = SourceSettings.from_options(
                {"table": table_name, "catalogTable": table.to_json(), **opts}, defaults
            )
            listing = table_listing(settings, table, where=expr)
            paths = [table.location]
        else:
            raw = [os.fspath(path)] if isinstance(path, (str, os.PathLike)) else [os.fspath(p) for p in path]
            paths = [absolute_local_path(p) for p in raw]
            settings = SourceSettings.from_options({"paths": _json(paths), **opts}, defaults)
            listing = build_listing(settings)
        expr, bound, error = _bound_filter(expr, error, settings, listing)
        return cls(
            spark, paths, opts, settings, listing, list(columns) if columns else None, where, expr, error,
            defaults=defaults, bound=bound, table=table, table_name=table_name,
        )

    @classmethod
    def from_source_options(
        cls, options: dict[str, Any], columns: Sequence[str] | None, where: str | None, defaults: Any, cores: int
    ) -> _Plan:
        """The plan of a read given as data source options, with no session (see
        :func:`estimate_source`)."""
        from lazyscan.spark.options import SourceSettings
        from lazyscan.spark.source import build_listing, table_listing

        opts = {str(k): str(v) for k, v in options.items()}
        settings = SourceSettings.from_options(opts, defaults)
        expr, error = None, None
        if where is not None:
            try:
                with session_time_zone(settings.time_zone):
                    expr = to_expr(where)
            except LazyScanError as e:
                error = str(e)
        table = settings.table
        listing = table_listing(settings, table, where=expr) if table is not None else build_listing(settings)
        expr, bound, error = _bound_filter(expr, error, settings, listing)
        plan = cls(
            None, list(settings.paths), opts, settings, listing, list(columns) if columns else None, where, expr,
            error, defaults=defaults, bound=bound, table=table, table_name=None if table is None else table.name,
            cores=cores,
        )
        plan._add_key_filter_options()
        return plan

    def _add_key_filter_options(self) -> None:
        """The ``keyFilter.<column>`` options into the filter the sample scans and the model
        weighs, bound as the data source's reader binds them; kept out of :attr:`keys`, which
        :meth:`_scan_options` writes back as options."""
        from lazyscan.spark.source import bind_key_filter

        for column, text in self.settings.key_filters:
            key = bind_key_filter(self.listing, self.settings, column, text)
            self.bound = key if self.bound is None else conjunction([self.bound, key])
            self.option_keys += 1

    @property
    def source(self) -> str:
        """What is read, for messages: the table's name or the paths."""
        return self.table_name if self.table_name is not None else ", ".join(self.paths)

    def _source_options(self) -> dict[str, str]:
        """The data source options that name what is read: the table, or the paths."""
        if self.table is not None and self.table_name is not None:
            return {"table": self.table_name, "catalogTable": self.table.to_json()}
        return {"paths": _json(self.paths)}

    def _resolve(self, wanted: Sequence[str]) -> list[str]:
        """The columns ``wanted`` names, in file order, resolved as Spark resolves them (exactly,
        then ignoring case when one column matches, unless ``spark.sql.caseSensitive``)."""
        names = self.listing.spark_schema.fieldNames()
        out = []
        for w in wanted:
            try:
                match = resolve_name(w, names, self.settings.case_sensitive)
            except PredicateError as e:
                raise PredicateError(f"{self.source}: {e}") from None
            if match not in out:
                out.append(match)
        return [n for n in names if n in out]

    def output_columns(self) -> list[str]:
        """The columns the DataFrame returns, in file order."""
        return self._resolve(self.columns or self.listing.spark_schema.fieldNames())

    def needed_columns(self) -> list[str]:
        """Output columns and the columns the filter reads, in file order."""
        wanted = list(self.output_columns())
        expr = self.filter_expr
        if expr is not None:
            wanted += sorted(referenced_columns(expr))
        return self._resolve(wanted)

    def scan_output_columns(self) -> list[str]:
        parts = set(self.listing.partition_names)
        names = self.listing.scan_schema.names
        return [c for c in self.output_columns() if c not in parts and c in names]

    def _cores(self) -> int:
        cores = self.cores if self.cores is not None else default_parallelism(self.spark)
        return cores if cores is not None else max(1, self.settings.split_policy.min_partition_num)

    def _files_left(self) -> list[FileInfo]:
        """Files whose partition values the filter does not rule out (both readers skip them)."""
        from lazyscan.spark.source import LazyScanReader

        files = list(self.listing.files)
        if self.bound is None or not self.listing.partition_names:
            return files
        reader = LazyScanReader(self.settings, self.listing, self.listing.spark_schema, bound_filter=self.bound)
        try:
            return reader.files_left()
        except LazyScanError:
            return files

    def workload(self, files: Sequence[FileInfo], fs: Any, sample_files: int) -> tuple[Workload, list[_Group]]:
        """Footer facts of up to ``sample_files`` files scaled to ``files``; row groups left."""
        from lazyscan.spark.planning import SplitPolicy, plan_tasks

        bound = self.bound
        columns = set(referenced_columns(bound)) if bound is not None else set()
        needed, output = set(self.needed_columns()), set(self.output_columns())
        sampled = _sample_files(files, sample_files)
        from lazyscan.spark.source import retry_policy

        retry = retry_policy(self.settings)
        facts = [_file_facts(f, fs, needed, output, bound, columns, retry, self.format) for f in sampled]
        groups = [g for fact in facts for g in fact.groups]
        left = [g for g in groups if g.left]
        sampled_bytes = sum(f.size for f in sampled)
        total_bytes = sum(f.size for f in files)
        scale = total_bytes / sampled_bytes if sampled_bytes else 1.0
        policy = self.settings.split_policy
        spark_policy = SplitPolicy(
            max_partition_bytes=policy.max_partition_bytes or SPARK_MAX_PARTITION_BYTES,
            open_cost_in_bytes=policy.open_cost_in_bytes,
            min_partition_num=policy.min_partition_num,
            max_partition_num=policy.max_partition_num,
        )
        w = Workload(
            cores=self._cores(),
            row_groups=round(len(groups) * scale),
            row_groups_left=round(len(left) * scale),
            rows_left=round(sum(g.rows for g in left) * scale),
            values_left=round(sum(g.needed_values for g in left) * scale),
            bytes_left=round(sum(g.needed_bytes for g in left) * scale),
            spark_tasks=len(plan_tasks(files, spark_policy)),
            footer_bytes=max((f.footer_bytes for f in facts), default=0),
            lazyscan_tasks=len(plan_tasks(files, policy)),
            format=self.format,
        )
        rows = sum(g.rows for g in left)
        if rows:
            w = replace(w, output_bytes_per_row=sum(g.output_bytes for g in left) / rows)
        return w, left

    def estimate(
        self,
        max_selectivity: float,
        overhead: float,
        sample_files: int,
        sample_row_groups: int,
        costs: CostModel,
    ) -> Estimate:
        if self.where is None and not self.keys and not self.option_keys:
            return Estimate(False, "no filter: nothing to skip, Spark's vectorized reader reads plainly faster")
        if self.where is not None and self.expr is None:
            return Estimate(False, f"lazyscan cannot evaluate the filter ({self.parse_error})")
        started = time.perf_counter()
        files = self._files_left()
        if not files:
            return Estimate(
                False, "partition values rule out every file: nothing to read", seconds=time.perf_counter() - started
            )
        fs, _ = self.settings.filesystem.open(self.settings.paths[0])
        w, left = self.workload(files, fs, sample_files)
        t_spark = spark_seconds(w, costs)
        floor = lazyscan_fixed_seconds(w, costs)
        if floor * overhead >= t_spark:
            return Estimate(
                False,
                f"{_spark_text(w, t_spark)} is below lazyscan's fixed cost ~{floor:.2f} s "
                f"({w.lazyscan_tasks} tasks)",
                spark_seconds=t_spark,
                seconds=time.perf_counter() - started,
                workload=w,
            )
        sampler = _Sampler(self, fs)
        for g in _middle_out(_spread(left, sample_row_groups)):
            sampler.add(g)
            w = sampler.apply(w)
            t_lazy = lazyscan_seconds(w, costs)
            if t_lazy * SAMPLE_CLEAR <= t_spark:
                break  # lazyscan by far: a slower sample would not change that
            if len(sampler.times) >= 2 and (
                t_lazy >= SAMPLE_CLEAR * t_spark or sampler.spent >= SAMPLE_BUDGET * min(t_spark, t_lazy)
            ):
                break
        profile = sampler.profile
        use, reason, t_lazy, t_spark = decide(w, costs, max_selectivity=max_selectivity, overhead=overhead)
        pages = profile.counters.get("pages_total", 0)
        return Estimate(
            use,
            reason,
            selectivity=w.selectivity,
            page_fraction=profile.counters.get("pages_read", 0) / pages if pages else None,
            rows_sampled=profile.counters.get("rows_total", 0),
            row_groups_sampled=w.sampled_row_groups,
            seconds=time.perf_counter() - started,
            lazyscan_seconds=t_lazy,
            spark_seconds=t_spark,
            workload=w,
            profile=profile,
        )

    def _scan_options(self, filter_as_text: bool = True) -> dict[str, str]:
        """The lazyscan options of the read: the user's, and with ``filter_as_text`` the filter
        as ``where`` and key filters (the data source gets options as text only; the tasks get
        the bound filter itself)."""
        opts = dict(self.options)
        if not any(k.replace("_", "").replace("-", "").lower() == "casesensitive" for k in opts):
            opts["caseSensitive"] = str(self.settings.case_sensitive).lower()  # this session's
        if not filter_as_text:
            return opts
        if self.expr is not None:
            opts["where"] = str(self.expr)
        for column, kf in self.keys:
            opts[f"{KEY_FILTER_PREFIX}{column}"] = kf.to_text()
        return opts

    def _output_schema(self) -> StructType:
        schema: StructType = self.listing.spark_schema
        output = self.output_columns()
        return StructType([f for f in schema.fields if f.name in output])

    def lazyscan_frame(self, route: str) -> Any:
        """The lazyscan DataFrame: the output columns as its schema, the filter as ``where``,
        through the data source (``route="source"``) or ``mapInArrow`` (``"tasks"``)."""
        if route == "tasks":
            df = self._tasks_frame()
        else:
            reader = self.spark.read.format("lazyscan").schema(self._output_schema())
            reader = reader.options(**self._scan_options())
            if self.table is not None:
                df = reader.options(**self._source_options()).load()
            else:
                df = reader.load(self.paths[0]) if len(self.paths) == 1 else reader.load(self.paths)
        return self._select(df)

    def _select(self, df: Any) -> Any:
        """``df`` with the columns asked for, in the order asked, each by its quoted name (a
        name holding dots, spaces or backquotes is one column, not a nested field)."""
        if not self.columns:
            return df
        names = self.listing.spark_schema.fieldNames()
        try:
            chosen = [resolve_name(c, names, self.settings.case_sensitive) for c in self.columns]
        except PredicateError as e:
            raise PredicateError(f"{self.source}: {e}") from None
        return df.select(*[_quoted(n) for n in chosen])

    def _tasks_frame(self) -> Any:
        from lazyscan.spark.options import SourceSettings
        from lazyscan.spark.profiles import current_accumulator
        from lazyscan.spark.source import LazyScanReader
        from lazyscan.spark.tasks import tasks_frame

        options = {**self._source_options(), **self._scan_options(filter_as_text=False)}
        settings = SourceSettings.from_options(options, self.defaults)
        accumulator = None if is_connect(self.spark) else current_accumulator()
        reader = LazyScanReader(settings, self.listing, self._output_schema(), accumulator, bound_filter=self.bound)
        return tasks_frame(self.spark, reader)

    def _spark_where(self) -> str:
        """The filter as Spark's reader gets it: the text as given, unless it names columns in
        double quotes, which Spark's parser reads as strings; then the parsed expression, whose
        names are backquoted."""
        if not isinstance(self.where, str):
            return str(self.where)
        if self.expr is not None and double_quoted_names(self.where):
            return str(self.expr)
        return self.where

    def _connector_frame(self) -> Any:
        """The table through Spark's own connector for its format (``delta``, ``iceberg``),
        which the session must have."""
        kind = self.listing.table_kind
        reader = self.spark.read.format(kind).options(**_connector_frame_options(kind, self.settings))
        try:
            return reader.load(self.listing.table_root)
        except Exception as e:
            if "DATA_SOURCE_NOT_FOUND" not in str(e) and "Failed to find data source" not in str(e):
                raise
            name = "Delta Lake" if kind == "delta" else "Apache Iceberg"
            raise TableFolderError(
                f"{self.listing.table_root} is a {name} table and this Spark session has no {name} "
                f"connector (format {kind!r}): Spark's Parquet and ORC readers would read every file "
                "in its folder; read it with lazyscan (force='lazyscan', or no force)",
                path=self.listing.table_root, root=self.listing.table_root, kind=kind,
            ) from None

    def spark_frame(self) -> Any:
        opts = {}
        if "mergeSchema" in self.options or "mergeschema" in {k.lower() for k in self.options}:
            opts["mergeSchema"] = str(self.settings.merge_schema).lower()
        else:
            opts["mergeSchema"] = "true" if self.settings.merge_schema and len(self.listing.files) > 1 else "false"
        if self.table_name is not None:
            df = self.spark.table(self.table_name)
        elif self.listing.table_kind is not None:
            df = self._connector_frame()
        else:
            df = self.spark.read.options(**opts).format(self.format).load(self.paths)
        if self.where is not None:
            df = df.where(self._spark_where())
        for column, kf in self.keys:
            values = _spark_isin_values(kf, self.listing.scan_schema.field(column).type)
            if values is not None:
                df = df.where(F.col(_quoted(column)).isin(values))
        return self._select(df)


def _connector_frame_options(kind: str, settings: Any) -> dict[str, str]:
    """Time travel as Spark's Delta Lake and Iceberg connectors take it."""
    opts: dict[str, str] = {}
    if settings.version is not None:
        opts["versionAsOf" if kind == "delta" else "snapshot-id"] = str(settings.version)
    if settings.timestamp is not None:
        opts["timestampAsOf" if kind == "delta" else "as-of-timestamp"] = settings.timestamp
    return opts


def _quoted(name: str) -> str:
    """A column name as one Spark identifier (backquoted, backquotes doubled)."""
    return "`" + name.replace("`", "``") + "`"


#: Spark's reader gets a semi-join's keys as ``IN`` (pushed to its Parquet reader) up to this many
SPARK_IN_LIMIT = 10_000


def _spark_isin_values(kf: KeyFilter, t: pa.DataType) -> list[Any] | None:
    """The keys as values of ``col.isin`` for Spark's reader (integer and string columns, exact
    filters of at most :data:`SPARK_IN_LIMIT` keys); None: Spark's reader reads every row and
    the join filters."""
    if pa.types.is_integer(t):
        return kf.column_values(t, SPARK_IN_LIMIT)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        keys = kf.column_values(t, SPARK_IN_LIMIT)
        return None if keys is None else [k.decode("utf-8", "replace") for k in keys]
    return None


SemiJoin = tuple[Any, str, str] | tuple[KeyFilter, str]


def _semi_joins(spark: Any, semi_join: SemiJoin | Sequence[SemiJoin], max_keys: int, max_bytes: int) -> list[tuple[str, KeyFilter]]:
    """(fact column, filter) per semi join; a filter over the limits is left out, logged."""
    from lazyscan.spark.keys import KeyFilterTooLarge, check_size, key_filter

    items: list[Any] = [semi_join] if isinstance(semi_join, tuple) else list(semi_join)
    out: list[tuple[str, KeyFilter]] = []
    for item in items:
        if not isinstance(item, tuple) or len(item) not in (2, 3):
            raise OptionError(
                "semi_join takes (dimension DataFrame, dimension key, fact key) or (KeyFilter, fact key), "
                f"got {item!r}"
            )
        fact_key = item[-1]
        try:
            if len(item) == 3:
                kf = key_filter(item[0], item[1], max_keys=max_keys, max_bytes=max_bytes)
            elif isinstance(item[0], KeyFilter):
                kf = item[0]
                check_size(kf, max_bytes)
            else:
                raise OptionError(f"semi_join (filter, fact key) needs a lazyscan.KeyFilter, got {type(item[0]).__name__}")
        except KeyFilterTooLarge as e:
            log.warning("lazyscan.spark.read: no key filter on %s, the plain read follows (the join filters): %s", fact_key, e)
            continue
        out.append((fact_key, kf))
    return out


def _option_key(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


def _option(options: dict[str, str], name: str, default: str) -> str:
    """The value of option ``name`` (however it is spelled), or ``default``."""
    for k, v in options.items():
        if _option_key(k) == _option_key(name):
            return v
    return default


def _table_name(spark: Any, path: Any) -> str | None:
    """``path`` when it names a table of the session catalog (see :mod:`.catalog`), else None;
    a name that is neither a table nor an existing local file or folder is a
    :class:`SourceError`."""
    if not isinstance(path, str) or not looks_like_table_name(path):
        return None
    if is_table_name(spark, path):
        return path
    if not os.path.exists(path):
        from lazyscan.spark.catalog import current_database

        raise SourceError(
            f"{path!r} is neither a table or view of the session catalog (current database "
            f"{current_database(spark)}) nor a file or folder (a path holds a '/' or a scheme; "
            "table names resolve as spark.table resolves them)"
        )
    return None


def _json(paths: list[str]) -> str:
    import json

    return json.dumps(paths)


def read(
    spark: Any,
    path: str | Sequence[str],
    columns: Sequence[str] | None = None,
    where: str | Expr | None = None,
    *,
    force: str | None = None,
    max_selectivity: float = DEFAULT_MAX_SELECTIVITY,
    overhead: float = DEFAULT_OVERHEAD,
    costs: CostModel | None = None,
    semi_join: SemiJoin | Sequence[SemiJoin] | None = None,
    max_keys: int = DEFAULT_MAX_KEYS,
    max_key_bytes: int = DEFAULT_MAX_BYTES,
    route: str = "auto",
    **options: Any,
) -> Any:
    """A DataFrame of ``columns`` of ``path`` filtered by ``where``, from lazyscan or from
    Spark's own reader (``spark.read.parquet`` or ``spark.read.orc``), whichever is expected
    to be faster; logs the choice and why.

    This is the fast route on every Spark from 3.4: the lazyscan DataFrame reads only
    ``columns`` and evaluates ``where`` (any Spark SQL filter lazyscan parses, ``OR`` and
    ``LIKE`` included) inside the scan, and small or unselective reads go to Spark's own reader,
    whose fixed costs are lower (see the module docs and :class:`CostModel`).
    ``force="lazyscan"`` or ``force="spark"`` skips the estimate. ``options`` are lazyscan data
    source options. Call :func:`lazyscan.spark.register` first.

    ``path`` may also name a Parquet or ORC table of the session catalog (``"db.events"``:
    location, format, schema and partitions come from the catalog, see :mod:`.catalog`), or be
    a Delta Lake or Iceberg table's folder, read as the table (see :mod:`.table_paths`; Spark's
    own reader is then only taken with ``force="spark"``, through the format's connector).

    Names in ``columns`` and ``where`` resolve as Spark resolves them under the session's
    ``spark.sql.caseSensitive`` (read at each call): exactly, or else ignoring case when one
    column matches. A name in ``columns`` is one top-level column (``"a.b"`` is the column
    named ``a.b``); in ``where`` such a name is written `` `a.b` `` or ``"a.b"`` (see
    :mod:`lazyscan.predicate.sql`), and an unquoted ``s.x`` is field ``x`` of struct ``s``.

    ``route`` says how a lazyscan DataFrame runs: ``"tasks"`` (``mapInArrow`` over tasks
    planned on the driver), ``"source"`` (the ``lazyscan`` data source, Spark 4.1 or later) or
    ``"auto"`` (see :func:`resolve_route`). Both give the same rows; profiles arrive the same way.

    ``semi_join=(dim_df, dim_key, fact_key)`` keeps only rows whose ``fact_key`` may be among
    the values of ``dim_key`` in the DataFrame ``dim_df``: a key filter built with one Spark
    job (:func:`lazyscan.spark.key_filter`) and probed inside the scan, before any other
    column is read, switched off by the scan where it removes too few rows. Exact filters keep
    exactly the joining rows, Bloom filters a superset: join as usual. ``(key_filter,
    fact_key)`` reuses a filter (one filter for several scans); a list holds several semi
    joins. A dimension with more than ``max_keys`` distinct keys or a filter above
    ``max_key_bytes`` is left out with a logged warning: the read is then the plain one.

    Unless ``force="spark"``, first checks on a local master that Spark's Python workers can
    import this lazyscan (:func:`lazyscan.spark.workers.check_workers`).
    """
    if force != "spark":
        check_workers(spark)
    plan = _Plan.make(spark, path, columns, where, options)
    if semi_join is not None:
        for fact_key, kf in _semi_joins(spark, semi_join, max_keys, max_key_bytes):
            column = plan._resolve([fact_key])[0]
            if column not in plan.listing.scan_schema.names:
                raise PredicateError(f"semi_join: {fact_key!r} is not a column of {plan.source}")
            plan.add_key_filter(column, kf)
    if force not in (None, "lazyscan", "spark"):
        raise OptionError(f"force must be None, 'lazyscan' or 'spark', got {force!r}")
    route = resolve_route(route, spark)
    kind = plan.listing.table_kind
    if force is None and kind is not None:
        # Spark's Parquet and ORC readers would read every file in the table's folder
        force = "lazyscan"
        log.info("lazyscan.spark.read %s: lazyscan (%s; Spark reads it only through its connector, "
                 "force='spark')", plan.source, plan.listing.table_context)
    if force is not None:
        use = force == "lazyscan"
        log.info("lazyscan.spark.read %s: %s (forced)", plan.source, force)
        if use and plan.where is not None and plan.expr is None:
            raise PredicateError(f"lazyscan cannot evaluate the filter: {plan.parse_error}")
    else:
        est = plan.estimate(
            max_selectivity, overhead, DEFAULT_SAMPLE_FILES, DEFAULT_SAMPLE_ROW_GROUPS, costs or CostModel()
        )
        use = est.use_lazyscan
        log.info("lazyscan.spark.read %s: %s (estimate took %.3f s)", plan.source, est, est.seconds)
    return plan.lazyscan_frame(route) if use else plan.spark_frame()


ROUTES = ("auto", "source", "tasks")


def resolve_route(route: str, spark: Any = None) -> str:
    """How the lazyscan DataFrame runs: ``"source"`` (the ``lazyscan`` data source) or
    ``"tasks"`` (``mapInArrow`` over planned tasks, :mod:`.tasks`).

    ``"auto"``: the tasks on classic sessions (measured faster than the data source on Spark
    4.3: less fixed cost per read and per task; see the ``spark`` benchmark) and wherever
    Spark has no Python data source with filter pushdown (before 4.1); the data source on Spark
    Connect to 4.1 or later, where the tasks DataFrame would look tiny to Spark's planner.
    """
    if route not in ROUTES:
        raise OptionError(f"route must be one of {', '.join(map(repr, ROUTES))}, got {route!r}")
    if route == "auto":
        return "source" if HAS_PYTHON_DATA_SOURCE and spark is not None and is_connect(spark) else "tasks"
    if route == "source" and not HAS_PYTHON_DATA_SOURCE:
        raise OptionError(
            f"route='source' needs the Python data source API of Spark 4.1 or later (this is "
            f"PySpark {spark_version_text()}); route='tasks' runs on any Spark from 3.4"
        )
    return route


__all__ = ["CostModel", "Estimate", "Workload", "decide", "estimate", "estimate_source", "read"]
