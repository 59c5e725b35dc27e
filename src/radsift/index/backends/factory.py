"""Create a vector backend by name; optional backends fail with a helpful ImportError."""

from __future__ import annotations

import numpy as np

from radsift.errors import ConfigError
from radsift.index.backends.base import VectorBackend

BACKENDS = ("numpy",)


def create_backend(name: str, vectors: np.ndarray) -> VectorBackend:
    """A backend over ``vectors``. Only ``numpy`` (exact, embedded) ships today."""
    if name == "numpy":
        from radsift.index.backends.numpy_backend import NumpyBackend

        return NumpyBackend(vectors)
    raise ConfigError(f"unknown vector backend {name!r}; available: {', '.join(BACKENDS)}")
