"""``radsift index``: build, add, delete, optimize, push, info, verify, rollback.

Each command parses its flags and calls the index's own function; what follows a write (the HNSW
graphs, a Milvus push, poly-encoder codes) is decided there (:mod:`radsift.index.derived`), so Python
callers get the same index from the same options.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from radsift.cli.help import OPENI, OrderedGroup, command, examples
from radsift.cli.options import (BackendOpt, BatchOpt, BuildModelOpt, EncoderCacheOpt, EncoderOpt, IndexArg,
                                 MilvusUriOpt, ModelOpt, PolyOpt, ThreadsOpt, read_reports, reader_flags)
from radsift.cli.output import console, err_console, report_read_stats, say
from radsift.errors import ConfigError
from radsift.index import Derived, add_to_index, build_index, delete_from_index, optimize_index, places, push_index
from radsift.index.lifecycle import rollback
from radsift.index.verify import verify_index
from radsift.search import Index
from radsift.workflows.adapt import build_adapted_index
from radsift.workflows.watch import run_watch

WorkersOpt = Annotated[int, typer.Option(
    "--workers", metavar="N", min=1, help="Build with N processes on this machine: each loads the model once, "
    "encodes and labels a share of the reports on its share of the cores (--threads: threads of each) and writes it "
    "as a segment; all are committed as one generation and search as a one-process build.")]
RayOpt = Annotated[Optional[str], typer.Option(
    "--ray", metavar="ADDRESS", help="Build on a Ray cluster (host:port, ray://host:port, auto, or local for a Ray "
    "started here; needs the 'ray' extra): one task a share, each writing a segment into the index folder (the same "
    "path on every node); --workers N: N tasks. Refused before anything is written when no cluster answers.")]

index_app = typer.Typer(help="Build and update an index.", no_args_is_help=True, cls=OrderedGroup,
                        epilog=examples(f"radsift index build my-index reports.csv {OPENI}"))


def _print_derived(derived: Derived) -> None:
    """The HNSW graphs, Milvus collections and poly-encoder codes a write derived, one line each."""
    for line in derived.lines():
        console.print(line, highlight=False)


@command(index_app, "build", example=[f"radsift index build my-index reports.csv {OPENI}",
                                       f"radsift index build my-index reports.csv {OPENI} --adapt"])
@reader_flags()
def index_build(
    index_dir: Annotated[Path, typer.Argument(metavar="INDEX_DIR", help="Index directory to create.")],
    corpus: Annotated[list[Path], typer.Argument(metavar="CORPUS", help="Corpus files or folders.")],
    reader: Any = None,
    model: BuildModelOpt = None, threads: ThreadsOpt = None, batch_size: BatchOpt = 64,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Rebuild an existing index (atomically).")] = False,
    lexicon: Annotated[Optional[Path], typer.Option(
        "--lexicon", metavar="FILE", help="Finding lexicon YAML for sentence labels (default: packaged).")] = None,
    labels: Annotated[bool, typer.Option("--labels/--no-labels", help="Label findings and negation in sentences "
                                         "(enables negation-aware search).")] = True,
    adapt: Annotated[bool, typer.Option(
        "--adapt", help="First tune the model on these reports (the default training recipe, no labels needed), "
                        "then index with it; the model is kept in INDEX_DIR/models/.")] = False,
    allow_empty: Annotated[bool, typer.Option("--allow-empty", help="Build an index even when the corpus holds "
                                                                   "no report.")] = False,
    adapt_steps: Annotated[int, typer.Option(
        "--adapt-steps", metavar="N", help="Training steps of --adapt (more: slower, closer to a full "
                                           "'radsift train').")] = 200,
    adapt_seed: Annotated[int, typer.Option(
        "--adapt-seed", metavar="N", help="Seed of --adapt's training (sampling, mining, dropout): one adaptation's "
                                          "search figures move with it, so measure over several. The same seed "
                                          "trains the same model on the same number of threads: give --threads to "
                                          "reproduce one (without it, the cores free when training starts).")] = 0,
    backend: BackendOpt = "auto",
    encoder: EncoderOpt = "torch",
    encoder_cache: EncoderCacheOpt = None,
    milvus_uri: MilvusUriOpt = None,
    poly: PolyOpt = None,
    workers: WorkersOpt = 1,
    ray: RayOpt = None,
) -> None:
    """Build an index from a corpus (encodes sentences and sections, labels findings, builds BM25);
    with --adapt, tune the model on the corpus first."""
    reports, stats = read_reports(corpus, reader)
    derive = {"backend": backend, "milvus_uri": milvus_uri, "poly": poly}
    if adapt:
        if not labels:
            raise ConfigError("--adapt trains on the sentence labels: it cannot be used with --no-labels")
        summary, _ = build_adapted_index(index_dir, reports, steps=adapt_steps, seed=adapt_seed, base_model=model,
                                         threads=threads,
                                         batch_size=batch_size, overwrite=overwrite, lexicon=lexicon, say=say,
                                         encoder_kind=encoder, encoder_cache=encoder_cache, workers=workers, ray=ray,
                                         **derive)
    else:
        summary = build_index(index_dir, reports, model=model, threads=threads, batch_size=batch_size,
                              overwrite=overwrite, lexicon=lexicon, label=labels, allow_empty=allow_empty,
                              encoder_kind=encoder, encoder_cache=encoder_cache, say=say, workers=workers, ray=ray,
                              **derive)
    report_read_stats(stats)
    console.print(f"built: {summary.describe()}", highlight=False)
    _print_derived(summary.derived)


@command(index_app, "add", example="radsift index add my-index new-reports.csv --id-column uid "
                                    "--section findings=findings --section impression=impression")
@reader_flags()
def index_add(
    index_dir: Annotated[Path, typer.Argument(metavar="INDEX_DIR", help="Existing index directory.")],
    corpus: Annotated[Optional[list[Path]], typer.Argument(
        metavar="CORPUS", help="Corpus files or folders with new reports.", show_default=False)] = None,
    reader: Any = None,
    model: ModelOpt = None, threads: ThreadsOpt = None, batch_size: BatchOpt = 64,
    replace: Annotated[bool, typer.Option("--replace", help="Replace reports whose id is already indexed.")] = False,
    backend: BackendOpt = "auto",
    encoder: EncoderOpt = "torch",
    encoder_cache: EncoderCacheOpt = None,
    milvus_uri: MilvusUriOpt = None,
    poly: PolyOpt = None,
    workers: WorkersOpt = 1,
    ray: RayOpt = None,
    watch: Annotated[Optional[Path], typer.Option(
        "--watch", metavar="DIR", rich_help_panel="Drop folder",
        help="Watch a folder: add each new report file once (a ledger in INDEX/ingest/), until Ctrl-C.")] = None,
    interval: Annotated[float, typer.Option("--interval", metavar="SECONDS", rich_help_panel="Drop folder",
                                            help="--watch: seconds between scans.")] = 2.0,
    saved: Annotated[Optional[list[str]], typer.Option(
        "--saved", metavar="NAME", rich_help_panel="Drop folder",
        help="--watch: re-run this saved search with 'new since' after each batch (repeatable).")] = None,
    once: Annotated[bool, typer.Option("--once", rich_help_panel="Drop folder",
                                       help="--watch: scan once and stop.")] = False,
) -> None:
    """Add reports to an index as one new segment: nothing already stored is re-encoded or rewritten
    (--replace marks the old versions deleted; 'radsift index optimize' merges the segments)."""
    if watch is not None:
        if corpus:
            raise ConfigError("give either CORPUS files or --watch DIR, not both")
        add_options = dict(replace=replace, model=model, threads=threads, batch_size=batch_size, encoder_kind=encoder,
                           encoder_cache=encoder_cache, backend=backend, milvus_uri=milvus_uri, poly=poly,
                           workers=workers, ray=ray)
        run_watch(index_dir, watch, reader, interval=interval, saved=saved or [], add_options=add_options,
                  scans=1 if once else None, say=say)
        return
    if not corpus:
        raise ConfigError("give the CORPUS files to add (or --watch DIR)")
    reports, stats = read_reports(corpus, reader)
    summary = add_to_index(index_dir, reports, replace=replace, model=model, threads=threads,
                           batch_size=batch_size, encoder_kind=encoder, encoder_cache=encoder_cache,
                           backend=backend, milvus_uri=milvus_uri, poly=poly, say=say, workers=workers, ray=ray)
    report_read_stats(stats)
    console.print(f"updated: {summary.describe()}", highlight=False)
    _print_derived(summary.derived)


@command(index_app, "delete", example=["radsift index delete my-index r17 r42",
                                        "radsift index delete my-index --ids-file withdrawn.txt"])
def index_delete(
    index_dir: IndexArg,
    report_ids: Annotated[Optional[list[str]], typer.Argument(metavar="REPORT_ID...", help="Ids of the reports "
                                                                                          "to delete.")] = None,
    ids_file: Annotated[Optional[Path], typer.Option("--ids-file", metavar="FILE", help="A text file of report "
                                                     "ids to delete, one a line.")] = None,
    backend: BackendOpt = "auto",
) -> None:
    """Delete reports from an index (a new generation marks them deleted; 'radsift index optimize' reclaims
    the space). An id that is not in the index is an error naming it, and nothing is deleted."""
    ids = list(report_ids or [])
    if ids_file is not None:
        try:
            ids += [line.strip() for line in ids_file.read_text(encoding="utf-8").splitlines() if line.strip()]
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"--ids-file {ids_file}: cannot be read ({exc})") from None
    if not ids:
        raise ConfigError("give the report ids to delete (REPORT_ID... or --ids-file FILE)")
    summary = delete_from_index(index_dir, ids, backend=backend, say=say)
    console.print(summary.describe(), highlight=False)
    _print_derived(summary.derived)


@command(index_app, "optimize", example="radsift index optimize my-index")
def index_optimize(index_dir: IndexArg, backend: BackendOpt = "auto") -> None:
    """Merge an index's segments (one per add) into one and drop deleted reports for good (a lone segment
    written before this version's location flags is written again with them); nothing is re-encoded.
    Atomic: interrupted, the index stays as it was."""
    summary = optimize_index(index_dir, progress=True, backend=backend, say=say)
    console.print(summary.describe(), highlight=False)
    _print_derived(summary.derived)


@command(index_app, "push", example=["radsift index push my-index",
                                      "radsift index push my-index --milvus-uri http://milvus.example.org:19530"])
def index_push(index_dir: IndexArg, milvus_uri: MilvusUriOpt = None) -> None:
    """Copy the live generation's vectors into Milvus, so that --backend milvus (and auto) searches there:
    converts an index built for numpy/hnsw, and finishes a push that was interrupted."""
    _print_derived(push_index(index_dir, milvus_uri, say=say))


@command(index_app, "info", example="radsift index info my-index")
def index_info(index_dir: IndexArg) -> None:
    """Print an index's manifest (model, counts, sections, metadata keys, times, segments) as JSON."""
    index = Index.open(index_dir)
    stats = index.stats()
    stats["segments"] = [{"name": s["name"], "reports": s["counts"]["reports"], "sentences": s["counts"]["sentences"],
                          "sections": s["counts"]["sections"], "deleted": len(s.get("deleted", [])),
                          # False: written before this version's location flags (`index optimize` writes them)
                          "location_flags": places.current(s)}
                         for s in index.store.manifest.segments]
    console.print_json(json.dumps(stats))


@command(index_app, "verify", example=["radsift index verify my-index", "radsift index verify my-index --deep"])
def index_verify(
    index_dir: IndexArg,
    deep: Annotated[bool, typer.Option("--deep", help="Also recompute every file's checksum and read every vector "
                                                     "and the SQLite file (slower: reads the whole index).")] = False,
) -> None:
    """Check the files of every segment the live generation lists: sizes and array shapes against its
    manifest (--deep: checksums, vectors, SQLite). Exits 1 naming each bad file; recover with 'radsift index
    rollback' or a rebuild."""
    problems = verify_index(index_dir, deep=deep)
    only_notes = all("no checksums" in p.reason for p in problems)
    for p in problems:
        err_console.print(f"{'note' if only_notes else 'bad'}: {p}", highlight=False, soft_wrap=True)
    if problems and not only_notes:
        sys.exit(1)
    console.print(f"ok: {index_dir} ({'checksums, vectors and SQLite' if deep else 'sizes and shapes'} checked)",
                  highlight=False)


@command(index_app, "rollback", example="radsift index rollback my-index")
def index_rollback(index_dir: IndexArg) -> None:
    """Make the previous generation live again (after a bad add, or a damaged live generation)."""
    old, new = rollback(index_dir)
    console.print(f"rolled back {index_dir}: {old} -> {new} (a running server follows by itself)", highlight=False)
