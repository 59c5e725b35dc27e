"""Build an index from reports and add reports to one (a new segment: nothing stored is re-encoded or
rewritten); the commit every write ends with. Deleting reports and merging segments are
:mod:`radsift.index.changes`; what follows a write (HNSW graphs, a Milvus push, poly-encoder codes) is
:mod:`radsift.index.derived`, run when the caller names a vector ``backend`` as ``radsift index`` does."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from radsift.errors import ConfigError, CorpusError, IndexStoreError
from radsift.index.derived import Derived, check_options, derive
from radsift.index.format import CURRENT, GEN_PREFIX, MARKER, SEGMENTS, TMP_PREFIX
from radsift.index.generations import mark_index_dir, write_lock
from radsift.index.lifecycle import remove_leftovers
from radsift.index.manifest import FORMAT_VERSION, Manifest, now_iso
from radsift.index.reader import IndexStore
from radsift.index.segment_data import segment_data
from radsift.index.spread import write_shares
from radsift.index.writer import commit_generation, live_counts, write_segment
from radsift.models.encoder import check_device, model_fingerprint, resolve_model_path
from radsift.models.onnx_encoder import BUILD_ENCODERS, load_build_encoder
from radsift.models.onnx_encoder import encoder_kind as kind_of_encoder
from radsift.models.ray_encode import check_ray_address
from radsift.progress import progress_bar
from radsift.records import Report
from radsift.text.tokens import TOKENIZER_VERSION
from radsift.version import __version__


@dataclass
class BuildSummary:
    """What a build or add did."""

    index_dir: Path
    reports: int = 0  # reports in the index afterwards
    added: int = 0
    replaced: int = 0
    empty_ids: list[str] = field(default_factory=list)  # stored, but with no text to search
    sentences: int = 0
    sections: int = 0
    encoded: int = 0  # distinct texts sent to the encoder by this run
    seconds: float = 0.0
    segments: int = 1  # segments of the index afterwards
    derived: Derived = field(default_factory=Derived)  # graphs, Milvus push, poly codes

    def describe(self) -> str:
        if self.added == 0 and not self.replaced and self.reports:
            return f"nothing to add: {self.index_dir} is unchanged ({self.reports} reports)"
        parts = [f"{self.reports} reports ({self.added} added", f"{self.replaced} replaced)" if self.replaced else ")"]
        text = parts[0] + (", " + parts[1] if self.replaced else parts[1])
        text += f", {self.sentences} sentences, {self.sections} sections in {self.index_dir}"
        text += f"; encoded {self.encoded} distinct texts in {self.seconds:.1f}s"
        if self.empty_ids:
            shown = ", ".join(self.empty_ids[:5]) + (" ..." if len(self.empty_ids) > 5 else "")
            text += f"; {len(self.empty_ids)} empty reports stored with no searchable text: {shown}"
        if self.segments >= OPTIMIZE_HINT:
            text += f"; {self.segments} segments: `radsift index optimize {self.index_dir}` merges them"
        return text


#: From this many segments an add suggests ``radsift index optimize`` (each segment costs a little per query).
OPTIMIZE_HINT = 16


def _collect(reports: Iterable[Report]) -> list[Report]:
    seen: set[str] = set()
    out = []
    for r in reports:
        if r.id in seen:
            raise IndexStoreError(f"duplicate report id {r.id!r} in the input")
        seen.add(r.id)
        out.append(r)
    return out


@contextmanager
def progress_step(opts: "BuildOptions", description: str):
    """A progress task without a count for a step that may take a while (a line every 10 s off a terminal)."""
    with progress_bar(disable=None if opts.progress else True) as bar:
        task = bar.add_task(description, total=None)
        yield
        bar.update(task, total=1, completed=1)


@dataclass(frozen=True)
class BuildOptions:
    """How a build or add runs (see :func:`build_index` for each field)."""

    model: str | Path | None = None
    encoder: object = None
    threads: int | None = None
    batch_size: int = 64
    progress: bool = True
    replace: bool = False
    lexicon: str | Path | None = None
    label: bool = True
    allow_empty: bool = False
    encoder_kind: str = "torch"  # radsift.models.onnx_encoder.BUILD_ENCODERS
    encoder_cache: str | Path | None = None  # where ONNX exports are cached
    workers: int = 1  # processes on this machine, each writing a segment (radsift.index.spread)
    ray: str | None = None  # a Ray cluster's address: its tasks write the segments (radsift.index.spread)

    def __post_init__(self) -> None:  # a wrong option fails before the index folder is touched
        if self.encoder_kind not in BUILD_ENCODERS:
            raise ConfigError(f"--encoder {self.encoder_kind!r}: unknown encoder; choose one of "
                              f"{', '.join(BUILD_ENCODERS)}")
        if self.encoder_kind == "cuda" and self.encoder is None:
            check_device("cuda")  # a GPU that is not there: refused before anything is written
        if isinstance(self.workers, bool) or not isinstance(self.workers, int) or self.workers < 1:
            raise ConfigError(f"--workers: must be a whole number of 1 or more, not {self.workers!r}")
        if self.ray is not None:
            check_ray_address(self.ray)  # the extra installed and a cluster that answers, or a one-line error


#: Folders radsift keeps beside the generations of an index: an adapted model (``index build --adapt``),
#: caches (concept vectors), saved searches and the export audit log. A rebuild keeps them; a folder
#: holding only these may become an index.
SIDE_FOLDERS = ("models", "cache", "saved", "audit")


def build_index(
    index_dir: str | Path,
    reports: Iterable[Report],
    *,
    model: str | Path | None = None,
    encoder=None,
    threads: int | None = None,
    batch_size: int = 64,
    progress: bool = True,
    overwrite: bool = False,
    lexicon: str | Path | None = None,
    label: bool = True,
    allow_empty: bool = False,
    encoder_kind: str = "torch",
    encoder_cache: str | Path | None = None,
    backend: str | None = None,
    milvus_uri: str | None = None,
    poly: str | Path | None = None,
    say: Callable[[str], None] | None = None,
    workers: int = 1,
    ray: str | None = None,
) -> BuildSummary:
    """Build a new index at ``index_dir`` from ``reports``.

    Args:
        index_dir: The index directory (created if missing).
        reports: Reports to index (ids must be unique).
        model: Model folder (None = packaged all-MiniLM-L6-v2); ignored when ``encoder`` is given.
        encoder: An already loaded :class:`radsift.models.Encoder`.
        threads: torch threads for encoding.
        batch_size: Encoding batch size.
        progress: Show progress bars.
        overwrite: Replace an existing index (atomically: the old one stays live until the new one is complete).
        lexicon: Finding lexicon for the sentence labels (None = the packaged chest X-ray lexicon).
        label: Label sentences with findings and their negation status (enables negation-aware search).
        allow_empty: Build an index of no report (otherwise an empty corpus is an error).
        encoder_kind: How reports are encoded: ``torch`` (default), ``onnx`` (ONNX Runtime, same vectors,
            faster) or ``onnx-int8`` (fastest, vectors within 0.008 in cosine); needs the ``fast`` extra.
            Queries are encoded by torch either way. Ignored when ``encoder`` is given.
        encoder_cache: Folder of the ONNX exports (None = ``$RADSIFT_CACHE_DIR/onnx``, else ``~/.cache/radsift/onnx``).
        backend: The vector backend whose data to derive once the index is written, as ``radsift index build
            --backend`` (its default is ``auto``): ``auto``, ``numpy``, ``hnsw`` (the HNSW graphs) or ``milvus``
            (the vectors pushed to Milvus); see :func:`radsift.index.derived.derive`. None derives nothing.
        milvus_uri: Where ``milvus`` pushes (a server URL or a milvus-lite file; default the index's own file).
        poly: A poly-encoder folder whose section codes to write too (``radsift index build --poly``).
        say: Told each step of the derived work (default: silent, but for the poly-encoder's codes).
        workers: Worker processes on this machine (1 = this process): each loads the model once, encodes and
            labels a contiguous share of the reports and writes it as its own segment, and the segments are
            committed as one generation (:mod:`radsift.index.spread`); a search gives the hits and scores of
            a one-process build.
        ray: The address of a Ray cluster to build on (``host:port``, ``ray://host:port``, ``auto`` or
            ``local`` for a Ray started here): one Ray task per share, each writing its segment as a local
            worker does (the index folder at the same path on every node); needs the ``ray`` extra and a
            cluster that answers, checked before anything is written (:mod:`radsift.models.ray_encode`).
            ``workers`` > 1 then sets how many tasks (else as many as the cluster's CPUs allow).

    A worker that dies or fails (a Ray task too) fails the build with one line
    (:class:`radsift.models.parallel.EncodeWorkerError`, or the worker's own radsift error), nothing
    committed and the segments written so far removed. The checks of ``backend`` and ``poly`` run before anything is read or written; what was derived is
    the summary's ``derived``.

    A folder radsift created for a build that died before its first commit (it holds the
    ``.radsift-index`` marker, or only generation folders without ``CURRENT``) is built again.

    Raises:
        IndexStoreError: The directory already holds an index and ``overwrite`` is false, or ids repeat.
        CorpusError: No report, unless ``allow_empty``.
        ConfigError: ``milvus`` without its extra or a server that answers; ``poly`` not a poly-encoder.
    """
    index_dir = Path(index_dir)
    check_options(index_dir, backend, milvus_uri, poly)
    if (index_dir / CURRENT).exists() and not overwrite:
        raise IndexStoreError(
            f"{index_dir} already holds an index: use `radsift index add` to add reports, or --overwrite to rebuild it"
        )
    if index_dir.exists() and not (index_dir / CURRENT).exists() and not _ours(index_dir):
        raise IndexStoreError(f"{index_dir} exists and is not a radsift index: choose an empty or new directory")
    opts = BuildOptions(model, encoder, threads, batch_size, progress, replace=False, lexicon=lexicon, label=label,
                        allow_empty=allow_empty, encoder_kind=encoder_kind, encoder_cache=encoder_cache,
                        workers=workers, ray=ray)
    mark_index_dir(index_dir)
    summary = _write(index_dir, reports, None, opts)
    summary.derived = derive(index_dir, backend, milvus_uri, poly, say=say)
    return summary


def _ours(index_dir: Path) -> bool:
    """Whether a folder without ``CURRENT`` may become an index: empty but for radsift's own things."""
    if (index_dir / MARKER).exists():
        return True
    return not any(p for p in index_dir.iterdir()
                   if not p.name.startswith(".") and p.name not in SIDE_FOLDERS and p.name != SEGMENTS
                   and not (p.is_dir() and (p.name.startswith(GEN_PREFIX) or p.name.startswith(TMP_PREFIX))))


def add_to_index(
    index_dir: str | Path,
    reports: Iterable[Report],
    *,
    replace: bool = False,
    model: str | Path | None = None,
    encoder=None,
    threads: int | None = None,
    batch_size: int = 64,
    progress: bool = True,
    encoder_kind: str = "torch",
    encoder_cache: str | Path | None = None,
    backend: str | None = None,
    milvus_uri: str | None = None,
    poly: str | Path | None = None,
    say: Callable[[str], None] | None = None,
    workers: int = 1,
    ray: str | None = None,
) -> BuildSummary:
    """Add ``reports`` to an existing index, encoding only the new ones (``encoder_kind``,
    ``encoder_cache``, ``backend``, ``milvus_uri``, ``poly``, ``say``, ``workers`` and ``ray`` as in
    :func:`build_index`: with a
    ``backend``, the new generation's graphs are extended from the previous one's, or it is pushed).

    Raises:
        IndexStoreError: An id is already in the index and ``replace`` is false; the model differs.
        ConfigError: As :func:`build_index`.
    """
    index_dir = Path(index_dir)
    check_options(index_dir, backend, milvus_uri, poly)
    old = IndexStore.open(index_dir)
    lexicon = old.manifest.lexicon
    try:
        opts = BuildOptions(model, encoder, threads, batch_size, progress, replace=replace,
                            lexicon=None if lexicon == PACKAGED_LEXICON else lexicon, label=lexicon is not None,
                            encoder_kind=encoder_kind, encoder_cache=encoder_cache, workers=workers, ray=ray)
    except BaseException:
        old.close()
        raise
    summary = _write(index_dir, reports, old, opts)
    summary.derived = derive(index_dir, backend, milvus_uri, poly, say=say)
    return summary


def portable_model_path(model: Path, index_dir: Path) -> str:
    """The model folder as the manifest records it: relative to the index when it lies inside it (an
    adapted model in ``INDEX/models/``), so a copied or moved index still finds it; else absolute."""
    try:
        return str(Path(model).resolve().relative_to(Path(index_dir).resolve()))
    except ValueError:
        return str(Path(model).resolve()) if Path(model).exists() else str(model)


def _load_encoder(opts: BuildOptions, old: IndexStore | None):
    """The encoder of a build; an add must use the model that built the index (checked once, here)."""
    encoder, model = opts.encoder, opts.model
    if old is not None and model is None and encoder is None:
        model = old.manifest.model_folder(old.index_dir)
    if old is not None:
        old.manifest.check_model(Path(encoder.path) if encoder is not None else resolve_model_path(model),
                                 old.index_dir)
    if encoder is not None:
        return encoder
    return load_build_encoder(opts.encoder_kind, model, threads=opts.threads, cache_dir=opts.encoder_cache)


def _encoders_used(old: IndexStore | None, encoder) -> list[str]:
    """The manifest's ``build_encoders``: the old index's, plus this write's encoder if new."""
    used = list(old.manifest.build_encoders) if old is not None else []
    kind = kind_of_encoder(encoder)
    return used if kind in used else used + [kind]


PACKAGED_LEXICON = "packaged:chest_xray"


def _write(index_dir: Path, reports: Iterable[Report], old: IndexStore | None, opts: BuildOptions) -> BuildSummary:
    """A build (``old`` None: one new segment, a generation of it alone) or an add (a new segment of the
    new reports only, listed after ``old``'s segments; replaced reports deleted from their segments); with
    ``--workers N`` or ``--ray``, one new segment per worker's share, all in the one new generation."""
    start = time.perf_counter()
    try:
        with write_lock(index_dir):
            if old is not None and not old.is_current():  # another writer committed since: add to its result
                old.close()
                old = IndexStore.open(index_dir)
            new = _collect(reports)
            if not new and old is not None:  # nothing to add: no new generation
                return BuildSummary(index_dir=index_dir, added=0, reports=len(old.report_ids),
                                    sentences=old.manifest.counts.get("sentences", 0),
                                    sections=old.manifest.counts.get("sections", 0),
                                    empty_ids=list(old.manifest.empty_ids), seconds=time.perf_counter() - start)
            if not new and not opts.allow_empty:
                raise CorpusError("the corpus holds no report (a header-only or empty file?): nothing to index; "
                                  "pass --allow-empty to build an empty index anyway")
            with progress_step(opts, "loading the model"):
                encoder = _load_encoder(opts, old)
            summary = BuildSummary(index_dir=index_dir, added=len(new))
            segments: list[dict] = []
            if old is not None:
                clash = [r.id for r in new if old.report_row(r.id) is not None]
                if clash and not opts.replace:
                    shown = ", ".join(clash[:5]) + (" ..." if len(clash) > 5 else "")
                    raise IndexStoreError(
                        f"{len(clash)} report id(s) already in {index_dir}: {shown} (pass --replace to replace them)"
                    )
                summary.replaced = len(clash)
                segments = tombstoned(old, clash)

            data, entries, encoded = None, [], 0
            if (opts.workers > 1 or opts.ray is not None) and new:  # each worker writes its share's segment
                remove_leftovers(index_dir)
                entries, encoded = write_shares(
                    index_dir, new, encoder, workers=opts.workers, ray=opts.ray, threads=opts.threads,
                    batch_size=opts.batch_size, label=opts.label,
                    lexicon=Path(opts.lexicon).resolve() if opts.lexicon else None, progress=opts.progress)
            else:  # rows local to the new segment
                data, encoded = segment_data(new, encoder, batch_size=opts.batch_size, label=opts.label,
                                             lexicon=opts.lexicon, progress=opts.progress)
            empty = [r.id for r in new if r.is_empty]
            if old is not None:
                empty = sorted(set(old.manifest.empty_ids) - {r.id for r in new} | set(empty))
            manifest = _manifest(index_dir, new, old, encoder, opts, empty)
            with progress_step(opts, "writing the index (records, vectors, BM25)"):
                if data is not None:
                    remove_leftovers(index_dir)
                    entries = [write_segment(index_dir, data, manifest.bm25)]
                commit_segments(index_dir, manifest, segments + entries)  # every new segment in one generation
    finally:
        if old is not None:
            old.close()
    summary.reports = manifest.counts["reports"]
    summary.empty_ids = empty
    summary.sentences = manifest.counts["sentences"]
    summary.sections = manifest.counts["sections"]
    summary.encoded = encoded
    summary.segments = len(manifest.segments)
    summary.seconds = time.perf_counter() - start
    return summary


def _manifest(index_dir: Path, new: list[Report], old: IndexStore | None, encoder, opts: BuildOptions,
              empty: list[str]) -> Manifest:
    """The new generation's manifest but for what its segments decide (:func:`commit_segments` fills that in)."""
    lexicon = opts.lexicon
    return Manifest(
        format_version=FORMAT_VERSION,
        model_name=encoder.name,
        model_path=portable_model_path(Path(encoder.path), index_dir),
        model_fingerprint=model_fingerprint(Path(encoder.path)),
        dim=encoder.dim,
        empty_ids=empty,
        created=old.manifest.created if old is not None else now_iso(),
        tokenizer_version=TOKENIZER_VERSION,
        radsift_version=__version__,
        metadata_keys=sorted({k for r in new for k in r.metadata} | set(old.manifest.metadata_keys if old else [])),
        lexicon=(str(Path(lexicon).resolve()) if lexicon else PACKAGED_LEXICON) if opts.label else None,
        build_encoders=_encoders_used(old, encoder),
    )


def tombstoned(store: IndexStore, ids: Iterable[str]) -> list[dict]:
    """The store's segment entries with the live reports ``ids`` added to their deletion sets."""
    by_segment: dict[str, set[int]] = {}
    for rid in ids:
        name, local = store.segment_of_report(store.report_row(rid))
        by_segment.setdefault(name, set()).add(local)
    out = []
    for seg in store.manifest.segments:
        seg = dict(seg)
        if seg["name"] in by_segment:
            seg["deleted"] = sorted(set(seg.get("deleted", [])) | by_segment[seg["name"]])
        out.append(seg)
    return out


def commit_segments(index_dir: Path, manifest: Manifest, segments: list[dict]) -> Path:
    """Fill in what the generation's segments decide (live counts, section and finding names) and commit it."""
    manifest.segments = segments
    counts = live_counts(index_dir, segments)
    manifest.counts = {**counts, "empty_reports": len(manifest.empty_ids),
                       "segments": len(segments), "deleted_reports": sum(len(s.get("deleted", [])) for s in segments)}
    manifest.sections = sorted({n for s in segments for n in s["sections"]})
    manifest.findings = sorted({n for s in segments for n in s["findings"]})
    manifest.updated = now_iso()
    return commit_generation(index_dir, manifest)
