"""What ``lazyscan inspect`` says about a table or a folder, as data and as aligned text.

- :func:`describe_table`: a planned snapshot (:mod:`lazyscan.tables`) as a JSON-ready dict: the
  table kind, root, version or snapshot id and its commit time, the schema under logical names
  (with physical names under Delta column mapping, field ids where the table reads by them), the
  partition columns, the data files, rows in them and rows the table removed (deletion vectors,
  position deletes), the equality delete files; optionally one entry per data file and the
  table's versions or snapshots.
- :func:`describe_folder`: the Parquet and ORC files a plain folder holds (count, formats, rows,
  the merged schema, hive partition columns).
- :func:`render`: either description as aligned text.

Only metadata is read: table logs and manifests, delete files (the plan decodes them), and for a
folder each file's footer. No data page is read, so the rows removed by equality deletes stay
unknown: they are known only once the key columns are read.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from lazyscan.errors import LazyScanError, OptionError
from lazyscan.tables.delta import DataFile, TablePlan
from lazyscan.tables.iceberg import IcebergFile, IcebergPlan
from lazyscan.tables.plan import PlannedTable

_KIND_NAMES = {"delta": "Delta Lake", "iceberg": "Apache Iceberg"}
#: field metadata keys of the field ids a table reads its data files by
_ICEBERG_ID = b"PARQUET:field_id"
_DELTA_ID = b"delta.columnMapping.id"


def _utc(millis: int | None) -> str | None:
    if millis is None:
        return None
    stamp = dt.datetime.fromtimestamp(millis / 1000, tz=dt.timezone.utc)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _local(path: str) -> str:
    return path[len("file://") :] if path.startswith("file://") else path[len("file:") :] if path.startswith("file:/") else path


def relative_to(root: str, path: str) -> str:
    """``path`` relative to the table's ``root`` when it lies under it, else as it is."""
    base, here = _local(root).rstrip("/"), _local(path)
    if os.path.isabs(base) != os.path.isabs(here):
        base, here = os.path.abspath(base), os.path.abspath(here)
    return here[len(base) + 1 :] if here.startswith(base + "/") else path


def _json_value(value: Any) -> Any:
    """A partition value as JSON holds it (dates, datetimes and decimals as text)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def _schema_entries(plan: TablePlan | IcebergPlan) -> list[dict[str, Any]]:
    """Per top-level column: name, type, and where applicable the physical name and field id."""
    physical: dict[str, str] = {}
    by_id = True
    if isinstance(plan, TablePlan):
        physical = plan.physical_names() if plan.column_mapping != "none" else {}
        by_id = plan.column_mapping == "id"
    out = []
    for f in plan.schema:
        entry: dict[str, Any] = {"name": f.name, "type": str(f.type)}
        if f.name in physical:
            entry["physical_name"] = physical[f.name]
        meta = f.metadata or {}
        raw = meta.get(_ICEBERG_ID if plan.kind == "iceberg" else _DELTA_ID)
        if by_id and raw is not None:
            entry["field_id"] = int(raw)
        out.append(entry)
    return out


def _delta_history(root: str, version: int, everything: bool) -> tuple[int | None, list[dict[str, Any]]]:
    """The time the commit information of ``version`` states (None: the log holds none for it)
    and, with ``everything``, every version's. Only the commits from ``version`` on are read
    unless ``everything``. (Time travel by timestamp goes by the commit files' modification
    times instead, Delta protocol "Commit Provenance Information" and "In-Commit Timestamps":
    in a copied table these differ.)"""
    import deltalake

    table = deltalake.DeltaTable(root)
    latest = int(table.version())
    commits = table.history(None if everything else max(1, latest - version + 1))
    at = next((c.get("timestamp") for c in commits if c.get("version") == version), None)
    history = [
        {
            "version": c.get("version"),
            "time": _utc(c.get("timestamp")),
            "operation": c.get("operation"),
            "current": c.get("version") == version,
        }
        for c in sorted(commits, key=lambda c: c.get("version") or 0)
    ] if everything else []
    return at, history


def _iceberg_metadata(plan: Any, reroot: Mapping[str, str] | None) -> Any:
    from lazyscan.tables.iceberg import static_table

    return static_table(plan.metadata_location, reroot).metadata


def _plain_partition(f: Any) -> dict[str, str | None]:
    """A data file's partition values as text."""
    return {k: None if v is None else str(v) for k, v in f.partition_values.items()}


def _iceberg_partition(metadata: Any) -> Any:
    """A function giving an Iceberg data file's partition values as its partition paths spell
    them (``event_time_hour=2020-01-01-08``, not hours since the epoch)."""
    specs = metadata.specs()
    schema = metadata.schema()

    def human(f: Any) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        spec = specs.get(f.spec_id)
        for pf in spec.fields if spec is not None else ():
            value = f.partition_values.get(pf.name)
            try:
                source = schema.find_field(pf.source_id).field_type
                out[pf.name] = None if value is None else pf.transform.to_human_string(source, value)
            except Exception:  # a dropped source column, a transform pyiceberg cannot spell
                out[pf.name] = None if value is None else str(value)
        return out

    return human


def describe_table(
    plan: PlannedTable,
    *,
    files: bool = False,
    history: bool = False,
    reroot: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A JSON-ready description of the planned snapshot ``plan``; ``files``: one entry per
    data file; ``history``: the table's versions (Delta) or snapshots (Iceberg); ``reroot``:
    the mapping the plan was made with (an Iceberg table's metadata is read again with it)."""
    if not isinstance(plan, (TablePlan, IcebergPlan)):
        raise OptionError(f"cannot describe a {type(plan).__name__}: a Delta Lake or Iceberg plan is expected")
    planned: list[DataFile | IcebergFile] = list(plan.files)
    desc: dict[str, Any] = {"kind": plan.kind, "root": plan.root}

    human = _plain_partition
    if isinstance(plan, TablePlan):
        desc["version"] = plan.version
        at, versions = _delta_history(plan.root, plan.version, history)
        desc["time"] = _utc(at)
        desc["column_mapping"] = plan.column_mapping
        desc["partition_columns"] = list(plan.partition_columns)
    else:
        metadata = _iceberg_metadata(plan, reroot)
        snapshot_id = plan.snapshot_id
        snapshot = metadata.snapshot_by_id(snapshot_id) if snapshot_id is not None else None
        desc["snapshot_id"] = snapshot_id
        desc["time"] = _utc(snapshot.timestamp_ms) if snapshot is not None else None
        desc["metadata"] = plan.metadata_location
        desc["format_version"] = plan.format_version
        schema = metadata.schema()
        desc["partition_spec"] = [
            {"name": pf.name, "transform": str(pf.transform), "source": schema.find_column_name(pf.source_id)}
            for pf in metadata.spec().fields
        ]
        desc["partition_columns"] = [f["source"] for f in desc["partition_spec"]]
        human = _iceberg_partition(metadata)
        versions = [
            {
                "snapshot_id": s.snapshot_id,
                "parent_id": s.parent_snapshot_id,
                "time": _utc(s.timestamp_ms),
                "operation": s.summary.operation.value if s.summary is not None else None,
                "current": s.snapshot_id == snapshot_id,
            }
            for s in sorted(metadata.snapshots, key=lambda s: s.timestamp_ms)
        ] if history else []
    desc["schema"] = _schema_entries(plan)

    counts = [f.num_records for f in planned]
    removed = sum(int(f.deleted_count) for f in planned)
    known = all(c is not None for c in counts)
    total = sum(int(c) for c in counts if c is not None) if known else None
    equality: dict[str, Any] = {}
    for f in planned:
        for delete in getattr(f, "equality_deletes", ()):
            equality.setdefault(delete.path, delete)
    key_columns = list(dict.fromkeys(n for d in equality.values() for n in d.keys.column_names))
    desc.update(
        data_files=len(planned),
        data_bytes=sum(int(f.size) for f in planned),
        files_without_row_count=sum(c is None for c in counts),
        rows_total=total,
        rows_removed_position_deletes=removed,
        rows_after_position_deletes=None if total is None else total - removed,
        rows_live=None if total is None or equality else total - removed,
        files_with_position_deletes=sum(int(f.deleted_count) > 0 for f in planned),
        equality_delete_files=len(equality),
        equality_delete_columns=key_columns,
        equality_delete_keys=sum(d.keys.num_rows for d in equality.values()),
    )
    if files:
        desc["files"] = [
            {
                "path": relative_to(plan.root, f.path),
                "format": getattr(f, "file_format", "parquet"),
                "bytes": int(f.size),
                "rows": f.num_records,
                "rows_deleted": int(f.deleted_count),
                "equality_deletes": len(getattr(f, "equality_deletes", ())),
                "partition": {k: _json_value(v) for k, v in f.partition_values.items()},
                "partition_text": human(f),
            }
            for f in planned
        ]
    if history:
        desc["history"] = versions
    return desc


def describe_folder(path: str, raw_files: bool = False, files: bool = False) -> dict[str, Any]:
    """A JSON-ready description of the Parquet and ORC files the plain folder ``path`` holds
    (raises :class:`~lazyscan.errors.TableFolderError` for a table's folder unless
    ``raw_files``): count, formats, bytes, rows, the merged schema and hive partition columns;
    ``files``: one entry per file. Each file's footer is read."""
    from lazyscan.format.options import ReaderOptions
    from lazyscan.format.units import open_units
    from lazyscan.scan.dataset import discover, merge_schemas

    ds = discover(path, raw_files=raw_files)
    options = ReaderOptions()
    schemas: list[pa.Schema] = []
    entries: list[dict[str, Any]] = []
    unreadable = []
    for info in ds.files:
        try:
            with open_units(info.path, ds.filesystem, options, fmt=ds.format) as f:
                schemas.append(f.arrow_schema)
                rows = sum(f.unit_rows(u) for u in range(f.num_units()))
                fmt = f.format_name
        except LazyScanError as refused:  # a file of another kind: named, the others described
            unreadable.append({"path": relative_to(path, info.path), "error": str(refused)})
            continue
        entries.append({
            "path": relative_to(path, info.path),
            "format": fmt,
            "bytes": int(info.size),
            "rows": rows,
            "partition": {k: _json_value(v) for k, v in info.partition_values.items()},
        })
    try:
        schema, conflict = merge_schemas(schemas), None
    except LazyScanError as e:  # a scan of the folder fails alike: said, not raised
        schema, conflict = pa.schema([]), str(e)
    partition_names = [f.name for f in ds.partition_schema if schema.get_field_index(f.name) < 0]
    formats: dict[str, int] = {}
    for entry in entries:
        name = str(entry["format"])
        formats[name] = formats.get(name, 0) + 1
    desc: dict[str, Any] = {
        "kind": "folder",
        "root": os.path.abspath(path),
        "raw_files": raw_files,
        "data_files": len(entries),
        "formats": formats,
        "data_bytes": sum(x["bytes"] for x in entries),
        "rows_total": sum(x["rows"] for x in entries),
        "partition_columns": partition_names,
        "schema": [{"name": f.name, "type": str(f.type)} for f in schema]
        + [{"name": f.name, "type": str(f.type)} for f in ds.partition_schema if f.name in partition_names],
        "schema_conflict": conflict,
        "unreadable": unreadable,
    }
    if files:
        desc["files"] = entries
    return desc


# ---- text -----------------------------------------------------------------------------------------


def _count(n: int | None) -> str:
    return "unknown" if n is None else f"{n:,}"


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def _size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n:,} B"


def _pairs(lines: Sequence[tuple[str, str]]) -> list[str]:
    """``label: value`` lines with the values aligned."""
    width = max((len(k) for k, _ in lines), default=0) + 1
    return [f"  {k + ':':<{width}} {v}" for k, v in lines]


def _columns(rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    """Rows of cells as aligned columns (numbers right-aligned where the header says ``#``)."""
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = [c.rjust(w) if rows[0][i].startswith("#") else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        out.append((indent + "  ".join(cells)).rstrip())
    return out


def _rows_line(d: Mapping[str, Any]) -> str:
    if d["rows_total"] is None:
        return f"unknown ({d['files_without_row_count']:,} files without a row count in the log)"
    text = f"{d['rows_total']:,} in the files"
    if d["rows_removed_position_deletes"]:
        what = "deletion vectors" if d["kind"] == "delta" else "position deletes and deletion vectors"
        text += f", {d['rows_removed_position_deletes']:,} removed by {what} ({_plural(d['files_with_position_deletes'], 'file')})"
    if d["equality_delete_files"]:
        return text + f", {d['rows_after_position_deletes']:,} left before equality deletes"
    return text + f", {d['rows_live']:,} live"


def _schema_lines(schema: Sequence[Mapping[str, Any]]) -> list[str]:
    extra_id = any("field_id" in c for c in schema)
    extra_physical = any("physical_name" in c for c in schema)
    header = ["column", "type"] + (["#field id"] if extra_id else []) + (["physical name"] if extra_physical else [])
    rows = [header]
    for c in schema:
        row = [c["name"], c["type"]]
        if extra_id:
            row.append(str(c.get("field_id", "-")))
        if extra_physical:
            row.append(c.get("physical_name", "-"))
        rows.append(row)
    return _columns(rows)


def _partition_text(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={'NULL' if v is None else v}" for k, v in values.items()) or "-"


def _render_table(d: Mapping[str, Any]) -> list[str]:
    lines = [f"{_KIND_NAMES[d['kind']]} table {d['root']}"]
    pairs: list[tuple[str, str]] = []
    if d["kind"] == "delta":
        pairs.append(("version", f"{d['version']}" + (f" (commit info time {d['time']})" if d["time"] else "")))
        if d["column_mapping"] != "none":
            pairs.append(("column mapping", f"by {d['column_mapping']}"))
        pairs.append(("partition columns", ", ".join(d["partition_columns"]) or "-"))
    else:
        snap = "none (the table has no snapshot)" if d["snapshot_id"] is None else str(d["snapshot_id"])
        pairs.append(("snapshot", snap + (f" (committed {d['time']})" if d["time"] else "")))
        pairs.append(("metadata", f"{d['metadata']} (format version {d['format_version']})"))
        spec = [
            f"{p['source']}" if p["transform"] == "identity" else f"{p['name']} = {p['transform']}({p['source']})"
            for p in d["partition_spec"]
        ]
        pairs.append(("partitioned by", ", ".join(spec) or "-"))
    pairs.append(("data files", f"{d['data_files']:,} ({_size(d['data_bytes'])})"))
    pairs.append(("rows", _rows_line(d)))
    if d["equality_delete_files"]:
        pairs.append((
            "equality deletes",
            f"{_plural(d['equality_delete_files'], 'file')} on {', '.join(d['equality_delete_columns'])} "
            f"({d['equality_delete_keys']:,} keys; the rows they remove are known once the keys are read)",
        ))
    elif d["kind"] == "iceberg":
        pairs.append(("equality deletes", "none"))
    lines += _pairs(pairs)
    lines.append(f"schema ({_plural(len(d['schema']), 'column')}):")
    lines += _schema_lines(d["schema"])
    if "files" in d:
        lines.append(f"data files ({len(d['files'])}):")
        iceberg = d["kind"] == "iceberg"
        rows: list[list[str]] = [["path", "#bytes", "#rows", "#deleted"] + (["#eq. delete files"] if iceberg else []) + ["partition"]]
        for f in d["files"]:
            rows.append(
                [f["path"], f"{f['bytes']:,}", _count(f["rows"]), f"{f['rows_deleted']:,}"]
                + ([f"{f['equality_deletes']:,}"] if iceberg else [])
                + [_partition_text(f["partition_text"])]
            )
        lines += _columns(rows)
    if "history" in d:
        lines.append(f"{'versions' if d['kind'] == 'delta' else 'snapshots'} ({len(d['history'])}):")
        rows = []
        if not d["history"]:
            lines.append("  none recorded (the log holds no commit information)" if d["kind"] == "delta" else "  none")
        elif d["kind"] == "delta":
            rows = [["#version", "commit info time", "operation", ""]]
            rows += [[str(h["version"]), h["time"] or "-", h["operation"] or "-", "(read)" if h["current"] else ""] for h in d["history"]]
        else:
            rows = [["#snapshot", "committed", "operation", "#parent", ""]]
            rows += [
                [str(h["snapshot_id"]), h["time"] or "-", h["operation"] or "-", str(h["parent_id"] or "-"), "(read)" if h["current"] else ""]
                for h in d["history"]
            ]
        lines += _columns(rows)
    return lines


def _render_folder(d: Mapping[str, Any]) -> list[str]:
    kinds = ", ".join(f"{n:,} {k}" for k, n in sorted(d["formats"].items())) or "none"
    lines = [f"folder {d['root']}" + (" (read as plain files on request: --raw-files)" if d["raw_files"] else "")]
    lines += _pairs([
        ("files", f"{d['data_files']:,} ({kinds}; {_size(d['data_bytes'])})"),
        ("rows", f"{d['rows_total']:,}"),
        ("partition columns", ", ".join(d["partition_columns"]) or "-"),
    ])
    if d["unreadable"]:
        lines.append(f"not Parquet or ORC files lazyscan reads ({len(d['unreadable'])}; a scan of the folder fails on them):")
        lines += [f"  {u['path']}: {u['error']}" for u in d["unreadable"]]
    if d["schema_conflict"]:
        lines.append(f"schema: the files' schemas do not merge ({d['schema_conflict']}); a scan of the folder fails")
    elif d["schema"]:
        lines.append(f"schema, merged ({_plural(len(d['schema']), 'column')}):")
        lines += _columns([["column", "type"]] + [[c["name"], c["type"]] for c in d["schema"]])
    if "files" in d:
        lines.append(f"files ({len(d['files'])}):")
        rows = [["path", "format", "#bytes", "#rows", "partition"]]
        rows += [[f["path"], f["format"], f"{f['bytes']:,}", f"{f['rows']:,}", _partition_text(f["partition"])] for f in d["files"]]
        lines += _columns(rows)
    return lines


def render(desc: Mapping[str, Any]) -> str:
    """A description of :func:`describe_table` or :func:`describe_folder` as aligned text."""
    return "\n".join(_render_folder(desc) if desc["kind"] == "folder" else _render_table(desc))
