"""LLM back-ends behind one small interface (:class:`~radsift.rag.llm.base.LLM`).

- :mod:`.openai_compat`: an OpenAI-compatible chat-completions endpoint (llama.cpp's server,
  vLLM, Ollama), loopback only unless allowed;
- :mod:`.local_gguf`: the offline default, SmolLM2-135M-Instruct in process (``radsift[llm]``);
- :mod:`.factory`: :func:`make_llm` picks one from the options; :class:`AuditedLLM` writes every
  call to the audit log.
"""

from radsift.rag.llm.base import DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT, LLM, Generation, LLMError
from radsift.rag.llm.factory import AuditedLLM, make_llm

__all__ = ["AuditedLLM", "DEFAULT_MAX_TOKENS", "DEFAULT_TIMEOUT", "Generation", "LLM", "LLMError", "make_llm"]
