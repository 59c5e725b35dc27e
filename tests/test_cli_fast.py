"""A search from a cold shell loads only what it uses, encodes its query with ONNX Runtime where it can,
and shows scores that mean something (issue 35, item 5). Timings are benchmarks/bench_cli.py's, not here."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from radsift.errors import ConfigError
from radsift.models import query_encoder
from radsift.models.hashing import HashingEncoder

SRC = Path(__file__).resolve().parents[1] / "src"


@pytest.fixture(scope="module")
def demo_index(tmp_path_factory) -> Path:
    """200 demo reports indexed with the hashing encoder (no torch)."""
    from radsift.demo import generate_reports
    from radsift.index import build_index

    folder = tmp_path_factory.mktemp("fast-cli")
    build_index(folder / "idx", [d.report for d in generate_reports(200)], encoder=HashingEncoder(folder / "hash"),
                progress=False)
    return folder / "idx"


def _cold(args: list[str], probe: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """``radsift ARGS`` in a fresh interpreter (through :func:`radsift.cli.main`, as the console script
    runs it), then ``probe`` (Python printing what it found) in that same interpreter."""
    code = ("import sys\nfrom radsift.cli import main\nsys.argv = ['radsift'] + sys.argv[1:]\n"
            f"try:\n    main()\nexcept SystemExit:\n    pass\n{probe}\n")
    full = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]), **(env or {})}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=180, env=full)


HEAVY = ("torch", "sentence_transformers", "transformers", "sklearn", "pandas", "nltk", "onnxruntime")
PROBE = f"print('LOADED', sorted(m for m in {HEAVY!r} if m in sys.modules))"


@pytest.mark.parametrize("negation", ["aware", "ignore"])
def test_a_bm25_search_imports_no_torch_nor_what_medspacy_drags_in(demo_index, negation):
    run = _cold(["search", str(demo_index), "no pleural effusion", "--mode", "bm25", "--negation", negation,
                 "--no-audit"], PROBE)
    assert run.returncode == 0, run.stderr
    assert "read as:" in run.stdout  # it searched, and read the query (spaCy and ConText loaded)
    assert run.stdout.strip().splitlines()[-1] == "LOADED []"


def test_the_guard_above_fails_when_spacy_imports_torch(demo_index):
    # The same search with spaCy imported as its packages do: torch (through thinc) and scikit-learn
    # (through QuickUMLS and NLTK) load, and the check above would see them.
    run = _cold(["search", str(demo_index), "pleural effusion", "--mode", "bm25", "--no-audit"], PROBE,
                env={"RADSIFT_FULL_SPACY_IMPORT": "1"})
    assert run.returncode == 0, run.stderr
    loaded = run.stdout.strip().splitlines()[-1]
    assert "'torch'" in loaded and "'sklearn'" in loaded


def test_a_command_imports_only_its_own_module(demo_index):
    others = ("radsift.cli.bench_cmds", "radsift.cli.train_cmds", "radsift.cli.serve_cmds", "radsift.cli.answer_cmds",
              "radsift.cli.index_cmds", "radsift.cli.patient_cmds", "radsift.evaluation", "radsift.rag", "fastapi")
    probe = f"print('LOADED', sorted(m for m in {others!r} if m in sys.modules))"
    run = _cold(["search", str(demo_index), "effusion", "--mode", "bm25", "--no-audit"], probe)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == "LOADED []"
    run = _cold(["--help"], "print('ALL', all(m in sys.modules for m in " + repr(others[:6]) + "))")
    assert "search" in run.stdout and "bench" in run.stdout and run.stdout.strip().endswith("ALL True")


def test_the_command_map_names_every_command_of_the_full_app():
    import typer.main

    import radsift.cli as cli

    group = typer.main.get_command(cli.app)
    assert set(group.commands) == set(cli.COMMAND_MODULES)
    for name, module in cli.COMMAND_MODULES.items():
        alone = typer.main.get_command(cli.build_app([module]))
        assert name in alone.commands, (name, module)
    assert cli._command_groups(["search", "idx", "q"]) == ("search_cmds",)
    assert cli._command_groups(["--help", "search"]) == cli.GROUPS
    assert cli._command_groups(["serch", "idx"]) == cli.GROUPS  # click suggests among every command


# ---------------------------------------------------------------------------------------------
# Scores shown: the fused score, the tier as the band
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["bm25", "dense", "hybrid"])
def test_scores_shown_are_the_fused_score_not_tier_shifted(demo_index, mode):
    from radsift.search import Index
    from radsift.search.options import SearchOptions

    index = Index.open(demo_index, encoder=HashingEncoder(demo_index.parent / "hash"))
    hits = index.search("pleural effusion", SearchOptions(k=200, mode=mode, level="sentence"))
    shifted = [h for h in hits if h.score < h.fused - 1e-6]
    assert shifted, "no hit below the first tier: the query does not test the shift"
    low, high = {"bm25": (0.0, np.inf), "dense": (-1.0, 1.0), "hybrid": (0.0, 1.0)}[mode]
    for h in hits:
        shown = h.to_dict()["score"]
        assert shown == pytest.approx(h.fused) == pytest.approx(h.shown_score)
        assert low - 1e-6 <= shown <= high + 1e-6, (h.rank, h.band, shown)
    # The tier is the band: hits stating the opposite are `unlikely`, whatever their score.
    assert {h.band for h in shifted} <= {"related", "unlikely"}


def test_the_terminal_and_json_show_the_fused_scores(demo_index):
    runner = CliRunner()
    from radsift.cli import app

    res = runner.invoke(app, ["search", str(demo_index), "pleural effusion", "--mode", "bm25", "-k", "200",
                              "--level", "sentence", "--no-audit"])
    assert res.exit_code == 0, res.output
    shown = [float(s) for s in re.findall(r"score (-?[0-9.]+)", res.stdout)]
    assert len(shown) > 20 and min(shown) >= 0.0  # BM25 scores: a tier shift made them negative
    res = runner.invoke(app, ["search", str(demo_index), "pleural effusion", "--mode", "bm25", "-k", "200",
                              "--level", "sentence", "--no-audit", "--json"])
    data = json.loads(res.stdout)
    assert [round(h["score"], 4) for h in data["hits"]] == shown


# ---------------------------------------------------------------------------------------------
# The query encoder: ONNX Runtime where it can, torch otherwise
# ---------------------------------------------------------------------------------------------

def test_the_query_encoder_choice_is_checked(monkeypatch):
    monkeypatch.setenv("RADSIFT_QUERY_ENCODER", "fast")
    with pytest.raises(ConfigError, match="RADSIFT_QUERY_ENCODER='fast': choose one of auto, onnx, torch"):
        query_encoder.query_encoder_choice()


def test_torch_is_used_when_asked_or_when_onnx_is_unavailable(monkeypatch, tmp_path, hashing_model):
    model = tmp_path / "st-model"
    model.mkdir()
    (model / "modules.json").write_text("[]")
    calls = []
    monkeypatch.setattr(query_encoder, "_onnx_encoder", lambda *a, **k: calls.append("onnx") or "ONNX")
    monkeypatch.setenv("RADSIFT_QUERY_ENCODER", "torch")
    assert isinstance(query_encoder.load_query_encoder(model), HashingEncoder) and not calls
    monkeypatch.setenv("RADSIFT_QUERY_ENCODER", "auto")
    assert query_encoder.load_query_encoder(model) == "ONNX"
    assert isinstance(query_encoder.load_query_encoder(hashing_model), HashingEncoder)  # not a sentence-transformer

    def unavailable(*a, **k):
        raise query_encoder.ConfigError("onnxruntime is not installed")

    monkeypatch.setattr(query_encoder, "_onnx_encoder", unavailable)
    assert isinstance(query_encoder.load_query_encoder(model), HashingEncoder)  # auto: falls back
    monkeypatch.setenv("RADSIFT_QUERY_ENCODER", "onnx")
    with pytest.raises(ConfigError, match="onnxruntime is not installed"):
        query_encoder.load_query_encoder(model)


def test_an_export_is_looked_for_in_the_index_then_the_user_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("RADSIFT_CACHE_DIR", str(tmp_path / "user"))
    assert query_encoder.export_dirs(tmp_path / "idx") == [tmp_path / "idx" / "cache" / "onnx", tmp_path / "user" / "onnx"]
    assert query_encoder.export_dirs(None) == [tmp_path / "user" / "onnx"]


QUERIES = ["left pleural effusion", "no pneumothorax", "enlarged heart", "a breathing tube in the windpipe",
           "fluid around the lungs", "Interval placement of a right internal jugular catheter.", "RLL opacity", "x"]


@pytest.mark.slow
def test_the_onnx_query_vector_is_torchs(tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from radsift.models.encoder import Encoder, default_model_path
    from radsift.models.onnx_encoder import OnnxEncoder

    model = default_model_path()
    found = query_encoder.find_export(model, None)
    fast = OnnxEncoder.load(model, cache_dir=found if found is not None else tmp_path)
    slow = Encoder.load(model)
    for q in QUERIES:
        a, b = fast.encode_query(q), slow.encode_query(q)
        assert a.shape == b.shape and a.dtype == np.float32
        assert float(a @ b) >= 1 - 1e-5, q


@pytest.mark.slow
def test_a_dense_search_with_an_onnx_export_imports_no_torch(tmp_path):
    pytest.importorskip("onnxruntime")
    from radsift.demo import generate_reports
    from radsift.index import build_index
    from radsift.models.encoder import default_model_path
    from radsift.models.onnx_encoder import OnnxEncoder

    model = default_model_path()
    found = query_encoder.find_export(model, None)
    if found is None:
        pytest.skip("no ONNX export of the packaged model in the user's cache (a dense search writes one)")
    build_index(tmp_path / "idx", [d.report for d in generate_reports(40)],
                encoder=OnnxEncoder.load(model, cache_dir=found), progress=False)
    for mode in ("dense", "hybrid"):
        run = _cold(["search", str(tmp_path / "idx"), "fluid around the lungs", "--mode", mode, "--no-audit"], PROBE,
                    env={"RADSIFT_QUERY_ENCODER": "auto"})
        assert run.returncode == 0, run.stderr
        assert run.stdout.strip().splitlines()[-1] == "LOADED ['onnxruntime']", (mode, run.stdout[-300:])


def test_modules_are_hidden_only_while_no_other_thread_runs():
    import threading

    from radsift.labels.spacy_light import hidden_modules

    name = "radsift_test_never_installed"
    if threading.active_count() == 1:
        with hidden_modules((name,)):
            assert name in sys.modules and sys.modules[name] is None
        assert name not in sys.modules
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        with hidden_modules((name,)):  # another thread could import it meanwhile: nothing is hidden
            assert name not in sys.modules
    finally:
        stop.set()
        other.join()
