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

from collections.abc import Iterable

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


def present_pairs(report_of_label: np.ndarray, finding: np.ndarray, status: np.ndarray,
                  n_findings: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``(report, finding)`` pairs stated present, sorted by finding, and each finding's first pair
    (``offsets``, length ``n_findings + 1``): the reports of one finding are a slice."""
    keep = np.asarray(status) > 0
    codes = np.asarray(finding, dtype=np.int64)[keep]
    reports = np.asarray(report_of_label, dtype=np.int64)[keep]
    base = max(int(reports.max(initial=-1)) + 1, 1)  # one int per pair: finding first, so a sort groups findings
    pairs = np.unique(codes * base + reports)
    offsets = np.searchsorted(pairs // base, np.arange(n_findings + 1), side="left")
    return pairs % base, offsets


def alone_keys(pair_reports: np.ndarray, offsets: np.ndarray, own: Iterable[int], n_reports: int,
               report_of_unit: np.ndarray) -> np.ndarray:
    """The alone key of every unit: how many findings its report states present besides ``own`` (finding codes),
    at most :data:`CAP`.

    Args:
        pair_reports: The reports of the present pairs, sorted by finding (:func:`present_pairs`).
        offsets: Each finding's first pair (:func:`present_pairs`).
        own: The codes of the query's findings and those related to them (:func:`related`).
        n_reports: Number of reports.
        report_of_unit: The report of every unit.
    """
    counts = np.bincount(np.asarray(pair_reports, dtype=np.int64), minlength=n_reports)[:n_reports]
    for code in set(own):
        if 0 <= code < len(offsets) - 1:
            counts = counts - np.bincount(pair_reports[offsets[code]:offsets[code + 1]], minlength=n_reports)[:n_reports]
    return np.minimum(counts, CAP)[np.asarray(report_of_unit, dtype=np.int64)]


def with_alone(tiers: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Tiers with the alone key below every other key (:func:`alone_keys`)."""
    return np.asarray(tiers, dtype=np.int64) * ALONE_SCALE + np.asarray(keys, dtype=np.int64)


__all__ = ["ALONE_SCALE", "CAP", "alone_keys", "present_pairs", "related", "with_alone"]
