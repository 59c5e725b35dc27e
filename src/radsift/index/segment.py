"""One segment as a reader sees it (:class:`SegmentReader`), and the vectors of several segments as one matrix
(:class:`SegmentedVectors`).

Segments are never modified once written, so a reader opens its SQLite file read-only (``immutable``)
and memory-maps its arrays; every stored row is checked against its CRC-32 when it is read.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from radsift.errors import IndexDamagedError
from radsift.index.format import COLUMNS, row_crc, segment_dir
from radsift.index.integrity import (check_indptr, check_status, check_terms, check_values, load_array,
                                     read_verified, verify_file)
from radsift.ranking.bm25 import TERM_FILES, TermStats


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


class SegmentReader:
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
        #: Files hashed against their checksums (:meth:`verify_small`), by path: their stat then.
        self.verified: dict[Path, tuple[int, int, int]] = {}
        db_path = self.path / "store.sqlite"
        try:
            self.db = sqlite3.connect(f"file:{db_path}?mode=ro&immutable=1", uri=True, check_same_thread=False)
        except sqlite3.Error as exc:
            raise IndexDamagedError(f"{db_path}: cannot be opened ({exc}); see `radsift index verify`") from None

    def close(self) -> None:
        self.db.close()

    def recorded(self, rel: str) -> dict | None:
        """The size and SHA-256 the manifest records for the segment's file ``rel`` (None: not recorded)."""
        return (self.info.get("files") or {}).get(rel)

    def verify_small(self) -> None:
        """Hash every recorded file a search reads but the vectors (windows included) and the SQLite file (row maps, labels, BM25
        statistics and postings) against its checksum: when a store is opened, so a damaged generation is
        refused before it serves (and a reader following new generations keeps the one it has). A file read
        later with the stat it had here is not hashed again (:func:`~radsift.index.integrity.read_verified`).

        Raises:
            IndexDamagedError: The first file that differs, naming it.
        """
        for rel, recorded in (self.info.get("files") or {}).items():
            if rel != "store.sqlite" and not rel.endswith(("_vectors.npy", "section_windows.npy")):
                verify_file(self.path / rel, recorded, self.index_dir, self.verified)

    def array(self, name: str, mmap: bool = False) -> np.ndarray:
        """The segment's array ``name``: a vector file memory-mapped (``mmap``; checked at ``verify --deep`` and
        before a merge), any other read into memory, checked against its recorded checksum (unless hashed at
        open and unchanged since: :meth:`verify_small`) and its values against the ranges they index
        (:mod:`radsift.index.integrity`).

        Raises:
            IndexDamagedError: Naming the file: missing, unreadable, another checksum, a value out of range.
        """
        path = self.path / f"{name}.npy"
        if mmap:
            try:
                return np.load(path, mmap_mode="r", allow_pickle=False)
            except (ValueError, OSError, EOFError) as exc:
                raise IndexDamagedError(f"{path}: not a readable array ({exc})") from None
        arr = load_array(path, self.recorded(f"{name}.npy"), self.index_dir, verified=self.verified)
        counts = self.info["counts"]
        if name.endswith("_report"):
            return check_values(path, arr, 0, int(counts["reports"]))
        if name.endswith("_section"):
            return check_values(path, arr, 0, len(self.info.get("sections", [])))
        if name in ("label_row", "reading_row"):
            return check_values(path, arr, 0, int(counts["sentences"]))
        if name == "reading_status":
            return check_status(path, arr)
        if name == "label_finding":
            return check_values(path, arr, 0, len(self.info.get("findings", [])))
        if name == "label_status":
            return check_status(path, arr)
        return arr

    def term_stats(self, kind: str) -> TermStats:
        """The segment's BM25 term statistics of ``kind`` units, every file checked against its recorded
        checksum and its values against their ranges (postings verified, then memory-mapped)."""
        folder = self.path / f"bm25_{kind}"
        rel = f"bm25_{kind}/"
        terms = check_terms(folder / "terms.json",
                            read_verified(folder / "terms.json", self.recorded(rel + "terms.json"), self.index_dir,
                                          self.verified))
        arrays = {name: load_array(folder / f"{name}.npy", self.recorded(f"{rel}{name}.npy"), self.index_dir,
                                   mmap=name in ("rows", "tf"), verified=self.verified)
                  for name in (f[:-4] for f in TERM_FILES if f.endswith(".npy"))}
        n = int(self.info["counts"][f"{kind}s"])
        lengths, rows, tf = arrays["lengths"], arrays["rows"], arrays["tf"]
        if lengths.shape != (n,):
            raise IndexDamagedError(f"{folder / 'lengths.npy'}: shape {lengths.shape}, expected ({n},)")
        check_values(folder / "lengths.npy", lengths, 0, 1 << 31)
        if rows.ndim != 1 or rows.shape != tf.shape:
            raise IndexDamagedError(f"{folder / 'rows.npy'}: postings of shape {rows.shape}, tf {tf.shape}")
        check_indptr(folder / "indptr.npy", arrays["indptr"], len(terms), rows.shape[0])
        check_values(folder / "rows.npy", rows, 0, n)
        check_values(folder / "tf.npy", tf, 1, 1 << 31)
        return TermStats(terms, **arrays)

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
