"""Recipe ``findings-impression`` (RadSearch): a report's findings section paired with its own impression.

The findings are the query side, the impression the document side; the other impressions of
the batch are the negatives (multiple-negatives ranking loss, symmetric when
``config.symmetric``). Batches never hold two identical (normalized) impressions, so
boilerplate such as "No acute cardiopulmonary abnormality." never acts as its own negative
(:class:`~radsift.models.training.batching.PairBatchSampler`). Sections are truncated at
``section_max_seq_length`` tokens.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from radsift.models.training.batching import PairBatchSampler
from radsift.models.training.data import SectionPair
from radsift.models.training.embedding import embed_columns_bucketed
from radsift.models.training.loop import StepResult

if TYPE_CHECKING:
    import torch


def make_pair_loss(model, config) -> torch.nn.Module:
    """Multiple-negatives ranking loss over in-batch impressions."""
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    directions = ("query_to_doc", "doc_to_query") if config.symmetric else ("query_to_doc",)
    mode = "per_direction" if config.symmetric else "joint"
    return MultipleNegativesRankingLoss(model, scale=config.scale, directions=directions, partition_mode=mode)


class FindingsImpressionRecipe:
    """Performs findings-impression training steps.

    Args:
        model: The SentenceTransformer being trained.
        pairs: Training pairs.
        config: The training configuration.
        rng: Seeded random source.
    """

    kind = "pairs"

    def __init__(self, model, pairs: list[SectionPair], config, rng: random.Random) -> None:
        self.model = model
        self.config = config
        self.sampler = PairBatchSampler(pairs, config.pair_batch_size, rng)
        self.batches = iter(self.sampler)
        self.loss = make_pair_loss(model, config)

    def next_batch(self) -> list[SectionPair]:
        return next(self.batches)

    def batch_loss(self, batch: list[SectionPair], train: bool = True) -> torch.Tensor:
        """The loss of one batch of pairs (``train=False``: dropout off)."""
        model = self.model
        model.train(train)
        model.max_seq_length = self.config.section_max_seq_length
        columns = [[p.findings for p in batch], [p.impression for p in batch]]
        return self.loss.compute_loss_from_embeddings(embed_columns_bucketed(model, columns), None)

    def step(self, optimizer) -> StepResult:
        """One optimisation step on the next batch."""
        return StepResult(self.kind, optimizer.step(self.batch_loss(self.next_batch())))
