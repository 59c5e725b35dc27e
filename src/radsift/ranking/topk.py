"""Top-k selection: the best scores first, ties broken by the lower row, everywhere."""

from __future__ import annotations

import numpy as np


def top_k(scores: np.ndarray, k: int | None, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Rows and scores of the ``k`` largest ``scores`` (None = all), best first.

    Args:
        scores: One score per row (higher is better).
        k: How many to keep (None = every eligible row).
        mask: Only rows where it is true are eligible (None = all).

    Returns:
        ``(rows, scores)``: int64 rows and their scores (the input dtype), sorted by descending
        score; equal scores by ascending row, also at the cut-off.
    """
    scores = np.asarray(scores)
    rows = np.flatnonzero(mask) if mask is not None else np.arange(scores.shape[0])
    vals = scores[rows]
    if k is not None and k <= 0:
        return np.zeros(0, dtype=np.int64), vals[:0]
    if k is not None and k < rows.size:
        part = np.argpartition(-vals, k - 1)[:k]
        # Keep every row tied with the k-th, so that the tie-break below is by row.
        keep = np.flatnonzero(vals >= vals[part].min())
        rows, vals = rows[keep], vals[keep]
    order = np.lexsort((rows, -vals))
    if k is not None:
        order = order[:k]
    return rows[order].astype(np.int64), vals[order]


def top_ranking(scores: np.ndarray, k: int | None, mask: np.ndarray | None = None) -> list[tuple[int, float]]:
    """:func:`top_k` as ``(row, score)`` pairs of Python ints and floats."""
    rows, vals = top_k(scores, k, mask)
    return list(zip(rows.tolist(), np.asarray(vals, dtype=np.float64).tolist()))
