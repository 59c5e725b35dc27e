"""Batch construction: the lexicon sampler with opposite-negation partners, negative mining,
and the findings-impression sampler without duplicate impressions.

Why custom samplers rather than sentence-transformers' ``NoDuplicatesBatchSampler``: that
sampler compares raw column strings of a Hugging Face ``Dataset``; here "duplicate" means a
*normalized* impression ("1. No acute disease." is "No acute disease"), and for weak-label
examples it means "this sentence carries the other example's query" (a false negative), which
no string comparison sees. Both samplers keep its semantics otherwise: greedy filling, items
that clash wait for a later batch.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np

from radsift.labels.weak import YES, Query, phrasings, query_text
from radsift.models.training.data import LexiconData, SectionPair
from radsift.models.training.surrogates import mentions_term, swap_span


@dataclass(frozen=True)
class LexiconExample:
    """One (query, matched sentence) training example.

    Attributes:
        query: The weak-label query.
        anchor: The phrasing of the query used as the anchor text.
        positive: Index of the matched sentence in :attr:`LexiconData.sentences`.
        text: The matched sentence with the finding's name swapped for a surrogate (then
            :attr:`query` names the surrogate), or None for the sentence as written.
    """

    query: Query
    anchor: str
    positive: int
    text: str | None = None

    def positive_text(self, sentences) -> str:
        """The matched sentence's text as trained on."""
        return self.text if self.text is not None else sentences[self.positive].text

    def carried_by(self, sentence, text: str | None = None) -> bool:
        """Whether ``sentence`` must not be a negative for this example: it carries the query (or is
        uncertain about it) or, for a swapped example, contains the surrogate name ("sarcoidosis" may
        be a word of another sentence). ``text``: the sentence as trained on, when itself swapped."""
        if self.text is not None:
            return mentions_term(sentence.text if text is None else text, self.query.finding)
        return sentence.matches(self.query)


class LexiconSampler:
    """Draws batches of (query, sentence) examples from the weak labels.

    A query is drawn with probability proportional to ``count ** alpha`` (its number of
    training sentences), then one of its sentences and one of its :func:`phrasings`. Each
    example comes with a *partner*: an example of the opposite-negation query ("no
    pneumothorax" for "pneumothorax") whenever that query has training sentences, so every
    batch holds, for each of its queries, a sentence stating the opposite: the negative that
    teaches negation. No sentence in a batch carries another example's query (or is uncertain
    about its finding), so in-batch negatives are never false negatives.

    With ``name_swap`` > 0 that share of groups has its finding name swapped for one surrogate
    term (:mod:`radsift.models.training.surrogates`), in both examples' queries and sentences;
    no other sentence of the batch may contain the surrogate.

    Args:
        data: The weak-label training set.
        batch_size: Examples per batch.
        alpha: Query sampling exponent (0 uniform over queries, 1 uniform over entries).
        rng: Random source (seeded by the caller).
        partners: Add opposite-negation partners (default True).
        name_swap: Share of groups with a surrogate finding name (needs ``data.surrogates``).
        description_share: Share of examples whose query is a lexicon description of the finding
            (needs ``data.descriptions``).
    """

    def __init__(self, data: LexiconData, batch_size: int, alpha: float, rng: random.Random,
                 partners: bool = True, name_swap: float = 0.0, description_share: float = 0.0) -> None:
        self.description_share = description_share if data.descriptions else 0.0
        self.data = data
        self.batch_size = batch_size
        self.rng = rng
        self.partners = partners
        self.name_swap = name_swap if data.surrogates else 0.0
        self.queries = list(data.by_query)
        self.weights = [len(data.by_query[q]) ** alpha for q in self.queries]

    def example(self, query: Query) -> LexiconExample:
        """A random example of ``query``."""
        anchor = self.rng.choice(phrasings(query))
        described = self.data.descriptions.get(query.finding)
        if described and self.description_share and self.rng.random() < self.description_share:
            text = self.rng.choice(described)
            anchor = text if query.polarity == YES else f"no {text}"
        return LexiconExample(query, anchor, self.rng.choice(self.data.by_query[query]))

    def compatible(self, a: LexiconExample, b: LexiconExample) -> bool:
        """Whether ``a`` and ``b`` may share a batch (each one's sentence is a true negative for the other)."""
        s = self.data.sentences
        return (a.positive != b.positive and not a.carried_by(s[b.positive], b.text)
                and not b.carried_by(s[a.positive], a.text))

    def swapped(self, group: list[LexiconExample]) -> list[LexiconExample]:
        """``group`` with its finding name swapped for one random surrogate (unchanged if a sentence cannot be)."""
        term = self.rng.choice(self.data.surrogates)
        out = []
        for e in group:
            sent = self.data.sentences[e.positive]
            span = sent.name_span(e.query.finding)
            if span is None or mentions_term(sent.text, term):
                return group
            own = phrasings(e.query)
            if e.anchor not in own:  # a description names no finding to swap
                return group
            query = Query(e.query.polarity, term)
            out.append(LexiconExample(query, query_text(query, own.index(e.anchor)), e.positive,
                                      swap_span(sent.text, *span, term)))
        return out

    def group(self) -> list[LexiconExample]:
        """An example and, when its opposite query exists, a compatible partner example."""
        query = self.rng.choices(self.queries, self.weights)[0]
        first = self.example(query)
        opp = self.data.opposite_of(query) if self.partners else None
        if opp is not None:
            for _ in range(5):
                partner = self.example(opp)
                if self.compatible(first, partner):
                    return self.maybe_swapped([first, partner])
        return self.maybe_swapped([first])

    def maybe_swapped(self, group: list[LexiconExample]) -> list[LexiconExample]:
        return self.swapped(group) if self.name_swap and self.rng.random() < self.name_swap else group

    def next_batch(self) -> list[LexiconExample]:
        """A batch of up to ``batch_size`` mutually compatible examples (partners included)."""
        batch: list[LexiconExample] = []
        tries = 0
        while len(batch) < self.batch_size and tries < 50 * self.batch_size:
            tries += 1
            group = self.group()
            if len(batch) + len(group) > self.batch_size:
                continue
            if all(self.compatible(g, b) for g in group for b in batch):
                batch.extend(group)
        return batch


def mine_negatives(
    anchors: np.ndarray,
    candidates: np.ndarray,
    allowed: np.ndarray,
    mode: str,
    rng: random.Random,
) -> list[int | None]:
    """Pick one negative candidate per anchor.

    Args:
        anchors: ``(n, d)`` unit vectors of the anchors.
        candidates: ``(m, d)`` unit vectors of the candidate sentences.
        allowed: ``(n, m)`` booleans: candidate j is a true negative for anchor i.
        mode: ``hardest``: the allowed candidate most similar to the anchor (HS);
            ``random``: a uniformly random allowed candidate (RS).
        rng: Random source for ``random``.

    Returns:
        A candidate index per anchor, None where no candidate is allowed.
    """
    out: list[int | None] = []
    if mode == "hardest":
        sims = anchors @ candidates.T
        sims = np.where(allowed, sims, -np.inf)
        best = sims.argmax(axis=1) if sims.size else np.zeros(len(anchors), dtype=int)
        for i in range(len(anchors)):
            out.append(int(best[i]) if allowed[i].any() else None)
        return out
    if mode != "random":
        raise ValueError(f"mode must be 'hardest' or 'random', not {mode!r}")
    for i in range(len(anchors)):
        options = np.flatnonzero(allowed[i])
        out.append(int(options[rng.randrange(len(options))]) if options.size else None)
    return out


class PairBatchSampler:
    """Endless batches of findings-impression pairs with no two equal impressions (or findings).

    Each pass shuffles the pairs and fills batches greedily, skipping a pair whose normalized
    impression (or findings) is already in the batch; a pass ends when the pairs left cannot
    fill a batch, and the next pass reshuffles everything. Boilerplate impressions ("No acute
    cardiopulmonary abnormality.") thus appear at most once per batch and never act as each
    other's negatives.

    Args:
        pairs: The training pairs.
        batch_size: Pairs per batch (fewer only if the corpus has fewer distinct impressions).
        rng: Random source.
    """

    def __init__(self, pairs: Sequence[SectionPair], batch_size: int, rng: random.Random) -> None:
        self.pairs = list(pairs)
        distinct = len({p.impression_key for p in self.pairs})
        self.batch_size = max(2, min(batch_size, distinct))
        self.rng = rng

    def __iter__(self) -> Iterator[list[SectionPair]]:
        while True:
            remaining = list(range(len(self.pairs)))
            self.rng.shuffle(remaining)
            produced = False
            while True:
                batch, rest, imp, fin = [], [], set(), set()
                for i in remaining:
                    p = self.pairs[i]
                    if len(batch) < self.batch_size and p.impression_key not in imp and p.findings_key not in fin:
                        batch.append(p)
                        imp.add(p.impression_key)
                        fin.add(p.findings_key)
                    else:
                        rest.append(i)
                if len(batch) < self.batch_size:
                    break
                produced = True
                yield batch
                remaining = rest
            if not produced:  # fewer distinct pairs than a batch: still train on what there is
                if len(batch) < 2:
                    return
                yield batch
