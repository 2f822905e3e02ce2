"""A Spark standalone cluster on 127.0.0.1 for the tests: one master and workers started with
``spark-class`` from the installed PySpark, on free ports, each with its log and work folder in
a folder of the test's, stopped by :meth:`StandaloneCluster.stop` (also when starting fails).

:func:`packed_environment` builds what docs/SPARK.md tells cluster users to ship: a wheel of
lazyscan installed with its ``spark`` extra into a fresh virtual environment, packed with
``venv-pack``, PySpark's jars left out.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.s3_server import free_port, stop_process
from tests.support.jvm import TEST_JVM_OPTIONS

START_TIMEOUT_S = 120.0
REPO = Path(__file__).resolve().parents[2]
#: left out of the packed environment: executors' Python workers import PySpark's Python
#: modules only, the cluster's Spark brings the jars
PYSPARK_JARS = "lib/python*/site-packages/pyspark/jars/*"



def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def spark_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1", **extra}
    for key in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE"):
        env.pop(key, None)
    return env


@dataclass
class StandaloneCluster:
    folder: Path
    master_port: int
    ui_port: int
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    def state(self) -> dict[str, object]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as r:
            state: dict[str, object] = json.load(r)
            return state

    def logs(self, lines: int = 30) -> str:
        out = []
        for log in sorted(self.folder.glob("*.log")):
            text = log.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"--- {log.name}\n" + "\n".join(text))
        return "\n".join(out)

    def stop(self) -> None:
        """Workers first, then the master."""
        for p in reversed(self.processes):
            stop_process(p, 30)


def _start(cluster: StandaloneCluster, name: str, args: list[str]) -> None:
    log = open(cluster.folder / f"{name}.log", "wb")  # noqa: SIM115 - the process writes to it
    command = [str(spark_home() / "bin" / "spark-class"), *args]
    env = spark_env(SPARK_DAEMON_MEMORY="512m", SPARK_DAEMON_JAVA_OPTS=TEST_JVM_OPTIONS)
    cluster.processes.append(
        subprocess.Popen(command, cwd=cluster.folder, env=env, stdout=log, stderr=subprocess.STDOUT)
    )
    log.close()


def start_cluster(folder: Path, workers: int = 2, cores: int = 1, memory: str = "1g") -> StandaloneCluster:
    """Start a master and ``workers`` workers of ``cores`` cores; wait until all are alive."""
    folder.mkdir(parents=True, exist_ok=True)
    cluster = StandaloneCluster(folder, free_port(), free_port())
    try:
        _start(cluster, "master", [
            "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1", "--port", str(cluster.master_port), "--webui-port", str(cluster.ui_port),
        ])
        for i in range(workers):
            work = folder / f"worker-{i}"
            work.mkdir(exist_ok=True)
            _start(cluster, f"worker-{i}", [
                "org.apache.spark.deploy.worker.Worker",
                "--host", "127.0.0.1", "--webui-port", str(free_port()), "--cores", str(cores),
                "--memory", memory, "--work-dir", str(work), cluster.url,
            ])
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if any(p.poll() is not None for p in cluster.processes):
                raise RuntimeError("a Spark standalone process exited at start")
            with contextlib.suppress(OSError, ValueError):
                alive = [w for w in cluster.state().get("workers", []) if w.get("state") == "ALIVE"]  # type: ignore[union-attr]
                if len(alive) >= workers:
                    return cluster
            if time.monotonic() > deadline:
                raise RuntimeError(f"the standalone cluster did not start in {START_TIMEOUT_S:.0f} s")
            time.sleep(0.5)
    except BaseException as e:
        cluster.stop()
        if isinstance(e, RuntimeError):
            raise RuntimeError(f"{e}; logs:\n{cluster.logs()}") from None
        raise


def packed_environment(folder: Path) -> tuple[Path, Path]:
    """``(environment folder, archive)``: a lazyscan wheel with the ``spark`` extra in a fresh
    virtual environment, its kernels compiled ahead (``lazyscan warmup --ship``), packed by
    venv-pack, as docs/SPARK.md ("Installing on a cluster") says."""
    folder.mkdir(parents=True, exist_ok=True)
    dist, env, archive = folder / "dist", folder / "lazyscan-env", folder / "lazyscan-env.tar.gz"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.PIPE}

    def run(command: list[str], **env: str) -> None:
        done = subprocess.run(command, check=False, env={**os.environ, **env}, **quiet)  # type: ignore[call-overload]
        if done.returncode:
            raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr.decode(errors='replace')[-3000:]}")

    # setuptools builds in the source folder: build from a copy, the checkout stays clean
    source = folder / "source"
    shutil.rmtree(source, ignore_errors=True)
    shutil.copytree(REPO / "lazyscan", source / "lazyscan", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "build_support", source / "build_support")
    # the kernels are compiled into the environment below (or come with the copied source)
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist), str(source)],
        LAZYSCAN_BUILD_KERNELS="0")
    (wheel,) = dist.glob("lazyscan-*.whl")
    shutil.rmtree(env, ignore_errors=True)
    run([sys.executable, "-m", "venv", str(env)])
    import pyspark

    run([
        str(env / "bin" / "python"), "-m", "pip", "install", "--quiet", f"{wheel}[spark]",
        f"pyspark=={pyspark.__version__}", "venv-pack>=0.2,<1",
    ])
    # the kernels compiled ahead, into the environment (nothing to do when the wheel carries
    # kernels built from these sources, as after `make kernels`)
    run([str(env / "bin" / "lazyscan"), "warmup", "--ship"])
    run([
        str(env / "bin" / "venv-pack"), "--quiet", "-p", str(env), "-o", str(archive), "--force",
        "--exclude", PYSPARK_JARS,
    ])
    return env, archive
