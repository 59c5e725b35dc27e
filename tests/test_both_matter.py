""""both gas and liquid" names one collection of two kinds of matter, not two things asked nor two sides (the description
benchmark's development batches: "after draining the chest, both gas and liquid remain outside the lung" was read as a
chest tube and a pleural effusion on both sides; it is a hydropneumothorax, its side unnamed). "both lungs and the
heart" still names two things, and "both bases" a side.
"""

from __future__ import annotations

import pytest
from test_lay_predicates import table_link

from radsift.labels import Labeler
from radsift.search.clauses import query_parts, without_both_matter
from radsift.search.reading import read_query

_TABLE = {
    "both gas and liquid outside the lung": ("hydropneumothorax", 0.80),
    "liquid outside the lung": ("pleural effusion", 0.96),
    "after draining the chest": ("chest tube", 0.90),
}
_link = table_link(_TABLE)


@pytest.fixture(scope="module")
def labeler() -> Labeler:
    return Labeler()


@pytest.mark.parametrize("query, parts", [
    ("after draining the chest, both gas and liquid remain outside the lung",
     ["after draining the chest", "both gas and liquid remain outside the lung"]),
    ("both air and fluid around the lung with a big heart", ["both air and fluid around the lung", "a big heart"]),
    ("both lungs and the heart are normal", ["both lungs", "the heart are normal"]),
    ("BOTH GAS AND LIQUID with a big heart", ["BOTH GAS AND LIQUID", "a big heart"]),  # in capitals too
    ("effusions at both bases and a big heart", ["effusions at both bases", "a big heart"]),
])
def test_both_kinds_of_matter_are_one_part(query, parts):
    assert query_parts(query) == parts


def test_both_kinds_of_matter_name_no_side():
    assert without_both_matter("both gas and liquid outside the lung") == "gas and liquid outside the lung"
    assert without_both_matter("effusions at both bases") == "effusions at both bases"


def test_the_collection_is_read_as_one_thing_on_no_side(labeler):
    reading = read_query("after draining the chest, both gas and liquid remain outside the lung", labeler,
                         link=_link, literal=lambda stems: False)
    found = [f.finding for f in reading.findings]
    assert "hydropneumothorax" in found and "pleural effusion" not in found
    assert reading.side is None
    assert read_query("effusions at both bases", labeler, link=_link, literal=lambda stems: False).side == "bilateral"
