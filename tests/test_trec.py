"""TREC queries/run/qrels I/O: round trips, ordering conventions and every malformed input."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from radsift.errors import RadsiftError
from radsift.evaluation import (
    EvaluationError,
    TrecFormatError,
    rank_entries,
    read_qrels,
    read_queries,
    read_run,
    write_qrels,
    write_run,
)


def _write(path, text: str, encoding: str = "utf-8"):
    path.write_bytes(text.encode(encoding))
    return path


# ---------------------------------------------------------------------------------------------
# queries
# ---------------------------------------------------------------------------------------------
def test_read_queries_skips_blank_and_comment_lines_and_extra_columns(tmp_path):
    path = _write(
        tmp_path / "q.tsv",
        "\ufeff# free-text queries\n"
        "q1\tno pneumothorax\tpositive\textra\r\n"
        "\n"
        "   \n"
        "q2\t  left lower lobe opacity  \n"
        "#q3\tcommented out\n"
        "q10\tcardiomegaly",
    )
    assert read_queries(path) == {
        "q1": "no pneumothorax",
        "q2": "left lower lobe opacity",
        "q10": "cardiomegaly",
    }
    assert list(read_queries(path)) == ["q1", "q2", "q10"]  # file order kept


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("q1\tfine\nq2 no tab here\n", ":2: expected 'qid<TAB>query', found no tab"),
        ("q1\tfine\n\tno id\n", ":2: empty query id"),
        ("q1\tfine\nq2\t   \n", ":2: query 'q2' has no text"),
        ("q 1\tspaced id\n", ":1: query id 'q 1' contains whitespace"),
        ("q1\tone\n\nq1\ttwo\n", ":3: duplicate query id 'q1' (first on line 1)"),
    ],
)
def test_read_queries_errors_name_file_and_line(tmp_path, text, fragment):
    path = _write(tmp_path / "queries.tsv", text)
    with pytest.raises(TrecFormatError) as info:
        read_queries(path)
    message = str(info.value)
    assert message.startswith(str(path)), message
    assert fragment in message


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n"])
def test_read_queries_rejects_a_file_without_queries(tmp_path, text):
    path = _write(tmp_path / "empty.tsv", text)
    with pytest.raises(TrecFormatError, match="no queries") as info:
        read_queries(path)
    assert str(path) in str(info.value)


def test_readers_name_a_missing_or_undecodable_file(tmp_path):
    missing = tmp_path / "nope.tsv"
    for reader in (read_queries, read_run, read_qrels):
        with pytest.raises(TrecFormatError, match="no such file") as info:
            reader(missing)
        assert str(missing) in str(info.value)
    with pytest.raises(TrecFormatError, match="not a file"):
        read_run(tmp_path)
    latin = _write(tmp_path / "latin.tsv", "q1\tépanchement\n", encoding="latin-1")
    with pytest.raises(TrecFormatError, match="not UTF-8"):
        read_queries(latin)


def test_errors_are_radsift_errors():
    assert issubclass(TrecFormatError, EvaluationError)
    assert issubclass(EvaluationError, RadsiftError)


# ---------------------------------------------------------------------------------------------
# runs
# ---------------------------------------------------------------------------------------------
def test_write_run_ranks_by_score_and_writes_six_columns(tmp_path):
    path = tmp_path / "out" / "run.trec"  # the folder is created
    write_run(path, {"q2": [("b", 0.5), ("a", 0.9), ("c", 0.7)], "q1": [("x", 1.0)]}, tag="bm25")
    lines = path.read_text().splitlines()
    assert lines == [
        "q2 Q0 a 1 0.9 bm25",
        "q2 Q0 c 2 0.7 bm25",
        "q2 Q0 b 3 0.5 bm25",
        "q1 Q0 x 1 1.0 bm25",
    ]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644


def test_ties_are_broken_like_trec_eval(tmp_path):
    # trec_eval sorts by score descending, then docno descending (strcmp(ptr2, ptr1)).
    entries = [("d1", 1.0), ("d3", 2.0), ("d2", 1.0), ("d10", 1.0), ("d0", 3.0)]
    assert [d for d, _ in rank_entries(entries)] == ["d0", "d3", "d2", "d10", "d1"]
    path = tmp_path / "run.trec"
    write_run(path, {"q": entries}, tag="t")
    assert [line.split()[2] for line in path.read_text().splitlines()] == ["d0", "d3", "d2", "d10", "d1"]
    # The same ranking comes back whatever order the file lists the lines in.
    shuffled = tmp_path / "shuffled.trec"
    _write(shuffled, "q Q0 d1 1 1.0 t\nq Q0 d10 2 1.0 t\nq Q0 d0 3 3.0 t\nq Q0 d2 4 1.0 t\nq Q0 d3 5 2.0 t\n")
    assert [d for d, _ in read_run(shuffled)["q"]] == ["d0", "d3", "d2", "d10", "d1"]


def test_run_round_trip_keeps_full_score_precision(tmp_path):
    rng = np.random.default_rng(3)
    run = {
        f"q{i}": [(f"doc-{j}", float(s)) for j, s in enumerate(rng.normal(size=50))] for i in range(5)
    }
    run["q9"] = [("a", 0.1 + 0.2), ("b", 0.3), ("c", 1e-300), ("d", -2.5e17), ("e", float(np.float32(0.1)))]
    path = tmp_path / "run.trec"
    write_run(path, run, tag="dense")
    back = read_run(path)
    assert list(back) == list(run)
    for qid, entries in run.items():
        assert back[qid] == rank_entries(entries)
    # 0.1 + 0.2 and 0.3 differ in the last bit: written in full they keep their order.
    assert [d for d, _ in back["q9"][:2]] == ["a", "b"]


def test_write_run_accepts_numpy_scores_and_skips_empty_queries(tmp_path):
    path = tmp_path / "run.trec"
    write_run(path, {"q1": [("a", np.float32(0.5)), ("b", np.float64(0.25))], "q2": []})
    assert path.read_text() == "q1 Q0 a 1 0.5 radsift\nq1 Q0 b 2 0.25 radsift\n"


@pytest.mark.parametrize(
    "run, tag, fragment",
    [
        ({"q1": [("a", 1.0)], "q2": [("has space", 0.5)]}, "t", "document id 'has space' (query 'q2')"),
        ({"q 1": [("a", 1.0)]}, "t", "query id 'q 1'"),
        ({"q1": [("a", 1.0)]}, "my run", "run tag 'my run'"),
        ({"q1": [("a", 1.0), ("a", 0.5)]}, "t", "document 'a' is ranked twice"),
        ({"q1": [("a", float("nan"))]}, "t", "NaN"),
        ({"q1": [("", 1.0)]}, "t", "document id ''"),
    ],
)
def test_write_run_rejects_bad_entries_and_leaves_the_target_untouched(tmp_path, run, tag, fragment):
    path = tmp_path / "run.trec"
    path.write_text("previous content\n")
    with pytest.raises(EvaluationError) as info:
        write_run(path, run, tag=tag)
    assert fragment in str(info.value)
    assert path.read_text() == "previous content\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.trec"]  # no temporary file left


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("q1 Q0 a 1 0.5 t\nq1 Q0 b 2 0.4\n", ":2: expected 6 columns 'qid Q0 docid rank score tag', found 5"),
        ("q1 Q0 a 1 0.5 t extra\n", ":1: expected 6 columns"),
        ("q1 Q0 a one 0.5 t\n", ":1: rank 'one' is not an integer"),
        ("q1 Q0 a 1 high t\n", ":1: score 'high' is not a number"),
        ("q1 Q0 a 1 nan t\n", ":1: score is NaN"),
        ("q1 Q0 a 1 0.5 t\nq2 Q0 a 1 0.5 t\n\nq1 Q0 a 2 0.4 t\n", ":4: document 'a' listed twice for query 'q1' (first on line 1)"),
    ],
)
def test_read_run_errors_name_file_and_line(tmp_path, text, fragment):
    path = _write(tmp_path / "bad.run", text)
    with pytest.raises(TrecFormatError) as info:
        read_run(path)
    message = str(info.value)
    assert message.startswith(str(path)), message
    assert fragment in message


def test_read_run_rejects_an_empty_file(tmp_path):
    with pytest.raises(TrecFormatError, match="no run entries"):
        read_run(_write(tmp_path / "empty.run", "\n"))


# ---------------------------------------------------------------------------------------------
# qrels
# ---------------------------------------------------------------------------------------------
def test_read_qrels_keeps_graded_and_non_relevant_judgments(tmp_path):
    path = _write(tmp_path / "qrels.trec", "q1 0 a 2\nq1 0 b 0\n\nq2 Q0 c 1\nq1 0 d -1\r\n")
    assert read_qrels(path) == {"q1": {"a": 2, "b": 0, "d": -1}, "q2": {"c": 1}}


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("q1 0 a 1\nq1 a 1\n", ":2: expected 4 columns 'qid 0 docid relevance', found 3"),
        ("q1 0 a 1 x\n", ":1: expected 4 columns"),
        ("q1 0 a 0.5\n", ":1: relevance '0.5' is not an integer"),
        ("q1 0 a yes\n", ":1: relevance 'yes' is not an integer"),
        ("q1 0 a 1\nq1 0 b 1\nq1 0 a 0\n", ":3: document 'a' judged twice for query 'q1' (first on line 1)"),
    ],
)
def test_read_qrels_errors_name_file_and_line(tmp_path, text, fragment):
    path = _write(tmp_path / "bad.qrels", text)
    with pytest.raises(TrecFormatError) as info:
        read_qrels(path)
    message = str(info.value)
    assert message.startswith(str(path)), message
    assert fragment in message


def test_read_qrels_rejects_an_empty_file(tmp_path):
    with pytest.raises(TrecFormatError, match="no judgments"):
        read_qrels(_write(tmp_path / "empty.qrels", ""))


def test_qrels_round_trip(tmp_path):
    qrels = {"q2": {"b": 1, "a": 0}, "q1": {"c": 3, "d": -1}}
    path = tmp_path / "qrels.trec"
    write_qrels(path, qrels)
    assert path.read_text() == "q2 0 b 1\nq2 0 a 0\nq1 0 c 3\nq1 0 d -1\n"
    assert read_qrels(path) == qrels


def test_write_qrels_rejects_a_fractional_relevance(tmp_path):
    with pytest.raises(EvaluationError, match="relevance 0.5 is not an integer"):
        write_qrels(tmp_path / "q.trec", {"q1": {"a": 0.5}})
    assert not (tmp_path / "q.trec").exists()
