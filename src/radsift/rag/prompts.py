"""Prompts that number the retrieved reports, cut to fit the model's context.

RadSearch (Radiology 2025) put the single most similar full report, retrieved by its
findings-to-impression model, into Llama 3.1 8B's prompt beside a finding description: the right
diagnosis went from 30 to 61 of 100. Here the ``k`` retrieved reports are numbered ``[1]`` ...
``[k]`` in rank order, each headed by its report id, and the model is asked to cite the ones it
uses by number (:mod:`radsift.rag.citations` checks the citations).

What does not fit the context is cut, never silently: each report gets a fair share of the tokens
left after the instructions and the question (short reports give what they do not need to the
longer ones), a cut report ends with ``[...]`` and is listed in :attr:`Prompt.truncated`, and a
question too long even for that is cut too (:attr:`Prompt.question_truncated`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from radsift.errors import ConfigError

#: Tasks a prompt is built for.
TASKS = ("ask", "draft")
#: Fewest tokens a retrieved report is shown with; with less room it is left out (and listed).
MIN_SOURCE_TOKENS = 24
#: Tokens kept free beside the prompt and the answer (chat-template tokens, estimate error).
MARGIN_TOKENS = 64
ELLIPSIS = " [...]"

SYSTEM_ASK = ("You are a radiology assistant. Name the most likely diagnosis first, in a few words, then explain "
              "briefly. The numbered reports are prior reports similar to the case: use them when they help and "
              "cite the ones you use by their number in square brackets, like [1].")
SYSTEM_ASK_ALONE = ("You are a radiology assistant. Name the most likely diagnosis first, in a few words, then "
                    "explain briefly.")
SYSTEM_DRAFT = ("You are a radiologist writing the impression of a chest radiograph report: one to three short "
                "sentences that state the diagnoses, not a repeat of the findings. The numbered impressions come "
                "from prior reports with similar findings: follow them where they fit and cite the ones you follow "
                "by their number in square brackets, like [1]. Do not add findings that are not described.")
SYSTEM_DRAFT_ALONE = ("You are a radiologist writing the impression of a chest radiograph report: one to three short "
                      "sentences that state the diagnoses, not a repeat of the findings. Do not add findings that are "
                      "not described.")

_QUESTION_START = re.compile(r"^\s*(what|which|why|how|is|are|does|do|can|could|should|when|where|who|list|explain|"
                             r"name|give|tell)\b", re.IGNORECASE)


def looks_like_findings(text: str) -> bool:
    """True when ``text`` reads like a findings description (retrieve by findings-to-impression)
    rather than a question: no question mark and no question word first."""
    text = text.strip()
    return bool(text) and "?" not in text and not _QUESTION_START.match(text)


@dataclass(frozen=True)
class Source:
    """A retrieved report as numbered in the prompt.

    Attributes:
        n: Its number in the prompt (``[n]``), 1 = the best hit.
        report_id: The report's id.
        text: What the prompt shows of it (cut when ``truncated``; empty when ``dropped``).
        sections: The report's sections, whole (for display).
        score: Its retrieval score.
        truncated: The prompt shows only the start of it.
        dropped: No room was left for it: the prompt does not show it (it cannot be cited).
    """

    n: int
    report_id: str
    text: str
    sections: Mapping[str, str] = field(default_factory=dict)
    score: float | None = None
    truncated: bool = False
    dropped: bool = False

    def to_dict(self) -> dict:
        return {"n": self.n, "report_id": self.report_id, "text": self.text, "sections": dict(self.sections),
                "score": self.score, "truncated": self.truncated, "dropped": self.dropped}


@dataclass(frozen=True)
class Prompt:
    """The exact messages sent to the model, and what was cut to fit.

    Attributes:
        messages: The chat messages, as sent.
        sources: The numbered reports (those left out included, marked ``dropped``).
        question: The question or findings as the prompt shows them.
        question_truncated: The question itself was cut to fit.
        budget_tokens: Tokens the prompt was allowed.
        prompt_tokens: Tokens of the messages' text (the model's own count when it has a tokenizer).
    """

    messages: tuple[dict, ...]
    sources: tuple[Source, ...]
    question: str
    question_truncated: bool
    budget_tokens: int
    prompt_tokens: int

    @property
    def truncated(self) -> list[str]:
        """Ids of the reports cut or left out to fit the context."""
        return [s.report_id for s in self.sources if s.truncated or s.dropped]

    @property
    def text(self) -> str:
        """The messages as one text (``system:``/``user:`` blocks): what the model was sent."""
        return "\n\n".join(f"{m['role']}:\n{m['content']}" for m in self.messages)

    def shown(self) -> list[Source]:
        """The sources the prompt shows (may be cited)."""
        return [s for s in self.sources if not s.dropped]


def report_text(sections: Mapping[str, str], only: Sequence[str] | None = None) -> str:
    """A report's sections as ``Findings: ...`` lines (``only``: just those sections)."""
    names = [n for n in sections if only is None or n in only]
    return "\n".join(f"{n.replace('_', ' ').capitalize()}: {' '.join(str(sections[n]).split())}"
                     for n in names if str(sections[n]).strip())


def fit_text(text: str, tokens: int, count: Callable[[str], int]) -> tuple[str, bool]:
    """``text`` cut at a word boundary so that it (with ``[...]``) takes at most ``tokens``; (text, cut?)."""
    if count(text) <= tokens:
        return text, False
    lo, hi = 0, len(text)
    while lo < hi:  # the longest prefix that fits: a binary search on characters
        mid = (lo + hi + 1) // 2
        if count(text[:mid] + ELLIPSIS) <= tokens:
            lo = mid
        else:
            hi = mid - 1
    cut = text[:lo]
    if " " in cut.rstrip():
        cut = cut[:cut.rstrip().rfind(" ")]
    return (cut.rstrip() + ELLIPSIS) if cut.strip() else "", True


def build_prompt(question: str, reports: Sequence[tuple[str, Mapping[str, str], float | None]], *, task: str = "ask",
                 count_tokens: Callable[[str], int], context_tokens: int, max_tokens: int,
                 max_prompt_tokens: int | None = None, sections: Sequence[str] | None = None) -> Prompt:
    """The chat messages for ``question`` with ``reports`` numbered in the given (rank) order.

    Args:
        question: A findings description or a question (``task="ask"``), or the findings to write
            an impression for (``task="draft"``).
        reports: ``(report_id, sections, score)`` of the retrieved reports, best first; none = the
            model alone (no numbered reports, no request to cite).
        task: ``ask`` or ``draft``.
        count_tokens: The model's token counter.
        context_tokens: The model's context.
        max_tokens: Tokens kept for the answer.
        max_prompt_tokens: A tighter cap on the prompt (None = what the context leaves).
        sections: Sections of each report to show (None = all; ``draft`` shows the impressions).

    Raises:
        ConfigError: An unknown task, or a context too small for even the instructions.
    """
    if task not in TASKS:
        raise ConfigError(f"task must be one of {', '.join(TASKS)}, not {task!r}")
    budget = context_tokens - max_tokens - MARGIN_TOKENS
    if max_prompt_tokens is not None:
        budget = min(budget, int(max_prompt_tokens))
    findings = task == "draft" or looks_like_findings(question)
    if task == "draft":
        system = SYSTEM_DRAFT if reports else SYSTEM_DRAFT_ALONE
        head = "Impressions of prior reports with similar findings:"
        frame = "Findings: {q}\n\nWrite the impression."
    else:
        system = SYSTEM_ASK if reports else SYSTEM_ASK_ALONE
        head = "Similar prior reports:"
        frame = "Findings: {q}\n\nWhat is the most likely diagnosis?" if findings else "Question: {q}"
    fixed = count_tokens(system) + count_tokens(frame.format(q="")) + (count_tokens(head) if reports else 0)
    room = budget - fixed
    if room < 16:
        raise ConfigError(f"the model's context ({context_tokens} tokens) leaves no room for a prompt with "
                          f"{max_tokens} answer tokens: lower --max-tokens")
    # The question keeps most of the room (it is what is asked); the reports share what is left.
    q_room = room if not reports else max(room - MIN_SOURCE_TOKENS * len(reports), room // 2)
    shown_q, q_cut = fit_text(question, q_room, count_tokens)
    room -= count_tokens(shown_q)
    sources = _fit_sources(reports, room, count_tokens, sections)
    blocks = [f"[{s.n}] Report {s.report_id}\n{s.text}" for s in sources if not s.dropped]
    user = frame.format(q=shown_q)
    if blocks:
        user = head + "\n\n" + "\n\n".join(blocks) + "\n\n" + user
    messages = ({"role": "system", "content": system}, {"role": "user", "content": user})
    used = sum(count_tokens(m["content"]) for m in messages)
    return Prompt(messages=messages, sources=tuple(sources), question=shown_q, question_truncated=q_cut,
                  budget_tokens=budget, prompt_tokens=used)


def _fit_sources(reports, room: int, count: Callable[[str], int], sections) -> list[Source]:
    """Share ``room`` tokens among the reports: the shortest first take what they need, up to an
    even share of what is left; a report with less than :data:`MIN_SOURCE_TOKENS` is left out."""
    texts = [report_text(secs, sections) for _, secs, _ in reports]
    # "[n] Report ID\n" costs tokens too
    need = [count(t) + count(f"[{i + 1}] Report {rid}\n\n") for i, ((rid, _, _), t) in enumerate(zip(reports, texts))]
    share: dict[int, int] = {}
    left, todo = max(room, 0), sorted(range(len(reports)), key=lambda i: need[i])
    for pos, i in enumerate(todo):
        fair = left // (len(todo) - pos)
        share[i] = min(need[i], fair)
        left -= share[i]
    out = []
    for i, (rid, secs, score) in enumerate(reports):
        header = count(f"[{i + 1}] Report {rid}\n\n")
        allowed = share[i] - header
        if allowed < MIN_SOURCE_TOKENS and need[i] - header > allowed:
            out.append(Source(i + 1, str(rid), "", secs, score, truncated=False, dropped=True))
            continue
        text, cut = fit_text(texts[i], allowed, count)
        out.append(Source(i + 1, str(rid), text, secs, score, truncated=cut))
    return out
