"""Where a prompt goes (issue 32, item 2): the LLM client ignores proxy variables, uses a proxy only
when named (``--llm-proxy``) and then under the same this-machine rule, resolves every host name
(``*.localhost`` included) and checks every address, at the options and again at each connection,
and ``llm.jsonl`` records the proxy and the address actually contacted.

Two fake servers on 127.0.0.1: an OpenAI-compatible endpoint and a "proxy" that answers every
request itself (a valid chat completion), so a prompt sent to it would succeed, and be seen.
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from typer.testing import CliRunner

from radsift.errors import ConfigError
from radsift.index import build_index
from radsift.models.hashing import HashingEncoder
from radsift.rag.llm import AuditedLLM, LLMError, make_llm
from radsift.rag.llm.network import check_host, is_loopback, proxy_url
from radsift.rag.llm.openai_compat import check_url
from radsift.records import Report
from radsift.search import Index
from radsift.serve.audit import AuditLog

PROXY_VARIABLES = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")
SECRET = "Small right apical pneumothorax in patient MRN 4242."


class Recorder:
    """A server on 127.0.0.1 that answers every request with a chat completion and keeps the request line
    and body of each (``seen``)."""

    def __init__(self, reply: str) -> None:
        self.seen: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _any(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
                outer.seen.append({"line": self.requestline, "body": body})
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


@pytest.fixture()
def llm_server():
    server = Recorder("From the endpoint [1].")
    yield server
    server.close()


@pytest.fixture()
def proxy_server():
    server = Recorder("From the proxy [1].")
    yield server
    server.close()


def _ask(llm) -> str:
    return llm.generate([{"role": "user", "content": SECRET}], max_tokens=8, timeout=5).text


# -- proxy variables are ignored ---------------------------------------------------------------------
@pytest.mark.parametrize("variable", PROXY_VARIABLES)
def test_a_proxy_variable_is_ignored_the_prompt_reaches_the_endpoint_only(variable, llm_server, proxy_server,
                                                                          monkeypatch):
    for name in (*PROXY_VARIABLES, "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, proxy_server.url)
    assert _ask(make_llm(llm_server.url + "/v1")) == "From the endpoint [1]."
    assert len(llm_server.seen) == 1 and SECRET in llm_server.seen[0]["body"]
    assert proxy_server.seen == []


def test_every_proxy_variable_at_once_and_no_proxy_change_nothing(llm_server, proxy_server, monkeypatch):
    for name in PROXY_VARIABLES:
        monkeypatch.setenv(name, proxy_server.url)
    monkeypatch.setenv("NO_PROXY", "example.org")  # not this host: the proxy would be used for it
    monkeypatch.setenv("no_proxy", "example.org")
    _ask(make_llm(llm_server.url))
    assert len(llm_server.seen) == 1 and proxy_server.seen == []


# -- --llm-proxy -----------------------------------------------------------------------------------------
def test_a_named_proxy_is_used_and_recorded(llm_server, proxy_server, tmp_path, monkeypatch):
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")  # ignored: --llm-proxy names the proxy
    audit = tmp_path / "llm.jsonl"
    llm = AuditedLLM(make_llm(llm_server.url, proxy=proxy_server.url), AuditLog(audit), client="cli")
    assert _ask(llm) == "From the proxy [1]."
    assert llm_server.seen == [] and len(proxy_server.seen) == 1
    # an http proxy gets the absolute URL of the endpoint in its request line
    assert proxy_server.seen[0]["line"].startswith(f"POST {llm_server.url}/v1/chat/completions")
    call, result = [json.loads(x) for x in audit.read_text().splitlines()]
    assert call["proxy"] == result["proxy"] == proxy_server.url
    assert call["endpoint"] == f"{llm_server.url}/v1/chat/completions"
    assert result["contacted"] == [f"127.0.0.1:{proxy_server.port}"]
    assert SECRET not in audit.read_text()


def test_without_a_proxy_the_audit_records_the_endpoint_address_contacted(llm_server, proxy_server, tmp_path,
                                                                          monkeypatch):
    monkeypatch.setenv("http_proxy", proxy_server.url)
    audit = tmp_path / "llm.jsonl"
    _ask(AuditedLLM(make_llm(llm_server.url), AuditLog(audit), client="cli"))
    result = json.loads(audit.read_text().splitlines()[-1])
    assert result["proxy"] is None and result["contacted"] == [f"127.0.0.1:{llm_server.port}"]


def test_a_remote_proxy_is_refused_unless_allowed():
    for proxy in ("http://192.0.2.2:9102", "http://10.0.0.1:3128", "http://[2001:db8::1]:3128"):
        with pytest.raises(ConfigError, match="--llm-proxy .*--allow-remote-llm"):
            make_llm("http://127.0.0.1:8080/v1", proxy=proxy)
        assert make_llm("http://127.0.0.1:8080/v1", proxy=proxy, allow_remote=True).proxy == proxy
    for bad in ("socks5://127.0.0.1:1080", "127.0.0.1:3128", "http://127.0.0.1:3128/path", "", "http://:99"):
        with pytest.raises(ConfigError, match="--llm-proxy"):
            proxy_url(bad, allow_remote=False)
    with pytest.raises(ConfigError, match="--llm-proxy go with --llm-url|--llm-proxy go"):
        make_llm(None, proxy="http://127.0.0.1:3128")


def test_proxy_credentials_are_never_written(llm_server, proxy_server, tmp_path):
    audit = tmp_path / "llm.jsonl"
    proxy = f"http://user:hunter2@127.0.0.1:{proxy_server.port}"
    _ask(AuditedLLM(make_llm(llm_server.url, proxy=proxy), AuditLog(audit), client="cli"))
    assert "hunter2" not in audit.read_text() and proxy_server.url in audit.read_text()


# -- names are resolved, every address checked --------------------------------------------------------------
@pytest.fixture()
def fake_dns(monkeypatch):
    """Names that resolve where the test says (others as the system does)."""
    table: dict[str, list[str]] = {}
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host in table:
            out = []
            for address in table[host]:
                family = socket.AF_INET6 if ":" in address else socket.AF_INET
                sockaddr = (address, port or 0, 0, 0) if family == socket.AF_INET6 else (address, port or 0)
                out.append((family, socket.SOCK_STREAM, 6, "", sockaddr))
            return out
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return table


def test_localhost_names_are_resolved_not_trusted(fake_dns):
    fake_dns.update({"evil.localhost": ["203.0.113.5"], "localhost": ["127.0.0.1", "::1"],
                     "mixed.localhost": ["127.0.0.1", "10.0.0.7"], "good.localhost": ["127.0.0.1"],
                     "mapped.localhost": ["::ffff:10.0.0.7"]})
    for url in ("http://evil.localhost:8080/v1", "http://mixed.localhost/v1", "http://mapped.localhost/v1"):
        with pytest.raises(ConfigError, match="not this machine.*--allow-remote-llm"):
            check_url(url)
        assert not is_loopback(url.split("/")[2].split(":")[0])
    assert check_url("http://good.localhost:8080/v1").endswith("/v1/chat/completions")
    assert check_url("http://localhost:11434/v1").endswith("/chat/completions")
    with pytest.raises(ConfigError, match="--llm-proxy evil.localhost"):
        proxy_url("http://evil.localhost:3128", allow_remote=False)
    with pytest.raises(ConfigError, match="cannot resolve"):
        check_host("nowhere.invalid", 80, allow_remote=False, option="--llm-url")


def test_a_name_that_moves_after_the_check_is_refused_at_the_connection(fake_dns, llm_server):
    fake_dns["llm.localhost"] = ["127.0.0.1"]
    llm = make_llm(f"http://llm.localhost:{llm_server.port}/v1")
    assert _ask(llm) == "From the endpoint [1]."  # the name resolves here: the call is made
    fake_dns["llm.localhost"] = ["198.51.100.7"]  # DNS rebinding: the name now points away
    with pytest.raises(LLMError, match="refused: llm.localhost resolves to 198.51.100.7"):
        _ask(llm)
    assert len(llm_server.seen) == 1


def test_a_proxy_name_that_moves_is_refused_at_the_connection(fake_dns, llm_server, proxy_server):
    fake_dns["proxy.localhost"] = ["127.0.0.1"]
    llm = make_llm(llm_server.url, proxy=f"http://proxy.localhost:{proxy_server.port}")
    fake_dns["proxy.localhost"] = ["192.0.2.2"]
    with pytest.raises(LLMError, match="refused: proxy.localhost resolves to 192.0.2.2"):
        _ask(llm)
    assert proxy_server.seen == [] and llm_server.seen == []


def test_redirects_are_not_followed(llm_server):
    class Redirect(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            self.send_response(307)
            self.send_header("Location", llm_server.url + "/elsewhere")
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(LLMError, match="HTTP 307"):
            _ask(make_llm(f"http://127.0.0.1:{server.server_address[1]}"))
    finally:
        server.shutdown()
        server.server_close()
    assert llm_server.seen == []


# -- the command line and the server ------------------------------------------------------------------
@pytest.fixture()
def index_dir(tmp_path, hashing_model):
    reports = [Report("a", {"findings": "Enlarged cardiac silhouette.", "impression": "Cardiomegaly."}),
               Report("b", {"findings": "The lungs are clear.", "impression": "Normal chest."})]
    build_index(tmp_path / "idx", reports, encoder=HashingEncoder(hashing_model), progress=False)
    return tmp_path / "idx"


def test_cli_ask_ignores_http_proxy_and_refuses_a_remote_llm_proxy(index_dir, llm_server, proxy_server,
                                                                   monkeypatch, tmp_path):
    from radsift.cli import app

    monkeypatch.setenv("http_proxy", proxy_server.url)
    audit = tmp_path / "llm.jsonl"
    res = CliRunner().invoke(app, ["ask", str(index_dir), "enlarged heart", "--llm-url", llm_server.url + "/v1",
                                   "--audit-log", str(audit), "--json"])
    assert res.exit_code == 0, res.output
    assert len(llm_server.seen) == 1 and proxy_server.seen == []
    result = [json.loads(x) for x in audit.read_text().splitlines() if '"llm_result"' in x][-1]
    assert result["contacted"] == [f"127.0.0.1:{llm_server.port}"]
    res = CliRunner().invoke(app, ["ask", str(index_dir), "enlarged heart", "--llm-url", llm_server.url,
                                   "--llm-proxy", "http://192.0.2.2:9102", "--audit-log", str(audit)])
    assert res.exit_code == 2 and "--llm-proxy 192.0.2.2" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(app, ["draft-impression", str(index_dir), "--findings", "Big heart.", "--llm-url",
                                   llm_server.url, "--llm-proxy", proxy_server.url, "--audit-log", str(audit)])
    assert res.exit_code == 0, res.output
    assert len(proxy_server.seen) == 1 and len(llm_server.seen) == 1


def test_serve_refuses_a_remote_llm_proxy_at_start(index_dir, hashing_model):
    from radsift.serve import create_app

    index = Index.open(index_dir, encoder=HashingEncoder(hashing_model))
    with pytest.raises(ConfigError, match="--llm-proxy"):
        create_app(index, llm={"url": "http://127.0.0.1:8080/v1", "proxy": "http://203.0.113.9:3128"})


def test_cli_draft_of_long_one_line_findings_is_text_and_leaves_no_text_in_the_audit(index_dir, llm_server, tmp_path):
    from radsift.cli import app

    findings = "Enlarged cardiac silhouette with vascular congestion and small bilateral effusions. " * 5
    audit = tmp_path / "llm.jsonl"
    res = CliRunner().invoke(app, ["draft-impression", str(index_dir), "--findings", findings.strip(),
                                   "--llm-url", llm_server.url, "--audit-log", str(audit)])
    assert res.exit_code == 0, res.output  # a name too long for a file is the findings text, not a traceback
    assert "vascular congestion" in llm_server.seen[-1]["body"] and "congestion" not in audit.read_text()
