"""Random-access byte sources and coalesced range reads."""

from __future__ import annotations

import datetime as _dt
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from lazyscan.errors import (
    AccessDeniedError,
    FileChangedError,
    LazyScanError,
    ObjectNotFoundError,
    SourceError,
    TransientSourceError,
)
from lazyscan.io.prefetch import DEFAULT_BUDGET, BlockCache
from lazyscan.io.retry import (
    DEFAULT_RETRY,
    DENIED,
    MISSING,
    NO_RETRY,
    TRANSIENT,
    RetryPolicy,
    classify,
    run_bounded,
)


@dataclass
class IOStats:
    """Counters of one source (shared by the threads that read it).

    ``requests`` counts every attempt the store saw, failed ones too; ``retries`` the attempts
    that followed a transient failure and ``retry_seconds`` the time lost to failed attempts and
    the waits before retrying them; ``cached_reads`` the small reads served from the surplus of
    an earlier request (no request of their own)."""

    bytes_read: int = 0
    requests: int = 0
    seconds: float = 0.0
    retries: int = 0
    retry_seconds: float = 0.0
    cached_reads: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, nbytes: int, seconds: float, requests: int = 1) -> None:
        with self._lock:
            self.bytes_read += nbytes
            self.requests += requests
            self.seconds += seconds

    def add_retry(self, seconds: float) -> None:
        """A failed attempt (a request) followed by a retry, ``seconds`` lost to it and the wait."""
        with self._lock:
            self.requests += 1
            self.retries += 1
            self.retry_seconds += seconds

    def add_cached_read(self) -> None:
        with self._lock:
            self.cached_reads += 1


@dataclass(frozen=True)
class ReadOptions:
    """How byte ranges are fetched.

    ``coalesce_gap``: two ranges closer than this many bytes are fetched as one request, the
    bytes between them too. ``coalesce_max``: a merged request is not grown beyond this size.

    The coalescing policy, the same for every format: a source that is not given options
    coalesces as :attr:`Source.default_read` says, by what a request costs there.

    - Local files (:data:`LOCAL_READ`): gap 0. A request is a system call; a gap's bytes cost
      their copy out of the page cache, more than the call saved. Ranges that touch still
      merge (one ``preadv``).
    - Object stores (:data:`REMOTE_READ`, also what ``ReadOptions()`` holds): gap 1 MiB. A
      request costs a round trip, what some megabytes of transfer cost.

    Both grow a merged request to at most 64 MiB.
    """

    coalesce_gap: int = 1024 * 1024
    coalesce_max: int = 64 * 1024 * 1024


#: the coalescing of local files (see :class:`ReadOptions`)
LOCAL_READ = ReadOptions(coalesce_gap=0)
#: the coalescing of object stores (see :class:`ReadOptions`)
REMOTE_READ = ReadOptions()


def coalesce_ranges(
    ranges: list[tuple[int, int]], gap: int, max_size: int
) -> list[tuple[int, int, list[int]]]:
    """Merge ``(offset, length)`` ranges into requests ``(start, end, member indexes)``.

    Ranges are sorted by offset; a range joins the current request when it starts within ``gap``
    bytes of the request's end and the request stays within ``max_size`` (a single range larger
    than ``max_size`` is still one request). Overlapping ranges are allowed.
    """
    order = sorted(range(len(ranges)), key=[r[0] for r in ranges].__getitem__)  # by offset
    out: list[tuple[int, int, list[int]]] = []
    for i in order:
        off, length = ranges[i]
        end = off + length
        if out:
            s, e, members = out[-1]
            if off <= e + gap and max(e, end) - s <= max_size:
                out[-1] = (s, max(e, end), [*members, i])
                continue
        out.append((off, end, [i]))
    return out


@dataclass(frozen=True)
class FileIdentity:
    """What identifies one version of a file: its size, plus whatever the store tells about it
    (``None`` where it does not). Two identities describe the same version when no field known on
    both sides differs.

    - ``mtime_ns``: modification time (local files: nanoseconds; object stores: their
      ``Last-Modified``, whole seconds).
    - ``etag`` / ``version_id``: an object store's ETag and version id (S3 gives a version id
      only in buckets with versioning on).
    - ``inode`` / ``device`` / ``ctime_ns``: local files only. A file renamed over another gets
      another inode; a rewrite in place that puts the old modification time back still moves
      ``ctime``. Two writes within one tick of the kernel's clock (a few ms) can leave all of them
      equal: nothing short of the bytes tells those apart.
    """

    size: int
    mtime_ns: int | None = None
    etag: str | None = None
    version_id: str | None = None
    inode: int | None = None
    device: int | None = None
    ctime_ns: int | None = None

    def describe_difference(self, other: FileIdentity) -> str | None:
        """None when ``other`` describes the same version, else what differs, e.g.
        ``size 1234 -> 1240`` or ``ETag "ab.." -> "cd.."``."""
        parts = []
        for name in _IDENTITY_LABELS:  # the telling fields first
            before, after = getattr(self, name), getattr(other, name)
            if before is None or after is None or before == after:
                continue
            parts.append(f"{_IDENTITY_LABELS[name]} {_show(name, before)} -> {_show(name, after)}")
        return ", ".join(parts) or None


_IDENTITY_LABELS = {
    "size": "size", "etag": "ETag", "version_id": "version", "inode": "inode", "device": "device",
    "mtime_ns": "modified", "ctime_ns": "changed",
}


def _show(name: str, value: Any) -> str:
    if name in ("mtime_ns", "ctime_ns"):
        at = _dt.datetime.fromtimestamp(value // 1_000_000_000, _dt.timezone.utc)
        return at.strftime("%Y-%m-%dT%H:%M:%S") + f".{value % 1_000_000_000:09d}Z"
    if isinstance(value, str):
        return value if value.startswith('"') else repr(value)
    return str(value)


def local_identity(st: os.stat_result) -> FileIdentity:
    """The identity of a local file from its ``stat``: what a listing and an open both pin."""
    return FileIdentity(
        size=st.st_size, mtime_ns=st.st_mtime_ns, inode=st.st_ino, device=st.st_dev, ctime_ns=st.st_ctime_ns
    )


def _parse_time_ns(value: Any) -> int | None:
    """Nanoseconds since the epoch from a store's modification time: a datetime, seconds as a
    number, or ISO 8601 / HTTP-date text (bytes too); None when it is none of these."""
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode("ascii", "replace")
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        delta = value - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
        return (delta.days * 86400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return round(value * 1e9) if isinstance(value, float) else int(value) * 1_000_000_000
    if isinstance(value, str):
        text = value.strip()
        try:
            return _parse_time_ns(_dt.datetime.fromisoformat(text.replace("Z", "+00:00")))
        except ValueError:
            pass
        from email.utils import parsedate_to_datetime

        try:
            return _parse_time_ns(parsedate_to_datetime(text))
        except (TypeError, ValueError):
            return None
    return None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return str(value) or None


def _store_identity(size: int, info: dict[str, Any]) -> FileIdentity:
    """An identity from an object store's metadata (pyarrow's input file ``metadata()``, an
    fsspec ``info()``), whatever spelling of the keys the store uses."""
    lower = {str(k).lower(): v for k, v in info.items()}

    def first(*keys: str) -> Any:
        for k in keys:
            if lower.get(k) is not None:
                return lower[k]
        return None

    mtime = first("last-modified", "lastmodified", "last_modified", "mtime", "updated")
    version = first("versionid", "version_id", "x-amz-version-id", "generation")
    inode = first("ino")
    return FileIdentity(
        size=size, mtime_ns=_parse_time_ns(mtime), etag=_text(first("etag", "e_tag")), version_id=_text(version),
        inode=inode if isinstance(inode, int) else None,
    )


#: the smallest GET a remote source makes: a smaller read fetches this much (clipped to the
#: object) and keeps the rest for the reads that follow. Besides saving requests where small
#: reads walk forward (page headers, ORC stripe footers), it keeps every response buffer larger
#: than an S3 error body: the AWS SDK that pyarrow uses loses the status of an error whose body
#: does not fit the buffer of a ranged read (a 500 on a 300-byte read arrives as
#: ``INTERNAL_FAILURE ... Failed to flush response stream``) and then neither it nor lazyscan
#: could tell throttling from a denied request.
MIN_REMOTE_READ = 64 * 1024
#: windows of surplus bytes a remote source keeps
_WINDOWS = 8


class _Windows:
    """The last few widened small reads of a source, ``(start, end, bytes to come)``, newest
    last; a read that a window being fetched covers waits for it instead of asking again."""

    def __init__(self) -> None:
        self._items: list[tuple[int, int, Future[bytes]]] = []
        self._lock = threading.Lock()

    def read(
        self, offset: int, length: int, start: int, end: int, fetch: Callable[[int, int], bytes]
    ) -> tuple[bytes, bool]:
        """The bytes ``[offset, offset + length)`` from a window, else fetched with the window
        ``[start, end)`` around them; and whether a window served them."""
        mine: Future[bytes] | None = None
        with self._lock:
            found = next((w for w in reversed(self._items) if w[0] <= offset and offset + length <= w[1]), None)
            if found is None:
                mine = Future()
                found = (start, end, mine)
                self._items.append(found)
                if len(self._items) > _WINDOWS:
                    del self._items[0]
        s, _, fut = found
        if mine is None:
            try:
                data = fut.result()
            except Exception:  # the request that fetches it failed: ask on our own
                return fetch(start, end - start)[offset - start : offset - start + length], False
            return data[offset - s : offset - s + length], True
        try:
            data = fetch(start, end - start)
        except BaseException as exc:
            mine.set_exception(exc)
            with self._lock:
                self._items = [item for item in self._items if item[2] is not mine]
            raise
        mine.set_result(data)
        return data[offset - start : offset - start + length], False


_windows_lock = threading.Lock()


class Source:
    """A random-access, thread-safe byte source."""

    path: str
    size: int
    stats: IOStats
    #: the version of the file this source reads, learnt when it was opened
    identity: FileIdentity
    #: how failed requests are retried; None: not at all, errors pass as :meth:`_read` raises
    #: them (local files)
    retry: RetryPolicy | None = DEFAULT_RETRY
    #: the smallest request made (0: as asked), see :data:`MIN_REMOTE_READ`
    min_request: int = MIN_REMOTE_READ
    #: how reads coalesce ranges when they are given no options (see :class:`ReadOptions`)
    default_read: ReadOptions = REMOTE_READ
    #: ranges fetched ahead (object stores, see :meth:`enable_prefetch`)
    _blocks: BlockCache | None = None
    #: the surplus of widened small reads
    _windows: _Windows | None = None

    def _read(self, offset: int, length: int) -> bytes:
        """One request for ``length`` bytes at ``offset``; raises the client's own errors."""
        raise NotImplementedError

    def read_at(self, offset: int, length: int) -> bytes:
        """Read exactly ``length`` bytes at ``offset`` (fewer only at end of file)."""
        if offset < 0 or length < 0:
            raise SourceError(f"bad read range {offset}+{length} in {self.path!r}")
        length = max(0, min(length, self.size - offset))
        if length == 0:
            return b""
        if self._blocks is not None:
            ahead = self._blocks.get(offset, length)
            if ahead is not None:
                return bytes(ahead)
        if length < self.min_request:
            return self._read_small(offset, length)
        return self._read_counted(offset, length)

    def _read_small(self, offset: int, length: int) -> bytes:
        """A read shorter than :attr:`min_request`: from the surplus of an earlier one, else
        one request of ``min_request`` bytes (clipped to the file) whose surplus is kept."""
        windows = self._windows
        if windows is None:
            with _windows_lock:
                if self._windows is None:
                    self._windows = _Windows()
                windows = self._windows
        start, end = self._widened(offset, offset + length)
        data, cached = windows.read(offset, length, start, end, self._read_counted)
        if cached:
            self.stats.add_cached_read()
        return data

    def _read_counted(self, offset: int, length: int) -> bytes:
        t0 = time.perf_counter()
        if self.retry is None:
            data = self._read(offset, length)
        else:
            # a body cut short is an error of the client (curl's, aiohttp's), retried; a whole
            # response shorter than asked for is an object shorter than planned, returned as
            # it is for the reader's checks (retrying would not make it longer)
            try:
                data = self._request(lambda: self._read(offset, length), f"bytes {offset}+{length}", length)
            except LazyScanError:
                self.stats.add(0, time.perf_counter() - t0)  # the last attempt was a request too
                raise
        self.stats.add(len(data), time.perf_counter() - t0)
        return data

    def _request(self, attempt: Callable[[], Any], what: str, length: int = 0, action: str = "read") -> Any:
        """``attempt()`` under this source's :attr:`retry` (see :func:`call_with_retries`)."""
        return call_with_retries(
            attempt, path=self.path, what=what, policy=self.retry, stats=self.stats, length=length, action=action
        )

    @property
    def remote(self) -> bool:
        """Whether a request costs a round trip (object stores), not a system call."""
        return True

    def current_identity(self) -> FileIdentity:
        """The file's identity now (a new stat or HEAD request); :class:`ObjectNotFoundError`
        when it is gone."""
        return self.identity

    def check_unchanged(self, expected: FileIdentity) -> None:
        """Raise :class:`FileChangedError` naming the file when it is no longer the version
        ``expected`` describes (asks the store: one stat or HEAD request)."""
        difference = expected.describe_difference(self.current_identity())
        if difference is not None:
            raise FileChangedError(f"changed since planning: {difference}", file=self.path)

    def enable_prefetch(self, budget: int = DEFAULT_BUDGET) -> None:
        """Keep ranges fetched by :meth:`prefetch` (at most ``budget`` bytes) for later reads."""
        if self._blocks is None:
            self._blocks = BlockCache(self._read_counted, budget)

    def prefetch(self, ranges: list[tuple[int, int]], options: ReadOptions | None = None) -> None:
        """Start fetching ``(offset, length)`` ranges in the background, coalesced as a read
        would; no-op unless :meth:`enable_prefetch` was called."""
        if self._blocks is None or not ranges:
            return
        opts = options or self.default_read
        clipped = [(off, min(length, self.size - off)) for off, length in ranges if 0 <= off < self.size and length > 0]
        todo = [(off, length) for off, length in clipped if not self._blocks.covered(off, length)]
        merged = coalesce_ranges(todo, opts.coalesce_gap, opts.coalesce_max)
        self._blocks.prefetch([self._widened(s, e) for s, e, _ in merged])

    def read_fresh(self, offset: int, length: int) -> tuple[memoryview, int]:
        """``length`` bytes at ``offset`` in one request of their own, never from bytes fetched
        ahead or kept from an earlier read (bytes a transfer may have damaged are asked for
        again); the request is at least :attr:`min_request` bytes. Returns the bytes and the
        bytes the request fetched."""
        start, end = self._widened(offset, offset + length)
        data = self._read_counted(start, end - start)
        return memoryview(data)[offset - start : offset - start + length], len(data)

    def _widened(self, start: int, end: int) -> tuple[int, int]:
        """``[start, end)`` grown to :attr:`min_request` bytes (clipped to the file), as a read
        of it would be."""
        if end - start >= self.min_request:
            return start, end
        start = max(0, min(start, self.size - self.min_request))
        return start, min(self.size, start + self.min_request)

    def read_ranges(
        self, ranges: list[tuple[int, int]], options: ReadOptions | None = None
    ) -> list[memoryview]:
        """Read several ranges with coalesced requests; results in the order of ``ranges``."""
        return self.read_ranges_counted(ranges, options)[0]

    def read_ranges_counted(
        self, ranges: list[tuple[int, int]], options: ReadOptions | None = None
    ) -> tuple[list[memoryview], int, int]:
        """:meth:`read_ranges`, plus the bytes and requests this call fetched (the source's
        :attr:`stats` also count other threads' reads)."""
        opts = options or self.default_read
        out: list[memoryview] = [memoryview(b"")] * len(ranges)
        todo = list(range(len(ranges)))
        if self._blocks is not None:
            todo = []
            for i, (off, length) in enumerate(ranges):
                ahead = self._blocks.get(off, length) if length > 0 else None
                if ahead is None:
                    todo.append(i)
                else:
                    out[i] = ahead
            if not todo:
                return out, 0, 0
        if len(todo) == 1:
            off, length = ranges[todo[0]]
            data = self.read_at(off, length)
            out[todo[0]] = memoryview(data)
            return out, len(data), int(length > 0)
        wanted = [ranges[i] for i in todo]
        nbytes = 0
        requests = 0
        for start, end, members in coalesce_ranges(wanted, opts.coalesce_gap, opts.coalesce_max):
            data = self.read_at(start, end - start)
            nbytes += len(data)
            requests += end > start  # empty ranges make no request
            view = memoryview(data)
            for k in members:
                off, length = wanted[k]
                out[todo[k]] = view[off - start : off - start + length]
        return out, nbytes, requests

    def read_ranges_into(
        self, ranges: list[tuple[int, int]], options: ReadOptions | None = None
    ) -> tuple[np.ndarray, list[int], int, int]:
        """Read ``ranges`` back to back into one new ``uint8`` array: (the array, where each range
        starts in it, bytes fetched, requests). :class:`ShortReadError` when the source ends
        inside a range."""
        views, nbytes, requests = self.read_ranges_counted(ranges, options)
        starts, total = _layout(ranges)
        out = _empty_bytes(total)
        for i, ((off, length), view, at) in enumerate(zip(ranges, views, starts)):
            if len(view) != length:
                raise ShortReadError(f"{self.path!r} ends inside the byte range {off}+{length}", index=i)
            out[at : at + length] = np.frombuffer(view, dtype=np.uint8)
        return out, starts, nbytes, requests

    def close(self) -> None:
        if self._blocks is not None:
            self._blocks.close()
            self._blocks = None
        self._windows = None

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ShortReadError(SourceError):
    """The source ended inside a requested byte range; ``index``: which of the ranges asked
    for, where that is known."""

    def __init__(self, message: str, index: int | None = None) -> None:
        super().__init__(message)
        self.index = index


def _layout_in_order(ranges: list[tuple[int, int]]) -> tuple[list[int], int, bool]:
    """:func:`_layout`, and whether the ranges are in file order without overlaps."""
    starts = []
    total = 0
    last = 0
    in_order = True
    for off, length in ranges:
        starts.append(total)
        total += length
        if off < last:
            in_order = False
        last = off + length
    return starts, total, in_order


#: a request of :meth:`LocalSource.read_ranges_into`: file bytes [start, end) and the buffers
#: they land in (the ranges' places in the output, gaps in a discarded buffer)
_Request = tuple[int, int, list[memoryview]]


def _requests_in_order(
    ranges: list[tuple[int, int]], starts: list[int], view: memoryview, opts: ReadOptions
) -> list[_Request]:
    """The requests for ranges in file order that do not overlap (what the readers' plans
    hold), formed in one pass without sorting."""
    gap, most = opts.coalesce_gap, opts.coalesce_max
    out: list[_Request] = []
    n = len(ranges)
    i = 0
    while i < n:
        start, length = ranges[i]
        end = start + length
        iov = [view[starts[i] : starts[i] + length]]
        i += 1
        while i < n:
            off, length = ranges[i]
            if off > end + gap or off + length - start > most:
                break
            if off > end:
                iov.append(_gap_buffer(off - end)[: off - end])
            iov.append(view[starts[i] : starts[i] + length])
            end = off + length
            i += 1
        out.append((start, end, iov))
    return out


def _requests_sorted(
    ranges: list[tuple[int, int]], starts: list[int], view: memoryview, opts: ReadOptions
) -> list[_Request] | None:
    """The requests for ranges in any order (:func:`coalesce_ranges`); None when two overlap."""
    out: list[_Request] = []
    for start, end, members in coalesce_ranges(ranges, opts.coalesce_gap, opts.coalesce_max):
        iov: list[memoryview] = []
        at = start
        for i in members:  # in file order
            off, length = ranges[i]
            if off < at:
                return None
            if off > at:
                iov.append(_gap_buffer(off - at)[: off - at])
            iov.append(view[starts[i] : starts[i] + length])
            at = off + length
        out.append((start, end, iov))
    return out


def _layout(ranges: list[tuple[int, int]]) -> tuple[list[int], int]:
    starts = []
    total = 0
    for _, length in ranges:
        starts.append(total)
        total += length
    return starts, total


def _empty_bytes(n: int) -> np.ndarray:
    # large buffers from Arrow's pool: fresh numpy memory pays a page fault per 4 KiB written
    return np.empty(n, np.uint8) if n < 1 << 16 else np.frombuffer(pa.allocate_buffer(n), np.uint8)


#: buffers per ``preadv`` call, below every platform's IOV_MAX
_IOV_BATCH = 512

_gaps = threading.local()


#: ``preadv`` flag: fail rather than wait for the disk (Linux only)
_NOWAIT = getattr(os, "RWF_NOWAIT", 0) if hasattr(os, "posix_fadvise") else 0


def _gap_buffer(n: int) -> memoryview:
    """A per-thread buffer of at least ``n`` bytes for the unwanted bytes of a coalesced
    request (a fresh one per gap costs its zeroing)."""
    buf: memoryview | None = getattr(_gaps, "buf", None)
    if buf is None or len(buf) < n:
        buf = _gaps.buf = memoryview(bytearray(max(n, 64 * 1024)))
    return buf


class LocalSource(Source):
    """A local file read with ``os.pread`` (no shared file position, so threads can share it)."""

    retry = None  # errors of a local file are not passing
    min_request = 0  # a read is a system call, not a round trip
    default_read = LOCAL_READ

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            self._fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            raise ObjectNotFoundError(f"file not found: {path!r}") from None
        except IsADirectoryError:
            raise SourceError(f"is a directory, not a file: {path!r}") from None
        except OSError as e:
            raise SourceError(f"cannot open {path!r}: {e.strerror}") from None
        self.identity = local_identity(os.fstat(self._fd))
        self.size = self.identity.size
        self.stats = IOStats()

    def current_identity(self) -> FileIdentity:
        # by path, not by the open descriptor: a file renamed over this one leaves the
        # descriptor on the old inode
        try:
            return local_identity(os.stat(self.path))
        except FileNotFoundError:
            raise ObjectNotFoundError(f"file not found: {self.path!r}") from None
        except OSError as e:
            raise SourceError(f"cannot stat {self.path!r}: {e.strerror}") from None

    def _read(self, offset: int, length: int) -> bytes:
        first = os.pread(self._fd, length, offset)
        if len(first) == length or not first:
            return first
        chunks = [first]
        got = len(first)
        while got < length:
            chunk = os.pread(self._fd, length - got, offset + got)
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def read_ranges_into(
        self, ranges: list[tuple[int, int]], options: ReadOptions | None = None
    ) -> tuple[np.ndarray, list[int], int, int]:
        """Like :meth:`Source.read_ranges_into`, with ``preadv`` straight into the array: no
        intermediate bytes objects."""
        opts = options or self.default_read
        if not hasattr(os, "preadv"):  # pragma: no cover - not on Linux or macOS
            return super().read_ranges_into(ranges, opts)
        if opts.coalesce_gap == 0:
            return self._read_adjacent_into(ranges, opts.coalesce_max)
        starts, total, in_order = _layout_in_order(ranges)
        out = _empty_bytes(total)
        view = memoryview(out)  # type: ignore[arg-type]
        planned = (_requests_in_order if in_order else _requests_sorted)(ranges, starts, view, opts)
        if planned is None:  # overlapping ranges: read them one by one
            return super().read_ranges_into(ranges, opts)
        nbytes = 0
        t0 = time.perf_counter()
        for start, end, iov in planned:
            nbytes += self._preadv(iov, start, end)
        self.stats.add(nbytes, time.perf_counter() - t0, len(planned))
        return out, starts, nbytes, len(planned)

    def _read_adjacent_into(self, ranges: list[tuple[int, int]], most: int) -> tuple[np.ndarray, list[int], int, int]:
        """:meth:`read_ranges_into` reading no byte between ranges (what local files want: a
        gap costs its copy out of the page cache, a call less than that). Ranges adjacent in the
        file are back to back in the output too: one ``preadv`` reads each run of them."""
        at, total = _layout(ranges)
        out = _empty_bytes(total)
        view = memoryview(out)  # type: ignore[arg-type]
        fd = self._fd
        n = len(ranges)
        requests = 0
        watch = bool(_NOWAIT)
        t0 = time.perf_counter()
        i = 0
        while i < n:
            start, length = ranges[i]
            end = start + length
            pos = at[i]
            i += 1
            while i < n and ranges[i][0] == end and end + ranges[i][1] - start <= most:
                end += ranges[i][1]
                i += 1
            if end > start:
                if watch and i < n:
                    if self._first_missed(view[pos : pos + end - start], start, ranges, i):
                        watch = False
                    requests += 1
                    continue
                if os.preadv(fd, [view[pos : pos + end - start]], start) != end - start:
                    raise ShortReadError(f"{self.path!r} ends inside the byte range {start}+{end - start}")
                requests += 1
        self.stats.add(total, time.perf_counter() - t0, requests)
        return out, at, total, requests

    def _first_missed(self, buf: memoryview, start: int, ranges: list[tuple[int, int]], rest: int) -> bool:
        """Read ``buf`` from ``start``; when the page cache does not hold all of it, first ask the
        kernel to start reading it and ``ranges[rest:]`` at once (their requests then overlap
        instead of waiting one after the other), and return True."""
        fd = self._fd
        try:
            got = os.preadv(fd, [buf], start, _NOWAIT)
        except BlockingIOError:
            got = 0
        except OSError:  # the file system does not take the flag
            got = 0
            if os.preadv(fd, [buf], start) != len(buf):
                raise ShortReadError(f"{self.path!r} ends inside the byte range {start}+{len(buf)}") from None
            return True
        if got == len(buf):
            return False
        advise = os.posix_fadvise
        advise(fd, start + got, len(buf) - got, os.POSIX_FADV_WILLNEED)
        for off, length in ranges[rest:]:
            if length > 0:
                advise(fd, off, length, os.POSIX_FADV_WILLNEED)
        if got + os.preadv(fd, [buf[got:]], start + got) != len(buf):
            raise ShortReadError(f"{self.path!r} ends inside the byte range {start}+{len(buf)}")
        return True

    def _preadv(self, iov: list[memoryview], start: int, end: int) -> int:
        """Read the file's bytes ``[start, end)`` into the buffers ``iov``, in as many
        ``preadv`` calls as the platform's limit on buffers asks; returns ``end - start``."""
        got = 0
        for b in range(0, len(iov), _IOV_BATCH):
            batch = iov if len(iov) <= _IOV_BATCH else iov[b : b + _IOV_BATCH]
            want = end - start if batch is iov else sum(len(v) for v in batch)
            if os.preadv(self._fd, batch, start + got) != want:
                raise ShortReadError(f"{self.path!r} ends inside the byte range {start}+{end - start}")
            got += want
        return got

    # bound when the class is made: __del__ may run at interpreter exit, after module globals
    # (``os`` among them) have been cleared
    _close_fd = staticmethod(os.close)

    def close(self) -> None:
        if self._fd >= 0:
            self._close_fd(self._fd)
            self._fd = -1

    def __del__(self) -> None:
        try:  # noqa: SIM105 - at interpreter exit the contextlib global may already be None
            self.close()
        except Exception:
            pass

    @property
    def remote(self) -> bool:
        return False

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"])  # type: ignore[misc]


class ArrowSource(Source):
    """A file on a pyarrow filesystem (S3, GCS, HDFS, ...)."""

    def __init__(self, path: str, filesystem: Any, retry: RetryPolicy | None = DEFAULT_RETRY) -> None:
        self.path = path
        self._fs = filesystem
        self.retry = retry
        self.stats = IOStats()
        self._file, self.identity = self._request(self._open, "opening it", action="open")
        self.size = self.identity.size

    @property
    def filesystem(self) -> Any:
        """The filesystem the file is read through (a reader that opens the file itself uses it)."""
        return self._fs

    def _open(self) -> tuple[Any, FileIdentity]:
        """The input file and its identity. On S3 the open is one HEAD request, whose ETag and
        Last-Modified the file's ``metadata()`` holds; a filesystem whose files carry neither is
        asked for the modification time."""
        file = self._fs.open_input_file(self.path)
        size = file.size()
        identity = _store_identity(size, file.metadata())
        if identity.etag is None and identity.mtime_ns is None:
            identity = FileIdentity(size=size, mtime_ns=self._fs.get_file_info(self.path).mtime_ns)
        return file, identity

    def current_identity(self) -> FileIdentity:
        file, identity = self._request(self._open, "asking for its identity")
        file.close()
        return identity

    def _read(self, offset: int, length: int) -> bytes:
        data = self._file.read_at(length, offset)
        return data if isinstance(data, bytes) else data.to_pybytes()

    def close(self) -> None:
        super().close()
        self._file.close()


class FsspecSource(Source):
    """A file on an fsspec filesystem; ranges are fetched with ``cat_file``."""

    def __init__(self, path: str, filesystem: Any, retry: RetryPolicy | None = DEFAULT_RETRY) -> None:
        self.path = path
        self._fs = filesystem
        self.retry = retry
        self.stats = IOStats()
        self.identity = self._request(lambda: self._info(refresh=False), "opening it", action="open")
        self.size = self.identity.size

    @property
    def filesystem(self) -> Any:
        """The filesystem the file is read through (a reader that opens the file itself uses it)."""
        return self._fs

    def _info(self, refresh: bool) -> FileIdentity:
        """The identity from ``fs.info`` (s3fs: one HEAD, with size, ETag, Last-Modified and
        VersionId); ``refresh`` bypasses the filesystem's cache of listings where it has one."""
        path = self.path
        if refresh:
            try:
                info = self._fs.info(path, refresh=True)
            except TypeError:
                info = self._fs.info(path)
        else:
            info = self._fs.info(path)
        if info.get("type") == "directory":
            raise _NotAFile(f"is a directory, not a file: {path!r}")
        size = info.get("size")
        if size is None:
            raise _NotAFile(f"its filesystem gives no size for {path!r}")
        return _store_identity(int(size), info)

    def current_identity(self) -> FileIdentity:
        return self._request(lambda: self._info(refresh=True), "asking for its identity")

    def _read(self, offset: int, length: int) -> bytes:
        return bytes(self._fs.cat_file(self.path, start=offset, end=offset + length))


class _NotAFile(Exception):
    """A path that names no file (reported as it is, not retried)."""


def call_with_retries(
    attempt: Callable[[], Any],
    *,
    path: str,
    what: str,
    policy: RetryPolicy | None = DEFAULT_RETRY,
    stats: IOStats | None = None,
    length: int = 0,
    action: str = "read",
) -> Any:
    """``attempt()`` (one request to a store about ``path``), retried under ``policy`` while it
    fails with transient errors, each attempt bounded in time. A failure is raised as the
    lazyscan error it is, naming ``path`` and ``what`` (e.g. ``bytes 10+20``):
    :class:`AccessDeniedError`, :class:`ObjectNotFoundError`, :class:`TransientSourceError`
    once the budget is spent, else :class:`SourceError` (``cannot {action} ...``). ``stats``
    counts the retries; ``length``: the bytes asked for (a longer stall is allowed to them)."""
    policy = policy or NO_RETRY
    start = time.perf_counter()
    tries = 0
    while True:
        tries += 1
        t = time.perf_counter()
        try:
            if policy.max_seconds > 0 and policy.stall_seconds > 0:
                left = start + policy.max_seconds - t
                return run_bounded(attempt, min(policy.attempt_limit(length), max(left, 1.0)))
            return attempt()
        except LazyScanError:
            raise  # already says what happened
        except Exception as e:
            failure = classify(e)
            if failure.kind == DENIED:
                raise AccessDeniedError(f"access denied to {path!r} ({what}): {failure.detail}") from None
            if failure.kind == MISSING:
                raise ObjectNotFoundError(f"object not found: {path!r} ({what}): {failure.detail}") from None
            if failure.kind != TRANSIENT:
                raise SourceError(f"cannot {action} {path!r} ({what}): {failure.detail}") from None
            now = time.perf_counter()
            wait = policy.wait(tries)
            budget = policy.connect_seconds if failure.unreachable else policy.max_seconds
            if now + wait - start > budget:
                raise TransientSourceError(
                    f"{path!r} ({what}): {tries} attempt{'s' if tries > 1 else ''} in "
                    f"{now - start:.1f} s failed, the last with {failure.detail}"
                ) from None
            if stats is not None:
                stats.add_retry(now - t + wait)
            time.sleep(wait)


def _is_pyarrow_fs(fs: Any) -> bool:
    try:
        import pyarrow.fs as pafs
    except ImportError:  # pragma: no cover
        return False
    return isinstance(fs, pafs.FileSystem)


#: URI schemes Hadoop gives S3 that name the same objects as ``s3://``
_S3_ALIASES = ("s3a://", "s3n://")


def s3_uri(uri: str) -> str:
    """``uri`` with Hadoop's ``s3a://`` or ``s3n://`` read as ``s3://`` (other URIs unchanged)."""
    if uri.startswith(_S3_ALIASES):
        return "s3://" + uri.split("://", 1)[1]
    return uri


#: timeouts of the S3 filesystems made from URIs, in seconds: establishing a connection, and a
#: response that sends no byte for this long (on Linux too: the AWS SDK gives it to curl as its
#: low-speed time) is abandoned and retried
S3_CONNECT_TIMEOUT = 5.0
S3_REQUEST_TIMEOUT = 10.0


def filesystem_from_uri(uri: str) -> tuple[Any, str]:
    """pyarrow's filesystem for ``uri`` and the path on it (``s3a://`` and ``s3n://`` read as
    ``s3://``); a :class:`SourceError` naming the URI when pyarrow cannot make one.

    An S3 filesystem gets :data:`S3_CONNECT_TIMEOUT` and :data:`S3_REQUEST_TIMEOUT`, and no
    retries of its own: the sources retry (see :class:`RetryPolicy`), so that every attempt and
    wait shows in the scan's profile."""
    import pyarrow.fs as pafs

    uri = s3_uri(uri)
    try:
        fs, path = pafs.FileSystem.from_uri(uri)
        if isinstance(fs, pafs.S3FileSystem):
            fs = s3_filesystem_for_lazyscan(fs)
    except Exception as e:
        raise SourceError(f"cannot open {uri!r}: {e}") from None
    return fs, path


def s3_filesystem_for_lazyscan(fs: Any) -> Any:
    """``fs`` (a pyarrow ``S3FileSystem``) made again with lazyscan's timeouts where it has
    none and with a single attempt per request (the sources retry)."""
    import pyarrow.fs as pafs

    _, (options,) = fs.__reduce__()
    if options.get("connect_timeout", -1) <= 0:
        options["connect_timeout"] = S3_CONNECT_TIMEOUT
    if options.get("request_timeout", -1) <= 0:
        options["request_timeout"] = S3_REQUEST_TIMEOUT
    options["retry_strategy"] = pafs.AwsStandardS3RetryStrategy(max_attempts=1)
    return pafs.S3FileSystem(**options)


def open_source(path: Any, filesystem: Any = None, *, retry: RetryPolicy | None = None) -> Source:
    """Open ``path`` (str or path-like; ``file://`` URLs accepted) on ``filesystem``.

    ``retry``: how a remote source retries transient failures (None: :data:`DEFAULT_RETRY`;
    local files are not retried). An open :class:`Source` is returned as it is."""
    if isinstance(path, Source):
        return path
    policy = retry or DEFAULT_RETRY
    p = os.fspath(path)
    if filesystem is None:
        if p.startswith("file://"):
            p = p[len("file://") :]
        if "://" in p:
            fs, inner = filesystem_from_uri(p)
            return ArrowSource(inner, fs, policy)
        return LocalSource(p)
    if _is_pyarrow_fs(filesystem):
        return ArrowSource(p, filesystem, policy)
    if hasattr(filesystem, "cat_file"):
        return FsspecSource(p, filesystem, policy)
    raise SourceError(f"unsupported filesystem object {type(filesystem).__name__}")


def tail_read_length(source: Source, most: int) -> int:
    """How many bytes to read at the end of ``source`` for its footer: ``most`` (clipped to the
    file), but on a source that widens small reads to its smallest request and keeps the surplus
    (object stores, :attr:`Source.min_request`), one byte fewer than that request: the source
    then keeps the whole window it fetched, and later small reads in it (page indexes, the last
    chunk's pages, ORC's last stripe footer) are served without a request of their own."""
    if 0 < source.min_request <= most and source.size > source.min_request:
        return source.min_request - 1
    return min(source.size, most)
