"""Packed bitmaps of units or reports: a ``bm25`` search's counts without a pass over its matches.

A ``bm25`` search ranks the units that share a term with the query (or state its reading). Its ``total``
is how many reports (units at sentence level) hold such a unit, its ``matching`` how many of them state
the reading. Both are unions and intersections of sets: each query term's units (or their reports), the
units stating the reading, the filter's reports. Each set is kept as a packed bitmap (one bit per report
or unit, :func:`numpy.packbits`), so a count costs one ``OR`` / ``AND`` per set and a popcount over
``n / 8`` bytes, whatever the number of matches. A term's bitmap is made from its postings on its first
query and kept (:class:`TermBitmaps`, up to :data:`BITMAP_BYTES` in all), as the BM25 postings are.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

#: The bytes of term bitmaps kept per store and level (the least recently used go first).
BITMAP_BYTES = 64 * 1024 * 1024

#: Bits set in each byte value.
_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def bits_of(keys: np.ndarray, size: int) -> np.ndarray:
    """The packed bitmap (``uint8``, ``ceil(size / 8)`` bytes) of the set ``keys`` (any order, repeats allowed)."""
    flags = np.zeros(size, dtype=bool)
    flags[np.asarray(keys, dtype=np.int64)] = True
    return np.packbits(flags)


def popcount(bits: np.ndarray) -> int:
    """How many bits of a packed bitmap are set."""
    return int(_POPCOUNT[bits].sum(dtype=np.int64))


def union_count(sets: list[np.ndarray], within: np.ndarray | None = None) -> int:
    """The size of the union of packed bitmaps ``sets`` (intersected with ``within`` when given)."""
    if not sets:
        return 0
    out = sets[0].copy()
    for bits in sets[1:]:
        out |= bits
    if within is not None:
        out &= within
    return popcount(out)


class TermBitmaps:
    """Each BM25 term's units, or their reports, as packed bitmaps: made from the term's postings on first use
    and kept (least recently used first out past :data:`BITMAP_BYTES`)."""

    def __init__(self, report_row: np.ndarray, n_reports: int) -> None:
        self.report_row, self.n_reports = report_row, n_reports
        self.n_units = int(report_row.shape[0])
        self._kept: OrderedDict = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def size(self, by_report: bool) -> int:
        """The number of bits of a bitmap (reports or units)."""
        return self.n_reports if by_report else self.n_units

    def keys(self, rows: np.ndarray, by_report: bool) -> np.ndarray:
        """Unit ``rows`` as bitmap keys: their reports, or themselves."""
        rows = np.asarray(rows, dtype=np.int64)
        return self.report_row[rows] if by_report else rows

    def term(self, term: str, rows: np.ndarray, by_report: bool) -> np.ndarray:
        """The bitmap of the units (or reports) holding ``term``, whose postings' global ``rows`` are given."""
        key = (term, by_report)
        with self._lock:
            hit = self._kept.get(key)
            if hit is not None:
                self._kept.move_to_end(key)
                return hit
        rows = np.asarray(rows, dtype=np.int64)
        hit = bits_of(self.keys(rows[rows < self.n_units], by_report), self.size(by_report))
        hit.flags.writeable = False
        with self._lock:
            if key not in self._kept:
                self._kept[key] = hit
                self._bytes += hit.nbytes
                while self._bytes > BITMAP_BYTES and len(self._kept) > 1:
                    self._bytes -= self._kept.popitem(last=False)[1].nbytes
        return hit


__all__ = ["BITMAP_BYTES", "TermBitmaps", "bits_of", "popcount", "union_count"]
