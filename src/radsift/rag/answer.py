"""Answer a question from numbered reports (or from the model alone), with checked citations.

:func:`answer_from_reports` is the one place a prompt is built, sent and its answer checked; the
index-backed :func:`radsift.rag.ask` and :func:`radsift.rag.draft_impression` and the ``rag``
benchmark (which retrieves with its own systems) all call it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from radsift.errors import ConfigError
from radsift.rag.citations import check_citations
from radsift.rag.llm.base import DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT, LLM, check_limits
from radsift.rag.prompts import Prompt, build_prompt

#: Longest question or findings text accepted (longer is refused; what does not fit the model's
#: context is cut and said so).
MAX_INPUT_CHARS = 20000


@dataclass
class Answer:
    """A generated answer with its sources and the exact prompt.

    Attributes:
        question: The input as given (whitespace collapsed).
        task: ``ask`` or ``draft``.
        text: The answer, its invalid citations removed.
        status: ``complete``; ``partial`` (cut by the token limit or the timeout: the text so far);
            or ``empty`` (the back-end returned no text).
        finish_reason: The back-end's: ``stop``, ``length``, ``timeout`` or ``empty``.
        citations: ``[{"n", "report_id"}]`` the answer cites, in order.
        invalid_citations: Numbers removed because they pointed at no report the prompt showed.
        sources: The numbered reports (see :class:`~radsift.rag.prompts.Source`).
        prompt: The exact prompt (``Prompt.text``) and ``messages``, the messages as sent.
        truncated: What was cut to fit the context: report ids, the question, the retrieval query.
        retrieval: How the reports were found (``used``, ``k``, ``mode``, ``target``, ``direction``).
        backend, model: Who answered.
        prompt_tokens, completion_tokens, seconds: Sizes and wall time of the generation.
        notes: Plain sentences about anything cut, removed or missing.
    """

    question: str
    task: str
    text: str
    status: str
    finish_reason: str
    citations: list[dict]
    invalid_citations: list[int]
    sources: list[dict]
    prompt: str
    messages: list[dict]
    truncated: dict
    retrieval: dict
    backend: str
    model: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def cited_ids(self) -> list[str]:
        return [c["report_id"] for c in self.citations]

    def to_dict(self) -> dict:
        return {"question": self.question, "task": self.task, "answer": self.text, "status": self.status,
                "finish_reason": self.finish_reason, "citations": list(self.citations),
                "invalid_citations": len(self.invalid_citations), "invalid_citation_numbers": list(self.invalid_citations),
                "sources": list(self.sources), "prompt": self.prompt, "messages": list(self.messages),
                "truncated": dict(self.truncated), "retrieval": dict(self.retrieval), "backend": self.backend,
                "model": self.model, "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "seconds": round(self.seconds, 3), "notes": list(self.notes)}


def check_question(text: str, what: str = "question") -> str:
    """The input with whitespace collapsed.

    Raises:
        ConfigError: Not text, empty, or longer than :data:`MAX_INPUT_CHARS`.
    """
    if not isinstance(text, str):
        raise ConfigError(f"the {what} must be text, not {type(text).__name__}")
    text = " ".join(text.replace("\x00", " ").split())
    if not text:
        raise ConfigError(f"the {what} is empty: describe the findings or ask a question")
    if len(text) > MAX_INPUT_CHARS:
        raise ConfigError(f"the {what} is {len(text)} characters long; the limit is {MAX_INPUT_CHARS}")
    return text


def answer_from_reports(question: str, reports: Sequence[tuple[str, Mapping[str, str], float | None]], llm: LLM, *,
                        task: str = "ask", max_tokens: int = DEFAULT_MAX_TOKENS, timeout: float = DEFAULT_TIMEOUT,
                        max_prompt_tokens: int | None = None, sections: Sequence[str] | None = None,
                        retrieval: dict | None = None) -> Answer:
    """Build the prompt numbering ``reports``, generate, and check the answer's citations.

    Args:
        question: The findings description or question (already checked, see :func:`check_question`).
        reports: ``(report_id, sections, score)``, best first; empty = the model alone.
        llm: The back-end.
        task: ``ask`` (a diagnosis or an answer) or ``draft`` (an impression).
        max_tokens: New tokens at most.
        timeout: Seconds the generation may take.
        max_prompt_tokens: A cap on the prompt below the model's context.
        sections: Sections of each report the prompt shows (None = all).
        retrieval: How the reports were found (copied into the answer).

    Raises:
        LLMError: The back-end could not answer.
        ConfigError: A bad limit, or a context too small.
    """
    check_limits(max_tokens, timeout)
    prompt: Prompt = build_prompt(question, reports, task=task, count_tokens=llm.count_tokens,
                                  context_tokens=llm.context_tokens, max_tokens=max_tokens,
                                  max_prompt_tokens=max_prompt_tokens, sections=sections)
    start = time.monotonic()
    gen = llm.generate(list(prompt.messages), max_tokens=max_tokens, timeout=timeout)
    seconds = time.monotonic() - start
    shown = {s.n: s for s in prompt.shown()}
    check = check_citations(gen.text, set(shown))
    notes = []
    for s in prompt.sources:
        if s.dropped:
            notes.append(f"report {s.report_id} [{s.n}] was left out of the prompt: no room in the model's context")
        elif s.truncated:
            notes.append(f"report {s.report_id} [{s.n}] was cut to fit the model's context")
    if prompt.question_truncated:
        notes.append("the question was cut to fit the model's context")
    if check.invalid:
        notes.append(f"{check.removed} citation(s) pointing at no report in the prompt were removed: "
                     + ", ".join(f"[{n}]" for n in check.invalid))
    status = {"stop": "complete", "empty": "empty"}.get(gen.finish_reason, "partial")
    if status == "empty":
        notes.append(f"the back-end ({gen.backend}, {gen.model}) returned no text")
    elif status == "partial":
        notes.append("the answer was cut short by the token limit" if gen.finish_reason == "length"
                     else "the answer was cut short by the timeout")
    retrieval = dict(retrieval or {"used": bool(reports)})
    return Answer(
        question=question, task=task, text=check.text, status=status, finish_reason=gen.finish_reason,
        citations=[{"n": n, "report_id": shown[n].report_id} for n in check.cited],
        invalid_citations=list(check.invalid), sources=[s.to_dict() for s in prompt.sources], prompt=prompt.text,
        messages=[dict(m) for m in prompt.messages],
        truncated={"reports": prompt.truncated, "question": prompt.question_truncated,
                   "retrieval_query": bool(retrieval.get("query_truncated", False))},
        retrieval=retrieval, backend=gen.backend, model=gen.model,
        prompt_tokens=gen.prompt_tokens if gen.prompt_tokens is not None else prompt.prompt_tokens,
        completion_tokens=gen.completion_tokens, seconds=seconds, notes=notes)
