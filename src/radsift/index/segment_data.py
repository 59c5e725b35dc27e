"""What one segment holds for a list of reports: their records, sentence and section units, vectors,
weak labels and BM25 tokens (:class:`~radsift.index.format.GenerationData`, rows local to the segment).

One function, :func:`segment_data`, makes it: a one-process build calls it for all the new reports
(:mod:`radsift.index.builder`), and each worker of a spread build for its share
(:mod:`radsift.index.spread`), so a segment written by a worker holds what a one-process build writes
for the same reports.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np

from radsift.index.format import GenerationData, LabelRecord, ReportRecord, SectionRecord, SentenceRecord
from radsift.records import Report
from radsift.text import report_sentences
from radsift.text.aspects import section_windows
from radsift.text.tokens import tokenize


def encode_unique(encoder, texts: list[str], batch_size: int, progress: bool, desc: str) -> tuple[np.ndarray, int]:
    """Encode each distinct text once (radiology repeats boilerplate sentences a lot)."""
    if not texts:
        return np.zeros((0, encoder.dim), dtype=np.float32), 0
    uniq: dict[str, int] = {}
    inverse = np.fromiter((uniq.setdefault(t, len(uniq)) for t in texts), dtype=np.int64, count=len(texts))
    vecs = encoder.encode(list(uniq), batch_size=batch_size, progress=progress, desc=desc)
    return vecs[inverse], len(uniq)


def encode_sections(encoder, texts: list[str], batch_size: int, progress: bool,
                    desc: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Section vectors, read window by window. A section longer than one window
    (:data:`radsift.text.aspects.WINDOW_WORDS` words) is read as overlapping windows: the model reads 256
    word pieces, so truncating a long note section would drop its end. Its first window is its section
    vector; the others are kept beside (``section_windows.npy``) and a search scores the section by its
    best window (:func:`radsift.ranking.best_window_scores`), the rule chosen on the MedQuAD development
    split (untrained MiniLM R@1 53.1 best window, 52.8 first window, 46.1 mean of windows).

    Returns:
        ``(first, extra, owner, n_encoded)``: one vector per section, the vectors of every later window,
        each one's section (row in ``texts``), and how many distinct windows were encoded.
    """
    windows, owner = section_windows(texts)
    vecs, n = encode_unique(encoder, windows, batch_size, progress, desc)
    owner = np.asarray(owner, dtype=np.int64)
    first = np.ones(len(windows), dtype=bool)
    first[1:] = owner[1:] != owner[:-1]
    return vecs[first], vecs[~first], owner[~first].astype(np.int32), n


def units_of(reports: list[Report], first_row: int = 0) -> tuple[list[SentenceRecord], list[SectionRecord]]:
    """The sentence and section units of ``reports`` (report rows from ``first_row``)."""
    sentences, sections = [], []
    for offset, report in enumerate(reports):
        row = first_row + offset
        for name, text in report.sections.items():
            if text.strip():
                sections.append(SectionRecord(row, name, text))
        for s in report_sentences(report):
            sentences.append(SentenceRecord(row, s.section, s.index, s.start, s.end, s.text))
    return sentences, sections


def report_record(report: Report) -> ReportRecord:
    """A report as a segment stores it (sections and metadata as JSON text)."""
    return ReportRecord(report.id, json.dumps(dict(report.sections), ensure_ascii=False),
                        json.dumps(dict(report.metadata), ensure_ascii=False))


@lru_cache(maxsize=4)
def _labeler(lexicon: str | None):
    from radsift.labels.labeler import (
        Labeler,  # loads medspaCy (seconds): only when labeling
    )

    return Labeler(lexicon)


def label_sentences(sentences: list[SentenceRecord], lexicon: str | Path | None,
                    progress: bool) -> list[list[tuple[str, str]]]:
    """(finding, status) of each sentence, by the lexicon labeler (identical sentences labeled once; each
    read after the one before it in its section, which may hedge it, and with its report's impression, which
    may doubt what it describes)."""
    labeler = _labeler(str(lexicon) if lexicon else None)
    follows = [i > 0 and (s.report_row, s.section, s.idx) == (p.report_row, p.section, p.idx + 1)
               for i, (p, s) in enumerate(zip([None, *sentences], sentences))]
    mentions = labeler.label_many([s.text for s in sentences], progress=progress, follows=follows)
    mentions = labeler.read_reports(mentions, [s.section for s in sentences], [s.report_row for s in sentences])
    return [sorted({(m.finding, m.status) for m in ms}) for ms in mentions]


def segment_data(reports: list[Report], encoder, *, batch_size: int = 64, label: bool = True,
                 lexicon: str | Path | None = None, progress: bool = False) -> tuple[GenerationData, int]:
    """Everything a segment of ``reports`` holds, ready for :func:`radsift.index.writer.write_segment`.

    Args:
        reports: The segment's reports, in row order.
        encoder: Encodes the sentences and section windows (anything with ``encode`` and ``dim``).
        batch_size: Encoding batch size.
        label: Label the sentences with findings and their negation status.
        lexicon: The labeler's lexicon (None: the packaged chest X-ray lexicon).
        progress: Show progress bars.

    Returns:
        ``(data, n_encoded)``: the segment's data and how many distinct texts were encoded.
    """
    sentences, sections = units_of(reports)
    sent_vecs, n1 = encode_unique(encoder, [s.text for s in sentences], batch_size, progress, "encoding sentences")
    sec_vecs, win_vecs, win_owner, n2 = encode_sections(encoder, [s.text for s in sections], batch_size, progress,
                                                        "encoding sections")
    labels: list[LabelRecord] = []
    if label:
        for row, pairs in enumerate(label_sentences(sentences, lexicon, progress)):
            labels.extend(LabelRecord(row, f, st) for f, st in pairs)
    data = GenerationData(
        reports=[report_record(r) for r in reports],
        sentences=sentences,
        sections=sections,
        sentence_vectors=sent_vecs,
        section_vectors=sec_vecs,
        section_window_vectors=win_vecs,
        section_window_owner=win_owner,
        sentence_tokens=[tokenize(s.text) for s in sentences],
        section_tokens=[tokenize(s.text) for s in sections],
        sentence_labels=labels,
    )
    return data, n1 + n2


__all__ = ["encode_sections", "encode_unique", "label_sentences", "report_record", "segment_data", "units_of"]
