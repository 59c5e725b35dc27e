"""Candidate engine against exact engine: agreement of the page and the counts, and latency, in one run.

Run:
    PYTHONPATH=src .venv/bin/python benchmarks/bench_candidates.py --index DIR [--index DIR2] [--backend hnsw]

Each index is opened with the hashing encoder (no model: the query encoding is not what is timed; the
timings are of the rest of the search). For each query (the demo generator's example queries, the
lexicon's findings as "X" and "no X", a fixed list of chest X-ray queries) and each setting (mode x
level x page), both engines run (``RADSIFT_ENGINE``); a query agrees when its page (report ids, unit
texts, ranks) and its ``total`` / ``matching`` counts are the same. Prints one row per index with the
agreement rate, the counts' agreement, the p50 of each engine and the load average.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

FIXED = ["pneumothorax", "no pneumothorax", "pleural effusion", "no pleural effusion", "cardiomegaly",
         "enlarged heart", "right lower lobe consolidation", "pulmonary edema", "calcified granuloma",
         "endotracheal tube", "rib fracture", "hiatal hernia", "no acute cardiopulmonary abnormality",
         "tortuous aorta", "interstitial opacities", "small left pleural effusion", "no right pneumothorax"]
SETTINGS = [{"mode": "hybrid", "level": "report"}, {"mode": "hybrid", "level": "sentence"},
            {"mode": "dense", "level": "report"}, {"mode": "bm25", "level": "report"},
            {"mode": "hybrid", "level": "report", "offset": 20}, {"mode": "hybrid", "level": "report", "target": "impression"}]

#: The settings timed (the first is the headline: hybrid, report level, k 10).
TIMED = [{"mode": "hybrid", "level": "report"}, {"mode": "bm25", "level": "report"}, {"mode": "dense", "level": "report"}]


def queries(index) -> list[str]:
    from radsift.demo import load_example_queries
    out = list(FIXED) + [q for _, q in load_example_queries()]
    for f in list(index.store.manifest.findings)[:40] if hasattr(index, "store") else []:
        name = f.replace("_", " ")
        out += [name, f"no {name}"]
    return list(dict.fromkeys(out))


def run(index, q: str, engine: str, **kw):
    os.environ["RADSIFT_ENGINE"] = engine
    t = time.perf_counter()
    res = index.search(q, k=10, mentions=False, include_report=False, **kw)
    ms = (time.perf_counter() - t) * 1000
    page = [(h.report_id, h.sentence.text, h.band, round(h.score, 5)) for h in res]
    return page, (res.total, res.matching), ms


def _routed():
    from radsift.search import shortlist
    return getattr(shortlist, "CALLS", None)


def compare(path: str, backend: str, settings=SETTINGS, reps: int = 1) -> dict:
    from radsift.errors import ConfigError
    from radsift.models.hashing import HashingEncoder
    from radsift.search import Index
    index = Index.open(path, encoder=HashingEncoder(Path("/tmp/cand-bench/model")), backend=backend)
    qs = queries(index)
    same = counts_same = n = full = 0
    times = {"exact": [], "candidates": []}
    by_mode = {}
    bad = []
    for kw in settings:
        for q in qs:
            try:
                a, ca, _ = run(index, q, "exact", **kw)
            except ConfigError as exc:  # a setting the index lacks (no impression section)
                bad.append((q, kw, repr(exc)[:80]))
                continue
            b, cb, _ = run(index, q, "candidates", **kw)
            n += 1
            same += [x[:2] for x in a] == [x[:2] for x in b]
            counts_same += ca == cb
            full += a == b
            if ([x[:2] for x in a] != [x[:2] for x in b] or ca != cb) and len(bad) < 8:
                bad.append((q, kw, ca, cb))
    for kw in TIMED:
        for _ in range(reps):
            for q in qs:
                for eng in ("exact", "candidates"):
                    ms = run(index, q, eng, **kw)[2]
                    by_mode.setdefault(f"{kw['mode']}/{eng}", []).append(ms)
                    if kw is TIMED[0]:
                        times[eng].append(ms)
    vector_backend = index._backend(index.store, "sentence")
    vecs = [index.encoder.encode_query(q) for q in qs]
    for _ in range(reps):
        for v in vecs:
            t = time.perf_counter()
            vector_backend.scores(v)
            by_mode.setdefault("backend.scores", []).append((time.perf_counter() - t) * 1000)
    return {"index": path, "backend": backend, "units": int(index.store.units("sentence").report_row.shape[0]) if hasattr(index, "store") else None,
            "runs": n, "top10_same": round(same / max(n, 1), 4), "counts_same": round(counts_same / max(n, 1), 4),
            "scores_bands_same": round(full / max(n, 1), 4), "routed_exact": _routed(),
            "p50_exact_ms": round(float(np.percentile(times["exact"], 50)), 2),
            "p50_cand_ms": round(float(np.percentile(times["candidates"], 50)), 2),
            "p50_ms": {k: round(float(np.percentile(v, 50)), 2) for k, v in by_mode.items()},
            "load": tuple(round(x, 2) for x in os.getloadavg()), "disagreements": bad}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", action="append", required=True)
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--reps", type=int, default=1)
    args = ap.parse_args(argv)
    for path in args.index:
        row = compare(path, args.backend, reps=args.reps)
        print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
