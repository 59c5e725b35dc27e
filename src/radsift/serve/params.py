"""Parameters of the HTTP API: the search options as query parameters, and which fields of each hit to return.

The search options' query parameters come from their one declaration
(:class:`radsift.search.options.SearchOptions`): :func:`search_params` is a FastAPI dependency whose
parameters (names, types, defaults, bounds, descriptions) are derived from it and which answers one
``SearchOptions``, the object the CLI and Python build too. The parameters carry no bounds or
choices of their own (numbers arrive as text): :func:`radsift.search.options.wire_options` reads and
checks them, so a refusal is the sentence the CLI and Python give (the input policy,
:data:`radsift.search.options.POLICY`), answered 422. Metadata filters (``where=key=value``,
``key:value`` or ``key~value``) and targets are checked by :meth:`radsift.Index.search`
(:mod:`radsift.search.options`), so the API, the CLI and Python refuse the same things with the same
words. :func:`parse_fields` raises :class:`radsift.errors.ConfigError` naming the parameter; the app
turns it into a 422 response.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Annotated, Callable, Iterable, Sequence

from fastapi import Depends, HTTPException, Query, Request

from radsift.errors import ConfigError
from radsift.search.options import HttpOption, SearchOptions, http_options, wire_options


def _parameter(option: HttpOption) -> inspect.Parameter:
    # The schema still says what is allowed (enum, minimum, maximum); the checks are wire_options'.
    schema = {"enum": list(option.choices)} if option.choices else {}
    schema.update({key: value for key, value in (("minimum", option.low), ("maximum", option.high))
                   if value is not None})
    query = Query(description=option.help, json_schema_extra=schema or None)
    return inspect.Parameter(option.name, inspect.Parameter.KEYWORD_ONLY, default=option.default,
                             annotation=Annotated[str if option.choices else option.type, query])


def search_params(names: Iterable[str] | None = None) -> Callable[..., SearchOptions]:
    """A FastAPI dependency that takes the search options (or those of ``names``) as query parameters
    and answers them as one :class:`~radsift.search.options.SearchOptions`, read and checked by
    :func:`~radsift.search.options.wire_options` (ConfigError, answered 422, naming the option)."""
    options = http_options(names)

    def dependency(**values) -> SearchOptions:
        return wire_options(values)

    dependency.__signature__ = inspect.Signature([_parameter(o) for o in options],  # type: ignore[attr-defined]
                                                 return_annotation=SearchOptions)
    return dependency


def param_names(names: Iterable[str] | None = None) -> frozenset[str]:
    """The query parameters of :func:`search_params` (``names``, or every search option the API takes)."""
    return frozenset(o.name for o in http_options(names))


def only_params(allowed: frozenset[str]):
    """A dependency that answers 422 for query parameters the endpoint does not know."""

    def check(request: Request) -> None:
        unknown = sorted({k for k in request.query_params.keys() if k not in allowed})
        if unknown:
            known = ", ".join(sorted(allowed)) or "none"
            raise HTTPException(422, f"unknown parameter(s): {', '.join(u[:40] for u in unknown)}; "
                                     f"this endpoint takes: {known}")

    return Depends(check)


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

__all__ = ["FieldSelection", "only_params", "param_names", "parse_fields", "search_params"]
