"""Patients over time, measured (issue 34, item 6): "new" findings and overdue follow-ups against the demo's
known truth, and how soon a file dropped into a watched folder is searchable.

Run:  .venv/bin/python benchmarks/bench_patients.py [--split dev|test] [--patients 300] [--model DIR]
      .venv/bin/python benchmarks/bench_patients.py --split dev --show-misses   # look at dev misses only

Splits: the serial corpus is drawn by seed. ``dev`` (seed 0, the corpus the first figures came from) is the
one to look at (``--show-misses`` prints the missed reports' sentences, and refuses ``--split test``);
``test`` (seed 1000) is for reporting only. Both come from the same generator templates, so the split
keeps lexicon changes from being fitted to one draw's reports, not to the generator's phrasing.

1. A serial corpus (:mod:`radsift.demo.serial`): patients with 2 to 5 radiographs, the generator's truth of
   what each report says, follow-up recommendations with known due dates and later exams. Indexed with the
   lexicon labels (the hashing encoder: vectors play no part here), then ``radsift patients --change new``
   for every finding and ``radsift followups --overdue`` are compared with the truth: precision and recall.
2. The watch loop's latency: a file of 100 demo reports dropped into a watched folder, time until a search
   finds its reports, with the packaged model (``--model`` another), one scan every second.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

from radsift.corpus import read_corpus
from radsift.corpus.options import ReaderOptions
from radsift.demo import generate_reports
from radsift.demo.feeds import write_feeds
from radsift.demo.serial import serial_corpus
from radsift.index import build_index
from radsift.models.hashing import HashingEncoder
from radsift.search import Index
from radsift.search.followups import followups
from radsift.search.timeline import finding_changes
from radsift.workflows.watch import scan_once


def pr(found: set, truth: set) -> dict:
    tp = len(found & truth)
    return {"found": len(found), "truth": len(truth), "tp": tp,
            "precision": round(tp / len(found), 4) if found else 0.0,
            "recall": round(tp / len(truth), 4) if truth else 0.0}


#: The seed of each split (``--split``): dev to look at, test to report.
SPLITS = {"dev": 0, "test": 1000}


def _show_misses(corpus, missed: set, wrong: set, index_dir: Path) -> None:
    """Print each missed "new" (dev split only): the report's text and what the timeline read in it."""
    from radsift.search.timeline import patient_timeline

    texts = {r.id: " | ".join(v for v in r.sections.values() if v) for r in corpus.reports}
    for kind, rows in (("MISSED", missed), ("WRONG", wrong)):
        for patient, finding, rid in sorted(rows):
            status = {e.report_id: e.status(finding) for e in patient_timeline(index_dir, patient)}
            print(f"{kind} {finding} {rid} read={status.get(rid)} :: {texts.get(rid, '')[:400]}")


def patients_part(root: Path, n: int, seed: int, as_of: str, show_misses: bool = False) -> dict:
    corpus = serial_corpus(n, seed=seed, as_of=as_of)
    path = root / "serial.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "patient", "date", "modality", "findings", "impression"])
        for r in corpus.reports:
            w.writerow([r.id, r.metadata["patient"], r.metadata["date"], r.metadata["modality"],
                        r.sections.get("findings", ""), r.sections.get("impression", "")])
    opts = ReaderOptions(sections={"findings": "findings", "impression": "impression"}, patient_column="patient",
                         date_column="date")
    build_index(root / "serial-idx", list(read_corpus([path], opts)), encoder=HashingEncoder(root / "hash"),
                progress=False)
    manifest = json.loads((root / "serial-idx" / (root / "serial-idx" / "CURRENT").read_text().strip()
                           / "manifest.json").read_text())
    findings = sorted({f for _, f, _ in corpus.new} & set(manifest["findings"]))
    found = {(c.patient, c.finding, c.report.report_id) for f in findings
             for c in finding_changes(root / "serial-idx", f, "new")}
    truth = {t for t in corpus.new if t[1] in findings}
    overdue = {r.report_id for r in followups(root / "serial-idx", as_of=as_of, overdue_only=True)}
    recs: dict[str, set] = {}
    for r in followups(root / "serial-idx", as_of=as_of):
        recs.setdefault(r.report_id, set()).add(r.due)  # a generated report may recommend something itself
    due_exact = sum(due in recs.get(rid, ()) for rid, due in corpus.recommendations.items())
    missed: dict[str, int] = {}
    for _, finding, _ in truth - found:
        missed[finding] = missed.get(finding, 0) + 1
    if show_misses:
        _show_misses(corpus, truth - found, found - truth, root / "serial-idx")
    return {"patients": n, "reports": len(corpus.reports), "findings_compared": len(findings),
            "missed_by_finding": dict(sorted(missed.items(), key=lambda kv: -kv[1])[:8]),
            "new": pr(found, truth), "overdue": pr(overdue, corpus.overdue(as_of)),
            "recommendations": len(corpus.recommendations), "due_dates_exact": due_exact,
            "missed_findings": sorted({t[1] for t in corpus.new} - set(findings))}


def watch_part(root: Path, model: str | None) -> dict:
    reports = [d.report for d in generate_reports(n=110, seed=3)]
    index_dir, drop = root / "watch-idx", root / "drop"
    build_index(index_dir, reports[:10], model=model, progress=False)
    drop.mkdir()
    index = Index.open(index_dir)
    index.search("pleural effusion", k=1)  # the model loaded once, as in a running server
    feeds = write_feeds(reports[10:], root / "feeds")
    stop = threading.Event()

    def loop():
        while not stop.is_set():
            scan_once(index_dir, drop, ReaderOptions(), settle=0.5, add_options={"model": model})
            time.sleep(1.0)

    worker = threading.Thread(target=loop, daemon=True)
    worker.start()
    time.sleep(1.5)
    t0 = time.perf_counter()
    tmp = drop / "incoming.hl7.part"
    shutil.copy(feeds["reports.hl7"], tmp)
    tmp.rename(drop / "incoming.hl7")  # the way a sender should drop files: written, then renamed
    target = reports[-1].id
    while time.perf_counter() - t0 < 120:
        if index.get_report(target) is not None:
            break
        time.sleep(0.1)
    latency = time.perf_counter() - t0
    stop.set()
    worker.join()
    return {"reports": 100, "seconds_to_searchable": round(latency, 2),
            "load": round(os.getloadavg()[0], 2)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--patients", type=int, default=300)
    parser.add_argument("--split", choices=sorted(SPLITS), default="test",
                        help="dev (seed 0): to look at; test (seed 1000): to report")
    parser.add_argument("--seed", type=int, default=None, help="another seed (neither split)")
    parser.add_argument("--show-misses", action="store_true", help="print the missed reports (dev only)")
    parser.add_argument("--as-of", default="2026-06-30")
    parser.add_argument("--model", default=None)
    parser.add_argument("--skip-watch", action="store_true")
    args = parser.parse_args()
    if args.show_misses and (args.split != "dev" or args.seed is not None):
        parser.error("--show-misses looks at the dev split only (--split dev, no --seed)")
    seed = SPLITS[args.split] if args.seed is None else args.seed
    root = Path(tempfile.mkdtemp(prefix="radsift-patients-"))
    try:
        part = patients_part(root, args.patients, seed, args.as_of, args.show_misses)
        result = {"split": args.split if args.seed is None else None, "seed": seed, "patients_part": part}
        if not args.skip_watch:
            result["watch"] = watch_part(root, args.model)
        print(json.dumps(result, indent=1))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
