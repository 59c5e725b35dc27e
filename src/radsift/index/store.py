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

Readers hold a **lease** on the generation they read: a shared ``flock`` on its ``.readers``
file, held while the :class:`IndexStore` is open. A writer removes an old generation only when
it can take that lock exclusively (no reader holds it), and never removes the live generation
or the one it replaced (kept for ``radsift index rollback``). The manifest records every file's
size and SHA-256 (:mod:`radsift.index.integrity`), checked cheaply on open and fully by
``radsift index verify --deep``. ``INDEX_DIR/.radsift-index`` marks a folder radsift created,
so a first build that died before its first commit can be built again.
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
from radsift.ranking.bm25 import build_bm25, load_bm25, save_bm25
from radsift.ranking.tiers import STATUS_CODES
from radsift.records import Report, Sentence

CURRENT = "CURRENT"
GEN_PREFIX = "gen-"
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


def row_crc(*fields) -> int:
    """CRC-32 of a stored row's fields (what the ``crc`` column holds)."""
    return zlib.crc32("\x1f".join(map(str, fields)).encode("utf-8", "surrogatepass"))



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


def write_generation(index_dir: Path, data: GenerationData, manifest: Manifest) -> Path:
    """Write ``data`` as a new generation and make it live atomically. Caller holds the write lock."""
    from radsift.index.integrity import record_files

    index_dir = Path(index_dir)
    mark_index_dir(index_dir)
    _remove_leftovers(index_dir)
    live = live_generation(index_dir)
    previous = _generation_numbers(index_dir)
    number = (max(previous) if previous else 0) + 1
    manifest.generation = number
    final = index_dir / f"{GEN_PREFIX}{number:06d}"
    tmp = index_dir / f"{TMP_PREFIX}{GEN_PREFIX}{number:06d}-{os.getpid()}"
    tmp.mkdir()
    (tmp / READERS).touch()

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
    manifest.files = record_files(tmp)
    (tmp / MANIFEST_NAME).write_text(manifest.to_json(), encoding="utf-8")
    _fault_point("before-rename")

    for f in tmp.rglob("*"):
        if f.is_file():
            with open(f, "rb+") as fh:
                os.fsync(fh.fileno())
    os.rename(tmp, final)
    _fsync_dir(index_dir)
    _fault_point("before-commit")
    _point_current(index_dir, final)  # the commit point
    _fault_point("after-commit")
    # Keep the new generation and the one it replaced (for rollback); drop the others no reader holds.
    keep = {final.name} | ({live.name} if live is not None else set())
    remove_unread_generations(index_dir, keep)
    return final


def verify_index(index_dir: str | Path, deep: bool = False) -> list:
    """Every problem of the live generation (:mod:`radsift.index.integrity`); empty when it is whole."""
    from radsift.index.integrity import Problem, check_generation

    index_dir = Path(index_dir)
    gen = read_current(index_dir)
    try:
        manifest = Manifest.read(gen / MANIFEST_NAME)
    except IndexStoreError as exc:
        return [Problem(gen / MANIFEST_NAME, str(exc))]
    problems = check_generation(gen, manifest, deep=deep)
    if not manifest.files:
        problems.append(Problem(gen / MANIFEST_NAME, "records no checksums (written before radsift recorded them): "
                                                    "only shapes were checked"))
    if deep and not problems:
        try:
            with sqlite3.connect(f"file:{gen / 'store.sqlite'}?mode=ro&immutable=1", uri=True) as db:
                result = db.execute("PRAGMA integrity_check").fetchone()[0]
            if result != "ok":
                problems.append(Problem(gen / "store.sqlite", f"SQLite integrity check: {result}"))
        except sqlite3.DatabaseError as exc:
            problems.append(Problem(gen / "store.sqlite", str(exc)))
    if deep:  # every row against its checksum (says which table, where the file checksum cannot)
        try:
            store = IndexStore(index_dir, gen, manifest)
        except IndexStoreError as exc:
            problems.append(Problem(gen / "store.sqlite", str(exc)))
            return problems
        try:
            store.all_reports(), store.all_sentences(), store.all_sections()
        except (IndexDamagedError, sqlite3.DatabaseError) as exc:
            problems.append(Problem(gen / "store.sqlite", str(exc).split(": ", 1)[-1]))
        finally:
            store.close()
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


def _remove_leftovers(index_dir: Path) -> None:
    """Delete temp folders of writers that crashed or were interrupted."""
    for p in index_dir.glob(f"{TMP_PREFIX}*"):
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)


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


class IndexStore:
    """Read-only view of the live generation of an index directory.

    While open it holds a reader lease on its generation (see the module docstring), released by
    :meth:`close` or when the store is garbage-collected.
    """

    def __init__(self, index_dir: Path, gen_dir: Path, manifest: Manifest, lease=None) -> None:
        self.index_dir = index_dir
        self.gen_dir = gen_dir
        self.manifest = manifest
        self._lease = lease
        uri = f"file:{gen_dir / 'store.sqlite'}?mode=ro&immutable=1"
        try:
            self.db = sqlite3.connect(uri, uri=True, check_same_thread=False)
        except sqlite3.Error as exc:
            raise IndexDamagedError(f"{gen_dir / 'store.sqlite'}: cannot be opened ({exc}); see `radsift index "
                                    "verify`") from None
        self._units: dict[str, UnitArrays] = {}
        self._bm25: dict[str, object] = {}
        self._report_ids: list[str] | None = None
        self._report_rows: dict[str, int] | None = None
        self._labels: LabelArrays | None = None
        self._has_crc: bool | None = None
        self._cache: dict = {}
        self._cache_lock = threading.Lock()

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
        self.db.close()
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
            raise IndexDamagedError(f"{self.gen_dir / 'store.sqlite'}: {exc}; the index is damaged: run "
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

    @property
    def _crc(self) -> str:
        """``, crc`` where the tables carry row checksums (indexes written before them do not)."""
        if self._has_crc is None:
            self._has_crc = any(c[1] == "crc" for c in self.db.execute("PRAGMA table_info(reports)"))
        return ", crc" if self._has_crc else ""

    def _checked(self, table: str, rows):
        """Each row's fields, after comparing them with its stored CRC (the last column) when there is one."""
        if not self._has_crc:
            return [tuple(r) for r in rows]
        out = []
        for r in rows:
            *fields, crc = r
            if row_crc(*fields[1:]) != crc:  # fields[0] is the row number
                raise IndexDamagedError(f"{self.gen_dir / 'store.sqlite'}: a {table} row (row {fields[0]}) does not "
                                        f"match its checksum: the file is damaged; run `radsift index verify --deep "
                                        f"{self.index_dir}`")
            out.append(tuple(fields))
        return out

    def reports_by_rows(self, rows: Sequence[int]) -> dict[int, Report]:
        if not rows:
            return {}
        marks = ",".join("?" * len(rows))
        cur = self.db.execute(f"SELECT row, id, sections, metadata{self._crc} FROM reports WHERE row IN ({marks})",
                              [int(r) for r in rows])
        return {row: Report(rid, json.loads(sec), json.loads(meta))
                for row, rid, sec, meta in self._checked("reports", cur)}

    def get_report(self, report_id: str) -> Report | None:
        cur = self.db.execute(f"SELECT row, id, sections, metadata{self._crc} FROM reports WHERE id = ?", (report_id,))
        found = self._checked("reports", cur.fetchall())
        return None if not found else Report(found[0][1], json.loads(found[0][2]), json.loads(found[0][3]))

    def iter_reports(self) -> Iterator[tuple[int, Report]]:
        cur = self.db.execute(f"SELECT row, id, sections, metadata{self._crc} FROM reports ORDER BY row")
        for row, rid, sec, meta in self._checked("reports", cur):
            yield row, Report(rid, json.loads(sec), json.loads(meta))

    def sentences_by_rows(self, rows: Sequence[int]) -> dict[int, Sentence]:
        if not len(rows):
            return {}
        marks = ",".join("?" * len(rows))
        cur = self.db.execute(
            f'SELECT s.row, s.report_row, s.section, s.idx, s.start, s."end", s.text{self._crc.replace("crc", "s.crc")} '
            f"FROM sentences s WHERE s.row IN ({marks})",
            [int(r) for r in rows],
        )
        ids = self.report_ids
        return {row: Sentence(ids[rep], sec, idx, start, end, text)
                for row, rep, sec, idx, start, end, text in self._checked("sentences", cur)}

    def sections_by_rows(self, rows: Sequence[int]) -> dict[int, tuple[str, str, str]]:
        """Section units by row: (report id, section name, text)."""
        if not len(rows):
            return {}
        marks = ",".join("?" * len(rows))
        cur = self.db.execute(f"SELECT row, report_row, section, text{self._crc} FROM sections WHERE row IN ({marks})",
                              [int(r) for r in rows])
        ids = self.report_ids
        return {row: (ids[rep], sec, text) for row, rep, sec, text in self._checked("sections", cur)}

    def all_reports(self) -> list[ReportRecord]:
        cur = self.db.execute(f"SELECT row, id, sections, metadata{self._crc} FROM reports ORDER BY row")
        return [ReportRecord(*r[1:]) for r in self._checked("reports", cur)]

    def all_sentences(self) -> list[SentenceRecord]:
        cur = self.db.execute(f'SELECT row, report_row, section, idx, start, "end", text{self._crc} FROM sentences '
                              "ORDER BY row")
        return [SentenceRecord(*r[1:]) for r in self._checked("sentences", cur)]

    def all_sections(self) -> list[SectionRecord]:
        cur = self.db.execute(f"SELECT row, report_row, section, text{self._crc} FROM sections ORDER BY row")
        return [SectionRecord(*r[1:]) for r in self._checked("sections", cur)]

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
        return np.fromiter((r[0] for r in self.db.execute(sql, params)), dtype=np.int64)
