import os
from pathlib import Path

import pytest

PARQUET_TESTING = Path(__file__).resolve().parents[2] / "shared" / "parquet-testing" / "data"
if not PARQUET_TESTING.exists():  # CI clones the project beside shared/
    PARQUET_TESTING = Path(os.environ.get("PARQUET_TESTING_DATA", "../shared/parquet-testing/data")).resolve()


@pytest.fixture(scope="session")
def parquet_testing() -> Path:
    if not PARQUET_TESTING.exists():
        pytest.fail(f"parquet-testing data not found at {PARQUET_TESTING}")
    return PARQUET_TESTING
