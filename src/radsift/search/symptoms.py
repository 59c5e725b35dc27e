"""A complaint is read as what can cause it: "short of breath" asks for the reports stating a cause a film shows.

A symptom is felt, not seen: no concept of the film *is* "chest pain" (:func:`radsift.search.linkwords.symptom_only`
keeps the concept linker from guessing one). Yet a user who types a complaint into a search of chest film reports
wants the films that explain it, as a radiologist reads a request ("short of breath: pulmonary edema? effusion?").
The lexicon's ``symptoms`` (:class:`radsift.labels.lexicon.Symptom`) name each complaint's words and the concepts
that can cause it. A query made only of complaints, with where, how and when they are felt ("sharp chest pain when
breathing in", "chest pain after a fall": :func:`named_symptoms`), asked present, is read as one finding: the first
cause, with every other cause (and each cause's own alternatives, the lexicon's ``any_of`` and ``signs``) as what a
unit may state in its place. Several complaints ask for what explains them all ("chest pain after a fall": the
injuries that hurt the chest, not every cause of either), or for every cause of any where none explains all.

A denied complaint ("no chest pain") is read as before (a note's "Denies chest pain." states it; nothing is denied
of the film). Where the complaint's words occur in the index (clinical notes: "Chest pain for two days."), they stay
the reading and the causes order within it (:func:`radsift.search.partlinks.add_beside`, as a link's do).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from radsift.labels.lexicon import Lexicon, Symptom
from radsift.records import ReadFinding
from radsift.search.linkwords import FELT

#: Words a complaint comes with that name neither it nor a finding ("i have", "patient with", "on the x-ray").
_ASIDE = re.compile(r"\b(?:i|i'm|im|am|have|has|had|having|got|get|getting|feel|feels|feeling|felt|patient|pt|"
                    r"complains?|complaining|c/o|x\W?rays?|xrays?|cxr|films?|chest\s+films?|taken|done|for|"
                    r"from|to|since|due|because|about|it|is|are|was|were|be|been|some|any|up|out|there|now|lungs?)\b",
                    re.IGNORECASE)


def named_symptoms(text: str, lexicon: Lexicon) -> tuple[Symptom, ...]:
    """The lexicon's symptoms ``text`` names, when it names nothing else (where, how and when a complaint is felt
    aside: :data:`radsift.search.linkwords.FELT`); ``()`` otherwise. The longest words match first ("coughing up
    blood" is no cough), a plural as the singular."""
    if not lexicon.symptoms or not text:
        return ()
    pattern, owner = _matcher(lexicon.symptoms)
    found = [_owner(m.group(0), owner) for m in pattern.finditer(text)]
    if not found:
        return ()
    rest = FELT.sub(" ", _ASIDE.sub(" ", pattern.sub(" ", text)))
    if re.search(r"[^\W\d_]", rest):
        return ()
    return tuple(dict.fromkeys(found))


def causes(symptoms: Sequence[Symptom], lexicon: Lexicon) -> tuple[str, ...]:
    """The concepts that explain every symptom named, or, where none explains them all, every cause of any; each
    followed by its own alternatives (the lexicon's ``any_of`` and ``signs``: pneumonia's consolidation ...). The
    order is that of the most telling complaint, the one with the fewest causes ("chest pain after a fall": the
    injury's, a broken rib first): the first cause is the reading's finding, which ranks before the others within a
    tier."""
    telling = min(symptoms, key=lambda s: len(s.causes))
    shared = [c for c in telling.causes if all(c in s.causes for s in symptoms)]
    chosen = shared or [c for s in symptoms for c in s.causes]
    return tuple(dict.fromkeys(a for c in chosen for a in (c, *lexicon[c].any_of, *lexicon[c].signs)))


def symptom_reading(words: str, labeler, side: str | None) -> ReadFinding | None:
    """The reading of a query made only of complaints (its causes, source ``symptom``; the caller puts it beside the
    user's words where they stay: :func:`radsift.search.partlinks.add_beside`), or None: the query names something
    else, asks the complaint absent, or the lexicon has no symptoms.

    Args:
        words: The query's words as the concept linker reads them.
        labeler: The index's labeler (its ``lexicon`` and ``query_finding_text``).
        side: The query's side.
    """
    lexicon = getattr(labeler, "lexicon", None)
    if lexicon is None or not lexicon.symptoms:
        return None
    text, status, cue = labeler.query_finding_text(words)
    named = named_symptoms(text or "", lexicon) if status == "present" else ()
    if not named:
        return None
    first, *rest = causes(named, lexicon)
    return ReadFinding(first, status, "symptom", cue, side, " and ".join(s.name for s in named), None,
                       any_of=tuple(rest))


def _owner(matched: str, owner: dict[str, Symptom]) -> Symptom:
    """The symptom of a matched word (spaces and hyphens folded, a plural as its word)."""
    key = " ".join(re.split(r"[\s-]+", matched.lower()))
    for k in (key, key[:-1], key[:-2]):
        if k in owner:
            return owner[k]
    raise KeyError(matched)  # the pattern holds only the owners' words


@lru_cache(maxsize=8)
def _matcher(symptoms: tuple[Symptom, ...]) -> tuple[re.Pattern, dict[str, Symptom]]:
    """One pattern of every symptom's words (longest first, spaces and hyphens alike, a trailing plural ``s``)
    and each word's symptom (lower case)."""
    owner = {w.lower(): s for s in symptoms for w in s.words}
    words = sorted(owner, key=len, reverse=True)
    body = "|".join(r"[\s-]+".join(re.escape(part) for part in w.split()) for w in words)
    return re.compile(rf"(?<![\w'])(?:{body})(?:e?s)?(?![\w'])", re.IGNORECASE), owner


__all__ = ["causes", "named_symptoms", "symptom_reading"]
