"""Relevance bands: where the relevant reports of a ranked list end.

Scores are comparable within one query only (a cosine of 0.977 says nothing on its own), so each
hit also gets a **relevance estimate**, the probability that its report states what the query asks
for, and a **band** read from it:

``states``    the report states the query's reading (every finding with the wanted status), by the
              stored labels or the open-vocabulary reader: the natural cohort criterion;
``related``   it does not (it says nothing of the finding, says it uncertainly, or states only part
              of a multi-finding query), but hits like it were relevant at least
              :data:`RELATED_MIN` of the time;
``unlikely``  the rest, and every report that states the opposite of the query.

The estimate is read from a calibration table (``ranking/data/bands.json``) by three things of the
hit: its *class* (what the report states about the query's findings:
:func:`~radsift.ranking.tiers.reading_classes`, or ``none`` when the query names no finding or
negation is ignored), the *score kind* of its mode (cosine, BM25 or the hybrid's convex combination,
:func:`~radsift.ranking.core.base_scores`) and its *relative score*, its score over the query's best
(so a page deep in the list reads the same scale as the first). Each cell holds how many hits of the
development queries fell into it and how many of them a regex judge that imports nothing from
radsift found relevant; the estimate is that share, shrunk towards its class's share
(:data:`SHRINK` pseudo-hits) so that thin cells do not swing. ``benchmarks/bench_bands.py
--calibrate`` writes the table from the development findings; without ``--calibrate`` it measures
each band's precision on the test findings (``docs/measurements.md``, "Relevance bands").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from typing import Iterable, Mapping

import numpy as np

from radsift.ranking.tiers import CLASS_NAMES

#: Bands, best first.
BANDS = ("states", "related", "unlikely")
#: A hit that does not state the reading is ``related`` when its estimate is at least this.
RELATED_MIN = 0.2
#: Relative-score bin edges (a hit's score over the query's best).
BIN_EDGES = (0.5, 0.6, 0.7, 0.8, 0.9)
#: Pseudo-hits that pull a cell's share towards its class's share.
SHRINK = 5.0
SCORE_KINDS = ("dense", "bm25", "hybrid")
#: The estimate of a class no calibration hit fell into.
EMPTY_CLASS = {"opposite": 0.0}


def score_kind(mode: str) -> str:
    """The score scale a mode's bands read: ``dense``, ``bm25`` or ``hybrid`` (both hybrids)."""
    return mode if mode in ("dense", "bm25") else "hybrid"


def relative_scores(base: np.ndarray, rows: Iterable[int], eligible: np.ndarray | None = None) -> np.ndarray:
    """The scores of ``rows`` over the best score of the eligible units, clipped to [0, 1]."""
    base = np.asarray(base, dtype=np.float64)
    rows = np.asarray(list(rows), dtype=np.int64)
    pool = base if eligible is None else base[np.asarray(eligible, dtype=bool)]
    top = float(pool.max()) if pool.size else 0.0
    if top <= 0 or not rows.size:
        return np.zeros(rows.size, dtype=np.float64)
    return np.clip(base[rows] / top, 0.0, 1.0)


def score_bin(relative: float) -> int:
    """The bin of a relative score (0 below the first edge ... len(BIN_EDGES) at or above the last)."""
    return int(np.searchsorted(BIN_EDGES, relative, side="right"))


@dataclass(frozen=True)
class BandTable:
    """Calibration counts: ``cells[kind][class][bin] = (hits, relevant)``."""

    cells: Mapping[str, Mapping[str, tuple[tuple[int, int], ...]]]
    source: str = ""

    @classmethod
    def packaged(cls) -> "BandTable":
        """The table shipped in ``radsift/ranking/data/bands.json``."""
        return _packaged()

    @classmethod
    def from_dict(cls, data: Mapping, source: str = "") -> "BandTable":
        """Strict loader: every kind, class and bin present, counts whole and consistent.

        Raises:
            ValueError: Naming the cell that is missing or wrong.
        """
        if tuple(data.get("bin_edges", ())) != BIN_EDGES:
            raise ValueError(f"{source}: bin_edges must be {list(BIN_EDGES)}, not {data.get('bin_edges')!r}")
        cells: dict = {}
        for kind in SCORE_KINDS:
            by_class = data.get("cells", {}).get(kind)
            if not isinstance(by_class, Mapping):
                raise ValueError(f"{source}: cells.{kind} is missing")
            cells[kind] = {}
            for name in CLASS_NAMES:
                row = by_class.get(name)
                if not isinstance(row, list) or len(row) != len(BIN_EDGES) + 1:
                    raise ValueError(f"{source}: cells.{kind}.{name} must list {len(BIN_EDGES) + 1} [hits, relevant] pairs")
                pairs = []
                for i, pair in enumerate(row):
                    if (not isinstance(pair, list) or len(pair) != 2 or not all(isinstance(v, int) for v in pair)
                            or not 0 <= pair[1] <= pair[0]):
                        raise ValueError(f"{source}: cells.{kind}.{name}[{i}] must be [hits, relevant] with "
                                         f"0 <= relevant <= hits, not {pair!r}")
                    pairs.append((pair[0], pair[1]))
                cells[kind][name] = tuple(pairs)
        return cls(cells, source)

    def estimate(self, kind: str, cls_name: str, relative: float) -> float:
        """P(relevant) of a hit: its cell's share of relevant hits, shrunk towards its class's share.

        A class no development hit of this score kind fell into takes its share over every score
        kind (negation-aware dense rankings put no report stating the opposite in a top 50, BM25's
        do); a class with no hit at all takes :data:`EMPTY_CLASS` (0 for ``opposite``, which no
        calibration can make relevant, 0.5 for the others: nothing is known).
        """
        row = self.cells[kind][cls_name]
        hits = sum(n for n, _ in row)
        relevant = sum(r for _, r in row)
        if hits == 0:
            hits = sum(n for k in self.cells for n, _ in self.cells[k][cls_name])
            relevant = sum(r for k in self.cells for _, r in self.cells[k][cls_name])
        if hits == 0:
            return EMPTY_CLASS.get(cls_name, 0.5)
        prior = (relevant + 1.0) / (hits + 2.0)
        n, r = row[score_bin(relative)]
        return float((r + SHRINK * prior) / (n + SHRINK))


@lru_cache(maxsize=1)
def _packaged() -> BandTable:
    path = files("radsift.ranking") / "data" / "bands.json"
    return BandTable.from_dict(json.loads(path.read_text(encoding="utf-8")), source=str(path))


def band_of(cls_name: str, estimate: float, related_min: float = RELATED_MIN) -> str:
    """The band of a hit from its class and estimate (see the module docstring)."""
    if cls_name == "states":
        return "states"
    if cls_name == "opposite":
        return "unlikely"
    return "related" if estimate >= related_min else "unlikely"


def fit_table(observations: Iterable[tuple[str, str, float, bool]]) -> dict:
    """The calibration table (as written to ``bands.json``) from ``(kind, class, relative score,
    relevant)`` observations."""
    counts = {k: {c: [[0, 0] for _ in range(len(BIN_EDGES) + 1)] for c in CLASS_NAMES} for k in SCORE_KINDS}
    for kind, cls_name, relative, relevant in observations:
        cell = counts[kind][cls_name][score_bin(relative)]
        cell[0] += 1
        cell[1] += int(bool(relevant))
    return {"bin_edges": list(BIN_EDGES), "cells": counts}
