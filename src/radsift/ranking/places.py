"""Location tiers: a unit naming the query's lobe ranks above one naming no lobe, above one naming another.

Locations (:mod:`radsift.text.locations`) are read like sides: from the query, and from every unit
that holds a location word (:data:`radsift.text.locations.TRIGGERS`, found from its BM25 postings, so
the work is in proportion to those units). Within one reading tier, the location tier comes first and
the side tier second (:func:`where_tiers`): for "left lower lobe opacity", a unit stating a left lower
lobe (or left basilar) opacity ranks first, then units naming no lobe (left-sided first), then units
naming another lobe (a left upper lobe opacity before a right one). A location that lies on one side
("RLL", "lingula", "retrocardiac") also gives its unit that side (:func:`with_implied_sides`).

A query naming a body place outside the lung beside its device or finding ("thoracic spine hardware", "left
subclavian central line": :mod:`radsift.text.bodyplaces`) ranks the units naming that place first, the same way;
like the mediastinal bit, the units' places are read from their postings (:func:`with_compartments`), never stored.

A query asking for a change since the last study ("new pleural effusion", "improving right lower lobe pneumonia":
:mod:`radsift.text.changes`) or a degree ("small pneumothorax", "severe emphysema": :mod:`radsift.text.degrees`)
splits each location tier: the units saying it first (:func:`location_tiers`); their words are read from the
postings too (:func:`with_qualifiers`).
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np

from radsift.ranking.tiers import SIDE_SLOTS, side_flags
from radsift.text.bodyplaces import BODY, FAMILIES, PLACE_WORDS, is_whole, resolve
from radsift.text.changes import CHANGE, STATES_NOT_CHANGES, says_no_change
from radsift.text.changes import UNIT_WORDS as CHANGE_WORDS
from radsift.text.degrees import DEGREE
from radsift.text.degrees import UNIT_WORDS as DEGREE_WORDS
from radsift.text.compartments import HILA, HILAR_WORDS, LOBES, LUNG, LUNG_WORDS, MEDIASTINAL_WORDS, MEDIASTINUM, MIDDLE
from radsift.text.locations import EVERY, LING, LUL, TRIGGERS, lobes, text_regions
from radsift.text.patterns import MARGIN, PATTERN
from radsift.text.patterns import UNIT_WORDS as PATTERN_WORDS
from radsift.text.tokens import stem

#: The words of the mediastinum proper (:data:`~radsift.text.compartments.MIDDLE`): the mediastinal ones less the hila's.
_MIDDLE_WORDS = tuple(g for g in MEDIASTINAL_WORDS if g not in HILAR_WORDS)
#: Location tiers within one reading tier (same, none, another), each holding the side tiers.
LOCATION_SLOTS = 3
#: What a query may ask of its finding beside a place, each a family of bits: a change since the last study
#: (:mod:`radsift.text.changes`), a degree (:mod:`radsift.text.degrees`), a pattern and a margin
#: (:mod:`radsift.text.patterns`).
#: Each one asked adds a slot to every location tier: the units saying all of them first, then those missing one, and
#: so on.
QUALIFIERS = (CHANGE, DEGREE, PATTERN, MARGIN)
#: Every qualifier bit.
QUALIFIER_BITS = CHANGE | DEGREE | PATTERN | MARGIN
#: Every bit of a region mask (64: the patterns' lie above 32).
ALL_BITS = (1 << 64) - 1
#: (a whole, its parts a query may name alone): "left upper lobe" holds the lingula (the left apex, read as the
#: upper lobe, is no part of it here: a left upper lobe finding is an apical one for the location tier).
WHOLE_LOBES = ((LUL | LING, LING),)


def _asked(regions: int) -> list[int]:
    """The qualifiers (:data:`QUALIFIERS`) a query's regions ask, each as its bits there."""
    return [regions & family for family in QUALIFIERS if regions & family]


def lobe_groups(regions: int) -> list[int]:
    """The lobes a query's regions name apart (:data:`~radsift.text.locations.EVERY`), each as its bits
    (:func:`radsift.text.locations.lobes`); none for a query not naming them apart. "RML and RLL infiltrates" names
    two: a unit stating both ranks before one stating one."""
    return lobes(regions) if regions & EVERY else []


def _keys(regions: int, groups: list[int]) -> int:
    """How many keys split each location tier: one per qualifier asked, and one for two lobes or more (``groups``:
    :func:`lobe_groups`)."""
    return len(_asked(regions)) + (len(groups) > 1)


def location_slots(regions: int) -> int:
    """How many location tiers (:func:`location_tiers`) a query's regions give: 3, times one more for each qualifier
    asked (a change: 6; a change and a degree: 9), and one more for two lobes or more."""
    return LOCATION_SLOTS * (_keys(regions, lobe_groups(regions)) + 1)


def location_tiers(regions: int, unit_regions: np.ndarray) -> np.ndarray:
    """Per-unit location tier for a query's regions: overlapping 0, no location 1, only other regions 2; with
    qualifiers among the regions (:data:`QUALIFIERS`: a change, a degree), ``that * (asked + 1) + missing``, where
    ``missing`` counts the asked qualifiers the unit does not say; a query naming two lobes or more
    (:func:`lobe_groups`) asks one key more, missed by a unit that does not name them all.

    A query of the lung (:data:`~radsift.text.compartments.LUNG`): 2 for a unit of the mediastinum or hila
    alone (:data:`~radsift.text.compartments.MEDIASTINUM`), 1 for every other (the tier of a unit naming no
    place, so the candidate engine's default holds). A query of a hilum or of the mediastinum
    (:data:`~radsift.text.compartments.HILA`, :data:`~radsift.text.compartments.MIDDLE`): 0 for a unit of the mediastinum
    or hila alone naming that one, 1 for every other. A query of a body place (:data:`~radsift.text.bodyplaces.BODY`):
    0 for a unit naming it, 1 for every other (before the lung's rule where the query names both). Lobe queries
    read the units' lobe bits alone. A unit naming only a whole of which the query names a part (the left upper lobe
    for a lingula query, the spine for a thoracic spine query) counts as naming no place (:func:`_meets`).
    """
    unit_regions = np.asarray(unit_regions)
    tiers = _place_tiers(regions & ~QUALIFIER_BITS, unit_regions)
    groups = lobe_groups(regions)
    keys = _keys(regions, groups)
    if keys:
        missing = sum(((unit_regions & bits) == 0).astype(np.int64) for bits in _asked(regions))
        if len(groups) > 1:  # short of every lobe asked: one more key, however many lobes are missing
            missing = missing + np.any([(unit_regions & g) == 0 for g in groups], axis=0).astype(np.int64)
        tiers = tiers * (keys + 1) + missing
    return tiers


def unplaced_key(regions: int) -> int:
    """The location part of the key (:func:`where_tiers`) of a unit naming no place and saying no change (its side
    tier is added to it); 0 for a query of no regions."""
    if not regions:
        return 0
    return int(where_tiers(location_tiers(regions, np.zeros(1, dtype=np.uint64)), None, regions)[0])


def placed_mask(regions: int) -> int:
    """The unit bits that may set a unit's location tier apart for a query's ``regions``: every place bit, and the
    bits of each qualifier family asked (the query's or another of the family: that one holds the unplaced tier)."""
    return (ALL_BITS & ~QUALIFIER_BITS) | sum(family for family in QUALIFIERS if regions & family)


def placed_rows(places: np.ndarray, regions: int) -> np.ndarray:
    """The units whose location tier for a query's ``regions`` may differ from a unit naming no place: those holding
    a bit of :func:`placed_mask`."""
    return np.flatnonzero(np.asarray(places, dtype=np.uint64) & np.uint64(placed_mask(regions)))


def _place_tiers(regions: int, unit_regions: np.ndarray) -> np.ndarray:
    """:func:`location_tiers` less the qualifiers."""
    tiers = np.ones(len(unit_regions), dtype=np.int64)
    if not regions & LOBES:
        if regions & BODY:
            tiers[_meets(regions & BODY, unit_regions, tuple((f, f) for f in FAMILIES))] = 0
        if regions & (HILA | MIDDLE):
            tiers[(unit_regions & regions & (HILA | MIDDLE)) != 0] = 0
        if regions & LUNG:
            tiers[((unit_regions & MEDIASTINUM) != 0) & (tiers == 1)] = 2
        return tiers
    regions &= LOBES
    unit_regions = unit_regions & LOBES
    named = unit_regions != 0
    meets = _meets(regions, unit_regions, WHOLE_LOBES)
    tiers[named & meets] = 0
    tiers[named & ((unit_regions & regions) == 0)] = 2
    return tiers


def _meets(regions: int, unit_regions: np.ndarray, wholes: tuple[tuple[int, int], ...]) -> np.ndarray:
    """The units whose places meet the query's: they overlap, and not only within a whole the unit names where the
    query names a part of it ("left upper lobe" for a lingula query, "spinal rods" for the thoracic spine: the
    finding may lie in another part; the unit then counts as naming no place). ``wholes``: (whole, its parts)."""
    overlap = unit_regions & regions
    meets = overlap != 0
    for whole, parts in wholes:
        part = regions & whole
        if part and part != whole and part & parts == part:
            meets &= ~(((unit_regions & whole) == whole) & ((overlap & whole) == overlap))
    return meets


def location_flags(n_units: int, units_with: Callable[[Sequence[str]], Sequence[int]],
                   texts: Callable[[Sequence[int]], Mapping[int, str]]) -> tuple[np.ndarray, np.ndarray]:
    """Per unit: the regions it names and the sides they imply (:func:`radsift.text.locations.text_regions`).

    Args:
        n_units: Number of units.
        units_with: Stems -> the units holding every one of them.
        texts: Unit rows -> their texts (only the units holding a trigger word are read).

    Returns:
        ``(regions, implied sides)``: uint8 masks (implied sides: 1 left, 2 right).
    """
    regions = np.zeros(n_units, dtype=np.uint8)
    sided = np.zeros(n_units, dtype=np.uint8)
    rows = _holding(units_with, TRIGGERS)
    if rows.size:
        for row, text in texts(rows.tolist()).items():
            regions[row], sided[row] = text_regions(text)
    return regions, sided


def _holding(units_with: Callable[[Sequence[str]], Sequence[int]], groups) -> np.ndarray:
    """The sorted units holding every word of at least one of ``groups`` (words before stemming)."""
    # numpy, not a set of ints: "lung" alone is held by a third of a million sentences at 1M
    found = [np.asarray(units_with([stem(w) for w in words]), dtype=np.int64) for words in groups]
    return np.unique(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)


def with_compartments(regions: np.ndarray, units_with: Callable[[Sequence[str]], Sequence[int]],
                      texts: Callable[[Sequence[int]], Mapping[int, str]] | None = None) -> np.ndarray:
    """Region masks with :data:`~radsift.text.compartments.MEDIASTINUM` set on the units that name the
    mediastinum or a hilum and no lobe nor lung word (with :data:`~radsift.text.compartments.HILA` or
    :data:`~radsift.text.compartments.MIDDLE` saying which), and the body places the units name
    (:func:`with_body_places`); from their postings: no text is read.

    Args:
        regions: Per-unit lobe masks (:func:`location_flags`, or the index's stored ones, which hold the lobes
            alone); not modified.
        units_with: Stems -> the units holding every one of them.
        texts: Unit rows -> their texts, for the few units whose change the words alone leave open
            (:func:`with_qualifiers`); None: the words alone.

    Returns:
        A new uint64 array (the body places' bits lie above a byte, the patterns' above 32 bits).
    """
    out = np.array(regions, dtype=np.uint64, copy=True)
    # each word's postings read once: the hila's words and the mediastinum proper's make up the mediastinal ones
    hilar = np.zeros(out.shape[0], dtype=bool)
    hilar[_holding(units_with, HILAR_WORDS)] = True
    middle = np.zeros(out.shape[0], dtype=bool)
    middle[_holding(units_with, _MIDDLE_WORDS)] = True
    mediastinal = hilar | middle
    if mediastinal.any():
        mediastinal[_holding(units_with, LUNG_WORDS)] = False
        mediastinal &= (out & LOBES) == 0
        out[mediastinal] |= MEDIASTINUM
        out[mediastinal & hilar] |= HILA  # which of them: "right hilar mass" is no mediastinal one
        out[mediastinal & middle] |= MIDDLE
    return with_body_places(out, units_with, texts)


def with_body_places(regions: np.ndarray, units_with: Callable[[Sequence[str]], Sequence[int]],
                     texts: Callable[[Sequence[int]], Mapping[int, str]] | None = None) -> np.ndarray:
    """``regions`` (uint64, modified in place and returned) with the body places each unit names
    (:data:`radsift.text.bodyplaces.PLACE_WORDS`, read as :func:`radsift.text.bodyplaces.resolve` reads them)."""
    n = regions.shape[0]
    parts, wholes = np.zeros(n, dtype=np.uint64), np.zeros(n, dtype=np.uint64)
    for words, bits in PLACE_WORDS:
        rows = _holding(units_with, (words,))
        if rows.size:
            target = wholes if is_whole(bits) else parts
            target[rows] |= np.uint64(bits)
    regions |= resolve(parts, wholes).astype(np.uint64)
    return with_qualifiers(regions, units_with, texts)


def with_qualifiers(regions: np.ndarray, units_with: Callable[[Sequence[str]], Sequence[int]],
                    texts: Callable[[Sequence[int]], Mapping[int, str]] | None = None) -> np.ndarray:
    """``regions`` (uint64, modified in place and returned) with the changes each unit says
    (:data:`radsift.text.changes.UNIT_WORDS`: "new", "improved", "resolved", "stable" ...), the degrees
    (:data:`radsift.text.degrees.UNIT_WORDS`: "mild", "small", "moderate", "severe" ...) and the patterns
    (:data:`radsift.text.patterns.UNIT_WORDS`: "streaky", "platelike", "subsegmental" ...). With ``texts`` (unit
    rows -> their texts), the units holding a word of worsening beside a side word, or of improvement beside a
    volume, are read: one whose words say a state (:func:`radsift.text.changes.says_no_change`: "left worse than
    right", "decreased lung volumes") says no change."""
    for words, bits in CHANGE_WORDS + DEGREE_WORDS + PATTERN_WORDS:
        rows = _holding(units_with, (words,))
        if rows.size:
            regions[rows] |= np.uint64(bits)
    if texts is not None:
        for bit, (_, beside, _) in STATES_NOT_CHANGES.items():
            held = _holding(units_with, tuple((w,) for w in beside))
            rows = held[(regions[held] & np.uint64(bit)) != 0]
            if rows.size:
                for row, text in texts(rows.tolist()).items():
                    if says_no_change(text, bit):
                        regions[row] &= ~np.uint64(bit)
    return regions


def with_implied_sides(sides: tuple[np.ndarray, np.ndarray, np.ndarray],
                       locations: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Side flags (:func:`radsift.ranking.tiers.side_flags`) with the sides the units' locations imply."""
    left, right, bilateral = sides
    sided = locations[1]
    return left | ((sided & 1) != 0), right | ((sided & 2) != 0), bilateral


def unit_side_flags(n_units: int, units_with: Callable[[str], Sequence[int]],
                    texts: Callable[[Sequence[int]], Mapping[int, str]], chambers: bool = False,
                    locations: Callable[[], tuple[np.ndarray, np.ndarray]] | None = None,
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The side flags a search ranks by, for the search and the evaluation systems alike.

    Args:
        n_units: Number of units.
        units_with: A word's stem -> the units holding it.
        texts: Unit rows -> their texts (the units naming a heart chamber beside a side word are read again).
        chambers: The sides of the heart chambers the units name instead (a query whose side is a chamber's).
        locations: When given (location reading on), the units' locations (:func:`location_flags`), whose sides
            are added ("RLL": right); a chamber's side takes none from them.

    Returns:
        ``(has left, has right, has bilateral)`` (:func:`radsift.ranking.tiers.side_flags`).
    """
    words = side_flags(n_units, units_with, texts, chambers)
    return words if chambers or locations is None else with_implied_sides(words, locations())


def where_tiers(locations: np.ndarray | None, sides: np.ndarray | None, regions: int = 0) -> np.ndarray | None:
    """One key per unit from its location tier and its side tier; None when neither is read.

    Without a location the key is the side tier (0-2). With one, the place comes first (same, none, another: the
    location tier less its qualifiers), then the side: a unit naming the opposite side ranks after every other unit
    of its place, whatever it says of the qualifiers asked (``regions``' change, degree, pattern: "linear atelectasis
    at both bases" is no "platelike atelectasis at the left base" first, queries_v16 dev); then the qualifiers
    missed, then same side before none. Each place takes ``3 * k`` keys (``k``: the location tier's keys per place,
    :func:`location_slots` / 3): ``missing * 2 + side`` (side 0 or 1), or ``2 * k + missing`` on the opposite side;
    a missing side counts as tier 0 for every unit. Without qualifiers this is ``location * 3 + side``.
    """
    if locations is None:
        return sides
    k = location_slots(regions) // LOCATION_SLOTS
    place, missing = np.divmod(np.asarray(locations, dtype=np.int64), k)
    if sides is None:
        return place * (SIDE_SLOTS * k) + missing * 2
    sides = np.asarray(sides, dtype=np.int64)
    return place * (SIDE_SLOTS * k) + np.where(sides == 2, 2 * k + missing, missing * 2 + sides)


__all__ = ["LOCATION_SLOTS", "QUALIFIERS", "QUALIFIER_BITS", "lobe_groups", "location_flags", "location_slots", "location_tiers",
           "placed_mask", "placed_rows",
           "unplaced_key", "where_tiers", "with_body_places", "with_qualifiers", "with_compartments", "with_implied_sides", "unit_side_flags"]
