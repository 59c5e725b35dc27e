"""FHIR R4 ``DiagnosticReport`` resources: one resource, a Bundle of them, or a bulk-export NDJSON file.

What a hospital's FHIR server exports (``GET [base]/DiagnosticReport?...`` returns a Bundle; the
bulk-data ``$export`` writes one resource per line of ``DiagnosticReport.ndjson``). Each report:

* **id**: the resource's ``id``, else its first ``identifier.value``;
* **text**: the ``presentedForm`` attachments in order (``text/plain`` or ``text/html``, inline base64
  ``data`` decoded with the attachment's charset; HTML reduced to its text), split at their headings
  like any free text; ``conclusion`` becomes the ``impression`` section when the text has none (else
  the metadata field ``conclusion``);
* **metadata**: ``patient`` (``subject``: ``Patient/123`` -> ``123``, or its identifier), ``date``
  (``YYYY-MM-DD``) and ``datetime`` (as given, ISO 8601) from ``effectiveDateTime``, else
  ``effectivePeriod.start``, else ``issued``; ``exam`` (``code``: its text or first coding's display),
  ``modality`` (a DICOM modality coding of ``code`` or ``category``, else the exam's name read for CT, MR,
  US, XR, NM, PT, MG), ``category`` and ``status``.

Every resource is validated with ``fhir.resources`` (R4B's ``DiagnosticReport``, the R4 model with
R4B's corrections; its structure once per shape, its values each time: :mod:`radsift.corpus.fhir_validate`): a resource that is not a report, a report that does not validate, or one with no text
is a problem named by its file and line (NDJSON) or entry (Bundle); ``--on-error skip`` counts it. In a
Bundle, entries of other types (the Patient a search ``_include``s) are passed over. Attachments given
only by ``url`` are not fetched (radsift is offline): a report whose only text is a URL has no text.

NDJSON lines are parsed with ``orjson`` when it is installed (not a dependency: about three times faster than
``json``); a line it refuses (a BOM, bad bytes, ``NaN``, a lone surrogate, a blank line, bad JSON) goes to
``json``, and so does one it may read otherwise: an integer past 64 bits, a float to orjson, an int to json.
Such a line has 19 digits in a row; it is looked for only where a float may be (a resource whose validated
shape holds no float has none), so the records and problems are json's (``tests/test_feeds_fast.py``).
"""

from __future__ import annotations

import binascii
import html
import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Iterator

from radsift.corpus.fhir_validate import ShapeValidator, strict_base64
from radsift.corpus.options import ReaderOptions
from radsift.corpus.rows import (Parsed, _unix_newlines, decode_line, decoded_lines, is_utf8, line_wise,
                                 list_files)
from radsift.errors import ConfigError, CorpusError
from radsift.records import Report
from radsift.text import split_sections
from radsift.text.modalities import MODALITIES, modality_in

try:  # optional: parses a bulk export's lines three times faster than json (which reads what it refuses)
    import orjson
except ImportError:  # pragma: no cover - depends on the environment
    orjson = None

#: DICOM's code system (modalities are its codes: CT, MR, US, ...).
DICOM = "http://dicom.nema.org/resources/ontology/DCM"
_BLANK = object()  # a blank NDJSON line: passed over
_CONTENT_TYPES: dict[str, tuple[str, str]] = {}  # contentType -> (media type, charset), see _content_type
_MEMO_SIZE = 4096  # exams, modalities and categories remembered per read (a feed has a few hundred exams)
# orjson reads an integer past 64 bits as a float, json as an int: a line with 19 digits in a row goes to json
_DIGITS_AS_ZERO, _LONG_NUMBER = bytes.maketrans(b"0123456789", b"0" * 10), b"0" * 19


def _validator():
    # Imported on first use: fhir.resources builds its pydantic models at import (about a second), which
    # every other command would pay.
    try:
        from fhir.resources.R4B.diagnosticreport import DiagnosticReport
    except ImportError as exc:  # a core dependency: only a broken install lands here
        raise ConfigError(f"reading FHIR needs fhir.resources, which is not installed ({exc}): "
                          "pip install 'fhir.resources>=8'") from exc
    return DiagnosticReport


class _HTMLText(HTMLParser):
    """The text of an HTML attachment: block elements end lines, scripts and styles are dropped."""

    BLOCKS = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "pre"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self._skip += 1
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._skip = max(0, self._skip - 1)
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data):
        if not self._skip:
            self.parts.append(data)


def html_text(markup: str) -> str:
    """The readable text of an HTML fragment (lines at block elements)."""
    parser = _HTMLText()
    parser.feed(markup)
    parser.close()
    lines = (" ".join(line.split()) for line in html.unescape("".join(parser.parts)).splitlines())
    return "\n".join(line for line in lines if line)


def _attachment_text(att: dict) -> str | None:
    """Text of one ``presentedForm`` attachment (``text/plain`` or ``text/html``), or None.

    Raises:
        ValueError: The attachment's ``data`` is not base64 or not text in its charset.
    """
    content_type, data = att.get("contentType") or "text/plain", att.get("data")
    kind, charset = _CONTENT_TYPES.get(content_type) or _content_type(content_type) if type(content_type) is str \
        else _content_type(str(content_type))
    if kind not in ("text/plain", "text/html") or not data:
        return None
    try:
        text = strict_base64(data).decode(charset)  # the bytes validation decoded, if it did
    except (binascii.Error, ValueError, LookupError) as exc:
        raise ValueError(f"presentedForm data is not base64 {charset} text ({exc})") from None
    return html_text(text) if kind == "text/html" else text


def _content_type(value: str) -> tuple[str, str]:
    """``(media type, charset)`` of a ``contentType`` (``text/plain; charset=utf-8``; utf-8 by default),
    remembered (a feed writes one or two content types on every report)."""
    known = _CONTENT_TYPES.get(value)
    if known is not None:
        return known
    kind, _, params = value.lower().partition(";")
    charset = "utf-8"
    for param in params.split(";"):
        key, _, found = param.partition("=")
        if key.strip() == "charset" and found.strip():
            charset = found.strip().strip('"')
    if len(_CONTENT_TYPES) < 256:
        _CONTENT_TYPES[value] = (kind.strip(), charset)
    return kind.strip(), charset


def _first(items: Any) -> dict:
    return items[0] if isinstance(items, list) and items and isinstance(items[0], dict) else {}


def _concept_text(concept: Any) -> str | None:
    if not isinstance(concept, dict):
        return None
    return concept.get("text") or _first(concept.get("coding")).get("display") or _first(concept.get("coding")).get("code")


def _modality(resource: dict, exam: str | None) -> str | None:
    for concepts in ((resource.get("code"),), resource.get("category") or ()):  # (no list built per report)
        for concept in concepts:
            for coding in (concept or {}).get("coding") or ():
                if coding.get("system") == DICOM and str(coding.get("code", "")).upper() in MODALITIES:
                    return str(coding["code"]).upper()
    return modality_in(exam)


def _concept_path(path: tuple) -> bool:
    """The leaf paths whose values decide ``exam``, ``modality`` and ``category``."""
    return path[0] in ("code", "category")


def _reference_id(subject: Any) -> str | None:
    if not isinstance(subject, dict):
        return None
    ref = str(subject.get("reference") or "")
    if ref:
        return ref.rstrip("/").rsplit("/", 1)[-1]
    return (subject.get("identifier") or {}).get("value")


def _concepts(resource: dict) -> tuple[str | None, str | None, str | None]:
    """``(exam, modality, category)`` of a report, read from its ``code`` and ``category``."""
    exam = _concept_text(resource.get("code"))
    category = "; ".join(t for c in resource.get("category") or [] if (t := _concept_text(c))) or None
    return exam, _modality(resource, exam), category


def _validated(resource: Any, validate) -> tuple[Any, str | None]:
    """``(validate's return, None)`` for a valid ``DiagnosticReport``, ``(None, problem)`` for anything else."""
    kind = resource.get("resourceType") if isinstance(resource, dict) else None
    if kind != "DiagnosticReport":
        return None, f"a {kind or 'non-FHIR'} resource, not a DiagnosticReport"
    try:
        return validate(resource), None
    except Exception as exc:  # pydantic's ValidationError: its first error, located
        return None, _invalid(exc)


def _invalid(exc: Exception) -> str:
    """The problem of a resource that does not validate: pydantic's first error, located."""
    errors = getattr(exc, "errors", None)
    first = errors()[0] if callable(errors) and errors() else None
    where = ".".join(str(x) for x in first["loc"]) if first else ""
    return f"not a valid FHIR DiagnosticReport ({where + ': ' if where else ''}{first['msg'] if first else exc})"


def report_of(resource: dict, validate, memo: dict | None = None) -> tuple[Any, str | None]:
    """A ``DiagnosticReport`` resource (parsed JSON) as ``(Report, None)``, or ``(None, problem)``.

    ``validate`` raises on an invalid resource; when it returns a tuple (a :class:`ShapeValidator` key of the
    resource's ``code`` and ``category``), what was read from them is remembered in ``memo`` under it (a feed
    names the same few exams on every report)."""
    key, problem = _validated(resource, validate)
    if problem is not None:
        return None, problem
    return _report(resource, key, memo)


def _report(resource: dict, key: Any, memo: dict | None, patients: dict | None = None) -> tuple[Any, str | None]:
    """:func:`report_of` of a resource validated, ``key`` being what its validation returned; ``patients``
    remembers the patient of each ``subject.reference`` (a patient has several reports).

    The report is what ``assemble(rid, None, sections, metadata)`` builds, in one pass: split_sections gives
    each name once and the conclusion is added only where it gives no impression, so what assemble would
    still do is make CRs line breaks, strip each value and drop the blank ones (``tests/test_ingest_fast.py``
    compares the reports with assemble's)."""
    get = resource.get
    rid = get("id") or _first(get("identifier")).get("value")
    if not rid:
        return None, "a DiagnosticReport with neither id nor identifier"
    texts = []
    try:
        for att in get("presentedForm") or ():  # a loop, not a comprehension: no frame per report
            if t := _attachment_text(att):
                texts.append(t)
    except ValueError as exc:
        return None, f"DiagnosticReport {rid}: {exc}"
    conclusion = (get("conclusion") or "").strip()
    text = "\n".join(texts)
    if (not text or text.isspace()) and not conclusion:  # blank (what strip() would empty), without a copy
        return None, f"DiagnosticReport {rid}: no report text (no text/plain or text/html presentedForm, no conclusion)"
    when = get("effectiveDateTime") or (get("effectivePeriod") or {}).get("start") or get("issued")
    concepts = memo.get(key) if memo is not None and type(key) is tuple else None
    if concepts is None:  # the metadata pairs, ready to use: cleaned, the blank ones left out
        pairs = zip(("exam", "modality", "category"), map(_clean, _concepts(resource)))
        concepts = tuple((name, value) for name, value in pairs if value)
        if memo is not None and type(key) is tuple and len(memo) < _MEMO_SIZE:
            memo[key] = concepts
    sections: dict[str, str] = {}
    impression = None
    for name, body in split_sections(text) if texts else ():
        if name == "impression":
            impression = body  # as split: what the conclusion is compared with
        if body := (_unix_newlines(body) if "\r" in body else body).strip():
            sections[name] = body
    subject = get("subject")
    ref = subject.get("reference") if type(subject) is dict else None
    patient = patients.get(ref) if patients is not None and type(ref) is str else None
    if patient is None:
        patient = _clean(_reference_id(subject)) or ""  # (cleaned: "" when blank)
        if patients is not None and type(ref) is str and ref and len(patients) < _MEMO_SIZE:
            patients[ref] = patient  # a reference alone decides the patient (see _reference_id)
    when = when if type(when) is str or not when else str(when)  # (a string once validated)
    if conclusion and impression is None:
        if body := (_unix_newlines(conclusion) if "\r" in conclusion else conclusion).strip():
            sections["impression"] = body
        conclusion = None
    elif conclusion and (conclusion == impression or " ".join(conclusion.split()) == " ".join(impression.split())):
        conclusion = None
    metadata = {"patient": patient} if patient else {}  # in assemble's order: patient, times, concepts, ...
    if when:
        if day := (_unix_newlines(day) if "\r" in (day := when[:10]) else day).strip():  # (_clean, inline)
            metadata["date"] = day
        if when := (_unix_newlines(when) if "\r" in when else when).strip():
            metadata["datetime"] = when
    metadata.update(concepts)
    if status := _clean(get("status")):
        metadata["status"] = status
    if conclusion:
        metadata["conclusion"] = _clean(conclusion)  # (stripped: not blank)
    return Report.fresh(rid if type(rid) is str else str(rid), sections, metadata), None


def _clean(value: str | None) -> str | None:
    """A metadata value as ``assemble`` keeps it: CRs made line breaks, stripped; None (or "") when blank."""
    return value and (_unix_newlines(value) if "\r" in value else value).strip()


def _resources(path: Path, options: ReaderOptions) -> Iterator[tuple[str, Any, str | None]]:
    """``(location, resource, problem)`` of a ``.ndjson`` file read by json (one per line; orjson's path is
    :func:`_read_ndjson`) or a ``.json`` file (one resource, or a Bundle's entries)."""
    if path.suffix.lower() == ".ndjson":
        with path.open("rb") as handle:
            lines = (_json_line(path, number, line, problem)
                     for number, line, problem in decoded_lines(path, handle, options.encoding))
            yield from (item for item in lines if item[1] is not _BLANK)
        return
    try:
        data = json.loads(path.read_bytes().decode(options.encoding).lstrip("\ufeff"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        yield str(path), None, f"invalid JSON ({exc})"
        return
    if isinstance(data, dict) and data.get("resourceType") == "Bundle":
        for number, entry in enumerate(data.get("entry") or [], 1):
            resource = entry.get("resource") if isinstance(entry, dict) else None
            if isinstance(resource, dict) and resource.get("resourceType") not in (None, "DiagnosticReport"):
                continue  # an _include'd Patient, an OperationOutcome: not a report, not an error
            problem = None if resource is not None else "a Bundle entry with no resource"
            yield f"{path} entry {number}", resource, problem
        return
    yield str(path), data, None


def _long_number(raw: bytes) -> bool:
    """True when a line holds 19 digits in a row: maybe an integer past 64 bits, which orjson reads as a float
    and json as an int."""
    return raw.translate(_DIGITS_AS_ZERO).find(_LONG_NUMBER) >= 0


def _json_line(path: Path, number: int, line: str, problem: str | None) -> tuple[str, Any, str | None]:
    """``(location, resource, problem)`` of one decoded NDJSON line (a blank line's resource is ``_BLANK``)."""
    where = f"{path} line {number}"
    if problem:
        return where, None, problem
    if not line.strip():
        return where, _BLANK, None
    try:
        return where, json.loads(line), None
    except json.JSONDecodeError as exc:
        return where, None, f"invalid JSON ({exc.msg} at column {exc.colno})"


def read_fhir(path: Path, options: ReaderOptions) -> Iterator[Parsed]:
    """Yield the ``DiagnosticReport`` s of a FHIR file (``.json``: one resource or a Bundle; ``.ndjson``:
    a bulk export) or of every such file under a folder (see the module docstring).

    Raises:
        CorpusError: A folder with no ``.json`` or ``.ndjson`` file (when called, not when read).
    """
    if path.is_dir():
        files = [p for p in list_files(path, "*") if p.suffix.lower() in (".json", ".ndjson")]
        if not files:
            raise CorpusError(f"{path}: no .json or .ndjson files in this folder")
    else:
        files = [path]
    # model_validate's verdicts, the structure checked once per shape; its keys name the code and category
    validate = ShapeValidator(_validator(), keep=_concept_path)
    if len(files) == 1 and _by_orjson(files[0], options):  # a bulk export: its reports straight from its loop
        return _read_ndjson(files[0], options, validate, {}, {})
    return _read_files(files, options, validate)


def _by_orjson(file: Path, options: ReaderOptions) -> bool:
    """True for an NDJSON file that orjson reads (in UTF-8, line by line)."""
    return orjson is not None and file.suffix.lower() == ".ndjson" and line_wise(options.encoding) \
        and is_utf8(options.encoding)


def _read_files(files: list[Path], options: ReaderOptions, validate) -> Iterator[Parsed]:
    """:func:`read_fhir` of several files, or of a file that is not a bulk export orjson reads."""
    memo, patients = {}, {}
    for file in files:
        if _by_orjson(file, options):
            yield from _read_ndjson(file, options, validate, memo, patients)
            continue
        for where, resource, problem in _resources(file, options):
            if problem is None:
                key, problem = _validated(resource, validate)
            if problem is not None:
                yield Parsed(where, problem=problem)
                continue
            report, problem = _report(resource, key, memo, patients)
            yield Parsed(where, report, problem)


def _read_ndjson(file: Path, options: ReaderOptions, validate, memo: dict, patients: dict) -> Iterator[Parsed]:
    """:func:`read_fhir` of a bulk export read by orjson (the lines it refuses by json), in one loop: no second
    generator between the file and the reports, no tuple a line (this runs for every report of a feed)."""
    name, floats = str(file), getattr(validate, "float_shapes", None)  # the shapes with a float (None: not told)
    with file.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            try:  # orjson reads UTF-8 bytes as json reads their text; anything else it refuses goes to json
                resource, where = orjson.loads(raw), f"{name} line {number}"
            except orjson.JSONDecodeError:  # a blank line, a BOM, bad bytes, NaN, a lone surrogate, bad JSON
                where, resource, problem = _json_line(file, number, *decode_line(number, raw, options.encoding))
                if resource is _BLANK:
                    continue
                if problem:
                    yield Parsed(where, problem=problem)
                    continue
                raw = None  # json read it: nothing to look for
            if type(resource) is dict and resource.get("resourceType") == "DiagnosticReport":
                try:  # (_validated, inline: this is the path of nearly every resource)
                    key, problem = validate(resource), None
                except Exception as exc:  # noqa: BLE001 - as _validated: pydantic's ValidationError, worded
                    key, problem = None, _invalid(exc)
            else:
                key, problem = _validated(resource, validate)
            # orjson's reading is json's unless it read a long integer as a float: a resource of a shape
            # without floats has none; any other goes to json when its line has a long number
            if raw is not None and (floats is None or type(key) is not tuple or key[0] in floats) \
                    and _long_number(raw):
                where, resource, problem = _json_line(file, number, *decode_line(number, raw, options.encoding))
                if problem is None:
                    key, problem = _validated(resource, validate)
            if problem is not None:
                yield Parsed(where, problem=problem)
                continue
            report, problem = _report(resource, key, memo, patients)
            yield Parsed(where, report, problem)
