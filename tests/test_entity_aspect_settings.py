"""Issue 31, items 1, 3 and 4: the notes-only setting reads no MedQuAD; the in-collection setting drops
near-duplicates, prefixes and asked (entity, aspect) pairs of the test split; held-out notes as a test."""

from __future__ import annotations

from pathlib import Path

import pytest

from radsift.corpus.medquad import MedQuADDocument, QAPair
from radsift.labels.note_entities import heading_items, note_entities, noun_phrases
from radsift.models.training import entity_aspect_data, load_config
from radsift.models.training.entity_aspect import load_data
from radsift.models.training.entity_aspect_data import build_entity_aspect_data
from radsift.models.training.entity_aspect_notes import note_passage_data, note_side, split_notes
from radsift.records import Report
from radsift.text import split_sections
from radsift.text.near_duplicates import NearDuplicateIndex

_TEMPLATES = [
    "PREOPERATIVE DIAGNOSIS: ,1. Left {d}. 2. Chronic {e}.,HISTORY OF PRESENT ILLNESS: ,The patient has {d} "
    "and chronic {e} for years; zorbitis was ruled out.,PLAN: ,Treatment of {d} with rest and review.",
    "DIAGNOSIS: ,{d}.,ASSESSMENT: ,Known {d} with chronic {e}; stable.,PLAN: ,Review {d} in clinic.",
]
_DISEASES = ["spermatocele", "appendicitis", "cholecystitis", "tendinitis", "hydrocele", "gastritis"]


_XML = """<?xml version="1.0" encoding="UTF-8"?>
<Document id="{num}" source="GARD"><Focus>Zorbitis</Focus><QAPairs>
<QAPair pid="1"><Question qid="{num}-1" qtype="treatment">How to treat Zorbitis ?</Question>
<Answer>Zorbitis is treated with rest.</Answer></QAPair></QAPairs></Document>"""


def _dictionary():
    from radsift.labels.entities import Entity, EntityDictionary

    return EntityDictionary([Entity("Kidney Disease", "C1", ("renal disease",)), Entity("Pneumonia", "C3")])


def _notes(n: int = 60) -> list[Report]:
    out = []
    for i in range(n):
        d, e = _DISEASES[i % len(_DISEASES)], _DISEASES[(i + 1) % len(_DISEASES)]
        text = _TEMPLATES[i % 2].format(d=d, e=e) + f" Visit {i}."
        out.append(Report(f"n{i}", dict(split_sections(text))))
    return out


def test_heading_items_and_noun_phrases():
    assert heading_items("1.  Left spermatocele.\n2.  Radiation cystitis with refractory voiding dysfunction.") == [
        "spermatocele", "Radiation cystitis", "refractory voiding dysfunction"]
    assert heading_items("Status post radical retropubic prostatectomy.") == ["radical retropubic prostatectomy"]
    assert "chronic renal insufficiency" in noun_phrases("He has chronic renal insufficiency and was seen.")
    assert not any("was" in p for p in noun_phrases("He has chronic renal insufficiency and was seen."))
    names = {e.name.lower() for e in note_entities(_notes())}
    assert {"spermatocele", "appendicitis", "chronic appendicitis"} <= names


def test_note_split_is_by_hash_of_the_text_and_independent_of_other_notes():
    notes = _notes(200)
    sides = split_notes(notes, 0.2, 0.2, seed=1)
    assert sum(len(v) for v in sides.values()) == 200
    assert split_notes(notes[::-1], 0.2, 0.2, seed=1)["test"][::-1] == sides["test"]
    dup = Report("copy", dict(notes[0].sections))
    assert sum(len(v) for v in split_notes(notes + [dup], 0.2, 0.2, seed=1).values()) == 200
    assert note_side("x", 0.0, 0.0) == "train"
    with pytest.raises(Exception, match="fractions"):
        note_side("x", 0.6, 0.5)


def _fake_medquad(root: Path) -> None:
    """A MedQuAD and CDV folder whose focus name (Zorbitis) the notes mention in running text."""
    mq = root / "medquad" / "2_GARD_QA"
    mq.mkdir(parents=True)
    for num in range(1, 6):
        (mq / f"{num:07d}.xml").write_text(_XML.format(num=f"{num:07d}"), encoding="utf-8")
    (root / "medquad-cdv-test").mkdir()


def test_notes_only_reads_no_medquad_and_builds_the_same_data_without_it(tmp_path, monkeypatch):
    present, absent = tmp_path / "present", tmp_path / "absent"
    _fake_medquad(present)
    absent.mkdir()
    notes = _notes()
    cfg = load_config(recipe="entity-aspect", setting="notes-only")
    built = {}
    for name, root in (("present", present), ("absent", absent)):
        monkeypatch.setattr(entity_aspect_data, "DEFAULT_DATA_DIR", root)
        for reader in ("read_medquad", "read_cdv_test", "test_document_ids", "load_sources", "load_test_pairs"):
            monkeypatch.setattr(entity_aspect_data, reader, lambda *a, **k: pytest.fail("notes-only read MedQuAD"))
        data = load_data(notes, cfg, lambda m: None)
        built[name] = (sorted(data.dictionary._phrases), [(p.note, p.aspect, p.text, sorted(p.entities))
                                                          for p in data.passages],
                       [(e.entity, e.aspect, e.positive) for e in data.examples])
    assert built["present"] == built["absent"]
    phrases, passages, examples = built["present"]
    assert examples and not any("zorbitis" in p for p in phrases)            # named by MedQuAD only
    assert not any("zorbitis" in e[0].lower() for e in examples)
    assert all(e.source == "notes" for e in load_data(notes, cfg, lambda m: None).examples)
    # training reads the training notes only: the development and test notes are held out
    sides = split_notes(notes)
    trained = {p[0] for p in passages}
    assert trained <= {r.id for r in sides["train"]} and sides["dev"] and sides["test"]


def test_in_collection_drops_near_duplicates_prefixes_and_asked_pairs():
    words = ("the condition is inherited in an autosomal recessive pattern which means both copies of the gene "
             "in each cell have mutations and the parents each carry one copy of the mutated gene").split()
    test_text = " ".join(words)
    near = " ".join(words[:-1] + ["genes"])                     # one word changed: Jaccard 0.9
    prefix = " ".join(words[:12])                               # a window that starts the test passage
    fresh = "Quilosis is treated with rest, fluids and a long course of antibiotics under supervision."

    def doc(i, focus, answer, qtype="inheritance"):
        return MedQuADDocument(id=f"GHR_{i:07d}", path=Path("x"), focus=focus, qa=(QAPair("1", qtype, "q", answer),))

    docs = [doc(1, "Alpha syndrome", near), doc(2, "Beta syndrome", prefix), doc(3, "Quilosis", fresh, "treatment"),
            doc(4, "Gamma syndrome", "Gamma syndrome is treated by diet.", "treatment"),
            doc(5, "Delta syndrome", "Delta syndrome is rare and treated by surgery.", "treatment")]
    data = build_entity_aspect_data([], medquad_docs=docs, test_texts=[test_text], dev_fraction=0.0,
                                    test_pairs=[("Gamma Syndrome", "treatment")], dictionary=_dictionary())
    texts = {p.text for p in data.passages}
    assert near not in texts and prefix not in texts and fresh in texts
    assert data.stats["dropped_near_duplicate"] == 1 and data.stats["dropped_test_prefix"] == 1
    assert data.stats["dropped_test_pair"] == 1 and not any(e.key == "gamma syndrome" for e in data.examples)
    assert {e.key for e in data.examples} == {"quilosis", "delta syndrome"}
    index = NearDuplicateIndex([test_text])
    assert index.best_jaccard(near)[0] == pytest.approx(0.9, abs=0.05) and index.best_jaccard(fresh) == (0.0, -1)
    assert index.prefix_of(prefix) == 0 and index.prefix_of(test_text + " and more words") == 0


def test_note_passage_benchmark_queries_and_golds():
    notes = [Report("a", dict(split_sections("ASSESSMENT: ,Pneumonia is better.,PLAN: ,Antibiotics for pneumonia."))),
             Report("b", dict(split_sections("ASSESSMENT: ,Renal disease, stable.,PLAN: ,Rest.")))]
    data = note_passage_data(notes, _dictionary(), max_gold=3)
    queries = {q.texts["entity-aspect"]: {data.passages[g] for g in q.gold} for q in data.queries}
    assert queries == {"Pneumonia assessment": {"Pneumonia is better."},
                       "Kidney Disease assessment": {"Renal disease, stable."},
                       "Pneumonia treatment": {"Antibiotics for pneumonia."}}
    assert len(data.passages) == 4 and data.passage_ids[0].startswith("a#")
    assert not note_passage_data(notes, _dictionary(), max_gold=0).queries


def _notes_csv(path):
    """The synthetic notes as an MTSamples-like CSV (note_id, transcription with upper-case headings)."""
    import csv

    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["note_id", "transcription"])
        for r in _notes(120):
            w.writerow([r.id, " ".join(f"{h.upper().replace('_', ' ')}: ,{t}," for h, t in r.sections.items())])
    return path


def test_bench_note_passages_writes_three_candidate_rules(tmp_path):
    import json

    from radsift.evaluation.bench_passages import bench_note_passages

    path = _notes_csv(tmp_path / "notes.csv")
    out = tmp_path / "bench"
    report = bench_note_passages(out, ["bm25", "tfidf"], corpus=[path], split="test")
    assert report["data"]["queries"] > 0 and report["data"]["passages"] > 0
    for system in ("bm25", "tfidf"):
        rules = report["results"][system]
        assert set(rules) == {"bm25-64", "bm25-64+gold", "random-64"}
        for figures in rules.values():
            assert 0 <= figures["entity-aspect"]["R@1"] <= figures["entity-aspect"]["R@5"] <= 100
    assert json.loads((out / "report.json").read_text())["protocol"] == "note-passages"
    assert "random-64" in (out / "report.md").read_text()
    with pytest.raises(Exception, match="unknown split"):
        bench_note_passages(tmp_path / "x", ["bm25"], corpus=[path], split="train")


def test_radsift_bench_runs_note_passages_alone(tmp_path):
    from typer.testing import CliRunner

    from radsift.cli import app

    path = _notes_csv(tmp_path / "notes.csv")
    args = ["bench", "--protocol", "note-passages", "--corpus", str(path), "--id-column", "note_id",
            "--text-column", "transcription", "--systems", "bm25"]
    result = CliRunner().invoke(app, args + ["--out", str(tmp_path / "bench")])
    assert result.exit_code == 0, result.output
    assert "bm25-64 entity-aspect" in result.output and "random-64 entity-aspect" in result.output
    mixed = CliRunner().invoke(app, args + ["--protocol", "sentences", "--out", str(tmp_path / "b2")])
    assert mixed.exit_code == 2 and "runs alone" in mixed.output
