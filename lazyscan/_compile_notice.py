"""One line on this module's logger when a kernel is compiled for its first use.

With numba's cache empty (a new installation, a new executor), the first query waits while its
kernels compile: about half a minute, once. The user is told so once per process, with the way
to do it ahead, instead of seeing a query hang. A kernel loaded from the cache compiles nothing
and says nothing (numba signals ``numba:compile`` only after a cache miss). The line goes to
this module's logger at WARNING, so it shows on standard error unless logging is set up
otherwise; ``lazyscan warmup`` raises that logger's level while it compiles on purpose.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from numba.core import event

log = logging.getLogger(__name__)

MESSAGE = (
    "lazyscan: compiling its numba kernels for first use on this machine (about half a minute "
    "with an empty cache; they are cached for the next processes). `lazyscan warmup` compiles "
    "them ahead of the first query."
)


class FirstCompileNotice(event.Listener):
    """Logs :data:`MESSAGE` the first time one of lazyscan's kernels is compiled."""

    def __init__(self) -> None:
        self.said = False
        self._lock = threading.Lock()

    def on_start(self, ev: Any) -> None:
        if self.said:
            return
        dispatcher = (ev.data or {}).get("dispatcher")
        module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
        if not module.startswith("lazyscan."):
            return  # the user's own numba code, or numba's internals
        with self._lock:
            if self.said:
                return
            self.said = True
        log.warning(MESSAGE)

    def on_end(self, ev: Any) -> None:
        pass


NOTICE = FirstCompileNotice()
event.register("numba:compile", NOTICE)
