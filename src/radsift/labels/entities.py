"""Dictionary NER: clinical entities found in text by exact phrase matching.

No biomedical NER model can be installed offline, so CAPR's entity step (Grundmann et al.) is
done with a dictionary built from the data: the focus entities of MedQuAD documents with their
synonyms (entries sharing a UMLS CUI are one entity) and the concepts of a radsift finding
lexicon. Phrases are matched case-insensitively on spaCy tokens with ``PhraseMatcher`` (a blank
English tokenizer, no model), longest match first, with a plural ``-s`` variant of each phrase.

What this misses (a trained NER would not): entities outside the dictionary (most drugs,
procedures and anatomy are not MedQuAD focus entities), abbreviations and misspellings not
listed as synonyms, inflections other than a final ``-s``, word-order variants ("cancer of
the lung" for "lung cancer"), and context: a matched name is an entity whether negated,
hypothetical or part of a longer unlisted name. Short ambiguous names are dropped (fewer than
:data:`MIN_CHARS` characters, or a stop word).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from radsift.labels.lexicon import load_lexicon

#: Phrases shorter than this (characters) match only as upper-case abbreviations of at least
#: :data:`MIN_ABBREVIATION` letters, case-sensitively ("CKD" but not "ckd"; "AS", "MS" never).
MIN_CHARS = 4
MIN_ABBREVIATION = 3
# Common words that are also MedQuAD focus names or lexicon phrases and would flood the matches.
_STOP = frozenset("""normal other others none help about what when care health information problems problem
    disease diseases disorder disorders condition conditions syndrome treatment symptoms pain well
    stable clear good clinical""".split())


@dataclass(frozen=True)
class Entity:
    """One dictionary entry.

    Attributes:
        name: Canonical name (the first name seen for its CUI).
        cui: UMLS CUI when known.
        synonyms: Other names.
        source: ``medquad`` or ``lexicon``.
    """

    name: str
    cui: str | None = None
    synonyms: tuple[str, ...] = ()
    source: str = "medquad"


@dataclass(frozen=True)
class EntityMention:
    """An entity found in a text: its canonical name, CUI and character span."""

    entity: str
    cui: str | None
    start: int
    end: int
    text: str


def _usable(phrase: str) -> bool:
    p = " ".join(phrase.split())
    return len(p) >= MIN_CHARS and not p.isdigit() and p.casefold() not in _STOP and "*" not in p


def _abbreviation(phrase: str) -> bool:
    p = phrase.strip()
    return MIN_ABBREVIATION <= len(p) < MIN_CHARS and p.isalpha() and p.isupper()


class EntityDictionary:
    """Finds dictionary entities in texts (spaCy ``PhraseMatcher`` on lower-cased tokens).

    Args:
        entities: The entries; names and synonyms of entries with the same CUI are merged
            into the first.
    """

    def __init__(self, entities: Iterable[Entity]) -> None:
        import spacy
        from spacy.matcher import PhraseMatcher

        merged: dict[str, Entity] = {}
        by_cui: dict[str, str] = {}
        for e in entities:
            key = by_cui.get(e.cui) if e.cui else None
            key = key or e.name.casefold()
            if key in merged:
                old = merged[key]
                names = tuple(dict.fromkeys(old.synonyms + ((e.name,) if e.name != old.name else ()) + e.synonyms))
                merged[key] = Entity(old.name, old.cui or e.cui, names, old.source)
            else:
                merged[key] = e
            if e.cui:
                by_cui.setdefault(e.cui, key)
        self.entities: list[Entity] = list(merged.values())
        self.nlp = spacy.blank("en")
        self.matcher = PhraseMatcher(self.nlp.vocab, attr="LOWER")
        self.abbreviations = PhraseMatcher(self.nlp.vocab, attr="ORTH")
        self._phrases: dict[str, Entity] = {}
        self._abbrev: dict[str, Entity] = {}
        for e in self.entities:
            for phrase in (e.name, *e.synonyms):
                if _abbreviation(phrase):
                    self._abbrev.setdefault(phrase.strip(), e)
                if not _usable(phrase):
                    continue
                variants = [" ".join(phrase.split())]
                if variants[0][-1:].isalpha() and not variants[0].lower().endswith("s"):
                    variants.append(variants[0] + "s")
                for v in variants:
                    self._phrases.setdefault(v.casefold(), e)
        # One pattern per phrase; the match id is the phrase, looked up in _phrases.
        for phrase in self._phrases:
            self.matcher.add(phrase, [self.nlp.make_doc(phrase)])
        for abbrev in self._abbrev:
            self.abbreviations.add("ABBR:" + abbrev, [self.nlp.make_doc(abbrev)])

    def __len__(self) -> int:
        return len(self.entities)

    @property
    def phrase_count(self) -> int:
        """Phrases matched (names, synonyms and their plurals)."""
        return len(self._phrases) + len(self._abbrev)

    def find(self, text: str) -> list[EntityMention]:
        """Non-overlapping entity mentions in ``text``, longest first then leftmost, in reading order."""
        return self._mentions(self.nlp.make_doc(text))

    def find_many(self, texts: Sequence[str]) -> list[list[EntityMention]]:
        """:meth:`find` for many texts (one tokenizer pass)."""
        return [self._mentions(doc) for doc in self.nlp.tokenizer.pipe(texts, batch_size=256)]

    def _mentions(self, doc) -> list[EntityMention]:
        spans = []
        for match_id, start, end in list(self.matcher(doc)) + list(self.abbreviations(doc)):
            spans.append((end - start, start, end, self.nlp.vocab.strings[match_id]))
        spans.sort(key=lambda s: (-s[0], s[1]))
        taken = [False] * len(doc)
        out = []
        for _, start, end, phrase in spans:
            if any(taken[start:end]):
                continue
            for k in range(start, end):
                taken[k] = True
            e = self._abbrev[phrase[5:]] if phrase.startswith("ABBR:") else self._phrases[phrase]
            span = doc[start:end]
            out.append(EntityMention(e.name, e.cui, span.start_char, span.end_char, span.text))
        out.sort(key=lambda m: m.start)
        return out


def medquad_entities(documents: Iterable) -> list[Entity]:
    """Entities of MedQuAD documents (:class:`radsift.corpus.medquad.MedQuADDocument`): focus, first CUI, synonyms."""
    return [Entity(d.focus, d.cuis[0] if d.cuis else None, tuple(d.synonyms), "medquad") for d in documents if d.focus]


def lexicon_entities(lexicon=None) -> list[Entity]:
    """Entities of a radsift finding lexicon (default: the packaged one): name and synonyms."""
    lex = lexicon if lexicon is not None else load_lexicon()
    return [Entity(c.name, None, tuple(s for s in c.synonyms if s != c.name), "lexicon") for c in lex]


def build_entity_dictionary(documents: Iterable = (), *, lexicon: bool = True) -> EntityDictionary:
    """The entity dictionary of ``radsift train --recipe entity-aspect``: MedQuAD focus entities
    (pass only the training documents) plus the packaged lexicon's concepts."""
    entries = medquad_entities(documents)
    if lexicon:
        entries += lexicon_entities()
    return EntityDictionary(entries)
