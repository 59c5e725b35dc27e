"""Issue 34, item 3: the page's timelines. ``GET /api/timeline/{patient}`` answers what ``radsift timeline``
prints (one library function), under the API's token, audit and input policy; the page calls it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from radsift.cli import app as cli_app
from radsift.corpus import read_corpus
from radsift.corpus.options import ReaderOptions
from radsift.index import build_index
from radsift.models.hashing import HashingEncoder
from radsift.search import Index
from radsift.serve import create_app
from radsift.serve.app import STATIC_DIR

TOKEN = "timeline-token-0123456789abcdef"
ROWS = [  # id, patient, date, findings
    ("a1", "A", "2025-01-10", "No pneumothorax. No pleural effusion."),
    ("a2", "A", "2025-02-01", "Small right pneumothorax. Small left pleural effusion."),
    ("a3", "A", "2025-03-01", "Right pneumothorax persists. No pleural effusion."),
    ("b1", "B/7", "2025-01-05", "Possible small pneumothorax."),
    ("c0", "C", "", "Heart size is normal."),
]


def _build(root: Path, header: str, rows: list[str], opts: ReaderOptions) -> Path:
    corpus = root / f"{header.split(',')[0]}-{len(rows)}.csv"
    corpus.write_text(header + "\n" + "".join(r + "\n" for r in rows))
    enc = HashingEncoder(root / "model")
    build_index(root / corpus.stem, list(read_corpus([corpus], opts)), encoder=enc, progress=False)
    return root / corpus.stem


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("tlpage")
    idx = _build(root, "id,mrn,exam_date,findings", [",".join(r) for r in ROWS],
                 ReaderOptions(sections={"findings": "findings"}, patient_column="mrn", date_column="exam_date"))
    return idx, HashingEncoder(root / "model")


@pytest.fixture(scope="module")
def client(built):
    idx, enc = built
    return TestClient(create_app(Index.open(idx, encoder=enc)))


def test_the_timeline_route_answers_what_radsift_timeline_prints(client, built):
    res = client.get("/api/timeline/A")
    assert res.status_code == 200, res.text
    body = res.json()
    assert body["patient"] == "A" and body["count"] == 3
    assert [r["report_id"] for r in body["reports"]] == ["a1", "a2", "a3"]
    assert body["findings"] == ["pleural effusion", "pneumothorax"]
    assert [r["findings"]["pneumothorax"] for r in body["reports"]] == ["absent", "present", "present"]
    assert body["reports"][1]["evidence"]["pneumothorax"] == "Small right pneumothorax."
    cli = CliRunner().invoke(cli_app, ["timeline", str(built[0]), "A", "--json", "--no-audit"])
    assert cli.exit_code == 0, cli.output
    assert [json.loads(line) for line in cli.output.splitlines()] == body["reports"]  # one implementation
    # an id with a slash, and an undated report
    assert client.get("/api/timeline/B/7").json()["reports"][0]["findings"] == {"pneumothorax": "uncertain"}
    assert client.get("/api/timeline/C").json()["reports"][0]["date"] is None
    assert client.get("/api/timeline/%20A%20").json()["count"] == 3  # spaces around an id are dropped


def test_an_unknown_patient_is_a_404_and_bad_ids_a_422(client):
    res = client.get("/api/timeline/Z9")
    assert res.status_code == 404 and res.json()["detail"] == "no report of patient 'Z9' in this index"
    assert "/tmp" not in res.text  # the server's folders are not named to a client
    for bad, words in (("x" * 201, "the limit is 200"), ("A%00B", "control or invisible"), ("%20", "empty")):
        res = client.get(f"/api/timeline/{bad}")
        assert res.status_code == 422 and words in res.json()["detail"], res.text
    # the same rule for the search's patient filter (the input policy: radsift.search.options.POLICY)
    res = client.get("/api/search", params={"q": "pneumothorax", "patient": "A\x00B", "mode": "bm25"})
    assert res.status_code == 422 and "control or invisible" in res.json()["detail"]
    res = client.get("/api/timeline/A", params={"k": 3})
    assert res.status_code == 422 and "unknown parameter" in res.json()["detail"]


def test_an_index_without_patients_is_refused_in_one_line(tmp_path):
    idx = _build(tmp_path, "id,findings", ["r1,No pneumothorax."], ReaderOptions(sections={"findings": "findings"}))
    res = TestClient(create_app(Index.open(idx, encoder=HashingEncoder(tmp_path / "model")))).get("/api/timeline/A")
    assert res.status_code == 422 and "\n" not in res.json()["detail"]
    assert res.json()["detail"].startswith("this index holds no patients: build it with --patient-column")


def test_the_timeline_needs_the_token_and_is_audited(built, tmp_path):
    idx, enc = built
    audit = tmp_path / "audit.jsonl"
    client = TestClient(create_app(Index.open(idx, encoder=enc), token=TOKEN, audit_log=audit))
    assert client.get("/api/timeline/A").status_code == 401
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert client.get("/api/timeline/A", headers=auth).status_code == 200
    assert client.get("/api/timeline/Q", headers=auth).status_code == 404
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(x["event"], x["query"], x["found"], x["result_ids"]) for x in lines] == [
        ("timeline", "A", True, ["a1", "a2", "a3"]), ("timeline", "Q", False, [])]
    assert "pneumothorax" not in audit.read_text()  # ids, never report text
    os.remove(audit)
    audit.mkdir()  # no audit line, no answer
    res = client.get("/api/timeline/A", headers=auth)
    assert res.status_code == 503 and "a2" not in res.text


def test_the_page_asks_the_timeline_route():
    js = (STATIC_DIR / "app.js").read_text()
    html = (STATIC_DIR / "index.html").read_text()
    assert '"/api/timeline/" + encodeURIComponent(patient)' in js
    assert 'id="timeline-form"' in html and "$(\"timeline-form\")" in js
