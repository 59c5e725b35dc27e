"""Normalized discounted cumulative gain (nDCG@k) with graded relevance."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from radsift.evaluation.metrics.judged import Judged, check_k

# log2(rank + 1) for ranks 1..n, grown on demand and shared by every query.
_log2_table = np.log2(np.arange(2, 1002, dtype=np.float64))


def _log2_discounts(n: int) -> np.ndarray:
    global _log2_table
    if n > _log2_table.size:
        _log2_table = np.log2(np.arange(2, max(n, 2 * _log2_table.size) + 2, dtype=np.float64))
    return _log2_table[:n]


def _dcg(gains: np.ndarray) -> float:
    return float(np.sum(gains / _log2_discounts(gains.size)))


def ndcg(ranked: Sequence[str], qrels: Mapping[str, int], k: int | None = None) -> float:
    """nDCG of one query's ranking, Järvelin & Kekäläinen's form (as trec_eval and ranx).

    DCG@k = sum over ranks i <= k of rel_i / log2(i + 1), with the gain rel_i the judged
    relevance (0 for unjudged or non-relevant documents); nDCG@k divides it by the DCG@k of
    the ideal ranking (all relevant documents, most relevant first).

    Args:
        ranked: Docids, best first.
        qrels: The query's judgments ``{docid: relevance}``; gains are the relevances > 0.
        k: The cutoff; None means the whole ranking (and the whole ideal ranking).

    Returns:
        nDCG in [0, 1]; 0 when the query has no relevant document.
    """
    check_k(k)
    return ndcg_of(Judged.of(ranked, qrels), k)


def ndcg_of(judged: Judged, k: int | None = None) -> float:
    """:func:`ndcg` on a prepared :class:`Judged`."""
    if judged.n_relevant == 0:
        return 0.0
    ideal = _dcg(judged.ideal[:k])
    return _dcg(judged.gains[:k]) / ideal if ideal > 0 else 0.0
