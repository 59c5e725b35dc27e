"""From a search to a cohort: counts, paging, export with evidence and provenance, saved searches.

A small index of reports written for this test, with the hashing encoder (no model): what is
tested is counting, paging and writing, which do not depend on what the dense scores are.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from radsift.errors import ConfigError
from radsift.index import add_to_index, build_index
from radsift.models.hashing import HashingEncoder
from radsift.records import Report
from radsift.search.cohort import collect_cohort, provenance_path, read_cohort_csv, write_cohort
from radsift.search.saved import SavedSearches, check_name

MODES = ("dense", "bm25", "hybrid", "hybrid-rrf")


def _reports() -> list[Report]:
    out = []
    texts = {
        "ptx": "Small right apical pneumothorax.",
        "ptx-no": "No pneumothorax. Lungs are clear.",
        "eff": "Small left pleural effusion.",
        "eff-no": "No pleural effusion or pneumothorax.",
        "cm": "Cardiomegaly. No focal consolidation.",
        "normal": "Heart size is normal. The lungs are clear.",
    }
    for i in range(60):  # 60 reports: several pages of 7
        kind = list(texts)[i % len(texts)]
        out.append(Report(f"r{i:03d}-{kind}", {"findings": texts[kind], "impression": f"Study {i}. {texts[kind]}"},
                          {"site": "A" if i % 2 else "B"}))
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from radsift.search import Index

    root = tmp_path_factory.mktemp("cohort")
    enc = HashingEncoder(root / "model")
    build_index(root / "idx", _reports(), encoder=enc, progress=False)
    return root, enc, Index.open(root / "idx", encoder=enc)


def _stating(index, finding: str, status: int) -> set[str]:
    """Reports whose stored sentence labels state (finding, status): the count's reference."""
    store = index.live_store()
    labels = store.labels()
    code = store.manifest.findings.index(finding)
    rows = labels.row[(labels.finding == code) & (labels.status == status)]
    report_rows = np.unique(store.units("sentence").report_row[rows])
    ids = store.report_ids
    return {ids[r] for r in report_rows.tolist()}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("query,finding,status", [("pneumothorax", "pneumothorax", 1),
                                                  ("no pneumothorax", "pneumothorax", -1),
                                                  ("pleural effusion", "pleural effusion", 1)])
def test_matching_counts_the_reports_whose_labels_state_the_reading(built, mode, query, finding, status):
    _, _, index = built
    expected = _stating(index, finding, status)
    hits = index.search(query, k=5, mode=mode)
    assert hits.matching == len(expected) > 0
    every = index.search(query, k=100, mode=mode)
    assert {h.report_id for h in every if h.band == "states"} == expected
    assert [h.band for h in every][:len(expected)] == ["states"] * len(expected)  # they rank first


def test_total_counts_the_whole_ranked_list(built):
    _, _, index = built
    assert index.search("pneumothorax", k=3, mode="hybrid").total == 60
    bm25 = index.search("effusion", k=3, mode="bm25", negation="ignore")
    assert bm25.total == len(index.search("effusion", k=100, mode="bm25", negation="ignore")) == 20
    assert index.search("pneumothorax", k=3, where=["site=A"]).total == 30
    assert index.search("lungs", k=3, level="sentence", mode="bm25").total == 40  # 20 reports x 2 sections
    assert index.search("clear lungs", k=3, negation="ignore").matching is None  # nothing read: no count


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("level", ["report", "sentence"])
def test_pages_neither_repeat_nor_miss_a_hit(built, mode, level):
    _, _, index = built
    whole = index.search("small pneumothorax", k=1000, mode=mode, level=level)
    key = (lambda h: h.report_id) if level == "report" else (lambda h: h.sentence.uid)
    paged, offset = [], 0
    while True:
        page = index.search("small pneumothorax", k=7, mode=mode, level=level, offset=offset)
        assert [h.rank for h in page] == list(range(offset + 1, offset + len(page) + 1))
        assert page.total == whole.total
        paged += page
        if not page.more:
            break
        offset += 7
    assert [key(h) for h in paged] == [key(h) for h in whole]
    assert len({key(h) for h in paged}) == len(paged) == whole.total


def test_an_offset_past_the_end_is_an_empty_page_and_a_bad_one_an_error(built):
    _, _, index = built
    page = index.search("pneumothorax", k=10, offset=500)
    assert list(page) == [] and page.total == 60 and not page.more
    for bad in (-1, 1.5, "3", True, 10**9):
        with pytest.raises(ConfigError, match="offset"):
            index.search("pneumothorax", offset=bad)


def test_bands_mark_where_the_stating_reports_end(built):
    _, _, index = built
    hits = index.search("pneumothorax", k=60)
    bands = [h.band for h in hits]
    n = hits.matching
    assert bands[:n] == ["states"] * n and "states" not in bands[n:]
    assert all(0.0 <= h.relevance <= 1.0 for h in hits)
    denied = [h for h in hits if h.report_id.endswith("ptx-no")]
    assert denied and all(h.band == "unlikely" for h in denied)  # states the opposite


def test_export_round_trip_with_evidence_and_provenance(built, tmp_path):
    _, _, index = built
    cohort = collect_cohort(index, "pneumothorax")
    assert cohort.include == "states" and len(cohort.rows) == cohort.matching == len(_stating(index, "pneumothorax", 1))
    out, side = write_cohort(cohort, tmp_path / "cohort.csv")
    rows = read_cohort_csv(out)
    assert [r["report_id"] for r in rows] == [r.hit.report_id for r in cohort.rows]
    report = {r.id: r for r in _reports()}
    for row in rows:
        section, start, end = row["evidence_section"], int(row["evidence_start"]), int(row["evidence_end"])
        assert report[row["report_id"]].sections[section][start:end] == row["evidence"]
        assert "pneumothorax" in row["evidence"].lower() and row["status"] == "present" and row["band"] == "states"
        assert row["meta.site"] in ("A", "B")
        every = json.loads(row["evidence_all"])
        assert len(every) == 2  # findings and impression both state it
        for e in every:
            text = report[row["report_id"]].sections[e["section"]]
            assert text[e["start"]:e["end"]] == e["text"]
            assert text[e["mention_start"]:e["mention_end"]].lower() == "pneumothorax"
    prov = json.loads(side.read_text())
    assert side == provenance_path(out)
    for key in ("query", "reading", "options", "index", "radsift_version", "created", "user", "rows", "matching"):
        assert key in prov
    assert prov["query"] == "pneumothorax" and prov["rows"] == len(rows)
    assert prov["reading"]["findings"][0] == {**prov["reading"]["findings"][0], "finding": "pneumothorax",
                                              "status": "present"}
    assert prov["index"]["model_fingerprint"] == index.manifest.model_fingerprint
    assert prov["index"]["generation"] == index.stats()["generation"]


def test_export_jsonl_and_negated_cohort(built, tmp_path):
    _, _, index = built
    cohort = collect_cohort(index, "no pneumothorax", mode="bm25")
    out, _ = write_cohort(cohort, tmp_path / "neg.jsonl")
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert {d["report_id"] for d in lines} == _stating(index, "pneumothorax", -1)
    assert all(d["status"] == "absent" and d["cue"] for d in lines)


def test_export_refuses_more_rows_than_the_limit_and_writes_nothing(built, tmp_path):
    _, _, index = built
    with pytest.raises(ConfigError, match=r"at most 3 .*--max-rows"):
        cohort = collect_cohort(index, "pneumothorax", max_rows=3)
        write_cohort(cohort, tmp_path / "c.csv")
    with pytest.raises(ConfigError, match="--max-rows"):
        collect_cohort(index, "pneumothorax", include="all", max_rows=59)
    assert not list(tmp_path.iterdir())
    assert len(collect_cohort(index, "pneumothorax", include="all", max_rows=60).rows) == 60


def test_saved_search_lists_only_reports_added_since_its_last_run(tmp_path):
    from radsift.search import Index

    enc = HashingEncoder(tmp_path / "model")
    build_index(tmp_path / "idx", _reports()[:12], encoder=enc, progress=False)
    index = Index.open(tmp_path / "idx", encoder=enc)
    saved = SavedSearches.of_index(tmp_path / "idx")
    saved.add(index, "ptx", "pneumothorax", mode="hybrid")
    first = saved.run(index, "ptx", new=True)
    assert first.first_run and {r.hit.report_id for r in first.rows} == _stating(index, "pneumothorax", 1)
    again = saved.run(index, "ptx", new=True)
    assert not again.first_run and again.rows == []
    add_to_index(tmp_path / "idx", [Report("late-1", {"findings": "Large left pneumothorax."}),
                                    Report("late-2", {"findings": "No pneumothorax."})], encoder=enc, progress=False)
    index.reload()
    new = saved.run(index, "ptx", new=True)
    assert [r.hit.report_id for r in new.rows] == ["late-1"]
    assert len(saved.run(index, "ptx").rows) == len(first.rows) + 1  # without --new: the whole cohort
    assert saved.names() == ["ptx"]
    # a rebuild keeps saved searches (they live beside the generations)
    build_index(tmp_path / "idx", _reports()[:6], encoder=enc, progress=False, overwrite=True)
    assert saved.names() == ["ptx"]


def test_saved_search_says_when_the_index_was_rebuilt_with_another_model(tmp_path):
    from radsift.search import Index

    enc = HashingEncoder(tmp_path / "model")
    build_index(tmp_path / "idx", _reports()[:12], encoder=enc, progress=False)
    saved = SavedSearches.of_index(tmp_path / "idx")
    saved.add(Index.open(tmp_path / "idx", encoder=enc), "ptx", "pneumothorax")
    other = HashingEncoder(tmp_path / "model2", dim=64)
    build_index(tmp_path / "idx", _reports()[:12], encoder=other, progress=False, overwrite=True)
    run = saved.run(Index.open(tmp_path / "idx", encoder=other), "ptx")
    assert run.rows and any("another model" in w and "may differ" in w for w in run.warnings)
    assert not saved.run(Index.open(tmp_path / "idx", encoder=other), "ptx").warnings  # said once


@pytest.mark.parametrize("name", ["../evil", "a/b", "a\\b", "bad\x00name", "tab\tname", "", ".hidden", "x" * 65])
def test_saved_search_names_with_separators_or_controls_are_refused(name):
    with pytest.raises(ConfigError, match="saved search name"):
        check_name(name)


def test_saved_search_refuses_a_taken_name_and_a_bad_query(built, tmp_path):
    _, _, index = built
    saved = SavedSearches(tmp_path / "saved")
    saved.add(index, "s1", "pneumothorax")
    with pytest.raises(ConfigError, match="exists"):
        saved.add(index, "s1", "effusion")
    with pytest.raises(ConfigError, match="mode"):
        saved.add(index, "s2", "effusion", mode="fuzzy")
    with pytest.raises(ConfigError, match="no saved search"):
        saved.run(index, "nope")
    saved.remove("s1")
    assert saved.names() == []


@pytest.mark.parametrize("mode", MODES)
def test_a_deeper_cut_off_never_reorders_the_head(mode):
    """Paging rests on this: the first n of a ranking to depth n are the first n of the whole ranking."""
    from radsift.ranking import rank, rank_groups

    rng = np.random.default_rng(7)
    dense = rng.uniform(-1, 1, 600).astype(np.float32)
    bm25 = np.where(rng.uniform(size=600) < 0.5, rng.uniform(0, 9, 600), 0).astype(np.float32)
    tiers = rng.integers(0, 3, 600)
    whole, _ = rank(mode, None, dense=dense, bm25=bm25, tiers=tiers)
    groups = rng.integers(0, 90, 600)
    all_groups = rank_groups(mode, None, groups, dense=dense, bm25=bm25, tiers=tiers)[0]
    for n in (5, 40, 250):
        assert rank(mode, n, dense=dense, bm25=bm25, tiers=tiers)[0].tolist() == whole[:n].tolist()
        assert rank_groups(mode, n // 5, groups, dense=dense, bm25=bm25, tiers=tiers)[0].tolist() == \
            all_groups[:n // 5].tolist()


# -- the CLI and the API ---------------------------------------------------------------------------
@pytest.fixture()
def cli_index(tmp_path, hashing_model):
    build_index(tmp_path / "idx", _reports()[:12], encoder=HashingEncoder(hashing_model), progress=False)
    return tmp_path / "idx"


def test_cli_export_writes_the_cohort_its_provenance_and_an_audit_line(cli_index, tmp_path):
    from typer.testing import CliRunner

    from radsift.cli import app

    out = tmp_path / "ptx.csv"
    res = CliRunner().invoke(app, ["export", str(cli_index), "pneumothorax", "--out", str(out), "--mode", "bm25"])
    assert res.exit_code == 0, res.output
    rows = read_cohort_csv(out)
    assert len(rows) == 2 and {r["status"] for r in rows} == {"present"}
    prov = json.loads(provenance_path(out).read_text())
    assert prov["command"].startswith("radsift export") and prov["options"]["mode"] == "bm25"
    audit = [json.loads(x) for x in (cli_index / "audit" / "exports.jsonl").read_text().splitlines()]
    assert audit[-1]["event"] == "export" and audit[-1]["query"] == "pneumothorax" and audit[-1]["rows"] == 2
    assert audit[-1]["user"]
    res = CliRunner().invoke(app, ["export", str(cli_index), "pneumothorax", "--out", str(tmp_path / "x.csv"),
                                   "--max-rows", "1"])
    assert res.exit_code == 2 and "--max-rows" in res.output and not (tmp_path / "x.csv").exists()
    res = CliRunner().invoke(app, ["export", str(cli_index), "pneumothorax", "--out", str(tmp_path / "x.txt")])
    assert res.exit_code == 2 and ".csv or .jsonl" in res.output


def test_cli_saved_add_list_run_new_rm(cli_index, tmp_path):
    from typer.testing import CliRunner

    from radsift.cli import app

    run = CliRunner().invoke
    assert run(app, ["saved", "add", str(cli_index), "ptx", "pneumothorax"]).exit_code == 0
    bad = run(app, ["saved", "add", str(cli_index), "../ptx", "pneumothorax"])
    assert bad.exit_code == 2 and "path separators" in bad.output
    listed = json.loads(run(app, ["saved", "list", str(cli_index), "--json"]).output)
    assert [s["name"] for s in listed] == ["ptx"] and listed[0]["last_run"] is None
    first = json.loads(run(app, ["saved", "run", str(cli_index), "ptx", "--new", "--json"]).output)
    assert first["first_run"] and len(first["rows"]) == 2
    assert json.loads(run(app, ["saved", "run", str(cli_index), "ptx", "--new", "--json"]).output)["rows"] == []
    corpus = tmp_path / "more.jsonl"
    corpus.write_text(json.dumps({"id": "late", "findings": "Tiny right pneumothorax."}) + "\n")
    res = run(app, ["index", "add", str(cli_index), str(corpus), "--section", "findings=findings"])
    assert res.exit_code == 0, res.output
    new = run(app, ["saved", "run", str(cli_index), "ptx", "--new", "--out", str(tmp_path / "new.csv")])
    assert new.exit_code == 0, new.output
    assert [r["report_id"] for r in read_cohort_csv(tmp_path / "new.csv")] == ["late"]
    assert run(app, ["saved", "rm", str(cli_index), "ptx"]).exit_code == 0
    assert "no saved searches" in run(app, ["saved", "list", str(cli_index)]).output


def test_api_pages_exports_and_saves(built, tmp_path):
    from fastapi.testclient import TestClient

    from radsift.serve.app import create_app

    _, _, index = built
    client = TestClient(create_app(index, audit_log=tmp_path / "audit.jsonl", saved_dir=tmp_path / "saved"))
    one = client.get("/api/search", params={"q": "pneumothorax", "k": 5}).json()
    two = client.get("/api/search", params={"q": "pneumothorax", "k": 5, "offset": 5}).json()
    assert one["total"] == 60 and one["matching"] == len(_stating(index, "pneumothorax", 1)) and one["more"]
    assert [h["rank"] for h in two["hits"]] == [6, 7, 8, 9, 10]
    assert not {h["report_id"] for h in one["hits"]} & {h["report_id"] for h in two["hits"]}
    assert client.get("/api/search", params={"q": "pneumothorax", "offset": 999}).json()["hits"] == []
    assert client.get("/api/search", params={"q": "pneumothorax", "offset": -1}).status_code == 422
    csv_answer = client.get("/api/export", params={"q": "pneumothorax"})
    assert csv_answer.status_code == 200 and csv_answer.headers["content-type"].startswith("text/csv")
    prov = json.loads(csv_answer.headers["x-radsift-provenance"])
    as_json = client.get("/api/export", params={"q": "pneumothorax", "format": "json"}).json()
    ids = [line.split(",")[0] for line in csv_answer.text.splitlines()[1:]]
    assert ids == [r["report_id"] for r in as_json["rows"]] and prov["rows"] == len(ids) == one["matching"]
    too_many = client.get("/api/export", params={"q": "pneumothorax", "max_rows": 1})
    assert too_many.status_code == 422 and "max_rows" in too_many.json()["detail"]
    assert client.post("/api/saved", json={"name": "a/b", "q": "x"}).status_code == 422
    assert client.post("/api/saved", json={"name": "ptx", "q": "pneumothorax"}).status_code == 200
    assert [s["name"] for s in client.get("/api/saved").json()["saved"]] == ["ptx"]
    ran = client.get("/api/saved/ptx", params={"new": "true"}).json()
    assert ran["first_run"] and len(ran["rows"]) == one["matching"]
    assert client.get("/api/saved/ptx", params={"new": "true"}).json()["first_run"]  # GET never records a run
    recorded = client.post("/api/saved/ptx/run", params={"new": "true"}).json()
    assert recorded["first_run"] and len(recorded["rows"]) == one["matching"]
    assert client.post("/api/saved/ptx/run", params={"new": "true"}).json()["rows"] == []  # nothing added since
    assert client.delete("/api/saved/ptx").status_code == 200
    events = [json.loads(x)["event"] for x in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert events.count("export") == 2 and "saved-add" in events and "saved-rm" in events
