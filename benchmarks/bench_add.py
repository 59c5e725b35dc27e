"""What an incremental write costs against a full rebuild (issue 20, item 2), through the real API.

One run, on one synthetic corpus of ``--sentences`` sentences (reports of 8 sentences recombined
from the demo generator's, plus a one-sentence impression; reports are read, split, labelled,
encoded, tokenised and stored exactly as ``radsift index build`` does), with the hashing encoder
(:class:`radsift.models.hashing.HashingEncoder`, dim 384) standing in for the model, so the
figures measure the index's own work and not 2-core MiniLM encoding, which costs the same per
new sentence in both paths:

- ``build``: ``build_index`` of the whole corpus (the full rebuild);
- ``add``: ``add_to_index`` of ``--fraction`` new reports (one new segment);
- ``replace``: ``add_to_index(replace=True)`` of ``--fraction`` changed versions of stored reports;
- ``delete``: ``delete_from_index`` of ``--fraction`` of the reports;
- ``open``: ``IndexStore.open`` of the segmented index (vectors stay memory-mapped per segment) and
  its sentence row maps; ``gather``: every live vector read into one array (what an HNSW graph
  rebuild or a Milvus push reads after an add);
- ``dense``/``bm25``: exact dense scoring (``vectors @ q``, one product per segment) and BM25
  scoring latency over the segments against the one-segment build (same queries, median);
- ``optimize``: ``optimize_index`` (merge into one segment, drop the deleted reports).

Run (about 20 minutes at 1M sentences on 2 busy cores)::

    .venv/bin/python benchmarks/bench_add.py --sentences 1000000 --out add.json

``--openi reports.csv --reports 3000`` times the same build and 1% add on real Open-i reports
with the packaged MiniLM model (torch). ``--baseline-src DIR`` also times the same build and add
with another radsift source tree (e.g. the commit before segments, exported with ``git archive``),
in a subprocess.

``--graph`` times the HNSW graphs instead (``radsift index add --backend hnsw``): the base index and
its graphs built, then ``--fraction`` new reports added and the new generation's graphs extended
from the previous ones (:func:`radsift.index.graphs.build_graphs`) against the same graphs built
from scratch (``extend=False``), each with its top-10 recall against exact search; then a
``--replace`` and a delete of ``--fraction``, each followed by its extension. Every sentence is
made distinct by two made-up words (the pool holds 3,146 sentences, which would make a graph of
3,146 nodes), so the sentence graph has one node per row, as bench_scale's vectors do. Run it on
an idle machine (a full graph build of 1M rows takes about 4 minutes on 2 cores)::

    .venv/bin/python benchmarks/bench_add.py --graph --sentences 1000000 --out add-graph.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

PER_REPORT = 8
QUERIES = ["pneumothorax", "no pleural effusion", "right lower lobe consolidation", "cardiomegaly",
           "endotracheal tube above the carina"]


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} load {os.getloadavg()[0]:.2f}] {msg}", file=sys.stderr, flush=True)


def corpus(n_reports: int, seed: int, prefix: str = "s", start: int = 0, distinct: bool = False):
    """``n_reports`` reports of 8 findings sentences and a one-sentence impression from the demo pool
    (``distinct``: each sentence tagged with two made-up words from its report and place, so that no
    two sentences of the corpus share a vector)."""
    from radsift.demo import generate_reports
    from radsift.records import Report
    from radsift.text import report_sentences

    pool = sorted({s.text for d in generate_reports(n=3000, seed=7) for s in report_sentences(d.report)})
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(pool), size=(n_reports, PER_REPORT + 1))

    def text(i: int, j: int, k: int) -> str:
        if not distinct:
            return pool[j]
        n = ((start + i) * (PER_REPORT + 1) + k) * (1 if prefix == "s" else -1)
        return pool[j].rstrip(".") + f" {_letters(n, 'q')} {_letters(n * 7919 + 13, 'z')}."

    return [Report(f"{prefix}{start + i}",
                   {"findings": " ".join(text(i, j, k) for k, j in enumerate(row[:PER_REPORT])),
                    "impression": text(i, row[PER_REPORT], PER_REPORT)},
                   {"site": "north" if i % 2 else "south"}) for i, row in enumerate(picks.tolist())]


def _letters(n: int, lead: str) -> str:
    """A made-up word for the number ``n`` (base 26, after ``lead``; ``x`` before a negative number)."""
    word, n = ("x" if n < 0 else ""), abs(n)
    while True:
        n, r = divmod(n, 26)
        word += "abcdefghijklmnopqrstuvwxyz"[r]
        if not n:
            return lead + word


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sentences", type=int, default=1_000_000, help="findings sentences in the base index")
    ap.add_argument("--fraction", type=float, default=0.01)
    ap.add_argument("--workdir", default="/tmp/radsift-bench-add")
    ap.add_argument("--baseline-src", default="", help="another radsift src/ folder to time the same add with")
    ap.add_argument("--openi", default="", help="an Open-i reports.csv: index its real reports (the first "
                    "--reports of them, then 1%% more) with the packaged MiniLM model instead")
    ap.add_argument("--reports", type=int, default=2000, help="with --openi: reports in the base index")
    ap.add_argument("--graph", action="store_true", help="time extending the HNSW graphs on add against "
                    "building them (distinct sentences)")
    ap.add_argument("--out", default="")
    args = ap.parse_args(argv)
    if args.openi:
        return real(args)
    if args.graph:
        return graphs(args)

    from radsift.index import IndexStore, add_to_index, build_index, delete_from_index, optimize_index
    from radsift.ranking.bm25 import bm25_scores

    work, enc, base, new, changed, res = _synthetic(args)
    n_reports, n_new = res["reports"], len(new)
    index = work / "idx"
    log(f"build: {n_reports:,} reports")
    summary, res["build_s"] = timed(lambda: build_index(index, base, encoder=enc, progress=False))
    res["build_units"] = {"sentences": summary.sentences, "sections": summary.sections}
    log(f"build {res['build_s']:.1f}s {summary.describe()}")

    qvecs = np.stack([enc.encode_query(q) for q in QUERIES * 3])
    single, res["open_single_s"] = timed(lambda: IndexStore.open(index))
    vectors = single.units("sentence").vectors
    vectors @ qvecs[0]  # page the file in
    dense_single = [timed(lambda: vectors @ q)[1] for q in qvecs]
    n = single.units("sentence").report_row.shape[0]
    single_bm25 = single.bm25("sentence")
    bm25_single = [timed(lambda: bm25_scores(single_bm25, q, n))[1] for q in QUERIES * 3]
    single.close()

    if args.baseline_src:
        log("baseline add (other source tree)")
        res["baseline"] = baseline(args.baseline_src, work, base, new)
        log(f"baseline {res['baseline']}")

    log(f"add: {n_new:,} reports")
    summary, res["add_s"] = timed(lambda: add_to_index(index, new, encoder=enc, progress=False))
    log(f"add {res['add_s']:.2f}s {summary.describe()}")
    summary, res["replace_s"] = timed(lambda: add_to_index(index, changed, encoder=enc, progress=False,
                                                           replace=True))
    log(f"replace {res['replace_s']:.2f}s {summary.describe()}")
    summary, res["delete_s"] = timed(lambda: delete_from_index(index, [f"s{i}" for i in range(n_new, 2 * n_new)]))
    log(f"delete {res['delete_s']:.2f}s {summary.describe()}")

    store, res["open_segmented_s"] = timed(lambda: IndexStore.open(index))
    _, res["units_segmented_s"] = timed(lambda: store.units("sentence"))  # row maps (vectors stay mapped)
    vectors = store.units("sentence").vectors
    vectors @ qvecs[0]
    dense_seg = [timed(lambda: vectors @ q)[1] for q in qvecs]
    _, res["gather_segmented_s"] = timed(lambda: np.asarray(vectors))  # what an HNSW rebuild or Milvus push reads
    n = store.units("sentence").report_row.shape[0]
    seg_bm25 = store.bm25("sentence")
    bm25_seg = [timed(lambda: bm25_scores(seg_bm25, q, n))[1] for q in QUERIES * 3]
    res["dense_ms_p50"] = {"one_segment": 1000 * float(np.median(dense_single)),
                           "segmented": 1000 * float(np.median(dense_seg))}
    res["bm25_ms_p50"] = {"one_segment": 1000 * float(np.median(bm25_single)),
                          "segmented": 1000 * float(np.median(bm25_seg))}
    res["segments"] = len(store.manifest.segments)
    store.close()
    summary, res["optimize_s"] = timed(lambda: optimize_index(index))
    log(f"optimize {res['optimize_s']:.1f}s {summary.describe()}")
    return _finish(res, args)


def _synthetic(args, distinct: bool = False):
    """A fresh work folder, the hashing encoder, the base corpus, ``--fraction`` new reports and as many
    new versions of the first stored ones; and the result dict, started."""
    from radsift.models.hashing import HashingEncoder

    work = Path(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    enc = HashingEncoder(work / "hash-model", dim=384)
    n_reports = args.sentences // PER_REPORT
    n_new = max(1, int(n_reports * args.fraction))
    base = corpus(n_reports, seed=1, distinct=distinct)
    new = corpus(n_new, seed=2, prefix="new", distinct=distinct)
    changed = corpus(n_new, seed=3, start=0, distinct=distinct)  # new versions of s0 .. s{n_new-1}
    res: dict = {"sentences": args.sentences, "reports": n_reports, "fraction": args.fraction,
                 "encoder": "hashing dim 384", "cpus": os.cpu_count(), "load_start": os.getloadavg()}
    return work, enc, base, new, changed, res


def graphs(args) -> int:
    """Extending the HNSW graphs of the index on add, replace and delete, against building them from scratch."""
    from radsift.index import add_to_index, build_index, delete_from_index
    from radsift.index.graphs import GRAPH_DIR, build_graphs

    work, enc, base, new, changed, res = _synthetic(args, distinct=True)
    n_new = len(new)
    index = work / "idx"
    log(f"build: {len(base):,} reports")
    summary, res["build_s"] = timed(lambda: build_index(index, base, encoder=enc, progress=False))
    res["build_units"] = {"sentences": summary.sentences, "sections": summary.sections}
    _, res["graph_build_base_s"] = timed(lambda: build_graphs(index, "hnsw", say=log))
    log(f"graphs of the base built in {res['graph_build_base_s']:.1f}s")
    queries = [enc.encode_query(q) for q in QUERIES] + \
        [enc.encode_query(r.sections["findings"].split(". ")[0]) for r in (base[::max(1, len(base) // 10)] + new[:10])]

    _, res["add_s"] = timed(lambda: add_to_index(index, new, encoder=enc, progress=False))
    _, res["graph_extend_add_s"] = timed(lambda: build_graphs(index, "hnsw", say=log))
    res["recall10_extended"] = _recall(index, queries)
    log(f"add {res['add_s']:.2f}s, graphs extended in {res['graph_extend_add_s']:.2f}s, "
        f"recall@10 {res['recall10_extended']}")
    for old in (index / GRAPH_DIR).iterdir():  # the same generation's graphs again, from scratch
        old.unlink()
    _, res["graph_rebuild_s"] = timed(lambda: build_graphs(index, "hnsw", say=log, extend=False))
    res["recall10_rebuilt"] = _recall(index, queries)
    log(f"graphs built from scratch in {res['graph_rebuild_s']:.1f}s, recall@10 {res['recall10_rebuilt']}")

    add_to_index(index, changed, encoder=enc, progress=False, replace=True)
    _, res["graph_extend_replace_s"] = timed(lambda: build_graphs(index, "hnsw", say=log))
    delete_from_index(index, [f"s{i}" for i in range(n_new, 2 * n_new)])
    _, res["graph_extend_delete_s"] = timed(lambda: build_graphs(index, "hnsw", say=log))
    res["recall10_after_replace_delete"] = _recall(index, queries)
    log(f"replace: graphs extended in {res['graph_extend_replace_s']:.2f}s; delete: "
        f"{res['graph_extend_delete_s']:.2f}s; recall@10 {res['recall10_after_replace_delete']}")
    res["extend_over_rebuild"] = res["graph_extend_add_s"] / res["graph_rebuild_s"]
    res["load_end"] = os.getloadavg()
    return _write(res, args)


def _recall(index_dir: Path, queries) -> dict[str, float]:
    """Mean top-10 recall of the live graphs against exact search (rows scoring at least the exact 10th best)."""
    from radsift.index import IndexStore
    from radsift.index.backends.hnsw import HnswBackend
    from radsift.index.backends.numpy_backend import NumpyBackend
    from radsift.index.graphs import graph_path

    store = IndexStore.open(index_dir)
    out = {}
    try:
        for kind in ("sentence", "section"):
            vectors = store.units(kind).vectors
            graph = HnswBackend.open(graph_path(index_dir, store.gen_dir, kind), vectors)
            exact = NumpyBackend(vectors)
            hits = []
            for q in queries:
                rows, _ = graph.top(q, 10)
                tenth = exact.top(q, 10)[1][-1]
                hits.append(np.count_nonzero(np.asarray(vectors[rows]) @ q >= tenth - 1e-6) / 10)
            out[kind] = round(float(np.mean(hits)), 4)
    finally:
        store.close()
    return out


def _finish(res: dict, args) -> int:
    """The add's share of the build, the load at the end; the figures printed and written to --out."""
    res["add_over_build"] = res["add_s"] / res["build_s"]
    res["load_end"] = os.getloadavg()
    return _write(res, args)


def _write(res: dict, args) -> int:
    text = json.dumps(res, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


def real(args) -> int:
    """The same build/add on real Open-i reports, encoded by the packaged MiniLM (torch)."""
    from radsift.corpus import ReaderOptions, read_corpus
    from radsift.index import add_to_index, build_index
    from radsift.models import Encoder

    work = Path(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    options = ReaderOptions(format="csv", id_column="uid",
                            sections={"findings": "findings", "impression": "impression"})
    reports = list(read_corpus([args.openi], options))
    n_new = max(1, int(args.reports * args.fraction))
    base, new = reports[:args.reports], reports[args.reports:args.reports + n_new]
    encoder = Encoder.load(None)
    res = {"openi_reports": args.reports, "added": n_new, "encoder": encoder.name, "load_start": os.getloadavg()}
    summary, res["build_s"] = timed(lambda: build_index(work / "idx", base, encoder=encoder, progress=False))
    res["build_sentences"] = summary.sentences
    log(f"build {res['build_s']:.1f}s {summary.describe()}")
    summary, res["add_s"] = timed(lambda: add_to_index(work / "idx", new, encoder=encoder, progress=False))
    log(f"add {res['add_s']:.1f}s {summary.describe()}")
    return _finish(res, args)


BASELINE = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from radsift.index import add_to_index, build_index
from radsift.models.hashing import HashingEncoder
from radsift.records import Report
spec = json.load(open(sys.argv[2]))
enc = HashingEncoder(spec["model"], dim=384)
load = lambda rows: [Report(r["id"], r["sections"], r["metadata"]) for r in rows]
t = time.perf_counter(); build_index(spec["index"], load(spec["base"]), encoder=enc, progress=False)
b = time.perf_counter() - t
t = time.perf_counter(); add_to_index(spec["index"], load(spec["new"]), encoder=enc, progress=False)
print(json.dumps({"build_s": b, "add_s": time.perf_counter() - t}))
"""


def baseline(src: str, work: Path, base, new) -> dict:
    """Build and add with another source tree (a subprocess importing radsift from ``src``)."""
    spec = {"model": str(work / "hash-model"), "index": str(work / "baseline-idx"),
            "base": [{"id": r.id, "sections": dict(r.sections), "metadata": dict(r.metadata)} for r in base],
            "new": [{"id": r.id, "sections": dict(r.sections), "metadata": dict(r.metadata)} for r in new]}
    (work / "baseline.json").write_text(json.dumps(spec))
    (work / "baseline.py").write_text(BASELINE)
    out = subprocess.run([sys.executable, str(work / "baseline.py"), src, str(work / "baseline.json")],
                         capture_output=True, text=True, check=True)
    shutil.rmtree(work / "baseline-idx", ignore_errors=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    raise SystemExit(main())
