"""Foundation benchmark: index build throughput, query latency, peak memory.

Run:  .venv/bin/python benchmarks/bench_foundation.py [--openi ../shared/data/openi/reports.csv]
                                                     [--million 1000000] [--queries 50]

Prints a markdown table (the README's). Measures, on this machine:
  * building an index of the Open-i reports with the default model (reports/s, sentences/s);
  * query encoding latency, and search latency p50/p95 for dense, BM25 and hybrid at Open-i size;
  * the same at N synthetic sentence vectors (default 1,000,000), next to a plain numpy
    matrix-vector product over the same vectors (the floor any exact dense search pays);
  * peak resident memory of the process.
Skips the Open-i part with a message when ../shared/data is absent.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OPENI = ROOT.parent / "shared" / "data" / "openi" / "reports.csv"
QUERIES = [
    "pneumothorax", "no pneumothorax", "pleural effusion", "no pleural effusion", "cardiomegaly",
    "enlarged heart", "right lower lobe consolidation", "pulmonary edema", "calcified granuloma",
    "endotracheal tube", "degenerative changes of the thoracic spine", "hyperinflated lungs emphysema",
    "pacemaker leads", "sternotomy wires", "rib fracture", "hiatal hernia", "atelectasis at the lung bases",
    "no acute cardiopulmonary abnormality", "tortuous aorta", "interstitial opacities",
]


def percentile(xs: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs), p))


def time_calls(fn, queries: list[str], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        for q in queries:
            t = time.perf_counter()
            fn(q)
            out.append((time.perf_counter() - t) * 1000)
    return out


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench_openi(path: Path, workdir: Path, rows: list[tuple[str, ...]], n_queries: int) -> None:
    from radsift.corpus import ReaderOptions, read_corpus
    from radsift.index import build_index
    from radsift.models import Encoder
    from radsift.search import Index

    options = ReaderOptions(format="csv", id_column="uid", sections={"findings": "findings", "impression": "impression"})
    t = time.perf_counter()
    encoder = Encoder.load(None)
    load_s = time.perf_counter() - t
    t = time.perf_counter()
    summary = build_index(workdir / "openi", read_corpus([path], options), encoder=encoder, progress=True)
    build_s = time.perf_counter() - t
    rows.append(("Open-i build: reports", f"{summary.reports}", ""))
    rows.append(("Open-i build: time (model loaded)", f"{build_s:.1f} s", "< 180 s"))
    rows.append(("Open-i build: throughput", f"{summary.reports / build_s:.1f} reports/s, "
                 f"{summary.sentences / build_s:.1f} sentences/s", ""))
    rows.append(("model load", f"{load_s:.1f} s", ""))
    idx = Index.open(workdir / "openi", encoder=encoder)
    queries = (QUERIES * ((n_queries // len(QUERIES)) + 1))[:n_queries]
    for q in QUERIES[:3]:
        encoder.encode_query(q)
        idx.search(q, mode="hybrid")
    enc = time_calls(encoder.encode_query, queries, 1)
    rows.append(("query encoding (1 query)", f"p50 {percentile(enc, 50):.1f} ms, p95 {percentile(enc, 95):.1f} ms",
                 "< 15 ms"))
    for mode in ("dense", "bm25", "hybrid"):
        lat = time_calls(lambda q: idx.search(q, k=10, mode=mode), queries, 1)
        rows.append((f"Open-i search {mode} (k=10, report level)",
                     f"p50 {percentile(lat, 50):.1f} ms, p95 {percentile(lat, 95):.1f} ms", ""))


def synthetic_sentences(n: int, seed: int = 0) -> tuple[list[str], list[tuple[int, str, str]]]:
    """Sentence texts for the large synthetic index, recombined from the demo generator's reports,
    with their lexicon labels (so negation-aware ranking is measured at that size too)."""
    from radsift.demo import generate_reports
    from radsift.labels.labeler import Labeler
    from radsift.text import report_sentences

    base = []
    for demo in generate_reports(n=3000, seed=seed):
        base.extend(s.text for s in report_sentences(demo.report))
    base_labels = [sorted({(m.finding, m.status) for m in ms}) for ms in Labeler().label_many(base)]
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(base), size=n)
    labels = [(row, f, st) for row, i in enumerate(picks.tolist()) for f, st in base_labels[i]]
    return [base[i] for i in picks], labels


def bench_million(n: int, workdir: Path, rows: list[tuple[str, ...]], n_queries: int, dim: int = 384) -> None:
    from radsift.index.manifest import FORMAT_VERSION, Manifest
    from radsift.index.format import GenerationData, LabelRecord, ReportRecord, SentenceRecord
    from radsift.index.writer import write_generation
    from radsift.text.tokens import tokenize
    from radsift.models import Encoder, model_fingerprint
    from radsift.search import Index

    encoder = Encoder.load(None)
    t = time.perf_counter()
    texts, labels = synthetic_sentences(n)
    rng = np.random.default_rng(1)
    vecs = rng.standard_normal((n, dim), dtype=np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    per_report = 8  # sentences per synthetic report
    n_reports = (n + per_report - 1) // per_report
    data = GenerationData(
        reports=[ReportRecord(f"s{i}", json.dumps({"findings": ""}), json.dumps({"site": "north" if i % 2 else "south"}))
                 for i in range(n_reports)],
        sentences=[SentenceRecord(i // per_report, "findings", i % per_report, 0, len(t_), t_)
                   for i, t_ in enumerate(texts)],
        sections=[],
        sentence_vectors=vecs,
        section_vectors=np.zeros((0, dim), dtype=np.float32),
        sentence_tokens=[tokenize(t_) for t_ in texts],
        section_tokens=[],
        sentence_labels=[LabelRecord(*lab) for lab in labels],
    )
    manifest = Manifest(format_version=FORMAT_VERSION, model_name=encoder.name, model_path=str(encoder.path),
                        model_fingerprint=model_fingerprint(encoder.path), dim=dim,
                        counts={"reports": n_reports, "sentences": n, "sections": 0},
                        lexicon="packaged:chest_xray")
    write_generation(workdir / "million", data, manifest)
    del data
    rows.append((f"synthetic index: {n:,} sentence vectors written", f"{time.perf_counter() - t:.0f} s", ""))

    idx = Index.open(workdir / "million", encoder=encoder)
    matrix = np.ascontiguousarray(idx.store.units("sentence").vectors)  # the same vectors, in RAM
    queries = (QUERIES * ((n_queries // len(QUERIES)) + 1))[:n_queries]
    qvecs = {q: encoder.encode_query(q) for q in QUERIES}
    for q in QUERIES[:3]:  # warm: page in the memory map, load BM25
        idx.search(q, mode="hybrid")
        matrix @ qvecs[q]
    plain = time_calls(lambda q: matrix @ qvecs[q], queries, 1)
    dense_vec = time_calls(lambda q: idx.search(q, k=10, mode="dense", query_vector=qvecs[q]), queries, 1)
    dense = time_calls(lambda q: idx.search(q, k=10, mode="dense"), queries, 1)
    p_plain = percentile(plain, 50)
    rows.append((f"{n:,}: plain numpy matrix @ vector", f"p50 {p_plain:.1f} ms, p95 {percentile(plain, 95):.1f} ms",
                 ""))
    rows.append((f"{n:,}: search dense, query encoded in the call",
                 f"p50 {percentile(dense, 50):.1f} ms, p95 {percentile(dense, 95):.1f} ms "
                 f"(ratio to plain {percentile(dense, 50) / p_plain:.2f}x)", "<= 2x"))
    rows.append((f"{n:,}: search dense, query vector given",
                 f"p50 {percentile(dense_vec, 50):.1f} ms, p95 {percentile(dense_vec, 95):.1f} ms "
                 f"(ratio {percentile(dense_vec, 50) / p_plain:.2f}x)", ""))
    for mode in ("bm25", "hybrid"):
        lat = time_calls(lambda q: idx.search(q, k=10, mode=mode), queries, 1)
        rows.append((f"{n:,}: search {mode}", f"p50 {percentile(lat, 50):.1f} ms, p95 {percentile(lat, 95):.1f} ms",
                     ""))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--openi", type=Path, default=DEFAULT_OPENI)
    ap.add_argument("--million", type=int, default=1_000_000, help="synthetic sentence vectors (0 to skip)")
    ap.add_argument("--queries", type=int, default=50)
    args = ap.parse_args(argv)
    import torch

    rows: list[tuple[str, ...]] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.openi.exists():
            bench_openi(args.openi, work, rows, args.queries)
        else:
            print(f"skipping Open-i: {args.openi} not found (../shared/data is absent)", file=sys.stderr)
        if args.million:
            bench_million(args.million, work, rows, args.queries)
    rows.append(("peak resident memory", f"{peak_mb():,.0f} MB", ""))
    print(f"\nradsift foundation benchmark (torch threads: {torch.get_num_threads()})\n")
    print("| measure | result | target |\n|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
