"""Search parameters of the HTTP API: metadata filters, targets and field selections, checked.

Every function raises :class:`radsift.errors.ConfigError` with a message that names the parameter;
the app turns it into a 422 response.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from radsift.errors import ConfigError

MAX_FILTERS = 20
WHOLE_REPORT = "report"


def parse_filters(where: Sequence[str] | None, known_keys: Sequence[str]) -> dict[str, list[str]]:
    """Parse ``where=key:value`` parameters (``key=value`` also works) into ``{key: [values]}``.

    Values given for one key match any of them; different keys must all match.

    Raises:
        ConfigError: A filter has no separator, an empty key or value, an unknown key, or there are
            more than 20 of them.
    """
    out: dict[str, list[str]] = {}
    items = list(where or [])
    if len(items) > MAX_FILTERS:
        raise ConfigError(f"where: at most {MAX_FILTERS} filters, got {len(items)}")
    known = set(known_keys)
    for item in items:
        cut = min((i for i in (item.find(":"), item.find("=")) if i >= 0), default=-1)
        key, value = (item[:cut].strip(), item[cut + 1:].strip()) if cut >= 0 else ("", "")
        if cut < 0 or not key or not value:
            raise ConfigError(f"where: {item[:80]!r} is not KEY:VALUE (e.g. where=exam:XR CHEST PA)")
        if key not in known:
            listed = ", ".join(sorted(known)) or "none: this index has no metadata"
            raise ConfigError(f"where: unknown metadata key {key[:80]!r}; known keys: {listed}")
        out.setdefault(key, []).append(value)
    return out


def check_target(target: str, sections: Sequence[str]) -> str | None:
    """The section to search (``None`` for the whole report).

    Raises:
        ConfigError: ``target`` is neither ``report`` nor a section of this index.
    """
    if target == WHOLE_REPORT:
        return None
    if target not in sections:
        allowed = ", ".join([*sections, WHOLE_REPORT])
        raise ConfigError(f"target must be one of {allowed}, not {target[:80]!r}")
    return target


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
