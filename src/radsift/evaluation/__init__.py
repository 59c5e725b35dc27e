"""Measuring retrieval: TREC files, ranking metrics and statistics.

- :mod:`radsift.evaluation.trec`: read queries, runs and qrels; write runs and qrels.
- :mod:`radsift.evaluation.metrics`: AP, P@k, R@k, recall at R, nDCG@k, RR, hit@k and
  :func:`evaluate` (conventions of ranx, checked against it in the tests).
- :mod:`radsift.evaluation.stats`: Wilson intervals, McNemar, Bonferroni, t intervals, paired
  randomization test (imports scipy; import it explicitly).
- :mod:`radsift.evaluation.run_eval`: score a run file against a qrels file (``radsift eval``).
- :mod:`radsift.evaluation.splits`: the report hold-out and the split by finding, shared with
  training (:func:`report_split`, :func:`fold_findings`).
- :mod:`radsift.evaluation.bench` (``radsift bench``): the protocols of Shi et al. and RadSearch
  (:mod:`radsift.evaluation.protocols`) for the systems of :mod:`radsift.evaluation.systems`,
  written up by :mod:`radsift.evaluation.report` and :mod:`radsift.evaluation.plots`.
"""

from radsift.evaluation.errors import EvaluationError, TrecFormatError
from radsift.evaluation.metrics import DEFAULT_METRICS, evaluate, parse_metric
from radsift.evaluation.ranking import rank_entries
from radsift.splits import fold_findings, report_split
from radsift.evaluation.trec import read_qrels, read_queries, read_run, write_qrels, write_run

__all__ = [
    "DEFAULT_METRICS",
    "EvaluationError",
    "TrecFormatError",
    "evaluate",
    "fold_findings",
    "parse_metric",
    "rank_entries",
    "read_qrels",
    "read_queries",
    "read_run",
    "report_split",
    "write_qrels",
    "write_run",
]
