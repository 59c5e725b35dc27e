"""End to end at scale: a real index of about a million sentences, built, searched and added to.

``bench_scale.py`` measures the vector step alone on synthetic vectors; this measures what a user
meets: ``radsift index build`` (records, labels, BM25, vectors encoded by the model), the HNSW
graph, ``Index.search`` with the query encoded by the model (dense, hybrid and bm25, report level,
k=10) on the exact and the HNSW backend, and ``radsift index add`` of 1% more reports.

The corpus is the demo generator's synthetic chest X-ray reports (``radsift demo-corpus``; no
real report text). Its sentences repeat far more than real ones (150,000 reports hold ~24k
distinct sentences), which would make encoding and the graph unrealistically cheap, so each
sentence ends, with probability 0.7, in an image reference ("(series 3, image 112)") as many real
reports' do: ~95% of the sentences are then distinct. Queries: 20 written here (findings, negated
findings, descriptions), each searched 3 times after a warm-up.

Run (idle machine; the build dominates: ~1M sentences encoded by ONNX Runtime int8)::

    .venv/bin/python benchmarks/bench_scale_e2e.py --reports 150000 --out results.json

``--encoder torch`` encodes with the reference encoder instead (far slower); ``--keep`` keeps the
index in ``--workdir`` (and a later run with ``--reuse`` skips the build).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

QUERIES = [
    "pneumothorax", "no pneumothorax", "pleural effusion", "no pleural effusion", "left pleural effusion",
    "cardiomegaly", "enlarged heart", "right lower lobe consolidation", "pneumonia", "pulmonary edema",
    "fluid in the lungs", "rib fracture", "no acute cardiopulmonary abnormality", "atelectasis",
    "endotracheal tube", "a breathing tube in the windpipe", "hiatal hernia", "calcified granuloma",
    "interstitial opacities", "no focal consolidation",
]
_END = re.compile(r"\.(?=\s|$)")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} load {os.getloadavg()[0]:.2f}] {msg}", file=sys.stderr, flush=True)


def rss_mib() -> float:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def reports(n: int, seed: int = 11):
    """``n`` demo reports whose sentences mostly end in an image reference (see the module doc)."""
    from radsift.demo.generator import generate_reports

    rng = np.random.default_rng(seed)

    def refer(text: str) -> str:
        def one(m):
            if rng.random() >= 0.7:
                return "."
            return f" (series {int(rng.integers(1, 10))}, image {int(rng.integers(1, 400))})."
        return _END.sub(one, text)

    out = []
    for i, d in enumerate(generate_reports(n, seed=seed)):
        r = d.report  # a ward of 100: a metadata filter keeping 1% of the reports (issue 33, item 3)
        out.append(replace(r, sections={k: refer(v) for k, v in r.sections.items()},
                           metadata={**r.metadata, "ward": f"w{i % 100:02d}"}))
    return out


def latency(index, mode: str, reps: int = 3) -> dict:
    for q in QUERIES[:3]:
        index.search(q, k=10, mode=mode)
    ts = []
    for _ in range(reps):
        for q in QUERIES:
            t = time.perf_counter()
            index.search(q, k=10, mode=mode)
            ts.append((time.perf_counter() - t) * 1000)
    return {"p50_ms": round(float(np.percentile(ts, 50)), 2), "p99_ms": round(float(np.percentile(ts, 99)), 2),
            "searches": len(ts)}


def agreement(a, b, mode: str) -> float:
    """Share of exact top-10 reports the approximate backend also returns (mean over the queries)."""
    shares = []
    for q in QUERIES:
        x = {h.report_id for h in a.search(q, k=10, mode=mode)}
        y = {h.report_id for h in b.search(q, k=10, mode=mode)}
        shares.append(len(x & y) / max(1, len(x)))
    return round(float(np.mean(shares)), 4)


FIRST = r"""
import json, os, sys, time
t = time.perf_counter()
from radsift.search import Index
index = Index.open(sys.argv[1], backend="hnsw", threads=1)
opened = time.perf_counter() - t
t = time.perf_counter(); index.encoder, index.labeler; models = time.perf_counter() - t
t = time.perf_counter(); index.warm(); warm = time.perf_counter() - t  # what `radsift serve` does before it listens
t = time.perf_counter(); index.search(sys.argv[2], k=10); first = time.perf_counter() - t
t = time.perf_counter(); index.search(sys.argv[3], k=10); second = time.perf_counter() - t
rss = [int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS:")][0] / 1024
print(json.dumps({"import_open_s": round(opened, 2), "models_s": round(models, 2), "warm_s": round(warm, 2), "first_query_ms": round(first * 1000, 1),
                  "second_query_ms": round(second * 1000, 1), "rss_mib": round(rss)}))
"""


def engines(idx_dir: Path, threads: int) -> dict:
    """HNSW searches on both engines, in turn query by query (a change of load hits both alike), a 1% filter,
    and a fresh process's first query after opening (its models loaded and the index warmed first, as
    `radsift serve` does; then a second query)."""
    import subprocess

    from radsift.search import Index

    index = Index.open(idx_dir, backend="hnsw", threads=threads)
    cases = [(m, ()) for m in ("hybrid", "dense", "bm25")] + [("hybrid", ("ward=w07",))]
    times: dict = {}
    for engine in ("candidates", "exact"):  # warm-up, both
        os.environ["RADSIFT_ENGINE"] = engine
        for mode, where in cases:
            index.search(QUERIES[0], k=10, mode=mode, where=list(where))
    same = {}
    for rep in range(3):
        for q in QUERIES:
            for mode, where in cases:
                name = f"{mode}{' where ward=w07 (1%)' if where else ''}"
                pages = []
                for engine in ("candidates", "exact"):
                    os.environ["RADSIFT_ENGINE"] = engine
                    t = time.perf_counter()
                    hits = index.search(q, k=10, mode=mode, where=list(where))
                    times.setdefault((name, engine), []).append((time.perf_counter() - t) * 1000)
                    pages.append([(h.report_id, round(h.score, 6)) for h in hits])
                if rep == 0:
                    same.setdefault(name, []).append(pages[0] == pages[1])
    os.environ.pop("RADSIFT_ENGINE", None)
    out: dict = {"rss_mib": round(rss_mib())}
    for (name, engine), ts in times.items():
        out[f"{name} / {engine}"] = {"p50_ms": round(float(np.percentile(ts, 50)), 2),
                                      "p99_ms": round(float(np.percentile(ts, 99)), 2), "searches": len(ts)}
    out["same_page"] = {name: f"{sum(v)}/{len(v)}" for name, v in same.items()}
    del index
    firsts = []
    for q in (QUERIES[0], QUERIES[5]):  # two fresh processes; the page cache holds the files after the first
        done = subprocess.run([sys.executable, "-c", FIRST, str(idx_dir), q, QUERIES[3]], capture_output=True,
                              text=True, check=True)
        firsts.append(json.loads(done.stdout.strip().splitlines()[-1]))
    out["fresh_process"] = firsts
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reports", type=int, default=150_000)
    ap.add_argument("--add-share", type=float, default=0.01, help="share of the index added by `index add`")
    ap.add_argument("--encoder", default="onnx-int8", help="torch, onnx or onnx-int8")
    ap.add_argument("--workdir", default="/tmp/radsift-bench-e2e")
    ap.add_argument("--reuse", action="store_true", help="search the index a kept run built")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--query-threads", type=int, default=1,
                    help="torch threads of the query encoder (1: a short query gains nothing from more, and "
                         "torch's spinning threads cost ~0.5 s a query when other jobs share the cores)")
    ap.add_argument("--build-only", action="store_true", help="build the index and its graphs, time no search")
    ap.add_argument("--engines", action="store_true",
                    help="time only the HNSW searches, on the candidate engine and the exact one (RADSIFT_ENGINE), "
                         "with a 1%% metadata filter and the first query of a fresh process")
    ap.add_argument("--out", default="")
    args = ap.parse_args(argv)

    from radsift.index import add_to_index, build_index
    from radsift.index.graphs import build_graphs
    from radsift.search import Index

    work = Path(args.workdir)
    idx_dir = work / "index"
    result = {"reports": args.reports, "encoder": args.encoder, "query_threads": args.query_threads,
              "cpus": os.cpu_count(),
              "load_start": os.getloadavg()}

    def save():
        if args.out:
            Path(args.out).write_text(json.dumps(result, indent=1))

    n_add = max(1, int(round(args.reports * args.add_share)))
    corpus = reports(args.reports + n_add)
    base, extra = corpus[:args.reports], corpus[args.reports:]
    log(f"corpus: {len(base):,} + {len(extra):,} reports")
    if not (args.reuse and (idx_dir / "CURRENT").exists()):
        shutil.rmtree(idx_dir, ignore_errors=True)
        work.mkdir(parents=True, exist_ok=True)
        t0 = time.time()
        summary = build_index(idx_dir, base, encoder_kind=args.encoder, progress=True)
        result["build"] = {"seconds": round(time.time() - t0, 1), "sentences": summary.sentences,
                           "sections": summary.sections, "encoded": summary.encoded,
                           "load_after": os.getloadavg()}
        log(f"build: {result['build']}")
        save()
        t0 = time.time()
        build_graphs(idx_dir, "hnsw", say=log)
        result["graphs_s"] = round(time.time() - t0, 1)
        log(f"graphs: {result['graphs_s']} s")
        save()
    size = sum(f.stat().st_size for f in idx_dir.rglob("*") if f.is_file())
    result["index_mib"] = round(size / 2**20)
    if args.build_only:
        save()
        print(json.dumps(result, indent=1))
        return 0
    if args.engines:
        result["engines"] = engines(idx_dir, args.query_threads)
        result["load_end"] = os.getloadavg()
        save()
        print(json.dumps(result, indent=1))
        return 0

    before = rss_mib()
    exact = Index.open(idx_dir, backend="numpy", threads=args.query_threads)
    exact.search("warm up", k=10)
    result["rss_exact_mib"] = round(rss_mib() - before)
    result["search"] = {}
    for mode in ("dense", "hybrid", "bm25"):
        result["search"][f"numpy/{mode}"] = latency(exact, mode)
        log(f"numpy {mode}: {result['search'][f'numpy/{mode}']}")
    before = rss_mib()
    approx = Index.open(idx_dir, backend="hnsw", threads=args.query_threads)
    approx.search("warm up", k=10)
    result["rss_hnsw_extra_mib"] = round(rss_mib() - before)
    for mode in ("dense", "hybrid"):
        result["search"][f"hnsw/{mode}"] = latency(approx, mode) | {"top10_agreement": agreement(exact, approx, mode)}
        log(f"hnsw {mode}: {result['search'][f'hnsw/{mode}']}")
    save()
    del exact, approx

    if "build" in result:
        t0 = time.time()
        add_to_index(idx_dir, extra, encoder_kind=args.encoder, progress=True)
        result["add"] = {"reports": len(extra), "seconds": round(time.time() - t0, 1)}
        t0 = time.time()
        build_graphs(idx_dir, "hnsw", say=log)
        result["add"]["graphs_s"] = round(time.time() - t0, 1)
        result["add"]["share_of_build"] = round(result["add"]["seconds"] / result["build"]["seconds"], 4)
        log(f"add: {result['add']}")
    result["load_end"] = os.getloadavg()
    save()
    if not args.keep:
        shutil.rmtree(idx_dir, ignore_errors=True)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
