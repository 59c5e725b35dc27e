"""Location words: lobes, the lingula, apices and bases, in queries and in reports.

One definition for every reader of locations, as :mod:`radsift.text.sides` is for sides: the query's
location (:func:`radsift.search.reading.read_query`), the per-unit location flags the ranking's
location tier comes from (:func:`radsift.ranking.places.location_flags`, used by both search engines
and the ``radsift bench`` systems).

A location is a set of *regions* (a bit mask): the five lobes, with the lingula apart from the rest
of the left upper lobe, so "lingular opacity" and "left upper lobe opacity" overlap but a lingula query
is not met by every upper-lobe statement. Apices are the upper lobes; a base is the lower lobe (not the
middle lobe or lingula: reports name those apart, and on the development queries a "right basilar"
opacity was no answer to "right middle lobe opacity"). Two locations
match when their regions overlap: "left base" meets "left lower lobe", "bibasilar" meets both lower
lobes, "right upper lobe" does not meet "left lower lobe".

``RADSIFT_LOCATIONS=off`` turns location reading off everywhere (queries, units and the sides that
lobe abbreviations imply), for benchmarks that measure before and after in one run.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

#: Regions (bits of a location mask).
RUL, RML, RLL, LUL, LING, LLL = 1, 2, 4, 8, 16, 32
RIGHT = RUL | RML | RLL
LEFT = LUL | LING | LLL
#: A query's bit (never a unit's): it names two lobes or more apart ("RML and RLL infiltrates", "right upper and lower
#: lobes"), each on its side; a unit naming every one of them ranks first (:func:`radsift.ranking.places.lobe_groups`).
#: "Bibasilar" or "the bottom of the lung" name the bases as one place: either base meets them.
EVERY = 1 << 42
#: Words naming a part of a lung, not a side ("retrocardiac region clear", "left lung base clear", "the apices are
#: clear"): a regular-expression alternation, for the readers of statements placed in the lung
#: (:data:`radsift.search.lay.LAY_NORMALS`, :func:`radsift.search.linkwords.normal_statement`).
LUNG_PART_WORDS = r"retrocardiac|bases?|basilar|apex|apices|apical|lobes?|lingula|lingular|midlungs?"
#: Region bit -> name, for display.
REGION_NAMES = {RUL: "right upper lobe", RML: "right middle lobe", RLL: "right lower lobe",
                LUL: "left upper lobe", LING: "lingula", LLL: "left lower lobe"}
#: Environment variable: ``off`` turns location reading off (benchmarks' "before").
ENV = "RADSIFT_LOCATIONS"

_LOBE = {("right", "upper"): RUL, ("right", "middle"): RML, ("right", "lower"): RLL,
         ("left", "upper"): LUL | LING, ("left", "middle"): LING, ("left", "lower"): LLL}
_ABBREV = {"rul": RUL, "rml": RML, "rll": RLL, "lul": LUL | LING, "lll": LLL}
_UPPER = {"right": RUL, "left": LUL}
_BASE = {"right": RLL, "left": LLL}
_BOTH = r"(?:bilateral|bilaterally|both)"
_SIDE = r"(right|left)"
_LEVEL = r"(upper|middle|lower)"
_LUNG = r"(?:\s+lung)?"

# (pattern, what a match names); the first pattern to claim a span wins, so longer phrasings come first.
_PATTERNS: list[tuple[re.Pattern, str]] = [(re.compile(p, re.I), kind) for p, kind in [
    # "right upper and lower lobes", "left upper and lower lobes"
    (rf"\b{_SIDE}{_LUNG}\s+{_LEVEL}\s*(?:and|,|/|&)\s*{_LEVEL}\s+lob(?:e|es|ar)\b", "side_levels"),
    # "right lower lobe", "left upper lobar", "right lung lower lobe", "right lower lung zone"
    (rf"\b{_SIDE}{_LUNG}\s+{_LEVEL}[-\s]+lob(?:e|es|ar)\b", "side_level"),
    (rf"\b{_SIDE}\s+(upper|lower)\s+(?:lung(?:\s+(?:zone|field)s?)?|zones?)\b", "side_zone"),
    # "lower lobe of the left lung"
    (rf"\b{_LEVEL}\s+lob(?:e|es)\s+of\s+the\s+{_SIDE}\s+lung\b", "level_of_side"),
    (r"\b(rul|rml|rll|lul|lll)\b", "abbrev"),
    (r"\blingula(?:r)?\b", "lingula"),
    (r"\bretrocardiac\b", "retrocardiac"),
    # "right apex", "left apical", "right lung apex", "apex of the left lung"
    (rf"\b{_SIDE}{_LUNG}\s+(?:apex|apices|apical|apically)\b", "side_apex"),
    (rf"\b(?:apex|apices)\s+of\s+the\s+{_SIDE}\s+lung\b", "apex_of_side"),
    # "right base", "left basilar", "right lung base", "left basal", "base of the right lung"
    (rf"\b{_SIDE}{_LUNG}\s+(?:base|bases|basilar|basal|basally|basilarly)\b", "side_base"),
    (rf"\bbases?\s+of\s+the\s+{_SIDE}\s+lung\b", "base_of_side"),
    # no side named: both lower lobes ("lower lobes bilaterally", "bibasilar", "lung bases")
    (rf"\b(?:{_BOTH}\s+)?{_LEVEL}\s+lob(?:e|es|ar)(?:\s+{_BOTH})?\b", "level"),
    (r"\b(?:bibasilar|bibasal|bibasally|bibasilarly|basilar|basal|basally|bases|lung\s+base|lower\s+(?:lung\s+)?"
     r"(?:zones?|fields?))\b(?!\s+(?:ganglia|cell))", "bases"),
    # "upper zone fibrosis", "upper lung zones": the upper lobes, as apices are
    (r"\b(?:biapical|apical|apices|lung\s+apex|apex\s+of\s+the\s+lung|upper\s+(?:lung\s+)?zones?)\b", "apices"),
]]


# Every pattern above holds one of these: a text without any names no location (read in one pass).
_ANY = re.compile(r"lob|rul|rml|rll|lul|lll|lingul|retrocardiac|apex|apic|bas|lung|zone", re.I)


def _fingerprint() -> str:
    # This module's own text: any change to how locations are read makes flags written before it stale.
    try:
        source = Path(__file__).read_bytes()
    except OSError:  # run without its source: the patterns and tables stand for it
        source = repr((_PATTERNS, _LOBE, _ABBREV, _UPPER, _BASE)).encode()
    return hashlib.sha256(source).hexdigest()[:16]


#: Identifies how locations are read, for flags stored with an index (:mod:`radsift.index.places`).
FINGERPRINT = _fingerprint()


@dataclass(frozen=True)
class Location:
    """A location named in a text.

    Attributes:
        regions: Bit mask of the regions it covers (:data:`RUL` ... :data:`LLL`).
        text: The words that named it.
        start, end: Where.
    """

    regions: int
    text: str
    start: int
    end: int

    @property
    def side(self) -> str | None:
        """The side the location implies: ``left`` or ``right`` when all its regions lie on one side."""
        if self.regions and not self.regions & LEFT:
            return "right"
        if self.regions and not self.regions & RIGHT:
            return "left"
        return None


def enabled() -> bool:
    """Whether locations are read (``RADSIFT_LOCATIONS`` is not ``off``)."""
    return os.environ.get(ENV, "").strip().lower() not in ("off", "0", "false", "no")


def _regions(kind: str, groups: tuple[str | None, ...]) -> int:
    g = [x.lower() if x else x for x in groups]
    if kind == "side_levels":
        return _LOBE[(g[0], g[1])] | _LOBE[(g[0], g[2])]
    if kind == "side_level":
        return _LOBE[(g[0], g[1])]
    if kind == "side_zone":
        return _UPPER[g[0]] if g[1] == "upper" else _BASE[g[0]]
    if kind == "level_of_side":
        return _LOBE[(g[1], g[0])]
    if kind == "abbrev":
        return _ABBREV[g[0]]
    if kind == "lingula":
        return LING
    if kind == "retrocardiac":
        return LLL
    if kind in ("side_apex", "apex_of_side"):
        return _UPPER[g[0]]
    if kind in ("side_base", "base_of_side"):
        return _BASE[g[0]]
    if kind == "level":
        return {"upper": RUL | LUL, "middle": RML, "lower": RLL | LLL}[g[0]]
    if kind == "bases":
        return _BASE["right"] | _BASE["left"]
    return RUL | LUL  # apices


def read_locations(text: str) -> list[Location]:
    """The locations ``text`` names, in text order (each span read once, by its longest phrasing)."""
    if not _ANY.search(text):
        return []
    taken: list[tuple[int, int]] = []
    out = []
    for pattern, kind in _PATTERNS:
        for m in pattern.finditer(text):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            taken.append((m.start(), m.end()))
            out.append(Location(_regions(kind, m.groups()), m.group(), m.start(), m.end()))
    return sorted(out, key=lambda loc: loc.start)


def lobes(regions: int) -> list[int]:
    """The lobes ``regions`` name, each as its bits ("left upper lobe": the lobe with its lingula; "lingula": the
    lingula alone)."""
    groups = [bit for bit in (RUL, RML, RLL, LLL) if regions & bit]
    if regions & LUL:
        groups.append(LUL | LING)
    elif regions & LING:
        groups.append(LING)
    return groups


def apart(locs: list[Location]) -> int:
    """:data:`EVERY` when the one-sided locations among ``locs`` name two lobes or more ("RML and RLL", "right upper and
    lower lobes", "right middle lobe and lingula"), else 0 ("bibasilar", "both apices", "left lower lobe")."""
    regions = 0
    for loc in locs:
        if loc.side:
            regions |= loc.regions
    return EVERY if len(lobes(regions)) > 1 else 0


def text_regions(text: str) -> tuple[int, int]:
    """``(regions, implied sides)`` of a text: the union of its locations' regions, and a bit mask of the
    sides its one-sided locations imply (1 left, 2 right: "RLL" is on the right; "bases" implies none)."""
    regions = sided = 0
    for loc in read_locations(text):
        regions |= loc.regions
        sided |= {"left": 1, "right": 2}.get(loc.side or "", 0)
    return regions, sided


def without_locations(text: str) -> str:
    """``text`` less the locations it names (:func:`read_locations`), spaces folded ("partly collapsed lung bases" ->
    "partly collapsed lung")."""
    for loc in reversed(read_locations(text)):
        text = text[:loc.start] + " " + text[loc.end:]
    return " ".join(text.split())


def describe(regions: int) -> str:
    """A mask in words: "left lower lobe", "right middle lobe, right lower lobe"."""
    if regions & LUL and regions & LING:
        regions &= ~LING
    return ", ".join(name for bit, name in REGION_NAMES.items() if regions & bit)


#: Word groups (before stemming) of which a text naming a location holds every word of at least one: the
#: units whose texts are read for locations are those holding one (found from their BM25 postings).
TRIGGERS = tuple((w,) for w in ("lobe", "lobes", "lobar", "rul", "rml", "rll", "lul", "lll", "lingula", "lingular",
                                 "retrocardiac", "apex", "apices", "apical", "apically", "biapical", "base",
                                 "bases", "basilar", "basal", "basally", "basilarly", "bibasilar", "bibasal",
                                 "bibasally", "bibasilarly")) + (("upper", "lung"), ("lower", "lung"), ("upper", "zone"),
                                                                 ("lower", "zone"), ("lower", "field"))

__all__ = ["ENV", "EVERY", "FINGERPRINT", "LEFT", "LING", "LLL", "LUL", "Location", "REGION_NAMES", "RIGHT", "RLL", "RML", "RUL",
           "TRIGGERS", "apart", "describe", "enabled", "lobes", "read_locations", "text_regions",
           "without_locations"]
