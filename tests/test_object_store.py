"""Reads from a real S3-compatible server (moto's, on 127.0.0.1): the same rows as local reads,
located errors for missing, denied, truncated and unreachable objects, and the requests and
bytes a selective read costs there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
import pyarrow.parquet as pq
import pytest

import lazyscan
from lazyscan.errors import LazyScanError
from lazyscan.io.source import MIN_REMOTE_READ, ArrowSource
from tests.support.compare import assert_same_array
from tests.support.random_data import random_predicate, random_table
from tests.support.s3 import ACCESS_KEY, REGION, SECRET_KEY, S3Server, start_s3_server

BUCKET = "lazyscan-tests"


@pytest.fixture(scope="module")
def remote(s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Local files and their copies on the server: two Parquet layouts, an ORC file, a
    partitioned folder."""
    folder = tmp_path_factory.mktemp("objects")
    rng = np.random.default_rng(7)
    table = random_table(rng, 6000)
    files: dict[str, Path] = {}
    files["pages.parquet"] = folder / "pages.parquet"
    pq.write_table(table, files["pages.parquet"], row_group_size=1500, data_page_size=2048, write_page_index=True)
    files["plain.parquet"] = folder / "plain.parquet"
    pq.write_table(table, files["plain.parquet"], row_group_size=2500, use_dictionary=False, compression="zstd")
    orc_table = pa.table({"id": table["id"], "k": pa.array(rng.integers(0, 50, len(table))), "s": [f"v{i % 97}" for i in range(len(table))]})
    files["data.orc"] = folder / "data.orc"
    po.write_table(orc_table, files["data.orc"], stripe_size=64 * 1024)
    part = folder / "parts"
    for p in range(3):
        (part / f"p={p}").mkdir(parents=True)
        pq.write_table(table.slice(p * 2000, 2000), part / f"p={p}" / "f.parquet")
    uris = {name: s3_server.upload(path, BUCKET, f"data/{name}") for name, path in files.items()}
    for p in range(3):
        s3_server.upload(part / f"p={p}" / "f.parquet", BUCKET, f"data/parts/p={p}/f.parquet")
    return {"local": files, "uris": uris, "table": table, "parts": part, "schema": table.schema}


def assert_same_table(got: pa.Table, expected: pa.Table, context: object = "") -> None:
    """Same schema and rows (NaN equal to NaN)."""
    assert got.schema == expected.schema, context
    for name in expected.column_names:
        assert_same_array(got[name].combine_chunks(), expected[name], f"{context} {name}")


def _key(uri: str) -> str:
    return uri[len("s3://") :]


def test_random_predicates_give_the_local_rows(s3_server: S3Server, remote: dict[str, Any]) -> None:
    fs = s3_server.arrow_filesystem()
    rng = np.random.default_rng(11)
    for name in ("pages.parquet", "plain.parquet"):
        local = str(remote["local"][name])
        key = _key(remote["uris"][name])
        for _ in range(10):
            where = random_predicate(rng, remote["schema"], depth=2)
            expected = lazyscan.scan(local, where=where).to_table()
            got = lazyscan.scan(key, where=where, filesystem=fs).to_table()
            assert_same_table(got, expected, (name, where))


def test_s3_uri_with_credentials_from_the_environment(
    s3_server: S3Server, remote: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint)
    local = str(remote["local"]["pages.parquet"])
    where = "id BETWEEN 100 AND 180 OR id = 5000"
    expected = lazyscan.scan(local, where=where).to_table()
    for uri in (remote["uris"]["pages.parquet"], remote["uris"]["pages.parquet"].replace("s3://", "s3a://")):
        assert_same_table(lazyscan.scan(uri, where=where).to_table(), expected, uri)


def test_fsspec_s3fs_gives_the_local_rows(s3_server: S3Server, remote: dict[str, Any]) -> None:
    fs = s3_server.fsspec_filesystem()
    local = str(remote["local"]["pages.parquet"])
    where = "id IN (3, 10, 17, 2999, 4000) OR id BETWEEN 500 AND 520"
    expected = lazyscan.scan(local, where=where).to_table()
    got = lazyscan.scan(_key(remote["uris"]["pages.parquet"]), where=where, filesystem=fs).to_table()
    assert_same_table(got, expected)
    assert got.num_rows == 26


def test_partitioned_folder_and_orc_on_s3(s3_server: S3Server, remote: dict[str, Any]) -> None:
    fs = s3_server.arrow_filesystem()
    where = "p = 1 AND id < 2100"
    expected = lazyscan.scan(str(remote["parts"]), where=where).to_table()
    got = lazyscan.scan(f"{BUCKET}/data/parts", where=where, filesystem=fs).to_table()
    assert_same_table(got, expected)
    assert got.num_rows == 100
    orc_local = str(remote["local"]["data.orc"])
    expected = lazyscan.scan(orc_local, where="k = 7").to_table()
    got = lazyscan.scan(_key(remote["uris"]["data.orc"]), where="k = 7", filesystem=fs).to_table()
    assert_same_table(got, expected)
    assert got.num_rows > 0


def _error_of(fn: Any) -> LazyScanError:
    with pytest.raises(LazyScanError) as info:
        fn()
    return info.value


def test_missing_bucket_and_object_name_the_path(s3_server: S3Server, remote: dict[str, Any]) -> None:
    fs = s3_server.arrow_filesystem()
    e = _error_of(lambda: lazyscan.scan("no-such-bucket/x.parquet", filesystem=fs).to_table())
    assert "no-such-bucket/x.parquet" in str(e)
    e = _error_of(lambda: lazyscan.scan(f"{BUCKET}/data/missing.parquet", filesystem=fs).to_table())
    assert "missing.parquet" in str(e)
    e = _error_of(lambda: lazyscan.scan(f"{BUCKET}/data/missing.parquet", filesystem=s3_server.fsspec_filesystem()).to_table())
    assert "missing.parquet" in str(e)


def test_truncated_object_is_a_located_error(s3_server: S3Server, remote: dict[str, Any]) -> None:
    data = remote["local"]["pages.parquet"].read_bytes()
    fs = s3_server.arrow_filesystem()
    for cut, key in ((len(data) // 2, "half.parquet"), (len(data) - 3, "tail.parquet")):
        uri = s3_server.put(BUCKET, f"bad/{key}", data[:cut])
        e = _error_of(lambda uri=uri: lazyscan.scan(_key(uri), filesystem=fs).to_table())
        assert key in str(e)


def test_denied_request_is_a_located_error(tmp_path: Path, remote: dict[str, Any]) -> None:
    # a second server that checks credentials: the wrong secret is refused
    server = start_s3_server(tmp_path, env={"MOTO_S3_CUSTOM_ENDPOINTS": "", "INITIAL_NO_AUTH_ACTION_COUNT": "1"})
    try:
        fs = server.arrow_filesystem(secret_key="wrong-secret", access_key="AKIAWRONGWRONGWRONG")
        e = _error_of(lambda: lazyscan.scan(f"{BUCKET}/data/pages.parquet", filesystem=fs).to_table())
        assert f"{BUCKET}/data/pages.parquet" in str(e)
        assert "INVALID_ACCESS_KEY_ID" in str(e) or "AccessDenied" in str(e)
    finally:
        server.stop()


def test_credentials_from_a_shared_credentials_profile(
    tmp_path: Path, remote: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No AWS_* keys in the environment: an s3:// read takes the key of the profile that
    AWS_PROFILE names in the shared credentials file. The server checks keys: the profile's key
    (an IAM user's, allowed s3:*) reads the rows, the default profile's bogus key is refused."""
    import boto3

    server = start_s3_server(tmp_path, env={"MOTO_S3_CUSTOM_ENDPOINTS": "", "INITIAL_NO_AUTH_ACTION_COUNT": "7"})
    try:
        iam = boto3.client("iam", endpoint_url=server.endpoint, aws_access_key_id=ACCESS_KEY,
                           aws_secret_access_key=SECRET_KEY, region_name=REGION)
        iam.create_user(UserName="reader")
        policy = iam.create_policy(PolicyName="s3-all", PolicyDocument=(
            '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}'
        ))
        iam.attach_user_policy(UserName="reader", PolicyArn=policy["Policy"]["Arn"])
        key = iam.create_access_key(UserName="reader")["AccessKey"]
        server.upload(remote["local"]["pages.parquet"], BUCKET, "data/pages.parquet")  # 2 actions
        credentials = tmp_path / "credentials"
        credentials.write_text(
            "[default]\naws_access_key_id = AKIADEFAULTDEFAULT00\naws_secret_access_key = x\n\n"
            f"[lazyscan-test]\naws_access_key_id = {key['AccessKeyId']}\n"
            f"aws_secret_access_key = {key['SecretAccessKey']}\n"
        )
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
        monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
        monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
        monkeypatch.setenv("AWS_ENDPOINT_URL", server.endpoint)
        uri, where = f"s3://{BUCKET}/data/pages.parquet", "id < 50"
        monkeypatch.setenv("AWS_PROFILE", "lazyscan-test")
        expected = lazyscan.scan(str(remote["local"]["pages.parquet"]), where=where).to_table()
        assert_same_table(lazyscan.scan(uri, where=where).to_table(), expected, "profile key")
        monkeypatch.setenv("AWS_PROFILE", "default")
        e = _error_of(lambda: lazyscan.scan(uri, where=where).to_table())
        assert f"{BUCKET}/data/pages.parquet" in str(e)
        assert "ACCESS_DENIED" in str(e) or "INVALID_ACCESS_KEY_ID" in str(e)
    finally:
        server.stop()


def test_unreachable_server_is_a_located_error(tmp_path: Path, remote: dict[str, Any]) -> None:
    server = start_s3_server(tmp_path)
    server.upload(remote["local"]["pages.parquet"], BUCKET, "data/pages.parquet")
    fs = server.arrow_filesystem(connect_timeout=1, request_timeout=2)
    scan = lazyscan.scan(f"{BUCKET}/data/pages.parquet", where="id < 10", filesystem=fs)
    assert scan.to_table().num_rows == 10
    server.stop()  # the connection drops: the next read of the object fails
    e = _error_of(lambda: lazyscan.scan(f"{BUCKET}/data/pages.parquet", filesystem=fs).to_table())
    assert f"{BUCKET}/data/pages.parquet" in str(e)


def test_selective_read_requests_and_bytes(
    s3_server: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a needle in a file of many row groups: with no coalescing gap, an object store read
    # fetches the bytes of the local read, and besides them only the surplus of the requests
    # widened to the smallest one (MIN_REMOTE_READ: 64 KiB, a store's error body must fit);
    # the default gap trades some bytes for fewer requests; the profile counts the requests
    # the server saw
    n = 200_000
    rng = np.random.default_rng(3)
    table = pa.table({
        "k": rng.integers(0, 10**9, n),
        "s": pa.array([f"comment {i % 50_000} {i % 7}" for i in range(n)]),
        **{f"p{i}": rng.normal(size=n) for i in range(4)},
    })
    path = tmp_path / "needle.parquet"
    pq.write_table(table, path, row_group_size=25_000, data_page_size=16 * 1024, write_page_index=True)
    key = _key(s3_server.upload(path, BUCKET, "needle/needle.parquet"))
    fs = s3_server.arrow_filesystem()
    where = "s = 'comment 123 4'"
    lazyscan.scan(str(path), where=where).to_table()  # footer and layouts cached
    local = lazyscan.scan(str(path), where=where, coalesce_gap=0)
    expected = local.to_table()
    assert expected.num_rows > 0
    lazyscan.scan(key, where=where, filesystem=fs).to_table()  # footer and layouts cached
    # the length of every request the remote scans make
    lengths: list[int] = []
    read = ArrowSource._read

    def counted(self: ArrowSource, offset: int, length: int) -> bytes:
        lengths.append(length)
        return read(self, offset, length)

    monkeypatch.setattr(ArrowSource, "_read", counted)
    results = {}
    widened = {}
    for gap in (0, -1):
        before = s3_server.requests()
        lengths.clear()
        s = lazyscan.scan(key, where=where, filesystem=fs, coalesce_gap=gap)
        assert_same_table(s.to_table(), expected, gap)
        seen = s3_server.requests() - before
        # beyond the profile's reads: the HEAD of the listing, the HEAD of the one open (the
        # file schema discovery opened is the one the scan reads), and the HEADs that check the
        # object is still the version planned before and after its row groups are read
        assert s.profile["requests"] <= seen <= s.profile["requests"] + 4, (gap, seen, s.profile["requests"])
        # the profile's requests: the reads, and the listings of planning that looked for a
        # Delta or Iceberg table above the file (one per folder up, see lazyscan.scan.dataset)
        assert s.dataset is not None and s.dataset.probes.requests == 2  # needle/, the bucket
        assert len(lengths) + s.dataset.probes.requests == s.profile["requests"]
        assert min(lengths) >= MIN_REMOTE_READ  # the file is larger than that
        results[gap] = s.profile
        widened[gap] = lengths.count(MIN_REMOTE_READ)
    # no gap: the local read's bytes, plus at most the 64 KiB of each request widened to it
    # (asked for less: a request of exactly the minimum), less what the surplus of one served
    assert local.profile["bytes_read"] <= results[0]["bytes_read"]
    assert results[0]["bytes_read"] <= local.profile["bytes_read"] + widened[0] * MIN_REMOTE_READ
    assert results[-1]["requests"] < results[0]["requests"]
    assert results[-1]["bytes_read"] >= results[0]["bytes_read"]


def test_page_indexes_are_fetched_in_one_request(s3_server: S3Server, tmp_path: Path) -> None:
    n = 40_000
    table = pa.table({f"c{i}": np.arange(n) * (i + 1) for i in range(6)})
    path = tmp_path / "indexed.parquet"
    pq.write_table(table, path, row_group_size=2_000, data_page_size=1024, write_page_index=True)
    key = _key(s3_server.upload(path, BUCKET, "indexed/indexed.parquet"))
    lazyscan.parquet.file.clear_caches()
    pf = lazyscan.ParquetFile(key, s3_server.arrow_filesystem())
    stats = pf.source.stats
    before = (stats.requests, stats.cached_reads)
    layouts = [pf.page_layout(rg, name) for rg in range(pf.num_row_groups) for name in table.column_names]
    assert all(layout.from_offset_index for layout in layouts)
    # 20 row groups x 6 columns of offset indexes in one read: a request, or none where they
    # lie in the last 64 KiB, whose window the footer's tail read kept
    starts = [
        at for rg in pf.metadata.row_groups for c in rg.columns
        for at in (c.offset_index_offset, c.column_index_offset) if at is not None
    ]
    in_tail = min(starts) >= pf.source.size - MIN_REMOTE_READ
    requests, cached = stats.requests - before[0], stats.cached_reads - before[1]
    assert (requests, cached) == ((0, 1) if in_tail else (1, 0)), in_tail
    s = lazyscan.scan(key, where="c0 BETWEEN 1000 AND 1010", filesystem=s3_server.arrow_filesystem())
    assert s.to_table()["c3"].to_pylist() == [4 * i for i in range(1000, 1011)]


def test_page_indexes_are_fetched_once_per_file_version(s3_server: S3Server, tmp_path: Path) -> None:
    """Each scan of a byte range opens the file anew (a Spark task, the chooser's sample of one
    row group): the span of page indexes fetched by the first open serves the later ones, and a
    new version of the file fetches its own."""
    n = 40_000
    path = tmp_path / "indexed.parquet"
    for version in (1, 2):
        table = pa.table({f"c{i}": np.arange(n) * (i + version) for i in range(6)})
        pq.write_table(table, path, row_group_size=2_000, data_page_size=1024, write_page_index=True)
        key = _key(s3_server.upload(path, BUCKET, "indexed/versions.parquet"))
        if version == 1:
            lazyscan.parquet.file.clear_caches()
        fetched = []
        for rg in (0, 7, 7, 13):
            pf = lazyscan.ParquetFile(key, s3_server.arrow_filesystem())
            stats = pf.source.stats
            before = stats.requests + stats.cached_reads  # a read, fetched or served by the footer's tail
            layout = pf.page_layout(rg, "c2")
            assert layout.from_offset_index
            fetched.append(stats.requests + stats.cached_reads - before)
            pf.close()
        assert fetched == [1, 0, 0, 0], (version, fetched)
        where = f"c0 BETWEEN {1000 * version} AND {1010 * version}"
        s = lazyscan.scan(key, where=where, filesystem=s3_server.arrow_filesystem())
        assert s.to_table()["c3"].to_pylist() == [(3 + version) * i for i in range(1000, 1011)]


@pytest.fixture(scope="module")
def many_groups(s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A file of 16 row groups: a sorted key, a needle column, payload."""
    n = 160_000
    rng = np.random.default_rng(9)
    table = pa.table({
        "k": np.arange(n),
        "s": pa.array([f"c{i % 40_000}-{i % 3}" for i in rng.permutation(n)]),
        **{f"p{i}": rng.normal(size=n) for i in range(3)},
    })
    path = tmp_path_factory.mktemp("many") / "many.parquet"
    pq.write_table(table, path, row_group_size=10_000, data_page_size=8 * 1024, write_page_index=True)
    key = _key(s3_server.upload(path, BUCKET, "many/many.parquet"))
    return {"path": path, "key": key}


@pytest.mark.parametrize(
    "where", ["s = 'c123-0'", "k BETWEEN 51000 AND 51200", "s IN ('c7-1', 'c39999-0') OR k < 5", "s >= 'c5' AND p0 > 1.5"]
)
def test_prefetch_keeps_rows_and_bytes(s3_server: S3Server, many_groups: dict[str, Any], where: str) -> None:
    fs = s3_server.arrow_filesystem()
    key = many_groups["key"]
    expected = lazyscan.scan(str(many_groups["path"]), where=where).to_table()
    lazyscan.scan(key, where=where, filesystem=fs).to_table()  # footer and layouts cached
    # with no coalescing gap, what is fetched ahead is what the read fetches anyway: nothing
    # twice, nothing for row groups statistics or the page index rule out
    off = lazyscan.scan(key, where=where, filesystem=fs, prefetch=False, coalesce_gap=0)
    assert_same_table(off.to_table(), expected, where)
    on = lazyscan.scan(key, where=where, filesystem=fs, coalesce_gap=0)
    assert_same_table(on.to_table(), expected, where)
    assert on.profile["bytes_read"] == off.profile["bytes_read"], where
    assert on.profile["requests"] == off.profile["requests"], where
    # with the default gap, ranges fetched ahead may merge across row groups: fewer requests
    off = lazyscan.scan(key, where=where, filesystem=fs, prefetch=False)
    on = lazyscan.scan(key, where=where, filesystem=fs)
    assert_same_table(on.to_table(), off.to_table(), where)
    assert on.profile["requests"] <= off.profile["requests"], where


def test_prefetch_with_a_wide_gap_merges_row_groups(s3_server: S3Server, many_groups: dict[str, Any]) -> None:
    fs = s3_server.arrow_filesystem()
    key = many_groups["key"]
    where = "s = 'c123-0'"
    lazyscan.scan(key, where=where, filesystem=fs).to_table()
    gap = 8 * 1024 * 1024
    off = lazyscan.scan(key, where=where, filesystem=fs, prefetch=False, coalesce_gap=gap)
    on = lazyscan.scan(key, where=where, filesystem=fs, coalesce_gap=gap)
    assert_same_table(on.to_table(), off.to_table())
    # without read-ahead every row group costs its own requests; with it the filter columns of
    # many row groups (and the pages between them) come in a few
    assert on.profile["requests"] * 2 <= off.profile["requests"], (on.profile["requests"], off.profile["requests"])


def test_block_cache_serves_covered_ranges_and_forgets_failures() -> None:
    from lazyscan.io.prefetch import BlockCache

    data = bytes(range(256)) * 64
    calls: list[tuple[int, int]] = []

    def fetch(offset: int, length: int) -> bytes:
        calls.append((offset, length))
        if offset >= 10_000:
            raise OSError("connection reset")
        return data[offset : offset + length]

    cache = BlockCache(fetch, budget=4096)
    cache.prefetch([(0, 1000), (2000, 3000)])
    view = cache.get(100, 50)
    assert view is not None and bytes(view) == data[100:150]
    assert cache.get(900, 200) is None  # crosses the end of a block
    cache.prefetch([(10_000, 10_100)])
    assert cache.get(10_010, 10) is None  # the failed request is forgotten
    assert not cache.covered(10_010, 10)
    cache.prefetch([(4000, 8000)])  # over budget: the oldest block goes
    assert not cache.covered(100, 50)
    assert bytes(cache.get(5000, 10) or b"") == data[5000:5010]
    cache.close()
    cache.prefetch([(0, 100)])  # closed: nothing more is fetched
    assert not cache.covered(0, 100)


def test_read_ahead_threads_are_shared(s3_server: S3Server, remote: dict[str, Any]) -> None:
    import threading

    from lazyscan.io.prefetch import PREFETCH_THREADS

    fs = s3_server.arrow_filesystem()
    for _ in range(3):
        lazyscan.scan(f"{BUCKET}/data/parts", where="id < 100 OR id > 5900", filesystem=fs).to_table()
    prefetchers = [t for t in threading.enumerate() if t.name.startswith("lazyscan-prefetch")]
    assert len(prefetchers) <= PREFETCH_THREADS
