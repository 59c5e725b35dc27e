"""Pseudo-relevance feedback: expand a query from its own first-pass top hits.

- :func:`rm3_weights`: RM3 on the BM25 side (Abdul-Jaleel et al., "UMass at TREC 2004", as
  Anserini implements it): a relevance model over the feedback units' terms, each unit weighted by
  its first-pass score; the best :data:`FB_TERMS` terms, interpolated with the original query
  terms (weight :data:`ORIGINAL_WEIGHT`). :func:`weighted_bm25_scores` scores a weighted query.
- :func:`rocchio`: Rocchio on the dense side: the query vector plus :data:`ROCCHIO_BETA` times the
  mean vector of the feedback units, renormalised.

The defaults are Anserini's (``-rm3``: 10 feedback documents, 10 terms, original weight 0.5;
``-rocchio``: alpha 1, beta 0.75). Whether feedback helps is measured in ``docs/measurements.md``
("Pseudo-relevance feedback"); it is an option (``--prf``), off by default.
"""

from __future__ import annotations

from collections import Counter
from typing import Mapping, Sequence

import numpy as np

#: Feedback units (the first pass's best).
FB_DOCS = 10
#: Expansion terms RM3 keeps.
FB_TERMS = 10
#: Share of the original query terms in RM3's interpolation.
ORIGINAL_WEIGHT = 0.5
#: Weight of the feedback centroid in Rocchio (the query's own weight is 1).
ROCCHIO_BETA = 0.75


def rm3_weights(query_terms: Sequence[str], feedback_terms: Sequence[Sequence[str]], feedback_scores: Sequence[float],
                n_terms: int = FB_TERMS, original_weight: float = ORIGINAL_WEIGHT) -> dict[str, float]:
    """Term weights of the RM3-expanded query (summing to 1).

    Args:
        query_terms: The query's terms (tokenised as the BM25 index is).
        feedback_terms: The terms of each feedback unit.
        feedback_scores: Each feedback unit's first-pass score (only their relative size matters).
        n_terms: Expansion terms kept.
        original_weight: Share of the original query.
    """
    query = Counter(t for t in query_terms)
    if not query:
        return {}
    scores = np.asarray(feedback_scores, dtype=np.float64)
    if scores.size:
        # Document weights: shifted to be positive and summing to 1 (first-pass scores may be negative).
        scores = scores - scores.min() + 1e-6
        scores = scores / scores.sum()
    model: Counter = Counter()
    for terms, weight in zip(feedback_terms, scores.tolist()):
        if not terms:
            continue
        counts = Counter(terms)
        length = float(len(terms))
        for term, c in counts.items():
            model[term] += weight * c / length
    expansion = dict(model.most_common(n_terms))
    total = sum(expansion.values())
    out: dict[str, float] = {}
    q_total = float(sum(query.values()))
    for term, c in query.items():
        out[term] = original_weight * c / q_total
    for term, w in expansion.items():
        out[term] = out.get(term, 0.0) + (1.0 - original_weight) * (w / total if total else 0.0)
    return out


def weighted_bm25_scores(retriever, weights: Mapping[str, float], n: int) -> np.ndarray:
    """BM25 scores of a weighted query: the sum over its terms of weight x the term's BM25 score."""
    out = np.zeros(n, dtype=np.float32)
    vocab = retriever.vocab_dict
    for term, weight in weights.items():
        if term in vocab and weight:
            out += np.float32(weight) * np.asarray(retriever.get_scores([term]), dtype=np.float32)[:n]
    return out


def rocchio(query_vector: np.ndarray, feedback_vectors: np.ndarray, beta: float = ROCCHIO_BETA) -> np.ndarray:
    """The query vector moved towards the mean of the feedback vectors, unit length."""
    q = np.asarray(query_vector, dtype=np.float32)
    fb = np.asarray(feedback_vectors, dtype=np.float32)
    if fb.size == 0:
        return q
    moved = q + np.float32(beta) * fb.mean(axis=0)
    norm = float(np.linalg.norm(moved))
    return (moved / norm).astype(np.float32) if norm > 0 else q
