"""A finding alone: "granuloma, otherwise normal" ranks the reports stating nothing else first.

A researcher asking for "tortuous aorta, otherwise normal" wants the studies whose one finding is the tortuous aorta,
not every report that names one beside a big heart and a collapsed lobe. The query's reading (its findings, side,
location) still decides the tiers (:mod:`radsift.ranking.tiers`); below every one of its keys, in the place of the
normal key (:func:`radsift.ranking.tiers.with_normal`, which would only rank reports saying all is normal last), the
**alone key** orders the reports by how many other findings they state present: none first, then one, then two, and
:data:`CAP` or more last. "Other" is any lexicon finding but the query's own and those that hold or are held by them
(a calcified granuloma is a granuloma: :func:`related`). At sentence level a unit takes its report's count: being
alone is a property of the study, not of one sentence.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

#: Other findings counted: a report stating this many or more ranks with the ones stating most.
CAP = 3
#: How many values the alone key takes (0 .. :data:`CAP`).
ALONE_SCALE = CAP + 1


def related(lexicon, findings: Iterable[str]) -> set[str]:
    """The query's findings, their lexicon ``parts`` and ``any_of``, and every concept one of them is a part of:
    what a report stating the query's findings may also state without stating anything else."""
    named = set(findings)
    out = set(named)
    if lexicon is None:
        return out
    for concept in lexicon:
        parts = set(concept.parts) | {p for _, ps in concept.phrase_parts for p in ps}
        if concept.name in named:
            out |= parts | set(concept.any_of)
        elif parts & named:
            out.add(concept.name)
    return out


def own_codes(lexicon, reading, codes: Mapping[str, int]) -> list[int]:
    """The finding codes (``codes``: name -> code) that are no other finding for ``reading`` (a
    :class:`~radsift.records.QueryReading`): its findings and their alternatives (``any_of``), with those
    :func:`related` to them."""
    names = related(lexicon, [f.finding for f in reading.findings] + [a for f in reading.findings for a in f.any_of])
    return [codes[name] for name in names if name in codes]


def present_pairs(report_of_label: np.ndarray, finding: np.ndarray, status: np.ndarray,
                  n_findings: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``(report, finding)`` pairs stated present, sorted by finding then report, as their reports, and
    each finding's first pair (``offsets``, length ``n_findings + 1``): the reports of one finding are a sorted
    slice."""
    keep = np.asarray(status) > 0
    codes = np.asarray(finding, dtype=np.int64)[keep]
    reports = np.asarray(report_of_label, dtype=np.int64)[keep]
    base = max(int(reports.max(initial=-1)) + 1, 1)  # one int per pair: finding first, so a sort groups findings
    pairs = np.unique(codes * base + reports)
    offsets = np.searchsorted(pairs // base, np.arange(n_findings + 1), side="left")
    return pairs % base, offsets


class AloneKeys:
    """The alone key of units, computed for the rows asked (``keys[rows]``): how many findings each unit's report
    states present besides ``own`` (finding codes), at most :data:`CAP`. Lazy, so that the candidate engine reads the
    keys of its candidates alone, never an array over every unit of a large index.

    Args:
        pair_reports: The reports of the present pairs, sorted by finding, then report (:func:`present_pairs`).
        offsets: Each finding's first pair (:func:`present_pairs`).
        totals: How many findings each report states present (:func:`report_totals`).
        own: The codes of the query's findings and those related to them (:func:`related`).
        report_of_unit: The report of every unit.
    """

    def __init__(self, pair_reports: np.ndarray, offsets: np.ndarray, totals: np.ndarray, own: Iterable[int],
                 report_of_unit: np.ndarray) -> None:
        self.totals = totals
        self.report_of_unit = np.asarray(report_of_unit, dtype=np.int64)
        slices = (pair_reports[offsets[c]:offsets[c + 1]] for c in sorted(set(own)) if 0 <= c < len(offsets) - 1)
        self.own = [stating for stating in slices if len(stating)]

    def __len__(self) -> int:
        return int(self.report_of_unit.shape[0])

    def __getitem__(self, rows) -> np.ndarray:
        reports = self.report_of_unit[rows]
        counts = self.totals[reports].astype(np.int64)
        for stating in self.own:  # the reports stating one own finding, sorted: take it off theirs
            at = np.minimum(np.searchsorted(stating, reports), len(stating) - 1)
            counts -= stating[at] == reports
        return np.minimum(counts, CAP)

    def all(self) -> np.ndarray:
        """The key of every unit."""
        return self[np.arange(len(self))]


def report_totals(pair_reports: np.ndarray, n_reports: int) -> np.ndarray:
    """How many findings each report states present (its present pairs)."""
    return np.bincount(np.asarray(pair_reports, dtype=np.int64), minlength=n_reports)[:n_reports]


def alone_keys(pair_reports: np.ndarray, offsets: np.ndarray, own: Iterable[int], n_reports: int,
               report_of_unit: np.ndarray) -> np.ndarray:
    """The alone key of every unit (:class:`AloneKeys`), as one array.

    Args:
        pair_reports: The reports of the present pairs, sorted by finding (:func:`present_pairs`).
        offsets: Each finding's first pair (:func:`present_pairs`).
        own: The codes of the query's findings and those related to them (:func:`related`).
        n_reports: Number of reports.
        report_of_unit: The report of every unit.
    """
    return AloneKeys(pair_reports, offsets, report_totals(pair_reports, n_reports), own, report_of_unit).all()


def with_alone(tiers: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Tiers with the alone key below every other key (:func:`alone_keys`)."""
    return np.asarray(tiers, dtype=np.int64) * ALONE_SCALE + np.asarray(keys, dtype=np.int64)


__all__ = ["ALONE_SCALE", "AloneKeys", "CAP", "alone_keys", "own_codes", "present_pairs", "related", "report_totals",
           "with_alone"]
