"""A query asking for a finding is never answered first by a unit that only says all is normal: within one reading
tier, units (and reports) that say only normal things ("Lungs are clear.") or nothing of the patient ("Chest.")
rank after those that may state a finding, on both engines (radsift.ranking.tiers.with_normal,
radsift.search.normals); a query asking for a normal statement or an absence is left as it was."""

from __future__ import annotations

import numpy as np
import pytest
from engine_pages import engine_page, hashing_index

from radsift.ranking.tiers import (SAYS_FINDING, SAYS_NORMAL, SAYS_NOTHING, SAYS_OTHER, asks_finding, normal_keys,
                                   normal_only, unit_tiers, with_normal)
from radsift.records import Report
from radsift.search.normals import said_by_labels
from radsift.text.normality import EXAM, NORMAL, OTHER, sentence_kind


@pytest.mark.parametrize("text, kind", [
    ("The lungs are clear.", NORMAL),
    ("Clear lungs.", NORMAL),
    ("1. No acute cardiopulmonary process.", NORMAL),
    ("There are no acute bony findings.", NORMAL),
    ("Negative chest x-XXXX.", NORMAL),
    ("The XXXX are intact.", NORMAL),
    ("Both lungs are clear and expanded.", NORMAL),
    ("The lungs are otherwise clear.", NORMAL),
    ("heart and lungs are okay", NORMAL),
    ("Lungs appear relatively clear on today's exam.", NORMAL),
    ("lungs are well expanded", NORMAL),
    ("Chest.", EXAM),
    ("PA and lateral views of the chest were obtained.", EXAM),
    ("Comparison: none.", EXAM),
    ("Stable cardiomediastinal silhouette.", EXAM),
    ("Hyperexpanded lungs.", OTHER),
    ("Hyperexpanded but clear lungs.", OTHER),          # a turn: what precedes may be a finding
    ("No acute disease, but calcified hilar nodes.", OTHER),
    ("No interval change in the calcified nodes.", OTHER),  # a denial of change is no normal statement
    ("Calcified aortic knob.", OTHER),
    ("The heart is not normal in size.", OTHER),
])
def test_sentence_kind(text, kind):
    assert sentence_kind(text) == kind


def test_said_by_labels_a_present_or_uncertain_label_states_a_finding():
    said, labeled = said_by_labels(4, np.array([0, 1, 1, 2]), np.array([-1, -1, 1, 0]))
    assert said.tolist() == [SAYS_NORMAL, SAYS_FINDING, SAYS_FINDING, SAYS_OTHER]
    assert labeled.tolist() == [True, True, True, False]


def test_normal_only_and_keys():
    # sentences: 0 normal, 1 nothing (exam), 2 finding, 3 normal, 4 other, 5 nothing
    said = np.array([SAYS_NORMAL, SAYS_NOTHING, SAYS_FINDING, SAYS_NORMAL, SAYS_OTHER, SAYS_NOTHING])
    assert normal_only(said, np.arange(6), 6).tolist() == [True, True, False, True, False, True]
    # units are sentences; reports: {0, 1}, {2, 3}, {4, 5}
    group_of = np.array([0, 0, 1, 1, 2, 2])
    assert normal_keys(said, 6).tolist() == [1, 1, 0, 1, 0, 1]
    assert normal_keys(said, 6, group_of=group_of).tolist() == [3, 3, 0, 1, 0, 1]
    # section units: sentences 0-2 in unit 0, 3-5 in unit 1
    assert normal_keys(said, 2, unit_of=np.array([0, 0, 0, 1, 1, 1])).tolist() == [0, 0]


def test_the_normal_key_orders_within_a_tier_never_across():
    tiers = np.array([0, 0, 1, 1, 3])
    keys = np.array([1, 0, 1, 0, 0])
    got = with_normal(tiers, keys, by_report=False)
    assert np.argsort(got, kind="stable").tolist() == [1, 0, 3, 2, 4]
    assert with_normal(tiers, None, by_report=False) is tiers
    assert asks_finding(["present"]) and asks_finding(["absent", "uncertain"]) and not asks_finding(["absent"])
    assert not asks_finding([])
    # report level: the report's key before the unit's, both below the report's reading and the unit's tier
    report = unit_tiers(np.array([[9], [9]], dtype=np.int8), ["present"], group_of=np.array([0, 1]))
    assert np.argsort(with_normal(report, np.array([3, 0]), by_report=True)).tolist() == [1, 0]


REPORTS = [
    # the shortest texts sharing the query's word: plain similarity puts them first
    Report("clear", {"impression": "Lungs are clear."}),
    Report("clear2", {"findings": "Heart size is normal. Lungs are clear.", "impression": "Normal chest."}),
    Report("exam", {"findings": "Chest. PA and lateral views of the chest.", "impression": "No acute cardiopulmonary process."}),
    # reports stating findings, in longer words
    Report("granuloma", {"findings": "Calcified granuloma in the right upper lobe of the lungs.",
                         "impression": "Lungs are otherwise clear."}),
    Report("hyper", {"impression": "Hyperexpanded and flattened lungs with emphysematous change."}),
    Report("effusion", {"findings": "Small right pleural effusion and hazy lungs bases."}),
    Report("noeffusion", {"findings": "No pleural effusion. Lungs are clear."}),
]
NORMAL_IDS = {"clear", "clear2", "exam", "noeffusion"}
NORMAL_TEXTS = {"Lungs are clear.", "Heart size is normal.", "Normal chest.", "Chest.", "PA and lateral views of the chest.",
                "No acute cardiopulmonary process.", "Lungs are otherwise clear.", "No pleural effusion."}


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    return hashing_index(tmp_path_factory.mktemp("normal-fallback"), REPORTS)


@pytest.mark.parametrize("engine", ["exact", "candidates"])
@pytest.mark.parametrize("mode", ["hybrid", "dense", "bm25"])
@pytest.mark.parametrize("level", ["report", "sentence"])
def test_an_open_finding_no_unit_states_falls_back_on_units_that_state_something(index, monkeypatch, engine, mode,
                                                                                  level):
    hits, _ = engine_page(index, monkeypatch, engine, "wet lungs", level=level, mode=mode, concepts=False)
    ids = [h[0] if level == "report" else h[1] for h in hits]
    assert ids, (engine, mode, level)
    normal = NORMAL_IDS if level == "report" else NORMAL_TEXTS
    firsts = [i for i in ids if i not in normal]
    assert len(firsts) < len(ids), ids  # some normal ones are on the page, after
    # every report that may state a finding comes before any that says only all is normal
    assert ids[:len(firsts)] == firsts, ids
    if level == "report":
        assert set(ids[:len(firsts)]) >= {"granuloma", "hyper"} or mode == "bm25", ids


@pytest.mark.parametrize("engine", ["exact", "candidates"])
def test_what_the_labels_say_still_comes_first(index, monkeypatch, engine):
    hits, _ = engine_page(index, monkeypatch, engine, "pleural effusion", level="report", concepts=False)
    ids = [h[0] for h in hits]
    assert ids[0] == "effusion" and ids[-1] == "noeffusion"  # states it first, denies it last
    middle = ids[1:-1]
    assert middle.index("granuloma") < middle.index("clear") and middle.index("hyper") < middle.index("clear2")


@pytest.mark.parametrize("engine", ["exact", "candidates"])
def test_a_query_asking_for_a_normal_statement_or_an_absence_is_left_alone(index, monkeypatch, engine):
    hits, _ = engine_page(index, monkeypatch, engine, "no pleural effusion", level="report", concepts=False)
    assert hits[0][0] == "noeffusion"
    monkeypatch.setattr("radsift.search.reading.normal_keys", _never)
    monkeypatch.setattr("radsift.search.normals.unit_normal_keys", _never)
    for q in ("no pleural effusion", "lungs are clear", "heart and lungs are okay", "lungs are well expanded"):
        engine_page(index, monkeypatch, engine, q, level="report")  # the normal key is never read


def _never(*args, **kwargs):
    raise AssertionError("the normal key was read for a query asking for no finding")


@pytest.mark.parametrize("options", [{}, {"mode": "bm25"}, {"mode": "dense"}, {"target": "impression"},
                                     {"level": "sentence"}, {"unit": "section"}, {"prf": True}])
def test_both_engines_give_the_same_page_and_counts(index, monkeypatch, options):
    for q in ["wet lungs", "pleural effusion", "possible granuloma", "left lungs", "no pleural effusion"]:
        kw = {"level": "report", **options}
        assert engine_page(index, monkeypatch, "candidates", q, **kw) == engine_page(index, monkeypatch, "exact", q, **kw), \
            (q, options)


@pytest.mark.parametrize("engine", ["exact", "candidates"])
def test_calibrated_boosts_add_no_normal_key(index, monkeypatch, engine):
    monkeypatch.setattr("radsift.search.reading.normal_keys", _never)
    monkeypatch.setattr("radsift.search.normals.unit_normal_keys", _never)
    monkeypatch.setattr(index, "tier_gap", 0.5)
    engine_page(index, monkeypatch, engine, "wet lungs", level="report", concepts=False)
    monkeypatch.undo()
    monkeypatch.setattr(index, "tier_gap", 0.5)
    assert engine_page(index, monkeypatch, "candidates", "wet lungs", level="report", concepts=False) == \
        engine_page(index, monkeypatch, "exact", "wet lungs", level="report", concepts=False)
