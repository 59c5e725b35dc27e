"""Rank a search: the ranking core over its scores and tiers, then the cross-encoder over the head.

:func:`rank_units` ranks units (``level="sentence"``) or reports by their best unit (``report``)
with :mod:`radsift.ranking` (fusion, reading tiers, top-k), deep enough for the page and the
rerank; :func:`rerank_head` re-scores the top ``rerank`` with the cross-encoder, within each reading
tier (negation-aware search keeps the tiers: the cross-encoder reorders inside a tier, never across).
"""

from __future__ import annotations

import numpy as np

from radsift.index.reader import IndexStore
from radsift.ranking import rank, rank_groups
from radsift.ranking import rerank as rerank_core
from radsift.search.options import SearchRequest

#: One ranked entry: (report row, unit row, score).
Picked = tuple[int, int, float]


def rank_units(store: IndexStore, request: SearchRequest, scores: dict, tiers, gap: float | None) -> list[Picked]:
    """The ranked list down to the page's end (or the rerank depth), best first."""
    opts = request.options
    report_of = store.units(opts.unit).report_row
    depth = max(opts.offset + opts.k, opts.rerank)
    if opts.level == "sentence":
        rows, vals = rank(opts.mode, depth, tiers=tiers, gap=gap, **scores)
        return list(zip(report_of[rows].tolist(), rows.tolist(), np.asarray(vals, np.float64).tolist()))
    groups, rows, vals = rank_groups(opts.mode, depth, report_of, tiers=tiers, gap=gap, **scores)
    return list(zip(groups.tolist(), rows.tolist(), np.asarray(vals, np.float64).tolist()))


def rerank_head(request: SearchRequest, picked: list[Picked], units: dict, tiers, reranker) -> list[Picked]:
    """The cross-encoder over the top ``rerank`` entries, within each reading tier; the tail keeps its order."""
    head, tail = picked[:request.options.rerank], picked[request.options.rerank:]
    cross = reranker.score(request.query, [units[u].text for _, u, _ in head])
    head_tiers = None if tiers is None else _tiers_at(tiers, [u for _, u, _ in head])
    order, scores = rerank_core([s for _, _, s in head], cross, getattr(reranker, "weight", 1.0), head_tiers,
                                [s for _, _, s in tail])
    both = head + tail
    return [(both[i][0], both[i][1], float(s)) for i, s in zip(order, scores)]


def _tiers_at(tiers, rows: list[int]) -> np.ndarray:
    """The tiers of ``rows``: from every unit's array, or from a function of sorted rows (the candidate engine)."""
    if not callable(tiers):
        return np.asarray(tiers)[rows]
    uniq, inv = np.unique(np.asarray(rows, dtype=np.int64), return_inverse=True)
    return np.asarray(tiers(uniq))[inv]
