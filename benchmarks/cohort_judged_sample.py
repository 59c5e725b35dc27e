"""Draw the reports of the judged cohort set (``src/radsift/evaluation/data/cohort_judged.tsv``).

Run:  .venv/bin/python benchmarks/cohort_judged_sample.py [--openi ../shared/data/openi/reports.csv] [--show]

For each of the ten findings it draws, with a fixed seed, Open-i reports (findings and impression
sections) by regular expressions that import nothing from radsift: in batch 1, 20 whose mention of the
finding is not right after a negation in its sentence (likely positives), 8 among all reports mentioning
it and 4 that do not mention it; in batch 2 (:data:`BATCHES`), 8 and 4 more. It prints ``uid<TAB>finding<TAB>split`` rows (and with ``--show`` the
report text, for the judge to read whole; never copied into the repository). The split is by a hash
of the report id (:func:`split_of`): the same report is dev or test for every finding.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import random
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OPENI = ROOT.parent / "shared" / "data" / "openi" / "reports.csv"
SEED = 35
#: finding -> a regular expression for a mention of it (a judge's net, wider than the lexicon).
FINDINGS = {
    "pneumothorax": r"pneumothora|\bptx\b",
    "pleural effusion": r"effusion|pleural fluid",
    "cardiomegaly": r"cardiomegaly|(heart|cardiac silhouette|cardiac) (size )?(is |are )?(mildly |moderately |markedly )?enlarged|enlarged (heart|cardiac)|enlargement of the (heart|cardiac)",
    "atelectasis": r"atelecta|collapse",
    "nodule": r"nodul",
    "mass": r"\bmass",
    "pneumonia": r"pneumonia|infect",
    "pulmonary edema": r"edema",
    "consolidation": r"consolidat",
    "pleural thickening": r"pleural thicken|thickened pleura|pleural.{0,30}thicken|apical cap|pleural reaction|pleural scar|pleural fibrosis|pleural parenchymal scar|pleuroparenchymal",
}
_NEG = re.compile(r"\b(no|without|negative for|free of|clear of|not|nor)\b[^.;]*$", re.I)


def split_of(uid: str) -> str:
    """``dev`` or ``test`` by a hash of the report id (stable across runs and machines)."""
    return "dev" if int(hashlib.sha256(uid.encode()).hexdigest(), 16) % 2 == 0 else "test"


def read_reports(path: Path) -> dict[str, str]:
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return {r["uid"]: f"FINDINGS: {r['findings']}\nIMPRESSION: {r['impression']}" for r in rows
            if (r["findings"] or r["impression"]).strip()}


def likely_positive(text: str, pattern: str) -> bool:
    for sent in re.split(r"(?<=[.;])\s+", text):
        for m in re.finditer(pattern, sent, re.I):
            if not _NEG.search(sent[: m.start()]):
                return True
    return False


#: Per batch: (seed, likely positives, other mentions, non-mentions) drawn per finding. Batch 1 was judged
#: before any rule change of issue 35; batch 2 (more likely positives, for the findings the test half held
#: few of) after them, without looking at what radsift reads in those reports.
BATCHES = {1: (SEED, 20, 8, 4), 2: (SEED + 1, 8, 4, 0)}


def draw(reports: dict[str, str], batch: int = 1) -> list[tuple[str, str]]:
    """The (report id, finding) pairs of a batch; a later batch skips the pairs of the earlier ones."""
    taken = {pair for b in range(1, batch) for pair in draw(reports, b)}
    seed, n_pos, n_rest, n_none = BATCHES[batch]
    rng = random.Random(seed)
    uids = sorted(reports, key=int)
    out: list[tuple[str, str]] = []
    for finding, pattern in FINDINGS.items():
        rx = re.compile(pattern, re.I)
        mention = [u for u in uids if rx.search(reports[u]) and (u, finding) not in taken]
        pos = [u for u in mention if likely_positive(reports[u], pattern)]
        none = [u for u in uids if not rx.search(reports[u]) and (u, finding) not in taken]
        picked = rng.sample(pos, min(n_pos, len(pos)))
        rest = [u for u in mention if u not in picked]
        picked += rng.sample(rest, n_rest)
        picked += rng.sample(none, n_none)
        out += [(u, finding) for u in picked]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--openi", type=Path, default=DEFAULT_OPENI)
    parser.add_argument("--show", action="store_true", help="print each report's text (for judging)")
    parser.add_argument("--batch", type=int, default=1, choices=sorted(BATCHES))
    args = parser.parse_args()
    if not args.openi.exists():
        print(f"skipped: {args.openi} absent (../shared/data is not on this machine)")
        return 0
    reports = read_reports(args.openi)
    for uid, finding in draw(reports, args.batch):
        print(f"{uid}\t{finding}\t{split_of(uid)}")
        if args.show:
            print(reports[uid] + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
