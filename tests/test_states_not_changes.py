"""Two sides compared, and low lung volumes, are no change over time (queries_v6 dev "worse than last time": "left worse than right" led,
four of the top five; 42 Open-i reports compare the sides so, against 122 with any word of worsening; 15 of the 44
Open-i sentences with a word of improvement say "decreased lung volumes"). A unit's change is read from its words;
the few holding such a word beside a side word (worsening) or a volume (improvement) are read whole."""

from __future__ import annotations

import numpy as np
import pytest

from radsift.ranking.places import with_qualifiers
from radsift.records import Report
from radsift.search import candidates
from radsift.text.changes import BETTER, WORSE, says_no_change
from radsift.text.tokens import stem


@pytest.mark.parametrize("text, only", [
    ("Bilateral pleural effusions, left larger than right.", True),
    ("Bibasilar airspace disease, left worse right.", True),
    ("Right greater than the left basilar opacities, slightly larger on the right.", True),
    ("Mild interstitial prominence, worse in the right lung base.", True),
    ("Left effusion has increased, left larger than right.", False),
    ("Right base opacity, worse than on the prior study.", False),
    ("Increasing left pleural effusion.", False),
])
def test_a_comparison_of_the_sides_is_told_from_a_worsening(text, only):
    assert says_no_change(text, WORSE) is only


@pytest.mark.parametrize("text, only", [
    ("Decreased lung volumes.", True),
    ("Lung volumes are mildly diminished, with bibasilar atelectasis.", True),
    ("Decreased lung volumes. Decreased size of the left effusion.", False),
    ("Improved aeration; lung volumes are decreased.", False),
])
def test_low_lung_volumes_are_told_from_an_improvement(text, only):
    assert says_no_change(text, BETTER) is only


def test_units_comparing_the_sides_say_no_worsening_when_their_texts_are_read():
    texts = ["Bilateral effusions, left larger than right.", "Left effusion has increased in size.",
             "Bibasilar opacities, left worse than right, increased since the prior study.", "Decreased lung volumes.",
             "Decreased right effusion, lung volumes unchanged."]
    terms = [{stem(w) for w in t.lower().replace(".", "").replace(",", "").split()} for t in texts]

    def units_with(stems):
        return [i for i, t in enumerate(terms) if all(s in t for s in stems)]

    words = with_qualifiers(np.zeros(len(texts), dtype=np.uint64), units_with) & np.uint64(WORSE | BETTER)
    assert [int(w) for w in words] == [WORSE, WORSE, WORSE, BETTER, BETTER]  # the words alone cannot tell
    read = with_qualifiers(np.zeros(len(texts), dtype=np.uint64), units_with,
                           lambda rows: {r: texts[r] for r in rows}) & np.uint64(WORSE | BETTER)
    assert [int(w) for w in read] == [0, WORSE, WORSE, 0, BETTER]


R = [
    Report("sides", {"findings": "Bilateral pleural effusions, left larger than right. Heart size normal."}),
    Report("worse", {"findings": "Bilateral pleural effusions, larger than on the prior study. Heart size normal."}),
    Report("plain", {"findings": "Bilateral pleural effusions. Heart size normal."}),
    Report("low", {"findings": "Decreased lung volumes with bibasilar atelectasis. Heart size normal."}),
    Report("aerated", {"findings": "Bibasilar atelectasis, improved since the prior study. Heart size normal."}),
]


@pytest.fixture(scope="module")
def index(hashing_index_of):
    return hashing_index_of("sides_compared", R)


@pytest.mark.parametrize("engine", candidates.ENGINES)
def test_a_worsening_asked_ranks_the_worse_effusion_and_leaves_the_sides_compared_with_the_plain(
        index, monkeypatch, engine):
    monkeypatch.setenv(candidates.ENV, engine)
    order = [h.report_id for h in index.search("pleural effusions getting bigger", k=10, mode="hybrid")]
    assert order[0] == "worse" and set(order[1:3]) == {"sides", "plain"}


@pytest.mark.parametrize("engine", candidates.ENGINES)
def test_an_improvement_asked_ranks_the_improved_before_low_volumes(index, monkeypatch, engine):
    monkeypatch.setenv(candidates.ENV, engine)
    order = [h.report_id for h in index.search("atelectasis getting better", k=10, mode="hybrid")]
    assert order[:2] == ["aerated", "low"]
    assert [h.report_id for h in index.search("atelectasis getting better", k=10, mode="hybrid",
                                              read_as="literal")][0] == "aerated"
