"""``radsift index build --adapt``: tune the default recipe on the corpus, then index with the tuned model.

Real training on the demo generator's reports (written by this project), a few steps only so the
test stays short: what is checked is the path (estimate, model inside the index, the index built
with it, the fall-back for a small corpus), not the gain, which docs/measurements.md measures.
"""

from __future__ import annotations

import inspect
import json

import pytest
from typer.testing import CliRunner

from radsift.cli import app
from radsift.cli.index_cmds import index_build
from radsift.errors import ConfigError
from radsift.workflows.adapt import DEFAULT_ADAPT_STEPS, MIN_ADAPT_REPORTS, build_adapted_index

pytestmark = pytest.mark.slow


def _demo_csv(tmp_path, n: int):
    from radsift.demo import write_demo_corpus

    return write_demo_corpus(tmp_path / "demo", n=n, seed=3)


def test_the_cli_default_is_the_measured_quick_default():
    assert inspect.signature(index_build).parameters["adapt_steps"].default == DEFAULT_ADAPT_STEPS


def test_adapt_trains_on_the_corpus_and_indexes_with_the_tuned_model(tmp_path):
    from radsift.models.encoder import model_fingerprint
    from radsift.search import Index

    corpus = _demo_csv(tmp_path, MIN_ADAPT_REPORTS + 50)
    res = CliRunner().invoke(app, ["index", "build", str(tmp_path / "idx"), str(corpus.reports_csv),
                                   "--id-column", "uid", "--section", "findings=findings",
                                   "--section", "impression=impression", "--adapt", "--adapt-steps", "2",
                                   "--adapt-seed", "3", "--threads", "1"])
    assert res.exit_code == 0, res.output
    assert "adapting all-MiniLM-L6-v2 to 250 reports: about" in res.output
    assert "of training (2 steps, seed 3, 1 thread)" in " ".join(res.output.split())  # what reproduces the model
    (model,) = (tmp_path / "idx" / "models").iterdir()
    assert (model / "model.safetensors").exists() and (model / "radsift_training.json").exists()
    config = json.loads((model / "radsift_training.json").read_text())["config"]
    assert (config["seed"], config["threads"]) == (3, 1)  # --adapt-seed, --threads
    idx = Index.open(tmp_path / "idx")
    assert idx.manifest.model_path == f"models/{model.name}"  # relative to the index: a copy finds it
    assert idx.manifest.model_fingerprint == model_fingerprint(model.resolve())
    assert idx.manifest.counts["reports"] == 250
    assert idx.search("pneumothorax", k=3, mode="hybrid")


def test_the_same_seed_on_the_same_threads_trains_the_same_model(tmp_path):
    """--adapt-seed with --threads reproduces an adapted model byte for byte (the thread count is part of it: torch
    splits its sums by threads, and 1 and 2 threads trained different models from one seed)."""
    import hashlib

    from radsift.models.training.config import TrainConfig
    from radsift.models.training.runner import train

    from radsift.demo import generate_reports

    reports = [d.report for d in generate_reports(n=120, seed=3)]

    def weights(out, seed):
        train(reports, TrainConfig(max_steps=2, seed=seed, evaluate=False, threads=1, time_limit_minutes=None),
              out, progress=False)
        return hashlib.sha256((out / "model.safetensors").read_bytes()).hexdigest()

    first = weights(tmp_path / "a", 3)
    assert weights(tmp_path / "b", 3) == first
    assert weights(tmp_path / "c", 4) != first  # the seed matters: the check can fail


def test_a_corpus_too_small_to_adapt_is_indexed_with_the_general_model(tmp_path):
    from radsift.search import Index

    corpus = _demo_csv(tmp_path, 20)
    res = CliRunner().invoke(app, ["index", "build", str(tmp_path / "idx"), str(corpus.reports_csv),
                                   "--id-column", "uid", "--section", "findings=findings",
                                   "--section", "impression=impression", "--adapt"])
    assert res.exit_code == 0, res.output
    assert f"--adapt needs at least {MIN_ADAPT_REPORTS} reports with text" in res.output
    assert "this corpus has 20" in res.output
    assert Index.open(tmp_path / "idx").manifest.model_name == "all-MiniLM-L6-v2"
    assert not (tmp_path / "idx" / "models").exists()


def test_adapt_refuses_what_cannot_work(tmp_path):
    corpus = _demo_csv(tmp_path, 20)
    base = ["index", "build", str(tmp_path / "idx"), str(corpus.reports_csv), "--id-column", "uid",
            "--section", "findings=findings", "--adapt"]
    res = CliRunner().invoke(app, [*base, "--adapt-steps", "0"])
    assert res.exit_code == 2 and "--adapt-steps: must be a positive number of steps" in res.output
    res = CliRunner().invoke(app, [*base, "--no-labels"])
    assert res.exit_code == 2 and "--adapt trains on the sentence labels" in res.output


def test_adapt_spreads_the_index_build_over_workers(tmp_path, monkeypatch):
    """--adapt --workers 2: the tuned model is trained once here, then two processes write the index with it;
    a bad worker count is refused before any training (no model folder left behind)."""
    from radsift.search import Index

    corpus = _demo_csv(tmp_path, MIN_ADAPT_REPORTS + 50)
    base = ["index", "build", str(tmp_path / "idx"), str(corpus.reports_csv), "--id-column", "uid",
            "--section", "findings=findings", "--section", "impression=impression", "--adapt", "--adapt-steps", "2"]
    with monkeypatch.context() as m:  # the Python API checks it too, before the model is even loaded
        m.setattr("radsift.workflows.adapt.Encoder.load", lambda *a, **k: pytest.fail("loaded before the check"))
        with pytest.raises(ConfigError, match="--workers: must be a whole number"):
            build_adapted_index(tmp_path / "idx", [], workers=0)
    assert not (tmp_path / "idx").exists()
    res = CliRunner().invoke(app, [*base, "--workers", "2"])
    assert res.exit_code == 0, res.output
    (model,) = (tmp_path / "idx" / "models").iterdir()
    idx = Index.open(tmp_path / "idx")
    assert idx.manifest.model_path == f"models/{model.name}"
    assert len(idx.manifest.segments) == 2  # one segment a worker's share
    assert idx.manifest.counts["reports"] == 250
    assert idx.search("pneumothorax", k=3, mode="hybrid")
