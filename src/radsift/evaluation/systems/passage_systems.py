"""Passage scorers of ``radsift bench --protocol passages``: each scores a query's own candidate passages.

CAPR's protocol (Grundmann et al.) gives every query its own short list of candidates, so these
systems score ``(query, candidate rows)`` rather than rank one shared list; the order is then
:func:`radsift.ranking.top_k` (the ranking core), ties broken by candidate position.

Specs (``--systems``, optionally ``NAME=SPEC``):

- ``bm25``: Lucene BM25 over the whole passage pool (:mod:`radsift.ranking.bm25`);
- ``tfidf``: cosine of sublinear TF-IDF vectors (radsift's tokenizer, idf from the pool);
- ``dense[:MODEL]``: bi-encoder cosine (packaged MiniLM by default);
- ``hybrid[:MODEL]``: the engine's convex fusion of that bi-encoder's cosine and BM25 over each query's
  candidates (:func:`radsift.ranking.fusion.convex_combination`, its default dense weight 0.75, not tuned here);
- ``poly:MODEL``: a poly-encoder folder (:mod:`radsift.models.poly_encoder`);
- ``cross:RERANKER``: a cross-encoder scoring every candidate;
- ``rerank:[FIRST:]RERANKER``: the cross-encoder re-scores the top :data:`RERANK_TOP` of a first
  stage (``dense`` by default; ``FIRST`` is ``dense``, a model folder, ``poly=FOLDER``, or
  ``hybrid`` / ``hybrid=MODEL`` for the hybrid system) through the function passage search calls
  (:func:`radsift.models.reranker.rerank_head`: the head by the fused score, the reranker's weight 0.3
  of :data:`radsift.ranking.RERANK_WEIGHT`); the others keep their first-stage order below them.

A passage is read as the index reads a section unit: a passage longer than one window is split into
overlapping windows of :data:`radsift.text.aspects.WINDOW_WORDS` words sharing
:data:`~radsift.text.aspects.WINDOW_OVERLAP` (:func:`radsift.text.aspects.section_windows`), each read as
far as the model reads it (256 word pieces for MiniLM, or ``max_tokens``); a passage scores by its best
window (:func:`radsift.ranking.best_per_owner`), for a bi-encoder as the index scores a section unit
(its first window's vector and its later windows', :func:`radsift.search.scoring.best_window`) and for a
poly-encoder as its cached codes do.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from radsift.errors import ConfigError
from radsift.evaluation.systems.cache import load_encoder
from radsift.evaluation.systems.specs import split_system
from radsift.models.poly_encoder import PolyEncoder, is_poly_encoder
from radsift.models.reranker import Reranker, rerank_head
from radsift.ranking import best_per_owner, bm25_scores, build_bm25_texts, convex_combination
from radsift.text.aspects import section_windows
from radsift.text.tokens import tokenize

KINDS = ("bm25", "tfidf", "dense", "hybrid", "poly", "cross", "rerank")
#: Candidates the cross-encoder re-scores in ``rerank:`` systems.
RERANK_TOP = 16


@dataclass(frozen=True)
class PassageSpec:
    """A passage system to build: kind, model folders, display name."""

    kind: str
    model: str | None = None
    reranker: str | None = None
    name: str | None = None
    first_poly: bool = False
    first_hybrid: bool = False

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        if self.kind in ("bm25", "tfidf"):
            return self.kind
        if self.kind in ("dense", "hybrid") and self.model is None:
            return self.kind
        if self.kind == "rerank":
            return f"rerank:{Path(self.reranker or '?').name}"
        return f"{self.kind}:{Path(self.model or self.reranker or '?').name}"


def parse_passage_system(text: str) -> PassageSpec:
    """Parse a ``--systems`` entry of the passages protocol (see the module docstring).

    Raises:
        ConfigError: Unknown kind or a missing folder argument.
    """
    name, kind, colon, rest = split_system(text)
    rest = rest.strip()
    if kind not in KINDS:
        raise ConfigError(f"--systems {text!r}: the passages protocol knows {', '.join(KINDS)} "
                          "(dense[:MODEL], hybrid[:MODEL], poly:MODEL, cross:RERANKER, rerank:[FIRST:]RERANKER)")
    if kind in ("bm25", "tfidf"):
        if colon:
            raise ConfigError(f"--systems {text!r}: {kind} takes no model")
        return PassageSpec(kind, name=name)
    if kind in ("dense", "hybrid"):
        return PassageSpec(kind, model=rest or None, name=name)
    if not rest:
        raise ConfigError(f"--systems {text!r}: give the model folder, {kind}:FOLDER")
    if kind == "poly":
        return PassageSpec(kind, model=rest, name=name)
    if kind == "cross":
        return PassageSpec(kind, reranker=rest, name=name)
    first, _, reranker = rest.rpartition(":")
    first_poly = first.startswith("poly=")
    first_hybrid = first == "hybrid" or first.startswith("hybrid=")
    if first_poly or first_hybrid:
        first = first.partition("=")[2]
    return PassageSpec("rerank", model=(first or None) if first != "dense" else None, reranker=reranker, name=name,
                       first_poly=first_poly, first_hybrid=first_hybrid)


def check_passage_specs(specs: Sequence[PassageSpec]) -> None:
    """Fail before any work: unique names, folders that exist."""
    seen = set()
    for s in specs:
        if s.label in seen:
            raise ConfigError(f"two systems are named {s.label!r}: name them, e.g. --systems mine=dense:PATH")
        seen.add(s.label)
        for p in (s.model, s.reranker):
            if p is not None and not Path(p).expanduser().is_dir():
                raise ConfigError(f"--systems {s.label}: model folder not found: {p}")
        if (s.kind == "poly" or s.first_poly) and not is_poly_encoder(s.model):
            raise ConfigError(f"--systems {s.label}: {s.model} is not a poly-encoder folder")


class PassageSystem:
    """Scores candidate passages of a fixed pool for queries.

    Call :meth:`prepare` once with the pool, then :meth:`score` per query kind.
    """

    name = "system"
    kind = "system"

    def prepare(self, passages: Sequence[str]) -> None:
        self.passages = list(passages)

    def score(self, queries: Sequence[str], candidates: Sequence[Sequence[int]]) -> list[np.ndarray]:
        """Per query, one score per candidate row (higher is better)."""
        raise NotImplementedError


class BM25Passages(PassageSystem):
    kind = "bm25"

    def __init__(self, name: str = "bm25") -> None:
        self.name = name

    def prepare(self, passages: Sequence[str]) -> None:
        super().prepare(passages)
        self.retriever = build_bm25_texts(self.passages)

    def full_scores(self, query: str) -> np.ndarray:
        return bm25_scores(self.retriever, query, len(self.passages))

    def score(self, queries, candidates):
        return [self.full_scores(q)[np.asarray(c, dtype=np.int64)] for q, c in zip(queries, candidates)]


class TfidfPassages(PassageSystem):
    """Cosine of sublinear TF-IDF vectors (1 + log tf, idf = log(N / df) + 1), radsift's tokenizer."""

    kind = "tfidf"

    def __init__(self, name: str = "tfidf") -> None:
        self.name = name

    def _vector(self, tokens: Sequence[str]) -> dict[int, float]:
        vec = {self.vocab[t]: (1 + math.log(c)) * self.idf[self.vocab[t]]
               for t, c in Counter(tokens).items() if t in self.vocab}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        return {k: v / norm for k, v in vec.items()}

    def prepare(self, passages):
        from scipy.sparse import csr_matrix

        super().prepare(passages)
        toks = [tokenize(p) for p in self.passages]
        df = Counter(t for ts in toks for t in set(ts))
        self.vocab = {t: i for i, t in enumerate(sorted(df))}
        n = len(toks)
        self.idf = np.array([math.log(n / df[t]) + 1 for t in sorted(df)])
        rows, cols, vals = [], [], []
        for r, ts in enumerate(toks):
            for c, v in self._vector(ts).items():
                rows.append(r), cols.append(c), vals.append(v)
        self.matrix = csr_matrix((vals, (rows, cols)), shape=(n, len(self.vocab)), dtype=np.float64)

    def score(self, queries, candidates):
        out = []
        for q, c in zip(queries, candidates):
            qv = self._vector(tokenize(q))
            idx = np.asarray(c, dtype=np.int64)
            sub = self.matrix[idx]
            s = np.zeros(len(idx))
            for col, w in qv.items():
                s += w * sub[:, col].toarray().ravel()
            out.append(s.astype(np.float32))
        return out


class _LazyWindows(PassageSystem):
    """Encodes a passage's windows (:func:`radsift.text.aspects.section_windows`) the first time a query
    has it among its candidates (a sampled run encodes only the passages its queries need)."""

    def prepare(self, passages):
        super().prepare(passages)
        self._rows: dict[int, list[int]] = {}  # passage row -> rows of its windows in self._store
        self._store: list = []

    def _encode(self, texts):
        raise NotImplementedError

    def _units(self, encoded: list, owner: np.ndarray, n: int) -> tuple[list, np.ndarray]:
        """What is kept of ``n`` passages' encoded windows, and each kept unit's passage: every window."""
        return encoded, owner

    def _ensure(self, rows: Iterable[int]) -> None:
        missing = [int(r) for r in dict.fromkeys(rows) if int(r) not in self._rows]
        if not missing:
            return
        texts, owner = section_windows([self.passages[r] for r in missing])
        units, owner = self._units(self._encode(texts), np.asarray(owner, dtype=np.int64), len(missing))
        base = len(self._store)
        self._store.extend(units)
        for k, o in enumerate(owner):
            self._rows.setdefault(missing[int(o)], []).append(base + k)

    def _window_table(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Stored rows of the candidates' windows and, for each, its position among the candidates."""
        rows, pos = [], []
        for p, r in enumerate(idx):
            for w in self._rows[int(r)]:
                rows.append(w)
                pos.append(p)
        return np.asarray(rows, dtype=np.int64), np.asarray(pos, dtype=np.int64)


class DensePassages(_LazyWindows):
    """Bi-encoder cosine with the passage's best window (as the index scores a section unit)."""

    kind = "dense"

    def __init__(self, name: str, encoder, batch_size: int = 64) -> None:
        self.name, self.encoder, self.batch_size = name, encoder, batch_size

    def _encode(self, texts):
        return list(self.encoder.encode(texts, batch_size=self.batch_size, progress=len(texts) > 256,
                                        desc="encoding passages"))

    def score(self, queries, candidates):
        self._ensure(r for c in candidates for r in c)
        matrix = np.asarray(self._store, dtype=np.float32)
        qvecs = self.encoder.encode(list(dict.fromkeys(queries)), batch_size=self.batch_size)
        qrow = {q: i for i, q in enumerate(dict.fromkeys(queries))}
        out = []
        for q, c in zip(queries, candidates):
            idx = np.asarray(c, dtype=np.int64)
            rows, pos = self._window_table(idx)
            out.append(best_per_owner(matrix[rows] @ qvecs[qrow[q]], pos, len(idx)))
        return out


class HybridPassages(PassageSystem):
    """The engine's convex fusion of a bi-encoder's cosine and BM25 over each query's candidates."""

    kind = "hybrid"

    def __init__(self, name: str, dense: DensePassages, bm25: BM25Passages) -> None:
        self.name, self.dense, self.bm25 = name, dense, bm25

    def prepare(self, passages):
        super().prepare(passages)
        self.dense.prepare(passages)
        self.bm25.prepare(passages)

    def score(self, queries, candidates):
        return [convex_combination(d, b) for d, b in zip(self.dense.score(queries, candidates),
                                                          self.bm25.score(queries, candidates))]


class PolyPassages(_LazyWindows):
    """Poly-encoder: passage codes computed once per window, queries attend over them; a passage
    scores by its best window (as the index's cached codes)."""

    kind = "poly"

    def __init__(self, name: str, poly, batch_size: int = 32) -> None:
        self.name, self.poly, self.batch_size = name, poly, batch_size

    def _encode(self, texts):
        return list(self.poly.encode_passages(texts, batch_size=self.batch_size))

    def score(self, queries, candidates):
        self._ensure(r for c in candidates for r in c)
        codes = np.asarray(self._store, dtype=np.float32)
        qv = self.poly.encode_queries(list(queries))
        out = []
        for i, c in enumerate(candidates):
            idx = np.asarray(c, dtype=np.int64)
            rows, pos = self._window_table(idx)
            out.append(best_per_owner(self.poly.score(qv[i:i + 1], codes[rows])[0], pos, len(idx)))
        return out


class CrossPassages(PassageSystem):
    """Cross-encoder on (query, passage) pairs; with a first stage, only its top ``top`` are re-scored."""

    kind = "cross"

    def __init__(self, name: str, reranker, first: PassageSystem | None = None, top: int = RERANK_TOP) -> None:
        self.name, self.reranker, self.first, self.top = name, reranker, first, top
        self.kind = "rerank" if first is not None else "cross"

    def prepare(self, passages):
        super().prepare(passages)
        if self.first is not None and not hasattr(self.first, "passages"):
            self.first.prepare(passages)

    def score(self, queries, candidates):
        firsts = self.first.score(queries, candidates) if self.first is not None else None
        out = []
        for i, (q, c) in enumerate(zip(queries, candidates)):
            idx = np.asarray(c, dtype=np.int64)
            if firsts is None:
                out.append(self.reranker.score(q, [self.passages[j] for j in idx]))
                continue
            # Passage search's rerank: the head by the fused score (the reranker's weight: for a cross-encoder
            # the one chosen on development data, else 0.3), the rest below it in first-stage order.
            positions, fused = rerank_head(q, [self.passages[j] for j in idx], firsts[i], self.reranker, self.top)
            s = np.empty(idx.size, dtype=np.float64)
            s[positions] = fused
            out.append(s.astype(np.float32))
        return out


def build_passage_systems(specs: Sequence[PassageSpec], *, threads: int | None = None,
                          batch_size: int = 64, encoders: dict | None = None,
                          max_tokens: int | None = None) -> list[PassageSystem]:
    """Build the systems of ``specs`` (model folders loaded once each).

    ``max_tokens``: word pieces of a passage the models read (None = each model's own length).
    """
    encoders = dict(encoders or {})
    polys: dict[str, object] = {}

    def encoder(model):
        if model not in encoders:
            encoders[model] = load_encoder(model, threads=threads)
            if max_tokens and hasattr(getattr(encoders[model], "model", None), "max_seq_length"):
                encoders[model].model.max_seq_length = int(max_tokens)
        return encoders[model]

    def poly(model):
        if model not in polys:
            polys[model] = PolyEncoder.load(model, threads=threads)
            if max_tokens:
                polys[model].model.max_seq_length = int(max_tokens)
        return polys[model]

    def hybrid(name, model):
        return HybridPassages(name, DensePassages("dense", encoder(model), batch_size), BM25Passages())

    out: list[PassageSystem] = []
    for s in specs:
        if s.kind == "bm25":
            out.append(BM25Passages(s.label))
        elif s.kind == "tfidf":
            out.append(TfidfPassages(s.label))
        elif s.kind == "dense":
            out.append(DensePassages(s.label, encoder(s.model), batch_size))
        elif s.kind == "hybrid":
            out.append(hybrid(s.label, s.model))
        elif s.kind == "poly":
            out.append(PolyPassages(s.label, poly(s.model)))
        else:
            rr = Reranker.load(s.reranker, threads=threads, max_length=max_tokens or 256)
            first = None
            if s.kind == "rerank":
                first = (PolyPassages("first", poly(s.model)) if s.first_poly
                         else hybrid("first", s.model) if s.first_hybrid
                         else DensePassages("first", encoder(s.model), batch_size))
            out.append(CrossPassages(s.label, rr, first))
    return out
