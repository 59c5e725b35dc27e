"""Turning a query's scored results into a ranking, the same way everywhere.

The TREC writer, the TREC reader and the metrics all rank with :func:`rank_entries`, so a run
scored in memory, written to disk and read back gets exactly the same numbers.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from radsift.evaluation.errors import EvaluationError

Entry = tuple[str, float]


def _ordered(entries: Sequence[Entry], qid: str) -> tuple[list[str], np.ndarray]:
    """Docids and float64 scores of the pairs, in rank order (validated)."""
    try:
        docids, raw_scores = zip(*entries)
    except (TypeError, ValueError):
        raise EvaluationError(f"query {qid!r}: each run entry must be a (docid, score) pair") from None
    docids = list(docids)
    if type(docids[0]) is not str:  # ids given as ints or numpy strings: compare as str
        docids = [str(d) for d in docids]
    try:
        scores = np.asarray(raw_scores, dtype=np.float64)
    except (TypeError, ValueError):
        raise EvaluationError(f"query {qid!r}: scores must be numbers") from None
    if scores.ndim != 1:
        raise EvaluationError(f"query {qid!r}: each run entry must be a (docid, score) pair")
    nan = np.isnan(scores)
    if nan.any():
        raise EvaluationError(f"query {qid!r}: document {docids[int(np.argmax(nan))]!r} has a NaN score")
    check_unique(docids, qid)
    # Runs from search come sorted without ties: skip the sort then.
    if len(docids) > 1 and not bool(np.all(scores[:-1] > scores[1:])):
        # Score descending, ties by docid descending (trec_eval's order): one reversed tuple sort.
        values = scores.tolist()
        order = sorted(range(len(docids)), key=lambda i: (values[i], docids[i]), reverse=True)
        docids = [docids[i] for i in order]
        scores = scores[order]
    return docids, scores


def rank_entries(entries: Sequence[Entry], qid: str = "?") -> list[Entry]:
    """Order one query's ``(docid, score)`` pairs by score, highest first.

    Ties are broken the way trec_eval breaks them (docid in *reverse* lexicographic order), so
    that trec_eval, ``radsift eval`` and the rank column written by
    :func:`radsift.evaluation.trec.write_run` all agree on tied runs.

    Args:
        entries: The query's results, in any order.
        qid: The query id, used in error messages only.

    Returns:
        The pairs in rank order, docids as ``str`` and scores as Python floats.

    Raises:
        EvaluationError: A docid appears twice, a score is NaN or not a number.
    """
    if len(entries) == 0:  # works for numpy arrays too
        return []
    docids, scores = _ordered(entries, qid)
    return list(zip(docids, scores.tolist()))


def check_unique(docids: Sequence[str], qid: str) -> None:
    """Raise :class:`EvaluationError` naming the first docid that occurs twice."""
    if len(set(docids)) == len(docids):
        return
    seen: set[str] = set()
    for docid in docids:
        if docid in seen:
            raise EvaluationError(f"query {qid!r}: document {docid!r} is ranked twice")
        seen.add(docid)


def ranked_docids(
    entries: Sequence[Entry] | Sequence[str] | Mapping[str, float], qid: str = "?"
) -> list[str]:
    """The docids of one query in rank order.

    Args:
        entries: ``(docid, score)`` pairs or a ``{docid: score}`` mapping (both ranked as
            :func:`rank_entries` ranks), or docids already in rank order (kept as given).
        qid: The query id, used in error messages only.

    Raises:
        EvaluationError: A docid appears twice, a score is NaN or not a number.
    """
    if len(entries) == 0:  # works for numpy arrays too
        return []
    if isinstance(entries, Mapping):
        entries = list(entries.items())
    if isinstance(entries[0], str):
        docids = list(entries)
        check_unique(docids, qid)
        return docids
    return _ordered(entries, qid)[0]  # type: ignore[arg-type]
