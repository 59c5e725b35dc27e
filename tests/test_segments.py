"""Segments (issue 20, item 2): adds write one new segment, delete/replace tombstone, optimize merges;
BM25 over several segments equals one index of the same live reports; a crash anywhere leaves the
previous commit live and whole."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from radsift.cli import app
from radsift.errors import IndexStoreError
from radsift.index import IndexStore, add_to_index, build_index, delete_from_index, optimize_index
from radsift.index.generations import read_current
from radsift.index.verify import verify_index
from radsift.models.hashing import HashingEncoder
from radsift.ranking.bm25 import bm25_scores, build_bm25
from radsift.records import Report
from radsift.search import Index
from radsift.text.tokens import tokenize

FINDINGS = ["small right pneumothorax", "left pleural effusion", "no pleural effusion", "mild cardiomegaly",
            "clear lungs", "right lower lobe consolidation", "healed left rib fracture", "no pneumothorax"]


def _report(i: int, version: int = 0) -> Report:
    a, b = FINDINGS[i % len(FINDINGS)], FINDINGS[(3 * i + version) % len(FINDINGS)]
    text = f"There is {a}. Also {b}." + (" Pneumothorax again noted." * (i % 3)) + (" Changed." * version)
    return Report(f"r{i}", {"findings": text, "impression": f"{b.capitalize()}."},
                  {"site": "north" if i % 2 else "south"})


QUERIES = ["pneumothorax", "pleural effusion", "no pneumothorax", "right rib fracture", "cardiomegaly lungs",
           "changed consolidation", "again noted"]


@pytest.fixture()
def enc(tmp_path):
    return HashingEncoder(tmp_path / "model")


def _segments(index_dir: Path) -> list[dict]:
    return json.loads((read_current(index_dir) / "manifest.json").read_text())["segments"]


@pytest.fixture()
def segmented(tmp_path, enc):
    """Three segments, one report deleted and one replaced; and the live reports in store order."""
    path = tmp_path / "seg"
    build_index(path, [_report(i) for i in range(0, 6)], encoder=enc, progress=False)
    add_to_index(path, [_report(i) for i in range(6, 10)], encoder=enc, progress=False)
    add_to_index(path, [_report(i) for i in range(10, 13)], encoder=enc, progress=False)
    delete_from_index(path, ["r2", "r11"])
    add_to_index(path, [_report(5, version=1)], encoder=enc, progress=False, replace=True)
    live = [_report(i) for i in range(13) if i not in (2, 5, 11)] + [_report(5, version=1)]
    return path, live


def _single(tmp_path, enc, reports) -> Path:
    path = tmp_path / "single"
    build_index(path, reports, encoder=enc, progress=False)
    return path


def _all_scores(store: IndexStore, kind: str) -> list[np.ndarray]:
    n = store.units(kind).report_row.shape[0]
    return [bm25_scores(store.bm25(kind), q, n) for q in QUERIES]


# -- BM25 ------------------------------------------------------------------------------------------
def test_bm25_equals_bm25s_lucene():
    import bm25s

    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(40)]
    docs = [list(rng.choice(words, size=int(rng.integers(0, 12)))) for _ in range(300)]
    ref = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    ref.index(docs, show_progress=False)
    ours = build_bm25(docs)
    for q in (["w1"], ["w1", "w2", "w1"], ["w3", "w39", "w7"]):
        assert np.allclose(ref.get_scores(q), ours.get_scores(q), atol=1e-5)


def test_bm25_across_segments_equals_one_segment_after_delete_and_replace(tmp_path, enc, segmented):
    path, live = segmented
    assert len(_segments(path)) == 4 and sum(len(s["deleted"]) for s in _segments(path)) == 3
    a, b = IndexStore.open(path), IndexStore.open(_single(tmp_path, enc, live))
    assert a.report_ids == [r.id for r in live] == b.report_ids
    for kind in ("sentence", "section"):
        for x, y in zip(_all_scores(a, kind), _all_scores(b, kind)):
            assert x.shape == y.shape and np.allclose(x, y, atol=1e-6)
    # The test can fail: one segment's own statistics score differently from the global ones.
    seg0 = [tokenize(s.text) for s in a.all_sentences() if a.report_ids[s.report_row] in {"r0", "r1", "r3", "r4"}]
    local = bm25_scores(build_bm25(seg0), "pneumothorax", len(seg0))
    assert not np.allclose(local, _all_scores(a, "sentence")[0][:len(seg0)])


def test_search_results_equal_one_segment_in_every_mode(tmp_path, enc, segmented):
    path, live = segmented
    one = Index.open(_single(tmp_path, enc, live), encoder=enc)
    many = Index.open(path, encoder=enc)
    for mode in ("bm25", "dense", "hybrid"):
        for level in ("report", "sentence"):
            x = many.search("pleural effusion", k=20, mode=mode, level=level, where=["site=north"])
            y = one.search("pleural effusion", k=20, mode=mode, level=level, where=["site=north"])
            assert [(h.report_id, round(h.score, 5)) for h in x] == [(h.report_id, round(h.score, 5)) for h in y]
    labels_a, labels_b = many.store.labels(), one.store.labels()
    assert np.array_equal(labels_a.row, labels_b.row) and np.array_equal(labels_a.status, labels_b.status)
    assert [many.store.manifest.findings[f] for f in labels_a.finding] == \
        [one.store.manifest.findings[f] for f in labels_b.finding]


def test_segmented_vectors_read_like_the_concatenated_live_rows():
    from radsift.index.segment import SegmentedVectors

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((10, 4)).astype(np.float32), rng.standard_normal((7, 4)).astype(np.float32)
    live_a = np.array([0, 2, 3, 5, 9])
    x, full = SegmentedVectors([(a, live_a), (b, None)], 4), np.concatenate([a[live_a], b])
    q = rng.standard_normal(4).astype(np.float32)
    assert x.shape == full.shape and len(x) == 12 and x.ndim == 2
    assert np.allclose(x @ q, full @ q) and np.array_equal(np.asarray(x), full)
    for key in (3, -1, slice(2, 9), [7, 1, 4], np.array([True] * 6 + [False] * 6), (3, 1), (slice(2, 5), slice(0, 2))):
        assert np.array_equal(x[key], full[key])
    with pytest.raises(IndexError):
        x[12]


# -- add, delete, replace, optimize ------------------------------------------------------------------
def test_an_add_writes_one_segment_of_the_new_reports_and_leaves_the_old_files_alone(tmp_path, enc, monkeypatch):
    path = tmp_path / "idx"
    build_index(path, [_report(i) for i in range(5)], encoder=enc, progress=False)
    (first,) = _segments(path)
    files = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in (path / "segments" / first["name"]).rglob("*")}
    from radsift.text import report_sentences

    new = _report(7)
    summary = add_to_index(path, [new], encoder=enc, progress=False)
    # the new report's sentences and sections only: nothing old is re-encoded
    assert summary.encoded == len({s.text for s in report_sentences(new)}) + len(new.sections)
    segs = _segments(path)
    assert [s["name"] for s in segs][:1] == [first["name"]] and len(segs) == 2
    assert segs[1]["counts"]["reports"] == 1
    assert {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in files} == files  # untouched, not copied
    assert IndexStore.open(path).manifest.counts["reports"] == 6
    assert "optimize" not in summary.describe()
    monkeypatch.setattr("radsift.index.builder.OPTIMIZE_HINT", 3)
    summary = add_to_index(path, [_report(8)], encoder=enc, progress=False)
    assert f"3 segments: `radsift index optimize {path}` merges them" in summary.describe()


def test_deleted_reports_are_never_returned(segmented, enc):
    path, _ = segmented
    index = Index.open(path, encoder=enc)
    assert index.get_report("r2") is None and index.get_report("r11") is None
    assert index.get_report("r5").sections["findings"].endswith("Changed.")  # the replacement, not the old one
    for mode in ("bm25", "dense", "hybrid"):
        for level in ("report", "sentence"):
            ids = [h.report_id for h in index.search("pneumothorax effusion", k=50, mode=mode, level=level)]
            assert ids and not {"r2", "r11"} & set(ids)
            assert ids.count("r5") <= (1 if level == "report" else 50)
    texts = {s.text for s in index.store.all_sentences()}
    assert "Changed." in " ".join(texts)
    assert index.stats()["counts"]["reports"] == 11


def test_deleting_an_id_that_is_not_there_names_it_and_changes_nothing(segmented):
    path, _ = segmented
    before = read_current(path)
    with pytest.raises(IndexStoreError, match=r"2 report id\(s\) not in .*'nope'.*'r2'.*nothing was deleted"):
        delete_from_index(path, ["r1", "nope", "r2"])  # r2 was deleted already
    assert read_current(path) == before and IndexStore.open(path).report_row("r1") is not None
    res = CliRunner().invoke(app, ["index", "delete", str(path), "ghost"])
    assert res.exit_code != 0 and "'ghost'" in res.output and "Traceback" not in res.output


def test_the_delete_command_takes_ids_and_an_ids_file(segmented, tmp_path, enc):
    path, _ = segmented
    ids = tmp_path / "withdrawn.txt"
    ids.write_text("r3\n\nr4\n")
    res = CliRunner().invoke(app, ["index", "delete", str(path), "r6", "--ids-file", str(ids)])
    assert res.exit_code == 0 and "deleted 3 report(s)" in res.output, res.output
    index = Index.open(path, encoder=enc)
    assert [index.get_report(i) for i in ("r3", "r4", "r6")] == [None] * 3 and index.get_report("r7") is not None
    res = CliRunner().invoke(app, ["index", "delete", str(path)])
    assert res.exit_code == 2 and "REPORT_ID" in res.output


def test_optimize_merges_into_one_segment_with_the_same_results(tmp_path, enc, segmented):
    path, live = segmented
    index = Index.open(path, encoder=enc)
    index.follow = False
    before = {m: [(h.report_id, round(h.score, 5)) for h in index.search("pleural effusion", k=20, mode=m)]
              for m in ("bm25", "dense", "hybrid")}
    old_names = {s["name"] for s in _segments(path)}
    summary = optimize_index(path)
    assert "4 segments -> 1" in summary.describe() and summary.dropped == 3
    (seg,) = _segments(path)
    assert seg["deleted"] == [] and seg["counts"]["reports"] == len(live)
    after = Index.open(path, encoder=enc)
    for m, hits in before.items():
        assert [(h.report_id, round(h.score, 5)) for h in after.search("pleural effusion", k=20, mode=m)] == hits
    assert verify_index(path, deep=True) == []
    assert "nothing to optimize" in optimize_index(path).describe()
    # The old segments stay while a generation that lists them is kept (rollback, a reader's lease) ...
    assert old_names <= {p.name for p in (path / "segments").iterdir()}
    index.store.close()
    add_to_index(path, [_report(20)], encoder=enc, progress=False)
    add_to_index(path, [_report(21)], encoder=enc, progress=False)
    # ... and go once none does.
    assert not old_names & {p.name for p in (path / "segments").iterdir()}


def test_a_reader_keeps_its_segments_through_optimize_and_later_writes(segmented, enc):
    path, _ = segmented
    index = Index.open(path, encoder=enc)
    index.follow = False
    optimize_index(path)
    add_to_index(path, [_report(30)], encoder=enc, progress=False)
    add_to_index(path, [_report(31)], encoder=enc, progress=False)
    assert len(index.search("pneumothorax", k=5, mode="hybrid")) == 5  # its segments are all still there
    assert index.get_report("r7") is not None


def test_rollback_after_a_delete_brings_the_report_back(segmented, enc):
    path, _ = segmented
    delete_from_index(path, ["r0"])
    res = CliRunner().invoke(app, ["index", "rollback", str(path)])
    assert res.exit_code == 0
    assert Index.open(path, encoder=enc).get_report("r0") is not None


# -- crashes ------------------------------------------------------------------------------------------
CHILD = textwrap.dedent("""
    import sys
    from radsift.index import add_to_index, delete_from_index, optimize_index
    from radsift.models.hashing import HashingEncoder
    from radsift.records import Report
    index_dir, model, what = sys.argv[1:4]
    if what == "add":
        add_to_index(index_dir, [Report("k1", {"findings": "Killed add: pleural effusion."})],
                     encoder=HashingEncoder(model), progress=False, replace=True)
    elif what == "replace":
        add_to_index(index_dir, [Report("r3", {"findings": "Killed replace: pneumothorax."})],
                     encoder=HashingEncoder(model), progress=False, replace=True)
    elif what == "delete":
        delete_from_index(index_dir, ["r1", "r4"])
    else:
        optimize_index(index_dir)
""")


def _snapshot(path: Path, enc) -> list:
    index = Index.open(path, encoder=enc)
    return [[(h.report_id, round(h.score, 5)) for h in index.search(q, k=10, mode=m)]
            for q in QUERIES[:3] for m in ("bm25", "dense", "hybrid")] + [sorted(index.store.report_ids)]


@pytest.mark.parametrize("what,point", [
    ("add", "segment-written"), ("add", "before-commit"), ("replace", "segment-written"),
    ("delete", "before-rename"), ("delete", "before-commit"),
    ("optimize", "optimize-mid-merge"), ("optimize", "segment-written"), ("optimize", "before-commit"),
])
def test_a_write_killed_midway_leaves_the_previous_commit_live_and_whole(tmp_path, enc, segmented, what, point):
    path, _ = segmented
    live, before = read_current(path), _snapshot(path, enc)
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    out = subprocess.run([sys.executable, str(script), str(path), str(enc.path), what],
                         env={**os.environ, "RADSIFT_FAULT": point}, capture_output=True, text=True, timeout=120)
    assert out.returncode == -9, out.stderr
    assert read_current(path) == live
    assert verify_index(path, deep=True) == []
    assert _snapshot(path, enc) == before  # same reports, same results: nothing lost, nothing half-done
    # The next writer removes the dead one's leftovers (segment or temp folder) and succeeds.
    optimize_index(path)
    listed = {s["name"] for s in _segments(path)}
    kept = {s["name"] for s in json.loads((live / "manifest.json").read_text())["segments"]} | listed
    assert {p.name for p in (path / "segments").iterdir()} == kept
    assert not list(path.glob(".tmp-*")) and not list((path / "segments").glob(".tmp-*"))
    assert sorted(IndexStore.open(path).report_ids) == before[-1]


# -- info, verify, old formats -------------------------------------------------------------------------
def test_info_shows_segments_and_verify_checks_every_segment(segmented):
    path, _ = segmented
    res = CliRunner().invoke(app, ["index", "info", str(path)])
    assert res.exit_code == 0, res.output
    info = json.loads(res.output)
    assert info["counts"]["segments"] == 4 and info["counts"]["deleted_reports"] == 3
    assert [s["deleted"] for s in info["segments"]] == [2, 0, 1, 0]  # r2, r5 (replaced); r11
    first = path / "segments" / _segments(path)[0]["name"] / "section_vectors.npy"
    data = bytearray(first.read_bytes())
    data[-8:] = b"\xff" * 8
    first.write_bytes(bytes(data))
    res = CliRunner().invoke(app, ["index", "verify", str(path), "--deep"])
    assert res.exit_code == 1 and str(first) in res.output.replace("\n", "")


def _as_format_1(path: Path) -> None:
    """Rewrite a one-segment index in the layout before segments: every file in the generation folder."""
    import shutil

    from radsift.index.verify import record_files

    gen = read_current(path)
    data = json.loads((gen / "manifest.json").read_text())
    (seg,) = data.pop("segments")
    for f in (path / "segments" / seg["name"]).iterdir():
        if f.is_file():
            shutil.copy(f, gen / f.name)
    shutil.rmtree(path / "segments")
    data["format_version"], data["files"] = 1, record_files(gen)
    del data["manifest_sha256"]  # format 1 had none
    (gen / "manifest.json").write_text(json.dumps(data))


def test_an_index_of_the_format_before_segments_is_converted_by_optimize(tmp_path, enc):
    path = tmp_path / "v1"
    build_index(path, [_report(i) for i in range(8)], encoder=enc, progress=False)
    before = _snapshot(path, enc)
    _as_format_1(path)
    with pytest.raises(IndexStoreError, match="format version 1, before radsift stored segments.*radsift index "
                                              "optimize"):
        IndexStore.open(path)
    res = CliRunner().invoke(app, ["index", "optimize", str(path)])
    assert res.exit_code == 0 and "converted" in res.output and "nothing re-encoded" in res.output
    assert _snapshot(path, enc) == before and verify_index(path, deep=True) == []
    assert len(_segments(path)) == 1
