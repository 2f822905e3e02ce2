"""A file being read by a scan.

- :class:`FileTask`: a file (or byte range of a file) of the plan, and which of its units to read;
- :class:`FileContext`: one open file of the scan; it must be the version the plan was made
  from (identity and footer digest, see :func:`~lazyscan.scan.dataset.check_planned`) when it is
  opened and again after its last unit is read, else a :class:`FileChangedError` names it. It
  fetches the filter columns of the next units ahead on object stores.
- :class:`PlannedScan`: what reading a file and its units asks of the scan (the public
  attributes of :class:`~lazyscan.scan.scan.Scan` after planning).
- :func:`columns_by_case`: the file columns that hold the scan's columns spelled in another
  case (Spark's readers match them unless ``spark.sql.caseSensitive``); a file that spells
  any is read under the scan's names through the same rename layer as a table's data files;
  :func:`respelled_type`: the same for the fields of nested columns.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa

from lazyscan.errors import FileChangedError, LazyScanError, UnsupportedFeatureError
from lazyscan.format.counters import ReadCounters
from lazyscan.format.options import ReaderOptions
from lazyscan.format.selection import RowRanges
from lazyscan.format.statistics import ColumnStats
from lazyscan.format.units import UnitFile, open_units
from lazyscan.io.source import FileIdentity, ReadOptions
from lazyscan.predicate import Answer, evaluate_statistics, ruled_out_by_statistics
from lazyscan.predicate.bound import BoundExpr
from lazyscan.scan.conjuncts import Conjunct, PredicateOrder
from lazyscan.scan.dataset import Dataset, FileInfo, FileSplit, check_planned
from lazyscan.scan.options import ScanOptions
from lazyscan.scan.profile import Profile
from lazyscan.scan.table_source import TableFile, TableUnitFile

#: row groups whose filter columns a scan on an object store fetches ahead, at least
READ_AHEAD = 2


class PlannedScan(Protocol):
    """What reading a file and its units asks of the scan, once it is planned."""

    options: ScanOptions
    reader_options: ReaderOptions
    filesystem: Any
    #: the dataset the plan lists, whose files opened while planning are kept (None: byte ranges)
    dataset: Dataset | None
    bound: BoundExpr | None
    conjuncts: list[Conjunct]
    order: PredicateOrder
    #: adaptive key filters: conjunct index -> switched off
    key_switch: dict[int, bool]
    #: column name -> its field in the dataset schema
    field_of: dict[str, pa.Field]
    dataset_schema: pa.Schema
    output_columns: list[str]
    predicate_columns: list[str]
    payload_columns: list[str]
    needed_columns: list[str]

    def schema_of(self, names: tuple[str, ...]) -> pa.Schema: ...

    def partition_storage(self, name: str, value: Any) -> Any: ...

    def consider_key_switch(self, i: int, profile: Profile) -> None: ...


@dataclass
class FileTask:
    """A file (or byte range of a file) of the plan, and which of its units to read."""

    info: FileInfo | FileSplit
    row_groups: list[int] | None = None  # None: all, or chosen by split midpoints


def columns_by_case(path: str, stored: Collection[str], wanted: Iterable[str], scan_names: Collection[str]) -> dict[str, str]:
    """The columns of ``wanted`` a file stores (``stored``: its top-level names, file ``path``)
    only in another case, each with the file's spelling: a scan column the file lacks under its
    exact name takes the one file column equal to it ignoring case, unless that column is
    another scan column exactly (``scan_names``). Two such file columns raise
    :class:`UnsupportedFeatureError` naming both spellings: picking one would be a guess (Spark's
    Parquet reader refuses them too, "Found duplicate field(s) ... in case-insensitive mode")."""
    present = set(stored)
    missing = [n for n in wanted if n not in present]
    if not missing:
        return {}
    folded: dict[str, list[str]] = {}
    for name in stored:
        if name not in scan_names:
            folded.setdefault(name.lower(), []).append(name)
    found: dict[str, str] = {}
    for name in missing:
        similar = folded.get(name.lower(), [])
        if len(similar) > 1:
            spellings = " and ".join(repr(n) for n in similar)
            raise UnsupportedFeatureError(
                f"the file's columns {spellings} both match the scan's column {name!r} ignoring case; "
                "read with case_sensitive=True (Spark: spark.sql.caseSensitive=true) to match names exactly",
                file=path, column=name,
            )
        if similar:
            found[name] = similar[0]
    return found


def respelled_type(have: pa.DataType, want: pa.DataType, path: str, column: str) -> pa.DataType:
    """``have`` (a nested column's type in file ``path``) with its struct fields, at any depth,
    spelled as ``want`` (the scan's type) spells them where a field lacks its exact name there
    and one of ``want``'s fields equals it ignoring case (Spark's Parquet reader matches nested
    fields so: ParquetReadSupport.clipParquetGroupFields). Two fields of one struct matching one
    field of ``want`` raise :class:`UnsupportedFeatureError`; the rest of the type is kept."""
    if pa.types.is_struct(have) and pa.types.is_struct(want):
        wanted = {want.field(i).name: want.field(i) for i in range(want.num_fields)}
        folded: dict[str, list[str]] = {}
        for n in wanted:
            folded.setdefault(n.lower(), []).append(n)
        stored = {have.field(i).name for i in range(have.num_fields)}
        fields: list[pa.Field] = []
        taken: dict[str, str] = {}  # the scan's field -> the file's field spelling it
        for i in range(have.num_fields):
            f = have.field(i)
            name = f.name
            if name not in wanted:
                similar = [n for n in folded.get(name.lower(), []) if n not in stored]
                if len(similar) == 1:
                    name = similar[0]
                    if name in taken:
                        raise UnsupportedFeatureError(
                            f"the fields {taken[name]!r} and {f.name!r} of a struct both match the scan's field "
                            f"{name!r} ignoring case; read with case_sensitive=True (Spark: "
                            "spark.sql.caseSensitive=true) to match names exactly",
                            file=path, column=column,
                        )
                    taken[name] = f.name
            inner = respelled_type(f.type, wanted[name].type, path, column) if name in wanted else f.type
            fields.append(f.with_name(name).with_type(inner))
        return pa.struct(fields)
    if pa.types.is_map(have) and pa.types.is_map(want):
        key = have.key_field.with_type(respelled_type(have.key_type, want.key_type, path, column))
        item = have.item_field.with_type(respelled_type(have.item_type, want.item_type, path, column))
        return pa.map_(key, item, have.keys_sorted)
    lists = (pa.types.is_list, pa.types.is_large_list, pa.types.is_fixed_size_list)
    for is_list in lists:
        if is_list(have) and any(other(want) for other in lists):
            value = have.value_field.with_type(respelled_type(have.value_type, want.value_type, path, column))
            if pa.types.is_large_list(have):
                return pa.large_list(value)
            if pa.types.is_fixed_size_list(have):
                return pa.list_(value, have.list_size)
            return pa.list_(value)
    return have


class _RespelledFile(TableUnitFile):
    """A plain file under the scan's column names (:func:`columns_by_case`); nested columns
    come back as stored, for the scan to spell their fields as it does
    (:meth:`FileContext.respelled`)."""

    def read(self, unit: int, name: str, rows: RowRanges | None, counters: ReadCounters, cache: Any) -> pa.Array:
        return self.inner.read(unit, self.names[name], rows, counters, cache)

    def read_many(
        self, unit: int, names: list[str], rows: RowRanges, counters: ReadCounters, cache: Any
    ) -> list[pa.Array]:
        return self.inner.read_many(unit, [self.names[n] for n in names], rows, counters, cache)


def _size_only(identity: FileIdentity) -> bool:
    """Whether ``identity`` holds a size alone (a store that gives no time, ETag nor version)."""
    return identity.mtime_ns is None and identity.etag is None and identity.version_id is None


class FileContext:
    """An open file and what the scan needs to know about it."""

    def __init__(self, scan: PlannedScan, task: FileTask) -> None:
        self.scan = scan
        self.info = task.info
        read = task.info.table
        #: the format the file is opened as (a table's plan names it)
        self.format = read.file_format if read is not None else scan.options.format
        #: a data file of a table: its logical columns, constants and deletes
        self.table: TableFile | None = None
        self.file: UnitFile = self._open_checked(task)
        self.partition_values = dict(task.info.partition_values)
        if self.table is not None:
            self.partition_values.update(self.table.constants)
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
        #: (column, its type in the file) -> that type spelled as the scan spells its fields
        self._respelled: dict[tuple[str, pa.DataType], pa.DataType] = {}

    def _open_checked(self, task: FileTask) -> UnitFile:
        """The file of ``task`` open (the one opened while planning, when kept), checked to be the
        version the plan was made from, and read under the scan's names: a table's logical
        columns, or columns the file spells in another case."""
        scan = self.scan
        kept = scan.dataset.take_opened(task.info.path) if scan.dataset is not None else None
        if kept is not None and _size_only(kept.source.identity):
            # nothing but its bytes tells another version of this file apart: opened again
            # below, and the footer read compared with the plan's
            kept.close()
            kept = None
        if kept is not None:
            kept.use_options(scan.reader_options)
            file: UnitFile = kept
        else:
            file = open_units(task.info.path, scan.filesystem, scan.reader_options, self.format)
        try:
            if kept is not None:
                # opened while planning: the scan reads with that open's footer, so the file must
                # still be that version (one stat, or one HEAD request on an object store)
                kept.source.check_unchanged(kept.source.identity)
            else:
                # the version the plan was made from (no request: the open's own stat or HEAD
                # and its tail read tell)
                check_planned(task.info, file)
            if task.info.table is not None:
                self.table = TableFile(file, task.info.table, scan.dataset_schema)
                return self.table.file
            if not scan.options.case_sensitive:
                return self._under_scan_names(file, task.info.partition_values)
            return file
        except BaseException:
            file.close()
            raise

    def _under_scan_names(self, file: UnitFile, partition_values: Collection[str]) -> UnitFile:
        """``file`` read under the scan's column names when it spells some of the columns the
        scan reads from it in another case (``file`` itself when it spells none so); the
        partition columns come from folder names."""
        scan = self.scan
        wanted = [n for n in scan.needed_columns if n not in partition_values]
        if all(file.has(n) for n in wanted):
            return file  # every name matches exactly (the usual file): nothing to look for
        names_in_file = file.arrow_schema.names
        stored = set(names_in_file)
        respelled = columns_by_case(file.path, names_in_file, wanted, scan.field_of)
        if not respelled:
            return file
        names = {n: respelled.get(n, n) for n in wanted if n in respelled or n in stored}
        return _RespelledFile(file, names, scan.dataset_schema)

    def respelled(self, name: str, arr: pa.Array) -> pa.Array:
        """The nested column ``name`` read from the file, its struct fields spelled as the scan
        spells them (:func:`respelled_type`; a view, nothing copied), unless ``case_sensitive``."""
        want = self.scan.field_of[name].type
        if arr.type == want or self.scan.options.case_sensitive:
            return arr
        key = (name, arr.type)
        spelled = self._respelled.get(key)
        if spelled is None:
            spelled = self._respelled[key] = respelled_type(arr.type, want, self.file.path, name)
        return arr if spelled == arr.type else arr.view(spelled)

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
        with open_units(self.info.path, scan.filesystem, scan.reader_options, self.format) as again:
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
                ranges += self._read_ahead_ranges(r)
            self.file.source.prefetch(ranges, opts)

    def _read_ahead_ranges(self, rg: int) -> list[tuple[int, int]]:
        """The filter columns' bytes unit ``rg`` will read first, if cheap checks say it
        will read them whole: none when statistics rule it out or the page index would pick
        pages; a dictionary alone where the dictionary may rule it out; only columns that a
        conjunct reads alone."""
        scan = self.scan
        opts = scan.options
        if not opts.filter_in_scan or not scan.conjuncts:
            return []
        if opts.prune_statistics:
            stats = self.statistics(rg, self.file.unit_rows(rg), scan.predicate_columns)
            answers = [evaluate_statistics(c.bound, stats) for c in scan.conjuncts]
            if any(a is Answer.CANNOT_MATCH for a in answers) or all(a is Answer.MUST_MATCH for a in answers):
                return []
        # only columns alone in a conjunct: how much of the others a unit reads depends
        # on the rows earlier conjuncts leave
        single = [c for c in scan.conjuncts if len(c.columns) == 1 and self.flat(c.columns[0]) and c.columns[0] not in self.partition_values]
        if opts.prune_page_index:
            for c in single:
                fs = self.file.finer_statistics(rg, c.columns[0])
                if fs is not None and any(ruled_out_by_statistics(c.bound, c.columns[0], fs[0])):
                    return []  # the page index picks pages: they are fetched when known
        alone = list(dict.fromkeys(c.columns[0] for c in single))
        return self.file.read_ahead_ranges(rg, alone, opts.prune_dictionary or opts.dictionary_eval)

    def statistics(self, rg: int, rows: int, names: Iterable[str]) -> dict[str, ColumnStats]:
        """Statistics of columns ``names`` in unit ``rg`` of ``rows`` rows: a partition
        column's value, all NULL for a column the file lacks, the file's own for a flat column
        (none where it has none)."""
        out: dict[str, ColumnStats] = {}
        for name in names:
            if name in self.partition_values:
                v = self.scan.partition_storage(name, self.partition_values[name])
                nulls = rows if v is None else 0
                out[name] = ColumnStats(v, v, nulls, rows)
            elif not self.has(name):
                out[name] = ColumnStats(None, None, rows, rows)  # missing column: all NULL
            elif self.flat(name):
                st = self.file.statistics(rg, name)
                if st is not None:
                    out[name] = st
        return out

    def has(self, name: str) -> bool:
        return self.file.has(name)

    def flat(self, name: str) -> bool:
        return self.file.flat(name)
