"""Reading postings (radsift.index.readings): written with each segment, checksummed, merged, verified; an index
written before them still reads (and the candidate engine still answers) from its label arrays."""

from __future__ import annotations

import json

import numpy as np
import pytest

from radsift.demo import generate_reports
from radsift.errors import IndexDamagedError
from radsift.index import (
    IndexStore,
    add_to_index,
    build_index,
    delete_from_index,
    optimize_index,
    readings,
    writer,
)
from radsift.index.generations import read_current
from radsift.index.verify import verify_index
from radsift.models.hashing import HashingEncoder
from radsift.search import Index, candidates

QUERIES = ["no pneumothorax", "pneumothorax", "small left pleural effusion", "cardiomegaly", "no cardiomegaly",
           "cardiomegaly with pulmonary edema and bilateral effusions", "rib fracture"]


def _reports(n, seed, tag):
    return [r.__class__(f"{r.id}-{tag}", r.sections, r.metadata) for r in
            (d.report for d in generate_reports(n=n, seed=seed))]


def _by_labels(store: IndexStore, code: int) -> tuple[np.ndarray, np.ndarray]:
    """A finding's mentions from the store's label arrays (what the postings must hold), by row."""
    labels = store.labels()
    keep = np.asarray(labels.finding) == code
    rows, status = np.asarray(labels.row, np.int64)[keep], np.asarray(labels.status, np.int64)[keep]
    order = np.argsort(rows, kind="stable")
    return rows[order], status[order]


def _same_mentions(path):
    store = IndexStore.open(path)
    try:
        for code in range(len(store.manifest.findings)):
            rows, status = readings.finding_mentions(store, code)
            want = _by_labels(store, code)
            assert np.array_equal(rows, want[0]) and np.array_equal(status, want[1]), store.manifest.findings[code]
    finally:
        store.close()


def _pages_equal(path, enc, monkeypatch):
    index = Index.open(path, encoder=enc)
    for q in QUERIES:
        for kw in ({"level": "report"}, {"level": "sentence"}, {"mode": "bm25"}):
            pages = []
            for engine in ("candidates", "exact"):
                monkeypatch.setenv(candidates.ENV, engine)
                res = index.search(q, k=10, **kw)
                pages.append(([(h.report_id, h.sentence.text, h.band, round(h.score, 5)) for h in res],
                              res.total, res.matching))
            assert pages[0] == pages[1], (q, kw)


def _segments(path):
    return json.loads((read_current(path) / "manifest.json").read_text())["segments"]


@pytest.fixture()
def enc(tmp_path):
    return HashingEncoder(tmp_path / "model")


def test_a_segment_holds_its_reading_postings_recorded_and_verified(tmp_path, enc, monkeypatch):
    path = tmp_path / "idx"
    build_index(path, _reports(120, 1, "a"), encoder=enc, progress=False)
    add_to_index(path, _reports(60, 2, "b"), encoder=enc, progress=False)
    delete_from_index(path, [f"{r.id}" for r in _reports(120, 1, "a")[:15]])
    for seg in _segments(path):
        assert {f"{n}.npy" for n in readings.NAMES} <= set(seg["files"])
    assert verify_index(path) == []
    _same_mentions(path)  # deleted reports' mentions dropped when read
    _pages_equal(path, enc, monkeypatch)
    optimize_index(path)
    (seg,) = _segments(path)
    assert {f"{n}.npy" for n in readings.NAMES} <= set(seg["files"])
    assert verify_index(path) == []
    _same_mentions(path)
    _pages_equal(path, enc, monkeypatch)


def test_an_index_written_before_them_reads_its_labels(tmp_path, enc, monkeypatch):
    """Segments without the files (as before): grouped from the labels; an add writes a new one with them."""
    path = tmp_path / "old"
    with monkeypatch.context() as m:
        m.setattr(writer, "reading_arrays", lambda *a, **k: {})
        build_index(path, _reports(100, 3, "a"), encoder=enc, progress=False)
    assert not any(f.startswith("reading_") for f in _segments(path)[0]["files"])
    assert verify_index(path) == []
    _same_mentions(path)
    _pages_equal(path, enc, monkeypatch)
    add_to_index(path, _reports(50, 4, "b"), encoder=enc, progress=False)
    delete_from_index(path, [r.id for r in _reports(100, 3, "a")[:10]])
    assert [any(f.startswith("reading_") for f in s["files"]) for s in _segments(path)] == [False, True]
    assert verify_index(path) == []
    _same_mentions(path)
    _pages_equal(path, enc, monkeypatch)


def test_damaged_reading_postings_are_named(tmp_path, enc):
    path = tmp_path / "idx"
    build_index(path, _reports(80, 5, "a"), encoder=enc, progress=False)
    seg = path / "segments" / _segments(path)[0]["name"]
    target = seg / "reading_row.npy"
    data = bytearray(target.read_bytes())
    data[-1] ^= 0x01
    target.write_bytes(bytes(data))
    problems = verify_index(path)
    assert problems and any("reading_row.npy" in str(p.path) for p in problems)
    with pytest.raises(IndexDamagedError, match="reading_row.npy"):
        IndexStore.open(path)


def test_reading_postings_that_differ_from_the_labels_are_a_problem(tmp_path, enc, monkeypatch):
    """Postings whose checksums match but whose content is not the labels' (a writer's bug) fail verify."""
    path = tmp_path / "idx"

    def shifted(row, finding, status, n):
        got = readings.reading_arrays(row, finding, status, n)
        got["reading_status"] = np.roll(got["reading_status"], 1)
        return got
    monkeypatch.setattr(writer, "reading_arrays", shifted)
    build_index(path, _reports(80, 6, "a"), encoder=enc, progress=False)
    problems = verify_index(path)
    assert any("reading_status.npy" in str(p.path) and "label arrays" in p.reason for p in problems)
