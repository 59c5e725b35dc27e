"""Negation-aware search by the query's reading: each rule on sentences written for this test.

The hashing encoder (no model) keeps these fast; the rules under test act on the ranking, so
what the dense scores are does not matter as long as the reading orders the tiers.
"""

from __future__ import annotations

import pytest

from radsift.errors import ConfigError
from radsift.records import Report

R = [
    Report("border", {"findings": "Borderline cardiomegaly. Lungs are clear."}),
    Report("normal", {"findings": "Heart size is normal. No focal consolidation."}),
    Report("big", {"findings": "Marked cardiomegaly with pulmonary edema. Bilateral pleural effusions."}),
    Report("big-dry", {"findings": "Cardiomegaly with pulmonary edema. No pleural effusions."}),
    Report("big-only", {"findings": "Cardiomegaly. The lungs are otherwise clear."}),
    Report("pna", {"findings": "Right lower lobe pneumonia."}),
    Report("pna-maybe", {"findings": "Possible left lower lobe pneumonia."}),
    Report("pna-no", {"findings": "No pneumonia."}),
    Report("ptx-right", {"findings": "Small right pneumothorax."}),
    Report("ptx-left", {"findings": "Small left pneumothorax."}),
    Report("ptx-no", {"findings": "No pneumothorax."}),
    Report("ich-no", {"findings": "No evidence of intracranial hemorrhage or mass effect."}),
    Report("ich", {"findings": "Acute intracranial hemorrhage in the left frontal lobe."}),
    Report("ich-maybe", {"findings": "Questionable small intracranial hemorrhage."}),
    Report("stone-no", {"findings": "The kidneys show no stone formation."}),
    Report("stone", {"findings": "A 4 mm stone in the lower pole of the right kidney."}),
]


@pytest.fixture(scope="module")
def index(hashing_index_of):
    return hashing_index_of("reading", R)


def ids(hits):
    return [h.report_id for h in hits]


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid", "hybrid-rrf"])
def test_the_query_reading_ranks_first_and_normal_organ_statements_state_absent(index, mode):
    hits = index.search("no cardiomegaly", k=3, mode=mode)
    assert ids(hits)[0] == "normal"  # "Heart size is normal." states the absent reading
    hits = index.search("cardiomegaly", k=20, mode=mode)
    order = ids(hits)
    assert set(order[:3]) == {"big", "big-dry", "big-only"}
    assert order.index("border") > 2
    assert order[-1] == "normal" or (mode == "bm25" and "normal" not in order)  # BM25: no shared term


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_uncertain_query_puts_uncertain_then_present_and_absent_last(index, mode):
    order = ids(index.search("possible pneumonia", k=20, mode=mode))
    assert order[:2] == ["pna-maybe", "pna"]
    assert order[-1] == "pna-no"


def test_several_findings_judge_the_whole_report(index):
    order = ids(index.search("cardiomegaly with pulmonary edema and bilateral effusions", k=20, mode="hybrid"))
    assert order[0] == "big"  # states all three (and the side)
    assert order.index("big-only") < order.index("big-dry")  # states some, denies none
    assert order.index("big-dry") > order.index("border")  # denies the effusions: below all that deny none


def test_side_words_prefer_the_same_side(index):
    order = ids(index.search("small left pneumothorax", k=20, mode="hybrid"))
    assert order[:2] == ["ptx-left", "ptx-right"]
    assert order[-1] == "ptx-no"
    reading = index.read("small left pneumothorax")
    assert reading.side == "left" and reading.findings[0].side == "left"


@pytest.mark.parametrize("query, first, last", [
    ("intracranial hemorrhage", "ich", "ich-no"),
    ("no intracranial hemorrhage", "ich-no", "ich"),
    ("kidney stone", "stone", "stone-no"),
    ("no kidney stone", "stone-no", "stone"),
])
def test_open_vocabulary_findings_outside_the_lexicon(index, query, first, last):
    hits = index.search(query, k=50, mode="hybrid", level="sentence")
    order = ids(hits)
    assert order[0] == first
    assert order.index(last) > order.index(first)
    mentioned = [h for h in hits if h.reading]
    assert mentioned[-1].report_id == last  # the opposite reading is the last unit that mentions it
    (f,) = hits.reading.findings
    assert f.source == "open"
    plain = index.search(query, k=50, mode="hybrid", level="sentence", negation="ignore")
    assert ids(plain) != order or first == ids(plain)[0]


def test_hits_carry_the_status_and_cue_of_the_query_findings(index):
    hits = index.search("no intracranial hemorrhage", k=1, mode="hybrid", level="sentence")
    (m,) = hits[0].reading
    assert (m.finding, m.status, m.cue, m.source) == ("intracranial hemorrhage", "absent", "No evidence of", "open")
    assert hits[0].sentence.text[m.start:m.end] == "hemorrhage"
    hits = index.search("pneumothorax", k=1, mode="hybrid")
    assert [(m.finding, m.status) for m in hits[0].reading] == [("pneumothorax", "present")]
    d = hits[0].to_dict()
    assert d["reading"][0]["status"] == "present"


def test_report_mentions_mark_every_mention_with_its_status(index):
    marks = index.report_mentions("big-dry", "cardiomegaly with pleural effusion")
    got = [(m.finding, m.status) for m in marks["findings"]]
    assert got == [("cardiomegaly", "present"), ("pleural effusion", "absent")]


def test_the_reading_can_be_flipped_or_ignored(index):
    flipped = ids(index.search("pneumonia", k=20, mode="hybrid", reading={"pneumonia": "absent"}))
    assert flipped[0] == "pna-no"
    ignored = index.search("pneumonia", k=20, mode="hybrid", reading=["pneumonia=ignore"])
    assert not ignored.reading.findings
    with pytest.raises(ConfigError, match="not read to name 'effusion'; it names: pneumonia"):
        index.search("pneumonia", reading={"effusion": "absent"})
    with pytest.raises(ConfigError, match="must be one of present, absent, uncertain, ignore"):
        index.search("pneumonia", reading={"pneumonia": "maybe"})


@pytest.mark.parametrize("query", ["no", "left", "possible", " and ".join(f"x{i}" for i in range(100)),
                                   ", ".join(["pneumothorax", "pleural effusion", "cardiomegaly", "atelectasis",
                                              "pneumonia", "nodule", "consolidation", "pulmonary edema",
                                              "emphysema", "scarring", "fracture", "granuloma"])])
def test_bad_queries_give_a_clear_result(index, query):
    hits = index.search(query, k=5, mode="hybrid")
    assert len(hits) <= 5
    reading = hits.reading
    assert len(reading.findings) <= 10
    if query.startswith("x0"):
        assert "read the first 10" in reading.note
    if query == "no":
        assert not reading.findings and "no finding" in reading.note
    if query == "left":
        assert reading.side == "left" and not reading.findings


def test_tier_gap_turns_the_strict_tiers_into_boosts(index):
    strict = ids(index.search("no pneumothorax", k=20, mode="dense"))
    plain = ids(index.search("no pneumothorax", k=20, mode="dense", negation="ignore"))
    assert strict[0] == "ptx-no" and strict != plain
    try:
        index.tier_gap = 0.0  # a boost of nothing: the similarity order comes back
        assert ids(index.search("no pneumothorax", k=20, mode="dense")) == plain
    finally:
        index.tier_gap = None


@pytest.mark.parametrize("query, words", [
    ("tortuous aorta, otherwise normal", "tortuous aorta, no acute disease"),
    ("old scarring but nothing acute", "old scarring but no acute disease"),
    ("granuloma and otherwise unremarkable", "granuloma and no acute disease"),
    ("lungs are otherwise clear", "lungs are otherwise clear"),
])
def test_otherwise_normal_is_nothing_else_of_note_not_the_word_normal(query, words):
    from radsift.search.reading import lay_normals

    assert " ".join(lay_normals(query).split()) == words


def test_otherwise_clear_stays_the_lungs_clear():
    from radsift.search.reading import lay_normals

    assert lay_normals("low lung volumes, otherwise clear") == "low lung volumes, otherwise clear"
