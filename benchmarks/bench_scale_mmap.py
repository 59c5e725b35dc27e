"""The engine's dense path (``scores``, 1000 candidates) on a memory-mapped HNSW graph, pass after pass.

A served index opens its graph memory-mapped (shared by every process that opens it): the first
queries fault its pages in. This times ``--passes`` passes of the same queries over a graph and
vectors that ``bench_scale.py --keep`` left in its ``--workdir``, with resident memory after each::

    .venv/bin/python benchmarks/bench_scale.py --rows 10000000 --systems i8 --keep --workdir W
    .venv/bin/python benchmarks/bench_scale_mmap.py --workdir W --rows 10000000
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from bench_scale import K, clustered, log, memory, timed
from radsift.index.backends.hnsw import HnswBackend


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workdir", default="/tmp/radsift-bench-scale")
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--dtype", default="i8")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--passes", type=int, default=3)
    args = ap.parse_args(argv)
    work = Path(args.workdir)
    x = np.load(work / f"clustered-{args.rows}.npy", mmap_mode="r")
    queries = clustered(args.queries, start=10**12)
    t0 = time.time()
    b = HnswBackend.open(work / f"graph-{args.dtype}.faiss", x)
    log(f"opened memory-mapped in {time.time() - t0:.1f}s, {memory()}")
    for p in range(args.passes):
        _, t = timed(b.scores, queries, keep=lambda v: np.argpartition(-v, K)[:K].copy())
        log(f"pass {p + 1}: scores p50 {t['p50_ms']} ms, p99 {t['p99_ms']} ms (load {t['load']}), {memory()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
