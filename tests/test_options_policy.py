"""One input policy (issue 32 item 4): the same input is accepted or refused alike by the CLI, Python and
HTTP, and a refusal is the same one sentence on each (CLI: one ``error:`` line; HTTP: 422; Python: ConfigError)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from radsift.cli import app as cli_app
from radsift.errors import ConfigError
from radsift.records import Report
from radsift.search.options import POLICY, SearchOptions, from_wire, http_options, wire_options
from radsift.search.query import MAX_K, MAX_QUERY_CHARS, MAX_RERANK
from radsift.serve import create_app

REPORTS = [Report(str(i), {"findings": f"Small right pneumothorax number {i}.", "impression": "Pneumothorax."})
           for i in range(3)]
LONG = "pneumothorax " * 76 + "x" * 12  # 1000 characters once cleaned


@pytest.fixture(scope="module")
def setup(hashing_index_of):
    index = hashing_index_of("policy", REPORTS)
    return index, TestClient(create_app(index))


def three_ways(setup, query: str, options: dict[str, str], http_query: str | None = None):
    """(CLI, Python, HTTP) outcomes of one search: None when answered, else the refusal's sentence."""
    index, client = setup
    flags = {"k": "-k", "rerank": "--rerank", "offset": "--offset", "alpha": "--alpha", "mode": "--mode"}
    args = ["search", str(index.path), query, "--json"] + ([] if "mode" in options else ["--mode", "bm25"])
    for name, value in options.items():
        args += [flags[name], value]
    res = CliRunner().invoke(cli_app, args)
    if res.exit_code == 0:
        cli = None
    else:
        lines = res.output.strip().splitlines()
        assert res.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), res.output
        cli = lines[0][len("error: "):]
    try:
        index.search(query, **{"mode": "bm25", **{k: from_wire(k, v) for k, v in options.items()}})
        python = None
    except ConfigError as exc:
        python = str(exc)
    if http_query is not None:
        r = client.get(f"/api/search?{http_query}")
    else:
        r = client.get("/api/search", params={"q": query, "mode": "bm25", **options})  # options' mode wins
    assert r.status_code in (200, 422), r.text
    http = None if r.status_code == 200 else r.json()["detail"]
    return cli, python, http


@pytest.mark.parametrize(("query", "options", "refusal"), [
    ("pneumothorax", {"k": "5000"}, f"k: must be from 1 to {MAX_K}, not 5000"),
    ("pneumothorax", {"k": str(MAX_K)}, None),
    ("pneumothorax", {"k": "1e9"}, "k: must be a whole number of hits, not '1e9'"),
    ("pneumothorax", {"k": "2.5"}, "k: must be a whole number of hits, not '2.5'"),
    ("pneumothorax", {"k": "0"}, f"k: must be from 1 to {MAX_K}, not 0"),
    ("pneumothorax", {"rerank": "5000"}, f"rerank: must be from 0 to {MAX_RERANK}, not 5000"),
    ("pneumothorax", {"offset": "2000000"}, "offset: must be from 0 to 1000000, not 2000000"),
    ("pneumothorax", {"alpha": "abc"}, "alpha: must be a number within [0, 1], not 'abc'"),
    ("pneumothorax", {"alpha": "0.5"}, None),
    ("pneumothorax", {"mode": "bogus"}, "mode must be one of dense, bm25, hybrid, hybrid-rrf, not 'bogus'"),
    (LONG, {}, None),
    (LONG + "   " * 300, {}, None),  # spaces are collapsed before the length is counted, on every surface
    (LONG + "y", {}, f"the query is 1001 characters long; the limit is {MAX_QUERY_CHARS}"),
    ("\u200b \u2060", {}, "the query is empty (nothing but spaces, control or invisible characters)"),
])
def test_the_cli_python_and_http_accept_and_refuse_alike_in_one_sentence(setup, query, options, refusal):
    assert three_ways(setup, query, options) == (refusal, refusal, refusal)


def test_a_query_that_is_not_utf8_is_refused_alike(setup):
    # On the command line undecodable bytes arrive as lone surrogates; in a URL as %FF.
    sentence = "the query is not valid UTF-8 text"
    assert three_ways(setup, "pneumo\udcffthorax", {}, http_query="q=pneumo%FFthorax&mode=bm25") == (sentence,) * 3


def test_a_nul_is_refused_alike(setup):
    # Refused, not removed (issue 32): CLI one error line, Python ConfigError, HTTP 422, the same sentence.
    sentence = "the query holds a NUL character (U+0000); it is refused, not removed"
    assert three_ways(setup, "pneumo\x00thorax", {}) == (sentence,) * 3
    assert three_ways(setup, "pneumothorax", {}, http_query="q=pneumo%00thorax&mode=bm25") == (None, None, sentence)
    index, client = setup
    for path in ("/api/export?q=pneumo%00thorax&mode=bm25", "/api/passages?q=pneumo%00thorax",
                 "/api/reports/0?q=pneumo%00thorax"):
        res = client.get(path)
        assert res.status_code == 422 and res.json()["detail"] == sentence, (path, res.text)
    res = client.post("/api/saved", json={"name": "nul", "q": "pneumo\x00thorax"})
    assert res.status_code == 422 and sentence in res.text, res.text
    # Other controls are still taken out, as the policy table says.
    assert index.search("pneumo\x07thorax", k=1, mode="bm25")[0].report_id in {"0", "1", "2"}
    assert any("NUL" in rule.limit for rule in POLICY if rule.what == "query encoding")


def test_the_api_declares_no_bounds_of_its_own():
    # The one table decides: the API's bounds are the options' own (no tighter HTTP ones).
    by_name = {o.name: o for o in http_options()}
    assert by_name["k"].high == MAX_K and by_name["rerank"].high == MAX_RERANK
    assert {r.what for r in POLICY} >= {"query", "query encoding", "k", "offset", "rerank"}


def test_wire_options_reads_text_as_the_options_type_and_checks_it():
    assert wire_options({"k": "25", "offset": " 50 ", "alpha": "0.25"}) == SearchOptions(k=25, offset=50, alpha=0.25)
    with pytest.raises(ConfigError, match=r"^k: must be a whole number of hits, not '1e9'$"):
        wire_options({"k": "1e9"})


@pytest.mark.parametrize(("k", "sentence"), [("1e9", "k: must be a whole number of hits, not '1e9'"),
                                             ("5000", f"k: must be from 1 to {MAX_K}, not 5000")])
def test_run_refuses_a_bad_depth_in_one_line_before_opening_the_index(tmp_path, k, sentence):
    queries = tmp_path / "q.tsv"
    queries.write_text("q1\tpneumothorax\n")
    res = CliRunner().invoke(cli_app, ["run", str(tmp_path / "missing"), "--queries", str(queries),
                                       "--out", str(tmp_path / "run.trec"), "-k", k])
    assert res.exit_code == 2 and res.output.strip() == f"error: {sentence}"


@pytest.mark.parametrize("command", [["ask", "IDX", "enlarged heart"], ["draft-impression", "IDX", "--findings", "x"]])
@pytest.mark.parametrize("k, sentence", [("1e9", "k: must be a whole number of reports, not '1e9'"),
                                         ("50", "k: must be from 1 to 20, not 50")])
def test_ask_k_is_one_line_of_error(tmp_path, command, k, sentence):
    from typer.testing import CliRunner

    from radsift.cli import app

    res = CliRunner().invoke(app, [str(tmp_path) if c == "IDX" else c for c in command] + ["-k", k])
    assert res.exit_code == 2 and sentence in res.output and "Usage" not in res.output
