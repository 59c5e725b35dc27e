"""``radsift train`` end to end: a model folder with a model card that loads offline and indexes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from radsift.cli import app
from radsift.demo import generate_reports, write_demo_corpus

pytestmark = pytest.mark.slow

SMALL = dict(batch_size=8, mega_batch_size=16, pair_batch_size=8, max_seq_length=32, section_max_seq_length=64)


def test_cli_trains_a_model_that_loads_offline_and_indexes(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    files = write_demo_corpus(tmp_path / "demo", n=120, seed=3)
    out = tmp_path / "model"
    config = tmp_path / "train.yaml"
    config.write_text("".join(f"{k}: {v}\n" for k, v in SMALL.items()) + "max_steps: 50\n")
    args = ["train", "--corpus", str(files.reports_csv), "--format", "csv", "--id-column", "uid",
            "--section", "findings=findings", "--section", "impression=impression",
            "--out", str(out), "--config", str(config), "--max-steps", "2", "--no-eval"]
    runner = CliRunner()
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert (out / "modules.json").exists() and (out / "model.safetensors").exists()

    info = json.loads((out / "radsift_training.json").read_text())
    assert info["recipe"] == "combined"  # the default recipe
    assert info["config"]["max_steps"] == 2 and info["config"]["batch_size"] == 8  # flag over file over defaults
    assert info["training"]["steps"] == 2 and info["data"]["train_reports"] > 0
    assert info["data"]["heldout_reports"] > 0 and info["config"]["heldout_fraction"] == 0.2
    card = (out / "README.md").read_text()
    assert "`combined`" in card and "## Data" in card and "## Configuration" in card
    from radsift.models.settings import TRAINED, load_search_settings, packaged_settings

    # the search settings measured for trained models travel with the model
    assert load_search_settings(out).to_dict() == packaged_settings(TRAINED).to_dict()

    # a non-empty --out is refused without --overwrite (exit status 2, one-line error)
    again = runner.invoke(app, args)
    assert again.exit_code == 2 and "--overwrite" in again.output

    # loads through radsift's encoder (local files only) and indexes
    from radsift.index import build_index
    from radsift.models import Encoder
    from radsift.search import Index

    enc = Encoder.load(out)
    assert enc.dim == 384 and enc.model.max_seq_length == 64 and enc.name == "model"
    build_index(tmp_path / "index", [d.report for d in generate_reports(n=30, seed=1)], model=out,
                progress=False, label=False)
    hits = Index.open(tmp_path / "index").search("no pneumothorax", k=3, mode="dense", negation="ignore")
    assert len(hits) == 3


def test_cli_rejects_bad_recipe(tmp_path: Path):
    result = CliRunner().invoke(app, ["train", "--corpus", str(tmp_path / "x.csv"), "--out", str(tmp_path / "m"),
                                      "--recipe", "magic"])
    assert result.exit_code == 2 and "magic" in result.output
