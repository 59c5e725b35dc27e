"""Ranking metrics, one per module, with conventions matching ranx (and trec_eval).

Each metric is a function over one query's ranked docids and its judgments ``{docid: rel}``
(:func:`average_precision`, :func:`precision`, :func:`recall`, :func:`recall_at_r`,
:func:`ndcg`, :func:`reciprocal_rank`, :func:`hit_rate`); :func:`evaluate` scores a whole run.

Conventions (the same as ``ranx.evaluate(..., make_comparable=True)``):

- a document is relevant when its judged relevance is > 0; nDCG uses the relevance as gain;
- every query of the qrels is scored, those the run does not answer score 0, queries whose
  judgments are all non-relevant score 0 too (and count in the mean);
- run queries absent from the qrels are ignored;
- without a cutoff a metric covers the whole ranking (``map`` is AP over the full run).

Metric names: ``map``, ``p@k``, ``r@k``, ``ndcg@k``, ``mrr``, ``hit@k`` and ``recall@R``
(Shi et al.'s recall at R, R = the query's number of relevant documents). Aliases:
``ap``; ``precision@k``; ``recall@k``; ``rr``/``recip_rank``; ``hit_rate@k``/``success@k``;
``r@R``/``rprec``/``r-precision``. ``map``, ``p``, ``r``, ``ndcg``, ``mrr`` and ``hit`` take an
optional ``@k`` cutoff.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

from radsift.evaluation._gc import gc_paused
from radsift.evaluation.errors import EvaluationError
from radsift.evaluation.metrics.average_precision import average_precision, average_precision_of
from radsift.evaluation.metrics.hit_rate import hit_rate, hit_rate_of
from radsift.evaluation.metrics.judged import Judged
from radsift.evaluation.metrics.ndcg import ndcg, ndcg_of
from radsift.evaluation.metrics.precision import precision, precision_of
from radsift.evaluation.metrics.recall import recall, recall_at_r, recall_at_r_of, recall_of
from radsift.evaluation.metrics.reciprocal_rank import reciprocal_rank, reciprocal_rank_of
from radsift.evaluation.ranking import Entry, ranked_docids

__all__ = [
    "DEFAULT_METRICS",
    "Judged",
    "Metric",
    "average_precision",
    "evaluate",
    "hit_rate",
    "ndcg",
    "parse_metric",
    "precision",
    "recall",
    "recall_at_r",
    "reciprocal_rank",
]

DEFAULT_METRICS: tuple[str, ...] = ("map", "p@10", "r@100", "ndcg@10", "mrr")

# canonical kind -> (function on a Judged, label shown in tables)
_KINDS: dict[str, tuple[Callable[[Judged, int | None], float], str]] = {
    "map": (average_precision_of, "mAP"),
    "p": (precision_of, "P"),
    "r": (recall_of, "R"),
    "ndcg": (ndcg_of, "nDCG"),
    "mrr": (reciprocal_rank_of, "MRR"),
    "hit": (hit_rate_of, "Hit"),
    "recall@R": (recall_at_r_of, "Recall@R"),
}
_ALIASES = {
    "map": "map",
    "ap": "map",
    "p": "p",
    "precision": "p",
    "r": "r",
    "recall": "r",
    "ndcg": "ndcg",
    "mrr": "mrr",
    "rr": "mrr",
    "recip_rank": "mrr",
    "hit": "hit",
    "hit_rate": "hit",
    "success": "hit",
    "rprec": "recall@R",
    "r-precision": "recall@R",
    "r_precision": "recall@R",
}


@dataclass(frozen=True)
class Metric:
    """A parsed metric name.

    Attributes:
        name: The name as the caller wrote it (the key in :func:`evaluate`'s results).
        kind: The canonical metric (``map``, ``p``, ``r``, ``ndcg``, ``mrr``, ``hit``, ``recall@R``).
        k: The cutoff, or None for the whole ranking.
    """

    name: str
    kind: str
    k: int | None = None

    @property
    def label(self) -> str:
        """A display label such as ``mAP``, ``P@10`` or ``nDCG@10``."""
        base = _KINDS[self.kind][1]
        return base if self.k is None else f"{base}@{self.k}"

    def score(self, judged: Judged) -> float:
        """The metric's value for one prepared query."""
        return _KINDS[self.kind][0](judged, self.k)


def parse_metric(name: str) -> Metric:
    """Parse ``"ndcg@10"``, ``"map"``, ``"recall@R"`` ... into a :class:`Metric`.

    Raises:
        EvaluationError: Unknown metric, or a cutoff that is not a positive integer (the
            message lists the known metrics).
    """
    text = str(name).strip()
    base, _, cutoff = text.partition("@")
    base = base.lower()
    known = "map, p@k, r@k, ndcg@k, mrr, hit@k, recall@R (aliases: see radsift.evaluation.metrics)"
    if base in ("r", "recall") and cutoff in ("R", "r"):
        return Metric(name=text, kind="recall@R")
    kind = _ALIASES.get(base)
    if kind is None:
        raise EvaluationError(f"unknown metric {text!r}; known: {known}")
    if not cutoff:
        if "@" in text:
            raise EvaluationError(f"metric {text!r}: missing cutoff after '@'")
        return Metric(name=text, kind=kind)
    if kind == "recall@R":
        raise EvaluationError(f"metric {text!r} takes no cutoff (its cutoff is the query's relevant count)")
    if not cutoff.isdigit() or int(cutoff) < 1:
        raise EvaluationError(f"metric {text!r}: cutoff {cutoff!r} is not a positive integer")
    return Metric(name=text, kind=kind, k=int(cutoff))


def evaluate(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Sequence[Entry] | Sequence[str] | Mapping[str, float]],
    metrics: Iterable[str] = DEFAULT_METRICS,
) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """Score a run against qrels.

    Args:
        qrels: Query id to ``{docid: relevance}`` (relevant when > 0).
        run: Query id to ``(docid, score)`` pairs in any order or a ``{docid: score}`` mapping
            (ranked by score, ties as trec_eval breaks them), or to docids already in rank order.
        metrics: Metric names (see the module docstring), keys of the results as written.

    Returns:
        ``(per_query, mean)``: ``per_query[qid][metric]`` for every qrels query (in qrels
        order) and ``mean[metric]`` over those queries.

    Raises:
        EvaluationError: Empty qrels, an unknown metric, or a run entry that ranks a document
            twice or has a NaN score.
    """
    parsed = [parse_metric(m) for m in metrics]
    if not parsed:
        raise EvaluationError("no metric to compute")
    if not qrels:
        raise EvaluationError("the qrels hold no query")
    per_query: dict[str, dict[str, float]] = {}
    with gc_paused():
        for qid, judgments in qrels.items():
            judged = Judged.of(ranked_docids(run.get(qid, ()), qid), judgments)
            per_query[qid] = {m.name: m.score(judged) for m in parsed}
    mean = {
        m.name: float(np.mean(np.fromiter((s[m.name] for s in per_query.values()), dtype=np.float64)))
        for m in parsed
    }
    return per_query, mean
