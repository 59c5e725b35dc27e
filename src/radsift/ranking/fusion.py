"""Fusing two rankers' scores: convex combination (the hybrid default), reciprocal rank fusion,
and the reranker's standardised fusion.

- :func:`convex_combination`: ``alpha * mm(dense) + (1 - alpha) * mm(bm25)``, each side min-max
  normalised over the scored units (Bruch, Gai & Ingber, "An Analysis of Fusion Functions for
  Hybrid Retrieval", ACM TOIS 2023, who find it beats RRF and needs few examples to set alpha).
- :func:`reciprocal_rank_fusion`: ``sum 1 / (k + rank)`` (Cormack, Clarke & Büttcher, SIGIR 2009),
  which ignores how far apart the scores are.
- :func:`fuse` / :func:`fused_order`: a cross-encoder's scores with the first stage's,
  ``weight * z(cross) + (1 - weight) * z(first)``, each standardised over the reranked head.

On Open-i findings never seen in training (2-fold split by finding, the trained default model)
the convex combination with alpha 0.75 ranks better than RRF on negative queries (mAP 0.70 vs
0.66) and on all queries (0.66 vs 0.63); alpha 0.75 is what each fold's queries pick for the other
fold (docs/measurements.md, "Hybrid fusion"). A cross-encoder trained on weak labels alone ranked
below the bi-encoder it reranks (held-out Open-i mAP 0.629 vs 0.782); fused with weight 0.3 it
ranked above it (0.811).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from radsift.errors import ConfigError

RRF_K = 60
#: Share of the dense side in :func:`convex_combination` (2-fold cross-validated on Open-i).
DENSE_WEIGHT = 0.75
#: Share of the cross-encoder in :func:`fuse` (chosen among 0.3, 0.5 and 0.7 on held-out Open-i).
RERANK_WEIGHT = 0.3


def reciprocal_rank_fusion(rankings: list[np.ndarray], k: int = RRF_K) -> tuple[np.ndarray, np.ndarray]:
    """Fuse ranked row lists: score(d) = sum over lists of 1 / (k + rank of d), ranks from 1.

    Returns:
        ``(rows, scores)`` sorted by fused score, ties broken by lower row.
    """
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, row in enumerate(np.asarray(ranking).tolist(), start=1):
            fused[row] = fused.get(row, 0.0) + 1.0 / (k + rank)
    if not fused:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    rows = np.fromiter(fused.keys(), dtype=np.int64, count=len(fused))
    scores = np.fromiter(fused.values(), dtype=np.float64, count=len(fused))
    order = np.lexsort((rows, -scores))
    return rows[order], scores[order].astype(np.float32)


def min_max(scores: np.ndarray) -> np.ndarray:
    """Scale the last axis to [0, 1] (all zeros where every score is the same)."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape[-1] == 0:
        return scores
    low = scores.min(axis=-1, keepdims=True)
    span = scores.max(axis=-1, keepdims=True) - low
    return np.divide(scores - low, span, out=np.zeros_like(scores), where=span > 0)


def convex_combination(dense: np.ndarray, bm25: np.ndarray, alpha: float = DENSE_WEIGHT) -> np.ndarray:
    """``alpha * min_max(dense) + (1 - alpha) * min_max(bm25)`` over the same units (last axis).

    Args:
        dense: Dense scores of every unit (a row per query, or one vector).
        bm25: BM25 scores of the same units (0 = no query term).
        alpha: Share of the dense side, in [0, 1].

    Returns:
        Fused scores (float32), the same shape; higher is better.
    """
    dense, bm25 = np.asarray(dense), np.asarray(bm25)
    if dense.shape != bm25.shape:
        raise ValueError(f"convex_combination: dense scores {dense.shape} but BM25 scores {bm25.shape}")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be between 0 and 1, not {alpha}")
    return (alpha * min_max(dense) + (1.0 - alpha) * min_max(bm25)).astype(np.float32)


def _standardise(x: np.ndarray) -> np.ndarray:
    std = float(x.std()) if x.size else 0.0
    return (x - x.mean()) / std if std > 0 else np.zeros_like(x)


def check_weight(weight: float) -> float:
    """The cross-encoder share of the fused score, checked to lie in [0, 1]."""
    if not 0.0 <= weight <= 1.0:
        raise ConfigError(f"rerank weight must be between 0 and 1, not {weight}")
    return weight


def fuse(first: Sequence[float], cross: Sequence[float], weight: float = RERANK_WEIGHT) -> np.ndarray:
    """``weight * z(cross) + (1 - weight) * z(first)``, z standardised over the given candidates.

    Args:
        first: First-stage scores (higher is better).
        cross: Cross-encoder scores of the same candidates.
        weight: Share of the cross-encoder, in [0, 1] (1 = its order alone).
    """
    first_arr = np.asarray(first, dtype=np.float64).reshape(-1)
    cross_arr = np.asarray(cross, dtype=np.float64).reshape(-1)
    if first_arr.shape != cross_arr.shape:
        raise ValueError(f"fuse: {first_arr.size} first-stage scores but {cross_arr.size} cross-encoder scores")
    if check_weight(weight) == 1.0:
        return cross_arr
    return weight * _standardise(cross_arr) + (1.0 - weight) * _standardise(first_arr)


def fused_order(first: Sequence[float], cross: Sequence[float],
                weight: float = RERANK_WEIGHT) -> tuple[np.ndarray, list[int]]:
    """The fused scores (:func:`fuse`) and the candidate positions in their order, best first.

    Ties keep the first-stage order (the candidates come best first).
    """
    scores = fuse(first, cross, weight)
    return scores, sorted(range(len(scores)), key=lambda i: (-float(scores[i]), i))
