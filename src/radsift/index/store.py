"""The embedded index: one directory, atomic generations, read-only readers.

Layout::

    INDEX_DIR/
      CURRENT                 name of the live generation ("gen-000002"), replaced atomically
      gen-000002/
        manifest.json         format version, model, dim, counts, times
        store.sqlite          reports (id, sections, metadata) and sentence/section units
        sentence_vectors.npy  float32 (n_sentences, dim), unit-normalised
        section_vectors.npy   float32 (n_sections, dim)
        sentence_report.npy   int32 report row of each sentence; sentence_section.npy int16 section code
        section_report.npy    int32; section_section.npy int16
        label_row.npy, label_finding.npy, label_status.npy
                              the sentences' finding labels (row, finding code, status code)
        bm25_sentences/       bm25s index over sentence tokens (plain .npy/JSON)
        bm25_sections/        bm25s index over whole sections

A writer builds a complete new generation in a temporary folder, renames it into place and
only then replaces ``CURRENT`` (write to a temp file, fsync, ``os.replace``). A crash or Ctrl-C
at any point before that leaves the previous generation live and untouched; leftovers are
removed by the next writer. Generations are never modified once written, so readers open
them read-only (SQLite ``immutable``) and a reader that opened an older generation keeps a
consistent view until it reloads.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sqlite3
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import numpy as np

from radsift.errors import IndexStoreError
from radsift.index.manifest import MANIFEST_NAME, Manifest
from radsift.ranking.bm25 import build_bm25, load_bm25, save_bm25
from radsift.ranking.tiers import STATUS_CODES
from radsift.records import Report, Sentence

CURRENT = "CURRENT"
GEN_PREFIX = "gen-"
TMP_PREFIX = ".tmp-"
LOCK_NAME = ".write.lock"
UNIT_KINDS = ("sentence", "section")

SCHEMA = """
CREATE TABLE reports (row INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, sections TEXT NOT NULL,
                      metadata TEXT NOT NULL);
CREATE TABLE sentences (row INTEGER PRIMARY KEY, report_row INTEGER NOT NULL, section TEXT NOT NULL,
                        idx INTEGER NOT NULL, start INTEGER NOT NULL, "end" INTEGER NOT NULL, text TEXT NOT NULL);
CREATE TABLE sections (row INTEGER PRIMARY KEY, report_row INTEGER NOT NULL, section TEXT NOT NULL,
                       text TEXT NOT NULL);
"""



@dataclass
class UnitArrays:
    """Vectors and row maps of one unit kind (sentences or sections)."""

    vectors: np.ndarray  # float32 (n, dim)
    report_row: np.ndarray  # int32 (n,)
    section_code: np.ndarray  # int16 (n,), index into manifest.sections


@dataclass(frozen=True)
class ReportRecord:
    """One stored report: its id and its sections and metadata as JSON text (row = position)."""

    id: str
    sections: str
    metadata: str


@dataclass(frozen=True)
class SentenceRecord:
    """One sentence unit: its report row, section, index in the section, offsets and text."""

    report_row: int
    section: str
    idx: int
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class SectionRecord:
    """One whole-section unit."""

    report_row: int
    section: str
    text: str


@dataclass(frozen=True)
class LabelRecord:
    """One weak label of a sentence from the lexicon labeler."""

    sentence_row: int
    finding: str
    status: str


@dataclass
class GenerationData:
    """Everything a generation holds, in memory, ready to be written."""

    reports: list[ReportRecord]  # row = position
    sentences: list[SentenceRecord]
    sections: list[SectionRecord]
    sentence_vectors: np.ndarray
    section_vectors: np.ndarray
    sentence_tokens: list[list[str]]
    section_tokens: list[list[str]]
    sentence_labels: list[LabelRecord] = field(default_factory=list)


@dataclass
class LabelArrays:
    """Finding mentions of sentence units, for negation-aware ranking."""

    row: np.ndarray  # int32 sentence row
    finding: np.ndarray  # int16 index into manifest.findings
    status: np.ndarray  # int8, see STATUS_CODES

def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_current(index_dir: Path) -> Path:
    """The live generation folder of an index directory."""
    index_dir = Path(index_dir)
    if not index_dir.exists():
        raise IndexStoreError(f"index not found: {index_dir} (build one with `radsift index build {index_dir} CORPUS`)")
    try:
        name = (index_dir / CURRENT).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise IndexStoreError(f"{index_dir} is not a radsift index (no {CURRENT} file)") from None
    gen = index_dir / name
    if not name.startswith(GEN_PREFIX) or not gen.is_dir():
        raise IndexStoreError(f"{index_dir}: {CURRENT} names a missing generation {name!r}: the index is corrupt")
    return gen


@contextmanager
def write_lock(index_dir: Path) -> Iterator[None]:
    """One writer at a time per index directory (readers never block)."""
    index_dir.mkdir(parents=True, exist_ok=True)
    with open(index_dir / LOCK_NAME, "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise IndexStoreError(f"{index_dir}: another radsift process is writing this index") from None
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _section_codes(names: Sequence[str], vocab: list[str]) -> np.ndarray:
    lookup = {name: i for i, name in enumerate(vocab)}
    return np.fromiter((lookup[n] for n in names), dtype=np.int16, count=len(names))


def write_generation(index_dir: Path, data: GenerationData, manifest: Manifest) -> Path:
    """Write ``data`` as a new generation and make it live atomically. Caller holds the write lock."""

    index_dir = Path(index_dir)
    index_dir.mkdir(parents=True, exist_ok=True)
    _remove_leftovers(index_dir)
    previous = _generation_numbers(index_dir)
    number = (max(previous) if previous else 0) + 1
    manifest.generation = number
    final = index_dir / f"{GEN_PREFIX}{number:06d}"
    tmp = index_dir / f"{TMP_PREFIX}{GEN_PREFIX}{number:06d}-{os.getpid()}"
    tmp.mkdir()

    db = sqlite3.connect(tmp / "store.sqlite")
    db.executescript(SCHEMA)
    db.executemany("INSERT INTO reports (row, id, sections, metadata) VALUES (?, ?, ?, ?)",
                   ((i, r.id, r.sections, r.metadata) for i, r in enumerate(data.reports)))
    db.executemany('INSERT INTO sentences (row, report_row, section, idx, start, "end", text) VALUES (?,?,?,?,?,?,?)',
                   ((i, s.report_row, s.section, s.idx, s.start, s.end, s.text) for i, s in enumerate(data.sentences)))
    db.executemany("INSERT INTO sections (row, report_row, section, text) VALUES (?, ?, ?, ?)",
                   ((i, s.report_row, s.section, s.text) for i, s in enumerate(data.sections)))
    db.commit()
    db.close()

    labels = data.sentence_labels
    findings = sorted({lab.finding for lab in labels})
    manifest.findings = findings
    fcode = {f: i for i, f in enumerate(findings)}
    names = sorted({s.section for s in data.sentences} | {s.section for s in data.sections})
    manifest.sections = names
    arrays = {
        "sentence_vectors": np.ascontiguousarray(data.sentence_vectors, dtype=np.float32),
        "section_vectors": np.ascontiguousarray(data.section_vectors, dtype=np.float32),
        "sentence_report": np.fromiter((s.report_row for s in data.sentences), dtype=np.int32,
                                       count=len(data.sentences)),
        "sentence_section": _section_codes([s.section for s in data.sentences], names),
        "section_report": np.fromiter((s.report_row for s in data.sections), dtype=np.int32, count=len(data.sections)),
        "section_section": _section_codes([s.section for s in data.sections], names),
        "label_row": np.fromiter((lab.sentence_row for lab in labels), dtype=np.int32, count=len(labels)),
        "label_finding": np.fromiter((fcode[lab.finding] for lab in labels), dtype=np.int16, count=len(labels)),
        "label_status": np.fromiter((STATUS_CODES[lab.status] for lab in labels), dtype=np.int8, count=len(labels)),
    }
    for name, arr in arrays.items():
        np.save(tmp / f"{name}.npy", arr)
    for kind, tokens in (("sentences", data.sentence_tokens), ("sections", data.section_tokens)):
        save_bm25(build_bm25(tokens, manifest.bm25), tmp / f"bm25_{kind}")
    (tmp / MANIFEST_NAME).write_text(manifest.to_json(), encoding="utf-8")

    for f in tmp.rglob("*"):
        if f.is_file():
            with open(f, "rb+") as fh:
                os.fsync(fh.fileno())
    os.rename(tmp, final)
    _fsync_dir(index_dir)
    pointer = index_dir / f"{TMP_PREFIX}{CURRENT}"
    with open(pointer, "w", encoding="utf-8") as fh:
        fh.write(final.name + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(pointer, index_dir / CURRENT)  # the commit point
    _fsync_dir(index_dir)
    # Keep the generation just replaced (a reader may be opening it right now); drop older ones.
    for old in sorted(previous)[:-1]:
        shutil.rmtree(index_dir / f"{GEN_PREFIX}{old:06d}", ignore_errors=True)
    return final


def _generation_numbers(index_dir: Path) -> list[int]:
    out = []
    for p in index_dir.glob(f"{GEN_PREFIX}*"):
        try:
            out.append(int(p.name[len(GEN_PREFIX):]))
        except ValueError:
            continue
    return out


def _remove_leftovers(index_dir: Path) -> None:
    """Delete temp folders of writers that crashed or were interrupted."""
    for p in index_dir.glob(f"{TMP_PREFIX}*"):
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)


class IndexStore:
    """Read-only view of the live generation of an index directory."""

    def __init__(self, index_dir: Path, gen_dir: Path, manifest: Manifest) -> None:
        self.index_dir = index_dir
        self.gen_dir = gen_dir
        self.manifest = manifest
        uri = f"file:{gen_dir / 'store.sqlite'}?mode=ro&immutable=1"
        self.db = sqlite3.connect(uri, uri=True, check_same_thread=False)
        self._units: dict[str, UnitArrays] = {}
        self._bm25: dict[str, object] = {}
        self._report_ids: list[str] | None = None
        self._report_rows: dict[str, int] | None = None
        self._labels: LabelArrays | None = None
        self._cache: dict = {}
        self._cache_lock = threading.Lock()

    @classmethod
    def open(cls, index_dir: str | Path) -> "IndexStore":
        index_dir = Path(index_dir)
        gen = read_current(index_dir)
        manifest = Manifest.read(gen / MANIFEST_NAME)
        return cls(index_dir, gen, manifest)

    def close(self) -> None:
        self.db.close()

    def is_current(self) -> bool:
        """False once a writer has made another generation live."""
        try:
            return read_current(self.index_dir) == self.gen_dir
        except IndexStoreError:
            return True

    # -- units ---------------------------------------------------------------------------
    def units(self, kind: str) -> UnitArrays:
        """Vectors and row maps of ``sentence`` or ``section`` units (vectors memory-mapped)."""
        if kind not in UNIT_KINDS:
            raise ValueError(f"unit kind must be one of {UNIT_KINDS}, not {kind!r}")
        if kind not in self._units:
            g = self.gen_dir
            self._units[kind] = UnitArrays(
                vectors=np.load(g / f"{kind}_vectors.npy", mmap_mode="r"),
                report_row=np.load(g / f"{kind}_report.npy"),
                section_code=np.load(g / f"{kind}_section.npy"),
            )
        return self._units[kind]

    def cached(self, key, make):
        """A per-generation cache (vector backends ...), safe to fill from several threads."""
        with self._cache_lock:
            if key not in self._cache:
                self._cache[key] = make()
            return self._cache[key]

    def labels(self) -> LabelArrays:
        """Finding mentions of sentence units (empty arrays for an index built without labels)."""
        if self._labels is None:
            g = self.gen_dir
            self._labels = LabelArrays(np.load(g / "label_row.npy"), np.load(g / "label_finding.npy"),
                                       np.load(g / "label_status.npy"))
        return self._labels

    def all_sentence_labels(self) -> list[LabelRecord]:
        """Every stored sentence label (the labels live in the .npy arrays only)."""
        labels = self.labels()
        names = self.manifest.findings
        status = {code: name for name, code in STATUS_CODES.items()}
        return [LabelRecord(r, names[f], status[st])
                for r, f, st in zip(labels.row.tolist(), labels.finding.tolist(), labels.status.tolist())]

    def bm25(self, kind: str):
        """The bm25s retriever over ``sentence`` or ``section`` units."""
        if kind not in self._bm25:
            self._bm25[kind] = load_bm25(self.gen_dir / f"bm25_{kind}s")
        return self._bm25[kind]

    def section_code(self, name: str) -> int | None:
        try:
            return self.manifest.sections.index(name)
        except ValueError:
            return None

    # -- records ---------------------------------------------------------------------------
    @property
    def report_ids(self) -> list[str]:
        if self._report_ids is None:
            self._report_ids = [r[0] for r in self.db.execute("SELECT id FROM reports ORDER BY row")]
        return self._report_ids

    def report_row(self, report_id: str) -> int | None:
        if self._report_rows is None:
            self._report_rows = {rid: i for i, rid in enumerate(self.report_ids)}
        return self._report_rows.get(report_id)

    def reports_by_rows(self, rows: Sequence[int]) -> dict[int, Report]:
        if not rows:
            return {}
        marks = ",".join("?" * len(rows))
        cur = self.db.execute(f"SELECT row, id, sections, metadata FROM reports WHERE row IN ({marks})",
                              [int(r) for r in rows])
        return {row: Report(rid, json.loads(sec), json.loads(meta)) for row, rid, sec, meta in cur}

    def get_report(self, report_id: str) -> Report | None:
        row = self.db.execute("SELECT id, sections, metadata FROM reports WHERE id = ?", (report_id,)).fetchone()
        return None if row is None else Report(row[0], json.loads(row[1]), json.loads(row[2]))

    def iter_reports(self) -> Iterator[tuple[int, Report]]:
        for row, rid, sec, meta in self.db.execute("SELECT row, id, sections, metadata FROM reports ORDER BY row"):
            yield row, Report(rid, json.loads(sec), json.loads(meta))

    def sentences_by_rows(self, rows: Sequence[int]) -> dict[int, Sentence]:
        if not len(rows):
            return {}
        marks = ",".join("?" * len(rows))
        cur = self.db.execute(
            f'SELECT s.row, r.id, s.section, s.idx, s.start, s."end", s.text FROM sentences s '
            f"JOIN reports r ON r.row = s.report_row WHERE s.row IN ({marks})",
            [int(r) for r in rows],
        )
        return {row: Sentence(rid, sec, idx, start, end, text) for row, rid, sec, idx, start, end, text in cur}

    def sections_by_rows(self, rows: Sequence[int]) -> dict[int, tuple[str, str, str]]:
        """Section units by row: (report id, section name, text)."""
        if not len(rows):
            return {}
        marks = ",".join("?" * len(rows))
        cur = self.db.execute(
            f"SELECT s.row, r.id, s.section, s.text FROM sections s JOIN reports r ON r.row = s.report_row "
            f"WHERE s.row IN ({marks})",
            [int(r) for r in rows],
        )
        return {row: (rid, sec, text) for row, rid, sec, text in cur}

    def all_reports(self) -> list[ReportRecord]:
        return [ReportRecord(*r) for r in self.db.execute("SELECT id, sections, metadata FROM reports ORDER BY row")]

    def all_sentences(self) -> list[SentenceRecord]:
        return [SentenceRecord(*r) for r in
                self.db.execute('SELECT report_row, section, idx, start, "end", text FROM sentences ORDER BY row')]

    def all_sections(self) -> list[SectionRecord]:
        return [SectionRecord(*r) for r in self.db.execute("SELECT report_row, section, text FROM sections ORDER BY row")]

    def report_rows_where(self, filters: Sequence) -> np.ndarray:
        """Rows of reports whose metadata match the filters (:class:`radsift.search.query.Filter`).

        Filters on different keys must all match; several on one key match if any does.
        ``key=value`` compares exactly, ``key~value`` by case-insensitive substring.
        """
        by_key: dict[str, list] = {}
        for f in filters:
            by_key.setdefault(f.key, []).append(f)
        clauses, params = [], []
        for key, group in by_key.items():
            ors = []
            for f in group:
                if f.op == "~":
                    ors.append("instr(lower(CAST(json_extract(metadata, ?) AS TEXT)), lower(?)) > 0")
                else:
                    ors.append("json_extract(metadata, ?) = ?")
                params += [f'$."{key}"', f.value]
            clauses.append("(" + " OR ".join(ors) + ")")
        sql = "SELECT row FROM reports" + (" WHERE " + " AND ".join(clauses) if clauses else "")
        return np.fromiter((r[0] for r in self.db.execute(sql, params)), dtype=np.int64)
