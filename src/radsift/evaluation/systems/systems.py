"""The systems ``radsift bench`` compares; every one ranks through :mod:`radsift.ranking`.

A system ranks a set of candidate texts for a list of query texts::

    system.rank(queries, candidates, k=10) -> [[(candidate index, score), ...] per query]

The scores come from a bi-encoder (:class:`DenseSystem`) and BM25 (:class:`BM25System`); the
ranking itself (fusion, reading tiers, top-k, the best unit per report) is
:func:`radsift.ranking.rank` / :func:`~radsift.ranking.rank_groups`, the functions ``radsift
search`` calls, so a bench figure measures the ranking users get.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Sequence

import numpy as np

from radsift.evaluation.systems.cache import EmbeddingCache, load_encoder, texts_key
from radsift.evaluation.systems.specs import DEFAULT_MODEL_KEY, SystemSpec, check_specs, parse_system
from radsift.models.encoder import resolve_model_path
from radsift.models.reranker import Reranker
from radsift.models.settings import settings_of_model
from radsift.progress import progress_bar
from radsift.ranking import (BM25_PARAMS, DENSE_WEIGHT, NEEDS_BM25, NEEDS_DENSE, RRF_K, STATUS_CODES, bm25_scores,
                             build_bm25_texts, rank, rank_groups, stating)
from radsift.ranking import rerank as rerank_core
from radsift.ranking.alone import alone_keys, own_codes, present_pairs, with_alone
from radsift.ranking.places import location_flags, unit_side_flags, with_compartments
from radsift.search.normals import said_by_labels, said_of_texts
from radsift.search.reading import normal_key_wanted, read_query, reading_tiers
from radsift.text import locations
from radsift.text.tokens import tokenize

Ranking = list[tuple[int, float]]
# Queries scored per matrix product: bounds memory on large candidate sets.
QUERY_CHUNK = 256


def _check_inputs(queries: Sequence[str], candidates: Sequence[str], groups, exclude) -> None:
    if groups is not None and len(groups) != len(candidates):
        raise ValueError(f"groups has {len(groups)} entries for {len(candidates)} candidates")
    if exclude is not None and len(exclude) != len(queries):
        raise ValueError(f"exclude has {len(exclude)} entries for {len(queries)} queries")


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

    def similarity(self, queries: Sequence[str], texts: Sequence[str]) -> np.ndarray:
        """Pairwise ``sim(queries[i], texts[i])`` (systems with :attr:`has_similarity`)."""
        raise NotImplementedError(f"{self.name}: no similarity")

    def rank(self, queries: Sequence[str], candidates: Sequence[str], k: int | None = None,
             groups: Sequence[int] | np.ndarray | None = None,
             exclude: Sequence[Sequence[int]] | None = None) -> list[Ranking]:
        """Rank the candidates for each query.

        Args:
            queries: Query texts.
            candidates: Candidate texts (the same list for every query).
            k: Ranking depth (None = every retrieved candidate).
            groups: Optional candidate -> group index (e.g. sentence -> report): then groups
                are ranked, each standing on its best candidate (as ``radsift search --level
                report``), and indices are group indices.
            exclude: Optional per-query indices (candidates, or groups when grouped) that must
                not be ranked (e.g. the query's own report).

        Returns:
            Per query, ``(index, score)`` pairs best first (ties by lower index).
        """
        return [[(int(i), float(s)) for i, _, s in zip(*r)] for r in self.rank_units(queries, candidates, k, groups,
                                                                                      exclude)]

    def rank_units(self, queries, candidates, k=None, groups=None, exclude=None):
        """Like :meth:`rank`, per query ``(indices, unit rows, scores)`` arrays (the unit each index stands on)."""
        raise NotImplementedError


class RankedSystem(System):
    """Dense and/or BM25 scores ranked by :func:`radsift.ranking.rank` in one of its modes.

    Args:
        name: Display name.
        mode: ``dense``, ``bm25``, ``hybrid`` or ``hybrid-rrf``.
        dense: The :class:`DenseSystem` giving the dense scores (modes that use them).
        bm25: The :class:`BM25System` giving the BM25 scores (modes that use them).
        negation: Rank negation-aware by the query's reading (:func:`radsift.search.reading.reading_tiers`),
            as ``radsift search`` does by default: the same reading first, the opposite last.
            On the weak-label protocols this is circular (the labeler that demotes also made the
            qrels); on free-text queries with their own qrels it is not.
    """

    def __init__(self, name: str, mode: str, dense: "DenseSystem | None" = None, bm25: "BM25System | None" = None,
                 negation: bool = False) -> None:
        self.name = name
        self.kind = mode
        self.mode = mode
        self.dense = dense
        self.bm25 = bm25
        self.negation = negation
        self._labels: dict[str, tuple] = {}
        self._labeler = None
        self._alpha: float | None = None

    @property
    def alpha(self) -> float:
        """The hybrid's dense share: the dense model's own (:mod:`radsift.models.settings`), as
        ``radsift search`` uses it."""
        if self._alpha is None:
            self._alpha = DENSE_WEIGHT if self.dense is None else dense_settings(self.dense).dense_weight
        return self._alpha

    def describe(self) -> str:
        parts = {"dense": lambda: self.dense.describe(), "bm25": lambda: self.bm25.describe(),
                 "hybrid": lambda: (f"hybrid: {self.alpha:g} x min-max of [{self.dense.describe()}] + "
                                    f"{1 - self.alpha:g} x min-max of [bm25]"),
                 "hybrid-rrf": lambda: f"hybrid-rrf: reciprocal rank fusion (k={RRF_K}) of [{self.dense.describe()}] "
                                       "and [bm25]"}
        text = parts[self.mode]()
        if self.negation:
            text += ("; negation-aware (reading tiers: the query's reading first, the opposite last; circular on "
                     "weak-label protocols)")
        return text

    # -- negation-aware tiers ------------------------------------------------------------------
    @property
    def labeler(self):
        if self._labeler is None:
            from radsift.labels.labeler import Labeler

            self._labeler = Labeler()
        return self._labeler

    def _candidate_labels(self, candidates: Sequence[str]) -> dict:
        """Stored-label arrays, the stem index and the side flags of a candidate set (once per set)."""
        key = texts_key(candidates)
        if key not in self._labels:
            rows, findings, status, codes = [], [], [], {}
            for row, mentions in enumerate(self.labeler.label_many(list(candidates), progress=False)):
                for m in {(m.finding, m.status) for m in mentions}:
                    rows.append(row)
                    findings.append(codes.setdefault(m[0], len(codes)))
                    status.append(STATUS_CODES[m[1]])
            stems: dict[str, list[int]] = {}
            for row, text in enumerate(candidates):
                for t in set(tokenize(text)):
                    stems.setdefault(t, []).append(row)
            self._labels[key] = {"labels": (np.array(rows, np.int64), np.array(findings, np.int64),
                                            np.array(status, np.int64)),
                                 "codes": codes, "stems": stems}
        return self._labels[key]

    def tiers(self, query: str, candidates: Sequence[str], groups: np.ndarray | None = None) -> np.ndarray | None:
        """Reading tier of every candidate, as ``radsift search`` computes it (None when not negation-aware)."""
        read = self._reading(query, candidates, groups)
        return None if read is None else read.tiers

    def _reading(self, query: str, candidates: Sequence[str], groups: np.ndarray | None = None):
        """The query's :class:`~radsift.search.reading.ReadingTiers` over the candidates (None: not negation-aware)."""
        if not self.negation:
            return None
        info = self._candidate_labels(candidates)
        stems, n = info["stems"], len(candidates)

        def with_terms(terms) -> np.ndarray:
            sets = [set(stems.get(t, ())) for t in terms]
            return np.array(sorted(set.intersection(*sets)) if sets else [], dtype=np.int64)

        def texts(rows) -> dict[int, str]:
            return {r: candidates[r] for r in rows}

        def places():
            if "places" not in info:
                regions, sided = location_flags(n, with_terms, texts)
                info["places"] = with_compartments(regions, with_terms, texts), sided  # as the search reads them
            return info["places"]

        def sides(chambers: bool = False):
            return unit_side_flags(n, lambda s: stems.get(s, []), texts, chambers,
                                   places if locations.enabled() else None)

        def said():
            # what every candidate states, as the search reads its sentences (:func:`radsift.search.normals.sentence_said`)
            if "said" not in info:
                row, _, status = info["labels"]
                out, labeled = said_by_labels(n, row, status)
                unread = np.flatnonzero(~labeled)
                out[unread] = said_of_texts([candidates[r] for r in unread])
                info["said"] = out
            return info["said"]

        query = " ".join(query.split())
        reading = read_query(query, self.labeler)
        below = normal_key_wanted(reading, query)
        read = reading_tiers(
            reading, self.labeler, n_units=n, labels=info["labels"],
            finding_codes=info["codes"], sentence_texts=texts,
            open_candidates=with_terms, side_flags=lambda: sides(reading.chamber),
            location_flags=lambda: places()[0],
            group_of=groups, classes=True,
            said=said if below and not reading.alone else None)  # as the search: normal-only units last
        if below and reading.alone and read.tiers is not None:  # as the search: fewest other findings first
            read = replace(read, tiers=with_alone(read.tiers, self._alone_keys(info, reading, groups, n)),
                           literal=read.reading)
        return read

    def _alone_keys(self, info: dict, reading, groups: np.ndarray | None, n: int) -> np.ndarray:
        """:func:`radsift.ranking.alone.alone_keys` of the candidates, a group standing for a report."""
        row, finding, status = info["labels"]
        report = np.arange(n, dtype=np.int64) if groups is None else np.asarray(groups, dtype=np.int64)
        n_reports = int(report.max(initial=-1)) + 1
        pair_reports, offsets = present_pairs(report[row], finding, status, len(info["codes"]))
        own = own_codes(getattr(self.labeler, "lexicon", None), reading, info["codes"])
        return alone_keys(pair_reports, offsets, own, n_reports, report)

    # -- ranking ---------------------------------------------------------------------------------
    def score_parts(self, queries: Sequence[str], candidates: Sequence[str]) -> dict[str, np.ndarray]:
        out = {}
        if NEEDS_DENSE[self.mode]:
            out["dense"] = self.dense.scores(queries, candidates)
        if NEEDS_BM25[self.mode]:
            out["bm25"] = self.bm25.scores(queries, candidates)
        return out

    def rank_units(self, queries, candidates, k=None, groups=None, exclude=None):
        _check_inputs(queries, candidates, groups, exclude)
        group_of = None if groups is None else np.asarray(groups, dtype=np.int64)
        out = []
        for start in range(0, len(queries), QUERY_CHUNK):
            chunk = list(queries[start:start + QUERY_CHUNK])
            parts = self.score_parts(chunk, candidates)
            for i, query in enumerate(chunk):
                mask = None
                if exclude is not None and len(exclude[start + i]):
                    banned = np.asarray(list(exclude[start + i]), dtype=np.int64)
                    if group_of is None:
                        mask = np.ones(len(candidates), dtype=bool)
                        mask[banned] = False
                    else:
                        mask = ~np.isin(group_of, banned)
                scores = {name: m[i] for name, m in parts.items()}
                read = self._reading(query, candidates, group_of)
                tiers = None if read is None else read.tiers
                if tiers is not None:
                    scores["keep"] = stating(tiers, read.slots)
                if self.mode == "hybrid":
                    scores["alpha"] = self.alpha
                if group_of is None:
                    rows, vals = rank(self.mode, k, mask=mask, tiers=tiers, **scores)
                    out.append((rows, rows, vals))
                else:
                    out.append(rank_groups(self.mode, k, group_of, mask=mask, tiers=tiers, **scores))
        return out


def dense_settings(dense: "DenseSystem"):
    """The search settings of a dense system's model: its folder's, the packaged model's, or those of the
    encoder's folder (a test's hashing encoder)."""
    folder = resolve_model_path(dense.model) if dense.model else getattr(dense.cache.encoder, "path", None)
    return settings_of_model(folder)


class DenseSystem(RankedSystem):
    """Cosine similarity of bi-encoder embeddings (unit vectors: a dot product).

    Args:
        name: Display name.
        encoder: Anything with ``encode(texts, batch_size=, progress=, desc=)`` returning unit
            vectors (:class:`radsift.models.Encoder`, :class:`~radsift.models.hashing.HashingEncoder`).
        cache: A shared :class:`EmbeddingCache` (systems on the same model share one).
        model: The model folder, for the report.
        negation: See :class:`RankedSystem`.
    """

    has_similarity = True

    def __init__(self, name: str, encoder: Any = None, *, cache: EmbeddingCache | None = None,
                 model: str | None = None, batch_size: int = 64, progress: bool = True, negation: bool = False) -> None:
        if cache is None:
            if encoder is None:
                raise ValueError("give an encoder or a cache")
            cache = EmbeddingCache(encoder, batch_size=batch_size, progress=progress)
        super().__init__(name, "dense", negation=negation)
        self.dense = self
        self.cache = cache
        self.model = model
        self._candidates: dict[str, np.ndarray] = {}

    def describe(self) -> str:
        where = f" ({self.model})" if self.model else ""
        text = f"dense: cosine of {self.cache.name} embeddings{where}"
        return text + ("; negation-aware" if self.negation else "")

    def embed_candidates(self, candidates: Sequence[str]) -> np.ndarray:
        key = texts_key(candidates)
        if key not in self._candidates:
            self._candidates[key] = self.cache.embed(candidates, desc=f"{len(candidates)} candidates")
        return self._candidates[key]

    def scores(self, queries: Sequence[str], candidates: Sequence[str]) -> np.ndarray:
        """``(len(queries), len(candidates))`` cosines."""
        c = self.embed_candidates(candidates)
        q = self.cache.embed(queries, desc=f"{len(queries)} queries")
        return q @ c.T

    def similarity(self, queries: Sequence[str], texts: Sequence[str]) -> np.ndarray:
        q = self.cache.embed(queries, desc="queries")
        t = self.cache.embed(texts, desc="texts")
        return np.einsum("ij,ij->i", q, t, dtype=np.float64) if len(texts) else np.zeros(0)


class BM25System(RankedSystem):
    """BM25 as radsift indexes it (:mod:`radsift.ranking.bm25`); no term in common = not retrieved."""

    def __init__(self, name: str = "bm25", negation: bool = False, indexes: dict | None = None) -> None:
        super().__init__(name, "bm25", negation=negation)
        self.bm25 = self
        # One index per candidate set, shared by every system that uses BM25.
        self._indexes: dict[str, Any] = {} if indexes is None else indexes

    def describe(self) -> str:
        p = BM25_PARAMS
        text = (f"bm25: bm25s {p['method']} BM25 (k1={p['k1']}, b={p['b']}) over radsift.text.tokens "
                "(stems, negation words kept)")
        return text + ("; negation-aware" if self.negation else "")

    def scores(self, queries: Sequence[str], candidates: Sequence[str]) -> np.ndarray:
        """``(len(queries), len(candidates))`` BM25 scores (0 = no term in common)."""
        key = texts_key(candidates)
        if key not in self._indexes:
            self._indexes[key] = build_bm25_texts(candidates)
        retriever = self._indexes[key]
        return np.stack([bm25_scores(retriever, q, len(candidates)) for q in queries]) if len(queries) else \
            np.zeros((0, len(candidates)), dtype=np.float32)


class RerankSystem(System):
    """A first-stage ranking whose top ``depth`` candidates a cross-encoder re-scores.

    The head is ordered and scored by :func:`radsift.ranking.rerank` (the fused score of the
    cross-encoder, its share the reranker's ``weight``, and the first stage; the tail keeps its
    order below), exactly as ``radsift search --rerank`` does. With ``groups`` (reports of
    sentences), a group is re-scored on its best first-stage candidate, the sentence ``radsift
    search`` would show.

    Args:
        name: Display name.
        first: The first stage (a :class:`RankedSystem`, dense or hybrid).
        reranker: Anything with ``score(query, texts) -> array`` (:class:`radsift.models.reranker.Reranker`).
        depth: Candidates re-scored per query.
        progress: Show a progress bar over queries.
    """

    kind = "rerank"

    def __init__(self, name: str, first: RankedSystem, reranker: Any, depth: int = 50,
                 progress: bool = True) -> None:
        self.name = name
        self.first = first
        self.reranker = reranker
        self.depth = depth
        self.progress = progress

    def describe(self) -> str:
        where = getattr(self.reranker, "path", None)
        return f"rerank: top {self.depth} of [{self.first.describe()}] re-scored by the cross-encoder {where or ''}".rstrip()

    def rank_units(self, queries, candidates, k=None, groups=None, exclude=None):
        first = self.first.rank_units(queries, candidates, None if k is None else max(k, self.depth), groups, exclude)
        weight = getattr(self.reranker, "weight", 1.0)
        out = []
        with progress_bar(disable=None if self.progress else True) as bar:
            task = bar.add_task(f"reranking ({self.name})", total=len(queries))
            for qi, (ids, units, scores) in enumerate(first):
                head = units[:self.depth]
                tiers = self.first.tiers(queries[qi], candidates,
                                         None if groups is None else np.asarray(groups, dtype=np.int64))
                cross = self.reranker.score(queries[qi], [candidates[int(u)] for u in head])
                positions, new = rerank_core(scores[:self.depth], cross, weight,
                                             None if tiers is None else tiers[head], scores[self.depth:])
                order = np.asarray(positions, dtype=np.int64)
                ids, units = ids[order], units[order]
                if k is not None:
                    ids, units, new = ids[:k], units[:k], new[:k]
                out.append((ids, units, new))
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
    bm25_indexes: dict[str, Any] = {}

    def cache_for(model: str | None) -> EmbeddingCache:
        key = model or DEFAULT_MODEL_KEY
        if key not in caches:
            encoder = injected.get(key) or load_encoder(model, threads=threads)
            caches[key] = EmbeddingCache(encoder, batch_size=batch_size, progress=progress)
        return caches[key]

    def dense(spec: SystemSpec, name: str, negation: bool = False) -> DenseSystem:
        return DenseSystem(name, cache=cache_for(spec.model), model=spec.model, negation=negation)

    systems: list[System] = []
    for spec in specs:
        if spec.kind == "bm25":
            systems.append(BM25System(spec.label, negation=spec.negation, indexes=bm25_indexes))
        elif spec.kind == "dense":
            systems.append(dense(spec, spec.label, spec.negation))
        elif spec.kind in ("hybrid", "hybrid-rrf"):
            systems.append(RankedSystem(spec.label, spec.kind, dense(spec, f"{spec.label}/dense"),
                                        BM25System(indexes=bm25_indexes), negation=spec.negation))
        else:  # rerank: check_specs made sure the module and the folder exist
            reranker = (rerankers or {}).get(spec.reranker)
            if reranker is None:
                reranker = Reranker.load(spec.reranker, threads=threads)
            first: RankedSystem = dense(spec, f"{spec.label}/dense")
            if spec.first_stage == "hybrid":
                first = RankedSystem(f"{spec.label}/hybrid", "hybrid", first, BM25System(indexes=bm25_indexes))
            systems.append(RerankSystem(spec.label, first, reranker, depth=spec.depth, progress=progress))
    return systems
