"""Concept-aware queries: link a query that describes a finding to the lexicon concept it describes.

"A breathing tube in the windpipe" names no lexicon phrase, yet it describes the endotracheal
tube. The linker compares the query's finding text (the query without its negation or
uncertainty cue: "no fluid around the lungs" -> "fluid around the lungs") with every concept's
name, synonyms and plain-language ``descriptions`` (the lexicon YAML; a user's lexicon can add
its own), by the cosine of their embeddings under the index's own encoder. The best concept is
linked when its best phrase reaches the model's ``link_threshold`` (:mod:`radsift.models.settings`,
calibrated on development queries: ``docs/measurements.md``, "Concept linking").

A linked concept then acts as if the query had named it: it joins the query's reading (source
``linked``, so the stored labels rank the units that state it first, with the query's cue
deciding the wanted status), its name and short synonyms join the BM25 side of the query, and the
reading shows "understood as: endotracheal tube". A query whose own words name a lexicon finding
is read by the labeler as before; one that links to nothing is searched as before.

The phrase vectors are computed once per (model, lexicon) and kept in the index folder under
``cache/`` (outside the generations: a rebuild or an ``index add`` does not touch them); an
index folder that cannot be written keeps them in memory.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from radsift.ranking import best_per_owner

#: Synonyms longer than this many words do not join the BM25 side of a linked query.
MAX_EXPANSION_WORDS = 3


@dataclass(frozen=True)
class Link:
    """A query linked to a concept.

    Attributes:
        concept: The concept's name.
        score: The cosine of the query's finding text with ``phrase``.
        phrase: The concept's name, synonym or description it matched best.
    """

    concept: str
    score: float
    phrase: str


class ConceptLinker:
    """Links texts to the concepts of a lexicon by embedding similarity.

    Args:
        concepts: Concept names, one per concept.
        phrases: Every phrase (names, synonyms, descriptions).
        owner: Concept index of each phrase.
        vectors: Unit vectors of the phrases, ``(len(phrases), dim)``.
        expansions: Per concept, the words its link adds to the BM25 side.
    """

    def __init__(self, concepts: Sequence[str], phrases: Sequence[str], owner: np.ndarray, vectors: np.ndarray,
                 expansions: Sequence[str]) -> None:
        self.concepts = list(concepts)
        self.phrases = list(phrases)
        self.owner = np.asarray(owner, dtype=np.int64)
        self.vectors = np.asarray(vectors, dtype=np.float32)
        self.expansions = list(expansions)

    @classmethod
    def for_lexicon(cls, lexicon, encoder, cache_dir: str | Path | None = None,
                    fingerprint: str | None = None) -> "ConceptLinker":
        """Embed the lexicon's phrases with ``encoder`` (read from ``cache_dir`` when there).

        Args:
            lexicon: A :class:`~radsift.labels.lexicon.Lexicon`.
            encoder: Anything with ``encode(texts) -> (n, dim)`` unit vectors.
            cache_dir: Where to keep the vectors (None = no cache).
            fingerprint: The encoder's identity, part of the cache key.
        """
        concepts, phrases, owner, expansions = _phrases(lexicon)
        key = hashlib.sha256(json.dumps([fingerprint or getattr(encoder, "name", ""), phrases]).encode()).hexdigest()
        cached = _read_cache(cache_dir, key, len(phrases))
        vectors = cached if cached is not None else encoder.encode(phrases, batch_size=128)
        if cached is None:
            _write_cache(cache_dir, key, vectors)
        return cls(concepts, phrases, owner, vectors, expansions)

    def scores(self, query_vector: np.ndarray) -> np.ndarray:
        """The best cosine of the query with each concept's phrases (one per concept)."""
        sims = self.vectors @ np.asarray(query_vector, dtype=np.float32)
        return best_per_owner(sims, self.owner, len(self.concepts))

    def link(self, query_vector: np.ndarray, threshold: float) -> Link | None:
        """The concept the query describes, or None when no phrase reaches ``threshold``."""
        if not len(self.phrases):
            return None
        sims = self.vectors @ np.asarray(query_vector, dtype=np.float32)
        best = int(np.argmax(sims))
        if float(sims[best]) < threshold:
            return None
        return Link(self.concepts[self.owner[best]], float(sims[best]), self.phrases[best])

    def expansion(self, concept: str) -> str:
        """The words a link to ``concept`` adds to the BM25 side of the query."""
        return self.expansions[self.concepts.index(concept)]


def _phrases(lexicon) -> tuple[list[str], list[str], np.ndarray, list[str]]:
    concepts, phrases, owner, expansions = [], [], [], []
    for i, c in enumerate(lexicon):
        concepts.append(c.name)
        own = [p for p in dict.fromkeys((*c.synonyms, *c.descriptions)) if "*" not in p]
        phrases += own
        owner += [i] * len(own)
        short = [p for p in c.synonyms if "*" not in p and len(p.split()) <= MAX_EXPANSION_WORDS]
        expansions.append(" ".join(dict.fromkeys(short)))
    return concepts, phrases, np.asarray(owner, dtype=np.int64), expansions


def _read_cache(cache_dir, key: str, n: int) -> np.ndarray | None:
    if cache_dir is None:
        return None
    path = Path(cache_dir) / f"concepts-{key[:24]}.npy"
    try:
        vectors = np.load(path)
    except (OSError, ValueError):
        return None
    if vectors.ndim != 2 or vectors.shape[0] != n or not np.isfinite(vectors).all():
        return None  # a stale or damaged cache is recomputed, never trusted
    return vectors.astype(np.float32, copy=False)


def _write_cache(cache_dir, key: str, vectors: np.ndarray) -> None:
    if cache_dir is None:
        return
    folder = Path(cache_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            np.save(fh, np.asarray(vectors, dtype=np.float32))
        os.replace(tmp, folder / f"concepts-{key[:24]}.npy")
    except OSError:
        pass  # a read-only index folder: the vectors stay in memory
