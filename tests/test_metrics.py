"""Ranking metrics: textbook examples, agreement with ranx on random runs, and `radsift eval`."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from radsift.cli import app
from radsift.evaluation import EvaluationError, evaluate, parse_metric, read_qrels, read_run, write_qrels, write_run
from radsift.evaluation.metrics import (
    DEFAULT_METRICS,
    average_precision,
    hit_rate,
    ndcg,
    precision,
    recall,
    recall_at_r,
    reciprocal_rank,
)

# ---------------------------------------------------------------------------------------------
# Textbook / hand-computed examples
# ---------------------------------------------------------------------------------------------
# Relevant documents r1..r4; the ranking finds r1, r2, r3 at ranks 1, 3 and 6, never r4.
RANKED = ["r1", "n1", "r2", "n2", "n3", "r3"]
QRELS = {"r1": 1, "r2": 1, "r3": 1, "r4": 1, "n1": 0, "n9": 0}


def test_average_precision_by_hand():
    # (1/1 + 2/3 + 3/6) / 4 relevant documents
    assert average_precision(RANKED, QRELS) == pytest.approx((1 + 2 / 3 + 3 / 6) / 4, abs=1e-15)
    assert average_precision(RANKED, QRELS, k=3) == pytest.approx((1 + 2 / 3) / 4, abs=1e-15)
    assert average_precision(["n1", "n2"], QRELS) == 0.0
    assert average_precision(RANKED, {"n1": 0}) == 0.0  # no relevant document
    assert average_precision([], QRELS) == 0.0
    assert average_precision(["r1", "r2", "r3", "r4"], QRELS) == 1.0


def test_precision_by_hand():
    assert precision(RANKED, QRELS, k=1) == 1.0
    assert precision(RANKED, QRELS, k=5) == pytest.approx(2 / 5)
    # Fewer than k retrieved: the divisor is still k (trec_eval, ranx).
    assert precision(RANKED, QRELS, k=10) == pytest.approx(3 / 10)
    assert precision(RANKED, QRELS) == pytest.approx(3 / 6)  # no cutoff: the ranking's length
    assert precision([], QRELS) == 0.0


def test_recall_by_hand():
    assert recall(RANKED, QRELS, k=3) == pytest.approx(2 / 4)
    assert recall(RANKED, QRELS, k=100) == pytest.approx(3 / 4)
    assert recall(RANKED, QRELS) == pytest.approx(3 / 4)
    assert recall(RANKED, {"x": 0}) == 0.0


def test_recall_at_r_is_shi_et_al_recall():
    # R = 4 relevant: the top 4 hold r1 and r2.
    assert recall_at_r(RANKED, QRELS) == pytest.approx(2 / 4)
    # Retrieving every relevant item within the top R gives 1, one rank too late does not.
    assert recall_at_r(["r2", "r1"], {"r1": 1, "r2": 1}) == 1.0
    assert recall_at_r(["n", "r1", "r2"], {"r1": 1, "r2": 1}) == 0.5
    assert recall_at_r(RANKED, {}) == 0.0


def test_reciprocal_rank_and_hit_rate_by_hand():
    assert reciprocal_rank(["n1", "n2", "r2"], QRELS) == pytest.approx(1 / 3)
    assert reciprocal_rank(["n1", "n2", "r2"], QRELS, k=2) == 0.0
    assert reciprocal_rank(["n1"], QRELS) == 0.0
    assert hit_rate(["n1", "n2", "r2"], QRELS, k=3) == 1.0
    assert hit_rate(["n1", "n2", "r2"], QRELS, k=2) == 0.0


def test_ndcg_wikipedia_example():
    # en.wikipedia.org/wiki/Discounted_cumulative_gain: gains 3,2,3,0,1,2 in rank order,
    # two more relevant documents (3 and 2) not retrieved; DCG6 = 6.861, IDCG6 = 8.740,
    # nDCG6 = 0.785.
    ranked = ["d1", "d2", "d3", "d4", "d5", "d6"]
    qrels = {"d1": 3, "d2": 2, "d3": 3, "d4": 0, "d5": 1, "d6": 2, "d7": 3, "d8": 2}
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate([3, 2, 3, 0, 1, 2]))
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate([3, 3, 3, 2, 2, 2]))
    assert dcg == pytest.approx(6.861, abs=5e-4) and idcg == pytest.approx(8.740, abs=5e-4)
    assert ndcg(ranked, qrels, k=6) == pytest.approx(dcg / idcg, abs=1e-15)
    assert ndcg(ranked, qrels, k=6) == pytest.approx(0.785, abs=5e-4)
    # Without a cutoff the ideal ranking holds all 7 relevant documents.
    full_ideal = sum(g / math.log2(i + 2) for i, g in enumerate([3, 3, 3, 2, 2, 2, 1]))
    assert ndcg(ranked, qrels) == pytest.approx(dcg / full_ideal, abs=1e-15)
    assert ndcg(["d4", "x"], qrels, k=2) == 0.0
    assert ndcg(ranked, {"d4": 0}) == 0.0


def test_cutoff_must_be_positive():
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="cutoff k"):
            precision(RANKED, QRELS, k=bad)


# ---------------------------------------------------------------------------------------------
# evaluate(): conventions and input forms
# ---------------------------------------------------------------------------------------------
def test_evaluate_conventions():
    qrels = {
        "answered": {"r1": 1, "r2": 1, "r3": 1, "r4": 1, "n1": 0},
        "unanswered": {"a": 1},  # no run entry: scores 0 and counts in the mean
        "nothing-relevant": {"z": 0},  # judged, none relevant: scores 0 and counts
    }
    run = {
        "answered": [(d, 1.0 - i / 10) for i, d in enumerate(RANKED)],
        "not-judged": [("r1", 1.0)],  # not in qrels: ignored
        "nothing-relevant": [("z", 1.0)],
    }
    per_query, mean = evaluate(qrels, run, ["map", "p@5", "r@3", "mrr", "recall@R"])
    assert list(per_query) == ["answered", "unanswered", "nothing-relevant"]
    assert per_query["answered"] == pytest.approx(
        {"map": (1 + 2 / 3 + 3 / 6) / 4, "p@5": 2 / 5, "r@3": 2 / 4, "mrr": 1.0, "recall@R": 2 / 4}
    )
    assert set(per_query["unanswered"].values()) == {0.0}
    assert set(per_query["nothing-relevant"].values()) == {0.0}
    assert mean["map"] == pytest.approx((1 + 2 / 3 + 3 / 6) / 4 / 3)
    assert mean["mrr"] == pytest.approx(1 / 3)


def test_evaluate_defaults_to_the_five_issue_metrics():
    per_query, mean = evaluate({"q": {"a": 1}}, {"q": [("a", 1.0)]})
    assert tuple(mean) == DEFAULT_METRICS == ("map", "p@10", "r@100", "ndcg@10", "mrr")
    assert mean == {"map": 1.0, "p@10": 0.1, "r@100": 1.0, "ndcg@10": 1.0, "mrr": 1.0}


def test_evaluate_accepts_pairs_mappings_and_ranked_lists_alike():
    qrels = {"q": {"b": 2, "c": 1, "e": 1}}
    pairs = [("a", 0.1), ("c", 0.9), ("b", 0.5), ("d", 0.5), ("e", 0.05)]
    ranked = ["c", "d", "b", "a", "e"]  # ties (b, d) broken by docid descending, as trec_eval
    metrics = ["map", "ndcg@3", "p@2", "mrr"]
    by_pairs = evaluate(qrels, {"q": pairs}, metrics)
    assert by_pairs == evaluate(qrels, {"q": dict(pairs)}, metrics)
    assert by_pairs == evaluate(qrels, {"q": ranked}, metrics)
    assert by_pairs == evaluate(qrels, {"q": np.array(ranked)}, metrics)
    assert by_pairs != evaluate(qrels, {"q": ["c", "b", "d", "a", "e"]}, metrics)


def test_evaluate_is_unchanged_by_a_trec_round_trip(tmp_path):
    rng = random.Random(5)
    docs = [f"D{i}" for i in range(60)]
    qrels = {f"q{i}": {d: rng.choice([0, 1, 2]) for d in rng.sample(docs, 8)} for i in range(12)}
    # Rounded scores make ties, which the file must rank exactly as memory does.
    run = {q: [(d, round(rng.random(), 1)) for d in rng.sample(docs, 30)] for q in qrels}
    write_run(tmp_path / "run.trec", run, tag="t")
    write_qrels(tmp_path / "qrels.trec", qrels)
    metrics = ["map", "ndcg@10", "p@5", "mrr", "recall@R"]
    assert evaluate(read_qrels(tmp_path / "qrels.trec"), read_run(tmp_path / "run.trec"), metrics) == evaluate(
        qrels, run, metrics
    )


@pytest.mark.parametrize(
    "name, kind, k, label",
    [
        ("map", "map", None, "mAP"),
        ("MAP@100", "map", 100, "mAP@100"),
        ("p@10", "p", 10, "P@10"),
        ("precision@5", "p", 5, "P@5"),
        ("r@100", "r", 100, "R@100"),
        ("ndcg@10", "ndcg", 10, "nDCG@10"),
        ("mrr", "mrr", None, "MRR"),
        ("hit_rate@5", "hit", 5, "Hit@5"),
        ("recall@R", "recall@R", None, "Recall@R"),
        ("r-precision", "recall@R", None, "Recall@R"),
    ],
)
def test_parse_metric(name, kind, k, label):
    metric = parse_metric(name)
    assert (metric.name, metric.kind, metric.k, metric.label) == (name, kind, k, label)


@pytest.mark.parametrize(
    "name, fragment",
    [("f1", "unknown metric 'f1'"), ("p@0", "not a positive integer"), ("p@ten", "not a positive integer"),
     ("p@", "missing cutoff"), ("rprec@5", "takes no cutoff")],
)
def test_parse_metric_errors(name, fragment):
    with pytest.raises(EvaluationError, match=fragment):
        parse_metric(name)


def test_evaluate_rejects_bad_runs():
    with pytest.raises(EvaluationError, match="document 'a' is ranked twice"):
        evaluate({"q": {"a": 1}}, {"q": [("a", 1.0), ("a", 0.5)]})
    with pytest.raises(EvaluationError, match="document 'a' is ranked twice"):
        evaluate({"q": {"a": 1}}, {"q": ["a", "b", "a"]})
    with pytest.raises(EvaluationError, match=r"must be a \(docid, score\) pair"):
        evaluate({"q": {"a": 1}}, {"q": [("a", 1.0, "extra")]})
    with pytest.raises(EvaluationError, match="NaN"):
        evaluate({"q": {"a": 1}}, {"q": [("a", float("nan"))]})
    with pytest.raises(EvaluationError, match="qrels hold no query"):
        evaluate({}, {"q": [("a", 1.0)]})
    with pytest.raises(EvaluationError, match="no metric"):
        evaluate({"q": {"a": 1}}, {"q": [("a", 1.0)]}, [])


# ---------------------------------------------------------------------------------------------
# Agreement with ranx on random qrels and runs
# ---------------------------------------------------------------------------------------------
# ours -> ranx's name for the same metric
RANX_NAMES = {
    "map": "map",
    "map@10": "map@10",
    "p@1": "precision@1",
    "p@10": "precision@10",
    "p": "precision",
    "r@5": "recall@5",
    "r@100": "recall@100",
    "r": "recall",
    "ndcg@10": "ndcg@10",
    "ndcg@3": "ndcg@3",
    "ndcg": "ndcg",
    "mrr": "mrr",
    "mrr@5": "mrr@5",
    "recall@R": "r-precision",
    "hit@5": "hit_rate@5",
}


def _random_case(seed: int = 20240611):
    rng = random.Random(seed)
    docs = [f"doc{i:04d}" for i in range(400)]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for i in range(48):
        qid = f"q{i:02d}"
        judged = rng.sample(docs, rng.randint(1, 40))
        grades = [0] if i % 11 == 0 else [0, 1, 1, 2, 3]  # some queries with nothing relevant
        qrels[qid] = {d: rng.choice(grades) for d in judged}
        if i % 9 == 4:
            continue  # a qrels query the run does not answer
        depth = rng.choice([1, 3, 8, 15, 60, 150])
        relevant = [d for d in judged if qrels[qid][d] > 0]
        pool = list(dict.fromkeys(rng.sample(relevant, min(len(relevant), depth // 2)) + rng.sample(docs, depth)))
        ranked = pool[:depth]
        rng.shuffle(ranked)
        scores = rng.sample(range(10**6), len(ranked))  # distinct: ranx's sort is not stable on ties
        run[qid] = {d: s / 1e3 for d, s in zip(ranked, scores)}
    run["unjudged-query"] = {"doc0001": 1.0, "doc0002": 0.5}  # not in qrels: ignored by both
    return qrels, run


#: ranx in a child process with numba's JIT off: compiling ranx's metrics took 35-50 s of every fresh CI run, and
#: on 48 queries the plain Python of the same functions answers in about a second.
RANX_CHILD = """
import json, sys, warnings
import ranx
case = json.load(sys.stdin)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    run = ranx.Run(case["run"])
    ranx.evaluate(ranx.Qrels(case["qrels"]), run, case["metrics"], return_mean=False, make_comparable=True)
json.dump({"scores": {m: dict(run.scores[m]) for m in case["metrics"]}, "means": run.mean_scores}, sys.stdout)
"""


def _ranx_scores(qrels, run, metrics: list[str]) -> dict:
    """ranx's per-query scores and means (``{"scores": {metric: {qid: score}}, "means": {metric: mean}}``)."""
    import ranx  # noqa: F401  in the dev extra (make test installs it): a missing ranx is a failure, not a skip
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    out = subprocess.run([sys.executable, "-c", RANX_CHILD], input=json.dumps(
        {"qrels": qrels, "run": run, "metrics": metrics}), env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def ranx_case():
    """Our per-query scores and ranx's on one random case."""
    qrels, run = _random_case()
    ranx_out = _ranx_scores(qrels, run, list(RANX_NAMES.values()))
    theirs = {ours: ranx_out["scores"][name] for ours, name in RANX_NAMES.items()}
    ours_per_query, ours_mean = evaluate(qrels, {q: list(e.items()) for q, e in run.items()}, list(RANX_NAMES))
    return qrels, ours_per_query, ours_mean, theirs, ranx_out["means"]


def test_case_covers_the_edge_cases(ranx_case):
    qrels, per_query, _, _, _ = ranx_case
    _, run = _random_case()
    assert any(q not in run for q in qrels)
    assert any(all(r <= 0 for r in j.values()) for j in qrels.values())
    assert any(len(run[q]) < 10 for q in run) and any(len(run[q]) > 100 for q in run)
    assert any(max(j.values()) >= 2 for j in qrels.values())  # graded relevance reaches nDCG
    assert 0.05 < sum(s["map"] for s in per_query.values()) / len(per_query) < 0.95  # not degenerate


@pytest.mark.parametrize("metric", list(RANX_NAMES))
def test_per_query_scores_match_ranx(ranx_case, metric):
    qrels, ours, _, theirs, _ = ranx_case
    assert set(theirs[metric]) == set(qrels) == set(ours)
    for qid in qrels:
        assert ours[qid][metric] == pytest.approx(theirs[metric][qid], abs=1e-9), (metric, qid)


@pytest.mark.parametrize("metric", list(RANX_NAMES))
def test_means_match_ranx(ranx_case, metric):
    _, _, ours_mean, _, ranx_mean = ranx_case
    assert ours_mean[metric] == pytest.approx(ranx_mean[RANX_NAMES[metric]], abs=1e-9)


# ---------------------------------------------------------------------------------------------
# radsift eval
# ---------------------------------------------------------------------------------------------
runner = CliRunner()


def _says(result, text: str) -> bool:
    """Whether the output holds ``text``, ignoring whitespace (rich wraps long paths at 80 columns)."""
    return "".join(text.split()) in "".join(result.output.split())


@pytest.fixture()
def trec_files(tmp_path):
    qrels = tmp_path / "qrels.trec"
    run = tmp_path / "run.trec"
    write_qrels(qrels, {"q1": {"r1": 1, "r2": 1, "r3": 1, "r4": 1}, "q2": {"x": 2}, "q3": {"y": 1}})
    write_run(run, {"q1": [(d, 1.0 - i / 10) for i, d in enumerate(RANKED)], "q2": [("x", 0.3)], "q9": [("y", 1.0)]},
              tag="test")
    return qrels, run


def test_eval_prints_a_table_per_query_and_mean(trec_files):
    qrels, run = trec_files
    result = runner.invoke(app, ["eval", "--qrels", str(qrels), "--run", str(run)])
    assert result.exit_code == 0, result.output
    for header in ("mAP", "P@10", "R@100", "nDCG@10", "MRR"):
        assert header in result.output
    rows = {line.split("│")[1].strip(): line for line in result.output.splitlines() if line.count("│") >= 6}
    assert {"q1", "q2", "q3", "mean (3 queries)"} <= set(rows)
    q1_map = f"{(1 + 2 / 3 + 3 / 6) / 4:.4f}"
    assert q1_map in rows["q1"]
    assert f"{((1 + 2 / 3 + 3 / 6) / 4 + 1.0) / 3:.4f}" in rows["mean (3 queries)"]
    assert "1 qrels queries have no run line" in result.output
    assert "1 run queries are not in the qrels" in result.output


def test_eval_json(trec_files):
    qrels, run = trec_files
    result = runner.invoke(app, ["eval", "--qrels", str(qrels), "--run", str(run), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["queries"] == 3 and data["metrics"] == list(DEFAULT_METRICS)
    assert data["per_query"]["q1"]["map"] == pytest.approx((1 + 2 / 3 + 3 / 6) / 4)
    assert data["per_query"]["q2"] == {"map": 1.0, "p@10": 0.1, "r@100": 1.0, "ndcg@10": 1.0, "mrr": 1.0}
    assert data["mean"]["mrr"] == pytest.approx(2 / 3)
    assert data["unanswered_queries"] == ["q3"] and data["unjudged_queries"] == ["q9"]

    brief = runner.invoke(app, ["eval", "--qrels", str(qrels), "--run", str(run), "--json", "--no-per-query"])
    assert brief.exit_code == 0 and "per_query" not in json.loads(brief.stdout)
    table = runner.invoke(app, ["eval", "--qrels", str(qrels), "--run", str(run), "--no-per-query"])
    assert "mean (3 queries)" in table.output and "│ q1" not in table.output


def test_eval_errors_name_the_file_and_line(trec_files, tmp_path):
    qrels, run = trec_files
    missing = tmp_path / "missing.trec"
    result = runner.invoke(app, ["eval", "--qrels", str(qrels), "--run", str(missing)])
    assert result.exit_code == 2 and _says(result, "missing.trec: no such file")

    bad = tmp_path / "bad.trec"
    bad.write_text("q1 Q0 a 1 0.5 t\nq1 Q0 b 2 0.4\n")
    result = runner.invoke(app, ["eval", "--qrels", str(qrels), "--run", str(bad)])
    assert result.exit_code == 2 and _says(result, "bad.trec:2: expected 6 columns")

    other = tmp_path / "other.trec"
    write_run(other, {"Q-1": [("r1", 1.0)]}, tag="t")
    result = runner.invoke(app, ["eval", "--qrels", str(qrels), "--run", str(other)])
    assert result.exit_code == 2
    assert _says(result, "other.trec: no query in common with") and _says(result, "qrels.trec")
