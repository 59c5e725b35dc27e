"""The poly-encoder (Humeau et al., ICLR 2020), as CAPR compares it with bi- and cross-encoders.

A passage is read once into its token vectors; ``m`` learned *codes* attend over them, giving
``m`` passage vectors. A query is one vector (the bi-encoder's mean pooling); it attends over the
passage's ``m`` vectors, and the score is the query's dot product with that attended mix (on
unit vectors: a cosine in [-1, 1]). Passages can be encoded ahead of time (``m`` vectors each),
so the poly-encoder sits between the bi-encoder (one vector per passage) and the cross-encoder
(one joint pass per pair).

Folder layout (written by :meth:`PolyEncoder.save`, read by :meth:`PolyEncoder.load`)::

    MODEL/                 a sentence-transformers folder: the shared transformer + mean pooling
    MODEL/poly_encoder.json  {"type": "poly-encoder", "codes": 16, "dim": 384}
    MODEL/poly_codes.safetensors  the (codes, dim) code embeddings

Usage::

    poly = PolyEncoder.load("models/ea-poly")
    codes = poly.encode_passages(["Treatment includes ..."])      # (n, m, dim)
    q = poly.encode_queries(["gout treatment"])                   # (q, dim)
    scores = poly.score(q, codes)                                 # (q, n)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np

from radsift.errors import ConfigError
from radsift.models.encoder import resolve_model_path, set_threads

CONFIG_FILE = "poly_encoder.json"
CODES_FILE = "poly_codes.safetensors"
#: Codes per passage when none is given (CAPR and Humeau et al. use 16 to 360; 16 keeps CPU cost low).
DEFAULT_CODES = 16


def is_poly_encoder(path: str | Path) -> bool:
    """Whether ``path`` is a poly-encoder folder."""
    return (Path(path).expanduser() / CONFIG_FILE).is_file()


def _torch():
    import torch

    return torch


class PolyHead:
    """The code embeddings and the two attention steps, as torch operations (used in training too)."""

    def __init__(self, codes: "torch.Tensor") -> None:  # noqa: F821
        self.codes = codes

    def passage_codes(self, token_vectors, attention_mask):
        """``(n, m, d)``: each code's attention-weighted mix of a passage's token vectors (padding masked)."""
        torch = _torch()
        att = torch.einsum("md,nld->nml", self.codes, token_vectors)
        att = att.masked_fill(attention_mask[:, None, :] == 0, float("-inf"))
        return torch.einsum("nml,nld->nmd", att.softmax(dim=-1), token_vectors)

    @staticmethod
    def scores(queries, passage_codes):
        """``(q, n)``: each query attends over each passage's codes; dot product with the mix (unit vectors)."""
        torch = _torch()
        q = torch.nn.functional.normalize(queries, dim=-1)
        c = torch.nn.functional.normalize(passage_codes, dim=-1)
        w = torch.einsum("qd,nmd->qnm", q, c).softmax(dim=-1)
        mix = torch.einsum("qnm,nmd->qnd", w, c)
        return torch.einsum("qd,qnd->qn", q, torch.nn.functional.normalize(mix, dim=-1))


class PolyEncoder:
    """A loaded (or new) poly-encoder: a SentenceTransformer plus ``m`` code embeddings.

    Attributes:
        model: The SentenceTransformer (transformer + mean pooling) shared by queries and passages.
        codes: ``(m, dim)`` torch parameter.
        path: The folder it was loaded from (None when new).
    """

    def __init__(self, model, codes, path: Path | None = None) -> None:
        self.model = model
        self.codes = codes
        self.path = path
        self.head = PolyHead(codes)

    @property
    def name(self) -> str:
        return self.path.name if self.path else "poly-encoder"

    @property
    def m(self) -> int:
        return int(self.codes.shape[0])

    @property
    def dim(self) -> int:
        return int(self.codes.shape[1])

    @classmethod
    def new(cls, base_model: str | None = None, codes: int = DEFAULT_CODES, *, seed: int = 0) -> "PolyEncoder":
        """A poly-encoder on a bi-encoder folder (None = the packaged MiniLM) with ``codes`` fresh codes.

        Codes start as token vectors of the base model's vocabulary (random words, seeded): a
        scale the attention can use from the first step.
        """
        torch = _torch()
        from sentence_transformers import SentenceTransformer

        if codes < 1:
            raise ConfigError(f"poly_codes: must be at least 1, not {codes}")
        path = resolve_model_path(base_model)
        st = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        emb = st[0].auto_model.get_input_embeddings().weight.detach()
        gen = torch.Generator().manual_seed(seed)
        rows = torch.randint(1000, emb.shape[0], (codes,), generator=gen)
        return cls(st, torch.nn.Parameter(emb[rows].clone()))

    @classmethod
    def load(cls, path: str | Path, *, threads: int | None = None) -> "PolyEncoder":
        """Load a poly-encoder folder (local files only).

        Raises:
            ConfigError: Not a poly-encoder folder, or its files do not agree.
        """
        torch = _torch()
        from safetensors.torch import load_file
        from sentence_transformers import SentenceTransformer

        path = Path(path).expanduser()
        if not is_poly_encoder(path):
            raise ConfigError(f"{path}: not a poly-encoder folder (no {CONFIG_FILE}); train one with "
                              "radsift train --recipe entity-aspect --model-type poly")
        try:
            info = json.loads((path / CONFIG_FILE).read_text(encoding="utf-8"))
            codes = load_file(str(path / CODES_FILE))["codes"]
        except (OSError, ValueError, KeyError) as exc:
            raise ConfigError(f"{path}: damaged poly-encoder files ({exc})") from None
        if info.get("type") != "poly-encoder" or list(codes.shape) != [info.get("codes"), info.get("dim")]:
            raise ConfigError(f"{path}: {CONFIG_FILE} says {info.get('codes')} codes of {info.get('dim')} "
                              f"dimensions, {CODES_FILE} holds {list(codes.shape)}")
        set_threads(threads)
        st = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        st.eval()
        return cls(st, torch.nn.Parameter(codes, requires_grad=False), path.resolve())

    def save(self, out: str | Path) -> Path:
        """Write the folder (the sentence-transformers model, the codes and their config)."""
        from safetensors.torch import save_file

        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        self.model.save(str(out))
        save_file({"codes": self.codes.detach().contiguous().cpu()}, str(out / CODES_FILE))
        (out / CONFIG_FILE).write_text(json.dumps({"type": "poly-encoder", "codes": self.m, "dim": self.dim},
                                                  indent=2) + "\n", encoding="utf-8")
        return out

    # ------------------------------------------------------------------ torch forward (training)
    def forward_queries(self, texts: Sequence[str]):
        """``(n, d)`` query vectors with gradients (mean pooling)."""
        return self.model(self.model.preprocess(list(texts)))["sentence_embedding"]

    def forward_passages(self, texts: Sequence[str]):
        """``(n, m, d)`` passage code vectors with gradients."""
        out = self.model(self.model.preprocess(list(texts)))
        return self.head.passage_codes(out["token_embeddings"], out["attention_mask"])

    # ------------------------------------------------------------------ inference (NumPy out)
    def encode_queries(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """``(n, d)`` float32 query vectors."""
        torch = _torch()
        out = []
        with torch.inference_mode():
            for i in range(0, len(texts), batch_size):
                out.append(self.forward_queries(texts[i:i + batch_size]).float().numpy())
        return np.concatenate(out) if out else np.zeros((0, self.dim), dtype=np.float32)

    def encode_passages(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """``(n, m, d)`` float32 passage code vectors (texts sorted by length per batch to pad little)."""
        torch = _torch()
        order = np.argsort([len(t) for t in texts], kind="stable")
        out = np.zeros((len(texts), self.m, self.dim), dtype=np.float32)
        with torch.inference_mode():
            for i in range(0, len(texts), batch_size):
                idx = order[i:i + batch_size]
                out[idx] = self.forward_passages([texts[j] for j in idx]).float().numpy()
        return out

    def score(self, queries: np.ndarray, passage_codes: np.ndarray) -> np.ndarray:
        """``(q, n)`` float32 scores of query vectors against passage code vectors."""
        torch = _torch()
        with torch.inference_mode():
            return PolyHead.scores(torch.from_numpy(np.asarray(queries, dtype=np.float32)),
                                   torch.from_numpy(np.asarray(passage_codes, dtype=np.float32))).numpy()

    def score_texts(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Scores of one query against passage texts (encodes them: a reranker's use)."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        return self.score(self.encode_queries([query]), self.encode_passages(list(texts)))[0]
