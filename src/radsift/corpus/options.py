"""Reader options shared by every command that reads a corpus, and format inference."""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Iterable, Mapping

from radsift.errors import ConfigError, CorpusError

#: Corpus formats radsift reads.
FORMATS: tuple[str, ...] = ("csv", "jsonl", "txt", "openi-xml", "text", "fhir", "hl7")
#: What to do with a bad row: raise, or skip it and record it in :class:`ReadStats`.
ON_ERROR: tuple[str, ...] = ("fail", "skip")

_FORMAT_ALIASES = {"xml": "openi-xml", "ndjson": "jsonl", "hl7v2": "hl7", "fhir-r4": "fhir"}
_SUFFIX_FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".xml": "openi-xml", ".txt": "text",
                   ".hl7": "hl7", ".mllp": "hl7", ".json": "fhir"}
_SECTION_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


@dataclass(frozen=True)
class ReaderOptions:
    """How to read a corpus.

    Attributes:
        format: ``csv``, ``jsonl``, ``txt`` (a folder of ``.txt`` files), ``openi-xml``,
            ``text`` (one text file, one report), ``fhir`` (FHIR R4 DiagnosticReport resources:
            :mod:`radsift.corpus.fhir_reader`) or ``hl7`` (HL7 v2 ORU^R01 messages:
            :mod:`radsift.corpus.hl7_reader`); ``None`` infers it from each path (see :func:`infer_format`).
        id_column: Column/field holding the report id (csv, jsonl); ``None`` uses ``id``.
        sections: Section name -> source column/field (csv, jsonl) or ``AbstractText``
            label (openi-xml, where it selects which labels become sections).
        text_column: A free-text column/field split into sections at its headings.
        on_error: ``fail`` raises on a bad row; ``skip`` skips it and records it.
        encoding: Text encoding of the files.
        patient_column: The column/field naming the patient (csv, jsonl): stored as the metadata
            field ``patient`` (the feeds, fhir and hl7, carry their own).
        date_column: The column/field holding the exam date (csv, jsonl): validated and stored as
            ``date`` (``YYYY-MM-DD``) and ``datetime`` (:func:`radsift.corpus.dates.normalise_date`);
            an empty cell is no date, a bad one a row error.
    """

    format: str | None = None
    id_column: str | None = None
    sections: Mapping[str, str] = field(default_factory=dict)
    text_column: str | None = None
    on_error: str = "fail"
    encoding: str = "utf-8"
    patient_column: str | None = None
    date_column: str | None = None

    def __post_init__(self) -> None:
        if self.format is not None and self.format not in FORMATS:
            raise ConfigError(f"format {self.format!r}: expected one of {', '.join(FORMATS)}")
        if self.on_error not in ON_ERROR:
            raise ConfigError(f"on_error {self.on_error!r}: expected one of {', '.join(ON_ERROR)}")
        try:
            codecs.lookup(self.encoding)
        except LookupError as exc:
            raise ConfigError(f"encoding {self.encoding!r}: unknown encoding") from exc
        for name, column in dict(self.sections).items():
            if not isinstance(name, str) or not _SECTION_NAME_RE.fullmatch(name):
                raise ConfigError(f"section name {name!r}: expected a word (letters, digits, '_', '-')")
            if not isinstance(column, str) or not column.strip():
                raise ConfigError(f"section {name!r}: the source column must be a non-empty string")
        for label, value in (("id_column", self.id_column), ("text_column", self.text_column)):
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ConfigError(f"{label}: expected a non-empty column name")
        object.__setattr__(self, "sections", MappingProxyType(dict(self.sections)))

    def __hash__(self) -> int:
        return hash((self.format, self.id_column, tuple(self.sections.items()), self.text_column, self.on_error,
                     self.patient_column, self.date_column))

    @classmethod
    def from_cli(
        cls,
        format: str | None = None,
        id_column: str | None = None,
        sections: Iterable[str] = (),
        text_column: str | None = None,
        on_error: str = "fail",
        encoding: str = "utf-8",
        patient_column: str | None = None,
        date_column: str | None = None,
    ) -> "ReaderOptions":
        """Build options from the CLI flags, naming the flag in every error.

        Args:
            format: ``--format`` (case-insensitive; ``xml`` and ``ndjson`` are accepted aliases).
            id_column: ``--id-column``.
            sections: ``--section`` values, each ``NAME=COLUMN``.
            text_column: ``--text-column``.
            on_error: ``--on-error``: ``fail`` or ``skip``.
            encoding: ``--encoding``.
            patient_column: ``--patient-column``.
            date_column: ``--date-column``.

        Raises:
            ConfigError: A flag value is invalid; the message names the flag.
        """
        fmt = None
        if format is not None:
            fmt = _FORMAT_ALIASES.get(format.strip().lower(), format.strip().lower())
            if fmt not in FORMATS:
                raise ConfigError(f"--format {format!r}: expected one of {', '.join(FORMATS)}")
        mode = (on_error or "").strip().lower()
        if mode not in ON_ERROR:
            raise ConfigError(f"--on-error {on_error!r}: expected one of {', '.join(ON_ERROR)}")
        mapping: dict[str, str] = {}
        for spec in sections or ():
            name, sep, column = spec.partition("=")
            name, column = name.strip(), column.strip()
            if not sep or not name or not column:
                raise ConfigError(f"--section {spec!r}: expected NAME=COLUMN, e.g. --section findings=findings")
            if not _SECTION_NAME_RE.fullmatch(name):
                raise ConfigError(f"--section {spec!r}: the name {name!r} must be a word (letters, digits, '_', '-')")
            name = name.lower()
            if name in mapping:
                raise ConfigError(f"--section {name!r} given twice ({mapping[name]!r} and {column!r})")
            mapping[name] = column
        for flag, value in (("--id-column", id_column), ("--text-column", text_column),
                            ("--patient-column", patient_column), ("--date-column", date_column)):
            if value is not None and not value.strip():
                raise ConfigError(f"{flag}: expected a column name, got an empty string")
        try:
            codecs.lookup(encoding)
        except LookupError as exc:
            raise ConfigError(f"--encoding {encoding!r}: unknown encoding") from exc
        return cls(
            format=fmt,
            id_column=id_column.strip() if id_column else None,
            sections=mapping,
            text_column=text_column.strip() if text_column else None,
            on_error=mode,
            encoding=encoding,
            patient_column=patient_column.strip() if patient_column else None,
            date_column=date_column.strip() if date_column else None,
        )


def _fhir_head(path: Path) -> bool:
    """True when a file starts with a FHIR resource (a JSON object with ``resourceType``)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(4096).decode("utf-8", errors="ignore").lstrip("\ufeff \t\r\n")
    except OSError:
        return False
    return head.startswith("{") and '"resourceType"' in head


def infer_format(path: str | Path) -> str:
    """Guess a corpus format from a path.

    ``.csv`` -> csv, ``.jsonl`` -> jsonl, ``.ndjson`` -> fhir when its first line is a FHIR resource
    (a bulk export) else jsonl, ``.json`` -> fhir (a resource or a Bundle), ``.hl7`` -> hl7, ``.xml`` ->
    openi-xml, ``.txt`` -> text (one file, one report); a folder -> txt, or openi-xml when it holds
    ``.xml`` files and no ``.txt`` files, or hl7 / fhir when it holds only ``.hl7`` / FHIR files.

    Raises:
        CorpusError: The extension is not one of these; the message says to pass --format.
    """
    path = Path(path)
    if path.is_dir():
        has_txt = any(True for _ in path.rglob("*.txt"))
        if not has_txt and any(True for _ in path.rglob("*.xml")):
            return "openi-xml"
        if not has_txt and any(True for _ in path.rglob("*.hl7")):
            return "hl7"
        if not has_txt and any(_fhir_head(p) for p in (*path.rglob("*.ndjson"), *path.rglob("*.json"))):
            return "fhir"
        return "txt"
    fmt = _SUFFIX_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise CorpusError(
            f"{path}: cannot infer the corpus format from the extension {path.suffix or '(none)'!r}: "
            f"pass --format ({' | '.join(FORMATS)})"
        )
    if path.suffix.lower() == ".ndjson" and _fhir_head(path):
        return "fhir"
    return fmt
