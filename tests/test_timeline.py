"""Issue 34, items 2 and 3: patients and dates stored, a patient's timeline, and "new", "resolved" and
"persistent" findings over a patient's series, with evidence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from radsift.cli import app
from radsift.corpus import read_corpus
from radsift.corpus.options import ReaderOptions
from radsift.errors import ConfigError
from radsift.index import build_index
from radsift.models.hashing import HashingEncoder
from radsift.search.timeline import finding_changes, parse_within, patient_timeline

ROWS = [  # id, patient, date, findings
    ("a1", "A", "2025-01-10", "No pneumothorax. No pleural effusion."),
    ("a2", "A", "2025-02-01", "Small right pneumothorax. Small left pleural effusion."),
    ("a3", "A", "2025-03-01", "Right pneumothorax persists. No pleural effusion."),
    ("b1", "B", "2025-01-05", "Large left pneumothorax."),
    ("b2", "B", "2025-01-20", "No pneumothorax."),
    ("c1", "C", "2024-01-01", "Heart size is normal."),
    ("c2", "C", "2025-01-01", "Tiny apical pneumothorax."),
    ("c3", "C", "", "Possible small pneumothorax."),
]


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("timeline")
    corpus = tmp / "reports.csv"
    corpus.write_text("id,mrn,exam_date,findings\n" + "".join(f"{i},{p},{d},{t}\n" for i, p, d, t in ROWS))
    opts = ReaderOptions(sections={"findings": "findings"}, patient_column="mrn", date_column="exam_date")
    build_index(tmp / "idx", list(read_corpus([corpus], opts)), encoder=HashingEncoder(tmp / "model"), progress=False)
    return tmp / "idx"


def test_a_patients_reports_come_in_date_order_with_each_findings_status(index_dir):
    entries = patient_timeline(index_dir, "A")
    assert [e.report_id for e in entries] == ["a1", "a2", "a3"]
    assert [e.status("pneumothorax") for e in entries] == ["absent", "present", "present"]
    assert [e.status("pleural effusion") for e in entries] == ["absent", "present", "absent"]
    assert entries[1].evidence["pneumothorax"] == "Small right pneumothorax."
    c = patient_timeline(index_dir, "C")
    assert [e.report_id for e in c] == ["c1", "c2", "c3"] and c[-1].date is None  # undated last
    assert c[0].status("pneumothorax") == "not mentioned" and c[2].status("pneumothorax") == "uncertain"


def test_new_resolved_and_persistent(index_dir):
    new = finding_changes(index_dir, "pneumothorax", "new")
    # A: absent then present; C: not mentioned then present. B was present at its first report: not new.
    assert [(c.patient, c.report.report_id, c.before.report_id) for c in new] == [("A", "a2", "a1"), ("C", "c2", "c1")]
    assert new[0].days == 22 and new[0].to_dict()["evidence"] == "Small right pneumothorax."
    assert [c.patient for c in finding_changes(index_dir, "pneumothorax", "new", within="30d")] == ["A"]
    assert [(c.patient, c.report.report_id) for c in finding_changes(index_dir, "Pneumothorax", "resolved")] == [("B", "b2")]
    assert [c.report.report_id for c in finding_changes(index_dir, "pneumothorax", "persistent")] == ["a3"]
    assert [c.report.report_id for c in finding_changes(index_dir, "pleural effusion", "resolved")] == ["a3"]


def test_bad_requests_say_what_is_wrong(index_dir, tmp_path):
    with pytest.raises(ConfigError, match="no report of patient 'Z'"):
        patient_timeline(index_dir, "Z")
    with pytest.raises(ConfigError, match="did you mean pneumothorax"):
        finding_changes(index_dir, "pneumothorx")
    with pytest.raises(ConfigError, match="--change"):
        finding_changes(index_dir, "pneumothorax", "worse")
    with pytest.raises(ConfigError, match="--within"):
        parse_within("soon")
    assert parse_within("12w") == 84 and parse_within("6m") == 180 and parse_within(45) == 45
    corpus = tmp_path / "plain.csv"
    corpus.write_text("id,findings\nr1,No pneumothorax.\n")
    build_index(tmp_path / "plain", list(read_corpus([corpus], ReaderOptions(sections={"findings": "findings"}))),
                encoder=HashingEncoder(tmp_path / "model"), progress=False)
    with pytest.raises(ConfigError, match="holds no patients"):
        patient_timeline(tmp_path / "plain", "A")


def test_cli_timeline_and_patients(index_dir):
    runner = CliRunner()
    res = runner.invoke(app, ["timeline", str(index_dir), "A", "--json"])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in res.output.splitlines()]
    assert [r["report_id"] for r in rows] == ["a1", "a2", "a3"] and rows[1]["findings"]["pneumothorax"] == "present"
    res = runner.invoke(app, ["patients", str(index_dir), "pneumothorax", "--change", "new", "--json"])
    assert res.exit_code == 0, res.output
    assert [json.loads(line)["patient"] for line in res.output.splitlines()] == ["A", "C"]
    res = runner.invoke(app, ["timeline", str(index_dir), "A"])
    assert res.exit_code == 0 and "2025-02-01" in res.output and "a2" in res.output
    res = runner.invoke(app, ["patients", str(index_dir), "pneumothorax", "--within", "soon"])
    assert res.exit_code == 2 and "--within" in res.output
