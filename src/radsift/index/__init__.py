"""The embedded index: SQLite records, float32 vectors, bm25s, atomic generations.

Searching an index is :class:`radsift.Index` (in :mod:`radsift.search`, downstream of this package).
"""

from radsift.index.builder import BuildSummary, add_to_index, build_index
from radsift.index.manifest import FORMAT_VERSION, Manifest
from radsift.index.store import IndexStore

__all__ = ["FORMAT_VERSION", "BuildSummary", "IndexStore", "Manifest", "add_to_index", "build_index"]
