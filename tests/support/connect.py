"""A Spark Connect server for the tests: ``SparkConnectServer`` from the installed PySpark
(its jars hold the server from Spark 4.0 on), ``local[2]``, on a free port of 127.0.0.1, started
with ``spark-submit`` as a process of its own, its log kept in a folder."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.s3_server import free_port, stop_process
from tests.support.jvm import TEST_JVM_OPTIONS

START_TIMEOUT_S = 180.0



def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class ConnectServer:
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def session(self) -> Any:
        """A Connect session to this server (beside a classic session of this process, if any)."""
        from pyspark.sql.connect.session import SparkSession

        return SparkSession.builder.remote(self.url).getOrCreate()

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        stop_process(self.process, 30)


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def start_connect_server(folder: Path) -> ConnectServer:
    """Start the server with its working folder and log in ``folder``; wait until it listens."""
    home = spark_home()
    if not any(p.name.startswith("spark-connect_") for p in (home / "jars").glob("*.jar")):
        raise RuntimeError(f"this PySpark ({home}) has no Spark Connect server jar")
    port = free_port()
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "connect-server.log"
    env = {
        **os.environ,
        "SPARK_HOME": str(home),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "TZ": "UTC",
    }
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    command = [
        str(home / "bin" / "spark-submit"),
        "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
        "--name", "lazyscan-tests-connect",
        "--master", "local[2]",
        "--driver-memory", "1g",
        "--driver-java-options", TEST_JVM_OPTIONS,
        "--conf", f"spark.connect.grpc.binding.port={port}",
        "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.sql.session.timeZone=UTC",
        "--conf", "spark.sql.ansi.enabled=true",
        "--conf", "spark.default.parallelism=2",
        "--conf", f"spark.pyspark.python={sys.executable}",
    ]
    out = open(log, "wb")  # noqa: SIM115 - the server writes to it until it stops
    process = subprocess.Popen(command, cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT)
    out.close()
    server = ConnectServer(process, port, log)
    deadline = time.monotonic() + START_TIMEOUT_S
    while not _listening(port):
        if process.poll() is not None or time.monotonic() > deadline:
            with contextlib.suppress(Exception):
                server.stop()
            raise RuntimeError(
                f"the Spark Connect server did not start (exit {process.poll()}); log {log}:\n"
                + server.log_tail()
            )
        time.sleep(0.5)
    return server
