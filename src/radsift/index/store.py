"""The embedded index: one directory, immutable segments, atomic generations, read-only readers.

Layout (format version 2)::

    INDEX_DIR/
      CURRENT                 name of the live generation ("gen-000007"), replaced atomically
      gen-000007/
        manifest.json         format version, model, dim, live counts, times, and the generation's
                              segments: each one's name, counts, sizes and SHA-256 of its files,
                              and its deleted report rows (tombstones)
      segments/seg-000003/    a segment, written once and never changed:
        store.sqlite          reports (id, sections, metadata) and sentence/section units
        sentence_vectors.npy  float32 (n_sentences, dim), unit-normalised
        section_vectors.npy   float32 (n_sections, dim)
        sentence_report.npy   int32 report row (in the segment) of each sentence; sentence_section.npy
                              int16 section code (into the segment's own section names)
        section_report.npy    int32; section_section.npy int16
        label_row.npy, label_finding.npy, label_status.npy
                              the sentences' finding labels (row, finding code, status code)
        bm25_sentence/        BM25 term statistics (:class:`radsift.ranking.bm25.TermStats`)
        bm25_section/

A build writes one segment; ``radsift index add`` writes one new segment holding only the added
reports and a new generation that lists the old segments plus the new one, so an add costs what
it adds, never a copy of the index. ``--replace`` and ``radsift index delete`` record the old
reports' rows as deleted in the new generation's manifest (their segments are not touched);
``radsift index optimize`` merges the live rows of all segments into one segment and drops the
tombstones. A segment no kept generation lists is removed by the next writer.

Readers (:class:`IndexStore`) present one row space to the rest of radsift: the live rows of the
segments, in segment order, renumbered densely (deleted reports and their units simply do not
exist in it). BM25 is scored over all segments with the live documents' global statistics
(:class:`radsift.ranking.bm25.BM25`), so it equals one index of the same reports.

A writer builds every new folder under a temporary name, renames it into place and only then
replaces ``CURRENT`` (write to a temp file, fsync, ``os.replace``). A crash or Ctrl-C at any point
before that leaves the previous generation live and untouched; leftovers are removed by the next
writer. Segments and generations are never modified once written, so readers open them read-only
(SQLite ``immutable``) and a reader that opened an older generation keeps a consistent view
until it reloads.

Readers hold a **lease** on the generation they read: a shared ``flock`` on its ``.readers``
file, held while the :class:`IndexStore` is open. A writer removes an old generation only when
it can take that lock exclusively (no reader holds it), and never removes the live generation
or the one it replaced (kept for ``radsift index rollback``); segments are removed only when no
remaining generation lists them. The manifest records every segment file's size and SHA-256
(:mod:`radsift.index.integrity`), checked cheaply on open and fully by ``radsift index verify
--deep``. ``INDEX_DIR/.radsift-index`` marks a folder radsift created, so a first build that died
before its first commit can be built again.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sqlite3
import threading
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import numpy as np

from radsift.errors import IndexDamagedError, IndexStoreError
from radsift.index.manifest import MANIFEST_NAME, Manifest
from radsift.ranking.bm25 import BM25, TermStats
from radsift.ranking.tiers import STATUS_CODES
from radsift.records import Report, Sentence

CURRENT = "CURRENT"
GEN_PREFIX = "gen-"
SEGMENTS = "segments"
SEG_PREFIX = "seg-"
TMP_PREFIX = ".tmp-"
LOCK_NAME = ".write.lock"
#: In each generation: the file readers hold a shared lock on while they read it.
READERS = ".readers"
#: In each index folder radsift created (written before anything else).
MARKER = ".radsift-index"
UNIT_KINDS = ("sentence", "section")

# Each row carries the CRC-32 of its fields (row_crc): a damaged page that SQLite itself does not
# notice (zeroed text, say) is an error when the row is read, never a wrong report shown.
SCHEMA = """
CREATE TABLE reports (row INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, sections TEXT NOT NULL,
                      metadata TEXT NOT NULL, crc INTEGER NOT NULL);
CREATE TABLE sentences (row INTEGER PRIMARY KEY, report_row INTEGER NOT NULL, section TEXT NOT NULL,
                        idx INTEGER NOT NULL, start INTEGER NOT NULL, "end" INTEGER NOT NULL, text TEXT NOT NULL,
                        crc INTEGER NOT NULL);
CREATE TABLE sections (row INTEGER PRIMARY KEY, report_row INTEGER NOT NULL, section TEXT NOT NULL,
                       text TEXT NOT NULL, crc INTEGER NOT NULL);
"""
#: Columns of each table (after ``row``), as the readers select them.
COLUMNS = {"reports": 'id, sections, metadata', "sentences": 'report_row, section, idx, start, "end", text',
           "sections": "report_row, section, text"}


def row_crc(*fields) -> int:
    """CRC-32 of a stored row's fields (what the ``crc`` column holds)."""
    return zlib.crc32("\x1f".join(map(str, fields)).encode("utf-8", "surrogatepass"))


class SegmentedVectors:
    """The ``(n, dim)`` float32 matrix of the live rows of several segments' memory-mapped vector
    files, read in place: nothing is copied when an index is opened.

    Supports what radsift does with vectors: ``shape``/``ndim``/``dtype``/``len``, ``x @ q`` (one
    product per segment, the deleted rows' scores dropped, then concatenated: the exact backend's
    scores), ``x[i]``, ``x[rows]``, ``x[start:stop]`` (rows gathered from their segments), and
    ``np.asarray(x)`` (every live row gathered into one array: an HNSW graph build, a Milvus push).
    """

    ndim = 2
    dtype = np.dtype(np.float32)

    def __init__(self, parts: Sequence[tuple[np.ndarray, np.ndarray | None]], dim: int) -> None:
        self.parts = list(parts)  # (memory-mapped vectors, the segment rows that are live; None: all)
        sizes = [m.shape[0] if local is None else local.shape[0] for m, local in self.parts]
        self.starts = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
        self.shape = (int(self.starts[-1]), int(dim))

    def __len__(self) -> int:
        return self.shape[0]

    def __matmul__(self, other) -> np.ndarray:
        other = np.asarray(other, dtype=np.float32)
        out = [(m @ other) if local is None else (m @ other)[local] for m, local in self.parts]
        if not out:
            return np.zeros((0,) + other.shape[1:], dtype=np.float32)
        return np.concatenate(out)

    def _gather(self, rows: np.ndarray) -> np.ndarray:
        out = np.empty((rows.shape[0], self.shape[1]), dtype=np.float32)
        which = np.searchsorted(self.starts, rows, side="right") - 1
        for i in np.unique(which).tolist():
            at = np.flatnonzero(which == i)
            m, local = self.parts[i]
            r = rows[at] - self.starts[i]
            out[at] = m[r if local is None else local[r]]
        return out

    def __getitem__(self, key):
        if isinstance(key, tuple):
            first, *rest = key
            return self[first][(slice(None), *rest)] if not np.isscalar(first) else self[first][tuple(rest)]
        if isinstance(key, (int, np.integer)):
            i = int(key) + (self.shape[0] if key < 0 else 0)
            if not 0 <= i < self.shape[0]:
                raise IndexError(f"row {key} out of range for {self.shape[0]} rows")
            return self._gather(np.array([i]))[0]
        if isinstance(key, slice):
            return self._gather(np.arange(self.shape[0], dtype=np.int64)[key])
        rows = np.asarray(key)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        rows = rows.astype(np.int64)
        rows = np.where(rows < 0, rows + self.shape[0], rows)
        if rows.size and (rows.min() < 0 or rows.max() >= self.shape[0]):
            raise IndexError(f"rows out of range for {self.shape[0]} rows")
        return self._gather(rows.ravel()).reshape(rows.shape + (self.shape[1],))

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = self._gather(np.arange(self.shape[0], dtype=np.int64))
        return out if dtype is None else out.astype(dtype)


@dataclass
class UnitArrays:
    """Vectors and row maps of one unit kind (sentences or sections), in the store's row space.

    ``vectors`` is the segment's memory-mapped file when the generation has one segment and no
    deleted row, else a :class:`SegmentedVectors` over every segment's file (no copy at open).
    """

    vectors: np.ndarray | SegmentedVectors  # float32 (n, dim)
    report_row: np.ndarray  # int32 (n,), the report row of each unit
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
    """Everything one segment holds, in memory, ready to be written (rows local to the segment).

    BM25 statistics come from ``*_terms`` when given (a merge), else from the tokens.
    """

    reports: list[ReportRecord]  # row = position
    sentences: list[SentenceRecord]
    sections: list[SectionRecord]
    sentence_vectors: np.ndarray
    section_vectors: np.ndarray
    sentence_tokens: list[list[str]] = field(default_factory=list)
    section_tokens: list[list[str]] = field(default_factory=list)
    sentence_labels: list[LabelRecord] = field(default_factory=list)
    sentence_terms: TermStats | None = None
    section_terms: TermStats | None = None


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
    if not index_dir.is_dir():
        raise IndexStoreError(f"{index_dir} is a file, not an index folder")
    try:
        name = (index_dir / CURRENT).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise IndexStoreError(f"{index_dir} is not a radsift index (no {CURRENT} file)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise IndexDamagedError(f"{index_dir / CURRENT}: cannot be read ({exc})") from None
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


def mark_index_dir(index_dir: Path) -> None:
    """Create the index folder with its marker first, so a build that dies early is recognised as radsift's."""
    index_dir.mkdir(parents=True, exist_ok=True)
    (index_dir / MARKER).touch()


def live_generation(index_dir: Path) -> Path | None:
    """The live generation, or None when ``CURRENT`` is missing or names nothing usable."""
    try:
        return read_current(index_dir)
    except IndexStoreError:
        return None


def segment_dir(index_dir: Path, name: str) -> Path:
    return Path(index_dir) / SEGMENTS / name


def _fsync_tree(folder: Path) -> None:
    for f in folder.rglob("*"):
        if f.is_file():
            with open(f, "rb+") as fh:
                os.fsync(fh.fileno())


def write_segment(index_dir: Path, data: GenerationData, bm25_params: Mapping | None = None,
                  mid_fault: str | None = None) -> dict:
    """Write ``data`` as a new immutable segment (temp folder, fsync, rename); nothing references it yet.

    Caller holds the write lock. Returns the segment's entry for a generation manifest: name,
    counts, its section and finding names, its files (size, SHA-256) and an empty deletion set.
    """
    from radsift.index.integrity import record_files

    index_dir = Path(index_dir)
    root = index_dir / SEGMENTS
    root.mkdir(parents=True, exist_ok=True)
    number = max(_segment_numbers(index_dir) | _referenced_numbers(index_dir), default=0) + 1
    name = f"{SEG_PREFIX}{number:06d}"
    tmp = root / f"{TMP_PREFIX}{name}-{os.getpid()}"
    tmp.mkdir()

    db = sqlite3.connect(tmp / "store.sqlite")
    db.executescript(SCHEMA)
    db.executemany("INSERT INTO reports (row, id, sections, metadata, crc) VALUES (?, ?, ?, ?, ?)",
                   ((i, r.id, r.sections, r.metadata, row_crc(r.id, r.sections, r.metadata))
                    for i, r in enumerate(data.reports)))
    db.executemany('INSERT INTO sentences (row, report_row, section, idx, start, "end", text, crc) '
                   "VALUES (?,?,?,?,?,?,?,?)",
                   ((i, s.report_row, s.section, s.idx, s.start, s.end, s.text,
                     row_crc(s.report_row, s.section, s.idx, s.start, s.end, s.text))
                    for i, s in enumerate(data.sentences)))
    db.executemany("INSERT INTO sections (row, report_row, section, text, crc) VALUES (?, ?, ?, ?, ?)",
                   ((i, s.report_row, s.section, s.text, row_crc(s.report_row, s.section, s.text))
                    for i, s in enumerate(data.sections)))
    db.commit()
    db.close()
    if mid_fault:
        _fault_point(mid_fault)

    labels = data.sentence_labels
    findings = sorted({lab.finding for lab in labels})
    fcode = {f: i for i, f in enumerate(findings)}
    names = sorted({s.section for s in data.sentences} | {s.section for s in data.sections})
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
    for key, arr in arrays.items():
        np.save(tmp / f"{key}.npy", arr)
    for kind, terms, tokens in (("sentence", data.sentence_terms, data.sentence_tokens),
                                ("section", data.section_terms, data.section_tokens)):
        (terms if terms is not None else TermStats.from_tokens(tokens)).save(tmp / f"bm25_{kind}")
    info = {"name": name, "counts": {"reports": len(data.reports), "sentences": len(data.sentences),
                                     "sections": len(data.sections)},
            "sections": names, "findings": findings, "files": record_files(tmp), "deleted": []}
    _fsync_tree(tmp)
    os.rename(tmp, root / name)
    _fsync_dir(root)
    _fault_point("segment-written")  # written, not committed: the next writer removes it
    return info


def commit_generation(index_dir: Path, manifest: Manifest) -> Path:
    """Write a generation listing ``manifest.segments`` and make it live atomically; then remove the
    generations and segments nothing needs. Caller holds the write lock."""
    index_dir = Path(index_dir)
    live = live_generation(index_dir)
    previous = _generation_numbers(index_dir)
    number = (max(previous) if previous else 0) + 1
    manifest.generation = number
    final = index_dir / f"{GEN_PREFIX}{number:06d}"
    tmp = index_dir / f"{TMP_PREFIX}{GEN_PREFIX}{number:06d}-{os.getpid()}"
    tmp.mkdir()
    (tmp / READERS).touch()
    (tmp / MANIFEST_NAME).write_text(manifest.to_json(), encoding="utf-8")
    _fault_point("before-rename")
    _fsync_tree(tmp)
    os.rename(tmp, final)
    _fsync_dir(index_dir)
    _fault_point("before-commit")
    _point_current(index_dir, final)  # the commit point
    _fault_point("after-commit")
    # Keep the new generation and the one it replaced (for rollback); drop the others no reader holds.
    keep = {final.name} | ({live.name} if live is not None else set())
    remove_unread_generations(index_dir, keep)
    remove_unreferenced_segments(index_dir)
    return final


def write_generation(index_dir: Path, data: GenerationData, manifest: Manifest) -> Path:
    """Write ``data`` as the one segment of a new generation and make it live (a full build).

    Caller holds the write lock. Fills in the manifest's segments, sections and findings.
    """
    index_dir = Path(index_dir)
    mark_index_dir(index_dir)
    remove_leftovers(index_dir)
    seg = write_segment(index_dir, data, manifest.bm25)
    manifest.segments = [seg]
    manifest.sections, manifest.findings = list(seg["sections"]), list(seg["findings"])
    return commit_generation(index_dir, manifest)


def live_counts(index_dir: Path, segments: Sequence[Mapping]) -> dict[str, int]:
    """Live reports, sentences and sections of a list of segment entries (deleted rows excluded)."""
    out = {"reports": 0, "sentences": 0, "sections": 0}
    for seg in segments:
        n = int(seg["counts"]["reports"])
        live = np.ones(n, dtype=bool)
        live[np.asarray(seg.get("deleted", []), dtype=np.int64)] = False
        out["reports"] += int(live.sum())
        for kind in UNIT_KINDS:
            if not seg.get("deleted"):
                out[f"{kind}s"] += int(seg["counts"][f"{kind}s"])
            else:
                rows = np.load(segment_dir(index_dir, seg["name"]) / f"{kind}_report.npy")
                out[f"{kind}s"] += int(live[rows].sum())
    return out


def verify_index(index_dir: str | Path, deep: bool = False) -> list:
    """Every problem of the live generation and its segments (:mod:`radsift.index.integrity`); empty when whole."""
    from radsift.index.integrity import Problem, check_generation

    index_dir = Path(index_dir)
    gen = read_current(index_dir)
    try:
        manifest = Manifest.read(gen / MANIFEST_NAME)
    except IndexStoreError as exc:
        return [Problem(gen / MANIFEST_NAME, str(exc))]
    problems = check_generation(gen, manifest, deep=deep)
    for seg in manifest.segments:
        if not seg.get("files"):
            problems.append(Problem(segment_dir(index_dir, seg["name"]), "no checksums recorded: only shapes "
                                                                         "were checked"))
    if not deep:
        return problems
    for seg in manifest.segments:
        db_path = segment_dir(index_dir, seg["name"]) / "store.sqlite"
        if not any(p.path == db_path for p in problems):
            try:
                with sqlite3.connect(f"file:{db_path}?mode=ro&immutable=1", uri=True) as db:
                    result = db.execute("PRAGMA integrity_check").fetchone()[0]
                if result != "ok":
                    problems.append(Problem(db_path, f"SQLite integrity check: {result}"))
            except sqlite3.DatabaseError as exc:
                problems.append(Problem(db_path, str(exc)))
        try:
            segment = _Segment(index_dir, seg, 0, {}, {})
        except IndexStoreError as exc:
            problems.append(Problem(db_path, str(exc)))
            continue
        try:  # every row against its checksum (says which table, where the file checksum cannot)
            for table in COLUMNS:
                segment.rows(table, None)
        except (IndexDamagedError, sqlite3.DatabaseError) as exc:
            problems.append(Problem(db_path, str(exc).split(": ", 1)[-1]))
        finally:
            segment.close()
    return problems


def rollback(index_dir: str | Path) -> tuple[str, str]:
    """Make the generation before the live one live again (atomically, under the write lock).

    Returns:
        ``(from, to)`` generation names.

    Raises:
        IndexStoreError: No earlier generation is left, or it is damaged too.
    """
    from radsift.index.integrity import check_generation

    index_dir = Path(index_dir)
    with write_lock(index_dir):
        live = read_current(index_dir)
        number = int(live.name[len(GEN_PREFIX):])
        earlier = sorted(n for n in _generation_numbers(index_dir) if n < number)
        if not earlier:
            raise IndexStoreError(f"{index_dir}: no generation before {live.name} is left to roll back to; "
                                  "rebuild the index with `radsift index build --overwrite`")
        target = index_dir / f"{GEN_PREFIX}{earlier[-1]:06d}"
        problems = check_generation(target, Manifest.read(target / MANIFEST_NAME), deep=True)
        if problems:
            raise IndexDamagedError(f"cannot roll back to {target.name}: {problems[0]}")
        _point_current(index_dir, target)
    return live.name, target.name


def _point_current(index_dir: Path, gen: Path) -> None:
    """Replace ``CURRENT`` atomically (temp file, fsync, rename, fsync of the folder)."""
    pointer = index_dir / f"{TMP_PREFIX}{CURRENT}"
    with open(pointer, "w", encoding="utf-8") as fh:
        fh.write(gen.name + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(pointer, index_dir / CURRENT)
    _fsync_dir(index_dir)


def remove_unread_generations(index_dir: Path, keep: set[str]) -> list[str]:
    """Delete generations not in ``keep`` that no reader holds (their lease taken exclusively first)."""
    removed = []
    for number in sorted(_generation_numbers(index_dir)):
        gen = index_dir / f"{GEN_PREFIX}{number:06d}"
        if gen.name in keep:
            continue
        lease = gen / READERS
        try:
            fh = open(lease, "a")
        except OSError:
            fh = None  # no lease file (an older generation, or an orphan): nobody can hold it
        try:
            if fh is not None:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            shutil.rmtree(gen, ignore_errors=True)
            removed.append(gen.name)
        except BlockingIOError:
            continue  # a reader still uses it: a later writer removes it
        finally:
            if fh is not None:
                fh.close()
    return removed


def remove_unreferenced_segments(index_dir: Path) -> list[str]:
    """Delete segments that no remaining generation lists (a leased old generation keeps its own).

    Nothing is removed when a generation's manifest cannot be read: what it lists is unknown.
    """
    referenced = referenced_names(index_dir)
    if referenced is None:
        return []
    removed = []
    for p in sorted((index_dir / SEGMENTS).glob(f"{SEG_PREFIX}*")):
        if p.is_dir() and p.name not in referenced:
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p.name)
    return removed


def referenced_names(index_dir: Path) -> set[str] | None:
    """Names of the segments that some generation on disk lists (None: a manifest could not be read)."""
    names: set[str] = set()
    for number in _generation_numbers(index_dir):
        path = index_dir / f"{GEN_PREFIX}{number:06d}" / MANIFEST_NAME
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            names.update(seg["name"] for seg in data.get("segments", []))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
    return names


def _referenced_numbers(index_dir: Path) -> set[int]:
    return {int(n[len(SEG_PREFIX):]) for n in (referenced_names(index_dir) or ())}


def _segment_numbers(index_dir: Path) -> set[int]:
    out = set()
    for p in (index_dir / SEGMENTS).glob(f"{SEG_PREFIX}*"):
        try:
            out.add(int(p.name[len(SEG_PREFIX):]))
        except ValueError:
            continue
    return out


def _fault_point(name: str) -> None:
    """Tests only: ``RADSIFT_FAULT=NAME`` kills the process here (SIGKILL), as a crash would."""
    if os.environ.get("RADSIFT_FAULT") == name:
        os.kill(os.getpid(), 9)


def _generation_numbers(index_dir: Path) -> list[int]:
    out = []
    for p in index_dir.glob(f"{GEN_PREFIX}*"):
        try:
            out.append(int(p.name[len(GEN_PREFIX):]))
        except ValueError:
            continue
    return out


def remove_leftovers(index_dir: Path) -> None:
    """Delete temp folders of writers that crashed or were interrupted, and segments nothing lists."""
    for folder in (index_dir, index_dir / SEGMENTS):
        for p in folder.glob(f"{TMP_PREFIX}*"):
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
    remove_unreferenced_segments(index_dir)


_remove_leftovers = remove_leftovers


def _take_lease(gen_dir: Path):
    """A shared lock on the generation's ``.readers`` (None where it cannot be had: read-only media)."""
    try:
        fh = open(gen_dir / READERS, "a")
    except FileNotFoundError:
        raise
    except OSError:
        return None
    fcntl.flock(fh, fcntl.LOCK_SH)
    return fh


class _Segment:
    """One segment as a reader sees it: its SQLite file, its arrays, and where its live rows go.

    ``report_start`` is the store row of its first live report; ``unit_start[kind]`` likewise for units.
    """

    def __init__(self, index_dir: Path, info: Mapping, report_start: int, section_codes: Mapping[str, int],
                 finding_codes: Mapping[str, int]) -> None:
        self.info = info
        self.name = str(info["name"])
        self.path = segment_dir(index_dir, self.name)
        self.index_dir = index_dir
        counts = info["counts"]
        self.n_reports = int(counts["reports"])
        self.deleted = np.unique(np.asarray(info.get("deleted", []), dtype=np.int64))
        self.live = np.ones(self.n_reports, dtype=bool)
        self.live[self.deleted] = False
        self.report_local = np.flatnonzero(self.live)  # i-th live report -> its row in the segment
        self.report_start = report_start
        self.report_global = np.full(self.n_reports, -1, dtype=np.int64)
        self.report_global[self.report_local] = report_start + np.arange(self.report_local.shape[0])
        # The segment's own section and finding codes -> the generation's.
        self.section_map = np.array([section_codes.get(n, -1) for n in info.get("sections", [])] or [0],
                                    dtype=np.int16)
        self.finding_map = np.array([finding_codes.get(n, -1) for n in info.get("findings", [])] or [0],
                                    dtype=np.int16)
        self.unit_start: dict[str, int] = {}
        self._unit_local: dict[str, np.ndarray | None] = {}
        self._ids: list[str] | None = None
        self._has_crc: bool | None = None
        db_path = self.path / "store.sqlite"
        try:
            self.db = sqlite3.connect(f"file:{db_path}?mode=ro&immutable=1", uri=True, check_same_thread=False)
        except sqlite3.Error as exc:
            raise IndexDamagedError(f"{db_path}: cannot be opened ({exc}); see `radsift index verify`") from None

    def close(self) -> None:
        self.db.close()

    def array(self, name: str, mmap: bool = False) -> np.ndarray:
        return np.load(self.path / f"{name}.npy", mmap_mode="r" if mmap else None, allow_pickle=False)

    def unit_local(self, kind: str) -> np.ndarray | None:
        """The segment rows of its live ``kind`` units (None: all of them)."""
        if kind not in self._unit_local:
            if not self.deleted.size:
                self._unit_local[kind] = None
            else:
                self._unit_local[kind] = np.flatnonzero(self.live[self.array(f"{kind}_report")])
        return self._unit_local[kind]

    def n_units(self, kind: str) -> int:
        local = self.unit_local(kind)
        return int(self.info["counts"][f"{kind}s"]) if local is None else int(local.shape[0])

    def unit_global(self, kind: str) -> np.ndarray:
        """The store row of each of the segment's ``kind`` units (-1: deleted)."""
        n = int(self.info["counts"][f"{kind}s"])
        local = self.unit_local(kind)
        if local is None:
            return self.unit_start[kind] + np.arange(n, dtype=np.int64)
        out = np.full(n, -1, dtype=np.int64)
        out[local] = self.unit_start[kind] + np.arange(local.shape[0])
        return out

    def to_local(self, kind: str, rows: np.ndarray) -> np.ndarray:
        """Segment rows of store rows that fall in this segment."""
        if kind == "report":
            return self.report_local[rows - self.report_start]
        local = self.unit_local(kind)
        rows = rows - self.unit_start[kind]
        return rows if local is None else local[rows]

    @property
    def ids(self) -> list[str]:
        """Report ids by segment row (deleted ones included)."""
        if self._ids is None:
            self._ids = [r[0] for r in self.query("SELECT id FROM reports ORDER BY row")]
        return self._ids

    def query(self, sql: str, params: Sequence = ()) -> list[tuple]:
        try:
            return self.db.execute(sql, list(params)).fetchall()
        except sqlite3.DatabaseError as exc:
            raise IndexDamagedError(f"{self.path / 'store.sqlite'}: {exc}; the index is damaged: run "
                                    f"`radsift index verify {self.index_dir}`") from None

    @property
    def crc(self) -> str:
        """``, crc`` where the tables carry row checksums (indexes written before them do not)."""
        if self._has_crc is None:
            self._has_crc = any(c[1] == "crc" for c in self.query("PRAGMA table_info(reports)"))
        return ", crc" if self._has_crc else ""

    def rows(self, table: str, local: Sequence[int] | None, where: str = "", params: Sequence = ()) -> list[tuple]:
        """``(row, *columns)`` of ``table``'s rows ``local`` (None: all), in row order, each checked
        against its stored CRC when there is one."""
        sql = f"SELECT row, {COLUMNS[table]}{self.crc} FROM {table}"
        params = list(params)
        if local is not None:
            if not len(local):
                return []
            sql += f" WHERE row IN ({','.join('?' * len(local))})"
            params = [int(r) for r in local]
        elif where:
            sql += f" WHERE {where}"
        found = self.query(sql + " ORDER BY row", params)
        if not self._has_crc:
            return [tuple(r) for r in found]
        out = []
        for r in found:
            *fields, crc = r
            if row_crc(*fields[1:]) != crc:  # fields[0] is the row number
                raise IndexDamagedError(f"{self.path / 'store.sqlite'}: a {table} row (row {fields[0]}) does not "
                                        f"match its checksum: the file is damaged; run `radsift index verify --deep "
                                        f"{self.index_dir}`")
            out.append(tuple(fields))
        return out


class IndexStore:
    """Read-only view of the live generation of an index directory: its segments as one row space.

    Rows (of reports, sentences, sections) are the live rows of the segments in order, numbered
    from 0 without gaps: deleted reports and their units are not in it. While open it holds a reader
    lease on its generation (see the module docstring), released by :meth:`close` or when the store
    is garbage-collected.
    """

    def __init__(self, index_dir: Path, gen_dir: Path, manifest: Manifest, lease=None) -> None:
        self.index_dir = Path(index_dir)
        self.gen_dir = gen_dir
        self.manifest = manifest
        self._lease = lease
        sections = {n: i for i, n in enumerate(manifest.sections)}
        findings = {n: i for i, n in enumerate(manifest.findings)}
        self.segments: list[_Segment] = []
        start = 0
        try:
            for info in manifest.segments:
                seg = _Segment(self.index_dir, info, start, sections, findings)
                self.segments.append(seg)
                start += seg.report_local.shape[0]
        except BaseException:
            for seg in self.segments:
                seg.close()
            raise
        self.n_reports = start
        self._report_starts = np.array([s.report_start for s in self.segments], dtype=np.int64)
        self._unit_starts: dict[str, np.ndarray] = {}
        self._units: dict[str, UnitArrays] = {}
        self._bm25: dict[str, BM25] = {}
        self._report_ids: list[str] | None = None
        self._report_rows: dict[str, int] | None = None
        self._labels: LabelArrays | None = None
        self._cache: dict = {}
        self._cache_lock = threading.Lock()
        self._lock = threading.RLock()

    @classmethod
    def open(cls, index_dir: str | Path, *, check: bool = True) -> "IndexStore":
        """Open the live generation, with a reader lease, after the cheap integrity checks.

        Raises:
            IndexStoreError: No index, or a damaged file (named): missing, another size than recorded,
                an array of the wrong shape or ``dim``.
        """
        from radsift.index.integrity import check_generation

        index_dir = Path(index_dir)
        for _ in range(5):  # a writer may remove the generation between reading CURRENT and the lease
            gen = read_current(index_dir)
            try:
                lease = _take_lease(gen)
            except FileNotFoundError:
                if gen.exists():
                    lease = None  # an older generation written before leases
                    break
                continue
            if gen.exists() and live_generation(index_dir) == gen:
                break
            if lease is not None:
                lease.close()
        else:
            raise IndexStoreError(f"{index_dir}: the live generation keeps changing; try again")
        try:
            manifest = Manifest.read(gen / MANIFEST_NAME)
            if check:
                problems = check_generation(gen, manifest)
                if problems:
                    raise IndexDamagedError(f"{problems[0]}; the index is damaged: run `radsift index verify "
                                            f"{index_dir}` and rebuild it or `radsift index rollback {index_dir}`")
            return cls(index_dir, gen, manifest, lease)
        except BaseException:
            if lease is not None:
                lease.close()
            raise

    def close(self) -> None:
        for seg in self.segments:
            seg.close()
        if self._lease is not None:
            self._lease.close()
            self._lease = None

    def __del__(self) -> None:  # a dropped store (after a reload) gives its lease back
        try:
            self.close()
        except Exception:
            pass

    @contextmanager
    def guard(self) -> Iterator[None]:
        """Turn a damaged file met while reading (SQLite, arrays, BM25) into an :class:`IndexStoreError`
        naming the generation, instead of a raw traceback."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise IndexDamagedError(f"{self.gen_dir}: a segment's store.sqlite: {exc}; the index is damaged: run "
                                    f"`radsift index verify {self.index_dir}`") from None
        except (ValueError, OSError, EOFError, KeyError) as exc:
            raise IndexDamagedError(f"{self.gen_dir}: a file cannot be read ({type(exc).__name__}: {exc}); run "
                                    f"`radsift index verify {self.index_dir}`") from None

    def is_current(self) -> bool:
        """False once a writer has made another generation live."""
        try:
            return read_current(self.index_dir) == self.gen_dir
        except IndexStoreError:
            return True

    def cached(self, key, make):
        """A per-generation cache (vector backends ...), safe to fill from several threads."""
        with self._cache_lock:
            if key not in self._cache:
                self._cache[key] = make()
            return self._cache[key]

    # -- rows ----------------------------------------------------------------------------------
    def _starts(self, kind: str) -> np.ndarray:
        if kind == "report":
            return self._report_starts
        if kind not in self._unit_starts:
            start = 0
            for seg in self.segments:
                seg.unit_start[kind] = start
                start += seg.n_units(kind)
            self._unit_starts[kind] = np.array([s.unit_start[kind] for s in self.segments], dtype=np.int64)
        return self._unit_starts[kind]

    def _locate(self, kind: str, rows: Sequence[int]) -> Iterator[tuple[_Segment, np.ndarray, np.ndarray]]:
        """(segment, store rows, segment rows) of the ``rows`` in each segment that holds some."""
        rows = np.asarray([int(r) for r in rows], dtype=np.int64)
        if not rows.size:
            return
        which, local = self.locations(kind, rows)
        for i in np.unique(which).tolist():
            at = which == i
            yield self.segments[i], rows[at], local[at]

    def locations(self, kind: str, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where store ``rows`` of ``kind`` (``report``, ``sentence`` or ``section``) lie: each one's
        segment (its index in :attr:`segments`) and its row in that segment's files, which stays
        true in every later generation that lists the segment."""
        rows = np.asarray(rows, dtype=np.int64)
        which = np.searchsorted(self._starts(kind), rows, side="right") - 1
        local = np.empty_like(rows)
        for i in np.unique(which).tolist():
            at = which == i
            local[at] = self.segments[i].to_local(kind, rows[at])
        return which, local

    def segment_of_report(self, row: int) -> tuple[str, int]:
        """(segment name, segment row) of a store report row."""
        for seg, _, local in self._locate("report", [row]):
            return seg.name, int(local[0])
        raise IndexError(row)

    # -- units ---------------------------------------------------------------------------
    def units(self, kind: str) -> UnitArrays:
        """Vectors and row maps of ``sentence`` or ``section`` units (see :class:`UnitArrays`)."""
        if kind not in UNIT_KINDS:
            raise ValueError(f"unit kind must be one of {UNIT_KINDS}, not {kind!r}")
        with self._lock:
            if kind not in self._units:
                self._units[kind] = self._load_units(kind)
            return self._units[kind]

    def _load_units(self, kind: str) -> UnitArrays:
        self._starts(kind)
        report_rows, codes, parts = [], [], []
        for seg in self.segments:
            local = seg.unit_local(kind)
            rep = seg.array(f"{kind}_report")
            sec = seg.array(f"{kind}_section")
            if local is not None:
                rep, sec = rep[local], sec[local]
            report_rows.append(seg.report_global[rep])
            codes.append(seg.section_map[sec] if sec.size else sec)
            parts.append((seg, local))
        dim = int(self.manifest.dim)
        report_row = np.concatenate(report_rows).astype(np.int32) if report_rows else np.zeros(0, np.int32)
        section_code = np.concatenate(codes).astype(np.int16) if codes else np.zeros(0, np.int16)
        if len(parts) == 1 and parts[0][1] is None:
            vectors: np.ndarray | SegmentedVectors = parts[0][0].array(f"{kind}_vectors", mmap=True)
        else:
            vectors = SegmentedVectors([(seg.array(f"{kind}_vectors", mmap=True), local) for seg, local in parts], dim)
        return UnitArrays(vectors, report_row, section_code)

    def labels(self) -> LabelArrays:
        """Finding mentions of sentence units (empty arrays for an index built without labels)."""
        with self._lock:
            if self._labels is None:
                self._starts("sentence")
                rows, findings, status = [], [], []
                for seg in self.segments:
                    row = seg.unit_global("sentence")[seg.array("label_row")]
                    keep = row >= 0
                    rows.append(row[keep])
                    findings.append(seg.finding_map[seg.array("label_finding")[keep]])
                    status.append(seg.array("label_status")[keep])
                cat = lambda xs, t: np.concatenate(xs).astype(t) if xs else np.zeros(0, t)  # noqa: E731
                self._labels = LabelArrays(cat(rows, np.int32), cat(findings, np.int16), cat(status, np.int8))
            return self._labels

    def all_sentence_labels(self) -> list[LabelRecord]:
        """Every live sentence label, by store sentence row."""
        labels = self.labels()
        names = self.manifest.findings
        status = {code: name for name, code in STATUS_CODES.items()}
        return [LabelRecord(r, names[f], status[st])
                for r, f, st in zip(labels.row.tolist(), labels.finding.tolist(), labels.status.tolist())]

    def term_stats(self, kind: str) -> list[tuple[TermStats, np.ndarray]]:
        """Each segment's BM25 term statistics of ``kind`` units, with the store row of each (-1: deleted)."""
        self._starts(kind)
        return [(TermStats.load(seg.path / f"bm25_{kind}"), seg.unit_global(kind)) for seg in self.segments]

    def bm25(self, kind: str) -> BM25:
        """BM25 over ``sentence`` or ``section`` units, all segments scored with global statistics."""
        with self._lock:
            if kind not in self._bm25:
                n = sum(seg.n_units(kind) for seg in self.segments)
                self._bm25[kind] = BM25(self.term_stats(kind), n, self.manifest.bm25)
            return self._bm25[kind]

    def section_code(self, name: str) -> int | None:
        try:
            return self.manifest.sections.index(name)
        except ValueError:
            return None

    # -- records ---------------------------------------------------------------------------
    @property
    def report_ids(self) -> list[str]:
        """The id of every live report, by store row."""
        if self._report_ids is None:
            ids: list[str] = []
            for seg in self.segments:
                seg_ids = seg.ids
                ids.extend(seg_ids if not seg.deleted.size else (seg_ids[i] for i in seg.report_local.tolist()))
            self._report_ids = ids
        return self._report_ids

    def report_row(self, report_id: str) -> int | None:
        if self._report_rows is None:
            self._report_rows = {rid: i for i, rid in enumerate(self.report_ids)}
        return self._report_rows.get(report_id)

    def _report_of(self, seg: _Segment, row: tuple) -> Report:
        _, rid, sec, meta = row
        return Report(rid, json.loads(sec), json.loads(meta))

    def reports_by_rows(self, rows: Sequence[int]) -> dict[int, Report]:
        out = {}
        for seg, glob, local in self._locate("report", rows):
            back = dict(zip(local.tolist(), glob.tolist()))
            for r in seg.rows("reports", local):
                out[back[r[0]]] = self._report_of(seg, r)
        return out

    def get_report(self, report_id: str) -> Report | None:
        for seg in reversed(self.segments):  # a replaced report's live version is in the newest segment
            for r in seg.rows("reports", None, where="id = ?", params=[report_id]):
                if seg.live[r[0]]:
                    return self._report_of(seg, r)
        return None

    def iter_reports(self) -> Iterator[tuple[int, Report]]:
        for seg in self.segments:
            for r in seg.rows("reports", None):
                if seg.live[r[0]]:
                    yield int(seg.report_global[r[0]]), self._report_of(seg, r)

    def sentences_by_rows(self, rows: Sequence[int]) -> dict[int, Sentence]:
        out = {}
        for seg, glob, local in self._locate("sentence", rows):
            back = dict(zip(local.tolist(), glob.tolist()))
            ids = seg.ids
            for row, rep, sec, idx, start, end, text in seg.rows("sentences", local):
                out[back[row]] = Sentence(ids[rep], sec, idx, start, end, text)
        return out

    def sections_by_rows(self, rows: Sequence[int]) -> dict[int, tuple[str, str, str]]:
        """Section units by row: (report id, section name, text)."""
        out = {}
        for seg, glob, local in self._locate("section", rows):
            back = dict(zip(local.tolist(), glob.tolist()))
            ids = seg.ids
            for row, rep, sec, text in seg.rows("sections", local):
                out[back[row]] = (ids[rep], sec, text)
        return out

    def all_reports(self) -> list[ReportRecord]:
        """Every live report, in store row order."""
        return [ReportRecord(*r[1:]) for seg in self.segments for r in seg.rows("reports", None) if seg.live[r[0]]]

    def all_sentences(self) -> list[SentenceRecord]:
        """Every live sentence, in store row order, with its store report row."""
        return [SentenceRecord(int(seg.report_global[r[1]]), *r[2:]) for seg in self.segments
                for r in seg.rows("sentences", None) if seg.live[r[1]]]

    def all_sections(self) -> list[SectionRecord]:
        """Every live section unit, in store row order, with its store report row."""
        return [SectionRecord(int(seg.report_global[r[1]]), *r[2:]) for seg in self.segments
                for r in seg.rows("sections", None) if seg.live[r[1]]]

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
            # json_each compares the key as a plain string: any character works (a JSON path would not).
            ors = []
            for f in group:
                if f.op == "~":
                    ors.append("(m.key = ? AND instr(lower(CAST(m.value AS TEXT)), lower(?)) > 0)")
                else:
                    ors.append("(m.key = ? AND m.value = ?)")
                params += [key, f.value]
            clauses.append("EXISTS (SELECT 1 FROM json_each(reports.metadata) AS m WHERE " + " OR ".join(ors) + ")")
        sql = "SELECT row FROM reports" + (" WHERE " + " AND ".join(clauses) if clauses else "")
        parts = []
        for seg in self.segments:
            local = np.fromiter((r[0] for r in seg.query(sql, params)), dtype=np.int64)
            found = seg.report_global[local]
            parts.append(found[found >= 0])
        return np.sort(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)

