"""Issue 31, item 2: the passages protocol scores the candidates CAPR scores (BM25's top 64, no gold
appended; the appended variant apart), and ties never fall to candidate order."""

from __future__ import annotations

import numpy as np
import pytest

from radsift.corpus.medquad_passages import PassageData, PassageQuery
from radsift.evaluation.protocols.passage_retrieval import (RULE_APPENDED, RULE_BM25, append_gold, bm25_candidates,
                                                            evaluate_rules, expected_hit, expected_hits_at,
                                                            random_candidates, report_json, run_passages,
                                                            text_groups)
from radsift.evaluation.systems.passage_systems import BM25Passages, PassageSystem


class Table(PassageSystem):
    """Scores a pool row by a fixed table (the same row scores the same in every candidate list)."""

    name = "table"

    def __init__(self, table):
        self.table = np.asarray(table, dtype=np.float64)

    def score(self, queries, candidates):
        return [self.table[np.asarray(c, dtype=np.int64)] for c in candidates]


def _pool():
    passages = ["gout treatment colchicine rest", "gout symptoms pain toe", "asthma treatment inhaler",
                "asthma symptoms wheeze cough", "wheezing at night in children"]
    queries = [PassageQuery("a", {"entity-aspect": "gout treatment"}, frozenset({0})),
               PassageQuery("b", {"entity-aspect": "asthma symptoms"}, frozenset({4}))]
    return PassageData(passages, [f"p{i}" for i in range(len(passages))], queries)


def test_a_gold_bm25_misses_is_a_miss_under_the_primary_rule():
    data = _pool()
    bm25 = BM25Passages()
    bm25.prepare(data.passages)
    primary = bm25_candidates(bm25, ["asthma symptoms"], depth=2)[0]
    assert 4 not in primary                               # BM25 misses the gold of query b at depth 2
    # a system that knows every gold: it still cannot find b's under the primary rule
    oracle = Table([1.0, 0.0, 0.0, 0.0, 1.0])
    result = run_passages(data, [oracle], kinds=("entity-aspect",), depth=2)
    assert report_json(result)["table"]["entity-aspect"]["R@1"] == 50.0            # b is a miss
    assert report_json(result, RULE_APPENDED)["table"]["entity-aspect"]["R@1"] == 100.0
    assert result.data["ceiling"]["entity-aspect"] == 50.0
    assert append_gold([primary], [frozenset({4})]) == [primary + [4]]
    tables = {t.title for t in result.tables}
    assert any(RULE_BM25 in t for t in tables) and any(RULE_APPENDED in t for t in tables)


def test_identical_candidate_texts_score_as_the_expected_value_over_their_orders():
    # the gold (row 0) has an exact twin (row 2, spacing aside) that is not gold, and a system scores
    # them a hair apart (float noise of batched encoding): half the orders put the gold first
    passages = ["Gout is treated  with rest.", "Something else.", "Gout is treated with rest.", "Other."]
    queries = [PassageQuery("q", {"entity-aspect": "gout treatment"}, frozenset({0}))]
    for table in ([0.5, 0.1, 0.5000001, 0.0], [0.5000001, 0.1, 0.5, 0.0]):
        for order in ([0, 1, 2, 3], [2, 3, 1, 0]):
            results, _, _ = evaluate_rules([Table(table)], passages, queries, {RULE_BM25: {"entity-aspect": [order]}})
            entry = results["table"][RULE_BM25]["entity-aspect"]
            assert entry["R@1"]["value"] == pytest.approx(0.5) and entry["R@5"]["value"] == 1.0
    assert text_groups(passages).tolist() == [0, 1, 0, 2]


def test_expected_hit_by_hand():
    gold = np.array([True, False, False, False, False])
    assert expected_hit(np.array([1.0, 1.0, 1.0, 1.0, 0.0]), gold, 2) == pytest.approx(1 - 3 / 6)
    assert expected_hit(np.array([1.0, 2.0, 1.0, 1.0, 0.0]), gold, 1) == 0.0
    assert expected_hit(np.array([1.0, 2.0, 1.0, 1.0, 0.0]), gold, 2) == pytest.approx(1 / 3)
    assert expected_hit(np.array([1.0, 2.0, 1.0, 1.0, 0.0]), gold, 4) == 1.0
    assert expected_hit(np.zeros(5), np.zeros(5, dtype=bool), 5) == 0.0
    # two golds among four tied, one slot: 1 - C(2,1)/C(4,1)
    assert expected_hit(np.ones(4), np.array([True, True, False, False]), 1) == pytest.approx(0.5)
    # the same scores in any candidate order give the same figure
    scores = [np.array([0.2, 0.2, 0.2]), np.array([0.2, 0.2, 0.2])]
    assert expected_hits_at(scores, [[7, 8, 9], [9, 8, 7]], [frozenset({7})] * 2, 1) == [pytest.approx(1 / 3)] * 2


def test_random_candidates_hold_the_golds_and_are_seeded():
    golds = [frozenset({3}), frozenset({10, 11})]
    a = random_candidates(200, golds, depth=64, seed=1)
    assert [len(c) for c in a] == [64, 64] and all(g <= set(c) for c, g in zip(a, golds))
    assert all(len(set(c)) == 64 for c in a)
    assert a == random_candidates(200, golds, depth=64, seed=1) != random_candidates(200, golds, depth=64, seed=2)
    assert random_candidates(5, golds[:1], depth=64)[0].__len__() == 5
