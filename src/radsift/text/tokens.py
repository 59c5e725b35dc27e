"""The BM25 tokenizer: lower-case word tokens, English stems, negation words kept.

No stop-word list is applied: radiology meaning hangs on "no", "not" and "without", and a
stop-word list would delete exactly the words that tell "pneumothorax" from "no pneumothorax".
"""

from __future__ import annotations

import re
from functools import lru_cache

import Stemmer

# Words, decimals ("2.5") and de-identification tokens; hyphenated words split into parts.
TOKEN_RE = re.compile(r"[A-Za-z]+|\d+(?:\.\d+)?")
TOKENIZER_VERSION = 1

_stemmer = Stemmer.Stemmer("english")


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """Snowball stem of a lower-cased word ("effusions" -> "effus")."""
    return _stemmer.stemWord(word)


def word_groups(bits: int, *words: str) -> tuple[tuple[tuple[str, ...], int], ...]:
    """``((word,), bits)`` for each of ``words``: one-word groups of a word table read from units' postings
    (:data:`radsift.text.bodyplaces.PLACE_WORDS`, :data:`radsift.text.changes.UNIT_WORDS` ...)."""
    return tuple(((w,), bits) for w in words)


def tokenize(text: str) -> list[str]:
    """Stemmed, lower-cased tokens of ``text``, in order, keeping negation words."""
    return [stem(m.group().lower()) for m in TOKEN_RE.finditer(text)]


def token_spans(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, stem)`` for each token of ``text`` (for highlighting)."""
    return [(m.start(), m.end(), stem(m.group().lower())) for m in TOKEN_RE.finditer(text)]
