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

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from radsift.errors import ConfigError
from radsift.models.encoder import set_threads
from radsift.ranking import rerank, top_k
from radsift.ranking.fusion import RERANK_WEIGHT, check_weight, fuse, fused_order

#: Share of the cross-encoder in the fused score (chosen among 0.3, 0.5 and 0.7 on held-out Open-i).
DEFAULT_WEIGHT = RERANK_WEIGHT

#: The file in a cross-encoder folder holding the weight chosen on development data (written by
#: ``radsift train --recipe entity-aspect --model-type cross``; read by :meth:`Reranker.load`).
SETTINGS_FILE = "radsift_reranker.json"
#: The weights training tries on its development split (0: no rerank, 1: the cross-encoder's order alone).
WEIGHT_CANDIDATES = (0.0, 0.3, 0.5, 0.7, 1.0)

__all__ = ["DEFAULT_WEIGHT", "Reranker", "SETTINGS_FILE", "WEIGHT_CANDIDATES", "check_weight", "choose_weight",
           "fuse", "fused_order", "read_reranker_settings", "rerank_head", "write_reranker_settings"]


def choose_weight(r1: Mapping[float, float], r5: Mapping[float, float] | None = None) -> float:
    """The weight with the best development R@1 (ties: the better R@5, then the smaller weight, so a
    weight above 0 must beat the first stage alone to be chosen)."""
    if not r1:
        raise ValueError("choose_weight: no figures")
    r5 = r5 or {}
    return max(r1, key=lambda w: (r1[w], r5.get(w, 0.0), -w))


def write_reranker_settings(folder: Path, figures: Mapping[str, Any]) -> dict[str, Any]:
    """Choose the weight from ``figures`` (``{"R@1": {w: %}, "R@5": {w: %}, "queries": n, "chosen_on": text,
    ...}``, as :func:`radsift.evaluation.heldout.rerank_weights_on_dev` returns them) and write it to
    ``folder/radsift_reranker.json``; returns what was written."""
    r1 = {float(w): float(v) for w, v in figures["R@1"].items()}
    r5 = {float(w): float(v) for w, v in figures.get("R@5", {}).items()}
    weight = choose_weight(r1, r5)
    settings = {"weight": weight, "helps": weight > 0, "chosen_on": figures.get("chosen_on", "development data"),
                "queries": int(figures.get("queries", 0)),
                "dev_R@1": {str(w): v for w, v in sorted(r1.items())},
                "dev_R@5": {str(w): v for w, v in sorted(r5.items())},
                **{k: figures[k] for k in ("first_stage", "top", "depth") if k in figures}}
    (Path(folder) / SETTINGS_FILE).write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    return settings


def read_reranker_settings(folder: str | Path) -> dict[str, Any] | None:
    """The weight chosen on development data for a cross-encoder folder (None: no such file).

    Raises:
        ConfigError: The file is not JSON, not an object, or its ``weight`` is not a number in [0, 1].
    """
    path = Path(folder) / SETTINGS_FILE
    if not path.is_file():
        return None
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"{path}: not a readable JSON file ({str(exc).splitlines()[0]})") from None
    if not isinstance(settings, dict):
        raise ConfigError(f"{path}: expected a JSON object with a \"weight\"")
    weight = settings.get("weight")
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight) \
            or not 0.0 <= weight <= 1.0:
        raise ConfigError(f"{path}: \"weight\" must be a number between 0 and 1, not {weight!r}")
    return {**settings, "weight": float(weight)}


@dataclass
class Reranker:
    """A loaded cross-encoder.

    Attributes:
        path: The model folder.
        model: The ``sentence_transformers.CrossEncoder``.
        batch_size: Pairs scored per forward pass.
        weight: Share of the cross-encoder in the fused score (see :func:`fuse`); 0: the reranker does
            not help (chosen so on development data) and :func:`rerank_head` keeps the first stage's order.
        weight_from: Where the weight comes from: ``given`` (the caller), ``development data`` (the
            folder's ``radsift_reranker.json``) or ``default`` (:data:`DEFAULT_WEIGHT`).
        settings: The folder's ``radsift_reranker.json`` (its development figures), or None.
    """

    path: Path
    model: object
    batch_size: int = 32
    weight: float = DEFAULT_WEIGHT
    weight_from: str = "default"
    settings: dict | None = None

    @classmethod
    def load(cls, path: str | Path, *, threads: int | None = None, max_length: int | None = None,
             weight: float | None = None) -> "Reranker":
        """Load a cross-encoder folder (local files only).

        Args:
            weight: Share of the cross-encoder in the fused score. None: the weight chosen on development
                data when the folder has a ``radsift_reranker.json`` (training writes it), else
                :data:`DEFAULT_WEIGHT`.

        Raises:
            ConfigError: The folder is missing or is not a one-logit cross-encoder; a damaged
                ``radsift_reranker.json``.
        """
        import os

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        path = Path(path).expanduser()
        if not (path / "config.json").exists():
            raise ConfigError(f"reranker folder not found or not a model folder (no config.json): {path}")
        settings = read_reranker_settings(path)  # a damaged file fails before the model loads
        if weight is not None:
            weight_from = "given"
        elif settings is not None:
            weight, weight_from = settings["weight"], "development data"
        else:
            weight, weight_from = DEFAULT_WEIGHT, "default"
        set_threads(threads)
        from sentence_transformers import CrossEncoder

        try:
            model = CrossEncoder(str(path), device="cpu", local_files_only=True, max_length=max_length)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{path}: cannot load the cross-encoder ({exc})") from exc
        if getattr(model, "num_labels", 1) != 1:
            raise ConfigError(f"{path}: a reranker has one output logit, this model has {model.num_labels}")
        model.eval()
        return cls(path=path.resolve(), model=model, weight=check_weight(weight), weight_from=weight_from,
                   settings=settings)

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
            (:data:`DEFAULT_WEIGHT`, 0.3, or the weight chosen on development data, for a cross-encoder;
            1.0, its order alone, for an object without one, such as a poly-encoder reranker). 0: the
            reranker is not called and the candidates keep the first stage's order and scores.

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
    if weight == 0.0:  # no rerank (the fused order would be the first stage's): the reranker is not asked
        return ranked, first_arr[ranked]
    cross = reranker.score(query, [texts[int(i)] for i in head]) if n else np.zeros(0)
    positions, scores = rerank(first_arr[head], cross, weight, tail=first_arr[tail])
    return ranked[np.asarray(positions, dtype=np.int64)], scores
