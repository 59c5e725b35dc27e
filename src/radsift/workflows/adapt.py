"""``radsift index build --adapt``: tune the default recipe on the corpus, then index with the tuned model.

A site's own reports turn the general model into a domain-tuned one without labels (the weak
labels of the lexicon and the findings->impression pairs: ``radsift train``'s ``combined``
recipe). With ``--adapt`` one command does both: it reads the corpus once, says how long the
work will take before it starts, trains a short run of the default recipe
(:data:`DEFAULT_ADAPT_STEPS` steps, chosen from the table in ``docs/measurements.md``,
"Adapting in the main path"), saves the model inside the index folder (``INDEX/models/``,
outside the generations, so ``index add`` and the server keep finding it) and builds the index
with it. A corpus too small to train on is indexed with the general model, and the message
says how many reports adapting needs.

It lives in ``workflows/`` because it trains a model and builds an index: the index never trains
(a contract of ``pyproject.toml``), so the workflow that does both sits above the two. The rest of
``radsift index build`` (the backend's graphs or Milvus push, ``--poly`` codes) is the index's own
(:func:`radsift.index.build_index`), checked here before the long training starts.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path
from typing import Callable, Iterable

from radsift.errors import ConfigError, CorpusError
from radsift.index import build_index
from radsift.index.builder import BuildOptions
from radsift.index.derived import check_options
from radsift.index.format import CURRENT
from radsift.models.encoder import Encoder, free_cores
from radsift.models.training.config import TrainConfig
from radsift.models.training.runner import train
from radsift.records import Report
from radsift.text import report_sentences

#: Steps of the quick default recipe (see docs/measurements.md, "Adapting in the main path").
DEFAULT_ADAPT_STEPS = 200
#: Fewer reports than this are not adapted on (the weak labels need enough findings and pairs).
MIN_ADAPT_REPORTS = 200
#: Seconds per step of the default recipe on the development machine (2 cores, idle: 50 steps in
#: 65 s, 100 in 123 s), the seconds it took there to encode :data:`_PROBE` once (0.19 s), and its
#: indexing speed (Open-i: 22,000 sentences in 70 s): the estimate scales them by this machine's
#: time for the probe.
_REF_STEP_S = 1.25
_REF_PROBE_S = 0.19
_REF_SENTENCES_PER_S = 314.0
_PROBE = ["No focal consolidation, pleural effusion or pneumothorax is seen in either lung."] * 64


def adapted_model_dir(index_dir: Path) -> Path:
    """A new folder for an adapted model, inside the index folder."""
    return Path(index_dir) / "models" / time.strftime("adapted-%Y%m%d-%H%M%S")


def estimate(reports: list[Report], steps: int, encoder) -> dict[str, float]:
    """Seconds the training and the indexing will take here: reference timings scaled by a probe."""
    encoder.encode(_PROBE[:8], batch_size=8)  # warm up: the first call after loading is slower
    t = time.perf_counter()
    encoder.encode(_PROBE, batch_size=64)
    ratio = max(0.25, (time.perf_counter() - t) / _REF_PROBE_S)
    n_sentences = sum(len(report_sentences(r)) for r in reports)
    return {"train_s": steps * _REF_STEP_S * ratio, "index_s": n_sentences / _REF_SENTENCES_PER_S * ratio,
            "sentences": n_sentences}


def build_adapted_index(index_dir: str | Path, reports: Iterable[Report], *, steps: int = DEFAULT_ADAPT_STEPS,
                        seed: int = 0, base_model: str | Path | None = None, threads: int | None = None, batch_size: int = 64,
                        overwrite: bool = False, lexicon: str | Path | None = None,
                        say: Callable[[str], None] = print, progress: bool = True, encoder_kind: str = "torch",
                        encoder_cache: str | Path | None = None, backend: str | None = None,
                        milvus_uri: str | None = None, poly: str | Path | None = None, workers: int = 1,
                        ray: str | None = None):
    """Train the default recipe on ``reports`` for ``steps`` steps, then build the index with the model.

    Args:
        index_dir: The index directory (created if missing).
        reports: The corpus (read once, kept in memory for both passes).
        steps: Training steps (>= 1).
        seed: The training's seed (:attr:`radsift.models.training.config.TrainConfig.seed`).
        base_model: The model to adapt (None = the packaged all-MiniLM-L6-v2).
        say: Receives one-line messages (the estimate, a too-small corpus, where the model went).
        encoder_kind, encoder_cache: How the reports are encoded (see :func:`radsift.index.build_index`).
        backend, milvus_uri, poly: What to derive from the index once built (see :func:`radsift.index.build_index`;
            checked before training); ``say`` is told those steps too.
        workers, ray: How the index is written once the model is tuned (see :func:`radsift.index.build_index`;
            checked before training). Training itself runs in this process.

    Returns:
        ``(BuildSummary, model folder or None)``: None when the corpus was too small and the general
        model indexed it.

    Raises:
        ConfigError, CorpusError, IndexStoreError: as ``radsift train`` and ``radsift index build``.
    """
    check_options(index_dir, backend, milvus_uri, poly)
    BuildOptions(encoder_kind=encoder_kind, workers=workers, ray=ray)  # a wrong --workers / --ray fails before training
    if int(steps) < 1:
        raise ConfigError(f"--adapt-steps: must be a positive number of steps, not {steps}")
    index_dir = Path(index_dir)
    if (index_dir / CURRENT).exists() and not overwrite:  # fail before the long work
        raise ConfigError(f"{index_dir} already holds an index: use --overwrite to rebuild it with --adapt")
    reports = list(reports)
    derive = {"backend": backend, "milvus_uri": milvus_uri, "poly": poly, "say": say, "workers": workers, "ray": ray}
    general = Encoder.load(base_model, threads=threads)
    with_text = sum(1 for r in reports if any(t.strip() for t in r.sections.values()))
    if with_text < MIN_ADAPT_REPORTS:
        say(f"--adapt needs at least {MIN_ADAPT_REPORTS} reports with text to train on; this corpus has "
            f"{with_text}: indexing with the general model ({general.name}) instead")
        return build_index(index_dir, reports, encoder=general if encoder_kind == "torch" else None,
                           model=base_model, threads=threads, batch_size=batch_size, progress=progress,
                           overwrite=overwrite, lexicon=lexicon, encoder_kind=encoder_kind,
                           encoder_cache=encoder_cache, **derive), None
    guess = estimate(reports, steps, general)
    # Threads the machine has free now (all cores when idle): torch's default of every core collapses when
    # other jobs share them (issue 33: 200 steps in 3,385 s on a busy 2-core machine against 249 s idle). The
    # thread count splits torch's sums differently, so the same seed on 1 and on 2 threads trains two different
    # models: it is said, and kept in the model's radsift_training.json, so that --threads reproduces one.
    train_threads = int(threads or free_cores())
    say(f"adapting {general.name} to {len(reports):,} reports: about {_minutes(guess['train_s'])} of training "
        f"({steps} steps, seed {int(seed)}, {train_threads} thread{'s' if train_threads != 1 else ''}), then about "
        f"{_minutes(guess['index_s'])} to index {guess['sentences']:,} sentences")
    config = TrainConfig(base_model=None if base_model is None else str(base_model), max_steps=int(steps),
                         seed=int(seed), evaluate=False, threads=train_threads, time_limit_minutes=None)
    out = adapted_model_dir(index_dir)
    labeler = None
    if lexicon is not None:
        from radsift.labels import Labeler  # loads medspaCy (seconds): only for a lexicon of the caller's

        labeler = Labeler(lexicon)
    try:
        result = train(reports, config, out, labeler=labeler, progress=progress, log=_TimeLeft(say))
    except CorpusError as exc:
        _remove_empty(out)
        say(f"--adapt: nothing to train on ({exc}): indexing with the general model ({general.name}) instead")
        return build_index(index_dir, reports, encoder=general if encoder_kind == "torch" else None,
                           model=base_model, threads=threads, batch_size=batch_size, progress=progress,
                           overwrite=overwrite, lexicon=lexicon, encoder_kind=encoder_kind,
                           encoder_cache=encoder_cache, **derive), None
    say(f"adapted model: {out} ({result.training.get('steps', steps)} steps, {result.seconds:.0f} s)")
    summary = build_index(index_dir, reports, model=out, threads=threads, batch_size=batch_size, progress=progress,
                          overwrite=overwrite, lexicon=lexicon, encoder_kind=encoder_kind,
                          encoder_cache=encoder_cache, **derive)
    return summary, out


_STEP_LINE = re.compile(r"^step (\d+)/(\d+) \((\d+(?:\.\d+)?) s\)")


class _TimeLeft:
    """Told the training loop's line at each tenth of the run, says the training time left as measured
    on this machine now: at the first tenth, then whenever it moves by more than a quarter from what was
    last said (the estimate printed before training is a probe's: the load can change after it)."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self.say = say
        self.said: tuple[float, float] | None = None  # (seconds elapsed, seconds left) when last said

    def __call__(self, line: str) -> None:
        match = _STEP_LINE.match(line)
        if not match:
            return
        done, total, elapsed = int(match[1]), int(match[2]), float(match[3])
        if done >= total or done == 0:
            return
        left = elapsed / done * (total - done)
        if self.said is not None:
            expected = max(0.0, self.said[1] - (elapsed - self.said[0]))
            if abs(left - expected) <= 0.25 * max(expected, 30.0):
                return
        self.said = (elapsed, left)
        self.say(f"training: {done}/{total} steps in {elapsed:.0f} s: about {_minutes(left)} left")


def _remove_empty(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


__all__ = ["DEFAULT_ADAPT_STEPS", "MIN_ADAPT_REPORTS", "build_adapted_index", "estimate"]
