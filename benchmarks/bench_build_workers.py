"""A whole build at ``--workers 1`` and ``--workers N`` (issue 33, item 4): sentences/s of ``build_index`` end to
end (model loads, sentence splitting, encoding, labelling, writing, commit) and whether the indexes search alike.

Run:  .venv/bin/python benchmarks/bench_build_workers.py [--reports 800] [--workers 1 2] [--encoder onnx]
          [--rounds 2] [--out results.json]

The first ``--reports`` Open-i reports (the demo generator's when Open-i is absent) are built into a fresh
folder per round and setting, rounds interleaved so a change of load hits every setting alike. Reported per
setting: the best round's sentences/s (sentences in the index over the build's wall time, every worker's
model load included), the segments written, the machine's 1-minute load (``os.getloadavg``) before every
round (on a shared machine these are not idle figures), and whether every setting's index gives the
``--workers 1`` index's top 10 (ids and scores to 4 places) for a few queries in three modes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

OPENI = Path(__file__).resolve().parents[2] / "shared" / "data" / "openi" / "reports.csv"
QUERIES = ["no pneumothorax", "small left pleural effusion", "cardiomegaly", "clear lungs", "rib fracture"]


def corpus(n: int) -> tuple[list, str]:
    """The first ``n`` Open-i reports, or the demo generator's."""
    if OPENI.exists():
        from radsift.corpus import ReaderOptions, read_corpus

        options = ReaderOptions(format="csv", id_column="uid",
                                sections={"findings": "findings", "impression": "impression"})
        reports = []
        for r in read_corpus([OPENI], options):
            reports.append(r)
            if len(reports) == n:
                break
        return reports, "Open-i"
    from radsift.demo import generate_reports

    return [d.report for d in generate_reports(n, seed=0)], "demo"


def top10(path: Path) -> list:
    from radsift.search import Index

    index = Index.open(path)
    out = [[(h.report_id, round(h.score, 4)) for h in index.search(q, k=10, mode=m)]
           for q in QUERIES for m in ("bm25", "dense", "hybrid")]
    index.live_store().close()
    return out


def main(argv: list[str] | None = None) -> None:
    from radsift.index import build_index

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reports", type=int, default=800)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--encoder", default="onnx")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    reports, source = corpus(args.reports)
    root = Path(tempfile.mkdtemp(prefix="bench-build-workers-"))
    best: dict[int, float] = {}
    loads: dict[int, list] = {n: [] for n in args.workers}
    info: dict[int, dict] = {}
    try:
        for r in range(args.rounds):
            for n in (args.workers if r % 2 == 0 else list(reversed(args.workers))):
                path = root / f"w{n}-r{r}"
                loads[n].append(round(os.getloadavg()[0], 2))
                t = time.perf_counter()
                summary = build_index(path, reports, encoder_kind=args.encoder, progress=False, workers=n)
                dt = time.perf_counter() - t
                best[n] = min(best.get(n, dt), dt)
                info[n] = {"sentences": summary.sentences, "segments": summary.segments, "hits": top10(path)}
                print(json.dumps({"workers": n, "round": r, "seconds": round(dt, 1), "load_1min": loads[n][-1]}),
                      flush=True)
                if r < args.rounds - 1:
                    shutil.rmtree(path)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    rows = []
    base = info[args.workers[0]]["hits"]
    for n in args.workers:
        rows.append({"source": source, "reports": len(reports), "encoder": args.encoder, "workers": n,
                     "sentences": info[n]["sentences"], "segments": info[n]["segments"],
                     "best_s": round(best[n], 1), "sentences_per_s": round(info[n]["sentences"] / best[n], 1),
                     "same_top10_as_first": info[n]["hits"] == base, "load_1min": loads[n], "cores": os.cpu_count()})
        print(json.dumps(rows[-1]), flush=True)
    print("\n| workers | segments | build s (best) | sentences/s | same top 10 | load (1 min) per round |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['workers']} | {row['segments']} | {row['best_s']} | {row['sentences_per_s']} | "
              f"{row['same_top10_as_first']} | {row['load_1min']} |")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
