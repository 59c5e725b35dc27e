"""Where a query asks: its lobes, zones, lung compartments and body places, read together (a lobe or zone first; the
lung, the mediastinum or a hilum, or a body place where the query names none), with the side they imply.
"""

from __future__ import annotations

from radsift.text import bodyplaces, compartments, locations, zones


def query_location(query: str, body: bool = True) -> tuple[str | None, int, str | None]:
    """(the query's location in its words, its regions, the side it implies) (None, 0, None) for none; ``body``:
    whether body places (:mod:`radsift.text.bodyplaces`) are read."""
    if not locations.enabled():
        return None, 0, None
    locs = locations.read_locations(query)
    zone_words, zone_regions = zones.query_zones(query)  # "left midlung": the lingula, from the query alone
    if not locs and not zone_regions:
        lung = compartments.lung_place(query)  # "lung mass": the lung against the mediastinum and hila
        middle = None if lung else compartments.mediastinal_place(query)  # "right hilar mass": the hila first
        place, bits = bodyplaces.query_places(query) if body else (None, 0)  # "thoracic spine hardware"
        words = ", ".join(w for w in (lung, middle, place) if w)
        bits |= (compartments.LUNG if lung else 0) | (compartments.place_bit(middle) if middle else 0)
        return (words, bits, None) if words else (None, 0, None)
    zone = locations.Location(zone_regions, zone_words or "", 0, 0)
    regions = zone_regions | locations.apart(locs + [zone])
    for loc in locs:
        regions |= loc.regions
    sides = {loc.side for loc in locs if loc.side} | {zone.side} - {None}
    words = [loc.text.lower() for loc in locs] + ([zone_words] if zone_words else [])
    return ", ".join(words), regions, sides.pop() if len(sides) == 1 else None


__all__ = ["query_location"]
