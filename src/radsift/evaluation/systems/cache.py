"""Bi-encoders of ``radsift bench`` and their embedding caches: each distinct text encoded once per run."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from radsift.models.encoder import Encoder, resolve_model_path
from radsift.models.hashing import HashingEncoder


def load_encoder(model: str | None, threads: int | None = None):
    """Load a bi-encoder folder (None = packaged default); HashingEncoder folders load as such."""
    if model is not None:
        marker = Path(model).expanduser() / "modules.json"
        try:
            info = json.loads(marker.read_text(encoding="utf-8")) if marker.is_file() else None
        except (OSError, ValueError):
            info = None
        if isinstance(info, dict) and "radsift_hashing_encoder" in info:
            return HashingEncoder(marker.parent, dim=int(info["radsift_hashing_encoder"]))
    resolve_model_path(model)
    return Encoder.load(model, threads=threads)


class EmbeddingCache:
    """Embeddings of one encoder, each distinct text encoded once per run.

    Protocols share texts (the same sentences are candidates of several protocols, the same
    query phrasings come back): every text is encoded the first time it is asked for.
    """

    def __init__(self, encoder: Any, batch_size: int = 64, progress: bool = True) -> None:
        self.encoder = encoder
        self.batch_size = batch_size
        self.progress = progress
        self._rows: dict[str, int] = {}
        self._blocks: list[np.ndarray] = []
        self._matrix: np.ndarray | None = None

    @property
    def name(self) -> str:
        return str(getattr(self.encoder, "name", type(self.encoder).__name__))

    def __len__(self) -> int:
        return len(self._rows)

    def embed(self, texts: Sequence[str], desc: str = "encoding") -> np.ndarray:
        """``(len(texts), dim)`` unit vectors, encoding only texts not seen before."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._rows]
        if missing:
            vecs = self.encoder.encode(
                missing, batch_size=self.batch_size, progress=self.progress and len(missing) > 256,
                desc=f"{desc} ({self.name})",
            )
            vecs = np.ascontiguousarray(vecs, dtype=np.float32)
            start = len(self._rows)
            for i, t in enumerate(missing):
                self._rows[t] = start + i
            self._blocks.append(vecs)
            self._matrix = None
        if self._matrix is None:
            self._matrix = np.concatenate(self._blocks) if self._blocks else np.zeros((0, 1), np.float32)
            self._blocks = [self._matrix]
        rows = np.fromiter((self._rows[t] for t in texts), dtype=np.int64, count=len(texts))
        return self._matrix[rows]


def texts_key(texts: Sequence[str]) -> str:
    """Identity of a candidate list (for per-run caches)."""
    digest = hashlib.sha1(usedforsecurity=False)
    for t in texts:
        digest.update(t.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return f"{len(texts)}:{digest.hexdigest()}"


