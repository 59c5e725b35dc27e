"""The back, in a user's words, is the spine: "back curves to one side" links as "spine curves to one side" where its
own words link to nothing (queries_v16 dev *back curves to one side*: read as an open phrase, 0 of 5 on the quick
start's adapted index). A return ("x-ray came back clean", "come back for another x-ray", "back to normal") is no
back, and back pain stays a symptom, which links to nothing.
"""

from __future__ import annotations

import pytest
from test_lay_predicates import table_reader

from radsift.labels import Labeler
from radsift.search.partlinks import LAY_BACK

_read = table_reader({
    "spine curves to one side": ("scoliosis", 0.87),
    "upper spine pain": ("degenerative change", 0.72),
    "x-ray came spine clean": ("normal chest", 0.90),
})


@pytest.fixture(scope="module")
def labeler() -> Labeler:
    return Labeler()


def test_the_back_links_as_the_spine(labeler):
    found, _ = _read(labeler, "back curves to one side")
    assert found == [("scoliosis", "present", "linked")]


def test_back_pain_is_still_a_symptom(labeler):
    found, _ = _read(labeler, "upper back pain")
    assert all(source != "linked" for _, _, source in found)


@pytest.mark.parametrize("text", ["x-ray came back clean", "come back for another x-ray", "the lungs are back to normal",
                                  "at the back of the lung"])
def test_a_return_is_no_back(text):
    assert not LAY_BACK.search(text)
