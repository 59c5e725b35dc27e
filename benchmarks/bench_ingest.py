"""Ingest rate of the readers on the same demo reports: CSV, FHIR NDJSON (every resource validated), HL7 plain and MLLP.

The same reports in every format, with what the feeds carry: id, patient, exam time and text. CSV twice: with
section columns (the writer split the sections) and with the feeds' text in one column (``--text-column``: the
reader finds the sections in free text, as the feed readers must); both with ``--patient-column`` /
``--date-column`` (the feeds' patient and date, validated and normalised as for any CSV). For context also the
CSV with section columns only (no patient, no date: less work than the feeds do).

Run:  .venv/bin/python benchmarks/bench_ingest.py [N [REPEATS]] [--whole | --isolated]
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

``--isolated`` times each read in a fresh process of its own (after one read there to warm it), the formats still
alternated: in one process a reader's speed also depends on what the readers before it left in the allocator (a
reader that once held a whole 1.7 MB file raised malloc's threshold for fresh memory, and the CSV reader after it
took 80 page faults a read instead of 330 to 590), which a process of its own leaves out.

``--whole`` also times the readers as they were before validation once per shape and the split HL7 segments
(every FHIR resource validated whole by ``fhir.resources``, every HL7 message parsed whole by python-hl7), in
the same run, so both figures share the machine's load.
"""
import csv
import gc
import os
import resource
import subprocess
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


def _runs(out: Path) -> list[tuple[str, Path, ReaderOptions]]:
    """The formats timed: (name, file, options), the files as :func:`main` writes them into ``out``."""
    when = {"patient_column": "patient", "date_column": "date"}
    sections = {"findings": "findings", "impression": "impression"}
    return [("csv, section columns + patient/date", out / "reports.csv", ReaderOptions(sections=sections, **when)),
            ("csv --text-column + patient/date", out / "reports_text.csv", ReaderOptions(text_column="text", **when)),
            ("csv, section columns only (no patient/date)", out / "reports_bare.csv", ReaderOptions(sections=sections)),
            ("fhir ndjson", out / "reports.ndjson", ReaderOptions()),
            ("hl7", out / "reports.hl7", ReaderOptions()),
            ("hl7 mllp", out / "reports.mllp", ReaderOptions(format="hl7"))]


def _timed(path: Path, opts: ReaderOptions) -> tuple[float, float, int, int]:
    """(wall, cpu, reports, minor page faults) of one read, from a collection."""
    gc.collect()  # each read starts from the same state of the collector
    f = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t, c = time.perf_counter(), time.process_time()
    k = len(list(read_corpus([path], opts)))
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    return wall, cpu, k, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f


def _child(out: Path, index: int) -> None:
    """``--isolated``'s process for one format: a read to warm it, then one timed read, printed."""
    name, path, opts = _runs(out)[index]
    list(read_corpus([path], opts))
    gc.collect()
    gc.freeze()
    print(*_timed(path, opts))


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        return _child(Path(sys.argv[2]), int(sys.argv[3]))
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    n = int(args[0]) if args else 3000
    repeats = int(args[1]) if len(args) > 1 else 5
    isolated = "--isolated" in sys.argv
    if isolated and "--whole" in sys.argv:
        raise SystemExit("--isolated times the readers as they are: not with --whole")
    reps = [d.report for d in generate_reports(n=n, seed=1)]
    with tempfile.TemporaryDirectory(prefix="radsift-ingest-") as tmp:
        out = Path(tmp)
        paths = write_feeds(reps, out)
        _write_csvs(reps, out)
        list(read_corpus([paths["bundle.json"]], ReaderOptions()))  # warm imports
        gc.collect()
        gc.freeze()  # the bench's own data: not walked by the collections the readers' allocations set off
        runs = _runs(out)
        modes = [("", None)] + ([(" (whole, before)", whole)] if "--whole" in sys.argv else [])
        jobs = [(name + label, path, opts, mode) for label, mode in modes for name, path, opts in runs
                if mode is None or not name.startswith("csv")]
        best = {job[0]: (1e9, 1e9, 0) for job in jobs}
        faults: dict[str, list[int]] = {job[0]: [] for job in jobs}
        loads = []
        for _ in range(repeats):  # the formats alternate: each sees the same moments of a shared machine's load
            for index, (name, path, opts, mode) in enumerate(jobs):
                if isolated:  # a process of its own: no other reader has shaped its memory
                    done = subprocess.run([sys.executable, __file__, "--child", str(out), str(index)], check=True,
                                          capture_output=True, text=True)
                    wall, cpu, k, fault = (float(x) for x in done.stdout.split())
                else:
                    with mode() if mode is not None else _nothing():
                        wall, cpu, k, fault = _timed(path, opts)
                faults[name].append(int(fault))
                w, p, _ = best[name]
                best[name] = (min(w, wall), min(p, cpu), int(k))
            loads.append(os.getloadavg()[0])
        for name, (wall, cpu, k) in best.items():
            print(f"{name}: {k} reports, {k / wall:,.0f} reports/s; {k / cpu:,.0f} per CPU second; "
                  f"{sorted(faults[name])[len(faults[name]) // 2]:,} page faults a read")
        how = "each read in a process of its own, " if isolated else ""
        print(f"(best of {repeats}, {how}runs alternated; load average {min(loads):.1f} to {max(loads):.1f})")


@contextmanager
def _nothing():
    yield


if __name__ == "__main__":
    main()
