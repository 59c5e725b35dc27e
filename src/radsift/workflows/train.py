"""``radsift train``: a recipe trained on a corpus, with the held-out evaluator wired in.

Training never imports evaluation (a contract in ``pyproject.toml``): the trainer takes its
evaluator from the caller. This workflow is that caller for the command line, so that Python and
``radsift train`` train and evaluate the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable

from radsift.evaluation.heldout import HeldOutEvaluator
from radsift.models.training import TrainConfig, TrainResult, train
from radsift.records import Report


def train_model(reports: Iterable[Report], config: TrainConfig, out: str | Path, *, overwrite: bool = False,
                log: Callable[[str], None] | None = None) -> TrainResult:
    """Train ``config``'s recipe on ``reports`` into ``out``; with ``config.evaluate``, the held-out reports
    are scored at the end (:class:`~radsift.evaluation.heldout.HeldOutEvaluator`: figures in the model card).

    Args:
        reports: The corpus (the held-out reports are set aside by the trainer).
        config: From :func:`radsift.models.training.load_config`.
        out: The model folder to write.
        overwrite: Replace a non-empty ``out``.
        log: Receives one-line progress messages.

    Raises:
        ConfigError: Bad configuration or output folder.
        CorpusError: Nothing to train on.
    """
    return train(reports, config, out, overwrite=overwrite, evaluator=HeldOutEvaluator(), log=log)


__all__ = ["train_model"]
