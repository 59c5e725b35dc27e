"""``radsift bench --protocol passages``: run the answer-passage protocol (:mod:`.protocols.passage_retrieval`)
on the CDV test split or the development split, and write ``report.json`` and ``report.md``;
``radsift bench --protocol note-passages``: the same machinery on held-out MTSamples notes
(:mod:`.protocols.note_passages`, :func:`bench_note_passages`)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Callable, Sequence

from radsift.corpus.medquad import read_medquad, test_document_ids
from radsift.corpus.options import ReaderOptions
from radsift.corpus.reader import read_corpus
from radsift.corpus.medquad_passages import PassageData, dev_passage_data, load_cdv
from radsift.errors import ConfigError
from radsift.evaluation.protocols.base import no_log
from radsift.evaluation.protocols import note_passages
from radsift.evaluation.protocols.base import ProtocolResult
from radsift.evaluation.protocols.passage_retrieval import (KEY, LATENCY_PASSAGES, QUERY_KINDS, RULE_APPENDED, TITLE,
                                                            figures_json, latency, report_json, run_passages)
from radsift.evaluation.report import prepare_out_dir
from radsift.evaluation.systems.passage_systems import build_passage_systems, check_passage_specs, parse_passage_system
from radsift.models.training.config import TrainConfig
from radsift.splits import split_medquad


#: ``split`` of :func:`bench_passages`: the CDV test split (never tuned on) or the development split.
SPLITS = ("test", "dev")


def load_dev(cdv_dir: str | Path, medquad_dir: str | Path) -> PassageData:
    """The development split as the protocol's data: the answers of the MedQuAD documents that
    ``radsift train --recipe entity-aspect`` holds out with its default ``dev_fraction`` and
    ``heldout_seed`` (outside the CDV test split; the split to tune on)."""
    defaults = TrainConfig()
    _, dev = split_medquad(read_medquad(medquad_dir), test_document_ids(cdv_dir), defaults.dev_fraction,
                           defaults.heldout_seed)
    return dev_passage_data(dev)


def bench_passages(out_dir: str | Path, specs: Sequence[str], *, medquad_dir: str | Path | None = None,
                   cdv_dir: str | Path | None = None, split: str = "test", kinds: Sequence[str] = QUERY_KINDS,
                   max_queries: int | None = None, seed: int = 0, threads: int | None = None, batch_size: int = 64,
                   with_latency: bool = False, max_tokens: int | None = None,
                   log: Callable[[str], None] = no_log) -> dict:
    """``radsift bench --protocol passages``: run the protocol and write ``report.json`` and ``report.md``.

    ``report.json`` holds ``results``: system -> query kind -> ``"R@1"``, ``"R@5"`` (percent) and
    their 95% intervals over BM25's top 64 with no gold appended (the primary figure), the same
    with the missed golds appended as ``results_appended`` (secondary), then the protocol's tables,
    counts and settings.

    ``split``: ``test``, the CDV test split (CAPR's; never tune on it), or ``dev``, the development
    split of :func:`load_dev` (for choosing settings).

    Raises:
        ConfigError: Unknown systems, split or query kind, or missing folders (before any work).
    """
    data_dir = Path("../shared/data")
    medquad_dir = Path(medquad_dir) if medquad_dir else data_dir / "medquad"
    cdv_dir = Path(cdv_dir) if cdv_dir else data_dir / "medquad-cdv-test"
    for flag, path in (("--medquad", medquad_dir), ("--cdv", cdv_dir)):
        if not Path(path).is_dir():
            raise ConfigError(f"{flag} {path}: folder not found (the passages protocol reads MedQuAD and its CDV "
                              "test split; by default from ../shared/data)")
    if split not in SPLITS:
        raise ConfigError(f"unknown split {split!r}; known: {', '.join(SPLITS)}")
    unknown = [k for k in kinds if k not in QUERY_KINDS]
    if unknown:
        raise ConfigError(f"unknown query kind {unknown[0]!r}; known: {', '.join(QUERY_KINDS)}")
    parsed = [parse_passage_system(s) for s in (specs or ["bm25", "dense"])]
    check_passage_specs(parsed)
    prepare_out_dir(out_dir)
    t0 = time.perf_counter()
    data = load_cdv(cdv_dir, medquad_dir) if split == "test" else load_dev(cdv_dir, medquad_dir)
    log(f"read {len(data.passages)} passages and {len(data.queries)} queries ({data.source})")
    systems = build_passage_systems(parsed, threads=threads, batch_size=batch_size, max_tokens=max_tokens)
    result = run_passages(data, systems, kinds=kinds, max_queries=max_queries, seed=seed, log=log)
    report: dict = {"protocol": KEY, "results": report_json(result),
                    "results_appended": report_json(result, RULE_APPENDED), **result.to_dict()}
    report["data"] = {k: v for k, v in result.data.items() if k != "per_query_hit1"}
    if with_latency:
        log(f"latency: {LATENCY_PASSAGES} passages per query ...")
        report["latency"] = latency(build_passage_systems(parsed, threads=threads, batch_size=batch_size,
                                                          max_tokens=max_tokens),
                                    data.passages, data.queries[0].texts[kinds[0]])
        report["latency_load"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    report["seconds"] = round(time.perf_counter() - t0, 1)
    title = TITLE if split == "test" else TITLE.replace("CDV test split", "development split")
    report["settings"] = {"systems": [s.label for s in parsed], "split": split, "kinds": list(kinds),
                          "max_queries": max_queries,
                          "seed": seed, "threads": threads, "max_tokens": max_tokens, "medquad": str(medquad_dir), "cdv": str(cdv_dir),
                          "cpus": os.cpu_count()}
    _write_report(Path(out_dir), report, title, data.source, result)
    return report


def _write_report(out: Path, report: dict, title: str, source: str, result: ProtocolResult) -> None:
    """``report.json`` and ``report.md`` (the tables, and the latency table when measured)."""
    (out / "report.json").write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    lines = [f"# {title}", "", f"Pool and queries: {source}.", "", result.description, ""]
    lines += [f"- {n}" for n in result.notes] + ([""] if result.notes else [])
    for table in result.tables:
        lines += [f"## {table.title}", "", "| " + " | ".join(table.columns) + " |",
                  "|" + "---|" * len(table.columns)] + ["| " + " | ".join(map(str, r)) + " |" for r in table.rows]
        lines += ["", table.note, ""]
    if "latency" in report:
        lines += [f"## Latency: ms to score {LATENCY_PASSAGES} passages for one query ({os.cpu_count()} cores, "
                  f"load {report['latency_load']})", "", "| system | pre-encoded | with encoding |", "|---|---|---|"]
        lines += [f"| {r['system']} | {r['ms_pre_encoded']} | {r['ms_with_encoding']} |" for r in report["latency"]]
    (out / "report.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


#: Where ``bench_note_passages`` reads MTSamples when no corpus is given, and how.
MTSAMPLES = Path("../shared/data/mtsamples/mtsamples.csv")
MTSAMPLES_READER = ReaderOptions(format="csv", id_column="note_id", text_column="transcription", on_error="skip")


def bench_note_passages(out_dir: str | Path, specs: Sequence[str], *, corpus: Sequence[str | Path] | None = None,
                        reader: ReaderOptions | None = None, split: str = "test", max_queries: int | None = None,
                        seed: int = 0, threads: int | None = None, batch_size: int = 64,
                        max_tokens: int | None = None, log: Callable[[str], None] = no_log) -> dict:
    """``radsift bench --protocol note-passages``: held-out clinical notes as a passage test
    (:mod:`radsift.evaluation.protocols.note_passages`); writes ``report.json`` and ``report.md``.

    ``report.json`` holds ``results``: system -> candidate rule (``bm25-64`` primary, ``bm25-64+gold``,
    ``random-64``) -> ``"R@1"``, ``"R@5"`` (percent) and their 95% intervals.

    Args:
        corpus: The notes (default MTSamples at ``../shared/data/mtsamples/mtsamples.csv``).
        reader: How to read them (default: MTSamples' CSV columns ``note_id`` and ``transcription``).
        split: ``test`` (the held-out test notes) or ``dev`` (the development notes: tune on these).

    Raises:
        ConfigError: Unknown systems or split, or a missing corpus (before any work).
    """
    paths = [Path(p) for p in (corpus or [MTSAMPLES])]
    for p in paths:
        if not p.exists():
            raise ConfigError(f"--corpus {p}: not found (the note-passages protocol reads clinical notes; by "
                              f"default MTSamples at {MTSAMPLES})")
    if split not in note_passages.SPLITS:
        raise ConfigError(f"unknown split {split!r}; known: {', '.join(note_passages.SPLITS)}")
    parsed = [parse_passage_system(s) for s in (specs or ["bm25", "dense"])]
    check_passage_specs(parsed)
    prepare_out_dir(out_dir)
    t0 = time.perf_counter()
    reports = list(read_corpus(paths, reader or MTSAMPLES_READER))
    data = note_passages.load_note_split(reports, split)
    log(f"read {len(reports)} notes: {data.notes[0]}")
    systems = build_passage_systems(parsed, threads=threads, batch_size=batch_size, max_tokens=max_tokens)
    result = note_passages.run_note_passages(data, systems, max_queries=max_queries, seed=seed, log=log)
    results = {name: figures_json(by_rule) for name, by_rule in result.data["systems"].items()}
    report: dict = {"protocol": note_passages.KEY, "results": results, **result.to_dict()}
    report["data"] = {k: v for k, v in result.data.items() if k not in ("per_query_hit1", "systems")}
    report["seconds"] = round(time.perf_counter() - t0, 1)
    report["settings"] = {"systems": [s.label for s in parsed], "split": split, "max_queries": max_queries,
                          "seed": seed, "threads": threads, "max_tokens": max_tokens,
                          "corpus": [str(p) for p in paths], "cpus": os.cpu_count()}
    _write_report(Path(out_dir), report, note_passages.TITLE, data.source, result)
    return report
