"""Retries of object-store requests: which failures are transient, how long to wait, and a
bound on the time one read may take.

Object stores answer some requests with a failure that a later attempt gets through: throttling
(S3's ``503 SlowDown``), server errors (500, 502, 504), reset connections, bodies cut short,
requests that stall. Others are final: access denied (403) and a missing object (404) are reported
at once as :class:`~lazyscan.errors.AccessDeniedError` and
:class:`~lazyscan.errors.ObjectNotFoundError`. :func:`classify` tells them apart from the
exceptions pyarrow's S3 client (``OSError`` texts naming AWS error codes), s3fs / botocore /
aiohttp and the operating system raise; :class:`RetryPolicy` says how long to keep trying.
"""

from __future__ import annotations

import errno
import random
import re
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from lazyscan.io.pools import SharedPool

#: how a failure is treated
TRANSIENT = "transient"
DENIED = "denied"
MISSING = "missing"
FINAL = "final"


@dataclass(frozen=True)
class RetryPolicy:
    """How a remote source retries a failed request.

    - ``max_seconds``: the time one read (or open) may take, its attempts and the waits between
      them included; a transient failure that would need longer is a
      :class:`~lazyscan.errors.TransientSourceError`. 0 makes a single attempt.
    - ``first_wait`` / ``max_wait``: the wait before the second attempt, doubled for each
      further one up to ``max_wait``; each wait is drawn between half and all of that (jitter, so
      the readers of one throttled prefix do not come back in step).
    - ``connect_seconds``: the shorter budget of a store that cannot be reached at all (connection
      refused, name not resolved, connect timeouts: more often a wrong endpoint than a passing
      failure).
    - ``stall_seconds``: an attempt that has not answered after this long (plus a second per
      MiB asked for) is abandoned and retried: a request that never answers does not hold the
      scan. The clients' own timeouts usually end such a request first (pyarrow's S3 client after
      about ``request_timeout`` seconds without a byte; botocore's ``read_timeout``).
    """

    max_seconds: float = 60.0
    first_wait: float = 0.05
    max_wait: float = 5.0
    connect_seconds: float = 10.0
    stall_seconds: float = 30.0

    def wait(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1 for the first)."""
        ceiling = min(self.max_wait, self.first_wait * 2.0 ** min(attempt - 1, 30))
        return ceiling * (0.5 + 0.5 * random.random())

    def attempt_limit(self, length: int) -> float:
        """Seconds an attempt fetching ``length`` bytes may take before it counts as stalled."""
        return self.stall_seconds + length / (1 << 20)


DEFAULT_RETRY = RetryPolicy()
#: one attempt, not bounded in time, its failure still told apart (denied, missing, transient)
NO_RETRY = RetryPolicy(max_seconds=0.0)


@dataclass(frozen=True)
class Failure:
    """How to treat an exception: ``kind`` (:data:`TRANSIENT`, :data:`DENIED`, :data:`MISSING`,
    :data:`FINAL`) and ``detail``, the status or error the store gave, for messages."""

    kind: str
    detail: str
    #: the store could not be reached (no connection made)
    unreachable: bool = False


class StalledError(Exception):
    """An attempt that did not answer within the policy's limit (abandoned)."""


#: AWS error names (pyarrow's ``AWS Error NAME during ...`` texts, botocore's codes in any
#: spelling) that mean a later attempt can succeed
_TRANSIENT_CODES = {
    "SLOWDOWN", "SLOW_DOWN", "THROTTLING", "THROTTLINGEXCEPTION", "THROTTLING_EXCEPTION", "THROTTLED",
    "REQUESTLIMITEXCEEDED", "REQUEST_LIMIT_EXCEEDED", "TOOMANYREQUESTSEXCEPTION", "PROVISIONEDTHROUGHPUTEXCEEDED",
    "SERVICEUNAVAILABLE", "SERVICE_UNAVAILABLE", "INTERNALERROR", "INTERNAL_FAILURE", "INTERNALFAILURE",
    "NETWORK_CONNECTION", "NETWORKCONNECTION", "REQUESTTIMEOUT", "REQUEST_TIMEOUT", "REQUESTTIMEOUTEXCEPTION",
    "BANDWIDTHLIMITEXCEEDED", "EC2THROTTLEDEXCEPTION", "PRIORREQUESTNOTCOMPLETE", "IDPCOMMUNICATIONERROR",
}
_DENIED_CODES = {
    "ACCESSDENIED", "ACCESS_DENIED", "ALLACCESSDISABLED", "INVALIDACCESSKEYID", "INVALID_ACCESS_KEY_ID",
    "SIGNATUREDOESNOTMATCH", "SIGNATURE_DOES_NOT_MATCH", "EXPIREDTOKEN", "EXPIRED_TOKEN", "INVALIDTOKEN",
    "MISSING_AUTHENTICATION_TOKEN", "UNRECOGNIZEDCLIENTEXCEPTION", "UNRECOGNIZED_CLIENT", "INVALID_CLIENT_TOKEN_ID",
    "ACCOUNTPROBLEM", "FORBIDDEN",
}
_MISSING_CODES = {
    "NOSUCHKEY", "NO_SUCH_KEY", "NOSUCHBUCKET", "NO_SUCH_BUCKET", "RESOURCE_NOT_FOUND", "NOTFOUND", "NOT_FOUND",
    "NOSUCHVERSION", "NO_SUCH_UPLOAD",
}
_TRANSIENT_STATUS = {408, 429, 500, 502, 503, 504, 509}
#: class names (anywhere in an exception's type hierarchy) of connection failures, timeouts and
#: cut bodies in aiohttp, botocore, urllib3, http.client
_TRANSIENT_TYPES = {
    "ClientConnectionError", "ClientPayloadError", "ServerDisconnectedError", "ServerTimeoutError",
    "ClientOSError", "ContentLengthError", "TransferEncodingError", "ConnectionTimeoutError", "SocketTimeoutError",
    "EndpointConnectionError", "ConnectionClosedError", "ReadTimeoutError", "ConnectTimeoutError",
    "ResponseStreamingError", "IncompleteReadError", "ProtocolError", "IncompleteRead", "RemoteDisconnected",
    "HTTPClientError", "NewConnectionError", "ProxyConnectionError", "StalledError",
}
_TRANSIENT_ERRNOS = {
    errno.ECONNRESET, errno.ECONNREFUSED, errno.ECONNABORTED, errno.ETIMEDOUT, errno.EPIPE, errno.EHOSTUNREACH,
    errno.ENETUNREACH, errno.ENETRESET, errno.EAGAIN,
}
_AWS_ERROR = re.compile(r"AWS Error (?:\[code \d+\] )?([A-Z_]+)")
_HTTP_STATUS = re.compile(r"(?:HTTP (?:status|response code)|status code)[:= ]*(\d{3})", re.IGNORECASE)


def classify(exc: BaseException) -> Failure:
    """How to treat ``exc`` raised by a request to a store (or a file system)."""
    failure = _classify(exc)
    if failure.kind == TRANSIENT and _unreachable(exc):
        return Failure(TRANSIENT, failure.detail, unreachable=True)
    return failure


_UNREACHABLE_TYPES = {"EndpointConnectionError", "ConnectTimeoutError", "ClientConnectorError", "NewConnectionError"}
_UNREACHABLE_TEXT = re.compile(r"curlCode: (?:5|6|7)\b|Couldn't connect|Could not resolve|Connection refused", re.IGNORECASE)


def _unreachable(exc: BaseException) -> bool:
    while exc is not None:
        if isinstance(exc, ConnectionRefusedError) or {t.__name__ for t in type(exc).__mro__} & _UNREACHABLE_TYPES:
            return True
        if _UNREACHABLE_TEXT.search(str(exc)):
            return True
        exc = exc.__cause__  # type: ignore[assignment]
    return False


def _classify(exc: BaseException) -> Failure:
    code, status = _client_error(exc)
    detail = _detail(exc, code, status)
    for kind, codes in ((DENIED, _DENIED_CODES), (MISSING, _MISSING_CODES), (TRANSIENT, _TRANSIENT_CODES)):
        if code is not None and code.upper() in codes:
            return Failure(kind, detail)
    if status is not None:
        if status in (401, 403):
            return Failure(DENIED, detail)
        if status == 404:
            return Failure(MISSING, detail)
        if status in _TRANSIENT_STATUS:
            return Failure(TRANSIENT, detail)
    if isinstance(exc, PermissionError):
        return Failure(DENIED, detail)
    if isinstance(exc, FileNotFoundError):
        return Failure(MISSING, detail)
    names = {t.__name__ for t in type(exc).__mro__}
    if names & _TRANSIENT_TYPES or isinstance(exc, (ConnectionError, TimeoutError)):
        return Failure(TRANSIENT, detail)
    if isinstance(exc, OSError) and exc.errno in _TRANSIENT_ERRNOS:
        return Failure(TRANSIENT, detail)
    cause = exc.__cause__
    if cause is not None and cause is not exc:
        inner = classify(cause)
        if inner.kind != FINAL:
            return Failure(inner.kind, detail)
    return Failure(FINAL, detail)


def _client_error(exc: BaseException) -> tuple[str | None, int | None]:
    """The AWS error code and HTTP status an exception carries: botocore's ``ClientError``
    (``response``), s3fs's translations (the ``ClientError`` as cause), pyarrow's texts."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        err = response.get("Error") or {}
        meta = response.get("ResponseMetadata") or {}
        status = meta.get("HTTPStatusCode")
        return (err.get("Code") or None), (int(status) if status else None)
    cause = exc.__cause__
    if cause is not None and isinstance(getattr(cause, "response", None), dict):
        return _client_error(cause)
    text = str(exc)
    m = _AWS_ERROR.search(text)
    code = m.group(1) if m else None
    s = _HTTP_STATUS.search(text)
    if code == "UNKNOWN":
        code = None
    return code, (int(s.group(1)) if s else None)


def _detail(exc: BaseException, code: str | None, status: int | None) -> str:
    text = str(exc).strip() or type(exc).__name__
    text = " ".join(text.split())
    if len(text) > 300:
        text = text[:300] + "..."
    head = ", ".join(p for p in (f"HTTP {status}" if status else None, code) if p)
    if head and head not in text:
        return f"{head}: {text}"
    return text


# ---- attempts bounded in time -----------------------------------------------------------------

#: threads that run attempts the caller waits on with a time limit (an abandoned attempt keeps
#: its thread until the client gives up on it)
_ATTEMPT_THREADS = 32
_attempts = SharedPool(_ATTEMPT_THREADS, "lazyscan-request")


def run_bounded(fn: Any, seconds: float) -> Any:
    """``fn()`` on a request thread, waited for at most ``seconds``: past that a
    :class:`StalledError` (the attempt is left to end on its own; its result is dropped)."""
    future: Future[Any] = _attempts.get().submit(fn)
    try:
        return future.result(timeout=max(seconds, 0.001))
    except TimeoutError:
        if future.cancel():
            raise StalledError(f"not started within {seconds:.1f} s (every request thread busy)") from None
        raise StalledError(f"no answer within {seconds:.1f} s") from None
