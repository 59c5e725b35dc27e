"""The cross-encoder reranker: scores (query, text) pairs jointly and reorders a short list.

A reranker folder is a sentence-transformers ``CrossEncoder`` with one output logit, written by
``radsift train --recipe rerank`` (built from the packaged MiniLM weights with a fresh head:
no pretrained cross-encoder is available offline). Loading is local-only.

The reordered list is by a fused score, ``weight * z(cross-encoder) + (1 - weight) *
z(first stage)``, each standardised over the reranked candidates: a cross-encoder trained on
weak labels alone ranked worse than the trained bi-encoder it reranks (held-out Open-i mAP
0.629 vs 0.782), while the fusion with ``weight`` 0.3 ranked better (0.811; the README's
"Rerank" figures). ``weight=1`` gives the cross-encoder's order alone.

Reranking itself is the ranking core's (:func:`radsift.ranking.rerank`): ``radsift search --rerank``
calls it on a search's head, and :func:`rerank_head` on a passage head for both passage search and
the passage benchmark. Usage::

    from radsift import Index
    from radsift.models.reranker import Reranker, rerank_head
    index = Index.open("my-index", reranker="models/rerank")     # loaded with Reranker.load
    hits = index.search("no pneumothorax", k=10, rerank=50)      # the top 50 reranked, fused at 0.3
    reranker = Reranker.load("models/rerank")
    texts = ["Small pneumothorax.", "No pneumothorax."]
    positions, scores = rerank_head("no pneumothorax", texts, [0.9, 0.8], reranker)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from radsift.errors import ConfigError
from radsift.models.encoder import set_threads
from radsift.ranking import rerank, top_k
from radsift.ranking.fusion import RERANK_WEIGHT, check_weight, fuse, fused_order

#: Share of the cross-encoder in the fused score (chosen among 0.3, 0.5 and 0.7 on held-out Open-i).
DEFAULT_WEIGHT = RERANK_WEIGHT

__all__ = ["DEFAULT_WEIGHT", "Reranker", "check_weight", "fuse", "fused_order", "rerank_head"]


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


def rerank_head(query: str, texts: Sequence[str], first: Sequence[float], reranker, top: int | None = None,
                weight: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Rerank the best ``top`` candidates of a first stage; the others keep their order below them.

    The one rerank of passages: ``radsift search --unit passage``, ``/api/passages`` (and the page)
    and the ``rerank:`` systems of ``radsift bench --protocol passages`` all call it. The candidates
    are ranked by ``first`` (:func:`radsift.ranking.top_k`: ties by position), the reranker scores the
    head, and the ranking core (:func:`radsift.ranking.rerank`) orders the head by
    ``weight * z(reranker) + (1 - weight) * z(first)`` and places the rest below it.

    Args:
        query: The query text the reranker reads.
        texts: Every candidate's text (only the head's are read).
        first: Every candidate's first-stage score (higher is better).
        reranker: A loaded :class:`Reranker` (or anything with ``score(query, texts)``).
        top: How many leading candidates to rerank (None = all).
        weight: Share of the reranker in the fused score; default the reranker's ``weight``
            (:data:`DEFAULT_WEIGHT`, 0.3, for a cross-encoder; 1.0, its order alone, for an object
            without one, such as a poly-encoder reranker).

    Returns:
        ``(positions, scores)``: candidate positions best first and their scores (float64,
        non-increasing; the head's fused scores, the reranker's own when ``weight`` is 1).
    """
    first_arr = np.asarray(first, dtype=np.float64).reshape(-1)
    if len(texts) != first_arr.size:
        raise ValueError(f"rerank_head: {len(texts)} texts but {first_arr.size} first-stage scores")
    ranked, _ = top_k(first_arr, None)
    n = ranked.size if top is None else max(0, min(int(top), ranked.size))
    head, tail = ranked[:n], ranked[n:]
    weight = getattr(reranker, "weight", 1.0) if weight is None else check_weight(weight)
    cross = reranker.score(query, [texts[int(i)] for i in head]) if n else np.zeros(0)
    positions, scores = rerank(first_arr[head], cross, weight, tail=first_arr[tail])
    return ranked[np.asarray(positions, dtype=np.int64)], scores
