"""A calcified heart valve is its own finding: not a coronary calcification, not a valve prosthesis (queries_v5 dev:
"mitral annular calcification", "calcium on the heart valve")."""

from __future__ import annotations

import pytest

from radsift.labels import Labeler


@pytest.fixture(scope="module")
def labeler() -> Labeler:
    return Labeler()


@pytest.mark.parametrize("text, status", [
    ("Dense mitral annular calcification.", "present"),
    ("Calcification is seen within the aortic valve.", "present"),
    ("No calcification of the mitral annulus.", "absent"),
])
def test_a_calcified_valve_is_stated(labeler, text, status) -> None:
    found = {m.finding: m.status for m in labeler.label(text)}
    assert found == {"valve calcification": status}


def test_coronary_calcium_and_a_new_valve_stay_themselves(labeler) -> None:
    assert [m.finding for m in labeler.label("Calcified coronary arteries.")] == ["coronary artery calcification"]
    assert [m.finding for m in labeler.label("Mitral valve replacement.")] == ["cardiac valve prosthesis"]
