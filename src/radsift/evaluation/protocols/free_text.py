"""Free-text queries with relevance judgments (RadSearch's free-text query evaluation).

A file of queries (``qid<TAB>query``) and TREC qrels (``qid 0 report_id relevance``) judge
report-level retrieval: each query ranks all reports of the corpus, a report scored by its
best-matching sentence (as ``radsift search --level report`` ranks them).

Precision at 10 is reported two ways:

- pooled: every query contributes its 10 top-10 decisions (a retrieved report judged relevant
  or not; unjudged reports count as not relevant, and a query with fewer than 10 retrieved
  reports counts its empty slots as misses). P@10 = relevant decisions / (10 × queries), which
  equals the mean of the per-query P@10, with a Wilson 95% interval over the 10 × queries
  decisions. The decisions of one query are not independent, so this interval is narrower
  than it should be when queries differ a lot;
- per query: the same mean with a t-based 95% interval over queries (each query one value).

mAP, nDCG@10 and MRR come with it, and paired randomization tests on per-query P@10 and AP
compare the systems (Bonferroni-corrected). The demo corpus ships such a file:
``radsift demo-corpus`` writes ``queries.tsv`` and ``qrels.trec`` from the generator's ground
truth (not from the labeler).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Mapping, Sequence

from radsift.evaluation.errors import EvaluationError
from radsift.evaluation.metrics import evaluate
from radsift.evaluation.protocols.base import (
    Log,
    ProtocolResult,
    Table,
    docid_run,
    mean_ci,
    mean_pr_curve,
    no_log,
    num,
    paired_comparisons,
    skipped,
    with_ci,
)
from radsift.evaluation.stats import wilson_interval
from radsift.text import report_sentences

KEY = "free_text_queries"
TITLE = "Free-text queries (RadSearch)"
METRICS = ("p@10", "map", "ndcg@10", "mrr")


def check_judgments(queries: Mapping[str, str], qrels: Mapping[str, Mapping[str, int]], report_ids: set[str],
                    queries_path: str | Path = "queries", qrels_path: str | Path = "qrels") -> list[str]:
    """Check qrels against the queries and the corpus.

    Returns:
        Query ids of the queries file that have no judgment (they are not scored).

    Raises:
        EvaluationError: A qrels query is not in the queries file, or a judged document is not
            a report id of the corpus (the message names the file, the query and the id).
    """
    for qid, judgments in qrels.items():
        if qid not in queries:
            raise EvaluationError(f"{qrels_path}: query {qid!r} is not in {queries_path}")
        for docid in judgments:
            if docid not in report_ids:
                raise EvaluationError(
                    f"{qrels_path}: document {docid!r} (query {qid!r}) is not a report id of the corpus"
                )
    return [qid for qid in queries if qid not in qrels]


def run_free_text(reports: Sequence, systems: Sequence, queries: Mapping[str, str],
                  qrels: Mapping[str, Mapping[str, int]], *, source: str = "", max_queries: int | None = None,
                  seed: int = 0, log: Log = no_log) -> ProtocolResult:
    """Report-level retrieval for judged free-text queries.

    Args:
        reports: The corpus's reports (the candidates).
        systems: Systems under test.
        queries: Query id -> text (as :func:`radsift.evaluation.read_queries` returns).
        qrels: Query id -> {report id: relevance} (checked with :func:`check_judgments` first).
        source: The files' names, for the report.
        max_queries: Evaluate a seeded sample of at most this many judged queries.
        seed: Seed of the sample and of the tests.
    """
    import random

    t0 = time.perf_counter()
    unjudged = check_judgments(queries, qrels, {r.id for r in reports})
    qids = [q for q in queries if q in qrels]
    if not qids:
        return skipped(KEY, TITLE, "no query of the queries file has a judgment in the qrels")
    if max_queries is not None and len(qids) > max_queries:
        keep = set(random.Random(seed).sample(qids, max_queries))
        qids = [q for q in qids if q in keep]
    report_ids = [r.id for r in reports]
    texts: list[str] = []
    groups: list[int] = []
    for i, report in enumerate(reports):
        for sent in report_sentences(report):
            texts.append(sent.text)
            groups.append(i)
    judged = {q: qrels[q] for q in qids}
    per_system, summary, curves = {}, {}, {}
    for system in systems:
        log(f"  {system.name}: {len(qids)} queries over {len(reports)} reports ({len(texts)} sentences)")
        rankings = system.rank([queries[q] for q in qids], texts, k=None, groups=groups)
        run = docid_run(qids, rankings, report_ids)
        per_query, mean = evaluate(judged, run, METRICS)
        relevant_top10 = sum(sum(1 for d in run[q][:10] if judged[q].get(d, 0) > 0) for q in qids)
        decisions = 10 * len(qids)
        low, high = wilson_interval(relevant_top10, decisions)
        per_system[system.name] = per_query
        curves[system.name] = {"all": mean_pr_curve(run, judged, qids)}
        summary[system.name] = {
            "p@10_pooled": {"rate": relevant_top10 / decisions, "low": low, "high": high,
                            "relevant": relevant_top10, "decisions": decisions},
            "p@10_per_query": mean_ci([per_query[q]["p@10"] for q in qids]),
            "map": mean_ci([per_query[q]["map"] for q in qids]),
            "ndcg@10": mean["ndcg@10"],
            "mrr": mean["mrr"],
        }
    rows = []
    for name, s in summary.items():
        pooled, pq, m = s["p@10_pooled"], s["p@10_per_query"], s["map"]
        rows.append([name, f"{num(pooled['rate'])} [{num(pooled['low'])}, {num(pooled['high'])}]",
                     with_ci(pq["mean"], pq["low"], pq["high"]), with_ci(m["mean"], m["low"], m["high"]),
                     num(s["ndcg@10"]), num(s["mrr"])])
    result = ProtocolResult(
        key=KEY,
        title=TITLE,
        description=(
            f"{len(qids)} judged free-text queries{f' ({source})' if source else ''} each rank all "
            f"{len(reports)} reports (a report scored by its best sentence). Pooled P@10 = relevant top-10 "
            "decisions / (10 × queries), with a Wilson interval over those decisions (optimistic: decisions "
            "of one query are correlated); the per-query column gives a t interval over queries."
        ),
        tables=[Table(
            title="Precision at 10 and ranking metrics",
            columns=["system", "P@10 pooled [Wilson 95%]", "P@10 per query [t 95%]", "mAP [t 95%]", "nDCG@10", "MRR"],
            rows=rows,
            note=f"{len(unjudged)} queries of the file have no judgment and are not scored." if unjudged else "",
        )],
    )
    pair_rows = {}
    for metric, label in (("p@10", "P@10"), ("map", "AP")):
        table, tests = paired_comparisons({n: [pq[q][metric] for q in qids] for n, pq in per_system.items()},
                                          label, seed=seed)
        if table:
            result.tables.append(table)
            pair_rows[metric] = tests
    if unjudged:
        result.notes.append(f"not judged, not scored: {', '.join(unjudged[:20])}{' ...' if len(unjudged) > 20 else ''}")
    result.data = {"queries": len(qids), "reports": len(reports), "unjudged_queries": unjudged, "summary": summary,
                   "paired_tests": pair_rows, "per_query": per_system}
    result.plots = {"pr": curves}
    result.seconds = time.perf_counter() - t0
    return result

