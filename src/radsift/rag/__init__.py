"""Ask the reports: retrieval-augmented answers and impression drafts, with citations, offline by default.

RadSearch (Radiology 2025, "RadSearch, a Semantic Search Model for Accurate Radiology Report
Retrieval with Large Language Model Integration"): given a finding description, Llama 3.1 8B
named the right diagnosis in 30 of 100 cases alone and in 61 of 100 with the most similar full
report (retrieved by the findings-to-impression model) in its prompt. radsift does the same with
any back-end behind :class:`~radsift.rag.llm.LLM`:

- :func:`ask`: the ``k`` most similar reports of an index, numbered in a prompt; the answer cites
  them (``[1]``), citations to no shown report are removed and counted; ``retrieval=False`` asks
  the model alone (the paper's baseline);
- :func:`draft_impression`: an impression drafted from findings and the impressions of the most
  similar prior reports, beside the retrieval-only baseline (the nearest report's impression).

Nothing leaves the machine unless told: the default back-end is SmolLM2-135M-Instruct in process
(:mod:`radsift.rag.llm.local_gguf`), and an endpoint must be on this machine unless
``allow_remote`` is given.
"""

from __future__ import annotations

from typing import Sequence

from radsift.rag.answer import Answer, answer_from_reports, check_question
from radsift.rag.draft import Draft, draft_impression
from radsift.rag.llm.base import DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT, LLM, LLMError
from radsift.rag.llm.factory import llm_or_default
from radsift.rag.retrieve import open_index, retrieve

__all__ = ["Answer", "Draft", "LLM", "LLMError", "answer_from_reports", "ask", "draft_impression"]


def ask(index, question: str, *, llm: LLM | None = None, k: int = 3, retrieval: bool = True, target: str | None = "auto",
        mode: str = "hybrid", where: Sequence[str] | None = None, max_tokens: int = DEFAULT_MAX_TOKENS,
        timeout: float = DEFAULT_TIMEOUT, max_prompt_tokens: int | None = None) -> Answer:
    """Answer a finding description or question from the ``k`` most similar reports of ``index``.

    Example:
        >>> import radsift                                                   # doctest: +SKIP
        >>> a = radsift.ask("my-index", "enlarged cardiac silhouette with vascular congestion")
        >>> print(a.text, a.cited_ids, a.truncated)                         # doctest: +SKIP

    Args:
        index: An opened :class:`radsift.Index` or an index folder.
        question: A findings description or a question.
        llm: The back-end (default: the offline SmolLM2 model, loaded once per process).
        k: Reports in the prompt (1 to 20).
        retrieval: False = the model alone (no reports, nothing to cite).
        target: ``auto`` (impressions for a findings description, whole reports for a question),
            ``report`` or a section of the index.
        mode: The search mode (``hybrid``, ``dense``, ``bm25``).
        where: Metadata filters (as :meth:`radsift.Index.search`).
        max_tokens: New tokens at most.
        timeout: Seconds the generation may take (then a partial answer, or an error if nothing came).
        max_prompt_tokens: A cap on the prompt below the model's context.

    Raises:
        ConfigError: Empty input, a bad option, a section the index does not have.
        LLMError: The back-end could not answer.
    """
    question = check_question(question)
    idx = open_index(index)
    reports, how = ([], {"used": False})
    if retrieval:
        reports, how = retrieve(idx, question, k=k, target=target, mode=mode, where=where)
    answer = answer_from_reports(question, reports, llm_or_default(llm), task="ask", max_tokens=max_tokens, timeout=timeout,
                                 max_prompt_tokens=max_prompt_tokens, retrieval=how)
    if retrieval and not reports:
        answer.notes.append("no report matched: the model answered alone")
    return answer

