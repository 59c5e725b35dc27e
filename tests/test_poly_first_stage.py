"""Issue 21: a poly-encoder as the first stage of passage search (radsift.search.passages.PolyFirstStage),
its codes cached per segment in INDEX/cache/poly/ (radsift.index.poly_codes)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from radsift.errors import ConfigError
from radsift.records import Report
from radsift.text.aspects import WINDOW_WORDS, passage_windows

pytestmark = pytest.mark.slow  # a MiniLM poly-encoder loads and encodes in every test

_FILLER = " ".join(f"filler{i % 53}" for i in range(WINDOW_WORDS))  # the first window, all of it
_ASTHMA_PLAN = ("Inhaled steroids for asthma twice a day, albuterol inhaler as needed for wheezing, asthma action plan "
                "reviewed, spacer technique taught, avoid asthma triggers such as smoke and dust, peak flow diary, "
                "return if asthma symptoms worsen or the inhaler is needed more often than twice a week.")
_NOTES = [
    ("n1", "HISTORY OF PRESENT ILLNESS: Pneumonia last winter, treated at home.\nPLAN: Start antibiotics for "
           "pneumonia today. Recheck in a week.\nALLERGIES: None."),
    ("n2", "ASSESSMENT: Gout flare of the left toe.\nPLAN: Colchicine for gout. Ice and rest."),
    ("n3", "The patient is well and has no complaints today."),
    # a PLAN past one window: what it says about asthma is in its second window only
    ("n4", "HISTORY: Asthma since childhood.\nPLAN: " + _FILLER + " " + _ASTHMA_PLAN),
    ("n5", "ASSESSMENT: Type 2 diabetes, poorly controlled.\nPLAN: Metformin for diabetes and a diet review."),
]
_NEW = ("n6", "ASSESSMENT: Migraine with aura.\nPLAN: Sumatriptan for migraine attacks.")


def _reports(notes):
    from radsift.text import split_sections

    return [Report(i, dict(split_sections(t))) for i, t in notes]


@pytest.fixture(scope="module")
def poly_dir(tmp_path_factory):
    """A small poly-encoder (4 codes) on the packaged MiniLM, saved as a folder."""
    import torch

    from radsift.models.poly_encoder import PolyEncoder

    poly = PolyEncoder.new(None, codes=4, seed=3)
    with torch.no_grad():
        poly.codes.mul_(2.0)  # sharper attention over the codes than the vocabulary's own scale
    return poly.save(tmp_path_factory.mktemp("poly") / "poly")


@pytest.fixture(scope="module")
def poly(poly_dir):
    from radsift.models.poly_encoder import PolyEncoder

    return PolyEncoder.load(poly_dir)


@pytest.fixture
def note_index(tmp_path):
    """A fresh index of the notes (hashing bi-encoder: fast, and unlike the poly-encoder)."""
    from radsift.index import build_index
    from radsift.models.hashing import HashingEncoder
    from radsift.search import Index

    enc = HashingEncoder(tmp_path / "model")
    build_index(tmp_path / "idx", _reports(_NOTES), encoder=enc, progress=False)
    return Index.open(tmp_path / "idx", encoder=enc)


def _stage(poly_dir, poly, said=None):
    from radsift.search.passages import PolyFirstStage

    return PolyFirstStage(poly_dir, say=(said.append if said is not None else lambda m: None), poly=poly)


def _expected(index, poly, query: str) -> list[tuple[tuple[str, str], float]]:
    """Every live section scored directly (``poly.score_texts``; a section past one window by its best
    window), best first: what the first stage must return."""
    store = index.live_store()
    ids = store.report_ids
    out = []
    for s in store.all_sections():
        score = float(max(poly.score_texts(query, passage_windows(s.text))))
        out.append(((ids[s.report_row], s.section), score))
    return sorted(out, key=lambda x: -x[1])


def _found(hits) -> list[tuple[tuple[str, str], float]]:
    return [((h.report_id, h.heading), h.score) for h in hits]


def _cache_files(index) -> dict[str, Path]:
    folder = index.path / "cache" / "poly"
    return {p.name.split(".")[0]: p for p in folder.glob("seg-*.npy")}


QUERIES = ["gout | treatment", "how is asthma treated?", "pneumonia | history", "diabetes medication"]


def test_first_stage_ranks_every_live_section_by_the_poly_encoder(note_index, poly_dir, poly):
    """(a) --mode dense: the order (and scores, to float16's precision) of scoring every section directly."""
    from radsift.search.passages import parse_passage_query, search_passages

    stage = _stage(poly_dir, poly)
    n = len(note_index.store.all_sections())
    for query in QUERIES:
        text = parse_passage_query(query).text
        expected = _expected(note_index, poly, text)
        found = _found(search_passages(note_index, text, k=n, mode="dense", first_stage=stage))
        assert [p for p, _ in found] == [p for p, _ in expected], query
        np.testing.assert_allclose([s for _, s in found], [s for _, s in expected], atol=2e-3)
    # the aspect filter keeps working on top: the treatment passages, in the poly-encoder's order
    hits = search_passages(note_index, "gout | treatment", k=3, mode="dense", first_stage=stage)
    expected = [p for p, _ in _expected(note_index, poly, "gout treatment") if p[1] == "plan"]
    assert [(h.report_id, h.heading) for h in hits] == expected[:3] and {h.aspect for h in hits} == {"treatment"}
    assert hits[0].sentences and hits[0].highlights


def test_a_long_section_scores_by_its_best_window(note_index, poly_dir, poly):
    """The codes of every window are cached (owner rows); the asthma PLAN's score is its second window's."""
    from radsift.index.poly_codes import read_segment_codes
    from radsift.search.passages import search_passages

    stage = _stage(poly_dir, poly)
    hits = search_passages(note_index, "inhaled steroids for asthma", k=20, mode="dense", first_stage=stage)
    plan = next(h for h in hits if h.report_id == "n4" and h.heading == "plan")
    windows = passage_windows(plan.text)
    assert len(windows) == 2 and "steroids" in windows[1] and "steroids" not in windows[0]
    by_window = poly.score_texts("inhaled steroids for asthma", windows)
    assert by_window[1] > by_window[0]
    assert plan.score == pytest.approx(float(by_window[1]), abs=2e-3)
    (seg,) = note_index.store.segments
    cached = read_segment_codes(seg, stage.fingerprint, poly.m, poly.dim)
    n_sections = len(note_index.store.all_sections())
    assert cached.codes.shape == (n_sections + 1, poly.m, poly.dim) and cached.codes.dtype == np.float16
    assert np.bincount(cached.owner).tolist().count(2) == 1


def test_index_add_encodes_only_the_new_segment(note_index, poly_dir, poly):
    """(b) the old segment's cache file is not rewritten; the new segment gets its own."""
    import os

    from radsift.index import add_to_index
    from radsift.search.passages import search_passages

    said: list[str] = []
    stage = _stage(poly_dir, poly, said)
    search_passages(note_index, "gout treatment", k=3, mode="dense", first_stage=stage)
    (old_seg, old_file), = _cache_files(note_index).items()
    before = os.stat(old_file).st_mtime_ns
    assert len(said) == 1 and old_seg in said[0] and "encoding" in said[0]
    add_to_index(note_index.path, _reports([_NEW]), encoder=note_index.encoder, progress=False)
    fresh = _stage(poly_dir, poly, said)  # a new process: nothing in memory
    hits = search_passages(note_index, "migraine treatment", k=len(_NOTES) * 3 + 3, mode="dense", first_stage=fresh)
    files = _cache_files(note_index)
    assert sorted(files) == [old_seg, "seg-000002"]
    assert os.stat(files[old_seg]).st_mtime_ns == before
    assert len(said) == 2 and "seg-000002" in said[1] and "2 passages" in said[1]
    assert _found(hits)[0][0] == _expected(note_index, poly, "migraine treatment")[0][0]
    assert any(h.report_id == "n6" for h in hits)


def test_deleted_reports_never_come_back(note_index, poly_dir, poly):
    """(c) a deleted report's sections (still in the segment's codes) are not scored, nor given to others."""
    import os

    from radsift.index import delete_from_index
    from radsift.search.passages import search_passages

    stage = _stage(poly_dir, poly)
    query = "colchicine for gout flare"
    first = search_passages(note_index, query, k=3, mode="dense", first_stage=stage)
    assert first[0].report_id == "n2"
    (seg, path), = _cache_files(note_index).items()
    before = os.stat(path).st_mtime_ns
    delete_from_index(note_index.path, ["n2"])
    fresh = _stage(poly_dir, poly)
    hits = search_passages(note_index, query, k=50, mode="dense", first_stage=fresh)
    assert "n2" not in {h.report_id for h in hits}
    expected = _expected(note_index, poly, query)
    assert [p for p, _ in _found(hits)] == [p for p, _ in expected]
    np.testing.assert_allclose([s for _, s in _found(hits)], [s for _, s in expected], atol=2e-3)
    assert os.stat(path).st_mtime_ns == before  # the cache holds the deleted rows: nothing to encode again


@pytest.mark.parametrize("damage", ["shape", "garbage", "nan", "other-segment"])
def test_a_bad_cache_file_is_encoded_again(note_index, poly_dir, poly, damage):
    """A cache file that cannot be trusted is rebuilt, never scored."""
    from radsift.index.poly_codes import windows_path
    from radsift.search.passages import search_passages

    stage = _stage(poly_dir, poly)
    good = _found(search_passages(note_index, "gout treatment", k=20, mode="dense", first_stage=stage))
    (_, path), = _cache_files(note_index).items()
    codes = np.load(path)
    if damage == "shape":      # one window fewer: m, dim right
        np.save(path, codes[:-1])
    elif damage == "garbage":
        path.write_bytes(b"not an array")
    elif damage == "nan":
        codes[0, 0, 0] = np.nan
        np.save(path, codes)
    else:                      # same shape, but built from a segment of that name that is gone (a rollback)
        side = windows_path(path)
        with np.load(side) as data:
            meta, owner = json.loads(str(data["meta"])), data["owner"]
        meta["store_sha256"] = "0" * 64
        np.savez(side, meta=np.array(json.dumps(meta)), owner=owner)
    said: list[str] = []
    again = _found(search_passages(note_index, "gout treatment", k=20, mode="dense",
                                   first_stage=_stage(poly_dir, poly, said)))
    assert said and "encoding" in said[0]
    assert [p for p, _ in again] == [p for p, _ in good]
    np.testing.assert_allclose([s for _, s in again], [s for _, s in good], atol=1e-6)
    assert np.load(path).shape == codes.shape


def test_hybrid_fuses_the_poly_encoder_with_bm25_and_a_reranker_on_top(note_index, poly_dir, poly):
    from radsift.search.passages import PolyReranker, search_passages

    stage = _stage(poly_dir, poly)
    hybrid = search_passages(note_index, "gout | treatment", k=3, mode="hybrid", first_stage=stage)
    assert hybrid[0].report_id == "n2"
    reranker = PolyReranker(poly_dir)
    reranked = search_passages(note_index, "colchicine", k=3, mode="dense", first_stage=stage, rerank=5,
                               reranker=reranker)
    assert reranked and reranked[0].score == pytest.approx(
        float(poly.score_texts("colchicine", [reranked[0].text])[0]), abs=1e-4)
    with pytest.raises(ConfigError, match="bm25"):
        search_passages(note_index, "gout | treatment", k=3, mode="bm25", first_stage=stage)


def test_search_cli_first_stage_and_its_errors(note_index, poly_dir, poly, monkeypatch):
    """(d) --first-stage, and what is refused: another kind of folder, no such folder, no --unit passage."""
    from typer.testing import CliRunner

    from radsift.cli import app
    from radsift.models.encoder import resolve_model_path
    from radsift.models.hashing import HashingEncoder
    from radsift.search.passages import search_passages

    monkeypatch.setattr("radsift.models.encoder.Encoder.load",
                        classmethod(lambda cls, model=None, **kw: HashingEncoder(model)))
    runner = CliRunner()
    res = runner.invoke(app, ["search", str(note_index.path), "gout | treatment", "--unit", "passage",
                              "--first-stage", str(poly_dir), "--mode", "dense", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    expected = search_passages(note_index, "gout | treatment", k=10, mode="dense", first_stage=_stage(poly_dir, poly))
    assert [(h["report_id"], h["heading"]) for h in data["hits"]] == [(h.report_id, h.heading) for h in expected]
    res = runner.invoke(app, ["search", str(note_index.path), "gout", "--unit", "passage", "--first-stage",
                              str(resolve_model_path(None))])
    assert res.exit_code != 0 and "bi-encoder" in res.output and "first stage" in res.output
    res = runner.invoke(app, ["search", str(note_index.path), "gout", "--unit", "passage", "--first-stage",
                              str(note_index.path / "nowhere")])
    assert res.exit_code != 0 and "no such folder" in res.output
    res = runner.invoke(app, ["search", str(note_index.path), "gout", "--first-stage", str(poly_dir)])
    assert res.exit_code != 0 and "--unit passage" in res.output
    res = runner.invoke(app, ["search", str(note_index.path), "gout", "--unit", "passage", "--first-stage",
                              str(poly_dir), "--mode", "bm25"])
    assert res.exit_code != 0 and "bm25" in res.output


def test_index_add_poly_encodes_ahead(note_index, poly_dir, monkeypatch):
    """``index add --poly DIR`` leaves the new segment's codes cached (and checks the folder first)."""
    from typer.testing import CliRunner

    from radsift.cli import app
    from radsift.models.hashing import HashingEncoder

    monkeypatch.setattr("radsift.models.encoder.Encoder.load",
                        classmethod(lambda cls, model=None, **kw: HashingEncoder(model)))
    monkeypatch.setattr("radsift.models.onnx_encoder.load_build_encoder",
                        lambda kind, model, **kw: HashingEncoder(model))
    corpus = note_index.path.parent / "new.jsonl"
    (new,) = _reports([_NEW])
    corpus.write_text(json.dumps({"id": new.id, "sections": dict(new.sections)}) + "\n", encoding="utf-8")
    runner = CliRunner()
    res = runner.invoke(app, ["index", "add", str(note_index.path), str(corpus), "--poly", str(note_index.path)])
    assert res.exit_code != 0 and "poly-encoder" in res.output
    assert len(note_index.store.segments) == 1 and not _cache_files(note_index)   # nothing was written
    res = runner.invoke(app, ["index", "add", str(note_index.path), str(corpus), "--poly", str(poly_dir)])
    assert res.exit_code == 0, res.output
    assert sorted(_cache_files(note_index)) == ["seg-000001", "seg-000002"]


def test_api_passages_with_the_server_first_stage(note_index, poly_dir, poly):
    """(e) the first stage is the server's (create_app / radsift serve --passage-first-stage), never a request's."""
    from fastapi.testclient import TestClient

    from radsift.search.passages import search_passages
    from radsift.serve import create_app

    stage = _stage(poly_dir, poly)
    client = TestClient(create_app(note_index, passage_first_stage=stage))
    res = client.get("/api/passages", params={"q": "asthma | treatment", "mode": "dense", "k": 3})
    assert res.status_code == 200, res.text
    data = res.json()
    assert data["first_stage"] == f"poly-encoder {poly_dir.name}"
    expected = search_passages(note_index, "asthma | treatment", k=3, mode="dense", first_stage=stage)
    assert [(h["report_id"], h["heading"]) for h in data["hits"]] == [(h.report_id, h.heading) for h in expected]
    assert data["hits"][0]["score"] == pytest.approx(expected[0].score)
    res = client.get("/api/passages", params={"q": "asthma", "first_stage": str(poly_dir)})
    assert res.status_code == 422 and "unknown parameter" in res.text
    res = client.get("/api/passages", params={"q": "asthma | treatment", "mode": "bm25"})
    assert res.status_code == 422 and "bm25" in res.text
    plain = TestClient(create_app(note_index)).get("/api/passages", params={"q": "asthma | treatment", "mode": "dense"})
    assert plain.status_code == 200 and plain.json()["first_stage"] == "index"
    with pytest.raises(ConfigError, match="bi-encoder"):
        create_app(note_index, passage_first_stage=note_index.path.parent / "model")


def test_api_passages_rerank_with_a_poly_encoder_reranker(note_index, poly_dir):
    """A poly-encoder folder given as the server's reranker re-scores /api/passages' head (as the CLI's --reranker)."""
    from fastapi.testclient import TestClient

    from radsift.search.engine import Index
    from radsift.search.passages import PolyReranker, search_passages
    from radsift.serve import create_app

    idx = Index.open(note_index.path, reranker=poly_dir)
    assert isinstance(idx.reranker, PolyReranker)
    client = TestClient(create_app(idx))
    res = client.get("/api/passages", params={"q": "asthma | treatment", "mode": "bm25", "k": 3, "rerank": 5})
    assert res.status_code == 200, res.text
    expected = search_passages(note_index, "asthma | treatment", k=3, mode="bm25", rerank=5,
                               reranker=PolyReranker(poly_dir))
    assert [(h["report_id"], h["heading"]) for h in res.json()["hits"]] == [(h.report_id, h.heading) for h in expected]
    assert res.json()["hits"][0]["score"] == pytest.approx(expected[0].score)
