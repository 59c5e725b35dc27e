"""CSV cells a spreadsheet would run as formulas (issue 32, item 2): every text cell of every column
of a cohort CSV, report ids and the header included, that starts with = + - @, a tab or a carriage
return gets a leading apostrophe (OWASP's advice), from the CLI, Python and HTTP alike."""

from __future__ import annotations

import csv
import io

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from radsift.index import build_index
from radsift.models.hashing import HashingEncoder
from radsift.records import Report
from radsift.search import Index
from radsift.search.cohort import FORMULA_STARTS, collect_cohort, csv_cell, render_cohort

NASTY = ("=HYPERLINK(\"http://x\")", "@SUM(A1)", "+1+1", "-2+3", "\tTAB", "\rCR")


def _reports() -> list[Report]:
    out = []
    for i, start in enumerate(NASTY):
        # the id, the metadata value and the evidence sentence all start like a formula
        out.append(Report(f"{start}{i}", {"findings": f"{start} pneumothorax is present on the right."},
                          {"site": f"{start}site", "ward": i}))
    # a carriage return inside a cell would start a new spreadsheet row whose first cell is a formula
    out.append(Report("plain", {"findings": "Small right pneumothorax."},
                      {"site": "north", "ward": -3, "note": "ok\r=cmd()|' /C calc'!A0"}))
    return out


@pytest.fixture()
def index(tmp_path, hashing_model):
    build_index(tmp_path / "idx", _reports(), encoder=HashingEncoder(hashing_model), progress=False)
    return Index.open(tmp_path / "idx", encoder=HashingEncoder(hashing_model))


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _assert_no_formula(text: str) -> list[list[str]]:
    rows = list(csv.reader(io.StringIO(text, newline="")))
    for row in rows:
        for cell in row:
            # a number radsift computed (a negative score, a metadata number) is a number, not a formula
            assert not cell.startswith(FORMULA_STARTS) or _is_number(cell), (cell, row[0])
    return rows


def test_csv_cell_neutralises_every_formula_start_and_keeps_numbers():
    for start in FORMULA_STARTS:
        assert csv_cell(f"{start}x") == f"'{start}x"
    assert csv_cell("plain") == "plain" and csv_cell("") == "" and csv_cell(None) == ""
    assert csv_cell(-0.25) == -0.25 and csv_cell(3) == 3 and csv_cell("-0.25") == "'-0.25"


def test_every_column_of_a_cohort_csv_is_neutralised(index):
    cohort = collect_cohort(index, "pneumothorax", include="all", mode="bm25")
    rows = _assert_no_formula(render_cohort(cohort, "csv"))
    header, body = rows[0], rows[1:]
    ids = {r[header.index("report_id")] for r in body}
    assert {f"'{start}{i}" for i, start in enumerate(NASTY)} <= ids and "plain" in ids
    sites = {r[header.index("meta.site")] for r in body}
    assert "'=HYPERLINK(\"http://x\")site" in sites and "north" in sites
    wards = {r[header.index("meta.ward")] for r in body}
    assert "-3" in wards  # a number stays a number
    evidence = {r[header.index("evidence")] for r in body}
    assert any(e.startswith("'@SUM(A1)") for e in evidence)
    assert len(body) == len(NASTY) + 1 and "ok\r=cmd()|' /C calc'!A0" in {r[header.index("meta.note")] for r in body}


def test_cli_and_http_exports_are_neutralised(index, tmp_path, hashing_model):
    from radsift.cli import app
    from radsift.serve import create_app

    out = tmp_path / "c.csv"
    res = CliRunner().invoke(app, ["export", str(index.path), "pneumothorax", "--out", str(out), "--include", "all",
                                   "--mode", "bm25"])
    assert res.exit_code == 0, res.output
    assert len(_assert_no_formula(out.read_text(encoding="utf-8"))) == len(NASTY) + 2
    client = TestClient(create_app(index))
    res = client.get("/api/export", params={"q": "pneumothorax", "include": "all", "mode": "bm25"})
    assert res.status_code == 200 and len(_assert_no_formula(res.text)) == len(NASTY) + 2


def test_the_demo_corpus_csv_has_no_formula_cell(tmp_path):
    """The one other CSV radsift writes is the demo corpus: radsift's own input format (read back by its
    CSV reader, so an apostrophe would change the report text), written from text radsift generates.
    Guard that it never holds a cell a spreadsheet would run."""
    from radsift.demo import write_demo_corpus

    files = write_demo_corpus(tmp_path, n=300, seed=3)
    _assert_no_formula(files.reports_csv.read_text(encoding="utf-8"))
