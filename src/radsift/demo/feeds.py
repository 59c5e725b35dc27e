"""The demo corpus as hospital feeds: FHIR R4 ``DiagnosticReport`` resources and HL7 v2 ``ORU^R01`` messages.

Messages written for this project from the demo generator's reports (not copied from any site): each
report gets a patient (a few reports per patient) and an exam time (a patient's reports a few weeks
apart), so the feeds carry what a hospital's do. :func:`write_feeds` writes

* ``reports.ndjson``: a FHIR bulk export, one ``DiagnosticReport`` per line, its text as base64
  ``text/plain`` in ``presentedForm`` (and the impression also as ``conclusion``);
* ``bundle.json``: a searchset ``Bundle`` of the first reports with their ``Patient`` resources
  ``_include``d, the text as ``text/html``;
* ``reports.hl7``: one ``ORU^R01`` message per report (OBR-3 the accession number, PID-3 the patient,
  OBR-4 the exam, OBR-7 its time, one ``OBX`` per line of text);
* ``reports.mllp``: the same messages framed for MLLP.
"""

from __future__ import annotations

import base64
import html
import json
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Sequence

from radsift.records import Report

EXAM = ("71046", "XR CHEST 2 VIEWS")
LOINC_RADIOLOGY = {"system": "http://loinc.org", "code": "LP29684-5", "display": "Radiology"}
START = datetime(2025, 1, 6, 8, 0)


@dataclass(frozen=True)
class FeedItem:
    """A report with what a feed adds: its patient and exam time."""

    report: Report
    patient: str
    when: datetime


def assign_patients(reports: Sequence[Report], per_patient: int = 3, seed: int = 0) -> list[FeedItem]:
    """Give the reports patients (``per_patient`` consecutive reports each) and exam times (a patient's
    exams 7 to 90 days apart, in report order)."""
    rng = random.Random(seed)
    out = []
    for i, report in enumerate(reports):
        patient = f"P{i // per_patient + 1:05d}"
        if i % per_patient == 0:
            when = START + timedelta(days=rng.randrange(0, 365), minutes=rng.randrange(0, 600))
        else:
            when = out[-1].when + timedelta(days=rng.randrange(7, 91), minutes=rng.randrange(-120, 120))
        out.append(FeedItem(report, patient, when))
    return out


def report_text(report: Report) -> str:
    """A report's sections as the text a RIS sends: ``FINDINGS: ...`` lines."""
    return "\n".join(f"{name.upper()}: {text}" for name, text in report.sections.items())


def fhir_resource(item: FeedItem, *, as_html: bool = False) -> dict:
    """One ``DiagnosticReport`` (R4) of a feed item."""
    text = report_text(item.report)
    if as_html:
        body = "".join(f"<p>{html.escape(line)}</p>" for line in text.splitlines())
        form = {"contentType": "text/html; charset=utf-8", "data": base64.b64encode(body.encode()).decode()}
    else:
        form = {"contentType": "text/plain; charset=utf-8", "data": base64.b64encode(text.encode()).decode()}
    resource = {
        "resourceType": "DiagnosticReport", "id": item.report.id, "status": "final",
        "identifier": [{"system": "urn:demo:accession", "value": item.report.id}],
        "category": [{"coding": [LOINC_RADIOLOGY]}],
        "code": {"coding": [{"system": "http://www.ama-assn.org/go/cpt", "code": EXAM[0], "display": EXAM[1]}],
                 "text": EXAM[1]},
        "subject": {"reference": f"Patient/{item.patient}"},
        "effectiveDateTime": item.when.strftime("%Y-%m-%dT%H:%M:00Z"),
        "issued": (item.when + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:00Z"),
        "presentedForm": [form],
    }
    if "impression" in item.report.sections:
        resource["conclusion"] = item.report.sections["impression"]
    return resource


def _hl7_escape(text: str) -> str:
    return (text.replace("\\", "\\E\\").replace("|", "\\F\\").replace("^", "\\S\\").replace("&", "\\T\\")
            .replace("~", "\\R\\"))


def hl7_message(item: FeedItem, control: str) -> str:
    """One ``ORU^R01`` message (segments separated by CR) of a feed item."""
    stamp = item.when.strftime("%Y%m%d%H%M")
    segments = [
        f"MSH|^~\\&|DEMO-RIS|RADSIFT|EHR|RADSIFT|{stamp}||ORU^R01|{control}|P|2.5",
        f"PID|1||{item.patient}^^^RADSIFT^MR||DEMO^PATIENT",
        f"OBR|1|{control}|{item.report.id}|{EXAM[0]}^{EXAM[1]}^CPT|||{stamp}" + "|" * 18 + "F",
    ]
    lines = report_text(item.report).splitlines()
    segments += [f"OBX|{n}|TX|RPT^Report^L||{_hl7_escape(line)}||||||F" for n, line in enumerate(lines, 1)]
    return "\r".join(segments)


def write_feeds(reports: Sequence[Report], folder: Path, *, per_patient: int = 3, seed: int = 0,
                bundle_size: int = 5) -> dict[str, Path]:
    """Write the feeds of ``reports`` into ``folder`` (see the module docstring); returns name -> path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    items = assign_patients(reports, per_patient, seed)
    paths = {name: folder / name for name in ("reports.ndjson", "bundle.json", "reports.hl7", "reports.mllp")}
    with paths["reports.ndjson"].open("w", encoding="utf-8") as out:
        for item in items:
            out.write(json.dumps(fhir_resource(item), ensure_ascii=False) + "\n")
    head = items[:bundle_size]
    entries = [{"resource": fhir_resource(item, as_html=True), "search": {"mode": "match"}} for item in head]
    entries += [{"resource": {"resourceType": "Patient", "id": p}, "search": {"mode": "include"}}
                for p in dict.fromkeys(item.patient for item in head)]
    bundle = {"resourceType": "Bundle", "type": "searchset", "total": len(head), "entry": entries}
    paths["bundle.json"].write_text(json.dumps(bundle, indent=1, ensure_ascii=False), encoding="utf-8")
    write_hl7(items, paths["reports.hl7"])
    messages = [hl7_message(item, f"MSG{n:06d}") for n, item in enumerate(items, 1)]
    paths["reports.mllp"].write_bytes(b"".join(b"\x0b" + m.encode() + b"\x1c\r" for m in messages))
    return paths


def write_hl7(items: Sequence[FeedItem], path: Path) -> Path:
    """Write feed items as a file of ``ORU^R01`` messages (one after another, segments on lines)."""
    messages = [hl7_message(item, f"MSG{n:06d}") for n, item in enumerate(items, 1)]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("\n".join(m.replace("\r", "\n") for m in messages) + "\n", encoding="utf-8")
    return Path(path)
