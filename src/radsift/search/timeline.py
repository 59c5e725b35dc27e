"""Patients over time: a patient's reports in date order with each finding's status, and the patients whose
series shows a finding become new, resolve or persist.

The status of a finding in a report is what its sentences' labels state (the index's weak labels, the
lexicon's findings): ``present`` when a sentence states it, else ``uncertain`` when one hedges it, else
``absent`` when one denies it; a finding no sentence mentions is ``not mentioned``. A patient's series is
their reports that carry a ``date`` (``--date-column`` or a feed's own), oldest first; reports without a
date are listed by :func:`patient_timeline` after the dated ones and take no part in changes.

Changes of one finding, between consecutive dated reports of a patient:

* ``new``: the first report stating it present after one that states it absent or does not mention it;
* ``resolved``: a report stating it absent after one stating it present;
* ``persistent``: a report stating it present after one stating it present.

``within`` (days) keeps a change only when its report came at most that long after the report before.
Each change carries its report and the sentence that states it as evidence.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np

from radsift.errors import ConfigError
from radsift.index.reader import IndexStore
from radsift.ranking.tiers import STATUS_CODES
from radsift.search.query import Filter, check_patient

CHANGES = ("new", "resolved", "persistent")
NOT_MENTIONED = "not mentioned"
_STATUS_NAME = {code: name for name, code in STATUS_CODES.items()}
# The order a report's sentences decide its status in: one stating it present wins.
_PRECEDENCE = {"present": 0, "uncertain": 1, "absent": 2}


@dataclass(frozen=True)
class TimelineEntry:
    """One report of a patient: its date, exam and each finding's status (with the sentence stating it)."""

    report_id: str
    patient: str | None
    date: str | None
    datetime: str | None
    exam: str | None
    findings: Mapping[str, str] = field(default_factory=dict)  # finding -> present | uncertain | absent
    evidence: Mapping[str, str] = field(default_factory=dict)  # finding -> the sentence deciding it

    def status(self, finding: str) -> str:
        return self.findings.get(finding, NOT_MENTIONED)

    def to_dict(self) -> dict[str, Any]:
        return {"report_id": self.report_id, "patient": self.patient, "date": self.date, "datetime": self.datetime, "exam": self.exam,
                "findings": dict(self.findings), "evidence": dict(self.evidence)}


@dataclass(frozen=True)
class PatientChange:
    """A patient whose series shows ``change`` of ``finding`` at ``report`` (after ``before``)."""

    patient: str
    finding: str
    change: str
    report: TimelineEntry
    before: TimelineEntry
    days: int | None  # between the two reports

    def to_dict(self) -> dict[str, Any]:
        return {"patient": self.patient, "finding": self.finding, "change": self.change,
                "report_id": self.report.report_id, "date": self.report.date,
                "status": self.report.status(self.finding), "evidence": self.report.evidence.get(self.finding, ""),
                "before_id": self.before.report_id, "before_date": self.before.date,
                "before_status": self.before.status(self.finding), "days": self.days}


def parse_within(text: str | int | None) -> int | None:
    """``--within``: ``90d``, ``12w``, ``6m`` (30-day months), ``1y`` or a number of days -> days.

    Raises:
        ConfigError: Not a positive duration.
    """
    if text is None or text == "":
        return None
    m = re.fullmatch(r"\s*(\d+)\s*([dwmy]?)\s*", str(text).lower())
    if not m or int(m.group(1)) <= 0:
        raise ConfigError(f"--within {str(text)[:40]!r}: expected a positive duration such as 90d, 12w, 6m or 1y")
    return int(m.group(1)) * {"": 1, "d": 1, "w": 7, "m": 30, "y": 365}[m.group(2)]


def _entries(store: IndexStore, rows: np.ndarray) -> list[TimelineEntry]:
    """Timeline entries of report rows (store order), with each finding's status from the labels."""
    rows = np.asarray(rows, dtype=np.int64)
    if not rows.size:
        return []
    labels = store.labels()
    sent_report = store.units("sentence").report_row
    of_label = sent_report[labels.row] if labels.row.size else np.zeros(0, np.int64)
    keep = np.isin(of_label, rows)
    best: dict[int, dict[str, tuple[int, int]]] = {}  # report row -> finding -> (precedence, sentence row)
    names = store.manifest.findings
    for sent, rep, code, status in zip(labels.row[keep].tolist(), of_label[keep].tolist(),
                                       labels.finding[keep].tolist(), labels.status[keep].tolist()):
        name = _STATUS_NAME[status]
        seen = best.setdefault(rep, {})
        here = (_PRECEDENCE[name], sent)
        if names[code] not in seen or here < seen[names[code]]:
            seen[names[code]] = here
    texts = store.sentences_by_rows(sorted({s for f in best.values() for _, s in f.values()}))
    reports = store.reports_by_rows(rows.tolist())
    status_of = {p: n for n, p in _PRECEDENCE.items()}
    out = []
    for row in rows.tolist():
        meta = reports[row].metadata
        found = best.get(row, {})
        out.append(TimelineEntry(reports[row].id, meta.get("patient"), meta.get("date"), meta.get("datetime"), meta.get("exam"),
                                 {f: status_of[p] for f, (p, _) in sorted(found.items())},
                                 {f: texts[s].text for f, (_, s) in sorted(found.items())}))
    return out


def _in_order(entries: list[TimelineEntry]) -> list[TimelineEntry]:
    return sorted(entries, key=lambda e: (e.date is None, e.datetime or e.date or "", e.report_id))


class UnknownPatientError(ConfigError):
    """The index names patients, but not this one (the HTTP API answers it 404)."""


def require_patients(metadata_keys, where, prefix: str = "") -> None:
    """Refuse, in one line, an index (``where``) whose reports name no patients (``prefix``: the flag asking).

    Raises:
        ConfigError: No ``patient`` among the index's metadata keys.
    """
    if "patient" not in metadata_keys:
        raise ConfigError(f"{prefix}{where} holds no patients: build it with --patient-column (or from a FHIR or "
                          "HL7 feed, which name them)")


def _require_patients(store: IndexStore, where) -> None:
    require_patients(store.manifest.metadata_keys, where)


def store_timeline(store: IndexStore, patient: str, where: str | None = None) -> list[TimelineEntry]:
    """:func:`patient_timeline` over an open store (the web service's live generation); ``where`` names the
    index in messages (default: its folder).

    Raises:
        ConfigError: A patient id the input policy refuses (:func:`radsift.search.query.check_patient`), or
            an index without patients.
        UnknownPatientError: The index holds no report of this patient.
    """
    where = str(store.index_dir) if where is None else where
    patient = check_patient(patient)
    _require_patients(store, where)
    rows = store.report_rows_where([Filter("patient", patient)])
    if not rows.size:
        raise UnknownPatientError(f"no report of patient {patient[:80]!r} in {where}")
    return _in_order(_entries(store, rows))


def patient_timeline(index_dir: str | Path, patient: str) -> list[TimelineEntry]:
    """A patient's reports in date order (undated last), each with its findings' statuses.

    Raises:
        ConfigError: A patient id the input policy refuses, or an index without patients.
        UnknownPatientError: The index holds no report of this patient.
    """
    store = IndexStore.open(index_dir)
    try:
        return store_timeline(store, patient, str(index_dir))
    finally:
        store.close()


def resolve_finding(name: str, findings: list[str]) -> str:
    """The index's finding named ``name`` (case and spacing aside).

    Raises:
        ConfigError: No such finding; the message suggests close names.
    """
    wanted = " ".join(str(name).lower().replace("_", " ").split())
    for f in findings:
        if " ".join(f.lower().replace("_", " ").split()) == wanted:
            return f
    close = difflib.get_close_matches(wanted, findings, n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else f" (its findings: {', '.join(findings[:12])} ...)"
    raise ConfigError(f"{name!r} is not a finding this index labels{hint}")


def series_changes(entries: list[TimelineEntry], finding: str, change: str,
                   within: int | None = None) -> Iterator[tuple[TimelineEntry, TimelineEntry, int | None]]:
    """``(report, before, days)`` of each ``change`` of ``finding`` in one patient's dated series."""
    dated = [e for e in _in_order(entries) if e.date]
    for before, report in zip(dated, dated[1:]):
        was, now = before.status(finding), report.status(finding)
        hit = (change == "new" and now == "present" and was in ("absent", NOT_MENTIONED)
               or change == "resolved" and now == "absent" and was == "present"
               or change == "persistent" and now == "present" and was == "present")
        if not hit:
            continue
        days = (np.datetime64(report.date) - np.datetime64(before.date)).astype(int).item()
        if within is None or days <= within:
            yield report, before, days
        if change == "new":
            break  # the first time it appears


def finding_changes(index_dir: str | Path, finding: str, change: str = "new",
                    within: int | str | None = None) -> list[PatientChange]:
    """Every patient whose dated series shows ``change`` of ``finding`` (see the module docstring).

    Raises:
        ConfigError: Unknown change or finding, a bad ``within``, or an index without patients.
    """
    if change not in CHANGES:
        raise ConfigError(f"--change {change!r}: expected one of {', '.join(CHANGES)}")
    days = parse_within(within) if not isinstance(within, int) else within
    store = IndexStore.open(index_dir)
    try:
        _require_patients(store, index_dir)
        name = resolve_finding(finding, list(store.manifest.findings))
        # Every report: a scan, fine for the archives of a site (a patient index would serve millions).
        entries = _entries(store, np.arange(len(store.report_ids)))
    finally:
        store.close()
    by_patient: dict[str, list[TimelineEntry]] = {}
    for entry in entries:
        if entry.patient:
            by_patient.setdefault(entry.patient, []).append(entry)
    out = []
    for patient in sorted(by_patient):
        for report, before, gap in series_changes(by_patient[patient], name, change, days):
            out.append(PatientChange(patient, name, change, report, before, gap))
    return out
