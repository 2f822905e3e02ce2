"""The build backend (build_support/lazyscan_build.py): wheels carry compiled kernels unless told not to.

The whole path (a fresh clone, ``pip install .`` into a new environment, the first query with an
empty cache compiling nothing) is measured by ``python -m benchmarks run coldstart``; these tests
check the backend's decisions without building.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "build_support"))
import lazyscan_build  # noqa: E402


def test_a_wheel_build_asks_for_lazyscans_dependencies(monkeypatch: pytest.MonkeyPatch) -> None:
    # setuptools' own answer (it reads pyproject.toml with the setuptools of the build environment)
    monkeypatch.setattr(lazyscan_build._setuptools, "get_requires_for_build_wheel", lambda settings=None: ["wheel"])
    monkeypatch.delenv("LAZYSCAN_BUILD_KERNELS", raising=False)
    requires = lazyscan_build.get_requires_for_build_wheel()
    assert requires[0] == "wheel"
    assert any(r.startswith("numba") for r in requires) and any(r.startswith("pyarrow") for r in requires)
    monkeypatch.setenv("LAZYSCAN_BUILD_KERNELS", "0")
    assert not any(r.startswith("numba") for r in lazyscan_build.get_requires_for_build_wheel())
    monkeypatch.delenv("LAZYSCAN_BUILD_KERNELS")
    assert not any(r.startswith("numba") for r in lazyscan_build.get_requires_for_build_wheel({"kernels": "no"}))


@pytest.mark.parametrize(
    ("env", "settings", "compiles"),
    [(None, None, True), ("0", None, False), ("off", None, False), (None, {"kernels": "no"}, False), ("1", {}, True)],
)
def test_build_wheel_compiles_unless_told_not_to(
    monkeypatch: pytest.MonkeyPatch, env: str | None, settings: dict[str, Any] | None, compiles: bool
) -> None:
    if env is None:
        monkeypatch.delenv("LAZYSCAN_BUILD_KERNELS", raising=False)
    else:
        monkeypatch.setenv("LAZYSCAN_BUILD_KERNELS", env)
    calls: list[str] = []
    monkeypatch.setattr(lazyscan_build, "compile_kernels", lambda: calls.append("compile") or True)
    monkeypatch.setattr(
        lazyscan_build._setuptools, "build_wheel", lambda *args, **kwargs: calls.append("wheel") or "lazyscan.whl"
    )
    assert lazyscan_build.build_wheel("dist", settings) == "lazyscan.whl"
    assert calls == (["compile", "wheel"] if compiles else ["wheel"])


def test_a_failed_compile_still_builds_the_wheel(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[list[str]] = []

    def failing(command: list[str], **kwargs: Any) -> SimpleNamespace:
        seen.append(command)
        assert kwargs["cwd"] == REPO and str(REPO) in kwargs["env"]["PYTHONPATH"]
        return SimpleNamespace(returncode=1)

    monkeypatch.setattr(subprocess, "run", failing)
    assert lazyscan_build.compile_kernels() is False
    assert "'warmup', '--ship'" in seen[0][-1]
    assert "the wheel has none" in capsys.readouterr().err


def test_package_data_covers_every_file_read_at_run_time() -> None:
    """Files the package reads at run time that are not Python (the Catalyst rule's Java sources,
    compiled at the first ``lazyscan.spark.configure``) are named in the package data, so a
    wheel carries them."""
    import fnmatch

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    patterns = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["lazyscan"]
    package = REPO / "lazyscan"
    sources = sorted(p.relative_to(package).as_posix() for p in (package / "spark" / "jvm").glob("*.java"))
    assert sources, "the Catalyst rule's sources are in lazyscan/spark/jvm"
    missing = [s for s in sources if not any(fnmatch.fnmatch(s, pattern) for pattern in patterns)]
    assert not missing, f"not in [tool.setuptools.package-data]: {missing}"
