"""Weight-level regularisers for findings unseen in training: frozen embeddings and WiSE-FT.

Trained on the queries of some findings only, a bi-encoder drifts: the word pieces of the
training findings move, the others do not, and "no pneumonitis" ends up next to the trained
"No pneumothorax." sentences. Two cheap counter-measures, both off by default (on Open-i's split
by finding neither lifted negative-query mAP, and WiSE-FT lowered the separation: see the README):

* :func:`freeze_embeddings` keeps the token, position and type embedding tables of the base
  model fixed, so every word keeps its pretrained neighbourhood and only the transformer
  layers learn how negation and findings combine;
* :func:`interpolate_with_base` is the weight-space ensemble of WiSE-FT (Wortsman et al.,
  "Robust fine-tuning of zero-shot models", CVPR 2022): ``(1 - w) * trained + w * base``
  applied to every floating-point weight after training.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from radsift.errors import ConfigError

if TYPE_CHECKING:
    import torch


def transformer_embeddings(model) -> torch.nn.Module:
    """The embedding block (word, position, token-type) of a SentenceTransformer's first module.

    Raises:
        ConfigError: The first module has no Hugging Face model with ``embeddings``.
    """
    auto = getattr(model[0], "auto_model", None)
    embeddings = getattr(auto, "embeddings", None)
    if embeddings is None:
        raise ConfigError("freeze_embeddings: the model's first module has no transformer embeddings to freeze")
    return embeddings


def freeze_embeddings(model) -> int:
    """Stop gradients to the embedding tables; returns how many parameters were frozen."""
    n = 0
    for p in transformer_embeddings(model).parameters():
        p.requires_grad_(False)
        n += p.numel()
    return n


def interpolate_with_base(model, base_path: str | Path, weight: float) -> int:
    """Set each floating-point weight of ``model`` to ``(1 - weight) * own + weight * base``.

    Args:
        model: The trained SentenceTransformer (changed in place).
        base_path: The folder of the model training started from (same architecture).
        weight: The base model's share, ``0 <= weight < 1``.

    Returns:
        The number of tensors interpolated.

    Raises:
        ConfigError: ``weight`` out of range, or the base model's weights do not match.
    """
    import torch
    from sentence_transformers import SentenceTransformer

    if not 0.0 <= weight < 1.0:
        raise ConfigError(f"base_weight must lie in [0, 1), not {weight}")
    if weight == 0.0:
        return 0
    base = SentenceTransformer(str(base_path), device="cpu", local_files_only=True).state_dict()
    n = 0
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            if not tensor.is_floating_point():
                continue  # e.g. position ids
            other = base.get(name)
            if other is None or other.shape != tensor.shape:
                raise ConfigError(f"base_weight: the base model at {base_path} has no weight {name!r} of shape "
                                  f"{tuple(tensor.shape)}: it is not the model training started from")
            tensor.mul_(1.0 - weight).add_(other.to(tensor.dtype), alpha=weight)
            n += 1
    return n
