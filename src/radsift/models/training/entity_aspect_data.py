"""The entity-aspect recipes' data: CAPR's self-supervision (Grundmann, Arnold & Löser) on clinical notes and MedQuAD.

Notes are split into passages at their headings (:func:`radsift.text.aspects.note_passages`; a
passage longer than :data:`~radsift.text.aspects.WINDOW_WORDS` words becomes overlapping
windows); the dictionary NER (:mod:`radsift.labels.entities`) finds the entities of each
passage; the self-supervised query of a passage is ``(entity, aspect)`` with the aspect its
heading normalised (:func:`radsift.text.aspects.entity_aspect_text`). MedQuAD documents give
passages too: each answer, its aspect the question type, its entity the document's focus.

Training data never includes a document of the CDV test split (:func:`radsift.corpus.medquad.test_document_ids`),
a passage whose text equals a test passage, is a near-duplicate of one (word-shingle Jaccard at
least ``near_jaccard``) or a word prefix of one or the reverse (:mod:`radsift.text.near_duplicates`),
nor an example whose (entity, aspect) the test split asks; ``dev_fraction`` of the remaining MedQuAD
documents are held out as the development split (the one tuned on; :func:`radsift.splits.split_medquad`).
Trained with MedQuAD, a model is "supervised by MedQuAD's metadata, in-collection": never a zero-shot
figure. The notes-only setting is :mod:`radsift.models.training.entity_aspect_notes`.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from radsift.corpus.medquad import read_cdv_test, read_medquad, test_document_ids
from radsift.corpus.medquad_passages import cdv_aspect, medquad_aspect
from radsift.errors import ConfigError, CorpusError
from radsift.labels.entities import build_entity_dictionary
from radsift.records import Report
from radsift.splits import split_medquad
from radsift.text.near_duplicates import NearDuplicateIndex
from radsift.text.aspects import (OTHER, UNSPECIFIED, WINDOW_OVERLAP, WINDOW_WORDS, aspect_map, entity_aspect_text,
                                  passage_windows)

#: Where ``radsift train`` looks for MedQuAD and the CDV split when no folder is given (beside the project).
DEFAULT_DATA_DIR = Path("../shared/data")
#: Entities of one passage that become queries (the first ones in reading order).
MAX_ENTITIES_PER_PASSAGE = 3
#: A training passage this similar to a test passage (word-shingle Jaccard) is dropped.
NEAR_JACCARD = 0.5
_WS = re.compile(r"\s+")


def _key(text: str) -> str:
    return _WS.sub(" ", text).strip().casefold()


@dataclass(frozen=True)
class EAPassage:
    """A training passage: its note, source, aspect, text and the entity keys it mentions."""

    note: str
    source: str
    aspect: str
    text: str
    entities: frozenset[str]


@dataclass(frozen=True)
class EAExample:
    """One self-supervised example: the query's entity (as written) and aspect, its passage row."""

    entity: str
    key: str
    aspect: str
    positive: int
    note: str
    source: str

    @property
    def query(self) -> str:
        return entity_aspect_text(self.entity, self.aspect)


@dataclass
class EAData:
    """Passages and examples of the recipe, with the development split.

    Attributes:
        passages: Training passages.
        examples: Training examples.
        dev_docs: Held-out MedQuAD documents (development split; never trained on).
        test_ids: Document ids of the CDV test split (excluded).
        stats: Counts for the model card.
        dictionary: The entity dictionary the examples were found with.
    """

    passages: list[EAPassage]
    examples: list[EAExample]
    dev_docs: list = field(default_factory=list)
    test_ids: frozenset[str] = frozenset()
    stats: dict[str, Any] = field(default_factory=dict)
    dictionary: Any = None

    def __post_init__(self) -> None:
        self.by_note: dict[str, list[int]] = defaultdict(list)
        self.by_aspect: dict[str, list[int]] = defaultdict(list)
        for i, p in enumerate(self.passages):
            self.by_note[p.note].append(i)
            self.by_aspect[p.aspect].append(i)

    def notes(self) -> set[str]:
        """Every note/document id that gave a training passage."""
        return {p.note for p in self.passages}


def resolve_data_dirs(medquad_dir: str | None, cdv_dir: str | None) -> tuple[Path | None, Path | None]:
    """MedQuAD and CDV folders: as given, else ``../shared/data/{medquad,medquad-cdv-test}`` when present."""
    mq = Path(medquad_dir) if medquad_dir else DEFAULT_DATA_DIR / "medquad"
    cdv = Path(cdv_dir) if cdv_dir else DEFAULT_DATA_DIR / "medquad-cdv-test"
    if medquad_dir and not mq.is_dir():
        raise ConfigError(f"medquad_dir: {mq} is not a folder")
    if cdv_dir and not cdv.is_dir():
        raise ConfigError(f"cdv_dir: {cdv} is not a folder")
    return (mq if mq.is_dir() else None), (cdv if cdv.is_dir() else None)


class _Collector:
    """Training passages and examples as they are gathered, with what the test split bans and the counts dropped."""

    def __init__(self, test_texts: list[str], test_pairs: Iterable[tuple[str, str]], near_jaccard: float) -> None:
        self.banned_text = {_key(t) for t in test_texts}
        self.near = NearDuplicateIndex(test_texts) if test_texts else None
        self.near_jaccard = near_jaccard
        self.banned_pairs = {(_key(e), a) for e, a in test_pairs}
        self.passages: list[EAPassage] = []
        self.examples: list[EAExample] = []
        self.seen_text: set[str] = set()
        self.dropped = {"test_text": 0, "duplicate": 0, "test_prefix": 0, "near_duplicate": 0, "test_pair": 0}

    def add_passage(self, note: str, source: str, aspect: str, text: str, entities: frozenset[str]) -> int | None:
        """The new passage's row, or None when it is (near) a test passage or a duplicate."""
        k = _key(text)
        reason = ("test_text" if k in self.banned_text
                  else "test_prefix" if self.near is not None and self.near.prefix_of(text) >= 0
                  else "near_duplicate" if self.near is not None and self.near.best_jaccard(text)[0] >= self.near_jaccard
                  else "duplicate" if k in self.seen_text else None)
        if reason is not None:
            self.dropped[reason] += 1
            return None
        self.seen_text.add(k)
        self.passages.append(EAPassage(note, source, aspect, text, entities))
        return len(self.passages) - 1

    def asked(self, keys: Iterable[str], aspect: str) -> bool:
        """Whether the test split asks one of these entity keys with this aspect (counted as dropped)."""
        if any((k, aspect) in self.banned_pairs for k in keys):
            self.dropped["test_pair"] += 1
            return True
        return False


def _add_notes(c: _Collector, reports: Iterable[Report], test_ids: frozenset[str], dictionary, max_words: int,
               say: Callable[[str], None]) -> int:
    """Notes: sections -> windows -> dictionary NER -> examples. Returns the distinct notes read."""
    amap = aspect_map()
    pending: list[tuple[str, str, str]] = []
    seen_notes: set[str] = set()
    for r in reports:
        whole = _key(r.text())
        if not whole or whole in seen_notes or r.id in test_ids:
            continue
        seen_notes.add(whole)
        for heading, text in r.sections.items():
            aspect = amap.aspect_of(heading)
            if aspect in (OTHER, UNSPECIFIED) or not text.strip():
                continue
            for w in passage_windows(text, max_words, WINDOW_OVERLAP):
                pending.append((r.id, aspect, w))
    say(f"entity-aspect: {len(seen_notes)} distinct notes, {len(pending)} note passages; dictionary NER "
        f"({len(dictionary)} entities, {dictionary.phrase_count} phrases) ...")
    mentions = dictionary.find_many([t for _, _, t in pending])
    for (note, aspect, text), found in zip(pending, mentions):
        names = list(dict.fromkeys(m.entity for m in found))
        if not names:
            continue
        row = c.add_passage(note, "notes", aspect, text, frozenset(_key(n) for n in names))
        if row is None:
            continue
        surface = {m.entity: m.text for m in reversed(found)}  # the first mention's wording
        for name in names[:MAX_ENTITIES_PER_PASSAGE]:
            if not c.asked([_key(name)], aspect):
                c.examples.append(EAExample(surface[name], _key(name), aspect, row, note, "notes"))
    return len(seen_notes)


def _add_medquad(c: _Collector, train_docs: Iterable, max_words: int) -> None:
    """MedQuAD training documents: each answer, its focus entity, its question type as aspect."""
    for d in train_docs:
        keys = frozenset([_key(d.focus)] + [_key(s) for s in d.synonyms])
        for qa in d.qa:
            aspect = medquad_aspect(qa.qtype)
            if aspect is None or c.asked(keys, aspect):
                continue
            for w in passage_windows(qa.answer.strip(), max_words, WINDOW_OVERLAP)[:1]:
                row = c.add_passage(d.id, "medquad", aspect, w, keys)
                if row is not None:
                    c.examples.append(EAExample(d.focus, _key(d.focus), aspect, row, d.id, "medquad"))


def build_entity_aspect_data(reports: Iterable[Report], *, medquad_docs: Iterable = (), test_ids: frozenset[str] = frozenset(),
                             test_texts: Iterable[str] = (), dev_fraction: float = 0.1, seed: int = 0,
                             dictionary=None, max_words: int | None = None,
                             test_pairs: Iterable[tuple[str, str]] = (), near_jaccard: float = NEAR_JACCARD,
                             log: Callable[[str], None] | None = None) -> EAData:
    """Passages and (entity, aspect) examples from notes and MedQuAD documents.

    Args:
        reports: Clinical notes (their sections are the passages; duplicate texts count once).
        medquad_docs: MedQuAD documents (:class:`radsift.corpus.medquad.MedQuADDocument`).
        test_ids: Document ids never to use (the CDV test split).
        test_texts: Passage texts never to train on (the test split's answers), nor their near-duplicates
            (Jaccard of word shingles at least ``near_jaccard``) and word prefixes.
        test_pairs: (entity, aspect) pairs the test split asks: no example asks one.
        dev_fraction: Share of the remaining MedQuAD documents held out for development.
        seed: Seed of the development split.
        dictionary: An :class:`radsift.labels.entities.EntityDictionary` (default: built from the
            training MedQuAD documents and the packaged lexicon).
        max_words: Window size for long passages (default :data:`radsift.text.aspects.WINDOW_WORDS`).
    """
    say = log or (lambda m: None)
    max_words = max_words or WINDOW_WORDS
    test_ids = frozenset(test_ids)
    c = _Collector(list(test_texts), test_pairs, near_jaccard)
    train_docs, dev_docs = split_medquad(medquad_docs, test_ids, dev_fraction, seed)
    if dictionary is None:
        dictionary = build_entity_dictionary(train_docs)
    n_notes = _add_notes(c, reports, test_ids, dictionary, max_words, say)
    n_note_examples = len(c.examples)
    _add_medquad(c, train_docs, max_words)
    data = EAData(c.passages, c.examples, dev_docs=dev_docs, test_ids=test_ids, dictionary=dictionary)
    leaked = data.notes() & set(test_ids)
    if leaked:  # a guard, not a filter: the code above must never let one through
        raise CorpusError(f"test-split documents reached the training data: {sorted(leaked)[:3]}")
    if not c.examples:
        raise CorpusError("entity-aspect: no (entity, aspect) example: no known heading with a dictionary entity "
                          "in the notes, and no MedQuAD training document")
    dropped = c.dropped
    data.stats = {"notes": n_notes, "medquad_train_docs": len(train_docs), "medquad_dev_docs": len(dev_docs),
                  "test_docs_excluded": len(test_ids), "passages": len(c.passages), "examples": len(c.examples),
                  "note_examples": n_note_examples, "medquad_examples": len(c.examples) - n_note_examples,
                  "dropped_test_text": dropped["test_text"], "dropped_duplicate_text": dropped["duplicate"],
                  "dropped_test_prefix": dropped["test_prefix"], "dropped_near_duplicate": dropped["near_duplicate"],
                  "dropped_test_pair": dropped["test_pair"], "near_jaccard": near_jaccard,
                  "dictionary_entities": len(dictionary), "dictionary_phrases": dictionary.phrase_count}
    say("entity-aspect data: " + ", ".join(f"{k} {v}" for k, v in data.stats.items()))
    return data


def load_test_pairs(config) -> frozenset[tuple[str, str]]:
    """The (entity, aspect) pairs the CDV test split asks (entity as annotated, radsift's aspect), or
    none when the split is not found."""
    mq, cdv = resolve_data_dirs(config.medquad_dir, config.cdv_dir)
    if mq is None or cdv is None:
        return frozenset()
    pairs = set()
    for q in read_cdv_test(cdv, mq).queries:
        try:
            pairs.add((q.entity, cdv_aspect(q.aspect)))
        except ConfigError:  # an aspect the map does not know: no training example can ask it
            continue
    return frozenset(pairs)


def load_sources(config, say):
    """MedQuAD training candidates, the test split's document ids and passage texts."""
    mq, cdv = resolve_data_dirs(config.medquad_dir, config.cdv_dir)
    docs, test_ids, test_texts = [], frozenset(), []
    if mq is not None:
        docs = list(read_medquad(mq))
        if cdv is None:
            raise ConfigError(f"MedQuAD found at {mq} but not the CDV test split: give cdv_dir so that its documents "
                              "are kept out of training")
        test_ids = test_document_ids(cdv)
        test_texts = [p.text for p in read_cdv_test(cdv, mq).passages]
        say(f"MedQuAD: {len(docs)} documents with answers, {len(test_ids)} test-split documents excluded ({cdv})")
    else:
        say("MedQuAD: not found (pass medquad_dir): training on the notes alone")
    return docs, test_ids, test_texts


def ea_data_to_json(data: EAData) -> dict:
    """The passages, examples and counts of ``data`` in a JSON-ready form (to train on another machine;
    neither the dictionary nor the development split travel)."""
    return {"passages": [[p.note, p.source, p.aspect, p.text, sorted(p.entities)] for p in data.passages],
            "examples": [[e.entity, e.key, e.aspect, e.positive, e.note, e.source] for e in data.examples],
            "stats": data.stats}


def ea_data_from_json(obj: dict) -> EAData:
    """The inverse of :func:`ea_data_to_json` (no dictionary, no development split)."""
    passages = [EAPassage(n, s, a, t, frozenset(ents)) for n, s, a, t, ents in obj["passages"]]
    examples = [EAExample(ent, key, a, int(pos), n, s) for ent, key, a, pos, n, s in obj["examples"]]
    return EAData(passages, examples, stats=dict(obj.get("stats", {})))
