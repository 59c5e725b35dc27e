"""What a training run produced (:class:`TrainResult`) and the run record its model card is written from."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from radsift.models.encoder import model_display_name


@dataclass
class TrainResult:
    """What a training run produced.

    Attributes:
        out: The model folder.
        config: The configuration used.
        data: Data statistics.
        training: Loop statistics (steps, seconds, loss curve, early stop).
        evaluation: System -> held-out figures (empty when not evaluated).
        seconds: Wall time of the whole run.
    """

    out: Path
    config: Any
    data: dict[str, Any]
    training: dict[str, Any]
    evaluation: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0


def run_info(config, stats, training, evaluation, base_path, kind, start) -> dict[str, Any]:
    """The record of a run (:func:`radsift.models.training.modelcard.write_model_card`'s ``info``)."""
    return {
        "kind": kind,
        "recipe": config.recipe,
        "base_model": model_display_name(base_path),
        "config": config.to_dict(),
        "data": stats,
        "training": training,
        "evaluation": evaluation,
        "seconds": round(time.monotonic() - start, 1),
    }
