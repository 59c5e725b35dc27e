"""What is seen against what it is called (issue 35, item 3): a doubt naming a finding outranks its description.

"Enlarged cardiac silhouette; cardiomegaly versus pericardial effusion" does not state cardiomegaly, and a
report whose findings describe a "nodular opacity" while its impression only says "a true nodule is a
possibility" does not state a nodule. Without the lexicon's ``observations`` both read present.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from radsift.errors import LexiconError
from radsift.index import build_index
from radsift.index.format import SentenceRecord
from radsift.index.segment_data import label_sentences
from radsift.labels import Labeler
from radsift.labels.lexicon import Lexicon, load_lexicon, parse_lexicon
from radsift.models.hashing import HashingEncoder
from radsift.records import Report
from radsift.search import Index
from radsift.search.cohort import collect_cohort

P, U = "present", "uncertain"


@pytest.fixture(scope="module")
def labeler() -> Labeler:
    return Labeler()


@pytest.fixture(scope="module")
def plain() -> Labeler:
    """The packaged lexicon with no observations: the rules of this file are off."""
    lx = load_lexicon()
    return Labeler(lexicon=Lexicon(tuple(replace(c, observations=()) for c in lx), lx.source, lx.name,
                                   lx.categories, lx.normalizer))


def statuses(labeler: Labeler, sentence: str, finding: str) -> set[str]:
    return {m.status for m in labeler.label(sentence) if m.finding == finding}


@pytest.mark.parametrize(("sentence", "finding"), [
    ("Mildly enlarged cardiac silhouette; cardiomegaly versus pericardial effusion.", "cardiomegaly"),
    ("The heart is enlarged, which may represent cardiomegaly or a pericardial effusion.", "cardiomegaly"),
    ("Vague nodular density in the left midlung, which could represent a vessel or a lung nodule.", "nodule"),
    ("Masslike opacity in the right hilum, possibly a mass versus prominent vasculature.", "mass"),
])
def test_a_description_doubted_by_name_in_its_sentence(labeler, plain, sentence, finding) -> None:
    got = [m for m in labeler.label(sentence) if m.finding == finding]
    assert got and all(m.status == U for m in got)
    assert any(m.rule.startswith("OBSERVATION_QUESTIONED:") for m in got)
    assert P in statuses(plain, sentence, finding)  # without the lexicon's observations


def test_what_a_named_doubt_leaves_stated(labeler) -> None:
    # the finding named plainly (not a description) keeps its status beside a doubt
    assert P in statuses(labeler, "Moderate cardiomegaly; pericardial effusion versus fat pad.", "cardiomegaly")
    assert P in statuses(labeler, "9 mm right upper lobe pulmonary nodule and a possible second nodule.", "nodule")
    # findings without observations are never changed: two effusions, one questioned
    assert P in statuses(labeler, "Small left effusion and questionable small right pleural effusion.",
                         "pleural effusion")
    # a description with no doubt by name, or named in a recommendation
    assert statuses(labeler, "The cardiac silhouette is mildly enlarged.", "cardiomegaly") == {P}
    assert P in statuses(labeler, "8 mm nodular opacity, recommend CT for evaluation of this nodule.", "nodule")


FINDINGS = ["There is a 7 mm nodular density in the left lower lobe.", "No pleural effusion."]
IMPRESSION = ["Left lower lobe nodular density.", "A true pulmonary nodule cannot be excluded."]


def read_report(labeler: Labeler, findings: list[str], impression: list[str], finding: str) -> list[set[str]]:
    texts = findings + impression
    follows = [i > 0 for i in range(len(findings))] + [i > 0 for i in range(len(impression))]
    sections = ["findings"] * len(findings) + ["impression"] * len(impression)
    read = labeler.read_reports(labeler.label_many(texts, follows=follows), sections)
    return [{m.status for m in ms if m.finding == finding} for ms in read]


def test_an_impression_that_only_doubts_outranks_a_described_finding(labeler, plain) -> None:
    got = read_report(labeler, FINDINGS, IMPRESSION, "nodule")
    assert got[0] == {U} and P not in set().union(*got)
    rule = [m.rule for m in labeler.read_reports(labeler.label_many(FINDINGS + IMPRESSION),
                                                 ["findings"] * 2 + ["impression"] * 2)[0]
            if m.finding == "nodule"]
    assert rule and rule[0].startswith("IMPRESSION_DOUBT:")
    assert read_report(plain, FINDINGS, IMPRESSION, "nodule")[0] == {P}  # without the observations
    # sentence by sentence (the weak labels' reading), the findings still state it
    assert statuses(labeler, FINDINGS[0], "nodule") == {P}


@pytest.mark.parametrize(("findings", "impression", "finding"), [
    # the impression states it too
    (FINDINGS, ["Left lower lobe nodular density, a pulmonary nodule."], "nodule"),
    # a degree, not a doubt
    (["The heart is mildly enlarged."], ["Borderline cardiomegaly."], "cardiomegaly"),
    # named plainly in the findings
    (["There is a 9 mm pulmonary nodule in the left lower lobe."], ["Possible pulmonary nodule."], "nodule"),
    # the impression says nothing of it
    (FINDINGS, ["No acute cardiopulmonary process."], "nodule"),
    # an evaluation or a recommendation calls it a nodule without doubting it
    (FINDINGS, ["Left lower lobe nodular density.", "Recommend chest CT for evaluation of this nodule."], "nodule"),
])
def test_what_the_impression_leaves_stated(labeler, findings, impression, finding) -> None:
    assert read_report(labeler, findings, impression, finding)[0] == {P}


def test_the_index_and_the_cohort_read_the_report_whole(labeler, tmp_path) -> None:
    rows = [SentenceRecord(0, "findings", i, 0, len(t), t) for i, t in enumerate(FINDINGS)]
    rows += [SentenceRecord(0, "impression", i, 0, len(t), t) for i, t in enumerate(IMPRESSION)]
    rows += [SentenceRecord(1, "findings", 0, 0, len(FINDINGS[0]), FINDINGS[0])]  # another report: stated
    labels = label_sentences(rows, None, False)
    assert ("nodule", U) in labels[0] and ("nodule", P) not in labels[0]
    assert ("nodule", P) in labels[4]
    reports = [Report("doubted", {"findings": " ".join(FINDINGS), "impression": " ".join(IMPRESSION)}),
               Report("stated", {"findings": FINDINGS[0], "impression": "Left lower lobe pulmonary nodule."})]
    enc = HashingEncoder(tmp_path / "model")
    build_index(tmp_path / "idx", reports, encoder=enc, progress=False)
    index = Index.open(tmp_path / "idx", encoder=enc)
    kept = [r.hit.report_id for r in collect_cohort(index, "nodule", include="states", concepts=False).rows]
    assert kept == ["stated"]
    # what a user is shown of a report reads it whole too: no present nodule in the doubted one's sections
    read = index.read("nodule", "aware")
    shown = index.report_mentions("doubted", "nodule")
    assert shown["findings"] and {m.status for m in shown["findings"] if m.finding == "nodule"} == {U}
    assert {m.status for m in index.report_mentions("stated", "nodule")["findings"]} == {P}
    # section by section (a hit's own unit), the findings still describe it plainly
    assert P in {m.status for m in index.mentions_in(reports[0].sections["findings"], read)}
    related = collect_cohort(index, "nodule", include="all", concepts=False).rows
    evidence = {r.hit.report_id: {e.status for e in r.evidence} for r in related}
    assert "doubted" in evidence and P not in evidence["doubted"]


def test_an_observation_must_be_a_phrase_of_its_concept() -> None:
    text = ("concepts:\n  - name: nodule\n    category: finding\n    synonyms: [nodular opacity]\n"
            "    observations: [nodular opacity, mass]\n")
    with pytest.raises(LexiconError, match=r"lex.yaml:5: observation 'mass' of 'nodule' is not one of its phrases"):
        parse_lexicon(text, "lex.yaml")
    lx = parse_lexicon(text.replace(", mass]", "]"), "lex.yaml")
    assert lx["nodule"].observes(lx.normalizer.phrase("nodular opacities"))
    assert not lx["nodule"].observes(lx.normalizer.phrase("nodule"))
