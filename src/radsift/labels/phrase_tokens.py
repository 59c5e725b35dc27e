"""Tokens for phrase spotting: case-folded, singular, hyphens and slashes as spaces.

The spotter compares lexicon phrases and sentences token by token after the same
normalization, so ``Pleural Effusions`` in a report matches the lexicon phrase
``pleural effusion``. A hyphenated word is one token without its hyphens (``air-space`` and
``airspace`` are the same token); the spotter also tries hyphenated lexicon phrases with
the hyphens as spaces, so ``air-space disease`` matches all three spellings. Plurals are folded by a few English rules plus *irregular forms
derived from the lexicon's own words* (``metastasis`` -> ``metastases``, ``bulla`` ->
``bullae``, ``embolus`` -> ``emboli``, ``thorax`` -> ``thoraces``), so the rules never
need to be right for words the lexicon does not use; they only need to be applied the
same way on both sides.

Punctuation that ends a phrase (``, ; : ( ) [ ] ! ? .``) is kept as a *barrier* token (its
own character, see :data:`BARRIERS`): no phrase and no gap crosses it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

# Words (with inner apostrophes or hyphens), barrier punctuation, or the phrase gap marker "*".
_TOKEN_RE = re.compile(r"[^\W_]+(?:['-][^\W_]+)*|[,;:()\[\]!?.]|\*")
BARRIERS = frozenset(",;:()[]!?.")
GAP = "*"

# Built-in irregular plurals common in chest radiology; more are derived from a lexicon.
_BUILTIN_IRREGULAR = {
    "pneumothoraces": "pneumothorax",
    "hemothoraces": "hemothorax",
    "thoraces": "thorax",
    "apices": "apex",
    "vertices": "vertex",
    "cortices": "cortex",
    "indices": "index",
    "hila": "hilum",
    "hili": "hilum",
    "media": "medium",
    "data": "datum",
}


@dataclass(frozen=True, slots=True)
class Token:
    """One token of a sentence: its normalized form and character offsets."""

    norm: str  # the character itself for barrier punctuation
    start: int
    end: int


def derive_irregulars(words: Iterable[str]) -> dict[str, str]:
    """Plural -> singular for Latin/Greek singulars among ``words`` (lexicon vocabulary)."""
    table: dict[str, str] = {}
    for word in words:
        if len(word) < 4:
            continue
        if word.endswith("sis"):  # metastasis -> metastases
            table[word[:-2] + "es"] = word
        elif word.endswith("us"):  # embolus -> emboli
            table[word[:-2] + "i"] = word
        elif word.endswith("um"):  # diverticulum -> diverticula
            table[word[:-2] + "a"] = word
        elif word.endswith("a"):  # bulla -> bullae
            table[word + "e"] = word
        elif word.endswith(("ax", "ex", "ix")):  # thorax -> thoraces
            table[word[:-1] + "ces"] = word
    return table


#: Spelling variants folded to one form (after the plural), in lexicon phrases, sentences and open-vocabulary
#: phrases alike: "disk herniation" is "disc herniation".
SPELLINGS = {"disk": "disc", "distension": "distention", "tumour": "tumor",
             "oesophagus": "esophagus", "oesophageal": "esophageal", "haemorrhage": "hemorrhage",
             "haemorrhagic": "hemorrhagic", "anaemia": "anemia", "ischaemia": "ischemia", "ischaemic": "ischemic",
             "fibre": "fiber", "centre": "center", "oedematous": "edematous"}


def spelling(word: str) -> str:
    """The one spelling of a (lower-case) word: :data:`SPELLINGS`, or the word."""
    return SPELLINGS.get(word, word)


class Normalizer:
    """Folds words to a lookup key: lower case, singular.

    Args:
        irregular: Extra plural -> singular forms (see :func:`derive_irregulars`).
    """

    def __init__(self, irregular: dict[str, str] | None = None) -> None:
        self.irregular = {**_BUILTIN_IRREGULAR, **(irregular or {})}
        self._cache: dict[str, str] = {}

    def word(self, word: str) -> str:
        """The lookup key of one word."""
        key = self._cache.get(word)
        if key is None:
            key = spelling(self._singular(word.casefold().replace("-", "")))
            if len(self._cache) < 200_000:
                self._cache[word] = key
        return key

    def _singular(self, w: str) -> str:
        if w in self.irregular:
            return self.irregular[w]
        if len(w) <= 3 or not w.endswith("s") or w.endswith(("ss", "us", "is", "ous")):
            return w
        if w.endswith("ies") and len(w) > 4:
            return w[:-3] + "y"  # opacities -> opacity
        if w.endswith(("sses", "xes", "ches", "shes", "zes")):
            return w[:-2]  # masses -> mass, thoraxes -> thorax
        return w[:-1]  # effusions -> effusion, changes -> change

    def tokens(self, text: str) -> list[Token]:
        """Tokens of a sentence; a ``*`` in the text is ignored (it is only a gap in phrases)."""
        out = []
        for m in _TOKEN_RE.finditer(text):
            s = m.group()
            if s == GAP:
                continue
            norm = s if s in BARRIERS else self.word(s)
            out.append(Token(norm, m.start(), m.end()))
        return out

    def phrase(self, phrase: str) -> tuple[str, ...]:
        """The key of a lexicon phrase: normalized words, ``*`` kept as the gap marker.

        Barrier punctuation in a phrase is dropped, so ``"heart, enlarged"`` is ``heart enlarged``.
        """
        out = []
        for m in _TOKEN_RE.finditer(phrase):
            s = m.group()
            if s == GAP:
                out.append(GAP)
            elif s.isalnum() or len(s) > 1:
                out.append(self.word(s))
        return tuple(out)


def phrase_words(phrases: Iterable[str]) -> set[str]:
    """Lower-cased words of phrases (to derive irregular plurals from)."""
    words: set[str] = set()
    for phrase in phrases:
        for m in _TOKEN_RE.finditer(phrase.casefold()):
            if m.group() not in BARRIERS and m.group() != GAP:
                words.add(m.group().replace("-", ""))
    return words
