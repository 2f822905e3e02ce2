"""Schema shapes other writers produce, and column names of every kind.

- Groups without leaves (``nested: struct<inner: struct<>>``, DuckDB's ``empty_group_test``):
  pyarrow cannot write them, so files are made by rewriting the schema list of a pyarrow-written
  footer with :class:`lazyscan.parquet.thrift.CompactWriter`; every read (whole, some columns,
  filtered) equals pyarrow's: the type is the shape of the group, every value NULL.
- Column names with dots, spaces, quotes of every kind, backquotes, non-ASCII letters, SQL
  keywords, the empty string, names that differ only in case, and a top-level ``s.x`` beside a
  struct ``s`` with a field ``x``: in ``columns=``, in ``where=`` (backquotes, double quotes,
  ``col(...)``), in Parquet (pyarrow) and ORC (pyorc) files, against pyarrow and DuckDB.

Names resolve as Spark resolves them (``spark.sql.caseSensitive=false`` unless the scan option
``case_sensitive=True``): the exact name first, then the one name equal to it ignoring case;
two such names make the reference ambiguous. ``s.x`` without quotes in SQL text is field ``x``
of struct ``s`` (Spark's reading), which predicates cannot read; `` `s.x` `` and ``col("s.x")``
are the top-level column named ``s.x``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import lazyscan
from lazyscan import col
from lazyscan.errors import LazyScanError, PredicateError
from lazyscan.parquet.metadata import Repetition
from lazyscan.parquet.thrift import (
    BINARY,
    I32,
    LIST,
    STRUCT,
    CompactReader,
    CompactWriter,
    read_struct,
)
from lazyscan.predicate import Expr
from tests.support.data import foreign_file

# ---- groups without leaves ---------------------------------------------------------------------


def _struct_spans(data: bytes, pos: int) -> tuple[list[tuple[int, int, int, int]], int]:
    """(field id, type, start, end) of each field of the compact struct at ``data[pos:]``, and
    where the struct ends."""
    r = CompactReader(data, pos)
    out: list[tuple[int, int, int, int]] = []
    last = 0
    while True:
        start = r.pos
        header = r._byte()
        if header == 0:
            return out, r.pos
        ftype, delta = header & 0x0F, header >> 4
        fid = last + delta if delta else r.zigzag()
        last = fid
        r.value(ftype, 0)
        out.append((fid, ftype, start, r.pos))


def _varint(n: int) -> bytes:
    w = CompactWriter()
    w.varint(n)
    return bytes(w.out)


def group(name: str, children: int = 0, repetition: Repetition = Repetition.OPTIONAL) -> bytes:
    """A schema element of a group (no physical type), compact-encoded."""
    w = CompactWriter()
    w.struct([(3, I32, int(repetition)), (4, BINARY, name), (5, I32, children)])
    return bytes(w.out)


def rewrite_schema(src: Path, dst: Path, edit) -> None:
    """Copy ``src`` to ``dst`` with the footer's schema list rewritten: ``edit`` gets the
    top-level fields, each as the list of its encoded schema elements (depth first), and
    returns the new list. Column chunks are untouched, so ``edit`` keeps every leaf in order."""
    data = src.read_bytes()
    n = int.from_bytes(data[-8:-4], "little")
    footer = data[-8 - n : -8]
    spans, _ = _struct_spans(footer, 0)
    [(_, _, start, end)] = [s for s in spans if s[0] == 2]
    r = CompactReader(footer, start + 1)  # after the field header (field 2 follows field 1)
    size = r._byte() >> 4
    if size == 15:
        size = r.varint()
    elements = []
    for _ in range(size):
        first = r.pos
        r.struct(1)
        elements.append(footer[first : r.pos])
    root, _ = read_struct(elements[0])
    tops: list[list[bytes]] = []
    i = 1
    while i < len(elements):
        first, remaining = i, 1
        while remaining:
            remaining += read_struct(elements[i])[0].get(5, 0) - 1
            i += 1
        tops.append(elements[first:i])
    new_tops = edit(tops)
    w = CompactWriter()
    w.struct([(4, BINARY, root[4]), (5, I32, len(new_tops))])
    items = [bytes(w.out)] + [e for top in new_tops for e in top]
    header = bytes([0xF0 | STRUCT]) + _varint(len(items)) if len(items) >= 15 else bytes([(len(items) << 4) | STRUCT])
    new_footer = footer[:start] + bytes([(1 << 4) | LIST]) + header + b"".join(items) + footer[end:]
    dst.write_bytes(data[: -8 - n] + new_footer + len(new_footer).to_bytes(4, "little") + b"PAR1")


def _same_as_pyarrow(path: Path, where: str | None = None, mask=None, columns=None) -> pa.Table:
    got = lazyscan.scan(path, columns=columns, where=where).to_table()
    want = pq.read_table(path)
    if mask is not None:
        want = want.filter(mask(want))
    if columns is not None:
        want = want.select(columns)
    assert got.schema == want.schema, f"{got.schema}\n!=\n{want.schema}"
    assert got.equals(want), f"{where}: {got.to_pydict()} != {want.to_pydict()}"
    return got


def test_duckdbs_empty_group_reads_as_pyarrow_reads_it() -> None:
    path = foreign_file("empty_group_test.parquet")
    full = _same_as_pyarrow(path)
    assert full.schema.field("nested").type == pa.struct([("inner", pa.struct([]))])
    assert full.column("nested").null_count == full.num_rows
    _same_as_pyarrow(path, columns=["nested"])
    _same_as_pyarrow(path, "id = 1", lambda t: pc.equal(t["id"], 1))
    _same_as_pyarrow(path, "id = 2", lambda t: pc.equal(t["id"], 2))
    _same_as_pyarrow(path, "nested IS NULL", lambda t: pc.is_null(t["nested"]))
    _same_as_pyarrow(path, "nested IS NOT NULL", lambda t: pc.is_valid(t["nested"]))
    got = lazyscan.scan(path, columns=["nested", "optional_data"], where="id = 1 AND optional_data > 0").to_table()
    assert got.to_pydict() == {"nested": [None], "optional_data": [100]}
    pf = lazyscan.ParquetFile(path)
    assert pf.arrow_schema == pq.read_schema(path)
    assert [c.name for c in pf.schema.columns] == ["id", "optional_data"]


@pytest.fixture(scope="module")
def base_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """id, x and a struct s{a} in three row groups; no stored Arrow schema (as DuckDB writes)."""
    path = tmp_path_factory.mktemp("groups") / "base.parquet"
    t = pa.table({
        "id": pa.array(range(7), pa.int64()),
        "x": pa.array([10, None, 30, 40, None, 60, 70], pa.int32()),
        "s": pa.array([{"a": i} if i % 3 else None for i in range(7)], pa.struct([("a", pa.int64())])),
    })
    pq.write_table(t, path, store_schema=False, row_group_size=3)
    return path


EMPTY_GROUP_LAYOUTS = {
    # an empty group first, a group of empty groups between leaves, a required one last
    "around_leaves": lambda t: [
        [group("e0")], t[0], [group("nested", 1), group("inner")], t[1], t[2],
        [group("r", 2, Repetition.REQUIRED), group("r1", 0, Repetition.REQUIRED), group("r2")],
    ],
    # four levels of groups and no leaf
    "deep": lambda t: [t[0], [group("a", 1), group("b", 1), group("c", 1), group("d")], t[1], t[2]],
}


def test_empty_group_inside_a_struct_with_leaves(tmp_path: Path, base_file: Path) -> None:
    """``s: struct<a: int64, e: struct<>>``: pyarrow ("Parquet non-leaf node has no children")
    and DuckDB ("Not implemented Error: STRUCT") refuse to read ``s``; lazyscan, which reads
    nested columns through pyarrow, refuses it with its own error naming the column, and reads
    the other columns and filters on them."""
    path = tmp_path / "inside_a_struct.parquet"
    rewrite_schema(base_file, path, lambda t: [t[0], t[1], [group("s", 2), t[2][1], group("e")]])
    assert pq.read_schema(path).field("s").type == pa.struct([("a", pa.int64()), ("e", pa.struct([]))])
    with pytest.raises(pa.ArrowException):
        pq.read_table(path, columns=["s"])
    with pytest.raises(LazyScanError, match="column 's'"):
        lazyscan.scan(path).to_table()
    base = pq.read_table(base_file)
    got = lazyscan.scan(path, columns=["id", "x"], where="x > 30").to_table()
    assert got.equals(base.filter(pc.greater(base["x"], 30)).select(["id", "x"]))


@pytest.mark.parametrize("layout", sorted(EMPTY_GROUP_LAYOUTS))
def test_empty_groups_of_every_layout(tmp_path: Path, base_file: Path, layout: str) -> None:
    path = tmp_path / f"{layout}.parquet"
    rewrite_schema(base_file, path, EMPTY_GROUP_LAYOUTS[layout])
    full = _same_as_pyarrow(path)
    assert full.num_rows == 7
    _same_as_pyarrow(path, "id >= 2 AND id < 5", lambda t: pc.and_(pc.greater_equal(t["id"], 2), pc.less(t["id"], 5)))
    _same_as_pyarrow(path, "id > 100", lambda t: pc.greater(t["id"], 100))
    for name in full.schema.names:
        _same_as_pyarrow(path, "id IN (1, 5)", lambda t: pc.is_in(t["id"], pa.array([1, 5], pa.int64())), columns=[name])
        _same_as_pyarrow(path, f"`{name}` IS NULL", lambda t, n=name: pc.is_null(t[n]))


def test_orc_empty_structs(tmp_path: Path) -> None:
    """ORC stores a struct without fields with its own presence stream: values (not only NULLs)
    come back, as pyarrow reads them."""
    import pyarrow.orc as po
    import pyorc

    path = tmp_path / "empty_structs.orc"
    with path.open("wb") as f, pyorc.Writer(f, "struct<a:int,e:struct<>,n:struct<i:struct<>>>") as w:
        w.writerows([(1, (), ((),)), (2, None, None), (3, (), (None,))])
    want = po.read_table(path)
    assert lazyscan.scan(path).to_table().equals(want)
    assert lazyscan.scan(path, where="a >= 2").to_table().equals(want.slice(1))
    assert lazyscan.scan(path, columns=["n"], where="e IS NULL").to_table().equals(want.slice(1, 1).select(["n"]))


# ---- column names ------------------------------------------------------------------------------

#: every name a file can hold that SQL text has to quote (and a few it need not)
ODD_NAMES = [
    "", "a.b", "a b", "it's", 'say "hi"', "back`tick", "semi;colon", "ünïcödé", "日本語", "select",
    "from", "where", "Mixed", "s.x", "tab\there",
]


def _odd_table() -> pa.Table:
    n = 6
    columns: dict[str, pa.Array] = {}
    for k, name in enumerate(ODD_NAMES):
        columns[name] = pa.array([None if (i + k) % 4 == 0 else i * 10 + k for i in range(n)], pa.int64())
    columns["s"] = pa.array([{"x": -i} for i in range(n)], pa.struct([("x", pa.int64())]))
    return pa.table(columns)


def _backquoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _double_quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@pytest.fixture(scope="module")
def odd_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    import pyorc

    d = tmp_path_factory.mktemp("names")
    t = _odd_table()
    parquet = d / "odd.parquet"
    pq.write_table(t, parquet, row_group_size=4)
    orc = d / "odd.orc"
    fields: dict[str, Any] = {name: pyorc.BigInt() for name in ODD_NAMES}
    fields["s"] = pyorc.Struct(x=pyorc.BigInt())
    with orc.open("wb") as f, pyorc.Writer(f, pyorc.Struct(**fields)) as w:
        for row in t.to_pylist():
            w.write((*(row[name] for name in ODD_NAMES), (row["s"]["x"],)))
    return {"parquet": parquet, "orc": orc}


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_every_odd_name_in_columns_and_where(odd_files: dict[str, Path], fmt: str) -> None:
    """Each name as the only output column, then as the filter column written three ways
    (backquotes, double quotes, ``col``): the rows pyarrow's compute keeps."""
    path = odd_files[fmt]
    reference = _odd_table()
    full = lazyscan.scan(path).to_table()
    assert full.schema.names == reference.schema.names
    assert full.equals(reference)
    for name in ODD_NAMES:
        assert lazyscan.scan(path, columns=[name]).to_table().column(0).to_pylist() == reference.column(name).to_pylist()
        want = reference.filter(pc.greater(reference[name], 20))
        greater: list[str | Expr] = [f"{_backquoted(name)} > 20", f"{_double_quoted(name)} > 20", f"20 < {_double_quoted(name)}", col(name) > 20]
        for where in greater:
            got = lazyscan.scan(path, where=where).to_table()
            assert got.equals(want), f"{fmt}: {where!r}"
        nulls = reference.filter(pc.is_null(reference[name]))
        null_checks: list[str | Expr] = [f"{_backquoted(name)} IS NULL", f"{_double_quoted(name)} IS NULL", col(name).is_null()]
        for where in null_checks:
            got = lazyscan.scan(path, columns=["s", name], where=where).to_table()
            assert got.equals(nulls.select(["s", name])), f"{fmt}: {where!r}"


def test_odd_names_against_duckdb(odd_files: dict[str, Path]) -> None:
    """DuckDB reads the same rows for the same filter written in its own quoting; names are
    compared by value (DuckDB resolves identifiers case-insensitively, as lazyscan does here)."""
    path = odd_files["parquet"]
    con = duckdb.connect()
    for name in ODD_NAMES:
        if name == "":
            continue  # DuckDB refuses the zero-length identifier ""
        quoted = _double_quoted(name)
        for cond in [f"{quoted} BETWEEN 15 AND 45", f"{quoted} IN (1, 21, 53) OR {quoted} IS NULL"]:
            want = con.execute(f"SELECT {quoted} FROM read_parquet('{path}') WHERE {cond}").fetchall()
            got = lazyscan.scan(path, columns=[name], where=cond).to_table()
            assert got.column(0).to_pylist() == [row[0] for row in want], cond


def test_double_quotes_make_a_name_only_where_a_column_stands(odd_files: dict[str, Path]) -> None:
    """Compared with a column, a double-quoted text is a string (Spark's default reading); two
    double-quoted operands are refused; LIKE, IN and BETWEEN take a double-quoted subject."""
    path = odd_files["parquet"]
    t = pa.table({"name": ["a b", "x", None], "a b": [1, 2, 3]})
    strings = path.parent / "strings.parquet"
    pq.write_table(t, strings)
    assert lazyscan.scan(strings, where='name = "a b"').to_table().column("a b").to_pylist() == [1]
    assert lazyscan.scan(strings, where='"a b" = 2').to_table().column("name").to_pylist() == ["x"]
    assert lazyscan.scan(strings, where='"name" LIKE "a%"').to_table().column("a b").to_pylist() == [1]
    assert lazyscan.scan(strings, where='"a b" IN (1, 3)').to_table().column("a b").to_pylist() == [1, 3]
    assert lazyscan.scan(strings, where='NOT ("a b" BETWEEN 2 AND 3)').to_table().column("a b").to_pylist() == [1]
    with pytest.raises(PredicateError, match="both sides are in double quotes"):
        lazyscan.scan(strings, where='"name" = "a b"')
    with pytest.raises(PredicateError, match="unknown column"):
        lazyscan.scan(strings, where='"no such" = 1')


def test_dotted_names_are_whole_names_and_nested_fields_are_refused(odd_files: dict[str, Path]) -> None:
    path = odd_files["parquet"]
    reference = _odd_table()
    top = lazyscan.scan(path, columns=["s.x"], where="`s.x` > 20").to_table()
    assert top.column(0).to_pylist() == [v for v in reference.column("s.x").to_pylist() if v is not None and v > 20]
    assert lazyscan.scan(path, columns=["s.x"], where=col("s.x") > 20).to_table().equals(top)
    with pytest.raises(PredicateError, match="nested"):
        lazyscan.scan(path, where="s.x > 0")  # field x of struct s: Spark's reading
    with pytest.raises(PredicateError, match="nested field"):
        lazyscan.scan(path, where=col("s.y") > 0)  # no top-level s.y: the message says why
    assert lazyscan.scan(path, columns=["s"]).to_table().column(0).to_pylist() == reference.column("s").to_pylist()


@pytest.fixture(scope="module")
def case_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Columns ``ab`` and ``AB`` (differ only in case) and ``Mixed``, in Parquet and ORC."""
    import pyorc

    d = tmp_path_factory.mktemp("case")
    t = pa.table({"ab": pa.array([1, 2, 3], pa.int64()), "AB": pa.array([30, 20, 10], pa.int64()), "Mixed": pa.array([7, 8, 9], pa.int64())})
    pq.write_table(t, d / "case.parquet")
    with (d / "case.orc").open("wb") as f, pyorc.Writer(f, "struct<ab:bigint,AB:bigint,Mixed:bigint>") as w:
        w.writerows(tuple(r.values()) for r in t.to_pylist())
    return {"parquet": d / "case.parquet", "orc": d / "case.orc"}


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_names_that_differ_only_in_case(case_files: dict[str, Path], fmt: str) -> None:
    path = case_files[fmt]
    # an exact name wins over one that differs only in case
    assert lazyscan.scan(path, columns=["AB"], where="ab = 1").to_table().to_pydict() == {"AB": [30]}
    assert lazyscan.scan(path, columns=["ab"], where="AB = 10").to_table().to_pydict() == {"ab": [3]}
    # one column equal ignoring case: resolved to it, output under the file's spelling
    got = lazyscan.scan(path, columns=["MIXED"], where="mixed >= 8").to_table()
    assert got.to_pydict() == {"Mixed": [8, 9]}
    # two columns equal ignoring case: ambiguous, the message names both
    ambiguous: list[dict[str, Any]] = [{"where": "Ab = 1"}, {"columns": ["aB"]}, {"where": col("aB").is_null()}]
    for kwargs in ambiguous:
        with pytest.raises(PredicateError, match=r"ambiguous: ab, AB differ only in case"):
            lazyscan.scan(path, **kwargs)
    # case-sensitive resolution (Spark's spark.sql.caseSensitive=true): exact names only
    with pytest.raises(PredicateError, match=r"unknown column mixed \(names are resolved case-sensitively; Mixed differs in case\)"):
        lazyscan.scan(path, where="mixed = 8", case_sensitive=True)
    with pytest.raises(PredicateError, match="unknown column MIXED"):
        lazyscan.scan(path, columns=["MIXED"], case_sensitive=True)
    exact = lazyscan.scan(path, columns=["AB", "Mixed"], where="ab > 1", case_sensitive=True).to_table()
    assert exact.to_pydict() == {"AB": [20, 10], "Mixed": [8, 9]}


def test_bind_resolution_table() -> None:
    """The resolution rule itself on a schema with an exact pair, a duplicated name and a
    struct: what each reference binds to or why it fails."""
    schema = pa.schema([("a", pa.int32()), ("A", pa.int32()), ("Bee", pa.int32()), ("dup", pa.int32()), ("dup", pa.int64()),
                        ("s", pa.struct([("x", pa.int32())]))])
    from lazyscan.predicate import bind, referenced_columns
    from lazyscan.predicate.bind import resolve_name

    assert resolve_name("a", schema.names) == "a"
    assert resolve_name("A", schema.names) == "A"
    assert resolve_name("bee", schema.names) == "Bee"
    assert resolve_name("BEE", schema.names) == "Bee"
    with pytest.raises(PredicateError, match="unknown column bee"):
        resolve_name("bee", schema.names, case_sensitive=True)
    with pytest.raises(PredicateError, match="schema has 2 columns named dup"):
        bind(col("dup").is_null(), schema)
    with pytest.raises(PredicateError, match="x of the struct column s is a nested field"):
        bind(col("S.x") == 1, schema)
    bound = bind(col("Bee") == 1, schema, case_sensitive=True)
    assert referenced_columns(bound) == {"Bee"}
