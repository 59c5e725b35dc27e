"""One finding read for one wanted status, from the reading postings: its units and reports with their best tiers
(:class:`FindingView`, built by :meth:`radsift.search.candidates.ReadingPostings.view`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from radsift.search.sortedsets import is_sorted


@dataclass(frozen=True)
class FindingView:
    """One finding read for one wanted status: its units and its reports (sorted, unique), each with the
    best tier it states (:data:`radsift.ranking.tiers.TIER_OF`)."""

    rows: np.ndarray
    best: np.ndarray
    reports: np.ndarray
    report_best: np.ndarray
    #: The report of each of :attr:`rows`.
    row_reports: np.ndarray | None = None
    #: For a finding wanted absent, the reports a unit of which states it (a denial there is contradicted).
    opposite: np.ndarray | None = None
    #: What queries of this finding alone derive from it (:class:`QueryTiers`), kept with it.
    memo: dict = field(default_factory=dict, compare=False, repr=False)

    @cached_property
    def stating(self) -> tuple[np.ndarray, np.ndarray]:
        """(units, reports) that state what is wanted (best tier 0), computed once."""
        return self.rows[self.best == 0], self.reports[self.report_best == 0]

    @cached_property
    def by_report(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(reports, rows, best tiers) of the units, ordered by report (a report's units found by a search)."""
        if is_sorted(self.row_reports):  # units follow their reports: already in order
            return self.row_reports, self.rows, self.best
        order = np.argsort(self.row_reports, kind="stable")
        return self.row_reports[order], self.rows[order], self.best[order]

    def in_reports(self, reports: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(index into ``reports``, row, best tier) of each unit of sorted ``reports`` that states something."""
        keys, rows, best = self.by_report
        lo, hi = np.searchsorted(keys, reports, "left"), np.searchsorted(keys, reports, "right")
        lens = hi - lo
        pos = np.repeat(lo - np.cumsum(lens) + lens, lens) + np.arange(int(lens.sum()))
        return np.repeat(np.arange(reports.size), lens), rows[pos], best[pos]


__all__ = ["FindingView"]
