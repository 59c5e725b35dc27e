"""Issue 21 (CAPR): aspects, passages, dictionary NER, entity-aspect examples, poly-encoder, the passages protocol."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from radsift.corpus import medquad as medquad_reader
from radsift.corpus.medquad import MedQuADDocument, QAPair, read_cdv_test, read_document
from radsift.errors import ConfigError, CorpusError
from radsift.records import Report
from radsift.text.aspects import (OTHER, UNSPECIFIED, AspectError, aspect_map, entity_aspect_text, load_aspect_map,
                                  note_passages, passage_windows)


# ------------------------------------------------------------------ aspects and passages
@pytest.mark.parametrize("heading, aspect", [
    ("HISTORY OF PRESENT ILLNESS:", "history"), ("Assessment", "assessment"), ("IMPRESSION", "assessment"),
    ("PLAN:", "treatment"), ("physical_examination", "examination"), ("exams and tests", "tests"),
    ("POSTOPERATIVE DIAGNOSIS", "assessment"), ("text", UNSPECIFIED), ("", UNSPECIFIED),
    ("WEATHER REPORT", OTHER),
])
def test_aspect_of_headings(heading, aspect):
    assert aspect_map().aspect_of(heading) == aspect


def test_query_aspect_resolves_aliases_and_refuses_unknown_names():
    amap = aspect_map()
    assert amap.resolve("plan") == "treatment"
    assert amap.resolve("Risk Factors") == "risk_factors"
    with pytest.raises(AspectError) as err:
        amap.resolve("weather")
    assert "'weather'" in str(err.value) and "treatment" in str(err.value) and "history" in str(err.value)


def test_user_aspect_file_extends_and_moves_headings(tmp_path):
    user = tmp_path / "aspects.yaml"
    user.write_text("social:\n  - social history\n  - occupation\nallergies:\n  - intolerances\n", encoding="utf-8")
    amap = load_aspect_map(user)
    assert amap.aspect_of("SOCIAL HISTORY") == "social"      # moved from history
    assert amap.aspect_of("OCCUPATION") == "social"
    assert amap.aspect_of("INTOLERANCES") == "allergies"
    assert amap.aspect_of("FAMILY HISTORY") == "history"     # the packaged map is still there
    assert "social" in amap.names
    bad = tmp_path / "bad.yaml"
    bad.write_text("other:\n  - x\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="reserved"):
        load_aspect_map(bad)


def test_note_passages_headings_and_bad_input():
    note = ("HISTORY OF PRESENT ILLNESS: ,Cough for a week with fever.,PLAN: ,Start antibiotics for pneumonia.,"
            "ALLERGIES: ,")
    passages = note_passages(note)
    assert [(p.aspect, p.text) for p in passages] == [
        ("history", "Cough for a week with fever."), ("treatment", "Start antibiotics for pneumonia.")]
    # no headings: one passage, aspect unspecified
    (only,) = note_passages("The patient is doing well and will return in a month.")
    assert only.aspect == UNSPECIFIED and only.heading == "text"


def test_huge_passages_become_overlapping_windows():
    words = [f"w{i}" for i in range(500)]
    windows = passage_windows(" ".join(words), max_words=200, overlap=50)
    assert [w.split()[0] for w in windows] == ["w0", "w150", "w300"]
    assert windows[0].split()[-50:] == windows[1].split()[:50]   # overlap
    assert windows[-1].split()[-1] == "w499"                      # nothing lost
    assert passage_windows("short text", 200, 50) == ["short text"]
    huge = "PLAN: " + " ".join(words)
    assert len(note_passages(huge, max_words=200, overlap=50)) == 3
    assert {p.aspect for p in note_passages(huge, max_words=200, overlap=50)} == {"treatment"}


def test_entity_aspect_text():
    assert entity_aspect_text("  gout ", "risk_factors") == "gout risk factors"


# ------------------------------------------------------------------ dictionary NER
def _dictionary():
    from radsift.labels.entities import Entity, EntityDictionary

    return EntityDictionary([
        Entity("Kidney Disease", "C1", ("renal disease",)),
        Entity("Chronic Kidney Disease", "C2"),
        Entity("CKD", "C2"),                       # same CUI: merged into the entry above
        Entity("Pneumonia", "C3"),
        Entity("Disease", "C4"),                   # a stop word: never matched alone
        Entity("AS", "C5"),                        # too short
    ])


def test_dictionary_ner_longest_match_plural_and_cui_merge():
    d = _dictionary()
    found = d.find("Chronic kidney disease and two pneumonias; renal disease; CKD as noted.")
    assert [(m.entity, m.text) for m in found] == [
        ("Chronic Kidney Disease", "Chronic kidney disease"), ("Pneumonia", "pneumonias"),
        ("Kidney Disease", "renal disease"), ("Chronic Kidney Disease", "CKD")]
    assert found[0].cui == "C2" and found[0].start == 0 and found[0].end == len("Chronic kidney disease")
    assert d.find("a disease as such") == []
    assert len(d) == 5


# ------------------------------------------------------------------ MedQuAD reading
_XML = """<?xml version="1.0" encoding="UTF-8"?>
<Document id="{num}" source="GARD"><Focus>{focus}</Focus>
<FocusAnnotations><UMLS><CUIs><CUI>C9</CUI></CUIs></UMLS><Synonyms><Synonym>{focus} syndrome</Synonym></Synonyms>
</FocusAnnotations><QAPairs>
<QAPair pid="1"><Question qid="{num}-1" qtype="symptoms">What are the symptoms of {focus} ?</Question>
<Answer>{focus} causes headaches.</Answer></QAPair>
<QAPair pid="2"><Question qid="{num}-2" qtype="treatment">How to treat {focus} ?</Question>
<Answer>{focus} is treated with rest.</Answer></QAPair>
</QAPairs></Document>"""


def _medquad(tmp_path: Path) -> tuple[Path, Path]:
    import json

    mq = tmp_path / "medquad" / "2_GARD_QA"
    mq.mkdir(parents=True)
    for num, focus in (("0000001", "Zorb fever"), ("0000002", "Quil disease")):
        (mq / f"{num}.xml").write_text(_XML.format(num=num, focus=focus), encoding="utf-8")
    cdv = tmp_path / "cdv"
    cdv.mkdir()
    (cdv / "MedQuAD_test_sources.tsv").write_text("data/MedQuAD/MedQuAD-master/2_GARD_QA/0000002.xml\n")
    a1, a2 = "Quil disease causes headaches.", "Quil disease is treated with rest."
    doc = {"id": "GARD_0000002", "type": "GARD_QA", "begin": 0, "length": len(a1) + len(a2) + 2, "annotations": [
        {"id": "GARD_0000002-1", "begin": 0, "length": len(a1) + 1, "entity": "Quil disease", "aspect": "symptoms"},
        {"id": "GARD_0000002-2", "begin": len(a1) + 1, "length": len(a2) + 1, "entity": "Quil disease",
         "aspect": "treatment"}]}
    query = {"text": "How to treat Quil disease ?", "annotations": [
        {"entity": "Quil disease", "aspect": "treatment", "aspectHeading": "treatment"}],
        "results": [{"id": "GARD_0000002-2", "relevance": 1}]}
    (cdv / "MedQuAD_test_annotations.json").write_text(json.dumps({"documents": [doc], "queries": [query]}))
    return tmp_path / "medquad", cdv


def test_medquad_reader_and_cdv_join(tmp_path):
    mq, cdv = _medquad(tmp_path)
    doc = read_document(mq / "2_GARD_QA" / "0000001.xml")
    assert doc.id == "GARD_0000001" and doc.focus == "Zorb fever" and doc.cuis == ("C9",)
    assert [q.qtype for q in doc.qa] == ["symptoms", "treatment"]
    split = read_cdv_test(cdv, mq)
    assert [p.text for p in split.passages] == ["Quil disease causes headaches.", "Quil disease is treated with rest."]
    assert split.queries[0].gold == ("GARD_0000002-2",)
    assert medquad_reader.test_document_ids(cdv) == {"GARD_0000002"}


def test_cdv_offsets_that_miss_the_answers_are_an_error(tmp_path):
    import json

    mq, cdv = _medquad(tmp_path)
    path = cdv / "MedQuAD_test_annotations.json"
    data = json.loads(path.read_text())
    data["documents"][0]["annotations"][1]["begin"] += 3
    path.write_text(json.dumps(data))
    with pytest.raises(CorpusError, match="GARD_0000002-2"):
        read_cdv_test(cdv, mq)


# ------------------------------------------------------------------ example generation
def _docs(n: int) -> list[MedQuADDocument]:
    return [MedQuADDocument(id=f"GARD_{i:07d}", path=Path("x"), focus=f"Zorbitis type {i}", cuis=(f"C{i}",),
                            qa=(QAPair("1", "symptoms", "q", f"Zorbitis type {i} gives fevers number {i}."),
                                QAPair("2", "treatment", "q", f"Type {i} zorbitis is treated with drug {i}.")))
            for i in range(40)]


def _notes() -> list[Report]:
    from radsift.text import split_sections

    texts = ["HISTORY OF PRESENT ILLNESS: ,Pneumonia last winter.,PLAN: ,Antibiotics for pneumonia; check renal disease.",
             "ASSESSMENT: ,Pneumonia is better.,PLAN: ,Follow up for renal disease.",
             "ASSESSMENT: ,Pneumonia is better.,PLAN: ,Follow up for renal disease."]  # a duplicate note
    return [Report(f"n{i}", dict(split_sections(t))) for i, t in enumerate(texts)]


def test_examples_never_include_test_documents_or_texts():
    from radsift.models.training.entity_aspect_data import build_entity_aspect_data

    docs = _docs(40)
    test_ids = frozenset({"GARD_0000003", "GARD_0000004"})
    banned = [f"Zorbitis type {i} gives fevers number {i}." for i in range(5, 15)]
    data = build_entity_aspect_data(_notes(), medquad_docs=docs, test_ids=test_ids, test_texts=banned,
                                    dev_fraction=0.25, dictionary=_dictionary())
    notes = data.notes()
    assert not notes & test_ids
    assert not {p.text for p in data.passages} & set(banned)
    dev = {d.id for d in data.dev_docs}
    assert data.stats["dropped_test_text"] == sum(f"GARD_{i:07d}" not in dev for i in range(5, 15)) > 0
    assert dev and not dev & notes and not dev & test_ids           # the development split is held out too
    # notes: dictionary entities under known aspects; the duplicate note counted once
    note_ex = {(e.entity.lower(), e.aspect) for e in data.examples if e.source == "notes"}
    assert ("pneumonia", "history") in note_ex and ("pneumonia", "treatment") in note_ex
    assert ("renal disease", "treatment") in note_ex and ("pneumonia", "assessment") in note_ex
    assert data.stats["notes"] == 2
    mq = [e for e in data.examples if e.source == "medquad"]
    assert {e.aspect for e in mq} == {"symptoms", "treatment"}
    assert all(e.query == entity_aspect_text(e.entity, e.aspect) for e in data.examples)


def test_sampler_hard_negatives_and_no_false_negatives():
    from radsift.models.training.entity_aspect_data import build_entity_aspect_data
    from radsift.models.training.entity_aspect_sampler import EASampler

    data = build_entity_aspect_data(_notes(), medquad_docs=_docs(40), dev_fraction=0.0, dictionary=_dictionary())
    sampler = EASampler(data, 8, random.Random(0), medquad_share=0.5)
    for _ in range(20):
        batch = sampler.next_batch()
        assert len({e.note for e, _ in batch}) == len(batch)
        for e, neg in batch:
            p = data.passages[neg]
            assert not sampler.relevant(neg, e)
            if p.note == e.note:  # same note: same entity other aspect, or same aspect other entity
                assert (e.key in p.entities and p.aspect != e.aspect) or (p.aspect == e.aspect)
            for o, n in batch:
                if o is not e:
                    assert not sampler.relevant(o.positive, e) and not sampler.relevant(n, e)
    # medquad: the negative of a document's example is the same focus under the other aspect
    e = next(x for x in data.examples if x.source == "medquad")
    neg = sampler.negative(e)
    assert data.passages[neg].note == e.note and data.passages[neg].aspect != e.aspect


def test_real_split_never_reaches_training(shared_data):
    from radsift.corpus.medquad import read_medquad
    from radsift.labels.entities import EntityDictionary
    from radsift.models.training.entity_aspect_data import build_entity_aspect_data

    cdv, mq = shared_data / "medquad-cdv-test", shared_data / "medquad"
    test_ids = medquad_reader.test_document_ids(cdv)
    split = read_cdv_test(cdv, mq)
    assert len(split.passages) == 3762 and len(split.queries) == 3293 and len(split.documents) == 1111
    assert set(split.documents) <= test_ids
    data = build_entity_aspect_data([], medquad_docs=list(read_medquad(mq)), test_ids=test_ids,
                                    test_texts=[p.text for p in split.passages], dictionary=EntityDictionary([]))
    assert not data.notes() & test_ids
    test_texts = {" ".join(p.text.split()).casefold() for p in split.passages}
    assert not any(" ".join(p.text.split()).casefold() in test_texts for p in data.passages)


# ------------------------------------------------------------------ poly-encoder
def test_poly_encoder_shapes_and_save_load(tmp_path):
    import torch

    from radsift.models.poly_encoder import PolyEncoder, PolyHead, is_poly_encoder

    poly = PolyEncoder.new(None, codes=4, seed=1)
    assert poly.m == 4 and poly.dim == 384
    texts = ["Gout is treated with colchicine.", "Pneumonia history.", "A much longer passage " * 10]
    codes = poly.encode_passages(texts)
    q = poly.encode_queries(["gout treatment", "pneumonia history"])
    assert codes.shape == (3, 4, 384) and q.shape == (2, 384)
    s = poly.score(q, codes)
    assert s.shape == (2, 3) and np.all(np.abs(s) <= 1.0001)
    # Padding does not leak into the codes: a passage alone equals the passage in a padded batch.
    alone = poly.encode_passages(texts[:1])
    np.testing.assert_allclose(alone[0], codes[0], atol=1e-4)
    # One code: the query's attention is trivial, the score is the cosine with that code.
    one = PolyHead.scores(torch.tensor([[1.0, 0.0]]), torch.tensor([[[3.0, 4.0]]]))
    assert float(one[0, 0]) == pytest.approx(0.6)
    with torch.no_grad():
        poly.codes.add_(0.5)
    poly.save(tmp_path / "poly")
    assert is_poly_encoder(tmp_path / "poly")
    loaded = PolyEncoder.load(tmp_path / "poly")
    assert loaded.m == 4
    np.testing.assert_allclose(loaded.codes.detach().numpy(), poly.codes.detach().numpy())
    np.testing.assert_allclose(loaded.score(loaded.encode_queries(["gout treatment"]), loaded.encode_passages(texts)),
                               poly.score(poly.encode_queries(["gout treatment"]), poly.encode_passages(texts)),
                               atol=1e-5)
    with pytest.raises(ConfigError, match="not a poly-encoder"):
        PolyEncoder.load(tmp_path)


# ------------------------------------------------------------------ the passages protocol
class _FixedScores:
    """A system whose score of a pool row is given (to check the metric by hand)."""

    name = "fixed"

    def __init__(self, table):
        self.table = np.asarray(table, dtype=np.float32)

    def prepare(self, passages):
        self.passages = passages

    def score(self, queries, candidates):
        return [self.table[np.asarray(c)] for c in candidates]


def test_hits_at_by_hand():
    """Ties count as the expected value over their orders (issue 31), never by candidate order."""
    from radsift.evaluation.protocols.passage_retrieval import expected_hits_at, recall_summary

    cands = [[5, 7, 9], [1, 2, 3], [4, 6, 8]]
    scores = [np.array([0.1, 0.9, 0.5]), np.array([0.3, 0.3, 0.2]), np.array([0.0, 0.1, 0.2])]
    golds = [frozenset({7}), frozenset({2}), frozenset({4})]
    # query 1: 7 first -> hit@1; query 2: 1 and 2 tie -> gold first in half the orders; query 3: 4 last.
    assert expected_hits_at(scores, cands, golds, 1) == [1.0, 0.5, 0.0]
    assert expected_hits_at(scores, cands, golds, 2) == [1.0, 1.0, 0.0]
    summary = recall_summary([True, False, False])
    assert summary["value"] == pytest.approx(1 / 3)
    assert summary["low"] == pytest.approx(0.0615, abs=1e-3) and summary["high"] == pytest.approx(0.7923, abs=1e-3)


def test_run_passages_candidates_and_report():
    from radsift.corpus.medquad_passages import PassageData, PassageQuery
    from radsift.evaluation.protocols.passage_retrieval import report_json, run_passages

    passages = ["gout treatment colchicine", "gout symptoms pain", "asthma treatment inhaler",
                "asthma symptoms wheeze", "unrelated text here"]
    queries = [PassageQuery("a", {"entity-aspect": "gout treatment", "natural": "how to treat gout"}, frozenset({0})),
               PassageQuery("b", {"entity-aspect": "asthma symptoms", "natural": "asthma signs"}, frozenset({4}))]
    data = PassageData(passages, [f"p{i}" for i in range(5)], queries)
    # depth 2: query b's gold (row 4) is not among BM25's top 2: a miss under the primary rule; appended
    # as a third candidate under the secondary rule only
    fixed = _FixedScores([0.9, 0.1, 0.2, 0.3, 0.5])
    result = run_passages(data, [fixed], depth=2)
    assert result.data["gold_added"]["entity-aspect"] == 1 and result.data["queries_without_gold"]["entity-aspect"] == 1
    out = report_json(result)["fixed"]
    assert out["entity-aspect"]["R@1"] == 50.0 and out["entity-aspect"]["R@5"] == 50.0
    appended = report_json(result, "bm25-64+gold")["fixed"]
    assert appended["entity-aspect"]["R@1"] == 100.0 and appended["entity-aspect"]["R@5"] == 100.0
    assert set(out) == {"entity-aspect", "natural"} and "R@1 95% CI" in out["natural"]
    worst = run_passages(data, [_FixedScores([0.0, 0.5, 0.5, 0.5, 0.0])], depth=2)
    assert report_json(worst)["fixed"]["entity-aspect"]["R@1"] == 0.0


def test_passage_system_specs():
    from radsift.evaluation.systems.passage_systems import check_passage_specs, parse_passage_system

    assert parse_passage_system("bm25").label == "bm25"
    assert parse_passage_system("mini=dense").label == "mini"
    spec = parse_passage_system("rerank:poly=models/p:models/c")
    assert spec.kind == "rerank" and spec.first_poly and spec.model == "models/p" and spec.reranker == "models/c"
    with pytest.raises(ConfigError, match="knows"):
        parse_passage_system("splade")
    with pytest.raises(ConfigError, match="not found"):
        check_passage_specs([parse_passage_system("poly:/no/such/folder")])


def test_hybrid_passage_system_fuses_dense_and_bm25_with_the_engine_weights(tmp_path):
    from radsift.evaluation.systems.passage_systems import (BM25Passages, DensePassages, HybridPassages,
                                                     build_passage_systems, parse_passage_system)
    from radsift.models.hashing import HashingEncoder
    from radsift.ranking.fusion import DENSE_WEIGHT, min_max

    spec = parse_passage_system("hybrid")
    assert spec.kind == "hybrid" and spec.model is None and spec.label == "hybrid"
    assert parse_passage_system("h=hybrid:models/x").model == "models/x"
    enc = HashingEncoder(tmp_path / "hash")
    pool = ["gout is treated with colchicine", "gout symptoms: a painful toe", "pneumonia treatment: antibiotics",
            "colchicine side effects"]
    hybrid, = build_passage_systems([spec], encoders={None: enc})
    assert isinstance(hybrid, HybridPassages)
    hybrid.prepare(pool)
    dense, bm25 = DensePassages("d", enc), BM25Passages()
    dense.prepare(pool), bm25.prepare(pool)
    queries, cands = ["gout treatment", "colchicine"], [[0, 1, 2], [3, 0, 1]]
    for got, d, b in zip(hybrid.score(queries, cands), dense.score(queries, cands), bm25.score(queries, cands)):
        np.testing.assert_allclose(got, DENSE_WEIGHT * min_max(d) + (1 - DENSE_WEIGHT) * min_max(b), atol=1e-6)


def test_rerank_over_a_hybrid_first_stage(tmp_path, monkeypatch):
    """``rerank:hybrid[=MODEL]:CROSS``: the cross-encoder re-scores the hybrid system's top RERANK_TOP."""
    from radsift.evaluation.systems import passage_systems as ps
    from radsift.models import reranker as rr
    from radsift.models.hashing import HashingEncoder

    spec = ps.parse_passage_system("rerank:hybrid=models/b:models/c")
    assert spec.first_hybrid and not spec.first_poly and spec.model == "models/b" and spec.reranker == "models/c"
    plain = ps.parse_passage_system("rerank:hybrid:models/c")
    assert plain.first_hybrid and plain.model is None
    assert not ps.parse_passage_system("rerank:models/b:models/c").first_hybrid

    class Longest:  # a stand-in cross-encoder: longer passages score higher
        def score(self, query, texts):
            return np.array([len(t) for t in texts], dtype=np.float32)

    monkeypatch.setattr(rr.Reranker, "load", classmethod(lambda cls, *a, **k: Longest()))
    enc = HashingEncoder(tmp_path / "hash")
    system, = ps.build_passage_systems([plain], encoders={None: enc})
    assert isinstance(system.first, ps.HybridPassages)
    pool = ["gout", "gout treatment with colchicine and rest", "pneumonia treatment: antibiotics for a week"]
    system.top = 2
    system.prepare(pool)
    first = ps.HybridPassages("h", ps.DensePassages("d", enc), ps.BM25Passages())
    first.prepare(pool)
    head = set(np.argsort(-first.score(["gout"], [[0, 1, 2]])[0])[:2].tolist())
    got = system.score(["gout"], [[0, 1, 2]])[0]
    ranked = np.argsort(-got).tolist()
    assert set(ranked[:2]) == head and ranked[0] == max(head, key=lambda r: len(pool[r]))


# ------------------------------------------------------------------ passage search (--unit passage, "entity | aspect")
_NOTES = [
    ("n1", "HISTORY OF PRESENT ILLNESS: Pneumonia last winter, treated at home.\nPLAN: Start antibiotics for "
           "pneumonia today. Recheck in a week.\nALLERGIES: None."),
    ("n2", "ASSESSMENT: Gout flare of the left toe.\nPLAN: Colchicine for gout. Ice and rest."),
    ("n3", "The patient is well and has no complaints today."),   # no heading: aspect unspecified
]


@pytest.fixture(scope="module")
def note_index(hashing_index_of):
    from radsift.text import split_sections

    reports = [Report(i, dict(split_sections(t))) for i, t in _NOTES]
    return hashing_index_of("passages", reports)


def test_entity_aspect_query_ranks_passages_of_that_aspect(note_index):
    from radsift.search.passages import parse_passage_query, search_passages

    assert parse_passage_query("pneumonia | plan") == parse_passage_query("pneumonia", aspect="treatment")
    assert parse_passage_query("pneumonia | plan").text == "pneumonia treatment"
    hits = search_passages(note_index, "pneumonia | treatment", k=5, mode="bm25")
    assert hits and {h.aspect for h in hits} == {"treatment"}
    top = hits[0]
    assert top.report_id == "n1" and top.heading == "plan"
    assert top.text.startswith("Start antibiotics")
    (a, b), = top.sentences                     # the sentence naming pneumonia, not "Recheck in a week."
    assert "pneumonia" in top.text[a:b] and top.text[top.highlights[0][0]:top.highlights[0][1]].lower() == "pneumonia"
    # a plain question searches every passage; the note without headings is one unspecified passage
    hits = search_passages(note_index, "patient well no complaints", k=10, mode="bm25")
    assert any(h.report_id == "n3" and h.aspect == UNSPECIFIED for h in hits)
    with pytest.raises(AspectError, match="known aspects"):
        search_passages(note_index, "gout | weather", k=3)
    with pytest.raises(ConfigError, match="ENTITY"):
        parse_passage_query("gout | ")


def test_index_reads_a_huge_section_as_overlapping_windows(tmp_path):
    """A section past one window keeps every window: its first as its vector, the later ones beside it, and a
    search scores it by its best window (its end counts); a section that fits keeps the model's own vector."""
    from radsift.index import build_index
    from radsift.models.hashing import HashingEncoder
    from radsift.search import Index
    from radsift.text.aspects import WINDOW_WORDS, passage_windows

    enc = HashingEncoder(tmp_path / "model")
    filler = " ".join(f"word{i % 97}" for i in range(WINDOW_WORDS + 40))
    long_plan = filler + " Start colchicine for the gout flare and recheck uric acid."
    reports = [Report("huge", {"history": "Gout for years.", "plan": long_plan})]
    build_index(tmp_path / "idx", reports, encoder=enc, progress=False)
    idx = Index.open(tmp_path / "idx", encoder=enc)
    units = idx.store.units("section")
    vecs = np.asarray(units.vectors)
    by_name = {s.section: row for row, s in enumerate(idx.store.all_sections())}
    windows = passage_windows(long_plan)
    assert len(windows) == 2 and "colchicine" in windows[1] and "colchicine" not in windows[0]
    np.testing.assert_allclose(vecs[by_name["plan"]], enc.encode(windows[:1])[0], atol=1e-6)
    np.testing.assert_allclose(units.windows, enc.encode(windows[1:]), atol=1e-6)
    assert units.window_owner.tolist() == [by_name["plan"]]
    np.testing.assert_allclose(vecs[by_name["history"]], enc.encode(["Gout for years."])[0], atol=1e-6)
    # the section's end counts: a search for it scores the plan by its second window
    tail = "Start colchicine for the gout flare and recheck uric acid."
    hits = idx.search(tail, k=2, mode="dense", unit="section", level="sentence")
    best = float(enc.encode([windows[1]])[0] @ enc.encode([tail])[0])
    assert hits[0].score == pytest.approx(best, abs=1e-5) and best > float(enc.encode([windows[0]])[0] @ enc.encode([tail])[0])


def test_search_cli_unit_passage(note_index, monkeypatch):
    import json

    from typer.testing import CliRunner

    from radsift.cli import app
    from radsift.models.hashing import HashingEncoder

    monkeypatch.setattr("radsift.models.encoder.Encoder.load",
                        classmethod(lambda cls, model=None, **kw: HashingEncoder(model)))
    runner = CliRunner()
    res = runner.invoke(app, ["search", str(note_index.path), "gout", "--aspect", "plan", "--unit", "passage",
                              "--mode", "bm25", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["aspect"] == "treatment" and data["hits"][0]["report_id"] == "n2"
    assert data["hits"][0]["heading"] == "plan" and data["hits"][0]["sentences"]
    res = runner.invoke(app, ["search", str(note_index.path), "gout | weather", "--mode", "bm25"])
    assert res.exit_code != 0 and "known aspects" in res.output


def test_bench_cli_protocol_passages_writes_report_json(tmp_path):
    import json

    from typer.testing import CliRunner

    from radsift.cli import app

    mq, cdv = _medquad(tmp_path)
    out = tmp_path / "bench"
    res = CliRunner().invoke(app, ["bench", "--protocol", "passages", "--systems", "bm25", "--systems", "tfidf",
                                   "--medquad", str(mq), "--cdv", str(cdv), "--out", str(out)])
    assert res.exit_code == 0, res.output
    report = json.loads((out / "report.json").read_text())
    for system in ("bm25", "tfidf"):
        for kind in ("entity-aspect", "natural"):
            figures = report["results"][system][kind]
            assert 0 <= figures["R@1"] <= figures["R@5"] <= 100 and len(figures["R@1 95% CI"]) == 2
    assert report["data"]["queries"] == 1 and report["data"]["passages"] == 2
    assert report["results"]["bm25"]["natural"]["R@5"] == 100.0   # two candidates: the gold is always in the top 5
    res = CliRunner().invoke(app, ["bench", "--protocol", "passages", "--medquad", str(tmp_path / "none"),
                                   "--cdv", str(cdv), "--out", str(tmp_path / "b2")])
    assert res.exit_code != 0 and "--medquad" in res.output
    res = CliRunner().invoke(app, ["bench", "--protocol", "passages", "--systems", "splade", "--medquad", str(mq),
                                   "--cdv", str(cdv), "--out", str(tmp_path / "b3")])
    assert res.exit_code != 0 and "knows" in res.output


def test_api_passages(note_index):
    from fastapi.testclient import TestClient

    from radsift.serve import create_app

    client = TestClient(create_app(note_index))
    res = client.get("/api/passages", params={"q": "pneumonia | plan", "mode": "bm25", "k": 3})
    assert res.status_code == 200, res.text
    data = res.json()
    assert data["aspect"] == "treatment" and data["hits"][0]["report_id"] == "n1"
    hit = data["hits"][0]
    a, b = hit["sentences"][0]
    assert "pneumonia" in hit["text"][a:b]
    res = client.get("/api/passages", params={"q": "pneumonia", "aspect": "weather"})
    assert res.status_code == 422 and "known aspects" in res.text   # the API answers bad options with 422


@pytest.mark.slow
def test_combined_recipe_joins_entity_aspect_steps(monkeypatch, tmp_path):
    """``combined`` with ``entity_share``: CAPR steps from the training reports' sections (never the held-out
    ones), spread evenly; the lexicon / pair schedule of the other steps is the plain one."""
    from sentence_transformers import SentenceTransformer

    from radsift.demo import generate_reports
    from radsift.models import default_model_path
    from radsift.models.training import entity_aspect_data, load_config
    from radsift.models.training.combined import CombinedRecipe, is_pair_step
    from radsift.models.training.data import prepare_data
    from radsift.models.training.entity_aspect_bi import EntityAspectRecipe
    from radsift.models.training.findings_impression import FindingsImpressionRecipe
    from radsift.models.training.loop import Optimizer
    from radsift.models.training.runner import _entity_aspect_data

    monkeypatch.setattr(entity_aspect_data, "DEFAULT_DATA_DIR", tmp_path)  # no MedQuAD: the reports' sections alone
    reports = [d.report for d in generate_reports(n=120, seed=3)]
    small = dict(batch_size=4, mega_batch_size=4, pair_batch_size=4, max_seq_length=32, section_max_seq_length=32)
    cfg = load_config(recipe="combined", entity_share=0.25, pair_share=0.4, **small)
    data = prepare_data(reports, cfg, progress=False)
    ea = _entity_aspect_data(reports, data, cfg, lambda m: None)
    assert ea.examples and ea.notes() <= data.train_ids and not ea.notes() & data.heldout_ids
    assert {p.aspect for p in ea.passages} <= {"findings", "assessment"}
    model = SentenceTransformer(str(default_model_path()), device="cpu", local_files_only=True)
    recipe = CombinedRecipe(model, data, cfg, random.Random(0), entity=ea)
    chosen = [recipe.next_recipe() for _ in range(100)]
    assert sum(isinstance(r, EntityAspectRecipe) for r in chosen) == 25
    assert sum(isinstance(r, FindingsImpressionRecipe) for r in chosen) == 30  # 40% of the other 75
    entity_steps = [i for i, r in enumerate(chosen) if isinstance(r, EntityAspectRecipe)]
    assert max(b - a for a, b in zip(entity_steps, entity_steps[1:])) == 4  # spread, not bunched
    # entity_share 0: the plain combined schedule, entity data or not
    plain = CombinedRecipe(model, data, load_config(recipe="combined", pair_share=0.4, **small), random.Random(0),
                           entity=ea)
    assert plain.entity is None
    assert [isinstance(plain.next_recipe(), FindingsImpressionRecipe) for _ in range(20)] == [
        is_pair_step(i, 0.4) for i in range(20)]
    result = recipe.entity.step(Optimizer(model.parameters(), cfg))
    assert result.kind == "entity-aspect" and np.isfinite(result.loss)


@pytest.mark.slow
def test_eval_every_keeps_a_checkpoint_and_a_development_curve(monkeypatch, tmp_path):
    """``eval_every``: the model is saved to OUT/checkpoint and scored on the development split every N steps
    (a curve in radsift_training.json and the model card); the checkpoint goes once the final model is saved."""
    import json

    from radsift.errors import ConfigError
    from radsift.models import default_model_path
    from radsift.evaluation import heldout
    from radsift.models.training import entity_aspect, load_config

    with pytest.raises(ConfigError, match="eval_every"):
        load_config(recipe="entity-aspect", eval_every=-1)
    monkeypatch.setattr(entity_aspect, "load_sources", lambda config, say: (_docs(40), frozenset(), []))
    seen = []
    real = heldout.evaluate_on_dev

    def spy(model_dir, config, dev_docs, say, kinds=None):
        seen.append((Path(model_dir).name, (Path(model_dir) / "model.safetensors").is_file(), kinds))
        return real(model_dir, config, dev_docs, say, kinds=kinds)

    monkeypatch.setattr(heldout, "evaluate_on_dev", spy)
    cfg = load_config(recipe="entity-aspect", batch_size=2, max_steps=3, eval_every=2, dev_max_queries=4,
                      section_max_seq_length=32, dev_fraction=0.25, time_limit_minutes=None,
                      setting="in-collection")  # the MedQuAD documents above are its development split
    out = tmp_path / "ea"
    out.mkdir()
    result = entity_aspect.train_entity_aspect(_notes(), cfg, out, default_model_path(), progress=False,
                                               evaluator=heldout.HeldOutEvaluator())
    # one checkpoint at step 2 (not at the last step, which is the final model), scored on (entity, aspect) queries
    assert seen == [("checkpoint", True, ("entity-aspect",)), ("ea", True, None)]
    curve = result.evaluation["dev_curve"]
    assert [c["step"] for c in curve] == [2] and 0 <= curve[0]["R@1"] <= curve[0]["R@5"] <= 100
    assert not (out / "checkpoint").exists()
    card = json.loads((out / "radsift_training.json").read_text())
    assert card["evaluation"]["dev_curve"] == curve
    assert "Learning curve" in (out / "README.md").read_text()


@pytest.mark.slow
def test_cross_recipe_is_listwise_over_positive_hard_negative_and_batch():
    """The cross-encoder's loss: per query, cross-entropy over its positive (the label), its same-note hard
    negative and the batch's other passages (sigmoid logits x 10, the library's cross-encoder MNRL)."""
    import torch

    from radsift.models import default_model_path
    from radsift.models.training import load_config
    from radsift.models.training.entity_aspect_cross import CrossRecipe
    from radsift.models.training.entity_aspect_data import build_entity_aspect_data
    from radsift.models.training.rerank import build_cross_encoder

    data = build_entity_aspect_data([], medquad_docs=_docs(12), dev_fraction=0.0, dictionary=_dictionary())
    cfg = load_config(recipe="entity-aspect", model_type="cross", batch_size=3, mega_batch_size=3,
                      rerank_negatives=4)
    model = build_cross_encoder(str(default_model_path()), 32)
    recipe = CrossRecipe(model, data, cfg, random.Random(1))
    batch = recipe.sampler.next_batch()
    queries, positives, negatives = recipe.columns(batch)
    for (e, neg), text in zip(batch, negatives):   # the hard negative: the same document, another aspect
        assert data.passages[neg].note == e.note and data.passages[neg].aspect != e.aspect
        assert data.passages[neg].text == text
    model.eval()
    with torch.no_grad():
        loss = float(recipe.loss([queries, positives, negatives], torch.zeros(3)))

        def s(q, texts):
            return torch.sigmoid(model(recipe.loss.model.preprocess([[q, t] for t in texts]))["scores"].squeeze(1))

        manual = 0.0
        for i, q in enumerate(queries):
            others = [t for j in range(3) if j != i for t in (positives[j], negatives[j])]
            logits = 10 * s(q, [positives[i]] + others + [negatives[i]])
            manual += float(torch.nn.functional.cross_entropy(logits[None], torch.zeros(1, dtype=torch.long)))
    assert loss == pytest.approx(manual / 3, rel=1e-4)


def test_bench_passages_split_dev_is_the_split_training_holds_out(tmp_path):
    """``--split dev``: the answers of exactly the MedQuAD documents that training holds out (never a test one)."""
    import json

    from typer.testing import CliRunner

    from radsift.cli import app
    from radsift.corpus.medquad import read_medquad
    from radsift.evaluation.bench_passages import load_dev
    from radsift.models.training.entity_aspect_data import build_entity_aspect_data

    mq, cdv = _medquad(tmp_path)
    for i in range(3, 43):
        (mq / "2_GARD_QA" / f"{i:07d}.xml").write_text(_XML.format(num=f"{i:07d}", focus=f"Zorb{i} fever"),
                                                       encoding="utf-8")
    docs = list(read_medquad(mq))
    held = {d.id for d in build_entity_aspect_data([], medquad_docs=docs, test_ids=frozenset({"GARD_0000002"}),
                                                   dictionary=_dictionary()).dev_docs}
    data = load_dev(cdv, mq)
    assert held and {i.split("-", 1)[0] for i in data.passage_ids} == held and "GARD_0000002" not in held
    assert len(data.queries) == len(data.passages) == 2 * len(held)
    out = tmp_path / "bench-dev"
    res = CliRunner().invoke(app, ["bench", "--protocol", "passages", "--systems", "bm25", "--split", "dev",
                                   "--medquad", str(mq), "--cdv", str(cdv), "--out", str(out)])
    assert res.exit_code == 0, res.output
    report = json.loads((out / "report.json").read_text())
    assert report["settings"]["split"] == "dev" and report["data"]["passages"] == 2 * len(held)
    assert "development split" in (out / "report.md").read_text()
    res = CliRunner().invoke(app, ["bench", "--protocol", "passages", "--split", "train", "--medquad", str(mq),
                                   "--cdv", str(cdv), "--out", str(tmp_path / "b2")])
    assert res.exit_code != 0 and "unknown split" in res.output


def test_passage_rerank_fuses_as_search_does():
    """``rerank:`` orders the head by the ranking core's fused score with the reranker's weight
    (what ``radsift search --rerank`` does), the rest below it in first-stage order."""
    from radsift.evaluation.systems import passage_systems as ps
    from radsift.ranking import rerank

    class First(ps.PassageSystem):
        def score(self, queries, candidates):
            return [np.array([5.0, 4.9, 1.0, 0.5, 3.0], dtype=np.float32)[:len(c)] for c in candidates]

    class Cross:
        def __init__(self, weight):
            self.weight = weight

        def score(self, query, texts):  # prefers the passage the first stage puts third
            return np.array([{"a": 0.0, "b": 0.1, "e": 1.0}[t] for t in texts], dtype=np.float32)

    pool = ["a", "b", "c", "d", "e"]
    orders = {}
    for weight in (0.0, 0.3, 1.0):
        system = ps.CrossPassages("r", Cross(weight), First(), top=3)
        system.prepare(pool)
        got = system.score(["q"], [[0, 1, 2, 3, 4]])[0]
        orders[weight] = np.argsort(-got, kind="stable").tolist()
        head = [0, 1, 4]
        positions, _ = rerank([5.0, 4.9, 3.0], Cross(weight).score("q", ["a", "b", "e"]), weight, tail=[1.0, 0.5])
        assert orders[weight] == [(head + [2, 3])[p] for p in positions]
        assert orders[weight][3:] == [2, 3]  # the tail keeps first-stage order below the head
    assert orders[0.0][:3] == [0, 1, 4] and orders[1.0][:3] == [4, 1, 0]


def test_dev_split_asks_a_question_answered_in_parts_once():
    """A document answering one question in several parts gives one development query whose gold is
    every part (as the test split has one query per (entity, aspect)); other questions stay apart."""
    from radsift.corpus.medquad_passages import dev_passage_data

    doc = MedQuADDocument(id="SeniorHealth_0000001", path=Path("x"), focus="Zorbitis",
                          qa=(QAPair("1", "information", "What is Zorbitis?", "Part one."),
                              QAPair("2", "information", "What is Zorbitis?", "Part two."),
                              QAPair("3", "treatment", "How is Zorbitis treated?", "With rest.")))
    data = dev_passage_data([doc] + _docs(2)[:2])
    assert len(data.passages) == 3 + 4
    golds = {q.texts["natural"] + "/" + q.texts["entity-aspect"]: q.gold for q in data.queries}
    assert len(data.queries) == 2 + 4
    parts = [g for t, g in golds.items() if t.startswith("What is Zorbitis?")]
    assert parts == [frozenset({0, 1})]
    assert all(len(q.gold) == 1 for q in data.queries if not q.texts["natural"].startswith("What is Zorbitis?"))
