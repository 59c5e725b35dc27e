"""The checks a request passes before the app reads it: :class:`RequestGuard`, the outermost layer of the app.

A pure ASGI middleware (it sees ``receive`` before anything has read the body, which Starlette's
``BaseHTTPMiddleware`` does not), in this order:

1. the request head: a request line and headers over :data:`MAX_HEAD_BYTES` are answered 414 (the
   request line alone) or 431, whether they arrived in pieces (the server's protocol, see
   :mod:`radsift.serve.server`) or in one piece (here);
2. the API token, for ``/api/`` paths: a missing or wrong one is answered 401 before one byte of the
   body is read;
3. the query string: a parameter whose percent-decoded bytes are not UTF-8 is answered 422 (for
   ``q``, with the sentence the CLI and Python give: :func:`radsift.search.query.normalize_query`);
4. the body: a ``Content-Length`` over ``max_body`` is answered 413 at once, a body that streams
   past it 413 as soon as it does, and a body not complete ``body_timeout`` seconds after the head
   408; the app then gets the body whole.

Every refusal is one line of JSON (``{"detail": ...}``) with the security headers and
``Connection: close``, so the connection (and its ``--max-connections`` slot) is given back.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Awaitable, Callable
from urllib.parse import unquote_to_bytes

from radsift.errors import ConfigError
from radsift.search.query import normalize_query
from radsift.serve.auth import bearer_matches

log = logging.getLogger("radsift.serve")

#: The most bytes of a request head (request line plus headers). A query at the 1000-character limit
#: in a 4-byte script percent-encodes to 12 KB, and browsers add their headers and cookies.
MAX_HEAD_BYTES = 32 * 1024
#: The default largest request body (``--max-body``): an ask's findings or a saved search are a few KB.
DEFAULT_MAX_BODY = 1024 * 1024
#: The default seconds a request body may take to arrive once its head has (``--body-timeout``).
DEFAULT_BODY_TIMEOUT = 10.0

# The page and the API never need anything from elsewhere; say so to the browser.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
                               "form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}

Send = Callable[[dict], Awaitable[None]]


def refusal(status: int, message: str, extra: tuple[tuple[bytes, bytes], ...] = ()) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The headers and body of a refusal: ``{"detail": message}`` with the security headers, no caching,
    and ``Connection: close``."""
    body = json.dumps({"detail": message}).encode("ascii")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               (b"cache-control", b"no-store"), (b"connection", b"close"), *extra,
               *((k.lower().encode("ascii"), v.encode("ascii")) for k, v in SECURITY_HEADERS.items())]
    return headers, body


async def send_refusal(send: Send, status: int, message: str, extra: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    """Answer ``status`` with :func:`refusal`'s one line."""
    headers, body = refusal(status, message, extra)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def head_too_large(request_line: int, total: int, limit: int = MAX_HEAD_BYTES) -> tuple[int, str] | None:
    """(status, message) for a request head of ``total`` bytes (``request_line`` of them the request line)
    over ``limit``; None when it fits."""
    if total <= limit:
        return None
    if request_line > limit:
        return 414, f"the request line is {request_line} bytes; the limit is {limit} (shorten the query)"
    return 431, f"the request head is {total} bytes; the limit is {limit}"


def _head_size(scope: dict) -> tuple[int, int]:
    target = len(scope.get("raw_path") or scope["path"].encode()) + (
        1 + len(scope["query_string"]) if scope.get("query_string") else 0)
    line = len(scope["method"]) + 1 + target + len(" HTTP/1.1\r\n")
    return line, line + sum(len(k) + len(v) + 4 for k, v in scope["headers"]) + 2


def utf8_problem(query_string: bytes) -> str | None:
    """The one-line refusal of a query string with a parameter that is not UTF-8 once percent-decoded
    (None when every one is): ``q`` is refused as :func:`normalize_query` refuses it, so HTTP, the CLI
    and Python say the same sentence."""
    for part in query_string.split(b"&"):
        name, _, value = part.partition(b"=")
        raw_name, raw = unquote_to_bytes(name.replace(b"+", b" ")), unquote_to_bytes(value.replace(b"+", b" "))
        key = raw_name.decode("utf-8", "replace")[:40]
        try:
            raw_name.decode("utf-8")
            raw.decode("utf-8")
        except UnicodeDecodeError:
            if key == "q":
                try:
                    normalize_query(raw.decode("utf-8", "surrogateescape"))
                except ConfigError as exc:
                    return str(exc)
            return f"{key}: not valid UTF-8 text"
    return None


class RequestGuard:
    """The checks before the app reads a request (see the module's docs).

    Args:
        app: The ASGI app it guards.
        token: The API token of ``/api/`` paths (None: none needed).
        max_body: The largest request body in bytes.
        body_timeout: Seconds the body may take to arrive, from when the app would start reading it.
    """

    def __init__(self, app, *, token: str | None = None, max_body: int = DEFAULT_MAX_BODY,
                 body_timeout: float = DEFAULT_BODY_TIMEOUT) -> None:
        self.app = app
        self.token = token
        self.max_body = max_body
        self.body_timeout = body_timeout

    async def __call__(self, scope: dict, receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refused = self._check_head(scope)
        if refused is not None:
            status, message, extra = refused
            log.info("%s refused %d before reading the body", scope["method"], status)
            await send_refusal(send, status, message, extra)
            return
        if not _has_body(scope):
            await self.app(scope, receive, send)
            return
        body = await self._read_body(receive, send, scope["method"])
        if body is None:
            return
        delivered = False

        async def replay() -> dict:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _check_head(self, scope: dict) -> tuple[int, str, tuple] | None:
        too_large = head_too_large(*_head_size(scope))
        if too_large is not None:
            return (*too_large, ())
        api = scope["path"].startswith("/api/") or scope["path"] == "/api"
        if api and self.token is not None:
            given = _header(scope, b"authorization")
            if not bearer_matches(given.decode("latin-1") if given is not None else None, self.token):
                return 401, "missing or wrong API token: send Authorization: Bearer <token>", (
                    (b"www-authenticate", b"Bearer"),)
        if api and scope.get("query_string"):
            problem = utf8_problem(scope["query_string"])
            if problem is not None:
                return 422, problem, ()
        length = _header(scope, b"content-length")
        if length is not None and length.strip().isdigit() and int(length) > self.max_body:
            return 413, self._too_large(int(length)), ()
        return None

    def _too_large(self, size: int | None = None) -> str:
        got = f"{size} bytes" if size is not None else "more"
        return f"the request body is {got}; the limit is {self.max_body} bytes (--max-body)"

    async def _read_body(self, receive, send: Send, method: str) -> bytes | None:
        """The whole body, or None once the request is answered (413, 408) or the client is gone."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.body_timeout
        chunks: list[bytes] = []
        size = 0
        while True:
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
            except asyncio.TimeoutError:
                log.info("%s refused 408: the body did not arrive within %gs", method, self.body_timeout)
                await send_refusal(send, 408, f"the request body did not arrive within {self.body_timeout:g} "
                                              "seconds (--body-timeout)")
                return None
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                log.info("%s refused 413 while reading the body", method)
                await send_refusal(send, 413, self._too_large())
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


def _header(scope: dict, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key.lower() == name:
            return value
    return None


def _has_body(scope: dict) -> bool:
    length = _header(scope, b"content-length")
    if length is not None:
        return length.strip() not in (b"", b"0")
    return _header(scope, b"transfer-encoding") is not None


__all__ = ["DEFAULT_BODY_TIMEOUT", "DEFAULT_MAX_BODY", "MAX_HEAD_BYTES", "RequestGuard", "SECURITY_HEADERS",
           "head_too_large", "refusal", "send_refusal", "utf8_problem"]
