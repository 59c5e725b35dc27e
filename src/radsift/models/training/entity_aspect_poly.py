"""Recipe ``entity-aspect``, poly-encoder (``model_type: poly``): the bi-encoder's examples, in-batch
cross-entropy on the poly-encoder's scores."""

from __future__ import annotations

import random

from radsift.models.poly_encoder import PolyHead
from radsift.models.training.entity_aspect_bi import EntityAspectRecipe
from radsift.models.training.entity_aspect_data import EAData
from radsift.models.training.entity_aspect_sampler import EASampler
from radsift.models.training.loop import StepResult


class PolyRecipe(EntityAspectRecipe):
    """Poly-encoder steps: cross-entropy of each query over the batch's positives and hard negatives."""

    kind = "entity-aspect-poly"

    def __init__(self, poly, data: EAData, config, rng: random.Random) -> None:
        self.poly, self.model, self.data, self.config = poly, poly.model, data, config
        self.sampler = EASampler(data, config.batch_size, rng, config.medquad_share, config.entity_hard_negatives)

    def step(self, optimizer):
        import torch

        self.model.train(True)
        self.model.max_seq_length = self.config.section_max_seq_length
        queries, positives, negatives = self.columns(self.sampler.next_batch())
        q = self.poly.forward_queries(queries)
        codes = self.poly.forward_passages(positives + negatives)
        scores = PolyHead.scores(q, codes) * self.config.scale
        loss = torch.nn.functional.cross_entropy(scores, torch.arange(len(queries), device=scores.device))
        return StepResult(self.kind, optimizer.step(loss))
