"""The newcomer's check: 100 queries a new user would type, with pooled report-level judgments.

The data (``radsift/evaluation/data/newcomer/``) was written for this project over Open-i
(Indiana University chest X-rays), the collection the README's quick start indexes:

- ``queries.tsv``: ``qid, kind, split, query`` with a header. Five kinds: ``finding`` (a finding's
  name), ``lay`` (a layperson's phrasing: "fluid around the lungs"), ``negated`` (the user asks for
  the absence: "no pneumothorax", "heart size normal"), ``lobe`` ("right lower lobe opacity", "LLL
  atelectasis") and ``device`` ("pacemaker", "sternotomy wires"). The queries were written before any
  search was run.
- ``judgments.tsv``: ``qid<TAB>report_id<TAB>0|1`` (TREC qrels without the iteration column), no
  header; ``#`` lines are comments. Pooled TREC-style: the union of the top 10 reports of BM25, the
  default hybrid and dense search over an index of Open-i built with the packaged model, each report
  read whole (findings and impression) and judged for the query's meaning. No report text is stored.

The split is a fixed hash of the query (:func:`split_of`): about half the queries are ``test``, never
used to tune anything; the rest are ``dev``. The benchmark is ``benchmarks/bench_newcomer.py``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from radsift.evaluation.errors import TrecFormatError

DATA_DIR = Path(__file__).resolve().parent / "data" / "newcomer"
QUERIES = DATA_DIR / "queries.tsv"
JUDGMENTS = DATA_DIR / "judgments.tsv"
KINDS = ("finding", "lay", "negated", "lobe", "device")
SPLITS = ("dev", "test")
HEADER = ("qid", "kind", "split", "query")


@dataclass(frozen=True)
class NewcomerQuery:
    """One query of the check.

    Attributes:
        qid: Its id (``nc001`` ...).
        kind: One of :data:`KINDS`.
        split: ``dev`` or ``test`` (:func:`split_of` of the query).
        query: What the user types.
    """

    qid: str
    kind: str
    split: str
    query: str


def split_of(query: str) -> str:
    """The split of a query: ``test`` when the first 32 bits of the SHA-256 of its lower-cased,
    whitespace-collapsed text are odd, else ``dev`` (fixed: no seed, no list to keep in step)."""
    digest = hashlib.sha256(" ".join(query.lower().split()).encode("utf-8")).hexdigest()
    return "test" if int(digest[:8], 16) % 2 else "dev"


def _rows(path: Path) -> Iterator[tuple[int, list[str]]]:
    """``(line number, tab-separated cells)`` of the non-blank, non-comment lines of ``path``."""
    if not path.is_file():
        raise TrecFormatError(f"{path}: no such file")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TrecFormatError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.strip() and not line.startswith("#"):
            yield lineno, line.split("\t")


def read_queries(path: str | Path = QUERIES) -> list[NewcomerQuery]:
    """Read ``queries.tsv``.

    Raises:
        TrecFormatError: Naming the file and line: a missing or wrong header, a row without four
            cells, an empty cell, an unknown kind, a split that is not :func:`split_of` of the
            query, or a query id seen before.
    """
    path = Path(path)
    rows = _rows(path)
    first = next(rows, None)
    if first is None or tuple(first[1]) != HEADER:
        raise TrecFormatError(f"{path}:{first[0] if first else 1}: the header must be {' / '.join(HEADER)}")
    out: list[NewcomerQuery] = []
    seen: dict[str, int] = {}
    for lineno, cells in rows:
        where = f"{path}:{lineno}"
        if len(cells) != 4 or not all(c.strip() for c in cells):
            raise TrecFormatError(f"{where}: expected 4 non-empty tab-separated cells (qid, kind, split, query)")
        qid, kind, split, query = (c.strip() for c in cells)
        if kind not in KINDS:
            raise TrecFormatError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
        if split != split_of(query):
            raise TrecFormatError(f"{where}: split {split!r} is not the query's hash split {split_of(query)!r}")
        if qid in seen:
            raise TrecFormatError(f"{where}: query id {qid!r} already on line {seen[qid]}")
        seen[qid] = lineno
        out.append(NewcomerQuery(qid, kind, split, query))
    if not out:
        raise TrecFormatError(f"{path}: no queries")
    return out


def parse_judgment(path: Path, lineno: int, cells: Sequence[str]) -> tuple[str, str, int]:
    """One ``qid, report_id, 0|1`` row; TrecFormatError naming the file and line otherwise."""
    if len(cells) != 3 or not all(c.strip() for c in cells):
        raise TrecFormatError(f"{path}:{lineno}: expected 3 tab-separated cells (qid, report_id, 0|1)")
    qid, report_id, value = (c.strip() for c in cells)
    if value not in ("0", "1"):
        raise TrecFormatError(f"{path}:{lineno}: relevance {value!r} must be 0 or 1")
    return qid, report_id, int(value)


def read_judgments(path: str | Path = JUDGMENTS,
                   queries: Iterable[NewcomerQuery] | None = None) -> dict[str, dict[str, int]]:
    """Read ``judgments.tsv`` into ``{qid: {report_id: 0|1}}``.

    Args:
        path: The file.
        queries: When given, every judged query id must be one of theirs.

    Raises:
        TrecFormatError: Naming the file and line: a malformed row, a pair judged twice, or a query
            id that is not in ``queries``.
    """
    path = Path(path)
    known = None if queries is None else {q.qid for q in queries}
    out: dict[str, dict[str, int]] = {}
    for lineno, cells in _rows(path):
        qid, report_id, value = parse_judgment(path, lineno, cells)
        if known is not None and qid not in known:
            raise TrecFormatError(f"{path}:{lineno}: query id {qid!r} is not in the queries")
        if report_id in out.setdefault(qid, {}):
            raise TrecFormatError(f"{path}:{lineno}: {qid} {report_id} is judged twice")
        out[qid][report_id] = value
    return out


def read_new_judgments(path: str | Path) -> tuple[list[tuple[str, str, int]], int]:
    """The judged rows of a file printed by the benchmark's ``--unjudged`` and edited by a judge:
    rows whose third cell is still ``?`` are left for later (counted, not returned)."""
    path = Path(path)
    rows, pending = [], 0
    for lineno, cells in _rows(path):
        if len(cells) == 3 and cells[2].strip() == "?":
            pending += 1
            continue
        rows.append(parse_judgment(path, lineno, cells))
    return rows, pending


def merge_judgments(path: str | Path, new: Iterable[tuple[str, str, int]]) -> int:
    """Append new judgments to ``path``; returns how many were added (a pair judged the same way
    again is skipped).

    Raises:
        TrecFormatError: A pair already judged the other way (naming it: change the file by hand).
    """
    path = Path(path)
    have = read_judgments(path)
    added: list[str] = []
    for qid, report_id, value in new:
        old = have.setdefault(qid, {}).get(report_id)
        if old is None:
            have[qid][report_id] = value
            added.append(f"{qid}\t{report_id}\t{value}\n")
        elif old != value:
            raise TrecFormatError(f"{path}: {qid} {report_id} is judged {old} there and {value} in the new file")
    if added:
        with path.open("a", encoding="utf-8", newline="\n") as handle:
            handle.writelines(added)
    return len(added)


@dataclass(frozen=True)
class QueryScore:
    """Top-k precision of one query for one system.

    Attributes:
        query: The query.
        hits: The report ids of the top k, best first.
        relevant: Hits judged relevant.
        judged: Hits judged at all.
        unjudged: Hits not judged, in rank order.
        known: Reports judged relevant for the query in all (any system's, any round's): ``min(k, known)`` is
            the most relevant hits any top k could hold, as far as the judgments know (a lower bound of the
            true ceiling: a report nobody judged may be relevant).
    """

    query: NewcomerQuery
    hits: tuple[str, ...]
    relevant: int
    judged: int
    unjudged: tuple[str, ...]
    known: int = 0


def score_query(query: NewcomerQuery, hits: Sequence[str], judgments: Mapping[str, Mapping[str, int]],
                k: int = 5) -> QueryScore:
    """Score the top ``k`` of ``hits`` against the query's judgments."""
    top = tuple(hits[:k])
    judged = judgments.get(query.qid, {})
    relevant = sum(judged.get(r, 0) for r in top)
    return QueryScore(query, top, relevant, sum(r in judged for r in top), tuple(r for r in top if r not in judged),
                      sum(1 for v in judged.values() if v))


def summarize(scores: Iterable[QueryScore], k: int = 5) -> dict[str, dict[str, dict[str, float | int | None]]]:
    """Precision per split and kind (and ``all``): ``{split: {kind: figures}}``.

    Figures: ``queries``, ``hits`` (k per query), ``relevant``, ``unjudged``, ``precision``
    (relevant / hits: an unjudged hit counts as not relevant) and ``precision_judged`` (relevant /
    judged hits; None when no hit was judged), ``ceiling`` (the mean of ``min(k, known) / k``: the best top-k
    precision the judged relevant reports allow, a lower bound of the true one) and ``of_ceiling`` (relevant /
    those attainable hits: how much of what the collection is known to hold the top k found).
    """
    cells: dict[str, dict[str, list[QueryScore]]] = {}
    for s in scores:
        for kind in (s.query.kind, "all"):
            cells.setdefault(s.query.split, {}).setdefault(kind, []).append(s)
    out: dict[str, dict[str, dict[str, float | int | None]]] = {}
    for split, kinds in cells.items():
        for kind, group in kinds.items():
            hits = k * len(group)
            relevant = sum(s.relevant for s in group)
            judged = sum(s.judged for s in group)
            attainable = sum(min(k, s.known) for s in group)
            out.setdefault(split, {})[kind] = {
                "queries": len(group), "hits": hits, "relevant": relevant,
                "unjudged": sum(len(s.unjudged) for s in group),
                "precision": relevant / hits if hits else None,
                "precision_judged": relevant / judged if judged else None,
                "ceiling": attainable / hits if hits else None,
                "of_ceiling": relevant / attainable if attainable else None}
    return out
