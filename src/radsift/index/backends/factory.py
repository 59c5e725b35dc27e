"""Create a vector backend by name; optional backends fail with a message naming their extra.

Names:

- ``numpy``: exact brute force over the memory-mapped float32 vectors (the embedded default).
- ``hnsw``: an approximate HNSW graph (FAISS, ``pip install 'radsift[scale]'``) re-scored exactly
  (:mod:`radsift.index.backends.hnsw`); opened from ``graph=`` when that file exists, else built.
- ``auto``: ``numpy`` below :func:`hnsw_min_rows` rows (``RADSIFT_HNSW_MIN_ROWS``, default
  :data:`HNSW_MIN_ROWS`), ``hnsw`` at or above it when the extra is installed (else ``numpy``, with
  a logged note). When the caller names a ``graph`` file that does not exist, ``auto`` stays with
  ``numpy`` (and says so) rather than building a graph at search time (minutes at 1M rows).
  An index whose live generation was pushed to Milvus (``INDEX/cache/milvus/<gen>.json``, see
  :mod:`radsift.index.backends.milvus`) resolves ``auto`` to ``milvus`` when the caller says where
  (``milvus=``).
- ``milvus``: the generation's vectors in a Milvus collection (pymilvus, ``pip install
  'radsift[milvus]'``; milvus-lite for a local ``.db`` file), filters pushed down as Milvus
  expressions; opened from ``milvus=`` (a :class:`~radsift.index.backends.milvus.MilvusPlace`).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np

from radsift.errors import ConfigError
from radsift.index.backends import hnsw, milvus_client
from radsift.index.backends.base import VectorBackend
from radsift.index.backends.hnsw import HnswBackend
from radsift.index.backends.milvus import MilvusBackend
from radsift.index.backends.numpy_backend import NumpyBackend

log = logging.getLogger("radsift.index.backends")

BACKENDS = ("numpy", "hnsw", "auto", "milvus")
#: Names kept for backends that do not ship yet.
RESERVED: dict[str, str] = {}
#: ``auto`` picks ``hnsw`` from this many rows on (exact numpy search takes ~10-60 ms a query at 1M rows).
HNSW_MIN_ROWS = 200_000
ENV_MIN_ROWS = "RADSIFT_HNSW_MIN_ROWS"
#: Options :meth:`HnswBackend.open` takes (the others only matter when building).
OPEN_OPTIONS = ("candidates", "expansion_search", "mmap")


def hnsw_min_rows() -> int:
    """The ``auto`` threshold: ``RADSIFT_HNSW_MIN_ROWS`` when set, else :data:`HNSW_MIN_ROWS`."""
    raw = os.environ.get(ENV_MIN_ROWS, "").strip()
    if not raw:
        return HNSW_MIN_ROWS
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        value = -1
    if value < 0:
        raise ConfigError(f"{ENV_MIN_ROWS}={raw!r}: expected a row count (a whole number >= 0)")
    return value


def resolve_backend(name: str, rows: int) -> str:
    """The concrete backend ``name`` stands for over ``rows`` vectors (``auto`` decides here).

    Raises:
        ConfigError: An unknown or reserved name.
    """
    if name in RESERVED:
        raise ConfigError(RESERVED[name])
    if name not in BACKENDS:
        raise ConfigError(f"unknown vector backend {name!r}; available: {', '.join(BACKENDS)}")
    if name != "auto":
        return name
    threshold = hnsw_min_rows()
    if rows < threshold:
        return "numpy"
    if hnsw.available():
        return "hnsw"
    log.warning("%d vectors (auto switches to hnsw from %d rows, %s): the FAISS extra is not installed, "
                "so search stays exact (numpy); install it with: %s", rows, threshold, ENV_MIN_ROWS, hnsw.EXTRA)
    return "numpy"


def create_backend(name: str, vectors: np.ndarray, *, graph: str | Path | None = None, milvus=None,
                   **options) -> VectorBackend:
    """A backend over ``vectors``.

    Args:
        name: ``numpy``, ``hnsw``, ``milvus`` or ``auto`` (see the module docstring).
        vectors: ``(n, dim)`` float32 unit vectors (memory-mapped is fine).
        graph: ``hnsw`` only: a graph file saved by :meth:`HnswBackend.save`; opened (memory-mapped)
            when it exists, else the graph is built in memory (not saved: the caller decides where).
        **options: ``hnsw`` only: :meth:`HnswBackend.build` / :meth:`HnswBackend.open` options
            (``candidates``, ``expansion_search``, ``dtype``, ``connectivity``, ``expansion_add``, ...);
            ignored by ``numpy``; ``milvus`` takes ``candidates`` and ``ef``.
        milvus: Where the generation's vectors would be in Milvus (a
            :class:`~radsift.index.backends.milvus.MilvusPlace`): needed by ``milvus``; ``auto`` picks
            ``milvus`` when that generation was pushed there.

    Raises:
        ConfigError: An unknown or reserved name; ``hnsw`` without the extra (a
            :class:`~radsift.index.backends.hnsw.MissingExtraError`, also an ImportError); ``milvus``
            without the extra, without ``milvus=`` or on a generation never pushed to Milvus.
        MilvusUnavailableError: The Milvus URI does not answer (a ConfigError).
    """
    if name == "auto" and milvus is not None and milvus.recorded() is not None:
        if milvus_client.available():
            name = "milvus"
        else:
            log.warning("%s: this generation's vectors are in Milvus, but pymilvus is not installed: searching the "
                        "local copy instead; install it with: %s", milvus.index_dir, milvus_client.EXTRA)
    resolved = resolve_backend(name, int(vectors.shape[0]))
    if resolved == "milvus":
        milvus_client.pymilvus_module()  # the missing-extra error before anything else
        if milvus is None:
            raise ConfigError("the 'milvus' backend needs to know the index and generation (milvus=MilvusPlace(...))")
        return MilvusBackend.open(milvus, vectors, **{k: v for k, v in options.items() if k in ("candidates", "ef")})
    if resolved == "hnsw" and name == "auto" and graph is not None and not Path(graph).exists():
        log.warning("%s: no HNSW graph beside these %d vectors: search stays exact (numpy); build the graph "
                    "to search approximately", graph, vectors.shape[0])
        resolved = "numpy"
    if resolved == "numpy":
        return NumpyBackend(vectors)
    hnsw.faiss_module()  # the missing-extra error before anything else
    if graph is not None and Path(graph).exists():
        return HnswBackend.open(graph, vectors, **{k: v for k, v in options.items() if k in OPEN_OPTIONS})
    return HnswBackend.build(vectors, **{k: v for k, v in options.items() if k != "mmap"})
