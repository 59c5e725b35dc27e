"""Location flags: the lung regions each unit names, written with the segment.

The location tier (:mod:`radsift.ranking.places`) needs, per unit, the regions it names and the sides
they imply (:func:`radsift.text.locations.text_regions`). Read when a query first names a location, they
cost a pass over every unit holding a location word, its text read from SQLite: 3 s at a million
sentences, paid by one user's query. A segment holds them instead, computed from the texts it is
written from::

    sentence_regions.npy, section_regions.npy            uint8 region masks (bits of radsift.text.locations)
    sentence_region_sides.npy, section_region_sides.npy  uint8 the sides they imply (1 left, 2 right)

The segment's manifest entry records how they were read (``"locations"``:
:data:`radsift.text.locations.FINGERPRINT`). They are checksummed like every small array and range-checked
when read. A segment written before them, or under other location rules, has none that count: the store
then reads every unit's flags from the texts on first use, as before (:func:`store_locations` returns None).
``radsift index optimize`` (a merge writes a new segment) writes them again, and rewrites even a lone segment
that lacks them.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from radsift.errors import IndexDamagedError
from radsift.index.integrity import check_values, file_and_reason
from radsift.text.locations import FINGERPRINT, text_regions

#: The segment's manifest entry key naming how its flags were read.
KEY = "locations"
UNIT_KINDS = ("sentence", "section")


def file_names(kind: str) -> tuple[str, str]:
    """The two arrays (without ``.npy``) of ``kind`` units."""
    return f"{kind}_regions", f"{kind}_region_sides"


def location_arrays(kind: str, texts: Sequence[str]) -> dict[str, np.ndarray]:
    """The location flags of ``kind`` units with these texts, as segment arrays."""
    regions = np.zeros(len(texts), dtype=np.uint8)
    sides = np.zeros(len(texts), dtype=np.uint8)
    for row, text in enumerate(texts):
        r, s = text_regions(text)
        if r:
            regions[row], sides[row] = r, s
    names = file_names(kind)
    return {names[0]: regions, names[1]: sides}


def stamp() -> dict[str, str]:
    """What a segment's manifest entry records of its flags (the key :func:`current` reads)."""
    return {KEY: FINGERPRINT}


def current(info: dict) -> bool:
    """Whether a segment's manifest entry says it holds location flags read as this version reads them."""
    files = info.get("files") or {}
    return info.get(KEY) == FINGERPRINT and all(f"{n}.npy" in files for k in UNIT_KINDS for n in file_names(k))


def segment_locations(seg, kind: str) -> tuple[np.ndarray, np.ndarray] | None:
    """(regions, sides) of a segment's ``kind`` units, by segment row (deleted ones included); None where
    the segment holds no flags read as this version reads them.

    Raises:
        IndexDamagedError: A file missing, of another checksum or shape, or a value out of range, naming it.
    """
    names = file_names(kind)
    if not current(seg.info):
        return None
    n = int(seg.info["counts"][f"{kind}s"])
    out = []
    for name, top in zip(names, (64, 4)):
        arr = seg.array(name)
        path = seg.path / f"{name}.npy"
        if arr.shape != (n,):
            raise IndexDamagedError(f"{path}: shape {arr.shape}, expected ({n},): the file is damaged")
        out.append(check_values(path, arr, 0, top))
    return out[0], out[1]


def store_locations(store, kind: str) -> tuple[np.ndarray, np.ndarray] | None:
    """(regions, sides) of a store's live ``kind`` units, in store row order, from its segments' files; None
    when some segment holds none (the caller reads them from the texts)."""
    regions, sides = [], []
    for seg in store.segments:
        got = segment_locations(seg, kind)
        if got is None:
            return None
        local = seg.unit_local(kind)
        regions.append(got[0] if local is None else got[0][local])
        sides.append(got[1] if local is None else got[1][local])
    if not regions:
        return np.zeros(0, np.uint8), np.zeros(0, np.uint8)
    return np.concatenate(regions).astype(np.uint8), np.concatenate(sides).astype(np.uint8)


def location_problems(seg) -> list[tuple[str, str]]:
    """(file, reason) where a segment's location flags cannot be read (none for a segment without them)."""
    problems = []
    for kind in UNIT_KINDS:
        try:
            segment_locations(seg, kind)
        except IndexDamagedError as exc:
            problems.append(file_and_reason(exc))
    return problems


__all__ = ["KEY", "current", "stamp", "file_names", "location_arrays", "location_problems", "segment_locations",
           "store_locations"]
