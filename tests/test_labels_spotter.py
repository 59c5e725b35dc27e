"""Phrase spotting: longest match over normalized tokens, with character spans."""

from __future__ import annotations

import pytest

from radsift.labels.spotter import Spotter


@pytest.fixture(scope="module")
def spotter() -> Spotter:
    return Spotter()


def spots(spotter: Spotter, text: str) -> list[tuple[str, str, str]]:
    out = []
    for m in spotter.spot(text):
        assert text[m.start : m.end] == m.text  # spans index the sentence
        out.append((m.concept.name, m.kind, m.text))
    return out


def test_longest_match_wins(spotter) -> None:
    assert spots(spotter, "Calcified granuloma in the left upper lobe.") == [
        ("calcified granuloma", "synonym", "Calcified granuloma")
    ]
    assert spots(spotter, "Small granuloma.") == [("granuloma", "synonym", "granuloma")]
    assert spots(spotter, "Subcutaneous emphysema.") == [("subcutaneous emphysema", "synonym", "Subcutaneous emphysema")]


def test_one_mention_for_a_located_finding(spotter) -> None:
    assert spots(spotter, "Right lower lobe pneumonia.") == [("pneumonia", "synonym", "pneumonia")]


def test_case_plural_and_abbreviation(spotter) -> None:
    found = spots(spotter, "Bilateral PLEURAL EFFUSIONS, no PTX, pneumothoraces, bullae and metastases.")
    assert [f for f, _, _ in found] == ["pleural effusion", "pneumothorax", "pneumothorax", "bulla", "metastatic disease"]
    assert spots(spotter, "Opacities")[0][0] == "lung opacity"


def test_hyphens_match_spaced_and_joined_forms(spotter) -> None:
    for text in ("Air-space disease.", "Airspace disease.", "Air space disease."):
        assert [f for f, _, _ in spots(spotter, text)] == ["airspace disease"], text
    assert [f for f, _, _ in spots(spotter, "Plate like atelectasis, platelike atelectasis")] == ["atelectasis"] * 2


def test_spans_are_character_offsets(spotter) -> None:
    text = "No pneumothorax or pleural effusion."
    matches = spotter.spot(text)
    assert [(m.start, m.end) for m in matches] == [(3, 15), (19, 35)]


def test_punctuation_is_a_barrier(spotter) -> None:
    # "pleural, effusion" is not the phrase "pleural effusion" (only "effusion" matches).
    assert [m.text for m in spotter.spot("Pleural, effusion")] == ["effusion"]


def test_gap_phrases_do_not_cross_negation(spotter) -> None:
    assert spots(spotter, "The heart is mildly enlarged.") == [("cardiomegaly", "synonym", "heart is mildly enlarged")]
    # "heart * enlarged" must not read through "not": only the normal subject "heart" is spotted.
    assert spots(spotter, "The heart is not enlarged.") == [("cardiomegaly", "subject", "heart")]


def test_normal_subjects_are_candidates(spotter) -> None:
    found = spots(spotter, "Heart size and pulmonary vascularity are normal.")
    assert found == [("cardiomegaly", "subject", "Heart size"), ("vascular congestion", "subject", "pulmonary vascularity")]


def test_no_finding(spotter) -> None:
    assert spotter.spot("PA and lateral views of the chest.") == []
    assert spotter.spot("") == []
