"""From a search to a cohort: every report that states what the query asks for, with its evidence.

:func:`collect_cohort` walks the whole ranked list of a search (page by page, so it pages exactly
as the page and the API do) and keeps the hits of the bands asked for (:mod:`radsift.ranking.bands`):
by default the reports that *state* the query's reading (``states``) or, for a query that names no
finding, those down to ``related``. Each row carries the evidence: every sentence of the report
that states a wanted finding with the wanted status (section, offsets, status, cue). :func:`write_cohort`
writes the rows as CSV or JSON lines and, beside them, a provenance sidecar (query, reading, options,
model fingerprint, index generation, radsift version, time, user) so that the cohort can be
reproduced and audited. Both files are written atomically.
"""

from __future__ import annotations

import csv
import getpass
import io
import json
import os
import shlex
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

from radsift.errors import ConfigError
from radsift.records import Hit, QueryReading
from radsift.text.sentences import split_sentences
from radsift.version import __version__

#: Which bands a cohort keeps: ``states`` (the reports stating the reading), ``related`` (and those
#: the calibration finds relevant at least RELATED_MIN of the time) or ``all`` (the whole ranked list).
INCLUDE = ("states", "related", "all")
#: Rows an export writes at most unless told otherwise (``--max-rows``).
DEFAULT_MAX_ROWS = 10000
#: Largest ``--max-rows`` accepted.
MAX_ROWS_LIMIT = 1_000_000
#: Hits fetched per page while walking the ranked list.
PAGE = 1000
#: The search options a cohort takes (:class:`~radsift.search.options.SearchOptions`): an export's and a
#: saved search's (a cohort is a report-level walk of the whole ranked list: no ``k``, ``offset`` or ``level``).
COHORT_OPTIONS = ("mode", "target", "where", "negation", "reading", "alpha", "concepts", "read_as")
FORMATS = ("csv", "jsonl")
#: The bands each ``include`` keeps.
KEPT_BANDS = {"states": ("states",), "related": ("states", "related"), "all": ("states", "related", "unlikely")}


@dataclass(frozen=True)
class Evidence:
    """A sentence of the report that states a wanted finding with the wanted status."""

    section: str
    start: int  # offsets of the sentence in the section's text
    end: int
    text: str
    finding: str
    status: str
    cue: str | None
    mention_start: int  # offsets of the finding's words in the section's text
    mention_end: int

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class CohortRow:
    """One report of a cohort."""

    hit: Hit
    evidence: tuple[Evidence, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        h = self.hit
        s = h.sentence
        return {"report_id": h.report_id, "rank": h.rank, "band": h.band, "relevance": h.relevance,
                "score": round(h.shown_score, 6), "status": self.status, "cue": self.cue,
                "best_sentence": None if s is None else {"section": s.section, "start": s.start, "end": s.end,
                                                         "text": s.text},
                "evidence": [e.to_dict() for e in self.evidence], "metadata": dict(h.metadata)}

    @property
    def status(self) -> str:
        """The status the evidence states (``present`` ...), or what the best sentence states, or ''."""
        if self.evidence:
            return self.evidence[0].status
        return self.hit.reading[0].status if self.hit.reading else ""

    @property
    def cue(self) -> str:
        if self.evidence:
            return self.evidence[0].cue or ""
        return (self.hit.reading[0].cue or "") if self.hit.reading else ""


@dataclass
class Cohort:
    """The rows of a cohort and what produced them (:meth:`provenance`)."""

    query: str
    reading: QueryReading
    rows: list[CohortRow]
    options: dict[str, Any]
    include: str
    matching: int | None
    total: int
    index: dict[str, Any] = field(default_factory=dict)
    created: str = ""

    def provenance(self, **extra: Any) -> dict[str, Any]:
        """Everything needed to reproduce (and audit) the cohort."""
        return {"query": self.query, "command": export_command(self), "reading": self.reading.to_dict(),
                "reading_text": self.reading.describe(),
                "options": self.options, "include": self.include, "rows": len(self.rows),
                "matching": self.matching, "ranked_total": self.total, "index": self.index,
                "radsift_version": __version__, "created": self.created, "user": _user(), **extra}


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers)
        return str(os.getuid()) if hasattr(os, "getuid") else ""


def check_max_rows(max_rows) -> int:
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or not 1 <= max_rows <= MAX_ROWS_LIMIT:
        raise ConfigError(f"max_rows: must be a whole number from 1 to {MAX_ROWS_LIMIT}, not {str(max_rows)[:40]!r}")
    return max_rows


def collect_cohort(index, query: str, *, include: str | None = None, max_rows: int = DEFAULT_MAX_ROWS,
                   progress=None, **options: Any) -> Cohort:
    """Every report of the search's ranked list in the bands ``include`` asks for, with evidence.

    Args:
        index: A :class:`radsift.Index`.
        query: The query.
        include: ``states``, ``related`` or ``all`` (None: ``states`` when the query's reading
            names a finding, ``related`` otherwise).
        max_rows: Refuse (before writing anything) a cohort of more reports than this.
        progress: Called with (rows so far, total ranked) after each page, or None.
        **options: :meth:`radsift.Index.search` options (mode, level, target, where, negation,
            reading, alpha, concepts); not ``k`` or ``offset``, which the walk sets.

    Raises:
        ConfigError: A bad option, or more reports match than ``max_rows`` (naming the limit and
            the ``--max-rows`` flag).
    """
    for name in ("k", "offset", "include_report", "mentions", "query_vector"):
        if name in options:
            raise ConfigError(f"{name}: an export sets it itself")
    max_rows = check_max_rows(max_rows)
    if include is not None and include not in INCLUDE:
        raise ConfigError(f"include must be one of {', '.join(INCLUDE)}, not {str(include)[:40]!r}")
    options.setdefault("level", "report")
    if options["level"] != "report":
        raise ConfigError("a cohort is a set of reports: level must be report")
    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    store_info = index.stats()
    first = index.search(query, k=min(PAGE, max_rows + 1), offset=0, **options)
    reading = first.reading
    if include is None:
        include = "states" if first.matching is not None else "related"
    keep = KEPT_BANDS[include]
    if include == "states" and first.matching is not None and first.matching > max_rows:
        raise _too_many(first.matching, max_rows)
    if include == "all" and first.total > max_rows:
        raise _too_many(first.total, max_rows)
    rows: list[CohortRow] = []
    page = first
    while True:
        kept = [h for h in page if h.band in keep]
        if len(rows) + len(kept) > max_rows:
            raise _too_many(f"more than {max_rows}", max_rows)
        rows += [CohortRow(h, evidence_of(index, h, reading)) for h in kept]
        if progress is not None:
            progress(len(rows), page.total)
        # The ranked list puts every report that states the reading first (strict tiers): once a
        # page holds none of the kept bands, later pages hold none either ... except for
        # "related", which depends on the score: the walk then stops at the first page without one.
        done_states = include == "states" and first.matching is not None and len(rows) >= first.matching
        if not page.more or not kept or done_states:
            break
        page = index.search(query, k=PAGE, offset=page.offset + len(page), **options)
    index_info = {"path": str(store_info["path"]), "generation": store_info["generation"],
                  "model": store_info["model"], "model_fingerprint": index.manifest.model_fingerprint,
                  "reports": store_info["counts"].get("reports"), "updated": store_info["updated"]}
    return Cohort(query=" ".join(query.split()), reading=reading, rows=rows, options=plain_options(options),
                  include=include, matching=first.matching, total=first.total, index=index_info, created=created)


def export_command(cohort: "Cohort", out: str | Path | None = None) -> str:
    """The ``radsift export`` command line that reproduces a cohort (on the same index generation)."""
    words = ["radsift", "export", str(cohort.index.get("path", "INDEX")), cohort.query]
    if out is not None:
        words += ["--out", str(out)]
    words += ["--include", cohort.include]
    flags = {"mode": "--mode", "target": "--target", "negation": "--negation", "alpha": "--alpha"}
    for key, flag in flags.items():
        value = cohort.options.get(key)
        if value is not None:
            words += [flag, str(value)]
    for key, flag in (("where", "--where"), ("reading", "--reading")):
        for value in cohort.options.get(key) or []:
            words += [flag, str(value)]
    if cohort.options.get("concepts") is False:
        words.append("--no-concepts")
    if cohort.options.get("read_as") not in (None, "both"):
        words += ["--read-as", str(cohort.options["read_as"])]
    return " ".join(shlex.quote(w) for w in words)


def _too_many(count, max_rows: int) -> ConfigError:
    return ConfigError(f"{count} reports match; an export writes at most {max_rows} (raise the limit, up to "
                       f"{MAX_ROWS_LIMIT}: --max-rows N on the command line, max_rows=N in the API)")


def plain_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """Search options as JSON values (filters and overrides as their text)."""
    out = {}
    for key, value in options.items():
        if isinstance(value, (list, tuple)):
            value = [str(v) for v in value]
        elif isinstance(value, Mapping):
            value = {str(k): str(v) for k, v in value.items()}
        out[key] = value
    return out


def evidence_of(index, hit: Hit, reading: QueryReading) -> tuple[Evidence, ...]:
    """Every sentence of the hit's report stating a wanted finding with the wanted status."""
    if not reading.findings or not hit.sections:
        return ()
    wanted = {name: f.status for f in reading.findings for name in (*f.any_of, f.finding)}
    out = []
    read = index.sections_mentions(hit.sections, reading)  # read together: the impression may doubt a description
    for section, text in hit.sections.items():
        spans = split_sentences(text)
        for m in read[section]:
            if wanted.get(m.finding) != m.status:
                continue
            start, end = next(((s, e) for s, e in spans if s <= m.start < e), (m.start, m.end))
            out.append(Evidence(section, start, end, text[start:end], m.finding, m.status, m.cue, m.start, m.end))
    return tuple(out)


# -- writing --------------------------------------------------------------------------------------
def cohort_format(out: Path, fmt: str | None) -> str:
    """``csv`` or ``jsonl``: given, or from the file's suffix."""
    if fmt is None:
        suffix = out.suffix.lower().lstrip(".")
        fmt = {"csv": "csv", "jsonl": "jsonl", "ndjson": "jsonl"}.get(suffix)
        if fmt is None:
            raise ConfigError(f"--out {out}: name a .csv or .jsonl file, or pass --format csv|jsonl")
    if fmt not in FORMATS:
        raise ConfigError(f"format must be one of {', '.join(FORMATS)}, not {fmt[:40]!r}")
    return fmt


def provenance_path(out: Path) -> Path:
    """The provenance sidecar of an export: ``cohort.csv`` -> ``cohort.csv.provenance.json``."""
    return out.with_name(out.name + ".provenance.json")


CSV_COLUMNS = ("report_id", "rank", "band", "relevance", "score", "status", "cue", "evidence_section",
               "evidence_start", "evidence_end", "evidence", "evidence_all")


def render_cohort(cohort: Cohort, fmt: str) -> str:
    """The cohort's rows as CSV (one row per report; metadata as ``meta.KEY`` columns; every
    evidence sentence as JSON in ``evidence_all``) or JSON lines (one object per report).

    Every text cell of the CSV, header and report ids included, goes through :func:`csv_cell`."""
    if fmt == "jsonl":
        return "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in cohort.rows)
    keys = sorted({k for r in cohort.rows for k in r.hit.metadata})
    buf = io.StringIO()
    writer = _CsvRows(buf)
    writer.writerow([csv_cell(c) for c in (*CSV_COLUMNS, *(f"meta.{k}" for k in keys))])
    for r in cohort.rows:
        h = r.hit
        first = r.evidence[0] if r.evidence else None
        sent = h.sentence
        section, start, end, text = ((first.section, first.start, first.end, first.text) if first is not None else
                                     (sent.section, sent.start, sent.end, sent.text) if sent is not None else
                                     ("", "", "", ""))
        row = [h.report_id, h.rank, h.band or "", "" if h.relevance is None else h.relevance,
               round(h.shown_score, 6), r.status, r.cue, section, start, end, text,
               json.dumps([e.to_dict() for e in r.evidence], ensure_ascii=False),
               *(h.metadata.get(k, "") for k in keys)]
        writer.writerow([csv_cell(c) for c in row])
    return buf.getvalue()


class _CsvRows:
    """``csv.writer`` rows ending in ``\\n``, with every cell of a row quoted when one holds a carriage return:
    the csv module quotes a cell holding its line terminator only, and a spreadsheet starts a new row at a bare
    ``\\r`` (whose next cell could then be a formula, past :func:`csv_cell`)."""

    def __init__(self, buf) -> None:
        self._minimal = csv.writer(buf, lineterminator="\n")
        self._quoted = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_ALL)

    def writerow(self, row: list) -> None:
        cr = any(isinstance(c, str) and "\r" in c for c in row)
        (self._quoted if cr else self._minimal).writerow(row)


#: What makes a spreadsheet read a cell as a formula (OWASP, CSV injection): = + - @, tab, carriage return.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A CSV cell a spreadsheet shows as text, never runs as a formula: a text cell starting with one of
    :data:`FORMULA_STARTS` gets a leading apostrophe (OWASP's advice). Numbers radsift computed (rank,
    score, offsets) stay numbers: a negative score is a number, not a formula."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    value = "" if value is None else str(value)
    return "'" + value if value.startswith(FORMULA_STARTS) else value


def write_cohort(cohort: Cohort, out: str | Path, fmt: str | None = None, **provenance: Any) -> tuple[Path, Path]:
    """Write the cohort and its provenance sidecar, each atomically (a temporary file, then rename).

    Returns:
        ``(cohort file, provenance file)``.
    """
    out = Path(out)
    fmt = cohort_format(out, fmt)
    side = check_out(out)
    _atomic_write(out, render_cohort(cohort, fmt))
    _atomic_write(side, json.dumps(cohort.provenance(format=fmt, file=out.name, **provenance), indent=1,
                                   ensure_ascii=False) + "\n")
    return out, side


def check_out(out: Path) -> Path:
    """Refuse an ``--out`` that cannot be written as a file beside its provenance sidecar (checked before the
    search, the audit line and either file: a cohort without its provenance is never left).

    Returns:
        The provenance sidecar's path.

    Raises:
        ConfigError: ``out`` or its sidecar is a folder, or ``out``'s folder does not exist.
    """
    out = Path(out)
    if out.is_dir():
        raise ConfigError(f"--out {out} is a folder: name a file")
    if not out.parent.is_dir():
        raise ConfigError(f"--out {out}: folder {out.parent} does not exist")
    side = provenance_path(out)
    if side.is_dir():
        raise ConfigError(f"--out {out}: its provenance file {side} is a folder: name another file")
    return side


def _atomic_write(path: Path, text: str) -> None:
    """Write ``path`` whole or not at all (ConfigError naming it when the folder or disk refuses)."""
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix="." + path.name + ".", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise ConfigError(f"--out {path}: cannot write it ({exc.strerror or exc})") from None
    except BaseException:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise


def read_cohort_csv(path: str | Path) -> list[dict[str, str]]:
    """Read an exported CSV back (tests, round trips)."""
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def cohort_ids(rows: Sequence[CohortRow]) -> list[str]:
    return [r.hit.report_id for r in rows]
