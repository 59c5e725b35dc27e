"""Relevance bands, calibrated and measured: how often a hit of each band states what the query asks.

Run:  .venv/bin/python benchmarks/bench_bands.py --calibrate      # fit on the dev findings, write bands.json
      .venv/bin/python benchmarks/bench_bands.py --out results.json  # measure on the test findings
      options: [--work DIR] [--openi CSV] [--mtsamples CSV] [--modes ...] [--k 50] [--max-findings N]

**Relevance** of a hit: its report (all stored sections joined) states what the query asks for, by
``benchmarks/negation_judge.py``, a regex judge that imports nothing from radsift: for "X" the
judge's verdict over the report is ``affirmed`` or ``mixed``, for "no X" ``negated`` or ``mixed``
(``uncertain`` and ``none`` are not relevant).

Queries, each as "X" (present) and "no X" (absent):

* MTSamples (one report per distinct transcription, as ``bench_negation.py`` builds it): the findings
  outside the lexicon of ``benchmarks/data/open_vocab_findings.tsv``, judged by their regex variants;
* Open-i: the packaged lexicon findings that at least ``--min-reports`` (20) reports mention by the
  stored labels (any status), judged by the finding's name and synonyms, escaped as regexes
  (white space and hyphens match each other; the lexicon's ``*`` gap matches up to four words).

Both sets are split by finding with ``bench_negation.finding_split`` (parity of the SHA-1 of the
finding's name). Every query is run in the modes ``hybrid``, ``dense`` and ``bm25`` (and, when
measuring, ``hybrid-rrf``, which reads the hybrid table; it never enters the fit), negation ``aware`` (classes states / partial / opposite) and
``ignore`` (class none), report level, top ``--k`` (50) hits.

``--calibrate`` runs the **dev** findings only, both corpora pooled, and writes
``src/radsift/ranking/data/bands.json`` (:func:`radsift.ranking.bands.fit_table`). Without it, the
**test** findings only: per corpus, mode and negation, each band's precision (share of its hits the
judge finds relevant), hit count and mean estimate (calibration: estimate against observed share);
for Open-i also the weak-label precision (relevant = one of the report's sentences carries the
stored label (finding, wanted status)). That one is **circular by design**: the labeler that made
the stored labels also makes the ``states`` class (so ``states`` is 1.000 there by construction).

How the class and relative score of a hit are recovered: the engine does not put them on
``Hit`` (only the band and the estimate). While searching, this script swaps the packaged table for
a :class:`RecordingTable` that wraps it and notes the ``(kind, class, relative score)`` the engine
asks an estimate for, hit by hit in page order (``radsift.search.counts.Counts.bands``): what is
calibrated is exactly what the engine reads, with no copy of its logic. The indexes are those of
``bench_negation.py`` (``--work``, default ``/tmp/radsift-bench-negation``; built there once with
the packaged all-MiniLM-L6-v2 when absent). Exits with a message when the data are absent.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_negation import DATA, finding_split, log, mtsamples_index, openi_index  # noqa: E402

TABLE_PATH = ROOT / "src" / "radsift" / "ranking" / "data" / "bands.json"
DEFAULT_MODES = ("hybrid", "dense", "bm25")
ALL_MODES = DEFAULT_MODES + ("hybrid-rrf",)
NEGATIONS = ("aware", "ignore")
POLARITIES = {"present": "{x}", "absent": "no {x}"}
#: Judge verdicts that make a report relevant to a query of each polarity.
RELEVANT_VERDICTS = {"present": ("affirmed", "mixed"), "absent": ("negated", "mixed")}
#: Stored label status code of each polarity (radsift.ranking.STATUS_CODES).
STATUS_CODE = {"present": 1, "absent": -1}
BANDS = ("states", "related", "unlikely")


# -- what the engine reads a band from ----------------------------------------------------------------
class RecordingTable:
    """A band table that answers as ``table`` does and notes every ``(kind, class, relative)`` asked."""

    def __init__(self, table) -> None:
        self.table = table
        self.calls: list[tuple[str, str, float]] = []

    def estimate(self, kind: str, cls_name: str, relative: float) -> float:
        self.calls.append((kind, cls_name, float(relative)))
        return self.table.estimate(kind, cls_name, relative)


@contextmanager
def recording(table=None):
    """Within the block, the engine's packaged band table is a :class:`RecordingTable` over ``table``
    (default: the packaged one)."""
    from radsift.ranking import bands

    recorder = RecordingTable(table if table is not None else bands.BandTable.packaged())
    saved = bands._packaged
    bands._packaged = lambda: recorder
    try:
        yield recorder
    finally:
        bands._packaged = saved


# -- queries -------------------------------------------------------------------------------------
def phrase_regex(phrase: str) -> str | None:
    """A lexicon phrase as a judge variant: words escaped, white space and hyphens interchangeable, the
    lexicon's ``*`` (up to four words of the same clause) as up to four words."""
    out, gap = "", False
    for word in re.split(r"[\s-]+", phrase.strip()):
        if word == "*":
            gap = True
            continue
        if word:
            out += (r"[\s-]+" if out else "") + (r"(?:[\w/']+[\s,-]+){0,4}" if gap and out else "") + re.escape(word)
            gap = False
    return out or None


def open_vocab_findings(path: Path) -> list[dict]:
    from negation_judge import load_findings

    return [{"finding": f["finding"], "variants": f["variants"], "split": finding_split(f["finding"])}
            for f in load_findings(path)]


def lexicon_findings(idx, min_reports: int) -> list[dict]:
    """Lexicon findings that at least ``min_reports`` reports mention (stored labels, any status),
    with their judge variants and, per polarity, the report rows whose labels state it."""
    store = idx.store
    labels = store.labels()
    report_of = store.units("sentence").report_row
    lexicon = idx.labeler.lexicon
    out = []
    for code, name in enumerate(store.manifest.findings):
        sel = labels.finding == code
        if np.unique(report_of[labels.row[sel]]).size < min_reports or name not in lexicon:
            continue
        variants = [v for v in dict.fromkeys(phrase_regex(p) for p in lexicon[name].synonyms) if v]
        weak = {pol: set(np.unique(report_of[labels.row[sel & (labels.status == st)]]).tolist())
                for pol, st in STATUS_CODE.items()}
        out.append({"finding": name, "variants": variants, "split": finding_split(name), "weak": weak})
    return out


def report_texts(idx) -> dict[str, str]:
    """Report id -> its stored sections joined (what the judge reads)."""
    return {r.id: "\n".join(t for t in r.sections.values() if t) for _, r in idx.store.iter_reports()}


# -- runs ----------------------------------------------------------------------------------------
def run_corpus(corpus: str, idx, findings: list[dict], *, modes, k: int) -> list[dict]:
    """One observation per hit: the query, the hit's kind, class, relative score, estimate, band and
    relevance (the judge's; the weak labels' too where the findings carry them)."""
    from negation_judge import judge

    texts = report_texts(idx)
    row_of = {rid: i for i, rid in enumerate(idx.store.report_ids)}
    queries = [(f, pol, tpl.format(x=f["finding"])) for f in findings for pol, tpl in POLARITIES.items()]
    vectors = dict(zip([q for _, _, q in queries], idx.encoder.encode([q for _, _, q in queries], batch_size=64)))
    verdicts: dict[tuple[str, str], str] = {}
    out: list[dict] = []
    # Calibrating, the estimates read (from the table being replaced) do not matter: only their inputs.
    with recording() as rec:
        for mode in modes:
            for negation in NEGATIONS:
                t = time.perf_counter()
                n_before = len(out)
                for i, (f, pol, text) in enumerate(queries):
                    rec.calls.clear()
                    hits = idx.search(text, k=k, mode=mode, level="report", negation=negation,
                                      include_report=False, mentions=False, query_vector=vectors[text])
                    if len(rec.calls) != len(hits):
                        raise RuntimeError(f"{text!r}: the engine read {len(rec.calls)} band estimates for "
                                           f"{len(hits)} hits: the recording no longer follows the engine")
                    for hit, (kind, cls_name, rel) in zip(hits, rec.calls):
                        key = (f["finding"], hit.report_id)
                        if key not in verdicts:
                            verdicts[key] = judge(texts[hit.report_id], f["variants"])
                        obs = {"corpus": corpus, "finding": f["finding"], "split": f["split"], "polarity": pol,
                               "mode": mode, "negation": negation, "kind": kind, "class": cls_name,
                               "relative": rel, "estimate": hit.relevance, "band": hit.band, "rank": hit.rank,
                               "verdict": verdicts[key],
                               "relevant": verdicts[key] in RELEVANT_VERDICTS[pol]}
                        if "weak" in f:
                            obs["weak_relevant"] = row_of[hit.report_id] in f["weak"][pol]
                        out.append(obs)
                    if (i + 1) % 50 == 0:
                        log(f"    {corpus} {mode} {negation}: {i + 1}/{len(queries)} queries")
                log(f"  {corpus:9s} {mode:10s} {negation:6s} {len(queries)} queries, {len(out) - n_before} hits "
                    f"[{time.perf_counter() - t:.0f} s]")
    return out


def fit(observations: list[dict], modes) -> dict:
    """The table of ``bands.json`` from the calibration modes' observations (hybrid-rrf left out)."""
    from radsift.ranking.bands import fit_table

    return fit_table((o["kind"], o["class"], o["relative"], o["relevant"])
                     for o in observations if o["mode"] in modes and o["mode"] != "hybrid-rrf")


def summarize(observations: list[dict]) -> dict:
    """Per corpus, mode and negation, per band: hits, judge-relevant, mean estimate, weak-relevant."""
    cells: dict = defaultdict(lambda: {"hits": 0, "relevant": 0, "estimate": 0.0, "weak_relevant": 0, "weak": 0})
    for o in observations:
        for band in (o["band"], "all"):
            c = cells[(o["corpus"], o["mode"], o["negation"], band)]
            c["hits"] += 1
            c["relevant"] += int(o["relevant"])
            c["estimate"] += o["estimate"]
            if "weak_relevant" in o:
                c["weak"] += 1
                c["weak_relevant"] += int(o["weak_relevant"])
    out = {}
    for key, c in cells.items():
        n = c["hits"]
        out["|".join(key)] = {"hits": n, "relevant": c["relevant"], "precision": c["relevant"] / n,
                              "mean_estimate": c["estimate"] / n,
                              "weak_precision": c["weak_relevant"] / c["weak"] if c["weak"] else None}
    return out


def reliability(observations: list[dict], edges=(0.2, 0.4, 0.6, 0.8)) -> dict:
    """Per corpus: hits grouped by estimate, mean estimate against observed share."""
    groups: dict = defaultdict(lambda: [0, 0, 0.0])
    for o in observations:
        g = groups[(o["corpus"], int(np.searchsorted(edges, o["estimate"], side="right")))]
        g[0] += 1
        g[1] += int(o["relevant"])
        g[2] += o["estimate"]
    bounds = (0.0,) + tuple(edges) + (1.0,)
    return {f"{corpus}|{bounds[b]:.1f}-{bounds[b + 1]:.1f}": {"hits": n, "observed": r / n, "mean_estimate": e / n}
            for (corpus, b), (n, r, e) in sorted(groups.items())}


def markdown(summary: dict, rel: dict, corpora, modes) -> str:
    def cell(key: str, weak: bool = False) -> str:
        c = summary.get(key)
        if c is None:
            return "–"
        if weak:
            return f"{c['weak_precision']:.3f}" if c["weak_precision"] is not None else "–"
        return f"{c['precision']:.3f} ({c['hits']}; est {c['mean_estimate']:.2f})"

    lines = ["Judge precision of each band on the test findings (hits in the band; mean estimate):\n",
             "| corpus | mode | negation | states | related | unlikely | all hits |", "|---|---|---|---|---|---|---|"]
    for corpus in corpora:
        for mode in modes:
            for negation in NEGATIONS:
                base = f"{corpus}|{mode}|{negation}"
                lines.append(f"| {corpus} | {mode} | {negation} | "
                             + " | ".join(cell(f"{base}|{b}") for b in BANDS + ("all",)) + " |")
    if "openi" in corpora:
        lines += ["\nOpen-i weak-label precision of each band (relevant = the report's stored labels state the "
                  "reading; **circular by design**: the same labeler makes the states class):\n",
                  "| mode | negation | states | related | unlikely | all hits |", "|---|---|---|---|---|---|"]
        for mode in modes:
            for negation in NEGATIONS:
                base = f"openi|{mode}|{negation}"
                lines.append(f"| {mode} | {negation} | "
                             + " | ".join(cell(f"{base}|{b}", weak=True) for b in BANDS + ("all",)) + " |")
    lines += ["\nReliability (all modes and negations pooled): hits by estimate, observed share against mean "
              "estimate:\n", "| corpus | estimate | hits | observed | mean estimate |", "|---|---|---|---|---|"]
    for key, r in rel.items():
        corpus, span = key.split("|")
        lines.append(f"| {corpus} | {span} | {r['hits']} | {r['observed']:.3f} | {r['mean_estimate']:.3f} |")
    return "\n".join(lines)


# -- main ----------------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calibrate", action="store_true",
                        help="fit on the dev findings and write the packaged table (default: measure on test)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/radsift-bench-negation"))
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    parser.add_argument("--table", type=Path, default=TABLE_PATH, help="where --calibrate writes the table")
    parser.add_argument("--openi", type=Path, default=DATA / "openi" / "reports.csv")
    parser.add_argument("--mtsamples", type=Path, default=DATA / "mtsamples" / "mtsamples.csv")
    parser.add_argument("--findings", type=Path, default=ROOT / "benchmarks" / "data" / "open_vocab_findings.tsv")
    parser.add_argument("--corpora", nargs="+", default=["mtsamples", "openi"], choices=["mtsamples", "openi"])
    parser.add_argument("--modes", nargs="+", default=None, choices=ALL_MODES,
                        help="default: hybrid dense bm25 (--calibrate), all four (measuring)")
    parser.add_argument("--k", type=int, default=50, help="hits per query (report level)")
    parser.add_argument("--min-reports", type=int, default=20, help="reports an Open-i lexicon finding must have")
    parser.add_argument("--max-findings", type=int, default=None,
                        help="at most this many findings per corpus (of the split run), in file order")
    args = parser.parse_args()
    need = ([args.mtsamples, args.findings] if "mtsamples" in args.corpora else []) + (
        [args.openi] if "openi" in args.corpora else [])
    missing = [str(p) for p in need if not p.exists()]
    if missing:
        print(f"skipped: {', '.join(missing)} absent (../shared/data is not on this machine)")
        return 0

    from radsift.models import Encoder
    from radsift.ranking.bands import BandTable

    split = "dev" if args.calibrate else "test"
    modes = args.modes or list(DEFAULT_MODES if args.calibrate else ALL_MODES)
    args.work.mkdir(parents=True, exist_ok=True)
    encoder = Encoder.load(None)
    started = time.perf_counter()
    observations: list[dict] = []
    counts = {}
    for corpus in args.corpora:
        if corpus == "mtsamples":
            idx = mtsamples_index(args.work, args.mtsamples, encoder)
            findings = open_vocab_findings(args.findings)
        else:
            idx = openi_index(args.work, args.openi, encoder)
            findings = lexicon_findings(idx, args.min_reports)
        chosen = [f for f in findings if f["split"] == split][:args.max_findings]
        counts[corpus] = {"findings": len(findings), split: len(chosen)}
        log(f"{corpus}: {len(findings)} findings, {len(chosen)} in the {split} split; "
            f"{idx.stats()['counts']}")
        observations += run_corpus(corpus, idx, chosen, modes=modes, k=args.k)
    seconds = time.perf_counter() - started
    command = "benchmarks/bench_bands.py " + " ".join(sys.argv[1:])

    if args.calibrate:
        data = fit(observations, modes)
        n = {c: sum(o["corpus"] == c for o in observations) for c in args.corpora}
        data["about"] = ("Hits (report level, top %d, modes %s, negation aware and ignore) of the dev findings "
                         "(bench_negation.finding_split) of %s, counted relevant when the report states what the "
                         "query asks for by benchmarks/negation_judge.py (\"X\": affirmed or mixed; \"no X\": "
                         "negated or mixed)." % (args.k, "/".join(m for m in modes if m != "hybrid-rrf"),
                                                 " and ".join(f"{c} ({counts[c]['dev']} findings, {n[c]} hits)"
                                                              for c in args.corpora)))
        data["command"] = ".venv/bin/python " + command
        data["date"] = dt.date.today().isoformat()
        text = json.dumps(data, indent=1)
        # One cell row per line: compact, still readable.
        text = re.sub(r"\[\s+(\d+),\s+(\d+)\s+\]", r"[\1, \2]", text)
        text = re.sub(r"\[\s+(\[\d+, \d+\](?:,\s+\[\d+, \d+\])*)\s+\]",
                      lambda m: "[" + re.sub(r",\s+", ", ", m.group(1)) + "]", text)
        text = re.sub(r'"bin_edges": \[[^\]]*\]', lambda m: re.sub(r"\[\s+", "[", re.sub(r"\s+\]", "]", re.sub(
            r",\s+", ", ", m.group()))), text)
        BandTable.from_dict(json.loads(text), source=str(args.table))  # what the engine will load
        args.table.write_text(text + "\n", encoding="utf-8")
        log(f"wrote {args.table} from {len(observations)} hits in {seconds:.0f} s")
        result = {"split": split, "counts": counts, "seconds": seconds, "command": command}
        print(json.dumps(result, indent=1))
        if args.out:
            args.out.write_text(json.dumps({**result, "table": data}, indent=1))
        return 0

    summary = summarize(observations)
    rel = reliability(observations)
    print(markdown(summary, rel, args.corpora, modes))
    found = ", ".join(f"{c}: {v[split]} test findings of {v['findings']}" for c, v in counts.items())
    print(f"\n{found}; {len(observations)} hits; {seconds:.0f} s")
    if args.out:
        args.out.write_text(json.dumps({"split": split, "counts": counts, "seconds": seconds, "command": command,
                                        "table_source": str(BandTable.packaged().source), "bands": summary,
                                        "reliability": rel}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
