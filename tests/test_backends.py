"""Vector backends: the factory (names, ``auto``, the missing extra) and the HNSW backend against exact search."""

from __future__ import annotations

import logging
import sys

import numpy as np
import pytest

from radsift.errors import ConfigError, IndexDamagedError
from radsift.index.backends import create_backend, hnsw_min_rows, resolve_backend
from radsift.index.backends import duplicates
from radsift.index.backends import hnsw as hnsw_mod
from radsift.index.backends.factory import HNSW_MIN_ROWS
from radsift.index.backends.numpy_backend import NumpyBackend

needs_faiss = pytest.mark.skipif(not hnsw_mod.available(),
                                 reason="FAISS not importable: the HNSW tests need pip install 'radsift[scale]'")

N, DIM, K = 12_000, 384, 10


def clustered(n: int, dim: int = DIM, centers: int = 200, seed: int = 0, start: int = 0) -> np.ndarray:
    """Unit vectors from a mixture of Gaussian clusters around a shared direction (as real sentence
    vectors are; uniformly random vectors are unrealistically hard for HNSW). ``start`` draws other
    rows of the same mixture (queries)."""
    rng = np.random.default_rng(seed)
    spec = (np.arange(1, dim + 1) ** -0.6).astype(np.float32)
    mu = rng.standard_normal(dim).astype(np.float32)
    mu /= np.linalg.norm(mu)
    c = rng.standard_normal((centers, dim)).astype(np.float32) * spec
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    r = np.random.default_rng([seed, start])
    x = 0.8 * mu + c[r.integers(0, centers, n)] + r.standard_normal((n, dim), dtype=np.float32) * spec * (0.6 / np.linalg.norm(spec))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def data():
    return clustered(N), clustered(40, start=10**6)


@pytest.fixture(scope="module")
def backend(data):
    if not hnsw_mod.available():
        pytest.skip("FAISS not importable: pip install 'radsift[scale]'")
    return hnsw_mod.HnswBackend.build(data[0], candidates=300)


def exact_top(x, q, k, mask=None):
    return NumpyBackend(x).top(q, k, mask)


def recall(got_rows, x, q, k, mask=None):
    """Share of returned rows scoring at least the exact k-th best (tie-aware)."""
    _, vals = exact_top(x, q, k, mask)
    return float(np.count_nonzero(x[got_rows] @ q >= vals[-1] - 1e-6)) / k


# -- HNSW against exact search ------------------------------------------------------------------
@needs_faiss
def test_top10_matches_exact_search(backend, data):
    x, queries = data
    recalls = []
    for q in queries:
        rows, vals = backend.top(q, K)
        assert len(rows) == K and len(set(rows.tolist())) == K
        np.testing.assert_allclose(vals, x[rows] @ q, rtol=0, atol=1e-5)  # exact cosines, re-scored
        assert np.all(np.diff(vals) <= 0)
        recalls.append(recall(rows, x, q, K))
    assert np.mean(recalls) >= 0.95


@needs_faiss
def test_scores_exact_on_candidates_floor_below_elsewhere(backend, data):
    x, queries = data
    for q in queries[:10]:
        s = backend.scores(q)
        assert s.shape == (N,) and s.dtype == np.float32
        exact = x @ q
        values, counts = np.unique(s, return_counts=True)
        floor = values[np.argmax(counts)]  # the value most rows share
        cand = np.flatnonzero(s > floor)
        assert len(cand) == backend.candidates
        np.testing.assert_allclose(s[cand], exact[cand], rtol=0, atol=1e-5)
        assert floor < s[cand].min()
        assert floor == pytest.approx(s[cand].min() - hnsw_mod.FLOOR_GAP, abs=1e-6)
        # the anchor: the least similar row, exactly scored, is the array's minimum (as in exact search)
        anchor = np.flatnonzero(s < floor)
        assert len(anchor) == 1
        np.testing.assert_allclose(s[anchor], exact[anchor], atol=1e-5)
        assert s[anchor[0]] <= np.percentile(exact, 0.1)
        assert np.count_nonzero(s == floor) == N - backend.candidates - 1
        # the candidates are the best rows (the graph's recall allowing) ...
        true_best = np.argsort(-(x @ q))[:backend.candidates]
        assert len(np.intersect1d(cand, true_best)) >= 0.9 * backend.candidates
        # ... and ranking on the scores gives the top rows of exact search
        assert recall(np.argsort(-s, kind="stable")[:K], x, q, K) >= 0.9


@needs_faiss
def test_small_index_is_scored_exactly(data, tmp_path):
    x, queries = data
    b = hnsw_mod.HnswBackend.build(x[:500], candidates=1000)
    np.testing.assert_allclose(b.scores(queries[0]), x[:500] @ queries[0], atol=1e-6)
    empty = hnsw_mod.HnswBackend.build(x[:0])
    assert empty.scores(queries[0]).shape == (0,) and len(empty.top(queries[0], K)[0]) == 0
    reopened = hnsw_mod.HnswBackend.open(empty.save(tmp_path / "empty.faiss"), x[:0])
    assert reopened.scores(queries[0]).shape == (0,)


@needs_faiss
@pytest.mark.parametrize("every", [3, 40, 997])
def test_masked_top_returns_only_masked_rows_and_k_of_them(backend, data, every):
    x, queries = data
    mask = np.zeros(N, dtype=bool)
    mask[::every] = True
    for q in queries[:8]:
        rows, vals = backend.top(q, K, mask)
        assert mask[rows].all()
        assert len(rows) == min(K, int(mask.sum()))
        assert recall(rows, x, q, len(rows), mask) >= 0.9
    few = np.zeros(N, dtype=bool)
    few[[5, 77, 4000]] = True
    rows, _ = backend.top(queries[0], K, few)
    assert sorted(rows.tolist()) == [5, 77, 4000]
    assert len(backend.top(queries[0], K, np.zeros(N, dtype=bool))[0]) == 0


@needs_faiss
def test_masked_graph_search_widens_until_k_rows(backend, data, monkeypatch):
    """With exact fallback off for selective masks, the filtered graph search grows x4 until k masked rows."""
    x, queries = data
    monkeypatch.setattr(hnsw_mod, "EXACT_RATIO", 0)
    monkeypatch.setattr(hnsw_mod, "MIN_DEPTH", K)
    mask = np.zeros(N, dtype=bool)
    mask[np.random.default_rng(1).choice(N, 2000, replace=False)] = True
    before = dict(backend.stats)
    for q in queries[:5]:
        rows, _ = backend.top(q, 400, mask)
        assert len(rows) == 400 and mask[rows].all()
    assert backend.stats["masked"] == before["masked"] + 5
    assert backend.stats["grown"] > before["grown"]  # the first filtered search came back short
    assert backend.stats["exact"] == before["exact"]  # answered by the graph, not the exact fallback


@needs_faiss
def test_scores_with_mask_draws_candidates_from_masked_rows(backend, data):
    x, queries = data
    mask = np.zeros(N, dtype=bool)
    mask[1::7] = True
    s = backend.scores(queries[0], mask=mask)
    values, counts = np.unique(s, return_counts=True)
    cand = np.flatnonzero(s > values[np.argmax(counts)])
    assert len(cand) == backend.candidates and mask[cand].all()


@needs_faiss
def test_duplicate_rows_enter_the_graph_once(data, tmp_path):
    """Bit-identical rows (boilerplate sentences) are one graph node; every row of a node found is a candidate."""
    x, queries = data
    rng = np.random.default_rng(3)
    distinct = x[:3000]
    source = np.concatenate([np.arange(3000), rng.choice(3000, 9000) % 40])  # 40 rows repeated ~225 times each
    rng.shuffle(source)
    dup = np.ascontiguousarray(distinct[source])
    b = hnsw_mod.HnswBackend.build(dup, candidates=200)
    assert b.index.ntotal == 3000
    order, offsets = b.groups
    assert sorted(order.tolist()) == list(range(len(dup)))
    for g in (0, 1, 2999):
        members = order[offsets[g]:offsets[g + 1]]
        assert (dup[members] == dup[members[0]]).all() and members[0] == np.flatnonzero(source == source[members[0]])[0]
    recalls = []
    for q in [dup[5], dup[np.flatnonzero(source < 40)[0]]] + list(queries[:20]):
        rows, vals = b.top(q, K)
        recalls.append(recall(rows, dup, q, K))
        s = b.scores(q)
        values, counts = np.unique(s, return_counts=True)
        cand = s > values[np.argmax(counts)]
        np.testing.assert_allclose(s[cand], dup[cand] @ q, atol=1e-5)
        # a duplicate of a candidate is a candidate too
        assert np.array_equal(np.unique(source[cand]), np.unique(source[np.isin(source, source[cand])]))
        assert cand.sum() >= 200
    assert np.mean(recalls) >= 0.95
    mask = np.zeros(len(dup), dtype=bool)
    mask[np.flatnonzero(source == source[0])[1]] = True  # one row of a repeated group
    mask[::5] = True
    rows, _ = b.top(dup[0], K, mask)
    assert mask[rows].all() and len(rows) == K
    path = b.save(tmp_path / "dup.faiss")
    assert (tmp_path / "dup.faiss.dups.npz").exists()
    opened = hnsw_mod.HnswBackend.open(path, dup, candidates=200)
    np.testing.assert_array_equal(opened.scores(queries[0]), b.scores(queries[0]))
    assert duplicates.duplicate_groups(x) is None


@needs_faiss
def test_save_open_round_trip(backend, data, tmp_path):
    x, queries = data
    path = backend.save(tmp_path / "sentence_vectors.faiss")
    for mmap in (True, False):
        opened = hnsw_mod.HnswBackend.open(path, x, mmap=mmap, candidates=backend.candidates)
        for q in queries[:5]:
            np.testing.assert_array_equal(opened.scores(q), backend.scores(q))
            a, b = opened.top(q, K), backend.top(q, K)
            np.testing.assert_array_equal(a[0], b[0])
    via_factory = create_backend("hnsw", x, graph=path, candidates=backend.candidates)
    np.testing.assert_array_equal(via_factory.scores(queries[0]), backend.scores(queries[0]))


@needs_faiss
def test_open_refuses_a_graph_of_other_vectors(backend, data, tmp_path):
    x, _ = data
    path = backend.save(tmp_path / "g.faiss")
    with pytest.raises(IndexDamagedError, match="rebuild"):
        hnsw_mod.HnswBackend.open(path, x[:-1])
    other = clustered(N, seed=9)
    with pytest.raises(IndexDamagedError, match="other vectors"):
        hnsw_mod.HnswBackend.open(path, other)
    bad = tmp_path / "bad.faiss"
    bad.write_bytes(b"not a graph" * 10)
    with pytest.raises(IndexDamagedError, match="readable"):
        hnsw_mod.HnswBackend.open(bad, x)


@needs_faiss
def test_open_checks_stored_codes_not_a_search(backend, data, tmp_path, monkeypatch):
    """The open-time check decodes the nodes of a few rows: a search that misses a row's own vector (at 10M
    rows recall@10 is ~0.9) must not make a sound graph look damaged; rows in duplicate groups map to their node."""
    x, _ = data
    path = backend.save(tmp_path / "g.faiss")
    monkeypatch.setattr(hnsw_mod.HnswBackend, "_graph", lambda self, q, count, bits=None: np.zeros(0, np.int64))
    hnsw_mod.HnswBackend.open(path, x)
    dup = np.concatenate([x[:300], x[:300], x[300:600]])
    grouped = hnsw_mod.HnswBackend.build(dup, candidates=200)
    assert grouped.groups is not None
    opened = hnsw_mod.HnswBackend.open(grouped.save(tmp_path / "d.faiss"), dup)
    node = duplicates.nodes_of(opened.groups, len(dup))
    assert node[300] == node[0] != node[600]
    shuffled = dup[::-1].copy()
    with pytest.raises(IndexDamagedError, match="other vectors"):
        hnsw_mod.HnswBackend.open(tmp_path / "d.faiss", shuffled)


@needs_faiss
def test_build_options_and_errors(data):
    x, queries = data
    small = x[:2000]
    for dtype in ("f32", "f16", "i8"):
        b = hnsw_mod.HnswBackend.build(small, dtype=dtype, connectivity=8, expansion_add=40, expansion_search=32)
        assert b.index.hnsw.efSearch == 32 and b.expansion_search == 32
        rows, _ = b.top(queries[0], K)
        assert recall(rows, small, queries[0], K) >= 0.9
    with pytest.raises(ConfigError, match="dtype"):
        hnsw_mod.HnswBackend.build(small, dtype="i4")
    with pytest.raises(ConfigError, match="dimension"):
        b.top(queries[0][:10], K)


# -- the factory ------------------------------------------------------------------------------
def test_numpy_backend_unchanged():
    x = clustered(50, dim=16)
    b = create_backend("numpy", x)
    assert isinstance(b, NumpyBackend)
    np.testing.assert_allclose(b.scores(x[3]), x @ x[3])


def test_unknown_and_reserved_names():
    x = clustered(10, dim=8)
    with pytest.raises(ConfigError, match="milvus"):  # no longer reserved: it needs its extra and milvus=
        create_backend("milvus", x)
    with pytest.raises(ConfigError, match="unknown vector backend 'annoy'.*numpy, hnsw, auto"):
        create_backend("annoy", x)


def test_auto_threshold(monkeypatch):
    monkeypatch.delenv("RADSIFT_HNSW_MIN_ROWS", raising=False)
    assert hnsw_min_rows() == HNSW_MIN_ROWS == 200_000
    assert resolve_backend("auto", HNSW_MIN_ROWS - 1) == "numpy"
    monkeypatch.setattr(hnsw_mod, "available", lambda: True)
    assert resolve_backend("auto", HNSW_MIN_ROWS) == "hnsw"
    monkeypatch.setenv("RADSIFT_HNSW_MIN_ROWS", "1000")
    assert resolve_backend("auto", 999) == "numpy"
    assert resolve_backend("auto", 1000) == "hnsw"
    assert resolve_backend("numpy", 10**9) == "numpy"
    monkeypatch.setenv("RADSIFT_HNSW_MIN_ROWS", "lots")
    with pytest.raises(ConfigError, match="RADSIFT_HNSW_MIN_ROWS"):
        resolve_backend("auto", 10)


@needs_faiss
def test_auto_builds_hnsw_above_threshold(monkeypatch, tmp_path, caplog):
    monkeypatch.setenv("RADSIFT_HNSW_MIN_ROWS", "300")
    assert isinstance(create_backend("auto", clustered(299, dim=16)), NumpyBackend)
    x = clustered(300, dim=16)
    built = create_backend("auto", x)
    assert isinstance(built, hnsw_mod.HnswBackend)
    # a graph file named but absent: auto stays exact instead of building at search time
    with caplog.at_level(logging.WARNING, logger="radsift.index.backends"):
        assert isinstance(create_backend("auto", x, graph=tmp_path / "none.faiss"), NumpyBackend)
    assert "no HNSW graph" in caplog.text
    built.save(tmp_path / "g.faiss")
    assert isinstance(create_backend("auto", x, graph=tmp_path / "g.faiss"), hnsw_mod.HnswBackend)
    assert isinstance(create_backend("hnsw", x, graph=tmp_path / "none.faiss"), hnsw_mod.HnswBackend)  # asked for: built


def test_missing_extra_error(monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "faiss", None)  # `import faiss` now raises ImportError
    assert not hnsw_mod.available()
    x = clustered(400, dim=16)
    with pytest.raises(ConfigError, match=r"pip install 'radsift\[scale\]'") as err:
        create_backend("hnsw", x)
    assert isinstance(err.value, ImportError)
    with pytest.raises(ImportError, match="FAISS"):
        hnsw_mod.HnswBackend.build(x)
    monkeypatch.setenv("RADSIFT_HNSW_MIN_ROWS", "100")
    with caplog.at_level(logging.WARNING, logger="radsift.index.backends"):
        b = create_backend("auto", x)
    assert isinstance(b, NumpyBackend)
    assert "radsift[scale]" in caplog.text and "exact" in caplog.text


# -- through the search engine ----------------------------------------------------------------
@needs_faiss
def test_engine_searches_with_hnsw_backend(tmp_path, monkeypatch):
    """The engine runs on the HNSW backend; with few candidates the dense top hits stay those of exact search."""
    from radsift.index import build_index
    from radsift.models.hashing import HashingEncoder
    from radsift.records import Report
    from radsift.index.backends import placement
    from radsift.search import Index

    words = ["pneumothorax", "effusion", "consolidation", "atelectasis", "cardiomegaly", "edema", "nodule", "fracture"]
    sides = ["left", "right", "bilateral"]
    reports = [Report(f"r{i}", {"findings": f"There is {sides[i % 3]} {words[i % 8]}. Mild {words[(i * 3) % 8]} is seen.",
                                "impression": f"{words[(i * 5) % 8].capitalize()} noted."}, {})
               for i in range(120)]
    enc = HashingEncoder(tmp_path / "model")
    build_index(tmp_path / "idx", reports, encoder=enc, progress=False)
    real_create = placement.create_backend
    monkeypatch.setattr(placement, "create_backend",
                        lambda name, vectors, **kw: real_create(name, vectors, candidates=30, **kw) if name == "hnsw"
                        else real_create(name, vectors, **kw))
    exact = Index.open(tmp_path / "idx", encoder=enc)
    approx = Index.open(tmp_path / "idx", encoder=enc, backend="hnsw")
    for query in ("left pneumothorax", "no pleural effusion"):
        for mode in ("dense", "hybrid"):
            a = approx.search(query, k=5, mode=mode, negation="ignore", level="sentence")
            e = exact.search(query, k=5, mode=mode, negation="ignore", level="sentence")
            assert len(a) == 5
            if mode == "dense":
                assert [h.score for h in a] == pytest.approx([h.score for h in e], abs=1e-5)
