"""``read_corpus``: stream reports from files of any supported format."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator, Sequence

from radsift.corpus.csv_reader import read_csv
from radsift.corpus.dates import normalise_date
from radsift.corpus.fhir_reader import read_fhir
from radsift.corpus.hl7_reader import read_hl7
from radsift.corpus.jsonl_reader import read_jsonl
from radsift.corpus.openi_xml import read_openi_xml
from radsift.corpus.options import ReaderOptions, infer_format
from radsift.corpus.rows import Parsed
from radsift.corpus.stats import ReadStats
from radsift.corpus.text_reader import read_text_file, read_txt_folder
from radsift.errors import ConfigError, CorpusError
from radsift.records import Report

_READERS: dict[str, Callable[[Path, ReaderOptions], Iterator[Parsed]]] = {
    "csv": read_csv,
    "jsonl": read_jsonl,
    "txt": read_txt_folder,
    "text": read_text_file,
    "openi-xml": read_openi_xml,
    "fhir": read_fhir,
    "hl7": read_hl7,
}
# Flags that mean nothing for a format: refusing them beats silently ignoring them.
_UNUSED_FLAGS = {
    "txt": ("id_column", "sections", "text_column"),
    "text": ("id_column", "sections", "text_column"),
    "openi-xml": ("id_column", "text_column"),
    "fhir": ("id_column", "sections", "text_column"),
    "hl7": ("id_column", "sections", "text_column"),
}
_FLAG_NAMES = {"id_column": "--id-column", "sections": "--section", "text_column": "--text-column"}


def _check_flags(path: Path, fmt: str, options: ReaderOptions) -> None:
    for attr in _UNUSED_FLAGS.get(fmt, ()):
        if getattr(options, attr):
            raise ConfigError(f"{_FLAG_NAMES[attr]} does not apply to format {fmt!r} ({path})")


def patient_and_date(report: Report, options: ReaderOptions) -> tuple[Report, str | None]:
    """The report with ``patient`` and ``date``/``datetime`` from ``--patient-column`` / ``--date-column``
    (an absent or empty value is none), or ``(report, problem)`` naming a date that does not parse."""
    meta = dict(report.metadata)
    if options.patient_column and meta.get(options.patient_column):
        meta["patient"] = meta[options.patient_column]
    if options.date_column and meta.get(options.date_column):
        try:
            day, stamp = normalise_date(meta[options.date_column])
        except ValueError as exc:
            return report, f"column {options.date_column!r} (--date-column): {exc}"
        meta["date"] = day
        if stamp:
            meta["datetime"] = stamp
        else:
            meta.pop("datetime", None)
    return Report(report.id, report.sections, meta), None


def read_corpus(
    paths: Sequence[str | Path], options: ReaderOptions, stats: ReadStats | None = None
) -> Iterator[Report]:
    """Stream the reports of one or more corpus files or folders.

    Each path is read with ``options.format`` or, when that is ``None``, the format
    :func:`infer_format` gives it. Reports come one at a time (files are never loaded
    whole, except one text/XML report file at a time).

    Empty reports (no non-blank section text) are yielded and their ids added to
    ``stats.empty``. A bad row (undecodable bytes, bad JSON, wrong field count, empty id)
    or a duplicate id raises :class:`CorpusError` naming the file and line, or with
    ``options.on_error == "skip"`` is skipped and added to ``stats.skipped``. A missing
    path or column always raises.

    Args:
        paths: Files or folders.
        options: How to read them.
        stats: Filled in while reading, if given.

    Yields:
        Reports in file order.

    Raises:
        CorpusError: As above; the message names the file and the line, column or field.
        ConfigError: A flag that does not apply to a path's format (``--id-column`` for txt).
    """
    stats = stats if stats is not None else ReadStats()
    resolved = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise CorpusError(f"{path}: no such file or folder")
        fmt = options.format or infer_format(path)
        _check_flags(path, fmt, options)
        resolved.append((path, fmt))
    if not resolved:
        raise CorpusError("no corpus paths given")

    seen: dict[str, str] = {}  # report id -> where it was first read
    for path, fmt in resolved:
        stats.files += 1
        try:
            for item in _READERS[fmt](path, options):
                problem = item.problem
                report = item.report
                if report is not None and problem is None and (options.patient_column or options.date_column):
                    report, problem = patient_and_date(report, options)
                if report is not None and report.id in seen:
                    problem = f"duplicate report id {report.id!r} (first read at {seen[report.id]})"
                if problem is not None or report is None:
                    reason = problem or "unreadable record"
                    if options.on_error == "skip":
                        stats.skipped.append((item.location, reason))
                        continue
                    raise CorpusError(f"{item.location}: {reason}")
                seen[report.id] = item.location
                stats.reports += 1
                if report.is_empty:
                    stats.empty.append(report.id)
                yield report
        except (OSError, UnicodeError) as exc:
            raise CorpusError(f"{path}: cannot read: {exc}") from exc
