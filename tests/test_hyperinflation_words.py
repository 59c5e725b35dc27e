"""The words alone name hyperinflation on a chest film: "Hyperexpanded but clear lungs.", "Stable appearing
hyperinflated chest." (queries_v16 dev *no hyperinflation or emphysema*: three of its top five said the lungs were
hyperinflated in words the lexicon did not read, so nothing denied the query; 16 of 251 Open-i sentences with such a
word read nothing, one now: "Overexpanded lungs", a lay word the description batches use, is left to the linker). A
denial still reads absent.
"""

from __future__ import annotations

import pytest

from radsift.labels import Labeler
from radsift.records import Report
from radsift.search import candidates


@pytest.fixture(scope="module")
def labeler() -> Labeler:
    return Labeler()


@pytest.mark.parametrize("text, status", [
    ("Hyperexpanded but clear lungs.", "present"),
    ("Lungs are clear, hyperinflated.", "present"),
    ("Stable appearing hyperinflated chest.", "present"),
    ("Mildly hyperinflated, clear lungs.", "present"),
    ("The lungs are hyperinflated.", "present"),
    ("No hyperexpansion of the lungs.", "absent"),
    ("The lungs are not hyperinflated.", "absent"),
])
def test_the_word_alone_states_hyperinflation(labeler, text, status):
    assert [(m.finding, m.status) for m in labeler.label(text) if m.finding == "hyperinflation"] == \
        [("hyperinflation", status)]


R = [
    Report("said", {"findings": "Lungs are clear, hyperinflated. Heart size normal."}),
    Report("denied", {"findings": "No hyperexpansion of the lungs. Heart size normal."}),
    Report("silent", {"findings": "Heart size normal. Small left pleural effusion."}),
]


@pytest.fixture(scope="module")
def index(hashing_index_of):
    return hashing_index_of("hyperinflation_words", R)


@pytest.mark.parametrize("engine", candidates.ENGINES)
def test_a_denial_asked_ranks_the_hyperinflated_lungs_last(index, monkeypatch, engine):
    monkeypatch.setenv(candidates.ENV, engine)
    order = [h.report_id for h in index.search("no hyperinflation", k=10, mode="hybrid")]
    assert order == ["denied", "silent", "said"]
