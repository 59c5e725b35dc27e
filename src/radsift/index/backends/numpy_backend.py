"""Exact brute-force search with one BLAS matrix-vector product (the embedded default)."""

from __future__ import annotations

import numpy as np

from radsift.index.backends.base import VectorBackend


class NumpyBackend(VectorBackend):
    """Exact inner-product search over an ``(n, dim)`` float32 matrix (memory-mapped is fine)."""

    name = "numpy"

    def __init__(self, vectors: np.ndarray) -> None:
        self.vectors = vectors

    def scores(self, query: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        if self.vectors.shape[0] == 0:
            return np.zeros(0, dtype=np.float32)
        return self.vectors @ np.asarray(query, dtype=np.float32)
