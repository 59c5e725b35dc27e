"""A nodule asked noncalcified (queries_v16 dev *noncalcified lung nodule*: the top five were nodules saying nothing of
their calcification, one of the two Open-i reports calling a nodule noncalcified among them): "noncalcified",
"non-calcified", "uncalcified" and a nodule "not calcified" are a pattern of its look (:data:`radsift.text.patterns.NONCALCIFIED`), so within
the tier the units saying it rank first, in both search engines."""

from __future__ import annotations

import numpy as np
import pytest

from radsift.ranking.places import with_qualifiers
from radsift.records import Report
from radsift.search import candidates
from radsift.text.patterns import NONCALCIFIED, PATTERN, query_pattern
from radsift.text.tokens import stem


@pytest.mark.parametrize("query, bits", [
    ("noncalcified lung nodule", NONCALCIFIED), ("non-calcified nodule", NONCALCIFIED),
    ("nodule that is not calcified", NONCALCIFIED), ("uncalcified nodule", NONCALCIFIED),
    ("calcified nodule", 0), ("lung nodule", 0),
])
def test_a_query_asks_a_nodule_noncalcified(query, bits):
    assert query_pattern(query)[1] == bits


def test_units_say_it_from_their_words():
    texts = ["Three noncalcified lung nodules.", "A 7 mm uncalcified nodule.", "No non-calcified nodules.",
             "Calcified granuloma.", "Lung nodule.", "A 1 cm nodule that is not calcified.",
             "A calcified lymph node is not identified."]
    terms = [{stem(w) for w in t.lower().replace(".", "").replace("-", " ").split()} for t in texts]

    def units_with(stems):
        return [i for i, t in enumerate(terms) if all(s in t for s in stems)]

    got = with_qualifiers(np.zeros(len(texts), dtype=np.uint64), units_with) & np.uint64(PATTERN)
    assert [int(g) for g in got] == [NONCALCIFIED, NONCALCIFIED, NONCALCIFIED, 0, 0, NONCALCIFIED, 0]


R = [
    Report("plain", {"findings": "A 1 cm nodule in the left lower lobe. Heart size normal. No effusion."}),
    Report("calcified", {"findings": "A 1 cm calcified nodule in the left lower lobe. Heart size normal."}),
    Report("noncalcified", {"findings": "A 1 cm uncalcified nodule in the left lower lobe. Heart size normal."}),
    Report("denied", {"findings": "No noncalcified nodule. Heart size normal."}),
]


@pytest.fixture(scope="module")
def index(hashing_index_of):
    return hashing_index_of("noncalcified", R)


@pytest.mark.parametrize("engine", candidates.ENGINES)
def test_the_nodule_said_noncalcified_ranks_first_and_the_denial_last(index, monkeypatch, engine):
    monkeypatch.setenv(candidates.ENV, engine)
    # the query's words share "calcified" with the calcified nodule, none with "uncalcified": the pattern brings it
    order = [h.report_id for h in index.search("nodule that is not calcified", k=10, mode="hybrid")]
    assert order[0] == "noncalcified"
    assert [h.report_id for h in index.search("noncalcified lung nodule", k=10, mode="hybrid")][-1] == "denied"
    assert "pattern noncalcified" in index.read("noncalcified lung nodule").describe()
