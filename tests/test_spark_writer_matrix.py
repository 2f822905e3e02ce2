"""The writer matrix of ``tests/test_writer_matrix.py`` for Spark's writers: the matrix table
written by Spark through parquet-java (writer versions v1 and v2, ``writeLegacyFormat``, INT96 /
TIMESTAMP_MICROS / TIMESTAMP_MILLIS, codecs, dictionaries off, small pages and row groups, the
legacy hybrid calendar) and through ORC's Java writer (codecs, Bloom filter columns, small
stripes), each file read by lazyscan whole, for row selections and with predicates against the
reference (``tests.support.writers``), pushdown on against off, and whole against Spark's own
reader (``spark_reader``).

``LAZYSCAN_WRITER_MATRIX=wide`` runs more options. :data:`KNOWN_FAILURES` lists the checks that
fail today, as strict xfails: the fix removes the entry.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.spark_support import get_spark
from tests.support.writers import CHECK_FUNCTIONS, Matrix, check_spark_reader, spark_cases

pytestmark = pytest.mark.spark

WIDE = os.environ.get("LAZYSCAN_WRITER_MATRIX", "") == "wide"
SEED = int(os.environ.get("LAZYSCAN_WRITER_MATRIX_SEED", "33"))
ROWS = 6_000 if WIDE else 3_000
PREDICATES = 24 if WIDE else 9
CHECKS = (*CHECK_FUNCTIONS, "spark_reader")

_ORC_CALENDAR = (
    "Spark's ORC writer stores dates and timestamps before 1582-10-15 in the hybrid Julian "
    "calendar (java.sql.Date / Timestamp) and its reader rebases them back (Spark's "
    "OrcDeserializer, DaysWritable); lazyscan (like pyarrow) reads the stored day counts as "
    "proleptic Gregorian, so those rows come back days off from Spark's reading"
)
_PARQUET_CALENDAR = (
    "spark.sql.parquet.datetimeRebaseModeInWrite / int96RebaseModeInWrite LEGACY (Spark 2.x's "
    "files) store dates and timestamps before 1582-10-15 in the hybrid Julian calendar and mark "
    "the file with org.apache.spark.legacyDateTime / legacyINT96; Spark's reader rebases them, "
    "lazyscan reads them unrebased as pyarrow does"
)

#: (case id, check) -> why it fails today; strict xfails, removed when the fix lands
KNOWN_FAILURES: dict[tuple[str, str], str] = {
    ("spark-orc:zlib-bloom", "spark_reader"): _ORC_CALENDAR,
    ("spark-orc:zstd-small-stripes", "spark_reader"): _ORC_CALENDAR,
    ("spark-orc:snappy", "spark_reader"): _ORC_CALENDAR,
    ("spark-orc:lz4-bloom", "spark_reader"): _ORC_CALENDAR,
    ("spark-orc:none-stride-2000", "spark_reader"): _ORC_CALENDAR,
    ("spark:v1-legacy-calendar-int96", "spark_reader"): _PARQUET_CALENDAR,
}


def _case_names() -> list[str]:
    """The cases' ids without a session (the cases themselves need one to write)."""
    return [case.id for case in spark_cases(None, WIDE)]


def _params() -> list[Any]:
    out = []
    for name in _case_names():
        for check in CHECKS:
            reason = KNOWN_FAILURES.get((name, check))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(name, check, id=f"{name}:{check}", marks=marks))
    return out


@pytest.fixture(scope="module")
def spark() -> Any:
    return get_spark()


@pytest.fixture(scope="module")
def matrix(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Matrix:
    return Matrix(tmp_path_factory.mktemp("spark-writer-matrix"), ROWS, SEED, PREDICATES)


@pytest.fixture(scope="module")
def cases(spark: Any) -> dict[str, Any]:
    return {case.id: case for case in spark_cases(spark, WIDE)}


@pytest.mark.parametrize(("name", "check"), _params())
def test_spark_writer_matrix(spark: Any, matrix: Matrix, cases: dict[str, Any], name: str, check: str) -> None:
    written = matrix.written(cases[name])
    if check == "spark_reader":
        check_spark_reader(written, spark)
    else:
        CHECK_FUNCTIONS[check](written)
