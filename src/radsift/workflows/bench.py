"""``radsift bench``: the protocols of Shi et al. and RadSearch over a corpus
(:func:`radsift.evaluation.bench.bench`), or CAPR's answer passages on MedQuAD
(:func:`radsift.evaluation.bench_passages.bench_passages`) or on held-out clinical notes
(:func:`radsift.evaluation.bench_passages.bench_note_passages`), which run alone: their own
data and systems. Which one runs, and that the passage protocol is not mixed with the others, is
decided here for the command line and Python alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from radsift.errors import ConfigError
from radsift.evaluation.bench import BenchConfig, BenchResult, bench
from radsift.evaluation.bench_passages import bench_note_passages, bench_passages

#: The systems of a run that names none.
DEFAULT_SYSTEMS = ("bm25", "dense")


@dataclass(frozen=True)
class PassageOptions:
    """The settings of ``--protocol passages`` alone (the rest come from the :class:`BenchConfig`).

    Attributes:
        medquad: The MedQuAD folder (None = ``../shared/data/medquad``).
        cdv: The CDV test split (None = ``../shared/data/medquad-cdv-test``).
        split: ``test`` (the CDV test split, or the held-out test notes of ``note-passages``; never tune
            on it) or ``dev`` (the development split, or the development notes).
        latency: Also time scoring 2,048 passages for one query per system.
        max_tokens: Word pieces of a passage the models read (None = each model's own).
    """

    medquad: Path | None = None
    cdv: Path | None = None
    split: str = "test"
    latency: bool = False
    max_tokens: int | None = None


@dataclass
class BenchRun:
    """What a run wrote: the protocols' result and files, or the passage protocol's report."""

    result: BenchResult | None = None
    paths: dict[str, Path] = field(default_factory=dict)
    passages: dict | None = None  # report.json of --protocol passages


def run_benchmark(config: BenchConfig, out: str | Path, *, passages: PassageOptions = PassageOptions(),
                  log: Callable[[str], None] | None = None, plots: bool = True) -> BenchRun:
    """Run ``config``'s protocols into ``out``: ``passages`` alone when it is among them.

    Args:
        config: The systems, corpus, protocols, seed, threads ... (``--protocol passages`` reads its
            systems, ``max_queries``, ``seed``, ``threads`` and ``batch_size``).
        out: The folder of ``report.md``, ``report.json`` (and the plots).
        passages: The settings of the passage protocol.
        log: Receives one-line progress messages.
        plots: Draw the PNG plots (not the passage protocol's).

    Raises:
        ConfigError: ``passages`` or ``note-passages`` named with other protocols; as the protocols themselves.
    """
    protocols = config.protocols
    if protocols and "note-passages" in protocols:
        if len(set(protocols)) > 1:
            raise ConfigError("--protocol note-passages runs alone (its own data and systems): run the others "
                              "separately")
        report = bench_note_passages(out, list(config.systems) or list(DEFAULT_SYSTEMS),
                                     corpus=list(config.corpus) or None,
                                     reader=config.reader if config.corpus else None, split=passages.split,
                                     max_queries=config.max_queries, seed=config.seed, threads=config.threads,
                                     batch_size=config.batch_size, max_tokens=passages.max_tokens,
                                     **({"log": log} if log is not None else {}))
        return BenchRun(passages=report)
    if protocols and "passages" in protocols:
        if len(set(protocols)) > 1:
            raise ConfigError("--protocol passages runs alone (its own data and systems): run the others separately")
        report = bench_passages(out, list(config.systems) or list(DEFAULT_SYSTEMS), medquad_dir=passages.medquad,
                                cdv_dir=passages.cdv, split=passages.split, max_queries=config.max_queries,
                                seed=config.seed, threads=config.threads, batch_size=config.batch_size,
                                with_latency=passages.latency, max_tokens=passages.max_tokens,
                                **({"log": log} if log is not None else {}))
        return BenchRun(passages=report)
    result, paths = bench(config, out, log=log, plots=plots)
    return BenchRun(result=result, paths=paths)


__all__ = ["DEFAULT_SYSTEMS", "BenchRun", "PassageOptions", "run_benchmark"]
