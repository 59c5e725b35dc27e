"""An OpenAI-compatible chat-completions endpoint: llama.cpp's ``llama-server``, vLLM, Ollama.

Reports are patient data: :func:`check_url` refuses an endpoint whose host does not resolve to this
machine only (every address a loopback one) unless the caller says ``allow_remote`` (the CLI's
``--allow-remote-llm``); proxy variables are ignored, and a proxy is used only when named
(``--llm-proxy``), under the same rule (:mod:`.network`). Only the standard library is used
(``urllib``): one POST to ``/v1/chat/completions``, with a deadline on the whole call (connect, send,
every read) and a cap on the size of the answer read, so a server that trickles bytes or never
answers cannot hang radsift.
"""

from __future__ import annotations

import json
import os
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from radsift.errors import ConfigError
from radsift.rag.llm.base import DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT, Generation, LLMError, Messages, check_limits, estimate_tokens
from radsift.rag.llm.network import RemoteRefused, Route, check_host, proxy_url, without_credentials
from radsift.rag.llm.network import is_loopback  # noqa: F401 - importable from here, as before

#: Environment variable read for the endpoint's API key when no token file is given.
TOKEN_ENV = "RADSIFT_LLM_TOKEN"
#: Most bytes of an answer read (a chat completion is a few kB; anything this big is not one).
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
#: Tokens assumed for a model the endpoint serves unless ``context_tokens`` says otherwise.
DEFAULT_CONTEXT_TOKENS = 8192


def endpoint_url(url: str) -> str:
    """The chat-completions URL of ``url``: a server root (``http://127.0.0.1:8080``), its ``/v1``
    or the full ``.../chat/completions`` are all accepted.

    Raises:
        ConfigError: Not an http(s) URL with a host.
    """
    if not isinstance(url, str) or not url.strip():
        raise ConfigError("--llm-url is empty: give the endpoint, e.g. http://127.0.0.1:8080/v1")
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"--llm-url {url[:200]!r}: not an http(s) URL with a host (e.g. http://127.0.0.1:8080/v1)")
    path = parts.path.rstrip("/")
    if not path.endswith("/chat/completions"):
        path = (path if path.endswith("/v1") else path + "/v1") + "/chat/completions"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def check_url(url: str, allow_remote: bool = False) -> str:
    """The endpoint's chat-completions URL, refused when its host is not this machine without ``allow_remote``
    (the name is resolved and every address it resolves to must be a loopback one).

    Raises:
        ConfigError: A bad URL, or a host that is not (only) this machine without ``allow_remote``.
    """
    full = endpoint_url(url)
    parts = urlsplit(full)
    try:
        port = parts.port
    except ValueError:
        raise ConfigError(f"--llm-url {url[:200]!r}: the port is not a number from 0 to 65535") from None
    check_host(parts.hostname or "", port, allow_remote=allow_remote, option="--llm-url")
    return full


def read_token(token_file: str | Path | None = None, env: str = TOKEN_ENV) -> str | None:
    """The endpoint's API key: the first line of ``token_file``, else ``$RADSIFT_LLM_TOKEN``, else None.

    Raises:
        ConfigError: The file cannot be read or its first line is empty.
    """
    if token_file is not None:
        try:
            lines = Path(token_file).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"--llm-token-file {token_file}: cannot read it ({exc})") from None
        token = lines[0].strip() if lines else ""
        if not token:
            raise ConfigError(f"--llm-token-file {token_file}: the first line is empty")
        return token
    return os.environ.get(env, "").strip() or None


class OpenAICompatLLM:
    """A chat-completions endpoint (OpenAI's wire format), called with ``urllib``.

    Args:
        url: The endpoint (see :func:`endpoint_url`).
        model: The model name the server expects (``--llm-model``; llama.cpp ignores it).
        token: Its API key (sent as ``Authorization: Bearer``), or None.
        allow_remote: Allow an endpoint (and a proxy) that is not this machine.
        context_tokens: The model's context length (prompts are cut to fit it).
        proxy: An ``http://HOST:PORT`` proxy to send the request through (``--llm-proxy``); without it no
            proxy is used, whatever ``http_proxy`` and the like say.
    """

    backend = "openai-compatible"

    def __init__(self, url: str, model: str = "default", *, token: str | None = None, allow_remote: bool = False,
                 context_tokens: int = DEFAULT_CONTEXT_TOKENS, proxy: str | None = None) -> None:
        self.url = check_url(url, allow_remote)
        self.allow_remote = bool(allow_remote)
        self._proxy = proxy_url(proxy, allow_remote=self.allow_remote)
        self.model = model or "default"
        self._token = token
        self.context_tokens = int(context_tokens)

    @property
    def endpoint(self) -> str:
        """The URL without credentials or query (for logs and the audit trail)."""
        p = urlsplit(self.url)
        return without_credentials(urlunsplit((p.scheme, p.netloc, p.path, "", "")))

    @property
    def proxy(self) -> str | None:
        """The ``--llm-proxy`` URL without credentials, or None (no proxy)."""
        return without_credentials(self._proxy)

    def count_tokens(self, text: str) -> int:
        return estimate_tokens(text)

    def generate(self, messages: Messages, *, max_tokens: int = DEFAULT_MAX_TOKENS,
                 timeout: float = DEFAULT_TIMEOUT) -> Generation:
        check_limits(max_tokens, timeout)
        body = json.dumps({"model": self.model, "messages": list(messages), "max_tokens": max_tokens,
                           "temperature": 0, "stream": False}).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        route = Route(self._proxy, self.allow_remote)
        start = time.monotonic()
        try:
            raw = self._post(route, request, timeout, start + timeout)
        except LLMError as exc:
            exc.contacted = list(route.contacted)  # the audit line says where the prompt went, even on failure
            raise
        gen = self._parse(raw, f"LLM endpoint {self.endpoint}", time.monotonic() - start)
        gen.extra["contacted"] = list(route.contacted)
        return gen

    def _post(self, route: Route, request, timeout: float, deadline: float) -> bytes:
        """The answer's bytes: one POST through ``route`` (no proxy unless named, checked addresses only)."""
        where = f"LLM endpoint {self.endpoint}" + (f" through proxy {self.proxy}" if self._proxy else "")
        if self._proxy and not self.allow_remote:  # the proxy resolves the endpoint: check its name again now
            try:
                check_host(urlsplit(self.url).hostname or "", None, allow_remote=False, option="--llm-url")
            except ConfigError as exc:
                raise LLMError(f"{where}: refused: {exc}") from None
        try:
            with route.opener().open(request, timeout=timeout) as response:
                return _read_until(response, deadline, where, timeout)
        except urllib.error.HTTPError as exc:
            detail = _error_detail(exc)
            raise LLMError(f"{where} answered HTTP {exc.code}{': ' + detail if detail else ''}") from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, RemoteRefused):
                raise LLMError(f"{where}: refused: {reason}") from None
            if isinstance(reason, (socket.timeout, TimeoutError)):
                raise LLMError(f"{where} did not answer within {timeout:g} s (--llm-timeout)") from None
            raise LLMError(f"{where} is unreachable ({reason}); is the server running? (--llm-url)") from None
        except (socket.timeout, TimeoutError):
            raise LLMError(f"{where} did not answer within {timeout:g} s (--llm-timeout)") from None
        except RemoteRefused as exc:
            raise LLMError(f"{where}: refused: {exc}") from None
        except (ConnectionError, OSError) as exc:
            raise LLMError(f"{where} is unreachable ({exc}); is the server running? (--llm-url)") from None

    def _parse(self, raw: bytes, where: str, seconds: float) -> Generation:
        try:
            data = json.loads(raw.decode("utf-8"))
            choice = data["choices"][0]
            content = choice["message"]["content"]
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, IndexError, TypeError):
            raise LLMError(f"{where} returned something that is not a chat completion "
                           f"({len(raw)} bytes starting {raw[:60]!r}); is --llm-url an OpenAI-compatible endpoint?") from None
        if content is None:
            content = ""
        if not isinstance(content, str):
            raise LLMError(f"{where} returned a message whose content is not text ({type(content).__name__})")
        reason = choice.get("finish_reason") if isinstance(choice, dict) else None
        finish = "empty" if not content.strip() else ("length" if reason == "length" else "stop")
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        return Generation(text=content, finish_reason=finish, backend=self.backend,
                          model=str(data.get("model") or self.model), prompt_tokens=_int(usage.get("prompt_tokens")),
                          completion_tokens=_int(usage.get("completion_tokens")), seconds=seconds)


def _read_until(response, deadline: float, where: str, timeout: float) -> bytes:
    """Read the whole body before ``deadline`` and within :data:`MAX_RESPONSE_BYTES`."""
    chunks, size = [], 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise LLMError(f"{where} did not finish its answer within {timeout:g} s (--llm-timeout)")
        try:  # each read waits at most what is left of the deadline
            response.fp.raw._sock.settimeout(left)  # type: ignore[attr-defined]
        except AttributeError:
            pass
        # read1: one socket read, so the deadline is checked between reads of a trickling server
        chunk = response.read1(65536) if hasattr(response, "read1") else response.read(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            raise LLMError(f"{where} sent more than {MAX_RESPONSE_BYTES // (1024 * 1024)} MB: not a chat completion")
        chunks.append(chunk)


def _error_detail(exc: urllib.error.HTTPError) -> str:
    try:
        text = exc.read(2000).decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 - the status alone is still a useful message
        return ""
    try:
        err = json.loads(text).get("error")
        text = err.get("message", text) if isinstance(err, dict) else str(err or text)
    except (json.JSONDecodeError, AttributeError):
        pass
    return " ".join(text.split())[:200]


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
