"""A build that spreads, each worker writing its own segment (issue 33, item 4): ``--workers N`` cuts the
reports into N contiguous shares, each worker encodes, labels and writes its share as a segment, and the
parent commits them as one generation; the index searches as a one-process build of the same reports. A
worker that dies (before or after writing its segment), raises, or writes a segment that does not verify
fails the build in one line, with CURRENT unchanged, no segment of it left on disk, and the prior index
opening and searching as before."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import numpy as np
import pytest

from radsift.demo import generate_reports
from radsift.errors import IndexDamagedError
from radsift.index import IndexStore, add_to_index, build_index
from radsift.index.format import SEGMENTS
from radsift.index.generations import read_current
from radsift.index.spread import cut_shares
from radsift.index.verify import verify_index
from radsift.models.hashing import HashingEncoder
from radsift.models.parallel import EncodeWorkerError
from radsift.records import Report
from radsift.search import Index

QUERIES = ["no pneumothorax", "pneumothorax", "small left pleural effusion", "cardiomegaly", "clear lungs",
           "right lower lobe consolidation", "no acute cardiopulmonary process"]


@pytest.fixture(scope="module")
def demo() -> list[Report]:
    reports = [d.report for d in generate_reports(n=120, seed=11)]
    return [Report(r.id, r.sections, {**r.metadata, "site": "north" if i % 3 else "south"})
            for i, r in enumerate(reports)]


@pytest.fixture()
def enc(tmp_path):
    return HashingEncoder(tmp_path / "model")


#: A report whose text makes the failing encoders fail: put last, only the last worker's share holds it.
POISON = Report("poison", {"findings": "Poison pill sentence."}, {"site": "north"})


class RaisingEncoder(HashingEncoder):
    """Raises a plain (not radsift) error in the worker whose share holds the poison report, as a bug or a
    broken library would; the other workers write their segments."""

    def __init__(self, folder, dim: int = 256) -> None:
        super().__init__(folder, dim)
        self.parent = os.getpid()

    def encode(self, texts, **kw):
        if os.getpid() != self.parent and any("Poison" in t for t in texts):
            raise ValueError("tokenizer exploded\nsecond line of a long message")
        return super().encode(texts, **kw)


class DyingEncoder(RaisingEncoder):
    """Kills the worker process whose share holds the poison report (SIGKILL: no goodbye)."""

    def encode(self, texts, **kw):
        if os.getpid() != self.parent and any("Poison" in t for t in texts):
            os.kill(os.getpid(), signal.SIGKILL)
        return super().encode(texts, **kw)


class LongVectorEncoder(RaisingEncoder):
    """Vectors of length 2 in a worker: a segment that the parent's checks refuse."""

    def encode(self, texts, **kw):
        vecs = HashingEncoder.encode(self, texts, **kw)
        return vecs * 2 if os.getpid() != self.parent else vecs


def _hits(path: Path, enc) -> dict:
    index = Index.open(path, encoder=enc)
    out = {}
    for q in QUERIES:
        for mode in ("bm25", "dense", "hybrid"):
            for level in ("report", "sentence"):
                res = index.search(q, k=15, mode=mode, level=level)
                out[q, mode, level] = ([(h.report_id, round(h.score, 5)) for h in res], res.total, res.matching)
        res = index.search(q, k=15, where=["site=north"])
        out[q, "filtered"] = ([(h.report_id, round(h.score, 5)) for h in res], res.total, res.matching)
    index.live_store().close()  # its reader lease: the failed writes below must not wait on it
    return out


def _manifest(path: Path) -> dict:
    return json.loads((read_current(path) / "manifest.json").read_text())


def _on_disk(path: Path) -> set[str]:
    return {p.name for p in (path / SEGMENTS).iterdir()}


def _listed(path: Path) -> set[str]:
    return {s["name"] for s in _manifest(path)["segments"]}


def test_shares_are_contiguous_non_empty_and_of_about_equal_text(demo):
    shares = cut_shares(demo, 3)
    assert [r.id for s in shares for r in s] == [r.id for r in demo] and all(shares)
    sizes = [sum(len(t) for r in s for t in r.sections.values()) for s in shares]
    assert max(sizes) < 1.2 * min(sizes)
    assert [len(s) for s in cut_shares(demo[:2], 5)] == [1, 1]  # never an empty share
    assert cut_shares(demo[:7], 1) == [demo[:7]]


def test_a_build_by_two_workers_searches_as_one_process_and_lists_both_segments(tmp_path, enc, demo):
    one, two = tmp_path / "one", tmp_path / "two"
    build_index(one, demo, encoder=enc, progress=False)
    summary = build_index(two, demo, encoder=enc, progress=False, workers=2)
    assert summary.reports == len(demo) and summary.segments == 2
    segments = _manifest(two)["segments"]
    assert len(segments) == 2 and _on_disk(two) == _listed(two)
    assert sum(s["counts"]["reports"] for s in segments) == len(demo)
    assert all(s["files"] and s["findings"] for s in segments)  # checksums recorded, labels written by workers
    m1, m2 = _manifest(one), _manifest(two)
    for key in ("counts", "findings", "sections", "metadata_keys", "empty_ids", "lexicon", "dim"):
        if key == "counts":
            assert {k: v for k, v in m1[key].items() if k != "segments"} == \
                {k: v for k, v in m2[key].items() if k != "segments"}
        else:
            assert m1[key] == m2[key], key
    assert _hits(one, enc) == _hits(two, enc)
    a, b = IndexStore.open(one), IndexStore.open(two)
    try:
        assert a.report_ids == b.report_ids  # contiguous shares: the one-process rows
        np.testing.assert_allclose(np.asarray(a.units("sentence").vectors[:]),
                                   np.asarray(b.units("sentence").vectors[:]), atol=1e-6)
        la, lb = a.labels(), b.labels()
        assert np.array_equal(la.row, lb.row) and np.array_equal(la.status, lb.status)
    finally:
        a.close()
        b.close()
    assert verify_index(two, deep=True) == []


def test_an_add_by_two_workers_commits_both_segments_in_one_generation(tmp_path, enc, demo):
    one, two = tmp_path / "one", tmp_path / "two"
    for path in (one, two):
        build_index(path, demo[:60], encoder=enc, progress=False)
    before = read_current(two)
    add_to_index(one, demo[60:], encoder=enc, progress=False)
    add_to_index(two, demo[60:], encoder=enc, progress=False, workers=2)
    gen = read_current(two)
    assert int(gen.name.split("-")[1]) == int(before.name.split("-")[1]) + 1  # one generation, not one a worker
    assert len(_manifest(two)["segments"]) == 3 and _on_disk(two) == _listed(two)
    replaced = [Report(r.id, {"findings": "Large right pneumothorax."}, r.metadata) for r in demo[50:70]]
    add_to_index(one, replaced, encoder=enc, progress=False, replace=True)
    add_to_index(two, replaced, encoder=enc, progress=False, replace=True, workers=2)
    assert _hits(one, enc) == _hits(two, enc)


def _assert_unchanged(path: Path, gen: Path, hits: dict, enc) -> None:
    assert read_current(path) == gen
    assert _on_disk(path) == _listed(path)  # no segment of the failed build left behind
    assert not any(p.name.startswith(".tmp-") for p in (path / SEGMENTS).iterdir())
    assert verify_index(path, deep=True) == []
    assert _hits(path, enc) == hits


@pytest.mark.parametrize("kind", ["dies", "raises", "dies-after-writing"])
def test_a_failed_worker_fails_the_add_in_one_line_and_leaves_the_index_as_it_was(tmp_path, demo, monkeypatch,
                                                                                 kind):
    enc = {"dies": DyingEncoder, "raises": RaisingEncoder}.get(kind, HashingEncoder)(tmp_path / "model")
    path = tmp_path / "idx"
    build_index(path, demo[:40], encoder=enc, progress=False)
    gen, hits = read_current(path), _hits(path, enc)
    if kind == "dies-after-writing":  # each worker renames its segment into place, then is killed
        monkeypatch.setenv("RADSIFT_FAULT", "segment-written")
    with pytest.raises(EncodeWorkerError) as err:
        add_to_index(path, demo[40:] + [POISON], encoder=enc, progress=False, workers=2)
    monkeypatch.delenv("RADSIFT_FAULT", raising=False)
    message = str(err.value)
    assert "\n" not in message and "committed nothing" in message
    assert ("killed by signal 9" if kind != "raises" else "ValueError: tokenizer exploded") in message
    _assert_unchanged(path, gen, hits, enc)
    add_to_index(path, demo[40:], encoder=HashingEncoder(tmp_path / "model"), progress=False, workers=2)
    store = IndexStore.open(path)
    assert len(store.report_ids) == len(demo)  # the next add goes through
    store.close()


def test_a_first_build_whose_worker_dies_commits_nothing_and_can_be_run_again(tmp_path, demo):
    path = tmp_path / "fresh"
    with pytest.raises(EncodeWorkerError, match="killed by signal 9"):
        build_index(path, demo + [POISON], encoder=DyingEncoder(tmp_path / "model"), progress=False, workers=2)
    assert not (path / "CURRENT").exists() and not list(path.glob(f"{SEGMENTS}/*"))
    build_index(path, demo, encoder=HashingEncoder(tmp_path / "model"), progress=False, workers=2)
    assert len(_listed(path)) == 2


def test_a_worker_segment_that_does_not_verify_is_not_committed(tmp_path, demo):
    enc = LongVectorEncoder(tmp_path / "model")
    path = tmp_path / "idx"
    build_index(path, demo[:40], encoder=enc, progress=False)
    gen, hits = read_current(path), _hits(path, enc)
    with pytest.raises(IndexDamagedError, match="a worker's segment does not verify: .*has length 2") as err:
        add_to_index(path, demo[40:], encoder=enc, progress=False, workers=2)
    assert "\n" not in str(err.value) and "committed nothing" in str(err.value)
    _assert_unchanged(path, gen, hits, enc)
