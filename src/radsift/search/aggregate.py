"""Aggregate unit (sentence or section) rankings to reports: the best unit stands for its report."""

from __future__ import annotations

import numpy as np


def best_unit_per_report(rows: np.ndarray, scores: np.ndarray, report_of_row: np.ndarray, k: int
                         ) -> list[tuple[int, int, float]]:
    """Walk a best-first unit ranking and keep each report's first (best) unit.

    Returns:
        Up to ``k`` ``(report_row, unit_row, score)`` tuples, best first. With max aggregation a
        report's score is its best unit's score, so the first unit seen per report is exact.
    """
    out: list[tuple[int, int, float]] = []
    seen: set[int] = set()
    for row, score in zip(rows.tolist(), scores.tolist()):
        rep = int(report_of_row[row])
        if rep in seen:
            continue
        seen.add(rep)
        out.append((rep, row, float(score)))
        if len(out) == k:
            break
    return out
