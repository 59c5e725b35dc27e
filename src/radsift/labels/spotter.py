"""Phrase spotting: the longest lexicon phrases in a sentence, with character spans.

Sentences and lexicon phrases are compared as normalized tokens (see
:mod:`radsift.labels.phrase_tokens`), so case, plural/singular, hyphens and punctuation do not
matter. Among overlapping candidates the one covering more tokens wins ("calcified
granuloma" over "granuloma"); ties go to the earlier one.

A candidate is one of three kinds, from the lexicon entry's lists:

* ``synonym``: a mention of the finding (its status is decided later by negation rules);
* ``absent``: a phrase stating the finding is absent;
* ``subject``: a normal subject ("heart size"), which only becomes a mention when a
  normal-state predicate describes it (see :mod:`radsift.labels.negation`).

A phrase with a ``*`` gap may hold other findings between its first word and its end: "tortuous calcified
thoracic aorta" is aortic tortuosity ("tortuous * aorta") and holds atherosclerotic calcification
("calcified thoracic aorta"); such findings are the match's ``inner`` matches, read with its status. The gap
may open with a comma between premodifiers ("Tortuous, calcified thoracic aorta").
"""

from __future__ import annotations

from dataclasses import dataclass

from radsift.labels.lexicon import MAX_GAP, Concept, Lexicon, load_lexicon
from radsift.labels.phrase_tokens import BARRIERS, GAP, Token

# A "*" gap never runs through a negation or a clause break: "heart is not enlarged" must not
# match "heart * enlarged".
GAP_STOP_WORDS = frozenset(
    "no not without negative neither nor never cannot but however although though except "
    "whereas while resolved removed normal".split()
)
KINDS = ("synonym", "absent", "subject")
#: The words that join premodifiers sharing one head ("cardiac and mediastinal contours", "hilar, mediastinal").
SHARED_HEAD_JOINS = frozenset({"and", "or", ","})
_KIND_RANK = {"absent": 0, "synonym": 1, "subject": 2}


@dataclass(frozen=True, slots=True)
class Match:
    """One spotted phrase.

    Attributes:
        concept: The lexicon concept.
        kind: ``synonym``, ``absent`` or ``subject``.
        start: Character offset in the sentence.
        end: End character offset (exclusive).
        first: Index of the first token.
        last: Index one past the last token.
        text: The sentence text of the span.
        inner: Synonym matches of other concepts inside a gapped match, after its first word.
    """

    concept: Concept
    kind: str
    start: int
    end: int
    first: int
    last: int
    text: str
    inner: tuple["Match", ...] = ()


@dataclass(frozen=True, slots=True)
class _Pattern:
    key: tuple[str, ...]
    concept: Concept
    kind: str


class Spotter:
    """Finds lexicon phrases in sentences.

    Args:
        lexicon: The lexicon (``None``: the packaged chest X-ray lexicon).
    """

    def __init__(self, lexicon: Lexicon | None = None) -> None:
        self.lexicon = lexicon if lexicon is not None else load_lexicon()
        self.normalizer = self.lexicon.normalizer
        self._by_first: dict[str, list[_Pattern]] = {}
        seen: set[tuple[str, ...]] = set()
        for concept in self.lexicon:
            lists = (
                ("synonym", concept.synonyms),
                ("absent", concept.absent_phrases),
                ("subject", concept.normal_subjects),
            )
            for kind, phrases in lists:
                for phrase in phrases:
                    variants = [phrase]
                    if "-" in phrase:  # "air-space" (one token, = "airspace") also as "air space"
                        variants.append(phrase.replace("-", " "))
                    for variant in variants:
                        key = self.normalizer.phrase(variant)
                        if key and key not in seen:
                            seen.add(key)
                            self._by_first.setdefault(key[0], []).append(_Pattern(key, concept, kind))
        for patterns in self._by_first.values():
            patterns.sort(key=lambda p: -len(p.key))

    def tokens(self, text: str) -> list[Token]:
        """The normalized tokens of ``text``."""
        return self.normalizer.tokens(text)

    def spot(self, text: str, tokens: list[Token] | None = None) -> list[Match]:
        """Non-overlapping longest matches in ``text``, in reading order.

        Args:
            text: One sentence.
            tokens: Its tokens, when the caller already has them.
        """
        toks = tokens if tokens is not None else self.tokens(text)
        norms = [t.norm for t in toks]
        candidates: list[tuple[int, int, int, _Pattern]] = []
        for i, norm in enumerate(norms):
            patterns = self._by_first.get(norm)
            if not patterns:
                continue
            for pattern in patterns:
                end = _match(pattern.key, norms, i)
                if end is not None:
                    candidates.append((end - i, i, end, pattern))
        if not candidates:
            return []
        # Longest first, then leftmost, then absent > synonym > subject for identical spans.
        candidates.sort(key=lambda c: (-c[0], c[1], _KIND_RANK[c[3].kind]))
        taken = [False] * len(norms)
        chosen = []
        for _, first, last, pattern in candidates:
            if any(taken[first:last]):
                continue
            for k in range(first, last):
                taken[k] = True
            start, end = toks[first].start, toks[last - 1].end
            inner = _inner(candidates, first, last, pattern, toks, text) if GAP in pattern.key else ()
            chosen.append(Match(pattern.concept, pattern.kind, start, end, first, last, text[start:end], inner))
        chosen.extend(self._shared_heads(chosen, norms, toks, text, taken))
        chosen.sort(key=lambda m: m.start)
        return chosen

    def _shared_heads(self, chosen: list[Match], norms: list[str], toks: list[Token], text: str,
                      taken: list[bool]) -> list[Match]:
        """Normal subjects that share the head of one spotted: in "cardiac and mediastinal contours" the word
        "cardiac" stands for "cardiac contours" (a normal subject of its own), joined to "mediastinal contours" by
        "and", "or" or a comma. Each such word is a one-token ``subject`` match, so the normal form read for the
        phrase ("... are within normal limits") is read for it too (:mod:`radsift.labels.negation`)."""
        out: list[Match] = []
        for m in chosen:
            if m.kind != "subject" or m.last - m.first < 2:
                continue
            head = tuple(norms[m.first + 1:m.last])
            i = m.first - 1
            while i >= 1 and norms[i] in SHARED_HEAD_JOINS and not taken[i - 1]:
                word = norms[i - 1]
                pattern = next((p for p in self._by_first.get(word, ())
                                if p.kind == "subject" and p.key == (word, *head)), None)
                if pattern is None:
                    break
                taken[i - 1] = True
                start, end = toks[i - 1].start, toks[i - 1].end
                out.append(Match(pattern.concept, "subject", start, end, i - 1, i, text[start:end]))
                i -= 2
        return out


def _inner(candidates, first: int, last: int, outer: _Pattern, toks: list[Token], text: str) -> tuple[Match, ...]:
    """Other concepts' synonyms inside a gapped match after its first word, longest first, not overlapping."""
    taken: set[int] = set()
    out = []
    for _, f, l, pattern in candidates:  # already longest first
        if f <= first or l > last or pattern.kind != "synonym" or pattern.concept.name == outer.concept.name:
            continue
        if taken.intersection(range(f, l)):
            continue
        taken.update(range(f, l))
        start, end = toks[f].start, toks[l - 1].end
        out.append(Match(pattern.concept, "synonym", start, end, f, l, text[start:end]))
    return tuple(sorted(out, key=lambda m: m.start))


def _match(key: tuple[str, ...], norms: list[str], i: int) -> int | None:
    """End token index of ``key`` matched at ``norms[i]`` (longest gap choice), or None."""
    n = len(norms)
    j = i
    for k, part in enumerate(key):
        if part == GAP:
            # Try the shortest gap that lets the rest match; gaps stop at barriers and negations.
            rest = key[k + 1 :]
            for g in range(0, MAX_GAP + 1):
                if g > 0:
                    w = norms[j + g - 1] if j + g - 1 < n else None
                    # A comma may open the gap right after the phrase's first word, between premodifiers:
                    # "Tortuous, calcified thoracic aorta" (not later: "heart stable, hila enlarged").
                    comma_ok = w == "," and k == 1 and g == 1
                    if w is None or (w in BARRIERS and not comma_ok) or w in GAP_STOP_WORDS:
                        return None
                end = _match(rest, norms, j + g) if j + g < n else None
                if end is not None:
                    return end
            return None
        if j >= n or norms[j] != part:
            return None
        j += 1
    return j
