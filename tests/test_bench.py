"""``radsift bench`` end to end on the demo corpus, with a HashingEncoder whose rankings are known,
and its refusals of bad input (each naming what is wrong, before the slow work)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from radsift.cli import app
from radsift.corpus import ReaderOptions
from radsift.demo import write_demo_corpus
from radsift.errors import ConfigError, RadsiftError
from radsift.evaluation import evaluate
from radsift.evaluation.bench import BenchConfig, bench, run_bench
from radsift.evaluation.errors import TrecFormatError
from radsift.splits import fold_findings
from radsift.models.hashing import HashingEncoder

runner = CliRunner()
READER = ["--format", "csv", "--id-column", "uid", "--section", "findings=findings", "--section", "impression=impression"]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return write_demo_corpus(tmp_path_factory.mktemp("demo"), n=200, seed=11)


@pytest.fixture(scope="module")
def encoder(tmp_path_factory) -> HashingEncoder:
    return HashingEncoder(tmp_path_factory.mktemp("hash-model"), dim=1024)


def _options() -> ReaderOptions:
    return ReaderOptions.from_cli(format="csv", id_column="uid", sections=["findings=findings", "impression=impression"],
                                  text_column=None, on_error="fail")


@pytest.fixture(scope="module")
def full_run(demo, encoder, tmp_path_factory):
    out = tmp_path_factory.mktemp("bench-out")
    config = BenchConfig(corpus=[demo.reports_csv], reader=_options(), systems=["bm25", "dense", "hybrid"],
                         queries=demo.queries, qrels=demo.qrels, progress=False)
    lines: list[str] = []
    result, paths = bench(config, out, encoders={None: encoder}, log=lines.append)
    return result, paths, out, lines


def test_every_protocol_runs_and_the_report_is_written(full_run) -> None:
    result, paths, out, lines = full_run
    ran = {p.key: p for p in result.protocols}
    assert ran["cross_collection"].skipped == "no --cross-corpus given"
    for key in ("shi_sentence_retrieval", "embedding_separation", "findings_to_impression", "free_text_queries",
                "category_matching"):
        assert not ran[key].skipped, key
    assert result.corpus["category_field"] == "exam"  # detected in the demo's metadata
    md = paths["markdown"].read_text(encoding="utf-8")
    for p in result.protocols:
        assert f"## {p.title}" in md
    for name in ("pr_sentences", "finding_ap", "separation", "match_rates", "pr_free_text"):
        png = out / f"{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
        assert f"]({name}.png)" in md
    doc = json.loads(paths["json"].read_text(encoding="utf-8"))
    assert [p["key"] for p in doc["protocols"]] == [p.key for p in result.protocols]
    assert doc["systems"][1]["name"] == "dense" and "hashing-encoder" in doc["systems"][1]["description"]
    assert any(line.startswith("[1/6] sentences") for line in lines)


def test_every_system_sees_the_same_queries(full_run) -> None:
    result = full_run[0]
    for key in ("shi_sentence_retrieval", "free_text_queries", "category_matching"):
        per_query = result.protocol(key).data["per_query"]
        keys = [list(v) for v in per_query.values()]
        assert len(keys) == 3 and keys[0] == keys[1] == keys[2], key


def test_free_text_numbers_match_an_independent_ranking(full_run, demo, encoder) -> None:
    """Rank the demo reports by best-sentence cosine by hand and score with evaluate(): same numbers."""
    from radsift.corpus import read_corpus
    from radsift.evaluation import read_qrels, read_queries
    from radsift.text import report_sentences

    reports = [r for r in read_corpus([demo.reports_csv], _options()) if not r.is_empty]
    queries, qrels = read_queries(demo.queries), read_qrels(demo.qrels)
    run = {}
    for qid, text in queries.items():
        q = encoder.encode([text])[0]
        scored = []
        for r in reports:
            sentences = [s.text for s in report_sentences(r)]
            scored.append((r.id, float((encoder.encode(sentences) @ q).max())))
        # The bench breaks ties by corpus order (equal sentences score equally in many reports).
        order = sorted(range(len(scored)), key=lambda i: (-round(scored[i][1], 5), i))
        run[qid] = [scored[i][0] for i in order]
    judged = {q: qrels[q] for q in queries if q in qrels}
    per_query, mean = evaluate(judged, run, ["p@10", "map"])
    got = full_run[0].protocol("free_text_queries").data["summary"]["dense"]
    # float32 sums may order scores equal to 5 decimals differently: allow one swap at rank 10.
    assert got["p@10_per_query"]["mean"] == pytest.approx(mean["p@10"], abs=0.5 / len(judged) / 10 * 2)
    assert got["map"]["mean"] == pytest.approx(mean["map"], abs=0.005)
    assert got["p@10_pooled"]["rate"] == pytest.approx(got["p@10_per_query"]["mean"], abs=1e-12)


def test_fold_evaluates_only_the_test_findings(demo, encoder, tmp_path) -> None:
    config = BenchConfig(corpus=[demo.reports_csv], reader=_options(), systems=["bm25"], fold=1,
                         protocols=["sentences", "separation"], progress=False)
    result = run_bench(config, encoders={None: encoder}, log=lambda m: None)
    from radsift.corpus import read_corpus
    from radsift.labels import build_weak_labels

    weak = build_weak_labels([r for r in read_corpus([demo.reports_csv], _options()) if not r.is_empty],
                             progress=False)
    _, test = fold_findings(weak, 1)
    qids = set(result.protocol("shi_sentence_retrieval").data["per_query"]["bm25"])
    assert qids and {q.finding for q in weak.queries if q.qid in qids} <= test
    assert qids == {q.qid for q in weak.queries if q.finding in test}
    sep = result.protocol("embedding_separation")
    assert sep.data["entries"] == sum(1 for s in weak.sentences for q in s.labels if q.finding in test)


def test_cross_collection_over_another_demo_corpus(demo, encoder, tmp_path) -> None:
    other = write_demo_corpus(tmp_path / "other", n=60, seed=5)
    config = BenchConfig(corpus=[demo.reports_csv], reader=_options(), systems=["bm25", "dense"],
                         cross_corpus=[other.reports_csv], cross_reader=_options(), cross_where=["exam=XR CHEST PA AND LATERAL"],
                         protocols=["cross"], progress=False)
    result = run_bench(config, encoders={None: encoder}, log=lambda m: None)
    cross = result.protocol("cross_collection")
    assert not cross.skipped
    assert cross.data["reports"] < 60 and 0 < cross.data["queries"] <= cross.data["queries_asked"]


# ---------------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------------
def test_cli_bench_writes_the_report(demo, encoder, tmp_path) -> None:
    out = tmp_path / "report"
    result = runner.invoke(app, ["bench", "--corpus", str(demo.reports_csv), *READER, "--systems", "bm25",
                                 "--systems", f"hashed=dense:{encoder.path}", "--queries", str(demo.queries),
                                 "--qrels", str(demo.qrels), "--protocol", "impression", "--protocol", "free-text",
                                 "--holdout-fraction", "0.3", "--out", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads((out / "report.json").read_text())
    assert [s["name"] for s in doc["systems"]] == ["bm25", "hashed"]
    f2i = next(p for p in doc["protocols"] if p["key"] == "findings_to_impression")
    assert f2i["data"]["holdout_fraction"] == 0.3
    assert "Top-k match rate" in result.output and (out / "match_rates.png").exists()


def _cli_error(args: list[str]) -> str:
    result = runner.invoke(app, ["bench", *args])
    assert result.exit_code == 2, result.output
    return " ".join(result.output.split())


def test_cli_missing_model_path_is_named(demo, tmp_path) -> None:
    missing = tmp_path / "models" / "nope"
    out = _cli_error(["--corpus", str(demo.reports_csv), *READER, "--systems", f"dense:{missing}",
                      "--out", str(tmp_path / "o")])
    assert "model path does not exist" in out and "nope" in out


def test_cli_qrels_id_not_in_corpus_is_named(demo, tmp_path) -> None:
    qrels = tmp_path / "qrels.trec"
    qrels.write_text("q01 0 demo-99999 1\n", encoding="utf-8")
    out = _cli_error(["--corpus", str(demo.reports_csv), *READER, "--systems", "bm25", "--queries", str(demo.queries),
                      "--qrels", str(qrels), "--protocol", "free-text", "--out", str(tmp_path / "o")])
    assert "demo-99999" in out and "qrels.trec" in out and "not a report id" in out


def test_cli_empty_query_file_is_named(demo, tmp_path) -> None:
    empty = tmp_path / "empty.tsv"
    empty.write_text("", encoding="utf-8")
    out = _cli_error(["--corpus", str(demo.reports_csv), *READER, "--queries", str(empty), "--qrels", str(demo.qrels),
                      "--out", str(tmp_path / "o")])
    assert "empty.tsv" in out and "no queries" in out


def test_bad_options_fail_before_reading(demo, tmp_path) -> None:
    lines: list[str] = []
    cases = [
        (BenchConfig(corpus=[demo.reports_csv], systems=[f"dense:{tmp_path / 'gone'}"]), "model path does not exist"),
        (BenchConfig(corpus=[demo.reports_csv], systems=["bm25"], queries=demo.queries), "--queries and --qrels"),
        (BenchConfig(corpus=[demo.reports_csv], systems=["bm25"], fold=2), "--fold"),
        (BenchConfig(corpus=[demo.reports_csv], systems=["bm25"], holdout_fraction=0), "--holdout-fraction"),
        (BenchConfig(corpus=[demo.reports_csv], systems=["bm25"], protocols=["tables"]), "unknown protocol 'tables'"),
        (BenchConfig(corpus=[tmp_path / "nothing.csv"], systems=["bm25"]), "nothing.csv: no such file"),
    ]
    for config, message in cases:
        with pytest.raises(RadsiftError, match=message):
            run_bench(config, log=lines.append)
    assert lines == []  # nothing was read
    with pytest.raises(TrecFormatError, match="empty.tsv"):
        (tmp_path / "empty.tsv").write_text("# nothing\n")
        run_bench(BenchConfig(corpus=[demo.reports_csv], systems=["bm25"], queries=tmp_path / "empty.tsv",
                              qrels=demo.qrels), log=lines.append)


def test_unknown_category_field_is_named(demo, tmp_path) -> None:
    config = BenchConfig(corpus=[demo.reports_csv], reader=_options(), systems=["bm25"], category_field="ward",
                         protocols=["category"], progress=False)
    with pytest.raises(ConfigError, match="--category-field 'ward': no report has this metadata field"):
        run_bench(config, log=lambda m: None)


@pytest.mark.shared
def test_openi_exact_reader_options_findings_to_impression(shared_data, tmp_path) -> None:
    """The issue's command line on Open-i (BM25 and one protocol only, to stay fast)."""
    corpus = shared_data / "openi" / "reports.csv"
    out = tmp_path / "openi"
    result = runner.invoke(app, ["bench", "--corpus", str(corpus), *READER, "--systems", "bm25",
                                 "--protocol", "impression", "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "report.json").read_text())["protocols"][0]["data"]
    assert data["reports_with_both_sections"] == 3331
    assert 0.17 < data["held_out_reports"] / 3331 < 0.23
    assert np.isclose(data["summary"]["bm25"]["top5"]["rate"] * data["queries"], data["summary"]["bm25"]["top5"]["matched"])


def _fold_model(path, fold: int, test_findings) -> str:
    """A model folder whose training record says it held out ``test_findings`` as ``fold``."""
    path.mkdir()
    record = {"config": {"split_by_finding": fold, "finding_folds": 2}, "data": {"test_findings": sorted(test_findings)}}
    (path / "radsift_training.json").write_text(json.dumps(record), encoding="utf-8")
    return str(path)


def test_fold_models_are_judged_on_the_findings_they_held_out(demo, encoder, tmp_path) -> None:
    from radsift.corpus import read_corpus
    from radsift.labels import build_weak_labels

    weak = build_weak_labels([r for r in read_corpus([demo.reports_csv], _options()) if not r.is_empty],
                             progress=False)
    _, test = fold_findings(weak, 1)
    common = dict(corpus=[demo.reports_csv], reader=_options(), protocols=["sentences"], progress=False)
    # Same findings as today's fold 1: accepted.
    same = _fold_model(tmp_path / "same", 1, test)
    result = run_bench(BenchConfig(systems=[f"dense:{same}"], fold=1, **common), encoders={same: encoder},
                       log=lambda m: None)
    assert result.config["fold"] == 1
    # Trained when the labels put other findings in fold 1 (one moved): refused, naming the way out.
    moved = sorted(test)[1:]
    stale = _fold_model(tmp_path / "stale", 1, moved)
    with pytest.raises(ConfigError, match=rf"only in this run's fold: {sorted(test)[0]}.*--split-from"):
        run_bench(BenchConfig(systems=[f"dense:{stale}"], fold=1, **common), encoders={stale: encoder},
                  log=lambda m: None)
    # --split-from judges it on exactly the findings it held out.
    result = run_bench(BenchConfig(systems=["bm25", f"dense:{stale}"], split_from=stale, **common),
                       encoders={stale: encoder}, log=lambda m: None)
    qids = set(result.protocol("shi_sentence_retrieval").data["per_query"]["bm25"])
    assert qids == {q.qid for q in weak.queries if q.finding in moved}
    assert result.config["fold"] == 1 and result.config["split_from"] == stale
    # A model of the other fold is judged on findings it saw: allowed, with a warning.
    other = _fold_model(tmp_path / "other", 0, fold_findings(weak, 0)[1])
    lines: list[str] = []
    run_bench(BenchConfig(systems=[f"dense:{other}"], fold=1, **common), encoders={other: encoder}, log=lines.append)
    assert any("warning" in m and "not fold 1" in m for m in lines)


def test_split_from_needs_a_fold_model(demo, tmp_path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    fold0 = _fold_model(tmp_path / "fold0", 0, ["pneumothorax"])
    cases = [
        (BenchConfig(corpus=[demo.reports_csv], systems=["bm25"], split_from=plain), "no held-out findings recorded"),
        (BenchConfig(corpus=[demo.reports_csv], systems=["bm25"], split_from=tmp_path / "gone"), "not a model folder"),
        (BenchConfig(corpus=[demo.reports_csv], systems=["bm25"], split_from=fold0, fold=1),
         "--fold 1 disagrees with --split-from"),
    ]
    lines: list[str] = []
    for config, message in cases:
        with pytest.raises(ConfigError, match=message):
            run_bench(config, log=lines.append)
    assert lines == []  # refused before reading
