"""Reading an index: :class:`IndexStore`, the live generation's segments as one row space.

Readers present one row space to the rest of radsift: the live rows of the segments, in segment
order, renumbered densely (deleted reports and their units simply do not exist in it). BM25 is
scored over all segments with the live documents' global statistics
(:class:`radsift.ranking.bm25.BM25`), so it equals one index of the same reports.

An open store holds a **lease** on its generation (:func:`~radsift.index.generations.take_lease`),
so a writer never removes it underneath; a reader that opened an older generation keeps a
consistent view until it reloads. Opening checks what costs nothing (:mod:`radsift.index.verify`):
every recorded file there with its recorded size, arrays of the shapes the manifest promises, and
the small arrays a search reads (row maps, labels, BM25 statistics and postings) against their
checksums (their values against their ranges when first read); every file is watched for changes
under the open store (:mod:`radsift.index.integrity`).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from radsift.errors import IndexDamagedError, IndexStoreError
from radsift.index.format import UNIT_KINDS, LabelRecord, ReportRecord, SectionRecord, SentenceRecord
from radsift.index.generations import live_generation, read_current, take_lease
from radsift.index.integrity import FileWatch
from radsift.index.manifest import MANIFEST_NAME, Manifest
from radsift.index.segment import SegmentedVectors, SegmentReader
from radsift.index.verify import check_generation
from radsift.ranking.bm25 import BM25, TermStats
from radsift.ranking.tiers import STATUS_CODES
from radsift.records import Report, Sentence


@dataclass
class UnitArrays:
    """Vectors and row maps of one unit kind (sentences or sections), in the store's row space.

    ``vectors`` is the segment's memory-mapped file when the generation has one segment and no
    deleted row, else a :class:`SegmentedVectors` over every segment's file (no copy at open).
    """

    vectors: np.ndarray | SegmentedVectors  # float32 (n, dim)
    report_row: np.ndarray  # int32 (n,), the report row of each unit
    section_code: np.ndarray  # int16 (n,), index into manifest.sections
    # Sections only: the later windows of sections longer than one window (``vectors`` holds the first)
    # and the store row of each one's section; a section scores by its best window.
    windows: np.ndarray | None = None  # float32 (m, dim)
    window_owner: np.ndarray | None = None  # int64 (m,)


@dataclass
class LabelArrays:
    """Finding mentions of sentence units, for negation-aware ranking."""

    row: np.ndarray  # int32 sentence row
    finding: np.ndarray  # int16 index into manifest.findings
    status: np.ndarray  # int8, see STATUS_CODES


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
        self.segments: list[SegmentReader] = []
        start = 0
        try:
            for info in manifest.segments:
                seg = SegmentReader(self.index_dir, info, start, sections, findings)
                self.segments.append(seg)
                start += seg.report_local.shape[0]
        except BaseException:
            for seg in self.segments:
                seg.close()
            raise
        self.n_reports = start
        # Every file the segments hold, as they are now: a file changed under this reader is an error at the
        # next request (guard), not a SIGBUS from a memory map.
        self.watch = FileWatch(self.index_dir)
        for seg in self.segments:
            recorded = seg.info.get("files") or {}
            if recorded:
                self.watch.add(seg.path / rel for rel in recorded)
            else:
                self.watch.add(p for p in seg.path.rglob("*") if p.is_file())
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
                an array of the wrong shape or ``dim``, a small array of another checksum.
        """
        index_dir = Path(index_dir)
        for _ in range(5):  # a writer may remove the generation between reading CURRENT and the lease
            gen = read_current(index_dir)
            try:
                lease = take_lease(gen)
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
            store = cls(index_dir, gen, manifest, lease)
            if check:
                try:
                    for seg in store.segments:
                        seg.verify_small()
                except BaseException:
                    lease = None  # the store's close gives it back
                    store.close()
                    raise
            return store
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
        naming the generation, instead of a raw traceback; first, a file changed since the store was opened
        (:class:`~radsift.index.integrity.FileWatch`) is an error naming it."""
        self.watch.check()
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

    def _locate(self, kind: str, rows: Sequence[int]) -> Iterator[tuple[SegmentReader, np.ndarray, np.ndarray]]:
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
        windows, owner = self._later_windows(dim) if kind == "section" else (None, None)
        return UnitArrays(vectors, report_row, section_code, windows, owner)

    def _later_windows(self, dim: int) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The later windows of long sections in every segment, and their sections' store rows (live only)."""
        vecs, owners = [], []
        for seg in self.segments:
            if not (seg.path / "section_windows.npy").exists():  # written before windows were kept
                continue
            owner = seg.array("section_window_owner").astype(np.int64)
            if not owner.size:
                continue
            n = int(seg.info["counts"]["sections"])
            if (owner.min() < 0 or owner.max() >= n):
                raise IndexDamagedError(f"{seg.path / 'section_window_owner.npy'}: a window names section row "
                                        f"{int(owner.max())} of a segment holding {n}; see `radsift index verify`")
            rows = seg.unit_global("section")[owner]
            keep = rows >= 0
            vecs.append(np.asarray(seg.array("section_windows", mmap=True)[keep], dtype=np.float32))
            owners.append(rows[keep])
        if not owners or not sum(o.size for o in owners):
            return None, None
        return np.concatenate(vecs).reshape(-1, dim), np.concatenate(owners)

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
        return [(seg.term_stats(kind), seg.unit_global(kind)) for seg in self.segments]

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

    def _report_of(self, seg: SegmentReader, row: tuple) -> Report:
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

        Filters on different keys must all match; several on one key match if any does, except ranges
        (``>=``, ``<=``), which must all hold. ``key=value`` compares exactly, ``key~value`` by
        case-insensitive substring, ``key>=value`` / ``key<=value`` as text.
        """
        by_key: dict[tuple, list] = {}
        for f in filters:  # a range is a group of its own: ranges must all hold
            by_key.setdefault((f.key, f.op, f.value) if f.op in (">=", "<=") else (f.key,), []).append(f)
        clauses, params = [], []
        for (key, *_), group in by_key.items():
            # json_each compares the key as a plain string: any character works (a JSON path would not).
            ors = []
            for f in group:
                if f.op == "~":
                    ors.append("(m.key = ? AND instr(lower(CAST(m.value AS TEXT)), lower(?)) > 0)")
                elif f.op in (">=", "<="):  # compared as text: ISO dates compare as dates
                    ors.append(f"(m.key = ? AND CAST(m.value AS TEXT) {f.op} ?)")
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
