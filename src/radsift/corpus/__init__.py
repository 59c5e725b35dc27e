"""radsift.corpus: read report corpora (CSV, JSON Lines, text files, Open-i XML).

>>> from radsift.corpus import ReaderOptions, read_corpus
>>> options = ReaderOptions.from_cli("csv", "uid", ["findings=findings"], None, "fail")  # doctest: +SKIP
>>> for report in read_corpus(["reports.csv"], options): ...  # doctest: +SKIP

:func:`read_corpus` streams :class:`~radsift.records.Report` objects; bad input raises
:class:`~radsift.errors.CorpusError` naming the file and the line, column or field, or is
skipped and counted in :class:`ReadStats` with ``on_error="skip"``.
"""

from __future__ import annotations

from radsift.corpus.options import FORMATS, ON_ERROR, ReaderOptions, infer_format
from radsift.corpus.reader import read_corpus
from radsift.corpus.stats import ReadStats

__all__ = ["FORMATS", "ON_ERROR", "ReadStats", "ReaderOptions", "infer_format", "read_corpus"]
