"""Load benchmark of ``radsift serve``: requests/s and latency at 1, 8 and 32 concurrent clients.

Run:  .venv/bin/python benchmarks/bench_serve.py [--openi ../shared/data/openi/reports.csv]
                                                [--workdir runs/bench-serve] [--index DIR]
                                                [--requests 300] [--seconds 60] [--clients 1,8,32]
                                                [--workers 1,2] [--plain]

What it does:
  1. builds an index of the Open-i reports (id column ``uid``, sections findings/impression) with the
     default model, cached in ``--workdir`` so reruns skip the build (or uses ``--index DIR``);
  2. starts ``radsift serve INDEX --host 127.0.0.1 --port P --workers W`` as a separate process, for each
     ``--workers`` value, with an API token and an audit log on (as a hospital runs it; ``--plain``: neither);
  3. from this process (asyncio + httpx) sends GET /api/search requests at each concurrency level:
     a fixed mix of queries, modes (dense/bm25/hybrid) and targets (findings/impression/report),
     at most ``--requests`` per level and at most ``--seconds`` per level;
  4. prints a markdown table: requests, errors, requests/s, p50/p95/p99 latency.
The server process is stopped at the end. Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OPENI = ROOT.parent / "shared" / "data" / "openi" / "reports.csv"
DEFAULT_WORKDIR = ROOT / "runs" / "bench-serve"
QUERIES = [
    "pneumothorax", "no pneumothorax", "pleural effusion", "no pleural effusion", "cardiomegaly",
    "enlarged heart", "right lower lobe consolidation", "pulmonary edema", "calcified granuloma",
    "endotracheal tube", "degenerative changes of the thoracic spine", "hyperinflated lungs emphysema",
    "pacemaker leads", "sternotomy wires", "rib fracture", "hiatal hernia", "atelectasis at the lung bases",
    "no acute cardiopulmonary abnormality", "tortuous aorta", "interstitial opacities",
]
MODES = ["hybrid", "dense", "bm25"]
TARGETS = ["findings", "impression", "report"]


def build_or_reuse(openi: Path, workdir: Path) -> Path:
    """The cached Open-i index in ``workdir`` (built with the default model on first use)."""
    from radsift.corpus import ReaderOptions, ReadStats, read_corpus
    from radsift.index import build_index

    index_dir = workdir / "openi-index"
    if (index_dir / "CURRENT").exists():
        print(f"reusing {index_dir}", file=sys.stderr)
        return index_dir
    if not openi.exists():
        sys.exit(f"{openi} not found (../shared/data is absent): pass --openi or --index")
    options = ReaderOptions(format="csv", id_column="uid", sections={"findings": "findings", "impression": "impression"})
    t = time.perf_counter()
    summary = build_index(index_dir, read_corpus([openi], options, ReadStats()), progress=True)
    print(f"built {summary.describe()} in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    return index_dir


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


TOKEN = "bench-serve-token-0123456789"


def start_server(index_dir: Path, port: int, log_path: Path, workers: int = 1,
                 audit: Path | None = None) -> subprocess.Popen:
    log = open(log_path, "w")
    cmd = [sys.executable, "-m", "radsift.cli", "serve", str(index_dir), "--host", "127.0.0.1", "--port", str(port),
           "--workers", str(workers)] + (["--audit-log", str(audit)] if audit else [])
    print("server: " + " ".join(cmd), file=sys.stderr)
    env = dict(os.environ, RADSIFT_NO_PROGRESS="1")
    env.pop("RADSIFT_TOKEN", None)
    if audit:
        env["RADSIFT_TOKEN"] = TOKEN
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)


def wait_ready(proc: subprocess.Popen, base: str, log_path: Path, timeout: float = 300) -> dict:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"the server exited with {proc.returncode}:\n{log_path.read_text()}")
        try:
            res = httpx.get(base + "/api/health", timeout=2, headers=HEADERS)
            if res.status_code == 200:
                return res.json()
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    sys.exit(f"the server did not answer within {timeout:.0f} s:\n{log_path.read_text()}")


HEADERS: dict[str, str] = {}


def request_plan(n: int) -> list[dict]:
    """A fixed, varied sequence of search parameters (every query meets every mode and target)."""
    combos = list(itertools.product(QUERIES, MODES, TARGETS))
    rng = np.random.default_rng(0)
    order = rng.permutation(len(combos))
    return [{"q": combos[i][0], "mode": combos[i][1], "target": combos[i][2], "k": 10}
            for i in itertools.islice(itertools.cycle(order), n)]


async def load_level(base: str, clients: int, plan: list[dict], seconds: float) -> dict:
    import httpx

    latencies: list[float] = []
    errors = 0
    next_i = 0
    deadline = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=120, headers=HEADERS) as client:
        async def worker() -> None:
            nonlocal next_i, errors
            while next_i < len(plan) and time.perf_counter() < deadline:
                params = plan[next_i]
                next_i += 1
                t = time.perf_counter()
                try:
                    res = await client.get("/api/search", params=params)
                    ok = res.status_code == 200 and "hits" in res.json()
                except httpx.HTTPError:
                    ok = False
                latencies.append((time.perf_counter() - t) * 1000)
                errors += 0 if ok else 1

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        wall = time.perf_counter() - start
    lat = np.asarray(latencies)
    return {"clients": clients, "requests": len(lat), "errors": errors, "rps": len(lat) / wall,
            "p50": np.percentile(lat, 50), "p95": np.percentile(lat, 95), "p99": np.percentile(lat, 99),
            "wall": wall}


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--openi", type=Path, default=DEFAULT_OPENI, help="Open-i reports.csv")
    ap.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR, help="cache folder for the index and logs")
    ap.add_argument("--index", type=Path, default=None, help="serve this index instead of building Open-i's")
    ap.add_argument("--requests", type=int, default=300, help="requests per concurrency level (at most)")
    ap.add_argument("--seconds", type=float, default=60, help="time per concurrency level (at most)")
    ap.add_argument("--clients", default="1,8,32", help="concurrency levels, comma-separated")
    ap.add_argument("--workers", default="1,2", help="server worker processes to compare, comma-separated")
    ap.add_argument("--plain", action="store_true", help="no token and no audit log")
    args = ap.parse_args(argv)
    levels = [int(c) for c in args.clients.split(",")]
    if not args.plain:
        HEADERS["Authorization"] = f"Bearer {TOKEN}"

    args.workdir.mkdir(parents=True, exist_ok=True)
    index_dir = args.index or build_or_reuse(args.openi, args.workdir)
    rows, health = [], None
    for workers in (int(w) for w in args.workers.split(",")):
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        log_path = args.workdir / f"server-{workers}.log"
        audit = None if args.plain else args.workdir / f"audit-{workers}.jsonl"
        proc = start_server(index_dir, port, log_path, workers, audit)
        try:
            t = time.perf_counter()
            health = wait_ready(proc, base, log_path)
            print(f"server ({workers} workers) ready in {time.perf_counter() - t:.1f} s", file=sys.stderr)
            warm = request_plan(3 * len(MODES) * len(TARGETS) * workers)
            asyncio.run(load_level(base, workers, warm, 60))  # load BM25 and page in vectors in every worker
            for clients in levels:
                r = asyncio.run(load_level(base, clients, request_plan(args.requests), args.seconds))
                print(f"  {workers} workers, {clients} clients: {r['requests']} requests in {r['wall']:.1f} s",
                      file=sys.stderr)
                rows.append({**r, "workers": workers})
        finally:
            stop_server(proc)

    idx = health["index"]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\nradsift serve load benchmark: {idx['counts']['reports']:,} reports, "
          f"{idx['counts']['sentences']:,} sentences, model {idx['model']}; server and client on "
          f"127.0.0.1, {os.cpu_count()} CPUs, load {load:.1f} after the run; GET /api/search k=10, mixed queries x "
          f"modes x targets; {'no token, no audit log' if args.plain else 'API token and audit log on'}\n")
    print("| workers | concurrent clients | requests | errors | requests/s | p50 ms | p95 ms | p99 ms |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['workers']} | {r['clients']} | {r['requests']} | {r['errors']} | {r['rps']:.1f} | {r['p50']:.1f} | "
              f"{r['p95']:.1f} | {r['p99']:.1f} |")
    return 1 if any(r["errors"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
