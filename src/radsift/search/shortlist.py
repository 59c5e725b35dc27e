"""A search answered by the candidate engine (:mod:`.candidates`): rank, count and band from candidates.

:func:`candidate_page` returns the exact engine's page (see :mod:`.candidates` for why it is the
same), or None when the search is one the exact engine must answer.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from radsift.index.reader import IndexStore
from radsift.ranking import NEEDS_BM25, NEEDS_DENSE
from radsift.ranking.pool import BM25Side, DenseScores, Sides, member, top_entries
from radsift.ranking.prf import FB_DOCS, rm3_weights, rocchio
from radsift.records import QueryReading
from radsift.search.beside import query_tiers
from radsift.search.bm25count import bm25_counts
from radsift.search.candidates import ReadingPostings
from radsift.search.counts import band_rows
from radsift.search.linkbands import stating_links
from radsift.search.normals import NormalKeyed, below_keys
from radsift.search.options import SearchRequest
from radsift.search.reading import normal_key_wanted
from radsift.search.plan import eligible_mask, unit_locations, unit_sides
from radsift.search.rank import rerank_head
from radsift.search.results import SearchResult, hits_of
from radsift.search.scoring import best_window, bm25_query, checked_cosines
from radsift.search.sortedsets import unique
from radsift.search.units import unit_texts
from radsift.text.tokens import tokenize

#: Dense candidates drawn first (widened x4 until the page is exact).
FIRST_DEPTH = 1000
#: BM25 matches drawn first by a ``bm25`` search (widened x4 until the page is exact).
BM25_FIRST = 256
#: ``hybrid`` draws this share of its dense depth from BM25's best matches (widened with it): a unit left out
#: of both is bounded by the two sides' last scores, and the dense side's bounds the hybrid page. A quarter of
#: the dense depth widens the pool as rarely as the whole depth (Open-i, Open-i x10: 2.08 calls of
#: BM25's top-k a search, against 2.06) while BM25's top-k reads far fewer postings (``docs/measurements.md``).
HYBRID_BM25_SHARE = 4


def first_depth(mode: str) -> int:
    """The first pool's depth: dense candidates (``bm25``: BM25 matches)."""
    return BM25_FIRST if mode == "bm25" else FIRST_DEPTH


def bm25_depth(mode: str, depth: int) -> int:
    """How many of BM25's best matches a pool of ``depth`` (dense candidates; ``bm25``: matches) draws."""
    return depth if mode == "bm25" else max(1, depth // HYBRID_BM25_SHARE)


def candidate_page(index, store: IndexStore, request: SearchRequest, reading: QueryReading, query_vector,
                   expansion) -> SearchResult:
    """The page of ``request`` from the candidate engine (callers check :func:`.candidates.exact_reason` first)."""
    opts = request.options
    unit = opts.unit
    units = store.units(unit)
    n = int(units.report_row.shape[0])
    mask = eligible_mask(store, opts)
    post = ReadingPostings.of(store, unit)
    qt = None
    if reading.active:
        sides = unit_sides(store, unit, reading.chamber) if reading.side else None
        places = unit_locations(store, unit)[0] if reading.regions else None
        qt = query_tiers(store, reading, post, {f: i for i, f in enumerate(store.manifest.findings)},
                         opts.level == "report", sides, places, index.labeler)
        if normal_key_wanted(reading, request.query, index.tier_gap):  # as plan_search: the normal (or alone) key
            keys, scale = below_keys(store, unit, opts.level == "report", reading,
                                     getattr(index.labeler, "lexicon", None))
            qt = NormalKeyed(qt, keys, scale)
    dense = None
    if NEEDS_DENSE[opts.mode]:
        dense = _dense(index, store, unit, query_vector, mask)
    text = bm25_query(request.query, reading, expansion)
    bm = BM25Side(store.bm25(unit), text, n, bm25_depth(opts.mode, first_depth(opts.mode))) \
        if NEEDS_BM25[opts.mode] else None
    alpha = opts.alpha if opts.alpha is not None else index.settings.dense_weight
    sides_ = Sides(opts.mode, alpha, dense, bm, n)
    elig = (lambda rows: np.ones(len(rows), dtype=bool)) if mask is None else (lambda rows: mask[rows])
    if opts.prf:
        sides_ = _feedback(index, store, opts, sides_, (qt, mask, elig, post), query_vector, text)
    depth = max(opts.offset + opts.k, opts.rerank)
    picked, cand, best = _rank(opts, sides_, qt, mask, elig, depth, post, index.tier_gap)
    page_units = unit_texts(store, unit, [u for _, u, _ in picked])
    if opts.rerank:
        picked = rerank_head(request, picked, page_units, None if qt is None else qt.tiers, index.reranker)
    page = picked[opts.offset:opts.offset + opts.k]
    if opts.mode == "bm25":
        total, matching, classes = bm25_counts(opts, qt, post, mask, sides_.bm, page)
    else:
        total, matching, classes = _counts(opts, qt, post, mask, elig, page)
    bands, fused = [], []
    if page:
        if best is None:  # the pool cannot tell: the best of the pool (eligible units) and of every eligible match
            found = [np.asarray(sides_.base(cand)), np.asarray(sides_.matches_base(mask))]
            best = max((float(np.float64(b.max())) for b in found if b.size), default=0.0)
        base = np.asarray(sides_.base(np.asarray([u for _, u, _ in page], dtype=np.int64)), dtype=np.float64)
        rel = np.clip(base / best, 0.0, 1.0) if best > 0 else np.zeros(base.size)
        bands = band_rows(opts.mode, classes, rel.tolist(),
                          stating_links(store, unit, opts.level == "report", reading, page))
        fused = base.tolist()
    hits = hits_of(store, request.query, page, page_units, opts.fields, opts.include_report,
                   reading if opts.mentions else QueryReading(), index.mentions_in, first_rank=opts.offset + 1,
                   bands=bands, fused=fused)
    return SearchResult(hits, reading, offset=opts.offset, k=opts.k, total=total, matching=matching,
                        lower_bound=qt is not None and qt.capped)


def _dense(index, store: IndexStore, unit: str, query_vector, mask, check: bool = True) -> DenseScores:
    """The query's cosines of ``unit`` units: the scored rows only (every other row holds the backend's fill,
    below them: no pass over every unit), or, for sections longer than one window, every section scored by its
    best window (:func:`radsift.search.scoring.best_window`: a product over every later window, as the exact engine).
    ``check`` False: not checked (:func:`~radsift.search.scoring.checked_cosines`; feedback's second pass, as there)."""
    got = index._backend(store, unit).sparse_scores(query_vector, mask)
    checked = (lambda v: checked_cosines(v, store, unit)) if check else (lambda v: v)
    if store.units(unit).windows is not None:
        return DenseScores(got.n, checked(best_window(got.full(), store, unit, query_vector)))
    return DenseScores(got.n, checked(got.values), got.rows, got.fill, got.node_of_row, got.groups)


def _feedback(index, store: IndexStore, opts, sides_: Sides, ranked: tuple, query_vector, text: str) -> Sides:
    """Both sides after pseudo-relevance feedback, as :func:`radsift.search.scoring.feedback` gives them: the first
    pass's :data:`~radsift.ranking.prf.FB_DOCS` best units (its ranking of units, by tier then score, at either
    level; no unit sharing no term kept, as there), then Rocchio's moved vector (scored without the filter's mask,
    as there) and RM3's weighted BM25 query (:class:`~radsift.ranking.pool.BM25Side` with weights).
    ``ranked``: ``(query tiers, mask, eligible, reading postings)`` as :func:`_rank` takes them."""
    qt, mask, elig, post = ranked
    picked = _rank(replace(opts, level="sentence"), sides_, qt, mask, elig, FB_DOCS, post, index.tier_gap,
                   keep=False)[0]
    if not picked:
        return sides_
    rows = np.asarray([u for _, u, _ in picked], dtype=np.int64)
    dense = bm = None
    if sides_.dense is not None:
        moved = rocchio(query_vector, np.asarray(store.units(opts.unit).vectors[np.sort(rows)]))
        dense = _dense(index, store, opts.unit, moved, None, check=False)
    if sides_.bm is not None:
        texts = unit_texts(store, opts.unit, rows.tolist())
        weights = rm3_weights(tokenize(text), [tokenize(texts[r].text) for r in rows.tolist()],
                              np.asarray([s for _, _, s in picked], dtype=np.float64))
        bm = BM25Side(sides_.bm.retriever, text, sides_.n,
                      bm25_depth(opts.mode, first_depth(opts.mode)), weights=weights)
    return Sides(opts.mode, sides_.alpha, dense, bm, sides_.n)


def _rank(opts, sides_: Sides, qt, mask, elig, depth: int, post: ReadingPostings, gap: float | None = None,
          keep: bool = True):
    """The ranked list to ``depth`` from a growing candidate pool, until no unit outside it could enter.
    ``keep`` False: ``bm25`` ranks its matches only (feedback's first pass: no unit stating the reading joins).

    Returns:
        ``(picked, candidate rows, best)``: the ranked entries (report row, unit row, score), the pool (eligible
        units) and the best base score of every eligible unit (None: the pool cannot tell).
    """
    n_elig = sides_.n if mask is None else post.eligible(mask)[0]
    bm25 = opts.mode == "bm25"
    k_dense, step = first_depth(opts.mode), None
    while True:
        # the best BM25 matches only; the rest score at most the k-th's BM25 (b_k; 0.0: every match taken)
        bm_rows, bm_vals, b_k = np.zeros(0, np.int64), np.zeros(0, np.float32), 0.0
        if sides_.bm is not None:
            bm_rows, bm_vals, b_k = sides_.bm.top(bm25_depth(opts.mode, k_dense), mask)
        extra, d_k, top = [np.zeros(0, np.int64)], None, np.zeros(0, np.int64)
        if keep and bm25 and b_k == 0.0 and qt is not None and qt.statuses:
            # every match taken: the units stating the reading that share no term join (BM25 0, ranked by tier)
            extra.append(qt.keep_rows())
        if sides_.dense is not None and not bm25:
            top, d_k = sides_.dense.top(k_dense, mask, n_elig)
            extra.append(top)
            if qt is not None and qt.statuses and qt.keep_rows().size <= k_dense:
                # the few units stating the reading join at once: a page past them ("no X", X rarely denied)
                # then needs no pool holding every unit of a lower tier
                extra.append(qt.keep_rows())
        extra = np.unique(np.concatenate(extra)).astype(np.int64)
        extra = extra[~member(bm_rows, extra) & elig(extra)]
        cand = np.concatenate([bm_rows, extra])
        # a dense candidate may hold a query term without being among the best BM25 matches
        base = sides_.base_of(cand, np.concatenate([bm_vals, sides_.bm25(extra)]))
        whole = b_k == 0.0 if bm25 else d_k is None  # the pool holds every eligible unit that could rank
        # the best base score of an eligible unit left out (bm25: a match outside, or a unit stating the
        # reading and sharing no term, which scores 0)
        bound = None if whole else np.float32(b_k) if bm25 else sides_.bound(d_k, b_k)
        best = None
        if base.size and (bound is None or base.max() >= bound):
            best = float(np.float64(base.max()))
        elif whole:
            best = 0.0
        scores, known = base, None
        if qt is not None:
            if step is None:  # the tiers' step: the spread of every unit's base score (the pool's best is its top)
                spread = sides_.spread(best if mask is None else None)  # as radsift.ranking.apply_tiers
                step = np.float32(spread + 1.0 if gap is None else gap * max(spread, 1e-6))
            known = qt.tiers(cand)
            scores = (base - known.astype(np.float32) * step).astype(np.float32)
        picked = top_entries(opts.level, cand, scores, depth, post.report_row)
        if whole or _exact(qt, step, picked, depth, (bm_rows, extra), bound, None if mask is None else elig,
                           gap is None and opts.level == "report", known):
            return picked, cand, best
        # every scored row and every match taken, and still not exact: only the whole list decides
        k_dense = n_elig if not bm25 and top.size < k_dense and b_k == 0.0 else k_dense * 4


def _exact(qt, step, picked, depth, inside, bound, elig, strict: bool = True, known=None) -> bool:
    """Whether no eligible unit outside ``inside`` (sorted row arrays; ``known`` their tiers, concatenated) could rank
    within the first ``depth`` entries: such a unit has a base score of at most ``bound``."""
    if len(picked) < depth:
        return False
    if qt is not None:
        bound = np.float32(bound - np.float32(qt.lowest_outside(inside, elig, strict, known)) * step)
    return float(picked[-1][2]) > float(bound)


def _counts(opts, qt, post: ReadingPostings, mask, elig, page):
    """(total, matching, class of each page entry) of the whole ranked list, from the postings."""
    by_report = opts.level == "report"
    if mask is None:
        total = post.reports_with_units if by_report else post.n_units
    else:
        units, reports = post.eligible(mask)
        total = reports if by_report else units
    in_e = elig
    if qt is None or not qt.statuses:
        return total, None, [-1] * len(page)
    every = mask is None  # every unit eligible: the findings' views hold the answers
    per = [v.stating[1] if by_report else v.stating[0] for v in qt.views] if every else []
    for j, (mrows, mtier) in enumerate(() if every else qt.mentions):
        ok = mrows[(mtier == 0) & in_e(mrows)]
        per.append(qt.not_contradicted(j, unique(post.report_row[ok])) if by_report else unique(ok))
    matching = per[0]
    for p in per[1:]:  # sorted distinct rows: a search, not a sort
        matching = matching[member(p, matching)]
    if not page:
        return total, int(matching.size), []
    keys = np.asarray([r if by_report else u for r, u, _ in page], dtype=np.int64)
    uniq, inv = np.unique(keys, return_inverse=True)
    best = qt.report_best(uniq, None if every else in_e) if by_report else qt.stated(uniq, None if every else in_e)
    return total, int(matching.size), qt.classes(best)[inv].tolist()
