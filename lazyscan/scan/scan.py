"""One scan: files x filter x columns -> compacted Arrow record batches, plus a profile.

Parts and roles:

- :func:`scan` / :class:`Scan`: the public entry point; plans once (files, schema, bound filter,
  conjuncts and where each can be evaluated), then streams batches.
- :class:`_Conjunct`: one AND-operand of the filter, bound to the dataset schema, with the columns
  it reads and the tiers that can evaluate it.
- :class:`PredicateOrder`: adaptive ordering of row-level predicate steps by rows removed per
  second, shared by the threads of a scan.
- :class:`_FileContext`: one open file of the scan; it must be the version the plan was made
  from (identity and footer digest, see :func:`~lazyscan.scan.dataset.check_planned`) when it is
  opened and again after its last row group is read, else a :class:`FileChangedError` names it.
- :class:`_RowGroupScan`: the per-unit algorithm (a unit: a Parquet row group, an ORC
  stripe), a loop over the tiers, cheapest first: partition values (per file) -> statistics ->
  Bloom filters -> dictionaries -> page index -> values of predicate columns (each decoded only
  for rows that survived the previous step, dictionary-encoded ones evaluated per dictionary
  entry) -> payload columns read only for surviving rows. Each tier is a method that rules the
  unit out (a :class:`_RuledOut` naming tier and conjunct) or narrows its selection;
  :func:`_record_ruled_out` is the one place that counts what a tier removed (profile counter,
  decision log, join filter).
- a filter may come bound already (a :class:`~lazyscan.predicate.BoundExpr`, as a Spark task
  gets it from the driver): the scan checks it against its schema and does not bind it again.

Results never depend on the options: every tier and late materialization can be switched off and
the same rows come back (see ``tests/test_scan.py``, ``test_every_switch_combination_gives_same_rows``).
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import functools
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from lazyscan.errors import (
    FileChangedError,
    FileError,
    LazyScanError,
    OptionError,
    SourceError,
)
from lazyscan.format.counters import ReadCounters
from lazyscan.format.options import ReaderOptions
from lazyscan.format.selection import RowRanges
from lazyscan.format.statistics import ColumnStats
from lazyscan.format.units import EncodedChunk, UnitFile, open_units
from lazyscan.io.pools import SharedPool
from lazyscan.io.retry import RetryPolicy
from lazyscan.io.source import FileIdentity, ReadOptions
from lazyscan.predicate import (
    Answer,
    bind,
    conjunction,
    evaluate,
    evaluate_bloom,
    evaluate_on_dictionary,
    evaluate_statistics,
    null_passes,
    referenced_columns,
    ruled_out_by_statistics,
    split_conjuncts,
    to_expr,
)
from lazyscan.predicate.bind import NameResolver, check_bound
from lazyscan.predicate.bound import (
    BoundCompare,
    BoundExpr,
    BoundIn,
    BoundIsNull,
    BoundKeyIn,
    BoundLike,
)
from lazyscan.predicate.casts import session_time_zone
from lazyscan.predicate.expr import Expr, render_column
from lazyscan.predicate.prune import BLOOM_PROBE_KEYS
from lazyscan.scan.dataset import Dataset, FileInfo, FileSplit, check_planned, discover, pinned
from lazyscan.scan.options import ScanOptions
from lazyscan.scan.profile import Profile

# --------------------------------------------------------------------------------------------
# planning


#: the ``valid`` argument of :func:`~lazyscan.parquet.kernels.dictionary_hits` for chunks without NULLs
#: row groups whose filter columns a scan on an object store fetches ahead, at least
READ_AHEAD = 2


@dataclass
class _Conjunct:
    """One AND-operand of the bound filter."""

    bound: BoundExpr
    text: str
    columns: tuple[str, ...]
    partition_only: bool
    #: static estimates used before measurements exist
    est_selectivity: float
    est_cost: float
    #: for ``=`` / ``IN`` on a string or binary column: the values, matched on encoded pages
    needles: tuple[bytes, ...] | None = None
    #: a key filter is part of it
    has_keys: bool = False

    @functools.cached_property
    def null_passes(self) -> bool:
        """Whether a NULL in its (single) column satisfies it; the same for every row group."""
        return null_passes(self.bound)


def _is_string_type(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t))


def _is_binary_type(t: pa.DataType) -> bool:
    return bool(pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t))


def _needles(bound: BoundExpr) -> tuple[bytes, ...] | None:
    if isinstance(bound, BoundCompare) and bound.op in ("=", "<=>"):
        lits = [bound.literal]
        ref = bound.column
    elif isinstance(bound, BoundIn) and not bound.negated:
        lits = list(bound.literals)
        ref = bound.column
    else:
        return None
    t = ref.type
    if not (pa.types.is_string(t) or pa.types.is_binary(t)):
        return None
    if not all(isinstance(lit.storage, bytes) for lit in lits):
        return None
    return tuple(lit.storage for lit in lits)


def _estimate(bound: BoundExpr, schema: pa.Schema) -> tuple[float, float]:
    """Guess (selectivity, cost per row) of a conjunct, for the first row groups."""
    sel = 0.5
    node = bound
    if isinstance(node, BoundCompare):
        sel = 0.05 if node.op in ("=", "<=>") else (0.9 if node.op == "!=" else 0.3)
    elif isinstance(node, BoundIn):
        sel = 0.9 if node.negated else min(0.5, 0.05 * len(node.literals))
    elif isinstance(node, BoundIsNull):
        sel = 0.9 if node.negated else 0.1
    elif isinstance(node, BoundLike):
        sel = 0.8 if node.negated else 0.2
    elif isinstance(node, BoundKeyIn):
        sel = 0.9 if node.negated else 0.1
    cost = 0.0
    for name in referenced_columns(bound):
        idx = schema.get_field_index(name)
        t = schema.field(idx).type if idx >= 0 else pa.int64()
        if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t):
            cost += 4.0
        elif pa.types.is_decimal(t):
            cost += 2.0
        else:
            cost += 1.0
    return sel, max(cost, 0.5)


class PredicateOrder:
    """Orders row-level predicate steps by measured rows removed per second of work.

    Each step reports (rows in, rows out, seconds) after it runs; the order used for the next
    row group puts the step that removes most rows per unit of cost first. Before a step has
    been measured its static estimate is used.
    """

    def __init__(self, conjuncts: Sequence[_Conjunct], adaptive: bool) -> None:
        self.conjuncts = list(conjuncts)
        self.adaptive = adaptive
        self._lock = threading.Lock()
        self._stats = [[0.0, 0.0, 0.0] for _ in conjuncts]  # rows_in, rows_out, seconds

    def record(self, index: int, rows_in: int, rows_out: int, seconds: float) -> None:
        with self._lock:
            s = self._stats[index]
            s[0] += rows_in
            s[1] += rows_out
            s[2] += seconds

    def _rank(self, i: int) -> float:
        rows_in, rows_out, seconds = self._stats[i]
        c = self.conjuncts[i]
        if rows_in > 0 and seconds > 0:
            removed = (rows_in - rows_out) / rows_in
            cost = seconds / rows_in
        else:
            removed = 1.0 - c.est_selectivity
            cost = c.est_cost * 1e-8
        return removed / max(cost, 1e-12)

    def stats(self, index: int) -> tuple[float, float, float]:
        """(rows in, rows out, seconds) of step ``index`` so far."""
        with self._lock:
            rows_in, rows_out, seconds = self._stats[index]
        return rows_in, rows_out, seconds

    def order(self) -> list[int]:
        idx = list(range(len(self.conjuncts)))
        if not self.adaptive:
            return idx
        with self._lock:
            return sorted(idx, key=lambda i: -self._rank(i))

    def describe(self) -> list[str]:
        return [self.conjuncts[i].text for i in self.order()]


# --------------------------------------------------------------------------------------------
# per-file and per-row-group work


@dataclass
class _FileTask:
    info: FileInfo | FileSplit
    row_groups: list[int] | None = None  # None: all, or chosen by split midpoints


def _size_only(identity: FileIdentity) -> bool:
    """Whether ``identity`` holds a size alone (a store that gives no time, ETag nor version)."""
    return identity.mtime_ns is None and identity.etag is None and identity.version_id is None


class _FileContext:
    """An open file and what the scan needs to know about it."""

    def __init__(self, scan: Scan, task: _FileTask) -> None:
        self.scan = scan
        self.info = task.info
        kept = scan.dataset.take_opened(task.info.path) if scan.dataset is not None else None
        if kept is not None and _size_only(kept.source.identity):
            # nothing but its bytes tells another version of this file apart: opened again
            # below, and the footer read compared with the plan's
            kept.close()
            kept = None
        if kept is not None:
            kept.use_options(scan.reader_options)
            self.file: UnitFile = kept
        else:
            self.file = open_units(task.info.path, scan.filesystem, scan.reader_options, scan.options.format)
        try:
            if kept is not None:
                # opened while planning: the scan reads with that open's footer, so the file must
                # still be that version (one stat, or one HEAD request on an object store)
                kept.source.check_unchanged(kept.source.identity)
            else:
                # the version the plan was made from (no request: the open's own stat or HEAD
                # and its tail read tell)
                check_planned(task.info, self.file)
        except BaseException:
            self.file.close()
            raise
        self.partition_values = dict(task.info.partition_values)
        units = task.row_groups
        if isinstance(task.info, FileSplit):
            units = self.file.units_of_split(task.info.start, task.info.length)
        self.row_groups = list(range(self.file.num_units())) if units is None else units
        self.prefetching = scan.options.prefetch and self.file.source.remote and bool(scan.conjuncts)
        if self.prefetching:
            self.file.source.enable_prefetch()
        self._position = {rg: i for i, rg in enumerate(self.row_groups)}
        #: conjunct index -> its values prepared for matching on encoded pages (once per file)
        self.matchers: dict[int, Any] = {}
        # the columns whose pages the profile counts (flat columns stored in the file)
        stored = [n for n in scan.needed_columns if self.flat(n) and n not in self.partition_values]
        self.counted_needed = tuple(stored)
        self.counted_predicate = tuple(n for n in scan.predicate_columns if self.flat(n))
        self.counted_payload = tuple(n for n in scan.payload_columns if self.flat(n))
        self._ahead_lock = threading.Lock()
        self._ahead_until = -1  # position of the last row group fetched ahead
        #: units of the file not read yet; the last one to finish checks the file again
        self._units_left = len(self.row_groups)
        self._units_lock = threading.Lock()
        #: requests the file's source had made when its version was checked
        self._requests_checked = self.file.source.stats.requests

    def unit_read(self) -> None:
        """Called when one of the file's units has been read; after the last one, raise
        :class:`FileChangedError` if the file is no longer the version the scan opened.

        The check after the reads is what closes the window on object stores: each ranged GET
        is its own request, so an object replaced during the scan would give some units the
        new bytes under the old footer; a HEAD after the last GET sees any replacement an
        earlier GET could have seen (S3 reads are strongly consistent). Locally it costs one
        stat, and it also sees a file rewritten in place while it was read. One check per file,
        not per unit: a file's units are few requests each, and a change is what is rare. None
        where nothing was read after the check at open (every unit pruned by the footer's
        statistics): then no byte of another version can have been used.
        """
        with self._units_lock:
            self._units_left -= 1
            last = self._units_left == 0
        if last and self.file.source.stats.requests != self._requests_checked:
            difference = self._difference()
            if difference is not None:
                raise FileChangedError(f"changed since planning: {difference}", file=self.file.path)

    def _difference(self) -> str | None:
        """What differs between the file now and the version the scan opened (None: nothing
        seen): its identity asked again (one stat or HEAD), or where the store gives a size
        alone, the footer read again."""
        source = self.file.source
        if not _size_only(source.identity):
            return source.identity.describe_difference(source.current_identity())
        scan = self.scan
        with open_units(self.info.path, scan.filesystem, scan.reader_options, scan.options.format) as again:
            if again.footer_digest != self.file.footer_digest:
                return "its footer differs from the one read"
            return source.identity.describe_difference(again.source.identity)

    def explain(self, error: Exception) -> None:
        """Raise :class:`FileChangedError` (caused by ``error``) when the file is no longer the
        version the scan opened: a read that failed on bytes of another version says so rather
        than calling the file corrupt."""
        try:
            difference = self._difference()
        except LazyScanError:  # gone, or the store cannot answer: ``error`` says what happened
            return
        if difference is not None:
            raise FileChangedError(f"changed since planning: {difference}", file=self.file.path) from error

    def read_ahead(self, rg: int) -> None:
        """Fetch ahead the filter columns of the row groups after ``rg``: at least
        ``READ_AHEAD`` of them, and when the coalescing gap spans a row group, as many as fit in
        one request, so their ranges (and the payload pages between them) come in few requests."""
        pos = self._position.get(rg)
        if pos is None:
            return
        opts = self.file.read_options() or ReadOptions()
        # the ranges are asked for before the lock is let go: a thread that finds its row group
        # fetched ahead then reads from those requests, never beside them
        with self._ahead_lock:
            if self._ahead_until >= pos + READ_AHEAD:
                return
            first = max(pos + 1, self._ahead_until + 1)
            window: list[int] = []
            span = 0
            for r in self.row_groups[first:]:
                size = self.file.units_bytes([r])
                if len(window) >= READ_AHEAD and (size > opts.coalesce_gap or span + size > opts.coalesce_max):
                    break
                window.append(r)
                span += size
            if not window:
                return
            self._ahead_until = self._position[window[-1]]
            ranges: list[tuple[int, int]] = []
            for r in window:
                ranges += _RowGroupScan(self, r).read_ahead_ranges()
            self.file.source.prefetch(ranges, opts)

    def has(self, name: str) -> bool:
        return self.file.has(name)

    def flat(self, name: str) -> bool:
        return self.file.flat(name)


@dataclass(frozen=True)
class _Tier:
    """A pruning tier that can rule out whole units."""

    #: its name in the decision log, in explain and in the join filters' fields
    name: str
    #: the profile counter of the units it ruled out (names kept from Parquet: row groups)
    counter: str


_PARTITION = _Tier("partition", "row_groups_pruned_partition")
_STATISTICS = _Tier("statistics", "row_groups_pruned_stats")
_BLOOM = _Tier("bloom", "row_groups_pruned_bloom")
_DICTIONARY = _Tier("dictionary", "row_groups_pruned_dictionary")
_PAGE_INDEX = _Tier("page_index", "row_groups_pruned_page_index")


@dataclass(frozen=True)
class _RuledOut:
    """A unit a tier ruled out whole, and for which conjunct (None: the conjuncts together,
    as when the page index leaves no finer unit)."""

    tier: _Tier
    conjunct: _Conjunct | None
    #: finer units of the predicate columns left unread (page index)
    pages: int = 0


def _record_ruled_out(profile: Profile, ruled_out: _RuledOut, rows: int, decision: bool = True) -> None:
    """The one place that counts what a tier removed: its counter, the decision log (unless
    ``decision`` is False: the partition tier logs once per file) and the join filter's entry."""
    profile.add(ruled_out.tier.counter)
    if ruled_out.pages:
        profile.add("pages_pruned_index", ruled_out.pages)
    c = ruled_out.conjunct
    if c is None:
        return
    tier = ruled_out.tier.name
    if decision:
        profile.decide(c.text, tier)
    if c.has_keys:
        profile.join_filter(c.text, **{f"row_groups_{tier}": 1, f"rows_{tier}": rows})


@dataclass
class _UnitPruning:
    """What the tiers so far learned of one unit."""

    #: the rows that may still pass
    selection: RowRanges
    #: statistics say every row passes every conjunct: no later tier can remove a row
    must_match: bool = False


class _RowGroupScan:
    """Scans one row group; returns its surviving rows as a table (or None) and a profile."""

    def __init__(self, ctx: _FileContext, rg: int) -> None:
        self.ctx = ctx
        self.scan = ctx.scan
        self.file = ctx.file
        self.rg = rg
        self.n = self.file.unit_rows(rg)
        self.profile = Profile.part()
        self.counters = ReadCounters()
        self.opts = self.scan.options
        #: decoded predicate columns: name -> (selection they were decoded for, array)
        self.decoded: dict[str, tuple[RowRanges, pa.Array]] = {}
        #: predicate columns read as dictionary codes: name -> (selection, codes and dictionary)
        self.assembled: dict[str, tuple[RowRanges, EncodedChunk]] = {}
        self.dict_masks: dict[int, tuple[np.ndarray, bool]] = {}
        #: pages of predicate columns holding a match, reused when those columns are output
        self.pages = ctx.file.new_cache()
        #: Bloom filters read for this row group, by column
        self._blooms: dict[str, Any] = {}

    # ---- helpers ----------------------------------------------------------------------------

    def read_ahead_ranges(self) -> list[tuple[int, int]]:
        """The filter columns' bytes this row group will read first, if cheap checks say it
        will read them whole: none when statistics rule it out or the page index would pick
        pages; a dictionary alone where the dictionary may rule it out; only columns that a
        conjunct reads alone."""
        scan = self.scan
        opts = self.opts
        if not opts.filter_in_scan or not scan.conjuncts:
            return []
        if opts.prune_statistics:
            stats = self._stats_for(scan.predicate_columns)
            answers = [evaluate_statistics(c.bound, stats) for c in scan.conjuncts]
            if any(a is Answer.CANNOT_MATCH for a in answers) or all(a is Answer.MUST_MATCH for a in answers):
                return []
        # only columns alone in a conjunct: how much of the others a row group reads depends
        # on the rows earlier conjuncts leave
        single = [c for c in scan.conjuncts if len(c.columns) == 1 and self.ctx.flat(c.columns[0]) and c.columns[0] not in self.ctx.partition_values]
        if opts.prune_page_index:
            for c in single:
                fs = self.file.finer_statistics(self.rg, c.columns[0])
                if fs is not None and any(ruled_out_by_statistics(c.bound, c.columns[0], fs[0])):
                    return []  # the page index picks pages: they are fetched when known
        alone = list(dict.fromkeys(c.columns[0] for c in single))
        return self.file.read_ahead_ranges(self.rg, alone, opts.prune_dictionary or opts.dictionary_eval)

    def _stats_for(self, names: Iterable[str]) -> dict[str, ColumnStats]:
        out: dict[str, ColumnStats] = {}
        for name in names:
            if name in self.ctx.partition_values:
                v = self.scan.partition_storage(name, self.ctx.partition_values[name])
                nulls = self.n if v is None else 0
                out[name] = ColumnStats(v, v, nulls, self.n)
            elif not self.ctx.has(name):
                out[name] = ColumnStats(None, None, self.n, self.n)  # missing column: all NULL
            elif self.ctx.flat(name):
                st = self.file.statistics(self.rg, name)
                if st is not None:
                    out[name] = st
        return out

    def _might_contain(self, name: str, values: list[Any]) -> list[bool] | None:
        if not self.ctx.flat(name):
            return None
        return self.file.might_contain(self.rg, name, values, self._blooms)

    def _finer_blooms(self, c: _Conjunct, name: str) -> Callable[[int], Callable[[str, list[Any]], list[bool] | None]] | None:
        """For a conjunct Bloom filters can rule out, the Bloom answers of each finer unit."""
        if not _bloom_candidate(c.bound):
            return None
        answers: dict[tuple[Any, ...], list[list[bool]] | None] = {}

        def of(g: int) -> Callable[[str, list[Any]], list[bool] | None]:
            def might(column: str, values: list[Any]) -> list[bool] | None:
                if column != name:
                    return None
                key = tuple(values)
                if key not in answers:
                    answers[key] = self.file.finer_might_contain(self.rg, name, values, self._blooms)
                found = answers[key]
                return found[g] if found is not None else None

            return might

        return of

    def _constant_array(self, name: str, n: int) -> pa.Array:
        field_type = self.scan.field_of[name].type
        if name in self.ctx.partition_values:
            v = self.ctx.partition_values[name]
            return pa.nulls(n, field_type) if v is None else pa.array([v] * n, type=field_type)
        return pa.nulls(n, field_type)

    def _read(self, name: str, selection: RowRanges | None) -> pa.Array:
        """Column ``name`` for the selected rows (None = all)."""
        n = self.n if selection is None else selection.row_count
        if name in self.ctx.partition_values or not self.ctx.has(name):
            return self._constant_array(name, n)
        arr = self.file.read(self.rg, name, selection, self.counters, self.pages if self.ctx.flat(name) else None)
        return self._as_output(name, arr) if self.ctx.flat(name) else arr

    def _as_output(self, name: str, arr: pa.Array) -> pa.Array:
        want = self.scan.field_of[name].type
        return arr if arr.type == want else arr.cast(want)

    def _batch(self, names: Iterable[str], arrays: dict[str, pa.Array], n: int) -> pa.RecordBatch:
        cols = tuple(names)
        schema = self.scan.schema_of(cols)
        if not cols:
            return pa.RecordBatch.from_pydict({}, schema=schema)
        return pa.RecordBatch.from_arrays([arrays[c] for c in cols], schema=schema)

    # ---- the algorithm ----------------------------------------------------------------------

    def run(self) -> pa.Table | None:
        t_start = time.perf_counter()
        if self.ctx.prefetching:
            self.ctx.read_ahead(self.rg)
        p = self.profile
        p.add("row_groups_total")
        p.add("rows_total", self.n)
        p.add("pages_total", self.file.finer_units_of(self.rg, self.ctx.counted_needed))
        try:
            result = self._run()
        finally:
            c = self.counters
            p.time("io", c.io_seconds)
            p.time("decompress", c.decompress_seconds)
            p.time("decode", c.decode_seconds)
            p.add("bytes_decompressed", c.bytes_decompressed)
            p.add("values_decoded", c.values_decoded)
            p.add("requests", c.requests)
            p.add("pages_read", c.pages_fetched)
            p.add("pages_refetched", c.pages_refetched)
            p.time("total", time.perf_counter() - t_start)
        if result is not None:
            p.add("rows_returned", result.num_rows)
        return result

    def _run(self) -> pa.Table | None:
        scan = self.scan
        conjuncts = scan.conjuncts
        if not self.opts.filter_in_scan or not conjuncts:
            return self._plain()
        if all(scan.key_switch.get(i) for i in range(len(conjuncts))):
            return self._plain()  # only adaptive key filters, all switched off: the join filters
        unit = _UnitPruning(RowRanges.all(self.n))
        for tier in (self._by_statistics, self._by_bloom, self._by_dictionary, self._by_page_index):
            ruled_out = tier(unit)
            if ruled_out is not None:
                _record_ruled_out(self.profile, ruled_out, self.n)
                return None
        p = self.profile
        p.add("row_groups_read")
        p.add("rows_after_pruning", unit.selection.row_count)
        if not self.opts.late_materialization:
            return self._filter_after_decode(unit.selection, unit.must_match)
        selection = unit.selection if unit.must_match else self._by_values(unit.selection)
        # payload: only for surviving rows
        if selection.is_empty:
            p.add("row_groups_without_survivors")
            p.add("pages_skipped_lazily", self.file.finer_units_of(self.rg, self.ctx.counted_payload))
            return None
        return self._materialize(selection)

    # ---- the tiers, cheapest first: each rules the unit out or narrows its selection -----------

    def _by_statistics(self, unit: _UnitPruning) -> _RuledOut | None:
        """The unit's statistics: a conjunct no row can pass rules it out; when every
        conjunct must pass on every row, the later tiers are skipped."""
        scan = self.scan
        if not self.opts.prune_statistics:
            return None
        stats = self._stats_for(scan.predicate_columns)
        answers = []
        for c in scan.conjuncts:
            a = evaluate_statistics(c.bound, stats)
            if a is Answer.CANNOT_MATCH:
                return _RuledOut(_STATISTICS, c)
            answers.append(a)
        unit.must_match = all(a is Answer.MUST_MATCH for a in answers)
        return None

    def _by_bloom(self, unit: _UnitPruning) -> _RuledOut | None:
        """Bloom filters, while statistics leave the unit undecided."""
        if not self.opts.prune_bloom or unit.must_match:
            return None
        for c in self.scan.conjuncts:
            if _bloom_candidate(c.bound) and evaluate_bloom(c.bound, self._might_contain) is Answer.CANNOT_MATCH:
                return _RuledOut(_BLOOM, c)
        return None

    def _by_dictionary(self, unit: _UnitPruning) -> _RuledOut | None:
        """Dictionaries: each single-column conjunct evaluated once per dictionary entry; no
        entry passing rules the unit out, and the entries' answers are kept for the values
        tier (``dictionary_eval``)."""
        scan = self.scan
        opts = self.opts
        p = self.profile
        if not (opts.prune_dictionary or opts.dictionary_eval) or unit.must_match:
            return None
        for i, c in enumerate(scan.conjuncts):
            if len(c.columns) != 1 or c.partition_only or scan.key_switch.get(i):
                continue
            name = c.columns[0]
            if not self.ctx.flat(name):
                continue
            t0 = time.perf_counter()
            dictionary = self.file.dictionary(self.rg, name, self.counters, self.pages)
            if dictionary is None:
                continue
            want = scan.field_of[name].type
            if dictionary.type != want:
                dictionary = dictionary.cast(want)
            mask = evaluate_on_dictionary(c.bound, dictionary)
            passes_null = c.null_passes
            seconds = time.perf_counter() - t0
            p.time("filter", seconds)
            if c.has_keys:
                p.add("key_probes_dictionary", len(dictionary))
                p.join_filter(c.text, dictionary_probes=len(dictionary), probe_seconds=seconds)
            if opts.prune_dictionary and not mask.any():
                st = self.file.statistics(self.rg, name)
                nulls = st.null_count if st is not None else None
                if not passes_null or nulls == 0:
                    return _RuledOut(_DICTIONARY, c)
            if opts.dictionary_eval:
                self.dict_masks[i] = (mask, passes_null)
        return None

    def _by_page_index(self, unit: _UnitPruning) -> _RuledOut | None:
        """Statistics (and Bloom filters) of the finer units (pages, ORC row groups): the
        selection narrows to the finer units each single-column conjunct may match; none left
        rules the unit out."""
        if not self.opts.prune_page_index or unit.must_match:
            return None
        for c in self.scan.conjuncts:
            if len(c.columns) == 1 and self.ctx.flat(c.columns[0]):
                unit.selection = self._finer_units_left(c, unit.selection)
        if unit.selection.is_empty:
            return _RuledOut(_PAGE_INDEX, None, self.file.finer_units_of(self.rg, self.ctx.counted_predicate))
        return None

    def _finer_units_left(self, c: _Conjunct, selection: RowRanges) -> RowRanges:
        """``selection`` without the finer units conjunct ``c`` rules out; recorded per conjunct."""
        p = self.profile
        name = c.columns[0]
        fs = self.file.finer_statistics(self.rg, name)
        if fs is None:
            return selection
        finer_stats, firsts, counts = fs
        blooms = self._finer_blooms(c, name) if self.opts.prune_bloom else None
        keep_s, keep_e = [], []
        pruned = pruned_rows = by_bloom = 0
        ruled_out = ruled_out_by_statistics(c.bound, name, finer_stats)
        for g, (out, first, count) in enumerate(zip(ruled_out, firsts.tolist(), counts.tolist())):
            if out:
                pruned += 1
                pruned_rows += count
            elif blooms is not None and evaluate_bloom(c.bound, blooms(g)) is Answer.CANNOT_MATCH:
                pruned += 1
                pruned_rows += count
                by_bloom += 1
            else:
                keep_s.append(first)
                keep_e.append(first + count)
        if by_bloom:
            p.add("pages_pruned_bloom", by_bloom)
        if not pruned:
            return selection
        p.decide(c.text, _PAGE_INDEX.name, pruned)
        if c.has_keys:
            p.join_filter(c.text, pages_page_index=pruned, rows_page_index=pruned_rows)
        return selection.intersect(RowRanges(np.array(keep_s, np.int64), np.array(keep_e, np.int64)))

    def _by_values(self, selection: RowRanges) -> RowRanges:
        """Row-level predicates in the scan's adaptive order, predicate columns first, each on
        the rows that survived the ones before."""
        pages_before = self.counters.pages_skipped
        for i in self.scan.order.order():
            if selection.is_empty:
                break
            selection = self._apply(i, selection)
        self.profile.add("pages_pruned_index", self.counters.pages_skipped - pages_before)
        return selection

    def _apply(self, i: int, selection: RowRanges) -> RowRanges:
        """Evaluate conjunct ``i`` on the selected rows; return the rows that pass."""
        scan = self.scan
        c = scan.conjuncts[i]
        if scan.key_switch.get(i):
            return selection  # an adaptive key filter that did not pay: the join filters
        t0 = time.perf_counter()
        rows_in = selection.row_count
        mask = None
        matched_literal: bytes | None = None
        kept: np.ndarray | None = None
        if i in self.dict_masks:
            kept = self._dictionary_hits(c.columns[0], selection, *self.dict_masks[i])
        probed_values = kept is None
        if kept is not None:
            pass
        elif c.needles is not None and self.ctx.flat(c.columns[0]) and c.columns[0] not in self.decoded:
            mask = self._match_mask(i, c.columns[0], selection, c.needles)
            matched_literal = c.needles[0] if len(c.needles) == 1 else None
        if kept is None and mask is None:
            arrays = {}
            for name in c.columns:
                arrays[name] = self._decoded(name, selection)
            batch = self._batch(c.columns, arrays, rows_in)
            tf = time.perf_counter()
            mask = evaluate(c.bound, batch)
            self.profile.time("filter", time.perf_counter() - tf)
            if c.has_keys:
                self.profile.add("key_probes_values", rows_in)
        if kept is None:
            kept = selection.to_indices()[mask]
        out = RowRanges.from_indices(kept) if len(kept) != rows_in else selection
        if matched_literal is not None and len(kept) and c.columns[0] in scan.output_columns:
            # every surviving row holds the literal itself: the column is not read again
            known = self._literal_array(c.columns[0], matched_literal, len(kept))
            if known is not None:
                self.decoded[c.columns[0]] = (out, known)
        seconds = time.perf_counter() - t0
        scan.order.record(i, rows_in, len(kept), seconds)
        self.profile.predicate_run(c.text, rows_in, len(kept), seconds)
        if c.has_keys:
            self.profile.join_filter(
                c.text, rows_probed=rows_in, rows_removed=rows_in - len(kept), probe_seconds=seconds,
                value_probes=rows_in if probed_values else 0,
            )
        if len(kept) < rows_in:
            self.profile.decide(c.text, "rows", rows_in - len(kept))
        if i in scan.key_switch:
            scan._consider_key_switch(i, self.profile)
        return out

    def _decoded(self, name: str, selection: RowRanges) -> pa.Array:
        cached = self.decoded.get(name)
        if cached is not None:
            sel0, arr = cached
            if sel0 == selection:
                return arr
            return arr.take(pa.array(sel0.positions_in(selection)))
        arr = self._read(name, selection)
        self.decoded[name] = (selection, arr)
        return arr

    def _codes_for(self, name: str, selection: RowRanges) -> EncodedChunk | None:
        """The dictionary codes already read for ``name``, narrowed to ``selection`` (a subset
        of the rows they were read for); None when the column was not read as codes."""
        earlier = self.assembled.get(name)
        if earlier is None:
            return None
        sel0, chunk = earlier
        return chunk if sel0 == selection else chunk.take(sel0.positions_in(selection))

    def _match_mask(self, i: int, name: str, selection: RowRanges, needles: tuple[bytes, ...]) -> np.ndarray | None:
        """``=`` / ``IN`` of conjunct ``i`` on a byte-array column, evaluated on the encoded
        values where the format offers it (None otherwise). The pages holding a match are kept
        for the payload read, unless the rows that match all hold the one literal."""
        encoded = self.file.encoded
        if encoded is None:
            return None
        matcher = self.ctx.matchers.get(i)
        if matcher is None:
            matcher = self.ctx.matchers[i] = encoded.byte_matcher(needles)
        cache = None if len(needles) == 1 else self.pages
        return encoded.match(self.rg, name, selection, self.counters, matcher, cache)

    def _literal_array(self, name: str, literal: bytes, n: int) -> pa.Array | None:
        """``n`` copies of ``literal`` as column ``name`` of the output (None for a type built
        otherwise)."""
        want = self.scan.field_of[name].type
        if not (_is_string_type(want) or _is_binary_type(want)):
            return None
        if _is_string_type(want):
            try:
                literal.decode("utf-8")
            except UnicodeDecodeError:
                return None  # the general read says what the column holds
        large = len(literal) * n >= 2**31
        built = pa.large_binary() if large else pa.binary()
        if not large and want in (pa.string(), pa.binary()):
            built = want  # built as wanted: no cast
        offsets = np.arange(n + 1, dtype=np.int64 if large else np.int32) * len(literal)
        raw = pa.Array.from_buffers(built, n, [None, pa.py_buffer(offsets), pa.py_buffer(literal * n)])
        return raw if raw.type == want else raw.cast(want)

    def _dictionary_hits(self, name: str, selection: RowRanges, dict_mask: np.ndarray, passes_null: bool) -> np.ndarray | None:
        """The selected rows whose dictionary entry passes (``dict_mask``); None when the
        column's codes are not at hand (already decoded, or pages fell back to plain)."""
        encoded = self.file.encoded
        if name in self.decoded or encoded is None:
            return None
        chunk = self._codes_for(name, selection)
        if chunk is None and selection.row_count == self.n:
            # every row: the rows that pass and their codes straight from the pages
            found = encoded.dictionary_rows(self.rg, name, dict_mask, passes_null, self.counters, self.pages)
            if found is not None:
                kept, kept_chunk = found
                self.assembled[name] = (RowRanges.from_indices(kept), kept_chunk)
                return kept
        if chunk is None:
            # the dictionary decoded for tier 4 comes from the page cache
            chunk = encoded.codes(self.rg, name, selection, self.counters, self.pages)
            if chunk is None:
                return None
        tf = time.perf_counter()
        if chunk.codes is None:
            # not dictionary encoded after all (fallback pages): keep the values for reuse
            arr = encoded.codes_to_arrow(self.rg, name, chunk, self.counters)
            self.decoded[name] = (selection, self._as_output(name, arr))
            return None
        self.assembled[name] = (selection, chunk)
        kept = encoded.rows_passing(self.rg, name, chunk, dict_mask, passes_null, selection.to_indices())
        self.profile.time("filter", time.perf_counter() - tf)
        return kept

    def _materialize(self, selection: RowRanges) -> pa.Table:
        scan = self.scan
        n_sel = selection.row_count
        dense = n_sel > self.opts.dense_threshold * self.n
        arrays: dict[str, pa.Array] = {}
        selective: list[str] = []
        for name in scan.output_columns:
            if name in self.decoded:
                arrays[name] = self._decoded(name, selection)
                continue
            chunk = self._codes_for(name, selection)
            if chunk is not None and self.file.encoded is not None:
                # the codes read for the predicate: no second read of the column
                arrays[name] = self._as_output(name, self.file.encoded.codes_to_arrow(self.rg, name, chunk, self.counters))
                continue
            if name in self.ctx.partition_values or not self.ctx.has(name):
                arrays[name] = self._constant_array(name, n_sel)
            # byte arrays never take the dense path: a selected read copies each kept value
            # once, a full read plus take copies it twice
            elif dense and n_sel < self.n and self.ctx.flat(name) and not self._byte_array(name):
                full = self._read(name, None)
                arrays[name] = full.take(pa.array(selection.to_indices()))
            else:
                selective.append(name)
        if selective:
            # every other payload column in one pass: one plan, one fetch for all their pages
            before = self.counters.pages_skipped
            read = self.file.read_many(self.rg, selective, selection, self.counters, self.pages)
            for name, arr in zip(selective, read):
                arrays[name] = self._as_output(name, arr)
            self.profile.add("pages_skipped_lazily", self.counters.pages_skipped - before)
        return pa.Table.from_batches([self._batch(scan.output_columns, arrays, n_sel)])

    def _byte_array(self, name: str) -> bool:
        return self.file.byte_array(name)

    def _plain(self) -> pa.Table | None:
        """No filter in the scan: read every needed column whole, then filter."""
        scan = self.scan
        p = self.profile
        p.add("row_groups_read")
        p.add("rows_after_pruning", self.n)
        names = scan.needed_columns
        arrays = {name: self._read(name, None) for name in names}
        table = pa.Table.from_batches([self._batch(names, arrays, self.n)])
        if scan.bound is not None:
            t0 = time.perf_counter()
            mask = evaluate(scan.bound, table)
            p.time("filter", time.perf_counter() - t0)
            table = table.filter(pa.array(mask))
        return table.select(scan.output_columns) if table.num_rows else None

    def _filter_after_decode(self, selection: RowRanges, must_all: bool) -> pa.Table | None:
        """Late materialization off: decode every needed column for the candidate rows, then
        filter."""
        scan = self.scan
        names = scan.needed_columns
        sel = None if selection.row_count == self.n else selection
        arrays = {name: self._read(name, sel) for name in names}
        table = pa.Table.from_batches([self._batch(names, arrays, selection.row_count)])
        if not must_all and scan.bound is not None:
            t0 = time.perf_counter()
            mask = evaluate(scan.bound, table)
            self.profile.time("filter", time.perf_counter() - t0)
            table = table.filter(pa.array(mask))
        return table.select(scan.output_columns) if table.num_rows else None


def empty_table(schema: pa.Schema) -> pa.Table:
    """A table of no rows with exactly ``schema``, for every Arrow type: ``Schema.empty_table``
    refuses extension types (JSON, UUID, ... and lists, structs, maps and dictionaries of them)."""
    return pa.Table.from_arrays([pa.nulls(0, f.type) for f in schema], schema=schema)


def _group_by_column(parts: list[BoundExpr]) -> list[BoundExpr]:
    """Join the conjuncts that read the same single column (``x >= a`` and ``x < b``) into one,
    so the column is decoded, and its dictionary evaluated, once per row group. ``=`` / ``IN``
    on strings stay alone: they run on encoded pages."""
    groups: dict[str, list[BoundExpr]] = {}
    out: list[BoundExpr | str] = []
    for part in parts:
        cols = referenced_columns(part)
        if len(cols) != 1 or _needles(part) is not None or _contains_keys(part):
            out.append(part)
            continue
        (name,) = cols
        if name not in groups:
            groups[name] = []
            out.append(name)
        groups[name].append(part)
    return [conjunction(groups[item]) if isinstance(item, str) else item for item in out]


def _contains_keys(bound: BoundExpr) -> bool:
    """Whether a key filter is part of ``bound``."""
    stack = [bound]
    while stack:
        node = stack.pop()
        if isinstance(node, BoundKeyIn):
            return True
        stack.extend(c for c in (getattr(node, n, None) for n in ("left", "right", "child")) if c is not None)
    return False


def _bloom_candidate(bound: BoundExpr) -> bool:
    stack = [bound]
    while stack:
        node = stack.pop()
        if isinstance(node, BoundCompare) and node.op in ("=", "<=>"):
            return True
        if isinstance(node, BoundIn) and not node.negated:
            return True
        if isinstance(node, BoundKeyIn) and not node.negated and node.keys.exact and len(node.keys) <= BLOOM_PROBE_KEYS:
            return True
        for name in ("left", "right"):
            child = getattr(node, name, None)
            if child is not None:
                stack.append(child)
    return False


# --------------------------------------------------------------------------------------------
# the scan


@dataclass(frozen=True)
class _Unit:
    """One unit of the scan to read: the ``task``-th file (or byte range) of the plan, its
    unit ``number``; or, with ``error``, a file that could not be opened."""

    task: int
    info: FileInfo | FileSplit
    ctx: _FileContext | None
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


@dataclass
class _Plan:
    tasks: list[_FileTask] = field(default_factory=list)


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
    ) -> None:
        t0 = time.perf_counter()
        self.options = options or ScanOptions()
        self.filesystem = filesystem
        self.profile = Profile()
        #: the file (or byte range) whose read raised the error that ended the iteration
        self.failed_part: FileInfo | FileSplit | None = None
        self._sources: list[Any] = []
        gap = self.options.coalesce_gap
        self.reader_options = ReaderOptions(
            materialization_threshold=self.options.materialization_threshold,
            read=ReadOptions(coalesce_gap=gap) if gap >= 0 else None,
            partial_decompression=self.options.partial_decompression,
            timestamp_unit=self.options.timestamp_unit,
            verify_checksums=self.options.verify_checksums,
            retry=RetryPolicy(max_seconds=self.options.retry_seconds),
        )
        self._plan = _Plan()
        if isinstance(source, (list, tuple)) and source and all(isinstance(s, FileSplit) for s in source):
            self.dataset = None
            self._plan.tasks = [_FileTask(s) for s in source]
            partition_names: list[str] = []
            for s in source:
                for k in s.partition_values:
                    if k not in partition_names:
                        partition_names.append(k)
            if schema is None:
                from lazyscan.scan.dataset import merge_schemas

                schemas = []
                for i, s in enumerate(source):
                    with open_units(s.path, filesystem, self.reader_options, fmt=self.options.format) as f:
                        check_planned(s, f)
                        schemas.append(f.arrow_schema)
                        self._plan.tasks[i] = _FileTask(pinned(s, f))
                schema = merge_schemas(schemas)
                extra = [pa.field(k, pa.array([source[0].partition_values[k]]).type) for k in partition_names if schema.get_field_index(k) < 0]
                schema = pa.schema([*schema, *extra])
            self.partition_columns = set(partition_names)
        else:
            retry = self.reader_options.retry
            ds = discover(source, filesystem, retry=retry) if not isinstance(source, Dataset) else source
            ds.retry = retry
            if ds.format is None and self.options.format is not None:
                ds.format = self.options.format
            ds.use_timestamp_unit(self.options.timestamp_unit)
            self.dataset = ds
            self.filesystem = ds.filesystem
            if schema is None:
                schema = ds.schema(merge=self.options.merge_schema) if ds.files else ds.partition_schema
            # after the schema: the files it was read from are pinned to the versions read
            self._plan.tasks = [_FileTask(f) for f in ds.files]
            self.partition_columns = set(ds.partition_schema.names)
        self.dataset_schema: pa.Schema = schema
        #: column name -> its field in the dataset schema (looked up for every row group)
        self.field_of: dict[str, pa.Field] = {f.name: f for f in schema}
        names = schema.names
        if columns is None:
            self.output_columns = list(names)
        else:
            # resolved as the filter's names are: exactly, then ignoring case when one matches
            resolver = NameResolver(names, self.options.case_sensitive, schema.types)
            self.output_columns = [resolver.name(c) for c in columns]
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
        self.conjuncts: list[_Conjunct] = []
        if self.bound is not None:
            for part in _group_by_column(split_conjuncts(self.bound)):
                cols = tuple(sorted(referenced_columns(part)))
                sel, cost = _estimate(part, schema)
                partition_only = bool(cols) and all(c in self.partition_columns for c in cols)
                needles = None if partition_only else _needles(part)
                self.conjuncts.append(
                    _Conjunct(part, str(part), cols, partition_only, sel, cost, needles, _contains_keys(part))
                )
        self.predicate_columns = sorted({c for cj in self.conjuncts for c in cj.columns})
        self.payload_columns = [c for c in self.output_columns if c not in self.predicate_columns]
        self.needed_columns = list(dict.fromkeys([*self.output_columns, *self.predicate_columns]))
        self.order = PredicateOrder(self.conjuncts, self.options.adaptive_order)
        #: adaptive key filters (conjunct index -> switched off), see :meth:`_consider_key_switch`
        self.key_switch: dict[int, bool] = {
            i: False for i, c in enumerate(self.conjuncts)
            if isinstance(c.bound, BoundKeyIn) and c.bound.adaptive and not c.bound.negated
        }
        self.schema = pa.schema([schema.field(c) for c in self.output_columns])
        self._schemas: dict[tuple[str, ...], pa.Schema] = {tuple(self.output_columns): self.schema}
        self.profile.time("planning", time.perf_counter() - t0)
        self._consumed = False

    def schema_of(self, names: tuple[str, ...]) -> pa.Schema:
        """The schema of the dataset's columns ``names`` (built once per scan: row groups ask
        for the same few)."""
        found = self._schemas.get(names)
        if found is None:
            found = self._schemas[names] = pa.schema([self.field_of[c] for c in names])
        return found

    #: an adaptive key filter is judged after it has seen this many rows
    KEY_SWITCH_MIN_ROWS = 100_000

    def _consider_key_switch(self, i: int, profile: Profile) -> None:
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
        if pa.types.is_string(t) or pa.types.is_binary(t):
            return value.encode() if isinstance(value, str) else bytes(value)
        if pa.types.is_date32(t) or pa.types.is_timestamp(t):
            return arr.cast(pa.int32() if pa.types.is_date32(t) else pa.int64())[0].as_py()
        return arr[0].as_py()

    def _file_pruned(self, task: _FileTask) -> _Conjunct | None:
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
                self.profile.decide(c.text, _PARTITION.name)
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

    def _open(self, task: _FileTask) -> _FileContext | None:
        """The file of ``task`` opened for reading; None when its partition values rule it out
        (its units are counted as the partition tier's)."""
        self.profile.add("files")
        pruned_by = self._file_pruned(task)
        if pruned_by is None:
            return _FileContext(self, task)
        with open_units(task.info.path, self.filesystem, self.reader_options, self.options.format) as f:
            units = f.units_of_split(task.info.start, task.info.length) if isinstance(task.info, FileSplit) else range(f.num_units())
            for rg in units:
                rows = f.unit_rows(rg)
                self.profile.add("row_groups_total")
                self.profile.add("rows_total", rows)
                _record_ruled_out(self.profile, _RuledOut(_PARTITION, pruned_by), rows, decision=False)
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
        job = _RowGroupScan(ctx, rg)
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
        self._sources = []
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
                (_PARTITION.name, o.prune_partitions, lambda c: c.partition_only),
                (_STATISTICS.name, o.prune_statistics, lambda c: True),
                (_BLOOM.name, o.prune_bloom, lambda c: _bloom_candidate(c.bound)),
                (_DICTIONARY.name, o.prune_dictionary, lambda c: len(c.columns) == 1 and not c.partition_only),
                (_PAGE_INDEX.name, o.prune_page_index, lambda c: len(c.columns) == 1 and not c.partition_only),
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
    """
    if batch_size is not None:
        options["batch_size"] = batch_size
    if threads is not None:
        options["threads"] = threads
    opts = ScanOptions.from_mapping(options)
    return Scan(source, columns, where, filesystem=filesystem, schema=schema, options=opts)
