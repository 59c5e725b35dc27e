"""The ``radsift`` command line: parses arguments and calls the package, nothing more.

Every command that reads a corpus takes the same reader options (see :func:`reader_options`).
User-facing errors (:class:`radsift.errors.RadsiftError`) print one line naming the file,
row or field and exit with status 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from radsift.errors import RadsiftError

app = typer.Typer(
    name="radsift",
    help="Offline semantic search for radiology reports: index, search, label, train, evaluate, serve.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
index_app = typer.Typer(help="Build and update an index.", no_args_is_help=True)
app.add_typer(index_app, name="index")

console = Console()
err_console = Console(stderr=True)

# ---------------------------------------------------------------------------------------------
# Reader options, shared by every command that reads a corpus (index build/add, label, train, bench)
# ---------------------------------------------------------------------------------------------
FormatOpt = Annotated[
    Optional[str],
    typer.Option("--format", help="csv | jsonl | txt | openi-xml | text (inferred from the extension when omitted)."),
]
IdColumnOpt = Annotated[
    Optional[str], typer.Option("--id-column", help="Column/field holding the report id (csv, jsonl).")
]
SectionOpt = Annotated[
    Optional[list[str]],
    typer.Option(
        "--section",
        help="Map a section to a column: --section findings=findings (repeatable). "
        "Columns not mapped become metadata.",
    ),
]
TextColumnOpt = Annotated[
    Optional[str],
    typer.Option("--text-column", help="A free-text column split into sections by its headings (csv, jsonl)."),
]
OnErrorOpt = Annotated[str, typer.Option("--on-error", help="fail | skip: what to do with a bad row.")]


def reader_options(
    format: str | None,
    id_column: str | None,
    section: list[str] | None,
    text_column: str | None,
    on_error: str,
):
    """Turn the shared reader flags into :class:`radsift.corpus.ReaderOptions`."""
    from radsift.corpus import ReaderOptions

    return ReaderOptions.from_cli(
        format=format, id_column=id_column, sections=section or [], text_column=text_column, on_error=on_error
    )


def fail(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False)
    raise typer.Exit(2)

# ---------------------------------------------------------------------------------------------
# index build / add, search, run
# ---------------------------------------------------------------------------------------------
ModelOpt = Annotated[Optional[str], typer.Option("--model", help="sentence-transformers model folder (default: packaged all-MiniLM-L6-v2).")]
ThreadsOpt = Annotated[Optional[int], typer.Option("--threads", help="torch threads for encoding.")]
BatchOpt = Annotated[int, typer.Option("--batch-size", help="Encoding batch size.")]
RerankerOpt = Annotated[Optional[Path], typer.Option(
    "--reranker", envvar="RADSIFT_RERANKER",
    help="Cross-encoder folder from 'radsift train --recipe rerank' (or $RADSIFT_RERANKER).")]


def _read(paths: list[Path], options):
    from radsift.corpus import ReadStats, read_corpus

    stats = ReadStats()
    return read_corpus(paths, options, stats), stats


def _report_read_stats(stats) -> None:
    summary = stats.summary()
    if summary:
        err_console.print(summary, highlight=False)


@index_app.command("build")
def index_build(
    index_dir: Annotated[Path, typer.Argument(help="Index directory to create.")],
    corpus: Annotated[list[Path], typer.Argument(help="Corpus files or folders.")],
    format: FormatOpt = None, id_column: IdColumnOpt = None, section: SectionOpt = None,
    text_column: TextColumnOpt = None, on_error: OnErrorOpt = "fail",
    model: ModelOpt = None, threads: ThreadsOpt = None, batch_size: BatchOpt = 64,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Rebuild an existing index (atomically).")] = False,
    lexicon: Annotated[Optional[Path], typer.Option("--lexicon", help="Finding lexicon for sentence labels.")] = None,
    labels: Annotated[bool, typer.Option("--labels/--no-labels", help="Label findings and negation in sentences "
                                         "(enables negation-aware search).")] = True,
) -> None:
    """Build an index from a corpus (encodes sentences and sections, labels findings, builds BM25)."""
    from radsift.index import build_index

    reports, stats = _read(corpus, reader_options(format, id_column, section, text_column, on_error))
    summary = build_index(index_dir, reports, model=model, threads=threads, batch_size=batch_size,
                          overwrite=overwrite, lexicon=lexicon, label=labels)
    _report_read_stats(stats)
    console.print(f"built: {summary.describe()}", highlight=False)


@index_app.command("add")
def index_add(
    index_dir: Annotated[Path, typer.Argument(help="Existing index directory.")],
    corpus: Annotated[list[Path], typer.Argument(help="Corpus files or folders with new reports.")],
    format: FormatOpt = None, id_column: IdColumnOpt = None, section: SectionOpt = None,
    text_column: TextColumnOpt = None, on_error: OnErrorOpt = "fail",
    model: ModelOpt = None, threads: ThreadsOpt = None, batch_size: BatchOpt = 64,
    replace: Annotated[bool, typer.Option("--replace", help="Replace reports whose id is already indexed.")] = False,
) -> None:
    """Add reports to an index without re-encoding the reports already in it."""
    from radsift.index import add_to_index

    reports, stats = _read(corpus, reader_options(format, id_column, section, text_column, on_error))
    summary = add_to_index(index_dir, reports, replace=replace, model=model, threads=threads,
                           batch_size=batch_size)
    _report_read_stats(stats)
    console.print(f"updated: {summary.describe()}", highlight=False)


@index_app.command("info")
def index_info(index_dir: Annotated[Path, typer.Argument(help="Index directory.")]) -> None:
    """Print an index's manifest (model, counts, times)."""
    from radsift.search import Index

    console.print_json(json.dumps(Index.open(index_dir).stats()))


ModeOpt = Annotated[str, typer.Option(
    "--mode", help="hybrid (convex combination of dense and BM25) | dense | bm25 | hybrid-rrf (reciprocal rank fusion)")]
LevelOpt = Annotated[str, typer.Option("--level", help="report | sentence")]
WhereOpt = Annotated[Optional[list[str]], typer.Option("--where", help="Metadata filter KEY=VALUE (repeatable).")]
TargetOpt = Annotated[Optional[str], typer.Option("--target", help="Search one section only: findings, impression, ...")]
UnitOpt = Annotated[str, typer.Option("--unit", help="Rank sentence units or whole section units.")]
NegationOpt = Annotated[str, typer.Option(
    "--negation", help="aware: sentences stating the opposite of the query about a finding rank last; ignore: off.")]


@app.command("search")
def search_cmd(
    index_dir: Annotated[Path, typer.Argument(help="Index directory.")],
    query: Annotated[str, typer.Argument(help="Free-text query, e.g. \"no pleural effusion\".")],
    k: Annotated[int, typer.Option("-k", "--k", help="Number of hits.")] = 10,
    mode: ModeOpt = "hybrid", level: LevelOpt = "report", where: WhereOpt = None, target: TargetOpt = None,
    unit: UnitOpt = "sentence", negation: NegationOpt = "aware", model: ModelOpt = None,
    threads: ThreadsOpt = None, as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable hits.")] = False,
    rerank: Annotated[int, typer.Option("--rerank", help="Rerank the top N hits with the cross-encoder (0 = off).")] = 0,
    reranker: RerankerOpt = None,
) -> None:
    """Search an index; the matched part of each hit's sentence is highlighted."""
    from radsift.search import Index
    from radsift.search.display import print_hits

    index = Index.open(index_dir, model=model, threads=threads, reranker=reranker if rerank else None)
    hits = index.search(query, k=k, mode=mode, level=level, where=where, target=target, unit=unit,
                        negation=negation, rerank=rerank)
    if as_json:
        typer.echo(json.dumps({"query": query, "mode": mode, "level": level, "hits": [h.to_dict() for h in hits]},
                              ensure_ascii=False))
    else:
        print_hits(console, query, hits)


@app.command("run")
def run_cmd(
    index_dir: Annotated[Path, typer.Argument(help="Index directory.")],
    queries: Annotated[Path, typer.Option("--queries", help="qid<TAB>query file.")],
    out: Annotated[Path, typer.Option("--out", help="TREC run file to write.")],
    k: Annotated[int, typer.Option("-k", "--k", help="Depth of the run per query.")] = 1000,
    mode: ModeOpt = "hybrid", level: LevelOpt = "report", where: WhereOpt = None, target: TargetOpt = None,
    unit: UnitOpt = "sentence", negation: NegationOpt = "aware", model: ModelOpt = None,
    threads: ThreadsOpt = None, tag: Annotated[Optional[str], typer.Option("--tag", help="Run tag (default radsift-MODE).")] = None,
) -> None:
    """Run a file of queries and write a TREC run (docid = report id, or sentence uid at sentence level)."""
    from radsift.search import Index
    from radsift.search.batch import run_queries

    index = Index.open(index_dir, model=model, threads=threads)
    n = run_queries(index, queries, out, k=k, mode=mode, level=level, where=where, target=target, unit=unit,
                    negation=negation, tag=tag or f"radsift-{mode}")
    console.print(f"wrote {n} queries to {out}", highlight=False)


@app.command("demo")
def demo_cmd(
    out: Annotated[Path, typer.Option("--out", help="Folder for the demo corpus and index.")] = Path("demo-out"),
    n: Annotated[int, typer.Option("--n", help="Number of synthetic reports.")] = 2000,
    serve: Annotated[bool, typer.Option("--serve/--no-serve", help="Start the web page at the end.")] = False,
    port: Annotated[int, typer.Option("--port")] = 8000,
) -> None:
    """The main job on the bundled demo corpus: generate, index, search (and serve)."""
    from radsift.demo_runner import run_demo

    run_demo(out, n=n, serve=serve, port=port, console=console)



# ---------------------------------------------------------------------------------------------
# eval: score a TREC run against qrels (radsift.evaluation)
# ---------------------------------------------------------------------------------------------
@app.command("eval")
def eval_cmd(
    qrels: Annotated[Path, typer.Option("--qrels", help="TREC qrels file: qid 0 docid relevance.")],
    run: Annotated[Path, typer.Option("--run", help="TREC run file: qid Q0 docid rank score tag.")],
    per_query: Annotated[bool, typer.Option("--per-query/--no-per-query", help="Show every query, not only the means.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
) -> None:
    """Print mAP, P@10, R@100, nDCG@10 and MRR of a run, per query and averaged."""
    from radsift.evaluation.run_eval import evaluate_run_file

    try:
        result = evaluate_run_file(qrels, run)
    except RadsiftError as exc:
        fail(str(exc))
    if as_json:
        typer.echo(json.dumps(result.to_dict(per_query=per_query), ensure_ascii=False))
        return
    console.print(result.table(per_query=per_query))
    if result.unanswered:
        err_console.print(f"note: {len(result.unanswered)} qrels queries have no run line and score 0", highlight=False)
    if result.unjudged:
        err_console.print(f"note: {len(result.unjudged)} run queries are not in the qrels and were ignored", highlight=False)


# ---------------------------------------------------------------------------------------------
# demo-corpus: write the synthetic demo corpus with ground truth, queries and qrels (radsift.demo)
# ---------------------------------------------------------------------------------------------
@app.command("demo-corpus")
def demo_corpus_cmd(
    out: Annotated[Path, typer.Option("--out", help="Folder to write the corpus files into.")],
    n: Annotated[int, typer.Option("--n", help="Number of synthetic reports.")] = 2000,
    seed: Annotated[int, typer.Option("--seed", help="Random seed (same seed, same files).")] = 7,
) -> None:
    """Write synthetic chest X-ray reports (CSV and JSONL), their ground truth, queries and qrels."""
    from radsift.demo import write_demo_corpus

    files = write_demo_corpus(out, n=n, seed=seed)
    for path in files.paths:
        console.print(str(path), highlight=False)
    share = files.n_normal / files.n_reports if files.n_reports else 0.0
    console.print(
        f"{files.n_reports} reports ({files.n_normal} normal, {share:.0%}), "
        f"{files.n_queries} queries, {files.n_judgments} relevance judgments",
        highlight=False,
    )


# ---------------------------------------------------------------------------------------------
# serve: the JSON API and the search page (radsift.serve)
# ---------------------------------------------------------------------------------------------
@app.command("serve")
def serve_cmd(
    index_dir: Annotated[Path, typer.Argument(help="Index directory (opened read-only).")],
    host: Annotated[str, typer.Option("--host", help="Address to listen on; anything but loopback needs a token.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port (0 picks a free one).")] = 8000,
    token_file: Annotated[Optional[Path], typer.Option("--token-file", help="File holding the API token (else $RADSIFT_TOKEN).")] = None,
    audit_log: Annotated[Optional[Path], typer.Option("--audit-log", help="Append every query and report view to this JSON-lines file.")] = None,
    model: ModelOpt = None, reranker: RerankerOpt = None,
) -> None:
    """Serve the search page and JSON API (127.0.0.1 unless a token is set; Ctrl-C stops)."""
    from radsift.serve import run_server

    try:
        run_server(index_dir, host=host, port=port, token_file=token_file, audit_log=audit_log, model=model,
                   reranker=reranker, console=console)
    except RadsiftError as exc:
        fail(str(exc))


# ---------------------------------------------------------------------------------------------
# label: weak labels and the query dictionary (radsift.labels)
# ---------------------------------------------------------------------------------------------
@app.command("label")
def label_cmd(
    corpus: Annotated[Optional[list[Path]], typer.Argument(help="Corpus files or folders to label.")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="Output folder for the label exports.")] = None,
    explain: Annotated[
        Optional[str], typer.Option("--explain", help="Label the sentences of TEXT and show each mention, its span, status, cue and rule.")
    ] = None,
    lexicon: Annotated[Optional[Path], typer.Option("--lexicon", help="Lexicon YAML (default: packaged chest X-ray).")] = None,
    rules: Annotated[Optional[Path], typer.Option("--rules", help="Negation rules YAML (default: packaged).")] = None,
    label_section: Annotated[
        Optional[list[str]],
        typer.Option("--label-section", help="Sections whose sentences are labeled (repeatable; default findings, impression)."),
    ] = None,
    format: FormatOpt = None,
    id_column: IdColumnOpt = None,
    section: SectionOpt = None,
    text_column: TextColumnOpt = None,
    on_error: OnErrorOpt = "fail",
) -> None:
    """Label report sentences with findings (present / absent / uncertain) and export weak-label queries and qrels."""
    if explain is None and not corpus:
        fail("give a CORPUS to label (with --out DIR) or --explain \"SENTENCE\"")
    if corpus and out is None:
        fail("--out DIR is required when labeling a corpus")
    try:
        from radsift.labels import Labeler, build_weak_labels
        from radsift.labels.display import explain as explain_text, stats_tables

        labeler = Labeler(lexicon=lexicon, rules=rules)
        if explain is not None:
            for line in explain_text(labeler, explain):
                console.print(line, highlight=False, soft_wrap=True)
        if corpus:
            reports, stats = _read(corpus, reader_options(format, id_column, section, text_column, on_error))
            weak = build_weak_labels(
                reports, labeler, sections=tuple(label_section or ("findings", "impression")), progress=True
            )
            _report_read_stats(stats)
            paths = weak.write(out)
            for table in stats_tables(weak.stats()):
                console.print(table)
            console.print(f"wrote {', '.join(p.name for p in paths.values())} to {out}", highlight=False)
    except RadsiftError as exc:
        fail(str(exc))


# ---------------------------------------------------------------------------------------------
# bench: the evaluation protocols of Shi et al. and RadSearch for several systems (radsift.evaluation)
# ---------------------------------------------------------------------------------------------
@app.command("bench")
def bench_cmd(
    corpus: Annotated[list[Path], typer.Option("--corpus", help="Corpus file or folder (repeatable).")],
    out: Annotated[Path, typer.Option("--out", help="Folder for report.md, report.json and the PNG plots.")],
    format: FormatOpt = None, id_column: IdColumnOpt = None, section: SectionOpt = None,
    text_column: TextColumnOpt = None, on_error: OnErrorOpt = "fail",
    systems: Annotated[Optional[list[str]], typer.Option(
        "--systems", help="bm25 | dense[:MODEL] | hybrid[:MODEL] | hybrid-rrf[:MODEL] | [hybrid+]rerank:[MODEL:]RERANKER, "
        "optionally NAME=SPEC (repeatable; default bm25 and dense).")] = None,
    systems_file: Annotated[Optional[Path], typer.Option("--systems-file", help="YAML list of systems.")] = None,
    queries: Annotated[Optional[Path], typer.Option("--queries", help="Free-text queries, qid<TAB>query.")] = None,
    qrels: Annotated[Optional[Path], typer.Option("--qrels", help="TREC qrels of --queries (docid = report id).")] = None,
    category_field: Annotated[Optional[str], typer.Option(
        "--category-field", help="Metadata field for category matching (default: detected, e.g. medical_specialty; 'none' = off).")] = None,
    cross_corpus: Annotated[Optional[list[Path]], typer.Option(
        "--cross-corpus", help="Another collection for cross-collection retrieval (repeatable).")] = None,
    cross_format: Annotated[Optional[str], typer.Option("--cross-format", help="Its --format.")] = None,
    cross_id_column: Annotated[Optional[str], typer.Option("--cross-id-column", help="Its --id-column.")] = None,
    cross_section: Annotated[Optional[list[str]], typer.Option("--cross-section", help="Its --section (repeatable).")] = None,
    cross_text_column: Annotated[Optional[str], typer.Option("--cross-text-column", help="Its --text-column.")] = None,
    cross_on_error: Annotated[str, typer.Option("--cross-on-error", help="Its --on-error.")] = "fail",
    cross_where: Annotated[Optional[list[str]], typer.Option(
        "--cross-where", help="Keep its reports with metadata KEY=VALUE, e.g. medical_specialty=Radiology (repeatable).")] = None,
    fold: Annotated[Optional[int], typer.Option("--fold", help="Only the test queries of this fold of the split by finding (0 or 1).")] = None,
    split_from: Annotated[Optional[Path], typer.Option(
        "--split-from", help="Judge the fold a model held out: its recorded test findings, not a split recomputed "
        "from today's labels (a model from radsift train --split-by-finding).")] = None,
    holdout_fraction: Annotated[float, typer.Option("--holdout-fraction", help="Share of held-out reports (findings-to-impression, category).")] = 0.2,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the splits, samples and tests.")] = 0,
    max_queries: Annotated[Optional[int], typer.Option("--max-queries", help="At most this many queries per protocol (seeded sample).")] = None,
    protocol: Annotated[Optional[list[str]], typer.Option(
        "--protocol", help="Run only these: sentences, cross, separation, impression, free-text, category (repeatable).")] = None,
    threads: ThreadsOpt = None, batch_size: BatchOpt = 64,
    plots: Annotated[bool, typer.Option("--plots/--no-plots", help="Draw the PNG plots.")] = True,
) -> None:
    """Evaluate systems with the protocols of Shi et al. and RadSearch; write report.md, report.json and plots."""
    try:
        from radsift.evaluation.bench import BenchConfig, bench
        from radsift.evaluation.report import console_tables

        config = BenchConfig(
            corpus=corpus,
            reader=reader_options(format, id_column, section, text_column, on_error),
            systems=systems or ([] if systems_file else ["bm25", "dense"]),
            systems_file=systems_file, queries=queries, qrels=qrels, category_field=category_field,
            cross_corpus=cross_corpus or [],
            cross_reader=reader_options(cross_format, cross_id_column, cross_section, cross_text_column, cross_on_error)
            if cross_corpus else None,
            cross_where=cross_where or [], fold=fold, split_from=split_from, holdout_fraction=holdout_fraction, seed=seed,
            max_queries=max_queries, protocols=protocol, threads=threads, batch_size=batch_size,
        )
        result, paths = bench(config, out, log=lambda m: err_console.print(m, highlight=False), plots=plots)
    except RadsiftError as exc:
        fail(str(exc))
    for table in console_tables(result):
        console.print(table)
    console.print(f"wrote {', '.join(p.name for p in paths.values())} to {out} "
                  f"({result.timings.get('total', 0):.1f} s)", highlight=False)


# ---------------------------------------------------------------------------------------------
# train: fine-tune a retriever (or a reranker) on a corpus without labels (radsift.models.training)
# ---------------------------------------------------------------------------------------------
@app.command("train")
def train_cmd(
    corpus: Annotated[list[Path], typer.Option("--corpus", help="Corpus file or folder (repeatable).")],
    out: Annotated[Path, typer.Option("--out", help="Folder for the trained model and its model card.")],
    format: FormatOpt = None, id_column: IdColumnOpt = None, section: SectionOpt = None,
    text_column: TextColumnOpt = None, on_error: OnErrorOpt = "fail",
    recipe: Annotated[Optional[str], typer.Option(
        "--recipe", help="combined (default) | lexicon-triplet | lexicon-mnrl | findings-impression | rerank.")] = None,
    config: Annotated[Optional[Path], typer.Option("--config", help="YAML training configuration (flags override it).")] = None,
    split_by_finding: Annotated[Optional[int], typer.Option(
        "--split-by-finding", help="Train only on findings outside this fold of the split by finding (0 or 1).")] = None,
    bi_encoder: Annotated[Optional[str], typer.Option(
        "--bi-encoder", help="rerank: bi-encoder folder that mines the negatives (default: the base model).")] = None,
    base_model: Annotated[Optional[str], typer.Option(
        "--base-model", help="Model folder to start from (default: packaged all-MiniLM-L6-v2).")] = None,
    max_steps: Annotated[Optional[int], typer.Option("--max-steps", help="Gradient steps.")] = None,
    seed: Annotated[Optional[int], typer.Option("--seed", help="Training seed.")] = None,
    time_limit: Annotated[Optional[float], typer.Option(
        "--time-limit", help="Stop training after this many minutes.")] = None,
    threads: ThreadsOpt = None,
    evaluate: Annotated[Optional[bool], typer.Option(
        "--eval/--no-eval", help="Evaluate on the held-out reports at the end (figures in the model card).")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace a non-empty --out folder.")] = False,
) -> None:
    """Train a negation-aware retriever from a corpus's own reports (weak labels, no annotators)."""
    try:
        from radsift.models.training import load_config, train

        cfg = load_config(config, recipe=recipe, split_by_finding=split_by_finding, bi_encoder=bi_encoder,
                          base_model=base_model, max_steps=max_steps, seed=seed, time_limit_minutes=time_limit,
                          threads=threads, evaluate=evaluate)
        reports, stats = _read(corpus, reader_options(format, id_column, section, text_column, on_error))
        err_console.print(f"recipe {cfg.recipe}: {cfg.max_steps} steps, seed {cfg.seed}", highlight=False)
        from radsift.evaluation.heldout import HeldOutEvaluator

        result = train(reports, cfg, out, overwrite=overwrite, evaluator=HeldOutEvaluator(),
                       log=lambda m: err_console.print(m, highlight=False))
        _report_read_stats(stats)
    except RadsiftError as exc:
        fail(str(exc))
    console.print(f"wrote {result.out} ({result.seconds:.0f} s); model card: {result.out / 'README.md'}",
                  highlight=False)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except RadsiftError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False)
        sys.exit(2)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)


if __name__ == "__main__":  # pragma: no cover
    main()
