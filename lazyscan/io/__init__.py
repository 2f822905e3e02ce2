"""Ranged reads over local files and pyarrow / fsspec filesystems.

Modules: :mod:`.source` (sources, opening paths, coalescing and its one policy, I/O counters,
file identity), :mod:`.fetch` (the byte ranges of a read, counted into the reader's counters),
:mod:`.retry` (which failures are transient, backoff, the time budget of a read),
:mod:`.prefetch` (read-ahead), :mod:`.pools` (the process's thread pools).

- :class:`Source`: a random-access byte source (``size``, ``read_at``), thread-safe.
- :func:`open_source`: opens a path (local, ``file://``) or a path on a pyarrow or fsspec
  filesystem.
- :func:`coalesce_ranges` / :meth:`Source.read_ranges`: merges nearby byte ranges into few large
  requests (gap and size limits), so remote stores see few round trips.
- :class:`ReadOptions` / :attr:`Source.default_read`: the coalescing policy, the same for every
  format and chosen by the source: no gap bridged on local files, 1 MiB on object stores.
- :func:`lazyscan.io.fetch.fetch` / :func:`~lazyscan.io.fetch.fetch_into`: what Parquet and ORC
  readers fetch through (time, bytes and requests counted; a short read names its range).
- :class:`IOStats`: bytes and requests issued, time spent waiting.
- :class:`RetryPolicy` / :func:`call_with_retries`: transient failures of object stores retried
  with backoff within a time budget; denied and missing objects reported at once.
- :class:`FileIdentity`: the version of a file a source reads (``Source.identity``);
  ``Source.check_unchanged`` tells whether the file is still that version.
- :mod:`lazyscan.io.prefetch`: ranges fetched ahead in the background and kept for later reads.
- :class:`lazyscan.io.pools.SharedPool`: the process's thread pools, started anew after a fork.
"""

from lazyscan.io.retry import DEFAULT_RETRY, RetryPolicy
from lazyscan.io.source import (
    LOCAL_READ,
    REMOTE_READ,
    FileIdentity,
    IOStats,
    LocalSource,
    ReadOptions,
    Source,
    call_with_retries,
    coalesce_ranges,
    open_source,
)

__all__ = [
    "DEFAULT_RETRY", "LOCAL_READ", "REMOTE_READ", "FileIdentity", "IOStats", "LocalSource", "ReadOptions", "RetryPolicy", "Source",
    "call_with_retries", "coalesce_ranges", "open_source",
]
