"""Thread pools shared by the whole process, started on first use and started anew in a forked
child (the parent's threads do not exist there)."""

from __future__ import annotations

import os
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor


class SharedPool:
    """A :class:`ThreadPoolExecutor` of ``threads`` threads named ``name-N``, made when first
    asked for."""

    def __init__(self, threads: int, name: str) -> None:
        self.threads = threads
        self.name = name
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        _pools.add(self)

    def get(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix=self.name)
            return self._pool

    def _forget(self) -> None:
        self._pool = None
        self._lock = threading.Lock()


_pools: weakref.WeakSet[SharedPool] = weakref.WeakSet()


def _forget_all() -> None:
    for pool in list(_pools):
        pool._forget()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_all)
