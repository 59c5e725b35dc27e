"""A degree the query asks of its finding (queries_v8 and v9 dev: "small pneumothorax", "severe emphysema", "mild
scoliosis", "a little fluid in the lungs"): the finding is read as before, and within each tier the units saying the
degree rank first; "big heart" asks none."""

from __future__ import annotations

import numpy as np
import pytest

from radsift.ranking.places import location_slots, location_tiers, placed_mask, with_qualifiers
from radsift.records import Report
from radsift.search import candidates
from radsift.text.changes import CHANGE, NEW
from radsift.text.degrees import DEGREE, MARKED, MEASURED, MODERATE, SLIGHT, query_degree
from radsift.text.tokens import stem

R = [
    Report("plain", {"findings": "Emphysema. Heart size normal. Lungs are hyperinflated with emphysema."}),
    Report("mild", {"findings": "Mild emphysema. Heart size normal."}),
    Report("severe", {"findings": "Severe emphysema. Heart size normal."}),
    Report("moderate", {"findings": "Moderate emphysema. Heart size normal."}),
    Report("other", {"findings": "Emphysema. Small left pleural effusion. Heart size normal."}),
    Report("none", {"findings": "No pneumothorax. Heart size normal."}),
    Report("nodule", {"findings": "Right upper lobe nodule. Heart size normal."}),
    Report("nodule_mm", {"findings": "Left upper lobe nodule measuring 9 mm. Heart size normal."}),
]


@pytest.mark.parametrize("query, words, bit", [
    ("small pneumothorax", "small", SLIGHT),
    ("mild scoliosis", "mild", SLIGHT),
    ("a little fluid in the lungs", "a little", SLIGHT),
    ("borderline cardiomegaly", "borderline", SLIGHT),
    ("moderate cardiomegaly", "moderate", MODERATE),
    ("severe emphysema", "severe", MARKED),
    ("large hiatal hernia", "large", MARKED),
    ("very big heart", "very big", MARKED),
    ("big heart", None, 0),
    ("large heart", None, 0),
    ("small lungs", None, 0),
    ("minor fissure thickening", None, 0),
    # a size measured: the units measuring it (queries_v15 dev)
    ("pulmonary nodule about 1 cm", "1 cm", MEASURED),
    ("pneumothorax of about 20 percent", "20 percent", MEASURED),
    ("20% pneumothorax", "20", MEASURED),
    ("an 8mm nodule", "8mm", MEASURED),
    ("T12 compression fracture", None, 0),
])
def test_a_query_names_its_degree(query, words, bit):
    assert query_degree(query) == (words, bit)


def test_units_say_a_degree_and_interstitial_markings_say_none():
    texts = ["Small right effusion.", "Moderate cardiomegaly.", "Severe emphysema.", "Increased interstitial markings.",
             "Small to moderate effusion.", "Minor fissure thickening.", "A 9 mm nodule.", "Nodule of 1.2 cm."]
    terms = [{stem(w) for w in t.lower().replace(".", "").split()} for t in texts]

    def units_with(stems):
        return [i for i, t in enumerate(terms) if all(s in t for s in stems)]

    got = with_qualifiers(np.zeros(len(texts), dtype=np.uint64), units_with) & np.uint64(DEGREE)
    assert [int(g) for g in got] == [SLIGHT, MODERATE, MARKED, 0, SLIGHT | MODERATE, 0, MEASURED, MEASURED]


def test_each_qualifier_asked_adds_a_slot_and_a_unit_missing_one_follows():
    units = np.array([NEW | SLIGHT, NEW, SLIGHT, 0], dtype=np.uint64)
    assert location_tiers(NEW | SLIGHT, units).tolist() == [3, 4, 4, 5]
    assert location_slots(NEW | SLIGHT) == 9 and location_slots(SLIGHT) == 6
    # a unit saying only another degree holds the unplaced tier: not among the placed rows' bits for a change query
    assert placed_mask(NEW) & DEGREE == 0 and placed_mask(NEW) & CHANGE == CHANGE
    assert placed_mask(SLIGHT) & DEGREE == DEGREE


@pytest.fixture(scope="module")
def index(hashing_index_of):
    return hashing_index_of("degrees", R)


def test_the_reading_shows_the_degree_and_a_finding_is_needed(index):
    reading = index.read("severe emphysema")
    assert reading.degree == "marked" and reading.regions & DEGREE == MARKED
    assert "degree marked" in reading.describe()
    assert index.read("severe").degree is None  # no finding read: no degree
    assert index.read("severe emphysema", reading={"degree": "ignore"}).degree is None


@pytest.mark.parametrize("engine", candidates.ENGINES)
@pytest.mark.parametrize("query, first", [
    ("severe emphysema", "severe"), ("moderate emphysema", "moderate"), ("mild emphysema", "mild")])
def test_units_saying_the_degree_rank_first_within_the_tier(index, monkeypatch, engine, query, first):
    monkeypatch.setenv(candidates.ENV, engine)
    order = [h.report_id for h in index.search(query, k=10, mode="hybrid")]
    assert order[0] == first
    assert order.index("plain") < order.index("none")


def test_a_degree_said_of_another_finding_in_another_sentence_does_not_count(index, monkeypatch):
    monkeypatch.setenv(candidates.ENV, "exact")
    order = [h.report_id for h in index.search("small emphysema", k=10, mode="hybrid")]
    assert order[0] == "mild" and order.index("other") > order.index("mild")


def test_with_the_degree_taken_out_the_plain_unit_leads(index, monkeypatch):
    monkeypatch.setenv(candidates.ENV, "exact")
    # "slight" is no word of the reports: only the degree brings "Mild emphysema." first
    with_degree = [h.report_id for h in index.search("slight emphysema", k=10, mode="bm25")]
    without = [h.report_id for h in index.search("slight emphysema", k=10, mode="bm25", reading={"degree": "ignore"})]
    assert with_degree[0] == "mild" and without[0] != "mild"


def test_the_server_shows_the_degree(index):
    from fastapi.testclient import TestClient

    from radsift.serve import create_app

    body = TestClient(create_app(index)).get("/api/search", params={"q": "severe emphysema", "k": 3}).json()
    assert body["reading"]["degree"] == "marked" and body["hits"][0]["report_id"] == "severe"


def test_an_open_phrase_alone_asks_no_degree(index):
    # the hashing index links nothing: "tiny metal clamps" is an open phrase, "severe emphysema" a lexicon finding
    assert index.read("tiny metal clamps left inside me").degree is None
    assert index.read("severe emphysema").degree == "marked"


@pytest.mark.parametrize("engine", candidates.ENGINES)
def test_a_size_asked_ranks_the_units_measuring_it_first(index, monkeypatch, engine):
    monkeypatch.setenv(candidates.ENV, engine)
    assert index.read("nodule about 1 cm").degree == "measured"
    order = [h.report_id for h in index.search("nodule about 1 cm", k=10, mode="hybrid")]
    assert order[0] == "nodule_mm" and order.index("nodule") < order.index("none")
