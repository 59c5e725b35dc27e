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
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data" / "stating_written.tsv"


def main() -> int:
    from radsift.index import build_index
    from radsift.models.hashing import HashingEncoder
    from radsift.records import Report
    from radsift.search import Index
    from radsift.search.cohort import collect_cohort

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--errors", action="store_true", help="list the passages read wrong")
    args = parser.parse_args()
    with open(args.data, encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    reports = [Report(str(i), {"findings": r["text"]}) for i, r in enumerate(rows)]
    with tempfile.TemporaryDirectory(prefix="radsift-stating-") as tmp:
        enc = HashingEncoder(Path(tmp) / "model")
        build_index(Path(tmp) / "idx", reports, encoder=enc, progress=False)
        index = Index.open(Path(tmp) / "idx", encoder=enc)
        kept = {f: {row.hit.report_id for row in collect_cohort(index, f, include="states", mode="hybrid",
                                                                 concepts=False).rows}
                for f in sorted({r["finding"] for r in rows})}
    counts: Counter = Counter()
    errors = []
    for i, r in enumerate(rows):
        inside, truth = str(i) in kept[r["finding"]], r["expected"] == "states"
        counts[r["finding"], "tp" if inside and truth else "fp" if inside else "fn" if truth else "tn"] += 1
        if inside != truth:
            errors.append(f"{'FP' if inside else 'FN'} {r['finding']} [{r['kind']}] {r['text']}")
    print("| finding | passages | precision | recall |\n|---|---|---|---|")
    for f in [*sorted(kept), None]:
        tp, fp, fn = (sum(v for (g, k), v in counts.items() if k == kind and f in (None, g))
                      for kind in ("tp", "fp", "fn"))
        n = sum(v for (g, _), v in counts.items() if f in (None, g))
        print(f"| {f or '**all**'} | {n} | {tp / (tp + fp):.3f} | {tp / (tp + fn):.3f} |")
    if args.errors:
        print("\n".join(sorted(errors)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
