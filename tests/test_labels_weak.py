"""Weak labels, the query dictionary and the TREC exports, on hand-made reports."""

from __future__ import annotations

import json

import pytest

from radsift.labels import Labeler
from radsift.labels.weak import (
    Query,
    build_weak_labels,
    normalize_sentence,
    opposite,
    phrasings,
    query_text,
    split_findings,
)
from radsift.records import Report

REPORTS = [
    Report("r1", {"findings": "No pneumothorax or pleural effusion. Heart size is normal.",
                  "impression": "No acute cardiopulmonary abnormality."}),
    Report("r2", {"findings": "Small right pleural effusion. No pneumothorax.",
                  "impression": "Small right pleural effusion."}),
    Report("r3", {"findings": "no pneumothorax or pleural effusion", "impression": "Possible early pneumonia."},
           {"indication": "cough"}),
    Report("r4", {"findings": "The lungs are clear.", "indication": "Moderate cardiomegaly."}),
]


@pytest.fixture(scope="module")
def weak():
    return build_weak_labels(REPORTS, Labeler(), progress=False)


def test_queries_and_phrasings() -> None:
    q = Query("yes", "pleural effusion")
    assert q.qid == "yes:pleural_effusion" and q.text == "pleural effusion"
    assert opposite(q) == Query("no", "pleural effusion") and opposite(opposite(q)) == q
    assert query_text(opposite(q)) == "no pleural effusion"
    yes, no = phrasings(q), phrasings(opposite(q))
    assert yes[0] == "pleural effusion" and "evidence of pleural effusion" in yes
    assert no[0] == "no pleural effusion" and "absence of pleural effusion" in no
    assert query_text(q, 1) == yes[1] and query_text(q, len(yes)) == yes[0]
    with pytest.raises(ValueError):
        Query("maybe", "x")


def test_dedup_by_normalized_text(weak) -> None:
    assert normalize_sentence("  No pneumothorax  or pleural effusion. ") == "no pneumothorax or pleural effusion"
    assert weak.reports == 4
    assert weak.occurrences == 9  # r4's indication section is not labeled
    texts = [s.text for s in weak.sentences]
    assert len(texts) == 7  # the r1/r3 sentence and the r2 repeat are one each
    dup = next(s for s in weak.sentences if s.text == "No pneumothorax or pleural effusion.")
    assert dup.sentence_uids == ["r1::findings::0", "r3::findings::0"]
    assert dup.report_ids == ["r1", "r3"]
    repeat = next(s for s in weak.sentences if s.text == "Small right pleural effusion.")
    assert repeat.sentence_uids == ["r2::findings::0", "r2::impression::0"] and repeat.report_ids == ["r2"]


def test_query_dictionary_and_labels(weak) -> None:
    queries = {q.qid: ids for q, ids in weak.queries.items()}
    assert set(queries) == {
        "no:pneumothorax", "no:pleural_effusion", "no:cardiomegaly",
        "no:acute_cardiopulmonary_abnormality", "yes:pleural_effusion",
    }
    dup = next(s for s in weak.sentences if s.text == "No pneumothorax or pleural effusion.")
    assert dup.id in queries["no:pneumothorax"] and dup.id in queries["no:pleural_effusion"]
    pneumonia = next(s for s in weak.sentences if "pneumonia" in s.text)
    assert pneumonia.labels == frozenset() and pneumonia.uncertain == ["pneumonia"]  # no query for uncertain
    stats = weak.stats()
    assert stats["labeled_entries"] == len(weak.entries()) == 6
    assert (stats["positive_queries"], stats["negative_queries"]) == (1, 4)
    assert stats["per_finding"]["pleural effusion"]["yes"] == 1
    assert stats["per_finding"]["pleural effusion"]["reports_no"] == 2
    assert stats["per_finding"]["pneumonia"]["uncertain"] == 1


def test_qrels_levels(weak) -> None:
    sentence = weak.qrels("sentence")
    report = weak.qrels("report")
    assert sentence["no:pneumothorax"] == ["r1::findings::0", "r2::findings::1", "r3::findings::0"]
    assert report["no:pneumothorax"] == ["r1", "r2", "r3"]
    assert report["yes:pleural_effusion"] == ["r2"]
    with pytest.raises(ValueError):
        weak.qrels("section")


def test_write_exports(weak, tmp_path) -> None:
    paths = weak.write(tmp_path / "labels")
    assert {p.name for p in paths.values()} == {
        "labeled_sentences.jsonl", "queries.tsv", "qrels.sentence.trec", "qrels.report.trec", "stats.json"
    }
    rows = [json.loads(line) for line in paths["labeled_sentences"].read_text().splitlines()]
    assert all(row["mentions"] for row in rows)  # "The lungs are clear." has none and is left out
    first = rows[0]
    assert first["labels"] == ["no:pleural_effusion", "no:pneumothorax"]
    assert first["opposites"] == ["yes:pleural_effusion", "yes:pneumothorax"]
    assert first["mentions"][0]["cue"] == "No"
    queries = dict(line.split("\t") for line in paths["queries"].read_text().splitlines())
    assert queries["no:pneumothorax"] == "no pneumothorax"
    lines = paths["qrels_report"].read_text().splitlines()
    assert "yes:pleural_effusion 0 r2 1" in lines
    assert all(len(line.split()) == 4 for line in lines)
    assert json.loads(paths["stats"].read_text())["unique_sentences"] == 7


def test_exports_read_back_with_the_trec_reader(weak, tmp_path) -> None:
    from radsift.evaluation import trec
    paths = weak.write(tmp_path)
    queries = trec.read_queries(paths["queries"])
    qrels = trec.read_qrels(paths["qrels_sentence"])
    assert set(qrels) <= set(queries)
    assert set(qrels["no:pneumothorax"]) == {"r1::findings::0", "r2::findings::1", "r3::findings::0"}


def test_report_id_with_space_is_refused() -> None:
    from radsift.errors import CorpusError

    with pytest.raises(CorpusError, match="whitespace"):
        build_weak_labels([Report("a b", {"findings": "No pneumothorax."})], progress=False)


def test_split_findings_balances_entries(weak) -> None:
    folds = split_findings(weak, folds=2, seed=0)
    assert len(folds) == 2 and not (folds[0] & folds[1])
    counts = weak.entry_counts()
    assert folds[0] | folds[1] == set(counts)
    totals = sorted(sum(counts[f] for f in fold) for fold in folds)
    assert totals[1] - totals[0] <= max(counts.values())
    assert split_findings(weak, folds=2, seed=0) == folds  # deterministic
    assert len(split_findings(weak, folds=3)) == 3
    with pytest.raises(ValueError):
        split_findings(weak, folds=0)


def test_every_query_phrasing_is_labeled_as_its_query() -> None:
    """The templated phrasings are valid queries: the labeler reads each as exactly its (finding, status), and
    a compound finding its parts too ("hydropneumothorax": pneumothorax and pleural effusion; "feeding tube": a
    nasogastric-route tube, a part of that phrase)."""
    labeler = Labeler()
    wrong = []
    for concept in labeler.lexicon:
        for polarity, status in (("yes", "present"), ("no", "absent")):
            for text in phrasings(Query(polarity, concept.name)):
                got = {(m.finding, m.status) for m in labeler.label(text)}
                parts = concept.parts_of(tuple(concept.name.lower().split()))
                if got != {(name, status) for name in (concept.name, *parts)}:
                    wrong.append((text, got))
    assert not wrong
