"""Follow-up recommendations (issue 34, item 4): the extractor on the set written for radsift, and what it
finds in real reports.

Run:  .venv/bin/python benchmarks/bench_followups.py [--sample 40]

1. Precision, recall, modality and due-date exactness on the set's ``dev`` half (tuned on) and ``test``
   half (not tuned on): ``radsift.evaluation.followup_eval``.
2. On Open-i (``../shared/data/openi/reports.csv``, skipped when absent): how many sentences the rules
   flag, and a seeded sample of them printed for a reader to judge (the figure in docs/measurements.md
   is that reading).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from radsift.corpus import read_corpus
from radsift.corpus.options import ReaderOptions
from radsift.evaluation.followup_eval import evaluate_followups
from radsift.labels.followups import find_followup
from radsift.text import split_sentences

OPENI = Path("../shared/data/openi/reports.csv")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sample", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for split in ("dev", "test"):
        result = evaluate_followups(split)
        errors = result.pop("errors")
        print(json.dumps(result))
        for e in errors:
            print("   ", e)
    if not OPENI.exists():
        print(f"skipped Open-i: {OPENI} not found")
        return
    options = ReaderOptions(id_column="uid", sections={"findings": "findings", "impression": "impression"})
    sentences = [(r.id, text[a:b]) for r in read_corpus([OPENI], options) for text in r.sections.values()
                 for a, b in split_sentences(text)]
    flagged = [(rid, s, f) for rid, s in sentences if (f := find_followup(s)) is not None]
    print(f"Open-i: {len(sentences)} sentences, {len(flagged)} flagged as follow-up recommendations")
    for rid, s, f in random.Random(args.seed).sample(flagged, min(args.sample, len(flagged))):
        print(f"  {rid}\t{f.modality or '-'}\t{f.interval or '-'}\t{s}")


if __name__ == "__main__":
    main()
