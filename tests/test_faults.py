"""Reads under the faults object stores show, injected by a proxy in front of the S3 server
(moto's, on 127.0.0.1): error statuses, connection resets, truncated and stalled responses,
bytes corrupted in transit. First the proxy itself, as boto3 sees it; then the matrix: each
fault a case, read in-process (pyarrow's S3FileSystem), through s3fs and through
``lazyscan.spark.read`` on ``local[2]``. A case gives the rows of pyarrow's local read of the same
file, or the lazyscan error that says what happened, within a bounded time."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import botocore.config
import botocore.exceptions
import numpy as np
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
    ranges = [(i, i + 9) for i in range(0, 1500, 10)]
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


# ---- the matrix --------------------------------------------------------------------------------

WHERE = "k = 7"
#: a case's wall time: generous bounds (retries back off; Spark adds its job overhead)
IN_PROCESS_BOUND_S = 60.0
SPARK_BOUND_S = 120.0
#: the retry budget of the cases whose faults never end (the default is a minute), and their bound
RETRY_SECONDS = 4.0
ENDLESS_BOUND_S = 30.0
#: a small read: S3's error body does not fit the buffer of a read this size (lazyscan asks for 64 KiB at least)
SMALL = 64 * 1024


@pytest.fixture(scope="module")
def files(s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The files of the matrix, local and on the server (``bucket/key`` by name):

    - ``plain.parquet``: pyarrow's defaults (dictionaries, snappy, no page index: page headers
      are walked), small pages so that chunks hold several;
    - ``pages.parquet``: the same with the page index;
    - ``crc.parquet`` / ``nocrc.parquet``: uncompressed PLAIN values, with and without page
      checksums (a flipped byte there is a flipped value, not a decompression error);
      ``crc-dict.parquet``: uncompressed with dictionaries and page checksums;
    - ``data.orc``: pyarrow's ORC writer, small stripes.

    ``corrupt_at``: per file the offset of a byte inside a data value of column ``x`` in a row
    the query keeps."""
    import pyarrow as pa
    import pyarrow.orc as po
    import pyarrow.parquet as pq

    folder = tmp_path_factory.mktemp("fault-files")
    rng = np.random.default_rng(34)
    n = 20_000
    table = pa.table({
        "id": np.arange(n, dtype=np.int64),
        "k": rng.integers(0, 100, n),
        "x": np.round(rng.uniform(-1e5, 1e5, n), 2),
        "s": [f"comment {i % 313} of {i % 7}" for i in range(n)],
    })
    writes: dict[str, dict[str, Any]] = {
        "plain.parquet": dict(row_group_size=5000, data_page_size=4096),
        "pages.parquet": dict(row_group_size=5000, data_page_size=4096, write_page_index=True),
        "crc.parquet": dict(
            row_group_size=5000, data_page_size=4096, compression="none", write_page_checksum=True, use_dictionary=False
        ),
        "crc-dict.parquet": dict(row_group_size=5000, data_page_size=4096, compression="none", write_page_checksum=True),
        "nocrc.parquet": dict(row_group_size=5000, data_page_size=4096, compression="none", use_dictionary=False),
    }
    local: dict[str, Path] = {}
    for name, kwargs in writes.items():
        local[name] = folder / name
        pq.write_table(table, local[name], **kwargs)
    local["data.orc"] = folder / "data.orc"
    po.write_table(table, local["data.orc"], stripe_size=128 * 1024, compression="snappy")
    keys = {}
    for name, path in local.items():
        s3_server.upload(path, BUCKET, f"matrix/{name}")
        keys[name] = f"{BUCKET}/matrix/{name}"
    corrupt_at = {name: _value_offset(local[name], table) for name in ("crc.parquet", "crc-dict.parquet", "nocrc.parquet")}
    return {"local": local, "keys": keys, "table": table, "corrupt_at": corrupt_at}


def _value_offset(path: Path, table: Any) -> int:
    """Offset of a byte inside the PLAIN value or dictionary entry of ``x`` in a row of row group
    0 that ``k = 7`` keeps (not the row group's least or greatest ``x``, whose bytes the
    statistics repeat)."""
    import struct as _struct

    import pyarrow.parquet as pq

    data = path.read_bytes()
    meta = pq.ParquetFile(path).metadata
    chunk = meta.row_group(0).column(2)
    start = min(o for o in (chunk.dictionary_page_offset, chunk.data_page_offset) if o is not None)
    end = start + chunk.total_compressed_size
    xs = table["x"].to_numpy()[:5000]
    for row in np.flatnonzero(table["k"].to_numpy()[:5000] == 7):
        if xs[row] in (xs.min(), xs.max()):
            continue
        at = data.find(_struct.pack("<d", xs[row]), start, end)
        if at >= 0:
            return at + 5  # a mantissa byte: a plausible wrong value, not a NaN
    raise AssertionError(f"no value of x found in {path}")


def _expected(files: dict[str, Any], name: str, data: bytes | None = None) -> Any:
    """pyarrow's local read of ``name`` (or of ``data``, its bytes), filtered by ``k = 7``."""
    import io

    import pyarrow.compute as pc
    import pyarrow.orc as po
    import pyarrow.parquet as pq

    source: Any = io.BytesIO(data) if data is not None else str(files["local"][name])
    table = po.read_table(source) if name.endswith(".orc") else pq.read_table(source)
    return table.filter(pc.equal(table["k"], 7))


@dataclass
class Case:
    """One fault of the matrix: the file, the rules (given the object's key and the corrupt
    offset), and what the read must give: ``"rows"`` (pyarrow's local rows), ``"corrupted rows"``
    (pyarrow's local rows of the bytes as corrupted) or an error class, whose message names the
    object."""

    file: str
    rules: Callable[[str, int], list[Rule]]
    expect: Any = "rows"
    fs_kwargs: dict[str, Any] = field(default_factory=dict)
    #: options of the scan (Spark: of the source)
    scan_kwargs: dict[str, Any] = field(default_factory=dict)
    #: seconds the case may take in-process (15 more through Spark), when less than the general bound
    bound: float | None = None


CASES: dict[str, Case] = {
    "503 on the first two GETs of each range": Case("plain.parquet", lambda k, o: [Rule(status(503), key=k, first=2)]),
    "503 on the first two GETs of each range, page index": Case(
        "pages.parquet", lambda k, o: [Rule(status(503), key=k, first=2)]
    ),
    "503 on the first two GETs of each range, ORC": Case("data.orc", lambda k, o: [Rule(status(503), key=k, first=2)]),
    "503 on the first HEAD": Case("plain.parquet", lambda k, o: [Rule(status(503), method="HEAD", key=k, times=1)]),
    "500 on one small read": Case("plain.parquet", lambda k, o: [Rule(status(500), key=k, max_size=SMALL, times=1)]),
    "500 on one small read, ORC": Case("data.orc", lambda k, o: [Rule(status(500), key=k, max_size=SMALL, times=1)]),
    "30% of GETs throttled": Case("plain.parquet", lambda k, o: [Rule(status(503), key=k, fraction=0.3, seed=34)]),
    "503 on every GET": Case(
        "plain.parquet", lambda k, o: [Rule(status(503), key=k)], "TransientSourceError",
        scan_kwargs={"retry_seconds": RETRY_SECONDS}, bound=ENDLESS_BOUND_S,
    ),
    "403 on the data reads": Case(
        "plain.parquet", lambda k, o: [Rule(status(403), key=k, when=lambda r: r.range is not None)], "AccessDeniedError"
    ),
    "403 on the data reads, ORC": Case(
        "data.orc", lambda k, o: [Rule(status(403), key=k, when=lambda r: r.range is not None)], "AccessDeniedError"
    ),
    "404 on the data reads": Case(
        "plain.parquet", lambda k, o: [Rule(status(404), key=k, when=lambda r: r.range is not None)], "ObjectNotFoundError"
    ),
    "404 on the HEAD": Case("plain.parquet", lambda k, o: [Rule(status(404), method="HEAD", key=k)], "ObjectNotFoundError"),
    "connection reset on the first GET of each range": Case("plain.parquet", lambda k, o: [Rule(reset(), key=k, first=1)]),
    "connection reset on the first GET of each range, ORC": Case("data.orc", lambda k, o: [Rule(reset(), key=k, first=1)]),
    "body truncated on the first GET of each range": Case(
        "plain.parquet", lambda k, o: [Rule(truncate(keep=16), key=k, first=1)]
    ),
    "short stalls": Case("plain.parquet", lambda k, o: [Rule(stall(0.3), key=k, times=4)]),
    "stall past the request timeout on the first GET of each range": Case(
        "plain.parquet", lambda k, o: [Rule(stall(20, after_body_bytes=0), key=k, first=1, times=3)],
        fs_kwargs={"request_timeout": 2},
    ),
    "data page bytes corrupted once, checksums": Case("crc.parquet", lambda k, o: [Rule(corrupt(o), key=k, times=1)]),
    "data page bytes corrupted always, checksums": Case(
        "crc.parquet", lambda k, o: [Rule(corrupt(o), key=k)], "CorruptFileError"
    ),
    "dictionary page bytes corrupted always, checksums": Case(
        "crc-dict.parquet", lambda k, o: [Rule(corrupt(o), key=k)], "CorruptFileError"
    ),
    # without a checksum a flipped byte inside a value cannot be told from the value: the read
    # gives what pyarrow's gives for the same bytes, and only a checksum catches it
    "data page bytes corrupted always, no checksums": Case(
        "nocrc.parquet", lambda k, o: [Rule(corrupt(o), key=k)], "corrupted rows"
    ),
}


def _error_class(name: str) -> type[BaseException]:
    import lazyscan.errors

    return getattr(lazyscan.errors, name)  # type: ignore[no-any-return]


def _case_param(name: str, route: str) -> Any:
    return pytest.param(name, id=f"{route}: {name}")


def _expected_for(files: dict[str, Any], case: Case) -> Any:
    if case.expect != "corrupted rows":
        return _expected(files, case.file)
    data = bytearray(files["local"][case.file].read_bytes())
    data[files["corrupt_at"][case.file]] ^= 0xFF
    return _expected(files, case.file, bytes(data))


def _run_in_process(proxy: FaultProxy, files: dict[str, Any], name: str, filesystem: Any) -> None:
    """Read ``CASES[name]`` through ``filesystem`` with its faults on; check rows or error and time."""
    import lazyscan

    case = CASES[name]
    key = files["keys"][case.file]
    rules = case.rules(key, files["corrupt_at"].get(case.file, 0))
    t0 = time.monotonic()
    with proxy.faults(*rules):
        if isinstance(case.expect, str) and case.expect.endswith("rows"):
            got = lazyscan.scan(key, where=WHERE, filesystem=filesystem, **case.scan_kwargs).to_table()
            _assert_same(got, _expected_for(files, case), name)
        else:
            with pytest.raises(_error_class(case.expect)) as info:
                lazyscan.scan(key, where=WHERE, filesystem=filesystem, **case.scan_kwargs).to_table()
            assert key in str(info.value), str(info.value)
            if case.expect == "CorruptFileError":  # names the row group, column and page
                assert re.search(r"row group \d+, column 'x', page \d+", str(info.value)), str(info.value)
        injected = proxy.faults_injected()
        records = list(proxy.log)
    seconds = time.monotonic() - t0
    assert injected > 0, f"{name}: no fault injected"
    assert seconds < (case.bound or IN_PROCESS_BOUND_S), f"{name}: {seconds:.1f} s\n" + _timeline(records, t0)


def _timeline(records: list[Any], t0: float) -> str:
    """The requests of a case, one a line: when each arrived and was answered, and its fault."""
    return "\n".join(
        f"{r.arrived - t0:8.2f} {r.answered - t0:8.2f} {r.method} {r.range} {r.fault or ''} {r.status}" for r in records
    )


def _assert_same(got: Any, expected: Any, context: str) -> None:
    from tests.support.compare import assert_same_array

    assert got.column_names == expected.column_names, context
    assert got.num_rows == expected.num_rows, f"{context}: {got.num_rows} rows, expected {expected.num_rows}"
    for col in expected.column_names:
        assert_same_array(got[col].combine_chunks(), expected[col], f"{context} {col}")


IN_PROCESS = list(CASES)


@pytest.mark.parametrize("name", [_case_param(n, "pyarrow fs") for n in IN_PROCESS])
def test_fault_in_process(proxy: FaultProxy, files: dict[str, Any], name: str) -> None:
    _run_in_process(proxy, files, name, proxy.arrow_filesystem(**CASES[name].fs_kwargs))


S3FS_CASES = [
    "503 on the first two GETs of each range", "503 on the first two GETs of each range, ORC", "500 on one small read",
    "503 on every GET",
    "403 on the data reads", "404 on the data reads", "404 on the HEAD",
    "connection reset on the first GET of each range", "body truncated on the first GET of each range",
    "data page bytes corrupted once, checksums", "data page bytes corrupted always, checksums",
]


@pytest.mark.parametrize("name", [_case_param(n, "s3fs") for n in S3FS_CASES])
def test_fault_through_s3fs(proxy: FaultProxy, files: dict[str, Any], name: str) -> None:
    _run_in_process(proxy, files, name, proxy.fsspec_filesystem())


# ---- through Spark -----------------------------------------------------------------------------

SPARK_CASES = [
    "503 on the first two GETs of each range", "500 on one small read, ORC", "503 on every GET",
    "403 on the data reads", "404 on the data reads", "connection reset on the first GET of each range",
    "body truncated on the first GET of each range", "data page bytes corrupted always, checksums",
]


#: what a failed task's message says for each error (Spark passes on the text; the task's
#: message names the lazyscan error class before the cause)
SPARK_MESSAGES = {
    "AccessDeniedError": r"AccessDeniedError: .*access denied",
    "ObjectNotFoundError": r"ObjectNotFoundError: ",
    "TransientSourceError": r"TransientSourceError: .*(retr(y|ies)|attempts)",
    "CorruptFileError": r"CorruptFileError: .*checksum mismatch.*row group \d+, column 'x', page \d+",
}


@pytest.fixture(scope="module")
def spark() -> Any:
    from tests.spark_support import get_spark

    return get_spark()


def _spark_frame(spark: Any, proxy: FaultProxy, key: str, case: Case | None = None) -> Any:
    """The DataFrame of the case's query (planned on the driver, through the proxy)."""
    import lazyscan.spark

    options: dict[str, Any] = {**proxy.fs_options()}
    if case is not None:
        options.update({f"fs.{k}": str(v) for k, v in case.fs_kwargs.items()})
        options.update(case.scan_kwargs)
    return lazyscan.spark.read(spark, f"s3://{key}", where=WHERE, force="lazyscan", **options)


def _rows_of(table: Any) -> list[tuple[Any, ...]]:
    return list(zip(*(table[c].to_pylist() for c in table.column_names), strict=True))


@pytest.mark.spark
@pytest.mark.parametrize("name", [_case_param(n, "spark") for n in SPARK_CASES])
def test_fault_through_spark(spark: Any, proxy: FaultProxy, files: dict[str, Any], name: str) -> None:
    """The query planned without faults, then run with them: the rows, or a failed task whose
    message names the error and the object; the Python workers survive it: the next read of the
    file gives its rows."""
    from tests.spark_support import assert_same_rows

    case = CASES[name]
    key = files["keys"][case.file]
    expected = _rows_of(_expected_for(files, case))
    frame = _spark_frame(spark, proxy, key, case)
    t0 = time.monotonic()
    with proxy.faults(*case.rules(key, files["corrupt_at"].get(case.file, 0))):
        if case.expect == "rows":
            assert_same_rows(frame.collect(), expected, name)
        else:
            with pytest.raises(Exception) as info:
                frame.collect()
            message = str(info.value)
            assert re.search(SPARK_MESSAGES[case.expect], message, re.IGNORECASE) and key in message, message[-3000:]
        injected = proxy.faults_injected()
    seconds = time.monotonic() - t0
    assert injected > 0, f"{name}: no fault injected"
    assert seconds < (case.bound + 15 if case.bound else SPARK_BOUND_S), f"{name}: {seconds:.1f} s"
    again = _spark_frame(spark, proxy, key).collect()
    assert_same_rows(again, _rows_of(_expected(files, case.file)), f"{name}: the next read")
