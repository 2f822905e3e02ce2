"""Scan options: what a scan does (pruning tiers, late materialization, batching, threads).

Options arrive as keyword arguments of :func:`lazyscan.scan` or as strings from Spark's
``.option(...)``; :meth:`ScanOptions.from_mapping` validates names and converts values, and an
unknown name or a bad value raises :class:`lazyscan.errors.OptionError` listing what is accepted.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Any

from lazyscan.errors import OptionError


@dataclass(frozen=True)
class ScanOptions:
    """How one scan works. Every switch that changes *how* work is done leaves results unchanged.

    - ``enabled``: False reads everything plainly and filters after decoding (like ``pushdown``).
    - ``pushdown``: evaluate the filter inside the scan; False reads all rows, then filters.
    - ``prune_partitions`` / ``prune_statistics`` / ``prune_bloom`` / ``prune_dictionary`` /
      ``prune_page_index``: the pruning tiers, cheapest first.
    - ``late_materialization``: read payload columns only for rows that survived the filter.
    - ``adaptive_order``: reorder predicate columns by measured rows removed per second.
    - ``dictionary_eval``: evaluate predicates once per dictionary entry instead of per row.
    - ``materialization_threshold``: selected row ranges closer than this are decoded as one.
    - ``partial_decompression``: a Snappy page a selective read needs only in part is
      decompressed only as far as its selected values reach (a dictionary page up to the
      largest entry looked up).
    - ``dense_threshold``: when more than this fraction of a row group survives, payload columns
      of fixed width are read whole and then filtered (cheaper there than a selective read;
      byte-array columns are always read selectively, which copies each kept value once).
    - ``batch_size``: rows per output record batch. ``threads``: row groups read in parallel.
    - ``coalesce_gap``: byte ranges of one read (pages, ORC streams) closer than this many bytes
      are fetched in one request, the bytes between them too; -1 takes the source's policy, the
      same for every format (:class:`lazyscan.io.ReadOptions`: 0 on local files, 1 MiB on
      object stores).
    - ``prefetch``: on object stores, fetch the filter columns of the next row groups while the
      current one is read (row groups statistics rule out are not fetched; when the gap lets
      neighbouring row groups' ranges merge, as many as fit in one request).
    - ``format``: ``parquet`` or ``orc``; None recognizes each file by its extension or its
      first bytes.
    - ``case_sensitive``: resolve column names exactly only (Spark's
      ``spark.sql.caseSensitive``); by default a name that matches no column exactly matches
      the one column equal to it ignoring case; a file's columns (and struct fields) spelled in
      another case than the scan's schema are read the same way, and a folder's files spelling
      one column two ways give one column.
    - ``timestamp_unit``: the unit ORC timestamps are read in: ``us`` (Spark's
      ``TIMESTAMP``, every year from 1 to 9999; nanoseconds are floored to microseconds as
      Spark's ORC reader does) or ``ns`` (pyarrow's; a value outside 1677-09-21 to 2262-04-11
      is then an error naming file, stripe, column and row). Parquet timestamps keep the unit
      the file declares; INT96 is always microseconds.
    - ``time_zone``: the session time zone (Spark's ``spark.sql.session.timeZone``): a
      ``TIMESTAMP '...'`` or a string compared with a timestamp column without a zone of its
      own is wall-clock time there, and so are casts between timestamps and dates.
    - ``verify_checksums``: Parquet pages whose header holds a checksum (a CRC-32 of the page's
      stored bytes) are checked as they are fetched; a mismatch fetches the page once more,
      then fails the scan with an error naming file, row group, column and page.
    - ``retry_seconds``: on object stores, the time one request may take with its retries of
      transient failures (throttling, 5xx, reset connections, cut bodies, stalls; waits grow
      exponentially with jitter); past it the scan fails with a ``TransientSourceError``. 0: one
      attempt. Access denied and missing objects are never retried.
    - ``raw_files``: read the Parquet and ORC files of a Delta Lake or Apache Iceberg table's
      folder as plain files, on purpose (files the table removed included). Without it such a
      path (the table's folder, a folder or file inside it, a folder holding tables) is refused
      with a :class:`~lazyscan.errors.TableFolderError`: read as plain files it gives wrong rows.
    """

    enabled: bool = True
    pushdown: bool = True
    prune_partitions: bool = True
    prune_statistics: bool = True
    prune_bloom: bool = True
    prune_dictionary: bool = True
    prune_page_index: bool = True
    late_materialization: bool = True
    adaptive_order: bool = True
    dictionary_eval: bool = True
    materialization_threshold: int = 0
    partial_decompression: bool = True
    dense_threshold: float = 0.5
    batch_size: int = 65536
    threads: int = 0  # 0: one per core
    merge_schema: bool = True
    format: str | None = None
    time_zone: str = "UTC"
    coalesce_gap: int = -1
    prefetch: bool = True
    case_sensitive: bool = False
    timestamp_unit: str = "us"
    verify_checksums: bool = True
    retry_seconds: float = 60.0
    raw_files: bool = False

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    @classmethod
    def from_mapping(cls, values: dict[str, Any] | None = None, **kwargs: Any) -> ScanOptions:
        """Build options from keyword values or Spark option strings (case-insensitive names)."""
        merged = {**(values or {}), **kwargs}
        by_lower = {f.name.lower(): f for f in fields(cls)}
        out: dict[str, Any] = {}
        for key, raw in merged.items():
            f = by_lower.get(key.lower())
            if f is None:
                raise OptionError(
                    f"unknown scan option {key!r}; accepted: {', '.join(sorted(cls.names()))}"
                )
            out[f.name] = _convert(f.name, f.type, raw)
        if isinstance(out.get("format"), str):
            fmt = out["format"].strip().lower()
            out["format"] = None if fmt in ("", "auto") else fmt
        opts = cls(**out)
        opts.validate()
        return opts

    def validate(self) -> None:
        if self.batch_size <= 0:
            raise OptionError(f"batch_size must be positive, got {self.batch_size}")
        if self.threads < 0:
            raise OptionError(f"threads must be >= 0, got {self.threads}")
        if self.materialization_threshold < 0:
            raise OptionError("materialization_threshold must be >= 0")
        if self.coalesce_gap < -1:
            raise OptionError(f"coalesce_gap must be >= 0 (or -1: the source's default), got {self.coalesce_gap}")
        if not 0.0 <= self.dense_threshold <= 1.0:
            raise OptionError("dense_threshold must be between 0 and 1")
        if not 0.0 <= self.retry_seconds < float("inf"):
            raise OptionError(f"retry_seconds must be >= 0 and finite, got {self.retry_seconds}")
        if self.timestamp_unit not in ("us", "ns"):
            raise OptionError(f"timestamp_unit must be 'us' or 'ns', got {self.timestamp_unit!r}")
        from lazyscan.format.units import FORMAT_NAMES

        if self.format is not None and self.format not in FORMAT_NAMES:
            raise OptionError(f"format must be one of {', '.join(map(repr, FORMAT_NAMES))}, got {self.format!r}")
        from lazyscan.predicate.casts import check_time_zone

        try:
            check_time_zone(self.time_zone)
        except ValueError as e:
            raise OptionError(f"time_zone: {e}") from None

    @property
    def effective_threads(self) -> int:
        return self.threads or max(1, os.cpu_count() or 1)

    @property
    def filter_in_scan(self) -> bool:
        return self.enabled and self.pushdown


def _convert(name: str, ftype: Any, raw: Any) -> Any:
    tname = ftype if isinstance(ftype, str) else getattr(ftype, "__name__", str(ftype))
    try:
        if tname == "bool":
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in ("true", "1", "yes", "on"):
                return True
            if text in ("false", "0", "no", "off"):
                return False
            raise ValueError(raw)
        if tname == "int":
            if isinstance(raw, bool):
                raise ValueError(raw)
            return int(raw)
        if tname == "float":
            return float(raw)
    except (TypeError, ValueError):
        raise OptionError(f"option {name!r} expects a {tname}, got {raw!r}") from None
    return raw
