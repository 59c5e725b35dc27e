"""A pattern of its look the query asks of its finding (queries_v9 dev "streaky left basilar opacity", "platelike
atelectasis in the right lower lobe", "diffuse osteopenia"; v10 dev "bibasilar subsegmental atelectasis"): the finding
is read as before, and within each tier the units saying the pattern rank first, as a degree's do; the bits lie
above 32, in the 64-bit masks."""

from __future__ import annotations

import numpy as np
import pytest

from radsift.ranking.places import location_slots, location_tiers, placed_mask, placed_rows, where_tiers, with_qualifiers
from radsift.records import Report
from radsift.search import candidates
from radsift.text.degrees import DEGREE, SLIGHT
from radsift.text.locations import LLL
from radsift.text.patterns import (DIFFUSE, HAZY, ILL_DEFINED, MARGIN, NODULAR, PATTERN, PERIHILAR, PLATE, STREAKY,
                                   SUBSEGMENTAL, query_pattern)
from radsift.text.tokens import stem

R = [
    Report("plain", {"findings": "Left basilar opacity, likely atelectasis. Heart size normal. Lungs otherwise clear."}),
    Report("streaky", {"findings": "Streaky left basilar opacity, seen again on the frontal and the lateral view of "
                                   "today's examination. Heart size normal."}),
    Report("patchy", {"findings": "Patchy left basilar opacity. Heart size normal."}),
    Report("right", {"findings": "Streaky right basilar opacity. Heart size normal."}),
    Report("none", {"findings": "No focal opacity. Heart size normal."}),
]


@pytest.mark.parametrize("query, words, bits", [
    ("streaky left basilar opacity", "streaky", STREAKY),
    ("platelike atelectasis in the right lower lobe", "platelike", PLATE),
    ("plate-like atelectasis", "plate-like", PLATE),
    ("linear atelectasis in the lingula", "linear", PLATE),
    ("bibasilar subsegmental atelectasis", "subsegmental", SUBSEGMENTAL),
    ("perihilar opacities with cardiomegaly", "perihilar", PERIHILAR),
    ("diffuse osteopenia", "diffuse", DIFFUSE),
    # ill-defined is a margin of its own, never haze (the newcomer judges' reading of *hazy areas in the lungs*)
    ("hazy ill-defined opacity", "hazy, ill-defined", HAZY | ILL_DEFINED),
    ("ill-defined opacity", "ill-defined", ILL_DEFINED), ("vague nodular density", "nodular, vague",
                                                         NODULAR | ILL_DEFINED),
    ("streaky perihilar opacities", "streaky, perihilar", STREAKY | PERIHILAR),
    ("left basilar opacity", None, 0),
    ("no focal consolidation", None, 0),
])
def test_a_query_names_its_patterns(query, words, bits):
    assert query_pattern(query) == (words, bits)


def test_units_say_a_pattern_from_their_words_and_the_bits_lie_above_32():
    texts = ["Streaky left basilar opacity.", "Plate-like atelectasis.", "Subsegmental atelectasis.",
             "Hazy opacity.", "Left basilar opacity.", "Mild diffuse osteopenia.", "Ill-defined opacity."]
    terms = [{stem(w) for w in t.lower().replace(".", "").replace("-", " ").split()} for t in texts]

    def units_with(stems):
        return [i for i, t in enumerate(terms) if all(s in t for s in stems)]

    got = with_qualifiers(np.zeros(len(texts), dtype=np.uint64), units_with)
    assert [int(g) for g in got & np.uint64(PATTERN | MARGIN)] == [STREAKY, PLATE, SUBSEGMENTAL, HAZY, 0, DIFFUSE,
                                                                    ILL_DEFINED]
    assert int(got[5]) & DEGREE == SLIGHT  # a degree beside it, in its own bits
    assert PATTERN >= 1 << 32 and PATTERN < 1 << 64


def test_a_pattern_asked_adds_a_slot_and_its_units_are_placed():
    units = np.array([LLL | STREAKY, LLL, STREAKY, 0, LLL | HAZY], dtype=np.uint64)
    assert location_tiers(LLL | STREAKY, units).tolist() == [0, 1, 2, 3, 1]
    assert location_slots(STREAKY) == 6 and placed_mask(STREAKY) & PATTERN == PATTERN
    assert placed_mask(LLL) & PATTERN == 0  # no pattern asked: a unit saying one holds the unplaced tier
    assert placed_rows(units, STREAKY).tolist() == [0, 1, 2, 4]


def test_a_margin_is_asked_beside_a_pattern_not_instead_of_it():
    # "ill-defined nodular density" (queries_v14, spent test): "vague nodular density" before "nodular density"
    units = np.array([NODULAR, NODULAR | ILL_DEFINED, ILL_DEFINED, 0], dtype=np.uint64)
    # no place asked: every unit in the place tier "none" (1), then the families it misses (2 asked: 3 slots)
    assert location_tiers(NODULAR | ILL_DEFINED, units).tolist() == [4, 3, 4, 5]
    assert location_slots(NODULAR | ILL_DEFINED) == 9 and location_slots(NODULAR) == 6
    assert MARGIN & PATTERN == 0


@pytest.fixture(scope="module")
def index(hashing_index_of):
    return hashing_index_of("patterns", R)


def test_the_reading_shows_the_pattern_and_a_finding_is_needed(index):
    reading = index.read("streaky left basilar opacity")
    assert reading.pattern == "streaky" and reading.regions & PATTERN == STREAKY
    assert "pattern streaky" in reading.describe() and reading.to_dict()["pattern"] == "streaky"
    assert index.read("streaky").pattern is None  # no finding read: no pattern
    assert index.read("no streaky opacity").pattern is None  # a denial alone asks none
    assert index.read("streaky left basilar opacity", reading={"pattern": "ignore"}).pattern is None


@pytest.mark.parametrize("engine", candidates.ENGINES)
def test_units_saying_the_pattern_rank_first_within_the_tier(index, monkeypatch, engine):
    monkeypatch.setenv(candidates.ENV, engine)
    order = [h.report_id for h in index.search("streaky left basilar opacity", k=10, mode="hybrid")]
    assert order[0] == "streaky"
    assert order.index("plain") < order.index("right")  # the side still ranks before the pattern
    without = [h.report_id for h in index.search("streaky left basilar opacity", k=10, mode="hybrid",
                                                 reading={"pattern": "ignore"})]
    assert without.index("streaky") <= 2


def test_with_the_pattern_taken_out_the_units_saying_it_lose_their_lead(index, monkeypatch):
    monkeypatch.setenv(candidates.ENV, "exact")
    # "strandy" is no word of the reports' left ones: only the pattern's words bring "Streaky ..." first by BM25
    with_pattern = [h.report_id for h in index.search("strandy left basilar opacity", k=10, mode="bm25")]
    without = [h.report_id for h in index.search("strandy left basilar opacity", k=10, mode="bm25",
                                                 reading={"pattern": "ignore"})]
    assert with_pattern[0] == "streaky" and without[0] != "streaky"


SIDED = [
    Report("left", {"findings": "Platelike atelectasis at the left lung base. Heart size normal."}),
    Report("both", {"findings": "Bibasilar subsegmental atelectasis. Heart size normal."}),
    Report("clear", {"findings": "Lungs are clear. Heart size normal."}),
]


def test_the_opposite_side_ranks_after_the_qualifiers_missed():
    # per place: same or no side by the qualifiers missed, then the opposite side (one qualifier asked: k = 2)
    places = np.array([0, 1, 0, 1, 2 * 2 + 1])  # place 0 saying it, place 0 missing it, ..., place 2 missing it
    sides = np.array([2, 0, 0, 1, 0])
    assert where_tiers(places, sides, LLL | STREAKY).tolist() == [4, 2, 0, 3, 14]
    assert where_tiers(places, None, LLL | STREAKY).tolist() == [0, 2, 0, 2, 14]
    assert where_tiers(places, sides, LLL).tolist() == [2, 3, 0, 4, 15]  # no qualifier: location * 3 + side


@pytest.mark.parametrize("engine", candidates.ENGINES)
def test_a_unit_on_the_opposite_side_never_leads_for_saying_the_pattern(hashing_index_of, monkeypatch, engine):
    # queries_v16 dev "linear atelectasis at both bases": one-sided platelike atelectasis led the bilateral ones
    monkeypatch.setenv(candidates.ENV, engine)
    index = hashing_index_of("patterns-sided", SIDED)
    for level in ("report", "sentence"):
        order = [h.report_id for h in index.search("linear atelectasis at both bases", k=10, mode="hybrid",
                                                   level=level)]
        assert order[:2] == ["both", "left"], (level, order)
        order = [h.report_id for h in index.search("linear atelectasis at the left base", k=10, mode="hybrid",
                                                   level=level)]
        assert order[0] == "left", (level, order)
