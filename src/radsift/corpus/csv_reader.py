"""CSV corpora: one row per report (stdlib :mod:`csv`; quoted multi-line fields, BOM)."""

from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import Iterator, Sequence

from radsift.corpus.options import ReaderOptions
from radsift.corpus.rows import Parsed, assemble, decoded_lines
from radsift.errors import CorpusError

# Clinical notes can exceed the csv module's default 128 KiB field limit.
csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


def _columns(header: Sequence[str]) -> str:
    return ", ".join(header) if header else "(none)"


def _resolve_columns(path: Path, header: list[str], options: ReaderOptions) -> tuple[str, dict[str, str], str | None]:
    """Check the header against the options: (id column, sections, text column)."""
    dupes = sorted({name for name in header if header.count(name) > 1})
    if dupes:
        raise CorpusError(f"{path}: duplicate column name(s) in the header: {', '.join(dupes)}")
    present = set(header)
    if options.id_column is not None:
        if options.id_column not in present:
            raise CorpusError(
                f"{path}: no column {options.id_column!r} (--id-column); columns: {_columns(header)}"
            )
        id_column = options.id_column
    elif "id" in present:
        id_column = "id"
    else:
        raise CorpusError(f"{path}: no 'id' column: pass --id-column COLUMN; columns: {_columns(header)}")
    if not options.sections and options.text_column is None:
        raise CorpusError(
            f"{path}: no section columns given: pass --section NAME=COLUMN (e.g. --section findings=findings) "
            f"or --text-column COLUMN; columns: {_columns(header)}"
        )
    for name, column in options.sections.items():
        if column not in present:
            raise CorpusError(
                f"{path}: no column {column!r} (--section {name}={column}); columns: {_columns(header)}"
            )
    for flag, column in (("--patient-column", options.patient_column), ("--date-column", options.date_column)):
        if column is not None and column not in present:
            raise CorpusError(f"{path}: no column {column!r} ({flag}); columns: {_columns(header)}")
    if options.text_column is not None and options.text_column not in present:
        raise CorpusError(
            f"{path}: no column {options.text_column!r} (--text-column); columns: {_columns(header)}"
        )
    return id_column, dict(options.sections), options.text_column


def read_csv(path: Path, options: ReaderOptions) -> Iterator[Parsed]:
    """Yield one :class:`Parsed` per data row of a CSV file.

    The header names the columns. The id comes from ``options.id_column`` (default: a
    column named ``id``); sections from ``options.sections`` and/or ``options.text_column``;
    every other non-empty column becomes metadata.

    Raises:
        CorpusError: No header, a missing column, or no section mapping (always fatal).
    """
    bad_lines: dict[int, str] = {}

    with path.open("rb") as handle:

        def lines() -> Iterator[str]:
            for number, text, problem in decoded_lines(path, handle, options.encoding):
                if problem is not None:
                    bad_lines[number] = problem
                yield text

        # strict: a bad quote ('"x"y', an unterminated field) is a row error, not silently merged
        reader = csv.reader(lines(), strict=True)
        try:
            header = [name.strip() for name in next(reader)]
        except StopIteration:
            raise CorpusError(f"{path}: empty file: expected a header row") from None
        except csv.Error as exc:
            raise CorpusError(f"{path} line 1: malformed CSV header: {exc}") from exc
        if 1 in bad_lines:
            raise CorpusError(f"{path} line 1 (header): {bad_lines[1]}")
        id_column, sections, text_column = _resolve_columns(path, header, options)
        used = {id_column, text_column, *sections.values()}
        id_index = header.index(id_column)

        last_line = reader.line_num
        while True:
            first_line = last_line + 1
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                last_line = reader.line_num
                yield Parsed(f"{path} line {first_line}", problem=f"malformed CSV: {exc}")
                continue
            last_line = reader.line_num
            location = f"{path} line {first_line}"
            if not row:
                continue  # a blank line is not a row
            decode_problems = [bad_lines[n] for n in range(first_line, last_line + 1) if n in bad_lines]
            if decode_problems:
                yield Parsed(location, problem=decode_problems[0])
                continue
            if len(row) != len(header):
                yield Parsed(
                    location, problem=f"row has {len(row)} fields but the header has {len(header)}"
                )
                continue
            report_id = row[id_index].strip()
            if not report_id:
                yield Parsed(location, problem=f"empty id in column {id_column!r}")
                continue
            record = dict(zip(header, row))
            report = assemble(
                report_id,
                record[text_column] if text_column is not None else None,
                [(name, record[column]) for name, column in sections.items()],
                [(key, value) for key, value in record.items() if key not in used],
            )
            yield Parsed(location, report)
