"""Encoding throughput of ``radsift index build --workers N`` (issue 33, item 4): sentences/s at 1 and N
worker processes with the packaged model, and whether the vectors equal the one-process vectors.

Run:  .venv/bin/python benchmarks/bench_workers.py [--sentences 2000] [--workers 1 2] [--encoder torch onnx]
          [--rounds 2] [--out results.json]

For each encoder (``torch``: :class:`radsift.models.Encoder`; ``onnx``: the ONNX Runtime fp32 encoder) a
seeded sample of Open-i sentences (the demo generator's when Open-i is absent) is encoded by one process
(the build's default) and by :class:`radsift.models.parallel.ProcessEncoder` with N workers, ``--rounds``
rounds, interleaved so a change of load hits every setting alike. Reported per setting: the best round's
sentences/s (steady state: the workers already started and loaded the model), the time to start N
workers and load the model in each, the largest difference to the one-process vectors, and the machine's
load (``os.getloadavg``) at every round: on a shared machine the figures are not idle figures.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_contention import sentences  # noqa: E402 - the benchmarks folder is not a package


def main(argv: list[str] | None = None) -> None:
    from radsift.models.onnx_encoder import load_build_encoder
    from radsift.models.parallel import ProcessEncoder

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sentences", type=int, default=2000)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--encoder", nargs="+", default=["torch", "onnx"])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    texts = sentences(args.sentences)
    rows = []
    for kind in args.encoder:
        enc = load_build_encoder(kind, None)
        enc.encode(texts[:32], batch_size=32)
        ref = None
        pools = {}
        for n in args.workers:
            if n > 1:
                t = time.perf_counter()
                pools[n] = ProcessEncoder(enc, n).__enter__()
                pools[n].encode(texts[:16], batch_size=16)  # starts the workers and loads the model in each
                pools[n].startup_s = time.perf_counter() - t
        best: dict[int, float] = {}
        loads: dict[int, list] = {n: [] for n in args.workers}
        diffs: dict[int, float] = {}
        for r in range(args.rounds):
            for n in (args.workers if r % 2 == 0 else list(reversed(args.workers))):
                loads[n].append(round(os.getloadavg()[0], 2))
                t = time.perf_counter()
                vecs = enc.encode(texts, batch_size=args.batch_size) if n == 1 else \
                    pools[n].encode(texts, batch_size=args.batch_size)
                dt = time.perf_counter() - t
                best[n] = min(best.get(n, dt), dt)
                if n == 1:
                    ref = vecs if ref is None else ref
                else:
                    diffs[n] = vecs
        for n in args.workers:
            diff = float(np.abs(diffs[n] - ref).max()) if n in diffs and ref is not None else 0.0
            row = {"encoder": kind, "workers": n, "sentences": len(texts),
                   "sentences_per_s": round(len(texts) / best[n], 1), "best_s": round(best[n], 2),
                   "startup_s": round(getattr(pools.get(n), "startup_s", 0.0), 1), "max_abs_diff_to_1": diff,
                   "load_1min": loads[n], "cores": os.cpu_count()}
            rows.append(row)
            print(json.dumps(row), flush=True)
        for pool in pools.values():
            pool.__exit__(None, None, None)
    print("\n| encoder | workers | sentences/s | start + load s | max |Δ| to 1 worker | load (1 min) per round |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['encoder']} | {r['workers']} | {r['sentences_per_s']} | {r['startup_s']} | "
              f"{r['max_abs_diff_to_1']:.1e} | {r['load_1min']} |")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
