"""Checksums over everything that shapes an answer (issue 32, item 1): the manifest's own checksum, the small
arrays a search reads checked at open (checksums and ranges), merges that refuse damaged files, files changed
under an open reader, and the HNSW cache files. Every failure is one line naming the file, never a traceback
and never an answer."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from radsift.cli import app
from radsift.errors import IndexDamagedError, IndexStoreError
from radsift.index import IndexStore, add_to_index, build_index, optimize_index
from radsift.index.backends import hnsw as hnsw_mod
from radsift.index.format import CURRENT, segment_dir
from radsift.index.generations import read_current
from radsift.index.graphs import GRAPH_DIR, build_graphs
from radsift.index.integrity import MANIFEST_SHA, manifest_digest
from radsift.index.lifecycle import remove_unreferenced_segments, rollback
from radsift.index.verify import verify_index
from radsift.models.hashing import HashingEncoder
from radsift.records import Report
from radsift.search import Index

FINDINGS = ["Small right pneumothorax.", "No pneumothorax.", "Left pleural effusion.", "No pleural effusion.",
            "Mild cardiomegaly.", "Clear lungs."]
#: Every small array a search reads, relative to its segment.
SMALL = ["sentence_report.npy", "sentence_section.npy", "section_report.npy", "section_section.npy",
         "label_row.npy", "label_finding.npy", "label_status.npy", "bm25_sentence/lengths.npy",
         "bm25_section/lengths.npy", "bm25_sentence/indptr.npy", "bm25_sentence/rows.npy", "bm25_sentence/tf.npy",
         "bm25_section/terms.json"]
MODES = ("hybrid", "bm25", "dense")


def _reports(start: int, n: int) -> list[Report]:
    return [Report(f"r{i}", {"findings": f"{FINDINGS[i % 6]} {FINDINGS[(i * 5 + 1) % 6]}",
                             "impression": FINDINGS[(i + 2) % 6]}) for i in range(start, start + n)]


@pytest.fixture()
def enc(tmp_path):
    return HashingEncoder(tmp_path / "model")


@pytest.fixture()
def idx(tmp_path, enc):
    path = tmp_path / "idx"
    build_index(path, _reports(0, 24), encoder=enc, progress=False)
    return path


@pytest.fixture()
def three(tmp_path, enc):
    """Three segments."""
    path = tmp_path / "three"
    build_index(path, _reports(0, 10), encoder=enc, progress=False)
    add_to_index(path, _reports(10, 10), encoder=enc, progress=False)
    add_to_index(path, _reports(20, 10), encoder=enc, progress=False)
    return path


def _manifest(path: Path) -> Path:
    return read_current(path) / "manifest.json"


def _seg(path: Path, i: int = 0) -> Path:
    return segment_dir(path, json.loads(_manifest(path).read_text())["segments"][i]["name"])


def _flip(path: Path, at: int, bit: int = 0) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 1 << bit
    path.write_bytes(bytes(data))


def _data_offset(path: Path) -> int:
    """The first byte of an .npy file's data (after its header)."""
    if path.suffix != ".npy":
        return 1
    with open(path, "rb") as fh:
        np.lib.format.read_magic(fh)
        np.lib.format.read_array_header_1_0(fh)
        return fh.tell()


def _answers(index: Index) -> list:
    return [[(h.report_id, round(h.score, 5)) for h in index.search(q, k=10, mode=m, unit=u)]
            for q in ("pneumothorax", "no pleural effusion") for m in MODES for u in ("sentence", "section")]


def _one_line_naming(text: str, name: str) -> bool:
    return name in text and "Traceback" not in text and len([x for x in text.splitlines() if x.strip()]) <= 3


# -- the manifest ---------------------------------------------------------------------------------
def test_the_manifest_carries_its_own_checksum(idx):
    data = json.loads(_manifest(idx).read_text())
    assert data[MANIFEST_SHA] == manifest_digest(data)
    data["findings"] = list(reversed(data["findings"]))  # same size, another meaning
    data["segments"][0]["deleted"] = [3]
    _manifest(idx).write_text(json.dumps(data, indent=2, sort_keys=True))
    with pytest.raises(IndexDamagedError, match=r"manifest\.json: the manifest does not match its checksum"):
        IndexStore.open(idx)
    (problem,) = verify_index(idx)
    assert problem.path.name == "manifest.json" and "checksum" in problem.reason


def test_one_bit_flips_of_the_manifest_are_refused_or_change_nothing(idx, enc):
    manifest = _manifest(idx)
    original = manifest.read_bytes()
    parsed = json.loads(original)
    rng = random.Random(7)
    refused = 0
    for _ in range(150):
        at, bit = rng.randrange(len(original)), rng.randrange(8)
        _flip(manifest, at, bit)
        try:
            store = IndexStore.open(idx)
        except IndexStoreError as exc:
            assert "manifest.json" in str(exc) or "manifest" in str(exc), exc
            refused += 1
            problems = verify_index(idx)  # never a crash
            assert problems and all(p.path.name == "manifest.json" for p in problems)
        else:  # only a flip that leaves the same JSON (an escape spelled otherwise) may be read
            assert store.manifest.to_json() == json.dumps({**parsed}, indent=2, sort_keys=True)
            store.close()
        manifest.write_bytes(original)
    assert refused >= 140


def test_an_old_manifest_without_a_checksum_reads_and_verify_notes_it(idx, enc):
    data = json.loads(_manifest(idx).read_text())
    del data[MANIFEST_SHA]
    _manifest(idx).write_text(json.dumps(data))
    assert Index.open(idx, encoder=enc).search("pneumothorax", k=3)
    res = CliRunner().invoke(app, ["index", "verify", str(idx)])
    assert res.exit_code == 0 and "note:" in res.output and MANIFEST_SHA in res.output
    add_to_index(idx, _reports(40, 1), encoder=enc, progress=False)  # the next write records one
    assert MANIFEST_SHA in json.loads(_manifest(idx).read_text())


def test_a_damaged_checksum_key_is_not_taken_for_an_old_manifest(idx):
    text = _manifest(idx).read_text().replace(f'"{MANIFEST_SHA}"', '"manifest_sha257"')
    _manifest(idx).write_text(text)
    with pytest.raises(IndexDamagedError, match="manifest.json: damaged manifest.*manifest_sha257"):
        IndexStore.open(idx)


@pytest.mark.parametrize("edit", ["name", "counts", "deleted", "files", "dim"])
def test_a_manifest_of_another_shape_is_one_line_from_verify(idx, edit):
    data = json.loads(_manifest(idx).read_text())
    seg = data["segments"][0]
    if edit == "name":
        seg["nam"] = seg.pop("name")
    elif edit == "counts":
        seg["counts"]["reports"] = "24"
    elif edit == "deleted":
        seg["deleted"] = [10_000]
    elif edit == "files":
        seg["files"]["../../etc/passwd"] = {"size": 1, "sha256": "x"}
    else:
        data["dim"] = 0
    data[MANIFEST_SHA] = manifest_digest(data)  # checksum right: the structure check must catch it
    _manifest(idx).write_text(json.dumps(data))
    with pytest.raises(IndexDamagedError, match="manifest.json: damaged manifest"):
        IndexStore.open(idx)
    res = CliRunner().invoke(app, ["index", "verify", str(idx)])
    assert res.exit_code == 1 and _one_line_naming(res.output, "manifest.json"), res.output


# -- the small arrays -----------------------------------------------------------------------------
@pytest.mark.parametrize("rel", SMALL)
def test_a_same_size_edit_of_a_small_array_is_an_error_naming_it(idx, enc, rel):
    path = _seg(idx) / rel
    _flip(path, _data_offset(path))
    with pytest.raises(IndexDamagedError, match=rf"{Path(rel).name}: checksum differs"):
        Index.open(idx, encoder=enc)  # refused when opened, before it answers anything
    assert any(Path(rel).name in str(p) or p.path.name == Path(rel).parent.name for p in verify_index(idx))
    unit = "section" if rel.startswith(("section", "bm25_section")) else "sentence"
    res = CliRunner().invoke(app, ["search", str(idx), "pneumothorax", "--mode", "bm25", "--unit", unit])
    assert res.exit_code == 1 and _one_line_naming(res.output, Path(rel).name), res.output


@pytest.mark.parametrize("name, value", [("sentence_report", 10_000), ("section_section", 99),
                                         ("label_row", 10_000), ("label_finding", 50), ("label_status", 7)])
def test_a_value_out_of_range_is_an_error_naming_the_file_never_an_indexerror(idx, enc, name, value):
    path = _seg(idx) / f"{name}.npy"
    arr = np.load(path)
    arr[0] = value
    np.save(path, arr)
    data = json.loads(_manifest(idx).read_text())
    del data["segments"][0]["files"][f"{name}.npy"]  # no checksum to catch it: the range check must
    data[MANIFEST_SHA] = manifest_digest(data)
    _manifest(idx).write_text(json.dumps(data))
    index = Index.open(idx, encoder=enc)
    with pytest.raises(IndexDamagedError, match=rf"{name}.npy: .* (outside|not a label status)"):
        _answers(index)
        # The candidate engine reads each finding's reading postings (files checked on their own), not the
        # label arrays; the exact engine (hybrid-rrf still goes there) reads the label arrays themselves.
        for q in ("pneumothorax", "no pleural effusion"):
            index.search(q, k=10, mode="hybrid-rrf")


def test_a_file_hashed_at_open_is_hashed_again_when_it_changed_before_it_is_read(idx, enc, monkeypatch):
    store = IndexStore.open(idx)
    path = store.segments[0].path / "label_status.npy"
    _flip(path, _data_offset(path))  # after the hash at open, before the first read
    store.watch.check = lambda: None  # the watch would say so first: the read itself must see it too
    with pytest.raises(IndexDamagedError, match="label_status.npy: checksum differs"):
        store.labels()


def test_a_following_reader_keeps_serving_when_the_new_generation_is_damaged(idx, enc):
    index = Index.open(idx, encoder=enc)
    live = index.store.gen_dir.name
    add_to_index(idx, _reports(60, 3), encoder=enc, progress=False)
    path = _seg(idx, -1) / "label_status.npy"
    _flip(path, _data_offset(path))
    assert index.search("pneumothorax", k=3) and index.store.gen_dir.name == live  # refused, not switched to


def test_a_whole_index_answers_as_before(idx, enc):
    before = _answers(Index.open(idx, encoder=enc))
    assert verify_index(idx) == [] and verify_index(idx, deep=True) == []
    assert _answers(Index.open(idx, encoder=enc)) == before


# -- merges ----------------------------------------------------------------------------------------
def test_optimize_refuses_flipped_labels_and_leaves_the_index_as_it_was(three, enc):
    path = _seg(three, 1) / "label_status.npy"
    arr = np.load(path)
    arr[arr == -1] = 1  # every absent label now present: a same-size edit
    np.save(path, arr)
    live, gens = read_current(three).name, sorted(p.name for p in three.glob("gen-*"))
    segs = sorted(p.name for p in (three / "segments").iterdir())
    with pytest.raises(IndexDamagedError, match="label_status.npy: checksum differs"):
        optimize_index(three)
    assert read_current(three).name == live and sorted(p.name for p in three.glob("gen-*")) == gens
    assert sorted(p.name for p in (three / "segments").iterdir()) == segs
    res = CliRunner().invoke(app, ["index", "optimize", str(three)])
    assert res.exit_code == 1 and _one_line_naming(res.output, "label_status.npy"), res.output


def test_optimize_refuses_damaged_vectors(three):
    path = _seg(three, 2) / "sentence_vectors.npy"
    _flip(path, _data_offset(path) + 5)
    with pytest.raises(IndexDamagedError, match="cannot optimize .*sentence_vectors.npy"):
        optimize_index(three)


def test_rollback_refuses_a_damaged_earlier_generation(three):
    path = _seg(three, 0) / "label_status.npy"
    _flip(path, _data_offset(path))
    with pytest.raises(IndexDamagedError, match="label_status.npy"):
        rollback(three)
    assert read_current(three).name == "gen-000003"


# -- files changed under an open reader ---------------------------------------------------------------
@pytest.mark.parametrize("rel", ["sentence_vectors.npy", "bm25_sentence/rows.npy", "label_status.npy"])
def test_a_file_truncated_under_an_open_reader_is_a_503_naming_it(idx, enc, rel):
    from fastapi.testclient import TestClient

    from radsift.serve import create_app

    index = Index.open(idx, encoder=enc)
    client = TestClient(create_app(index))
    assert client.get("/api/search", params={"q": "pneumothorax"}).status_code == 200
    path = _seg(idx) / rel
    os.truncate(path, path.stat().st_size // 2)
    res = client.get("/api/search", params={"q": "pneumothorax"})
    assert res.status_code == 503 and rel.split("/")[-1] in res.json()["detail"]
    assert "changed while the index was open" in res.json()["detail"]
    with pytest.raises(IndexDamagedError, match=rel.split("/")[-1]):
        index.get_report("r1")


def test_a_same_size_rewrite_under_an_open_reader_is_an_error(idx, enc):
    index = Index.open(idx, encoder=enc)
    index.search("pneumothorax", k=3)
    path = _seg(idx) / "section_vectors.npy"
    data = path.read_bytes()
    path.unlink()
    path.write_bytes(data[:-4] + b"\0\0\0\0")  # a new file in its place (a restore, or an edit)
    with pytest.raises(IndexDamagedError, match="section_vectors.npy: changed while the index was open"):
        index.search("pneumothorax", k=3)


# -- the HNSW cache ----------------------------------------------------------------------------------
needs_faiss = pytest.mark.skipif(not hnsw_mod.available(), reason="FAISS not importable")


@pytest.fixture()
def graphed(tmp_path, enc):
    path = tmp_path / "g"
    build_index(path, _reports(0, 40), encoder=enc, progress=False)
    build_graphs(path, "hnsw")
    return path


def _cache(path: Path, suffix: str) -> Path:
    return path / GRAPH_DIR / f"{read_current(path).name}.sentence.faiss{suffix}"


@needs_faiss
@pytest.mark.parametrize("suffix", [".dups.npz", ".layout.npz", ""])
def test_a_damaged_cache_file_is_one_line_from_verify_and_search(graphed, enc, suffix):
    path = _cache(graphed, suffix)
    _flip(path, path.stat().st_size // 2)
    problems = verify_index(graphed, deep=True)
    assert [p.path.name for p in problems] == [path.name], problems
    if suffix != ".layout.npz":  # a search reads the graph (checked whole when opened) and its groups
        with pytest.raises(IndexDamagedError, match=path.name.replace(".", r"\.")):
            Index.open(graphed, encoder=enc, backend="hnsw").search("pneumothorax", k=3, mode="dense")
    res = CliRunner().invoke(app, ["index", "verify", str(graphed), "--deep"])
    assert res.exit_code == 1 and _one_line_naming(res.output, path.name), res.output


@needs_faiss
def test_a_dups_file_that_is_no_zip_is_one_line_never_badzipfile(graphed, enc):
    path = _cache(graphed, ".dups.npz")
    path.write_bytes(b"PK\x03\x04 not a zip at all")
    _cache(graphed, ".files.json").unlink()  # no record: the reader itself must cope
    with pytest.raises(IndexDamagedError, match=r"dups\.npz: unreadable duplicate groups"):
        Index.open(graphed, encoder=enc, backend="hnsw").search("pneumothorax", k=3, mode="dense")


@needs_faiss
@pytest.mark.parametrize("suffix", [".layout.npz", ".dups.npz", ""])
def test_an_add_over_a_damaged_cache_rebuilds_the_graph_and_says_so(graphed, enc, suffix):
    path = _cache(graphed, suffix)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    said: list[str] = []
    add_to_index(graphed, _reports(40, 5), encoder=enc, progress=False, backend="hnsw", say=said.append)
    assert any(s.startswith("building the HNSW graph") and "built anew" in s for s in said), said
    assert verify_index(graphed, deep=True) == []
    hits = Index.open(graphed, encoder=enc, backend="hnsw").search("pneumothorax", k=3, mode="dense")
    assert hits


@needs_faiss
def test_a_graph_truncated_under_an_open_reader_is_an_error_naming_it(graphed, enc):
    index = Index.open(graphed, encoder=enc, backend="hnsw")
    index.search("pneumothorax", k=3, mode="dense")
    path = _cache(graphed, "")
    os.truncate(path, path.stat().st_size // 2)
    with pytest.raises(IndexDamagedError, match=r"sentence\.faiss: changed while the index was open"):
        index.search("pneumothorax", k=3, mode="dense")


@needs_faiss
def test_graph_files_are_recorded_when_written(graphed):
    record = json.loads(_cache(graphed, ".files.json").read_text())
    assert set(record) >= {_cache(graphed, "").name, _cache(graphed, ".layout.npz").name}
    assert (graphed / CURRENT).exists()


def test_a_damaged_old_manifest_keeps_every_segment_on_disk(three, enc):
    """Garbage collection reads the other generations' manifests: one failing its checksum lists nothing
    for sure, so no segment may be removed on its word."""
    optimize_index(three)  # the live generation lists one merged segment; the previous one the three others
    older = sorted(three.glob("gen-*"))[0] / "manifest.json"
    data = json.loads(older.read_text())
    data["segments"][0]["name"] = "seg-999999"  # would free the segment it really lists
    older.write_text(json.dumps(data, indent=2, sort_keys=True))
    segs = sorted(p.name for p in (three / "segments").iterdir())
    assert len(segs) == 4 and remove_unreferenced_segments(three) == []
    assert sorted(p.name for p in (three / "segments").iterdir()) == segs


def test_a_write_never_points_current_at_a_manifest_that_fails(idx, enc, monkeypatch):
    from radsift.index.manifest import Manifest

    live = read_current(idx).name
    monkeypatch.setattr(Manifest, "to_json", lambda self: json.dumps({"format_version": 2, "dim": 8,
                                                                      MANIFEST_SHA: "0" * 64}))
    with pytest.raises(IndexDamagedError, match="manifest.json: the manifest does not match its checksum"):
        add_to_index(idx, _reports(50, 1), encoder=enc, progress=False)
    assert read_current(idx).name == live
