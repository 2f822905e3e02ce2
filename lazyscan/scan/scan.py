"""One scan: files x filter x columns -> compacted Arrow record batches, plus a profile.

- :func:`scan` / :class:`Scan`: the public entry point; plans once, in named steps (sources ->
  schema -> columns -> bound filter -> conjuncts, see :mod:`.conjuncts`), then streams batches:
  files whose partition values rule out the filter are not opened (the partition tier), the
  others are read unit by unit on a thread pool (:class:`~lazyscan.scan.unit_scan.UnitScan`
  over a :class:`~lazyscan.scan.files.FileContext`), results in order.
- a filter may come bound already (a :class:`~lazyscan.predicate.BoundExpr`, as a Spark task
  gets it from the driver): the scan checks it against its schema and does not bind it again.

Results never depend on the options: every tier and late materialization can be switched off and
the same rows come back (see ``tests/test_scan.py``, ``test_every_switch_combination_gives_same_rows``).
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from lazyscan.errors import (
    FileChangedError,
    FileError,
    ObjectNotFoundError,
    OptionError,
    SourceError,
    TableFolderError,
)
from lazyscan.format.options import ReaderOptions
from lazyscan.format.units import open_units
from lazyscan.io.pools import SharedPool
from lazyscan.io.retry import RetryPolicy
from lazyscan.io.source import ReadOptions
from lazyscan.predicate import Answer, bind, evaluate, evaluate_statistics, to_expr
from lazyscan.predicate.bind import NameResolver, check_bound
from lazyscan.predicate.bound import BoundExpr, BoundKeyIn
from lazyscan.predicate.casts import session_time_zone
from lazyscan.predicate.expr import Expr, render_column
from lazyscan.scan.conjuncts import Conjunct, PredicateOrder, bloom_candidate, conjuncts_of
from lazyscan.scan.dataset import (
    Dataset,
    FileInfo,
    FileSplit,
    check_planned,
    discover,
    merge_schemas,
    pinned,
)
from lazyscan.scan.files import FileContext, FileTask
from lazyscan.scan.options import ScanOptions
from lazyscan.scan.profile import Profile
from lazyscan.scan.table_source import (
    TABLE_OPTIONS,
    refuse_table_options,
    remote_table,
    table_of,
    table_statistics,
    table_tasks,
)
from lazyscan.scan.unit_scan import (
    BLOOM,
    DICTIONARY,
    PAGE_INDEX,
    PARTITION,
    STATISTICS,
    RuledOut,
    UnitScan,
    record_ruled_out,
)
from lazyscan.tables.plan import FileRead, PlannedTable

#: the tier of data files a table's statistics rule out (its name in the decision log)
TABLE_STATISTICS = "table_statistics"


def empty_table(schema: pa.Schema) -> pa.Table:
    """A table of no rows with exactly ``schema``, for every Arrow type: ``Schema.empty_table``
    refuses extension types (JSON, UUID, ... and lists, structs, maps and dictionaries of them)."""
    return pa.Table.from_arrays([pa.nulls(0, f.type) for f in schema], schema=schema)


@dataclass(frozen=True)
class _Unit:
    """One unit of the scan to read: the ``task``-th file (or byte range) of the plan, its
    unit ``number``; or, with ``error``, a file that could not be opened."""

    task: int
    info: FileInfo | FileSplit
    ctx: FileContext | None
    number: int
    error: Exception | None = None


@dataclass(frozen=True)
class _UnitResult:
    """What reading a unit gave: its surviving rows (None: none) and profile, or an error."""

    unit: _Unit
    table: pa.Table | None
    profile: Profile | None
    error: Exception | None = None


class _Batches:
    """Cuts a stream of tables into record batches of ``size`` rows (copying at most a batch)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.pending: list[pa.Table] = []
        self.rows = 0

    def add(self, table: pa.Table) -> Iterator[pa.RecordBatch]:
        """The whole batches ``table`` completes."""
        self.pending.append(table)
        self.rows += table.num_rows
        while self.rows >= self.size:
            combined = pa.concat_tables(self.pending) if len(self.pending) > 1 else self.pending[0]
            head = combined.slice(0, self.size)
            if any(c.num_chunks > 1 for c in head.columns):
                head = head.combine_chunks()  # copies at most one batch
            yield from head.to_batches()
            rest = combined.slice(self.size)
            self.pending = [rest] if rest.num_rows else []
            self.rows = rest.num_rows

    def rest(self) -> Iterator[pa.RecordBatch]:
        """The rows left over, as the last (smaller) batch."""
        if self.rows:
            yield from pa.concat_tables(self.pending).combine_chunks().to_batches()
        self.pending = []
        self.rows = 0


def _at_unit(error: FileError, path: str, unit: int) -> FileError:
    """``error`` naming the file and the unit; a unit the format's reader named already (an ORC
    stripe) is not named again as a row group."""
    if error.location.stripe is not None:
        return error.at(file=path)
    return error.at(file=path, row_group=unit)


def _reader_options(options: ScanOptions) -> ReaderOptions:
    """How the scan's files are read, from the scan's options."""
    gap = options.coalesce_gap
    return ReaderOptions(
        materialization_threshold=options.materialization_threshold,
        read=ReadOptions(coalesce_gap=gap) if gap >= 0 else None,
        partial_decompression=options.partial_decompression,
        timestamp_unit=options.timestamp_unit,
        verify_checksums=options.verify_checksums,
        retry=RetryPolicy(max_seconds=options.retry_seconds),
    )


def _is_splits(source: Any) -> bool:
    """Whether ``source`` is a list of byte ranges of files (:class:`FileSplit`)."""
    return isinstance(source, (list, tuple)) and bool(source) and all(isinstance(s, FileSplit) for s in source)


def _first_part(info: FileInfo | FileSplit) -> bool:
    """Whether ``info`` is a whole file or its first byte range: what is counted per file is
    counted once when a file is read in several ranges (Spark tasks)."""
    return not isinstance(info, FileSplit) or info.start == 0


def _partition_names(splits: Sequence[FileSplit]) -> list[str]:
    """The partition columns of ``splits``, in the order they first appear."""
    names: list[str] = []
    for s in splits:
        for k in s.partition_values:
            if k not in names:
                names.append(k)
    return names


@dataclass
class _Plan:
    tasks: list[FileTask] = field(default_factory=list)


class Scan:
    """A planned scan. Iterate :meth:`to_batches` (streaming) or :meth:`to_batches_by_file`
    (each batch with the file or byte range it came from), or call :meth:`to_table`.

    The profile is complete once the batches have been consumed.
    """

    def __init__(
        self,
        source: Any,
        columns: Sequence[str] | None = None,
        where: str | Expr | BoundExpr | None = None,
        *,
        filesystem: Any = None,
        schema: pa.Schema | None = None,
        options: ScanOptions | None = None,
        table_options: Mapping[str, Any] | None = None,
    ) -> None:
        t0 = time.perf_counter()
        self.options = options or ScanOptions()
        self.filesystem = filesystem
        #: the table snapshot read (None: plain files)
        self.table: PlannedTable | None = None
        self._table_options = {k: (table_options or {}).get(k) for k in TABLE_OPTIONS}
        self.profile = Profile()
        #: the file (or byte range) whose read raised the error that ended the iteration
        self.failed_part: FileInfo | FileSplit | None = None
        self._sources: list[Any] = []
        self.reader_options = _reader_options(self.options)
        self._plan = _Plan()
        self._plan_sources(source)
        schema = self._plan_schema(source, schema)
        self._plan_columns(schema, columns)
        self._bind_filter(where, schema)
        self._plan_conjuncts(schema)
        self.profile.time("planning", time.perf_counter() - t0)
        self._consumed = False

    # ---- planning, step by step ------------------------------------------------------------

    def _plan_sources(self, source: Any) -> None:
        """The files to read: the byte ranges given (a list of :class:`FileSplit`), or the
        files a path, folder, glob or :class:`Dataset` holds."""
        self.dataset: Dataset | None = None
        if _is_splits(source):
            self._plan.tasks = [FileTask(s) for s in source]
            return
        self.table = table_of(source, self.options.raw_files, self._table_options, self.filesystem)
        if self.table is not None:
            return
        retry = self.reader_options.retry
        try:
            ds = (
                discover(source, self.filesystem, retry=retry, raw_files=self.options.raw_files)
                if not isinstance(source, Dataset) else source
            )
        except TableFolderError as e:
            # a Delta or Iceberg table on an object store (its listing found the log or the
            # metadata): read as the table
            given = {k: v for k, v in self._table_options.items() if v is not None}
            table = remote_table(source, e, self.filesystem, given)
            if table is None:
                raise
            self.table = table
            return
        refuse_table_options(source, {k: v for k, v in self._table_options.items() if v is not None})
        ds.retry = retry
        if ds.format is None and self.options.format is not None:
            ds.format = self.options.format
        ds.use_timestamp_unit(self.options.timestamp_unit)
        ds.use_case_sensitive(self.options.case_sensitive)
        self.dataset = ds
        self.filesystem = ds.filesystem

    def _plan_schema(self, source: Any, schema: pa.Schema | None) -> pa.Schema:
        """The dataset schema (``schema`` if given, else merged from the footers, the files
        read pinned to the versions read) and the partition columns."""
        ds = self.dataset
        if self.table is not None:
            table_schema, constant, files = table_tasks(self.table, self.filesystem)
            schema = schema if schema is not None else table_schema
            self._plan.tasks = [FileTask(f) for f in files]
            self.partition_columns = constant
        elif ds is None:
            partition_names = _partition_names(source)
            if schema is None:
                schema = self._schema_of_splits(source, partition_names)
            self.partition_columns = set(partition_names)
        else:
            if schema is None:
                schema = ds.schema(merge=self.options.merge_schema) if ds.files else ds.partition_schema
            # after the schema: the files it was read from are pinned to the versions read
            self._plan.tasks = [FileTask(f) for f in ds.files]
            self.partition_columns = set(ds.partition_schema.names)
        self.dataset_schema: pa.Schema = schema
        #: column name -> its field in the dataset schema (looked up for every row group)
        self.field_of: dict[str, pa.Field] = {f.name: f for f in schema}
        return schema

    def _schema_of_splits(self, splits: Sequence[FileSplit], partition_names: list[str]) -> pa.Schema:
        """The schemas of the splits' files merged, their partition columns after; each file
        is checked against the version its split was planned from and pinned to the one read."""
        schemas = []
        for i, s in enumerate(splits):
            with open_units(s.path, self.filesystem, self.reader_options, fmt=self.options.format) as f:
                check_planned(s, f)
                schemas.append(f.arrow_schema)
                self._plan.tasks[i] = FileTask(pinned(s, f))
        schema = merge_schemas(schemas, self.options.case_sensitive)
        extra = [pa.field(k, pa.array([splits[0].partition_values[k]]).type) for k in partition_names if schema.get_field_index(k) < 0]
        return pa.schema([*schema, *extra])

    def _plan_columns(self, schema: pa.Schema, columns: Sequence[str] | None) -> None:
        """The output columns, resolved as the filter's names are: exactly, then ignoring case
        when one column matches."""
        names = schema.names
        if columns is None:
            self.output_columns = list(names)
        else:
            resolver = NameResolver(names, self.options.case_sensitive, schema.types)
            self.output_columns = [resolver.name(c) for c in columns]

    def _bind_filter(self, where: str | Expr | BoundExpr | None, schema: pa.Schema) -> None:
        """The filter bound to ``schema``; one bound already is checked, not bound again."""
        if isinstance(where, BoundExpr):
            # bound once by the caller (a Spark driver) against this schema: not bound again
            check_bound(where, schema)
            self.expr: Expr | None = None
            self.bound: BoundExpr | None = where
        else:
            with session_time_zone(self.options.time_zone):
                self.expr = to_expr(where)
                self.bound = (
                    bind(self.expr, schema, case_sensitive=self.options.case_sensitive) if self.expr is not None else None
                )

    def _plan_conjuncts(self, schema: pa.Schema) -> None:
        """The filter's conjuncts, the columns each role needs, the adaptive order and the
        adaptive key filters' switches."""
        self.conjuncts: list[Conjunct] = [] if self.bound is None else conjuncts_of(self.bound, schema, self.partition_columns)
        self.predicate_columns = sorted({c for cj in self.conjuncts for c in cj.columns})
        self.payload_columns = [c for c in self.output_columns if c not in self.predicate_columns]
        self.needed_columns = list(dict.fromkeys([*self.output_columns, *self.predicate_columns]))
        self.order = PredicateOrder(self.conjuncts, self.options.adaptive_order)
        #: adaptive key filters (conjunct index -> switched off), see :meth:`consider_key_switch`
        self.key_switch: dict[int, bool] = {
            i: False for i, c in enumerate(self.conjuncts)
            if isinstance(c.bound, BoundKeyIn) and c.bound.adaptive and not c.bound.negated
        }
        self.schema = pa.schema([schema.field(c) for c in self.output_columns])
        self._schemas: dict[tuple[str, ...], pa.Schema] = {tuple(self.output_columns): self.schema}

    # ---- what the units ask of the scan -------------------------------------------------------

    def schema_of(self, names: tuple[str, ...]) -> pa.Schema:
        """The schema of the dataset's columns ``names`` (built once per scan: row groups ask
        for the same few)."""
        found = self._schemas.get(names)
        if found is None:
            found = self._schemas[names] = pa.schema([self.field_of[c] for c in names])
        return found

    #: an adaptive key filter is judged after it has seen this many rows
    KEY_SWITCH_MIN_ROWS = 100_000

    def consider_key_switch(self, i: int, profile: Profile) -> None:
        """Stop probing adaptive key filter ``i`` when it keeps more rows than the share above
        which the payload is read whole anyway (``dense_threshold``): the probe then saves no
        payload work, and the join behind the scan removes the rows it would have removed."""
        rows_in, rows_out, _ = self.order.stats(i)
        if rows_in < self.KEY_SWITCH_MIN_ROWS or self.key_switch.get(i, True):
            return
        kept = rows_out / rows_in
        if kept > self.options.dense_threshold:
            self.key_switch[i] = True
            profile.decide(self.conjuncts[i].text, f"switched_off (kept {kept:.0%} of {rows_in:,} rows probed)")
            profile.join_filter(self.conjuncts[i].text, switched_off=1)

    # ---- partition values ---------------------------------------------------------------------

    def partition_storage(self, name: str, value: Any) -> Any:
        """A partition value in the statistics storage domain of its column."""
        if value is None:
            return None
        t = self.dataset_schema.field(name).type
        arr = pa.array([value], type=t)
        if (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
                or pa.types.is_large_binary(t)):
            return value.encode() if isinstance(value, str) else bytes(value)
        if pa.types.is_date32(t) or pa.types.is_timestamp(t):
            return arr.cast(pa.int32() if pa.types.is_date32(t) else pa.int64())[0].as_py()
        if pa.types.is_decimal(t):
            return int(arr[0].as_py().scaleb(t.scale))  # the unscaled integer
        return arr[0].as_py()

    def _file_pruned(self, task: FileTask) -> Conjunct | None:
        """Partition tier: conjuncts on partition columns only, evaluated on the file's values;
        the conjunct that rules the file out, if any."""
        if not (self.options.filter_in_scan and self.options.prune_partitions):
            return None
        values = task.info.partition_values
        if not values:
            return None
        for c in self.conjuncts:
            if not c.partition_only:
                continue
            row = pa.RecordBatch.from_arrays(
                [pa.array([values.get(n)], type=self.dataset_schema.field(n).type) for n in c.columns],
                schema=pa.schema([self.dataset_schema.field(n) for n in c.columns]),
            )
            if not evaluate(c.bound, row)[0]:
                self.profile.decide(c.text, PARTITION.name)
                return c
        return None

    # ---- execution ------------------------------------------------------------------------

    def _units(self) -> Iterator[_Unit]:
        """Every unit of the scan's files to read, in order; a file that cannot be opened
        ends the stream with a unit that raises its error (in order, after the units before)."""
        for number, task in enumerate(self._plan.tasks):
            try:
                ctx = self._open(task)
            except Exception as e:
                yield _Unit(number, task.info, None, -1, e)
                return
            if ctx is None:
                continue
            self._sources.append(ctx.file.source.stats)
            self.profile.add("bytes_total", ctx.file.units_bytes(ctx.row_groups))
            for rg in ctx.row_groups:
                yield _Unit(number, task.info, ctx, rg)

    def _pruned_by_table_statistics(self, read: FileRead) -> Conjunct | None:
        """Table tier: the conjunct the statistics the table states of a data file (and its
        partition values) rule out, if any; the file is then not opened."""
        if not (self.options.filter_in_scan and self.options.prune_statistics) or not (read.stats or read.constants):
            return None
        stats = table_statistics(read, self.field_of, self.predicate_columns)
        for c in self.conjuncts:
            if evaluate_statistics(c.bound, stats) is Answer.CANNOT_MATCH:
                return c
        return None

    def _open_table_file(self, task: FileTask) -> FileContext | None:
        """A data file of a table opened for reading; None when the table's statistics or its
        partition values rule it out (counted per file: it is not opened)."""
        read = task.info.table
        pruned_by = self._file_pruned(task)
        tier = PARTITION.name
        if pruned_by is None:
            pruned_by = self._pruned_by_table_statistics(read)
            tier = TABLE_STATISTICS
        if pruned_by is not None:
            if _first_part(task.info):  # the file's other byte ranges are ruled out alike
                self.profile.add("rows_total", read.num_records or 0)
                self.profile.add("files_pruned_table_stats" if tier == TABLE_STATISTICS else "files_pruned_partition")
                if tier == TABLE_STATISTICS:
                    self.profile.decide(pruned_by.text, tier)
            return None
        try:
            return FileContext(self, task)
        except ObjectNotFoundError as e:
            raise ObjectNotFoundError(f"{read.where}: its data file {read.path!r} is missing ({e})") from None
        except FileChangedError as e:
            raise FileChangedError(
                f"{read.where}: the data file is not the one the table lists ({e.reason})", file=read.path
            ) from None

    def _open(self, task: FileTask) -> FileContext | None:
        """The file of ``task`` opened for reading; None when its partition values rule it out
        (its units are counted as the partition tier's)."""
        if _first_part(task.info):
            self.profile.add("files")
        if task.info.table is not None:
            return self._open_table_file(task)
        pruned_by = self._file_pruned(task)
        if pruned_by is None:
            return FileContext(self, task)
        with open_units(task.info.path, self.filesystem, self.reader_options, self.options.format) as f:
            units = f.units_of_split(task.info.start, task.info.length) if isinstance(task.info, FileSplit) else range(f.num_units())
            for rg in units:
                rows = f.unit_rows(rg)
                self.profile.add("row_groups_total")
                self.profile.add("rows_total", rows)
                record_ruled_out(self.profile, RuledOut(PARTITION, pruned_by), rows, decision=False)
        return None

    def _run_unit(self, unit: _Unit) -> _UnitResult:
        """Read one unit (on a worker thread); an error comes back with the unit, to be raised
        in order by the consumer."""
        try:
            if unit.error is not None:
                raise unit.error
            return _UnitResult(unit, *self._read_unit(unit))
        except Exception as e:
            return _UnitResult(unit, None, None, e)

    def _read_unit(self, unit: _Unit) -> tuple[pa.Table | None, Profile]:
        ctx, rg = unit.ctx, unit.number
        assert ctx is not None
        job = UnitScan(ctx, rg)
        try:
            table = job.run()
        except (FileError, SourceError) as e:
            if not isinstance(e, FileChangedError):
                ctx.explain(e)
            if isinstance(e, FileError):
                raise _at_unit(e, ctx.file.path, rg) from None
            raise
        ctx.unit_read()
        return table, job.profile

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """Stream the matching rows as record batches of ``batch_size`` rows (the last smaller)."""
        batches = _Batches(self.options.batch_size)
        for _, table in self._tables():
            yield from batches.add(table)
        yield from batches.rest()

    def to_batches_by_file(self) -> Iterator[tuple[FileInfo | FileSplit, pa.RecordBatch]]:
        """Stream the matching rows as :meth:`to_batches` does, each batch with the file (or
        the byte range of a file, a :class:`FileSplit`) it came from: no batch holds rows of
        two, so a batch can be given its file's partition values and path. The last batch of
        each file (or range) may be smaller than ``batch_size``.

        When a file cannot be read, the error is raised after every batch of the files
        before it, and :attr:`failed_part` names it."""
        batches = _Batches(self.options.batch_size)
        part: FileInfo | FileSplit | None = None
        number = -1
        with contextlib.closing(self._results()) as results:
            for result in results:
                unit = result.unit
                if unit.task != number:
                    if part is not None:
                        for batch in batches.rest():
                            yield part, batch
                    part, number = unit.info, unit.task
                self._raise_error_of(result)
                if result.table is not None and result.table.num_rows:
                    for batch in batches.add(result.table):
                        yield unit.info, batch
        if part is not None:
            for batch in batches.rest():
                yield part, batch

    def _tables(self) -> Iterator[tuple[_Unit, pa.Table]]:
        """The surviving rows of each unit, in order (one table per unit with survivors)."""
        with contextlib.closing(self._results()) as results:
            for result in results:
                self._raise_error_of(result)
                if result.table is not None and result.table.num_rows:
                    yield result.unit, result.table

    def _raise_error_of(self, result: _UnitResult) -> None:
        """Raise the error of a unit that failed (the reads still running finish first, and
        the profile is complete, before the error leaves the scan)."""
        if result.error is not None:
            self.failed_part = result.unit.info
            raise result.error

    def _results(self) -> Generator[_UnitResult, None, None]:
        """What reading each unit gave, in order; the profile gathers theirs."""
        if self._consumed:
            raise OptionError("a Scan can be iterated once; create a new one to scan again")
        self._consumed = True
        # the requests of planning that looked for a table above the paths count too
        self._sources = [self.dataset.probes] if self.dataset is not None else []
        t0 = time.perf_counter()
        try:
            for result in _ordered_map(self._run_unit, self._units(), self.options.effective_threads):
                if result.profile is not None:
                    self.profile.merge(result.profile)
                yield result
        finally:
            self.profile.counters["bytes_read"] = sum(s.bytes_read for s in self._sources)
            # every ranged read of the files (footers and page indexes too), as an object store counts them
            self.profile.counters["requests"] = sum(s.requests for s in self._sources)
            self.profile.counters["retries"] = sum(s.retries for s in self._sources)
            self.profile.counters["cached_reads"] = sum(s.cached_reads for s in self._sources)
            self.profile.timings["retrying"] = sum(s.retry_seconds for s in self._sources)
            self.profile.timings["total"] = time.perf_counter() - t0
            self.profile.timings["planning"] = self.profile.timings.get("planning", 0.0)

    def to_table(self) -> pa.Table:
        """All matching rows as one table (a chunk per row group with survivors, not copied)."""
        tables = [table for _, table in self._tables()]
        if not tables:
            return empty_table(self.schema)
        return pa.concat_tables(tables)

    def count(self) -> int:
        return sum(b.num_rows for b in self.to_batches())

    # ---- explain ------------------------------------------------------------------------------

    def explain(self, analyze: bool = True) -> str:
        """The plan: columns, which predicate runs at which tier, the predicate order; with
        ``analyze`` the scan runs and the decision log and profile are appended."""
        lines = ["lazyscan scan"]
        nfiles = len(self._plan.tasks)
        lines.append(f"  files: {nfiles}")
        if self.table is not None:
            reads = [t.info.table for t in self._plan.tasks]
            deleted = sum(0 if r.deleted_rows is None else len(r.deleted_rows) for r in reads)
            equality = len({d.path for r in reads for d in r.equality_deletes})
            lines.append(
                f"  table: {self.table.context} ({deleted:,} rows deleted by position, "
                f"{equality} equality delete files)"
            )
        def names(columns: Sequence[str]) -> str:
            return ", ".join(render_column(c) for c in columns) or "-"

        lines.append(f"  output columns ({len(self.output_columns)}): {names(self.output_columns)}")
        lines.append(f"  predicate columns: {names(self.predicate_columns)}")
        lines.append(f"  payload columns (read only for surviving rows): {names(self.payload_columns)}")
        o = self.options
        if not self.conjuncts:
            lines.append("  filter: none")
        elif not o.filter_in_scan:
            lines.append(f"  filter (after decoding, pushdown off): {self.bound}")
        else:
            lines.append("  predicates by tier:")
            tiers = [
                (PARTITION.name, o.prune_partitions, lambda c: c.partition_only),
                *([(TABLE_STATISTICS, o.prune_statistics, lambda c: True)] if self.table is not None else []),
                (STATISTICS.name, o.prune_statistics, lambda c: True),
                (BLOOM.name, o.prune_bloom, lambda c: bloom_candidate(c.bound)),
                (DICTIONARY.name, o.prune_dictionary, lambda c: len(c.columns) == 1 and not c.partition_only),
                (PAGE_INDEX.name, o.prune_page_index, lambda c: len(c.columns) == 1 and not c.partition_only),
                ("rows", True, lambda c: True),
            ]
            for tier, on, applies in tiers:
                preds = [c.text for c in self.conjuncts if applies(c)]
                state = "" if on else " (switched off)"
                lines.append(f"    {tier:<11}{state}: {'; '.join(preds) if preds else '-'}")
            lines.append(f"  row-level order{' (adaptive)' if o.adaptive_order else ''}: " + " -> ".join(self.order.describe()))
        if analyze:
            if not self._consumed:
                for _ in self.to_batches():
                    pass
            lines.append("  decisions (what ruled rows out, by predicate and tier):")
            if not self.profile.decisions:
                lines.append("    none")
            for pred, tiers_hit in self.profile.decisions.items():
                parts = ", ".join(f"{t}: {n}" for t, n in tiers_hit.items())
                lines.append(f"    {pred}: {parts}")
            if self.profile.join_filters:
                lines.append("  join filters (removed by tier, probes):")
                lines.extend(f"    {line}" for line in self.profile.join_filter_lines())
            lines.append("  final row-level order: " + " -> ".join(self.order.describe()) if self.conjuncts else "")
            lines.append("  profile: " + self.profile.summary())
            lines.append(self.profile.table(join_filters=False))
        return "\n".join(line for line in lines if line)


#: worker threads of scans, one pool per thread count, kept for the process: starting two
#: threads per scan cost about 0.4 ms, as much as reading a small file
_pools: dict[int, SharedPool] = {}
_pools_lock = threading.Lock()


def _pool(threads: int) -> cf.ThreadPoolExecutor:
    with _pools_lock:
        pool = _pools.get(threads)
        if pool is None:
            pool = _pools[threads] = SharedPool(threads, "lazyscan")
    return pool.get()


def _ordered_map(fn: Callable[[Any], Any], items: Iterable[Any], threads: int) -> Iterator[Any]:
    """``map`` on a thread pool with a bounded window, results in input order. Units never
    wait for each other, so scans can share the pools."""
    if threads <= 1:
        for item in items:
            yield fn(item)
        return
    window = threads * 2
    pool = _pool(threads)
    futures: list[cf.Future[Any]] = []
    it = iter(items)
    exhausted = False
    try:
        while True:
            while not exhausted and len(futures) < window:
                try:
                    item = next(it)
                except StopIteration:
                    exhausted = True
                    break
                futures.append(pool.submit(fn, item))
            if not futures:
                break
            yield futures.pop(0).result()
    finally:
        for f in futures:
            f.cancel()
        cf.wait(futures)  # units already running finish before the scan's files are closed


def scan(
    source: Any,
    columns: Sequence[str] | None = None,
    where: str | Expr | BoundExpr | None = None,
    *,
    batch_size: int | None = None,
    threads: int | None = None,
    filesystem: Any = None,
    schema: pa.Schema | None = None,
    version: int | None = None,
    timestamp: Any = None,
    snapshot_id: int | None = None,
    as_of: Any = None,
    reroot: Mapping[str, str] | None = None,
    storage_options: Mapping[str, str] | None = None,
    catalog: str | None = None,
    catalog_properties: Mapping[str, str] | None = None,
    **options: Any,
) -> Scan:
    """Scan Parquet files with a filter evaluated inside the scan.

    ``source``: a file, a directory (recursive; ``key=value`` folders become partition columns),
    a glob, a list of those, or a list of :class:`FileSplit`; local paths, ``file://`` URLs, or
    paths on a pyarrow/fsspec ``filesystem``. ``columns``: output columns (default: all).
    ``where``: SQL predicate text or an expression built with :func:`lazyscan.col`; or a
    filter already bound to ``schema`` (a :class:`~lazyscan.predicate.BoundExpr` from
    :func:`~lazyscan.predicate.bind`), which the scan uses without binding it again.

    Names in ``columns`` and ``where`` are top-level column names taken whole (``"a.b"`` is
    the column named ``a.b``; in SQL text write it `` `a.b` `` or ``"a.b"``), resolved exactly,
    then ignoring case when one column matches (Spark's default); two columns that differ
    only in case make such a name ambiguous (a :class:`PredicateError` names them). The option
    ``case_sensitive=True`` resolves names exactly only. Output columns keep the file's
    spelling.
    ``options``: fields of :class:`ScanOptions` (pruning tiers, late materialization, ...).

    Tables: ``source`` may be a Delta Lake table's folder (it holds ``_delta_log``; local or a
    URI), an Apache Iceberg table's folder or metadata JSON file (local, or on an object store
    read through ``filesystem``), a pyiceberg ``Table``, or a plan of :mod:`lazyscan.tables`;
    the scan reads the table's snapshot (deleted rows left out, columns by their logical names).
    Time travel: ``version`` (a Delta version, an Iceberg snapshot id; Iceberg also takes
    ``snapshot_id``) or ``timestamp`` (a datetime or RFC 3339 text for Delta, a datetime or
    epoch milliseconds for Iceberg; Iceberg also takes ``as_of``). ``reroot``: Iceberg location
    prefixes written elsewhere -> where the table is now; ``storage_options``: passed to
    ``deltalake`` for a table on an object store. ``catalog`` and ``catalog_properties``:
    ``source`` is then a table name in that Iceberg catalog (pyiceberg's ``load_catalog``). A
    path inside a table is refused with a :class:`~lazyscan.errors.TableFolderError` naming the
    table; ``raw_files=True`` reads a table folder's Parquet and ORC files as they are.
    """
    if batch_size is not None:
        options["batch_size"] = batch_size
    if threads is not None:
        options["threads"] = threads
    table_options = dict(
        version=version, timestamp=timestamp, snapshot_id=snapshot_id, as_of=as_of, reroot=reroot,
        storage_options=storage_options, catalog=catalog, catalog_properties=catalog_properties,
    )
    opts = ScanOptions.from_mapping(options)
    return Scan(source, columns, where, filesystem=filesystem, schema=schema, options=opts, table_options=table_options)
