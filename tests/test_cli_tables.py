"""``lazyscan inspect`` on tables and folders, and the table level of a scan's profile on the
command line.

The numbers ``inspect`` prints are checked against the plan objects of :mod:`lazyscan.tables`
(files, rows, deleted rows, equality deletes, schema mapping), and the live rows against counts
made without lazyscan: the Delta log replay in ``tests/data/tables/delta/counts-delta.jsonl``
and the Iceberg rows per snapshot in ``tests/test_tables_iceberg.py`` (from the tables' README).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

import lazyscan
from lazyscan.cli.main import main

deltalake = pytest.importorskip("deltalake")
pytest.importorskip("pyiceberg")

from lazyscan.tables.delta import plan_delta  # noqa: E402
from lazyscan.tables.iceberg import describe, plan_iceberg, strip_authority  # noqa: E402
from tests.test_tables_delta import COUNTS  # noqa: E402
from tests.test_tables_delta import TABLES as DELTA  # noqa: E402
from tests.test_tables_iceberg import ROWS_PER_SNAPSHOT, latest_metadata, reroot_of  # noqa: E402
from tests.test_tables_iceberg import TABLES as ICEBERG  # noqa: E402


def inspect_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["inspect", *argv, "--json"]) == 0, capsys.readouterr().err
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    return result


def inspect_text(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["inspect", *argv]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def reroot_flag(folder: Path) -> list[str]:
    ((old, new),) = reroot_of(folder).items()
    return ["--reroot", f"{old}={new}"]


def relative(root: str, path: str) -> str:
    return strip_authority(path)[len(strip_authority(root).rstrip("/")) + 1 :]


# ---- Delta Lake -------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [None, 1, 3, 4])
def test_delta_deletion_vectors_numbers_are_the_plans(capsys: pytest.CaptureFixture[str], version: int | None) -> None:
    """cdf-table-with-dv: deletion vectors on disk at v1-v2, inline at v3-v5, none at v6."""
    table = DELTA / "cdf-table-with-dv"
    flags = [] if version is None else ["--table-version", str(version)]
    got = inspect_json(capsys, str(table), "--files", *flags)
    plan = plan_delta(str(table), version=version)
    assert got["kind"] == "delta" and got["version"] == plan.version
    assert got["data_files"] == len(plan.files)
    assert got["rows_total"] == sum(f.num_records or 0 for f in plan.files)
    assert got["rows_removed_position_deletes"] == sum(f.deleted_count for f in plan.files)
    assert got["rows_live"] == plan.num_rows == COUNTS["cdf-table-with-dv"]["replay_rows_per_version"][plan.version]
    assert [(f["path"], f["rows"], f["rows_deleted"], f["bytes"]) for f in got["files"]] == [
        (relative(plan.root, f.path), f.num_records, f.deleted_count, f.size) for f in plan.files
    ]
    assert got["equality_delete_files"] == 0


def test_delta_text_names_version_rows_and_deletion_vectors(capsys: pytest.CaptureFixture[str]) -> None:
    table = DELTA / "dv-with-columnmapping"
    plan = plan_delta(str(table))
    removed = sum(f.deleted_count for f in plan.files)
    assert removed > 0
    text = inspect_text(capsys, str(table), "--files")
    assert text.splitlines()[0] == f"Delta Lake table {plan.root}"
    assert re.search(rf"^  version: +{plan.version} \(commit info time 20\d\d-", text, re.M)
    assert re.search(
        rf"^  rows: +{sum(f.num_records or 0 for f in plan.files):,} in the files, {removed:,} removed by deletion vectors .*, {plan.num_rows:,} live$",
        text, re.M,
    )
    # one aligned line per data file: the columns start at the same offset on every line
    lines = text.splitlines()
    first = lines.index(f"data files ({len(plan.files)}):") + 1
    table_lines = lines[first : first + 1 + len(plan.files)]
    assert len({line.index("#bytes") if i == 0 else None for i, line in enumerate(table_lines[:1])}) == 1
    for f in plan.files:
        row = next(line for line in table_lines if relative(plan.root, f.path) in line)
        cells = row.split()
        assert cells[1:4] == [f"{f.size:,}", f"{f.num_records:,}", f"{f.deleted_count:,}"]
        assert cells[4] == f"part={f.partition_values['part']}"
    assert len({len(line) for line in table_lines[1:]}) == 1  # padded to one width


def test_delta_column_mapping_by_name_and_by_id(capsys: pytest.CaptureFixture[str]) -> None:
    by_name = DELTA / "dv-with-columnmapping"
    got = inspect_json(capsys, str(by_name))
    plan = plan_delta(str(by_name))
    assert got["column_mapping"] == "name" and got["partition_columns"] == list(plan.partition_columns) == ["part"]
    assert {c["name"]: c["physical_name"] for c in got["schema"]} == plan.physical_names()
    assert all("field_id" not in c for c in got["schema"])
    by_id = DELTA / "table-with-columnmapping-mode-id"
    got = inspect_json(capsys, str(by_id))
    plan = plan_delta(str(by_id))
    assert got["column_mapping"] == "id"
    assert [(c["name"], c["physical_name"], c["field_id"]) for c in got["schema"]] == [
        (c.name, c.physical_name, c.field_id) for c in plan.columns
    ]
    assert [c["type"] for c in got["schema"]] == [str(f.type) for f in plan.schema]


def test_delta_history_lists_every_version(capsys: pytest.CaptureFixture[str]) -> None:
    table = DELTA / "basic-with-inserts-deletes-checkpoint"
    got = inspect_json(capsys, str(table), "--history", "--table-version", "5")
    commits = deltalake.DeltaTable(str(table)).history()
    assert [h["version"] for h in got["history"]] == sorted(c["version"] for c in commits)
    assert [h["version"] for h in got["history"] if h["current"]] == [5]
    at = next(c["timestamp"] for c in commits if c["version"] == 5)
    assert dt.datetime.fromisoformat(got["time"].replace("Z", "+00:00")).timestamp() * 1000 == pytest.approx(at)
    assert got["rows_live"] == COUNTS[table.name]["replay_rows_per_version"][5]
    text = inspect_text(capsys, str(table), "--history")
    assert re.search(r"^ +13  2023-08-07T16:45:43\.015Z  DELETE +\(read\)$", text, re.M)


def test_delta_time_travel_by_timestamp(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--as-of picks the version the Delta protocol's commit timestamps (the commit files'
    modification times here) say was current."""
    for n in (3, 5, 2):
        deltalake.write_deltalake(str(tmp_path), pa.table({"x": list(range(n))}), mode="append")
        time.sleep(0.2)
    commit = tmp_path / "_delta_log" / f"{1:020d}.json"
    # a little after the commit: its commit information may state a millisecond later
    when = dt.datetime.fromtimestamp(commit.stat().st_mtime + 0.05, tz=dt.timezone.utc)
    got = inspect_json(capsys, str(tmp_path), "--as-of", when.isoformat())
    plan = plan_delta(str(tmp_path), timestamp=when)
    assert got["version"] == plan.version == 1
    assert got["rows_live"] == plan.num_rows == 8 and got["data_files"] == 2


def test_delta_history_without_commit_information(capsys: pytest.CaptureFixture[str]) -> None:
    """cdf-table-with-dv's log has no commitInfo actions: no times, said so."""
    text = inspect_text(capsys, str(DELTA / "cdf-table-with-dv"), "--history")
    assert "versions (0):\n  none recorded (the log holds no commit information)" in text
    assert "committed" not in text.split("\n", 2)[1]


# ---- Iceberg ----------------------------------------------------------------------------------


def test_iceberg_position_and_equality_deletes_are_the_plans(capsys: pytest.CaptureFixture[str]) -> None:
    folder = ICEBERG / "iceberg_v2_delete_both_eq_and_pos"
    got = inspect_json(capsys, str(folder), *reroot_flag(folder), "--files")
    plan = plan_iceberg(str(folder), reroot=reroot_of(folder))
    summary = describe(plan)
    assert got["kind"] == "iceberg" and got["snapshot_id"] == plan.snapshot_id == summary["snapshot_id"]
    assert got["data_files"] == summary["files"]
    assert got["rows_total"] == summary["rows_in_files"]
    assert got["rows_removed_position_deletes"] == summary["position_deleted_rows"] > 0
    assert got["equality_delete_files"] == summary["equality_delete_files"] > 0
    keys = {e.path: e for f in plan.files for e in f.equality_deletes}
    assert got["equality_delete_columns"] == list(dict.fromkeys(n for e in keys.values() for n in e.keys.column_names))
    assert got["equality_delete_keys"] == sum(e.keys.num_rows for e in keys.values())
    # equality deletes are known once read: no live count, only the rows before them
    assert got["rows_live"] is None
    assert got["rows_after_position_deletes"] == summary["rows_in_files"] - summary["position_deleted_rows"]
    live = dict(ROWS_PER_SNAPSHOT[folder.name])[got["snapshot_id"]]
    assert lazyscan.scan(str(folder), reroot=reroot_of(folder)).to_table().num_rows == live
    assert live <= got["rows_after_position_deletes"]
    assert [(f["path"], f["rows"], f["rows_deleted"], f["equality_deletes"]) for f in got["files"]] == [
        (relative(plan.root, f.path), f.num_records, f.deleted_count, len(f.equality_deletes)) for f in plan.files
    ]
    assert [(c["name"], c["field_id"]) for c in got["schema"]] == [
        (f.name, int(f.metadata[b"PARQUET:field_id"])) for f in plan.schema
    ]
    text = inspect_text(capsys, str(folder), *reroot_flag(folder))
    assert re.search(rf"^  equality deletes: +1 file on {', '.join(got['equality_delete_columns'])} \(", text, re.M)


def test_iceberg_snapshots_time_travel_and_hidden_partitions(capsys: pytest.CaptureFixture[str]) -> None:
    folder = ICEBERG / "iceberg_v2_positional_not_all_data_files_have_delete_files"
    got = inspect_json(capsys, str(folder), *reroot_flag(folder), "--history")
    expected = ROWS_PER_SNAPSHOT[folder.name]
    assert [h["snapshot_id"] for h in got["history"]] == [sid for sid, _ in expected]
    assert [h["snapshot_id"] for h in got["history"] if h["current"]] == [expected[-1][0]]
    assert got["rows_live"] == expected[-1][1]
    for sid, rows in expected:
        old = inspect_json(capsys, str(folder), *reroot_flag(folder), "--table-version", str(sid))
        plan = plan_iceberg(str(folder), snapshot_id=sid, reroot=reroot_of(folder))
        assert (old["snapshot_id"], old["data_files"], old["rows_removed_position_deletes"]) == (
            sid, len(plan.files), sum(f.deleted_count for f in plan.files),
        )
        assert old["rows_live"] == rows
    second = got["history"][1]
    as_of = inspect_json(capsys, str(folder), *reroot_flag(folder), "--as-of", second["time"].replace("Z", "+00:00"))
    assert as_of["snapshot_id"] == second["snapshot_id"]

    partitioned = ICEBERG / "iceberg_partitioned"
    got = inspect_json(capsys, str(partitioned), *reroot_flag(partitioned), "--files")
    assert got["partition_spec"] == [
        {"name": "event_time_hour", "transform": "hour", "source": "event_time"},
        {"name": "action", "transform": "identity", "source": "action"},
    ]
    plan = plan_iceberg(str(partitioned), reroot=reroot_of(partitioned))
    for entry, f in zip(got["files"], plan.files):
        assert entry["partition"] == f.partition_values
        # the text is the partition path's spelling: event_time_hour=2020-01-01-08
        assert f"event_time_hour={entry['partition_text']['event_time_hour']}/" in entry["path"]
        assert f"action={entry['partition_text']['action']}/" in entry["path"]
    text = inspect_text(capsys, str(partitioned), *reroot_flag(partitioned))
    assert re.search(r"^  partitioned by: +event_time_hour = hour\(event_time\), action$", text, re.M)


def test_iceberg_metadata_file_is_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    folder = ICEBERG / "iceberg_v2_delete_positional"
    metadata = latest_metadata(folder)
    got = inspect_json(capsys, str(metadata), *reroot_flag(folder))
    assert got["kind"] == "iceberg" and got["metadata"] == str(metadata)
    assert got["rows_live"] == ROWS_PER_SNAPSHOT[folder.name][-1][1]


# ---- folders and paths that are no table --------------------------------------------------------


def test_plain_folder_lists_its_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = pa.table({"id": pa.array(range(30), pa.int64()), "part": [i % 3 for i in range(30)], "s": [str(i) for i in range(30)]})
    pq.write_to_dataset(data, tmp_path / "folder", partition_cols=["part"])
    got = inspect_json(capsys, str(tmp_path / "folder"), "--files")
    reference = pads.dataset(tmp_path / "folder", partitioning="hive")
    assert got["kind"] == "folder" and got["data_files"] == len(reference.files) == 3
    assert got["formats"] == {"parquet": 3} and got["rows_total"] == reference.count_rows() == 30
    assert got["partition_columns"] == ["part"]
    assert [c["name"] for c in got["schema"]] == ["id", "s", "part"]
    assert sorted(f["rows"] for f in got["files"]) == [10, 10, 10]
    assert {f["partition"]["part"] for f in got["files"]} == {0, 1, 2}
    assert got["unreadable"] == [] and got["schema_conflict"] is None
    text = inspect_text(capsys, str(tmp_path / "folder"))
    assert re.search(r"^  files: +3 \(3 parquet; ", text, re.M)


def test_folder_with_other_files_names_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pq.write_table(pa.table({"x": [1, 2]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"x": ["a"]}), tmp_path / "b.parquet")
    (tmp_path / "notes.txt").write_text("not data")
    got = inspect_json(capsys, str(tmp_path))
    assert got["data_files"] == 2 and [u["path"] for u in got["unreadable"]] == ["notes.txt"]
    assert "'x' has type int64 in one file and string in another" in got["schema_conflict"]


def test_missing_path_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err
    assert err == f"lazyscan: error: {tmp_path / 'nothing'}: no such file or folder\n"


def test_table_flags_on_no_table_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pq.write_table(pa.table({"x": [1]}), tmp_path / "a.parquet")
    assert main(["inspect", str(tmp_path), "--table-version", "1"]) == 2
    assert "options of a Delta Lake or Iceberg table" in capsys.readouterr().err
    assert main(["inspect", str(tmp_path / "a.parquet"), "--json"]) == 2
    assert "--json: flags for a table or a folder" in capsys.readouterr().err


def test_paths_inside_and_above_a_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = tmp_path / "tables" / "dv"
    shutil.copytree(DELTA / "dv-with-columnmapping", table)
    partition = next(p for p in table.iterdir() if p.name.startswith("col-"))
    simple = tmp_path / "simple"
    shutil.copytree(DELTA / "simple_table", simple)
    assert main(["inspect", str(partition)]) == 2
    err = capsys.readouterr().err
    assert f"{partition} lies inside a Delta Lake table at {table}" in err and "--raw-files" in err
    assert "Errno" not in err
    assert main(["inspect", str(tmp_path / "tables")]) == 2
    assert "holds a Delta Lake table at" in capsys.readouterr().err
    # the folder's files on request, files the table removed included
    raw = inspect_json(capsys, str(simple), "--raw-files")
    assert raw["kind"] == "folder" and raw["data_files"] == 37 > len(plan_delta(str(simple)).files) == 5
    # one data file: its layout, and a note naming the table
    data_file = next(partition.glob("*.parquet"))
    text = inspect_text(capsys, str(data_file))
    assert "row group 0" in text
    assert f"note: this file lies inside a Delta Lake table at {table}" in text


# ---- the profile's table level on the command line ---------------------------------------------


def test_scan_prints_the_table_counters(capsys: pytest.CaptureFixture[str]) -> None:
    table = DELTA / "dv-with-columnmapping"
    where = "part = 3 OR col1 > 100"
    assert main(["scan", str(table), "--where", where, "--profile", "--limit", "0"]) == 0
    err = capsys.readouterr().err
    reference = lazyscan.scan(str(table), where=where)
    reference.to_table()
    c = reference.profile.counters
    assert c["files_pruned_table_stats"] > 0
    line = next(x for x in err.splitlines() if x.startswith("table Delta table"))
    assert (
        f"{c['files']:,} data files, pruned: partition {c['files_pruned_partition']:,}, "
        f"table statistics {c['files_pruned_table_stats']:,}" in line
    )
    assert f"rows removed: {c['rows_removed_position_deletes']:,} by deletion vectors" in line
    for name in ("files_pruned_table_stats", "rows_removed_position_deletes", "rows_removed_equality_deletes"):
        assert re.search(rf"^  {name} +{c[name]:,}$", err, re.M), name


def test_scan_of_iceberg_equality_deletes_prints_rows_removed(capsys: pytest.CaptureFixture[str]) -> None:
    folder = ICEBERG / "iceberg_v2_delete_both_eq_and_pos"
    assert main(["scan", str(folder), *reroot_flag(folder), "--limit", "0"]) == 0
    err = capsys.readouterr().err
    reference = lazyscan.scan(str(folder), reroot=reroot_of(folder))
    assert reference.to_table().num_rows == ROWS_PER_SNAPSHOT[folder.name][-1][1]
    c = reference.profile.counters
    assert c["rows_removed_equality_deletes"] > 0 and c["rows_removed_position_deletes"] > 0
    assert (
        f"rows removed: {c['rows_removed_position_deletes']:,} by deletion vectors and position deletes, "
        f"{c['rows_removed_equality_deletes']:,} by equality deletes" in err
    )


def test_scan_of_plain_files_prints_no_table_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pq.write_table(pa.table({"x": [1, 2]}), tmp_path / "a.parquet")
    assert main(["scan", str(tmp_path / "a.parquet")]) == 0
    assert "table " not in capsys.readouterr().err


def test_scan_and_explain_count_the_rows_deletion_vectors_removed(capsys: pytest.CaptureFixture[str]) -> None:
    table = DELTA / "dv-with-columnmapping"
    deleted = sum(f.deleted_count for f in plan_delta(str(table)).files)
    assert deleted > 0
    assert main(["scan", str(table), "--where", "col1 > 5", "--limit", "0"]) == 0
    assert f"rows removed: {deleted:,} by deletion vectors and position deletes, 0 by equality deletes" in capsys.readouterr().err
    assert main(["explain", str(table), "--where", "col1 > 5"]) == 0
    out = capsys.readouterr().out
    assert re.search(rf"^  rows_removed_position_deletes +{deleted:,}$", out, re.M)
    assert re.search(r"^  files_pruned_table_stats +0$", out, re.M)
