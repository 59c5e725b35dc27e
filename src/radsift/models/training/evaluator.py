"""What training asks of the evaluator its caller hands it (training never imports :mod:`radsift.evaluation`).

``radsift train`` hands :class:`radsift.evaluation.heldout.HeldOutEvaluator`, which does both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Protocol, Sequence


class Evaluator(Protocol):
    """The figures of a trained model's card.

    A recipe calls it once its model is saved (when ``config.evaluate`` is set); the
    ``entity-aspect`` recipes also call :meth:`development` every ``eval_every`` steps (the
    learning curve). An evaluator may also have ``rerank_weights(model_dir, config, dev_docs, log)``:
    a trained cross-encoder's development figures per rerank weight (``{"R@1": {weight: %}, "R@5": ...,
    "queries": n, "chosen_on": text}``), from which training writes the chosen weight to the model folder
    (:func:`radsift.models.reranker.write_reranker_settings`).
    """

    def __call__(self, kind: str, model, data, config, base_path=None, first_stage_encode=None) -> dict[str, Any]:
        """Held-out figures of a weak-label recipe's model: ``kind`` is ``bi-encoder`` (``model`` a
        SentenceTransformer, ``base_path`` the model it started from) or ``cross-encoder``
        (``first_stage_encode(texts)``: the bi-encoder that ranks before it); ``data`` the
        :class:`~radsift.models.training.data.TrainingData`."""
        ...

    def development(self, model_dir: Path, config, dev_docs: Sequence, log: Callable[[str], None],
                    kinds: Sequence[str] | None = None) -> dict[str, Any]:
        """An ``entity-aspect`` model's figures on the development split (the held-out MedQuAD
        documents ``dev_docs``), for the query ``kinds`` (None: all): ``{"dev": system -> kind ->
        {"R@1", "R@5", ...}, "dev_queries": n}``; ``model_dir`` holds the saved model."""
        ...
