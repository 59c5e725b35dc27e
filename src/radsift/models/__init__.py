"""The models: sentence encoders loaded from local folders only (:mod:`.encoder`; the packaged
all-MiniLM-L6-v2 by default), a deterministic no-torch encoder for tests (:mod:`.hashing`), the
cross-encoder reranker (:mod:`.reranker`) and the training recipes (:mod:`.training`).

Importing this package loads neither torch nor a model; the encoder names are re-exported here.
"""

from radsift.models.encoder import (
    model_fingerprint,
    DEFAULT_MODEL_NAME,
    Encoder,
    cached_encoder,
    default_model_path,
    resolve_model_path,
)

__all__ = ["model_fingerprint", "DEFAULT_MODEL_NAME", "Encoder", "cached_encoder", "default_model_path", "resolve_model_path"]
