"""Ingest rate of the readers on the same demo reports: CSV, FHIR NDJSON (every resource validated), HL7 plain and MLLP.

Also CSV with the reports' text in one column (``--text-column``: sections found in the free text, as the feed
readers find them), which shows what of a feed's cost is finding the sections.

Run:  .venv/bin/python benchmarks/bench_ingest.py [N] [--whole]
      (N reports, default 3000; prints reports/s of wall time and per CPU second of this process, best of 3,
      and the load: on a shared machine the CPU figure moves less with the load)

``--whole`` also times the readers as they were before validation once per shape and the split HL7 segments
(every FHIR resource validated whole by ``fhir.resources``, every HL7 message parsed whole by python-hl7), in
the same run, so both figures share the machine's load.
"""
import csv
import os
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import hl7

import radsift.corpus.fhir_reader as fhir_reader
import radsift.corpus.hl7_reader as hl7_reader
from radsift.corpus import read_corpus
from radsift.corpus.options import ReaderOptions
from radsift.demo import generate_reports
from radsift.demo.feeds import report_text, write_feeds


class _WholeMessage:
    """The HL7 reader's message as it was: python-hl7's full parse of every segment (its fields as text)."""

    def __init__(self, raw: str) -> None:
        parsed = hl7.parse(raw)
        self.msh, self.unescape, self.escape = parsed.segment("MSH"), parsed.unescape, parsed.esc
        self.component_sep, self.repetition_sep = raw[4], raw[5]
        self.segments = [[str(f) for f in s] for s in parsed if str(s[0]) != "MSH"]
        self.fs = raw[3]
        self.raw_segments = [self.fs.join(s) for s in self.segments]  # python-hl7's fields, as the reader reads them

    def field(self, segment, index, component=None):
        return hl7_reader._field(segment, index, component)


@contextmanager
def whole():
    """Every FHIR resource validated whole, every HL7 message parsed whole (the readers before)."""
    shape, message = fhir_reader.ShapeValidator, hl7_reader.Message
    fhir_reader.ShapeValidator, hl7_reader.Message = (lambda model: model.model_validate), _WholeMessage
    try:
        yield
    finally:
        fhir_reader.ShapeValidator, hl7_reader.Message = shape, message


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    n = int(args[0]) if args else 3000
    reps = [d.report for d in generate_reports(n=n, seed=1)]
    out = Path(tempfile.mkdtemp(prefix="radsift-ingest-"))
    paths = write_feeds(reps, out)
    with open(out / "reports.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "findings", "impression"])
        for r in reps:
            w.writerow([r.id, r.sections.get("findings", ""), r.sections.get("impression", "")])
    # The same reports' text as the feeds carry it ("FINDINGS: ...\nIMPRESSION: ..."), one column: the CSV reader
    # then finds the sections in free text as the feed readers do (context for the target, which is the row above).
    with open(out / "reports_text.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "text"])
        for r in reps:
            w.writerow([r.id, report_text(r)])
    list(read_corpus([paths["bundle.json"]], ReaderOptions()))  # warm imports
    runs = [("csv", out / "reports.csv", ReaderOptions(sections={"findings": "findings", "impression": "impression"})),
            ("csv --text-column", out / "reports_text.csv", ReaderOptions(text_column="text")),
            ("fhir ndjson", paths["reports.ndjson"], ReaderOptions()), ("hl7", paths["reports.hl7"], ReaderOptions()),
            ("hl7 mllp", paths["reports.mllp"], ReaderOptions(format="hl7"))]
    for label, mode in [("", None)] + ([(" (whole, before)", whole)] if "--whole" in sys.argv else []):
        for name, path, opts in runs:
            if mode is not None and name.startswith("csv"):
                continue
            with mode() if mode is not None else _nothing():
                best, cpu, reports = 1e9, 1e9, [0]
                for _ in range(3):
                    t, c = time.perf_counter(), time.process_time()
                    reports = list(read_corpus([path], opts))
                    best, cpu = min(best, time.perf_counter() - t), min(cpu, time.process_time() - c)
            k = len(reports)
            print(f"{name}{label}: {k} reports, {k / best:,.0f} reports/s; {k / cpu:,.0f} per CPU second (best of 3; "
                  f"load {os.getloadavg()[0]:.1f})")


@contextmanager
def _nothing():
    yield


if __name__ == "__main__":
    main()
