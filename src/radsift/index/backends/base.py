"""The vector backend interface: score unit vectors against a query, return the best rows.

A backend owns only the nearest-neighbour step; records, BM25 and aggregation stay in
radsift. The embedded default is exact brute force over memory-mapped float32 vectors;
other engines (for example a distributed one) implement the same two methods.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from radsift.errors import ConfigError
from radsift.index.backends.duplicates import expand_groups
from radsift.ranking.topk import top_k


class MissingExtraError(ConfigError, ImportError):
    """An optional dependency is not installed (both a ConfigError for the CLI and an ImportError)."""


def extra_module(module: str, backend: str, library: str, extra: str):
    """Import ``module`` for the ``backend`` vector backend, or raise :class:`MissingExtraError`
    naming ``library`` and the ``pip install 'radsift[EXTRA]'`` command (``extra``) that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(f"the {backend!r} vector backend needs {library}, which is not installed ({exc}); "
                                f"install it with: {extra}") from exc


@dataclass(frozen=True)
class SparseScores:
    """A query's :meth:`VectorBackend.scores` without the array over every row: ``values`` at the sorted
    ``rows`` and ``fill`` at every other row (``rows`` None: ``values`` is the whole array).

    With duplicate groups (``groups``, as :func:`~radsift.index.backends.duplicates.groups_of`), ``rows`` are
    sorted group ids and each of their rows carries its group's value; ``node_of_row`` is every row's group.
    """

    n: int
    values: np.ndarray
    rows: np.ndarray | None = None
    fill: float = 0.0
    node_of_row: np.ndarray | None = None
    groups: tuple[np.ndarray, np.ndarray] | None = None

    def expanded(self) -> tuple[np.ndarray | None, np.ndarray]:
        """(sorted rows, values), every row of a group listed."""
        if self.groups is None or self.rows is None:
            return self.rows, self.values
        return expand_groups(self.groups, self.rows, self.values)

    def full(self) -> np.ndarray:
        """The array :meth:`VectorBackend.scores` returns."""
        rows, values = self.expanded()
        if rows is None:
            return values
        out = np.full(self.n, np.float32(self.fill), dtype=np.float32)
        out[rows] = values
        return out


class VectorBackend(ABC):
    """Nearest-neighbour search over one matrix of unit vectors (inner product = cosine)."""

    name: str = "base"

    @abstractmethod
    def scores(self, query: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """Cosine similarity of ``query`` to every row, as a float32 array.

        ``mask`` says which rows the caller will rank (filters, targets): an exact backend ignores
        it; an approximate one draws its candidates from those rows."""

    def sparse_scores(self, query: np.ndarray, mask: np.ndarray | None = None) -> SparseScores:
        """:meth:`scores` as :class:`SparseScores` (an approximate backend need not fill an array over every row)."""
        values = np.asarray(self.scores(query, mask), dtype=np.float32)
        return SparseScores(int(values.shape[0]), values)

    def top(self, query: np.ndarray, k: int, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best rows (optionally only rows where ``mask`` is true), best first.

        Returns:
            ``(rows, scores)``: int64 rows and float32 scores, sorted by descending score.
        """
        scores = self.scores(query)
        return top_k(scores, k, mask)
