"""Write the demo corpus to disk: reports, ground truth, queries and qrels.

``reports.csv`` reads back with radsift's CSV reader::

    --id-column uid --section findings=findings --section impression=impression

(the other columns become metadata); ``reports.jsonl`` holds the same reports as
``{"id", "sections", "metadata"}`` objects; ``truth.jsonl`` the ground truth; ``queries.tsv``
and ``qrels.trec`` an evaluation set (TREC qrels ``qid 0 docid rel``, docid = report id).
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

from radsift.demo.generator import DemoReport, generate_reports
from radsift.demo.queries import build_qrels, load_example_queries
from radsift.errors import CorpusError

CSV_COLUMNS = ("uid", "exam", "indication", "comparison", "findings", "impression", "sex", "age_group", "site")


@dataclass(frozen=True)
class DemoFiles:
    """Paths of a written demo corpus, with a few counts for a summary line.

    Attributes:
        out_dir: The folder holding the files.
        reports_csv: ``reports.csv``.
        reports_jsonl: ``reports.jsonl``.
        truth_jsonl: ``truth.jsonl``.
        queries: ``queries.tsv``.
        qrels: ``qrels.trec``.
        n_reports: Reports written.
        n_normal: Normal studies among them.
        n_queries: Queries written.
        n_judgments: Relevant (qid, report) pairs in the qrels.
    """

    out_dir: Path
    reports_csv: Path
    reports_jsonl: Path
    truth_jsonl: Path
    queries: Path
    qrels: Path
    n_reports: int = 0
    n_normal: int = 0
    n_queries: int = 0
    n_judgments: int = 0

    @property
    def paths(self) -> tuple[Path, ...]:
        return (self.reports_csv, self.reports_jsonl, self.truth_jsonl, self.queries, self.qrels)


def write_demo_corpus(out_dir: Path, n: int = 2000, seed: int = 7) -> DemoFiles:
    """Generate the demo corpus and write its files into ``out_dir`` (created if missing).

    Args:
        out_dir: Destination folder; existing files of the same names are replaced.
        n: Number of reports.
        seed: Random seed (same seed, same bytes).

    Returns:
        The written paths and counts.

    Raises:
        CorpusError: ``out_dir`` exists and is not a folder, or cannot be written.
    """
    out_dir = Path(out_dir)
    reports = generate_reports(n=n, seed=seed)  # first: a bad n leaves no empty folder behind
    if out_dir.exists() and not out_dir.is_dir():
        raise CorpusError(f"{out_dir}: exists and is not a directory")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CorpusError(f"{out_dir}: cannot create directory ({exc.strerror})") from exc

    query_list = load_example_queries()
    judgments = build_qrels(reports, [qid for qid, _ in query_list])
    files = DemoFiles(
        out_dir=out_dir,
        reports_csv=out_dir / "reports.csv",
        reports_jsonl=out_dir / "reports.jsonl",
        truth_jsonl=out_dir / "truth.jsonl",
        queries=out_dir / "queries.tsv",
        qrels=out_dir / "qrels.trec",
        n_reports=len(reports),
        n_normal=sum(r.is_normal for r in reports),
        n_queries=len(query_list),
        n_judgments=sum(len(v) for v in judgments.values()),
    )
    try:
        _write_csv(files.reports_csv, reports)
        _write_lines(files.reports_jsonl, (json.dumps(r.report.to_dict(), ensure_ascii=False) for r in reports))
        _write_lines(files.truth_jsonl, (json.dumps(r.truth_dict(), ensure_ascii=False) for r in reports))
        _write_lines(files.queries, (f"{qid}\t{query}" for qid, query in query_list))
        qrels_lines = (f"{qid} 0 {doc} {rel}" for qid, _ in query_list for doc, rel in judgments[qid].items())
        _write_lines(files.qrels, qrels_lines)
    except OSError as exc:
        raise CorpusError(f"{out_dir}: cannot write demo corpus ({exc.strerror})") from exc
    return files


def _write_csv(path: Path, reports: list[DemoReport]) -> None:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for r in reports:
            row = {"uid": r.id, **dict(r.report.metadata)}
            for name in ("indication", "comparison", "findings", "impression"):
                row[name] = r.report.sections.get(name, "")
            writer.writerow(row)


def _write_lines(path: Path, lines) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for line in lines:
            fh.write(line + "\n")
