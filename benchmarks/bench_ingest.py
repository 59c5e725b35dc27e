"""Ingest rate of the readers on the same demo reports: CSV, FHIR NDJSON (every resource validated), HL7 plain and MLLP.

The same reports in every format, with what the feeds carry: id, patient, exam time and text. CSV twice: with
section columns (the writer split the sections) and with the feeds' text in one column (``--text-column``: the
reader finds the sections in free text, as the feed readers must); both with ``--patient-column`` /
``--date-column`` (the feeds' patient and date, validated and normalised as for any CSV). For context also the
CSV with section columns only (no patient, no date: less work than the feeds do).

Run:  .venv/bin/python benchmarks/bench_ingest.py [N [REPEATS]] [--whole]
      (N reports, default 3000; prints reports/s of wall time and per CPU second of this process, best of
      REPEATS (default 5) with the formats' runs alternated, and the load: on a shared machine the CPU figure
      moves less with the load; and the median minor page faults of a read: memory a reader takes fresh from
      the system on every read, in system time, which the CPU figure counts: a reader holding a whole file's
      bytes, text and lines at once paid about 1,700 of them for 3,000 reports, 5% of its read)

The bench's own data (the demo reports, the feeds' texts) is frozen out of the garbage collector after the warm-up
(``gc.freeze``), and each timed read starts after a collection: otherwise a full collection walks that data in the
middle of whichever format's read the allocation counts happen to put it in, often the same one on every repeat
(about 20 ms of CPU: a third of one format's read of 3,000 reports, and none of the others'), and which format pays
moves with any change in what a reader allocates. Each reader still pays for collecting what it allocates itself.

``--whole`` also times the readers as they were before validation once per shape and the split HL7 segments
(every FHIR resource validated whole by ``fhir.resources``, every HL7 message parsed whole by python-hl7), in
the same run, so both figures share the machine's load.
"""
import csv
import gc
import os
import resource
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
from radsift.demo.feeds import assign_patients, report_text, write_feeds


class _WholeMessage:
    """The HL7 reader's message as it was: python-hl7's full parse of every segment (its fields as text)."""

    def __init__(self, raw: str, segments: list | None = None) -> None:
        raw = raw if segments is None else "\r".join([raw, *segments])  # the reader passes the segments split
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
    fhir_reader.ShapeValidator, hl7_reader.Message = (lambda model, **_: model.model_validate), _WholeMessage
    try:
        yield
    finally:
        fhir_reader.ShapeValidator, hl7_reader.Message = shape, message


def _write_csvs(reps, out: Path) -> dict[str, Path]:
    """The same reports as the feeds, as CSV: section columns, and the feeds' text in one column; both with
    the feeds' patient and exam time (``assign_patients``, as ``write_feeds`` gives them)."""
    items = assign_patients(reps)  # write_feeds' defaults: the same patient and time per report
    paths = {"sections": out / "reports.csv", "text": out / "reports_text.csv", "bare": out / "reports_bare.csv"}
    with open(paths["sections"], "w", newline="") as f, open(paths["text"], "w", newline="") as g, \
            open(paths["bare"], "w", newline="") as h:
        sec, txt, bare = csv.writer(f), csv.writer(g), csv.writer(h)
        sec.writerow(["id", "patient", "date", "findings", "impression"])
        txt.writerow(["id", "patient", "date", "text"])
        bare.writerow(["id", "findings", "impression"])
        for item in items:
            r, when = item.report, item.when.strftime("%Y-%m-%dT%H:%M")
            sec.writerow([r.id, item.patient, when, r.sections.get("findings", ""), r.sections.get("impression", "")])
            txt.writerow([r.id, item.patient, when, report_text(r)])
            bare.writerow([r.id, r.sections.get("findings", ""), r.sections.get("impression", "")])
    return paths


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    n = int(args[0]) if args else 3000
    repeats = int(args[1]) if len(args) > 1 else 5
    reps = [d.report for d in generate_reports(n=n, seed=1)]
    with tempfile.TemporaryDirectory(prefix="radsift-ingest-") as tmp:
        out = Path(tmp)
        paths = write_feeds(reps, out)
        csvs = _write_csvs(reps, out)
        list(read_corpus([paths["bundle.json"]], ReaderOptions()))  # warm imports
        gc.collect()
        gc.freeze()  # the bench's own data: not walked by the collections the readers' allocations set off
        when = {"patient_column": "patient", "date_column": "date"}
        sections = {"findings": "findings", "impression": "impression"}
        runs = [("csv, section columns + patient/date", csvs["sections"], ReaderOptions(sections=sections, **when)),
                ("csv --text-column + patient/date", csvs["text"], ReaderOptions(text_column="text", **when)),
                ("csv, section columns only (no patient/date)", csvs["bare"], ReaderOptions(sections=sections)),
                ("fhir ndjson", paths["reports.ndjson"], ReaderOptions()),
                ("hl7", paths["reports.hl7"], ReaderOptions()),
                ("hl7 mllp", paths["reports.mllp"], ReaderOptions(format="hl7"))]
        modes = [("", None)] + ([(" (whole, before)", whole)] if "--whole" in sys.argv else [])
        jobs = [(name + label, path, opts, mode) for label, mode in modes for name, path, opts in runs
                if mode is None or not name.startswith("csv")]
        best = {job[0]: (1e9, 1e9, 0) for job in jobs}
        faults: dict[str, list[int]] = {job[0]: [] for job in jobs}
        loads = []
        for _ in range(repeats):  # the formats alternate: each sees the same moments of a shared machine's load
            for name, path, opts, mode in jobs:
                with mode() if mode is not None else _nothing():
                    gc.collect()  # each read starts from the same state of the collector
                    f = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                    t, c = time.perf_counter(), time.process_time()
                    k = len(list(read_corpus([path], opts)))
                    wall, cpu = time.perf_counter() - t, time.process_time() - c
                    faults[name].append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f)
                w, p, _ = best[name]
                best[name] = (min(w, wall), min(p, cpu), k)
            loads.append(os.getloadavg()[0])
        for name, (wall, cpu, k) in best.items():
            print(f"{name}: {k} reports, {k / wall:,.0f} reports/s; {k / cpu:,.0f} per CPU second; "
                  f"{sorted(faults[name])[len(faults[name]) // 2]:,} page faults a read")
        print(f"(best of {repeats}, runs alternated; load average {min(loads):.1f} to {max(loads):.1f})")


@contextmanager
def _nothing():
    yield


if __name__ == "__main__":
    main()
