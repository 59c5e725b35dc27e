"""``radsift search``, ``export`` and ``saved``: search an index, export a cohort, saved searches.

(The functions of this module are as they were in the single-file CLI; their imports stay inside them
until the search-options rework lands here.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from radsift.cli.help import OrderedGroup, command, examples, top_level_commands
from radsift.cli.options import (AlphaOpt, BackendOpt, ConceptsOpt, IndexArg, LevelOpt, MilvusUriOpt, ModeOpt, ModelOpt,
                                 NegationOpt, PrfOpt, ReadingOpt, RerankOpt, RerankerOpt, SavedDirOpt, TargetOpt,
                                 ThreadsOpt, UnitOpt, WhereOpt)
from radsift.cli.output import console, err_console
from radsift.errors import ConfigError

#: This module's top-level commands (merged into ``radsift`` by :mod:`radsift.cli`).
app = top_level_commands()


@command(app, "search", example=[
    'radsift search my-index "enlarged heart" --target impression',
    'radsift search my-index "pneumothorax" --mode bm25 --where indication~chest --json',
    'radsift search my-index "cardiomegaly" --reading cardiomegaly=absent',
])
def search_cmd(
    index_dir: IndexArg,
    query: Annotated[str, typer.Argument(metavar="QUERY", help="Free-text query, e.g. \"no pleural effusion\".")],
    k: Annotated[int, typer.Option("-k", "--k", metavar="N", help="Number of hits.")] = 10,
    mode: ModeOpt = "hybrid", level: LevelOpt = "report", where: WhereOpt = None, target: TargetOpt = None,
    unit: UnitOpt = "sentence", negation: NegationOpt = "aware", model: ModelOpt = None,
    threads: ThreadsOpt = None, as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable hits.")] = False,
    rerank: RerankOpt = 0, reranker: RerankerOpt = None, reading: ReadingOpt = None, alpha: AlphaOpt = None,
    concepts: ConceptsOpt = True, prf: PrfOpt = False,
    offset: Annotated[int, typer.Option("--offset", metavar="N", help="Skip the first N hits (the next page).")] = 0,
    backend: BackendOpt = "auto", milvus_uri: MilvusUriOpt = None,
    aspect: Annotated[Optional[str], typer.Option(
        "--aspect", metavar="ASPECT", help="--unit passage: passages of this aspect (history, treatment, ...; or "
        "write the query as \"ENTITY | ASPECT\").")] = None,
    first_stage: Annotated[Optional[Path], typer.Option(
        "--first-stage", metavar="DIR", help="--unit passage: a poly-encoder folder scores every passage in the place "
        "of the index's bi-encoder (--mode dense: it alone; hybrid: fused with BM25). Its codes are cached in "
        "INDEX_DIR/cache/poly/.")] = None,
) -> None:
    """Search an index: prints how the query was read and how many reports state it, then each hit
    with its relevance band, the status of the query's findings in it and the matched words highlighted.
    With --unit passage: section passages with their heading and aspect, for "ENTITY | ASPECT" or a question."""
    from radsift.search import Index
    from radsift.search.display import print_hits

    if unit == "passage" or aspect or "|" in query:
        _search_passages(index_dir, query, k=k, aspect=aspect, mode=mode, where=where, model=model, threads=threads,
                         rerank=rerank, reranker=reranker, as_json=as_json, backend=backend, milvus_uri=milvus_uri,
                         first_stage=first_stage)
        return
    if first_stage is not None:
        raise ConfigError("--first-stage scores section passages: use it with --unit passage")
    index = Index.open(index_dir, model=model, threads=threads, reranker=reranker if rerank else None,
                       backend=backend, milvus_uri=milvus_uri)
    hits = index.search(query, k=k, mode=mode, level=level, where=where, target=target, unit=unit,
                        negation=negation, rerank=rerank, reading=reading, alpha=alpha, concepts=concepts, prf=prf,
                        offset=offset)
    if as_json:
        typer.echo(json.dumps({"query": query, "mode": mode, "level": level, "reading": hits.reading.to_dict(),
                               **hits.page_dict(), "hits": [h.to_dict() for h in hits]}, ensure_ascii=False))
    else:
        print_hits(console, query, hits)


def _search_passages(index_dir, query, *, k, aspect, mode, where, model, threads, rerank, reranker, as_json,
                     backend, milvus_uri, first_stage=None) -> None:
    """``radsift search --unit passage``: passages with heading, aspect and matched sentences (radsift.search.passages)."""
    from rich.text import Text

    from radsift.search import Index
    from radsift.search.passages import PolyFirstStage, load_passage_reranker, parse_passage_query, search_passages

    parsed = parse_passage_query(query, aspect)  # an unknown aspect fails before the index opens
    stage = PolyFirstStage(first_stage, threads, say=lambda m: err_console.print(m, highlight=False)) \
        if first_stage is not None else None  # a folder that is not a poly-encoder fails here too
    index = Index.open(index_dir, model=model, threads=threads, backend=backend, milvus_uri=milvus_uri)
    rr = load_passage_reranker(reranker, threads) if rerank and reranker else None
    hits = search_passages(index, query, k=k, aspect=aspect, mode=mode, where=where, rerank=rerank, reranker=rr,
                           first_stage=stage)
    if as_json:
        typer.echo(json.dumps({"query": query, "entity": parsed.entity, "aspect": parsed.aspect, "text": parsed.text,
                               "hits": [h.to_dict() for h in hits]}, ensure_ascii=False))
        return
    console.print(f"passages for {parsed.text!r}" + (f" (aspect {parsed.aspect})" if parsed.aspect else ""),
                  highlight=False)
    for h in hits:
        console.print(f"{h.rank}. {h.report_id}  {h.heading.upper()} [{h.aspect}]  score {h.score:.3f}", highlight=False)
        body = Text(h.text)
        for a, b in h.sentences:
            body.stylize("underline", a, b)
        for a, b in h.highlights:
            body.stylize("bold yellow", a, b)
        console.print(body)


IncludeOpt = Annotated[Optional[str], typer.Option(
    "--include", metavar="BANDS",
    help="states (reports stating the query's reading; the default when it names a finding), related "
         "(and those likely relevant; the default otherwise) or all (the whole ranked list).")]
MaxRowsOpt = Annotated[int, typer.Option(
    "--max-rows", metavar="N", help="Refuse a cohort of more reports than this (nothing is written).")]


@command(app, "export", example=['radsift export my-index "pneumothorax" --out cohort.csv',
                                 'radsift export my-index "no pleural effusion" --out cohort.jsonl --include related'])
def export_cmd(
    index_dir: IndexArg,
    query: Annotated[str, typer.Argument(metavar="QUERY", help="Free-text query, e.g. \"pneumothorax\".")],
    out: Annotated[Path, typer.Option("--out", metavar="FILE", help="Cohort file to write: .csv or .jsonl.")],
    fmt: Annotated[Optional[str], typer.Option("--format", metavar="csv|jsonl", help="Default: from --out's suffix.")] = None,
    include: IncludeOpt = None, max_rows: MaxRowsOpt = 10000,
    mode: ModeOpt = "hybrid", where: WhereOpt = None, target: TargetOpt = None, negation: NegationOpt = "aware",
    reading: ReadingOpt = None, alpha: AlphaOpt = None, concepts: ConceptsOpt = True, model: ModelOpt = None,
    threads: ThreadsOpt = None,
    audit_log: Annotated[Optional[Path], typer.Option(
        "--audit-log", metavar="FILE", help="Audit trail to append the export to (default INDEX_DIR/audit/exports.jsonl).")] = None,
) -> None:
    """Export every report that states the query's reading (a cohort) with its evidence sentences,
    offsets, status, cue, score and band, plus a provenance sidecar (FILE.provenance.json)."""
    from radsift.search import Index
    from radsift.search.cohort import collect_cohort, cohort_format, write_cohort

    cohort_format(out, fmt)  # a bad --out or --format fails before the search
    audit = _export_audit(index_dir, audit_log)
    index = Index.open(index_dir, model=model, threads=threads)
    cohort = collect_cohort(index, query, include=include, max_rows=max_rows, mode=mode, where=where, target=target,
                            negation=negation, reading=reading, alpha=alpha, concepts=concepts)
    path, side = write_cohort(cohort, out, fmt)
    audit.write("export", client="cli", token_id=None, user=cohort.provenance()["user"], query=cohort.query,
                params=cohort.options, include=cohort.include, rows=len(cohort.rows), file=str(path.resolve()),
                generation=cohort.index.get("generation"))
    _print_cohort_summary(cohort)
    console.print(f"wrote {len(cohort.rows)} reports to {path} (provenance: {side.name})", highlight=False)


def _export_audit(index_dir: Path, audit_log: Optional[Path]):
    from radsift.serve.audit import AuditLog

    return AuditLog(audit_log if audit_log is not None else Path(index_dir) / "audit" / "exports.jsonl")


def _print_cohort_summary(cohort) -> None:
    from radsift.search.display import reading_text

    console.print(reading_text(cohort.reading))
    if cohort.matching is not None:
        console.print(f"{cohort.matching} of {cohort.total} ranked reports state the reading; "
                      f"kept: {cohort.include}", highlight=False)


saved_app = typer.Typer(help="Saved searches: run again later, list what is new.", no_args_is_help=True,
                        cls=OrderedGroup, epilog=examples('radsift saved add my-index ptx "pneumothorax"',
                                                          "radsift saved run my-index ptx --new"))
NameArg = Annotated[str, typer.Argument(metavar="NAME", help="Name: letters, digits, '.', '_', '-'.", show_default=False)]


@command(saved_app, "add", example='radsift saved add my-index ptx "pneumothorax" --mode hybrid')
def saved_add(
    index_dir: IndexArg, name: NameArg,
    query: Annotated[str, typer.Argument(metavar="QUERY", help="The query to save.")],
    include: IncludeOpt = None, mode: ModeOpt = "hybrid", where: WhereOpt = None, target: TargetOpt = None,
    negation: NegationOpt = "aware", reading: ReadingOpt = None, alpha: AlphaOpt = None, concepts: ConceptsOpt = True,
    model: ModelOpt = None, saved_dir: SavedDirOpt = None,
    replace: Annotated[bool, typer.Option("--replace", help="Replace a saved search of that name.")] = False,
) -> None:
    """Save a search by name (checked against the index first)."""
    from radsift.search import Index
    from radsift.search.saved import SavedSearches

    index = Index.open(index_dir, model=model)
    saved = SavedSearches.of_index(index_dir, saved_dir).add(
        index, name, query, include=include, replace=replace, mode=mode, where=where, target=target,
        negation=negation, reading=reading, alpha=alpha, concepts=concepts)
    console.print(f"saved {saved.name!r}: {saved.query!r}", highlight=False)


@command(saved_app, "list", example="radsift saved list my-index")
def saved_list(index_dir: IndexArg, saved_dir: SavedDirOpt = None,
               as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable searches.")] = False) -> None:
    """List the saved searches of an index, with when each last ran."""
    from radsift.search.saved import SavedSearches

    searches = SavedSearches.of_index(index_dir, saved_dir).list()
    if as_json:
        typer.echo(json.dumps([s.to_dict() for s in searches], ensure_ascii=False))
        return
    if not searches:
        console.print("no saved searches", highlight=False)
    for s in searches:
        last = s.last_run or {}
        when = f"last run {last['time']} ({last.get('rows', 0)} reports)" if last else "never run"
        console.print(f"{s.name}: {s.query!r} [{s.options.get('mode', 'hybrid')}] {when}", highlight=False)


@command(saved_app, "run", example=["radsift saved run my-index ptx", "radsift saved run my-index ptx --new --out new.csv"])
def saved_run(
    index_dir: IndexArg, name: NameArg,
    new: Annotated[bool, typer.Option("--new", help="Only reports added to the index since the last run.")] = False,
    out: Annotated[Optional[Path], typer.Option("--out", metavar="FILE", help="Also export the rows (.csv or .jsonl).")] = None,
    mark: Annotated[bool, typer.Option("--mark/--no-mark", help="Record this run for the next --new.")] = True,
    max_rows: MaxRowsOpt = 10000, model: ModelOpt = None, threads: ThreadsOpt = None, saved_dir: SavedDirOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable rows.")] = False,
    audit_log: Annotated[Optional[Path], typer.Option(
        "--audit-log", metavar="FILE", help="With --out: the audit trail (default INDEX_DIR/audit/exports.jsonl).")] = None,
) -> None:
    """Run a saved search: its reports, or with --new only those added since its last run."""
    from radsift.search import Index
    from radsift.search.cohort import cohort_format, write_cohort
    from radsift.search.saved import SavedSearches

    if out is not None:
        cohort_format(out, None)
    audit = _export_audit(index_dir, audit_log) if out is not None else None
    index = Index.open(index_dir, model=model, threads=threads)
    run = SavedSearches.of_index(index_dir, saved_dir).run(index, name, new=new, mark=mark, max_rows=max_rows)
    for warning in run.warnings:
        err_console.print(f"warning: {warning}", highlight=False)
    rows = run.rows
    if as_json:
        typer.echo(json.dumps({"name": run.search.name, "query": run.search.query, "new_only": new,
                               "first_run": run.first_run, "warnings": run.warnings, "matching": run.cohort.matching,
                               "rows": [r.to_dict() for r in rows]}, ensure_ascii=False))
    else:
        _print_cohort_summary(run.cohort)
        what = "new since the last run" if new and not run.first_run else "in all"
        if new and run.first_run:
            console.print("first run: every report counts as new", highlight=False)
        console.print(f"{len(rows)} reports {what}", highlight=False)
        for r in rows:
            e = r.evidence[0] if r.evidence else None
            text = e.text if e is not None else (r.hit.sentence.text if r.hit.sentence is not None else "")
            console.print(f"{r.hit.rank:>5}. {r.hit.report_id}  [{r.hit.band}] {text}", highlight=False, soft_wrap=True)
    if out is not None:
        from radsift.search.cohort import Cohort

        part = Cohort(**{**run.cohort.__dict__, "rows": rows})
        path, side = write_cohort(part, out, saved_search=name, new_only=new)
        audit.write("export", client="cli", token_id=None, user=part.provenance()["user"], query=part.query,
                    params=part.options, include=part.include, rows=len(rows), file=str(path.resolve()),
                    saved_search=name, new_only=new)
        console.print(f"wrote {len(rows)} reports to {path} (provenance: {side.name})", highlight=False)


@command(saved_app, "rm", example="radsift saved rm my-index ptx")
def saved_rm(index_dir: IndexArg, name: NameArg, saved_dir: SavedDirOpt = None) -> None:
    """Remove a saved search."""
    from radsift.search.saved import SavedSearches

    SavedSearches.of_index(index_dir, saved_dir).remove(name)
    console.print(f"removed {name!r}", highlight=False)
