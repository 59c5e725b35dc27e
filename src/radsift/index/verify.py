"""Verified generations: what a generation's segment files must be, checked cheaply on open and fully on
demand (:func:`verify_index`, ``radsift index verify``).

Each generation's manifest records, for every segment it lists, the size and SHA-256 of every
file the writer wrote into that segment (``segments[i]["files"]``, hashed once when the segment
was written). Opening a generation checks what costs nothing, for every listed segment: every
recorded file is there with its recorded size, and the arrays have the shapes the manifest
promises (vectors ``(n, dim)`` with the manifest's ``dim`` and the segment's counts, one row map
entry per unit, label arrays of one length, BM25 statistics of one length per unit).
``radsift index verify`` does the same, and with ``--deep`` recomputes every checksum. A
problem is an :class:`~radsift.errors.IndexStoreError` that names the file, never a raw
traceback or a wrong answer; ``docs/recovery`` in the README says how to recover (rebuild, or
``radsift index rollback`` to the previous generation).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from radsift.errors import IndexDamagedError, IndexStoreError
from radsift.index.format import COLUMNS, segment_dir
from radsift.index.generations import read_current
from radsift.index.integrity import MANIFEST_SHA, cache_problems, sha256_file
from radsift.index.manifest import MANIFEST_NAME, Manifest
from radsift.index.places import location_problems
from radsift.index.readings import reading_problems
from radsift.index.segment import SegmentReader

#: Files a writer does not record: the manifest itself and the reader leases.
UNRECORDED = ("manifest.json", ".readers")
#: Where the HNSW graphs of a generation live (radsift.index.backends.placement.GRAPH_DIR).
GRAPH_DIR = Path("cache") / "hnsw"
#: The small arrays a search reads (checked against their checksums and ranges by every verify).
SMALL_ARRAYS = ("sentence_report", "sentence_section", "section_report", "section_section", "label_row",
                "label_finding", "label_status")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a generation: the file and what is wrong with it."""

    path: Path
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def record_files(gen_dir: Path) -> dict[str, dict]:
    """``{relative path: {"size", "sha256"}}`` of every file of a segment (what the manifest records)."""
    out = {}
    for f in sorted(gen_dir.rglob("*")):
        rel = f.relative_to(gen_dir).as_posix()
        if f.is_file() and rel not in UNRECORDED:
            out[rel] = {"size": f.stat().st_size, "sha256": sha256_file(f)}
    return out


def check_files(gen_dir: Path, files: dict[str, dict], deep: bool = False) -> list[Problem]:
    """Recorded files that are missing, of another size, or (``deep``) of another checksum."""
    problems = []
    for rel, info in files.items():
        path = gen_dir / rel
        try:
            size = path.stat().st_size
        except OSError:
            problems.append(Problem(path, "missing"))
            continue
        if size != info.get("size"):
            problems.append(Problem(path, f"{size} bytes, the manifest recorded {info.get('size')}"))
        elif deep and sha256_file(path) != info.get("sha256"):
            problems.append(Problem(path, "checksum differs from the manifest's (the file was changed or damaged)"))
    return problems


def _array(path: Path):
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False), None
    except FileNotFoundError:
        return None, Problem(path, "missing")
    except (ValueError, OSError, EOFError) as exc:
        return None, Problem(path, f"not a readable array ({exc})")


def check_arrays(seg_dir: Path, counts: dict, dim: int) -> list[Problem]:
    """A segment's arrays' headers against the manifest: shapes, ``dim``, counts, one length per label array."""
    problems: list[Problem] = []
    for kind in ("sentence", "section"):
        n = counts.get(f"{kind}s")
        vec, p = _array(seg_dir / f"{kind}_vectors.npy")
        if p:
            problems.append(p)
        elif vec.ndim != 2 or vec.dtype != np.float32:
            problems.append(Problem(seg_dir / f"{kind}_vectors.npy", f"shape {vec.shape} {vec.dtype}, expected "
                                                                      "a float32 matrix"))
        else:
            if vec.shape[1] != dim:
                problems.append(Problem(seg_dir / f"{kind}_vectors.npy",
                                        f"{vec.shape[1]} dimensions, the manifest says dim {dim}"))
            if n is not None and vec.shape[0] != n:
                problems.append(Problem(seg_dir / f"{kind}_vectors.npy", f"{vec.shape[0]} rows, the manifest "
                                                                           f"counts {n} {kind}s"))
            n = vec.shape[0] if n is None else n
        for suffix in ("report", "section"):
            arr, p = _array(seg_dir / f"{kind}_{suffix}.npy")
            if p:
                problems.append(p)
            elif n is not None and arr.shape != (n,):
                problems.append(Problem(seg_dir / f"{kind}_{suffix}.npy", f"shape {arr.shape}, expected ({n},)"))
        arr, p = _array(seg_dir / f"bm25_{kind}" / "lengths.npy")
        if p:
            problems.append(p)
        elif n is not None and arr.shape != (n,):
            problems.append(Problem(seg_dir / f"bm25_{kind}" / "lengths.npy", f"shape {arr.shape}, expected ({n},)"))
    lengths = {}
    for name in ("label_row", "label_finding", "label_status"):
        arr, p = _array(seg_dir / f"{name}.npy")
        if p:
            problems.append(p)
        else:
            lengths[name] = arr.shape
    if len(set(lengths.values())) > 1:
        problems.append(Problem(seg_dir / "label_row.npy", f"label arrays of different shapes {lengths}"))
    return problems + check_windows(seg_dir, counts.get("sections"), dim)


def check_windows(seg_dir: Path, n_sections: int | None, dim: int) -> list[Problem]:
    """The later windows of long sections (segments written before them have neither file): a float32
    ``(m, dim)`` matrix and one section row in range per window."""
    if not (seg_dir / "section_windows.npy").exists() and not (seg_dir / "section_window_owner.npy").exists():
        return []
    vec, p = _array(seg_dir / "section_windows.npy")
    owner, q = _array(seg_dir / "section_window_owner.npy")
    if p or q:
        return [x for x in (p, q) if x]
    if vec.ndim != 2 or vec.dtype != np.float32 or vec.shape[1] != dim:
        return [Problem(seg_dir / "section_windows.npy", f"shape {vec.shape} {vec.dtype}, expected float32 (m, {dim})")]
    if owner.shape != (vec.shape[0],):
        return [Problem(seg_dir / "section_window_owner.npy", f"shape {owner.shape}, expected ({vec.shape[0]},)")]
    if owner.size and n_sections is not None and (int(owner.min()) < 0 or int(owner.max()) >= n_sections):
        return [Problem(seg_dir / "section_window_owner.npy", f"section rows outside 0..{n_sections - 1}")]
    return []


def check_vectors(path: Path, chunk: int = 65536) -> Problem | None:
    """Every row of a vector file finite and of unit length (or zero): what search scores rely on."""
    vec, p = _array(path)
    if p:
        return p
    for start in range(0, vec.shape[0], chunk):
        block = np.asarray(vec[start:start + chunk], dtype=np.float64)
        if not np.isfinite(block).all():
            return Problem(path, f"non-finite values (NaN or infinity) from row {start}")
        norms = np.linalg.norm(block, axis=1)
        bad = np.flatnonzero((np.abs(norms - 1.0) > 1e-2) & (norms > 0))
        if bad.size:
            return Problem(path, f"row {start + int(bad[0])} has length {norms[bad[0]]:.4g}, not 1 (damaged)")
    return None


def check_segment(seg_dir: Path, info: dict, dim: int, deep: bool = False) -> list[Problem]:
    """Every problem of one segment: recorded files (sizes; checksums when ``deep``), array shapes,
    deleted rows in range; ``deep`` also reads every vector (finite, unit length)."""
    if not seg_dir.is_dir():
        return [Problem(seg_dir, "missing (the generation lists this segment)")]
    problems = check_files(seg_dir, info.get("files") or {}, deep=deep)
    bad = {p.path for p in problems}
    counts = info.get("counts", {})
    problems += [p for p in check_arrays(seg_dir, counts, dim) if p.path not in bad]
    deleted = info.get("deleted") or []
    if deleted and (min(deleted) < 0 or max(deleted) >= counts.get("reports", 0)):
        problems.append(Problem(seg_dir, f"the manifest deletes report rows outside 0..{counts.get('reports', 0) - 1}"))
    if deep:
        bad = {p.path for p in problems}
        for name in ("sentence_vectors", "section_vectors", "section_windows"):
            path = seg_dir / f"{name}.npy"
            if path not in bad and path.exists() and (p := check_vectors(path)) is not None:
                problems.append(p)
    return problems


def check_generation(gen_dir: Path, manifest, deep: bool = False) -> list[Problem]:
    """Every problem of a generation's segments (:func:`check_segment`, each one it lists)."""
    problems = []
    for info in manifest.segments:
        problems += check_segment(segment_dir(gen_dir.parent, info["name"]), info, manifest.dim, deep=deep)
    return problems


def check_small_arrays(index_dir: Path, info: dict) -> list[Problem]:
    """The arrays a search reads of one segment, as a reader loads them: checksums and value ranges (and the
    reading postings against the labels)."""
    problems: list[Problem] = []
    try:
        segment = SegmentReader(index_dir, info, 0, {}, {})
    except IndexStoreError as exc:
        return [Problem(segment_dir(index_dir, info["name"]) / "store.sqlite", str(exc))]
    try:
        for name in SMALL_ARRAYS:
            try:
                segment.array(name)
            except IndexStoreError as exc:
                problems.append(Problem(segment.path / f"{name}.npy", _reason(exc)))
        for kind in ("sentence", "section"):
            try:
                segment.term_stats(kind)
            except IndexStoreError as exc:
                problems.append(Problem(segment.path / f"bm25_{kind}", _reason(exc)))
        problems += [Problem(Path(path), reason) for path, reason in reading_problems(segment)]
        problems += [Problem(Path(path), reason) for path, reason in location_problems(segment)]
    finally:
        segment.close()
    return problems


def _reason(exc: Exception) -> str:
    """An error's message without the file it starts with (a Problem names the file)."""
    text = str(exc)
    return text.split(": ", 1)[-1] if text.startswith("/") else text


def check_cache(index_dir: Path, gen: Path, deep: bool = False) -> list[Problem]:
    """The live generation's HNSW graph files against the checksums recorded when they were written."""
    problems = []
    for graph in sorted((index_dir / GRAPH_DIR).glob(f"{gen.name}.*.faiss")):
        found = cache_problems(graph, deep=deep, only=(graph.name + ".dups.npz", graph.name + ".layout.npz"))
        if not found and not graph.with_name(graph.name + ".files.json").exists():
            found = [(graph, "no checksums recorded for this graph (written before radsift recorded them)")]
        problems += [Problem(path, reason) for path, reason in found]
    return problems


def verify_index(index_dir: str | Path, deep: bool = False) -> list:
    """Every problem of the live generation and its segments (:func:`check_generation`, the small arrays'
    checksums and ranges, the graph cache; then with ``deep`` SQLite's integrity check and every row's
    checksum); empty when whole. A manifest that cannot be read is one problem naming it, never a crash."""
    index_dir = Path(index_dir)
    gen = read_current(index_dir)
    try:
        manifest = Manifest.read(gen / MANIFEST_NAME)
    except IndexStoreError as exc:
        return [Problem(gen / MANIFEST_NAME, _reason(exc))]
    try:
        problems = check_generation(gen, manifest, deep=deep)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # a manifest of another shape (checked on read)
        return [Problem(gen / MANIFEST_NAME, f"damaged manifest ({type(exc).__name__}: {exc})")]
    if not manifest.checksummed:
        problems.append(Problem(gen / MANIFEST_NAME, f"no checksums recorded for the manifest itself (no "
                                                     f"{MANIFEST_SHA}: written before radsift recorded one); the next "
                                                     "add or delete records one"))
    for seg in manifest.segments:
        if not seg.get("files"):
            problems.append(Problem(segment_dir(index_dir, seg["name"]), "no checksums recorded: only shapes "
                                                                         "were checked"))
    bad = {p.path for p in problems}
    for seg in manifest.segments:
        if segment_dir(index_dir, seg["name"]) not in bad:
            problems += [p for p in check_small_arrays(index_dir, seg) if p.path not in bad]
    problems += check_cache(index_dir, gen, deep=deep)
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
            segment = SegmentReader(index_dir, seg, 0, {}, {})
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
