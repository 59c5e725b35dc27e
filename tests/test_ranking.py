"""The ranking core: top-k ties, modes, reading tiers, report aggregation and rerank, checked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from radsift.ranking import (best_per_group, bm25_scores, build_bm25_texts, demote, opposing_rows, rank, rank_groups,
                             rerank, top_k, top_ranking)

DENSE = np.array([0.9, 0.1, 0.5, 0.5, 0.3], dtype=np.float32)
BM25 = np.array([0.0, 2.0, 1.0, 0.0, 0.0], dtype=np.float32)


def test_top_k_breaks_ties_by_lower_row_also_at_the_cut_off():
    scores = np.array([0.1, 0.5, 0.5, 0.5, 0.9])
    rows, vals = top_k(scores, 2)
    assert rows.tolist() == [4, 1] and vals.tolist() == [0.9, 0.5]
    assert top_k(scores, 3, mask=np.array([1, 0, 0, 1, 1], bool))[0].tolist() == [4, 3, 0]
    assert top_k(scores, None)[0].tolist() == [4, 1, 2, 3, 0]
    assert top_k(scores, 0)[0].tolist() == []
    assert top_ranking(scores, 1) == [(4, 0.9)]


def test_each_mode_by_hand():
    # hybrid: 0.75 x min-max(dense) + 0.25 x min-max(bm25) = [0.75, 0.25, 0.5, 0.375, 0.1875]
    rows, vals = rank("hybrid", 3, dense=DENSE, bm25=BM25)
    assert rows.tolist() == [0, 2, 3] and vals.tolist() == pytest.approx([0.75, 0.5, 0.375])
    assert rank("dense", None, dense=DENSE)[0].tolist() == [0, 2, 3, 4, 1]
    # BM25 leaves out units sharing no term with the query
    assert rank("bm25", None, bm25=BM25)[0].tolist() == [1, 2]
    # RRF: dense ranks 0,2,3,4,1 and BM25 ranks 1,2: row 2 = 1/62 + 1/62, row 1 = 1/65 + 1/61, row 0 = 1/61
    rows, vals = rank("hybrid-rrf", 3, dense=DENSE, bm25=BM25)
    assert rows.tolist() == [2, 1, 0]
    assert vals.tolist() == pytest.approx([2 / 62, 1 / 65 + 1 / 61, 1 / 61])
    with pytest.raises(ValueError, match="mode must be one of"):
        rank("sparse", 3, dense=DENSE)


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid", "hybrid-rrf"])
def test_demoted_units_rank_below_every_other_unit_in_every_mode(mode):
    # Row 1 is BM25's best and row 2 the runner-up on both sides: demoted, each must fall below
    # every other returned unit, whatever the scales of the scores.
    for demoted in ([1], [2], [1, 2]):
        rows, vals = rank(mode, None, dense=DENSE * 100, bm25=BM25, demoted=np.array(demoted))
        rows = rows.tolist()
        kept = [r for r in rows if r not in demoted]
        assert rows[:len(kept)] == kept, (mode, demoted, rows)
        assert all(vals[i] > vals[j] for i in range(len(kept)) for j in range(len(kept), len(rows)))


def test_demote_moves_rows_below_any_score_range():
    scores = np.array([100.0, -100.0, 5.0], dtype=np.float32)
    out = demote(scores, np.array([0, 2]))
    assert out[0] < out[1] and out[2] < out[1]
    assert out[0] > out[2]  # their own order is kept
    assert demote(scores, None) is scores


def test_opposing_rows_keeps_units_that_also_state_the_wanted_reading():
    # (row, finding, status): row 0 "no X", row 1 "X", row 2 "no X ... X" (both), row 3 "no Y", row 4 "X?"
    row = np.array([0, 1, 2, 2, 3, 4])
    finding = np.array([0, 0, 0, 0, 1, 0])
    status = np.array([-1, 1, -1, 1, -1, 0])
    assert opposing_rows(row, finding, status, {0: "present"}).tolist() == [0]
    assert opposing_rows(row, finding, status, {0: "absent"}).tolist() == [1]
    assert opposing_rows(row, finding, status, {0: "present", 1: "present"}).tolist() == [0, 3]
    assert opposing_rows(row, finding, status, {0: "uncertain"}) is None


def test_groups_stand_on_their_best_unit_and_widening_changes_nothing():
    rng = np.random.default_rng(0)
    dense = rng.random(2000).astype(np.float32)
    group_of = np.repeat(np.arange(400), 5)
    rows, vals = rank("dense", None, dense=dense)
    full = best_per_group(rows, vals, group_of)
    for k in (1, 7, 150, 400):
        groups, units, scores = rank_groups("dense", k, group_of, dense=dense)
        assert groups.tolist() == full[0][:k].tolist() and units.tolist() == full[1][:k].tolist()
        assert all(dense[units] == scores)
    # with a mask that leaves few units the cut-off widens until every unit is ranked
    mask = np.zeros(2000, bool)
    mask[[3, 1500, 1999]] = True
    by_score = sorted([3, 1500, 1999], key=lambda r: -dense[r])
    assert rank_groups("dense", 5, group_of, dense=dense, mask=mask)[0].tolist() == [r // 5 for r in by_score]


def test_rerank_orders_the_head_by_the_fused_score_and_keeps_scores_decreasing():
    first = [3.0, 2.0, 1.0]
    cross = [0.0, 0.0, 9.0]  # the cross-encoder prefers the last head item
    positions, scores = rerank(first, cross, weight=1.0, tail=[0.8, 0.7])
    assert positions == [2, 0, 1, 3, 4]
    assert all(a >= b for a, b in zip(scores, scores[1:]))
    assert scores[3] - scores[4] == pytest.approx(0.1)  # the tail keeps its own gaps
    # demoted items form a second group below the first, reranked on their own
    positions, scores = rerank(first, cross, weight=1.0, demoted=[False, True, True])
    assert positions == [0, 2, 1]
    assert all(a > b for a, b in zip(scores, scores[1:]))


def test_bm25_drops_unknown_query_words_and_scores_misses_zero():
    retriever = build_bm25_texts(["No pneumothorax.", "Small pneumothorax.", "Heart is normal."])
    with_unknown = bm25_scores(retriever, "pneumothorax zebra", 3)
    assert with_unknown.tolist() == bm25_scores(retriever, "pneumothorax", 3).tolist()
    assert with_unknown[2] == 0 and with_unknown[0] > 0
    assert bm25_scores(retriever, "zebra", 3).tolist() == [0, 0, 0]
    empty = build_bm25_texts(["...", ""])  # no token at all: a stub index that matches nothing
    assert bm25_scores(empty, "pneumothorax", 2).tolist() == [0, 0]
