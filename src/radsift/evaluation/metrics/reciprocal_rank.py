"""Reciprocal rank of the first relevant document (its mean over queries is MRR)."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from radsift.evaluation.metrics.judged import Judged, check_k


def reciprocal_rank(ranked: Sequence[str], qrels: Mapping[str, int], k: int | None = None) -> float:
    """1 / rank of the first relevant document in the top ``k``.

    Args:
        ranked: Docids, best first.
        qrels: The query's judgments ``{docid: relevance}``; relevant means relevance > 0.
        k: The cutoff; None means the whole ranking.

    Returns:
        A value in (0, 1], or 0 when no relevant document is ranked within the cutoff.
    """
    check_k(k)
    return reciprocal_rank_of(Judged.of(ranked, qrels), k)


def reciprocal_rank_of(judged: Judged, k: int | None = None) -> float:
    """:func:`reciprocal_rank` on a prepared :class:`Judged`."""
    hits = judged.top(k)
    if not hits.any():
        return 0.0
    return 1.0 / (int(np.argmax(hits)) + 1)
