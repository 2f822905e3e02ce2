"""Code for a fresh interpreter that counts lazyscan's kernel signatures compiled into machine
code there: ``_Compiled.count`` after it has run.

numba's ``numba:compile`` events that succeeded, for lazyscan's cached kernels only: a typing
attempt numba retries with literal arguments produces nothing, and kernels that are never cached
(compiled into each caller) are not counted. Holds no braces, so it can lead a ``str.format``
template.
"""

COMPILE_COUNTER = """
from numba.core import event

class _Compiled(event.Listener):
    count = 0
    def on_start(self, ev):
        pass
    def on_end(self, ev):
        kernel = ev.data["dispatcher"]
        if ev._exc_details is None and kernel.py_func.__module__.startswith("lazyscan.") and kernel._cache.cache_path:
            _Compiled.count += 1

event.register("numba:compile", _Compiled())
"""
