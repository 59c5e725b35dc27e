"""A report that denies a finding in one sentence and states it in another does not deny it (issue 35,
the newcomer's "no nodules"): it ranks below plain denials on both search engines, and is not exported
as stating the denial."""

from __future__ import annotations

import pytest
from engine_pages import engine_page, hashing_index

from radsift.records import Report

REPORTS = [
    # the contradicted denial, and the closest words to the query, so that only the rule puts it last
    Report("mixed", {"impression": "No nodules or masses. No nodules. Multiple small nodules throughout the lungs."}),
    Report("denies", {"impression": "Heart size is normal. No nodules."}),
    Report("denies2", {"findings": "The lungs are clear without nodules.", "impression": "Normal chest."}),
    Report("other", {"impression": "Small right pleural effusion."}),
    # contradicted by a unit that shares no word with the query ("hydrothoraces" is an effusion), and in
    # another section than the denial: a count judges the whole report, counted units or not
    Report("words", {"findings": "Small bilateral hydrothoraces.", "impression": "No pleural effusion."}),
    # a query read as two findings ("feeding tube" states its part, nasogastric tube)
    Report("tubes", {"findings": "Dobhoff tube tip in the stomach.", "impression": "No feeding tube."}),
    Report("notube", {"impression": "No feeding tube. Heart size is normal."}),
]


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    return hashing_index(tmp_path_factory.mktemp("contradicted"), REPORTS)


@pytest.mark.parametrize("engine", ["exact", "candidates"])
@pytest.mark.parametrize("mode", ["hybrid", "dense", "bm25"])
def test_a_contradicted_denial_ranks_below_plain_denials(index, monkeypatch, engine, mode):
    hits, _ = engine_page(index, monkeypatch, engine, "no nodules", level="report", mode=mode)
    ids = [h[0] for h in hits]
    assert "mixed" in ids and ids.index("mixed") > ids.index("denies")
    assert ids.index("mixed") > ids.index("denies2")


@pytest.mark.parametrize("options", [{}, {"mode": "bm25"}, {"mode": "dense"}, {"target": "impression"},
                                     {"mode": "bm25", "target": "impression"}])
def test_both_engines_give_the_same_page_and_counts(index, monkeypatch, options):
    for q in ["no nodules", "nodules", "no pleural effusion", "no feeding tube"]:
        assert engine_page(index, monkeypatch, "candidates", q, level="report", **options) == \
            engine_page(index, monkeypatch, "exact", q, level="report", **options), q


@pytest.mark.parametrize("engine", ["exact", "candidates"])
@pytest.mark.parametrize("options", [{}, {"mode": "bm25"}, {"target": "impression"}])
def test_a_count_of_denials_leaves_out_a_report_that_states_the_finding(index, monkeypatch, engine, options):
    for q, contradicted in [("no pleural effusion", "words"), ("no feeding tube", "tubes")]:
        monkeypatch.setenv("RADSIFT_ENGINE", engine)
        res = index.search(q, k=10, level="report", **options)
        stating = [h.report_id for h in res if h.band == "states"]
        assert contradicted not in stating and "notube" in stating or q != "no feeding tube", (q, stating)
        assert res.matching == len(stating), (q, engine, options)


def test_asked_for_the_finding_the_contradicted_report_states_it(index):
    hits = index.search("nodules", k=4, level="report")
    assert hits[0].report_id == "mixed"
