"""Measuring retrieval: TREC files, ranking metrics and statistics.

- :mod:`radsift.evaluation.trec`: read queries, runs and qrels; write runs and qrels.
- :mod:`radsift.evaluation.metrics`: AP, P@k, R@k, recall at R, nDCG@k, RR, hit@k and
  :func:`evaluate` (conventions of ranx, checked against it in the tests).
- :mod:`radsift.evaluation.stats`: Wilson intervals, McNemar, Bonferroni, t intervals, paired
  randomization test (imports scipy; import it explicitly).
- :mod:`radsift.evaluation.run_eval`: score a run file against a qrels file (``radsift eval``).
"""

from radsift.evaluation.errors import EvaluationError, TrecFormatError
from radsift.evaluation.metrics import DEFAULT_METRICS, evaluate, parse_metric
from radsift.evaluation.ranking import rank_entries
from radsift.evaluation.trec import read_qrels, read_queries, read_run, write_qrels, write_run

__all__ = [
    "DEFAULT_METRICS",
    "EvaluationError",
    "TrecFormatError",
    "evaluate",
    "parse_metric",
    "rank_entries",
    "read_qrels",
    "read_queries",
    "read_run",
    "write_qrels",
    "write_run",
]
