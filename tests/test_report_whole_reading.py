"""At report level, a unit stating one of the query's findings, in a report stating them all, ranks by its place and
side as a unit stating them all does (queries_v10 dev "bibasilar atelectasis and cardiomegaly": "Mild bibasilar
dependent atelectasis." beside "The cardiac silhouette is enlarged." ranked under "Cardiomegaly with small
bilateral pleural effusions and left basilar atelectasis."). A unit saying nothing of any finding, and every unit at
sentence level, keep their own reading; both engines agree."""

from __future__ import annotations

import numpy as np
import pytest

from radsift.ranking.tiers import UNSTATED, own_reading
from radsift.records import Report
from radsift.search import candidates

R = [
    Report("apart", {"findings": "The heart is enlarged. Mild bibasilar atelectasis. No pneumothorax."}),
    Report("one_side", {"findings": "Cardiomegaly with left basilar atelectasis. No pneumothorax."}),
    Report("heart_only", {"findings": "Cardiomegaly. No pneumothorax."}),
    Report("clear", {"findings": "Heart size normal. Lungs clear."}),
    Report("together", {"findings": "Marked cardiomegaly is again seen, with no evidence of pneumothorax or "
                                    "pleural effusion on either side. Mild degenerative changes of the spine."}),
]


@pytest.fixture(scope="module")
def index(hashing_index_of):
    return hashing_index_of("whole", R)


def test_own_reading_fills_a_silent_finding_only_beside_a_stated_one_and_only_by_report() -> None:
    stated = np.array([[0, UNSTATED], [UNSTATED, UNSTATED], [2, UNSTATED]], dtype=np.int8)
    both = ["present", "present"]
    assert own_reading(stated, both, True).tolist() == [[0, 0], [UNSTATED, UNSTATED], [2, 0]]
    assert own_reading(stated, both, False).tolist() == stated.tolist()
    assert own_reading(stated[:, :1], both[:1], True).tolist() == stated[:, :1].tolist()


def test_own_reading_never_fills_a_finding_asked_absent() -> None:
    # "X without Y": "X." is not "X without Y.", and "No Y." alone states nothing asked present.
    stated = np.array([[0, UNSTATED], [UNSTATED, 0], [0, 0]], dtype=np.int8)
    assert own_reading(stated, ["present", "absent"], True).tolist() == stated.tolist()
    # "X and Y without Z": the present ones fill each other, the absent one stays.
    stated = np.array([[0, UNSTATED, UNSTATED], [UNSTATED, UNSTATED, 0]], dtype=np.int8)
    assert own_reading(stated, ["present", "present", "absent"], True).tolist() == [
        [0, 0, UNSTATED], [UNSTATED, UNSTATED, 0]]
    # only absences asked ("no effusion or pneumothorax"): a unit denying one is as much the query as the list
    stated = np.array([[0, UNSTATED], [UNSTATED, UNSTATED]], dtype=np.int8)
    assert own_reading(stated, ["absent", "absent"], True).tolist() == [[0, 0], [UNSTATED, UNSTATED]]


@pytest.mark.parametrize("engine", candidates.ENGINES)
def test_the_place_asked_leads_among_reports_stating_both(index, monkeypatch, engine) -> None:
    monkeypatch.setenv(candidates.ENV, engine)
    hits = index.search("bibasilar atelectasis and cardiomegaly", k=4, mode="hybrid")
    assert [h.report_id for h in hits][:2] == ["apart", "one_side"]
    assert {h.report_id: h.band for h in hits}["heart_only"] != "states"


@pytest.mark.parametrize("engine", candidates.ENGINES)
def test_a_sentence_stating_the_absence_asked_leads_one_stating_the_finding_alone(index, monkeypatch, engine) -> None:
    # Every report but "clear" states cardiomegaly and denies pneumothorax; only "together" says both at once.
    monkeypatch.setenv(candidates.ENV, engine)
    hits = index.search("cardiomegaly without pneumothorax", k=5, mode="hybrid")
    assert hits[0].report_id == "together"
    assert hits[0].sentence.text.startswith("Marked cardiomegaly")
