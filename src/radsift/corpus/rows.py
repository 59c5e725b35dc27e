"""Pieces the format readers share: parsed items, line decoding, report assembly."""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterable, Iterator

from radsift.errors import CorpusError
from radsift.records import Report
from radsift.text import split_sections

_BOM = b"\xef\xbb\xbf"


def list_files(folder: Path, pattern: str) -> list[Path]:
    """Files under ``folder`` matching ``pattern``, sorted, skipping hidden files and folders."""
    found = []
    for path in folder.rglob(pattern):
        relative = path.relative_to(folder)
        if path.is_file() and not any(part.startswith(".") for part in relative.parts):
            found.append(path)
    return sorted(found)


@dataclass(frozen=True)
class Parsed:
    """One record as a format reader saw it: a report, or the reason it could not be read.

    ``location`` names the file and line/record (``reports.csv line 12``). Readers yield
    problems rather than raising, so that :func:`read_corpus` applies ``on_error``; they
    raise :class:`CorpusError` themselves only for problems no row can escape (missing
    file, missing column).
    """

    location: str
    report: Report | None = None
    problem: str | None = None


def line_wise(encoding: str) -> bool:
    """True when the encoding can be decoded one ``\\n``-terminated byte line at a time."""
    name = codecs.lookup(encoding).name
    return not name.startswith(("utf-16", "utf-32"))


def is_utf8(encoding: str) -> bool:
    return codecs.lookup(encoding).name in {"utf-8", "utf-8-sig"}


def decoded_lines(path: Path, handle: IO[bytes], encoding: str) -> Iterator[tuple[int, str, str | None]]:
    """Yield ``(line number, text, problem)`` for each line of a binary file.

    Undecodable bytes do not stop reading: the line is decoded with replacement characters
    and ``problem`` says what was wrong, so the caller can fail or skip that row. A UTF-8
    byte-order mark on the first line is dropped. Encodings that cannot be split on
    ``\\n`` bytes (UTF-16/32) are decoded whole.
    """
    if not line_wise(encoding):
        try:
            text = handle.read().decode(encoding)
        except UnicodeDecodeError as exc:
            raise CorpusError(f"{path}: undecodable bytes at byte {exc.start} (not valid {encoding})") from exc
        for number, line in enumerate(text.splitlines(keepends=True), 1):
            yield number, line.lstrip("\ufeff") if number == 1 else line, None
        return
    for number, raw in enumerate(handle, 1):
        yield number, *decode_line(number, raw, encoding)


def decode_line(number: int, raw: bytes, encoding: str) -> tuple[str, str | None]:
    """``(text, problem)`` of one byte line of a line-wise encoding, as :func:`decoded_lines` gives it."""
    if number == 1 and raw.startswith(_BOM) and is_utf8(encoding):
        raw = raw[len(_BOM) :]
    try:
        return raw.decode(encoding), None
    except UnicodeDecodeError as exc:
        problem = f"undecodable bytes at column {exc.start + 1} (not valid {encoding})"
        return raw.decode(encoding, errors="replace"), problem


def decode_file(data: bytes, encoding: str) -> tuple[str | None, int, str | None]:
    """Decode a whole file: ``(text, 0, None)``, or ``(None, line, problem)`` on undecodable bytes."""
    if data.startswith(_BOM) and is_utf8(encoding):
        data = data[len(_BOM) :]
    try:
        return data.decode(encoding), 0, None
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return None, line, f"undecodable bytes (not valid {encoding})"


def scalar_text(value: object) -> str | None:
    """A JSON/CSV scalar as metadata text; ``None`` for null, lists and objects."""
    if value is None or isinstance(value, (list, dict)):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _unix_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def assemble(
    report_id: str,
    free_text: str | None,
    sections: Iterable[tuple[str, str | None]],
    metadata: Iterable[tuple[str, str | None]],
) -> Report:
    """Build a report from its parts, leaving out blank sections and blank metadata.

    Args:
        report_id: The report id.
        free_text: Text to split at its headings (``--text-column``), or ``None``.
        sections: ``(name, text)`` pairs; a name given twice has its texts joined by a space.
        metadata: ``(key, value)`` pairs.
    """
    merged: dict[str, str] = {}  # a name's texts joined by a space as they come (one dict, no list per name)
    for pairs in (split_sections(free_text) if free_text else (), sections):
        for name, text in pairs:
            if text:
                text = (_unix_newlines(text) if "\r" in text else text).strip()
                if text:
                    merged[name] = f"{merged[name]} {text}" if name in merged else text
    # _unix_newlines only where there is a CR: most values have none (this runs for every report read)
    meta: dict[str, str] = {}
    for key, value in metadata:  # stripped once: blank after stripping is blank before
        if value is not None and (value := (_unix_newlines(value) if "\r" in value else value).strip()):
            meta[key] = value
    return Report.fresh(report_id, merged, meta)  # fresh dicts: wrapped, not copied

