from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.data import PARQUET_TESTING, parquet_testing_files
from tests.support.s3 import S3Server, start_s3_server


@pytest.fixture(scope="session")
def parquet_testing() -> Path:
    parquet_testing_files()  # raises when the copy is incomplete
    return PARQUET_TESTING


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """moto's S3 server on 127.0.0.1, for the whole session."""
    server = start_s3_server(tmp_path_factory.mktemp("s3"))
    try:
        yield server
    finally:
        server.stop()
