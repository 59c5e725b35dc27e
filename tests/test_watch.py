"""Issue 34, item 5: a watched drop folder adds each new file exactly once, through restarts and crashes."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from radsift.cli import app
from radsift.corpus.options import ReaderOptions
from radsift.demo import generate_reports
from radsift.demo.feeds import write_feeds
from radsift.index import build_index
from radsift.index.reader import IndexStore
from radsift.models.hashing import HashingEncoder
from radsift.workflows.watch import LEDGER, Ledger, scan_once, sha256_of


@pytest.fixture
def setup(tmp_path, hashing_model):
    enc = HashingEncoder(hashing_model)
    reports = [d.report for d in generate_reports(n=30, seed=5)]
    build_index(tmp_path / "idx", reports[:10], encoder=enc, progress=False)
    feeds = write_feeds(reports[10:], tmp_path / "made")
    drop = tmp_path / "drop"
    drop.mkdir()
    return tmp_path / "idx", drop, feeds, enc


def _old(path: Path) -> Path:
    past = time.time() - 10  # settled
    os.utime(path, (past, past))
    return path


def _ids(index_dir: Path) -> list[str]:
    store = IndexStore.open(index_dir)
    try:
        return list(store.report_ids)
    finally:
        store.close()


def test_each_file_is_added_once(setup):
    index_dir, drop, feeds, enc = setup
    opts = {"encoder": enc}
    (drop / "a.hl7").write_bytes(feeds["reports.hl7"].read_bytes())
    _old(drop / "a.hl7")
    (drop / "copying.csv.part").write_text("id\n")  # still arriving: skipped
    (drop / "fresh.ndjson").write_bytes(feeds["reports.ndjson"].read_bytes())  # changed just now: next scan
    batch = scan_once(index_dir, drop, ReaderOptions(), add_options=opts)
    assert batch.added == {"a.hl7": 20} and not batch.failed
    assert len(_ids(index_dir)) == 30
    again = scan_once(index_dir, drop, ReaderOptions(), settle=3600, add_options=opts)
    assert not again.added and len(_ids(index_dir)) == 30  # a.hl7 is in the ledger; fresh.ndjson not settled
    _old(drop / "fresh.ndjson")
    late = scan_once(index_dir, drop, ReaderOptions(), add_options=opts)
    assert "fresh.ndjson" in late.failed and "already in" in late.failed["fresh.ndjson"]  # the same ids: refused
    assert not scan_once(index_dir, drop, ReaderOptions(), add_options=opts).failed  # not retried unchanged
    states = [json.loads(line)["state"] for line in (index_dir / LEDGER).read_text().splitlines()]
    assert states == ["adding", "added", "adding", "failed"]


def test_a_crash_between_commit_and_ledger_is_recovered_not_added_twice(setup):
    index_dir, drop, feeds, enc = setup
    path = drop / "b.ndjson"
    path.write_bytes(feeds["reports.ndjson"].read_bytes())
    _old(path)
    # what a crash leaves: "adding" recorded, the add committed, "added" never written
    Ledger(index_dir).record("b.ndjson", sha256_of(path), "adding", reports=20)
    from radsift.corpus import read_corpus
    from radsift.index import add_to_index

    add_to_index(index_dir, list(read_corpus([path], ReaderOptions())), encoder=enc, progress=False)
    batch = scan_once(index_dir, drop, ReaderOptions(), add_options={"encoder": enc})
    assert batch.recovered == ["b.ndjson"] and not batch.added and not batch.failed
    assert len(_ids(index_dir)) == 30
    # a crash before the commit: "adding" recorded, nothing committed -> added now
    other = drop / "c.hl7"
    other.write_bytes(feeds["reports.hl7"].read_bytes().replace(b"|demo-", b"|c-demo-"))
    _old(other)
    Ledger(index_dir).record("c.hl7", sha256_of(other), "adding", reports=20)
    batch = scan_once(index_dir, drop, ReaderOptions(), add_options={"encoder": enc})
    assert batch.added == {"c.hl7": 20} and len(_ids(index_dir)) == 50


def test_a_bad_file_is_recorded_and_the_watch_goes_on(setup):
    index_dir, drop, feeds, enc = setup
    bad = drop / "bad.hl7"
    bad.write_text("MSH|^~\\&|X|Y|Z|W|202501011200||ADT^A01|M1|P|2.5\n")
    _old(bad)
    good = drop / "good.hl7"
    good.write_bytes(feeds["reports.hl7"].read_bytes())
    _old(good)
    batch = scan_once(index_dir, drop, ReaderOptions(), add_options={"encoder": enc})
    assert "not ORU^R01" in batch.failed["bad.hl7"] and batch.added == {"good.hl7": 20}


def test_cli_watch_once_and_bad_arguments(setup, tmp_path):
    index_dir, drop, feeds, _ = setup
    (drop / "x.hl7").write_bytes(feeds["reports.hl7"].read_bytes())
    _old(drop / "x.hl7")
    res = CliRunner().invoke(app, ["index", "add", str(index_dir), "--watch", str(drop), "--once"])
    assert res.exit_code == 0, res.output
    assert "added 20 reports from x.hl7" in res.output and len(_ids(index_dir)) == 30
    res = CliRunner().invoke(app, ["index", "add", str(index_dir), "--watch", str(tmp_path / "nope"), "--once"])
    assert res.exit_code == 2 and "no such folder" in res.output
    res = CliRunner().invoke(app, ["index", "add", str(index_dir), "--watch", str(drop), "--saved", "ghost", "--once"])
    assert res.exit_code == 2 and "no such saved search" in res.output
    res = CliRunner().invoke(app, ["index", "add", str(index_dir)])
    assert res.exit_code == 2 and "CORPUS" in res.output


def test_saved_searches_rerun_with_new_since_after_a_batch(setup):
    from radsift.search import Index
    from radsift.search.saved import SavedSearches

    index_dir, drop, feeds, enc = setup
    searches = SavedSearches.of_index(index_dir)
    searches.add(Index.open(index_dir), "effusion", "pleural effusion")
    searches.run(Index.open(index_dir), "effusion", new=True)  # the first run: everything so far is seen
    (drop / "n.hl7").write_bytes(feeds["reports.hl7"].read_bytes())
    _old(drop / "n.hl7")
    batch = scan_once(index_dir, drop, ReaderOptions(), saved=["effusion"], add_options={"encoder": enc})
    new = batch.saved["effusion"]
    added = {line.split("|")[3] for line in feeds["reports.hl7"].read_text().splitlines() if line.startswith("OBR")}
    assert new and set(new) <= added  # only reports of the new file
    logged = json.loads((index_dir / "ingest" / "saved-effusion.jsonl").read_text().splitlines()[-1])
    assert logged["new"] == new
    assert not searches.run(Index.open(index_dir), "effusion", new=True).rows  # delivered: nothing new now
