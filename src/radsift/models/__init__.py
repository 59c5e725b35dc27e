"""Encoders (and, later, training recipes and the cross-encoder reranker)."""

from radsift.models.encoder import (
    model_fingerprint,
    DEFAULT_MODEL_NAME,
    Encoder,
    cached_encoder,
    default_model_path,
    resolve_model_path,
)

__all__ = ["model_fingerprint", "DEFAULT_MODEL_NAME", "Encoder", "cached_encoder", "default_model_path", "resolve_model_path"]
