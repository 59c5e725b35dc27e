"""Negation-aware search, measured: the query's reading on Open-i and on findings outside the lexicon.

Run:  .venv/bin/python benchmarks/bench_negation.py [--parts weak open latency gap] [--work DIR]
                                                    [--out results.json] [--openi CSV] [--mtsamples CSV]

Three measurements (issue 16, item 5), each a part:

``weak``     Open-i weak-label queries, as ``radsift search`` runs them: for every lexicon finding
             with at least ``--min-relevant`` relevant reports, "X" (present), "no X" (absent) and
             "possible X" (uncertain). Relevant units state that reading of X by the stored labels
             (a report: any of its sentences). mAP (AP over the top 1000) per polarity, report and
             sentence level, all four modes, ``negation=ignore`` (plain similarity) against
             ``negation=aware`` (reading tiers). **Circular by design**: the labeler that made the
             qrels also makes the tiers, so this measures how far the ranking follows the labels,
             not whether the labels are right (the gold set does that, ``bench_labels.py``).
``open``     Findings outside the packaged lexicon (``benchmarks/data/open_vocab_findings.tsv``, written
             for this project) over the MTSamples notes (one report per distinct transcription,
             ``--text-column transcription``), each as "X" and "no X": the share of top-10 hits
             whose matched sentence states the opposite of the query, judged by
             ``benchmarks/negation_judge.py``, a regex judge that imports nothing from radsift.
             Target: at most 5% for both polarities (hybrid, report level, the default search).
             The findings are split by a hash of their name (:func:`finding_split`) into a
             development half (rules were changed looking at it only) and a test half.
``latency``  Open-i, hybrid, report level, k=10, end to end (query encoding included): p50/p95 with
             the reading (``aware``) against without (``ignore``), over the weak-label queries and
             free-text ones, interleaved. Target: aware p50 at most 1.2x ignore p50.
``gap``      Strict tiers (the default) against calibrated boosts (each tier costs ``gap`` times the
             score range, ``Index.tier_gap``), hybrid, report level: on the ``weak`` queries, and
             with ``open`` on the development half of the findings outside the lexicon.

The indexes are built once into ``--work`` (default ``/tmp/radsift-bench-negation``) with the
packaged all-MiniLM-L6-v2 and reused. Exits with a message when the data are absent. Runs the
current checkout; to measure another (the code before a change), put its ``src`` first on
PYTHONPATH: the script uses only ``radsift.Index``'s public API for the ``weak``, ``open`` and
``latency`` parts.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(Path(__file__).resolve().parent))

MODES = ("dense", "bm25", "hybrid", "hybrid-rrf")
TEMPLATES = {"present": "{x}", "absent": "no {x}", "uncertain": "possible {x}"}
#: The open-vocabulary findings are split by a hash of their name; rules were tuned on ``dev`` only.
SPLITS = ("dev", "test")
FREE_TEXT = ["enlarged heart", "collapsed lung", "fluid in the lung bases", "free air under the diaphragm",
             "small right apical pneumothorax", "no acute cardiopulmonary abnormality", "left lower lobe opacity",
             "healed rib fracture", "endotracheal tube above the carina", "hyperinflated lungs"]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def percentile(xs, p: float) -> float:
    return float(np.percentile(np.asarray(xs, dtype=np.float64), p))


# -- indexes ------------------------------------------------------------------------------------
def openi_index(work: Path, csv_path: Path, encoder, name: str = "openi"):
    """The Open-i index ``work/name`` built with ``encoder`` (built once, then reused)."""
    from radsift.corpus import ReaderOptions, read_corpus
    from radsift.index import build_index
    from radsift.search import Index

    path = work / name
    if not (path / "CURRENT").exists():
        log(f"building {path} with {encoder.name} ...")
        options = ReaderOptions(format="csv", id_column="uid",
                                sections={"findings": "findings", "impression": "impression"})
        build_index(path, read_corpus([csv_path], options), encoder=encoder, progress=True)
    return Index.open(path, encoder=encoder)


def mtsamples_index(work: Path, csv_path: Path, encoder):
    """MTSamples notes, one report per distinct transcription (the file repeats notes across specialties)."""
    from radsift.corpus import ReaderOptions, read_corpus
    from radsift.index import build_index
    from radsift.search import Index

    path = work / "mtsamples"
    if not (path / "CURRENT").exists():
        log(f"building {path} ...")
        options = ReaderOptions(format="csv", id_column="note_id", text_column="transcription", on_error="skip")
        seen: set[str] = set()

        def distinct():
            for report in read_corpus([csv_path], options):
                key = " ".join(" ".join(report.sections.values()).split()).lower()
                if key and key not in seen:
                    seen.add(key)
                    yield report

        build_index(path, distinct(), encoder=encoder, progress=True)
    return Index.open(path, encoder=encoder)


# -- weak-label queries ---------------------------------------------------------------------------
def weak_queries(idx, min_relevant: int) -> list[dict]:
    """Every (finding, status) with enough relevant reports, with its report and sentence qrels."""
    store = idx.store
    labels = store.labels()
    names = store.manifest.findings
    codes = {"present": 1, "absent": -1, "uncertain": 0}
    sent_report = store.units("sentence").report_row
    report_ids = store.report_ids
    out = []
    for code, name in enumerate(names):
        for status, st in codes.items():
            sel = (labels.finding == code) & (labels.status == st)
            rows = np.unique(labels.row[sel])
            reports = {report_ids[r] for r in np.unique(sent_report[rows]).tolist()}
            if len(reports) < min_relevant:
                continue
            out.append({"finding": name, "status": status, "text": TEMPLATES[status].format(x=name),
                        "reports": reports, "sentence_rows": set(rows.tolist())})
    return out


def sentence_row_map(idx) -> dict[str, int]:
    """Sentence uid -> sentence row, for every labeled sentence (to judge sentence-level hits)."""
    store = idx.store
    rows = np.unique(store.labels().row).tolist()
    out: dict[str, int] = {}
    for i in range(0, len(rows), 5000):  # SQLite caps the number of bound parameters
        out.update({s.uid: r for r, s in store.sentences_by_rows(rows[i:i + 5000]).items()})
    return out


def average_precision(ranked: list, relevant: set, k: int = 1000) -> float:
    from radsift.evaluation.metrics import average_precision as ap

    return ap([str(x) for x in ranked], {str(x): 1 for x in relevant}, k)


def run_weak(idx, queries: list[dict], vectors: np.ndarray, uid_row: dict[str, int], *, modes=MODES,
             negations=("ignore", "aware"), levels=("report", "sentence"), k: int = 1000) -> dict:
    """mAP per (level, mode, negation, status)."""
    table: dict = {}
    for level in levels:
        for mode in modes:
            for negation in negations:
                per = defaultdict(list)
                ceiling = defaultdict(list)
                t = time.perf_counter()
                for q, vec in zip(queries, vectors):
                    hits = idx.search(q["text"], k=k, mode=mode, level=level, negation=negation,
                                      include_report=False, query_vector=vec)
                    if level == "report":
                        ap = average_precision([h.report_id for h in hits], q["reports"], k)
                    else:
                        ap = average_precision([uid_row.get(h.sentence.uid, -1) for h in hits], q["sentence_rows"], k)
                    per[q["status"]].append(ap)
                    n_rel = len(q["reports"] if level == "report" else q["sentence_rows"])
                    ceiling[q["status"]].append(min(1.0, k / n_rel))  # AP over the top k can reach k / R at most
                row = {s: (float(np.mean(v)), len(v), float(np.mean(ceiling[s]))) for s, v in per.items()}
                table[(level, mode, negation)] = row
                log(f"  weak {level:8s} {mode:10s} {negation:6s} "
                    + "  ".join(f"{s} {m:.3f} (n={n})" for s, (m, n, _) in row.items())
                    + f"  [{time.perf_counter() - t:.0f} s]")
    return table


def weak_markdown(table: dict, levels=("report", "sentence")) -> str:
    lines = []
    for level in levels:
        lines.append(f"\n{level} level, mAP (AP over the top 1000; a query with R > 1000 relevant units can reach "
                     f"1000 / R at most: the ceiling is the mean of that bound), ignore → aware:\n")
        statuses = ("present", "absent", "uncertain")
        lines.append("| mode | " + " | ".join(statuses) + " |")
        lines.append("|---|" + "---|" * len(statuses))
        for mode in MODES:
            before, after = table.get((level, mode, "ignore")), table.get((level, mode, "aware"))
            if before is None or after is None:
                continue
            cells = []
            for s in statuses:
                if s in before:
                    cells.append(f"{before[s][0]:.3f} → **{after[s][0]:.3f}** (n={after[s][1]}, "
                                 f"ceiling {after[s][2]:.3f})")
                else:
                    cells.append("–")
            lines.append(f"| {mode} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# -- findings outside the lexicon ---------------------------------------------------------------------
def run_open(idx, findings: list[dict], *, levels=("report", "sentence"), modes=("hybrid",), k: int = 10,
             negations=("ignore", "aware")) -> dict:
    """Share of top-k hits whose matched sentence states the opposite of the query (by the regex judge)."""
    from negation_judge import judge, opposite

    texts = [f["finding"] for f in findings] + [f"no {f['finding']}" for f in findings]
    vectors = idx.encoder.encode([t for t in texts], batch_size=64)
    vec = dict(zip(texts, vectors))
    out = {}
    examples = []
    for level in levels:
        for mode in modes:
            for negation in negations:
                counts = {(sp, p): defaultdict(int) for sp in SPLITS for p in ("present", "absent")}
                worst = []
                t = time.perf_counter()
                for f in findings:
                    for polarity, text in (("present", f["finding"]), ("absent", f"no {f['finding']}")):
                        hits = idx.search(text, k=k, mode=mode, level=level, negation=negation,
                                          include_report=False, query_vector=vec[text])
                        n_opp = 0
                        for h in hits:
                            verdict = judge(h.sentence.text, f["variants"])
                            c = counts[(f["split"], polarity)]
                            c["hits"] += 1
                            c[verdict] += 1
                            if opposite(polarity, verdict):
                                c["opposite"] += 1
                                n_opp += 1
                                if negation == "aware" and level == "report" and mode == "hybrid":
                                    examples.append((f["split"], text, h.report_id, h.sentence.text[:200]))
                            wanted = "affirmed" if polarity == "present" else "negated"
                            c["stated"] += verdict == wanted
                        counts[(f["split"], polarity)]["queries"] += 1
                        if f["split"] == "dev":  # only the development split is looked at closely
                            worst.append((n_opp, text))
                out[(level, mode, negation)] = {"|".join(key): dict(c) for key, c in counts.items()}
                worst.sort(reverse=True)
                log(f"  open {level:8s} {mode:10s} {negation:6s} "
                    + "  ".join(f"{sp} {p}: opposite {c['opposite'] / max(c['hits'], 1):.1%} stated "
                                f"{c['stated'] / max(c['hits'], 1):.1%}" for (sp, p), c in counts.items())
                    + f"  worst {worst[:3]}  [{time.perf_counter() - t:.0f} s]")
    return {"table": out, "examples": examples}


def share_cells(row: dict, split: str) -> list[str]:
    """Opposite and stated shares of one split, for "X" and "no X"."""
    cells = []
    for p in ("present", "absent"):
        c = row[f"{split}|{p}"]
        n = max(c.get("hits", 0), 1)
        cells += [f"{c.get('opposite', 0) / n:.1%}", f"{c.get('stated', 0) / n:.1%}"]
    return cells


def open_markdown(result: dict, findings: list[dict]) -> str:
    n = {sp: sum(f["split"] == sp for f in findings) for sp in SPLITS}
    lines = [f"\n{len(findings)} findings outside the lexicon ({n['dev']} development, {n['test']} test), each as "
             "\"X\" and \"no X\"; top 10, by the regex judge (share of hits whose matched sentence states the "
             "opposite / states the query's reading):\n",
             "| split | level | mode | negation | \"X\": opposite | \"X\": states X | \"no X\": opposite | "
             "\"no X\": states no X |",
             "|---|---|---|---|---|---|---|---|"]
    for split in SPLITS:
        for (level, mode, negation), row in result["table"].items():
            lines.append(f"| {split} | {level} | {mode} | {negation} | " + " | ".join(share_cells(row, split)) + " |")
    return "\n".join(lines)


def finding_split(name: str) -> str:
    """``dev`` or ``test`` by the parity of the name's SHA-1: fixed, and blind to the results."""
    return "test" if int(hashlib.sha1(name.encode()).hexdigest(), 16) % 2 else "dev"


# -- latency --------------------------------------------------------------------------------------
def run_latency(idx, texts: list[str], passes: int = 3) -> dict:
    """Hybrid, report level, k=10, end to end; aware and ignore interleaved query by query."""
    for q in texts[:5]:  # warm: encoder, labeler, caches
        idx.search(q, k=10, mode="hybrid")
        idx.search(q, k=10, mode="hybrid", negation="ignore")
    times = {"ignore": [], "aware": []}
    for _ in range(passes):
        for q in texts:
            for negation in ("ignore", "aware"):
                t = time.perf_counter()
                idx.search(q, k=10, mode="hybrid", negation=negation)
                times[negation].append((time.perf_counter() - t) * 1000)
    out = {n: {"p50": percentile(v, 50), "p95": percentile(v, 95), "n": len(v)} for n, v in times.items()}
    out["ratio_p50"] = out["aware"]["p50"] / out["ignore"]["p50"]
    log(f"  latency ignore p50 {out['ignore']['p50']:.1f} ms p95 {out['ignore']['p95']:.1f} ms; aware p50 "
        f"{out['aware']['p50']:.1f} ms p95 {out['aware']['p95']:.1f} ms; ratio {out['ratio_p50']:.2f}")
    return out


# -- main -----------------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", default=["weak", "open", "latency", "gap"],
                        choices=["weak", "open", "latency", "gap"])
    parser.add_argument("--work", type=Path, default=Path("/tmp/radsift-bench-negation"))
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    parser.add_argument("--openi", type=Path, default=DATA / "openi" / "reports.csv")
    parser.add_argument("--mtsamples", type=Path, default=DATA / "mtsamples" / "mtsamples.csv")
    parser.add_argument("--findings", type=Path, default=ROOT / "benchmarks" / "data" / "open_vocab_findings.tsv")
    parser.add_argument("--min-relevant", type=int, default=5, help="relevant reports a weak-label query needs")
    parser.add_argument("--gaps", type=float, nargs="+", default=[0.05, 0.1, 0.25, 0.5, 1.0])
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    args = parser.parse_args()
    need = [args.openi] if set(args.parts) & {"weak", "latency", "gap"} else []
    need += [args.mtsamples, args.findings] if "open" in args.parts else []
    missing = [str(p) for p in need if not p.exists()]
    if missing:
        print(f"skipped: {', '.join(missing)} absent (../shared/data is not on this machine)")
        return 0

    from radsift.models import Encoder

    args.work.mkdir(parents=True, exist_ok=True)
    encoder = Encoder.load(None)
    results: dict = {}
    md: list[str] = []
    if set(args.parts) & {"weak", "latency", "gap"}:
        idx = openi_index(args.work, args.openi, encoder)
        queries = weak_queries(idx, args.min_relevant)
        log(f"weak-label queries: {len(queries)} "
            + ", ".join(f"{s} {sum(q['status'] == s for q in queries)}" for s in TEMPLATES))
        vectors = encoder.encode([q["text"] for q in queries], batch_size=64)
        if "weak" in args.parts:
            uid_row = sentence_row_map(idx)
            table = run_weak(idx, queries, vectors, uid_row, modes=args.modes)
            results["weak"] = {"|".join(k): v for k, v in table.items()}
            md.append("## Open-i weak-label queries\n" + weak_markdown(table))
        if "gap" in args.parts:
            if not hasattr(idx, "tier_gap"):
                log("gap: this checkout's Index has no tier_gap; skipped")
            else:
                rows = ["| ranking | present | absent | uncertain |", "|---|---|---|---|"]
                for gap in [None] + list(args.gaps):
                    idx.tier_gap = gap
                    t = run_weak(idx, queries, vectors, {}, modes=("hybrid",), negations=("aware",),
                                 levels=("report",))[("report", "hybrid", "aware")]
                    name = "strict tiers" if gap is None else f"boost, gap {gap:g}"
                    rows.append(f"| {name} | " + " | ".join(f"{t[s][0]:.3f}" if s in t else "–"
                                                            for s in TEMPLATES) + " |")
                    results.setdefault("gap", {})[name] = t
                idx.tier_gap = None
                md.append("## Strict tiers or calibrated boosts (hybrid, report level, mAP)\n\n" + "\n".join(rows))
        if "latency" in args.parts:
            texts = [q["text"] for q in queries] + FREE_TEXT
            lat = run_latency(idx, texts)
            results["latency"] = lat
            md.append("## Latency (Open-i, hybrid, report level, k=10, end to end)\n\n"
                      f"| negation | p50 ms | p95 ms | searches |\n|---|---|---|---|\n"
                      f"| ignore | {lat['ignore']['p50']:.1f} | {lat['ignore']['p95']:.1f} | {lat['ignore']['n']} |\n"
                      f"| aware | {lat['aware']['p50']:.1f} | {lat['aware']['p95']:.1f} | {lat['aware']['n']} |\n\n"
                      f"aware / ignore p50: **{lat['ratio_p50']:.2f}x** (target ≤ 1.20x)")
    if "open" in args.parts:
        from negation_judge import load_findings

        findings = [dict(f, split=finding_split(f["finding"])) for f in load_findings(args.findings)]
        idx = mtsamples_index(args.work, args.mtsamples, encoder)
        log(f"open-vocabulary findings: {len(findings)}; MTSamples index: {idx.stats()['counts']}")
        res = run_open(idx, findings)
        results["open"] = {"|".join(k): v for k, v in res["table"].items()}
        results["open_examples"] = res["examples"]
        md.append("## Findings outside the lexicon (MTSamples)\n" + open_markdown(res, findings))
        if "gap" in args.parts and hasattr(idx, "tier_gap"):
            rows = ["| ranking (development split) | \"X\": opposite | \"X\": states X | \"no X\": opposite | "
                    "\"no X\": states no X |", "|---|---|---|---|---|"]
            for gap in [None] + list(args.gaps):
                idx.tier_gap = gap
                row = run_open(idx, findings, levels=("report",), negations=("aware",))["table"][
                    ("report", "hybrid", "aware")]
                cells = share_cells(row, "dev")
                name = "strict tiers" if gap is None else f"boost, gap {gap:g}"
                rows.append(f"| {name} | " + " | ".join(cells) + " |")
                results.setdefault("gap_open", {})[name] = row
            idx.tier_gap = None
            md.append("## Strict tiers or calibrated boosts, outside the lexicon (MTSamples, hybrid, report level, "
                      "top 10, regex judge)\n\n" + "\n".join(rows))
    print("\n\n".join(md))
    if args.out:
        args.out.write_text(json.dumps(results, indent=1, default=list))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
