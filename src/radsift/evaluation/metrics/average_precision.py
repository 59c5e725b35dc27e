"""Average precision (AP; its mean over queries is mAP)."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from radsift.evaluation.metrics.judged import Judged, check_k


def average_precision(ranked: Sequence[str], qrels: Mapping[str, int], k: int | None = None) -> float:
    """Average precision of one query's ranking.

    The sum of precision@r over the ranks r (within the top ``k``) that hold a relevant
    document, divided by the number of relevant documents of the query, retrieved or not
    (trec_eval's and ranx's definition; ranx's ``map@k`` also divides by all relevant).

    Args:
        ranked: Docids, best first.
        qrels: The query's judgments ``{docid: relevance}``; relevant means relevance > 0.
        k: Only the top ``k`` ranks count; None means the whole ranking.

    Returns:
        AP in [0, 1]; 0 when the query has no relevant document.
    """
    check_k(k)
    return average_precision_of(Judged.of(ranked, qrels), k)


def average_precision_of(judged: Judged, k: int | None = None) -> float:
    """:func:`average_precision` on a prepared :class:`Judged`."""
    if judged.n_relevant == 0:
        return 0.0
    ranks = np.flatnonzero(judged.top(k)) + 1
    if ranks.size == 0:
        return 0.0
    # At the i-th relevant rank r, precision@r is i / r.
    return float(np.sum(np.arange(1, ranks.size + 1) / ranks) / judged.n_relevant)
