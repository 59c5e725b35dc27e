"""A generic finding word placed outside the chest is no chest finding (issue 35, item 3: stating is not mentioning).

The chest lexicon reads "edema" as pulmonary edema, "effusion" as a pleural effusion, "mass", "nodule" and "fracture"
as the chest's. A clinical note's "2+ pitting edema of both lower extremities", "cerebral edema", "knee effusion",
"left hip fracture", "liver mass" or "thyroid nodule" is none of them, nor is a mass that is no lesion ("body mass
index", "mass effect", "muscle mass") (:data:`radsift.labels.organs.RULES`): on
MTSamples the rule changed 498 of 78,767 distinct sentences, on Open-i 8 of 8,466 (a pelvic and a hip fracture, two
thyroid masses, a breast mass, three joint effusions), each read.
"""

from __future__ import annotations

import pytest

from radsift.labels import Labeler
from radsift.labels import organs


@pytest.fixture(scope="module")
def labeler() -> Labeler:
    return Labeler()


def _found(labeler: Labeler, text: str) -> list[tuple[str, str]]:
    return [(m.finding, m.status) for m in labeler.label(text)]


@pytest.mark.parametrize("text", [
    "There is 2+ pitting edema of both lower extremities.",
    "Bilateral lower extremity edema.",
    "Increased intracranial pressure and cerebral edema.",
    "Left knee effusion.",
    "There is no middle ear effusion.",
    "Fracture of the left hip.",
    "History of a left hip fracture.",
    "CT showed a pancreatic mass.",
    "Mass in the left breast.",
    "Thyroid nodule.",
    "Her body mass index is 32.",
    "There is no mass effect or midline shift.",
    "He has good muscle mass.",
])
def test_a_generic_word_placed_outside_the_chest_is_no_chest_finding(labeler, text):
    assert _found(labeler, text) == []
    # the rule taken out, the chest lexicon reads the word as its own finding
    keep = organs.RULES
    try:
        organs.RULES = keep[:3]
        assert _found(Labeler(), text)
    finally:
        organs.RULES = keep


@pytest.mark.parametrize(("text", "finding"), [
    ("Mild edema.", "pulmonary edema"),
    ("Mild interstitial edema in the lungs.", "pulmonary edema"),
    ("Small left effusion.", "pleural effusion"),
    ("Fracture of the left clavicle.", "fracture"),
    ("Mass in the right upper lobe.", "mass"),
    ("Left upper lobe nodule.", "nodule"),
])
def test_the_chests_own_stay(labeler, text, finding):
    assert (finding, "present") in _found(labeler, text)


def test_a_denied_off_chest_finding_denies_nothing_of_the_chest(labeler):
    # "no joint effusion" said nothing of the pleura: a cohort of reports denying an effusion must not hold it
    assert _found(labeler, "No knee joint effusion.") == []
    assert ("pleural effusion", "absent") in _found(labeler, "No pleural effusion.")


@pytest.mark.parametrize(("text", "placed"), [
    ("calcified thyroid nodule", True),
    ("pedal edema", True),
    ("fracture of the left hip", True),
    ("calcified nodule", False),
    ("fluid around the lungs", False),
    ("a cracked rib", False),
])
def test_a_query_placed_outside_the_chest_links_to_no_chest_concept(text, placed):
    # a query's "thyroid nodule" is dropped as a report's is; its words must not then link to a chest concept
    # ("calcified nodule" -> calcified granuloma)
    from radsift.search.linkwords import off_film

    assert off_film(text) is placed
