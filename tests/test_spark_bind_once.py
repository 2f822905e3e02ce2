"""A Spark read binds each filter once, on the driver, and runs one scan per task.

In-process, with the data source's reader objects (no JVM): the driver binds every predicate
(the ``where`` option, key filters, pushed filters) once against the listing's scan schema; the
tasks get the bound predicates (pickled, as Spark ships the reader) and bind nothing; a task's
byte ranges are read by one :class:`~lazyscan.scan.Scan`, so its adaptive state (predicate
order, key filter switches) carries from one range to the next, while each batch keeps its own
range's partition values and path, and an error names the range it came from.
"""

from __future__ import annotations

import pickle
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import lazyscan.spark.source
from lazyscan.errors import PredicateError
from lazyscan.predicate import bind, evaluate, parse_predicate
from lazyscan.predicate.keys import KeyFilter, key_filter
from lazyscan.scan.dataset import FileInfo
from lazyscan.scan.scan import Scan
from lazyscan.spark.options import KEY_FILTER_PREFIX
from lazyscan.spark.planning import ScanTask, split_files
from lazyscan.spark.source import LazyScanDataSource, LazyScanReader, LazyScanReadError

ROWS_PER_GROUP = 40_000
GROUPS = 6


@pytest.fixture
def partitioned(tmp_path: Path) -> Path:
    """``year=2020`` and ``year=2021``, each one file of six row groups."""
    root = tmp_path / "t"
    rng = np.random.default_rng(7)
    for year in (2020, 2021):
        n = ROWS_PER_GROUP * GROUPS
        folder = root / f"year={year}"
        folder.mkdir(parents=True)
        table = pa.table(
            {
                "k": pa.array(np.arange(n, dtype=np.int64) + year * 1_000_000),
                "v": pa.array(rng.integers(0, 1000, n), pa.int64()),
                "s": pa.array([f"s{i % 97}" for i in range(n)]),
            }
        )
        pq.write_table(table, folder / "part-0.parquet", row_group_size=ROWS_PER_GROUP, use_dictionary=False)
    return root


def _reference(root: Path) -> pa.Table:
    return pq.read_table(root, partitioning="hive").cast(
        pa.schema([("k", pa.int64()), ("v", pa.int64()), ("s", pa.string()), ("year", pa.int32())])
    )


class _Binds:
    """Counts calls of :func:`lazyscan.predicate.bind` through every name it is imported as."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        original = bind

        def counting(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return original(*args, **kwargs)

        for name, module in list(sys.modules.items()):
            if name.startswith("lazyscan") and getattr(module, "bind", None) is original:
                monkeypatch.setattr(module, "bind", counting)


def _reader(root: Path, **options: str) -> LazyScanReader:
    source = LazyScanDataSource({"path": str(root), **options})
    return source.reader(source.schema())


def _read_all(reader: LazyScanReader) -> Iterator[pa.RecordBatch]:
    """Every task of the reader as Spark runs them: the reader pickled to the executors."""
    shipped = pickle.dumps(reader)
    for task in reader.partitions():
        yield from pickle.loads(shipped).read(pickle.loads(pickle.dumps(task)))


def _sorted(table: pa.Table) -> pa.Table:
    return table.sort_by([("k", "ascending")])


def test_the_driver_binds_each_filter_once_and_the_tasks_never(partitioned: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wanted = pa.array(np.arange(2021_000_000, 2021_000_000 + ROWS_PER_GROUP * GROUPS, 3, dtype=np.int64))
    keys = key_filter(wanted)
    binds = _Binds(monkeypatch)
    reader = _reader(
        partitioned,
        where="v < 500 AND year = 2021",
        maxPartitionBytes="1000000",
        **{f"{KEY_FILTER_PREFIX}k": keys.to_text()},
    )
    # the where option and the key filter, each bound once
    assert binds.calls == 2
    got = pa.Table.from_batches(list(_read_all(reader)))
    assert binds.calls == 2, "a task bound the filter again"
    ref = _reference(partitioned)
    want = ref.filter(pc.and_(pc.and_(pc.less(ref["v"], 500), pc.equal(ref["year"], 2021)), pc.is_in(ref["k"], wanted)))
    assert want.num_rows > 0
    assert _sorted(got).equals(_sorted(want.select(got.column_names)))


def test_pushed_filters_are_bound_once(partitioned: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pyspark.sql.datasource import EqualTo, LessThan

    reader = _reader(partitioned, pushFilters="true")
    binds = _Binds(monkeypatch)
    assert reader.pushFilters([LessThan(("v",), 10), EqualTo(("year",), 2020)]) == []
    assert binds.calls == 2
    # the partition filter prunes files with the bound predicate: no bind
    tasks = [t for t in reader.partitions() if isinstance(t, ScanTask)]
    assert {s.path for t in tasks for s in t.splits} == {str(partitioned / "year=2020" / "part-0.parquet")}
    got = pa.Table.from_batches(list(_read_all(reader)))
    assert binds.calls == 2
    ref = _reference(partitioned)
    want = ref.filter(pc.and_(pc.less(ref["v"], 10), pc.equal(ref["year"], 2020)))
    assert _sorted(got).equals(_sorted(want.select(got.column_names)))


def test_a_bound_filter_with_key_filters_pickles(partitioned: Path) -> None:
    keys = key_filter(pa.array(np.arange(2020_000_000, 2020_000_000 + 240_000, 2, dtype=np.int64)))
    reader = _reader(partitioned, **{f"{KEY_FILTER_PREFIX}k": keys.to_text()})
    shipped = pickle.dumps(reader)
    # the key filter travels once, as its bound predicate
    assert len(shipped) < len(pickle.dumps(keys)) + 20_000
    again = pickle.loads(shipped)
    assert str(again.where) == str(reader.where)
    assert isinstance(again.where.keys, KeyFilter)


def test_a_filter_bound_by_the_caller_is_used_as_given(partitioned: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = _reader(partitioned)
    bound = bind(parse_predicate("s = 's5' AND v >= 990"), first.listing.scan_schema)
    binds = _Binds(monkeypatch)
    reader = LazyScanReader(first.settings, first.listing, first.schema, bound_filter=bound)
    got = pa.Table.from_batches(list(_read_all(reader)))
    assert binds.calls == 0
    ref = _reference(partitioned)
    want = ref.filter(pc.and_(pc.equal(ref["s"], "s5"), pc.greater_equal(ref["v"], 990)))
    assert want.num_rows > 0
    assert _sorted(got).equals(_sorted(want.select(got.column_names)))


def test_a_filter_bound_to_another_schema_is_refused(partitioned: Path) -> None:
    other = bind(parse_predicate("v < 5"), pa.schema([("v", pa.int32())]))
    with pytest.raises(PredicateError, match="int32"):
        Scan(str(partitioned), where=other)


def _one_task(reader: LazyScanReader, max_split_bytes: int) -> ScanTask:
    """Every file of the reader cut into byte ranges, all in one task."""
    files = list(reader.listing.files)
    return ScanTask(0, split_files(files, max_split_bytes))


def test_one_scan_per_task_keeps_learning_across_its_byte_ranges(partitioned: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a key filter that keeps every row: the scan switches it off after KEY_SWITCH_MIN_ROWS rows
    every = key_filter(pa.array(np.concatenate([np.arange(n, n + ROWS_PER_GROUP * GROUPS) for n in (2020_000_000, 2021_000_000)])))
    reader = _reader(partitioned, threads="1", **{f"{KEY_FILTER_PREFIX}k": every.to_text()})
    size = reader.listing.files[0].size
    task = _one_task(reader, size // GROUPS + 1)
    assert len(task.splits) >= 2 * GROUPS - 2  # about one row group per range
    scans: list[Scan] = []
    real = lazyscan.spark.source.scan

    def counting(*args: Any, **kwargs: Any) -> Scan:
        s = real(*args, **kwargs)
        scans.append(s)
        return s

    monkeypatch.setattr(lazyscan.spark.source, "scan", counting)
    got = pa.Table.from_batches(list(reader.read(task)))
    assert len(scans) == 1
    assert got.num_rows == 2 * ROWS_PER_GROUP * GROUPS
    (entry,) = scans[0].profile.join_filters.values()
    # switched off once, after the rows of a few ranges; a scan per range (40,000 rows each)
    # would never have seen enough rows to judge it
    assert entry["switched_off"] == 1
    assert Scan.KEY_SWITCH_MIN_ROWS <= entry["rows_probed"] < got.num_rows


def test_batches_keep_their_own_ranges_partition_values(partitioned: Path) -> None:
    reader = _reader(partitioned, where="v < 100", batch_size="7000")
    task = _one_task(reader, reader.listing.files[0].size // 4 + 1)
    assert len({s.path for s in task.splits}) == 2
    batches = list(reader.read(task))
    got = pa.Table.from_batches(batches)
    ref = _reference(partitioned)
    want = ref.filter(pc.less(ref["v"], 100))
    assert _sorted(got).equals(_sorted(want.select(got.column_names)))
    for b in batches:  # no batch mixes two files
        assert len(set(b.column("year").to_pylist())) == 1
        assert b.num_rows <= 7000


def test_to_batches_by_file_names_each_batchs_file(partitioned: Path) -> None:
    files = sorted(str(p) for p in partitioned.rglob("*.parquet"))
    s = Scan(files, ["k"], "v >= 995")
    seen: dict[str, int] = {}
    for part, batch in s.to_batches_by_file():
        assert isinstance(part, FileInfo)
        first = batch.column("k")[0].as_py()
        assert str(first // 1_000_000) in part.path  # the year is in the path and in k
        seen[part.path] = seen.get(part.path, 0) + batch.num_rows
    ref = _reference(partitioned)
    for path in files:
        year = int(path.split("year=")[1][:4])
        assert seen[path] == pc.sum(pc.and_(pc.greater_equal(ref["v"], 995), pc.equal(ref["year"], year))).as_py()


def test_an_error_names_the_byte_range_it_came_from(partitioned: Path) -> None:
    reader = _reader(partitioned)
    bad = partitioned / "year=2021" / "part-0.parquet"
    task = _one_task(reader, reader.listing.files[0].size // 3 + 1)
    data = bad.read_bytes()
    bad.write_bytes(b"PAR1" + b"\0" * (len(data) - 8) + data[-8:])  # footer unreadable, same size
    batches = []
    with pytest.raises(LazyScanReadError, match=r"lazyscan cannot read '.*year=2021.*' \(bytes 0-\d+ of \d+\): ") as info:
        for b in reader.read(task):
            batches.append(b)
    assert "year=2020" not in str(info.value)
    # the ranges of the readable file came first
    assert sum(b.num_rows for b in batches) == ROWS_PER_GROUP * GROUPS


def test_a_scan_that_fails_on_a_file_names_it_and_completes_its_profile(partitioned: Path) -> None:
    good, bad = sorted(str(p) for p in partitioned.rglob("*.parquet"))
    s = Scan([good, bad], ["k"], "v < 10")
    Path(bad).write_bytes(b"PAR1" + b"\0" * 100 + b"PAR1")
    rows = 0
    with pytest.raises(Exception) as info:
        for part, batch in s.to_batches_by_file():
            assert part.path == good
            rows += batch.num_rows
    assert "lazyscan" in type(info.value).__module__
    assert s.failed_part is not None and s.failed_part.path == bad
    # the rows of the readable file came first, and the profile was completed before the error
    assert rows == pc.sum(pc.less(pq.read_table(good)["v"], 10)).as_py()
    assert s.profile.timings["total"] > 0
    assert s.profile.counters["bytes_read"] > 0


@pytest.mark.parametrize(
    ("arrow_type", "storage"),
    [(pa.date32(), 3_000_000), (pa.date32(), -800_000), (pa.timestamp("us"), 2**62), (pa.timestamp("ns", "UTC"), -(2**62))],
)
def test_bound_literals_outside_pythons_years_pickle(arrow_type: pa.DataType, storage: int) -> None:
    # Python's dates end at year 9999; Arrow's (and Spark's files') do not
    column = pa.table({"t": pa.array([storage, storage + 1, None], pa.int64()).cast(pa.int32() if arrow_type == pa.date32() else pa.int64()).view(arrow_type)})
    literal = column["t"].chunk(0)[0]
    bound = bind(parse_predicate("t IS NOT NULL"), column.schema)
    from lazyscan.predicate.bound import BoundCompare, BoundLiteral

    compare = BoundCompare(bound.column, "=", BoundLiteral(storage, literal))  # type: ignore[attr-defined]
    again = pickle.loads(pickle.dumps(compare))
    assert again.literal == compare.literal and again.literal.scalar.equals(literal)
    assert evaluate(again, column).tolist() == [True, False, False]
