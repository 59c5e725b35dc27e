"""``radsift.Index``: open an index and search it (dense, BM25 or hybrid; sentence or report level).

The facade: open an index, follow its live generation, read a query, search, fetch a report. A
search's options are checked here (:mod:`.options`), then the request walks down once
(:mod:`.walk`: read, plan, score, rank, page).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Iterable, Mapping

from radsift.errors import IndexStoreError
from radsift.index.backends.factory import resolve_backend
from radsift.index.backends.placement import open_backend
from radsift.index.reader import IndexStore
from radsift.ranking import MODES
from radsift.records import HitMention, QueryReading, Report
from radsift.search.mentions import mentions_in, report_mentions_in
from radsift.search.options import SearchOptions, check_search, search_options
from radsift.search.plan import literal_check
from radsift.search.query import NEGATION, check_choice, normalize_query
from radsift.search.reading import READ_AS, parse_override, read_query
from radsift.search.resources import IndexResources
from radsift.search.results import SearchResult
from radsift.search.walk import walk

log = logging.getLogger("radsift.search")


#: What :meth:`Index.warm` searches for: a finding, a negation, a side and a lobe, so each reader loads.
WARM_QUERY = "no left lower lobe consolidation"


class Index(IndexResources):
    """A searchable radsift index.

    Example:
        >>> idx = Index.open("my-index")                              # doctest: +SKIP
        >>> for hit in idx.search("no pneumothorax", k=5, mode="hybrid"):  # doctest: +SKIP
        ...     print(hit.report_id, hit.score, hit.sentence.text)

    Args:
        store: The opened :class:`~radsift.index.IndexStore`.
        backend: Vector backend: ``auto`` (default: exact ``numpy`` below
            :data:`~radsift.index.backends.factory.HNSW_MIN_ROWS` units, the generation's HNSW graph at
            or above it when one was built; its Milvus collection when it was pushed to Milvus),
            ``numpy``, ``hnsw`` or ``milvus`` (see :mod:`radsift.index.backends`).
        milvus_uri: The ``milvus`` backend's URI when it is not the one recorded with the index
            (else ``$RADSIFT_MILVUS_URI``, else the recorded one).
        model, threads, encoder, reranker: The models (:class:`~radsift.search.resources.IndexResources`).
    """

    def __init__(self, store: IndexStore, *, model: str | Path | None = None, threads: int | None = None,
                 backend: str = "auto", encoder=None, reranker=None, milvus_uri: str | None = None) -> None:
        resolve_backend(backend, 0)  # an unknown or reserved name fails on open, not on the first query
        self.store = store
        self._backend_name = backend
        self._milvus_uri = milvus_uri
        #: Follow the live generation: switch to a new one when a writer commits it (see :meth:`live_store`).
        self.follow = True
        self._follow_error = ""
        #: None: strict reading tiers (the default); a number: calibrated boosts, each tier costing
        #: that share of the score range (:func:`radsift.ranking.apply_tiers`; benchmarks compare them).
        self.tier_gap: float | None = None
        super().__init__(model=model, threads=threads, encoder=encoder, reranker=reranker)

    @classmethod
    def open(cls, path: str | Path, *, model: str | Path | None = None, threads: int | None = None,
             backend: str = "auto", encoder=None, reranker=None, milvus_uri: str | None = None) -> "Index":
        """Open the live generation of the index at ``path`` (read-only)."""
        return cls(IndexStore.open(path), model=model, threads=threads, backend=backend, encoder=encoder,
                   reranker=reranker, milvus_uri=milvus_uri)

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

    def _backend(self, store: IndexStore, kind: str):
        """The vector backend of this index's ``kind`` units in ``store`` (:mod:`radsift.index.backends.placement`)."""
        return open_backend(store, self._backend_name, kind, self._milvus_uri)

    def read(self, query: str, negation: str = "aware", reading: Mapping[str, str] | Iterable[str] | None = None,
             mode: str = "hybrid", concepts: bool = True, read_as: str = "both") -> QueryReading:
        """How a query is read: its findings with the status it asks for, and its side.

        ``negation``, ``reading``, ``mode``, ``concepts`` and ``read_as`` are those of :class:`SearchOptions`
        (``bm25`` never links a query to a concept: linking needs the encoder).
        """
        query = normalize_query(query)
        store = self.store
        return read_query(query, self.labeler, negation=check_choice("negation", negation, NEGATION),
                          override=parse_override(reading), lexicon=store.manifest.lexicon is not None,
                          link=self._link_function(check_choice("mode", mode, MODES), query, None) if concepts else None,
                          # no concept links: nor the lexicon's alternatives (any_of), the literal reading alone
                          read_as=check_choice("read_as", read_as, READ_AS) if concepts else "literal",
                          literal=literal_check(store))

    def search(self, query: str, options: SearchOptions | None = None, **overrides: Any) -> SearchResult:
        """Search the index.

        Args:
            query: Free text ("no pleural effusion", "right lower lobe consolidation").
            options: The search's options (:class:`~radsift.search.options.SearchOptions`: every option,
                its default and help); None = the defaults.
            **overrides: Options by name, in place of those of ``options`` (``k=5, mode="bm25"``).

        Returns:
            Hits, best first; scores decrease with rank; ``Hit.rank`` counts from ``offset + 1``. The
            list's ``.reading`` says how the query was read, ``.total`` how many reports (sentences at
            sentence level) the whole ranked list holds and ``.matching`` how many of them state the
            query's reading (None when nothing is read); each hit carries a relevance estimate and
            band (:mod:`radsift.ranking.bands`).

        Raises:
            ConfigError: A bad option (naming it and the allowed values), ``rerank`` without a reranker, or
                ``first_stage`` with ``bm25`` (no dense side) or ``prf`` (it moves the bi-encoder's query vector).
            TypeError: An override that names no option.
        """
        options = search_options(options, **overrides)
        store = self.live_store()  # no lock: a search works on the store it started with; reload() swaps it
        with store.guard():
            return walk(self, store, check_search(query, options, store.manifest.sections,
                                                  store.manifest.metadata_keys))

    def warm(self) -> None:
        """Load now what a first search would load: the models, the vector backends (imported, graphs read and
        checked), BM25 statistics, row maps and report ids, by answering throwaway searches (one a level, one
        reading a finding and a location). A server calls it before it listens, so its first user does not wait."""
        self.encoder, self.labeler  # noqa: B018
        for level in ("report", "sentence"):
            self.search(WARM_QUERY, k=1, level=level)

    def mentions_in(self, text: str, reading: QueryReading) -> tuple[HitMention, ...]:
        """What ``text`` (a sentence, a section or a whole report) states about the reading's findings: each
        mention with its status and cue (:func:`radsift.search.mentions.mentions_in`)."""
        return mentions_in(self.labeler, text, reading) if reading.findings else ()

    def sections_mentions(self, sections: Mapping[str, str], reading: QueryReading) -> dict[str, tuple[HitMention, ...]]:
        """What each section of one report states about the reading's findings, the sections read together (an
        impression that only doubts a finding makes its descriptions elsewhere uncertain, as the index's labels
        read them: :func:`radsift.search.mentions.report_mentions_in`)."""
        return report_mentions_in(self.labeler, sections, reading)

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
        return {name: list(found) for name, found in self.sections_mentions(report.sections, read).items()}
