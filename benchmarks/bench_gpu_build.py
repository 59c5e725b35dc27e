"""Build on a GPU machine, search on CPU (issue 33, item 4): how fast ``--encoder cuda`` encodes and builds, and
whether the index it writes searches on CPU as a CPU-built one does.

Run (on a machine with a GPU and a CUDA build of torch; ``--kind torch`` runs the same stages on CPU, to try
the script):

    python benchmarks/bench_gpu_build.py --model MODEL_DIR --reports 100000 --workers 1 8 --out OUT_DIR

Stages, each skipped when ``--deadline`` seconds would be passed (the JSON says which ran):

1. **encode**: the distinct sentences of the demo generator's reports, encoded by the model on CPU (torch,
   ``--cpu-threads`` threads, a sample), on the GPU in float16 at several batch sizes, and in float32 at one;
   sentences/s, and the cosine of each GPU vector to the CPU float32 one (min / mean) on the sample.
2. **build**: ``build_index(..., encoder_kind="cuda", workers=W)`` of ``--reports`` demo reports for each
   ``--workers`` W (flat vector backend); wall seconds, reports/s and sentences/s, every model load included.
3. **serve**: the first GPU-built index opened and searched in a fresh process that sees no GPU
   (``CUDA_VISIBLE_DEVICES=``) pinned to ``--serve-cores`` cores: the first query after opening, then p50 / p99
   of the default hybrid search at report level, k = 10, the query encoded, and the process's peak RSS.
4. **agree**: ``--small`` reports built twice, on the GPU and on CPU (torch float32): the same top 10 for the
   queries in three modes, and the largest score difference; the GPU-built index is written as a
   ``.tar.gz`` into ``--out`` (to open it on another machine).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

QUERIES = ["no pneumothorax", "pneumothorax", "small left pleural effusion", "cardiomegaly", "clear lungs",
           "right lower lobe consolidation", "no acute cardiopulmonary process", "rib fracture",
           "pulmonary edema", "endotracheal tube position"]
MODES = ("bm25", "dense", "hybrid")

SERVE = r"""
import json, resource, sys, time
import numpy as np
from radsift.search import Index
path, queries, reps = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
t = time.perf_counter(); index = Index.open(path); opened = time.perf_counter() - t
t = time.perf_counter(); index.search(queries[0], k=10); first = time.perf_counter() - t
times = []
for _ in range(reps):
    for q in queries:
        t = time.perf_counter(); index.search(q, k=10); times.append(time.perf_counter() - t)
ms = np.array(times) * 1000
print(json.dumps({"open_s": round(opened, 2), "first_query_ms": round(first * 1000, 1),
                  "p50_ms": round(float(np.percentile(ms, 50)), 1), "p99_ms": round(float(np.percentile(ms, 99)), 1),
                  "queries": len(times), "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)}))
"""


def distinct_sentences(reports: list) -> list[str]:
    from radsift.index.segment_data import units_of

    sentences, _ = units_of(reports)
    return list(dict.fromkeys(s.text for s in sentences))


def top10(path: Path) -> list:
    from radsift.search import Index

    index = Index.open(path)
    out = [[(h.report_id, float(h.score)) for h in index.search(q, k=10, mode=m)] for q in QUERIES for m in MODES]
    index.live_store().close()
    return out


def stage_encode(args, reports: list, gpu: str) -> dict:
    from radsift.models.encoder import Encoder

    texts = distinct_sentences(reports)[: args.encode_sentences]
    sample = texts[: args.cpu_sample]
    cpu = Encoder.load(args.model, threads=args.cpu_threads)
    t = time.perf_counter()
    ref = cpu.encode(sample, batch_size=64)
    cpu_rate = len(sample) / (time.perf_counter() - t)
    out: dict = {"sentences": len(texts), "cpu_sample": len(sample), "cpu_threads": args.cpu_threads,
                 "cpu_float32_sentences_per_s": round(cpu_rate, 1), "gpu": []}
    enc = Encoder.load(args.model, device=gpu)
    enc.encode(texts[:2048], batch_size=512)  # warm-up: kernels chosen, memory pools grown
    for precision in ("float16", "float32"):
        if precision == "float32":
            enc.model.float()
        for bs in (args.batch_sizes if precision == "float16" else [512]):
            t = time.perf_counter()
            enc.encode(texts, batch_size=bs)
            dt = time.perf_counter() - t
            cos = np.sum(enc.encode(sample, batch_size=bs) * ref, axis=1)
            out["gpu"].append({"precision": precision, "batch_size": bs, "seconds": round(dt, 2),
                               "sentences_per_s": round(len(texts) / dt, 1),
                               "cosine_to_cpu_min": round(float(cos.min()), 6),
                               "cosine_to_cpu_mean": round(float(cos.mean()), 6)})
            print(json.dumps(out["gpu"][-1]), flush=True)
    del enc
    return out


def stage_build(args, reports: list, root: Path, kind: str, start: float) -> list:
    from radsift.index import build_index

    rows: list = []
    for w in args.workers:
        if time.perf_counter() - start > args.deadline:
            rows.append({"workers": w, "skipped": "past the deadline"})
            continue
        path = root / f"gpu-w{w}"
        t = time.perf_counter()
        summary = build_index(path, reports, model=args.model, encoder_kind=kind, workers=w, progress=False,
                              label=args.label)
        dt = time.perf_counter() - t
        rows.append({"workers": w, "reports": len(reports), "sentences": summary.sentences,
                     "segments": summary.segments, "seconds": round(dt, 1),
                     "reports_per_s": round(len(reports) / dt, 1), "sentences_per_s": round(summary.sentences / dt, 1),
                     "index_mb": round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20, 1)})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def stage_serve(args, path: Path) -> dict:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    cmd = [sys.executable, "-c", SERVE, str(path), json.dumps(QUERIES), str(args.serve_reps)]
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", args.serve_cores, *cmd]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"error": done.stderr[-2000:]}
    row = json.loads(done.stdout.strip().splitlines()[-1])
    row["cores"] = args.serve_cores
    return row


def stage_agree(args, reports: list, root: Path, kind: str, out_dir: Path) -> dict:
    from radsift.index import build_index

    gpu_path, cpu_path = root / "small-gpu", root / "small-cpu"
    build_index(gpu_path, reports, model=args.model, encoder_kind=kind, progress=False, label=args.label)
    build_index(cpu_path, reports, model=args.model, encoder_kind="torch", progress=False, label=args.label)
    a, b = top10(gpu_path), top10(cpu_path)
    same_ids = sum([i for i, _ in x] == [i for i, _ in y] for x, y in zip(a, b))
    diffs = [abs(s - t) for x, y in zip(a, b) for (_, s), (_, t) in zip(x, y)]
    with tarfile.open(out_dir / "gpu_index_small.tar.gz", "w:gz") as tar:
        tar.add(gpu_path, arcname="gpu-index-small")
    return {"reports": len(reports), "lists": len(a), "same_top10_ids": same_ids,
            "max_score_difference": round(max(diffs, default=0.0), 6), "tar": "gpu_index_small.tar.gz"}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="sentence-transformers model folder")
    ap.add_argument("--kind", default="cuda", choices=["cuda", "torch"], help="torch: try the stages on CPU")
    ap.add_argument("--reports", type=int, default=100_000)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--encode-sentences", type=int, default=200_000)
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[128, 512, 1024])
    ap.add_argument("--cpu-sample", type=int, default=2000)
    ap.add_argument("--cpu-threads", type=int, default=2)
    ap.add_argument("--serve-cores", default="0,1")
    ap.add_argument("--serve-reps", type=int, default=3)
    ap.add_argument("--small", type=int, default=1000)
    ap.add_argument("--deadline", type=float, default=480.0, help="skip stages that would start after this")
    ap.add_argument("--stages", nargs="+", default=["encode", "build", "serve", "agree"])
    ap.add_argument("--image-refs", action="store_true",
                    help="sentences ending in image references (bench_scale_e2e.py): ~95%% distinct, as real reports")
    ap.add_argument("--no-label", dest="label", action="store_false",
                    help="build without labels (where spaCy/medspaCy is not installed; labelling is CPU work)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    start = time.perf_counter()
    args.out.mkdir(parents=True, exist_ok=True)
    import torch

    from radsift.demo import generate_reports

    gpu = "cuda" if args.kind == "cuda" else "cpu"
    result: dict = {"torch": torch.__version__, "gpu_name": torch.cuda.get_device_name(0) if gpu == "cuda" else None,
                    "cpu_count": os.cpu_count(), "model": str(args.model), "kind": args.kind, "labels": args.label,
                    "stages": {}}
    if args.image_refs:  # bench_scale_e2e's reports: ~95% of sentences distinct, as in real archives
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_scale_e2e import reports as referenced_reports

        reports = referenced_reports(max(args.reports, args.small))
    else:
        reports = [d.report for d in generate_reports(max(args.reports, args.small), seed=0)]
    result["generate_s"] = round(time.perf_counter() - start, 1)
    root = Path(tempfile.mkdtemp(prefix="bench-gpu-build-"))

    def save() -> None:
        result["elapsed_s"] = round(time.perf_counter() - start, 1)
        result["parent_peak_rss_gb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)
        (args.out / "bench_gpu_build.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")

    steps = {"encode": lambda: stage_encode(args, reports[: args.reports], gpu),
             "build": lambda: stage_build(args, reports[: args.reports], root, args.kind, start),
             "agree": lambda: stage_agree(args, reports[: args.small], root, args.kind, args.out),
             "serve": lambda: stage_serve(args, root / f"gpu-w{args.workers[0]}")}
    try:
        for name in args.stages:
            if time.perf_counter() - start > args.deadline:
                result["stages"][name] = "skipped: past the deadline"
                continue
            if name == "serve" and not (root / f"gpu-w{args.workers[0]}").exists():
                result["stages"][name] = "skipped: no build"
                continue
            t = time.perf_counter()
            result["stages"][name] = steps[name]()
            print(f"[{name}] {time.perf_counter() - t:.1f} s", flush=True)
            save()
    finally:
        save()
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
