"""Findings-to-impression matching on held-out reports (RadSearch).

RadSearch (Radiology 2025, "RadSearch, a Semantic Search Model for Accurate Radiology Report
Retrieval with Large Language Model Integration") trains on findings/impression pairs of the
same report and tests whether a report's findings section retrieves its own impression among
the impressions of the test reports. Here:

- the test reports are the held-out reports of :func:`radsift.splits.report_split`
  (``--holdout-fraction``, ``--seed``), the same that ``radsift train`` holds out, restricted
  to reports with both a findings and an impression section;
- each findings section is a query over the *distinct* impressions of those reports (case,
  spacing and a final period folded): "No acute cardiopulmonary abnormality." is written by
  hundreds of reports, and a system cannot tell identical texts apart, so identical
  impressions form one candidate, and it is the right answer for every report that wrote it;
- a query is matched at k when its impression is in the top k; the top-1/5/10 match rates get
  Wilson 95% intervals, and each pair of systems a McNemar test on the same queries
  (exact below 25 discordant pairs, else continuity-corrected chi-square), Bonferroni-corrected
  over the pairs for each k.
"""

from __future__ import annotations

import itertools
import random
import time
from typing import Sequence

from radsift.evaluation.metrics import evaluate
from radsift.evaluation.protocols.base import (
    Log,
    ProtocolResult,
    Table,
    docid_run,
    no_log,
    num,
    percent,
    pvalue,
    skipped,
)
from radsift.evaluation.stats import bonferroni, mcnemar, wilson_interval
from radsift.labels.weak import normalize_sentence
from radsift.splits import is_held_out

KEY = "findings_to_impression"
TITLE = "Findings-to-impression matching on held-out reports (RadSearch)"
KS = (1, 5, 10)


def impression_key(text: str) -> str:
    """The identity of an impression: case, spacing and a final period folded."""
    return normalize_sentence(text)


def run_findings_to_impression(reports: Sequence, systems: Sequence, *, holdout_fraction: float, seed: int,
                               ks: Sequence[int] = KS, max_queries: int | None = None,
                               findings_section: str = "findings", impression_section: str = "impression",
                               log: Log = no_log) -> ProtocolResult:
    """Top-k match rates of findings -> own impression among the held-out reports' impressions.

    Args:
        reports: The corpus's reports.
        systems: Systems under test.
        holdout_fraction: Share of held-out reports (see :func:`~radsift.splits.report_split`).
        seed: Split seed (also the seed of the query sample).
        ks: Cutoffs of the match rates.
        max_queries: Evaluate a seeded sample of at most this many held-out findings (the
            candidates stay all held-out impressions).
    """
    t0 = time.perf_counter()
    pairs = [
        (r.id, r.sections[findings_section].strip(), r.sections[impression_section].strip())
        for r in reports
        if r.sections.get(findings_section, "").strip() and r.sections.get(impression_section, "").strip()
    ]
    if not pairs:
        return skipped(KEY, TITLE, f"no report has both a {findings_section!r} and an {impression_section!r} section")
    test = [p for p in pairs if is_held_out(p[0], holdout_fraction, seed)]
    if len(test) < 2:
        return skipped(KEY, TITLE, f"only {len(test)} of {len(pairs)} reports with both sections are held out "
                                   f"(--holdout-fraction {holdout_fraction})")
    keys: dict[str, int] = {}
    candidates: list[str] = []
    for _, _, impression in test:
        key = impression_key(impression)
        if key not in keys:
            keys[key] = len(candidates)
            candidates.append(impression)
    queries = test
    if max_queries is not None and len(queries) > max_queries:
        queries = sorted(random.Random(seed).sample(queries, max_queries))
    qids = [rid for rid, _, _ in queries]
    docids = [f"i{i}" for i in range(len(candidates))]
    qrels = {rid: {docids[keys[impression_key(imp)]]: 1} for rid, _, imp in queries}
    metrics = [f"hit@{k}" for k in ks] + ["mrr"]
    hits: dict[str, dict[int, list[bool]]] = {}
    summary: dict[str, dict[str, object]] = {}
    for system in systems:
        log(f"  {system.name}: {len(queries)} findings over {len(candidates)} distinct impressions")
        rankings = system.rank([f for _, f, _ in queries], candidates, k=None)
        per_query, mean = evaluate(qrels, docid_run(qids, rankings, docids), metrics)
        hits[system.name] = {k: [per_query[q][f"hit@{k}"] > 0 for q in qids] for k in ks}
        row: dict[str, object] = {"mrr": mean["mrr"]}
        for k in ks:
            s = sum(hits[system.name][k])
            low, high = wilson_interval(s, len(qids))
            row[f"top{k}"] = {"rate": s / len(qids), "low": low, "high": high, "matched": s}
        summary[system.name] = row
    rate_rows = [
        [name] + [f"{percent(s[f'top{k}']['rate'])} [{percent(s[f'top{k}']['low'])}, {percent(s[f'top{k}']['high'])}]"
                  for k in ks] + [num(s["mrr"])]
        for name, s in summary.items()
    ]
    result = ProtocolResult(
        key=KEY,
        title=TITLE,
        description=(
            f"{len(queries)} held-out reports (of {len(pairs)} with both sections; holdout fraction "
            f"{holdout_fraction}, seed {seed}): each findings section ranks the {len(candidates)} distinct "
            "impressions of the held-out reports; a match at k when its own impression is in the top k."
        ),
        tables=[Table(
            title="Top-k match rate [Wilson 95% CI]",
            columns=["system"] + [f"top-{k}" for k in ks] + ["MRR"],
            rows=rate_rows,
            note="Identical impressions (case, spacing and final period folded) are one candidate.",
        )],
    )
    tests, table = mcnemar_tests(hits, list(summary), ks)
    if table is not None:
        result.tables.append(table)
    result.data = {
        "held_out_reports": len(test),
        "reports_with_both_sections": len(pairs),
        "queries": len(queries),
        "candidates": len(candidates),
        "holdout_fraction": holdout_fraction,
        "seed": seed,
        "summary": summary,
        "mcnemar": tests,
        "held_out_ids": [rid for rid, _, _ in test],
    }
    result.plots = {"match_rates": {name: {k: summary[name][f"top{k}"] for k in ks} for name in summary}}
    result.seconds = time.perf_counter() - t0
    return result


def mcnemar_tests(hits: dict[str, dict[int, list[bool]]], names: Sequence[str],
                  ks: Sequence[int]) -> tuple[list[dict], Table | None]:
    """McNemar tests between every pair of systems at each cutoff, Bonferroni-corrected over the pairs.

    Args:
        hits: System -> cutoff -> one matched flag per query (the same queries for every system).
        names: The systems, in report order.
        ks: The cutoffs.

    Returns:
        ``(tests, table)``: one record per (cutoff, pair) and their table (None for a single system).
    """
    tests: list[dict] = []
    pairs_of_systems = list(itertools.combinations(names, 2))
    if not pairs_of_systems:
        return tests, None
    test_rows = []
    for k in ks:
        results = [mcnemar(hits[a][k], hits[b][k]) for a, b in pairs_of_systems]
        adjusted = bonferroni([r.p_value for r in results], m=len(pairs_of_systems))
        for (a, b), r, p_adj in zip(pairs_of_systems, results, adjusted):
            tests.append({"k": k, "a": a, "b": b, "a_only": r.b, "b_only": r.c, "statistic": r.statistic,
                          "p": r.p_value, "p_bonferroni": p_adj, "method": r.method})
            test_rows.append([f"top-{k}", a, b, r.b, r.c, r.method, pvalue(r.p_value), pvalue(p_adj)])
    return tests, Table(
        title=f"McNemar tests between systems (Bonferroni over {len(pairs_of_systems)} pair(s) per cutoff)",
        columns=["cutoff", "A", "B", "A only", "B only", "test", "p", "p (Bonferroni)"],
        rows=test_rows,
        note="'A only': queries matched by A and not by B. exact = binomial test on the discordant pairs "
             "(fewer than 25), chi2-cc = continuity-corrected chi-square.",
    )
