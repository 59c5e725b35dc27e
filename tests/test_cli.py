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


@pytest.fixture()
def hashing_model(monkeypatch, tmp_path):
    folder = tmp_path / "hash-model"
    HashingEncoder(folder)
    monkeypatch.setattr("radsift.models.encoder.Encoder.load",
                        classmethod(lambda cls, model=None, **kw: HashingEncoder(model or folder)))
    return folder


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
    assert res.exception is not None and "--replace" in str(res.exception)
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
