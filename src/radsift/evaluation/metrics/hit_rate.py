"""Hit rate at a cutoff (success@k): is any relevant document in the top k."""

from __future__ import annotations

from typing import Mapping, Sequence

from radsift.evaluation.metrics.judged import Judged, check_k


def hit_rate(ranked: Sequence[str], qrels: Mapping[str, int], k: int | None = None) -> float:
    """1.0 when a relevant document is ranked in the top ``k``, else 0.0.

    Its mean over queries is a top-k match rate (RadSearch's top-5 findings-to-impression
    match); per query it is the paired binary outcome McNemar's test compares.

    Args:
        ranked: Docids, best first.
        qrels: The query's judgments ``{docid: relevance}``; relevant means relevance > 0.
        k: The cutoff; None means the whole ranking.
    """
    check_k(k)
    return hit_rate_of(Judged.of(ranked, qrels), k)


def hit_rate_of(judged: Judged, k: int | None = None) -> float:
    """:func:`hit_rate` on a prepared :class:`Judged`."""
    return 1.0 if judged.top(k).any() else 0.0
