"""The Milvus part of ``bench_scale.py``: milvus-lite (a local ``.db``, in-process) on the same vectors.

Run through ``bench_scale.py --systems numpy,i8,milvus`` (or alone: ``--systems milvus``). Measures
what the other systems get, with the radsift backend (:class:`radsift.index.backends.milvus.MilvusBackend`)
over a collection written as ``radsift index build --backend milvus`` writes one:

- build: insert every row (``row``, ``report`` = row // 8, ``section`` = row % 3, three metadata
  fields, the vector) in batches of 5,000, then flush (milvus-lite builds its HNSW index there);
  time and resident memory (milvus-lite runs in this process: its memory is this process's);
- latency per query with the vector given: ``top(q, 10)`` at several ``ef`` (recall@10 against
  exact), the engine's ``scores`` (1000 candidates + the anchor: two Milvus searches);
- filtered top-10 pushed down as expressions at 10%, 1% and 0.1% of rows
  (``m0 == "g3"``, ``m1 == "h03"``, ``m2 == "k003"``): latency, recall against exact over the
  masked rows, rows Milvus returned that the mask dropped (over-fetch), exact fallbacks;
- reopen: a fresh milvus-lite server on the same file (load time, memory after queries), disk size.
"""

from __future__ import annotations

import gc
import os
import shutil
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from bench_scale import K, delta, log, masked_truths, mean_recall, memory, timed

SELECTIVITY = {"0.1": ("m0", "g", 10), "0.01": ("m1", "h", 100), "0.001": ("m2", "k", 1000)}


def _bucket(rows: np.ndarray, modulo: int, prefix: str) -> list[str]:
    width = len(str(modulo - 1))
    return [f"{prefix}{r % modulo:0{width}d}" for r in rows.tolist()]


def run_milvus(x, queries, kth, lat_queries, args, workdir: Path) -> dict:
    from pymilvus import DataType, MilvusClient

    from milvus_lite.server_manager import server_manager_instance
    from radsift.index.backends import milvus as mv
    from radsift.index.backends import milvus_client as mvc
    from radsift.index.backends import milvus_push as mvp

    path = workdir / "milvus-bench.db"
    shutil.rmtree(path, ignore_errors=True)
    n, dim = x.shape
    gc.collect()
    before = memory()
    t0 = time.time()
    client = mvc.connect(str(path))
    name = "bench"
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("row", DataType.INT64, is_primary=True)
    schema.add_field("report", DataType.INT64)
    schema.add_field("section", DataType.INT32)
    for field in ("m0", "m1", "m2"):
        schema.add_field(field, DataType.VARCHAR, max_length=16)
    schema.add_field("vec", DataType.FLOAT_VECTOR, dim=dim)
    params = client.prepare_index_params()
    params.add_index(field_name="vec", index_type=args.milvus_index, metric_type="IP",
                     params={"M": args.connectivity, "efConstruction": args.expansion_add}
                     if args.milvus_index == "HNSW" else {})
    client.create_collection(name, schema=schema, index_params=params)
    step = max(mvp.BATCH, (n // 10) // mvp.BATCH * mvp.BATCH)
    for s in range(0, n, mvp.BATCH):
        e = min(n, s + mvp.BATCH)
        rows = np.arange(s, e)
        vecs = np.asarray(x[s:e], dtype=np.float32)
        m0, m1, m2 = _bucket(rows, 10, "g"), _bucket(rows, 100, "h"), _bucket(rows, 1000, "k")
        client.insert(name, [{"row": int(r), "report": int(r) // 8, "section": int(r) % 3, "m0": m0[i], "m1": m1[i],
                              "m2": m2[i], "vec": vecs[i]} for i, r in enumerate(rows.tolist())])
        if e % step == 0 or e == n:
            log(f"milvus inserted {e:,}/{n:,} ({time.time() - t0:.0f}s)")
    insert_s = time.time() - t0
    client.flush(name)
    client.load_collection(name)
    res = {"build_s": round(time.time() - t0, 1), "insert_s": round(insert_s, 1),
           "rss_build_mib": delta(memory(), before), "index": args.milvus_index,
           "params": {"connectivity": args.connectivity, "expansion_add": args.expansion_add,
                      "candidates": args.candidates}}
    log(f"milvus: built in {res['build_s']}s (insert {res['insert_s']}s), {res['rss_build_mib']}")
    b = mv.MilvusBackend(client, name, x, candidates=args.candidates, uri=str(path))
    for ef in args.efs:
        b.ef = ef
        got, t = timed(lambda q: b.top(q, K)[0], lat_queries)
        t["recall10"] = mean_recall(x, lat_queries, got, kth)
        res[f"top10_ef{ef}"] = t
        log(f"milvus top10 ef={ef}: {t}")
    b.ef = args.expansion_search
    s, t = timed(b.scores, lat_queries, keep=lambda v: np.argpartition(-v, K)[:K])
    t["recall10"] = mean_recall(x, lat_queries, s, kth)
    res[f"scores_{args.candidates}"] = t
    log(f"milvus scores (candidates={args.candidates}): {t}")
    del s
    # filtered top-10, pushed down as expressions (the engine passes the filters with the mask)
    from radsift.search.query import Filter

    b.fields = {"g": "m0", "h": "m1", "k": "m2"}
    res["masked"] = {}
    mq = lat_queries[:args.masked_queries]
    all_rows = np.arange(n)
    by_sel = {sel: all_rows % modulo == 3 for sel, (_, _, modulo) in SELECTIVITY.items()}
    truths = masked_truths(x, mq, by_sel)
    for sel, (field, prefix, modulo) in SELECTIVITY.items():
        mask = by_sel[sel]
        value = _bucket(np.array([3]), modulo, prefix)[0]
        filters = [Filter(prefix, value)]
        before_stats = dict(b.stats)
        got, t = timed(lambda q: b.top(q, K, mask, filters=filters)[0], mq)
        calls = len(mq) + 1  # timed() warms up once
        t |= {"recall10": mean_recall(x, mq, got, truths[sel], min(K, int(mask.sum()))),
              "masked_rows": int(mask.sum()), "expression": mv.expression(None, filters, b.fields)[0],
              "overfetch_rows_per_query": round((b.stats["overfetch"] - before_stats["overfetch"]) / calls, 2),
              "widened_per_query": round((b.stats["grown"] - before_stats["grown"]) / calls, 3),
              "exact_fallback_share": round((b.stats["exact"] - before_stats["exact"]) / calls, 3)}
        res["masked"][sel] = t
        log(f"milvus masked top10 selectivity {sel}: {t}")
    client.close()
    del b, client
    server_manager_instance.release_server(str(path))
    gc.collect()
    res["disk_mib"] = round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20)
    before = memory()
    t0 = time.time()
    client = mvc.connect(str(path))
    client.load_collection(name)
    b = mv.MilvusBackend(client, name, x, candidates=args.candidates, ef=args.expansion_search, uri=str(path))
    b.top(lat_queries[0], K)
    res["open_s"] = round(time.time() - t0, 2)
    got, t = timed(lambda q: b.top(q, K)[0], lat_queries)
    res["opened_top10"] = t
    res["rss_opened_after_queries_mib"] = delta(memory(), before)
    log(f"milvus reopened: {res['open_s']}s, {res['rss_opened_after_queries_mib']} {t}")
    client.close()
    server_manager_instance.release_server(str(path))
    if not args.keep:
        shutil.rmtree(path, ignore_errors=True)
    return res


def table_row(r: dict, args) -> str:
    """The system's line in bench_scale's table."""
    tops = "; ".join(f"ef{ef}: {r[f'top10_ef{ef}']['p50_ms']}/{r[f'top10_ef{ef}']['p99_ms']} "
                     f"({r[f'top10_ef{ef}']['recall10']})" for ef in args.efs)
    s = r[f"scores_{args.candidates}"]
    o = r["rss_opened_after_queries_mib"]
    return (f"| milvus-lite {r['index']} | {r['build_s']} | {r['rss_build_mib']['VmRSS']} | {r['disk_mib']} | {tops} | "
            f"{s['p50_ms']}/{s['p99_ms']} ({s['recall10']}) | {o['RssAnon']}/{o['RssFile']} |")


# -- Open-i through the engine ----------------------------------------------------------------------
def openi_engine(openi: Path, workdir: Path, candidates: int = 1000, only: Sequence[str] = ()) -> dict:
    """The engine on Open-i's real index with the Milvus backend against exact numpy: one query per
    lexicon finding (its name), report level, k=10, negation-aware, dense and hybrid, plain, with
    ``--target impression`` and with a metadata filter; the share of exact search's top-10 reports
    Milvus also returns, and latency end to end (query encoding included, p50/p99)."""
    from radsift.index.backends import milvus_push as mvp
    from radsift.search import Index

    idx = workdir / "openi-milvus"
    shutil.rmtree(idx, ignore_errors=True)
    shutil.copytree(openi, idx, ignore=shutil.ignore_patterns("cache"))
    t0 = time.time()
    mvp.push_generation(idx)
    push_s = round(time.time() - t0, 1)
    log(f"Open-i pushed to milvus-lite in {push_s}s")
    exact = Index.open(idx, backend="numpy")
    milvus = Index.open(idx, backend="milvus", encoder=exact.encoder)
    queries = list(exact.manifest.findings)
    variants = {"plain": {}, "target=impression": {"target": "impression"},
                "indication~pain": {"where": ["indication~pain"]}}
    variants = {k: v for k, v in variants.items() if not only or k in only}
    out = {"queries": len(queries), "push_s": push_s, "candidates": candidates,
           "index": os.environ.get(mvp.ENV_INDEX, "HNSW")}
    for mode in ("dense", "hybrid"):
        for label, opts in variants.items():
            overlaps, tied, lat = [], [], {"numpy": [], "milvus": []}
            for q in queries:
                got = {}
                for name, index in (("numpy", exact), ("milvus", milvus)):
                    t = time.perf_counter()
                    got[name] = index.search(q, k=10, mode=mode, mentions=False, include_report=False, **opts)
                    lat[name].append(1e3 * (time.perf_counter() - t))
                if got["numpy"]:
                    ids = {h.report_id for h in got["numpy"]}
                    overlaps.append(len(ids & {h.report_id for h in got["milvus"]}) / len(ids))
                    # tie-aware: a report scoring at least exact search's 10th is as good (reports share sentences)
                    last = got["numpy"][-1].score
                    tied.append(sum(h.report_id in ids or h.score >= last - 1e-6 for h in got["milvus"]) / len(ids))
            out[f"{mode} {label}"] = {"overlap@10": round(float(np.mean(overlaps)), 4),
                                      "tie-aware overlap@10": round(float(np.mean(tied)), 4),
                                      **{f"{name} p50/p99 ms": [round(float(np.percentile(v, 50)), 1),
                                                                round(float(np.percentile(v, 99)), 1)]
                                         for name, v in lat.items()}, "load": round(os.getloadavg()[0], 2)}
            log(f"Open-i {mode} {label}: {out[f'{mode} {label}']}")
    out["stats"] = dict(milvus._backend(milvus.store, "sentence").stats)
    return out


if __name__ == "__main__":
    import argparse
    import json

    ap = argparse.ArgumentParser(description="The engine on Open-i with the Milvus backend against exact search")
    ap.add_argument("--openi", default="/tmp/radsift-bench-negation/openi")
    ap.add_argument("--workdir", default="/tmp/radsift-bench-scale")
    ap.add_argument("--out", default="")
    ap.add_argument("--variants", default="", help="comma list of plain, target=impression, indication~pain")
    args = ap.parse_args()
    Path(args.workdir).mkdir(parents=True, exist_ok=True)
    result = openi_engine(Path(args.openi), Path(args.workdir), only=[v for v in args.variants.split(",") if v])
    print(json.dumps(result, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))
