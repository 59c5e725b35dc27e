"""The lung against the mediastinum and hila: a query placing its finding in the lung ranks units that place
theirs in the mediastinum or a hilum alone below the others, in both search engines; lobe queries unchanged.

Sentences written for these tests, the hashing encoder (the rule acts on the location tier).
"""

from __future__ import annotations

import numpy as np
import pytest
from engine_pages import hashing_index, locations_both_ways

from radsift.ranking.places import location_tiers, with_compartments
from radsift.records import Report
from radsift.search import candidates
from radsift.text import locations as loc
from radsift.text.compartments import HILA, LUNG, MEDIASTINUM, MIDDLE, lung_place, mediastinal_place
from radsift.text.locations import LLL, RUL
from radsift.text.patterns import PERIHILAR
from radsift.text.tokens import tokenize


@pytest.mark.parametrize("query, lung", [
    ("lung mass", "lung"), ("pulmonary nodules", "pulmonary"), ("a lump in the lung", "lung"),
    ("spots on the lungs", "lungs"), ("nodule within the left lung", "lung"), ("no lung mass", "lung"),
    ("holes in the lungs from smoking", "lungs"), ("Pulmonary Edema", "pulmonary"),
    ("scarring below the left hilum", "lung"),  # queries_v12 dev: the lung beside a hilum, not the hilum
])
def test_a_query_placing_its_finding_in_the_lung_names_the_lung(query, lung):
    assert lung_place(query) == lung


@pytest.mark.parametrize("query", [
    "lungs are clear", "lung is clear", "collapsed lung", "over-inflated lungs",  # the lung is what is stated
    "fluid around the lungs", "fluid in the lung lining",                          # outside it: the pleura
    "pulmonary embolism", "pulmonary artery enlargement", "low lung volumes",      # its vessels, its volumes
    "left lower lobe lung mass", "right lung base opacity",                       # a lobe is the finer place
    "mediastinal mass", "cardiomegaly",
])
def test_other_queries_name_no_lung_place(query):
    assert lung_place(query) is None


def _units_with(texts):
    stems = [set(tokenize(t)) for t in texts]
    return lambda terms: [i for i, s in enumerate(stems) if all(t in s for t in terms)]


def test_units_of_the_mediastinum_or_hila_alone_are_flagged_from_their_words():
    texts = ["Right paratracheal mass.", "Left hilar adenopathy.", "Mass in the AP window.",
             "Right hilar and perihilar opacities.",       # perihilar: the lung around the hilum
             "Right hilar mass and right upper lobe nodule.",
             "Mediastinum is normal. Lungs are clear.",     # a section naming both
             "Mass.", "Widened mediastinum."]
    lobes = np.array([0, 0, 0, 0, RUL, 0, 0, 0], dtype=np.uint8)
    got = with_compartments(lobes, _units_with(texts))
    assert ((got & MEDIASTINUM) != 0).tolist() == [True, True, True, False, False, False, False, True]
    # lobes kept ("perihilar" says a pattern too: radsift.text.patterns)
    assert (got & ~np.uint64(MEDIASTINUM | HILA | MIDDLE | PERIHILAR)).tolist() == lobes.tolist() and lobes[0] == 0
    assert ((got & HILA) != 0).tolist() == [False, True, False, False, False, False, False, False]  # which of them
    assert ((got & MIDDLE) != 0).tolist() == [True, False, True, False, False, False, False, True]


def test_a_lung_query_ranks_mediastinal_units_last_and_lobe_queries_ignore_them():
    units = np.array([0, MEDIASTINUM, RUL, LLL], dtype=np.uint8)
    assert location_tiers(LUNG, units).tolist() == [1, 2, 1, 1]  # no place and any lobe alike: the default tier
    assert location_tiers(LLL, units).tolist() == [1, 1, 2, 0]   # as before the mediastinal bit


R = [
    Report("para", {"findings": "Mass, right paratracheal."}),
    Report("hilar", {"findings": "Mass, left hilar."}),
    Report("lung", {"findings": "There is a large rounded mass projecting over the mid right lung."}),
    Report("plain", {"findings": "There is a large rounded mass seen on the frontal and lateral views."}),
    Report("rul", {"findings": "There is a large rounded mass in the right upper lobe near the apex."}),
    Report("none", {"findings": "No mass. Heart size normal."}),
]


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    return hashing_index(tmp_path_factory.mktemp("lung-place"), R)


def test_the_query_reads_the_lung_as_its_location(index):
    reading = index.read("lung mass")
    assert reading.regions == LUNG and reading.location == "lung" and reading.side is None
    assert "location lung" in reading.describe()
    assert index.read("lung mass", reading={"location": "ignore"}).regions == 0
    assert index.read("lungs are clear").regions == 0


@pytest.mark.parametrize("engine", candidates.ENGINES)
@pytest.mark.parametrize("mode", ["hybrid", "bm25", "dense"])
def test_mediastinal_and_hilar_masses_rank_below_the_lung_and_unplaced_ones(index, monkeypatch, engine, mode):
    monkeypatch.setenv(candidates.ENV, engine)
    for level in ("report", "sentence"):
        order = [h.report_id for h in index.search("lung mass", k=20, mode=mode, level=level)]
        placed = [order.index(r) for r in ("lung", "plain", "rul")]
        assert max(placed) < min(order.index("para"), order.index("hilar")), (level, order)
        assert order.index("none") > max(order.index("para"), order.index("hilar"))  # the reading comes first


def test_without_the_rule_the_short_mediastinal_sentences_lead(index, monkeypatch):
    monkeypatch.setenv(loc.ENV, "off")
    assert index.read("lung mass").regions == 0
    order = [h.report_id for h in index.search("lung mass", k=20, mode="bm25")]
    assert min(order.index("para"), order.index("hilar")) < order.index("plain")  # what the rule changes


def test_the_mediastinal_bit_is_the_same_with_stored_flags_and_with_flags_read_from_texts(index, monkeypatch):
    got = [locations_both_ways(index, monkeypatch)]
    assert any(np.any(regions & MEDIASTINUM) for regions, _ in got[0])


@pytest.mark.parametrize("query, place", [
    ("right hilar mass", "hilar"), ("mediastinal mass", "mediastinal"), ("paratracheal lymph nodes", "paratracheal"),
    ("mass in the AP window", "ap window"), ("no mediastinal lymphadenopathy", "mediastinal"),
    # everyday words (queries_v10 dev "metal clips near the heart": the reports' "mediastinal clips")
    ("metal clips near the heart", "mediastinum"), ("a mass in the middle of the chest", "mediastinum"),
])
def test_a_query_placing_its_finding_in_the_mediastinum_or_a_hilum_names_it(query, place):
    assert mediastinal_place(query) == place


@pytest.mark.parametrize("query", ["perihilar opacity", "right hilar and right upper lobe masses", "lung mass",
                                   "left lower lobe mass", "pneumomediastinum", "fluid around the heart",
                                   "scarring below the left hilum"])
def test_a_lung_or_lobe_query_names_no_mediastinal_place(query):
    assert mediastinal_place(query) is None


def test_a_hilar_query_ranks_the_hilar_units_first_and_a_mediastinal_one_the_mediastinal_units():
    units = np.array([0, MEDIASTINUM | HILA, MEDIASTINUM | MIDDLE, RUL], dtype=np.uint64)
    assert location_tiers(HILA, units).tolist() == [1, 0, 1, 1]
    assert location_tiers(MIDDLE, units).tolist() == [1, 1, 0, 1]


def test_the_query_reads_the_hilum_and_the_mediastinum_as_locations(index):
    assert index.read("left hilar mass").regions == HILA and index.read("left hilar mass").location == "hilar"
    assert index.read("mediastinal mass").regions == MIDDLE
    assert index.read("mediastinal mass", reading={"location": "ignore"}).regions == 0


R2 = [
    Report("hilum", {"findings": "A mass is seen at the left hilum on the frontal and the lateral views today."}),
    Report("window", {"findings": "A lobulated mass is seen in the aortopulmonary window on the frontal view today."}),
    Report("bare", {"findings": "Mass."}),
    Report("large", {"findings": "Large mass."}),
]


@pytest.fixture(scope="module")
def index2(tmp_path_factory):
    return hashing_index(tmp_path_factory.mktemp("hilar-place"), R2)


@pytest.mark.parametrize("engine", candidates.ENGINES)
@pytest.mark.parametrize("mode", ["hybrid", "bm25", "dense"])
def test_hilar_and_mediastinal_masses_lead_their_own_queries(index2, monkeypatch, engine, mode):
    monkeypatch.setenv(candidates.ENV, engine)
    for level in ("report", "sentence"):
        order = [h.report_id for h in index2.search("hilar mass", k=20, mode=mode, level=level)]
        assert order[0] == "hilum", (level, order)
        order = [h.report_id for h in index2.search("mediastinal mass", k=20, mode=mode, level=level)]
        assert order[0] == "window" and order.index("hilum") > order.index("bare"), (level, order)


def test_without_the_place_the_short_masses_lead(index2, monkeypatch):
    monkeypatch.setenv(loc.ENV, "off")
    order = [h.report_id for h in index2.search("mediastinal mass", k=20, mode="bm25")]
    assert order.index("window") > order.index("bare")  # what the rule changes
