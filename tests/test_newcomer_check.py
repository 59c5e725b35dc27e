"""The newcomer's check (issue 35, item 6): its data files parse and split as documented, the scoring
counts unjudged hits as it says, and the judging loop appends without contradicting itself.

No model, no index: ``benchmarks/bench_newcomer.py`` runs the searches. The one test that reads Open-i
(every judged report exists there) skips when ``../shared/data`` is absent.
"""

from __future__ import annotations

import csv
import re
import sys
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from radsift.evaluation.errors import TrecFormatError
from radsift.evaluation.newcomer import (
    JUDGMENTS,
    KINDS,
    QUERIES,
    NewcomerQuery,
    merge_judgments,
    read_judgments,
    read_new_judgments,
    read_queries,
    score_query,
    split_of,
    summarize,
)

ROOT = Path(__file__).resolve().parents[1]
OPENI = ROOT.parent / "shared" / "data" / "openi" / "reports.csv"
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_newcomer


@pytest.fixture(scope="module")
def queries() -> list[NewcomerQuery]:
    return read_queries()


def test_the_queries_are_the_hundred_of_the_issue(queries):
    assert len(queries) == 100
    assert Counter(q.kind for q in queries) == {"finding": 25, "lay": 25, "negated": 20, "lobe": 15, "device": 15}
    assert len({q.query.lower() for q in queries}) == 100


def test_the_split_is_the_hash_and_about_half(queries):
    assert all(q.split == split_of(q.query) for q in queries)
    test = sum(q.split == "test" for q in queries)
    assert 40 <= test <= 60
    for kind in KINDS:  # every kind is measured on both halves
        assert {q.split for q in queries if q.kind == kind} == {"dev", "test"}


def test_split_of_is_fixed():
    # The hash, not a seed or a list: these must never move (a moved query would leak into test).
    assert split_of("pneumothorax") == "test"
    assert split_of("enlarged heart") == "dev"
    assert split_of("  Fluid   around the LUNGS ") == split_of("fluid around the lungs")


def test_the_judgments_parse_and_cover_every_query(queries):
    judgments = read_judgments(JUDGMENTS, queries)
    assert set(judgments) == {q.qid for q in queries}
    assert all(len(j) >= 10 for j in judgments.values())  # a pool of at least the top 10
    assert sum(map(len, judgments.values())) >= 1500


def test_the_data_holds_ids_and_labels_only():
    # Never report text: a judgment row is three short cells.
    row = re.compile(r"^nc\d{3}\t\d+\t[01]$")
    lines = [ln for ln in JUDGMENTS.read_text(encoding="utf-8").splitlines() if ln and not ln.startswith("#")]
    assert all(row.match(ln) for ln in lines), next(ln for ln in lines if not row.match(ln))
    assert max(len(ln) for ln in QUERIES.read_text(encoding="utf-8").splitlines()) < 80


@pytest.mark.skipif(not OPENI.is_file(), reason="../shared/data is not on this machine")
def test_every_judged_report_is_an_openi_report():
    with OPENI.open(encoding="utf-8", newline="") as handle:
        uids = {row["uid"] for row in csv.DictReader(handle)}
    judged = {r for j in read_judgments().values() for r in j}
    assert judged <= uids, sorted(judged - uids)[:5]


#: Every batch: (queries, judgments), the first one's included.
BATCHES = sorted((q, q.with_name(q.name.replace("queries", "judgments"))) for q in QUERIES.parent.glob("queries*.tsv"))


@pytest.mark.parametrize("queries_file, judgments_file", BATCHES, ids=[q.stem for q, _ in BATCHES])
def test_every_batch_parses_holds_ids_and_labels_only_and_judges_only_its_own_queries(queries_file, judgments_file):
    queries = read_queries(queries_file)
    assert len({q.qid for q in queries}) == len(queries)  # read_queries checks each split is the hash
    judgments = read_judgments(judgments_file, queries)  # an unknown query or a row judged twice is refused
    row = re.compile(r"^[a-z]+\d{3}\t\d+\t[01]$")
    lines = [ln for ln in judgments_file.read_text(encoding="utf-8").splitlines() if ln and not ln.startswith("#")]
    assert all(row.match(ln) for ln in lines), next(ln for ln in lines if not row.match(ln))
    assert sum(map(len, judgments.values())) == len(lines)
    if OPENI.is_file():
        with OPENI.open(encoding="utf-8", newline="") as handle:
            uids = {r["uid"] for r in csv.DictReader(handle)}
        judged = {r for j in judgments.values() for r in j}
        assert judged <= uids, sorted(judged - uids)[:5]


def test_every_batch_is_found():
    assert len(BATCHES) >= 8 and all(j.is_file() for _, j in BATCHES)


def test_every_pool_runs_every_batch_in_the_order_written():
    pools = bench_newcomer.pools()
    assert sorted(pools.values()) == BATCHES  # the same batches, none left out
    names = list(pools)
    assert names[:3] == ["v1", "dev2", "v3"] and names.index("v9") < names.index("v10") < names.index("v14")


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_split_that_is_not_the_hash_is_refused_naming_the_line(tmp_path):
    wrong = "dev" if split_of("pneumothorax") == "test" else "test"
    path = _write(tmp_path, "q.tsv", f"qid\tkind\tsplit\tquery\nq1\tfinding\t{wrong}\tpneumothorax\n")
    with pytest.raises(TrecFormatError, match=r"q\.tsv:2: split"):
        read_queries(path)


@pytest.mark.parametrize("body, message", [
    ("q1\tsymptom\t{s}\tpneumothorax\n", "kind 'symptom'"),
    ("q1\tfinding\t{s}\tpneumothorax\nq1\tfinding\t{s}\tpneumothorax\n", "already on line 2"),
    ("q1\tfinding\t{s}\n", "4 non-empty"),
])
def test_malformed_query_rows_are_refused(tmp_path, body, message):
    path = _write(tmp_path, "q.tsv", "qid\tkind\tsplit\tquery\n" + body.format(s=split_of("pneumothorax")))
    with pytest.raises(TrecFormatError, match=message):
        read_queries(path)


def test_a_missing_header_is_refused(tmp_path):
    with pytest.raises(TrecFormatError, match="header"):
        read_queries(_write(tmp_path, "q.tsv", "q1\tfinding\tdev\tpneumothorax\n"))


@pytest.mark.parametrize("body, message", [
    ("q1\t12\t2\n", "must be 0 or 1"),
    ("q1\t12\t1\nq1\t12\t0\n", "judged twice"),
    ("q1 12 1\n", "3 tab-separated"),
])
def test_malformed_judgments_are_refused_naming_the_line(tmp_path, body, message):
    with pytest.raises(TrecFormatError, match=rf"j\.tsv:\d+: .*{message}"):
        read_judgments(_write(tmp_path, "j.tsv", body))


def test_judgments_for_an_unknown_query_are_refused(tmp_path, queries):
    with pytest.raises(TrecFormatError, match="not in the queries"):
        read_judgments(_write(tmp_path, "j.tsv", "zz999\t12\t1\n"), queries)


def test_scoring_counts_an_unjudged_hit_as_not_relevant_and_says_so():
    q = NewcomerQuery("q1", "lay", "test", "broken rib")
    judged = {"q1": {"a": 1, "b": 0, "c": 1}}
    s = score_query(q, ["a", "b", "x", "c", "y", "z"], judged, k=5)
    assert (s.hits, s.relevant, s.judged, s.unjudged) == (("a", "b", "x", "c", "y"), 2, 3, ("x", "y"))
    cell = summarize([s], k=5)["test"]["lay"]
    assert cell["precision"] == pytest.approx(2 / 5)
    assert cell["precision_judged"] == pytest.approx(2 / 3)
    assert cell["unjudged"] == 2 and summarize([s])["test"]["all"]["queries"] == 1


def test_the_ceiling_is_what_the_known_relevant_reports_allow():
    judged = {"q1": {"a": 1, "b": 0, "c": 1, "d": 1}, "q2": {f"r{i}": 1 for i in range(7)}}
    few = score_query(NewcomerQuery("q1", "lay", "test", "broken rib"), ["a", "b", "x", "y", "z"], judged)
    many = score_query(NewcomerQuery("q2", "lay", "test", "big heart"), ["r0", "r1", "x", "r2", "y"], judged)
    assert (few.known, many.known) == (3, 7)  # a 0 is no relevant report
    cell = summarize([few, many], k=5)["test"]["lay"]
    assert cell["ceiling"] == pytest.approx((3 + 5) / 10)  # q1 can hold 3 relevant hits at best, q2 five
    assert cell["of_ceiling"] == pytest.approx((1 + 3) / 8)
    assert cell["precision"] == pytest.approx(4 / 10)


def test_fewer_hits_than_k_count_as_misses():
    s = score_query(NewcomerQuery("q1", "device", "dev", "pacemaker"), ["a"], {"q1": {"a": 1}}, k=5)
    assert summarize([s])["dev"]["device"]["precision"] == pytest.approx(1 / 5)


def test_the_judging_loop_appends_skips_pending_and_refuses_contradictions(tmp_path):
    qrels = _write(tmp_path, "j.tsv", "q1\ta\t1\n")
    todo = _write(tmp_path, "todo.tsv", "# q1 broken rib\n#   F: ... I: ...\nq1\tb\t0\nq1\tc\t?\nq1\ta\t1\n")
    rows, pending = read_new_judgments(todo)
    assert pending == 1 and rows == [("q1", "b", 0), ("q1", "a", 1)]
    assert merge_judgments(qrels, rows) == 1  # q1 a is already judged the same way
    assert read_judgments(qrels) == {"q1": {"a": 1, "b": 0}}
    with pytest.raises(TrecFormatError, match="judged 1 there and 0"):
        merge_judgments(qrels, [("q1", "a", 0)])
    assert read_judgments(qrels) == {"q1": {"a": 1, "b": 0}}


def test_the_benchmark_scores_a_system_and_lists_its_unjudged_hits(capsys):
    qs = [NewcomerQuery("q1", "lay", "test", "broken rib"), NewcomerQuery("q2", "lobe", "dev", "RUL granuloma")]

    class FakeIndex:
        def search(self, query, **options):
            assert options["k"] == 5 and options["level"] == "report"
            return [SimpleNamespace(report_id=r) for r in ("a", "b", "c", "d", "e")]

        def get_report(self, report_id):
            return SimpleNamespace(sections={"findings": f"text of {report_id}"})

    scores, _ = bench_newcomer.run_system(FakeIndex(), "default", qs, {"q1": {"a": 1, "b": 1, "c": 0}}, 5)
    summary = summarize(scores)
    assert summary["test"]["all"]["precision"] == pytest.approx(2 / 5)
    table = bench_newcomer.markdown("default", summary, ["dev", "test"], 5)
    assert "| test | lay | 1 | 0.400 | 2 / 5 | 0.667 | 2 |" in table
    assert bench_newcomer.print_unjudged({"default": scores}, {"d": "F: old rib fracture"}, FakeIndex()) == 7
    out = capsys.readouterr().out
    assert "q1\td\t?" in out and "#   F: old rib fracture" in out and "#   text of e" in out
