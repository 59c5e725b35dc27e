"""A ranking over a candidate pool: the ranking core's fusion, tiers and top-k at some units only.

The candidate engine (:mod:`radsift.search.candidates`) ranks a pool of units (the best BM25 matches,
the best dense ones) instead of every unit. What it needs of the ranking core, computed the same way
(float64 normalisation, float32 results, ties by the lower row), is here: the BM25 scores of the units
holding a query term (:func:`bm25_sparse`) and its best matches read best weight first (:class:`BM25Side`; a
term's impact order read as far as needed: :mod:`radsift.ranking.impacts`),
a backend's cosines at any rows without an array over every row (:class:`DenseScores`), the min-max ends
of the whole corpus applied to any units (:class:`Sides`), the best dense rows (:func:`dense_top`) and
the top entries of a pool (:func:`top_entries`).
"""

from __future__ import annotations

import numpy as np

from radsift.ranking.aggregate import best_per_group
from radsift.ranking.impacts import Impacts
from radsift.text.tokens import tokenize

#: Postings longer than a ``1 / DENSE_SHARE`` share of the units are summed in one array over every unit.
DENSE_SHARE = 16


def bm25_sparse(retriever, query: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(sorted rows, BM25 scores) of every unit holding a query term: the nonzero entries of
    :func:`radsift.ranking.bm25_scores`, bit for bit (float32, summed in query-token order)."""
    vocab = retriever.vocab_dict
    tokens = [t for t in tokenize(query) if t in vocab]
    return _sparse([retriever.postings(t) for t in tokens], n)


def _sparse(posts: list, n: int, factors: list | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(sorted rows, scores) of every unit in ``posts`` (``(rows, w, idf)`` per term, in query order): each term adds
    ``idf * w`` (times its factor, a weighted query's weight: :func:`radsift.ranking.prf.weighted_bm25_scores`), in
    float32 and in order, as the exact engine's array over every unit."""
    factors = [None] * len(posts) if factors is None else factors
    posts = [(np.asarray(g, dtype=np.int64), w, idf, f) for (g, w, idf), f in zip(posts, factors) if idf]
    if not posts or n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    size = sum(g.shape[0] for g, _, _, _ in posts)
    if len(posts) > 1 and size * DENSE_SHARE > n:
        # Long postings: a scatter into one array over every unit beats sorting them (as the exact engine).
        full = np.zeros(max(n, int(max(int(g.max(initial=-1)) for g, _, _, _ in posts)) + 1), dtype=np.float32)
        for g, w, idf, f in posts:
            full[g] += _impact(idf, w, f)
        rows = np.flatnonzero(full[:n])
        return rows, full[rows]
    rows = posts[0][0] if len(posts) == 1 else np.unique(np.concatenate([g for g, _, _, _ in posts]))
    out = np.zeros(rows.shape[0], dtype=np.float32)
    for g, w, idf, f in posts:
        out[np.searchsorted(rows, g)] += _impact(idf, w, f)
    keep = rows < n
    rows, out = rows[keep], out[keep]
    nonzero = out > 0  # as the exact engine: a unit scoring 0 is no match
    return rows[nonzero], out[nonzero]


def _impact(idf, w: np.ndarray, factor=None) -> np.ndarray:
    """A term's score at its postings ``w``: ``idf * w`` in float32 (BM25's :meth:`get_scores`), times a weighted
    query's ``factor`` (float32) after it, as :func:`radsift.ranking.prf.weighted_bm25_scores` multiplies."""
    out = np.float32(idf) * w
    return out if factor is None else factor * out


def min_max_with(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """:func:`radsift.ranking.min_max` of ``values`` with the ends of the whole array."""
    values = np.asarray(values, dtype=np.float64)
    span = high - low
    return (values - low) / span if span > 0 else np.zeros_like(values)


class DenseScores:
    """A query's cosines at any rows: ``values`` at the sorted ``rows`` and ``fill`` at every other row, as an
    approximate backend gives them (``rows`` None: ``values`` holds every row). Work follows ``rows``.

    With duplicate groups (``node_of_row``: every row's group; ``groups``: ``(order, offsets)``, each group's
    rows), ``rows`` are sorted groups and ``values`` theirs: a group's rows are listed only when needed.
    """

    def __init__(self, n: int, values: np.ndarray, rows: np.ndarray | None = None, fill: float = 0.0,
                 node_of_row: np.ndarray | None = None, groups: tuple | None = None) -> None:
        values = np.asarray(values, dtype=np.float32)
        self.node_of_row, self.groups = (node_of_row, groups) if rows is not None else (None, None)
        self.sizes = None if self.groups is None else (groups[1][rows + 1] - groups[1][rows])
        scored = n if rows is None else rows.size if self.sizes is None else int(self.sizes.sum())
        if rows is not None and scored >= n and self.groups is None:
            rows = None  # every row scored: values is the whole array (rows sorted)
        self.n, self.values, self.rows, self.fill, self.scored = n, values, rows, np.float32(fill), scored
        self.dtype = values.dtype
        ends = [values] if rows is None or scored >= n else [values, np.array([self.fill], dtype=np.float32)]
        self.hi = max((float(np.float64(e.max())) for e in ends if e.size), default=0.0)
        self.lo = min((float(np.float64(e.min())) for e in ends if e.size), default=0.0)
        self._rows: tuple[np.ndarray, np.ndarray] | None = None

    def expanded(self) -> tuple[np.ndarray, np.ndarray]:
        """(sorted rows, values) of every scored row (a group's rows listed; kept)."""
        if self._rows is None:
            self._rows = (self.rows, self.values) if self.groups is None else self._listed(slice(None))
        return self._rows

    def _listed(self, which) -> tuple[np.ndarray, np.ndarray]:
        """(sorted rows, values) of the scored groups ``which`` selects (an index into :attr:`rows`), their rows
        listed: the work follows those groups, not every group scored."""
        order, offsets = self.groups
        nodes, lens = self.rows[which], self.sizes[which]
        within = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
        rows = np.asarray(order[np.repeat(offsets[nodes], lens) + within], dtype=np.int64)
        by_row = np.argsort(rows, kind="stable")
        return rows[by_row], np.repeat(self.values[which], lens)[by_row]

    def at(self, rows: np.ndarray) -> np.ndarray:
        """The cosines of ``rows``."""
        if self.rows is None:
            return self.values[rows]
        keys = rows if self.node_of_row is None else self.node_of_row[rows]
        return _at(self.rows, self.values, np.asarray(keys, dtype=np.int64), self.fill)

    def top(self, k: int, mask, n_elig: int) -> tuple[np.ndarray, float | None]:
        """The ``k`` best eligible rows (or a few more: whole groups) and the highest cosine any other eligible
        row can have (None: every eligible row). Past the scored rows, the rest share ``fill``: all scored rows,
        and ``fill``."""
        if self.rows is None:
            return dense_top(self.values, mask, k, n_elig)
        if k >= n_elig:
            return (np.arange(self.n) if mask is None else np.flatnonzero(mask)), None
        if mask is None and self.groups is not None and self.scored > k:
            order = np.argsort(-self.values, kind="stable")
            last = int(np.searchsorted(np.cumsum(self.sizes[order]), k))  # the group that reaches k rows
            return self._listed(order[:last + 1])[0], float(self.values[order[last]])
        rows, vals = self.expanded()
        if mask is not None:
            rows, vals = rows[mask[rows]], vals[mask[rows]]
        if k < rows.size:
            top = np.argpartition(-vals, k - 1)[:k]
            return rows[top], float(vals[top].min())
        return rows, float(self.fill)

    def lowest_rows(self, more_than: int) -> np.ndarray | None:
        """Rows at the lowest cosine (None: more than ``more_than`` of them, a count that bounds the caller's
        matches; then not listed)."""
        if self.rows is None:
            return np.array([int(np.argmin(self.values))])
        if self.fill <= np.float32(self.lo) and self.n - self.scored > more_than:
            return None
        if self.groups is not None and self._rows is None:  # only the groups at the lowest cosine listed
            return self._listed(np.flatnonzero(self.values == np.float32(self.lo)))[0]
        rows, vals = self.expanded()
        return rows[vals == np.float32(self.lo)]

    def outside(self, taken: np.ndarray) -> tuple[float, float] | None:
        """(max, min) cosine of the rows not in sorted ``taken`` (None: there are none)."""
        if self.rows is None:
            hi, lo = int(np.argmax(self.values)), int(np.argmin(self.values))
            if not member(taken, np.array([hi, lo])).any():
                return float(self.values[hi]), float(self.values[lo])
            rest = np.delete(self.values, taken)
            return (float(rest.max()), float(rest.min())) if rest.size else None
        rows, vals = self.expanded()
        rest = [vals[~member(taken, rows)]]
        if self.n - rows.size > taken.size - int(np.count_nonzero(member(rows, taken))):
            rest.append(np.array([self.fill], dtype=np.float32))  # some unscored row is not taken
        rest = np.concatenate(rest)
        return (float(rest.max()), float(rest.min())) if rest.size else None


#: A query's BM25 side is scored at every match when its terms' postings hold at most this many entries.
SMALL_POSTINGS = 4096
#: With a filter, the threshold top-k scores every match instead once a round would read ``1 / MASKED_DEEP`` of the
#: postings (a filter keeping 1% of the units reads about a hundred times deeper to find its ``k`` best).
MASKED_DEEP = 8


class BM25Side:
    """A query's BM25 scores (:func:`bm25_sparse`'s, bit for bit) at any units, its best matches and its ends.

    The best matches come from each term's postings read best weight first (:meth:`top`, a threshold
    top-k: a unit not read scores at most the sum of each term's next weight), so the work follows the
    matches asked for; every match (:meth:`matches`) only when a caller needs them all. With ``weights`` (term ->
    weight, RM3's after pseudo-relevance feedback) it is the weighted query's
    (:func:`radsift.ranking.prf.weighted_bm25_scores`, bit for bit): each term's impact is weight x BM25 and a unit
    not read scores at most the weighted sum of each term's next impact.
    """

    def __init__(self, retriever, query: str, n: int, first: int = 1, weights=None) -> None:
        self.retriever, self.query, self.n = retriever, query, n
        vocab = retriever.vocab_dict
        if weights is None:
            posts = [(t, None, *retriever.postings(t)) for t in tokenize(query) if t in vocab] if n else []
        else:  # a weighted term query (RM3): weight x BM25 per term, in the weights' order
            posts = [(t, np.float32(f), *retriever.postings(t)) for t, f in weights.items()
                     if t in vocab and f] if n else []
        posts = [p for p in posts if p[4]]
        self.terms = [(t, np.asarray(g, dtype=np.int64), w, np.float32(idf)) for t, _, g, w, idf in posts]
        #: Each term's factor (a weighted query's weight, float32), or None.
        self.factors = None if weights is None else [f for _, f, _, _, _ in posts]
        self.size = sum(g.shape[0] for _, g, _, _ in self.terms)  # postings, at least the matches
        self._all: tuple[np.ndarray, np.ndarray] | None = None
        if self.size <= SMALL_POSTINGS or self.size >= n:  # small, or perhaps every unit matches
            self.matches()
        every = self._all is not None and self._all[0].size >= n
        self.bmin = float(self._all[1].min(initial=0.0)) if every else 0.0
        self._first = None
        self._first = (first, self.top(first))  # the best matches of every unit: the first pool's, and the top
        best = self._first[1][1]
        self.bmax = float(best.max()) if best.size else 0.0

    def matches(self) -> tuple[np.ndarray, np.ndarray]:
        """(sorted rows, scores) of every unit holding a query term (:func:`bm25_sparse`), computed once."""
        if self._all is None:
            self._all = _sparse([(g, w, idf) for _, g, w, idf in self.terms], self.n, self.factors)
        return self._all

    def at(self, rows: np.ndarray) -> np.ndarray:
        """The BM25 scores of ``rows`` (0 where no term), summed in query-token order as :func:`bm25_sparse` does."""
        rows = np.asarray(rows, dtype=np.int64)
        if self._all is not None:
            return _at(*self._all, rows, np.float32(0))
        out = np.zeros(rows.size, dtype=np.float32)
        for i, (_, g, w, idf) in enumerate(self.terms):
            if g.size:
                pos = np.minimum(np.searchsorted(g, rows), g.size - 1)
                hit = g[pos] == rows
                out[hit] += _impact(idf, w[pos[hit]], self._factor(i))
        return out

    def _factor(self, i: int):
        return None if self.factors is None else self.factors[i]

    def top(self, k: int, mask=None) -> tuple[np.ndarray, np.ndarray, float]:
        """(sorted rows, scores) of the ``k`` best eligible matches and every one tied with the k-th, and the
        highest score any other eligible unit can have, below the k-th's (0.0: every eligible match is returned).

        A threshold top-k: each term's postings are read best weight first; a unit not read scores at most the
        sum of each term's next impact (:meth:`_next_bound`), and reading stops once the k-th best read scores
        above that. Every term reads its ``max(k, 64)`` best first; then only the term whose next impact is the
        highest (the one holding the bound up) reads on, doubling what it has read: a common term of low weight
        (``no``) is not read as deep as the rare ones."""
        if mask is None and self._first is not None and self._first[0] == k:
            return self._first[1]
        if self._all is not None or not self.terms:
            return self._best_match(k, mask)
        terms = [Impacts(self.retriever, t, g, w) for t, g, w, _ in self.terms]  # read as far as needed
        sizes = [g.size for _, g, _, _ in self.terms]
        read, ends = [0] * len(sizes), [min(max(k, 64), size) for size in sizes]
        rows, vals = np.zeros(0, np.int64), np.zeros(0, np.float32)
        while True:
            # each term's postings to its read end, and its next weight (the bound of a unit not read)
            lists = [(t.upto(e + 1).rows, t.weights) for t, e in zip(terms, ends)]
            # the units first reached in this round (each scored once, over every term)
            new = np.unique(np.concatenate([g[r:e] for (g, _), r, e in zip(lists, read, ends)]))
            new = new[(new < self.n) & ~member(rows, new)]
            score = self.at(new)
            keep = score > 0 if mask is None else (score > 0) & mask[new]
            rows, vals = np.concatenate([rows, new[keep]]), np.concatenate([vals, score[keep]])
            order = np.argsort(rows, kind="stable")  # two sorted runs: a merge
            rows, vals, read = rows[order], vals[order], ends
            if all(e >= size for e, size in zip(ends, sizes)):  # every match read
                return _best(rows, vals, k)
            bound = self._next_bound(ends, lists)
            if rows.size >= k:
                got = _best(rows, vals, k)
                # strictly below the k-th: no unit left unread ties with it (ties go to the lower row), so a page
                # tied with the k-th (copies) stops without widening
                if got[1].min() > bound:
                    return got[0], got[1], max(got[2], float(bound))
            nexts = [self._next_impact(i, w, e) if e < size else np.float32(-1)
                     for i, ((_, w), e, size) in enumerate(zip(lists, ends, sizes))]
            i = int(np.argmax(nexts))
            ends = list(ends)
            ends[i] = min(sizes[i], ends[i] + max(k, 64, ends[i]))
            if mask is not None and sum(ends) * MASKED_DEEP >= self.size:
                # a filter's few units are found deep in the postings: every match scored at once, then masked
                return self._best_match(k, mask)

    def _best_match(self, k: int, mask) -> tuple[np.ndarray, np.ndarray, float]:
        """:meth:`top` from every (eligible) match: the ``k`` best, their ties and the best of the rest."""
        rows, vals = self.matches()
        if mask is not None:
            rows, vals = rows[mask[rows]], vals[mask[rows]]
        return _best(rows, vals, k)

    def _next_impact(self, i: int, weights: np.ndarray, pos: int) -> np.float32:
        """Term ``i``'s impact at position ``pos`` of its ``weights`` in impact order (0 past its last posting)."""
        _, g, _, idf = self.terms[i]
        return _impact(idf, weights[pos], self._factor(i)) if pos < g.size else np.float32(0)

    def _next_bound(self, ends: list, lists: list) -> np.float32:
        """The highest score of a unit not read: the sum of each term's next impact (float32, in order: a bound)."""
        bound = np.float32(0)
        for i, (e, (_, w)) in enumerate(zip(ends, lists)):
            if e < self.terms[i][1].size:
                bound = np.float32(bound + self._next_impact(i, w, e))
        return bound


def _best(rows: np.ndarray, vals: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, float]:
    """The ``k`` best of sorted ``rows`` (and every one tied with the k-th) and the best score of the others
    (below the k-th's; 0.0: none)."""
    if rows.size <= k:
        return rows, vals, 0.0
    top = np.argpartition(-vals, k - 1)[:k]
    taken = vals >= vals[top].min()
    rest = vals[~taken]
    return rows[taken], vals[taken], float(rest.max()) if rest.size else 0.0


def _at(keys: np.ndarray, values: np.ndarray, rows: np.ndarray, fill) -> np.ndarray:
    """``values`` at ``rows`` in sorted ``keys`` (``fill`` elsewhere)."""
    out = np.full(rows.size, fill, dtype=np.float32)
    if keys.size:
        hit = member(keys, rows)
        out[hit] = values[np.searchsorted(keys, rows[hit])]
    return out


class Sides:
    """The two sides' scores of any unit, with the ends (over every unit) the exact engine normalises by."""

    def __init__(self, mode: str, alpha: float, dense: DenseScores | None, bm: BM25Side | None, n: int) -> None:
        self.mode, self.alpha, self.dense, self.bm, self.n = mode, alpha, dense, bm, n
        self._matches: np.ndarray | None = None
        self.bmax, self.bmin = (bm.bmax, bm.bmin) if bm is not None else (0.0, 0.0)
        if dense is not None and n:
            self.dmax, self.dmin = dense.hi, dense.lo

    def bm25(self, rows: np.ndarray) -> np.ndarray:
        return self.bm.at(rows) if self.bm is not None else np.zeros(len(rows), dtype=np.float32)

    def fuse(self, dense: np.ndarray, bm25: np.ndarray) -> np.ndarray:
        a = self.alpha
        return (a * min_max_with(dense, self.dmin, self.dmax) + (1.0 - a) * min_max_with(bm25, self.bmin, self.bmax)).astype(np.float32)

    def base(self, rows: np.ndarray) -> np.ndarray:
        """The score before tiers (:func:`radsift.ranking.core.base_scores` at ``rows``)."""
        return self.base_of(rows, self.bm25(rows) if self.mode != "dense" else None)

    def base_of(self, rows: np.ndarray, bm25: np.ndarray | None) -> np.ndarray:
        """The score before tiers of ``rows`` whose BM25 scores are ``bm25``."""
        if self.mode == "dense":
            return self.dense.at(rows)
        if self.mode == "bm25":
            return bm25
        return self.fuse(self.dense.at(rows), bm25)

    def matches_base(self, mask=None) -> np.ndarray:
        """The base score of every (eligible) BM25 match, computed once (a pass over every match)."""
        if self._matches is None:
            rows, vals = self.bm.matches() if self.bm is not None else (np.zeros(0, np.int64), np.zeros(0, np.float32))
            self._matches = (rows, self.base_of(rows, vals))
        rows, base = self._matches
        return base if mask is None else base[mask[rows]]

    def spread(self, known_max: float | None = None) -> float:
        """``max - min`` of the base score over every unit (float32, as :func:`radsift.ranking.apply_tiers`).

        ``known_max``: the highest base score of every unit, when the caller knows it (a pool whose best
        beats what any unit outside it could reach); with the lowest known too, no pass over the matches.
        """
        if self.mode == "dense":
            return float(np.float32(self.dense.hi) - np.float32(self.dense.lo))
        if self.mode == "bm25":
            return float(np.float32(self.bmax) - np.float32(self.bmin))
        low = self._lowest()
        if known_max is not None and low is not None:
            return float(np.float32(known_max) - low)
        vals = [self.matches_base()]
        rest = self.dense.outside(self.bm.matches()[0])  # units sharing no term: the dense share alone
        if rest is not None:
            vals.append(self.fuse(np.array(rest, dtype=self.dense.dtype), np.zeros(2, np.float32)))
        allv = np.concatenate(vals)
        return float(allv.max() - allv.min())

    def bound(self, d_k: float, b_k: float = 0.0) -> np.float32:
        """The highest base score of a unit outside the candidates (cosine at most ``d_k``, BM25 at most ``b_k``)."""
        if self.mode == "dense":
            return np.float32(d_k)
        return self.fuse(np.array([d_k], dtype=self.dense.dtype), np.array([b_k], dtype=np.float32))[0]

    def _lowest(self) -> np.float32 | None:
        """The lowest hybrid base score of every unit when a unit sharing no term has the lowest cosine (the
        score is then that cosine's alone; every other unit scores at least as much), else None."""
        if self.bmin != 0.0:
            return None
        low = self.fuse(np.array([self.dense.lo], dtype=self.dense.dtype), np.zeros(1, np.float32))[0]
        lowest = self.dense.lowest_rows(self.bm.size)
        if lowest is None:  # more units at the lowest cosine than postings: one shares no term
            return low
        return low if lowest.size and bool((self.bm.at(lowest) == 0).any()) else None

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
