"""Passage search: a note's section passages with their aspects, by ``"entity | aspect"`` or by question.

CAPR (Grundmann et al.) asks a note for *the passage* that says something about an entity under
an aspect. The index already holds every section as a unit with its canonical heading; its aspect
is derived here at read time from the aspect map (:mod:`radsift.text.aspects`), so no index
change is needed and a user's extended map applies to old indexes too.

``"pneumonia | treatment"`` (or ``query="pneumonia", aspect="treatment"``) becomes the model text
``"pneumonia treatment"`` (:func:`radsift.text.aspects.entity_aspect_text`, as in training) and
keeps only passages of that aspect; a plain question searches every passage. The first stage is
:meth:`radsift.Index.search` over section units: the index's bi-encoder (build the index with
``--model`` a bi-encoder from ``radsift train --recipe entity-aspect``) or, with ``first_stage``, a
poly-encoder in its place (:class:`PolyFirstStage`: it scores every live section through codes cached
per segment, :mod:`radsift.index.poly_codes`); the mode fuses either with BM25 (``dense``: the model
alone). A cross-encoder or a poly-encoder folder re-scores the top ``rerank`` passages through
:func:`radsift.models.reranker.rerank_head`, the rerank the passage benchmark measures: fused with the
first stage at the reranker's weight (for a cross-encoder the weight its training chose on development
data, ``radsift_reranker.json``, else 0.3, :data:`radsift.ranking.RERANK_WEIGHT`; 0: not reranked, and
:func:`rerank_summary` says so; a poly-encoder reranker's order alone).

A section longer than one window is read as overlapping windows (:func:`radsift.text.aspects.section_windows`)
as the benchmark reads it, and scored by its best window (:func:`radsift.ranking.best_per_owner`): the
bi-encoder through the index's window vectors (:func:`radsift.search.scoring.best_window`), a poly-encoder
through its cached codes.
The matched sentences of a passage are those sharing a content word with the entity (or the
question), each with its matched words.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from radsift.errors import ConfigError
from radsift.index.derived import check_first_stage  # also checks `radsift index build --poly`
from radsift.index.poly_codes import PolyCodes, poly_fingerprint
from radsift.models.encoder import query_threads
from radsift.models.poly_encoder import PolyEncoder, is_poly_encoder
from radsift.models.reranker import Reranker, rerank_head
from radsift.models.settings import settings_of_model
from radsift.search.highlight import highlight_spans
from radsift.text import split_sentences
from radsift.text.aspects import aspect_of, entity_aspect_text, resolve_aspect

#: Separator of ``"entity | aspect"`` queries.
ASPECT_SEPARATOR = "|"
#: First-stage depth when an aspect filters the passages (so that k of them remain).
ASPECT_DEPTH = 500


@dataclass(frozen=True)
class PassageQuery:
    """A parsed passage query: the text the model reads, and the entity and aspect when given."""

    text: str
    entity: str | None = None
    aspect: str | None = None


def parse_passage_query(query: str, aspect: str | None = None) -> PassageQuery:
    """``"pneumonia | treatment"`` or ``("pneumonia", aspect="plan")`` -> entity, aspect, model text.

    Raises:
        ConfigError: An empty entity or aspect, or both ``|`` and ``aspect`` given.
        AspectError: The aspect is unknown (the message lists the known aspects).
    """
    text = " ".join(str(query).split())
    if ASPECT_SEPARATOR in text:
        if aspect:
            raise ConfigError("give the aspect once: either \"ENTITY | ASPECT\" or --aspect, not both")
        entity, _, aspect = (p.strip() for p in text.partition(ASPECT_SEPARATOR))
        if not entity or not aspect:
            raise ConfigError(f"query {query!r}: expected \"ENTITY | ASPECT\", e.g. \"pneumonia | treatment\"")
    elif aspect:
        entity = text
    else:
        return PassageQuery(text)
    name = resolve_aspect(aspect)
    return PassageQuery(entity_aspect_text(entity, name), entity, name)


@dataclass(frozen=True)
class PassageHit:
    """One passage found: its note, heading, aspect, text, matched sentences and words."""

    report_id: str
    rank: int
    score: float
    heading: str
    aspect: str
    text: str
    sentences: tuple[tuple[int, int], ...] = ()
    highlights: tuple[tuple[int, int], ...] = ()
    metadata: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"report_id": self.report_id, "rank": self.rank, "score": float(self.score), "heading": self.heading,
                "aspect": self.aspect, "text": self.text, "sentences": [list(s) for s in self.sentences],
                "highlights": [list(h) for h in self.highlights], "metadata": dict(self.metadata)}


class PolyReranker:
    """A poly-encoder folder used as a reranker (the :class:`radsift.models.reranker.Reranker` interface).

    Its ``weight`` is 1: its scores replace the first stage's order (no fusion)."""

    weight = 1.0

    def __init__(self, path: str | Path, threads: int | None = None) -> None:
        self.poly = PolyEncoder.load(path, threads=threads)
        self.path = self.poly.path

    def score(self, query: str, texts: Sequence[str]):
        return self.poly.score_texts(query, texts)


class PolyFirstStage:
    """A poly-encoder folder as the first stage of passage search, in the place of the index's bi-encoder
    (``Index.search(..., first_stage=...)``): it scores every live section of the index by its best
    window, through the codes cached in ``INDEX/cache/poly/`` (:class:`radsift.index.poly_codes.PolyCodes`:
    a segment without codes is encoded on first use, with a line to ``say``).

    The model loads on first use (or :meth:`prepare`); its folder is checked, and fingerprinted, at once.

    Args:
        path: The poly-encoder folder.
        threads: torch threads.
        say: Told before a segment's codes are encoded (default: a line on stderr).
        poly: The model of ``path`` when it is already loaded (used as is).

    Attributes:
        path: The poly-encoder folder.
        settings: Its search settings (:func:`radsift.models.settings.settings_of_model`): ``hybrid``'s
            dense weight.

    Raises:
        ConfigError: ``path`` is not a poly-encoder folder (see :func:`check_first_stage`).
    """

    def __init__(self, path: str | Path, threads: int | None = None, say=None, *, poly=None) -> None:
        self.path = check_first_stage(path)
        self.fingerprint = poly_fingerprint(self.path)
        self.settings = settings_of_model(self.path)
        self._threads, self._say, self._poly = threads, say, poly
        self._codes = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return f"poly-encoder {self.path.name}"

    @property
    def codes(self):
        """The :class:`~radsift.index.poly_codes.PolyCodes` of the loaded model (loads it once)."""
        with self._lock:
            if self._codes is None:
                poly = self._poly or PolyEncoder.load(self.path, threads=self._threads)
                self._codes = PolyCodes(poly, self.fingerprint, say=self._say)
            return self._codes

    def prepare(self, store) -> list[Path]:
        """Load the model and read or encode the codes of every segment of ``store`` (a server's start)."""
        with store.guard():
            return self.codes.ensure(store)

    def scores(self, store, query: str, unit: str = "section"):
        """The poly-encoder score of every live section of ``store`` for ``query`` (store row order).

        Raises:
            ConfigError: ``unit`` is not ``section`` (the codes are those of section passages).
        """
        if unit != "section":
            raise ConfigError(f"a poly-encoder first stage scores section passages, not {unit} units: "
                              "use it with --unit passage")
        codes = self.codes
        with query_threads():  # one query: torch's threads collapse on shared cores (see QUERY_THREADS)
            return codes.scores(store, codes.poly.encode_queries([query])[0])


def load_passage_reranker(path: str | Path, threads: int | None = None, weight: float | None = None):
    """A cross-encoder or poly-encoder folder as a reranker: a cross-encoder at ``weight``, else at the weight
    chosen on development data (its ``radsift_reranker.json``) or :data:`radsift.models.reranker.DEFAULT_WEIGHT`,
    as the server and the passage benchmark load it."""
    return PolyReranker(path, threads) if is_poly_encoder(path) else Reranker.load(path, threads=threads, weight=weight)


def rerank_summary(reranker, top: int) -> dict[str, Any]:
    """How the top ``top`` passages were reranked, for the user: the reranker, its weight, where the weight
    comes from and a sentence saying so (weight 0: the reranker was loaded but does not help, and the
    passages keep the first stage's order)."""
    weight = float(getattr(reranker, "weight", 1.0))
    source = getattr(reranker, "weight_from", "poly-encoder: its order alone" if isinstance(reranker, PolyReranker)
                     else "given")
    name = Path(getattr(reranker, "path", "reranker")).name
    settings = getattr(reranker, "settings", None) or {}
    if weight == 0.0:
        why = ("chosen on development data: no weight beat the first stage alone"
               + (f" (R@1 {settings['dev_R@1'].get('0.0')})" if settings.get("dev_R@1") else "")
               if source == "development data" else source)
        note = f"not reranked: {name} does not help at weight 0 ({why}); the passages keep the first stage's order"
    else:
        r1 = settings.get("dev_R@1") or {}
        gain = (f": R@1 {r1.get(str(weight))} against {r1.get('0.0')} without it"
                if source == "development data" and str(weight) in r1 and "0.0" in r1 else "")
        note = f"the top {top} reranked by {name} at weight {weight:g} ({source}{gain})"
    return {"reranker": name, "top": int(top), "weight": weight, "weight_from": source, "reranked": weight > 0,
            "note": note}


def matched_sentences(words: str, text: str) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    """Sentences of ``text`` that share a content word with ``words``, and those words' spans."""
    sentences, spans = [], []
    for start, end in split_sentences(text):
        found = highlight_spans(words, text[start:end])
        if found:
            sentences.append((start, end))
            spans += [(start + a, start + b) for a, b in found]
    return tuple(sentences), tuple(spans)


def search_passages(index, query: str, *, k: int = 10, aspect: str | None = None, mode: str = "hybrid",
                    where: Mapping | Iterable[str] | None = None, rerank: int = 0, reranker=None,
                    first_stage: PolyFirstStage | None = None) -> list[PassageHit]:
    """Rank the index's section passages for an ``"entity | aspect"`` query or a question.

    Args:
        index: An open :class:`radsift.Index`.
        query: ``"ENTITY | ASPECT"`` or free text.
        k: Passages to return.
        aspect: The aspect, when not written in the query.
        mode: First-stage mode (``dense``, ``bm25``, ``hybrid``, ``hybrid-rrf``).
        where: Metadata filters.
        rerank: Re-score the top ``rerank`` passages with ``reranker`` (0 = off), fused with the first
            stage at the reranker's ``weight`` (:func:`radsift.models.reranker.rerank_head`).
        reranker: A cross-encoder :class:`~radsift.models.reranker.Reranker` or a :class:`PolyReranker`.
        first_stage: A :class:`PolyFirstStage` in the place of the index's bi-encoder (``dense``: it
            alone; ``hybrid``, ``hybrid-rrf``: fused with BM25; ``bm25`` refuses it).

    Raises:
        ConfigError, AspectError: A malformed query or an unknown aspect; ``first_stage`` with ``bm25``.
    """
    parsed = parse_passage_query(query, aspect)
    if rerank and reranker is None:
        raise ConfigError("--rerank needs --reranker DIR (a cross-encoder or a poly-encoder folder)")
    depth = max(k, rerank)
    if parsed.aspect is not None:
        depth = max(depth, ASPECT_DEPTH)
    hits = list(index.search(parsed.text, k=depth, mode=mode, level="sentence", unit="section", where=where,
                             negation="ignore", concepts=False, mentions=False, first_stage=first_stage))
    if parsed.aspect is not None:  # a filter: the passages of the asked aspect, in first-stage order
        hits = [h for h in hits if aspect_of(h.section) == parsed.aspect]
    if rerank:
        texts = [h.sections.get(h.section, "") if h.section else "" for h in hits]
        order, scores = rerank_head(parsed.text, texts, [h.score for h in hits], reranker, top=rerank)
        hits = [dataclasses.replace(hits[i], score=float(s)) for i, s in zip(order.tolist(), scores.tolist())]
    words = parsed.entity or parsed.text
    out = []
    for rank, h in enumerate(hits[:k], start=1):
        text = h.sections.get(h.section, "") if h.section else ""
        sentences, spans = matched_sentences(words, text)
        out.append(PassageHit(h.report_id, rank, float(h.score), h.section or "", aspect_of(h.section), text,
                              sentences, spans, dict(h.metadata)))
    return out
