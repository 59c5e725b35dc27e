"""The HTTP API and server start-up: search, reports, health, reload, auth, input limits, logs, audit."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

import radsift.serve.server
from radsift.cli import app as cli_app
from radsift.errors import ConfigError
from radsift.index import add_to_index, build_index
from radsift.models.hashing import HashingEncoder
from radsift.records import Report
from radsift.search import Index
from radsift.serve import create_app, run_server

TOKEN = "s3cret-token-for-tests-0123456789"

REPORTS = [
    Report("a", {"findings": "There is a small right apical pneumothorax. Heart size is normal.",
                 "impression": "Small right pneumothorax."}, {"exam": "XR CHEST 1 VIEW", "site": "north"}),
    Report("b", {"findings": "No pneumothorax or pleural effusion. The lungs are clear.",
                 "impression": "No acute cardiopulmonary abnormality."}, {"exam": "XR CHEST PA", "site": "south"}),
    Report("c", {"findings": "Moderate left pleural effusion with basilar atelectasis. Mild cardiomegaly.",
                 "impression": "Left pleural effusion."}, {"exam": "XR CHEST PA", "site": "north"}),
    Report("d", {"findings": "Endotracheal tube tip 4 cm above the carina. Lungs are clear.",
                 "impression": "Tube in good position."}, {"exam": "XR CHEST 1 VIEW", "site": "south"}),
    Report("ward/7", {"findings": "Enlarged cardiac silhouette with vascular congestion.",
                      "impression": "Cardiomegaly with mild pulmonary edema."}, {"exam": "XR CHEST PA", "site": "east"}),
]
NEW_REPORT = Report("z9", {"findings": "Displaced fracture of the left sixth rib.",
                           "impression": "Acute left rib fracture."}, {"exam": "XR RIBS", "site": "east"})


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("serve")
    enc = HashingEncoder(root / "model")
    build_index(root / "idx", REPORTS, encoder=enc, progress=False)
    return root / "idx", enc


@pytest.fixture(scope="module")
def client(built):
    path, enc = built
    return TestClient(create_app(Index.open(path, encoder=enc)))


def search(client, **params):
    res = client.get("/api/search", params=params)
    assert res.status_code == 200, res.text
    return res.json()


# -- search -----------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_each_mode_ranks_the_effusion_report_first(client, mode):
    body = search(client, q="left pleural effusion", mode=mode, k=3)
    assert body["mode"] == mode and body["count"] == len(body["hits"]) >= 1
    assert body["hits"][0]["report_id"] == "c"
    assert [h["rank"] for h in body["hits"]] == list(range(1, body["count"] + 1))


def test_hit_carries_sentence_highlights_sections_and_metadata(client):
    hit = search(client, q="apical pneumothorax", mode="bm25", target="findings", k=1)["hits"][0]
    assert hit["report_id"] == "a"
    sent = hit["sentence"]
    assert sent["text"] == "There is a small right apical pneumothorax."
    assert hit["sections"]["findings"][sent["start"]:sent["end"]] == sent["text"]
    marked = [sent["text"][a:b] for a, b in hit["highlights"]]
    assert marked == ["apical pneumothorax"]
    assert hit["metadata"] == {"exam": "XR CHEST 1 VIEW", "site": "north"}
    assert set(hit["sections"]) == {"findings", "impression"}


@pytest.mark.parametrize("target", ["findings", "impression"])
def test_target_searches_only_that_section(client, target):
    body = search(client, q="pleural effusion cardiomegaly pneumothorax", mode="bm25", target=target, k=10)
    assert body["hits"] and {h["section"] for h in body["hits"]} == {target}


def test_target_impression_returns_the_diagnosis_for_a_findings_description(client):
    body = search(client, q="enlarged heart cardiomegaly", mode="hybrid", target="impression", k=2)
    top = body["hits"][0]
    assert top["report_id"] == "ward/7"
    assert top["sentence"]["text"] == "Cardiomegaly with mild pulmonary edema."


def test_target_report_searches_every_section(client):
    body = search(client, q="pneumothorax", mode="bm25", target="report", level="sentence", k=10)
    assert {h["section"] for h in body["hits"]} == {"findings", "impression"}


def test_report_level_gives_one_hit_per_report_and_sentence_level_gives_sentences(client):
    per_report = search(client, q="pneumothorax", mode="bm25", level="report", k=10)["hits"]
    ids = [h["report_id"] for h in per_report]
    assert len(ids) == len(set(ids)) == 2
    sentences = search(client, q="pneumothorax", mode="bm25", level="sentence", k=10)["hits"]
    assert len(sentences) == 3  # a's findings and impression, b's negated mention
    assert [h["report_id"] for h in sentences].count("a") == 2


def test_section_units(client):
    hit = search(client, q="tube carina", mode="bm25", unit="section", k=1)["hits"][0]
    assert hit["report_id"] == "d" and hit["sentence"]["index"] == -1
    assert hit["sentence"]["text"] == hit["sections"][hit["section"]]


def test_where_filters_on_metadata(client):
    hits = search(client, q="lungs clear", mode="hybrid", where="site:south")["hits"]
    assert hits and {h["metadata"]["site"] for h in hits} == {"south"}
    both = search(client, q="chest", mode="dense", where=["site:south", "site:east"], k=10)
    assert {h["metadata"]["site"] for h in both["hits"]} == {"south", "east"}
    assert both["where"] == ["site=south", "site=east"]
    anded = search(client, q="chest", mode="dense", where=["site=north", "exam:XR CHEST PA"], k=10)
    assert [h["report_id"] for h in anded["hits"]] == ["c"]
    none = search(client, q="pneumothorax", mode="bm25", where="site:nowhere")
    assert none["hits"] == [] and none["count"] == 0
    sub = search(client, q="chest", mode="dense", where="site~SOU", k=10)
    assert sub["where"] == ["site~SOU"] and {h["metadata"]["site"] for h in sub["hits"]} == {"south"}


def test_fields_select_what_comes_back(client):
    hit = search(client, q="effusion", mode="bm25", fields="metadata")["hits"][0]
    assert hit["sections"] == {} and hit["metadata"]["site"] == "north"
    hit = search(client, q="effusion", mode="bm25", fields="impression")["hits"][0]
    assert set(hit["sections"]) == {"impression"} and hit["metadata"] == {}
    hit = search(client, q="effusion", mode="bm25", fields=["findings", "metadata"])["hits"][0]
    assert set(hit["sections"]) == {"findings"} and hit["metadata"]
    hit = search(client, q="effusion", mode="bm25", fields="sections,metadata")["hits"][0]
    assert set(hit["sections"]) == {"findings", "impression"} and hit["metadata"]
    hit = search(client, q="effusion", mode="bm25", fields="none")["hits"][0]
    assert hit["sections"] == {} and hit["metadata"] == {} and hit["sentence"]["text"]


def test_query_whitespace_is_collapsed(client):
    body = search(client, q="  left \n pleural   effusion ", mode="bm25")
    assert body["query"] == "left pleural effusion"


# -- bad input ----------------------------------------------------------------------------------
@pytest.mark.parametrize("params, names", [
    ({"q": "x" * 1001}, "q"),
    ({"q": ""}, "q"),
    ({"q": "   "}, "empty"),
    ({}, "q"),
    ({"q": "effusion", "k": 0}, "k"),
    ({"q": "effusion", "k": 1001}, "k"),
    ({"q": "effusion", "k": "ten"}, "k"),
    ({"q": "effusion", "mode": "magic"}, "mode"),
    ({"q": "effusion", "level": "page"}, "level"),
    ({"q": "effusion", "unit": "word"}, "unit"),
    ({"q": "effusion", "target": "history"}, "target"),
    ({"q": "effusion", "colour": "red"}, "colour"),
    ({"q": "effusion", "where": "site"}, "where"),
    ({"q": "effusion", "where": ":south"}, "where"),
    ({"q": "effusion", "where": "site:"}, "where"),
    ({"q": "effusion", "where": "ward:7"}, "unknown metadata key"),
    ({"q": "effusion", "fields": "pixels"}, "fields"),
])
def test_bad_input_gives_422_with_a_message(client, params, names):
    res = client.get("/api/search", params=params)
    assert res.status_code == 422, res.text
    detail = res.json()["detail"]
    assert isinstance(detail, str) and names in detail


def test_the_limits_themselves_are_accepted(client):
    assert client.get("/api/search", params={"q": "x" * 1000, "k": 1000}).status_code == 200
    assert client.get("/api/search", params={"q": "effusion", "k": 1}).status_code == 200


def test_unknown_parameter_on_other_endpoints(client):
    res = client.get("/api/health", params={"verbose": "1"})
    assert res.status_code == 422 and "verbose" in res.json()["detail"]


# -- reports, health, page ------------------------------------------------------------------------
def test_get_report_and_404(client):
    res = client.get("/api/reports/c")
    assert res.status_code == 200
    assert res.json() == REPORTS[2].to_dict()
    assert client.get("/api/reports/ward/7").json()["id"] == "ward/7"  # ids may hold a slash
    missing = client.get("/api/reports/nope")
    assert missing.status_code == 404 and "nope" in missing.json()["detail"]


def test_health_reports_counts_model_and_version(client):
    body = client.get("/api/health").json()
    assert body["status"] == "ok" and body["version"]
    assert body["auth"] is False and body["audit"] is False
    idx = body["index"]
    assert idx["counts"]["reports"] == len(REPORTS)
    assert idx["model"] == "hashing-encoder"
    assert idx["metadata_keys"] == ["exam", "site"]
    assert idx["sections"] == ["findings", "impression"]


def test_openapi_and_page(client):
    doc = client.get("/openapi.json").json()
    assert {"/api/search", "/api/reports/{report_id}", "/api/health", "/api/reload"} <= set(doc["paths"])
    page = client.get("/")
    assert page.status_code == 200 and 'id="q"' in page.text and "/static/app.js" in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert client.get("/static/app.css").status_code == 200
    assert client.get("/api/health").headers["cache-control"] == "no-store"


def test_page_script_never_writes_html_strings():
    from radsift.serve.app import STATIC_DIR

    js = (STATIC_DIR / "app.js").read_text()
    assert "innerHTML" not in js and "insertAdjacentHTML" not in js and "document.write" not in js


# -- reload ---------------------------------------------------------------------------------------
def test_the_server_follows_adds_by_itself_and_never_touches_the_index(tmp_path):
    enc = HashingEncoder(tmp_path / "model")
    idx_dir = tmp_path / "idx"
    build_index(idx_dir, REPORTS, encoder=enc, progress=False)
    client = TestClient(create_app(Index.open(idx_dir, encoder=enc)))
    before = {p: p.stat().st_mtime_ns for p in idx_dir.rglob("*")}
    assert client.post("/api/reload").json()["reloaded"] is False
    search(client, q="rib fracture", mode="bm25")
    snapshot = {p: p.stat().st_mtime_ns for p in idx_dir.rglob("*")}
    assert snapshot == before  # the server wrote nothing into the index

    add_to_index(idx_dir, [NEW_REPORT], encoder=enc, progress=False)
    assert search(client, q="rib fracture", mode="bm25")["hits"][0]["report_id"] == "z9"  # no reload needed
    assert client.get("/api/reports/z9").status_code == 200
    assert client.get("/api/health").json()["index"]["counts"]["reports"] == len(REPORTS) + 1


def test_reload_makes_an_added_report_visible_when_not_following(tmp_path):
    enc = HashingEncoder(tmp_path / "model")
    idx_dir = tmp_path / "idx"
    build_index(idx_dir, REPORTS, encoder=enc, progress=False)
    index = Index.open(idx_dir, encoder=enc)
    index.follow = False
    client = TestClient(create_app(index))
    add_to_index(idx_dir, [NEW_REPORT], encoder=enc, progress=False)
    assert search(client, q="rib fracture", mode="bm25")["hits"] == []  # still the old generation
    assert client.get("/api/reports/z9").status_code == 404
    res = client.post("/api/reload").json()
    assert res["reloaded"] is True and res["index"]["counts"]["reports"] == len(REPORTS) + 1
    assert search(client, q="rib fracture", mode="bm25")["hits"][0]["report_id"] == "z9"
    assert client.get("/api/reports/z9").status_code == 200
    assert client.get("/api/health").json()["index"]["counts"]["reports"] == len(REPORTS) + 1


def test_concurrent_requests_during_reloads_all_succeed(tmp_path):
    enc = HashingEncoder(tmp_path / "model")
    idx_dir = tmp_path / "idx"
    build_index(idx_dir, REPORTS, encoder=enc, progress=False)
    client = TestClient(create_app(Index.open(idx_dir, encoder=enc)))
    stop = threading.Event()

    def writer():
        add_to_index(idx_dir, [NEW_REPORT], encoder=enc, progress=False)
        stop.set()

    def reader(i: int) -> int:
        kind = i % 4
        if kind == 0:
            return client.post("/api/reload").status_code
        if kind == 1:
            return client.get("/api/reports/c").status_code
        if kind == 2:
            return client.get("/api/health").status_code
        return client.get("/api/search", params={"q": "pleural effusion", "mode": ("dense", "bm25", "hybrid")[i % 3]}).status_code

    with ThreadPoolExecutor(6) as pool:
        write = pool.submit(writer)
        codes = list(pool.map(reader, range(60)))
        write.result()
    assert codes == [200] * 60
    client.post("/api/reload")
    assert client.get("/api/reports/z9").status_code == 200


# -- auth -------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def secured(built):
    path, enc = built
    return TestClient(create_app(Index.open(path, encoder=enc), token=TOKEN))


@pytest.mark.parametrize("path", ["/api/health", "/api/search?q=effusion", "/api/reports/c"])
@pytest.mark.parametrize("header", [None, "Bearer wrong-token-wrong-token", f"Basic {TOKEN}", TOKEN, f"Bearer {TOKEN}x"])
def test_with_a_token_api_calls_without_it_get_401(secured, path, header):
    headers = {"Authorization": header} if header else {}
    res = secured.get(path, headers=headers)
    assert res.status_code == 401
    assert res.headers["www-authenticate"] == "Bearer"
    assert TOKEN not in res.text


def test_with_a_token_reload_needs_it_too(secured):
    assert secured.post("/api/reload").status_code == 401
    assert secured.post("/api/reload", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_with_the_right_token_calls_succeed_and_the_page_loads_without_it(secured):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert secured.get("/api/health", headers=auth).json()["auth"] is True
    assert secured.get("/api/search", params={"q": "effusion"}, headers=auth).json()["hits"]
    assert secured.get("/api/reports/c", headers=auth).status_code == 200
    assert secured.get("/").status_code == 200
    assert secured.get("/static/app.js").status_code == 200
    # 401 comes before input checks: nothing about the API leaks to a caller without the token.
    assert secured.get("/api/search", params={"k": 0}).status_code == 401


def test_without_a_token_no_header_is_needed(client):
    assert client.get("/api/health").status_code == 200


# -- audit log and ordinary logs ----------------------------------------------------------------------
def test_audit_log_records_queries_with_token_id_not_token(built, tmp_path):
    path, enc = built
    audit = tmp_path / "audit" / "trail.jsonl"
    client = TestClient(create_app(Index.open(path, encoder=enc), token=TOKEN, audit_log=audit))
    auth = {"Authorization": f"Bearer {TOKEN}"}
    body = client.get("/api/search", params={"q": "left pleural effusion", "mode": "bm25", "where": "site:north"},
                      headers=auth).json()
    client.get("/api/reports/c", headers=auth)
    client.get("/api/search", params={"q": "effusion"})  # refused: not audited as a search
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [entry["event"] for entry in lines] == ["search", "report"]
    s, r = lines
    assert s["query"] == "left pleural effusion"
    assert s["result_ids"] == [h["report_id"] for h in body["hits"]] and s["result_ids"]
    assert s["params"]["mode"] == "bm25" and s["params"]["where"] == ["site=north"]
    assert s["token_id"] == hashlib.sha256(TOKEN.encode()).hexdigest()[:8]
    assert s["client"] and s["time"].endswith("+00:00")
    assert r["report_id"] == "c" and r["found"] is True
    assert TOKEN not in audit.read_text()
    # append-only: a second app on the same file adds lines, keeps the old ones
    again = TestClient(create_app(Index.open(path, encoder=enc), audit_log=audit))
    again.get("/api/search", params={"q": "tube"})
    lines2 = audit.read_text().splitlines()
    assert len(lines2) == 3 and json.loads(lines2[2])["token_id"] is None
    assert (audit.stat().st_mode & 0o777) == 0o600


def test_without_audit_log_no_file_is_written(built, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path, enc = built
    TestClient(create_app(Index.open(path, encoder=enc))).get("/api/search", params={"q": "effusion"})
    assert list(tmp_path.iterdir()) == []


def test_logs_hold_no_query_and_no_report_text(client, caplog):
    query = "moderate left pleural effusion"
    with caplog.at_level(logging.DEBUG):
        hits = search(client, q=query, mode="hybrid", level="sentence")["hits"]
        client.get("/api/reports/c")
        client.get("/api/reports/missing-id-xyz")
        client.get("/api/search", params={"q": "secret query words", "k": 0})
    # Everything the server side logged (httpx's own lines are the test client's, not the server's).
    text = "\n".join(r.getMessage() for r in caplog.records if not r.name.startswith(("httpx", "httpcore")))
    assert "GET /api/search 200" in text and "GET /api/reports/{report_id:path} 404" in text
    assert "pleural" not in text.lower() and "secret" not in text
    assert "missing-id-xyz" not in text
    for hit in hits:
        assert hit["sentence"]["text"] not in text
    for report in REPORTS:
        for section in report.sections.values():
            assert section not in text


# -- run_server and the CLI -----------------------------------------------------------------------------
def test_run_server_refuses_a_public_address_without_a_token(built, monkeypatch):
    monkeypatch.delenv("RADSIFT_TOKEN", raising=False)
    path, _ = built
    for host in ("0.0.0.0", "::", "192.168.1.20", "radsift.example.org"):
        with pytest.raises(ConfigError, match=f"refusing to serve on {host}.*--token-file"):
            run_server(path, host=host, port=0)


def test_token_sources_are_checked(built, tmp_path, monkeypatch):
    monkeypatch.delenv("RADSIFT_TOKEN", raising=False)
    path, _ = built
    with pytest.raises(ConfigError, match="missing-token-file"):
        run_server(path, host="0.0.0.0", token_file=tmp_path / "missing-token-file")
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(ConfigError, match="is empty"):
        run_server(path, host="0.0.0.0", token_file=tmp_path / "empty")
    monkeypatch.setenv("RADSIFT_TOKEN", "short")
    with pytest.raises(ConfigError, match="at least 16"):
        run_server(path, host="0.0.0.0")


@pytest.fixture
def fake_uvicorn(built, monkeypatch):
    import uvicorn

    path, enc = built

    class HashIndex(Index):
        @classmethod
        def open(cls, p, **kwargs):
            return Index.open(p, encoder=enc)

    calls = []

    def run(server, sockets=None):  # stands in for uvicorn.Server.run: records what would be served
        calls.append((server.config, [s.getsockname()[:2] for s in sockets]))

    monkeypatch.setattr(radsift.serve.server, "Index", HashIndex)
    monkeypatch.setattr(uvicorn.Server, "run", run)
    return calls


def test_run_server_prints_the_address_and_serves_without_access_log(built, fake_uvicorn, capsys):
    from rich.console import Console

    path, _ = built
    run_server(path, port=0, console=Console(file=None, force_terminal=False, width=60), in_process=True)
    out = capsys.readouterr().out
    (config, [(host, port)]), = fake_uvicorn
    assert host == "127.0.0.1" and port > 0
    assert f"http://127.0.0.1:{port}/" in out
    assert config.access_log is False
    assert config.log_config["loggers"]["uvicorn.access"]["handlers"] == []


def test_run_server_by_default_serves_in_a_forked_worker_and_says_its_errors(built, fake_uvicorn, capsys,
                                                                             monkeypatch):
    """Issue 32: one worker under a supervising parent by default. The parent prints the address once the
    worker is ready (with the report count, as in one process); an error the worker meets while it starts is
    raised in the parent, the same error class and sentence."""
    from rich.console import Console

    from radsift.errors import IndexStoreError

    path, _ = built
    run_server(path, port=0, console=Console(file=None, force_terminal=False, width=200))
    out = capsys.readouterr().out
    assert f"({len(REPORTS)} reports)" in out and "http://127.0.0.1:" in out
    assert fake_uvicorn == []  # served in the forked worker, not here

    def no_model(cls, p, **kwargs):
        raise IndexStoreError(f"{p}: the model folder is gone")

    monkeypatch.setattr(radsift.serve.server.Index, "open", classmethod(no_model))
    with pytest.raises(IndexStoreError, match="the model folder is gone"):
        run_server(path, port=0, console=Console(file=None, force_terminal=False))
    assert "http://" not in capsys.readouterr().out


def test_run_server_on_a_public_address_with_a_token(built, fake_uvicorn, tmp_path, monkeypatch, capsys):
    from rich.console import Console

    monkeypatch.delenv("RADSIFT_TOKEN", raising=False)
    path, _ = built
    (tmp_path / "token").write_text(TOKEN + "\n")
    run_server(path, host="0.0.0.0", port=0, token_file=tmp_path / "token", console=Console(force_terminal=False),
               in_process=True)
    (config, [(host, _)]), = fake_uvicorn
    assert host == "0.0.0.0"
    app = config.app
    assert TestClient(app).get("/api/health").status_code == 401
    assert "API token required" in capsys.readouterr().out


def test_cli_serve_refuses_and_exits_nonzero(built, monkeypatch):
    monkeypatch.delenv("RADSIFT_TOKEN", raising=False)
    path, _ = built
    res = CliRunner().invoke(cli_app, ["serve", str(path), "--host", "0.0.0.0"])
    assert res.exit_code == 2
    assert "refusing to serve on 0.0.0.0" in res.output


def test_cli_serve_reports_a_missing_index(tmp_path):
    res = CliRunner().invoke(cli_app, ["serve", str(tmp_path / "no-index")])
    assert res.exit_code == 2 and "index not found" in res.output


def test_bind_socket_is_tcp_and_reports_a_busy_port():
    import socket

    from radsift.serve.server import bind_socket

    sock = bind_socket("127.0.0.1", 0)
    try:
        # asyncio sets TCP_NODELAY only on sockets made with the TCP protocol number; without it
        # each keep-alive response waited ~40 ms for a delayed ACK.
        assert sock.proto == socket.IPPROTO_TCP
        with pytest.raises(ConfigError, match="cannot listen on 127.0.0.1"):
            bind_socket("127.0.0.1", sock.getsockname()[1])
    finally:
        sock.close()


class _ShortFirst:
    """A stand-in cross-encoder: shorter matched sentences score higher."""

    def score(self, query, texts):
        return np.array([-len(t) for t in texts], dtype=np.float32)


def test_rerank_parameter_uses_the_servers_reranker(built, client):
    path, enc = built
    reranking = TestClient(create_app(Index.open(path, encoder=enc, reranker=_ShortFirst())))
    params = {"q": "pleural effusion", "k": 5, "mode": "bm25", "level": "sentence"}
    plain = reranking.get("/api/search", params=params).json()["hits"]
    out = reranking.get("/api/search", params={**params, "rerank": 5}).json()["hits"]
    lengths = [len(h["sentence"]["text"]) for h in out]
    assert sorted(h["sentence"]["text"] for h in out) == sorted(h["sentence"]["text"] for h in plain)
    agree = [n for h, n in zip(out, lengths) if not h["sentence"]["text"].lower().startswith("no ")]
    assert agree == sorted(agree)
    # without a reranker the parameter is a clear 422, never a silent no-op
    r = client.get("/api/search", params={**params, "rerank": 5})
    assert r.status_code == 422 and "reranker" in r.json()["detail"]


# -- the query's reading (negation-aware search) ------------------------------------------------------
def _statuses(hit, finding="pleural effusion"):
    return [m["status"] for m in hit["reading"] if m["finding"] == finding]


def test_search_returns_the_reading_and_each_hits_status(client):
    body = search(client, q="no pleural effusion", mode="hybrid", k=5)
    assert body["negation"] == "aware" and body["overrides"] == []
    assert body["reading"] == {"findings": [{"finding": "pleural effusion", "status": "absent", "source": "lexicon",
                                             "cue": "no", "side": None, "via": None, "score": None,
                                             "beside": None, "any_of": []}],
                               "side": None, "negation": "aware", "note": "", "location": None, "change": None,
                               "degree": None, "pattern": None}
    assert body["read_as"] == body["reading"]
    top = body["hits"][0]
    assert top["report_id"] == "b" and _statuses(top) == ["absent"]
    mention, = top["reading"]
    text = top["sentence"]["text"]
    assert text[mention["start"]:mention["end"]].lower() == "pleural effusion"
    assert mention["cue"].lower() == "no" and mention["source"] == "lexicon"
    # the report that affirms an effusion is not above the one that denies it
    ids = [h["report_id"] for h in body["hits"]]
    assert "c" not in ids or ids.index("c") > ids.index("b")


def test_search_reading_carries_the_side(client):
    body = search(client, q="left pleural effusion", mode="bm25", k=3)
    finding, = body["reading"]["findings"]
    assert body["reading"]["side"] == "left" and finding["side"] == "left" and finding["status"] == "present"
    assert _statuses(body["hits"][0]) == ["present"]


def test_reading_override_flips_the_ranking(client):
    plain = search(client, q="no pleural effusion", mode="hybrid", k=5)
    flipped = search(client, q="no pleural effusion", mode="hybrid", k=5, reading="pleural effusion=present")
    assert flipped["overrides"] == ["pleural effusion=present"]
    assert flipped["reading"]["findings"][0]["status"] == "present"
    assert flipped["read_as"]["findings"][0]["status"] == "absent"  # what the page flips back to
    top = flipped["hits"][0]
    assert top["report_id"] != plain["hits"][0]["report_id"]
    assert top["report_id"] == "c" and _statuses(top) == ["present"]


def test_reading_override_ignore_drops_the_finding(client):
    body = search(client, q="no pleural effusion", mode="bm25", k=5, reading="pleural effusion=ignore")
    assert body["reading"]["findings"] == [] and body["read_as"]["findings"][0]["finding"] == "pleural effusion"
    assert all(h["reading"] == [] for h in body["hits"])
    side = search(client, q="left pleural effusion", mode="bm25", reading="side=ignore")
    assert side["reading"]["side"] is None and side["reading"]["findings"][0]["side"] is None


def test_negation_ignore_ranks_by_similarity_and_still_shows_the_reading(client):
    params = {"q": "no pleural effusion", "mode": "bm25", "level": "sentence", "k": 10}
    aware = search(client, **params)
    plain = search(client, **params, negation="ignore")
    assert plain["negation"] == "ignore" and plain["reading"]["negation"] == "ignore"
    assert plain["reading"]["findings"][0]["status"] == "absent"  # still read, no longer used

    def first_affirming(body):
        statuses = [_statuses(h) for h in body["hits"]]
        assert ["present"] in statuses and [] in statuses
        return statuses.index(["present"]), len(statuses) - 1 - statuses[::-1].index([])

    # aware: every sentence that affirms an effusion after those that do not; ignore: BM25's own order
    present_at, last_unstated = first_affirming(aware)
    assert present_at > last_unstated
    present_at, last_unstated = first_affirming(plain)
    assert present_at < last_unstated


@pytest.mark.parametrize("params, message", [
    ({"reading": "cardiomegaly=absent"}, "the query was not read to name 'cardiomegaly'; it names: pleural effusion"),
    ({"reading": "pleural effusion=maybe"}, "must be one of present, absent, uncertain, ignore"),
    ({"reading": "pleural effusion"}, "is not FINDING=STATUS"),
    ({"negation": "off"}, "negation"),
])
def test_bad_reading_override_gives_422_with_the_message(client, params, message):
    res = client.get("/api/search", params={"q": "no pleural effusion", **params})
    assert res.status_code == 422, res.text
    assert message in res.json()["detail"]


def test_report_with_a_query_marks_every_mention_with_its_status(client):
    res = client.get("/api/reports/b", params={"q": "pleural effusion"})
    assert res.status_code == 200, res.text
    body = res.json()
    assert body["sections"] == REPORTS[1].sections and body["reading"]["findings"][0]["status"] == "present"
    mention, = body["mentions"]["findings"]
    text = body["sections"]["findings"]
    assert text[mention["start"]:mention["end"]] == "pleural effusion"
    assert mention["status"] == "absent" and mention["cue"] == "No" and mention["source"] == "lexicon"
    assert body["mentions"]["impression"] == []
    c = client.get("/api/reports/c", params={"q": "no pleural effusion", "reading": "pleural effusion=present"}).json()
    assert c["reading"]["findings"][0]["status"] == "present"
    assert {s: [m["status"] for m in ms] for s, ms in c["mentions"].items()} == \
           {"findings": ["present"], "impression": ["present"]}
    # several findings: each mention, in each section
    ward = client.get("/api/reports/ward/7", params={"q": "cardiomegaly with pulmonary edema"}).json()
    marked = {s: [(ward["sections"][s][m["start"]:m["end"]], m["finding"], m["status"]) for m in ms]
              for s, ms in ward["mentions"].items()}
    assert marked == {"findings": [("Enlarged cardiac silhouette", "cardiomegaly", "present")],
                      "impression": [("Cardiomegaly", "cardiomegaly", "present"),
                                     ("pulmonary edema", "pulmonary edema", "present")]}
    # ignore drops the finding: nothing is marked
    ignored = client.get("/api/reports/b", params={"q": "pleural effusion", "reading": "pleural effusion=ignore"}).json()
    assert ignored["mentions"] == {"findings": [], "impression": []}


def test_report_without_a_query_has_no_mentions_and_bad_reading_is_refused(client):
    assert "mentions" not in client.get("/api/reports/b").json()
    bad = client.get("/api/reports/b", params={"q": "pleural effusion", "reading": "cardiomegaly=absent"})
    assert bad.status_code == 422 and "not read to name 'cardiomegaly'" in bad.json()["detail"]
    lone = client.get("/api/reports/b", params={"reading": "pleural effusion=absent"})
    assert lone.status_code == 422 and "needs q" in lone.json()["detail"]
    missing = client.get("/api/reports/nope", params={"q": "pleural effusion"})
    assert missing.status_code == 404


def test_audit_log_records_negation_and_reading_overrides(built, tmp_path):
    path, enc = built
    audit = tmp_path / "trail.jsonl"
    client = TestClient(create_app(Index.open(path, encoder=enc), audit_log=audit))
    search(client, q="no pleural effusion", reading="pleural effusion=present", negation="ignore")
    client.get("/api/reports/c", params={"q": "no pleural effusion", "reading": "pleural effusion=present"})
    client.get("/api/search", params={"q": "no pleural effusion", "reading": "cardiomegaly=absent"})  # refused
    s, r = [json.loads(line) for line in audit.read_text().splitlines()]
    assert s["params"]["reading"] == ["pleural effusion=present"] and s["params"]["negation"] == "ignore"
    assert r["event"] == "report" and r["report_id"] == "c" and r["query"] == "no pleural effusion"
    assert r["params"] == {"negation": "aware", "reading": ["pleural effusion=present"]}


WORKERS_SCRIPT = """
import sys
from pathlib import Path
import radsift.serve.server as server
from radsift.models.hashing import HashingEncoder
from radsift.search import Index
path, model = sys.argv[1:3]

class HashIndex(Index):
    @classmethod
    def open(cls, p, **kwargs):
        return Index.open(p, encoder=HashingEncoder(Path(model)))

server.Index = HashIndex  # the forked workers inherit it
server.run_server(path, port=0, workers=2)
"""


@pytest.mark.slow
def test_workers_share_one_port_and_stop_together(built, tmp_path):
    """Issue 33, item 5: ``radsift serve --workers 2``: two processes answer on one port; a worker killed by
    SIGBUS is started again (issue 32); SIGTERM to the server stops both (they finish their requests)."""
    import re
    import signal
    import subprocess
    import sys
    import time
    import urllib.request

    path, enc = built
    log = tmp_path / "serve.log"
    proc = subprocess.Popen([sys.executable, "-c", WORKERS_SCRIPT, str(path), str(enc.path)],
                            stdout=log.open("w"), stderr=subprocess.STDOUT,
                            env={**os.environ, "PYTHONPATH": str(Path(radsift.__file__).parents[1])})
    try:
        deadline = time.time() + 90
        while time.time() < deadline and not re.search(r"http://127\.0\.0\.1:(\d+)/", log.read_text()):
            time.sleep(0.2)
        text = log.read_text()
        port = int(re.search(r"http://127\.0\.0\.1:(\d+)/", text).group(1))
        assert "with 2 worker processes" in text
        workers = []
        while time.time() < deadline and len(workers) < 2:
            workers = os.popen(f"pgrep -P {proc.pid}").read().split()
            time.sleep(0.2)
        assert len(workers) == 2
        answered = 0
        while time.time() < deadline and answered < 20:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/search?q=pneumothorax&k=3", timeout=10) as r:
                    assert r.status == 200 and json.loads(r.read())["hits"]
                    answered += 1
            except OSError:
                time.sleep(0.2)  # a worker still loading
        assert answered == 20
        # A worker killed by SIGBUS (what a file truncated under its memory map does) is started again.
        os.kill(int(workers[0]), signal.SIGBUS)
        while time.time() < deadline and "killed by SIGBUS" not in log.read_text():
            time.sleep(0.2)
        assert "worker" in log.read_text() and "killed by SIGBUS" in log.read_text()
        restarted = []
        while time.time() < deadline and (len(restarted) < 2 or workers[0] in restarted):
            restarted = os.popen(f"pgrep -P {proc.pid}").read().split()
            time.sleep(0.2)
        assert len(restarted) == 2 and workers[0] not in restarted and proc.poll() is None
        while time.time() < deadline and log.read_text().count("Started server process") < 3:
            time.sleep(0.2)  # the new worker warms its index before it serves
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        assert not os.popen(f"pgrep -P {proc.pid}").read().split()
        assert log.read_text().count("Finished server process") == 2
    finally:
        proc.kill()


def test_workers_must_be_a_sane_number(built, fake_uvicorn):
    path, _ = built
    for bad in (0, -1, 65, "2"):
        with pytest.raises(ConfigError, match="--workers"):
            run_server(path, port=0, workers=bad)
    with pytest.raises(ConfigError, match="--workers 2 needs worker processes: drop --in-process"):
        run_server(path, port=0, workers=2, in_process=True)
