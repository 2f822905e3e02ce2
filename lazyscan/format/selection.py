"""Row selections within a row group.

A :class:`RowRanges` is a sorted list of disjoint, non-adjacent half-open ranges ``[start, end)``
of row indices, kept as two ``int64`` arrays. Predicates produce boolean masks; the scan turns a
mask into ranges to plan payload reads (which pages hold a selected row), merges ranges closer than
the materialization threshold so decoding stays batched, and intersects selections from different
tiers (page index, row-level predicates). Operations are vectorized with numpy; the two
per-row loops (indices to ranges and back) are numba kernels.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from lazyscan.errors import OptionError
from lazyscan.format import kernels as K


class RowRanges:
    """Sorted, disjoint, non-adjacent ``[start, end)`` row ranges."""

    __slots__ = ("_count", "_indices", "ends", "starts")

    def __init__(self, starts: np.ndarray, ends: np.ndarray, *, _trusted: bool = False) -> None:
        starts = np.asarray(starts, dtype=np.int64)
        ends = np.asarray(ends, dtype=np.int64)
        if not _trusted:
            if starts.shape != ends.shape or starts.ndim != 1:
                raise OptionError("starts and ends must be 1-D arrays of equal length")
            keep = ends > starts
            starts, ends = starts[keep], ends[keep]
            if len(starts) and (starts[0] < 0 or np.any(starts[1:] < ends[:-1])):
                order = np.argsort(starts, kind="stable")
                starts, ends = starts[order], ends[order]
                if starts[0] < 0:
                    raise OptionError("row ranges must not be negative")
            starts, ends = _normalize(starts, ends)
        self.starts = starts
        self.ends = ends
        self._indices: np.ndarray | None = None
        self._count = -1

    # ---- construction -------------------------------------------------------------------

    @classmethod
    def empty(cls) -> RowRanges:
        z = np.empty(0, dtype=np.int64)
        return cls._built(z, z, None, 0)

    @classmethod
    def all(cls, num_rows: int) -> RowRanges:
        if num_rows <= 0:
            return cls.empty()
        return cls._built(np.array([0], np.int64), np.array([num_rows], np.int64), None, num_rows)

    @classmethod
    def from_ranges(cls, ranges: Iterable[tuple[int, int]]) -> RowRanges:
        pairs = list(ranges)
        if not pairs:
            return cls.empty()
        arr = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        return cls(arr[:, 0], arr[:, 1])

    @classmethod
    def from_indices(cls, rows: np.ndarray | Iterable[int]) -> RowRanges:
        """Ranges covering the given row indices (any order, duplicates allowed)."""
        idx = np.array(rows, dtype=np.int64)
        if idx.ndim != 1:
            raise OptionError("row indices must be a 1-D array")
        out = cls.from_sorted_indices(idx, copy=False)
        if out is None:
            idx = np.unique(idx)
            if len(idx) and idx[0] < 0:
                raise OptionError("row indices must not be negative")
            out = cls.from_sorted_indices(idx, copy=False)
            assert out is not None
        return out

    @classmethod
    def from_sorted_indices(cls, rows: np.ndarray, copy: bool = True) -> RowRanges | None:
        """Ranges of strictly increasing, non-negative row indices; None when they are not.

        The selection keeps the indices (copied unless ``copy`` is false), so
        :meth:`to_indices` does not rebuild them.
        """
        idx = np.array(rows, dtype=np.int64, copy=True) if copy else np.asarray(rows, dtype=np.int64)
        if len(idx) <= K.SMALL_SELECTION:
            starts = np.empty(len(idx), np.int64)
            ends = np.empty(len(idx), np.int64)
            n = K.index_runs_small(idx, starts, ends)
        else:
            # runs counted first: a dense selection (few long runs) allocates two short arrays,
            # not two the size of the indices (their page faults cost more than the count)
            runs = K.count_index_runs(idx)
            if runs < 0:
                return None
            if runs == 1:  # consecutive rows: the ends are the run
                starts = idx[:1].copy()
                ends = idx[-1:] + 1
                n = 1
            else:
                starts = np.empty(runs, np.int64)
                ends = np.empty(runs, np.int64)
                n = K.index_runs(idx, starts, ends)
        if n < 0:
            return None
        idx.flags.writeable = False
        # distinct indices: one row each
        return cls._built(starts[:n], ends[:n], idx, len(idx))

    @classmethod
    def _built(cls, starts: np.ndarray, ends: np.ndarray, indices: np.ndarray | None, count: int) -> RowRanges:
        """A selection from normalized int64 ranges with its indices (None: built when asked)
        and row count, without :meth:`__init__`'s conversions (the selections of single-row-group
        reads are built per call)."""
        out = cls.__new__(cls)
        out.starts = starts
        out.ends = ends
        out._indices = indices
        out._count = count
        return out

    @classmethod
    def from_mask(cls, mask: np.ndarray, offset: int = 0) -> RowRanges:
        """Ranges of the True entries of a boolean mask (row ``i`` is ``offset + i``)."""
        m = np.asarray(mask, dtype=bool)
        if len(m) == 0:
            return cls.empty()
        d = np.diff(m.astype(np.int8), prepend=np.int8(0), append=np.int8(0))
        starts = np.flatnonzero(d == 1).astype(np.int64) + offset
        ends = np.flatnonzero(d == -1).astype(np.int64) + offset
        return cls(starts, ends, _trusted=True)

    # ---- queries ------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.starts)

    @property
    def row_count(self) -> int:
        if self._count < 0:
            self._count = int((self.ends - self.starts).sum())
        return self._count

    @property
    def is_empty(self) -> bool:
        return len(self.starts) == 0

    def to_indices(self) -> np.ndarray:
        """All selected row indices, ascending (computed once; do not modify the result)."""
        if self._indices is not None:
            return self._indices
        if self.is_empty:
            out = np.empty(0, dtype=np.int64)
        elif len(self.starts) == 1:
            out = np.arange(self.starts[0], self.ends[0], dtype=np.int64)
        else:
            out = np.empty(self.row_count, dtype=np.int64)
            if K.expand_runs(self.starts, self.ends, out) != len(out):
                raise ValueError("row ranges are inconsistent")
        out.flags.writeable = False
        self._indices = out
        return out

    # ---- algebra ------------------------------------------------------------------------

    def intersect(self, other: RowRanges) -> RowRanges:
        if self.is_empty or other.is_empty:
            return RowRanges.empty()
        starts = np.concatenate((self.starts, other.starts))
        ends = np.concatenate((self.ends, other.ends))
        # sweep: +1 at start, -1 at end; covered twice means in both
        points = np.concatenate((starts, ends))
        deltas = np.concatenate((np.ones(len(starts), np.int64), -np.ones(len(ends), np.int64)))
        order = np.lexsort((deltas, points))  # ends before starts at equal points
        points, deltas = points[order], deltas[order]
        depth = np.cumsum(deltas)
        enter = np.flatnonzero((depth == 2) & (deltas == 1))
        out_s = points[enter]
        out_e = points[enter + 1]
        return RowRanges(out_s, out_e)

    def union(self, other: RowRanges) -> RowRanges:
        return RowRanges(
            np.concatenate((self.starts, other.starts)), np.concatenate((self.ends, other.ends))
        )

    def merge_close(self, gap: int) -> RowRanges:
        """Join ranges separated by fewer than ``gap`` unselected rows."""
        if len(self.starts) < 2 or gap <= 0:
            return self
        gaps = self.starts[1:] - self.ends[:-1]
        keep = np.flatnonzero(gaps >= gap)
        starts = self.starts[np.concatenate(([0], keep + 1))]
        ends = self.ends[np.concatenate((keep, [len(self.ends) - 1]))]
        return RowRanges(starts, ends, _trusted=True)

    def positions_in(self, rows: RowRanges) -> np.ndarray:
        """Indices, within the rows of ``self``, of the rows selected by ``rows`` (a subset)."""
        sel = rows.to_indices()
        if len(sel) == 0:
            return np.empty(0, dtype=np.int64)
        lengths = self.ends - self.starts
        before = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        k = np.searchsorted(self.ends, sel, side="right")
        return before[k] + (sel - self.starts[k])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RowRanges):
            return NotImplemented
        if self is other:
            return True
        a, b = self.starts, other.starts
        if a.shape != b.shape or (self._count >= 0 and other._count >= 0 and self._count != other._count):
            return False
        if a.dtype == b.dtype and self.ends.dtype == other.ends.dtype:
            # byte comparison: np.array_equal's checks cost more than the compare on short arrays
            return a.tobytes() == b.tobytes() and self.ends.tobytes() == other.ends.tobytes()
        return bool(np.array_equal(a, b) and np.array_equal(self.ends, other.ends))

    def __hash__(self) -> int:
        return hash((self.starts.tobytes(), self.ends.tobytes()))

    def __repr__(self) -> str:
        shown = ", ".join(f"[{s}, {e})" for s, e in zip(self.starts[:5], self.ends[:5]))
        more = f", ... ({len(self)} ranges)" if len(self) > 5 else ""
        return f"RowRanges({shown}{more})"


def _normalize(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge overlapping or adjacent ranges of start-sorted input."""
    if len(starts) < 2:
        return starts, ends
    run_end = np.maximum.accumulate(ends)
    new = np.concatenate(([True], starts[1:] > run_end[:-1]))
    idx = np.flatnonzero(new)
    out_s = starts[idx]
    last = np.concatenate((idx[1:] - 1, [len(starts) - 1]))
    out_e = run_end[last]
    return out_s, out_e
