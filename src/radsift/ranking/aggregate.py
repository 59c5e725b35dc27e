"""From a unit ranking (sentences, sections) to a group ranking (reports): the best unit stands for its group."""

from __future__ import annotations

import numpy as np


def best_per_group(rows: np.ndarray, scores: np.ndarray, group_of: np.ndarray, k: int | None = None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keep each group's first (best) unit of a best-first unit ranking.

    With max aggregation a group's score is its best unit's score, so the first unit seen per
    group is exact and the groups come out best first.

    Args:
        rows: Unit rows, best first.
        scores: Their scores.
        group_of: Group (report row) of every unit row.
        k: At most this many groups (None = all).

    Returns:
        ``(groups, unit_rows, scores)``, best first.
    """
    rows = np.asarray(rows, dtype=np.int64)
    groups = np.asarray(group_of)[rows].astype(np.int64)
    _, first = np.unique(groups, return_index=True)
    first.sort()
    if k is not None:
        first = first[:k]
    return groups[first], rows[first], np.asarray(scores)[first]


def best_unit_per_report(rows: np.ndarray, scores: np.ndarray, report_of_row: np.ndarray, k: int | None
                         ) -> list[tuple[int, int, float]]:
    """:func:`best_per_group` as ``(report_row, unit_row, score)`` tuples, best first."""
    groups, units, vals = best_per_group(rows, scores, report_of_row, k)
    return list(zip(groups.tolist(), units.tolist(), np.asarray(vals, dtype=np.float64).tolist()))
