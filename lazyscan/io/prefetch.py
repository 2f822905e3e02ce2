"""Read-ahead for object stores: byte ranges fetched in the background, served to later reads.

A scan on an object store asks for the predicate columns of the next row groups while it
decodes the current one (:meth:`lazyscan.io.source.Source.prefetch`); the requests run on a
small thread pool and their bytes wait here until a read asks for a range they cover. A read
of a range no block covers fetches it as usual. A failed prefetch is forgotten: the read that
needs the bytes fetches them again and reports the error where it happens.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from lazyscan.io.pools import SharedPool

#: bytes of fetched blocks a source keeps (oldest dropped first)
DEFAULT_BUDGET = 256 * 1024 * 1024
#: read-ahead requests in flight in the process (one pool for all sources, so a scan over many
#: files does not leave a pool per file behind)
PREFETCH_THREADS = 4

_prefetches = SharedPool(PREFETCH_THREADS, "lazyscan-prefetch")


@dataclass
class _Block:
    start: int
    end: int
    data: Future[bytes]


class BlockCache:
    """Blocks ``[start, end)`` of one source being fetched or fetched, at most ``budget`` bytes."""

    def __init__(self, fetch: Callable[[int, int], bytes], budget: int = DEFAULT_BUDGET) -> None:
        self._fetch = fetch
        self.budget = budget
        self._blocks: list[_Block] = []
        self._bytes = 0
        self._lock = threading.Lock()
        self._closed = False

    def covered(self, offset: int, length: int) -> bool:
        with self._lock:
            return self._find(offset, length) is not None

    def _find(self, offset: int, length: int) -> _Block | None:
        for b in self._blocks:
            if b.start <= offset and offset + length <= b.end:
                return b
        return None

    def prefetch(self, requests: list[tuple[int, int]]) -> None:
        """Start fetching each ``(start, end)`` no block covers yet."""
        pool = _prefetches.get()
        with self._lock:
            if self._closed:
                return
            for start, end in requests:
                if end <= start or self._find(start, end - start) is not None:
                    continue
                block = _Block(start, end, pool.submit(self._fetch, start, end - start))
                self._blocks.append(block)
                self._bytes += end - start
            while self._bytes > self.budget and len(self._blocks) > 1:
                old = self._blocks.pop(0)
                self._bytes -= old.end - old.start

    def get(self, offset: int, length: int) -> memoryview | None:
        """The bytes ``[offset, offset + length)`` if a block covers them (waiting for its
        request), else None."""
        with self._lock:
            block = self._find(offset, length)
        if block is None:
            return None
        try:
            data = block.data.result()
        except Exception:
            with self._lock:
                if block in self._blocks:
                    self._blocks.remove(block)
                    self._bytes -= block.end - block.start
            return None
        if len(data) < offset + length - block.start:
            return None  # the object ended early: the read itself says so
        return memoryview(data)[offset - block.start : offset - block.start + length]

    def close(self) -> None:
        """Drop the blocks; requests not started yet are cancelled."""
        with self._lock:
            self._closed = True
            blocks, self._blocks = self._blocks, []
            self._bytes = 0
        for b in blocks:
            b.data.cancel()
