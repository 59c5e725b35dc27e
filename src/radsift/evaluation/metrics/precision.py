"""Precision at a cutoff (P@k)."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from radsift.evaluation.metrics.judged import Judged, check_k


def precision(ranked: Sequence[str], qrels: Mapping[str, int], k: int | None = None) -> float:
    """Fraction of the top ``k`` ranks that hold a relevant document.

    As in trec_eval and ranx the divisor is ``k`` even when fewer than ``k`` documents were
    retrieved (missing ranks count as non-relevant).

    Args:
        ranked: Docids, best first.
        qrels: The query's judgments ``{docid: relevance}``; relevant means relevance > 0.
        k: The cutoff; None means the whole ranking (divisor = its length).

    Returns:
        P@k in [0, 1]; 0 for an empty ranking without cutoff.
    """
    check_k(k)
    return precision_of(Judged.of(ranked, qrels), k)


def precision_of(judged: Judged, k: int | None = None) -> float:
    """:func:`precision` on a prepared :class:`Judged`."""
    depth = judged.gains.size if k is None else k
    if depth == 0:
        return 0.0
    return float(np.count_nonzero(judged.top(k)) / depth)
