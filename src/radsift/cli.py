"""The ``radsift`` command line: parses arguments and calls the package, nothing more.

- Commands are listed in workflow order (:data:`COMMAND_ORDER`); each help shows an example and
  metavars (``DIR``, ``N``, ``KEY=VALUE``), never Python types.
- Every command that reads a corpus takes the reader flags declared once in :data:`READER_FLAGS`
  (:func:`reader_flags` adds them and hands the command one :class:`~radsift.corpus.ReaderOptions`).
- User-facing errors (:class:`radsift.errors.RadsiftError`) are handled in one place,
  :meth:`RadsiftGroup.main` (what :func:`main` and ``CliRunner`` run): one line ``error: ...``
  naming the file, row, field or option, and exit status 2. Commands never catch them.
- Third-party progress bars are off (:func:`quiet_third_party`); radsift's own progress
  (:mod:`radsift.progress`) is a bar on a terminal and a line every 10 seconds elsewhere.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any, Callable, Optional, Sequence

import typer
from rich.console import Console
from rich.text import Text
from typer.core import TyperCommand, TyperGroup

from radsift.errors import ConfigError, IndexDamagedError, RadsiftError
from radsift.search import Index
from radsift.search.cohort import COHORT_OPTIONS, Cohort, cohort_format, collect_cohort, write_cohort
from radsift.search.display import print_hits, reading_text
from radsift.search.options import SearchOptions, cli_options
from radsift.search.passages import PolyFirstStage, load_passage_reranker, parse_passage_query, search_passages
from radsift.search.saved import SavedSearches
from radsift.serve.audit import AuditLog

#: ``radsift --help`` lists the commands in the order a user runs them, then the demo.
COMMAND_ORDER = ("index", "search", "ask", "draft-impression", "label", "train", "bench", "run", "eval", "serve", "demo", "demo-corpus")

console = Console()
err_console = Console(stderr=True)


def quiet_third_party() -> None:
    """Silence the progress bars and chatter of transformers, huggingface_hub and tqdm.

    Environment variables cover libraries not imported yet (they read them on import); the calls
    cover those already imported (tests, ``radsift demo`` in one process). A user's own settings win.
    """
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")
    if "huggingface_hub" in sys.modules:
        try:
            sys.modules["huggingface_hub"].utils.disable_progress_bars()
        except AttributeError:  # pragma: no cover - an older huggingface_hub
            pass
    if "transformers" in sys.modules:
        try:
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
            hf_logging.set_verbosity_error()
        except (ImportError, AttributeError):  # pragma: no cover
            pass


# ---------------------------------------------------------------------------------------------
# Help: workflow order, no Python types
# ---------------------------------------------------------------------------------------------
def _no_python_types(params: list) -> list:
    """Help shows metavars, not Python types: a flag takes no value (typer would print ``<bool>``),
    and an argument is named by its metavar already (typer would add ``<path>``, ``<str>``)."""
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
        elif param.param_type_name == "argument":
            param.display_type_rich = _no_type
    return params


def _no_type(ctx=None) -> None:
    return None


class RadsiftCommand(TyperCommand):
    """A command whose flags (``--json``, ``--help`` ...) show no value type in its help."""

    def get_params(self, ctx):
        return _no_python_types(super().get_params(ctx))


class RadsiftGroup(TyperGroup):
    """A group that lists its commands in :data:`COMMAND_ORDER`; as the top-level command, its
    :meth:`main` is where every user-facing error is handled."""

    def main(self, *args, **kwargs):
        """Run the command line; a :class:`RadsiftError` from any command prints ``error: ...``
        (one line naming the file, row, field or option) and exits with status 2.

        The one place errors are handled: the console script (:func:`main`) and in-process callers
        (``typer.testing.CliRunner``) both come through here, and no command catches them itself.
        """
        try:
            return super().main(*args, **kwargs)
        except RadsiftError as exc:
            err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
            sys.exit(1 if isinstance(exc, IndexDamagedError) else 2)

    def get_params(self, ctx):
        return _no_python_types(super().get_params(ctx))

    def list_commands(self, ctx) -> list[str]:
        names = super().list_commands(ctx)
        rank = {name: i for i, name in enumerate(COMMAND_ORDER)}
        return sorted(names, key=lambda n: rank.get(n, len(rank)))


def _examples(*lines: str) -> str:
    """A help epilog: ``Example:`` and command lines."""
    return "Example:\n\n" + "\n\n".join(f"  {line}" for line in lines)


OPENI = "--format csv --id-column uid --section findings=findings --section impression=impression"

app = typer.Typer(
    name="radsift",
    help="Offline semantic search for radiology reports: index, search, label, train, evaluate, serve.",
    epilog=_examples(f"radsift index build my-index reports.csv {OPENI}", 'radsift search my-index "pneumothorax"'),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=RadsiftGroup,
)
index_app = typer.Typer(help="Build and update an index.", no_args_is_help=True, cls=RadsiftGroup,
                        epilog=_examples(f"radsift index build my-index reports.csv {OPENI}"))
app.add_typer(index_app, name="index")


@app.callback()
def _start() -> None:
    """Offline semantic search for radiology reports: index, search, label, train, evaluate, serve."""
    quiet_third_party()


def command(group: typer.Typer, name: str, *, example: str | list[str]) -> Callable:
    """Register a command whose help ends with ``Example:`` and the given command line(s)."""
    lines = [example] if isinstance(example, str) else list(example)
    return group.command(name, cls=RadsiftCommand, epilog=_examples(*lines))


# ---------------------------------------------------------------------------------------------
# Reader flags, declared once: every command that reads a corpus (index build/add, label, train, bench)
# ---------------------------------------------------------------------------------------------
#: (parameter, flag, type, default, metavar, help) of each reader flag.
READER_FLAGS: tuple[tuple[str, str, Any, Any, str, str], ...] = (
    ("format", "format", Optional[str], None, "FORMAT",
     "csv | jsonl | txt | openi-xml | text (inferred from the extension when omitted)."),
    ("id_column", "id-column", Optional[str], None, "COLUMN", "Column/field holding the report id (csv, jsonl)."),
    ("section", "section", Optional[list[str]], None, "NAME=COLUMN",
     "Map a section to a column, e.g. findings=findings (repeatable). Columns not mapped become metadata."),
    ("text_column", "text-column", Optional[str], None, "COLUMN",
     "A free-text column split into sections by its headings (csv, jsonl)."),
    ("on_error", "on-error", str, "fail", "fail|skip", "What to do with a bad row: stop, or skip and count it."),
)


def reader_options(format: str | None = None, id_column: str | None = None, section: list[str] | None = None,
                   text_column: str | None = None, on_error: str = "fail"):
    """Turn the reader flags into :class:`radsift.corpus.ReaderOptions`."""
    from radsift.corpus import ReaderOptions

    return ReaderOptions.from_cli(
        format=format, id_column=id_column, sections=section or [], text_column=text_column, on_error=on_error
    )


def reader_flags(dest: str = "reader", *, prefix: str = "", panel: str = "Reader options", of: str = "") -> Callable:
    """Give a command the reader flags; it receives them as one ``ReaderOptions`` argument ``dest``.

    The flags replace the parameter ``dest`` in the command's signature (typer reads the signature),
    so their names, types, defaults and help are written once, in :data:`READER_FLAGS`.

    Args:
        dest: The command's parameter that receives the ``ReaderOptions``.
        prefix: Flag prefix (``cross-`` gives ``--cross-format`` ...).
        panel: The help panel the flags are listed in.
        of: Appended to each flag's help (says which corpus they read).
    """

    def decorate(fn: Callable) -> Callable:
        sig = inspect.signature(fn, eval_str=True)
        if dest not in sig.parameters:
            raise TypeError(f"{fn.__name__} has no parameter {dest!r} for the reader flags")
        names = {name: f"{dest}_{name}" for name, *_ in READER_FLAGS}
        flags = [
            inspect.Parameter(names[name], inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[
                kind, typer.Option(f"--{prefix}{flag}", metavar=metavar, help=help_ + of, rich_help_panel=panel)])
            for name, flag, kind, default, metavar, help_ in READER_FLAGS
        ]
        params = []
        for p in sig.parameters.values():
            params.extend(flags if p.name == dest else [p.replace(kind=inspect.Parameter.KEYWORD_ONLY)])

        @functools.wraps(fn)
        def wrapper(**kwargs):
            values = {name: kwargs.pop(param) for name, param in names.items()}
            try:
                kwargs[dest] = reader_options(**values)
            except ConfigError as exc:  # name the flag as the user typed it
                text = str(exc)
                raise ConfigError(f"--{prefix}{text[2:]}" if prefix and text.startswith("--") else text) from None
            return fn(**kwargs)

        wrapper.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        return wrapper

    return decorate


# ---------------------------------------------------------------------------------------------
# Search flags, declared once (radsift.search.options.SearchOptions): search, export, saved add
# ---------------------------------------------------------------------------------------------
def search_flags(dest: str = "options", *, only: Sequence[str] | None = None) -> Callable:
    """Give a command the search options' flags; it receives them as one ``SearchOptions`` argument ``dest``.

    The flags replace the parameter ``dest`` in the command's signature (typer reads the signature),
    so their names, types, defaults and help are those declared once in
    :class:`radsift.search.options.SearchOptions` (which the HTTP API's parameters come from too).

    Args:
        dest: The command's parameter that receives the ``SearchOptions``.
        only: The options to take (default: every option the command line takes).
    """

    def decorate(fn: Callable) -> Callable:
        sig = inspect.signature(fn, eval_str=True)
        if dest not in sig.parameters:
            raise TypeError(f"{fn.__name__} has no parameter {dest!r} for the search flags")
        specs = cli_options(only)
        names = {name: f"{dest}_{name}" for name, *_ in specs}
        flags = [
            inspect.Parameter(names[name], inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[
                kind, typer.Option(*decls, metavar=metavar, help=help_)])
            for name, kind, default, decls, metavar, help_ in specs
        ]
        params = []
        for p in sig.parameters.values():
            params.extend(flags if p.name == dest else [p.replace(kind=inspect.Parameter.KEYWORD_ONLY)])

        @functools.wraps(fn)
        def wrapper(**kwargs):
            kwargs[dest] = SearchOptions(**{name: kwargs.pop(param) for name, param in names.items()})
            return fn(**kwargs)

        wrapper.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        return wrapper

    return decorate


# ---------------------------------------------------------------------------------------------
# Options shared by several commands
# ---------------------------------------------------------------------------------------------
BackendOpt = Annotated[str, typer.Option(
    "--backend", metavar="NAME", help="Vector search: auto (exact below 200,000 units, the HNSW graph above; "
    "RADSIFT_HNSW_MIN_ROWS; the Milvus collection of an index pushed to Milvus), numpy (exact), hnsw (approximate, "
    "needs the 'scale' extra) or milvus (vectors in Milvus, needs the 'milvus' extra).")]
MilvusUriOpt = Annotated[Optional[str], typer.Option(
    "--milvus-uri", metavar="URI", envvar="RADSIFT_MILVUS_URI",
    help="Milvus for --backend milvus: a server (http://HOST:19530) or a milvus-lite file (PATH.db; default "
    "INDEX_DIR/cache/milvus/vectors.db). Searches default to the URI recorded with the index. Token: "
    "$RADSIFT_MILVUS_TOKEN.")]
IndexArg = Annotated[Path, typer.Argument(metavar="INDEX_DIR", help="Index directory.", show_default=False)]
ModelOpt = Annotated[Optional[str], typer.Option(
    "--model", metavar="DIR", help="sentence-transformers model folder (default: packaged all-MiniLM-L6-v2).")]
ThreadsOpt = Annotated[Optional[int], typer.Option("--threads", metavar="N", help="torch threads for encoding.")]
BatchOpt = Annotated[int, typer.Option("--batch-size", metavar="N", help="Encoding batch size.")]
EncoderOpt = Annotated[str, typer.Option(
    "--encoder", metavar="NAME", help="How reports are encoded: torch (reference), onnx (ONNX Runtime: same vectors, "
    "~2.6x faster on 2 cores) or onnx-int8 (~5x, vectors within 0.008 in cosine); onnx needs the 'fast' extra. "
    "Queries are always encoded by torch.")]
EncoderCacheOpt = Annotated[Optional[Path], typer.Option(
    "--encoder-cache", metavar="DIR", help="Where ONNX exports of the model are kept (default: "
    "$RADSIFT_CACHE_DIR/onnx or ~/.cache/radsift/onnx).")]
RerankOpt = Annotated[int, typer.Option(
    "--rerank", metavar="N", help="Rerank the top N hits with the cross-encoder of --reranker (0 = off).")]
RerankerOpt = Annotated[Optional[Path], typer.Option(
    "--reranker", envvar="RADSIFT_RERANKER", metavar="DIR",
    help="Cross-encoder folder from 'radsift train --recipe rerank' (or $RADSIFT_RERANKER).")]
ModeOpt = Annotated[str, typer.Option(
    "--mode", metavar="MODE",
    help="hybrid (convex combination of dense and BM25) | dense | bm25 | hybrid-rrf (reciprocal rank fusion).")]
LevelOpt = Annotated[str, typer.Option("--level", metavar="LEVEL", help="report (one hit per report) | sentence.")]
WhereOpt = Annotated[Optional[list[str]], typer.Option(
    "--where", metavar="KEY=VALUE|KEY~VALUE",
    help="Metadata filter (repeatable): KEY=VALUE matches exactly, KEY~VALUE case-insensitively by substring, "
         "e.g. --where indication~cough. Keys must be metadata of the index (radsift index info lists them).")]
TargetOpt = Annotated[Optional[str], typer.Option(
    "--target", metavar="SECTION", help="Search one section only: findings, impression, ... (report = all).")]
UnitOpt = Annotated[str, typer.Option("--unit", metavar="UNIT", help="Rank sentence units, whole section units, or "
                                      "passage (sections with heading and aspect; \"ENTITY | ASPECT\" queries).")]
NegationOpt = Annotated[str, typer.Option(
    "--negation", metavar="aware|ignore",
    help="aware: units stating the query's reading of its findings rank first, the opposite last; ignore: off.")]
AlphaOpt = Annotated[Optional[float], typer.Option(
    "--alpha", metavar="WEIGHT",
    help="The dense share of hybrid, 0 to 1 (default: the model's own, measured for it; see radsift index info).")]
ConceptsOpt = Annotated[bool, typer.Option(
    "--concepts/--no-concepts",
    help="Link a query that describes a lexicon finding without naming it to that finding (\"understood as\").")]
PrfOpt = Annotated[bool, typer.Option(
    "--prf", help="Pseudo-relevance feedback: expand the query from its first-pass top hits (RM3, Rocchio).")]
CorpusOpt = Annotated[list[Path], typer.Option("--corpus", metavar="PATH", help="Corpus file or folder (repeatable).")]
PolyOpt = Annotated[Optional[Path], typer.Option(
    "--poly", metavar="DIR", help="Also encode the sections' codes for this poly-encoder (INDEX_DIR/cache/poly/), so "
    "that 'radsift search --unit passage --first-stage DIR' does not encode them on its first query.")]


def _read(paths: list[Path], options):
    from radsift.corpus import ReadStats, read_corpus

    stats = ReadStats()
    return read_corpus(paths, options, stats), stats


def _report_read_stats(stats) -> None:
    summary = stats.summary()
    if summary:
        err_console.print(summary, highlight=False)


# ---------------------------------------------------------------------------------------------
# index build / add / info
# ---------------------------------------------------------------------------------------------
@command(index_app, "build", example=[f"radsift index build my-index reports.csv {OPENI}",
                                       f"radsift index build my-index reports.csv {OPENI} --adapt"])
@reader_flags()
def index_build(
    index_dir: Annotated[Path, typer.Argument(metavar="INDEX_DIR", help="Index directory to create.")],
    corpus: Annotated[list[Path], typer.Argument(metavar="CORPUS", help="Corpus files or folders.")],
    reader: Any = None,
    model: ModelOpt = None, threads: ThreadsOpt = None, batch_size: BatchOpt = 64,
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
    backend: BackendOpt = "auto",
    encoder: EncoderOpt = "torch",
    encoder_cache: EncoderCacheOpt = None,
    milvus_uri: MilvusUriOpt = None,
    poly: PolyOpt = None,
) -> None:
    """Build an index from a corpus (encodes sentences and sections, labels findings, builds BM25);
    with --adapt, tune the model on the corpus first."""
    from radsift.index import build_index

    _check_milvus(index_dir, backend, milvus_uri)
    _check_poly(poly)
    reports, stats = _read(corpus, reader)
    if adapt:
        from radsift.index.adapt import build_adapted_index

        if not labels:
            raise ConfigError("--adapt trains on the sentence labels: it cannot be used with --no-labels")
        summary, _ = build_adapted_index(index_dir, reports, steps=adapt_steps, base_model=model, threads=threads,
                                         batch_size=batch_size, overwrite=overwrite, lexicon=lexicon,
                                         say=lambda m: err_console.print(m, highlight=False),
                                         encoder_kind=encoder, encoder_cache=encoder_cache)
    else:
        summary = build_index(index_dir, reports, model=model, threads=threads, batch_size=batch_size,
                              overwrite=overwrite, lexicon=lexicon, label=labels, allow_empty=allow_empty,
                              encoder_kind=encoder, encoder_cache=encoder_cache)
    _report_read_stats(stats)
    console.print(f"built: {summary.describe()}", highlight=False)
    _graphs(index_dir, backend, milvus_uri)
    _poly_codes(index_dir, poly)


def _check_poly(poly: Optional[Path]) -> None:
    """Before anything is written: --poly must name a poly-encoder folder."""
    if poly is not None:
        from radsift.search.passages import check_first_stage

        check_first_stage(poly)


def _poly_codes(index_dir: Path, poly: Optional[Path]) -> None:
    """--poly: the codes of the live generation's segments that have none (radsift.index.poly_codes)."""
    if poly is None:
        return
    from radsift.index.poly_codes import build_poly_codes

    paths = build_poly_codes(index_dir, poly, say=lambda m: err_console.print(m, highlight=False))
    console.print(f"poly-encoder codes: {len(paths)} segment(s) in {index_dir / 'cache' / 'poly'}", highlight=False)


def _check_milvus(index_dir: Path, backend: str, uri: Optional[str]) -> None:
    """Before anything is written: --backend milvus needs its extra and a Milvus server that answers."""
    if backend != "milvus":
        return
    from radsift.index.backends import milvus_client

    milvus_client.pymilvus_module()
    uri = milvus_client.resolve_uri(index_dir, uri or (milvus_client.pushed_before(index_dir) or {}).get("uri"))
    if not milvus_client.is_local(uri):
        milvus_client.connect(uri).close()


def _graphs(index_dir: Path, backend: str, milvus_uri: Optional[str] = None, extend: bool = True) -> None:
    """The HNSW graphs of the new generation, when the backend calls for them (radsift.index.graphs: extended
    from the previous generation's graph when possible, unless ``extend`` is false); its vectors pushed to
    Milvus with --backend milvus, or auto on an index pushed there before."""
    from radsift.index.backends import milvus_client, milvus_push
    from radsift.index.graphs import build_graphs

    say = lambda m: err_console.print(m, highlight=False)  # noqa: E731
    if backend == "milvus" or (backend == "auto" and milvus_client.pushed_before(index_dir) is not None
                               and milvus_client.available()):
        side = milvus_push.push_generation(index_dir, milvus_uri, say=say)
        console.print(f"Milvus: {', '.join(json.loads(side.read_text())['collections'].values())} ({side})",
                      highlight=False)
        return
    for path in build_graphs(index_dir, backend, say=say, extend=extend):
        console.print(f"HNSW graph: {path}", highlight=False)


@command(index_app, "add", example="radsift index add my-index new-reports.csv --id-column uid "
                                    "--section findings=findings --section impression=impression")
@reader_flags()
def index_add(
    index_dir: Annotated[Path, typer.Argument(metavar="INDEX_DIR", help="Existing index directory.")],
    corpus: Annotated[list[Path], typer.Argument(metavar="CORPUS", help="Corpus files or folders with new reports.")],
    reader: Any = None,
    model: ModelOpt = None, threads: ThreadsOpt = None, batch_size: BatchOpt = 64,
    replace: Annotated[bool, typer.Option("--replace", help="Replace reports whose id is already indexed.")] = False,
    backend: BackendOpt = "auto",
    encoder: EncoderOpt = "torch",
    encoder_cache: EncoderCacheOpt = None,
    milvus_uri: MilvusUriOpt = None,
    poly: PolyOpt = None,
) -> None:
    """Add reports to an index as one new segment: nothing already stored is re-encoded or rewritten
    (--replace marks the old versions deleted; 'radsift index optimize' merges the segments)."""
    from radsift.index import add_to_index

    _check_milvus(index_dir, backend, milvus_uri)
    _check_poly(poly)
    reports, stats = _read(corpus, reader)
    summary = add_to_index(index_dir, reports, replace=replace, model=model, threads=threads,
                           batch_size=batch_size, encoder_kind=encoder, encoder_cache=encoder_cache)
    _report_read_stats(stats)
    console.print(f"updated: {summary.describe()}", highlight=False)
    _graphs(index_dir, backend, milvus_uri)
    _poly_codes(index_dir, poly)


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
    from radsift.index import delete_from_index

    ids = list(report_ids or [])
    if ids_file is not None:
        try:
            ids += [line.strip() for line in ids_file.read_text(encoding="utf-8").splitlines() if line.strip()]
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"--ids-file {ids_file}: cannot be read ({exc})") from None
    if not ids:
        raise ConfigError("give the report ids to delete (REPORT_ID... or --ids-file FILE)")
    console.print(delete_from_index(index_dir, ids).describe(), highlight=False)
    _graphs(index_dir, backend)


@command(index_app, "optimize", example="radsift index optimize my-index")
def index_optimize(index_dir: IndexArg, backend: BackendOpt = "auto") -> None:
    """Merge an index's segments (one per add) into one and drop deleted reports for good; nothing is
    re-encoded. Atomic: interrupted, the index stays as it was."""
    from radsift.index import optimize_index

    console.print(optimize_index(index_dir, progress=True).describe(), highlight=False)
    _graphs(index_dir, backend, extend=False)  # a fresh graph: no node left empty by deletions


@command(index_app, "push", example=["radsift index push my-index",
                                      "radsift index push my-index --milvus-uri http://milvus.example.org:19530"])
def index_push(index_dir: IndexArg, milvus_uri: MilvusUriOpt = None) -> None:
    """Copy the live generation's vectors into Milvus, so that --backend milvus (and auto) searches there:
    converts an index built for numpy/hnsw, and finishes a push that was interrupted."""
    _check_milvus(index_dir, "milvus", milvus_uri)
    _graphs(index_dir, "milvus", milvus_uri)


@command(index_app, "info", example="radsift index info my-index")
def index_info(index_dir: IndexArg) -> None:
    """Print an index's manifest (model, counts, sections, metadata keys, times, segments) as JSON."""
    from radsift.search import Index

    index = Index.open(index_dir)
    stats = index.stats()
    stats["segments"] = [{"name": s["name"], "reports": s["counts"]["reports"], "sentences": s["counts"]["sentences"],
                          "sections": s["counts"]["sections"], "deleted": len(s.get("deleted", []))}
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
    from radsift.index.verify import verify_index

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
    from radsift.index.lifecycle import rollback

    old, new = rollback(index_dir)
    console.print(f"rolled back {index_dir}: {old} -> {new} (a running server follows by itself)", highlight=False)


# ---------------------------------------------------------------------------------------------
# search, run
# ---------------------------------------------------------------------------------------------
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
) -> None:
    """Search an index: prints how the query was read and how many reports state it, then each hit
    with its relevance band, the status of the query's findings in it and the matched words highlighted.
    With --unit passage: section passages with their heading and aspect, for "ENTITY | ASPECT" or a question."""
    if options.unit == "passage" or aspect or "|" in query:
        _search_passages(index_dir, query, options, aspect=aspect, model=model, threads=threads, reranker=reranker,
                         as_json=as_json, backend=backend, milvus_uri=milvus_uri, first_stage=first_stage)
        return
    if first_stage is not None:
        raise ConfigError("--first-stage scores section passages: use it with --unit passage")
    index = Index.open(index_dir, model=model, threads=threads, reranker=reranker if options.rerank else None,
                       backend=backend, milvus_uri=milvus_uri)
    hits = index.search(query, options)
    if as_json:
        typer.echo(json.dumps({"query": query, "mode": options.mode, "level": options.level,
                               "reading": hits.reading.to_dict(), **hits.page_dict(),
                               "hits": [h.to_dict() for h in hits]}, ensure_ascii=False))
    else:
        print_hits(console, query, hits)


def _search_passages(index_dir, query, options: SearchOptions, *, aspect, model, threads, reranker, as_json,
                     backend, milvus_uri, first_stage=None) -> None:
    """``radsift search --unit passage``: passages with heading, aspect and matched sentences (radsift.search.passages)."""
    parsed = parse_passage_query(query, aspect)  # an unknown aspect fails before the index opens
    stage = PolyFirstStage(first_stage, threads, say=lambda m: err_console.print(m, highlight=False)) \
        if first_stage is not None else None  # a folder that is not a poly-encoder fails here too
    index = Index.open(index_dir, model=model, threads=threads, backend=backend, milvus_uri=milvus_uri)
    rr = load_passage_reranker(reranker, threads) if options.rerank and reranker else None
    hits = search_passages(index, query, k=options.k, aspect=aspect, mode=options.mode, where=options.where,
                           rerank=options.rerank, reranker=rr, first_stage=stage)
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
) -> None:
    """Export every report that states the query's reading (a cohort) with its evidence sentences,
    offsets, status, cue, score and band, plus a provenance sidecar (FILE.provenance.json)."""
    cohort_format(out, fmt)  # a bad --out or --format fails before the search
    audit = _export_audit(index_dir, audit_log)
    index = Index.open(index_dir, model=model, threads=threads)
    cohort = collect_cohort(index, query, include=include, max_rows=max_rows, **options.pick(COHORT_OPTIONS))
    path, side = write_cohort(cohort, out, fmt)
    audit.write("export", client="cli", token_id=None, user=cohort.provenance()["user"], query=cohort.query,
                params=cohort.options, include=cohort.include, rows=len(cohort.rows), file=str(path.resolve()),
                generation=cohort.index.get("generation"))
    _print_cohort_summary(cohort)
    console.print(f"wrote {len(cohort.rows)} reports to {path} (provenance: {side.name})", highlight=False)


def _export_audit(index_dir: Path, audit_log: Optional[Path]) -> AuditLog:
    return AuditLog(audit_log if audit_log is not None else Path(index_dir) / "audit" / "exports.jsonl")


def _print_cohort_summary(cohort) -> None:
    console.print(reading_text(cohort.reading))
    if cohort.matching is not None:
        console.print(f"{cohort.matching} of {cohort.total} ranked reports state the reading; "
                      f"kept: {cohort.include}", highlight=False)


saved_app = typer.Typer(help="Saved searches: run again later, list what is new.", no_args_is_help=True,
                        cls=RadsiftGroup, epilog=_examples('radsift saved add my-index ptx "pneumothorax"',
                                                           "radsift saved run my-index ptx --new"))
app.add_typer(saved_app, name="saved")
SavedDirOpt = Annotated[Optional[Path], typer.Option(
    "--saved-dir", metavar="DIR", help="Folder of saved searches (default INDEX_DIR/saved).")]
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
        "--audit-log", metavar="FILE", help="With --out: the audit trail (default INDEX_DIR/audit/exports.jsonl).")] = None,
) -> None:
    """Run a saved search: its reports, or with --new only those added since its last run."""
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
        part = Cohort(**{**run.cohort.__dict__, "rows": rows})
        path, side = write_cohort(part, out, saved_search=name, new_only=new)
        audit.write("export", client="cli", token_id=None, user=part.provenance()["user"], query=part.query,
                    params=part.options, include=part.include, rows=len(rows), file=str(path.resolve()),
                    saved_search=name, new_only=new)
        console.print(f"wrote {len(rows)} reports to {path} (provenance: {side.name})", highlight=False)


@command(saved_app, "rm", example="radsift saved rm my-index ptx")
def saved_rm(index_dir: IndexArg, name: NameArg, saved_dir: SavedDirOpt = None) -> None:
    """Remove a saved search."""
    SavedSearches.of_index(index_dir, saved_dir).remove(name)
    console.print(f"removed {name!r}", highlight=False)


@command(app, "run", example="radsift run my-index --queries queries.tsv --out run.trec --mode bm25")
def run_cmd(
    index_dir: IndexArg,
    queries: Annotated[Path, typer.Option("--queries", metavar="FILE", help="qid<TAB>query file.")],
    out: Annotated[Path, typer.Option("--out", metavar="FILE", help="TREC run file to write.")],
    k: Annotated[int, typer.Option("-k", "--k", metavar="N", help="Depth of the run per query.")] = 1000,
    mode: ModeOpt = "hybrid", level: LevelOpt = "report", where: WhereOpt = None, target: TargetOpt = None,
    unit: UnitOpt = "sentence", negation: NegationOpt = "aware", model: ModelOpt = None,
    threads: ThreadsOpt = None, rerank: RerankOpt = 0, reranker: RerankerOpt = None, alpha: AlphaOpt = None,
    concepts: ConceptsOpt = True, prf: PrfOpt = False,
    tag: Annotated[Optional[str], typer.Option("--tag", metavar="NAME", help="Run tag (default radsift-MODE).")] = None,
    backend: BackendOpt = "auto", milvus_uri: MilvusUriOpt = None,
) -> None:
    """Run a file of queries and write a TREC run (docid = report id, or sentence uid at sentence level)."""
    from radsift.evaluation.runs import run_queries
    from radsift.search import Index

    index = Index.open(index_dir, model=model, threads=threads, reranker=reranker if rerank else None,
                       backend=backend, milvus_uri=milvus_uri)
    n = run_queries(index, queries, out, k=k, mode=mode, level=level, where=where, target=target, unit=unit,
                    negation=negation, rerank=rerank, alpha=alpha, concepts=concepts, prf=prf,
                    tag=tag or f"radsift-{mode}")
    console.print(f"wrote {n} queries to {out}", highlight=False)


# ---------------------------------------------------------------------------------------------
# ask, draft-impression: answers and impression drafts from the most similar reports (radsift.rag)
# ---------------------------------------------------------------------------------------------
LlmUrlOpt = Annotated[Optional[str], typer.Option(
    "--llm-url", metavar="URL", rich_help_panel="LLM back-end",
    help="An OpenAI-compatible endpoint (llama.cpp server, vLLM, Ollama), e.g. http://127.0.0.1:8080/v1. "
         "Default: the offline SmolLM2-135M model in process (pip install 'radsift[llm]').")]
LlmModelOpt = Annotated[Optional[str], typer.Option(
    "--llm-model", metavar="NAME", rich_help_panel="LLM back-end", help="The endpoint's model name.")]
LlmTokenOpt = Annotated[Optional[Path], typer.Option(
    "--llm-token-file", metavar="FILE", rich_help_panel="LLM back-end",
    help="File whose first line is the endpoint's API key (default: $RADSIFT_LLM_TOKEN).")]
AllowRemoteOpt = Annotated[bool, typer.Option(
    "--allow-remote-llm", rich_help_panel="LLM back-end",
    help="Allow an --llm-url that is not this machine (prompts hold report text: patient data).")]
MaxTokensOpt = Annotated[int, typer.Option(
    "--max-tokens", metavar="N", rich_help_panel="LLM back-end", help="New tokens the answer may have at most.")]
LlmTimeoutOpt = Annotated[float, typer.Option(
    "--llm-timeout", metavar="SECONDS", rich_help_panel="LLM back-end",
    help="Seconds the generation may take (then a partial answer, or an error when nothing came).")]
MaxPromptOpt = Annotated[Optional[int], typer.Option(
    "--max-prompt-tokens", metavar="N", rich_help_panel="LLM back-end",
    help="Cap the prompt below the model's context (reports are cut to fit, and the answer says so).")]
LlmAuditOpt = Annotated[Optional[Path], typer.Option(
    "--audit-log", metavar="FILE", help="Audit trail of the LLM calls (sizes and outcome, no text; "
                                        "default INDEX_DIR/audit/llm.jsonl).")]
AskKOpt = Annotated[int, typer.Option("-k", "--k", metavar="N", help="Reports in the prompt (1 to 20).")]


def _cli_llm(index_dir: Path, audit_log: Optional[Path], purpose: str, url, model, token_file, allow_remote, threads):
    """The back-end of the options, every call written to the audit log."""
    from radsift.rag.llm import AuditedLLM, make_llm
    from radsift.serve.audit import AuditLog

    audit = AuditLog(audit_log if audit_log is not None else Path(index_dir) / "audit" / "llm.jsonl")
    llm = make_llm(url, model, token_file=token_file, allow_remote=allow_remote, threads=threads)
    return AuditedLLM(llm, audit, client="cli", purpose=purpose)


def _print_answer(answer, show_prompt: bool) -> None:
    from rich.markup import escape

    console.print(escape(answer.text) or "[dim](no text)[/]")
    cited = {c["n"] for c in answer.citations}
    if answer.sources:
        console.print("\n[bold]Reports in the prompt[/] (* cited):")
        for s in answer.sources:
            mark = "*" if s["n"] in cited else " "
            cut = " (cut to fit)" if s["truncated"] else " (left out: no room)" if s["dropped"] else ""
            console.print(f" {mark} [{s['n']}] {escape(s['report_id'])}{cut}", highlight=False)
    for note in answer.notes:
        err_console.print(f"note: {note}", highlight=False)
    console.print(f"[dim]{answer.backend} · {escape(answer.model)} · {answer.status} · {answer.seconds:.1f} s[/]",
                  highlight=False)
    if show_prompt:
        console.print("\n[bold]Prompt[/]")
        console.print(escape(answer.prompt), highlight=False)


@command(app, "ask", example=['radsift ask my-index "enlarged cardiac silhouette with vascular congestion"',
                              'radsift ask my-index "what does a deep sulcus sign mean?" --no-retrieval',
                              'radsift ask my-index "right lower lobe opacity" --llm-url http://127.0.0.1:8080/v1'])
def ask_cmd(
    index_dir: IndexArg,
    question: Annotated[str, typer.Argument(metavar="QUESTION", help="A finding description or a question.")],
    k: AskKOpt = 3,
    no_retrieval: Annotated[bool, typer.Option("--no-retrieval", help="The model alone, no reports (the baseline).")] = False,
    target: Annotated[str, typer.Option(
        "--target", metavar="SECTION", help="auto (impressions for a findings description, whole reports for a "
                                            "question), report, or a section of the index.")] = "auto",
    mode: ModeOpt = "hybrid", where: WhereOpt = None, model: ModelOpt = None, threads: ThreadsOpt = None,
    llm_url: LlmUrlOpt = None, llm_model: LlmModelOpt = None, llm_token_file: LlmTokenOpt = None,
    allow_remote_llm: AllowRemoteOpt = False, max_tokens: MaxTokensOpt = 256, llm_timeout: LlmTimeoutOpt = 120.0,
    max_prompt_tokens: MaxPromptOpt = None, audit_log: LlmAuditOpt = None,
    show_prompt: Annotated[bool, typer.Option("--show-prompt", help="Also print the exact prompt.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the answer, citations, sources and prompt as JSON.")] = False,
) -> None:
    """Answer a finding description or question from the most similar reports, citing them ([1], [2])."""
    from radsift.rag import ask
    from radsift.search import Index

    index = Index.open(index_dir, model=model, threads=threads)
    llm = _cli_llm(index_dir, audit_log, "ask", llm_url, llm_model, llm_token_file, allow_remote_llm, threads)
    answer = ask(index, question, llm=llm, k=k, retrieval=not no_retrieval, target=target, mode=mode, where=where,
                 max_tokens=max_tokens, timeout=llm_timeout, max_prompt_tokens=max_prompt_tokens)
    if as_json:
        typer.echo(json.dumps(answer.to_dict(), ensure_ascii=False))
    else:
        _print_answer(answer, show_prompt)


@command(app, "draft-impression", example=['radsift draft-impression my-index --findings "Small left effusion."',
                                           "radsift draft-impression my-index --findings findings.txt --json"])
def draft_impression_cmd(
    index_dir: IndexArg,
    findings: Annotated[str, typer.Option("--findings", metavar="TEXT|FILE", help="The findings, or a file holding them.")],
    k: AskKOpt = 3,
    no_retrieval: Annotated[bool, typer.Option("--no-retrieval", help="The model alone, no prior impressions.")] = False,
    mode: ModeOpt = "hybrid", where: WhereOpt = None, model: ModelOpt = None, threads: ThreadsOpt = None,
    llm_url: LlmUrlOpt = None, llm_model: LlmModelOpt = None, llm_token_file: LlmTokenOpt = None,
    allow_remote_llm: AllowRemoteOpt = False, max_tokens: MaxTokensOpt = 128, llm_timeout: LlmTimeoutOpt = 120.0,
    max_prompt_tokens: MaxPromptOpt = None, audit_log: LlmAuditOpt = None,
    show_prompt: Annotated[bool, typer.Option("--show-prompt", help="Also print the exact prompt.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the draft, the baseline and the prompt as JSON.")] = False,
) -> None:
    """Draft an impression from findings and the impressions of the most similar prior reports, beside the
    retrieval-only baseline (the nearest report's impression, unchanged)."""
    from rich.markup import escape

    from radsift.rag import draft_impression
    from radsift.search import Index

    text = findings
    if len(findings) < 4096 and "\n" not in findings and Path(findings).is_file():
        try:
            text = Path(findings).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"--findings {findings}: cannot read it as UTF-8 text ({exc})") from None
    index = Index.open(index_dir, model=model, threads=threads)
    llm = _cli_llm(index_dir, audit_log, "draft", llm_url, llm_model, llm_token_file, allow_remote_llm, threads)
    draft = draft_impression(index, text, llm=llm, k=k, retrieval=not no_retrieval, mode=mode, where=where,
                             max_tokens=max_tokens, timeout=llm_timeout, max_prompt_tokens=max_prompt_tokens)
    if as_json:
        typer.echo(json.dumps(draft.to_dict(), ensure_ascii=False))
        return
    console.print("[bold]Drafted impression[/]")
    _print_answer(draft.draft, show_prompt)
    if draft.baseline is not None:
        console.print(f"\n[bold]Retrieval only[/] (the impression of report {escape(draft.baseline['report_id'])}):")
        console.print(escape(draft.baseline["impression"]), highlight=False)


# ---------------------------------------------------------------------------------------------
# label: weak labels and the query dictionary (radsift.labels)
# ---------------------------------------------------------------------------------------------
@command(app, "label", example=[
    f"radsift label reports.csv {OPENI} --out labels",
    'radsift label --explain "No effusion, but a small right pneumothorax."',
])
@reader_flags()
def label_cmd(
    corpus: Annotated[Optional[list[Path]], typer.Argument(
        metavar="CORPUS", help="Corpus files or folders to label.", show_default=False)] = None,
    out: Annotated[Optional[Path], typer.Option("--out", metavar="DIR", help="Output folder for the label exports.")] = None,
    explain: Annotated[Optional[str], typer.Option(
        "--explain", metavar="TEXT",
        help="Label the sentences of TEXT and show each mention, its span, status, cue and rule.")] = None,
    lexicon: Annotated[Optional[Path], typer.Option(
        "--lexicon", metavar="FILE", help="Lexicon YAML (default: packaged chest X-ray).")] = None,
    rules: Annotated[Optional[Path], typer.Option(
        "--rules", metavar="FILE", help="Negation rules YAML (default: packaged).")] = None,
    label_section: Annotated[Optional[list[str]], typer.Option(
        "--label-section", metavar="SECTION",
        help="Sections whose sentences are labeled (repeatable; default findings, impression).")] = None,
    reader: Any = None,
) -> None:
    """Label report sentences with findings (present / absent / uncertain) and export weak-label queries and qrels."""
    if explain is None and not corpus:
        raise ConfigError("give a CORPUS to label (with --out DIR) or --explain \"SENTENCE\"")
    if corpus and out is None:
        raise ConfigError("--out DIR is required when labeling a corpus")
    from radsift.labels import Labeler, build_weak_labels
    from radsift.labels.display import explain as explain_text, stats_tables

    labeler = Labeler(lexicon=lexicon, rules=rules)
    if explain is not None:
        for line in explain_text(labeler, explain):
            console.print(line, highlight=False, soft_wrap=True)
    if corpus:
        reports, stats = _read(corpus, reader)
        weak = build_weak_labels(
            reports, labeler, sections=tuple(label_section or ("findings", "impression")), progress=True
        )
        _report_read_stats(stats)
        paths = weak.write(out)
        for table in stats_tables(weak.stats()):
            console.print(table)
        console.print(f"wrote {', '.join(p.name for p in paths.values())} to {out}", highlight=False)


# ---------------------------------------------------------------------------------------------
# train: fine-tune a retriever (or a reranker) on a corpus without labels (radsift.models.training)
# ---------------------------------------------------------------------------------------------
@command(app, "train", example=f"radsift train --corpus reports.csv {OPENI} --out models/my-model")
@reader_flags()
def train_cmd(
    corpus: CorpusOpt,
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="Folder for the trained model and its model card.")],
    reader: Any = None,
    recipe: Annotated[Optional[str], typer.Option(
        "--recipe", metavar="RECIPE",
        help="combined (default) | lexicon-triplet | lexicon-mnrl | findings-impression | rerank | entity-aspect "
             "(CAPR: passages by entity and aspect; MedQuAD from ../shared/data or --config medquad_dir).")] = None,
    model_type: Annotated[Optional[str], typer.Option(
        "--model-type", metavar="bi|poly|cross", help="entity-aspect: train a bi-encoder (default), a poly-encoder "
        "or a cross-encoder on the same examples.")] = None,
    config: Annotated[Optional[Path], typer.Option(
        "--config", metavar="FILE", help="YAML training configuration (flags override it).")] = None,
    split_by_finding: Annotated[Optional[int], typer.Option(
        "--split-by-finding", metavar="0|1",
        help="Train only on findings outside this fold of the split by finding.")] = None,
    bi_encoder: Annotated[Optional[str], typer.Option(
        "--bi-encoder", metavar="DIR", help="rerank: bi-encoder folder that mines the negatives (default: the base model).")] = None,
    base_model: Annotated[Optional[str], typer.Option(
        "--base-model", metavar="DIR", help="Model folder to start from (default: packaged all-MiniLM-L6-v2).")] = None,
    max_steps: Annotated[Optional[int], typer.Option("--max-steps", metavar="N", help="Gradient steps.")] = None,
    seed: Annotated[Optional[int], typer.Option("--seed", metavar="N", help="Training seed.")] = None,
    time_limit: Annotated[Optional[float], typer.Option(
        "--time-limit", metavar="MINUTES", help="Stop training after this many minutes.")] = None,
    threads: ThreadsOpt = None,
    evaluate: Annotated[Optional[bool], typer.Option(
        "--eval/--no-eval", help="Evaluate on the held-out reports at the end (figures in the model card).")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace a non-empty --out folder.")] = False,
) -> None:
    """Train a negation-aware retriever from a corpus's own reports (weak labels, no annotators)."""
    from radsift.evaluation.heldout import HeldOutEvaluator
    from radsift.models.training import load_config, train

    cfg = load_config(config, recipe=recipe, model_type=model_type, split_by_finding=split_by_finding, bi_encoder=bi_encoder,
                      base_model=base_model, max_steps=max_steps, seed=seed, time_limit_minutes=time_limit,
                      threads=threads, evaluate=evaluate)
    reports, stats = _read(corpus, reader)
    err_console.print(f"recipe {cfg.recipe}: {cfg.max_steps} steps, seed {cfg.seed}", highlight=False)
    result = train(reports, cfg, out, overwrite=overwrite, evaluator=HeldOutEvaluator(),
                   log=lambda m: err_console.print(m, highlight=False))
    _report_read_stats(stats)
    console.print(f"wrote {result.out} ({result.seconds:.0f} s); model card: {result.out / 'README.md'}",
                  highlight=False)


# ---------------------------------------------------------------------------------------------
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
             "run only when named); passages (CAPR answer passages on MedQuAD, runs alone) (repeatable).")] = None,
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
        "--passage-tokens", metavar="N", help="passages: word pieces of a passage the models read (default: each "
        "model's own, 256 for MiniLM).")] = None,
    split: Annotated[str, typer.Option(
        "--split", metavar="test|dev", help="passages: the CDV test split (default; never tune on it) or the "
        "development split (MedQuAD documents that radsift train --recipe entity-aspect holds out).")] = "test",
) -> None:
    """Evaluate systems with the protocols of Shi et al. and RadSearch; write report.md, report.json and plots.
    --protocol passages (CAPR, MedQuAD CDV test split) runs alone: --systems bm25 | tfidf | dense[:MODEL] | hybrid[:MODEL] |
    poly:MODEL | cross:RERANKER | rerank:[FIRST:]RERANKER (FIRST: dense, MODEL, poly=MODEL, hybrid[=MODEL]); report.json holds R@1 and R@5 per system and query kind."""
    if protocol and "passages" in protocol:
        from radsift.evaluation.bench_passages import bench_passages

        if len(set(protocol)) > 1:
            raise ConfigError("--protocol passages runs alone (its own data and systems): run the others separately")
        report = bench_passages(out, systems or ["bm25", "dense"], medquad_dir=medquad, cdv_dir=cdv, split=split,
                                max_queries=max_queries, seed=seed, threads=threads, batch_size=batch_size,
                                with_latency=latency, max_tokens=passage_tokens,
                                log=lambda m: err_console.print(m, highlight=False))
        for name, by_kind in report["results"].items():
            for kind, figures in by_kind.items():
                console.print(f"{name:<28} {kind:<14} R@1 {figures['R@1']:6.2f}  R@5 {figures['R@5']:6.2f}",
                              highlight=False)
        console.print(f"wrote report.json and report.md to {out} ({report['seconds']:.0f} s)", highlight=False)
        return
    from radsift.evaluation.bench import BenchConfig, bench
    from radsift.evaluation.report import console_tables

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
    result, paths = bench(config, out, log=lambda m: err_console.print(m, highlight=False), plots=plots)
    for table in console_tables(result):
        console.print(table)
    console.print(f"wrote {', '.join(p.name for p in paths.values())} to {out} "
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
    from radsift.evaluation.run_eval import evaluate_run_file

    result = evaluate_run_file(qrels, run)
    if as_json:
        typer.echo(json.dumps(result.to_dict(per_query=per_query), ensure_ascii=False))
        return
    console.print(result.table(per_query=per_query))
    if result.unanswered:
        err_console.print(f"note: {len(result.unanswered)} qrels queries have no run line and score 0", highlight=False)
    if result.unjudged:
        err_console.print(f"note: {len(result.unjudged)} run queries are not in the qrels and were ignored", highlight=False)


# ---------------------------------------------------------------------------------------------
# serve: the JSON API and the search page (radsift.serve)
# ---------------------------------------------------------------------------------------------
@command(app, "serve", example=["radsift serve my-index",
                                "radsift serve my-index --host 0.0.0.0 --token-file token.txt --audit-log audit.jsonl"])
def serve_cmd(
    index_dir: Annotated[Path, typer.Argument(metavar="INDEX_DIR", help="Index directory (opened read-only).")],
    host: Annotated[str, typer.Option(
        "--host", metavar="ADDRESS", help="Address to listen on; anything but loopback needs a token.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", metavar="PORT", help="TCP port (0 picks a free one).")] = 8000,
    token_file: Annotated[Optional[Path], typer.Option(
        "--token-file", metavar="FILE", help="File holding the API token (else $RADSIFT_TOKEN).")] = None,
    audit_log: Annotated[Optional[Path], typer.Option(
        "--audit-log", metavar="FILE", help="Append every query, report view and export to this JSON-lines file.")] = None,
    model: ModelOpt = None, reranker: RerankerOpt = None, saved_dir: SavedDirOpt = None, backend: BackendOpt = "auto",
    milvus_uri: MilvusUriOpt = None,
    header_timeout: Annotated[float, typer.Option(
        "--header-timeout", metavar="SECONDS", help="Close a connection that has not sent a whole request line "
        "and headers this long after connecting (or after its previous answer).")] = 10.0,
    keepalive_timeout: Annotated[float, typer.Option(
        "--keepalive-timeout", metavar="SECONDS", help="Close an idle keep-alive connection after this long.")] = 5.0,
    max_connections: Annotated[int, typer.Option(
        "--max-connections", metavar="N", help="Open connections served at once; past them a request gets 503.")] = 64,
    llm_url: LlmUrlOpt = None, llm_model: LlmModelOpt = None, llm_token_file: LlmTokenOpt = None,
    allow_remote_llm: AllowRemoteOpt = False,
    passage_first_stage: Annotated[Optional[Path], typer.Option(
        "--passage-first-stage", metavar="DIR", help="A poly-encoder folder that scores every passage of "
        "/api/passages in the place of the index's bi-encoder (its codes encoded, or read from INDEX_DIR/cache/poly/, "
        "before the server listens).")] = None,
) -> None:
    """Serve the search page and JSON API (127.0.0.1 unless a token is set; Ctrl-C stops)."""
    from radsift.serve import run_server
    from radsift.serve.server import ServerLimits

    limits = ServerLimits(header_timeout=header_timeout, keepalive_timeout=keepalive_timeout,
                          max_connections=max_connections)
    if milvus_uri:  # the server opens its Index itself: the engine reads the override from the environment
        os.environ["RADSIFT_MILVUS_URI"] = milvus_uri
    run_server(index_dir, host=host, port=port, token_file=token_file, audit_log=audit_log, model=model,
               reranker=reranker, console=console, limits=limits, saved_dir=saved_dir, backend=backend,
               passage_first_stage=passage_first_stage, llm={"url": llm_url, "model": llm_model, "token_file": llm_token_file, "allow_remote": allow_remote_llm})


# ---------------------------------------------------------------------------------------------
# demo, demo-corpus: the bundled synthetic corpus (radsift.demo)
# ---------------------------------------------------------------------------------------------
@command(app, "demo", example=["radsift demo --out demo-out", "radsift demo --out demo-out --serve"])
def demo_cmd(
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="Folder for the demo corpus and index.")] = Path("demo-out"),
    n: Annotated[int, typer.Option("--n", metavar="N", help="Number of synthetic reports.")] = 2000,
    serve: Annotated[bool, typer.Option("--serve/--no-serve", help="Start the web page at the end.")] = False,
    port: Annotated[int, typer.Option("--port", metavar="PORT", help="TCP port of the web page.")] = 8000,
    adapt_steps: Annotated[int, typer.Option(
        "--adapt-steps", metavar="N", help="Training steps of the adapt step (0 skips it).")] = 40,
) -> None:
    """The main job on the bundled demo corpus: generate, index, search, adapt the model (and serve)."""
    from radsift.workflows.demo import run_demo

    run_demo(out, n=n, serve=serve, port=port, adapt_steps=adapt_steps, console=console)


@command(app, "demo-corpus", example="radsift demo-corpus --out demo-corpus --n 500")
def demo_corpus_cmd(
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="Folder to write the corpus files into.")],
    n: Annotated[int, typer.Option("--n", metavar="N", help="Number of synthetic reports.")] = 2000,
    seed: Annotated[int, typer.Option("--seed", metavar="N", help="Random seed (same seed, same files).")] = 7,
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


def main() -> None:
    """Console-script entry point (errors are handled in :meth:`RadsiftGroup.main`)."""
    try:
        app()
    except KeyboardInterrupt:  # pragma: no cover - click turns Ctrl-C into Abort in most places
        err_console.print("interrupted")
        sys.exit(130)


if __name__ == "__main__":  # pragma: no cover
    main()
