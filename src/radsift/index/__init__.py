"""The embedded index: SQLite records, float32 vectors, bm25s, atomic generations."""

from radsift.index.builder import BuildSummary, add_to_index, build_index
from radsift.index.manifest import FORMAT_VERSION, Manifest
from radsift.index.store import IndexStore

__all__ = ["FORMAT_VERSION", "BuildSummary", "IndexStore", "Manifest", "add_to_index", "build_index", "Index"]


def __getattr__(name: str):
    if name == "Index":  # the search-level facade lives downstream, in radsift.search
        from radsift.search.engine import Index

        return Index
    raise AttributeError(name)
