"""Search by meaning: queries that describe a finding without naming it, over Open-i.

Run:  .venv/bin/python benchmarks/bench_descriptions.py [--parts link alpha systems] [--trained DIR ...]
                                                        [--splits dev test] [--work DIR] [--out results.json]

The queries, ``benchmarks/data/description_queries.tsv``, were written for this project: 163
descriptions of 55 lexicon findings in lay, referring-clinician and radiology wording, none naming
its finding or a synonym (``tests/test_description_queries.py`` checks it). 40 are the **test
split, never used to choose anything**; the other 123 are the development split. A report is
relevant to a query when radsift's labeler reads the described finding as present in it (the
stored labels of the index). Every system is ``radsift.Index.search`` as a user runs it (report
level, negation-aware, k = 1000), so what is measured is what users get.

Parts:

``link``     Concept linking (``radsift.search.concepts``, with its rules of place, substance and
             margin): for each model, the best concept and cosine of every development query (positives: the described finding is the right
             link) and of the 141 findings outside the lexicon of ``open_vocab_findings.tsv``
             (negatives: no lexicon concept is right), by threshold: precision, recall, false
             links. Then the test split at the chosen threshold.
``alpha``    The hybrid's dense weight for each model without a measured one: mAP of the
             development queries and of the Open-i weak-label queries (negation ignored, so the
             weight alone decides) by weight; BM25 alone for comparison.
``systems``  The table: BM25, each model dense and hybrid, with and without concept linking and
             pseudo-relevance feedback, on both splits (mAP, P@10); linking at the threshold the
             ``link`` part chose (or ``--threshold``), the model's own dense weight.

The packaged lexicon's link examples hold this batch's development rows (``link_examples.py``): every part runs
with them taken out, so a development query never links by its own words.

``--splits dev`` leaves the test split out of every part (no test figure computed or printed).

Models: the packaged all-MiniLM-L6-v2 and every ``--trained`` folder (e.g. ``models/default``
from ``radsift train``). Indexes are built once into ``--work`` and reused.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import sys
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_negation: the shared index builder
QUERIES = ROOT / "benchmarks" / "data" / "description_queries.tsv"
OUTSIDE = ROOT / "benchmarks" / "data" / "open_vocab_findings.tsv"
THRESHOLDS = [round(x, 2) for x in np.arange(0.30, 0.91, 0.05)]
ALPHAS = [round(x, 2) for x in np.arange(0.0, 1.01, 0.1)]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def read_queries(path: Path = QUERIES) -> list[dict]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))


def outside_findings(path: Path = OUTSIDE) -> list[str]:
    with path.open(encoding="utf-8", newline="") as fh:
        return [row["finding"] for row in csv.DictReader(fh, delimiter="\t")]


def lexicon_names(finding: str, spotter=None) -> bool:
    """Whether one phrase of the packaged lexicon spans the whole of ``finding`` (the lexicon names it word for word:
    "subluxation" since the dislocation concept); ``spotter`` a :class:`radsift.labels.spotter.Spotter` (the packaged
    lexicon's when None). The one rule for ``bench_links.py``'s outside findings and ``tests/test_negation_judge.py``."""
    from radsift.labels.lexicon import load_lexicon
    from radsift.labels.spotter import Spotter

    spotter = spotter if spotter is not None else Spotter(load_lexicon())
    text = finding.strip()
    return any(m.start == 0 and m.end >= len(text.rstrip(".")) for m in spotter.spot(text))


def open_index(work: Path, csv_path: Path, model: str | None):
    """An Open-i index built with ``model`` (None = the packaged model), cached under ``work``."""
    from bench_negation import openi_index

    from radsift.models import Encoder

    name = "general" if model is None else hashlib.sha1(str(Path(model).resolve()).encode()).hexdigest()[:10]
    return openi_index(work, csv_path, Encoder.load(model), name=f"openi-{name}")


def relevant_reports(idx, finding: str) -> set[str]:
    """Reports the stored labels read as stating ``finding`` present."""
    store = idx.store
    labels = store.labels()
    code = store.manifest.findings.index(finding)
    rows = labels.row[(labels.finding == code) & (labels.status == 1)]
    sent_report = store.units("sentence").report_row
    ids = store.report_ids
    return {ids[r] for r in np.unique(sent_report[rows]).tolist()}


def ap_and_p10(ranked: list[str], relevant: set[str]) -> tuple[float, float]:
    from radsift.evaluation.metrics import average_precision, precision

    qrels = {r: 1 for r in relevant}
    return average_precision(ranked, qrels, 1000), precision(ranked, qrels, 10)


# -- linking ----------------------------------------------------------------------------------------
def link_scores(idx, texts: list[str]) -> list[tuple[str, float]]:
    """The best concept and its cosine for each text's finding text (the query minus its cue), with the
    linker's rules (words of place and substance; a best concept short of :data:`LINK_MARGIN` over the
    next one scores 0: it would not link at any threshold)."""
    from radsift.search.concepts import LINK_MARGIN

    out = []
    for text in texts:
        finding_text, _, _ = idx.labeler.query_finding_text(" ".join(text.split()))
        vec = idx.encoder.encode_query(finding_text or text)
        best, score, second = idx.linker.decide(vec, finding_text or text)  # the linker's rules, parts included
        clear = score - second >= LINK_MARGIN
        out.append((idx.linker.concepts[best], score if clear else 0.0))
    return out


def run_link(idx, queries: list[dict], negatives: list[str]) -> dict:
    dev = [q for q in queries if q["split"] == "dev"]
    pos = link_scores(idx, [q["query"] for q in dev])
    neg = link_scores(idx, negatives)
    rows = []
    for t in THRESHOLDS:
        linked = [(c, s, q["finding"]) for (c, s), q in zip(pos, dev) if s >= t]
        right = sum(c == f for c, _, f in linked)
        false_neg = sum(s >= t for _, s in neg)
        rows.append({"threshold": t, "linked": len(linked), "right": right,
                     "precision": right / len(linked) if linked else 1.0, "recall": right / len(dev),
                     "outside_linked": false_neg / len(neg)})
    return {"rows": rows, "n_dev": len(dev), "n_outside": len(neg)}


def choose_threshold(rows: list[dict], min_precision: float = 0.98, max_outside: float = 0.05) -> float:
    """The lowest threshold (most links) whose development precision and outside-lexicon false-link rate
    meet the bounds; linking stays off (2.0) when none does. The bounds are strict because a wrong link
    reorders the whole list (the linked concept's reading tiers come first); the precision bound is 0.98,
    not 0.95, because the development descriptions share wording with the lexicon's (0.97 on development
    was 0.69 on test: ``docs/measurements.md``, "Concept linking")."""
    for row in rows:
        if row["precision"] >= min_precision and row["outside_linked"] <= max_outside:
            return row["threshold"]
    return 2.0


def test_links(idx, queries: list[dict], threshold: float) -> dict:
    test = [q for q in queries if q["split"] == "test"]
    got = link_scores(idx, [q["query"] for q in test])
    linked = [(c, q["finding"]) for (c, s), q in zip(got, test) if s >= threshold]
    right = sum(c == f for c, f in linked)
    return {"threshold": threshold, "n": len(test), "linked": len(linked), "right": right,
            "precision": right / len(linked) if linked else None, "recall": right / len(test)}


# -- systems ----------------------------------------------------------------------------------------
def evaluate(idx, queries: list[dict], qrels: dict[str, set[str]], **options) -> dict:
    """mAP and P@10 per split of one system (``Index.search`` options)."""
    per = defaultdict(lambda: ([], []))
    for q in queries:
        hits = idx.search(q["query"], k=1000, include_report=False, mentions=False, **options)
        ap, p10 = ap_and_p10([h.report_id for h in hits], qrels[q["finding"]])
        per[q["split"]][0].append(ap)
        per[q["split"]][1].append(p10)
    return {split: {"map": float(np.mean(a)), "p10": float(np.mean(p)), "n": len(a)} for split, (a, p) in per.items()}


def uses_examples(idx) -> bool:
    """Whether the index's lexicon has link examples (the code before them had none)."""
    return any(getattr(c, "examples", ()) for c in idx.labeler.lexicon)


def use(idx, linker) -> None:
    """Search ``idx`` with ``linker`` (no-op when it already does: the code before link examples has no setter)."""
    if linker is not idx.linker:
        idx.linker = linker


def without_examples(idx, linker, texts: list[str]):
    """``linker`` less the link examples worded as ``texts`` (a batch's own rows: leave one batch out); ``linker``
    itself when its lexicon has none. The phrase vectors are cached in the index folder per set of phrases."""
    if not uses_examples(idx):
        return linker
    from radsift.search.concepts import ConceptLinker

    drop = {" ".join(t.split()) for t in texts}
    lexicon = idx.labeler.lexicon
    lexicon = replace(lexicon, concepts=tuple(
        replace(c, examples=tuple(e for e in c.examples if e not in drop)) for c in lexicon))
    return ConceptLinker.for_lexicon(lexicon, idx.encoder, cache_dir=idx.store.index_dir / "cache",
                                     fingerprint=idx.store.manifest.model_fingerprint)


def weak_label_queries(idx, min_relevant: int = 5) -> tuple[list[dict], dict[str, set[str]]]:
    """Open-i weak-label queries ("X", present) with their relevant reports (the alpha part's second set)."""
    out, qrels = [], {}
    for finding in idx.store.manifest.findings:
        rel = relevant_reports(idx, finding)
        if len(rel) >= min_relevant:
            out.append({"query": finding, "finding": finding, "split": "weak"})
            qrels[finding] = rel
    return out, qrels


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", default=["link", "alpha", "systems"], choices=["link", "alpha", "systems"])
    parser.add_argument("--trained", nargs="*", default=[], help="trained model folders (radsift train --out)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/radsift-bench-descriptions"))
    parser.add_argument("--openi", type=Path, default=DATA / "openi" / "reports.csv")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--threshold", type=float, action="append", default=None,
                        help="link threshold per model in order (general first); default: each model's own setting")
    parser.add_argument("--splits", nargs="+", default=["dev", "test"], choices=["dev", "test"],
                        help="dev: the development split only, no test figure computed or printed")
    args = parser.parse_args()
    if not args.openi.exists():
        print(f"skipped: {args.openi} absent (../shared/data is not on this machine)")
        return 0
    args.work.mkdir(parents=True, exist_ok=True)
    queries = [q for q in read_queries() if q["split"] in args.splits]
    results: dict = {}
    models = [None] + list(args.trained)
    for i, model in enumerate(models):
        label = "all-MiniLM-L6-v2 (untrained)" if model is None else f"trained {model}"
        idx = open_index(args.work, args.openi, model)
        # the batch's own development rows are among the packaged link examples: every figure here is without them
        use(idx, without_examples(idx, idx.linker, [q["query"] for q in read_queries() if q["split"] == "dev"]))
        qrels = {f: relevant_reports(idx, f) for f in {q["finding"] for q in queries}}
        res = results.setdefault(label, {})
        log(f"== {label}: settings {idx.settings}")
        if "link" in args.parts:
            t0 = time.perf_counter()
            link = run_link(idx, queries, outside_findings())
            chosen = choose_threshold(link["rows"])
            link["chosen"] = chosen
            if "test" in args.splits:
                link["test"] = test_links(idx, queries, chosen)
            res["link"] = link
            log(f"  link: {time.perf_counter() - t0:.0f} s; chosen {chosen}; test {link.get('test', '(not run)')}")
            for row in link["rows"]:
                log("   " + "  ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()))
        if "alpha" in args.parts:
            weak, weak_qrels = weak_label_queries(idx)
            dev = [q for q in queries if q["split"] == "dev"]  # the test split chooses nothing
            sweep = []
            for a in ALPHAS:
                d = evaluate(idx, dev, qrels, mode="hybrid", alpha=a, concepts=False)["dev"]["map"]
                w = evaluate(idx, weak, weak_qrels, mode="hybrid", alpha=a, negation="ignore")["weak"]["map"]
                sweep.append({"alpha": a, "dev_map": d, "weak_map": w, "mean": (d + w) / 2})
                log(f"  alpha {a:.1f}: descriptions (dev) {d:.3f}  weak-label queries {w:.3f}")
            res["alpha"] = sweep
        if "systems" in args.parts:
            # The threshold: given, else the one the link part just chose on the development split.
            threshold = (args.threshold[i] if args.threshold and i < len(args.threshold)
                         else res.get("link", {}).get("chosen"))
            if threshold is not None:
                idx.settings = replace(idx.settings, link_threshold=threshold)
            systems = {"bm25": dict(mode="bm25")} if model is None else {}
            for mode in ("dense", "hybrid"):
                systems[f"{mode}"] = dict(mode=mode, concepts=False)
                systems[f"{mode} + concepts"] = dict(mode=mode)
                systems[f"{mode} + concepts + prf"] = dict(mode=mode, prf=True)
            systems["hybrid + prf"] = dict(mode="hybrid", concepts=False, prf=True)
            systems["hybrid alpha 0.75"] = dict(mode="hybrid", concepts=False, alpha=0.75)
            systems["hybrid alpha 0.75 + concepts"] = dict(mode="hybrid", alpha=0.75)
            table = {}
            for name, options in systems.items():
                t0 = time.perf_counter()
                table[name] = evaluate(idx, queries, qrels, **options)
                log(f"  {name:32s} " + "   ".join(f"{s} {table[name][s]['map']:.3f} / {table[name][s]['p10']:.3f}"
                                                   for s in args.splits) + f"  [{time.perf_counter() - t0:.0f} s]")
            res["systems"] = table
    print(json.dumps(results, indent=1, default=str)[:20000])
    if args.out:
        args.out.write_text(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
