"""Zones of the frontal film named in a query: the mid lung ("left midlung scarring", "right mid lung opacity"), the
lung behind the heart ("pneumonia behind the heart": reports write "retrocardiac", the left lower lobe), and the lay
words for a base or an apex ("scarring at the bottom of the lungs", "spot at the top of the lung").

Reports place a finding by the lobe ("lingular scarring") or by the zone of the frontal film it lies in ("left
midlung scarring"). A user asking for a left midlung finding is answered by either: the lingula lies in the left
mid zone, the right middle lobe in the right one. So a query's mid zone asks for that lobe
(:mod:`radsift.text.locations`' regions): units naming the lingula meet "left midlung", units naming another lobe
("left lower lobe scarring") rank after those naming none, and units naming the zone itself name no lobe (they keep
the middle tier, where the query's words still rank them). The other way does not hold: a lingula query is not met
by every left midlung statement (the zone holds parts of the upper and lower lobes too), so zones are read from
queries only, never from units; stored location flags are not touched.
"""

from __future__ import annotations

import re

from radsift.text.locations import LING, LLL, LUL, RLL, RML, RUL

#: "left midlung", "right mid lung", "left mid-lung zone", "midlungs", "mid lung fields", "left mid zone".
ZONE = re.compile(r"\b(?:(right|left)\s+)?mid[\s-]?(?:lungs?(?:\s+(?:zones?|fields?))?|(?:lung\s+)?zones?)\b",
                  re.IGNORECASE)
#: "behind the heart", "behind the cardiac silhouette": the retrocardiac lung, the left lower lobe (as "retrocardiac" is
#: read in :mod:`radsift.text.locations`).
BEHIND_HEART = re.compile(r"\bbehind\s+the\s+(?:heart|cardiac\s+(?:silhouette|shadow))\b", re.IGNORECASE)
#: Beside a heart border: "pneumonia next to the left side of the heart", "opacity along the right heart border". A
#: finding touching the left border is in the lingula, one touching the right border in the right middle lobe (the
#: silhouette sign). Only beside a word of touching: "the left side of the heart is enlarged" is a chamber.
HEART_BORDER = re.compile(r"\b(?:next\s+to|beside|along|against|by|near|touching|hugging|bordering|obscuring|at)\s+"
                          r"(?:the\s+)?(?:(right|left)\s+(?:side|edge|border)\s+of\s+the\s+heart|"
                          r"(right|left)\s+(?:heart|cardiac)\s+(?:border|edge|margin))\b", re.IGNORECASE)
#: Lay words for a base or an apex: "scarring at the bottom of the lungs", "spot at the top of the lung", "the lower part
#: of the left lung", "lung lining thickened at the bottom", "density low in the left chest"; read as "bases" and
#: "apices" are (the lower and upper lobes). "on top of COPD" is none.
LAY_ENDS = re.compile(r"\b(?:(?:at|in|on|near)\s+)?(?:the\s+)?(bottom|bottoms|base|lower\s+parts?|top|tops|upper\s+parts?)"
                      r"\s+of\s+(?:the\s+|my\s+|both\s+|his\s+|her\s+)?(?:(right|left)\s+)?lungs?\b|"
                      r"\bat\s+the\s+(bottom|top)\b(?!\s+of)|"
                      # "density low in the left chest", "high in the right lung", "lower left chest" (not "upper left
                      # chest": a port's or a pacemaker's place in the chest wall)
                      r"\b(?:(low|lower)\s+(?:in\s+(?:the\s+|my\s+)?)?(right|left)\s+(?:chest|lung)|"
                      r"(high|upper)\s+(?:in\s+(?:the\s+|my\s+)?)?(right|left)\s+lung)\b", re.IGNORECASE)
#: The lobe each side's mid zone holds.
_LOBE_OF = {"left": LING, "right": RML, None: LING | RML}
#: The lobes each side's base and apex are.
_END_OF = {("low", "left"): LLL, ("low", "right"): RLL, ("low", None): LLL | RLL,
           ("up", "left"): LUL, ("up", "right"): RUL, ("up", None): LUL | RUL}


def query_zones(query: str) -> tuple[str | None, int]:
    """``(the zones' words, the lobes' regions they ask for)``; ``(None, 0)`` when the query names no mid zone."""
    found = [(m.group(0), _LOBE_OF[m.group(1).lower() if m.group(1) else None]) for m in ZONE.finditer(query)]
    found += [(m.group(0), LLL) for m in BEHIND_HEART.finditer(query)]
    found += [(m.group(0), _LOBE_OF[(m.group(1) or m.group(2)).lower()]) for m in HEART_BORDER.finditer(query)]
    for m in LAY_ENDS.finditer(query):
        end = (m.group(1) or m.group(3) or m.group(4) or m.group(6)).lower()
        side = m.group(2) or m.group(5) or m.group(7)
        level = "up" if end.startswith(("top", "upper", "high")) else "low"
        found.append((m.group(0).strip(), _END_OF[level, side.lower() if side else None]))
    if not found:
        return None, 0
    regions = 0
    for _, bits in found:
        regions |= bits
    return ", ".join(words.lower() for words, _ in found), regions


__all__ = ["BEHIND_HEART", "HEART_BORDER", "LAY_ENDS", "ZONE", "query_zones"]
