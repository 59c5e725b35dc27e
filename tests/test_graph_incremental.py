"""HNSW graphs extended on add (radsift.index.graphs): grown from the previous generation's graph, never
wrong about deleted reports, rebuilt where extending is not possible."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from radsift.index import IndexStore, add_to_index, build_index, delete_from_index, optimize_index
from radsift.index.backends import duplicates
from radsift.index.backends import hnsw as hnsw_mod
from radsift.index.graphs import GRAPH_DIR, build_graphs, graph_path
from radsift.index.lifecycle import rollback
from radsift.models.hashing import HashingEncoder
from radsift.records import Report

needs_faiss = pytest.mark.skipif(not hnsw_mod.available(),
                                 reason="FAISS not importable: the HNSW tests need pip install 'radsift[scale]'")
pytestmark = needs_faiss

VOCAB = [f"term{i}" for i in range(300)]
KINDS = ("sentence", "section")


def _report(i: int, version: int = 0) -> Report:
    """Three findings sentences of random terms (distinct from other reports') and one boilerplate impression."""
    rng = np.random.default_rng([i, version])
    findings = " ".join(" ".join(rng.choice(VOCAB, 5)) + "." for _ in range(3))
    return Report(f"r{i}", {"findings": findings, "impression": "No acute disease."}, {})


@pytest.fixture()
def enc(tmp_path):
    return HashingEncoder(tmp_path / "model")


@pytest.fixture()
def indexed(tmp_path, enc):
    """An index of 120 reports and its HNSW graphs."""
    path = tmp_path / "idx"
    build_index(path, [_report(i) for i in range(120)], encoder=enc, progress=False)
    said: list[str] = []
    build_graphs(path, "hnsw", say=said.append)
    assert [s.split(" the ")[0] for s in said] == ["building"] * 2
    return path


def _graph(path: Path, kind: str = "sentence") -> tuple[hnsw_mod.HnswBackend, IndexStore]:
    store = IndexStore.open(path)
    return hnsw_mod.HnswBackend.open(graph_path(path, store.gen_dir, kind), store.units(kind).vectors), store


def _distinct(vectors) -> int:
    return np.unique(np.asarray(vectors).view(np.int32), axis=0).shape[0]


def _files(path: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((path / GRAPH_DIR).iterdir())}


def _extend(path: Path) -> list[str]:
    said: list[str] = []
    build_graphs(path, "hnsw", say=said.append)
    return said


def _no_build(*args, **kwargs):
    raise AssertionError("the graph was built from scratch")


def test_an_add_extends_the_graph_instead_of_building_it(indexed, enc, monkeypatch):
    path = indexed
    before = {}
    for kind in KINDS:
        graph, store = _graph(path, kind)
        before[kind] = int(graph.index.ntotal)
        store.close()
    monkeypatch.setattr(hnsw_mod.HnswBackend, "build", _no_build)
    copy = Report("copy-of-r0", dict(_report(0).sections), {})  # rows bit-identical to r0's
    add_to_index(path, [_report(i) for i in range(120, 130)] + [copy], encoder=enc, progress=False)
    said = _extend(path)
    assert len(said) == 2 and all(s.startswith("extending the HNSW graph") for s in said), said
    assert "with 44 new rows" in said[0] and "with 22 new rows" in said[1]
    for kind in KINDS:
        graph, store = _graph(path, kind)
        x = np.asarray(store.units(kind).vectors)
        start = store.segments[0].n_units(kind)
        old = {r.tobytes() for r in x[:start]}
        new = {r.tobytes() for r in x[start:]} - old
        assert graph.index.ntotal == before[kind] + len(new) == _distinct(x)
        assert graph.live_nodes == graph.index.ntotal
        store.close()
    assert sorted(_files(path)) == sorted(f"gen-000002.{kind}.faiss{ext}" for kind in KINDS
                                          for ext in ("", ".dups.npz", ".layout.npz", ".files.json"))


def _searches(path: Path, enc, queries, monkeypatch, candidates: int = 100,
              levels=("report", "sentence")) -> tuple[list, list]:
    """Dense top-10 (report id, score) of report and sentence search through the engine, on the live
    graph and on exact numpy search."""
    from radsift.index.backends import placement
    from radsift.search import Index

    real = placement.create_backend
    monkeypatch.setattr(placement, "create_backend", lambda name, vectors, **o: real(
        name, vectors, **({"candidates": candidates} if name == "hnsw" else {}), **o))
    approx, exact = Index.open(path, encoder=enc, backend="hnsw"), Index.open(path, encoder=enc, backend="numpy")
    graph = approx._backend(approx.store, "sentence")
    assert isinstance(graph, hnsw_mod.HnswBackend)
    assert graph.path == graph_path(path, approx.store.gen_dir, "sentence")  # the saved graph, not one built now
    assert graph.size > candidates  # scored through the graph, not exactly
    out = []
    for index in (approx, exact):
        out.append([[(h.report_id, round(h.score, 5)) for h in index.search(q, k=10, mode="dense", negation="ignore",
                                                                             level=level)]
                    for level in levels for q in queries])
    return out[0], out[1]


def _same(approx: list, exact: list) -> bool:
    """The same scores, and the same reports above the 10th score (reports tied with it may differ)."""
    return all([s for _, s in a] == [s for _, s in e] and
               {r for r, s in a if s > a[-1][1]} == {r for r, s in e if s > e[-1][1]} for a, e in zip(approx, exact))


def test_search_on_an_extended_graph_equals_exact_search(indexed, enc, monkeypatch):
    path = indexed
    add_to_index(path, [_report(i) for i in range(120, 135)], encoder=enc, progress=False)
    assert _extend(path)[0].startswith("extending")
    queries = [_report(i).sections["findings"].split(".")[j] for i in (0, 7, 121, 130) for j in (0, 2)]
    queries += ["term1 term2 term3", "term250 term17"]
    approx, exact = _searches(path, enc, queries, monkeypatch)
    assert _same(approx, exact) and all(len(hits) == 10 for hits in approx)


def test_deleted_and_replaced_reports_never_come_back(indexed, enc, monkeypatch):
    path = indexed
    gone = [f"r{i}" for i in range(0, 16, 2)]
    delete_from_index(path, gone)
    add_to_index(path, [_report(i, version=1) for i in (1, 3, 5)], encoder=enc, progress=False, replace=True)
    said = _extend(path)
    assert all(s.startswith("extending") and "deleted rows dropped" in s for s in said), said
    delete_from_index(path, ["r5"])  # the new version too: the graph's last nodes are empty now
    gone.append("r5")
    assert all(s.startswith("extending") for s in _extend(path))
    old_text = [s for i in list(range(0, 16, 2)) + [1, 3, 5] for s in _report(i).sections["findings"].split(".")[:2]]
    approx, exact = _searches(path, enc, old_text, monkeypatch)
    assert _same(approx, exact)
    assert all(len(hits) == 10 and not {rid for rid, _ in hits} & set(gone) for hits in approx)
    graph, store = _graph(path)
    assert graph.live_nodes < graph.index.ntotal  # the deleted sentences' nodes stay, empty
    n = graph.size
    order, offsets = graph.groups
    for text in old_text[:4]:
        q = enc.encode_query(text)
        _, ids = graph.index.search(q[None, :], 1)  # the raw graph still holds the deleted sentence's node ...
        assert offsets[ids[0, 0] + 1] == offsets[ids[0, 0]]  # ... and it holds no row
        rows, _ = graph.top(q, n)  # every live row, none lost to an empty node
        assert sorted(rows.tolist()) == list(range(n))
        rows, vals = graph.top(q, 10)
        assert len(rows) == 10 and vals[0] < 0.999
        np.testing.assert_allclose(vals, np.asarray(store.units("sentence").vectors[rows]) @ q, atol=1e-5)
        mask = np.ones(n, dtype=bool)
        mask[::7] = False  # few rows masked out: searched through the graph, filtered to the masked nodes
        exact_before = graph.stats["exact"]
        rows, _ = graph.top(q, 10, mask)
        assert len(rows) == 10 and mask[rows].all() and graph.stats["exact"] == exact_before
    store.close()


def test_a_bit_identical_new_row_joins_its_node_even_an_emptied_one(indexed, enc):
    path = indexed
    graph, store = _graph(path)
    nodes = int(graph.index.ntotal)
    store.close()
    add_to_index(path, [Report("twin", dict(_report(3).sections), {})], encoder=enc, progress=False)
    said = _extend(path)
    assert "with 4 new rows (0 new nodes)" in said[0], said
    graph, store = _graph(path)
    assert graph.index.ntotal == nodes
    node = duplicates.nodes_of(graph.groups, graph.size)
    order, offsets = graph.groups
    x = np.asarray(store.units("sentence").vectors)
    start = store.segments[0].n_units("sentence")
    for row in range(start, graph.size):  # the twin's rows: each in a node with r3's (or the boilerplate's) rows
        members = order[offsets[node[row]]:offsets[node[row] + 1]]
        assert members.min() < start and (x[members] == x[row]).all()
    store.close()
    add_to_index(path, [_report(200)], encoder=enc, progress=False)
    assert "with 4 new rows (3 new nodes)" in _extend(path)[0]
    # r5 (first segment) and r200 (a later one) deleted: their own nodes empty; the same texts added
    # again fill them (checked against the deleted rows, still in their segments' files), no new node.
    delete_from_index(path, ["r5", "r200"])
    assert "0 new nodes, 8 deleted rows dropped" in _extend(path)[0]
    graph, store = _graph(path)
    assert graph.live_nodes == nodes + 3 - 6
    store.close()
    add_to_index(path, [Report(f"r{i}-again", dict(_report(i).sections), {}) for i in (5, 200)], encoder=enc,
                 progress=False)
    assert "with 8 new rows (0 new nodes)" in _extend(path)[0]
    graph, store = _graph(path)
    assert graph.index.ntotal == graph.live_nodes == nodes + 3
    store.close()


def test_an_add_that_more_than_doubles_the_graph_builds_it(indexed, enc):
    add_to_index(indexed, [_report(i) for i in range(120, 250)], encoder=enc, progress=False)
    said = _extend(indexed)
    assert all(s.startswith("building") and "more than double" in s for s in said), said


def test_optimize_rollback_and_many_deletions_build_from_scratch(indexed, enc, monkeypatch):
    from radsift.cli import app
    from radsift.index import graphs

    path = indexed
    add_to_index(path, [_report(i) for i in range(120, 125)], encoder=enc, progress=False)
    delete_from_index(path, ["r1", "r2"])
    assert all(s.startswith("extending") for s in _extend(path))
    # optimize: one new segment
    optimize_index(path)
    said = _extend(path)
    assert all(s.startswith("building") and "optimize" in s for s in said), said
    graph, store = _graph(path)
    assert graph.live_nodes == graph.index.ntotal == _distinct(store.units("sentence").vectors)
    store.close()
    # the command asks for a fresh graph even when extending would do
    asked = []
    monkeypatch.setattr(graphs, "build_graphs", lambda *a, **kw: asked.append(kw) or [])
    delete_from_index(path, ["r3"])
    res = CliRunner().invoke(app, ["index", "optimize", str(path), "--backend", "hnsw"])
    assert res.exit_code == 0, res.output
    assert asked and asked[0]["extend"] is False
    monkeypatch.undo()
    _extend(path)
    # rollback: a report deleted in the graph's generation is live again
    delete_from_index(path, ["r4"])
    assert _extend(path)[0].startswith("extending")
    rollback(path)
    add_to_index(path, [_report(130)], encoder=enc, progress=False)
    said = _extend(path)
    assert all(s.startswith("building") and "rollback" in s for s in said), said
    graph, store = _graph(path)
    assert graph.live_nodes == graph.index.ntotal and graph.size == len(store.units("sentence").report_row)
    store.close()
    # more than MAX_EMPTY of the nodes would be empty
    delete_from_index(path, [f"r{i}" for i in range(20, 60)])
    said = _extend(path)
    assert all(s.startswith("building") and "only deleted rows" in s for s in said), said
    graph, store = _graph(path)
    assert graph.live_nodes == graph.index.ntotal
    store.close()


def test_a_crash_while_extending_leaves_the_previous_graph(indexed, enc, monkeypatch):
    from radsift.index.backends.numpy_backend import NumpyBackend
    from radsift.search import Index

    path = indexed
    before = _files(path)
    add_to_index(path, [_report(i) for i in range(120, 130)], encoder=enc, progress=False)
    real_add = hnsw_mod._add

    def crash(*args, **kwargs):
        real_add(*args, **kwargs)  # the in-memory copy grown, then the process dies
        raise KeyboardInterrupt("injected")

    monkeypatch.setattr(hnsw_mod, "_add", crash)
    with pytest.raises(KeyboardInterrupt):
        build_graphs(path, "hnsw")
    assert _files(path) == before  # the previous graph, its groups and its layout as they were
    monkeypatch.setenv("RADSIFT_HNSW_MIN_ROWS", "1")
    index = Index.open(path, encoder=enc)  # auto: this generation has no graph yet, so search stays exact
    hits = index.search("term5 term6 term7", k=10, mode="dense")
    assert isinstance(index._backend(index.store, "sentence"), NumpyBackend) and len(hits) == 10
    monkeypatch.setattr(hnsw_mod, "_add", real_add)
    assert all(s.startswith("extending") for s in _extend(path))
    assert sorted(_files(path)) == sorted(f"gen-000002.{kind}.faiss{ext}" for kind in KINDS
                                          for ext in ("", ".dups.npz", ".layout.npz", ".files.json"))
