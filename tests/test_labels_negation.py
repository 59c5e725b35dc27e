"""Negation and uncertainty: each form radiology depends on, and the labeler API."""

from __future__ import annotations

import pytest

from radsift.labels import Labeler

A, P, U = "absent", "present", "uncertain"


@pytest.fixture(scope="module")
def labeler() -> Labeler:
    return Labeler()


def labels(labeler: Labeler, text: str) -> list[tuple[str, str]]:
    return [(m.finding, m.status) for m in labeler.label(text)]


CASES = [
    # negation before the finding, lists
    ("No pneumothorax or pleural effusion.", [("pneumothorax", A), ("pleural effusion", A)]),
    ("There is no focal consolidation, pleural effusion, or pneumothorax.",
     [("consolidation", A), ("pleural effusion", A), ("pneumothorax", A)]),
    ("Mild vascular congestion without overt edema.", [("vascular congestion", P), ("pulmonary edema", A)]),
    ("Negative for pneumothorax.", [("pneumothorax", A)]),
    ("The lungs are free of focal airspace disease.", [("airspace disease", A)]),
    ("Lungs are clear of infiltrate.", [("infiltrate", A)]),
    ("No evidence of pneumonia.", [("pneumonia", A)]),
    ("No acute cardiopulmonary abnormality.", [("acute cardiopulmonary abnormality", A)]),
    # clinical notes: history and review of systems
    ("The patient denies a history of tuberculosis.", [("tuberculosis", A)]),
    ("He denied pneumonia, but reports a rib fracture last year.", [("pneumonia", A), ("rib fracture", P)]),
    ("She has never had pneumonia.", [("pneumonia", A)]),
    # "nothing" alone denies what follows it (a lay denial, a dictated one)
    ("Nothing supportive of pneumonia.", [("pneumonia", A)]),
    ("Nothing growing in the lungs, no mass.", [("mass", A)]),
    ("There is nothing like a pneumothorax.", [("pneumothorax", A)]),
    # "and there is" (a clause end) must not swallow the "no" of "there is no"
    ("No fever, and there is no pneumothorax.", [("pneumothorax", A)]),
    # technique words are no negation: "without contrast"
    ("CT without contrast shows a small pleural effusion.", [("pleural effusion", P)]),
    # negation after the finding
    ("The left pleural effusion has resolved.", [("pleural effusion", A)]),
    ("Resolved right pneumothorax.", [("pneumothorax", A)]),
    ("The endotracheal tube has been removed.", [("endotracheal tube", A)]),
    ("Pneumothorax is not seen.", [("pneumothorax", A)]),
    # normal forms
    ("Heart size is normal.", [("cardiomegaly", A)]),
    ("Normal heart size.", [("cardiomegaly", A)]),
    ("The heart is not enlarged.", [("cardiomegaly", A)]),
    ("Heart size and pulmonary vascularity are within normal limits.", [("cardiomegaly", A), ("vascular congestion", A)]),
    ("Heart size is stable.", []),
    ("The heart is enlarged.", [("cardiomegaly", P)]),
    # uncertainty
    ("A small pneumothorax cannot be excluded.", [("pneumothorax", U)]),
    ("Possible right lower lobe pneumonia.", [("pneumonia", U)]),
    ("Basilar opacity may represent atelectasis.", [("lung opacity", P), ("atelectasis", U)]),
    ("Opacity suggestive of pneumonia.", [("lung opacity", P), ("pneumonia", U)]),
    ("No focal opacity suggestive of pneumonia.", [("lung opacity", A), ("pneumonia", A)]),
    # pseudo-negations
    ("No change in the small left pleural effusion.", [("pleural effusion", P)]),
    ("There is no interval change in the right upper lobe nodule.", [("nodule", P)]),
    ("Not only cardiomegaly but also effusions.", [("cardiomegaly", P), ("pleural effusion", P)]),
    # the age is unknown, not whether the finding is there (queries_v12 dev "stomach poking up into the chest and a
    # squashed vertebra": "An age-indeterminate XXXX fracture is present in the lower thoracic vertebra" read uncertain)
    ("Age-indeterminate anterior wedging deformity of lower thoracic vertebra.", [("compression fracture", P)]),
    ("Multiple age-indeterminate left-sided rib fractures.", [("rib fracture", P)]),
    ("Mild age indeterminate anterior wedging at the T11 level.", [("compression fracture", P)]),
    ("Possible age-indeterminate fracture of the right 5th rib.", [("rib fracture", U)]),
    ("Indeterminate opacity in the right lower lobe.", [("lung opacity", U)]),
    # a predicate of the bones' density (queries_v12 dev "fragile bones and a hiatus hernia")
    ("Bone density is decreased.", [("osteopenia", P)]),
    # a pleural cap with "pleural" inside (queries_v12 "apical pleural caps on both sides")
    ("Stable bilateral apical pleural capping.", [("pleural thickening", P)]),
    # scope ends
    ("No effusion, but there is a small pneumothorax.", [("pleural effusion", A), ("pneumothorax", P)]),
    ("No consolidation; however, there is mild atelectasis.", [("consolidation", A), ("atelectasis", P)]),
    ("No pneumothorax; small right pleural effusion.", [("pneumothorax", A), ("pleural effusion", P)]),
    ("No pleural effusion, there is mild pulmonary edema.", [("pleural effusion", A), ("pulmonary edema", P)]),
    ("No effusion, possible atelectasis.", [("pleural effusion", A), ("atelectasis", U)]),
    ("Possible atelectasis, no effusion.", [("atelectasis", U), ("pleural effusion", A)]),
    # negation ends: a new assertion ends a negation's scope but not an uncertainty's
    ("No acute cardiopulmonary abnormality, findings compatible with emphysema.",
     [("acute cardiopulmonary abnormality", A), ("emphysema", P)]),
    ("The heart is not enlarged, this is worrisome for pulmonary hypertension.",
     [("cardiomegaly", A), ("pulmonary hypertension", U)]),
    # a normal predicate's "not" describes its subject and denies nothing after it (queries_v11 dev "heart not
    # enlarged, lungs hyperinflated" read the hyperinflation absent); a cue of its own still does
    ("The heart is not enlarged, the lungs are hyperinflated.", [("cardiomegaly", A), ("hyperinflation", P)]),
    ("Heart not enlarged, lungs hyperinflated.", [("cardiomegaly", A), ("hyperinflation", P)]),
    ("The heart is not enlarged, no pleural effusion.", [("cardiomegaly", A), ("pleural effusion", A)]),
    # what a finding is denied after is done, not denied (queries_v9 "no pleural effusion after bypass surgery")
    ("No pleural effusion after bypass surgery.", [("pleural effusion", A), ("CABG", P)]),
    ("No pneumothorax following sternotomy.", [("pneumothorax", A), ("sternotomy wires", P)]),
    ("Not an infiltrate and represents scarring.", [("infiltrate", A), ("scarring", P)]),
    ("Removal of the chest tube with increased atelectasis.", [("chest tube", A), ("atelectasis", P)]),
    ("Emphysema with resolved pneumothorax.", [("emphysema", P), ("pneumothorax", A)]),
    ("Basilar opacity may be compatible with atelectasis.", [("lung opacity", P), ("atelectasis", U)]),
    ("Nodule that likely represents a granuloma.", [("nodule", P), ("granuloma", U)]),
    ("No pneumothorax or pleural effusion with a chest tube in place.",
     [("pneumothorax", A), ("pleural effusion", A), ("chest tube", P)]),
    # resolution with an adverb, before or after the finding
    ("Nearly resolved left basilar atelectasis.", [("atelectasis", A)]),
    ("The pneumothorax has almost completely resolved.", [("pneumothorax", A)]),
    # a finding phrase that contains a cue word is not a cue
    ("Free air under the diaphragm.", [("pneumoperitoneum", P)]),
    # hedged negatives read uncertain; "not suspected" denies
    ("Pneumonia not likely.", [("pneumonia", U)]),
    ("Pneumonia is unlikely.", [("pneumonia", U)]),
    ("Pneumonia is not suspected.", [("pneumonia", A)]),
]


# One test per decision rule of negation._decide, each with the sentence that breaks when the rule
# is reversed (the case list above holds many sentences that several rules agree on).
def _one(labeler: Labeler, text: str, finding: str):
    (mention,) = [m for m in labeler.label(text) if m.finding == finding]
    return mention.status, mention.cue


def test_rule_no_cue_reads_present(labeler: Labeler) -> None:
    assert _one(labeler, "Small right pneumothorax.", "pneumothorax") == (P, None)


def test_rule_nearest_cue_wins(labeler: Labeler) -> None:
    # "atelectasis" lies in the scope of "No" (3 tokens away) and of "possible" (adjacent).
    assert _one(labeler, "No effusion, possible atelectasis.", "atelectasis") == (U, "possible")
    # "effusion" lies in the scope of "Possible" (backward it does not reach) and "no" (adjacent).
    assert _one(labeler, "Possible atelectasis, no effusion.", "pleural effusion") == (A, "no")


def test_rule_negation_beats_uncertainty_at_equal_distance(labeler: Labeler) -> None:
    # "No" (just before) and "is suspected" (just after) are both adjacent to the finding.
    assert _one(labeler, "No pneumothorax is suspected.", "pneumothorax") == (A, "No")


def test_rule_negation_before_an_evidential_cue_denies(labeler: Labeler) -> None:
    # "suggestive of" is nearer, but the negation ahead of it rules the finding out.
    assert _one(labeler, "No focal opacity suggestive of pneumonia.", "pneumonia") == (A, "No")
    assert _one(labeler, "Opacity suggestive of pneumonia.", "pneumonia") == (U, "suggestive of")


def test_rule_negation_right_before_any_uncertainty_cue_denies(labeler: Labeler) -> None:
    assert _one(labeler, "No evidence of possible pneumonia.", "pneumonia") == (A, "No evidence of")
    assert _one(labeler, "No suspected pneumothorax.", "pneumothorax") == (A, "No")
    # words between the two cues: the uncertainty stands (see test_rule_nearest_cue_wins)
    assert _one(labeler, "No effusion, possible atelectasis.", "atelectasis")[0] == U


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[c[0][:40] for c in CASES])
def test_negation_forms(labeler: Labeler, text: str, expected) -> None:
    assert labels(labeler, text) == expected


def test_cue_and_rule_are_recorded(labeler: Labeler) -> None:
    effusion, ptx = labeler.label("No effusion, but a small right pneumothorax.")
    assert (effusion.start, effusion.end, effusion.text) == (3, 11, "effusion")
    assert (effusion.cue, effusion.rule) == ("No", "NEGATED_EXISTENCE:no")
    assert (ptx.status, ptx.cue, ptx.rule) == ("present", None, "default")
    (heart,) = labeler.label("The heart size is within normal limits.")
    assert (heart.text, heart.cue, heart.rule) == ("heart size", "within normal limits", "normal-form")
    (ptx,) = labeler.label("Small pneumothorax cannot be excluded.")
    assert (ptx.cue, ptx.rule) == ("cannot be excluded", "POSSIBLE_EXISTENCE:cannot be excluded")


def test_label_many_matches_label_and_reuses_duplicates(labeler: Labeler) -> None:
    texts = ["No pneumothorax.", "Heart size is normal.", "No pneumothorax.", "The lungs are clear.", ""]
    many = labeler.label_many(texts, batch_size=2)
    assert many == [labeler.label(t) for t in texts]
    assert many[0] == many[2] and many[0] is not many[2]  # callers may mutate their lists
    assert many[3] == [] and many[4] == []


def test_user_rules_file(tmp_path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        "rules:\n"
        "  - category: NEGATED_EXISTENCE\n"
        "    direction: BACKWARD\n"
        "    cues: [is excluded]\n",
        encoding="utf-8",
    )
    custom = Labeler(rules=rules)
    assert labels(custom, "Pneumothorax is excluded.") == [("pneumothorax", A)]
    assert labels(custom, "No pneumothorax.") == [("pneumothorax", P)]  # "no" is not a cue in this file


def test_a_negation_end_of_time_stays_a_word_of_the_linked_text() -> None:
    # "after" ends a denial, but a description linked without it drifted ("partly closed surgery" -> lung resection)
    labeler = Labeler()
    text, status, _ = labeler.query_finding_text("the bottom of my lung stays partly closed after surgery")
    assert "after surgery" in text and status == "present"
    text, status, cue = labeler.query_finding_text("no fluid after surgery")
    assert text == "fluid after surgery" and status == "absent" and cue == "no"
