"""Batch runs: a file of queries in, a TREC run out (the contract evaluation builds on)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from radsift.progress import progress_bar


def run_queries(index, queries_path: Path, out: Path, *, k: int = 1000, mode: str = "hybrid",
                level: str = "report", where: Iterable[str] | None = None, target: str | None = None,
                unit: str = "sentence", negation: str = "aware", tag: str = "radsift") -> int:
    """Search every ``qid<TAB>query`` line of ``queries_path`` and write a TREC run to ``out``.

    docid is the report id given at ingestion (``level="report"``) or the sentence uid
    ``REPORT::SECTION::INDEX`` (``level="sentence"``). Returns the number of queries run.
    """
    from radsift.evaluation.trec import read_queries, write_run

    queries = read_queries(queries_path)
    vectors = None
    if mode in ("dense", "hybrid", "hybrid-rrf") and queries:
        vectors = index.encoder.encode(list(queries.values()), batch_size=64)
    run: dict[str, list[tuple[str, float]]] = {}
    with progress_bar() as bar:
        task = bar.add_task("running queries", total=len(queries))
        for i, (qid, text) in enumerate(queries.items()):
            hits = index.search(text, k=k, mode=mode, level=level, where=where, target=target, unit=unit,
                                include_report=False, negation=negation, query_vector=None if vectors is None else vectors[i])
            if level == "sentence":
                run[qid] = [(h.sentence.uid, h.score) for h in hits]
            else:
                run[qid] = [(h.report_id, h.score) for h in hits]
            bar.advance(task)
    write_run(out, run, tag=tag)
    return len(queries)
