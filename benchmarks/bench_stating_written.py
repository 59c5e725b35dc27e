"""Stating is not mentioning, on written passages: does ``radsift export FINDING --include states`` keep the passages
that state the finding?

Run:  PYTHONPATH=src .venv/bin/python benchmarks/bench_stating_written.py [--errors] [--data TSV]

``benchmarks/data/stating_written.tsv`` holds 200 short chest X-ray report passages (40 for each of consolidation,
nodule, pneumonia, pneumothorax and pulmonary edema, half stating the finding and half only mentioning it: negated,
resolved, hedged, offered as an alternative, a history, an indication, a limited evaluation, a list, a
recommendation, a mimic), written for this project by a helper from radiology knowledge (twenty-sixth session,
issue 35 item 3), without reading Open-i, MTSamples or the judged cohort set, with the expected answer beside each.
It is a development set: the Open-i judged set (``bench_cohort_judged.py``) had stopped showing development errors,
and its test half must not be tuned on. Each passage is one report of a small index (the hashing encoder: the
``states`` band depends on what the labeler reads); each finding's cohort (``include="states"``, no concept links)
is scored against the expected answers. Needs no data from ``../shared``.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from bench_cohort_judged import kept_by_finding, score

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data" / "stating_written.tsv"


def main() -> int:
    from radsift.records import Report

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--errors", action="store_true", help="list the passages read wrong")
    args = parser.parse_args()
    with open(args.data, encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    # each passage a report, judged as the cohort set's rows are (one development half)
    judged = [{"report_id": str(i), "finding": r["finding"], "split": "dev",
               "judgment": "states" if r["expected"] == "states" else "not", "reason": r["kind"]}
              for i, r in enumerate(rows)]
    findings = sorted({r["finding"] for r in rows})
    kept = kept_by_finding([Report(str(i), {"findings": r["text"]}) for i, r in enumerate(rows)], findings, "hybrid")
    counts = {f: c["dev"] for f, c in score(judged, kept).items()}
    print("| finding | passages | precision | recall |\n|---|---|---|---|")
    for f in [*findings, None]:
        tp, fp, fn, n = (sum(c[k] for g, c in counts.items() if f in (None, g)) for k in ("tp", "fp", "fn", "n"))
        print(f"| {f or '**all**'} | {n} | {tp / (tp + fp):.3f} | {tp / (tp + fn):.3f} |")
    if args.errors:
        kept_sets = {f: set(ids) for f, ids in kept.items()}
        print("\n".join(sorted(f"{'FP' if inside else 'FN'} {r['finding']} [{r['kind']}] {r['text']}"
                               for i, r in enumerate(rows)
                               if (inside := str(i) in kept_sets[r["finding"]]) != (r["expected"] == "states"))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
