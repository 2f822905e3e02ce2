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


# Modules whose set-up is long and mostly waits on other processes (a standalone cluster, a
# Spark Connect server) run first, so that with ``-n 2`` the other worker has the rest of the
# suite to run meanwhile instead of both waiting on them at the end.
_LONG_SETUP_FIRST = ("test_spark_cluster.py", "test_spark_connect.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return _LONG_SETUP_FIRST.index(name) if name in _LONG_SETUP_FIRST else len(_LONG_SETUP_FIRST)

    items.sort(key=rank)  # stable: the order within each module is kept
