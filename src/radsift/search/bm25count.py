"""A ``bm25`` search's counts and page classes from bitmaps and reading postings, never from its matches.

A ``bm25`` search ranks the eligible units that share a term with the query or state its whole reading
(the exact engine's ``keep``: :func:`radsift.ranking.core.eligible`). :func:`bm25_counts` gives what the
exact engine's :class:`radsift.search.counts.Counts` gives for it:

- ``total``: the union of each query term's reports (units at sentence level) and those stating the
  reading, within the filter's: one ``OR`` per term over packed bitmaps (:mod:`.bitmaps`), then one ``AND``
  and a popcount;
- ``matching`` (one finding): the reports (units) stating the reading (the finding's view), within the
  filter's; every such unit is eligible (it states the whole reading). With several findings, a unit stating
  one of them is eligible only when it shares a term with the query: their mentions are read (per query);
- each page entry's class: what the eligible units of its report state, from the findings' views read at
  the page's reports only.

A filter that keeps some units of a report and not others (``target``) at report level lists the eligible
units instead (a pass over the matches, as before).
"""

from __future__ import annotations

import numpy as np

from radsift.ranking.pool import BM25Side
from radsift.search.bitmaps import bits_of, popcount, union_count


def bm25_counts(opts, qt, post, mask, bm: BM25Side, page: list) -> tuple[int, int | None, list[int]]:
    """(total, matching, class of each page entry) of a ``bm25`` search (see the module)."""
    by_report = opts.level == "report"
    findings = qt is not None and bool(qt.statuses)

    def eligible(rows: np.ndarray) -> np.ndarray:
        """Whether each unit of ``rows`` is ranked: in the filter, and sharing a term or stating the reading."""
        rows = np.asarray(rows, dtype=np.int64)
        ok = bm.at(rows) > 0
        if findings:
            ok |= qt.states(rows)
        return ok if mask is None else ok & mask[rows]

    keyed = not (by_report and opts.target is not None)  # the filter is a set of reports (units)
    if keyed:
        within = None if mask is None else post.mask_bits(mask, by_report)
        sets = [post.terms.term(t, g, by_report) for t, g, _, _ in bm.terms]
        if findings:
            sets.append(_keep_bits(qt, post, by_report))
        total = union_count(sets, within) if sets else 0
    else:
        rows = np.union1d(bm.matches()[0], qt.keep_rows() if findings else np.zeros(0, np.int64))
        rows = rows[mask[rows]]
        total = int(np.unique(post.report_row[rows]).size)
    if not findings:
        return total, None, [-1] * len(page)
    if keyed and len(qt.views) == 1:
        stating = _stating_bits(qt.views[0], post, by_report)
        matching = popcount(stating & within) if within is not None else popcount(stating)
    else:
        matching = _matching(qt, post, eligible, by_report)
    if not page:
        return total, matching, []
    keys = np.asarray([r if by_report else u for r, u, _ in page], dtype=np.int64)
    uniq, inv = np.unique(keys, return_inverse=True)
    # a page unit is eligible: at sentence level its own mentions decide
    best = qt.page_report_best(uniq, eligible) if by_report else qt.stated(uniq)
    return total, matching, qt.classes(best)[inv].tolist()


def _stating_bits(view, post, by_report: bool) -> np.ndarray:
    """The bitmap of the reports (units) stating what the view's finding wants (kept with the view)."""
    key = ("stating_bits", by_report)
    if key not in view.memo:
        view.memo[key] = bits_of(view.stating[1] if by_report else view.stating[0], post.terms.size(by_report))
    return view.memo[key]


def _keep_bits(qt, post, by_report: bool) -> np.ndarray:
    """The bitmap of the reports (units) holding a unit that states the whole reading (one finding: its view's)."""
    if len(qt.views) == 1:
        return _stating_bits(qt.views[0], post, by_report)
    return bits_of(post.terms.keys(qt.keep_rows(), by_report), post.terms.size(by_report))


def _matching(qt, post, eligible, by_report: bool) -> int:
    """The reports (units) where, for every finding, an eligible unit states what is wanted: the mentions read."""
    per = []
    for j, (mrows, mtier) in enumerate(qt.mentions):
        rows = mrows[mtier == 0]
        ok = rows[eligible(rows)]
        per.append(qt.not_contradicted(j, np.unique(post.report_row[ok])) if by_report else np.unique(ok))
    matching = per[0]
    for p in per[1:]:
        matching = np.intersect1d(matching, p)
    return int(matching.size)


__all__ = ["bm25_counts"]
