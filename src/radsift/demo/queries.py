"""Example queries for the demo corpus and their relevance judgments.

The queries ship as ``data/example_queries.tsv`` (``qid<TAB>query``). What makes a report
relevant to each of them is stated here, in terms of the ground truth: a positive query
wants reports where a finding is present (optionally at a location); a negative query
("no pleural effusion") wants reports whose text explicitly says the finding is absent.
Two queries are phrased unlike any template ("fluid around the lungs") to test semantics.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Iterable

from radsift.demo.generator import DemoReport
from radsift.demo.vocabulary import ABSENT, FINDINGS, PRESENT, STATUSES
from radsift.errors import CorpusError

EXAMPLE_QUERIES_FILE = "example_queries.tsv"


@dataclass(frozen=True)
class QueryRule:
    """When a demo report is relevant to a query.

    Attributes:
        findings: Any of these canonical findings ...
        status: ... with this status ...
        locations: ... at one of these locations (``None``: anywhere, located or not).
    """

    findings: tuple[str, ...]
    status: str = PRESENT
    locations: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        unknown = [f for f in self.findings if f not in FINDINGS]
        if unknown or self.status not in STATUSES:
            raise ValueError(f"bad query rule: {self}")

    def matches(self, report: DemoReport) -> bool:
        return any(
            f in self.findings and s == self.status and (self.locations is None or loc in self.locations)
            for f, s, loc in report.truth
        )


QUERY_RULES: dict[str, QueryRule] = {
    "q01": QueryRule(("pneumothorax",)),
    "q02": QueryRule(("pleural effusion",)),
    # Bilateral effusions include a left one.
    "q03": QueryRule(("pleural effusion",), locations=("left", "bilateral")),
    # Pneumonia on a radiograph is consolidation; the right base is the right lower lobe.
    "q04": QueryRule(
        ("consolidation", "pneumonia"), locations=("right lower lobe", "right basilar", "bilateral basilar")
    ),
    "q05": QueryRule(("pneumonia",)),
    "q06": QueryRule(("cardiomegaly",)),
    "q07": QueryRule(("pulmonary edema",)),
    "q08": QueryRule(("atelectasis",)),
    "q09": QueryRule(("nodule",)),
    "q10": QueryRule(("mass",)),
    "q11": QueryRule(("granuloma",)),
    "q12": QueryRule(("emphysema",)),
    "q13": QueryRule(("rib fracture",)),
    "q14": QueryRule(("endotracheal tube",)),
    "q15": QueryRule(("central venous catheter",)),
    "q16": QueryRule(("pacemaker",)),
    "q17": QueryRule(("hiatal hernia",)),
    "q18": QueryRule(("pleural effusion",), status=ABSENT),
    "q19": QueryRule(("pneumothorax",), status=ABSENT),
    "q20": QueryRule(("consolidation",), status=ABSENT),
    "q21": QueryRule(("pleural effusion",)),
    "q22": QueryRule(("endotracheal tube",)),
}


def load_example_queries() -> list[tuple[str, str]]:
    """The example queries shipped with the package, as ``(qid, query)`` pairs.

    Raises:
        CorpusError: A line is not ``qid<TAB>query``, a qid repeats, or a qid has no
            relevance rule in :data:`QUERY_RULES`.
    """
    text = resources.files("radsift.demo").joinpath("data", EXAMPLE_QUERIES_FILE).read_text(encoding="utf-8")
    return parse_queries(text.splitlines(), source=f"radsift/demo/data/{EXAMPLE_QUERIES_FILE}")


def parse_queries(lines: Iterable[str], source: str) -> list[tuple[str, str]]:
    """Parse ``qid<TAB>query`` lines (blank lines skipped) naming ``source`` in errors."""
    queries: list[tuple[str, str]] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        parts = line.rstrip("\n").split("\t")
        if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
            raise CorpusError(f"{source}, line {number}: expected 'qid<TAB>query', got {line!r}")
        qid, query = parts[0].strip(), parts[1].strip()
        if qid in seen:
            raise CorpusError(f"{source}, line {number}: duplicate qid {qid!r}")
        if qid not in QUERY_RULES:
            raise CorpusError(
                f"{source}, line {number}: qid {qid!r} has no relevance rule in radsift.demo.queries.QUERY_RULES"
            )
        seen.add(qid)
        queries.append((qid, query))
    return queries


def build_qrels(reports: Iterable[DemoReport], qids: Iterable[str]) -> dict[str, dict[str, int]]:
    """Relevance judgments ``{qid: {report_id: 1}}`` derived from the ground truth.

    Reports that are not relevant are not listed (TREC convention: unjudged = not relevant;
    every demo report is in effect judged for every query).
    """
    reports = list(reports)
    return {qid: {r.id: 1 for r in reports if QUERY_RULES[qid].matches(r)} for qid in qids}
