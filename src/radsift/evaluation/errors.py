"""Errors of the evaluation package.

Both derive from :class:`radsift.errors.RadsiftError`, so the CLI prints them as one line
and exits with status 2.
"""

from __future__ import annotations

from radsift.errors import RadsiftError


class EvaluationError(RadsiftError):
    """An evaluation cannot run as asked (unknown metric, no query in common, bad run entry ...)."""


class TrecFormatError(EvaluationError):
    """A queries, run or qrels file is malformed; the message names the file and line."""
