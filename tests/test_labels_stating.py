"""Stating is not mentioning, second pass (issue 35, item 3): general forms of hedges, mimics, evaluations and
histories, and findings inside a gapped lexicon phrase.

Each cue has an ablation: the same sentence read with the cue taken out reads ``present`` again, so the test
goes red when the rule is removed.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from radsift.labels import Labeler, organs
from radsift.labels.lexicon import load_lexicon
from radsift.labels.rules import load_rules

A, P, U = "absent", "present", "uncertain"


@pytest.fixture(scope="module")
def labeler() -> Labeler:
    return Labeler()


def read(labeler: Labeler, text: str) -> dict[str, tuple[str, str]]:
    """finding -> (status, rule) of a sentence (the first mention of each finding)."""
    out: dict[str, tuple[str, str]] = {}
    for m in labeler.label(text):
        out.setdefault(m.finding, (m.status, m.rule))
    return out


def without(*cues: str) -> Labeler:
    """The packaged labeler less ``cues`` (literals or pattern rule names)."""
    rules = load_rules()
    return Labeler(rules=replace(rules, cues=tuple(c for c in rules.cues if c.literal not in cues)))


#: Cues an ablation takes out beside the case's own (the shorter form a moved cue falls back on).
ALSO = {"would be difficult to exclude": ("difficult to exclude",), "is a concern": ("a concern",),
        "to confirm clearing of": ("confirm clearing of",), "now resolved": ("has now resolved",),
        "negative for": ("negative",)}


CASES = [
    # hedges
    ("Left basilar opacity, atelectasis vs. pneumonia.", "pneumonia", U, "POSSIBLE_EXISTENCE", "vs."),
    ("Atelectasis favored over pneumonia.", "pneumonia", U, "POSSIBLE_EXISTENCE", "favored over"),
    ("Atelectasis, less likely consolidation.", "consolidation", U, "POSSIBLE_EXISTENCE", "comma before less likely"),
    ("Less likely pneumonia.", "pneumonia", U, "POSSIBLE_EXISTENCE", "less likely (opening a sentence)"),
    ("Pneumonia remains a possibility.", "pneumonia", U, "POSSIBLE_EXISTENCE", "remains a possibility"),
    ("Early pneumonia is a concern.", "pneumonia", U, "POSSIBLE_EXISTENCE", "is a concern"),
    ("Mild interstitial edema is suggested.", "pulmonary edema", U, "POSSIBLE_EXISTENCE", "is suggested"),
    ("Pneumonia cannot be entirely ruled out.", "pneumonia", U, "POSSIBLE_EXISTENCE", "cannot be entirely ruled out"),
    ("Subtle opacity in the left base, early pneumonia could have this appearance.", "pneumonia", U,
     "POSSIBLE_EXISTENCE", "could have this appearance"),
    ("Trace apical pneumothorax would be difficult to exclude.", "pneumothorax", U, "POSSIBLE_EXISTENCE",
     "would be difficult to exclude"),
    ("A tiny pneumothorax may be present at the apex.", "pneumothorax", U, "POSSIBLE_EXISTENCE", "may be present"),
    ("Tiny pneumothorax or skin fold.", "pneumothorax", U, "POSSIBLE_EXISTENCE", "or skin fold"),
    ("Pneumonia could be considered.", "pneumonia", U, "POSSIBLE_EXISTENCE", "could be considered"),
    # evaluations, indications, recommendations
    ("Assessment for pneumothorax is limited on this supine film.", "pneumothorax", U, "HYPOTHETICAL",
     "assessment for"),
    ("Evaluation of pneumothorax is limited.", "pneumothorax", U, "HYPOTHETICAL", "evaluation of"),
    ("Supine radiograph is insensitive for pneumothorax.", "pneumothorax", U, "HYPOTHETICAL", "insensitive for"),
    ("Chest tube placed for pneumothorax.", "pneumothorax", U, "HYPOTHETICAL", "placed for"),
    ("Followup examination is suggested following treatment to confirm clearing of the opacities.", "lung opacity",
     U, "HYPOTHETICAL", "to confirm clearing of"),
    # histories and comparisons
    ("The prior exam showed a right pneumothorax.", "pneumothorax", U, "HISTORICAL", "prior exam showed"),
    ("Status post resection of a right upper lobe mass.", "mass", U, "HISTORICAL", "resection of"),
    # not seen, cleared, named as a mimic
    ("Apical pneumothorax not clearly identified.", "pneumothorax", A, "NEGATED_EXISTENCE", "not clearly identified"),
    ("The nodule seen on prior CT is not visible radiographically.", "nodule", A, "NEGATED_EXISTENCE", "not visible"),
    ("Pneumothorax not convincingly demonstrated.", "pneumothorax", A, "NEGATED_EXISTENCE",
     "not convincingly demonstrated"),
    ("Pneumothorax: none.", "pneumothorax", A, "NEGATED_EXISTENCE", "colon before none"),
    ("Pneumothorax: negative.", "pneumothorax", A, "NEGATED_EXISTENCE", "colon before negative"),
    # a heading before "negative for" leaves the forward cue its word
    ("Right shoulder: Negative for fracture.", "fracture", A, "NEGATED_EXISTENCE", "negative for"),
    ("Chest: negative for pneumothorax.", "pneumothorax", A, "NEGATED_EXISTENCE", "negative for"),
    ("Interval clearing of the right lower lobe pneumonia.", "pneumonia", A, "NEGATED_EXISTENCE",
     "interval clearing of"),
    ("There has been clearing of the right lower lobe consolidation.", "consolidation", A, "NEGATED_EXISTENCE",
     "there has been clearing of"),
    ("Edema has essentially cleared.", "pulmonary edema", A, "NEGATED_EXISTENCE", "essentially cleared"),
    ("Skin fold simulating a pneumothorax.", "pneumothorax", A, "NEGATED_EXISTENCE", "simulating"),
    ("Skin fold over the right lung, not to be confused with pneumothorax.", "pneumothorax", A, "NEGATED_EXISTENCE",
     "not to be confused with"),
    ("The nodular density represents a bone island.", "nodule", A, "NEGATED_EXISTENCE", "represents a bone island"),
    ("Nodular density at the right base is a vessel seen end-on.", "nodule", A, "NEGATED_EXISTENCE",
     "is a vessel seen end-on"),
    ("Nodular density overlying the anterior left 4th rib represents a healing rib fracture.", "nodule", A,
     "NEGATED_EXISTENCE", "represents a healing"),
    # third pass (issue 35): resolved after "now", conditions, what a film may miss, recommendations, histories
    ("Right pneumothorax, now resolved.", "pneumothorax", A, "NEGATED_EXISTENCE", "now resolved"),
    ("Consistent with pneumonia in the appropriate clinical setting.", "pneumonia", U, "POSSIBLE_EXISTENCE",
     "in the appropriate clinical setting"),
    ("Minimal if any edema.", "pulmonary edema", U, "POSSIBLE_EXISTENCE", "if any"),
    ("Vascular congestion bordering on edema.", "pulmonary edema", U, "POSSIBLE_EXISTENCE", "bordering on"),
    ("A small pneumothorax could be missed on this supine film.", "pneumothorax", U, "HYPOTHETICAL",
     "could be missed"),
    ("Pneumothorax would be difficult to see on this supine film.", "pneumothorax", U, "HYPOTHETICAL",
     "would be difficult to see"),
    ("Follow-up of the nodule in 3 months.", "nodule", U, "HYPOTHETICAL", "follow-up of"),
    ("Pneumothorax was previously seen.", "pneumothorax", U, "HISTORICAL", "was previously seen"),
    ("Recent pneumonia.", "pneumonia", U, "HISTORICAL", "recent"),
    ("Treated pneumonia.", "pneumonia", U, "HISTORICAL", "treated"),
]


@pytest.mark.parametrize(("text", "finding", "status", "category", "cue"), CASES, ids=[c[4] for c in CASES])
def test_a_mention_that_is_not_a_statement(labeler, text, finding, status, category, cue) -> None:
    assert read(labeler, text)[finding] == (status, f"{category}:{cue}")
    assert read(without(cue, *ALSO.get(cue, ())), text)[finding][0] == P


def test_what_stays_stated(labeler) -> None:
    # the cause of a limited evaluation is seen: "evaluation of" reaches 3 tokens only
    assert read(labeler, "Limited evaluation of the thoracic spine secondary to osteopenia.")["osteopenia"][0] == P
    # the favoured finding of "X, less likely Y" and an improving finding stay stated
    assert read(labeler, "Right lower lobe atelectasis, less likely pneumonia.")["atelectasis"][0] == P
    assert read(labeler, "Improved right lower lobe consolidation.")["consolidation"][0] == P
    # "old tuberculosis" is its healed form, seen (gold set)
    assert read(labeler, "Findings consistent with old tuberculosis.")["tuberculosis"][0] == P
    # a mimic named after the finding is not a mimic of it
    assert read(labeler, "Small right apical pneumothorax.")["pneumothorax"][0] == P
    # an improving or resolving finding is still there; "recent" and "treated" reach the next word only
    assert read(labeler, "Improved interstitial edema.")["pulmonary edema"][0] == P
    assert read(labeler, "Resolving pulmonary interstitial edema.")["pulmonary edema"][0] == P
    assert read(labeler, "Recent surgery, right lower lobe pneumonia.")["pneumonia"][0] == P


def test_non_calcified_is_not_calcified(labeler) -> None:
    got = read(labeler, "7mm non calcified nodule in the right upper lobe.")
    assert got["nodule"][0] == P and "calcified granuloma" not in got
    assert "calcified granuloma" in read(labeler, "Calcified nodule in the left upper lobe.")


def test_a_gap_may_open_with_a_comma_between_premodifiers(labeler) -> None:
    got = read(labeler, "Tortuous, calcified thoracic aorta.")
    assert got["aortic tortuosity"][0] == P and got["atherosclerotic calcification"][0] == P
    # not a comma later in the gap: a clause break ("heart stable, hila enlarged" is not cardiomegaly)
    got = read(labeler, "Heart stable, hila enlarged.")
    assert "cardiomegaly" not in got and got["hilar enlargement"][0] == P


def test_findings_inside_a_gapped_phrase_are_read_with_its_status(labeler) -> None:
    got = read(labeler, "Tortuous calcified thoracic aorta.")
    assert got["aortic tortuosity"][0] == P and got["atherosclerotic calcification"][0] == P
    got = read(labeler, "No tortuous, calcified aorta.")
    assert got["aortic tortuosity"][0] == A and got["atherosclerotic calcification"][0] == A
    got = read(labeler, "Lungs are emphysematous and hyperinflated.")
    assert got["hyperinflation"][0] == P and got["emphysema"][0] == P


def test_spinal_fusion_hardware_states_the_fusion(labeler) -> None:
    got = read(labeler, "Thoracic spinal fusion hardware is intact.")
    assert got["orthopedic hardware"][0] == P and got["spinal fusion"][0] == P
    assert "spinal fusion" not in read(labeler, "Left shoulder orthopedic hardware.")
    # ablation: the same lexicon without the phrase parts reads the hardware only
    lexicon = load_lexicon()
    concepts = tuple(replace(c, phrase_parts=()) if c.name == "orthopedic hardware" else c for c in lexicon.concepts)
    plain = Labeler(lexicon=replace(lexicon, concepts=concepts))
    assert "spinal fusion" not in read(plain, "Thoracic spinal fusion hardware is intact.")


def test_edema_outside_the_lungs_is_not_pulmonary_edema(labeler) -> None:
    for text in ("Subcutaneous edema of the chest wall.", "Chest wall edema."):
        got = read(labeler, text)
        assert "pulmonary edema" not in got and got["soft tissue swelling"][0] == P
    # ablation: without those phrases the edema is no soft tissue swelling (and the off-chest rule, which reads a
    # "wall" edema as the body's, is all that keeps it from pulmonary edema: tests/test_labels_off_chest.py)
    lexicon = load_lexicon()
    concepts = tuple(replace(c, synonyms=tuple(s for s in c.synonyms if s not in ("subcutaneous edema", "chest wall edema")))
                     for c in lexicon.concepts)
    plain = Labeler(lexicon=replace(lexicon, concepts=concepts))
    assert "soft tissue swelling" not in read(plain, "Chest wall edema.")
    keep = organs.RULES
    try:
        organs.RULES = keep[:3]  # the rules before the off-chest ones
        assert read(Labeler(lexicon=replace(lexicon, concepts=concepts)), "Chest wall edema.")["pulmonary edema"][0] == P
    finally:
        organs.RULES = keep


def test_a_dialysis_catheter_is_its_own_concept_and_a_central_line(labeler) -> None:
    for text in ("Left-sided hemodialysis catheter with its tip at the right atrium.",
                 "Stable tunneled dialysis catheter.", "Right IJ Permcath in place."):
        got = read(labeler, text)
        assert got["dialysis catheter"][0] == P and got["central venous catheter"][0] == P, text
    assert "dialysis catheter" not in read(labeler, "Right IJ central line tip in the SVC.")
    assert read(labeler, "Male on hemodialysis now with cough.") == {}  # the treatment, not the line
    # ablation: without its parts a dialysis catheter is no central venous catheter
    lexicon = load_lexicon()
    concepts = tuple(replace(c, parts=()) if c.name == "dialysis catheter" else c for c in lexicon.concepts)
    plain = Labeler(lexicon=replace(lexicon, concepts=concepts))
    assert "central venous catheter" not in read(plain, "Stable tunneled dialysis catheter.")
