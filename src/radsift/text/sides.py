"""Side words: the words that name a side (left, right, bilateral), in queries and in reports.

One definition for every reader of sides: the query's side (:func:`radsift.labels.openvocab.query_side`),
the per-unit side flags the ranking's side tiers come from (:func:`radsift.ranking.tiers.side_flags`,
used by the search engine and the ``radsift bench`` systems), and the open-vocabulary reader, which
keeps side words out of a finding's content words. A location that lies on one side ("RLL",
"lingular": :mod:`radsift.text.locations`) gives a query or a unit that side as well.
"""

from __future__ import annotations

import re

from radsift.text.tokens import TOKEN_RE

#: The sides a query may name.
SIDES = ("left", "right", "bilateral")
#: Side word -> side.
SIDE_WORDS = {"left": "left", "right": "right", "bilateral": "bilateral", "bilaterally": "bilateral",
              "both": "bilateral", "bibasilar": "bilateral", "bibasal": "bilateral",
              # a spine's curve is named by the side it bulges to: "dextroscoliosis", "dextro-convex" (right)
              **dict.fromkeys(("dextroscoliosis", "dextroscoliotic", "dextrocurvature", "dextroconvex", "dextro"),
                              "right"),
              **dict.fromkeys(("levoscoliosis", "levoscoliotic", "levocurvature", "levoconvex", "levo"), "left")}


def side_words(side: str) -> tuple[str, ...]:
    """The words that name ``side`` (``bilateral``: bilateral, bilaterally, both, bibasilar, bibasal)."""
    return tuple(word for word, named in SIDE_WORDS.items() if named == side)


#: The words of a heart chamber: "right atrium", "left ventricular" name a chamber, not a side of the chest.
CHAMBER_WORDS = ("atrium", "atria", "atrial", "ventricle", "ventricles", "ventricular")
_CHAMBER = "(?:" + "|".join(CHAMBER_WORDS) + r")\b"
_CHAMBER_SIDE = re.compile(r"\b(?:left|right)\s+(?=" + _CHAMBER + ")", re.I)
_CHAMBER_SIDE_WORD = re.compile(r"\b(left|right)\s+" + _CHAMBER, re.I)


def without_chamber_sides(text: str) -> str:
    """``text`` without the side words that name a heart chamber ("catheter tip in the right atrium" ->
    "catheter tip in the atrium"), so that what is left names the sides of the chest only."""
    return _CHAMBER_SIDE.sub("", text)


def text_sides(text: str) -> set[str]:
    """The sides of the chest ``text`` names by a side word (:data:`SIDE_WORDS`), a heart chamber's side left out."""
    words = (m.group().lower() for m in TOKEN_RE.finditer(without_chamber_sides(text)))
    return {SIDE_WORDS[w] for w in words if w in SIDE_WORDS}


def chamber_sides(text: str) -> set[str]:
    """The sides of the heart chambers ``text`` names ("enlarged left atrium": left)."""
    return {m.group(1).lower() for m in _CHAMBER_SIDE_WORD.finditer(text)}


def names_chamber_side(query: str) -> bool:
    """Whether the query's side words name heart chambers only ("lead tip in the right ventricle"): its side is then
    a chamber's, asked of the units that name a chamber's side, not a side of the chest."""
    return bool(chamber_sides(query)) and not text_sides(query)


__all__ = ["CHAMBER_WORDS", "SIDES", "SIDE_WORDS", "chamber_sides", "names_chamber_side", "side_words", "text_sides",
           "without_chamber_sides"]
