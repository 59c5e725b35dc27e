"""Nothing leaves unseen (issue 32, item 2): no report text in an audit line, exports audited with
the report ids before the file is written (no line, no file), CLI searches audited like the web
service's, and a failed audit write is one line of error, never a traceback or a file."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from radsift.cli import app
from radsift.index import build_index
from radsift.models.hashing import HashingEncoder
from radsift.records import Report
from radsift.search import Index
from radsift.search.cohort import provenance_path, read_cohort_csv
from radsift.serve.audit import ID_LIST_MAX, TEXT_CHARS, AuditLog, id_summary, text_summary

FINDINGS = ("Moderate left pleural effusion with adjacent basilar atelectasis. Mild cardiomegaly is seen. "
            "No pneumothorax.")


def _reports() -> list[Report]:
    texts = ["Small right apical pneumothorax. Heart size is normal.", "No pneumothorax or pleural effusion.",
             FINDINGS, "Enlarged cardiac silhouette with vascular congestion."]
    return [Report(f"r{i:02d}", {"findings": texts[i % 4], "impression": f"Impression number {i}."}, {"site": "A"})
            for i in range(12)]


@pytest.fixture()
def index_dir(tmp_path, hashing_model) -> Path:
    build_index(tmp_path / "idx", _reports(), encoder=HashingEncoder(hashing_model), progress=False)
    return tmp_path / "idx"


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def _run(*args: str):
    return CliRunner().invoke(app, [str(a) for a in args])


def _one_line_error(res) -> None:
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert res.output.strip().startswith("error:") and len(res.output.strip().splitlines()) == 1


# -- the audit log itself ------------------------------------------------------------------------------
def test_long_text_is_written_as_its_size_and_hash(tmp_path):
    log = AuditLog(tmp_path / "a.jsonl")
    log.write("x", client=None, token_id=None, query="pneumothorax", note=FINDINGS * 3,
              params={"deep": ["short", FINDINGS * 2]})
    line = _lines(tmp_path / "a.jsonl")[0]
    assert line["query"] == "pneumothorax"
    assert line["note"] == {"chars": len(FINDINGS * 3), "sha256": hashlib.sha256((FINDINGS * 3).encode()).hexdigest()}
    assert line["params"]["deep"][0] == "short" and line["params"]["deep"][1]["chars"] == 2 * len(FINDINGS)
    assert "effusion" not in (tmp_path / "a.jsonl").read_text()
    assert text_summary("x" * (TEXT_CHARS + 1))["chars"] == TEXT_CHARS + 1


def test_id_summary_lists_ids_up_to_the_limit_then_hash_and_count():
    small = id_summary(["b", "a"])
    assert small["report_ids"] == ["b", "a"] and small["report_ids_count"] == 2
    assert small["report_ids_sha256"] == hashlib.sha256(b"a\nb").hexdigest() == id_summary(["a", "b"])["report_ids_sha256"]
    big = id_summary([f"r{i}" for i in range(ID_LIST_MAX + 1)])
    assert "report_ids" not in big and big["report_ids_count"] == ID_LIST_MAX + 1


# -- the web service -----------------------------------------------------------------------------------
class Echo:
    """A back-end that answers without reading (the audit is what is tested)."""

    backend, model, context_tokens = "scripted", "echo", 4096

    def count_tokens(self, text):
        return len(text.split())

    def generate(self, messages, *, max_tokens=32, timeout=10):
        from radsift.rag.llm.base import Generation

        return Generation("Effusion [1].", "stop", self.backend, self.model)


def test_api_draft_audits_the_findings_as_size_and_hash(index_dir, hashing_model, tmp_path):
    from radsift.serve import create_app

    audit = tmp_path / "audit.jsonl"
    index = Index.open(index_dir, encoder=HashingEncoder(hashing_model))
    client = TestClient(create_app(index, audit_log=audit, llm=Echo()))
    res = client.post("/api/ask", json={"question": "No pneumothorax.", "task": "draft"})  # short: still report text
    assert res.status_code == 200, res.text
    res = client.post("/api/ask", json={"question": FINDINGS, "task": "draft"})
    assert res.status_code == 200, res.text
    res = client.post("/api/ask", json={"question": "enlarged heart"})
    asks = [x for x in _lines(audit) if x["event"] == "ask"]
    assert asks[0]["query"] == text_summary("No pneumothorax.")
    assert asks[1]["query"]["sha256"] == hashlib.sha256(FINDINGS.encode()).hexdigest()
    assert asks[2]["query"] == "enlarged heart"  # a question is a query, audited as one
    text = audit.read_text()
    assert "No pneumothorax" not in text and "pleural effusion" not in text


def test_api_export_audits_which_reports_left(index_dir, hashing_model, tmp_path):
    from radsift.serve import create_app

    audit = tmp_path / "audit.jsonl"
    index = Index.open(index_dir, encoder=HashingEncoder(hashing_model))
    client = TestClient(create_app(index, audit_log=audit))
    res = client.get("/api/export", params={"q": "pneumothorax", "mode": "bm25"})
    assert res.status_code == 200
    ids = [line.split(",")[0] for line in res.text.splitlines()[1:]]
    line = [x for x in _lines(audit) if x["event"] == "export"][-1]
    assert ids and line["report_ids"] == ids and line["report_ids_count"] == len(ids)
    client.post("/api/saved", json={"name": "ptx", "q": "pneumothorax", "mode": "bm25"})
    ran = client.post("/api/saved/ptx/run").json()
    line = [x for x in _lines(audit) if x["event"] == "saved-run"][-1]
    assert line["report_ids"] == [r["report_id"] for r in ran["rows"]]
    os.remove(audit)
    audit.mkdir()  # the audit file replaced by a folder: nothing leaves
    res = client.get("/api/export", params={"q": "pneumothorax", "mode": "bm25"})
    assert res.status_code == 503 and "report_id" not in res.text and "cannot be written" in res.json()["detail"]


# -- the command line: exports -----------------------------------------------------------------------------
def test_cli_export_writes_its_audit_line_with_the_ids_before_the_file(index_dir, tmp_path, monkeypatch):
    import radsift.cli.search_cmds as cmds

    seen = {}
    real = cmds.write_cohort

    def spy(cohort, out, *args, **kwargs):  # what the audit trail holds when the file is about to be written
        seen["lines"] = _lines(index_dir / "audit" / "exports.jsonl")
        return real(cohort, out, *args, **kwargs)

    monkeypatch.setattr(cmds, "write_cohort", spy)
    out = tmp_path / "ptx.csv"
    res = _run("export", index_dir, "pneumothorax", "--out", out, "--mode", "bm25")
    assert res.exit_code == 0, res.output
    ids = [r["report_id"] for r in read_cohort_csv(out)]
    assert seen["lines"] and seen["lines"][-1]["event"] == "export" and seen["lines"][-1]["report_ids"] == ids
    assert seen["lines"][-1]["file"] == str(out.resolve())


@pytest.mark.parametrize("how", ["dev-full", "folder", "provenance-folder"])
def test_cli_export_whose_audit_fails_writes_no_file(index_dir, tmp_path, how):
    out = tmp_path / "ptx.csv"
    args = ["export", index_dir, "pneumothorax", "--out", out, "--mode", "bm25"]
    if how == "dev-full":
        if not Path("/dev/full").exists():
            pytest.skip("no /dev/full here")
        args += ["--audit-log", "/dev/full"]
    elif how == "folder":
        (tmp_path / "audit-dir").mkdir()
        args += ["--audit-log", tmp_path / "audit-dir"]
    else:
        provenance_path(out).mkdir()
    res = _run(*args)
    _one_line_error(res)
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".ptx")]
    if how == "provenance-folder":
        assert "provenance" in res.output and _lines(index_dir / "audit" / "exports.jsonl") == []


def test_cli_saved_run_out_is_audited_before_the_file_and_refuses_no_audit(index_dir, tmp_path):
    assert _run("saved", "add", index_dir, "ptx", "pneumothorax", "--mode", "bm25").exit_code == 0
    out = tmp_path / "run.csv"
    _one_line_error(_run("saved", "run", index_dir, "ptx", "--out", out, "--no-audit"))
    _one_line_error(_run("saved", "run", index_dir, "ptx", "--out", out, "--audit-log", "/dev/full"))
    assert not out.exists()
    res = _run("saved", "run", index_dir, "ptx", "--out", out)
    assert res.exit_code == 0, res.output
    line = _lines(index_dir / "audit" / "exports.jsonl")[-1]
    assert line["event"] == "export" and line["saved_search"] == "ptx"
    assert line["report_ids"] == [r["report_id"] for r in read_cohort_csv(out)]


# -- the command line: searches ------------------------------------------------------------------------------
def test_cli_search_is_audited_in_the_index_by_default(index_dir, tmp_path):
    res = _run("search", index_dir, "pneumothorax", "--mode", "bm25", "-k", "3", "--json")
    assert res.exit_code == 0, res.output
    hits = [h["report_id"] for h in json.loads(res.output)["hits"]]
    line = _lines(index_dir / "audit" / "searches.jsonl")[-1]
    assert line["event"] == "search" and line["client"] == "cli" and line["user"]
    assert line["query"] == "pneumothorax" and line["result_ids"] == hits and line["params"]["k"] == 3
    assert line["params"]["mode"] == "bm25"
    other = tmp_path / "elsewhere.jsonl"
    assert _run("search", index_dir, "effusion", "--audit-log", other).exit_code == 0
    assert _lines(other)[-1]["query"] == "effusion"
    before = (index_dir / "audit" / "searches.jsonl").read_text()
    assert _run("search", index_dir, "effusion", "--no-audit").exit_code == 0
    assert (index_dir / "audit" / "searches.jsonl").read_text() == before
    _one_line_error(_run("search", index_dir, "effusion", "--no-audit", "--audit-log", other))


def test_cli_search_whose_audit_fails_prints_no_result(index_dir):
    res = _run("search", index_dir, "pneumothorax", "--mode", "bm25", "--audit-log", "/dev/full")
    _one_line_error(res)
    assert "apical" not in res.output and "/dev/full" in res.output


def test_cli_passage_search_and_saved_run_are_audited(index_dir):
    res = _run("search", index_dir, "pneumothorax | history", "--mode", "bm25", "--json")
    assert res.exit_code == 0, res.output
    line = _lines(index_dir / "audit" / "searches.jsonl")[-1]
    assert line["event"] == "passages" and line["result_ids"] == [h["report_id"] for h in json.loads(res.output)["hits"]]
    assert _run("saved", "add", index_dir, "ptx", "pneumothorax", "--mode", "bm25").exit_code == 0
    res = _run("saved", "run", index_dir, "ptx", "--json")
    assert res.exit_code == 0, res.output
    line = _lines(index_dir / "audit" / "searches.jsonl")[-1]
    assert line["event"] == "saved-run" and line["name"] == "ptx"
    assert line["result_ids"] == [r["report_id"] for r in json.loads(res.output)["rows"]]


def test_a_long_pasted_query_is_not_written_whole(index_dir):
    query = " ".join([FINDINGS] * 3)
    assert _run("search", index_dir, query, "--mode", "bm25").exit_code == 0
    line = _lines(index_dir / "audit" / "searches.jsonl")[-1]
    assert line["query"]["chars"] == len(query) and "effusion" not in json.dumps(line)


def test_a_read_only_index_folder_is_refused_in_one_line_naming_the_ways_out(index_dir, monkeypatch):
    import radsift.serve.audit as audit_module

    real = audit_module.AuditLog.__init__

    def read_only(self, path, **kwargs):  # as a read-only mount answers (root ignores chmod, so the test says it)
        if Path(path).parent == index_dir / "audit":
            raise audit_module.ConfigError(f"--audit-log {path}: cannot append to it (Read-only file system)")
        real(self, path, **kwargs)

    monkeypatch.setattr(audit_module.AuditLog, "__init__", read_only)
    res = _run("search", index_dir, "pneumothorax", "--mode", "bm25")
    _one_line_error(res)
    assert "--audit-log FILE" in res.output and "--no-audit" in res.output and "Read-only" in res.output
    assert _run("search", index_dir, "pneumothorax", "--mode", "bm25", "--no-audit").exit_code == 0
    res = _run("export", index_dir, "pneumothorax", "--out", index_dir.parent / "x.csv")
    _one_line_error(res)
    assert "--audit-log FILE" in res.output and "--no-audit" not in res.output


def test_cli_export_whose_file_then_fails_says_so_in_a_second_line(index_dir, tmp_path, monkeypatch):
    import radsift.cli.search_cmds as cmds
    from radsift.errors import ConfigError

    def fail(*args, **kwargs):
        raise ConfigError(f"--out {tmp_path / 'x.csv'}: cannot write it (No space left on device)")

    monkeypatch.setattr(cmds, "write_cohort", fail)
    _one_line_error(_run("export", index_dir, "pneumothorax", "--out", tmp_path / "x.csv", "--mode", "bm25"))
    export, failed = _lines(index_dir / "audit" / "exports.jsonl")[-2:]
    assert export["event"] == "export" and failed["event"] == "export-failed"
    assert failed["file"] == export["file"] and "No space left" in failed["error"]
