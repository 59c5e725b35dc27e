"""Batches of the entity-aspect recipes: compatible examples, each with one hard negative from its own note.

Each example has one hard negative from its own note, as CAPR draws them: the same entity under
another aspect, or the same aspect without the entity (else a passage of the same aspect from
another note). No batch holds two examples of one note or one entity, nor a passage that answers
another example's query (no false negatives).
"""

from __future__ import annotations

import random

from radsift.models.training.entity_aspect_data import EAData, EAExample


class EASampler:
    """Batches of compatible examples, each with one hard negative from its own note.

    Args:
        data: The passages and examples.
        batch_size: Examples per batch.
        rng: Seeded random source.
        medquad_share: Share of examples drawn from MedQuAD (the rest from the notes), when both exist.
        hard_negatives: Draw the note's hard negatives (False: a random passage of another note).
    """

    def __init__(self, data: EAData, batch_size: int, rng: random.Random, medquad_share: float = 0.5,
                 hard_negatives: bool = True) -> None:
        self.data, self.batch_size, self.rng, self.hard = data, batch_size, rng, hard_negatives
        self.pools = {s: [i for i, e in enumerate(data.examples) if e.source == s] for s in ("notes", "medquad")}
        self.share = medquad_share if self.pools["notes"] and self.pools["medquad"] else (
            1.0 if self.pools["medquad"] else 0.0)

    def relevant(self, passage: int, example: EAExample) -> bool:
        """Whether ``passage`` answers ``example``'s query (then it must not be its negative)."""
        p = self.data.passages[passage]
        return p.aspect == example.aspect and example.key in p.entities

    def negative(self, e: EAExample) -> int:
        """A hard negative of ``e``: same note, same entity other aspect / same aspect other entity."""
        d, rng = self.data, self.rng
        if self.hard:
            same = [i for i in d.by_note[e.note] if i != e.positive and not self.relevant(i, e)]
            other_aspect = [i for i in same if e.key in d.passages[i].entities]
            other_entity = [i for i in same if d.passages[i].aspect == e.aspect]
            options = [o for o in (other_aspect, other_entity) if o]
            if options:
                return rng.choice(rng.choice(options))
            pool = d.by_aspect[e.aspect]
        else:
            pool = range(len(d.passages))
        for _ in range(20):
            i = pool[rng.randrange(len(pool))] if isinstance(pool, list) else rng.randrange(len(d.passages))
            if d.passages[i].note != e.note and not self.relevant(i, e):
                return i
        n = len(d.passages)  # last resort: the next passage of another note, from a random place
        first = rng.randrange(n)
        for k in range(n):
            i = (first + k) % n
            if d.passages[i].note != e.note and not self.relevant(i, e):
                return i
        return first

    def next_batch(self) -> list[tuple[EAExample, int]]:
        """Up to ``batch_size`` (example, negative row) pairs, no passage relevant to another's query."""
        batch: list[tuple[EAExample, int]] = []
        notes, keys = set(), set()
        tries = 0
        while len(batch) < self.batch_size and tries < 50 * self.batch_size:
            tries += 1
            pool = self.pools["medquad"] if self.rng.random() < self.share else self.pools["notes"]
            e = self.data.examples[pool[self.rng.randrange(len(pool))]]
            if e.note in notes or e.key in keys:
                continue
            neg = self.negative(e)
            rows = [e.positive, neg]
            if any(self.relevant(r, o) for o, _ in batch for r in rows) or any(
                    self.relevant(r, e) for o, n in batch for r in (o.positive, n)):
                continue
            batch.append((e, neg))
            notes.add(e.note)
            keys.add(e.key)
        return batch
