"""The optimisation loop shared by every recipe: AdamW, linear warm-up and decay, clipping.

Why not ``SentenceTransformerTrainer``: the lexicon recipes rebuild their batches between
steps (mega-batch mining needs a no-grad forward pass of the *current* model, and the combined
recipe alternates two kinds of batches with different sequence lengths). A dataset-driven
trainer would need a custom sampler, collator and loss wrapper for each; a plain loop that
calls the library's loss modules directly is shorter, and on two CPU cores it avoids the
Trainer's dataset and accelerate overhead.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from radsift.progress import progress_bar

if TYPE_CHECKING:
    import torch


@dataclass
class StepResult:
    """What one training step reports: its kind (``lexicon``, ``pairs`` ...) and loss."""

    kind: str
    loss: float


@dataclass
class LoopStats:
    """The course of a training run, for the model card."""

    steps: int = 0
    planned_steps: int = 0
    seconds: float = 0.0
    stopped_early: bool = False
    losses: dict[str, list[float]] = field(default_factory=dict)

    def curve(self, points: int = 10) -> dict[str, list[float]]:
        """Mean loss of each kind over ``points`` equal stretches of the run."""
        out = {}
        for kind, values in self.losses.items():
            if not values:
                continue
            n = min(points, len(values))
            size = math.ceil(len(values) / n)
            out[kind] = [round(sum(chunk) / len(chunk), 4)
                         for chunk in (values[i:i + size] for i in range(0, len(values), size))]
        return out

    def to_dict(self) -> dict:
        return {
            "steps": self.steps,
            "planned_steps": self.planned_steps,
            "seconds": round(self.seconds, 1),
            "stopped_early": self.stopped_early,
            "loss_curve": self.curve(),
        }


class Optimizer:
    """AdamW with linear warm-up then linear decay to 0, and gradient-norm clipping.

    Args:
        parameters: The trainable parameters.
        config: A :class:`~radsift.models.training.config.TrainConfig` (learning_rate,
            weight_decay, warmup_ratio, max_grad_norm, max_steps).
    """

    def __init__(self, parameters, config) -> None:
        import torch  # heavy: imported when training starts, so the package imports without it
        from transformers import get_linear_schedule_with_warmup

        self.parameters = [p for p in parameters if p.requires_grad]
        try:  # the fused kernel is ~100x faster than the per-tensor loop on CPU
            self.optimizer = torch.optim.AdamW(self.parameters, lr=config.learning_rate,
                                               weight_decay=config.weight_decay, fused=True)
        except (RuntimeError, TypeError):  # pragma: no cover - older torch builds
            self.optimizer = torch.optim.AdamW(self.parameters, lr=config.learning_rate,
                                               weight_decay=config.weight_decay)
        warmup = int(round(config.warmup_ratio * config.max_steps))
        self.scheduler = get_linear_schedule_with_warmup(self.optimizer, warmup, config.max_steps)
        self.max_grad_norm = config.max_grad_norm

    def step(self, loss: torch.Tensor) -> float:
        """Back-propagate ``loss``, clip, update, advance the schedule; returns the loss value."""
        import torch

        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.parameters, self.max_grad_norm)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return float(loss.detach())


def run_loop(
    step: Callable[[int], StepResult],
    config,
    *,
    desc: str = "training",
    progress: bool = True,
    log: Callable[[str], None] | None = None,
) -> LoopStats:
    """Call ``step(i)`` for ``config.max_steps`` steps (or until the time limit) with a progress bar.

    Args:
        step: Performs step ``i`` (forward, backward, update) and reports its loss.
        config: The training configuration (max_steps, time_limit_minutes).
        desc: Progress-bar label.
        progress: Show the progress bar.
        log: Receives a line with the mean recent loss at each tenth of the run (for logs
            and terminals without a progress bar).
    """
    stats = LoopStats(planned_steps=config.max_steps)
    limit = config.time_limit_minutes * 60 if config.time_limit_minutes else None
    start = time.monotonic()
    with progress_bar(disable=None if progress else True) as bar:
        task = bar.add_task(desc, total=config.max_steps)
        for i in range(config.max_steps):
            result = step(i)
            stats.losses.setdefault(result.kind, []).append(result.loss)
            stats.steps = i + 1
            bar.update(task, advance=1, description=f"{desc} ({result.kind} loss {result.loss:.3f})")
            if log is not None and (i + 1) % max(1, config.max_steps // 10) == 0:
                recent = ", ".join(f"{k} {sum(v[-10:]) / len(v[-10:]):.3f}" for k, v in stats.losses.items())
                log(f"step {i + 1}/{config.max_steps} ({time.monotonic() - start:.0f} s): loss {recent}")
            if limit is not None and time.monotonic() - start > limit and i + 1 < config.max_steps:
                stats.stopped_early = True
                break
    stats.seconds = time.monotonic() - start
    return stats
