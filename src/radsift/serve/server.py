"""``radsift serve``: run the web service with uvicorn, safe by default.

Safe by default means: it binds to 127.0.0.1 unless told otherwise, refuses any other address
without an API token, opens the index read-only, writes no query or report text to its logs
(uvicorn's access log, which prints query strings, is off; the app logs method, route and status),
and writes queries only to an explicit audit log. It also bounds what a client can hold: a request
head must arrive within ``header_timeout`` seconds and fit in :data:`MAX_HEAD_BYTES` (414 or 431, in
pieces or whole), a body must fit in ``max_body`` bytes (413) and arrive within ``body_timeout``
seconds (408), both checked after the token (401) and before the app reads it
(:class:`radsift.serve.guard.RequestGuard`), an idle keep-alive connection is closed after
``keepalive_timeout`` seconds, and past ``max_connections`` open connections a request is answered
503 (:class:`ServerLimits`). Every one of these answers is one line of JSON with the app's security
headers, and a connection closed while its client is still sending is closed gently (half-closed,
then drained for up to :data:`LINGER_SECONDS`), so the client reads the answer instead of a reset.

The index is served by forked workers (one by default, ``--workers N``) under a parent that starts one
again when a crash killed it (:mod:`radsift.serve.supervisor`): a file truncated under a worker's memory
map (SIGBUS) costs the request it was answering, one log line and a restart, and the next request is
answered (503 naming the damaged file while it is damaged). ``--in-process`` serves without the parent.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h11
import uvicorn
from rich.console import Console
from uvicorn.protocols.http.h11_impl import H11Protocol

from radsift.errors import ConfigError, IndexStoreError
from radsift.index.generations import read_current
from radsift.search import Index
from radsift.search.passages import PolyFirstStage
from radsift.serve.app import create_app, unavailable_app
from radsift.serve.auth import TOKEN_ENV, is_loopback, resolve_token
from radsift.serve.guard import DEFAULT_BODY_TIMEOUT, DEFAULT_MAX_BODY, MAX_HEAD_BYTES, head_too_large, refusal
from radsift.serve.supervisor import REOPEN_EXIT, WorkerRun, supervise

log = logging.getLogger("radsift.serve")

#: How long a connection closed while its client still sends is drained before it is cut (see
#: :class:`_GentleClose`): long enough for the client to read the answer, short enough to free the slot.
LINGER_SECONDS = 2.0

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
        max_body: The largest request body in bytes; a larger one is answered 413 before it is read
            (``--max-body``).
        body_timeout: Seconds a request body may take to arrive after its head; then 408
            (``--body-timeout``).

    Raises:
        ConfigError: A value is not a positive (finite) number, or ``max_connections`` or
            ``max_body`` not a positive whole number; the message names the option.
    """

    header_timeout: float = 10.0
    keepalive_timeout: float = 5.0
    max_connections: int = 64
    max_body: int = DEFAULT_MAX_BODY
    body_timeout: float = DEFAULT_BODY_TIMEOUT

    def __post_init__(self) -> None:
        for option, value in (("--header-timeout", self.header_timeout),
                              ("--keepalive-timeout", self.keepalive_timeout), ("--body-timeout", self.body_timeout)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ConfigError(f"{option} {value!r}: must be a positive number of seconds")
        for option, n in (("--max-connections", self.max_connections), ("--max-body", self.max_body)):
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise ConfigError(f"{option} {n!r}: must be a whole number of at least 1")


class _GentleClose:
    """A connection's transport whose ``close()`` lets a client that is still sending read the answer.

    Closing a socket with unread bytes in it sends a reset, and the client's kernel may drop the answer
    it had not read yet (a refused 300 MB upload, a 1 MB request line: "connection reset" instead of
    413 or 414). Here ``close()`` hands over to :meth:`HeaderTimeoutProtocol._close_gently`: it
    half-closes (the answer and a FIN go out), discards what still arrives, and closes for good when
    the client closes or after :data:`LINGER_SECONDS`. Everything else is the transport's.
    """

    def __init__(self, transport: asyncio.Transport, protocol: "HeaderTimeoutProtocol") -> None:
        self.real = transport
        self._protocol = protocol
        self._closing = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def is_closing(self) -> bool:
        return self._closing or self.real.is_closing()

    def close(self) -> None:
        if not self._closing:
            self._closing = True
            self._protocol._close_gently()


class HeaderTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request head is not complete in time.

    uvicorn closes a keep-alive connection only while it is silent, and cancels that timer on the
    first byte: a client that connects and says nothing, or sends its headers a byte at a time,
    holds the connection (and a ``max_connections`` slot) forever. Here a timer of
    :attr:`header_timeout` seconds starts when the connection is made and, on a keep-alive
    connection, when the first byte of its next request arrives (while it idles between requests,
    uvicorn's keep-alive timeout governs); it is cancelled when h11 has parsed a whole request
    head, and closes the transport when it fires first.

    It also answers what uvicorn answers itself with the app's security headers, in one line of
    JSON: a head too long while it arrives (414 for the request line, 431 for the headers, instead
    of a bare 400), another malformed head (400), and a request past ``max_connections`` (503); and
    it closes gently (:class:`_GentleClose`).

    Use :func:`protocol_class` for a subclass with another timeout.
    """

    header_timeout: float = ServerLimits.header_timeout

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None
        self._between_requests = False  # a response is complete; the next byte starts a new head
        self._lingering = False
        # uvicorn's own 503 (a bare text/plain answer) is replaced by _capped's, with the headers.
        self._max_open, self.limit_concurrency = self.limit_concurrency, None
        self._inner_app, self.app = self.app, self._capped

    async def _capped(self, scope: Any, receive: Any, send: Any) -> None:
        # The same test as uvicorn's, made when the request's task runs (it is already in tasks).
        cap = self._max_open
        if cap is not None and (len(self.connections) >= cap or len(self.tasks) > cap):
            self.logger.warning("Exceeded concurrency limit.")
            headers, body = refusal(503, f"the server is busy: {cap - 1} connections are open (--max-connections); "
                                         "try again shortly")
            await send({"type": "http.response.start", "status": 503, "headers": headers})
            await send({"type": "http.response.body", "body": body, "more_body": False})
            return
        await self._inner_app(scope, receive, send)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(_GentleClose(transport, self))  # type: ignore[arg-type]
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._lingering:
            return  # closing: what the client still sends is read and dropped
        if self._between_requests:
            self._between_requests = False
            self._arm_head_timer()  # before parsing: handle_events cancels it if the head is whole
        super().data_received(data)

    def handle_events(self) -> None:
        super().handle_events()
        # h11 leaves IDLE for the client once it has parsed a whole request line and headers.
        if self.conn.their_state is not h11.IDLE:
            self._cancel_head_timer()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a head h11 cannot parse: 414 or 431 when it is too long, else 400."""
        buffered = self.conn.trailing_data[0]
        limit = self.config.h11_max_incomplete_event_size or MAX_HEAD_BYTES
        line = buffered.find(b"\n") + 1 or len(buffered)
        status, message = head_too_large(line, len(buffered), limit) or (400, "the request is not valid HTTP/1.1")
        headers, body = refusal(status, message)
        for event in (h11.Response(status_code=status, headers=headers), h11.Data(data=body), h11.EndOfMessage()):
            self.transport.write(self.conn.send(event))
        self.transport.close()

    def _close_gently(self) -> None:
        real = self.transport.real  # type: ignore[attr-defined]
        self._cancel_head_timer()
        still_sending = self.conn.their_state in (h11.SEND_BODY, h11.ERROR)
        if not still_sending or real.is_closing() or not real.can_write_eof():
            real.close()
            return
        self._lingering = True
        self.connections.discard(self)  # its slot is free: it is only drained now, never served again
        try:
            real.write_eof()  # after the answer: the client reads it, then an end of stream
        except OSError:
            real.close()
            return
        real.resume_reading()  # uvicorn may have paused it (a body past its buffer)
        self.loop.call_later(LINGER_SECONDS, real.close)

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
    workers: int = 1,
    in_process: bool = False,
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
        limits: Header, body and keep-alive timeouts, the body limit and the connection cap (default
            :class:`ServerLimits`; the connection cap is per worker).
        workers: Processes serving the index (``--workers``): each loads the models and answers on the
            one listening socket, so searches use every core.
        in_process: Serve in this process (``--in-process``; where ``os.fork`` is missing, always): no
            supervising parent, so a crash (a file of the index truncated under it) stops the server.
            By default the index is served by forked workers under a parent that starts a crashed one
            again (:mod:`radsift.serve.supervisor`; one worker unless ``workers`` says more).

    Raises:
        ConfigError: No token for a non-loopback host, a bad token file, a port out of range or in use.
        IndexStoreError: The index is missing or its model is not available.
    """
    console = console or Console(stderr=True)
    limits = limits or ServerLimits()
    check_port(port)  # before the index and the model load, not after
    if not isinstance(workers, int) or isinstance(workers, bool) or not 1 <= workers <= MAX_WORKERS:
        raise ConfigError(f"--workers must be a whole number from 1 to {MAX_WORKERS}, not {workers!r}")
    forks = hasattr(os, "fork")
    if workers > 1 and (in_process or not forks):
        raise ConfigError(f"--workers {workers} needs worker processes: "
                          + ("drop --in-process" if forks else "this system cannot fork them"))
    token = resolve_token(token, token_file)
    check_bind(host, token)
    options = dict(index_dir=index_dir, token=token, audit_log=audit_log, model=model, reranker=reranker,
                   limits=limits, saved_dir=saved_dir, backend=backend, llm=llm,
                   passage_first_stage=passage_first_stage)
    if in_process or not forks:
        server, index = _prepared_server(console=console, **options)
        sock = bind_socket(host, port)
        _announce(console, index_dir, index.stats()["counts"], host, sock.getsockname()[1], token, audit_log, 1)
        try:
            server.run(sockets=[sock])
        finally:
            sock.close()
        return
    if workers > 1:
        probe = Index.open(index_dir, model=model, backend=backend)  # a missing index fails here, once, not N times
        probe.store.close()  # its reader lease is given back before the fork: no worker inherits it
        del probe
    else:
        read_current(Path(index_dir))  # no index there: said before the port is taken (the worker opens it)
    sock = bind_socket(host, port)  # one listening socket, accepted on by every worker
    port = sock.getsockname()[1]

    def announce(info: dict) -> None:
        _announce(console, index_dir, info.get("counts", {}), host, port, token, audit_log, workers)

    try:
        if workers > 1:
            announce({})
        # One worker: the parent waits for it to be ready (the address is printed then, as in one process,
        # and an error it meets while it starts is raised here, the same one line).
        run = _worker_run(sock, options, console if workers == 1 else Console(stderr=True, quiet=True))
        supervise(workers, run, on_ready=announce if workers == 1 else None)
    finally:
        sock.close()


#: Most worker processes ``radsift serve --workers`` starts.
MAX_WORKERS = 64
#: How often a worker serving 503s (it could not open the index after a crash) tries to open it again.
REOPEN_SECONDS = 2.0


def _uvicorn_server(app, limits: ServerLimits) -> uvicorn.Server:
    config = uvicorn.Config(app, log_config=LOG_CONFIG, access_log=False, server_header=False,
                            timeout_graceful_shutdown=5, **uvicorn_limits(limits))
    return uvicorn.Server(config)


def _prepared_server(*, index_dir, token, audit_log, model, reranker, limits, saved_dir, backend, llm,
                     passage_first_stage, console) -> tuple[uvicorn.Server, Index]:
    """The index opened, its models loaded and the app built: a server ready to run on a socket."""
    stage = None
    if passage_first_stage is not None:
        stage = PolyFirstStage(passage_first_stage, say=lambda m: console.print(m, highlight=False))
    index = Index.open(index_dir, model=model, reranker=reranker, backend=backend)
    app = create_app(index, token=token, audit_log=audit_log, saved_dir=saved_dir, llm=llm,
                     passage_first_stage=stage, max_body=limits.max_body, body_timeout=limits.body_timeout)
    with console.status("loading the models and warming the index"):
        index.reranker  # noqa: B018  (a bad reranker folder fails here, not on the first request)
        index.warm()  # the models, backends and row maps now, so the first search is not the slow one
        if stage is not None:
            stage.prepare(index.live_store())  # the codes of every segment, before the first passage search
    return _uvicorn_server(app, limits), index


def _worker_run(sock: socket.socket, options: dict, console: Console) -> WorkerRun:
    """What each forked worker does (:func:`radsift.serve.supervisor.supervise`): open the index, load the
    models and serve on ``sock``, the one listening socket (the kernel hands each connection to one worker).

    Forked before anything loads torch (``radsift serve`` imports none before this), so no thread pool is
    copied into a child. Each worker follows the index's live generation and holds its own reader lease,
    as one server does; the audit log is appended line by line with O_APPEND (one write each), so lines of
    several workers never mix.

    A worker started again after a crash may find the index damaged (the truncated file that crashed it now
    fails the check at open): it then answers every request 503 naming the damage (:func:`unavailable_app`)
    instead of stopping the server, tries to open the index every :data:`REOPEN_SECONDS`, and once it can
    (restored, rolled back), exits with :data:`REOPEN_EXIT` so that a fresh worker serves it.
    """
    def run(number: int, replacement: bool, ready) -> int:
        try:
            server, index = _prepared_server(console=console, **options)
        except IndexStoreError as exc:
            if not replacement:
                raise
            return _serve_unavailable(sock, number, str(exc), options)
        ready({"counts": index.stats()["counts"]})
        server.run(sockets=[sock])
        return 0

    return run


def _serve_unavailable(sock: socket.socket, number: int, reason: str, options: dict) -> int:
    """Answer 503 ``reason`` on ``sock`` until stopped (0) or until the index opens again (:data:`REOPEN_EXIT`)."""
    limits = options["limits"]
    server = _uvicorn_server(unavailable_app(reason, token=options["token"], max_body=limits.max_body,
                                             body_timeout=limits.body_timeout), limits)
    # After uvicorn.Config has set the log format up, so that the line reads like the others.
    log.error("worker %d cannot open the index: %s; answering 503 until it can", number + 1, reason)
    reopened = threading.Event()

    def retry() -> None:
        while not server.should_exit:
            time.sleep(REOPEN_SECONDS)
            try:
                Index.open(options["index_dir"], model=options["model"], backend=options["backend"]).store.close()
            except Exception:  # noqa: BLE001, S112 - still damaged (or worse): keep answering 503, keep trying
                continue
            reopened.set()
            server.should_exit = True  # uvicorn finishes the requests it has and returns
            return

    threading.Thread(target=retry, name="radsift-reopen", daemon=True).start()
    server.run(sockets=[sock])
    return REOPEN_EXIT if reopened.is_set() else 0


def _announce(console: Console, index_dir, counts: dict, host: str, port: int, token, audit_log,
              workers: int) -> None:
    what = f" ({counts.get('reports', 0)} reports)" if counts else ""
    # The address on a line of its own, never wrapped, so it can be clicked or parsed.
    console.print(f"radsift is serving {index_dir}{what}"
                  + (f" with {workers} worker processes" if workers > 1 else "")
                  + (", API token required" if token else "")
                  + (f", audit log {audit_log}" if audit_log is not None else ""), highlight=False, soft_wrap=True)
    console.print(f"open [bold]{display_url(host, port)}[/]  (Ctrl-C stops)", highlight=False, soft_wrap=True)
    sys.stdout.flush()
