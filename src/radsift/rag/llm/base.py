"""The one small interface every LLM back-end implements, and what a call returns.

A back-end turns chat messages (``[{"role": "system"|"user"|"assistant", "content": str}]``) into
one :class:`Generation`, with a token limit and a timeout. Two ship with radsift
(:mod:`.openai_compat`, an OpenAI-compatible chat-completions endpoint such as llama.cpp's
server, vLLM or Ollama; :mod:`.local_gguf`, SmolLM2-135M-Instruct run in process); a site plugs in
its own model through the endpoint, or by writing a class with these three members.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol, Sequence, runtime_checkable

from radsift.errors import ConfigError, RadsiftError

#: Most new tokens one answer may generate unless asked otherwise.
DEFAULT_MAX_TOKENS = 256
#: Seconds one generation may take unless asked otherwise (the whole call: connect, prompt, answer).
DEFAULT_TIMEOUT = 120.0
#: Finish reasons a :class:`Generation` can carry: the model stopped by itself; it hit the token
#: limit; the timeout cut it short (the text so far is kept); or it returned no text at all.
FINISH_REASONS = ("stop", "length", "timeout", "empty")

Messages = Sequence[dict]


class LLMError(RadsiftError):
    """A back-end could not answer: unreachable, refused, timed out before any text, or returned
    something that is not an answer. The message names the back-end and what to check."""


@dataclass(frozen=True)
class Generation:
    """One answer of a back-end.

    Attributes:
        text: The generated text (possibly partial: see ``finish_reason``).
        finish_reason: One of :data:`FINISH_REASONS`.
        backend: The back-end's kind (``local-gguf``, ``openai-compatible``).
        model: The model that answered.
        prompt_tokens: Tokens of the prompt, when the back-end says.
        completion_tokens: Tokens generated, when the back-end says.
        seconds: Wall time of the call.
    """

    text: str
    finish_reason: str
    backend: str
    model: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    @property
    def partial(self) -> bool:
        """True when the answer was cut short (token limit or timeout) or is empty."""
        return self.finish_reason != "stop"


@runtime_checkable
class LLM(Protocol):
    """What radsift needs of a language model.

    Attributes:
        backend: The back-end's kind, for the answer's metadata and the audit log.
        model: The model's name.
        context_tokens: Tokens the model reads at most (prompt and answer together).
    """

    backend: str
    model: str
    context_tokens: int

    def generate(self, messages: Messages, *, max_tokens: int = DEFAULT_MAX_TOKENS,
                 timeout: float = DEFAULT_TIMEOUT) -> Generation:
        """Answer the chat ``messages``.

        Raises:
            LLMError: The back-end could not answer (see the class).
        """
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` for this model (an estimate is fine: prompts keep a margin)."""
        ...


def estimate_tokens(text: str) -> int:
    """A cautious token estimate for a model whose tokenizer is not at hand: about 3 characters a
    token (English subword tokenizers average near 4; radiology words are long and rare, so fewer)."""
    return max(0, math.ceil(len(text) / 3))


def check_limits(max_tokens: int, timeout: float) -> None:
    """Refuse a token limit below 1 or a timeout that is not a positive number of seconds.

    Raises:
        ConfigError: Naming the option.
    """
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ConfigError(f"--max-tokens must be a whole number of at least 1, not {max_tokens!r}")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or timeout <= 0:
        raise ConfigError(f"--llm-timeout must be a positive number of seconds, not {timeout!r}")
