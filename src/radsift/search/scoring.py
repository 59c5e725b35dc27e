"""Score a search: the query's dense and BM25 scores over every unit, once, and again after feedback.

Only the sides its mode uses are computed (a ``bm25`` search never loads the encoder). The dense
side comes from the index's vector backend (:mod:`radsift.index.backends`; an approximate backend
draws its candidates from the eligible units, and one that pushes filters down, Milvus, takes them)
or from a first stage in the bi-encoder's place (``first_stage``). The BM25 side of a query linked
to a concept also holds the concept's name and short synonyms. Pseudo-relevance feedback
(:func:`feedback`, :mod:`radsift.ranking.prf`) moves both from the first pass's top units.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from radsift.errors import IndexDamagedError
from radsift.index.reader import IndexStore
from radsift.ranking import NEEDS_BM25, NEEDS_DENSE, best_per_owner, bm25_scores, rank
from radsift.ranking.prf import FB_DOCS, rm3_weights, rocchio, weighted_bm25_scores
from radsift.records import QueryReading
from radsift.search.options import SearchRequest
from radsift.search.plan import Plan
from radsift.search.units import unit_texts
from radsift.text.tokens import tokenize

#: unit kind -> the index's vector backend over those units (:func:`radsift.index.backends.placement.open_backend`).
Backends = Callable[[str], object]
#: A linked concept's name -> its name and short synonyms (:meth:`radsift.search.concepts.ConceptLinker.expansion`).
Expansion = Callable[[str], str]


def first_pass(store: IndexStore, request: SearchRequest, plan: Plan, reading: QueryReading, *, query_vector,
               settings, backends: Backends, expansion: Expansion) -> dict:
    """The query's dense and BM25 scores (only those its mode uses), the eligible units and the
    hybrid's dense share: the keyword arguments of :func:`radsift.ranking.rank`.

    ``settings`` are the index model's (:mod:`radsift.models.settings`); a first stage's own
    ``settings`` (when it has them) give the dense weight of ``hybrid`` instead.
    """
    opts = request.options
    first_stage = opts.first_stage
    if first_stage is not None:
        settings = getattr(first_stage, "settings", settings)
    out: dict = {"mask": plan.mask, "alpha": opts.alpha if opts.alpha is not None else settings.dense_weight}
    if NEEDS_DENSE[opts.mode] and first_stage is not None:
        out["dense"] = np.asarray(first_stage.scores(store, request.query, opts.unit), dtype=np.float32)
        if out["dense"].shape != store.units(opts.unit).report_row.shape:
            raise RuntimeError(f"first stage: {out['dense'].shape[0]} scores for "
                               f"{store.units(opts.unit).report_row.shape[0]} {opts.unit} units")
    elif NEEDS_DENSE[opts.mode]:
        # An approximate backend draws its candidates from the eligible units.
        backend = backends(opts.unit)
        # A backend that pushes filters down (Milvus) takes them with the mask they make.
        hints = {"target": opts.target, "filters": opts.where} if getattr(backend, "pushdown", False) else {}
        dense = backend.scores(query_vector, out["mask"], **hints)
        out["dense"] = checked_cosines(best_window(dense, store, opts.unit, query_vector), store, opts.unit)
    if NEEDS_BM25[opts.mode]:
        n = store.units(opts.unit).report_row.shape[0]
        out["bm25"] = bm25_scores(store.bm25(opts.unit), bm25_query(request.query, reading, expansion), n)
    return out


def bm25_query(query: str, reading: QueryReading, expansion: Expansion) -> str:
    """The query's BM25 text: with a linked concept's name and short synonyms (not for a link beside the
    literal reading: the user's words stay the BM25 query; a symptom's causes add none: no one concept's words say
    them)."""
    words = [query] + [expansion(f.finding) for f in reading.findings if f.source == "linked" and not f.beside]
    return " ".join(words)


def feedback(store: IndexStore, request: SearchRequest, scores: dict, tiers, reading: QueryReading, *, query_vector,
             backends: Backends, expansion: Expansion, gap: float | None) -> dict:
    """Scores again after pseudo-relevance feedback from the first pass's top units (:mod:`radsift.ranking.prf`).
    The candidate engine gives the same from its pool (:func:`radsift.search.shortlist._feedback`): keep both in step."""
    opts = request.options
    rows, vals = rank(opts.mode, FB_DOCS, tiers=tiers, gap=gap, **scores)
    if not len(rows):
        return scores
    out = dict(scores)
    units = store.units(opts.unit)
    if "dense" in scores:
        moved = rocchio(query_vector, np.asarray(units.vectors[np.sort(rows)]))
        out["dense"] = best_window(backends(opts.unit).scores(moved), store, opts.unit, moved)
    if "bm25" in scores:
        texts = unit_texts(store, opts.unit, rows.tolist())
        weights = rm3_weights(tokenize(bm25_query(request.query, reading, expansion)),
                              [tokenize(texts[r].text) for r in rows.tolist()], np.asarray(vals, dtype=np.float64))
        out["bm25"] = weighted_bm25_scores(store.bm25(opts.unit), weights, units.report_row.shape[0])
    return out


def best_window(dense: np.ndarray, store: IndexStore, unit: str, query_vector) -> np.ndarray:
    """A section longer than one window scores by its best window: the backend scores its first window
    (the section vector), the later windows are scored here, exactly, and the best kept
    (:func:`radsift.ranking.best_per_owner`). An approximate backend's candidates thus also include every
    section whose later window matches. Sentences and sections of one window are left as they are."""
    units = store.units(unit)
    if units.windows is None:
        return dense
    later = units.windows @ np.asarray(query_vector, dtype=np.float32)
    return best_per_owner(later, units.window_owner, 0, out=np.array(dense, dtype=np.float32, copy=True))


def checked_cosines(scores: np.ndarray, store: IndexStore, unit: str) -> np.ndarray:
    """Cosines of unit vectors lie in [-1, 1]: anything else (NaN, 6e30) is a damaged vector file, not a score."""
    scores = np.asarray(scores)
    if scores.size and not (np.isfinite(scores).all() and float(np.abs(scores).max()) <= 1.001):
        raise IndexDamagedError(f"{store.index_dir / 'segments'}: a segment's {unit}_vectors.npy holds vectors that "
                                f"are not unit length "
                                f"(NaN or out-of-range scores): the file is damaged; run `radsift index verify "
                                f"--deep {store.index_dir}` and rebuild or roll back")
    return scores
