"""Groups of bit-identical vectors: a report corpus repeats its boilerplate sentences (Open-i holds 8.4k
distinct sentence vectors among 22k), and an HNSW graph holding many copies of one point breaks apart
(on Open-i, 90 of 500 queries found none of their exact top 10).

The graph backends (:mod:`radsift.index.backends.hnsw`, :mod:`radsift.index.backends.milvus`) index
one node per group; every row of a group found is a candidate. A group is ``(order, offsets)``: rows
sorted by group (ascending within one), group g being ``order[offsets[g]:offsets[g + 1]]``
(:func:`groups_of`), found by hashing the bits of each row (:func:`row_hashes`) and checking rows that
share a hash (:func:`duplicate_groups`).
"""

from __future__ import annotations

import numpy as np


def row_hashes(vectors: np.ndarray, rows: np.ndarray | None = None, batch: int = 16_384) -> np.ndarray:
    """A 64-bit hash of the bits of each of ``rows`` (default: all) of ``vectors``: equal rows, equal
    hashes. Rows are read ``batch`` at a time (a run of consecutive rows as one slice)."""
    rows = np.arange(vectors.shape[0], dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    mult = np.random.default_rng(20).integers(1, 2**62, size=vectors.shape[1], dtype=np.int64) | 1
    h = np.empty(rows.shape[0], dtype=np.int64)
    with np.errstate(over="ignore"):
        for s in range(0, rows.shape[0], batch):
            bits = rows_of(vectors, rows[s:s + batch]).view(np.int32).astype(np.int64)
            h[s:s + batch] = (bits * mult).sum(axis=1)
    return h


def duplicate_groups(vectors: np.ndarray, batch: int = 16_384, hashes: np.ndarray | None = None,
                     rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """Groups of bit-identical rows: ``(order, offsets)`` (see
    :attr:`~radsift.index.backends.hnsw.HnswBackend.groups`), numbered by their first row; None when every
    row is distinct. One pass over the vectors (:func:`row_hashes`, skipped when ``hashes`` are given), a
    second over the rows sharing a hash (checked equal to their group's first).

    Args:
        vectors: ``(n, dim)`` float32 vectors.
        batch: Rows read at a time.
        hashes: :func:`row_hashes` of the rows grouped, when already known.
        rows: Group only these rows of ``vectors``; the groups then hold positions in ``rows``.
    """
    rows = np.arange(vectors.shape[0], dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    n = rows.shape[0]
    h = row_hashes(vectors, rows, batch) if hashes is None else hashes
    _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    if len(first) == n:
        return None
    # A hash shared by different rows (not seen in practice): such a row gets its own group.
    first_row = first[inverse]
    shared = np.flatnonzero(first_row != np.arange(n))
    for s in range(0, shared.size, batch):
        at = shared[s:s + batch]
        same = (rows_of(vectors, rows[at]) == rows_of(vectors, rows[first_row[at]])).all(axis=1)
        first_row[at[~same]] = at[~same]
    _, group = np.unique(first_row, return_inverse=True)  # groups numbered in order of their first row
    return groups_of(group, int(group.max()) + 1)


def groups_of(node_of_row: np.ndarray, nodes: int) -> tuple[np.ndarray, np.ndarray] | None:
    """``(order, offsets)`` of rows whose node is ``node_of_row`` (nodes without a row are empty
    groups); None when node i is row i."""
    node_of_row = np.asarray(node_of_row, dtype=np.int64).reshape(-1)
    n = node_of_row.shape[0]
    if nodes == n and np.array_equal(node_of_row, np.arange(n)):
        return None
    order = np.argsort(node_of_row, kind="stable").astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(np.bincount(node_of_row, minlength=nodes))]).astype(np.int64)
    return order, offsets


def nodes_of(groups: tuple[np.ndarray, np.ndarray] | None, rows: int) -> np.ndarray:
    """The node of each of ``rows`` rows (the inverse of :func:`groups_of`)."""
    if groups is None:
        return np.arange(rows, dtype=np.int64)
    order, offsets = groups
    out = np.empty(rows, dtype=np.int64)
    out[order] = np.repeat(np.arange(len(offsets) - 1, dtype=np.int64), np.diff(offsets))
    return out


def expand_groups(groups: tuple[np.ndarray, np.ndarray], nodes: np.ndarray,
                  values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted rows, value of each) of every row of ``nodes``, each row carrying its node's value."""
    order, offsets = groups
    nodes = np.asarray(nodes, dtype=np.int64)
    starts, lens = offsets[nodes], offsets[nodes + 1] - offsets[nodes]
    within = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
    rows = np.asarray(order[np.repeat(starts, lens) + within], dtype=np.int64)
    by_row = np.argsort(rows, kind="stable")
    return rows[by_row], np.repeat(values, lens)[by_row]


def rows_of(vectors: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``vectors[rows]`` as a contiguous float32 array (rows read in ascending order from a memory map)."""
    rows = np.asarray(rows, dtype=np.int64)
    if rows.size and np.all(np.diff(rows) > 0) and rows[-1] - rows[0] + 1 == rows.size:
        return np.ascontiguousarray(vectors[rows[0]:rows[-1] + 1], dtype=np.float32)
    return np.ascontiguousarray(vectors[rows], dtype=np.float32)


def check_groups(groups: tuple[np.ndarray, np.ndarray], nodes: int) -> str | None:
    """Why ``(order, offsets)`` cannot be the groups of a graph of ``nodes`` nodes (None: they can): one offset
    per node plus one, from 0 to the number of rows and never decreasing; ``order`` a permutation of the rows."""
    order, offsets = groups
    if order.ndim != 1 or offsets.shape != (nodes + 1,) or order.dtype.kind not in "iu" \
            or offsets.dtype.kind not in "iu":
        return f"groups of shapes {order.shape} / {offsets.shape}, expected {nodes + 1} offsets for {nodes} nodes"
    if int(offsets[0]) != 0 or int(offsets[-1]) != order.shape[0] or np.any(np.diff(offsets) < 0):
        return "group offsets out of order"
    seen = np.zeros(order.shape[0], dtype=bool)
    if order.size and (int(order.min()) < 0 or int(order.max()) >= order.shape[0]):
        return "a group row out of range"
    seen[order] = True
    return None if seen.all() else "a row in two groups"
