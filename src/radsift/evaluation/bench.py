"""``radsift bench``: every evaluation protocol, for every system, in one run.

:func:`run_bench` reads the corpus (with the same reader options as ``radsift index build``),
labels its sentences once (the weak labels of Shi et al.), builds the systems and runs the
protocols of :mod:`radsift.evaluation.protocols` on exactly the same queries, candidates and
splits for every system. :func:`write_report` (in :mod:`radsift.evaluation.report`) turns the
result into ``report.md``, ``report.json`` and PNG plots.

Everything a user can get wrong is checked before the slow work starts: the systems and their
model folders, the queries and qrels files (and that every judged report is in the corpus),
the category field, the fold and the holdout fraction.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from radsift.corpus import ReaderOptions, ReadStats, read_corpus
from radsift.errors import ConfigError, CorpusError
from radsift.evaluation.card_splits import CardSplit, card_split, check_card_splits, split_from_card
from radsift.evaluation.protocols import (OPT_IN_PROTOCOLS, PROTOCOLS, check_judgments, detect_category_field,
                                          run_category, run_cross_collection, run_findings_to_impression,
                                          run_free_text, run_sentence_retrieval, run_separation)
from radsift.evaluation.protocols.base import ProtocolResult, skipped
from radsift.evaluation.protocols.category import KEY as CATEGORY_KEY, TITLE as CATEGORY_TITLE
from radsift.evaluation.protocols.cross_collection import KEY as CROSS_KEY, TITLE as CROSS_TITLE
from radsift.evaluation.protocols.free_text import KEY as FREE_KEY, TITLE as FREE_TITLE
from radsift.evaluation.protocols.rag import run_rag
from radsift.evaluation.report import prepare_out_dir, write_report
from radsift.evaluation.systems import SystemSpec, build_systems, check_specs, load_systems_file, parse_system
from radsift.evaluation.trec import read_qrels, read_queries
from radsift.labels.weak import build_weak_labels, split_findings
from radsift.rag.llm import make_llm
from radsift.search.query import parse_where
from radsift.splits import DEFAULT_FOLDS, DEFAULT_HOLDOUT_FRACTION, DEFAULT_SEED, check_fraction
from radsift.version import __version__

Log = Callable[[str], None]


@dataclass
class BenchConfig:
    """What ``radsift bench`` evaluates.

    Attributes:
        corpus: Corpus files or folders.
        reader: How to read them (:class:`radsift.corpus.ReaderOptions`; None = inferred).
        systems: System specs (``bm25``, ``dense``, ``dense:PATH``, ``hybrid[:PATH]``, ``NAME=SPEC``).
        systems_file: A YAML file of more systems (see :func:`~radsift.evaluation.systems.load_systems_file`).
        queries: Free-text queries (``qid<TAB>query``), with ``qrels``.
        qrels: TREC qrels judging ``queries`` (docid = report id).
        category_field: Metadata field of the category protocol (None = detect, ``"none"`` = off).
        cross_corpus: Another collection for the cross-collection protocol.
        cross_reader: How to read it (None = inferred).
        cross_where: ``KEY=VALUE`` filters on the other collection's metadata (e.g.
            ``medical_specialty=Radiology``).
        fold: Evaluate only the test queries of this fold of the split by finding.
        folds: Number of folds of the split by finding.
        holdout_fraction: Share of held-out reports (findings-to-impression, category).
        seed: Seed of the splits, samples and randomization tests.
        max_queries: Cap on the queries of each protocol (a seeded sample).
        protocols: Protocols to run (None = all that apply), names of :data:`PROTOCOLS`.
        label_sections: Sections whose sentences are labeled.
        threads: torch threads for encoding.
        batch_size: Encoding batch size.
        progress: Progress bars for labeling and encoding.
    """

    corpus: Sequence[Path]
    reader: Any = None
    systems: Sequence[str | SystemSpec] = ()
    systems_file: Path | None = None
    queries: Path | None = None
    qrels: Path | None = None
    category_field: str | None = None
    cross_corpus: Sequence[Path] = ()
    cross_reader: Any = None
    cross_where: Sequence[str] = ()
    fold: int | None = None
    folds: int = DEFAULT_FOLDS
    split_from: Path | None = None
    holdout_fraction: float = DEFAULT_HOLDOUT_FRACTION
    seed: int = DEFAULT_SEED
    max_queries: int | None = None
    protocols: Sequence[str] | None = None
    label_sections: Sequence[str] = ("findings", "impression")
    threads: int | None = None
    batch_size: int = 64
    progress: bool = True
    #: ``rag``: the LLM back-end (an :class:`radsift.rag.llm.LLM`, or the keyword arguments of
    #: :func:`radsift.rag.llm.make_llm`; None = the offline model) and held-out reports to draft for.
    llm: Any = None
    rag_draft_reports: int = 30


@dataclass
class BenchResult:
    """Everything :func:`~radsift.evaluation.report.write_report` needs.

    Attributes:
        config: The run's settings, JSON-ready.
        corpus: Counts of the corpus (reports, sentences, weak-label statistics).
        systems: ``[{"name", "kind", "description"}]``.
        protocols: The protocol results, in report order.
        timings: Seconds per step (reading, labeling, loading, each protocol, total).
        environment: Python, platform, CPU count, date.
    """

    config: dict[str, Any]
    corpus: dict[str, Any]
    systems: list[dict[str, str]]
    protocols: list[ProtocolResult]
    timings: dict[str, float] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)

    def protocol(self, key: str) -> ProtocolResult | None:
        """A protocol's result by key (``shi_sentence_retrieval``, ``findings_to_impression`` ...)."""
        return next((p for p in self.protocols if p.key == key), None)


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def collect_specs(config: BenchConfig) -> list[SystemSpec]:
    """The systems of ``--systems`` then ``--systems-file``, parsed (not yet checked)."""
    specs = [parse_system(s) if isinstance(s, str) else s for s in config.systems]
    if config.systems_file is not None:
        specs += load_systems_file(config.systems_file)
    return specs


def _check_config(config: BenchConfig) -> list[str]:
    """Validate options that need no data; returns the protocols to run."""
    check_fraction(config.holdout_fraction)
    if config.folds < 2:
        raise ConfigError(f"folds must be at least 2, got {config.folds}")
    if config.fold is not None and not 0 <= config.fold < config.folds:
        raise ConfigError(f"--fold must be between 0 and {config.folds - 1}, got {config.fold}")
    if config.max_queries is not None and config.max_queries < 1:
        raise ConfigError(f"--max-queries must be at least 1, got {config.max_queries}")
    if (config.queries is None) != (config.qrels is None):
        raise ConfigError("--queries and --qrels go together: give both (free-text queries and their judgments)")
    wanted = list(PROTOCOLS) if not config.protocols else list(dict.fromkeys(config.protocols))
    unknown = [p for p in wanted if p not in PROTOCOLS + OPT_IN_PROTOCOLS]
    if unknown:
        raise ConfigError(f"unknown protocol {unknown[0]!r}; known: {', '.join(PROTOCOLS + OPT_IN_PROTOCOLS)}")
    if not config.corpus:
        raise ConfigError("give at least one --corpus file or folder")
    for path in list(config.corpus) + list(config.cross_corpus):
        if not Path(path).exists():
            raise CorpusError(f"{path}: no such file or folder")
    return wanted


def _read(paths: Sequence[Path], reader) -> tuple[list, Any]:
    stats = ReadStats()
    options = reader if reader is not None else ReaderOptions()
    reports = [r for r in read_corpus(list(paths), options, stats) if not r.is_empty]
    return reports, stats


def _filter(reports: list, where: Sequence[str], source: str) -> list:
    filters = parse_where(list(where))
    if not filters:
        return reports
    by_key: dict[str, list] = {}
    for f in filters:
        by_key.setdefault(f.key, []).append(f)

    def matches(f, value: str) -> bool:  # loose on purpose: corpus exports vary in case and spacing
        wanted = f.value.strip().casefold()
        return wanted in value if f.op == "~" else wanted == value

    kept = [r for r in reports
            if all(any(matches(f, str(r.metadata.get(k, "")).strip().casefold()) for f in group)
                   for k, group in by_key.items())]
    if not kept:
        raise ConfigError(f"--cross-where {' '.join(where)}: no report of {source} matches")
    return kept


@dataclass
class _Inputs:
    """What the protocols run on: the corpus, its weak labels, the other collection, the judged queries
    and the split by finding."""

    reports: list
    queries: Any = None
    qrels: Any = None
    category_field: str | None = None
    labeler: Any = None
    weak: Any = None
    other_reports: list = field(default_factory=list)
    other_weak: Any = None
    other_name: str = ""
    groups: list[set[str]] | None = None
    fold: int | None = None

    @property
    def test_findings(self) -> set[str] | None:
        """The findings of the judged fold (None: every finding)."""
        return self.groups[self.fold] if self.groups is not None and self.fold is not None else None


def run_bench(config: BenchConfig, *, encoders: Mapping[str | None, Any] | None = None,
              rerankers: Mapping[str, Any] | None = None, log: Log | None = None) -> BenchResult:
    """Run the evaluation protocols for every system.

    Args:
        config: What to evaluate.
        encoders: Ready encoders by model key (``None`` = the default model, else the model
            path as written in the spec), e.g. a HashingEncoder in tests.
        rerankers: Ready rerankers by folder as written in the spec (tests).
        log: Receives one line per step (default: stderr).

    Raises:
        ConfigError, CorpusError, EvaluationError: Bad options or input, before the slow work.
    """
    log = log or _stderr
    t_start = time.perf_counter()
    timings: dict[str, float] = {}
    wanted = _check_config(config)
    specs = collect_specs(config)
    injected = tuple("default" if k is None else str(k) for k in (encoders or {})) + tuple(rerankers or {})
    check_specs(specs, injected=injected)  # a missing model folder fails before any reading
    split_from = _split_from(config)
    model_splits = [c for c in map(card_split, _model_folders(specs)) if c is not None]
    queries = qrels = None
    if config.queries is not None and "free-text" in wanted:
        queries = read_queries(config.queries)
        qrels = read_qrels(config.qrels)

    t0 = time.perf_counter()
    reports, stats = _read(config.corpus, config.reader)
    if not reports:
        raise CorpusError(f"{', '.join(map(str, config.corpus))}: no non-empty report to evaluate on")
    timings["read"] = time.perf_counter() - t0
    log(f"read {len(reports)} reports ({stats.summary()})")
    if queries is not None:
        check_judgments(queries, qrels, {r.id for r in reports}, config.queries, config.qrels)
    inputs = _Inputs(reports, queries, qrels, _category_field(config, reports, wanted))

    t0 = time.perf_counter()
    _label(config, inputs, wanted, log)
    timings["label"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    systems = build_systems(specs, encoders=encoders, rerankers=rerankers, threads=config.threads, batch_size=config.batch_size,
                            progress=config.progress)
    timings["load_systems"] = time.perf_counter() - t0
    log(f"systems: {', '.join(s.name for s in systems)}")

    inputs.groups, inputs.fold = _fold_groups(config, inputs.weak, split_from, model_splits, log)
    results: list[ProtocolResult] = []
    steps = [p for p in PROTOCOLS + OPT_IN_PROTOCOLS if p in wanted]
    for i, name in enumerate(steps, 1):
        log(f"[{i}/{len(steps)}] {name}")
        t0 = time.perf_counter()
        res = _run_protocol(name, config, inputs, systems, log)
        res.seconds = time.perf_counter() - t0
        timings[name] = res.seconds
        if res.skipped:
            log(f"  skipped: {res.skipped}")
        results.append(res)
    timings["total"] = time.perf_counter() - t_start
    return BenchResult(
        config=_config_dict(config, specs, wanted, inputs.fold),
        corpus=_corpus_info(config, inputs, stats),
        systems=[{"name": s.name, "kind": s.kind, "description": s.describe()} for s in systems],
        protocols=results,
        timings={k: round(v, 2) for k, v in timings.items()},
        environment=_environment(),
    )


def _category_field(config: BenchConfig, reports: list, wanted: Sequence[str]) -> str | None:
    """The metadata field of the category protocol: as given (checked against the reports), else
    detected; None when the protocol does not run or is switched off."""
    if "category" not in wanted or (config.category_field or "").lower() == "none":
        return None
    if config.category_field:
        if not any(r.metadata.get(config.category_field, "").strip() for r in reports):
            fields = sorted({k for r in reports[:200] for k in r.metadata})
            raise ConfigError(f"--category-field {config.category_field!r}: no report has this metadata field "
                              f"(fields: {', '.join(fields) or 'none'})")
        return config.category_field
    return detect_category_field(reports)


def _label(config: BenchConfig, inputs: _Inputs, wanted: Sequence[str], log: Log) -> None:
    """The weak labels of the corpus (when a protocol judges by them) and of the other collection."""
    from radsift.labels.labeler import Labeler  # loads spaCy/medspaCy: seconds

    if any(p in wanted for p in ("sentences", "cross", "separation")):
        log("labeling sentences (weak labels) ...")
        inputs.labeler = Labeler()
        inputs.weak = build_weak_labels(inputs.reports, inputs.labeler, sections=tuple(config.label_sections),
                                        progress=config.progress)
    if config.cross_corpus and "cross" in wanted:
        other_reports, _ = _read(config.cross_corpus, config.cross_reader)
        other_name = ", ".join(Path(p).name for p in config.cross_corpus)
        other_reports = _filter(other_reports, config.cross_where, other_name)
        if config.cross_where:
            other_name += f" ({' and '.join(config.cross_where)})"
        log(f"read {len(other_reports)} reports of {other_name}")
        inputs.other_reports, inputs.other_name = other_reports, other_name
        inputs.other_weak = build_weak_labels(other_reports, inputs.labeler or Labeler(),
                                              sections=tuple(config.label_sections), progress=config.progress)


def _run_protocol(name: str, config: BenchConfig, inputs: _Inputs, systems: list, log: Log) -> ProtocolResult:
    """One protocol of :data:`PROTOCOLS` (or ``rag``) on ``inputs``, skipped when its input is missing."""
    common = {"log": log}
    if name == "sentences":
        return run_sentence_retrieval(inputs.weak, systems, fold_groups=inputs.groups, fold=inputs.fold,
                                      max_queries=config.max_queries, seed=config.seed, **common)
    if name == "cross":
        if inputs.other_weak is None:
            return skipped(CROSS_KEY, CROSS_TITLE, "no --cross-corpus given")
        return run_cross_collection(inputs.weak, inputs.other_weak, systems, other_name=inputs.other_name,
                                    findings=inputs.test_findings, max_queries=config.max_queries, seed=config.seed,
                                    **common)
    if name == "separation":
        return run_separation(inputs.weak, systems, findings=inputs.test_findings, **common)
    if name == "impression":
        return run_findings_to_impression(inputs.reports, systems, holdout_fraction=config.holdout_fraction,
                                          seed=config.seed, max_queries=config.max_queries, **common)
    if name == "free-text":
        if inputs.queries is None:
            return skipped(FREE_KEY, FREE_TITLE, "no --queries/--qrels given")
        return run_free_text(inputs.reports, systems, inputs.queries, inputs.qrels,
                             source=f"{Path(config.queries).name}, {Path(config.qrels).name}",
                             max_queries=config.max_queries, seed=config.seed, **common)
    if name == "rag":
        return _run_rag(config, inputs.reports, systems, inputs.labeler, log)
    # category
    if inputs.category_field is None:
        return skipped(CATEGORY_KEY, CATEGORY_TITLE,
                       "no category field in the metadata (give --category-field KEY, e.g. medical_specialty)")
    return run_category(inputs.reports, systems, field=inputs.category_field, holdout_fraction=config.holdout_fraction,
                        seed=config.seed, max_queries=config.max_queries, **common)


def _corpus_info(config: BenchConfig, inputs: _Inputs, stats) -> dict[str, Any]:
    """The corpus section of the report: counts, the weak labels' statistics, the other collection."""
    corpus_info: dict[str, Any] = {
        "paths": [str(p) for p in config.corpus],
        "reports": len(inputs.reports),
        "read": stats.summary(),
        "category_field": inputs.category_field,
    }
    if inputs.weak is not None:
        ws = inputs.weak.stats()
        corpus_info["weak_labels"] = {k: v for k, v in ws.items() if k != "per_finding"}
        corpus_info["fold_findings"] = [sorted(g) for g in inputs.groups] if inputs.groups else None
    if inputs.other_weak is not None:
        corpus_info["cross_collection"] = {"name": inputs.other_name, "reports": len(inputs.other_reports),
                                           "unique_sentences": len(inputs.other_weak.sentences)}
    return corpus_info


def _split_from(config: BenchConfig) -> CardSplit | None:
    """The split recorded by ``--split-from MODEL`` (checked before any reading)."""
    if config.split_from is None:
        return None
    if not Path(config.split_from).is_dir():
        raise ConfigError(f"--split-from {config.split_from}: not a model folder")
    split = card_split(config.split_from)
    if split is None:
        raise ConfigError(f"--split-from {config.split_from}: no held-out findings recorded "
                          "(it was not trained with radsift train --split-by-finding)")
    if config.fold is not None and config.fold != split.fold:
        raise ConfigError(f"--fold {config.fold} disagrees with --split-from {config.split_from}, "
                          f"which held out fold {split.fold}")
    return split


def _model_folders(specs: Sequence[SystemSpec]) -> list[str]:
    """Model folders of the systems under test (bi-encoders and rerankers), each once."""
    folders = [p for s in specs for p in (s.model, s.reranker) if p]
    return [p for p in dict.fromkeys(folders) if Path(p).is_dir()]


def _fold_groups(config: BenchConfig, weak, split_from: CardSplit | None, model_splits: Sequence[CardSplit],
                 log: Log) -> tuple[list[set[str]] | None, int | None]:
    """The split by finding and the judged fold: recomputed from the labels or read from a model."""
    if weak is None:
        return None, config.fold
    if split_from is not None:
        groups, fold = split_from_card(split_from, weak.entry_counts()), split_from.fold
        log(f"split by finding from {split_from.model}: fold {fold}, {len(groups[fold])} test findings")
    else:
        groups, fold = split_findings(weak, folds=config.folds, seed=config.seed), config.fold
    if fold is not None:
        check_card_splits(model_splits, fold, groups[fold], warn=lambda m: log(f"warning: {m}"))
    return groups, fold


def _config_dict(config: BenchConfig, specs: Sequence[SystemSpec], wanted: Sequence[str],
                 fold: int | None) -> dict[str, Any]:
    return {
        "corpus": [str(p) for p in config.corpus],
        "systems": [{"name": s.label, "spec": s.describe()} for s in specs],
        "queries": str(config.queries) if config.queries else None,
        "qrels": str(config.qrels) if config.qrels else None,
        "category_field": config.category_field,
        "cross_corpus": [str(p) for p in config.cross_corpus],
        "cross_where": list(config.cross_where),
        "fold": fold,
        "folds": config.folds,
        "split_from": str(config.split_from) if config.split_from else None,
        "holdout_fraction": config.holdout_fraction,
        "seed": config.seed,
        "max_queries": config.max_queries,
        "protocols": list(wanted),
        "label_sections": list(config.label_sections),
    }


def _environment() -> dict[str, Any]:
    return {
        "radsift": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def bench(config: BenchConfig, out_dir: str | Path, *, encoders: Mapping[str | None, Any] | None = None,
          rerankers: Mapping[str, Any] | None = None, log: Log | None = None,
          plots: bool = True) -> tuple[BenchResult, dict[str, Path]]:
    """Run :func:`run_bench` and write the report into ``out_dir`` (checked first).

    Returns:
        The result and the written paths (``markdown``, ``json``, one per plot).
    """
    prepare_out_dir(out_dir)
    result = run_bench(config, encoders=encoders, rerankers=rerankers, log=log)
    return result, write_report(result, out_dir, plots=plots)


def _run_rag(config: BenchConfig, reports: list, systems: list, labeler, log: Log) -> ProtocolResult:
    """The ``rag`` protocol with the configured back-end (loaded only now: it is the slow part)."""
    from radsift.labels.labeler import Labeler  # loads spaCy/medspaCy

    if config.rag_draft_reports < 0:
        raise ConfigError(f"--rag-draft-reports must be 0 or more, not {config.rag_draft_reports}")
    llm = config.llm if config.llm is not None and not isinstance(config.llm, Mapping) else make_llm(**(config.llm or {}))
    return run_rag(reports, systems, llm, labeler=labeler or Labeler(), holdout_fraction=config.holdout_fraction,
                   seed=config.seed, max_queries=config.max_queries, draft_reports=config.rag_draft_reports, log=log)
