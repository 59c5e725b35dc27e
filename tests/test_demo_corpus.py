"""Tests for the bundled demo corpus generator (radsift.demo).

The ground-truth checks use their own hand-written patterns (not the generator's
vocabulary), so a template that says something its truth does not claim is caught.
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter

import pytest

from radsift.demo import (
    CSV_COLUMNS,
    FINDINGS,
    QUERY_RULES,
    DemoFiles,
    generate_reports,
    load_example_queries,
    write_demo_corpus,
)
from radsift.demo.queries import parse_queries
from radsift.errors import ConfigError, CorpusError
from radsift.records import Report

N = 2000


@pytest.fixture(scope="module")
def corpus():
    return generate_reports(N, seed=7)


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> DemoFiles:
    return write_demo_corpus(tmp_path_factory.mktemp("demo"), n=N, seed=7)


# ---------------------------------------------------------------------------------------------
# Reproducibility and shape
# ---------------------------------------------------------------------------------------------


def _dump(reports) -> str:
    return "\n".join(json.dumps([r.report.to_dict(), r.truth_dict()], sort_keys=True) for r in reports)


def test_same_seed_same_output_and_prefix_stable(corpus):
    again = generate_reports(N, seed=7)
    assert _dump(again) == _dump(corpus)
    # Each report has its own stream: a smaller corpus is a prefix of a larger one.
    assert _dump(generate_reports(50, seed=7)) == _dump(corpus[:50])


def test_different_seeds_differ(corpus):
    other = generate_reports(200, seed=8)
    same = sum(a.report.to_dict() == b.report.to_dict() for a, b in zip(corpus[:200], other))
    assert same < 40  # a few identical normal boilerplate reports are expected, most differ


def test_written_files_are_byte_identical(tmp_path, written):
    again = write_demo_corpus(tmp_path / "again", n=N, seed=7)
    for a, b in zip(written.paths, again.paths):
        assert a.read_bytes() == b.read_bytes(), a.name
    other = write_demo_corpus(tmp_path / "other", n=N, seed=8)
    assert other.reports_csv.read_bytes() != written.reports_csv.read_bytes()


def test_size_ids_and_metadata(corpus):
    assert len(corpus) == N
    ids = [r.id for r in corpus]
    assert ids[0] == "demo-00001" and ids[-1] == f"demo-{N:05d}"
    assert len(set(ids)) == N
    for r in corpus:
        assert isinstance(r.report, Report)
        assert set(r.report.sections) >= {"findings", "impression"}
        assert set(r.report.sections) <= {"indication", "comparison", "findings", "impression"}
        assert r.report.sections["findings"].strip() and r.report.sections["impression"].strip()
        md = r.report.metadata
        assert md["exam"] in {"XR CHEST PA AND LATERAL", "XR CHEST PORTABLE AP", "XR CHEST 1 VIEW"}
        assert md["sex"] in {"F", "M"}
        assert md["age_group"] in {"18-39", "40-64", "65+"}
        assert md["site"] in {"north", "south"}
    extra = sum("indication" in r.report.sections or "comparison" in r.report.sections for r in corpus)
    assert 0.04 * N < extra < 0.2 * N
    for field in ("exam", "sex", "age_group", "site"):
        assert len({r.report.metadata[field] for r in corpus}) > 1


def test_negative_n_rejected():
    with pytest.raises(ConfigError):
        generate_reports(-1)
    assert generate_reports(0) == []


def test_proportion_of_normal_studies(corpus):
    normal = sum(r.is_normal for r in corpus) / N
    assert 0.28 <= normal <= 0.42, normal
    for r in corpus:
        present = sum(1 for _, s, _ in r.truth if s == "present")
        if r.is_normal:
            assert present == 0
        else:
            assert 1 <= present <= 4, (r.id, r.truth)


def test_truth_uses_known_findings_and_one_status_each(corpus):
    for r in corpus:
        statuses: dict[str, set[str]] = {}
        for finding, status, location in r.truth:
            assert finding in FINDINGS
            assert status in {"present", "absent", "uncertain"}
            assert location is None or isinstance(location, str)
            statuses.setdefault(finding, set()).add(status)
        # A report never contradicts itself ("small effusion" and "no effusion").
        assert all(len(s) == 1 for s in statuses.values()), (r.id, r.truth)


def test_variety(corpus):
    counts = Counter(f for r in corpus for f, s, _ in r.truth if s == "present")
    assert len(counts) >= 25  # nearly every finding of the catalogue occurs
    assert sum(1 for r in corpus for _, s, _ in r.truth if s == "uncertain") > 100
    text = " ".join(r.report.text() for r in corpus)
    needles = ("XXXX", " cm", " mm", "1. ", "2. ", "PTX", "cannot be excluded", "may represent", "No change in the")
    for needle in needles:
        assert needle in text, needle
    assert re.search(r"\d\.\d cm", text)  # decimals
    assert re.search(r"[a-z]\.[A-Z]", text)  # sometimes no space after a period
    assert any(r.report.sections["findings"].isupper() for r in corpus)


def test_identical_boilerplate_impressions(corpus):
    counts = Counter(r.report.sections["impression"] for r in corpus)
    top, freq = counts.most_common(1)[0]
    assert freq >= 50, top
    assert sum(c for c in counts.values() if c > 1) >= N // 4


# ---------------------------------------------------------------------------------------------
# Ground truth against the text, with independent patterns
# ---------------------------------------------------------------------------------------------

MENTION = {
    "pneumothorax": r"pneumothora|\bptx\b",
    "pleural effusion": r"effusion",
    "consolidation": r"consolidat|air ?space disease|infiltrat",
    "pneumonia": r"pneumonia",
    "atelectasis": r"atelecta",
    "lung opacity": r"(?<!interstitial )opacit",
    "cardiomegaly": r"cardiomegaly|\bheart\b|cardiac (?:size|silhouette|enlargement)",
    "pulmonary edema": r"edema",
    "vascular congestion": r"congest",
    "emphysema": r"emphysem|hyperinflat|hyperexpan|\bcopd\b",
    "nodule": r"nodul",
    "mass": r"\bmass(?:es)?\b",
    "granuloma": r"granulom",
    "interstitial opacity": r"interstitial (?:opacit|marking)",
    "scarring": r"\bscar",
    "rib fracture": r"fractur",
    "scoliosis": r"scolio",
    "degenerative change": r"degenerat|spondylo|osteophyt",
    "hiatal hernia": r"hiatal hernia",
    "aortic tortuosity": r"tortu",
    "atherosclerotic calcification": r"calcifi\w*(?:\s+\w+){0,2}\s+aort|aort\w*(?:\s+\w+){0,2}\s+calcif|atheroscler",
    "sternotomy wires": r"sternotomy",
    "surgical clips": r"\bclips?\b",
    "central venous catheter": r"central venous|\bpicc\b|central line|catheter",
    "pacemaker": r"pacemaker|\bpacer\b|\baicd\b",
    "endotracheal tube": r"endotracheal|\bet tube\b",
    "nasogastric tube": r"nasogastric|\bng tube\b|enteric tube",
}
NEGATION_BEFORE = re.compile(
    r"\b(?:no|not|without|negative for|free of|resolution of|previously (?:seen|noted))\b|\bnormal\b", re.I
)
NEGATION_AFTER = re.compile(
    r"\b(?:is not (?:seen|identified)|not enlarged|normal|within normal limits|has resolved)\b", re.I
)
UNCERTAIN_CUE = re.compile(
    r"\b(?:may|possible|possibly|probable|probably|likely|cannot be excluded|not excluded|questionable|"
    r"concerning for|suspicious for|versus|could|borderline)\b",
    re.I,
)
PSEUDO_NEGATION = re.compile(r"\bno (?:significant |interval )?change in\b", re.I)
SENTENCE_SPLIT = re.compile(r"(?<=[.;])(?!\d)\s*|\n")
LOCATION_WORDS = {
    "right": r"right",
    "left": r"left",
    "bilateral": r"bilateral|bibasilar|biapical|both|apices|bases",
    "lower lobe": r"lower lobe",
    "upper lobe": r"upper lobe",
    "middle lobe": r"middle lobe",
    "lingula": r"lingul",
    "basilar": r"basilar|\bbases?\b",
    "apical": r"apical|\bap(?:ex|ices)\b",
    "retrocardiac": r"retrocardiac",
    "midlung": r"midlung",
    "hilar": r"hil(?:ar|um)",
}


def _sentences(report) -> list[str]:
    return [s for text in report.sections.values() for s in SENTENCE_SPLIT.split(text) if s.strip()]


def _mentions(report, finding: str):
    pattern = re.compile(MENTION[finding], re.I)
    for sentence in _sentences(report):
        for m in pattern.finditer(sentence):
            yield sentence, m


def _negated(sentence: str, m: re.Match) -> bool:
    return bool(NEGATION_BEFORE.search(sentence[: m.start()]) or NEGATION_AFTER.search(sentence[m.end() :]))


def _plainly_affirmed(sentence: str, m: re.Match) -> bool:
    before = PSEUDO_NEGATION.sub(" ", sentence[: m.start()])
    return not NEGATION_BEFORE.search(before) and not UNCERTAIN_CUE.search(before)


def test_patterns_cover_the_catalogue():
    assert set(MENTION) == set(FINDINGS)


def test_every_truth_item_is_stated_as_claimed(corpus):
    for r in corpus:
        for finding, status, _ in r.truth:
            mentions = list(_mentions(r.report, finding))
            assert mentions, (r.id, finding, r.report.text())
            if status == "present":
                assert any(_plainly_affirmed(s, m) for s, m in mentions), (r.id, finding, r.report.text())
                assert not any(UNCERTAIN_CUE.search(s[: m.start()]) for s, m in mentions), (r.id, finding)
            elif status == "absent":
                # Absent findings appear after a negation cue (or before a post-negation one), always.
                assert all(_negated(s, m) for s, m in mentions), (r.id, finding, r.report.text())
            else:
                assert all(UNCERTAIN_CUE.search(s) for s, m in mentions), (r.id, finding, r.report.text())


def test_every_mention_is_in_the_truth(corpus):
    for r in corpus:
        named = {f for f, _, _ in r.truth}
        for finding in MENTION:
            if finding not in named:
                hit = next(_mentions(r.report, finding), None)
                assert hit is None, (r.id, finding, hit and hit[0])


def test_present_findings_are_not_negated_anywhere(corpus):
    for r in corpus:
        for finding, status, _ in r.truth:
            if status != "present":
                continue
            for sentence, m in _mentions(r.report, finding):
                before = PSEUDO_NEGATION.sub(" ", sentence[: m.start()])
                assert not NEGATION_BEFORE.search(before), (r.id, finding, sentence)


def test_locations_are_written(corpus):
    located = 0
    for r in corpus:
        text = r.report.text()
        for finding, _, location in r.truth:
            if location is None:
                continue
            located += 1
            for word, pattern in LOCATION_WORDS.items():
                if word in location:
                    assert re.search(pattern, text, re.I), (r.id, finding, location, text)
    assert located > 500


def test_impression_is_consistent_with_findings(corpus):
    normal_impressions = 0
    for r in corpus:
        impression = r.report.sections["impression"]
        if r.is_normal:
            assert re.search(r"\bno\b|negative|normal", impression, re.I), (r.id, impression)
            normal_impressions += 1
            continue
        # Acute findings (pleura, airspace, edema) always reach the impression.
        for finding, status, _ in r.truth:
            if status == "present" and finding in {"pneumothorax", "pleural effusion", "pulmonary edema", "mass"}:
                assert re.search(MENTION[finding], impression, re.I), (r.id, finding, impression)
        assert not re.search(r"normal chest|negative chest", impression, re.I), (r.id, impression)
    assert normal_impressions > 0


# ---------------------------------------------------------------------------------------------
# Queries and qrels
# ---------------------------------------------------------------------------------------------


def test_example_queries_load():
    queries = load_example_queries()
    assert 18 <= len(queries) <= 30
    texts = {q for _, q in queries}
    expected = (
        "pneumothorax",
        "right lower lobe consolidation",
        "enlarged heart",
        "endotracheal tube",
        "no pleural effusion",
        "no pneumothorax",
    )
    for q in expected:
        assert q in texts
    assert {qid for qid, _ in queries} == set(QUERY_RULES)


def test_parse_queries_rejects_bad_lines():
    with pytest.raises(CorpusError, match="x.tsv, line 2"):
        parse_queries(["q01\tpneumothorax", "just text"], source="x.tsv")
    with pytest.raises(CorpusError, match="duplicate"):
        parse_queries(["q01\ta", "q01\tb"], source="x.tsv")
    with pytest.raises(CorpusError, match="no relevance rule"):
        parse_queries(["zz9\tsomething"], source="x.tsv")


def test_queries_and_qrels_files(written, corpus):
    lines = written.queries.read_text(encoding="utf-8").splitlines()
    queries = dict(line.split("\t") for line in lines)
    assert len(queries) == written.n_queries == len(load_example_queries())

    ids = {r.id for r in corpus}
    by_id = {r.id: r for r in corpus}
    relevant: dict[str, set[str]] = {}
    for line in written.qrels.read_text(encoding="utf-8").splitlines():
        qid, zero, doc, rel = line.split()
        assert zero == "0" and rel == "1"
        assert qid in queries and doc in ids
        relevant.setdefault(qid, set()).add(doc)
    assert set(relevant) == set(queries)  # every query has at least one relevant report
    assert sum(len(v) for v in relevant.values()) == written.n_judgments

    # Spot-check the derivation against the truth and the text.
    for doc in relevant["q01"]:  # "pneumothorax"
        assert ("pneumothorax", "present") in {(f, s) for f, s, _ in by_id[doc].truth}
    for doc in relevant["q18"]:  # "no pleural effusion"
        assert ("pleural effusion", "absent") in {(f, s) for f, s, _ in by_id[doc].truth}
        assert not by_id[doc].findings("present") or "pleural effusion" not in by_id[doc].findings("present")
    for doc in relevant["q04"]:  # "right lower lobe consolidation"
        assert re.search(r"right (?:lower lobe|base|basilar)|bibasilar|lung bases", by_id[doc].report.text(), re.I)
    normal_in_q02 = [d for d in relevant["q02"] if by_id[d].is_normal]
    assert not normal_in_q02
    assert relevant["q21"] == relevant["q02"]  # "fluid around the lungs" = pleural effusion


def test_csv_reads_back_with_stdlib(written, corpus):
    with written.reports_csv.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        assert tuple(reader.fieldnames) == CSV_COLUMNS
        rows = list(reader)
    assert len(rows) == N == written.n_reports
    for row, r in zip(rows, corpus):
        assert row["uid"] == r.id
        assert row["findings"] == r.report.sections["findings"]
        assert row["impression"] == r.report.sections["impression"]
        assert row["indication"] == r.report.sections.get("indication", "")
        assert {k: row[k] for k in ("exam", "sex", "age_group", "site")} == dict(r.report.metadata)


def test_jsonl_and_truth_files(written, corpus):
    reports = [json.loads(line) for line in written.reports_jsonl.read_text(encoding="utf-8").splitlines()]
    truths = [json.loads(line) for line in written.truth_jsonl.read_text(encoding="utf-8").splitlines()]
    assert len(reports) == len(truths) == N
    assert reports[0] == corpus[0].report.to_dict()
    assert set(reports[0]) == {"id", "sections", "metadata"}
    assert truths[5]["id"] == corpus[5].id
    assert [tuple(f.values()) for f in truths[5]["findings"]] == [tuple(t) for t in corpus[5].truth]
    assert sum(t["normal"] for t in truths) == written.n_normal


def test_write_rejects_a_file_as_out_dir(tmp_path):
    target = tmp_path / "taken"
    target.write_text("x")
    with pytest.raises(CorpusError, match="taken"):
        write_demo_corpus(target, n=5)


def test_radsift_readers_accept_the_files(written, corpus):
    """The CSV reads with the documented flags; queries and qrels with radsift's TREC readers."""
    from radsift.corpus import ReaderOptions, ReadStats, read_corpus
    from radsift.evaluation.trec import read_qrels, read_queries

    options = ReaderOptions.from_cli(
        format=None,
        id_column="uid",
        sections=["findings=findings", "impression=impression"],
        text_column=None,
        on_error="fail",
    )
    read = list(read_corpus([written.reports_csv], options, ReadStats()))
    assert [r.id for r in read] == [r.id for r in corpus]
    assert read[3].sections["findings"] == corpus[3].report.sections["findings"]
    assert read[3].metadata["exam"] == corpus[3].report.metadata["exam"]
    assert read_queries(written.queries) == dict(load_example_queries())
    qrels = read_qrels(written.qrels)
    assert set(qrels) == set(QUERY_RULES)
    assert sum(len(v) for v in qrels.values()) == written.n_judgments


def test_equivalent_concepts_name_demo_findings():
    from radsift.demo import EQUIVALENT_CONCEPTS

    assert set(EQUIVALENT_CONCEPTS) <= set(FINDINGS)
    assert all(EQUIVALENT_CONCEPTS.values())
