"""Sets of rows held as sorted arrays: unions, distinct values, lookups and tier counts without a sort.

A reading's first query builds its tiers from postings that are already sorted (each finding's mentions by
unit row; the units' reports, which follow their rows; the side and location rows, from ``flatnonzero``).
``np.unique`` / ``np.union1d`` / ``searchsorted`` sort or search them again; the helpers here give the same
arrays (values and dtypes) from a merge (``sort(kind="stable")`` is a timsort: sorted runs are merged in one
pass), a difference of neighbours, a count per value (tiers are small integers) or a lookup table over the
units or reports, and fall back to ``np.unique`` where their input is not what they need.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: A lookup of this many keys or more in a universe of ``size`` reads a table of ``size`` entries
#: (``wanted.size * TABLE_SHARE >= size``) instead of searching the keys.
TABLE_SHARE = 64
#: Value counts by ``bincount`` over at most this many distinct values (past it: ``np.unique``).
COUNT_SPAN = 1 << 20


def is_sorted(a: np.ndarray) -> bool:
    """Whether ``a`` is non-decreasing."""
    return bool(a.shape[0] < 2 or (a[1:] >= a[:-1]).all())


def _starts(a: np.ndarray) -> np.ndarray:
    """Whether each entry of sorted ``a`` differs from the one before (the first of each run of equal values)."""
    first = np.empty(a.shape[0], dtype=bool)
    if a.shape[0]:
        first[0] = True
        np.not_equal(a[1:], a[:-1], out=first[1:])
    return first


def unique(a: np.ndarray) -> np.ndarray:
    """``np.unique(a)``, in one pass when ``a`` is already sorted (the common case here)."""
    a = np.asarray(a)
    if not is_sorted(a):
        return np.unique(a)
    return a[_starts(a)]


def run_counts(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(a, return_counts=True)``, in one pass when ``a`` is already sorted."""
    a = np.asarray(a)
    if not is_sorted(a):
        return np.unique(a, return_counts=True)
    starts = np.flatnonzero(_starts(a))
    return a[starts], np.diff(np.append(starts, a.shape[0]))


def union(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """``np.union1d`` of any number of arrays (``np.unique`` of their concatenation): sorted inputs are merged
    (a timsort of sorted runs), not sorted again."""
    arrays = [np.asarray(a) for a in arrays]
    joined = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)
    if len(arrays) > 1 and all(is_sorted(a) for a in arrays):
        joined.sort(kind="stable")
    return unique(joined)


def best_by(keys: np.ndarray, tiers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct keys, the lowest tier of each): ``keys`` already sorted are not sorted again."""
    if not keys.size:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int8)
    if not is_sorted(keys):
        order = np.argsort(keys, kind="stable")
        keys, tiers = keys[order], tiers[order]
    first = _starts(keys)
    if first.all():  # no key repeats: each its own tier
        return keys, tiers
    starts = np.flatnonzero(first)
    return keys[starts], np.minimum.reduceat(tiers, starts)


def lookup(keys: np.ndarray, values: np.ndarray, wanted: np.ndarray, fill, size: int | None = None,
           dtype=np.int8) -> np.ndarray:
    """``values`` of ``wanted`` in sorted distinct ``keys`` (``fill`` where absent), as ``dtype``. ``size``: the
    keys' universe (``0 .. size - 1``); many ``wanted`` read a table over it instead of searching the keys."""
    out = np.full(wanted.size, fill, dtype=dtype)
    if not keys.size or not wanted.size:
        return out
    if size is not None and wanted.size * TABLE_SHARE >= size:
        table = np.full(size, fill, dtype=dtype)
        table[keys] = values
        return table[wanted]
    pos = np.minimum(np.searchsorted(keys, wanted), keys.size - 1)
    hit = keys[pos] == wanted
    out[hit] = values[pos[hit]]
    return out


def value_counts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True, return_counts=True)`` of integers: counted per value (``bincount``)
    when they span few values, as tiers do."""
    values = np.asarray(values)
    if not values.size or values.dtype.kind not in "iu":
        return np.unique(values, return_inverse=True, return_counts=True)
    lo, hi = int(values.min()), int(values.max())
    if hi - lo >= COUNT_SPAN:
        return np.unique(values, return_inverse=True, return_counts=True)
    shifted = (values - lo).astype(np.intp)
    counts = np.bincount(shifted, minlength=hi - lo + 1)
    present = np.flatnonzero(counts)
    rank = np.zeros(counts.size, dtype=np.intp)
    rank[present] = np.arange(present.size)
    return (present + lo).astype(values.dtype), rank[shifted], counts[present]


__all__ = ["best_by", "is_sorted", "lookup", "run_counts", "union", "unique", "value_counts"]
