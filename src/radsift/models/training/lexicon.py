"""Recipes ``lexicon-triplet`` and ``lexicon-mnrl`` (Shi et al., NAACL 2022).

Training examples are (query, matched sentence, unmatched sentence) triplets built from the
weak labels: the query is a phrasing of a (yes/no, finding) label, the matched sentence
carries that label, the unmatched one does not. Negatives are chosen per anchor

* at random within the batch (RS, ``negatives: random``), or
* as the hardest, i.e. the unmatched sentence most similar to the anchor under the current
  model, found by a no-grad forward pass before the step (HS, ``negatives: hardest``);
* with mega-batching (MB, ``mega_batch_size`` > ``batch_size``), the candidates are the
  sentences of a mega-batch of several batches, which makes the hardest negative harder.

Every batch holds the opposite-negation partner of its queries (see
:class:`~radsift.models.training.batching.LexiconSampler`), so "No pneumothorax." is among the
candidates for "pneumothorax", and under HS it is usually the one picked: that is what teaches
negation.

Losses (``config.loss``, :mod:`.lexicon_losses`): the paper's cosine-distance ``TripletLoss`` (margin 0.5); the modern
form, the multiple-negatives ranking loss (optionally cached, GradCache) over the in-batch
sentences plus the mined hard negative, which with ``symmetric`` also ranks the queries for each
sentence and so pushes "No pneumothorax." closer to "no pneumothorax" than to "pneumothorax";
or ``mnrl+triplet``, the sum of in-batch ranking and the triplet margin (the default recipe's).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from radsift.labels.weak import opposite, phrasings, query_text
from radsift.models.training.batching import LexiconExample, LexiconSampler, mine_negatives
from radsift.models.training.data import LexiconData
from radsift.models.training.embedding import embed_columns_bucketed
from radsift.models.training.loop import StepResult

if TYPE_CHECKING:
    import torch


@dataclass
class MinedBatch:
    """A batch of examples with one mined negative sentence index per example."""

    examples: list[LexiconExample]
    negatives: list[int]

    def texts(self, data: LexiconData) -> tuple[list[str], list[str], list[str]]:
        """Anchor, positive and negative texts."""
        s = data.sentences
        return ([e.anchor for e in self.examples], [e.positive_text(s) for e in self.examples],
                [s[n].text for n in self.negatives])

    def opposite_anchors(self) -> list[str]:
        """Each anchor's phrasing with the opposite polarity, same template ("evidence of X" -> "no evidence of X")."""
        out = []
        for e in self.examples:
            own = phrasings(e.query)
            if e.anchor not in own:
                # a lexicon description (LexiconSampler's description_share): "no " + it, or without its "no "
                out.append(e.anchor[3:] if e.anchor.startswith("no ") else f"no {e.anchor}")
                continue
            variant = own.index(e.anchor) if e.anchor in own else 0
            out.append(query_text(opposite(e.query), variant))
        return out


class LexiconRecipe:
    """Builds mined batches and performs lexicon training steps.

    Args:
        model: The SentenceTransformer being trained.
        data: Weak-label training examples.
        config: The training configuration.
        rng: Seeded random source.
    """

    kind = "lexicon"

    def __init__(self, model, data: LexiconData, config, rng: random.Random) -> None:
        self.model = model
        self.data = data
        self.config = config
        self.rng = rng
        self.sampler = LexiconSampler(data, config.batch_size, config.query_sampling_alpha, rng,
                                      name_swap=config.name_swap, description_share=config.description_share)
        self._loss: torch.nn.Module | None = None
        self.queue: list[MinedBatch] = []
        # When the mined negative joins the in-batch candidates (MNRL's negative column) it must be a
        # true negative for every anchor of the batch; a triplet negative only for its own anchor.
        self.batch_wide = config.loss in ("mnrl", "cached-mnrl")

    @property
    def loss(self) -> torch.nn.Module:
        """The loss module (built on first use: mining alone does not need sentence-transformers' losses)."""
        if self._loss is None:
            # Its modules subclass torch's: imported here, so that the package imports without torch.
            from radsift.models.training.lexicon_losses import make_lexicon_loss

            self._loss = make_lexicon_loss(self.model, self.config)
        return self._loss

    # ----------------------------------------------------------------- mining
    def encode(self, texts: list[str]) -> np.ndarray:
        """No-grad unit vectors under the current weights (the model is left in eval mode)."""
        self.model.max_seq_length = self.config.max_seq_length
        return self.model.encode(texts, batch_size=64, convert_to_numpy=True, normalize_embeddings=True,
                                 show_progress_bar=False)

    def allowed(self, batch: list[LexiconExample], pool: list[int]) -> np.ndarray:
        """``(len(batch), len(pool))``: whether pool sentence j may be the negative of example i."""
        s = self.data.sentences
        out = np.zeros((len(batch), len(pool)), dtype=bool)
        positives = {e.positive for e in batch}
        for j, c in enumerate(pool):
            cand = s[c]
            if self.batch_wide:
                ok = c not in positives and not any(e.carried_by(cand) for e in batch)
                out[:, j] = ok
            else:
                for i, e in enumerate(batch):
                    # A swapped example's own unswapped sentence is a true negative: "No pneumothorax."
                    # for "no sarcoidosis" is the lesson of name swapping.
                    out[i, j] = (c != e.positive or e.text is not None) and not e.carried_by(cand)
        return out

    def fallback_negative(self, batch: list[LexiconExample], example: LexiconExample) -> int:
        """A random true negative from the whole training set (when the mega-batch has none)."""
        s = self.data.sentences
        targets = batch if self.batch_wide else [example]
        positives = {e.positive for e in batch}
        for _ in range(200):
            c = self.rng.randrange(len(s))
            if c not in positives and not any(e.carried_by(s[c]) for e in targets):
                return c
        for c in range(len(s)):  # exhaustive search for tiny corpora
            if c != example.positive and not example.carried_by(s[c]):
                return c
        return example.positive  # pragma: no cover - a corpus with a single sentence

    def mine(self, batches: list[list[LexiconExample]], mode: str | None = None) -> list[MinedBatch]:
        """Choose the negatives of ``batches`` (one mega-batch) with ``mode`` (default: the config's)."""
        mode = mode or self.config.negatives
        pool = sorted({e.positive for b in batches for e in b})
        anchors = [e.anchor for b in batches for e in b]
        if mode == "hardest":
            vecs = self.encode(anchors + [self.data.sentences[c].text for c in pool])
            a_vecs, p_vecs = vecs[: len(anchors)], vecs[len(anchors):]
        else:
            a_vecs = np.zeros((len(anchors), 1), dtype=np.float32)
            p_vecs = np.zeros((len(pool), 1), dtype=np.float32)
        out, offset = [], 0
        for batch in batches:
            picks = mine_negatives(a_vecs[offset: offset + len(batch)], p_vecs, self.allowed(batch, pool), mode,
                                   self.rng)
            offset += len(batch)
            negatives = [pool[p] if p is not None else self.fallback_negative(batch, e) for p, e in zip(picks, batch)]
            out.append(MinedBatch(batch, negatives))
        return out

    def next_batch(self) -> MinedBatch:
        """The next mined batch (mines a new mega-batch when the queue is empty)."""
        if not self.queue:
            n = self.config.mega_batch_size // self.config.batch_size
            self.queue = self.mine([self.sampler.next_batch() for _ in range(n)])
        return self.queue.pop(0)

    # ----------------------------------------------------------------- training
    def batch_loss(self, batch: MinedBatch, train: bool = True) -> torch.Tensor:
        """The loss of one mined batch (``train=False``: dropout off, e.g. to measure progress)."""
        model = self.model
        model.train(train)
        model.max_seq_length = self.config.max_seq_length
        columns = list(batch.texts(self.data))
        if self.config.loss == "cached-mnrl":  # GradCache does its own mini-batched forward passes
            return self.loss([model.preprocess(texts) for texts in columns], None)
        if self.config.query_margin > 0:
            columns.append(batch.opposite_anchors())
        return self.loss.compute_loss_from_embeddings(embed_columns_bucketed(model, columns), None)

    def step(self, optimizer) -> StepResult:
        """One optimisation step on the next mined batch."""
        return StepResult(self.kind, optimizer.step(self.batch_loss(self.next_batch())))
