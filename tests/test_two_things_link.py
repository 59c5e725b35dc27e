"""Of two things asked at once, a part's link weaker than the other's and under :data:`TWO_THINGS_LINK` is no second
finding: the part is most often the patient or what was done (the description benchmark's development batches:
"smoker with weight loss and a spiculated lesion, ? primary bronchogenic growth" read emphysema beside lung cancer from
"smoker" at 0.75; "they took away my whole left breast and some armpit glands" read lymphadenopathy beside the
mastectomy at 0.71; "s/p aortic valve swap, check prosthesis" a joint prosthesis at 0.72). Two strong links stay two
findings, and the strongest link stays whatever its cosine.
"""

from __future__ import annotations

import pytest
from test_lay_predicates import table_reader

from radsift.labels import Labeler
from radsift.search.partlinks import TWO_THINGS_LINK


def test_the_bar_lies_between_the_cosines_below():
    assert 0.74 < TWO_THINGS_LINK <= 0.76


@pytest.fixture(scope="module")
def labeler() -> Labeler:
    return Labeler()


def _table(second: float, first: float = 0.85):
    return table_reader({"a smoker": ("emphysema", second), "a spiculated lesion": ("lung cancer", first)})


def test_a_weak_second_link_is_no_second_finding(labeler):
    found, _ = _table(0.74)(labeler, "a smoker with a spiculated lesion")
    assert found == [("lung cancer", "present", "linked")]


def test_two_strong_links_are_two_findings(labeler):
    found, _ = _table(0.76)(labeler, "a smoker with a spiculated lesion")
    assert sorted(f for f, _, _ in found) == ["emphysema", "lung cancer"]


def test_the_strongest_link_stays_however_weak(labeler):
    found, _ = _table(0.71, first=0.72)(labeler, "a smoker with a spiculated lesion")
    assert found == [("lung cancer", "present", "linked")]
