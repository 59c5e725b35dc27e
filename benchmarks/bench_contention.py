"""Encoding under contention (issue 33, item 6): how much slower the build's encoder gets when other
CPU-bound jobs share the cores, against the fair-share time.

Run:  .venv/bin/python benchmarks/bench_contention.py [--sentences 600] [--competitors 0 1 3]
          [--configs torch-default torch-passive torch-adaptive onnx] [--out results.json]

Each configuration runs in a fresh process (thread settings and OpenMP wait policies are read when
torch loads), encodes the same seeded sample of Open-i sentences (the demo generator's when Open-i
is absent) twice and keeps the faster pass, while ``k`` competing ``python -c "while True: pass"``
processes run. Configurations:

- ``torch-legacy``: torch's defaults as they were before issue 33 (all cores, fixed; OpenMP's own
  spinning wait policy: ``OMP_WAIT_POLICY`` unset and radsift's own setting switched off);
- ``torch-default``: the build's torch encoder as radsift now loads it (passive OpenMP waits and the
  thread count chosen from the machine's load, :func:`radsift.models.encoder.encode_threads`, chunk by chunk);
- ``torch-1thread``: one torch thread (passive waits);
- ``onnx``: the ONNX Runtime fp32 encoder as the build loads it (no spinning);
- ``onnx-1thread``: the same with one intra-op thread (its idle time is the ONNX family's one-thread
  baseline; without it, ``onnx``'s own idle time on every core stands in, a stricter bar).

The fair-share time with ``k`` competitors on ``C`` cores is the configuration's idle single-thread
time times ``(k + 1) / C`` (a process's fair share is ``C / (k + 1)`` cores), and never less than its
own idle time. The machine's load (``os.getloadavg``) is printed beside every figure: on a machine
other people use, "idle" means "with no competitor of ours".
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OPENI = ROOT.parent / "shared" / "data" / "openi" / "reports.csv"

_CHILD = r"""
import json, os, sys, time
cfg, n = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, {src!r}); sys.path.insert(0, {bench!r})
if cfg == "torch-legacy":
    os.environ["RADSIFT_OMP_DEFAULTS"] = "0"
import radsift.models.encoder as E, radsift.models.onnx_encoder as O
from radsift.models.onnx_encoder import load_build_encoder
from bench_contention import sentences
chosen = []
def _record(t, _orig=E.encode_threads):
    n = _orig(t); chosen.append(n); return n
E.encode_threads = O.encode_threads = _record
texts = sentences(n)
threads = {{"torch-1thread": 1, "onnx-1thread": 1, "torch-legacy": os.cpu_count()}}.get(cfg)  # legacy: torch's default, all cores
kind = "onnx" if cfg.startswith("onnx") else "torch"
enc = load_build_encoder(kind, None, threads=threads)
enc.encode(texts[:32], batch_size=32)
best = None
for _ in range(2):
    t = time.perf_counter(); enc.encode(texts, batch_size=64); dt = time.perf_counter() - t
    best = dt if best is None else min(best, dt)
import torch
print(json.dumps({{"seconds": best, "threads_chosen": {{str(n): chosen.count(n) for n in sorted(set(chosen))}},
                  "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY")}}))
"""


def sentences(n: int) -> list[str]:
    """A seeded sample of ``n`` sentences: Open-i's when present, else the demo generator's."""
    import random

    from radsift.text import report_sentences  # noqa: F401 - the demo branch

    if OPENI.exists():
        import csv

        from radsift.text.sentences import split_sentences

        out = []
        with OPENI.open(encoding="utf-8", newline="") as fh:
            for row in csv.DictReader(fh):
                for column in ("findings", "impression"):
                    text = row.get(column) or ""
                    out.extend(text[a:b] for a, b in split_sentences(text))
        random.Random(0).shuffle(out)
        return out[:n]
    from radsift.demo import generate_reports

    reports = [d.report for d in generate_reports(2000, seed=0)]
    out = [s.text for r in reports for s in report_sentences(r)]
    random.Random(0).shuffle(out)
    return out[:n]


def run_one(cfg: str, n: int, competitors: int) -> dict:
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(competitors)]
    try:
        time.sleep(1.0 if competitors else 0.0)
        load_before = os.getloadavg()[0]
        code = _CHILD.format(src=str(ROOT / "src"), bench=str(ROOT / "benchmarks"))
        env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS")}
        out = subprocess.run([sys.executable, "-c", code, cfg, str(n)], capture_output=True, text=True, env=env,
                             timeout=1800)
        if out.returncode != 0:
            raise SystemExit(f"{cfg}: {out.stderr.strip().splitlines()[-1:]}")
        row = json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    row.update(config=cfg, competitors=competitors, sentences=n, sentences_per_s=round(n / row["seconds"], 1),
               load_1min_before=round(load_before, 2), load_1min_after=round(os.getloadavg()[0], 2))
    return row


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sentences", type=int, default=600)
    ap.add_argument("--competitors", type=int, nargs="+", default=[0, 1, 3])
    ap.add_argument("--configs", nargs="+", default=["torch-legacy", "torch-default", "torch-1thread", "onnx", "onnx-1thread"])
    ap.add_argument("--repeats", type=int, default=1, help="runs of every config at each k, interleaved "
                    "(the table shows each one; the summary the median)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    cores = os.cpu_count() or 1
    rows = []
    for k in args.competitors:
        for rep in range(args.repeats):
            for cfg in (args.configs if rep % 2 == 0 else list(reversed(args.configs))):
                row = run_one(cfg, args.sentences, k)
                rows.append(row)
                print(json.dumps(row), flush=True)
    # Each family's fair share starts from its own idle one-thread time (torch-1thread, onnx-1thread).
    idle: dict[str, float] = {}
    for r in rows:  # the fastest idle run: a run that found the load average still high may pick fewer threads
        if r["competitors"] == 0:
            idle[r["config"]] = min(idle.get(r["config"], r["seconds"]), r["seconds"])
    single = {c: s for c, s in idle.items() if c.endswith("-1thread")}
    print(f"\n{cores} cores; load averages are the machine's 1-minute load (other users' jobs included)\n")
    print("| config | competitors | s | sentences/s | fair-share s | / fair share | load before | load after |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        family = "onnx" if r["config"].startswith("onnx") else "torch"
        base1 = single.get(f"{family}-1thread", idle.get(r["config"]))
        fair = None
        if base1 is not None and r["config"] in idle:
            fair = max(idle[r["config"]], base1 * (r["competitors"] + 1) / cores)
        ratio = f"{r['seconds'] / fair:.2f}" if fair else "-"
        print(f"| {r['config']} | {r['competitors']} | {r['seconds']:.1f} | {r['sentences_per_s']} | "
              f"{fair and round(fair, 1)} | {ratio} | {r['load_1min_before']} | {r['load_1min_after']} |")
    print("\n| config | competitors | median sentences/s | runs |")
    print("|---|---|---|---|")
    for k in args.competitors:
        for cfg in args.configs:
            rates = sorted(r["sentences_per_s"] for r in rows if r["config"] == cfg and r["competitors"] == k)
            print(f"| {cfg} | {k} | {rates[len(rates) // 2]} | {rates} |")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
