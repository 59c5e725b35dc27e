"""Pick the back-end from the options (:func:`make_llm`) and write every call to the audit log
(:class:`AuditedLLM`): which back-end and model, the endpoint and the proxy (if any), the address
the prompt was actually sent to, how big the prompt and the answer were, how the call ended and how
long it took; never the prompt or the answer (they hold report text)."""

from __future__ import annotations

import time
from pathlib import Path

from radsift.errors import ConfigError
from radsift.rag.llm.base import DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT, LLM, Generation, LLMError, Messages
from radsift.rag.llm.local_gguf import LocalGGUF
from radsift.rag.llm.openai_compat import DEFAULT_CONTEXT_TOKENS, OpenAICompatLLM, read_token

#: ``--llm`` names accepted by :func:`make_llm`.
BACKENDS = ("local", "openai")


def make_llm(url: str | None = None, model: str | None = None, *, token_file: str | Path | None = None,
             allow_remote: bool = False, context_tokens: int | None = None, threads: int | None = None,
             proxy: str | None = None) -> LLM:
    """The back-end the options ask for: an OpenAI-compatible endpoint when ``url`` is given, else the
    offline SmolLM2 model run in process.

    Args:
        url: ``--llm-url``: an OpenAI-compatible endpoint (loopback only unless ``allow_remote``).
        model: ``--llm-model``: the endpoint's model name.
        token_file: ``--llm-token-file`` (else ``$RADSIFT_LLM_TOKEN``).
        allow_remote: ``--allow-remote-llm`` (for the endpoint and the proxy alike).
        context_tokens: The endpoint model's context length (default 8,192).
        threads: torch threads of the offline model.
        proxy: ``--llm-proxy``: an ``http://HOST:PORT`` proxy for the endpoint (none otherwise: proxy
            variables such as ``http_proxy`` are ignored).

    Raises:
        ConfigError: A bad or remote URL or proxy, an unreadable token file.
        ImportError: The offline model is asked for but not installed (naming the extra).
    """
    if url:
        return OpenAICompatLLM(url, model or "default", token=read_token(token_file), allow_remote=allow_remote,
                               context_tokens=context_tokens or DEFAULT_CONTEXT_TOKENS, proxy=proxy)
    if model or token_file or proxy:
        raise ConfigError("--llm-model, --llm-token-file and --llm-proxy go with --llm-url (the offline model "
                          "needs none of them)")
    return LocalGGUF(threads=threads) if context_tokens is None else LocalGGUF(threads=threads,
                                                                                context_tokens=context_tokens)


def llm_or_default(llm: LLM | None) -> LLM:
    """``llm``, or the default back-end (the offline model) when it is None."""
    return make_llm() if llm is None else llm


class AuditedLLM:
    """A back-end whose every call is written to an audit log first (no line, no call) and whose
    outcome is written after.

    Args:
        llm: The back-end.
        audit: A :class:`radsift.serve.audit.AuditLog` (or anything with its ``write``).
        client: Who asked (a remote address, ``cli``).
        token_id: The API token's hash prefix, if any.
    """

    def __init__(self, llm: LLM, audit, *, client: str | None = None, token_id: str | None = None,
                 purpose: str = "ask") -> None:
        self.llm = llm
        self.audit = audit
        self.client = client
        self.token_id = token_id
        self.purpose = purpose

    @property
    def backend(self) -> str:
        return self.llm.backend

    @property
    def model(self) -> str:
        return self.llm.model

    @property
    def context_tokens(self) -> int:
        return self.llm.context_tokens

    def count_tokens(self, text: str) -> int:
        return self.llm.count_tokens(text)

    def _where(self) -> dict:
        return {"backend": self.llm.backend, "model": self.llm.model,
                "endpoint": getattr(self.llm, "endpoint", None), "proxy": getattr(self.llm, "proxy", None),
                "purpose": self.purpose}

    def generate(self, messages: Messages, *, max_tokens: int = DEFAULT_MAX_TOKENS,
                 timeout: float = DEFAULT_TIMEOUT) -> Generation:
        chars = sum(len(str(m.get("content", ""))) for m in messages)
        self.audit.write("llm_call", client=self.client, token_id=self.token_id, **self._where(),
                         prompt_chars=chars, max_tokens=max_tokens, timeout_s=timeout)
        start = time.monotonic()
        try:
            out = self.llm.generate(messages, max_tokens=max_tokens, timeout=timeout)
        except LLMError as exc:
            self.audit.write("llm_result", client=self.client, token_id=self.token_id, **self._where(), ok=False,
                             error=type(exc).__name__, contacted=getattr(exc, "contacted", None),
                             seconds=round(time.monotonic() - start, 3))
            raise
        self.audit.write("llm_result", client=self.client, token_id=self.token_id, **self._where(), ok=True,
                         finish_reason=out.finish_reason, answer_chars=len(out.text),
                         prompt_tokens=out.prompt_tokens, completion_tokens=out.completion_tokens,
                         contacted=out.extra.get("contacted"), seconds=round(out.seconds, 3))
        return out
