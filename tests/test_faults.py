"""Reads under the faults object stores show, injected by a proxy in front of the S3 server
(moto's, on 127.0.0.1): error statuses, connection resets, truncated and stalled responses,
bytes corrupted in transit. First the proxy itself, as boto3 sees it."""

from __future__ import annotations

import time
from typing import Any

import boto3
import botocore.config
import botocore.exceptions
import pytest

from tests.support.faults import (
    FaultProxy,
    Rule,
    corrupt,
    fault_proxy,
    reset,
    stall,
    status,
    truncate,
)
from tests.support.s3 import ACCESS_KEY, REGION, SECRET_KEY, S3Server

BUCKET = "lazyscan-faults"
OBJECT = bytes(range(256)) * 64  # 16 KiB


@pytest.fixture(scope="module")
def proxy(s3_server: S3Server) -> Any:
    s3_server.put(BUCKET, "raw/object.bin", OBJECT)
    with fault_proxy(s3_server) as p:
        yield p


def _client(proxy: FaultProxy, read_timeout: float = 60) -> Any:
    """boto3 on the proxy, retries off (a fault shows as it was injected)."""
    config = botocore.config.Config(retries={"total_max_attempts": 1, "mode": "standard"}, read_timeout=read_timeout)
    return boto3.client(
        "s3", endpoint_url=proxy.endpoint, aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
        region_name=REGION, config=config,
    )


def _get(client: Any, first: int, last: int) -> bytes:
    return bytes(client.get_object(Bucket=BUCKET, Key="raw/object.bin", Range=f"bytes={first}-{last}")["Body"].read())


@pytest.mark.parametrize(
    ("code", "error"), [(403, "AccessDenied"), (404, "NoSuchKey"), (500, "InternalError"), (503, "SlowDown")]
)
def test_proxy_status_reaches_boto3_with_s3s_error_body(proxy: FaultProxy, code: int, error: str) -> None:
    client = _client(proxy)
    with proxy.faults(Rule(status(code), first=1)):
        with pytest.raises(botocore.exceptions.ClientError) as info:
            _get(client, 100, 199)
        assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == code
        assert info.value.response["Error"]["Code"] == error
        assert info.value.response["ResponseMetadata"]["RequestId"]
        assert _get(client, 100, 199) == OBJECT[100:200]  # only the first request of the range
        assert proxy.injected == {str(code): 1}
        assert proxy.requests["GET"] == 2


def test_proxy_resets_truncates_stalls_and_corrupts(proxy: FaultProxy) -> None:
    client = _client(proxy, read_timeout=1)
    with proxy.faults(Rule(reset(), times=1)):
        with pytest.raises(botocore.exceptions.ConnectionClosedError):
            _get(client, 0, 99)
        assert _get(client, 0, 99) == OBJECT[:100]
    with (
        proxy.faults(Rule(truncate(keep=10), times=1)),
        pytest.raises(botocore.exceptions.ResponseStreamingError, match="IncompleteRead"),
    ):
        _get(client, 0, 99)
    with proxy.faults(Rule(stall(3, after_body_bytes=5), times=1)):
        t0 = time.monotonic()
        with pytest.raises(botocore.exceptions.ReadTimeoutError):
            _get(client, 0, 99)
        assert time.monotonic() - t0 < 2.5
    with proxy.faults(Rule(stall(0.5), times=1)):
        t0 = time.monotonic()
        assert _get(client, 0, 99) == OBJECT[:100]
        assert time.monotonic() - t0 >= 0.5
    with proxy.faults(Rule(corrupt(5000))):
        got = _get(client, 4990, 5009)
        assert got[10] == OBJECT[5000] ^ 0xFF and got[:10] + got[11:] == OBJECT[4990:5000] + OBJECT[5001:5010]
        assert _get(client, 0, 99) == OBJECT[:100]  # does not hold the byte
        assert proxy.injected == {"corrupt": 1}


def test_proxy_rules_pick_requests(proxy: FaultProxy) -> None:
    client = _client(proxy)

    def failures(rule: Rule, ranges: list[tuple[int, int]]) -> list[bool]:
        out = []
        with proxy.faults(rule):
            for first, last in ranges:
                try:
                    _get(client, first, last)
                    out.append(False)
                except botocore.exceptions.ClientError:
                    out.append(True)
        return out

    small, large = (0, 99), (0, 9999)
    assert failures(Rule(status(503), max_size=1000), [small, large, small]) == [True, False, True]
    assert failures(Rule(status(503), min_size=1000), [small, large]) == [False, True]
    assert failures(Rule(status(503), first=2), [small, small, small, large, large, large]) == [True, True, False] * 2
    assert failures(Rule(status(503), every=3), [small] * 6) == [False, False, True] * 2
    assert failures(Rule(status(503), key="*/other*"), [small]) == [False]
    assert failures(Rule(status(503), method="HEAD"), [small]) == [False]
    ranges = [(i, i + 9) for i in range(0, 2000, 10)]
    seeded = failures(Rule(status(503), fraction=0.1, seed=3), ranges)
    assert 5 <= sum(seeded) <= 40
    assert failures(Rule(status(503), fraction=0.1, seed=3), ranges) == seeded  # the same decisions again
    assert failures(Rule(status(503), fraction=0.1, seed=4), ranges) != seeded
    assert proxy.connections == 0  # the 200 requests of the last block reused the connection opened before


def test_proxy_closes_with_a_stalled_response(s3_server: S3Server) -> None:
    s3_server.put(BUCKET, "raw/object.bin", OBJECT)
    with fault_proxy(s3_server, Rule(stall(60))) as p:
        import threading

        client = _client(p)
        errors: list[BaseException] = []

        def read() -> None:
            try:
                _get(client, 0, 9)
            except BaseException as e:
                errors.append(e)

        t = threading.Thread(target=read)
        t.start()
        time.sleep(0.3)
        t0 = time.monotonic()
    t.join(10)
    assert not t.is_alive() and time.monotonic() - t0 < 5
    assert errors
