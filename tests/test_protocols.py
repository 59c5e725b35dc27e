"""The bench's building blocks: splits, systems, ranking helpers and each protocol on tiny inputs
whose rankings (HashingEncoder cosines, BM25 term overlap) are known in advance."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from radsift.errors import ConfigError
from radsift.evaluation.errors import EvaluationError
from radsift.evaluation.protocols.base import interpolated_precision, paired_comparisons
from radsift.evaluation.protocols.category import detect_category_field, run_category
from radsift.evaluation.protocols.findings_impression import run_findings_to_impression
from radsift.evaluation.protocols.free_text import check_judgments, run_free_text
from radsift.evaluation.protocols.sentence_retrieval import run_sentence_retrieval
from radsift.evaluation.protocols.separation import run_separation
from radsift.splits import fold_findings, is_held_out, report_split
from radsift.evaluation.systems import (
    DenseSystem,
    RankedSystem,
    build_systems,
    check_specs,
    load_systems_file,
    parse_system,
)
from radsift.ranking import top_ranking
from radsift.labels.weak import Query, UniqueSentence, WeakLabels
from radsift.models.hashing import HashingEncoder
from radsift.records import Report


@pytest.fixture(scope="module")
def encoder(tmp_path_factory) -> HashingEncoder:
    # A wide vector keeps the few test words from sharing a bucket: cosines are exact word overlaps.
    return HashingEncoder(tmp_path_factory.mktemp("hashing"), dim=4096)


@pytest.fixture()
def systems(encoder):
    return build_systems(["bm25", "dense", "hybrid"], encoders={None: encoder}, progress=False)


def _cos(a: set[str], b: set[str]) -> float:
    return len(a & b) / math.sqrt(len(a) * len(b))


# ---------------------------------------------------------------------------------------------
# splits
# ---------------------------------------------------------------------------------------------
def test_report_split_is_deterministic_seeded_and_independent_of_other_ids() -> None:
    ids = [f"r{i}" for i in range(2000)]
    train, test = report_split(ids, 0.2, seed=3)
    assert report_split(ids, 0.2, seed=3) == (train, test)
    assert set(train).isdisjoint(test) and len(train) + len(test) == 2000
    assert 0.17 < len(test) / 2000 < 0.23
    # Membership depends on the id alone: a subset is split the same way.
    sub_train, sub_test = report_split(ids[::7], 0.2, seed=3)
    assert set(sub_test) == set(test) & set(ids[::7])
    assert all(is_held_out(r, 0.2, 3) for r in test)
    assert report_split(ids, 0.2, seed=4)[1] != test
    with pytest.raises(ConfigError, match="holdout-fraction"):
        report_split(ids, 1.0)


def _weak(rows: list[tuple[str, set[Query]]]) -> WeakLabels:
    sentences = [
        UniqueSentence(id=f"s{i:06d}", text=text, labels=frozenset(labels), sentence_uids=[f"r{i}::findings::0"],
                       report_ids=[f"r{i}"])
        for i, (text, labels) in enumerate(rows, 1)
    ]
    return WeakLabels(sentences=sentences, reports=len(rows), occurrences=len(rows))


YES_PTX, NO_PTX = Query("yes", "pneumothorax"), Query("no", "pneumothorax")


def test_fold_findings_matches_split_findings() -> None:
    from radsift.labels import split_findings

    weak = _weak([("a", {Query("yes", f)}) for f in ("x", "y", "z", "w", "v")] + [("b", {Query("no", "x")})])
    groups = split_findings(weak, 2, seed=0)
    for fold in (0, 1):
        train, test = fold_findings(weak, fold)
        assert test == groups[fold] and train == groups[1 - fold]
    with pytest.raises(ConfigError, match="--fold"):
        fold_findings(weak, 2)


# ---------------------------------------------------------------------------------------------
# system specs
# ---------------------------------------------------------------------------------------------
def test_parse_system_specs() -> None:
    assert parse_system("bm25").label == "bm25"
    d = parse_system("dense")
    assert (d.kind, d.model, d.label) == ("dense", None, "dense")
    h = parse_system("hybrid:runs/my-model")
    assert (h.kind, h.model, h.label) == ("hybrid", "runs/my-model", "hybrid:my-model")
    named = parse_system("mine=dense:/x/y")
    assert (named.name, named.model, named.label) == ("mine", "/x/y", "mine")
    r = parse_system("rerank:bi:cross")
    assert (r.model, r.reranker, r.first_stage) == ("bi", "cross", "dense")
    hr = parse_system("hybrid+rerank:bi:cross")
    assert (hr.kind, hr.first_stage, hr.label, hr.describe()) == (
        "rerank", "hybrid", "hybrid+rerank:cross+bi", "hybrid+rerank:bi:cross")
    with pytest.raises(ConfigError, match="unknown system"):
        parse_system("bm25+rerank:cross")
    for bad, message in (("tfidf", "unknown system"), ("bm25:x", "takes no model"), ("dense:", "empty model path")):
        with pytest.raises(ConfigError, match=message):
            parse_system(bad)


def test_missing_model_path_and_reranker_fail_naming_them(tmp_path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(ConfigError, match=f"model path does not exist: {missing}"):
        check_specs([parse_system(f"dense:{missing}")])
    rr = tmp_path / "rr"
    rr.mkdir()
    with pytest.raises(ConfigError, match=f"{rr} is not a cross-encoder folder"):
        check_specs([parse_system(f"rerank:{rr}")])
    with pytest.raises(ConfigError, match="two systems are named 'dense'"):
        check_specs([parse_system("dense"), parse_system("dense")])


def test_rerank_without_reranker_module_is_a_clear_error(tmp_path, monkeypatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "radsift.models.reranker" else real(name, *a))
    with pytest.raises(ConfigError, match="reranker is not available yet"):
        check_specs([parse_system(f"rerank:{tmp_path}")])


class FakeReranker:
    """Scores a text by minus its length: the reranked order is known in advance."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def score(self, query: str, texts):
        self.calls.append((query, list(texts)))
        return np.array([-len(t) for t in texts], dtype=np.float32)


def test_rerank_reorders_the_head_and_keeps_the_tail(encoder) -> None:
    fake = FakeReranker()
    spec = parse_system("rr=rerank:fake")
    spec = type(spec)(**{**spec.__dict__, "depth": 2})
    (system,) = build_systems([spec], encoders={None: encoder}, rerankers={"fake": fake}, progress=False)
    # Dense order for "pneumothorax": 0 (0.707), 1 (0.577), 2, 3 (zeros); the head {0, 1} is
    # reordered by length ("no pneumothorax" is shorter), the tail keeps its order below.
    ranking = system.rank(["pneumothorax"], CANDIDATES)[0]
    assert [i for i, _ in ranking] == [0, 1, 2, 3]
    assert ranking[0][1] == -len(CANDIDATES[0]) and ranking[2][1] < ranking[1][1]
    ranking = system.rank(["left"], CANDIDATES)[0]  # dense: 1 and 3 tie at 0.577 -> head [1, 3]
    assert [i for i, _ in ranking][:2] == [3, 1] and fake.calls[-1][1] == [CANDIDATES[1], CANDIDATES[3]]
    # Grouped: each report is re-scored on its best sentence.
    system.rank(["pneumothorax"], CANDIDATES, groups=[1, 0, 1, 0])
    assert fake.calls[-1][1] == [CANDIDATES[0], CANDIDATES[1]]


def test_hybrid_rerank_reranks_the_hybrid_head(encoder) -> None:
    fake = FakeReranker()
    spec = dataclasses.replace(parse_system("hr=hybrid+rerank:fake"), depth=3)
    hybrid, system = build_systems(["hybrid", spec], encoders={None: encoder}, rerankers={"fake": fake},
                                   progress=False)
    assert isinstance(system.first, RankedSystem) and system.first.mode == "hybrid"
    head = [i for i, _ in hybrid.rank(["left pneumothorax"], CANDIDATES)[0]][:3]
    ranking = system.rank(["left pneumothorax"], CANDIDATES)[0]
    # The cross-encoder saw the hybrid's top 3 (best first) and alone (weight 1) orders them by length.
    assert fake.calls[-1] == ("left pneumothorax", [CANDIDATES[i] for i in head])
    assert [i for i, _ in ranking] == sorted(head, key=lambda i: len(CANDIDATES[i])) + [2]
    # Grouped: a report is re-scored on its best sentence by the hybrid's dense side.
    system.rank(["pneumothorax"], CANDIDATES, groups=[1, 0, 1, 0])
    assert fake.calls[-1][1] == [CANDIDATES[0], CANDIDATES[1]]


def test_systems_file(tmp_path, encoder) -> None:
    f = tmp_path / "systems.yaml"
    f.write_text(f"systems:\n  - bm25\n  - name: hashed\n    kind: dense\n    model: {encoder.path.name}\n"
                 "  - fused=hybrid:default\n", encoding="utf-8")
    specs = load_systems_file(f)
    assert [s.label for s in specs] == ["bm25", "hashed", "fused"]
    assert specs[1].model == str(tmp_path / encoder.path.name)  # relative to the YAML file's folder
    bad = tmp_path / "bad.yaml"
    bad.write_text("- bm25\n- kind: dense\n  colour: red\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad.yaml: system #2: unknown keys \['colour'\]"):
        load_systems_file(bad)
    staged = tmp_path / "staged.yaml"
    staged.write_text("- {kind: rerank, reranker: rr, first_stage: hybrid, depth: 20}\n", encoding="utf-8")
    (spec,) = load_systems_file(staged)
    assert (spec.first_stage, spec.depth, spec.reranker) == ("hybrid", 20, str(tmp_path / "rr"))
    staged.write_text("- {kind: dense, first_stage: hybrid}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="staged.yaml: system #1: 'first_stage' is one of"):
        load_systems_file(staged)


def test_hashing_folder_loads_as_dense_system(encoder) -> None:
    (system,) = build_systems([f"h=dense:{encoder.path}"], progress=False)
    assert isinstance(system, DenseSystem) and system.cache.name == "hashing-encoder"


# ---------------------------------------------------------------------------------------------
# ranking
# ---------------------------------------------------------------------------------------------
def test_top_ranking_ties_by_lower_index_and_mask() -> None:
    row = np.array([0.5, 0.9, 0.5, 0.1, 0.9], dtype=np.float32)
    assert [i for i, _ in top_ranking(row, None)] == [1, 4, 0, 2, 3]
    assert [i for i, _ in top_ranking(row, 3)] == [1, 4, 0]
    assert [i for i, _ in top_ranking(row, 2, row > 0.2)] == [1, 4]
    assert [i for i, _ in top_ranking(row, None, np.array([1, 0, 1, 1, 0], bool))] == [0, 2, 3]


CANDIDATES = ["no pneumothorax", "large left pneumothorax", "heart size normal", "left pleural effusion"]


def test_dense_bm25_and_hybrid_rankings_are_the_expected_ones(systems, encoder) -> None:
    bm25, dense, hybrid = systems
    tokens = [set(t.split()) for t in ["no pneumothorax", "larg left pneumothorax", "heart size normal",
                                       "left pleural effus"]]
    q = {"pneumothorax"}
    expected = [_cos(q, t) for t in tokens]
    ranking = dense.rank(["pneumothorax"], CANDIDATES)[0]
    assert [i for i, _ in ranking] == [0, 1, 2, 3]  # 0.707, 0.577, then the two zeros by index
    assert [s for _, s in ranking] == pytest.approx([expected[i] for i, _ in ranking], abs=1e-6)
    # BM25 retrieves only candidates sharing a term; the shorter one scores higher.
    assert [i for i, _ in bm25.rank(["pneumothorax"], CANDIDATES)[0]] == [0, 1]
    assert bm25.rank(["cardiomegaly"], CANDIDATES) == [[]]
    # Hybrid = 0.75 x min-max(dense) + 0.25 x min-max(BM25), over every candidate.
    query = ["left pneumothorax"]
    ds, bs = dense.scores(query, CANDIDATES)[0], bm25.scores(query, CANDIDATES)[0]
    assert bs[2] == 0 and bs[1] > bs[0] > bs[3] > 0  # "heart size normal" shares no term
    convex = {i: 0.75 * (ds[i] - ds.min()) / (ds.max() - ds.min()) + 0.25 * bs[i] / bs.max() for i in range(4)}
    fused = hybrid.rank(query, CANDIDATES)[0]
    assert [i for i, _ in fused] == sorted(convex, key=lambda i: (-convex[i], i))
    assert [s for _, s in fused] == pytest.approx(sorted(convex.values(), reverse=True), abs=1e-6)
    assert fused[0] == (1, pytest.approx(1.0))  # best on both sides
    # hybrid-rrf = RRF of the two rankings (k = 60).
    (rrf_system,) = build_systems(["hybrid-rrf"], encoders={None: encoder}, progress=False)
    fused = rrf_system.rank(query, CANDIDATES)[0]
    d = [i for i, _ in dense.rank(query, CANDIDATES)[0]]
    b = [i for i, _ in bm25.rank(query, CANDIDATES)[0]]
    rrf = {i: sum(1 / (60 + r.index(i) + 1) for r in (d, b) if i in r) for i in set(d) | set(b)}
    assert [i for i, _ in fused] == sorted(rrf, key=lambda i: (-rrf[i], i))
    assert [s for _, s in fused] == pytest.approx(sorted(rrf.values(), reverse=True), abs=1e-6)


def test_grouped_and_excluded_ranking(systems) -> None:
    _, dense, _ = systems
    groups = [1, 0, 1, 0]  # report 0 = candidates 1 and 3, report 1 = candidates 0 and 2
    ranking = dense.rank(["pneumothorax"], CANDIDATES, groups=groups)[0]
    assert [i for i, _ in ranking] == [1, 0]
    assert ranking[0][1] == pytest.approx(1 / math.sqrt(2), abs=1e-6)  # report 1's best sentence
    assert [i for i, _ in dense.rank(["pneumothorax"], CANDIDATES, groups=groups, exclude=[[1]])[0]] == [0]


def test_interpolated_precision_textbook() -> None:
    # Relevant at ranks 1, 3 and 6 of 3 relevant: precision 1, 2/3, 1/2 at recall 1/3, 2/3, 1.
    levels = np.array([0.0, 0.3, 0.34, 0.6, 0.7, 1.0])
    got = interpolated_precision(["a", "x", "b", "y", "z", "c"], {"a", "b", "c"}, levels)
    assert got.tolist() == pytest.approx([1.0, 1.0, 2 / 3, 2 / 3, 0.5, 0.5])
    # A relevant document never retrieved: recall 1 is never reached.
    assert interpolated_precision(["a"], {"a", "b"}, np.array([0.5, 1.0])).tolist() == [1.0, 0.0]


def test_paired_comparisons_bonferroni_over_pairs() -> None:
    from radsift.evaluation.stats import paired_randomization_test

    scores = {"a": [0.9, 0.8, 0.7, 0.9, 0.6], "b": [0.1, 0.2, 0.3, 0.2, 0.1], "c": [0.5, 0.5, 0.4, 0.6, 0.5]}
    table, rows = paired_comparisons(scores, "AP")
    assert [(r["a"], r["b"]) for r in rows] == [("a", "b"), ("a", "c"), ("b", "c")]
    raw = paired_randomization_test(scores["a"], scores["b"]).p_value
    assert rows[0]["p"] == raw and rows[0]["p_bonferroni"] == min(1.0, 3 * raw)
    assert "m = 3" in table.title


# ---------------------------------------------------------------------------------------------
# Shi et al. protocols on hand-made weak labels
# ---------------------------------------------------------------------------------------------
def test_sentence_retrieval_and_separation_known_values(systems) -> None:
    weak = _weak([("no pneumothorax", {NO_PTX}), ("large left pneumothorax", {YES_PTX}), ("heart size normal", set())])
    res = run_sentence_retrieval(weak, systems, fold_groups=[{"pneumothorax"}, set()])
    summary = res.data["summary"]["dense"]
    # "pneumothorax": the negated sentence ranks first (0.707 > 0.577): AP 1/2, recall@1 0.
    # "no pneumothorax": its sentence ranks first: AP 1, recall 1.
    assert summary["positive"]["map"]["mean"] == pytest.approx(0.5)
    assert summary["negative"]["map"]["mean"] == pytest.approx(1.0)
    assert summary["all"]["map"]["mean"] == pytest.approx(0.75)
    assert summary["all"]["recall@R"]["mean"] == pytest.approx(0.5)
    assert res.data["per_query"]["bm25"].keys() == res.data["per_query"]["dense"].keys() == {
        "no:pneumothorax", "yes:pneumothorax"}
    assert [row[0] for row in res.tables[-1].rows] == [0, 0, 0, 1, 1, 1]  # per-fold table
    sep = run_separation(weak, systems)
    d = sep.data["systems"]["dense"]
    no_entry = 1 - 1 / math.sqrt(2)  # cos(no ptx, s) − cos(ptx, s) for "no pneumothorax"
    yes_entry = 1 / math.sqrt(3) - 1 / math.sqrt(6)  # for "large left pneumothorax"
    assert d["all"]["mean"] == pytest.approx((no_entry + yes_entry) / 2, abs=1e-6)
    assert d["all"]["std"] == pytest.approx(abs(no_entry - yes_entry) / math.sqrt(2), abs=1e-6)
    assert d["negative"]["mean"] == pytest.approx(no_entry, abs=1e-6)
    assert d["all"]["positive_share"] == 1.0
    assert sep.data["systems"]["bm25"] is None and sep.data["systems"]["hybrid"] is None


def test_fold_limits_the_queries(systems) -> None:
    weak = _weak([("no pneumothorax", {NO_PTX}), ("left pleural effusion", {Query("yes", "pleural effusion")})])
    res = run_sentence_retrieval(weak, systems, fold_groups=[{"pleural effusion"}, {"pneumothorax"}], fold=1)
    assert set(res.data["per_query"]["dense"]) == {"no:pneumothorax"}


# ---------------------------------------------------------------------------------------------
# RadSearch protocols on hand-made reports
# ---------------------------------------------------------------------------------------------
def _reports(n: int, make) -> list[Report]:
    return [make(i) for i in range(n)]


def test_findings_to_impression_counts_identical_impressions_as_one_candidate(systems) -> None:
    words = ["pneumothorax", "effusion", "cardiomegaly", "edema", "nodule", "fracture", "atelectasis", "granuloma"]

    def make(i: int) -> Report:
        word = words[i % len(words)]
        # Reports i and i + 8 share an impression text (differently cased): one candidate.
        imp = f"{word} seen." if i < len(words) else f"{word.upper()} SEEN"
        return Report(f"r{i}", {"findings": f"There is {word}.", "impression": imp})

    reports = _reports(400, make)
    res = run_findings_to_impression(reports, systems, holdout_fraction=0.3, seed=1)
    held = [r for r in reports if is_held_out(r.id, 0.3, 1)]
    assert res.data["queries"] == len(held)
    assert res.data["candidates"] == len({int(r.id[1:]) % len(words) for r in held})
    for name in ("bm25", "dense", "hybrid"):
        top1 = res.data["summary"][name]["top1"]
        assert top1["rate"] == 1.0 and top1["matched"] == len(held)
        assert top1["high"] == 1.0 and top1["low"] < 1.0
    assert {t["p"] for t in res.data["mcnemar"]} == {1.0}


def test_free_text_protocol_and_bad_qrels(systems) -> None:
    findings = ["pleural effusion", "pneumothorax", "cardiomegaly"]
    reports = _reports(30, lambda i: Report(f"r{i}", {"findings": f"There is {findings[i % 3]}. Bones intact."}))
    queries = {"q1": "pleural effusion", "q2": "pneumothorax", "q3": "never judged"}
    qrels = {"q1": {f"r{i}": 1 for i in range(0, 30, 3)}, "q2": {f"r{i}": 1 for i in range(1, 30, 3)}}
    res = run_free_text(reports, systems, queries, qrels)
    for name in ("bm25", "dense", "hybrid"):
        s = res.data["summary"][name]
        assert s["p@10_pooled"]["rate"] == 1.0 and s["p@10_pooled"]["decisions"] == 20
        assert s["p@10_per_query"]["mean"] == 1.0 and s["map"]["mean"] == 1.0
    assert res.data["unjudged_queries"] == ["q3"]
    with pytest.raises(EvaluationError, match=r"qrels.trec: document 'r99' \(query 'q1'\) is not a report id"):
        check_judgments(queries, {"q1": {"r99": 1}}, {r.id for r in reports}, "queries.tsv", "qrels.trec")
    with pytest.raises(EvaluationError, match="query 'q9' is not in queries.tsv"):
        check_judgments(queries, {"q9": {"r1": 1}}, {r.id for r in reports}, "queries.tsv", "qrels.trec")


def test_free_text_pooled_precision_counts_missing_slots(systems) -> None:
    reports = _reports(20, lambda i: Report(f"r{i}", {"findings": "pneumothorax." if i < 3 else "heart normal."}))
    res = run_free_text(reports, systems[:1], {"q": "pneumothorax"}, {"q": {"r0": 1, "r1": 1, "r2": 1}})
    pooled = res.data["summary"]["bm25"]["p@10_pooled"]
    # BM25 retrieves only the 3 matching reports: 3 relevant of 10 slots.
    assert pooled["relevant"] == 3 and pooled["rate"] == pytest.approx(0.3)
    from radsift.evaluation.stats import wilson_interval

    assert (pooled["low"], pooled["high"]) == wilson_interval(3, 10)


def test_category_relevance_is_by_category_not_text(systems) -> None:
    bm25, dense, _ = systems
    reports = [
        Report("a", {"text": "knee pain meniscus"}, {"specialty": "ortho"}),
        Report("b", {"text": "knee pain meniscus"}, {"specialty": "radiology"}),  # same text, other category
        Report("c", {"text": "meniscus tear knee"}, {"specialty": "ortho"}),
        Report("d", {"text": "chest pain heart"}, {"specialty": "cardio"}),
        Report("e", {"text": "heart failure"}, {"specialty": "cardio"}),
    ]
    assert detect_category_field(reports) == "specialty"
    res = run_category(reports, [dense], field="specialty", holdout_fraction=0.99, seed=0)
    per_query = res.data["per_query"]["dense"]
    # Query "a": "b" (equal text) is removed, "c" (same category) ranks first: AP 1.
    assert per_query["a"]["map"] == 1.0
    # Query "b" (radiology): no other radiology report: dropped, not scored.
    assert "b" not in per_query and res.data["dropped_queries"] == 1
    # Query "d": "e" shares "heart" (cos 1/sqrt 6) and ranks first among the others: AP 1.
    assert per_query["d"]["map"] == 1.0
    assert res.data["summary"]["dense"]["map"]["n"] == len(per_query)


def test_negation_aware_systems_rank_opposite_readings_last(encoder) -> None:
    plain, aware, hybrid = build_systems(["bm25", "bm25+negation", "hybrid+negation"], encoders={None: encoder},
                                         progress=False)
    assert aware.name == "bm25+negation"
    assert parse_system("hybrid+negation:m").negation and parse_system("hybrid+negation:m").label == "hybrid+negation:m"
    # BM25 alone ranks the short "no pneumothorax" first; the negation-aware system ranks it last.
    assert [i for i, _ in plain.rank(["pneumothorax"], CANDIDATES)[0]][0] == 0
    assert [i for i, _ in aware.rank(["pneumothorax"], CANDIDATES)[0]] == [1, 0]
    assert [i for i, _ in hybrid.rank(["pneumothorax"], CANDIDATES)[0]][-1] == 0
    # and the other way round for a negative query
    assert [i for i, _ in aware.rank(["no pneumothorax"], CANDIDATES)[0]][-1] == 1
    assert "circular" in hybrid.describe()
    with pytest.raises(ConfigError, match="unknown system"):
        parse_system("rerank+negation:x")
