"""Labeling benchmark: every Open-i findings/impression sentence, with negation, timed.

Run:  .venv/bin/python benchmarks/bench_labels.py [--openi ../shared/data/openi/reports.csv]
                                                  [--out DIR] [--no-cache-share]

Reads the Open-i reports with radsift's corpus reader (id column ``uid``, sections findings
and impression), splits them into sentences, and labels every sentence with the packaged
lexicon and rules. Prints (markdown, for the README):
  * load time (lexicon, rules, spaCy + medspaCy ConText);
  * labeling time and sentences/s, all sentences through the labeler (identical sentences
    are labeled once, as ``radsift label`` does), target < 60 s on 2 cores;
  * the same for the distinct sentences alone on a fresh labeler (no repeats to exploit);
  * the weak-label statistics (labeled entries, unique sentences, queries, top findings).
Optionally writes the exports with ``--out``. Exits with a message when the data is absent.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OPENI = ROOT.parent / "shared" / "data" / "openi" / "reports.csv"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--openi", type=Path, default=DEFAULT_OPENI)
    parser.add_argument("--out", type=Path, default=None, help="also write the weak-label exports here")
    parser.add_argument("--top", type=int, default=15, help="findings listed in the statistics")
    args = parser.parse_args()
    if not args.openi.exists():
        print(f"skipped: {args.openi} absent (../shared/data is not on this machine)")
        return 0

    from radsift.corpus import ReaderOptions, read_corpus
    from radsift.text import report_sentences

    t0 = time.perf_counter()
    options = ReaderOptions.from_cli(
        format="csv", id_column="uid", sections=["findings=findings", "impression=impression"],
        text_column=None, on_error="fail",
    )
    reports = list(read_corpus([args.openi], options))
    sentences = [s for r in reports for s in report_sentences(r, ("findings", "impression"))]
    t_read = time.perf_counter() - t0

    t0 = time.perf_counter()
    from radsift.labels import Labeler, build_weak_labels

    labeler = Labeler()
    t_load = time.perf_counter() - t0

    t0 = time.perf_counter()
    labeled = labeler.label_many([s.text for s in sentences])
    t_label = time.perf_counter() - t0
    n_mentions = sum(len(m) for m in labeled)

    distinct = list(dict.fromkeys(s.text for s in sentences))
    fresh = Labeler(labeler.lexicon, labeler.rules)
    t0 = time.perf_counter()
    fresh.label_many(distinct)
    t_distinct = time.perf_counter() - t0

    t0 = time.perf_counter()
    weak = build_weak_labels(reports, Labeler(labeler.lexicon, labeler.rules), progress=False)
    t_weak = time.perf_counter() - t0
    stats = weak.stats()
    if args.out:
        weak.write(args.out)

    print("| measure | value |")
    print("|---|---|")
    print(f"| reports / sentences (findings + impression) | {len(reports):,} / {len(sentences):,} |")
    print(f"| distinct sentence texts | {len(distinct):,} |")
    print(f"| read + sentence split | {t_read:.2f} s |")
    print(f"| load labeler (lexicon, rules, spaCy, ConText) | {t_load:.2f} s |")
    print(f"| label all sentences (with negation) | {t_label:.2f} s ({len(sentences) / t_label:,.0f} sentences/s) |")
    print(f"| label distinct sentences only, fresh labeler | {t_distinct:.2f} s ({len(distinct) / t_distinct:,.0f} sentences/s) |")
    print(f"| build weak labels (dedup + label + query dictionary) | {t_weak:.2f} s |")
    print(f"| mentions | {n_mentions:,} |")
    print()
    print("| weak-label statistic | count |")
    print("|---|---|")
    for key in ("reports", "sentences", "unique_sentences", "labeled_unique_sentences", "labeled_entries",
                "positive_entries", "negative_entries", "uncertain_entries", "queries", "positive_queries",
                "negative_queries"):
        print(f"| {key.replace('_', ' ')} | {stats[key]:,} |")
    print()
    print("| finding | yes sentences | no sentences | uncertain | yes reports | no reports |")
    print("|---|---|---|---|---|---|")
    rows = sorted(stats["per_finding"].items(), key=lambda kv: -(kv[1]["yes"] + kv[1]["no"]))
    for name, row in rows[: args.top]:
        print(f"| {name} | {row['yes']:,} | {row['no']:,} | {row['uncertain']:,} | {row['reports_yes']:,} | "
              f"{row['reports_no']:,} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
