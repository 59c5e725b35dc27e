"""``radsift.Index``: open an index and search it (dense, BM25 or hybrid; sentence or report level)."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from radsift.errors import ConfigError, IndexStoreError
from radsift.index.backends import create_backend, top_k
from radsift.index.store import IndexStore
from radsift.text.tokens import tokenize
from radsift.records import Hit, Report, Sentence
from radsift.search.aggregate import best_unit_per_report
from radsift.search.fusion import convex_combination, reciprocal_rank_fusion
from radsift.search.highlight import highlight_spans
from radsift.search.query import LEVELS, MODES, UNITS, check_choice, normalize_query, parse_where

# Hybrid fuses this many candidates from each side (at least; more when k is large).
HYBRID_DEPTH = 200
NEGATION = ("aware", "ignore")
_POLARITY = {"present": 1, "absent": -1}


def demote(scores: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """Move ``rows`` below every other unit, keeping their order among themselves."""
    if rows is None or not len(rows) or not len(scores):
        return scores
    scores = np.array(scores, dtype=np.float32, copy=True)
    scores[rows] -= float(scores.max() - scores.min()) + 1.0
    return scores


class Index:
    """A searchable radsift index.

    Example:
        >>> idx = Index.open("my-index")                              # doctest: +SKIP
        >>> for hit in idx.search("no pneumothorax", k=5, mode="hybrid"):  # doctest: +SKIP
        ...     print(hit.report_id, hit.score, hit.sentence.text)

    Args:
        store: The opened :class:`~radsift.index.IndexStore`.
        model: Model folder to encode queries with (None = the model that built the index).
        threads: torch threads for query encoding.
        backend: Vector backend name (``numpy``: exact, embedded).
        reranker: Cross-encoder folder (``radsift train --recipe rerank``) or a loaded
            :class:`~radsift.models.reranker.Reranker`, used by ``search(..., rerank=N)``.
    """

    def __init__(self, store: IndexStore, *, model: str | Path | None = None, threads: int | None = None,
                 backend: str = "numpy", encoder=None, reranker=None) -> None:
        self.store = store
        self._reranker = reranker
        self._model = model
        self._threads = threads
        self._backend_name = backend
        self._encoder = encoder
        self._labeler = None
        self._lock = threading.RLock()
        if model is not None and encoder is None:
            self._check_model(Path(model))

    @classmethod
    def open(cls, path: str | Path, *, model: str | Path | None = None, threads: int | None = None,
             backend: str = "numpy", encoder=None, reranker=None) -> "Index":
        """Open the live generation of the index at ``path`` (read-only)."""
        return cls(IndexStore.open(path), model=model, threads=threads, backend=backend, encoder=encoder,
                   reranker=reranker)

    @property
    def reranker(self):
        """The loaded cross-encoder (loaded on first use), or None when the index has none."""
        with self._lock:
            if isinstance(self._reranker, (str, Path)):  # a folder: load it once
                from radsift.models.reranker import Reranker

                self._reranker = Reranker.load(self._reranker, threads=self._threads)
        return self._reranker

    # -- properties --------------------------------------------------------------------------
    @property
    def path(self) -> Path:
        return self.store.index_dir

    @property
    def manifest(self):
        return self.store.manifest

    def stats(self) -> dict:
        """Counts, model and version of the live generation."""
        m = self.store.manifest
        return {"path": str(self.path), "format_version": m.format_version, "generation": m.generation,
                "model": m.model_name, "model_path": m.model_path, "dim": m.dim, "counts": dict(m.counts),
                "sections": list(m.sections), "metadata_keys": list(m.metadata_keys), "created": m.created,
                "updated": m.updated, "radsift_version": m.radsift_version}

    def get_report(self, report_id: str) -> Report | None:
        """The stored report, or None when the id is not in the index."""
        return self.store.get_report(str(report_id))

    def reload(self) -> bool:
        """Switch to the newest generation if a writer replaced it; True when something changed."""
        with self._lock:
            if self.store.is_current():
                return False
            fresh = IndexStore.open(self.path)
            if fresh.manifest.model_fingerprint != self.store.manifest.model_fingerprint:
                fresh.close()
                raise IndexStoreError(f"{self.path} was rebuilt with another model: restart to use it")
            # In-flight searches hold their own reference to the old store; it closes when they drop it.
            self.store = fresh
            return True

    # -- encoding ----------------------------------------------------------------------------
    def _check_model(self, path: Path) -> None:
        from radsift.models.encoder import model_fingerprint, resolve_model_path

        resolved = resolve_model_path(path)
        if model_fingerprint(resolved) != self.store.manifest.model_fingerprint:
            m = self.store.manifest
            raise IndexStoreError(
                f"{self.path} was built with model {m.model_name} ({m.model_path}), not {resolved}: "
                "query vectors from another model are meaningless here; rebuild the index with that model"
            )

    @property
    def encoder(self):
        """The query encoder, loaded on first dense query (BM25-only use never loads torch)."""
        if self._encoder is None:
            with self._lock:
                if self._encoder is None:
                    from radsift.models.encoder import Encoder, model_fingerprint

                    m = self.store.manifest
                    model = self._model
                    if model is None:
                        model = m.model_path if Path(m.model_path).is_dir() else m.model_name
                    enc = Encoder.load(model, threads=self._threads)
                    if model_fingerprint(Path(enc.path)) != m.model_fingerprint:
                        raise IndexStoreError(
                            f"{self.path} was built with model {m.model_name} ({m.model_path}), which is not "
                            f"available here; pass --model with that model's folder"
                        )
                    self._encoder = enc
        return self._encoder

    @property
    def labeler(self):
        """The lexicon labeler that labeled this index's sentences (loaded on first use)."""
        if self._labeler is None:
            with self._lock:
                if self._labeler is None:
                    from radsift.labels.labeler import Labeler

                    lexicon = self.store.manifest.lexicon
                    self._labeler = Labeler(None if lexicon in (None, "packaged:chest_xray") else lexicon)
        return self._labeler

    def query_findings(self, query: str) -> dict[str, str]:
        """Findings the query asks about, with the status it asks for (``present``/``absent``)."""
        if self.store.manifest.lexicon is None:
            return {}
        return {m.finding: m.status for m in self.labeler.label(query) if m.status in _POLARITY}

    def conflicting_units(self, query: str, store: IndexStore | None = None) -> np.ndarray | None:
        """Sentence rows that state the opposite of what the query asks about a finding.

        For "pneumothorax" these are sentences labeled "pneumothorax: absent" (and not also
        "present"); for "no pleural effusion", sentences that affirm an effusion. Negation-aware
        ranking places them below every other sentence.
        """
        store = store or self.store
        wanted = self.query_findings(query)
        if not wanted:
            return None
        labels = store.labels()
        codes = {f: i for i, f in enumerate(store.manifest.findings)}
        out = []
        for finding, status in wanted.items():
            code = codes.get(finding)
            if code is None:
                continue
            sel = labels.finding == code
            polarity = _POLARITY[status]
            opposite = labels.row[sel & (labels.status == -polarity)]
            same = labels.row[sel & (labels.status == polarity)]
            out.append(np.setdiff1d(opposite, same))
        return np.unique(np.concatenate(out)).astype(np.int64) if out else None

    def _backend(self, store: IndexStore, kind: str):
        return store.cached(("backend", self._backend_name, kind),
                            lambda: create_backend(self._backend_name, store.units(kind).vectors))

    # -- scoring ---------------------------------------------------------------------------
    @staticmethod
    def _mask(store: IndexStore, kind: str, target: str | None, where: dict[str, list[str]]) -> np.ndarray | None:
        units = store.units(kind)
        mask = None
        if target and target not in ("report", "all"):
            code = store.section_code(target)
            mask = units.section_code == (code if code is not None else -1)
        if where:
            rows = store.report_rows_where(where)
            m2 = np.isin(units.report_row, rows)
            mask = m2 if mask is None else mask & m2
        return mask

    def _dense_scores(self, store: IndexStore, query: str, kind: str) -> np.ndarray:
        qv = self.encoder.encode_query(query)
        return self._backend(store, kind).scores(qv)

    @staticmethod
    def _bm25_scores(store: IndexStore, query: str, kind: str) -> np.ndarray:
        retriever = store.bm25(kind)
        vocab = retriever.vocab_dict
        tokens = [t for t in tokenize(query) if t in vocab]
        n = store.units(kind).report_row.shape[0]
        if not tokens or n == 0:
            return np.zeros(n, dtype=np.float32)
        return np.asarray(retriever.get_scores(tokens), dtype=np.float32)[:n]

    def rank_units(self, query: str, *, mode: str = "hybrid", unit: str = "sentence", n: int = 100,
                   target: str | None = None, where: Mapping | Iterable[str] | None = None,
                   query_vector: np.ndarray | None = None, negation: str = "aware") -> tuple[np.ndarray, np.ndarray]:
        """Best-first unit rows and scores for a query (the building block of :meth:`search`).

        ``query_vector`` skips encoding (for batch runs that encode all queries at once).
        """
        query = normalize_query(query)
        check_choice("mode", mode, MODES)
        check_choice("unit", unit, UNITS)
        check_choice("negation", negation, NEGATION)
        store = self.store
        mask = self._mask(store, unit, target, parse_where(where))
        conflicts = self.conflicting_units(query, store) if negation == "aware" and unit == "sentence" else None
        return self._rank(store, query, mode, unit, n, mask, query_vector, conflicts)

    def _rank(self, store, query, mode, unit, n, mask, query_vector=None, conflicts=None):
        dense = bm25 = None
        if mode != "bm25":
            dense = (self._backend(store, unit).scores(query_vector) if query_vector is not None
                     else self._dense_scores(store, query, unit))
        if mode != "dense":
            bm25 = self._bm25_scores(store, query, unit)
            # A unit sharing no query term is not a BM25 match at all.
            hit = bm25 > 0
            bm25_mask = hit if mask is None else (mask & hit)
        if mode == "hybrid":  # fuse the raw scores, then demote: normalisation sees true scores
            return top_k(demote(convex_combination(dense, bm25), conflicts), n, mask)
        if mode == "dense":
            return top_k(demote(dense, conflicts), n, mask)
        if mode == "bm25":
            return top_k(demote(bm25, conflicts), n, bm25_mask)
        dense, bm25 = demote(dense, conflicts), demote(bm25, conflicts)  # hybrid-rrf
        depth = max(HYBRID_DEPTH, n)
        d_rows, _ = top_k(dense, depth, mask)
        b_rows, _ = top_k(bm25, depth, bm25_mask)
        rows, scores = reciprocal_rank_fusion([d_rows, b_rows])
        return rows[:n], scores[:n]

    # -- search ----------------------------------------------------------------------------
    def search(self, query: str, k: int = 10, mode: str = "hybrid", level: str = "report",
               target: str | None = None, where: Mapping | Iterable[str] | None = None, unit: str = "sentence",
               fields: Sequence[str] | None = None, include_report: bool = True,
               query_vector: np.ndarray | None = None, negation: str = "aware", rerank: int = 0) -> list[Hit]:
        """Search the index.

        Args:
            query: Free text ("no pleural effusion", "right lower lobe consolidation").
            k: Number of hits.
            mode: ``dense``, ``bm25``, ``hybrid`` (convex combination of both, see
                :mod:`radsift.search.fusion`) or ``hybrid-rrf`` (their reciprocal rank fusion).
            level: ``report`` (one hit per report: its best unit stands for it) or ``sentence``.
            target: Restrict to one section (``findings``, ``impression``, ...); ``report``/None = all.
            where: Metadata filters, ``["exam=XR CHEST"]`` or ``{"exam": "XR CHEST"}``.
            unit: Rank ``sentence`` units (default) or whole ``section`` units.
            fields: Report sections to include in hits (None = all).
            include_report: Attach the report's sections and metadata to each hit.
            query_vector: A precomputed query embedding (skips encoding).
            negation: ``aware`` (default): sentences that state the opposite of what the query asks
                about a lexicon finding ("No pneumothorax." for "pneumothorax") rank below all others;
                ``ignore``: plain similarity.
            rerank: Re-score the first stage's top ``rerank`` hits with the cross-encoder
                (``reranker=`` of :meth:`open`) and return the best ``k`` of them; 0 = off.

        Returns:
            Hits, best first.

        Raises:
            ConfigError: ``rerank`` without a reranker, or a bad argument.
        """
        query = normalize_query(query)
        check_choice("mode", mode, MODES)
        check_choice("level", level, LEVELS)
        check_choice("unit", unit, UNITS)
        check_choice("negation", negation, NEGATION)
        if k < 1:
            return []
        if rerank:
            return self._search_reranked(query, k, rerank, mode=mode, level=level, target=target, where=where,
                                         unit=unit, fields=fields, include_report=include_report,
                                         query_vector=query_vector, negation=negation)
        # No lock: a search works on the store it started with; reload() swaps in a new one.
        store = self.store
        mask = self._mask(store, unit, target, parse_where(where))
        conflicts = self.conflicting_units(query, store) if negation == "aware" and unit == "sentence" else None
        report_of = store.units(unit).report_row
        total = report_of.shape[0]
        if level == "sentence":
            rows, scores = self._rank(store, query, mode, unit, k, mask, query_vector, conflicts)
            picked = [(int(report_of[r]), int(r), float(s)) for r, s in zip(rows, scores)]
        else:
            n = max(10 * k, 100)
            while True:  # widen until k distinct reports are found or every unit is ranked
                rows, scores = self._rank(store, query, mode, unit, n, mask, query_vector, conflicts)
                picked = best_unit_per_report(rows, scores, report_of, k)
                if len(picked) >= k or len(rows) < n or n >= total:
                    break
                n *= 4
        return self._hits(store, query, picked, unit, fields, include_report)

    def _search_reranked(self, query: str, k: int, depth: int, **kwargs) -> list[Hit]:
        """First stage to ``max(k, depth)`` hits, cross-encoder over the top ``depth``, best ``k`` kept.

        The reranker reads each hit's matched unit; with negation-aware search, hits that state the
        opposite of the query stay below the others (the cross-encoder reorders within each group).
        """
        from radsift.models.reranker import rerank as rerank_items

        if depth < 1:
            raise ConfigError(f"rerank: must be a positive number of candidates, not {depth}")
        reranker = self.reranker
        if reranker is None:
            raise ConfigError("rerank needs a reranker: pass --reranker DIR (a folder written by "
                              "'radsift train --recipe rerank') or set RADSIFT_RERANKER")
        hits = self.search(query, k=max(k, depth), **kwargs)
        head, tail = hits[:depth], hits[depth:]
        if kwargs.get("negation") == "aware" and kwargs.get("unit", "sentence") == "sentence":
            # Keep the negation-aware guarantee: a hit stating the opposite of the query stays below
            # the others; the cross-encoder reorders within each group.
            wanted = self.query_findings(query)
            opposed = [self._states_opposite(h.sentence.text, wanted) for h in head] if wanted else [False] * len(head)
            agree = [h for h, bad in zip(head, opposed) if not bad]
            disagree = [h for h, bad in zip(head, opposed) if bad]
            head = rerank_items(query, agree, reranker) + rerank_items(query, disagree, reranker)
        else:
            head = rerank_items(query, head, reranker)
        return [dataclasses.replace(h, rank=i) for i, h in enumerate((head + tail)[:k], start=1)]

    def _states_opposite(self, text: str, wanted: Mapping[str, str]) -> bool:
        """Whether ``text`` states the opposite of a wanted (finding, status), as the index labels do."""
        found: dict[str, set[int]] = {}
        for m in self.labeler.label(text):
            if m.status in _POLARITY:
                found.setdefault(m.finding, set()).add(_POLARITY[m.status])
        return any(-_POLARITY[st] in found.get(f, ()) and _POLARITY[st] not in found.get(f, ())
                   for f, st in wanted.items())

    @staticmethod
    def _hits(store, query, picked, unit, fields, include_report) -> list[Hit]:
        unit_rows = [u for _, u, _ in picked]
        if unit == "sentence":
            units = store.sentences_by_rows(unit_rows)
        else:
            units = {row: Sentence(rid, sec, -1, 0, len(text), text)
                     for row, (rid, sec, text) in store.sections_by_rows(unit_rows).items()}
        reports = store.reports_by_rows([r for r, _, _ in picked]) if include_report else {}
        hits = []
        for rank, (rep_row, unit_row, score) in enumerate(picked, start=1):
            sent = units[unit_row]
            report = reports.get(rep_row)
            sections = {}
            if report is not None:
                sections = {k: v for k, v in report.sections.items() if fields is None or k in fields}
            hits.append(Hit(
                report_id=sent.report_id, score=score, rank=rank, sentence=sent,
                highlights=highlight_spans(query, sent.text), section=sent.section, sections=sections,
                metadata=report.metadata if report is not None else {},
            ))
        return hits
