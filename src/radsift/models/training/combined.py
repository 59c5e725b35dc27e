"""Recipe ``combined``: lexicon batches, findings-impression batches and, optionally, CAPR's
entity-aspect batches, alternating.

The weak labels teach negation and finding vocabulary at the sentence level; the
findings-impression pairs teach report-level paraphrase (what an impression summarises); the
entity-aspect examples (Grundmann et al., CAPR: an (entity, section aspect) query and its passage)
teach which section of a note speaks of an entity under an aspect. Alternating whole batches
(rather than summing losses per step) keeps each step as cheap as one recipe's step, and each batch
keeps its own sequence length (128 for sentences, 256 for sections). ``entity_share`` of the steps
are entity-aspect steps (0 by default: none) and ``pair_share`` of the others are pair steps, each
spread evenly over the run.
"""

from __future__ import annotations

import random

from radsift.models.training.data import TrainingData
from radsift.models.training.entity_aspect_bi import EntityAspectRecipe
from radsift.models.training.findings_impression import FindingsImpressionRecipe
from radsift.models.training.lexicon import LexiconRecipe
from radsift.models.training.loop import StepResult


def is_pair_step(i: int, share: float) -> bool:
    """Whether step ``i`` (from 0) is a findings-impression step, for a ``share`` spread evenly."""
    return int((i + 1) * share) > int(i * share)


class CombinedRecipe:
    """Alternates :class:`LexiconRecipe`, :class:`FindingsImpressionRecipe` and (given ``entity``
    data and ``config.entity_share`` > 0) :class:`~radsift.models.training.entity_aspect_bi.EntityAspectRecipe`
    steps on one model."""

    def __init__(self, model, data: TrainingData, config, rng: random.Random, entity=None) -> None:
        self.config = config
        self.lexicon = LexiconRecipe(model, data.lexicon, config, rng)
        self.pairs = FindingsImpressionRecipe(model, data.pairs, config, rng)
        self.entity = None
        if entity is not None and config.entity_share > 0:
            self.entity = EntityAspectRecipe(model, entity, config, rng)
        self.i = 0  # every step
        self.j = 0  # steps that are not entity-aspect steps (the lexicon / pair schedule)

    def next_recipe(self):
        """The recipe of the next step (and advance the schedule)."""
        i = self.i
        self.i += 1
        if self.entity is not None and is_pair_step(i, self.config.entity_share):
            return self.entity
        j = self.j
        self.j += 1
        return self.pairs if is_pair_step(j, self.config.pair_share) else self.lexicon

    def step(self, optimizer) -> StepResult:
        return self.next_recipe().step(optimizer)
