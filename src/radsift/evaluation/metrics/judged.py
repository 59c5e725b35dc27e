"""One query's ranking joined with its relevance judgments: the arrays every metric reads.

Building this once per query and handing it to each metric keeps :func:`evaluate` fast on
thousands of queries with long runs: the docid lookups happen once, the metrics are numpy.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from itertools import repeat
from typing import Mapping, Sequence

import numpy as np


@dataclass(frozen=True)
class Judged:
    """A ranked list seen through its query's qrels.

    Attributes:
        gains: Relevance of the document at each rank (float64), 0 where the document is
            unjudged or judged with relevance <= 0.
        n_relevant: Number of documents judged relevant (relevance > 0) for the query,
            retrieved or not.
        ideal: The relevant documents' relevances sorted from highest to lowest: the gains of
            the best possible ranking.
    """

    gains: np.ndarray
    n_relevant: int
    ideal: np.ndarray

    @classmethod
    def of(cls, ranked: Sequence[str], qrels: Mapping[str, int | float]) -> "Judged":
        """Join a ranking (docids, best first) with the query's judgments."""
        relevant = {docid: rel for docid, rel in qrels.items() if rel > 0}
        # map(dict.get) runs the lookups in C: this line is the hot loop of evaluate().
        gains = np.fromiter(map(relevant.get, ranked, repeat(0)), dtype=np.float64, count=len(ranked))
        ideal = np.fromiter(relevant.values(), dtype=np.float64, count=len(relevant))
        return cls(gains=gains, n_relevant=len(relevant), ideal=np.sort(ideal)[::-1])

    @cached_property
    def hits(self) -> np.ndarray:
        """Boolean array: is the document at each rank relevant."""
        return self.gains > 0

    def top(self, k: int | None) -> np.ndarray:
        """The hit array cut at rank ``k`` (the whole ranking when ``k`` is None)."""
        return self.hits if k is None else self.hits[:k]


def check_k(k: int | None) -> None:
    """Reject a cutoff that is not a positive integer."""
    if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1):
        raise ValueError(f"cutoff k must be a positive integer or None, got {k!r}")
