"""Where numba caches lazyscan's kernels, the kernels an installation ships, and one compile
per machine at a time.

**The user cache.**
numba files a cached function under a hash of its source file's absolute path. A packed
environment shipped to a Spark cluster is unpacked into a new folder per executor and per
application, so every executor of every application compiled all kernels again (about 15 s of
CPU), whatever ``NUMBA_CACHE_DIR`` said. Here lazyscan's own modules are filed under
``<NUMBA_CACHE_DIR>/lazyscan-<version>/<folder in the package>/<module>-<hash of its contents>``
instead: every copy of one installation on a machine shares one cache, and other code of the
same version (a checkout being edited) files elsewhere. numba still checks each entry against
the source file (contents, or modification time and size before numba 0.68) and the CPU.

**Shipped kernels.** ``lazyscan warmup --ship`` compiles the kernels for a portable CPU level
(:data:`PORTABLE_CPU`: x86-64-v3 on x86, ``generic`` elsewhere) into ``lazyscan/_kernels/``
inside the installed package, in the same layout, so a wheel or a packed environment carries
them. numba keys every cached entry by the host CPU's name and features, so an entry built on
one CPU model is a miss on any other; when the user cache misses, :func:`load_shipped` looks the
signature up under the portable key instead, if the host has that level's features. A hit is
the same machine code numba would load from its own cache, so an executor on another CPU model
of the same family compiles nothing. Entries are per numba and Python version (numba checks
both), and per module contents (the folder name).

**One compile per machine.** Several Python workers starting together (a Spark executor's
first tasks) would each compile the same kernels, each at a fraction of the machine. A process
that misses both caches takes a machine-wide file lock (:class:`CompileLock`) before compiling
and looks into the cache again once it holds it: the first process compiles, the others load
what it saved.

Imported by ``lazyscan/__init__.py`` before any kernel module: numba picks a function's cache
locator when the function is decorated.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import logging
import os
import pickle
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from numba.core import caching, config, event

from lazyscan._version import __version__

_PACKAGE = os.path.dirname(os.path.abspath(__file__))

_Base: Any = getattr(caching, "UserProvidedCacheLocator", None) or getattr(caching, "_UserProvidedCacheLocator", None)
_Impl: Any = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)


log = logging.getLogger(__name__)

#: the folder of shipped kernels inside the package
SHIPPED = os.path.join(_PACKAGE, "_kernels")

#: x86-64-v3 (Intel Haswell, 2013, and AMD Zen, 2017, and later) is the level shipped kernels are built for on x86;
#: LLVM's names of the features the host must have to run them
_X86_V3_FEATURES = frozenset(
    {"avx", "avx2", "bmi", "bmi2", "cx16", "f16c", "fma", "lzcnt", "movbe", "popcnt", "sse4.2", "xsave"}
)


def portable_cpu() -> tuple[str, str]:
    """(CPU name, feature string) shipped kernels are compiled for on this architecture."""
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64"):
        return ("x86-64-v3", "")
    return ("generic", "")


PORTABLE_CPU = portable_cpu()


@functools.cache
def host_runs_portable_code() -> bool:
    """Whether this CPU has every feature the portable level assumes."""
    if PORTABLE_CPU[0] != "x86-64-v3":
        return True
    import llvmlite.binding as ll

    try:
        features = ll.get_host_cpu_features()
    except RuntimeError:  # LLVM cannot tell: do not guess
        return False
    have = {name for name, on in features.items() if on}
    return have >= _X86_V3_FEATURES


def cache_folder(py_file: str, root: str | None = None) -> str | None:
    """The cache folder of a lazyscan module under ``root`` (default: ``NUMBA_CACHE_DIR``;
    None for other files or without a cache dir): one per module and contents, so copies of
    one installation share it and two installations of one version with different code (a
    checkout being edited, say) never overwrite each other's entries."""
    root = root if root is not None else getattr(config, "CACHE_DIR", "")
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


# --- shipped kernels -------------------------------------------------------------------------

#: the source stamp of shipped index files: the module's contents are already in the folder name
#: (numba before 0.68 stamps with modification time and size, which an installation changes)
_SHIPPED_STAMP = "lazyscan-shipped"


def _lazyscan_source(cache: Any) -> str | None:
    """The lazyscan module file a numba cache object belongs to (None for any other code)."""
    known: str | bool | None = getattr(cache, "_lazyscan_source", False)
    if known is not False:
        return known if isinstance(known, str) else None
    try:
        path = os.path.abspath(cache._py_func.__code__.co_filename)
    except AttributeError:
        path = ""
    inside = path.startswith(_PACKAGE + os.sep) and path.endswith(".py")
    cache._lazyscan_source = path if inside else None
    return cache._lazyscan_source  # type: ignore[no-any-return]


def _shipped_file(cache: Any, root: str = SHIPPED) -> Any:
    """numba's index-and-data file of this function among the shipped kernels, or None."""
    source = _lazyscan_source(cache)
    if source is None:
        return None
    folder = cache_folder(source, root)
    if folder is None:
        return None
    base = cache._impl.filename_base
    if not os.path.exists(os.path.join(folder, base + ".nbi")):
        return None
    return caching.IndexDataCacheFile(cache_path=folder, filename_base=base, source_stamp=_SHIPPED_STAMP)


def _portable_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    signature, (triple, _cpu, _features), code = key
    return (signature, (triple, *PORTABLE_CPU), code)


def shipped_kernels_enabled() -> bool:
    """Whether shipped kernels are looked at: there are some, ``LAZYSCAN_SHIPPED_KERNELS`` is not
    ``0``, and numba is not set to compile differently (bounds checks, a chosen CPU), which its
    cache keys do not tell apart."""
    if os.environ.get("LAZYSCAN_SHIPPED_KERNELS", "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    if getattr(config, "BOUNDSCHECK", None) or getattr(config, "CPU_NAME", None):
        return False
    return os.path.isdir(SHIPPED)


def load_shipped(cache: Any, sig: Any, target_context: Any) -> Any:
    """The compile result of ``sig`` from the shipped kernels, rebuilt for this process, or None
    (not a lazyscan function, nothing shipped for it, or a CPU without the portable level)."""
    if not shipped_kernels_enabled() or not host_runs_portable_code():
        return None
    shipped = _shipped_file(cache, SHIPPED)
    if shipped is None:
        return None
    data = shipped.load(_portable_key(cache._index_key(sig, target_context.codegen())))
    if data is None:
        return None
    return cache._impl.rebuild(target_context, data)


def pack_shipped(built: str | os.PathLike[str], into: str | os.PathLike[str] = SHIPPED) -> int:
    """Copy the entries of a ``NUMBA_CACHE_DIR`` tree built with the portable CPU level (one or
    more roots, e.g. one per build process) into the shipped layout; returns the entries copied.
    Entries of other numba versions or CPU levels are left out."""
    import numba

    count = 0
    for index in sorted(Path(built).rglob("*.nbi")):
        try:
            with open(index, "rb") as f:
                version = pickle.load(f)
                stamp, overloads = pickle.loads(f.read())
        except (OSError, EOFError, pickle.UnpicklingError):
            continue
        if version != numba.__version__:
            continue
        relative = index.parent.relative_to(Path(built))
        # <one build root>/lazyscan-<version>/<package folder>/<module>-<digest>
        parts = relative.parts
        at = next((i for i, part in enumerate(parts) if part.startswith("lazyscan-")), None)
        if at is None:
            continue
        folder = Path(into).joinpath(*parts[at:])
        base = index.name[: -len(".nbi")]
        source = caching.IndexDataCacheFile(cache_path=str(index.parent), filename_base=base, source_stamp=stamp)
        target = caching.IndexDataCacheFile(cache_path=str(folder), filename_base=base, source_stamp=_SHIPPED_STAMP)
        folder.mkdir(parents=True, exist_ok=True)
        for key in overloads:
            if tuple(key[1][1:]) != PORTABLE_CPU:
                continue
            data = source.load(key)
            if data is not None:
                target.save(key, data)
                count += 1
    return count


def sources_digest() -> str:
    """A hash of the contents of lazyscan's modules that name numba or ``kernel_jit`` (the
    kernels, and the warm-up that chooses their signatures), numba's and Python's versions and
    the portable CPU level: what shipped kernels were built from."""
    import numba

    h = hashlib.sha256(f"{numba.__version__}|{sys.version_info[:2]}|{PORTABLE_CPU}".encode())
    for path in sorted(Path(_PACKAGE).rglob("*.py")):
        text = path.read_bytes()
        if b"numba" in text or b"kernel_jit" in text:
            h.update(str(path.relative_to(_PACKAGE)).encode())
            h.update(text)
    return h.hexdigest()[:32]


def _stamp_file(into: str | os.PathLike[str]) -> Path:
    return Path(into) / f"lazyscan-{__version__}" / f"built-{sys.version_info[0]}{sys.version_info[1]}.json"


def write_shipped_stamp(into: str | os.PathLike[str] = SHIPPED, entries: int = 0) -> None:
    """Record what the shipped kernels in ``into`` were built from."""
    import json

    stamp = _stamp_file(into)
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(json.dumps({"sources": sources_digest(), "entries": entries, "cpu": PORTABLE_CPU[0]}))


def shipped_is_current(into: str | os.PathLike[str] = SHIPPED) -> bool:
    """Whether ``into`` holds kernels built from these very sources, numba and Python."""
    import json

    try:
        recorded = json.loads(_stamp_file(into).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(recorded, dict) and recorded.get("sources") == sources_digest() and recorded.get("entries", 0) > 0


def clear_shipped(into: str | os.PathLike[str] = SHIPPED) -> None:
    """Remove the shipped kernels (all versions and Python versions)."""
    shutil.rmtree(into, ignore_errors=True)


# --- one compile per machine ------------------------------------------------------------------

#: how long a process waits for another's compile before compiling itself
LOCK_WAIT_SECONDS = 600.0


class CompileLock:
    """A machine-wide lock around compiling lazyscan's kernels, reentrant within a process.

    Taken when a kernel misses every cache, released when the outermost compile has saved its
    result (or failed). numba compiles one function at a time per process (its global compiler
    lock), and a kernel compiles its callees while its own compile is open, so a depth count is
    enough. A process that waits too long (a stuck holder) compiles anyway: waiting is an
    optimisation, never a reason to hang."""

    def __init__(self, path: str | None = None) -> None:
        #: None: the lock beside the cache (:func:`_lock_path`), found at the first compile
        self.path = path
        self.depth = 0
        self._fd: int | None = None
        self.waited = 0.0

    def acquire(self) -> bool:
        """Take the lock (or count one more level); True when this call waited for another
        process."""
        self.depth += 1
        if self.depth > 1:
            return False
        try:
            import fcntl
        except ImportError:  # Windows: no lock, every process compiles
            return False
        if self.path is None:
            self.path = _lock_path()
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError:
            return False
        start = time.monotonic()
        waited = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    os.close(fd)
                    return False
                if not waited:
                    log.info("lazyscan: waiting for another process compiling its kernels (%s)", self.path)
                waited = True
                if time.monotonic() - start > LOCK_WAIT_SECONDS:
                    log.warning("lazyscan: gave up waiting %.0f s for %s; compiling here", LOCK_WAIT_SECONDS, self.path)
                    os.close(fd)
                    return True
                time.sleep(0.05)
        self._fd = fd
        self.waited += time.monotonic() - start
        return waited

    def release(self) -> None:
        if self.depth == 0:
            return
        self.depth -= 1
        if self.depth == 0 and self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing drops the flock


def _lock_path() -> str:
    """One lock per cache: processes that share a cache share the lock; processes compiling
    into different caches (the parallel build of shipped kernels) do not wait for each other."""
    root = getattr(config, "CACHE_DIR", "")
    if root:
        folder = os.path.join(root, f"lazyscan-{__version__}")
        try:
            os.makedirs(folder, exist_ok=True)
            return os.path.join(folder, ".compile.lock")
        except OSError:
            pass
    user = getattr(os, "getuid", lambda: 0)()
    place = hashlib.sha256(f"{root}|{_PACKAGE}".encode()).hexdigest()[:12]
    return os.path.join(tempfile.gettempdir(), f"lazyscan-{user}-{place}.compile.lock")


COMPILE_LOCK = CompileLock()

_original_load = caching.Cache._load_overload
_original_save = caching.Cache.save_overload


def _load_overload(self: Any, sig: Any, target_context: Any) -> Any:
    data = _original_load(self, sig, target_context)
    if data is not None or not getattr(self, "_enabled", False) or _lazyscan_source(self) is None:
        return data
    try:
        data = load_shipped(self, sig, target_context)
    except Exception as e:  # a damaged shipped file: compile instead, and say which
        _warn_damaged(self, e)
        data = None
    if data is not None:
        return data
    # a miss everywhere: compile, one process per machine at a time
    outermost = COMPILE_LOCK.depth == 0
    COMPILE_LOCK.acquire()
    if outermost:
        data = _original_load(self, sig, target_context)  # saved meanwhile by another process
        if data is not None:
            COMPILE_LOCK.release()
            return data
    self._lazyscan_compiling = getattr(self, "_lazyscan_compiling", 0) + 1
    return None


_damaged_warned: set[str] = set()


def _warn_damaged(cache: Any, error: Exception) -> None:
    base = getattr(getattr(cache, "_impl", None), "filename_base", "?")
    if base not in _damaged_warned:
        _damaged_warned.add(base)
        log.warning(
            "lazyscan: the shipped kernel %s in %s cannot be loaded (%s: %s); compiling it instead "
            "(`lazyscan warmup --ship --force` rebuilds the shipped kernels)",
            base, SHIPPED, type(error).__name__, error,
        )


def _save_overload(self: Any, sig: Any, data: Any) -> None:
    try:
        _original_save(self, sig, data)
    finally:
        _release_for(self)


def _release_for(cache: Any) -> None:
    if getattr(cache, "_lazyscan_compiling", 0) > 0:
        cache._lazyscan_compiling -= 1
        COMPILE_LOCK.release()


def _on_compile_failed(dispatcher: Any) -> None:
    """A compile that raised saves nothing: give its level of the lock back."""
    _release_for(getattr(dispatcher, "_cache", None))


class _FailedCompiles(event.Listener):
    def on_start(self, ev: Any) -> None:
        pass

    def on_end(self, ev: Any) -> None:
        # not ev.is_failed: numba 0.68 inverts it (True when the compile succeeded)
        if getattr(ev, "_exc_details", None) is not None and ev.data:
            _on_compile_failed(ev.data.get("dispatcher"))


def _install() -> None:
    if getattr(caching.Cache._load_overload, "_lazyscan", False):
        return
    _load_overload._lazyscan = True  # type: ignore[attr-defined]
    caching.Cache._load_overload = _load_overload  # type: ignore[method-assign]
    caching.Cache.save_overload = _save_overload  # type: ignore[method-assign]
    event.register("numba:compile", _FailedCompiles())


_install()


def portable_build_env() -> dict[str, str]:
    """Environment variables for a process that compiles kernels to ship."""
    return {"NUMBA_CPU_NAME": PORTABLE_CPU[0], "NUMBA_CPU_FEATURES": PORTABLE_CPU[1]}
