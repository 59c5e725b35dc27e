"""Cross-collection retrieval: queries from one collection, retrieval over another (Shi et al. 2022).

Shi et al. show that a model trained on one collection's weak labels generalises "to unseen
queries and reports from different collections". Here the queries are the weak-label query
dictionary of the main corpus (what a model trained on it has seen), and each ranks the unique
sentences of the other collection (``--cross-corpus``, e.g. the MTSamples radiology notes),
judged by that collection's own weak labels (same lexicon, same labeler). Queries whose
finding never occurs with that polarity in the other collection cannot be scored and are
dropped (counted in the report). Metrics as in :mod:`.sentence_retrieval`.
"""

from __future__ import annotations

import time
from typing import Sequence

from radsift.evaluation.protocols.base import Log, ProtocolResult, no_log, paired_comparisons, skipped
from radsift.evaluation.protocols.sentence_retrieval import (
    ci_table,
    metric_table,
    retrieval_over_sentences,
    select_queries,
    summarize,
)

KEY = "cross_collection"
TITLE = "Cross-collection sentence retrieval (Shi et al. 2022)"


def run_cross_collection(weak, other_weak, systems: Sequence, *, other_name: str,
                         findings: set[str] | None = None, max_queries: int | None = None, seed: int = 0,
                         log: Log = no_log) -> ProtocolResult:
    """Queries of ``weak`` over the unique sentences of ``other_weak``.

    Args:
        weak: Weak labels of the main corpus (source of the queries).
        other_weak: Weak labels of the other collection (candidates and judgments).
        systems: Systems under test.
        other_name: How the other collection is named in the report.
        findings: Only queries of these findings (the test findings of ``--fold``).
        max_queries: Seeded sample size cap.
        seed: Seed of the sample and of the tests.
    """
    t0 = time.perf_counter()
    queries = select_queries(weak, findings, max_queries, seed)
    if not other_weak.sentences:
        return skipped(KEY, TITLE, f"{other_name}: no sentence to retrieve")
    res = retrieval_over_sentences(other_weak, queries, systems, log=log)
    kept = res["queries"]
    if not kept:
        return skipped(KEY, TITLE, f"none of the {len(queries)} queries has a relevant sentence in {other_name}")
    summaries = {name: summarize(kept, s["per_query"]) for name, s in res["per_system"].items()}
    result = ProtocolResult(
        key=KEY,
        title=TITLE,
        description=(
            f"Queries from the main corpus's weak labels rank the {len(other_weak.sentences)} unique sentences "
            f"of {other_name} ({other_weak.reports} reports), judged by that collection's own weak labels. "
            f"{len(kept)} of {len(queries)} queries have at least one relevant sentence there; the others are dropped."
        ),
    )
    result.tables.append(metric_table(f"Over {other_name}: mAP and mean recall by query polarity", summaries))
    result.tables.append(ci_table("All queries, with 95% confidence intervals", summaries))
    ap = {name: [s["per_query"][q.qid]["map"] for q in kept] for name, s in res["per_system"].items()}
    pair_table, pair_rows = paired_comparisons(ap, "AP", seed=seed)
    if pair_table:
        result.tables.append(pair_table)
    result.data = {
        "collection": other_name,
        "reports": other_weak.reports,
        "candidates": len(other_weak.sentences),
        "queries_asked": len(queries),
        "queries": len(kept),
        "summary": summaries,
        "paired_tests": pair_rows,
        "per_query": {name: s["per_query"] for name, s in res["per_system"].items()},
    }
    result.plots = {"pr": {name: s["pr"] for name, s in res["per_system"].items()}}
    result.seconds = time.perf_counter() - t0
    return result
