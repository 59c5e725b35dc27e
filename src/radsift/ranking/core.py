"""The ranking core: dense and BM25 scores of every unit in, a best-first unit ranking out.

``radsift search``, the ``radsift bench`` systems and the training evaluation all rank here, so
what is measured is what users get. The steps, each in its own module:

1. the scores: dense cosine (a vector backend) and BM25 (:mod:`.bm25`), computed by the caller;
2. fusion of the two (:mod:`.fusion`): ``hybrid`` is their convex combination, ``hybrid-rrf``
   reciprocal rank fusion of their whole rankings (every eligible unit, so that a page deep in
   the list ranks exactly as it does on the first page);
3. reading tiers (:mod:`.tiers`): negation-aware ranking orders units by what they state about
   the query's findings (the same reading first, the opposite last), then by score;
4. top-k (:mod:`.topk`), then optionally the best unit per report (:mod:`.aggregate`);
5. an optional rerank of the head by a cross-encoder (:func:`rerank`), scores kept decreasing.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from radsift.ranking.aggregate import best_per_group
from radsift.ranking.fusion import DENSE_WEIGHT, RERANK_WEIGHT, RRF_K, convex_combination, fused_order
from radsift.ranking.tiers import apply_tiers
from radsift.ranking.topk import top_k

#: Ranking modes: ``hybrid`` (convex combination, the default), ``dense``, ``bm25``, ``hybrid-rrf``.
MODES = ("dense", "bm25", "hybrid", "hybrid-rrf")
#: Which scores each mode needs.
NEEDS_DENSE = {"hybrid": True, "dense": True, "bm25": False, "hybrid-rrf": True}
NEEDS_BM25 = {"hybrid": True, "dense": False, "bm25": True, "hybrid-rrf": True}


def _and(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    if a is None:
        return b
    return a if b is None else (a & b)


def rank(mode: str, n: int | None, *, dense: np.ndarray | None = None, bm25: np.ndarray | None = None,
         mask: np.ndarray | None = None, tiers: np.ndarray | None = None, gap: float | None = None,
         keep: np.ndarray | None = None, alpha: float = DENSE_WEIGHT) -> tuple[np.ndarray, np.ndarray]:
    """The best ``n`` units of one query, best first.

    Args:
        mode: One of :data:`MODES`.
        n: How many units (None = every eligible unit).
        dense: Dense score of every unit (modes that use it).
        bm25: BM25 score of every unit (modes that use it); a unit scoring 0 shares no term
            with the query and is not a BM25 match (``bm25`` mode leaves it out).
        mask: Eligible units (filters, targets, excluded rows); None = all.
        tiers: Reading tier of every unit (:func:`~.tiers.unit_tiers`; 0 = best): units rank by
            tier, then score. None = plain similarity.
        gap: None = strict tiers; a number = calibrated boosts (:func:`~.tiers.apply_tiers`).
        keep: Units BM25 retrieves even when they share no term with the query (those stating
            the query's reading: "Heart size is normal." for "no cardiomegaly").
        alpha: Dense share of the ``hybrid`` convex combination.

    Returns:
        ``(rows, scores)``, scores non-increasing.
    """
    if mode == "hybrid":  # fuse the raw scores, then apply tiers: normalisation sees true scores
        return top_k(apply_tiers(convex_combination(dense, bm25, alpha), tiers, gap), n, mask)
    if mode == "dense":
        return top_k(apply_tiers(dense, tiers, gap), n, mask)
    matched = None if bm25 is None else (bm25 > 0 if keep is None else (bm25 > 0) | keep)
    if mode == "bm25":
        return top_k(apply_tiers(bm25, tiers, gap), n, _and(mask, matched))
    if mode == "hybrid-rrf":
        d_rows, _ = top_k(apply_tiers(dense, tiers, gap), None, mask)
        b_rows, _ = top_k(apply_tiers(bm25, tiers, gap), None, _and(mask, matched))
        scores, listed = _rrf(len(dense), d_rows, b_rows)
        if tiers is not None:
            # Ranks carry no score gap: a unit of a worse tier high on one side could still out-fuse
            # a unit on only one list, so the tiers apply again to the fused scores.
            scores = apply_tiers(scores, tiers, gap)
        return top_k(scores, n, listed)
    raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")


def _rrf(n_units: int, *rankings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Reciprocal rank fusion of whole rankings, vectorised: ``sum 1 / (RRF_K + rank)`` per unit
    (float32, as :func:`~.fusion.reciprocal_rank_fusion`) and which units any ranking lists."""
    fused = np.zeros(n_units, dtype=np.float64)
    listed = np.zeros(n_units, dtype=bool)
    for rows in rankings:
        rows = np.asarray(rows, dtype=np.int64)
        fused[rows] += 1.0 / (RRF_K + np.arange(1, rows.size + 1, dtype=np.float64))
        listed[rows] = True
    return fused.astype(np.float32), listed


def eligible(mode: str, *, bm25: np.ndarray | None = None, mask: np.ndarray | None = None,
             keep: np.ndarray | None = None, n_units: int) -> np.ndarray:
    """Which units :func:`rank` ranks at all (with ``n=None``): the mask, and for ``bm25`` the units
    sharing a term with the query (or in ``keep``). The counts of a search come from it."""
    out = np.ones(n_units, dtype=bool) if mask is None else np.asarray(mask, dtype=bool).copy()
    if mode == "bm25" and bm25 is not None:
        out &= (bm25 > 0) if keep is None else ((bm25 > 0) | keep)
    return out


def base_scores(mode: str, *, dense: np.ndarray | None = None, bm25: np.ndarray | None = None,
                alpha: float = DENSE_WEIGHT) -> np.ndarray:
    """Every unit's score before reading tiers, on the scale relevance bands read (:mod:`.bands`):
    the cosine (``dense``), BM25 (``bm25``), or the convex combination (both hybrids: a rank fusion
    has no score distribution to read)."""
    if mode == "dense":
        return np.asarray(dense)
    if mode == "bm25":
        return np.asarray(bm25)
    return convex_combination(dense, bm25, alpha)


def rank_groups(mode: str, k: int | None, group_of: np.ndarray, **scores) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The best ``k`` groups (reports) of one query, each standing on its best unit.

    Scores once and widens only the cut-off: the unit ranking is cut at ``max(10 k, 100)`` and
    widened (x4) until ``k`` distinct groups are found or every unit is ranked.

    Args:
        mode: One of :data:`MODES`.
        k: How many groups (None = all).
        group_of: Group of every unit row.
        **scores: ``dense``, ``bm25``, ``mask``, ``tiers``, ``gap``, ``keep``, ``alpha`` as for :func:`rank`.

    Returns:
        ``(groups, unit_rows, scores)``, best first.
    """
    total = int(np.asarray(group_of).shape[0])
    # A rank fusion ranks every unit anyway (see rank): no cut-off to widen.
    n = None if k is None or mode == "hybrid-rrf" else max(10 * k, 100)
    while True:
        rows, vals = rank(mode, n, **scores)
        picked = best_per_group(rows, vals, group_of, k)
        if n is None or len(picked[0]) >= k or len(rows) < n or n >= total:
            return picked
        n *= 4


def rerank(first: Sequence[float], cross: Sequence[float], weight: float = RERANK_WEIGHT,
           tiers: Sequence[int] | None = None, tail: Sequence[float] = ()) -> tuple[list[int], np.ndarray]:
    """Reorder a reranked head and keep every score below the one before it.

    The head (first-stage scores ``first``, cross-encoder scores ``cross``) is ordered by the
    fused score (:func:`~.fusion.fused_order`). With ``tiers`` (negation-aware search), each
    reading tier of the head is reranked on its own and placed below the tier before it, so the
    cross-encoder reorders within a tier and never across. The ``tail`` (first-stage scores of the units after the head)
    keeps its order, shifted below the head, so that scores decrease with rank in every path.

    Returns:
        ``(positions, scores)``: positions into ``first + tail`` in their new order and the
        score each gets (float64, non-increasing).
    """
    first = np.asarray(first, dtype=np.float64)
    cross = np.asarray(cross, dtype=np.float64)
    groups = [np.arange(first.size)]
    if tiers is not None:
        tiers = np.asarray(tiers)
        groups = [np.flatnonzero(tiers == t) for t in np.unique(tiers)]
    positions: list[int] = []
    scores: list[float] = []
    for members in groups:
        if not members.size:
            continue
        fused, order = fused_order(first[members], cross[members], weight)
        fused = fused[order]
        if scores:  # below the group before it
            fused = fused - (fused[0] - (scores[-1] - 1.0))
        positions += [int(members[i]) for i in order]
        scores += fused.tolist()
    tail = np.asarray(tail, dtype=np.float64)
    if tail.size:
        floor = (scores[-1] if scores else 0.0) - 1.0
        positions += list(range(first.size, first.size + tail.size))
        scores += (tail - (tail[0] - floor)).tolist()
    return positions, np.asarray(scores, dtype=np.float64)
