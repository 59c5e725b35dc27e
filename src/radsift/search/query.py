"""The checks of a search's values: the query's text, choices, whole numbers, targets, metadata filters.

:mod:`radsift.search.options` declares the options and runs these checks on them (through
:meth:`radsift.Index.search`), so the HTTP API, the CLI and the Python API refuse the same things
with the same words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np

from radsift.errors import ConfigError
from radsift.ranking import MODES

LEVELS = ("report", "sentence")
UNITS = ("sentence", "section")
NEGATION = ("aware", "ignore")
#: The limits below are the input policy of every surface (CLI, Python, HTTP); the table that says
#: why each is what it is: :data:`radsift.search.options.POLICY`.
MAX_QUERY_CHARS = 1000
MAX_FILTERS = 20
#: The longest patient id a timeline or a ``patient`` filter takes (an MRN or a FHIR id is far shorter).
MAX_PATIENT_CHARS = 200
#: ``target`` for the whole report (no section restriction).
WHOLE_REPORT = "report"
#: ``KEY=VALUE`` matches exactly; ``KEY~VALUE`` case-insensitively by substring; ``KEY>=VALUE`` and
#: ``KEY<=VALUE`` compare as text (ISO dates ``YYYY-MM-DD`` compare as dates: ``date>=2025-01-01``).
FILTER_OPS = ("=", "~", ">=", "<=")

__all__ = ["LEVELS", "MODES", "UNITS", "NEGATION", "Filter", "check_alpha", "check_bool", "check_choice", "check_rerank",
           "check_patient", "check_target", "normalize_query", "parse_where", "whole_number"]


@dataclass(frozen=True)
class Filter:
    """One metadata filter: ``key=value`` (exact), ``key~value`` (case-insensitive substring), ``key>=value`` or
    ``key<=value`` (a range, compared as text: ISO dates compare as dates)."""

    key: str
    value: str
    op: str = "="

    def __str__(self) -> str:
        return f"{self.key}{self.op}{self.value}"


#: Characters taken out of a query: C0/C1 controls (tabs and newlines become spaces first; a NUL is refused
#: before, see :func:`normalize_query`) and the invisible format characters (zero-width space, joiners, BOM,
#: bidi marks). A patient id may carry none of them (:func:`check_patient`).
_INVISIBLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")
#: Most hits one search (one page) may ask for.
MAX_K = 1000
#: Most candidates one search may rerank with the cross-encoder.
MAX_RERANK = 1000
#: Deepest a page may start (a deeper offset is refused; one past the end of the list gives an empty page).
MAX_OFFSET = 1_000_000


def normalize_query(query: str) -> str:
    """The query's text: other controls and invisible characters out, whitespace collapsed.

    Raises:
        ConfigError: Not text (None, bytes, a list ...), not valid UTF-8, holding a NUL, empty once cleaned,
            or too long.
    """
    if not isinstance(query, str):
        raise ConfigError(f"the query must be text, not {type(query).__name__}")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: bytes that were not UTF-8 on the command line
        raise ConfigError("the query is not valid UTF-8 text") from None
    if "\x00" in query:  # refused, not removed: a NUL cuts C strings short in whatever reads the query next
        raise ConfigError("the query holds a NUL character (U+0000); it is refused, not removed")
    text = " ".join(_INVISIBLE.sub("", query).split())
    if not text:
        raise ConfigError("the query is empty (nothing but spaces, control or invisible characters)")
    if len(text) > MAX_QUERY_CHARS:
        raise ConfigError(f"the query is {len(text)} characters long; the limit is {MAX_QUERY_CHARS}")
    return text


def check_patient(patient: object, name: str = "patient") -> str:
    """A patient id as given (CLI, Python, URL): text, spaces around it dropped, 1 to
    :data:`MAX_PATIENT_CHARS` characters, no control or invisible character (refused, not removed: two
    different ids must never become one).

    Raises:
        ConfigError: Not text, empty, too long, or holding a control or invisible character.
    """
    if not isinstance(patient, str):
        raise ConfigError(f"{name}: must be text, not {type(patient).__name__}")
    try:
        patient.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(f"{name}: the patient id is not valid UTF-8 text") from None
    text = patient.strip()
    if not text:
        raise ConfigError(f"{name}: empty patient id")
    if len(text) > MAX_PATIENT_CHARS:
        raise ConfigError(f"{name}: the patient id is {len(text)} characters long; the limit is {MAX_PATIENT_CHARS}")
    if _INVISIBLE.search(text) or any(c in text for c in "\t\n\r"):
        raise ConfigError(f"{name}: the patient id holds a control or invisible character")
    return text


def check_choice(name: str, value: str, allowed: Iterable[str]) -> str:
    allowed = tuple(allowed)
    if not isinstance(value, str) or value not in allowed:
        raise ConfigError(f"{name} must be one of {', '.join(allowed)}, not {str(value)[:80]!r}")
    return value


def parse_where(where: Iterable[str] | Mapping[str, str | Iterable[str]] | None,
                known_keys: Sequence[str] | None = None) -> tuple[Filter, ...]:
    """Parse metadata filters: ``KEY=VALUE`` (or ``KEY:VALUE``) exact, ``KEY~VALUE`` by substring.

    Filters on different keys must all match; several filters on one key match if any does.
    A mapping ``{key: value or [values]}`` means exact filters.

    Args:
        where: The filters.
        known_keys: The index's metadata keys: a filter on any other key is an error
            (None = not checked).

    Raises:
        ConfigError: A filter has no separator, an empty key or value, an unknown key, or there
            are more than :data:`MAX_FILTERS`.
    """
    if not where:
        return ()
    out: list[Filter] = []
    if isinstance(where, Mapping):
        for key, value in where.items():
            values = [value] if isinstance(value, str) else list(value)
            out.extend(Filter(str(key), str(v)) for v in values)
    else:
        for item in where:
            if isinstance(item, Filter):  # already parsed (the HTTP API parses once for its audit log)
                out.append(item)
                continue
            item = str(item)
            cut = min((i for i in (item.find(c) for c in ":=~<>") if i >= 0), default=-1)
            op = item[cut:cut + 2] if cut >= 0 and item[cut:cut + 2] in (">=", "<=") else item[cut:cut + 1]
            key, value = (item[:cut].strip(), item[cut + len(op):].strip()) if cut >= 0 else ("", "")
            if cut < 0 or op in ("<", ">") or not key or not value:
                raise ConfigError(f"where: {item[:80]!r} is not KEY=VALUE, KEY~VALUE, KEY>=VALUE or KEY<=VALUE "
                                  "(e.g. where=indication~cough, where=date>=2025-01-01)")
            out.append(Filter(key, value, op if op in ("~", ">=", "<=") else "="))
    if len(out) > MAX_FILTERS:
        raise ConfigError(f"where: at most {MAX_FILTERS} filters, got {len(out)}")
    if known_keys is not None:
        known = set(known_keys)
        for f in out:
            if f.key not in known:
                listed = ", ".join(sorted(known)) or "none: this index has no metadata"
                raise ConfigError(f"where: unknown metadata key {f.key[:80]!r}; known keys: {listed}")
    return tuple(out)


def check_target(target: str | None, sections: Sequence[str]) -> str | None:
    """The section to search, or None for the whole report (``report``, ``all`` or None).

    Raises:
        ConfigError: ``target`` is neither ``report`` nor a section of this index.
    """
    if target in (None, "", WHOLE_REPORT, "all"):
        return None
    if target not in sections:
        allowed = ", ".join([*sections, WHOLE_REPORT])
        raise ConfigError(f"target must be one of {allowed}, not {str(target)[:80]!r}")
    return target


def whole_number(name: str, value, low: int, high: int, what: str) -> int:
    """``value`` as an int within [low, high]; True, 1.5 or "10" are errors naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ConfigError(f"{name}: must be a whole number of {what}, not {str(value)[:40]!r}")
    if not low <= int(value) <= high:
        raise ConfigError(f"{name}: must be from {low} to {high}, not {int(value)}")
    return int(value)


def check_rerank(rerank) -> int:
    """Candidates to rerank: 0 (off) or a whole number up to :data:`MAX_RERANK`."""
    if isinstance(rerank, bool) or not isinstance(rerank, (int, np.integer)) or rerank < 0:
        raise ConfigError(f"rerank: must be 0 (off) or a positive number of candidates, not {str(rerank)[:40]!r}")
    if rerank > MAX_RERANK:
        raise ConfigError(f"rerank: must be from 0 to {MAX_RERANK}, not {int(rerank)}")
    return int(rerank)


def check_alpha(alpha: float | None) -> float | None:
    """The hybrid's dense share: None (the model's own) or a number within [0, 1]."""
    if alpha is None:
        return None
    try:
        value = float(alpha)
    except (TypeError, ValueError):
        raise ConfigError(f"alpha: must be a number within [0, 1], not {str(alpha)[:40]!r}") from None
    if not 0.0 <= value <= 1.0:  # also refuses NaN
        raise ConfigError(f"alpha: must be within [0, 1] (the dense share of the hybrid), not {value:g}")
    return value


def check_bool(name: str, value) -> bool:
    """``value`` as a bool: True or False only (1, "yes" are errors naming ``name``)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ConfigError(f"{name}: must be true or false, not {str(value)[:40]!r}")
    return bool(value)
