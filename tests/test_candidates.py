"""The candidate engine (radsift.search.candidates) gives the exact engine's pages and counts."""

from __future__ import annotations

import numpy as np
import pytest
from engine_pages import engine_page as _page

from radsift.demo import generate_reports
from radsift.index import build_index
from radsift.models.hashing import HashingEncoder
from radsift.ranking import bm25_scores, pool
from radsift.search import Index, candidates, shortlist
from radsift.search.options import check_search, search_options
from radsift.search.plan import eligible_mask

QUERIES = ["no pneumothorax", "pneumothorax", "small left pleural effusion", "no right pneumothorax",
           "cardiomegaly", "no cardiomegaly", "enlarged heart", "endotracheal tube", "rib fracture",
           "no acute cardiopulmonary abnormality", "possible consolidation", "left", "lungs are clear",
           "cardiomegaly with pulmonary edema and bilateral effusions",
           # locations (lobes, abbreviations, bases, apices): the location tier
           "right lower lobe consolidation", "LLL atelectasis", "no left lower lobe pneumonia", "lingular opacity",
           "left base", "apical pneumothorax",
           # body places beside a device or finding (the spine, the sternum, a vein): the location tier too
           "thoracic spine hardware", "sternotomy wires", "left subclavian central line"]
SETTINGS = [{"mode": "hybrid", "level": "report"}, {"mode": "hybrid", "level": "sentence"},
            {"mode": "dense", "level": "report"}, {"mode": "bm25", "level": "report"},
            {"mode": "bm25", "level": "sentence"}, {"mode": "hybrid", "level": "report", "offset": 15},
            {"mode": "hybrid", "level": "report", "target": "impression"},
            {"mode": "hybrid", "level": "report", "negation": "ignore"},
            {"mode": "hybrid", "level": "report", "where": ["site=north"]}]
#: ``bm25`` at report level (k 10, negation-aware) with paging and filters: ranked from its best matches,
#: counted from bitmaps and reading postings.
BM25_SETTINGS = [{"mode": "bm25", "level": "report", "offset": 15},
                 {"mode": "bm25", "level": "report", "where": ["site=north"]},
                 {"mode": "bm25", "level": "report", "where": ["site=south"], "offset": 10},
                 {"mode": "bm25", "level": "report", "target": "impression"},
                 {"mode": "bm25", "level": "sentence", "where": ["site=north"], "offset": 5},
                 {"mode": "bm25", "level": "report", "negation": "ignore"}]


@pytest.fixture(scope="module")
def index(tmp_path_factory, sited_demo_index_at):
    return sited_demo_index_at(tmp_path_factory.mktemp("cand"))


@pytest.fixture(scope="module")
def hnsw_index(tmp_path_factory):
    """The demo reports three times over, searched through an HNSW graph: many tied scores (copies; the
    graph's floor for every row outside its candidates), as on a corpus that repeats its boilerplate."""
    pytest.importorskip("faiss")
    root = tmp_path_factory.mktemp("cand-hnsw")
    enc = HashingEncoder(root / "model")
    base = [d.report for d in generate_reports(n=200, seed=5)]
    reports = [r.__class__(f"{r.id}-{c}", r.sections, r.metadata) for c in range(3) for r in base]
    build_index(root / "idx", reports, encoder=enc, progress=False)
    return Index.open(root / "idx", encoder=enc, backend="hnsw")


@pytest.mark.parametrize("kw", SETTINGS, ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()))
def test_candidate_pages_and_counts_equal_the_exact_engine(index, monkeypatch, kw):
    calls = []
    real = shortlist.candidate_page
    monkeypatch.setattr("radsift.search.walk.candidate_page", lambda *a, **k: calls.append(1) or real(*a, **k))
    for q in QUERIES:
        assert _page(index, monkeypatch, "candidates", q, **kw) == _page(index, monkeypatch, "exact", q, **kw), q
    assert calls, "the candidate engine never answered"


def test_a_tiny_dense_pool_is_widened_until_exact(index, monkeypatch):
    monkeypatch.setattr(shortlist, "FIRST_DEPTH", 1)
    for q in QUERIES:
        assert _page(index, monkeypatch, "candidates", q) == _page(index, monkeypatch, "exact", q), q


def test_without_the_bound_check_a_tiny_pool_is_wrong(index, monkeypatch):
    """The check that widens the pool is what makes it exact: skip it and pages differ."""
    monkeypatch.setattr(shortlist, "FIRST_DEPTH", 1)
    monkeypatch.setattr(shortlist, "_exact", lambda *a, **k: True)
    differ = sum(_page(index, monkeypatch, "candidates", q, mode="dense") != _page(index, monkeypatch, "exact", q,
                                                                                   mode="dense") for q in QUERIES)
    assert differ > 0


def test_bm25_over_postings_is_the_dense_array_nonzeros(index):
    retriever = index.store.bm25("sentence")
    n = index.store.units("sentence").report_row.shape[0]
    for q in QUERIES:
        rows, vals = pool.bm25_sparse(retriever, q, n)
        full = bm25_scores(retriever, q, n)
        assert np.array_equal(rows, np.flatnonzero(full > 0))
        assert np.array_equal(vals, full[rows])


@pytest.mark.parametrize("kw", [{"mode": "hybrid-rrf"}, {"mode": "hybrid-rrf", "prf": True}])
def test_searches_it_cannot_answer_exactly_go_to_the_exact_engine(index, monkeypatch, kw):
    monkeypatch.setattr("radsift.search.walk.candidate_page", lambda *a, **k: pytest.fail("not routed"))
    monkeypatch.setenv(candidates.ENV, "candidates")
    index.search("no pneumothorax", k=5, **kw)


def test_the_engine_is_chosen_by_the_environment(monkeypatch):
    monkeypatch.setenv(candidates.ENV, "exact")
    assert candidates.engine_name() == "exact"
    monkeypatch.delenv(candidates.ENV)
    assert candidates.engine_name() == candidates.DEFAULT_ENGINE


@pytest.mark.parametrize("depth", [20, 60])
@pytest.mark.parametrize("backend", ["numpy", "hnsw"])
def test_small_pools_that_are_not_widened_are_exact_too(request, monkeypatch, depth, backend):
    """Pools smaller than the matches (the BM25 side cut to its best), mostly answered without widening."""
    index = request.getfixturevalue("index" if backend == "numpy" else "hnsw_index")
    monkeypatch.setattr(shortlist, "FIRST_DEPTH", depth)
    for kw in SETTINGS[:3]:
        for q in QUERIES:
            assert _page(index, monkeypatch, "candidates", q, **kw) == _page(index, monkeypatch, "exact", q, **kw), q


def test_an_empty_index_answers_an_empty_page(tmp_path, monkeypatch):
    enc = HashingEncoder(tmp_path / "model")
    build_index(tmp_path / "e", [], encoder=enc, progress=False, allow_empty=True)
    index = Index.open(tmp_path / "e", encoder=enc)
    for engine in candidates.ENGINES:
        monkeypatch.setenv(candidates.ENV, engine)
        res = index.search("no pneumothorax", k=5)
        assert list(res) == [] and res.total == 0


def test_a_repeated_filter_reuses_its_mask_read_only(index):
    store = index.store
    opts = check_search("x", search_options(where=["site=north"]), store.manifest.sections,
                        store.manifest.metadata_keys).options
    first, again = eligible_mask(store, opts), eligible_mask(store, opts)
    assert first is again and not first.flags.writeable
    assert 0 < first.sum() < first.size


@pytest.mark.parametrize("depth", [5, 40, 1000])
@pytest.mark.parametrize("backend", ["numpy", "hnsw"])
def test_bm25_read_best_weight_first_gives_the_exact_page(request, monkeypatch, depth, backend):
    """The threshold top-k over the terms' postings (never every match) at pools small and large."""
    index = request.getfixturevalue("index" if backend == "numpy" else "hnsw_index")
    if backend == "hnsw":  # scored rows fewer than the units: the rest at the floor, never in an array
        monkeypatch.setattr(index._backend(index.store, "sentence"), "candidates", 150)
    monkeypatch.setattr(pool, "SMALL_POSTINGS", 0)
    monkeypatch.setattr(shortlist, "FIRST_DEPTH", depth)
    for kw in SETTINGS:
        if backend == "hnsw" and "where" in kw:
            continue
        for q in QUERIES:
            assert _page(index, monkeypatch, "candidates", q, **kw) == _page(index, monkeypatch, "exact", q, **kw), q


def test_bm25_top_is_the_best_matches_and_bounds_the_rest(index, monkeypatch):
    """The threshold top-k (every term's best, then the term holding the bound up reads on) returns the best
    matches, every one tied with the k-th, and bounds every unit left out."""
    monkeypatch.setattr(pool, "SMALL_POSTINGS", 0)  # the threshold top-k, not every match scored
    retriever = index.store.bm25("sentence")
    n = index.store.units("sentence").report_row.shape[0]
    mask = np.arange(n) % 3 != 0
    for q in QUERIES:
        rows, vals = pool.bm25_sparse(retriever, q, n)
        for k in (1, 7, 50):
            for m in (None, mask):
                side = pool.BM25Side(retriever, q, n)
                side_all = pool.BM25Side(retriever, q, n)
                side_all.matches()
                for s in (side, side_all):
                    top, got, b_k = s.top(k, m)
                    keep = np.ones(rows.size, bool) if m is None else m[rows]
                    want_rows, want_vals = rows[keep], vals[keep]
                    assert np.array_equal(s.at(want_rows), want_vals)
                    outside = ~np.isin(want_rows, top)
                    assert np.array_equal(got, s.at(top)) and np.all(np.diff(top) > 0)
                    assert (want_vals[outside] <= b_k).all() and (top.size >= min(k, want_rows.size))
                    assert b_k == 0.0 or (got > b_k).all()
                    assert not (want_vals[outside] >= got.min(initial=np.inf)).any()  # the k-th's ties all in


def test_hybrid_draws_a_share_of_its_depth_from_bm25(index, monkeypatch):
    """``hybrid``'s BM25 side draws ``FIRST_DEPTH / HYBRID_BM25_SHARE`` best matches first (``bm25``: its own depth)."""
    monkeypatch.setattr(pool, "SMALL_POSTINGS", 0)
    asked = []
    real = pool.BM25Side.top
    monkeypatch.setattr(pool.BM25Side, "top", lambda self, k, mask=None: asked.append(k) or real(self, k, mask))
    for mode, first in (("hybrid", shortlist.FIRST_DEPTH // shortlist.HYBRID_BM25_SHARE),
                        ("bm25", shortlist.BM25_FIRST)):
        asked.clear()
        _page(index, monkeypatch, "candidates", "small left pleural effusion", mode=mode)
        assert asked and asked[0] == first, (mode, asked)
    assert shortlist.FIRST_DEPTH // shortlist.HYBRID_BM25_SHARE < shortlist.FIRST_DEPTH


def test_hnsw_sparse_scores_are_its_scores_array(hnsw_index, monkeypatch):
    backend = hnsw_index._backend(hnsw_index.store, "sentence")
    monkeypatch.setattr(backend, "candidates", 150)
    anchored = 0
    for q in QUERIES:
        v = hnsw_index.encoder.encode_query(q)
        sparse = backend.sparse_scores(v)
        assert sparse.rows is not None and sparse.rows.size < sparse.n
        assert np.array_equal(sparse.full(), backend.scores(v))
        assert sparse.groups is not None  # the demo reports three times over: duplicate groups, rows not listed
        dense = pool.DenseScores(sparse.n, sparse.values, sparse.rows, sparse.fill, sparse.node_of_row,
                                 sparse.groups)
        full = sparse.full()
        rows = np.arange(sparse.n)
        assert np.array_equal(dense.at(rows), full) and dense.hi == full.max() and dense.lo == full.min()
        assert np.array_equal(np.concatenate(dense.expanded()), np.concatenate([np.flatnonzero(full != sparse.fill),
                                                                                full[full != sparse.fill]]))
        fresh = pool.DenseScores(sparse.n, sparse.values, sparse.rows, sparse.fill, sparse.node_of_row, sparse.groups)
        lowest = fresh.lowest_rows(sparse.n)  # the groups at the lowest cosine listed, not every group scored
        assert fresh._rows is None and np.array_equal(lowest, np.flatnonzero(
            (full == dense.lo) & np.isin(rows, dense.expanded()[0])))
        anchored += bool(lowest.size)
        for k in (1, 10, 100, 5000):
            top, d_k = dense.top(k, None, sparse.n)
            rest = np.setdiff1d(rows, top)
            assert top.size >= min(k, sparse.n) and (d_k is None or (full[rest] <= d_k).all())
            assert d_k is None or (full[top] >= d_k).all() or top.size < k
    assert anchored, "no query's lowest cosine is a scored row (the anchor): lowest_rows untested"


@pytest.mark.parametrize("first", [1, 256])
@pytest.mark.parametrize("kw", BM25_SETTINGS + SETTINGS[3:5],
                         ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()))
def test_bm25_pages_counts_and_bands_equal_the_exact_engine(index, monkeypatch, kw, first):
    """``bm25`` from its best matches (a pool of 1 widened until exact, or the default) and counts from
    bitmaps: the same pages, scores, bands, ``total`` and ``matching`` as the exact engine, never every match."""
    monkeypatch.setattr(pool, "SMALL_POSTINGS", 0)
    monkeypatch.setattr(shortlist, "BM25_FIRST", first)
    matches = []
    real = pool.BM25Side.matches
    monkeypatch.setattr(pool.BM25Side, "matches", lambda self: matches.append(1) or real(self))
    for q in QUERIES:
        assert _page(index, monkeypatch, "candidates", q, **kw) == _page(index, monkeypatch, "exact", q, **kw), q
    if "target" not in kw and first > 1:
        assert len(matches) < len(QUERIES) / 2, "the candidate engine listed every match"


def test_bm25_without_the_bound_check_a_tiny_pool_is_wrong(index, monkeypatch):
    """What makes the ``bm25`` pool exact is the stop rule: skip it and pages differ."""
    monkeypatch.setattr(pool, "SMALL_POSTINGS", 0)
    monkeypatch.setattr(shortlist, "BM25_FIRST", 1)
    monkeypatch.setattr(shortlist, "_exact", lambda *a, **k: True)
    differ = sum(_page(index, monkeypatch, "candidates", q, mode="bm25") != _page(index, monkeypatch, "exact", q,
                                                                                  mode="bm25") for q in QUERIES)
    assert differ > 0


def test_bm25_counts_come_from_bitmaps(index):
    """A term's bitmap is its units (or their reports); unions count what a pass over the matches counts."""
    from radsift.search import bitmaps

    post = candidates.ReadingPostings.of(index.store, "sentence")
    retriever = index.store.bm25("sentence")
    n = post.n_units
    for q in QUERIES:
        side = pool.BM25Side(retriever, q, n)
        rows = side.matches()[0]
        for by_report in (False, True):
            sets = [post.terms.term(t, g, by_report) for t, g, _, _ in side.terms]
            keys = post.report_row[rows] if by_report else rows
            assert bitmaps.union_count(sets) == np.unique(keys).size
            assert post.terms.term(side.terms[0][0], side.terms[0][1], by_report) is sets[0] if sets else True
