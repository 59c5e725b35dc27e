"""A saved search records its run only once the results are delivered (issue 32 item 4): a `saved run --new
--out` that fails, and a `POST /api/saved/NAME/run?new=true` answered 503, record nothing, so the next
"new since" still lists the reports they never showed."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from radsift.cli import app as cli_app
from radsift.index import build_index
from radsift.models.hashing import HashingEncoder
from radsift.records import Report
from radsift.search import Index
from radsift.search.saved import SavedSearches
from radsift.serve import create_app

REPORTS = [Report(f"r{i}", {"findings": f"Small right pneumothorax, case {i}.", "impression": "Pneumothorax."})
           for i in range(4)]


@pytest.fixture
def idx(tmp_path, hashing_model):
    build_index(tmp_path / "idx", REPORTS, encoder=HashingEncoder(hashing_model), progress=False)
    index = Index.open(tmp_path / "idx", encoder=HashingEncoder(hashing_model))
    SavedSearches.of_index(index.path).add(index, "ptx", "pneumothorax", mode="bm25")
    return index


def recorded(index) -> bool:
    saved = SavedSearches.of_index(index.path)
    return saved.get("ptx").last_run is not None or (saved.folder / "ptx.seen.json").exists()


def cli(index, *args):
    return CliRunner().invoke(cli_app, ["saved", "run", str(index.path), "ptx", *args])


@pytest.mark.parametrize("failure", ["out-is-a-folder", "audit-unwritable"])
def test_a_cli_run_that_fails_records_nothing(idx, tmp_path, failure):
    folder = tmp_path / "exports.csv"  # a folder: passes the suffix check, fails when written
    folder.mkdir()
    args = ["--new", "--out", str(folder)] if failure == "out-is-a-folder" else \
        ["--new", "--out", str(tmp_path / "new.csv"), "--audit-log", str(folder)]
    res = cli(idx, *args)
    assert res.exit_code == 2, res.output
    assert res.output.strip().splitlines()[-1].startswith("error: ")
    assert not recorded(idx)
    # The next "new" still lists every report, and that delivered run is recorded.
    res = cli(idx, "--new", "--json")
    assert res.exit_code == 0, res.output
    assert len(json.loads(res.output)["rows"]) == len(REPORTS)
    assert recorded(idx)
    assert json.loads(cli(idx, "--new", "--json").output)["rows"] == []


def test_an_api_run_answered_503_records_nothing(idx, tmp_path):
    audit = tmp_path / "audit.jsonl"
    client = TestClient(create_app(idx, audit_log=audit))
    audit.unlink(missing_ok=True)
    audit.mkdir()  # appending fails now: every audited answer is a 503
    res = client.post("/api/saved/ptx/run", params={"new": "true"})
    assert res.status_code == 503
    assert not recorded(idx)
    audit.rmdir()
    res = client.post("/api/saved/ptx/run", params={"new": "true"})
    assert res.status_code == 200 and len(res.json()["rows"]) == len(REPORTS)
    assert recorded(idx)  # after the answer was sent
    assert client.post("/api/saved/ptx/run", params={"new": "true"}).json()["rows"] == []


def test_a_python_run_is_recorded_when_it_returns_and_a_peek_never(idx):
    saved = SavedSearches.of_index(idx.path)
    run = saved.run(idx, "ptx", new=True, mark=False)
    assert len(run.rows) == len(REPORTS) and not recorded(idx)
    saved.record(run)
    assert recorded(idx)
    assert saved.run(idx, "ptx", new=True).rows == []


def test_a_run_recorded_after_its_search_was_removed_or_replaced_records_nothing(idx):
    """The web service records a run after its answer is sent: a remove (or a replace) that came in between
    must not be undone by the record (the page showed a removed search again)."""
    saved = SavedSearches.of_index(idx.path)
    run = saved.run(idx, "ptx", new=True, mark=False)
    saved.remove("ptx")
    saved.record(run)
    assert saved.names() == [] and not (saved.folder / "ptx.seen.json").exists()

    saved.add(idx, "ptx", "pneumothorax", mode="bm25")
    run = saved.run(idx, "ptx", new=True, mark=False)
    replacement = saved.add(idx, "ptx", "right pneumothorax", mode="bm25", replace=True)
    saved.record(run)
    assert saved.get("ptx").query == replacement.query and not recorded(idx)

    run = saved.run(idx, "ptx", new=True, mark=False)  # the search as stored: its run is recorded
    saved.record(run)
    assert recorded(idx)
