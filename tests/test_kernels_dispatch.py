"""``kernel_jit`` (lazyscan.format.kernels): one compiled version of a kernel per argument type.

A read-only buffer (a pyarrow page) and a writable one (a decompressed page) share the version
compiled for read-only input; constants that one kernel passes to another are compiled as their
plain type, not one version per value; a kernel that writes into a parameter it declares
read-only does not compile. Each result is compared with the kernel's own Python function.
"""

from __future__ import annotations

import os

import numba
import numpy as np
import pytest

from lazyscan.format.kernels import Kernel, kernel_jit

pytestmark = pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="no dispatchers without the JIT")

_jit = kernel_jit(nogil=True, cache=False, read_only=("buf",))


def _kernels() -> tuple[Kernel, Kernel]:
    """A fresh kernel and a kernel calling it with constants (fresh: no signatures yet)."""

    @_jit
    def window_sum(buf, start, stop, out):  # type: ignore[no-untyped-def]
        total = 0
        for i in range(start, stop):
            total += buf[i]
        out[0] = total
        return total

    @_jit
    def both_halves(buf, out):  # type: ignore[no-untyped-def]
        half = buf.shape[0] // 2
        return window_sum(buf, 0, half, out) + window_sum(buf, half, buf.shape[0], out) + window_sum(buf, 0, 3, out)

    return window_sum, both_halves


def test_writable_and_read_only_buffers_share_one_signature() -> None:
    window_sum, _ = _kernels()
    writable = np.arange(10, dtype=np.uint8)
    read_only = writable.copy()
    read_only.flags.writeable = False
    out = np.zeros(1, np.int64)
    assert window_sum(writable, 2, 7, out) == window_sum.py_func(writable, 2, 7, out.copy()) == 20
    assert window_sum(read_only, 0, 10, out) == 45 and out[0] == 45
    assert window_sum(writable, 0, 10, out) == 45
    assert len(window_sum.signatures) == 1
    (buf_type, *_), = window_sum.signatures
    assert not buf_type.mutable
    # the output stays writable: only the parameters named read-only change
    assert window_sum.signatures[0][3].mutable


def test_a_writable_call_after_the_first_dispatches_without_compiling(monkeypatch: pytest.MonkeyPatch) -> None:
    window_sum, _ = _kernels()
    out = np.zeros(1, np.int64)
    window_sum(np.ones(4, np.uint8), 0, 4, out)
    compiles = []
    original = Kernel.compile

    def counted(self, sig):  # type: ignore[no-untyped-def]
        compiles.append(sig)
        return original(self, sig)

    monkeypatch.setattr(Kernel, "compile", counted)
    for n in range(1, 6):
        assert window_sum(np.ones(n, np.uint8), 0, n, out) == n
    assert compiles == []


def test_constants_between_kernels_compile_as_their_plain_type() -> None:
    window_sum, both_halves = _kernels()
    buf = np.arange(8, dtype=np.uint8)
    out = np.zeros(1, np.int64)
    assert both_halves(buf, out) == both_halves.py_func(buf, out.copy()) == 28 + 3
    # called with the constant 0 and 3 and with a variable: one signature, no Literal[int](0)
    assert [str(s) for s in window_sum.signatures] == [
        "(Array(uint8, 1, 'C', True, aligned=True), int64, int64, Array(int64, 1, 'C', False, aligned=True))"
    ]


def test_writing_a_read_only_parameter_does_not_compile() -> None:
    @_jit
    def clears(buf):  # type: ignore[no-untyped-def]
        buf[0] = 0
        return 0

    with pytest.raises(numba.core.errors.TypingError):
        clears(np.ones(3, np.uint8))
