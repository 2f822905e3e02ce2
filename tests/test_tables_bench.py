"""The table benchmark (benchmarks/tables_bench.py) at TPC-H SF 0.01, generated in a temporary
folder: the builders write row-level deletes the reference readers apply, every engine returns
the expected rows on every case, and a reader that ignores the deletes is caught."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

pytest.importorskip("deltalake")
pytest.importorskip("pyiceberg")
pytest.importorskip("pyroaring")
pytest.importorskip("polars")

from benchmarks import tables_bench as tb
from benchmarks.data import ensure_tpch, pick_query_value
from benchmarks.engines import run_queries

SF = 0.01


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    data = tmp_path_factory.mktemp("tables-bench")
    dataset = ensure_tpch(SF, data_dir=data, show_progress=False)
    value = pick_query_value(dataset, target=tb._value_target(SF))
    tables = tb.ensure_tables(SF, data_dir=data)
    return {"data": data, "lineitem": dataset.lineitem, "value": value, "tables": tables}


def test_delta_version_holds_deletion_vectors_and_iceberg_position_deletes(built: dict[str, Any]) -> None:
    delta, iceberg = built["tables"]["delta"], built["tables"]["iceberg"]
    log = Path(delta.root) / "_delta_log" / f"{delta.current.version:020d}.json"
    actions = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    vectors = [a["add"]["deletionVector"] for a in actions if "add" in a]
    assert len(vectors) == len(delta.current.files)
    assert sum(v["cardinality"] for v in vectors) == delta.deleted_rows
    assert delta.current.rows == delta.older.rows - delta.deleted_rows
    # about 1 % of the rows, none of them a row of the seed value
    assert 0.009 < delta.deleted_rows / delta.older.rows < 0.011
    for b in (delta, iceberg):
        deleted = pq.read_table(b.deleted_path, columns=["l_comment"]).column(0)
        assert not pc.any(pc.equal(deleted, built["value"].value)).as_py()
    tasks = list(tb.load_iceberg(iceberg).scan().plan_files())
    assert all(len(t.delete_files) == 1 for t in tasks)
    assert {d.content.name for t in tasks for d in t.delete_files} == {"POSITION_DELETES"}
    assert sum(d.record_count for t in tasks for d in t.delete_files) == iceberg.deleted_rows
    # the tables are reused, not rebuilt
    again = tb.ensure_tables(SF, data_dir=built["data"])
    assert again["iceberg"].current.version == iceberg.current.version


def test_one_round_every_engine_returns_the_expected_rows(built: dict[str, Any]) -> None:
    for fmt in ("delta", "iceberg"):
        b = built["tables"][fmt]
        queries = tb.table_queries(b, built["lineitem"], built["value"])
        # the deletes change the rows of at least one current case, not those of the older version
        older = {q.label.removesuffix(" old"): q.expected_rows for q in queries if q.label.endswith(" old")}
        assert any(q.expected_rows != older.get(q.label) for q in queries if q.label in older)
        engines = tb.table_engines(b)
        results = run_queries([*engines, tb.LazyscanFilesEngine()], queries[:2], reps=1, in_turns=True)
        results += run_queries(engines, queries[2:], reps=1)
        for r in results:
            assert r.agree, r.verdict
            ran = {m.engine: m.rows for m in r.measurements if m.ok}
            assert set(ran.values()) == {r.query.expected_rows}, (r.query.name, ran)
            expected = {"lazyscan", f"polars-{fmt}", "deltalake-sql" if fmt == "delta" else "pyiceberg"}
            assert expected <= set(ran), (r.query.name, [(m.engine, m.status) for m in r.measurements])
        by = {r.query.name: r.by_engine() for r in results}
        if fmt == "delta":
            # deltalake's pyarrow dataset refuses the deletion vectors; it reads the older version
            assert "deletionVectors" in by["Delta Q6"]["deltalake-pyarrow"].status
            assert by["Delta Q6 old"]["deltalake-pyarrow"].ok
        ratios = tb.case_ratios(results)
        assert set(ratios) == {q.name for q in queries}
        assert "table_minus_files" in tb.penalties(results)["Delta" if fmt == "delta" else "Iceberg"]


def test_a_reader_that_ignores_the_deletes_is_a_mismatch(built: dict[str, Any]) -> None:
    b = built["tables"]["delta"]
    q6 = next(q for q in tb.table_queries(b, built["lineitem"], built["value"]) if q.label == "Q6")
    [result] = run_queries([tb.LazyscanTableEngine("delta"), tb.LazyscanFilesEngine()], [q6], reps=1)
    assert not result.agree
    plain = result.by_engine()["lazyscan-files"]
    assert plain.mismatch and plain.rows is not None and q6.expected_rows is not None
    assert plain.rows > q6.expected_rows
    assert "ROW COUNT MISMATCH" in result.verdict


def test_planning_tables_and_times(tmp_path: Path) -> None:
    tables = tb.build_planning_tables(tmp_path, files=20)
    times = tb.planning_times(tables, reps=1)
    assert all(t["status"] == "ok" for t in times.values()), times
    from lazyscan.tables.delta import plan_delta
    from lazyscan.tables.iceberg import plan_iceberg

    assert len(plan_delta(tables["delta"]).files) == 20
    assert len(plan_iceberg(tables["iceberg"]).files) == 20


def test_iceberg_filter_matches_the_sql() -> None:
    from pyiceberg import expressions as ie

    expr = tb.iceberg_filter(tb.Q6_WHERE)
    text = repr(expr)
    assert isinstance(expr, ie.And)
    assert "1994-01-01" in text and "0.05" in text and "LessThan(term=Reference(name='l_quantity')" in text
