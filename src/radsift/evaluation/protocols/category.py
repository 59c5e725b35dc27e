"""Category matching: does a report retrieve reports of its own category? (RadSearch's exam-type mAP, generalised)

RadSearch measures whether a report retrieves reports of the same examination type. Here
the category is any metadata field (``--category-field``; found automatically among
:data:`CATEGORY_FIELDS`, e.g. MTSamples ``medical_specialty`` or an ``exam`` column):

- queries are the held-out reports (:func:`radsift.splits.report_split`, the
  same as for findings-to-impression) that have a category; each query is the report's text;
- candidates are all other reports with a category. A candidate whose text equals the
  query's (case and spacing folded) is removed from that query's candidates: it is the same
  note filed twice (MTSamples files many notes under several specialties), not a retrieval;
- a retrieved report is relevant when *its* category equals the query report's category.
  Relevance is never decided by equal text, and queries whose category no other candidate
  has are dropped (counted);
- AP over the full ranking, averaged over queries, for each system separately on the same
  queries, with a t-based 95% interval over queries; a table of mAP per category; paired
  randomization tests between systems (Bonferroni).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from typing import Sequence

from radsift.evaluation.metrics import evaluate
from radsift.evaluation.protocols.base import (
    Log,
    ProtocolResult,
    Table,
    docid_run,
    mean_ci,
    no_log,
    num,
    paired_comparisons,
    skipped,
    with_ci,
)
from radsift.splits import is_held_out

KEY = "category_matching"
TITLE = "Category matching (RadSearch exam-type mAP, generalised)"
# Metadata fields tried, in order, when --category-field is not given.
CATEGORY_FIELDS = ("medical_specialty", "exam_type", "exam", "modality", "category", "specialty")


def category_of(report, field: str) -> str:
    return str(report.metadata.get(field, "") or "").strip()


def detect_category_field(reports: Sequence) -> str | None:
    """The first of :data:`CATEGORY_FIELDS` set in at least half the reports, with 2+ distinct values."""
    n = len(reports)
    for field in CATEGORY_FIELDS:
        values = [category_of(r, field) for r in reports]
        filled = [v for v in values if v]
        if n and len(filled) >= n / 2 and len(set(filled)) >= 2:
            return field
    return None


def _text_key(text: str) -> str:
    return " ".join(text.split()).casefold()


def run_category(reports: Sequence, systems: Sequence, *, field: str, holdout_fraction: float, seed: int,
                 max_queries: int | None = None, log: Log = no_log) -> ProtocolResult:
    """mAP of retrieving same-category reports, per system, on the held-out reports.

    Args:
        reports: The corpus's reports.
        systems: Systems under test.
        field: The metadata field holding the category.
        holdout_fraction: Share of held-out reports (the queries).
        seed: Split seed, sample seed and test seed.
        max_queries: Evaluate a seeded sample of at most this many held-out reports.
    """
    t0 = time.perf_counter()
    items = [(r.id, r.text(), category_of(r, field)) for r in reports]
    items = [it for it in items if it[1].strip() and it[2]]
    if not items:
        return skipped(KEY, TITLE, f"no report has a {field!r} value")
    counts = Counter(c for _, _, c in items)
    if len(counts) < 2:
        return skipped(KEY, TITLE, f"{field!r} has a single value ({next(iter(counts))!r}): nothing to tell apart")
    ids = [rid for rid, _, _ in items]
    texts = [t for _, t, _ in items]
    cats = [c for _, _, c in items]
    by_text: dict[str, list[int]] = {}
    for i, t in enumerate(texts):
        by_text.setdefault(_text_key(t), []).append(i)
    held = [i for i, rid in enumerate(ids) if is_held_out(rid, holdout_fraction, seed)]
    if max_queries is not None and len(held) > max_queries:
        held = sorted(random.Random(seed).sample(held, max_queries))
    by_cat: dict[str, list[int]] = {}
    for i, c in enumerate(cats):
        by_cat.setdefault(c, []).append(i)
    queries, exclude, qrels = [], [], {}
    dropped = 0
    for i in held:
        same_text = by_text[_text_key(texts[i])]
        drop = set(same_text)
        relevant = [j for j in by_cat[cats[i]] if j not in drop]
        if not relevant:
            dropped += 1
            continue
        queries.append(i)
        exclude.append(sorted(drop))
        qrels[ids[i]] = {ids[j]: 1 for j in relevant}
    if not queries:
        return skipped(KEY, TITLE, f"none of the {len(held)} held-out reports has another report of its {field!r}")
    qids = [ids[i] for i in queries]
    per_system, summary = {}, {}
    for system in systems:
        log(f"  {system.name}: {len(queries)} held-out reports over {len(items)} reports by {field!r}")
        rankings = system.rank([texts[i] for i in queries], texts, k=None, exclude=exclude)
        per_query, mean = evaluate(qrels, docid_run(qids, rankings, ids), ["map", "p@10"])
        per_system[system.name] = per_query
        summary[system.name] = {"map": mean_ci([per_query[q]["map"] for q in qids]), "p@10": mean["p@10"]}
    rows = [[name, with_ci(s["map"]["mean"], s["map"]["low"], s["map"]["high"]), num(s["p@10"]), len(qids)]
            for name, s in summary.items()]
    query_cats = Counter(cats[i] for i in queries)
    cat_rows = []
    for cat, n in sorted(query_cats.items(), key=lambda kv: (-kv[1], kv[0])):
        members = [ids[i] for i in queries if cats[i] == cat]
        cat_rows.append([cat, n, counts[cat]] + [num(sum(per_system[s][q]["map"] for q in members) / n)
                                                 for s in per_system])
    result = ProtocolResult(
        key=KEY,
        title=TITLE,
        description=(
            f"{len(queries)} held-out reports with a {field!r} (holdout fraction {holdout_fraction}, seed {seed}) "
            f"each rank the other {len(items) - 1} reports with one ({len(counts)} categories); relevant = the "
            "retrieved report has the query report's category. Candidates with the query's exact text are removed."
        ),
        tables=[
            Table(title=f"mAP of same-{field} retrieval [t 95% CI]", columns=["system", "mAP [95% CI]", "P@10", "queries"],
                  rows=rows, note="Each system's mean over the same queries; intervals over queries."),
            Table(title=f"mAP per {field}", columns=[field, "queries", "reports"] + list(per_system), rows=cat_rows),
        ],
    )
    if dropped:
        result.notes.append(f"{dropped} held-out reports dropped: no other report of their {field!r}")
    table, tests = paired_comparisons({n: [pq[q]["map"] for q in qids] for n, pq in per_system.items()}, "AP",
                                      seed=seed)
    if table:
        result.tables.append(table)
    result.data = {"field": field, "queries": len(queries), "candidates": len(items), "categories": dict(counts),
                   "dropped_queries": dropped, "summary": summary, "paired_tests": tests, "per_query": per_system}
    result.seconds = time.perf_counter() - t0
    return result
