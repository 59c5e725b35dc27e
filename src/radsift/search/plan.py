"""Plan a search: the units it may return, and what each states of the query's reading.

The plan is what the scores do not decide: the eligible units (the ``target`` section and the
metadata filters, :func:`eligible_mask`), the reading tier of every unit (its findings' statuses,
then its location and side, and for a query asking for a finding whether the unit says only all is normal, or for
one asking for its findings alone how many other findings its report states:
:func:`~radsift.search.reading.reading_tiers` over the stored labels, :mod:`.normals`)
and the units that state the whole reading (the ranking keeps those first, whatever their score).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, replace

import numpy as np

from radsift.index.places import store_locations
from radsift.index.reader import IndexStore
from radsift.ranking import stating, units_with_terms
from radsift.ranking.alone import with_alone
from radsift.ranking.places import location_flags, unit_side_flags, with_compartments
from radsift.records import QueryReading
from radsift.search.options import SearchRequest
from radsift.search.normals import sentence_said, unit_alone_keys
from radsift.search.reading import ReadingTiers, normal_key_wanted, reading_tiers
from radsift.search.units import section_of_sentence, unit_texts
from radsift.text import locations


@dataclass(frozen=True)
class Plan:
    """What a search ranks over.

    Attributes:
        mask: The eligible units (None: every unit).
        reading: The reading's tier of every unit, and what each states (for counts and bands).
        keep: The units that state the query's whole reading (None when it names no finding).
    """

    mask: np.ndarray | None
    reading: ReadingTiers
    keep: np.ndarray | None

    @property
    def tiers(self) -> np.ndarray | None:
        """The ranking tier of every unit (None when the ranking reads nothing)."""
        return self.reading.tiers


def plan_search(store: IndexStore, request: SearchRequest, reading: QueryReading, labeler,
                gap: float | None = None) -> Plan:
    """The plan of ``request`` over ``store`` for the query's ``reading`` (``labeler`` reads open phrases). ``gap``
    (calibrated tier boosts, :func:`radsift.ranking.apply_tiers`): no normal key (it would multiply each tier's cost)."""
    normal_last = normal_key_wanted(reading, request.query, gap)
    read_tiers = unit_reading(store, request.options, reading, labeler, normal_last and not reading.alone)
    if normal_last and reading.alone and read_tiers.tiers is not None:  # in the normal key's place: the alone key
        keys = unit_alone_keys(store, request.options.unit, reading, getattr(labeler, "lexicon", None))
        read_tiers = replace(read_tiers, tiers=with_alone(read_tiers.tiers, keys.all()), literal=read_tiers.reading)
    tiers = read_tiers.reading  # a link beside the literal reading orders within its tiers: keep what states it
    keep = stating(tiers, read_tiers.slots) if tiers is not None and reading.findings else None
    return Plan(eligible_mask(store, request.options), read_tiers, keep)


#: Eligibility masks kept per store generation (the least recently used goes first).
MASKS_KEPT = 32


def eligible_mask(store: IndexStore, opts) -> np.ndarray | None:
    """The units of ``opts.unit`` in the ``target`` section whose reports match the filters (None: all).

    A generation's metadata never changes, so the masks of its last :data:`MASKS_KEPT` filters are kept
    (read-only): a repeated filter costs no SQLite query and no pass over the units.
    """
    if opts.target is None and not opts.where:
        return None
    key = (opts.unit, opts.target, tuple(str(f) for f in opts.where or ()))
    kept, lock = store.cached(("eligible_masks",), lambda: (OrderedDict(), threading.Lock()))
    with lock:
        if key in kept:
            kept.move_to_end(key)
            return kept[key]
    mask = _eligible_mask(store, opts)
    mask.flags.writeable = False
    with lock:
        kept[key] = mask
        while len(kept) > MASKS_KEPT:
            kept.popitem(last=False)
    return mask


def _eligible_mask(store: IndexStore, opts) -> np.ndarray:
    units = store.units(opts.unit)
    mask = None
    if opts.target is not None:
        mask = units.section_code == store.section_code(opts.target)
    if opts.where:
        m2 = np.isin(units.report_row, store.report_rows_where(opts.where))
        mask = m2 if mask is None else mask & m2
    return mask


def unit_reading(store: IndexStore, opts, reading: QueryReading, labeler, normal_last: bool = True) -> ReadingTiers:
    """The reading tier of every unit of ``opts.unit`` and what each states (see
    :func:`~radsift.search.reading.reading_tiers`); ``normal_last`` False: no normal key (the query calls all normal:
    :func:`~radsift.search.reading.asks_for_finding`)."""
    if not reading.active:
        return ReadingTiers(None)
    labels = store.labels()
    units = store.units(opts.unit)
    return reading_tiers(
        reading, labeler, n_units=units.report_row.shape[0],
        labels=(labels.row, labels.finding, labels.status),
        finding_codes={f: i for i, f in enumerate(store.manifest.findings)},
        sentence_texts=sentence_texts(store), open_candidates=open_candidates(store),
        side_flags=lambda: unit_sides(store, opts.unit, reading.chamber),
        location_flags=lambda: unit_locations(store, opts.unit)[0],
        unit_of=None if opts.unit == "sentence" else store.cached(("section_of_sentence",),
                                                                   lambda: section_of_sentence(store)),
        group_of=units.report_row if opts.level == "report" else None, classes=True,
        said=(lambda: sentence_said(store)) if normal_last else None,
    )


def sentence_texts(store: IndexStore):
    """Sentence rows -> their texts (what the open-vocabulary reader reads)."""
    return lambda rows: {r: s.text for r, s in store.sentences_by_rows(rows).items()}


def open_candidates(store: IndexStore):
    """A phrase's stems -> the sentences holding them all, best BM25 match first (from the terms' postings)."""
    n = store.units("sentence").report_row.shape[0]
    return lambda stems: units_with_terms(store.bm25("sentence"), stems, n)


def literal_check(store: IndexStore):
    """A phrase's stems -> whether some sentence of ``store`` holds them all (the query's words occur in
    the index, so its literal reading stays: :func:`~radsift.search.reading.read_query`)."""
    def occurs(stems) -> bool:
        n = store.units("sentence").report_row.shape[0]
        return bool(units_with_terms(store.bm25("sentence"), list(stems), n).size)

    return occurs


def unit_sides(store: IndexStore, unit: str, chambers: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per unit: whether it has a left, a right and a bilateral side word (from its BM25 terms; a heart chamber's
    side is none), or a location on that side ("RLL": right; :func:`radsift.ranking.places.with_implied_sides`);
    ``chambers``: the sides of the heart chambers the units name instead (a query whose side is a chamber's:
    :attr:`~radsift.records.QueryReading.chamber`); kept per store."""
    on = locations.enabled() and not chambers
    places = unit_locations(store, unit) if on else None  # filled first: the store's cache lock is not reentrant

    def compute():
        retriever = store.bm25(unit)
        n = store.units(unit).report_row.shape[0]
        return unit_side_flags(n, lambda term: units_with_terms(retriever, [term], n),
                               lambda rows: {r: u.text for r, u in unit_texts(store, unit, list(rows)).items()},
                               chambers, None if places is None else lambda: places)

    return store.cached(("sides", unit, on, chambers), compute)


def unit_locations(store: IndexStore, unit: str) -> tuple[np.ndarray, np.ndarray]:
    """Per unit: the regions it names and the sides they imply (:func:`radsift.ranking.places.location_flags`:
    only the units holding a location word are read), or from the segments' files where every segment has
    them (:func:`radsift.index.places.store_locations`), with the mediastinal bit from the postings
    (:func:`radsift.ranking.places.with_compartments`); kept per store."""
    def compute():
        retriever = store.bm25(unit)
        n = store.units(unit).report_row.shape[0]

        def units_with(terms):
            return units_with_terms(retriever, terms, n)

        def texts(rows):
            return {r: u.text for r, u in unit_texts(store, unit, list(rows)).items()}

        lobes = store_locations(store, unit)
        if lobes is None:
            lobes = location_flags(n, units_with, texts)
        return with_compartments(lobes[0], units_with, texts), lobes[1]  # the mediastinum from the postings, never stored

    return store.cached(("locations", unit), compute)
