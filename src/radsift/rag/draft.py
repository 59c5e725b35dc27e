"""Draft an impression from findings: the LLM with the impressions of the most similar prior
reports, and the retrieval-only baseline (the nearest report's impression, unchanged)."""

from __future__ import annotations

from dataclasses import dataclass

from radsift.errors import ConfigError
from radsift.rag.answer import Answer, answer_from_reports, check_question
from radsift.rag.llm.base import DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT, LLM
from radsift.rag.llm.factory import llm_or_default
from radsift.rag.retrieve import open_index, retrieve

IMPRESSION = "impression"


@dataclass
class Draft:
    """A drafted impression and the retrieval-only baseline.

    Attributes:
        findings: The findings as given.
        draft: The LLM's impression (an :class:`~radsift.rag.answer.Answer`, task ``draft``).
        baseline: ``{"report_id", "impression", "score"}`` of the nearest report, or None when none
            was retrieved.
    """

    findings: str
    draft: Answer
    baseline: dict | None

    def to_dict(self) -> dict:
        return {"findings": self.findings, "draft": self.draft.to_dict(), "baseline": self.baseline}


def draft_impression(index, findings: str, *, llm: LLM | None = None, k: int = 3, retrieval: bool = True,
                     mode: str = "hybrid", where=None, max_tokens: int = DEFAULT_MAX_TOKENS,
                     timeout: float = DEFAULT_TIMEOUT, max_prompt_tokens: int | None = None) -> Draft:
    """An impression for ``findings`` from the impressions of the ``k`` most similar reports.

    Retrieval matches the findings against the index's impressions (findings-to-impression).

    Raises:
        ConfigError: Empty findings, or an index without an ``impression`` section.
        LLMError: The back-end could not answer.
    """
    findings = check_question(findings, "findings")
    idx = open_index(index)
    if IMPRESSION not in idx.manifest.sections:
        raise ConfigError(f"draft-impression needs an index with an {IMPRESSION!r} section; {idx.path} has: "
                          f"{', '.join(idx.manifest.sections) or 'none'}")
    reports, how = [], {"used": False}
    if retrieval:
        reports, how = retrieve(idx, findings, k=k, target=IMPRESSION, mode=mode, where=where)
        reports = [(rid, secs, score) for rid, secs, score in reports if secs.get(IMPRESSION, "").strip()]
    baseline = None
    if reports:
        rid, secs, score = reports[0]
        baseline = {"report_id": rid, "impression": secs[IMPRESSION].strip(), "score": score}
    answer = answer_from_reports(findings, reports, llm_or_default(llm), task="draft", max_tokens=max_tokens, timeout=timeout,
                                 max_prompt_tokens=max_prompt_tokens, sections=(IMPRESSION,), retrieval=how)
    return Draft(findings, answer, baseline)
