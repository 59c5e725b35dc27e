"""From unit scores (sentences, sections, windows, phrases) to their owners' (reports, passages,
concepts): the best unit stands for its owner."""

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


def best_per_owner(scores: np.ndarray, owner: np.ndarray, n: int, *, fill: float = -np.inf,
                   out: np.ndarray | None = None) -> np.ndarray:
    """The best score of each owner's units (a scatter-max, float32).

    Args:
        scores: One score per unit.
        owner: The owner (0 to ``n - 1``) of each unit.
        n: Number of owners.
        fill: The score of an owner without units.
        out: Accumulate into this array instead (its values count as scores already seen;
            ``n`` and ``fill`` are then unused): for units scored in chunks.

    Returns:
        ``(n,)`` float32 (``out`` when given).
    """
    if out is None:
        out = np.full(n, fill, dtype=np.float32)
    np.maximum.at(out, np.asarray(owner), np.asarray(scores, dtype=out.dtype))
    return out


def mean_per_owner(vectors: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    """Each owner's vector from its units' vectors: the unit-length mean (float32).

    How a passage longer than one window is read by a bi-encoder, in the index and in the passage
    benchmark alike: the normalised mean of its windows' vectors, so the end of a long section still
    counts. An owner with one unit keeps that unit's vector as it is.

    Args:
        vectors: ``(n_units, dim)``, one vector per unit (window).
        owner: The owner (0 to ``n - 1``) of each unit; every owner has at least one unit.
        n: Number of owners.

    Returns:
        ``(n, dim)`` float32.
    """
    vectors = np.asarray(vectors, dtype=np.float32)
    owner = np.asarray(owner, dtype=np.int64)
    out = np.zeros((n, vectors.shape[-1]), dtype=np.float32)
    np.add.at(out, owner, vectors)
    counts = np.bincount(owner, minlength=n)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    pooled = out / np.where(norms > 0, norms, 1.0)
    single = counts == 1
    pooled[single] = out[single]  # a sum of one: the window's own vector, not renormalised
    return pooled


def best_unit_per_report(rows: np.ndarray, scores: np.ndarray, report_of_row: np.ndarray, k: int | None
                         ) -> list[tuple[int, int, float]]:
    """:func:`best_per_group` as ``(report_row, unit_row, score)`` tuples, best first."""
    groups, units, vals = best_per_group(rows, scores, report_of_row, k)
    return list(zip(groups.tolist(), units.tolist(), np.asarray(vals, dtype=np.float64).tolist()))
