"""Pluggable vector backends (txtai-style base + factory)."""

from radsift.index.backends.base import VectorBackend
from radsift.index.backends.factory import BACKENDS, create_backend, hnsw_min_rows, resolve_backend

__all__ = ["BACKENDS", "VectorBackend", "create_backend", "hnsw_min_rows", "resolve_backend"]
