"""``radsift run``, ``bench`` and ``eval``: a TREC run of a file of queries, every evaluation protocol for
several systems (:mod:`radsift.workflows.bench`), and a run scored against qrels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from radsift.cli.help import OPENI, command, top_level_commands
from radsift.cli.options import (AllowRemoteOpt, AlphaOpt, BackendOpt, BatchOpt, ConceptsOpt, ForceOpt, IndexArg, LevelOpt,
                                 LlmModelOpt, LlmTokenOpt, LlmUrlOpt, MilvusUriOpt, ModeOpt, ModelOpt, NegationOpt,
                                 PrfOpt, RerankOpt, RerankerOpt, TargetOpt, ThreadsOpt, UnitOpt, WhereOpt, check_out,
                                 reader_flags)
from radsift.cli.output import console, err_console, say
from radsift.evaluation.bench import BenchConfig
from radsift.evaluation.report import console_tables
from radsift.evaluation.run_eval import evaluate_run_file
from radsift.evaluation.runs import run_queries
from radsift.search import Index
from radsift.search.options import check_options, from_wire
from radsift.workflows.bench import PassageOptions, run_benchmark

#: This module's top-level commands (merged into ``radsift`` by :mod:`radsift.cli`).
app = top_level_commands()


# ---------------------------------------------------------------------------------------------
# run: a file of queries as a TREC run (radsift.evaluation.runs)
# ---------------------------------------------------------------------------------------------
@command(app, "run", example="radsift run my-index --queries queries.tsv --out run.trec --mode bm25")
def run_cmd(
    index_dir: IndexArg,
    queries: Annotated[Path, typer.Option("--queries", metavar="FILE", help="qid<TAB>query file.")],
    out: Annotated[Path, typer.Option("--out", metavar="FILE", help="TREC run file to write.")],
    k: Annotated[str, typer.Option("-k", "--k", metavar="N", help="Depth of the run per query (1 to 1000).")] = "1000",
    mode: ModeOpt = "hybrid", level: LevelOpt = "report", where: WhereOpt = None, target: TargetOpt = None,
    unit: UnitOpt = "sentence", negation: NegationOpt = "aware", model: ModelOpt = None,
    threads: ThreadsOpt = None, rerank: RerankOpt = 0, reranker: RerankerOpt = None, alpha: AlphaOpt = None,
    concepts: ConceptsOpt = True, prf: PrfOpt = False,
    tag: Annotated[Optional[str], typer.Option("--tag", metavar="NAME", help="Run tag (default radsift-MODE).")] = None,
    backend: BackendOpt = "auto", milvus_uri: MilvusUriOpt = None, force: ForceOpt = False,
) -> None:
    """Run a file of queries and write a TREC run (docid = report id, or sentence uid at sentence level)."""
    check_out(out, force)
    check_options("check", k=from_wire("k", k), sections=(), metadata_keys=(), rerank=rerank)  # -k 1e9: one line
    index = Index.open(index_dir, model=model, threads=threads, reranker=reranker if rerank else None,
                       backend=backend, milvus_uri=milvus_uri)
    n = run_queries(index, queries, out, k=from_wire("k", k), mode=mode, level=level, where=where, target=target, unit=unit,
                    negation=negation, rerank=rerank, alpha=alpha, concepts=concepts, prf=prf,
                    tag=tag or f"radsift-{mode}")
    console.print(f"wrote {n} queries to {out}", highlight=False)


# ---------------------------------------------------------------------------------------------
def _figure_rows(results: dict, label: str = ""):
    """(label, figures) for every R@1/R@5 entry of a passage report, its keys joined ("bm25-64 entity-aspect")."""
    for key, value in results.items():
        name = f"{label} {key}".strip()
        if "R@1" in value:
            yield name, value
        else:
            yield from _figure_rows(value, name)


# bench: the evaluation protocols of Shi et al. and RadSearch for several systems (radsift.evaluation)
# ---------------------------------------------------------------------------------------------
@command(app, "bench", example=f"radsift bench --corpus reports.csv {OPENI} --systems bm25 --systems dense --out bench-out")
@reader_flags()
@reader_flags("cross_reader", prefix="cross-", panel="Reader options of --cross-corpus", of=" (--cross-corpus)")
def bench_cmd(
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="Folder for report.md, report.json and the PNG plots.")],
    corpus: Annotated[Optional[list[Path]], typer.Option(
        "--corpus", metavar="PATH", help="Corpus file or folder (repeatable; every protocol but passages).")] = None,
    reader: Any = None,
    systems: Annotated[Optional[list[str]], typer.Option(
        "--systems", metavar="SPEC",
        help="bm25 | dense[:MODEL] | hybrid[:MODEL] | hybrid-rrf[:MODEL] | [hybrid+]rerank:[MODEL:]RERANKER, "
        "optionally NAME=SPEC (repeatable; default bm25 and dense).")] = None,
    systems_file: Annotated[Optional[Path], typer.Option("--systems-file", metavar="FILE", help="YAML list of systems.")] = None,
    queries: Annotated[Optional[Path], typer.Option(
        "--queries", metavar="FILE", help="Free-text queries, qid<TAB>query.")] = None,
    qrels: Annotated[Optional[Path], typer.Option(
        "--qrels", metavar="FILE", help="TREC qrels of --queries (docid = report id).")] = None,
    category_field: Annotated[Optional[str], typer.Option(
        "--category-field", metavar="KEY",
        help="Metadata field for category matching (default: detected, e.g. medical_specialty; 'none' = off).")] = None,
    cross_corpus: Annotated[Optional[list[Path]], typer.Option(
        "--cross-corpus", metavar="PATH", help="Another collection for cross-collection retrieval (repeatable).")] = None,
    cross_reader: Any = None,
    cross_where: Annotated[Optional[list[str]], typer.Option(
        "--cross-where", metavar="KEY=VALUE",
        help="Keep its reports with metadata KEY=VALUE, e.g. medical_specialty=Radiology (repeatable).")] = None,
    fold: Annotated[Optional[int], typer.Option(
        "--fold", metavar="0|1", help="Only the test queries of this fold of the split by finding.")] = None,
    split_from: Annotated[Optional[Path], typer.Option(
        "--split-from", metavar="DIR", help="Judge the fold a model held out: its recorded test findings, not a split "
        "recomputed from today's labels (a model from radsift train --split-by-finding).")] = None,
    holdout_fraction: Annotated[float, typer.Option(
        "--holdout-fraction", metavar="FRACTION",
        help="Share of held-out reports (findings-to-impression, category).")] = 0.2,
    seed: Annotated[int, typer.Option("--seed", metavar="N", help="Seed of the splits, samples and tests.")] = 0,
    max_queries: Annotated[Optional[int], typer.Option(
        "--max-queries", metavar="N", help="At most this many queries per protocol (seeded sample).")] = None,
    protocol: Annotated[Optional[list[str]], typer.Option(
        "--protocol", metavar="NAME",
        help="Run only these: sentences, cross, separation, impression, free-text, category; rag (LLM answers, "
             "run only when named); passages (CAPR answer passages on MedQuAD, runs alone); note-passages (held-out "
             "clinical notes as a passage test: --corpus, default MTSamples; runs alone) (repeatable).")] = None,
    threads: ThreadsOpt = None, batch_size: BatchOpt = 64,
    plots: Annotated[bool, typer.Option("--plots/--no-plots", help="Draw the PNG plots.")] = True,
    llm_url: LlmUrlOpt = None, llm_model: LlmModelOpt = None, llm_token_file: LlmTokenOpt = None,
    allow_remote_llm: AllowRemoteOpt = False,
    rag_draft_reports: Annotated[int, typer.Option(
        "--rag-draft-reports", metavar="N", rich_help_panel="LLM back-end",
        help="rag: held-out reports to draft impressions for (0 = none).")] = 30,
    medquad: Annotated[Optional[Path], typer.Option(
        "--medquad", metavar="DIR", help="passages: the MedQuAD folder (default ../shared/data/medquad).")] = None,
    cdv: Annotated[Optional[Path], typer.Option(
        "--cdv", metavar="DIR", help="passages: the CDV test split (default ../shared/data/medquad-cdv-test).")] = None,
    latency: Annotated[bool, typer.Option(
        "--latency", help="passages: also time scoring 2,048 passages for one query per system.")] = False,
    passage_tokens: Annotated[Optional[int], typer.Option(
        "--passage-tokens", metavar="N", help="passages: word pieces of each passage window (180 words) the models "
        "read (default: each model's own, 256 for MiniLM).")] = None,
    split: Annotated[str, typer.Option(
        "--split", metavar="test|dev", help="passages: the CDV test split (default; never tune on it) or the "
        "development split (MedQuAD documents that radsift train --recipe entity-aspect holds out); "
        "note-passages: the held-out test notes (default) or the development notes.")] = "test",
    force: ForceOpt = False,
) -> None:
    """Evaluate systems with the protocols of Shi et al. and RadSearch; write report.md, report.json and plots.
    --protocol passages (CAPR, MedQuAD CDV test split) runs alone: --systems bm25 | tfidf | dense[:MODEL] | hybrid[:MODEL] |
    poly:MODEL | cross:RERANKER | rerank:[FIRST:]RERANKER (FIRST: dense, MODEL, poly=MODEL, hybrid[=MODEL]); report.json holds R@1 and R@5 per system and query kind.
    --protocol note-passages (held-out clinical notes, the same systems) runs alone; R@1 and R@5 per system and candidate rule."""
    check_out(out, force, folder=True)
    config = BenchConfig(
        corpus=corpus or [], reader=reader,
        systems=systems or ([] if systems_file else ["bm25", "dense"]),
        systems_file=systems_file, queries=queries, qrels=qrels, category_field=category_field,
        cross_corpus=cross_corpus or [], cross_reader=cross_reader if cross_corpus else None,
        cross_where=cross_where or [], fold=fold, split_from=split_from, holdout_fraction=holdout_fraction, seed=seed,
        max_queries=max_queries, protocols=protocol, threads=threads, batch_size=batch_size,
        llm={"url": llm_url, "model": llm_model, "token_file": llm_token_file, "allow_remote": allow_remote_llm,
             "threads": threads}, rag_draft_reports=rag_draft_reports,
    )
    passages = PassageOptions(medquad=medquad, cdv=cdv, split=split, latency=latency, max_tokens=passage_tokens)
    run = run_benchmark(config, out, passages=passages, log=say, plots=plots)
    if run.passages is not None:
        report = run.passages
        for name, by_kind in report["results"].items():
            for kind, figures in _figure_rows(by_kind):
                console.print(f"{name:<28} {kind:<28} R@1 {figures['R@1']:6.2f}  R@5 {figures['R@5']:6.2f}",
                              highlight=False)
        console.print(f"wrote report.json and report.md to {out} ({report['seconds']:.0f} s)", highlight=False)
        return
    result = run.result
    for table in console_tables(result):
        console.print(table)
    console.print(f"wrote {', '.join(p.name for p in run.paths.values())} to {out} "
                  f"({result.timings.get('total', 0):.1f} s)", highlight=False)


# ---------------------------------------------------------------------------------------------
# eval: score a TREC run against qrels (radsift.evaluation)
# ---------------------------------------------------------------------------------------------
@command(app, "eval", example="radsift eval --qrels qrels.trec --run run.trec")
def eval_cmd(
    qrels: Annotated[Path, typer.Option("--qrels", metavar="FILE", help="TREC qrels file: qid 0 docid relevance.")],
    run: Annotated[Path, typer.Option("--run", metavar="FILE", help="TREC run file: qid Q0 docid rank score tag.")],
    per_query: Annotated[bool, typer.Option("--per-query/--no-per-query", help="Show every query, not only the means.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
) -> None:
    """Print mAP, P@10, R@100, nDCG@10 and MRR of a run, per query and averaged."""
    result = evaluate_run_file(qrels, run)
    if as_json:
        typer.echo(json.dumps(result.to_dict(per_query=per_query), ensure_ascii=False))
        return
    console.print(result.table(per_query=per_query))
    if result.unanswered:
        err_console.print(f"note: {len(result.unanswered)} qrels queries have no run line and score 0", highlight=False)
    if result.unjudged:
        err_console.print(f"note: {len(result.unjudged)} run queries are not in the qrels and were ignored", highlight=False)
