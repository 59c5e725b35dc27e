"""How the parts of a query link to lexicon concepts: the words of one finding, and each part of a query asking two.

:func:`radsift.search.reading.read_query` reads a query by the lexicon first; what it names in no lexicon phrase is
linked to the concept it describes (:mod:`radsift.search.concepts`). This module holds that linking: the finding words
of a whole query or of one part (:func:`link_finding`: a cue taken off, an organ removed read as a surgery, a normal
statement turned into a denial), the parts of a query beside a lexicon finding (:func:`read_parts`), and a query the
lexicon reads nothing of that asks two things at once (:func:`read_two_things`). Where the user's words occur in the
index they stay beside the link (:func:`words_stay`, :func:`add_reading`).
"""

from __future__ import annotations

import re
from dataclasses import replace
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from radsift.records import ReadFinding
from radsift.search import clauses
from radsift.search.linkwords import normal_statement, symptom_only
from radsift.search.lay import better_without_change, link_words
from radsift.text import bodyplaces, locations

if TYPE_CHECKING:
    from radsift.search.concepts import Link

#: The back as a part of the body, the lay word for the spine ("back curves to one side", "rods in the back"); not a
#: return ("came back clean", "come back for another x-ray", "back to normal") nor the back of something.
LAY_BACK = re.compile(r"(?<!\bcome )(?<!\bcame )(?<!\bcomes )(?<!\bcoming )(?<!\bgo )(?<!\bwent )(?<!\bgot )"
                      r"(?<!\bget )(?<!\bbrought )(?<!\bcalled )(?<!\bturned )\bback\b"
                      r"(?!\s+(?:to|in|into|up|again|of|for|from|and\s+forth)\b)", re.IGNORECASE)
#: At most this many findings of one query are read (the rest are named in the reading's note).
MAX_FINDINGS = 10
#: The negation cues saying something was taken out ("lung removed", "removal of the tube"): of a device, it is gone;
#: of an organ, a surgery was done (:func:`read_query` links the whole words to tell).
REMOVAL = re.compile(r"\b(?:remov(?:ed|al)|taken\s+out)\b", re.IGNORECASE)
#: A part's link as near as a concept's own everyday name (cosine): taken alone beside parts that link to nothing.
STRONG_LINK = 0.95
#: A part's link counted as one of two things asked at once beside a stronger one (cosine): weaker, the part is most
#: often the patient or what was done ("a smoker", "some armpit glands" taken out), not a second finding
#: (:func:`read_two_things`).
TWO_THINGS_LINK = 0.75
#: A negation inside the description a query linked to ("heart not pumping well", "a small bit of lung not opening up
#: fully"): the description says the finding with it, so a query denying the same words states the finding (the
#: linker compares the words less their cue, and an embedding does not hear the "not").
NEGATED_DESCRIPTION = re.compile(r"\b(?:not|no|never|without|cannot)\b|n't\b", re.IGNORECASE)
#: The status a link to a concept takes from a text that calls something normal ("lungs are clear": no opacity).
_FLIPPED = {"present": "absent", "absent": "present"}


def read_two_things(found: dict[str, ReadFinding], query: str, labeler, link: Callable[[str], "Link | None"],
                     read_as: str, literal: Callable[[Sequence[str]], bool] | None, side: str | None) -> bool:
    """Read a query the lexicon reads nothing of by its parts, where they say two things ("curved spine and a
    twisted aorta": each part linked on its own where two parts link to two concepts; the whole words link to one of
    them); whether it was. One part's link alone is not taken: a short part links loosely ("lines" and tubes -> PICC
    0.71, "out of breath" -> low lung volumes 0.74), unless every other part only calls an organ normal ("healthy
    lungs but thin bones") or the part is a concept's own everyday name ("swollen heart" 1.00 beside "a flattened
    vertebra", which links to nothing clearly: :data:`STRONG_LINK`)."""
    parts = clause_links(query, labeler, link, read_as, literal)
    concepts = {p[0].concept for p in parts if p[0] is not None}
    strong = any(p[0] is not None and p[0].score is not None and p[0].score >= STRONG_LINK for p in parts)
    if not (len(concepts) >= 2 or (len(concepts) == 1 and (strong or rest_normal(query, parts)))):
        return False
    best = max((p[0].score or 0.0) for p in parts if p[0] is not None)
    for part_link, part_status, part_cue, stays, part_phrases in parts[:MAX_FINDINGS]:
        weak = part_link is not None and (part_link.score or 0.0) < min(best, TWO_THINGS_LINK)
        add_reading(found, None if weak else part_link, part_status, part_cue, side, part_phrases, stays)
    return True


def link_finding(words: str, labeler,
                  link: Callable[[str], "Link | None"]) -> tuple["Link | None", str, str | None, bool]:
    """``(link, status, cue, surgery)`` of the finding ``words`` name (the words less their cue words, linked):
    an organ removed ("part of the lung removed", "breast removed") is a surgery done, stated present
    (``surgery``), while a device removed is gone; the whole words, the removal kept, say which. A normal statement
    ("lungs are clear") states the linked concept absent, and "lungs are not clear" (the statement read absent:
    the labeler keeps the "not") states it present, as a denial of a description that holds a "not" itself does
    ("heart is not pumping well": :data:`NEGATED_DESCRIPTION`)."""
    text, status, cue = labeler.query_finding_text(words)
    linked = better_without_change(text, link(text), link) if text else None
    if text and linked is None and bodyplaces.BONE_WORDS.search(text):
        linked = link(bodyplaces.BONE_WORDS.sub("the bone", text))  # "cracked shoulder blade": a cracked bone
    if text and linked is None and LAY_BACK.search(text) and not symptom_only(text):
        linked = link(LAY_BACK.sub("spine", text))  # "back curves to one side": the spine's curve
    if cue and REMOVAL.search(cue):
        whole = link(words)
        lexicon = getattr(labeler, "lexicon", None)
        if whole is not None and lexicon is not None and whole.concept in lexicon and \
                lexicon[whole.concept].category == "procedure":
            return whole, "present", None, True
    if linked is not None and status == "absent" and NEGATED_DESCRIPTION.search(linked.phrase or ""):
        status = "present"  # "heart is not pumping well": the description's own "not" is the query's
    elif linked is not None and normal_statement(text):
        status = _FLIPPED.get(status, status)
    return linked, status, cue, False


def words_stay(phrases: Sequence, read_as: str, literal: Callable[[Sequence[str]], bool] | None) -> bool:
    """Whether the user's words stay beside a link: the index holds every phrase of them (a phrase it never holds
    makes a literal reading no unit can state)."""
    return read_as == "both" and literal is not None and bool(phrases) and all(literal(p.stems) for p in phrases)


def add_reading(found: dict[str, ReadFinding], linked: "Link | None", status: str, cue: str | None,
                 side: str | None, phrases: Sequence, stays: bool) -> None:
    """Add to ``found`` the words' own phrases when they stay, and the link (if any) beside them."""
    add_beside(found, None if linked is None else
               ReadFinding(linked.concept, status, "linked", cue, side, linked.phrase, linked.score), side, phrases, stays)


def add_beside(found: dict[str, ReadFinding], finding: ReadFinding | None, side: str | None, phrases: Sequence,
               stays: bool) -> None:
    """Add to ``found`` the words' own phrases when they stay, and ``finding`` (a link, a complaint's causes; if any)
    beside them, or in their place when they do not stay."""
    for p in phrases if stays else ():
        found.setdefault(p.text.lower(), ReadFinding(p.text.lower(), p.status, "open", p.cue, side))
    if finding is not None:
        found.setdefault(finding.finding, replace(finding, beside=phrases[0].text.lower() if stays else None))


def read_parts(found: dict[str, ReadFinding], query: str, labeler, link: Callable[[str], "Link | None"],
                read_as: str, literal: Callable[[Sequence[str]], bool] | None, side: str | None) -> None:
    """Add to ``found`` (the lexicon's findings) what the query's other parts name (:func:`clause_links`)."""
    for linked, status, cue, stays, phrases in clause_links(query, labeler, link, read_as, literal):
        if (linked is None or linked.concept not in found) and len(found) < MAX_FINDINGS:
            add_reading(found, linked, status, cue, side, phrases, stays)


def rest_normal(query: str, parts: Sequence[tuple]) -> bool:
    """Whether the query's parts that link to nothing each only call an organ normal ("healthy lungs"), and at
    least one does (:func:`clause_links`' parts, of ``query``)."""
    said = clauses.query_parts(query)
    linked = len([p for p in parts if p[0] is not None])
    rest = [part for part in said if normal_statement(link_words(part))]
    return bool(rest) and len(rest) + linked == len(said)


def clause_links(query: str, labeler, link: Callable[[str], "Link | None"], read_as: str,
                  literal: Callable[[Sequence[str]], bool] | None) -> list[tuple["Link | None", str, str | None, bool, list]]:
    """The links of the query's parts that name no lexicon finding (beside a part that names one, or, in
    :func:`read_query`, each of two things asked at once): ``(link, status, cue, stays, phrases)`` for each,
    ``stays`` when the part's own words occur in the index (they stay beside the link, as a whole query's do). A part
    that links to nothing but whose words the index holds ("hiatal hernia, lungs clear") is read in its own words:
    ``(None, ..., True, phrases)``."""
    parts = clauses.query_parts(query)
    if len(parts) < 2:
        return []
    out = []
    for i, part in enumerate(parts):
        if getattr(labeler, "label_query", labeler.label)(part):
            continue  # read by the lexicon with the whole query
        words = link_words(part)
        linked, status, cue, surgery = link_finding(words, labeler, link)
        unplaced = locations.without_locations(words) if linked is None and locations.enabled() else words
        if unplaced and unplaced != words:
            # the place is read on its own ("partly collapsed lung bases": the bases), so the part links without it; a
            # whole query keeps its place, which often says what it is ("retrocardiac gas bubble")
            linked, status, cue, surgery = link_finding(unplaced, labeler, link)
        headed = clauses.with_next_head(part, parts[i + 1] if i + 1 < len(parts) else None)
        if linked is None and headed is not None:  # "a twisted, hardened aorta": the twisted aorta too
            linked, status, cue, surgery = link_finding(headed, labeler, link)
        phrases = [] if surgery else labeler.query_phrases(part)
        stays = words_stay(phrases, read_as, literal)
        if linked is not None or stays:
            out.append((linked, status, cue, stays, phrases))
    return out


__all__ = ["LAY_BACK", "MAX_FINDINGS", "NEGATED_DESCRIPTION", "REMOVAL", "STRONG_LINK", "TWO_THINGS_LINK",
           "add_reading", "clause_links", "link_finding", "read_parts", "read_two_things", "rest_normal", "words_stay"]
