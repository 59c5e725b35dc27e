"""``--out`` never overwrites without ``--force`` (issue 32 item 4): an existing file (or an export's
provenance sidecar) or a non-empty folder is refused in one line before the command does its work."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from radsift.cli import app
from radsift.index import build_index
from radsift.models.hashing import HashingEncoder
from radsift.records import Report
from radsift.search.saved import SavedSearches

REPORTS = [Report(f"r{i}", {"findings": f"Small right pneumothorax, case {i}.", "impression": "Pneumothorax."})
           for i in range(3)]
OLD = "precious\n"


@pytest.fixture
def idx(tmp_path, hashing_model):
    build_index(tmp_path / "idx", REPORTS, encoder=HashingEncoder(hashing_model), progress=False)
    return tmp_path / "idx"


def refused(res, path) -> None:
    lines = res.output.strip().splitlines()
    assert res.exit_code == 2 and len(lines) == 1, res.output
    assert lines[0].startswith("error: --out") and "--force" in lines[0] and str(path) in lines[0]


def test_export_refuses_an_existing_file_or_sidecar_and_force_overwrites(idx, tmp_path):
    out = tmp_path / "cohort.csv"
    out.write_text(OLD)
    args = ["export", str(idx), "pneumothorax", "--out", str(out), "--mode", "bm25"]
    refused(CliRunner().invoke(app, args), out)
    assert out.read_text() == OLD
    res = CliRunner().invoke(app, [*args, "--force"])
    assert res.exit_code == 0, res.output
    assert out.read_text() != OLD
    other = tmp_path / "other.csv"
    (tmp_path / "other.csv.provenance.json").write_text(OLD)  # the sidecar alone exists
    refused(CliRunner().invoke(app, ["export", str(idx), "pneumothorax", "--out", str(other), "--mode", "bm25"]),
            tmp_path / "other.csv.provenance.json")
    assert not other.exists()


def test_saved_run_refuses_an_existing_out_and_records_nothing(idx, tmp_path, hashing_model):
    from radsift.search import Index

    SavedSearches.of_index(idx).add(Index.open(idx, encoder=HashingEncoder(hashing_model)), "ptx", "pneumothorax",
                                    mode="bm25")
    out = tmp_path / "new.csv"
    out.write_text(OLD)
    refused(CliRunner().invoke(app, ["saved", "run", str(idx), "ptx", "--new", "--out", str(out)]), out)
    assert out.read_text() == OLD and SavedSearches.of_index(idx).get("ptx").last_run is None
    res = CliRunner().invoke(app, ["saved", "run", str(idx), "ptx", "--new", "--out", str(out), "--force"])
    assert res.exit_code == 0, res.output
    assert out.read_text() != OLD and SavedSearches.of_index(idx).get("ptx").last_run is not None


def test_run_refuses_an_existing_run_file(idx, tmp_path):
    queries = tmp_path / "q.tsv"
    queries.write_text("q1\tpneumothorax\n")
    out = tmp_path / "run.trec"
    out.write_text(OLD)
    args = ["run", str(idx), "--queries", str(queries), "--out", str(out), "--mode", "bm25"]
    refused(CliRunner().invoke(app, args), out)
    assert out.read_text() == OLD
    assert CliRunner().invoke(app, [*args, "--force"]).exit_code == 0
    assert "q1" in out.read_text()


def test_folder_outputs_refuse_a_non_empty_folder(tmp_path):
    out = tmp_path / "corpus"
    out.mkdir()
    (out / "reports.csv").write_text(OLD)
    refused(CliRunner().invoke(app, ["demo-corpus", "--out", str(out), "--n", "20"]), out)
    assert (out / "reports.csv").read_text() == OLD
    res = CliRunner().invoke(app, ["demo-corpus", "--out", str(out), "--n", "20", "--force"])
    assert res.exit_code == 0, res.output
    refused(CliRunner().invoke(app, ["label", str(out / "reports.csv"), "--out", str(out)]), out)
    refused(CliRunner().invoke(app, ["demo", "--out", str(out), "--no-serve"]), out)
    assert CliRunner().invoke(app, ["demo-corpus", "--out", str(tmp_path / "fresh"), "--n", "20"]).exit_code == 0


def test_every_command_with_out_takes_force():
    root = typer.main.get_command(app)
    commands = {**root.commands, **{f"saved {n}": c for n, c in root.commands["saved"].commands.items()}}
    with_out = {name: c for name, c in commands.items() if any("--out" in p.opts for p in c.params)}
    assert {"export", "saved run", "run", "label", "train", "demo", "demo-corpus", "bench"} <= set(with_out)
    missing = [name for name, c in with_out.items() if not any("--force" in p.opts for p in c.params)]
    assert not missing, missing


def test_bench_refuses_a_non_empty_out_folder(tmp_path):
    out = tmp_path / "bench-out"
    out.mkdir()
    (out / "report.json").write_text(OLD)
    # Refused before any corpus is read: the corpus named here does not even exist.
    refused(CliRunner().invoke(app, ["bench", "--corpus", str(tmp_path / "none.csv"), "--out", str(out)]), out)
    assert (out / "report.json").read_text() == OLD
