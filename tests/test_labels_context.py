"""Stating is not mentioning (issue 35): hedges, histories, indications, differentials and compound findings.

Each category has a test on the packaged rules and an ablation: the same sentence read with the rule
taken out reads ``present`` again, so the test goes red when the rule is removed.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from radsift.errors import LexiconError
from radsift.labels import Labeler
from radsift.labels.lexicon import load_lexicon, parse_lexicon
from radsift.labels.rules import load_rules, parse_rules

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


def without(drop) -> Labeler:
    """A labeler of the packaged lexicon and rules less the cues ``drop(cue)`` picks."""
    rules = load_rules()
    return Labeler(rules=replace(rules, cues=tuple(c for c in rules.cues if not drop(c))))


# -- HYPOTHETICAL: indications, evaluations of a finding, recommendations ----------------------------------
HYPOTHETICAL = [
    ("Evaluation for pneumothorax is limited due to exclusion of the apices.", "pneumothorax", "evaluation for"),
    ("Rule out pneumonia.", "pneumonia", "rule out"),
    ("Recommend chest CT for the nodule.", "nodule", "recommend"),
    ("Please correlate clinically for pneumonia.", "pneumonia", "please correlate clinically for"),
]


@pytest.mark.parametrize(("text", "finding", "cue"), HYPOTHETICAL, ids=[c[2] for c in HYPOTHETICAL])
def test_hypothetical_mentions_are_not_stated(labeler, text, finding, cue) -> None:
    assert read(labeler, text)[finding] == (U, f"HYPOTHETICAL:{cue}")
    assert read(without(lambda c: c.category == "HYPOTHETICAL"), text)[finding][0] == P


# -- HISTORICAL ----------------------------------------------------------------------------------------------
HISTORICAL = [
    ("Stable opacity, compatible with history of right upper lobe mass.", "mass", "history of"),
    ("Scarring from prior pneumonia.", "pneumonia", "prior"),
    ("On a previous outside CT, the right upper lobe was consolidated.", "consolidation", "on a previous"),
]


@pytest.mark.parametrize(("text", "finding", "cue"), HISTORICAL, ids=[c[2] for c in HISTORICAL])
def test_historical_mentions_are_not_stated(labeler, text, finding, cue) -> None:
    assert read(labeler, text)[finding] == (U, f"HISTORICAL:{cue}")
    assert read(without(lambda c: c.category == "HISTORICAL"), text)[finding][0] == P


def test_a_negated_history_is_absent_and_sequelae_are_seen(labeler) -> None:
    assert read(labeler, "The patient denies a history of pneumonia.")["pneumonia"][0] == A
    # "prior granulomatous disease" names the granulomas that are seen, not a past illness
    assert read(labeler, "Calcified nodes, sequela of prior granulomatous disease.")["granuloma"][0] == P


# -- DIFFERENTIAL: findings joined as alternatives -------------------------------------------------------------
DIFFERENTIAL = [
    ("Pleural effusions or pneumothorax.", ["pleural effusion", "pneumothorax"], "or"),
    ("Left basilar atelectasis/scarring.", ["atelectasis", "scarring"], "slash between findings"),
    ("Minimal left basilar airspace disease and/or pleural effusion.", ["airspace disease", "pleural effusion"],
     "and/or"),
    ("Unclear whether this is secondary to cardiomegaly or pericardial effusion.",
     ["cardiomegaly", "pericardial effusion"], "or"),
]


@pytest.mark.parametrize(("text", "findings", "cue"), DIFFERENTIAL, ids=[c[2] + str(i) for i, c in enumerate(DIFFERENTIAL)])
def test_alternatives_are_not_stated(labeler, text, findings, cue) -> None:
    got = read(labeler, text)
    assert [got[f] for f in findings] == [(U, f"DIFFERENTIAL:{cue}")] * len(findings)
    ablated = read(without(lambda c: c.category == "DIFFERENTIAL"), text)
    assert [ablated[f][0] for f in findings] == [P] * len(findings)


def test_what_is_not_a_differential(labeler) -> None:
    # a negation of the list wins, at any distance
    got = read(labeler, "The lungs are clear of focal airspace disease, pneumothorax, or pleural effusion.")
    assert {f: s for f, (s, _) in got.items()} == {"airspace disease": A, "pneumothorax": A, "pleural effusion": A}
    # one finding named twice, or alternatives that are not findings
    assert read(labeler, "Airspace disease compatible with infection/pneumonia.")["pneumonia"][0] == P
    got = read(labeler, "Improved consolidation with mild residual or recurrent pneumonia.")
    assert (got["consolidation"][0], got["pneumonia"][0]) == (P, P)
    # the alternatives after a hedge do not reach back past it
    assert read(labeler, "Left basilar opacity may represent atelectasis or pneumonia.")["lung opacity"][0] == P


def test_a_query_of_alternatives_asks_for_either(labeler) -> None:
    from radsift.search.reading import read_query

    assert [(m.finding, m.status) for m in labeler.label_query("pleural effusion or pneumothorax")] == [
        ("pleural effusion", P), ("pneumothorax", P)]
    reading = read_query("pleural effusion or pneumothorax", labeler)
    assert [(f.finding, f.status) for f in reading.findings] == [("pleural effusion", P), ("pneumothorax", P)]


# -- hedges and masked qualifiers (POSSIBLE_EXISTENCE cues added for issue 35) ----------------------------------
HEDGES = [
    ("However, true pulmonary nodule is a possibility.", "nodule", "is a possibility"),
    ("Pneumonia is in the differential.", "pneumonia", "is in the differential"),
    ("Question small right pleural effusion.", "pleural effusion", "question"),
    ("Suspicion for small bilateral pleural effusions.", "pleural effusion", "suspicion for"),
    ("Considerations would include pericardial effusion.", "pericardial effusion", "considerations would include"),
    ("Right upper lobe opacity XXXX representing pneumonia.", "pneumonia", "masked qualifier before represents"),
    ("Mild bibasilar opacities, XXXX atelectasis.", "atelectasis", "masked qualifier after a comma"),
    ("Bibasilar opacities most XXXX due to atelectasis.", "atelectasis", "masked qualifier (most XXXX)"),
    ("Atelectasis, infiltrates, pulmonary edema difficult to entirely exclude.", "pulmonary edema",
     "difficult to entirely exclude"),
]


@pytest.mark.parametrize(("text", "finding", "cue"), HEDGES, ids=[c[2] for c in HEDGES])
def test_hedges_are_not_stated(labeler, text, finding, cue) -> None:
    assert read(labeler, text)[finding] == (U, f"POSSIBLE_EXISTENCE:{cue}")
    # the cue and its shorter forms ("is a possibility", "a possibility")
    assert read(without(lambda c: c.literal == cue or (" " in c.literal and cue.endswith(c.literal))),
                text)[finding][0] == P


def test_a_clause_that_hedges_is_uncertain(labeler) -> None:
    # "there may be" was a clause end (TERMINATE), which swallowed its own "may"
    got = read(labeler, "There may be some chronic indolent infection associated with some chronic consolidation.")
    assert got["consolidation"] == (U, "POSSIBLE_EXISTENCE:there may be")


def test_a_masked_date_is_not_a_qualifier(labeler) -> None:
    assert read(labeler, "Comparison XXXX, XXXX bilateral calcified granulomas.")["calcified granuloma"][0] == P
    ablated = without(lambda c: c.literal == "masked date (XXXX, XXXX)")
    assert read(ablated, "Comparison XXXX, XXXX bilateral calcified granulomas.")["calcified granuloma"][0] == U


# -- mimics: what the finding is, named (issue 35, batch 3) ------------------------------------------------------
MIMICS = [
    ("Nodular density noted on the recent radiograph XXXX represents an artifact.", "nodule", "represents an artifact"),
    ("Nodular densities over the posterior ribs are consistent with nipple shadows.", "nodule",
     "consistent with nipple shadows"),
    ("The apparent left apical pneumothorax is a skin fold.", "pneumothorax", "is a skin fold"),
]


@pytest.mark.parametrize(("text", "finding", "cue"), MIMICS, ids=[c[2] for c in MIMICS])
def test_a_named_mimic_rules_the_finding_out(labeler, text, finding, cue) -> None:
    assert read(labeler, text)[finding] == (A, f"NEGATED_EXISTENCE:{cue}")
    assert read(without(lambda c: c.literal == cue), text)[finding][0] == P


def test_a_hedged_or_denied_mimic_keeps_the_finding(labeler) -> None:
    # only the definite forms: the density that "may represent" a nipple shadow is still seen (gold set)
    assert read(labeler, "The nodular density may represent a nipple shadow.")["nodule"][0] == P
    text = "There is a small left apical pneumothorax, not due to a skin fold."
    assert read(labeler, text)["pneumothorax"] == (P, "default")
    # without the pseudo-negation, "due to a skin fold" would rule the pneumothorax out
    assert read(without(lambda c: c.literal == "not due to a skin fold"), text)["pneumothorax"][0] == A


# -- clinical denials run through "with" -------------------------------------------------------------------------
SYMPTOMS = """
version: 1
concepts:
  - {name: cough, category: finding}
  - {name: hemoptysis, category: finding}
  - {name: disc herniation, category: finding}
"""


def test_a_clinical_denial_runs_through_with() -> None:
    lexicon = parse_lexicon(SYMPTOMS, "symptoms.yaml")
    text = "Denies difficulty with cough or hemoptysis."
    got = [(m.finding, m.status) for m in Labeler(lexicon).label(text)]
    assert got == [("cough", A), ("hemoptysis", A)]
    rules = load_rules()
    cut = replace(rules, cues=tuple(replace(c, negation_end=True) for c in rules.cues))
    # cut at "with", the denial no longer reaches them (and they read as alternatives of each other)
    assert [(m.finding, m.status) for m in Labeler(lexicon, cut).label(text)] == [("cough", U), ("hemoptysis", U)]


def test_spelling_variants_fold() -> None:
    labeler = Labeler(parse_lexicon(SYMPTOMS, "symptoms.yaml"))
    assert [(m.finding, m.status) for m in labeler.label("No disk herniations.")] == [("disc herniation", A)]
    (phrase,) = labeler.query_phrases("disk herniation")
    (found,) = labeler.read_phrase(phrase, ["Large disc herniation at L4-5."])
    assert [m.status for m in found] == [P]


def test_rule_file_keys_of_the_new_categories() -> None:
    rules = parse_rules("rules:\n  - {category: HISTORICAL, direction: FORWARD, types: [disease], cues: [hx of]}\n",
                        "r.yaml")
    assert (rules.cues[0].category, rules.cues[0].types) == ("HISTORICAL", ("disease",))
    with pytest.raises(LexiconError, match=r"r\.yaml:4: negation_end must be true/false and only on NEGATED"):
        parse_rules("rules:\n  - category: POSSIBLE_EXISTENCE\n    direction: FORWARD\n    negation_end: false\n"
                    "    cues: [maybe]\n", "r.yaml")


# -- compound findings state their parts ------------------------------------------------------------------------
def test_a_compound_finding_states_its_parts(labeler) -> None:
    got = read(labeler, "Large left hydropneumothorax, with complete collapse of the left lung.")
    assert {f: s for f, (s, _) in got.items()} == {"hydropneumothorax": P, "pneumothorax": P, "pleural effusion": P,
                                                  "atelectasis": P}
    got = read(labeler, "No hydropneumothorax.")
    assert {f: s for f, (s, _) in got.items()} == {"hydropneumothorax": A, "pneumothorax": A, "pleural effusion": A}
    assert set(read(labeler, "Moderate right hemopneumothorax.")) == {"hemothorax", "pneumothorax"}
    assert set(read(labeler, "Calcified nodules in the left lung.")) == {"calcified granuloma", "granuloma", "nodule"}
    # pleural scarring is pleural thickening, and scarring still
    assert set(read(labeler, "Bilateral apical pleural scarring.")) == {"pleural thickening", "scarring"}
    # a spine bent forward and sideways states both curves
    assert {f: s for f, (s, _) in read(labeler, "Thoracic kyphoscoliosis.").items()} == {"kyphosis": P, "scoliosis": P}


def test_a_joint_out_of_place_is_a_dislocation(labeler) -> None:
    assert {f: s for f, (s, _) in read(labeler, "Fracture-dislocation of the right shoulder.").items()} == {
        "dislocation": P, "fracture": P}
    assert {f: s for f, (s, _) in read(labeler, "The right acromioclavicular joint is mildly widened.").items()} == {
        "dislocation": P}
    assert {f: s for f, (s, _) in read(labeler, "Right shoulder: Negative for fracture or dislocation.").items()} == {
        "dislocation": A, "fracture": A}


def test_the_normal_curve_lost_is_no_kyphosis(labeler) -> None:
    assert {f: s for f, (s, _) in read(labeler, "Straightening of the normal thoracic kyphosis.").items()} == {
        "kyphosis": A}
    assert {f: s for f, (s, _) in read(labeler, "Exaggeration of the normal thoracic kyphosis.").items()} == {
        "kyphosis": P}


def test_without_parts_the_compound_states_only_itself() -> None:
    from radsift.labels.yamlfile import read_text

    source, text = read_text(None, "chest_xray.yaml", "lexicon")
    assert "    parts: [pneumothorax, pleural effusion]" in text
    lexicon = parse_lexicon(text.replace("    parts: [pneumothorax, pleural effusion]", ""), source)
    assert [m.finding for m in Labeler(lexicon).label("Large hydropneumothorax.")] == ["hydropneumothorax"]


def test_parts_must_name_other_concepts() -> None:
    bad = "concepts:\n  - name: a\n    category: finding\n    parts: [b]\n"
    with pytest.raises(LexiconError, match=r"x\.yaml:4: part 'b' of 'a' is not another concept"):
        parse_lexicon(bad, "x.yaml")
    bad = ("concepts:\n  - {name: b, category: finding}\n  - name: a\n    category: finding\n"
           "    phrase_parts: {c: [b]}\n")
    with pytest.raises(LexiconError, match=r"x\.yaml:5: phrase_parts of 'a': 'c' is not one of its phrases"):
        parse_lexicon(bad, "x.yaml")
    assert load_lexicon()["hydropneumothorax"].parts == ("pneumothorax", "pleural effusion")


# -- a cohort keeps what reports state, not what they mention ------------------------------------------------------
def test_cohort_states_only_what_is_stated(tmp_path) -> None:
    from radsift.index import build_index
    from radsift.models.hashing import HashingEncoder
    from radsift.records import Report
    from radsift.search import Index
    from radsift.search.cohort import collect_cohort

    texts = {
        "hydro": "Large left hydropneumothorax, complete collapse of the left lung.",
        "list": "Pleural effusions or pneumothorax.",
        "eval": "Evaluation for pneumothorax is limited due to exclusion of the apices. Heart size is normal.",
        "ptx": "Small right apical pneumothorax.",
        "none": "No pneumothorax. Lungs are clear.",
    }
    enc = HashingEncoder(tmp_path / "model")
    build_index(tmp_path / "idx", [Report(k, {"findings": v}) for k, v in texts.items()], encoder=enc, progress=False)
    index = Index.open(tmp_path / "idx", encoder=enc)
    cohort = collect_cohort(index, "pneumothorax", mode="bm25", concepts=False)
    assert sorted(r.hit.report_id for r in cohort.rows) == ["hydro", "ptx"]
