"""Batch runs: a file of queries in, a TREC run out (what ``radsift run`` writes and ``radsift eval`` scores).

It lives in evaluation because a run is an evaluation artefact: evaluation may call search, and
search never imports evaluation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from radsift.evaluation.trec import read_queries, write_run
from radsift.progress import progress_bar
from radsift.ranking import NEEDS_DENSE
from radsift.search.options import check_options


def run_queries(index, queries_path: str | Path, out: str | Path, *, k: int = 1000, mode: str = "hybrid",
                level: str = "report", where: Iterable[str] | None = None, target: str | None = None,
                unit: str = "sentence", negation: str = "aware", rerank: int = 0, alpha: float | None = None,
                concepts: bool = True, prf: bool = False, tag: str = "radsift") -> int:
    """Search every ``qid<TAB>query`` line of ``queries_path`` and write a TREC run to ``out``.

    docid is the report id given at ingestion (``level="report"``) or the sentence uid
    ``REPORT::SECTION::INDEX`` (``level="sentence"``); scores decrease with rank, as trec_eval
    expects. Options are those of :meth:`radsift.Index.search` (``rerank=N`` re-scores each
    query's top N with the index's reranker) and are checked before any query is encoded.

    Returns:
        The number of queries run.

    Raises:
        ConfigError: A bad option (an unknown ``where`` key or ``target`` section, a bad mode ...),
            or ``rerank`` without a reranker.
    """
    m = index.manifest
    check_options("check", k=k, mode=mode, level=level, unit=unit, negation=negation, rerank=rerank,
                  target=target, where=where, sections=m.sections, metadata_keys=m.metadata_keys, alpha=alpha,
                  concepts=concepts, prf=prf)
    queries = read_queries(queries_path)
    vectors = None
    if NEEDS_DENSE[mode] and queries:
        vectors = index.encoder.encode(list(queries.values()), batch_size=64)
    run: dict[str, list[tuple[str, float]]] = {}
    with progress_bar() as bar:
        task = bar.add_task("running queries", total=len(queries))
        for i, (qid, text) in enumerate(queries.items()):
            hits = index.search(text, k=k, mode=mode, level=level, where=where, target=target, unit=unit,
                                include_report=False, negation=negation, rerank=rerank, alpha=alpha,
                                concepts=concepts, prf=prf, mentions=False,
                                query_vector=None if vectors is None else vectors[i])
            if level == "sentence":
                run[qid] = [(h.sentence.uid, h.score) for h in hits]
            else:
                run[qid] = [(h.report_id, h.score) for h in hits]
            bar.advance(task)
    write_run(out, run, tag=tag)
    return len(queries)
