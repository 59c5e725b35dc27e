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


FOLLOW_ROWS = [  # id, patient, date, modality word, text
    ("f1", "P1", "2025-01-31", "Small nodule. Recommend follow-up CT chest in 3 months."),  # due 2025-04-30, done by f2
    ("f2", "P1", "2025-05-02", "Stable nodule. No further follow-up is needed."),
    ("f3", "P2", "2025-01-10", "Follow-up chest radiograph in 6 weeks is recommended to document resolution."),  # overdue
    ("f4", "P3", "2025-03-01", "Consider MRI for further characterization."),  # no interval: never overdue
    ("f5", "P4", "2025-06-01", "Recommend repeat ultrasound in 1 year."),  # not due yet on 2025-12-01
]


@pytest.fixture(scope="module")
def follow_index(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("followups")
    corpus = tmp / "reports.csv"
    corpus.write_text("id,mrn,exam_date,impression\n" + "".join(f"{i},{p},{d},{t}\n" for i, p, d, t in FOLLOW_ROWS))
    opts = ReaderOptions(sections={"impression": "impression"}, patient_column="mrn", date_column="exam_date")
    build_index(tmp / "idx", list(read_corpus([corpus], opts)), encoder=HashingEncoder(tmp / "model"), progress=False)
    return tmp / "idx"


def test_followups_due_done_and_overdue(follow_index):
    from radsift.search.followups import followups

    found = {r.report_id: r for r in followups(follow_index, as_of="2025-12-01")}
    assert sorted(found) == ["f1", "f3", "f4", "f5"]  # "No further follow-up is needed" is not one
    assert found["f1"].due == "2025-04-30" and found["f1"].done_by == "f2" and not found["f1"].overdue
    assert found["f3"].due == "2025-02-21" and found["f3"].modality == "XR" and found["f3"].overdue
    assert found["f4"].due is None and not found["f4"].overdue
    assert found["f5"].due == "2026-06-01" and not found["f5"].overdue
    assert [r.report_id for r in followups(follow_index, as_of="2025-12-01", overdue_only=True)] == ["f3"]
    # as of the day before f2, f1 was due and not done: overdue then
    assert [r.report_id for r in followups(follow_index, as_of="2025-05-01", overdue_only=True)] == ["f3", "f1"]
    res = CliRunner().invoke(app, ["followups", str(follow_index), "--overdue", "--as-of", "2025-12-01", "--json"])
    assert res.exit_code == 0, res.output
    assert [json.loads(line)["report_id"] for line in res.output.splitlines()] == ["f3"]
    res = CliRunner().invoke(app, ["followups", str(follow_index), "--as-of", "01/12/2025"])
    assert res.exit_code == 2 and "--as-of" in res.output


def test_the_extractor_meets_its_targets_on_the_held_out_half():
    """Issue 34, item 4: on the test half of the set written for radsift (never tuned on: see followup_eval),
    precision >= 0.95, recall >= 0.90, due dates exact."""
    from radsift.evaluation.followup_eval import evaluate_followups, load_cases

    result = evaluate_followups("test")
    assert result["recommendations"] >= 30 and len(load_cases("test")) >= 60
    assert result["precision"] >= 0.95 and result["recall"] >= 0.90 and result["due_date_exact"] == 1.0


def test_due_dates_are_calendar_exact():
    from radsift.labels.followups import FollowUp, due_date

    assert due_date("2025-01-31", FollowUp(None, 1, "month")) == "2025-02-28"
    assert due_date("2024-01-31", FollowUp(None, 1, "month")) == "2024-02-29"
    assert due_date("2025-11-15", FollowUp(None, 3, "month")) == "2026-02-15"
    assert due_date("2024-02-29", FollowUp(None, 1, "year")) == "2025-02-28"
    assert due_date("2025-01-31", FollowUp(None, 6, "week")) == "2025-03-14"
    assert due_date("2025-01-31", FollowUp(None, None, None)) is None


def test_patient_commands_are_audited(index_dir, tmp_path):
    log = tmp_path / "audit.jsonl"
    res = CliRunner().invoke(app, ["timeline", str(index_dir), "A", "--json", "--audit-log", str(log)])
    assert res.exit_code == 0, res.output
    line = json.loads(log.read_text().splitlines()[-1])
    assert line["event"] == "timeline" and line["result_ids"] == ["a1", "a2", "a3"]
    assert "pneumothorax" not in log.read_text()  # ids, never report text
    res = CliRunner().invoke(app, ["patients", str(index_dir), "pneumothorax", "--audit-log", str(log)])
    assert res.exit_code == 0 and json.loads(log.read_text().splitlines()[-1])["result_ids"] == ["a2", "c2"]


def test_serial_demo_corpus_truth_is_consistent():
    from radsift.demo.serial import serial_corpus

    corpus = serial_corpus(20, seed=1, pool=400)
    ids = {r.id: r for r in corpus.reports}
    assert all(r.metadata["patient"] and r.metadata["date"] for r in corpus.reports)
    for patient, finding, rid in corpus.new:
        assert rid in ids and ids[rid].metadata["patient"] == patient and not rid.endswith("-1")
    overdue = corpus.overdue("2026-06-30")
    assert overdue <= set(corpus.recommendations) and not overdue & corpus.done
    assert corpus.recommendations and corpus.new


def test_search_by_date_range_and_patient(index_dir, hashing_model):
    """Issue 34, item 2: --since / --until / --patient (and where=date>=...) filter a search, alike everywhere."""
    from radsift.search import Index

    index = Index.open(index_dir)
    ids = lambda **kw: sorted(h.report_id for h in index.search("pneumothorax", k=50, mode="bm25", **kw))  # noqa: E731
    assert ids(since="2025-01-20") == ["a2", "a3", "b2"]
    assert ids(since="2025-01-01", until="2025-01-31") == ["a1", "b1", "b2", "c2"]
    assert ids(patient="A") == ["a1", "a2", "a3"]
    assert ids(patient="A", until="20250201") == ["a1", "a2"]  # YYYYMMDD read as a day
    assert ids(where=["date>=2025-02-01", "date<=2025-02-28"]) == ["a2"]  # ranges on one key: all hold
    with pytest.raises(ConfigError, match="since: '01/02/2025' is not a date"):
        index.search("pneumothorax", since="01/02/2025")
    res = CliRunner().invoke(app, ["search", str(index_dir), "pneumothorax", "--mode", "bm25", "--patient", "B",
                                   "--json", "--no-audit"])
    assert res.exit_code == 0, res.output
    assert sorted(h["report_id"] for h in json.loads(res.output)["hits"]) == ["b1", "b2"]


def test_an_index_without_dates_refuses_date_filters(tmp_path, hashing_model):
    from radsift.search import Index

    corpus = tmp_path / "plain.csv"
    corpus.write_text("id,findings\nr1,No pneumothorax.\n")
    build_index(tmp_path / "plain", list(read_corpus([corpus], ReaderOptions(sections={"findings": "findings"}))),
                encoder=HashingEncoder(hashing_model), progress=False)
    with pytest.raises(ConfigError, match="carry no dates"):
        Index.open(tmp_path / "plain").search("x", since="2025-01-01")
