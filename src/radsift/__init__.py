"""radsift: offline, negation-aware semantic search for radiology reports."""

from __future__ import annotations

from radsift.records import Hit, Mention, Report, Sentence
from radsift.version import __version__

__all__ = ["Hit", "Index", "Mention", "Report", "Sentence", "__version__", "ask", "draft_impression"]


def __getattr__(name: str):
    # Lazy: importing radsift must not import torch (the CLI and readers stay fast).
    if name == "Index":
        from radsift.search.engine import Index

        return Index
    if name in ("ask", "draft_impression"):  # radsift.rag: retrieval-augmented answers
        import radsift.rag

        return getattr(radsift.rag, name)
    raise AttributeError(name)
