"""A spine's curve is named by the side it bulges to: "dextroscoliosis", "dextro-convex curvature" are a curve to the
right, "levoscoliosis" one to the left (queries_v16 dev *scoliosis convex to the right*: the top five were plain
"Scoliosis." reports; Open-i names the side of 52 curves so, never by "right" or "left"). The side tier reads those
words as the side, in both search engines.

Sentences written for these tests, the hashing encoder (the rule acts on the side tier).
"""

from __future__ import annotations

import pytest

from radsift.labels.openvocab import query_side
from radsift.records import Report
from radsift.search import candidates
from radsift.text.sides import text_sides


@pytest.mark.parametrize("text, sides", [
    ("Mild dextroscoliosis of the thoracic spine.", {"right"}),
    ("Dextro-convex scoliotic curvature of the thoracic spine.", {"right"}),
    ("There is dextrocurvature within the spine.", {"right"}),
    ("Levoscoliosis of the lumbar spine.", {"left"}),
    ("Mild levocurvature.", {"left"}),
    ("Dextrocurvature of the thoracic spine, levocurvature of the lumbar spine.", {"left", "right"}),
    ("Scoliosis of the thoracic spine.", set()),
    ("Dextrocardia.", set()),  # the heart on the right is no curve (and not read as a side here)
])
def test_a_curves_side_is_read_from_its_name(text, sides):
    assert text_sides(text) == sides


def test_a_query_naming_the_curves_side_asks_that_side():
    assert query_side("scoliosis convex to the right") == "right"
    assert query_side("dextroscoliosis") == "right" and query_side("levoscoliosis") == "left"


R = [
    Report("plain", {"findings": "Scoliosis of the thoracic spine. Heart size normal. The lungs are clear."}),
    Report("dextro", {"findings": "Mild dextroscoliosis of the thoracic spine. Heart size normal."}),
    Report("levo", {"findings": "Mild levoscoliosis of the thoracic spine. Heart size normal."}),
]


@pytest.fixture(scope="module")
def index(hashing_index_of):
    return hashing_index_of("spine_curve_side", R)


@pytest.mark.parametrize("engine", candidates.ENGINES)
def test_a_curve_asked_by_its_side_ranks_that_sides_curve_first_and_the_other_last(index, monkeypatch, engine):
    monkeypatch.setenv(candidates.ENV, engine)
    assert [h.report_id for h in index.search("scoliosis convex to the right", k=10, mode="hybrid")] == \
        ["dextro", "plain", "levo"]
    assert [h.report_id for h in index.search("scoliosis convex to the left", k=10, mode="hybrid")] == \
        ["levo", "plain", "dextro"]
