"""Probes of data that leaves (issue 32, items 2 and 5): proxies, names, audit lines, exports, CSV cells.

Run:  .venv/bin/python benchmarks/faults_leaks.py [--reports 300] [--seed 0]

Everything runs in this process on a fresh index of synthetic reports (the demo generator's, the
hashing encoder: no model), the CLI through ``typer``'s runner and the web service through FastAPI's
test client. Two fake HTTP servers on 127.0.0.1 play the LLM endpoint and a proxy (each answers
every request with a chat completion, so a prompt sent to the wrong one would succeed, and be seen).
Every socket ``connect`` to an address that is not loopback is recorded and refused without touching
the network, and host names resolve through a table the probes set (``*.localhost`` names that point
away, names that move between the check and the call).

Families (rows; ``leaks`` must be 0, ``tracebacks`` 0):

* **proxy variables**: each of ``http_proxy``, ``HTTP_PROXY``, ``https_proxy``, ``HTTPS_PROXY``,
  ``all_proxy``, ``ALL_PROXY`` set to a local "proxy", with and without ``--llm-proxy`` (CLI ``ask``,
  Python): a leak is a prompt the variable's proxy saw, or an ``llm.jsonl`` line that does not name
  the address contacted (and the proxy, when named). Remote ``--llm-proxy`` values: a leak is one
  accepted (CLI, Python, ``create_app``).
* **names**: ``--llm-url`` / ``--llm-proxy`` names that resolve away (``*.localhost`` included), to
  several addresses one of which is remote, to an IPv4-mapped remote address, or that move after the
  check (DNS rebinding): a leak is a connection attempted to a remote address or a call accepted.
* **audit text**: draft, ask, search (short and long pasted queries), passages, report views,
  exports and saved runs over HTTP and the CLI; then every line of every audit file is scanned for
  any sentence of the index (25 characters or more): a leak is a line holding one.
* **export audit**: CLI ``export`` (csv, jsonl), ``saved run --out``, HTTP ``/api/export`` (csv,
  jsonl, json): a leak is an export whose delivered report ids no audit line names (ids or their hash
  and count).
* **audit write fails**: ``--audit-log /dev/full``, a folder as the audit file, a provenance path that
  is a folder, an HTTP audit file replaced by a folder, for export, saved run, search and ask: a leak
  is a file written, a result printed or answered, or an LLM called; ``files_named`` counts the
  errors that name the file.
* **csv formulas**: ids, metadata and sentences starting with ``= + - @``, tab or CR, and a CR inside a
  cell, exported by the CLI, ``saved run --out``, HTTP and Python: a leak is a cell a spreadsheet
  would run (or a row a bare CR splits).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import os
import socket
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PROXY_VARIABLES = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
NASTY = ("=HYPERLINK(\"http://x\")", "@SUM(A1)", "+1+1", "-2+3", "\tTAB", "\rCR")
MIN_SENTENCE = 25
KEYS = ("family", "probe", "tried", "detected", "wrong_answers", "leaks", "tracebacks", "files_named")


def _row(probe: str, **counts) -> dict:
    return {"family": "leaks", "probe": probe, **{k: counts.get(k, 0) for k in KEYS[2:]}}


# -- the world the probes run in --------------------------------------------------------------------------
class Recorder:
    """A server on 127.0.0.1 answering every request with a chat completion; ``seen`` keeps each."""

    def __init__(self, reply: str) -> None:
        self.seen: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _any(self):
                length = int(self.headers.get("Content-Length") or 0)
                outer.seen.append({"line": self.requestline, "body": self.rfile.read(length).decode("utf-8", "replace")})
                data = json.dumps({"model": "m", "choices": [{"message": {"content": reply},
                                                              "finish_reason": "stop"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_POST = do_GET = do_CONNECT = _any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class World:
    """Sockets watched, names resolved from a table, the hashing encoder in place of a model."""

    def __init__(self) -> None:
        self.remote: list = []  # every connect attempted to a non-loopback address
        self.dns: dict[str, list[str]] = {}
        self._saved: list = []

    def __enter__(self) -> "World":
        import radsift.models.encoder as encoder_module
        from radsift.models.hashing import HashingEncoder

        world, real_socket, real_getaddrinfo = self, socket.socket, socket.getaddrinfo

        class Watched(real_socket):
            def connect(self, address):
                host = address[0] if isinstance(address, tuple) else str(address)
                if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(host):
                    world.remote.append(address)
                    raise ConnectionRefusedError(f"probe: no connection to {host}")
                return super().connect(address)

        def getaddrinfo(host, port, *args, **kwargs):
            if host in world.dns:
                return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "",
                         (a, port or 0, 0, 0) if ":" in a else (a, port or 0)) for a in world.dns[host]]
            return real_getaddrinfo(host, port, *args, **kwargs)

        self._saved = [(socket, "socket", real_socket), (socket, "getaddrinfo", real_getaddrinfo),
                       (encoder_module.Encoder, "load", encoder_module.Encoder.__dict__["load"])]
        socket.socket, socket.getaddrinfo = Watched, getaddrinfo
        encoder_module.Encoder.load = classmethod(lambda cls, model=None, **kw: HashingEncoder(model))
        return self

    def __exit__(self, *exc) -> None:
        for owner, name, value in self._saved:
            setattr(owner, name, value)


def _loopback(host: str) -> bool:
    import ipaddress

    try:
        ip = ipaddress.ip_address(str(host).split("%", 1)[0])
    except ValueError:
        return False
    return (getattr(ip, "ipv4_mapped", None) or ip).is_loopback


def _cli(*args, env: dict | None = None) -> tuple[int, str, bool]:
    """Exit code, output and whether a traceback escaped, of ``radsift ARGS``."""
    from typer.testing import CliRunner

    from radsift.cli import app

    res = CliRunner().invoke(app, [str(a) for a in args], env=env)
    escaped = res.exception is not None and not isinstance(res.exception, SystemExit)
    return res.exit_code, res.output, escaped or "Traceback" in res.output


def _no_proxy_env(**set_) -> dict:
    env = {name: None for name in (*PROXY_VARIABLES, "no_proxy", "NO_PROXY")}
    env.update(set_)
    return env


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.is_file() else []


def _build(root: Path, reports) -> Path:
    from radsift.index import build_index
    from radsift.models.hashing import HashingEncoder

    build_index(root / "idx", reports, encoder=HashingEncoder(root / "model"), progress=False)
    return root / "idx"


# -- proxies and names -------------------------------------------------------------------------------------------
def probe_proxies(world: World, idx: Path, llm: Recorder, proxy: Recorder, named: Recorder) -> list[dict]:
    from radsift.errors import ConfigError
    from radsift.rag.llm import make_llm

    rows = []
    for with_named in (False, True):
        tried = detected = leaks = tb = 0
        for var in PROXY_VARIABLES:
            audit = idx.parent / f"llm-{var}-{with_named}.jsonl"
            extra = ["--llm-proxy", named.url] if with_named else []
            before = (len(proxy.seen), len(llm.seen), len(named.seen))
            code, out, escaped = _cli("ask", idx, "enlarged heart", "--llm-url", llm.url + "/v1", "--audit-log", audit,
                                      *extra, env=_no_proxy_env(**{var: proxy.url}))
            tried, tb = tried + 1, tb + escaped
            results = [x for x in _lines(audit) if x.get("event") == "llm_result"]
            want = named if with_named else llm
            result = results[-1] if results else {}
            ok_audit = result.get("contacted") == [f"127.0.0.1:{want.port}"] and \
                result.get("proxy") == (named.url if with_named else None)
            leaked = len(proxy.seen) > before[0] or code != 0 or not ok_audit
            leaks += leaked
            detected += (not leaked) and (len(named.seen) > before[2] if with_named else len(llm.seen) > before[1])
            # Python, the same
            os.environ[var] = proxy.url
            try:
                n = len(proxy.seen)
                make_llm(llm.url, proxy=named.url if with_named else None).generate(
                    [{"role": "user", "content": "hi"}], max_tokens=4, timeout=5)
                tried, leaks = tried + 1, leaks + (len(proxy.seen) > n)
                detected += len(proxy.seen) == n
            finally:
                del os.environ[var]
        rows.append(_row(f"proxy variables, {'with' if with_named else 'without'} --llm-proxy (CLI ask, Python)",
                         tried=tried, detected=detected, leaks=leaks, tracebacks=tb))
    tried = detected = leaks = tb = 0
    from radsift.serve import create_app

    for remote in ("http://192.0.2.2:9102", "http://10.0.0.1:3128", "http://[2001:db8::1]:3128"):
        code, out, escaped = _cli("ask", idx, "enlarged heart", "--llm-url", llm.url, "--llm-proxy", remote,
                                  "--audit-log", idx.parent / "llm-remote.jsonl", env=_no_proxy_env())
        tried, tb, leaks, detected = tried + 1, tb + escaped, leaks + (code == 0), detected + (code == 2)
        for attempt in (lambda r=remote: make_llm(llm.url, proxy=r),
                        lambda r=remote: create_app(idx, llm={"url": llm.url, "proxy": r})):
            tried += 1
            try:
                attempt()
                leaks += 1
            except ConfigError:
                detected += 1
    rows.append(_row("remote --llm-proxy (CLI, Python, serve)", tried=tried, detected=detected,
                     leaks=leaks + len(world.remote), tracebacks=tb))
    return rows


def probe_names(world: World, idx: Path, llm: Recorder, named: Recorder) -> list[dict]:
    from radsift.errors import ConfigError
    from radsift.rag.llm import LLMError, make_llm

    world.dns.update({"evil.localhost": ["203.0.113.5"], "mixed.localhost": ["127.0.0.1", "10.0.0.7"],
                      "mapped.localhost": ["::ffff:10.0.0.7"], "llm.example": ["198.51.100.1"],
                      "v6.localhost": ["2001:db8::5"]})
    tried = detected = leaks = tb = 0
    start_remote = len(world.remote)
    for name in ("evil.localhost", "mixed.localhost", "mapped.localhost", "llm.example", "v6.localhost"):
        for args in (["--llm-url", f"http://{name}:{llm.port}/v1"],
                     ["--llm-url", llm.url, "--llm-proxy", f"http://{name}:{named.port}"]):
            n = len(llm.seen) + len(named.seen)
            code, out, escaped = _cli("ask", idx, "enlarged heart", *args, "--audit-log", idx.parent / "names.jsonl",
                                      env=_no_proxy_env())
            tried, tb = tried + 1, tb + escaped
            refused = code == 2 and "not this machine" in out
            detected += refused
            leaks += (not refused) or len(llm.seen) + len(named.seen) > n
    for kind in ("url", "proxy"):  # DNS rebinding: local when checked, remote at the call
        world.dns["moving.localhost"] = ["127.0.0.1"]
        url = f"http://moving.localhost:{llm.port}" if kind == "url" else llm.url
        proxy = f"http://moving.localhost:{named.port}" if kind == "proxy" else None
        try:
            client = make_llm(url, proxy=proxy)
        except ConfigError:
            tried, leaks = tried + 1, leaks + 1  # a local name must be accepted: the probe is broken
            continue
        world.dns["moving.localhost"] = ["198.51.100.9"]
        n = len(llm.seen) + len(named.seen)
        tried += 1
        try:
            client.generate([{"role": "user", "content": "hi"}], max_tokens=4, timeout=5)
            leaks += 1
        except LLMError as exc:
            detected += "refused" in str(exc)
            leaks += ("refused" not in str(exc)) or len(llm.seen) + len(named.seen) > n
    leaks += len(world.remote) - start_remote
    return [_row("names resolved, every address checked (*.localhost, mixed, mapped, rebinding)", tried=tried,
                 detected=detected, leaks=leaks, tracebacks=tb)]


# -- audit lines ---------------------------------------------------------------------------------------------------
def _index_sentences(reports) -> set[str]:
    from radsift.text.sentences import split_sentences

    out = set()
    for r in reports:
        for text in r.sections.values():
            out.update(text[a:b].strip() for a, b in split_sentences(text) if b - a >= MIN_SENTENCE)
    return out


def _http_traffic(client, reports) -> None:
    findings = [r.sections.get("findings", "") for r in reports if r.sections.get("findings")]
    client.post("/api/ask", json={"question": findings[0], "task": "draft"})
    client.post("/api/ask", json={"question": findings[1][:60], "task": "draft"})
    client.post("/api/ask", json={"question": "is the heart enlarged?"})
    client.get("/api/search", params={"q": "pneumothorax"})
    client.get("/api/search", params={"q": " ".join(findings[2:6])[:1000]})  # a pasted report
    client.get("/api/passages", params={"q": "effusion | history"})
    client.get(f"/api/reports/{reports[0].id}", params={"q": "effusion"})
    for fmt in ("csv", "jsonl", "json"):
        client.get("/api/export", params={"q": "pleural effusion", "format": fmt})
    client.post("/api/saved", json={"name": "eff", "q": "pleural effusion"})
    client.post("/api/saved/eff/run")


def _cli_traffic(idx: Path, reports, llm: Recorder, out: Path) -> int:
    findings = [r.sections.get("findings", "") for r in reports if r.sections.get("findings")]
    runs = [("search", idx, "pneumothorax"), ("search", idx, " ".join(findings[3:7])[:1000]),
            ("search", idx, "effusion | history"), ("export", idx, "pleural effusion", "--out", out / "c.csv"),
            ("saved", "add", idx, "eff", "pleural effusion"), ("saved", "run", idx, "eff"),
            ("saved", "run", idx, "eff", "--out", out / "s.jsonl"),
            ("ask", idx, "is the heart enlarged?", "--llm-url", llm.url),
            ("draft-impression", idx, "--findings", findings[0], "--llm-url", llm.url)]
    return sum(_cli(*r, env=_no_proxy_env())[2] for r in runs)


def probe_audit_text(idx: Path, reports, llm: Recorder) -> list[dict]:
    from fastapi.testclient import TestClient

    from radsift.search import Index
    from radsift.serve import create_app

    http_audit = idx.parent / "http-audit.jsonl"
    out = idx.parent / "exports"
    out.mkdir(exist_ok=True)
    client = TestClient(create_app(Index.open(idx), audit_log=http_audit, llm={"url": llm.url},
                                   saved_dir=idx.parent / "saved-http"))
    _http_traffic(client, reports)
    tb = _cli_traffic(idx, reports, llm, out)
    sentences = _index_sentences(reports)
    tried = leaks = summarised = 0
    for path in [http_audit, *sorted((idx / "audit").glob("*.jsonl"))]:
        for raw in path.read_text().splitlines():
            tried += 1
            leaks += any(s in raw for s in sentences)
            summarised += '"sha256":' in raw
    return [_row("audit lines hold no sentence of the index (draft, ask, search, passages, report, export, saved)",
                 tried=tried, detected=summarised, leaks=leaks, tracebacks=tb)]


# -- exports --------------------------------------------------------------------------------------------------------
def _ids_audited(lines: list[dict], ids: list[str]) -> bool:
    digest = hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()
    return any(x.get("event") == "export" and x.get("report_ids_sha256") == digest and x.get("report_ids_count") == len(ids)
               for x in lines)


def _file_ids(path: Path) -> list[str]:
    if path.suffix == ".csv":
        return [r["report_id"] for r in csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"), newline=""))]
    return [json.loads(x)["report_id"] for x in path.read_text().splitlines()]


def probe_export_audit(idx: Path) -> list[dict]:
    from fastapi.testclient import TestClient

    from radsift.search import Index
    from radsift.serve import create_app

    out = idx.parent / "exp"
    out.mkdir(exist_ok=True)
    tried = detected = tb = 0
    _cli("saved", "add", idx, "ptx", "pneumothorax", env=_no_proxy_env())
    for args in (("export", idx, "pneumothorax", "--out", out / "a.csv"),
                 ("export", idx, "no pleural effusion", "--out", out / "b.jsonl"),
                 ("saved", "run", idx, "ptx", "--out", out / "c.csv")):
        code, _, escaped = _cli(*args, env=_no_proxy_env())
        tried, tb = tried + 1, tb + escaped
        detected += code == 0 and _ids_audited(_lines(idx / "audit" / "exports.jsonl"), _file_ids(args[-1]))
    audit = idx.parent / "exp-http.jsonl"
    client = TestClient(create_app(Index.open(idx), audit_log=audit))
    for fmt in ("csv", "jsonl", "json"):
        res = client.get("/api/export", params={"q": "pneumothorax", "format": fmt})
        if fmt == "csv":
            ids = [r["report_id"] for r in csv.DictReader(io.StringIO(res.text, newline=""))]
        elif fmt == "jsonl":
            ids = [json.loads(x)["report_id"] for x in res.text.splitlines()]
        else:
            ids = [r["report_id"] for r in res.json()["rows"]]
        tried += 1
        detected += res.status_code == 200 and _ids_audited(_lines(audit), ids)
    return [_row("exports audited with their report ids (CLI export, saved run --out, HTTP csv/jsonl/json)",
                 tried=tried, detected=detected, leaks=tried - detected, tracebacks=tb)]


def probe_audit_fails(idx: Path, llm: Recorder) -> list[dict]:
    from fastapi.testclient import TestClient

    from radsift.search import Index
    from radsift.serve import create_app

    root = idx.parent / "fails"
    root.mkdir(exist_ok=True)
    folder = root / "audit-folder"
    folder.mkdir(exist_ok=True)
    full = "/dev/full" if Path("/dev/full").exists() else None
    tried = detected = leaks = tb = named = 0
    cases = []
    for bad in filter(None, (full, folder)):
        for cmd in (("export", idx, "pneumothorax", "--out"), ("saved", "run", idx, "ptx", "--out")):
            cases.append((cmd, root / f"f{len(cases)}.csv", ["--audit-log", bad], str(bad)))
        cases.append((("search", idx, "pneumothorax", "--audit-log", bad), None, [], str(bad)))
        cases.append((("ask", idx, "enlarged heart", "--llm-url", llm.url, "--audit-log", bad), None, [], str(bad)))
    side_out = root / "p.csv"
    (root / "p.csv.provenance.json").mkdir(exist_ok=True)
    cases.append((("export", idx, "pneumothorax", "--out"), side_out, [], "p.csv.provenance.json"))
    _cli("saved", "add", idx, "ptx", "pneumothorax", env=_no_proxy_env())
    for cmd, out, extra, name in cases:
        n_llm = len(llm.seen)
        args = [*cmd, *([out] if out is not None else []), *extra]
        code, text, escaped = _cli(*args, env=_no_proxy_env())
        tried, tb = tried + 1, tb + escaped
        wrote = out is not None and (out.exists() or any(p.name.startswith("." + out.name) for p in root.iterdir()))
        printed = cmd[0] == "search" and "demo-" in text
        called = len(llm.seen) > n_llm
        refused = code == 2 and text.strip().startswith("error:")
        leaks += wrote or printed or called or not refused
        detected += refused
        named += name in " ".join(text.split())
    for what in ("export", "search", "ask"):  # the HTTP audit file replaced by a folder
        audit = root / f"http-{what}.jsonl"
        client = TestClient(create_app(Index.open(idx), audit_log=audit, llm={"url": llm.url}))
        audit.unlink()
        audit.mkdir()
        n_llm = len(llm.seen)
        res = (client.get("/api/export", params={"q": "pneumothorax"}) if what == "export" else
               client.get("/api/search", params={"q": "pneumothorax"}) if what == "search" else
               client.post("/api/ask", json={"question": "enlarged heart"}))
        tried += 1
        ok = res.status_code == 503 and "demo-" not in res.text and len(llm.seen) == n_llm
        detected, leaks = detected + ok, leaks + (not ok)
        named += str(audit) in res.text
    return [_row("failed audit writes (/dev/full, folder, provenance folder; CLI and HTTP)", tried=tried,
                 detected=detected, leaks=leaks, tracebacks=tb, files_named=named)]


# -- CSV cells --------------------------------------------------------------------------------------------------------
def _formula_cells(text: str, expected_rows: int) -> tuple[int, int]:
    rows = list(csv.reader(io.StringIO(text, newline="")))
    cells = [c for r in rows for c in r]

    def number(c):
        try:
            float(c)
            return True
        except ValueError:
            return False

    bad = sum(c.startswith(FORMULA_STARTS) and not number(c) for c in cells)
    return len(cells), bad + (len(rows) != expected_rows)


def probe_csv(root: Path) -> list[dict]:
    from fastapi.testclient import TestClient

    from radsift.records import Report
    from radsift.search import Index
    from radsift.search.cohort import collect_cohort, render_cohort
    from radsift.serve import create_app

    reports = [Report(f"{s}{i}", {"findings": f"{s} pneumothorax is present."}, {"site": f"{s}x", "n": -i})
               for i, s in enumerate(NASTY)]
    reports.append(Report("plain", {"findings": "Small pneumothorax."}, {"site": "ok\r=cmd()", "n": 1}))
    (root / "csv").mkdir()
    idx = _build(root / "csv", reports)
    expected = len(reports) + 1
    texts = []
    out = root / "csv" / "out"
    out.mkdir()
    tb = 0
    code, _, escaped = _cli("export", idx, "pneumothorax", "--include", "all", "--mode", "bm25", "--out", out / "a.csv",
                            env=_no_proxy_env())
    tb += escaped
    texts.append((out / "a.csv").read_text(encoding="utf-8") if code == 0 else "")
    _cli("saved", "add", idx, "p", "pneumothorax", "--include", "all", "--mode", "bm25", env=_no_proxy_env())
    code, _, escaped = _cli("saved", "run", idx, "p", "--out", out / "b.csv", env=_no_proxy_env())
    tb += escaped
    texts.append((out / "b.csv").read_text(encoding="utf-8") if code == 0 else "")
    index = Index.open(idx)
    texts.append(TestClient(create_app(index)).get("/api/export", params={
        "q": "pneumothorax", "include": "all", "mode": "bm25"}).text)
    texts.append(render_cohort(collect_cohort(index, "pneumothorax", include="all", mode="bm25"), "csv"))
    tried = leaks = 0
    for text in texts:
        n, bad = _formula_cells(text, expected)
        tried, leaks = tried + n, leaks + bad + (n == 0)
    return [_row("CSV cells neutralised, every column (CLI, saved run, HTTP, Python)", tried=tried,
                 detected=tried - leaks, leaks=leaks, tracebacks=tb)]


# -- running them ------------------------------------------------------------------------------------------------------
def run(args) -> list[dict]:
    """Every probe of this family on a fresh index of ``args.reports`` synthetic reports."""
    from radsift.demo import generate_reports

    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp, World() as world:
        root = Path(tmp)
        reports = [d.report for d in generate_reports(n=args.reports, seed=args.seed)]
        (root / "main").mkdir()
        idx = _build(root / "main", reports)
        llm, proxy, named = Recorder("Effusion [1]."), Recorder("From the proxy [1]."), Recorder("Named [1].")
        probes = [(probe_proxies, (world, idx, llm, proxy, named)), (probe_names, (world, idx, llm, named)),
                  (probe_audit_text, (idx, reports, llm)), (probe_export_audit, (idx,)),
                  (probe_audit_fails, (idx, llm)), (probe_csv, (root,))]
        try:
            for probe, probe_args in probes:
                try:
                    rows += probe(*probe_args)
                except Exception as exc:  # noqa: BLE001 - a probe that crashes is a finding, not the end of the run
                    rows.append(_row(f"{probe.__name__} crashed: {type(exc).__name__}: {str(exc)[:80]}", tried=1,
                                     leaks=1, tracebacks=1))
        finally:
            for server in (llm, proxy, named):
                server.close()
        rows.append(_row("(remote connections attempted, all probes)", tried=1, leaks=len(world.remote)))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    rows = run(args)
    print(f"\n{args.reports} reports, {time.perf_counter() - start:.0f} s\n")
    print("| " + " | ".join(KEYS) + " |")
    print("|" + "---|" * len(KEYS))
    for r in rows:
        print("| " + " | ".join(str(r[k]) for k in KEYS) + " |")
    leaks, tracebacks = sum(r["leaks"] for r in rows), sum(r["tracebacks"] for r in rows)
    print(f"\nIn all: {sum(r['tried'] for r in rows)} tried, {leaks} leaks, {tracebacks} tracebacks.")
    return 1 if leaks or tracebacks else 0


if __name__ == "__main__":
    raise SystemExit(main())
