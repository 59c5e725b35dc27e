"""Server limits: header and keep-alive timeouts, the connection cap, the head size, the port,
and the audit log failing closed with a 503 that says why (issue 18 item 4).

The timeout tests run uvicorn with the server's own options on a free 127.0.0.1 port and talk to
it over raw sockets; each waits about a second.
"""

from __future__ import annotations

import asyncio
import errno
import http.client
import json
import logging
import os
import socket
import threading
import time
from urllib.parse import quote

import pytest
import typer
from fastapi.testclient import TestClient
from typer.testing import CliRunner

import radsift.serve
from radsift.cli import app as cli_app
from radsift.errors import ConfigError
from radsift.index import build_index
from radsift.models.hashing import HashingEncoder
from radsift.records import Report
from radsift.search import Index
from radsift.serve import create_app, run_server
from radsift.serve.app import SECURITY_HEADERS
from radsift.serve.server import MAX_HEAD_BYTES, ServerLimits, bind_socket, uvicorn_limits

REPORTS = [
    Report("a", {"findings": "There is a small right apical pneumothorax. Heart size is normal.",
                 "impression": "Small right pneumothorax."}, {"exam": "XR CHEST 1 VIEW", "site": "north"}),
    Report("b", {"findings": "No pneumothorax or pleural effusion. The lungs are clear.",
                 "impression": "No acute cardiopulmonary abnormality."}, {"exam": "XR CHEST PA", "site": "south"}),
    Report("c", {"findings": "Moderate left pleural effusion with basilar atelectasis. Mild cardiomegaly.",
                 "impression": "Left pleural effusion."}, {"exam": "XR CHEST PA", "site": "north"}),
]
HALF_HEAD = b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n"  # no blank line: the head never ends
SLACK = 2.0  # seconds allowed past a timeout before the test calls the connection "still open"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("serve-limits")
    enc = HashingEncoder(root / "model")
    build_index(root / "idx", REPORTS, encoder=enc, progress=False)
    return root / "idx", enc


class LimitedServer:
    """uvicorn serving ``app`` with ``limits`` exactly as ``run_server`` passes them, in a thread."""

    def __init__(self, app, limits: ServerLimits) -> None:
        import uvicorn

        self.sock = bind_socket("127.0.0.1", 0)
        self.port = self.sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False,
                                                    **uvicorn_limits(limits)))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> "LimitedServer":
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=5)

    def http(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)

    def wait_connections(self, n: int) -> None:
        """Wait until the server holds ``n`` open connections (accepting is asynchronous)."""
        deadline = time.monotonic() + 5
        while len(self.server.server_state.connections) != n:
            assert time.monotonic() < deadline, f"{len(self.server.server_state.connections)} connections, not {n}"
            time.sleep(0.02)


@pytest.fixture(scope="module")
def app(built):
    path, enc = built
    return create_app(Index.open(path, encoder=enc))


def read_response(sock: socket.socket) -> tuple[int, bytes]:
    """Status and body of one whole response on a raw socket (the socket stays usable)."""
    res = http.client.HTTPResponse(sock)
    res.begin()
    return res.status, res.read()


def seconds_until_closed(sock: socket.socket, within: float) -> float:
    """Seconds until the server closes ``sock`` (EOF or reset); fails if it is open after ``within``."""
    start = time.monotonic()
    sock.settimeout(within)
    try:
        while sock.recv(4096):  # anything the server still sends (an answer) is not the close
            sock.settimeout(max(0.01, within - (time.monotonic() - start)))
    except (ConnectionResetError, BrokenPipeError):
        pass
    except socket.timeout:
        pytest.fail(f"the connection is still open after {within:.1f} s")
    return time.monotonic() - start


# -- header timeout ------------------------------------------------------------------------------
def test_a_half_sent_request_head_is_cut_off_after_the_header_timeout(app):
    with LimitedServer(app, ServerLimits(header_timeout=1, keepalive_timeout=30)) as srv, srv.connect() as sock:
        sock.sendall(HALF_HEAD)
        waited = seconds_until_closed(sock, 1 + SLACK)
        assert waited >= 0.5  # the timer closed it, not something at once


def test_a_silent_connection_is_cut_off_after_the_header_timeout(app):
    # uvicorn arms its keep-alive timer only after a response: a silent connection stayed forever.
    with LimitedServer(app, ServerLimits(header_timeout=1, keepalive_timeout=30)) as srv, srv.connect() as sock:
        seconds_until_closed(sock, 1 + SLACK)


def test_a_keepalive_connection_sending_half_its_next_head_is_cut_off(app):
    # uvicorn cancels its keep-alive timer on the first byte of the next request; that byte starts
    # the header timer again, so a slow next head is cut off too.
    with LimitedServer(app, ServerLimits(header_timeout=1, keepalive_timeout=30)) as srv:
        conn = srv.http()
        conn.request("GET", "/api/health")
        assert conn.getresponse().read() and conn.sock is not None  # kept alive
        conn.sock.sendall(HALF_HEAD)
        seconds_until_closed(conn.sock, 1 + SLACK)
        conn.close()


async def slow_app(scope, receive, send) -> None:
    """An ASGI app that takes 1.5 s to answer (and speaks the lifespan protocol)."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            await send({"type": message["type"] + ".complete"})
            if message["type"] == "lifespan.shutdown":
                return
    await asyncio.sleep(1.5)
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


def test_a_head_finished_in_time_is_answered_however_long_the_answer_takes():
    # The timer stops once the head is complete: a 1.5 s answer outlives a 1 s header timeout.
    with LimitedServer(slow_app, ServerLimits(header_timeout=1, keepalive_timeout=30)) as srv:
        with srv.connect() as sock:
            sock.sendall(HALF_HEAD)
            time.sleep(0.3)
            sock.sendall(b"\r\n")
            assert read_response(sock) == (200, b"ok")
            sock.sendall(HALF_HEAD + b"\r\n")  # the same connection, kept alive
            assert read_response(sock) == (200, b"ok")


# -- keep-alive timeout ----------------------------------------------------------------------------
def test_an_idle_keepalive_connection_is_closed_after_the_keepalive_timeout(app):
    with LimitedServer(app, ServerLimits(header_timeout=30, keepalive_timeout=1)) as srv:
        conn = srv.http()
        conn.request("GET", "/api/health")
        res = conn.getresponse()
        assert res.status == 200 and json.loads(res.read())["status"] == "ok"
        assert conn.sock is not None  # HTTP/1.1: kept open for a next request
        waited = seconds_until_closed(conn.sock, 1 + SLACK)
        assert waited >= 0.5
        conn.close()


def test_the_header_timeout_does_not_cut_short_a_longer_keepalive_timeout(app):
    with LimitedServer(app, ServerLimits(header_timeout=1, keepalive_timeout=2.5)) as srv:
        conn = srv.http()
        conn.request("GET", "/api/health")
        assert conn.getresponse().read() and conn.sock is not None
        waited = seconds_until_closed(conn.sock, 2.5 + SLACK)
        assert waited >= 2  # idle between requests: the keep-alive timeout's to close, not the header one's
        conn.close()


# -- connection cap ----------------------------------------------------------------------------------
def test_past_max_connections_a_request_gets_503_and_up_to_it_200(app):
    with LimitedServer(app, ServerLimits(header_timeout=30, keepalive_timeout=30, max_connections=1)) as srv:
        conn = srv.http()
        conn.request("GET", "/api/health")
        assert conn.getresponse().status == 200  # one connection: within the cap
        conn.close()
        srv.wait_connections(0)

        with srv.connect() as holder:  # a slow client holding the one slot
            holder.sendall(HALF_HEAD)
            srv.wait_connections(1)
            conn = srv.http()
            conn.request("GET", "/api/health")
            res = conn.getresponse()
            assert res.status == 503
            res.read()
            conn.close()
        srv.wait_connections(0)

        conn = srv.http()
        conn.request("GET", "/api/health")
        assert conn.getresponse().status == 200  # the slot is free again
        conn.close()


# -- request head size ----------------------------------------------------------------------------
def test_a_long_head_within_the_limit_is_answered_and_an_endless_one_refused(app):
    # h11 counts the bytes of a head not yet complete: that is what a client can make the server hold.
    with LimitedServer(app, ServerLimits()) as srv:
        with srv.connect() as sock:
            # The longest query (1000 characters of 4 bytes: 12 000 bytes percent-encoded) and a big
            # cookie, in two parts: the first alone is past h11's own 16 KiB default.
            head = (f"GET /api/search?k=1&q={quote(chr(0x1FAC1) * 1000)} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    f"Cookie: sso={'x' * 8000}\r\n\r\n").encode()
            assert 16 * 1024 < len(head) - 4 < MAX_HEAD_BYTES
            sock.sendall(head[:-4])
            time.sleep(0.3)
            sock.sendall(head[-4:])
            status, body = read_response(sock)
            assert status == 200, body
        with srv.connect() as sock:
            sock.sendall(HALF_HEAD + b"X-Padding: " + b"x" * MAX_HEAD_BYTES)  # never finished
            assert read_response(sock)[0] == 431  # too long, said so (was a bare 400)
            seconds_until_closed(sock, SLACK)


# -- validation ------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, option", [
    ({"header_timeout": 0}, "--header-timeout"),
    ({"header_timeout": -1.5}, "--header-timeout"),
    ({"header_timeout": float("nan")}, "--header-timeout"),
    ({"keepalive_timeout": 0}, "--keepalive-timeout"),
    ({"keepalive_timeout": float("inf")}, "--keepalive-timeout"),
    ({"max_connections": 0}, "--max-connections"),
    ({"max_connections": 2.5}, "--max-connections"),
])
def test_server_limits_refuse_non_positive_values_naming_the_option(kwargs, option):
    with pytest.raises(ConfigError, match=option):
        ServerLimits(**kwargs)


def test_server_limits_defaults():
    assert ServerLimits() == ServerLimits(header_timeout=10, keepalive_timeout=5, max_connections=64)


@pytest.mark.parametrize("port", [99999, 65536, -1])
def test_a_port_out_of_range_is_refused_naming_port(port, built, monkeypatch):
    with pytest.raises(ConfigError, match="--port"):
        bind_socket("127.0.0.1", port)
    monkeypatch.setattr(Index, "open", lambda *a, **k: pytest.fail("the index was opened before the port was checked"))
    with pytest.raises(ConfigError, match="--port"):
        run_server(built[0], port=port)


def test_cli_serve_passes_the_limits_and_refuses_bad_ones(built, monkeypatch):
    calls = []
    monkeypatch.setattr(radsift.serve, "run_server", lambda *a, **k: calls.append(k))
    res = CliRunner().invoke(cli_app, ["serve", str(built[0]), "--header-timeout", "3", "--keepalive-timeout", "2.5",
                                       "--max-connections", "8"])
    assert res.exit_code == 0, res.output
    assert calls[0]["limits"] == ServerLimits(header_timeout=3, keepalive_timeout=2.5, max_connections=8)

    res = CliRunner().invoke(cli_app, ["serve", str(built[0]), "--header-timeout", "0"])
    assert res.exit_code == 2 and "--header-timeout" in res.output
    monkeypatch.undo()  # the real run_server checks the port (before it opens the index)
    res = CliRunner().invoke(cli_app, ["serve", str(built[0]), "--port", "99999"])
    assert res.exit_code == 2 and "--port" in res.output


def test_cli_serve_defaults_are_the_server_limits_defaults():
    params = {p.name: p.default for p in typer.main.get_command(cli_app).commands["serve"].params}
    defaults = ServerLimits()
    assert (params["header_timeout"], params["keepalive_timeout"], params["max_connections"]) == (
        defaults.header_timeout, defaults.keepalive_timeout, defaults.max_connections)


def test_run_server_hands_the_limits_to_uvicorn(built, monkeypatch):
    import uvicorn

    import radsift.serve.server

    path, enc = built

    class HashIndex(Index):
        @classmethod
        def open(cls, p, **kwargs):
            return Index.open(p, encoder=enc)

    seen = []
    monkeypatch.setattr(radsift.serve.server, "Index", HashIndex)
    monkeypatch.setattr(uvicorn.Server, "run", lambda server, sockets=None: seen.append(server.config))
    run_server(path, port=0, limits=ServerLimits(header_timeout=3, keepalive_timeout=2, max_connections=7),
               in_process=True)
    (config,) = seen
    config.load()
    assert config.http_protocol_class.header_timeout == 3
    assert config.timeout_keep_alive == 2 and config.limit_concurrency == 8  # see uvicorn_limits: + 1
    assert config.h11_max_incomplete_event_size == MAX_HEAD_BYTES


# -- audit log failure -----------------------------------------------------------------------------
@pytest.fixture
def serve_log(caplog):
    """Records of the ``radsift.serve`` logger (``run_server``'s log config stops it propagating)."""
    logger = logging.getLogger("radsift.serve")
    logger.addHandler(caplog.handler)
    caplog.handler.setLevel(logging.DEBUG)
    # each record once, whichever test ran before in this process: caplog's handler also sits on the root logger,
    # which a propagating "radsift.serve" reaches too (only run_server's log config turns propagation off)
    propagate, logger.propagate = logger.propagate, False
    try:
        yield caplog
    finally:
        logger.propagate = propagate
        logger.removeHandler(caplog.handler)


def _serve_records(caplog, level):
    return [r for r in caplog.records if r.name == "radsift.serve" and r.levelno == level]


def test_an_unwritable_audit_log_refuses_searches_with_503_and_says_why_once(built, tmp_path, serve_log):
    path, enc = built
    audit = tmp_path / "trail.jsonl"
    client = TestClient(create_app(Index.open(path, encoder=enc), audit_log=audit))
    assert client.get("/api/search", params={"q": "effusion"}).status_code == 200

    audit.unlink()
    audit.mkdir()  # the path is now a directory: appending fails with EISDIR, even for root
    failed = [client.get("/api/search", params={"q": "left pleural effusion"}) for _ in range(2)]
    for res in failed:
        assert res.status_code == 503
        assert res.headers["content-type"] == "application/json"
        body = res.json()
        assert body == {"detail": f"audit log {audit} cannot be written (Is a directory): "
                                  "searches are refused until it can"}
        assert "hits" not in body
        for name in ("Content-Security-Policy", "X-Content-Type-Options"):
            assert res.headers[name] == SECURITY_HEADERS[name]
        assert res.headers["Cache-Control"] == "no-store"
    report = client.get("/api/reports/c")  # a report view is audited too: refused the same way
    assert report.status_code == 503 and "audit log" in report.json()["detail"]
    errors = _serve_records(serve_log, logging.ERROR)
    assert len(errors) == 1, [r.getMessage() for r in errors]  # once, not once per request
    assert f"audit log {audit} cannot be written" in errors[0].getMessage()
    assert not _serve_records(serve_log, logging.WARNING)

    audit.rmdir()  # writable again
    res = client.get("/api/search", params={"q": "left pleural effusion"})
    assert res.status_code == 200 and res.json()["hits"]
    warnings = _serve_records(serve_log, logging.WARNING)
    assert len(warnings) == 1 and f"audit log {audit} writable again" in warnings[0].getMessage()
    assert [json.loads(line)["event"] for line in audit.read_text().splitlines()] == ["search"]


def test_a_full_disk_refuses_the_search_and_no_hits_leave(built, tmp_path, monkeypatch, serve_log):
    path, enc = built
    audit = tmp_path / "trail.jsonl"
    client = TestClient(create_app(Index.open(path, encoder=enc), audit_log=audit))

    def full(fd, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("radsift.serve.audit.os.write", full)
    res = client.get("/api/search", params={"q": "pneumothorax"})
    assert res.status_code == 503
    assert res.json()["detail"] == (f"audit log {audit} cannot be written (No space left on device): "
                                    "searches are refused until it can")
    assert "pneumothorax" not in res.text  # neither the query echoed nor any hit
    assert len(_serve_records(serve_log, logging.ERROR)) == 1
