"""Search latency of one checkout, for an A/B against another (issue 19: counts and bands).

Run (idle machine; alternate the two, several times):
    .venv/bin/python benchmarks/ab_search_latency.py after
    PYTHONPATH=/path/to/other/checkout/src .venv/bin/python benchmarks/ab_search_latency.py before
on the Open-i index that benchmarks/bench_negation.py builds (/tmp/radsift-bench-negation/openi,
all-MiniLM-L6-v2): 15 queries x 4, k=10, report level, end to end (query encoding included);
prints p50 / p95 in ms per mode.
"""
import sys, time
import numpy as np
from radsift.search import Index
idx = Index.open("/tmp/radsift-bench-negation/openi")
Q = ["pneumothorax", "no pneumothorax", "pleural effusion", "no pleural effusion", "cardiomegaly", "enlarged heart",
     "right lower lobe consolidation", "pulmonary edema", "calcified granuloma", "endotracheal tube", "rib fracture",
     "hiatal hernia", "no acute cardiopulmonary abnormality", "tortuous aorta", "interstitial opacities"]
for q in Q: idx.search(q, k=10)
out = {}
for mode in ("hybrid", "bm25", "hybrid-rrf"):
    ts = []
    for rep in range(4):
        for q in Q:
            t = time.perf_counter(); idx.search(q, k=10, mode=mode); ts.append((time.perf_counter() - t) * 1000)
    out[mode] = (round(float(np.percentile(ts, 50)), 2), round(float(np.percentile(ts, 95)), 2))
print(sys.argv[1], out)
