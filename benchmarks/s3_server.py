"""A real S3-compatible server for the tests and the object-store benchmark: moto's standalone
server in a subprocess on 127.0.0.1 (a free port), with a boto3 client to create buckets and upload
objects, and optionally a relay in front of it that counts the bytes it sends."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
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


@dataclass
class S3Server:
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

    def put(self, bucket: str, key: str, data: bytes) -> str:
        self.bucket(bucket)
        self.client.put_object(Bucket=bucket, Key=key, Body=data)
        return f"s3://{bucket}/{key}"

    def requests(self) -> int:
        """Object GET and HEAD requests the server has logged so far."""
        with open(self.log, "rb") as f:
            return sum(1 for line in f if (b"GET /" in line or b"HEAD /" in line) and b"/moto-api" not in line)

    def arrow_filesystem(self, **kwargs: Any) -> Any:
        import pyarrow.fs as pafs

        opts = dict(
            endpoint_override=self.host_port, scheme="http", access_key=ACCESS_KEY, secret_key=SECRET_KEY,
            region=REGION,
        )
        opts.update(kwargs)
        return pafs.S3FileSystem(**opts)

    def fsspec_filesystem(self) -> Any:
        import s3fs

        return s3fs.S3FileSystem(
            key=ACCESS_KEY, secret=SECRET_KEY, client_kwargs={"endpoint_url": self.endpoint, "region_name": REGION},
            use_listings_cache=False,
        )

    def fs_options(self) -> dict[str, str]:
        """The same settings as ``fs.*`` options of the Spark source."""
        return {
            "fs.endpoint_override": self.host_port, "fs.scheme": "http", "fs.access_key": ACCESS_KEY,
            "fs.secret_key": SECRET_KEY, "fs.region": REGION,
        }

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
