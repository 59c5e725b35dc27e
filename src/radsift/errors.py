"""Exceptions radsift raises for problems a user can fix.

The CLI prints these as a one-line message (no traceback) and exits with status 2, or 1 for a
damaged index (:class:`IndexDamagedError`: the input was fine, the stored data is not).
"""

from __future__ import annotations


class RadsiftError(Exception):
    """Base class for user-facing errors: the message names the file, row or field."""


class CorpusError(RadsiftError):
    """A corpus file cannot be read as asked (missing column, bad row, duplicate id ...)."""


class IndexStoreError(RadsiftError):
    """An index directory is missing, corrupt, of another format version or model."""


class IndexDamagedError(IndexStoreError):
    """A file of an index generation is missing, truncated, changed or holds impossible values."""


class LexiconError(RadsiftError):
    """A lexicon, rules or gold file is malformed."""


class ConfigError(RadsiftError):
    """A configuration value or file is invalid."""
