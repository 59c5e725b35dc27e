"""Cold-shell ``radsift search`` latency: what a user waits for, command typed to answer printed.

Run:  .venv/bin/python benchmarks/bench_cli.py [--index DIR] [--runs 5] [--modes bm25 dense hybrid]
          [--encoders onnx torch] [--query "left pleural effusion"] [--build] [--json FILE]
          [--baseline-src DIR] [--agreement]

Each run is a fresh ``radsift search INDEX QUERY --mode MODE -k 10 --no-audit`` subprocess (a new
interpreter: every import and model load counted, as from a shell), its output thrown away. The runs
are interleaved (every mode and encoder once per round, in a rotated order) so that a change in the
machine's load hits all alike. Reported per mode and query encoder (``RADSIFT_QUERY_ENCODER``): the
median wall time (p50), the minimum, the median CPU time (user + system of the child: less moved by
other jobs than the wall time on a shared machine), and the load average around the runs. ``radsift
--help`` and ``radsift search --help`` are timed the same way. ``--baseline-src DIR`` (the ``src/`` of
another checkout, e.g. ``git archive BASE src | tar -x -C /tmp/base``) adds the same commands run with
that code (``PYTHONPATH=DIR``) to every round: before and after, under the same load.

``--agreement`` also compares the two query encoders in this process: the cosine of the ONNX (fp32)
and torch vectors of every name, synonym and description of the packaged lexicon (the queries a user
types are of these kinds), and, for the first ``--agreement-queries`` of them, whether ``hybrid``
search on the index returns the same top 10 (report level) with either vector.

The index: ``--index DIR``, or with ``--build`` an Open-i index built once in a temporary folder
(``../shared/data/openi/reports.csv``, the packaged model, ``--encoder onnx`` when it is available:
that export is the one the searches then find in the user's cache). The first dense search of a
model with no ONNX export writes one (once, tens of seconds); a warm-up run per mode and encoder
before the rounds keeps that, and the concept-link cache, out of the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OPENI = ROOT.parent / "shared" / "data" / "openi" / "reports.csv"
READER = ["--format", "csv", "--id-column", "uid", "--section", "findings=findings", "--section",
          "impression=impression"]


def radsift_command() -> list[str]:
    """The ``radsift`` of this interpreter (the console script beside it, else ``-m radsift.cli``)."""
    script = Path(sys.executable).with_name("radsift")
    return [str(script)] if script.exists() else [sys.executable, "-m", "radsift.cli"]


def timed(cmd: list[str], env: dict) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one run; a failed run stops the benchmark."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    run = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if run.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({run.returncode}): {run.stderr.strip()[-500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def build_index(out: Path) -> Path:
    if not OPENI.exists():
        raise SystemExit(f"Open-i is absent ({OPENI}): pass --index DIR")
    index = out / "openi"
    cmd = radsift_command() + ["index", "build", str(index), str(OPENI), *READER]
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
        cmd += ["--encoder", "onnx"]
    except ImportError:
        pass
    print(f"building {index} ...", file=sys.stderr)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return index


def cases(index: Path, query: str, modes: list[str], encoders: list[str],
          baseline: Path | None = None) -> list[tuple[str, str, list[str], dict]]:
    """(label, query encoder, command, environment) of every timed case."""
    base = radsift_command()
    versions = [("", None)] + ([("before: ", baseline)] if baseline is not None else [])
    out = []
    for tag, src in versions:
        out += [(tag + "--help", "-", base + ["--help"], environment("-", src)),
                (tag + "search --help", "-", base + ["search", "--help"], environment("-", src))]
        for mode in modes:
            for encoder in (encoders if mode != "bm25" and src is None else ["-"]):
                out.append((f"{tag}search --mode {mode}", encoder,
                            base + ["search", str(index), query, "--mode", mode, "-k", "10", "--no-audit"],
                            environment(encoder, src)))
    return out


def environment(encoder: str, src: Path | None = None) -> dict:
    env = dict(os.environ)
    if encoder != "-":
        env["RADSIFT_QUERY_ENCODER"] = encoder
    if src is not None:
        env["PYTHONPATH"] = str(src)
    return env


def measure(index: Path, args) -> list[dict]:
    todo = cases(index, args.query, args.modes, args.encoders, args.baseline_src)
    for _, _, cmd, env in todo:  # warm-up: an ONNX export, the concept-link cache, the page cache
        timed(cmd, env)
    walls: dict[int, list[float]] = {i: [] for i in range(len(todo))}
    cpus: dict[int, list[float]] = {i: [] for i in range(len(todo))}
    loads = [os.getloadavg()[0]]
    for r in range(args.runs):
        order = list(range(len(todo)))
        order = order[r % len(order):] + order[:r % len(order)]
        for i in order:
            wall, cpu = timed(todo[i][2], todo[i][3])
            walls[i].append(wall)
            cpus[i].append(cpu)
        loads.append(os.getloadavg()[0])
    return [{"command": label, "query_encoder": encoder, "runs": len(walls[i]),
             "wall_p50_s": round(statistics.median(walls[i]), 2), "wall_min_s": round(min(walls[i]), 2),
             "cpu_p50_s": round(statistics.median(cpus[i]), 2),
             "load_min": round(min(loads), 2), "load_max": round(max(loads), 2)}
            for i, (label, encoder, _, _) in enumerate(todo)]


def agreement(index: Path, n_search: int) -> dict:
    """Cosine of the ONNX and torch query vectors over the lexicon's phrases, and hybrid top-10 agreement."""
    import numpy as np

    from radsift.labels.lexicon import load_lexicon
    from radsift.models.encoder import Encoder
    from radsift.models.onnx_encoder import OnnxEncoder
    from radsift.models.query_encoder import find_export
    from radsift.search import Index

    idx = Index.open(index)
    model = Path(idx.manifest.model_folder(idx.path))
    found = find_export(model, idx.path)
    if found is None:
        raise SystemExit("no ONNX export of the index's model: run a dense search first (it writes one)")
    fast, slow = OnnxEncoder.load(model, cache_dir=found), Encoder.load(model)
    phrases = list(dict.fromkeys(p for c in load_lexicon(None) for p in (c.name, *c.synonyms, *c.descriptions)
                                 if "*" not in p))
    a = np.stack([fast.encode_query(p) for p in phrases])
    b = np.stack([slow.encode_query(p) for p in phrases])
    cos = np.einsum("ij,ij->i", a, b)
    same = overlap = 0
    for i, p in enumerate(phrases[:n_search]):
        top = [[h.report_id for h in idx.search(p, k=10, mode="hybrid", query_vector=v, mentions=False,
                                                include_report=False)] for v in (a[i], b[i])]
        same += top[0] == top[1]
        overlap += len(set(top[0]) & set(top[1])) / max(1, len(top[1]))
    n = min(n_search, len(phrases))
    return {"phrases": len(phrases), "cosine_min": float(cos.min()), "cosine_mean": float(cos.mean()),
            "max_abs_diff": float(np.abs(a - b).max()), "searched": n, "identical_top10": same,
            "mean_overlap_at_10": round(overlap / max(1, n), 4)}


def table(rows: list[dict]) -> str:
    head = "| command | query encoder | runs | wall p50 (s) | wall min (s) | CPU p50 (s) | load (1 min) |"
    lines = [head, "|---|---|---:|---:|---:|---:|---|"]
    for r in rows:
        tag, _, command = r["command"].rpartition(": ")
        lines.append(f"| {tag + ': ' if tag else ''}`radsift {command}` | {r['query_encoder']} | {r['runs']} | {r['wall_p50_s']:.2f} | "
                     f"{r['wall_min_s']:.2f} | {r['cpu_p50_s']:.2f} | {r['load_min']:.1f}-{r['load_max']:.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, help="An index to search (else --build).")
    parser.add_argument("--build", action="store_true", help="Build an Open-i index in a temporary folder.")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--modes", nargs="+", default=["bm25", "dense", "hybrid"])
    parser.add_argument("--encoders", nargs="+", default=["onnx", "torch"], choices=["auto", "onnx", "torch"])
    parser.add_argument("--query", default="left pleural effusion")
    parser.add_argument("--json", type=Path, help="Also write the rows here.")
    parser.add_argument("--baseline-src", type=Path, help="Also time the src/ of another checkout (before).")
    parser.add_argument("--agreement", action="store_true", help="Also compare ONNX and torch query vectors.")
    parser.add_argument("--agreement-queries", type=int, default=100)
    parser.add_argument("--runs-off", action="store_true", help="Only --agreement: no timed runs.")
    args = parser.parse_args(argv)
    if args.index is None and not args.build:
        parser.error("pass --index DIR or --build")
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        index = args.index if args.index is not None else build_index(Path(tmp))
        rows = [] if args.runs_off else measure(index, args)
        agree = agreement(index, args.agreement_queries) if args.agreement else None
    if rows:
        print(f"cold `radsift` on {index}, query {args.query!r}, {os.cpu_count()} CPUs, "
              f"{args.runs} interleaved rounds after a warm-up\n")
        print(table(rows))
    if agree is not None:
        print(f"\nONNX (fp32) against torch query vectors: {json.dumps(agree)}")
    if args.json:
        args.json.write_text(json.dumps({"runs": rows, "agreement": agree}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
