"""Lobes asked apart, and the airspace words (queries_v13 dev: "RML and RLL infiltrates", "opacities in the right middle
lobe and lingula", "left midzone consolidation"; judged relevant only where every lobe asked holds the finding).

A query naming two lobes or more, each on its side, ranks a unit naming them all first; "bibasilar" or "the bottom of
the lung" name the bases as one place, met by either. A side word naming one of two lobes on two sides is no side of
the query. Consolidation, infiltrate and airspace disease are one finding to a query for any of them (the query's own
word first within each tier), as pneumonia's signs are.
"""

from __future__ import annotations

import pytest

from radsift.ranking.places import location_slots, location_tiers, lobe_groups
from radsift.records import Report
from radsift.search import candidates
from radsift.text.locations import EVERY, LING, LLL, LUL, RLL, RML, RUL, apart, read_locations

R = [
    Report("rll", {"findings": "RLL infiltrates, RLL infiltrates as before."}),
    Report("rml", {"findings": "RML infiltrates, RML infiltrates as before."}),
    Report("both", {"findings": "Patchy opacity and infiltrate in the right middle and lower lobes."}),
    Report("plain", {"findings": "Infiltrate."}),
    Report("lll", {"findings": "Left lower lobe infiltrate."}),
    Report("ling_air", {"findings": "Patchy airspace disease in the lingula."}),
    Report("lul_cons", {"findings": "Consolidation in the left upper lobe."}),
    Report("rll_cons", {"findings": "Right lower lobe consolidation."}),
    Report("ling_rml", {"findings": "Opacities in the right middle lobe and lingula."}),
    Report("ling_op", {"findings": "Lingular opacity."}),
    Report("left_base", {"findings": "Left basilar atelectasis."}),
    Report("bibasilar", {"findings": "Bibasilar atelectasis."}),
]


@pytest.mark.parametrize("text, bit", [
    ("RML and RLL infiltrates", EVERY),
    ("infiltrates in the right upper and lower lobes", EVERY),
    ("opacities in the right middle lobe and lingula", EVERY),
    ("left upper lobe and lingula", 0),  # the lingula is part of the left upper lobe: one lobe
    ("right lower lobe opacity", 0),
    ("bibasilar atelectasis", 0),
    ("opacities at both apices", 0),
    ("lower lobes", 0),
])
def test_lobes_named_apart_on_their_sides_ask_for_every_one(text, bit):
    assert apart(read_locations(text)) == bit


def test_every_lobe_asked_is_one_key_more_and_only_when_named_apart():
    regions = RML | RLL | EVERY
    assert lobe_groups(regions) == [RML, RLL] and lobe_groups(RML | RLL) == []
    assert lobe_groups(LUL | LING | RLL | EVERY) == [RLL, LUL | LING] and lobe_groups(LING | RML | EVERY) == [RML, LING]
    assert location_slots(regions) == 2 * location_slots(RML | RLL)
    tiers = location_tiers(regions, [RML | RLL, RLL, RML, 0, LLL, RUL | RML | RLL])
    assert list(tiers) == [0, 1, 1, 3, 5, 0]  # both, one of them (each), none named, another lobe, both among more


@pytest.fixture(scope="module")
def index(hashing_index_of):
    return hashing_index_of("lobes_apart", R)


@pytest.mark.parametrize("engine", candidates.ENGINES)
def test_a_unit_naming_every_lobe_asked_ranks_first(index, monkeypatch, engine):
    monkeypatch.setenv(candidates.ENV, engine)
    order = [h.report_id for h in index.search("RML and RLL infiltrates", k=12, mode="hybrid")]
    assert order[0] == "both"
    assert order.index("rll") < order.index("plain") and order.index("rml") < order.index("plain")
    assert order.index("plain") < order.index("lll")


@pytest.mark.parametrize("engine", candidates.ENGINES)
def test_either_base_meets_bibasilar_as_before(index, monkeypatch, engine):
    monkeypatch.setenv(candidates.ENV, engine)
    assert not index.read("bibasilar atelectasis").regions & EVERY
    order = [h.report_id for h in index.search("atelectasis at the bottom of the lung", k=12, mode="hybrid")]
    assert set(order[:2]) == {"left_base", "bibasilar"}


def test_a_side_word_naming_one_of_two_lobes_on_two_sides_is_no_side(index):
    reading = index.read("opacities in the right middle lobe and lingula")
    assert reading.regions & EVERY and reading.side == "bilateral"
    assert index.read("right middle lobe opacity").side == "right"


@pytest.mark.parametrize("engine", candidates.ENGINES)
def test_the_airspace_words_answer_each_other_the_query_word_first(index, monkeypatch, engine):
    monkeypatch.setenv(candidates.ENV, engine)
    reading = index.read("lingular consolidation")
    assert set(reading.findings[0].any_of) == {"airspace disease", "infiltrate"}
    order = [h.report_id for h in index.search("lingular consolidation", k=12, mode="hybrid")]
    # the lingula's airspace disease before consolidation of the whole upper lobe (no lingula named) or another lobe
    assert order[0] == "ling_air" and order.index("lul_cons") < order.index("rll_cons")
    order = [h.report_id for h in index.search("consolidation", k=12, mode="hybrid")]
    assert set(order[:2]) == {"lul_cons", "rll_cons"}  # the query's own word first
    # a denial stays literal: "no consolidation" is not denied by a unit denying airspace disease
    assert not index.read("no consolidation").findings[0].any_of
