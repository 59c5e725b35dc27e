"""A degree the query asks of its finding: "small pneumothorax", "severe emphysema", "moderate cardiomegaly", "a little
fluid in the lungs", "mild scoliosis".

The finding is read as before; the degree (one of :data:`NAMES`) is a bit (:data:`DEGREE`, above the changes' bits) in
the same region mask, read from queries by their words (:func:`query_degree`) and from units by report words
(:data:`UNIT_WORDS`, a unit's from its BM25 postings at search time, never stored). The location tier
(:mod:`radsift.ranking.places`) ranks, within each of its tiers, the units saying the degree ("Small right
pneumothorax.", "Mild scoliosis.") before those that do not, as it ranks a change (:mod:`radsift.text.changes`); a unit
stating the finding with no degree word still ranks before any unit that does not state it.

A size measured ("pulmonary nodule about 1 cm", "pneumothorax of about 20 percent") asks for the units that measure
it (:data:`MEASURED`: a unit naming centimetres, millimetres or a percentage), whatever the number: a nodule's size is
written "9 mm" or "1.0 x 1.2 cm", and a search does not parse the numbers of the units.

"big" is no degree: "big heart" is cardiomegaly itself, as "large heart" and "large lungs" are. "marked" and "minor"
are left out of the units' words: "markings" stems as "marked", and the "minor fissure" is no minor finding.
"""

from __future__ import annotations

import re

from radsift.text.tokens import word_groups

#: Degree bits: slight (mild, small, minimal, trace ...), moderate, marked (large, severe, massive ...).
SLIGHT, MODERATE, MARKED = 1 << 29, 1 << 30, 1 << 31
#: A size measured (above the patterns' bits and the ill-defined margin's).
MEASURED = 1 << 44
#: Every degree bit.
DEGREE = SLIGHT | MODERATE | MARKED | MEASURED
#: The name of each degree, as the reading shows it.
NAMES = {SLIGHT: "slight", MODERATE: "moderate", MARKED: "marked", MEASURED: "measured"}


#: (word group, degree bit): a unit holding every word of a group says that degree ("small to moderate": both).
UNIT_WORDS: tuple[tuple[tuple[str, ...], int], ...] = (
    word_groups(SLIGHT, "mild", "mildly", "minimal", "minimally", "small", "slight", "slightly", "trace", "tiny",
                "subtle", "borderline")
    + word_groups(MODERATE, "moderate", "moderately")
    + word_groups(MARKED, "large", "severe", "severely", "massive", "extensive", "huge")
    + word_groups(MEASURED, "cm", "mm", "centimeter", "centimeters", "millimeter", "millimeters", "percent")
)

#: A query's words for each degree (the first that matches is the query's degree).
_QUERY = (
    # a number and its unit: "about 1 cm", "8mm", "20 percent", "20%" (the number before a % sign: the sign ends no word)
    (MEASURED, r"\d+(?:\.\d+)?(?:\s*(?:cm|mm|centimet(?:er|re)s?|millimet(?:er|re)s?|percent|per\s+cent)|(?=\s*%))"),
    (MODERATE, r"moderate(?:ly)?"),
    (MARKED, r"severe(?:ly)?|massive|huge|extensive|a\s+lot\s+of|very\s+(?:big|large|enlarged)|"
             r"large(?!\s+(?:heart|lungs?|cardiac))"),
    (SLIGHT, r"mild(?:ly)?|minimal(?:ly)?|slight(?:ly)?|trace|tiny|subtle|borderline|a\s+(?:little|bit|touch)(?:\s+of)?|"
             r"small(?!\s+(?:lungs?|heart|lung\s+volumes?))"),
)
_QUERY_RES = tuple((bits, re.compile(rf"\b(?:{pattern})\b", re.IGNORECASE)) for bits, pattern in _QUERY)


def query_degree(query: str) -> tuple[str | None, int]:
    """``(the query's words for its degree, its degree bit)``; ``(None, 0)`` for none.

    >>> query_degree("small pneumothorax") == ("small", SLIGHT)
    True
    >>> query_degree("big heart")
    (None, 0)
    """
    for bits, pattern in _QUERY_RES:
        m = pattern.search(query)
        if m:
            return m.group(0).lower(), bits
    return None, 0


__all__ = ["DEGREE", "MARKED", "MEASURED", "MODERATE", "NAMES", "SLIGHT", "UNIT_WORDS", "query_degree"]
