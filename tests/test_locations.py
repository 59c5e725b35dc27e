"""Lobes, lingula, apices and bases: read from queries and sentences, ranked like sides.

Sentences written for these tests (and the demo generator's reports for the engines' agreement), with
the hashing encoder: the rules under test act on the ranking's tiers, so what the dense scores are does
not matter as long as the tiers order them.
"""

from __future__ import annotations

import numpy as np
import pytest

from radsift.demo import generate_reports
from radsift.ranking.places import location_flags, location_tiers, where_tiers, with_implied_sides
from radsift.records import Report
from radsift.search import candidates
from radsift.text import locations as loc
from radsift.text.locations import LING, LLL, LUL, RLL, RML, RUL, read_locations, text_regions


@pytest.mark.parametrize("text, regions, side", [
    ("Left lower lobe opacity.", LLL, "left"),
    ("LLL atelectasis", LLL, "left"),
    ("rul nodule", RUL, "right"),
    ("RML and RLL opacities", RML | RLL, "right"),
    ("Lingular scarring.", LING, "left"),
    ("Retrocardiac opacity.", LLL, "left"),
    ("Left upper lobe nodule.", LUL | LING, "left"),
    ("Opacities in the lower lobes bilaterally.", RLL | LLL, None),
    ("Right base atelectasis.", RLL, "right"),
    ("Atelectasis at the left lung base.", LLL, "left"),
    ("Opacity in the lower lobe of the left lung.", LLL, "left"),
    ("Bibasilar atelectasis.", RLL | LLL, None),
    ("Tiny right apical pneumothorax.", RUL, "right"),
    ("Right upper and middle lobe nodules.", RUL | RML, "right"),
    ("Left upper lung zone nodule.", LUL, "left"),
    # a zone without "lung" (queries_v12 dev "right upper zone fibrosis", "bilateral lower zone reticulation")
    ("Right upper zone fibrosis.", RUL, "right"),
    ("Bilateral lower zone reticulation.", RLL | LLL, None),
    ("Upper zone fibrosis.", RUL | LUL, None),
])
def test_locations_are_read_with_their_regions_and_side(text, regions, side):
    found = read_locations(text)
    assert found and all(text[f.start:f.end] == f.text for f in found)
    got = 0
    for f in found:
        got |= f.regions
    assert got == regions and {f.side for f in found} == {side}


@pytest.mark.parametrize("text", ["No focal consolidation.", "The cardiac apex is normal.", "Basal ganglia are normal.",
                                  "Left pleural effusion.", "The base of the skull."])
def test_texts_without_a_lung_location_name_none(text):
    assert read_locations(text) == []
    assert text_regions(text) == (0, 0)


def test_one_sided_locations_imply_their_side_and_both_sides_imply_none():
    assert text_regions("RLL and lingular atelectasis") == (RLL | LING, 3)
    assert text_regions("Bibasilar atelectasis.") == (RLL | LLL, 0)


def test_location_tiers_same_then_none_then_another_and_the_location_comes_before_the_side():
    units = np.array([LLL, 0, LUL | LING, RLL | LLL, RUL], dtype=np.uint8)
    assert location_tiers(LLL, units).tolist() == [0, 1, 2, 0, 2]
    sides = np.array([0, 0, 0, 1, 2])
    assert where_tiers(location_tiers(LLL, units), sides).tolist() == [0, 3, 6, 1, 8]
    assert where_tiers(None, sides) is sides


def test_location_flags_read_only_units_holding_a_location_word():
    texts = ["Right lower lobe opacity.", "No pneumothorax.", "Lingular atelectasis."]
    stems = {"lobe": [0], "lingular": [2]}
    read = []

    def units_with(terms):
        hit = [set(stems.get(t, ())) for t in terms]
        return sorted(set.intersection(*hit)) if hit else []

    regions, sided = location_flags(3, units_with, lambda rows: read.extend(rows) or {r: texts[r] for r in rows})
    assert regions.tolist() == [RLL, 0, LING] and sided.tolist() == [2, 0, 1]
    assert read == [0, 2]
    left, right, _ = with_implied_sides((np.zeros(3, bool), np.zeros(3, bool), np.zeros(3, bool)), (regions, sided))
    assert left.tolist() == [False, False, True] and right.tolist() == [True, False, False]


R = [
    Report("lll-base", {"findings": "Opacity at the left base."}),
    Report("retro", {"findings": "Retrocardiac opacity."}),
    Report("lul", {"findings": "Left upper lobe opacity. Left upper lobe opacity persists."}),
    Report("rul", {"findings": "Right upper lobe opacity."}),
    Report("left-lung", {"findings": "Opacity in the left lung."}),
    Report("plain", {"findings": "Patchy opacity."}),
    Report("no-opacity", {"findings": "No left lower lobe opacity."}),
    Report("rll-word", {"findings": "Right lower lobe consolidation."}),
    Report("rul-abbrev", {"findings": "RUL consolidation. RUL consolidation again."}),
    Report("cons", {"findings": "Consolidation."}),
    Report("ling-pna", {"findings": "Patchy lingular airspace opacity with pneumonia."}),
    Report("rml-pna", {"findings": "RML pneumonia."}),
    Report("cav-rul", {"findings": "Mycetoma in the right upper lobe."}),
    Report("cav-lll", {"findings": "Left lower lobe mycetoma."}),
]


@pytest.fixture(scope="module")
def index(hashing_index_of):
    return hashing_index_of("locations", R)


def ids(hits):
    return [h.report_id for h in hits]


def test_the_query_names_its_location_and_the_side_it_implies(index):
    reading = index.read("LLL atelectasis")
    assert reading.regions == LLL and reading.side == "left" and reading.location == "lll"
    assert "location lll" in reading.describe() and reading.to_dict()["location"] == "lll"
    reading = index.read("right lower lobe consolidation")
    assert reading.regions == RLL and reading.side == "right"
    ignored = index.read("LLL atelectasis", reading={"location": "ignore"})
    assert ignored.regions == 0 and ignored.location is None and ignored.side is None
    assert index.read("left pleural effusion").regions == 0


@pytest.mark.parametrize("engine", candidates.ENGINES)
@pytest.mark.parametrize("mode", ["hybrid", "bm25", "dense"])
def test_the_query_lobe_ranks_first_no_lobe_next_another_lobe_last(index, monkeypatch, engine, mode):
    monkeypatch.setenv(candidates.ENV, engine)
    order = ids(index.search("left lower lobe opacity", k=20, mode=mode))
    assert set(order[:2]) == {"lll-base", "retro"}  # the left base and the retrocardiac lung are the left lower lobe
    if mode != "bm25":  # BM25 returns only units sharing a term
        assert order.index("left-lung") < order.index("plain") < order.index("lul") < order.index("rul")
    else:
        assert order.index("left-lung") < order.index("lul") < order.index("rul")
    assert order.index("no-opacity") > order.index("rul")  # the reading comes first: a denial ranks last


@pytest.mark.parametrize("engine", candidates.ENGINES)
def test_abbreviations_are_read_in_queries_and_in_sentences(index, monkeypatch, engine):
    monkeypatch.setenv(candidates.ENV, engine)
    order = ids(index.search("RLL consolidation", k=20, mode="hybrid"))
    assert order[0] == "rll-word"
    assert order.index("cons") < order.index("rul-abbrev")
    order = ids(index.search("right upper lobe consolidation", k=20, mode="hybrid"))
    assert order[0] == "rul-abbrev"


@pytest.mark.parametrize("engine", candidates.ENGINES)
def test_a_one_sided_location_gives_its_unit_that_side(index, monkeypatch, engine):
    monkeypatch.setenv(candidates.ENV, engine)
    order = ids(index.search("left pneumonia", k=20, mode="hybrid"))
    assert order.index("ling-pna") < order.index("rml-pna")  # the lingula is left, the RML right
    monkeypatch.setenv(loc.ENV, "off")
    order = ids(index.search("left pneumonia", k=20, mode="hybrid"))
    assert order.index("ling-pna") > order.index("rml-pna")  # read as side words alone, the shorter one wins


def test_an_open_vocabulary_finding_leaves_its_location_to_the_location_tier(index):
    hits = index.search("RUL mycetoma", k=20, mode="hybrid")
    (f,) = hits.reading.findings
    assert (f.finding, f.source) == ("mycetoma", "open")  # "RUL" is the location, not a word the unit must hold
    order = ids(hits)
    assert order[:2] == ["cav-rul", "cav-lll"]


def test_locations_off_reads_none(index, monkeypatch):
    monkeypatch.setenv(loc.ENV, "off")
    assert index.read("left lower lobe opacity").regions == 0
    order = ids(index.search("RLL consolidation", k=20, mode="hybrid"))
    assert order[0] != "rll-word"  # without locations "RLL" names nothing the sentence says


@pytest.fixture(scope="module")
def demo_index(hashing_index_of):
    return hashing_index_of("locations-demo", [d.report for d in generate_reports(n=300, seed=3)])


@pytest.mark.parametrize("query, regions", [("right lower lobe consolidation", RLL), ("LLL atelectasis", LLL),
                                            ("right middle lobe scarring", RML)])
def test_on_demo_reports_hits_that_state_the_finding_name_the_query_lobe_first(demo_index, query, regions):
    hits = demo_index.search(query, k=50, mode="hybrid", level="sentence")
    stating = [h for h in hits if h.reading and all(m.status == "present" for m in h.reading)]
    tiers = [location_tiers(regions, np.array([text_regions(h.sentence.text)[0]]))[0] for h in stating]
    assert tiers and tiers[0] == 0
    assert tiers == sorted(tiers)  # same lobe, then no lobe, then another, among the units stating it


def test_the_server_shows_the_location_and_drops_it_on_request(index):
    from fastapi.testclient import TestClient

    from radsift.serve import create_app

    client = TestClient(create_app(index))
    body = client.get("/api/search", params={"q": "RLL consolidation", "k": 3}).json()
    assert body["reading"]["location"] == "rll" and body["read_as"]["location"] == "rll"
    body = client.get("/api/search", params={"q": "RLL consolidation", "k": 3, "reading": "location=ignore"}).json()
    assert body["reading"]["location"] is None and body["read_as"]["location"] == "rll"
