"""The ``lazyscan`` command line.

- ``lazyscan scan PATH --where SQL [--columns a,b] [--limit N] [--output FILE]``: prints matching
  rows as a table (or writes .parquet / .csv / .json) and a one-line profile;
- ``lazyscan explain PATH --where SQL``: the plan, which predicate runs at which tier, the
  decision log and the full profile;
- ``lazyscan inspect PATH [--files] [--history] [--json]``: row groups, columns, encodings,
  indexes and Bloom filters of a Parquet file; stripes, row groups, encodings, streams and Bloom
  filters of an ORC file; of a Delta Lake or Iceberg table (its folder or metadata file, with the
  time travel flags of ``scan``) the version or snapshot, schema, partitioning, data files, rows
  and deletes (:mod:`lazyscan.cli.describe`); of a plain folder the files it holds and their
  merged schema;
- ``lazyscan warmup``: compile the kernels into numba's cache ahead of the first query (see
  :mod:`lazyscan.scan.warmup`); exit code 1 when a step failed.

Errors are one line on stderr with a non-zero exit code. A progress bar is shown on long scans
when stderr is a terminal.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lazyscan.errors import LazyScanError, OptionError

if TYPE_CHECKING:
    from lazyscan.format.writers import StatisticsTrust


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lazyscan", description="Selective Parquet scans: filter first, read the rest only for surviving rows.")
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("path", help="a Parquet or ORC file, a folder (hive partitions), a glob, or a Delta Lake or Iceberg table")
        sp.add_argument("--where", "-w", default=None, help="SQL predicate, e.g. \"l_comment = 'x' AND l_quantity < 5\"")
        sp.add_argument("--columns", "-c", default=None, help="comma-separated output columns (default: all)")
        sp.add_argument("--threads", type=int, default=None, help="row groups read in parallel (default: cores)")
        sp.add_argument(
            "--option", "-o", action="append", default=[], metavar="NAME=VALUE",
            help="a scan option, e.g. -o prune_bloom=false -o materialization_threshold=10",
        )
        tables(sp)

    def tables(sp: argparse.ArgumentParser) -> None:
        sp.add_argument(
            "--raw-files", action="store_true",
            help="read a Delta Lake or Iceberg table's folder as plain files, files the table removed included",
        )
        sp.add_argument(
            "--table-version", type=int, default=None, metavar="N",
            help="a table's snapshot: a Delta Lake version or an Iceberg snapshot id (default: the current one)",
        )
        sp.add_argument(
            "--as-of", default=None, metavar="TIME",
            help="a table's snapshot current at TIME (ISO 8601, e.g. 2024-05-01T12:00:00+00:00)",
        )
        sp.add_argument(
            "--reroot", action="append", default=[], metavar="OLD=NEW",
            help="an Iceberg table copied from elsewhere: read locations starting with OLD under NEW",
        )

    s = sub.add_parser("scan", help="print or write the matching rows")
    common(s)
    s.add_argument("--limit", "-n", type=int, default=20, help="rows to print (default 20; 0 = all)")
    s.add_argument("--output", default=None, help="write all rows to FILE.parquet, .csv or .json")
    s.add_argument("--profile", action="store_true", help="print the scan's full profile (every counter and timing) on stderr")
    e = sub.add_parser("explain", help="show the plan, the pruning decisions and the profile")
    common(e)
    e.add_argument("--no-run", action="store_true", help="plan only, do not run the scan")
    i = sub.add_parser(
        "inspect", help="describe a Parquet or ORC file's layout, a Delta Lake or Iceberg table, or a folder's files",
    )
    i.add_argument("path", help="a Parquet or ORC file, a Delta Lake or Iceberg table (folder or metadata file), or a folder")
    tables(i)
    i.add_argument("--files", action="store_true", help="a table or folder: one line per data file")
    i.add_argument("--history", action="store_true", help="a table: its versions (Delta Lake) or snapshots (Iceberg)")
    i.add_argument("--json", action="store_true", help="a table or folder: the description as JSON")
    w = sub.add_parser(
        "warmup",
        help="compile the kernels into numba's cache (NUMBA_CACHE_DIR) before the first query",
        description="Scan small sample files of every column type, encoding and codec so that numba "
        "compiles lazyscan's kernels (about 80 s on a 2-core machine) and caches them: later "
        "processes on this machine load them instead. Set NUMBA_CACHE_DIR to choose the cache folder. "
        "With --ship, compile them for a portable CPU level (x86-64-v3 on x86) into the installed "
        "package itself, so a wheel or a packed environment (venv-pack) built afterwards carries "
        "them and a new machine of the same CPU family compiles nothing.",
    )
    w.add_argument(
        "--ship", action="store_true",
        help="compile into the installed package (lazyscan/_kernels) for the portable CPU level",
    )
    w.add_argument("--jobs", "-j", type=int, default=None, help="processes for --ship (default: the CPUs)")
    w.add_argument("--into", default=None, help="with --ship: another folder than the package's _kernels")
    w.add_argument("--force", action="store_true", help="with --ship: rebuild even if built from these sources")
    return p


def _warm_up(args: argparse.Namespace) -> int:
    from lazyscan.scan.warmup import ship_kernels, warm_up

    def run(advance: Any) -> Any:
        if args.ship:
            return ship_kernels(args.jobs, args.into, advance, force=args.force)
        return warm_up(advance)

    if not sys.stderr.isatty():
        report = run(None)
    else:
        from rich.progress import Progress

        with Progress(transient=True) as progress:
            task = progress.add_task("compiling kernels", total=None)

            def advance(done: int, total: int, step: str) -> None:
                progress.update(task, completed=done, total=total, description=f"compiling kernels: {step}")

            report = run(advance)
    print(f"lazyscan warmup: {report.summary()}", file=sys.stderr)
    return 1 if report.failures else 0


def _options(pairs: Sequence[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        if "=" not in pair:
            raise OptionError(f"option {pair!r} is not NAME=VALUE")
        k, _, v = pair.partition("=")
        out[k.strip()] = v.strip()
    return out


def _make_scan(args: argparse.Namespace) -> object:
    import lazyscan

    columns = [c.strip() for c in args.columns.split(",")] if args.columns else None
    options: dict[str, Any] = _options(args.option)
    if args.raw_files:
        options["raw_files"] = True
    options.update(_table_options(args))
    return lazyscan.scan(args.path, columns=columns, where=args.where, threads=args.threads, **options)


def _table_options(args: argparse.Namespace) -> dict[str, Any]:
    """The table options the flags ``--table-version``, ``--as-of`` and ``--reroot`` give."""
    options: dict[str, Any] = {}
    if args.table_version is not None:
        options["version"] = args.table_version
    if args.as_of is not None:
        import datetime as dt

        try:
            options["timestamp"] = dt.datetime.fromisoformat(args.as_of)
        except ValueError:
            raise OptionError(f"--as-of {args.as_of!r} is not an ISO 8601 time") from None
    if args.reroot:
        options["reroot"] = _options(args.reroot)
    return options


def _batches_with_progress(scan: object) -> list[pa.RecordBatch]:
    from lazyscan.scan import Scan

    assert isinstance(scan, Scan)
    if not sys.stderr.isatty():
        return list(scan.to_batches())
    from rich.progress import Progress

    batches = []
    with Progress(transient=True) as progress:
        task = progress.add_task("scanning", total=None)
        for b in scan.to_batches():
            batches.append(b)
            progress.update(task, advance=b.num_rows, description=f"scanning: {scan.profile['row_groups_total']} row groups")
    return batches


def _print_table(table: pa.Table, limit: int) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    shown = table if limit <= 0 else table.slice(0, limit)
    t = Table(show_lines=False)
    for name in shown.column_names:
        t.add_column(name, overflow="fold")
    for row in shown.to_pylist():
        t.add_row(*["NULL" if v is None else str(v) for v in row.values()])
    console.print(t)
    if limit > 0 and table.num_rows > limit:
        console.print(f"... {table.num_rows - limit:,} more rows (use --limit 0 or --output)")


def _write(table: pa.Table, path: str) -> None:
    if path.endswith(".parquet"):
        import pyarrow.parquet as pq

        pq.write_table(table, path)
    elif path.endswith(".csv"):
        import pyarrow.csv as pcsv

        pcsv.write_csv(table, path)
    elif path.endswith(".json"):
        import json

        with open(path, "w") as f:
            json.dump(table.to_pylist(), f, default=str)
    else:
        raise OptionError(f"cannot write {path!r}: use .parquet, .csv or .json")


def _inspect_orc(path: str) -> str:
    from lazyscan.orc import OrcFile
    from lazyscan.orc import proto as P

    f = OrcFile(path)
    ps = f.postscript
    version = ".".join(map(str, ps.version)) or "?"
    lines = [
        f"{path}: ORC {version}, {f.num_rows:,} rows, {f.num_stripes} stripes, "
        f"{P.COMPRESSION_NAMES.get(f.compression, f.compression)} compression"
        + (f" ({f.block_size:,} B blocks)" if f.compression else "")
        + f", row index stride {f.row_index_stride:,}"
    ]
    from lazyscan.orc.statistics import file_trust

    trust = file_trust(f.postscript, f.footer)
    lines.append(f"written by {trust.writer.name} {trust.writer.text or ''}".rstrip() + f", writer version {ps.writer_version}")
    lines += _writer_rules(trust)
    lines.append(f"schema: {f.arrow_schema}")
    for s in range(f.num_stripes):
        info = f.stripe(s)
        footer = f.stripe_footer(s)
        tz = f", writer time zone {footer.writer_timezone}" if footer.writer_timezone else ""
        lines.append(
            f"stripe {s}: {info.number_of_rows:,} rows, index {info.index_length:,} B, data {info.data_length:,} B{tz}"
        )
        for c in f.columns:
            streams = f.streams(s, c.id)
            enc = footer.columns[c.id]
            size = sum(st.length for k, st in streams.items() if k not in (P.ROW_INDEX, P.BLOOM_FILTER, P.BLOOM_FILTER_UTF8))
            extras = []
            index = f.row_index(s, c.name) if c.flat else None
            if index:
                extras.append(f"row index ({len(index)} row groups)")
            if P.BLOOM_FILTER_UTF8 in streams or P.BLOOM_FILTER in streams:
                extras.append("bloom" + (" (utf8)" if P.BLOOM_FILTER_UTF8 in streams else " (pre-UTF-8)"))
            encoding = P.ENCODING_NAMES.get(enc.kind, str(enc.kind))
            if enc.kind in (P.DICTIONARY, P.DICTIONARY_V2):
                encoding += f" ({enc.dictionary_size:,} entries)"
            kinds = "+".join(P.STREAM_NAMES.get(k, str(k)) for k in sorted(streams) if k not in (P.ROW_INDEX, P.BLOOM_FILTER, P.BLOOM_FILTER_UTF8))
            lines.append(
                f"  {c.name} ({P.TYPE_NAMES.get(c.type.kind, c.type.kind)}): {size:,} B, {encoding}, streams {kinds or '-'}"
                + (f", {', '.join(extras)}" if extras else "")
            )
    return "\n".join(lines)


def _is_orc(path: str) -> bool:
    from lazyscan.io.source import open_source

    with open_source(path) as src:
        return src.size >= 3 and src.read_at(0, 3) == b"ORC"


def _writer_rules(trust: StatisticsTrust) -> list[str]:
    """The writer's known statistics bugs that apply to this file: what pruning leaves unused."""
    if not trust.rules:
        return []
    return ["statistics not used for pruning (known bugs of this writer):"] + [f"  {r.describe()}" for r in trust.rules]


def _inspect(path: str) -> str:
    from lazyscan.format.writers import parquet_trust
    from lazyscan.parquet import ParquetFile

    if _is_orc(path):
        return _inspect_orc(path)
    pf = ParquetFile(path)
    lines = [f"{path}: {pf.num_rows:,} rows, {pf.num_row_groups} row groups, created by {pf.metadata.created_by}"]
    lines += _writer_rules(parquet_trust(pf.metadata.created_by))
    lines.append(f"schema: {pf.arrow_schema}")
    for rg in range(pf.num_row_groups):
        r = pf.metadata.row_groups[rg]
        lines.append(f"row group {rg}: {r.num_rows:,} rows")
        for desc in pf.schema.columns:
            md = r.columns[desc.index].meta_data
            if md is None:
                continue
            ch = r.columns[desc.index]
            extras = []
            if ch.offset_index_offset is not None:
                extras.append("offset index")
            if ch.column_index_offset is not None:
                extras.append("column index")
            if md.bloom_filter_offset is not None:
                extras.append("bloom")
            from lazyscan.parquet.codecs import codec_name

            lines.append(
                f"  {desc.name}: {md.total_compressed_size:,} B {codec_name(md.codec)}, encodings {list(md.encodings)}"
                + (f", {', '.join(extras)}" if extras else "")
            )
    return "\n".join(lines)


def _inspect_path(args: argparse.Namespace) -> str:
    """``lazyscan inspect``: a table's snapshot, a plain folder's files, or one file's layout."""
    import json
    import os

    from lazyscan.cli.describe import describe_folder, describe_table, render
    from lazyscan.errors import ObjectNotFoundError, TableFolderError
    from lazyscan.scan.dataset import discover
    from lazyscan.scan.table_source import table_of

    path = args.path[len("file://") :] if args.path.startswith("file://") else args.path
    given = _table_options(args)
    plan = table_of(path, args.raw_files, given)
    if plan is not None:
        desc = describe_table(plan, files=args.files, history=args.history, reroot=given.get("reroot"))
        return json.dumps(desc, indent=2) if args.json else render(desc)
    remote = "://" in path
    if not remote and not os.path.exists(path):
        raise ObjectNotFoundError(f"{args.path}: no such file or folder")
    if not remote and os.path.isdir(path):
        if args.history:
            raise OptionError(f"--history lists a table's versions; {args.path} is a folder of plain files")
        desc = describe_folder(path, raw_files=args.raw_files, files=args.files)
        return json.dumps(desc, indent=2) if args.json else render(desc)
    wrong = [flag for flag, on in (("--files", args.files), ("--history", args.history), ("--json", args.json)) if on]
    if wrong:
        raise OptionError(f"{', '.join(wrong)}: flags for a table or a folder; {args.path} is one file")
    text = _inspect(args.path)
    if not remote and not args.raw_files:
        try:
            discover(path)
        except TableFolderError as e:
            text += (
                f"\nnote: this file lies inside {'a Delta Lake' if e.kind == 'delta' else 'an Apache Iceberg'} "
                f"table at {e.root}, which may no longer hold its rows: `lazyscan inspect {e.root}` describes the table"
            )
    return text


def _table_summary(scan: Any) -> str | None:
    """The table level of a finished scan of a table, one line: files pruned by partition
    values and by the table's statistics, rows removed by deletes; None for plain files."""
    if scan.table is None:
        return None
    c = scan.profile.counters
    return (
        f"table {scan.table.context}: {c.get('files', 0):,} data files, pruned: partition "
        f"{c.get('files_pruned_partition', 0):,}, table statistics {c.get('files_pruned_table_stats', 0):,}; "
        f"rows removed: {c.get('rows_removed_position_deletes', 0):,} by deletion vectors and position deletes, "
        f"{c.get('rows_removed_equality_deletes', 0):,} by equality deletes"
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "inspect":
            print(_inspect_path(args))
            return 0
        if args.command == "warmup":
            return _warm_up(args)
        scan = _make_scan(args)
        if args.command == "explain":
            print(scan.explain(analyze=not args.no_run))  # type: ignore[attr-defined]
            return 0
        batches = _batches_with_progress(scan)
        table = pa.Table.from_batches(batches, schema=scan.schema) if batches else scan.schema.empty_table()  # type: ignore[attr-defined]
        if args.output:
            _write(table, args.output)
            print(f"wrote {table.num_rows:,} rows to {args.output}")
        else:
            _print_table(table, args.limit)
        print(scan.profile.summary(), file=sys.stderr)  # type: ignore[attr-defined]
        table_line = _table_summary(scan)
        if table_line:
            print(table_line, file=sys.stderr)
        if args.profile:
            print(scan.profile.table(), file=sys.stderr)  # type: ignore[attr-defined]
        return 0
    except LazyScanError as e:
        print(f"lazyscan: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except OSError as e:
        print(f"lazyscan: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
