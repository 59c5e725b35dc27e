"""What a newcomer meets at the command line (the twenty-seventh session's walkthrough of the README): a version, a
hint when the arguments come in the wrong order or a build never finished, a filter that matches nothing said as
such, the bands an export kept counted, where ``radsift`` is after ``make demo``, and output to a pipe not cut at
80 columns."""

from __future__ import annotations

import io

import pytest
from typer.testing import CliRunner

from radsift.cli import app
from radsift.cli import output
from radsift.index.format import MARKER
from radsift.records import Report
from radsift.version import __version__
from radsift.workflows import demo

R = [Report("a", {"findings": "Small right pneumothorax."}, metadata={"image": "chest"}),
     Report("b", {"findings": "No pneumothorax. Heart size normal."}, metadata={"image": "chest"}),
     Report("c", {"findings": "Large left pleural effusion."}, metadata={"image": "chest"})]


@pytest.fixture(scope="module")
def index_dir(hashing_index_of):
    return hashing_index_of("newcomer-cli", R).path


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_the_version():
    res = run("--version")
    assert res.exit_code == 0 and res.output.strip() == f"radsift {__version__}"


def test_the_index_comes_first(index_dir, tmp_path):
    res = run("search", "pneumothorax", index_dir, "--mode", "bm25")
    assert res.exit_code == 2
    assert f"{index_dir} is one: the index comes first" in " ".join(res.output.split())
    res = run("export", "pneumothorax", index_dir, "--out", tmp_path / "c.csv")
    assert res.exit_code == 2 and "the index comes first" in " ".join(res.output.split())
    assert "index not found:" in run("search", tmp_path / "nowhere", "x").output  # a query that is no index
    assert "index not found:" in run("search", tmp_path / "nowhere", "pneumothorax " * 40).output  # no path


def test_a_build_that_never_finished(tmp_path):
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / MARKER).touch()
    res = run("search", tmp_path / "half", "pneumothorax", "--mode", "bm25")
    assert res.exit_code == 2 and "a build into it never finished" in " ".join(res.output.split())
    (tmp_path / "other").mkdir()  # a folder radsift did not make
    assert "is not a radsift index" in " ".join(run("search", tmp_path / "other", "x").output.split())


def test_a_filter_that_matches_nothing_is_said_as_such(index_dir):
    res = run("search", index_dir, "pneumothorax", "--mode", "bm25", "--where", "image=xray")
    assert res.exit_code == 0
    assert "no report to rank" in res.output and "no match for" not in res.output
    res = run("search", index_dir, "pneumothorax", "--mode", "bm25", "--where", "image=chest")
    assert "no report to rank" not in res.output and "Small right pneumothorax" in res.output


def test_an_export_counts_the_bands_it_kept(index_dir, tmp_path):
    res = run("export", index_dir, "pneumothorax", "--out", tmp_path / "c.csv", "--include", "related",
              "--mode", "bm25")
    assert res.exit_code == 0, res.output
    line = next(ln for ln in res.output.splitlines() if "kept" in ln)
    assert "kept (related): 1 states, " in line and line.rstrip().endswith(" related")


def test_where_radsift_is_after_make_demo(monkeypatch):
    monkeypatch.setattr(demo.shutil, "which", lambda name: None)
    monkeypatch.setattr(demo.sys, "argv", [".venv/bin/radsift"])
    assert "run `source .venv/bin/activate`" in demo._on_path_hint()
    monkeypatch.setattr(demo.shutil, "which", lambda name: "/usr/local/bin/radsift")
    assert demo._on_path_hint() == "radsift is on your PATH:"


def test_output_to_a_pipe_is_not_cut_at_80_columns(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(output.sys, "stdout", io.StringIO())  # not a terminal
    console = output._console()
    console.print("x " * 100)
    assert console.width == output.PIPED_WIDTH and console.file.getvalue().count("\n") == 1
    monkeypatch.setenv("COLUMNS", "50")
    assert output._console().width == 50
