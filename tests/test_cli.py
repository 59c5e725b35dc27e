"""The CLI as a user runs it: index build/add/info from a CSV, and one-line errors with exit status 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from radsift.cli import app
from radsift.models.hashing import HashingEncoder

CSV = """uid,exam,findings,impression
1,XR CHEST PA,"There is a small right pneumothorax. Heart size is normal.",Small right pneumothorax.
2,XR CHEST PA,"No pneumothorax or pleural effusion.",No acute cardiopulmonary abnormality.
3,XR CHEST AP,"Moderate left pleural effusion.",Left pleural effusion.
"""
MAPPING = ["--format", "csv", "--id-column", "uid", "--section", "findings=findings",
           "--section", "impression=impression"]


def test_index_build_add_info_search(tmp_path, hashing_model):
    corpus = tmp_path / "reports.csv"
    corpus.write_text(CSV)
    idx = tmp_path / "idx"
    runner = CliRunner()
    res = runner.invoke(app, ["index", "build", str(idx), str(corpus), *MAPPING, "--model", str(hashing_model)])
    assert res.exit_code == 0, res.output
    assert "3 reports" in res.output
    more = tmp_path / "more.csv"
    more.write_text('uid,exam,findings,impression\n4,XR CHEST AP,"Endotracheal tube in place.",Tube in place.\n')
    res = runner.invoke(app, ["index", "add", str(idx), str(more), *MAPPING])
    assert res.exit_code == 0, res.output
    assert "4 reports (1 added)" in res.output
    res = runner.invoke(app, ["index", "add", str(idx), str(more), *MAPPING])
    assert res.exit_code == 2 and "--replace" in res.output
    res = runner.invoke(app, ["index", "add", str(idx), str(more), *MAPPING, "--replace"])
    assert res.exit_code == 0 and "1 replaced" in res.output
    res = runner.invoke(app, ["index", "info", str(idx)])
    info = json.loads(res.output)
    assert info["counts"]["reports"] == 4 and info["metadata_keys"] == ["exam"]
    res = runner.invoke(app, ["search", str(idx), "endotracheal tube", "--json", "--where", "exam=XR CHEST AP"])
    hits = json.loads(res.output)["hits"]
    assert hits[0]["report_id"] == "4" and all(h["metadata"]["exam"] == "XR CHEST AP" for h in hits)


def _radsift(*args):
    return subprocess.run([sys.executable, "-m", "radsift.cli", *args], capture_output=True, text=True, timeout=120)


def test_missing_column_is_a_one_line_error_naming_it(tmp_path):
    corpus = tmp_path / "reports.csv"
    corpus.write_text(CSV)
    out = _radsift("index", "build", str(tmp_path / "idx"), str(corpus), "--id-column", "uid",
                   "--section", "findings=FINDINGS_TEXT")
    assert out.returncode == 2
    assert "FINDINGS_TEXT" in out.stderr and "uid" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "idx" / "CURRENT").exists()


def test_search_of_a_missing_index_is_a_clear_error(tmp_path):
    out = _radsift("search", str(tmp_path / "nowhere"), "pneumothorax")
    assert out.returncode == 2 and "index not found" in out.stderr and "Traceback" not in out.stderr


# ---------------------------------------------------------------------------------------------
# Search options the CLI refuses as the API does; KEY~VALUE filters; BM25 without the encoder
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_index(tmp_path_factory):
    """The CSV above indexed with the hashing encoder (BM25 searches need no encoder at all)."""
    from radsift.corpus import ReaderOptions, read_corpus
    from radsift.index import build_index

    folder = tmp_path_factory.mktemp("cli-index")
    corpus = folder / "reports.csv"
    corpus.write_text(CSV)
    options = ReaderOptions.from_cli(format="csv", id_column="uid",
                                     sections=["findings=findings", "impression=impression"])
    build_index(folder / "idx", read_corpus([corpus], options), encoder=HashingEncoder(folder / "hash-model"),
                progress=False)
    return folder / "idx"


def test_unknown_where_key_is_an_error_listing_the_known_keys(small_index):
    out = _radsift("search", str(small_index), "pneumothorax", "--mode", "bm25", "--where", "modality=XR")
    assert out.returncode == 2, out.stdout + out.stderr
    assert "unknown metadata key 'modality'; known keys: exam" in out.stderr
    assert "Traceback" not in out.stderr and "no match" not in out.stdout


def test_misspelt_target_is_an_error_listing_the_sections(small_index):
    out = _radsift("search", str(small_index), "pneumothorax", "--mode", "bm25", "--target", "impresion")
    assert out.returncode == 2, out.stdout + out.stderr
    assert "'impresion'" in out.stderr and "findings, impression" in out.stderr
    assert "Traceback" not in out.stderr


def _search_ids(index, *args):
    res = CliRunner().invoke(app, ["search", str(index), "pleural effusion", "--mode", "bm25", "--json", *args])
    assert res.exit_code == 0, res.output
    return {h["report_id"] for h in json.loads(res.output)["hits"]}


def test_where_tilde_matches_case_insensitive_substrings_and_equals_stays_exact(small_index):
    assert _search_ids(small_index, "--where", "exam~chest ap") == {"3"}
    assert _search_ids(small_index, "--where", "exam~XR CHEST") == {"2", "3"}
    assert _search_ids(small_index, "--where", "exam=xr chest ap") == set()
    assert _search_ids(small_index, "--where", "exam=XR CHEST AP") == {"3"}


def test_the_api_and_the_cli_refuse_an_unknown_key_with_the_same_words(small_index):
    from fastapi.testclient import TestClient

    from radsift.search import Index
    from radsift.serve.app import create_app

    api = TestClient(create_app(Index.open(small_index)))
    body = api.get("/api/search", params={"q": "effusion", "mode": "bm25", "where": "modality:XR"}).json()
    cli = _radsift("search", str(small_index), "effusion", "--mode", "bm25", "--where", "modality=XR")
    message = json.dumps(body)
    assert "unknown metadata key 'modality'; known keys: exam" in message
    assert "unknown metadata key 'modality'; known keys: exam" in cli.stderr


@pytest.mark.parametrize("negation", ["aware", "ignore"])
def test_bm25_search_never_loads_the_encoder(small_index, negation):
    # Run the CLI in a fresh interpreter and look at what it imported. The query's reading is
    # shown with --negation ignore too, so spaCy (whose thinc imports torch) loads in both; the
    # encoder (sentence-transformers) never does.
    code = ("import sys; from radsift.cli import app\n"
            "try: app(sys.argv[1:])\nexcept SystemExit: pass\n"
            "print(sorted(m for m in ('sentence_transformers', 'transformers') if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", code, "search", str(small_index), "effusion", "--mode", "bm25",
                          "--negation", negation], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "effusion" in run.stdout.lower()  # it searched
    assert run.stdout.strip().splitlines()[-1] == "[]"


# ---------------------------------------------------------------------------------------------
# radsift run --rerank, reader flags, errors in main(), help
# ---------------------------------------------------------------------------------------------
class LengthReranker:
    """A stand-in cross-encoder: shorter sentences score higher."""

    weight = 1.0

    def score(self, query, texts):
        return [-float(len(t)) for t in texts]


def test_run_reranks_the_top_n_of_each_query(small_index, tmp_path, monkeypatch):
    from radsift.evaluation.trec import read_run

    monkeypatch.setattr("radsift.models.reranker.Reranker.load", classmethod(lambda cls, *a, **kw: LengthReranker()))
    queries = tmp_path / "queries.tsv"
    queries.write_text("q1\tpneumothorax or pleural effusion\n")
    base = ["run", str(small_index), "--queries", str(queries), "--mode", "bm25", "--level", "sentence",
            "--negation", "ignore"]
    runner = CliRunner()
    res = runner.invoke(app, [*base, "--out", str(tmp_path / "plain.trec")])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, [*base, "--out", str(tmp_path / "reranked.trec"), "--rerank", "3",
                              "--reranker", str(tmp_path)])
    assert res.exit_code == 0, res.output
    plain = [doc for doc, _ in read_run(tmp_path / "plain.trec")["q1"]]
    reranked = read_run(tmp_path / "reranked.trec")["q1"]
    order = [doc for doc, _ in reranked]
    assert set(order) == set(plain) and order[3:] == plain[3:]  # only the head is reranked
    assert set(order[:3]) == set(plain[:3]) and order[:3] != plain[:3]
    texts = {h.sentence.uid: h.sentence.text for h in __import__("radsift").Index.open(small_index).search(
        "pneumothorax or pleural effusion", k=20, mode="bm25", level="sentence", negation="ignore")}
    assert [len(texts[d]) for d in order[:3]] == sorted(len(texts[d]) for d in order[:3])  # shortest first
    scores = [s for _, s in reranked]
    assert scores == sorted(scores, reverse=True)


def test_run_checks_options_before_running(small_index, tmp_path):
    queries = tmp_path / "queries.tsv"
    queries.write_text("q1\tpneumothorax\n")
    out = _radsift("run", str(small_index), "--queries", str(queries), "--out", str(tmp_path / "run.trec"),
                   "--mode", "bm25", "--where", "modality=XR")
    assert out.returncode == 2 and "known keys: exam" in out.stderr
    assert not (tmp_path / "run.trec").exists()
    out = _radsift("run", str(small_index), "--queries", str(queries), "--out", str(tmp_path / "run.trec"),
                   "--mode", "bm25", "--rerank", "5")
    assert out.returncode == 2 and "--reranker" in out.stderr


def test_errors_are_handled_in_one_place_and_exit_2(tmp_path):
    # No command catches RadsiftError itself: the group's main() prints "error: ..." and exits 2,
    # for the console script and for in-process callers alike.
    import inspect

    import radsift.cli

    assert inspect.getsource(radsift.cli).count("except RadsiftError") == 1
    res = CliRunner().invoke(app, ["label", "--format", "csv"])
    assert res.exit_code == 2 and "error: give a CORPUS" in res.output
    out = _radsift("label", str(tmp_path / "x.csv"), "--out", str(tmp_path / "o"), "--format", "docx")
    assert out.returncode == 2 and out.stderr.startswith("error: --format 'docx'")


def test_reader_flags_are_the_same_on_every_corpus_command():
    import re

    from radsift.cli.options import READER_FLAGS

    flags = {f"--{flag}" for _, flag, *_ in READER_FLAGS}
    for cmd in (["index", "build"], ["index", "add"], ["label"], ["train"], ["bench"]):
        text = CliRunner().invoke(app, [*cmd, "--help"], env={"COLUMNS": "200"}).output
        assert flags <= set(re.findall(r"--[a-z-]+", text)), cmd
    bench = CliRunner().invoke(app, ["bench", "--help"], env={"COLUMNS": "200"}).output
    assert {f"--cross-{f[2:]}" for f in flags} <= set(re.findall(r"--[a-z-]+", bench))


def test_bad_cross_reader_flag_is_named_as_typed(tmp_path):
    res = CliRunner().invoke(app, ["bench", "--corpus", str(tmp_path), "--out", str(tmp_path / "o"),
                                   "--cross-corpus", str(tmp_path), "--cross-format", "docx"])
    assert res.exit_code == 2 and "error: --cross-format 'docx'" in res.output


COMMANDS = [[], ["index"], ["index", "build"], ["index", "add"], ["index", "info"], ["search"], ["label"], ["train"], ["bench"],
            ["run"], ["eval"], ["serve"], ["demo"], ["demo-corpus"]]


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: " ".join(c) or "radsift")
def test_every_help_has_an_example_and_no_python_types(cmd):
    import re

    res = CliRunner().invoke(app, [*cmd, "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "Example:" in res.output and " ".join(["radsift", *cmd]) + " " in res.output
    leaked = re.findall(r"<[a-zA-Z_\[\]|, ]+>|Optional\[|list\[|\bNoneType\b", res.output)
    assert not [t for t in leaked if t != "<TAB>"], leaked


def test_commands_are_listed_in_workflow_order():
    text = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"}).output
    names = [line.split()[1] for line in text.splitlines() if line.startswith("│ ") and len(line.split()) > 2]
    workflow = ["index", "search", "label", "train", "bench", "run", "eval", "serve", "demo", "demo-corpus"]
    assert [n for n in names if n in workflow] == workflow


def test_third_party_progress_bars_are_off_once_a_command_starts(monkeypatch):
    import os

    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS", raising=False)
    monkeypatch.delenv("TRANSFORMERS_VERBOSITY", raising=False)
    CliRunner().invoke(app, ["index", "info", "/nowhere"])
    assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1" and os.environ["TRANSFORMERS_VERBOSITY"] == "error"


@pytest.mark.slow
def test_index_build_with_the_real_model_prints_no_third_party_bars(tmp_path):
    corpus = tmp_path / "reports.csv"
    corpus.write_text(CSV)
    out = _radsift("index", "build", str(tmp_path / "idx"), str(corpus), *MAPPING)
    assert out.returncode == 0, out.stderr
    assert "Loading weights" not in out.stderr and "it/s]" not in out.stderr, out.stderr
    assert "3 reports" in out.stdout


@pytest.mark.slow
def test_demo_runs_the_main_job_end_to_end(tmp_path):
    """``radsift demo`` (what ``make demo`` runs, here on 250 reports, 2 adapt steps, no web page)."""

    from radsift.search import Index

    out = tmp_path / "demo"
    res = CliRunner().invoke(app, ["demo", "--out", str(out), "--n", "250", "--no-serve", "--adapt-steps", "2"])
    assert res.exit_code == 0, res.output
    for step in ("1. demo corpus", "2. index", "3. example searches", "4. how well", "5. adapt the model",
                 "6. patients over time", "7. your own reports"):
        assert step in res.output
    assert "radsift timeline" in res.output and "overdue" in res.output
    index = Index.open(out / "index")
    assert index.manifest.counts["reports"] == 250
    from radsift.workflows.demo import EXAMPLE_SEARCHES

    for query in EXAMPLE_SEARCHES:
        assert index.search(query, k=3), query
    adapted = Index.open(out / "index-adapted")
    assert adapted.manifest.model_path.startswith("models/adapted-")  # relative: the index travels
    # the evaluation table: one row per (model, mode) with four figures in [0, 1]; every mode ranks
    # the demo's queries better than chance (a broken index or qrels mismatch gives 0)
    rows = {}
    for line in res.output.splitlines():
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if len(cells) == 6 and cells[1] in ("bm25", "dense", "hybrid"):
            rows[(cells[0].split(" ")[0], cells[1])] = [float(x) for x in cells[2:]]
    assert set(rows) == {("general", "bm25"), ("general", "dense"), ("general", "hybrid"),
                         ("adapted", "dense"), ("adapted", "hybrid")}, res.output
    assert all(0.3 < x <= 1 for v in rows.values() for x in v), rows
