"""Fault probes of the server's limits and the one input policy (issue 32 items 3 and 4), counted.

Run:  .venv/bin/python benchmarks/faults_policy.py [--reports 60] [--slow 64] [--huge-mb 50]

A small index of the demo generator's reports with the hashing encoder (no model: seconds), served by
uvicorn in a thread with ``radsift serve``'s own options, and driven by raw sockets, the CLI
(in-process), Python and the HTTP API:

* **slow bodies**: ``--slow`` connections trickle a body to ``POST /api/ask`` without the token (each
  must be answered 401 at once) or with it (408 after ``--body-timeout``); then a real request must be
  answered 200 within 2 s (a wrong answer: a 503 or a slow one);
* **huge bodies**: a 300 MB ``Content-Length`` without the token, ``--huge-mb`` of it sent: 401, not a
  reset, and the server's memory must not grow by the body; with the token: 413 before it is read;
* **whole heads**: a 101 KB head sent in one piece (431), a 1 MB GET (414, read, not reset), a
  20 KB head (200);
* **limit table**: the same inputs through the CLI, Python and HTTP must be accepted or refused alike,
  in the same one sentence (a CLI refusal one ``error:`` line);
* **saved runs**: a ``saved run --new --out`` that fails and an API run answered 503 must record nothing;
* **--out**: every command that writes a file refuses an existing one without ``--force``.

Prints one markdown table: tried, detected (refused as the policy says), wrong answers, leaks
(always 0 here: nothing of these probes can leave), tracebacks.
"""

from __future__ import annotations

import argparse
import http.client
import resource
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

FAMILY = "policy"
TOKEN = "probe-token-0123456789abcdef"


def row(probe: str, tried: int = 0, detected: int = 0, wrong: int = 0, tracebacks: int = 0, note: str = "") -> dict:
    return {"family": FAMILY, "probe": probe, "tried": tried, "detected": detected, "wrong_answers": wrong,
            "leaks": 0, "tracebacks": tracebacks, "files_named": 0, "note": note}


class Live:
    """uvicorn serving ``app`` in a thread with the server's options."""

    def __init__(self, app, limits) -> None:
        import uvicorn

        from radsift.serve.server import bind_socket, uvicorn_limits

        self.sock = bind_socket("127.0.0.1", 0)
        self.port = self.sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="critical", access_log=False,
                                                    **uvicorn_limits(limits)))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> "Live":
        self.thread.start()
        while not self.server.started:
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=10)

    def get(self, path: str, headers: dict | None = None) -> int:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("GET", path, headers=headers or {})
            res = conn.getresponse()
            res.read()
            return res.status
        finally:
            conn.close()


def status_of(sock: socket.socket) -> int | str:
    try:
        res = http.client.HTTPResponse(sock)
        res.begin()
        body = res.read()
        return res.status if b"Traceback" not in body else "traceback"
    except OSError as exc:
        return type(exc).__name__  # a reset: the client never read an answer


def slow_bodies(index, n: int, with_token: bool) -> dict:
    from radsift.serve import create_app
    from radsift.serve.server import ServerLimits

    limits = ServerLimits(body_timeout=1.0, header_timeout=30)
    want = 408 if with_token else 401
    with Live(create_app(index, token=TOKEN, body_timeout=limits.body_timeout), limits) as live:
        socks = []
        for _ in range(n):
            s = live.connect()
            s.sendall(("POST /api/ask HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n"
                       + (f"Authorization: Bearer {TOKEN}\r\n" if with_token else "") + "\r\n{\"question\": \"").encode())
            socks.append(s)
        statuses = [status_of(s) for s in socks]
        time.sleep(0.2)
        start = time.monotonic()
        real = live.get("/api/health", {"Authorization": f"Bearer {TOKEN}"})
        took = time.monotonic() - start
        for s in socks:
            s.close()
    detected = sum(1 for s in statuses if s == want)
    wrong = (n - detected) + (0 if real == 200 and took < 2 else 1)
    return row(f"slow bodies ({'with' if with_token else 'without'} the token) x{n}", n + 1, detected, wrong,
               statuses.count("traceback"), f"then a real request: {real} in {took * 1000:.0f} ms")


def huge_body(index, megabytes: int, with_token: bool) -> dict:
    from radsift.serve import create_app
    from radsift.serve.server import ServerLimits

    want = 413 if with_token else 401
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with Live(create_app(index, token=TOKEN), ServerLimits()) as live, live.connect() as sock:
        sock.sendall(b"POST /api/ask HTTP/1.1\r\nHost: x\r\nContent-Length: 300000000\r\n"
                     + (f"Authorization: Bearer {TOKEN}\r\n".encode() if with_token else b"") + b"\r\n")
        chunk = b"x" * 65536
        try:
            for _ in range(megabytes * 16):
                sock.sendall(chunk)
        except OSError:
            pass  # the server answered and stopped reading: that is the point
        status = status_of(sock)
    grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    wrong = int(status != want) + int(grew > 64)
    return row(f"huge body, 300 MB declared ({'with' if with_token else 'without'} the token)", 1,
               int(status == want), wrong, int(status == "traceback"), f"{status}; peak memory +{grew:.0f} MB")


def whole_heads(index) -> list[dict]:
    from radsift.serve import create_app
    from radsift.serve.server import ServerLimits

    cases = [("101 KB head in one piece", b"GET /api/health HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"x" * (101 * 1024)
              + b"\r\n\r\n", 431),
             ("1 MB GET", b"GET /api/search?q=" + b"a" * (1 << 20) + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
             ("20 KB head (within the limit)", b"GET /api/health HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"x" * 20000
              + b"\r\n\r\n", 200)]
    out = []
    with Live(create_app(index), ServerLimits()) as live:
        for name, data, want in cases:
            with live.connect() as sock:
                try:
                    sock.sendall(data)
                except OSError:
                    pass
                status = status_of(sock)
            out.append(row(f"head: {name}", 1, int(status == want), int(status != want), int(status == "traceback"),
                           str(status)))
    return out


#: (query, options as text) of the limit table probe.
TABLE = [("pneumothorax", {"k": "5000"}), ("pneumothorax", {"k": "1000"}), ("pneumothorax", {"k": "1e9"}),
         ("pneumothorax", {"k": "0"}), ("pneumothorax", {"rerank": "5000"}), ("pneumothorax", {"offset": "2000000"}),
         ("pneumothorax", {"alpha": "abc"}), ("pneumothorax", {"mode": "bogus"}), ("effusion " * 111, {}),
         ("effusion " * 100 + "   " * 400, {}), ("x" * 1001, {}), ("\u200b", {}), ("pneumo\udcffthorax", {}),
         ("pneumo\x00thorax", {})]
FLAGS = {"k": "-k", "rerank": "--rerank", "offset": "--offset", "alpha": "--alpha", "mode": "--mode"}


def limit_table(index) -> dict:
    from urllib.parse import quote

    from fastapi.testclient import TestClient
    from typer.testing import CliRunner

    from radsift.cli import app as cli_app
    from radsift.errors import ConfigError
    from radsift.search.options import from_wire
    from radsift.serve import create_app

    client = TestClient(create_app(index))
    tried = detected = wrong = tracebacks = 0
    for query, options in TABLE:
        opts = {"mode": "bm25", **options}
        args = ["search", str(index.path), query, "--json"] + [a for k, v in opts.items() for a in (FLAGS[k], v)]
        res = CliRunner().invoke(cli_app, args)
        lines = res.output.strip().splitlines()
        cli = None if res.exit_code == 0 else (lines[0][7:] if len(lines) == 1 and lines[0].startswith("error: ")
                                               else "not one line")
        tracebacks += "Traceback" in res.output or (res.exception is not None and not isinstance(res.exception, SystemExit))
        try:
            index.search(query, **{k: from_wire(k, v) for k, v in opts.items()})
            py = None
        except ConfigError as exc:
            py = str(exc)
        except Exception:  # noqa: BLE001 - a traceback, counted
            py, tracebacks = "traceback", tracebacks + 1
        raw = query.encode("utf-8", "surrogateescape")
        url = "/api/search?q=" + quote(raw, safe="") + "".join(f"&{k}={quote(v)}" for k, v in opts.items())
        r = client.get(url)
        api = None if r.status_code == 200 else (r.json().get("detail") if r.status_code == 422 else f"HTTP {r.status_code}")
        tracebacks += "Traceback" in r.text
        tried += 1
        same = cli == py == api
        wrong += 0 if same else 1
        detected += 1 if same and cli is not None else 0
        if not same:
            print(f"differs: {query[:40]!r} {options}: CLI {cli!r} / Python {py!r} / HTTP {api!r}", file=sys.stderr)
    return row("limit table: CLI / Python / HTTP alike", tried, detected, wrong, tracebacks,
               f"each input three ways; {detected} refused alike in one sentence, the rest answered alike")


def saved_runs(index, root: Path) -> dict:
    from fastapi.testclient import TestClient
    from typer.testing import CliRunner

    from radsift.cli import app as cli_app
    from radsift.search.saved import SavedSearches
    from radsift.serve import create_app

    saved = SavedSearches.of_index(index.path)
    wrong = tracebacks = detected = 0
    for i, how in enumerate(("cli --out a folder", "api 503")):
        name = f"probe{i}"
        saved.add(index, name, "pneumothorax", mode="bm25")
        if how.startswith("cli"):
            folder = root / f"out{i}.csv"
            folder.mkdir()
            res = CliRunner().invoke(cli_app, ["saved", "run", str(index.path), name, "--new", "--out", str(folder)])
            failed = res.exit_code != 0
            tracebacks += "Traceback" in res.output
        else:
            audit = root / f"audit{i}.jsonl"
            client = TestClient(create_app(index, audit_log=audit))
            audit.unlink(missing_ok=True)
            audit.mkdir()
            failed = client.post(f"/api/saved/{name}/run", params={"new": "true"}).status_code == 503
        recorded = saved.get(name).last_run is not None
        detected += int(failed and not recorded)
        wrong += int(recorded)
    return row("saved run that fails records nothing", 2, detected, wrong, tracebacks)


def out_overwrite(index, root: Path) -> dict:
    from typer.testing import CliRunner

    from radsift.cli import app as cli_app
    from radsift.search.saved import SavedSearches

    queries = root / "q.tsv"
    queries.write_text("q1\tpneumothorax\n")
    SavedSearches.of_index(index.path).add(index, "probe-out", "pneumothorax", mode="bm25")
    corpus = root / "corpus"
    corpus.mkdir()
    (corpus / "reports.csv").write_text("precious\n")
    cases = [("export", ["export", str(index.path), "pneumothorax", "--mode", "bm25", "--out"], root / "c.csv"),
             ("saved run", ["saved", "run", str(index.path), "probe-out", "--out"], root / "s.csv"),
             ("run", ["run", str(index.path), "--queries", str(queries), "--mode", "bm25", "--out"], root / "r.trec"),
             ("demo-corpus", ["demo-corpus", "--n", "10", "--out"], corpus)]
    wrong = tracebacks = detected = 0
    for _, args, target in cases:
        probe = target / "reports.csv" if target.is_dir() else target
        if not target.is_dir():
            target.write_text("precious\n")
        res = CliRunner().invoke(cli_app, [*args, str(target)])
        kept = probe.read_text() == "precious\n"
        one_line = res.exit_code == 2 and len(res.output.strip().splitlines()) == 1 and "--force" in res.output
        detected += int(kept and one_line)
        wrong += int(not kept)
        tracebacks += "Traceback" in res.output
    return row("--out onto an existing file", len(cases), detected, wrong, tracebacks)


def run(args) -> list[dict]:
    """The probes of this family (see the module's docs), one row each."""
    from radsift.demo import generate_reports
    from radsift.index import build_index
    from radsift.models import encoder as encoder_module
    from radsift.models.hashing import HashingEncoder
    from radsift.search import Index

    with tempfile.TemporaryDirectory(prefix="faults-policy-") as tmp:
        root = Path(tmp)
        model = root / "model"
        enc = HashingEncoder(model)
        # The CLI opens the index's model by its folder: the hashing encoder answers for it (no download).
        encoder_module.Encoder.load = classmethod(lambda cls, m=None, **kw: HashingEncoder(m or model))
        build_index(root / "idx", [d.report for d in generate_reports(n=args.reports, seed=0)], encoder=enc,
                    progress=False)
        index = Index.open(root / "idx", encoder=enc)
        # bench_faults.py passes only the shared options: the family's own take their defaults here
        slow, huge_mb = getattr(args, "slow", SLOW), getattr(args, "huge_mb", HUGE_MB)
        rows = [slow_bodies(index, slow, with_token=False), slow_bodies(index, slow, with_token=True),
                huge_body(index, huge_mb, with_token=False), huge_body(index, huge_mb, with_token=True),
                *whole_heads(index), limit_table(index), saved_runs(index, root), out_overwrite(index, root)]
    return rows


#: Slow connections (the server's default --max-connections) and MB of the 300 MB body actually sent.
SLOW, HUGE_MB = 64, 50


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reports", type=int, default=60)
    parser.add_argument("--slow", type=int, default=SLOW, help="slow connections (the default --max-connections)")
    parser.add_argument("--huge-mb", type=int, default=HUGE_MB, help="MB of the 300 MB body actually sent")
    rows = run(parser.parse_args())
    keys = ("probe", "tried", "detected", "wrong_answers", "leaks", "tracebacks", "note")
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(str(r[k]) for k in keys) + " |")
    total = {k: sum(r[k] for r in rows) for k in ("tried", "wrong_answers", "leaks", "tracebacks")}
    print(f"\n{total['tried']} tried, {total['wrong_answers']} wrong answers, {total['leaks']} leaks, "
          f"{total['tracebacks']} tracebacks")
    return 1 if total["wrong_answers"] or total["tracebacks"] else 0


if __name__ == "__main__":
    sys.exit(main())
