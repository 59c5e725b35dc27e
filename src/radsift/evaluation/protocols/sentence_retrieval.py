"""Shi et al.'s sentence retrieval, judged by the weak labels (Tables 1 and 2).

Shi, Syeda-Mahmood & Baldwin, "Improving Neural Models for Radiology Report Retrieval with
Lexicon-based Automated Annotation", NAACL 2022. Every finding the lexicon detects makes a
positive query ("pleural effusion") and, when it is ruled out somewhere, a negative one
("no pleural effusion"); a unique sentence is relevant to a query when the labeler gave it
that label. Each query ranks *all* unique sentences (labeled or not), and the protocol reports

- mAP: average precision over the full ranking, averaged over queries;
- mean recall: for each query, relevant sentences among the top R divided by R, where R is
  the size of its ground-truth list (``recall@R``, i.e. R-precision), averaged over queries;

for positive queries, negative queries and all of them. The 2-fold split by finding
(:func:`radsift.splits.fold_findings`) is shown as a per-fold table: the test
queries of fold ``f`` are those whose finding is in group ``f``, unseen by a model trained on
fold ``f``. Queries are sentence-level and use their plain text (``Query.text``).

Judging by the weak labels means judging by the labeler: a sentence the labeler misreads is
misjudged. Plain systems never see the labels, so their judgement is not circular; a
``KIND+negation`` system demotes by the same labeler that makes the qrels, so its figure here is
circular (an upper bound of what the labels let it do), not evidence.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

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

KEY = "shi_sentence_retrieval"
TITLE = "Sentence retrieval judged by weak labels (Shi et al. 2022, Tables 1–2)"
METRICS = ("map", "recall@R")
GROUPS = (("positive", "yes"), ("negative", "no"), ("all", None))


def select_queries(weak, findings: set[str] | None = None, max_queries: int | None = None,
                   seed: int = 0) -> list:
    """The weak-label queries to evaluate: optionally only some findings, optionally a seeded sample.

    Returns:
        :class:`radsift.labels.Query` objects in sorted order.
    """
    import random

    queries = [q for q in weak.queries if findings is None or q.finding in findings]
    if max_queries is not None and len(queries) > max_queries:
        queries = sorted(random.Random(seed).sample(queries, max_queries))
    return queries


def retrieval_over_sentences(candidates_weak, queries: Sequence, systems: Sequence, *,
                             log: Log = no_log) -> dict[str, Any]:
    """Rank every unique sentence of ``candidates_weak`` for each query, with every system.

    Args:
        candidates_weak: :class:`~radsift.labels.WeakLabels` whose unique sentences are the
            candidates and whose labels are the judgments.
        queries: :class:`~radsift.labels.Query` objects; those without a relevant sentence
            in ``candidates_weak`` are dropped.
        systems: The systems.

    Returns:
        ``{"queries": [Query], "qrels": {...}, "per_system": {name: {"per_query": {qid: {metric: value}},
        "pr": {group: curve}}}}``.
    """
    table = candidates_weak.queries
    kept = [q for q in queries if table.get(q)]
    ids = [s.id for s in candidates_weak.sentences]
    texts = [s.text for s in candidates_weak.sentences]
    qrels = {q.qid: {sid: 1 for sid in table[q]} for q in kept}
    qids = [q.qid for q in kept]
    per_system: dict[str, Any] = {}
    for system in systems:
        log(f"  {system.name}: {len(kept)} queries over {len(texts)} unique sentences")
        rankings = system.rank([q.text for q in kept], texts, k=None)
        run = docid_run(qids, rankings, ids)
        per_query, _ = evaluate(qrels, run, METRICS)
        curves = {}
        for group, polarity in GROUPS:
            members = [q.qid for q in kept if polarity is None or q.polarity == polarity]
            curves[group] = mean_pr_curve(run, qrels, members)
        per_system[system.name] = {"per_query": per_query, "pr": curves}
    return {"queries": kept, "qrels": qrels, "per_system": per_system}


def summarize(queries: Sequence, per_query: dict[str, dict[str, float]]) -> dict[str, dict[str, Any]]:
    """mAP and mean recall@R (with t intervals) for positive, negative and all queries."""
    out: dict[str, dict[str, Any]] = {}
    for group, polarity in GROUPS:
        members = [q.qid for q in queries if polarity is None or q.polarity == polarity]
        out[group] = {
            "n": len(members),
            "map": mean_ci([per_query[q]["map"] for q in members]),
            "recall@R": mean_ci([per_query[q]["recall@R"] for q in members]),
        }
    return out


def metric_table(title: str, summaries: dict[str, dict[str, Any]], note: str = "") -> Table:
    """One row per system: mAP and mean recall for positive / negative / all queries (Table 1/2 shape)."""
    first = next(iter(summaries.values()))
    cols = ["system"]
    for metric in ("mAP", "recall"):
        for group, _ in GROUPS:
            cols.append(f"{metric} {group} (n={first[group]['n']})")
    rows = []
    for name, s in summaries.items():
        row: list[Any] = [name]
        for metric in ("map", "recall@R"):
            for group, _ in GROUPS:
                row.append(num(s[group][metric]["mean"]))
        rows.append(row)
    return Table(title=title, columns=cols, rows=rows, note=note)


def ci_table(title: str, summaries: dict[str, dict[str, Any]]) -> Table:
    rows = []
    for name, s in summaries.items():
        a = s["all"]
        rows.append([name, with_ci(a["map"]["mean"], a["map"]["low"], a["map"]["high"]),
                     with_ci(a["recall@R"]["mean"], a["recall@R"]["low"], a["recall@R"]["high"]), a["n"]])
    return Table(title=title, columns=["system", "mAP [95% CI]", "recall [95% CI]", "queries"], rows=rows,
                 note="t-based 95% intervals over queries (each query counts once).")


def run_sentence_retrieval(weak, systems: Sequence, *, fold_groups: list[set[str]] | None = None,
                           fold: int | None = None, max_queries: int | None = None, seed: int = 0,
                           log: Log = no_log) -> ProtocolResult:
    """Shi et al.'s sentence retrieval over the unique sentences of ``weak``.

    Args:
        weak: The corpus's :class:`~radsift.labels.WeakLabels`.
        systems: Systems under test.
        fold_groups: The split by finding (``split_findings(weak, 2, seed)``), for the per-fold table.
        fold: Evaluate only the test queries of this fold (None = all queries).
        max_queries: Evaluate a seeded sample of at most this many queries.
        seed: Seed of the sample and of the randomization tests.
    """
    t0 = time.perf_counter()
    findings = fold_groups[fold] if fold is not None and fold_groups is not None else None
    queries = select_queries(weak, findings, max_queries, seed)
    if not queries:
        return skipped(KEY, TITLE, "no weak-label query (the labeler found no finding in the corpus)")
    res = retrieval_over_sentences(weak, queries, systems, log=log)
    kept = res["queries"]
    summaries = {name: summarize(kept, s["per_query"]) for name, s in res["per_system"].items()}
    scope = "all queries" if fold is None else f"test queries of fold {fold}"
    result = ProtocolResult(
        key=KEY,
        title=TITLE,
        description=(
            f"{len(kept)} weak-label queries ({scope}) each rank all {len(weak.sentences)} unique sentences of the "
            "corpus; a sentence is relevant when the labeler gave it the query's label. "
            "mAP is over the full ranking; recall is recall at R (R = the query's number of relevant sentences)."
        ),
    )
    result.tables.append(metric_table("mAP and mean recall by query polarity", summaries))
    result.tables.append(ci_table("All queries, with 95% confidence intervals", summaries))
    ap = {name: [s["per_query"][q.qid]["map"] for q in kept] for name, s in res["per_system"].items()}
    pair_table, pair_rows = paired_comparisons(ap, "AP", seed=seed)
    if pair_table:
        result.tables.append(pair_table)
    fold_rows = []
    if fold_groups:
        folds = range(len(fold_groups)) if fold is None else [fold]
        for f in folds:
            members = [q for q in kept if q.finding in fold_groups[f]]
            for name, s in res["per_system"].items():
                sub = summarize(members, s["per_query"]) if members else None
                fold_rows.append([f, name] + ([num(sub[g]["map"]["mean"]) for g, _ in GROUPS] if sub else ["n/a"] * 3)
                                 + [len(members)])
        result.tables.append(Table(
            title="Split by finding: mAP on each fold's test queries",
            columns=["fold", "system", "mAP positive", "mAP negative", "mAP all", "queries"],
            rows=fold_rows,
            note="Findings are split in two halves with about equal labeled entries (radsift.labels.split_findings); "
                 "a model trained on fold f's training findings is judged on fold f's test queries "
                 "(radsift bench --fold f).",
        ))
    result.data = {
        "queries": len(kept),
        "candidates": len(weak.sentences),
        "fold": fold,
        "folds": [sorted(g) for g in fold_groups] if fold_groups else None,
        "summary": summaries,
        "paired_tests": pair_rows,
        "per_query": {name: s["per_query"] for name, s in res["per_system"].items()},
    }
    result.plots = {
        "pr": {name: s["pr"] for name, s in res["per_system"].items()},
        "finding_ap": finding_ap(kept, res["per_system"], weak),
    }
    result.seconds = time.perf_counter() - t0
    return result


def finding_ap(queries: Sequence, per_system: dict[str, Any], weak) -> dict[str, Any]:
    """Per-finding AP of the positive and the negative query (for the bar plot)."""
    counts = weak.entry_counts()
    by_finding: dict[str, dict[str, str]] = {}
    for q in queries:
        by_finding.setdefault(q.finding, {})[q.polarity] = q.qid
    findings = sorted(by_finding, key=lambda f: (-counts.get(f, 0), f))
    return {
        "findings": findings,
        "entries": [counts.get(f, 0) for f in findings],
        "systems": {
            name: {
                "positive": [s["per_query"][by_finding[f]["yes"]]["map"] if "yes" in by_finding[f] else None
                             for f in findings],
                "negative": [s["per_query"][by_finding[f]["no"]]["map"] if "no" in by_finding[f] else None
                             for f in findings],
            }
            for name, s in per_system.items()
        },
    }
