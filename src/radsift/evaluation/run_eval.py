"""Scoring a TREC run file against a qrels file: what ``radsift eval`` does.

:func:`evaluate_run_file` reads both files, checks that they talk about the same queries and
returns a :class:`RunEvaluation` that renders as a rich table or a JSON-ready dict.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from rich.table import Table

from radsift.evaluation.errors import EvaluationError
from radsift.evaluation.metrics import DEFAULT_METRICS, evaluate, parse_metric
from radsift.evaluation.trec import read_qrels, read_run


@dataclass(frozen=True)
class RunEvaluation:
    """Metrics of one run against one qrels file.

    Attributes:
        qrels_path: The qrels file.
        run_path: The run file.
        metrics: Metric names, in column order.
        per_query: ``per_query[qid][metric]`` for every qrels query.
        mean: ``mean[metric]`` over the qrels queries.
        unanswered: Qrels queries the run has no line for (they score 0).
        unjudged: Run queries absent from the qrels (not scored).
    """

    qrels_path: Path
    run_path: Path
    metrics: tuple[str, ...]
    per_query: dict[str, dict[str, float]]
    mean: dict[str, float]
    unanswered: tuple[str, ...] = ()
    unjudged: tuple[str, ...] = ()

    def to_dict(self, per_query: bool = True) -> dict[str, Any]:
        """A JSON-ready summary (per-query scores included unless ``per_query`` is False)."""
        out: dict[str, Any] = {
            "qrels": str(self.qrels_path),
            "run": str(self.run_path),
            "queries": len(self.per_query),
            "metrics": list(self.metrics),
            "mean": dict(self.mean),
            "unanswered_queries": list(self.unanswered),
            "unjudged_queries": list(self.unjudged),
        }
        if per_query:
            out["per_query"] = {qid: dict(scores) for qid, scores in self.per_query.items()}
        return out

    def table(self, per_query: bool = True, digits: int = 4) -> Table:
        """A rich table: one row per query (optional) and a final row with the means."""
        table = Table(title=f"{self.run_path.name} vs {self.qrels_path.name}")
        table.add_column("query", style="bold")
        for name in self.metrics:
            table.add_column(parse_metric(name).label, justify="right")
        if per_query:
            for qid, scores in self.per_query.items():
                table.add_row(qid, *(f"{scores[m]:.{digits}f}" for m in self.metrics))
            table.add_section()
        table.add_row(
            f"mean ({len(self.per_query)} queries)",
            *(f"{self.mean[m]:.{digits}f}" for m in self.metrics),
            style="bold",
        )
        return table


def evaluate_run_file(
    qrels_path: str | os.PathLike[str],
    run_path: str | os.PathLike[str],
    metrics: Iterable[str] = DEFAULT_METRICS,
) -> RunEvaluation:
    """Read a qrels file and a run file and score the run (see :func:`~radsift.evaluation.metrics.evaluate`).

    Args:
        qrels_path: TREC qrels (``qid 0 docid rel``).
        run_path: TREC run (``qid Q0 docid rank score tag``).
        metrics: Metric names.

    Raises:
        TrecFormatError: Either file is missing or malformed (the message names file and line).
        EvaluationError: The run answers none of the qrels queries (ids probably do not match),
            or a metric name is unknown.
    """
    metrics = tuple(metrics)
    for name in metrics:
        parse_metric(name)  # fail on a bad name before reading large files
    qrels_path, run_path = Path(qrels_path), Path(run_path)
    qrels = read_qrels(qrels_path)
    run = read_run(run_path)
    common = qrels.keys() & run.keys()
    if not common:
        raise EvaluationError(
            f"{run_path}: no query in common with {qrels_path} "
            f"(run ids such as {_sample(run)}; qrels ids such as {_sample(qrels)})"
        )
    per_query, mean = evaluate(qrels, run, metrics)
    return RunEvaluation(
        qrels_path=qrels_path,
        run_path=run_path,
        metrics=metrics,
        per_query=per_query,
        mean=mean,
        unanswered=tuple(q for q in qrels if q not in run),
        unjudged=tuple(q for q in run if q not in qrels),
    )


def _sample(ids: Iterable[str], n: int = 3) -> str:
    out = []
    for qid in ids:
        out.append(repr(qid))
        if len(out) == n:
            break
    return ", ".join(out)
