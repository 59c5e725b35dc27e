"""Which window rule scores a long passage for a bi-encoder: mean of windows, best window, first window,
or the mean of mean and best. Chosen on the development split, then read once on the test split.

Run:  .venv/bin/python benchmarks/passage_windows.py dev|test [MODEL|-] [MAX_QUERIES]

Reads MedQuAD and its CDV test split from ../shared/data (skips with a message when absent). Every
window of every candidate passage is encoded once; the four rules are scored from the same vectors over
the passages protocol's candidates (BM25 top 64, no gold appended; the appended figures too). Prints the
protocol's per-rule log lines and a JSON of the figures.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from radsift.corpus.medquad_passages import load_cdv
from radsift.evaluation.bench_passages import load_dev
from radsift.evaluation.protocols.passage_retrieval import RULE_APPENDED, report_json, run_passages
from radsift.evaluation.systems.passage_systems import (DensePassages, PassageSystem, build_passage_systems,
                                                        parse_passage_system)

DATA = Path("../shared/data")
RULES = ("mean", "best", "first", "meanbest")


class WindowRule(PassageSystem):
    """One rule over the windows a shared :class:`DensePassages` holds (every window, encoded once)."""

    def __init__(self, rule: str, windows: DensePassages) -> None:
        self.name = self.rule = rule
        self.windows = windows

    def prepare(self, passages):  # the shared windows are prepared once
        pass

    def _score(self, matrix: np.ndarray, v: np.ndarray) -> float:
        sims = matrix @ v
        mean = matrix.mean(0)
        cos_mean = float(mean @ v / (np.linalg.norm(mean) + 1e-12))
        return {"best": float(sims.max()), "first": float(sims[0]), "mean": cos_mean,
                "meanbest": 0.5 * cos_mean + 0.5 * float(sims.max())}[self.rule]

    def score(self, queries, candidates):
        w = self.windows
        w._ensure(r for c in candidates for r in c)
        store = np.asarray(w._store, dtype=np.float32)
        uniq = list(dict.fromkeys(queries))
        qv = w.encoder.encode(uniq, batch_size=64)
        row = {q: i for i, q in enumerate(uniq)}
        return [np.asarray([self._score(store[w._rows[int(r)]], qv[row[q]]) for r in c], dtype=np.float32)
                for q, c in zip(queries, candidates)]


def main() -> None:
    split = sys.argv[1] if len(sys.argv) > 1 else "dev"
    model = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] != "-" else None
    max_queries = int(sys.argv[3]) if len(sys.argv) > 3 else None
    cdv, medquad = DATA / "medquad-cdv-test", DATA / "medquad"
    if not cdv.is_dir() or not medquad.is_dir():
        print(f"skipped: {cdv} or {medquad} not found")
        return
    data = load_cdv(cdv, medquad) if split == "test" else load_dev(cdv, medquad)
    print(f"{split}: {len(data.passages)} passages, {len(data.queries)} queries", flush=True)
    dense = build_passage_systems([parse_passage_system("dense:" + model if model else "dense")])[0]
    dense.prepare(data.passages)  # the benchmark's DensePassages keeps every window
    t0 = time.time()
    result = run_passages(data, [WindowRule(r, dense) for r in RULES], max_queries=max_queries,
                          log=lambda m: print(m, flush=True))
    counts = [len(v) for v in dense._rows.values()]
    print(json.dumps({"split": split, "model": model or "packaged", "primary": report_json(result),
                      "appended": report_json(result, RULE_APPENDED),
                      "windows_per_passage": round(float(np.mean(counts)), 3),
                      "share_over_one_window": round(float(np.mean(np.asarray(counts) > 1)), 3),
                      "seconds": round(time.time() - t0, 1)}, indent=1))


if __name__ == "__main__":
    main()
