"""The ranking core: top-k ties, modes, reading tiers, report aggregation and rerank, checked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from radsift.ranking import (apply_tiers, best_per_group, bm25_scores, build_bm25_texts, demote, rank, rank_groups,
                             rerank, side_tiers, stated_tiers, top_k, top_ranking, unit_tiers, units_with_terms)
from radsift.ranking.tiers import OPPOSITE, PARTIAL, STATES, reading_classes

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
        tiers = np.zeros(len(DENSE), dtype=np.int64)
        tiers[demoted] = 1
        rows, vals = rank(mode, None, dense=DENSE * 100, bm25=BM25, tiers=tiers)
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


# Stored mentions (row, finding, status): row 0 "no X", row 1 "X", row 2 "no X ... X" (both),
# row 3 "no Y", row 4 "X?", row 5 nothing.
ROW = np.array([0, 1, 2, 2, 3, 4])
FINDING = np.array([0, 0, 0, 0, 1, 0])
STATUS = np.array([-1, 1, -1, 1, -1, 0])


def _tiers(wanted, **kw):
    """Reading tiers (unit_tiers leaves room for three side tiers inside each reading tier)."""
    return [t // 3 for t in unit_tiers(stated_tiers(6, ROW, FINDING, STATUS, wanted), [s for _, s in wanted], **kw)]


def test_tiers_same_reading_then_none_then_uncertain_then_opposite():
    # "X": rows 1, 2 state it (0); 3, 5 say nothing of X (1); 4 is uncertain (2); 0 denies it (3)
    assert _tiers([(0, "present")]) == [3, 0, 0, 1, 2, 1]
    # "no X": row 0 states it; row 2 states both readings and takes its best
    assert _tiers([(0, "absent")]) == [0, 3, 0, 1, 2, 1]


def test_uncertain_query_puts_uncertain_first_then_present_then_none_then_absent():
    assert _tiers([(0, "uncertain")]) == [3, 1, 1, 2, 0, 2]


def test_several_findings_deny_any_is_last_and_stating_more_ranks_higher():
    # "X and no Y": row 2 states X (and Y unsaid); row 3 states no Y, X unsaid; row 0 denies X
    t = _tiers([(0, "present"), (1, "absent")])
    assert t[2] < t[5] and t[3] < t[5]  # stating one beats stating none
    assert max(t[1], t[2], t[3], t[4], t[5]) < t[0]  # denying X ranks below every unit that denies nothing
    both = unit_tiers(stated_tiers(2, np.array([0, 0, 1]), np.array([0, 1, 0]), np.array([1, -1, 1]),
                                   [(0, "present"), (1, "absent")]), ["present", "absent"])
    assert both[0] < both[1]  # stating both beats stating one


def test_report_level_judges_the_whole_report_for_several_findings():
    # report 0 = units 0, 1: "X." and "no Y."; report 1 = units 2, 3: "X." and "Y." (denies "no Y")
    stated = stated_tiers(4, np.array([0, 1, 2, 3]), np.array([0, 1, 0, 1]), np.array([1, -1, 1, 1]),
                          [(0, "present"), (1, "absent")])
    group_of = np.array([0, 0, 1, 1])
    tiers = unit_tiers(stated, ["present", "absent"], group_of=group_of)
    assert max(tiers[:2]) < min(tiers[2:])  # every unit of report 0 ranks above report 1
    groups, _, _ = rank_groups("dense", 2, group_of, dense=np.array([0.1, 0.2, 0.9, 0.8]), tiers=tiers)
    assert groups.tolist() == [0, 1]


def test_sides_same_then_none_then_opposite_within_a_reading_tier():
    left = np.array([1, 0, 0, 1, 0], bool)
    right = np.array([0, 1, 0, 1, 0], bool)
    bilateral = np.array([0, 0, 0, 0, 1], bool)
    assert side_tiers("left", left, right, bilateral).tolist() == [0, 2, 1, 1, 1]  # both sides named: no match
    assert side_tiers("bilateral", left, right, bilateral).tolist() == [2, 2, 1, 0, 0]
    # the reading comes first: a right-sided unit stating X beats a left-sided one denying it
    stated = stated_tiers(2, np.array([0, 1]), np.array([0, 0]), np.array([1, -1]), [(0, "present")])
    sides = side_tiers("left", np.array([0, 1], bool), np.array([1, 0], bool), np.zeros(2, bool))
    assert unit_tiers(stated, ["present"], sides).tolist() == [2, 9]
    assert unit_tiers(None, [], sides).tolist() == [2, 0]


def test_strict_tiers_outrank_any_score_and_boosts_can_be_crossed():
    scores = np.array([0.9, 0.5, 0.45], dtype=np.float32)
    tiers = np.array([1, 0, 0])
    assert np.argsort(-apply_tiers(scores, tiers)).tolist() == [1, 2, 0]
    assert np.argsort(-apply_tiers(scores, tiers, gap=0.2)).tolist() == [0, 1, 2]  # 0.9 - 0.2 x 0.45 > 0.5
    assert apply_tiers(scores, None) is scores


def test_units_with_terms_needs_every_term():
    retriever = build_bm25_texts(["No kidney stone.", "Stone in the left kidney.", "Kidney normal.", "stone"])
    assert sorted(units_with_terms(retriever, ["kidney", "stone"], 4).tolist()) == [0, 1]
    assert units_with_terms(retriever, ["kidney", "zebra"], 4).tolist() == []


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
    positions, scores = rerank(first, cross, weight=1.0, tiers=[0, 1, 1])
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


def test_best_per_owner_is_each_owners_best_unit():
    """The scatter-max of unit scores onto their owners: fill for an owner without units, and chunks
    accumulated into ``out`` give the one-pass answer."""
    from radsift.ranking import best_per_owner

    scores = np.array([0.2, 0.9, -0.5, 0.4, 0.1])
    owner = np.array([0, 0, 2, 2, 0])
    best = best_per_owner(scores, owner, 4)
    assert best.dtype == np.float32 and best.tolist() == pytest.approx([0.9, -np.inf, 0.4, -np.inf])
    assert best_per_owner(scores, owner, 4, fill=0.0).tolist() == pytest.approx([0.9, 0.0, 0.4, 0.0])
    out = np.full(4, -np.inf, dtype=np.float32)
    for at in (slice(0, 2), slice(2, 5)):
        best_per_owner(scores[at], owner[at], 4, out=out)
    assert out.tolist() == best.tolist()


def test_a_denial_the_report_contradicts_ranks_below_a_plain_denial():
    # report 0 = units 0, 1: "No nodules or masses." and "Multiple small nodules."; report 1 = unit 2:
    # "No nodules."; report 2 = unit 3: nothing of nodules
    stated = stated_tiers(4, np.array([0, 1, 2]), np.array([0, 0, 0]), np.array([-1, 1, -1]), [(0, "absent")])
    group_of = np.array([0, 0, 1, 2])
    tiers = unit_tiers(stated, ["absent"], group_of=group_of)
    assert max(tiers[2], tiers[3]) < min(tiers[:2])  # below a plain denial, and below a report silent on it
    groups, _, _ = rank_groups("dense", 3, group_of, dense=np.array([0.9, 0.8, 0.1, 0.2]), tiers=tiers)
    assert groups.tolist() == [1, 2, 0]
    _, reports = reading_classes(stated, ["absent"], group_of)
    assert reports.tolist() == [PARTIAL, STATES, PARTIAL]  # the contradicted report does not state "no nodules"
    # asked "nodules", the same report states them: a finding stated anywhere is there
    present = stated_tiers(4, np.array([0, 1, 2]), np.array([0, 0, 0]), np.array([-1, 1, -1]), [(0, "present")])
    assert reading_classes(present, ["present"], group_of)[1].tolist() == [STATES, OPPOSITE, PARTIAL]
