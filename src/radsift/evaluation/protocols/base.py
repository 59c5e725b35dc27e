"""What every protocol returns, and the small pieces they share.

A protocol runs every system on the same queries and candidates and returns a
:class:`ProtocolResult`: tables (rendered into ``report.md`` and ``report.json``), JSON-ready
details, and in-memory data for the plots. Metrics come from :func:`radsift.evaluation.evaluate`
(checked against ranx in the tests) and statistics from :mod:`radsift.evaluation.stats`;
nothing here re-implements them.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from radsift.evaluation.stats import bonferroni, mean_interval, paired_randomization_test

# Recall levels of the interpolated precision-recall curves (0, 0.05, ..., 1).
RECALL_LEVELS = np.round(np.linspace(0.0, 1.0, 21), 2)

Log = Callable[[str], None]


def no_log(message: str) -> None:  # noqa: ARG001 - the default logger says nothing
    """A logger that discards messages."""


@dataclass
class Table:
    """A table of the report.

    Attributes:
        title: Heading shown above the table.
        columns: Column headers.
        rows: Cells (numbers are formatted by the renderer; strings are shown as given).
        note: A sentence under the table (definitions, caveats).
    """

    title: str
    columns: list[str]
    rows: list[list[Any]]
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "columns": list(self.columns), "rows": [list(r) for r in self.rows],
                "note": self.note}


@dataclass
class ProtocolResult:
    """The outcome of one protocol.

    Attributes:
        key: Machine name (``shi_sentence_retrieval``, ``findings_to_impression`` ...).
        title: Heading in the report.
        description: What was measured and how (markdown, a few sentences).
        tables: The tables, in order.
        data: JSON-ready details (per-system summaries, per-query scores).
        plots: Data for :mod:`radsift.evaluation.plots` (not written to JSON).
        notes: Caveats and counts worth a line in the report.
        skipped: Why the protocol did not run (then tables are empty).
        seconds: Wall time of the protocol.
    """

    key: str
    title: str
    description: str = ""
    tables: list[Table] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    plots: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    skipped: str | None = None
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key, "title": self.title, "description": self.description,
                               "seconds": round(self.seconds, 2)}
        if self.skipped:
            out["skipped"] = self.skipped
            return out
        out["tables"] = [t.to_dict() for t in self.tables]
        out["notes"] = list(self.notes)
        out["data"] = self.data
        return out


def skipped(key: str, title: str, reason: str) -> ProtocolResult:
    """A protocol that did not run, with the reason shown in the report."""
    return ProtocolResult(key=key, title=title, skipped=reason)


# ---------------------------------------------------------------------------------------------
# Runs and curves
# ---------------------------------------------------------------------------------------------
def docid_run(qids: Sequence[str], rankings: Sequence[Sequence[tuple[int, float]]],
              docids: Sequence[str]) -> dict[str, list[str]]:
    """Turn per-query ``(index, score)`` rankings into ``{qid: [docid, ...]}`` in rank order."""
    return {qid: [docids[i] for i, _ in ranking] for qid, ranking in zip(qids, rankings)}


def interpolated_precision(ranked: Sequence[str], relevant: set[str] | Mapping[str, int],
                           levels: np.ndarray = RECALL_LEVELS) -> np.ndarray:
    """Interpolated precision of one ranking at each recall level.

    ``p_interp(r) = max{precision at rank i : recall at rank i >= r}`` (Manning, Raghavan &
    Schütze, *Introduction to IR*, section 8.4), 0 where the level is never reached. Only for
    the precision-recall plots; the reported numbers come from :func:`radsift.evaluation.evaluate`.
    """
    rel = {d for d, g in relevant.items() if g > 0} if isinstance(relevant, Mapping) else set(relevant)
    out = np.zeros(len(levels), dtype=np.float64)
    if not rel or not len(ranked):
        return out
    hits = np.fromiter((d in rel for d in ranked), dtype=bool, count=len(ranked))
    cum = np.cumsum(hits)
    ranks = np.arange(1, len(ranked) + 1)
    precision = cum / ranks
    recall = cum / len(rel)
    # Best precision at or after each rank (suffix maximum), read at the first rank reaching r.
    best_after = np.maximum.accumulate(precision[::-1])[::-1]
    first = np.searchsorted(recall, levels - 1e-12, side="left")
    reached = first < len(ranked)
    out[reached] = best_after[first[reached]]
    return out


def mean_pr_curve(run: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]],
                  qids: Sequence[str] | None = None) -> list[float]:
    """Interpolated precision at :data:`RECALL_LEVELS`, averaged over ``qids`` (default: all qrels)."""
    qids = list(qrels) if qids is None else list(qids)
    if not qids:
        return [math.nan] * len(RECALL_LEVELS)
    curves = [interpolated_precision(run.get(q, []), qrels[q]) for q in qids]
    return np.mean(curves, axis=0).round(4).tolist()


# ---------------------------------------------------------------------------------------------
# Statistics over systems
# ---------------------------------------------------------------------------------------------
def mean_ci(values: Sequence[float]) -> dict[str, float]:
    """Mean and t-based 95% interval (``nan`` bounds for fewer than 2 values)."""
    if not len(values):
        return {"mean": math.nan, "low": math.nan, "high": math.nan, "n": 0}
    mi = mean_interval(values)
    return {"mean": mi.mean, "low": mi.low, "high": mi.high, "n": mi.n}


def paired_comparisons(per_system: Mapping[str, Sequence[float]], metric: str,
                       seed: int = 0) -> tuple[Table | None, list[dict[str, Any]]]:
    """Paired randomization tests between every pair of systems, Bonferroni-corrected.

    Args:
        per_system: System name -> per-query scores, the same queries in the same order.
        metric: The metric's label (for the table).
        seed: Seed of the randomization test.

    Returns:
        ``(table, rows)``; the table is None with fewer than two systems.
    """
    names = list(per_system)
    pairs = list(itertools.combinations(names, 2))
    if not pairs:
        return None, []
    results = [paired_randomization_test(per_system[a], per_system[b], seed=seed) for a, b in pairs]
    adjusted = bonferroni([r.p_value for r in results], m=len(pairs))
    rows = []
    for (a, b), r, p_adj in zip(pairs, results, adjusted):
        rows.append({"a": a, "b": b, "mean_difference": r.mean_difference, "p": r.p_value,
                     "p_bonferroni": p_adj, "n": r.n, "test": "paired randomization"})
    table = Table(
        title=f"Paired randomization tests on per-query {metric} (Bonferroni, m = {len(pairs)})",
        columns=["A", "B", f"mean {metric} A − B", "p", "p (Bonferroni)", "queries"],
        rows=[[r["a"], r["b"], signed(r["mean_difference"]), pvalue(r["p"]), pvalue(r["p_bonferroni"]), r["n"]]
              for r in rows],
        note="Two-sided sign-flip test on the per-query differences (10,000 resamples, seeded); "
             "significant at 0.05 when the Bonferroni-adjusted p is below 0.05.",
    )
    return table, rows


# ---------------------------------------------------------------------------------------------
# Formatting (tables hold strings so that markdown and JSON show the same text)
# ---------------------------------------------------------------------------------------------
def num(x: float | None, digits: int = 3) -> str:
    """A number with ``digits`` decimals, ``n/a`` for None or NaN."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.{digits}f}"


def signed(x: float, digits: int = 3) -> str:
    return "n/a" if x is None or math.isnan(x) else f"{x:+.{digits}f}"


def with_ci(mean: float, low: float, high: float, digits: int = 3) -> str:
    """``0.512 [0.480, 0.544]``."""
    if math.isnan(low) or math.isnan(high):
        return num(mean, digits)
    return f"{num(mean, digits)} [{num(low, digits)}, {num(high, digits)}]"


def pvalue(p: float) -> str:
    if p is None or math.isnan(p):
        return "n/a"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def percent(x: float, digits: int = 1) -> str:
    return "n/a" if x is None or math.isnan(x) else f"{100 * x:.{digits}f}%"
