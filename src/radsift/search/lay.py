"""Everyday words in a query, written as reports write them or set aside before the query is read.

"big heart" is "large heart" to the lexicon and the open-vocabulary reader (:data:`LAY_SIZES`); "lungs look fine" is
"lungs are normal" (:data:`LAY_NORMALS`); "on my chest x-ray" says nothing of the finding, so the concept linker
compares the finding's words without it (:func:`link_words`); "is shrinking" is a change, read apart, that the linker
tries the finding's words without (:func:`better_without_change`). :mod:`radsift.search.reading` reads the query.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from radsift.text import changes
from radsift.text.locations import LUNG_PART_WORDS

if TYPE_CHECKING:
    from radsift.search.concepts import Link

#: Lay words for a size that reports write otherwise ("big heart": "the heart is large"): replaced before the
#: query is read, so that the lexicon's phrases and the open-vocabulary reader meet the reports' word (the
#: concept linker still reads the user's words: descriptions say "too big").
LAY_SIZES = re.compile(r"\bbig\b", re.IGNORECASE)
#: Lay words calling an organ normal ("lungs look fine", "healthy lungs", "heart is okay"): reports write "normal"
#: or "clear", so they are replaced before the query is read, the linker's words included (a normal statement's
#: link states its concept absent: ``normal_statement``). "fine" and "good" only after a verb ("fine nodules").
LAY_NORMALS = (
    (re.compile(r"\b(?:looks?|looked|seems?|appears?)\s+(?:to\s+be\s+)?(okay|ok|fine|alright|all\s+right|good|healthy|"
                r"normal|clear|unremarkable)\b", re.IGNORECASE), r"are \1"),
    (re.compile(r"\b(okay|ok|fine|alright|all\s+right|good|healthy)\b(?=\W*$)", re.IGNORECASE), "normal"),
    (re.compile(r"\b(?:healthy|normal[\s-]looking|healthy[\s-]looking)\b", re.IGNORECASE), "normal"),
    # "x-ray came back clean": the film is normal, as reports say it ("normal chest x-ray")
    (re.compile(r"^\W*(?:(?:my|the|his|her)\s+)?(?:chest\s+)?(?:x\W?rays?|xrays?|films?|cxr)\s+(?:came\s+back|was|is|looks?)\s+"
                r"(?:clean|clear|normal|fine|okay|ok|good)\W*$", re.IGNORECASE), "normal chest x-ray"),
    (re.compile(r"\b(?:came\s+back\s+)?clean\b(?=\W*$)", re.IGNORECASE), "normal"),
    # "tortuous aorta, otherwise normal", "old scarring but nothing acute": nothing else of note, as reports say it
    # ("No acute cardiopulmonary process."), not the word "normal" stated nor "acute" something present
    # (a part of its own: "lungs are otherwise clear" stays; "low lung volumes, otherwise clear" is the lungs clear)
    (re.compile(r"(?:^|(?<=,)|(?<=;)|(?<=\bbut)|(?<=\band))\s*(?:otherwise|else)\s+(?:normal|unremarkable|negative|"
                r"fine|okay|ok|healthy)\b|\bnothing\s+(?:else\s+)?acute\b", re.IGNORECASE), " no acute disease"),
    # "lungs are dry", "lungs dry", "dry lungs": no edema, as reports say it (an embedding hears "wet" in "dry"; read as
    # "no fluid in the lungs", the open words left "big heart, lungs dry, no effusion" no unit stating them all)
    (re.compile(r"\b(lungs?|chest)\s+(?:(?:are|is|look|looks|seem|seems)\s+)?dry\b", re.IGNORECASE), r"no pulmonary edema"),
    (re.compile(r"\bdry\s+(lungs?|chest)\b", re.IGNORECASE), r"no pulmonary edema"),
    # "normal appearance of the lungs", "normal-appearing heart", "lungs normal in appearance": the organ called normal
    # ("appearance" is no word of the organ: it kept the phrase from the units calling it normal)
    (re.compile(r"\bnormal[\s-]+appear(?:ance|ing)(?:\s+of)?(?:\s+(?:the|my))?\b", re.IGNORECASE), "normal"),
    (re.compile(r"\bnormal\s+in\s+appearance\b", re.IGNORECASE), "normal"),
    # "nothing abnormal in the heart or lungs": both called normal, as "heart and lungs are okay" is (read as
    # "abnormal in the heart" and "lungs" denied, an organ itself was asked absent)
    (re.compile(r"\b(?:nothing|no)\s+(?:abnormal(?:ity|ities)?|wrong|amiss)\s+(?:in|of|with|about)\s+(?:the\s+|my\s+)?"
                r"(heart|lungs?)(?:\s+(?:or|and|nor)\s+(?:the\s+|my\s+)?(heart|lungs?))?\b", re.IGNORECASE),
     lambda m: f"{m[1]} and {m[2]} are normal" if m[2] else
     f"{m[1]} {'are' if m[1].lower().endswith('s') else 'is'} normal"),
    # "retrocardiac region clear", "left lung base clear", "the apices are clear": a part of the lung called clear is
    # the lungs stated clear there (its place read apart); read as "clear" alone, the linker took it for an opacity
    (re.compile(rf"\b({LUNG_PART_WORDS})\s+"
                r"(?:(?:region|area|space|zone|portion)s?\s+)?(?:(?:is|are|appears?|looks?|seems?|remains?)\s+)?"
                r"clear\b(?!\s+of)", re.IGNORECASE), r"\1 lungs are clear"),
    # "lungs filling with fluid", "lungs full of water": fluid in the lungs (split at "with", "lungs filling" and
    # "fluid" stood apart, the bare "fluid" stating any pleural fluid)
    (re.compile(r"\b(lungs?)\s+(?:(?:are|is)\s+)?(?:filling|filled|full)\s+(?:up\s+)?(?:with|of)\s+(fluid|water)\b",
                re.IGNORECASE), r"\2 in the \1"),
)
#: A change said of the finding as a predicate ("is shrinking", "getting smaller", "has grown", "is new"): the words a link
#: of the finding is tried without (:func:`better_without_change`); the change itself is read apart.
CHANGE_PREDICATE = re.compile(r"\b(?:(?:is|are|was|were|has|have|been|keeps?|kept)\s+)*(?:(?:getting|got|gotten|becoming|"
                              r"grown|grew|growing)\s+(?:bigger|larger|worse|better|smaller)|shrinking|shrunk|shrank|"
                              r"(?<!nothing\s)(?<!anything\s)growing(?!\s+(?:in|on|inside|within|out|from)\b)|grown|grew|"
                              r"enlarging|improving|worsening|getting\s+worse|getting\s+better)\b"
                              r"(?:\s+(?:since|than)\s+(?:the\s+)?(?:last|before|prior)(?:\s+(?:time|x-?rays?|films?|"
                              r"stud(?:y|ies)|exams?))?)?", re.IGNORECASE)
#: Where everything in a report is seen ("on the x-ray", "in my chest film"): these words say nothing of what the
#: finding is, so the concept linker compares the finding text without them (an embedding hears "x-ray" and
#: drifts from the finding toward whatever description names a film). An organ named with the film stays
#: ("on my lung x-ray" -> "on my lung"): it says where.
ON_THE_FILM = re.compile(
    r"\s*\b(?:seen\s+)?(?P<where>(?:on|in|from)\s+(?:(?:the|my|this|a|his|her|their)\s+)?)"
    r"(?P<organ>(?:chest|lungs?)\s+)?(?:x\W?rays?|xrays?|cxr|films?|radiographs?|scans?|images?|pictures?)\b",
    re.IGNORECASE)


def lay_normals(query: str) -> str:
    """``query`` with its lay words for normal written as reports write them (:data:`LAY_NORMALS`):
    "lungs look fine" -> "lungs are normal", "healthy lungs" -> "normal lungs"."""
    for pattern, repl in LAY_NORMALS:
        query = pattern.sub(repl, query)
    return query


#: A displacement and what displaced it: "my heart has been pushed over to the other side by the fluid" describes
#: the shift (the fluid is its cause, said apart), so the linker reads the words before "by".
DISPLACED_BY = re.compile(r"\b((?:pushed|displaced|shifted|deviated|moved)\b[^,;?]*?)\s+by\s+[^,;?]*", re.IGNORECASE)


def link_words(query: str) -> str:
    """The words of ``query`` the concept linker reads: the query less where it is seen (:data:`ON_THE_FILM`) and
    less what displaced the thing it says moved (:data:`DISPLACED_BY`)."""
    words = DISPLACED_BY.sub(r"\1", ON_THE_FILM.sub(_organ_seen, query)).strip()
    return words or query


def _organ_seen(m: re.Match) -> str:
    """What stays of a place of seeing: the organ, if the film was named with one ("on my lung x-ray")."""
    return f" {m['where']}{m['organ'].strip()}" if m["organ"] else ""


def better_without_change(text: str, linked: "Link | None", link: Callable[[str], "Link | None"]) -> "Link | None":
    """The link of ``text``, or of ``text`` less its words for a change (:data:`CHANGE_PREDICATE`) where that holds
    better: "the spot on my lung is shrinking" is a nodule getting better (the change read apart), not a lung's volume
    loss; "my lung is shrinking" keeps its volume loss (its words less the change link less well)."""
    rest = CHANGE_PREDICATE.sub(" ", text)
    if rest == text or not re.search(r"[a-z]", changes.TIME_WORDS.sub(" ", rest), re.IGNORECASE):
        return linked
    other = link(" ".join(rest.split()))
    if other is None or (linked is not None and (other.score or 0.0) <= (linked.score or 0.0)):
        return linked
    return other


__all__ = ["CHANGE_PREDICATE", "DISPLACED_BY", "LAY_NORMALS", "LAY_SIZES", "ON_THE_FILM", "better_without_change", "lay_normals",
           "link_words"]
