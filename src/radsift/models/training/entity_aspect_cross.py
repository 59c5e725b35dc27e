"""Recipe ``entity-aspect``, cross-encoder (``model_type: cross``): the bi-encoder's examples,
cross-entropy over the positive, the hard negative and ``rerank_negatives`` other passages of the batch."""

from __future__ import annotations

import random

from radsift.models.training.entity_aspect_bi import EntityAspectRecipe
from radsift.models.training.entity_aspect_data import EAData
from radsift.models.training.entity_aspect_sampler import EASampler
from radsift.models.training.loop import StepResult


class CrossRecipe(EntityAspectRecipe):
    """Cross-encoder steps: listwise in-batch cross-entropy, as CAPR trains all three models.

    Each query's group is its positive, its hard negative and ``rerank_negatives`` passages of other
    examples in the batch (their positives or hard negatives; the sampler keeps them irrelevant to
    it): the library's cross-encoder multiple-negatives ranking loss over the group's scores.
    """

    kind = "entity-aspect-cross"

    def __init__(self, model, data: EAData, config, rng: random.Random) -> None:
        import torch
        from sentence_transformers.cross_encoder.losses import MultipleNegativesRankingLoss

        self.model, self.data, self.config, self.rng = model, data, config, rng
        self.sampler = EASampler(data, config.batch_size, rng, config.medquad_share, config.entity_hard_negatives)
        # The loss draws its in-batch negatives with torch's generator: seed it for a reproducible run.
        torch.manual_seed(config.seed)
        self.loss = MultipleNegativesRankingLoss(model, num_negatives=config.rerank_negatives)

    def step(self, optimizer):
        import torch

        self.model.train(True)
        columns = self.columns(self.sampler.next_batch())
        return StepResult(self.kind, optimizer.step(self.loss(columns, torch.zeros(len(columns[0])))))
