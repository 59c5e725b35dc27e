"""A term's impact order read as a prefix (radsift.ranking.impacts) is the retriever's whole order's prefix."""

from __future__ import annotations

import numpy as np
import pytest

from radsift.ranking import impacts
from radsift.ranking.bm25 import build_bm25


def _postings(n: int, seed: int):
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(10 * n, n, replace=False)).astype(np.int64)
    weights = (rng.integers(1, 4, n) / rng.integers(1, 6, n)).astype(np.float32)  # many ties
    return rows, weights


@pytest.mark.parametrize("n", [0, 1, 5, 64, 65, 300, 4999, 5000, 7000])
def test_prefix_is_the_stable_orders_prefix(n):
    rows, weights = _postings(5000, n)
    order = np.argsort(-weights, kind="stable")
    got_rows, got_weights = impacts.impact_prefix(rows, weights, n)
    want = order[:n]
    assert got_rows.dtype == np.int64 and got_weights.dtype == np.float32
    assert np.array_equal(got_rows, rows[want]) and np.array_equal(got_weights, weights[want])


def test_a_term_is_read_as_far_as_asked_then_whole(monkeypatch):
    texts = [" ".join(["effusion"] * (1 + i % 3) + ["word"] * (i % 7)) for i in range(4000)]
    bm = build_bm25([t.split() for t in texts])
    g, w, _ = bm.postings("effusion")
    whole = bm.impact_postings("effusion")
    bm._impact_postings.clear()
    bm._impacts.clear()
    calls = []
    real = bm.impact_postings
    monkeypatch.setattr(bm, "impact_postings", lambda t: calls.append(t) or real(t))
    term = impacts.Impacts(bm, "effusion", np.asarray(g, dtype=np.int64), w)
    for n in (1, 100, 300):
        term.upto(n)
        assert term.rows.shape[0] >= n and not calls  # a prefix, the whole order never sorted
        assert np.array_equal(term.rows, whole[0][:term.rows.shape[0]])
        assert np.array_equal(term.weights, whole[1][:term.rows.shape[0]])
    again = impacts.Impacts(bm, "effusion", np.asarray(g, dtype=np.int64), w)
    assert again.rows.shape[0] >= 300  # kept for the next search
    term.upto(len(g))
    assert calls == ["effusion"] and np.array_equal(term.rows, whole[0])


def test_a_filtered_top_k_found_deep_scores_every_match_once(monkeypatch):
    from radsift.ranking import pool

    rng = np.random.default_rng(3)
    words = ["fluid", "in", "the", "lungs", "left", "base"]
    texts = [" ".join(rng.choice(words, int(rng.integers(2, 9)))) for _ in range(20000)]
    bm = build_bm25([t.split() for t in texts])
    mask = np.zeros(len(texts), dtype=bool)
    mask[::100] = True  # 1% of the units
    side = pool.BM25Side(bm, "fluid in the lungs", len(texts), first=10)
    rows, vals = side.matches()
    keep = mask[rows]
    order = np.lexsort((rows[keep], -vals[keep]))
    calls = []
    real = side._best_match
    monkeypatch.setattr(side, "_best_match", lambda k, m: calls.append(k) or real(k, m))
    side._all = None  # read the postings best weight first
    got_rows, got_vals, rest = side.top(10, mask)
    assert calls == [10]  # deep in the postings: every match scored once
    kth = vals[keep][order][9]
    assert set(got_rows.tolist()) == set(rows[keep][vals[keep] >= kth].tolist())
    assert rest == float(vals[keep][vals[keep] < kth].max())
