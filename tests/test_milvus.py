"""The Milvus vector backend against milvus-lite (a local .db file): parity with exact search, filters
pushed down on every backend, generations, the CLI, and the bad inputs (missing extra, a URI that does
not answer, an index built for another backend)."""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import sys

import numpy as np
import pytest

from radsift.errors import ConfigError
from radsift.index.backends import create_backend
from radsift.index.backends import hnsw as hnsw_mod
from radsift.index.backends import milvus as mv
from radsift.index.backends import milvus_client as mvc
from radsift.index.backends import milvus_push as mvp
from radsift.index.backends.numpy_backend import NumpyBackend
from radsift.search.query import Filter

HAVE_LITE = importlib.util.find_spec("pymilvus") is not None and importlib.util.find_spec("milvus_lite") is not None
needs_lite = pytest.mark.skipif(not HAVE_LITE, reason="pymilvus/milvus-lite not installed: the Milvus tests need "
                                                      "pip install 'radsift[milvus]'")

WORDS = ["pneumothorax", "effusion", "consolidation", "atelectasis", "cardiomegaly", "edema", "nodule", "fracture",
         "opacity", "emphysema", "granuloma", "scoliosis"]
SIDES = ["left", "right", "bilateral", "basilar", "apical"]
SITES = ["North", "south", "EAST", "north"]


def reports(n: int = 300, start: int = 0):
    from radsift.records import Report

    out = []
    for i in range(start, start + n):
        findings = (f"There is {SIDES[i % 5]} {WORDS[i % 12]} in zone {i % 7}. Mild {WORDS[(i * 5) % 12]} "
                    f"near {SIDES[(i * 3) % 5]} {WORDS[(i * 7) % 11]}.")
        out.append(Report(f"r{i}", {"findings": findings, "impression": f"{WORDS[(i * 5) % 12].capitalize()} {i % 9}."},
                          {"site": SITES[i % 4], "indication": f"Cough and fever, case {i % 4}" if i % 2 else "Trauma"}))
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """An index of 300 reports (hashing encoder) pushed to its default milvus-lite file."""
    if not HAVE_LITE:
        pytest.skip("pymilvus/milvus-lite not installed: pip install 'radsift[milvus]'")
    from radsift.index import build_index
    from radsift.models.hashing import HashingEncoder

    root = tmp_path_factory.mktemp("milvus")
    enc = HashingEncoder(root / "model")
    build_index(root / "idx", reports(), encoder=enc, progress=False)
    side = mvp.push_generation(root / "idx")
    return root / "idx", enc, side


def open_index(idx, enc, backend, monkeypatch=None, candidates=40):
    from radsift.index.backends import placement
    from radsift.search import Index

    if monkeypatch is not None:  # few candidates, so that the approximate path (not exact scoring) is tested
        real = placement.create_backend
        monkeypatch.setattr(placement, "create_backend",
                            lambda name, vectors, **kw: real(name, vectors, candidates=candidates, **kw)
                            if name in ("hnsw", "milvus") else real(name, vectors, **kw))
    return Index.open(idx, encoder=enc, backend=backend)


# -- the expression ---------------------------------------------------------------------------------
def test_expression_translates_target_and_filters():
    fields = {"site": "m0", "indication": "m1"}
    expr, complete = mv.expression(2, [Filter("site", "North"), Filter("site", "EAST"), Filter("indication", "CoUgh", "~")],
                                   fields)
    assert expr == 'section == 2 and (m0 == "north" or m0 == "east") and m1 like "%cough%"'
    assert complete
    # a key without a field, or a value that would need escaping, is left to the mask
    expr, complete = mv.expression(None, [Filter("site", '5" or 1'), Filter("other", "x")], fields)
    assert expr is None and not complete
    assert mv.expression(None, [], fields) == (None, True)
    assert mvc.ascii_lower("ÉCHO Abc") == "Écho abc"  # as SQLite's lower(): ASCII only


# -- search parity and filters ----------------------------------------------------------------------
@needs_lite
def test_side_file_and_collections(built):
    idx, _, side = built
    info = json.loads(side.read_text())
    assert info["uri"] == str(mvc.DEFAULT_LITE)  # inside the index folder: recorded relative to it
    assert set(info["collections"]) == {"sentence", "section"}
    assert set(info["fields"]) == {"site", "indication"}
    client = mvc.connect(str(idx / mvc.DEFAULT_LITE))
    for kind, name in info["collections"].items():
        assert name.startswith(mvc.collection_prefix(idx)) and "gen_000001" in name
        assert client.get_collection_stats(name)["row_count"] == info["rows"][kind] > 0


@needs_lite
def test_backend_top_matches_exact(built):
    from radsift.index.reader import IndexStore

    idx, enc, _ = built
    store = IndexStore.open(idx)
    x = store.units("sentence").vectors
    b = create_backend("milvus", x, milvus=mv.MilvusPlace(idx, store.gen_dir, "sentence"), candidates=50)
    assert isinstance(b, mv.MilvusBackend) and b.size == x.shape[0] > 50
    exact = NumpyBackend(x)
    for q in ("left pneumothorax", "mild edema", "fracture zone 3"):
        v = enc.encode_query(q)
        rows, vals = b.top(v, 10)
        e_rows, e_vals = exact.top(v, 10)
        np.testing.assert_allclose(vals, e_vals, atol=1e-5)  # same scores (ties may order rows differently)
        np.testing.assert_allclose(vals, np.asarray(x[rows]) @ v, atol=1e-5)
        s = b.scores(v)
        assert s.shape == (x.shape[0],)
        cand = s > np.median(s)
        np.testing.assert_allclose(s[cand], (np.asarray(x) @ v)[cand], atol=1e-5)
    store.close()


@needs_lite
def test_every_copy_of_a_duplicate_vector_is_a_candidate(built):
    """Reports repeat sentences: bit-identical vectors form groups, and every copy of a group found scores."""
    from radsift.index.reader import IndexStore

    idx, _, side = built
    info = json.loads(side.read_text())
    assert info["dups"]["section"] and (idx / mvc.SIDE_DIR / info["dups"]["section"]).exists()
    store = IndexStore.open(idx)
    x = np.asarray(store.units("section").vectors)
    b = create_backend("milvus", x, milvus=mv.MilvusPlace(idx, store.gen_dir, "section"), candidates=5)
    assert b.groups is not None and b.copies_partition
    # the copies live in their own partition (the distinct rows' HNSW graph stays whole)
    assert mvc.COPIES in b.client.list_partitions(b.collection)
    sizes = np.diff(b.groups[1])
    big = int(np.argmax(sizes))
    copies = b.groups[0][b.groups[1][big]:b.groups[1][big + 1]]
    assert copies.size > b.candidates  # more copies than Milvus is asked for
    s = b.scores(x[copies[0]])
    np.testing.assert_allclose(s[copies], 1.0, atol=1e-5)  # all of them exactly scored, none at the floor
    rows, vals = b.top(x[copies[0]], 3)
    np.testing.assert_allclose(vals, 1.0, atol=1e-5)
    store.close()


@needs_lite
@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_engine_parity_with_exact(built, monkeypatch, mode):
    """Milvus through the engine (40 candidates of ~800 sentences) gives the top scores of exact search."""
    idx, enc, _ = built
    exact = open_index(idx, enc, "numpy")
    milvus = open_index(idx, enc, "milvus", monkeypatch)
    for query in ("left pneumothorax", "no pleural effusion", "bilateral opacity"):
        for level in ("sentence", "report"):
            a = milvus.search(query, k=5, mode=mode, negation="ignore", level=level)
            e = exact.search(query, k=5, mode=mode, negation="ignore", level=level)
            assert len(a) == 5 and (level == "sentence" or len({h.report_id for h in a}) == 5)
            assert [h.score for h in a] == pytest.approx([h.score for h in e], abs=1e-5)
    backend = milvus._backend(milvus.store, "sentence")
    assert isinstance(backend, mv.MilvusBackend) and backend.stats["searches"] > 0


BACKENDS = ["numpy", pytest.param("hnsw", marks=pytest.mark.skipif(not hnsw_mod.available(), reason="FAISS not "
                                                                   "installed: pip install 'radsift[scale]'")), "milvus"]
FILTERS = [
    ({"where": ["site=north"]}, lambda r: r.metadata["site"] == "north"),  # exact: not 'North'
    ({"where": ["site=North"]}, lambda r: r.metadata["site"] == "North"),
    ({"where": ["indication~COUGH", "site=EAST"]}, lambda r: "cough" in r.metadata["indication"].lower()
     and r.metadata["site"] == "EAST"),
    ({"where": ["indication~case 3", "indication=Trauma"]}, lambda r: r.metadata["indication"] == "Trauma"
     or "case 3" in r.metadata["indication"]),
    ({"target": "impression", "where": ["site=south"]}, lambda r: r.metadata["site"] == "south"),
]


@needs_lite
@pytest.mark.parametrize("backend", BACKENDS)
def test_filters_on_every_backend(built, monkeypatch, backend):
    """Every hit matches the filters, and the filtered top scores are exact search's (mask on the exact side)."""
    idx, enc, _ = built
    exact = open_index(idx, enc, "numpy")
    index = open_index(idx, enc, backend, monkeypatch, candidates=20)
    for opts, ok in FILTERS:
        for mode in ("dense", "hybrid"):
            hits = index.search("right effusion", k=8, mode=mode, negation="ignore", level="sentence", **opts)
            want = exact.search("right effusion", k=8, mode=mode, negation="ignore", level="sentence", **opts)
            assert len(hits) == len(want)
            assert all(ok(index.get_report(h.report_id)) for h in hits), (backend, opts)
            if "target" in opts:
                assert {h.section for h in hits} == {"impression"}
            if mode == "dense":  # the exact top scores (hybrid: an approximate backend's candidates come from
                # the mask, so its min-max scale differs from exact search's over every unit; see hnsw)
                assert [h.score for h in hits] == pytest.approx([h.score for h in want], abs=1e-5), (backend, opts)
    if backend == "milvus":
        b = index._backend(index.store, "sentence")
        # pushed down: Milvus returned only rows the filters keep (the case-insensitive exact filter
        # 'site=north' is the one over-fetch: 'North' rows come back and the mask drops them)
        assert b.stats["pushed"] > 0 and b.stats["overfetch"] > 0
        before = dict(b.stats)
        index.search("right effusion", k=8, mode="dense", negation="ignore", level="sentence", where=["site=EAST"])
        assert b.stats["overfetch"] == before["overfetch"] and b.stats["pushed"] == before["pushed"] + 1


@needs_lite
def test_selective_mask_is_scored_exactly(built, monkeypatch):
    """A filter the expression cannot carry (a value with '%') is left to the mask; a selective mask is
    answered exactly from the local vectors."""
    idx, enc, _ = built
    index = open_index(idx, enc, "milvus", monkeypatch, candidates=20)
    hits = index.search("effusion", k=5, mode="dense", negation="ignore", where=["indication~50%"])
    assert len(hits) == 0
    b = index._backend(index.store, "sentence")
    rows = b.top(enc.encode_query("effusion"), 5, np.arange(b.size) % 97 == 0)[0]
    assert len(rows) == 5 and np.all(rows % 97 == 0) and b.stats["exact"] == 1


# -- generations, auto, errors ---------------------------------------------------------------------
@needs_lite
def test_add_pushes_new_generation_and_auto_finds_it(tmp_path, monkeypatch):
    from radsift.cli import app
    from radsift.index import add_to_index, build_index
    from radsift.index.reader import IndexStore
    from radsift.models.hashing import HashingEncoder

    enc = HashingEncoder(tmp_path / "model")
    idx = tmp_path / "idx"
    build_index(idx, reports(60), encoder=enc, progress=False)
    uri = str(tmp_path / "elsewhere.db")
    mvp.push_generation(idx, uri)
    first = mvc.read_side(idx, IndexStore.open(idx).gen_dir)
    assert first["uri"] == uri
    add_to_index(idx, reports(30, start=60), encoder=enc)
    from radsift.index.derived import derive as _graphs

    _graphs(idx, "auto")  # auto on an index pushed before: pushes the new generation to the same URI
    store = IndexStore.open(idx)
    second = mvc.read_side(idx, store.gen_dir)
    assert second["uri"] == uri and second["collections"] != first["collections"]
    client = mvc.connect(uri)
    names = client.list_collections()
    assert set(second["collections"].values()) <= set(names)
    assert set(first["collections"].values()) <= set(names)  # the previous generation is kept for rollback
    index = open_index(idx, enc, "auto")
    assert isinstance(index._backend(index.store, "sentence"), mv.MilvusBackend)
    assert len(index.search("left pneumothorax", k=3, mode="dense")) == 3
    # once the old generation's folder is gone, its collections and side file go
    import shutil

    shutil.rmtree(idx / first["generation"])
    assert sorted(mvp.drop_gone(idx, client)) == sorted(first["collections"].values())
    assert not (idx / mvc.SIDE_DIR / f"{first['generation']}.json").exists()
    store.close()
    assert app is not None


@needs_lite
def test_cli_build_search_with_milvus(tmp_path, hashing_model):
    from typer.testing import CliRunner

    from radsift.cli import app

    folder = hashing_model
    corpus = tmp_path / "reports.csv"
    corpus.write_text("uid,site,findings\n" + "".join(f'{r.id},{r.metadata["site"]},"{r.sections["findings"]}"\n'
                                                         for r in reports(40)))
    idx = tmp_path / "idx"
    mapping = ["--format", "csv", "--id-column", "uid", "--section", "findings=findings"]
    runner = CliRunner()
    res = runner.invoke(app, ["index", "build", str(idx), str(corpus), *mapping, "--model", str(folder),
                              "--backend", "milvus"])
    assert res.exit_code == 0, res.output
    assert "Milvus:" in res.output and (idx / mvc.DEFAULT_LITE).is_dir()
    res = runner.invoke(app, ["search", str(idx), "left pneumothorax", "--json", "--mode", "dense", "--backend",
                              "milvus", "--where", "site=EAST", "-k", "3"])
    assert res.exit_code == 0, res.output
    hits = json.loads(res.output)["hits"]
    assert len(hits) == 3 and {h["metadata"]["site"] for h in hits} == {"EAST"}


def test_missing_extra_names_it(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pymilvus", None)  # `import pymilvus` now raises ImportError
    assert not mvc.available()
    x = np.eye(4, dtype=np.float32)
    with pytest.raises(ConfigError, match=r"pip install 'radsift\[milvus\]'") as err:
        create_backend("milvus", x, milvus=mv.MilvusPlace(tmp_path, tmp_path / "gen-000001", "sentence"))
    assert isinstance(err.value, ImportError)
    with pytest.raises(ConfigError, match=r"radsift\[milvus\]"):
        mvc.connect("http://127.0.0.1:9")


@needs_lite
def test_uri_that_does_not_answer_writes_nothing(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from radsift.cli import app

    corpus = tmp_path / "reports.csv"
    corpus.write_text('uid,findings\n1,"Left pneumothorax."\n')
    idx = tmp_path / "idx"
    res = CliRunner().invoke(app, ["index", "build", str(idx), str(corpus), "--format", "csv", "--id-column", "uid",
                                   "--section", "findings=findings", "--backend", "milvus",
                                   "--milvus-uri", "http://127.0.0.1:9"])
    assert res.exit_code != 0
    assert "http://127.0.0.1:9" in res.output and "does not answer" in res.output
    assert not idx.exists()
    with pytest.raises(ConfigError, match="must end in .db"):
        mvc.resolve_uri(idx, str(tmp_path / "vectors.sqlite"))


@needs_lite
def test_lite_file_held_by_another_process(tmp_path):
    path = tmp_path / "held.db"
    path.mkdir()
    fd = os.open(path / "LOCK", os.O_CREAT | os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a running `radsift serve` holds it
    try:
        with pytest.raises(mvc.MilvusUnavailableError, match="one process at a time"):
            mvc.connect(str(path))
    finally:
        os.close(fd)


@needs_lite
def test_index_built_for_another_backend(tmp_path):
    from radsift.index import build_index
    from radsift.models.hashing import HashingEncoder
    from radsift.search import Index

    enc = HashingEncoder(tmp_path / "model")
    build_index(tmp_path / "idx", reports(20), encoder=enc, progress=False)
    index = Index.open(tmp_path / "idx", encoder=enc, backend="milvus")
    with pytest.raises(ConfigError, match="no vectors in Milvus.*radsift index push"):
        index.search("left pneumothorax", k=3, mode="dense")
    assert isinstance(Index.open(tmp_path / "idx", encoder=enc)._backend(index.store, "sentence"), NumpyBackend)
    # the documented conversion: `radsift index push` copies the vectors; then milvus (and auto) search there
    from typer.testing import CliRunner

    from radsift.cli import app

    res = CliRunner().invoke(app, ["index", "push", str(tmp_path / "idx"), "--milvus-uri", str(tmp_path / "v.db")])
    assert res.exit_code == 0, res.output
    converted = Index.open(tmp_path / "idx", encoder=enc, backend="milvus")
    assert isinstance(converted._backend(converted.store, "sentence"), mv.MilvusBackend)
    assert len(converted.search("left pneumothorax", k=3, mode="dense")) == 3
    # the other way round is always possible: a Milvus index keeps its float32 vectors (numpy, hnsw read them)
    exact = Index.open(tmp_path / "idx", encoder=enc, backend="numpy")
    assert len(exact.search("left pneumothorax", k=3, mode="dense")) == 3
