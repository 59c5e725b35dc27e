"""What the engine tests share: a small index of hand-written reports, a page searched on one engine, and which
searches the candidate engine answered.

Imported by test files that compare engines or rank hand-written reports (the tests folder is on ``sys.path``
under pytest).
"""

from __future__ import annotations

from pathlib import Path

from radsift.index import build_index
from radsift.models.hashing import HashingEncoder
from radsift.search import Index, candidates, shortlist


def hashing_index(root: Path, reports) -> Index:
    """``reports`` indexed in ``root / "idx"`` with the hashing encoder (no model) and opened."""
    enc = HashingEncoder(root / "model")
    build_index(root / "idx", reports, encoder=enc, progress=False)
    return Index.open(root / "idx", encoder=enc)


def engine_page(index, monkeypatch, engine: str, query: str, **kw) -> tuple[list, tuple]:
    """The page of ``query`` on ``engine`` (``candidates`` or ``exact``): each hit's report, unit text, band,
    relevance and score (5 places), and the counts (``total``, ``matching``, ``lower_bound``, ``more``)."""
    monkeypatch.setenv(candidates.ENV, engine)
    res = index.search(query, **{"k": 10, **kw})
    return [(h.report_id, h.sentence.text, h.band, h.relevance, round(h.score, 5)) for h in res], \
        (res.total, res.matching, res.lower_bound, res.more)


def answered(monkeypatch) -> list:
    """A list that gains an item each time the candidate engine answers a search (from now on)."""
    calls: list = []
    real = shortlist.candidate_page
    monkeypatch.setattr("radsift.search.walk.candidate_page", lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


def locations_both_ways(index, monkeypatch) -> list:
    """Each unit kind's ``plan.unit_locations`` read with the stored flags, then with the flags read from the texts;
    asserts the two are equal and returns the stored ones."""
    import numpy as np

    from radsift.index import IndexStore
    from radsift.search import plan

    got = []
    for stored in (True, False):
        if not stored:
            monkeypatch.setattr(plan, "store_locations", lambda store, unit: None)
        store = IndexStore.open(index.path)
        try:
            got.append([plan.unit_locations(store, unit) for unit in ("sentence", "section")])
        finally:
            store.close()
    for (a_regions, a_sides), (b_regions, b_sides) in zip(*got):
        assert np.array_equal(a_regions, b_regions) and np.array_equal(a_sides, b_sides)
    return got[0]
