"""Hedges that reach back one sentence: "Right upper lobe nodular opacity. This may be artifactual."

ConText reads one sentence at a time, so a finding stated plainly in one sentence and doubted in the
next ("Vague nodular opacity near the first rib. This may be calcification.") reads ``present``. A
sentence that opens by pointing back (an anaphor: "This", "These", "It"), hedges ("may be", "could
represent") and names a mimic within a few tokens of the hedge (artifact, overlapping vessels, a nipple
shadow, calcification) says that what the sentence before it described may not be there: the findings
and diseases that sentence states (``present``) read ``uncertain``, with rule ``ANAPHORIC_HEDGE:<hedge>``
and the hedge as the cue. The pointing sentence's own mentions keep their statuses. A hedge that offers a
diagnosis rather than a mimic ("This may represent pneumonia.") leaves the sentence before it alone: the
opacity is seen, what it is is the question. The words are the rules file's ``anaphoric_hedges``
(:class:`radsift.labels.rules.AnaphoricHedges`).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Sequence

from radsift.labels.rules import AnaphoricHedges
from radsift.records import Mention

RULE = "ANAPHORIC_HEDGE"
#: The categories a mimic can explain away (not devices, not normal subjects).
_CATEGORIES = frozenset({"finding", "disease"})
_WORD = re.compile(r"[a-z0-9]+(?:[-'/][a-z0-9]+)*|[^\sa-z0-9]")
# What may come before the anaphor: a list number ("2."), "However,".
_LEAD = frozenset({".", ")", ",", ":", "however", "but"})


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def _find(words: list[str], phrase: tuple[str, ...], start: int, stop: int) -> int:
    """Index of the first occurrence of ``phrase`` beginning in ``words[start:stop]``, or -1."""
    size = len(phrase)
    for i in range(start, min(stop, len(words) - size + 1)):
        if tuple(words[i:i + size]) == phrase:
            return i
    return -1


class AnaphoricHedgeReader:
    """Finds sentences that hedge the sentence before them with a mimic.

    Args:
        rules: The anaphors, hedges and mimics (empty lists: the reader finds nothing).
    """

    def __init__(self, rules: AnaphoricHedges) -> None:
        def split(items: Sequence[str]) -> list[tuple[str, ...]]:
            return sorted((tuple(_words(p)) for p in items), key=len, reverse=True)  # longest first

        self.anaphors = split(rules.anaphors)
        self.hedges = split(rules.hedges)
        self.mimics = split(rules.mimics)
        self.gap = rules.gap

    def hedge_of(self, sentence: str) -> str | None:
        """The hedge of a sentence that points back and names a mimic, or None."""
        if not self.anaphors:
            return None
        words = _words(sentence)
        i = 0
        while i < len(words) and (words[i] in _LEAD or words[i].isdigit()):
            i += 1
        anaphor = next((a for a in self.anaphors if tuple(words[i:i + len(a)]) == a), None)
        if anaphor is None:
            return None
        for at in range(i + len(anaphor), len(words)):
            hedge = next((h for h in self.hedges if tuple(words[at:at + len(h)]) == h), None)
            if hedge is None:
                continue
            after = at + len(hedge)
            if any(_find(words, m, after, after + self.gap + 1) >= 0 for m in self.mimics):
                return " ".join(hedge)
        return None

    def carry_back(self, texts: Sequence[str], mentions: list[list[Mention]], follows: Sequence[bool]
                   ) -> list[list[Mention]]:
        """``mentions`` (one list per sentence) with the findings of each sentence that the next one
        hedges with a mimic made uncertain. ``follows[i]``: sentence ``i`` comes right after ``i - 1`` in
        the same section."""
        out = list(mentions)
        for i in range(1, len(texts)):
            if not follows[i]:
                continue
            hedge = self.hedge_of(texts[i])
            if hedge is None:
                continue
            out[i - 1] = [replace(m, status="uncertain", cue=hedge, rule=f"{RULE}:{hedge}")
                          if m.status == "present" and m.category in _CATEGORIES else m for m in out[i - 1]]
        return out
