"""A table costs no more reading than its files: a table whose deletion vectors remove 1 % of the
rows at random decodes its filter columns as whole pages, as the version without the vectors does,
and its rows equal ``deltalake``'s ``QueryBuilder`` read (delta-kernel-rs); an Iceberg table's text
column prunes and matches as the plain file does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lazyscan
from lazyscan.format.selection import RowRanges
from lazyscan.scan.unit_scan import UnitScan

deltalake = pytest.importorskip("deltalake")

from tests.test_tables_delta import add_deletion_vectors  # noqa: E402

ROWS = 20_000


def _data() -> pa.Table:
    rng = np.random.default_rng(37)
    words = np.array([f"word {k:03d}" for k in range(400)], dtype=object)
    notes = words[rng.integers(0, len(words), ROWS)]
    return pa.table({
        "id": pa.array(np.arange(ROWS, dtype=np.int64)),
        "qty": pa.array(rng.integers(0, 50, ROWS).astype(np.int32), mask=rng.random(ROWS) < 0.05),
        "price": pa.array(rng.normal(size=ROWS) * 100, mask=rng.random(ROWS) < 0.05),
        "note": pa.array(notes.tolist(), pa.string(), mask=rng.random(ROWS) < 0.05),
    })


@pytest.fixture(scope="module")
def scattered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Version 0: the data in row groups of 5,000 rows and pages of 1,000; version 1: deletion
    vectors removing 1 % of every file's rows at random."""
    root = tmp_path_factory.mktemp("scattered") / "t"
    props = deltalake.WriterProperties(max_row_group_size=5_000, data_page_row_count_limit=1_000, write_batch_size=1_000)
    deltalake.write_deltalake(str(root), _data(), writer_properties=props)
    rng = np.random.default_rng(1)
    deleted = {}
    for path in pa.table(deltalake.DeltaTable(str(root)).get_add_actions()).column("path").to_pylist():
        total = pq.ParquetFile(root / path).metadata.num_rows
        deleted[path] = sorted(rng.choice(total, size=total // 100, replace=False).tolist())
    add_deletion_vectors(root, deleted, "u")
    return root


def _sorted(table: pa.Table) -> list[tuple[Any, ...]]:
    def key(row: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple((v is None, repr(v)) for v in row)

    names = sorted(table.column_names)
    return sorted(zip(*(table.column(n).to_pylist() for n in names)), key=key)


def _reference(root: Path, sql: str) -> pa.Table:
    table = deltalake.DeltaTable(str(root))
    return pa.table(deltalake.QueryBuilder().register("t", table).execute(sql).read_all())


@pytest.mark.parametrize("where", ["note < 'word 040'", "qty < 5", "note = 'word 007' OR price > 150"])
def test_filter_columns_decode_as_without_the_deletes(scattered: Path, where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    first_ranges: dict[UnitScan, int] = {}
    apply = UnitScan._apply

    def recording(self: UnitScan, i: int, selection: RowRanges) -> RowRanges:
        first_ranges.setdefault(self, len(selection))
        return apply(self, i, selection)

    monkeypatch.setattr(UnitScan, "_apply", recording)
    with_deletes = lazyscan.scan(str(scattered), columns=["id", "price"], where=where, threads=1)
    got = with_deletes.to_table()
    monkeypatch.undo()
    without = lazyscan.scan(str(scattered), columns=["id", "price"], where=where, version=0, threads=1)
    everything = without.to_table()
    assert with_deletes.profile["rows_removed_position_deletes"] == ROWS // 100
    assert 0 < got.num_rows < everything.num_rows
    assert _sorted(got) == _sorted(_reference(scattered, f"select id, price from t where {where}"))
    # the deleted rows are dropped after the filter: the first predicate of each row group runs
    # on its rows as one range, not on the ~50 ranges between its deleted rows
    assert list(first_ranges.values()) == [1] * 4
    assert with_deletes.profile["values_decoded"] <= without.profile["values_decoded"]
    assert with_deletes.profile["pages_read"] == without.profile["pages_read"]


@pytest.mark.parametrize("columns", [["id", "qty", "price"], ["note", "qty"]])
def test_reads_without_a_row_filter_drop_the_deleted_rows(scattered: Path, columns: list[str]) -> None:
    expected = _sorted(_reference(scattered, f"select {', '.join(columns)} from t"))
    for options in ({}, {"pushdown": False}, {"late_materialization": False}, {"dense_threshold": 1.0}):
        got = lazyscan.scan(str(scattered), columns=columns, threads=1, **options).to_table()
        assert got.num_rows == ROWS - ROWS // 100, options
        assert _sorted(got) == expected, options
        # the same with a filter every row passes, read after decoding
        got = lazyscan.scan(str(scattered), columns=columns, where="id >= 0", threads=1, **options).to_table()
        assert _sorted(got) == expected, options


def test_iceberg_text_column_prunes_and_matches_as_stored(tmp_path: Path) -> None:
    """pyiceberg's Arrow schema says ``large_string`` where its writer stores ``string``: the same
    bytes, so the column's statistics prune row groups and ``=`` is matched on the encoded pages
    as on the plain file, with the rows pyiceberg reads."""
    from pyiceberg.catalog.sql import SqlCatalog

    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    catalog = SqlCatalog("tests", uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=f"file://{warehouse}")
    catalog.create_namespace("db")
    data = _data().sort_by("note")  # sorted: each row group holds a narrow range of notes
    table = catalog.create_table("db.t", schema=data.schema, properties={"write.parquet.row-group-limit": "2000"})
    table.append(data)
    data_file = next(iter(table.scan().plan_files())).file.file_path.removeprefix("file://")
    stored = pq.ParquetFile(data_file)
    assert stored.schema_arrow.field("note").type == pa.string() and stored.metadata.num_row_groups > 5
    where = "note = 'word 007'"
    scan = lazyscan.scan(table, columns=["id", "note"], where=where, threads=1)
    assert scan.schema.field("note").type == pa.large_string()
    got = scan.to_table()
    theirs = table.scan(row_filter="note == 'word 007'", selected_fields=("id", "note")).to_arrow()
    assert got.num_rows > 0 and _sorted(got) == _sorted(theirs)
    plain = lazyscan.scan(data_file, columns=["id", "note"], where=where, threads=1, raw_files=True)
    plain.to_table()
    assert scan.profile["row_groups_pruned_stats"] == plain.profile["row_groups_pruned_stats"] > 0
    assert scan.profile["values_decoded"] == plain.profile["values_decoded"]
