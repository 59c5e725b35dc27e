"""Issue 34, item 3: ``radsift export --patients`` writes one row per patient beside the report cohort, under
the export's rules (formula cells neutralised, nothing overwritten without --force, audited first)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from radsift.cli import app
from radsift.corpus import read_corpus
from radsift.corpus.options import ReaderOptions
from radsift.index import build_index
from radsift.models.hashing import HashingEncoder
from radsift.search.cohort import read_cohort_csv

FORMULA = "=cmd|' /C calc'!A0"
ROWS = [  # id, patient, date, findings
    ("a1", "A", "2025-01-10", "No pneumothorax."),
    ("a3", "A", "2025-03-01", "Right pneumothorax persists."),
    ("a2", "A", "2025-02-01", "Small right pneumothorax."),
    ("a4", "A", "", "Small pneumothorax again."),
    ("b1", FORMULA, "2025-01-05", "Large left pneumothorax."),
    ("c1", "C", "", "Tiny apical pneumothorax."),
    ("d1", "", "2025-01-02", "Moderate pneumothorax."),
]


def _index(root: Path, rows, patients: bool = True) -> Path:
    corpus = root / "reports.csv"
    with open(corpus, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "mrn", "exam_date", "findings"])
        w.writerows(rows)
    opts = ReaderOptions(sections={"findings": "findings"}, **(
        {"patient_column": "mrn", "date_column": "exam_date"} if patients else {}))
    build_index(root / "idx", list(read_corpus([corpus], opts)), encoder=HashingEncoder(root / "model"),
                progress=False)
    return root / "idx"


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory) -> Path:
    return _index(tmp_path_factory.mktemp("exp-patients"), ROWS)


def _export(index_dir, out, *extra):
    return CliRunner().invoke(app, ["export", str(index_dir), "pneumothorax", "--mode", "bm25", "--out", str(out),
                                    "--patients", *extra])


def test_one_row_per_patient_beside_the_cohort(index_dir, tmp_path):
    out = tmp_path / "cohort.csv"
    res = _export(index_dir, out)
    assert res.exit_code == 0, res.output
    assert "wrote 3 patients to" in res.output and "(1 reports name no patient)" in res.output
    cohort_ids = {r["report_id"] for r in read_cohort_csv(out)}
    assert cohort_ids == {"a2", "a3", "a4", "b1", "c1", "d1"}  # a1 states it absent
    rows = read_cohort_csv(tmp_path / "cohort.patients.csv")
    assert [r["patient"] for r in rows] == ["'" + FORMULA, "A", "C"]  # a formula is shown as text
    a = rows[1]
    assert (a["reports"], a["first_date"], a["last_date"], a["first_report"]) == ("3", "2025-02-01", "2025-03-01", "a2")
    assert a["report_ids"] == "a2;a3;a4" and a["first_evidence"] == "Small right pneumothorax."  # undated last
    c = rows[2]
    assert (c["reports"], c["first_date"], c["last_date"], c["report_ids"]) == ("1", "", "", "c1")
    audit = [json.loads(line) for line in (index_dir / "audit" / "exports.jsonl").read_text().splitlines()]
    assert audit[-1]["patients_file"] == str((tmp_path / "cohort.patients.csv").resolve())


def test_jsonl_and_the_force_rule(index_dir, tmp_path):
    out = tmp_path / "cohort.jsonl"
    (tmp_path / "cohort.patients.jsonl").write_text("keep me\n")
    res = _export(index_dir, out)
    assert res.exit_code != 0 and "cohort.patients.jsonl exists; give --force" in res.output
    assert not out.exists() and (tmp_path / "cohort.patients.jsonl").read_text() == "keep me\n"
    res = _export(index_dir, out, "--force")
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in (tmp_path / "cohort.patients.jsonl").read_text().splitlines()]
    assert rows[1] == {"patient": "A", "reports": 3, "first_date": "2025-02-01", "last_date": "2025-03-01",
                       "first_report": "a2", "first_evidence": "Small right pneumothorax.",
                       "report_ids": ["a2", "a3", "a4"]}
    assert rows[0]["patient"] == FORMULA  # JSON lines carry the id as it is
    # without --patients an existing patients file is none of the export's business
    res = CliRunner().invoke(app, ["export", str(index_dir), "pneumothorax", "--mode", "bm25", "--out",
                                   str(tmp_path / "other.csv")])
    assert res.exit_code == 0 and not (tmp_path / "other.patients.csv").exists()


def test_an_index_without_patients_is_refused_before_anything_is_written(tmp_path):
    idx = _index(tmp_path, [("r1", "", "", "Small pneumothorax.")], patients=False)
    out = tmp_path / "cohort.csv"
    res = _export(idx, out)
    assert res.exit_code != 0 and "--patients:" in res.output and "holds no patients" in res.output
    assert "Traceback" not in res.output and not out.exists() and not (tmp_path / "cohort.patients.csv").exists()
