"""HNSW graphs of an index's live generation, kept beside it in ``INDEX/cache/hnsw/``.

A graph is derived data: it is built from a generation's vectors (``radsift index build|add
--backend hnsw``, or ``auto`` at or above the size threshold) and named after that generation, so a
new generation never reads the previous one's graph, and a missing or stale graph costs speed,
never results (search falls back to exact numpy, see :mod:`radsift.index.backends.factory`).
Graphs of generations that are gone are removed when new ones are built.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from radsift.index.store import UNIT_KINDS, IndexStore

GRAPH_DIR = Path("cache") / "hnsw"


def graph_path(index_dir: str | Path, gen_dir: str | Path, kind: str) -> Path:
    """Where the graph of ``kind`` units of generation ``gen_dir`` lives."""
    return Path(index_dir) / GRAPH_DIR / f"{Path(gen_dir).name}.{kind}.faiss"


def build_graphs(index_dir: str | Path, backend: str = "hnsw", *, say: Callable[[str], None] | None = None,
                 **options) -> list[Path]:
    """Build (and save) the HNSW graphs of the live generation's units when ``backend`` resolves to
    ``hnsw`` for their number of rows; remove the graphs of generations that are gone.

    Returns:
        The graph files written (none for ``numpy``, or ``auto`` below the threshold).

    Raises:
        ConfigError: An unknown backend, or ``hnsw`` without its extra installed.
    """
    from radsift.index.backends.factory import resolve_backend

    index_dir = Path(index_dir)
    written = []
    store = IndexStore.open(index_dir)
    try:
        for kind in UNIT_KINDS:
            vectors = store.units(kind).vectors
            if resolve_backend(backend, int(vectors.shape[0])) != "hnsw":
                continue
            from radsift.index.backends.hnsw import HnswBackend

            path = graph_path(index_dir, store.gen_dir, kind)
            if path.exists():
                written.append(path)
                continue
            if say is not None:
                say(f"building the HNSW graph of {vectors.shape[0]:,} {kind} vectors ...")
            path.parent.mkdir(parents=True, exist_ok=True)
            written.append(HnswBackend.build(vectors, **options).save(path))
        live = store.gen_dir.name
    finally:
        store.close()
    folder = index_dir / GRAPH_DIR
    if folder.is_dir():
        for old in folder.iterdir():
            if not old.name.startswith(live + ".") and not old.name.startswith("."):
                old.unlink(missing_ok=True)
    return written
