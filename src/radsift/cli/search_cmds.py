"""``radsift search``, ``export`` and ``saved``: search an index, export a cohort, saved searches.

Their search flags come from the one declaration of the search options
(:class:`radsift.search.options.SearchOptions`, through :func:`~radsift.cli.options.search_flags`):
each command receives one ``SearchOptions``, the object the API and Python build too.

They are audited like the web service's endpoints (:mod:`radsift.serve.audit`): a search or a saved
run is a line of ``INDEX_DIR/audit/searches.jsonl`` (``--audit-log`` elsewhere, ``--no-audit`` none),
written before anything is printed; an export is a line of ``INDEX_DIR/audit/exports.jsonl`` naming the
reports (ids, or their hash and count), written before the file: no line, no file.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.text import Text

from radsift.cli.help import OrderedGroup, command, examples, top_level_commands
from radsift.cli.options import (BackendOpt, ForceOpt, IndexArg, MilvusUriOpt, ModelOpt, RerankerOpt, SavedDirOpt,
                                 ThreadsOpt, check_out, search_flags)
from radsift.cli.output import console, err_console
from radsift.errors import ConfigError, RadsiftError
from radsift.index.format import CURRENT
from radsift.search import Index
from radsift.search.cohort import (COHORT_OPTIONS, KEPT_BANDS, Cohort, cohort_format, cohort_ids, collect_cohort,
                                   plain_options, provenance_path, write_cohort)
from radsift.search.cohort import check_out as check_writable
from radsift.search.display import print_hits, reading_text
from radsift.search.options import SearchOptions
from radsift.search.patient_cohort import check_patients_out, patients_path, write_patients
from radsift.search.passages import (PolyFirstStage, load_passage_reranker, parse_passage_query, rerank_summary,
                                     search_passages)
from radsift.search.saved import SavedSearches
from radsift.search.timeline import require_patients
from radsift.serve.audit import AuditLog, id_summary, index_audit_log, local_user

#: This module's top-level commands (merged into ``radsift`` by :mod:`radsift.cli`).
app = top_level_commands()

#: The search options a search's audit line records (those the web service's line records).
AUDITED_OPTIONS = ("k", "mode", "level", "target", "unit", "where", "since", "until", "patient", "negation", "rerank",
                   "reading", "alpha", "concepts", "read_as", "prf", "offset")
SearchAuditOpt = Annotated[Optional[Path], typer.Option(
    "--audit-log", metavar="FILE", help="Audit trail to append the search to (query, options, result ids; default "
                                        "INDEX_DIR/audit/searches.jsonl).")]
NoAuditOpt = Annotated[bool, typer.Option(
    "--no-audit", help="Write no audit line (e.g. an index on read-only media); an export to a file (export "
                       "--out) is always audited.")]


def _search_audit(index_dir: Path, audit_log: Optional[Path], no_audit: bool) -> Optional[AuditLog]:
    """The audit log of a search: ``--audit-log``, else the index's own; None with ``--no-audit``."""
    if no_audit:
        if audit_log is not None:
            raise ConfigError("--no-audit and --audit-log: choose one")
        return None
    return index_audit_log(index_dir, "searches.jsonl", audit_log, off_hint=", or --no-audit")


def _index_first(command: str, index_dir: Path, query: str) -> None:
    """A newcomer's ``radsift search "pneumothorax" my-index``: the index comes first, say so (rather than "no such
    index: pneumothorax")."""
    try:
        swapped = not index_dir.exists() and (Path(query) / CURRENT).is_file()
    except (OSError, ValueError):  # a query too long for a path, or holding a NUL byte: no index
        swapped = False
    if swapped:
        raise ConfigError(f"{index_dir} is no index, but {query} is one: the index comes first, "
                          f"radsift {command} {query} \"{index_dir}\"")


def _audit_search(audit: Optional[AuditLog], event: str, query: str, ids, **details) -> None:
    """One line for a search whose results are about to be shown (an AuditLogError: nothing is shown)."""
    if audit is not None:
        audit.write(event, client="cli", token_id=None, user=local_user(), query=" ".join(query.split()),
                    **details, **id_summary(ids, "result_ids"))


@command(app, "search", example=[
    'radsift search my-index "enlarged heart" --target impression',
    'radsift search my-index "pneumothorax" --mode bm25 --where indication~chest --json',
    'radsift search my-index "cardiomegaly" --reading cardiomegaly=absent',
])
@search_flags()
def search_cmd(
    index_dir: IndexArg,
    query: Annotated[str, typer.Argument(metavar="QUERY", help="Free-text query, e.g. \"no pleural effusion\".")],
    options: SearchOptions,
    model: ModelOpt = None, threads: ThreadsOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable hits.")] = False,
    reranker: RerankerOpt = None, backend: BackendOpt = "auto", milvus_uri: MilvusUriOpt = None,
    aspect: Annotated[Optional[str], typer.Option(
        "--aspect", metavar="ASPECT", help="--unit passage: passages of this aspect (history, treatment, ...; or "
        "write the query as \"ENTITY | ASPECT\").")] = None,
    first_stage: Annotated[Optional[Path], typer.Option(
        "--first-stage", metavar="DIR", help="--unit passage: a poly-encoder folder scores every passage in the place "
        "of the index's bi-encoder (--mode dense: it alone; hybrid: fused with BM25). Its codes are cached in "
        "INDEX_DIR/cache/poly/.")] = None,
    audit_log: SearchAuditOpt = None, no_audit: NoAuditOpt = False,
) -> None:
    """Search an index: prints how the query was read and how many reports state it, then each hit
    with its relevance band, the status of the query's findings in it and the matched words highlighted.
    With --unit passage: section passages with their heading and aspect, for "ENTITY | ASPECT" or a question."""
    _index_first("search", index_dir, query)
    if no_audit and audit_log is not None:
        raise ConfigError("--no-audit and --audit-log: choose one")
    if options.unit == "passage" or aspect or "|" in query:
        _search_passages(index_dir, query, options, aspect=aspect, model=model, threads=threads, reranker=reranker,
                         as_json=as_json, backend=backend, milvus_uri=milvus_uri, first_stage=first_stage,
                         audit_log=audit_log, no_audit=no_audit)
        return
    if first_stage is not None:
        raise ConfigError("--first-stage scores section passages: use it with --unit passage")
    index = Index.open(index_dir, model=model, threads=threads, reranker=reranker if options.rerank else None,
                       backend=backend, milvus_uri=milvus_uri)
    audit = _search_audit(index_dir, audit_log, no_audit)
    hits = index.search(query, options)
    _audit_search(audit, "search", query, [h.report_id for h in hits],
                  params=plain_options(options.pick(AUDITED_OPTIONS)))
    if as_json:
        typer.echo(json.dumps({"query": query, "mode": options.mode, "level": options.level,
                               "reading": hits.reading.to_dict(), **hits.page_dict(),
                               "hits": [h.to_dict() for h in hits]}, ensure_ascii=False))
    else:
        print_hits(console, query, hits)


def _search_passages(index_dir, query, options: SearchOptions, *, aspect, model, threads, reranker, as_json,
                     backend, milvus_uri, first_stage=None, audit_log=None, no_audit=False) -> None:
    """``radsift search --unit passage``: passages with heading, aspect and matched sentences (radsift.search.passages)."""
    parsed = parse_passage_query(query, aspect)  # an unknown aspect fails before the index opens
    stage = PolyFirstStage(first_stage, threads, say=lambda m: err_console.print(m, highlight=False)) \
        if first_stage is not None else None  # a folder that is not a poly-encoder fails here too
    index = Index.open(index_dir, model=model, threads=threads, backend=backend, milvus_uri=milvus_uri)
    rr = load_passage_reranker(reranker, threads) if options.rerank and reranker else None
    audit = _search_audit(index_dir, audit_log, no_audit)
    hits = search_passages(index, query, k=options.k, aspect=aspect, mode=options.mode, where=options.where,
                           rerank=options.rerank, reranker=rr, first_stage=stage)
    _audit_search(audit, "passages", query, [h.report_id for h in hits], params={
        "aspect": parsed.aspect, **plain_options(options.pick(("k", "mode", "rerank", "where"))),
        "first_stage": "poly" if stage is not None else "index"})
    summary = rerank_summary(rr, options.rerank) if rr is not None else None
    if as_json:
        typer.echo(json.dumps({"query": query, "entity": parsed.entity, "aspect": parsed.aspect, "text": parsed.text,
                               **({"reranker": summary} if summary else {}),
                               "hits": [h.to_dict() for h in hits]}, ensure_ascii=False))
        return
    console.print(f"passages for {parsed.text!r}" + (f" (aspect {parsed.aspect})" if parsed.aspect else ""),
                  highlight=False)
    if summary:
        console.print(summary["note"], highlight=False)
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
@search_flags(only=COHORT_OPTIONS)
def export_cmd(
    index_dir: IndexArg,
    query: Annotated[str, typer.Argument(metavar="QUERY", help="Free-text query, e.g. \"pneumothorax\".")],
    out: Annotated[Path, typer.Option("--out", metavar="FILE", help="Cohort file to write: .csv or .jsonl.")],
    fmt: Annotated[Optional[str], typer.Option("--format", metavar="csv|jsonl", help="Default: from --out's suffix.")] = None,
    include: IncludeOpt = None, max_rows: MaxRowsOpt = 10000,
    options: SearchOptions = SearchOptions(), model: ModelOpt = None, threads: ThreadsOpt = None,
    audit_log: Annotated[Optional[Path], typer.Option(
        "--audit-log", metavar="FILE", help="Audit trail to append the export to (default INDEX_DIR/audit/exports.jsonl).")] = None,
    force: ForceOpt = False,
    patients: Annotated[bool, typer.Option(
        "--patients", help="Also write one row per patient beside the cohort (FILE -> STEM.patients.csv|jsonl): "
                           "reports in the cohort, first and last date, the first report with its evidence, the "
                           "report ids.")] = False,
) -> None:
    """Export every report that states the query's reading (a cohort) with its evidence sentences,
    offsets, status, cue, score and band, plus a provenance sidecar (FILE.provenance.json)."""
    _index_first("export", index_dir, query)
    cohort_format(out, fmt)  # a bad --out or --format fails before the search
    check_writable(out)
    beside = [provenance_path(out)] + ([check_patients_out(out)] if patients else [])
    check_out(out, force, beside=beside)
    index = Index.open(index_dir, model=model, threads=threads)
    if patients:
        require_patients(index.manifest.metadata_keys, index_dir, "--patients: ")
    audit = _export_audit(index_dir, audit_log)
    cohort = collect_cohort(index, query, include=include, max_rows=max_rows, **options.pick(COHORT_OPTIONS))
    path, side, *by_patient = _audited_write(audit, cohort, out, fmt, patients=patients,
                                             generation=cohort.index.get("generation"))
    _print_cohort_summary(cohort)
    console.print(f"wrote {len(cohort.rows)} reports to {path} (provenance: {side.name})", highlight=False)
    if by_patient:
        where, count, unnamed = by_patient
        console.print(f"wrote {count} patients to {where}" + (f" ({unnamed} reports name no patient)" if unnamed
                                                              else ""), highlight=False)


def _export_audit(index_dir: Path, audit_log: Optional[Path]) -> AuditLog:
    return index_audit_log(index_dir, "exports.jsonl", audit_log)


def _audited_write(audit: AuditLog, cohort: Cohort, out: Path, fmt: Optional[str] = None, *, patients: bool = False,
                   **details):
    """Write the cohort file (and, with ``patients``, its patients file) after its audit line (which reports,
    whose, where): no line, no file. A file that then cannot be written is a second line (``export-failed``),
    so the trail says it never left."""
    file = str(Path(out).resolve())
    if patients:
        details["patients_file"] = str(patients_path(out).resolve())
    audit.write("export", client="cli", token_id=None, user=local_user(), query=cohort.query,
                params=cohort.options, include=cohort.include, rows=len(cohort.rows), file=file, **details,
                **id_summary(cohort_ids(cohort.rows)))
    extra = {k: v for k, v in details.items() if k in ("saved_search", "new_only")}
    try:
        written = write_cohort(cohort, out, fmt, **extra)
        return written + write_patients(cohort, out, fmt) if patients else written
    except RadsiftError as exc:
        try:
            audit.write("export-failed", client="cli", token_id=None, user=local_user(), file=file,
                        error=str(exc)[:200])
        except RadsiftError:
            pass  # the first error is the one to show
        raise


def _print_cohort_summary(cohort) -> None:
    console.print(reading_text(cohort.reading))
    if cohort.matching is not None:
        bands = Counter(row.hit.band for row in cohort.rows)
        kept = ", ".join(f"{bands.get(band, 0)} {band}" for band in KEPT_BANDS[cohort.include])
        console.print(f"{cohort.matching} of {cohort.total} ranked reports state the reading; "
                      f"kept ({cohort.include}): {kept}", highlight=False)


saved_app = typer.Typer(help="Saved searches: run again later, list what is new.", no_args_is_help=True,
                        cls=OrderedGroup, epilog=examples('radsift saved add my-index ptx "pneumothorax"',
                                                          "radsift saved run my-index ptx --new"))
NameArg = Annotated[str, typer.Argument(metavar="NAME", help="Name: letters, digits, '.', '_', '-'.", show_default=False)]


@command(saved_app, "add", example='radsift saved add my-index ptx "pneumothorax" --mode hybrid')
@search_flags(only=COHORT_OPTIONS)
def saved_add(
    index_dir: IndexArg, name: NameArg,
    query: Annotated[str, typer.Argument(metavar="QUERY", help="The query to save.")],
    include: IncludeOpt = None, options: SearchOptions = SearchOptions(),
    model: ModelOpt = None, saved_dir: SavedDirOpt = None,
    replace: Annotated[bool, typer.Option("--replace", help="Replace a saved search of that name.")] = False,
) -> None:
    """Save a search by name (checked against the index first)."""
    index = Index.open(index_dir, model=model)
    saved = SavedSearches.of_index(index_dir, saved_dir).add(
        index, name, query, include=include, replace=replace, **options.pick(COHORT_OPTIONS))
    console.print(f"saved {saved.name!r}: {saved.query!r}", highlight=False)


@command(saved_app, "list", example="radsift saved list my-index")
def saved_list(index_dir: IndexArg, saved_dir: SavedDirOpt = None,
               as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable searches.")] = False) -> None:
    """List the saved searches of an index, with when each last ran."""
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
        "--audit-log", metavar="FILE", help="The audit trail (default INDEX_DIR/audit/exports.jsonl with --out, "
                                            "else INDEX_DIR/audit/searches.jsonl).")] = None,
    no_audit: NoAuditOpt = False,
    force: ForceOpt = False,
) -> None:
    """Run a saved search: its reports, or with --new only those added since its last run."""
    if out is not None:
        cohort_format(out, None)
        check_writable(out)
        check_out(out, force, beside=[provenance_path(out)])
        if no_audit:
            raise ConfigError("--no-audit: an export (--out) is always audited; pass --audit-log FILE elsewhere")
    elif no_audit and audit_log is not None:
        raise ConfigError("--no-audit and --audit-log: choose one")
    index = Index.open(index_dir, model=model, threads=threads)
    audit = _export_audit(index_dir, audit_log) if out is not None else _search_audit(index_dir, audit_log, no_audit)
    searches = SavedSearches.of_index(index_dir, saved_dir)
    # Recorded at the end, once the rows are printed, written and audited: a failed run records nothing.
    run = searches.run(index, name, new=new, mark=False, max_rows=max_rows)
    for warning in run.warnings:
        err_console.print(f"warning: {warning}", highlight=False)
    rows = run.rows
    if out is None:
        _audit_search(audit, "saved-run", run.search.query, cohort_ids(rows), name=name, new_only=new, marked=mark)
    else:
        part = Cohort(**{**run.cohort.__dict__, "rows": rows})
        path, side = _audited_write(audit, part, out, saved_search=name, new_only=new)
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
        console.print(f"wrote {len(rows)} reports to {path} (provenance: {side.name})", highlight=False)
    if mark:
        searches.record(run)


@command(saved_app, "rm", example="radsift saved rm my-index ptx")
def saved_rm(index_dir: IndexArg, name: NameArg, saved_dir: SavedDirOpt = None) -> None:
    """Remove a saved search."""
    SavedSearches.of_index(index_dir, saved_dir).remove(name)
    console.print(f"removed {name!r}", highlight=False)
