"""A ranking over a candidate pool: the ranking core's fusion, tiers and top-k at some units only.

The candidate engine (:mod:`radsift.search.candidates`) ranks a pool of units (the best BM25 matches,
the best dense ones) instead of every unit. What it needs of the ranking core, computed the same way
(float64 normalisation, float32 results, ties by the lower row), is here: the BM25 scores of the units
holding a query term (:func:`bm25_sparse`), the min-max ends of the whole corpus applied to any units
(:class:`Sides`), the best dense rows (:func:`dense_top`) and the top entries of a pool (:func:`top_entries`).
"""

from __future__ import annotations

import numpy as np

from radsift.ranking.aggregate import best_per_group
from radsift.text.tokens import tokenize

#: Postings longer than a ``1 / DENSE_SHARE`` share of the units are summed in one array over every unit.
DENSE_SHARE = 16


def bm25_sparse(retriever, query: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(sorted rows, BM25 scores) of every unit holding a query term: the nonzero entries of
    :func:`radsift.ranking.bm25_scores`, bit for bit (float32, summed in query-token order)."""
    vocab = retriever.vocab_dict
    tokens = [t for t in tokenize(query) if t in vocab]
    posts = [retriever.postings(t) for t in tokens]
    posts = [(np.asarray(g, dtype=np.int64), w, idf) for g, w, idf in posts if idf]
    if not posts or n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    size = sum(g.shape[0] for g, _, _ in posts)
    if len(posts) > 1 and size * DENSE_SHARE > n:
        # Long postings: a scatter into one array over every unit beats sorting them (as the exact engine).
        full = np.zeros(max(n, int(max(int(g.max(initial=-1)) for g, _, _ in posts)) + 1), dtype=np.float32)
        for g, w, idf in posts:
            full[g] += np.float32(idf) * w
        rows = np.flatnonzero(full[:n])
        return rows, full[rows]
    rows = posts[0][0] if len(posts) == 1 else np.unique(np.concatenate([g for g, _, _ in posts]))
    out = np.zeros(rows.shape[0], dtype=np.float32)
    for g, w, idf in posts:
        out[np.searchsorted(rows, g)] += np.float32(idf) * w
    keep = rows < n
    rows, out = rows[keep], out[keep]
    nonzero = out > 0  # as the exact engine: a unit scoring 0 is no match
    return rows[nonzero], out[nonzero]


def min_max_with(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """:func:`radsift.ranking.min_max` of ``values`` with the ends of the whole array."""
    values = np.asarray(values, dtype=np.float64)
    span = high - low
    return (values - low) / span if span > 0 else np.zeros_like(values)


class Sides:
    """The two sides' scores of any unit, with the ends (over every unit) the exact engine normalises by."""

    def __init__(self, mode: str, alpha: float, dense: np.ndarray | None, bm_rows: np.ndarray, bm_vals: np.ndarray,
                 n: int) -> None:
        self.mode, self.alpha, self.dense, self.bm_rows, self.bm_vals, self.n = mode, alpha, dense, bm_rows, bm_vals, n
        self._matches: np.ndarray | None = None
        self.bmax = float(bm_vals.max()) if bm_vals.size else 0.0
        self.bmin = 0.0 if bm_rows.size < n else float(bm_vals.min(initial=0.0))
        if dense is not None and n:
            self.dmax, self.dmin = float(np.float64(dense.max())), float(np.float64(dense.min()))

    def bm25(self, rows: np.ndarray) -> np.ndarray:
        pos = np.minimum(np.searchsorted(self.bm_rows, rows), max(self.bm_rows.size - 1, 0))
        if not self.bm_rows.size:
            return np.zeros(rows.size, dtype=np.float32)
        return np.where(self.bm_rows[pos] == rows, self.bm_vals[pos], np.float32(0)).astype(np.float32)

    def fuse(self, dense: np.ndarray, bm25: np.ndarray) -> np.ndarray:
        a = self.alpha
        return (a * min_max_with(dense, self.dmin, self.dmax) + (1.0 - a) * min_max_with(bm25, self.bmin, self.bmax)).astype(np.float32)

    def base(self, rows: np.ndarray) -> np.ndarray:
        """The score before tiers (:func:`radsift.ranking.core.base_scores` at ``rows``)."""
        return self.base_of(rows, self.bm25(rows) if self.mode != "dense" else None)

    def base_of(self, rows: np.ndarray, bm25: np.ndarray | None) -> np.ndarray:
        """The score before tiers of ``rows`` whose BM25 scores are ``bm25``."""
        if self.mode == "dense":
            return self.dense[rows]
        if self.mode == "bm25":
            return bm25
        return self.fuse(self.dense[rows], bm25)

    def matches_base(self) -> np.ndarray:
        """The base score of every BM25 match (of :attr:`bm_rows`), computed once."""
        if self._matches is None:
            self._matches = self.base_of(self.bm_rows, self.bm_vals)
        return self._matches

    def spread(self) -> float:
        """``max - min`` of the base score over every unit (float32, as :func:`radsift.ranking.apply_tiers`)."""
        if self.mode == "dense":
            return float(self.dense.max() - self.dense.min())
        if self.mode == "bm25":
            return float(np.float32(self.bmax) - np.float32(self.bmin))
        vals = [self.matches_base()]
        if self.bm_rows.size < self.n:  # units sharing no term: their fused score is the dense share alone
            hi, lo = int(np.argmax(self.dense)), int(np.argmin(self.dense))
            in_bm = member(self.bm_rows, np.array([hi, lo]))
            rest = self.dense[[hi, lo]] if not in_bm.any() else np.delete(self.dense, self.bm_rows)
            vals.append(self.fuse(np.array([rest.max(), rest.min()], dtype=self.dense.dtype), np.zeros(2, np.float32)))
        allv = np.concatenate(vals)
        return float(allv.max() - allv.min())

    def bound(self, d_k: float, b_k: float = 0.0) -> np.float32:
        """The highest base score of a unit outside the candidates (cosine at most ``d_k``, BM25 at most ``b_k``)."""
        if self.mode == "dense":
            return np.float32(d_k)
        return self.fuse(np.array([d_k], dtype=self.dense.dtype), np.array([b_k], dtype=np.float32))[0]


def member(sorted_rows: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Whether each of ``rows`` is in ``sorted_rows``."""
    if not sorted_rows.size:
        return np.zeros(rows.size, dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_rows, rows), sorted_rows.size - 1)
    return sorted_rows[pos] == rows


def dense_top(dense: np.ndarray, mask, k: int, n_elig: int) -> tuple[np.ndarray, float | None]:
    """The ``k`` best eligible rows by cosine and the lowest of their cosines (None: every eligible row)."""
    if k >= n_elig:
        return (np.arange(dense.shape[0]) if mask is None else np.flatnonzero(mask)), None
    if mask is None:
        top = np.argpartition(-dense, k - 1)[:k]
        return top, float(dense[top].min())
    rows = np.flatnonzero(mask)
    vals = dense[rows]
    top = np.argpartition(-vals, k - 1)[:k]
    return rows[top], float(vals[top].min())


def top_entries(level: str, cand: np.ndarray, scores: np.ndarray, depth: int, report_row: np.ndarray) -> list:
    """The first ``depth`` entries (units, or reports by their best unit) of ``cand`` ranked by
    ``(score, row)``: :func:`radsift.ranking.top_k` with the units' own rows breaking ties."""
    m = depth if level == "sentence" else max(10 * depth, 100)
    while True:
        if m < cand.size:
            part = np.argpartition(-scores, m - 1)[:m]
            sel = np.flatnonzero(scores >= scores[part].min())  # every row tied with the m-th
        else:
            sel = np.arange(cand.size)
        order = sel[np.lexsort((cand[sel], -scores[sel]))]
        rows, vals = cand[order], scores[order]
        if level == "sentence":
            return list(zip(report_row[rows[:depth]].tolist(), rows[:depth].tolist(),
                            np.asarray(vals[:depth], np.float64).tolist()))
        groups, urows, uvals = best_per_group(rows, vals, report_row, depth)
        if len(groups) >= depth or sel.size == cand.size:
            return list(zip(groups.tolist(), urows.tolist(), np.asarray(uvals, np.float64).tolist()))
        m *= 4
