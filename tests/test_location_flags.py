"""Location flags (radsift.index.places): written with each segment, the same as read from the texts, kept
through adds, deletes and merges, checked by verify; an index written before them (or under other location
rules) still reads them from its texts, and a search gives the same pages either way."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from radsift.cli import app
from radsift.demo import generate_reports
from radsift.errors import IndexDamagedError
from radsift.index import IndexStore, add_to_index, build_index, delete_from_index, optimize_index, places, writer
from radsift.index.generations import read_current
from radsift.index.verify import verify_index
from radsift.models.hashing import HashingEncoder
from radsift.ranking import units_with_terms
from radsift.ranking.places import location_flags
from radsift.search import Index, plan
from radsift.search.units import unit_texts
from radsift.text.locations import text_regions

QUERIES = ["left lower lobe opacity", "right middle lobe pneumonia", "no RLL consolidation", "bibasilar atelectasis",
           "lingular opacity", "apical pneumothorax"]


def _reports(n, seed, tag):
    return [r.__class__(f"{r.id}-{tag}", r.sections, r.metadata) for r in
            (d.report for d in generate_reports(n=n, seed=seed))]


def _segments(path):
    return json.loads((read_current(path) / "manifest.json").read_text())["segments"]


def _from_texts(store: IndexStore, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """What the store's search read before the flags were written: the texts of the units holding a location word."""
    retriever, n = store.bm25(kind), store.units(kind).report_row.shape[0]
    return location_flags(n, lambda terms: units_with_terms(retriever, terms, n),
                          lambda rows: {r: u.text for r, u in unit_texts(store, kind, list(rows)).items()})


def _same_as_texts(path) -> int:
    store = IndexStore.open(path)
    try:
        named = 0
        for kind in ("sentence", "section"):
            stored = places.store_locations(store, kind)
            assert stored is not None, kind
            want = _from_texts(store, kind)
            assert np.array_equal(stored[0], want[0]) and np.array_equal(stored[1], want[1]), kind
            named += int(np.count_nonzero(stored[0]))
        return named
    finally:
        store.close()


def _pages(path, enc):
    index = Index.open(path, encoder=enc)
    return [[(h.report_id, h.sentence.text, h.band, round(h.score, 5)) for h in index.search(q, k=10, **kw)]
            for q in QUERIES for kw in ({"level": "report"}, {"level": "sentence"})]


@pytest.fixture()
def enc(tmp_path):
    return HashingEncoder(tmp_path / "model")


def test_text_regions_reads_nothing_without_a_location_word():
    assert text_regions("Left lower lobe opacity.")[0] != 0
    assert text_regions("RLL infiltrate")[1] == 2
    assert text_regions("The heart is normal in size. No effusion.") == (0, 0)


def test_a_segment_holds_its_location_flags_the_same_as_its_texts(tmp_path, enc, monkeypatch):
    path = tmp_path / "idx"
    build_index(path, _reports(150, 1, "a"), encoder=enc, progress=False)
    add_to_index(path, _reports(60, 2, "b"), encoder=enc, progress=False)
    delete_from_index(path, [r.id for r in _reports(150, 1, "a")[:20]])
    for seg in _segments(path):
        assert seg[places.KEY]
        assert {f"{n}.npy" for k in places.UNIT_KINDS for n in places.file_names(k)} <= set(seg["files"])
    assert verify_index(path) == []
    assert _same_as_texts(path) > 0  # deleted reports' units dropped when read
    stored = _pages(path, enc)
    # The same index read from its texts (as an index written before the flags): the same pages.
    monkeypatch.setattr(plan, "store_locations", lambda store, kind: None)
    assert _pages(path, enc) == stored
    monkeypatch.undo()
    optimize_index(path)
    (seg,) = _segments(path)
    assert seg[places.KEY] and verify_index(path) == []
    _same_as_texts(path)
    assert _pages(path, enc) == stored


def test_flags_read_under_other_rules_are_not_used(tmp_path, enc, monkeypatch):
    """A segment written before the flags, or under other location rules, reads them from its texts."""
    path = tmp_path / "old"
    build_index(path, _reports(100, 3, "a"), encoder=enc, progress=False)
    stored = _pages(path, enc)
    monkeypatch.setattr(places, "FINGERPRINT", "other-rules")
    store = IndexStore.open(path)
    try:
        assert places.store_locations(store, "sentence") is None
        assert plan.unit_locations(store, "sentence")[0].any()  # from the texts
    finally:
        store.close()
    assert _pages(path, enc) == stored
    with monkeypatch.context() as m:
        m.setattr(writer, "location_arrays", lambda kind, texts: {})
        add_to_index(path, _reports(40, 4, "b"), encoder=enc, progress=False)
    store = IndexStore.open(path)
    try:
        assert places.store_locations(store, "sentence") is None  # one segment without them: all from the texts
        assert verify_index(path) == []
    finally:
        store.close()
    monkeypatch.undo()
    summary = optimize_index(path)
    assert summary.stale == 1 and "location flags" in summary.describe()  # the added segment
    _same_as_texts(path)


def test_optimize_writes_a_lone_segment_again_for_its_flags(tmp_path, enc, monkeypatch):
    path = tmp_path / "lone"
    with monkeypatch.context() as m:
        m.setattr(writer, "location_arrays", lambda kind, texts: {})
        build_index(path, _reports(60, 7, "a"), encoder=enc, progress=False)
    assert not places.current(_segments(path)[0])
    assert _info_flags(path) == [False]
    before = _pages(path, enc)
    summary = optimize_index(path)
    assert summary.action == "optimize" and summary.stale == 1
    assert _same_as_texts(path) > 0 and _pages(path, enc) == before
    assert optimize_index(path).action == "optimize-nothing"
    assert _info_flags(path) == [True]


def _info_flags(path) -> list[bool]:
    """What `radsift index info` says of each segment's location flags."""
    res = CliRunner().invoke(app, ["index", "info", str(path)])
    assert res.exit_code == 0, res.output
    return [s["location_flags"] for s in json.loads(res.output)["segments"]]


def test_damaged_location_flags_are_named(tmp_path, enc):
    path = tmp_path / "idx"
    build_index(path, _reports(80, 5, "a"), encoder=enc, progress=False)
    seg = path / "segments" / _segments(path)[0]["name"]
    target = seg / "sentence_regions.npy"
    data = bytearray(target.read_bytes())
    data[-1] ^= 0x40
    target.write_bytes(bytes(data))
    problems = verify_index(path)
    assert problems and any("sentence_regions.npy" in str(p.path) for p in problems)
    with pytest.raises(IndexDamagedError, match="sentence_regions.npy"):
        IndexStore.open(path)


def test_flags_out_of_range_are_refused(tmp_path, enc, monkeypatch):
    """Flags whose checksums match but whose values name no region (a writer's bug) are refused, naming the file."""
    path = tmp_path / "idx"

    def bad(kind, texts):
        got = places.location_arrays(kind, texts)
        got[places.file_names(kind)[0]][0] = 200
        return got
    monkeypatch.setattr(writer, "location_arrays", bad)
    build_index(path, _reports(60, 6, "a"), encoder=enc, progress=False)
    problems = verify_index(path)
    assert any("sentence_regions.npy" in str(p.path) for p in problems)
    store = IndexStore.open(path)
    try:
        with pytest.raises(IndexDamagedError, match="sentence_regions.npy"):
            places.store_locations(store, "sentence")
    finally:
        store.close()


def test_warm_loads_what_a_first_search_reads(tmp_path, enc):
    """`Index.warm` (what `radsift serve` runs before it listens) leaves the backend, the readings and the
    location and side flags loaded, so a first query reads none of them."""
    path = tmp_path / "idx"
    build_index(path, _reports(50, 8, "a"), encoder=enc, progress=False)
    index = Index.open(path, encoder=enc)
    index.warm()
    keys = set(index.store._cache)
    assert {("locations", "sentence"), ("backend", "auto", "sentence")} <= keys
    assert any(k[0] == "readings" for k in keys) and any(k[0] == "sides" for k in keys)
