"""The per-unit algorithm (a unit: a Parquet row group, an ORC stripe) and its pruning tiers.

:class:`UnitScan` reads one unit as a loop over the tiers, cheapest first: statistics -> Bloom
filters -> dictionaries -> page index -> values of predicate columns (each decoded only for rows
that survived the previous step, dictionary-encoded ones evaluated per dictionary entry) ->
payload columns read only for surviving rows. Each tier is a method that rules the unit out (a
:class:`RuledOut` naming :class:`Tier` and conjunct) or narrows its selection;
:func:`record_ruled_out` is the one place that counts what a tier removed (profile counter,
decision log, join filter). The partition tier rules out whole files, before they are opened
(:class:`~lazyscan.scan.scan.Scan`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from lazyscan.format.counters import ReadCounters
from lazyscan.format.selection import RowRanges
from lazyscan.format.statistics import ColumnStats
from lazyscan.format.units import EncodedChunk
from lazyscan.predicate import (
    Answer,
    evaluate,
    evaluate_bloom,
    evaluate_on_dictionary,
    evaluate_statistics,
    ruled_out_by_statistics,
)
from lazyscan.scan.conjuncts import Conjunct, bloom_candidate
from lazyscan.scan.files import FileContext
from lazyscan.scan.profile import Profile
from lazyscan.scan.table_source import equality_deleted


def _is_string_type(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t))


def _is_binary_type(t: pa.DataType) -> bool:
    return bool(pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t))


@dataclass(frozen=True)
class Tier:
    """A pruning tier that can rule out whole units."""

    #: its name in the decision log, in explain and in the join filters' fields
    name: str
    #: the profile counter of the units it ruled out (names kept from Parquet: row groups)
    counter: str


PARTITION = Tier("partition", "row_groups_pruned_partition")
STATISTICS = Tier("statistics", "row_groups_pruned_stats")
BLOOM = Tier("bloom", "row_groups_pruned_bloom")
DICTIONARY = Tier("dictionary", "row_groups_pruned_dictionary")
PAGE_INDEX = Tier("page_index", "row_groups_pruned_page_index")


@dataclass(frozen=True)
class RuledOut:
    """A unit a tier ruled out whole, and for which conjunct (None: the conjuncts together,
    as when the page index leaves no finer unit)."""

    tier: Tier
    conjunct: Conjunct | None
    #: finer units of the predicate columns left unread (page index)
    pages: int = 0


def record_ruled_out(profile: Profile, ruled_out: RuledOut, rows: int, decision: bool = True) -> None:
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


class UnitScan:
    """Scans one unit; returns its surviving rows as a table (or None) and a profile."""

    def __init__(self, ctx: FileContext, rg: int) -> None:
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

    def _stats_for(self, names: Iterable[str]) -> dict[str, ColumnStats]:
        return self.ctx.statistics(self.rg, self.n, names)

    def _might_contain(self, name: str, values: list[Any]) -> list[bool] | None:
        if not self.ctx.flat(name):
            return None
        return self.file.might_contain(self.rg, name, values, self._blooms)

    def _finer_blooms(self, c: Conjunct, name: str) -> Callable[[int], Callable[[str, list[Any]], list[bool] | None]] | None:
        """For a conjunct Bloom filters can rule out, the Bloom answers of each finer unit."""
        if not bloom_candidate(c.bound):
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
        return self._as_output(name, arr) if self.ctx.flat(name) else self.ctx.respelled(name, arr)

    def _as_output(self, name: str, arr: pa.Array) -> pa.Array:
        want = self.scan.field_of[name].type
        if arr.type == want:
            return arr
        if not self.ctx.flat(name):
            # a cast matches struct fields by exact name: fields spelled in another case first
            arr = self.ctx.respelled(name, arr)
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

    def _live_rows(self) -> RowRanges:
        """The unit's rows a table keeps (deletion vectors and position deletes removed, before
        any value is read); every row of a plain file."""
        table = self.ctx.table
        if table is None:
            return RowRanges.all(self.n)
        live = table.live_rows(self.rg, self.n)
        if live.row_count < self.n:
            self.profile.add("rows_removed_position_deletes", self.n - live.row_count)
        return live

    def _rows_to_filter(self, live: RowRanges) -> RowRanges:
        """The rows the tiers and row-level predicates start from: every row of the unit when
        more than ``dense_threshold`` of them are live, else the live rows."""
        if live.row_count == self.n or live.row_count > self.opts.dense_threshold * self.n:
            return RowRanges.all(self.n)
        return live

    def _without_equality_deletes(self, selection: RowRanges) -> RowRanges:
        """``selection`` without the rows a table's equality deletes remove: their key columns
        read for the selected rows (kept for the payload), the rows whose key is deleted dropped."""
        table = self.ctx.table
        if table is None or not table.equality_deletes or selection.is_empty:
            return selection
        t0 = time.perf_counter()
        arrays = {name: self._decoded(name, selection) for name in table.equality_columns}
        gone = equality_deleted(table.equality_deletes, arrays)
        self.profile.time("filter", time.perf_counter() - t0)
        removed = int(gone.sum())
        if not removed:
            return selection
        self.profile.add("rows_removed_equality_deletes", removed)
        return RowRanges.from_indices(selection.to_indices()[~gone])

    def _run(self) -> pa.Table | None:
        scan = self.scan
        conjuncts = scan.conjuncts
        live = self._live_rows()
        if live.is_empty:
            return None  # every row deleted: nothing is read
        if not self.opts.filter_in_scan or not conjuncts:
            return self._plain(live)
        if all(scan.key_switch.get(i) for i in range(len(conjuncts))):
            return self._plain(live)  # only adaptive key filters, all switched off: the join filters
        # deleted rows are filtered with the others when live rows are most of the unit: the
        # filter columns decode whole pages instead of thousands of ranges between deleted rows,
        # and the deletes narrow the survivors before any payload is read
        unit = _UnitPruning(self._rows_to_filter(live))
        for tier in (self._by_statistics, self._by_bloom, self._by_dictionary, self._by_page_index):
            ruled_out = tier(unit)
            if ruled_out is not None:
                record_ruled_out(self.profile, ruled_out, self.n)
                return None
        p = self.profile
        p.add("row_groups_read")
        candidates = unit.selection if live.row_count == self.n else unit.selection.intersect(live)
        p.add("rows_after_pruning", candidates.row_count)
        if not self.opts.late_materialization:
            return self._filter_after_decode(candidates, unit.must_match)
        selection = unit.selection if unit.must_match else self._by_values(unit.selection)
        if live.row_count < self.n:
            selection = selection.intersect(live)
        selection = self._without_equality_deletes(selection)
        # payload: only for surviving rows
        if selection.is_empty:
            p.add("row_groups_without_survivors")
            p.add("pages_skipped_lazily", self.file.finer_units_of(self.rg, self.ctx.counted_payload))
            return None
        return self._materialize(selection)

    # ---- the tiers, cheapest first: each rules the unit out or narrows its selection -----------

    def _by_statistics(self, unit: _UnitPruning) -> RuledOut | None:
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
                return RuledOut(STATISTICS, c)
            answers.append(a)
        unit.must_match = all(a is Answer.MUST_MATCH for a in answers)
        return None

    def _by_bloom(self, unit: _UnitPruning) -> RuledOut | None:
        """Bloom filters, while statistics leave the unit undecided."""
        if not self.opts.prune_bloom or unit.must_match:
            return None
        for c in self.scan.conjuncts:
            if bloom_candidate(c.bound) and evaluate_bloom(c.bound, self._might_contain) is Answer.CANNOT_MATCH:
                return RuledOut(BLOOM, c)
        return None

    def _by_dictionary(self, unit: _UnitPruning) -> RuledOut | None:
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
                    return RuledOut(DICTIONARY, c)
            if opts.dictionary_eval:
                self.dict_masks[i] = (mask, passes_null)
        return None

    def _by_page_index(self, unit: _UnitPruning) -> RuledOut | None:
        """Statistics (and Bloom filters) of the finer units (pages, ORC row groups): the
        selection narrows to the finer units each single-column conjunct may match; none left
        rules the unit out."""
        if not self.opts.prune_page_index or unit.must_match:
            return None
        for c in self.scan.conjuncts:
            if len(c.columns) == 1 and self.ctx.flat(c.columns[0]):
                unit.selection = self._finer_units_left(c, unit.selection)
        if unit.selection.is_empty:
            return RuledOut(PAGE_INDEX, None, self.file.finer_units_of(self.rg, self.ctx.counted_predicate))
        return None

    def _finer_units_left(self, c: Conjunct, selection: RowRanges) -> RowRanges:
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
        p.decide(c.text, PAGE_INDEX.name, pruned)
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
            scan.consider_key_switch(i, self.profile)
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
            elif n_sel < self.n and self._dense(name, n_sel):
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

    def _whole_or_selected(self, name: str, selection: RowRanges) -> pa.Array:
        """Column ``name`` for ``selection``: read whole when it selects every row, reused when
        an equality delete read it already."""
        if name in self.decoded:
            return self._decoded(name, selection)
        if selection.row_count == self.n:
            return self._read(name, None)
        if self._dense(name, selection.row_count):
            # most rows, the others scattered (deleted rows): whole pages decode faster than
            # the many ranges between them
            return self._read(name, None).take(pa.array(selection.to_indices()))
        return self._read(name, selection)

    def _dense(self, name: str, rows: int) -> bool:
        """Whether column ``name`` is read whole and narrowed for ``rows`` of the unit's rows:
        more than ``dense_threshold`` of them, and values of a fixed width (a selected read
        copies each kept byte-array value once, a whole read plus take twice)."""
        return (
            rows > self.opts.dense_threshold * self.n
            and name not in self.ctx.partition_values
            and self.ctx.has(name)
            and self.ctx.flat(name)
            and not self._byte_array(name)
        )

    def _byte_array(self, name: str) -> bool:
        return self.file.byte_array(name)

    def _plain(self, live: RowRanges) -> pa.Table | None:
        """No filter in the scan: read every needed column whole (the ``live`` rows of a
        table's file), then filter."""
        p = self.profile
        p.add("row_groups_read")
        selection = self._without_equality_deletes(live)
        p.add("rows_after_pruning", selection.row_count)
        if selection.is_empty:
            return None
        return self._read_and_filter(selection, True)

    def _read_and_filter(self, selection: RowRanges, filtering: bool) -> pa.Table | None:
        """Every needed column for ``selection``, then the scan's filter when ``filtering``."""
        scan = self.scan
        names = scan.needed_columns
        arrays = {name: self._whole_or_selected(name, selection) for name in names}
        table = pa.Table.from_batches([self._batch(names, arrays, selection.row_count)])
        if filtering and scan.bound is not None:
            t0 = time.perf_counter()
            mask = evaluate(scan.bound, table)
            self.profile.time("filter", time.perf_counter() - t0)
            table = table.filter(pa.array(mask))
        return table.select(scan.output_columns) if table.num_rows else None

    def _filter_after_decode(self, selection: RowRanges, must_all: bool) -> pa.Table | None:
        """Late materialization off: decode every needed column for the candidate rows, then
        filter."""
        selection = self._without_equality_deletes(selection)
        if selection.is_empty:
            return None
        return self._read_and_filter(selection, not must_all)

