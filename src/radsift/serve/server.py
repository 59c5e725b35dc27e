"""``radsift serve``: run the web service with uvicorn, safe by default.

Safe by default means: it binds to 127.0.0.1 unless told otherwise, refuses any other address
without an API token, opens the index read-only, writes no query or report text to its logs
(uvicorn's access log, which prints query strings, is off; the app logs method, route and status),
and writes queries only to an explicit audit log.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path

from rich.console import Console

from radsift.errors import ConfigError
from radsift.serve.auth import TOKEN_ENV, is_loopback, resolve_token

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
        ConfigError: The address cannot be bound (in use, not an address of this machine ...).
    """
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
) -> None:
    """Serve the index at ``index_dir`` until interrupted (Ctrl-C).

    Args:
        index_dir: The index directory (opened read-only).
        host: Address to bind; anything but a loopback address needs a token.
        port: TCP port (0 picks a free one; the address printed says which).
        token: The API token; when None, read from ``token_file`` or ``$RADSIFT_TOKEN``.
        token_file: A file whose first line is the API token.
        audit_log: Append each search (with its query) and report view to this JSON-lines file.
        model: Model folder to encode queries with (default: the index's own model).
        reranker: Cross-encoder folder for ``/api/search?rerank=N`` (loaded at start).
        console: Where to print the address.

    Raises:
        ConfigError: No token for a non-loopback host, a bad token file, a port in use.
        IndexStoreError: The index is missing or its model is not available.
    """
    import uvicorn

    from radsift.search import Index
    from radsift.serve.app import create_app

    console = console or Console(stderr=True)
    token = resolve_token(token, token_file)
    check_bind(host, token)
    index = Index.open(index_dir, model=model, reranker=reranker)
    app = create_app(index, token=token, audit_log=audit_log)
    with console.status("loading the query encoder"):
        index.encoder  # load the model now so the first search is not the slow one  # noqa: B018
        index.reranker  # noqa: B018  (a bad reranker folder fails here, not on the first request)
    sock = bind_socket(host, port)
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_config=LOG_CONFIG, access_log=False, server_header=False,
                            timeout_graceful_shutdown=5)
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
