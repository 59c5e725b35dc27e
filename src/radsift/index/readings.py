"""Reading postings: each finding's stated mentions (sentence rows and status), written with the segment.

A search that reads findings (negation tiers, ``matching`` counts, reading classes) needs, per finding,
the sentences that state something of it. The label arrays hold them in sentence order; a segment also
holds them grouped by finding (written by :func:`reading_arrays` at index time, so nothing is sorted
when an index opens or on its first query)::

    reading_ptr.npy     int64 (F + 1,): finding code f's mentions are positions ptr[f]:ptr[f + 1]
    reading_row.npy     int32 the segment's sentence rows, by finding, ascending within one
    reading_status.npy  int8 their status codes (:data:`radsift.ranking.tiers.STATUS_CODES`)

They are recorded in the manifest and checksummed like every small array (hashed when the store opens,
range-checked when read: :meth:`~radsift.index.segment.SegmentReader.array`), checked against the label
arrays by ``radsift index verify`` (:func:`reading_problems`), and written again from the live labels by
``optimize`` (a merge writes a new segment). Deleted reports stay in a segment's files; their sentences
are dropped when read (:func:`finding_mentions`). A segment written before these files has its postings
grouped from its label arrays when first read, as before.
"""

from __future__ import annotations

import numpy as np

from radsift.errors import IndexDamagedError, IndexStoreError
from radsift.index.integrity import check_indptr, file_and_reason

#: The segment files (without ``.npy``).
NAMES = ("reading_ptr", "reading_row", "reading_status")


def reading_arrays(label_row: np.ndarray, label_finding: np.ndarray, label_status: np.ndarray,
                   n_findings: int) -> dict[str, np.ndarray]:
    """The reading postings of a segment's label arrays (finding codes ``0..n_findings - 1``)."""
    label_finding = np.asarray(label_finding, dtype=np.int64)
    order = np.lexsort((np.asarray(label_row, dtype=np.int64), label_finding))
    ptr = np.zeros(n_findings + 1, dtype=np.int64)
    np.cumsum(np.bincount(label_finding, minlength=n_findings)[:n_findings], out=ptr[1:])
    return {"reading_ptr": ptr, "reading_row": np.asarray(label_row, dtype=np.int32)[order],
            "reading_status": np.asarray(label_status, dtype=np.int8)[order]}


def segment_readings(seg) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ptr, rows, status) of a :class:`~radsift.index.segment.SegmentReader`: its files (checked), or for a
    segment written before them, grouped from its label arrays.

    Raises:
        IndexDamagedError: A file missing, of another checksum, or out of range, naming it.
    """
    n_findings = len(seg.info.get("findings", []))
    if seg.recorded("reading_ptr.npy") is None:
        got = reading_arrays(seg.array("label_row"), seg.array("label_finding"), seg.array("label_status"),
                             n_findings)
        return got["reading_ptr"], got["reading_row"], got["reading_status"]
    rows, status = seg.array("reading_row"), seg.array("reading_status")
    ptr = check_indptr(seg.path / "reading_ptr.npy", seg.array("reading_ptr"), n_findings, rows.shape[0])
    if status.shape != rows.shape:
        raise IndexDamagedError(f"{seg.path / 'reading_status.npy'}: shape {status.shape}, reading_row.npy "
                                f"{rows.shape}: the file is damaged")
    return ptr, rows, status


def finding_mentions(store, code: int) -> tuple[np.ndarray, np.ndarray]:
    """(store sentence rows, status codes) of the live mentions of the generation's finding ``code``, by
    segment (so ascending), read from each segment's reading postings (kept per segment once read)."""
    store.units("sentence")  # the segments' first sentence rows
    rows, status = [], []
    for seg in store.segments:
        ptr, seg_rows, seg_status = store.cached(("readings", seg.name), lambda s=seg: segment_readings(s))
        for local in np.flatnonzero(seg.finding_map == code).tolist():
            if local >= len(seg.info.get("findings", [])):
                continue  # the placeholder map of a segment without findings
            a, b = int(ptr[local]), int(ptr[local + 1])
            if seg.unit_local("sentence") is None:  # no report deleted: rows follow the segment's first
                g = np.asarray(seg_rows[a:b], dtype=np.int64) + seg.unit_start["sentence"]
            else:
                g = store.cached(("sentence_global", seg.name), lambda s=seg: s.unit_global("sentence"))[seg_rows[a:b]]
            keep = g >= 0  # a deleted report's sentences
            rows.append(g[keep])
            status.append(np.asarray(seg_status[a:b])[keep])
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(rows).astype(np.int64), np.concatenate(status).astype(np.int64)


def reading_problems(seg) -> list[tuple[str, str]]:
    """(file, reason) where a segment's reading postings are not its label arrays grouped by finding (none for
    a segment written before them)."""
    if seg.recorded("reading_ptr.npy") is None:
        return []
    try:
        ptr, rows, status = segment_readings(seg)
        want = reading_arrays(seg.array("label_row"), seg.array("label_finding"), seg.array("label_status"),
                              len(seg.info.get("findings", [])))
    except IndexStoreError as exc:
        return [file_and_reason(exc)]
    for name, got in zip(NAMES, (ptr, rows, status)):
        if not np.array_equal(got, want[name]):
            return [(str(seg.path / f"{name}.npy"), "the reading postings differ from the label arrays")]
    return []
