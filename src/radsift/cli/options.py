"""The flags of several commands, declared once: the reader flags of every command that reads a corpus
(:data:`READER_FLAGS`, given by :func:`reader_flags`), the search flags (from
:class:`radsift.search.options.SearchOptions`, given by :func:`search_flags`) and the options shared
by several commands."""

from __future__ import annotations

import dataclasses
import functools
import inspect
from pathlib import Path
from typing import Annotated, Any, Callable, Iterable, Optional, Sequence

import typer

from radsift.corpus import ReaderOptions, ReadStats, read_corpus
from radsift.errors import ConfigError
from radsift.records import Report
from radsift.search.options import SearchOptions, cli_options, wire_options


# ---------------------------------------------------------------------------------------------
# Reader flags, declared once: every command that reads a corpus (index build/add, label, train, bench)
# ---------------------------------------------------------------------------------------------
#: (parameter, flag, type, default, metavar, help) of each reader flag.
READER_FLAGS: tuple[tuple[str, str, Any, Any, str, str], ...] = (
    ("format", "format", Optional[str], None, "FORMAT",
     "csv | jsonl | txt | openi-xml | text | fhir (FHIR R4 DiagnosticReport: .json, bulk .ndjson) | hl7 "
     "(HL7 v2 ORU^R01, plain or MLLP) (inferred from the extension when omitted)."),
    ("id_column", "id-column", Optional[str], None, "COLUMN", "Column/field holding the report id (csv, jsonl)."),
    ("section", "section", Optional[list[str]], None, "NAME=COLUMN",
     "Map a section to a column, e.g. findings=findings (repeatable). Columns not mapped become metadata."),
    ("text_column", "text-column", Optional[str], None, "COLUMN",
     "A free-text column split into sections by its headings (csv, jsonl)."),
    ("on_error", "on-error", str, "fail", "fail|skip", "What to do with a bad row: stop, or skip and count it."),
    ("patient_column", "patient-column", Optional[str], None, "COLUMN",
     "Column/field naming the patient (csv, jsonl): stored as metadata 'patient'."),
    ("date_column", "date-column", Optional[str], None, "COLUMN",
     "Column/field holding the exam date (csv, jsonl; ISO 8601 or YYYYMMDD[HHMM]): stored as 'date' (YYYY-MM-DD)."),
)


def reader_options(format: str | None = None, id_column: str | None = None, section: list[str] | None = None,
                   text_column: str | None = None, on_error: str = "fail", patient_column: str | None = None,
                   date_column: str | None = None):
    """Turn the reader flags into :class:`radsift.corpus.ReaderOptions`."""
    return ReaderOptions.from_cli(
        format=format, id_column=id_column, sections=section or [], text_column=text_column, on_error=on_error,
        patient_column=patient_column, date_column=date_column,
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

    The flags replace the parameter ``dest`` in the command's signature (as :func:`reader_flags` does),
    so their names, types, defaults and help are those declared once in
    :class:`radsift.search.options.SearchOptions` (which the HTTP API's parameters come from too).
    Numbers arrive as text and are read and checked by :func:`cli_search_options` before the command
    runs: ``-k 1e9`` is one line of error (the sentence Python and the API give), not a usage box.

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
            kwargs[dest] = cli_search_options({name: kwargs.pop(param) for name, param in names.items()})
            return fn(**kwargs)

        wrapper.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        return wrapper

    return decorate


def cli_search_options(values: dict[str, Any]) -> SearchOptions:
    """The search flags' values as one checked :class:`SearchOptions` (:func:`~radsift.search.options.wire_options`).

    ``--unit passage`` is the search command's passage search, not a unit of ``Index.search``: it is
    kept as it is and the other options checked.

    Raises:
        ConfigError: Naming the option, in the input policy's sentence.
    """
    passage = values.get("unit") == "passage"
    options = wire_options({**values, "unit": "sentence"} if passage else values)
    return dataclasses.replace(options, unit="passage") if passage else options


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
    "--model", metavar="DIR", help="sentence-transformers model folder (default: the model that built the index, "
    "found through the index, also in its own models/ folder when copied; a new build: packaged all-MiniLM-L6-v2).")]
BuildModelOpt = Annotated[Optional[str], typer.Option(
    "--model", metavar="DIR", help="sentence-transformers model folder to encode with (default: the packaged "
    "all-MiniLM-L6-v2; with --adapt, the model to tune).")]
ThreadsOpt = Annotated[Optional[int], typer.Option("--threads", metavar="N", help="torch threads for encoding.")]
BatchOpt = Annotated[int, typer.Option("--batch-size", metavar="N", help="Encoding batch size.")]
EncoderOpt = Annotated[str, typer.Option(
    "--encoder", metavar="NAME", help="How reports are encoded: torch (reference), onnx (ONNX Runtime: same vectors, "
    "~2.6x faster on 2 cores), onnx-int8 (~5x, vectors within 0.008 in cosine; onnx needs the 'fast' extra) or "
    "cuda (torch on a GPU in float16: build on a GPU machine, search anywhere). A search encodes its query on CPU, "
    "with the model's ONNX export where onnxruntime is installed (the same vector), else with torch.")]
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


# ---------------------------------------------------------------------------------------------
# The LLM back-end (ask, draft-impression, bench --protocol rag, serve)
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
    help="Allow an --llm-url (and --llm-proxy) that is not this machine (prompts hold report text: patient data).")]
LlmProxyOpt = Annotated[Optional[str], typer.Option(
    "--llm-proxy", metavar="URL", rich_help_panel="LLM back-end",
    help="Send the endpoint's requests through this http://HOST:PORT proxy (the same this-machine rule as "
         "--llm-url). Without it no proxy is used: http_proxy, https_proxy, ALL_PROXY are ignored.")]


# ---------------------------------------------------------------------------------------------
# --out: never overwritten without --force
# ---------------------------------------------------------------------------------------------
ForceOpt = Annotated[bool, typer.Option("--force", help="Overwrite what --out names when it exists.")]


def check_out(out: Path | None, force: bool, *, folder: bool = False, beside: Iterable[Path] = ()) -> None:
    """Refuse an ``--out`` that would overwrite something, unless ``--force``: a file that exists (and the
    files written ``beside`` it, e.g. an export's provenance sidecar), or, for a ``folder``, one that exists
    and is not empty. Checked before the command does its work.

    Raises:
        ConfigError: One line naming what exists and saying ``--force``.
    """
    if out is None or force:
        return
    out = Path(out)
    if folder:
        if out.is_dir() and any(out.iterdir()):
            raise ConfigError(f"--out {out}: the folder exists and is not empty; give --force to write into it "
                              "(files of the same name are replaced), or name another folder")
        if out.exists() and not out.is_dir():
            raise ConfigError(f"--out {out} is a file: name a folder")
        return
    for path in (out, *beside):
        if path.exists() and not path.is_dir():
            raise ConfigError(f"--out {out}: {path} exists; give --force to overwrite it, or name another file")


SavedDirOpt = Annotated[Optional[Path], typer.Option(
    "--saved-dir", metavar="DIR", help="Folder of saved searches (default INDEX_DIR/saved).")]


def read_reports(paths: list[Path], options: ReaderOptions) -> tuple[Iterable[Report], ReadStats]:
    """The reports of the corpus ``paths`` (read lazily, as their consumer asks) and the stats the reading
    fills in (print them with :func:`radsift.cli.output.report_read_stats` once the reports are consumed)."""
    stats = ReadStats()
    return read_corpus(paths, options, stats), stats
