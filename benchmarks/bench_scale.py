"""Exact numpy vs the HNSW backend (FAISS, float32 and int8 graphs) at scale.

Measures, for each system on the same vectors: build time, resident memory (RSS delta of the
build, and of the saved graph opened memory-mapped after the queries), latency per query with
the query vector given (p50/p99 over single queries: ``top(q, 10)``; the engine's path,
``scores(q)`` with 1000 exact candidates; FAISS with 1 OpenMP thread and with its default), recall@10
against exact search, and masked ``top`` at several selectivities (latency, recall, how often the
filtered graph search had to widen or fell back to exact search over the masked rows). Milvus via
milvus-lite (``--systems milvus``) is measured by ``bench_scale_milvus.py`` the same way, its filters
pushed down as Milvus expressions.

Data sets:

- ``synthetic``: ``--rows`` unit vectors, dim 384, from a mixture of 2000 Gaussian clusters
  around a shared direction with a decaying noise spectrum (:func:`clustered`). Uniformly random
  vectors are unrealistically hard for HNSW (no neighbourhood structure); this mixture was
  tuned to look like real MiniLM sentence vectors (Open-i: mean pairwise cosine 0.31 real / 0.33
  synthetic, norm of the mean vector 0.56 / 0.57, variance in the top 32 principal directions
  0.76 / 0.73), but it has no exact duplicates (Open-i: 8.4k distinct of 22k sentences). Queries are
  other draws of the same mixture. Vectors are written to ``--workdir`` and memory-mapped, as an
  index generation's ``sentence_vectors.npy`` is.
- ``openi``: the live generation's ``sentence_vectors.npy`` of ``--openi`` (``CURRENT`` names it);
  queries are 500 of its own rows (so their top 10 hold exact duplicates: recall is tie-aware).

Recall@10 is tie-aware: a returned row counts when its exact cosine is at least the exact 10th best.

Run (about 10 minutes at 1M rows on 2 cores; ``--rows 10000000 --systems i8`` needs ~15.4 GB of disk
for the vectors, ~6 GB of memory for the int8 graph and far longer to build)::

    .venv/bin/python benchmarks/bench_scale.py --rows 1000000 --out results.json

Progress goes to stderr; ``--out`` gets every figure as JSON; a table is printed at the end.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from radsift.index.backends.hnsw import HnswBackend, faiss_module
from radsift.index.backends.numpy_backend import NumpyBackend

K = 10
DIM = 384
OPENI = "/tmp/radsift-bench-negation/openi"
SELECTIVITY = (0.5, 0.1, 0.01, 0.001)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} load {os.getloadavg()[0]:.2f}] {msg}", file=sys.stderr, flush=True)


def memory() -> dict:
    """Resident memory of this process in MiB (total, anonymous, file-backed)."""
    out = {}
    for line in open("/proc/self/status"):
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile"):
            out[key] = int(value.split()[0]) / 1024
    return out


def delta(after: dict, before: dict) -> dict:
    return {k: round(after[k] - before[k]) for k in after}


def clustered(n: int, dim: int = DIM, centers: int = 2000, seed: int = 1, start: int = 0, out=None,
              chunk: int = 200_000) -> np.ndarray:
    """Unit vectors: ``normalize(0.8 mu + c_j + noise)``, ``c_j`` one of ``centers`` cluster
    directions, noise with variance decaying as ``i ** -1.2`` over a random basis (norm ~0.6).
    Rows ``start .. start + n`` of one fixed stream: other ``start`` values give other draws (queries)."""
    rng = np.random.default_rng(seed)
    spec = (np.arange(1, dim + 1) ** -0.6).astype(np.float32)
    rot = np.linalg.qr(rng.standard_normal((dim, dim)))[0].astype(np.float32)
    mu = rng.standard_normal(dim).astype(np.float32)
    mu /= np.linalg.norm(mu)
    c = (rng.standard_normal((centers, dim)).astype(np.float32) * spec) @ rot
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    scale = spec * (0.6 / np.linalg.norm(spec))
    out = np.empty((n, dim), np.float32) if out is None else out
    for s in range(0, n, chunk):
        e = min(n, s + chunk)
        r = np.random.default_rng([seed, start + s])
        x = 0.8 * mu + c[r.integers(0, centers, e - s)] + (r.standard_normal((e - s, dim), dtype=np.float32) * scale) @ rot
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        out[s:e] = x
        if n > chunk:
            log(f"generated {e:,}/{n:,} rows")
    return out


def exact_truth(x: np.ndarray, queries: np.ndarray, chunk: int = 250_000) -> np.ndarray:
    """The exact k-th best cosine of every query (one pass over ``x``, chunked)."""
    return masked_truths(x, queries, {"all": None}, chunk)["all"]


def masked_truths(x: np.ndarray, queries: np.ndarray, by_key: dict, chunk: int = 250_000) -> dict:
    """Per mask of ``by_key`` (None: every row), the exact k-th best cosine of every query over the
    masked rows, all in one pass over ``x`` (at 10M rows, gathering the masked rows once per query
    read gigabytes each)."""
    best = {key: np.full((len(queries), K), -np.inf, dtype=np.float32) for key in by_key}
    for s in range(0, x.shape[0], chunk):
        sims = queries @ np.asarray(x[s:s + chunk], dtype=np.float32).T
        for key, mask in by_key.items():
            sub = sims if mask is None else sims[:, mask[s:s + chunk]]
            if sub.shape[1]:
                top = np.partition(sub, -min(K, sub.shape[1]), axis=1)[:, -min(K, sub.shape[1]):]
                best[key] = np.partition(np.concatenate([best[key], top], axis=1), -K, axis=1)[:, -K:]
        if x.shape[0] > 4 * chunk:
            log(f"exact truth {min(x.shape[0], s + chunk):,}/{x.shape[0]:,}")
    out = {}
    for key, mask in by_key.items():
        k = min(K, x.shape[0] if mask is None else int(mask.sum()))
        out[key] = np.sort(best[key], axis=1)[:, -k] if k else np.full(len(queries), np.inf)
    return out


def recall(x: np.ndarray, q: np.ndarray, rows: np.ndarray, kth: float, k: int = K) -> float:
    rows = np.asarray(rows)[:k]
    return float(np.count_nonzero(np.asarray(x[np.sort(rows)], dtype=np.float32) @ q >= kth - 1e-5)) / k


def mean_recall(x: np.ndarray, queries, found, kths, k: int = K) -> float:
    """:func:`recall` averaged over the queries (``found``: each query's rows; ``kths``: its k-th best cosine)."""
    return round(float(np.mean([recall(x, q, rows, kth, k) for q, rows, kth in zip(queries, found, kths)])), 4)


def timed(fn, queries, keep=None) -> tuple[list, dict]:
    """Latency of ``fn`` per query; ``keep`` reduces each result outside the timing (full score arrays
    kept for 500 queries would hold gigabytes and slow every later allocation)."""
    out, lat = [], []
    fn(queries[0])  # warm-up
    for q in queries:
        t = time.perf_counter()
        r = fn(q)
        lat.append(time.perf_counter() - t)
        out.append(keep(r) if keep is not None else r)
        del r
    lat_ms = 1e3 * np.asarray(lat)
    return out, {"p50_ms": round(float(np.percentile(lat_ms, 50)), 3),
                 "p99_ms": round(float(np.percentile(lat_ms, 99)), 3), "load": round(os.getloadavg()[0], 2)}


def _masked_top(scores: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The best ``K`` masked rows of a full score array (a copy: see ``timed``)."""
    rows = np.flatnonzero(mask)
    return rows[np.argsort(-scores[rows], kind="stable")[:K]].copy()


def masks(n: int, seed: int = 7) -> dict:
    rng = np.random.default_rng(seed)
    return {s: rng.random(n) < s for s in SELECTIVITY}


def run_numpy(x, queries, kth, lat_queries, threads) -> dict:
    b = NumpyBackend(x)
    res = {"build_s": 0.0}
    before = memory()
    rows, t = timed(lambda q: b.top(q, K)[0], lat_queries)
    res["top10"] = t | {"recall10": mean_recall(x, lat_queries, rows, kth)}
    res["rss_mib"] = delta(memory(), before)
    try:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1):
            res["top10_1thread"] = timed(lambda q: b.top(q, K)[0], lat_queries[:50])[1]
    except ImportError:
        res["top10_1thread"] = "threadpoolctl not installed"
    return res


def run_hnsw(x, queries, kth, lat_queries, dtype, args, workdir: Path) -> dict:
    faiss = faiss_module()
    gc.collect()
    before = memory()
    t0 = time.time()
    step = max(1, x.shape[0] // 10)
    saved = workdir / f"graph-{dtype}.faiss"
    params = {"connectivity": args.connectivity, "expansion_add": args.expansion_add,
              "expansion_search": args.expansion_search, "candidates": args.candidates}
    if args.reuse_graph and saved.exists():  # a graph an earlier run built and kept (--keep): read into memory
        b = HnswBackend.open(saved, x, mmap=False, candidates=args.candidates, expansion_search=args.expansion_search)
        res = {"build_s": None, "reused_graph": str(saved), "read_s": round(time.time() - t0, 1),
               "rss_build_mib": delta(memory(), before), "params": params}
        log(f"hnsw {dtype}: read the kept graph {saved} in {res['read_s']}s, {res['rss_build_mib']}")
        path = saved
    else:
        b = HnswBackend.build(x, dtype=dtype, connectivity=args.connectivity, expansion_add=args.expansion_add,
                              expansion_search=args.expansion_search, candidates=args.candidates,
                              progress=lambda done, total: (done % step < 65_536 or done == total)
                              and log(f"hnsw {dtype} added {done:,}/{total:,} ({time.time() - t0:.0f}s)"))
        res = {"build_s": round(time.time() - t0, 1), "rss_build_mib": delta(memory(), before), "params": params}
        log(f"hnsw {dtype}: built in {res['build_s']}s, {res['rss_build_mib']}")
        path = b.save(saved)
    res["file_mib"] = round(path.stat().st_size / 2**20)
    default_threads = faiss.omp_get_max_threads()
    for label, threads in (("1thread", 1), ("default", default_threads)):
        faiss.omp_set_num_threads(threads)
        for ef in args.efs:
            # (noqa F821 below: pyflakes reads a lambda over a name the function deletes later as undefined)
            b.expansion_search = ef
            rows, t = timed(lambda q: b.top(q, K)[0], lat_queries)  # noqa: F821
            t["recall10"] = mean_recall(x, lat_queries, rows, kth)
            res[f"top10_ef{ef}_{label}"] = t
            log(f"hnsw {dtype} top10 ef={ef} threads={threads}: {t}")
    faiss.omp_set_num_threads(default_threads)
    b.expansion_search = args.expansion_search
    # .copy(): a slice of argpartition's n-row result would keep all of it alive (500 x 80 MB at 10M rows)
    s, t = timed(b.scores, lat_queries, keep=lambda v: np.argpartition(-v, K)[:K].copy())
    t["recall10"] = mean_recall(x, lat_queries, s, kth)
    res[f"scores_{args.candidates}"] = t
    log(f"hnsw {dtype} scores (candidates={args.candidates}): {t}")
    del s
    # masked top: latency, recall against exact over the masked rows, how often the graph search widened / fell back
    res["masked"] = {}
    mq = lat_queries[:args.masked_queries]
    by_sel = masks(x.shape[0])
    truths = masked_truths(x, mq, by_sel)
    for sel, mask in by_sel.items():
        before_stats = dict(b.stats)
        rows, t = timed(lambda q: b.top(q, K, mask)[0], mq)  # noqa: F821
        calls = b.stats["masked"] - before_stats["masked"]
        t |= {"recall10": mean_recall(x, mq, rows, truths[sel], min(K, int(mask.sum()))),
              "masked_rows": int(mask.sum()),
              "widened_per_query": round((b.stats["grown"] - before_stats["grown"]) / calls, 3),
              "exact_fallback_share": round((b.stats["exact"] - before_stats["exact"]) / calls, 3)}
        res["masked"][str(sel)] = t
        log(f"hnsw {dtype} masked top10 selectivity {sel}: {t}")
        # the engine's filtered path: scores(q, mask) draws its candidates from the masked rows
        best, t = timed(lambda q: b.scores(q, mask), mq, keep=lambda v: _masked_top(v, mask))  # noqa: F821
        t["recall10"] = mean_recall(x, mq, best, truths[sel], min(K, int(mask.sum())))
        res["masked"][str(sel)][f"scores_{args.candidates}"] = t
        log(f"hnsw {dtype} masked scores (candidates={args.candidates}) selectivity {sel}: {t}")
    del b
    gc.collect()
    before = memory()
    t0 = time.time()
    opened = HnswBackend.open(path, x, candidates=args.candidates, expansion_search=args.expansion_search)
    res["open_s"] = round(time.time() - t0, 3)
    res["rss_open_mib"] = delta(memory(), before)
    rows, t = timed(lambda q: opened.top(q, K)[0], lat_queries)  # noqa: F821
    res["opened_top10"] = t
    res["rss_opened_after_queries_mib"] = delta(memory(), before)
    log(f"hnsw {dtype} opened (mmap): {res['open_s']}s {res['rss_open_mib']} -> {res['rss_opened_after_queries_mib']} {t}")
    # the same queries again (the graph's pages now cached), then the engine's path on the mapped graph
    res["opened_top10_warm"] = timed(lambda q: opened.top(q, K)[0], lat_queries)[1]  # noqa: F821
    s, t = timed(opened.scores, lat_queries, keep=lambda v: np.argpartition(-v, K)[:K].copy())
    t["recall10"] = mean_recall(x, lat_queries, s, kth)
    res[f"opened_scores_{args.candidates}"] = t
    res["rss_opened_after_scores_mib"] = delta(memory(), before)
    log(f"hnsw {dtype} opened (mmap), warm: top10 {res['opened_top10_warm']}; scores {t}; "
        f"{res['rss_opened_after_scores_mib']}")
    del s
    del opened
    gc.collect()
    if not args.keep:
        path.unlink()
        path.with_name(path.name + ".dups.npz").unlink(missing_ok=True)
    return res


def dataset(args, workdir: Path):
    if args.data == "openi":
        root = Path(args.openi)
        gen = (root / "CURRENT").read_text().strip()
        x = np.load(root / gen / "sentence_vectors.npy", mmap_mode="r")
        rng = np.random.default_rng(0)
        queries = np.asarray(x[np.sort(rng.choice(x.shape[0], min(args.queries, x.shape[0]), replace=False))])
        return x, queries, f"Open-i {root / gen / 'sentence_vectors.npy'} (queries: {len(queries)} of its rows)"
    path = workdir / f"clustered-{args.rows}.npy"
    if not path.exists():
        tmp = np.lib.format.open_memmap(workdir / "tmp.npy", mode="w+", dtype=np.float32, shape=(args.rows, DIM))
        clustered(args.rows, out=tmp)
        tmp.flush()
        del tmp
        os.replace(workdir / "tmp.npy", path)
    x = np.load(path, mmap_mode="r")
    queries = clustered(args.queries, start=10**12)
    return x, queries, f"synthetic clustered, {args.rows:,} x {DIM} (queries: {args.queries} other draws)"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", choices=("synthetic", "openi"), default="synthetic")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--openi", default=OPENI)
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--masked-queries", type=int, default=100)
    ap.add_argument("--systems", default="numpy,f32,i8", help="comma list of numpy, f32, f16, i8, milvus "
                    "(milvus-lite: bench_scale_milvus.py, needs pip install 'radsift[milvus]')")
    ap.add_argument("--milvus-index", default="HNSW", choices=("HNSW", "FLAT", "IVF_FLAT"),
                    help="milvus: the collection's vector index (HNSW with --connectivity/--expansion-add)")
    ap.add_argument("--connectivity", type=int, default=16)
    ap.add_argument("--expansion-add", type=int, default=128)
    ap.add_argument("--expansion-search", type=int, default=64)
    ap.add_argument("--efs", default="32,64,128", help="efSearch values for the top-10 latency/recall sweep")
    ap.add_argument("--candidates", type=int, default=1000)
    ap.add_argument("--workdir", default="/tmp/radsift-bench-scale")
    ap.add_argument("--keep", action="store_true", help="keep the saved graphs in --workdir")
    ap.add_argument("--reuse-graph", action="store_true", help="read a graph kept in --workdir by an earlier run "
                    "(--keep) instead of building it (the build time is then the earlier run's)")
    ap.add_argument("--add", action="store_true", help="also time an add of 1%% of --rows sentences against a full "
                    "build through the index API (benchmarks/bench_add.py: a synthetic corpus, the hashing encoder)")
    ap.add_argument("--out", default="")
    args = ap.parse_args(argv)
    args.efs = [int(v) for v in args.efs.split(",")]
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    if args.data == "synthetic":
        need = args.rows * DIM * 4 * 1.05
        free = shutil.disk_usage(workdir).free
        if need > free:
            raise SystemExit(f"{args.rows:,} float32 vectors need {need / 2**30:.1f} GiB in {workdir}; {free / 2**30:.1f} free")
    log(f"start: {args.data} rows={args.rows:,} systems={args.systems}")
    x, queries, described = dataset(args, workdir)
    t0 = time.time()
    kth = exact_truth(x, queries)
    log(f"exact truth for {len(queries)} queries in {time.time() - t0:.1f}s")
    result = {"data": described, "rows": int(x.shape[0]), "dim": int(x.shape[1]), "queries": len(queries),
              "cpus": os.cpu_count(), "load_start": os.getloadavg(), "systems": {}}
    for system in args.systems.split(","):
        log(f"== {system}")
        if system == "numpy":
            lat_queries = queries if x.shape[0] <= 2_000_000 else queries[:20]
            result["systems"][system] = run_numpy(x, queries, kth, lat_queries, threads=None)
        elif system == "milvus":
            from bench_scale_milvus import run_milvus

            result["systems"][system] = run_milvus(x, queries, kth, queries, args, workdir)
        else:
            result["systems"][system] = run_hnsw(x, queries, kth, queries, system, args, workdir)
        result["systems"][system]["load_after"] = os.getloadavg()
        log(f"{system}: done")
        if args.out:
            Path(args.out).write_text(json.dumps(result, indent=1))
    if args.add:
        from bench_add import main as bench_add

        log("== add 1% (bench_add)")
        add_out = workdir / "add.json"
        bench_add(["--sentences", str(args.rows), "--workdir", str(workdir / "add"), "--out", str(add_out)])
        result["add"] = json.loads(add_out.read_text())
        shutil.rmtree(workdir / "add", ignore_errors=True)
    result["load_end"] = os.getloadavg()
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))
    print(table(result, args))
    return 0


def table(result: dict, args) -> str:
    lines = [f"{result['data']}; load {result['load_start'][0]:.2f} at start, {result['load_end'][0]:.2f} at end; "
             f"{result['cpus']} cores",
             "| system | build s | build RSS MiB | file MiB | top-10 p50/p99 ms (ef, recall@10) | "
             f"scores({args.candidates}) p50/p99 ms | opened RSS anon/file MiB |", "|---|---|---|---|---|---|---|"]
    for name, r in result["systems"].items():
        if name == "numpy":
            t = r["top10"]
            lines.append(f"| numpy (exact) | 0 | - | - | {t['p50_ms']}/{t['p99_ms']} (exact, {t['recall10']}) | "
                         f"same | - |")
            continue
        if name == "milvus":
            from bench_scale_milvus import table_row

            lines.append(table_row(r, args))
            continue
        tops = "; ".join(f"ef{ef}: {r[f'top10_ef{ef}_1thread']['p50_ms']}/{r[f'top10_ef{ef}_1thread']['p99_ms']} "
                         f"({r[f'top10_ef{ef}_1thread']['recall10']})" for ef in args.efs)
        s = r[f"scores_{args.candidates}"]
        o = r["rss_opened_after_queries_mib"]
        lines.append(f"| hnsw {name} | {r['build_s']} | {r['rss_build_mib']['VmRSS']} | {r['file_mib']} | {tops} | "
                     f"{s['p50_ms']}/{s['p99_ms']} ({s['recall10']}) | {o['RssAnon']}/{o['RssFile']} |")
    if "add" in result:
        a = result["add"]
        lines.append(f"\nadd {a['fraction']:.0%} of {a['build_units']['sentences']:,} sentences (bench_add, hashing "
                     f"encoder): {a['add_s']:.2f} s against a full build of {a['build_s']:.1f} s "
                     f"({a['add_over_build']:.1%}); optimize {a['optimize_s']:.1f} s")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
