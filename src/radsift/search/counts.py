"""Count a search's whole ranked list, and band its hits.

:class:`Counts` says how many reports (sentences at sentence level) the whole ranked list holds,
how many of them state the query's reading, and each unit's class (what it states of the reading);
:meth:`Counts.bands` turns a hit's class and relative score into its relevance estimate and band
(:mod:`radsift.ranking.bands`).
"""

from __future__ import annotations

import numpy as np

from radsift.index.reader import IndexStore
from radsift.ranking.bands import BandTable, band_of, relative_scores, score_kind
from radsift.ranking.core import base_scores, eligible
from radsift.ranking.tiers import CLASS_NAMES, STATES
from radsift.search.linkbands import lifted
from radsift.search.reading import ReadingTiers


class Counts:
    """How many reports (or sentences) the whole ranked list holds and how many state the reading,
    and each unit's class for its relevance band."""

    def __init__(self, total: int, matching: int | None, lower_bound: bool, classes: np.ndarray | None,
                 eligible_units: np.ndarray, by_report: bool) -> None:
        self.total, self.matching, self.lower_bound = total, matching, lower_bound
        self.classes, self.eligible_units, self.by_report = classes, eligible_units, by_report

    @classmethod
    def of(cls, store: IndexStore, opts, scores: dict, read_tiers: ReadingTiers) -> "Counts":
        """The counts of a search with checked options ``opts``, its ranking ``scores`` and reading tiers."""
        units = store.units(opts.unit)
        n_units = units.report_row.shape[0]
        ok = eligible(opts.mode, bm25=scores.get("bm25"), mask=scores.get("mask"), keep=scores.get("keep"),
                      n_units=n_units)
        rows = np.flatnonzero(ok)
        by_report = opts.level == "report"
        n_reports = int(store.manifest.counts.get("reports", 0)) if by_report else 0
        if by_report:
            seen = np.zeros(n_reports, dtype=bool)
            seen[units.report_row[rows]] = True
            total = int(seen.sum())
        else:
            total = int(rows.size)
        unit_class, report_class = read_tiers.classes(rows, units.report_row if by_report else None, n_reports)
        matching, classes = None, None
        if unit_class is not None:
            if by_report:
                matching = int(((report_class == STATES) & seen).sum())
                classes = report_class
            else:
                matching = int((unit_class == STATES).sum())
                classes = np.full(n_units, -1, dtype=np.int8)
                classes[rows] = unit_class
        return cls(total, matching, read_tiers.capped, classes, ok, by_report)

    def bands(self, opts, scores: dict, page: list, links: list[bool] | None = None) -> list[tuple[str, float]]:
        """(band, relevance estimate) of each hit of the page (:func:`band_rows`); ``links``: whether each states
        the concepts linked beside the literal reading (:func:`.linkbands.stating_links`)."""
        if not page:
            return []
        base = base_scores(opts.mode, dense=scores.get("dense"), bm25=scores.get("bm25"), alpha=scores["alpha"])
        relative = relative_scores(base, [u for _, u, _ in page], self.eligible_units).tolist()
        codes = [-1 if self.classes is None else int(self.classes[rep_row if self.by_report else unit_row])
                 for rep_row, unit_row, _ in page]
        return band_rows(opts.mode, codes, relative, links)


def band_rows(mode: str, classes: list[int], relative: list[float],
              links: list[bool] | None = None) -> list[tuple[str, float]]:
    """(band, relevance estimate) per page entry from its class code (-1: none) and relative score
    (:mod:`radsift.ranking.bands`), a stated link lifting it (:func:`.linkbands.lifted`): both engines band so."""
    table, kind = BandTable.packaged(), score_kind(mode)
    out, names = [], []
    for code, rel in zip(classes, relative):
        name = CLASS_NAMES[code] if code >= 0 else "none"
        estimate = table.estimate(kind, name, rel)
        out.append((band_of(name, estimate), round(estimate, 3)))
        names.append(name)
    return lifted(out, names, relative, mode, links)
