"""Asked is not stated, another organ's cancer is no lung cancer, lay sizes (issue 35, item 6, queries_v3 dev).

Rules made from the errors of the newcomer's check (the v3 batch's dev half), each for a class of reports:

- a question ("Does this patient have known risk factors for malignancy?") and a condition about the patient
  ("If patient high risk for pulmonary malignancy, consider CT") ask about a finding, they do not state it; Open-i
  masks "risk" ("high XXXX for", "XXXX factors for");
- a generic tumor word named for an organ outside the lungs ("known breast carcinoma") is no lung cancer;
- "prior tuberculous infection" is one finding (tuberculosis, historical): its "infection" is no pneumonia;
- "The heart is large." states cardiomegaly, "The heart is not large." denies it; "masslike opacification" is a mass;
- "nodule, not seen on prior exams" calls the nodule new: it is there (the current study is not named);
- a query's "big" is read as reports write it ("large"), a closing "?" asks for the finding itself, and
  "x-ray" is one word of the imaging, not two finding phrases.

Sentences in the style of Open-i written for these tests; the packaged lexicon and rules, no model.
"""

from __future__ import annotations

import pytest

from radsift.labels import Labeler
from radsift.search.reading import read_query


@pytest.fixture(scope="module")
def labeler() -> Labeler:
    return Labeler()


def stated(labeler, text: str) -> dict[str, str]:
    return {m.finding: m.status for m in labeler.label(text)}


@pytest.mark.parametrize("text, finding", [
    ("Does this patient have known XXXX factors for malignancy?", "lung cancer"),
    ("Does this patient have risk factors for malignancy?", "lung cancer"),
    ("If patient high XXXX for pulmonary malignancy, consider cross-sectional imaging to verify.", "lung cancer"),
    ("If the patient is a smoker, lung cancer should be excluded.", "lung cancer"),
    ("Pneumonia?", "pneumonia"),
    ("Small right pleural effusion?", "pleural effusion"),
    ("Please note that fractures may not be demonstrated on this radiograph.", "fracture"),
])
def test_a_question_or_a_condition_states_nothing(labeler, text, finding) -> None:
    assert stated(labeler, text)[finding] == "uncertain"


@pytest.mark.parametrize("text, finding, status", [
    ("Right lower lobe pneumonia.", "pneumonia", "present"),
    ("No pneumonia?", "pneumonia", "absent"),
    ("Large right pleural effusion.", "pleural effusion", "present"),
    # the condition is about the patient, not every "if": a stated nodule stays stated
    ("If prior films are available, the nodule could be compared.", "nodule", "present"),
])
def test_statements_keep_their_status(labeler, text, finding, status) -> None:
    assert stated(labeler, text)[finding] == status


# A fresh written development set (benchmarks/data/stating_written.tsv, twenty-sixth session) showed kinds the judged
# Open-i set never holds: a clinician's "?" before a finding, a finding that "has not resolved", a cavitary nodule.
@pytest.mark.parametrize("report, finding, status", [
    ("Clinical history: cough and fever, ? pneumonia.", "pneumonia", "uncertain"),
    ("Cardiomegaly, ? pulmonary edema.", "pulmonary edema", "uncertain"),
    ("Cardiomegaly, ? pulmonary edema.", "cardiomegaly", "present"),  # the mark asks the words after it only
    ("? right lower lobe pneumonia. Small effusion.", "pleural effusion", "present"),
    ("The right lower lobe pneumonia has not resolved.", "pneumonia", "present"),
    ("The right pneumothorax has not resolved and measures 2 cm at the apex.", "pneumothorax", "present"),
    ("The consolidation has not completely cleared.", "consolidation", "present"),
    ("The pneumonia has resolved.", "pneumonia", "absent"),
    ("Cavitary nodule in the right upper lobe.", "nodule", "present"),  # the lexicon's phrase_parts
])
def test_a_question_mark_asks_the_words_after_it_and_what_has_not_resolved_is_there(labeler, report, finding,
                                                                                     status) -> None:
    from radsift.records import Report
    from radsift.text import report_sentences

    r = Report("r", {"findings": report})
    got = {m.finding: m.status for s in report_sentences(r, ("findings",)) for m in labeler.label(s.text)}
    assert got[finding] == status


@pytest.mark.parametrize("text", [
    "Redemonstration of right chest wall mass compatible with patient's known breast carcinoma.",
    "History of prostate malignancy.",
    "Patient with thyroid carcinoma.",
    "Known brain tumor.",
    "History of renal cell carcinoma.",
])
def test_another_organs_cancer_is_no_lung_cancer(labeler, text) -> None:
    assert "lung cancer" not in stated(labeler, text)


def test_another_organs_cancer_in_a_query_is_no_lung_cancer(labeler) -> None:
    assert [m.finding for m in labeler.label_query("breast carcinoma")] == []
    assert [m.finding for m in labeler.label_query("lung carcinoma")] == ["lung cancer"]


def test_lung_cancer_is_still_read(labeler) -> None:
    assert stated(labeler, "Right upper lobe mass consistent with bronchogenic carcinoma.")["lung cancer"] == "present"
    assert stated(labeler, "Findings concerning for malignancy.")["lung cancer"] == "uncertain"


def test_a_tuberculous_infection_is_tuberculosis_not_pneumonia(labeler) -> None:
    found = stated(labeler, "Right upper lobe cavity, consistent with prior tuberculous infection.")
    assert found.get("tuberculosis") == "uncertain"  # historical
    assert "pneumonia" not in found
    assert stated(labeler, "Left lower lobe infection.")["pneumonia"] == "present"


@pytest.mark.parametrize("text, status", [
    ("The heart is large.", "present"),
    ("Heart size remains slightly large.", "present"),
    ("The heart XXXX is large, unchanged from prior exam.", "present"),
    ("The heart is not large.", "absent"),
])
def test_a_large_heart_is_cardiomegaly(labeler, text, status) -> None:
    assert stated(labeler, text)["cardiomegaly"] == status


def test_large_elsewhere_is_no_cardiomegaly(labeler) -> None:
    assert stated(labeler, "Normal heart. Large hiatal hernia.") == {"cardiomegaly": "absent", "hiatal hernia": "present"}
    assert "cardiomegaly" not in stated(labeler, "Large left pleural effusion.")
    assert "cardiomegaly" not in stated(labeler, "The heart is obscured by a large hiatal hernia.")


def read(labeler, query: str) -> list[tuple[str, str]]:
    return [(f.finding, f.status) for f in read_query(query, labeler).findings]


def test_query_sizes_questions_and_hyphens(labeler) -> None:
    assert read(labeler, "big heart") == [("cardiomegaly", "present")]
    assert read(labeler, "heart looks big") == [("heart looks large", "present")]  # the linker reads it further
    assert read(labeler, "pneumonia?") == [("pneumonia", "present")]
    assert read(labeler, "no pneumothorax?") == [("pneumothorax", "absent")]
    # "x-ray" is one word of the imaging: the finding phrase is the normal chest, not "x" and "ray"
    assert read(labeler, "normal chest x-ray") == [("normal chest", "present")]
    assert [p.stems for p in labeler.query_phrases("well-defined nodule")] == [("well", "defin", "nodul")]


@pytest.mark.parametrize("text, finding", [
    ("There is a 9 mm right lower lobe pulmonary nodule, not seen on prior exams.", "nodule"),
    ("Left midlung opacity noted, not visualized on prior.", "lung opacity"),
    ("New right pleural effusion, not present on the previous study.", "pleural effusion"),
])
def test_not_seen_on_a_prior_study_is_new_not_absent(labeler, text, finding) -> None:
    assert stated(labeler, text)[finding] == "present"


@pytest.mark.parametrize("text", ["The nodule seen on CT is not seen on this study.", "Pneumothorax is not seen."])
def test_not_seen_now_is_still_absent(labeler, text) -> None:
    assert set(stated(labeler, text).values()) == {"absent"}


def test_masslike_opacification_is_a_mass(labeler) -> None:
    assert stated(labeler, "Masslike opacification of right apex.") == {"mass": "present"}


@pytest.mark.parametrize("text, finding", [
    ("Malignancy cannot be confidently excluded on the available images.", "lung cancer"),
    ("Pneumonia cannot be definitively ruled out.", "pneumonia"),
])
def test_an_adverb_inside_a_hedge_keeps_it_a_hedge(labeler, text, finding) -> None:
    assert stated(labeler, text)[finding] == "uncertain"


def test_a_question_mark_inside_a_sentence_is_no_question(labeler) -> None:
    # "? pneumonia" after the findings (an indication's mark) does not make the findings before it asked; it asks the
    # pneumonia after it (twenty-sixth session: it was read as stated)
    assert stated(labeler, "Cardiomegaly and edema, ? pneumonia.") == {
        "cardiomegaly": "present", "pulmonary edema": "present", "pneumonia": "uncertain"}
    # a user's "?" is no hedge: the query asks for the finding
    reading = read_query("fall on outstretched hand, ? broken collarbone", labeler)
    assert [f.status for f in reading.findings] == ["present", "present"]
    assert [f.status for f in read_query("? pneumonia", labeler).findings] == ["present"]


def test_the_linker_reads_the_users_words() -> None:
    seen = []

    def link(text):
        seen.append(text)
        return None

    read_query("heart looks too big", Labeler(), link=link)
    assert seen == ["heart looks too big"]


@pytest.mark.parametrize("text", [
    "Bone density is decreased.",
    "Small bony density over the lateral aspect of the clavicle.",
])
def test_the_bones_density_is_no_lung_opacity(labeler, text) -> None:
    assert "lung opacity" not in stated(labeler, text)


def test_a_lung_density_is_still_an_opacity(labeler) -> None:
    assert stated(labeler, "Increased density in the right lower lobe.")["lung opacity"] == "present"
    assert "lung opacity" not in [m.finding for m in labeler.label_query("low bone density")]
    assert [m.finding for m in labeler.label_query("density in the left base")] == ["lung opacity"]
