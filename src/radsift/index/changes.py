"""Changes to an index that encode nothing: delete reports (a new generation marks them deleted), merge
the segments into one (:func:`optimize_index`, which also converts a format-1 index). Given a vector
``backend``, each ends as :func:`radsift.index.build_index` does (:func:`radsift.index.derived.derive`)."""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from radsift.errors import IndexStoreError
from radsift.index.builder import BuildOptions, commit_segments, progress_step, tombstoned
from radsift.index.derived import Derived, derive
from radsift.index.format import GenerationData, LabelRecord, ReportRecord, SectionRecord, SentenceRecord
from radsift.index.generations import read_current, write_lock
from radsift.index.lifecycle import remove_leftovers
from radsift.index.places import current as locations_current
from radsift.index.manifest import FORMAT_VERSION, MANIFEST_NAME, Manifest
from radsift.index.reader import IndexStore
from radsift.index.integrity import verified_for_merge
from radsift.index.verify import check_files, check_generation, check_small_arrays
from radsift.index.writer import write_segment
from radsift.ranking.bm25 import TermStats
from radsift.ranking.tiers import STATUS_CODES
from radsift.text.tokens import tokenize
from radsift.version import __version__


@dataclass
class ChangeSummary:
    """What ``radsift index delete`` or ``optimize`` did."""

    index_dir: Path
    action: str
    reports: int = 0  # live reports afterwards
    deleted: int = 0  # reports deleted by this run
    segments_before: int = 0
    segments: int = 0
    dropped: int = 0  # deleted reports an optimize dropped for good
    stale: int = 0  # segments an optimize wrote again for their location flags (radsift.index.places)
    seconds: float = 0.0
    derived: Derived = field(default_factory=Derived)  # graphs, Milvus push (see radsift.index.derived)

    def describe(self) -> str:
        if self.action == "delete":
            return (f"deleted {self.deleted} report(s) from {self.index_dir}: {self.reports} reports left "
                    f"(in {self.segments} segments; `radsift index optimize` reclaims the space)")
        if self.action == "upgrade":
            return (f"converted {self.index_dir} from format 1 into one segment ({self.reports} reports, nothing "
                    f"re-encoded) in {self.seconds:.1f}s")
        if self.action == "optimize-nothing":
            return (f"nothing to optimize: {self.index_dir} is one segment with no deleted report "
                    f"({self.reports} reports)")
        stale = (f" ({self.stale} without this version's location flags, now written)" if self.stale else "")
        return (f"optimized {self.index_dir}: {self.segments_before} segments -> 1{stale}, {self.dropped} deleted "
                f"reports dropped, {self.reports} reports, in {self.seconds:.1f}s")


def delete_from_index(index_dir: str | Path, report_ids: Iterable[str], *, backend: str | None = None,
                      say: Callable[[str], None] | None = None) -> ChangeSummary:
    """Delete reports from an index: a new generation records them as deleted (no segment is rewritten).

    With a ``backend`` (as :func:`radsift.index.build_index`), the new generation's graphs are extended
    (deleted rows leave their nodes) or its vectors pushed to Milvus; ``say`` is told each step.

    Raises:
        IndexStoreError: An id is not in the index (all of them named; nothing is deleted), or none is given.
    """
    index_dir = Path(index_dir)
    ids = list(dict.fromkeys(str(i) for i in report_ids))
    if not ids:
        raise IndexStoreError("no report id to delete was given")
    start = time.perf_counter()
    with write_lock(index_dir):
        old = IndexStore.open(index_dir)
        try:
            missing = [i for i in ids if old.report_row(i) is None]
            if missing:
                shown = ", ".join(repr(i) for i in missing[:10]) + (" ..." if len(missing) > 10 else "")
                raise IndexStoreError(f"{len(missing)} report id(s) not in {index_dir}: {shown}; nothing was deleted")
            manifest = replace(old.manifest, empty_ids=sorted(set(old.manifest.empty_ids) - set(ids)))
            remove_leftovers(index_dir)
            commit_segments(index_dir, manifest, tombstoned(old, ids))
        finally:
            old.close()
    summary = ChangeSummary(index_dir, "delete", reports=manifest.counts["reports"], deleted=len(ids),
                            segments=len(manifest.segments), seconds=time.perf_counter() - start)
    summary.derived = derive(index_dir, backend, say=say)
    return summary


def optimize_index(index_dir: str | Path, *, progress: bool = False, backend: str | None = None,
                   say: Callable[[str], None] | None = None) -> ChangeSummary:
    """Merge the live rows of all segments into one segment and drop the deleted reports for good; a lone
    segment without this version's location flags (:mod:`radsift.index.places`) is written again with them.

    Nothing is re-encoded or re-tokenised: records, vectors, labels and BM25 term statistics are
    copied from the segments. An index of format 1 (before segments) is converted into one segment.
    Committed atomically like every write: an interrupted optimize leaves
    the previous generation live and whole (its leftovers are removed by the next writer).

    With a ``backend`` (as :func:`radsift.index.build_index`), the generation's graphs are then built from
    scratch (a fresh graph: no node left empty by deletions), or its vectors pushed to Milvus.
    """
    summary = _merge(Path(index_dir), progress)
    summary.derived = derive(index_dir, backend, extend=False, say=say)
    return summary


def _merge(index_dir: Path, progress: bool) -> ChangeSummary:
    """:func:`optimize_index` but for the derived data."""
    index_dir = Path(index_dir)
    start = time.perf_counter()
    opts = BuildOptions(progress=progress)
    with write_lock(index_dir):
        if _format_of(index_dir) == 1:
            return _upgrade_v1(index_dir, opts, start)
        old = IndexStore.open(index_dir)
        try:
            segs = old.manifest.segments
            summary = ChangeSummary(index_dir, "optimize", reports=len(old.report_ids), segments_before=len(segs),
                                    segments=1, dropped=sum(len(s.get("deleted", [])) for s in segs),
                                    stale=sum(not locations_current(s) for s in segs))
            if len(segs) <= 1 and not summary.dropped and not summary.stale:
                summary.action = "optimize-nothing"
                return summary
            # As Lucene verifies segment checksums on merge: a merge must not launder damage into a new segment
            # whose checksums would then be right.
            with progress_step(opts, f"verifying the checksums of {len(segs)} segments"):
                verified_for_merge(check_generation(old.gen_dir, old.manifest, deep=True) + [
                    p for s in segs for p in check_small_arrays(index_dir, s)], index_dir, "optimize")
            with progress_step(opts, f"merging {len(segs)} segments"):
                sections = old.units("section")  # live rows in store order: the merged segment's rows
                data = GenerationData(
                    reports=old.all_reports(), sentences=old.all_sentences(), sections=old.all_sections(),
                    sentence_vectors=np.asarray(old.units("sentence").vectors),
                    section_vectors=np.asarray(sections.vectors),
                    section_window_vectors=sections.windows, section_window_owner=sections.window_owner,
                    sentence_labels=old.all_sentence_labels(),
                    sentence_terms=TermStats.merge(old.term_stats("sentence")),
                    section_terms=TermStats.merge(old.term_stats("section")),
                )
                manifest = replace(old.manifest, radsift_version=__version__, metadata_keys=sorted(
                    {k for r in data.reports for k in json.loads(r.metadata)}))
                remove_leftovers(index_dir)
                seg = write_segment(index_dir, data, manifest.bm25, mid_fault="optimize-mid-merge")
                commit_segments(index_dir, manifest, [seg])
        finally:
            old.close()
    summary.seconds = time.perf_counter() - start
    return summary


def _format_of(index_dir: Path) -> int | None:
    """The format version the live generation's manifest declares (None when it cannot be read)."""
    try:
        return json.loads((read_current(index_dir) / MANIFEST_NAME).read_text(encoding="utf-8")).get("format_version")
    except (OSError, ValueError, AttributeError):
        return None


def _upgrade_v1(index_dir: Path, opts: BuildOptions, start: float) -> ChangeSummary:
    """Convert a format-1 index (one folder per generation, BM25 as bm25s matrices) into one segment:
    records, vectors and labels are copied, BM25 statistics recomputed from the stored texts; nothing is
    re-encoded. The format-1 generation stays on disk until the next write (not readable by this radsift)."""
    gen = read_current(index_dir)
    raw = json.loads((gen / MANIFEST_NAME).read_text(encoding="utf-8"))
    problems = check_files(gen, raw.get("files") or {})
    if problems:
        raise IndexStoreError(f"cannot convert {index_dir}: {problems[0]}; rebuild it with `radsift index build "
                              f"--overwrite {index_dir} CORPUS`")
    with progress_step(opts, f"converting {gen.name} (format 1) into one segment"):
        db = sqlite3.connect(f"file:{gen / 'store.sqlite'}?mode=ro&immutable=1", uri=True)
        try:
            reports = [ReportRecord(*r) for r in db.execute("SELECT id, sections, metadata FROM reports ORDER BY row")]
            sentences = [SentenceRecord(*r) for r in db.execute(
                'SELECT report_row, section, idx, start, "end", text FROM sentences ORDER BY row')]
            sections = [SectionRecord(*r) for r in db.execute(
                "SELECT report_row, section, text FROM sections ORDER BY row")]
        except sqlite3.DatabaseError as exc:
            raise IndexStoreError(f"cannot convert {index_dir}: {gen / 'store.sqlite'}: {exc}") from None
        finally:
            db.close()
        findings, status = raw.get("findings", []), {code: name for name, code in STATUS_CODES.items()}
        rows, codes, states = (np.load(gen / f"label_{x}.npy").tolist() for x in ("row", "finding", "status"))
        data = GenerationData(
            reports=reports, sentences=sentences, sections=sections,
            sentence_vectors=np.load(gen / "sentence_vectors.npy", mmap_mode="r"),
            section_vectors=np.load(gen / "section_vectors.npy", mmap_mode="r"),
            sentence_tokens=[tokenize(x.text) for x in sentences], section_tokens=[tokenize(x.text) for x in sections],
            sentence_labels=[LabelRecord(r, findings[f], status[st]) for r, f, st in zip(rows, codes, states)],
        )
        known = set(Manifest.__dataclass_fields__)
        manifest = Manifest(**{k: v for k, v in raw.items() if k in known})
        manifest.format_version, manifest.files = FORMAT_VERSION, {}
        remove_leftovers(index_dir)
        commit_segments(index_dir, manifest, [write_segment(index_dir, data, manifest.bm25)])
    return ChangeSummary(index_dir, "upgrade", reports=len(reports), segments=1, seconds=time.perf_counter() - start)
