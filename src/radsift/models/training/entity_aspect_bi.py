"""Recipe ``entity-aspect``, bi-encoder (``model_type: bi``): CAPR's self-supervision on notes and MedQuAD.

The loss is the listwise in-batch cross-entropy (multiple-negatives ranking loss) over the batch's
positives and hard negatives (:class:`~radsift.models.training.entity_aspect_sampler.EASampler`).
The data: :mod:`radsift.models.training.entity_aspect_data`; the run:
:mod:`radsift.models.training.entity_aspect`.
"""

from __future__ import annotations

import random

from radsift.models.training.embedding import embed_columns_bucketed
from radsift.models.training.entity_aspect_data import EAData
from radsift.models.training.entity_aspect_sampler import EASampler
from radsift.models.training.loop import StepResult


class EntityAspectRecipe:
    """Bi-encoder steps: MNRL over (query, positive, hard negative) with in-batch negatives."""

    kind = "entity-aspect"
    #: Texts per forward pass of a step (length-bucketed; a GPU takes the whole step at once).
    chunk_size = 16

    def __init__(self, model, data: EAData, config, rng: random.Random) -> None:
        from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

        self.model, self.data, self.config = model, data, config
        self.sampler = EASampler(data, config.batch_size, rng, config.medquad_share, config.entity_hard_negatives)
        self.loss = MultipleNegativesRankingLoss(model, scale=config.scale)

    def columns(self, batch) -> list[list[str]]:
        p = self.data.passages
        return [[e.query for e, _ in batch], [p[e.positive].text for e, _ in batch], [p[n].text for _, n in batch]]

    def step(self, optimizer):
        self.model.train(True)
        self.model.max_seq_length = self.config.section_max_seq_length
        embs = embed_columns_bucketed(self.model, self.columns(self.sampler.next_batch()), self.chunk_size)
        return StepResult(self.kind, optimizer.step(self.loss.compute_loss_from_embeddings(embs, None)))
