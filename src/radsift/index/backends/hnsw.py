"""Approximate search with an HNSW graph (FAISS), re-scored exactly against the float32 vectors.

The optional backend for large indexes (``pip install 'radsift[scale]'``). The graph finds a
query's ``candidates`` nearest rows; their cosines are then computed again from the index's own
float32 vectors, so a graph that stores 8-bit codes (``dtype="i8"``, the default: 384 bytes a
row at dim 384 instead of 1536) costs no precision on the rows it returns.

:meth:`HnswBackend.scores` returns the full-length array the ranking core wants (it fuses the
dense side with BM25 and applies the negation tiers over every unit), built as follows:

- the ``candidates`` rows (default :data:`DEFAULT_CANDIDATES`) carry their exact cosine;
- one *anchor* row, the row least similar to the query (the graph's nearest row to ``-query``),
  carries its exact cosine too: the array's minimum is then (about) the true minimum over all
  rows, as with exact search, so a min-max normalisation (the hybrid fusion,
  :func:`radsift.ranking.fusion.convex_combination`) scales the candidates as exact search does;
- every other row carries one *floor* value, :data:`FLOOR_GAP` below the lowest candidate's
  cosine: it says "not a dense candidate". Rankings by the dense score put every candidate first,
  in exact order, and the rest after them, tied; a hybrid ranking gives those rows the dense share
  of the lowest candidate (an upper bound of their true cosine, the graph's recall allowing) and
  ranks them by their BM25 side; the tiers still see every unit. Relevance bands read on dense
  scores at or below the floor are not exact.

Through the engine on Open-i (22k sentences; 142 finding queries, report level, negation-aware,
the overlap of the top 10 reports with exact search): with 1000 candidates, hybrid 0.999 with the
anchor (0.941 without: the min-max scale moved), dense 0.999; with 300 candidates 0.989 and 0.996.
Indexes with no more rows than ``candidates`` are scored exactly (no floor).

Exact duplicate vectors (bit for bit: a report corpus repeats its boilerplate sentences, Open-i
holds 8.4k distinct sentence vectors among 22k) enter the graph once: an HNSW graph holding many
copies of one point breaks apart (on Open-i, 90 of 500 queries found none of their exact top 10).
The graph's ids are duplicate groups; every row of a group found is a candidate (so ``scores``
may carry more exact rows than ``candidates``; one row per group is read and scored), and a mask
keeps a group when any of its rows is masked. :meth:`HnswBackend.sparse_scores` gives the same
scores without an array over every row.

A graph can grow (:meth:`HnswBackend.grow`: the rows of an index add become new nodes or join the
group of a bit-identical node, :mod:`radsift.index.graphs`), and rows leave their groups when their
reports are deleted, so a group may be empty: such nodes stay in the graph (HNSW cannot drop a
node) and every search filters them out (an ``IDSelectorBitmap`` of the non-empty nodes).

The graph is saved with FAISS's own format (:meth:`HnswBackend.save`, plus ``<file>.dups.npz``
holding the duplicate groups when there are any; :mod:`radsift.index.graphs` records every file's size and
SHA-256 in ``<file>.files.json``, checked whole when the graph is read) and opened memory-mapped (:meth:`HnswBackend.open`,
``IO_FLAG_MMAP_IFC``: graph and codes stay in the page cache, shared by every process that opens
the same file).

Parameters use usearch-style names; in FAISS terms ``connectivity`` is ``M``, ``expansion_add``
``efConstruction`` and ``expansion_search`` ``efSearch`` (raised to the number of rows asked for:
FAISS returns at most ``efSearch`` rows).
"""

from __future__ import annotations

import logging
import os
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import numpy as np

from radsift.errors import ConfigError, IndexDamagedError
from radsift.index.backends.base import MissingExtraError, SparseScores, VectorBackend, extra_module
from radsift.index.backends.duplicates import (check_groups, duplicate_groups, expand_groups, groups_of, nodes_of,
                                               row_hashes, rows_of)
from radsift.index.integrity import cache_problems
from radsift.ranking.topk import top_k

log = logging.getLogger("radsift.index.hnsw")

EXTRA = "pip install 'radsift[scale]'"
#: Rows of a query that :meth:`HnswBackend.scores` scores exactly (the rest get the floor).
DEFAULT_CANDIDATES = 1000
#: :meth:`HnswBackend.top` fetches at least this many rows from the graph and re-scores them.
MIN_DEPTH = 100
#: How far below the lowest candidate's cosine every other row's floor lies.
FLOOR_GAP = 1e-4
#: A masked search goes exact over the masked rows when ``masked_rows ** 2 <= EXACT_RATIO * wanted * rows``:
#: the graph would visit about ``wanted * rows / masked_rows`` nodes, each costing a few distances.
EXACT_RATIO = 2
#: Rows of the float32 vectors scored or added at a time (bounds memory over a memory-mapped file).
BATCH = 65_536
DTYPES = ("i8", "f16", "f32")
DEFAULTS = {"dtype": "i8", "connectivity": 16, "expansion_add": 128, "expansion_search": 64}


def faiss_module():
    """The ``faiss`` module, or :class:`MissingExtraError` naming the extra that installs it."""
    return extra_module("faiss", "hnsw", "FAISS", EXTRA)


def available() -> bool:
    """True when the ``scale`` extra (FAISS) can be imported."""
    try:
        faiss_module()
    except MissingExtraError:
        return False
    return True


class HnswBackend(VectorBackend):
    """Approximate inner-product search over unit vectors: an HNSW graph plus exact re-scoring.

    Build one with :meth:`build` or open a saved graph with :meth:`open`; both take the
    ``(n, dim)`` float32 vectors (memory-mapped is fine) that the graph was built from.

    Attributes:
        candidates: Rows that :meth:`scores` scores exactly.
        expansion_search: The graph's search breadth (``efSearch``) for small requests.
        stats: Counters of masked searches: ``masked`` (calls), ``grown`` (graph searches widened
            x4 because too few masked rows came back), ``exact`` (answered by exact search over
            the masked rows: selective masks, or the graph ran out).
    """

    name = "hnsw"

    def __init__(self, index, vectors: np.ndarray, *, candidates: int = DEFAULT_CANDIDATES,
                 expansion_search: int | None = None, path: str | Path | None = None,
                 groups: tuple[np.ndarray, np.ndarray] | None = None, node_hashes: np.ndarray | None = None) -> None:
        if vectors.ndim != 2:
            raise ConfigError(f"vectors must be a 2-d array, not {vectors.ndim}-d")
        nodes = vectors.shape[0] if groups is None else len(groups[1]) - 1
        groups_fit = groups is None or (len(groups[0]) == vectors.shape[0] and int(groups[1][-1]) == vectors.shape[0])
        if not groups_fit or int(index.ntotal) != nodes or int(index.d) != vectors.shape[1]:
            where = f"{path}: " if path is not None else ""
            raise IndexDamagedError(f"{where}the HNSW graph holds {index.ntotal} vectors of dim {index.d}, which does "
                                    f"not match {vectors.shape[0]} rows of dim {vectors.shape[1]}"
                                    f"{'' if groups is None else f' in {nodes} duplicate groups'}: rebuild the graph")
        #: Duplicate groups: ``order`` (rows sorted by group, ascending within one) and ``offsets``
        #: (group g is ``order[offsets[g]:offsets[g + 1]]``, empty when all its rows were deleted);
        #: None when node i is row i.
        self.groups = groups
        #: :func:`~radsift.index.backends.duplicates.row_hashes` of each node's vector (set by :meth:`build`
        #: and :meth:`grow`, not saved).
        self.node_hashes = node_hashes
        sizes = np.diff(groups[1]) if groups is not None else np.zeros(0, dtype=np.int64)
        #: Nodes that hold a row (all of them unless a grown graph lost rows), and when some are empty,
        #: the bitmap that keeps every search off the empty ones.
        self.live_nodes = nodes - int(np.count_nonzero(sizes == 0))
        self._filled = np.flatnonzero(sizes) if self.live_nodes < nodes else None
        self._live_bits = np.packbits(sizes > 0, bitorder="little") if self._filled is not None else None
        if candidates < 1:
            raise ConfigError(f"candidates must be at least 1, not {candidates}")
        self.index = index
        self.vectors = vectors
        self.candidates = int(candidates)
        self.expansion_search = int(expansion_search or index.hnsw.efSearch)
        self.path = Path(path) if path is not None else None
        self.stats = {"masked": 0, "grown": 0, "exact": 0}
        self._node_of_row: np.ndarray | None = None  # every row's group (built on the first query that needs it)
        self._stats_lock = threading.Lock()

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def build(cls, vectors: np.ndarray, *, dtype: str = DEFAULTS["dtype"], connectivity: int = DEFAULTS["connectivity"],
              expansion_add: int = DEFAULTS["expansion_add"], expansion_search: int = DEFAULTS["expansion_search"],
              candidates: int = DEFAULT_CANDIDATES, threads: int | None = None, train_rows: int = 100_000,
              progress=None) -> "HnswBackend":
        """Build the graph from float32 unit vectors (added in batches, so a memory-mapped file is read once).

        Args:
            vectors: ``(n, dim)`` float32 unit vectors.
            dtype: What the graph stores per row: ``i8`` (8-bit scalar quantizer trained per
                dimension on ``train_rows`` rows, the default), ``f16`` or ``f32`` (a full copy).
            connectivity: Links per node (``M``); the bottom layer holds twice as many.
            expansion_add: Search breadth while building (``efConstruction``).
            expansion_search: Default search breadth (``efSearch``).
            candidates: Rows :meth:`scores` scores exactly.
            threads: OpenMP threads while building (None = FAISS's default, every core).
            train_rows: Rows sampled (evenly spaced) to train the quantizer.
            progress: Called with ``(rows_added, rows_total)`` after each batch.
        """
        faiss = faiss_module()
        if dtype not in DTYPES:
            raise ConfigError(f"unknown HNSW dtype {dtype!r}; use one of {', '.join(DTYPES)}")
        if vectors.ndim != 2:
            raise ConfigError(f"vectors must be a 2-d array, not {vectors.ndim}-d")
        n, dim = vectors.shape
        hashes = row_hashes(vectors)
        groups = duplicate_groups(vectors, hashes=hashes)
        nodes = np.arange(n) if groups is None else groups[0][groups[1][:-1]]  # one row per group, ascending
        m = len(nodes)
        if dtype == "f32":
            index = faiss.IndexHNSWFlat(dim, connectivity, faiss.METRIC_INNER_PRODUCT)
        else:
            qtype = faiss.ScalarQuantizer.QT_8bit if dtype == "i8" else faiss.ScalarQuantizer.QT_fp16
            index = faiss.IndexHNSWSQ(dim, qtype, connectivity, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = int(expansion_add)
        index.hnsw.efSearch = int(expansion_search)
        if not index.is_trained and m:
            step = max(1, m // max(1, train_rows))
            with _threads(faiss, threads):
                index.train(rows_of(vectors, nodes[::step][:train_rows]))
        _add(faiss, index, vectors, nodes, threads, progress)
        return cls(index, vectors, candidates=candidates, expansion_search=expansion_search, groups=groups,
                   node_hashes=hashes[nodes])

    @classmethod
    def grow(cls, index, vectors: np.ndarray, node_of_row: np.ndarray, new_nodes: np.ndarray, *,
             node_hashes: np.ndarray | None = None, candidates: int = DEFAULT_CANDIDATES,
             expansion_search: int | None = None, threads: int | None = None, progress=None) -> "HnswBackend":
        """Grow a saved graph into the graph of ``vectors``: one node added per row of ``new_nodes``.

        The trained quantizer and the existing nodes are kept as they are (FAISS adds to an HNSW
        graph as a build does, batch after batch), so this costs what is added, not the graph.

        Args:
            index: A graph read into memory (:func:`read_graph` with ``mmap=False``); it is changed.
            vectors: ``(n, dim)`` float32 unit vectors of the new generation.
            node_of_row: ``(n,)`` the node of each row: an old node's id, or ``ntotal + i`` for the
                i-th row of ``new_nodes``; old nodes no row names stay, empty (never returned).
            new_nodes: Rows whose vectors become the new nodes, in node order.
            node_hashes: :func:`~radsift.index.backends.duplicates.row_hashes` of every node's vector, kept on
                the backend.
            candidates, expansion_search: As in :meth:`build`.
            threads: OpenMP threads while adding (None = FAISS's default).
            progress: Called with ``(rows_added, rows_total)`` after each batch.
        """
        faiss = faiss_module()
        new_nodes = np.asarray(new_nodes, dtype=np.int64)
        _add(faiss, index, vectors, new_nodes, threads, progress)
        return cls(index, vectors, candidates=candidates, expansion_search=expansion_search,
                   groups=groups_of(node_of_row, int(index.ntotal)), node_hashes=node_hashes)

    @classmethod
    def open(cls, path: str | Path, vectors: np.ndarray, *, mmap: bool = True, candidates: int = DEFAULT_CANDIDATES,
             expansion_search: int | None = None) -> "HnswBackend":
        """Open a graph saved by :meth:`save`, memory-mapped unless ``mmap=False``, over its ``vectors``.

        Raises:
            IndexDamagedError: The file cannot be read, or does not hold a graph of these vectors.
        """
        path = Path(path)
        index, groups = read_graph(path, mmap=mmap)
        backend = cls(index, vectors, candidates=candidates, expansion_search=expansion_search, path=path,
                      groups=groups)
        backend._probe()
        return backend

    def save(self, path: str | Path) -> Path:
        """Write the graph to ``path`` (FAISS's format) and its duplicate groups to ``<path>.dups.npz``
        (when there are any), each written beside its place, then renamed into place."""
        faiss = faiss_module()
        path = Path(path)
        dups = path.with_name(path.name + ".dups.npz")
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        tmp_dups = dups.with_name(f".{dups.stem}.tmp-{os.getpid()}.npz")
        try:
            if self.groups is not None:
                np.savez(tmp_dups, order=np.asarray(self.groups[0]), offsets=np.asarray(self.groups[1]))
                os.replace(tmp_dups, dups)
            else:
                dups.unlink(missing_ok=True)
            faiss.write_index(self.index, str(tmp))
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
            tmp_dups.unlink(missing_ok=True)
        self.path = path
        return path

    def _probe(self, samples: int = 8) -> None:
        """A saved graph must hold the vectors it is opened over: the codes stored for the nodes of a few
        rows (the first, the last and some evenly spaced) decode to those rows' vectors.

        Decoding is deterministic, where a search for a row's own vector is not: at 10M rows the
        graph's recall@10 is about 0.9, and a search missed row 0 of the very vectors it was built from.
        """
        n = self.vectors.shape[0]
        if not n:
            return
        rows = np.unique(np.linspace(0, n - 1, num=min(n, samples)).round().astype(np.int64))
        nodes = nodes_of(self.groups, n)[rows]
        for row, node in zip(rows.tolist(), nodes.tolist()):
            v = np.asarray(self.vectors[row], dtype=np.float32)
            stored = np.asarray(self.index.reconstruct(node), dtype=np.float32)
            cos = float(stored @ v) / (float(np.linalg.norm(stored) * np.linalg.norm(v)) or 1.0)
            if cos < 0.99:  # 8-bit codes decode to a cosine above 0.999 with their vector
                raise IndexDamagedError(f"{self.path}: the HNSW graph does not hold row {row} of the vectors "
                                        f"(cosine {cos:.3f} with its stored code): it was built from other vectors; "
                                        "rebuild it")

    # -- search --------------------------------------------------------------------------------
    size = property(lambda self: int(self.vectors.shape[0]))

    def scores(self, query: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """Exact cosines for the query's ``candidates`` best rows, the floor for every other row.

        Args:
            query: A unit query vector.
            mask: Optional: draw the candidates from these rows only (a filtered search should
                pass it, or a selective filter may leave few of its rows among the candidates).

        Returns:
            A float32 array of length ``n``: the candidates (``candidates`` graph nodes: every row of a duplicate
            group found) carry their exact cosine, every other row :data:`FLOOR_GAP` below the lowest candidate.
        """
        return self.sparse_scores(query, mask).full()

    def sparse_scores(self, query: np.ndarray, mask: np.ndarray | None = None) -> SparseScores:
        """:meth:`scores` as the candidates' and the anchor's rows and cosines, and the floor (no array over every row)."""
        q = _query(query, self.vectors.shape[1])
        n = self.size
        if n <= self.candidates:
            return SparseScores(n, self._exact_all(q))
        grouped = mask is None and self.groups is not None  # groups, not their rows (work follows the nodes found)
        rows, cos = self._graph(q, self.candidates, score=q, grouped=True) if grouped else self._search(
            q, self.candidates, mask)
        if not rows.size:
            return SparseScores(n, np.zeros(0, dtype=np.float32), rows, -1.0)
        floor = np.float32(float(cos.min()) - FLOOR_GAP)
        # The anchor: the row least similar to the query (the graph's best row for -query), exactly scored.
        anchor, low = self._graph(-q, 1, score=q, grouped=grouped)
        anchor, low = anchor[low < floor], low[low < floor]
        if anchor.size:
            rows, cos = np.concatenate([rows, anchor]), np.concatenate([cos, low])
            order = np.argsort(rows, kind="stable")
            rows, cos = rows[order], cos[order]
        if grouped and self._node_of_row is None:
            self._node_of_row = nodes_of(self.groups, n)
        return SparseScores(n, cos, rows, float(floor), *((self._node_of_row, self.groups) if grouped else ()))

    def top(self, query: np.ndarray, k: int, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best rows (only masked rows when ``mask`` is given), re-scored exactly, best first.

        Fetches ``max(k, MIN_DEPTH)`` rows from the graph. With a mask the graph search is filtered
        to the masked rows and widened x4 until ``k`` of them (or all there are) come back; a mask
        selective enough, or a graph that runs out, is answered by exact search over the masked rows.
        """
        q = _query(query, self.vectors.shape[1])
        if k <= 0 or self.size == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        rows, cos = self._search(q, max(int(k), MIN_DEPTH), mask, need=int(k))
        picked, vals = top_k(cos, int(k))
        return rows[picked], vals

    def _search(self, q: np.ndarray, count: int, mask: np.ndarray | None,
                need: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Sorted unique rows and their exact cosines: ``count`` nodes' rows from the graph, or with a mask at least
        ``min(need, masked)`` masked rows."""
        n = self.size
        count = min(count, n)
        if mask is None:
            return self._graph(q, count, score=q)
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (n,):
            raise ConfigError(f"mask has shape {mask.shape}, the backend {n} rows")
        masked = int(np.count_nonzero(mask))
        need = min(count if need is None else need, masked)
        with self._stats_lock:
            self.stats["masked"] += 1
        if masked == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        bits = None
        while True:
            if masked * masked <= EXACT_RATIO * count * n or count >= masked:
                with self._stats_lock:
                    self.stats["exact"] += 1
                return self._exact_masked(q, mask, count)
            if bits is None:
                bits = np.packbits(self._node_mask(mask), bitorder="little")
            rows, cos = self._graph(q, count, bits, score=q)
            rows, cos = rows[mask[rows]], cos[mask[rows]]
            if rows.size >= need:
                return rows, cos
            with self._stats_lock:
                self.stats["grown"] += 1
            count *= 4

    def _node_mask(self, mask: np.ndarray) -> np.ndarray:
        """Nodes holding at least one masked row (never an empty node)."""
        if self.groups is None:
            return mask
        order, offsets = self.groups
        if self._filled is None:
            return np.logical_or.reduceat(mask[order], offsets[:-1])
        # reduceat reads one element for an empty range: reduce over the filled nodes only.
        out = np.zeros(len(offsets) - 1, dtype=bool)
        if self._filled.size:
            out[self._filled] = np.logical_or.reduceat(mask[order], offsets[self._filled])
        return out

    def _graph(self, q: np.ndarray, count: int, bits: np.ndarray | None = None, *, score: np.ndarray,
               grouped: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Rows of the (at most ``count``) graph nodes found for ``q`` (only bitmap nodes when given), sorted, and
        their exact cosines with ``score``: one row per duplicate group read and scored (its rows are
        bit-identical), so the work follows the nodes found, not how many copies each holds (``grouped``: the
        nodes and their cosines, rows not listed).

        Empty nodes are never searched for: without ``bits``, the bitmap of the filled nodes is used.
        """
        faiss = faiss_module()
        params = faiss.SearchParametersHNSW()
        count = min(int(count), self.live_nodes)
        nodes = np.zeros(0, dtype=np.int64)
        if count > 0:
            params.efSearch = max(self.expansion_search, count)
            if bits is None:
                bits = self._live_bits
            if bits is not None:
                selector = faiss.IDSelectorBitmap(int(self.index.ntotal), faiss.swig_ptr(bits))
                params.sel = selector
            _, ids = self.index.search(q[None, :], count, params=params)
            nodes = np.unique(ids[0][ids[0] >= 0].astype(np.int64))
        if self.groups is None:
            return nodes, self._rescore(nodes, score)
        firsts = np.asarray(self.groups[0][self.groups[1][nodes]], dtype=np.int64)
        first_order = np.argsort(firsts, kind="stable")  # read the memory map in row order
        cos = np.empty(nodes.size, dtype=np.float32)
        cos[first_order] = self._rescore(firsts[first_order], score)
        return (nodes, cos) if grouped else expand_groups(self.groups, nodes, cos)

    def _rescore(self, rows: np.ndarray, q: np.ndarray) -> np.ndarray:
        """Exact cosines of sorted ``rows`` from the float32 vectors."""
        return np.asarray(self.vectors[rows], dtype=np.float32) @ q if rows.size else np.zeros(0, dtype=np.float32)

    def _exact_all(self, q: np.ndarray) -> np.ndarray:
        out = np.empty(self.size, dtype=np.float32)
        for start in range(0, self.size, BATCH):
            out[start:start + BATCH] = np.asarray(self.vectors[start:start + BATCH], dtype=np.float32) @ q
        return out

    def _exact_masked(self, q: np.ndarray, mask: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``count`` best masked rows by exact cosine, sorted by row, and their cosines."""
        rows = np.flatnonzero(mask).astype(np.int64)
        cos = np.concatenate([self._rescore(rows[s:s + BATCH], q) for s in range(0, rows.size, BATCH)])
        if rows.size > count:
            keep = np.sort(np.argpartition(-cos, count - 1)[:count])
            rows, cos = rows[keep], cos[keep]
        return rows, cos


def read_graph(path: str | Path, mmap: bool = True):
    """A graph file saved by :meth:`HnswBackend.save` and its duplicate groups (None without a ``.dups.npz``).

    Memory-mapped unless ``mmap=False`` (a graph to grow must be read into memory).

    Raises:
        IndexDamagedError: The graph or its groups cannot be read, or the file is not an HNSW graph.
    """
    faiss = faiss_module()
    path = Path(path)
    dups = path.with_name(path.name + ".dups.npz")
    # Every file against what was recorded when it was written: the graph is read whole once (which warms
    # the page cache a memory-mapped graph is searched from anyway).
    problems = cache_problems(path, deep=True)
    if problems:
        bad, reason = problems[0]
        raise IndexDamagedError(f"{bad}: {reason}; rebuild the graph (`radsift index optimize --backend hnsw`)")
    flags = getattr(faiss, "IO_FLAG_MMAP_IFC", 0) if mmap else 0  # FAISS >= 1.11 maps HNSW graphs
    try:
        index = faiss.read_index(str(path), flags)
    except RuntimeError as exc:
        raise IndexDamagedError(f"{path}: not a readable FAISS HNSW graph ({str(exc).strip().splitlines()[-1]}); "
                                "rebuild it") from exc
    if not hasattr(index, "hnsw"):
        raise IndexDamagedError(f"{path}: holds a FAISS {type(index).__name__}, not an HNSW graph; rebuild it")
    groups = None
    if dups.exists():
        try:
            with np.load(dups, allow_pickle=False) as data:
                groups = (np.asarray(data["order"]), np.asarray(data["offsets"]))
        except Exception as exc:  # noqa: BLE001 - a damaged zip raises BadZipFile, zlib.error, EOFError ...
            raise IndexDamagedError(f"{dups}: unreadable duplicate groups ({type(exc).__name__}: {exc}); rebuild "
                                    "the graph") from None
        reason = check_groups(groups, int(index.ntotal))
        if reason:
            raise IndexDamagedError(f"{dups}: {reason}: the file is damaged; rebuild the graph")
    return index, groups


@contextmanager
def _threads(faiss, threads: int | None) -> Iterator[None]:
    """FAISS's OpenMP threads set to ``threads`` (when given) for the block."""
    previous = faiss.omp_get_max_threads()
    if threads:
        faiss.omp_set_num_threads(int(threads))
    try:
        yield
    finally:
        faiss.omp_set_num_threads(previous)


def _add(faiss, index, vectors: np.ndarray, rows: np.ndarray, threads: int | None, progress) -> None:
    """Add ``vectors[rows]`` to the graph, :data:`BATCH` rows at a time (a memory map is read once)."""
    m = len(rows)
    with _threads(faiss, threads):
        for start in range(0, m, BATCH):
            index.add(rows_of(vectors, rows[start:start + BATCH]))
            if progress is not None:
                progress(min(m, start + BATCH), m)


def _query(query: np.ndarray, dim: int) -> np.ndarray:
    q = np.ascontiguousarray(np.asarray(query, dtype=np.float32).reshape(-1))
    if q.shape[0] != dim:
        raise ConfigError(f"query vector has dimension {q.shape[0]}, the index {dim}")
    return q
