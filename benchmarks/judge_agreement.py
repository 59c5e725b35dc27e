"""How far two judges of the newcomer's check agree: the judgments of a batch against a second judge's of the same pairs.

Run:  .venv/bin/python benchmarks/judge_agreement.py [--queries .../queries_v16.tsv]
                                                      [--first .../judgments_v16.tsv]
                                                      [--second .../judgments_v16_second.tsv] [--json OUT]

For every (query, report) pair both files judge: the share on which they agree and Cohen's kappa, per split, with the
2 x 2 table (first judge's call against the second's). It bounds what a top-5 precision can mean: where two careful
judges part on a few percent of pairs, a difference of that size between two systems is the judges', not the
systems'. ``judgments_v16_second.tsv`` (ROUNDS.md, round r27b) judged again, blind, every top-5 hit of one quick start.
Needs no corpus and no index.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from radsift.evaluation.newcomer import DATA_DIR, read_judgments, read_queries


def agreement(first: dict[str, dict[str, int]], second: dict[str, dict[str, int]],
              split_of_qid: dict[str, str]) -> dict[str, dict]:
    """Per split (and ``all``): ``pairs``, the 2 x 2 ``table`` (``"first,second"`` -> count), ``agreement`` and
    Cohen's ``kappa`` over the pairs both judged."""
    tables: dict[str, dict[str, int]] = {}
    for qid, judged in second.items():
        for report_id, call in judged.items():
            if report_id not in first.get(qid, {}):
                continue
            for split in (split_of_qid[qid], "all"):
                cell = f"{first[qid][report_id]},{call}"
                table = tables.setdefault(split, {"0,0": 0, "0,1": 0, "1,0": 0, "1,1": 0})
                table[cell] += 1
    out = {}
    for split, t in tables.items():
        n = sum(t.values())
        observed = (t["0,0"] + t["1,1"]) / n
        p_first, p_second = (t["1,0"] + t["1,1"]) / n, (t["0,1"] + t["1,1"]) / n
        chance = p_first * p_second + (1 - p_first) * (1 - p_second)
        kappa = (observed - chance) / (1 - chance) if chance < 1 else 1.0
        out[split] = {"pairs": n, "table": t, "agreement": observed, "kappa": kappa,
                      "relevant_first": p_first, "relevant_second": p_second}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=Path, default=DATA_DIR / "queries_v16.tsv")
    parser.add_argument("--first", type=Path, default=DATA_DIR / "judgments_v16.tsv")
    parser.add_argument("--second", type=Path, default=DATA_DIR / "judgments_v16_second.tsv")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    queries = read_queries(args.queries)
    split_of_qid = {q.qid: q.split for q in queries}
    result = agreement(read_judgments(args.first, queries), read_judgments(args.second, queries), split_of_qid)
    if not result:
        print("the two files judge no pair in common", file=sys.stderr)
        return 1
    print("| split | pairs | first 0 / second 1 | first 1 / second 0 | agreement | kappa | relevant (first / second) |")
    print("|---|---|---|---|---|---|---|")
    for split in ("dev", "test", "all"):
        if split in result:
            r = result[split]
            print(f"| {split} | {r['pairs']} | {r['table']['0,1']} | {r['table']['1,0']} | {r['agreement']:.3f} | "
                  f"{r['kappa']:.2f} | {r['relevant_first']:.3f} / {r['relevant_second']:.3f} |")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
