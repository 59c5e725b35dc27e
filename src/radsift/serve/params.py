"""Parameters of the HTTP API that only the API has: which fields of each hit to return.

Metadata filters (``where=key=value``, ``key:value`` or ``key~value``) and targets are checked by
:meth:`radsift.Index.search` (:mod:`radsift.search.query`), so the API, the CLI and Python refuse
the same things with the same words. :func:`parse_fields` raises
:class:`radsift.errors.ConfigError` naming the parameter; the app turns it into a 422 response.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from radsift.errors import ConfigError


@dataclass(frozen=True)
class FieldSelection:
    """Which parts of each hit's report to return."""

    sections: tuple[str, ...] | None  # None = every section
    metadata: bool

    @property
    def include_report(self) -> bool:
        return self.metadata or self.sections is None or bool(self.sections)


def parse_fields(fields: Sequence[str] | None, sections: Sequence[str]) -> FieldSelection:
    """Parse ``fields`` (repeated or comma-separated): section names, ``sections``, ``metadata`` or ``none``.

    Without ``fields`` every section and the metadata are returned.

    Raises:
        ConfigError: A name is none of those.
    """
    if not fields:
        return FieldSelection(sections=None, metadata=True)
    names = [n.strip() for f in fields for n in f.split(",") if n.strip()]
    allowed = {*sections, "sections", "metadata", "none"}
    bad = [n for n in names if n not in allowed]
    if bad:
        raise ConfigError(f"fields: unknown field {bad[0][:80]!r}; use {', '.join(sorted(allowed))}")
    picked: tuple[str, ...] | None = tuple(n for n in names if n in sections)
    if "sections" in names:
        picked = None
    return FieldSelection(sections=picked, metadata="metadata" in names)
