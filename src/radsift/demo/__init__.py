"""radsift.demo: a synthetic chest X-ray report corpus with ground truth, written by radsift.

``make demo``, the tests and the evaluation demo use it instead of real reports (which may
not be redistributed). Reports are generated from templates written for this project::

    from radsift.demo import generate_reports, write_demo_corpus
    reports = generate_reports(n=2000, seed=7)   # list[DemoReport]: .report, .truth
    files = write_demo_corpus(Path("demo-out"))  # reports.csv/.jsonl, truth.jsonl, queries.tsv, qrels.trec
"""

from __future__ import annotations

from radsift.demo.files import CSV_COLUMNS, DemoFiles, write_demo_corpus
from radsift.demo.generator import DemoReport, generate_reports
from radsift.demo.queries import QUERY_RULES, QueryRule, build_qrels, load_example_queries
from radsift.demo.vocabulary import EQUIVALENT_CONCEPTS, FINDINGS, LOCATIONS

__all__ = [
    "CSV_COLUMNS",
    "DemoFiles",
    "DemoReport",
    "EQUIVALENT_CONCEPTS",
    "FINDINGS",
    "LOCATIONS",
    "QUERY_RULES",
    "QueryRule",
    "build_qrels",
    "generate_reports",
    "load_example_queries",
    "write_demo_corpus",
]
