"""The loss modules of the lexicon recipes (:mod:`.lexicon`), named by ``config.loss``.

The paper's cosine-distance ``TripletLoss`` (margin 0.5); the multiple-negatives ranking loss
(optionally cached, GradCache) over the in-batch sentences plus the mined hard negative; or
``mnrl+triplet``, the sum of both (:class:`SumLoss`); each optionally with the query-margin term
(:class:`QueryMarginLoss`). They subclass torch's modules: importing this module imports torch.
"""

from __future__ import annotations

import torch


class QueryMarginLoss(torch.nn.Module):
    """Adds a sentence-anchored triplet term to a lexicon loss.

    For each example the matched sentence is the anchor, its own query phrasing the positive and
    the opposite-negation phrasing the negative (cosine distance, margin ``config.query_margin``).
    The query-anchored losses only ask that a query prefer its sentences; this term asks that a
    sentence prefer its own reading, which is the separation Shi et al. report in Table 3.
    """

    def __init__(self, base: torch.nn.Module, triplet: torch.nn.Module) -> None:
        super().__init__()
        self.base = base
        self.triplet = triplet

    def compute_loss_from_embeddings(self, embeddings: list[torch.Tensor], labels=None) -> torch.Tensor:
        anchors, positives, negatives, opposites = embeddings
        return (self.base.compute_loss_from_embeddings([anchors, positives, negatives], labels)
                + self.triplet.compute_loss_from_embeddings([positives, anchors, opposites], labels))


class SumLoss(torch.nn.Module):
    """MNRL over (anchor, positive) plus the triplet loss over (anchor, positive, mined negative).

    Both come from sentence-transformers and share one set of embeddings. The in-batch
    negatives of the MNRL term include the opposite-negation partners; the triplet term adds an
    explicit margin against the hardest unmatched sentence of the mega-batch.
    """

    def __init__(self, mnrl: torch.nn.Module, triplet: torch.nn.Module) -> None:
        super().__init__()
        self.mnrl = mnrl
        self.triplet = triplet

    def compute_loss_from_embeddings(self, embeddings: list[torch.Tensor], labels=None) -> torch.Tensor:
        anchors, positives, negatives = embeddings
        return (self.mnrl.compute_loss_from_embeddings([anchors, positives], labels)
                + self.triplet.compute_loss_from_embeddings([anchors, positives, negatives], labels))


def make_lexicon_loss(model, config) -> torch.nn.Module:
    """The sentence-transformers loss module named by ``config.loss`` (plus the query-margin term when set)."""
    base = _base_lexicon_loss(model, config)
    if config.query_margin > 0 and config.loss != "cached-mnrl":
        from sentence_transformers.sentence_transformer import losses

        triplet = losses.TripletLoss(model, distance_metric=losses.TripletDistanceMetric.COSINE,
                                     triplet_margin=config.query_margin)
        return QueryMarginLoss(base, triplet)
    return base


def _base_lexicon_loss(model, config) -> torch.nn.Module:
    from sentence_transformers.sentence_transformer import losses

    if config.loss in ("triplet", "mnrl+triplet"):
        triplet = losses.TripletLoss(model, distance_metric=losses.TripletDistanceMetric.COSINE,
                                     triplet_margin=config.margin)
        if config.loss == "triplet":
            return triplet
    directions = ("query_to_doc", "doc_to_query") if config.symmetric else ("query_to_doc",)
    mode = "per_direction" if config.symmetric else "joint"
    if config.loss == "cached-mnrl":
        return losses.CachedMultipleNegativesRankingLoss(model, scale=config.scale, directions=directions,
                                                         partition_mode=mode, mini_batch_size=config.mini_batch_size)
    mnrl = losses.MultipleNegativesRankingLoss(model, scale=config.scale, directions=directions, partition_mode=mode)
    return SumLoss(mnrl, triplet) if config.loss == "mnrl+triplet" else mnrl
