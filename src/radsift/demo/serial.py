"""Patients with serial exams and known truth: which patient's reports state which finding when, and which
recommended follow-ups were done.

Reports come from the demo generator's pool (:func:`radsift.demo.generate_reports`) and are arranged into
series: each patient has 2 to 5 chest radiographs 7 to 120 days apart. Some series show a finding appear
(reports without it, then one stating it present), some have it from the first exam, some never. Some
reports close with a follow-up recommendation written for the demo ("Recommend follow-up CT chest in 3
months."); the patient's next exam comes before the due date or not at all.

The truth is the generator's own (what each report truly says, not what radsift's labeler reads), so a
benchmark measures the labeler, the timeline rules and the follow-up extractor together:

* ``new``: (patient, finding, report id) of the first report that truly states the finding present right
  after one that states it absent or does not mention it;
* ``overdue``: the report ids whose recommendation is due before ``as_of`` with no later exam of the patient.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import date, timedelta

from radsift.demo.generator import DemoReport, generate_reports
from radsift.demo.vocabulary import PRESENT
from radsift.records import Report

#: Recommendations the demo writes: (sentence, modality, months).
RECOMMENDATIONS = (
    ("Recommend follow-up CT chest in 3 months.", "CT", 3),
    ("Follow-up chest radiograph in 6 weeks is recommended to document resolution.", "XR", None),
    ("Suggest repeat chest x-ray in 2 months.", "XR", 2),
    ("Recommend chest CT in 6 months to assess for stability.", "CT", 6),
)
START = date(2024, 1, 1)


@dataclass
class SerialCorpus:
    """The series and their truth."""

    reports: list[Report]  # with metadata patient, date, modality
    new: set[tuple[str, str, str]] = field(default_factory=set)  # (patient, finding, report id)
    recommendations: dict[str, str] = field(default_factory=dict)  # report id -> due date
    done: set[str] = field(default_factory=set)  # report ids whose follow-up came (a later exam)

    def overdue(self, as_of: str) -> set[str]:
        """Report ids whose recommendation is due before ``as_of`` and not done by then."""
        return {rid for rid, due in self.recommendations.items() if due < as_of and rid not in self.done}


def _status(report: DemoReport, finding: str) -> str:
    found = [s for f, s, _ in report.truth if f == finding]
    return PRESENT if PRESENT in found else (found[0] if found else "not mentioned")


def _due(day: date, months: int | None) -> date:
    if months is None:
        return day + timedelta(weeks=6)
    month = day.month - 1 + months
    year, month = day.year + month // 12, month % 12 + 1
    for d in range(day.day, 0, -1):
        try:
            return date(year, month, d)
        except ValueError:
            continue
    raise AssertionError("unreachable")


def serial_corpus(n_patients: int = 200, seed: int = 0, pool: int = 3000, as_of: str = "2026-06-30",
                  follow_share: float = 0.3) -> SerialCorpus:
    """Patients with serial exams (see the module docstring); ids ``s-PATIENT-N``."""
    rng = random.Random(seed)
    reports = generate_reports(n=pool, seed=seed + 11)
    out = SerialCorpus([])
    used: set[int] = set()

    def draw() -> DemoReport:
        while True:
            i = rng.randrange(len(reports))
            if i not in used:
                used.add(i)
                return reports[i]

    for p in range(1, n_patients + 1):
        patient = f"P{p:04d}"
        day = START + timedelta(days=rng.randrange(0, 400))
        series: list[tuple[date, DemoReport]] = []
        for _ in range(rng.randint(2, 5)):
            series.append((day, draw()))
            day += timedelta(days=rng.randint(7, 120))
        for n, (day, demo) in enumerate(series):
            rid = f"s-{patient}-{n + 1}"
            sections = dict(demo.report.sections)
            follow = None
            if rng.random() < follow_share:
                follow = rng.choice(RECOMMENDATIONS)
                sections["impression"] = (sections.get("impression", "") + " " + follow[0]).strip()
            modality = "XR"
            out.reports.append(Report(rid, sections, {"patient": patient, "date": day.isoformat(),
                                                      "modality": modality, "exam": demo.report.metadata.get("exam", "")}))
            if follow is not None:
                due = _due(day, follow[2]).isoformat()
                out.recommendations[rid] = due
                later = [d for d, _ in series[n + 1:]]
                # done when a later exam came by as_of (of the modality when both name theirs: all exams are XR)
                if later and later[0].isoformat() <= as_of and (follow[1] == "XR" or follow[1] is None):
                    out.done.add(rid)
        findings = {f for _, d in series for f, s, _ in d.truth}
        for finding in findings:
            statuses = [_status(d, finding) for _, d in series]
            for n in range(1, len(series)):
                if statuses[n] == PRESENT and statuses[n - 1] in ("absent", "not mentioned"):
                    out.new.add((patient, finding, f"s-{patient}-{n + 1}"))
                    break
    return out
