"""The quick held-out evaluator of radsift train (sentence mAP, separation, findings-to-impression)."""

from __future__ import annotations

import numpy as np
import pytest

from radsift.labels import Query
from radsift.models.training.data import LabeledSentence, SectionPair, text_key
from radsift.evaluation.heldout import EvalSet, distinct_impressions, eval_set, evaluate_bm25, evaluate_encoder

YES, NO = Query("yes", "pneumothorax"), Query("no", "pneumothorax")

VECTORS = {
    "No pneumothorax.": [1.0, 0.0, 0.0],
    "Small pneumothorax.": [0.0, 1.0, 0.0],
    "Heart normal.": [0.0, 0.0, 1.0],
    "no pneumothorax": [0.8, 0.6, 0.0],
    "pneumothorax": [0.6, 0.8, 0.0],
    # sections
    "F1": [1.0, 0.0, 0.0], "F2": [0.0, 1.0, 0.0], "F3": [0.0, 0.0, 1.0],
    "No acute disease.": [1.0, 0.0, 0.0], "Pneumothorax.": [0.0, 1.0, 0.0],
}


def encode(texts, kind):
    return np.array([VECTORS[t] for t in texts], dtype=np.float32)


def _sentence(i, text, labels):
    return LabeledSentence(f"s{i}", text, frozenset(labels), frozenset(labels), frozenset())


def _pair(rid, f, i):
    return SectionPair(rid, f, i, text_key(f), text_key(i))


@pytest.fixture()
def es():
    sentences = [_sentence(1, "No pneumothorax.", {NO}), _sentence(2, "Small pneumothorax.", {YES}),
                 _sentence(3, "Heart normal.", set())]
    pairs = [_pair("a", "F1", "No acute disease."), _pair("b", "F2", "Pneumothorax."),
             _pair("c", "F3", "no acute disease")]  # same impression as "a" once normalized
    return EvalSet(sentences, {NO: {"s1"}, YES: {"s2"}}, [(0, NO), (1, YES)], pairs)


def test_sentence_map_and_separation(es):
    r = evaluate_encoder(encode, es)
    assert r["map_yes"] == 1.0 and r["map_no"] == 1.0 and r["map_all"] == 1.0
    assert r["n_queries_yes"] == 1 and r["n_queries_no"] == 1
    # entry (s1, no): cos(no, s1) - cos(yes, s1) = 0.8 - 0.6; entry (s2, yes): 0.8 - 0.6
    assert r["separation"] == pytest.approx(0.2)
    assert r["per_query"] == {"no:pneumothorax": 1.0, "yes:pneumothorax": 1.0}


def test_findings_to_impression_uses_distinct_impressions(es):
    texts, own = distinct_impressions(es.pairs)
    assert texts == ["No acute disease.", "Pneumothorax."] and own == [0, 1, 0]
    r = evaluate_encoder(encode, es)
    assert r["n_pairs"] == 3 and r["fi_hits"] == [True, True, True]  # 2 candidates: all in the top 5


def test_bm25_baseline(es):
    r = evaluate_bm25(es)
    assert "separation" not in r
    assert r["map_no"] == 1.0  # "no pneumothorax" matches both words of s1 only
    assert r["n_pairs"] == 3


def test_hybrid_fuses_dense_and_bm25_as_radsift_search(es):
    from radsift.evaluation.heldout import evaluate_hybrid

    # rows: queries in es.queries order (no, yes); columns: s1 "No pneumothorax.", s2, s3
    dense = {"scores": np.array([[0.1, 0.9, 0.5], [0.2, 0.8, 0.1]])}
    bm25 = {"scores": np.array([[2.0, 1.0, 0.0], [1.0, 1.5, 0.0]])}
    r = evaluate_hybrid(dense, bm25, es, fusion="rrf")
    # "no": dense ranks s2, s3, s1; BM25 s1, s2 (s3 scores 0: unranked). RRF (k = 60):
    # s2 1/61 + 1/62 > s1 1/63 + 1/61 > s3 1/62, so the relevant s1 is second: AP 0.5.
    assert r["per_query"] == {"no:pneumothorax": 0.5, "yes:pneumothorax": 1.0}
    assert r["map_no"] == 0.5 and r["map_all"] == 0.75
    # Convex (the default): min-max dense [0, 1, 0.5], BM25 [1, 0.5, 0]; 0.75 / 0.25 gives
    # s1 0.25 < s3 0.375 < s2 0.875: the score gap that RRF ignores puts s1 third, AP 1/3.
    r = evaluate_hybrid(dense, bm25, es)
    assert r["per_query"] == {"no:pneumothorax": pytest.approx(1 / 3), "yes:pneumothorax": 1.0}
    with pytest.raises(ValueError, match="fusion must be"):
        evaluate_hybrid(dense, bm25, es, fusion="max")


def test_eval_set_keeps_the_fold_findings_unless_told_otherwise():
    from types import SimpleNamespace

    effusion = Query("no", "pleural effusion")
    sentences = [_sentence(1, "No pneumothorax.", {NO}), _sentence(2, "No effusion.", {effusion})]
    data = SimpleNamespace(test_findings=("pneumothorax",), heldout_sentences=sentences, heldout_pairs=[])
    assert list(eval_set(data).queries) == [NO]  # split by finding: the held-out fold's findings
    dev = eval_set(data, findings={"pleural effusion"})  # the trained findings, asked for by name
    assert dev.queries == {effusion: {"s2"}} and dev.entries == [(1, effusion)]
    assert set(eval_set(SimpleNamespace(test_findings=(), heldout_sentences=sentences, heldout_pairs=[])).queries) \
        == {NO, effusion}
