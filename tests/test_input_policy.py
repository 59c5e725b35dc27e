"""One input policy (issue 18 item 5): the checks of radsift.search.query decide for CLI, Python and HTTP."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from radsift.cli import app
from radsift.errors import ConfigError
from radsift.records import Report
from radsift.search import Index

REPORTS = [Report("a", {"findings": "Small right pneumothorax."}, {"site": "north"}),
           Report("b", {"findings": "No pleural effusion."}, {"site": "south"})]


@pytest.fixture(scope="module")
def index(hashing_index_of):
    return hashing_index_of("policy", REPORTS)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"k": 0}, "k: must be from 1 to"),
    ({"k": 1.5}, "k: must be a whole number"),
    ({"k": True}, "k: must be a whole number"),
    ({"k": "10"}, "k: must be a whole number"),
    ({"k": 10 ** 6}, "k: must be from 1 to"),
    ({"target": "impresion"}, "target must be one of"),
    ({"target": 3}, "target: must be a section name"),
    ({"where": ["color=red"]}, "unknown metadata key 'color'"),
    ({"where": "site=north"}, "where: must be a list"),
    ({"mode": None}, "mode must be one of"),
    ({"rerank": -1}, "rerank: must be 0"),
])
def test_bad_options_are_errors_naming_the_option(index, kwargs, message):
    with pytest.raises(ConfigError, match=message):
        index.search("pneumothorax", **kwargs)


@pytest.mark.parametrize(("query", "message"), [
    (None, "the query must be text, not NoneType"),
    (b"pneumothorax", "the query must be text, not bytes"),
    (["pneumothorax"], "the query must be text, not list"),
    ("\x00\x00", "holds a NUL character"),
    ("pneumothorax\x00", "holds a NUL character"),
    ("\u200b\u200b \u2060", "the query is empty"),
    ("bad \udcff bytes", "not valid UTF-8"),
])
def test_queries_that_are_no_text_are_errors(index, query, message):
    with pytest.raises(ConfigError, match=message):
        index.search(query)


def test_invisible_characters_are_taken_out_of_a_query(index):
    hits = index.search("pneu\u200bmothorax\x07", k=1, mode="bm25")
    assert hits and hits[0].report_id == "a"


def test_the_cli_and_the_api_refuse_the_same_things(index, tmp_path):
    from fastapi.testclient import TestClient

    from radsift.serve import create_app

    client = TestClient(create_app(index))
    res = client.get("/api/search", params={"q": "\u200b"})
    assert res.status_code == 422 and "the query is empty" in res.json()["detail"]
    cli = CliRunner().invoke(app, ["search", str(index.path), "\u200b", "--mode", "bm25"])
    assert cli.exit_code == 2 and "the query is empty" in cli.output
    cli = CliRunner().invoke(app, ["search", str(index.path), "pneumothorax", "-k", "0", "--mode", "bm25"])
    assert cli.exit_code == 2 and "k: must be from 1 to" in cli.output


def test_a_malformed_model_folder_is_a_clear_error_everywhere(index, tmp_path):
    bad = tmp_path / "bad-model"
    bad.mkdir()
    (bad / "modules.json").write_text(json.dumps({"not": "a list"}))
    for args in (["search", str(index.path), "pneumothorax", "--model", str(bad)],
                 ["index", "add", str(index.path), str(tmp_path / "none.csv"), "--id-column", "id",
                  "--section", "findings=findings", "--model", str(bad)]):
        (tmp_path / "none.csv").write_text("id,findings\nz,Cardiomegaly.\n")
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 2 and "modules.json: expected a list of modules" in res.output, res.output


def test_opening_something_that_is_no_index_folder_is_a_clear_error(tmp_path):
    from radsift.errors import IndexStoreError

    (tmp_path / "a-file").write_text("x")
    for path, message in ((tmp_path / "a-file", "is a file, not an index folder"),
                          (tmp_path / "nothing", "index not found"), (tmp_path, "no CURRENT file")):
        with pytest.raises(IndexStoreError, match=message):
            Index.open(path)
