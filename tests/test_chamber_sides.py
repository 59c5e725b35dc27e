"""A heart chamber's side is no side of the chest: a unit saying "catheter tip in the right atrium" names no right side
for "right pleural effusion", and a query whose side is a chamber's ("enlarged left atrium") is asked of the
chambers the units name, in both search engines (issue 35's note: the side flags were words alone, so a left chest
tube "with its tip near the right atrium" named both sides).

Sentences written for these tests, the hashing encoder (the rule acts on the side tier).
"""

from __future__ import annotations

import pytest
from engine_pages import hashing_index

from radsift.labels.openvocab import query_side
from radsift.ranking import side_flags
from radsift.records import Report
from radsift.search import candidates
from radsift.text.sides import chamber_sides, names_chamber_side, text_sides, without_chamber_sides
from radsift.text.tokens import stem


@pytest.mark.parametrize("text, sides", [
    ("Catheter tip in the right atrium.", set()),
    ("Pacer lead tip in the right ventricle.", set()),
    ("Left ventricular enlargement.", set()),
    ("Enlarged left atrial appendage.", set()),
    ("Left chest tube with its tip in the right atrium.", {"left"}),      # the tube's side stays
    ("Right pleural effusion. Left atrial enlargement.", {"right"}),
    ("Opacity at the right heart border.", {"right"}),                  # the heart's border lies on a side
    ("Bilateral effusions.", {"bilateral"}),
])
def test_a_text_names_the_sides_of_the_chest_only(text, sides):
    assert text_sides(text) == sides


def test_a_query_whose_side_is_a_chambers_says_so_and_others_keep_theirs():
    assert query_side("catheter tip in the right atrium") == "right" and names_chamber_side("catheter tip in the right atrium")
    assert names_chamber_side("lead tip in the right ventricle") and names_chamber_side("enlarged left atrium")
    assert not names_chamber_side("right chest tube") and not names_chamber_side("right chest tube, tip in the right atrium")
    assert chamber_sides("Left atrial and right ventricular enlargement.") == {"left", "right"}
    assert without_chamber_sides("tip in the Right Atrium") == "tip in the Atrium"


TEXTS = ["Right chest tube in place.", "Left chest tube in place. Line tip in the right atrium.",
         "Catheter tip in the right atrium.", "Left pleural effusion."]


def test_side_flags_read_a_chamber_unit_again_and_only_those():
    stems = {}
    for row, text in enumerate(TEXTS):
        for word in text.lower().replace(".", " ").split():
            stems.setdefault(stem(word), set()).add(row)
    read = []

    def texts(rows):
        read.extend(rows)
        return {r: TEXTS[r] for r in rows}

    left, right, both = side_flags(len(TEXTS), lambda s: sorted(stems.get(s, ())), texts)
    assert right.tolist() == [True, False, False, False] and left.tolist() == [False, True, False, True]
    assert sorted(read) == [1, 2]  # the units holding a side word and a chamber word, no other
    left, right, _ = side_flags(len(TEXTS), lambda s: sorted(stems.get(s, ())))  # words alone, as before
    assert right.tolist() == [True, True, True, False]
    left, right, _ = side_flags(len(TEXTS), lambda s: sorted(stems.get(s, ())), texts, chambers=True)
    assert right.tolist() == [False, True, True, False] and not left.any()  # the chambers' sides alone


R = [
    Report("right", {"findings": "Small right pleural effusion."}),
    Report("chamber", {"findings": "Small pleural effusion, catheter tip in the right atrium."}),
    Report("left", {"findings": "Small left pleural effusion."}),
    Report("plain", {"findings": "Small pleural effusion."}),
    Report("tube", {"findings": "Left chest tube with its tip near the right atrium."}),
    Report("tube2", {"findings": "Chest tube in place."}),
    Report("la", {"findings": "Enlarged left atrium."}),
    Report("ra", {"findings": "Enlarged right atrium."}),
    Report("ra2", {"findings": "Enlarged right atrium. Left pleural effusion."}),
    Report("lae", {"findings": "Left atrial enlargement."}),
    Report("lpe", {"findings": "Small left pleural effusion. Heart size normal."}),
]


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    return hashing_index(tmp_path_factory.mktemp("chambers"), R)


def _scores(index, query: str, mode: str) -> dict[str, float]:
    return {h.report_id: h.score for h in index.search(query, k=10, mode=mode)}


@pytest.mark.parametrize("engine", candidates.ENGINES)
@pytest.mark.parametrize("mode", ["hybrid", "bm25"])
def test_a_chamber_is_no_side_in_the_ranking(index, monkeypatch, engine, mode):
    monkeypatch.setenv(candidates.ENV, engine)
    # an effusion beside a catheter in the right atrium is no right effusion: it ranks with the effusion of no side
    # (by words alone it ranked with the right one: 0.67 beside 1.0, the plain one -7.27)
    got = _scores(index, "right pleural effusion", mode)
    assert max(got, key=got.get) == "right" and min(("left", "plain", "chamber"), key=got.get) == "left"
    assert abs(got["chamber"] - got["plain"]) < abs(got["chamber"] - got["right"]), got
    # a left chest tube whose tip lies near the right atrium is on the other side of a right chest tube query
    # (by words alone it named both sides and ranked with the tube of no side)
    got = _scores(index, "right chest tube", mode)
    assert got["tube2"] - got["tube"] > 4, got


@pytest.mark.parametrize("engine", candidates.ENGINES)
@pytest.mark.parametrize("mode", ["hybrid", "bm25"])
def test_a_chambers_side_is_asked_of_the_chambers(index, monkeypatch, engine, mode):
    monkeypatch.setenv(candidates.ENV, engine)
    reading = index.read("enlarged left atrium")
    assert reading.side == "left" and reading.chamber and "side left (of a heart chamber)" in reading.describe()
    assert not index.read("left pleural effusion").chamber
    got = _scores(index, "enlarged left atrium", mode)
    # the left atrium first and the right atrium a side tier below (by words alone the two were in one tier)
    assert max(got, key=got.get) == "la" and got["la"] - got["ra"] > 4, got
    # "atrial enlargement" is the phrase: the enlarged left atrium in other words ranks above a left pleural effusion
    # (by words alone the effusion's "left" was the query's side and it ranked above)
    got = _scores(index, "left atrial enlargement", mode)
    assert max(got, key=got.get) == "lae" and got["la"] > got["lpe"], got


def test_the_reading_says_a_chambers_side_in_every_view(index):
    from radsift.search.display import reading_text

    reading = index.read("catheter tip in the right atrium")
    assert reading.to_dict()["chamber"] is True and index.read("right chest tube").to_dict()["chamber"] is False
    assert "side right (of a heart chamber)" in reading_text(reading).plain
    assert "(of a heart chamber)" not in reading_text(index.read("right chest tube")).plain
