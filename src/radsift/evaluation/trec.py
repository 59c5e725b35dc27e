"""TREC-style files: query lists, runs and relevance judgments (qrels).

Formats (whitespace-separated unless said otherwise):

- queries: ``qid<TAB>query text`` per line; further tab-separated columns are ignored, blank
  lines and lines starting with ``#`` are skipped.
- run: ``qid Q0 docid rank score tag`` per line (six columns). The rank column is written
  but not trusted on reading: like trec_eval, documents are ranked by score.
- qrels: ``qid iteration docid relevance`` per line (four columns, the iteration column is
  ignored, usually ``0``); relevance is an integer and a document counts as relevant when it
  is greater than 0.

Every reader raises :class:`~radsift.evaluation.errors.TrecFormatError` naming the file and
line of the first problem. Writers replace the target atomically (temporary file in the same
directory, then :func:`os.replace`), so a crash never leaves half a file behind.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence

from radsift.evaluation._gc import gc_paused
from radsift.evaluation.errors import EvaluationError, TrecFormatError
from radsift.evaluation.ranking import Entry, rank_entries

Run = dict[str, list[Entry]]
Qrels = dict[str, dict[str, int]]


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------
def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield ``(line number, line without its newline)``; file problems become TrecFormatError."""
    if not path.exists():
        raise TrecFormatError(f"{path}: no such file")
    if not path.is_file():
        raise TrecFormatError(f"{path}: not a file")
    try:
        # utf-8-sig: tolerate the byte-order mark some editors put at the start.
        with path.open("r", encoding="utf-8-sig", newline="") as handle:
            for lineno, line in enumerate(handle, 1):
                yield lineno, line.rstrip("\r\n")
    except UnicodeDecodeError as exc:
        raise TrecFormatError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise TrecFormatError(f"{path}: cannot read ({exc.strerror})") from None


_SPACE = re.compile(r"\s")


def _has_space(value: str) -> bool:
    return _SPACE.search(value) is not None


def read_queries(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a ``qid<TAB>query`` file.

    Args:
        path: The file. Extra tab-separated columns are ignored; blank lines and lines starting
            with ``#`` are skipped.

    Returns:
        Query id to query text, in file order.

    Raises:
        TrecFormatError: The file is missing or empty, a line has no tab, an empty id or text,
            an id with whitespace in it, or an id seen before (naming both lines).
    """
    path = Path(path)
    queries: dict[str, str] = {}
    first_line: dict[str, int] = {}
    for lineno, line in _lines(path):
        if not line.strip() or line.startswith("#"):
            continue
        if "\t" not in line:
            raise TrecFormatError(f"{path}:{lineno}: expected 'qid<TAB>query', found no tab in {line[:60]!r}")
        qid, text = (part.strip() for part in line.split("\t")[:2])
        if not qid:
            raise TrecFormatError(f"{path}:{lineno}: empty query id")
        if _has_space(qid):
            raise TrecFormatError(f"{path}:{lineno}: query id {qid!r} contains whitespace")
        if not text:
            raise TrecFormatError(f"{path}:{lineno}: query {qid!r} has no text")
        if qid in queries:
            raise TrecFormatError(
                f"{path}:{lineno}: duplicate query id {qid!r} (first on line {first_line[qid]})"
            )
        queries[qid] = text
        first_line[qid] = lineno
    if not queries:
        raise TrecFormatError(f"{path}: no queries (the file is empty or holds only comments)")
    return queries


def read_run(path: str | os.PathLike[str]) -> Run:
    """Read a TREC run (``qid Q0 docid rank score tag``).

    Args:
        path: The run file. Blank lines are skipped.

    Returns:
        Query id to its ``(docid, score)`` pairs ranked by score (ties as trec_eval breaks them,
        see :func:`radsift.evaluation.ranking.rank_entries`); queries in file order.

    Raises:
        TrecFormatError: Missing or empty file, a line without exactly six columns, a rank that
            is not an integer, a score that is not a number (or NaN), or a document listed twice
            for the same query.
    """
    path = Path(path)
    with gc_paused():
        return _read_run(path)


def _read_run(path: Path) -> Run:
    run: dict[str, list[Entry]] = {}
    for lineno, line in _lines(path):
        parts = line.split()
        if len(parts) != 6:
            if not parts:
                continue
            raise TrecFormatError(
                f"{path}:{lineno}: expected 6 columns 'qid Q0 docid rank score tag', found {len(parts)}"
            )
        qid, _, docid, rank, score_text, _ = parts
        try:
            int(rank)
        except ValueError:
            raise TrecFormatError(f"{path}:{lineno}: rank {rank!r} is not an integer") from None
        try:
            score = float(score_text)
        except ValueError:
            raise TrecFormatError(f"{path}:{lineno}: score {score_text!r} is not a number") from None
        if score != score:  # NaN
            raise TrecFormatError(f"{path}:{lineno}: score is NaN")
        entries = run.get(qid)
        if entries is None:
            entries = run[qid] = []
        entries.append((docid, score))
    if not run:
        raise TrecFormatError(f"{path}: no run entries (empty file)")
    ranked = {}
    for qid, entries in run.items():
        try:
            ranked[qid] = rank_entries(entries, qid)
        except EvaluationError:
            _raise_duplicate(path, qid, "listed twice for query")
            raise
    return ranked


def _raise_duplicate(path: Path, qid: str, what: str) -> None:
    """Find the first repeated docid of ``qid`` and raise an error naming both lines."""
    seen: dict[str, int] = {}
    for lineno, line in _lines(path):
        parts = line.split()
        if len(parts) < 3 or parts[0] != qid:
            continue
        docid = parts[2]
        if docid in seen:
            raise TrecFormatError(
                f"{path}:{lineno}: document {docid!r} {what} {qid!r} (first on line {seen[docid]})"
            )
        seen[docid] = lineno


def read_qrels(path: str | os.PathLike[str]) -> Qrels:
    """Read TREC qrels (``qid iteration docid relevance``).

    Args:
        path: The qrels file. Blank lines are skipped; the iteration column is ignored.

    Returns:
        Query id to ``{docid: relevance}``, in file order. Judgments of 0 (or below) are kept:
        they count as judged non-relevant.

    Raises:
        TrecFormatError: Missing or empty file, a line without exactly four columns, a relevance
            that is not an integer, or a document judged twice for the same query.
    """
    path = Path(path)
    qrels: Qrels = {}
    first_line: dict[tuple[str, str], int] = {}
    for lineno, line in _lines(path):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4:
            raise TrecFormatError(
                f"{path}:{lineno}: expected 4 columns 'qid 0 docid relevance', found {len(parts)}"
            )
        qid, _, docid, rel_text = parts
        try:
            rel = int(rel_text)
        except ValueError:
            raise TrecFormatError(f"{path}:{lineno}: relevance {rel_text!r} is not an integer") from None
        key = (qid, docid)
        if key in first_line:
            raise TrecFormatError(
                f"{path}:{lineno}: document {docid!r} judged twice for query {qid!r} "
                f"(first on line {first_line[key]})"
            )
        first_line[key] = lineno
        qrels.setdefault(qid, {})[docid] = rel
    if not qrels:
        raise TrecFormatError(f"{path}: no judgments (empty file)")
    return qrels


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------
def _atomic_write(path: Path, lines: Iterable[str]) -> None:
    """Write lines to a temporary file next to ``path`` and move it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            for line in lines:
                handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; a run file is meant to be shared
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _check_token(value: str, what: str, qid: str | None = None) -> str:
    value = str(value)
    where = f" (query {qid!r})" if qid is not None and what != "query id" else ""
    if not value or _has_space(value):
        raise EvaluationError(f"{what} {value!r}{where} is empty or contains whitespace: it cannot go in a TREC file")
    return value


def write_run(
    path: str | os.PathLike[str], run: Mapping[str, Sequence[Entry]], tag: str = "radsift"
) -> None:
    """Write a TREC run file: ``qid Q0 docid rank score tag``.

    Queries are written in the mapping's order; within a query documents are ranked by score
    (ties as trec_eval breaks them), ranks start at 1 and scores are written with full
    precision so that reading the file back gives the same ranking and metrics.

    Args:
        path: The output file; its folder is created if needed. Replaced atomically.
        run: Query id to ``(docid, score)`` pairs in any order. A query with no pairs writes no
            line (TREC runs cannot hold empty queries).
        tag: The run name written in the last column.

    Raises:
        EvaluationError: An id or the tag is empty or holds whitespace, a score is NaN, or a
            document appears twice for a query. The target file is left untouched.
    """
    tag = _check_token(tag, "run tag")

    def lines() -> Iterator[str]:
        for qid, entries in run.items():
            qid = _check_token(qid, "query id")
            ranked = rank_entries(entries, qid)
            docids = [d for d, _ in ranked]
            if "" in docids or _has_space("".join(docids)):  # one regex pass per query
                for docid in docids:
                    _check_token(docid, "document id", qid)
            yield "".join(
                f"{qid} Q0 {docid} {rank} {score!r} {tag}\n" for rank, (docid, score) in enumerate(ranked, 1)
            )

    with gc_paused():
        _atomic_write(Path(path), lines())


def write_qrels(path: str | os.PathLike[str], qrels: Mapping[str, Mapping[str, int]]) -> None:
    """Write TREC qrels: ``qid 0 docid relevance``, queries and documents in mapping order.

    Args:
        path: The output file; its folder is created if needed. Replaced atomically.
        qrels: Query id to ``{docid: integer relevance}``.

    Raises:
        EvaluationError: An id is empty or holds whitespace, or a relevance is not an integer.
    """

    def lines() -> Iterator[str]:
        for qid, judgments in qrels.items():
            qid = _check_token(qid, "query id")
            for docid, rel in judgments.items():
                docid = _check_token(docid, "document id", qid)
                try:
                    value = int(rel)
                    exact = value == rel
                except (TypeError, ValueError):
                    exact = False
                if not exact:
                    raise EvaluationError(f"query {qid!r}, document {docid!r}: relevance {rel!r} is not an integer")
                yield f"{qid} 0 {docid} {value}\n"

    _atomic_write(Path(path), lines())
