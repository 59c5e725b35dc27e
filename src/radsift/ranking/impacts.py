"""A term's postings best weight first, read as a prefix: what a threshold top-k reads of them.

:class:`radsift.ranking.pool.BM25Side` reads each query term's postings in impact order (the retriever's
``impact_postings``: a stable sort of every posting by weight, highest first). A first query of a term sorted
them all (about 15 ms for 160,000 postings), though the top-k reads a few hundred of them and stops. Here a
term's first positions of that order are selected (a partition, then a sort of those only) and kept per
retriever; the whole order is asked of the retriever only when a search reads past :data:`PREFIX_MAX`
positions (or past an eighth of the postings). The prefix is the stable order's, ties by position included,
so what is read, and every score, is the same.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict

import numpy as np

#: A prefix of at most this many positions is selected; past it the retriever's whole order is read.
PREFIX_MAX = 1 << 16
#: Postings entries of the prefixes kept per retriever (the least recently used terms go first).
PREFIX_BUDGET = 1 << 22

_KEPT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def impact_prefix(rows: np.ndarray, weights: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``n`` of ``(rows, weights)`` ordered by ``np.argsort(-weights, kind="stable")``, without sorting
    them all: the weights above the ``n``-th highest, then the first (by position) of those equal to it."""
    key = -np.asarray(weights)
    if n >= key.shape[0]:
        order = np.argsort(key, kind="stable")
    elif n <= 0:
        order = np.zeros(0, dtype=np.intp)
    else:
        cut = np.partition(key, n - 1)[n - 1]
        above = np.flatnonzero(key < cut)
        sel = np.concatenate([above, np.flatnonzero(key == cut)[:n - above.size]])
        order = sel[np.argsort(key[sel], kind="stable")]  # equal keys keep their positions' order
    return np.asarray(rows, dtype=np.int64)[order], np.asarray(weights)[order]


class Impacts:
    """One term's postings in impact order, as far as a search has read: :meth:`upto` extends it.

    Attributes:
        rows: The first postings' rows (global, int64), highest weight first.
        weights: Their weights.
        size: How many postings the term has.
    """

    def __init__(self, retriever, term: str, rows: np.ndarray, weights: np.ndarray) -> None:
        self.retriever, self.term, self.size = retriever, term, int(rows.shape[0])
        self._postings = (rows, weights)
        self.rows, self.weights = _kept(retriever, term) or (np.zeros(0, np.int64), np.asarray(weights)[:0])

    def upto(self, n: int) -> Impacts:
        """Make at least the first ``n`` positions (all, past :attr:`size`) readable; returns itself."""
        n = min(n, self.size)
        if self.rows.shape[0] >= n:
            return self
        if n > PREFIX_MAX or n * 8 > self.size:
            self.rows, self.weights = self.retriever.impact_postings(self.term)  # kept by the retriever
            return self
        n = min(max(n, 2 * self.rows.shape[0]), PREFIX_MAX)
        self.rows, self.weights = impact_prefix(*self._postings, n)
        _keep(self.retriever, self.term, (self.rows, self.weights))
        return self


def _kept(retriever, term: str) -> tuple | None:
    """The prefix kept of ``term`` (None: none)."""
    with _LOCK:
        kept = _KEPT.get(retriever)
        if kept is None or term not in kept[0]:
            return None
        kept[0].move_to_end(term)
        return kept[0][term]


def _keep(retriever, term: str, prefix: tuple) -> None:
    """Keep ``prefix`` of ``term`` (a retriever that takes no weak reference keeps none)."""
    with _LOCK:
        try:
            kept = _KEPT.setdefault(retriever, [OrderedDict(), 0])
        except TypeError:
            return
        old = kept[0].pop(term, None)
        kept[0][term] = prefix
        kept[1] += prefix[0].shape[0] - (0 if old is None else old[0].shape[0])
        while kept[1] > PREFIX_BUDGET and len(kept[0]) > 1:
            kept[1] -= kept[0].popitem(last=False)[1][0].shape[0]


__all__ = ["Impacts", "PREFIX_BUDGET", "PREFIX_MAX", "impact_prefix"]
