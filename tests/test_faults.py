"""Fault injection (issue 18): kills at chosen points of a write, damaged files, adds under a live reader.

Each case checks that nothing committed is lost, that the live generation is never deleted, and
that damage is an error naming the file (CLI exit 1, API 503), never a wrong answer. Small
indexes with the hashing encoder keep it fast; ``benchmarks/bench_faults.py`` repeats the kill
points and corruptions many times and prints a table.
"""

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
from radsift.errors import CorpusError, IndexDamagedError, IndexStoreError
from radsift.index import IndexStore, add_to_index, build_index
from radsift.index.format import CURRENT, MARKER, READERS
from radsift.index.generations import read_current
from radsift.index.integrity import manifest_digest
from radsift.index.lifecycle import rollback
from radsift.index.verify import verify_index
from radsift.models.hashing import HashingEncoder
from radsift.records import Report
from radsift.search import Index

REPORTS = [Report(f"r{i}", {"findings": f"Finding number {i}: small right pneumothorax {i}.",
                            "impression": "Pneumothorax." if i % 2 else "No pneumothorax."},
                  {"site": "north" if i % 2 else "south", 'odd"key': f"v{i}"}) for i in range(12)]
NEW = [Report("n1", {"findings": "A healed left rib fracture."}, {"site": "east"})]

CHILD = textwrap.dedent("""
    import sys
    from radsift.index import add_to_index, build_index
    from radsift.models.hashing import HashingEncoder
    from radsift.records import Report
    index_dir, model, what = sys.argv[1:4]
    enc = HashingEncoder(model)
    reports = [Report("k%d" % i, {"findings": "Killed write %d: pleural effusion." % i}) for i in range(5)]
    if what == "build":
        build_index(index_dir, reports, encoder=enc, progress=False)
    else:
        add_to_index(index_dir, reports, encoder=enc, progress=False)
""")


@pytest.fixture()
def enc(tmp_path):
    return HashingEncoder(tmp_path / "model")


@pytest.fixture()
def idx_dir(tmp_path, enc):
    path = tmp_path / "idx"
    build_index(path, REPORTS, encoder=enc, progress=False)
    return path


def _gens(path: Path) -> list[str]:
    return sorted(p.name for p in path.glob("gen-*"))


def _killed(tmp_path, index_dir, enc, what: str, point: str) -> int:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    out = subprocess.run([sys.executable, str(script), str(index_dir), str(enc.path), what],
                         env={**os.environ, "RADSIFT_FAULT": point}, capture_output=True, text=True, timeout=120)
    return out.returncode


# -- kills ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("point", ["before-rename", "before-commit", "after-commit"])
def test_a_killed_add_never_loses_the_live_generation(tmp_path, idx_dir, enc, point):
    live = read_current(idx_dir).name
    assert _killed(tmp_path, idx_dir, enc, "add", point) == -9
    now = read_current(idx_dir).name
    if point == "after-commit":
        assert now != live  # committed before the kill: the new generation is live and whole
        assert Index.open(idx_dir, encoder=enc).get_report("k0") is not None
    else:
        assert now == live  # not committed: the previous generation stays live
        assert Index.open(idx_dir, encoder=enc).get_report("k0") is None
    assert verify_index(idx_dir, deep=True) == []
    # The next writer cleans up after the crash and never deletes what was live.
    add_to_index(idx_dir, NEW, encoder=enc, progress=False)
    assert now in _gens(idx_dir) and len(_gens(idx_dir)) == 2  # the new one and the one it replaced
    index = Index.open(idx_dir, encoder=enc)
    assert index.get_report("n1") is not None and index.get_report("r3") is not None
    assert not list(idx_dir.glob(".tmp-*"))


@pytest.mark.parametrize("point", ["before-rename", "before-commit"])
def test_a_first_build_killed_before_its_commit_can_be_built_again(tmp_path, enc, point):
    index_dir = tmp_path / "fresh"
    assert _killed(tmp_path, index_dir, enc, "build", point) == -9
    assert (index_dir / MARKER).exists() and not (index_dir / CURRENT).exists()
    with pytest.raises(IndexStoreError, match="a build into it never finished"):
        IndexStore.open(index_dir)
    summary = build_index(index_dir, REPORTS, encoder=enc, progress=False)  # no --overwrite needed
    assert summary.reports == len(REPORTS) and _gens(index_dir) == ["gen-000002"] if point == "before-commit" \
        else summary.reports == len(REPORTS)


def test_a_folder_that_is_not_ours_is_still_refused(tmp_path, enc):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "thesis.docx").write_text("not an index")
    with pytest.raises(IndexStoreError, match="not a radsift index"):
        build_index(folder, REPORTS, encoder=enc, progress=False)
    assert (folder / "thesis.docx").exists()


# -- readers hold their generation ------------------------------------------------------------------
def test_two_adds_under_a_reader_that_does_not_follow_keep_its_generation(idx_dir, enc):
    index = Index.open(idx_dir, encoder=enc)
    index.follow = False
    first = read_current(idx_dir).name
    add_to_index(idx_dir, NEW, encoder=enc, progress=False)
    add_to_index(idx_dir, [Report("n2", {"findings": "Cardiomegaly."})], encoder=enc, progress=False)
    assert first in _gens(idx_dir)  # leased: not removed although two generations came after it
    hits = index.search("pneumothorax", k=3, mode="dense")  # still readable, vectors included
    assert len(hits) == 3
    index.store.close()  # the lease goes
    add_to_index(idx_dir, [Report("n3", {"findings": "Scoliosis."})], encoder=enc, progress=False)
    assert first not in _gens(idx_dir)


def test_a_following_reader_switches_to_each_new_generation(idx_dir, enc):
    from fastapi.testclient import TestClient

    from radsift.serve import create_app

    client = TestClient(create_app(Index.open(idx_dir, encoder=enc)))
    for i in range(3):
        add_to_index(idx_dir, [Report(f"m{i}", {"findings": f"Marker finding {i}."})], encoder=enc, progress=False)
        res = client.get("/api/search", params={"q": f"marker finding {i}", "mode": "bm25", "k": 1})
        assert res.status_code == 200 and res.json()["hits"][0]["report_id"] == f"m{i}"
    assert len(_gens(idx_dir)) <= 3


def test_the_lease_file_is_in_every_generation_and_readers_write_nothing(idx_dir, enc):
    gen = read_current(idx_dir)
    assert (gen / READERS).exists()
    before = {p: p.stat().st_mtime_ns for p in idx_dir.rglob("*")}
    Index.open(idx_dir, encoder=enc).search("pneumothorax", k=2, mode="hybrid")
    assert {p: p.stat().st_mtime_ns for p in idx_dir.rglob("*")} == before


# -- damaged files ----------------------------------------------------------------------------------
def _seg(index_dir: Path) -> Path:
    """The newest segment of the live generation (the only one of a fresh build)."""
    gen = read_current(index_dir)
    return index_dir / "segments" / json.loads((gen / "manifest.json").read_text())["segments"][-1]["name"]


def _damage(index_dir: Path, how: str) -> Path:
    gen, seg = read_current(index_dir), _seg(index_dir)
    vectors = seg / "sentence_vectors.npy"
    if how == "truncate":
        os.truncate(vectors, vectors.stat().st_size // 2)
        return vectors
    if how == "random-bytes":
        data = bytearray(vectors.read_bytes())
        rng = np.random.default_rng(0)
        end = len(data)
        data[end - 4096:end] = rng.integers(0, 256, 4096, dtype=np.uint8).tobytes()
        vectors.write_bytes(bytes(data))
        return vectors
    if how == "nan":
        arr = np.load(vectors)
        arr[:] = np.nan
        np.save(vectors, arr)
        return vectors
    if how == "dim":
        manifest = json.loads((gen / "manifest.json").read_text())
        manifest["dim"] += 1
        manifest["manifest_sha256"] = manifest_digest(manifest)  # edited with its checksum: the shapes catch it
        (gen / "manifest.json").write_text(json.dumps(manifest))
        return seg / "sentence_vectors.npy"
    if how == "sqlite":
        db = seg / "store.sqlite"
        data = bytearray(db.read_bytes())
        data[100:4096] = b"\x00" * (4096 - 100)
        db.write_bytes(bytes(data))
        return db
    if how == "missing":
        (seg / "label_status.npy").unlink()
        return seg / "label_status.npy"
    if how == "manifest":
        (gen / "manifest.json").write_text("{ not json")
        return gen / "manifest.json"
    raise ValueError(how)


@pytest.mark.parametrize("how", ["truncate", "dim", "missing", "manifest"])
def test_damage_found_on_open_names_the_file(idx_dir, enc, how):
    bad = _damage(idx_dir, how)
    with pytest.raises(IndexStoreError, match=bad.name):
        Index.open(idx_dir, encoder=enc)
    res = CliRunner().invoke(app, ["index", "info", str(idx_dir)])
    assert res.exit_code in (1, 2) and bad.name in res.output and "Traceback" not in res.output
    assert len([line for line in res.output.strip().splitlines() if line.strip()]) <= 3  # one message
    res = CliRunner().invoke(app, ["index", "verify", str(idx_dir)])
    assert res.exit_code == 1 and bad.name in res.output


@pytest.mark.parametrize("how", ["random-bytes", "nan"])
def test_damaged_vectors_are_an_error_at_search_time_never_a_wrong_answer(idx_dir, enc, how):
    bad = _damage(idx_dir, how)
    index = Index.open(idx_dir, encoder=enc)  # same size: the cheap check cannot see it
    for mode in ("dense", "hybrid"):
        with pytest.raises(IndexDamagedError, match="sentence_vectors.npy"):
            index.search("small right pneumothorax", k=3, mode=mode)
    assert index.search("small right pneumothorax", k=3, mode="bm25")  # BM25 does not read the vectors
    res = CliRunner().invoke(app, ["index", "verify", str(idx_dir), "--deep"])
    assert res.exit_code == 1 and bad.name in res.output


def test_damaged_records_are_a_503_naming_the_file(idx_dir, enc):
    from fastapi.testclient import TestClient

    from radsift.serve import create_app

    client = TestClient(create_app(Index.open(idx_dir, encoder=enc)), raise_server_exceptions=False)
    _damage(idx_dir, "sqlite")
    res = client.get("/api/search", params={"q": "pneumothorax", "mode": "bm25"})
    assert res.status_code == 503 and "store.sqlite" in res.json()["detail"]
    res = client.get("/api/reports/r1")
    assert res.status_code == 503 and "store.sqlite" in res.json()["detail"]


def test_rollback_brings_the_previous_generation_back(idx_dir, enc):
    add_to_index(idx_dir, NEW, encoder=enc, progress=False)
    _damage(idx_dir, "truncate")
    res = CliRunner().invoke(app, ["index", "rollback", str(idx_dir)])
    assert res.exit_code == 0 and "gen-000002 -> gen-000001" in res.output
    index = Index.open(idx_dir, encoder=enc)
    assert index.get_report("r1") is not None and index.get_report("n1") is None
    with pytest.raises(IndexStoreError, match="no generation before"):
        rollback(idx_dir)
    # the next add starts from the rolled-back generation and removes the damaged one
    add_to_index(idx_dir, NEW, encoder=enc, progress=False)
    assert "gen-000002" not in _gens(idx_dir) and verify_index(idx_dir, deep=True) == []


def test_a_deep_verify_of_a_whole_index_is_clean(idx_dir):
    assert verify_index(idx_dir) == [] and verify_index(idx_dir, deep=True) == []
    res = CliRunner().invoke(app, ["index", "verify", str(idx_dir), "--deep"])
    assert res.exit_code == 0 and "ok:" in res.output


# -- loose inputs -------------------------------------------------------------------------------------
def test_an_empty_corpus_is_an_error_unless_allowed(tmp_path, enc):
    with pytest.raises(CorpusError, match="holds no report.*--allow-empty"):
        build_index(tmp_path / "e", [], encoder=enc, progress=False)
    summary = build_index(tmp_path / "e2", [], encoder=enc, progress=False, allow_empty=True)
    assert summary.reports == 0


def test_an_add_of_nothing_writes_no_generation(idx_dir, enc):
    before = _gens(idx_dir)
    summary = add_to_index(idx_dir, [], encoder=enc, progress=False)
    assert _gens(idx_dir) == before and "nothing to add" in summary.describe()


def test_a_metadata_key_with_a_quote_is_matched_exactly(idx_dir, enc):
    index = Index.open(idx_dir, encoder=enc)
    hits = index.search("pneumothorax", k=20, mode="bm25", where=['odd"key=v3'])
    assert [h.report_id for h in hits] == ["r3"]
    assert index.search("pneumothorax", k=20, mode="bm25", where=['odd"key~V1'])  # v1, v10, v11


def test_a_rebuild_keeps_the_generation_it_replaced_for_rollback(idx_dir, enc):
    build_index(idx_dir, NEW, encoder=enc, progress=False, overwrite=True)
    assert _gens(idx_dir) == ["gen-000001", "gen-000002"]
    assert rollback(idx_dir) == ("gen-000002", "gen-000001")
    assert Index.open(idx_dir, encoder=enc).get_report("r1") is not None


def _sql(gen: Path, statement: str) -> None:
    import sqlite3

    with sqlite3.connect(gen / "store.sqlite") as db:
        db.execute(statement)


def test_a_changed_record_is_an_error_when_read_never_shown(idx_dir, enc):
    _sql(_seg(idx_dir), """UPDATE reports SET sections = '{"findings": "tampered"}' WHERE id = 'r3'""")
    _sql(_seg(idx_dir), "UPDATE sentences SET text = 'tampered' WHERE row = 0")
    index = Index.open(idx_dir, encoder=enc)
    with pytest.raises(IndexDamagedError, match="store.sqlite: a reports row .* does not match its checksum"):
        index.get_report("r3")
    with pytest.raises(IndexDamagedError, match="sentences row"):
        index.search("finding number 0", k=20, mode="bm25", level="sentence")
    assert index.get_report("r4").sections["findings"].startswith("Finding number 4")  # the others read fine


def test_an_index_written_before_row_checksums_still_reads(idx_dir, enc):
    gen = read_current(idx_dir)
    for table in ("reports", "sentences", "sections"):
        _sql(_seg(idx_dir), f"ALTER TABLE {table} DROP COLUMN crc")
    manifest = json.loads((gen / "manifest.json").read_text())
    manifest["segments"][0]["files"] = {}  # an older manifest recorded no files either, nor its own checksum
    del manifest["manifest_sha256"]
    (gen / "manifest.json").write_text(json.dumps(manifest))
    index = Index.open(idx_dir, encoder=enc)
    assert index.get_report("r3") is not None and index.search("pneumothorax", k=3, mode="hybrid")


def test_deep_verify_reads_every_row_against_its_checksum(idx_dir):
    _sql(_seg(idx_dir), "UPDATE sections SET text = 'tampered' WHERE row = 2")
    assert verify_index(idx_dir) == []  # same size: the cheap check cannot see it
    (problem,) = [p for p in verify_index(idx_dir, deep=True) if "sections row" in p.reason]
    assert problem.path.name == "store.sqlite"
