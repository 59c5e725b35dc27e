"""Writing an index: a new immutable segment, then a generation that lists it, made live atomically.

A writer builds every new folder under a temporary name, fsyncs it, renames it into place and only
then replaces ``CURRENT`` (:func:`~radsift.index.generations.point_current`). A crash or Ctrl-C at any
point before that leaves the previous generation live and untouched; leftovers are removed by the next
writer (:func:`~radsift.index.lifecycle.remove_leftovers`). Segments and generations are never modified
once written, so readers open them read-only. Each segment's files are recorded in the manifest with
their size and SHA-256 (:func:`~radsift.index.verify.record_files`). The caller holds the write lock
(:func:`~radsift.index.generations.write_lock`).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from radsift.index.format import (GEN_PREFIX, READERS, SCHEMA, SEG_PREFIX, SEGMENTS, TMP_PREFIX, UNIT_KINDS,
                                  GenerationData, row_crc, segment_dir)
from radsift.index.generations import fsync_dir, generation_numbers, live_generation, mark_index_dir, point_current
from radsift.index.integrity import check_values, load_array
from radsift.index.lifecycle import (referenced_names, remove_leftovers, remove_unread_generations,
                                     remove_unreferenced_segments)
from radsift.index.manifest import MANIFEST_NAME, Manifest
from radsift.index.places import location_arrays
from radsift.index.places import stamp as locations_stamp
from radsift.index.readings import reading_arrays
from radsift.index.verify import record_files
from radsift.ranking.bm25 import TermStats
from radsift.ranking.tiers import STATUS_CODES


def _section_codes(names: Sequence[str], vocab: list[str]) -> np.ndarray:
    lookup = {name: i for i, name in enumerate(vocab)}
    return np.fromiter((lookup[n] for n in names), dtype=np.int16, count=len(names))


def _fsync_tree(folder: Path) -> None:
    for f in folder.rglob("*"):
        if f.is_file():
            with open(f, "rb+") as fh:
                os.fsync(fh.fileno())


def segment_names(index_dir: Path, count: int) -> list[str]:
    """The names of the next ``count`` segments (after every one on disk or listed by a generation): a
    parent hands them to the workers that write segments side by side. Caller holds the write lock."""
    first = max(_segment_numbers(index_dir) | _referenced_numbers(index_dir), default=0) + 1
    return [f"{SEG_PREFIX}{number:06d}" for number in range(first, first + count)]


def write_segment(index_dir: Path, data: GenerationData, bm25_params: Mapping | None = None,
                  mid_fault: str | None = None, name: str | None = None) -> dict:
    """Write ``data`` as a new immutable segment (temp folder, fsync, rename); nothing references it yet.

    Caller holds the write lock, or is a worker of the caller that holds it and named the segment
    (``name``, from :func:`segment_names`; None: the next free name). Returns the segment's entry for a
    generation manifest: name, counts, its section and finding names, its files (size, SHA-256) and an
    empty deletion set.
    """
    index_dir = Path(index_dir)
    root = index_dir / SEGMENTS
    root.mkdir(parents=True, exist_ok=True)
    name = name or segment_names(index_dir, 1)[0]
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
        "section_windows": np.ascontiguousarray(
            np.zeros((0, data.section_vectors.shape[1]), np.float32) if data.section_window_vectors is None
            else data.section_window_vectors, dtype=np.float32).reshape(-1, data.section_vectors.shape[1]),
        "section_window_owner": np.asarray([] if data.section_window_owner is None else data.section_window_owner,
                                           dtype=np.int32),
        "sentence_report": np.fromiter((s.report_row for s in data.sentences), dtype=np.int32,
                                       count=len(data.sentences)),
        "sentence_section": _section_codes([s.section for s in data.sentences], names),
        "section_report": np.fromiter((s.report_row for s in data.sections), dtype=np.int32, count=len(data.sections)),
        "section_section": _section_codes([s.section for s in data.sections], names),
        "label_row": np.fromiter((lab.sentence_row for lab in labels), dtype=np.int32, count=len(labels)),
        "label_finding": np.fromiter((fcode[lab.finding] for lab in labels), dtype=np.int16, count=len(labels)),
        "label_status": np.fromiter((STATUS_CODES[lab.status] for lab in labels), dtype=np.int8, count=len(labels)),
    }
    arrays.update(reading_arrays(arrays["label_row"], arrays["label_finding"], arrays["label_status"], len(findings)))
    arrays.update(location_arrays("sentence", [s.text for s in data.sentences]))
    arrays.update(location_arrays("section", [s.text for s in data.sections]))
    for key, arr in arrays.items():
        np.save(tmp / f"{key}.npy", arr)
    for kind, terms, tokens in (("sentence", data.sentence_terms, data.sentence_tokens),
                                ("section", data.section_terms, data.section_tokens)):
        (terms if terms is not None else TermStats.from_tokens(tokens)).save(tmp / f"bm25_{kind}")
    info = {"name": name, "counts": {"reports": len(data.reports), "sentences": len(data.sentences),
                                     "sections": len(data.sections)},
            "sections": names, "findings": findings, "files": record_files(tmp), "deleted": [], **locations_stamp()}
    _fsync_tree(tmp)
    os.rename(tmp, root / name)
    fsync_dir(root)
    _fault_point("segment-written")  # written, not committed: the next writer removes it
    return info


def commit_generation(index_dir: Path, manifest: Manifest) -> Path:
    """Write a generation listing ``manifest.segments`` and make it live atomically; then remove the
    generations and segments nothing needs. Caller holds the write lock."""
    index_dir = Path(index_dir)
    live = live_generation(index_dir)
    previous = generation_numbers(index_dir)
    number = (max(previous) if previous else 0) + 1
    manifest.generation = number
    final = index_dir / f"{GEN_PREFIX}{number:06d}"
    tmp = index_dir / f"{TMP_PREFIX}{GEN_PREFIX}{number:06d}-{os.getpid()}"
    tmp.mkdir()
    (tmp / READERS).touch()
    (tmp / MANIFEST_NAME).write_text(manifest.to_json(), encoding="utf-8")
    Manifest.read(tmp / MANIFEST_NAME)  # CURRENT only ever names a generation whose manifest verifies
    _fault_point("before-rename")
    _fsync_tree(tmp)
    os.rename(tmp, final)
    fsync_dir(index_dir)
    _fault_point("before-commit")
    point_current(index_dir, final)  # the commit point
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
                path = segment_dir(index_dir, seg["name"]) / f"{kind}_report.npy"
                rows = check_values(path, load_array(path, (seg.get("files") or {}).get(path.name), index_dir), 0, n)
                out[f"{kind}s"] += int(live[rows].sum())
    return out


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
