"""A cardiac device named by its parts or its kind (queries_v8-v10 dev: "pacemaker and overinflated lungs",
"pacemaker with low lung volumes" were judged relevant on "cardiac ... generator with leads in the right atrium and
right ventricle"): the generator and a chamber's lead state a pacemaker; a nerve stimulator's generator is its own device; a query for a pacemaker accepts a
defibrillator (it paces too) after the pacemakers named, and a denial stays literal."""

from __future__ import annotations

import pytest

from radsift.labels import Labeler
from radsift.records import Report
from radsift.search import candidates


@pytest.fixture(scope="module")
def labeler() -> Labeler:
    return Labeler()


@pytest.mark.parametrize("text, finding, status", [
    ("Stable left chest wall generator with 2 leads in the right atrium and right ventricle.", "pacemaker", "present"),
    ("Cardiac generator overlies the left chest.", "pacemaker", "present"),
    ("Right ventricular lead in good position.", "pacemaker", "present"),
    ("Interval removal of the cardiac generator.", "pacemaker", "absent"),
    ("Spinal cord stimulator generator in the left flank.", "neurostimulator", "present"),
    ("Vagal nerve stimulator generator in the left chest.", "neurostimulator", "present"),
])
def test_a_device_named_by_its_parts_or_kind(labeler, text, finding, status) -> None:
    assert [(m.finding, m.status) for m in labeler.label(text)] == [(finding, status)]


R = [
    Report("named", {"findings": "Left chest wall pacemaker with leads in the right heart. Lungs clear."}),
    Report("icd", {"findings": "Left subclavian AICD in stable position. Lungs clear."}),
    Report("kind", {"findings": "Cardiac generator overlies the left chest. Lungs clear."}),
    Report("stim", {"findings": "Spinal cord stimulator generator overlies the flank. Lungs clear."}),
    Report("none", {"findings": "Heart size normal. Lungs clear."}),
]


@pytest.fixture(scope="module")
def index(hashing_index_of):
    return hashing_index_of("devices", R)


def test_a_pacemaker_query_reads_the_defibrillator_beside_it(index) -> None:
    assert index.read("pacemaker").findings[0].any_of == ("implantable defibrillator",)
    assert index.read("no pacemaker").findings[0].any_of == ()


@pytest.mark.parametrize("engine", candidates.ENGINES)
def test_a_pacemaker_query_finds_the_device_however_named(index, monkeypatch, engine) -> None:
    monkeypatch.setenv(candidates.ENV, engine)
    hits = index.search("pacemaker", k=5, mode="hybrid")
    states = [h.report_id for h in hits if h.band == "states"]
    assert set(states) == {"named", "icd", "kind"}
    assert states.index("icd") == 2  # the named device first, the defibrillator after them


@pytest.mark.parametrize("text, found", [
    # queries_v10 dev "emphysema with bullae" was judged relevant on "bullous emphysema"
    ("Marked bullous emphysematous changes in the upper lobes.", [("bulla", "present"), ("emphysema", "present")]),
    ("No bullous emphysema.", [("bulla", "absent"), ("emphysema", "absent")]),
])
def test_bullous_emphysema_states_both(labeler, text, found) -> None:
    assert [(m.finding, m.status) for m in labeler.label(text)] == found


@pytest.mark.parametrize("text, status", [
    # queries_v10 dev "bibasilar atelectasis and cardiomegaly": "mild enlargement of the cardiac silhouette"
    ("There is stable, mild enlargement of the cardiac silhouette.", "present"),
    ("No enlargement of the cardiac silhouette.", "absent"),
])
def test_enlargement_of_the_cardiac_silhouette_is_cardiomegaly(labeler, text, status) -> None:
    assert [(m.finding, m.status) for m in labeler.label(text)] == [("cardiomegaly", status)]
