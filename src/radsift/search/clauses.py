"""A query's parts, read before its findings are: where it joins two things ("curved spine and a twisted aorta"), a
pronoun standing for the thing the part before named ("congested lungs with fluid around them"), a past cause named
in general words ("calcium spots from an old lung infection"), and a concept's own description written out whole
("zipper scar on the chest"). Plain text functions: :mod:`radsift.search.reading` links and reads what they find.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence

from radsift.search.linkwords import EXACT_ARTICLES

#: Where a query joins its parts ("pneumonia with fluid around the lung", "small lungs and a big heart", "hiatal
#: hernia, lungs clear"): a part that names no lexicon finding beside one that does is linked on its own, or read in
#: its own words when the index holds them (:func:`radsift.search.reading.read_query`), so the second part is read,
#: not dropped. "without" is a negation cue, not a join (``\bwith\b`` ends before its "out"). Modes that never link
#: (``bm25``) read the lexicon's findings alone.
CLAUSES = re.compile(r"\s*(?:[,;]|\band\b|\bwith\b|\bplus\b|\bbut\b|\balong\s+with\b)\s*", re.IGNORECASE)


#: "both A and B" of two kinds of matter names one collection of both ("after draining, both gas and liquid outside the
#: lung": a hydropneumothorax), not two things asked nor two sides: its "and" joins no parts (:func:`query_parts` splits
#: at no join inside it) and its "both" names no side (:func:`without_both_matter`). "both lungs and the heart" names two.
BOTH_AND = re.compile(r"\bboth\s+((?:air|gas|fluid|liquid|water|blood|pus|fat)\s+and\s+)", re.IGNORECASE)


def without_both_matter(query: str) -> str:
    """``query`` less the "both" of two kinds of matter (:data:`BOTH_AND`): "both gas and liquid" names no side."""
    return BOTH_AND.sub(r"\1", query)


def query_parts(query: str) -> list[str]:
    """The query's parts (:data:`CLAUSES`; :data:`BOTH_AND` joins none), each with a pronoun written out
    (:func:`with_antecedents`); empty and punctuation-only parts left out."""
    kept = [m.span() for m in BOTH_AND.finditer(query)]
    parts, start = [], 0
    for join in CLAUSES.finditer(query):
        if not any(a <= join.start() < b for a, b in kept):
            parts.append(query[start:join.start()])
            start = join.end()
    parts.append(query[start:])
    return with_antecedents([part for part in parts if part and any(ch.isalpha() for ch in part)])


#: A past cause of what the query asks for: "calcium spots from an old lung infection", "scarring from old TB". Named
#: in general words, the user asks for what is seen now (the calcified granulomas), not for the infection
#: (:func:`generic_cause`); named specifically (old TB), the cause is asked too.
CAUSE = re.compile(r"\b(?:from|after|due\s+to|caused\s+by|because\s+of|left\s+by)\s+"
                   r"(?:(?:an?|the|my|his|her|their)\s+)?"
                   r"(?:old|prior|previous|past|healed|remote|earlier|former)\b[^,;]*",
                   re.IGNORECASE)

def with_next_head(part: str, following: str | None) -> str | None:
    """A part that is one modifier alone with the head of the part after it ("a twisted" before "hardened aorta" in
    "a twisted, hardened aorta": "twisted aorta"), or None when ``part`` is more than one word or ``following`` has no
    modifier of its own before its head."""
    words = EXACT_ARTICLES.sub("", part.strip()).split()
    after = (following or "").split()
    if len(words) != 1 or len(after) < 2 or not words[0].isalpha():
        return None
    return f"{words[0]} {after[-1]}"


#: Words a past cause names only in general: "from an old infection" names no finding the user asks to see.
GENERIC_CAUSES = frozenset({"infection", "infections", "lung infection", "chest infection", "infectious process"})


def generic_cause(mention, causes: Sequence[tuple[int, int]]) -> bool:
    """Whether a lexicon ``mention`` of the query only names a past cause in general words (:data:`CAUSE`,
    :data:`GENERIC_CAUSES`): "calcium spots from an old lung infection" asks for the calcified granulomas, not a
    pneumonia; a cause named specifically stays asked ("scarring from an old TB infection": the tuberculosis)."""
    return mention.text.lower() in GENERIC_CAUSES and any(a <= mention.start and mention.end <= b for a, b in causes)


#: A pronoun standing for the thing the part before named: "congested lungs with fluid around them".
PRONOUN = re.compile(r"\b(them|it)\b", re.IGNORECASE)
#: Words that end a part without naming a thing a pronoun could stand for.
NO_ANTECEDENT = frozenset({"a", "an", "the", "some", "any", "no", "not", "of", "in", "on", "at", "to", "and", "or",
                           "with", "without", "it", "them", "is", "are", "was", "were"})


def with_antecedents(parts: Sequence[str]) -> list[str]:
    """``parts`` with a pronoun written out as the last word of the part before it ("fluid around them" after
    "congested lungs" is "fluid around the lungs"), so that a part is linked in the words it means; a part the
    pronoun cannot be resolved in keeps its words."""
    out = []
    for i, part in enumerate(parts):
        before = re.findall(r"[a-z][a-z-]*", parts[i - 1].lower()) if i else []
        if before and before[-1] not in NO_ANTECEDENT:
            part = PRONOUN.sub(f"the {before[-1]}", part)
        out.append(part)
    return out


#: A clinical request's question after its context: "smoker with barrel chest, ? overexpanded lungs" asks whether the
#: film shows hyperinflation; the context before the "?" (who the patient is, the symptoms, what was done: "smoker",
#: "asthmatic child", "after the drain was pulled") is the indication, not what a report must state. The "?" stands
#: after a comma, a colon or a space; "pneumothorax? effusion?" is two findings asked, no context.
ASKED = re.compile(r"^(?P<context>[^?]*?[^\W\d_][^?]*?)(?:[,;:.]\s*|\s+)\?+\s*(?P<question>[^?]*?[^\W\d_][^?]*?)\s*\?*\s*$")


def clinical_question(query: str) -> str | None:
    """The question of a clinical request written "context, ? question" (:data:`ASKED`), or None (no such
    question: a query asking one thing, or a "?" ending it)."""
    m = ASKED.match(query)
    return m["question"] if m else None


_TABLES: dict[int, tuple[object, re.Pattern | None, dict[str, str]]] = {}


def _descriptions(lexicon) -> tuple[re.Pattern | None, dict[str, str]]:
    """A pattern of every concept description of ``lexicon`` (longest first) and description -> concept (cached)."""
    cached = _TABLES.get(id(lexicon))
    if cached is None or cached[0] is not lexicon:
        table = {}
        for concept in lexicon:
            for d in concept.descriptions:
                table.setdefault(" ".join(d.lower().split()), concept.name)
        words = sorted(table, key=len, reverse=True)
        pattern = re.compile(r"\b(?:" + "|".join(r"\s+".join(map(re.escape, w.split())) for w in words) + r")\b",
                             re.IGNORECASE) if words else None
        cached = _TABLES[id(lexicon)] = (lexicon, pattern, table)
    return cached[1], cached[2]


def described(query: str, lexicon) -> Iterator[tuple[int, int, str, str]]:
    """``(start, end, concept, words)`` of every concept description of ``lexicon`` the query writes out whole."""
    pattern, table = _descriptions(lexicon)
    for d in pattern.finditer(query) if pattern is not None else ():
        yield d.start(), d.end(), table[" ".join(d.group(0).lower().split())], d.group(0)


def named_descriptions(query: str, mentions: Sequence, lexicon,
                       stays: Callable[[str], bool]) -> dict[int, tuple[str, str]]:
    """Lexicon mentions lying in a concept's own description that the query writes out whole, where the index
    does not hold the description's words (``stays``: the words -> whether they stay, being in the index) and the
    lexicon reads no mention of that concept in it: ``{id(mention): (concept, description)}``. "zipper scar on the
    chest" names the sternotomy wires (an everyday name of theirs), not the scarring its "scar" would be read as;
    "fluid in the chest cavity" is an effusion, no cavity."""
    out: dict[int, tuple[str, str]] = {}
    if lexicon is None or not mentions:
        return out
    for start, end, concept, words in described(query, lexicon):
        inside = [m for m in mentions if start <= m.start and m.end <= end]
        if inside and not any(m.finding == concept for m in inside) and not stays(words):
            for m in inside:
                out[id(m)] = (concept, words.lower())
    return out


__all__ = ["ASKED", "BOTH_AND", "CAUSE", "CLAUSES", "GENERIC_CAUSES", "NO_ANTECEDENT", "PRONOUN", "clinical_question",
           "described", "generic_cause", "named_descriptions", "query_parts", "with_antecedents", "without_both_matter"]
