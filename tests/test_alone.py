"""A finding alone: "tortuous aorta, otherwise normal" asks for the studies whose finding is the tortuous aorta and
nothing else (newcomer development queries *tortuous aorta, otherwise normal*, *granuloma, otherwise normal*,
*scoliosis, otherwise normal*: the search read "otherwise normal" as no acute abnormality and ranked first reports
stating the finding beside a big heart, hyperinflated lungs and a fracture). Among the reports stating the query's
findings, those stating fewer other findings rank first; a finding that holds or is held by the query's (a calcified
granuloma is a granuloma) is no other finding.
"""

from __future__ import annotations

import numpy as np
import pytest

from radsift.labels import Labeler
from radsift.ranking.alone import CAP, AloneKeys, alone_keys, present_pairs, related, report_totals
from radsift.records import Report
from radsift.search import candidates
from radsift.search.reading import read_query
from radsift.text.normality import asks_alone


@pytest.mark.parametrize("query", [
    "tortuous aorta, otherwise normal", "granuloma, otherwise unremarkable", "scoliosis and nothing else",
    "hiatal hernia, no other abnormality", "old rib fracture, otherwise no acute disease", "otherwise-normal chest",
    "a nodule is the only finding",
])
def test_the_cue_of_a_finding_alone_is_read(query):
    assert asks_alone(query)


@pytest.mark.parametrize("query", [
    "tortuous aorta", "normal chest x-ray", "no pneumothorax", "lungs are clear", "other findings of heart failure",
    "the heart is normal",
])
def test_no_cue_no_alone(query):
    assert not asks_alone(query)


@pytest.fixture(scope="module")
def labeler() -> Labeler:
    return Labeler()


def test_the_reading_says_it_and_the_user_can_take_it_out(labeler):
    reading = read_query("tortuous aorta, otherwise normal", labeler)
    assert reading.alone and "nothing else" in reading.describe()
    assert reading.to_dict()["alone"] is True
    assert not read_query("tortuous aorta, otherwise normal", labeler, override={"alone": "ignore"}).alone
    assert not read_query("tortuous aorta", labeler).alone


def test_a_finding_held_by_the_query_is_no_other(labeler):
    names = related(labeler.lexicon, ["granuloma"])
    assert {"granuloma", "calcified granuloma"} <= names
    assert "cardiomegaly" not in names
    assert "pleural effusion" in related(labeler.lexicon, ["hydropneumothorax"])


def test_the_key_counts_other_present_findings_of_the_report():
    # labels: (report, finding, status); finding 0 is the query's, 1..4 others; -1 absent, 0 uncertain
    report = np.array([0, 0, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3])
    finding = np.array([0, 1, 0, 1, 2, 0, 1, 2, 3, 4, 0, 1])
    status = np.array([1, -1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0])
    pair_reports, offsets = present_pairs(report, finding, status, 5)
    keys = alone_keys(pair_reports, offsets, [0], 4, np.array([0, 1, 2, 3, 1]))
    assert keys.tolist() == [0, 2, CAP, 0, 2]  # a denial and a doubt are no finding stated; units take their report's
    # the candidate engine asks the rows it ranks only: the same keys
    lazy = AloneKeys(pair_reports, offsets, report_totals(pair_reports, 4), [0, 9], np.array([0, 1, 2, 3, 1]))
    assert lazy[np.array([4, 2])].tolist() == [2, CAP] and lazy.all().tolist() == keys.tolist()


R = [
    Report("many", {"findings": "Tortuous aorta. The heart is enlarged. Small left pleural effusion. "
                                "Right lower lobe atelectasis."}),
    Report("alone", {"findings": "Tortuous aorta. The lungs are clear. No pleural effusion."}),
    Report("one", {"findings": "Tortuous aorta. The heart is enlarged. The lungs are clear."}),
    Report("other", {"findings": "The lungs are clear. Heart size normal."}),
]


@pytest.fixture(scope="module")
def index(hashing_index_of):
    return hashing_index_of("finding_alone", R)


@pytest.mark.parametrize("engine", candidates.ENGINES)
def test_the_report_stating_nothing_else_ranks_first(index, monkeypatch, engine):
    monkeypatch.setenv(candidates.ENV, engine)
    order = [h.report_id for h in index.search("tortuous aorta, otherwise normal", k=10, mode="hybrid")]
    assert order[:3] == ["alone", "one", "many"]
    plain = [h.report_id for h in index.search("tortuous aorta", k=10, mode="hybrid")]
    assert set(plain[:3]) == {"alone", "one", "many"}
    taken_out = [h.report_id for h in index.search("tortuous aorta, otherwise normal", k=10, mode="hybrid",
                                                   reading=["alone=ignore"])]
    assert set(taken_out[:3]) == {"alone", "one", "many"}
