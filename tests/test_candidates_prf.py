"""Pseudo-relevance feedback (``prf``) on the candidate engine: the exact engine's page, scores, bands and counts.

The first pass's best units come from the candidate engine's unit ranking, the second pass scores the moved
query vector and RM3's weighted BM25 query (:class:`radsift.ranking.pool.BM25Side` with weights); each test
compares with ``RADSIFT_ENGINE=exact`` bit for bit (scores unrounded), and the rules that make it so are each
broken once to see the pages differ.
"""

from __future__ import annotations

import numpy as np
import pytest
from engine_pages import answered as _answered
from test_candidates import BM25_SETTINGS, QUERIES, SETTINGS

from radsift.ranking import pool, prf
from radsift.search import candidates, shortlist

#: Every mode at both levels, a filter, paging, a section target, a filter with paging, section units.
PRF_SETTINGS = SETTINGS + [{"mode": "dense", "level": "sentence"},
                           {"mode": "dense", "level": "report", "where": ["site=south"], "offset": 5},
                           {"mode": "hybrid", "level": "report", "unit": "section"},
                           {"mode": "bm25", "level": "sentence", "unit": "section"}] + BM25_SETTINGS


@pytest.fixture(scope="module")
def index(tmp_path_factory, sited_demo_index_at):
    return sited_demo_index_at(tmp_path_factory.mktemp("cand-prf"))


def _page(index, monkeypatch, engine, query, **kw):
    monkeypatch.setenv(candidates.ENV, engine)
    res = index.search(query, k=10, prf=True, **kw)
    return [(h.report_id, h.sentence.text, h.band, h.relevance, h.score, h.fused) for h in res], \
        (res.total, res.matching, res.lower_bound, res.more)


def _differ(index, monkeypatch, settings) -> int:
    return sum(_page(index, monkeypatch, "candidates", q, **kw) != _page(index, monkeypatch, "exact", q, **kw)
               for kw in settings for q in QUERIES)


@pytest.mark.parametrize("kw", PRF_SETTINGS, ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()))
def test_prf_pages_scores_bands_and_counts_equal_the_exact_engine(index, monkeypatch, kw):
    calls = _answered(monkeypatch)
    for q in QUERIES:
        assert _page(index, monkeypatch, "candidates", q, **kw) == _page(index, monkeypatch, "exact", q, **kw), q
    assert len(calls) == len(QUERIES), "prf went to the exact engine"


@pytest.mark.parametrize("depth", [1, 20])
def test_prf_from_tiny_pools_read_best_weight_first_is_exact(index, monkeypatch, depth):
    """Pools of 1 or 20 (widened until exact) and the weighted query's threshold top-k (never every match first)."""
    monkeypatch.setattr(pool, "SMALL_POSTINGS", 0)
    monkeypatch.setattr(shortlist, "FIRST_DEPTH", depth)
    monkeypatch.setattr(shortlist, "BM25_FIRST", depth)
    assert _differ(index, monkeypatch, [SETTINGS[0], SETTINGS[1], SETTINGS[3], SETTINGS[-1], BM25_SETTINGS[0]]) == 0


def test_prf_with_calibrated_tier_boosts_is_exact(index, monkeypatch):
    monkeypatch.setattr(index, "tier_gap", 0.5)
    monkeypatch.setattr(shortlist, "FIRST_DEPTH", 20)
    assert _differ(index, monkeypatch, [SETTINGS[0], SETTINGS[2], SETTINGS[3]]) == 0


def test_prf_with_a_first_stage_or_a_rank_fusion_goes_to_the_exact_engine(index, monkeypatch):
    monkeypatch.setattr("radsift.search.walk.candidate_page", lambda *a, **k: pytest.fail("not routed"))
    monkeypatch.setenv(candidates.ENV, "candidates")
    index.search("no pneumothorax", k=5, prf=True, mode="hybrid-rrf")


def _weighted_misses(index) -> int:
    """Weighted sides (RM3 weights of each query) whose matches, scores or threshold top-k differ from the exact
    array (:func:`radsift.ranking.prf.weighted_bm25_scores`)."""
    retriever = index.store.bm25("sentence")
    n = index.store.units("sentence").report_row.shape[0]
    texts = ["pleural effusion left", "heart size normal", "no pneumothorax"]
    misses = 0
    for q in QUERIES:
        weights = prf.rm3_weights(q.split(), [t.split() for t in texts], [3.0, 2.0, 1.0])
        full = prf.weighted_bm25_scores(retriever, weights, n)
        side = pool.BM25Side(retriever, q, n, weights=weights)
        rows, vals = side.matches()
        misses += not (np.array_equal(rows, np.flatnonzero(full > 0)) and np.array_equal(vals, full[rows]))
        misses += not np.array_equal(side.at(np.arange(n)), full)
        for k in (1, 5, 40):
            top, got, b_k = pool.BM25Side(retriever, q, n, weights=weights).top(k)
            misses += not (np.array_equal(got, full[top]) and top.size >= min(k, rows.size))
            misses += not (full[np.setdiff1d(np.arange(n), top)] <= b_k).all()
    return misses


def test_the_weighted_bm25_side_is_weighted_bm25_scores_bit_for_bit(index, monkeypatch):
    """Every match, any unit's score and the threshold top-k's best and bound, against the exact array."""
    monkeypatch.setattr(pool, "SMALL_POSTINGS", 0)
    assert _weighted_misses(index) == 0


def test_without_the_weighted_bound_the_threshold_top_k_misses_units(index, monkeypatch):
    """The weighted query's threshold top-k stops on its bound (each term's next impact, weighted): with no bound
    (0) it stops before some unit not yet read that scores above what it returns."""
    monkeypatch.setattr(pool, "SMALL_POSTINGS", 0)
    monkeypatch.setattr(pool.BM25Side, "_next_bound", lambda self, ends, orders: np.float32(0))
    assert _weighted_misses(index) > 0


def test_without_the_weights_order_scores_are_not_bit_equal(index, monkeypatch):
    """float32 sums follow the weights' order (as ``weighted_bm25_scores``): reversed, some score moves a bit."""
    real = prf.rm3_weights
    monkeypatch.setattr(shortlist, "rm3_weights", lambda *a, **k: dict(reversed(list(real(*a, **k).items()))))
    assert _differ(index, monkeypatch, [SETTINGS[0], SETTINGS[3]]) > 0


def test_without_the_unit_ranking_of_the_first_pass_pages_differ(index, monkeypatch):
    """The feedback units are the best units, not the best unit of each best report (report level)."""
    real = shortlist._rank
    monkeypatch.setattr(shortlist, "_rank", lambda opts, *a, **k: real(
        opts.__class__(**{**opts.__dict__, "level": "report"}) if k.get("keep") is False else opts, *a, **k))
    assert _differ(index, monkeypatch, [SETTINGS[0], SETTINGS[3]]) > 0


#: Findings fewer units name than feedback takes (the first pass of ``bm25`` takes every match).
RARE = ["emphysema", "hyperinflation", "pacemaker", "granuloma", "mass", "port", "air-fluid level"]


def _rare_differ(index, monkeypatch) -> int:
    return sum(_page(index, monkeypatch, "candidates", q, mode="bm25", level=level) !=
               _page(index, monkeypatch, "exact", q, mode="bm25", level=level)
               for q in RARE for level in ("report", "sentence"))


def test_prf_bm25_with_fewer_matches_than_feedback_units_is_exact(index, monkeypatch):
    assert _rare_differ(index, monkeypatch) == 0


def test_with_the_units_stating_the_reading_in_bm25s_first_pass_pages_differ(index, monkeypatch):
    """The exact engine's first pass keeps no unit sharing no term: taking them moves ``bm25``'s feedback."""
    real = shortlist._rank
    monkeypatch.setattr(shortlist, "_rank", lambda *a, **k: real(*a, **{**k, "keep": True}))
    assert _rare_differ(index, monkeypatch) > 0


def test_without_the_coverage_rule_switched_off_the_first_pass_can_stop_early(index, monkeypatch):
    """At report level a unit of a report already in the pool still ranks alone in the first pass: counting such
    reports as covered (the report ranking's rule) lets a tiny pool stop before it is exact."""
    monkeypatch.setattr(shortlist, "FIRST_DEPTH", 1)
    real = shortlist._exact
    monkeypatch.setattr(shortlist, "_exact", lambda *a, **k: real(*a[:6], a[6], True, *a[8:], **k))
    # the demo corpus's case moves with the body places read (the aorta's parts left hybrid and dense alike; the
    # impression target still differs): any of the three shows the rule at work
    assert _differ(index, monkeypatch, [SETTINGS[0], SETTINGS[2], SETTINGS[6]]) > 0


@pytest.fixture(scope="module")
def hnsw_index(index):
    """The same index searched through an HNSW graph scoring 150 rows per query: a filter's units mostly at the
    graph's floor in the second pass, which the exact engine scores without the filter's mask."""
    pytest.importorskip("faiss")
    from radsift.search import Index

    out = Index.open(index.store.index_dir, encoder=index.encoder, backend="hnsw")
    out._backend(out.store, "sentence").candidates = 150
    return out


#: Filters with paging through the HNSW graph, every mode.
HNSW_SETTINGS = [{"mode": "hybrid", "level": "report", "where": ["site=south"]},
                 {"mode": "dense", "level": "report", "where": ["site=south"], "offset": 5},
                 {"mode": "hybrid", "level": "sentence", "where": ["site=north"]}, SETTINGS[0], SETTINGS[2]]


def test_prf_through_an_hnsw_graph_with_a_filter_is_exact(hnsw_index, monkeypatch):
    calls = _answered(monkeypatch)
    assert _differ(hnsw_index, monkeypatch, HNSW_SETTINGS) == 0
    assert len(calls) == len(HNSW_SETTINGS) * len(QUERIES)


def test_with_the_filters_mask_in_the_second_dense_pass_pages_differ(hnsw_index, monkeypatch):
    """The exact engine scores the moved vector over every unit (no mask): an HNSW graph searched within the
    filter's units instead finds others, and pages differ."""
    real, masks = shortlist._dense, []

    def dense(index, store, unit, vector, mask, check=True):
        masks.append(mask) if check else None
        return real(index, store, unit, vector, mask if check else masks[-1], check)
    monkeypatch.setattr(shortlist, "_dense", dense)
    assert _differ(hnsw_index, monkeypatch, HNSW_SETTINGS[:3]) > 0
