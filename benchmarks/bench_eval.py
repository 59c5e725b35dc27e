"""Evaluation benchmark: the whole ``radsift bench`` suite on Open-i, timed, tables for the README.

Run:  .venv/bin/python benchmarks/bench_eval.py [--openi ../shared/data/openi/reports.csv]
          [--systems bm25 --systems dense] [--cross] [--out DIR]

Runs what this command runs (the issue's acceptance command)::

    radsift bench --corpus ../shared/data/openi/reports.csv --format csv --id-column uid \\
        --section findings=findings --section impression=impression \\
        --systems bm25 --systems dense --out DIR

With ``--cross`` the MTSamples radiology notes (``../shared/data/mtsamples``) are added as the
cross-collection. Prints the wall time of each step and the headline tables as markdown
(target: the whole suite under 10 minutes on a 2-core machine). Exits with a message when the
data is absent.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--openi", type=Path, default=DATA / "openi" / "reports.csv")
    parser.add_argument("--mtsamples", type=Path, default=DATA / "mtsamples" / "mtsamples.csv")
    parser.add_argument("--systems", action="append", default=None, help="repeatable (default: bm25, dense)")
    parser.add_argument("--cross", action="store_true", help="add the MTSamples radiology notes as cross-collection")
    parser.add_argument("--out", type=Path, default=None, help="report folder (default: a temporary folder)")
    args = parser.parse_args()
    if not args.openi.exists():
        print(f"skipped: {args.openi} absent (../shared/data is not on this machine)")
        return 0

    from radsift.corpus import ReaderOptions
    from radsift.evaluation.bench import BenchConfig, bench
    from radsift.evaluation.report import markdown_table

    reader = ReaderOptions.from_cli(format="csv", id_column="uid", sections=["findings=findings", "impression=impression"],
                                    text_column=None, on_error="fail")
    cross = {}
    if args.cross and args.mtsamples.exists():
        cross = dict(
            cross_corpus=[args.mtsamples],
            cross_reader=ReaderOptions.from_cli(format="csv", id_column="note_id", sections=[],
                                                text_column="transcription", on_error="fail"),
            cross_where=["medical_specialty=Radiology"],
        )
    config = BenchConfig(corpus=[args.openi], reader=reader, systems=args.systems or ["bm25", "dense"], **cross)
    out = args.out or Path(tempfile.mkdtemp(prefix="radsift-bench-"))
    t0 = time.perf_counter()
    result, paths = bench(config, out)
    wall = time.perf_counter() - t0

    print(f"\n## radsift bench on Open-i ({', '.join(s['name'] for s in result.systems)})\n")
    print(f"Wall time: {wall:.0f} s ({wall / 60:.1f} min) on {result.environment['cpus']} CPUs; report in {out}\n")
    print("| step | seconds |\n| :--- | ---: |")
    for step, seconds in result.timings.items():
        print(f"| {step} | {seconds:.1f} |")
    for p in result.protocols:
        if p.skipped or not p.tables:
            continue
        print(f"\n### {p.title}\n\n{p.description}\n")
        print(markdown_table(p.tables[0]))
    print(f"\nfiles: {', '.join(str(p) for p in paths.values())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
