"""lazyscan's build backend: setuptools, plus kernels compiled into every wheel it builds.

``pip install .`` and ``pip wheel .`` build a wheel; before setuptools packs it, this backend
runs ``lazyscan warmup --ship`` on the source tree, so the wheel carries lazyscan's numba kernels
compiled for a portable CPU level (``lazyscan/_kernels``, see ``lazyscan/kernel_cache.py``) and
the first query of the new installation compiles nothing. That needs lazyscan's own dependencies
in the build environment (numba above all), which :func:`get_requires_for_build_wheel` asks for,
and about two minutes on a 2-core machine; nothing to do when the source tree already holds
kernels built from these sources (``make kernels``).

``LAZYSCAN_BUILD_KERNELS=0`` (or ``--config-settings kernels=no``) builds the wheel without
compiling. A failed compile is reported and the wheel is built without kernels: the
installation then compiles on first use, as numba does. Editable installs (``pip install -e``)
compile nothing here: ``make kernels`` does it in the checkout.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import (  # noqa: F401  (the rest of the backend interface, unchanged)
    build_editable,
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

SOURCE = Path(__file__).resolve().parent.parent


def _compiling(config_settings: dict[str, Any] | None) -> bool:
    setting = str((config_settings or {}).get("kernels", "yes")).strip().lower()
    env = os.environ.get("LAZYSCAN_BUILD_KERNELS", "1").strip().lower()
    return setting not in ("no", "0", "false", "off") and env not in ("no", "0", "false", "off")


def runtime_dependencies() -> list[str]:
    """lazyscan's own dependencies, from pyproject.toml: what importing it to compile needs."""
    try:
        import tomllib
    except ImportError:  # Python 3.10: no TOML reader in the standard library
        return []
    with open(SOURCE / "pyproject.toml", "rb") as f:
        return list(tomllib.load(f)["project"]["dependencies"])


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    base = list(_setuptools.get_requires_for_build_wheel(config_settings))
    return base + runtime_dependencies() if _compiling(config_settings) else base


def compile_kernels() -> bool:
    """``lazyscan warmup --ship`` on the source tree; False (with the reason on stderr) when it
    could not run."""
    if not runtime_dependencies():
        print("lazyscan: no TOML reader here; building the wheel without compiled kernels", file=sys.stderr)
        return False
    print(
        "lazyscan: compiling its kernels into the wheel (about two minutes on 2 cores; "
        "LAZYSCAN_BUILD_KERNELS=0 skips this)",
        file=sys.stderr,
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SOURCE), os.environ.get("PYTHONPATH")]))}
    ship = "import sys; from lazyscan.cli.main import main; sys.exit(main(['warmup', '--ship']))"
    done = subprocess.run([sys.executable, "-c", ship], cwd=SOURCE, env=env, check=False)
    if done.returncode != 0:
        print("lazyscan: compiling the kernels failed; the wheel has none (they compile on first use)", file=sys.stderr)
        return False
    return True


def build_wheel(
    wheel_directory: str, config_settings: dict[str, Any] | None = None, metadata_directory: str | None = None
) -> str:
    if _compiling(config_settings):
        compile_kernels()
    return str(_setuptools.build_wheel(wheel_directory, config_settings, metadata_directory))
