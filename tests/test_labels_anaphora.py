"""A hedge that reaches back one sentence (issue 35, item 3): "Nodular opacity. This may be calcification."

The sentence before a pointing, hedged mimic reads uncertain when the sentences are read together (the index
build, a hit's mentions); alone, or with the rules file's ``anaphoric_hedges`` taken out, it reads present.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from radsift.errors import LexiconError
from radsift.labels import Labeler
from radsift.labels.rules import AnaphoricHedges, load_rules, parse_rules
from radsift.records import QueryReading, ReadFinding
from radsift.search.mentions import mentions_in

P, U = "present", "uncertain"


@pytest.fixture(scope="module")
def labeler() -> Labeler:
    return Labeler()


def statuses(labeler: Labeler, sentences: list[str], finding: str) -> list[set[str]]:
    return [{m.status for m in ms if m.finding == finding} for ms in labeler.label_sentences(sentences)]


@pytest.mark.parametrize(("first", "second", "finding"), [
    ("1. Vague nodular opacity near the anterior right first rib.", "This may be calcification.", "nodule"),
    ("2. Right upper lobe 6 mm nodular opacity.",
     "This may be artifactual secondary to overlapping vascular structures.", "nodule"),
    ("Vague nodular density in the right upper lobe.", "This could represent healing fracture or superimposed "
     "structures.", "nodule"),
    ("Tiny left apical pneumothorax.", "However, this is likely a skin fold.", "pneumothorax"),
])
def test_a_pointing_hedged_mimic_hedges_the_sentence_before(labeler, first, second, finding) -> None:
    got = labeler.label_sentences([first, second])
    before = [m for m in got[0] if m.finding == finding]
    assert before and all(m.status != P for m in before)
    assert any(m.rule.startswith("ANAPHORIC_HEDGE:") for m in before)
    # read alone, or without the rule, the sentence states it
    assert statuses(labeler, [first], finding)[0] == {P}
    plain = Labeler(rules=replace(load_rules(), anaphoric=AnaphoricHedges()))
    assert statuses(plain, [first, second], finding)[0] == {P}


def test_what_the_next_sentence_does_not_hedge(labeler) -> None:
    # a hedge that names a diagnosis, not a mimic: the opacity is seen, what it is is the question
    assert statuses(labeler, ["Right lower lobe consolidation.", "This may represent pneumonia."],
                    "consolidation")[0] == {P}
    # a mimic without a hedge pointing back, and a pointing sentence without a mimic
    assert statuses(labeler, ["Right upper lobe nodule.", "Overlapping vessels in the left hilum."], "nodule")[0] == {P}
    assert statuses(labeler, ["Right upper lobe nodule.", "This is likely unchanged from the prior study."],
                    "nodule")[0] == {P}
    # the mimic far from the hedge
    assert statuses(labeler, ["Right upper lobe nodule.",
                              "This may be followed up with CT to exclude overlapping structures."], "nodule")[0] == {P}
    # only the sentence right before, of the same section (follows False: a new section)
    got = labeler.label_many(["Right upper lobe nodule.", "This may be calcification."], follows=[False, False])
    assert {m.status for m in got[0] if m.finding == "nodule"} == {P}
    got = labeler.label_sentences(["Right upper lobe nodule.", "No effusion.", "This may be calcification."])
    assert {m.status for m in got[0] if m.finding == "nodule"} == {P}
    # devices are not explained away by a mimic
    got = labeler.label_sentences(["Right IJ central venous catheter.", "It may overlap the soft tissues."])
    assert all(m.status == P for m in got[0])


def test_a_hits_mentions_read_sentences_together(labeler) -> None:
    reading = QueryReading(findings=(ReadFinding("nodule", "present", "lexicon"),))
    text = "Right upper lobe nodular opacity. This may be artifact from overlapping vessels."
    got = mentions_in(labeler, text, reading)
    assert got and {m.status for m in got} == {U}


def test_the_rules_file_section_is_checked() -> None:
    base = "version: 1\nrules:\n  - category: NEGATED_EXISTENCE\n    direction: FORWARD\n    cues: [\"no\"]\n"
    ok = parse_rules(base + "anaphoric_hedges:\n  anaphors: [this]\n  hedges: [may be]\n  mimics: [artifact]\n", "r.yaml")
    assert ok.anaphoric == AnaphoricHedges(("this",), ("may be",), ("artifact",), 3)
    assert parse_rules(base, "r.yaml").anaphoric == AnaphoricHedges()
    with pytest.raises(LexiconError, match=r"r\.yaml:\d+: .*unknown key 'mimic'"):
        parse_rules(base + "anaphoric_hedges:\n  anaphors: [this]\n  hedges: [may]\n  mimic: [x]\n", "r.yaml")
    with pytest.raises(LexiconError, match=r"r\.yaml:\d+: .*lacks required key 'mimics'"):
        parse_rules(base + "anaphoric_hedges:\n  anaphors: [this]\n  hedges: [may]\n", "r.yaml")
    with pytest.raises(LexiconError, match=r"r\.yaml:\d+: anaphoric_hedges.gap"):
        parse_rules(base + "anaphoric_hedges:\n  anaphors: [this]\n  hedges: [may]\n  mimics: [x]\n  gap: -1\n",
                    "r.yaml")


def test_the_index_build_reads_a_sections_sentences_together() -> None:
    from radsift.index.segment_data import label_sentences as _label_sentences
    from radsift.index.format import SentenceRecord

    nodule, hedge = "Right upper lobe nodular opacity.", "This may be calcification."
    rows = [SentenceRecord(0, "impression", 0, 0, 33, nodule), SentenceRecord(0, "impression", 1, 34, 60, hedge),
            # another report, and a hedge in the next section: neither reaches back
            SentenceRecord(1, "findings", 0, 0, 33, nodule), SentenceRecord(1, "impression", 0, 0, 26, hedge),
            SentenceRecord(2, "findings", 0, 0, 33, nodule)]
    got = _label_sentences(rows, None, False)
    assert ("nodule", U) in got[0] and ("nodule", P) not in got[0]
    assert ("nodule", P) in got[2] and ("nodule", P) in got[4]
