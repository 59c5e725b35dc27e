"""``radsift serve``: run the web service with uvicorn, safe by default.

Safe by default means: it binds to 127.0.0.1 unless told otherwise, refuses any other address
without an API token, opens the index read-only, writes no query or report text to its logs
(uvicorn's access log, which prints query strings, is off; the app logs method, route and status),
and writes queries only to an explicit audit log. It also bounds what a client can hold: a request
head must arrive within ``header_timeout`` seconds and fit in :data:`MAX_HEAD_BYTES`, an idle
keep-alive connection is closed after ``keepalive_timeout`` seconds, and past ``max_connections``
open connections a request is answered 503 (:class:`ServerLimits`).
"""

from __future__ import annotations

import asyncio
import logging
import math
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h11
import uvicorn
from rich.console import Console
from uvicorn.protocols.http.h11_impl import H11Protocol

from radsift.errors import ConfigError
from radsift.search import Index
from radsift.search.passages import PolyFirstStage
from radsift.serve.app import create_app
from radsift.serve.auth import TOKEN_ENV, is_loopback, resolve_token

log = logging.getLogger("radsift.serve")

#: The most bytes of a request head (request line plus headers) a connection may have the server
#: buffer before the head is complete; past it h11 answers 400. A query at the 1000-character
#: limit in a 4-byte script percent-encodes to 12 KB, and browsers add their headers and cookies.
MAX_HEAD_BYTES = 32 * 1024

# uvicorn's own loggers plus the app's, to stderr; uvicorn.access is silenced on purpose.
LOG_CONFIG = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "plain", "stream": "ext://sys.stderr"}},
    "loggers": {
        "uvicorn": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
        "uvicorn.error": {"level": "INFO"},
        "uvicorn.access": {"handlers": [], "level": "CRITICAL", "propagate": False},
        "radsift.serve": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
    },
}


@dataclass(frozen=True)
class ServerLimits:
    """How long and how many connections a client may hold (``radsift serve`` options).

    Attributes:
        header_timeout: Seconds a connection may take to send a complete request line and headers,
            counted from when it connects or, on a keep-alive connection, from the first byte of
            its next request; then it is closed (``--header-timeout``).
        keepalive_timeout: Seconds an idle keep-alive connection is kept open after a response
            (``--keepalive-timeout``).
        max_connections: Open connections served at once; a request arriving while more are open
            is answered 503 (``--max-connections``).

    Raises:
        ConfigError: A value is not a positive (finite) number, or ``max_connections`` not a
            positive whole number; the message names the option.
    """

    header_timeout: float = 10.0
    keepalive_timeout: float = 5.0
    max_connections: int = 64

    def __post_init__(self) -> None:
        for option, value in (("--header-timeout", self.header_timeout),
                              ("--keepalive-timeout", self.keepalive_timeout)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ConfigError(f"{option} {value!r}: must be a positive number of seconds")
        n = self.max_connections
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigError(f"--max-connections {n!r}: must be a whole number of at least 1")


class HeaderTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request head is not complete in time.

    uvicorn closes a keep-alive connection only while it is silent, and cancels that timer on the
    first byte: a client that connects and says nothing, or sends its headers a byte at a time,
    holds the connection (and a ``max_connections`` slot) forever. Here a timer of
    :attr:`header_timeout` seconds starts when the connection is made and, on a keep-alive
    connection, when the first byte of its next request arrives (while it idles between requests,
    uvicorn's keep-alive timeout governs); it is cancelled when h11 has parsed a whole request
    head, and closes the transport when it fires first.

    Use :func:`protocol_class` for a subclass with another timeout.
    """

    header_timeout: float = ServerLimits.header_timeout

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None
        self._between_requests = False  # a response is complete; the next byte starts a new head

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._between_requests:
            self._between_requests = False
            self._arm_head_timer()  # before parsing: handle_events cancels it if the head is whole
        super().data_received(data)

    def handle_events(self) -> None:
        super().handle_events()
        # h11 leaves IDLE for the client once it has parsed a whole request line and headers.
        if self.conn.their_state is not h11.IDLE:
            self._cancel_head_timer()

    def on_response_complete(self) -> None:
        # Not armed here: an idle keep-alive connection is closed by uvicorn's keep-alive timer, which
        # the first byte of the next request cancels (data_received arms this one then). A pipelined
        # head already buffered is parsed in super() and, if incomplete, left to the keep-alive timer.
        self._between_requests = True
        super().on_response_complete()

    def _arm_head_timer(self) -> None:
        self._cancel_head_timer()
        self._head_timer = self.loop.call_later(self.header_timeout, self._head_timed_out)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            # DEBUG: a slow-header flood must not flood the log as well.
            log.debug("closing a connection: no complete request head within %gs", self.header_timeout)
            self.transport.close()


def protocol_class(header_timeout: float) -> type[HeaderTimeoutProtocol]:
    """A :class:`HeaderTimeoutProtocol` subclass with ``header_timeout`` (uvicorn makes one per connection)."""
    return type("HeaderTimeoutProtocol", (HeaderTimeoutProtocol,), {"header_timeout": header_timeout})


def uvicorn_limits(limits: ServerLimits) -> dict[str, Any]:
    """The ``uvicorn.Config`` arguments that enforce ``limits`` (and :data:`MAX_HEAD_BYTES`)."""
    return {
        "http": protocol_class(limits.header_timeout),
        "timeout_keep_alive": limits.keepalive_timeout,
        # uvicorn refuses when len(connections) >= limit_concurrency, and that count includes the
        # connection asking: + 1 so that max_connections connections are served, not one fewer.
        "limit_concurrency": limits.max_connections + 1,
        "h11_max_incomplete_event_size": MAX_HEAD_BYTES,
    }


def check_port(port: int) -> None:
    """Refuse a port outside 0..65535.

    Raises:
        ConfigError: Naming ``--port``.
    """
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigError(f"--port {port!r}: must be 0 to 65535 (0 picks a free one)")


def check_bind(host: str, token: str | None) -> None:
    """Refuse a non-loopback address without a token.

    Raises:
        ConfigError: ``host`` is reachable from other machines and no token is configured.
    """
    if token is None and not is_loopback(host):
        raise ConfigError(
            f"refusing to serve on {host}: other machines could reach it and no API token is set. "
            f"Give one with --token-file FILE or ${TOKEN_ENV} (at least 16 random characters), "
            "or serve on 127.0.0.1"
        )


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0 picks a free one).

    Raises:
        ConfigError: The port is out of range, or the address cannot be bound (in use, not an
            address of this machine ...).
    """
    check_port(port)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ConfigError(f"--host {host}: cannot resolve it ({exc.strerror})") from None
    family, kind, proto, _, addr = infos[0]
    # The TCP protocol number matters: asyncio only sets TCP_NODELAY on connections from sockets
    # created with it, and without that every keep-alive response waits ~40 ms for a delayed ACK.
    sock = socket.socket(family, kind, proto or socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(addr)
    except OSError as exc:
        sock.close()
        hint = "; pick another with --port" if exc.errno == 98 else ""
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}{hint}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def display_url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}/"


def run_server(
    index_dir: str | Path,
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    token_file: str | Path | None = None,
    audit_log: str | Path | None = None,
    model: str | Path | None = None,
    reranker: str | Path | None = None,
    console: Console | None = None,
    limits: ServerLimits | None = None,
    saved_dir: str | Path | None = None,
    backend: str = "auto",
    llm: dict | None = None,
    passage_first_stage: str | Path | None = None,
) -> None:
    """Serve the index at ``index_dir`` until interrupted (Ctrl-C).

    Args:
        index_dir: The index directory (opened read-only).
        host: Address to bind; anything but a loopback address needs a token.
        port: TCP port (0 picks a free one; the address printed says which).
        token: The API token; when None, read from ``token_file`` or ``$RADSIFT_TOKEN``.
        token_file: A file whose first line is the API token.
        audit_log: Append each search (with its query), report view and export to this JSON-lines file.
        saved_dir: The folder of saved searches (default ``INDEX/saved``).
        llm: ``/api/ask``'s back-end: keyword arguments of :func:`radsift.rag.llm.make_llm` (None = the
            offline model, loaded on the first question).
        backend: The vector backend (``auto``, ``numpy``, ``hnsw``: :class:`radsift.Index`).
        model: Model folder to encode queries with (default: the index's own model).
        reranker: Cross-encoder folder for ``/api/search?rerank=N`` (loaded at start).
        passage_first_stage: A poly-encoder folder scoring ``/api/passages`` in the place of the index's
            bi-encoder (:class:`radsift.search.passages.PolyFirstStage`; loaded, and the codes of every
            segment read or encoded, at start).
        console: Where to print the address.
        limits: Header and keep-alive timeouts and the connection cap (default :class:`ServerLimits`).

    Raises:
        ConfigError: No token for a non-loopback host, a bad token file, a port out of range or in use.
        IndexStoreError: The index is missing or its model is not available.
    """
    console = console or Console(stderr=True)
    limits = limits or ServerLimits()
    check_port(port)  # before the index and the model load, not after
    token = resolve_token(token, token_file)
    check_bind(host, token)
    stage = None
    if passage_first_stage is not None:
        stage = PolyFirstStage(passage_first_stage, say=lambda m: console.print(m, highlight=False))
    index = Index.open(index_dir, model=model, reranker=reranker, backend=backend)
    app = create_app(index, token=token, audit_log=audit_log, saved_dir=saved_dir, llm=llm,
                     passage_first_stage=stage)
    with console.status("loading the query encoder"):
        index.encoder  # load the model now so the first search is not the slow one  # noqa: B018
        index.reranker  # noqa: B018  (a bad reranker folder fails here, not on the first request)
        if stage is not None:
            stage.prepare(index.live_store())  # the codes of every segment, before the first passage search
    sock = bind_socket(host, port)
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_config=LOG_CONFIG, access_log=False, server_header=False,
                            timeout_graceful_shutdown=5, **uvicorn_limits(limits))
    server = uvicorn.Server(config)
    counts = index.stats()["counts"]
    # The address on a line of its own, never wrapped, so it can be clicked or parsed.
    console.print(f"radsift is serving {index_dir} ({counts.get('reports', 0)} reports)"
                  + (", API token required" if token else "")
                  + (f", audit log {audit_log}" if audit_log is not None else ""), highlight=False, soft_wrap=True)
    console.print(f"open [bold]{display_url(host, port)}[/]  (Ctrl-C stops)", highlight=False, soft_wrap=True)
    sys.stdout.flush()
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
