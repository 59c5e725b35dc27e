"""The mid zone in a query (queries_v5-v7 dev; every batch's meanings read "the left midlung / mid zone or the
lingula"): "left midlung scarring" asks for the lingula, so a lingular scar meets it, a left lower lobe scar ranks
after the units naming no lobe; zones are read from queries only (a lingula query is not met by a midlung unit)."""

from __future__ import annotations

import pytest

from radsift.records import Report
from radsift.search import candidates
from radsift.text.locations import LING, LLL, LUL, RLL, RML
from radsift.text.zones import query_zones

R = [
    Report("ling", {"findings": "Minimal lingular scarring."}),
    Report("mid", {"findings": "Scarring in the left midlung."}),
    Report("lll", {"findings": "Stable left lower lobe scarring. Left lower lobe scarring again."}),
    Report("rml", {"findings": "Right middle lobe scarring."}),
    Report("plain", {"findings": "Scarring."}),
]


@pytest.mark.parametrize("query, words, regions", [
    ("left midlung scarring", "left midlung", LING),
    ("right mid lung opacity", "right mid lung", RML),
    ("left mid-lung zone nodule", "left mid-lung zone", LING),
    ("nodules in both midlungs", "midlungs", LING | RML),
    ("left mid zone atelectasis", "left mid zone", LING),
    ("pneumonia behind the heart", "behind the heart", LLL),
    ("opacity behind the cardiac silhouette", "behind the cardiac silhouette", LLL),
    ("scarring at the bottom of the lungs", "at the bottom of the lungs", LLL | RLL),
    ("spot at the top of the left lung", "at the top of the left lung", LUL),
    ("infection in the lower part of the right lung", "in the lower part of the right lung", RLL),
    ("lung lining thickened at the bottom", "at the bottom", LLL | RLL),
    ("roundish density low in the left chest", "low in the left chest", LLL),
    ("opacity lower right chest", "lower right chest", RLL),
    ("spot high in the left lung", "high in the left lung", LUL),
    # beside a heart border: the lobe that touches it (the silhouette sign); the heart's own side is a chamber
    ("pneumonia next to the left side of the heart", "next to the left side of the heart", LING),
    ("opacity along the right heart border", "along the right heart border", RML),
    ("the left side of the heart is enlarged", None, 0),
    ("upper left chest port", None, 0),
    ("pneumonia on top of COPD", None, 0),
    ("left lower lobe scarring", None, 0),
    ("mid sternotomy", None, 0),
])
def test_a_mid_zone_asks_for_the_lobe_it_holds(query, words, regions):
    assert query_zones(query) == (words, regions)


@pytest.fixture(scope="module")
def index(hashing_index_of):
    return hashing_index_of("zones", R)


def test_the_query_reads_the_zone_as_a_location_with_its_side(index):
    reading = index.read("left midlung scarring")
    assert reading.regions == LING and reading.side == "left" and reading.location == "left midlung"
    assert index.read("right midlung opacity").side == "right"
    behind = index.read("pneumonia behind the heart")
    assert behind.regions == LLL and behind.side == "left"


@pytest.mark.parametrize("engine", candidates.ENGINES)
def test_the_lingula_meets_a_left_midlung_query_and_another_lobe_ranks_last(index, monkeypatch, engine):
    monkeypatch.setenv(candidates.ENV, engine)
    order = [h.report_id for h in index.search("left midlung scarring", k=10, mode="hybrid")]
    assert order[0] == "ling"
    assert order.index("mid") < order.index("lll") and order.index("plain") < order.index("lll")
    assert order.index("rml") > order.index("plain")
    # zones are read from queries only: a lingula query ranks the lingula first, and the midlung unit names no lobe
    order = [h.report_id for h in index.search("lingular scarring", k=10, mode="hybrid")]
    assert order[0] == "ling" and order.index("mid") < order.index("lll")


@pytest.mark.parametrize("engine", candidates.ENGINES)
def test_the_bottom_of_the_left_lung_is_its_base(index, monkeypatch, engine):
    monkeypatch.setenv(candidates.ENV, engine)
    reading = index.read("scarring at the bottom of the left lung")
    assert reading.regions == LLL and reading.side == "left"
    order = [h.report_id for h in index.search("scarring at the bottom of the left lung", k=10, mode="hybrid")]
    assert order[0] == "lll" and order.index("ling") > order.index("plain")
