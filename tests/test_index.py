"""Index build / open / add / replace, manifest checks, and atomicity under an interrupted build."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from radsift.errors import IndexStoreError
from radsift.index.integrity import manifest_digest
from radsift.index import FORMAT_VERSION, IndexStore, add_to_index, build_index
from radsift.models.hashing import HashingEncoder
from radsift.records import Report
from radsift.search import Index

REPORTS = [
    Report("r1", {"findings": "There is a small right pneumothorax. Heart size is normal.",
                  "impression": "Small right pneumothorax."}, {"exam": "XR CHEST 1 VIEW", "site": "north"}),
    Report("r2", {"findings": "No pneumothorax or pleural effusion. The lungs are clear.",
                  "impression": "No acute cardiopulmonary abnormality."}, {"exam": "XR CHEST PA AND LATERAL",
                                                                           "site": "south"}),
    Report("r3", {"findings": "Moderate left pleural effusion with basilar atelectasis.",
                  "impression": "Left pleural effusion."}, {"exam": "XR CHEST PA AND LATERAL", "site": "north"}),
    Report("r4", {"findings": "", "impression": ""}, {"exam": "XR CHEST 1 VIEW"}),
]


@pytest.fixture()
def encoder(tmp_path):
    return HashingEncoder(tmp_path / "hash-model")


@pytest.fixture()
def built(tmp_path, encoder):
    index_dir = tmp_path / "idx"
    summary = build_index(index_dir, REPORTS, encoder=encoder, progress=False)
    return index_dir, summary


def test_build_writes_manifest_records_vectors_and_bm25(built, encoder):
    index_dir, summary = built
    assert summary.reports == 4 and summary.added == 4
    assert summary.empty_ids == ["r4"]  # stored and reported, not dropped
    store = IndexStore.open(index_dir)
    m = store.manifest
    assert m.format_version == FORMAT_VERSION
    assert m.model_name == "hashing-encoder" and m.dim == encoder.dim
    assert m.counts["reports"] == 4 and m.counts["empty_reports"] == 1
    assert m.counts["sentences"] == store.units("sentence").vectors.shape[0] == summary.sentences
    assert m.counts["sections"] == store.units("section").vectors.shape[0] == 6
    assert store.units("sentence").vectors.dtype == np.float32
    assert {"findings", "impression"} <= set(m.sections)
    (seg,) = m.segments  # a build writes one segment; BM25 is stored as term statistics
    assert (index_dir / "segments" / seg["name"] / "bm25_sentence" / "terms.json").exists()
    assert m.bm25["k1"] == 1.5
    assert store.get_report("r2").metadata["site"] == "south"
    assert store.get_report("nope") is None
    # Every stored sentence points back into its report's section text.
    for row, sent in store.sentences_by_rows(list(range(m.counts["sentences"]))).items():
        report = store.get_report(sent.report_id)
        assert report.sections[sent.section][sent.start:sent.end] == sent.text


def test_build_refuses_existing_index_without_overwrite(built, encoder):
    index_dir, _ = built
    with pytest.raises(IndexStoreError, match="already holds an index"):
        build_index(index_dir, REPORTS, encoder=encoder, progress=False)
    summary = build_index(index_dir, REPORTS[:2], encoder=encoder, progress=False, overwrite=True)
    assert summary.reports == 2
    assert IndexStore.open(index_dir).manifest.counts["reports"] == 2


def test_build_rejects_duplicate_ids(tmp_path, encoder):
    with pytest.raises(IndexStoreError, match="duplicate report id 'r1'"):
        build_index(tmp_path / "idx", [REPORTS[0], REPORTS[0]], encoder=encoder, progress=False)
    assert not (tmp_path / "idx" / "CURRENT").exists()


def test_add_encodes_only_new_reports_and_keeps_old_vectors(built, encoder):
    index_dir, _ = built
    before = IndexStore.open(index_dir)
    old_vecs = np.array(before.units("sentence").vectors)
    new = Report("r5", {"findings": "Endotracheal tube terminates 4 cm above the carina."}, {"site": "south"})
    summary = add_to_index(index_dir, [new], encoder=encoder, progress=False)
    assert summary.added == 1 and summary.reports == 5
    assert summary.encoded == 2  # one sentence + one section: nothing old re-encoded
    after = IndexStore.open(index_dir)
    assert np.array_equal(np.asarray(after.units("sentence").vectors)[: len(old_vecs)], old_vecs)
    assert after.get_report("r5") is not None
    assert after.manifest.generation == before.manifest.generation + 1
    assert after.manifest.created == before.manifest.created


def test_add_existing_id_is_an_error_unless_replace(built, encoder):
    index_dir, _ = built
    changed = Report("r2", {"findings": "Large right pneumothorax."}, {"site": "south"})
    with pytest.raises(IndexStoreError, match=r"already in .*r2.*--replace"):
        add_to_index(index_dir, [changed], encoder=encoder, progress=False)
    summary = add_to_index(index_dir, [changed], encoder=encoder, progress=False, replace=True)
    assert summary.replaced == 1 and summary.reports == 4
    store = IndexStore.open(index_dir)
    assert store.get_report("r2").sections["findings"] == "Large right pneumothorax."
    texts = [s.text for s in store.sentences_by_rows(range(store.manifest.counts["sentences"])).values()]
    assert "No pneumothorax or pleural effusion." not in texts  # the old version's units are gone
    idx = Index.open(index_dir, encoder=encoder)
    hits = idx.search("large pneumothorax", k=1, mode="bm25")
    assert hits[0].report_id == "r2"


def test_add_with_another_model_is_refused(built, tmp_path):
    index_dir, _ = built
    other = HashingEncoder(tmp_path / "other-model", dim=128)
    with pytest.raises(IndexStoreError, match="different model"):
        add_to_index(index_dir, [Report("r9", {"findings": "Clear lungs."})], encoder=other, progress=False)


def test_open_errors_are_clear(tmp_path, built):
    with pytest.raises(IndexStoreError, match="index not found"):
        IndexStore.open(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(IndexStoreError, match="not a radsift index"):
        IndexStore.open(tmp_path / "empty")
    index_dir, _ = built
    store = IndexStore.open(index_dir)
    manifest = store.gen_dir / "manifest.json"
    data = json.loads(manifest.read_text())
    data["format_version"] = 999
    data["manifest_sha256"] = manifest_digest(data)  # a manifest a later radsift wrote, whole
    manifest.write_text(json.dumps(data))
    with pytest.raises(IndexStoreError, match="format version 999"):
        IndexStore.open(index_dir)


def test_open_with_another_model_is_refused(built, tmp_path):
    index_dir, _ = built
    other = tmp_path / "other"
    HashingEncoder(other, dim=64)
    with pytest.raises(IndexStoreError, match="was built with model hashing-encoder"):
        Index.open(index_dir, model=other)


_KILLED_BUILD = textwrap.dedent("""
    import signal, sys, time
    from pathlib import Path
    # A job started in the background by a non-interactive shell inherits SIGINT ignored: take
    # Python's own handler back, so Ctrl-C is what the build sees, however the tests were started.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from radsift.index import build_index
    from radsift.models.hashing import HashingEncoder
    from radsift.records import Report

    class SlowEncoder(HashingEncoder):
        def encode(self, texts, **kw):
            print("encoding", flush=True)
            time.sleep(60)  # killed here, mid-build
            return super().encode(texts, **kw)

    if sys.argv[3] == "write":  # killed while the new segment's files are being written
        from radsift.ranking.bm25 import TermStats
        SlowEncoder = HashingEncoder
        def slow_save(self, *a, **kw):
            print("encoding", flush=True)
            time.sleep(60)
        TermStats.save = slow_save

    enc = SlowEncoder(Path(sys.argv[2]))
    reports = [Report(f"n{i}", {"findings": f"Finding number {i}."}) for i in range(50)]
    build_index(sys.argv[1], reports, encoder=enc, progress=False, overwrite=True)
""")


@pytest.mark.parametrize("phase", ["encode", "write"])
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_interrupted_build_leaves_previous_index_intact(built, encoder, tmp_path, sig, phase):
    index_dir, _ = built
    before = IndexStore.open(index_dir)
    gen_before = before.gen_dir
    script = tmp_path / "killed_build.py"
    script.write_text(_KILLED_BUILD)
    proc = subprocess.Popen([sys.executable, str(script), str(index_dir), str(encoder.path), phase],
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stdout.readline().strip() == "encoding"  # the build is under way
    proc.send_signal(sig)
    proc.wait(timeout=30)
    after = IndexStore.open(index_dir)
    assert after.gen_dir == gen_before
    assert after.manifest.counts["reports"] == 4
    hits = Index.open(index_dir, encoder=encoder).search("pleural effusion", k=1, mode="bm25")
    assert hits[0].report_id == "r3"
    # The next writer clears the leftovers and succeeds.
    add_to_index(index_dir, [Report("r6", {"findings": "Clear lungs."})], encoder=encoder, progress=False)
    assert IndexStore.open(index_dir).manifest.counts["reports"] == 5
    assert not list(index_dir.glob(".tmp-*"))


def test_reader_keeps_consistent_view_and_reloads(built, encoder):
    index_dir, _ = built
    idx = Index.open(index_dir, encoder=encoder)
    idx.follow = False  # the default follows the live generation by itself (tests/test_faults.py)
    assert idx.stats()["counts"]["reports"] == 4
    add_to_index(index_dir, [Report("r7", {"findings": "Right rib fracture."})], encoder=encoder, progress=False)
    assert idx.get_report("r7") is None  # still the old generation
    assert idx.search("rib fracture", k=5, mode="bm25") == []
    assert idx.reload() is True
    assert idx.get_report("r7") is not None
    assert idx.search("rib fracture", k=1, mode="bm25")[0].report_id == "r7"
    assert idx.reload() is False
