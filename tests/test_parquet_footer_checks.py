"""Footers whose schema or row counts are invalid are refused with a CorruptFileError naming the
column (or row group), where pyarrow refuses them too; where pyarrow reads them, lazyscan reads
the same type, or refuses as parquet-java and Spark do (each case says which)."""

from __future__ import annotations

import decimal
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lazyscan
from lazyscan.errors import CorruptFileError
from lazyscan.parquet import ParquetFile, clear_caches
from lazyscan.parquet import thrift as T
from tests.support.footer import Node, ParquetPatch

# schema element positions of the table below (0 is the root)
COLUMNS = {"i32": 1, "d32": 2, "d64": 3, "dfl": 4, "ts": 5, "tm": 6, "i8": 7, "s": 8, "dt": 9}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("footer") / "base.parquet"
    dec = [decimal.Decimal("1.25"), None, decimal.Decimal("-3.50")]
    table = pa.table({
        "i32": pa.array([1, 2, None], pa.int32()),
        "d32": pa.array(dec, pa.decimal128(9, 2)),
        "d64": pa.array(dec, pa.decimal128(18, 2)),
        "dfl": pa.array(dec, pa.decimal128(20, 2)),  # FIXED_LEN_BYTE_ARRAY(9)
        "ts": pa.array([1, 2, None], pa.timestamp("us")),
        "tm": pa.array([1, 2, None], pa.time64("us")),
        "i8": pa.array([1, 2, None], pa.int8()),
        "s": pa.array(["a", None, "c"]),
        "dt": pa.array([1, None, 3], pa.date32()),
    })
    pq.write_table(table, path, store_decimal_as_integer=True, store_schema=False)
    return path


Change = Callable[[dict[int, Node]], object]


def _lt(change: Callable[[dict[int, Node]], object], kind: int) -> Change:
    """A change of the element's logical type's ``kind`` struct."""
    return lambda el: change(el[10].value[kind].value)


def _set(fid: int, ftype: int, value: object) -> Callable[[dict[int, Node]], object]:
    return lambda fields: fields.__setitem__(fid, Node(ftype, value))


def _drop(fid: int) -> Callable[[dict[int, Node]], object]:
    return lambda fields: fields.pop(fid)


def _converted_only(*changes: Callable[[dict[int, Node]], object]) -> Change:
    """Drop the logical type, then change the element (its converted type and fields stay)."""
    def change(el: dict[int, Node]) -> None:
        el.pop(10)
        for c in changes:
            c(el)
    return change


def _logical(fields: dict[int, Node]) -> Change:
    return lambda el: el.__setitem__(10, Node(T.STRUCT, fields))


def _unit(u: int) -> Node:
    return Node(T.STRUCT, {u: Node(T.STRUCT, {})})


def _time_like(kind: int, unit: int) -> dict[int, Node]:
    return {kind: Node(T.STRUCT, {1: Node(T.BOOL_TRUE, False), 2: _unit(unit)})}


def _mutant(base: Path, tmp_path: Path, column: str, change: Change) -> Path:
    patch = ParquetPatch(base)
    change(patch.footer[2].value[1][COLUMNS[column]])
    clear_caches()
    return patch.write(tmp_path / "mutant.parquet")


# (column, change, what pyarrow says) where pyarrow refuses the schema: lazyscan refuses it too
REFUSED_BY_BOTH: dict[str, tuple[str, Change, str | None]] = {
    "DECIMAL without precision": ("d32", _lt(_drop(2), 5), "Couldn't deserialize thrift"),
    "DECIMAL without scale": ("d32", _lt(_drop(1), 5), "Couldn't deserialize thrift"),
    "DECIMAL precision 0": ("d32", _lt(_set(2, T.I32, 0), 5), "Precision must be greater than or equal to 1"),
    "DECIMAL scale -2": ("d32", _lt(_set(1, T.I32, -2), 5), "Scale must be a non-negative integer"),
    "DECIMAL scale above precision": ("d32", _lt(_set(1, T.I32, 10), 5), "Scale must be a non-negative integer"),
    "converted DECIMAL without precision": ("d32", _converted_only(_drop(8)), "Invalid DECIMAL precision"),
    "converted DECIMAL scale -1": ("d32", _converted_only(_set(7, T.I32, -1)), "Invalid DECIMAL scale"),
    "converted DECIMAL scale above precision": ("d32", _converted_only(_set(7, T.I32, 10)), "cannot be greater than precision"),
    "TIMESTAMP without unit": ("ts", _lt(_drop(2), 8), "Couldn't deserialize thrift"),
    "TIMESTAMP with an empty unit": ("ts", _lt(_set(2, T.STRUCT, {}), 8), "TimeUnit must be one of"),
    "TIMESTAMP with an unknown unit": ("ts", _lt(_set(2, T.STRUCT, {4: Node(T.STRUCT, {})}), 8), "TimeUnit must be one of"),
    "TIMESTAMP without isAdjustedToUTC": ("ts", _lt(_drop(1), 8), "Couldn't deserialize thrift"),
    "TIME without unit": ("tm", _lt(_drop(2), 7), "Couldn't deserialize thrift"),
    "INTEGER of 7 bits": ("i8", _lt(_set(1, T.BYTE, 7), 10), "Bit width must be exactly 8, 16, 32, or 64"),
    "INTEGER without isSigned": ("i8", _lt(_drop(2), 10), "Couldn't deserialize thrift"),
    "converted UTF8 on INT32": ("i32", _set(6, T.I32, 0), "UTF8 can only annotate BYTE_ARRAY"),
    "converted TIMESTAMP_MILLIS on INT32": ("i32", _set(6, T.I32, 9), "TIMESTAMP_MILLIS can only annotate INT64"),
    "converted LIST on a leaf": ("i32", _set(6, T.I32, 3), "LIST cannot be applied to a primitive type"),
    "converted DATE on INT64": ("ts", _converted_only(_set(6, T.I32, 6)), "DATE can only annotate INT32"),
    "FIXED_LEN_BYTE_ARRAY of length 0": ("dfl", _set(2, T.I32, 0), "Invalid FIXED_LEN_BYTE_ARRAY length"),
    "a leaf without repetition type": ("i32", _drop(3), None),
}


@pytest.mark.parametrize("case", list(REFUSED_BY_BOTH))
def test_invalid_schema_refused_as_pyarrow_refuses_it(base: Path, tmp_path: Path, case: str) -> None:
    column, change, message = REFUSED_BY_BOTH[case]
    path = _mutant(base, tmp_path, column, change)
    with pytest.raises(Exception, match=message):
        pq.read_table(path)
    with pytest.raises(CorruptFileError, match="corrupt schema") as e:
        ParquetFile(path)
    assert e.value.location.column == column and e.value.location.file == str(path)


def test_fixed_length_of_two_gigabytes_is_refused_promptly(base: Path, tmp_path: Path) -> None:
    """A decimal FIXED_LEN_BYTE_ARRAY whose length reads 2**31 - 1: the digits it could hold
    are counted without writing out a number of billions of digits (which never returned), and
    its values, which the pages cannot hold, are refused."""
    path = _mutant(base, tmp_path, "dfl", _set(2, T.I32, 2**31 - 1))
    started = time.perf_counter()
    with pytest.raises(CorruptFileError) as e:
        lazyscan.scan(str(path)).to_table()
    assert time.perf_counter() - started < 10
    assert e.value.location.column == "dfl"


# pyarrow drops an annotation that cannot apply to the physical type and reads the integers;
# parquet-java's schema builder refuses it ("INT32 cannot store 10 digits", ...) and so does
# Spark's ParquetToSparkSchemaConverter ("Invalid decimal precision", illegalType): a column
# whose annotation lies about its values is refused, not read as other values
REFUSED_LIKE_PARQUET_JAVA = {
    "DECIMAL(10, 2) on INT32": ("d32", _lt(_set(2, T.I32, 10), 5)),
    "DECIMAL(19, 2) on INT64": ("d64", _lt(_set(2, T.I32, 19), 5)),
    "DECIMAL(22, 2) on FIXED_LEN_BYTE_ARRAY(9)": ("dfl", _lt(_set(2, T.I32, 22), 5)),
    "converted DECIMAL(10, 2) on INT32": ("d32", _converted_only(_set(8, T.I32, 10))),
    "TIMESTAMP on INT32": ("i32", _logical(_time_like(8, 2))),
    "TIME(MICROS) on INT32": ("i32", _logical(_time_like(7, 2))),
    "TIME(MILLIS) on INT64": ("ts", _logical(_time_like(7, 1))),
    "DATE on INT64": ("ts", _logical({6: Node(T.STRUCT, {})})),
    "INTEGER(64) on INT32": ("i8", _lt(_set(1, T.BYTE, 64), 10)),
    "INTEGER(32) on INT64": ("ts", _logical({10: Node(T.STRUCT, {1: Node(T.BYTE, 32), 2: Node(T.BOOL_TRUE, True)})})),
}


@pytest.mark.parametrize("case", list(REFUSED_LIKE_PARQUET_JAVA))
def test_annotation_that_cannot_apply_is_refused(base: Path, tmp_path: Path, case: str) -> None:
    column, change = REFUSED_LIKE_PARQUET_JAVA[case]
    path = _mutant(base, tmp_path, column, change)
    assert pq.read_table(path).num_rows == 3  # pyarrow reads the integers
    with pytest.raises(CorruptFileError, match="corrupt schema") as e:
        ParquetFile(path)
    assert e.value.location.column == column


# valid or tolerated schemas: lazyscan reads the type pyarrow reads
READ_LIKE_PYARROW = {
    "DECIMAL precision below its values": ("d32", _lt(_set(2, T.I32, 4), 5)),
    "DECIMAL(21, 2) on FIXED_LEN_BYTE_ARRAY(9)": ("dfl", _lt(_set(2, T.I32, 21), 5)),
    "converted DECIMAL without scale": ("d32", _converted_only(_drop(7))),
    "logical DECIMAL over a contradicting converted precision": ("d32", _set(8, T.I32, 7)),
    "STRING on INT32 (ignored)": ("i32", _logical({1: Node(T.STRUCT, {})})),
    "UUID on FIXED_LEN_BYTE_ARRAY(9) (ignored)": ("dfl", _logical({14: Node(T.STRUCT, {})})),
    "a root with a repetition type": ("i32", lambda el: None),
    "INTEGER(16) on INT32": ("i32", _logical({10: Node(T.STRUCT, {1: Node(T.BYTE, 16), 2: Node(T.BOOL_TRUE, True)})})),
}


@pytest.mark.parametrize("case", list(READ_LIKE_PYARROW))
def test_tolerated_schema_read_as_pyarrow_reads_it(base: Path, tmp_path: Path, case: str) -> None:
    column, change = READ_LIKE_PYARROW[case]
    patch = ParquetPatch(base)
    change(patch.footer[2].value[1][COLUMNS[column]])
    if case == "a root with a repetition type":
        patch.footer[2].value[1][0][3] = Node(T.I32, 0)
    clear_caches()
    path = patch.write(tmp_path / "mutant.parquet")
    expected = pq.read_table(path)
    got = lazyscan.scan(str(path)).to_table()
    assert got.schema.field(column).type == expected.schema.field(column).type
    assert got.column(column).equals(expected.column(column))


def _row_group_patch(tmp_path: Path, table: pa.Table) -> ParquetPatch:
    path = tmp_path / "rows.parquet"
    pq.write_table(table, path, row_group_size=4)
    return ParquetPatch(path)


def test_row_group_rows_that_contradict_the_file_are_refused(tmp_path: Path) -> None:
    """A row group's num_rows that its required column and the file's count contradict (the
    next row group's rows would be numbered after it) is refused once, at the footer."""
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("v", pa.int64())])
    table = pa.table({"k": pa.array(range(10), pa.int32()), "v": pa.array([None, *range(9)], pa.int64())}, schema=schema)
    patch = _row_group_patch(tmp_path, table)
    patch.footer[4].value[1][0][3] = Node(T.I64, 7)
    clear_caches()
    path = patch.write(tmp_path / "bad.parquet")
    with pytest.raises(CorruptFileError, match="row groups hold 13 rows, the footer says the file has 10"):
        ParquetFile(path)
    patch.footer[3] = Node(T.I64, 13)  # the file's count follows: the required column still contradicts
    clear_caches()
    path = patch.write(tmp_path / "bad2.parquet")
    with pytest.raises(CorruptFileError, match="holds 4 values, its row group has 7 rows") as e:
        ParquetFile(path)
    assert e.value.location.row_group == 0 and e.value.location.column == "k"


def test_a_file_row_count_left_out_is_not_a_contradiction(tmp_path: Path) -> None:
    """A footer whose num_rows is 0 while its row groups hold rows is read, as pyarrow reads it
    (parquet-testing's repeated_no_annotation.parquet is one)."""
    table = pa.table({"k": pa.array(range(10), pa.int32())})
    patch = _row_group_patch(tmp_path, table)
    patch.footer[3] = Node(T.I64, 0)
    path = patch.write(tmp_path / "zero.parquet")
    assert pq.read_table(path).num_rows == 10
    assert lazyscan.scan(str(path)).to_table().equals(table)


@pytest.mark.parametrize("name", [None, b"i3\xff2"])
def test_a_name_missing_or_not_utf8_is_refused(base: Path, tmp_path: Path, name: bytes | None) -> None:
    """A schema element's name is a required UTF-8 string: pyarrow refuses a file without one,
    or with bytes that are not UTF-8 (lazyscan used to read them as '' or with U+FFFD)."""
    change: Change = _drop(4) if name is None else _set(4, T.BINARY, name)
    path = _mutant(base, tmp_path, "i32", change)
    with pytest.raises((OSError, UnicodeDecodeError)):  # pyarrow refuses, or gives names Python cannot decode
        pq.read_table(path).column_names  # noqa: B018
    with pytest.raises(CorruptFileError, match="without a name" if name is None else "is not UTF-8"):
        ParquetFile(path)


def test_a_chunk_of_another_type_than_the_schema_is_refused_at_the_footer(base: Path, tmp_path: Path) -> None:
    """The schema says INT64 where the chunks hold booleans: refused when the file opens, so a
    scan that reads no row of the column cannot give it the schema's type."""
    path = _mutant(base, tmp_path, "i32", _set(1, T.I32, 2))
    with pytest.raises(CorruptFileError, match="column chunk type differs from the schema") as e:
        lazyscan.scan(str(path), where="i8 IS NULL AND i8 IS NOT NULL").to_table()
    assert e.value.location.column == "i32"



@pytest.mark.parametrize(
    "where",
    ["dec >= 100", "dec > 99999.995", "dec < -100", "dec = 123456.78", "dec IN (123456.78, 1.25)", "dec > 1000000", "dec <= 9.99"],
)
def test_decimals_beyond_their_precision_are_compared_whole(tmp_path: Path, where: str) -> None:
    """A DECIMAL(3, 2) column holding values of more digits: readers keep them whole (pyarrow,
    Spark's vectorized reader), and Spark compares a decimal with a wider literal by widening
    both (DecimalPrecision), so a literal beyond the declared precision is compared, not folded
    to false by the precision (which lost the rows); statistics prune by their actual min/max."""
    values = [decimal.Decimal(v) if v else None for v in ("1.25", "123456.78", "-98765.43", None, "4.00")]
    table = pa.table({"dec": pa.array(values, pa.decimal128(18, 2))})
    path = tmp_path / "wide.parquet"
    pq.write_table(table, path, store_decimal_as_integer=True, store_schema=False)
    patch = ParquetPatch(path)
    element = patch.footer[2].value[1][1]
    element[8] = Node(T.I32, 3)  # converted precision
    element[10].value[5].value[2] = Node(T.I32, 3)  # logical type's precision
    clear_caches()
    damaged = patch.write(tmp_path / "narrow.parquet")
    assert pq.read_schema(damaged).field("dec").type == pa.decimal128(3, 2)
    expected = {
        "dec >= 100": ["123456.78"], "dec > 99999.995": ["123456.78"], "dec < -100": ["-98765.43"],
        "dec = 123456.78": ["123456.78"], "dec IN (123456.78, 1.25)": ["1.25", "123456.78"], "dec > 1000000": [],
        "dec <= 9.99": ["1.25", "-98765.43", "4.00"],
    }[where]
    got = lazyscan.scan(str(damaged), where=where).to_table().column("dec").cast(pa.decimal128(18, 2)).to_pylist()
    assert got == [decimal.Decimal(v) for v in expected]


_LAZY_PLAIN = pytest.mark.xfail(
    strict=True,
    reason="a snappy page is decompressed only up to its last selected value (partial decompression): the length "
    "prefixes of its PLAIN values after it are not walked, so the selective read returns values read from the levels",
)


@pytest.mark.parametrize(
    ("version", "dictionary", "compression"),
    [
        ("1.0", True, "snappy"), ("2.0", True, "snappy"), ("2.0", False, "snappy"), ("1.0", False, "gzip"),
        pytest.param("1.0", False, "snappy", marks=_LAZY_PLAIN),
    ],
)
def test_optional_column_declared_required_is_refused_on_every_route(
    tmp_path: Path, version: str, dictionary: bool, compression: str
) -> None:
    """An OPTIONAL string column whose schema says REQUIRED: its pages' levels are read as
    values. A whole read finds the values do not fit the page (v1) or the levels a required
    column cannot have (v2); a selective read must find it too, not return values read from the
    levels' bytes (it decoded a dictionary code or a length prefix there and stopped at the
    selected rows)."""
    rows = 1000
    values = [None if i % 7 == 3 else f"s{i % 50:02d}-{i}" for i in range(rows)]
    path = tmp_path / "optional.parquet"
    pq.write_table(pa.table({"x": pa.array(values)}), path, compression=compression, data_page_version=version,
                   use_dictionary=dictionary, row_group_size=rows, store_schema=False)
    patch = ParquetPatch(path)
    patch.footer[2].value[1][1][3] = Node(T.I32, 0)  # repetition_type REQUIRED
    patch.metadata(0, 0).pop(16)  # no size statistics (older writers): the pages must show it
    clear_caches()
    damaged = patch.write(tmp_path / "required.parquet")
    pf = ParquetFile(damaged)
    for selection in (None, [0], [5, 6, 7], list(range(0, rows, 4)), [rows - 1]):
        with pytest.raises(CorruptFileError) as e:
            pf.read_column(0, "x", None if selection is None else np.array(selection))
        assert e.value.location.column == "x" and e.value.location.page is not None
    with pytest.raises(CorruptFileError):
        lazyscan.scan(str(damaged), where="x = 's05-5'").to_table()


def test_level_histogram_of_another_schema_is_refused(tmp_path: Path) -> None:
    """An OPTIONAL boolean column declared REQUIRED: a required boolean's PLAIN values fit in the
    levels' bytes, so its pages decode; the size statistics' definition level histogram (two
    counts, for levels 0 and 1) says the column has nulls, and pyarrow refuses it too."""
    table = pa.table({"b": pa.array([None if i % 5 == 0 else i % 3 == 0 for i in range(400)])})
    path = tmp_path / "optional.parquet"
    pq.write_table(table, path, store_schema=False)
    patch = ParquetPatch(path)
    assert len(patch.metadata(0, 0)[16].value[3].value[1]) == 2  # the definition level histogram
    patch.footer[2].value[1][1][3] = Node(T.I32, 0)  # repetition_type REQUIRED
    clear_caches()
    damaged = patch.write(tmp_path / "required.parquet")
    with pytest.raises(OSError, match="histogram"):
        pq.read_table(damaged)
    with pytest.raises(CorruptFileError, match="definition level histogram has 2 counts, the schema's maximum definition level is 0") as e:
        lazyscan.scan(str(damaged)).to_table()
    assert e.value.location.column == "b"
    with pytest.raises(CorruptFileError, match="histogram"):
        ParquetFile(damaged).read_column(0, "b", np.array([3]))
    assert lazyscan.scan(str(path)).to_table().equals(table)
