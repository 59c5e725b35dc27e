"""Reciprocal rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009)."""

from __future__ import annotations

import numpy as np

RRF_K = 60


def reciprocal_rank_fusion(rankings: list[np.ndarray], k: int = RRF_K) -> tuple[np.ndarray, np.ndarray]:
    """Fuse ranked row lists: score(d) = sum over lists of 1 / (k + rank of d), ranks from 1.

    Returns:
        ``(rows, scores)`` sorted by fused score, ties broken by lower row.
    """
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, row in enumerate(ranking.tolist(), start=1):
            fused[row] = fused.get(row, 0.0) + 1.0 / (k + rank)
    if not fused:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    rows = np.fromiter(fused.keys(), dtype=np.int64, count=len(fused))
    scores = np.fromiter(fused.values(), dtype=np.float64, count=len(fused))
    order = np.lexsort((rows, -scores))
    return rows[order], scores[order].astype(np.float32)
