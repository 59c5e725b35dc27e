"""Near-duplicate texts: word-shingle Jaccard similarity and prefixes, against a fixed set of texts.

The in-collection setting of the ``entity-aspect`` recipe trains on MedQuAD documents outside the
CDV test split, but MedQuAD repeats answer templates across documents and sources (GARD and GHR
answers of one disease, "This condition is inherited in an autosomal recessive pattern ..."). A
training passage is dropped when it is a near-duplicate of a test passage: its set of word
:data:`SHINGLE`-grams has a Jaccard similarity of at least a threshold with a test passage's, or
one text's words are a prefix of the other's (a training window cut from a longer answer whose
start is a test passage, or the reverse).

Exact Jaccard over an inverted index of the test texts' shingles (``datasketch``'s MinHash would
estimate the same figure; the exact one needs no dependency and the test split is small).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Sequence

#: Words per shingle.
SHINGLE = 5
#: A prefix counts when the shorter text has at least this many words.
MIN_PREFIX_WORDS = 8
_WORDS = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """Lower-case word tokens (letters, digits, underscore) of a text."""
    return _WORDS.findall(text.casefold())


def shingles(tokens: Sequence[str], size: int = SHINGLE) -> frozenset[tuple[str, ...]]:
    """The set of ``size``-word shingles of ``tokens`` (a shorter text is one shingle of all its words)."""
    if len(tokens) <= size:
        return frozenset([tuple(tokens)]) if tokens else frozenset()
    return frozenset(tuple(tokens[i:i + size]) for i in range(len(tokens) - size + 1))


class NearDuplicateIndex:
    """Finds, for a text, the most similar of a fixed set of texts (the test passages).

    Args:
        texts: The texts to protect.
        size: Words per shingle.
    """

    def __init__(self, texts: Sequence[str], size: int = SHINGLE) -> None:
        self.size = size
        self.tokens = [words(t) for t in texts]
        self.sets = [shingles(t, size) for t in self.tokens]
        self.postings: dict[tuple[str, ...], list[int]] = defaultdict(list)
        for row, s in enumerate(self.sets):
            for sh in s:
                self.postings[sh].append(row)
        # prefixes: texts by their first MIN_PREFIX_WORDS words
        self.heads: dict[tuple[str, ...], list[int]] = defaultdict(list)
        for row, t in enumerate(self.tokens):
            if len(t) >= MIN_PREFIX_WORDS:
                self.heads[tuple(t[:MIN_PREFIX_WORDS])].append(row)

    def __len__(self) -> int:
        return len(self.sets)

    def best_jaccard(self, text: str) -> tuple[float, int]:
        """``(similarity, row)`` of the indexed text most similar to ``text`` (``(0.0, -1)`` when none shares a shingle)."""
        mine = shingles(words(text), self.size)
        counts: Counter[int] = Counter()
        for sh in mine:
            counts.update(self.postings.get(sh, ()))
        best, row = 0.0, -1
        for r, inter in counts.items():
            j = inter / (len(mine) + len(self.sets[r]) - inter)
            if j > best:
                best, row = j, r
        return best, row

    def prefix_of(self, text: str) -> int:
        """Row of an indexed text that ``text`` is a word prefix of, or that is a word prefix of ``text``
        (-1 when none; both must have at least :data:`MIN_PREFIX_WORDS` words)."""
        mine = words(text)
        if len(mine) < MIN_PREFIX_WORDS:
            return -1
        for r in self.heads.get(tuple(mine[:MIN_PREFIX_WORDS]), ()):
            other = self.tokens[r]
            n = min(len(mine), len(other))
            if mine[:n] == other[:n]:
                return r
        return -1
