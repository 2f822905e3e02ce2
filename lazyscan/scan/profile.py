"""The profile of a scan: counters and timings by pruning tier and by phase, plus a decision log.

I/O counters: ``requests`` counts every request made to the files' stores, failed attempts
included; ``retries`` the attempts that repeated a failed one (object stores), ``cached_reads``
the small reads served from the surplus of an earlier request instead of a request of their own.
``pages_refetched``: pages fetched once more because their checksum did not match as fetched.

Tables: ``files_pruned_partition`` and ``files_pruned_table_stats`` count data files a
table's partition values or per-file statistics ruled out before they were opened;
``rows_removed_position_deletes`` the rows deletion vectors and position deletes removed (never
read), ``rows_removed_equality_deletes`` those Iceberg equality deletes removed.

Counters named ``row_groups_*`` count units of any format (Parquet row groups, ORC stripes);
``pages_*`` count finer units (Parquet pages, ORC's 10,000-row row groups). The names stay as
tests and users read them.

A :class:`Profile` is plain data (picklable, JSON-able) so Spark tasks can ship theirs back and
the driver can merge them. ``as_dict`` gives the numbers, ``table`` a readable rendering.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

COUNTERS = (
    "files",
    "files_pruned_partition",
    "files_pruned_table_stats",
    "row_groups_total",
    "row_groups_pruned_partition",
    "row_groups_pruned_stats",
    "row_groups_pruned_bloom",
    "row_groups_pruned_dictionary",
    "row_groups_read",
    "row_groups_without_survivors",
    "pages_total",
    "pages_pruned_index",
    "pages_pruned_bloom",
    "pages_skipped_lazily",
    "pages_read",
    "pages_refetched",
    "bytes_total",
    "bytes_read",
    "bytes_decompressed",
    "requests",
    "retries",
    "cached_reads",
    "rows_total",
    "rows_removed_position_deletes",
    "rows_removed_equality_deletes",
    "rows_after_pruning",
    "rows_returned",
    "values_decoded",
    "key_probes_dictionary",
    "key_probes_values",
)
#: ``retrying``: time lost to failed requests and the waits before retrying them (part of ``io``)
TIMINGS = ("planning", "io", "retrying", "decompress", "decode", "filter", "total")
#: per join (key) filter: what it removed at each tier and how it was probed
JOIN_FILTER_FIELDS = (
    "row_groups_partition",
    "rows_partition",
    "row_groups_statistics",
    "rows_statistics",
    "row_groups_bloom",
    "rows_bloom",
    "row_groups_dictionary",
    "rows_dictionary",
    "pages_page_index",
    "rows_page_index",
    "rows_probed",
    "rows_removed",
    "dictionary_probes",
    "value_probes",
    "probe_seconds",
    "switched_off",
)
_JOIN_TIERS = ("partition", "statistics", "bloom", "dictionary")


@dataclass
class Profile:
    """Counters (ints) and timings (seconds) of one scan, mergeable across threads and tasks."""

    counters: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    timings: dict[str, float] = field(default_factory=lambda: dict.fromkeys(TIMINGS, 0.0))
    #: per predicate: rows in, rows out, seconds (row-level evaluation)
    predicates: dict[str, dict[str, float]] = field(default_factory=dict)
    #: per predicate and tier: how many row groups / pages it ruled out
    decisions: dict[str, dict[str, int]] = field(default_factory=dict)
    #: per join filter (conjunct text, which names the filter's kind, size and fpp): see
    #: :data:`JOIN_FILTER_FIELDS`
    join_filters: dict[str, dict[str, float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @classmethod
    def part(cls) -> Profile:
        """An empty profile of part of a scan (one row group), to be merged into the scan's:
        it holds only the counters and timings that were added to it."""
        return cls(counters={}, timings={})

    def add(self, name: str, value: int = 1) -> None:
        with self._lock:
            self.counters[name] = self.counters.get(name, 0) + value

    def time(self, name: str, seconds: float) -> None:
        with self._lock:
            self.timings[name] = self.timings.get(name, 0.0) + seconds

    def decide(self, predicate: str, tier: str, count: int = 1) -> None:
        with self._lock:
            d = self.decisions.setdefault(predicate, {})
            d[tier] = d.get(tier, 0) + count

    def predicate_run(self, predicate: str, rows_in: int, rows_out: int, seconds: float) -> None:
        with self._lock:
            p = self.predicates.setdefault(predicate, {"rows_in": 0, "rows_out": 0, "seconds": 0.0})
            p["rows_in"] += rows_in
            p["rows_out"] += rows_out
            p["seconds"] += seconds

    def join_filter(self, predicate: str, **amounts: float) -> None:
        """Add ``amounts`` (names from :data:`JOIN_FILTER_FIELDS`) to the entry of a join filter."""
        with self._lock:
            d = self.join_filters.setdefault(predicate, dict.fromkeys(JOIN_FILTER_FIELDS, 0.0))
            for k, v in amounts.items():
                d[k] = d.get(k, 0) + v

    def merge(self, other: Profile) -> None:
        with self._lock:
            for k, v in other.counters.items():
                self.counters[k] = self.counters.get(k, 0) + v
            for k, t in other.timings.items():
                self.timings[k] = self.timings.get(k, 0.0) + t
            for pred, stats in other.predicates.items():
                p = self.predicates.setdefault(pred, {"rows_in": 0, "rows_out": 0, "seconds": 0.0})
                for k, amount in stats.items():
                    p[k] = p.get(k, 0) + amount
            for pred, tiers in other.decisions.items():
                d = self.decisions.setdefault(pred, {})
                for k, n in tiers.items():
                    d[k] = d.get(k, 0) + n
            for pred, amounts in other.join_filters.items():
                jf = self.join_filters.setdefault(pred, dict.fromkeys(JOIN_FILTER_FIELDS, 0.0))
                for k, amount in amounts.items():
                    jf[k] = jf.get(k, 0.0) + amount

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.counters)
        out.update({f"time_{k}": v for k, v in self.timings.items()})
        out["predicates"] = {k: dict(v) for k, v in self.predicates.items()}
        out["decisions"] = {k: dict(v) for k, v in self.decisions.items()}
        out["join_filters"] = {k: dict(v) for k, v in self.join_filters.items()}
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Profile:
        p = cls()
        for k, v in d.items():
            if k.startswith("time_"):
                p.timings[k[5:]] = float(v)
            elif k == "predicates":
                p.predicates = {a: dict(b) for a, b in v.items()}
            elif k == "decisions":
                p.decisions = {a: dict(b) for a, b in v.items()}
            elif k == "join_filters":
                p.join_filters = {a: dict(b) for a, b in v.items()}
            else:
                p.counters[k] = int(v)
        return p

    def __getitem__(self, name: str) -> Any:
        if name in self.counters:
            return self.counters[name]
        if name in self.timings:
            return self.timings[name]
        raise KeyError(name)

    def summary(self) -> str:
        """One line: rows, units (row groups, stripes) pruned, pages skipped, bytes read of total."""
        c = self.counters
        pruned = sum(c.get(k, 0) for k in c if k.startswith("row_groups_pruned_"))
        return (
            f"{c['rows_returned']:,} of {c['rows_total']:,} rows; "
            f"units (row groups, stripes) {c['row_groups_total'] - pruned:,}/{c['row_groups_total']:,} read "
            f"(pruned: stats {c['row_groups_pruned_stats']}, bloom {c['row_groups_pruned_bloom']}, "
            f"dictionary {c['row_groups_pruned_dictionary']}, partition {c['row_groups_pruned_partition']}); "
            f"pages skipped {c['pages_pruned_index'] + c['pages_skipped_lazily']:,}/{c['pages_total']:,}; "
            f"read {_mb(c['bytes_read'])} of {_mb(c['bytes_total'])}; "
            + (f"{c['retries']:,} requests retried ({self.timings.get('retrying', 0.0):.1f} s); " if c.get("retries") else "")
            + f"{self.timings['total']:.3f} s"
        )

    def table(self, join_filters: bool = True) -> str:
        """A readable multi-line rendering of counters and timings (and of the join filters)."""
        lines = ["counter                           value"]
        for k in COUNTERS:
            lines.append(f"  {k:<31} {self.counters.get(k, 0):>14,}")
        lines.append("timing (s, summed over threads)")
        for k in TIMINGS:
            lines.append(f"  {k:<31} {self.timings.get(k, 0.0):>14.4f}")
        if join_filters and self.join_filters:
            lines.append("join filters")
            lines.extend(f"  {line}" for line in self.join_filter_lines())
        return "\n".join(lines)

    def join_filter_lines(self) -> list[str]:
        """Per join filter: what it removed at each tier, its probes, whether it switched off."""
        lines = []
        for pred, j in self.join_filters.items():
            lines.append(pred)
            removed = []
            for tier in _JOIN_TIERS:
                if j.get(f"row_groups_{tier}"):
                    removed.append(f"{tier} {int(j[f'row_groups_{tier}']):,} row groups ({int(j[f'rows_{tier}']):,} rows)")
            if j.get("pages_page_index"):
                removed.append(f"page index {int(j['pages_page_index']):,} pages ({int(j['rows_page_index']):,} rows)")
            if j.get("rows_probed"):
                removed.append(f"rows {int(j['rows_removed']):,} of {int(j['rows_probed']):,} probed")
            lines.append("  removed: " + ("; ".join(removed) if removed else "nothing"))
            lines.append(
                f"  probes: {int(j.get('dictionary_probes', 0)):,} dictionary entries, "
                f"{int(j.get('value_probes', 0)):,} values, {j.get('probe_seconds', 0.0):.4f} s"
                + ("; switched off (the join filters)" if j.get("switched_off") else "")
            )
        return lines


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"
