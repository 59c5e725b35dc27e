"""Systems under test for ``radsift bench``: BM25, a dense encoder, their hybrid, a reranker.

A system ranks a set of candidate texts for a list of query texts::

    system.rank(queries, candidates, k=10) -> [[(candidate index, score), ...] per query]

Every protocol hands the same queries and candidates to every system, so systems are compared
on exactly the same items. Systems rank raw texts: there is no index, no metadata filter and no
negation-aware demotion (that demotion uses the labeler that makes the weak labels, so applying
it would let the judge grade its own answers).

Specs (command line ``--systems``, or a YAML file, see :func:`load_systems_file`):

- ``bm25``: bm25s (Lucene BM25, k1 1.5, b 0.75) over :func:`radsift.text.tokens.tokenize`
  (stems, negation words kept); a candidate sharing no term with the query is not retrieved;
- ``dense`` / ``dense:MODEL``: cosine of sentence-transformers embeddings (the packaged
  all-MiniLM-L6-v2 by default, or a local model folder);
- ``hybrid`` / ``hybrid:MODEL``: the convex combination of the min-max normalised dense and BM25
  scores (:func:`radsift.ranking.fusion.convex_combination`, dense weight 0.75), as ``radsift
  search --mode hybrid`` fuses them;
- ``hybrid-rrf`` / ``hybrid-rrf:MODEL``: reciprocal rank fusion (Cormack et al. 2009, k = 60) of
  the dense and BM25 rankings (``radsift search --mode hybrid-rrf``);
- ``rerank:[MODEL:]RERANKER``: the dense ranking of MODEL (default model if omitted), its top
  :data:`RERANK_DEPTH` re-scored by the cross-encoder folder RERANKER
  (:mod:`radsift.models.reranker`); the rest keep their dense order below them. In a YAML
  file ``depth:`` sets the number of reranked candidates;
- ``hybrid+rerank:[MODEL:]RERANKER``: the same over the hybrid ranking, as ``radsift search
  --rerank N`` reranks in its default (hybrid) mode. In a YAML file: ``first_stage: hybrid``.

Any spec may be named: ``--systems mine=dense:runs/model`` (the name labels tables and
plots). Model folders are checked before any work starts. A folder written by
:class:`radsift.models.hashing.HashingEncoder` loads as that encoder (fast smoke runs, tests).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from radsift.errors import ConfigError

KINDS = ("bm25", "dense", "hybrid", "hybrid-rrf", "rerank")
# First stages a reranker can re-score; ``hybrid+rerank:...`` names the hybrid one.
FIRST_STAGES = ("dense", "hybrid")
BM25_PARAMS = {"k1": 1.5, "b": 0.75, "method": "lucene"}
# RRF fuses at least this many candidates from each side, like radsift.search.
HYBRID_DEPTH = 200
# Candidates a reranker re-scores per query (the first stage's top).
RERANK_DEPTH = 50
# Queries scored per matrix product: bounds memory on large candidate sets.
QUERY_CHUNK = 256
RERANKER_MODULE = "radsift.models.reranker"
DEFAULT_MODEL_KEY = "default"

Ranking = list[tuple[int, float]]


# ---------------------------------------------------------------------------------------------
# Specs
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SystemSpec:
    """What to build: a kind, its model folders and a display name.

    Attributes:
        kind: ``bm25``, ``dense``, ``hybrid``, ``hybrid-rrf`` or ``rerank``.
        model: Bi-encoder folder (None = the packaged default model); unused by ``bm25``.
        reranker: Cross-encoder folder (``rerank`` only).
        name: Display name (default: derived from the spec, see :attr:`label`).
        source: Where the spec came from (for error messages).
        depth: Candidates the reranker re-scores (``rerank`` only).
        first_stage: ``dense`` or ``hybrid``: the ranking a reranker re-scores (``rerank`` only).
    """

    kind: str
    model: str | None = None
    reranker: str | None = None
    name: str | None = None
    source: str = "--systems"
    depth: int = RERANK_DEPTH
    first_stage: str = "dense"

    @property
    def label(self) -> str:
        """The name shown in tables and plots."""
        if self.name:
            return self.name
        if self.kind == "bm25":
            return "bm25"
        if self.kind == "rerank":
            base = f"{self._kind_token()}:{Path(self.reranker or '?').name}"
            return base if self.model is None else f"{base}+{Path(self.model).name}"
        return self.kind if self.model is None else f"{self.kind}:{Path(self.model).name}"

    def _kind_token(self) -> str:
        return "hybrid+rerank" if self.kind == "rerank" and self.first_stage == "hybrid" else self.kind

    def describe(self) -> str:
        """The spec in ``--systems`` syntax."""
        parts = [self._kind_token()] + [p for p in (self.model, self.reranker) if p]
        return ":".join(parts)


def parse_system(text: str, source: str = "--systems") -> SystemSpec:
    """Parse ``bm25``, ``dense[:MODEL]``, ``hybrid[:MODEL]``, ``[hybrid+]rerank:[MODEL:]RERANKER``, optionally ``NAME=SPEC``.

    Raises:
        ConfigError: Unknown kind, empty name or path, or a path given to ``bm25``.
    """
    raw = str(text).strip()
    name = None
    head, eq, tail = raw.partition("=")
    if eq and head and not any(c in head for c in ":/\\"):
        name, raw = head.strip(), tail.strip()
    kind, colon, rest = raw.partition(":")
    kind = kind.strip().lower()
    first_stage = "dense"
    if kind.endswith("+rerank") and kind[: -len("+rerank")] in FIRST_STAGES:
        kind, first_stage = "rerank", kind[: -len("+rerank")]
    if kind not in KINDS:
        raise ConfigError(
            f"{source}: unknown system {text!r}: use bm25, dense[:MODEL], hybrid[:MODEL], hybrid-rrf[:MODEL] or "
            "[hybrid+]rerank:[MODEL:]RERANKER"
        )
    if colon and not rest.strip():
        raise ConfigError(f"{source}: system {text!r}: empty model path after ':'")
    model = reranker = None
    if kind == "bm25":
        if colon:
            raise ConfigError(f"{source}: system {text!r}: bm25 takes no model")
    elif kind == "rerank":
        if not colon:
            raise ConfigError(f"{source}: system {text!r}: give the reranker folder, rerank:[MODEL:]RERANKER")
        parts = rest.split(":")
        if len(parts) > 2 or not all(p.strip() for p in parts):
            raise ConfigError(f"{source}: system {text!r}: expected rerank:RERANKER or rerank:MODEL:RERANKER")
        reranker = parts[-1].strip()
        model = parts[0].strip() if len(parts) == 2 else None
    elif colon:
        model = rest.strip()
    if model in ("default",):
        model = None
    return SystemSpec(kind=kind, model=model, reranker=reranker, name=name, source=source, first_stage=first_stage)


_YAML_KEYS = {"name", "kind", "model", "reranker", "spec", "depth", "first_stage"}


def load_systems_file(path: str | Path) -> list[SystemSpec]:
    """Read systems from YAML: a list (or ``systems:`` list) of specs or mappings.

    Example::

        systems:
          - bm25
          - dense                       # the packaged default model
          - name: trained
            kind: dense
            model: runs/minilm-radiology   # relative paths: from this file's folder
          - tuned=hybrid:runs/minilm-radiology

    Raises:
        ConfigError: The file is missing, not YAML, or an item is malformed (names the item).
    """
    import yaml

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: systems file not found")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not a valid YAML systems file ({exc})") from None
    if isinstance(data, Mapping):
        data = data.get("systems")
    if not isinstance(data, list) or not data:
        raise ConfigError(f"{path}: expected a non-empty list of systems (or a 'systems:' list)")
    specs = []
    for i, item in enumerate(data, 1):
        where = f"{path}: system #{i}"
        if isinstance(item, str):
            spec = parse_system(item, source=where)
        elif isinstance(item, Mapping):
            unknown = set(item) - _YAML_KEYS
            if unknown:
                raise ConfigError(f"{where}: unknown keys {sorted(unknown)} (known: {sorted(_YAML_KEYS)})")
            if "spec" in item:
                spec = parse_system(str(item["spec"]), source=where)
            elif "kind" in item:
                text = str(item["kind"])
                for key in ("model", "reranker"):
                    if item.get(key):
                        text += f":{item[key]}"
                spec = parse_system(text, source=where)
            else:
                raise ConfigError(f"{where}: give 'kind' (bm25, dense, hybrid, hybrid-rrf, rerank) or 'spec'")
            if item.get("name"):
                spec = dataclasses.replace(spec, name=str(item["name"]))
            if "depth" in item:
                depth = item["depth"]
                if spec.kind != "rerank" or isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
                    raise ConfigError(f"{where}: 'depth' is a positive integer, for rerank systems only")
                spec = dataclasses.replace(spec, depth=depth)
            if "first_stage" in item:
                stage = item["first_stage"]
                if spec.kind != "rerank" or stage not in FIRST_STAGES:
                    raise ConfigError(f"{where}: 'first_stage' is one of {list(FIRST_STAGES)}, for rerank systems only")
                spec = dataclasses.replace(spec, first_stage=stage)
        else:
            raise ConfigError(f"{where}: expected a string or a mapping, got {type(item).__name__}")
        specs.append(_relative_to(spec, path.parent))
    return specs


def _relative_to(spec: SystemSpec, folder: Path) -> SystemSpec:
    def fix(p: str | None) -> str | None:
        if p is None or Path(p).expanduser().is_absolute():
            return p
        return str(folder / p)

    return dataclasses.replace(spec, model=fix(spec.model), reranker=fix(spec.reranker))


def check_specs(specs: Sequence[SystemSpec], injected: Sequence[str] = ()) -> None:
    """Fail early: unique names, model folders that exist, a reranker module when asked for.

    Args:
        specs: The systems.
        injected: Model keys (paths as written, or ``"default"``) whose encoder or reranker is
            given ready-made: their folders are not checked.

    Raises:
        ConfigError: Naming the system and the path or problem.
    """
    from radsift.models import resolve_model_path

    if not specs:
        raise ConfigError("no system to evaluate: give --systems bm25 --systems dense (or --systems-file)")
    seen: dict[str, SystemSpec] = {}
    for spec in specs:
        if spec.label in seen:
            raise ConfigError(
                f"two systems are named {spec.label!r} ({seen[spec.label].describe()} and {spec.describe()}): "
                "name them, e.g. --systems mine=dense:PATH"
            )
        seen[spec.label] = spec
        for path in (spec.model, spec.reranker):
            if path is None or path in injected:
                continue
            if not Path(path).expanduser().exists():
                raise ConfigError(f"{spec.source}: system {spec.label!r}: model path does not exist: {path}")
            if path == spec.model:
                try:
                    resolve_model_path(path)
                except ConfigError as exc:
                    raise ConfigError(f"{spec.source}: system {spec.label!r}: {exc}") from None
        if spec.kind == "rerank":
            if importlib.util.find_spec(RERANKER_MODULE) is None:
                raise ConfigError(
                    f"{spec.source}: system {spec.label!r}: the reranker is not available yet "
                    f"({RERANKER_MODULE} is not installed in this version)"
                )
            if spec.reranker not in injected and not (Path(spec.reranker).expanduser() / "config.json").is_file():
                raise ConfigError(f"{spec.source}: system {spec.label!r}: {spec.reranker} is not a cross-encoder "
                                  "folder (no config.json)")


# ---------------------------------------------------------------------------------------------
# Encoders and their embedding caches
# ---------------------------------------------------------------------------------------------
def load_encoder(model: str | None, threads: int | None = None):
    """Load a bi-encoder folder (None = packaged default); HashingEncoder folders load as such."""
    from radsift.models import Encoder, resolve_model_path

    if model is not None:
        marker = Path(model).expanduser() / "modules.json"
        try:
            info = json.loads(marker.read_text(encoding="utf-8")) if marker.is_file() else None
        except (OSError, ValueError):
            info = None
        if isinstance(info, dict) and "radsift_hashing_encoder" in info:
            from radsift.models.hashing import HashingEncoder

            return HashingEncoder(marker.parent, dim=int(info["radsift_hashing_encoder"]))
    resolve_model_path(model)
    return Encoder.load(model, threads=threads)


class EmbeddingCache:
    """Embeddings of one encoder, each distinct text encoded once per run.

    Protocols share texts (the same sentences are candidates of several protocols, the same
    query phrasings come back): every text is encoded the first time it is asked for.
    """

    def __init__(self, encoder: Any, batch_size: int = 64, progress: bool = True) -> None:
        self.encoder = encoder
        self.batch_size = batch_size
        self.progress = progress
        self._rows: dict[str, int] = {}
        self._blocks: list[np.ndarray] = []
        self._matrix: np.ndarray | None = None

    @property
    def name(self) -> str:
        return str(getattr(self.encoder, "name", type(self.encoder).__name__))

    def __len__(self) -> int:
        return len(self._rows)

    def embed(self, texts: Sequence[str], desc: str = "encoding") -> np.ndarray:
        """``(len(texts), dim)`` unit vectors, encoding only texts not seen before."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._rows]
        if missing:
            vecs = self.encoder.encode(
                missing, batch_size=self.batch_size, progress=self.progress and len(missing) > 256,
                desc=f"{desc} ({self.name})",
            )
            vecs = np.ascontiguousarray(vecs, dtype=np.float32)
            start = len(self._rows)
            for i, t in enumerate(missing):
                self._rows[t] = start + i
            self._blocks.append(vecs)
            self._matrix = None
        if self._matrix is None:
            self._matrix = np.concatenate(self._blocks) if self._blocks else np.zeros((0, 1), np.float32)
            self._blocks = [self._matrix]
        rows = np.fromiter((self._rows[t] for t in texts), dtype=np.int64, count=len(texts))
        return self._matrix[rows]


# ---------------------------------------------------------------------------------------------
# Ranking helpers
# ---------------------------------------------------------------------------------------------
def texts_key(texts: Sequence[str]) -> str:
    """Identity of a candidate list (for per-run caches)."""
    digest = hashlib.sha1(usedforsecurity=False)
    for t in texts:
        digest.update(t.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return f"{len(texts)}:{digest.hexdigest()}"


def group_max(scores: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """Per-group maximum of each row: ``(nq, n_candidates) -> (nq, n_groups)``; empty groups -inf.

    A report's score is its best sentence's score (how ``radsift search --level report`` ranks).
    """
    groups = np.asarray(groups, dtype=np.int64)
    out = np.full((scores.shape[0], n_groups), -np.inf, dtype=np.float32)
    if groups.size == 0:
        return out
    order = np.argsort(groups, kind="stable")
    g = groups[order]
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    out[:, g[starts]] = np.maximum.reduceat(scores[:, order], starts, axis=1)
    return out


def top_ranking(row: np.ndarray, k: int | None, valid: np.ndarray | None = None) -> Ranking:
    """Best-first ``(index, score)`` of one score row; ties by lower index; only ``valid`` entries."""
    idx = np.flatnonzero(valid) if valid is not None else np.arange(row.shape[0])
    vals = row[idx]
    if k is not None and k < idx.size:
        part = np.argpartition(-vals, k - 1)[:k]
        # Keep every entry tied with the k-th so that the tie-break below is by index.
        cut = vals[part].min()
        keep = np.flatnonzero(vals >= cut)
        idx, vals = idx[keep], vals[keep]
    order = np.lexsort((idx, -vals))
    if k is not None:
        order = order[:k]
    return list(zip(idx[order].tolist(), vals[order].astype(np.float64).tolist()))


def _check_inputs(queries: Sequence[str], candidates: Sequence[str], groups, exclude) -> None:
    if groups is not None and len(groups) != len(candidates):
        raise ValueError(f"groups has {len(groups)} entries for {len(candidates)} candidates")
    if exclude is not None and len(exclude) != len(queries):
        raise ValueError(f"exclude has {len(exclude)} entries for {len(queries)} queries")


# ---------------------------------------------------------------------------------------------
# Systems
# ---------------------------------------------------------------------------------------------
class System:
    """Base class: ranks candidate texts for query texts.

    Attributes:
        name: Display name (unique in a run).
        kind: ``bm25``, ``dense``, ``hybrid``, ``hybrid-rrf`` or ``rerank``.
        has_similarity: True when :meth:`similarity` gives a query-text similarity (cosine),
            which the embedding-separation protocol needs.
    """

    name: str = "system"
    kind: str = "system"
    has_similarity: bool = False

    def describe(self) -> str:
        """One line for the report."""
        return self.kind

    def scores(self, queries: Sequence[str], candidates: Sequence[str]) -> np.ndarray:
        """``(len(queries), len(candidates))`` scores, higher is better."""
        raise NotImplementedError

    def valid(self, scores: np.ndarray) -> np.ndarray:
        """Which scored candidates count as retrieved (all finite ones by default)."""
        return np.isfinite(scores)

    def similarity(self, queries: Sequence[str], texts: Sequence[str]) -> np.ndarray:
        """Pairwise ``sim(queries[i], texts[i])`` (systems with :attr:`has_similarity`)."""
        raise NotImplementedError(f"{self.name}: no similarity")

    def rank(
        self,
        queries: Sequence[str],
        candidates: Sequence[str],
        k: int | None = None,
        groups: Sequence[int] | np.ndarray | None = None,
        exclude: Sequence[Sequence[int]] | None = None,
    ) -> list[Ranking]:
        """Rank the candidates for each query.

        Args:
            queries: Query texts.
            candidates: Candidate texts (the same list for every query).
            k: Ranking depth (None = every retrieved candidate).
            groups: Optional candidate -> group index (e.g. sentence -> report): then groups
                are ranked, each scored by its best candidate, and indices are group indices.
            exclude: Optional per-query indices (candidates, or groups when grouped) that must
                not be ranked (e.g. the query's own report).

        Returns:
            Per query, ``(index, score)`` pairs best first (ties by lower index).
        """
        _check_inputs(queries, candidates, groups, exclude)
        n_groups = int(np.max(groups)) + 1 if groups is not None and len(groups) else 0
        out: list[Ranking] = []
        for start in range(0, len(queries), QUERY_CHUNK):
            chunk = list(queries[start : start + QUERY_CHUNK])
            s = self.scores(chunk, candidates)
            if groups is not None:
                valid = self.valid(s)
                s = group_max(np.where(valid, s, -np.inf).astype(np.float32), np.asarray(groups), n_groups)
            ok = self.valid(s) if groups is None else np.isfinite(s)
            for i in range(len(chunk)):
                v = ok[i]
                if exclude is not None and len(exclude[start + i]):
                    v = v.copy()
                    v[np.asarray(list(exclude[start + i]), dtype=np.int64)] = False
                out.append(top_ranking(s[i], k, v))
        return out


class DenseSystem(System):
    """Cosine similarity of bi-encoder embeddings (unit vectors: a dot product).

    Args:
        name: Display name.
        encoder: Anything with ``encode(texts, batch_size=, progress=, desc=)`` returning unit
            vectors (:class:`radsift.models.Encoder`, :class:`~radsift.models.hashing.HashingEncoder`).
        cache: A shared :class:`EmbeddingCache` (systems on the same model share one).
        model: The model folder, for the report.
    """

    kind = "dense"
    has_similarity = True

    def __init__(self, name: str, encoder: Any = None, *, cache: EmbeddingCache | None = None,
                 model: str | None = None, batch_size: int = 64, progress: bool = True) -> None:
        if cache is None:
            if encoder is None:
                raise ValueError("give an encoder or a cache")
            cache = EmbeddingCache(encoder, batch_size=batch_size, progress=progress)
        self.name = name
        self.cache = cache
        self.model = model
        self._candidates: dict[str, np.ndarray] = {}

    def describe(self) -> str:
        where = f" ({self.model})" if self.model else ""
        return f"dense: cosine of {self.cache.name} embeddings{where}"

    def embed_candidates(self, candidates: Sequence[str]) -> np.ndarray:
        key = texts_key(candidates)
        if key not in self._candidates:
            self._candidates[key] = self.cache.embed(candidates, desc=f"{len(candidates)} candidates")
        return self._candidates[key]

    def scores(self, queries: Sequence[str], candidates: Sequence[str]) -> np.ndarray:
        c = self.embed_candidates(candidates)
        q = self.cache.embed(queries, desc=f"{len(queries)} queries")
        return q @ c.T

    def similarity(self, queries: Sequence[str], texts: Sequence[str]) -> np.ndarray:
        q = self.cache.embed(queries, desc="queries")
        t = self.cache.embed(texts, desc="texts")
        return np.einsum("ij,ij->i", q, t, dtype=np.float64) if len(texts) else np.zeros(0)


class BM25System(System):
    """Lucene BM25 (bm25s, k1 1.5, b 0.75) over radsift's tokenizer; no term in common = not retrieved."""

    kind = "bm25"

    def __init__(self, name: str = "bm25") -> None:
        self.name = name
        self._indexes: dict[str, Any] = {}

    def describe(self) -> str:
        p = BM25_PARAMS
        return f"bm25: bm25s {p['method']} BM25 (k1={p['k1']}, b={p['b']}) over radsift.text.tokens (stems, negation words kept)"

    def _index(self, candidates: Sequence[str]):
        key = texts_key(candidates)
        if key not in self._indexes:
            import bm25s

            from radsift.text.tokens import tokenize

            retriever = bm25s.BM25(**BM25_PARAMS)
            tokens = [tokenize(t) for t in candidates]
            # bm25s cannot index an empty corpus; a one-token stub keeps it working (never matched).
            retriever.index(tokens if any(tokens) else [[""]] * max(1, len(tokens)), show_progress=False)
            self._indexes[key] = retriever
        return self._indexes[key]

    def scores(self, queries: Sequence[str], candidates: Sequence[str]) -> np.ndarray:
        from radsift.text.tokens import tokenize

        retriever = self._index(candidates)
        vocab = retriever.vocab_dict
        out = np.zeros((len(queries), len(candidates)), dtype=np.float32)
        for i, q in enumerate(queries):
            tokens = [t for t in tokenize(q) if t in vocab]
            if tokens and len(candidates):
                out[i] = np.asarray(retriever.get_scores(tokens), dtype=np.float32)[: len(candidates)]
        return out

    def valid(self, scores: np.ndarray) -> np.ndarray:
        return scores > 0


class HybridSystem(System):
    """The convex combination of the dense and BM25 scores of every candidate, as ``radsift search``
    fuses them (:func:`radsift.ranking.fusion.convex_combination`)."""

    kind = "hybrid"

    def __init__(self, name: str, dense: DenseSystem, bm25: BM25System) -> None:
        self.name = name
        self.dense = dense
        self.bm25 = bm25

    def describe(self) -> str:
        from radsift.ranking.fusion import DENSE_WEIGHT

        return (f"hybrid: {DENSE_WEIGHT} x min-max of [{self.dense.describe()}] + {1 - DENSE_WEIGHT:g} x "
                "min-max of [bm25]")

    def scores(self, queries: Sequence[str], candidates: Sequence[str]) -> np.ndarray:
        from radsift.ranking.fusion import convex_combination

        return convex_combination(self.dense.scores(queries, candidates), self.bm25.scores(queries, candidates))


class RRFHybridSystem(HybridSystem):
    """Reciprocal rank fusion of a dense and a BM25 ranking (each cut at ``max(k, 200)``, or full)."""

    kind = "hybrid-rrf"

    def describe(self) -> str:
        from radsift.ranking.fusion import RRF_K

        return f"hybrid-rrf: reciprocal rank fusion (k={RRF_K}) of [{self.dense.describe()}] and [bm25]"

    def scores(self, queries: Sequence[str], candidates: Sequence[str]) -> np.ndarray:
        raise NotImplementedError("reciprocal rank fusion ranks; it has no per-candidate score matrix")

    def rank(
        self,
        queries: Sequence[str],
        candidates: Sequence[str],
        k: int | None = None,
        groups: Sequence[int] | np.ndarray | None = None,
        exclude: Sequence[Sequence[int]] | None = None,
    ) -> list[Ranking]:
        """See :meth:`System.rank`."""
        from radsift.ranking.fusion import reciprocal_rank_fusion

        depth = None if k is None else max(k, HYBRID_DEPTH)
        dense = self.dense.rank(queries, candidates, depth, groups, exclude)
        lexical = self.bm25.rank(queries, candidates, depth, groups, exclude)
        out = []
        for d, b in zip(dense, lexical):
            rows, scores = reciprocal_rank_fusion(
                [np.array([i for i, _ in d], dtype=np.int64), np.array([i for i, _ in b], dtype=np.int64)]
            )
            if k is not None:
                rows, scores = rows[:k], scores[:k]
            out.append(list(zip(rows.tolist(), scores.astype(np.float64).tolist())))
        return out


class RerankSystem(System):
    """A first-stage ranking whose top ``depth`` candidates a cross-encoder re-scores.

    The reranked head is ordered by the fused score of :func:`radsift.models.reranker.fuse`
    (the cross-encoder's share is the reranker's ``weight``; ties keep the first-stage
    order); the candidates after it keep their first-stage order, with scores shifted below
    the head. With ``groups`` (reports of sentences), a group is re-scored on its best
    first-stage candidate, the sentence ``radsift search`` would show.

    Args:
        name: Display name.
        first: The first stage (a :class:`DenseSystem` or :class:`HybridSystem`).
        reranker: Anything with ``score(query, texts) -> array`` (:class:`radsift.models.reranker.Reranker`).
        depth: Candidates re-scored per query.
        progress: Show a progress bar over queries.
    """

    kind = "rerank"

    def __init__(self, name: str, first: System, reranker: Any, depth: int = RERANK_DEPTH,
                 progress: bool = True) -> None:
        self.name = name
        self.first = first
        self.reranker = reranker
        self.depth = depth
        self.progress = progress
        # Scores single candidates (to pick a report's sentence): RRF has no scores, its dense side has.
        self._unit_scorer = first.dense if isinstance(first, RRFHybridSystem) else first

    def describe(self) -> str:
        where = getattr(self.reranker, "path", None)
        return f"rerank: top {self.depth} of [{self.first.describe()}] re-scored by the cross-encoder {where or ''}".rstrip()

    def rank(
        self,
        queries: Sequence[str],
        candidates: Sequence[str],
        k: int | None = None,
        groups: Sequence[int] | np.ndarray | None = None,
        exclude: Sequence[Sequence[int]] | None = None,
    ) -> list[Ranking]:
        """See :meth:`System.rank`."""
        from radsift.models.reranker import fused_order
        from radsift.progress import progress_bar

        _check_inputs(queries, candidates, groups, exclude)
        first = self.first.rank(queries, candidates, None if k is None else max(k, self.depth), groups, exclude)
        members = None
        if groups is not None:
            g = np.asarray(groups, dtype=np.int64)
            order = np.argsort(g, kind="stable")
            bounds = np.searchsorted(g[order], np.arange(int(g.max()) + 2 if g.size else 1))
            members = [order[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)]
        out: list[Ranking] = []
        with progress_bar(disable=None if self.progress else True) as bar:
            task = bar.add_task(f"reranking ({self.name})", total=len(queries))
            for qi, ranking in enumerate(first):
                head, tail = ranking[: self.depth], ranking[self.depth :]
                if members is None:
                    texts = [candidates[i] for i, _ in head]
                else:
                    row = self._unit_scorer.scores([queries[qi]], candidates)[0] if head else None
                    texts = [candidates[int(members[i][np.argmax(row[members[i]])])] for i, _ in head]
                scores, by_score = fused_order([s for _, s in head], self.reranker.score(queries[qi], texts),
                                               getattr(self.reranker, "weight", 1.0))
                reranked = [(head[i][0], float(scores[i])) for i in by_score]
                if tail:
                    floor = (min(scores) if len(scores) else 0.0) - 1.0
                    shift = tail[0][1] - floor
                    reranked += [(i, s - shift) for i, s in tail]
                out.append(reranked if k is None else reranked[:k])
                bar.advance(task)
        return out


def build_systems(
    specs: Sequence[SystemSpec | str],
    *,
    encoders: Mapping[str | None, Any] | None = None,
    rerankers: Mapping[str, Any] | None = None,
    threads: int | None = None,
    batch_size: int = 64,
    progress: bool = True,
) -> list[System]:
    """Build systems from specs, sharing one encoder and embedding cache per model folder.

    Args:
        specs: :class:`SystemSpec` or spec strings.
        encoders: Optional ready encoders by model (``None`` or ``"default"`` for the default
            model, else the model path as written in the spec): tests inject a
            :class:`~radsift.models.hashing.HashingEncoder` here.
        rerankers: Optional ready rerankers by folder (as written in the spec).
        threads: torch threads for encoding.
        batch_size: Encoding batch size.
        progress: Show encoding progress bars.

    Raises:
        ConfigError: See :func:`check_specs`.
    """
    specs = [parse_system(s) if isinstance(s, str) else s for s in specs]
    injected = {(DEFAULT_MODEL_KEY if k is None else str(k)): v for k, v in (encoders or {}).items()}
    check_specs(specs, injected=tuple(injected) + tuple(rerankers or {}))
    caches: dict[str, EmbeddingCache] = {}
    shared_bm25 = BM25System()

    def cache_for(model: str | None) -> EmbeddingCache:
        key = model or DEFAULT_MODEL_KEY
        if key not in caches:
            encoder = injected.get(key) or load_encoder(model, threads=threads)
            caches[key] = EmbeddingCache(encoder, batch_size=batch_size, progress=progress)
        return caches[key]

    systems: list[System] = []
    for spec in specs:
        if spec.kind == "bm25":
            bm25 = BM25System(spec.label)
            bm25._indexes = shared_bm25._indexes  # one index per candidate set for all BM25 users
            systems.append(bm25)
        elif spec.kind == "dense":
            systems.append(DenseSystem(spec.label, cache=cache_for(spec.model), model=spec.model))
        elif spec.kind in ("hybrid", "hybrid-rrf"):
            dense = DenseSystem(f"{spec.label}/dense", cache=cache_for(spec.model), model=spec.model)
            fused = HybridSystem if spec.kind == "hybrid" else RRFHybridSystem
            systems.append(fused(spec.label, dense, shared_bm25))
        else:  # rerank: check_specs made sure the module and the folder exist
            reranker = (rerankers or {}).get(spec.reranker)
            if reranker is None:
                from radsift.models.reranker import Reranker

                reranker = Reranker.load(spec.reranker, threads=threads)
            first: System = DenseSystem(f"{spec.label}/dense", cache=cache_for(spec.model), model=spec.model)
            if spec.first_stage == "hybrid":
                first = HybridSystem(f"{spec.label}/hybrid", first, shared_bm25)
            systems.append(RerankSystem(spec.label, first, reranker, depth=spec.depth, progress=progress))
    return systems
