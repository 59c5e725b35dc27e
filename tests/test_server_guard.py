"""The server checks before it reads (issue 32 item 3): the token and the size limits before the body,
a body-read timeout, the head limit on heads that arrive whole, one-line answers with the security headers.

The ASGI tests call the app with a ``receive`` that records whether the body was asked for; the live
tests run uvicorn with the server's own options on a free 127.0.0.1 port and talk raw sockets.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import threading
import time

import pytest
from fastapi.testclient import TestClient

from radsift.records import Report
from radsift.serve import create_app
from radsift.serve.guard import MAX_HEAD_BYTES, SECURITY_HEADERS
from radsift.serve.server import ServerLimits, bind_socket, uvicorn_limits

TOKEN = "s3cret-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
REPORTS = [Report("a", {"findings": "Small right pneumothorax.", "impression": "Pneumothorax."}),
           Report("b", {"findings": "No pleural effusion.", "impression": "Normal chest."})]


@pytest.fixture(scope="module")
def index(hashing_index_of):
    return hashing_index_of("guard", REPORTS)


def call(app, method: str, path: str, headers: dict, chunks=(), *, stall: bool = False, query: bytes = b""):
    """Call the ASGI app once; ``receive`` hands out ``chunks`` (then stalls, with ``stall``) and records each call."""
    received: list[int] = []
    sent: list[dict] = []
    pending = list(chunks)

    async def receive():
        received.append(len(received))
        if pending:
            chunk = pending.pop(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(pending) or stall}
        if stall:
            await asyncio.sleep(3)  # a client that stops sending (bounded, so a broken guard fails, not hangs)
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": query, "root_path": "",
             "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
             "client": ("127.0.0.1", 5), "server": ("127.0.0.1", 80)}
    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], dict((k.decode(), v.decode()) for k, v in start["headers"]), body, received


def assert_one_line(headers: dict, body: bytes, *words: str) -> str:
    detail = json.loads(body)["detail"]
    assert "\n" not in detail and all(w in detail for w in words), detail
    for name, value in SECURITY_HEADERS.items():
        assert headers[name.lower()] == value
    assert headers["connection"] == "close"
    return detail


# -- the token before the body -------------------------------------------------------------------------
@pytest.mark.parametrize("auth", [{}, {"Authorization": "Bearer wrong-token-0123456789"}])
def test_no_token_is_401_before_one_byte_of_the_body_is_read(index, auth):
    app = create_app(index, token=TOKEN)
    status, headers, body, received = call(app, "POST", "/api/ask", {**auth, "content-length": "300000000",
                                                                    "content-type": "application/json"},
                                           [b"x" * 1000], stall=True)
    assert status == 401 and received == []
    assert_one_line(headers, body, "API token")
    assert headers["www-authenticate"] == "Bearer"


def test_a_declared_body_over_max_body_is_413_unread_and_one_within_it_is_served(index):
    app = create_app(index, token=TOKEN, max_body=1000)
    status, headers, body, received = call(app, "POST", "/api/saved", {**AUTH, "content-length": "1001"},
                                           [b"x" * 1001])
    assert status == 413 and received == []
    assert_one_line(headers, body, "1001 bytes", "limit is 1000", "--max-body")
    saved = json.dumps({"name": "ptx", "q": "pneumothorax", "mode": "bm25"}).encode()
    status, _, body, _ = call(app, "POST", "/api/saved", {**AUTH, "content-length": str(len(saved)),
                                                          "content-type": "application/json"}, [saved])
    assert status == 200, body


def test_a_streamed_body_is_413_as_soon_as_it_passes_max_body(index):
    app = create_app(index, max_body=1000)
    status, headers, body, received = call(app, "POST", "/api/ask", {"transfer-encoding": "chunked"},
                                           [b"x" * 600, b"x" * 600, b"x" * 600], stall=True)
    assert status == 413 and len(received) == 2  # the second chunk passed the limit: no third read
    assert_one_line(headers, body, "--max-body")


def test_a_body_that_does_not_arrive_in_time_is_408(index):
    app = create_app(index, body_timeout=0.3)
    start = time.monotonic()
    status, headers, body, _ = call(app, "POST", "/api/ask", {"content-length": "100"}, [b"{"], stall=True)
    assert status == 408 and time.monotonic() - start < 2
    assert_one_line(headers, body, "--body-timeout")


# -- the head limit, whole heads too -------------------------------------------------------------------
def test_a_whole_head_over_the_limit_is_431_and_a_long_request_line_414(index):
    client = TestClient(create_app(index))
    res = client.get("/api/health", headers={"X-Padding": "x" * (101 * 1024)})
    assert res.status_code == 431
    assert_one_line({k.lower(): v for k, v in res.headers.items()}, res.content, "request head", "limit")
    res = client.get("/api/search", params={"q": "x" * (MAX_HEAD_BYTES + 10)})
    assert res.status_code == 414
    assert "request line" in res.json()["detail"]
    assert client.get("/api/health", headers={"X-Padding": "x" * 8000}).status_code == 200


def test_q_that_is_not_utf8_is_422_with_the_sentence_python_gives(index):
    client = TestClient(create_app(index))
    res = client.get("/api/search?q=%FF")
    assert res.status_code == 422
    with pytest.raises(Exception) as python:
        index.search("\udcff")
    assert res.json()["detail"] == str(python.value) == "the query is not valid UTF-8 text"
    res = client.get("/api/search?q=pneumothorax&where=site%3D%FF")
    assert res.status_code == 422 and res.json()["detail"] == "where: not valid UTF-8 text"
    assert client.get("/api/search?q=pneumothorax%20%C3%A9").status_code == 200


# -- live: uvicorn with the server's options -----------------------------------------------------------
class Live:
    def __init__(self, app, limits: ServerLimits) -> None:
        import uvicorn

        self.sock = bind_socket("127.0.0.1", 0)
        self.port = self.sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="critical", access_log=False,
                                                    **uvicorn_limits(limits)))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> "Live":
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "uvicorn did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=5)

    def get(self, path: str, headers: dict | None = None) -> tuple[int, dict, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            conn.request("GET", path, headers=headers or {})
            res = conn.getresponse()
            return res.status, {k.lower(): v for k, v in res.getheaders()}, res.read()
        finally:
            conn.close()


def answer(sock: socket.socket) -> tuple[int, dict, bytes]:
    res = http.client.HTTPResponse(sock)
    res.begin()
    return res.status, {k.lower(): v for k, v in res.getheaders()}, res.read()


def slow_post(live: Live, auth: bool) -> socket.socket:
    sock = live.connect()
    head = ("POST /api/ask HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n"
            + (f"Authorization: Bearer {TOKEN}\r\n" if auth else "") + "\r\n")
    sock.sendall(head.encode() + b'{"question": "')
    return sock


def test_slow_unauthenticated_bodies_do_not_hold_the_slots(index):
    with Live(create_app(index, token=TOKEN), ServerLimits(max_connections=8, header_timeout=30)) as live:
        slow = [slow_post(live, auth=False) for _ in range(8)]
        try:
            for sock in slow:  # each is answered 401 at once, its body unread, and its slot given back
                assert answer(sock)[0] == 401
            start = time.monotonic()
            status, _, _ = live.get("/api/health", AUTH)
            assert status == 200 and time.monotonic() - start < 2
        finally:
            for sock in slow:
                sock.close()


def test_slow_bodies_with_the_token_are_408_after_the_body_timeout_and_free_their_slots(index):
    limits = ServerLimits(max_connections=4, header_timeout=30, body_timeout=1)
    with Live(create_app(index, token=TOKEN, body_timeout=1), limits) as live:
        slow = [slow_post(live, auth=True) for _ in range(4)]
        try:
            start = time.monotonic()
            for sock in slow:
                status, headers, body = answer(sock)
                assert status == 408
                assert_one_line(headers, body, "--body-timeout")
            assert time.monotonic() - start < 4
            deadline = time.monotonic() + 5
            while live.get("/api/health", AUTH)[0] != 200:  # the slots come back once the connections close
                assert time.monotonic() < deadline, "the slots were not given back"
                time.sleep(0.1)
        finally:
            for sock in slow:
                sock.close()


def test_a_huge_unauthenticated_body_is_answered_401_not_reset(index):
    with Live(create_app(index, token=TOKEN), ServerLimits()) as live, live.connect() as sock:
        sock.sendall(b"POST /api/ask HTTP/1.1\r\nHost: x\r\nContent-Length: 300000000\r\n\r\n")
        sent = 0
        try:
            while sent < 20_000_000:  # the server answers and drains; the client may be stopped any time
                sock.sendall(b"x" * 65536)
                sent += 65536
        except OSError:
            pass
        assert answer(sock)[0] == 401


def test_heads_over_the_limit_are_431_or_414_whole_or_in_pieces_and_read_not_reset(index):
    with Live(create_app(index), ServerLimits()) as live:
        with live.connect() as sock:  # 101 KB of headers in one piece
            sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\nX-Padding: " + b"x" * (101 * 1024) + b"\r\n\r\n")
            status, headers, body = answer(sock)
            assert status == 431
            assert_one_line(headers, body, "request head")
        with live.connect() as sock:  # a 1 MB GET: its request line alone is over the limit
            try:
                sock.sendall(b"GET /api/search?q=" + b"a" * (1024 * 1024) + b" HTTP/1.1\r\nHost: x\r\n\r\n")
            except OSError:
                pass
            status, headers, body = answer(sock)
            assert status == 414
            assert_one_line(headers, body, "request line")


def test_uvicorns_own_503_past_max_connections_carries_the_security_headers(index):
    with Live(create_app(index), ServerLimits(max_connections=1, header_timeout=30)) as live:
        with live.connect() as holder:
            holder.sendall(b"GET /api/health HTTP/1.1\r\n")  # holds the one slot
            deadline = time.monotonic() + 5
            while len(live.server.server_state.connections) != 1:
                assert time.monotonic() < deadline
                time.sleep(0.02)
            status, headers, body = live.get("/api/health")
            assert status == 503
            assert_one_line(headers, body, "busy", "--max-connections")
