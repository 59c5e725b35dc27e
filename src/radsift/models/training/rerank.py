"""Recipe ``rerank``: a cross-encoder trained on the weak labels with bi-encoder-mined negatives.

The cross-encoder is built from the base model's weights (the packaged MiniLM by default) with a
fresh one-logit classification head. Examples are (query phrasing, sentence) pairs: the
positives are weak-label entries, the negatives are the sentences the bi-encoder
(``config.bi_encoder``, ideally the model trained by a lexicon recipe) ranks highest for the
query although they do not carry its label, plus the closest opposite-negation sentences ("No
pneumothorax." for "pneumothorax"). Loss: binary cross-entropy on the logit
(``BinaryCrossEntropyLoss``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from radsift.labels.weak import Query, opposite, phrasings
from radsift.models.encoder import resolve_model_path
from radsift.models.training.batching import LexiconSampler
from radsift.models.training.data import LexiconData
from radsift.models.training.loop import StepResult
from radsift.ranking import top_k

if TYPE_CHECKING:
    import torch

#: Opposite-negation sentences added to each query's negatives, the closest first.
OPPOSITE_NEGATIVES = 3


def build_cross_encoder(base_model: str | None, max_length: int):
    """A one-logit CrossEncoder from a bi-encoder folder (fresh head), local files only."""
    from sentence_transformers import CrossEncoder

    path = resolve_model_path(base_model)
    return CrossEncoder(str(path), num_labels=1, max_length=max_length, device="cpu", local_files_only=True)


@dataclass
class MinedNegatives:
    """Per query phrasing, the sentence indices to draw negatives from (hardest first)."""

    table: dict[str, list[int]]

    def __len__(self) -> int:
        return len(self.table)


def mine_rerank_negatives(encode, data: LexiconData, depth: int) -> MinedNegatives:
    """For every phrasing of every training query, the top-``depth`` unmatched sentences by the bi-encoder.

    Args:
        encode: ``encode(texts) -> unit vectors`` of the mining bi-encoder.
        data: The weak-label training set.
        depth: Negatives kept per phrasing.
    """
    sentences = data.sentences
    s_vecs = encode([s.text for s in sentences])
    phrasing_of: list[tuple[str, Query]] = [(p, q) for q in data.by_query for p in phrasings(q)]
    p_vecs = encode([p for p, _ in phrasing_of])
    table: dict[str, list[int]] = {}
    opposite_sets = {q: set(data.by_query.get(opposite(q), ())) for q in data.by_query}
    for row in range(0, len(phrasing_of), 256):
        sims = p_vecs[row: row + 256] @ s_vecs.T
        for offset, scores in enumerate(sims):
            text, q = phrasing_of[row + offset]
            order, _ = top_k(scores, None)
            picked: list[int] = []
            opposites: list[int] = []
            for j in order:
                j = int(j)
                if sentences[j].matches(q):
                    continue
                if len(picked) < depth:
                    picked.append(j)
                if j in opposite_sets[q] and len(opposites) < OPPOSITE_NEGATIVES:
                    opposites.append(j)
                if len(picked) >= depth and (len(opposites) >= OPPOSITE_NEGATIVES
                                             or len(opposites) >= len(opposite_sets[q])):
                    break
            table[text] = picked + [j for j in opposites if j not in picked]
    return MinedNegatives(table)


class RerankRecipe:
    """Performs cross-encoder training steps on (query, sentence, 0/1) batches.

    Args:
        model: The CrossEncoder being trained.
        data: Weak-label training set.
        negatives: Mined negatives per phrasing.
        config: The training configuration (``batch_size``, ``rerank_negatives``).
        rng: Seeded random source.
    """

    kind = "rerank"

    def __init__(self, model, data: LexiconData, negatives: MinedNegatives, config, rng: random.Random) -> None:
        from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

        self.model = model
        self.data = data
        self.negatives = negatives
        self.config = config
        self.rng = rng
        # Partners off: a cross-encoder sees one pair at a time, there are no in-batch negatives.
        self.sampler = LexiconSampler(data, 1, config.query_sampling_alpha, rng, partners=False)
        self.loss = BinaryCrossEntropyLoss(model)

    def next_batch(self) -> tuple[list[str], list[str], list[float]]:
        """Queries, sentences and 0/1 labels: groups of one positive and ``rerank_negatives`` negatives."""
        queries, texts, labels = [], [], []
        k = self.config.rerank_negatives
        s = self.data.sentences
        while len(queries) < self.config.batch_size:
            example = self.sampler.example(self.rng.choices(self.sampler.queries, self.sampler.weights)[0])
            queries.append(example.anchor)
            texts.append(s[example.positive].text)
            labels.append(1.0)
            pool = self.negatives.table.get(example.anchor) or []
            for j in self.rng.sample(pool, min(k, len(pool))):
                queries.append(example.anchor)
                texts.append(s[j].text)
                labels.append(0.0)
        return queries, texts, labels

    def batch_loss(self, batch, train: bool = True) -> torch.Tensor:
        """BCE of one batch (``train=False``: dropout off)."""
        import torch

        queries, texts, labels = batch
        self.model.train(train)
        return self.loss([queries, texts], torch.tensor(labels))

    def step(self, optimizer) -> StepResult:
        return StepResult(self.kind, optimizer.step(self.batch_loss(self.next_batch())))
