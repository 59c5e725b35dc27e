"""Retrieval for answering: the ``k`` most similar reports of an index, through :meth:`radsift.Index.search`.

A findings description is matched against the impressions (the findings-to-impression direction
RadSearch trains and evaluates: the diagnoses radiologists gave for findings like these); a question
against whole reports. The index must have the section asked for.
"""

from __future__ import annotations

from typing import Sequence

from radsift.errors import ConfigError
from radsift.rag.prompts import looks_like_findings
from radsift.search import Index
from radsift.search.query import MAX_QUERY_CHARS

#: ``target`` values: ``auto`` picks impressions for findings, whole reports for a question.
AUTO = "auto"


def open_index(index) -> Index:
    """``index`` when it is an opened :class:`radsift.Index`, else the index at that folder, opened."""
    return index if isinstance(index, Index) else Index.open(index)


def pick_target(index, question: str, target: str | None) -> tuple[str | None, str]:
    """The section to search and the direction's name.

    Raises:
        ConfigError: The index has no such section.
    """
    sections = list(index.manifest.sections)
    if target in (None, "", AUTO):
        if looks_like_findings(question) and "impression" in sections:
            return "impression", "findings->impression"
        return None, "question->report"
    if target == "report":
        return None, "question->report"
    if target not in sections:
        raise ConfigError(f"--target {target}: the index {index.path} has no {target!r} section "
                          f"(it has: {', '.join(sections) or 'none'})")
    return target, f"query->{target}"


def retrieval_query(text: str) -> tuple[str, bool]:
    """The search query of a long input: its first :data:`MAX_QUERY_CHARS` characters, cut at a word."""
    if len(text) <= MAX_QUERY_CHARS:
        return text, False
    cut = text[:MAX_QUERY_CHARS]
    return (cut[:cut.rfind(" ")] if " " in cut else cut), True


def retrieve(index, question: str, *, k: int = 3, target: str | None = AUTO, mode: str = "hybrid",
             where: Sequence[str] | None = None) -> tuple[list[tuple[str, dict, float]], dict]:
    """The ``k`` best reports for ``question``: ``[(report_id, sections, score)]`` and how they were found."""
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 20:
        raise ConfigError(f"-k must be a whole number from 1 to 20 (reports in the prompt), not {k!r}")
    section, direction = pick_target(index, question, target)
    query, cut = retrieval_query(question)
    hits = index.search(query, k=k, mode=mode, level="report", target=section, where=where, mentions=False)
    reports = [(h.report_id, dict(h.sections), float(h.score)) for h in hits]
    return reports, {"used": True, "k": k, "mode": mode, "target": section or "report", "direction": direction,
                     "query_truncated": cut, "found": len(reports)}
