"""The fault-injecting proxy of the tests (see :class:`benchmarks.s3_server.FaultProxy`): rules
that pick requests, the faults they inject, and a context manager for a proxy in front of a
server."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from benchmarks.s3_server import (
    S3_ERRORS,
    Fault,
    FaultProxy,
    ProxyRequest,
    RequestRecord,
    Rule,
    S3Server,
    corrupt,
    reset,
    stall,
    status,
    truncate,
)


@contextlib.contextmanager
def fault_proxy(server: S3Server, *rules: Rule) -> Iterator[FaultProxy]:
    """A :class:`FaultProxy` in front of ``server`` with ``rules``, closed on leaving."""
    proxy = FaultProxy(server.port, list(rules))
    try:
        yield proxy
    finally:
        proxy.close()


__all__ = [
    "S3_ERRORS", "Fault", "FaultProxy", "ProxyRequest", "RequestRecord", "Rule", "corrupt", "fault_proxy", "reset",
    "stall", "status", "truncate",
]
