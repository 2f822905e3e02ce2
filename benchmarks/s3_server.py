"""A real S3-compatible server for the tests and the object-store benchmark: moto's standalone
server in a subprocess on 127.0.0.1 (a free port), with a boto3 client to create buckets and upload
objects, optionally a relay in front of it that counts the bytes it sends, and a proxy that
injects the faults object stores show (error statuses, resets, truncated or corrupted bodies, stalls)."""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: credentials the server accepts (moto accepts any unless IAM checks are switched on)
ACCESS_KEY = "lazyscan-test"
SECRET_KEY = "lazyscan-secret"
REGION = "us-east-1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Endpoint:
    """Filesystems and Spark options for an S3 endpoint at ``host_port`` / ``endpoint``."""

    @property
    def host_port(self) -> str:
        raise NotImplementedError

    @property
    def endpoint(self) -> str:
        raise NotImplementedError

    def arrow_filesystem(self, **kwargs: Any) -> Any:
        """pyarrow's S3FileSystem on this endpoint; ``kwargs`` override the settings."""
        import pyarrow.fs as pafs

        opts = dict(
            endpoint_override=self.host_port, scheme="http", access_key=ACCESS_KEY, secret_key=SECRET_KEY,
            region=REGION,
        )
        opts.update(kwargs)
        return pafs.S3FileSystem(**opts)

    def fsspec_filesystem(self, **kwargs: Any) -> Any:
        """s3fs on this endpoint, listings not cached; ``kwargs`` go to ``S3FileSystem``."""
        import s3fs

        opts: dict[str, Any] = dict(
            key=ACCESS_KEY, secret=SECRET_KEY, client_kwargs={"endpoint_url": self.endpoint, "region_name": REGION},
            use_listings_cache=False,
        )
        opts.update(kwargs)
        return s3fs.S3FileSystem(**opts)

    def fs_options(self) -> dict[str, str]:
        """The same settings as ``fs.*`` options of the Spark source."""
        return {
            "fs.endpoint_override": self.host_port, "fs.scheme": "http", "fs.access_key": ACCESS_KEY,
            "fs.secret_key": SECRET_KEY, "fs.region": REGION,
        }


@dataclass
class S3Server(_Endpoint):
    """A running moto server: ``endpoint`` (``http://127.0.0.1:PORT``), its log file, a client."""

    process: subprocess.Popen[bytes]
    port: int
    log: Path
    client: Any

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def host_port(self) -> str:
        return f"127.0.0.1:{self.port}"

    def bucket(self, name: str) -> str:
        """Create bucket ``name`` (again: no error) and return it."""
        with contextlib.suppress(self.client.exceptions.BucketAlreadyOwnedByYou):
            self.client.create_bucket(Bucket=name)
        return name

    def upload(self, local: Path | str, bucket: str, key: str) -> str:
        """Upload a local file; returns its ``s3://`` URI."""
        self.bucket(bucket)
        self.client.upload_file(str(local), bucket, key)
        return f"s3://{bucket}/{key}"

    def upload_tree(self, local: Path | str, bucket: str, prefix: str) -> str:
        """Upload every file under the folder ``local`` to ``prefix/<its relative path>``;
        returns the folder's ``s3://`` URI."""
        root = Path(local)
        for path in sorted(root.rglob("*")):
            if path.is_file():
                self.upload(path, bucket, f"{prefix}/{path.relative_to(root).as_posix()}")
        return f"s3://{bucket}/{prefix}"

    def storage_options(self) -> dict[str, str]:
        """This endpoint and its credentials as the ``storage_options`` deltalake (object_store)
        takes."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION, "AWS_ALLOW_HTTP": "true",
        }

    def put(self, bucket: str, key: str, data: bytes) -> str:
        self.bucket(bucket)
        self.client.put_object(Bucket=bucket, Key=key, Body=data)
        return f"s3://{bucket}/{key}"

    def requests(self) -> int:
        """Object GET and HEAD requests the server has logged so far."""
        with open(self.log, "rb") as f:
            return sum(1 for line in f if (b"GET /" in line or b"HEAD /" in line) and b"/moto-api" not in line)

    def stop(self) -> None:
        stop_process(self.process, 10)


def stop_process(process: subprocess.Popen[bytes], timeout: float) -> None:
    """Terminate ``process`` and wait for it; kill it when it has not ended after ``timeout`` s."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def start_s3_server(folder: Path, env: dict[str, str] | None = None, timeout: float = 60.0) -> S3Server:
    """Start ``python -m moto.server`` on a free port of 127.0.0.1, logging to ``folder``."""
    import boto3

    port = free_port()
    log = folder / f"moto-{port}.log"
    penv = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out, stderr=subprocess.STDOUT, env=penv,
        )
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"moto server exited with {process.returncode}: {log.read_text()[-2000:]}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/moto-api/", timeout=2).read()
            break
        except (urllib.error.URLError, ConnectionError, OSError):
            if time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"moto server did not answer on port {port} within {timeout:g} s") from None
            time.sleep(0.1)
    client = boto3.client(
        "s3", endpoint_url=f"http://127.0.0.1:{port}", aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY, region_name=REGION,
    )
    return S3Server(process, port, log, client)


class CountingRelay:
    """A TCP relay on 127.0.0.1 in front of ``target_port`` that counts the bytes the server
    sends back (response bodies plus their HTTP headers, a few hundred bytes per request)."""

    def __init__(self, target_port: int) -> None:
        import threading

        self.target_port = target_port
        self.port = free_port()
        self.bytes_down = 0
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._stop = False
        self._thread = threading.Thread(target=self._accept, name="s3-relay", daemon=True)
        self._thread.start()

    @property
    def host_port(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        import threading

        while not self._stop:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            threading.Thread(target=self._pipe, args=(client, server, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, True), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, count: bool) -> None:
        try:
            while True:
                data = src.recv(1 << 20)
                if not data:
                    break
                if count:
                    with self._lock:
                        self.bytes_down += len(data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._stop = True
        with contextlib.suppress(OSError):
            self._listener.close()


# ---- a proxy that injects faults ------------------------------------------------------------

#: S3's error codes and messages for the statuses the proxy answers with
S3_ERRORS: dict[int, tuple[str, str]] = {
    403: ("AccessDenied", "Access Denied"),
    404: ("NoSuchKey", "The specified key does not exist."),
    500: ("InternalError", "We encountered an internal error. Please try again."),
    503: ("SlowDown", "Please reduce your request rate."),
}
_REASONS = {403: "Forbidden", 404: "Not Found", 500: "Internal Server Error", 503: "Service Unavailable"}


@dataclass(frozen=True)
class ProxyRequest:
    """What a rule sees of one request: method, ``bucket/key`` (path-style, decoded), the query
    string, the byte range asked for (first, last inclusive; None without a Range header) and how
    many times this method, key and range were asked for before (0 the first time)."""

    method: str
    key: str
    query: str
    range: tuple[int, int] | None
    seen_before: int

    @property
    def size(self) -> int | None:
        return None if self.range is None else self.range[1] - self.range[0] + 1


@dataclass(frozen=True)
class Fault:
    """One fault.  Build it with the functions below: :func:`status`, :func:`reset`,
    :func:`truncate`, :func:`stall`, :func:`corrupt`."""

    kind: str  # "status", "reset", "truncate", "stall", "corrupt"
    code: int = 0  # status: the HTTP status
    keep: int = 0  # truncate: body bytes sent before closing; stall: body bytes sent before holding
    seconds: float = 0.0  # stall: how long the response is held
    offset: int = 0  # corrupt: the byte of the object (not of the response) flipped
    before_headers: bool = True  # stall: hold before the status line (else after ``keep`` body bytes)

    @property
    def name(self) -> str:
        return f"{self.code}" if self.kind == "status" else self.kind


def status(code: int) -> Fault:
    """Answer with ``code`` (403, 404, 500 or 503) and S3's XML error body instead of forwarding."""
    if code not in S3_ERRORS:
        raise ValueError(f"no S3 error body for status {code}")
    return Fault("status", code=code)


def reset() -> Fault:
    """Reset the connection (TCP RST) instead of answering."""
    return Fault("reset")


def truncate(keep: int = 0) -> Fault:
    """Send the server's status and headers (its Content-Length) and ``keep`` bytes of the body, then close."""
    return Fault("truncate", keep=keep)


def stall(seconds: float, after_body_bytes: int | None = None) -> Fault:
    """Hold the response ``seconds`` before its status line, or after the headers and
    ``after_body_bytes`` bytes of the body; then send the rest."""
    if after_body_bytes is None:
        return Fault("stall", seconds=seconds)
    return Fault("stall", seconds=seconds, keep=after_body_bytes, before_headers=False)


def corrupt(offset: int) -> Fault:
    """Flip the bits of the object's byte at ``offset`` in any response that holds it."""
    return Fault("corrupt", offset=offset)


class Rule:
    """Which requests get ``fault``: all conditions given must hold.

    ``method`` (None: any); ``key``: an ``fnmatch`` pattern on ``bucket/key``; ``max_size`` /
    ``min_size``: bounds on the range's length (a request without a Range header has no length
    and matches neither); ``first``: only the first ``first`` requests of each distinct method,
    key and range; ``every``: every ``every``-th request that passed the conditions before;
    ``fraction``: that share of the requests, decided from ``seed``, the key, the range and how
    often it was asked for before (the same decisions whatever the threads' order);
    ``times``: at most this many faults from this rule; ``when``: any further test on the
    :class:`ProxyRequest`. A corrupt fault only applies to responses that hold its byte.
    """

    def __init__(
        self,
        fault: Fault,
        *,
        method: str | None = "GET",
        key: str | None = None,
        max_size: int | None = None,
        min_size: int | None = None,
        first: int | None = None,
        every: int | None = None,
        fraction: float | None = None,
        seed: int = 0,
        times: int | None = None,
        when: Callable[[ProxyRequest], bool] | None = None,
    ) -> None:
        self.fault = fault
        self.method = method
        self.key = key
        self.max_size = max_size
        self.min_size = min_size
        self.first = first
        self.every = every
        self.fraction = fraction
        self.seed = seed
        self.times = times
        self.when = when
        self.matched = 0  # requests that passed the conditions before ``every``, ``fraction`` and ``times``
        self.injected = 0

    def select(self, req: ProxyRequest) -> bool:
        """Whether ``req`` gets the fault (call under the proxy's lock: it counts)."""
        import fnmatch
        import hashlib

        if self.method is not None and req.method != self.method:
            return False
        if self.key is not None and not fnmatch.fnmatchcase(req.key, self.key):
            return False
        size = req.size
        if (self.max_size is not None or self.min_size is not None) and size is None:
            return False
        if self.max_size is not None and size is not None and size > self.max_size:
            return False
        if self.min_size is not None and size is not None and size < self.min_size:
            return False
        if self.fault.kind == "corrupt" and req.range is not None and not req.range[0] <= self.fault.offset <= req.range[1]:
            return False
        if self.first is not None and req.seen_before >= self.first:
            return False
        if self.when is not None and not self.when(req):
            return False
        self.matched += 1
        if self.every is not None and self.matched % self.every:
            return False
        if self.fraction is not None:
            digest = hashlib.blake2b(f"{self.seed}|{req.method}|{req.key}|{req.range}|{req.seen_before}".encode(), digest_size=8)
            if int.from_bytes(digest.digest(), "little") / 2**64 >= self.fraction:
                return False
        if self.times is not None and self.injected >= self.times:
            return False
        self.injected += 1
        return True


@dataclass
class RequestRecord:
    """One request the proxy saw: method, key, range, the fault it got (None: forwarded as is),
    the status sent, and when it arrived and was answered (``time.monotonic()``)."""

    method: str
    key: str
    range: tuple[int, int] | None
    fault: str | None
    status: int = 0
    arrived: float = 0.0
    answered: float = 0.0


class FaultProxy(_Endpoint):
    """An HTTP proxy on 127.0.0.1 in front of the S3 server at ``target_port`` that injects faults.

    Each request is read (request line, headers, body), matched against the rules (the first
    that selects it wins; see :class:`Rule`), and either answered with the fault or forwarded
    on a keep-alive connection to the server, whose response is sent back (changed where the
    fault says so). Client connections are kept alive as S3's are. Counters: requests by
    method, by method/key/range, faults injected by kind, bytes sent back, connections
    accepted; ``log`` holds every request. Set rules with :meth:`set_rules` (or the ``with proxy.faults(...)`` form) between
    reads; :meth:`close` ends every connection.
    """

    def __init__(self, target_port: int, rules: list[Rule] | None = None) -> None:
        import threading
        from collections import Counter

        self.target_port = target_port
        self.port = free_port()
        self.rules: list[Rule] = list(rules or [])
        self.requests: Counter[str] = Counter()
        self.by_range: Counter[tuple[str, str, tuple[int, int] | None]] = Counter()
        self.injected: Counter[str] = Counter()
        self.bytes_down = 0
        self.connections = 0  # client connections accepted
        self.log: list[RequestRecord] = []
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._clients: set[socket.socket] = set()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._thread = threading.Thread(target=self._accept, name="s3-fault-proxy", daemon=True)
        self._thread.start()

    @property
    def host_port(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- rules and counters --

    def set_rules(self, *rules: Rule) -> None:
        """Replace the rules (no rule: every request is forwarded as is)."""
        with self._lock:
            self.rules = list(rules)

    @contextlib.contextmanager
    def faults(self, *rules: Rule) -> Iterator[FaultProxy]:
        """``with proxy.faults(Rule(...)):`` the rules hold inside the block, counters start at zero."""
        self.reset_counters()
        self.set_rules(*rules)
        try:
            yield self
        finally:
            self.set_rules()

    def reset_counters(self) -> None:
        with self._lock:
            self.requests.clear()
            self.by_range.clear()
            self.injected.clear()
            self.bytes_down = 0
            self.connections = 0
            self.log = []

    def data_requests(self) -> int:
        """GET requests seen (including those answered with a fault)."""
        with self._lock:
            return self.requests["GET"]

    def faults_injected(self) -> int:
        with self._lock:
            return sum(self.injected.values())

    # -- serving --

    def _accept(self) -> None:
        import threading

        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self._clients.add(client)
                self.connections += 1
            threading.Thread(target=self._serve, args=(client,), name="s3-fault-proxy-conn", daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        import http.client

        upstream = http.client.HTTPConnection("127.0.0.1", self.target_port, timeout=600)
        reader = client.makefile("rb")
        try:
            while not self._closed.is_set():
                request = _read_request(reader, client)
                if request is None:
                    return
                method, target, headers, body = request
                if not self._handle(client, upstream, method, target, headers, body):
                    return
        except (OSError, http.client.HTTPException, ValueError):
            return
        finally:
            upstream.close()
            with contextlib.suppress(OSError):
                reader.close()
            self._drop(client)

    def _drop(self, client: socket.socket) -> None:
        with self._lock:
            self._clients.discard(client)
        with contextlib.suppress(OSError):
            client.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            client.close()

    def _handle(
        self, client: socket.socket, upstream: Any, method: str, target: str, headers: list[tuple[str, str]], body: bytes
    ) -> bool:
        """Answer one request; False when the connection is to be closed."""
        import urllib.parse

        path, _, query = target.partition("?")
        key = urllib.parse.unquote(path.lstrip("/"))
        byte_range = _parse_range(_header(headers, "range"), None)
        arrived = time.monotonic()
        with self._lock:
            seen = self.by_range[(method, key, byte_range)]
            self.by_range[(method, key, byte_range)] += 1
            self.requests[method] += 1
            req = ProxyRequest(method, key, query, byte_range, seen)
            fault = next((r.fault for r in self.rules if r.select(req)), None)
            if fault is not None:
                self.injected[fault.name] += 1
            record = RequestRecord(method, key, byte_range, None if fault is None else fault.name, arrived=arrived)
            self.log.append(record)
        try:
            return self._answer(client, upstream, method, target, headers, body, key, fault, record)
        finally:
            record.answered = time.monotonic()

    def _answer(
        self, client: socket.socket, upstream: Any, method: str, target: str, headers: list[tuple[str, str]], body: bytes,
        key: str, fault: Fault | None, record: RequestRecord,
    ) -> bool:
        if fault is not None and fault.kind == "status":
            record.status = fault.code
            return self._send(client, _error_response(fault.code, method, key))
        if fault is not None and fault.kind == "reset":
            with contextlib.suppress(OSError):
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return False
        upstream.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        for name, value in headers:
            if name.lower() not in ("expect", "connection", "keep-alive", "proxy-connection"):
                upstream.putheader(name, value)
        upstream.endheaders(body if body else None)
        response = upstream.getresponse()
        payload = response.read()
        record.status = response.status
        out_headers = [
            (k, v) for k, v in response.getheaders()
            if k.lower() not in ("transfer-encoding", "connection", "keep-alive", "content-length")
        ]
        length = int(response.getheader("content-length") or 0) if method == "HEAD" else len(payload)
        out_headers.append(("Content-Length", str(length)))
        if response.will_close:
            upstream.close()
        if fault is not None and fault.kind == "corrupt":
            first = 0
            content_range = response.getheader("content-range")
            if content_range:
                first = int(content_range.split()[1].split("-")[0])
            at = fault.offset - first
            if 0 <= at < len(payload):
                payload = payload[:at] + bytes([payload[at] ^ 0xFF]) + payload[at + 1 :]
        head = f"HTTP/1.1 {response.status} {response.reason}\r\n".encode("latin-1")
        head += b"".join(f"{k}: {v}\r\n".encode("latin-1") for k, v in out_headers) + b"\r\n"
        if fault is not None and fault.kind == "truncate":
            self._send(client, head + payload[: min(fault.keep, max(len(payload) - 1, 0))])
            return False
        if fault is not None and fault.kind == "stall":
            if fault.before_headers:
                if self._closed.wait(fault.seconds):
                    return False
            else:
                if not self._send(client, head + payload[: fault.keep]):
                    return False
                if self._closed.wait(fault.seconds):
                    return False
                return self._send(client, payload[fault.keep :])
        return self._send(client, head + payload)

    def _send(self, client: socket.socket, data: bytes) -> bool:
        try:
            client.sendall(data)
        except OSError:
            return False
        with self._lock:
            self.bytes_down += len(data)
        return True

    def close(self) -> None:
        """Stop accepting, end every connection (stalled responses included)."""
        self._closed.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept (close alone does not)
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            clients = list(self._clients)
        for c in clients:
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)
        self._thread.join(5)

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _header(headers: list[tuple[str, str]], name: str) -> str | None:
    return next((v for k, v in headers if k.lower() == name), None)


def _parse_range(value: str | None, total: int | None) -> tuple[int, int] | None:
    """``bytes=a-b`` as (a, b); ``bytes=a-`` as (a, a + 2**62) (open ended); suffix ranges and
    several ranges as None."""
    if not value or not value.startswith("bytes=") or "," in value:
        return None
    first, _, last = value[len("bytes=") :].partition("-")
    if not first:
        return None
    return int(first), int(last) if last else int(first) + 2**62


def _read_request(reader: Any, client: socket.socket) -> tuple[str, str, list[tuple[str, str]], bytes] | None:
    """One HTTP/1.1 request from ``reader``: method, target, headers, body (chunked bodies kept
    with their framing); None at the end of the connection."""
    line = reader.readline(65537)
    while line in (b"\r\n", b"\n"):
        line = reader.readline(65537)
    if not line:
        return None
    method, target, _ = line.decode("latin-1").split(" ", 2)
    headers: list[tuple[str, str]] = []
    while True:
        h = reader.readline(65537)
        if h in (b"\r\n", b"\n", b""):
            break
        k, _, v = h.decode("latin-1").partition(":")
        headers.append((k.strip(), v.strip()))
    if (_header(headers, "expect") or "").lower() == "100-continue":
        client.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
    body = b""
    length = _header(headers, "content-length")
    if length is not None:
        body = reader.read(int(length))
    elif (_header(headers, "transfer-encoding") or "").lower() == "chunked":
        parts = []
        while True:
            size_line = reader.readline(65537)
            parts.append(size_line)
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while True:  # trailers up to the blank line
                    t = reader.readline(65537)
                    parts.append(t)
                    if t in (b"\r\n", b"\n", b""):
                        break
                break
            parts.append(reader.read(size + 2))
        body = b"".join(parts)
    return method, target, headers, body


def _error_response(code: int, method: str, key: str) -> bytes:
    """S3's answer with status ``code``: XML error body (none for HEAD), request id headers."""
    import uuid

    error, message = S3_ERRORS[code]
    request_id = uuid.uuid4().hex[:16].upper()
    host_id = uuid.uuid4().hex + uuid.uuid4().hex
    resource = "/" + key
    body = b"" if method == "HEAD" else (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Error><Code>{error}</Code><Message>{message}</Message>"
        + (f"<Key>{key.partition('/')[2]}</Key>" if code == 404 else "")
        + f"<Resource>{resource}</Resource><RequestId>{request_id}</RequestId><HostId>{host_id}</HostId></Error>"
    ).encode()
    head = (
        f"HTTP/1.1 {code} {_REASONS[code]}\r\n"
        f"x-amz-request-id: {request_id}\r\nx-amz-id-2: {host_id}\r\n"
        "Content-Type: application/xml\r\nServer: AmazonS3\r\n"
        f"Date: {time.strftime('%a, %d %b %Y %H:%M:%S GMT', time.gmtime())}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    return head + body
