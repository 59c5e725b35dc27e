"""Follow-up tracking: the recommendations an index's reports make, when each is due, and which are overdue.

A recommendation is a sentence :func:`radsift.labels.followups.find_followup` reads as one, in a report
with a ``date``; it is due its interval after that date. It is **done** when a later report of the same
patient (dated after the recommending report, at most ``as_of``) exists, of the recommended modality
when both say theirs; it is **overdue** when it is due before ``as_of`` and not done. Recommendations
without an interval ("recommend MRI") have no due date: they are listed, never overdue. Reports without a
patient or a date cannot be tracked and are counted apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from radsift.corpus.dates import normalise_date
from radsift.errors import ConfigError
from radsift.index.reader import IndexStore
from radsift.labels.followups import due_date, find_followup
from radsift.text.modalities import same_modality

# Sentences worth reading with the rules (most are not): a cheap prefilter over the whole index.
_MAYBE = re.compile(r"recommend|suggest|advis|follow|consider|repeat|surveillance|should|fleischner|annual|"
                    r"optional|warrant|may be|could be|would be|further", re.I)


@dataclass(frozen=True)
class Recommendation:
    """One recommended follow-up, its due date and what happened after."""

    patient: str | None
    report_id: str
    date: str | None
    sentence: str
    modality: str | None
    interval: str | None
    due: str | None
    done_by: str | None = None  # the later report that satisfies it
    overdue: bool = False

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _as_of(value: str | None) -> str:
    if value is None:
        return date.today().isoformat()
    try:
        return normalise_date(value)[0]
    except ValueError as exc:
        raise ConfigError(f"--as-of: {exc}") from None


def followups(index_dir: str | Path, *, as_of: str | None = None, overdue_only: bool = False) -> list[Recommendation]:
    """Every follow-up recommended in the index's reports (or only the overdue ones), oldest first.

    Raises:
        ConfigError: A bad ``as_of`` date, or an index whose reports carry no dates.
    """
    today = _as_of(as_of)
    store = IndexStore.open(index_dir)
    try:
        if "date" not in store.manifest.metadata_keys:
            raise ConfigError(f"{index_dir}: its reports carry no dates, so no follow-up can be tracked: build it "
                              "with --date-column and --patient-column (or from a FHIR or HL7 feed)")
        found = [(s.report_row, s.text, f) for s in store.all_sentences()
                 if _MAYBE.search(s.text) and (f := find_followup(s.text)) is not None]
        reports = store.reports_by_rows(sorted({row for row, _, _ in found}))
        series: dict[str, list[tuple[str, str | None, str]]] = {}  # patient -> (date, modality, id)
        for _, report in store.iter_reports():
            meta = report.metadata
            if meta.get("patient") and meta.get("date"):
                series.setdefault(meta["patient"], []).append((meta["date"], meta.get("modality"), report.id))
    finally:
        store.close()
    out = []
    for row, text, f in found:
        meta = reports[row].metadata
        patient, day = meta.get("patient"), meta.get("date")
        due = due_date(day, f) if day else None
        done = None
        if patient and day:
            want = same_modality(f.modality)
            done = next((rid for d, modality, rid in sorted(series.get(patient, []))
                         if day < d <= today and (want is None or modality is None or same_modality(modality) == want)),
                        None)
        overdue = due is not None and due < today and done is None
        if overdue or not overdue_only:
            out.append(Recommendation(patient, reports[row].id, day, text, f.modality, f.interval, due, done, overdue))
    return sorted(out, key=lambda r: (r.due or "9999", r.date or "", r.report_id))
