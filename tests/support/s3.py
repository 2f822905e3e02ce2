"""The S3 server of the tests: moto's standalone server (see :mod:`benchmarks.s3_server`,
which the object-store benchmark shares), and a partitioned table written locally and uploaded."""

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.s3_server import (
    ACCESS_KEY,
    REGION,
    SECRET_KEY,
    S3Server,
    free_port,
    start_s3_server,
)

__all__ = ["ACCESS_KEY", "REGION", "SECRET_KEY", "S3Server", "free_port", "start_s3_server", "upload_partitions"]


def upload_partitions(server: S3Server, folder: Path, bucket: str, prefix: str, rows: int, seed: int) -> None:
    """Two partitions ``part=0`` and ``part=1`` of ``rows`` rows each (``id``, ``k``, ``s``,
    ``x``; row groups of 1,000, page indexes) written to ``folder/part=P/data.parquet`` and
    uploaded to ``bucket`` under ``prefix/part=P/data.parquet``."""
    rng = np.random.default_rng(seed)
    for p in range(2):
        table = pa.table({
            "id": np.arange(p * rows, (p + 1) * rows),
            "k": rng.integers(0, 100, rows),
            "s": [f"s{i % 313}" for i in range(rows)],
            "x": rng.normal(size=rows),
        })
        local = folder / f"part={p}" / "data.parquet"
        local.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, local, row_group_size=1000, write_page_index=True)
        server.upload(local, bucket, f"{prefix}/part={p}/data.parquet")
