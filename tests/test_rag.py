"""Ask the reports (radsift.rag): prompts and their numbering, citation checks, the LLM back-ends
(an OpenAI-compatible endpoint, served here by a tiny fake on 127.0.0.1; the offline SmolLM2 model
end to end), remote-URL refusal, the audit trail, bad input, the API endpoint and the rag bench."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from radsift.errors import ConfigError
from radsift.index import build_index
from radsift.models.hashing import HashingEncoder
from radsift.rag import ask, draft_impression
from radsift.rag.citations import check_citations
from radsift.rag.llm import AuditedLLM, LLMError, make_llm
from radsift.rag.llm.base import estimate_tokens
from radsift.rag.llm.openai_compat import OpenAICompatLLM, check_url, endpoint_url
from radsift.rag.prompts import build_prompt, looks_like_findings
from radsift.records import Report
from radsift.search import Index

REPORTS = [
    Report("a", {"findings": "There is a small right apical pneumothorax. Heart size is normal.",
                 "impression": "Small right pneumothorax."}, {"site": "north"}),
    Report("b", {"findings": "No pneumothorax or pleural effusion. The lungs are clear.",
                 "impression": "No acute cardiopulmonary abnormality."}, {"site": "south"}),
    Report("c", {"findings": "Moderate left pleural effusion with basilar atelectasis. Mild cardiomegaly.",
                 "impression": "Left pleural effusion."}, {"site": "north"}),
    Report("ward/7", {"findings": "Enlarged cardiac silhouette with vascular congestion.",
                      "impression": "Cardiomegaly with mild pulmonary edema."}, {"site": "east"}),
]


# -- a fake OpenAI-compatible server ------------------------------------------------------------
class FakeLLMServer:
    """An OpenAI-compatible chat-completions endpoint on 127.0.0.1, in a thread.

    ``mode``: ``echo`` (answers ``reply``, default: "Pneumothorax [1] and [7]."), ``garbage`` (not
    JSON), ``empty`` (a completion with no text), ``slow`` (sleeps ``delay`` s first), ``trickle``
    (sends its body a byte at a time, slowly), ``error`` (HTTP 500). ``requests`` keeps each request
    (headers, JSON body)."""

    def __init__(self) -> None:
        self.mode = "echo"
        self.reply = "Pneumothorax [1] and [7]."
        self.delay = 3.0
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                if outer.mode == "slow":
                    time.sleep(outer.delay)
                if outer.mode == "error":
                    self._send(500, b'{"error": {"message": "model not loaded"}}')
                    return
                if outer.mode == "garbage":
                    self._send(200, b"<html>hello</html>")
                    return
                content = "" if outer.mode == "empty" else outer.reply
                data = json.dumps({"model": body.get("model"), "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 11, "completion_tokens": 5}}).encode()
                if outer.mode == "trickle":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    try:
                        for i in range(len(data)):
                            self.wfile.write(data[i:i + 1])
                            self.wfile.flush()
                            time.sleep(0.2)
                    except OSError:
                        pass
                    return
                self._send(200, data)

            def _send(self, code, data):
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def fake():
    server = FakeLLMServer()
    yield server
    server.close()


@pytest.fixture(scope="module")
def index(hashing_index_of):
    return hashing_index_of("rag", REPORTS)


class Counter:
    """A token counter that counts words (a deterministic stand-in for a tokenizer)."""

    def __call__(self, text: str) -> int:
        return len(text.split())


def sources(n: int, words: int = 5) -> list:
    return [(f"r{i}", {"findings": " ".join(["word"] * words), "impression": f"Diagnosis {i}."}, 1.0 - i / 10)
            for i in range(1, n + 1)]


# -- prompts ------------------------------------------------------------------------------------
def test_prompt_numbers_the_reports_in_rank_order_and_asks_for_citations():
    p = build_prompt("Enlarged heart.", sources(3), count_tokens=Counter(), context_tokens=4096, max_tokens=64)
    user = p.messages[1]["content"]
    assert [user.index(f"[{i}] Report r{i}") for i in (1, 2, 3)] == sorted(user.index(f"[{i}] Report r{i}")
                                                                          for i in (1, 2, 3))
    assert "Impression: Diagnosis 2." in user and "cite" in p.messages[0]["content"]
    assert user.rstrip().endswith("What is the most likely diagnosis?")
    assert [s.n for s in p.sources] == [1, 2, 3] and p.truncated == [] and not p.question_truncated
    assert "system:\n" in p.text and "user:\n" in p.text  # the exact prompt, as text


def test_prompt_without_reports_is_the_model_alone():
    p = build_prompt("What does a deep sulcus sign mean?", [], count_tokens=Counter(), context_tokens=4096,
                     max_tokens=64)
    assert "[1]" not in p.text and "cite" not in p.messages[0]["content"]
    assert p.messages[1]["content"] == "Question: What does a deep sulcus sign mean?"


def test_draft_prompt_shows_only_the_impressions():
    p = build_prompt("Small left effusion.", sources(2), task="draft", count_tokens=Counter(), context_tokens=4096,
                     max_tokens=64, sections=("impression",))
    assert "Impression: Diagnosis 1." in p.text and "word" not in p.text
    assert p.messages[1]["content"].endswith("Write the impression.")


def test_reports_are_cut_to_fit_the_context_and_listed():
    count = Counter()
    p = build_prompt("Enlarged heart.", sources(3, words=400), count_tokens=count, context_tokens=600,
                     max_tokens=100)
    assert p.truncated == ["r1", "r2", "r3"]
    assert all(s.text.endswith("[...]") for s in p.sources)
    assert sum(count(m["content"]) for m in p.messages) <= p.budget_tokens
    # A short report is shown whole; the long ones share what it leaves.
    mixed = [sources(1, words=3)[0], *sources(3, words=400)[1:]]
    p2 = build_prompt("Enlarged heart.", mixed, count_tokens=count, context_tokens=600, max_tokens=100)
    assert p2.truncated == ["r2", "r3"] and not p2.sources[0].truncated


def test_a_report_with_no_room_is_left_out_and_a_long_question_is_cut():
    count = Counter()
    p = build_prompt(" ".join(["finding"] * 2000), sources(2, words=300), count_tokens=count, context_tokens=400,
                     max_tokens=50)
    assert p.question_truncated and p.question.endswith("[...]")
    assert sum(count(m["content"]) for m in p.messages) <= p.budget_tokens
    tiny = build_prompt("Enlarged heart.", sources(20, words=300), count_tokens=count, context_tokens=400,
                        max_tokens=50)
    assert any(s.dropped for s in tiny.sources) and all(f"Report {s.report_id}" not in tiny.text
                                                        for s in tiny.sources if s.dropped)


def test_a_context_too_small_is_a_clear_error():
    with pytest.raises(ConfigError, match="max-tokens"):
        build_prompt("x", [], count_tokens=Counter(), context_tokens=100, max_tokens=100)


def test_findings_or_question():
    assert looks_like_findings("Enlarged cardiac silhouette with vascular congestion.")
    assert not looks_like_findings("What causes a pleural effusion?")
    assert not looks_like_findings("explain the deep sulcus sign")


# -- citations ----------------------------------------------------------------------------------
def test_citations_to_shown_reports_are_kept_others_removed_and_counted():
    c = check_citations("Pneumothorax [1], as in [2, 7]. Also [9]. See [ 3 ].", {1, 2, 3})
    assert c.text == "Pneumothorax [1], as in [2, 7]. Also [9]. See [ 3 ].".replace(", 7]", "]").replace(
        " [9].", ".").replace("[ 3 ]", "[3]")
    assert c.cited == (1, 2, 3) and c.invalid == (7, 9) and c.removed == 2
    none = check_citations("Effusion [1].", set())
    assert none.text == "Effusion." and none.invalid == (1,)
    assert check_citations("Lungs [...] clear [Report 2].", {1}).invalid == ()  # prose, not citations


# -- the OpenAI-compatible back-end --------------------------------------------------------------
def test_endpoint_success_sends_model_limit_and_token(fake, monkeypatch):
    monkeypatch.setenv("RADSIFT_LLM_TOKEN", "sk-local-123")
    llm = make_llm(fake.url, "llama-3.1-8b")
    gen = llm.generate([{"role": "user", "content": "hi"}], max_tokens=7, timeout=5)
    assert gen.text == fake.reply and gen.finish_reason == "stop" and gen.completion_tokens == 5
    req = fake.requests[-1]
    assert req["path"] == "/v1/chat/completions"
    assert req["body"]["model"] == "llama-3.1-8b" and req["body"]["max_tokens"] == 7
    assert req["headers"]["Authorization"] == "Bearer sk-local-123"


def test_token_file_wins_and_an_empty_one_is_refused(fake, tmp_path):
    f = tmp_path / "tok"
    f.write_text("from-file\n")
    make_llm(fake.url, token_file=f).generate([{"role": "user", "content": "hi"}], max_tokens=3, timeout=5)
    assert fake.requests[-1]["headers"]["Authorization"] == "Bearer from-file"
    f.write_text("\n")
    with pytest.raises(ConfigError, match="first line is empty"):
        make_llm(fake.url, token_file=f)


def test_garbage_is_a_clear_error(fake):
    fake.mode = "garbage"
    with pytest.raises(LLMError, match="not a chat completion"):
        make_llm(fake.url).generate([{"role": "user", "content": "hi"}], timeout=5)


def test_http_error_names_the_status(fake):
    fake.mode = "error"
    with pytest.raises(LLMError, match="HTTP 500: model not loaded"):
        make_llm(fake.url).generate([{"role": "user", "content": "hi"}], timeout=5)


def test_empty_answer_is_marked_not_an_error(fake, index):
    fake.mode = "empty"
    a = ask(index, "Enlarged cardiac silhouette.", llm=make_llm(fake.url))
    assert a.status == "empty" and a.text == "" and any("no text" in n for n in a.notes)


@pytest.mark.parametrize("mode", ["slow", "trickle"])
def test_timeout_never_hangs(fake, mode):
    fake.mode = mode
    start = time.monotonic()
    with pytest.raises(LLMError, match="within 1 s"):
        make_llm(fake.url).generate([{"role": "user", "content": "hi"}], timeout=1.0)
    assert time.monotonic() - start < 2.5


def test_unreachable_is_a_clear_error():
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(LLMError, match="unreachable"):
        make_llm(f"http://127.0.0.1:{port}").generate([{"role": "user", "content": "hi"}], timeout=3)


def test_remote_urls_are_refused_unless_allowed():
    for url in ("http://10.0.0.5:8080/v1", "https://api.example.com/v1", "http://192.168.1.2"):
        with pytest.raises(ConfigError, match="--allow-remote-llm"):
            check_url(url)
        assert check_url(url, allow_remote=True).endswith("/v1/chat/completions")
    for url in ("http://127.0.0.1:8080", "http://localhost:11434/v1", "http://[::1]:8000/v1/chat/completions",
                "http://127.0.0.2/v1"):
        assert check_url(url).endswith("/chat/completions")
    with pytest.raises(ConfigError, match="not an http"):
        endpoint_url("ftp://127.0.0.1/x")


def test_cli_refuses_a_remote_endpoint(tmp_path, index):
    res = CliRunner().invoke(__import__("radsift.cli", fromlist=["app"]).app,
                             ["ask", str(index.path), "enlarged heart", "--llm-url", "http://10.1.2.3:8080/v1"])
    assert res.exit_code == 2 and "--allow-remote-llm" in res.output


def test_audit_records_every_call_without_text(fake, tmp_path):
    from radsift.serve.audit import AuditLog

    path = tmp_path / "llm.jsonl"
    llm = AuditedLLM(make_llm(fake.url), AuditLog(path), client="cli")
    llm.generate([{"role": "user", "content": "SECRET REPORT TEXT"}], max_tokens=4, timeout=5)
    fake.mode = "garbage"
    with pytest.raises(LLMError):
        llm.generate([{"role": "user", "content": "SECRET REPORT TEXT"}], max_tokens=4, timeout=5)
    text = path.read_text()
    lines = [json.loads(x) for x in text.splitlines()]
    assert [x["event"] for x in lines] == ["llm_call", "llm_result", "llm_call", "llm_result"]
    assert lines[1]["ok"] is True and lines[3]["ok"] is False and lines[0]["prompt_chars"] == 18
    assert "SECRET" not in text and fake.reply not in text


# -- ask and draft through an index --------------------------------------------------------------
def test_ask_numbers_retrieved_reports_and_maps_citations_to_ids(fake, index):
    fake.reply = "Pneumothorax [1]; compare [2] and [7]."
    a = ask(index, "small right apical pneumothorax", llm=make_llm(fake.url), k=2)
    assert a.retrieval["direction"] == "findings->impression" and a.retrieval["target"] == "impression"
    assert [s["n"] for s in a.sources] == [1, 2]
    assert a.citations == [{"n": 1, "report_id": a.sources[0]["report_id"]},
                           {"n": 2, "report_id": a.sources[1]["report_id"]}]
    assert a.invalid_citations == [7] and "[7]" not in a.text and a.text.startswith("Pneumothorax [1]")
    sent = fake.requests[-1]["body"]["messages"]
    assert sent == a.messages and f"[1] Report {a.sources[0]['report_id']}" in sent[1]["content"]
    assert a.to_dict()["invalid_citations"] == 1


def test_no_retrieval_is_the_model_alone(fake, index):
    import radsift

    a = radsift.ask(index, "small right apical pneumothorax", llm=make_llm(fake.url), retrieval=False)
    assert a.sources == [] and a.citations == [] and a.invalid_citations == [1, 7]
    assert "Report" not in fake.requests[-1]["body"]["messages"][1]["content"]


def test_question_searches_whole_reports(fake, index):
    a = ask(index, "What does the heart look like?", llm=make_llm(fake.url))
    assert a.retrieval["target"] == "report" and a.retrieval["direction"] == "question->report"


def test_bad_input(fake, index):
    llm = make_llm(fake.url)
    with pytest.raises(ConfigError, match="empty"):
        ask(index, "  \n\t ", llm=llm)
    with pytest.raises(ConfigError, match="no 'history' section"):
        ask(index, "enlarged heart", llm=llm, target="history")
    with pytest.raises(ConfigError, match="-k"):
        ask(index, "enlarged heart", llm=llm, k=0)


def test_long_input_is_cut_and_said(fake, index):
    llm = OpenAICompatLLM(fake.url, context_tokens=700)
    text = "Enlarged cardiac silhouette with vascular congestion. " * 80
    a = ask(index, text, llm=llm, max_tokens=64)
    assert a.truncated["question"] and a.truncated["retrieval_query"]
    assert any("question was cut" in n for n in a.notes)
    assert estimate_tokens(a.prompt) <= 700


def test_draft_impression_with_baseline(fake, index):
    fake.reply = "Left pleural effusion [1]."
    d = draft_impression(index, "Moderate left effusion with atelectasis at the base.", llm=make_llm(fake.url))
    assert d.baseline["impression"] == index.get_report(d.baseline["report_id"]).sections["impression"]
    assert d.draft.citations[0]["report_id"] == d.baseline["report_id"]
    assert "Findings:" not in d.draft.messages[1]["content"].split("Findings: Moderate")[0]  # priors: impressions only


def test_draft_needs_an_impression_section(fake, tmp_path):
    enc = HashingEncoder(tmp_path / "m")
    build_index(tmp_path / "idx", [Report("x", {"findings": "Clear lungs."}, {})], encoder=enc, progress=False)
    with pytest.raises(ConfigError, match="'impression' section"):
        draft_impression(Index.open(tmp_path / "idx", encoder=enc), "Clear lungs.", llm=make_llm(fake.url))


# -- the API --------------------------------------------------------------------------------------
def test_api_ask_answers_audits_and_reports_backend_errors(fake, index, tmp_path):
    from radsift.serve import create_app

    audit = tmp_path / "audit.jsonl"
    client = TestClient(create_app(index, audit_log=audit, llm={"url": fake.url}))
    res = client.post("/api/ask", json={"question": "small right apical pneumothorax", "k": 2})
    assert res.status_code == 200, res.text
    body = res.json()
    assert body["citations"][0]["n"] == 1 and body["invalid_citations"] == 1 and len(body["sources"]) == 2
    assert body["prompt"].startswith("system:") and body["backend"] == "openai-compatible"
    res = client.post("/api/ask", json={"question": "Moderate left effusion.", "task": "draft"})
    assert res.status_code == 200 and res.json()["baseline"]["report_id"]
    events = [json.loads(x)["event"] for x in audit.read_text().splitlines()]
    assert events.count("llm_call") == 2 and events.count("ask") == 2
    assert "Pneumothorax" not in audit.read_text()  # the answer is never written
    assert client.post("/api/ask", json={"question": ""}).status_code == 422
    assert client.post("/api/ask", json={"question": "x", "k": 99}).status_code == 422
    assert client.post("/api/ask", json={"question": "x", "bogus": 1}).status_code == 422
    fake.mode = "garbage"
    res = client.post("/api/ask", json={"question": "enlarged heart"})
    assert res.status_code == 502 and "not a chat completion" in res.json()["detail"]


def test_api_refuses_a_remote_endpoint_at_start(index):
    from radsift.serve import create_app

    with pytest.raises(ConfigError, match="--allow-remote-llm"):
        create_app(index, llm={"url": "http://203.0.113.9/v1"})


# -- the rag bench protocol -----------------------------------------------------------------------
class CopyImpression:
    """A scripted back-end for the protocol's bookkeeping: it answers with the impression of
    report [1] when the prompt has one, else with nothing useful."""

    backend, model, context_tokens = "scripted", "copy-impression", 4096

    def count_tokens(self, text):
        return len(text.split())

    def generate(self, messages, *, max_tokens=32, timeout=10):
        from radsift.rag.llm.base import Generation

        user = messages[-1]["content"]
        lines = [x for x in user.splitlines() if x.startswith("Impression:")]
        text = lines[0].split(":", 1)[1].strip() + " [1]" if lines else "I cannot tell."
        return Generation(text, "stop", self.backend, self.model)


def test_rag_protocol_counts_right_answers_and_compares_with_the_llm_alone():
    from radsift.evaluation.protocols.rag import Case, run_rag
    from radsift.evaluation.systems.systems import BM25System
    from radsift.labels import Labeler

    reports = [Report(f"r{i}", {"findings": f, "impression": imp}) for i, (f, imp) in enumerate([
        ("Lucent line at the apex without lung markings.", "Right pneumothorax."),
        ("Meniscus at the left base.", "Left pleural effusion."),
        ("Big heart.", "Cardiomegaly: a big heart."),
        ("Clear lungs.", "No acute cardiopulmonary abnormality."),
    ] * 3)]
    # BM25 over the impressions: each description shares one word with the impression it should find
    cases = [Case("c1", "lucency on the right", "pneumothorax"),
             Case("c2", "meniscus on the left", "pleural effusion"),
             Case("c3", "big heart", "cardiomegaly"),
             Case("c4", "meniscus on the left", "cardiomegaly")]  # retrieval finds the effusion: wrong
    res = run_rag(reports, [BM25System()], CopyImpression(), labeler=Labeler(), holdout_fraction=0.5, seed=0,
                  cases=cases, draft_reports=4)
    d = res.data["diagnosis"]
    assert d["LLM alone"]["right"] == 0
    assert d["LLM + bm25"]["right"] == d["retrieval only: bm25"]["right"] == 3
    assert res.data["mcnemar"][0]["b_only"] == 3 and res.data["per_case"]["c4"]["LLM + bm25"]["right"] is False
    draft = res.data["drafting"]["summary"]
    assert draft["LLM alone"]["micro"]["f1"] == 0.0
    assert draft["retrieval only"]["mean_f1"]["mean"] == draft["LLM + retrieval"]["mean_f1"]["mean"]
    assert res.tables[0].rows[0][0] == "LLM alone"


def test_packaged_descriptions_name_lexicon_concepts_and_do_not_give_them_away():
    from radsift.evaluation.protocols.rag import load_cases, stated
    from radsift.labels import Labeler

    labeler = Labeler()
    cases = load_cases(lexicon=labeler.lexicon)
    assert len(cases) >= 100 and len({c.id for c in cases}) == len(cases)
    for c in cases:
        assert not any(f == c.diagnosis and s != "absent" for f, s in stated(c.findings, labeler)), c.id


def test_bench_rag_is_opt_in_and_named_in_errors(tmp_path):
    from radsift.evaluation.bench import BenchConfig, _check_config

    corpus = tmp_path / "c.csv"
    corpus.write_text("uid,findings\n1,x\n")
    assert "rag" not in _check_config(BenchConfig(corpus=[corpus]))
    assert _check_config(BenchConfig(corpus=[corpus], protocols=["rag"])) == ["rag"]
    with pytest.raises(ConfigError, match="rag"):
        _check_config(BenchConfig(corpus=[corpus], protocols=["nope"]))


# -- the offline model, end to end (small max tokens: CI stays fast) ---------------------------------
@pytest.fixture(scope="module")
def smollm():
    pytest.importorskip("gguf", reason="the offline LLM needs radsift[llm]")
    from radsift.rag.llm.local_gguf import LocalGGUF, packaged_gguf

    try:
        packaged_gguf()
    except ImportError as exc:
        pytest.skip(str(exc))
    return LocalGGUF(threads=2)


def test_offline_model_answers_end_to_end(smollm, index):
    a = ask(index, "Enlarged cardiac silhouette with vascular congestion.", llm=smollm, k=2, max_tokens=8)
    assert a.backend == "local-gguf" and "SmolLM2" in a.model
    assert a.text and a.status in ("complete", "partial") and 0 < a.completion_tokens <= 8
    assert a.prompt_tokens > 50 and len(a.sources) == 2
    assert all(c["report_id"] in {s["report_id"] for s in a.sources} for c in a.citations)


def test_offline_model_timeout_gives_a_partial_answer(smollm):
    gen = smollm.generate([{"role": "user", "content": "Describe a chest radiograph."}], max_tokens=64,
                          timeout=0.001)
    assert gen.finish_reason == "timeout" and gen.completion_tokens < 64


# -- the command line ------------------------------------------------------------------------------
def test_cli_ask_and_draft_impression_with_an_endpoint(fake, index, tmp_path, monkeypatch):
    from radsift.cli import app

    # the index was built with the hashing encoder: the CLI loads it in place of a real model
    monkeypatch.setattr("radsift.models.encoder.Encoder.load",
                        classmethod(lambda cls, model=None, **kw: HashingEncoder(model)))

    audit = tmp_path / "llm.jsonl"
    runner = CliRunner()
    res = runner.invoke(app, ["ask", str(index.path), "small right apical pneumothorax", "--llm-url", fake.url,
                              "--audit-log", str(audit), "--json", "-k", "2"])
    assert res.exit_code == 0, res.output
    body = json.loads(res.output)
    assert body["citations"][0]["n"] == 1 and body["invalid_citations"] == 1 and len(body["sources"]) == 2
    findings = tmp_path / "findings.txt"
    findings.write_text("Moderate left effusion\nwith atelectasis at the base.\n")
    res = runner.invoke(app, ["draft-impression", str(index.path), "--findings", str(findings), "--llm-url", fake.url,
                              "--audit-log", str(audit)])
    assert res.exit_code == 0, res.output
    assert "Drafted impression" in res.output and "Retrieval only" in res.output
    assert "Findings: Moderate left effusion with atelectasis" in fake.requests[-1]["body"]["messages"][1]["content"]
    lines = [json.loads(x) for x in audit.read_text().splitlines()]
    assert [x["event"] for x in lines] == ["llm_call", "llm_result", "ask"] * 2
    assert lines[2]["query"] == "small right apical pneumothorax" and lines[2]["result_ids_count"] == 2
    assert lines[5]["params"]["task"] == "draft" and lines[5]["query"]["chars"] > 0  # findings: size and hash
    assert "Moderate left effusion" not in audit.read_text()
    res = runner.invoke(app, ["ask", str(index.path), "   ", "--llm-url", fake.url, "--audit-log", str(audit)])
    assert res.exit_code == 2 and "empty" in res.output


def test_model_options_need_an_endpoint():
    with pytest.raises(ConfigError, match="go with --llm-url"):
        make_llm(None, "llama3")
