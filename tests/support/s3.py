"""The S3 server of the tests: moto's standalone server (see :mod:`benchmarks.s3_server`,
which the object-store benchmark shares)."""

from benchmarks.s3_server import (
    ACCESS_KEY,
    REGION,
    SECRET_KEY,
    S3Server,
    free_port,
    start_s3_server,
)

__all__ = ["ACCESS_KEY", "REGION", "SECRET_KEY", "S3Server", "free_port", "start_s3_server"]
