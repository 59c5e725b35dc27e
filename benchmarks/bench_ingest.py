"""Ingest rate of the readers on the same demo reports: CSV, FHIR NDJSON (every resource validated), HL7 plain and MLLP.

Run:  .venv/bin/python benchmarks/bench_ingest.py [N]   (N reports, default 3000; prints reports/s, best of 3, and the load)
"""
import csv
import os
import sys
import tempfile
import time
from pathlib import Path
from radsift.demo import generate_reports, write_demo_corpus
from radsift.demo.feeds import write_feeds
from radsift.corpus import read_corpus
from radsift.corpus.options import ReaderOptions
n = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
reps = [d.report for d in generate_reports(n=n, seed=1)]
out = Path(tempfile.mkdtemp(prefix="radsift-ingest-")); paths = write_feeds(reps, out)
with open(out / "reports.csv", "w", newline="") as f:
    w = csv.writer(f); w.writerow(["id", "findings", "impression"])
    for r in reps: w.writerow([r.id, r.sections.get("findings", ""), r.sections.get("impression", "")])
list(read_corpus([paths["bundle.json"]], ReaderOptions()))  # warm imports
for name, path, opts in [("csv", out / "reports.csv", ReaderOptions(sections={"findings": "findings", "impression": "impression"})),
                         ("fhir ndjson", paths["reports.ndjson"], ReaderOptions()), ("hl7", paths["reports.hl7"], ReaderOptions()),
                         ("hl7 mllp", paths["reports.mllp"], ReaderOptions(format="hl7"))]:
    best = 1e9
    for _ in range(3):
        t = time.perf_counter(); k = sum(1 for _ in read_corpus([path], opts)); best = min(best, time.perf_counter() - t)
    print(f"{name}: {k} reports, {k / best:,.0f} reports/s (best of 3; load {os.getloadavg()[0]:.1f})")
