"""One line on this module's logger when a kernel is compiled for its first use, and a live
progress line on a terminal while compiling goes on.

With no compiled kernels at hand (a new installation without shipped kernels, a CPU they do not
fit, an empty cache), the first query waits while its kernels compile: about half a minute,
once. The user is told so once per process, with the way to do it ahead, instead of seeing a
query hang. A kernel loaded from a cache compiles nothing and says nothing (numba signals
``numba:compile`` only after a cache miss). The line goes to this module's logger at WARNING,
so it shows on standard error unless logging is set up otherwise; ``lazyscan warmup`` raises
that logger's level while it compiles on purpose, which also silences the progress line.

On a terminal (standard error a TTY) a second line counts the signatures compiled and the
seconds spent, redrawn in place while compiles go on, and ends with a summary once no compile
has run for a moment.
"""

from __future__ import annotations

import atexit
import logging
import sys
import threading
import time
from typing import Any, TextIO

from numba.core import event

log = logging.getLogger(__name__)

MESSAGE = (
    "lazyscan: compiling its numba kernels for first use on this machine (about half a minute "
    "with an empty cache; they are cached for the next processes). `lazyscan warmup` compiles "
    "them ahead of the first query; `lazyscan warmup --ship` into the package, for a wheel or a "
    "packed environment."
)

_SPINNER = "|/-\\"


def _is_lazyscan(ev: Any) -> bool:
    dispatcher = (getattr(ev, "data", None) or {}).get("dispatcher")
    module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
    return module.startswith("lazyscan.")


class CompileProgress:
    """The live line on a terminal: signatures compiled so far and seconds since the first.
    A thread redraws it every ``interval`` seconds while a compile is open and erases it as soon
    as none is (so the program's own output never lands on it); once no compile has been open
    for ``idle`` seconds, or when the process exits, one summary line stays. A later compile
    starts a new count."""

    def __init__(self, stream: TextIO, interval: float = 0.25, idle: float = 1.0) -> None:
        self.stream = stream
        self.interval = interval
        self.idle = idle
        self.compiled = 0
        self.open = 0
        self.started = 0.0
        self.last = 0.0
        self._shown = False
        self._thread: threading.Thread | None = None
        self._lock = threading.RLock()
        atexit.register(self.finish)

    def started_one(self) -> None:
        with self._lock:
            now = time.monotonic()
            if self._thread is None:
                self.compiled, self.started = 0, now
                self._thread = threading.Thread(target=self._draw, name="lazyscan-compile-progress", daemon=True)
                self._thread.start()
            self.open += 1
            self.last = now

    def ended_one(self) -> None:
        with self._lock:
            self.open = max(0, self.open - 1)
            self.compiled += 1
            self.last = time.monotonic()
            if self.open == 0:
                self._write("\r\x1b[K" if self._shown else "")
                self._shown = False

    def finish(self) -> None:
        """The summary line, if compiles were counted and none is written yet."""
        with self._lock:
            if self._thread is None or self.compiled == 0:
                return
            seconds = self.last - self.started
            self._thread = None
            self._shown = False
            self._write(
                f"\r\x1b[Klazyscan: compiled {self.compiled} kernel signatures in {seconds:.1f} s "
                "(cached for the next processes)\n"
            )

    def _write(self, text: str) -> None:
        if not text:
            return
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # the stream went away
            pass

    def _draw(self) -> None:
        me = threading.current_thread()
        tick = 0
        while True:
            time.sleep(self.interval)
            with self._lock:
                if self._thread is not me:
                    return
                if self.open == 0:
                    if time.monotonic() - self.last >= self.idle:
                        self.finish()
                        return
                    continue
                seconds = time.monotonic() - self.started
                self._write(
                    f"\r\x1b[Klazyscan: compiling kernels {_SPINNER[tick % 4]} {self.compiled} signatures, "
                    f"{seconds:.0f} s"
                )
                self._shown = True
            tick += 1


class FirstCompileNotice(event.Listener):
    """Logs :data:`MESSAGE` the first time one of lazyscan's kernels is compiled, and drives a
    :class:`CompileProgress` on a terminal."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.said = False
        self._lock = threading.Lock()
        self._stream = stream
        self._progress: CompileProgress | None = None

    def _progress_line(self) -> CompileProgress | None:
        if not log.isEnabledFor(logging.WARNING):
            return None  # silenced (lazyscan warmup draws its own bar)
        stream = self._stream if self._stream is not None else sys.stderr
        if self._progress is None or self._progress.stream is not stream:
            try:
                terminal = stream.isatty()
            except (AttributeError, ValueError):
                terminal = False
            if not terminal:
                return None
            self._progress = CompileProgress(stream)
        return self._progress

    def on_start(self, ev: Any) -> None:
        if not _is_lazyscan(ev):
            return  # the user's own numba code, or numba's internals
        progress = self._progress_line()
        if progress is not None:
            progress.started_one()
        if self.said:
            return
        with self._lock:
            if self.said:
                return
            self.said = True
        log.warning(MESSAGE)

    def on_end(self, ev: Any) -> None:
        if _is_lazyscan(ev) and self._progress is not None and self._progress.open > 0:
            self._progress.ended_one()


NOTICE = FirstCompileNotice()
event.register("numba:compile", NOTICE)
