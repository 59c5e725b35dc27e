"""Recipe ``combined``: lexicon batches and findings-impression batches, alternating.

The weak labels teach negation and finding vocabulary at the sentence level; the
findings-impression pairs teach report-level paraphrase (what an impression summarises).
Alternating whole batches (rather than summing two losses per step) keeps each step as cheap as
one recipe's step, and each batch keeps its own sequence length (128 for sentences, 256 for
sections). ``pair_share`` of the steps are pair steps, spread evenly over the run.
"""

from __future__ import annotations

import random

from radsift.models.training.data import TrainingData
from radsift.models.training.findings_impression import FindingsImpressionRecipe
from radsift.models.training.lexicon import LexiconRecipe
from radsift.models.training.loop import StepResult


def is_pair_step(i: int, share: float) -> bool:
    """Whether step ``i`` (from 0) is a findings-impression step, for a ``share`` spread evenly."""
    return int((i + 1) * share) > int(i * share)


class CombinedRecipe:
    """Alternates :class:`LexiconRecipe` and :class:`FindingsImpressionRecipe` steps on one model."""

    def __init__(self, model, data: TrainingData, config, rng: random.Random) -> None:
        self.config = config
        self.lexicon = LexiconRecipe(model, data.lexicon, config, rng)
        self.pairs = FindingsImpressionRecipe(model, data.pairs, config, rng)
        self.i = 0

    def step(self, optimizer) -> StepResult:
        recipe = self.pairs if is_pair_step(self.i, self.config.pair_share) else self.lexicon
        self.i += 1
        return recipe.step(optimizer)
