"""Measuring retrieval: TREC files, ranking metrics and statistics.

- :mod:`radsift.evaluation.trec`: read queries, runs and qrels; write runs and qrels.
- :mod:`radsift.evaluation.metrics`: AP, P@k, R@k, recall at R, nDCG@k, RR, hit@k and
  :func:`evaluate` (conventions of ranx, checked against it in the tests).
- :mod:`radsift.evaluation.stats`: Wilson intervals, McNemar, Bonferroni, t intervals, paired
  randomization test (scipy, imported on first use).
- :mod:`radsift.evaluation.run_eval`: score a run file against a qrels file (``radsift eval``).
- :mod:`radsift.evaluation.card_splits`: a fold model's recorded split, checked before it is judged
  (the splits themselves, shared with training, are :mod:`radsift.splits`).
- :mod:`radsift.evaluation.bench` (``radsift bench``): the protocols of Shi et al. and RadSearch
  (:mod:`radsift.evaluation.protocols`) for the systems of :mod:`radsift.evaluation.systems`
  (which rank through :mod:`radsift.ranking`, as search does), written up by
  :mod:`radsift.evaluation.report` and :mod:`radsift.evaluation.plots`.
- :mod:`radsift.evaluation.heldout`: the evaluator ``radsift train`` is handed for its model card
  (held-out reports; the entity-aspect recipes' development split).
- :mod:`radsift.evaluation.bench_passages` (``radsift bench --protocol passages``): the answer-passage
  protocol (:mod:`radsift.evaluation.protocols.passage_retrieval`) on MedQuAD, written up.
- :mod:`radsift.evaluation.runs` (``radsift run``): a file of queries in, a TREC run out.
- :mod:`radsift.evaluation.ranking`: a run's entries in trec_eval's order (score, then docid),
  so that runs scored in memory and read back from disk agree.
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
