"""The on-disk format of an index: its folders and file names, the SQLite schema, and the records a segment holds.

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
        section_vectors.npy   float32 (n_sections, dim): a section's first window (a short section: all of it)
        section_windows.npy   float32 (n_later_windows, dim): the later windows of sections longer than one
                              window; section_window_owner.npy int32 each one's section row (a search
                              scores a section by its best window; segments written before have neither)
        sentence_report.npy   int32 report row (in the segment) of each sentence; sentence_section.npy
                              int16 section code (into the segment's own section names)
        section_report.npy    int32; section_section.npy int16
        label_row.npy, label_finding.npy, label_status.npy
                              the sentences' finding labels (row, finding code, status code)
        reading_ptr.npy, reading_row.npy, reading_status.npy
                              the same labels grouped by finding (:mod:`radsift.index.readings`;
                              segments written before have none)
        sentence_regions.npy, sentence_region_sides.npy, section_regions.npy, section_region_sides.npy
                              uint8 the lung regions each unit names and the sides they imply
                              (:mod:`radsift.index.places`; segments written before have none)
        bm25_sentence/        BM25 term statistics (:class:`radsift.ranking.bm25.TermStats`)
        bm25_section/

A build writes one segment (one a worker with ``--workers N`` or ``--ray``, committed together as one
generation); ``radsift index add`` writes one new segment holding only the added
reports and a new generation that lists the old segments plus the new one, so an add costs what
it adds, never a copy of the index. ``--replace`` and ``radsift index delete`` record the old
reports' rows as deleted in the new generation's manifest (their segments are not touched);
``radsift index optimize`` merges the live rows of all segments into one segment and drops the
tombstones. ``INDEX_DIR/.radsift-index`` marks a folder radsift created, so a first build that died
before its first commit can be built again.

Writing is :mod:`radsift.index.writer`, which generation is live :mod:`radsift.index.generations`,
garbage collection and rollback :mod:`radsift.index.lifecycle`, the checks :mod:`radsift.index.verify`
and reading :mod:`radsift.index.reader`.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from radsift.ranking.bm25 import TermStats

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
    section_window_vectors: np.ndarray | None = None  # later windows of long sections (None: none)
    section_window_owner: np.ndarray | None = None  # int32 section row of each
    sentence_tokens: list[list[str]] = field(default_factory=list)
    section_tokens: list[list[str]] = field(default_factory=list)
    sentence_labels: list[LabelRecord] = field(default_factory=list)
    sentence_terms: TermStats | None = None
    section_terms: TermStats | None = None


def segment_dir(index_dir: Path, name: str) -> Path:
    """The folder of segment ``name`` of an index."""
    return Path(index_dir) / SEGMENTS / name
