from pathlib import Path

import pytest

from tests.support.data import PARQUET_TESTING, parquet_testing_files


@pytest.fixture(scope="session")
def parquet_testing() -> Path:
    parquet_testing_files()  # raises when the copy is incomplete
    return PARQUET_TESTING
