"""The vector backend interface: score unit vectors against a query, return the best rows.

A backend owns only the nearest-neighbour step; records, BM25 and aggregation stay in
radsift. The embedded default is exact brute force over memory-mapped float32 vectors;
other engines (for example a distributed one) implement the same two methods.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np


class VectorBackend(ABC):
    """Nearest-neighbour search over one matrix of unit vectors (inner product = cosine)."""

    name: str = "base"

    @abstractmethod
    def scores(self, query: np.ndarray) -> np.ndarray:
        """Cosine similarity of ``query`` to every row, as a float32 array."""

    def top(self, query: np.ndarray, k: int, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best rows (optionally only rows where ``mask`` is true), best first.

        Returns:
            ``(rows, scores)``: int64 rows and float32 scores, sorted by descending score.
        """
        scores = self.scores(query)
        return top_k(scores, k, mask)


def top_k(scores: np.ndarray, k: int, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Indices and values of the ``k`` largest scores (ties by lower index), restricted to ``mask``."""
    if mask is not None:
        candidates = np.flatnonzero(mask)
        sub = scores[candidates]
    else:
        candidates, sub = None, scores
    n = sub.shape[0]
    k = min(k, n)
    if k <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    if k < n:
        part = np.argpartition(-sub, k - 1)[:k]
    else:
        part = np.arange(n)
    order = part[np.lexsort((part, -sub[part]))]
    rows = order if candidates is None else candidates[order]
    return rows.astype(np.int64), sub[order].astype(np.float32)
