"""Query handling: validate search options and parse metadata filters."""

from __future__ import annotations

from typing import Iterable, Mapping

from radsift.errors import ConfigError

MODES = ("dense", "bm25", "hybrid", "hybrid-rrf")
LEVELS = ("report", "sentence")
UNITS = ("sentence", "section")
MAX_QUERY_CHARS = 1000


def normalize_query(query: str) -> str:
    """Collapse whitespace; an empty query is an error."""
    text = " ".join(str(query).split())
    if not text:
        raise ConfigError("the query is empty")
    if len(text) > MAX_QUERY_CHARS:
        raise ConfigError(f"the query is {len(text)} characters long; the limit is {MAX_QUERY_CHARS}")
    return text


def check_choice(name: str, value: str, allowed: Iterable[str]) -> str:
    allowed = tuple(allowed)
    if value not in allowed:
        raise ConfigError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
    return value


def parse_where(where: Iterable[str] | Mapping[str, str | Iterable[str]] | None) -> dict[str, list[str]]:
    """Parse ``KEY=VALUE`` (or ``KEY:VALUE``) filters into ``{key: [values]}``.

    Filters on different keys must all match; repeated values of one key match any of them.
    """
    out: dict[str, list[str]] = {}
    if not where:
        return out
    if isinstance(where, Mapping):
        for key, value in where.items():
            values = [value] if isinstance(value, str) else list(value)
            out.setdefault(str(key), []).extend(str(v) for v in values)
        return out
    for item in where:
        sep = "=" if "=" in item else ":" if ":" in item else None
        key, value = item.split(sep, 1) if sep else ("", "")
        if not sep or not key.strip():
            raise ConfigError(f"filter {item!r} is not KEY=VALUE")
        out.setdefault(key.strip(), []).append(value.strip())
    return out
