"""Pluggable vector backends (txtai-style base + factory)."""

from radsift.index.backends.base import VectorBackend
from radsift.index.backends.factory import create_backend

__all__ = ["VectorBackend", "create_backend"]
