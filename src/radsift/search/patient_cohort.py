"""A cohort by patient: ``radsift export --patients`` writes, beside the report cohort, one row per patient.

Each row says how many of the patient's reports are in the cohort, the first and last of their dates, the
first report (the earliest dated one, else the first listed) with the sentence that puts it in the cohort,
and every report id of the patient in the cohort, oldest first (undated last). Reports that name no patient
are counted, not listed. The file is CSV (every text cell through :func:`radsift.search.cohort.csv_cell`,
as the cohort's) or JSON lines, as the cohort's ``--out`` is, and it is written atomically.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from radsift.errors import ConfigError
from radsift.search.cohort import Cohort, CohortRow, _atomic_write, _CsvRows, cohort_format, csv_cell

PATIENT_COLUMNS = ("patient", "reports", "first_date", "last_date", "first_report", "first_evidence", "report_ids")


@dataclass(frozen=True)
class PatientRow:
    """One patient of a cohort."""

    patient: str
    report_ids: tuple[str, ...]  # in the cohort, oldest first, undated last
    first_date: str | None
    last_date: str | None
    first_evidence: str  # the sentence that puts the first report in the cohort

    @property
    def reports(self) -> int:
        return len(self.report_ids)

    def to_dict(self) -> dict[str, Any]:
        return {"patient": self.patient, "reports": self.reports, "first_date": self.first_date,
                "last_date": self.last_date, "first_report": self.report_ids[0],
                "first_evidence": self.first_evidence, "report_ids": list(self.report_ids)}


def _evidence_text(row: CohortRow) -> str:
    if row.evidence:
        return row.evidence[0].text
    return row.hit.sentence.text if row.hit.sentence is not None else ""


def cohort_patients(cohort: Cohort) -> tuple[list[PatientRow], int]:
    """The cohort's patients (sorted by id) and how many of its reports name no patient."""
    by_patient: dict[str, list[CohortRow]] = {}
    unnamed = 0
    for row in cohort.rows:
        patient = str(row.hit.metadata.get("patient") or "").strip()
        if patient:
            by_patient.setdefault(patient, []).append(row)
        else:
            unnamed += 1
    out = []
    for patient in sorted(by_patient):
        rows = sorted(by_patient[patient], key=lambda r: (not r.hit.metadata.get("date"),
                                                          str(r.hit.metadata.get("date") or ""), r.hit.rank))
        dates = [str(r.hit.metadata["date"]) for r in rows if r.hit.metadata.get("date")]
        out.append(PatientRow(patient, tuple(r.hit.report_id for r in rows), dates[0] if dates else None,
                              dates[-1] if dates else None, _evidence_text(rows[0])))
    return out, unnamed


def render_patients(rows: list[PatientRow], fmt: str) -> str:
    """The rows as CSV (report ids joined by ``;``) or JSON lines."""
    if fmt == "jsonl":
        return "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in rows)
    buf = io.StringIO()
    writer = _CsvRows(buf)
    writer.writerow([csv_cell(c) for c in PATIENT_COLUMNS])
    for r in rows:
        d = r.to_dict()
        d["report_ids"] = ";".join(r.report_ids)
        writer.writerow([csv_cell(d[c]) for c in PATIENT_COLUMNS])
    return buf.getvalue()


def patients_path(out: str | Path) -> Path:
    """Where the patients of an export go: ``cohort.csv`` -> ``cohort.patients.csv``."""
    out = Path(out)
    return out.with_name(f"{out.stem}.patients{out.suffix}")


def check_patients_out(out: str | Path) -> Path:
    """The patients file of ``--out``, refused (before the search) when it is a folder.

    Raises:
        ConfigError: The patients file's path is a folder.
    """
    path = patients_path(out)
    if path.is_dir():
        raise ConfigError(f"--out {out}: its patients file {path} is a folder: name another file")
    return path


def write_patients(cohort: Cohort, out: str | Path, fmt: str | None = None) -> tuple[Path, int, int]:
    """Write the cohort's patients beside ``out`` (:func:`patients_path`), atomically, in ``out``'s format.

    Returns:
        ``(patients file, patients, reports naming no patient)``.
    """
    fmt = cohort_format(Path(out), fmt)
    path = check_patients_out(out)
    rows, unnamed = cohort_patients(cohort)
    _atomic_write(path, render_patients(rows, fmt))
    return path, len(rows), unnamed
