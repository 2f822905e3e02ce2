"""Object-store reads under faults: transient failures retried with backoff within a time budget,
access denied and missing objects reported at once, stalls bounded, no request smaller than the
minimum (its surplus serves the next small reads). Unit tests on a source whose requests fail as
told, then scans through a fault-injecting proxy in front of the moto server, by pyarrow's S3
client and by s3fs, whose rows must equal the local file's."""

from __future__ import annotations

import errno
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
import pyarrow.parquet as pq
import pytest

import lazyscan
from lazyscan.errors import (
    AccessDeniedError,
    CorruptFileError,
    ObjectNotFoundError,
    SourceError,
    TransientSourceError,
)
from lazyscan.io.retry import DENIED, FINAL, MISSING, TRANSIENT, RetryPolicy, classify
from lazyscan.io.source import (
    MIN_REMOTE_READ,
    FileIdentity,
    FsspecSource,
    IOStats,
    LocalSource,
    ReadOptions,
    Source,
    filesystem_from_uri,
    s3_filesystem_for_lazyscan,
)
from tests.support.compare import assert_same_array
from tests.support.faults import Rule, fault_proxy, reset, stall, status, truncate
from tests.support.s3 import ACCESS_KEY, REGION, SECRET_KEY, S3Server

#: quick retries for the unit tests
FAST = RetryPolicy(max_seconds=2.0, first_wait=0.001, max_wait=0.01, connect_seconds=0.3, stall_seconds=5.0)
DATA = bytes(range(256)) * 2048  # 512 KiB


def _client_error(code: str, http: int) -> Exception:
    from botocore.exceptions import ClientError

    return ClientError({"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": http}}, "GetObject")


def _s3fs_error(cls: type[OSError], code: str, http: int) -> OSError:
    """What s3fs raises: its translation of a botocore error, the error as cause."""
    try:
        raise cls(errno.EIO, "translated") from _client_error(code, http)
    except OSError as e:
        return e


def _transient_errors() -> list[tuple[str, Any]]:
    import aiohttp
    from botocore.exceptions import ConnectionClosedError, ReadTimeoutError, ResponseStreamingError

    return [
        ("pyarrow 503 SlowDown", OSError("AWS Error SLOW_DOWN during GetObject operation: Please reduce your request rate.")),
        ("pyarrow 503", OSError("AWS Error SERVICE_UNAVAILABLE during GetObject operation: ")),
        ("pyarrow 500, status lost", OSError(
            "AWS Error INTERNAL_FAILURE during GetObject operation: Failed to flush response stream (eof: 0, bad: 1)"
        )),
        ("pyarrow unknown code", OSError("AWS Error UNKNOWN (HTTP status 502) during GetObject operation: ")),
        ("pyarrow reset", OSError(
            "AWS Error NETWORK_CONNECTION during GetObject operation: curlCode: 56, Failure when receiving data"
        )),
        ("pyarrow cut body", OSError(
            "AWS Error NETWORK_CONNECTION during GetObject operation: curlCode: 18, Transferred a partial file"
        )),
        ("pyarrow timeout", OSError("AWS Error NETWORK_CONNECTION during GetObject operation: curlCode: 28, Timeout")),
        ("botocore SlowDown", _client_error("SlowDown", 503)),
        ("botocore throttling", _client_error("Throttling", 400)),
        ("s3fs 500", _s3fs_error(OSError, "InternalError", 500)),
        ("botocore read timeout", ReadTimeoutError(endpoint_url="http://x")),
        ("botocore closed", ConnectionClosedError(endpoint_url="http://x")),
        ("botocore stream", ResponseStreamingError(error="cut")),
        ("aiohttp payload", aiohttp.ClientPayloadError("Response payload is not completed")),
        ("aiohttp disconnected", aiohttp.ServerDisconnectedError()),
        ("reset", ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")),
        ("timeout", TimeoutError()),
    ]


class FakeSource(Source):
    """A remote source over ``data`` whose requests first raise (or return) what ``failures``
    holds, one item per request; ``delays`` holds seconds a request waits before answering."""

    def __init__(
        self,
        data: bytes = DATA,
        failures: list[Any] | None = None,
        retry: RetryPolicy | None = FAST,
        delays: list[float] | None = None,
    ) -> None:
        self.path = "bucket/fake.bin"
        self.data = data
        self.size = len(data)
        self.stats = IOStats()
        self.identity = FileIdentity(size=len(data))
        self.retry = retry
        self.failures = list(failures or [])
        self.delays = list(delays or [])
        self.calls: list[tuple[int, int]] = []
        self._lock = threading.Lock()

    def _read(self, offset: int, length: int) -> bytes:
        with self._lock:
            self.calls.append((offset, length))
            failure = self.failures.pop(0) if self.failures else None
            delay = self.delays.pop(0) if self.delays else 0.0
        if delay:
            time.sleep(delay)
        if isinstance(failure, BaseException):
            raise failure
        return self.data[offset : offset + length]


@pytest.mark.parametrize(("name", "error"), _transient_errors(), ids=lambda v: v if isinstance(v, str) else "")
@pytest.mark.parametrize("length", [100, 300_000])
def test_transient_failures_are_retried_on_every_read_size(name: str, error: Any, length: int) -> None:
    src = FakeSource(failures=[error, error])
    assert src.read_at(1000, length) == DATA[1000 : 1000 + length], name
    assert len(src.calls) == 3
    assert src.stats.retries == 2 and src.stats.requests == 3
    assert src.stats.retry_seconds > 0
    if length < MIN_REMOTE_READ:  # one request of the minimum size
        assert src.calls[-1] == (1000, MIN_REMOTE_READ)


def test_transient_failures_past_the_budget_name_object_range_attempts_and_status() -> None:
    budget = RetryPolicy(max_seconds=0.5, first_wait=0.01, max_wait=0.1)
    slow_down = OSError("AWS Error SLOW_DOWN during GetObject operation: Please reduce your request rate.")
    src = FakeSource(failures=[slow_down] * 1000, retry=budget)
    t0 = time.perf_counter()
    with pytest.raises(TransientSourceError) as e:
        src.read_at(200_000, 100_000)
    took = time.perf_counter() - t0
    assert 0.3 < took < 1.5, took
    text = str(e.value)
    assert "'bucket/fake.bin'" in text and "bytes 200000+100000" in text and "SLOW_DOWN" in text
    attempts = len(src.calls)
    assert f"{attempts} attempts" in text and attempts >= 4  # waits grow from 10 ms
    assert src.stats.retries == attempts - 1 and src.stats.requests == attempts
    assert src.stats.seconds >= src.stats.retry_seconds > 0.3


def test_waits_grow_exponentially_with_jitter_up_to_the_most() -> None:
    policy = RetryPolicy(first_wait=0.1, max_wait=2.0)
    for attempt, ceiling in ((1, 0.1), (2, 0.2), (3, 0.4), (5, 1.6), (6, 2.0), (40, 2.0)):
        waits = [policy.wait(attempt) for _ in range(200)]
        assert all(ceiling / 2 <= w <= ceiling for w in waits)
        assert max(waits) - min(waits) > ceiling / 10  # jitter: not all in step


def test_zero_budget_makes_one_attempt() -> None:
    src = FakeSource(failures=[_client_error("SlowDown", 503)], retry=RetryPolicy(max_seconds=0))
    with pytest.raises(TransientSourceError, match="1 attempt in"):
        src.read_at(0, 100_000)
    assert len(src.calls) == 1


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (OSError("AWS Error ACCESS_DENIED during GetObject operation: Access Denied"), AccessDeniedError),
        (OSError("AWS Error INVALID_ACCESS_KEY_ID during GetObject operation: "), AccessDeniedError),
        (OSError("AWS Error UNKNOWN (HTTP status 403) during GetObject operation: "), AccessDeniedError),
        (_client_error("AccessDenied", 403), AccessDeniedError),
        (_s3fs_error(PermissionError, "AccessDenied", 403), AccessDeniedError),
        (PermissionError(errno.EACCES, "Access Denied"), AccessDeniedError),
        (OSError("AWS Error NO_SUCH_KEY during GetObject operation: The specified key does not exist."), ObjectNotFoundError),
        (OSError("AWS Error RESOURCE_NOT_FOUND during GetObject operation: "), ObjectNotFoundError),
        (_client_error("NoSuchKey", 404), ObjectNotFoundError),
        (_s3fs_error(FileNotFoundError, "NoSuchKey", 404), ObjectNotFoundError),
        (FileNotFoundError(errno.ENOENT, "gone"), ObjectNotFoundError),
    ],
)
def test_denied_and_missing_are_reported_at_once_naming_the_object(error: Exception, expected: type) -> None:
    src = FakeSource(failures=[error] * 5)
    t0 = time.perf_counter()
    with pytest.raises(expected) as e:
        src.read_at(5000, 100)
    assert time.perf_counter() - t0 < 0.5
    assert len(src.calls) == 1 and src.stats.retries == 0
    assert "'bucket/fake.bin'" in str(e.value)
    assert ("access denied" if expected is AccessDeniedError else "object not found") in str(e.value)


@pytest.mark.parametrize(
    "error",
    [
        OSError("AWS Error INVALID_RANGE during GetObject operation: The requested range is not satisfiable"),
        ValueError("not a store's failure"),
        OSError(errno.EISDIR, "Is a directory"),
    ],
)
def test_other_failures_are_not_retried(error: Exception) -> None:
    src = FakeSource(failures=[error] * 5)
    with pytest.raises(SourceError, match=r"cannot read 'bucket/fake.bin' \(bytes ") as e:
        src.read_at(0, 100_000)
    assert type(e.value) is SourceError
    assert len(src.calls) == 1


def test_a_corrupt_file_is_not_retried(tmp_path: Path) -> None:
    """Retries are of requests: bytes that arrive and are wrong are the readers' to report."""
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": np.arange(1000)}), path)
    data = bytearray(path.read_bytes())
    data[-8:-4] = (len(data) * 2).to_bytes(4, "little")  # a footer longer than the file
    src = FakeSource(bytes(data))
    with pytest.raises(CorruptFileError):
        lazyscan.ParquetFile(src)
    assert src.stats.retries == 0 and len(src.calls) == 1


def test_classify_tells_unreachable_stores_apart() -> None:
    refused = OSError("AWS Error NETWORK_CONNECTION during HeadObject operation: curlCode: 7, Couldn't connect to server")
    assert classify(refused).kind == TRANSIENT and classify(refused).unreachable
    assert classify(ConnectionRefusedError()).unreachable
    assert not classify(ConnectionResetError()).unreachable
    assert classify(_client_error("SlowDown", 503)).kind == TRANSIENT
    assert classify(_client_error("AccessDenied", 403)).kind == DENIED
    assert classify(_client_error("NoSuchBucket", 404)).kind == MISSING
    assert classify(_client_error("InvalidRange", 416)).kind == FINAL


def test_an_unreachable_store_fails_after_the_shorter_budget() -> None:
    src = FakeSource(failures=[ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")] * 1000)
    t0 = time.perf_counter()
    with pytest.raises(TransientSourceError, match="Connection refused"):
        src.read_at(0, 100_000)
    assert 0.2 < time.perf_counter() - t0 < 1.5  # connect_seconds, not max_seconds


def test_a_stalled_request_is_abandoned_and_retried() -> None:
    policy = RetryPolicy(max_seconds=5.0, first_wait=0.001, stall_seconds=0.2)
    src = FakeSource(retry=policy, delays=[3.0])
    t0 = time.perf_counter()
    assert src.read_at(0, 1000) == DATA[:1000]
    assert time.perf_counter() - t0 < 1.5
    assert src.stats.retries == 1 and len(src.calls) == 2


def test_requests_that_never_answer_end_within_the_budget() -> None:
    policy = RetryPolicy(max_seconds=0.8, first_wait=0.001, stall_seconds=0.2)
    src = FakeSource(retry=policy, delays=[2.0] * 20)
    t0 = time.perf_counter()
    with pytest.raises(TransientSourceError, match="no answer within"):
        src.read_at(0, 1000)
    assert time.perf_counter() - t0 < 2.0


# ---- the minimum request -------------------------------------------------------------------


def test_small_reads_make_one_request_of_the_minimum_and_are_served_from_its_surplus() -> None:
    src = FakeSource()
    headers = [(10_000 + 300 * i, 40) for i in range(100)]  # a walk over small pages
    for off, length in headers:
        assert src.read_at(off, length) == DATA[off : off + length]
    spanned = headers[-1][0] + 40 - headers[0][0]
    assert len(src.calls) == -(-spanned // MIN_REMOTE_READ)  # one request per 64 KiB walked
    assert all(length == MIN_REMOTE_READ for _, length in src.calls)
    assert src.stats.cached_reads == len(headers) - len(src.calls)
    # near the end of the object the request reaches back, so it stays as large
    assert src.read_at(len(DATA) - 10, 10) == DATA[-10:]
    assert src.calls[-1] == (len(DATA) - MIN_REMOTE_READ, MIN_REMOTE_READ)
    assert src.read_at(len(DATA) - 5000, 100) == DATA[-5000:-4900]
    assert src.calls[-1] == (len(DATA) - MIN_REMOTE_READ, MIN_REMOTE_READ)  # no new request
    # an object smaller than the minimum is read whole
    tiny = FakeSource(DATA[:1000])
    assert tiny.read_at(500, 4) == DATA[500:504] and tiny.calls == [(0, 1000)]


def test_read_ranges_of_small_ranges_use_the_minimum_too() -> None:
    src = FakeSource()
    ranges = [(1000, 100), (400_000, 50)]
    views = src.read_ranges(ranges, ReadOptions(coalesce_gap=0))  # two requests, not one
    assert [bytes(v) for v in views] == [DATA[o : o + n] for o, n in ranges]
    assert sorted(src.calls) == [(1000, MIN_REMOTE_READ), (400_000, MIN_REMOTE_READ)]


def test_local_files_read_exactly_what_is_asked(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(DATA)
    src = LocalSource(str(path))
    try:
        assert src.read_at(100, 4) == DATA[100:104]
        assert src.stats.bytes_read == 4 and src.stats.requests == 1
        assert src.retry is None and src.min_request == 0
    finally:
        src.close()


# ---- opening -------------------------------------------------------------------------------


class FakeFsspec:
    """An fsspec-like filesystem whose ``info`` first raises what ``failures`` holds."""

    def __init__(self, failures: list[Exception]) -> None:
        self.failures = failures
        self.infos = 0

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        self.infos += 1
        if self.failures:
            raise self.failures.pop(0)
        return {"name": path, "size": len(DATA), "type": "file", "ETag": '"e1"'}

    def cat_file(self, path: str, start: int, end: int) -> bytes:
        return DATA[start:end]


def test_opening_is_retried_and_denied_opens_are_reported_at_once() -> None:
    fs = FakeFsspec([_s3fs_error(OSError, "SlowDown", 503), ConnectionResetError()])
    src = FsspecSource("bucket/k", fs, FAST)
    assert src.identity == FileIdentity(size=len(DATA), etag='"e1"') and fs.infos == 3
    assert src.stats.retries == 2
    fs = FakeFsspec([_s3fs_error(PermissionError, "AccessDenied", 403)])
    with pytest.raises(AccessDeniedError, match=r"access denied to 'bucket/k' \(opening it\)"):
        FsspecSource("bucket/k", fs, FAST)
    fs = FakeFsspec([_s3fs_error(OSError, "SlowDown", 503)] * 1000)
    with pytest.raises(TransientSourceError, match="opening it"):
        FsspecSource("bucket/k", fs, RetryPolicy(max_seconds=0.2, first_wait=0.01))


def test_s3_filesystems_made_from_uris_have_timeouts_and_leave_retries_to_the_sources() -> None:
    fs, path = filesystem_from_uri("s3://bucket/key.parquet?region=us-east-1&endpoint_override=127.0.0.1:9&scheme=http")
    _, (options,) = fs.__reduce__()
    assert path == "bucket/key.parquet"
    assert options["connect_timeout"] > 0 and options["request_timeout"] > 0
    assert options["endpoint_override"] == "127.0.0.1:9" and options["region"] == "us-east-1"


# ---- through a proxy that injects faults -----------------------------------------------------

BUCKET = "lazyscan-retry"


@pytest.fixture(scope="module")
def objects(s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A Parquet file as pyarrow writes it by default (no offset index: page headers are walked)
    and an ORC file, locally and on the server."""
    folder = tmp_path_factory.mktemp("retry")
    n = 120_000
    rng = np.random.default_rng(4)
    table = pa.table({
        "id": np.arange(n),
        "k": rng.integers(0, 2000, n),
        "s": pa.array([f"value {i % 7919}" for i in range(n)]),
        "x": rng.normal(size=n),
    })
    local = {"parquet": folder / "t.parquet", "orc": folder / "t.orc"}
    pq.write_table(table, local["parquet"], row_group_size=30_000, data_page_size=8 * 1024)
    po.write_table(table, local["orc"], stripe_size=256 * 1024)
    keys = {kind: s3_server.upload(p, BUCKET, f"data/{p.name}")[len("s3://") :] for kind, p in local.items()}
    return {"local": local, "keys": keys}


def _filesystem(client: str, server: S3Server, endpoint: str, host_port: str) -> Any:
    """A filesystem through the proxy that leaves retries to lazyscan (as the one lazyscan makes
    from an ``s3://`` URI does): the clients' own backoff would take most of the test's time."""
    if client == "pyarrow":
        return s3_filesystem_for_lazyscan(server.arrow_filesystem(endpoint_override=host_port))
    import s3fs

    fs = s3fs.S3FileSystem(
        key=ACCESS_KEY, secret=SECRET_KEY, client_kwargs={"endpoint_url": endpoint, "region_name": REGION},
        config_kwargs={"retries": {"mode": "standard", "total_max_attempts": 1}}, use_listings_cache=False, skip_instance_cache=True,
    )
    fs.retries = 1  # s3fs's own retries around botocore's
    return fs


def _scan(kind: str, objects: dict[str, Any], fs: Any) -> lazyscan.Scan:
    lazyscan.parquet.file.clear_caches()  # every scan reads footers and walks pages again
    where = "k = 17 OR id BETWEEN 50000 AND 50010"
    return lazyscan.scan(objects["keys"][kind], where=where, filesystem=fs, format=kind)


def _expected(kind: str, objects: dict[str, Any]) -> pa.Table:
    return lazyscan.scan(str(objects["local"][kind]), where="k = 17 OR id BETWEEN 50000 AND 50010").to_table()


def _assert_same(got: pa.Table, expected: pa.Table) -> None:
    assert got.schema == expected.schema and got.num_rows == expected.num_rows > 0
    for name in expected.column_names:
        assert_same_array(got[name].combine_chunks(), expected[name].combine_chunks(), name)


@pytest.mark.parametrize(("kind", "client"), [("parquet", "pyarrow"), ("parquet", "s3fs"), ("orc", "pyarrow")])
def test_throttled_first_two_requests_of_every_range(
    s3_server: S3Server, objects: dict[str, Any], client: str, kind: str
) -> None:
    expected = _expected(kind, objects)
    size = objects["local"][kind].stat().st_size
    with fault_proxy(s3_server, Rule(status(503), first=2)) as proxy:
        fs = _filesystem(client, s3_server, proxy.endpoint, proxy.host_port)
        t0 = time.perf_counter()
        scan = _scan(kind, objects, fs)
        _assert_same(scan.to_table(), expected)
        assert time.perf_counter() - t0 < 30
        assert proxy.injected["503"] > 0
        assert scan.profile["retries"] == proxy.injected["503"]
        # no request smaller than the minimum (a response buffer smaller than S3's error body
        # loses the status)
        sizes = [r.range[1] - r.range[0] + 1 for r in proxy.log if r.method == "GET" and r.range]
        assert min(sizes) >= min(MIN_REMOTE_READ, size)


def test_throttling_through_pyarrows_own_retries(s3_server: S3Server, objects: dict[str, Any]) -> None:
    """A filesystem made by the user keeps the AWS SDK's retries (three attempts): a range
    throttled twice gets through them, the third attempt in the SDK."""
    expected = _expected("parquet", objects)
    with fault_proxy(s3_server, Rule(status(503), first=2, times=6)) as proxy:  # the SDK waits long
        fs = s3_server.arrow_filesystem(endpoint_override=proxy.host_port)
        scan = _scan("parquet", objects, fs)
        _assert_same(scan.to_table(), expected)
        assert proxy.injected["503"] == 6 and scan.profile["retries"] == 0


def test_throttling_retried_by_lazyscan_shows_in_the_profile(
    s3_server: S3Server, objects: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ``s3://`` URI: the filesystem lazyscan makes leaves retries to the sources, so every
    retry and its wait is in the profile."""
    expected = _expected("parquet", objects)
    with fault_proxy(s3_server, Rule(status(503), first=2)) as proxy:
        for name, value in (("AWS_ACCESS_KEY_ID", ACCESS_KEY), ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
                            ("AWS_DEFAULT_REGION", REGION), ("AWS_ENDPOINT_URL", proxy.endpoint)):
            monkeypatch.setenv(name, value)
        lazyscan.parquet.file.clear_caches()
        scan = lazyscan.scan("s3://" + objects["keys"]["parquet"], where="k = 17 OR id BETWEEN 50000 AND 50010")
        _assert_same(scan.to_table(), expected)
        gets = proxy.requests["GET"]
        assert scan.profile["retries"] > 0
        assert scan.profile["retrying"] > 0
        # two failed attempts before each range got through
        assert scan.profile["retries"] == proxy.faults_injected()
        assert f"{scan.profile['retries']:,} requests retried" in scan.profile.summary()
        assert scan.profile["requests"] >= gets


@pytest.mark.parametrize("client", ["pyarrow", "s3fs"])
def test_a_server_error_on_one_small_read(s3_server: S3Server, objects: dict[str, Any], client: str) -> None:
    expected = _expected("parquet", objects)
    with fault_proxy(s3_server, Rule(status(500), max_size=MIN_REMOTE_READ, times=1)) as proxy:
        fs = _filesystem(client, s3_server, proxy.endpoint, proxy.host_port)
        _assert_same(_scan("parquet", objects, fs).to_table(), expected)
        assert proxy.injected["500"] == 1


@pytest.mark.parametrize("client", ["pyarrow", "s3fs"])
@pytest.mark.parametrize("kind", ["parquet", "orc"])
def test_access_denied_on_data_reads_says_so(
    s3_server: S3Server, objects: dict[str, Any], client: str, kind: str
) -> None:
    with fault_proxy(s3_server, Rule(status(403), method="GET")) as proxy:
        fs = _filesystem(client, s3_server, proxy.endpoint, proxy.host_port)
        t0 = time.perf_counter()
        with pytest.raises(AccessDeniedError) as e:
            _scan(kind, objects, fs).to_table()
        assert time.perf_counter() - t0 < 10
        assert objects["keys"][kind] in str(e.value) and "access denied" in str(e.value)
        assert proxy.requests["GET"] <= 2  # not retried (s3fs: nor by botocore)


@pytest.mark.parametrize("client", ["pyarrow", "s3fs"])
def test_resets_cut_bodies_and_stalls(s3_server: S3Server, objects: dict[str, Any], client: str) -> None:
    expected = _expected("parquet", objects)
    rules = [
        Rule(reset(), fraction=0.2, seed=1, first=1),
        Rule(truncate(1000), fraction=0.2, seed=2, first=1),
        Rule(stall(2.0, after_body_bytes=100), times=1),
    ]
    with fault_proxy(s3_server, *rules) as proxy:
        fs = _filesystem(client, s3_server, proxy.endpoint, proxy.host_port)
        t0 = time.perf_counter()
        _assert_same(_scan("parquet", objects, fs).to_table(), expected)
        assert time.perf_counter() - t0 < 60
        assert proxy.faults_injected() >= 2


def test_lazyscan_errors_of_a_request_pass_as_they_are() -> None:
    from lazyscan.io.source import ShortReadError

    src = FakeSource(failures=[ShortReadError("ends inside")] * 3)
    with pytest.raises(ShortReadError, match="ends inside"):
        src.read_at(0, 100_000)
    assert len(src.calls) == 1


def test_an_object_shorter_than_planned_is_not_retried() -> None:
    """A whole response shorter than the range (the object shrank since it was opened) is
    returned as it is for the readers' checks; a body cut short is the client's error."""
    src = FakeSource()
    src.size = len(DATA) + 100_000
    data = src.read_at(len(DATA) - 50_000, 100_000)
    assert data == DATA[-50_000:] and len(src.calls) == 1 and src.stats.retries == 0
