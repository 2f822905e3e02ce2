"""``lazyscan.spark.read``: a DataFrame from lazyscan or from Spark's own Parquet reader,
whichever is expected to be faster, with the reason logged.

The estimate runs the selective scan itself on a sample (a few row groups of a few files,
spread over the source), on the columns the query needs, and looks at two numbers from its
profile:

- **selectivity**: rows returned / rows in the sampled row groups. Every surviving row crosses
  from Python to the JVM as Arrow; above ``max_selectivity`` (default 0.2) Spark's vectorized
  reader wins.
- **page fraction**: pages lazyscan read / pages of those column chunks. Statistics,
  dictionary and page-index pruning and late materialization all show up here; lazyscan is
  chosen when it reads at most ``1 / overhead`` of the pages (``overhead`` default 2: batches
  cross from Python to the JVM, and Spark prunes row groups by statistics too).

Without a filter there is nothing to skip and Spark's reader is used. Filters lazyscan cannot
parse also go to Spark's reader. The lazyscan DataFrame reads only the needed columns (a user
schema, since Spark passes Python data sources no column pruning) and gets the whole filter as
the ``where`` option, so even disjunctions, which Spark never pushes to Python sources, are
evaluated inside the scan.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.types import StructType

from lazyscan.errors import LazyScanError
from lazyscan.predicate import Expr, bind, referenced_columns, to_expr
from lazyscan.scan import scan
from lazyscan.scan.dataset import FileInfo, FileSplit
from lazyscan.scan.profile import Profile

log = logging.getLogger("lazyscan.spark")

DEFAULT_MAX_SELECTIVITY = 0.2
DEFAULT_OVERHEAD = 2.0
DEFAULT_SAMPLE_FILES = 4
DEFAULT_SAMPLE_ROW_GROUPS = 2


@dataclass
class Estimate:
    """What the sample showed and which reader it picked."""

    use_lazyscan: bool
    reason: str
    selectivity: float | None = None
    page_fraction: float | None = None
    rows_sampled: int = 0
    row_groups_sampled: int = 0
    seconds: float = 0.0
    profile: Profile = field(default_factory=Profile)

    def __str__(self) -> str:
        reader = "lazyscan" if self.use_lazyscan else "spark.read.parquet"
        return f"{reader}: {self.reason}"


def _sample_files(files: Sequence[FileInfo], n: int) -> list[FileInfo]:
    files = [f for f in files if f.size > 0]
    if len(files) <= n:
        return list(files)
    step = len(files) / n
    return [files[int(i * step)] for i in range(n)]


def _row_group_splits(info: FileInfo, fs: Any, per_file: int) -> list[FileSplit]:
    from lazyscan.parquet import ParquetFile

    with ParquetFile(info.path, fs) as pf:
        groups = pf.metadata.row_groups
        if not groups:
            return []
        step = max(1, len(groups) // per_file)
        chosen = list(range(0, len(groups), step))[:per_file]
        out = []
        for i in chosen:
            rg = groups[i]
            starts, size = [], 0
            for chunk in rg.columns:
                md = chunk.meta_data
                if md is None:
                    continue
                offsets = [md.data_page_offset]
                if md.dictionary_page_offset is not None and md.dictionary_page_offset > 0:
                    offsets.append(md.dictionary_page_offset)
                starts.append(min(offsets))
                size += md.total_compressed_size
            if not starts:
                continue
            out.append(FileSplit(info.path, min(starts), size, info.size, dict(info.partition_values)))
        return out


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
    **options: Any,
) -> Estimate:
    """Sample the source and decide between lazyscan and Spark's reader (see module docs)."""
    plan = _Plan.make(spark, path, columns, where, options)
    return plan.estimate(max_selectivity, overhead, sample_files, sample_row_groups)


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
        from lazyscan.spark.options import SourceSettings
        from lazyscan.spark.source import build_listing

        paths = [os.fspath(path)] if isinstance(path, (str, os.PathLike)) else [os.fspath(p) for p in path]
        opts = {str(k): str(v) for k, v in options.items()}
        settings = SourceSettings.from_options(
            {"paths": _json(paths), **opts}, session_defaults(spark)
        )
        listing = build_listing(settings)
        expr, error = None, None
        if where is not None:
            try:
                expr = to_expr(where)
                if expr is not None:
                    bind(expr, listing.scan_schema)
            except LazyScanError as e:
                expr, error = None, str(e)
        return cls(spark, paths, opts, settings, listing, list(columns) if columns else None, where, expr, error)

    def needed_columns(self) -> list[str]:
        schema = self.listing.spark_schema
        names = schema.fieldNames()
        wanted = list(self.columns) if self.columns else list(names)
        if self.expr is not None:
            wanted += sorted(referenced_columns(self.expr))
        out = []
        for w in wanted:
            match = w if w in names else next((n for n in names if n.lower() == w.lower()), None)
            if match is None:
                raise LazyScanError(f"column {w!r} is not in {', '.join(self.paths)}; columns: {', '.join(names)}")
            if match not in out:
                out.append(match)
        return [n for n in names if n in out]

    def estimate(
        self, max_selectivity: float, overhead: float, sample_files: int, sample_row_groups: int
    ) -> Estimate:
        if self.where is None:
            return Estimate(False, "no filter: nothing to skip, Spark's vectorized reader reads plainly faster")
        if self.expr is None:
            return Estimate(False, f"lazyscan cannot evaluate the filter ({self.parse_error})")
        started = time.perf_counter()
        fs, _ = self.settings.filesystem.open(self.settings.paths[0])
        splits: list[FileSplit] = []
        for info in _sample_files(self.listing.files, sample_files):
            splits += _row_group_splits(info, fs, sample_row_groups)
        if not splits:
            return Estimate(False, "the source has no row groups to sample")
        needed = self.needed_columns()
        scan_schema = self.listing.scan_schema
        parts = set(self.listing.partition_names)
        columns = [c for c in needed if c not in parts and c in scan_schema.names]
        sample = scan(
            splits,
            columns=columns,
            where=self.expr,
            schema=scan_schema,
            filesystem=fs,
            **{**self.settings.scan_kwargs, "threads": 0},
        )
        for _ in sample.to_batches():
            pass
        p = sample.profile
        rows = p.counters.get("rows_total", 0)
        returned = p.counters.get("rows_returned", 0)
        pages = p.counters.get("pages_total", 0)
        sel = returned / rows if rows else 0.0
        frac = p.counters.get("pages_read", 0) / pages if pages else None
        est = Estimate(
            False,
            "",
            selectivity=sel,
            page_fraction=frac,
            rows_sampled=rows,
            row_groups_sampled=len(splits),
            seconds=time.perf_counter() - started,
            profile=p,
        )
        frac_text = f"{frac:.1%} of the pages" if frac is not None else "an unknown share of the pages"
        facts = f"sample of {len(splits)} row groups: {sel:.2%} of {rows:,} rows survive, lazyscan reads {frac_text}"
        if rows == 0:
            est.reason = f"{facts}; the sampled row groups are empty"
        elif sel > max_selectivity:
            est.reason = f"{facts}; above {max_selectivity:.0%} survive, Spark's reader is faster"
        elif frac is not None and frac * overhead > 1.0:
            est.reason = f"{facts}; too little to skip (needs at most {1 / overhead:.0%})"
        else:
            est.use_lazyscan = True
            est.reason = f"{facts}; selective enough for late materialization"
        return est

    def lazyscan_frame(self) -> Any:
        schema: StructType = self.listing.spark_schema
        needed = self.needed_columns()
        subset = StructType([f for f in schema.fields if f.name in needed])
        reader = self.spark.read.format("lazyscan").schema(subset).options(**self.options)
        if self.expr is not None:
            reader = reader.option("where", str(self.expr))
        df = reader.load(self.paths[0]) if len(self.paths) == 1 else reader.load(self.paths)
        return self._finish(df)

    def spark_frame(self) -> Any:
        opts = {}
        if "mergeSchema" in self.options or "mergeschema" in {k.lower() for k in self.options}:
            opts["mergeSchema"] = str(self.settings.merge_schema).lower()
        else:
            opts["mergeSchema"] = "true" if self.settings.merge_schema and len(self.listing.files) > 1 else "false"
        df = self.spark.read.options(**opts).parquet(*self.paths)
        return self._finish(df)

    def _finish(self, df: Any) -> Any:
        if self.where is not None:
            df = df.where(self.where if isinstance(self.where, str) else str(self.where))
        if self.columns:
            df = df.select(*self.columns)
        return df


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
    **options: Any,
) -> Any:
    """A DataFrame of ``columns`` of ``path`` filtered by ``where``, from lazyscan or from
    ``spark.read.parquet``, whichever the sample says is faster; logs the choice and why.

    ``force="lazyscan"`` or ``force="spark"`` skips the estimate. ``options`` are lazyscan
    data source options. Call :func:`lazyscan.spark.register` first.
    """
    plan = _Plan.make(spark, path, columns, where, options)
    if force not in (None, "lazyscan", "spark"):
        raise ValueError(f"force must be None, 'lazyscan' or 'spark', got {force!r}")
    if force is not None:
        use = force == "lazyscan"
        log.info("lazyscan.spark.read %s: %s (forced)", ", ".join(plan.paths), force)
        if use and plan.where is not None and plan.expr is None:
            raise LazyScanError(f"lazyscan cannot evaluate the filter: {plan.parse_error}")
    else:
        est = plan.estimate(max_selectivity, overhead, DEFAULT_SAMPLE_FILES, DEFAULT_SAMPLE_ROW_GROUPS)
        use = est.use_lazyscan
        log.info("lazyscan.spark.read %s: %s (estimate took %.2f s)", ", ".join(plan.paths), est, est.seconds)
    return plan.lazyscan_frame() if use else plan.spark_frame()
