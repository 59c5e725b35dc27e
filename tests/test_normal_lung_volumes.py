"""Lungs of normal volume are neither over- nor under-inflated: "The lungs are normally inflated and clear." and "Lung
volumes are normal." deny hyperinflation and low lung volumes both (queries_v16 dev *no hyperinflation or emphysema*: a
manual run found the reports saying so, and the search ranked none of them in its first 300, since the lexicon read
nothing in those sentences). Lung volumes "decreased" or "reduced" are low ones, and so are lungs "hypoventilated" and
a "poor inspiratory effort" or "suboptimal inspiration", the shallow breath that makes them.
"""

from __future__ import annotations

import pytest

from radsift.labels import Labeler
from radsift.records import Report
from radsift.search import candidates


@pytest.fixture(scope="module")
def labeler() -> Labeler:
    return Labeler()


def _read(labeler, text):
    return sorted((m.finding, m.status) for m in labeler.label(text)
                  if m.finding in ("hyperinflation", "low lung volumes"))


@pytest.mark.parametrize("text", [
    "The lungs are normally inflated and clear.",
    "Lungs are normally expanded.",
    "Lung volumes are normal.",
    "Normal lung volumes.",
    "Lung volumes within normal limits.",
])
def test_normal_lung_volumes_deny_both(labeler, text):
    assert _read(labeler, text) == [("hyperinflation", "absent"), ("low lung volumes", "absent")]


@pytest.mark.parametrize("text, read", [
    ("Lung volumes are decreased.", [("low lung volumes", "present")]),
    ("Lung volumes are mildly reduced.", [("low lung volumes", "present")]),
    ("Lung volumes are low.", [("low lung volumes", "present")]),
    ("The lungs are hyperinflated.", [("hyperinflation", "present")]),
    # the shallow breath that makes them (queries_v16 dev *poor inspiratory effort* read no finding)
    ("The lungs are hypoventilated.", [("low lung volumes", "present")]),
    ("Suboptimal inspiration.", [("low lung volumes", "present")]),
    ("Poor inspiratory effort.", [("low lung volumes", "present")]),
])
def test_abnormal_lung_volumes_stay_stated(labeler, text, read):
    assert _read(labeler, text) == read


R = [
    Report("normal", {"findings": "The lungs are normally inflated and clear. Heart size normal."}),
    Report("silent", {"findings": "Heart size normal. Small left pleural effusion."}),
    Report("said", {"findings": "Lungs are clear, hyperinflated. Heart size normal."}),
]


@pytest.fixture(scope="module")
def index(hashing_index_of):
    return hashing_index_of("normal_lung_volumes", R)


@pytest.mark.parametrize("engine", candidates.ENGINES)
def test_a_denial_asked_finds_the_normally_inflated_lungs_first(index, monkeypatch, engine):
    monkeypatch.setenv(candidates.ENV, engine)
    for query in ("no hyperinflation", "no low lung volumes"):
        order = [h.report_id for h in index.search(query, k=10, mode="hybrid")]
        assert order[0] == "normal", query
