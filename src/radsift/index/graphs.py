"""HNSW graphs of an index's live generation, kept beside it in ``INDEX/cache/hnsw/``.

A graph is derived data: it is built from a generation's vectors (``radsift index build|add
--backend hnsw``, or ``auto`` at or above the size threshold) and named after that generation, so a
new generation never reads the previous one's graph, and a missing or stale graph costs speed,
never results (search falls back to exact numpy, see :mod:`radsift.index.backends.factory`).
Graphs of generations that are gone are removed when new ones are built.

A new generation's graph is *extended* from the previous generation's when it can be, so that an
add costs what it adds (minutes for a 1M-row graph built from scratch): each graph is saved with
its :class:`Layout` (``<file>.layout.npz``: the segments it was built over, each one's deleted
reports, and per node a hash of its vector and where one of its rows lies). A generation whose
segments are the earlier graph's, in the same order, followed by new ones (``index add``; deletions
in the old segments allowed: ``index delete``, ``add --replace``) gets a copy of the earlier graph
grown by the new rows (:meth:`~radsift.index.backends.hnsw.HnswBackend.grow`): a new row
bit-identical to a node's vector joins that node, every other distinct new vector becomes a node,
and rows of deleted reports leave their nodes (a node left empty is never returned). Anything else
builds the graph from scratch: merged or rolled-back segments (``index optimize``, ``index
rollback``), other graph options, a graph that would more than double (its quantizer was trained on
the old rows), or more than :data:`MAX_EMPTY` of its nodes holding only deleted rows.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from radsift.errors import IndexStoreError
from radsift.index.backends.duplicates import duplicate_groups, nodes_of, row_hashes, rows_of
from radsift.index.backends.factory import resolve_backend
from radsift.index.backends.hnsw import BATCH, DEFAULTS, HnswBackend, read_graph
from radsift.index.backends.placement import GRAPH_DIR, graph_path
from radsift.index.format import GEN_PREFIX, UNIT_KINDS
from radsift.index.integrity import cache_problems, record_cache
from radsift.index.reader import IndexStore

LAYOUT_VERSION = 1
#: Build from scratch instead of extending when more than this share of the nodes would be empty.
MAX_EMPTY = 0.2
#: Build options that shape a graph (an earlier graph built with others is not extended).
SHAPING = ("dtype", "connectivity", "expansion_add")


def layout_path(graph: str | Path) -> Path:
    """The sidecar that records what the graph file ``graph`` was built over (:class:`Layout`)."""
    graph = Path(graph)
    return graph.with_name(graph.name + ".layout.npz")


@dataclass
class Layout:
    """What a saved graph was built over, so that a later generation's graph can extend it.

    Attributes:
        segments: The generation's segments in order, each ``name``, ``vectors`` (the SHA-256 of its
            vector file that the manifest records: a segment name can come back after a rollback),
            ``deleted`` (its deleted report rows) and ``units`` (its live rows of this kind).
        options: The graph-shaping build options (:data:`SHAPING`).
        hashes: Per node, the :func:`~radsift.index.backends.duplicates.row_hashes` of its vector.
        node_segment: Per node, the segment (index into ``segments``) of one of its rows ...
        node_row: ... and that row in the segment's vector file: still there once the row's report
            is deleted, so a new row equal to an empty node's vector is checked against it and
            fills the node again (a ``--replace`` that keeps most sentences adds few nodes).
    """

    segments: list[dict]
    options: dict
    hashes: np.ndarray
    node_segment: np.ndarray
    node_row: np.ndarray

    def save(self, graph: Path) -> Path:
        """Write the sidecar of ``graph`` (beside its place, then renamed into place)."""
        path = layout_path(graph)
        tmp = path.with_name(f".{path.stem}.tmp-{os.getpid()}.npz")
        meta = {"version": LAYOUT_VERSION, "segments": self.segments, "options": self.options}
        try:
            np.savez(tmp, meta=np.array(json.dumps(meta)), hashes=self.hashes,
                     node_segment=self.node_segment, node_row=self.node_row)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        return path

    @classmethod
    def load(cls, graph: Path) -> "Layout":
        """The sidecar of ``graph``.

        Raises:
            ValueError: A missing, unreadable (a damaged zip too) or other-version sidecar, naming it.
        """
        path = layout_path(graph)
        try:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"]))
                if meta.get("version") != LAYOUT_VERSION:
                    raise ValueError(f"layout version {meta.get('version')!r}, not {LAYOUT_VERSION}")
                out = cls(list(meta["segments"]), dict(meta["options"]), data["hashes"], data["node_segment"],
                          data["node_row"])
        except Exception as exc:  # noqa: BLE001 - a damaged zip raises BadZipFile, zlib.error, EOFError ...
            raise ValueError(f"{path}: {type(exc).__name__}: {exc}") from None
        if not len(out.hashes) == len(out.node_segment) == len(out.node_row):
            raise ValueError(f"{path}: per-node arrays of different lengths")
        if not all(isinstance(seg, dict) for seg in out.segments) or (len(out.node_segment) and (
                int(out.node_segment.min()) < 0 or int(out.node_segment.max()) >= len(out.segments))):
            raise ValueError(f"{path}: node segments out of range")
        return out


@dataclass
class _Growth:
    """How the graph of the live generation grows from an earlier one (:func:`_plan`)."""

    source: Path  # the earlier graph file
    index: object  # its FAISS index, read into memory
    rows_before: int  # rows it was built over
    node_of_row: np.ndarray  # the node of each live row
    new_nodes: np.ndarray  # rows whose vectors become new nodes, in node order
    layout: Layout  # the grown graph's
    added: int  # rows of the new segments
    dropped: int  # rows of deleted reports that left their nodes


def build_graphs(index_dir: str | Path, backend: str = "hnsw", *, say: Callable[[str], None] | None = None,
                 extend: bool = True, **options) -> list[Path]:
    """Build (and save) the HNSW graphs of the live generation's units when ``backend`` resolves to
    ``hnsw`` for their number of rows; remove the graphs of generations that are gone.

    A graph is extended from the previous generation's graph when that is possible (see the
    module docstring) and ``extend`` is true, else built from scratch; ``say`` is told which.

    Args:
        index_dir: The index directory.
        backend: ``hnsw``, ``auto`` (``hnsw`` from the size threshold on) or ``numpy`` (no graph).
        say: Called with a line before each graph is extended or built.
        extend: False builds every graph from scratch (``index optimize``: a fresh graph, no empty node).
        **options: :meth:`~radsift.index.backends.hnsw.HnswBackend.build` options.

    Returns:
        The graph files written (none for ``numpy``, or ``auto`` below the threshold).

    Raises:
        ConfigError: An unknown backend, or ``hnsw`` without its extra installed.
    """
    index_dir = Path(index_dir)
    written = []
    store = IndexStore.open(index_dir)
    try:
        for kind in UNIT_KINDS:
            vectors = store.units(kind).vectors
            if resolve_backend(backend, int(vectors.shape[0])) != "hnsw":
                continue
            path = graph_path(index_dir, store.gen_dir, kind)
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                _write_graph(store, kind, path, extend, say or (lambda _: None), options)
            written.append(path)
        live = store.gen_dir.name
    finally:
        store.close()
    folder = index_dir / GRAPH_DIR
    if folder.is_dir():
        for old in folder.iterdir():
            if not old.name.startswith(live + ".") and not old.name.startswith("."):
                old.unlink(missing_ok=True)
    return written


def _write_graph(store: IndexStore, kind: str, path: Path, extend: bool, say: Callable[[str], None],
                 options: dict) -> None:
    """Extend the earlier graph into ``path`` or build it from scratch; the layout is saved first, so
    a graph file never lacks its layout (a crash in between leaves a layout nothing reads)."""
    vectors = store.units(kind).vectors
    try:
        plan = _plan(store, kind, options) if extend else None
    except (IndexStoreError, IndexError, ValueError, KeyError, TypeError) as exc:  # a damaged earlier graph
        plan = f"the earlier graph cannot be extended ({exc}); built anew"
    if isinstance(plan, _Growth):
        say(f"extending the HNSW graph of {plan.rows_before:,} {kind} vectors ({plan.source.name}) with "
            f"{plan.added:,} new rows ({len(plan.new_nodes):,} new nodes"
            f"{f', {plan.dropped:,} deleted rows dropped' if plan.dropped else ''}) ...")
        graph = HnswBackend.grow(plan.index, vectors, plan.node_of_row, plan.new_nodes,
                                 node_hashes=plan.layout.hashes, threads=options.get("threads"),
                                 progress=options.get("progress"))
        layout = plan.layout
    else:
        say(f"building the HNSW graph of {vectors.shape[0]:,} {kind} vectors{f' ({plan})' if plan else ''} ...")
        graph = HnswBackend.build(vectors, **options)
        first = np.arange(vectors.shape[0]) if graph.groups is None else graph.groups[0][graph.groups[1][:-1]]
        layout = _layout(store, kind, options, graph.node_hashes, first)
    layout.save(path)
    graph.save(path)
    record_cache(path, [path.with_name(path.name + ".dups.npz"), layout_path(path)])  # checked by verify and on read


def _layout(store: IndexStore, kind: str, options: dict, hashes: np.ndarray, first: np.ndarray,
            earlier: Layout | None = None) -> Layout:
    """The layout of a graph over the live generation whose nodes (after ``earlier``'s) have these
    ``hashes`` and these ``first`` rows (store rows)."""
    segment, row = store.locations(kind, first)
    segments = [{"name": seg.name, "vectors": _vectors_sha(seg.info, kind), "deleted": seg.deleted.tolist(),
                 "units": seg.n_units(kind)} for seg in store.segments]
    layout = Layout(segments, _shaping(options), np.asarray(hashes, dtype=np.int64), segment.astype(np.int32),
                    row.astype(np.int64))
    if earlier is not None:
        layout.hashes = np.concatenate([earlier.hashes, layout.hashes])
        layout.node_segment = np.concatenate([earlier.node_segment, layout.node_segment])
        layout.node_row = np.concatenate([earlier.node_row, layout.node_row])
    return layout


def _vectors_sha(info, kind: str) -> str | None:
    return (info.get("files") or {}).get(f"{kind}_vectors.npy", {}).get("sha256")


def _shaping(options: dict) -> dict:
    """The graph-shaping options of a build with ``options`` (defaults filled in)."""
    return {k: options.get(k, DEFAULTS[k]) for k in SHAPING}


def _earlier_graph(index_dir: Path, live: str, kind: str) -> Path | None:
    """The newest graph of ``kind`` of another generation than ``live`` that has a layout."""
    best, number = None, -1
    for path in (index_dir / GRAPH_DIR).glob(f"{GEN_PREFIX}*.{kind}.faiss"):
        gen = path.name.split(".", 1)[0]
        try:
            n = int(gen[len(GEN_PREFIX):])
        except ValueError:
            continue
        if gen != live and n > number and layout_path(path).exists():
            best, number = path, n
    return best


def _plan(store: IndexStore, kind: str, options: dict) -> _Growth | str | None:
    """How the earlier graph grows into the live generation's, or why it cannot (None: there is none).

    Reads the earlier graph into memory and the new segments' vectors; nothing is written.
    """
    source = _earlier_graph(store.index_dir, store.gen_dir.name, kind)
    if source is None:
        return None
    damaged = cache_problems(source, only=(layout_path(source).name,))  # read_graph checks the graph itself
    if damaged:
        return f"{damaged[0][0].name} of the earlier graph: {damaged[0][1]}; built anew"
    try:
        earlier = Layout.load(source)
    except ValueError as exc:
        return f"the layout of {source.name} cannot be read ({exc}); built anew"
    if earlier.options != _shaping(options):
        return f"other graph options than {source.name}'s"
    old, segs = earlier.segments, store.segments
    if len(segs) < len(old) or any(o.get("name") != s.name or o.get("vectors") != _vectors_sha(s.info, kind)
                                   for o, s in zip(old, segs)):
        return f"the segments of {source.name} are not the first ones any more (an optimize or a rollback)"
    # Old live rows -> live rows now (-1: their report was deleted since); deletions never come back.
    parts = []
    for o, seg in zip(old, segs):
        gone = np.asarray(o.get("deleted", []), dtype=np.int64)
        if not np.isin(gone, seg.deleted).all():
            return f"a report deleted in {source.name} is back (a rollback)"
        now = seg.unit_global(kind)
        if gone.size:
            live = np.ones(seg.n_reports, dtype=bool)
            live[gone] = False
            now = now[live[seg.array(f"{kind}_report")]]
        if now.shape[0] != o.get("units"):
            return f"segment {seg.name} does not hold the rows {source.name} was built over"
        parts.append(now)
    before = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    try:
        index, groups = read_graph(source, mmap=False)
    except IndexStoreError as exc:
        return str(exc)
    nodes = int(index.ntotal)
    if before.shape[0] != (nodes if groups is None else int(groups[1][-1])) or len(earlier.hashes) != nodes:
        return f"the graph of {source.name} does not match its layout"
    vectors = store.units(kind).vectors
    n, start = int(vectors.shape[0]), sum(seg.n_units(kind) for seg in segs[:len(old)])
    node_of_row = np.full(n, -1, dtype=np.int64)
    kept = before >= 0
    node_of_row[before[kept]] = nodes_of(groups, before.shape[0])[kept]
    if np.any(node_of_row[:start] < 0):
        return f"the graph of {source.name} does not cover the old segments' rows"
    # The new segments' rows: into the node of a bit-identical vector, else new nodes (one per distinct vector).
    added = np.arange(start, n, dtype=np.int64)
    hashes = row_hashes(vectors, added)
    node_of_row[start:] = _known_nodes(store, kind, earlier, added, hashes)
    fresh = np.flatnonzero(node_of_row[start:] < 0)
    first, group = _distinct(vectors, added[fresh], hashes[fresh])
    node_of_row[added[fresh]] = nodes + group
    total = nodes + first.shape[0]
    if first.shape[0] > nodes:
        return f"the graph of {source.name} would more than double ({nodes:,} nodes, {first.shape[0]:,} new)"
    empty = int(np.count_nonzero(np.bincount(node_of_row, minlength=total) == 0))
    if empty > MAX_EMPTY * total:
        return (f"{empty:,} of its {total:,} nodes would hold only deleted rows, more than "
                f"{MAX_EMPTY:.0%}: rebuilt without them")
    layout = _layout(store, kind, options, hashes[fresh][first], added[fresh][first], earlier)
    return _Growth(source, index, before.shape[0], node_of_row, added[fresh][first], layout, n - start,
                   int(np.count_nonzero(~kept)))


def _known_nodes(store: IndexStore, kind: str, earlier: Layout, rows: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """The earlier graph's node whose vector is bit-identical to each of ``rows`` (-1: none).

    A hash match is checked against the node's recorded row (read from its segment's vector file,
    which holds the row even when its report was deleted since).
    """
    out = np.full(rows.shape[0], -1, dtype=np.int64)
    if not len(earlier.hashes) or not rows.size:
        return out
    sorter = np.argsort(earlier.hashes, kind="stable")
    node = sorter[np.minimum(np.searchsorted(earlier.hashes, hashes, sorter=sorter), len(sorter) - 1)]
    hit = np.flatnonzero(earlier.hashes[node] == hashes)
    vectors = store.units(kind).vectors
    files: dict[int, np.ndarray] = {}
    for s in range(0, hit.size, BATCH):
        at = hit[s:s + BATCH]
        mine = rows_of(vectors, rows[at])
        theirs = np.empty_like(mine)
        seg, local = earlier.node_segment[node[at]], earlier.node_row[node[at]]
        for i in np.unique(seg).tolist():
            if i not in files:
                files[i] = store.segments[i].array(f"{kind}_vectors", mmap=True)
            theirs[seg == i] = files[i][local[seg == i]]
        same = (mine == theirs).all(axis=1)
        out[at[same]] = node[at[same]]
    return out


def _distinct(vectors, rows: np.ndarray, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct vectors among ``rows``: positions (in ``rows``) of the first row of each, and the
    number of each row's vector."""
    groups = duplicate_groups(vectors, hashes=hashes, rows=rows)
    first = np.arange(rows.shape[0], dtype=np.int64) if groups is None else groups[0][groups[1][:-1]]
    return first, nodes_of(groups, rows.shape[0])
