"""Delta Lake and Iceberg tables read by lazyscan equal Polars' ``scan_delta`` / ``scan_iceberg``
where Polars reads the table: tables written in the test with ``deltalake`` and ``pyiceberg``
(several versions, a partition column, nulls and NaNs), filters in SQL for both.

Where Polars does not read the feature (deletion vectors, column mapping, Iceberg equality
deletes, position deletes in another path form: see tests/test_table_scan.py), the other side is
deltalake's ``QueryBuilder`` or the planned files read with pyarrow."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lazyscan
from tests.test_table_scan import _snapshot_rows, rows

pl = pytest.importorskip("polars")
deltalake = pytest.importorskip("deltalake")
#: Polars plans Iceberg scans with pyiceberg when its own planner package is absent, and says so
pytestmark = pytest.mark.filterwarnings("ignore:Iceberg scan planning:Warning")

FILTERS = [None, "i > 10", "s = 'beta' OR s IS NULL", "f < 0 AND p = 'east'", "b AND id IN (10005, 20010, 30020)", "d >= DATE '2019-04-01'"]


@pytest.fixture(scope="module")
def delta_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two appends and an overwrite of one partition: three versions, files removed on the way."""
    root = tmp_path_factory.mktemp("polars_delta") / "t"
    deltalake.write_deltalake(str(root), _snapshot_rows(1), partition_by=["p"])
    deltalake.write_deltalake(str(root), _snapshot_rows(2), partition_by=["p"], mode="append")
    east = _snapshot_rows(3).filter(pa.compute.equal(_snapshot_rows(3).column("p"), "east"))
    deltalake.write_deltalake(str(root), east, partition_by=["p"], mode="overwrite", predicate="p = 'east'")
    return root


def _polars(lf: Any, where: str | None) -> pa.Table:
    if where:
        lf = lf.filter(pl.sql_expr(where))
    return lf.collect().to_arrow()


@pytest.mark.parametrize("version", [0, 1, 2])
@pytest.mark.parametrize("where", FILTERS)
def test_delta_equals_polars_scan_delta(delta_table: Path, version: int, where: str | None) -> None:
    got = lazyscan.scan(str(delta_table), version=version, where=where, time_zone="UTC").to_table()
    expected = _polars(pl.scan_delta(str(delta_table), version=version), where)
    names = sorted(got.column_names)
    assert names == sorted(expected.column_names)
    assert got.num_rows == expected.num_rows
    assert rows(got, names) == rows(expected, names)


@pytest.fixture(scope="module")
def iceberg_table(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog

    base = tmp_path_factory.mktemp("polars_iceberg")
    (base / "warehouse").mkdir()
    catalog = SqlCatalog("polars", uri=f"sqlite:///{base / 'catalog.db'}", warehouse=f"file://{base / 'warehouse'}")
    catalog.create_namespace("db")
    first = _snapshot_rows(1)
    table = catalog.create_table("db.t", schema=first.schema)
    table.append(first)
    table.append(_snapshot_rows(2))
    table.overwrite(_snapshot_rows(3).slice(0, 500))
    return catalog.load_table("db.t")


@pytest.mark.parametrize("where", FILTERS)
def test_iceberg_equals_polars_scan_iceberg(iceberg_table: Any, where: str | None) -> None:
    snapshots = [s.snapshot_id for s in iceberg_table.metadata.snapshots]
    assert len(snapshots) >= 3
    for snapshot_id in snapshots:
        got = lazyscan.scan(iceberg_table, snapshot_id=snapshot_id, where=where, time_zone="UTC").to_table()
        expected = _polars(pl.scan_iceberg(iceberg_table, snapshot_id=snapshot_id), where)
        names = sorted(got.column_names)
        assert names == sorted(expected.column_names)
        assert rows(got, names) == rows(expected, names), f"snapshot {snapshot_id}, {where}"
