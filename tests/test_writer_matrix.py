"""The writer matrix: one table of many types (``tests.support.writers.matrix_table``) written
by every writer this machine has — pyarrow, DuckDB, Polars, fastparquet, pyorc and pyarrow.orc —
with the options that change a file's physical layout (page versions, dictionaries and their
fallback, every codec, page indexes, statistics off, BYTE_STREAM_SPLIT, the DELTA encodings,
small pages, row groups and stripes, legacy nested lists, INT96 and coerced timestamps, Bloom
filters, ORC row-index strides, dictionaries and writer time zones), each file read by lazyscan
against the reference (``tests.support.writers.reference``: pyarrow's reading, DuckDB's for the
files pyarrow refuses, pyorc's for ORC timestamps; the normalizations are documented there).

Four checks per file, each a test of its own:

- ``whole``: ``lazyscan.scan(path).to_table()`` equals the reference;
- ``selections``: random row selections of every row group or stripe (sparse, dense, a run,
  the first and last rows): Parquet through ``ParquetFile.read_columns`` with ``RowRanges``,
  ``read_column`` with row indices and ``read_row_group(rows=...)``; ORC through
  ``OrcFile.read_column`` with indices and with ``RowRanges``;
- ``predicates``: predicates drawn from the columns' values (``=``, ``<``, ``>=``, ``IN``,
  ``IS NULL``, ``IS NOT NULL``, ``BETWEEN``, at the minimum and maximum, the sorted columns
  always among them), scanned with pushdown off, against the reference filtered by
  ``pyarrow.compute`` under Spark's semantics (``tests.support.predicates``);
- ``pruning``: the same predicates with pushdown on (every pruning tier) give the rows of
  pushdown off.

``LAZYSCAN_WRITER_MATRIX=wide`` runs the longer matrix (more options, more rows, more
predicates) used to hunt bugs by hand; ``LAZYSCAN_WRITER_MATRIX_SEED`` changes the table.
:data:`KNOWN_FAILURES` lists the checks that fail today, as strict xfails: the fix removes the
entry.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.support.writers import CHECK_FUNCTIONS, Matrix, WriterCase, writer_cases

WIDE = os.environ.get("LAZYSCAN_WRITER_MATRIX", "") == "wide"
SEED = int(os.environ.get("LAZYSCAN_WRITER_MATRIX_SEED", "33"))
ROWS = 6_000 if WIDE else 3_000
PREDICATES = 24 if WIDE else 9
CHECKS = tuple(CHECK_FUNCTIONS)

_DUCKDB_V2_NESTED = (
    "DuckDB's PARQUET_VERSION V2 writes INT32 as DELTA_BINARY_PACKED that pyarrow refuses "
    "('Unexpected end of stream: InitBlock EOF'; DuckDB reads it, and so does lazyscan's own "
    "flat decoder); lazyscan reads nested columns through pyarrow, so list<int32> and "
    "map<string, int32> columns raise CorruptFileError 'nested column cannot be read'"
)

#: (case id, check) -> why it fails today; strict xfails, removed when the fix lands
KNOWN_FAILURES: dict[tuple[str, str], str] = {
    **{
        (f"duckdb:{options}", check): _DUCKDB_V2_NESTED
        for options in ("v2-zstd", "v2-gzip-bloom-nodict", "v2-lz4", "v2-zstd9-stringdictpage")
        for check in CHECKS
    },
}

CASES = writer_cases(wide=WIDE)


def _cases() -> list[Any]:
    out = []
    for case in CASES:
        for check in CHECKS:
            reason = KNOWN_FAILURES.get((case.id, check))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(case, check, id=f"{case.id}:{check}", marks=marks))
    return out


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> Matrix:
    return Matrix(tmp_path_factory.mktemp("writer-matrix"), ROWS, SEED, PREDICATES)


@pytest.mark.parametrize(("case", "check"), _cases())
def test_writer_matrix(matrix: Matrix, case: WriterCase, check: str) -> None:
    CHECK_FUNCTIONS[check](matrix.written(case))
