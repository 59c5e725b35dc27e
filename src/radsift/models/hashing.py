"""A tiny deterministic bag-of-stems encoder for tests and smoke runs (no torch, no weights).

Its rankings are known in advance (cosine of hashed stem counts), which lets tests check
search, aggregation and evaluation protocols exactly. It is not a semantic model.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Sequence

import numpy as np

from radsift.text.tokens import tokenize


def _bucket(token: str, dim: int) -> int:
    return int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "little") % dim


class HashingEncoder:
    """Encodes text as the L2-normalised vector of hashed stem counts.

    Args:
        folder: A folder that stands for the "model" (a marker ``modules.json`` is written there,
            so the index can fingerprint it like a real model folder).
        dim: Vector size.
    """

    def __init__(self, folder: str | Path, dim: int = 256) -> None:
        self.path = Path(folder)
        self.path.mkdir(parents=True, exist_ok=True)
        marker = self.path / "modules.json"
        if not marker.exists():
            marker.write_text(json.dumps({"radsift_hashing_encoder": dim}))
        self.name = "hashing-encoder"
        self.dim = dim

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: bool = False,
               desc: str = "encoding") -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for tok in tokenize(text):
                out[i, _bucket(tok, self.dim)] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)

    def encode_query(self, text: str) -> np.ndarray:
        return self.encode([text])[0]
