"""The embedded index: immutable segments (SQLite records, float32 vectors, BM25 term statistics), atomic generations.

Searching an index is :class:`radsift.Index` (in :mod:`radsift.search`, downstream of this package).
"""

from radsift.index.builder import BuildSummary, add_to_index, build_index
from radsift.index.changes import ChangeSummary, delete_from_index, optimize_index
from radsift.index.derived import Derived, push_index
from radsift.index.manifest import FORMAT_VERSION, Manifest
from radsift.index.reader import IndexStore

__all__ = ["FORMAT_VERSION", "BuildSummary", "ChangeSummary", "Derived", "IndexStore", "Manifest", "add_to_index",
           "build_index", "delete_from_index", "optimize_index", "push_index"]
