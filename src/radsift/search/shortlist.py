"""A search answered by the candidate engine (:mod:`.candidates`): rank, count and band from candidates.

:func:`candidate_page` returns the exact engine's page (see :mod:`.candidates` for why it is the
same), or None when the search is one the exact engine must answer.
"""

from __future__ import annotations

import numpy as np

from radsift.index.reader import IndexStore
from radsift.ranking import NEEDS_BM25, NEEDS_DENSE
from radsift.ranking.pool import Sides, bm25_sparse, dense_top, member, top_entries
from radsift.ranking.tiers import SIDE_SLOTS
from radsift.records import QueryReading
from radsift.search.candidates import QueryTiers, ReadingPostings, band_rows
from radsift.search.options import SearchRequest
from radsift.search.plan import eligible_mask, unit_sides
from radsift.search.rank import rerank_head
from radsift.search.results import SearchResult, hits_of
from radsift.search.scoring import bm25_query, checked_cosines
from radsift.search.units import unit_texts

#: Dense candidates drawn first (widened x4 until the page is exact).
FIRST_DEPTH = 1000


def candidate_page(index, store: IndexStore, request: SearchRequest, reading: QueryReading, query_vector,
                   expansion) -> SearchResult:
    """The page of ``request`` from the candidate engine (callers check :func:`.candidates.exact_reason` first)."""
    opts = request.options
    units = store.units("sentence")
    n = int(units.report_row.shape[0])
    mask = eligible_mask(store, opts)
    post = ReadingPostings.of(store, "sentence")
    qt = None
    if reading.active:
        sides = store.cached(("sides", "sentence"), lambda: unit_sides(store, "sentence")) if reading.side else None
        qt = QueryTiers(store, reading, post, {f: i for i, f in enumerate(store.manifest.findings)},
                        opts.level == "report", sides)
    dense = None
    if NEEDS_DENSE[opts.mode]:
        backend = index._backend(store, "sentence")
        dense = checked_cosines(backend.scores(query_vector, mask), store, "sentence")
    bm_rows, bm_vals = np.zeros(0, np.int64), np.zeros(0, np.float32)
    if NEEDS_BM25[opts.mode]:
        bm_rows, bm_vals = bm25_sparse(store.bm25("sentence"), bm25_query(request.query, reading, expansion), n)
    alpha = opts.alpha if opts.alpha is not None else index.settings.dense_weight
    sides_ = Sides(opts.mode, alpha, dense, bm_rows, bm_vals, n)
    step = None
    if qt is not None:
        step = np.float32(sides_.spread() + 1.0)
    elig = (lambda rows: np.ones(len(rows), dtype=bool)) if mask is None else (lambda rows: mask[rows])
    keep_rows = np.zeros(0, np.int64)
    if opts.mode == "bm25" and qt is not None and reading.findings:
        keep_rows = qt.special[qt.special_tiers < SIDE_SLOTS]
    depth = max(opts.offset + opts.k, opts.rerank)
    picked, cand = _rank(opts, sides_, qt, step, mask, elig, keep_rows, depth, post)
    page_units = unit_texts(store, "sentence", [u for _, u, _ in picked])
    if opts.rerank:
        picked = rerank_head(request, picked, page_units, None if qt is None else qt.tiers, index.reranker)
    page = picked[opts.offset:opts.offset + opts.k]
    total, matching, classes = _counts(opts, qt, post, mask, elig, cand, page)
    bands, fused = [], []
    if page:
        # The best eligible base score: a BM25 match's, or a dense candidate's (see _rank).
        pool_rows = cand if mask is None else cand[mask[cand]]
        matches = sides_.matches_base() if mask is None else sides_.matches_base()[mask[sides_.bm_rows]]
        best = [np.asarray(sides_.base(pool_rows)), np.asarray(matches)]
        top = max((float(np.float64(b.max())) for b in best if b.size), default=0.0)
        base = np.asarray(sides_.base(np.asarray([u for _, u, _ in page], dtype=np.int64)), dtype=np.float64)
        rel = np.clip(base / top, 0.0, 1.0) if top > 0 else np.zeros(base.size)
        bands = band_rows(opts.mode, classes, rel.tolist())
        fused = base.tolist()
    hits = hits_of(store, request.query, page, page_units, opts.fields, opts.include_report,
                   reading if opts.mentions else QueryReading(), index.mentions_in, first_rank=opts.offset + 1,
                   bands=bands, fused=fused)
    return SearchResult(hits, reading, offset=opts.offset, k=opts.k, total=total, matching=matching,
                        lower_bound=False)


def _rank(opts, sides_: Sides, qt, step, mask, elig, keep_rows, depth: int, post: ReadingPostings):
    """The ranked list to ``depth`` from a growing candidate pool, until no unit outside it could enter.

    Returns:
        ``(picked, candidate rows)``: the ranked entries (report row, unit row, score) and the pool.
    """
    n = sides_.n
    n_elig = n if mask is None else int(np.count_nonzero(mask))
    k_dense = FIRST_DEPTH
    all_rows, all_vals = sides_.bm_rows, sides_.bm_vals
    if mask is not None:
        keep = mask[all_rows]
        all_rows, all_vals = all_rows[keep], all_vals[keep]
    while True:
        # hybrid: the best BM25 matches only; the rest score at most the k-th's BM25 (b_k)
        bm_rows, bm_vals, b_k = all_rows, all_vals, 0.0
        if opts.mode == "hybrid" and all_rows.size > k_dense:
            top = np.argpartition(-all_vals, k_dense - 1)[:k_dense]
            top = np.flatnonzero(all_vals >= all_vals[top].min())  # and every match tied with the k-th
            bm_rows, bm_vals, b_k = all_rows[top], all_vals[top], float(all_vals[top].min())
        extra, d_k = [keep_rows], None
        if sides_.dense is not None and opts.mode != "bm25":
            top, d_k = dense_top(sides_.dense, mask, k_dense, n_elig)
            extra.append(top)
        extra = np.unique(np.concatenate(extra)).astype(np.int64)
        extra = extra[~member(bm_rows, extra) & elig(extra)]
        cand = np.concatenate([bm_rows, extra])
        # a dense candidate may hold a query term without being among the best BM25 matches
        scores = sides_.base_of(cand, np.concatenate([bm_vals, sides_.bm25(extra)]))
        if qt is not None:
            scores = (scores - qt.tiers(cand).astype(np.float32) * step).astype(np.float32)
        picked = top_entries(opts.level, cand, scores, depth, post.report_row)
        if opts.mode == "bm25" or d_k is None:
            return picked, cand
        if _exact(sides_, qt, step, picked, depth, (bm_rows, extra), (d_k, b_k), elig):
            return picked, cand
        k_dense *= 4


def _exact(sides_, qt, step, picked, depth, inside, ends, elig) -> bool:
    """Whether no eligible unit outside ``inside`` (sorted row arrays) could rank within the first ``depth`` entries:
    such a unit has a cosine of at most ``ends[0]`` and a BM25 score of at most ``ends[1]``."""
    if len(picked) < depth:
        return False
    bound = sides_.bound(*ends)
    if qt is not None:
        bound = np.float32(bound - np.float32(qt.lowest_outside(inside, elig)) * step)
    return float(picked[-1][2]) > float(bound)


def _counts(opts, qt, post: ReadingPostings, mask, elig, cand, page):
    """(total, matching, class of each page entry) of the whole ranked list, from the postings."""
    by_report = opts.level == "report"
    if opts.mode == "bm25":
        e_rows = cand
        total = int(np.unique(post.report_row[e_rows]).size) if by_report else int(e_rows.size)
        in_e = lambda rows: np.isin(rows, e_rows)
    else:
        if mask is None:
            total = post.reports_with_units if by_report else post.n_units
        else:
            rows = np.flatnonzero(mask)
            total = int(np.unique(post.report_row[rows]).size) if by_report else int(rows.size)
        in_e = elig
    if qt is None or not qt.statuses:
        return total, None, [-1] * len(page)
    every = mask is None and opts.mode != "bm25"  # every unit eligible: the findings' views hold the answers
    per = [v.reports[v.report_best == 0] if by_report else v.rows[v.best == 0] for v in qt.views] if every else []
    for mrows, mtier in () if every else qt.mentions:
        ok = mrows[(mtier == 0) & in_e(mrows)]
        per.append(np.unique(post.report_row[ok]) if by_report else np.unique(ok))
    matching = per[0]
    for p in per[1:]:
        matching = np.intersect1d(matching, p)
    if not page:
        return total, int(matching.size), []
    keys = np.asarray([r if by_report else u for r, u, _ in page], dtype=np.int64)
    uniq, inv = np.unique(keys, return_inverse=True)
    best = qt.report_best(uniq, None if every else in_e) if by_report else qt.stated(uniq, None if every else in_e)
    return total, int(matching.size), qt.classes(best)[inv].tolist()
