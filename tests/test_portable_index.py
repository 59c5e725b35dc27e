"""Issue 35, item 4: an index that travels. A model kept inside the index is recorded relative to it, so a
copied or moved index opens and searches as the original did, with the original gone."""

from __future__ import annotations

import json
import shutil

from radsift.demo import generate_reports
from radsift.index import add_to_index, build_index
from radsift.models.hashing import HashingEncoder
from radsift.search import Index


def _manifest(index_dir):
    return json.loads((index_dir / (index_dir / "CURRENT").read_text().strip() / "manifest.json").read_text())


def test_a_copied_index_with_its_own_model_opens_and_searches_without_the_original(tmp_path, monkeypatch):
    # Encoder.load of any folder gives the hashing encoder of that folder (no torch in this test)
    monkeypatch.setattr("radsift.models.encoder.Encoder.load",
                        classmethod(lambda cls, m=None, **kw: HashingEncoder(m)))
    reports = [d.report for d in generate_reports(n=40, seed=2)]
    index_dir = tmp_path / "site" / "idx"
    model = index_dir / "models" / "adapted-hash"
    build_index(index_dir, reports[:30], encoder=HashingEncoder(model), progress=False)
    assert _manifest(index_dir)["model_path"] == "models/adapted-hash"  # relative to the index
    before = [h.report_id for h in Index.open(index_dir).search("small right pneumothorax", k=5)]

    moved = tmp_path / "elsewhere" / "idx-copy"
    shutil.copytree(index_dir, moved)
    shutil.rmtree(tmp_path / "site")
    index = Index.open(moved)
    assert [h.report_id for h in index.search("small right pneumothorax", k=5)] == before
    assert str(index.encoder.path).startswith(str(moved))  # the copy's own model, not a path that is gone
    add_to_index(moved, reports[30:], progress=False)  # an add finds the model in the copy too
    assert len(Index.open(moved).store.report_ids) == 40


def test_an_old_absolute_model_path_inside_a_moved_index_is_found_by_fingerprint(tmp_path, monkeypatch):
    reports = [d.report for d in generate_reports(n=10, seed=2)]
    index_dir = tmp_path / "a" / "idx"
    build_index(index_dir, reports, encoder=HashingEncoder(index_dir / "models" / "m"), progress=False)
    from radsift.index.manifest import Manifest

    m = Manifest.read(index_dir / (index_dir / "CURRENT").read_text().strip() / "manifest.json")
    m.model_path = str(tmp_path / "gone" / "models" / "m")  # what an index written before recorded
    assert m.model_folder(index_dir) == str(index_dir / "models" / "m")
    m.model_path = "models/m"
    assert m.model_folder(index_dir) == str(index_dir / "models" / "m")
    assert m.model_folder(tmp_path / "nowhere") == m.model_name
