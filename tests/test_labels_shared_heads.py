"""Normal subjects that share a head ("cardiac and mediastinal contours are within normal limits"): each premodifier
stands for its own subject, so the normal form reads every finding it names absent, and an aorta described as normal
has no aneurysm.

Sentences written for these tests in the style of chest film reports.
"""

from __future__ import annotations

import pytest

from radsift.labels import Labeler
from radsift.labels import spotter as spotter_mod

A = "absent"


@pytest.fixture(scope="module")
def labeler() -> Labeler:
    return Labeler()


def read(labeler: Labeler, text: str) -> dict[str, str]:
    return {m.finding: m.status for m in labeler.label(text)}


@pytest.mark.parametrize("text, findings", [
    ("Cardiac and mediastinal contours are within normal limits.", {"cardiomegaly", "enlarged cardiomediastinum"}),
    ("The cardiac and mediastinal silhouettes are unremarkable.", {"cardiomegaly", "enlarged cardiomediastinum"}),
    ("The hilar and mediastinal contours are normal.", {"hilar enlargement", "enlarged cardiomediastinum"}),
    ("Normal heart size, mediastinal and aortic contours.",
     {"cardiomegaly", "enlarged cardiomediastinum", "aortic aneurysm"}),
    ("Aortic and mediastinal contours are within normal limits.", {"aortic aneurysm", "enlarged cardiomediastinum"}),
])
def test_a_premodifier_sharing_the_head_is_a_subject_of_its_own(labeler, text, findings) -> None:
    assert read(labeler, text) == {f: A for f in findings}


def test_the_shared_subject_is_read_only_with_a_normal_form(labeler) -> None:
    assert read(labeler, "Cardiac and mediastinal contours are enlarged.") == {}  # no normal predicate: no mention
    assert read(labeler, "Stable mediastinal and hilar contours.") == {}  # "stable" says nothing normal
    # a word that names no subject with the head is no subject ("left and mediastinal contours")
    assert read(labeler, "Left and mediastinal contours are within normal limits.") == {"enlarged cardiomediastinum": A}


def test_without_the_shared_heads_the_first_word_is_lost(monkeypatch) -> None:
    # ablation: without the post-pass the premodifier names nothing, as before
    monkeypatch.setattr(spotter_mod.Spotter, "_shared_heads", lambda self, *args: [])
    plain = Labeler()
    assert read(plain, "Cardiac and mediastinal contours are within normal limits.") == {"enlarged cardiomediastinum": A}


def test_an_aorta_described_as_normal_has_no_aneurysm(labeler) -> None:
    for text in ("Aorta normal.", "Thoracic aorta is normal in caliber.", "Heart and aorta are normal."):
        assert read(labeler, text)["aortic aneurysm"] == A, text
    assert read(labeler, "The aorta is tortuous.") == {"aortic tortuosity": "present"}


@pytest.mark.parametrize("text, findings", [
    ("The heart and lungs are normal.", {"cardiomegaly"}),
    ("The heart and pulmonary XXXX are normal.", {"cardiomegaly"}),  # Open-i masks words as XXXX
    ("The heart, lungs and mediastinum are normal.", {"cardiomegaly", "enlarged cardiomediastinum"}),
    ("Normal lungs and heart.", {"cardiomegaly"}),
])
def test_a_structure_listed_beside_a_subject_does_not_hide_it(labeler, text, findings) -> None:
    assert read(labeler, text) == {f: A for f in findings}


def test_a_listed_structure_carries_no_predicate_of_its_own(labeler) -> None:
    assert read(labeler, "The heart is enlarged and the lungs are clear.") == {"cardiomegaly": "present"}
    assert read(labeler, "Heart enlarged, lungs clear.") == {"cardiomegaly": "present"}
    assert read(labeler, "The heart and lungs have not changed.") == {}


def test_a_query_asks_of_each_organ_apart(labeler) -> None:
    # a query's organs are read apart ("heart and lungs are okay": both normal, by the open-vocabulary reader)
    assert labeler.label_query("the heart and lungs are normal") == []


def test_without_the_listed_structures_the_heart_is_lost() -> None:
    # ablation: the packaged rules less their "others" read nothing of the heart
    from dataclasses import replace

    from radsift.labels.rules import load_rules
    rules = load_rules()
    plain = Labeler(rules=replace(rules, normal_forms=replace(rules.normal_forms, others=())))
    assert read(plain, "The heart and lungs are normal.") == {}


@pytest.mark.parametrize("text, expected", [
    ("Heart size upper limits normal.", {"cardiomegaly": A}),
    ("The cardiac silhouette is near upper limits of normal in size.", {"cardiomegaly": A}),
    ("Frontal and lateral views of the chest show normal size and configuration of the cardiac silhouette.",
     {"cardiomegaly": A}),
    ("Normal and stable cardiomediastinal contours.", {"enlarged cardiomediastinum": A}),
    ("Cardiomediastinal silhouette stable and unremarkable.", {"enlarged cardiomediastinum": A}),
    ("The aorta is atherosclerotic.", {"atherosclerotic calcification": "present"}),
    ("Calcific aorta.", {"atherosclerotic calcification": "present"}),
    ("Mild unfolding of the thoracic aorta.", {"aortic tortuosity": "present"}),
    ("The aorta is unfolded.", {"aortic tortuosity": "present"}),
    ("Prominent hilar contours.", {"hilar enlargement": "present"}),
])
def test_the_phrasings_open_i_writes_that_were_read_as_nothing(labeler, text, expected) -> None:
    # each phrasing read nothing before its normal form or synonym was added
    assert read(labeler, text) == expected
