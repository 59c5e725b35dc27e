"""The cross-encoder reranker: scores (query, text) pairs jointly and reorders a short list.

A reranker folder is a sentence-transformers ``CrossEncoder`` with one output logit, written by
``radsift train --recipe rerank`` (built from the packaged MiniLM weights with a fresh head:
no pretrained cross-encoder is available offline). Loading is local-only.

The reordered list is by a fused score, ``weight * z(cross-encoder) + (1 - weight) *
z(first stage)``, each standardised over the reranked candidates: a cross-encoder trained on
weak labels alone ranked worse than the trained bi-encoder it reranks (held-out Open-i mAP
0.629 vs 0.782), while the fusion with ``weight`` 0.3 ranked better (0.811; the README's
"Rerank" figures). ``weight=1`` gives the cross-encoder's order alone.

Usage::

    from radsift.models.reranker import Reranker, rerank
    reranker = Reranker.load("models/rerank")
    hits = index.search("no pneumothorax", k=50)
    hits = rerank("no pneumothorax", hits, reranker, top=50)   # Hit objects, re-scored and re-ranked
    texts = rerank("no pneumothorax", ["No pneumothorax.", "Small pneumothorax."], reranker)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence, TypeVar, Union

import numpy as np

from radsift.errors import ConfigError
from radsift.models.encoder import set_threads
from radsift.ranking.fusion import RERANK_WEIGHT, check_weight, fuse, fused_order
from radsift.records import Hit

Item = TypeVar("Item", bound=Union[Hit, str])

#: Share of the cross-encoder in the fused score (chosen among 0.3, 0.5 and 0.7 on held-out Open-i).
DEFAULT_WEIGHT = RERANK_WEIGHT

__all__ = ["DEFAULT_WEIGHT", "Reranker", "check_weight", "fuse", "fused_order", "item_text", "rerank"]


@dataclass
class Reranker:
    """A loaded cross-encoder.

    Attributes:
        path: The model folder.
        model: The ``sentence_transformers.CrossEncoder``.
        batch_size: Pairs scored per forward pass.
        weight: Share of the cross-encoder in the fused score (see :func:`fuse`).
    """

    path: Path
    model: object
    batch_size: int = 32
    weight: float = DEFAULT_WEIGHT

    @classmethod
    def load(cls, path: str | Path, *, threads: int | None = None, max_length: int | None = None,
             weight: float = DEFAULT_WEIGHT) -> "Reranker":
        """Load a cross-encoder folder (local files only).

        Raises:
            ConfigError: The folder is missing or is not a one-logit cross-encoder.
        """
        import os

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        path = Path(path).expanduser()
        if not (path / "config.json").exists():
            raise ConfigError(f"reranker folder not found or not a model folder (no config.json): {path}")

        set_threads(threads)
        from sentence_transformers import CrossEncoder

        try:
            model = CrossEncoder(str(path), device="cpu", local_files_only=True, max_length=max_length)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{path}: cannot load the cross-encoder ({exc})") from exc
        if getattr(model, "num_labels", 1) != 1:
            raise ConfigError(f"{path}: a reranker has one output logit, this model has {model.num_labels}")
        model.eval()
        return cls(path=path.resolve(), model=model, weight=check_weight(weight))

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Relevance of each text to ``query`` (sigmoid of the logit, in (0, 1); higher is better)."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        scores = self.model.predict([(query, t) for t in texts], batch_size=self.batch_size,
                                    convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(scores, dtype=np.float32).reshape(-1)


def item_text(item: Hit | str) -> str:
    """The text a reranker reads for a hit (its matched sentence or section unit) or a string."""
    if isinstance(item, str):
        return item
    if item.sentence is not None:
        return item.sentence.text
    if item.section and item.section in item.sections:
        return item.sections[item.section]
    return "\n".join(item.sections.values())


def rerank(query: str, items: Sequence[Item], reranker: Reranker, top: int | None = None,
           weight: float | None = None) -> list[Item]:
    """Reorder the first ``top`` items by the fused score; the rest keep their order after them.

    Args:
        query: The query text.
        items: :class:`~radsift.records.Hit` objects (best first) or plain strings.
        reranker: A loaded :class:`Reranker` (or anything with ``score(query, texts)``).
        top: How many leading items to rerank (None = all).
        weight: Share of the cross-encoder in the fused score (:func:`fuse`); default the
            reranker's ``weight`` (1.0, the cross-encoder alone, for objects without one). The
            first-stage score of a hit is its ``score``; plain strings count by position.

    Returns:
        A new list of the same items. Reranked hits get the fused score as ``score`` (the
        cross-encoder's own score when ``weight`` is 1) and every hit its new 1-based ``rank``;
        hits beyond ``top`` keep their first-stage score. Ties keep the first-stage order.
    """
    items = list(items)
    n = len(items) if top is None else max(0, min(int(top), len(items)))
    head, tail = items[:n], items[n:]
    weight = getattr(reranker, "weight", 1.0) if weight is None else weight
    first = [x.score if isinstance(x, Hit) else -float(i) for i, x in enumerate(head)]
    scores, order = fused_order(first, reranker.score(query, [item_text(x) for x in head]), weight)
    out: list = []
    for rank, i in enumerate(order, start=1):
        x = head[i]
        out.append(dataclasses.replace(x, score=float(scores[i]), rank=rank) if isinstance(x, Hit) else x)
    for rank, x in enumerate(tail, start=n + 1):
        out.append(dataclasses.replace(x, rank=rank) if isinstance(x, Hit) else x)
    return out
