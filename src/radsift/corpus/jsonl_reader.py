"""JSON Lines corpora: one JSON object per line, one report per object."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from radsift.corpus.options import ReaderOptions
from radsift.corpus.rows import Parsed, assemble, decoded_lines, scalar_text
from radsift.errors import CorpusError
from radsift.text import canonical_section

_RESERVED = ("sections", "metadata")


def _fields(obj: dict[str, Any]) -> str:
    return ", ".join(obj) if obj else "(none)"


def _check_first(path: Path, line: int, obj: dict[str, Any], options: ReaderOptions, id_field: str) -> None:
    """The first object acts as the header: fields the options name must be in it."""
    where = f"{path} line {line}"
    if id_field not in obj:
        hint = "(--id-column)" if options.id_column else "(pass --id-column FIELD)"
        raise CorpusError(f"{where}: no field {id_field!r} {hint}; fields: {_fields(obj)}")
    for name, source in options.sections.items():
        if source not in obj:
            raise CorpusError(f"{where}: no field {source!r} (--section {name}={source}); fields: {_fields(obj)}")
    if options.text_column is not None and options.text_column not in obj:
        raise CorpusError(f"{where}: no field {options.text_column!r} (--text-column); fields: {_fields(obj)}")
    if not options.sections and options.text_column is None and not isinstance(obj.get("sections"), dict):
        raise CorpusError(
            f"{where}: no sections: give each object a \"sections\" object, or pass --section NAME=FIELD "
            f"or --text-column FIELD; fields: {_fields(obj)}"
        )


def _text_field(obj: dict[str, Any], key: str) -> str | None:
    """A field holding report text: a string, a number or null; anything else raises ValueError."""
    value = obj.get(key)
    if isinstance(value, (list, dict)):
        raise ValueError(f"field {key!r}: expected text, got a JSON {type(value).__name__}")
    return scalar_text(value)


def _to_report(obj: dict[str, Any], options: ReaderOptions, id_field: str) -> Any:
    """Build the report of one object, or return a problem string."""
    if id_field not in obj:
        return f"no field {id_field!r}"
    report_id = scalar_text(obj[id_field])
    if report_id is None or not report_id.strip():
        return f"empty id in field {id_field!r}"
    sections: list[tuple[str, str | None]] = []
    given = obj.get("sections")
    if given is not None:
        if not isinstance(given, dict):
            return "field 'sections': expected an object of section name -> text"
        for name, text in given.items():
            if isinstance(text, (list, dict)):
                return f"field 'sections.{name}': expected text, got a JSON {type(text).__name__}"
            sections.append((canonical_section(name), scalar_text(text)))
    try:
        sections.extend((name, _text_field(obj, source)) for name, source in options.sections.items())
        free_text = _text_field(obj, options.text_column) if options.text_column is not None else None
    except ValueError as exc:
        return str(exc)
    used = {id_field, options.text_column, *options.sections.values(), *_RESERVED}
    metadata = [(key, scalar_text(value)) for key, value in obj.items() if key not in used]
    extra = obj.get("metadata")
    if extra is not None:
        if not isinstance(extra, dict):
            return "field 'metadata': expected an object"
        metadata.extend((str(key), scalar_text(value)) for key, value in extra.items())
    return assemble(report_id.strip(), free_text, sections, metadata)


def read_jsonl(path: Path, options: ReaderOptions) -> Iterator[Parsed]:
    """Yield one :class:`Parsed` per non-blank line of a JSON Lines file.

    Each line is an object. The id is field ``options.id_column`` (default ``id``). Sections
    come from a ``"sections"`` object (names mapped with ``canonical_section``), from
    ``options.sections`` (name -> field) and/or from ``options.text_column``; other top-level
    scalar fields become metadata, and a ``"metadata"`` object is merged into it. Lists
    and nested objects other than these two are left out.

    The first object acts as a header: a field the options name but it lacks is a
    :class:`CorpusError`. Later objects may leave out section fields (their section is
    empty) but not the id.
    """
    id_field = options.id_column or "id"
    first = True
    with path.open("rb") as handle:
        for number, line, problem in decoded_lines(path, handle, options.encoding):
            location = f"{path} line {number}"
            if problem is not None:
                yield Parsed(location, problem=problem)
                continue
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                yield Parsed(location, problem=f"invalid JSON: {exc.msg} (column {exc.colno})")
                continue
            if not isinstance(obj, dict):
                yield Parsed(location, problem=f"expected a JSON object, got a JSON {type(obj).__name__}")
                continue
            if first:
                _check_first(path, number, obj, options, id_field)
                first = False
            result = _to_report(obj, options, id_field)
            if isinstance(result, str):
                yield Parsed(location, problem=result)
            else:
                yield Parsed(location, result)
