"""A concept linked beside the literal reading, on the candidate engine: its tiers from reading postings.

A lay phrasing ("fluid around the lungs") keeps its literal reading and the concept it links to stands
beside it (:attr:`radsift.records.ReadFinding.beside`, :func:`radsift.search.reading.read_query`). The
exact engine (:func:`radsift.search.reading.reading_tiers`) ranks every unit by the tier
``literal * (L + 1) + link``: ``literal`` is the literal reading's tier (its findings, side and location;
at report level its report's tier first), ``link`` the linked findings' (at report level its report's
first; no side), ``L`` the highest ``link`` of every unit. So the link orders units within each literal
tier, never across them. Counts, classes, bands and the units a ``bm25`` search keeps follow the literal
reading alone.

:class:`BesideTiers` gives those tiers at any units from two :class:`~radsift.search.candidates.QueryTiers`
over the same reading postings (the literal findings; the linked ones), and the lower bound of the tier of
every unit left out of a pool that the candidate engine's stop rule reads (:meth:`BesideTiers.lowest_outside`,
the literal reading's rule over the combined tiers):

- the **special** units (those stating something of a literal or a linked finding, or holding a side word
  or naming a location of the query) have their combined tiers read from the postings and are counted per
  tier, so those left out are bounded exactly;
- every other (**plain**) unit has the tier ``plain_literal(r) * (L + 1) + plain_link(r)`` of its report
  ``r`` (each side's :meth:`~radsift.search.candidates.QueryTiers.plain`): the default one in a report with
  no mention of either reading, else its report's, unless a unit of the pool in that report already has a
  lower tier (the plain unit cannot stand for its report; with calibrated boosts no report is covered);
- ``L`` is exact (:func:`max_tier`: the special units' highest tier and the plain tier of each report
  holding a plain unit), so the tiers, and the float32 scores ``base - tier * step``, are the exact engine's
  bit for bit.

The special units' combined tiers and the reports' plain tiers are computed on a reading's first query and kept
with it (:meth:`~radsift.search.candidates.ReadingPostings.memo`), so a query reads its pool only.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from radsift.index.reader import IndexStore
from radsift.records import QueryReading
from radsift.search.candidates import NOT_SPECIAL, QueryTiers, ReadingPostings
from radsift.search.reading import ranked_within
from radsift.search.sortedsets import lookup, run_counts, union
from radsift.text import locations


def query_tiers(store: IndexStore, reading: QueryReading, post: ReadingPostings, codes: dict, by_report: bool,
                sides, places=None, labeler=None) -> QueryTiers | BesideTiers:
    """The tiers of an active ``reading`` (arguments as :class:`~radsift.search.candidates.QueryTiers`): a
    :class:`BesideTiers` when a concept is linked beside the literal reading, or a finding is read with alternatives
    (its named finding orders units within the tiers: :func:`radsift.search.reading.ranked_within`)."""
    if any(f.beside or f.any_of for f in reading.findings):
        return BesideTiers(store, reading, post, codes, by_report, sides, places, labeler)
    return QueryTiers(store, reading, post, codes, by_report, sides, places, labeler)


def max_tier(qt: QueryTiers) -> int:
    """The highest tier of every unit (the exact engine's ``tiers.max()``) of ``qt``: its special units', and the
    plain tier of each report holding a plain unit (more units than special ones); kept with ``qt``'s tiers."""
    key = ("max",) + qt._key
    if key not in qt._memo:
        post, top = qt.post, [int(qt.special_tiers.max(initial=0))]
        if qt.special.size < post.n_units and not qt.by_report:
            top.append(qt.default_unit)
        elif qt.special.size < post.n_units:
            reps, count = run_counts(post.report_row[qt.special])
            top.append(int(qt.plain(reps[post.report_units[reps] > count]).max(initial=0)))
            if reps.size < post.reports_with_units:  # a report with no special unit
                top.append(qt.default)
        qt._memo[key] = max(top)
    return qt._memo[key]


class BesideTiers:
    """The exact engine's tiers of a reading with a link beside it (see the module), from two readings' postings.

    What the counts, classes and ``bm25``'s kept units read (``statuses``, ``views``, ``mentions``,
    :meth:`keep_rows`, ``stated``, ``report_best``, ``classes``, ``capped`` ...) is the literal reading's
    (:attr:`literal`); :meth:`tiers` and :meth:`lowest_outside` combine both.

    Attributes:
        literal: The literal reading's tiers (its findings, side and location).
        link: The linked findings' tiers (no side, no location).
        scale: ``L + 1``: the highest link tier of every unit, plus one.
        special: Sorted rows special to either reading; :attr:`special_tiers` their combined tiers.
        rep_rows: At report level, the sorted reports with a mention of either reading.
        default: The tier of a plain unit in a report with no mention of either reading.
    """

    def __init__(self, store: IndexStore, reading: QueryReading, post: ReadingPostings, codes: dict,
                 by_report: bool, sides, places=None, labeler=None) -> None:
        own, also = map(tuple, ranked_within(reading))
        self.literal = QueryTiers(store, replace(reading, findings=own), post, codes, by_report, sides, places,
                                  labeler)
        self.link = QueryTiers(store, QueryReading(also), post, codes, by_report, None, None, labeler)
        self.post, self.by_report = post, self.literal.by_report
        self.scale = max_tier(self.link) + 1
        self.default = self.literal.default * self.scale + self.link.default
        self._key = (self.by_report,)
        lit = self.literal
        self._memo = post.memo(("beside", tuple(lit._findings), lit.side if lit.sides is not None else None,
                                lit.regions, tuple(self.link._findings), locations.enabled()))
        if ("tiers",) + self._key not in self._memo:
            special = union([lit.special, self.link.special])
            reps = (union([lit.rep_rows, self.link.rep_rows]) if self.by_report
                    else np.zeros(0, dtype=np.int64))
            self._memo[("tiers",) + self._key] = (special, self._both(special), reps, self._both_plain(reps))
        self.special, self.special_tiers, self.rep_rows, self._rep_plain = self._memo[("tiers",) + self._key]

    def __getattr__(self, name: str):
        # what the counts, classes and bm25's kept units read: the literal reading's
        if name in ("literal", "link"):  # not set yet (a half-built object): no recursion
            raise AttributeError(name)
        return getattr(self.literal, name)

    def tiers(self, rows: np.ndarray) -> np.ndarray:
        """The tier of each unit of ``rows`` (any order), as the exact engine gives it: the special units' kept,
        every other unit's its report's :meth:`plain` tier."""
        rows = np.asarray(rows, dtype=np.int64)
        out = self.plain(self.post.report_row[rows])
        got = lookup(self.special, self.special_tiers, rows, NOT_SPECIAL, self.post.n_units, np.int64)
        found = got != NOT_SPECIAL
        out[found] = got[found]
        return out

    def plain(self, reports: np.ndarray) -> np.ndarray:
        """The tier of a plain unit (special to neither reading) of each of ``reports``: the default one in a
        report with no mention of either reading."""
        reports = np.asarray(reports, dtype=np.int64)
        return lookup(self.rep_rows, self._rep_plain, reports, self.default, self.post.n_reports, np.int64)

    def _both(self, rows: np.ndarray) -> np.ndarray:
        """``literal * (L + 1) + link`` at ``rows``: what :meth:`tiers` keeps for the special units."""
        return self.literal.tiers(rows) * self.scale + self.link.tiers(rows)

    def _both_plain(self, reports: np.ndarray) -> np.ndarray:
        return self.literal.plain(reports) * self.scale + self.link.plain(reports)

    def keep_rows(self) -> np.ndarray:
        """The units stating the literal reading (what ``bm25`` ranks even when they share no term)."""
        return self.literal.keep_rows()

    def states(self, rows: np.ndarray) -> np.ndarray:
        """Whether each unit of ``rows`` states the literal reading."""
        return self.literal.states(rows)

    # The literal reading's bound, over the combined special units, plain tiers and reports.
    lowest_outside = QueryTiers.lowest_outside
    _uncovered_low = QueryTiers._uncovered_low


__all__ = ["BesideTiers", "max_tier", "query_tiers"]
