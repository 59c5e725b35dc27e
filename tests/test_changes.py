"""Change since the last study (queries_v5-v8 dev and spent halves: "new pleural effusion", "pneumonia getting
better", "stable cardiomegaly", "pacemaker taken out", "worse than last time"): the finding is read as before, and
within each tier the units saying the query's change rank first."""

from __future__ import annotations

import numpy as np
import pytest

from radsift.ranking.places import location_slots, location_tiers, with_qualifiers
from radsift.records import ReadFinding, Report
from radsift.search import candidates
from radsift.search.reading import _read_change
from radsift.text.changes import BETTER, CHANGE, GONE, NEW, OLD, SAME, WORSE, only_change, query_change
from radsift.text.locations import RLL
from radsift.text.tokens import stem

R = [
    Report("plain", {"findings": "Right pleural effusion. Heart size normal."}),
    Report("new", {"findings": "New right pleural effusion is seen. Heart size normal."}),
    Report("stable", {"findings": "Stable right pleural effusion. Heart size normal."}),
    Report("better", {"findings": "Right pleural effusion, improved since the prior exam. Heart size normal."}),
    Report("elsewhere", {"findings": "Right pleural effusion. New left rib fracture. Heart size normal."}),
    Report("gone", {"findings": "Interval resolution of the right pleural effusion. Heart size normal."}),
    Report("none", {"findings": "No pleural effusion. Heart size normal."}),
    Report("pace", {"findings": "Interval removal of the pacemaker. Lungs are clear."}),
    Report("paced", {"findings": "Left chest wall pacemaker. Lungs are clear."}),
    # an old finding (queries_v8 "old compression fracture": age-indeterminate wedging led the healed ones)
    Report("rib_recent", {"findings": "Left rib fracture of the seventh rib, nondisplaced. Lungs are clear."}),
    Report("rib_old", {"findings": "Healed left rib fracture. Lungs are clear."}),
]


@pytest.mark.parametrize("query, words, bit", [
    ("new pleural effusion", "new", NEW),
    ("newly placed central line", "newly", NEW),
    ("pneumonia getting better", "getting better", BETTER),
    ("improving atelectasis", "improving", BETTER),
    ("air around the lung getting smaller", "getting smaller", BETTER),
    ("heart got bigger since last time", "got bigger", WORSE),
    ("worsening edema", "worsening", WORSE),
    ("pleural effusion resolved", "resolved", GONE),
    ("pacemaker taken out", "taken out", GONE),
    ("stable cardiomegaly", "stable", SAME),
    ("nothing new since the last x-ray", "nothing new", SAME),
    ("no new opacity", "no new", SAME),
    ("interstitial markings not worse than before", "not worse", SAME),
    ("effusion no bigger", "no bigger", SAME),
    ("chest tube pulled", "pulled", GONE),
    ("collarbone pulled away from the shoulder", None, 0),
    ("old compression fracture", "old", OLD),
    ("healed broken rib", "healed", OLD),
    ("chronic changes in the lungs", "chronic", OLD),
    ("chronic obstructive pulmonary disease", None, 0),
    ("no old x-rays to compare", None, 0),
    ("left lower lobe opacity", None, 0),
    ("big heart", None, 0),
])
def test_a_query_names_its_change(query, words, bit):
    assert query_change(query) == (words, bit)


def test_a_phrase_of_change_and_time_words_alone_names_no_finding():
    assert only_change("worse than last time", "worse")
    assert only_change("new since the last", "nothing new")
    assert only_change("interval improvement", "improvement")
    assert not only_change("new effusion", "new")


def test_units_say_a_change_from_their_words_and_a_state_word_is_none():
    texts = ["New right effusion.", "Effusion has increased.", "Improved aeration.", "Stable cardiomegaly.",
             "No new opacity.", "Effusion has resolved.", "The heart is enlarged.", "Lungs are clear.",
             "Opacity appears unchanged.", "No interval change.", "Old healed rib fractures."]
    terms = [{stem(w) for w in t.lower().replace(".", "").split()} for t in texts]

    def units_with(stems):
        return [i for i, t in enumerate(terms) if all(s in t for s in stems)]

    got = with_qualifiers(np.zeros(len(texts), dtype=np.uint64), units_with)
    assert [int(g) for g in got] == [NEW, WORSE, BETTER, SAME, NEW | SAME, GONE, 0, 0, SAME, SAME, OLD]


def test_a_change_splits_each_location_tier_in_two():
    units = np.array([RLL | NEW, RLL, 0, NEW, RLL | SAME], dtype=np.uint64)
    assert location_tiers(RLL | NEW, units).tolist() == [0, 1, 3, 2, 1]
    assert location_tiers(NEW, units).tolist() == [2, 3, 3, 2, 3]  # no place asked: every unit's place tier is 1
    assert location_tiers(RLL, units).tolist() == [0, 0, 1, 1, 0]  # no change asked: the change words are ignored
    assert location_slots(RLL) == 3 and location_slots(RLL | NEW) == 6


@pytest.fixture(scope="module")
def index(hashing_index_of):
    return hashing_index_of("changes", R)


def test_the_reading_shows_the_change_and_a_change_alone_is_read(index):
    reading = index.read("new pleural effusion")
    assert reading.change == "new" and reading.regions & CHANGE == NEW
    assert [(f.finding, f.status) for f in reading.findings] == [("pleural effusion", "present")]
    assert "change new" in reading.describe()
    alone = index.read("worse than last time")
    assert alone.findings == () and alone.change == "worse" and alone.active
    assert index.read("pacemaker taken out").findings[0].status == "absent"
    assert index.read("new pleural effusion", reading={"change": "ignore"}).change is None


def test_a_past_cause_asks_no_change():
    # "from an old infection" names how the finding came (clauses.CAUSE), not its age
    found = [ReadFinding("calcified granuloma", "present", "linked")]
    assert _read_change("calcium spots from an old lung infection", found) == (found, 0)
    assert _read_change("scars from an old infection", found) == (found, 0)
    assert _read_change("old scars at the top of the lungs", found) == (found, OLD)


def test_an_organ_removed_is_a_surgery_done_and_asks_no_change():
    surgery = [ReadFinding("lung resection", "present", "linked")]
    assert _read_change("lung taken out", surgery) == (surgery, 0)
    device = [ReadFinding("pacemaker", "absent", "lexicon", "taken out")]
    assert _read_change("pacemaker taken out", device) == (device, GONE)


@pytest.mark.parametrize("engine", candidates.ENGINES)
@pytest.mark.parametrize("query, first", [
    ("new pleural effusion", "new"),
    ("stable pleural effusion", "stable"),
    ("pleural effusion getting better", "better"),
    ("pleural effusion resolved", "gone"),
    ("pacemaker taken out", "pace"),
    ("old rib fracture", "rib_old"),
])
def test_units_saying_the_change_rank_first_within_the_tier(index, monkeypatch, engine, query, first):
    monkeypatch.setenv(candidates.ENV, engine)
    order = [h.report_id for h in index.search(query, k=20, mode="hybrid")]
    assert order[0] == first
    if query.startswith("new"):
        # the change word must be said in the unit stating the finding: a new rib fracture is no new effusion
        assert order.index("elsewhere") > order.index("new")
        # a unit stating the finding with no change word still ranks before the ones not stating it
        assert order.index("plain") < order.index("none")


@pytest.mark.parametrize("query, first", [
    ("pleural effusion getting better", "better"),
    ("pleural effusion resolved", "gone"),
])
def test_with_the_change_taken_out_of_the_reading_its_unit_does_not_lead(index, monkeypatch, query, first):
    monkeypatch.setenv(candidates.ENV, "exact")
    order = [h.report_id for h in index.search(query, k=10, mode="hybrid", reading={"change": "ignore"})]
    assert order[0] != first


def test_the_change_bits_share_no_bit_with_a_place():
    from radsift.text.bodyplaces import BODY
    from radsift.text.compartments import HILA, LOBES, LUNG, MEDIASTINUM, MIDDLE

    assert CHANGE & (BODY | HILA | MIDDLE | LOBES | LUNG | MEDIASTINUM) == 0
    assert CHANGE < 1 << 64
    from radsift.text.degrees import DEGREE
    from radsift.text.patterns import PATTERN

    # every family its own bits, all within the units' 64-bit masks
    assert PATTERN & (CHANGE | DEGREE | BODY | HILA | MIDDLE | LOBES | LUNG | MEDIASTINUM) == 0
    assert DEGREE & CHANGE == 0 and PATTERN < 1 << 64


def test_the_server_shows_the_change_and_drops_it_on_request(index):
    from fastapi.testclient import TestClient

    from radsift.serve import create_app

    client = TestClient(create_app(index))
    body = client.get("/api/search", params={"q": "new pleural effusion", "k": 3}).json()
    assert body["reading"]["change"] == "new" and body["read_as"]["change"] == "new"
    assert body["hits"][0]["report_id"] == "new"
    body = client.get("/api/search", params={"q": "new pleural effusion", "k": 3, "reading": "change=ignore"}).json()
    assert body["reading"]["change"] is None and body["read_as"]["change"] == "new"


@pytest.mark.parametrize("query", ["one lung smaller than the other", "small heart", "larger left effusion"])
def test_a_size_compared_with_no_time_is_no_change(query):
    assert query_change(query) == (None, 0)
