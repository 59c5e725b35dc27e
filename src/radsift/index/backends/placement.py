"""Where a generation's vector backends live, and opening the one a search asks for.

An index keeps its derived vector structures beside its generations, named after the generation
they were built from, so a new generation never reads the previous one's:

- the HNSW graph of each unit kind in ``INDEX/cache/hnsw/<generation>.<kind>.faiss``
  (:func:`graph_path`; built and extended by :mod:`radsift.index.graphs`);
- the Milvus collections a generation was pushed to, recorded in ``INDEX/cache/milvus/<generation>.json``
  (a :class:`~radsift.index.backends.milvus.MilvusPlace` reads it).

:func:`open_backend` opens the backend a search names (``auto``, ``numpy``, ``hnsw``, ``milvus``:
:func:`~radsift.index.backends.factory.create_backend`) over a store's live generation, once per
generation (the store's cache).
"""

from __future__ import annotations

from pathlib import Path

from radsift.index.backends.base import VectorBackend
from radsift.index.backends.factory import create_backend
from radsift.index.backends.milvus import MilvusPlace

#: Graphs live in ``INDEX/cache/hnsw/``.
GRAPH_DIR = Path("cache") / "hnsw"


def graph_path(index_dir: str | Path, gen_dir: str | Path, kind: str) -> Path:
    """Where the graph of ``kind`` units of generation ``gen_dir`` lives."""
    return Path(index_dir) / GRAPH_DIR / f"{Path(gen_dir).name}.{kind}.faiss"


def milvus_place(store, kind: str, uri: str | None = None) -> MilvusPlace:
    """Where the store's generation keeps its ``kind`` vectors in Milvus (``uri``: a server that moved)."""
    return MilvusPlace(store.index_dir, store.gen_dir, kind, uri)


def open_backend(store, name: str, kind: str, milvus_uri: str | None = None) -> VectorBackend:
    """The vector backend ``name`` over the ``kind`` vectors of ``store``'s generation, opened once per generation.

    Args:
        store: An open :class:`~radsift.index.reader.IndexStore`.
        name: ``auto``, ``numpy``, ``hnsw`` or ``milvus`` (see :mod:`radsift.index.backends.factory`).
        kind: ``sentence`` or ``section``.
        milvus_uri: The Milvus URI when it is not the one recorded with the index.
    """
    graph = graph_path(store.index_dir, store.gen_dir, kind)

    def make() -> VectorBackend:
        backend = create_backend(name, store.units(kind).vectors, graph=graph,
                                 milvus=milvus_place(store, kind, milvus_uri))
        if getattr(backend, "path", None) is not None:  # a memory-mapped graph: changed under the store, an error
            store.watch.add([graph, graph.with_name(graph.name + ".dups.npz")], required=False)
        return backend

    return store.cached(("backend", name, kind), make)


__all__ = ["GRAPH_DIR", "graph_path", "milvus_place", "open_backend"]
