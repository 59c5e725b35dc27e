"""Body places beside a device or finding: a query naming the thoracic spine, the shoulder or the subclavian vein ranks
the units naming that place above the other units of their reading tier, in both search engines; other queries
unchanged.

Sentences written for these tests, the hashing encoder (the rule acts on the location tier).
"""

from __future__ import annotations

import numpy as np
import pytest
from engine_pages import hashing_index, locations_both_ways

from radsift.ranking.places import location_tiers, with_body_places, with_compartments
from radsift.records import Report
from radsift.search import candidates
from radsift.text import locations as loc
from radsift.text.bodyplaces import (AORTIC_ARCH, ASCENDING_AORTA, BODY, DESCENDING_AORTA, HUMERUS, NECK, SHOULDER,
                                     SPINE, SPINE_C, SPINE_L, SPINE_T, STERNUM, SUBCLAVIAN, query_places)
from radsift.text.compartments import LUNG, MEDIASTINUM
from radsift.text.locations import LING, LLL, LUL, RLL, RUL
from radsift.text.tokens import tokenize


@pytest.mark.parametrize("query, words, bits", [
    ("thoracic spine hardware", "thoracic spine", SPINE_T),       # the level, not the whole spine
    ("spinal rods", "spinal", SPINE),
    ("Lumbar spine fusion", "lumbar", SPINE_L),
    ("cervical fusion", "cervical", SPINE_C),
    ("left subclavian central line", "subclavian", SUBCLAVIAN),
    ("shoulder replacement", "shoulder", SHOULDER),
    ("humeral head prosthesis", "humeral head", SHOULDER | HUMERUS),
    ("sternotomy wires", "sternotomy", STERNUM),
    # queries_v12 dev "clips from a thyroidectomy": the clips lie in the neck, at the thoracic inlet
    ("clips from a thyroidectomy", "thyroidectomy", NECK),
    ("surgical clips at the thoracic inlet", "thoracic inlet", NECK),
    # the parts of the aorta a film shows apart (queries_v14 dev "dense calcification of the aortic arch", v15 dev
    # "dilatation of the ascending aorta")
    ("dense calcification of the aortic arch", "aortic arch", AORTIC_ARCH),
    ("calcified aortic knob", "knob", AORTIC_ARCH),
    ("dilatation of the ascending aorta", "ascending aorta", ASCENDING_AORTA),
    ("tortuous descending thoracic aorta", "descending aorta", DESCENDING_AORTA),
])
def test_a_query_names_its_body_place(query, words, bits):
    assert query_places(query) == (words, bits)


@pytest.mark.parametrize("query", ["ET tube", "lung mass", "orthopedic screws", "tortuous thoracic aorta",
                                   "left lower lobe opacity", "cardiomegaly"])
def test_other_queries_name_no_body_place(query):
    assert query_places(query) == (None, 0)


def test_locations_off_reads_no_body_place(monkeypatch):
    monkeypatch.setenv(loc.ENV, "off")
    assert query_places("thoracic spine hardware") == (None, 0)


def _units_with(texts):
    stems = [set(tokenize(t)) for t in texts]
    return lambda terms: [i for i, s in enumerate(stems) if all(t in s for t in terms)]


def test_units_name_body_places_from_their_words_a_level_before_the_whole_spine():
    texts = ["Lower cervical and upper thoracic spinal fixation hardware.",  # two levels; "spinal" gives way
             "Postoperative changes from spinal rods.",                      # the whole spine
             "Prosthetic right humeral head.",                               # the shoulder and the humerus
             "Tortuous thoracic aorta.",                                     # thoracic alone: no spine
             "Left subclavian central venous catheter.",
             "Hardware noted."]
    got = with_body_places(np.zeros(len(texts), dtype=np.uint64), _units_with(texts))
    assert got.tolist() == [SPINE_C | SPINE_T, SPINE, SHOULDER | HUMERUS, 0, SUBCLAVIAN, 0]
    # with the lobes and the mediastinal bit beside them, as the search reads units
    both = with_compartments(np.array([0, 0, 0, 0, 0, RUL], dtype=np.uint8), _units_with(texts))
    assert both.dtype == np.uint64 and (both & ~np.uint64(BODY)).tolist() == [0, 0, 0, 0, 0, RUL]


def test_a_body_place_query_ranks_units_naming_it_first_and_others_alike():
    units = np.array([0, SPINE_T, SPINE_C, SHOULDER, RUL, MEDIASTINUM, SPINE_C | SPINE_T, SPINE], dtype=np.uint64)
    assert location_tiers(SPINE_T, units).tolist() == [1, 0, 1, 1, 1, 1, 0, 1]  # the whole spine: no level named
    assert location_tiers(SPINE, units).tolist() == [1, 0, 0, 1, 1, 1, 0, 0]    # the spine: every level meets it
    assert location_tiers(SPINE_T | LUNG, units).tolist() == [1, 0, 1, 1, 1, 2, 0, 1]  # the lung's rule beside it
    assert location_tiers(LUNG, units).tolist() == [1, 1, 1, 1, 1, 2, 1, 1]            # as before
    assert location_tiers(LLL, units).tolist() == [1, 1, 1, 1, 2, 1, 1, 1]             # lobe queries: lobes alone


def test_a_whole_lobe_does_not_meet_a_query_of_its_part():
    units = np.array([0, LUL | LING, LING, RUL | LING, LLL], dtype=np.uint8)  # "left upper lobe", "lingula", ...
    assert location_tiers(LING, units).tolist() == [1, 1, 0, 0, 2]          # the left upper lobe: maybe not lingula
    assert location_tiers(LUL | LING, units).tolist() == [1, 0, 0, 0, 2]    # the lingula is in the left upper lobe
    assert location_tiers(LUL, units).tolist() == [1, 0, 2, 2, 2]           # "left apical": the upper lobe meets it
    assert location_tiers(LLL, np.array([RLL | LLL, LLL, 0, RUL], dtype=np.uint8)).tolist() == [0, 0, 1, 2]


R = [
    Report("shoulder", {"findings": "Orthopedic hardware in the right shoulder."}),
    Report("sternum", {"findings": "Orthopedic hardware."}),
    Report("gleno", {"findings": "Orthopedic hardware about the left glenohumeral joint, unchanged in appearance "
                                 "since the previous study."}),
    Report("spine", {"findings": "There is orthopedic hardware seen along the lower part of the thoracic spine, "
                                 "unchanged in appearance from the previous study."}),
    Report("sub", {"findings": "There is a left subclavian central venous catheter with its tip projecting over the "
                               "lower superior vena cava, unchanged since the prior study."}),
    Report("ij", {"findings": "Left jugular central venous catheter."}),
    Report("cvc", {"findings": "Left central venous catheter."}),
    Report("none", {"findings": "No acute findings. Heart size normal."}),
    Report("arch", {"findings": "Atherosclerotic calcification of the aortic arch, unchanged since the prior study."}),
    Report("aorta", {"findings": "Aortic atherosclerotic calcification."}),
    Report("desc", {"findings": "Atherosclerotic calcification of the descending aorta."}),
]


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    return hashing_index(tmp_path_factory.mktemp("body-place"), R)


def test_the_query_reads_its_body_place_as_its_location(index):
    reading = index.read("thoracic spine hardware")
    assert reading.regions == SPINE_T and reading.location == "thoracic spine"
    assert "location thoracic spine" in reading.describe()
    assert index.read("thoracic spine hardware", reading={"location": "ignore"}).regions == 0
    assert index.read("lung mass in the left subclavian region").regions == LUNG | SUBCLAVIAN


def test_a_body_place_beside_an_open_phrase_alone_is_not_read(index):
    # every unit naming the neck would lead, whatever it states: the place ranks beside a lexicon finding only
    assert index.read("a swollen lump low in the neck").regions == 0
    assert index.read("hardware in the neck").regions == NECK


@pytest.mark.parametrize("engine", candidates.ENGINES)
@pytest.mark.parametrize("mode", ["hybrid", "bm25", "dense"])
def test_units_naming_the_query_place_rank_first_within_the_reading_tier(index, monkeypatch, engine, mode):
    monkeypatch.setenv(candidates.ENV, engine)
    for level in ("report", "sentence"):
        order = [h.report_id for h in index.search("thoracic spine hardware", k=20, mode=mode, level=level)]
        assert order[0] == "spine", (level, order)
        assert set(order[:4]) == {"spine", "shoulder", "sternum", "gleno"}, (level, order)  # the reading first
        order = [h.report_id for h in index.search("shoulder hardware", k=20, mode=mode, level=level)]
        assert set(order[:2]) == {"shoulder", "gleno"}, (level, order)  # the glenohumeral joint is the shoulder
        order = [h.report_id for h in index.search("left subclavian central line", k=20, mode=mode, level=level)]
        assert order[0] == "sub", (level, order)
        order = [h.report_id for h in index.search("calcified aortic knob", k=20, mode=mode, level=level)]
        assert order[0] == "arch" and set(order[:3]) == {"arch", "aorta", "desc"}, (level, order)


def test_without_the_rule_a_shorter_unit_of_another_place_leads(index, monkeypatch):
    monkeypatch.setenv(loc.ENV, "off")
    assert index.read("shoulder hardware").regions == 0
    order = [h.report_id for h in index.search("shoulder hardware", k=20, mode="bm25")]
    assert order.index("sternum") < order.index("gleno")  # what the rule changes
    order = [h.report_id for h in index.search("calcified aortic knob", k=20, mode="bm25")]
    assert order[0] != "arch"


def test_the_body_places_are_the_same_with_stored_flags_and_with_flags_read_from_texts(index, monkeypatch):
    got = [locations_both_ways(index, monkeypatch)]
    assert all(np.any(regions & SPINE_T) and np.any(regions & SUBCLAVIAN) for regions, _ in got[0])
