"""A clinical request's question is what it asks a report to state; its context is the indication: "asthmatic child,
? thickened airway walls" asks for bronchial wall thickening, not for the asthma the context names (the description
benchmark's development batches linked "asthmatic" and "smoker" to airway disease and emphysema beside the question's
finding). A question naming nothing the labels know ("? recurrence") asks of its context, which is read with it; a
question naming no place asks where the context says ("dull right base, ? fluid around the lung").
"""

from __future__ import annotations

import pytest
from test_lay_predicates import table_reader

from radsift.labels import Labeler
from radsift.search.clauses import clinical_question

_TABLE = {
    "asthmatic child": ("airway disease", 0.93),
    "thickened airway walls": ("bronchial wall thickening", 0.96),
    "fluid around the lung": ("pleural effusion", 0.97),
    "fluid around the left lung": ("pleural effusion", 0.97),
    "coin lesion on a pre op film ct surveillance": ("nodule", 0.97),
}


@pytest.fixture(scope="module")
def labeler() -> Labeler:
    return Labeler()

_read = table_reader(_TABLE)


@pytest.mark.parametrize("query, question", [
    ("smoker with barrel chest, ? overexpanded lungs", "overexpanded lungs"),
    ("left base: ?consolidation", "consolidation"),
    ("fever ? pneumonia ?", "pneumonia"),
    ("pneumothorax? effusion?", None),  # two findings asked, no context
    ("? pneumothorax", None),  # no context
    ("is there a pneumothorax?", None),
    ("a, ? b, ? c", None),  # two questions: none taken
])
def test_the_question_after_its_context(query, question):
    assert clinical_question(query) == question


def test_the_context_names_no_finding_asked(labeler):
    found, _ = _read(labeler, "asthmatic child, ? thickened airway walls")
    assert found == [("bronchial wall thickening", "present", "linked")]


def test_a_lexicon_finding_in_the_context_is_not_asked(labeler):
    found, _ = _read(labeler, "known cardiomegaly, ? fluid around the lung")
    assert found == [("pleural effusion", "present", "linked")]


def test_a_question_naming_nothing_known_is_read_with_its_context(labeler):
    found, _ = _read(labeler, "coin lesion on a pre-op film, ? ct surveillance")
    assert ("nodule", "present", "linked") in found


def test_a_question_naming_no_place_asks_where_the_context_says(labeler):
    found, reading = _read(labeler, "dull to percussion at the right base, ? fluid around the lung")
    assert found == [("pleural effusion", "present", "linked")]
    assert reading.side == "right" and reading.location == "right base"
    assert all(f.side == "right" for f in reading.findings)


def test_a_question_naming_its_own_side_keeps_it(labeler):
    _, reading = _read(labeler, "dull to percussion at the right base, ? fluid around the left lung")
    assert reading.side == "left"
