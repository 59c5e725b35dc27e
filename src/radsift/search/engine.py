"""``radsift.Index``: open an index and search it (dense, BM25 or hybrid; sentence or report level).

A search goes straight through, once: options are checked (:func:`~radsift.search.query.check_options`),
the query's scores are computed once (dense only when the mode uses it, so a BM25 search never
loads the encoder), the ranking core (:mod:`radsift.ranking`) ranks units and, at report level,
widens only its cut-off until ``k`` reports are found; an optional cross-encoder reranks the head.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from radsift.errors import ConfigError, IndexStoreError
from radsift.index.backends import create_backend
from radsift.index.reader import IndexStore
from radsift.ranking import (NEEDS_BM25, NEEDS_DENSE, bm25_scores, rank, rank_groups, rerank as rerank_core, stating,
                             units_with_terms)
from radsift.ranking.bands import BandTable, band_of, relative_scores, score_kind
from radsift.ranking.core import base_scores, eligible
from radsift.ranking.tiers import CLASS_NAMES, STATES
from radsift.records import Hit, HitMention, QueryReading, Report, Sentence
from radsift.search.highlight import highlight_spans
from radsift.search.query import SearchOptions, check_options
from radsift.search.reading import ReadingTiers, parse_override, read_query, reading_tiers

log = logging.getLogger("radsift.search")


class Index:
    """A searchable radsift index.

    Example:
        >>> idx = Index.open("my-index")                              # doctest: +SKIP
        >>> for hit in idx.search("no pneumothorax", k=5, mode="hybrid"):  # doctest: +SKIP
        ...     print(hit.report_id, hit.score, hit.sentence.text)

    Args:
        store: The opened :class:`~radsift.index.IndexStore`.
        model: Model folder to encode queries with (None = the model that built the index); a
            folder given here is checked against the index on open.
        threads: torch threads for query encoding.
        backend: Vector backend: ``auto`` (default: exact ``numpy`` below
            :data:`~radsift.index.backends.factory.HNSW_MIN_ROWS` units, the generation's HNSW graph at
            or above it when one was built; its Milvus collection when it was pushed to Milvus),
            ``numpy``, ``hnsw`` or ``milvus`` (see :mod:`radsift.index.backends`).
        encoder: An already loaded encoder (tests, the demo): used as is.
        reranker: Cross-encoder folder (``radsift train --recipe rerank``) or a loaded
            :class:`~radsift.models.reranker.Reranker`, used by ``search(..., rerank=N)``.
        milvus_uri: The ``milvus`` backend's URI when it is not the one recorded with the index
            (else ``$RADSIFT_MILVUS_URI``, else the recorded one).
    """

    def __init__(self, store: IndexStore, *, model: str | Path | None = None, threads: int | None = None,
                 backend: str = "auto", encoder=None, reranker=None, milvus_uri: str | None = None) -> None:
        from radsift.index.backends.factory import resolve_backend

        resolve_backend(backend, 0)  # an unknown or reserved name fails on open, not on the first query
        self.store = store
        self._reranker = reranker
        self._threads = threads
        self._backend_name = backend
        #: Overrides the Milvus URI recorded with the index (else ``$RADSIFT_MILVUS_URI``, else the recorded one).
        self._milvus_uri = milvus_uri
        self._encoder = encoder
        self._labeler = None
        self._settings = None
        self._linker = None
        self._lock = threading.RLock()
        #: Follow the live generation: switch to a new one when a writer commits it (see :meth:`live_store`).
        self.follow = True
        self._follow_error = ""
        #: None: strict reading tiers (the default); a number: calibrated boosts, each tier costing
        #: that share of the score range (:func:`radsift.ranking.apply_tiers`; benchmarks compare them).
        self.tier_gap: float | None = None
        self._model_path: Path | None = None
        if model is not None and encoder is None:
            self._model_path = self._checked_model(model)

    @classmethod
    def open(cls, path: str | Path, *, model: str | Path | None = None, threads: int | None = None,
             backend: str = "auto", encoder=None, reranker=None, milvus_uri: str | None = None) -> "Index":
        """Open the live generation of the index at ``path`` (read-only)."""
        return cls(IndexStore.open(path), model=model, threads=threads, backend=backend, encoder=encoder,
                   reranker=reranker, milvus_uri=milvus_uri)

    @property
    def reranker(self):
        """The loaded reranker (loaded on first use): a cross-encoder, or a poly-encoder folder's
        :class:`~radsift.search.passages.PolyReranker`; None when the index has none."""
        with self._lock:
            if isinstance(self._reranker, (str, Path)):  # a folder: load it once
                from radsift.models.poly_encoder import is_poly_encoder
                from radsift.models.reranker import Reranker

                if is_poly_encoder(self._reranker):
                    from radsift.search.passages import PolyReranker

                    self._reranker = PolyReranker(self._reranker, threads=self._threads)
                else:
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
        m = self.live_store().manifest
        return {"path": str(self.path), "format_version": m.format_version, "generation": m.generation,
                "model": m.model_name, "model_path": m.model_path, "dim": m.dim,
                "build_encoders": list(m.build_encoders), "counts": dict(m.counts),
                "sections": list(m.sections), "metadata_keys": list(m.metadata_keys), "created": m.created,
                "updated": m.updated, "radsift_version": m.radsift_version,
                "search_settings": {**self.settings.to_dict(), "source": self.settings.source}}

    def get_report(self, report_id: str) -> Report | None:
        """The stored report, or None when the id is not in the index."""
        store = self.live_store()
        with store.guard():
            return store.get_report(str(report_id))

    def reload(self) -> bool:
        """Switch to the newest generation if a writer replaced it; True when something changed."""
        with self._lock:
            if self.store.is_current():
                return False
            fresh = IndexStore.open(self.path)
            if fresh.manifest.model_fingerprint != self.store.manifest.model_fingerprint:
                fresh.close()
                raise IndexStoreError(f"{self.path} was rebuilt with another model: restart to use it")
            # In-flight searches hold their own reference to the old store (and its reader lease);
            # it closes, and gives the lease back, when they drop it.
            self.store = fresh
            return True

    def live_store(self) -> IndexStore:
        """The store to answer from: with ``follow`` (the default), the index's live generation, switched
        to when a writer commits a new one (one read of ``CURRENT`` per call). A generation that cannot be
        switched to (damaged, another model) is reported once and the current one keeps serving."""
        store = self.store
        if self.follow and not store.is_current():
            try:
                self.reload()
            except IndexStoreError as exc:
                if str(exc) != self._follow_error:
                    self._follow_error = str(exc)
                    log.error("not switching to the new generation of %s: %s", self.path, exc)
            store = self.store
        return store

    # -- encoding ----------------------------------------------------------------------------
    def _checked_model(self, model: str | Path) -> Path:
        from radsift.models.encoder import resolve_model_path

        path = resolve_model_path(model)
        self.store.manifest.check_model(path, self.path)
        return path

    @property
    def encoder(self):
        """The query encoder, loaded on first dense query (BM25-only use never loads torch)."""
        if self._encoder is None:
            with self._lock:
                if self._encoder is None:
                    from radsift.models.encoder import Encoder

                    if self._model_path is None:
                        try:
                            self._model_path = self._checked_model(self.store.manifest.model_folder())
                        except ConfigError:
                            m = self.store.manifest
                            raise IndexStoreError(
                                f"{self.path} was built with model {m.model_name} ({m.model_path}), which is not "
                                "available here; pass --model with that model's folder") from None
                    self._encoder = Encoder.load(self._model_path, threads=self._threads)
        return self._encoder

    @property
    def settings(self):
        """The search settings of the index's model (:mod:`radsift.models.settings`): its dense
        weight in ``hybrid`` and its concept-link threshold. Reading them never loads the model."""
        if self._settings is None:
            from radsift.models.settings import settings_of_model

            m = self.store.manifest
            path = self._model_path if self._model_path is not None else getattr(self._encoder, "path", None)
            if path is None and m.model_path and Path(m.model_path).is_dir():
                path = m.model_path
            self._settings = settings_of_model(path, m.model_name)
        return self._settings

    @settings.setter
    def settings(self, value) -> None:
        self._settings = value

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

    def read(self, query: str, negation: str = "aware", reading: Mapping[str, str] | Iterable[str] | None = None,
             mode: str = "hybrid", concepts: bool = True) -> QueryReading:
        """How a query is read: its findings with the status it asks for, and its side.

        Args:
            query: The query.
            negation: ``aware`` or ``ignore`` (the reading is still returned; the ranking ignores it).
            reading: Overrides, finding by finding: ``{"cardiomegaly": "absent", "side": "ignore"}``
                or ``["cardiomegaly=absent"]`` (the page's chips).
            mode: The search mode: concept linking needs the encoder, so ``bm25`` never links.
            concepts: Whether to link a query that describes a concept (as :meth:`search`).
        """
        from radsift.search.query import MODES, NEGATION, check_choice, normalize_query

        query = normalize_query(query)
        return read_query(query, self.labeler, negation=check_choice("negation", negation, NEGATION),
                          override=parse_override(reading), lexicon=self.store.manifest.lexicon is not None,
                          link=self._link_function(check_choice("mode", mode, MODES), query, None) if concepts else None)

    @property
    def linker(self):
        """The concept linker of this index's lexicon and model (:mod:`radsift.search.concepts`; built on
        first use, its phrase vectors kept under ``INDEX/cache/``)."""
        if self._linker is None:
            with self._lock:
                if self._linker is None:
                    from radsift.search.concepts import ConceptLinker

                    self._linker = ConceptLinker.for_lexicon(
                        self.labeler.lexicon, self.encoder, cache_dir=self.path / "cache",
                        fingerprint=self.store.manifest.model_fingerprint)
        return self._linker

    def _link_function(self, mode: str, query: str, query_vector):
        """finding text -> :class:`~radsift.search.concepts.Link` or None; None where linking is off
        (a mode without the encoder, an index without lexicon labels, or a model with no threshold)."""
        threshold = self.settings.link_threshold
        if not NEEDS_DENSE[mode] or self.store.manifest.lexicon is None or threshold > 1.0:
            return None

        def link(text: str):
            # The query itself often is its finding text: its vector is already there.
            vec = query_vector if text == query and query_vector is not None else self.encoder.encode_query(text)
            return self.linker.link(vec, threshold)

        return link

    def _tiers(self, store: IndexStore, opts: SearchOptions, reading: QueryReading) -> ReadingTiers:
        """The reading tier of every unit of ``opts.unit`` and what each states (see
        :func:`~radsift.search.reading.reading_tiers`)."""
        if not reading.active:
            return ReadingTiers(None)
        labels = store.labels()
        sentence_bm25 = store.bm25("sentence")
        n_sentences = store.units("sentence").report_row.shape[0]
        units = store.units(opts.unit)
        return reading_tiers(
            reading, self.labeler, n_units=units.report_row.shape[0],
            labels=(labels.row, labels.finding, labels.status),
            finding_codes={f: i for i, f in enumerate(store.manifest.findings)},
            sentence_texts=lambda rows: {r: s.text for r, s in store.sentences_by_rows(rows).items()},
            open_candidates=lambda stems: units_with_terms(sentence_bm25, stems, n_sentences),
            side_flags=lambda: store.cached(("sides", opts.unit), lambda: _side_flags(store, opts.unit)),
            unit_of=None if opts.unit == "sentence" else store.cached(("section_of_sentence",),
                                                                       lambda: _section_of_sentence(store)),
            group_of=units.report_row if opts.level == "report" else None, classes=True,
        )

    def _backend(self, store: IndexStore, kind: str):
        from radsift.index.graphs import graph_path

        from radsift.index.backends.milvus import MilvusPlace

        return store.cached(("backend", self._backend_name, kind),
                            lambda: create_backend(self._backend_name, store.units(kind).vectors,
                                                   graph=graph_path(store.index_dir, store.gen_dir, kind),
                                                   milvus=MilvusPlace(store.index_dir, store.gen_dir, kind,
                                                                      self._milvus_uri)))

    # -- search ----------------------------------------------------------------------------
    def search(self, query: str, k: int = 10, mode: str = "hybrid", level: str = "report",
               target: str | None = None, where: Mapping | Iterable[str] | None = None, unit: str = "sentence",
               fields: Sequence[str] | None = None, include_report: bool = True,
               query_vector: np.ndarray | None = None, negation: str = "aware", rerank: int = 0,
               reading: Mapping[str, str] | Iterable[str] | None = None, alpha: float | None = None,
               concepts: bool = True, prf: bool = False, mentions: bool = True, offset: int = 0,
               first_stage=None) -> "SearchResult":
        """Search the index.

        Args:
            query: Free text ("no pleural effusion", "right lower lobe consolidation").
            k: Number of hits.
            mode: ``dense``, ``bm25``, ``hybrid`` (convex combination of both, see
                :mod:`radsift.ranking.fusion`) or ``hybrid-rrf`` (their reciprocal rank fusion).
            level: ``report`` (one hit per report: its best unit stands for it) or ``sentence``.
            target: Restrict to one section (``findings``, ``impression``, ...); ``report``/None = all.
            where: Metadata filters, ``["indication=cough"]``, ``["indication~cough"]`` (case-insensitive
                substring) or ``{"indication": "cough"}``; keys must be metadata keys of the index.
            unit: Rank ``sentence`` units (default) or whole ``section`` units.
            fields: Report sections to include in hits (None = all).
            include_report: Attach the report's sections and metadata to each hit.
            query_vector: A precomputed query embedding (skips encoding).
            negation: ``aware`` (default): units rank by what they state about the query's findings
                (:mod:`radsift.ranking.tiers`: the query's reading first, the opposite last; same side
                first), then by score; ``ignore``: plain similarity.
            reading: Override the query's reading finding by finding (see :meth:`read`).
            rerank: Re-score the first stage's top ``rerank`` hits with the cross-encoder
                (``reranker=`` of :meth:`open`) and return the best ``k`` of them; 0 = off.
            alpha: The dense share of ``hybrid`` (0 to 1); None = the model's own (:attr:`settings`).
            concepts: Link a query that describes a lexicon concept without naming it to that concept
                (:mod:`radsift.search.concepts`; modes that use the encoder only).
            prf: Expand the query from its first-pass top units (RM3 on BM25, Rocchio on the dense side:
                :mod:`radsift.ranking.prf`), then rank again.
            mentions: Attach to each hit what its unit states about the query's findings (status, cue,
                offsets: ``Hit.reading``); False skips reading the hits (batch runs, benchmarks).
            offset: Skip this many hits of the ranked list (paging: the page after ``offset=0, k=25``
                is ``offset=25, k=25``; pages never repeat or miss a hit). Past the end: no hits.
            first_stage: Takes the place of the index's bi-encoder on the dense side: an object whose
                ``scores(store, query, unit)`` scores every ``unit`` of the store the search runs on (in
                its row space), e.g. :class:`radsift.search.passages.PolyFirstStage`. ``dense`` then ranks
                by it alone, ``hybrid`` and ``hybrid-rrf`` fuse it with BM25; the index's model is not
                loaded and no concept is linked (linking compares the query with the bi-encoder's vectors).

        Returns:
            Hits, best first; scores decrease with rank; ``Hit.rank`` counts from ``offset + 1``. The
            list's ``.reading`` says how the query was read, ``.total`` how many reports (sentences at
            sentence level) the whole ranked list holds and ``.matching`` how many of them state the
            query's reading (None when nothing is read); each hit carries a relevance estimate and
            band (:mod:`radsift.ranking.bands`).

        Raises:
            ConfigError: A bad option (naming it and the allowed values), ``rerank`` without a reranker, or
                ``first_stage`` with ``bm25`` (no dense side) or ``prf`` (it moves the bi-encoder's query vector).
        """
        store = self.live_store()  # no lock: a search works on the store it started with; reload() swaps it
        with store.guard():
            return self._search(store, query, k, mode, level, target, where, unit, fields, include_report,
                                query_vector, negation, rerank, reading, alpha, concepts, prf, mentions, offset,
                                first_stage)

    def _search(self, store, query, k, mode, level, target, where, unit, fields, include_report, query_vector,
                negation, rerank, reading, alpha, concepts, prf, mentions, offset, first_stage=None) -> "SearchResult":
        m = store.manifest
        opts = check_options(query, k=k, mode=mode, level=level, unit=unit, negation=negation, rerank=rerank,
                             target=target, where=where, sections=m.sections, metadata_keys=m.metadata_keys,
                             reading=reading, alpha=alpha, concepts=concepts, prf=prf, offset=offset)
        if opts.rerank and self.reranker is None:
            raise ConfigError("rerank needs a reranker: pass --reranker DIR (a folder written by "
                              "'radsift train --recipe rerank') or set RADSIFT_RERANKER")
        if first_stage is not None:
            if not NEEDS_DENSE[opts.mode]:
                raise ConfigError(f"a first stage takes the bi-encoder's place: mode {opts.mode} does not use it "
                                  "(use dense for the first stage alone, hybrid or hybrid-rrf to fuse it with BM25)")
            if opts.prf:
                raise ConfigError("prf expands the bi-encoder's query vector: it does not apply to another first stage")
        elif NEEDS_DENSE[opts.mode] and query_vector is None:
            query_vector = self.encoder.encode_query(opts.query)
        linked = opts.concepts and first_stage is None
        reading = read_query(opts.query, self.labeler, negation=opts.negation, override=dict(opts.reading),
                             lexicon=m.lexicon is not None,
                             link=self._link_function(opts.mode, opts.query, query_vector) if linked else None)
        read_tiers = self._tiers(store, opts, reading)
        tiers = read_tiers.tiers
        scores = self._scores(store, opts, query_vector, reading, first_stage)
        if opts.prf:
            scores = self._feedback(store, opts, scores, tiers, query_vector, reading)
        if tiers is not None and reading.findings:
            scores["keep"] = stating(tiers)
        report_of = store.units(opts.unit).report_row
        depth = max(opts.offset + opts.k, opts.rerank)
        if opts.level == "sentence":
            rows, vals = rank(opts.mode, depth, tiers=tiers, gap=self.tier_gap, **scores)
            picked = list(zip(report_of[rows].tolist(), rows.tolist(), np.asarray(vals, np.float64).tolist()))
        else:
            groups, rows, vals = rank_groups(opts.mode, depth, report_of, tiers=tiers, gap=self.tier_gap, **scores)
            picked = list(zip(groups.tolist(), rows.tolist(), np.asarray(vals, np.float64).tolist()))
        units = self._units(store, opts.unit, [u for _, u, _ in picked])
        if opts.rerank:
            picked = self._rerank(opts, picked, units, tiers)
        page = picked[opts.offset:opts.offset + opts.k]
        counts = _Counts.of(store, opts, scores, read_tiers)
        hits = self._hits(store, opts.query, page, units, fields, include_report,
                          reading if mentions else QueryReading(), first_rank=opts.offset + 1,
                          bands=counts.bands(opts, scores, page))
        return SearchResult(hits, reading, offset=opts.offset, k=opts.k, total=counts.total,
                            matching=counts.matching, lower_bound=counts.lower_bound)

    def _scores(self, store: IndexStore, opts: SearchOptions, query_vector, reading: QueryReading,
                first_stage=None) -> dict:
        """The query's dense and BM25 scores (only those its mode uses) and the eligible units.

        The BM25 side of a query linked to a concept also holds the concept's name and short
        synonyms (the words reports use for it). ``first_stage`` gives the dense side (see :meth:`search`);
        its own ``settings`` (when it has them) give the dense weight of ``hybrid``."""
        settings = self.settings if first_stage is None else getattr(first_stage, "settings", self.settings)
        out: dict = {"mask": self._mask(store, opts),
                     "alpha": opts.alpha if opts.alpha is not None else settings.dense_weight}
        if NEEDS_DENSE[opts.mode] and first_stage is not None:
            out["dense"] = np.asarray(first_stage.scores(store, opts.query, opts.unit), dtype=np.float32)
            if out["dense"].shape != store.units(opts.unit).report_row.shape:
                raise RuntimeError(f"first stage: {out['dense'].shape[0]} scores for "
                                 f"{store.units(opts.unit).report_row.shape[0]} {opts.unit} units")
        elif NEEDS_DENSE[opts.mode]:
            # An approximate backend draws its candidates from the eligible units.
            backend = self._backend(store, opts.unit)
            # A backend that pushes filters down (Milvus) takes them with the mask they make.
            hints = {"target": opts.target, "filters": opts.filters} if getattr(backend, "pushdown", False) else {}
            dense = backend.scores(query_vector, out["mask"], **hints)
            out["dense"] = _checked_cosines(dense, store, opts.unit)
        if NEEDS_BM25[opts.mode]:
            n = store.units(opts.unit).report_row.shape[0]
            out["bm25"] = bm25_scores(store.bm25(opts.unit), self._bm25_query(opts, reading), n)
        return out

    def _bm25_query(self, opts: SearchOptions, reading: QueryReading) -> str:
        """The query's BM25 text: with a linked concept's name and short synonyms."""
        words = [opts.query] + [self.linker.expansion(f.finding) for f in reading.findings if f.source == "linked"]
        return " ".join(words)

    def _feedback(self, store: IndexStore, opts: SearchOptions, scores: dict, tiers, query_vector,
                  reading: QueryReading) -> dict:
        """Scores again after pseudo-relevance feedback from the first pass's top units (:mod:`radsift.ranking.prf`)."""
        from radsift.ranking.prf import FB_DOCS, rm3_weights, rocchio, weighted_bm25_scores
        from radsift.text.tokens import tokenize

        rows, vals = rank(opts.mode, FB_DOCS, tiers=tiers, gap=self.tier_gap, **scores)
        if not len(rows):
            return scores
        out = dict(scores)
        units = store.units(opts.unit)
        if "dense" in scores:
            moved = rocchio(query_vector, np.asarray(units.vectors[np.sort(rows)]))
            out["dense"] = self._backend(store, opts.unit).scores(moved)
        if "bm25" in scores:
            texts = self._units(store, opts.unit, rows.tolist())
            weights = rm3_weights(tokenize(self._bm25_query(opts, reading)), [tokenize(texts[r].text) for r in rows.tolist()],
                                  np.asarray(vals, dtype=np.float64))
            out["bm25"] = weighted_bm25_scores(store.bm25(opts.unit), weights, units.report_row.shape[0])
        return out

    @staticmethod
    def _mask(store: IndexStore, opts: SearchOptions) -> np.ndarray | None:
        units = store.units(opts.unit)
        mask = None
        if opts.target is not None:
            mask = units.section_code == store.section_code(opts.target)
        if opts.filters:
            m2 = np.isin(units.report_row, store.report_rows_where(opts.filters))
            mask = m2 if mask is None else mask & m2
        return mask

    def _rerank(self, opts: SearchOptions, picked: list, units: dict, tiers) -> list:
        """The cross-encoder over the top ``opts.rerank``, within each reading tier (negation-aware
        search keeps the tiers: the cross-encoder reorders inside a tier, never across)."""
        head, tail = picked[:opts.rerank], picked[opts.rerank:]
        reranker = self.reranker
        cross = reranker.score(opts.query, [units[u].text for _, u, _ in head])
        head_tiers = None if tiers is None else np.asarray(tiers)[[u for _, u, _ in head]]
        order, scores = rerank_core([s for _, _, s in head], cross, getattr(reranker, "weight", 1.0), head_tiers,
                                    [s for _, _, s in tail])
        both = head + tail
        return [(both[i][0], both[i][1], float(s)) for i, s in zip(order, scores)]

    @staticmethod
    def _units(store: IndexStore, unit: str, rows: list[int]) -> dict[int, Sentence]:
        if unit == "sentence":
            return store.sentences_by_rows(rows)
        return {row: Sentence(rid, sec, -1, 0, len(text), text)
                for row, (rid, sec, text) in store.sections_by_rows(rows).items()}

    def _hits(self, store, query, picked, units, fields, include_report, reading: QueryReading, first_rank: int = 1,
              bands: Sequence[tuple[str, float]] = ()) -> list[Hit]:
        reports = store.reports_by_rows([r for r, _, _ in picked]) if include_report else {}
        hits = []
        for i, (rep_row, unit_row, score) in enumerate(picked):
            band, relevance = bands[i] if bands else (None, None)
            sent = units[unit_row]
            report = reports.get(rep_row)
            sections = {}
            if report is not None:
                sections = {k: v for k, v in report.sections.items() if fields is None or k in fields}
            hits.append(Hit(
                report_id=sent.report_id, score=score, rank=first_rank + i, sentence=sent,
                highlights=highlight_spans(query, sent.text), section=sent.section, sections=sections,
                metadata=report.metadata if report is not None else {},
                reading=self.mentions_in(sent.text, reading), band=band, relevance=relevance,
            ))
        return hits

    def mentions_in(self, text: str, reading: QueryReading) -> tuple[HitMention, ...]:
        """What ``text`` states about the reading's findings: each mention with its status and cue.

        The text is read sentence by sentence (a section or a whole report may be given), with
        the labeler (lexicon findings) or the open-vocabulary reader (the others).
        """
        if not reading.findings:
            return ()
        from radsift.text.sentences import split_sentences

        lexicon = {f.finding for f in reading.findings if f.labeled}
        phrases = [p for f in reading.findings if f.source == "open" for p in self.labeler.query_phrases(f.finding)[:1]]
        spans = split_sentences(text) or [(0, len(text))]
        out = []
        for start, end in spans:
            sentence = text[start:end]
            if lexicon:
                out += [HitMention(m.finding, m.status, m.cue, start + m.start, start + m.end, "lexicon")
                        for m in self.labeler.label(sentence) if m.finding in lexicon]
            for phrase in phrases:
                out += [HitMention(phrase.text.lower(), m.status, m.cue, start + m.start, start + m.end, "open")
                        for m in self.labeler.read_phrase(phrase, [sentence])[0]]
        return tuple(sorted(out, key=lambda m: (m.start, m.end)))

    def report_mentions(self, report_id: str, query: str, negation: str = "aware",
                        reading: Mapping[str, str] | Iterable[str] | None = None) -> dict[str, list[HitMention]]:
        """Every mention of the query's findings in a stored report, by section, with its status.

        Raises:
            KeyError: The report is not in the index.
        """
        report = self.get_report(report_id)
        if report is None:
            raise KeyError(report_id)
        read = self.read(query, negation, reading)
        return {name: list(self.mentions_in(text, read)) for name, text in report.sections.items()}


def _checked_cosines(scores: np.ndarray, store: IndexStore, unit: str) -> np.ndarray:
    """Cosines of unit vectors lie in [-1, 1]: anything else (NaN, 6e30) is a damaged vector file, not a score."""
    scores = np.asarray(scores)
    if scores.size and not (np.isfinite(scores).all() and float(np.abs(scores).max()) <= 1.001):
        from radsift.errors import IndexDamagedError

        raise IndexDamagedError(f"{store.index_dir / 'segments'}: a segment's {unit}_vectors.npy holds vectors that "
                                f"are not unit length "
                                f"(NaN or out-of-range scores): the file is damaged; run `radsift index verify "
                                f"--deep {store.index_dir}` and rebuild or roll back")
    return scores


class SearchResult(list):
    """The hits of a search (a list, best first), how the query was read and what the whole list holds.

    Attributes:
        reading: How the query was read.
        offset: Hits of the ranked list skipped before this page.
        k: The page size asked for.
        total: Reports (sentences at sentence level) in the whole ranked list: every eligible one for
            the dense and hybrid modes, those sharing a term with the query (or stating its reading)
            for ``bm25``.
        matching: How many of them state the query's reading (the ``states`` band); None when the
            ranking reads nothing (no finding named, or ``negation="ignore"``).
        lower_bound: True when ``matching`` may be short: an open-vocabulary phrase had more
            candidate sentences than the reader reads (:data:`~radsift.search.reading.OPEN_CANDIDATES`).
    """

    def __init__(self, hits: Iterable[Hit], reading: QueryReading, *, offset: int = 0, k: int | None = None,
                 total: int | None = None, matching: int | None = None, lower_bound: bool = False) -> None:
        super().__init__(hits)
        self.reading = reading
        self.offset = offset
        self.k = len(self) if k is None else k
        self.total = len(self) if total is None else total
        self.matching = matching
        self.lower_bound = lower_bound

    @property
    def more(self) -> bool:
        """Whether the ranked list goes on after this page."""
        return self.offset + len(self) < self.total

    def page_dict(self) -> dict:
        """The counts and paging of this result, as the CLI's ``--json`` and the API give them."""
        return {"offset": self.offset, "k": self.k, "total": self.total, "matching": self.matching,
                "matching_is_lower_bound": self.lower_bound, "more": self.more}


class _Counts:
    """How many reports (or sentences) the whole ranked list holds and how many state the reading,
    and each unit's class for its relevance band."""

    def __init__(self, total: int, matching: int | None, lower_bound: bool, classes: np.ndarray | None,
                 eligible_units: np.ndarray, by_report: bool) -> None:
        self.total, self.matching, self.lower_bound = total, matching, lower_bound
        self.classes, self.eligible_units, self.by_report = classes, eligible_units, by_report

    @classmethod
    def of(cls, store: IndexStore, opts: SearchOptions, scores: dict, read_tiers: ReadingTiers) -> "_Counts":
        units = store.units(opts.unit)
        n_units = units.report_row.shape[0]
        ok = eligible(opts.mode, bm25=scores.get("bm25"), mask=scores.get("mask"), keep=scores.get("keep"),
                      n_units=n_units)
        rows = np.flatnonzero(ok)
        by_report = opts.level == "report"
        n_reports = int(store.manifest.counts.get("reports", 0)) if by_report else 0
        if by_report:
            seen = np.zeros(n_reports, dtype=bool)
            seen[units.report_row[rows]] = True
            total = int(seen.sum())
        else:
            total = int(rows.size)
        unit_class, report_class = read_tiers.classes(rows, units.report_row if by_report else None, n_reports)
        matching, classes = None, None
        if unit_class is not None:
            if by_report:
                matching = int(((report_class == STATES) & seen).sum())
                classes = report_class
            else:
                matching = int((unit_class == STATES).sum())
                classes = np.full(n_units, -1, dtype=np.int8)
                classes[rows] = unit_class
        return cls(total, matching, read_tiers.capped, classes, ok, by_report)

    def bands(self, opts: SearchOptions, scores: dict, page: list) -> list[tuple[str, float]]:
        """(band, relevance estimate) of each hit of the page (:mod:`radsift.ranking.bands`)."""
        if not page:
            return []
        base = base_scores(opts.mode, dense=scores.get("dense"), bm25=scores.get("bm25"), alpha=scores["alpha"])
        relative = relative_scores(base, [u for _, u, _ in page], self.eligible_units)
        table, kind = BandTable.packaged(), score_kind(opts.mode)
        out = []
        for (rep_row, unit_row, _), rel in zip(page, relative.tolist()):
            code = -1 if self.classes is None else int(self.classes[rep_row if self.by_report else unit_row])
            name = CLASS_NAMES[code] if code >= 0 else "none"
            estimate = table.estimate(kind, name, rel)
            out.append((band_of(name, estimate), round(estimate, 3)))
        return out


_BILATERAL = ("bilateral", "bilaterally", "both", "bibasilar", "bibasal")


def _side_flags(store: IndexStore, unit: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per unit: whether it has a left, a right and a bilateral side word (from its BM25 terms)."""
    from radsift.text.tokens import stem

    retriever = store.bm25(unit)
    n = store.units(unit).report_row.shape[0]

    def has(words) -> np.ndarray:
        out = np.zeros(n, dtype=bool)
        for word in words:
            out[units_with_terms(retriever, [stem(word)], n)] = True
        return out

    return has(["left"]), has(["right"]), has(_BILATERAL)


def _section_of_sentence(store: IndexStore) -> np.ndarray:
    """The section-unit row of every sentence row."""
    sent, sec = store.units("sentence"), store.units("section")
    width = int(max(sent.section_code.max(initial=0), sec.section_code.max(initial=0))) + 1
    sec_keys = sec.report_row.astype(np.int64) * width + sec.section_code
    order = np.argsort(sec_keys, kind="stable")
    keys = sent.report_row.astype(np.int64) * width + sent.section_code
    return order[np.searchsorted(sec_keys[order], keys)]
