"""radsift: offline, negation-aware semantic search for radiology reports."""

from __future__ import annotations

__version__ = "0.1.0"

from radsift.records import Hit, Mention, Report, Sentence

__all__ = ["Hit", "Index", "Mention", "Report", "Sentence", "__version__"]


def __getattr__(name: str):
    # Lazy: importing radsift must not import torch (the CLI and readers stay fast).
    if name == "Index":
        from radsift.search.engine import Index

        return Index
    raise AttributeError(name)
