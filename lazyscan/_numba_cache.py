"""Where numba caches lazyscan's kernels when ``NUMBA_CACHE_DIR`` is set.

numba files a cached function under a hash of its source file's absolute path. A packed
environment shipped to a Spark cluster is unpacked into a new folder per executor and per
application, so every executor of every application compiled all kernels again (about 15 s of
CPU), whatever ``NUMBA_CACHE_DIR`` said. Here lazyscan's own modules are filed under
``<NUMBA_CACHE_DIR>/lazyscan-<version>/<folder in the package>/<module>-<hash of its contents>``
instead: every copy of one installation on a machine shares one cache, and other code of the
same version (a checkout being edited) files elsewhere. numba still checks each entry against
the source file (contents, or modification time and size before numba 0.68) and the CPU.

Imported by ``lazyscan/__init__.py`` before any kernel module: numba picks a function's cache
locator when the function is decorated.
"""

from __future__ import annotations

import functools
import hashlib
import os
from typing import Any

from numba.core import caching, config

from lazyscan._version import __version__

_PACKAGE = os.path.dirname(os.path.abspath(__file__))

_Base: Any = getattr(caching, "UserProvidedCacheLocator", None) or getattr(caching, "_UserProvidedCacheLocator", None)
_Impl: Any = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)


def cache_folder(py_file: str) -> str | None:
    """The cache folder of a lazyscan module (None for other files or without a cache dir):
    one per module and contents, so copies of one installation share it and two installations
    of one version with different code (a checkout being edited, say) never overwrite each
    other's entries."""
    root = getattr(config, "CACHE_DIR", "")
    if not root:
        return None
    path = os.path.abspath(py_file)
    inside = os.path.relpath(os.path.dirname(path), _PACKAGE)
    if inside.startswith(os.pardir):
        return None
    try:
        st = os.stat(path)
        digest = _digest(path, st.st_mtime_ns, st.st_size)
    except OSError:
        return None
    module = os.path.splitext(os.path.basename(path))[0]
    return os.path.normpath(os.path.join(root, f"lazyscan-{__version__}", inside, f"{module}-{digest}"))


@functools.cache
def _digest(path: str, mtime_ns: int, size: int) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


if _Base is not None and _Impl is not None:

    class PackageCacheLocator(_Base):  # type: ignore[misc]
        """numba's locator for ``NUMBA_CACHE_DIR``, keyed by the module's place in lazyscan."""

        def __init__(self, py_func: Any, py_file: str) -> None:
            super().__init__(py_func, py_file)
            folder = cache_folder(py_file)
            assert folder is not None
            self._cache_path = folder

        @classmethod
        def from_function(cls, py_func: Any, py_file: str) -> Any:
            if cache_folder(py_file) is None:
                return None
            return super().from_function(py_func, py_file)

    if not any(getattr(c, "__name__", "") == "PackageCacheLocator" for c in _Impl._locator_classes):
        _Impl._locator_classes = [PackageCacheLocator, *_Impl._locator_classes]
