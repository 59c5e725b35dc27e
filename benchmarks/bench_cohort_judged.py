"""Cohort precision and recall on the judged set: does ``radsift export "FINDING"`` keep the reports that state it?

Run:  .venv/bin/python benchmarks/bench_cohort_judged.py [--baseline REV | --no-baseline] [--mode hybrid]
                                                          [--split dev | test | all] [--errors]
                                                          [--openi ../shared/data/openi/reports.csv] [--json OUT]

The judged set (``src/radsift/evaluation/data/cohort_judged.tsv``, issue 35) holds 739 (Open-i report,
finding) pairs, 43-104 for each of ten findings, each judged ``states`` or ``not`` after reading the whole
report (findings and impression): batch 1 (320 pairs) before any rule change, batch 2 (119, more likely
positives) after, without looking at what radsift reads in them (``--batch``); batch 3 (150: 30 more for
each of the five findings whose test precision missed 0.90, mostly reports the cohort kept) before the
rule changes it led to; batch 4 (150: 30 more for the same five, ``cohort_judged_sample.py --batch 4``) likewise. This benchmark builds one index of the judged reports (the
hashing encoder: the ``states`` band depends on what the labeler reads, not on the dense scores), runs
the cohort of each finding's name (:func:`radsift.search.cohort.collect_cohort`, ``include="states"``,
no concept links) and scores it against the judgments of that finding: precision = judged ``states``
among the kept judged reports, recall = kept among the judged ``states``; per finding, on the dev and
test halves (split by a hash of the report id). Tune on dev only.

``--baseline REV`` (default: the commit before issue 35's sentence-reader changes) runs the same
measurement on that revision's ``src/`` (``git archive`` into a temporary folder, run in a
subprocess), so before and after come from one run. Exits with a message when the data is absent.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections import defaultdict
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OPENI = ROOT.parent / "shared" / "data" / "openi" / "reports.csv"
JUDGED = ROOT / "src" / "radsift" / "evaluation" / "data" / "cohort_judged.tsv"
#: The commit that added the judged set, before any rule change of issue 35.
DEFAULT_BASELINE = "a7a1633"
TARGET_PRECISION, TARGET_RECALL = 0.90, 0.85


def read_judged(path: Path = JUDGED) -> list[dict[str, str]]:
    """The judged rows (report_id, finding, split, judgment, reason)."""
    with open(path, encoding="utf-8") as fh:
        lines = [ln for ln in fh if not ln.startswith("#")]
    return list(csv.DictReader(lines, delimiter="\t"))


def cohorts(openi: Path, judged: list[dict[str, str]], mode: str) -> dict[str, list[str]]:
    """The report ids of each judged finding's cohort, with the radsift importable now."""
    from radsift.corpus import ReaderOptions, read_corpus

    wanted = {r["report_id"] for r in judged}
    options = ReaderOptions.from_cli(format="csv", id_column="uid",
                                     sections=["findings=findings", "impression=impression"],
                                     text_column=None, on_error="fail")
    reports = [r for r in read_corpus([openi], options) if r.id in wanted]
    return kept_by_finding(reports, sorted({r["finding"] for r in judged}), mode)


def kept_by_finding(reports: list, findings: list[str], mode: str) -> dict[str, list[str]]:
    """The report ids each finding's cohort keeps (``include="states"``, no concept links) over an index of
    ``reports`` built with the hashing encoder (the ``states`` band depends on what the labeler reads)."""
    from radsift.index import build_index
    from radsift.models.hashing import HashingEncoder
    from radsift.search import Index
    from radsift.search.cohort import collect_cohort

    with tempfile.TemporaryDirectory(prefix="radsift-judged-") as tmp:
        enc = HashingEncoder(Path(tmp) / "model")
        build_index(Path(tmp) / "idx", reports, encoder=enc, progress=False)
        index = Index.open(Path(tmp) / "idx", encoder=enc)
        out = {}
        for finding in findings:
            cohort = collect_cohort(index, finding, include="states", mode=mode, concepts=False)
            out[finding] = [row.hit.report_id for row in cohort.rows]
        index.close() if hasattr(index, "close") else None
    return out


def score(judged: list[dict[str, str]], kept: dict[str, list[str]]) -> dict[str, dict[str, dict[str, float]]]:
    """Per finding and split: tp, fp, fn, precision, recall (None when undefined)."""
    counts: dict = defaultdict(lambda: defaultdict(lambda: {"tp": 0, "fp": 0, "fn": 0, "pos": 0, "n": 0}))
    for r in judged:
        c = counts[r["finding"]][r["split"]]
        inside = r["report_id"] in set(kept.get(r["finding"], ()))
        truth = r["judgment"] == "states"
        c["n"] += 1
        c["pos"] += truth
        c["tp"] += inside and truth
        c["fp"] += inside and not truth
        c["fn"] += truth and not inside
    out: dict = {}
    for finding, splits in counts.items():
        for split, c in splits.items():
            c = dict(c)
            c["precision"] = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else None
            c["recall"] = c["tp"] / c["pos"] if c["pos"] else None
            out.setdefault(finding, {})[split] = c
    return out


def errors(judged: list[dict[str, str]], kept: dict[str, list[str]], split: str) -> list[str]:
    """The wrong (report, finding) pairs of a split: what to read when tuning (dev only)."""
    out = []
    for r in judged:
        if r["split"] != split:
            continue
        inside = r["report_id"] in set(kept.get(r["finding"], ()))
        if inside != (r["judgment"] == "states"):
            out.append(f"{'FP' if inside else 'FN'} {r['finding']} {r['report_id']} ({r['reason']})")
    return out


def baseline_cohorts(rev: str, openi: Path, mode: str, batch: str = "all") -> dict[str, list[str]]:
    """Run this script's measurement on ``rev``'s ``src/`` (the judged set of this tree)."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], check=True, capture_output=True).stdout
    with tempfile.TemporaryDirectory(prefix="radsift-baseline-") as tmp:
        with tarfile.open(fileobj=BytesIO(data)) as tar:
            tar.extractall(tmp, filter="data")
        env = dict(os.environ, PYTHONPATH=str(Path(tmp) / "src"))
        res = subprocess.run([sys.executable, __file__, "--worker", "--openi", str(openi), "--mode", mode,
                              "--batch", batch],
                             env=env, check=True, capture_output=True, text=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def _cell(x) -> str:
    return "–" if x is None else f"{x:.2f}"


def markdown(results: dict[str, dict], judged: list[dict[str, str]]) -> str:
    names = list(results)
    head = "| finding | split | judged (states) | " + " | ".join(f"P {n} | R {n}" for n in names) + " |"
    lines = [head, "|" + "---|" * (3 + 2 * len(names))]
    findings = sorted({r["finding"] for r in judged})
    for split in [s for s in ("dev", "test") if any(r["split"] == s for r in judged)]:
        for f in findings:
            any_c = results[names[0]][f][split]
            cells = []
            for n in names:
                c = results[n][f][split]
                cells += [_cell(c["precision"]), _cell(c["recall"])]
            lines.append(f"| {f} | {split} | {any_c['n']} ({any_c['pos']}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--openi", type=Path, default=DEFAULT_OPENI)
    parser.add_argument("--mode", default="hybrid", choices=("dense", "bm25", "hybrid", "hybrid-rrf"))
    parser.add_argument("--baseline", default=DEFAULT_BASELINE, help="git revision measured as 'before'")
    parser.add_argument("--no-baseline", action="store_true", help="measure this tree only")
    parser.add_argument("--errors", action="store_true", help="list the dev errors of this tree (for tuning)")
    parser.add_argument("--batch", default="all", choices=("1", "2", "3", "4", "all"),
                        help="judged batch (1: judged before the rule changes; 2: after, without looking; "
                             "3: precision, before batch 3's rule changes; 4: the same five findings, before batch 4's)")
    parser.add_argument("--split", default="all", choices=("dev", "test", "all"),
                        help="score only this half (dev while tuning: the test half stays unseen)")
    parser.add_argument("--json", type=Path, default=None, help="write the figures as JSON here")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.openi.exists():
        print(f"skipped: {args.openi} absent (../shared/data is not on this machine)")
        return 0
    judged = [r for r in read_judged() if args.batch == "all" or r.get("batch", "1") == args.batch]
    # The index holds every judged report either way; only the scores and errors are of one half.
    scored = [r for r in judged if args.split in ("all", r["split"])]
    if args.worker:
        print(json.dumps(cohorts(args.openi, judged, args.mode)))
        return 0
    kept = {}
    if not args.no_baseline:
        kept[f"before ({args.baseline})"] = baseline_cohorts(args.baseline, args.openi, args.mode, args.batch)
    kept["after"] = cohorts(args.openi, judged, args.mode)
    results = {name: score(scored, k) for name, k in kept.items()}
    print(f"Judged set (batch {args.batch}): {len(judged)} (report, finding) pairs, "
          f"{len({r['report_id'] for r in judged})} reports; mode {args.mode}; cohort = include 'states', "
          "no concept links.\n")
    print(markdown(results, scored))
    after = results["after"]
    half = "dev" if args.split == "dev" else "test"
    missed = [f"{f} P={_cell(s[half]['precision'])} R={_cell(s[half]['recall'])}" for f, s in sorted(after.items())
              if (s[half]["precision"] or 0) < TARGET_PRECISION or (s[half]["recall"] or 0) < TARGET_RECALL]
    print(f"\n{half.capitalize()} target (P >= {TARGET_PRECISION}, R >= {TARGET_RECALL} for every finding): "
          + ("met" if not missed else "missed by " + "; ".join(missed)))
    if args.errors and args.split != "test":
        print("\nDev errors (after):\n" + "\n".join(errors(scored, kept["after"], "dev")))
    if args.json:
        args.json.write_text(json.dumps({"results": results, "kept": kept}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
