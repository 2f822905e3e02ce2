"""The retry budget and the object-store errors reach every request of a scan: the reads of the
files (``ScanOptions.retry_seconds``), the listing of the source, the ORC tail, the S3
filesystems the Spark source makes from ``fs.*`` options; and a page fetched again after a
checksum mismatch shows in the profile."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
import pyarrow.parquet as pq
import pytest

import lazyscan
from lazyscan.errors import AccessDeniedError, ObjectNotFoundError, TransientSourceError
from lazyscan.io.source import MIN_REMOTE_READ, s3_filesystem_for_lazyscan
from tests.support.faults import Rule, fault_proxy, status
from tests.support.s3 import ACCESS_KEY, REGION, SECRET_KEY, S3Server

BUCKET = "lazyscan-retry-wiring"


@pytest.fixture(scope="module")
def objects(s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A Parquet and an ORC file, locally and on the server."""
    folder = tmp_path_factory.mktemp("wiring")
    n = 20_000
    rng = np.random.default_rng(8)
    table = pa.table({"id": np.arange(n), "k": rng.integers(0, 500, n), "x": rng.normal(size=n)})
    local = {"parquet": folder / "t.parquet", "orc": folder / "t.orc"}
    pq.write_table(table, local["parquet"], row_group_size=5000)
    po.write_table(table, local["orc"], stripe_size=64 * 1024)
    keys = {kind: s3_server.upload(p, BUCKET, f"data/{p.name}")[len("s3://") :] for kind, p in local.items()}
    return {"local": local, "keys": keys}


def _filesystem(client: str, server: S3Server, proxy: Any) -> Any:
    """A filesystem through ``proxy`` making one attempt per request (lazyscan retries)."""
    if client == "pyarrow":
        return s3_filesystem_for_lazyscan(server.arrow_filesystem(endpoint_override=proxy.host_port))
    fs = server.fsspec_filesystem(
        client_kwargs={"endpoint_url": proxy.endpoint, "region_name": REGION},
        config_kwargs={"retries": {"mode": "standard", "total_max_attempts": 1}}, skip_instance_cache=True,
    )
    fs.retries = 1
    return fs


def _expected(kind: str, objects: dict[str, Any]) -> pa.Table:
    return lazyscan.scan(str(objects["local"][kind]), where="k = 17").to_table()


# ---- the budget of ScanOptions.retry_seconds ---------------------------------------------------


@pytest.mark.parametrize(("kind", "client"), [("parquet", "pyarrow"), ("orc", "pyarrow"), ("parquet", "s3fs")])
def test_retry_seconds_bounds_a_scan_whose_reads_keep_failing(
    s3_server: S3Server, objects: dict[str, Any], kind: str, client: str
) -> None:
    key = objects["keys"][kind]
    with fault_proxy(s3_server, Rule(status(503), method="GET", key=key)) as proxy:
        fs = _filesystem(client, s3_server, proxy)
        if client == "s3fs":  # its first request starts a session: on a busy machine that alone can take the second
            fs.info(key)
        lazyscan.parquet.file.clear_caches()
        t0 = time.perf_counter()
        with pytest.raises(TransientSourceError) as e:
            lazyscan.scan(key, where="k = 17", filesystem=fs, format=kind, retry_seconds=1.0).to_table()
        took = time.perf_counter() - t0
        # the default budget is a minute: this one ends within about a second of attempts (the
        # last wait is not begun where it would end past the budget)
        assert took < 4.0, took
        # "N attempts in ...": one where a single attempt outlasts the budget (s3fs retries a
        # 503 on its own inside an attempt, which on a busy machine can take the whole second)
        assert key in str(e.value) and re.search(r"\d+ attempts? in", str(e.value)), str(e.value)
        assert proxy.injected["503"] >= 4


def test_no_retry_budget_makes_one_attempt(s3_server: S3Server, objects: dict[str, Any]) -> None:
    key = objects["keys"]["parquet"]
    with fault_proxy(s3_server, Rule(status(503), method="GET", key=key)) as proxy:
        fs = _filesystem("pyarrow", s3_server, proxy)
        lazyscan.parquet.file.clear_caches()
        with pytest.raises(TransientSourceError, match="1 attempt in"):
            lazyscan.scan(key, where="k = 17", filesystem=fs, retry_seconds=0).to_table()
        assert proxy.injected["503"] == 1


def test_a_budget_long_enough_gets_through_throttling(s3_server: S3Server, objects: dict[str, Any]) -> None:
    key = objects["keys"]["orc"]
    expected = _expected("orc", objects)
    with fault_proxy(s3_server, Rule(status(503), key=key, first=2)) as proxy:
        fs = _filesystem("pyarrow", s3_server, proxy)
        scan = lazyscan.scan(key, where="k = 17", filesystem=fs, retry_seconds=30)
        assert scan.to_table().equals(expected)
        assert proxy.injected["503"] > 0 and scan.profile["retries"] == proxy.injected["503"]


# ---- listing --------------------------------------------------------------------------------


@pytest.mark.parametrize("client", ["pyarrow", "s3fs"])
def test_listing_retries_throttling(s3_server: S3Server, objects: dict[str, Any], client: str) -> None:
    key = objects["keys"]["parquet"]
    expected = _expected("parquet", objects)
    with fault_proxy(s3_server, Rule(status(503), method="HEAD", key=key, first=2)) as proxy:
        fs = _filesystem(client, s3_server, proxy)
        lazyscan.parquet.file.clear_caches()
        assert lazyscan.scan(key, where="k = 17", filesystem=fs).to_table().equals(expected)
        assert proxy.injected["503"] == 2


@pytest.mark.parametrize("client", ["pyarrow", "s3fs"])
@pytest.mark.parametrize(("code", "error"), [(404, ObjectNotFoundError), (403, AccessDeniedError)])
def test_listing_reports_missing_and_denied_objects_as_such(
    s3_server: S3Server, objects: dict[str, Any], client: str, code: int, error: type
) -> None:
    key = objects["keys"]["parquet"]
    with fault_proxy(s3_server, Rule(status(code), method=None, key=key)) as proxy:
        fs = _filesystem(client, s3_server, proxy)
        t0 = time.perf_counter()
        with pytest.raises(error) as e:
            lazyscan.scan(key, filesystem=fs).to_table()
        assert time.perf_counter() - t0 < 10
        assert key in str(e.value)


def test_a_missing_prefix_is_an_object_not_found(s3_server: S3Server, objects: dict[str, Any]) -> None:
    fs = s3_server.arrow_filesystem()
    with pytest.raises(ObjectNotFoundError, match="no/such/prefix"):
        lazyscan.scan(f"{BUCKET}/no/such/prefix", filesystem=fs).to_table()


def test_a_missing_local_path_is_an_object_not_found(tmp_path: Path) -> None:
    with pytest.raises(ObjectNotFoundError, match=r"nothing\.parquet"):
        lazyscan.scan(str(tmp_path / "nothing.parquet")).to_table()


# ---- Spark's options ---------------------------------------------------------------------------


def test_spark_retry_seconds_option_and_s3_filesystems_left_to_lazyscans_retries(
    s3_server: S3Server, objects: dict[str, Any]
) -> None:
    pytest.importorskip("pyspark")
    from lazyscan.spark.options import SourceSettings

    key = objects["keys"]["parquet"]
    expected = _expected("parquet", objects)
    with fault_proxy(s3_server, Rule(status(503), key=key, first=2)) as proxy:
        settings = SourceSettings.from_options({
            "path": f"s3://{key}", "retrySeconds": "30", "fs.endpoint_override": proxy.host_port,
            "fs.scheme": "http", "fs.region": REGION, "fs.access_key": ACCESS_KEY, "fs.secret_key": SECRET_KEY,
        })
        options = lazyscan.ScanOptions(**settings.scan_kwargs)
        assert options.retry_seconds == 30
        fs, path = settings.filesystem.open(f"s3://{key}")
        lazyscan.parquet.file.clear_caches()
        scan = lazyscan.Scan(path, where="k = 17", filesystem=fs, options=options)
        assert scan.to_table().equals(expected)
        # every throttled request retried by lazyscan, not by the AWS SDK (whose retries the
        # profile would not see)
        assert proxy.injected["503"] > 0 and scan.profile["retries"] == proxy.injected["503"]


# ---- pages fetched again after a checksum mismatch ----------------------------------------------


class DamagingStore:
    """An fsspec-like filesystem of one local file whose byte at ``damaged`` is flipped in the
    first transfer that holds it (a transfer damaged once: a second fetch gets the right bytes)."""

    def __init__(self, path: Path, damaged: int) -> None:
        self.data = path.read_bytes()
        self.damaged = damaged
        self.damaged_transfers = 0

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        return {"name": path, "size": len(self.data), "type": "file", "ETag": '"v1"'}

    def cat_file(self, path: str, start: int, end: int) -> bytes:
        data = bytearray(self.data[start:end])
        if self.damaged_transfers == 0 and start <= self.damaged < end:
            data[self.damaged - start] ^= 0x5A
            self.damaged_transfers += 1
        return bytes(data)


def test_a_page_fetched_again_shows_in_the_profile(tmp_path: Path) -> None:
    path = tmp_path / "crc.parquet"
    n = 12_000
    rng = np.random.default_rng(6)
    # s between two chunks of ~96 KB: its pages are not in the bytes read with the footer
    table = pa.table({
        "a": rng.normal(size=n), "s": [f"word-{v:03d}" for v in rng.integers(0, 60, n)], "d": rng.normal(size=n),
    })
    pq.write_table(table, path, write_page_checksum=True, data_page_size=1024, row_group_size=n, use_dictionary=False)
    layout = lazyscan.ParquetFile(path).page_layout(0, "s")
    page = layout.pages[len(layout.pages) // 2]
    store = DamagingStore(path, page.offset + page.size - 3)  # a byte of its body
    lazyscan.parquet.file.clear_caches()
    scan = lazyscan.scan(str(path), columns=["s"], filesystem=store)
    assert scan.to_table().equals(table.select(["s"]))
    assert store.damaged_transfers == 1
    assert scan.profile["pages_refetched"] == 1
    clean = lazyscan.scan(str(path), columns=["s"], filesystem=DamagingStore(path, -1))
    assert clean.to_table().equals(table.select(["s"])) and clean.profile["pages_refetched"] == 0


# ---- requests saved --------------------------------------------------------------------------


def test_orc_stripe_footers_within_the_tail_read_cost_no_request(s3_server: S3Server, objects: dict[str, Any]) -> None:
    from lazyscan.orc import OrcFile

    with OrcFile(objects["keys"]["orc"], s3_server.arrow_filesystem()) as f:
        stats = f.source.stats
        assert stats.requests == 1  # the tail
        tail_start = f.source.size - (MIN_REMOTE_READ - 1)
        inside = []
        for i in range(f.num_stripes):
            s = f.stripe(i)
            before = stats.requests + stats.cached_reads
            f.stripe_footer(i)
            inside.append(s.offset + s.index_length + s.data_length >= tail_start)
            # neither a request nor the surplus of one where the tail read holds it
            assert (stats.requests + stats.cached_reads == before) == inside[-1], i
        assert inside[-1] and not inside[0], inside


def test_parquet_start_magic_costs_no_request_on_a_store(s3_server: S3Server, objects: dict[str, Any]) -> None:
    key = objects["keys"]["parquet"]
    lazyscan.parquet.file.clear_caches()
    pf = lazyscan.ParquetFile(key, s3_server.arrow_filesystem())
    assert pf.source.size > MIN_REMOTE_READ and pf.source.stats.requests == 1  # the tail alone
    assert pf.source.stats.bytes_read == MIN_REMOTE_READ
    pf.close()
