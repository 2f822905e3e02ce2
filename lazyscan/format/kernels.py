"""numba kernels and kernel error codes that every physical format shares.

Kernels follow the rules of :mod:`lazyscan.parquet.kernels`: ``@numba.njit(nogil=True,
cache=True)`` over plain numpy arrays, untrusted input checked before use, and an ``int64``
result that is >= 0 on success or one of the negative ``ERR_*`` codes below. The codes are one
table for every format's kernels (Parquet's and ORC's), each code one kind of damage, and
:data:`ERROR_MESSAGES` says it. Caller mistakes give :data:`ERR_BAD_ARGUMENT`.

- :func:`index_runs`, :func:`count_index_runs`, :data:`index_runs_small`: sorted row indices to
  ``[start, end)`` runs; :func:`expand_runs`: runs back to row indices (for ``RowRanges``);
- :func:`load_u64`, :func:`load_u32`: little-endian loads the decoders and Snappy inline;
- :func:`kernel_jit`: the ``numba.njit`` of every kernel module, which compiles one version of a
  kernel per argument type instead of one per argument value or buffer flag (:class:`Kernel`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any, cast

import numba
import numpy as np
from numba.core import sigutils, types
from numba.core.compiler_lock import global_compiler_lock
from numba.core.registry import CPUDispatcher

# numba compiles these values into the kernels of every module that uses them, and its cache
# of those kernels does not notice a change here: a code keeps its value once given
ERR_TRUNCATED = -1
ERR_BAD_BIT_WIDTH = -2
ERR_BAD_INDEX = -3
ERR_BAD_LENGTH = -4
ERR_BAD_HEADER = -5
ERR_BAD_ARGUMENT = -6
ERR_MISPLACED = -7

ERROR_MESSAGES: dict[int, str] = {
    ERR_TRUNCATED: "the encoded data ends before all values were read",
    ERR_BAD_BIT_WIDTH: "bit width out of range",
    ERR_BAD_INDEX: "dictionary index out of range",
    ERR_BAD_LENGTH: "negative or too large length or prefix length",
    ERR_BAD_HEADER: "malformed encoding header, run header or varint",
    ERR_BAD_ARGUMENT: "inconsistent kernel arguments (output too small or selection out of range)",
    # ORC's run-length decoders check where their runs lie (lazyscan.orc.kernels)
    ERR_MISPLACED: "the runs do not end where the stream's end or the row index places them (a damaged run, "
                   "bytes after the last value, or a wrong row-index position)",
}


class Kernel(CPUDispatcher):
    """A numba dispatcher that compiles a kernel once per argument *type*.

    numba compiles a new version of a function for every distinct tuple of argument types, and
    two kinds of distinction cost compiles without making faster code here:

    - a read-only array and a writable one are two types. Pages come as read-only views of
      pyarrow buffers, or as writable numpy arrays (decompressed, or fetched into a small
      buffer), so a decoder was compiled twice for its input bytes. The parameters named in
      ``read_only`` are compiled as read-only arrays whatever the caller passes (a kernel that
      writes one fails to compile), and a writable array is dispatched to that version;
    - a constant int or bool passed by one kernel to another is a literal type, one per value
      (``_unpack_run(buf, ..., 1, ...)``): arguments are compiled as their plain type. LLVM
      still sees the constant where it inlines the callee.

    The warm-up (:mod:`lazyscan.scan.warmup`) measured 222 signatures and 75 s of compiling
    before, of which these made 92 signatures and 27 s.
    """

    read_only: frozenset[int] = frozenset()

    def compile(self, sig: Any) -> Any:
        args, return_type = sigutils.normalize_signature(sig)
        args = tuple(args)
        general = tuple(self._general(i, a) for i, a in enumerate(args))
        if general == args:
            return super().compile(sig)
        with global_compiler_lock:
            entry = super().compile(general if return_type is None else return_type(*general))
            # a Python call with a writable array: later ones go straight to the read-only version
            aliases: set[tuple[Any, ...]] = self.__dict__.setdefault("_aliases", set())
            if args not in aliases and not any(isinstance(a, types.Literal) for a in args):
                aliases.add(args)
                self._insert([a._code for a in args], entry, False)  # type: ignore[attr-defined]  # numba's C base
        return entry

    def _general(self, position: int, arg: Any) -> Any:
        if isinstance(arg, (types.IntegerLiteral, types.BooleanLiteral)):
            return arg.literal_type
        if position in self.read_only and isinstance(arg, types.Array) and arg.mutable:
            return arg.copy(readonly=True)
        return arg


def kernel_jit(read_only: Iterable[str] = (), **options: Any) -> Callable[[Callable[..., Any]], Any]:
    """``numba.njit(cache=True, **options)`` making :class:`Kernel` dispatchers; the array
    parameters named in ``read_only`` (of any kernel it decorates) are compiled read-only."""
    names = frozenset(read_only)
    options = {"cache": True, **options}

    def decorate(function: Callable[..., Any]) -> Any:
        dispatcher = numba.njit(**options)(function)
        if isinstance(dispatcher, CPUDispatcher):  # not with NUMBA_DISABLE_JIT
            dispatcher.__class__ = Kernel
            parameters = inspect.signature(function).parameters
            cast(Kernel, dispatcher).read_only = frozenset(i for i, name in enumerate(parameters) if name in names)
        return dispatcher

    return decorate


_jit = kernel_jit(nogil=True, read_only=("idx",))
#: per-value helpers stay inlined into numba's IR: LLVM does not inline every numba function
#: called in a loop (a dictionary of 1-byte strings decoded at half the speed when the byte copy
#: of lazyscan.parquet.kernels was not)
_jit_inline = kernel_jit(nogil=True, inline="always", read_only=("buf",))
#: short selections keep the GIL (see ``_jit_gil`` in :mod:`lazyscan.parquet.kernels`)
_jit_gil = kernel_jit(read_only=("idx",))


# --------------------------------------------------------------------------- byte loads


@_jit_inline
def load_u64(buf, b):
    """Little-endian uint64 at ``buf[b:b + 8]`` (caller checked bounds).

    Unsigned indices spare numba's negative-index wraparound, so LLVM merges the byte loads.
    """
    u = np.uint64(b)
    return (
        np.uint64(buf[u])
        | (np.uint64(buf[u + np.uint64(1)]) << np.uint64(8))
        | (np.uint64(buf[u + np.uint64(2)]) << np.uint64(16))
        | (np.uint64(buf[u + np.uint64(3)]) << np.uint64(24))
        | (np.uint64(buf[u + np.uint64(4)]) << np.uint64(32))
        | (np.uint64(buf[u + np.uint64(5)]) << np.uint64(40))
        | (np.uint64(buf[u + np.uint64(6)]) << np.uint64(48))
        | (np.uint64(buf[u + np.uint64(7)]) << np.uint64(56))
    )


@_jit_inline
def load_u32(buf, b):
    """Little-endian uint32 at ``buf[b:b + 4]`` as uint64 (caller checked bounds; unsigned
    indices, as in :func:`load_u64`)."""
    u = np.uint64(b)
    return (
        np.uint64(buf[u])
        | (np.uint64(buf[u + np.uint64(1)]) << np.uint64(8))
        | (np.uint64(buf[u + np.uint64(2)]) << np.uint64(16))
        | (np.uint64(buf[u + np.uint64(3)]) << np.uint64(24))
    )


# --------------------------------------------------------------------------- row selections


@_jit
def _index_runs(idx, starts, ends, store):
    """:func:`index_runs`, storing the runs only when ``store`` (else counting them)."""
    n = idx.shape[0]
    if n == 0:
        return 0
    cap = min(starts.shape[0], ends.shape[0])
    if idx[0] < 0 or (store and cap < 1):
        return -1
    k = 0
    if store:
        starts[0] = idx[0]
    prev = idx[0]
    for i in range(1, n):
        v = idx[i]
        if v <= prev:
            return -1
        if v != prev + 1:
            if store:
                ends[k] = prev + 1
            k += 1
            if store:
                if k >= cap:
                    return -1
                starts[k] = v
        prev = v
    if store:
        ends[k] = prev + 1
    return k + 1


@_jit
def index_runs(idx, starts, ends):
    """Runs of consecutive values of ``idx`` as ``[start, end)`` pairs; number of runs, or -1
    when ``idx`` is not strictly increasing and non-negative or its runs do not fit in
    ``starts``/``ends`` (len(idx) entries always fit; :func:`count_index_runs` says how many)."""
    return _index_runs(idx, starts, ends, True)


@_jit
def count_index_runs(idx):
    """How many runs :func:`index_runs` finds in ``idx``; -1 when ``idx`` is not strictly
    increasing and non-negative."""
    none = np.empty(0, np.int64)
    return _index_runs(idx, none, none, False)


#: :func:`index_runs` holding the GIL, for selections short enough to take a microsecond or two
index_runs_small = _jit_gil(getattr(index_runs, "py_func", index_runs))
#: selections up to this many rows go to :data:`index_runs_small`
SMALL_SELECTION = 4096


@_jit
def expand_runs(starts, ends, out):
    """Write every row of the ranges ``[starts[i], ends[i])`` to ``out``, in order; returns
    the count, or ``ERR_BAD_ARGUMENT`` when ``out`` is too small or ``ends`` is shorter."""
    if ends.shape[0] < starts.shape[0]:
        return ERR_BAD_ARGUMENT
    cap = out.shape[0]
    o = 0
    for i in range(starts.shape[0]):
        if ends[i] - starts[i] > cap - o:
            return ERR_BAD_ARGUMENT
        for r in range(starts[i], ends[i]):
            out[o] = r
            o += 1
    return o
