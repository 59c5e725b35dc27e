"""Recall at a cutoff (R@k) and Shi et al.'s recall at R (R = the query's relevant count)."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from radsift.evaluation.metrics.judged import Judged, check_k


def recall(ranked: Sequence[str], qrels: Mapping[str, int], k: int | None = None) -> float:
    """Fraction of the query's relevant documents found in the top ``k``.

    Args:
        ranked: Docids, best first.
        qrels: The query's judgments ``{docid: relevance}``; relevant means relevance > 0.
        k: The cutoff; None means the whole ranking.

    Returns:
        R@k in [0, 1]; 0 when the query has no relevant document.
    """
    check_k(k)
    return recall_of(Judged.of(ranked, qrels), k)


def recall_of(judged: Judged, k: int | None = None) -> float:
    """:func:`recall` on a prepared :class:`Judged`."""
    if judged.n_relevant == 0:
        return 0.0
    return float(np.count_nonzero(judged.top(k)) / judged.n_relevant)


def recall_at_r(ranked: Sequence[str], qrels: Mapping[str, int]) -> float:
    """Shi et al.'s "recall": relevant documents retrieved in the top R, divided by R.

    R is the size of the query's ground-truth list (its number of relevant documents). With
    the cutoff equal to the divisor this is numerically R-precision (trec_eval's ``Rprec``,
    ranx's ``r-precision``); its mean over queries is the paper's "mean recall".

    Args:
        ranked: Docids, best first.
        qrels: The query's judgments ``{docid: relevance}``; relevant means relevance > 0.

    Returns:
        A value in [0, 1]; 0 when the query has no relevant document.
    """
    return recall_at_r_of(Judged.of(ranked, qrels))


def recall_at_r_of(judged: Judged, k: int | None = None) -> float:
    """:func:`recall_at_r` on a prepared :class:`Judged` (``k`` is ignored)."""
    if judged.n_relevant == 0:
        return 0.0
    return float(np.count_nonzero(judged.hits[: judged.n_relevant]) / judged.n_relevant)
