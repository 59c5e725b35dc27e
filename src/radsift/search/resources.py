"""What an index loads on first use: the query encoder, the labeler, the concept linker, the search
settings of its model and the reranker (:class:`IndexResources`, the base of :class:`radsift.Index`).

Nothing here loads before it is needed: a BM25 search never loads the encoder (nor torch), and
reading the search settings never loads the model.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from radsift.errors import ConfigError, IndexStoreError
from radsift.models.encoder import resolve_model_path
from radsift.models.poly_encoder import is_poly_encoder
from radsift.models.query_encoder import load_query_encoder
from radsift.models.reranker import Reranker
from radsift.models.settings import settings_of_model
from radsift.ranking import NEEDS_DENSE
from radsift.search.concepts import ConceptLinker
from radsift.search.passages import PolyReranker

log = logging.getLogger("radsift.search")


class IndexResources:
    """The models of an opened index, each loaded once on first use (thread-safe).

    The subclass (:class:`radsift.Index`) sets ``store`` before calling :meth:`__init__`.

    Args:
        model: Model folder to encode queries with (None = the model that built the index); a
            folder given here is checked against the index at once.
        threads: torch threads for query encoding.
        encoder: An already loaded encoder (tests, the demo): used as is.
        reranker: Cross-encoder folder (``radsift train --recipe rerank``), a poly-encoder folder or a
            loaded :class:`~radsift.models.reranker.Reranker`.
    """

    store = None  # the IndexStore; set by the subclass

    def __init__(self, *, model: str | Path | None, threads: int | None, encoder, reranker) -> None:
        self._reranker = reranker
        self._threads = threads
        self._encoder = encoder
        self._labeler = None
        self._settings = None
        self._linker = None
        self._lock = threading.RLock()
        self._model_path: Path | None = None
        if model is not None and encoder is None:
            self._model_path = self._checked_model(model)

    def _checked_model(self, model: str | Path) -> Path:
        path = resolve_model_path(model)
        self.store.manifest.check_model(path, self.store.index_dir)
        return path

    @property
    def reranker(self):
        """The loaded reranker (loaded on first use): a cross-encoder, or a poly-encoder folder's
        :class:`~radsift.search.passages.PolyReranker`; None when the index has none."""
        with self._lock:
            if isinstance(self._reranker, (str, Path)):  # a folder: load it once
                if is_poly_encoder(self._reranker):
                    self._reranker = PolyReranker(self._reranker, threads=self._threads)
                else:
                    self._reranker = Reranker.load(self._reranker, threads=self._threads)
        return self._reranker

    @property
    def encoder(self):
        """The query encoder, loaded on first dense query (BM25-only use never loads it): the model's ONNX
        export run by ONNX Runtime where there is one, else torch (:mod:`radsift.models.query_encoder`)."""
        if self._encoder is None:
            with self._lock:
                if self._encoder is None:
                    if self._model_path is None:
                        try:
                            self._model_path = self._checked_model(self.store.manifest.model_folder(self.store.index_dir))
                        except ConfigError:
                            m = self.store.manifest
                            raise IndexStoreError(
                                f"{self.store.index_dir} was built with model {m.model_name} ({m.model_path}), which "
                                "is not available here; pass --model with that model's folder") from None
                    # ONNX Runtime when the model has (or can get) an export, else torch (radsift.models.query_encoder).
                    self._encoder = load_query_encoder(self._model_path, threads=self._threads,
                                                       index_dir=self.store.index_dir, log=log.warning)
        return self._encoder

    @property
    def settings(self):
        """The search settings of the index's model (:mod:`radsift.models.settings`): its dense
        weight in ``hybrid`` and its concept-link threshold. Reading them never loads the model."""
        if self._settings is None:
            m = self.store.manifest
            path = self._model_path if self._model_path is not None else getattr(self._encoder, "path", None)
            if path is None and m.model_path and Path(m.model_folder(self.store.index_dir)).is_dir():
                path = m.model_folder(self.store.index_dir)
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
                    from radsift.labels.labeler import Labeler  # spaCy (and, through thinc, torch): on first use

                    lexicon = self.store.manifest.lexicon
                    self._labeler = Labeler(None if lexicon in (None, "packaged:chest_xray") else lexicon)
        return self._labeler

    @property
    def linker(self):
        """The concept linker of this index's lexicon and model (:mod:`radsift.search.concepts`; built on
        first use, its phrase vectors kept under ``INDEX/cache/``)."""
        if self._linker is None:
            with self._lock:
                if self._linker is None:
                    self._linker = ConceptLinker.for_lexicon(
                        self.labeler.lexicon, self.encoder, cache_dir=self.store.index_dir / "cache",
                        fingerprint=self.store.manifest.model_fingerprint)
        return self._linker

    @linker.setter
    def linker(self, value) -> None:
        self._linker = value

    def link_function(self, mode: str = "hybrid"):
        """The concept linker a search of ``mode`` reads queries with: a finding text -> its
        :class:`~radsift.search.concepts.Link` or None; None where linking is off (``bm25``, an index without lexicon
        labels, a model with no threshold). For reading a query against another index's words
        (:func:`radsift.search.reading.read_query`'s ``link``).

        Raises:
            ConfigError: ``mode`` is none of the search modes.
        """
        if mode not in NEEDS_DENSE:
            raise ConfigError(f"mode must be one of {', '.join(NEEDS_DENSE)}, not {str(mode)[:40]!r}")
        return self._link_function(mode, "", None)

    def _link_function(self, mode: str, query: str, query_vector):
        """finding text -> :class:`~radsift.search.concepts.Link` or None; None where linking is off
        (a mode without the encoder, an index without lexicon labels, or a model with no threshold)."""
        threshold = self.settings.link_threshold
        if not NEEDS_DENSE[mode] or self.store.manifest.lexicon is None or threshold > 1.0:
            return None

        def link(text: str):
            # The query itself often is its finding text: its vector is already there.
            vec = query_vector if text == query and query_vector is not None else self.encoder.encode_query(text)
            return self.linker.link(vec, threshold, text)

        return link
