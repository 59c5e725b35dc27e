"""Lobes and segments: Open-i report-level top 5 for queries naming a lobe, before and after location reading.

Run:  PYTHONPATH=src .venv/bin/python benchmarks/bench_lobes.py [--work DIR] [--hashing] [--pool] [--out FILE]

The queries, ``benchmarks/data/lobe_queries.tsv``, were written for this project before any result
was looked at: 28 queries naming a lobe, the lingula, a base or the apices, in words and abbreviations,
two of them negated; 14 are the development split (the only ones any choice was made on), 14 the test
split. The judgments, ``benchmarks/data/lobe_judgments.tsv`` (query id, Open-i ``uid``, 1/0; no report
text), were made by reading the retrieved reports: a report is relevant when it states the finding
(or a synonym: consolidation ~ airspace disease, opacity ~ any airspace opacity) in the named place or a
description covering it ("left base" or "retrocardiac" for the left lower lobe, "bibasilar" for either
lower lobe); a negated query wants the finding denied and not stated there. Pooled: the top 5 of both
runs for every query.

Both runs are ``radsift.Index.search`` as a user runs it (hybrid, report level, negation-aware, the
default engine) over one Open-i index built with the packaged model: ``before`` with
``RADSIFT_LOCATIONS=off`` (sides only, as before locations were read), ``after`` with locations read.
Reported: P@5 per split, unjudged pairs (counted not relevant), and the top-5 hits whose shown sentence
names only another lobe than the query's. ``--pool`` prints the unjudged pairs' texts for judging (to
the terminal only: the data may not be copied into the repository). ``--hashing`` uses the hashing test
encoder (no model; the figures are then not the packaged model's). ``--existing`` adds, in the same run,
the description benchmark's queries (``bench_descriptions.py``: 163 descriptions, 12 of them naming a
place) and the Open-i weak-label queries, mAP and P@10 before and after, for BM25 and the default hybrid.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_negation: the shared index builder
QUERIES = ROOT / "benchmarks" / "data" / "lobe_queries.tsv"
JUDGMENTS = ROOT / "benchmarks" / "data" / "lobe_judgments.tsv"
K = 5
STATES = {"before": "off", "after": "on"}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def read_tsv(path: Path) -> list[dict]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))


def judgments(path: Path = JUDGMENTS) -> dict[tuple[str, str], int]:
    """(query id, report id) -> 1 relevant / 0 not (empty when the file is absent)."""
    if not path.exists():
        return {}
    return {(r["query_id"], r["report_id"]): int(r["relevant"]) for r in read_tsv(path)}


@contextmanager
def restored_env(name: str):
    """Run the block, then put the environment variable ``name`` back as it was (or remove it)."""
    old = os.environ.get(name)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def run(idx, queries: list[dict]) -> dict[str, dict[str, list[tuple[str, str]]]]:
    """state -> query id -> the top-5 (report id, shown sentence)."""
    from radsift.text import locations

    out: dict = {}
    with restored_env(locations.ENV):
        for state, value in STATES.items():
            os.environ[locations.ENV] = value
            out[state] = {}
            for q in queries:
                hits = idx.search(q["query"], k=K)
                out[state][q["id"]] = [(h.report_id, h.sentence.text if h.sentence else "") for h in hits]
    return out


def engines_agree(idx, queries: list[dict]) -> tuple[int, int]:
    """(pages equal, pages compared): the candidate engine's top 10 (ids, scores, bands, counts) against the
    exact engine's, at report and sentence level, for every query with locations read."""
    from radsift.search import candidates

    def page(engine: str, query: str, level: str):
        os.environ[candidates.ENV] = engine
        res = idx.search(query, k=10, level=level)
        return [(h.report_id, h.sentence.text if h.sentence else "", h.band, round(h.score, 5)) for h in res], \
            (res.total, res.matching)

    same = total = 0
    with restored_env(candidates.ENV):
        for q in queries:
            for level in ("report", "sentence"):
                total += 1
                same += page("candidates", q["query"], level) == page("exact", q["query"], level)
    return same, total


def figures(queries: list[dict], runs: dict, judged: dict) -> dict:
    """P@5, unjudged pairs and other-lobe hits per (state, split)."""
    from radsift.text.locations import read_locations, text_regions

    out: dict = {}
    for state, per_query in runs.items():
        for split in ("dev", "test"):
            qs = [q for q in queries if q["split"] == split]
            rel = unjudged = other = 0
            for q in qs:
                want = 0
                for loc in read_locations(q["query"]):
                    want |= loc.regions
                for rid, sentence in per_query[q["id"]]:
                    j = judged.get((q["id"], rid))
                    unjudged += j is None
                    rel += j or 0
                    named = text_regions(sentence)[0]
                    other += bool(named and not named & want)
            out[f"{state}|{split}"] = {"queries": len(qs), "p_at_5": round(rel / (K * len(qs)), 3),
                                       "unjudged": unjudged, "other_lobe_hits": other}
    return out


def print_pool(idx, queries: list[dict], runs: dict, judged: dict) -> None:
    """The unjudged (query, report) pairs with the report's text, for a person to judge (terminal only)."""
    for q in queries:
        seen = []
        for state in runs:
            seen += [rid for rid, _ in runs[state][q["id"]] if (q["id"], rid) not in judged and rid not in seen]
        for rid in seen:
            report = idx.get_report(rid)
            text = " | ".join(f"{k}: {v}" for k, v in report.sections.items()) if report else "?"
            print(f"{q['id']}\t{rid}\t[{q['query']}]\t{text}")


def existing(idx) -> dict:
    """mAP / P@10 of the description queries and the weak-label queries, before and after, per system."""
    from bench_descriptions import evaluate, read_queries, relevant_reports, weak_label_queries

    from radsift.text import locations

    descriptions = read_queries()
    qrels = {f: relevant_reports(idx, f) for f in {q["finding"] for q in descriptions}}
    weak, weak_qrels = weak_label_queries(idx)
    out: dict = {}
    with restored_env(locations.ENV):
        for state, value in STATES.items():
            os.environ[locations.ENV] = value
            for system, options in {"bm25": {"mode": "bm25"}, "hybrid": {}}.items():
                got = evaluate(idx, descriptions, qrels, **options)
                got.update(evaluate(idx, weak, weak_qrels, **options))
                out[f"{state}|{system}"] = got
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/radsift-bench-lobes"))
    parser.add_argument("--openi", type=Path, default=DATA / "openi" / "reports.csv")
    parser.add_argument("--hashing", action="store_true", help="the hashing test encoder instead of the packaged model")
    parser.add_argument("--pool", action="store_true", help="print the unjudged pairs' texts for judging")
    parser.add_argument("--existing", action="store_true",
                        help="also the description and weak-label benchmarks, before and after")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = parser.parse_args()
    if not args.openi.exists():
        print(f"skipped: {args.openi} absent (../shared/data is not on this machine)")
        return 0
    from bench_negation import openi_index

    from radsift.models import Encoder
    from radsift.models.hashing import HashingEncoder
    from radsift.search.plan import unit_locations
    from radsift.text.compartments import LOBES  # the mediastinal bit is no lobe

    args.work.mkdir(parents=True, exist_ok=True)
    encoder = HashingEncoder(args.work / "hashing-model") if args.hashing else Encoder.load(None)
    idx = openi_index(args.work, args.openi, encoder, name="openi-hashing" if args.hashing else "openi-general")
    queries = read_tsv(QUERIES)
    start = time.perf_counter()
    regions, _ = unit_locations(idx.store, "sentence")
    first = time.perf_counter() - start
    runs = run(idx, queries)
    judged = judgments()
    if args.pool:
        print_pool(idx, queries, runs, judged)
        return 0
    table = figures(queries, runs, judged)
    n = int(regions.shape[0])
    print(f"Open-i, {n} sentences, {int(((regions & LOBES) != 0).sum())} naming a lobe (read once per index in "
          f"{first:.2f} s); model: {'hashing test encoder' if args.hashing else encoder.name}; hybrid, report level, "
          f"top {K}\n")
    print("| run | split | queries | P@5 | unjudged | hits naming only another lobe |")
    print("|---|---|---|---|---|---|")
    for key, row in table.items():
        state, split = key.split("|")
        print(f"| {state} | {split} | {row['queries']} | {row['p_at_5']:.3f} | {row['unjudged']} | "
              f"{row['other_lobe_hits']} |")
    print("\n| query | split | before (relevant of 5) | after |")
    print("|---|---|---|---|")
    for q in queries:
        cells = [sum(judged.get((q["id"], rid), 0) for rid, _ in runs[s][q["id"]]) for s in STATES]
        print(f"| {q['query']} | {q['split']} | {cells[0]} | {cells[1]} |")
    same, compared = engines_agree(idx, queries)
    print(f"\nCandidate engine = exact engine (top 10, scores, bands, counts; report and sentence level): "
          f"{same} of {compared} pages")
    others = existing(idx) if args.existing else {}
    if others:
        print("\n| run | system | split | queries | mAP | P@10 |")
        print("|---|---|---|---|---|---|")
        for key, per_split in others.items():
            state, system = key.split("|")
            for split, row in sorted(per_split.items()):
                print(f"| {state} | {system} | {split} | {row['n']} | {row['map']:.4f} | {row['p10']:.4f} |")
    if args.out:
        ids = {s: {qid: [rid for rid, _ in hits] for qid, hits in per.items()} for s, per in runs.items()}
        args.out.write_text(json.dumps({"figures": table, "top5": ids, "existing": others,
                                        "engines_agree": [same, compared],
                                        "model": "hashing" if args.hashing else encoder.name}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
